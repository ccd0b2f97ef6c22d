/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/gguf/gguf.c - GGUF v2/v3 parser (see gguf.h for the format
 * and the rules), and the lookups of the model tables (../tables.h).
 *
 * One pass over the header: KVs, then tensor infos. Everything is read
 * through a 4 KiB window (p->win) that is refilled from the io at 512-byte
 * aligned offsets; long strings and arrays that are not kept are skipped
 * without reading them. Nested arrays are walked with p->stack.
 */
#include "gguf.h"
#include "../../util.h"

/* Smallest encodings: a KV is an empty key, a type and a one-byte value; a
 * tensor info is an empty name, n_dims 0, a type and an offset. */
#define GGUF_MIN_KV_BYTES     (8u + 4u + 1u)
#define GGUF_MIN_TENSOR_BYTES (8u + 4u + 4u + 8u)
#define GGUF_HEADER_BYTES     (4u + 4u + 8u + 8u)

/* ---- type tables (switches, not arrays: a file-scope array is not visible in
 * nvcc's device pass) ---------------------------------------------------------- */

GPUOS_HD const char *gpuos_gguf_type_name(uint32_t type)
{
	switch (type) {
	case GPUOS_GGUF_TYPE_UINT8: return "uint8";
	case GPUOS_GGUF_TYPE_INT8: return "int8";
	case GPUOS_GGUF_TYPE_UINT16: return "uint16";
	case GPUOS_GGUF_TYPE_INT16: return "int16";
	case GPUOS_GGUF_TYPE_UINT32: return "uint32";
	case GPUOS_GGUF_TYPE_INT32: return "int32";
	case GPUOS_GGUF_TYPE_FLOAT32: return "float32";
	case GPUOS_GGUF_TYPE_BOOL: return "bool";
	case GPUOS_GGUF_TYPE_STRING: return "string";
	case GPUOS_GGUF_TYPE_ARRAY: return "array";
	case GPUOS_GGUF_TYPE_UINT64: return "uint64";
	case GPUOS_GGUF_TYPE_INT64: return "int64";
	case GPUOS_GGUF_TYPE_FLOAT64: return "float64";
	default: return NULL;
	}
}

/* Encoded size of a fixed-size value type, 0 for string and array. */
GPUOS_INLINE GPUOS_HD uint32_t scalar_size(uint32_t type)
{
	switch (type) {
	case GPUOS_GGUF_TYPE_UINT8:
	case GPUOS_GGUF_TYPE_INT8:
	case GPUOS_GGUF_TYPE_BOOL:
		return 1;
	case GPUOS_GGUF_TYPE_UINT16:
	case GPUOS_GGUF_TYPE_INT16:
		return 2;
	case GPUOS_GGUF_TYPE_UINT32:
	case GPUOS_GGUF_TYPE_INT32:
	case GPUOS_GGUF_TYPE_FLOAT32:
		return 4;
	case GPUOS_GGUF_TYPE_UINT64:
	case GPUOS_GGUF_TYPE_INT64:
	case GPUOS_GGUF_TYPE_FLOAT64:
		return 8;
	default:
		return 0;
	}
}

/* Smallest encoding of one element: strings carry a u64 length, arrays a
 * u32 type and a u64 count. */
GPUOS_INLINE GPUOS_HD uint32_t min_encoded_size(uint32_t type)
{
	if (type == GPUOS_GGUF_TYPE_STRING)
		return 8;
	if (type == GPUOS_GGUF_TYPE_ARRAY)
		return 12;
	return scalar_size(type);
}

/* Bytes one kept array item takes in the arena. */
GPUOS_INLINE GPUOS_HD uint32_t item_size(uint32_t type)
{
	if (type == GPUOS_GGUF_TYPE_STRING)
		return (uint32_t)sizeof(struct gpuos_gguf_str);
	if (type == GPUOS_GGUF_TYPE_ARRAY)
		return (uint32_t)sizeof(struct gpuos_gguf_arr);
	return (uint32_t)sizeof(union gpuos_gguf_value);
}

/* Block geometry from ggml's type traits (ggml.c) and block structs
 * (ggml-common.h). Q8_1 is 36 bytes there (gguf-py's table says 40). */
GPUOS_HD int gpuos_ggml_type_size(uint32_t type, uint32_t *block, uint32_t *bytes)
{
	uint32_t b, s;

	switch (type) {
	case GPUOS_GGML_TYPE_F32: b = 1; s = 4; break;
	case GPUOS_GGML_TYPE_F16: b = 1; s = 2; break;
	case GPUOS_GGML_TYPE_Q4_0: b = 32; s = 2 + 16; break;
	case GPUOS_GGML_TYPE_Q4_1: b = 32; s = 2 + 2 + 16; break;
	case GPUOS_GGML_TYPE_Q5_0: b = 32; s = 2 + 4 + 16; break;
	case GPUOS_GGML_TYPE_Q5_1: b = 32; s = 2 + 2 + 4 + 16; break;
	case GPUOS_GGML_TYPE_Q8_0: b = 32; s = 2 + 32; break;
	case GPUOS_GGML_TYPE_Q8_1: b = 32; s = 2 + 2 + 32; break;
	case GPUOS_GGML_TYPE_Q2_K: b = 256; s = 2 + 2 + 256 / 16 + 256 / 4; break;       /* 84 */
	case GPUOS_GGML_TYPE_Q3_K: b = 256; s = 2 + 256 / 4 + 256 / 8 + 12; break;       /* 110 */
	case GPUOS_GGML_TYPE_Q4_K: b = 256; s = 2 + 2 + 12 + 256 / 2; break;             /* 144 */
	case GPUOS_GGML_TYPE_Q5_K: b = 256; s = 2 + 2 + 12 + 256 / 8 + 256 / 2; break;   /* 176 */
	case GPUOS_GGML_TYPE_Q6_K: b = 256; s = 2 + 256 / 2 + 256 / 4 + 256 / 16; break; /* 210 */
	case GPUOS_GGML_TYPE_Q8_K: b = 256; s = 4 + 256 + 2 * (256 / 16); break;          /* 292 */
	case GPUOS_GGML_TYPE_IQ2_XXS: b = 256; s = 2 + 256 / 4; break;                   /* 66 */
	case GPUOS_GGML_TYPE_IQ2_XS: b = 256; s = 2 + 256 / 4 + 256 / 32; break;         /* 74 */
	case GPUOS_GGML_TYPE_IQ3_XXS: b = 256; s = 2 + 3 * 256 / 8; break;               /* 98 */
	case GPUOS_GGML_TYPE_IQ1_S: b = 256; s = 2 + 256 / 8 + 256 / 16; break;          /* 50 */
	case GPUOS_GGML_TYPE_IQ4_NL: b = 32; s = 2 + 16; break;
	case GPUOS_GGML_TYPE_IQ3_S: b = 256; s = 2 + 256 / 4 + 256 / 32 + 256 / 8 + 4; break; /* 110 */
	case GPUOS_GGML_TYPE_IQ2_S: b = 256; s = 2 + 256 / 4 + 256 / 32 + 256 / 32; break;    /* 82 */
	case GPUOS_GGML_TYPE_IQ4_XS: b = 256; s = 2 + 2 + 256 / 64 + 256 / 2; break;          /* 136 */
	case GPUOS_GGML_TYPE_I8: b = 1; s = 1; break;
	case GPUOS_GGML_TYPE_I16: b = 1; s = 2; break;
	case GPUOS_GGML_TYPE_I32: b = 1; s = 4; break;
	case GPUOS_GGML_TYPE_I64: b = 1; s = 8; break;
	case GPUOS_GGML_TYPE_F64: b = 1; s = 8; break;
	case GPUOS_GGML_TYPE_IQ1_M: b = 256; s = 256 / 8 + 256 / 16 + 256 / 32; break;        /* 56 */
	case GPUOS_GGML_TYPE_BF16: b = 1; s = 2; break;
	case GPUOS_GGML_TYPE_TQ1_0: b = 256; s = 2 + 4 * 13; break;                            /* 54 */
	case GPUOS_GGML_TYPE_TQ2_0: b = 256; s = 2 + 64; break;                                /* 66 */
	case GPUOS_GGML_TYPE_MXFP4: b = 32; s = 1 + 16; break;                                 /* 17 */
	case GPUOS_GGML_TYPE_NVFP4: b = 64; s = 64 / 16 + 64 / 2; break;                       /* 36 */
	case GPUOS_GGML_TYPE_Q1_0: b = 128; s = 2 + 128 / 8; break;                            /* 18 */
	case GPUOS_GGML_TYPE_Q2_0: b = 64; s = 2 + 64 / 4; break;                              /* 18 */
	default:
		return -EINVAL;
	}
	*block = b;
	*bytes = s;
	return 0;
}

/* ---- small helpers ---------------------------------------------------------------- */

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

GPUOS_INLINE GPUOS_HD uint32_t fnv1a(uint32_t h, const uint8_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ s[i]) * FNV_PRIME;
	return h;
}

/* Record the first failure; later calls keep it. */
static GPUOS_HD int fail(struct gpuos_gguf_parser *p, int err, const char *why)
{
	if (!p->why) {
		p->why = why;
		p->err_off = p->pos;
	}
	return err;
}

static GPUOS_HD int fail_bad(struct gpuos_gguf_parser *p, int err, const char *why, uint64_t bad)
{
	if (!p->why)
		p->bad = bad;
	return fail(p, err, why);
}

GPUOS_INLINE GPUOS_HD uint64_t remaining(const struct gpuos_gguf_parser *p)
{
	return p->io->size - p->pos; /* pos <= size always holds */
}

/* ---- the read window ------------------------------------------------------------------ */

/* Load the window so that it holds byte off (off < io->size). */
static GPUOS_HD int win_load(struct gpuos_gguf_parser *p, uint64_t off)
{
	const struct gpuos_meta_io *io = p->io;
	uint64_t start = GPUOS_ALIGN_DOWN(off, (uint64_t)512), n;
	int rc;

	if (off >= io->size)
		return fail(p, -EINVAL, "runs past the end of the file");
	n = io->size - start;
	if (n > GPUOS_GGUF_WINDOW)
		n = GPUOS_GGUF_WINDOW;
	rc = gpuos_meta_read(io, start, (uint32_t)n, p->win);
	if (rc) {
		p->win_len = 0;
		if (rc == -ERANGE)
			return fail(p, -EINVAL, "runs past the end of the file");
		return fail(p, rc < 0 ? rc : -EIO, "device read error");
	}
	p->win_off = start;
	p->win_len = (uint32_t)n;
	return 0;
}

/* Consume up to len bytes at p->pos: *ptr points at them in the window, *n
 * says how many (at least 1 when len > 0). */
static GPUOS_HD int rd_span(struct gpuos_gguf_parser *p, uint64_t len, const uint8_t **ptr,
			    uint32_t *n)
{
	uint64_t in;
	int rc;

	if (p->pos < p->win_off || p->pos - p->win_off >= p->win_len) {
		rc = win_load(p, p->pos);
		if (rc)
			return rc;
	}
	in = p->win_off + p->win_len - p->pos;
	if (in > len)
		in = len;
	*ptr = p->win + (p->pos - p->win_off);
	*n = (uint32_t)in;
	p->pos += in;
	return 0;
}

static GPUOS_HD int rd(struct gpuos_gguf_parser *p, void *dst, uint64_t len)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s;
	uint32_t n;
	int rc;

	while (len) {
		rc = rd_span(p, len, &s, &n);
		if (rc)
			return rc;
		gpuos_mem_copy(d, s, n);
		d += n;
		len -= n;
	}
	return 0;
}

static GPUOS_HD int rd_u32(struct gpuos_gguf_parser *p, uint32_t *v)
{
	uint8_t b[4];
	int rc = rd(p, b, 4);

	if (!rc)
		*v = gpuos_le32(b);
	return rc;
}

static GPUOS_HD int rd_u64(struct gpuos_gguf_parser *p, uint64_t *v)
{
	uint8_t b[8];
	int rc = rd(p, b, 8);

	if (!rc)
		*v = gpuos_le64(b);
	return rc;
}

static GPUOS_HD int skip(struct gpuos_gguf_parser *p, uint64_t len, const char *why)
{
	if (len > remaining(p))
		return fail_bad(p, -EINVAL, why, len);
	p->pos += len;
	return 0;
}

/* ---- the arena --------------------------------------------------------------------- */

/* Reserve n bytes aligned to a (a power of two). Returns 1 with *off when the
 * bytes are there, 0 when they are not (then the parse ends in -ENOSPC, and
 * arena_used still counts them so the caller learns the size it needs). */
static GPUOS_HD int arena_take(struct gpuos_gguf *g, struct gpuos_gguf_parser *p, uint64_t n,
			       uint32_t a, uint32_t *off)
{
	uint64_t start = GPUOS_ALIGN_UP(g->arena_used, (uint64_t)a);

	g->arena_used = start + n;
	if (!g->mem.arena || g->arena_used > g->mem.arena_cap) {
		p->nospace = 1;
		return 0;
	}
	*off = (uint32_t)start;
	return 1;
}

/* ---- values --------------------------------------------------------------------------- */

static GPUOS_HD int rd_scalar(struct gpuos_gguf_parser *p, uint32_t type, union gpuos_gguf_value *v)
{
	uint8_t b[8];
	uint32_t u32;
	uint64_t u64;
	float f;
	double d;
	int rc = rd(p, b, scalar_size(type));

	if (rc)
		return rc;
	switch (type) {
	case GPUOS_GGUF_TYPE_UINT8: v->u64 = b[0]; break;
	case GPUOS_GGUF_TYPE_INT8: v->i64 = (int8_t)b[0]; break;
	case GPUOS_GGUF_TYPE_UINT16: v->u64 = gpuos_le16(b); break;
	case GPUOS_GGUF_TYPE_INT16: v->i64 = (int16_t)gpuos_le16(b); break;
	case GPUOS_GGUF_TYPE_UINT32: v->u64 = gpuos_le32(b); break;
	case GPUOS_GGUF_TYPE_INT32: v->i64 = (int32_t)gpuos_le32(b); break;
	case GPUOS_GGUF_TYPE_FLOAT32:
		u32 = gpuos_le32(b);
		gpuos_mem_copy(&f, &u32, sizeof(f));
		v->f64 = (double)f;
		break;
	case GPUOS_GGUF_TYPE_BOOL: v->u64 = b[0] != 0; break;
	case GPUOS_GGUF_TYPE_UINT64: v->u64 = gpuos_le64(b); break;
	case GPUOS_GGUF_TYPE_INT64: v->i64 = (int64_t)gpuos_le64(b); break;
	case GPUOS_GGUF_TYPE_FLOAT64:
		u64 = gpuos_le64(b);
		gpuos_mem_copy(&d, &u64, sizeof(d));
		v->f64 = d;
		break;
	default:
		return fail_bad(p, -EINVAL, "has an unknown value type", type);
	}
	return 0;
}

/* A string value. With out, keep up to GPUOS_GGUF_STR_MAX bytes in the
 * arena and describe them in *out; without, skip it. */
static GPUOS_HD int rd_str(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			   struct gpuos_gguf_str *out, uint32_t *kv_flags)
{
	uint64_t len, keep;
	uint32_t off;
	int rc = rd_u64(p, &len);

	if (rc)
		return rc;
	if (len > remaining(p))
		return fail_bad(p, -EINVAL, "has a string that runs past the end of the file", len);
	if (!out)
		return skip(p, len, "has a string that runs past the end of the file");
	keep = len < GPUOS_GGUF_STR_MAX ? len : GPUOS_GGUF_STR_MAX;
	out->off = 0;
	out->len = 0;
	out->full_len = len;
	if (keep < len)
		*kv_flags |= GPUOS_GGUF_KV_TRUNCATED;
	if (!arena_take(g, p, keep + 1, 1, &off))
		return skip(p, len, "has a string that runs past the end of the file");
	rc = rd(p, g->mem.arena + off, keep);
	if (rc)
		return rc;
	g->mem.arena[off + keep] = 0;
	out->off = off;
	out->len = (uint32_t)keep;
	return skip(p, len - keep, "has a string that runs past the end of the file");
}

/* Read an array header and push a level for its elements. rec (NULL: not
 * kept) receives the header; keep_items says whether its first items are
 * kept in the arena. */
static GPUOS_HD int arr_open(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			     struct gpuos_gguf_arr *rec, int keep_items, uint32_t level)
{
	uint32_t et, off, n;
	uint64_t count;
	int rc;

	if ((rc = rd_u32(p, &et)))
		return rc;
	if (et >= GPUOS_GGUF_TYPE_COUNT)
		return fail_bad(p, -EINVAL, "has an array of an unknown element type", et);
	if ((rc = rd_u64(p, &count)))
		return rc;
	/* Every element takes at least one byte on disk: a count the rest of
	 * the file cannot hold is corrupt, and walks stay bounded. */
	if (count > remaining(p) / min_encoded_size(et))
		return fail_bad(p, -EINVAL, "has an array count larger than the file", count);
	if (p->depth >= GPUOS_GGUF_MAX_DEPTH)
		return fail(p, -EINVAL, "has arrays nested too deeply");
	p->stack[p->depth].count = count;
	p->stack[p->depth].done = 0;
	p->stack[p->depth].elem_type = et;
	p->stack[p->depth].items_off = 0;
	p->stack[p->depth].keep = 0;
	p->stack[p->depth].stored = 0;
	p->stack[p->depth].level = level;
	if (rec) {
		rec->elem_type = et;
		rec->n_items = 0;
		rec->count = count;
		rec->items_off = 0;
		rec->rsvd14 = 0;
	}
	if (rec && keep_items) {
		/* Out of arena, the items are still walked as if kept, so that
		 * arena_used counts what they would need. */
		n = count < GPUOS_GGUF_ARR_ITEMS ? (uint32_t)count : GPUOS_GGUF_ARR_ITEMS;
		p->stack[p->depth].keep = 1;
		if (arena_take(g, p, (uint64_t)n * item_size(et), 8, &off)) {
			gpuos_mem_set(g->mem.arena + off, 0, (size_t)n * item_size(et));
			rec->n_items = n;
			rec->items_off = off;
			p->stack[p->depth].items_off = off;
			p->stack[p->depth].stored = 1;
		}
	}
	p->depth++;
	return 0;
}

/* An array value, walked level by level without recursion. */
static GPUOS_HD int rd_array(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			     struct gpuos_gguf_arr *rec, uint32_t *kv_flags)
{
	int rc;

	p->depth = 0;
	rc = arr_open(g, p, rec, rec != NULL, 0);
	while (!rc && p->depth) {
		uint32_t d = p->depth - 1;
		uint64_t i = p->stack[d].done, bytes;
		uint32_t et = p->stack[d].elem_type;
		int keep = p->stack[d].keep && i < GPUOS_GGUF_ARR_ITEMS;
		int stored = keep && p->stack[d].stored;
		uint8_t *items = stored ? g->mem.arena + p->stack[d].items_off : NULL;
		union gpuos_gguf_value tmp;

		if (i == p->stack[d].count) {
			p->depth--;
			continue;
		}
		p->stack[d].done++;
		if (et == GPUOS_GGUF_TYPE_STRING) {
			rc = rd_str(g, p, stored ? (struct gpuos_gguf_str *)(void *)items + i :
				    keep ? &p->str_scratch : NULL, kv_flags);
		} else if (et == GPUOS_GGUF_TYPE_ARRAY) {
			/* Items of the KV's array (level 0) and of the arrays
			 * nested in it (level 1) are kept; deeper arrays keep
			 * their header only. */
			rc = arr_open(g, p, stored ? (struct gpuos_gguf_arr *)(void *)items + i :
				      keep ? &p->arr_scratch : NULL,
				      keep && p->stack[d].level == 0, p->stack[d].level + 1);
		} else if (keep) {
			rc = rd_scalar(p, et, stored ? (union gpuos_gguf_value *)(void *)items + i : &tmp);
		} else {
			/* The rest of a fixed-size array: skip it whole. The
			 * count was bounded by the file size in arr_open. */
			bytes = (p->stack[d].count - i) * scalar_size(et);
			p->stack[d].done = p->stack[d].count;
			rc = skip(p, bytes, "has an array that runs past the end of the file");
		}
	}
	return rc;
}

/* ---- keys and names -------------------------------------------------------------------- */

/* Read a key of len bytes: into p->subject (cut) and, when kv is kept, into
 * the arena; refuse NUL bytes; hash it. */
static GPUOS_HD int rd_key(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			   struct gpuos_gguf_kv *kv, uint64_t len, uint32_t *hash)
{
	uint32_t off = 0, n, j, h = FNV_OFFSET;
	uint64_t done = 0;
	const uint8_t *s;
	int keep = kv && arena_take(g, p, len + 1, 1, &off);
	int rc;

	while (done < len) {
		if ((rc = rd_span(p, len - done, &s, &n)))
			return rc;
		for (j = 0; j < n; j++) {
			if (!s[j])
				return fail(p, -EINVAL, "has a NUL byte in its key");
			if (done + j < GPUOS_GGUF_NAME_MAX - 1) {
				p->subject[done + j] = (char)s[j];
				p->subject[done + j + 1] = 0;
			}
		}
		h = fnv1a(h, s, n);
		if (keep)
			gpuos_mem_copy(g->mem.arena + off + done, s, n);
		done += n;
	}
	if (keep) {
		g->mem.arena[off + len] = 0;
		kv->key_off = off;
	}
	*hash = h;
	return 0;
}

/* "blk.N." prefix: N, or -1. */
static GPUOS_HD int32_t layer_of(const char *name, uint32_t len)
{
	uint32_t i = 4, n = 0;

	if (len < 6 || gpuos_mem_cmp(name, "blk.", 4))
		return -1;
	while (i < len && name[i] >= '0' && name[i] <= '9') {
		n = n * 10 + (uint32_t)(name[i] - '0');
		if (n > GPUOS_GGUF_MAX_LAYER)
			return -1;
		i++;
	}
	if (i == 4 || i >= len || name[i] != '.')
		return -1;
	return (int32_t)n;
}

/* ---- tensor name index ---------------------------------------------------------------- */

/* Insert tensor i (already in the table) into the index; -EEXIST if a tensor
 * of that name is there. */
static GPUOS_HD int index_insert(struct gpuos_gguf *g, uint32_t i)
{
	const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];
	uint32_t mask = g->mem.index_cap - 1, slot = t->hash & mask, e;

	while ((e = g->mem.index[slot]) != 0) {
		const struct gpuos_gguf_tensor *o = &g->mem.tensors[e - 1];

		if (o->hash == t->hash && o->name_len == t->name_len &&
		    !gpuos_mem_cmp(o->name, t->name, t->name_len))
			return -EEXIST;
		slot = (slot + 1) & mask;
	}
	g->mem.index[slot] = i + 1;
	return 0;
}

static GPUOS_HD int linear_dup(const struct gpuos_gguf *g, uint32_t i)
{
	const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];
	uint32_t j;

	for (j = 0; j < i; j++) {
		const struct gpuos_gguf_tensor *o = &g->mem.tensors[j];

		if (o->hash == t->hash && o->name_len == t->name_len &&
		    !gpuos_mem_cmp(o->name, t->name, t->name_len))
			return 1;
	}
	return 0;
}

/* ---- the parse ---------------------------------------------------------------------- */

static GPUOS_HD int parse_header(struct gpuos_gguf *g, struct gpuos_gguf_parser *p)
{
	uint8_t b[8];
	uint32_t magic, version;
	int rc;

	if (p->io->size < 8)
		return fail(p, -EINVAL, "file too short for a GGUF header");
	if ((rc = rd(p, b, 8)))
		return rc;
	magic = gpuos_le32(b);
	version = gpuos_le32(b + 4);
	if (magic != GPUOS_GGUF_MAGIC) {
		p->pos = 0;
		if (!gpuos_mem_cmp(b, "FUGG", 4))
			return fail_bad(p, -EINVAL, "not a GGUF file: magic FUGG (pre-release draft format)",
					magic);
		return fail_bad(p, -EINVAL, "not a GGUF file: bad magic", magic);
	}
	p->pos = 4;
	if (version == 1)
		return fail_bad(p, -EPROTONOSUPPORT, "GGUF version 1 is not supported", version);
	/* A big-endian v3 file reads as 0x0?000000 here (llama.cpp issue 3957). */
	if ((version & 0xffffu) == 0 && (version >> 24) >= 1 && (version >> 24) <= 3)
		return fail_bad(p, -EPROTONOSUPPORT, "big-endian GGUF is not supported", version);
	if (version != 2 && version != 3)
		return fail_bad(p, -EPROTONOSUPPORT, "unsupported GGUF version", version);
	g->version = version;
	p->pos = 8;
	if (p->io->size < GGUF_HEADER_BYTES)
		return fail(p, -EINVAL, "file too short for a GGUF header");
	if ((rc = rd_u64(p, &g->tensor_count)) || (rc = rd_u64(p, &g->kv_count)))
		return rc;
	if (g->kv_count > GPUOS_GGUF_MAX_KV || g->kv_count > remaining(p) / GGUF_MIN_KV_BYTES) {
		p->pos = 16;
		return fail_bad(p, -EINVAL, "KV count larger than the file", g->kv_count);
	}
	if (g->tensor_count > GPUOS_GGUF_MAX_TENSORS ||
	    g->tensor_count > remaining(p) / GGUF_MIN_TENSOR_BYTES) {
		p->pos = 8;
		return fail_bad(p, -EINVAL, "tensor count larger than the file", g->tensor_count);
	}
	return 0;
}

/* Where KV i goes, zeroed: its row of g->mem.kv, or the parser's scratch
 * once the table is full (parsed all the same, so arena_used says how much
 * a retry needs); NULL when the caller keeps no table. */
static GPUOS_HD struct gpuos_gguf_kv *kv_slot(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
					      uint64_t i)
{
	struct gpuos_gguf_kv *kv;

	if (!g->mem.kv)
		return NULL;
	if (i < g->mem.kv_cap) {
		kv = &g->mem.kv[i];
		g->n_kv = (uint32_t)i + 1;
	} else {
		kv = &p->kv_scratch;
		p->nospace = 1;
	}
	gpuos_mem_set(kv, 0, sizeof(*kv));
	return kv;
}

static GPUOS_HD int parse_kvs(struct gpuos_gguf *g, struct gpuos_gguf_parser *p)
{
	uint64_t i;
	int rc;

	for (i = 0; i < g->kv_count; i++) {
		struct gpuos_gguf_kv *kv;
		union gpuos_gguf_value val;
		uint64_t len, start;
		uint32_t type, hash, flags = 0, j;

		p->err_kv = (int64_t)i;
		p->subject[0] = 0;
		kv = kv_slot(g, p, i);
		if ((rc = rd_u64(p, &len)))
			return rc;
		if (len > GPUOS_GGUF_KEY_MAX)
			return fail_bad(p, -ENAMETOOLONG, "key is longer than 65535 bytes", len);
		if (len > remaining(p))
			return fail_bad(p, -EINVAL, "key runs past the end of the file", len);
		if ((rc = rd_key(g, p, kv, len, &hash)))
			return rc;
		if ((rc = rd_u32(p, &type)))
			return rc;
		if (type >= GPUOS_GGUF_TYPE_COUNT)
			return fail_bad(p, -EINVAL, "has an unknown value type", type);
		start = p->pos;
		val.u64 = 0;
		if (type == GPUOS_GGUF_TYPE_STRING)
			rc = rd_str(g, p, kv ? &kv->str : NULL, &flags);
		else if (type == GPUOS_GGUF_TYPE_ARRAY)
			rc = rd_array(g, p, kv ? &kv->arr : NULL, &flags);
		else
			rc = rd_scalar(p, type, &val);
		if (rc)
			return rc;
		if (len == 17 && !gpuos_mem_cmp(p->subject, "general.alignment", 17)) {
			if (type != GPUOS_GGUF_TYPE_UINT32)
				return fail_bad(p, -EINVAL, "is not a uint32", type);
			if (!gpuos_is_pow2_u64(val.u64))
				return fail_bad(p, -EINVAL, "is not a power of two", val.u64);
			g->alignment = (uint32_t)val.u64;
		}
		if (flags & GPUOS_GGUF_KV_TRUNCATED)
			g->flags |= GPUOS_GGUF_F_TRUNCATED;
		if (!kv)
			continue;
		kv->key_len = (uint32_t)len;
		kv->type = type;
		kv->flags = flags;
		kv->val = val;
		kv->val_off = start;
		kv->val_bytes = p->pos - start;
		kv->hash = hash;
		/* Duplicate keys are corrupt (llama.cpp refuses them too). Keys
		 * that did not fit the arena cannot be compared: the parse ends
		 * in -ENOSPC anyway. */
		if (p->nospace)
			continue;
		for (j = 0; j < g->n_kv - 1; j++) {
			const struct gpuos_gguf_kv *o = &g->mem.kv[j];

			if (o->hash == hash && o->key_len == len &&
			    !gpuos_mem_cmp(g->mem.arena + o->key_off, g->mem.arena + kv->key_off, (size_t)len))
				return fail(p, -EINVAL, "is a duplicate key");
		}
	}
	p->err_kv = -1;
	return 0;
}

/* A tensor's name into p->subject, NUL-terminated, *len bytes; one of 128
 * bytes or more shows its first 127 in the error. */
static GPUOS_HD int tensor_name(struct gpuos_gguf_parser *p, uint64_t *len_out)
{
	uint64_t len;
	int rc;

	if ((rc = rd_u64(p, &len)))
		return rc;
	if (len > remaining(p))
		return fail_bad(p, -EINVAL, "name runs past the end of the file", len);
	if (len >= GPUOS_GGUF_NAME_MAX) {
		rd(p, p->subject, GPUOS_GGUF_NAME_MAX - 1);
		p->subject[GPUOS_GGUF_NAME_MAX - 1] = 0;
		return fail_bad(p, -ENAMETOOLONG, "has a name of 128 bytes or more", len);
	}
	if ((rc = rd(p, p->subject, len)))
		return rc;
	p->subject[len] = 0;
	if (gpuos_str_nlen(p->subject, (size_t)len) != len)
		return fail(p, -EINVAL, "has a NUL byte in its name");
	*len_out = len;
	return 0;
}

/* A tensor's dimension count and its dimensions into ne[], 1 past n_dims. */
static GPUOS_HD int tensor_dims(struct gpuos_gguf_parser *p, uint32_t *n_dims,
				uint64_t ne[GPUOS_GGUF_MAX_DIMS])
{
	uint32_t d;
	int rc;

	if ((rc = rd_u32(p, n_dims)))
		return rc;
	if (*n_dims > GPUOS_GGUF_MAX_DIMS)
		return fail_bad(p, -EINVAL, "has more than 4 dimensions", *n_dims);
	for (d = 0; d < GPUOS_GGUF_MAX_DIMS; d++) {
		ne[d] = 1;
		if (d < *n_dims) {
			if ((rc = rd_u64(p, &ne[d])))
				return rc;
			/* ggml keeps dims in int64_t */
			if (ne[d] > (uint64_t)INT64_MAX)
				return fail_bad(p, -EINVAL, "has a negative dimension", ne[d]);
		}
	}
	return 0;
}

/* A tensor's ggml type, whose blocks must divide ne[0], and its size in
 * bytes, none of it overflowing. */
static GPUOS_HD int tensor_type(struct gpuos_gguf_parser *p, const uint64_t ne[GPUOS_GGUF_MAX_DIMS],
				uint32_t *type, uint64_t *size)
{
	uint64_t nel, rows, row;
	uint32_t block, bytes;
	int rc;

	if ((rc = rd_u32(p, type)))
		return rc;
	if (gpuos_ggml_type_size(*type, &block, &bytes))
		return fail_bad(p, -EINVAL, "has an unknown ggml type", *type);
	if (ne[0] % block)
		return fail_bad(p, -EINVAL, "has a first dimension that is not a multiple of its type's block size",
				ne[0]);
	if (gpuos_mul_overflow_u64(ne[1], ne[2], &rows) || gpuos_mul_overflow_u64(rows, ne[3], &rows) ||
	    gpuos_mul_overflow_u64(ne[0], rows, &nel) || nel > (uint64_t)INT64_MAX ||
	    gpuos_mul_overflow_u64(ne[0] / block, bytes, &row) ||
	    gpuos_mul_overflow_u64(row, rows, size))
		return fail(p, -EOVERFLOW, "has a size that overflows 64 bits");
	return 0;
}

static GPUOS_HD int parse_tensors(struct gpuos_gguf *g, struct gpuos_gguf_parser *p)
{
	uint64_t i, expect = 0;
	uint32_t stored = 0;
	int packed = 1, rc;

	for (i = 0; i < g->tensor_count; i++) {
		struct gpuos_gguf_tensor *t = NULL;
		/* len and size set by tensor_name and tensor_type when they return 0
		 * (zeroed: gcc's -O1 TSan build cannot see it and warns) */
		uint64_t len = 0, ne[GPUOS_GGUF_MAX_DIMS], size = 0, off, end;
		uint32_t n_dims, type, d;
		int32_t layer;

		p->err_tensor = (int64_t)i;
		p->subject[0] = 0;
		if ((rc = tensor_name(p, &len)) || (rc = tensor_dims(p, &n_dims, ne)) ||
		    (rc = tensor_type(p, ne, &type, &size)))
			return rc;
		if ((rc = rd_u64(p, &off)))
			return rc;
		if (off & (g->alignment - 1))
			return fail_bad(p, -EINVAL, "has an offset that is not a multiple of general.alignment", off);
		if (gpuos_add_overflow_u64(off, size, &end))
			return fail_bad(p, -EOVERFLOW, "has an offset + size that overflows 64 bits", off);
		if (end > p->max_end || i == 0) {
			p->max_end = end;
			gpuos_mem_copy(p->max_name, p->subject, (size_t)len + 1);
			p->max_tensor = i;
		}
		if (packed) {
			if (off != expect || gpuos_align_up_u64(end, g->alignment, &expect))
				packed = 0;
		}
		layer = layer_of(p->subject, (uint32_t)len);
		if (layer >= 0 && (uint32_t)layer + 1 > g->n_layers)
			g->n_layers = (uint32_t)layer + 1;

		if (!g->mem.tensors)
			continue;
		if (i >= g->mem.tensor_cap) {
			p->nospace = 1;
			continue;
		}
		t = &g->mem.tensors[i];
		gpuos_mem_set(t, 0, sizeof(*t));
		t->rel_off = off;
		t->size = size;
		for (d = 0; d < GPUOS_GGUF_MAX_DIMS; d++)
			t->ne[d] = ne[d];
		t->type = type;
		t->n_dims = n_dims;
		t->layer = layer;
		t->name_len = (uint32_t)len;
		t->hash = fnv1a(FNV_OFFSET, (const uint8_t *)p->subject, (size_t)len);
		gpuos_mem_copy(t->name, p->subject, (size_t)len + 1);
		stored = (uint32_t)i + 1;
		g->n_tensors = stored;
		if (g->flags & GPUOS_GGUF_F_INDEXED)
			rc = index_insert(g, (uint32_t)i);
		else
			rc = linear_dup(g, (uint32_t)i) ? -EEXIST : 0;
		if (rc)
			return fail(p, -EINVAL, "is a duplicate tensor name");
	}
	p->err_tensor = -1;
	if (packed && g->tensor_count)
		g->flags |= GPUOS_GGUF_F_PACKED;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_gguf_parse(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			      const struct gpuos_meta_io *io)
{
	struct gpuos_gguf_mem mem = g->mem;
	uint64_t end;
	uint32_t i;
	int rc;

	gpuos_mem_set(g, 0, sizeof(*g));
	g->mem = mem;
	g->alignment = GPUOS_GGUF_DEFAULT_ALIGNMENT;
	g->file_size = io->size;

	p->why = NULL;
	p->err_off = 0;
	p->bad = 0;
	p->err_kv = -1;
	p->err_tensor = -1;
	p->subject[0] = 0;
	p->io = io;
	p->pos = 0;
	p->win_off = 0;
	p->win_len = 0;
	p->depth = 0;
	p->nospace = 0;
	p->max_end = 0;
	p->max_tensor = 0;
	p->max_name[0] = 0;

	if ((rc = parse_header(g, p)))
		return rc;

	if (g->mem.tensors && g->tensor_count > g->mem.tensor_cap)
		p->nospace = 1;
	if (g->mem.kv && g->kv_count > g->mem.kv_cap)
		p->nospace = 1;
	if (g->mem.index && g->mem.tensors) {
		uint64_t want = 2 * (g->tensor_count < g->mem.tensor_cap ? g->tensor_count : g->mem.tensor_cap);

		if (!gpuos_is_pow2_u64(g->mem.index_cap))
			return fail_bad(p, -EINVAL, "hash index capacity is not a power of two", g->mem.index_cap);
		if (g->mem.index_cap < want) {
			p->nospace = 1;
		} else {
			gpuos_mem_set(g->mem.index, 0, (size_t)g->mem.index_cap * sizeof(uint32_t));
			g->flags |= GPUOS_GGUF_F_INDEXED;
		}
	}

	if ((rc = parse_kvs(g, p)))
		return rc;
	g->tensor_info_off = p->pos;
	if ((rc = parse_tensors(g, p)))
		return rc;
	g->tensor_info_end = p->pos;
	if (gpuos_align_up_u64(p->pos, g->alignment, &g->data_offset))
		return fail(p, -EOVERFLOW, "data offset overflows 64 bits");
	if (g->data_offset > io->size)
		g->flags |= GPUOS_GGUF_F_DATA_PAST_EOF;
	g->data_end = g->data_offset;
	if (g->tensor_count) {
		if (gpuos_add_overflow_u64(g->data_offset, p->max_end, &end) || end > io->size) {
			/* Name the tensor that reaches furthest. */
			p->err_tensor = (int64_t)p->max_tensor;
			p->bad = end;
			gpuos_mem_copy(p->subject, p->max_name, GPUOS_GGUF_NAME_MAX);
			return fail(p, -EINVAL, "has data past the end of the file");
		}
		g->data_end = end;
	}
	for (i = 0; i < g->n_tensors; i++)
		g->mem.tensors[i].abs_off = g->data_offset + g->mem.tensors[i].rel_off;
	p->subject[0] = 0;
	if (p->nospace)
		return fail(p, -ENOSPC, "caller's tables or arena are too small");
	return 0;
}

GPUOS_HD int gpuos_gguf_reindex(struct gpuos_gguf *g, uint32_t *dup)
{
	uint32_t i;

	g->flags &= ~GPUOS_GGUF_F_INDEXED;
	if (!g->mem.index || !g->mem.tensors || !gpuos_is_pow2_u64(g->mem.index_cap) ||
	    g->mem.index_cap / 2u < g->n_tensors)
		return -ENOSPC;
	gpuos_mem_set(g->mem.index, 0, (size_t)g->mem.index_cap * sizeof(uint32_t));
	for (i = 0; i < g->n_tensors; i++) {
		if (index_insert(g, i)) {
			*dup = i;
			return -EEXIST; /* not indexed: finds walk the table */
		}
	}
	g->flags |= GPUOS_GGUF_F_INDEXED;
	return 0;
}

/* ---- lookups ----------------------------------------------------------------------------- */

GPUOS_HD int gpuos_gguf_find(const struct gpuos_gguf *g, const char *name)
{
	size_t len = gpuos_str_nlen(name, GPUOS_GGUF_NAME_MAX);
	uint32_t h, i;

	if (len >= GPUOS_GGUF_NAME_MAX || !g->mem.tensors)
		return -ENOENT;
	h = fnv1a(FNV_OFFSET, (const uint8_t *)name, len);
	if (g->flags & GPUOS_GGUF_F_INDEXED) {
		uint32_t mask = g->mem.index_cap - 1, slot = h & mask, e;

		while ((e = g->mem.index[slot]) != 0) {
			const struct gpuos_gguf_tensor *t = &g->mem.tensors[e - 1];

			if (t->hash == h && t->name_len == len && !gpuos_mem_cmp(t->name, name, len))
				return (int)(e - 1);
			slot = (slot + 1) & mask;
		}
		return -ENOENT;
	}
	for (i = 0; i < g->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];

		if (t->hash == h && t->name_len == len && !gpuos_mem_cmp(t->name, name, len))
			return (int)i;
	}
	return -ENOENT;
}

GPUOS_HD int gpuos_gguf_find_kv(const struct gpuos_gguf *g, const char *key)
{
	size_t len = gpuos_str_nlen(key, GPUOS_GGUF_KEY_MAX + 1);
	uint32_t h, i;

	if (len > GPUOS_GGUF_KEY_MAX || !g->mem.kv)
		return -ENOENT;
	h = fnv1a(FNV_OFFSET, (const uint8_t *)key, len);
	for (i = 0; i < g->n_kv; i++) {
		const struct gpuos_gguf_kv *kv = &g->mem.kv[i];

		if (kv->hash == h && kv->key_len == len &&
		    !gpuos_mem_cmp(g->mem.arena + kv->key_off, key, len))
			return (int)i;
	}
	return -ENOENT;
}

GPUOS_HD int gpuos_gguf_layer_next(const struct gpuos_gguf *g, uint32_t n, int after)
{
	uint32_t i = after < 0 ? 0 : (uint32_t)after + 1;

	for (; i < g->n_tensors; i++)
		if (g->mem.tensors[i].layer == (int32_t)n)
			return (int)i;
	return -ENOENT;
}

GPUOS_HD int gpuos_gguf_layer(const struct gpuos_gguf *g, uint32_t n, uint32_t *idx,
			      uint32_t cap, uint32_t *count)
{
	uint32_t c = 0;
	int i = -1;

	if (n >= g->n_layers) {
		*count = 0;
		return -ENOENT;
	}
	while ((i = gpuos_gguf_layer_next(g, n, i)) >= 0) {
		if (c < cap)
			idx[c] = (uint32_t)i;
		c++;
	}
	*count = c;
	if (!c)
		return -ENOENT;
	return c > cap ? -ENOSPC : 0;
}

GPUOS_HD int gpuos_gguf_layer_span(const struct gpuos_gguf *g, uint32_t n, uint64_t *off,
				   uint64_t *end)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int i = -1;

	if (n >= g->n_layers)
		return -ENOENT;
	while ((i = gpuos_gguf_layer_next(g, n, i)) >= 0) {
		const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];

		if (t->abs_off < lo)
			lo = t->abs_off;
		if (t->abs_off + t->size > hi)
			hi = t->abs_off + t->size;
	}
	if (lo == UINT64_MAX)
		return -ENOENT;
	*off = lo;
	*end = hi;
	return 0;
}
