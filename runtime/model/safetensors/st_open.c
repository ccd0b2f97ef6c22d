/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/safetensors/st_open.c - safetensors' opener in the metadata
 * warp (../model.h): a file's header (safetensors.h) parsed into the model
 * tables GGUF's records make (../tables.h, gpuos/gguf.h:
 * GPUOS_GGUF_F_SAFETENSORS), and a Hugging Face sharded checkpoint opened
 * through its model.safetensors.index.json as one model over the files its
 * weight_map names (GPUOS_GGUF_F_ST_INDEX). Everything above the tables
 * (INFO, FIND, TENSOR, LAYER, loads) is format-blind.
 *
 * Memory: the model scratch of files_internal.h (off_model_scratch, laid
 * out in st_open.h), used only while a model opens; the metadata warp
 * opens one model at a time.
 */
#include "st_open.h"
#include "../model.h"
#include "../../files_internal.h"

/* ---- scratch ------------------------------------------------------------------------ */

GPUOS_INLINE GPUOS_HD uint8_t *st_hdr_buf(const struct gpuos_rt_desc *d)
{
	return (uint8_t *)(uintptr_t)(d->files + off_model_scratch());
}
GPUOS_INLINE GPUOS_HD uint8_t *st_json_buf(const struct gpuos_rt_desc *d) { return st_hdr_buf(d) + st_hdr_bytes(); }
GPUOS_INLINE GPUOS_HD struct gpuos_st_tensor *st_tab(const struct gpuos_rt_desc *d)
{
	return (struct gpuos_st_tensor *)(uintptr_t)(st_json_buf(d) + st_json_bytes());
}
GPUOS_INLINE GPUOS_HD struct gpuos_st_meta *st_meta_tab(const struct gpuos_rt_desc *d)
{
	return (struct gpuos_st_meta *)(uintptr_t)((uint8_t *)st_tab(d) + st_tab_bytes());
}
GPUOS_INLINE GPUOS_HD struct gpuos_st_index_entry *st_ent_tab(const struct gpuos_rt_desc *d)
{
	return (struct gpuos_st_index_entry *)(uintptr_t)((uint8_t *)st_meta_tab(d) + st_meta_bytes());
}
GPUOS_INLINE GPUOS_HD struct gpuos_st_index_file *st_file_tab(const struct gpuos_rt_desc *d)
{
	return (struct gpuos_st_index_file *)(uintptr_t)((uint8_t *)st_ent_tab(d) + st_ent_bytes());
}
GPUOS_INLINE GPUOS_HD uint8_t *st_seen(const struct gpuos_rt_desc *d)
{
	return (uint8_t *)st_file_tab(d) + st_files_bytes();
}

/* ---- which file it is ------------------------------------------------------------------- */

GPUOS_HD int gpuos_st_model_sniff(struct rt_files *F, const uint8_t *b, uint32_t k, uint64_t size)
{
	uint64_t n;
	/* safetensors: a little-endian length, then the JSON, which MUST begin
	 * with '{'. A length below 2^56 has a NUL byte at 7, which JSON text
	 * never holds: with one, a bad length is safetensors' to report. */
	return k == 9 && b[8] == '{' && (!gpuos_st_header_len(b, size, &n, &F->fmt.st.err) || b[7] == 0);
}

GPUOS_HD int gpuos_st_model_index_sniff(struct rt_files *F, uint32_t i, const uint8_t *first, uint32_t k)
{
	uint8_t b[9];
	uint64_t size = F->h[i].size, at;
	uint32_t j;

	k = GPUOS_MIN(k, (uint32_t)sizeof(b));
	for (j = 0; j < k; j++)
		b[j] = first[j];
	/* an index: a JSON object, after any whitespace (read on, 9 bytes at a time, up to 4 KiB) */
	for (at = 0;;) {
		for (j = 0; j < k; j++) {
			if (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r')
				continue;
			return b[j] == '{';
		}
		at += k;
		if (at >= size || at >= 4096u)
			return 0;
		k = (uint32_t)GPUOS_MIN(size - at, (uint64_t)sizeof(b));
		if (files_model_read(F, i, at, k, b))
			return -EIO;
	}
}

/* ---- refusals ----------------------------------------------------------------------- */

/* A reply: "[shard K of N (NAME): ]what[ 'token'][ (tensor 'name')][ [value V]][ at byte B]". */
GPUOS_NOINLINE GPUOS_HD static void st_refuse(struct rt_files *F, const struct mreq *q, uint32_t st, uint32_t k,
					      uint32_t n, const char *what, const struct gpuos_st_error *e)
{
	struct sbuf sb;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	if (n)
		files_shard_prefix(F, &sb, k, n);
	sb_str(&sb, what);
	if (e && e->why) {
		sb_str(&sb, ": ");
		sb_str(&sb, e->why);
		if (e->token[0]) {
			sb_str(&sb, " '");
			sb_str(&sb, e->token);
			sb_str(&sb, "'");
		}
		if (e->name[0]) {
			sb_str(&sb, " (tensor '");
			sb_str(&sb, e->name);
			sb_str(&sb, "')");
		}
		if (e->bad) {
			sb_str(&sb, " [value ");
			sb_num(&sb, e->bad);
			sb_str(&sb, "]");
		}
		if (e->off) {
			sb_str(&sb, " at byte ");
			sb_num(&sb, e->off);
		}
	}
	files_reply(F, q, st, 0, 0, F->reason);
}

/* The status of a parse error r. */
GPUOS_INLINE GPUOS_HD uint32_t st_status(int r)
{
	switch (r) {
	case -EIO: return GPUOS_ST_IO;
	case -ENOSPC: return GPUOS_ST_NOSPC;
	case -EPROTONOSUPPORT: return GPUOS_ST_UNSUPPORTED;
	default: return GPUOS_ST_CORRUPT; /* -EINVAL, -E2BIG, -EOVERFLOW, -ENAMETOOLONG: the file's fault */
	}
}

/* "tensor 'NAME' " + what, a refusal of one tensor of the tables. */
GPUOS_NOINLINE GPUOS_HD static void st_refuse_tensor(struct rt_files *F, const struct mreq *q, uint32_t st,
						     uint32_t k, uint32_t n, const char *name, const char *what,
						     uint64_t v)
{
	struct sbuf sb;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	if (n)
		files_shard_prefix(F, &sb, k, n);
	sb_str(&sb, "tensor '");
	sb_str(&sb, name);
	sb_str(&sb, "' ");
	sb_str(&sb, what);
	if (v) {
		sb_str(&sb, " (");
		sb_num(&sb, v);
		sb_str(&sb, ")");
	}
	files_reply(F, q, st, 0, 0, F->reason);
}

/* ---- one file into the tables --------------------------------------------------------- */

/* The model table's type of a safetensors dtype (gpuos/gguf.h). */
GPUOS_INLINE GPUOS_HD uint32_t st_model_type(uint32_t dtype)
{
	switch (dtype) {
	case GPUOS_ST_DTYPE_BOOL: return GPUOS_MODEL_TYPE_BOOL;
	case GPUOS_ST_DTYPE_U8: return GPUOS_MODEL_TYPE_U8;
	case GPUOS_ST_DTYPE_I8: return GPUOS_GGML_TYPE_I8;
	case GPUOS_ST_DTYPE_F8_E5M2: return GPUOS_MODEL_TYPE_F8_E5M2;
	case GPUOS_ST_DTYPE_F8_E4M3: return GPUOS_MODEL_TYPE_F8_E4M3;
	case GPUOS_ST_DTYPE_I16: return GPUOS_GGML_TYPE_I16;
	case GPUOS_ST_DTYPE_U16: return GPUOS_MODEL_TYPE_U16;
	case GPUOS_ST_DTYPE_F16: return GPUOS_GGML_TYPE_F16;
	case GPUOS_ST_DTYPE_BF16: return GPUOS_GGML_TYPE_BF16;
	case GPUOS_ST_DTYPE_I32: return GPUOS_GGML_TYPE_I32;
	case GPUOS_ST_DTYPE_U32: return GPUOS_MODEL_TYPE_U32;
	case GPUOS_ST_DTYPE_F32: return GPUOS_GGML_TYPE_F32;
	case GPUOS_ST_DTYPE_F64: return GPUOS_GGML_TYPE_F64;
	case GPUOS_ST_DTYPE_I64: return GPUOS_GGML_TYPE_I64;
	default: return GPUOS_MODEL_TYPE_U64; /* GPUOS_ST_DTYPE_U64, the last the parser lets through */
	}
}

/* F->fmt.st.file's "__metadata__" as string KVs of g (keys and values in its arena;
 * a value cut at GPUOS_GGUF_STR_MAX is marked as GGUF's are). 0, or a
 * negative errno (-ENOSPC: the tables or arena are full). */
GPUOS_HD static int st_kvs(struct gpuos_gguf *g, const struct gpuos_st *st)
{
	uint32_t j;
	for (j = 0; j < st->n_meta; j++) {
		const struct gpuos_st_meta *m = &st->meta[j];
		struct gpuos_gguf_kv *kv;
		uint64_t at = g->arena_used, keep = GPUOS_MIN((uint64_t)m->val_len, (uint64_t)GPUOS_GGUF_STR_MAX);
		if (g->n_kv >= g->mem.kv_cap || at + m->key_len + 1u + keep + 1u > g->mem.arena_cap)
			return -ENOSPC;
		kv = &g->mem.kv[g->n_kv];
		gpuos_buf_zero(kv, sizeof(*kv));
		kv->key_off = (uint32_t)at;
		kv->key_len = m->key_len;
		gpuos_st_str_decode(st->hdr, m->key_off, m->key_raw, (char *)g->mem.arena + at, m->key_len + 1u);
		at += m->key_len + 1u;
		kv->type = GPUOS_GGUF_TYPE_STRING;
		kv->str.off = (uint32_t)at;
		kv->str.len = (uint32_t)keep;
		kv->str.full_len = m->val_len;
		gpuos_st_str_decode(st->hdr, m->val_off, m->val_raw, (char *)g->mem.arena + at, (uint32_t)keep + 1u);
		at += keep + 1u;
		if (keep < m->val_len) {
			kv->flags |= GPUOS_GGUF_KV_TRUNCATED;
			g->flags |= GPUOS_GGUF_F_TRUNCATED;
		}
		kv->val_off = 8u + (uint64_t)m->val_off; /* the value's body in the file */
		kv->val_bytes = m->val_raw;
		kv->hash = m->key_hash;
		g->arena_used = (at + 7u) & ~7ull;
		g->n_kv++;
	}
	return 0;
}

/* Read and parse the header of the safetensors file in handle slot i (file
 * k of n) into F->fmt.st.file, its tables the runtime's. 0, or -1 after replying. */
GPUOS_HD static int st_load_header(struct rt_files *F, const struct mreq *q, uint32_t i, uint32_t k,
				   uint32_t n)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_st *st = &F->fmt.st.file;
	uint64_t size = F->h[i].size, len = 0;
	uint8_t first8[8];
	int r;

	if (size >= 8 && files_model_read(F, i, 0, 8, first8)) {
		st_refuse(F, q, GPUOS_ST_IO, k, n, "cannot read the safetensors file", 0);
		return -1;
	}
	if ((r = gpuos_st_header_len(first8, size, &len, &F->fmt.st.err))) {
		st_refuse(F, q, st_status(r), k, n, "corrupt safetensors header", &F->fmt.st.err);
		return -1;
	}
	if (len > GPUOS_RT_ST_HEADER) {
		F->fmt.st.err.why = "a header longer than the runtime reads (8 MiB)";
		F->fmt.st.err.bad = len;
		F->fmt.st.err.off = 0;
		st_refuse(F, q, GPUOS_ST_NOSPC, k, n, "safetensors too large for the runtime", &F->fmt.st.err);
		return -1;
	}
	if (files_model_read(F, i, 8, (uint32_t)len, st_hdr_buf(d))) {
		st_refuse(F, q, GPUOS_ST_IO, k, n, "cannot read the safetensors header", 0);
		return -1;
	}
	st->tensors = st_tab(d);
	st->tensor_cap = GPUOS_RT_MODEL_TENSORS;
	st->meta = st_meta_tab(d);
	st->meta_cap = GPUOS_RT_MODEL_KV;
	if ((r = gpuos_st_parse(st, st_hdr_buf(d), len, size, &F->fmt.st.err))) {
		if (r == -ENOSPC) {
			F->fmt.st.err.why = "more tensors or metadata entries than the runtime's tables hold (16384, 4096)";
			F->fmt.st.err.bad = GPUOS_MAX(st->n_tensors, st->n_meta);
			F->fmt.st.err.off = 0;
			st_refuse(F, q, GPUOS_ST_NOSPC, k, n, "safetensors too large for the runtime", &F->fmt.st.err);
		} else {
			st_refuse(F, q, st_status(r),  k, n,
				  r == -EPROTONOSUPPORT ? "unsupported safetensors" : "corrupt safetensors header", &F->fmt.st.err);
		}
		return -1;
	}
	return 0;
}

/* Append the tensors F->fmt.st.file holds (file k of n) to g's tables as `shard`,
 * in ggml's order of dimensions. 0, or -1 after replying. */
GPUOS_HD static int st_add_tensors(struct rt_files *F, const struct mreq *q, struct gpuos_gguf *g,
				   uint32_t shard, uint32_t k, uint32_t n)
{
	const struct gpuos_st *st = &F->fmt.st.file;
	uint32_t j, dim;

	for (j = 0; j < st->n_tensors; j++) {
		const struct gpuos_st_tensor *t = &st->tensors[j];
		struct gpuos_gguf_tensor *o;
		char *name;
		if (g->n_tensors >= g->mem.tensor_cap) {
			F->fmt.st.err.why = "more tensors than the runtime's tables hold (16384)";
			F->fmt.st.err.bad = (uint64_t)g->n_tensors + st->n_tensors - j;
			F->fmt.st.err.off = 0;
			F->fmt.st.err.name[0] = F->fmt.st.err.token[0] = 0;
			st_refuse(F, q, GPUOS_ST_NOSPC, k, n, "safetensors too large for the runtime", &F->fmt.st.err);
			return -1;
		}
		o = &g->mem.tensors[g->n_tensors];
		name = o->name;
		if (gpuos_st_name(st, t, name, GPUOS_GGUF_NAME_MAX) < 0) {
			st_refuse_tensor(F, q, GPUOS_ST_UNSUPPORTED, k, n, name,
					 "has a name longer than the runtime's tables hold (127 bytes)", t->name_len);
			return -1;
		}
		if (t->ndim > GPUOS_GGUF_MAX_DIMS) {
			st_refuse_tensor(F, q, GPUOS_ST_UNSUPPORTED, k, n, name,
					 "has more dimensions than the runtime's tables hold (4)", t->ndim);
			return -1;
		}
		o->abs_off = t->abs_begin;
		o->size = t->end - t->begin;
		o->rel_off = t->begin;
		/* ggml's order: ne[0] the fastest dimension, the shape's last */
		for (dim = 0; dim < GPUOS_GGUF_MAX_DIMS; dim++)
			o->ne[dim] = dim < t->ndim ? t->shape[t->ndim - 1u - dim] : 1u;
		o->type = st_model_type(t->dtype);
		o->n_dims = t->ndim;
		o->layer = t->layer;
		o->name_len = t->name_len;
		o->hash = t->hash;
		o->shard = shard;
		g->n_tensors++;
	}
	return 0;
}

/*
 * Parse the safetensors file in handle slot i (file k of n of the model, n 0
 * for a file alone) and append its tensors to g's tables as `shard`, with
 * its metadata as KVs when `kvs`. 0, or -1 after replying.
 */
GPUOS_NOINLINE GPUOS_HD static int st_load(struct rt_files *F, const struct mreq *q, struct gpuos_gguf *g, uint32_t i,
					   uint32_t shard, uint32_t k, uint32_t n, int kvs)
{
	struct gpuos_st *st = &F->fmt.st.file;
	uint64_t size = F->h[i].size;

	if (st_load_header(F, q, i, k, n))
		return -1;
	if (kvs) {
		g->version = 0;
		g->alignment = 8;
		g->tensor_info_off = 8;
		g->tensor_info_end = st->data_off;
		g->data_offset = st->data_off;
		g->file_size = size;
		g->data_end = size;
		if (st_kvs(g, st)) {
			st_refuse(F, q, GPUOS_ST_NOSPC, k, n, "safetensors __metadata__ larger than the runtime's tables "
							      "(4096 entries, 1 MiB of keys and strings)", 0);
			return -1;
		}
	}
	if (st_add_tensors(F, q, g, shard, k, n))
		return -1;
	g->n_layers = GPUOS_MAX(g->n_layers, st->n_layers);
	return 0;
}

/* Model m's tables, empty. */
GPUOS_HD static struct gpuos_gguf *st_tables(struct rt_files *F, uint32_t m)
{
	struct gpuos_gguf *g = &F->model[m];
	files_model_mem(F->d, m, &g->mem);
	g->n_tensors = 0;
	g->n_kv = 0;
	g->n_layers = 0;
	g->arena_used = 0;
	g->flags = GPUOS_GGUF_F_SAFETENSORS;
	return g;
}

/* Index g's names; -1 after replying when two files hold one name. */
GPUOS_HD static int st_index_names(struct rt_files *F, const struct mreq *q, struct gpuos_gguf *g)
{
	uint32_t dup = 0;
	int r = gpuos_gguf_reindex(g, &dup);
	if (r == -EEXIST) {
		st_refuse_tensor(F, q, GPUOS_ST_CORRUPT, 0, 0, g->mem.tensors[dup].name,
				 "is in two files of the safetensors index", 0);
		return -1;
	}
	/* -ENOSPC cannot happen (the index holds twice the tables); finds walk the table then */
	g->tensor_count = g->n_tensors;
	g->kv_count = g->n_kv;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_st_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i)
{
	struct gpuos_gguf *g = st_tables(F, m);
	struct rt_model_files *mf = &F->mfiles[m];

	mf->n = 1;
	mf->file[0] = handle_number(&F->h[i], i);
	mf->split_no = 0;
	mf->split_count = 0;
	if (st_load(F, q, g, i, 0, 0, 0, 1) || st_index_names(F, q, g)) {
		files_model_close(F, m, i);
		return -1;
	}
	return (int)i;
}

/* ---- a sharded checkpoint ---------------------------------------------------------------- */

/* The tensors of g against the index's weight_map: each entry names a
 * tensor of g, in the file it says, once; every tensor of g is named. 0, or
 * -1 after replying. F->why holds names meanwhile. */
GPUOS_NOINLINE GPUOS_HD static int st_check_map(struct rt_files *F, const struct mreq *q, struct gpuos_gguf *g)
{
	const struct gpuos_st_index *ix = &F->fmt.st.ix;
	uint8_t *seen = st_seen(F->d);
	char *name = F->why;
	uint32_t e, t;
	int r;

	gpuos_buf_zero(seen, st_seen_bytes());
	for (e = 0; e < ix->n_entries; e++) {
		r = gpuos_st_index_entry_name(ix, e, name, GPUOS_GGUF_NAME_MAX);
		r = r < 0 ? r : gpuos_gguf_find(g, name);
		if (r < 0) {
			st_refuse_tensor(F, q, GPUOS_ST_CORRUPT, 0, 0, name,
					 "is in the index's weight_map but in none of the files it names", 0);
			return -1;
		}
		t = (uint32_t)r;
		if (seen[t >> 3] & (1u << (t & 7u))) {
			st_refuse_tensor(F, q, GPUOS_ST_CORRUPT, 0, 0, name, "is in the index's weight_map twice", 0);
			return -1;
		}
		seen[t >> 3] |= (uint8_t)(1u << (t & 7u));
		if (g->mem.tensors[t].shard != ix->entries[e].file) {
			struct sbuf sb;
			sb.p = F->reason;
			sb.n = 0;
			sb.cap = sizeof(F->reason);
			sb_str(&sb, "corrupt safetensors index: its weight_map puts tensor '");
			sb_str(&sb, name);
			sb_str(&sb, "' in file ");
			sb_num(&sb, ix->entries[e].file + 1u);
			sb_str(&sb, " of ");
			sb_num(&sb, ix->n_files);
			sb_str(&sb, ", but file ");
			sb_num(&sb, g->mem.tensors[t].shard + 1u);
			sb_str(&sb, " holds it");
			files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, F->reason);
			return -1;
		}
	}
	for (t = 0; t < g->n_tensors; t++) {
		if (!(seen[t >> 3] & (1u << (t & 7u)))) {
			st_refuse_tensor(F, q, GPUOS_ST_CORRUPT, 0, 0, g->mem.tensors[t].name,
					 "is in a file of the index but not in its weight_map", 0);
			return -1;
		}
	}
	return 0;
}

/* Read the index in handle slot i, which is freed (its bytes are all it
 * gives), and parse it into F->fmt.st.ix, its tables the runtime's. 0, or -1
 * after replying. */
GPUOS_HD static int st_read_index(struct rt_files *F, const struct mreq *q, uint32_t i)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_st_index *ix = &F->fmt.st.ix;
	uint64_t size = F->h[i].size;
	int r;

	if (size > GPUOS_RT_ST_INDEX) {
		F->h[i].kind = H_FREE;
		F->fmt.st.err.why = "an index longer than the runtime reads (4 MiB)";
		F->fmt.st.err.bad = size;
		F->fmt.st.err.off = 0;
		F->fmt.st.err.name[0] = F->fmt.st.err.token[0] = 0;
		st_refuse(F, q, GPUOS_ST_NOSPC, 0, 0, "safetensors index too large for the runtime", &F->fmt.st.err);
		return -1;
	}
	r = files_model_read(F, i, 0, (uint32_t)size, st_json_buf(d));
	F->h[i].kind = H_FREE; /* its bytes are all it gives */
	if (r) {
		st_refuse(F, q, GPUOS_ST_IO, 0, 0, "cannot read the safetensors index", 0);
		return -1;
	}
	ix->entries = st_ent_tab(d);
	ix->entry_cap = GPUOS_RT_MODEL_TENSORS;
	ix->files = st_file_tab(d);
	ix->file_cap = GPUOS_RT_MODEL_SHARDS;
	if ((r = gpuos_st_index_parse(ix, st_json_buf(d), size, &F->fmt.st.err))) {
		if (r == -ENOSPC && ix->n_files > ix->file_cap)
			st_refuse(F, q, GPUOS_ST_UNSUPPORTED, 0, 0,
				  "a safetensors index naming more files than the runtime opens (32)", 0);
		else if (r == -ENOSPC)
			st_refuse(F, q, GPUOS_ST_NOSPC, 0, 0,
				  "a safetensors index naming more tensors than the runtime's tables hold (16384)", 0);
		else
			st_refuse(F, q, st_status(r), 0, 0, "corrupt safetensors index", &F->fmt.st.err);
		return -1;
	}
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_st_model_open_index(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i)
{
	const struct gpuos_st_index *ix = &F->fmt.st.ix;
	struct rt_model_files *mf = &F->mfiles[m];
	struct gpuos_gguf *g = st_tables(F, m);
	uint32_t len, slash = 0, k, n, first = 0;
	int r, slot;

	mf->n = 0;
	if (st_read_index(F, q, i))
		return -1;
	/* The files are beside the index: its directory, then each name. */
	len = (uint32_t)gpuos_str_nlen(F->path, GPUOS_PATH_MAX);
	for (k = 0; k < len; k++)
		if (F->path[k] == '/')
			slash = k + 1u;
	gpuos_buf_copy(F->prefix, F->path, slash);
	n = ix->n_files;
	for (k = 0; k < n; k++) {
		gpuos_buf_copy(F->path, F->prefix, slash);
		r = gpuos_st_index_file_name(ix, k, F->path + slash, GPUOS_PATH_MAX - slash);
		if (r < 0) {
			if (mf->n)
				files_model_close(F, m, first);
			files_reply(F, q, GPUOS_ST_NAMETOOLONG, 0, 0,
				    "a file the safetensors index names makes a path longer than the runtime takes");
			return -1;
		}
		if ((slot = files_open_model_file(F, q, k + 1u, n)) < 0) {
			if (mf->n)
				files_model_close(F, m, first);
			return -1;
		}
		if (k == 0)
			first = (uint32_t)slot;
		else
			F->h[slot].kind = H_SHARD;
		mf->file[k] = handle_number(&F->h[slot], (uint32_t)slot);
		mf->n = k + 1u;
		r = (int)gpuos_model_detect(F, (uint32_t)slot);
		if (r != GPUOS_MODEL_SAFETENSORS) {
			st_refuse(F, q, r == GPUOS_MODEL_IO ? GPUOS_ST_IO : GPUOS_ST_CORRUPT, k + 1u, n,
				  r == GPUOS_MODEL_IO ? "cannot read it" : "not a safetensors file", 0);
			files_model_close(F, m, first);
			return -1;
		}
		if (st_load(F, q, g, (uint32_t)slot, k, k + 1u, n, k == 0)) {
			files_model_close(F, m, first);
			return -1;
		}
	}
	mf->split_no = 0;
	mf->split_count = n;
	g->flags |= GPUOS_GGUF_F_ST_INDEX | GPUOS_GGUF_F_SPLIT;
	if (st_index_names(F, q, g) || st_check_map(F, q, g)) {
		files_model_close(F, m, first);
		return -1;
	}
	return (int)first;
}
