// SPDX-License-Identifier: MIT
// The gpu-null loopback controller (include/gpuos/loopback.h): one warp
// serves its queues; for each new SQE (lane per entry) it posts a success
// CQE at once. Doorbells are plain VRAM words the runtime writes with its
// MMIO stores; CQEs are written dwords 0-2 first, then dword 3 (cid, status
// with the phase tag) with a release store, pairing with the runtime's
// acquire load of that dword in gpuos_qp_cq_peek.
#include "gpuos/loopback.h"

static __device__ void loop_serve(struct gpuos_loop_desc *ld, struct gpuos_loop_queue *q)
{
	const uint32_t lane = gpuos_lane_id();
	// Pairs with the runtime's device-scope fences before its doorbell
	// store: SQEs up to the tail are visible once the tail is.
	uint32_t tail = gpuos_load_acquire_dev32((const uint32_t *)(uintptr_t)q->sq_db);
	uint32_t cq_head = gpuos_load_acquire_dev32((const uint32_t *)(uintptr_t)q->cq_db);
	uint32_t head = q->sq_head, ctail = q->cq_tail, phase = q->phase, depth = q->depth;
	uint32_t avail, room, n;

	if (tail >= depth || cq_head >= depth)
		return; // a driver bug; a real controller would set CFS
	avail = (tail + depth - head) % depth;
	room = depth - 1u - (ctail + depth - cq_head) % depth; // never fill the CQ completely
	n = avail < room ? avail : room;
	if (n > 32u)
		n = 32u;
	if (n == 0)
		return;
	if (lane < n) {
		uint32_t si = (head + lane) % depth;
		uint32_t ci = ctail + lane, ph = phase;
		const struct gpuos_nvme_sqe *sqe = (const struct gpuos_nvme_sqe *)(uintptr_t)q->sq + si;
		struct gpuos_nvme_cqe *cqe;
		uint16_t cid = sqe->cid;
		if (ci >= depth) {
			ci -= depth;
			ph ^= 1u;
		}
		cqe = (struct gpuos_nvme_cqe *)(uintptr_t)q->cq + ci;
#ifdef GPUOS_TRACE
		{ /* when the command was seen (dw0/dw1 are reserved for a read) */
			uint64_t t = gpuos_now_ns();
			cqe->dw0 = (uint32_t)t;
			cqe->dw1 = (uint32_t)(t >> 32);
		}
#else
		cqe->dw0 = 0;
		cqe->dw1 = 0;
#endif
		// SQ head as of after this batch: entries before it may be reused.
		*(volatile uint32_t *)&cqe->sqhd = ((head + n) % depth) | (q->qid << 16);
		gpuos_store_release_dev32((uint32_t *)&cqe->cid, (uint32_t)cid | (ph << 16));
	}
	__syncwarp();
	if (lane == 0) {
		q->sq_head = (head + n) % depth;
		ctail += n;
		if (ctail >= depth) {
			ctail -= depth;
			q->phase = phase ^ 1u;
		}
		q->cq_tail = ctail;
		atomicAdd((unsigned long long *)&ld->commands, (unsigned long long)n);
	}
	__syncwarp();
}

extern "C" __global__ void __launch_bounds__(32) gpuos_loop_kernel(struct gpuos_loop_desc *ld)
{
	const uint32_t w = blockIdx.x;
	if (w >= ld->nwarps)
		return;
	for (;;) {
		// The host's copy of stop lands in VRAM; a relaxed load sees it.
		if (gpuos_load_relaxed_sys32(&ld->stop))
			break;
		for (uint32_t q = w; q < ld->nqueues; q += ld->nwarps)
			loop_serve(ld, &ld->q[q]);
	}
}
