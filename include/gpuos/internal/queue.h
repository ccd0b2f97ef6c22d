/* SPDX-License-Identifier: MIT */
/*
 * include/gpuos/internal/queue.h - one NVMe queue pair, driven by one owner (a service warp
 * on the GPU, a runtime thread, or boot's admin code on the CPU: shared by
 * runtime/ and boot/, so it lives here, spec mechanics only). No locks:
 * the owner is the only writer of tail/head/phase. NVMe base spec 3.3 (queue
 * mechanics), 4.6 (completion entries, phase tag).
 *
 * Memory kinds stay apart: sq/cq are DMA memory the controller reads/writes,
 * sq_db/cq_db are MMIO registers.
 */
#ifndef GPUOS_QUEUE_H
#define GPUOS_QUEUE_H

#include "gpuos/nvme.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_qp {
	struct gpuos_nvme_sqe *sq;
	struct gpuos_nvme_cqe *cq;
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
	uint32_t depth;
	uint32_t qid;
	uint32_t sq_tail;    /* next SQ entry we write */
	uint32_t sq_head;    /* controller's SQ head as last reported in a CQE */
	uint32_t cq_head;    /* next CQ entry we expect */
	uint32_t phase;      /* phase tag of a new entry at cq_head */
	uint32_t dev;        /* 1: the controller is this GPU (gpu-null): device scope orders enough */
	uint32_t ahead;      /* entries written past sq_tail for the next doorbell (a batch being built) */
};

GPUOS_INLINE GPUOS_HD void gpuos_qp_init(struct gpuos_qp *qp, void *sq, void *cq,
					 volatile uint32_t *sq_db, volatile uint32_t *cq_db,
					 uint32_t depth, uint32_t qid)
{
	qp->sq = (struct gpuos_nvme_sqe *)sq;
	qp->cq = (struct gpuos_nvme_cqe *)cq;
	qp->sq_db = sq_db;
	qp->cq_db = cq_db;
	qp->depth = depth;
	qp->qid = qid;
	qp->sq_tail = 0;
	qp->sq_head = 0;
	qp->cq_head = 0;
	qp->phase = 1; /* the controller posts phase 1 on its first pass (4.6) */
	qp->dev = 0;
	qp->ahead = 0;
}

/* v mod depth for v < 2 * depth: a compare, where % is a division the GPU
 * does in software (dozens of dependent instructions on the service path). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_qp_wrap(const struct gpuos_qp *qp, uint32_t v)
{
	return v >= qp->depth ? v - qp->depth : v;
}

/* SQ entries we may still write: one slot stays empty so full != empty (3.3.1). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_qp_sq_space(const struct gpuos_qp *qp)
{
	uint32_t used = gpuos_qp_wrap(qp, qp->sq_tail + qp->depth - qp->sq_head);
	return qp->depth - 1u - used;
}

/* SQ entry `ahead` places past the tail (lanes fill several before one doorbell). */
GPUOS_INLINE GPUOS_HD struct gpuos_nvme_sqe *gpuos_qp_sq_entry(struct gpuos_qp *qp, uint32_t ahead)
{
	return &qp->sq[gpuos_qp_wrap(qp, qp->sq_tail + ahead)]; /* ahead < sq_space */
}

/* Make n written entries the controller's and tell it with one doorbell
 * store. Entries other lanes wrote must happen before this call (a warp
 * sync after their writes): the fence here is cumulative. */
GPUOS_INLINE GPUOS_HD void gpuos_qp_sq_ring(struct gpuos_qp *qp, uint32_t n)
{
	qp->sq_tail = gpuos_qp_wrap(qp, qp->sq_tail + n); /* n <= sq_space */
	/* Publish the SQEs (DMA memory) before the controller sees the new tail;
	 * pairs with the controller's SQE fetch after it reads the doorbell.
	 * Device scope where the controller is this GPU (gpu-null). */
	if (qp->dev)
		gpuos_fence_dev();
	else
		gpuos_fence_sys();
	gpuos_mmio_write32(qp->sq_db, qp->sq_tail);
}

/* gpuos_qp_sq_ring without the fence, for a batch over several queues:
 * the caller has already made every entry of the batch visible to the
 * controllers with one fence (gpuos_fence_sys, or gpuos_fence_dev where
 * qp->dev), which pairs with their SQE fetch after the doorbell. */
GPUOS_INLINE GPUOS_HD void gpuos_qp_sq_advance(struct gpuos_qp *qp, uint32_t n)
{
	qp->sq_tail = gpuos_qp_wrap(qp, qp->sq_tail + n); /* n <= sq_space */
	gpuos_mmio_write32(qp->sq_db, qp->sq_tail);
}

/* Copy one SQE into the next free slot (caller checked sq_space). */
GPUOS_INLINE GPUOS_HD void gpuos_qp_sq_put(struct gpuos_qp *qp, uint32_t ahead,
					   const struct gpuos_nvme_sqe *cmd)
{
	struct gpuos_nvme_sqe *s = gpuos_qp_sq_entry(qp, ahead);
	const uint64_t *src = (const uint64_t *)cmd;
	uint64_t *dst = (uint64_t *)s;
	int i;
	for (i = 0; i < 8; i++)
		dst[i] = src[i];
}

/*
 * Look at the CQ entry `ahead` places past the head. Returns 1 and fills
 * *out when the controller has posted it (phase tag matches), else 0.
 * The status/cid dword is loaded first with acquire at system scope; it pairs
 * with the controller writing the rest of the entry before the phase tag.
 */
GPUOS_INLINE GPUOS_HD int gpuos_qp_cq_peek(const struct gpuos_qp *qp, uint32_t ahead,
					   struct gpuos_nvme_cqe *out)
{
	uint32_t idx = qp->cq_head + ahead;
	uint32_t phase = qp->phase;
	const struct gpuos_nvme_cqe *e;
	uint32_t dw3;

	if (idx >= qp->depth) {
		idx -= qp->depth;
		phase ^= 1u;
	}
	e = &qp->cq[idx];
	dw3 = qp->dev ? gpuos_load_acquire_dev32((const uint32_t *)&e->cid)
		      : gpuos_load_acquire_sys32((const uint32_t *)&e->cid);
	if (((dw3 >> 16) & GPUOS_NVME_CQE_P) != phase)
		return 0;
	out->cid = (uint16_t)dw3;
	out->status = (uint16_t)(dw3 >> 16);
	out->dw0 = gpuos_load_relaxed_sys32(&e->dw0);
	out->dw1 = gpuos_load_relaxed_sys32(&e->dw1);
	{
		uint32_t dw2 = gpuos_load_relaxed_sys32((const uint32_t *)&e->sqhd);
		out->sqhd = (uint16_t)dw2;
		out->sqid = (uint16_t)(dw2 >> 16);
	}
	return 1;
}

/* Consume n entries (the last one consumed reported sqhd) and ring the CQ
 * head doorbell once. The controller may reuse the entries after it sees the
 * store; nothing to publish before it (we only read the entries). */
GPUOS_INLINE GPUOS_HD void gpuos_qp_cq_consume(struct gpuos_qp *qp, uint32_t n, uint16_t last_sqhd)
{
	uint32_t h = qp->cq_head + n;
	if (h >= qp->depth) {
		h -= qp->depth;
		qp->phase ^= 1u;
	}
	qp->cq_head = h;
	qp->sq_head = last_sqhd % qp->depth;
	gpuos_mmio_write32(qp->cq_db, h);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_QUEUE_H */
