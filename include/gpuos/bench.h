/* SPDX-License-Identifier: MIT */
/*
 * gpuos/bench.h - arguments of the GPU client kernel that measures the
 * runtime (bench/bench_client.cuh): every thread posts READ_RAW requests
 * of `bytes` at random aligned offsets and waits for each, timing it. The
 * last `samples` requests of each thread are kept (the first ones warm up).
 */
#ifndef GPUOS_BENCH_H
#define GPUOS_BENCH_H

#include "gpuos/gpuos.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_bench_args {
	uint64_t mbox;          /* struct gpuos_mbox * (runtime space) */
	uint64_t dst;           /* destination base: thread t writes at dst + t * bytes */
	uint64_t span;          /* offsets are drawn from [0, span - bytes] */
	uint64_t lat;           /* uint32_t[nthreads * samples]: latency of the first samples, ns */
	uint64_t errors;        /* uint32_t counter of non-OK results */
	uint64_t t_start;       /* uint64_t: globaltimer when the first thread started */
	uint64_t t_end;         /* uint64_t: max globaltimer when a thread finished */
	uint32_t bytes;
	uint32_t iters;         /* requests per thread */
	uint32_t samples;       /* latencies kept per thread (<= iters) */
	uint32_t nthreads;
	uint32_t opcode;        /* GPUOS_OP_READ_RAW or GPUOS_OP_NOP */
	uint32_t seed;
	uint64_t stages;        /* 0, or uint32_t[nthreads * samples * GPUOS_BENCH_STAGES]: per
	                         * sample, ns from the post to each of enum gpuos_bench_stage
	                         * (GPUOS_BENCH_NO_STAMP where the runtime left no stamp) */
};

/* The path of one request, in order (the runtime's stamps need a GPUOS_TRACE build). */
enum gpuos_bench_stage {
	GPUOS_BENCH_POSTED = 0,  /* the client's post returned */
	GPUOS_BENCH_TAKEN,       /* abi.h GPUOS_TRACE_TAKEN .. GPUOS_TRACE_REAPED */
	GPUOS_BENCH_RUNG,
	GPUOS_BENCH_CTRL,
	GPUOS_BENCH_REAPED,
	GPUOS_BENCH_DONE,        /* the runtime's t_done_ns */
	GPUOS_BENCH_SEEN,        /* the client saw DONE */
	GPUOS_BENCH_STAGES
};
#define GPUOS_BENCH_NO_STAMP 0xffffffffu

/* One timed request, as gpuos_call makes it; with `stages` (a row of
 * GPUOS_BENCH_STAGES) the slot's stamps are read before it is released.
 * Returns the round trip in ns; the status goes to *status. Shared by the
 * GPU client (bench/bench_client.cuh) and the host one (boot/cli/cmd_bench.c). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_bench_one(struct gpuos_mbox *mb, const struct gpuos_req *rq, uint32_t *stages,
					       uint32_t *status)
{
	struct gpuos_result res;
	uint64_t t0 = gpuos_now_ns(), tp, t1, tr[GPUOS_TRACE_STAGES + 1];
	const struct gpuos_mbox_slot *sl;
	uint32_t slot, spins = 0, k;

	if (!stages) {
		*status = gpuos_call(mb, rq, 0, &res);
		return (uint32_t)(gpuos_now_ns() - t0);
	}
	while (gpuos_post(mb, rq, &slot) == GPUOS_ST_FULL)
		gpuos_backoff(&spins);
	tp = gpuos_now_ns();
	spins = 0;
	while (!gpuos_poll_keep(mb, slot, &res))
		gpuos_backoff(&spins);
	t1 = gpuos_now_ns();
	sl = &gpuos_mbox_slots(mb)[slot];
	for (k = 0; k < GPUOS_TRACE_STAGES; k++)
		tr[k] = sl->t_trace_ns[k];
	tr[GPUOS_TRACE_STAGES] = sl->t_done_ns;
	gpuos_release(mb, slot);
	*status = res.status;
	stages[GPUOS_BENCH_POSTED] = (uint32_t)(tp - t0);
	for (k = 0; k <= GPUOS_TRACE_STAGES; k++)
		stages[GPUOS_BENCH_TAKEN + k] = tr[k] ? (uint32_t)(tr[k] - t0) : GPUOS_BENCH_NO_STAMP;
	stages[GPUOS_BENCH_SEEN] = (uint32_t)(t1 - t0);
	return (uint32_t)(t1 - t0);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_BENCH_H */
