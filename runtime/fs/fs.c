/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/fs.c - the file-system interface (fs.h): each call a switch on
 * the mounted kind, into the file system's folder. The only file outside
 * runtime/fs/ext4/ that names ext4.
 */
#include "fs.h"

/* ext4's codes where they are the interface's: nothing to translate. */
static_assert(GPUOS_EXT4_FT_REG == GPUOS_FT_REG && GPUOS_EXT4_FT_DIR == GPUOS_FT_DIR &&
	      GPUOS_EXT4_FT_SYMLINK == GPUOS_FT_SYMLINK && GPUOS_EXT4_FT_SOCK == GPUOS_FT_SOCK,
	      "ext4 file types are the ABI's");
static_assert(GPUOS_EXT4_LOOKUP_NOFOLLOW == GPUOS_FS_LOOKUP_NOFOLLOW, "lookup flags");
static_assert(GPUOS_EXT4_MAY_READ == GPUOS_FS_MAY_READ && GPUOS_EXT4_MAY_WRITE == GPUOS_FS_MAY_WRITE &&
	      GPUOS_EXT4_MAY_EXEC == GPUOS_FS_MAY_EXEC, "access bits");
static_assert(GPUOS_EXT4_NAME_MAX == GPUOS_FS_NAME_MAX, "name length");

/* The fields every caller reads, from ext4's inode. */
GPUOS_HD static void ext4_common(struct gpuos_fs_inode *out)
{
	const struct gpuos_ext4_inode *e = &out->u.ext4;
	out->ino = e->ino;
	out->mode = e->mode;
	out->type = e->type;
	out->map = (e->map == GPUOS_EXT4_MAP_EXTENTS || e->map == GPUOS_EXT4_MAP_BLOCKMAP) ? GPUOS_FS_MAP_EXTENTS
		 : e->map == GPUOS_EXT4_MAP_NONE ? GPUOS_FS_MAP_NONE : GPUOS_FS_MAP_DATA;
	out->size = e->size;
	out->uid = e->uid;
	out->gid = e->gid;
	out->links = e->links;
	out->rsvd1c = 0;
	out->mtime = e->mtime;
}

GPUOS_HD int gpuos_fs_signature(uint32_t kind, uint64_t *off, uint32_t *len, uint64_t *value)
{
	switch (kind) {
	case GPUOS_FS_EXT4: /* s_magic */
		*off = GPUOS_EXT4_MAGIC_OFFSET;
		*len = 2;
		*value = GPUOS_EXT4_MAGIC;
		return 0;
	default:
		return -EINVAL;
	}
}

GPUOS_HD uint32_t gpuos_fs_part_type(uint32_t kind)
{
	return kind == GPUOS_FS_EXT4 ? GPUOS_PART_FS_EXT : GPUOS_PART_FS_UNKNOWN;
}

GPUOS_HD void gpuos_fs_set_read(struct gpuos_fs *fs, int (*read)(void *ctx, uint64_t off, uint32_t len, void *dst))
{
	switch (fs->kind != GPUOS_FS_NONE ? fs->kind : fs->tried) {
	case GPUOS_FS_EXT4:
		fs->u.ext4.io.read = read;
		break;
	default: /* nothing copied yet: a mount copies the io */
		break;
	}
}

GPUOS_HD int gpuos_fs_mount(struct gpuos_fs *fs, const struct gpuos_meta_io *io, uint32_t flags)
{
	int r;
	fs->kind = GPUOS_FS_NONE;
	/* One kind so far: its verdict is the mount's. A second tries after
	 * the first said -EINVAL (not this kind), by its signature. */
	fs->tried = GPUOS_FS_EXT4;
	r = gpuos_ext4_mount(&fs->u.ext4, io, flags);
	if (r)
		return r;
	fs->kind = GPUOS_FS_EXT4;
	fs->block_size = fs->u.ext4.block_size;
	fs->block_bits = fs->u.ext4.block_bits;
	fs->blocks_count = fs->u.ext4.blocks_count;
	fs->root_ino = GPUOS_EXT4_ROOT_INO;
	return 0;
}

GPUOS_HD const char *gpuos_fs_why(const struct gpuos_fs *fs)
{
	switch (fs->kind != GPUOS_FS_NONE ? fs->kind : fs->tried) {
	case GPUOS_FS_EXT4: return fs->u.ext4.why;
	default: return "no file system mounted";
	}
}

GPUOS_HD int gpuos_fs_lookup(struct gpuos_fs *fs, uint32_t root, uint32_t dir, const char *path, uint32_t flags,
			     const struct gpuos_rt_client *cred, struct gpuos_fs_inode *out)
{
	int r;
	switch (fs->kind) {
	case GPUOS_FS_EXT4:
		r = gpuos_ext4_lookup_as(&fs->u.ext4, root, dir, path, flags, cred, &out->u.ext4);
		if (!r)
			ext4_common(out);
		return r;
	default:
		return -EINVAL;
	}
}

GPUOS_HD int gpuos_fs_permission(const struct gpuos_fs *fs, const struct gpuos_fs_inode *in,
				 const struct gpuos_rt_client *cred, uint32_t want)
{
	switch (fs->kind) {
	case GPUOS_FS_EXT4: return gpuos_ext4_permission(&in->u.ext4, cred, want);
	default: return -EACCES;
	}
}

GPUOS_HD int gpuos_fs_extents(struct gpuos_fs *fs, const struct gpuos_fs_inode *in, uint64_t start,
			      struct gpuos_fs_extent *out, uint32_t cap, uint32_t *n, uint64_t *next)
{
	switch (fs->kind) {
	case GPUOS_FS_EXT4: return gpuos_ext4_extents(&fs->u.ext4, &in->u.ext4, start, out, cap, n, next);
	default: return -EINVAL;
	}
}

GPUOS_HD int gpuos_fs_read(struct gpuos_fs *fs, const struct gpuos_fs_inode *in, uint64_t off, uint32_t len,
			   void *dst, uint32_t *got)
{
	switch (fs->kind) {
	case GPUOS_FS_EXT4: return gpuos_ext4_read(&fs->u.ext4, &in->u.ext4, off, len, dst, got);
	default: return -EINVAL;
	}
}

GPUOS_HD int gpuos_fs_readdir(struct gpuos_fs *fs, const struct gpuos_fs_inode *dir, uint64_t *cookie,
			      struct gpuos_fs_dirent *out)
{
	switch (fs->kind) {
	case GPUOS_FS_EXT4: return gpuos_ext4_readdir(&fs->u.ext4, &dir->u.ext4, cookie, out);
	default: return -EINVAL;
	}
}
