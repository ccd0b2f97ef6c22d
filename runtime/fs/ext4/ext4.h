/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4.h - a read-only ext4 (and ext2/ext3) parser that runs where
 * the runtime runs: a GPU lane or a host thread.
 *
 * Format: the kernel's Documentation/filesystems/ext4/ (the "ext4 Disk
 * Layout"), checked against fs/ext4/ and e2fsprogs' lib/ext2fs. Covered:
 *   superblock (1 KiB..64 KiB blocks, any valid inode size, rev 0 and 1),
 *   32- and 64-bit group descriptors, meta_bg, sparse_super(2), flex_bg;
 *   inodes with extra fields (times with epoch bits and nanoseconds);
 *   extent trees of any depth (iteratively, with a bounded path), unwritten
 *   extents and holes read as zeros; ext2/ext3 block maps (direct, single,
 *   double, triple indirect); inline data (i_block plus the system.data
 *   extended attribute) for files, directories and symlinks; fast and slow
 *   symlinks; linear and htree directories (htree leaves are read linearly,
 *   the dx root and dx nodes are skipped); metadata_csum (superblock, group
 *   descriptors, inodes, extent blocks, directory leaf blocks) and the older
 *   gdt_csum (crc16) group descriptor checksum; POSIX path resolution.
 *
 * Not covered: writing, the journal (a file system that needs recovery is
 * refused unless GPUOS_EXT4_MOUNT_NORECOVERY says to read it as it is),
 * encrypted inodes (the encrypt feature itself is accepted: only inodes that
 * are encrypted fail, with -EOPNOTSUPP), extended attributes other than
 * system.data, htree hash lookups (directories are scanned linearly),
 * Unicode case folding (casefolded directories match names case-insensitively
 * for ASCII, byte for byte otherwise).
 *
 * Every length, count, offset and block number read from the disk is hostile
 * input: each is bounded and checked, every loop is bounded, trees are walked
 * without recursion. A malformed image gives -EINVAL (or -EOPNOTSUPP for
 * something valid that is not supported) and a reason in fs->why; never a
 * fault, a hang or a read outside the buffers.
 *
 * Memory: none of its own. All state, including one block of scratch space
 * (64 KiB, the largest block size) and the path buffer of lookups, lives in
 * struct gpuos_ext4, which the caller provides; it is self-contained (the io
 * is copied into it), so it can live in device memory and be cached. The
 * functions use a few hundred bytes of stack.
 *
 * Context: any one thread at a time per struct gpuos_ext4 (a GPU lane or a
 * host thread); calls block in gpuos_meta_read(). Results that point into the
 * struct (fs->why) stay valid until the next call.
 *
 * Errors (negative errno; fs->why says more, fs->bad holds the offending
 * number where there is one):
 *   -EINVAL      corrupt on-disk data ("corrupt ...", "bad ... checksum"), or
 *                an invalid argument (an inode number out of range, ...)
 *   -EOPNOTSUPP  a feature or inode kind this parser does not read
 *   -ENOENT, -ENOTDIR, -EISDIR, -ELOOP, -ENAMETOOLONG   path resolution
 *   -EACCES      path resolution with credentials: a directory not searchable
 *   -ERANGE      a caller's buffer is too small (readlink)
 *   -EOVERFLOW   a logical block or offset beyond what ext4 can address
 *   -EIO         the io failed (or a read went past its end)
 */
#ifndef GPUOS_RUNTIME_FS_EXT4_H
#define GPUOS_RUNTIME_FS_EXT4_H

#include "gpuos/port.h"
#include "../../meta_io.h"
#include "../fs_types.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_rt_client;   /* gpuos/internal/rt.h: a client's uid, gid and groups */

/* ---- constants -------------------------------------------------------------- */

#define GPUOS_EXT4_SUPER_OFFSET  1024u    /* superblock byte offset in the partition */
#define GPUOS_EXT4_MAGIC         0xEF53u
#define GPUOS_EXT4_MAGIC_OFFSET  (GPUOS_EXT4_SUPER_OFFSET + 0x38u) /* s_magic, 2 bytes: a look for a file system */
#define GPUOS_EXT4_ROOT_INO      2u
#define GPUOS_EXT4_MIN_BLOCK     1024u
#define GPUOS_EXT4_MAX_BLOCK     65536u   /* largest block size read (log 6) */
#define GPUOS_EXT4_NAME_MAX      GPUOS_FS_NAME_MAX /* bytes of a file name (255) */
#define GPUOS_EXT4_PATH_MAX      4096u    /* bytes of a path, NUL included (PATH_MAX) */
#define GPUOS_EXT4_SYMLINK_MAX   4095u    /* bytes of a symlink target */
#define GPUOS_EXT4_MAX_SYMLINKS  40u      /* symlinks followed per lookup (MAXSYMLINKS) */
#define GPUOS_EXT4_PATH_BUF      8192u    /* a path and its expanded symlinks */
#define GPUOS_EXT4_MAX_DEPTH     5u       /* extent tree depth (EXT4_MAX_EXTENT_DEPTH) */
#define GPUOS_EXT4_N_BLOCKS      15u      /* i_block words */
#define GPUOS_EXT4_INLINE_MIN    60u      /* inline data bytes held in i_block */

/* gpuos_ext4_mount() flags */
#define GPUOS_EXT4_MOUNT_NORECOVERY (1u << 0) /* read a file system whose journal needs
					       * recovery as it is on disk (like
					       * mount -o ro,noload): recent changes may
					       * be missing */

/* gpuos_ext4_lookup_at() flags */
#define GPUOS_EXT4_LOOKUP_NOFOLLOW  (1u << 0) /* do not follow a symlink in the last
					       * component (lstat); a trailing slash
					       * still follows it, as POSIX says */

/* Access gpuos_ext4_permission() checks for: the rwx bits of a mode. */
#define GPUOS_EXT4_MAY_READ   4u
#define GPUOS_EXT4_MAY_WRITE  2u
#define GPUOS_EXT4_MAY_EXEC   1u  /* execute a file, search a directory */

/* File types: the values of the ext4 directory entry file_type byte. */
#define GPUOS_EXT4_FT_UNKNOWN  0u
#define GPUOS_EXT4_FT_REG      1u
#define GPUOS_EXT4_FT_DIR      2u
#define GPUOS_EXT4_FT_CHR      3u
#define GPUOS_EXT4_FT_BLK      4u
#define GPUOS_EXT4_FT_FIFO     5u
#define GPUOS_EXT4_FT_SOCK     6u
#define GPUOS_EXT4_FT_SYMLINK  7u

/* Where an inode keeps its data (struct gpuos_ext4_inode.map). */
#define GPUOS_EXT4_MAP_NONE         0u  /* devices, fifos, sockets */
#define GPUOS_EXT4_MAP_EXTENTS      1u  /* extent tree rooted in i_block */
#define GPUOS_EXT4_MAP_BLOCKMAP     2u  /* ext2/ext3 direct and indirect blocks */
#define GPUOS_EXT4_MAP_INLINE       3u  /* i_block, then the system.data xattr */
#define GPUOS_EXT4_MAP_FAST_SYMLINK 4u  /* the target in i_block */

/* Mapping flags (gpuos_ext4_bmap() and struct gpuos_fs_extent.flags): the
 * interface's. */
#define GPUOS_EXT4_BMAP_HOLE       GPUOS_FS_EXT_HOLE       /* no block: reads as zeros */
#define GPUOS_EXT4_BMAP_UNWRITTEN  GPUOS_FS_EXT_UNWRITTEN  /* allocated, not written: reads as zeros */

/* Inode flags (i_flags) a caller may care about. */
#define GPUOS_EXT4_IFL_IMMUTABLE   0x00000010u
#define GPUOS_EXT4_IFL_APPEND      0x00000020u
#define GPUOS_EXT4_IFL_ENCRYPT     0x00000800u
#define GPUOS_EXT4_IFL_INDEX       0x00001000u  /* htree directory */
#define GPUOS_EXT4_IFL_HUGE_FILE   0x00040000u
#define GPUOS_EXT4_IFL_EXTENTS     0x00080000u
#define GPUOS_EXT4_IFL_VERITY      0x00100000u
#define GPUOS_EXT4_IFL_INLINE_DATA 0x10000000u
#define GPUOS_EXT4_IFL_CASEFOLD    0x40000000u

/* Feature bits (superblock s_feature_*). */
#define GPUOS_EXT4_COMPAT_DIR_INDEX      0x0020u
#define GPUOS_EXT4_COMPAT_SPARSE_SUPER2  0x0200u

#define GPUOS_EXT4_INCOMPAT_COMPRESSION  0x00001u
#define GPUOS_EXT4_INCOMPAT_FILETYPE     0x00002u
#define GPUOS_EXT4_INCOMPAT_RECOVER      0x00004u
#define GPUOS_EXT4_INCOMPAT_JOURNAL_DEV  0x00008u
#define GPUOS_EXT4_INCOMPAT_META_BG      0x00010u
#define GPUOS_EXT4_INCOMPAT_EXTENTS      0x00040u
#define GPUOS_EXT4_INCOMPAT_64BIT        0x00080u
#define GPUOS_EXT4_INCOMPAT_MMP          0x00100u
#define GPUOS_EXT4_INCOMPAT_FLEX_BG      0x00200u
#define GPUOS_EXT4_INCOMPAT_EA_INODE     0x00400u
#define GPUOS_EXT4_INCOMPAT_DIRDATA      0x01000u
#define GPUOS_EXT4_INCOMPAT_CSUM_SEED    0x02000u
#define GPUOS_EXT4_INCOMPAT_LARGEDIR     0x04000u
#define GPUOS_EXT4_INCOMPAT_INLINE_DATA  0x08000u
#define GPUOS_EXT4_INCOMPAT_ENCRYPT      0x10000u
#define GPUOS_EXT4_INCOMPAT_CASEFOLD     0x20000u
/* What this parser reads. */
#define GPUOS_EXT4_INCOMPAT_SUPPORTED                                          \
	(GPUOS_EXT4_INCOMPAT_FILETYPE | GPUOS_EXT4_INCOMPAT_META_BG |          \
	 GPUOS_EXT4_INCOMPAT_EXTENTS | GPUOS_EXT4_INCOMPAT_64BIT |             \
	 GPUOS_EXT4_INCOMPAT_MMP | GPUOS_EXT4_INCOMPAT_FLEX_BG |               \
	 GPUOS_EXT4_INCOMPAT_EA_INODE | GPUOS_EXT4_INCOMPAT_CSUM_SEED |        \
	 GPUOS_EXT4_INCOMPAT_LARGEDIR | GPUOS_EXT4_INCOMPAT_INLINE_DATA |      \
	 GPUOS_EXT4_INCOMPAT_ENCRYPT | GPUOS_EXT4_INCOMPAT_CASEFOLD)

#define GPUOS_EXT4_RO_COMPAT_SPARSE_SUPER  0x0001u
#define GPUOS_EXT4_RO_COMPAT_LARGE_FILE    0x0002u
#define GPUOS_EXT4_RO_COMPAT_HUGE_FILE     0x0008u
#define GPUOS_EXT4_RO_COMPAT_GDT_CSUM      0x0010u
#define GPUOS_EXT4_RO_COMPAT_DIR_NLINK     0x0020u
#define GPUOS_EXT4_RO_COMPAT_EXTRA_ISIZE   0x0040u
#define GPUOS_EXT4_RO_COMPAT_BIGALLOC      0x0200u
#define GPUOS_EXT4_RO_COMPAT_METADATA_CSUM 0x0400u

/* gpuos_ext4_extents(): *next when nothing follows. */
#define GPUOS_EXT4_EXTENTS_END GPUOS_FS_EXTENTS_END

/* ---- results ------------------------------------------------------------------ */

/* An inode, decoded. Self-contained: the data functions below need nothing
 * else (inline data is read from the on-disk inode at disk_off). */
struct gpuos_ext4_inode {
	uint32_t ino;          /* 0x00 */
	uint16_t mode;         /* 0x04 i_mode: type and permission bits */
	uint8_t type;          /* 0x06 GPUOS_EXT4_FT_*, from the mode */
	uint8_t map;           /* 0x07 GPUOS_EXT4_MAP_* */
	uint64_t size;         /* 0x08 bytes (i_size_lo | i_size_high << 32) */
	uint64_t blocks;       /* 0x10 512-byte sectors allocated (huge_file scaled) */
	uint32_t uid;          /* 0x18 */
	uint32_t gid;          /* 0x1c */
	uint32_t links;        /* 0x20 i_links_count */
	uint32_t flags;        /* 0x24 i_flags (GPUOS_EXT4_IFL_*) */
	int64_t atime;         /* 0x28 seconds since the epoch (with the extra epoch bits) */
	int64_t mtime;         /* 0x30 */
	int64_t ctime;         /* 0x38 */
	int64_t crtime;        /* 0x40 0 when the inode has no room for it */
	uint32_t atime_ns;     /* 0x48 nanoseconds, 0 without extra fields */
	uint32_t mtime_ns;     /* 0x4c */
	uint32_t ctime_ns;     /* 0x50 */
	uint32_t crtime_ns;    /* 0x54 */
	uint32_t generation;   /* 0x58 */
	uint32_t csum_seed;    /* 0x5c crc32c seed of this inode's metadata (metadata_csum) */
	uint64_t file_acl;     /* 0x60 block of extended attributes, 0 if none */
	uint64_t disk_off;     /* 0x68 byte offset of the on-disk inode in the partition */
	uint32_t rdev_major;   /* 0x70 character and block devices */
	uint32_t rdev_minor;   /* 0x74 */
	uint16_t extra_isize;  /* 0x78 i_extra_isize */
	uint16_t inline_off;   /* 0x7a MAP_INLINE: offset of the system.data value in the inode */
	uint32_t inline_len;   /* 0x7c MAP_INLINE: its length (data = i_block, then these) */
	uint8_t i_block[60];   /* 0x80 raw: extent root, block map, inline data or link */
	uint32_t projid;       /* 0xbc project id (0 without room for it) */
};
static_assert(sizeof(struct gpuos_ext4_inode) == 192, "ext4 inode size");
static_assert(offsetof(struct gpuos_ext4_inode, i_block) == 0x80, "ext4 inode i_block");

/* Extents and directory entries are the file-system interface's
 * (runtime/fs/fs_types.h, struct gpuos_fs_extent and gpuos_fs_dirent). */

/* A mounted file system. Fill it with gpuos_ext4_mount(); the fields after
 * `why` are read-only for callers. */
struct gpuos_ext4 {
	const char *why;       /* reason of the last failure (a string literal), or NULL */
	uint64_t bad;          /* the offending number of the last failure, if any */
	struct gpuos_meta_io io;  /* copy of the io: byte 0 = start of the file system */

	/* geometry */
	uint64_t blocks_count;
	uint32_t block_size;   /* 1024..65536 */
	uint32_t block_bits;   /* log2(block_size) */
	uint32_t cluster_bits; /* log2(cluster size), = block_bits without bigalloc */
	uint32_t first_data_block;
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inodes_count;
	uint32_t group_count;
	uint32_t inode_size;   /* 128..block_size, power of two */
	uint32_t desc_size;    /* 32, or s_desc_size with 64bit */
	uint32_t first_ino;    /* first non-reserved inode */
	uint32_t first_meta_bg;
	uint32_t backup_bgs[2];   /* sparse_super2 */
	uint32_t rev_level;
	uint32_t creator_os;
	uint32_t feature_compat;
	uint32_t feature_incompat;
	uint32_t feature_ro_compat;
	uint32_t csum_seed;    /* crc32c seed of all metadata checksums (metadata_csum) */
	uint32_t mount_flags;  /* GPUOS_EXT4_MOUNT_* */
	uint32_t has_csum;     /* metadata_csum: verify crc32c checksums */
	uint32_t has_gdt_csum; /* gdt_csum without metadata_csum: crc16 group descriptors */
	uint8_t uuid[16];
	char volume_name[17];  /* NUL-terminated */
	uint8_t rsvd_pad[3];

	/* fs->blk holds directory block cache_lblk of inode cache_ino when
	 * cache_valid (it saves re-reading a block per readdir call) */
	uint32_t cache_valid;
	uint32_t cache_ino;
	uint32_t cache_limit;  /* where the entries of the cached block end */
	uint32_t rsvd_cache;
	uint64_t cache_lblk;

	/* lookup state, here rather than on a GPU lane's small stack */
	struct gpuos_ext4_inode lookup_cur;  /* the directory being searched */
	struct gpuos_ext4_inode lookup_res;  /* gpuos_ext4_lookup()'s result */
	char path[GPUOS_EXT4_PATH_BUF];     /* the path left to resolve, right-aligned */
	uint8_t blk[GPUOS_EXT4_MAX_BLOCK];  /* scratch: one block or one inode */
};

/* ---- calls -------------------------------------------------------------------- */

/*
 * Read and check the superblock (and the root inode) of the file system that
 * io covers (byte 0 = the start of the partition); io is copied. flags:
 * GPUOS_EXT4_MOUNT_*. Returns 0, -EINVAL (not ext4, or corrupt),
 * -EOPNOTSUPP (an incompatible feature this parser does not read, named in
 * fs->why; a journal that needs recovery), -EIO.
 */
GPUOS_HD int gpuos_ext4_mount(struct gpuos_ext4 *fs, const struct gpuos_meta_io *io,
			      uint32_t flags);

/*
 * Read inode ino into *out, checking its checksum and its fields. Returns 0,
 * -EINVAL (ino out of range, corrupt inode), -ENOENT (an inode not in use),
 * -EIO.
 */
GPUOS_HD int gpuos_ext4_iget(struct gpuos_ext4 *fs, uint32_t ino, struct gpuos_ext4_inode *out);

/*
 * Resolve an absolute path from the root directory, following symlinks, the
 * last component's too (stat). Returns 0 with *ino, or the errors of
 * gpuos_ext4_lookup_at().
 */
GPUOS_HD int gpuos_ext4_lookup(struct gpuos_ext4 *fs, const char *path, uint32_t *ino);

/*
 * Resolve path as POSIX does: relative paths start at directory `dir`,
 * absolute ones (and absolute symlink targets) at `root`, which is also where
 * ".." stops (so nothing escapes root: pass GPUOS_EXT4_ROOT_INO for the whole
 * file system). "." and ".." are handled, "//" is "/", a trailing slash
 * requires a directory; relative symlink targets resolve against the link's
 * directory; at most GPUOS_EXT4_MAX_SYMLINKS symlinks are followed. flags:
 * GPUOS_EXT4_LOOKUP_*. On success *out is the inode found; on failure its
 * contents are unspecified (it serves as scratch).
 * Returns 0, -ENOENT (a component is missing, an empty path or symlink),
 * -ENOTDIR (a component used as a directory is not one), -ELOOP,
 * -ENAMETOOLONG (a component over 255 bytes, a path over 4095 bytes, or too
 * long once symlinks are expanded), -EINVAL, -EOPNOTSUPP (an encrypted
 * directory or symlink on the way), -EIO.
 */
GPUOS_HD int gpuos_ext4_lookup_at(struct gpuos_ext4 *fs, uint32_t root, uint32_t dir,
				  const char *path, uint32_t flags,
				  struct gpuos_ext4_inode *out);

/*
 * gpuos_ext4_lookup_at() as a client with credentials cred: every directory
 * searched on the way (".", ".." and those that symlinks lead through
 * included) needs search permission (gpuos_ext4_permission()); the inode
 * found needs none. cred NULL: no checks. Returns what gpuos_ext4_lookup_at()
 * does, and -EACCES (a directory cred may not search; fs->bad is its inode).
 */
GPUOS_HD int gpuos_ext4_lookup_as(struct gpuos_ext4 *fs, uint32_t root, uint32_t dir,
				  const char *path, uint32_t flags,
				  const struct gpuos_rt_client *cred,
				  struct gpuos_ext4_inode *out);

/*
 * May credentials cred access inode in as want (GPUOS_EXT4_MAY_* bits)
 * asks? POSIX mode bits, without ACLs: uid 0 may read, write and search
 * anything, and execute a file with some x bit; anyone else gets the owner's
 * bits if cred->uid is in->uid, else the group's if cred->gid or one of
 * cred->groups is in->gid, else the others'. cred NULL: everything. Pure: it
 * reads only its arguments, not the disk. Returns 0 or -EACCES.
 */
GPUOS_HD int gpuos_ext4_permission(const struct gpuos_ext4_inode *in,
				   const struct gpuos_rt_client *cred, uint32_t want);

/*
 * Map logical block lblk of an extent- or block-mapped inode: *pblk, and in
 * *run the number of blocks from lblk on that map the same way (physically
 * consecutive, or all hole, or all unwritten; at least 1, at most the end of
 * what one extent or indirect block says, so the next run may continue the
 * same kind). *flags: GPUOS_EXT4_BMAP_HOLE (pblk 0) or
 * GPUOS_EXT4_BMAP_UNWRITTEN (pblk valid, reads as zeros) or 0. The range is
 * not clipped to the file size. Returns 0, -EINVAL (corrupt map),
 * -EOPNOTSUPP (inline data, fast symlinks and devices have no blocks;
 * encrypted inodes), -EOVERFLOW (lblk >= 2^32), -EIO.
 */
GPUOS_HD int gpuos_ext4_bmap(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t lblk, uint64_t *pblk, uint32_t *run, uint32_t *flags);

/*
 * List the mapped runs of an extent- or block-mapped inode in file order,
 * starting at logical block start (an extent that covers start is listed
 * from start on). Holes are left out; unwritten extents are listed with
 * GPUOS_EXT4_BMAP_UNWRITTEN. Extent files give their extents as stored;
 * block-mapped files give their physically contiguous runs. At most cap
 * entries go to out; *n says how many; *next is where the next call should
 * start, GPUOS_EXT4_EXTENTS_END when nothing is left. A call does bounded work
 * and may return fewer than cap entries (even none) before the end: loop
 * until *next is GPUOS_EXT4_EXTENTS_END. Returns 0, or the errors of
 * gpuos_ext4_bmap().
 */
GPUOS_HD int gpuos_ext4_extents(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				uint64_t start, struct gpuos_fs_extent *out, uint32_t cap,
				uint32_t *n, uint64_t *next);

/*
 * Read up to len bytes of the inode's data at byte offset off into dst (any
 * map kind; holes and unwritten extents read as zeros). *got is the number of
 * bytes read: len, or less at the end of the file (0 at or past it). Meant
 * for small reads (directories, symlinks, inline data, tools): it issues one
 * io read per run. Returns 0, -EINVAL, -EOPNOTSUPP (encrypted), -EOVERFLOW,
 * -EIO.
 */
GPUOS_HD int gpuos_ext4_read(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			     uint64_t off, uint32_t len, void *dst, uint32_t *got);

/*
 * Read the directory entry at *cookie (start with 0) into *out and advance
 * *cookie. Entries come in on-disk order, "." and ".." included (an inline
 * directory's are made up from its inode). Returns 1 (an entry), 0 (the end),
 * -ENOTDIR, -EINVAL (corrupt block, bad checksum, or a cookie this call did
 * not hand out), -EOPNOTSUPP (encrypted), -EIO.
 */
GPUOS_HD int gpuos_ext4_readdir(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *dir,
				uint64_t *cookie, struct gpuos_fs_dirent *out);

/*
 * Copy a symlink's target into buf and NUL-terminate it; *len is its length
 * (also when buf is too small). Returns 0, -EINVAL (not a symlink, or
 * corrupt), -ERANGE (cap < *len + 1), -EOPNOTSUPP (encrypted), -EIO.
 */
GPUOS_HD int gpuos_ext4_readlink(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				 char *buf, uint32_t cap, uint32_t *len);

/* Name of an incompatible feature bit ("extents", ...), NULL if unknown. */
GPUOS_HD const char *gpuos_ext4_incompat_name(uint32_t bit);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_FS_EXT4_H */
