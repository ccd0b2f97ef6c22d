/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_model.c - GGUF models in the metadata warp (files.h): a
 * model handle parses its file (gguf.h) into tables of the files region;
 * GGUF_OPEN, INFO, FIND, TENSOR and LAYER read them, and the service warps
 * find a tensor's bytes through gpuos_rt_files_tensor.
 */
#include "files_internal.h"

/* ---- GGUF ---------------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD int gpuos_rt_files_tensor(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				   uint64_t idx, uint64_t *off, uint64_t *size)
{
	const struct gpuos_gguf *g;
	if (hd->model < 0 || (uint32_t)hd->model >= GPUOS_RT_MODELS)
		return -EINVAL;
	g = &files_of(d)->model[hd->model];
	if (idx >= g->n_tensors)
		return -ENOENT;
	*off = g->mem.tensors[idx].abs_off;
	*size = g->mem.tensors[idx].size;
	return 0;
}

GPUOS_HD static void gguf_mem(const struct gpuos_rt_desc *d, uint32_t m, struct gpuos_gguf_mem *mem)
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

GPUOS_NOINLINE GPUOS_HD void files_op_gguf_open(struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	struct rt_handle *hd;
	struct gpuos_gguf *g;
	uint32_t i, m;
	int slot, r;

	if (q->flags & ~GPUOS_GGUF_RAW) {
		files_reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	for (m = 0; m < GPUOS_RT_MODELS && F->model_owner[m]; m++)
		;
	if (m == GPUOS_RT_MODELS) {
		files_reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open models (4)");
		return;
	}
	if (q->flags & GPUOS_GGUF_RAW) {
		if (!(d->flags & GPUOS_RT_ALLOW_RAW)) {
			files_reply(F, q, GPUOS_ST_DENIED, 0, 0, "a raw GGUF needs raw access (--allow-raw)");
			return;
		}
		if (q->offset >= ns_bytes) {
			files_reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "offset past the end of the device");
			return;
		}
		if ((slot = files_alloc_handle(F, q)) < 0)
			return;
		i = (uint32_t)slot;
		hd = &F->h[i];
		hd->kind = H_FILE;
		hd->map = H_MAP_RAW;
		hd->base = q->offset;
		hd->size = ns_bytes - q->offset;
		hd->block_bits = 12;
		hd->next = 0;
		hd->model = -1;
	} else {
		if (!files_lookup_read(F, q)) /* GGUF_OPEN has no NOFOLLOW: symlinks are followed */
			return;
		if (F->ino.type == GPUOS_EXT4_FT_DIR) {
			files_reply(F, q, GPUOS_ST_ISDIR, 0, 0, 0);
			return;
		}
		if ((slot = files_open_inode(F, q, "a GGUF in inline data or a special file")) < 0)
			return;
		i = (uint32_t)slot;
		hd = &F->h[i];
	}
	/* Parse through the handle's own map. */
	F->io_file.F = F;
	F->io_file.handle = i;
	F->io_file.hint = 0;
	F->mio_file.read = files_io_file_read;
	F->mio_file.ctx = &F->io_file;
	F->mio_file.size = hd->size;
	g = &F->model[m];
	gguf_mem(d, m, &g->mem);
	r = gpuos_gguf_parse(g, &F->gp, &F->mio_file);
	if (r) {
		struct sbuf sb;
		char buf[WHY_MAX];
		hd->kind = H_FREE;
		sb.p = buf;
		sb.n = 0;
		sb.cap = sizeof(buf);
		if (r == -EPROTONOSUPPORT) {
			sb_str(&sb, "unsupported GGUF: ");
			sb_str(&sb, F->gp.why);
			if (F->gp.bad) {
				sb_str(&sb, " (");
				sb_num(&sb, F->gp.bad);
				sb_str(&sb, ")");
			}
		} else if (r == -ENOSPC) {
			sb_str(&sb, "GGUF too large for the runtime's tables (at most ");
			sb_num(&sb, GPUOS_RT_MODEL_TENSORS);
			sb_str(&sb, " tensors, ");
			sb_num(&sb, GPUOS_RT_MODEL_KV);
			sb_str(&sb, " KVs, ");
			sb_num(&sb, GPUOS_RT_MODEL_ARENA >> 20);
			sb_str(&sb, " MiB of keys and strings)");
		} else if (r == -EIO) {
			files_reply_err(F, q, r, "cannot read the GGUF", 0);
			return;
		} else {
			sb_str(&sb, "corrupt GGUF: ");
			sb_str(&sb, F->gp.why);
			if (F->gp.err_tensor >= 0) {
				sb_str(&sb, " (tensor ");
				sb_num(&sb, (uint64_t)F->gp.err_tensor);
				sb_str(&sb, " '");
				sb_str(&sb, F->gp.subject);
				sb_str(&sb, "')");
			} else if (F->gp.err_kv >= 0) {
				sb_str(&sb, " (KV ");
				sb_num(&sb, (uint64_t)F->gp.err_kv);
				if (F->gp.subject[0]) {
					sb_str(&sb, " '");
					sb_str(&sb, F->gp.subject);
					sb_str(&sb, "'");
				}
				sb_str(&sb, ")");
			}
			if (F->gp.bad) {
				sb_str(&sb, " [value ");
				sb_num(&sb, F->gp.bad);
				sb_str(&sb, "]");
			}
		}
		files_reply(F, q, r == -ENOSPC ? GPUOS_ST_NOSPC : r == -EPROTONOSUPPORT ? GPUOS_ST_UNSUPPORTED : GPUOS_ST_CORRUPT,
			    0, 0, buf);
		return;
	}
	hd->kind = H_MODEL;
	hd->model = (int32_t)m;
	F->model_owner[m] = (int32_t)i + 1;
	files_reply(F, q, GPUOS_ST_OK, handle_number(hd, i), g->n_tensors, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_gguf_info(struct rt_files *F, const struct mreq *q)
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
	if (q->length >= total) {
		gpuos_buf_copy((uint8_t *)x + x->tensors_off, g->mem.tensors, t_bytes);
		gpuos_buf_copy((uint8_t *)x + x->kv_off, g->mem.kv, k_bytes);
		gpuos_buf_copy((uint8_t *)x + x->arena_off, g->mem.arena, x->arena_len);
		x->complete = 1;
	}
	files_reply(F, q, GPUOS_ST_OK, total, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_gguf_find(struct rt_files *F, const struct mreq *q)
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

GPUOS_NOINLINE GPUOS_HD void files_op_gguf_tensor(struct rt_files *F, const struct mreq *q)
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

GPUOS_NOINLINE GPUOS_HD void files_op_gguf_layer(struct rt_files *F, const struct mreq *q)
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
