/* SPDX-License-Identifier: MIT */
/*
 * gpuos/bench.h - arguments of the GPU client kernel that measures the
 * runtime (kernels/bench_client.cuh): every thread posts READ_RAW requests
 * of `bytes` at random aligned offsets and waits for each, timing it.
 */
#ifndef GPUOS_BENCH_H
#define GPUOS_BENCH_H

#include "gpuos/abi.h"

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
};

GPUOS_EXTERN_C_END

#endif /* GPUOS_BENCH_H */
