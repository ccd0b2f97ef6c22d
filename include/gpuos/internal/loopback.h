/* SPDX-License-Identifier: MIT */
/*
 * gpuos/internal/loopback.h - the `gpu-null` controller: an NVMe-shaped loopback that
 * runs on the GPU itself (kernels/loopback.cuh). Queues and doorbells live in
 * VRAM (Tier 3 layout); every command completes at once with success and no
 * data moves. It measures the runtime's own ceiling with no PCIe or CPU in
 * the loop. There is no admin queue: boot/ creates the I/O queues directly.
 */
#ifndef GPUOS_LOOPBACK_H
#define GPUOS_LOOPBACK_H

#include "gpuos/nvme.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_LOOP_MAX_QUEUES 256u

struct gpuos_loop_queue {
	uint64_t sq;        /* struct gpuos_nvme_sqe[depth] */
	uint64_t cq;        /* struct gpuos_nvme_cqe[depth] */
	uint64_t sq_db;     /* uint32_t doorbell: SQ tail, written by the driver */
	uint64_t cq_db;     /* uint32_t doorbell: CQ head, written by the driver */
	uint32_t qid;
	uint32_t depth;
	/* controller-private progress, kept here across launches */
	uint32_t sq_head;
	uint32_t cq_tail;
	uint32_t phase;
	uint32_t rsvd;
};

struct gpuos_loop_desc {
	uint32_t stop;      /* host sets 1 (release, sys) to end the loopback kernel */
	uint32_t nqueues;
	uint32_t nwarps;    /* loopback warps; queue q is served by warp q % nwarps */
	uint32_t rsvd;
	uint64_t commands;  /* completed, summed by the warps as they leave */
	struct gpuos_loop_queue q[GPUOS_LOOP_MAX_QUEUES];
};

GPUOS_EXTERN_C_END

#endif /* GPUOS_LOOPBACK_H */
