/* SPDX-License-Identifier: MIT */
/*
 * gpuos/gguf.h - GGUF model tables as the runtime hands them out (ggml
 * docs/gguf.md): value and tensor types, the KV and tensor records of a
 * parsed header, and the GGUF_INFO export (gpuos/abi.h) that carries them to
 * clients. The parser itself is runtime/model/gguf/gguf.h.
 */
#ifndef GPUOS_GGUF_H
#define GPUOS_GGUF_H

#include "gpuos/port.h"

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
#define GPUOS_GGUF_MAX_SHARDS        32u         /* gguf-split shards of one model */

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

/* Element types of safetensors that ggml has no id for. A model's table
 * (struct gpuos_gguf_tensor.type) holds ggml ids and these; they never come
 * from a GGUF file (its parser refuses every id that is not ggml's). The
 * safetensors dtypes with a ggml id take it: F64, F32, F16, BF16, I64, I32,
 * I16, I8. */
#define GPUOS_MODEL_TYPE_BOOL    64u
#define GPUOS_MODEL_TYPE_U8      65u
#define GPUOS_MODEL_TYPE_U16     66u
#define GPUOS_MODEL_TYPE_U32     67u
#define GPUOS_MODEL_TYPE_U64     68u
#define GPUOS_MODEL_TYPE_F8_E4M3 69u  /* OCP FP8 E4M3 ("fn": no infinities, torch.float8_e4m3fn) */
#define GPUOS_MODEL_TYPE_F8_E5M2 70u  /* OCP FP8 E5M2 (torch.float8_e5m2) */
#define GPUOS_MODEL_TYPE_FIRST   64u
#define GPUOS_MODEL_TYPE_END     71u

/* struct gpuos_gguf_kv.flags */
#define GPUOS_GGUF_KV_TRUNCATED (1u << 0) /* a string of this value kept shorter than on disk */

/* struct gpuos_gguf.flags */
#define GPUOS_GGUF_F_TRUNCATED     (1u << 0) /* some KV has GPUOS_GGUF_KV_TRUNCATED */
#define GPUOS_GGUF_F_PACKED        (1u << 1) /* tensors lie back to back in file order, each
					    * padded to the alignment (what llama.cpp demands) */
#define GPUOS_GGUF_F_DATA_PAST_EOF (1u << 2) /* data_offset > file size: valid only with no
					    * tensor bytes (vocab-only files are not padded) */
#define GPUOS_GGUF_F_INDEXED       (1u << 3) /* mem.index holds a hash index of the names */
#define GPUOS_GGUF_F_SPLIT         (1u << 4) /* a gguf-split model: the tables of all its shards */
#define GPUOS_GGUF_F_SHARD         (1u << 5) /* one gguf-split shard alone (GPUOS_GGUF_SHARD) */
#define GPUOS_GGUF_F_SAFETENSORS   (1u << 6) /* the tables come from safetensors, not GGUF: version 0,
					    * alignment 8, data_offset 8 + N (the first file's), KVs
					    * the "__metadata__" strings (the first file's), ne[] the
					    * shape reversed (ne[0] the last, fastest dimension) */
#define GPUOS_GGUF_F_ST_INDEX      (1u << 7) /* opened through a model.safetensors.index.json: the
					    * tables of every shard its weight_map names (with
					    * GPUOS_GGUF_F_SPLIT; shard k is the k-th file in the order
					    * the weight_map first names it) */

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
	uint32_t shard;        /* 0x4c the gguf-split shard holding it, 0-based (abs_off is in that
				* shard's file); 0 in an unsplit model */
	char name[GPUOS_GGUF_NAME_MAX]; /* 0x50 NUL-terminated */
};
static_assert(sizeof(struct gpuos_gguf_tensor) == 208, "gguf tensor size");
static_assert(offsetof(struct gpuos_gguf_tensor, name) == 0x50, "gguf tensor name");

/*
 * GGUF_INFO's answer (gpuos/abi.h): this header, then, when dst is large
 * enough (result = the bytes needed), the tensor records, the KV records and
 * the arena they point into (keys, strings, array items), at the byte
 * offsets given here from the start of the header. Arena offsets in the
 * records are relative to arena_off.
 */
struct gpuos_gguf_export {
	uint32_t version;      /* 0x00 2 or 3 */
	uint32_t alignment;    /* 0x04 */
	uint64_t tensor_count; /* 0x08 */
	uint64_t kv_count;     /* 0x10 */
	uint64_t data_offset;  /* 0x18 from the start of the GGUF */
	uint64_t file_size;    /* 0x20 */
	uint64_t data_end;     /* 0x28 */
	uint32_t n_layers;     /* 0x30 */
	uint32_t flags;        /* 0x34 GPUOS_GGUF_F_* */
	uint64_t tensors_off;  /* 0x38 struct gpuos_gguf_tensor[tensor_count] */
	uint64_t kv_off;       /* 0x40 struct gpuos_gguf_kv[kv_count] */
	uint64_t arena_off;    /* 0x48 */
	uint64_t arena_len;    /* 0x50 */
	uint64_t total;        /* 0x58 bytes of the whole export */
	uint32_t complete;     /* 0x60 1: the tables follow; 0: dst held the header only */
	uint32_t shards;       /* 0x64 files the tables come from: split.count with GPUOS_GGUF_F_SPLIT,
				* else 1 */
	uint32_t split_no;     /* 0x68 GPUOS_GGUF_F_SHARD: this shard's split.no (0-based) */
	uint32_t split_count;  /* 0x6c its split.count (GPUOS_GGUF_F_SPLIT, _SHARD), else 0 */
	uint32_t rsvd70[4];    /* 0x70 .. 0x7f */
};
static_assert(sizeof(struct gpuos_gguf_export) == 128, "gguf export header");

/*
 * gguf-split's file names (llama.cpp llama_split_path): shard k of n
 * (1-based) of a model with prefix P is "P-0000k-of-0000n.gguf", both
 * numbers in five digits. The export's header, file_size, data_offset and
 * data_end are the first shard's; each tensor's abs_off is in its shard.
 *
 * gpuos_gguf_split_parse: the length of P when path (len bytes) is named so,
 * with *k and *n; -1 when it is not.
 */
GPUOS_INLINE GPUOS_HD int gpuos_gguf_split_parse(const char *path, uint32_t len, uint32_t *k, uint32_t *n)
{
	const char *pat = "-#####-of-#####.gguf"; /* # a digit */
	const uint32_t plen = 20u;
	uint32_t i, a = 0, b = 0;
	if (len <= plen)
		return -1;
	for (i = 0; i < plen; i++) {
		char c = path[len - plen + i];
		if (pat[i] != '#' && c != pat[i])
			return -1;
		if (pat[i] == '#' && (c < '0' || c > '9'))
			return -1;
		if (pat[i] == '#' && i < 7u)
			a = a * 10u + (uint32_t)(c - '0');
		else if (pat[i] == '#')
			b = b * 10u + (uint32_t)(c - '0');
	}
	*k = a;
	*n = b;
	return (int)(len - plen);
}

/* Shard k of n's name from prefix P (plen bytes) into out (cap bytes, NUL
 * included): its length, or 0 when it does not fit or k, n are out of range. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_gguf_split_name(char *out, uint32_t cap, const char *prefix, uint32_t plen,
						  uint32_t k, uint32_t n)
{
	const char *tail = "-#####-of-#####.gguf";
	uint32_t i, len = plen + 20u, d = 0;
	if (len + 1u > cap || k < 1u || k > n || n > 99999u)
		return 0;
	for (i = 0; i < plen; i++)
		out[i] = prefix[i];
	for (i = 0; i < 20u; i++) {
		char c = tail[i];
		if (c == '#') {
			uint32_t v = d < 5u ? k : n, p = 10000u;
			uint32_t pos = d % 5u;
			while (pos--)
				p /= 10u;
			c = (char)('0' + (v / p) % 10u);
			d++;
		}
		out[plen + i] = c;
	}
	out[len] = 0;
	return len;
}

/* "uint8" .. "float64", or NULL for an unknown type. */
GPUOS_HD const char *gpuos_gguf_type_name(uint32_t type);

/* "F32", "Q4_K", ... (the names gguf-py uses), or NULL for an unknown type.
 * Inline: apps name types too (apps/llama.c's refusals). */
GPUOS_INLINE GPUOS_HD const char *gpuos_ggml_type_name(uint32_t type)
{
	switch (type) {
	case GPUOS_GGML_TYPE_F32: return "F32";
	case GPUOS_GGML_TYPE_F16: return "F16";
	case GPUOS_GGML_TYPE_Q4_0: return "Q4_0";
	case GPUOS_GGML_TYPE_Q4_1: return "Q4_1";
	case GPUOS_GGML_TYPE_Q5_0: return "Q5_0";
	case GPUOS_GGML_TYPE_Q5_1: return "Q5_1";
	case GPUOS_GGML_TYPE_Q8_0: return "Q8_0";
	case GPUOS_GGML_TYPE_Q8_1: return "Q8_1";
	case GPUOS_GGML_TYPE_Q2_K: return "Q2_K";
	case GPUOS_GGML_TYPE_Q3_K: return "Q3_K";
	case GPUOS_GGML_TYPE_Q4_K: return "Q4_K";
	case GPUOS_GGML_TYPE_Q5_K: return "Q5_K";
	case GPUOS_GGML_TYPE_Q6_K: return "Q6_K";
	case GPUOS_GGML_TYPE_Q8_K: return "Q8_K";
	case GPUOS_GGML_TYPE_IQ2_XXS: return "IQ2_XXS";
	case GPUOS_GGML_TYPE_IQ2_XS: return "IQ2_XS";
	case GPUOS_GGML_TYPE_IQ3_XXS: return "IQ3_XXS";
	case GPUOS_GGML_TYPE_IQ1_S: return "IQ1_S";
	case GPUOS_GGML_TYPE_IQ4_NL: return "IQ4_NL";
	case GPUOS_GGML_TYPE_IQ3_S: return "IQ3_S";
	case GPUOS_GGML_TYPE_IQ2_S: return "IQ2_S";
	case GPUOS_GGML_TYPE_IQ4_XS: return "IQ4_XS";
	case GPUOS_GGML_TYPE_I8: return "I8";
	case GPUOS_GGML_TYPE_I16: return "I16";
	case GPUOS_GGML_TYPE_I32: return "I32";
	case GPUOS_GGML_TYPE_I64: return "I64";
	case GPUOS_GGML_TYPE_F64: return "F64";
	case GPUOS_GGML_TYPE_IQ1_M: return "IQ1_M";
	case GPUOS_GGML_TYPE_BF16: return "BF16";
	case GPUOS_GGML_TYPE_TQ1_0: return "TQ1_0";
	case GPUOS_GGML_TYPE_TQ2_0: return "TQ2_0";
	case GPUOS_GGML_TYPE_MXFP4: return "MXFP4";
	case GPUOS_GGML_TYPE_NVFP4: return "NVFP4";
	case GPUOS_GGML_TYPE_Q1_0: return "Q1_0";
	case GPUOS_GGML_TYPE_Q2_0: return "Q2_0";
	default: return NULL;
	}
}

/* Elements per block and bytes per block of a ggml type; -EINVAL if unknown. */
GPUOS_HD int gpuos_ggml_type_size(uint32_t type, uint32_t *block, uint32_t *bytes);

/* A model table's type (a ggml id or GPUOS_MODEL_TYPE_*): its name ("Q4_K",
 * "BF16", "F8_E4M3", "BOOL", ...) or NULL, and its block geometry as
 * gpuos_ggml_type_size. */
GPUOS_INLINE GPUOS_HD const char *gpuos_model_type_name(uint32_t type)
{
	switch (type) {
	case GPUOS_MODEL_TYPE_BOOL: return "BOOL";
	case GPUOS_MODEL_TYPE_U8: return "U8";
	case GPUOS_MODEL_TYPE_U16: return "U16";
	case GPUOS_MODEL_TYPE_U32: return "U32";
	case GPUOS_MODEL_TYPE_U64: return "U64";
	case GPUOS_MODEL_TYPE_F8_E4M3: return "F8_E4M3";
	case GPUOS_MODEL_TYPE_F8_E5M2: return "F8_E5M2";
	default: return gpuos_ggml_type_name(type);
	}
}
GPUOS_INLINE GPUOS_HD int gpuos_model_type_size(uint32_t type, uint32_t *block, uint32_t *bytes)
{
	switch (type) {
	case GPUOS_MODEL_TYPE_BOOL: case GPUOS_MODEL_TYPE_U8:
	case GPUOS_MODEL_TYPE_F8_E4M3: case GPUOS_MODEL_TYPE_F8_E5M2:
		*block = 1;
		*bytes = 1;
		return 0;
	case GPUOS_MODEL_TYPE_U16: *block = 1; *bytes = 2; return 0;
	case GPUOS_MODEL_TYPE_U32: *block = 1; *bytes = 4; return 0;
	case GPUOS_MODEL_TYPE_U64: *block = 1; *bytes = 8; return 0;
	default: return gpuos_ggml_type_size(type, block, bytes);
	}
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_GGUF_H */
