// SPDX-License-Identifier: MIT
// A GPU client for measurements: each thread posts a request, waits for it,
// and times it (include/gpuos/bench.h). A client, so it lives with the
// measurements; kernels/runtime.cu builds it into the runtime image so it
// is loaded before the runtime spins (docs/platform.md: no module loads later).
#include "gpuos/bench.h"
#include "gpuos/gpuos.h"

extern "C" __global__ void gpuos_bench_client(const struct gpuos_bench_args *a)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint32_t *lat = (uint32_t *)(uintptr_t)a->lat;
	uint64_t s = ((uint64_t)a->seed << 32) ^ (t * 0x9e3779b97f4a7c15ull);
	uint64_t nblocks = a->span / a->bytes;
	uint32_t i, errs = 0;

	if (t >= a->nthreads)
		return;
	if (t == 0)
		atomicMin((unsigned long long *)(uintptr_t)a->t_start, (unsigned long long)gpuos_now_ns());
	for (i = 0; i < a->iters; i++) {
		struct gpuos_req rq;
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		rq.opcode = (uint16_t)a->opcode;
		rq.flags = 0;
		rq.handle = 0;
		rq.offset = (s % nblocks) * a->bytes;
		rq.length = a->bytes;
		rq.dst = a->dst + (uint64_t)t * a->bytes;
		rq.arg = 0;
		rq.batch = 0;
		rq.tag = i;
		{
			/* The last `samples` requests are kept (the first ones warm up). */
			uint32_t keep = i >= a->iters - a->samples, k = i - (a->iters - a->samples);
			uint64_t row = (uint64_t)t * a->samples + k;
			uint32_t *st = keep && a->stages ? (uint32_t *)(uintptr_t)a->stages + row * GPUOS_BENCH_STAGES : 0;
			uint32_t status, ns = gpuos_bench_one(mb, &rq, st, &status);
			if (status != GPUOS_ST_OK)
				errs++;
			if (keep)
				lat[row] = ns;
		}
	}
	if (errs)
		atomicAdd((unsigned int *)(uintptr_t)a->errors, errs);
	atomicMax((unsigned long long *)(uintptr_t)a->t_end, (unsigned long long)gpuos_now_ns());
}
