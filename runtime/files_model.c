/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_model.c - models in the metadata warp (files.h), whatever
 * their format: GGUF_OPEN finds the file (or files) a request names, opens
 * it and has runtime/model/model.h parse it into the tables of a model slot
 * of the files region; INFO, FIND, TENSOR and LAYER read those tables, and
 * the service warps find a tensor's bytes through gpuos_rt_files_tensor.
 * Also the helpers the formats' openers share: the tables' memory, opening
 * a model's file, "shard K of N" refusals, closing a model's files.
 */
#include "files_internal.h"

/* ---- the tables ---------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD int gpuos_rt_files_tensor(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				   uint64_t idx, uint64_t *off, uint64_t *size, uint32_t *file)
{
	const struct rt_files *F = files_of(d);
	const struct gpuos_gguf *g;
	const struct gpuos_gguf_tensor *t;
	uint32_t shard;
	if (hd->model < 0 || (uint32_t)hd->model >= GPUOS_RT_MODELS)
		return -EINVAL;
	g = &F->model[hd->model];
	if (idx >= g->n_tensors)
		return -ENOENT;
	t = &g->mem.tensors[idx];
	shard = t->shard;
	if (shard >= F->mfiles[hd->model].n || shard >= GPUOS_RT_MODEL_SHARDS)
		return -EINVAL;
	*off = t->abs_off;
	*size = t->size;
	*file = F->mfiles[hd->model].file[shard];
	return 0;
}

GPUOS_HD void files_model_mem(const struct gpuos_rt_desc *d, uint32_t m, struct gpuos_gguf_mem *mem)
{
	uint8_t *p = (uint8_t *)(uintptr_t)(d->files + off_models() + (uint64_t)m * model_bytes());
	mem->tensors = (struct gpuos_gguf_tensor *)p;
	p += gpuos_align_line((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_gguf_tensor));
	mem->kv = (struct gpuos_gguf_kv *)p;
	p += gpuos_align_line((uint64_t)GPUOS_RT_MODEL_KV * sizeof(struct gpuos_gguf_kv));
	mem->arena = p;
	p += gpuos_align_line(GPUOS_RT_MODEL_ARENA);
	mem->index = (uint32_t *)p;
	mem->tensor_cap = GPUOS_RT_MODEL_TENSORS;
	mem->kv_cap = GPUOS_RT_MODEL_KV;
	mem->arena_cap = GPUOS_RT_MODEL_ARENA;
	mem->index_cap = GPUOS_RT_MODEL_INDEX;
}

GPUOS_HD int files_model_read(struct rt_files *F, uint32_t i, uint64_t off, uint32_t len, void *dst)
{
	F->io_file.F = F;
	F->io_file.handle = i;
	F->io_file.hint = 0;
	return files_io_file_read(&F->io_file, off, len, dst);
}

/* ---- opening ------------------------------------------------------------------------- */

/* "shard K of N (NAME): " into sb, NAME the last component of F->path. */
GPUOS_HD void files_shard_prefix(const struct rt_files *F, struct sbuf *sb, uint64_t k, uint64_t n)
{
	const char *name = F->path, *c;
	for (c = F->path; *c; c++)
		if (*c == '/' && c[1])
			name = c + 1;
	sb_str(sb, "shard ");
	sb_num(sb, k);
	sb_str(sb, " of ");
	sb_num(sb, n);
	sb_str(sb, " (");
	sb_str(sb, name);
	sb_str(sb, "): ");
}

/* Reply st with "shard K of N (NAME): what[ detail]". */
GPUOS_NOINLINE GPUOS_HD void files_shard_refuse(struct rt_files *F, const struct mreq *q, uint32_t st, uint64_t k,
						 uint64_t n, const char *what, const char *detail)
{
	struct sbuf sb;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	files_shard_prefix(F, &sb, k, n);
	sb_str(&sb, what);
	if (detail) {
		sb_str(&sb, ": ");
		sb_str(&sb, detail);
	}
	files_reply(F, q, st, 0, 0, F->reason);
}

/* Look up and open F->path for GGUF_OPEN: a file the client may read, with
 * an extent map (a GGUF, a safetensors file or index, or a shard of one). Returns its slot, or -1 after replying (with "shard k of
 * n (NAME): " before the reason when n). */
GPUOS_NOINLINE GPUOS_HD int files_open_model_file(struct rt_files *F, const struct mreq *q, uint64_t k, uint64_t n)
{
	int r = files_lookup_path(F, q, 0); /* GGUF_OPEN has no NOFOLLOW: symlinks are followed */
	int slot;
	if (!r && F->ino.type == GPUOS_FT_DIR)
		r = -EISDIR;
	if (!r && gpuos_fs_permission(&F->fs, &F->ino, files_cred(F, q), GPUOS_FS_MAY_READ))
		r = -EACCES;
	if (r && n) {
		files_shard_refuse(F, q, status_of(r), k, n, r == -ENOENT ? "missing" : gpuos_status_name(status_of(r)),
			     files_lookup_why(F, r));
		return -1;
	}
	if (r) {
		files_reply_err(F, q, r, 0, files_lookup_why(F, r));
		return -1;
	}
	slot = files_open_inode(F, q, "a model in inline data or a special file");
	return slot;
}

/* Close the files of model m opened so far: its shards and slot first. */
GPUOS_HD void files_model_close(struct rt_files *F, uint32_t m, uint32_t first)
{
	struct rt_model_files *mf = &F->mfiles[m];
	uint32_t k;
	for (k = 1; k < mf->n; k++) {
		const struct rt_handle *s = gpuos_rt_handle(F->d, mf->file[k], 1u << H_SHARD);
		if (s)
			F->h[s - F->h].kind = H_FREE;
	}
	mf->n = 0;
	F->h[first].kind = H_FREE;
	F->h[first].model = -1;
}

/* GPUOS_GGUF_RAW: a GGUF at byte q->offset of the device, for a client
 * with raw access. Returns its new handle slot, or -1 after replying. */
GPUOS_HD static int open_raw(struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	struct rt_handle *hd;
	int slot;

	if (!(d->flags & GPUOS_RT_ALLOW_RAW)) {
		files_reply(F, q, GPUOS_ST_DENIED, 0, 0, "a raw GGUF needs raw access (--allow-raw)");
		return -1;
	}
	if (!files_may_raw(F, q)) { /* the service allows them, but not to this client */
		files_reply(F, q, GPUOS_ST_DENIED, 0, 0,
			    "a raw GGUF needs raw access, which this service gives only to root and its own user");
		return -1;
	}
	if (q->offset >= ns_bytes) {
		files_reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "offset past the end of the device");
		return -1;
	}
	if ((slot = files_alloc_handle(F, q)) < 0)
		return -1;
	hd = &F->h[slot];
	hd->kind = H_FILE;
	hd->map = H_MAP_RAW;
	hd->base = q->offset;
	hd->size = ns_bytes - q->offset;
	hd->block_bits = 12;
	hd->next = 0;
	hd->model = -1;
	return slot;
}

/* The model file the request names (or what a name that is no file
 * stands for: runtime/model/model.h), opened into model slot m whatever
 * format it holds. Returns the model's handle slot, or -1 after replying. */
GPUOS_HD static int open_named(struct rt_files *F, const struct mreq *q, uint32_t m)
{
	uint32_t i;
	int slot;

	if (!files_take_path(F, q))
		return -1;
	if (!(q->flags & GPUOS_GGUF_SHARD) && files_lookup_path(F, q, 0) == -ENOENT)
		gpuos_model_name(F, q);
	if ((slot = files_open_model_file(F, q, 0, 0)) < 0)
		return -1;
	i = (uint32_t)slot;
	/* The format is what the file holds, whatever its name. */
	return gpuos_model_open(F, q, m, i, gpuos_model_detect(F, i));
}

GPUOS_NOINLINE GPUOS_HD void files_op_model_open(struct rt_files *F, const struct mreq *q)
{
	uint32_t m;
	int slot;

	if (q->flags & ~(GPUOS_GGUF_RAW | GPUOS_GGUF_SHARD)) {
		files_reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	for (m = 0; m < GPUOS_RT_MODELS && F->model_owner[m]; m++)
		;
	if (m == GPUOS_RT_MODELS) {
		files_reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open models (4)");
		return;
	}
	F->mfiles[m].n = 0;
	if (q->flags & GPUOS_GGUF_RAW) {
		/* raw bytes have no format to detect: GGUF's, as the flag says */
		slot = open_raw(F, q);
		if (slot >= 0)
			slot = gpuos_model_open(F, q, m, (uint32_t)slot, GPUOS_MODEL_GGUF);
	} else {
		slot = open_named(F, q, m);
	}
	if (slot >= 0)
		files_model_opened(F, q, m, (uint32_t)slot);
}

/* Handle slot i holds model m, parsed: make it the model's handle and answer. */
GPUOS_HD void files_model_opened(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i)
{
	struct rt_handle *hd = &F->h[i];
	hd->kind = H_MODEL;
	hd->model = (int32_t)m;
	F->model_owner[m] = (int32_t)i + 1;
	files_reply(F, q, GPUOS_ST_OK, handle_number(hd, i), F->model[m].n_tensors, 0);
}

/* ---- reading the tables ------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD void files_op_model_info(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, 1u << H_MODEL);
	const struct gpuos_gguf *g;
	struct gpuos_gguf_export *x = (struct gpuos_gguf_export *)(uintptr_t)q->dst;
	uint64_t t_bytes, k_bytes, total;

	if (!hd)
		return;
	if (!files_struct_dst(F, q, sizeof(*x), "destination shorter than struct gpuos_gguf_export"))
		return;
	g = &F->model[hd->model];
	t_bytes = (uint64_t)g->n_tensors * sizeof(struct gpuos_gguf_tensor);
	k_bytes = (uint64_t)g->n_kv * sizeof(struct gpuos_gguf_kv);
	x->version = g->version;
	x->alignment = g->alignment;
	x->tensor_count = g->tensor_count;
	x->kv_count = g->kv_count;
	x->data_offset = g->data_offset;
	x->file_size = g->file_size;
	x->data_end = g->data_end;
	x->n_layers = g->n_layers;
	x->flags = g->flags;
	x->tensors_off = sizeof(*x);
	x->kv_off = x->tensors_off + t_bytes;
	x->arena_off = gpuos_align_line(x->kv_off + k_bytes);
	x->arena_len = g->arena_used;
	total = x->arena_off + x->arena_len;
	x->total = total;
	x->complete = 0;
	x->shards = F->mfiles[hd->model].n;
	x->split_no = F->mfiles[hd->model].split_no;
	x->split_count = F->mfiles[hd->model].split_count;
	if (q->length >= total) {
		gpuos_buf_copy((uint8_t *)x + x->tensors_off, g->mem.tensors, t_bytes);
		gpuos_buf_copy((uint8_t *)x + x->kv_off, g->mem.kv, k_bytes);
		gpuos_buf_copy((uint8_t *)x + x->arena_off, g->mem.arena, x->arena_len);
		x->complete = 1;
	}
	files_reply(F, q, GPUOS_ST_OK, total, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_model_find(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, 1u << H_MODEL);
	uint32_t st;
	int r;
	if (!hd)
		return;
	if ((st = files_take_string(F, q, GPUOS_GGUF_NAME_MAX)) != GPUOS_ST_OK) {
		files_reply(F, q, st, 0, 0, st == GPUOS_ST_NAMETOOLONG ? "tensor name too long" : "name outside registered memory");
		return;
	}
	r = gpuos_gguf_find(&F->model[hd->model], F->path);
	if (r < 0) {
		files_reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such tensor");
		return;
	}
	files_reply(F, q, GPUOS_ST_OK, (uint64_t)r, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_model_tensor(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, 1u << H_MODEL);
	const struct gpuos_gguf *g;
	if (!hd)
		return;
	g = &F->model[hd->model];
	if (!q->dst || q->length < sizeof(struct gpuos_gguf_tensor) || !files_req_mem(F, q, q->dst, q->length)) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (q->arg >= g->n_tensors) {
		files_reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "no tensor with this index");
		return;
	}
	gpuos_buf_copy((void *)(uintptr_t)q->dst, &g->mem.tensors[q->arg], sizeof(struct gpuos_gguf_tensor));
	files_reply(F, q, GPUOS_ST_OK, 0, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_model_layer(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, 1u << H_MODEL);
	uint32_t count = 0;
	int r;
	if (!hd)
		return;
	if (q->length && (!q->dst || (q->dst & 3u) || !files_req_mem(F, q, q->dst, q->length))) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (q->arg > GPUOS_GGUF_MAX_LAYER) {
		files_reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such layer");
		return;
	}
	r = gpuos_gguf_layer(&F->model[hd->model], (uint32_t)q->arg, (uint32_t *)(uintptr_t)q->dst,
			     (uint32_t)GPUOS_MIN(q->length / 4u, (uint64_t)UINT32_MAX), &count);
	if (r == -ENOENT) {
		files_reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such layer");
		return;
	}
	/* -ENOSPC: the first ones are written; result says how many there are. */
	files_reply(F, q, r ? GPUOS_ST_NOSPC : GPUOS_ST_OK, count, 0, r ? "more tensors in the layer than dst holds" : 0);
}
