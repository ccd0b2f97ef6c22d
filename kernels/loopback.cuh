// SPDX-License-Identifier: MIT
// The gpu-null loopback controller (include/gpuos/internal/loopback.h): one warp
// serves its queues; for each new SQE (lane per entry) it posts a success
// CQE at once. Doorbells are plain VRAM words the runtime writes with its
// MMIO stores.
//
// It must cost the runtime as little as a fast controller would: it is the
// yardstick of the runtime's own ceiling. So each warp keeps its queues'
// state in shared memory, polls every doorbell of its queues at once (lane
// per queue) with relaxed loads, which leave L1 alone, and takes acquire
// semantics (a fence) only when a doorbell moved.
#include "gpuos/internal/loopback.h"

struct loop_q {              // one queue's state while the kernel runs
	struct gpuos_nvme_sqe *sq;
	struct gpuos_nvme_cqe *cq;
	const uint32_t *sq_db, *cq_db;
	uint32_t qid, depth;
	uint32_t sq_head, cq_tail, phase;
	uint32_t cq_head;        // the driver's CQ head as last read
};

// v mod depth for v < 2 * depth (a division is dozens of instructions).
static __device__ __forceinline__ uint32_t loop_wrap(uint32_t v, uint32_t depth)
{
	return v >= depth ? v - depth : v;
}

// All lanes: post CQEs for the new SQEs of queue q (tail: its doorbell).
static __device__ uint32_t loop_serve(struct loop_q *q, uint32_t tail)
{
	const uint32_t lane = gpuos_lane_id();
	uint32_t head = q->sq_head, ctail = q->cq_tail, phase = q->phase, depth = q->depth;
	uint32_t cq_head = q->cq_head, avail, room, n;

	if (tail >= depth)
		return 0; // a driver bug; a real controller would set CFS
	avail = loop_wrap(tail + depth - head, depth);
	room = depth - 1u - loop_wrap(ctail + depth - cq_head, depth); // never fill the CQ completely
	if (room < avail) {
		// The CQ head as of now: a round trip, only when the head we
		// know leaves too little room.
		cq_head = gpuos_load_relaxed_dev32(q->cq_db);
		if (cq_head >= depth)
			return 0;
		if (lane == 0)
			q->cq_head = cq_head;
		room = depth - 1u - loop_wrap(ctail + depth - cq_head, depth);
	}
	// Acquire pattern with the relaxed doorbell loads: pairs with the
	// runtime's fence before its doorbell store, so the SQEs up to the
	// tail are visible; and we reuse CQ entries only after the runtime's
	// head store says it is done reading them.
	gpuos_fence_dev();
	n = avail < room ? avail : room;
	if (n > 32u)
		n = 32u;
	if (n == 0)
		return 0;
	if (lane < n) {
		uint32_t si = loop_wrap(head + lane, depth); // lane < n < depth
		uint32_t ci = ctail + lane, ph = phase;
		uint16_t cid = q->sq[si].cid;
		struct gpuos_nvme_cqe *cqe;
		if (ci >= depth) {
			ci -= depth;
			ph ^= 1u;
		}
		cqe = q->cq + ci;
#ifdef GPUOS_TRACE
		{ // when the command was seen (dw0/dw1 are reserved for a read)
			uint64_t t = gpuos_now_ns();
			cqe->dw0 = (uint32_t)t;
			cqe->dw1 = (uint32_t)(t >> 32);
		}
#else
		cqe->dw0 = 0;
		cqe->dw1 = 0;
#endif
		// SQ head as of after this batch: entries before it may be reused.
		*(volatile uint32_t *)&cqe->sqhd = loop_wrap(head + n, depth) | (q->qid << 16);
		// Dwords 0-2 before the phase tag: pairs with the runtime's
		// acquire load of dword 3 in gpuos_qp_cq_peek.
		gpuos_store_release_dev32((uint32_t *)&cqe->cid, (uint32_t)cid | (ph << 16));
	}
	__syncwarp();
	if (lane == 0) {
		q->sq_head = loop_wrap(head + n, depth);
		ctail += n;
		if (ctail >= depth) {
			ctail -= depth;
			q->phase = phase ^ 1u;
		}
		q->cq_tail = ctail;
	}
	__syncwarp();
	return n;
}

extern "C" __global__ void __launch_bounds__(32) gpuos_loop_kernel(struct gpuos_loop_desc *ld)
{
	__shared__ struct loop_q lq[(GPUOS_LOOP_MAX_QUEUES + 31u) / 32u * 32u];
	const uint32_t w = blockIdx.x, lane = gpuos_lane_id();
	uint32_t nw = ld->nwarps, nq = ld->nqueues, mine, i;
	unsigned long long done = 0;

	if (w >= nw)
		return;
	// This warp's queues are w, w + nw, ...: entry i of lq is queue w + i * nw.
	mine = nq > w ? (nq - w + nw - 1u) / nw : 0u;
	for (i = lane; i < mine; i += 32u) {
		const struct gpuos_loop_queue *g = &ld->q[w + i * nw];
		lq[i].sq = (struct gpuos_nvme_sqe *)(uintptr_t)g->sq;
		lq[i].cq = (struct gpuos_nvme_cqe *)(uintptr_t)g->cq;
		lq[i].sq_db = (const uint32_t *)(uintptr_t)g->sq_db;
		lq[i].cq_db = (const uint32_t *)(uintptr_t)g->cq_db;
		lq[i].qid = g->qid;
		lq[i].depth = g->depth;
		lq[i].sq_head = g->sq_head;
		lq[i].cq_tail = g->cq_tail;
		lq[i].phase = g->phase;
		// The head as of now; later it only falls behind the driver's,
		// which understates the room (safe) until it is read again.
		lq[i].cq_head = gpuos_load_relaxed_dev32(lq[i].cq_db);
	}
	__syncwarp();
	for (uint32_t it = 0;; it++) {
		// The host's copy of stop lands in VRAM; a relaxed load sees it.
		// Now and then: it is an L2 round trip.
		if ((it & 63u) == 0 && gpuos_load_relaxed_sys32(&ld->stop))
			break;
		for (i = 0; i < mine; i += 32u) {
			uint32_t k = i + lane, tail = 0, moved;
			if (k < mine)
				tail = gpuos_load_relaxed_dev32(lq[k].sq_db);
			moved = __ballot_sync(0xffffffffu, k < mine && tail != lq[k].sq_head);
			while (moved) {
				uint32_t b = __ffs(moved) - 1u;
				moved &= moved - 1u;
				done += loop_serve(&lq[i + b], __shfl_sync(0xffffffffu, tail, b));
			}
		}
	}
	// Progress goes back to the descriptor for a restart after park.
	for (i = lane; i < mine; i += 32u) {
		struct gpuos_loop_queue *g = &ld->q[w + i * nw];
		g->sq_head = lq[i].sq_head;
		g->cq_tail = lq[i].cq_tail;
		g->phase = lq[i].phase;
	}
	if (lane == 0 && done)
		atomicAdd((unsigned long long *)&ld->commands, done);
}
