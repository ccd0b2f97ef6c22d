/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/safetensors/safetensors.h - safetensors headers, parsed where
 * the runtime runs (a GPU lane or a host thread). The runtime reaches it
 * through runtime/model/model.h alone.
 *
 * Format (huggingface/safetensors, README "Format" and safetensors/src/tensor.rs):
 *
 *   u64 N (little-endian) | N bytes: a UTF-8 JSON object | the data area
 *
 *   { "__metadata__": { "key": "value", ... },              optional; strings only
 *     "TENSOR": { "dtype": "F16", "shape": [d0, d1, ...],
 *                 "data_offsets": [begin, end] }, ... }
 *
 * begin and end are byte offsets into the data area, which starts at file
 * offset 8 + N. Writers pad the JSON with spaces so that 8 + N is a multiple
 * of 8; the padding is JSON whitespace and needs no special case. Tensors are
 * stored row-major, little-endian.
 *
 * What this parser accepts (the reference library's rules, made stricter
 * where it is lenient; each refusal has an errno and a reason, below):
 *  - N <= GPUOS_ST_HEADER_MAX (100,000,000: the reference's MAX_HEADER_SIZE,
 *    decimal, not MiB), N >= 2, and 8 + N <= the file size;
 *  - strict JSON (RFC 8259) inside that schema: whitespace anywhere a token
 *    may be, no trailing commas, no comments, no leading zeros, strings with
 *    the escapes \" \\ \/ \b \f \n \r \t \uXXXX (surrogate pairs combined,
 *    lone surrogates refused), no raw control characters, valid UTF-8
 *    (RFC 3629: no overlong forms, no encoded surrogates, nothing above
 *    U+10FFFF), and no NUL character (\u0000) anywhere (names are C strings);
 *  - the schema bounds the nesting: the top object, a tensor's object, its
 *    two arrays; anything deeper or of another type is refused where it
 *    starts, so no value is ever skipped and there is no recursion or stack;
 *  - "__metadata__" (compared after decoding escapes, as the reference does)
 *    at most once, an object of string values or null; its keys must differ
 *    (checked when a meta table is given: see struct gpuos_st);
 *  - a tensor entry has exactly the keys dtype, shape and data_offsets, in
 *    any order, each once (the reference ignores unknown keys; refused here);
 *  - dtype is one of the GPUOS_ST_DTYPE_* names (the reference's byte-sized
 *    set up to 0.4); the newer sub-byte and exotic names (F4, F6_E2M3,
 *    F6_E3M2, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, C64) are refused as not
 *    supported, anything else as unknown, with the name in the error;
 *  - shape: at most GPUOS_ST_MAX_DIMS non-negative integers ([] is a
 *    scalar, a 0 dimension an empty tensor); data_offsets: exactly two
 *    non-negative integers with begin <= end; integers must fit in 64 bits;
 *  - end - begin == dtype size x product(shape), the product folded left to
 *    right with overflow checks (as the reference does: [2^40, 2^40, 0]
 *    overflows before the 0 is reached);
 *  - tensor names are unique after decoding escapes, at most
 *    GPUOS_ST_NAME_MAX bytes decoded (metadata keys too; values at most
 *    GPUOS_ST_VALUE_MAX);
 *  - sorted by (begin, end), the tensors cover the data area exactly: the
 *    first begins at 0, each begins where the one before ended (no overlap,
 *    no hole), the last ends at file size - 8 - N (no trailing bytes); no
 *    tensors means an empty data area.
 *
 * Memory: none of its own. The caller reads the header into a buffer (the
 * first 8 bytes give its size: gpuos_st_header_len) and hands in the tensor
 * table and, optionally, a metadata table. Results refer to the header by
 * offset (names and values are spans of its raw, still escaped, JSON), so the
 * header buffer must outlive them; struct gpuos_st keeps a pointer to it for
 * the lookups. Time: one pass over the header plus heapsorts of the tables,
 * O(N + t log t); no allocation, no recursion, every loop bounded by N.
 */
#ifndef GPUOS_RUNTIME_MODEL_SAFETENSORS_H
#define GPUOS_RUNTIME_MODEL_SAFETENSORS_H

#include <errno.h>

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

/* ---- constants -------------------------------------------------------------- */

#define GPUOS_ST_HEADER_MAX   100000000ull /* MAX_HEADER_SIZE of safetensors/src/tensor.rs */
#define GPUOS_ST_MAX_DIMS     8u           /* shape entries; more are refused */
#define GPUOS_ST_NAME_MAX     1024u        /* decoded bytes of a tensor name or metadata key */
#define GPUOS_ST_VALUE_MAX    (16u << 20)  /* decoded bytes of a metadata value */
#define GPUOS_ST_MAX_LAYER    (1u << 20)   /* a layer number above this is no layer */
#define GPUOS_ST_ERR_NAME     128u         /* struct gpuos_st_error.name, NUL included */
#define GPUOS_ST_ERR_TOKEN    32u          /* struct gpuos_st_error.token, NUL included */
#define GPUOS_ST_INDEX_DEPTH  32u          /* nesting of the values an index skips */
#define GPUOS_ST_INDEX_FILE_MAX 255u       /* decoded bytes of a shard's file name (NAME_MAX) */

/* dtypes (0 is none). Element sizes: gpuos_st_dtype_size. */
#define GPUOS_ST_DTYPE_BOOL     1u
#define GPUOS_ST_DTYPE_U8       2u
#define GPUOS_ST_DTYPE_I8       3u
#define GPUOS_ST_DTYPE_F8_E5M2  4u
#define GPUOS_ST_DTYPE_F8_E4M3  5u
#define GPUOS_ST_DTYPE_I16      6u
#define GPUOS_ST_DTYPE_U16      7u
#define GPUOS_ST_DTYPE_F16      8u
#define GPUOS_ST_DTYPE_BF16     9u
#define GPUOS_ST_DTYPE_I32      10u
#define GPUOS_ST_DTYPE_U32      11u
#define GPUOS_ST_DTYPE_F32      12u
#define GPUOS_ST_DTYPE_F64      13u
#define GPUOS_ST_DTYPE_I64      14u
#define GPUOS_ST_DTYPE_U64      15u
#define GPUOS_ST_DTYPE_COUNT    16u

/* struct gpuos_st_tensor.flags */
#define GPUOS_ST_T_ESCAPED      1u   /* the raw name holds escapes: decode before use */

/* struct gpuos_st_meta.flags */
#define GPUOS_ST_M_KEY_ESCAPED  1u   /* the raw key holds escapes */
#define GPUOS_ST_M_VAL_ESCAPED  2u   /* the raw value holds escapes */

/* struct gpuos_st.flags */
#define GPUOS_ST_F_METADATA     1u   /* the header has a "__metadata__" object */

/* ---- records ------------------------------------------------------------------ */

/* One tensor. Spans (name_off, name_raw) are offsets into the header buffer,
 * the bytes between the quotes, escapes still in. */
struct gpuos_st_tensor {
	uint64_t begin;                      /* 0x00 data_offsets[0], relative to the data area */
	uint64_t end;                        /* 0x08 data_offsets[1] */
	uint64_t abs_begin;                  /* 0x10 file offset: 8 + N + begin */
	uint64_t abs_end;                    /* 0x18 file offset: 8 + N + end */
	uint64_t shape[GPUOS_ST_MAX_DIMS];   /* 0x20 the first ndim entries; the rest 1 */
	uint32_t name_off;                   /* 0x60 */
	uint32_t name_raw;                   /* 0x64 raw bytes between the quotes */
	uint32_t name_len;                   /* 0x68 decoded bytes (no NUL inside) */
	uint32_t hash;                       /* 0x6c FNV-1a of the decoded name */
	uint32_t index;                      /* 0x70 position in the header (0 = first entry) */
	int32_t layer;                       /* 0x74 gpuos_st_layer_of(name), or -1 */
	uint8_t dtype;                       /* 0x78 GPUOS_ST_DTYPE_* */
	uint8_t ndim;                        /* 0x79 0 (scalar) .. GPUOS_ST_MAX_DIMS */
	uint8_t flags;                       /* 0x7a GPUOS_ST_T_* */
	uint8_t rsvd7b;                      /* 0x7b */
	uint32_t rsvd7c;                     /* 0x7c */
};
static_assert(sizeof(struct gpuos_st_tensor) == 128, "gpuos_st_tensor size");
static_assert(offsetof(struct gpuos_st_tensor, shape) == 0x20, "gpuos_st_tensor shape");
static_assert(offsetof(struct gpuos_st_tensor, name_off) == 0x60, "gpuos_st_tensor name_off");
static_assert(offsetof(struct gpuos_st_tensor, dtype) == 0x78, "gpuos_st_tensor dtype");

/* One "__metadata__" entry: raw spans into the header, as for names. */
struct gpuos_st_meta {
	uint32_t key_off;                    /* 0x00 */
	uint32_t key_raw;                    /* 0x04 */
	uint32_t key_len;                    /* 0x08 decoded */
	uint32_t key_hash;                   /* 0x0c FNV-1a of the decoded key */
	uint32_t val_off;                    /* 0x10 */
	uint32_t val_raw;                    /* 0x14 */
	uint32_t val_len;                    /* 0x18 decoded */
	uint32_t flags;                      /* 0x1c GPUOS_ST_M_* */
};
static_assert(sizeof(struct gpuos_st_meta) == 32, "gpuos_st_meta size");

/*
 * Tables and results. The caller sets tensors/tensor_cap and meta/meta_cap
 * (NULL with cap 0: not wanted) and gpuos_st_parse fills the rest.
 *
 * The checks across tensors (unique names, exact coverage of the data area)
 * need every tensor in the table: with fewer than n_tensors entries the parse
 * still validates the JSON and every entry on its own, then returns -ENOSPC
 * with n_tensors (and n_meta) saying what a retry needs. Without a meta table
 * the metadata is validated and counted but not kept, and duplicate metadata
 * keys are not looked for (they need the table).
 *
 * After a successful parse, tensors[0, n_tensors) are sorted by file offset
 * (begin, then end, then header order: index), so that consecutive entries
 * are consecutive bytes of the file, and meta[0, n_meta) is in header order.
 */
struct gpuos_st {
	/* set by the caller */
	struct gpuos_st_tensor *tensors;
	struct gpuos_st_meta *meta;
	uint32_t tensor_cap;
	uint32_t meta_cap;
	/* results */
	const uint8_t *hdr;                  /* the header parsed (the caller's buffer) */
	uint64_t header_len;                 /* N */
	uint64_t data_off;                   /* 8 + N: file offset of the data area */
	uint64_t data_len;                   /* file size - 8 - N */
	uint64_t file_size;
	uint32_t n_tensors;                  /* tensors in the header */
	uint32_t n_meta;                     /* "__metadata__" entries */
	uint32_t n_layers;                   /* 1 + the highest layer number, 0 if none */
	uint32_t flags;                      /* GPUOS_ST_F_* */
	/* the parser's scratch, here rather than on a GPU lane's small stack */
	uint64_t shape_[GPUOS_ST_MAX_DIMS];
	uint64_t offsets_[2];
	char peek_[40];
};

/* What went wrong and where. `why` is a static string ("has an unknown
 * dtype"); the rest narrows it down. */
struct gpuos_st_error {
	const char *why;                     /* NULL after success */
	uint64_t off;                        /* file offset of the byte that failed (8 + header offset) */
	uint64_t bad;                        /* the offending number (a length, offset or count), else 0 */
	int64_t tensor;                      /* header-order index of the tensor concerned, or -1 */
	char name[GPUOS_ST_ERR_NAME];        /* its name, decoded and cut, or "" */
	char token[GPUOS_ST_ERR_TOKEN];      /* the offending token (a dtype, a key), decoded and cut, or "" */
};

/*
 * A sharded checkpoint's index, model.safetensors.index.json as transformers'
 * save_pretrained and huggingface_hub write it:
 *
 *   { "metadata": { "total_size": 16060522496 },
 *     "weight_map": { "TENSOR": "model-00001-of-00004.safetensors", ... } }
 *
 * weight_map is required, once, an object of string values; its keys are
 * tensor names (their uniqueness, and that each names a tensor of its file,
 * are for the caller to check against the files' headers), its values plain
 * file names beside the index (no '/', not "." or ".."). Every other
 * top-level entry ("metadata" and whatever newer writers add) is validated as
 * JSON and skipped. Strings follow the header's rules (UTF-8, escapes, no
 * NUL). files[] lists the distinct file names in the order weight_map first
 * names them; entries[] are in weight_map order. Spans point into json.
 */
struct gpuos_st_index_entry {
	uint32_t name_off;                   /* 0x00 the tensor name's raw span */
	uint32_t name_raw;                   /* 0x04 */
	uint32_t name_len;                   /* 0x08 decoded bytes */
	uint32_t name_hash;                  /* 0x0c FNV-1a of the decoded name */
	uint32_t file;                       /* 0x10 index into files[] */
	uint32_t flags;                      /* 0x14 GPUOS_ST_T_ESCAPED */
};
static_assert(sizeof(struct gpuos_st_index_entry) == 24, "gpuos_st_index_entry size");

struct gpuos_st_index_file {
	uint32_t off;                        /* 0x00 the file name's raw span */
	uint32_t raw;                        /* 0x04 */
	uint32_t len;                        /* 0x08 decoded bytes */
	uint32_t hash;                       /* 0x0c FNV-1a of the decoded name */
	uint32_t esc;                        /* 0x10 the raw span holds escapes */
};

struct gpuos_st_index {
	/* set by the caller */
	struct gpuos_st_index_entry *entries;
	struct gpuos_st_index_file *files;
	uint32_t entry_cap;
	uint32_t file_cap;
	/* results */
	const uint8_t *json;
	uint64_t len;
	uint32_t n_entries;                  /* weight_map entries */
	uint32_t n_files;                    /* distinct files they name */
};

/* ---- API ----------------------------------------------------------------------- */

/*
 * The header length from the file's first 8 bytes (first8 may be anything
 * when file_size < 8). Context: any; no state.
 * Returns 0 with *n, or
 *   -EINVAL  the file is shorter than 8 bytes, N < 2, or 8 + N > file_size
 *   -E2BIG   N > GPUOS_ST_HEADER_MAX
 */
GPUOS_HD int gpuos_st_header_len(const uint8_t first8[8], uint64_t file_size, uint64_t *n,
				 struct gpuos_st_error *err);

/*
 * Parse the header hdr[0, n) of a file of file_size bytes (hdr is what
 * follows the 8 length bytes). st's tables must be set (see struct
 * gpuos_st); everything else in st is overwritten.
 * Context: one lane or one host thread; reads only hdr.
 * Returns 0, or
 *   -EINVAL           corrupt: bad JSON, wrong schema, unknown dtype, bad
 *                     offsets or sizes, duplicate names, holes or overlaps
 *                     (err->why says which)
 *   -E2BIG            n > GPUOS_ST_HEADER_MAX
 *   -EOVERFLOW        an integer, a shape product or a byte count past 64 bits
 *   -ENAMETOOLONG     a name or key > GPUOS_ST_NAME_MAX, a value > GPUOS_ST_VALUE_MAX
 *   -EPROTONOSUPPORT  a dtype of the format that this parser does not support
 *   -ENOSPC           a table is too small; everything but the cross-tensor
 *                     checks was validated, n_tensors and n_meta say what is needed
 */
GPUOS_HD int gpuos_st_parse(struct gpuos_st *st, const uint8_t *hdr, uint64_t n, uint64_t file_size,
			    struct gpuos_st_error *err);

/* Index (into st->tensors) of the tensor whose decoded name is name, or
 * -ENOENT. Linear, with the hash compared first. */
GPUOS_HD int gpuos_st_find(const struct gpuos_st *st, const char *name);

/* Index (into st->meta) of the metadata entry whose decoded key is key, or -ENOENT. */
GPUOS_HD int gpuos_st_meta_find(const struct gpuos_st *st, const char *key);

/*
 * Decode the JSON string body hdr[off, off + raw) into dst (cap bytes,
 * cap > 0), NUL-terminated. Returns the decoded length, -ENOSPC when it does
 * not fit (dst holds the first cap - 1 bytes), or -EINVAL (not a valid
 * string body: only for spans that no parse produced).
 */
GPUOS_HD int gpuos_st_str_decode(const uint8_t *hdr, uint32_t off, uint32_t raw, char *dst, uint32_t cap);

/* Compare the decoded string body hdr[off, off + raw) with the C string s,
 * byte by byte as unsigned: <0, 0, >0. No buffer needed. */
GPUOS_HD int gpuos_st_str_cmp(const uint8_t *hdr, uint32_t off, uint32_t raw, const char *s);

/* A tensor's decoded name into dst; as gpuos_st_str_decode. */
GPUOS_HD int gpuos_st_name(const struct gpuos_st *st, const struct gpuos_st_tensor *t, char *dst,
			   uint32_t cap);

/*
 * The layer number of a tensor name (len bytes, decoded), or -1. A name is in
 * layer N when it starts with one of these prefixes, then N in decimal
 * (no sign, no leading zero, at most GPUOS_ST_MAX_LAYER), then a '.':
 *   model.layers.N.                  Llama, Mistral, Qwen, Gemma, Phi-3, ...
 *   model.decoder.layers.N.          OPT, BART/Whisper decoders
 *   model.language_model.layers.N.   multimodal wrappers (Gemma 3, Llava, newer transformers)
 *   language_model.model.layers.N.   multimodal wrappers (older transformers)
 *   transformer.h.N.                 GPT-2, GPT-J, Falcon, BLOOM, StarCoder
 *   transformer.blocks.N.            MPT
 *   gpt_neox.layers.N.               GPT-NeoX, Pythia
 *   layers.N.                        original Llama/Mistral checkpoints
 *   blk.N.                           GGUF tensor names
 */
GPUOS_HD int32_t gpuos_st_layer_of(const char *name, size_t len);

/* The next tensor of layer n after index `after` (-1 to start), in table
 * (file) order, or -ENOENT. */
GPUOS_HD int gpuos_st_layer_next(const struct gpuos_st *st, uint32_t n, int after);

/* File span [*off, *end) covering every tensor of layer n: one read for a
 * whole layer (it may include other tensors' bytes when the writer
 * interleaved layers). Returns 0 or -ENOENT. */
GPUOS_HD int gpuos_st_layer_span(const struct gpuos_st *st, uint32_t n, uint64_t *off, uint64_t *end);

/*
 * Parse an index json[0, n) (the whole file; see struct gpuos_st_index).
 * Context: one lane or one host thread. err->off is an offset in the file.
 * Returns 0, or -EINVAL (bad JSON, no or empty weight_map, a value that is
 * not a plain file name), -E2BIG (n over GPUOS_ST_HEADER_MAX),
 * -ENAMETOOLONG, or -ENOSPC (a table too small: n_entries and n_files say
 * what is needed).
 */
GPUOS_HD int gpuos_st_index_parse(struct gpuos_st_index *ix, const uint8_t *json, uint64_t n,
				  struct gpuos_st_error *err);

/* File k's or entry e's decoded name into dst; as gpuos_st_str_decode, or
 * -EINVAL for an index out of range. */
GPUOS_HD int gpuos_st_index_file_name(const struct gpuos_st_index *ix, uint32_t k, char *dst, uint32_t cap);
GPUOS_HD int gpuos_st_index_entry_name(const struct gpuos_st_index *ix, uint32_t e, char *dst, uint32_t cap);

/* "F16" for GPUOS_ST_DTYPE_F16, ...; NULL for an unknown id. */
GPUOS_HD const char *gpuos_st_dtype_name(uint32_t dtype);

/* Bytes per element, 0 for an unknown id. */
GPUOS_HD uint32_t gpuos_st_dtype_size(uint32_t dtype);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_MODEL_SAFETENSORS_H */
