/* SPDX-License-Identifier: MIT */
/*
 * "gpu-null": the loopback controller of kernels/loopback.cuh behind the ops
 * table. No register file and no admin queue: its hooks (boot/ctrl/ctrl.h) stand
 * in for bring-up (identity), Set Features (grant) and Create I/O SQ/CQ
 * (queues), and start the loopback kernel before the runtime and stop it
 * after. Everything that is gpu-null's alone lives in this file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bringup.h"
#include "ctrl.h"
#include "gpuos/internal/loopback.h"

struct loop_priv {
	struct gpuos_dma desc;   /* struct gpuos_loop_desc in VRAM */
	struct gpuos_dma dbs;    /* doorbells: two uint32 per queue, VRAM */
	struct gpuos_loop_desc host; /* host copy, written once before launch */
	int running;
};

static int loop_stop(struct gpuos_ctrl *c, char *err, size_t errlen);

static int loop_parse(const char *args, char *err, size_t errlen)
{
	if (*args) {
		snprintf(err, errlen, "device 'gpu-null%s': takes no options", args);
		return -EINVAL;
	}
	return 0;
}

static int loop_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	struct loop_priv *p;
	if (loop_parse(args, err, errlen))
		return -EINVAL;
	if (!c->gpu) {
		snprintf(err, errlen, "gpu-null runs on the GPU, and there is none here (or --host was given)");
		return -ENODEV;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->priv = p;
	return 0;
}

static void loop_close(struct gpuos_ctrl *c)
{
	struct loop_priv *p = (struct loop_priv *)c->priv;
	if (!p)
		return;
	if (p->running)
		loop_stop(c, NULL, 0);
	if (p->desc.len)
		gpuos_dma_free(c, &p->desc);
	if (p->dbs.len)
		gpuos_dma_free(c, &p->dbs);
	free(p);
	c->priv = NULL;
}

/* The loopback reads VRAM by its GPU address: IOVA = address. */
static int loop_map(struct gpuos_ctrl *c, void *ptr, size_t len, int vram, uint64_t *iova)
{
	(void)c;
	(void)len;
	(void)vram;
	*iova = (uint64_t)(uintptr_t)ptr;
	return 0;
}

static void loop_unmap(struct gpuos_ctrl *c, uint64_t iova, size_t len)
{
	(void)c;
	(void)iova;
	(void)len;
}

static void loop_describe(struct gpuos_ctrl *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "gpu-null loopback");
}


/* Nothing to bring up; it answers like a 1 TiB namespace. */
static void loop_identity(struct gpuos_ctrl *c, uint32_t m, struct gpuos_nvme_dev *d)
{
	(void)m;
	memset(d, 0, sizeof(*d));
	d->c = c;
	d->vs = GPUOS_NVME_VS(2, 0, 0);
	d->mqes = 4096;
	d->to_ms = 10000;
	d->lba_bytes = 512;
	d->ns_lbas = 1ull << 31;
	d->nsid = 1;
	d->nn = 1;
	snprintf(d->model, sizeof(d->model), "gpuos gpu-null loopback");
	snprintf(d->serial, sizeof(d->serial), "gpu-null");
	snprintf(d->firmware, sizeof(d->firmware), "1.0");
}

/* Whatever it is asked, as many queues as the kernel serves at most
 * (loop_queues refuses more). */
static uint32_t loop_grant(struct gpuos_ctrl *c, uint32_t want)
{
	(void)c;
	return GPUOS_MIN(want, GPUOS_LOOP_MAX_QUEUES);
}

/* nq queue pairs of depth entries in VRAM and their doorbells. */
static int loop_queues(struct gpuos_ctrl *c, uint32_t nq, uint32_t depth, struct gpuos_dma *sq, struct gpuos_dma *cq,
		       uint64_t *sq_db, uint64_t *cq_db, char *err, size_t errlen)
{
	struct loop_priv *p = (struct loop_priv *)c->priv;
	uint32_t q;
	int r;

	if (nq > GPUOS_LOOP_MAX_QUEUES) {
		snprintf(err, errlen, "gpu-null: at most %u queues", GPUOS_LOOP_MAX_QUEUES);
		return -EINVAL;
	}
	r = gpuos_dma_alloc(c, (size_t)nq * 2u * sizeof(uint32_t), GPUOS_MEM_VRAM, 0, &p->dbs);
	if (!r)
		r = gpuos_dma_alloc(c, sizeof(struct gpuos_loop_desc), GPUOS_MEM_VRAM, 0, &p->desc);
	if (r) {
		snprintf(err, errlen, "gpu-null: allocate doorbells: %s", strerror(-r));
		return r;
	}
	memset(&p->host, 0, sizeof(p->host));
	p->host.nqueues = nq;
	p->host.nwarps = nq < 8u ? nq : 8u;
	for (q = 0; q < nq; q++) {
		struct gpuos_loop_queue *lq = &p->host.q[q];
		r = gpuos_dma_alloc(c, (size_t)depth * sizeof(struct gpuos_nvme_sqe), GPUOS_MEM_VRAM, 0, &sq[q]);
		if (!r)
			r = gpuos_dma_alloc(c, (size_t)depth * sizeof(struct gpuos_nvme_cqe), GPUOS_MEM_VRAM, 0, &cq[q]);
		if (r) {
			snprintf(err, errlen, "gpu-null: allocate queue %u: %s", q + 1, strerror(-r));
			return r;
		}
		lq->sq = sq[q].rt;
		lq->cq = cq[q].rt;
		lq->sq_db = sq_db[q] = p->dbs.rt + (uint64_t)q * 8u;
		lq->cq_db = cq_db[q] = p->dbs.rt + (uint64_t)q * 8u + 4u;
		lq->qid = q + 1;
		lq->depth = depth;
		lq->phase = 1;
	}
	return 0;
}

/* The loopback kernel, before the runtime's. */
static int loop_start(struct gpuos_ctrl *c, const void *image, char *err, size_t errlen)
{
	struct loop_priv *p = (struct loop_priv *)c->priv;
	int r;
	if (p->running)
		return 0;
	p->host.stop = 0;
	/* The whole descriptor, with the queues' progress of an earlier run
	 * refreshed from VRAM so a restart after park continues where it was. */
	if (p->host.commands || p->host.q[0].sq_head || p->host.q[0].cq_tail) {
		r = gpuos_gpu_copy(c->gpu, &p->host, (void *)(uintptr_t)p->desc.rt, sizeof(p->host), 0);
		if (r)
			return r;
		p->host.stop = 0;
	}
	r = gpuos_gpu_copy(c->gpu, (void *)(uintptr_t)p->desc.rt, &p->host, sizeof(p->host), 1);
	if (r) {
		snprintf(err, errlen, "gpu-null: copy descriptor: %s", strerror(-r));
		return r;
	}
	r = gpuos_gpu_launch(c->gpu, GPUOS_STREAM_LOOP, image, "gpuos_loop_kernel", p->desc.rt, p->host.nwarps, 32,
			     err, errlen);
	if (!r)
		p->running = 1;
	return r;
}

/* After the runtime has drained. */
static int loop_stop(struct gpuos_ctrl *c, char *err, size_t errlen)
{
	struct loop_priv *p = (struct loop_priv *)c->priv;
	uint32_t one = 1;
	char dummy[128];
	int r;
	if (!p->running)
		return 0;
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	/* Pairs with the loopback warps' acquire load of stop. */
	r = gpuos_gpu_copy(c->gpu, (void *)(uintptr_t)p->desc.rt, &one, sizeof(one), 1);
	if (!r)
		r = gpuos_gpu_wait(c->gpu, GPUOS_STREAM_LOOP, err, errlen);
	p->running = 0;
	/* keep the progress for a restart */
	if (!r)
		r = gpuos_gpu_copy(c->gpu, &p->host, (void *)(uintptr_t)p->desc.rt, sizeof(p->host), 0);
	return r;
}

const struct gpuos_ctrl_ops gpuos_ctrl_gpunull_ops = {
	.prefix = "gpu-null",
	.open = loop_open,
	.parse = loop_parse,
	.close = loop_close,
	.map = loop_map,
	.unmap = loop_unmap,
	.describe = loop_describe,
	.identity = loop_identity,
	.grant = loop_grant,
	.queues = loop_queues,
	.start = loop_start,
	.stop = loop_stop,
	.on_gpu = 1,
};
