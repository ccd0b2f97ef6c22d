/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4_map.c - where an inode's data lives (ext4.h): extent trees,
 * ext2/ext3 block maps, and the calls that map and read through them
 * (gpuos_ext4_bmap, gpuos_ext4_extents, gpuos_ext4_read).
 */
#include "ext4_internal.h"

/* Work bounds of one gpuos_ext4_extents() call (it resumes from *next). */
#define EXTENTS_MAX_STEPS 4096u
/* Block pointers read at once to measure a run (4 KiB): a run found in an
 * indirect block is at most this long, so a fragmented map with 64 KiB
 * blocks costs O(n) reads, not O(n^2). */
#define PTR_CHUNK 1024u

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
	return ext4_dev_read(fs, (blk << fs->block_bits) + 4ull * idx, 4u * cnt, scratch(fs));
}

/* How many of the cnt (>= 1) block pointers at p continue the first: the
 * blocks that follow it on disk, or more zeros (a hole) after a zero. */
static GPUOS_HD uint32_t ptr_run(const uint8_t *p, uint32_t cnt)
{
	uint64_t first = gpuos_le32(p);
	uint32_t k;

	for (k = 1; k < cnt; k++) {
		uint64_t v = gpuos_le32(p + 4u * k);

		if (first ? v != first + k : v != 0)
			break;
	}
	return k;
}

/* The answer for a run of k blocks from pointer first: a hole where it is
 * zero, else blocks that must lie inside the file system. */
static GPUOS_HD int bmap_leaf(struct gpuos_ext4 *fs, uint64_t first, uint32_t k, uint64_t *pblk,
			      uint64_t *run, uint32_t *flags)
{
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

/* Which top pointer of i_block maps lblk (>= 12), n pointers a block: the
 * number of indirect levels under it (0 past what a block map addresses),
 * *blk its value and *rel lblk relative to its first block. */
static GPUOS_HD uint32_t bmap_top(const struct gpuos_ext4_inode *inode, uint64_t lblk,
				  uint64_t n, uint64_t *rel, uint64_t *blk)
{
	*rel = lblk - 12;
	if (*rel < n) {
		*blk = gpuos_le32(inode->i_block + 4u * 12);
		return 1;
	}
	if ((*rel -= n) < n * n) {
		*blk = gpuos_le32(inode->i_block + 4u * 13);
		return 2;
	}
	if ((*rel -= n * n) < n * n * n) {
		*blk = gpuos_le32(inode->i_block + 4u * 14);
		return 3;
	}
	return 0;
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
	uint64_t rel = 0, span, blk = 0;
	uint32_t levels, lv, idx, cnt, k;

	*pblk = 0;
	*flags = 0;
	if (lblk < 12) {
		/* direct: measure within i_block[lblk..11] */
		k = ptr_run(inode->i_block + 4u * lblk, (uint32_t)(12 - lblk));
		return bmap_leaf(fs, gpuos_le32(inode->i_block + 4u * lblk), k, pblk, run, flags);
	}
	levels = bmap_top(inode, lblk, n, &rel, &blk);
	if (levels == 0) {
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
			r = ext4_dev_read(fs, (blk << fs->block_bits) + 4ull * idx, 4, w);
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
		return bmap_leaf(fs, gpuos_le32(fs->blk), ptr_run(fs->blk, cnt), pblk, run, flags);
	}
	return fail(fs, -EINVAL, "corrupt block map", lblk); /* not reached */
}

/* ---- mapping and reading --------------------------------------------------------- */

GPUOS_HD int ext4_bmap64(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
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
	r = ext4_bmap64(fs, inode, lblk, pblk, &r64, flags);
	if (r)
		return r;
	*run = r64 > UINT32_MAX ? UINT32_MAX : (uint32_t)r64;
	return 0;
}

/* One step of gpuos_ext4_extents() in an extent tree: the extents of the
 * leaf that maps *cur, from *cur on, into out[*cnt..cap), then *cur to the
 * next leaf. */
static GPUOS_HD int extents_leaf(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				 uint64_t *cur, struct gpuos_fs_extent *out, uint32_t cap,
				 uint32_t *cnt)
{
	struct ext4_ext_leaf leaf;
	uint32_t i;
	int r;

	r = ext_find_leaf(fs, inode, *cur, &leaf);
	if (r)
		return r;
	for (i = 0; i < leaf.n && *cnt < cap; i++) {
		const uint8_t *e = leaf.node + sizeof(struct ext4_extent_header) + 12u * i;
		uint64_t b = EE32(e, ee_block);
		uint32_t len = EE16(e, ee_len), fl = 0;
		uint64_t pb = EE32(e, ee_start_lo) | (uint64_t)EE16(e, ee_start_hi) << 32;

		if (len > EXT4_EXT_INIT_MAX_LEN) {
			len -= EXT4_EXT_INIT_MAX_LEN;
			fl = GPUOS_EXT4_BMAP_UNWRITTEN;
		}
		if (b + len <= *cur)
			continue;
		if (b < *cur) { /* starts before cur: list from cur */
			pb += *cur - b;
			len -= (uint32_t)(*cur - b);
			b = *cur;
		}
		out[*cnt].lblk = b;
		out[*cnt].pblk = pb;
		out[*cnt].len = len;
		out[*cnt].flags = fl;
		(*cnt)++;
		*cur = b + len;
	}
	if (*cnt == cap)
		return 0;
	/* the next leaf starts at leaf.hi (> cur: ranges strictly increase) */
	if (leaf.hi > *cur)
		*cur = leaf.hi;
	return 0;
}

/* One step of gpuos_ext4_extents() in a block map: the run that maps *cur,
 * merged into out[*cnt - 1] where it continues it, then *cur past it. */
static GPUOS_HD int extents_bmap(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				 uint64_t *cur, struct gpuos_fs_extent *out, uint32_t *cnt)
{
	uint64_t pb, run;
	uint32_t fl, c = *cnt;
	int r;

	r = ext4_bmap64(fs, inode, *cur, &pb, &run, &fl);
	if (r)
		return r;
	if (!(fl & GPUOS_EXT4_BMAP_HOLE)) {
		if (c > 0 && out[c - 1].lblk + out[c - 1].len == *cur &&
		    out[c - 1].pblk + out[c - 1].len == pb &&
		    out[c - 1].len + run <= UINT32_MAX) {
			out[c - 1].len += (uint32_t)run; /* contiguous: merge */
		} else {
			out[c].lblk = *cur;
			out[c].pblk = pb;
			out[c].len = (uint32_t)run; /* runs stay in one indirect block */
			out[c].flags = 0;
			*cnt = c + 1;
		}
	}
	*cur += run;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_extents(struct gpuos_ext4 *fs, const struct gpuos_ext4_inode *inode,
				uint64_t start, struct gpuos_fs_extent *out, uint32_t cap,
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

	/* one leaf (extent tree) or one run (block map) a step */
	for (steps = 0; steps < EXTENTS_MAX_STEPS && cur < LBLK_LIMIT && cnt < cap; steps++) {
		if (inode->map == GPUOS_EXT4_MAP_EXTENTS)
			r = extents_leaf(fs, inode, &cur, out, cap, &cnt);
		else
			r = extents_bmap(fs, inode, &cur, out, &cnt);
		if (r)
			return r;
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
		/* bytes [0, 60) in i_block, then the system.data value (iget holds
		 * the size to both: an inode made otherwise is refused, not zeroed) */
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

			r = ext4_dev_read(fs, inode->disk_off + inode->inline_off + (pos - in_iblock),
				     (uint32_t)k, d + (pos - off));
			if (r)
				return r;
			pos += k;
		}
		if (pos < end)
			return fail(fs, -EINVAL, "corrupt inode: inline data shorter than the file's size",
				    inode->size);
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

		r = ext4_bmap64(fs, inode, lblk, &pblk, &run, &fl);
		if (r)
			return r;
		k = (run << fs->block_bits) - in;
		if (k > end - pos)
			k = end - pos;
		if (fl & (GPUOS_EXT4_BMAP_HOLE | GPUOS_EXT4_BMAP_UNWRITTEN)) {
			gpuos_mem_set(d + (pos - off), 0, (size_t)k);
		} else {
			r = ext4_dev_read(fs, (pblk << fs->block_bits) + in, (uint32_t)k, d + (pos - off));
			if (r)
				return r;
		}
		pos += k;
	}
	*got = (uint32_t)(end - off);
	return 0;
}

/* Private to this file (the GPU image is one translation unit). */
#undef EXTENTS_MAX_STEPS
#undef PTR_CHUNK
