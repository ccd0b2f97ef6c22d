/* SPDX-License-Identifier: MIT */
/*
 * gpuos_dequant (gpuos/host.h): refusals with their reasons, a few values
 * worked by hand, CPU threads against one thread's gpuos_dequant_row, and a
 * booted system's result against the CPU's, byte for byte, for every type
 * and output, random blocks with odd scales among them (subnormal, zero,
 * infinite, NaN binary16 scales). The values themselves are checked
 * against an independent model by tests/tools/quant_ref.py --dequant.
 * Host mode; GPUOS_TEST_GPU=1 boots the runtime on the GPU, where the
 * system's conversions run in the GPU kernel beside it on device memory,
 * and times a 1 GiB tensor.
 */
#ifdef GPUOS_MINI_CRITERION
#include "../gpu/mini_criterion.h" /* the GPU machine has no Criterion */
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuos/host.h"
#include "gpuos/quant.h"

#include "booted.h"

static const uint32_t types[] = {
	GPUOS_GGML_TYPE_F32, GPUOS_GGML_TYPE_F16, GPUOS_GGML_TYPE_BF16, GPUOS_GGML_TYPE_Q4_0, GPUOS_GGML_TYPE_Q4_1,
	GPUOS_GGML_TYPE_Q5_0, GPUOS_GGML_TYPE_Q5_1, GPUOS_GGML_TYPE_Q8_0, GPUOS_GGML_TYPE_Q2_K, GPUOS_GGML_TYPE_Q3_K,
	GPUOS_GGML_TYPE_Q4_K, GPUOS_GGML_TYPE_Q5_K, GPUOS_GGML_TYPE_Q6_K,
};
static const uint32_t outs[] = { GPUOS_GGML_TYPE_F32, GPUOS_GGML_TYPE_F16, GPUOS_GGML_TYPE_BF16 };

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: fixed seeds make failures repeatable */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Offsets of a block's binary16 scales (d, and m or dmin); -1 ends. */
static void scale_offsets(uint32_t t, int off[3])
{
	off[0] = off[1] = off[2] = -1;
	switch (t) {
	case GPUOS_GGML_TYPE_Q4_0: case GPUOS_GGML_TYPE_Q5_0: case GPUOS_GGML_TYPE_Q8_0: off[0] = 0; break;
	case GPUOS_GGML_TYPE_Q4_1: case GPUOS_GGML_TYPE_Q5_1: case GPUOS_GGML_TYPE_Q4_K: case GPUOS_GGML_TYPE_Q5_K:
		off[0] = 0;
		off[1] = 2;
		break;
	case GPUOS_GGML_TYPE_Q2_K: off[0] = 80; off[1] = 82; break;
	case GPUOS_GGML_TYPE_Q3_K: off[0] = 108; break;
	case GPUOS_GGML_TYPE_Q6_K: off[0] = 208; break;
	default: break;
	}
}

/* nblocks random blocks of t: random bits, and a quarter of the scales odd
 * (subnormal, zero, infinite, NaN, the largest), the rest of a plausible size. */
static uint8_t *random_blocks(uint32_t t, uint64_t nblocks, uint64_t seed, uint64_t *len)
{
	static const uint16_t odd[] = { 0x0001, 0x03ff, 0x8200, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00,
					0x7bff, 0x0400 };
	uint32_t bytes, e = gpuos_quant_block(t, &bytes);
	uint8_t *b;
	int off[3];
	cr_assert_neq(e, 0u);
	*len = nblocks * bytes;
	b = (uint8_t *)malloc(*len + 8);
	cr_assert_not_null(b);
	for (uint64_t i = 0; i < *len; i += 8) {
		uint64_t r = rng_next(&seed);
		memcpy(b + i, &r, 8);
	}
	scale_offsets(t, off);
	for (uint64_t k = 0; k < nblocks; k++)
		for (int j = 0; j < 3 && off[j] >= 0; j++) {
			uint64_t r = rng_next(&seed);
			uint16_t h = r % 4 == 0 ? odd[(r >> 8) % (sizeof(odd) / sizeof(odd[0]))]
						: (uint16_t)(0x1400u + (r >> 16) % 0x1800u) | (r & 0x10000u ? 0x8000u : 0u);
			memcpy(b + k * bytes + (uint32_t)off[j], &h, 2);
		}
	return b;
}

static const char *why(void) { return gpuos_sys_error(NULL); }

/* The refusals, each with its reason; with no system and with one. */
static void refusals(struct gpuos_sys *s)
{
	static uint16_t src[4096];
	static float dst[4096];
	uint64_t q4k = sizeof(struct gpuos_block_q4_k);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_IQ2_XXS, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 256), -ENOTSUP);
	cr_assert(strstr(why(), "IQ2_XXS"), "%s", why());
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_MXFP4, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 32), -ENOTSUP);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_TQ1_0, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 256), -ENOTSUP);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_I32, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 16), -ENOTSUP);
	cr_assert_eq(gpuos_dequant(s, 4, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 32), -EINVAL); /* removed upstream */
	cr_assert_eq(gpuos_dequant(s, 999, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 32), -EINVAL);
	cr_assert(strstr(why(), "999"), "%s", why());
	/* n not whole blocks */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_K, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 300), -EINVAL);
	cr_assert(strstr(why(), "Q4_K blocks of 256"), "%s", why());
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q8_0, src, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 31), -EINVAL);
	/* src_bytes too small, by one byte */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_K, src, 2 * q4k - 1, dst, GPUOS_GGML_TYPE_F32, 512), -EINVAL);
	cr_assert(strstr(why(), "take 288 bytes"), "%s", why());
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_F32, src, 4 * 100 - 1, dst, GPUOS_GGML_TYPE_F32, 100), -EINVAL);
	/* output types */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, src, sizeof(src), dst, GPUOS_GGML_TYPE_Q8_0, 32), -EINVAL);
	cr_assert(strstr(why(), "not Q8_0"), "%s", why());
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, src, sizeof(src), dst, 12345, 32), -EINVAL);
	/* pointers: NULL, misaligned */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, NULL, sizeof(src), dst, GPUOS_GGML_TYPE_F32, 32), -EINVAL);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, src, sizeof(src), NULL, GPUOS_GGML_TYPE_F32, 32), -EINVAL);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, (char *)src + 1, 100, dst, GPUOS_GGML_TYPE_F32, 32), -EINVAL);
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_0, src, 100, (char *)dst + 2, GPUOS_GGML_TYPE_F32, 32), -EINVAL);
	cr_assert(strstr(why(), "dst is not aligned to 4"), "%s", why());
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_F32, (char *)src + 2, 400, dst, GPUOS_GGML_TYPE_F16, 32), -EINVAL);
	/* sizes that overflow 64 bits */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_F32, src, UINT64_MAX, dst, GPUOS_GGML_TYPE_F32, UINT64_MAX / 2), -EINVAL);
	/* nothing to do; a success clears the reason */
	cr_assert_eq(gpuos_dequant(s, GPUOS_GGML_TYPE_Q4_K, NULL, 0, NULL, GPUOS_GGML_TYPE_F16, 0), 0);
	cr_assert_str_eq(why(), "");
}

Test(dequant, refusals_without_a_system)
{
	refusals(NULL);
}

/* Values worked by hand from ggml's formulas, and the NaN rule. */
Test(dequant, values_by_hand)
{
	struct gpuos_block_q4_0 q4 = { 0x3800, { 0 } };                  /* d = 0.5 */
	struct gpuos_block_q8_0 q8 = { 0x3c00, { 0 } };                  /* d = 1 */
	struct gpuos_block_q4_1 q41 = { 0x4000, 0xbc00, { 0 } };         /* d = 2, m = -1 */
	float f[32];
	uint16_t h[32];
	uint32_t u[32];
	q4.qs[0] = 0xf0;   /* element 0: 0 - 8, element 16: 15 - 8 */
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q4_0, &q4, sizeof(q4), f, GPUOS_GGML_TYPE_F32, 32), 0);
	cr_assert(f[0] == -4.0f && f[16] == 3.5f && f[1] == -4.0f, "%g %g", f[0], f[16]);
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q4_0, &q4, sizeof(q4), h, GPUOS_GGML_TYPE_F16, 32), 0);
	cr_assert(h[0] == 0xc400 && h[16] == 0x4300, "%04x %04x", h[0], h[16]);
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q4_0, &q4, sizeof(q4), h, GPUOS_GGML_TYPE_BF16, 32), 0);
	cr_assert(h[0] == 0xc080 && h[16] == 0x4060, "%04x %04x", h[0], h[16]);
	q41.qs[3] = 0x57;  /* element 3: 7 * 2 - 1, element 19: 5 * 2 - 1 */
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q4_1, &q41, sizeof(q41), f, GPUOS_GGML_TYPE_F32, 32), 0);
	cr_assert(f[3] == 13.0f && f[19] == 9.0f && f[0] == -1.0f, "%g %g %g", f[3], f[19], f[0]);
	/* 1/3 in binary32 rounds to binary16 and bfloat16 to nearest even */
	q8.d = 0x3555; /* 0.333251953125 */
	q8.qs[0] = 3;
	q8.qs[1] = -128;
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q8_0, &q8, sizeof(q8), f, GPUOS_GGML_TYPE_F32, 32), 0);
	cr_assert(f[0] == 0.999755859375f && f[1] == -42.65625f, "%.9g %.9g", f[0], f[1]);
	/* NaN and infinite scales: inf * 0 and NaN * q are the quiet NaN, inf * q inf */
	q8.d = 0x7c00;
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q8_0, &q8, sizeof(q8), u, GPUOS_GGML_TYPE_F32, 32), 0);
	cr_assert(u[0] == 0x7f800000u && u[1] == 0xff800000u && u[2] == 0x7fc00000u, "%08x %08x %08x", u[0], u[1], u[2]);
	q8.d = 0xfe01; /* a negative NaN with a payload */
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q8_0, &q8, sizeof(q8), h, GPUOS_GGML_TYPE_F16, 32), 0);
	cr_assert(h[0] == 0x7e00 && h[2] == 0x7e00, "%04x", h[0]);
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q8_0, &q8, sizeof(q8), h, GPUOS_GGML_TYPE_BF16, 32), 0);
	cr_assert(h[0] == 0x7fc0 && h[2] == 0x7fc0, "%04x", h[0]);
	/* a subnormal scale stays exact in binary32 */
	q8.d = 0x0001;
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q8_0, &q8, sizeof(q8), f, GPUOS_GGML_TYPE_F32, 32), 0);
	cr_assert(f[0] == 3.0f * 5.9604644775390625e-8f && f[2] == 0.0f, "%g", f[0]);
}

/* Large tensors go to several CPU threads, each over its own range: every
 * element must be what one thread's gpuos_dequant_row gives. */
Test(dequant, cpu_threads_equal_one_row)
{
	uint32_t t = GPUOS_GGML_TYPE_Q4_K;
	uint64_t nb = 4099, n = nb * GPUOS_QK_K, len;  /* ~1M elements, not a multiple of a thread's range */
	uint8_t *src = random_blocks(t, nb, 7, &len);
	float *want = (float *)malloc(n * 4), *got = (float *)malloc(n * 4);
	uint16_t *h = (uint16_t *)malloc(n * 2);
	cr_assert(want && got && h);
	gpuos_dequant_row(t, src, want, n);
	cr_assert_eq(gpuos_dequant(NULL, t, src, len, got, GPUOS_GGML_TYPE_F32, n), 0, "%s", why());
	for (uint64_t i = 0; i < n; i++) {
		uint32_t a = gpuos_f32_as_u32(want[i]), b = gpuos_f32_as_u32(got[i]);
		if (want[i] != want[i])
			a = 0x7fc00000u;
		cr_assert_eq(a, b, "element %llu: %08x, want %08x", (unsigned long long)i, b, a);
	}
	cr_assert_eq(gpuos_dequant(NULL, t, src, len, h, GPUOS_GGML_TYPE_F16, n), 0, "%s", why());
	for (uint64_t i = 0; i < n; i++)
		cr_assert_eq(h[i], want[i] != want[i] ? 0x7e00 : gpuos_f32_to_f16(want[i]), "element %llu",
			     (unsigned long long)i);
	free(src);
	free(want);
	free(got);
	free(h);
}

/* ---- a booted system: the GPU kernel under GPUOS_TEST_GPU ---------------------- */

static struct booted b;

static void boot_null(void)
{
	struct gpuos_boot_opts o;
	gpuos_boot_opts_default(&o);
	o.device = "null";
	o.no_files = 1;
	booted_start(&b, &o);
}

static void shut_null(void)
{
	shut(&b);
}

TestSuite(dequant_sys, .init = boot_null, .fini = shut_null, .timeout = 120);

Test(dequant_sys, refusals)
{
	refusals(b.sys);
}

/* One conversion through the system (device memory on the GPU) and the
 * same through the CPU with no system, to compare. */
struct job {
	uint32_t t, out;
	uint64_t n, len, dsrc, ddst;
	uint8_t *src, *want;
	int r;
};

static void job_prepare(struct job *j, uint32_t t, uint32_t out, uint64_t nblocks, uint64_t seed)
{
	uint32_t ob = gpuos_dequant_out_bytes(out);
	j->t = t;
	j->out = out;
	j->n = nblocks * gpuos_quant_block(t, NULL);
	j->src = random_blocks(t, nblocks, seed, &j->len);
	j->want = (uint8_t *)malloc(j->n * ob);
	cr_assert_not_null(j->want);
	cr_assert_eq(gpuos_dequant(NULL, t, j->src, j->len, j->want, out, j->n), 0, "%s", why());
	cr_assert_eq(gpuos_sys_dev_alloc(b.sys, j->len, &j->dsrc), 0);
	cr_assert_eq(gpuos_sys_dev_alloc(b.sys, j->n * ob, &j->ddst), 0);
	cr_assert_eq(gpuos_sys_copy(b.sys, (void *)(uintptr_t)j->dsrc, j->src, j->len, 1), 0);
}

static void *job_run(void *p)
{
	struct job *j = (struct job *)p;
	j->r = gpuos_dequant(b.sys, j->t, (void *)(uintptr_t)j->dsrc, j->len, (void *)(uintptr_t)j->ddst, j->out, j->n);
	return NULL;
}

/* The system's bytes equal the CPU's; frees the job. */
static void job_check(struct job *j)
{
	uint32_t ob = gpuos_dequant_out_bytes(j->out);
	uint8_t *got = (uint8_t *)malloc(j->n * ob);
	cr_assert_not_null(got);
	cr_assert_eq(j->r, 0, "%s into %s: %d", gpuos_ggml_type_name(j->t), gpuos_ggml_type_name(j->out), j->r);
	cr_assert_eq(gpuos_sys_copy(b.sys, got, (void *)(uintptr_t)j->ddst, j->n * ob, 0), 0);
	for (uint64_t i = 0; i < j->n; i++)
		cr_assert(!memcmp(got + i * ob, j->want + i * ob, ob), "%s into %s, element %llu of %llu differs",
			  gpuos_ggml_type_name(j->t), gpuos_ggml_type_name(j->out), (unsigned long long)i,
			  (unsigned long long)j->n);
	gpuos_sys_dev_free(b.sys, j->dsrc);
	gpuos_sys_dev_free(b.sys, j->ddst);
	free(j->src);
	free(j->want);
	free(got);
}

Test(dequant_sys, every_type_equals_the_cpu)
{
	for (uint32_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		for (uint32_t k = 0; k < 3; k++) {
			uint32_t e = gpuos_quant_block(types[i], NULL);
			/* a few blocks, and many: more elements than the grid has threads */
			uint64_t many = (e == 1 ? 1u << 22 : e == GPUOS_QK ? 1u << 17 : 1u << 14) + 1;
			struct job j;
			job_prepare(&j, types[i], outs[k], 3, 100 + i * 3 + k);
			job_run(&j);
			job_check(&j);
			job_prepare(&j, types[i], outs[k], many, 200 + i * 3 + k);
			job_run(&j);
			job_check(&j);
		}
}

/* Four threads at once (on the GPU: one stream, each waits for its own).
 * Only the conversions run on them: a thread's first copy would make a
 * CUDA stream while the runtime spins (docs/platform.md). */
Test(dequant_sys, threads_at_once)
{
	static const uint32_t t[4] = { GPUOS_GGML_TYPE_Q4_K, GPUOS_GGML_TYPE_Q6_K, GPUOS_GGML_TYPE_Q8_0, GPUOS_GGML_TYPE_Q3_K };
	struct job j[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		job_prepare(&j[i], t[i], outs[i % 3], 5000, (uint64_t)i + 1);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, job_run, &j[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++)
		job_check(&j[i]);
}

/* Host memory on both sides is converted on the CPU, on any system; on the
 * GPU, host memory on one side only is refused (the kernel would fault). */
Test(dequant_sys, host_memory)
{
	uint64_t len, ddst;
	uint8_t *src = random_blocks(GPUOS_GGML_TYPE_Q5_K, 4, 9, &len);
	float got[1024], want[1024];
	cr_assert_eq(gpuos_dequant(b.sys, GPUOS_GGML_TYPE_Q5_K, src, len, got, GPUOS_GGML_TYPE_F32, 1024), 0, "%s", why());
	cr_assert_eq(gpuos_dequant(NULL, GPUOS_GGML_TYPE_Q5_K, src, len, want, GPUOS_GGML_TYPE_F32, 1024), 0);
	cr_assert(!memcmp(got, want, sizeof(got)));
	if (gpuos_sys_info(b.sys)->gpu) {
		cr_assert_eq(gpuos_sys_dev_alloc(b.sys, sizeof(got), &ddst), 0);
		cr_assert_eq(gpuos_dequant(b.sys, GPUOS_GGML_TYPE_Q5_K, src, len, (void *)(uintptr_t)ddst,
					   GPUOS_GGML_TYPE_F32, 1024), -EFAULT);
		cr_assert(strstr(why(), "src is memory the GPU cannot reach"), "%s", why());
		gpuos_sys_dev_free(b.sys, ddst);
	}
	free(src);
}

/* A 1 GiB Q4_K tensor into BF16 (3.6 GiB): well under a second on the GPU
 * (timed), its first 16 MiB of blocks equal the CPU's. In host mode 16 MiB. */
Test(dequant_sys, a_gigabyte, .timeout = 300)
{
	int gpu = gpuos_sys_info(b.sys)->gpu;
	uint32_t t = GPUOS_GGML_TYPE_Q4_K, out = GPUOS_GGML_TYPE_BF16, bytes;
	uint64_t piece, nb, n, dsrc, ddst, head_blocks;
	uint8_t *pat;
	uint16_t *got, *want;
	struct timespec t0, t1;
	double s;
	gpuos_quant_block(t, &bytes);
	nb = (gpu ? (1ull << 30) : (16ull << 20)) / bytes;
	n = nb * GPUOS_QK_K;
	pat = random_blocks(t, (16u << 20) / bytes, 11, &piece);
	head_blocks = piece / bytes;
	cr_assert_eq(gpuos_sys_dev_alloc(b.sys, nb * bytes, &dsrc), 0);
	cr_assert_eq(gpuos_sys_dev_alloc(b.sys, n * 2, &ddst), 0, "%llu bytes of output", (unsigned long long)(n * 2));
	for (uint64_t o = 0; o < nb * bytes; o += piece)
		cr_assert_eq(gpuos_sys_copy(b.sys, (uint8_t *)(uintptr_t)dsrc + o, pat,
					    GPUOS_MIN(piece, nb * bytes - o), 1), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(gpuos_dequant(b.sys, t, (void *)(uintptr_t)dsrc, nb * bytes, (void *)(uintptr_t)ddst, out, n), 0,
		     "%s", why());
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "    dequant: %.0f MiB of Q4_K into BF16 (%.0f MiB) in %.3f s on the %s: %.1f GB/s written\n",
		(double)(nb * bytes) / 1048576.0, (double)(n * 2) / 1048576.0, s, gpu ? "GPU" : "CPU",
		(double)(n * 2) / s / 1e9);
	if (gpu)
		cr_assert_lt(s, 1.0, "1 GiB took %.3f s", s);
	got = (uint16_t *)malloc(head_blocks * GPUOS_QK_K * 2);
	want = (uint16_t *)malloc(head_blocks * GPUOS_QK_K * 2);
	cr_assert(got && want);
	cr_assert_eq(gpuos_sys_copy(b.sys, got, (void *)(uintptr_t)ddst, head_blocks * GPUOS_QK_K * 2, 0), 0);
	cr_assert_eq(gpuos_dequant(NULL, t, pat, piece, want, out, head_blocks * GPUOS_QK_K), 0);
	cr_assert(!memcmp(got, want, head_blocks * GPUOS_QK_K * 2), "the first %llu blocks differ from the CPU's",
		  (unsigned long long)head_blocks);
	gpuos_sys_dev_free(b.sys, dsrc);
	gpuos_sys_dev_free(b.sys, ddst);
	free(pat);
	free(got);
	free(want);
}
