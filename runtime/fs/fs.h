/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/fs.h - the file-system interface of the metadata warp: find a
 * file system on a volume, mount it, resolve paths, list a file's extents,
 * read small files and directories. The runtime (runtime/files_*.c) calls
 * these and names no file system; each file system lives in a folder of
 * its own below this one (ext4/: ext2, ext3 and ext4) and is reached only
 * from fs.c.
 *
 * Dispatch: struct gpuos_fs names its kind, and each call below is a switch
 * on it, not a table of function pointers: this runs on a GPU lane, where
 * an indirect call defeats inlining and hides the call graph from ptxas's
 * stack count (the runtime kernel's stack is fixed: boot/gpu.h). A new file
 * system is a folder, a kind, a member of the two unions and a case in each
 * switch of fs.c.
 *
 * Memory: none of its own. struct gpuos_fs holds every file system's whole
 * state (one at a time) and lives in device memory (the files region).
 *
 * Context: one thread at a time per struct gpuos_fs (a lane of the metadata
 * warp, or a host thread); calls block in gpuos_meta_read(). Errors are
 * negative errnos, with a reason in gpuos_fs_why(): those of
 * runtime/fs/ext4/ext4.h, whose meanings every file system keeps.
 */
#ifndef GPUOS_RUNTIME_FS_H
#define GPUOS_RUNTIME_FS_H

#include "gpuos/abi.h"
#include "gpuos/port.h"
#include "../meta_io.h"
#include "fs_types.h"
#include "ext4/ext4.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_rt_client;   /* gpuos/internal/rt.h: a client's uid, gid and groups */

/* The file systems the runtime reads. */
enum gpuos_fs_kind {
	GPUOS_FS_NONE = 0,    /* nothing mounted (yet, or mount failed) */
	GPUOS_FS_EXT4 = 1,    /* ext2, ext3 and ext4 (runtime/fs/ext4/) */
	GPUOS_FS_KINDS = 2
};

/* What the runtime's reasons call the file systems it mounts, all kinds
 * (part of replies: "no partition holds an ext2/3/4 file system"). */
#define GPUOS_FS_NAMES "ext2/3/4"

/* gpuos_fs_lookup() flags */
#define GPUOS_FS_LOOKUP_NOFOLLOW (1u << 0) /* not through a symlink in the last component (lstat) */

/* gpuos_fs_permission(): the rwx bits of a mode */
#define GPUOS_FS_MAY_READ  4u
#define GPUOS_FS_MAY_WRITE 2u
#define GPUOS_FS_MAY_EXEC  1u

/* How an inode's bytes are read (struct gpuos_fs_inode.map). */
enum {
	GPUOS_FS_MAP_NONE = 0,    /* none: devices, fifos, sockets */
	GPUOS_FS_MAP_EXTENTS = 1, /* blocks that gpuos_fs_extents() lists (the engine reads them) */
	GPUOS_FS_MAP_DATA = 2     /* bytes only gpuos_fs_read() reaches (inline data, short symlinks) */
};

/* An inode: what the runtime reads of any file system first, then the file
 * system's own decoding, which only fs/ reads. */
struct gpuos_fs_inode {
	uint32_t ino;          /* 0x00 */
	uint16_t mode;         /* 0x04 type and permission bits (st_mode) */
	uint8_t type;          /* 0x06 enum gpuos_ftype (abi.h) */
	uint8_t map;           /* 0x07 GPUOS_FS_MAP_* */
	uint64_t size;         /* 0x08 bytes */
	uint32_t uid;          /* 0x10 */
	uint32_t gid;          /* 0x14 */
	uint32_t links;        /* 0x18 */
	uint32_t rsvd1c;       /* 0x1c */
	int64_t mtime;         /* 0x20 seconds since the epoch */
	union {                /* 0x28 by kind */
		struct gpuos_ext4_inode ext4;
	} u;
};
static_assert(offsetof(struct gpuos_fs_inode, u) == 0x28, "fs inode: its own part");

/* A mounted file system. The fields before u are read-only for callers;
 * kind is GPUOS_FS_NONE until gpuos_fs_mount() succeeds. */
struct gpuos_fs {
	uint32_t kind;         /* enum gpuos_fs_kind */
	uint32_t tried;        /* the kind a failed mount tried last (whose reason gpuos_fs_why gives) */
	uint32_t block_size;   /* bytes */
	uint32_t block_bits;   /* log2(block_size): the extents' unit */
	uint64_t blocks_count; /* blocks of the file system: every extent lies below it */
	uint32_t root_ino;     /* the root directory */
	uint32_t rsvd1c;
	union {
		struct gpuos_ext4 ext4;
	} u;
};

/* ---- calls -------------------------------------------------------------------- */

/*
 * Where kind's signature lies on a volume: *off from the volume's byte 0,
 * *len bytes (at most 8), read as a little-endian number it is *value.
 * Returns 0, or -EINVAL for a kind without one. Pure.
 */
GPUOS_HD int gpuos_fs_signature(uint32_t kind, uint64_t *off, uint32_t *len, uint64_t *value);

/*
 * The read function of the io the mounted file system copied, set again:
 * a function's address is its launch's (the runtime kernel is launched
 * again after a park). Any context; no reads.
 */
GPUOS_HD void gpuos_fs_set_read(struct gpuos_fs *fs, int (*read)(void *ctx, uint64_t off, uint32_t len, void *dst));

/* The ABI's name of what kind a volume holds (struct gpuos_part.fs). Pure. */
GPUOS_HD uint32_t gpuos_fs_part_type(uint32_t kind);

/*
 * Mount the file system that io covers (byte 0 = the start of the volume;
 * io is copied): each kind in turn, until one mounts. flags: 0. Returns 0,
 * or the last kind's failure: -EINVAL (not one, or corrupt), -EOPNOTSUPP
 * (a feature it does not read), -EIO; the reason in gpuos_fs_why().
 */
GPUOS_HD int gpuos_fs_mount(struct gpuos_fs *fs, const struct gpuos_meta_io *io, uint32_t flags);

/* The reason of the last failure (a string literal), or NULL. */
GPUOS_HD const char *gpuos_fs_why(const struct gpuos_fs *fs);

/*
 * Resolve path as POSIX does from directory dir, absolute paths (and
 * absolute symlink targets) from root, which ".." never leaves; as a client
 * with credentials cred (NULL: no checks), every directory searched needs
 * search permission. flags: GPUOS_FS_LOOKUP_*. On success *out is the inode
 * found; on failure its contents are scratch. Returns 0, -ENOENT, -ENOTDIR,
 * -ELOOP, -ENAMETOOLONG, -EACCES, -EINVAL, -EOPNOTSUPP, -EIO.
 */
GPUOS_HD int gpuos_fs_lookup(struct gpuos_fs *fs, uint32_t root, uint32_t dir, const char *path, uint32_t flags,
			     const struct gpuos_rt_client *cred, struct gpuos_fs_inode *out);

/*
 * May cred access in as want (GPUOS_FS_MAY_* bits) asks? cred NULL:
 * everything. Reads no disk. Returns 0 or -EACCES.
 */
GPUOS_HD int gpuos_fs_permission(const struct gpuos_fs *fs, const struct gpuos_fs_inode *in,
				 const struct gpuos_rt_client *cred, uint32_t want);

/*
 * The extents of an inode with GPUOS_FS_MAP_EXTENTS in file order from
 * logical block start: at most cap into out, *n of them, *next where the
 * next call starts (GPUOS_FS_EXTENTS_END: nothing left). Bounded work a
 * call: it may return fewer than cap (even none) before the end. Holes are
 * left out. Returns 0, -EINVAL (corrupt map), -EOPNOTSUPP, -EOVERFLOW,
 * -EIO.
 */
GPUOS_HD int gpuos_fs_extents(struct gpuos_fs *fs, const struct gpuos_fs_inode *in, uint64_t start,
			      struct gpuos_fs_extent *out, uint32_t cap, uint32_t *n, uint64_t *next);

/*
 * Up to len bytes of the inode's data at off into dst (any map; holes read
 * as zeros); *got: len, or less at the end of the file. For small reads.
 * Returns 0, -EINVAL, -EOPNOTSUPP, -EOVERFLOW, -EIO.
 */
GPUOS_HD int gpuos_fs_read(struct gpuos_fs *fs, const struct gpuos_fs_inode *in, uint64_t off, uint32_t len,
			   void *dst, uint32_t *got);

/*
 * The directory entry at *cookie (0 first) into *out, *cookie advanced.
 * Returns 1 (an entry), 0 (the end), -ENOTDIR, -EINVAL (corrupt, or a
 * cookie it did not hand out), -EOPNOTSUPP, -EIO.
 */
GPUOS_HD int gpuos_fs_readdir(struct gpuos_fs *fs, const struct gpuos_fs_inode *dir, uint64_t *cookie,
			      struct gpuos_fs_dirent *out);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_FS_H */
