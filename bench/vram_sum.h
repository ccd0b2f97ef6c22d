/* SPDX-License-Identifier: MIT */
/*
 * bench/vram_sum.h - the whole-buffer checksum (gpuos/bench.h,
 * gpuos_bench_sum_words) of a VRAM buffer, computed on the host: the buffer
 * comes back in pieces with cudaMemcpy, and CPU threads sum each piece. The
 * whole-file rows compare it with apps/file_load's, which sums on the GPU.
 * For the CPU baselines (bench/baselines.c, bench/cufile_load.c); C with the
 * CUDA runtime, no kernels. Not timed: it runs after the measured copy.
 */
#ifndef GPUOS_BENCH_VRAM_SUM_H
#define GPUOS_BENCH_VRAM_SUM_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpuos/bench.h"

#define VRAM_SUM_PIECE (256ull << 20)
#define VRAM_SUM_THREADS 8

struct vram_sum_part {
	const uint8_t *piece; /* in host memory */
	uint64_t len;         /* bytes in the piece */
	uint64_t word0;       /* the piece's first word in the buffer */
	uint64_t first, n;    /* this part: words of the piece */
	uint64_t sum;
};

static void *vram_sum_thread(void *p)
{
	struct vram_sum_part *w = (struct vram_sum_part *)p;
	w->sum = gpuos_bench_sum_words(w->piece, w->len, w->word0, w->first, w->n);
	return NULL;
}

/* The checksum of len bytes of VRAM at dev (8-byte aligned); 0 and *err set
 * on a CUDA or memory failure. */
static uint64_t vram_sum(const void *dev, uint64_t len, const char **err)
{
	uint64_t sum = 0, off;
	uint8_t *host;
	*err = NULL;
	if (cudaMallocHost((void **)&host, VRAM_SUM_PIECE) != cudaSuccess) {
		*err = "cudaMallocHost for the checksum";
		return 0;
	}
	for (off = 0; off < len; off += VRAM_SUM_PIECE) {
		uint64_t n = len - off < VRAM_SUM_PIECE ? len - off : VRAM_SUM_PIECE, words, per;
		struct vram_sum_part part[VRAM_SUM_THREADS];
		pthread_t th[VRAM_SUM_THREADS];
		int i, started[VRAM_SUM_THREADS];
		if (cudaMemcpy(host, (const uint8_t *)dev + off, n, cudaMemcpyDeviceToHost) != cudaSuccess) {
			*err = "cudaMemcpy for the checksum";
			break;
		}
		words = gpuos_bench_words(n);
		per = (words + VRAM_SUM_THREADS - 1) / VRAM_SUM_THREADS;
		for (i = 0; i < VRAM_SUM_THREADS; i++) {
			uint64_t first = (uint64_t)i * per < words ? (uint64_t)i * per : words;
			part[i].piece = host;
			part[i].len = n;
			part[i].word0 = off / 8u;
			part[i].first = first;
			part[i].n = words - first < per ? words - first : per;
			part[i].sum = 0;
			started[i] = pthread_create(&th[i], NULL, vram_sum_thread, &part[i]) == 0;
			if (!started[i])
				vram_sum_thread(&part[i]);
		}
		for (i = 0; i < VRAM_SUM_THREADS; i++) {
			if (started[i])
				pthread_join(th[i], NULL);
			sum += part[i].sum;
		}
	}
	cudaFreeHost(host);
	return *err ? 0 : sum;
}

#endif /* GPUOS_BENCH_VRAM_SUM_H */
