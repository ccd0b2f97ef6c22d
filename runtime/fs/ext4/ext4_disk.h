/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4_disk.h - the on-disk structures of ext4 (the kernel's
 * Documentation/filesystems/ext4/) and the loads that decode their fields;
 * private to the ext4 parser (ext4_internal.h).
 *
 * The structures give offsets, they are never laid over a buffer: fields are
 * read through little-endian byte loads (util.h), because hostile offsets
 * need not be aligned and a byte load is valid anywhere.
 *
 * In the GPU image (one translation unit, kernels/runtime.cu) the field-load
 * macros stay defined after the ext4 sources: other sources must not reuse
 * their names.
 */
#ifndef GPUOS_RUNTIME_EXT4_DISK_H
#define GPUOS_RUNTIME_EXT4_DISK_H

#include "gpuos/port.h"
#include "../../util.h"

GPUOS_EXTERN_C_BEGIN

struct ext4_sb {
	uint32_t s_inodes_count;          /* 0x000 */
	uint32_t s_blocks_count_lo;       /* 0x004 */
	uint32_t s_r_blocks_count_lo;     /* 0x008 */
	uint32_t s_free_blocks_count_lo;  /* 0x00c */
	uint32_t s_free_inodes_count;     /* 0x010 */
	uint32_t s_first_data_block;      /* 0x014 */
	uint32_t s_log_block_size;        /* 0x018 block size = 1024 << this */
	uint32_t s_log_cluster_size;      /* 0x01c */
	uint32_t s_blocks_per_group;      /* 0x020 */
	uint32_t s_clusters_per_group;    /* 0x024 */
	uint32_t s_inodes_per_group;      /* 0x028 */
	uint32_t s_mtime;                 /* 0x02c */
	uint32_t s_wtime;                 /* 0x030 */
	uint16_t s_mnt_count;             /* 0x034 */
	uint16_t s_max_mnt_count;         /* 0x036 */
	uint16_t s_magic;                 /* 0x038 0xEF53 */
	uint16_t s_state;                 /* 0x03a */
	uint16_t s_errors;                /* 0x03c */
	uint16_t s_minor_rev_level;       /* 0x03e */
	uint32_t s_lastcheck;             /* 0x040 */
	uint32_t s_checkinterval;         /* 0x044 */
	uint32_t s_creator_os;            /* 0x048 0 = Linux */
	uint32_t s_rev_level;             /* 0x04c 0 = good old, 1 = dynamic */
	uint16_t s_def_resuid;            /* 0x050 */
	uint16_t s_def_resgid;            /* 0x052 */
	uint32_t s_first_ino;             /* 0x054 */
	uint16_t s_inode_size;            /* 0x058 */
	uint16_t s_block_group_nr;        /* 0x05a */
	uint32_t s_feature_compat;        /* 0x05c */
	uint32_t s_feature_incompat;      /* 0x060 */
	uint32_t s_feature_ro_compat;     /* 0x064 */
	uint8_t s_uuid[16];               /* 0x068 */
	uint8_t s_volume_name[16];        /* 0x078 */
	uint8_t s_last_mounted[64];       /* 0x088 */
	uint32_t s_algorithm_usage_bitmap; /* 0x0c8 */
	uint8_t s_prealloc_blocks;        /* 0x0cc */
	uint8_t s_prealloc_dir_blocks;    /* 0x0cd */
	uint16_t s_reserved_gdt_blocks;   /* 0x0ce */
	uint8_t s_journal_uuid[16];       /* 0x0d0 */
	uint32_t s_journal_inum;          /* 0x0e0 */
	uint32_t s_journal_dev;           /* 0x0e4 */
	uint32_t s_last_orphan;           /* 0x0e8 */
	uint32_t s_hash_seed[4];          /* 0x0ec */
	uint8_t s_def_hash_version;       /* 0x0fc */
	uint8_t s_jnl_backup_type;        /* 0x0fd */
	uint16_t s_desc_size;             /* 0x0fe */
	uint32_t s_default_mount_opts;    /* 0x100 */
	uint32_t s_first_meta_bg;         /* 0x104 */
	uint32_t s_mkfs_time;             /* 0x108 */
	uint32_t s_jnl_blocks[17];        /* 0x10c */
	uint32_t s_blocks_count_hi;       /* 0x150 */
	uint32_t s_r_blocks_count_hi;     /* 0x154 */
	uint32_t s_free_blocks_count_hi;  /* 0x158 */
	uint16_t s_min_extra_isize;       /* 0x15c */
	uint16_t s_want_extra_isize;      /* 0x15e */
	uint32_t s_flags;                 /* 0x160 */
	uint16_t s_raid_stride;           /* 0x164 */
	uint16_t s_mmp_interval;          /* 0x166 */
	uint64_t s_mmp_block;             /* 0x168 */
	uint32_t s_raid_stripe_width;     /* 0x170 */
	uint8_t s_log_groups_per_flex;    /* 0x174 */
	uint8_t s_checksum_type;          /* 0x175 1 = crc32c */
	uint8_t s_encryption_level;       /* 0x176 */
	uint8_t s_reserved_pad;           /* 0x177 */
	uint64_t s_kbytes_written;        /* 0x178 */
	uint32_t s_snapshot_inum;         /* 0x180 */
	uint32_t s_snapshot_id;           /* 0x184 */
	uint64_t s_snapshot_r_blocks_count; /* 0x188 */
	uint32_t s_snapshot_list;         /* 0x190 */
	uint32_t s_error_count;           /* 0x194 */
	uint8_t s_error_info[0x240 - 0x198]; /* 0x198 first/last error records, mount opts */
	uint32_t s_usr_quota_inum;        /* 0x240 */
	uint32_t s_grp_quota_inum;        /* 0x244 */
	uint32_t s_overhead_clusters;     /* 0x248 */
	uint32_t s_backup_bgs[2];         /* 0x24c sparse_super2 */
	uint8_t s_encrypt_algos[4];       /* 0x254 */
	uint8_t s_encrypt_pw_salt[16];    /* 0x258 */
	uint32_t s_lpf_ino;               /* 0x268 */
	uint32_t s_prj_quota_inum;        /* 0x26c */
	uint32_t s_checksum_seed;         /* 0x270 csum_seed feature */
	uint8_t s_time_hi[8];             /* 0x274 */
	uint16_t s_encoding;              /* 0x27c */
	uint16_t s_encoding_flags;        /* 0x27e */
	uint32_t s_orphan_file_inum;      /* 0x280 */
	uint32_t s_reserved[94];          /* 0x284 */
	uint32_t s_checksum;              /* 0x3fc crc32c of bytes 0..0x3fb */
};
static_assert(sizeof(struct ext4_sb) == 1024, "ext4 superblock size");
static_assert(offsetof(struct ext4_sb, s_magic) == 0x38, "sb magic");
static_assert(offsetof(struct ext4_sb, s_desc_size) == 0xfe, "sb desc_size");
static_assert(offsetof(struct ext4_sb, s_blocks_count_hi) == 0x150, "sb blocks_count_hi");
static_assert(offsetof(struct ext4_sb, s_checksum_type) == 0x175, "sb checksum_type");
static_assert(offsetof(struct ext4_sb, s_backup_bgs) == 0x24c, "sb backup_bgs");
static_assert(offsetof(struct ext4_sb, s_checksum_seed) == 0x270, "sb checksum_seed");
static_assert(offsetof(struct ext4_sb, s_checksum) == 0x3fc, "sb checksum");

#define EXT4_DESC_MIN     32u
#define EXT4_DESC_MIN_64  64u
#define EXT4_DESC_MAX     1024u
struct ext4_gd {
	uint32_t bg_block_bitmap_lo;      /* 0x00 */
	uint32_t bg_inode_bitmap_lo;      /* 0x04 */
	uint32_t bg_inode_table_lo;       /* 0x08 */
	uint16_t bg_free_blocks_count_lo; /* 0x0c */
	uint16_t bg_free_inodes_count_lo; /* 0x0e */
	uint16_t bg_used_dirs_count_lo;   /* 0x10 */
	uint16_t bg_flags;                /* 0x12 EXT4_BG_* */
	uint32_t bg_exclude_bitmap_lo;    /* 0x14 */
	uint16_t bg_block_bitmap_csum_lo; /* 0x18 */
	uint16_t bg_inode_bitmap_csum_lo; /* 0x1a */
	uint16_t bg_itable_unused_lo;     /* 0x1c */
	uint16_t bg_checksum;             /* 0x1e */
	/* 64bit only, from here */
	uint32_t bg_block_bitmap_hi;      /* 0x20 */
	uint32_t bg_inode_bitmap_hi;      /* 0x24 */
	uint32_t bg_inode_table_hi;       /* 0x28 */
	uint16_t bg_free_blocks_count_hi; /* 0x2c */
	uint16_t bg_free_inodes_count_hi; /* 0x2e */
	uint16_t bg_used_dirs_count_hi;   /* 0x30 */
	uint16_t bg_itable_unused_hi;     /* 0x32 */
	uint32_t bg_exclude_bitmap_hi;    /* 0x34 */
	uint16_t bg_block_bitmap_csum_hi; /* 0x38 */
	uint16_t bg_inode_bitmap_csum_hi; /* 0x3a */
	uint32_t bg_reserved;             /* 0x3c */
};
static_assert(sizeof(struct ext4_gd) == 64, "ext4 group descriptor size");
static_assert(offsetof(struct ext4_gd, bg_checksum) == 0x1e, "gd checksum");
#define EXT4_BG_INODE_UNINIT 0x0001u

#define EXT4_GOOD_OLD_INODE_SIZE 128u
#define EXT4_GOOD_OLD_FIRST_INO  11u
struct ext4_inode_disk {
	uint16_t i_mode;                  /* 0x00 */
	uint16_t i_uid;                   /* 0x02 */
	uint32_t i_size_lo;               /* 0x04 */
	uint32_t i_atime;                 /* 0x08 */
	uint32_t i_ctime;                 /* 0x0c */
	uint32_t i_mtime;                 /* 0x10 */
	uint32_t i_dtime;                 /* 0x14 */
	uint16_t i_gid;                   /* 0x18 */
	uint16_t i_links_count;           /* 0x1a */
	uint32_t i_blocks_lo;             /* 0x1c */
	uint32_t i_flags;                 /* 0x20 */
	uint32_t l_i_version;             /* 0x24 */
	uint32_t i_block[15];             /* 0x28 */
	uint32_t i_generation;            /* 0x64 */
	uint32_t i_file_acl_lo;           /* 0x68 */
	uint32_t i_size_high;             /* 0x6c */
	uint32_t i_obso_faddr;            /* 0x70 */
	uint16_t l_i_blocks_high;         /* 0x74 */
	uint16_t l_i_file_acl_high;       /* 0x76 */
	uint16_t l_i_uid_high;            /* 0x78 */
	uint16_t l_i_gid_high;            /* 0x7a */
	uint16_t l_i_checksum_lo;         /* 0x7c */
	uint16_t l_i_reserved;            /* 0x7e */
	/* large inodes, as far as i_extra_isize says */
	uint16_t i_extra_isize;           /* 0x80 */
	uint16_t i_checksum_hi;           /* 0x82 */
	uint32_t i_ctime_extra;           /* 0x84 nsec << 2 | epoch bits */
	uint32_t i_mtime_extra;           /* 0x88 */
	uint32_t i_atime_extra;           /* 0x8c */
	uint32_t i_crtime;                /* 0x90 */
	uint32_t i_crtime_extra;          /* 0x94 */
	uint32_t i_version_hi;            /* 0x98 */
	uint32_t i_projid;                /* 0x9c */
};
static_assert(sizeof(struct ext4_inode_disk) == 160, "ext4 inode size");
static_assert(offsetof(struct ext4_inode_disk, i_block) == 0x28, "inode i_block");
static_assert(offsetof(struct ext4_inode_disk, l_i_checksum_lo) == 0x7c, "inode checksum_lo");
static_assert(offsetof(struct ext4_inode_disk, i_checksum_hi) == 0x82, "inode checksum_hi");
static_assert(offsetof(struct ext4_inode_disk, i_projid) == 0x9c, "inode projid");

#define EXT4_S_IFMT   0xF000u
#define EXT4_S_IFSOCK 0xC000u
#define EXT4_S_IFLNK  0xA000u
#define EXT4_S_IFREG  0x8000u
#define EXT4_S_IFBLK  0x6000u
#define EXT4_S_IFDIR  0x4000u
#define EXT4_S_IFCHR  0x2000u
#define EXT4_S_IFIFO  0x1000u

/* Extent tree node: a header, then eh_max entries (index or leaf), then, in
 * a block with metadata_csum, a 4-byte crc32c tail after eh_max entries. */
#define EXT4_EXT_MAGIC 0xF30Au
struct ext4_extent_header {
	uint16_t eh_magic;                /* 0x00 */
	uint16_t eh_entries;              /* 0x02 */
	uint16_t eh_max;                  /* 0x04 */
	uint16_t eh_depth;                /* 0x06 0 = leaf */
	uint32_t eh_generation;           /* 0x08 */
};
struct ext4_extent_idx {
	uint32_t ei_block;                /* 0x00 first logical block covered */
	uint32_t ei_leaf_lo;              /* 0x04 child node block */
	uint16_t ei_leaf_hi;              /* 0x08 */
	uint16_t ei_unused;               /* 0x0a */
};
struct ext4_extent {
	uint32_t ee_block;                /* 0x00 first logical block */
	uint16_t ee_len;                  /* 0x04 <= 32768: initialized, else unwritten (len - 32768) */
	uint16_t ee_start_hi;             /* 0x06 */
	uint32_t ee_start_lo;             /* 0x08 */
};
static_assert(sizeof(struct ext4_extent_header) == 12, "extent header size");
static_assert(sizeof(struct ext4_extent_idx) == 12, "extent index size");
static_assert(sizeof(struct ext4_extent) == 12, "extent size");
#define EXT4_EXT_INIT_MAX_LEN 32768u

/* Directory entry (ext4_dir_entry_2); name follows, padded to 4 bytes. */
struct ext4_dirent {
	uint32_t inode;                   /* 0x00 0 = unused */
	uint16_t rec_len;                 /* 0x04 distance to the next entry */
	uint8_t name_len;                 /* 0x06 */
	uint8_t file_type;                /* 0x07 with the filetype feature */
};
static_assert(sizeof(struct ext4_dirent) == 8, "dirent size");
/* The last 12 bytes of a leaf directory block with metadata_csum. */
struct ext4_dirent_tail {
	uint32_t det_reserved_zero1;      /* 0x00 looks like inode 0 */
	uint16_t det_rec_len;             /* 0x04 12 */
	uint8_t det_reserved_zero2;       /* 0x06 name_len 0 */
	uint8_t det_reserved_ft;          /* 0x07 0xDE */
	uint32_t det_checksum;            /* 0x08 crc32c of the block before the tail */
};
static_assert(sizeof(struct ext4_dirent_tail) == 12, "dirent tail size");
#define EXT4_DIR_TAIL_FT   0xDEu
#define EXT4_DIR_MIN_REC   12u        /* EXT4_DIR_REC_LEN(1) */

/* In-inode extended attributes: after i_extra_isize, a magic, then entries
 * (name padded to 4) up to a zero word; values are at offsets from the first
 * entry. */
#define EXT4_XATTR_MAGIC        0xEA020000u
#define EXT4_XATTR_INDEX_SYSTEM 7u
struct ext4_xattr_entry {
	uint8_t e_name_len;               /* 0x00 */
	uint8_t e_name_index;             /* 0x01 */
	uint16_t e_value_offs;            /* 0x02 from the first entry */
	uint32_t e_value_inum;            /* 0x04 ea_inode: value in that inode */
	uint32_t e_value_size;            /* 0x08 */
	uint32_t e_hash;                  /* 0x0c */
};
static_assert(sizeof(struct ext4_xattr_entry) == 16, "xattr entry size");

/* Little-endian field loads: LD16(p, struct ext4_sb, s_magic). The array
 * size check makes a load of the wrong width a compile error. */
#define FIELD_AT(p, T, f) ((const uint8_t *)(p) + offsetof(T, f))
#define WIDTH_IS(T, f, n) ((void)sizeof(char[sizeof(((T *)0)->f) == (n) ? 1 : -1]))
#define LD8(p, T, f)  (WIDTH_IS(T, f, 1), *FIELD_AT(p, T, f))
#define LD16(p, T, f) (WIDTH_IS(T, f, 2), gpuos_le16(FIELD_AT(p, T, f)))
#define LD32(p, T, f) (WIDTH_IS(T, f, 4), gpuos_le32(FIELD_AT(p, T, f)))

#define SB16(p, f) LD16(p, struct ext4_sb, f)
#define SB32(p, f) LD32(p, struct ext4_sb, f)
#define GD16(p, f) LD16(p, struct ext4_gd, f)
#define GD32(p, f) LD32(p, struct ext4_gd, f)
#define IN16(p, f) LD16(p, struct ext4_inode_disk, f)
#define IN32(p, f) LD32(p, struct ext4_inode_disk, f)
#define EH16(p, f) LD16(p, struct ext4_extent_header, f)
#define EI16(p, f) LD16(p, struct ext4_extent_idx, f)
#define EI32(p, f) LD32(p, struct ext4_extent_idx, f)
#define EE16(p, f) LD16(p, struct ext4_extent, f)
#define EE32(p, f) LD32(p, struct ext4_extent, f)
#define DE8(p, f)  LD8(p, struct ext4_dirent, f)
#define DE16(p, f) LD16(p, struct ext4_dirent, f)
#define DE32(p, f) LD32(p, struct ext4_dirent, f)
#define XE8(p, f)  LD8(p, struct ext4_xattr_entry, f)
#define XE16(p, f) LD16(p, struct ext4_xattr_entry, f)
#define XE32(p, f) LD32(p, struct ext4_xattr_entry, f)

#define LBLK_LIMIT (1ull << 32)           /* logical blocks are 32-bit */

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_EXT4_DISK_H */
