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

#include "gpuos/port.h"
#include "meta_io.h"

GPUOS_EXTERN_C_BEGIN

/* ---- constants -------------------------------------------------------------- */

#define GPUOS_GGUF_MAGIC             0x46554747u /* "GGUF" as a little-endian u32 */
#define GPUOS_GGUF_DEFAULT_ALIGNMENT 32u         /* GGUF_DEFAULT_ALIGNMENT in ggml */
#define GPUOS_GGUF_MAX_DIMS          4u          /* GGML_MAX_DIMS */
#define GPUOS_GGUF_NAME_MAX          128u        /* tensor name buffer, NUL included */
#define GPUOS_GGUF_KEY_MAX           65535u      /* longest key (gguf.md: < 2^16 bytes) */
#define GPUOS_GGUF_STR_MAX           65536u      /* bytes of one string kept in the arena */
#define GPUOS_GGUF_ARR_ITEMS         16u         /* array items kept in the arena */
#define GPUOS_GGUF_MAX_DEPTH         8u          /* array-of-array nesting levels */
#define GPUOS_GGUF_MAX_TENSORS       (1u << 24)
#define GPUOS_GGUF_MAX_KV            (1u << 20)
#define GPUOS_GGUF_MAX_LAYER         (1u << 20)  /* blk.N with N above this is no layer */
#define GPUOS_GGUF_WINDOW            4096u

/* KV value types (gguf.md, enum gguf_type). */
#define GPUOS_GGUF_TYPE_UINT8   0u
#define GPUOS_GGUF_TYPE_INT8    1u
#define GPUOS_GGUF_TYPE_UINT16  2u
#define GPUOS_GGUF_TYPE_INT16   3u
#define GPUOS_GGUF_TYPE_UINT32  4u
#define GPUOS_GGUF_TYPE_INT32   5u
#define GPUOS_GGUF_TYPE_FLOAT32 6u
#define GPUOS_GGUF_TYPE_BOOL    7u
#define GPUOS_GGUF_TYPE_STRING  8u
#define GPUOS_GGUF_TYPE_ARRAY   9u
#define GPUOS_GGUF_TYPE_UINT64  10u
#define GPUOS_GGUF_TYPE_INT64   11u
#define GPUOS_GGUF_TYPE_FLOAT64 12u
#define GPUOS_GGUF_TYPE_COUNT   13u

/* ggml tensor types (ggml.h, enum ggml_type). 4, 5, 31-33 and 36-38 were
 * removed upstream and are refused, as llama.cpp refuses them. */
#define GPUOS_GGML_TYPE_F32     0u
#define GPUOS_GGML_TYPE_F16     1u
#define GPUOS_GGML_TYPE_Q4_0    2u
#define GPUOS_GGML_TYPE_Q4_1    3u
#define GPUOS_GGML_TYPE_Q5_0    6u
#define GPUOS_GGML_TYPE_Q5_1    7u
#define GPUOS_GGML_TYPE_Q8_0    8u
#define GPUOS_GGML_TYPE_Q8_1    9u
#define GPUOS_GGML_TYPE_Q2_K    10u
#define GPUOS_GGML_TYPE_Q3_K    11u
#define GPUOS_GGML_TYPE_Q4_K    12u
#define GPUOS_GGML_TYPE_Q5_K    13u
#define GPUOS_GGML_TYPE_Q6_K    14u
#define GPUOS_GGML_TYPE_Q8_K    15u
#define GPUOS_GGML_TYPE_IQ2_XXS 16u
#define GPUOS_GGML_TYPE_IQ2_XS  17u
#define GPUOS_GGML_TYPE_IQ3_XXS 18u
#define GPUOS_GGML_TYPE_IQ1_S   19u
#define GPUOS_GGML_TYPE_IQ4_NL  20u
#define GPUOS_GGML_TYPE_IQ3_S   21u
#define GPUOS_GGML_TYPE_IQ2_S   22u
#define GPUOS_GGML_TYPE_IQ4_XS  23u
#define GPUOS_GGML_TYPE_I8      24u
#define GPUOS_GGML_TYPE_I16     25u
#define GPUOS_GGML_TYPE_I32     26u
#define GPUOS_GGML_TYPE_I64     27u
#define GPUOS_GGML_TYPE_F64     28u
#define GPUOS_GGML_TYPE_IQ1_M   29u
#define GPUOS_GGML_TYPE_BF16    30u
#define GPUOS_GGML_TYPE_TQ1_0   34u
#define GPUOS_GGML_TYPE_TQ2_0   35u
#define GPUOS_GGML_TYPE_MXFP4   39u
#define GPUOS_GGML_TYPE_NVFP4   40u
#define GPUOS_GGML_TYPE_Q1_0    41u
#define GPUOS_GGML_TYPE_Q2_0    42u
#define GPUOS_GGML_TYPE_COUNT   43u

/* struct gpuos_gguf_kv.flags */
#define GPUOS_GGUF_KV_TRUNCATED (1u << 0) /* a string of this value kept shorter than on disk */

/* struct gpuos_gguf.flags */
#define GPUOS_GGUF_F_TRUNCATED     (1u << 0) /* some KV has GPUOS_GGUF_KV_TRUNCATED */
#define GPUOS_GGUF_F_PACKED        (1u << 1) /* tensors lie back to back in file order, each
					    * padded to the alignment (what llama.cpp demands) */
#define GPUOS_GGUF_F_DATA_PAST_EOF (1u << 2) /* data_offset > file size: valid only with no
					    * tensor bytes (vocab-only files are not padded) */
#define GPUOS_GGUF_F_INDEXED       (1u << 3) /* mem.index holds a hash index of the names */

/* ---- results ------------------------------------------------------------------ */

/* A scalar, widened: unsigned ints and bool (0/1) in u64, signed ints
 * sign-extended in i64, float32 and float64 in f64 (float32 converts exactly). */
union gpuos_gguf_value {
	uint64_t u64;
	int64_t i64;
	double f64;
};
static_assert(sizeof(union gpuos_gguf_value) == 8, "gguf value size");

/* A string in the arena. */
struct gpuos_gguf_str {
	uint32_t off;          /* 0x00 arena offset of the bytes, NUL-terminated there */
	uint32_t len;          /* 0x04 bytes kept: min(full_len, GPUOS_GGUF_STR_MAX) */
	uint64_t full_len;     /* 0x08 length on disk */
};
static_assert(sizeof(struct gpuos_gguf_str) == 16, "gguf str size");

/* An array: its first n_items items in the arena at items_off, as
 *   elem_type scalar: union gpuos_gguf_value[n_items]
 *   elem_type string: struct gpuos_gguf_str[n_items]
 *   elem_type array:  struct gpuos_gguf_arr[n_items] (nested arrays)
 * Items are kept for the KV's own array and for the arrays nested directly in
 * it; deeper arrays keep elem_type and count only (n_items = 0). */
struct gpuos_gguf_arr {
	uint32_t elem_type;    /* 0x00 GPUOS_GGUF_TYPE_* */
	uint32_t n_items;      /* 0x04 items kept, <= GPUOS_GGUF_ARR_ITEMS */
	uint64_t count;        /* 0x08 elements on disk */
	uint32_t items_off;    /* 0x10 arena offset, 8-byte aligned */
	uint32_t rsvd14;       /* 0x14 */
};
static_assert(sizeof(struct gpuos_gguf_arr) == 24, "gguf arr size");

struct gpuos_gguf_kv {
	uint32_t key_off;      /* 0x00 arena offset of the key, NUL-terminated there */
	uint32_t key_len;      /* 0x04 */
	uint32_t type;         /* 0x08 GPUOS_GGUF_TYPE_* */
	uint32_t flags;        /* 0x0c GPUOS_GGUF_KV_* */
	union gpuos_gguf_value val;  /* 0x10 scalar types */
	struct gpuos_gguf_str str;   /* 0x18 type STRING */
	struct gpuos_gguf_arr arr;   /* 0x28 type ARRAY */
	uint64_t val_off;      /* 0x40 file offset of the encoded value (after the type) */
	uint64_t val_bytes;    /* 0x48 its encoded size: a tool may read a whole array from here */
	uint32_t hash;         /* 0x50 FNV-1a of the key */
	uint32_t rsvd54;       /* 0x54 */
};
static_assert(sizeof(struct gpuos_gguf_kv) == 88, "gguf kv size");
static_assert(offsetof(struct gpuos_gguf_kv, arr) == 0x28, "gguf kv arr");
static_assert(offsetof(struct gpuos_gguf_kv, val_off) == 0x40, "gguf kv val_off");

struct gpuos_gguf_tensor {
	/* what a loader needs first */
	uint64_t abs_off;      /* 0x00 data_offset + rel_off: byte offset in the file */
	uint64_t size;         /* 0x08 bytes: ne[0]/block * type_size * ne[1]*ne[2]*ne[3] */
	uint64_t rel_off;      /* 0x10 offset as stored, relative to data_offset */
	uint64_t ne[GPUOS_GGUF_MAX_DIMS]; /* 0x18 dims; 1 past n_dims */
	uint32_t type;         /* 0x38 GPUOS_GGML_TYPE_* */
	uint32_t n_dims;       /* 0x3c 0..4 */
	int32_t layer;         /* 0x40 N for names "blk.N.*", else -1 */
	uint32_t name_len;     /* 0x44 */
	uint32_t hash;         /* 0x48 FNV-1a of the name */
	uint32_t rsvd4c;       /* 0x4c */
	char name[GPUOS_GGUF_NAME_MAX]; /* 0x50 NUL-terminated */
};
static_assert(sizeof(struct gpuos_gguf_tensor) == 208, "gguf tensor size");
static_assert(offsetof(struct gpuos_gguf_tensor, name) == 0x50, "gguf tensor name");

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
 * read for a whole layer. Returns 0 or -ENOENT. */
GPUOS_HD int gpuos_gguf_layer_span(const struct gpuos_gguf *g, uint32_t n, uint64_t *off,
				   uint64_t *end);

/* "uint8" .. "float64", or NULL for an unknown type. */
GPUOS_HD const char *gpuos_gguf_type_name(uint32_t type);

/* "F32", "Q4_K", ... (the names gguf-py uses), or NULL for an unknown type. */
GPUOS_HD const char *gpuos_ggml_type_name(uint32_t type);

/* Elements per block and bytes per block of a ggml type; -EINVAL if unknown. */
GPUOS_HD int gpuos_ggml_type_size(uint32_t type, uint32_t *block, uint32_t *bytes);

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
