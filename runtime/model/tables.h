/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/tables.h - the model tables: what an open model is to the
 * runtime, whatever format it came from. A tensor table, a KV table, an
 * arena for keys, strings and array items, and a hash index over tensor
 * names, with the lookups over them. The records are the ABI's
 * (gpuos/gguf.h: GGUF's records became every format's, so they keep GGUF's
 * names); a format fills them (runtime/model/model.h, the formats below
 * it) and everything above reads them without knowing which one did.
 *
 * The lookups are defined in gguf/gguf.c, beside the GGUF parser, which
 * fills the tables (and checks names with the same index) as it parses:
 * that file alone builds a tool or a fuzz target that parses GGUF.
 *
 * Memory: none of its own; the caller's, in struct gpuos_gguf_mem.
 * Context: any (a GPU lane or a host thread); the lookups only read.
 */
#ifndef GPUOS_RUNTIME_MODEL_TABLES_H
#define GPUOS_RUNTIME_MODEL_TABLES_H

#include "gpuos/gguf.h"

GPUOS_EXTERN_C_BEGIN

/* Caller-provided memory. NULL with capacity 0: not wanted (a GGUF parse still
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
	uint32_t version;           /* GGUF's 2 or 3; 0 for safetensors (GPUOS_GGUF_F_SAFETENSORS) */
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
	uint32_t n_layers;          /* 1 + the highest layer of a tensor (blk.N.* in GGUF), 0 if none */
	uint32_t flags;             /* GPUOS_GGUF_F_* */
	uint64_t arena_used;        /* bytes of the arena used (or needed) */
};

/* ---- lookups ---------------------------------------------------------------------- */

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
 * Layer groups: the tensors of layer N (struct gpuos_gguf_tensor.layer: GGUF's
 * "blk.N.*", a format's own prefixes), in table order.
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

#endif /* GPUOS_RUNTIME_MODEL_TABLES_H */
