/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/handles.c - the handle and extent-map table (runtime/files.h,
 * docs/design.md "Files and models"): a handle number to its open handle,
 * and a file offset to where it lies on the device through the handle's
 * extent map. The service warps read it for every READ and GGUF_LOAD
 * (intake checks the handle, plan maps each piece), the metadata warp for
 * its own reads and lookups; the metadata warp alone writes it, at OPEN and
 * CLOSE (runtime/files_fs.c). The table and the extent pool lie in the files
 * region, whose layout is runtime/files_internal.h's. Any lane; reads only.
 * Part of runtime/engine.c's translation unit.
 */
#include "../files_internal.h"

static_assert(sizeof(struct gpuos_fs_extent) == GPUOS_RT_EXTENT_BYTES, "extent size (rt.h)");

GPUOS_HD const struct rt_handle *gpuos_rt_handle_at(const struct gpuos_rt_desc *d, uint32_t index)
{
	if (!d->meta || index == 0 || index > GPUOS_RT_HANDLES)
		return 0;
	return &files_of(d)->h[index - 1u];
}

GPUOS_NOINLINE GPUOS_HD const struct rt_handle *gpuos_rt_handle(const struct gpuos_rt_desc *d, uint32_t h, uint32_t kind_mask)
{
	const struct rt_handle *hd = gpuos_rt_handle_at(d, gpuos_rt_handle_index(h));
	if (!hd || hd->kind == H_FREE || hd->gen != (h >> 8) || !((1u << hd->kind) & kind_mask))
		return 0;
	return hd;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_rt_files_map(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				uint64_t off, uint64_t *dev, uint64_t *run, int *zero, uint32_t *hint)
{
	const struct gpuos_fs_extent *ext;
	uint32_t bb = hd->block_bits, n = hd->next, first = hd->ext_first, i = *hint, lo, hi;
	uint64_t lb = off >> bb, left = hd->size - off;

	if (off >= hd->size)
		return -EINVAL;
	if (hd->map == H_MAP_RAW) {
		*dev = hd->base + off;
		*run = left;
		*zero = 0;
		return 0;
	}
	/* Read once: a handle closed and reopened under a READ may pair one
	 * map's start with another's length; never read past the pool. */
	if (first > map_extents(d) || n > map_extents(d) - first)
		return -EINVAL;
	ext = pool_ext(d, first);
	if (!(i < n && ext[i].lblk <= lb && lb - ext[i].lblk < ext[i].len)) {
		/* The last extent starting at or before lb (extents are sorted: checked at open). */
		lo = 0;
		hi = n;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2u;
			if (ext[mid].lblk <= lb)
				lo = mid + 1u;
			else
				hi = mid;
		}
		i = lo; /* first extent after lb; lo - 1 may cover it */
		if (lo > 0 && lb - ext[lo - 1u].lblk < ext[lo - 1u].len)
			i = lo - 1u;
	}
	*hint = i;
	if (i < n && ext[i].lblk <= lb) {
		uint64_t start = ext[i].lblk << bb, end = (ext[i].lblk + ext[i].len) << bb;
		*dev = hd->base + (ext[i].pblk << bb) + (off - start);
		*run = GPUOS_MIN(end - off, left);
		*zero = (ext[i].flags & GPUOS_FS_EXT_UNWRITTEN) != 0;
		return 0;
	}
	/* A hole up to the next extent (or the end of the file). */
	*dev = 0;
	*run = i < n ? GPUOS_MIN((ext[i].lblk << bb) - off, left) : left;
	*zero = 1;
	return 0;
}
