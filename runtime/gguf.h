/* SPDX-License-Identifier: MIT */
/*
 * runtime/gguf.h - GGUF v2/v3 model headers, parsed where the runtime runs
 * (a GPU lane or a host thread).
 *
 * Format (ggml docs/gguf.md; all little-endian; v2 and v3 differ only in that
 * v3 may be big-endian, which this parser refuses):
 *
 *   magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count x  { string key | u32 value_type | value }
 *   tensor_count x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment (default 32) | tensor data
 *
 *   string = u64 length | bytes (no NUL);  array = u32 elem_type | u64 count | values
 *
 * The parser sees only a gpuos_meta_io whose byte 0 is the GGUF's byte 0: a
 * file inside ext4 (the io walks its extent map) or a GGUF written raw at a
 * byte offset of the device (the io adds the offset) look the same. It reads
 * through a 4 KiB window in the parser state, so a header costs a handful of
 * reads even when every read is an NVMe command.
 *
 * Every length, count and offset on disk is hostile: each is bounded by the
 * io's size (the file's size, or for a raw GGUF the device's size less its
 * offset, so that tensors are checked against what can be read) and by the
 * limits below, all
 * arithmetic is checked, arrays nest at most GPUOS_GGUF_MAX_DEPTH deep and
 * are walked with an explicit stack (no recursion).
 *
 * Memory: none of its own. The caller hands in the tensor table, the KV table,
 * an arena for keys, strings and array items, and (optionally) a hash index
 * over tensor names, in struct gpuos_gguf_mem; any of them may be NULL with
 * capacity 0 to mean "not wanted". Results live in struct gpuos_gguf and in
 * that memory, so on the GPU they stay in device memory and can be cached.
 */
#ifndef GPUOS_RUNTIME_GGUF_H
#define GPUOS_RUNTIME_GGUF_H

#include "gpuos/gguf.h"
#include "meta_io.h"

GPUOS_EXTERN_C_BEGIN

/* Constants, value types and the result records: gpuos/gguf.h. */

/* Caller-provided memory. NULL with capacity 0: not wanted (the parse still
 * validates everything, except that duplicate keys and tensor names are
 * found only among the entries kept). A hash index, when given, makes
 * gpuos_gguf_find O(1) and the duplicate-name check O(n); index_cap must be
 * a power of two of at least 2 * min(tensor_count, tensor_cap). */
struct gpuos_gguf_mem {
	struct gpuos_gguf_tensor *tensors;
	struct gpuos_gguf_kv *kv;
	uint8_t *arena;
	uint32_t *index;
	uint32_t tensor_cap;
	uint32_t kv_cap;
	uint32_t arena_cap;
	uint32_t index_cap;
};

struct gpuos_gguf {
	struct gpuos_gguf_mem mem;  /* set by the caller before gpuos_gguf_parse */
	/* results; after -ENOSPC the counts and arena_used say what is needed */
	uint32_t version;           /* 2 or 3 */
	uint32_t alignment;         /* general.alignment or 32 */
	uint64_t tensor_count;      /* from the header */
	uint64_t kv_count;          /* from the header */
	uint64_t tensor_info_off;   /* where the tensor infos start */
	uint64_t tensor_info_end;   /* where they end (before padding) */
	uint64_t data_offset;       /* align_up(tensor_info_end, alignment) */
	uint64_t file_size;         /* io->size */
	uint64_t data_end;          /* max abs_off + size over the tensors (data_offset if none) */
	uint32_t n_tensors;         /* entries filled in mem.tensors */
	uint32_t n_kv;              /* entries filled in mem.kv */
	uint32_t n_layers;          /* 1 + the highest N of the blk.N.* tensors, 0 if none */
	uint32_t flags;             /* GPUOS_GGUF_F_* */
	uint64_t arena_used;        /* bytes of the arena used (or needed) */
};

/* Parser state and error report. Large (the read window): keep it in global
 * memory on the GPU, not on a lane's stack. */
struct gpuos_gguf_parser {
	/* after a failed parse: what and where */
	const char *why;            /* static string, e.g. "offset past end of file" */
	uint64_t err_off;           /* file offset being read when it failed */
	uint64_t bad;               /* the offending number (type, version, count), else 0 */
	int64_t err_kv;             /* index of the KV being parsed, or -1 */
	int64_t err_tensor;         /* index of the tensor being parsed, or -1 */
	char subject[GPUOS_GGUF_NAME_MAX]; /* its key or name (cut, NUL-terminated), or "" */
	/* private */
	const struct gpuos_meta_io *io;
	uint64_t pos;
	uint64_t win_off;
	uint32_t win_len;
	uint32_t depth;
	uint32_t nospace;           /* a table, the arena or the index ran out */
	struct {
		uint64_t count;
		uint64_t done;
		uint32_t elem_type;
		uint32_t items_off;  /* arena offset of the kept items */
		uint16_t keep;       /* the first items of this level are kept (or counted) */
		uint16_t stored;     /* ... and there is arena for them at items_off */
		uint32_t level;
	} stack[GPUOS_GGUF_MAX_DEPTH];
	uint64_t max_end;           /* largest rel_off + size so far */
	uint64_t max_tensor;        /* the index of the tensor that has it */
	char max_name[GPUOS_GGUF_NAME_MAX]; /* the tensor that has it */
	struct gpuos_gguf_kv kv_scratch;    /* a KV past mem.kv_cap, parsed to measure */
	struct gpuos_gguf_str str_scratch;  /* an item that did not fit the arena */
	struct gpuos_gguf_arr arr_scratch;
	uint8_t win[GPUOS_GGUF_WINDOW];
};

/* ---- API ------------------------------------------------------------------------ */

/*
 * Parse the GGUF that io covers from byte 0. g->mem must be set; everything
 * else in g is overwritten. p is scratch plus the error report.
 * Context: one lane or one host thread; blocks in io reads.
 * Returns 0, or
 *   -EINVAL           corrupt (p->why says what; also: not a GGUF, bad magic)
 *   -EPROTONOSUPPORT  GGUF version 1, unknown version, big-endian GGUF
 *   -EOVERFLOW        a size or offset does not fit in 64 bits
 *   -ENAMETOOLONG     a tensor name >= GPUOS_GGUF_NAME_MAX or a key > GPUOS_GGUF_KEY_MAX
 *   -ENOSPC           a table, the arena or the index is too small; the whole file
 *                     was still validated and g's counts and arena_used say what
 *                     is needed (arena_used counts only when mem.kv is non-NULL:
 *                     to measure, pass mem.kv with kv_cap 0 and no arena)
 *   -EIO              the io failed
 */
GPUOS_HD int gpuos_gguf_parse(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			      const struct gpuos_meta_io *io);

/*
 * Build the hash index again over mem.tensors[0, n_tensors): after a caller
 * appended tensors parsed from other files (a split model's shards).
 * Returns 0, -ENOSPC (no index, or index_cap is not a power of two of at
 * least 2 * n_tensors), -EEXIST (*dup: a tensor whose name an earlier one
 * has). Either error leaves g without an index (finds walk the table).
 */
GPUOS_HD int gpuos_gguf_reindex(struct gpuos_gguf *g, uint32_t *dup);

/* Index of the tensor called name, or -ENOENT. */
GPUOS_HD int gpuos_gguf_find(const struct gpuos_gguf *g, const char *name);

/* Index of the KV whose key is key, or -ENOENT. */
GPUOS_HD int gpuos_gguf_find_kv(const struct gpuos_gguf *g, const char *key);

/*
 * Layer groups: the tensors named "blk.N.*", in file order.
 * gpuos_gguf_layer writes up to cap indices into idx and the layer's tensor
 * count into *count. Returns 0, -ENOENT (no tensor in layer n), -ENOSPC (more
 * than cap: the first cap are written).
 */
GPUOS_HD int gpuos_gguf_layer(const struct gpuos_gguf *g, uint32_t n, uint32_t *idx,
			      uint32_t cap, uint32_t *count);

/* The next tensor of layer n after index `after` (-1 to start), or -ENOENT. */
GPUOS_HD int gpuos_gguf_layer_next(const struct gpuos_gguf *g, uint32_t n, int after);

/* Byte span [*off, *end) in the file covering every tensor of layer n: one
 * read for a whole layer. One file's tables only (not a split model's,
 * whose offsets are in several files). Returns 0 or -ENOENT. */
GPUOS_HD int gpuos_gguf_layer_span(const struct gpuos_gguf *g, uint32_t n, uint64_t *off,
				   uint64_t *end);

/* Arena pointers for a result. */
GPUOS_INLINE GPUOS_HD const char *gpuos_gguf_kv_key(const struct gpuos_gguf *g,
						     const struct gpuos_gguf_kv *kv)
{
	return (const char *)(g->mem.arena + kv->key_off);
}

GPUOS_INLINE GPUOS_HD const char *gpuos_gguf_str_ptr(const struct gpuos_gguf *g,
						      const struct gpuos_gguf_str *s)
{
	return (const char *)(g->mem.arena + s->off);
}

GPUOS_INLINE GPUOS_HD const void *gpuos_gguf_items(const struct gpuos_gguf *g,
						    const struct gpuos_gguf_arr *a)
{
	return (const void *)(g->mem.arena + a->items_off);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_GGUF_H */
