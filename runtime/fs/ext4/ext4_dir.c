/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4_dir.c - directories (ext4.h): entries of linear and htree
 * directories and of inline ones (gpuos_ext4_readdir), name lookup in a
 * directory, symlinks (gpuos_ext4_readlink), permissions against a
 * client's credentials (gpuos_ext4_permission) and path resolution
 * (gpuos_ext4_lookup, gpuos_ext4_lookup_at, gpuos_ext4_lookup_as).
 */
#include "ext4_internal.h"
#include "gpuos/internal/rt.h"

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
	r = ext4_bmap64(fs, dir, lblk, &pblk, &run, &fl);
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
				r = ext4_dev_read(fs, dir->disk_off + dir->inline_off, dir->inline_len, scratch(fs));
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
				uint64_t *cookie, struct gpuos_fs_dirent *out)
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

/* ---- permissions -------------------------------------------------------------------- */

/* i_mode's permission bits: rwx of the owner (bits 8:6), the group (5:3) and
 * the others (2:0), in the order of GPUOS_EXT4_MAY_*. */
#define MODE_OWNER_SHIFT 6u
#define MODE_GROUP_SHIFT 3u
#define MODE_RWX         7u
#define MODE_ANY_EXEC    0111u

GPUOS_HD int gpuos_ext4_permission(const struct gpuos_ext4_inode *in,
				   const struct gpuos_rt_client *cred, uint32_t want)
{
	uint32_t mode = in->mode, bits, i, n;
	int member;

	if (!cred)
		return 0;
	want &= MODE_RWX;
	if (cred->uid == 0) {
		/* root passes the bits, but executes only a file someone may
		 * execute (the kernel's generic_permission()) */
		if ((want & GPUOS_EXT4_MAY_EXEC) && in->type != GPUOS_EXT4_FT_DIR &&
		    !(mode & MODE_ANY_EXEC))
			return -EACCES;
		return 0;
	}
	if (cred->uid == in->uid) {
		bits = mode >> MODE_OWNER_SHIFT;
	} else {
		/* the table is the service's, but a count past groups[] must not read past it */
		n = GPUOS_MIN(cred->ngroups, GPUOS_RT_CLIENT_GROUPS);
		member = cred->gid == in->gid;
		for (i = 0; i < n && !member; i++)
			member = cred->groups[i] == in->gid;
		bits = member ? mode >> MODE_GROUP_SHIFT : mode;
	}
	/* only the first class that matches counts: an owner without r is
	 * refused even when the others have it (POSIX) */
	return (want & ~bits & MODE_RWX) ? -EACCES : 0;
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

/* The end of the path component that starts at pos in fs->path (see
 * gpuos_ext4_lookup_as()); *last: only slashes follow it; *slash: a
 * trailing slash follows it, so it must be a directory. */
static GPUOS_HD uint32_t path_component(const struct gpuos_ext4 *fs, uint32_t pos, int *last,
					int *slash)
{
	const uint32_t END = GPUOS_EXT4_PATH_BUF;
	uint32_t e, q;

	for (e = pos; e < END && fs->path[e] != '/'; e++)
		;
	for (q = e; q < END && fs->path[q] == '/'; q++)
		;
	*last = q == END;
	*slash = *last && e < END;
	return e;
}

/* Expand the symlink link in place: its target goes into fs->path right
 * before *pos, which moves left to its start; one more of *links. An
 * absolute target restarts cur at root, a relative one resolves in cur. */
static GPUOS_HD int follow_symlink(struct gpuos_ext4 *fs, uint32_t root,
				   const struct gpuos_ext4_inode *link, struct gpuos_ext4_inode *cur,
				   uint32_t *pos, uint32_t *links)
{
	uint32_t sz, got, k, i;
	char *t;
	int r;

	if (++*links > GPUOS_EXT4_MAX_SYMLINKS)
		return fail(fs, -ELOOP, "too many levels of symbolic links", *links);
	if (link->flags & GPUOS_EXT4_IFL_ENCRYPT)
		return fail(fs, -EOPNOTSUPP, "unsupported: encrypted symlink", link->ino);
	if (link->size > GPUOS_EXT4_SYMLINK_MAX || link->size > fs->block_size)
		return fail(fs, -EINVAL, "corrupt symlink: target too long", link->size);
	sz = (uint32_t)link->size;
	if (sz == 0)
		return fail(fs, -ENOENT, "empty symlink", link->ino);
	if (sz > *pos)
		return fail(fs, -ENAMETOOLONG, "path too long once symlinks are expanded", sz);
	t = fs->path + *pos - sz;
	r = gpuos_ext4_read(fs, link, 0, sz, t, &got);
	if (r)
		return r;
	if (got != sz)
		return fail(fs, -EINVAL, "corrupt symlink: short target", got);
	/* a NUL ends the target, as in the kernel's walk */
	k = (uint32_t)gpuos_str_nlen(t, sz);
	if (k == 0)
		return fail(fs, -ENOENT, "empty symlink", link->ino);
	for (i = k; i-- > 0;)
		t[i + (sz - k)] = t[i];
	*pos -= k;
	if (fs->path[*pos] == '/')
		return gpuos_ext4_iget(fs, root, cur);
	return 0;
}

/*
 * The path left to resolve lives right-aligned in fs->path: [pos, END). A
 * component is consumed by moving pos right; a symlink's target is read into
 * the bytes just before pos (the rest of the path, if any, starts with '/'),
 * so "target/rest" is again [pos, END) without moving the rest.
 */
GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_lookup_as(struct gpuos_ext4 *fs, uint32_t root, uint32_t dir,
				  const char *path, uint32_t flags,
				  const struct gpuos_rt_client *cred,
				  struct gpuos_ext4_inode *out)
{
	const uint32_t END = GPUOS_EXT4_PATH_BUF;
	struct gpuos_ext4_inode *cur = &fs->lookup_cur;
	uint32_t len, pos, links = 0, iter, e, nino;
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
		e = path_component(fs, pos, &last, &slash);
		name = fs->path + pos;
		len = e - pos;
		if (len > GPUOS_EXT4_NAME_MAX)
			return fail(fs, -ENAMETOOLONG, "file name too long", len);
		if (cur->type != GPUOS_EXT4_FT_DIR)
			return fail(fs, -ENOTDIR, "not a directory", cur->ino);
		/* every component, "." and ".." too, is a search of cur (the
		 * kernel's may_lookup()); after a symlink cur is the link's
		 * directory or root, so those are checked here as well */
		if (gpuos_ext4_permission(cur, cred, GPUOS_EXT4_MAY_EXEC))
			return fail(fs, -EACCES, "permission denied", cur->ino);

		/* "." is cur, and ".." of the root is the root */
		if ((len == 1 && name[0] == '.') ||
		    (len == 2 && name[0] == '.' && name[1] == '.' && cur->ino == root)) {
			pos = e;
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
			r = follow_symlink(fs, root, out, cur, &pos, &links);
			if (r)
				return r;
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

GPUOS_HD int gpuos_ext4_lookup_at(struct gpuos_ext4 *fs, uint32_t root, uint32_t dir,
				  const char *path, uint32_t flags,
				  struct gpuos_ext4_inode *out)
{
	return gpuos_ext4_lookup_as(fs, root, dir, path, flags, 0, out);
}

/* Private to this file (the GPU image is one translation unit). */
#undef INLINE_POS_DOT
#undef INLINE_POS_DOTDOT
#undef INLINE_DOTDOT_SIZE
#undef MODE_OWNER_SHIFT
#undef MODE_GROUP_SHIFT
#undef MODE_RWX
#undef MODE_ANY_EXEC
