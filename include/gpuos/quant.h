/* SPDX-License-Identifier: MIT */
/*
 * gpuos/quant.h - ggml's tensor types element by element: IEEE binary16 and
 * bfloat16 conversions, the blocks of the quantised types a GGUF file holds
 * (ggml-common.h), and their values as ggml's CPU dequantisation gives them
 * (dequantize_row_* of ggml-quants.c, every float32 rounding in ggml's order,
 * none fused). One definition for the llama engine (apps/llama/quant.h) and
 * gpuos_dequant (gpuos/host.h): boot/ on CPU threads, kernels/dequant.cuh on
 * the GPU. Portable (gcc and nvcc, host and device), no allocation.
 *
 * A row of n elements is n / block elements' blocks back to back; blocks
 * are 2-byte aligned (their binary16 fields), F32 elements 4-byte aligned.
 */
#ifndef GPUOS_QUANT_H
#define GPUOS_QUANT_H

#include "gpuos/gguf.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_QK    32u   /* elements of a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 block */
#define GPUOS_QK_K 256u   /* elements of a K-quant super-block */

/* ---- binary16 and bfloat16 ---------------------------------------------------- */

GPUOS_INLINE GPUOS_HD float gpuos_u32_as_f32(uint32_t u)
{
	union { uint32_t u; float f; } v;
	v.u = u;
	return v.f;
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_f32_as_u32(float f)
{
	union { uint32_t u; float f; } v;
	v.f = f;
	return v.u;
}

/* IEEE 754 binary16 to binary32, exactly (subnormals, infinities, NaN). */
GPUOS_INLINE GPUOS_HD float gpuos_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	if (exp == 0x1fu)
		return gpuos_u32_as_f32(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		/* a subnormal half is man * 2^-24, exact in binary32 */
		float f = (float)man * gpuos_u32_as_f32(0x33800000u);
		return sign ? -f : f;
	}
	return gpuos_u32_as_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* binary32 to binary16, rounding to nearest even (what F16C's
 * vcvtps2ph with rounding mode 0 gives, and ggml uses). */
GPUOS_INLINE GPUOS_HD uint16_t gpuos_f32_to_f16(float f)
{
	uint32_t x = gpuos_f32_as_u32(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf, NaN (kept quiet) */
		return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
	if (ax >= 0x477ff000u) /* rounds to 65520 or more: inf */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {
		/* below the smallest normal half: a multiple of 2^-24, rounded */
		uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e; /* 14 .. */
		uint32_t q, rem, half;
		if (ax < 0x33000000u) /* under half of 2^-24 */
			return (uint16_t)sign;
		q = m >> shift;
		rem = m & ((1u << shift) - 1u);
		half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	{
		uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u); /* to nearest even at bit 13 */
		return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
	}
}

GPUOS_INLINE GPUOS_HD float gpuos_bf16_to_f32(uint16_t h)
{
	return gpuos_u32_as_f32((uint32_t)h << 16);
}

/* binary32 to bfloat16, to nearest even, NaN kept quiet (ggml's rule). */
GPUOS_INLINE GPUOS_HD uint16_t gpuos_f32_to_bf16(float f)
{
	uint32_t u = gpuos_f32_as_u32(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 64u);
	return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

/* ---- blocks (ggml-common.h) -------------------------------------------------- */

struct gpuos_block_q4_0 {
	uint16_t d;                      /* 0x00 scale, binary16 */
	uint8_t qs[GPUOS_QK / 2];        /* 0x02 element j in the low nibble of byte j, j + 16 in its high one */
};
struct gpuos_block_q4_1 {
	uint16_t d, m;                   /* 0x00 scale, 0x02 minimum */
	uint8_t qs[GPUOS_QK / 2];        /* 0x04 as Q4_0 */
};
struct gpuos_block_q5_0 {
	uint16_t d;                      /* 0x00 */
	uint8_t qh[4];                   /* 0x02 bit j: the fifth bit of element j */
	uint8_t qs[GPUOS_QK / 2];        /* 0x06 the low four bits, as Q4_0 */
};
struct gpuos_block_q5_1 {
	uint16_t d, m;                   /* 0x00, 0x02 */
	uint8_t qh[4];                   /* 0x04 */
	uint8_t qs[GPUOS_QK / 2];        /* 0x08 */
};
struct gpuos_block_q8_0 {
	uint16_t d;                      /* 0x00 */
	int8_t qs[GPUOS_QK];             /* 0x02 */
};
struct gpuos_block_q2_k {
	uint8_t scales[GPUOS_QK_K / 16]; /* 0x00 per 16 elements: scale (low nibble), min (high) */
	uint8_t qs[GPUOS_QK_K / 4];      /* 0x10 2-bit quants */
	uint16_t d, dmin;                /* 0x50, 0x52 */
};
struct gpuos_block_q3_k {
	uint8_t hmask[GPUOS_QK_K / 8];   /* 0x00 the high bits of the quants */
	uint8_t qs[GPUOS_QK_K / 4];      /* 0x20 their low 2 bits */
	uint8_t scales[12];              /* 0x60 16 6-bit scales */
	uint16_t d;                      /* 0x6c */
};
struct gpuos_block_q4_k {
	uint16_t d, dmin;                /* 0x00, 0x02 */
	uint8_t scales[12];              /* 0x04 8 6-bit scales and mins (gpuos_scale_min_k4) */
	uint8_t qs[GPUOS_QK_K / 2];      /* 0x10 */
};
struct gpuos_block_q5_k {
	uint16_t d, dmin;                /* 0x00, 0x02 */
	uint8_t scales[12];              /* 0x04 */
	uint8_t qh[GPUOS_QK_K / 8];      /* 0x10 */
	uint8_t qs[GPUOS_QK_K / 2];      /* 0x30 */
};
struct gpuos_block_q6_k {
	uint8_t ql[GPUOS_QK_K / 2];      /* 0x00 the low 4 bits of the quants */
	uint8_t qh[GPUOS_QK_K / 4];      /* 0x80 their high 2 bits */
	int8_t scales[GPUOS_QK_K / 16];  /* 0xc0 */
	uint16_t d;                      /* 0xd0 */
};
static_assert(sizeof(struct gpuos_block_q4_0) == 18, "block_q4_0");
static_assert(sizeof(struct gpuos_block_q4_1) == 20, "block_q4_1");
static_assert(sizeof(struct gpuos_block_q5_0) == 22 && offsetof(struct gpuos_block_q5_0, qs) == 6, "block_q5_0");
static_assert(sizeof(struct gpuos_block_q5_1) == 24 && offsetof(struct gpuos_block_q5_1, qs) == 8, "block_q5_1");
static_assert(sizeof(struct gpuos_block_q8_0) == 34, "block_q8_0");
static_assert(sizeof(struct gpuos_block_q2_k) == 84 && offsetof(struct gpuos_block_q2_k, d) == 80, "block_q2_K");
static_assert(sizeof(struct gpuos_block_q3_k) == 110 && offsetof(struct gpuos_block_q3_k, d) == 108, "block_q3_K");
static_assert(sizeof(struct gpuos_block_q4_k) == 144 && offsetof(struct gpuos_block_q4_k, qs) == 16, "block_q4_K");
static_assert(sizeof(struct gpuos_block_q5_k) == 176 && offsetof(struct gpuos_block_q5_k, qs) == 48, "block_q5_K");
static_assert(sizeof(struct gpuos_block_q6_k) == 210 && offsetof(struct gpuos_block_q6_k, d) == 208, "block_q6_K");

/* Elements and bytes of one block of type t, for the types with values
 * here: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K .. Q6_K. 0 for
 * any other (IQ*, TQ*, MXFP4, integers: no dequantiser). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_quant_block(uint32_t t, uint32_t *bytes)
{
	uint32_t e = GPUOS_QK, b;
	switch (t) {
	case GPUOS_GGML_TYPE_F32: e = 1; b = 4; break;
	case GPUOS_GGML_TYPE_F16:
	case GPUOS_GGML_TYPE_BF16: e = 1; b = 2; break;
	case GPUOS_GGML_TYPE_Q4_0: b = sizeof(struct gpuos_block_q4_0); break;
	case GPUOS_GGML_TYPE_Q4_1: b = sizeof(struct gpuos_block_q4_1); break;
	case GPUOS_GGML_TYPE_Q5_0: b = sizeof(struct gpuos_block_q5_0); break;
	case GPUOS_GGML_TYPE_Q5_1: b = sizeof(struct gpuos_block_q5_1); break;
	case GPUOS_GGML_TYPE_Q8_0: b = sizeof(struct gpuos_block_q8_0); break;
	case GPUOS_GGML_TYPE_Q2_K: e = GPUOS_QK_K; b = sizeof(struct gpuos_block_q2_k); break;
	case GPUOS_GGML_TYPE_Q3_K: e = GPUOS_QK_K; b = sizeof(struct gpuos_block_q3_k); break;
	case GPUOS_GGML_TYPE_Q4_K: e = GPUOS_QK_K; b = sizeof(struct gpuos_block_q4_k); break;
	case GPUOS_GGML_TYPE_Q5_K: e = GPUOS_QK_K; b = sizeof(struct gpuos_block_q5_k); break;
	case GPUOS_GGML_TYPE_Q6_K: e = GPUOS_QK_K; b = sizeof(struct gpuos_block_q6_k); break;
	default: e = 0; b = 0; break;
	}
	if (bytes)
		*bytes = b;
	return e;
}

/* A Q4_K or Q5_K block's 6-bit scale and min of sub-block j (0..7), packed
 * in 12 bytes (ggml's get_scale_min_k4). */
GPUOS_INLINE GPUOS_HD void gpuos_scale_min_k4(uint32_t j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = q[j] & 63u;
		*m = q[j + 4] & 63u;
	} else {
		*sc = (uint8_t)((q[j + 4] & 0xfu) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
	}
}

/* A Q3_K block's 6-bit scale of sub-block j (0..15), as a signed value
 * (the stored one less 32): low nibbles in bytes 0..7, high bit pairs in 8..11. */
GPUOS_INLINE GPUOS_HD int32_t gpuos_scale_q3_k(uint32_t j, const uint8_t *q)
{
	uint32_t lo = j < 8u ? q[j] & 0xfu : q[j - 8u] >> 4, hi = (q[8u + j % 4u] >> (2u * (j / 4u))) & 3u;
	return (int32_t)(lo | hi << 4) - 32;
}

/* ---- dequantisation ------------------------------------------------------------ */

/* Element j's 4 bits where element j sits in the low nibble of qs[j] and
 * j + 16 in its high one (the 32-element blocks). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nib32(const uint8_t *qs, uint32_t j)
{
	return j < 16u ? qs[j] & 0xfu : qs[j - 16u] >> 4;
}

/* The same for Q4_K and Q5_K: every 64 elements take 32 bytes, low nibbles
 * first. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nib64(const uint8_t *qs, uint32_t j)
{
	uint8_t b = qs[32u * (j / 64u) + j % 32u];
	return j % 64u < 32u ? b & 0xfu : (uint32_t)b >> 4;
}

/* Element j of block blk of type t (gpuos_quant_block's types; F32, F16,
 * BF16: blk is the element, j 0), as ggml's dequantize_row_* computes it. */
GPUOS_INLINE GPUOS_HD float gpuos_dequant_elem(uint32_t t, const void *blk, uint32_t j)
{
	switch (t) {
	case GPUOS_GGML_TYPE_F32: return *(const float *)blk;
	case GPUOS_GGML_TYPE_F16: return gpuos_f16_to_f32(*(const uint16_t *)blk);
	case GPUOS_GGML_TYPE_BF16: return gpuos_bf16_to_f32(*(const uint16_t *)blk);
	case GPUOS_GGML_TYPE_Q4_0: {
		const struct gpuos_block_q4_0 *x = (const struct gpuos_block_q4_0 *)blk;
		return gpuos_fmul_rn((float)((int32_t)gpuos_nib32(x->qs, j) - 8), gpuos_f16_to_f32(x->d));
	}
	case GPUOS_GGML_TYPE_Q4_1: {
		const struct gpuos_block_q4_1 *x = (const struct gpuos_block_q4_1 *)blk;
		return gpuos_fadd_rn(gpuos_fmul_rn((float)gpuos_nib32(x->qs, j), gpuos_f16_to_f32(x->d)),
				     gpuos_f16_to_f32(x->m));
	}
	case GPUOS_GGML_TYPE_Q5_0: {
		/* bit j of qh is the fifth bit */
		const struct gpuos_block_q5_0 *x = (const struct gpuos_block_q5_0 *)blk;
		uint32_t q = gpuos_nib32(x->qs, j) | ((x->qh[j / 8u] >> (j % 8u)) & 1u) << 4;
		return gpuos_fmul_rn((float)((int32_t)q - 16), gpuos_f16_to_f32(x->d));
	}
	case GPUOS_GGML_TYPE_Q5_1: {
		const struct gpuos_block_q5_1 *x = (const struct gpuos_block_q5_1 *)blk;
		uint32_t q = gpuos_nib32(x->qs, j) | ((x->qh[j / 8u] >> (j % 8u)) & 1u) << 4;
		return gpuos_fadd_rn(gpuos_fmul_rn((float)q, gpuos_f16_to_f32(x->d)), gpuos_f16_to_f32(x->m));
	}
	case GPUOS_GGML_TYPE_Q8_0: {
		const struct gpuos_block_q8_0 *x = (const struct gpuos_block_q8_0 *)blk;
		return gpuos_fmul_rn((float)x->qs[j], gpuos_f16_to_f32(x->d));
	}
	case GPUOS_GGML_TYPE_Q2_K: {
		/* 2 x 128 elements; in each, 4 shifts of the same 32 bytes, 16
		 * elements a scale: element = d * sc * q - dmin * m */
		const struct gpuos_block_q2_k *x = (const struct gpuos_block_q2_k *)blk;
		uint32_t q = (x->qs[32u * (j / 128u) + j % 32u] >> (2u * (j % 128u / 32u))) & 3u, sc = x->scales[j / 16u];
		float dl = gpuos_fmul_rn(gpuos_f16_to_f32(x->d), (float)(sc & 0xfu));
		float ml = gpuos_fmul_rn(gpuos_f16_to_f32(x->dmin), (float)(sc >> 4));
		return gpuos_fsub_rn(gpuos_fmul_rn(dl, (float)q), ml);
	}
	case GPUOS_GGML_TYPE_Q3_K: {
		/* as Q2_K's quants, less 4 where the element's bit of hmask (bit
		 * 4 * half + shift of byte j % 32) is clear */
		const struct gpuos_block_q3_k *x = (const struct gpuos_block_q3_k *)blk;
		uint32_t sh = j % 128u / 32u, q = (x->qs[32u * (j / 128u) + j % 32u] >> (2u * sh)) & 3u;
		int32_t v = (int32_t)q - ((x->hmask[j % 32u] >> (4u * (j / 128u) + sh)) & 1u ? 0 : 4);
		float dl = gpuos_fmul_rn(gpuos_f16_to_f32(x->d), (float)gpuos_scale_q3_k(j / 16u, x->scales));
		return gpuos_fmul_rn(dl, (float)v);
	}
	case GPUOS_GGML_TYPE_Q4_K:
	case GPUOS_GGML_TYPE_Q5_K: {
		/* both begin with d, dmin, scales: element = d * sc * q - dmin * m,
		 * 32 elements a scale and min */
		const struct gpuos_block_q4_k *x = (const struct gpuos_block_q4_k *)blk;
		const struct gpuos_block_q5_k *x5 = (const struct gpuos_block_q5_k *)blk;
		uint32_t q;
		uint8_t sc, m;
		gpuos_scale_min_k4(j / 32u, x->scales, &sc, &m);
		if (t == GPUOS_GGML_TYPE_Q4_K)
			q = gpuos_nib64(x->qs, j);
		else /* the fifth bit: bit j / 32 of qh[j % 32] */
			q = gpuos_nib64(x5->qs, j) | ((x5->qh[j % 32u] >> (j / 32u)) & 1u) << 4;
		return gpuos_fsub_rn(gpuos_fmul_rn(gpuos_fmul_rn(gpuos_f16_to_f32(x->d), (float)sc), (float)q),
				     gpuos_fmul_rn(gpuos_f16_to_f32(x->dmin), (float)m));
	}
	case GPUOS_GGML_TYPE_Q6_K: {
		/* 2 x 128 elements, in 4 groups of 32: the low nibbles of 32 bytes
		 * of ql, of the next 32, their high nibbles, then 2 bits each
		 * from the same 32 bytes of qh; 16 elements a scale */
		const struct gpuos_block_q6_k *x = (const struct gpuos_block_q6_k *)blk;
		uint32_t g = j % 128u / 32u, l = j % 32u;
		uint8_t b = x->ql[64u * (j / 128u) + 32u * (g & 1u) + l];
		uint32_t q = (g < 2u ? b & 0xfu : (uint32_t)b >> 4) | ((x->qh[32u * (j / 128u) + l] >> (2u * g)) & 3u) << 4;
		return gpuos_fmul_rn(gpuos_fmul_rn(gpuos_f16_to_f32(x->d), (float)x->scales[j / 16u]),
				     (float)((int32_t)q - 32));
	}
	default:
		return 0.0f;
	}
}

/* Elements [0, n) of a row of type t into y (n a multiple of the block). */
GPUOS_INLINE GPUOS_HD void gpuos_dequant_row(uint32_t t, const void *row, float *y, uint64_t n)
{
	uint32_t bytes, e = gpuos_quant_block(t, &bytes);
	uint64_t i;
	for (i = 0; e && i < n; i++)
		y[i] = gpuos_dequant_elem(t, (const uint8_t *)row + i / e * bytes, (uint32_t)(i % e));
}

/* ---- gpuos_dequant (gpuos/host.h) --------------------------------------------------- */

/* Bytes of an element of gpuos_dequant's output type out (F32, F16, BF16);
 * 0 for any other. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_dequant_out_bytes(uint32_t out)
{
	return out == GPUOS_GGML_TYPE_F32 ? 4u : out == GPUOS_GGML_TYPE_F16 || out == GPUOS_GGML_TYPE_BF16 ? 2u : 0u;
}

/* v as element i of dst, type out, rounded to nearest even. A NaN becomes
 * the type's quiet NaN (0x7fc00000, 0x7e00, 0x7fc0): the GPU's arithmetic
 * drops the payloads the CPU's keeps, so none is kept anywhere. */
GPUOS_INLINE GPUOS_HD void gpuos_dequant_put(uint32_t out, void *dst, uint64_t i, float v)
{
	if (v != v)
		v = gpuos_u32_as_f32(0x7fc00000u);
	if (out == GPUOS_GGML_TYPE_F16)
		((uint16_t *)dst)[i] = gpuos_f32_to_f16(v);
	else if (out == GPUOS_GGML_TYPE_BF16)
		((uint16_t *)dst)[i] = gpuos_f32_to_bf16(v);
	else
		((float *)dst)[i] = v;
}

/* Elements first, first + step, ... below end of src (type t, from its
 * element 0) into dst as out: one thread's share of gpuos_dequant. The GPU
 * kernel gives thread k of K first k and step K (a warp writes neighbours,
 * and reads the block they share); a host thread takes a range, step 1. */
GPUOS_INLINE GPUOS_HD void gpuos_dequant_span_of(uint32_t t, const void *src, uint32_t out, void *dst, uint64_t first,
						 uint64_t step, uint64_t end)
{
	uint32_t bytes, e = gpuos_quant_block(t, &bytes);
	uint64_t i;
	for (i = first; i < end; i += step)
		gpuos_dequant_put(out, dst, i, gpuos_dequant_elem(t, (const uint8_t *)src + i / e * bytes, (uint32_t)(i % e)));
}

GPUOS_INLINE GPUOS_HD void gpuos_dequant_span(uint32_t t, const void *src, uint32_t out, void *dst, uint64_t first,
					      uint64_t step, uint64_t end)
{
	/* one loop per type, inlined with t a constant: its block size and
	 * its branch of gpuos_dequant_elem fixed at compile time */
#define GPUOS_DEQUANT_CASE(T) \
	case T: gpuos_dequant_span_of(T, src, out, dst, first, step, end); break
	switch (t) {
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_F32);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_F16);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_BF16);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q4_0);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q4_1);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q5_0);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q5_1);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q8_0);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q2_K);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q3_K);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q4_K);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q5_K);
	GPUOS_DEQUANT_CASE(GPUOS_GGML_TYPE_Q6_K);
	default: break;
	}
#undef GPUOS_DEQUANT_CASE
}

/* One gpuos_dequant call as its GPU kernel (kernels/dequant.cuh) takes it,
 * by value: device addresses, n elements of type into out_type. */
struct gpuos_dequant_job {
	uint64_t src;       /* 0x00 */
	uint64_t dst;       /* 0x08 */
	uint64_t n;         /* 0x10 */
	uint32_t type;      /* 0x18 a GPUOS_GGML_TYPE_* with a block in gpuos_quant_block */
	uint32_t out_type;  /* 0x1c GPUOS_GGML_TYPE_F32, _F16 or _BF16 */
};
static_assert(sizeof(struct gpuos_dequant_job) == 32, "dequant job");

GPUOS_EXTERN_C_END

#endif /* GPUOS_QUANT_H */
