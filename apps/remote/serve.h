/* SPDX-License-Identifier: MIT */
/*
 * apps/remote/serve.h - the server side of a remote load (gpuos/remote.h),
 * for host and device code alike: one thread polls every client's slots,
 * checks each new request, loads its bytes through this GPU's runtime (the
 * mailbox) and answers. Two ways for the bytes:
 *  - direct: where this GPU can write the client's receive buffer itself
 *    (NVSHMEM's nvshmem_ptr: a peer over NVLink or PCIe, or another
 *    process on this GPU), that mapping is registered with the runtime and
 *    the runtime loads straight into it, one request for the whole range;
 *  - put: chunk by chunk into a staging buffer registered with the
 *    runtime, each chunk handed to the transport's put (a NIC's RDMA over
 *    InfiniBand: one thread posts it, the NIC moves it).
 * The transport is the caller's: NVSHMEM's put, fence and put-with-signal
 * in apps/remote/remote.cu, memcpy and a release store in
 * tests/unit/test_remote.c. Files stay open between requests (a few, the
 * last named), closed by remote_close_all.
 */
#ifndef GPUOS_APPS_REMOTE_SERVE_H
#define GPUOS_APPS_REMOTE_SERVE_H

#include <stdint.h>

#include "gpuos/gpuos.h"
#include "gpuos/port.h"
#include "gpuos/remote.h"

/* What moves bytes to a client PE. put returns once src may be reused;
 * answer makes every put before it, and every byte the runtime wrote into
 * a direct buffer, visible to pe before the answer (a fence at system
 * scope, then the answer with its signal). */
struct remote_xport {
	void (*put)(void *ctx, uint32_t pe, uint64_t dst, const void *src, uint64_t len);
	void (*answer)(void *ctx, uint32_t pe, uint32_t slot, const struct gpuos_remote_res *res);
	void *ctx;
};

#define REMOTE_OPEN 4u            /* files kept open */

struct remote_server {
	struct gpuos_mbox *mb;        /* this GPU's runtime */
	uint8_t *direct[GPUOS_REMOTE_PES]; /* PE i's receive buffer as this GPU writes it, registered
	                              * with the runtime; NULL: staging and put */
	uint8_t *stage;               /* registered with it: the bytes on their way */
	uint64_t stage_bytes;
	char *name;                   /* registered, GPUOS_REMOTE_NAME_MAX: the name the runtime reads */
	uint32_t model;               /* the model TENSOR requests name tensors of (0: none) */
	uint64_t recv_bytes;          /* every PE's receive buffer */
	uint32_t npes, me;
	struct gpuos_remote_area *area; /* this PE's */
	struct remote_xport x;
	uint64_t seen[GPUOS_REMOTE_PES][GPUOS_REMOTE_SLOTS]; /* the last signal served in each slot */
	struct {
		char name[GPUOS_REMOTE_NAME_MAX];
		uint32_t h;               /* 0: free */
	} open[REMOTE_OPEN];
	uint32_t next_open;
	uint64_t served, failed, bytes;
};

GPUOS_INLINE GPUOS_HD int remote_same_name(const char *a, const char *b)
{
	uint32_t i;
	for (i = 0; i < GPUOS_REMOTE_NAME_MAX && a[i] == b[i]; i++)
		if (!a[i])
			return 1;
	return 0;
}

/* The handle of the file s->name, opened now or kept from before. */
GPUOS_INLINE GPUOS_HD uint32_t remote_file(struct remote_server *s, uint32_t *h)
{
	uint32_t i, st;
	for (i = 0; i < REMOTE_OPEN; i++)
		if (s->open[i].h && remote_same_name(s->open[i].name, s->name)) {
			*h = s->open[i].h;
			return GPUOS_ST_OK;
		}
	st = gpuos_open(s->mb, s->name, 0, h, 0, 0, 0);
	if (st != GPUOS_ST_OK)
		return st;
	i = s->next_open++ % REMOTE_OPEN;
	if (s->open[i].h)
		gpuos_close(s->mb, s->open[i].h);
	s->open[i].h = *h;
	for (st = 0; st < GPUOS_REMOTE_NAME_MAX; st++)
		s->open[i].name[st] = s->name[st];
	return GPUOS_ST_OK;
}

GPUOS_INLINE GPUOS_HD void remote_close_all(struct remote_server *s)
{
	uint32_t i;
	for (i = 0; i < REMOTE_OPEN; i++)
		if (s->open[i].h) {
			gpuos_close(s->mb, s->open[i].h);
			s->open[i].h = 0;
		}
}

/* off..off+len of an open file (handle h) or of tensor idx of the model,
 * put at dst of pe, chunk by chunk; *bytes what was put (short at a file's
 * end). */
GPUOS_INLINE GPUOS_HD uint32_t remote_move(struct remote_server *s, uint32_t pe, int tensor, uint32_t h,
					   uint32_t idx, uint64_t off, uint64_t len, uint64_t dst, uint64_t *bytes)
{
	uint32_t st = GPUOS_ST_OK;
	*bytes = 0;
	if (s->direct[pe]) /* straight into the client's buffer, by the runtime */
		return tensor ? gpuos_model_load(s->mb, s->model, idx, s->direct[pe] + dst, off, len, bytes)
			      : gpuos_read(s->mb, h, off, len, s->direct[pe] + dst, bytes);
	while (st == GPUOS_ST_OK && *bytes < len) {
		uint64_t n = len - *bytes < s->stage_bytes ? len - *bytes : s->stage_bytes, got = 0;
		st = tensor ? gpuos_model_load(s->mb, s->model, idx, s->stage, off + *bytes, n, &got)
			    : gpuos_read(s->mb, h, off + *bytes, n, s->stage, &got);
		if (st != GPUOS_ST_OK || got == 0)
			break;
		s->x.put(s->x.ctx, pe, dst + *bytes, s->stage, got);
		*bytes += got;
		if (got < n)
			break; /* the file ends here */
	}
	return st;
}

/* One request of client pe (already copied out of the slot). */
GPUOS_INLINE GPUOS_HD uint32_t remote_serve(struct remote_server *s, uint32_t pe, const struct gpuos_remote_req *rq,
					    uint64_t *bytes)
{
	uint32_t st = gpuos_remote_check(rq, s->recv_bytes), h = 0, i;
	uint64_t len = rq->length;
	*bytes = 0;
	if (st != GPUOS_ST_OK)
		return st;
	for (i = 0; i < GPUOS_REMOTE_NAME_MAX; i++) /* the checked name, where the runtime can read it */
		s->name[i] = rq->name[i];
	if (rq->op == GPUOS_REMOTE_RANGE) {
		st = remote_file(s, &h);
		return st == GPUOS_ST_OK ? remote_move(s, pe, 0, h, 0, rq->offset, len, rq->dst, bytes) : st;
	}
	if (!s->model)
		return GPUOS_ST_NOENT; /* this server serves no model */
	{
		struct gpuos_gguf_tensor *t = (struct gpuos_gguf_tensor *)s->stage; /* registered, and free now */
		uint32_t idx = 0;
		st = gpuos_model_find(s->mb, s->model, s->name, &idx);
		if (st == GPUOS_ST_OK)
			st = gpuos_model_tensor(s->mb, s->model, idx, t);
		if (st != GPUOS_ST_OK)
			return st;
		if (rq->offset > t->size)
			return GPUOS_ST_BAD_RANGE;
		if (len == 0 || len > t->size - rq->offset)
			len = t->size - rq->offset;
		if (len > s->recv_bytes - rq->dst)
			return GPUOS_ST_BAD_DST; /* "to its end" does not fit where it should go */
		return remote_move(s, pe, 1, 0, idx, rq->offset, len, rq->dst, bytes);
	}
}

/* One pass over every client's slots: serve each new request, answer it.
 * Returns how many were served. A slot whose signal went down, or whose
 * request carries another seq than its signal, is answered CORRUPT. */
GPUOS_INLINE GPUOS_HD uint32_t remote_poll(struct remote_server *s)
{
	uint32_t pe, k, n = 0;
	for (pe = 0; pe < s->npes; pe++) {
		if (pe == s->me)
			continue;
		for (k = 0; k < GPUOS_REMOTE_SLOTS; k++) {
			/* acquire: pairs with the transport's signal, which comes
			 * after the request's bytes (put with signal) */
			uint64_t sig = gpuos_load_acquire_sys64(&s->area->req_sig[pe][k]);
			struct gpuos_remote_req rq;
			struct gpuos_remote_res res;
			if (sig == s->seen[pe][k])
				continue;
			rq = s->area->req[pe][k];
			res.seq = (uint32_t)sig;
			res.bytes = 0;
			res.status = sig < s->seen[pe][k] || sig > 0xffffffffull || rq.seq != (uint32_t)sig
					     ? (uint32_t)GPUOS_ST_CORRUPT
					     : remote_serve(s, pe, &rq, &res.bytes);
			s->seen[pe][k] = sig; /* whole: a signal past 2^32 is answered once, not on every pass */
			s->x.answer(s->x.ctx, pe, k, &res);
			s->served++;
			s->failed += res.status != GPUOS_ST_OK;
			s->bytes += res.bytes;
			n++;
		}
	}
	return n;
}

#endif /* GPUOS_APPS_REMOTE_SERVE_H */
