/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4_internal.h - what the sources of the ext4 parser share; ext4.h
 * is its interface. One idea a file:
 *   ext4_disk.h    the on-disk structures and their field loads
 *   ext4_super.c   the superblock, group descriptors and inodes (mount, iget)
 *                  and ext4_dev_read()
 *   ext4_map.c     where data lives: extent trees, ext2/ext3 block maps, and
 *                  reads through them (bmap, extents, read)
 *   ext4_dir.c     directories (linear and htree), symlinks, path lookup
 *
 * Reads go through gpuos_meta_read(); a whole block (a directory block, an
 * extent block, an inode) lands in fs->blk, smaller things (a block pointer
 * of an indirect block) are read straight into locals, file data straight
 * into the caller's buffer.
 *
 * Context: that of ext4.h (one thread per struct gpuos_ext4).
 */
#ifndef GPUOS_RUNTIME_EXT4_INTERNAL_H
#define GPUOS_RUNTIME_EXT4_INTERNAL_H

#include "ext4.h"
#include "ext4_disk.h"
#include "../../crc.h"
#include "../../util.h"

static_assert(GPUOS_EXT4_MAGIC_OFFSET == GPUOS_EXT4_SUPER_OFFSET + offsetof(struct ext4_sb, s_magic),
	      "ext4 magic offset");

GPUOS_EXTERN_C_BEGIN

/* ---- errors, reads, checksums ------------------------------------------------ */

GPUOS_INLINE GPUOS_HD int fail(struct gpuos_ext4 *fs, int err, const char *why, uint64_t bad)
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

/* len bytes at byte offset off of the file system into dst. Returns 0, or
 * -EIO (a device error, or past the end of the io) with fs->why. */
GPUOS_HD int ext4_dev_read(struct gpuos_ext4 *fs, uint64_t off, uint32_t len, void *dst);

/* [pblk, pblk + count) inside the file system and past the superblock. */
GPUOS_INLINE GPUOS_HD int blocks_ok(const struct gpuos_ext4 *fs, uint64_t pblk, uint64_t count)
{
	return pblk > fs->first_data_block && count <= fs->blocks_count &&
	       pblk <= fs->blocks_count - count;
}

GPUOS_INLINE GPUOS_HD int read_block(struct gpuos_ext4 *fs, uint64_t pblk, uint8_t *dst)
{
	if (!blocks_ok(fs, pblk, 1))
		return fail(fs, -EINVAL, "corrupt: block number outside the file system", pblk);
	return ext4_dev_read(fs, pblk << fs->block_bits, fs->block_size, dst);
}

GPUOS_INLINE GPUOS_HD uint32_t ext4_csum32(uint32_t seed, const void *p, uint32_t len)
{
	return gpuos_crc32c_raw(seed, p, len);
}

/* ---- mapping ------------------------------------------------------------------ */

/* Every data call starts here: a mounted file system, a readable inode. */
GPUOS_INLINE GPUOS_HD int check_readable(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode)
{
	if (fs->block_size == 0)
		return fail(fs, -EINVAL, "file system not mounted", 0);
	if (inode->flags & GPUOS_EXT4_IFL_ENCRYPT)
		return fail(fs, -EOPNOTSUPP, "unsupported: encrypted inode", inode->ino);
	return 0;
}

/* gpuos_ext4_bmap() with a 64-bit run (holes may be longer than 2^32 - 1
 * blocks), and without begin(): for the parser's own calls. */
GPUOS_HD int ext4_bmap64(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
			 uint64_t lblk, uint64_t *pblk, uint64_t *run, uint32_t *flags);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_EXT4_INTERNAL_H */
