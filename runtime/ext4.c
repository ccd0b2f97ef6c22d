/* SPDX-License-Identifier: MIT */
/*
 * runtime/ext4.c - read-only ext4 parser (see ext4.h for what and why).
 *
 * On-disk structures are declared below with their offsets and read through
 * little-endian byte loads (util.h), never by casting a buffer to a struct:
 * hostile offsets need not be aligned, and a byte load is valid anywhere.
 *
 * Reads go through gpuos_meta_read(); a whole block (a directory block, an
 * extent block, an inode) lands in fs->blk, smaller things (a block pointer
 * of an indirect block) are read straight into locals, file data straight
 * into the caller's buffer.
 */
#include "ext4.h"
#include "crc.h"
#include "util.h"

/* ---- on-disk structures (Documentation/filesystems/ext4/) --------------------- */

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
/* Work bounds of one gpuos_ext4_extents() call (it resumes from *next). */
#define EXTENTS_MAX_STEPS 4096u
/* Block pointers read at once to measure a run (4 KiB): a run found in an
 * indirect block is at most this long, so a fragmented map with 64 KiB
 * blocks costs O(n) reads, not O(n^2). */
#define PTR_CHUNK 1024u

/* ---- errors, reads, checksums ------------------------------------------------ */

static GPUOS_HD int fail(struct gpuos_ext4 *fs, int err, const char *why, uint64_t bad)
{
	fs->why = why;
	fs->bad = bad;
	return err;
}

/* Start of a public call: no reason yet. */
GPUOS_INLINE GPUOS_HD void begin(struct gpuos_ext4 *fs)
{
	fs->why = NULL;
	fs->bad = 0;
}

/* fs->blk as scratch: whatever directory block it cached is gone. */
GPUOS_INLINE GPUOS_HD uint8_t *scratch(struct gpuos_ext4 *fs)
{
	fs->cache_valid = 0;
	return fs->blk;
}

static GPUOS_HD int dev_read(struct gpuos_ext4 *fs, uint64_t off, uint32_t len, void *dst)
{
	int r = gpuos_meta_read(&fs->io, off, len, dst);

	if (r == 0)
		return 0;
	if (r == -ERANGE)
		return fail(fs, -EIO, "read past the end of the device", off);
	return fail(fs, r < 0 ? r : -EIO, "device read error", off);
}

/* [pblk, pblk + count) inside the file system and past the superblock. */
GPUOS_INLINE GPUOS_HD int blocks_ok(const struct gpuos_ext4 *fs, uint64_t pblk, uint64_t count)
{
	return pblk > fs->first_data_block && count <= fs->blocks_count &&
	       pblk <= fs->blocks_count - count;
}

static GPUOS_HD int read_block(struct gpuos_ext4 *fs, uint64_t pblk, uint8_t *dst)
{
	if (!blocks_ok(fs, pblk, 1))
		return fail(fs, -EINVAL, "corrupt: block number outside the file system", pblk);
	return dev_read(fs, pblk << fs->block_bits, fs->block_size, dst);
}

/* crc16 (ANSI, reflected 0xA001), as the gdt_csum group descriptor checksum
 * uses it (lib/crc16.c); bitwise: no table, no globals. */
static GPUOS_HD uint16_t ext4_crc16(uint16_t crc, const uint8_t *p, uint32_t len)
{
	uint32_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc = (uint16_t)(crc ^ p[i]);
		for (k = 0; k < 8; k++)
			crc = (uint16_t)((crc >> 1) ^ ((crc & 1u) ? 0xA001u : 0u));
	}
	return crc;
}

GPUOS_INLINE GPUOS_HD uint32_t ext4_csum32(uint32_t seed, const void *p, uint32_t len)
{
	return gpuos_crc32c_raw(seed, p, len);
}

GPUOS_INLINE GPUOS_HD uint32_t ext4_csum_le32(uint32_t seed, uint32_t v)
{
	uint8_t b[4];

	gpuos_put_le32(b, v);
	return ext4_csum32(seed, b, 4);
}

/* ---- superblock ------------------------------------------------------------- */

GPUOS_HD const char *gpuos_ext4_incompat_name(uint32_t bit)
{
	switch (bit) {
	case GPUOS_EXT4_INCOMPAT_COMPRESSION: return "compression";
	case GPUOS_EXT4_INCOMPAT_FILETYPE: return "filetype";
	case GPUOS_EXT4_INCOMPAT_RECOVER: return "needs_recovery";
	case GPUOS_EXT4_INCOMPAT_JOURNAL_DEV: return "journal_dev";
	case GPUOS_EXT4_INCOMPAT_META_BG: return "meta_bg";
	case GPUOS_EXT4_INCOMPAT_EXTENTS: return "extents";
	case GPUOS_EXT4_INCOMPAT_64BIT: return "64bit";
	case GPUOS_EXT4_INCOMPAT_MMP: return "mmp";
	case GPUOS_EXT4_INCOMPAT_FLEX_BG: return "flex_bg";
	case GPUOS_EXT4_INCOMPAT_EA_INODE: return "ea_inode";
	case GPUOS_EXT4_INCOMPAT_DIRDATA: return "dirdata";
	case GPUOS_EXT4_INCOMPAT_CSUM_SEED: return "metadata_csum_seed";
	case GPUOS_EXT4_INCOMPAT_LARGEDIR: return "large_dir";
	case GPUOS_EXT4_INCOMPAT_INLINE_DATA: return "inline_data";
	case GPUOS_EXT4_INCOMPAT_ENCRYPT: return "encrypt";
	case GPUOS_EXT4_INCOMPAT_CASEFOLD: return "casefold";
	default: return NULL;
	}
}

/* The reason for refusing incompatible feature bit `bit`. */
static GPUOS_HD const char *incompat_why(uint32_t bit)
{
	switch (bit) {
	case GPUOS_EXT4_INCOMPAT_COMPRESSION:
		return "unsupported incompatible feature: compression";
	case GPUOS_EXT4_INCOMPAT_JOURNAL_DEV:
		return "unsupported incompatible feature: journal_dev (an external journal, not a file system)";
	case GPUOS_EXT4_INCOMPAT_DIRDATA:
		return "unsupported incompatible feature: dirdata";
	default:
		return "unsupported incompatible feature: unknown bit (see fs->bad)";
	}
}

GPUOS_INLINE GPUOS_HD int ext4_is_power_of(uint32_t g, uint32_t base)
{
	uint64_t p = base;
	int i;

	/* 3^21 > 2^32: the loop ends long before the bound */
	for (i = 0; i < 32 && p < g; i++)
		p *= base;
	return p == g;
}

/* Whether group g holds a superblock backup (ext4_bg_has_super()). */
static GPUOS_HD int group_has_super(const struct gpuos_ext4 *fs, uint32_t g)
{
	if (g == 0)
		return 1;
	if (fs->feature_compat & GPUOS_EXT4_COMPAT_SPARSE_SUPER2)
		return g == fs->backup_bgs[0] || g == fs->backup_bgs[1];
	if (g <= 1 || !(fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_SPARSE_SUPER))
		return 1;
	if (!(g & 1u))
		return 0;
	return ext4_is_power_of(g, 3) || ext4_is_power_of(g, 5) || ext4_is_power_of(g, 7);
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_mount(struct gpuos_ext4 *fs, const struct gpuos_meta_io *io,
			      uint32_t flags)
{
	const uint8_t *sb;
	uint32_t log_bs, log_cs, bs, incompat, unsupported, bit, ipb;
	uint64_t groups, gdt_blocks, per_block;
	struct gpuos_ext4_inode *root = &fs->lookup_cur;
	int r;

	begin(fs);
	fs->io = *io;
	fs->cache_valid = 0;
	fs->mount_flags = flags;
	fs->has_csum = 0;
	fs->has_gdt_csum = 0;
	/* read_block() and friends refuse everything until the geometry is set */
	fs->blocks_count = 0;
	fs->block_size = 0;

	sb = scratch(fs);
	r = dev_read(fs, GPUOS_EXT4_SUPER_OFFSET, 1024, scratch(fs));
	if (r)
		return r;
	if (SB16(sb, s_magic) != GPUOS_EXT4_MAGIC)
		return fail(fs, -EINVAL, "corrupt superblock: bad magic (not ext2/3/4)",
			    SB16(sb, s_magic));

	fs->feature_compat = SB32(sb, s_feature_compat);
	fs->feature_incompat = incompat = SB32(sb, s_feature_incompat);
	fs->feature_ro_compat = SB32(sb, s_feature_ro_compat);
	fs->rev_level = SB32(sb, s_rev_level);
	fs->creator_os = SB32(sb, s_creator_os);

	/* metadata_csum first: a checksum mismatch says more than whatever field
	 * the corruption hit */
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_METADATA_CSUM) {
		if (LD8(sb, struct ext4_sb, s_checksum_type) != 1)
			return fail(fs, -EOPNOTSUPP,
				    "unsupported metadata checksum type (only crc32c)",
				    LD8(sb, struct ext4_sb, s_checksum_type));
		if (ext4_csum32(~0u, sb, offsetof(struct ext4_sb, s_checksum)) !=
		    SB32(sb, s_checksum))
			return fail(fs, -EINVAL, "corrupt superblock: bad checksum",
				    SB32(sb, s_checksum));
		fs->has_csum = 1;
		if (incompat & GPUOS_EXT4_INCOMPAT_CSUM_SEED)
			fs->csum_seed = SB32(sb, s_checksum_seed);
		else
			fs->csum_seed = ext4_csum32(~0u, FIELD_AT(sb, struct ext4_sb, s_uuid), 16);
	} else if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_GDT_CSUM) {
		fs->has_gdt_csum = 1;
	}

	/* incompatible features: refuse what changes the format in ways not read here */
	unsupported = incompat & ~(uint32_t)GPUOS_EXT4_INCOMPAT_SUPPORTED;
	if (flags & GPUOS_EXT4_MOUNT_NORECOVERY)
		unsupported &= ~GPUOS_EXT4_INCOMPAT_RECOVER;
	if (unsupported & GPUOS_EXT4_INCOMPAT_RECOVER)
		return fail(fs, -EOPNOTSUPP,
			    "unsupported incompatible feature: needs_recovery (the journal was not "
			    "replayed; GPUOS_EXT4_MOUNT_NORECOVERY reads it as it is)",
			    GPUOS_EXT4_INCOMPAT_RECOVER);
	if (unsupported) {
		bit = unsupported & (0u - unsupported); /* lowest one */
		return fail(fs, -EOPNOTSUPP, incompat_why(bit), bit);
	}

	/* geometry */
	log_bs = SB32(sb, s_log_block_size);
	if (log_bs > 6)
		return fail(fs, -EINVAL, "corrupt superblock: block size over 64 KiB", log_bs);
	bs = 1024u << log_bs;
	log_cs = log_bs;
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_BIGALLOC) {
		log_cs = SB32(sb, s_log_cluster_size);
		if (log_cs < log_bs || log_cs > 16 + log_bs)
			return fail(fs, -EINVAL, "corrupt superblock: bad cluster size", log_cs);
	}
	fs->cluster_bits = 10 + log_cs;
	fs->block_bits = 10 + log_bs;

	fs->blocks_count = SB32(sb, s_blocks_count_lo);
	if (incompat & GPUOS_EXT4_INCOMPAT_64BIT)
		fs->blocks_count |= (uint64_t)SB32(sb, s_blocks_count_hi) << 32;
	fs->first_data_block = SB32(sb, s_first_data_block);
	fs->blocks_per_group = SB32(sb, s_blocks_per_group);
	fs->inodes_per_group = SB32(sb, s_inodes_per_group);
	fs->inodes_count = SB32(sb, s_inodes_count);
	fs->first_meta_bg = SB32(sb, s_first_meta_bg);
	fs->backup_bgs[0] = gpuos_le32(FIELD_AT(sb, struct ext4_sb, s_backup_bgs));
	fs->backup_bgs[1] = gpuos_le32(FIELD_AT(sb, struct ext4_sb, s_backup_bgs) + 4);
	gpuos_mem_copy(fs->uuid, FIELD_AT(sb, struct ext4_sb, s_uuid), 16);
	gpuos_mem_copy(fs->volume_name, FIELD_AT(sb, struct ext4_sb, s_volume_name), 16);
	fs->volume_name[16] = '\0';

	if (fs->rev_level == 0) {
		fs->inode_size = EXT4_GOOD_OLD_INODE_SIZE;
		fs->first_ino = EXT4_GOOD_OLD_FIRST_INO;
	} else {
		fs->inode_size = SB16(sb, s_inode_size);
		fs->first_ino = SB32(sb, s_first_ino);
	}
	if (fs->inode_size < EXT4_GOOD_OLD_INODE_SIZE || fs->inode_size > bs ||
	    (fs->inode_size & (fs->inode_size - 1u)))
		return fail(fs, -EINVAL, "corrupt superblock: bad inode size", fs->inode_size);
	if (fs->first_ino < EXT4_GOOD_OLD_FIRST_INO)
		return fail(fs, -EINVAL, "corrupt superblock: bad first inode", fs->first_ino);

	if (incompat & GPUOS_EXT4_INCOMPAT_64BIT) {
		fs->desc_size = SB16(sb, s_desc_size);
		if (fs->desc_size < EXT4_DESC_MIN_64 || fs->desc_size > EXT4_DESC_MAX ||
		    (fs->desc_size & (fs->desc_size - 1u)) || fs->desc_size > bs)
			return fail(fs, -EINVAL, "corrupt superblock: bad group descriptor size",
				    fs->desc_size);
	} else {
		fs->desc_size = EXT4_DESC_MIN;
	}

	if (fs->blocks_per_group == 0 ||
	    (!(fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_BIGALLOC) &&
	     fs->blocks_per_group > 8u * bs))
		return fail(fs, -EINVAL, "corrupt superblock: bad blocks per group",
			    fs->blocks_per_group);
	ipb = bs / fs->inode_size;
	if (fs->inodes_per_group < ipb || fs->inodes_per_group > 8u * bs)
		return fail(fs, -EINVAL, "corrupt superblock: bad inodes per group",
			    fs->inodes_per_group);
	if (fs->first_data_block > 1 || fs->first_data_block >= fs->blocks_count ||
	    (bs > 1024 && fs->first_data_block != 0))
		return fail(fs, -EINVAL, "corrupt superblock: bad first data block",
			    fs->first_data_block);
	/* the whole file system must be readable through io */
	if (fs->blocks_count > (io->size >> fs->block_bits))
		return fail(fs, -EINVAL,
			    "corrupt superblock: block count beyond the end of the device",
			    fs->blocks_count);
	groups = (fs->blocks_count - fs->first_data_block + fs->blocks_per_group - 1) /
		 fs->blocks_per_group;
	if (groups == 0 || groups > UINT32_MAX ||
	    (uint64_t)fs->inodes_count != groups * fs->inodes_per_group)
		return fail(fs, -EINVAL, "corrupt superblock: inode count does not match the groups",
			    fs->inodes_count);
	fs->group_count = (uint32_t)groups;
	per_block = bs / fs->desc_size;
	gdt_blocks = (groups + per_block - 1) / per_block;
	if ((incompat & GPUOS_EXT4_INCOMPAT_META_BG) && fs->first_meta_bg > gdt_blocks)
		return fail(fs, -EINVAL, "corrupt superblock: first meta_bg past the descriptors",
			    fs->first_meta_bg);
	if (fs->first_ino > fs->inodes_count)
		return fail(fs, -EINVAL, "corrupt superblock: first inode past the inode count",
			    fs->first_ino);

	fs->block_size = bs;

	r = gpuos_ext4_iget(fs, GPUOS_EXT4_ROOT_INO, root);
	if (r == -ENOENT)
		r = fail(fs, -EINVAL, "corrupt: root inode not in use", GPUOS_EXT4_ROOT_INO);
	else if (r == 0 && root->type != GPUOS_EXT4_FT_DIR)
		r = fail(fs, -EINVAL, "corrupt: root inode is not a directory", root->mode);
	if (r) {
		fs->block_size = 0; /* not mounted: the other calls refuse */
		return r;
	}
	begin(fs);
	return 0;
}

/* ---- group descriptors and inodes --------------------------------------------- */

/* Byte offset of group g's descriptor (ext4's descriptor_loc()). */
static GPUOS_HD uint64_t desc_offset(const struct gpuos_ext4 *fs, uint32_t g)
{
	uint32_t per = fs->block_size / fs->desc_size;
	uint32_t nr = g / per;   /* descriptor block index */
	uint64_t blk;

	if ((fs->feature_incompat & GPUOS_EXT4_INCOMPAT_META_BG) && nr >= fs->first_meta_bg) {
		/* meta_bg: the descriptor block of meta group nr sits in its first
		 * group, after the superblock backup if that group has one */
		uint32_t first = nr * per;

		blk = (uint64_t)first * fs->blocks_per_group + fs->first_data_block +
		      (uint64_t)group_has_super(fs, first);
		if (fs->block_size == 1024 && nr == 0 && fs->first_data_block == 0)
			blk++;
	} else {
		/* right after the superblock's block */
		blk = (fs->block_size == 1024 ? 1u : 0u) + (uint64_t)nr + 1u;
	}
	return (blk << fs->block_bits) + (uint64_t)(g % per) * fs->desc_size;
}

struct ext4_group_info {
	uint64_t inode_table;
	uint32_t flags;
	uint32_t itable_unused;
};

static GPUOS_HD int read_group(struct gpuos_ext4 *fs, uint32_t g, struct ext4_group_info *gi)
{
	uint8_t *d = scratch(fs);
	uint32_t dsz = fs->desc_size;
	uint64_t off = desc_offset(fs, g);
	uint8_t le_g[4];
	int r;

	if (off + dsz > (fs->blocks_count << fs->block_bits) ||
	    (off >> fs->block_bits) <= fs->first_data_block)
		return fail(fs, -EINVAL, "corrupt: group descriptor outside the file system", g);
	r = dev_read(fs, off, dsz, d);
	if (r)
		return r;

	gpuos_put_le32(le_g, g);
	if (fs->has_csum) {
		uint32_t c;
		uint8_t zero[2] = {0, 0};

		c = ext4_csum32(fs->csum_seed, le_g, 4);
		c = ext4_csum32(c, d, offsetof(struct ext4_gd, bg_checksum));
		c = ext4_csum32(c, zero, 2);
		if (dsz > 0x20)
			c = ext4_csum32(c, d + 0x20, dsz - 0x20);
		if ((c & 0xFFFFu) != GD16(d, bg_checksum))
			return fail(fs, -EINVAL, "corrupt group descriptor: bad checksum", g);
	} else if (fs->has_gdt_csum) {
		uint16_t c;

		c = ext4_crc16(0xFFFFu, fs->uuid, 16);
		c = ext4_crc16(c, le_g, 4);
		c = ext4_crc16(c, d, offsetof(struct ext4_gd, bg_checksum));
		if (dsz > 0x20)
			c = ext4_crc16(c, d + 0x20, dsz - 0x20);
		if (c != GD16(d, bg_checksum))
			return fail(fs, -EINVAL, "corrupt group descriptor: bad checksum (gdt_csum)", g);
	}

	gi->inode_table = GD32(d, bg_inode_table_lo);
	gi->flags = GD16(d, bg_flags);
	gi->itable_unused = GD16(d, bg_itable_unused_lo);
	if (dsz >= EXT4_DESC_MIN_64) {
		gi->inode_table |= (uint64_t)GD32(d, bg_inode_table_hi) << 32;
		gi->itable_unused |= (uint32_t)GD16(d, bg_itable_unused_hi) << 16;
	}
	return 0;
}

/* Seconds and nanoseconds of a timestamp with an optional _extra word
 * (bits 1:0 extend the seconds past 2038, bits 31:2 are nanoseconds). */
static GPUOS_HD void ext4_decode_time(const uint8_t *raw, uint32_t sec_off, uint32_t extra_off,
				 uint32_t have, int64_t *sec, uint32_t *ns)
{
	uint32_t e;

	*sec = (int32_t)gpuos_le32(raw + sec_off);
	*ns = 0;
	if (extra_off + 4 > have)
		return;
	e = gpuos_le32(raw + extra_off);
	*sec += (int64_t)(e & 3u) << 32;
	*ns = e >> 2;
}

/* Find system.data in the in-inode xattrs of raw (isz bytes). */
static GPUOS_HD int find_inline_xattr(struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t isz,
				      uint32_t ino, struct gpuos_ext4_inode *out)
{
	uint32_t start = EXT4_GOOD_OLD_INODE_SIZE + out->extra_isize;
	uint32_t p, first, i;

	out->inline_off = 0;
	out->inline_len = 0;
	if (start + 4 > isz || gpuos_le32(raw + start) != EXT4_XATTR_MAGIC)
		return 0; /* no xattrs: the data is the 60 bytes of i_block */
	first = start + 4;
	p = first;
	/* entries are at least 16 bytes: the bound ends the loop */
	for (i = 0; i < isz / 16 && p + 4 <= isz && gpuos_le32(raw + p) != 0; i++) {
		uint32_t nlen, esize, voff, vsize;

		if (p + sizeof(struct ext4_xattr_entry) > isz)
			return fail(fs, -EINVAL, "corrupt inode: xattr entry overruns the inode", ino);
		nlen = XE8(raw + p, e_name_len);
		esize = (uint32_t)(sizeof(struct ext4_xattr_entry) + nlen + 3u) & ~3u;
		if (p + esize > isz)
			return fail(fs, -EINVAL, "corrupt inode: xattr name overruns the inode", ino);
		if (XE8(raw + p, e_name_index) == EXT4_XATTR_INDEX_SYSTEM && nlen == 4 &&
		    gpuos_mem_cmp(raw + p + sizeof(struct ext4_xattr_entry), "data", 4) == 0) {
			if (XE32(raw + p, e_value_inum) != 0)
				return fail(fs, -EINVAL, "corrupt inode: inline data in an xattr inode", ino);
			voff = XE16(raw + p, e_value_offs);
			vsize = XE32(raw + p, e_value_size);
			if (voff > isz - first || vsize > isz - first - voff)
				return fail(fs, -EINVAL, "corrupt inode: inline data overruns the inode", ino);
			if (vsize) { /* first + voff < isz <= 65536 */
				out->inline_off = (uint16_t)(first + voff);
				out->inline_len = vsize;
			}
			return 0;
		}
		p += esize;
	}
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_iget(struct gpuos_ext4 *fs, uint32_t ino, struct gpuos_ext4_inode *out)
{
	struct ext4_group_info gi;
	const uint8_t *raw;
	uint32_t g, idx, isz, have, iflags, mode, fmt;
	uint64_t itable_blocks, off, ea_sectors;
	int r;

	begin(fs);
	if (fs->block_size == 0)
		return fail(fs, -EINVAL, "file system not mounted", 0);
	if (ino == 0 || ino > fs->inodes_count)
		return fail(fs, -EINVAL, "inode number out of range", ino);
	g = (ino - 1u) / fs->inodes_per_group;
	idx = (ino - 1u) % fs->inodes_per_group;
	r = read_group(fs, g, &gi);
	if (r)
		return r;
	isz = fs->inode_size;
	itable_blocks = ((uint64_t)fs->inodes_per_group * isz + fs->block_size - 1u) >> fs->block_bits;
	if (!blocks_ok(fs, gi.inode_table, itable_blocks))
		return fail(fs, -EINVAL, "corrupt group descriptor: inode table outside the file system",
			    gi.inode_table);
	if ((fs->has_csum || fs->has_gdt_csum) &&
	    ((gi.flags & EXT4_BG_INODE_UNINIT) ||
	     (gi.itable_unused <= fs->inodes_per_group &&
	      idx >= fs->inodes_per_group - gi.itable_unused)))
		return fail(fs, -ENOENT, "inode not in use (uninitialized part of the inode table)", ino);

	off = (gi.inode_table << fs->block_bits) + (uint64_t)idx * isz;
	raw = scratch(fs);
	r = dev_read(fs, off, isz, scratch(fs));
	if (r)
		return r;

	gpuos_mem_set(out, 0, sizeof(*out));
	out->ino = ino;
	out->disk_off = off;
	if (isz > EXT4_GOOD_OLD_INODE_SIZE) {
		out->extra_isize = IN16(raw, i_extra_isize);
		if (out->extra_isize > isz - EXT4_GOOD_OLD_INODE_SIZE || (out->extra_isize & 3u))
			return fail(fs, -EINVAL, "corrupt inode: bad extra size", ino);
	}
	have = EXT4_GOOD_OLD_INODE_SIZE + out->extra_isize; /* bytes of struct ext4_inode_disk */

	/* metadata_csum (ext4_inode_csum()); the checksum fields count as zero */
	out->generation = IN32(raw, i_generation);
	if (fs->has_csum) {
		uint8_t zero[2] = {0, 0};
		uint32_t seed, c, want, got_lo;
		int has_hi = have >= offsetof(struct ext4_inode_disk, i_checksum_hi) + 2;

		seed = ext4_csum_le32(fs->csum_seed, ino);
		seed = ext4_csum_le32(seed, out->generation);
		out->csum_seed = seed;
		if (fs->creator_os == 0) { /* only Linux inodes carry the checksum fields */
			c = ext4_csum32(seed, raw, offsetof(struct ext4_inode_disk, l_i_checksum_lo));
			c = ext4_csum32(c, zero, 2);
			c = ext4_csum32(c, raw + 0x7e, EXT4_GOOD_OLD_INODE_SIZE - 0x7e);
			if (isz > EXT4_GOOD_OLD_INODE_SIZE) {
				uint32_t o = offsetof(struct ext4_inode_disk, i_checksum_hi);

				c = ext4_csum32(c, raw + EXT4_GOOD_OLD_INODE_SIZE, o - EXT4_GOOD_OLD_INODE_SIZE);
				if (has_hi) {
					c = ext4_csum32(c, zero, 2);
					o += 2;
				}
				c = ext4_csum32(c, raw + o, isz - o);
			}
			got_lo = IN16(raw, l_i_checksum_lo);
			if (has_hi) {
				want = c;
				got_lo |= (uint32_t)IN16(raw, i_checksum_hi) << 16;
			} else {
				want = c & 0xFFFFu;
			}
			if (want != got_lo) {
				if (gpuos_mem_is_zero(raw, isz))
					return fail(fs, -ENOENT, "inode not in use", ino);
				return fail(fs, -EINVAL, "corrupt inode: bad checksum", ino);
			}
		}
	}

	mode = IN16(raw, i_mode);
	out->links = IN16(raw, i_links_count);
	if (out->links == 0 && IN32(raw, i_dtime) != 0)
		return fail(fs, -ENOENT, "inode not in use (deleted)", ino);
	if (mode == 0 && out->links == 0)
		return fail(fs, -ENOENT, "inode not in use", ino);
	out->mode = (uint16_t)mode;
	fmt = mode & EXT4_S_IFMT;
	switch (fmt) {
	case EXT4_S_IFREG: out->type = GPUOS_EXT4_FT_REG; break;
	case EXT4_S_IFDIR: out->type = GPUOS_EXT4_FT_DIR; break;
	case EXT4_S_IFLNK: out->type = GPUOS_EXT4_FT_SYMLINK; break;
	case EXT4_S_IFCHR: out->type = GPUOS_EXT4_FT_CHR; break;
	case EXT4_S_IFBLK: out->type = GPUOS_EXT4_FT_BLK; break;
	case EXT4_S_IFIFO: out->type = GPUOS_EXT4_FT_FIFO; break;
	case EXT4_S_IFSOCK: out->type = GPUOS_EXT4_FT_SOCK; break;
	default: return fail(fs, -EINVAL, "corrupt inode: bad file type in mode", mode);
	}

	out->uid = IN16(raw, i_uid) | (uint32_t)IN16(raw, l_i_uid_high) << 16;
	out->gid = IN16(raw, i_gid) | (uint32_t)IN16(raw, l_i_gid_high) << 16;
	out->size = IN32(raw, i_size_lo) | (uint64_t)IN32(raw, i_size_high) << 32;
	out->flags = iflags = IN32(raw, i_flags);
	out->blocks = IN32(raw, i_blocks_lo);
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_HUGE_FILE) {
		out->blocks |= (uint64_t)IN16(raw, l_i_blocks_high) << 32;
		if (iflags & GPUOS_EXT4_IFL_HUGE_FILE)
			out->blocks <<= fs->block_bits - 9; /* counted in blocks: 48 + 7 bits fit */
	}
	out->file_acl = IN32(raw, i_file_acl_lo);
	if (fs->feature_incompat & GPUOS_EXT4_INCOMPAT_64BIT)
		out->file_acl |= (uint64_t)IN16(raw, l_i_file_acl_high) << 32;
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_atime),
		    offsetof(struct ext4_inode_disk, i_atime_extra), have, &out->atime, &out->atime_ns);
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_mtime),
		    offsetof(struct ext4_inode_disk, i_mtime_extra), have, &out->mtime, &out->mtime_ns);
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_ctime),
		    offsetof(struct ext4_inode_disk, i_ctime_extra), have, &out->ctime, &out->ctime_ns);
	if (have >= offsetof(struct ext4_inode_disk, i_crtime) + 4)
		ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_crtime),
			    offsetof(struct ext4_inode_disk, i_crtime_extra), have, &out->crtime,
			    &out->crtime_ns);
	if (have >= offsetof(struct ext4_inode_disk, i_projid) + 4)
		out->projid = IN32(raw, i_projid);
	gpuos_mem_copy(out->i_block, FIELD_AT(raw, struct ext4_inode_disk, i_block), 60);

	/* sizes: no negative loff_t, nothing past 2^32 blocks */
	if (out->size >> 63 || (out->size >> fs->block_bits) > LBLK_LIMIT)
		return fail(fs, -EINVAL, "corrupt inode: size too large", out->size);

	/* where the data lives */
	ea_sectors = out->file_acl ? (1ull << (fs->cluster_bits - 9)) : 0;
	if ((iflags & GPUOS_EXT4_IFL_INLINE_DATA) &&
	    !(fs->feature_incompat & GPUOS_EXT4_INCOMPAT_INLINE_DATA))
		return fail(fs, -EINVAL, "corrupt inode: inline data flag without the feature", ino);
	if ((iflags & GPUOS_EXT4_IFL_INLINE_DATA) && (iflags & GPUOS_EXT4_IFL_EXTENTS))
		return fail(fs, -EINVAL, "corrupt inode: both inline data and extents flags", ino);
	if (out->type == GPUOS_EXT4_FT_CHR || out->type == GPUOS_EXT4_FT_BLK ||
	    out->type == GPUOS_EXT4_FT_FIFO || out->type == GPUOS_EXT4_FT_SOCK) {
		uint32_t d0 = gpuos_le32(out->i_block), d1 = gpuos_le32(out->i_block + 4);

		out->map = GPUOS_EXT4_MAP_NONE;
		if (d0) { /* old 8:8 encoding */
			out->rdev_major = (d0 >> 8) & 0xffu;
			out->rdev_minor = d0 & 0xffu;
		} else {  /* new 12:20 encoding */
			out->rdev_major = (d1 & 0xfff00u) >> 8;
			out->rdev_minor = (d1 & 0xffu) | ((d1 >> 12) & 0xfff00u);
		}
	} else if (iflags & GPUOS_EXT4_IFL_INLINE_DATA) {
		out->map = GPUOS_EXT4_MAP_INLINE;
		r = find_inline_xattr(fs, raw, isz, ino, out);
		if (r)
			return r;
	} else if (out->type == GPUOS_EXT4_FT_SYMLINK && out->blocks == ea_sectors) {
		/* no data block: the target is in i_block (ext4_inode_is_fast_symlink()) */
		if (out->size >= sizeof(out->i_block))
			return fail(fs, -EINVAL, "corrupt inode: fast symlink longer than i_block",
				    out->size);
		out->map = GPUOS_EXT4_MAP_FAST_SYMLINK;
	} else if (iflags & GPUOS_EXT4_IFL_EXTENTS) {
		const uint8_t *eh = out->i_block;

		if (!(fs->feature_incompat & GPUOS_EXT4_INCOMPAT_EXTENTS))
			return fail(fs, -EINVAL, "corrupt inode: extents flag without the feature", ino);
		if (EH16(eh, eh_magic) != EXT4_EXT_MAGIC)
			return fail(fs, -EINVAL, "corrupt extent tree: bad magic in the inode", ino);
		if (EH16(eh, eh_max) > 4 || EH16(eh, eh_entries) > EH16(eh, eh_max))
			return fail(fs, -EINVAL, "corrupt extent tree: bad entry count in the inode",
				    EH16(eh, eh_entries));
		if (EH16(eh, eh_depth) > GPUOS_EXT4_MAX_DEPTH)
			return fail(fs, -EINVAL, "corrupt extent tree: too deep", EH16(eh, eh_depth));
		out->map = GPUOS_EXT4_MAP_EXTENTS;
	} else {
		out->map = GPUOS_EXT4_MAP_BLOCKMAP;
	}

	/* a directory cannot hold more blocks than the file system: this bounds
	 * every scan of it */
	if (out->type == GPUOS_EXT4_FT_DIR && out->map != GPUOS_EXT4_MAP_INLINE &&
	    (out->size >> fs->block_bits) > fs->blocks_count)
		return fail(fs, -EINVAL, "corrupt inode: directory larger than the file system",
			    out->size);
	return 0;
}

/* ---- extent trees ------------------------------------------------------------ */

/* Check an extent node: header, counts, order, and ranges against [lo, hi)
 * (the parent index's range). cap: entries that fit in the node. */
static GPUOS_HD int ext_check_node(struct gpuos_ext4 *fs, const uint8_t *node, uint32_t cap,
				   uint32_t depth, int is_root, uint64_t lo, uint64_t hi)
{
	uint32_t n, max, i;
	uint64_t prev_end = lo;

	if (EH16(node, eh_magic) != EXT4_EXT_MAGIC)
		return fail(fs, -EINVAL, "corrupt extent tree: bad magic", EH16(node, eh_magic));
	n = EH16(node, eh_entries);
	max = EH16(node, eh_max);
	if (max > cap || n > max)
		return fail(fs, -EINVAL, "corrupt extent tree: entry count over the node's room", n);
	if (EH16(node, eh_depth) != depth)
		return fail(fs, -EINVAL, "corrupt extent tree: depth does not match the parent",
			    EH16(node, eh_depth));
	if (n == 0 && (depth > 0 || !is_root))
		return fail(fs, -EINVAL, "corrupt extent tree: empty node", depth);

	for (i = 0; i < n; i++) {
		const uint8_t *e = node + sizeof(struct ext4_extent_header) + 12u * i;

		if (depth > 0) {
			uint64_t b = EI32(e, ei_block);
			uint64_t child = EI32(e, ei_leaf_lo) | (uint64_t)EI16(e, ei_leaf_hi) << 32;

			/* strictly increasing, inside the parent's range */
			if (b < lo || b >= hi || (i > 0 && b < prev_end))
				return fail(fs, -EINVAL, "corrupt extent tree: index out of order", b);
			prev_end = b + 1;
			if (!blocks_ok(fs, child, 1))
				return fail(fs, -EINVAL,
					    "corrupt extent tree: index points outside the file system",
					    child);
		} else {
			uint64_t b = EE32(e, ee_block);
			uint32_t len = EE16(e, ee_len);
			uint64_t start = EE32(e, ee_start_lo) | (uint64_t)EE16(e, ee_start_hi) << 32;

			if (len > EXT4_EXT_INIT_MAX_LEN)
				len -= EXT4_EXT_INIT_MAX_LEN; /* unwritten */
			if (len == 0)
				return fail(fs, -EINVAL, "corrupt extent tree: zero-length extent", b);
			if (b < prev_end || b + len > hi)
				return fail(fs, -EINVAL, "corrupt extent tree: extents overlap or out of order",
					    b);
			prev_end = b + len;
			if (!blocks_ok(fs, start, len))
				return fail(fs, -EINVAL,
					    "corrupt extent tree: extent points outside the file system",
					    start);
		}
	}
	return 0;
}

struct ext4_ext_leaf {
	const uint8_t *node;   /* the leaf: inode->i_block or fs->blk */
	uint32_t n;            /* entries */
	uint64_t hi;           /* end of the leaf's range: the next leaf's first block, or 2^32 */
};

/* Walk from the root to the leaf whose range holds lblk (or the first leaf
 * when lblk is before every index). The path is not kept: each level's
 * block replaces its parent's in fs->blk, and the one number needed later,
 * where the next leaf starts, is carried down as `hi`. Depth <= 5, so the
 * loop runs at most 6 times. */
static GPUOS_HD int ext_find_leaf(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				  uint64_t lblk, struct ext4_ext_leaf *leaf)
{
	const uint8_t *node = inode->i_block;
	uint32_t depth = EH16(node, eh_depth);
	uint32_t cap = (sizeof(inode->i_block) - sizeof(struct ext4_extent_header)) / 12u;
	uint64_t lo = 0, hi = LBLK_LIMIT;
	uint32_t level;
	int r;

	if (depth > GPUOS_EXT4_MAX_DEPTH)
		return fail(fs, -EINVAL, "corrupt extent tree: too deep", depth);
	for (level = 0; level <= GPUOS_EXT4_MAX_DEPTH; level++) {
		uint32_t n, i, pick;
		const uint8_t *e;
		uint64_t child, clo, chi;

		r = ext_check_node(fs, node, cap, depth, level == 0, lo, hi);
		if (r)
			return r;
		n = EH16(node, eh_entries);
		if (depth == 0) {
			leaf->node = node;
			leaf->n = n;
			leaf->hi = hi;
			return 0;
		}
		/* the last index starting at or before lblk, else the first */
		pick = 0;
		for (i = 1; i < n; i++) {
			e = node + sizeof(struct ext4_extent_header) + 12u * i;
			if (EI32(e, ei_block) > lblk)
				break;
			pick = i;
		}
		e = node + sizeof(struct ext4_extent_header) + 12u * pick;
		child = EI32(e, ei_leaf_lo) | (uint64_t)EI16(e, ei_leaf_hi) << 32;
		clo = EI32(e, ei_block);
		chi = hi;
		if (pick + 1 < n)
			chi = EI32(e + 12, ei_block);

		/* the child replaces this node in fs->blk: take what is needed first */
		r = read_block(fs, child, scratch(fs));
		if (r)
			return r;
		node = fs->blk;
		cap = (fs->block_size - (uint32_t)sizeof(struct ext4_extent_header)) / 12u;
		if (fs->has_csum) {
			/* the tail follows eh_max entries (ext4_extent_block_csum()) */
			uint32_t max = EH16(node, eh_max);
			uint32_t tail = (uint32_t)sizeof(struct ext4_extent_header) + 12u * max;

			if (max > cap)
				return fail(fs, -EINVAL,
					    "corrupt extent tree: entry count over the node's room", max);
			if (ext4_csum32(inode->csum_seed, node, tail) != gpuos_le32(node + tail))
				return fail(fs, -EINVAL, "corrupt extent block: bad checksum", child);
		}
		depth--;
		lo = clo;
		hi = chi;
	}
	return fail(fs, -EINVAL, "corrupt extent tree: too deep", depth);
}

static GPUOS_HD int ext_bmap(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t lblk, uint64_t *pblk, uint64_t *run, uint32_t *flags)
{
	struct ext4_ext_leaf leaf;
	uint64_t next = 0;
	uint32_t i;
	int r;

	r = ext_find_leaf(fs, inode, lblk, &leaf);
	if (r)
		return r;
	next = leaf.hi;
	for (i = 0; i < leaf.n; i++) {
		const uint8_t *e = leaf.node + sizeof(struct ext4_extent_header) + 12u * i;
		uint64_t b = EE32(e, ee_block);
		uint32_t len = EE16(e, ee_len);
		uint32_t unwritten = 0;

		if (len > EXT4_EXT_INIT_MAX_LEN) {
			len -= EXT4_EXT_INIT_MAX_LEN;
			unwritten = GPUOS_EXT4_BMAP_UNWRITTEN;
		}
		if (b > lblk) {
			next = b;
			break;
		}
		if (lblk < b + len) {
			*pblk = (EE32(e, ee_start_lo) | (uint64_t)EE16(e, ee_start_hi) << 32) + (lblk - b);
			*run = b + len - lblk;
			*flags = unwritten;
			return 0;
		}
	}
	/* a hole up to the next extent (or the next leaf's range) */
	*pblk = 0;
	*run = next > lblk ? next - lblk : 1;
	*flags = GPUOS_EXT4_BMAP_HOLE;
	return 0;
}

/* ---- block maps (ext2/ext3) --------------------------------------------------- */

/* Read entries [idx, idx + cnt) of indirect block blk into fs->blk. */
static GPUOS_HD int read_ptrs(struct gpuos_ext4 *fs, uint64_t blk, uint32_t idx, uint32_t cnt)
{
	if (!blocks_ok(fs, blk, 1))
		return fail(fs, -EINVAL, "corrupt block map: indirect block outside the file system",
			    blk);
	return dev_read(fs, (blk << fs->block_bits) + 4ull * idx, 4u * cnt, scratch(fs));
}

/*
 * i_block[0..11] map blocks 0..11; i_block[12] an indirect block of n = bs/4
 * pointers, [13] a double and [14] a triple indirect one. A zero pointer at
 * any level is a hole of everything under it. The walk reads one pointer per
 * level (4 bytes); at the last level, or where a zero is found, it reads up
 * to PTR_CHUNK pointers from there to measure the run.
 */
static GPUOS_HD int map_bmap(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t lblk, uint64_t *pblk, uint64_t *run, uint32_t *flags)
{
	uint32_t bits = fs->block_bits - 2; /* log2(pointers per block) */
	uint64_t n = 1ull << bits;
	uint64_t rel, span, first = 0, blk;
	uint32_t levels, lv, idx, cnt, k = 1;
	const uint8_t *p;

	*pblk = 0;
	*flags = 0;
	if (lblk < 12) {
		/* direct: measure within i_block[lblk..11] */
		first = gpuos_le32(inode->i_block + 4u * lblk);
		for (k = 1; lblk + k < 12; k++) {
			uint64_t v = gpuos_le32(inode->i_block + 4u * (lblk + k));

			if (first ? v != first + k : v != 0)
				break;
		}
		goto leaf_run;
	}
	rel = lblk - 12;
	if (rel < n) {
		levels = 1;
		blk = gpuos_le32(inode->i_block + 4u * 12);
	} else if ((rel -= n) < n * n) {
		levels = 2;
		blk = gpuos_le32(inode->i_block + 4u * 13);
	} else if ((rel -= n * n) < n * n * n) {
		levels = 3;
		blk = gpuos_le32(inode->i_block + 4u * 14);
	} else {
		/* past what a block map can address */
		*run = LBLK_LIMIT - lblk;
		*flags = GPUOS_EXT4_BMAP_HOLE;
		return 0;
	}
	span = 1ull << (bits * levels); /* blocks under the top pointer */
	if (blk == 0) {
		*run = span - rel;
		*flags = GPUOS_EXT4_BMAP_HOLE;
		return 0;
	}
	for (lv = levels; lv-- > 0;) {
		int r;

		span = 1ull << (bits * lv); /* blocks under one pointer at this level */
		idx = (uint32_t)(rel >> (bits * lv));
		rel &= span - 1;
		cnt = (uint32_t)GPUOS_MIN(n - idx, (uint64_t)PTR_CHUNK);
		if (lv > 0) {
			uint8_t w[4];

			if (!blocks_ok(fs, blk, 1))
				return fail(fs, -EINVAL,
					    "corrupt block map: indirect block outside the file system", blk);
			r = dev_read(fs, (blk << fs->block_bits) + 4ull * idx, 4, w);
			if (r)
				return r;
			if (gpuos_le32(w) != 0) {
				blk = gpuos_le32(w);
				continue;
			}
			/* a zero pointer: count the zeros after it for the hole's length */
			r = read_ptrs(fs, blk, idx, cnt);
			if (r)
				return r;
			for (k = 1; k < cnt && gpuos_le32(fs->blk + 4u * k) == 0; k++)
				;
			*run = (uint64_t)k * span - rel;
			*flags = GPUOS_EXT4_BMAP_HOLE;
			return 0;
		}
		r = read_ptrs(fs, blk, idx, cnt);
		if (r)
			return r;
		p = fs->blk;
		first = gpuos_le32(p);
		for (k = 1; k < cnt; k++) {
			uint64_t v = gpuos_le32(p + 4u * k);

			if (first ? v != first + k : v != 0)
				break;
		}
		goto leaf_run;
	}
	return fail(fs, -EINVAL, "corrupt block map", lblk); /* not reached */

leaf_run:
	*run = k;
	if (first == 0) {
		*flags = GPUOS_EXT4_BMAP_HOLE;
		return 0;
	}
	if (!blocks_ok(fs, first, k))
		return fail(fs, -EINVAL, "corrupt block map: block outside the file system", first);
	*pblk = first;
	return 0;
}

/* ---- mapping and reading --------------------------------------------------------- */

/* Every data call starts here: a mounted file system, a readable inode. */
static GPUOS_HD int check_readable(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode)
{
	if (fs->block_size == 0)
		return fail(fs, -EINVAL, "file system not mounted", 0);
	if (inode->flags & GPUOS_EXT4_IFL_ENCRYPT)
		return fail(fs, -EOPNOTSUPP, "unsupported: encrypted inode", inode->ino);
	return 0;
}

/* bmap with a 64-bit run (holes may be longer than 2^32 - 1 blocks). */
static GPUOS_HD int bmap64(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			   uint64_t lblk, uint64_t *pblk, uint64_t *run, uint32_t *flags)
{
	int r = check_readable(fs, inode);

	if (r)
		return r;
	if (lblk >= LBLK_LIMIT)
		return fail(fs, -EOVERFLOW, "logical block beyond 2^32", lblk);
	if (inode->map == GPUOS_EXT4_MAP_EXTENTS)
		r = ext_bmap(fs, inode, lblk, pblk, run, flags);
	else if (inode->map == GPUOS_EXT4_MAP_BLOCKMAP)
		r = map_bmap(fs, inode, lblk, pblk, run, flags);
	else
		return fail(fs, -EOPNOTSUPP, "inode has no data blocks (inline, fast symlink or device)",
			    inode->ino);
	if (r == 0 && *run > LBLK_LIMIT - lblk)
		*run = LBLK_LIMIT - lblk;
	return r;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_bmap(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t lblk, uint64_t *pblk, uint32_t *run, uint32_t *flags)
{
	uint64_t r64;
	int r;

	begin(fs);
	r = bmap64(fs, inode, lblk, pblk, &r64, flags);
	if (r)
		return r;
	*run = r64 > UINT32_MAX ? UINT32_MAX : (uint32_t)r64;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_extents(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				uint64_t start, struct gpuos_ext4_extent *out, uint32_t cap,
				uint32_t *n, uint64_t *next)
{
	uint64_t cur = start;
	uint32_t cnt = 0, steps;
	int r;

	begin(fs);
	*n = 0;
	*next = GPUOS_EXT4_EXTENTS_END;
	r = check_readable(fs, inode);
	if (r)
		return r;
	if (inode->map != GPUOS_EXT4_MAP_EXTENTS && inode->map != GPUOS_EXT4_MAP_BLOCKMAP)
		return fail(fs, -EOPNOTSUPP, "inode has no data blocks (inline, fast symlink or device)",
			    inode->ino);
	if (cap == 0)
		return fail(fs, -EINVAL, "no room for extents (cap 0)", 0);

	for (steps = 0; steps < EXTENTS_MAX_STEPS && cur < LBLK_LIMIT && cnt < cap; steps++) {
		if (inode->map == GPUOS_EXT4_MAP_EXTENTS) {
			/* one leaf per step: its extents past cur, then the next leaf */
			struct ext4_ext_leaf leaf;
			uint32_t i;

			r = ext_find_leaf(fs, inode, cur, &leaf);
			if (r)
				return r;
			for (i = 0; i < leaf.n && cnt < cap; i++) {
				const uint8_t *e = leaf.node + sizeof(struct ext4_extent_header) + 12u * i;
				uint64_t b = EE32(e, ee_block);
				uint32_t len = EE16(e, ee_len), fl = 0;
				uint64_t pb = EE32(e, ee_start_lo) | (uint64_t)EE16(e, ee_start_hi) << 32;

				if (len > EXT4_EXT_INIT_MAX_LEN) {
					len -= EXT4_EXT_INIT_MAX_LEN;
					fl = GPUOS_EXT4_BMAP_UNWRITTEN;
				}
				if (b + len <= cur)
					continue;
				if (b < cur) { /* starts before cur: list from cur */
					pb += cur - b;
					len -= (uint32_t)(cur - b);
					b = cur;
				}
				out[cnt].lblk = b;
				out[cnt].pblk = pb;
				out[cnt].len = len;
				out[cnt].flags = fl;
				cnt++;
				cur = b + len;
			}
			if (cnt == cap)
				break;
			/* the next leaf starts at leaf.hi (> cur: ranges strictly increase) */
			if (leaf.hi > cur)
				cur = leaf.hi;
		} else {
			uint64_t pb, run;
			uint32_t fl;

			r = bmap64(fs, inode, cur, &pb, &run, &fl);
			if (r)
				return r;
			if (!(fl & GPUOS_EXT4_BMAP_HOLE)) {
				if (cnt > 0 && out[cnt - 1].lblk + out[cnt - 1].len == cur &&
				    out[cnt - 1].pblk + out[cnt - 1].len == pb &&
				    out[cnt - 1].len + run <= UINT32_MAX) {
					out[cnt - 1].len += (uint32_t)run; /* contiguous: merge */
				} else {
					out[cnt].lblk = cur;
					out[cnt].pblk = pb;
					out[cnt].len = (uint32_t)run; /* runs stay in one indirect block */
					out[cnt].flags = 0;
					cnt++;
				}
			}
			cur += run;
		}
	}
	*n = cnt;
	*next = cur < LBLK_LIMIT ? cur : GPUOS_EXT4_EXTENTS_END;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_read(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t off, uint32_t len, void *dst, uint32_t *got)
{
	uint8_t *d = (uint8_t *)dst;
	uint64_t pos, end;
	uint32_t bs = fs->block_size;
	int r;

	begin(fs);
	*got = 0;
	r = check_readable(fs, inode);
	if (r)
		return r;
	if (off >= inode->size || len == 0)
		return 0;
	end = inode->size - off < len ? inode->size : off + len;

	switch (inode->map) {
	case GPUOS_EXT4_MAP_FAST_SYMLINK:
	case GPUOS_EXT4_MAP_INLINE: {
		/* bytes [0, 60) in i_block, then the system.data value; past both: zeros */
		uint64_t in_iblock = GPUOS_EXT4_INLINE_MIN;
		uint64_t in_xattr = inode->map == GPUOS_EXT4_MAP_INLINE ? inode->inline_len : 0;

		pos = off;
		if (pos < in_iblock) {
			uint64_t k = GPUOS_MIN(end, in_iblock) - pos;

			gpuos_mem_copy(d, inode->i_block + pos, (size_t)k);
			pos += k;
		}
		if (pos < end && pos < in_iblock + in_xattr) {
			uint64_t k = GPUOS_MIN(end, in_iblock + in_xattr) - pos;

			r = dev_read(fs, inode->disk_off + inode->inline_off + (pos - in_iblock),
				     (uint32_t)k, d + (pos - off));
			if (r)
				return r;
			pos += k;
		}
		if (pos < end)
			gpuos_mem_set(d + (pos - off), 0, (size_t)(end - pos));
		*got = (uint32_t)(end - off);
		return 0;
	}
	case GPUOS_EXT4_MAP_EXTENTS:
	case GPUOS_EXT4_MAP_BLOCKMAP:
		break;
	default:
		return fail(fs, -EINVAL, "inode has no data to read", inode->ino);
	}

	/* each pass reads one run (at least one byte: run >= 1 block) */
	for (pos = off; pos < end;) {
		uint64_t lblk = pos >> fs->block_bits, pblk, run, k;
		uint32_t in = (uint32_t)(pos & (bs - 1u)), fl;

		r = bmap64(fs, inode, lblk, &pblk, &run, &fl);
		if (r)
			return r;
		k = (run << fs->block_bits) - in;
		if (k > end - pos)
			k = end - pos;
		if (fl & (GPUOS_EXT4_BMAP_HOLE | GPUOS_EXT4_BMAP_UNWRITTEN)) {
			gpuos_mem_set(d + (pos - off), 0, (size_t)k);
		} else {
			r = dev_read(fs, (pblk << fs->block_bits) + in, (uint32_t)k, d + (pos - off));
			if (r)
				return r;
		}
		pos += k;
	}
	*got = (uint32_t)(end - off);
	return 0;
}

/* ---- directories ---------------------------------------------------------------- */

struct ext4_dent {
	uint32_t ino;
	uint32_t name_len;
	uint32_t type;
	const uint8_t *name;
};

GPUOS_INLINE GPUOS_HD uint32_t rec_len_from_disk(uint32_t v, uint32_t bs)
{
	/* 64 KiB blocks cannot say 65536 in 16 bits (ext2fs_get_rec_len()) */
	if (bs < 65536u)
		return v;
	if (v == 65535u || v == 0)
		return bs;
	return (v & 65532u) | ((v & 3u) << 16);
}

GPUOS_INLINE GPUOS_HD int is_htree(const struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir)
{
	return (fs->feature_compat & GPUOS_EXT4_COMPAT_DIR_INDEX) &&
	       (dir->flags & GPUOS_EXT4_IFL_INDEX);
}

/* Parse the entry at off of a region [0, limit) of directory entries. On
 * success *next is where the following entry starts. */
static GPUOS_HD int parse_dirent(struct gpuos_ext4 *fs, const uint8_t *region, uint32_t off,
				 uint32_t limit, struct ext4_dent *d, uint32_t *next)
{
	const uint8_t *p = region + off;
	uint32_t rec, nlen;

	if ((off & 3u) || off + sizeof(struct ext4_dirent) > limit)
		return fail(fs, -EINVAL, "corrupt directory: entry header overruns the block", off);
	rec = rec_len_from_disk(DE16(p, rec_len), fs->block_size);
	nlen = DE8(p, name_len);
	if (rec < EXT4_DIR_MIN_REC)
		return fail(fs, -EINVAL, "corrupt directory: rec_len smaller than an entry", rec);
	if (rec & 3u)
		return fail(fs, -EINVAL, "corrupt directory: rec_len not a multiple of 4", rec);
	if (rec > limit - off)
		return fail(fs, -EINVAL, "corrupt directory: rec_len overruns the block", rec);
	if (sizeof(struct ext4_dirent) + nlen > rec)
		return fail(fs, -EINVAL, "corrupt directory: name longer than rec_len", nlen);
	d->ino = DE32(p, inode);
	if (d->ino > fs->inodes_count)
		return fail(fs, -EINVAL, "corrupt directory: inode number out of range", d->ino);
	d->name_len = nlen;
	d->name = p + sizeof(struct ext4_dirent);
	if (d->ino != 0) {
		uint32_t i;

		if (nlen == 0)
			return fail(fs, -EINVAL, "corrupt directory: empty name", off);
		/* what no path component can hold (e2fsck: "illegal characters") */
		for (i = 0; i < nlen; i++)
			if (d->name[i] == '\0' || d->name[i] == '/')
				return fail(fs, -EINVAL, "corrupt directory: NUL or '/' in a name", off);
	}
	d->type = GPUOS_EXT4_FT_UNKNOWN;
	if (fs->feature_incompat & GPUOS_EXT4_INCOMPAT_FILETYPE) {
		d->type = DE8(p, file_type);
		if (d->type > GPUOS_EXT4_FT_SYMLINK)
			d->type = GPUOS_EXT4_FT_UNKNOWN;
	}
	*next = off + rec;
	return 0;
}

/* Load directory block lblk into fs->blk (checking its checksum tail) unless
 * it is there already. Returns 0 with *limit (end of its entries), 1 for a
 * hole or unwritten run of *skip blocks, or an error. */
static GPUOS_HD int dir_load_block(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
				   uint64_t lblk, uint32_t *limit, uint64_t *skip)
{
	uint32_t bs = fs->block_size, fl;
	uint64_t pblk, run;
	int r, is_dx;

	if (fs->cache_valid && fs->cache_ino == dir->ino && fs->cache_lblk == lblk) {
		*limit = fs->cache_limit;
		return 0;
	}
	r = bmap64(fs, dir, lblk, &pblk, &run, &fl);
	if (r)
		return r;
	if (fl & (GPUOS_EXT4_BMAP_HOLE | GPUOS_EXT4_BMAP_UNWRITTEN)) {
		*skip = run; /* no entries there (ext4_readdir() skips holes too) */
		return 1;
	}
	r = read_block(fs, pblk, scratch(fs));
	if (r)
		return r;

	/* htree: block 0 is the dx root ("." and ".." whose rec_len covers the
	 * index), other index blocks start with a fake entry spanning the
	 * block; neither has a leaf checksum tail (__ext4_read_dirblock()).
	 * Read linearly they yield "." and ".." and nothing else. */
	is_dx = is_htree(fs, dir) &&
		(lblk == 0 || rec_len_from_disk(DE16(fs->blk, rec_len), bs) == bs);
	*limit = bs;
	if (fs->has_csum && !is_dx) {
		const uint8_t *t = fs->blk + bs - sizeof(struct ext4_dirent_tail);

		if (LD32(t, struct ext4_dirent_tail, det_reserved_zero1) != 0 ||
		    LD16(t, struct ext4_dirent_tail, det_rec_len) != sizeof(struct ext4_dirent_tail) ||
		    LD8(t, struct ext4_dirent_tail, det_reserved_zero2) != 0 ||
		    LD8(t, struct ext4_dirent_tail, det_reserved_ft) != EXT4_DIR_TAIL_FT)
			return fail(fs, -EINVAL, "corrupt directory block: no checksum tail", lblk);
		if (ext4_csum32(dir->csum_seed, fs->blk, bs - (uint32_t)sizeof(struct ext4_dirent_tail)) !=
		    LD32(t, struct ext4_dirent_tail, det_checksum))
			return fail(fs, -EINVAL, "corrupt directory block: bad checksum", lblk);
		*limit = bs - (uint32_t)sizeof(struct ext4_dirent_tail);
	} else if (fs->has_csum && lblk != 0 && DE32(fs->blk, inode) != 0) {
		return fail(fs, -EINVAL, "corrupt directory block: htree node with a live entry", lblk);
	}
	fs->cache_valid = 1;
	fs->cache_ino = dir->ino;
	fs->cache_lblk = lblk;
	fs->cache_limit = *limit;
	return 0;
}

/* Next entry at or after *pos in a block directory. pos = byte offset in
 * the directory; it only grows, and the directory is at most blocks_count
 * blocks (gpuos_ext4_iget() checks), so the loop ends. */
static GPUOS_HD int dir_next_blocks(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
				    uint64_t *pos, struct ext4_dent *d)
{
	uint32_t bits = fs->block_bits, bs = fs->block_size;
	uint64_t p = *pos, max_steps, steps;
	int r;

	/* each step passes one entry of >= 12 bytes, or a block, or a hole */
	max_steps = (dir->size / EXT4_DIR_MIN_REC) + (dir->size >> bits) + 2;
	for (steps = 0; p < dir->size && steps < max_steps; steps++) {
		uint64_t lblk = p >> bits, skip = 1;
		uint32_t off = (uint32_t)(p & (bs - 1u)), limit = 0, next;

		r = dir_load_block(fs, dir, lblk, &limit, &skip);
		if (r < 0)
			return r;
		if (r == 1) {
			p = (lblk + skip) << bits;
			continue;
		}
		if (off >= limit) {
			p = (lblk + 1) << bits;
			continue;
		}
		r = parse_dirent(fs, fs->blk, off, limit, d, &next);
		if (r)
			return r;
		p = next >= limit ? (lblk + 1) << bits : (lblk << bits) + next;
		if (d->ino != 0) {
			*pos = p;
			return 1;
		}
	}
	*pos = p;
	return 0;
}

/* Positions in an inline directory: 0 ".", 1 "..", then offsets 4..59 in
 * i_block (its first 4 bytes hold the parent's inode number), then 60 + the
 * offset in the system.data value. */
#define INLINE_POS_DOT     0u
#define INLINE_POS_DOTDOT  1u
#define INLINE_DOTDOT_SIZE 4u

static GPUOS_HD int dir_next_inline(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
				    uint64_t *pos, struct ext4_dent *d)
{
	uint64_t p = *pos;
	uint32_t steps;
	int r;

	if (p == INLINE_POS_DOT || p == INLINE_POS_DOTDOT) {
		d->type = GPUOS_EXT4_FT_DIR;
		d->name = (const uint8_t *)"..";
		if (p == INLINE_POS_DOT) {
			d->ino = dir->ino;
			d->name_len = 1;
			*pos = INLINE_POS_DOTDOT;
		} else {
			d->ino = gpuos_le32(dir->i_block);
			d->name_len = 2;
			*pos = INLINE_DOTDOT_SIZE;
			if (d->ino == 0 || d->ino > fs->inodes_count)
				return fail(fs, -EINVAL, "corrupt inline directory: bad parent", d->ino);
		}
		return 1;
	}
	if (p < INLINE_DOTDOT_SIZE)
		return fail(fs, -EINVAL, "invalid directory position", p);

	/* each step passes one entry of >= 12 bytes */
	for (steps = 0; steps < (GPUOS_EXT4_INLINE_MIN + dir->inline_len) / 4u + 2u; steps++) {
		const uint8_t *region;
		uint32_t base, limit, next;

		if (p < GPUOS_EXT4_INLINE_MIN) {
			region = dir->i_block;
			base = 0;
			limit = GPUOS_EXT4_INLINE_MIN;
		} else if (p < GPUOS_EXT4_INLINE_MIN + (uint64_t)dir->inline_len) {
			/* the value, through the block cache (key: lblk ~0) */
			if (!(fs->cache_valid && fs->cache_ino == dir->ino && fs->cache_lblk == UINT64_MAX)) {
				r = dev_read(fs, dir->disk_off + dir->inline_off, dir->inline_len, scratch(fs));
				if (r)
					return r;
				fs->cache_valid = 1;
				fs->cache_ino = dir->ino;
				fs->cache_lblk = UINT64_MAX;
				fs->cache_limit = dir->inline_len;
			}
			region = fs->blk;
			base = GPUOS_EXT4_INLINE_MIN;
			limit = dir->inline_len;
		} else {
			break;
		}
		r = parse_dirent(fs, region, (uint32_t)(p - base), limit, d, &next);
		if (r)
			return r;
		p = base + (uint64_t)next;
		if (d->ino != 0) {
			*pos = p;
			return 1;
		}
	}
	*pos = GPUOS_EXT4_INLINE_MIN + (uint64_t)dir->inline_len;
	return 0;
}

static GPUOS_HD int dir_next(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
			     uint64_t *pos, struct ext4_dent *d)
{
	int r = check_readable(fs, dir);

	if (r)
		return r;
	if (dir->type != GPUOS_EXT4_FT_DIR)
		return fail(fs, -ENOTDIR, "not a directory", dir->ino);
	if (dir->map == GPUOS_EXT4_MAP_INLINE)
		return dir_next_inline(fs, dir, pos, d);
	return dir_next_blocks(fs, dir, pos, d);
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_readdir(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
				uint64_t *cookie, struct gpuos_ext4_dirent *out)
{
	struct ext4_dent d;
	int r;

	begin(fs);
	r = dir_next(fs, dir, cookie, &d);
	if (r <= 0)
		return r;
	out->ino = d.ino;
	out->type = (uint8_t)d.type;
	out->name_len = (uint8_t)d.name_len;
	out->rsvd6 = 0;
	gpuos_mem_copy(out->name, d.name, d.name_len);
	out->name[d.name_len] = '\0';
	return 1;
}

/* Name comparison; casefolded directories fold ASCII letters (a stand-in for
 * the kernel's utf8 casefolding that agrees with it on ASCII names). */
static GPUOS_HD int ext4_name_eq(const uint8_t *a, const char *b, uint32_t len, int fold)
{
	uint32_t i;

	for (i = 0; i < len; i++) {
		uint8_t x = a[i], y = (uint8_t)b[i];

		if (fold) {
			if (x >= 'A' && x <= 'Z')
				x = (uint8_t)(x + 32);
			if (y >= 'A' && y <= 'Z')
				y = (uint8_t)(y + 32);
		}
		if (x != y)
			return 0;
	}
	return 1;
}

static GPUOS_HD int dir_find(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
			     const char *name, uint32_t len, uint32_t *ino)
{
	int fold = (fs->feature_incompat & GPUOS_EXT4_INCOMPAT_CASEFOLD) &&
		   (dir->flags & GPUOS_EXT4_IFL_CASEFOLD);
	uint64_t pos = 0, steps, max_steps;
	struct ext4_dent d;
	int r;

	/* dir_next() advances pos by >= 1 entry per call */
	max_steps = dir->size / 4u + GPUOS_EXT4_INLINE_MIN + dir->inline_len + 4u;
	for (steps = 0; steps < max_steps; steps++) {
		r = dir_next(fs, dir, &pos, &d);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		if (d.name_len == len && ext4_name_eq(d.name, name, len, fold)) {
			*ino = d.ino;
			return 0;
		}
	}
	return fail(fs, -ENOENT, "no such file or directory", dir->ino);
}

/* ---- symlinks and paths ------------------------------------------------------------ */

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_readlink(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				 char *buf, uint32_t cap, uint32_t *len)
{
	uint32_t got;
	int r;

	begin(fs);
	*len = 0;
	if (inode->type != GPUOS_EXT4_FT_SYMLINK)
		return fail(fs, -EINVAL, "not a symlink", inode->ino);
	if (inode->size > GPUOS_EXT4_SYMLINK_MAX || inode->size > fs->block_size)
		return fail(fs, -EINVAL, "corrupt symlink: target too long", inode->size);
	*len = (uint32_t)inode->size;
	if (cap < *len + 1u)
		return fail(fs, -ERANGE, "buffer too small for the symlink target", *len);
	r = gpuos_ext4_read(fs, inode, 0, *len, buf, &got);
	if (r)
		return r;
	if (got != *len)
		return fail(fs, -EINVAL, "corrupt symlink: short target", got);
	buf[*len] = '\0';
	return 0;
}

GPUOS_HD int gpuos_ext4_lookup(struct gpuos_ext4 *fs, const char *path, uint32_t *ino)
{
	int r = gpuos_ext4_lookup_at(fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, path, 0,
				     &fs->lookup_res);

	if (r == 0)
		*ino = fs->lookup_res.ino;
	return r;
}

/*
 * The path left to resolve lives right-aligned in fs->path: [pos, END). A
 * component is consumed by moving pos right; a symlink's target is read into
 * the bytes just before pos (the rest of the path, if any, starts with '/'),
 * so "target/rest" is again [pos, END) without moving the rest.
 */
GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_lookup_at(struct gpuos_ext4 *fs, uint32_t root, uint32_t dir,
				  const char *path, uint32_t flags,
				  struct gpuos_ext4_inode *out)
{
	const uint32_t END = GPUOS_EXT4_PATH_BUF;
	struct gpuos_ext4_inode *cur = &fs->lookup_cur;
	uint32_t len, pos, links = 0, iter, e, q, nino;
	int r;

	begin(fs);
	len = (uint32_t)gpuos_str_nlen(path, GPUOS_EXT4_PATH_MAX);
	if (len >= GPUOS_EXT4_PATH_MAX)
		return fail(fs, -ENAMETOOLONG, "path too long", len);
	if (len == 0)
		return fail(fs, -ENOENT, "empty path", 0);
	pos = END - len;
	gpuos_mem_copy(fs->path + pos, path, len);

	r = gpuos_ext4_iget(fs, fs->path[pos] == '/' ? root : dir, cur);
	if (r)
		return r;
	if (cur->type != GPUOS_EXT4_FT_DIR)
		return fail(fs, -ENOTDIR, "starting point is not a directory", cur->ino);

	/* each pass consumes a component or expands one of <= 40 symlinks,
	 * each of which adds < PATH_BUF bytes */
	for (iter = 0; iter < (GPUOS_EXT4_MAX_SYMLINKS + 1u) * GPUOS_EXT4_PATH_BUF; iter++) {
		int last, slash;
		const char *name;

		while (pos < END && fs->path[pos] == '/')
			pos++;
		if (pos == END)
			break; /* done: the result is cur */
		for (e = pos; e < END && fs->path[e] != '/'; e++)
			;
		name = fs->path + pos;
		len = e - pos;
		for (q = e; q < END && fs->path[q] == '/'; q++)
			;
		last = q == END;
		slash = last && e < END; /* a trailing slash: must be a directory */
		if (len > GPUOS_EXT4_NAME_MAX)
			return fail(fs, -ENAMETOOLONG, "file name too long", len);
		if (cur->type != GPUOS_EXT4_FT_DIR)
			return fail(fs, -ENOTDIR, "not a directory", cur->ino);

		if (len == 1 && name[0] == '.') {
			pos = e;
			continue;
		}
		if (len == 2 && name[0] == '.' && name[1] == '.' && cur->ino == root) {
			pos = e; /* ".." of the root is the root */
			continue;
		}
		r = dir_find(fs, cur, name, len, &nino);
		if (r)
			return r;
		pos = e;
		r = gpuos_ext4_iget(fs, nino, out);
		if (r)
			return r;

		if (out->type == GPUOS_EXT4_FT_SYMLINK &&
		    (!last || slash || !(flags & GPUOS_EXT4_LOOKUP_NOFOLLOW))) {
			uint32_t sz, got, k, i;
			char *t;

			if (++links > GPUOS_EXT4_MAX_SYMLINKS)
				return fail(fs, -ELOOP, "too many levels of symbolic links", links);
			if (out->flags & GPUOS_EXT4_IFL_ENCRYPT)
				return fail(fs, -EOPNOTSUPP, "unsupported: encrypted symlink", out->ino);
			if (out->size > GPUOS_EXT4_SYMLINK_MAX || out->size > fs->block_size)
				return fail(fs, -EINVAL, "corrupt symlink: target too long", out->size);
			sz = (uint32_t)out->size;
			if (sz == 0)
				return fail(fs, -ENOENT, "empty symlink", out->ino);
			if (sz > pos)
				return fail(fs, -ENAMETOOLONG, "path too long once symlinks are expanded", sz);
			t = fs->path + pos - sz;
			r = gpuos_ext4_read(fs, out, 0, sz, t, &got);
			if (r)
				return r;
			if (got != sz)
				return fail(fs, -EINVAL, "corrupt symlink: short target", got);
			/* a NUL ends the target, as in the kernel's walk */
			k = (uint32_t)gpuos_str_nlen(t, sz);
			if (k == 0)
				return fail(fs, -ENOENT, "empty symlink", out->ino);
			for (i = k; i-- > 0;)
				t[i + (sz - k)] = t[i];
			pos -= k;
			if (fs->path[pos] == '/') {
				r = gpuos_ext4_iget(fs, root, cur);
				if (r)
					return r;
			}
			continue; /* relative targets resolve in cur, the link's directory */
		}
		if (slash && out->type != GPUOS_EXT4_FT_DIR)
			return fail(fs, -ENOTDIR, "not a directory (trailing slash)", out->ino);
		*cur = *out;
	}
	if (pos != END)
		return fail(fs, -ELOOP, "too many levels of symbolic links", links);
	if (out != cur)
		*out = *cur;
	return 0;
}

/* This file may share a translation unit with the other parsers (the GPU
 * image includes the runtime sources into one .cu): its private macros end
 * here. */
#undef FIELD_AT
#undef WIDTH_IS
#undef LD8
#undef LD16
#undef LD32
#undef SB16
#undef SB32
#undef GD16
#undef GD32
#undef IN16
#undef IN32
#undef EH16
#undef EI16
#undef EI32
#undef EE16
#undef EE32
#undef DE8
#undef DE16
#undef DE32
#undef XE8
#undef XE16
#undef XE32
#undef LBLK_LIMIT
#undef EXTENTS_MAX_STEPS
#undef PTR_CHUNK
#undef INLINE_POS_DOT
#undef INLINE_POS_DOTDOT
#undef INLINE_DOTDOT_SIZE
