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

/* ---- the checksums that benchmarks compare across paths ------------------------------ */

#define GPUOS_BENCH_GOLD 0x9e3779b97f4a7c15ull

/* The splitmix64 finalizer: every input bit reaches every output bit. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_bench_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whole-buffer checksum (docs/benchmarks.md, section 1): the sum mod 2^64,
 * over the buffer's 8-byte little-endian words w_i (i = 0, 1, ...; a last
 * partial word padded with zeros), of mix64(w_i + i * GOLD). Sums commute,
 * so any thread may add any words, and each word still counts with its
 * place. `piece` holds `len` bytes of the buffer from its word `word0` on
 * (8-byte aligned; a partial word only at the buffer's end); this adds the
 * piece's words [first, first + n). */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_bench_sum_words(const void *piece, uint64_t len, uint64_t word0, uint64_t first,
						     uint64_t n)
{
	const uint64_t *w = (const uint64_t *)piece;
	uint64_t full = len / 8u, sum = 0, i;
	for (i = first; i < first + n && i < full; i++)
		sum += gpuos_bench_mix64(w[i] + (word0 + i) * GPUOS_BENCH_GOLD);
	if (i == full && full < first + n && len % 8u) {
		const uint8_t *p = (const uint8_t *)piece + full * 8u;
		uint64_t last = 0, k;
		for (k = 0; k < len % 8u; k++)
			last |= (uint64_t)p[k] << (8u * k);
		sum += gpuos_bench_mix64(last + (word0 + full) * GPUOS_BENCH_GOLD);
	}
	return sum;
}

/* Words in a buffer of len bytes, the last partial one included. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_bench_words(uint64_t len)
{
	return (len + 7u) / 8u;
}

/* CRC-32 (zlib's: IEEE 802.3, reflected) four bits at a time. The 16-entry
 * table is built by each thread in its own memory (no table in constant
 * memory: one source for both compilers). */
GPUOS_INLINE GPUOS_HD void gpuos_bench_crc_table(uint32_t *tab)
{
	uint32_t i, k;
	for (i = 0; i < 16; i++) {
		uint32_t c = i;
		for (k = 0; k < 4; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
		tab[i] = c;
	}
}

/* CRC-32 of n bytes at p (4-byte aligned). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_bench_crc32(const uint8_t *p, uint64_t n, const uint32_t *tab)
{
	uint32_t crc = 0xffffffffu, k;
	const uint32_t *w = (const uint32_t *)(const void *)p;
	uint64_t i, words = n / 4u;
	for (i = 0; i < words; i++) {
		crc ^= w[i]; /* little-endian: the low byte goes first, as the CRC wants */
		for (k = 0; k < 8; k++)
			crc = (crc >> 4) ^ tab[crc & 15u];
	}
	for (i = words * 4u; i < n; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ tab[crc & 15u];
		crc = (crc >> 4) ^ tab[crc & 15u];
	}
	return ~crc;
}

/* Layer checksum (apps/layer_stream.c, bench/layer_base.cu): a tensor is cut
 * in 4096-byte chunks c = 0, 1, ... (the last one shorter); chunk c of the
 * tensor at position `rank` in its layer (file order) adds
 *     mix64((c << 32 | crc32(chunk)) + rank * GOLD)
 * and the layer's checksum is the sum mod 2^64. This is one chunk's term. */
#define GPUOS_BENCH_CHUNK 4096u
GPUOS_INLINE GPUOS_HD uint64_t gpuos_bench_chunk_term(const uint8_t *chunk, uint64_t len, uint64_t c, uint32_t rank,
						      const uint32_t *tab)
{
	uint32_t crc = gpuos_bench_crc32(chunk, len, tab);
	return gpuos_bench_mix64(((c << 32) | crc) + (uint64_t)rank * GPUOS_BENCH_GOLD);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_BENCH_H */
