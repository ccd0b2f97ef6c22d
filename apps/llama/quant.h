/* SPDX-License-Identifier: MIT */
/*
 * apps/llama/quant.h - the ggml tensor types the llama engine computes on
 * (issue 19): F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K. Their blocks,
 * conversions and dequantisation are gpuos/quant.h's (gpuos_dequant_row);
 * this file adds the engine's products. Portable (gcc and nvcc, host and
 * device), no allocation.
 *
 * Matrix-vector products follow ggml's CPU path so that the engine's
 * tokens can equal llama.cpp's: the activation vector is first converted to
 * the weight type's "dot type" (F16 for F16 weights, Q8_0 blocks for Q4_0
 * and Q8_0, Q8_K blocks for the K-quants), then each row's dot product is
 * taken block by block in integers, scaled in float.
 */
#ifndef GPUOS_APPS_LLAMA_QUANT_H
#define GPUOS_APPS_LLAMA_QUANT_H

#include "gpuos/quant.h"

GPUOS_EXTERN_C_BEGIN

/* The activations' K-quant dot type: never in a file, so laid out for the
 * GPU's loads, not as ggml's block_q8_K (d first, 292 bytes): the quants
 * first and the block padded to 304 bytes, so that a lane's 32 quants of
 * a piece are 16-byte aligned and come in two 16-byte loads (lanes.h). With
 * 4-byte loads a warp's eight loads of its pieces' activations each touched
 * 32 sectors and held the products at the L1's rate (issue 34). The same
 * values as ggml's block; only their places differ. */
struct llama_q8_k {
	int8_t qs[GPUOS_QK_K];
	float d;
	int16_t bsums[GPUOS_QK_K / 16];
	uint8_t pad[12];
};
static_assert(sizeof(struct llama_q8_k) == 304 && offsetof(struct llama_q8_k, d) == 256, "llama_q8_k");

/* The dot type of Q8_K activations (not a file type of ggml's list here). */
#define LLAMA_TYPE_Q8_K GPUOS_GGML_TYPE_Q8_K

/* Elements and bytes of one block of type t; 0 for a type the engine does
 * not compute on (it refuses such a model by the type's name). */
GPUOS_INLINE GPUOS_HD uint32_t llama_type_block(uint32_t t, uint32_t *bytes)
{
	switch (t) {
	case GPUOS_GGML_TYPE_F32: case GPUOS_GGML_TYPE_F16: case GPUOS_GGML_TYPE_BF16:
	case GPUOS_GGML_TYPE_Q4_0: case GPUOS_GGML_TYPE_Q8_0:
	case GPUOS_GGML_TYPE_Q4_K: case GPUOS_GGML_TYPE_Q5_K: case GPUOS_GGML_TYPE_Q6_K:
		return gpuos_quant_block(t, bytes);
	case LLAMA_TYPE_Q8_K:
		if (bytes)
			*bytes = sizeof(struct llama_q8_k);
		return GPUOS_QK_K;
	default:
		if (bytes)
			*bytes = 0;
		return 0;
	}
}

/* Bytes of a row of n elements (n a multiple of the block), 0 if not. */
GPUOS_INLINE GPUOS_HD uint64_t llama_row_bytes(uint32_t t, uint64_t n)
{
	uint32_t b, e = llama_type_block(t, &b);
	return e && n % e == 0 ? n / e * b : 0;
}

/* The type the activations take for a product with weights of type t. */
GPUOS_INLINE GPUOS_HD uint32_t llama_dot_type(uint32_t t)
{
	switch (t) {
	case GPUOS_GGML_TYPE_F16: return GPUOS_GGML_TYPE_F16;
	case GPUOS_GGML_TYPE_BF16: return GPUOS_GGML_TYPE_BF16;
	case GPUOS_GGML_TYPE_Q4_0:
	case GPUOS_GGML_TYPE_Q8_0: return GPUOS_GGML_TYPE_Q8_0;
	case GPUOS_GGML_TYPE_Q4_K:
	case GPUOS_GGML_TYPE_Q5_K:
	case GPUOS_GGML_TYPE_Q6_K: return LLAMA_TYPE_Q8_K;
	default: return GPUOS_GGML_TYPE_F32;
	}
}

/* The quants of one K-quant super-block as small integers, in element
 * order: Q4_K 0..15, Q5_K 0..31, Q6_K -32..31 (already centred). */
GPUOS_INLINE GPUOS_HD void llama_k_quants(uint32_t t, const void *blk, int8_t *a)
{
	uint32_t j, l;
	if (t == GPUOS_GGML_TYPE_Q4_K) {
		const struct gpuos_block_q4_k *x = (const struct gpuos_block_q4_k *)blk;
		for (j = 0; j < GPUOS_QK_K / 64u; j++)
			for (l = 0; l < 32u; l++) {
				a[64u * j + l] = (int8_t)(x->qs[32u * j + l] & 0xfu);
				a[64u * j + 32u + l] = (int8_t)(x->qs[32u * j + l] >> 4);
			}
	} else if (t == GPUOS_GGML_TYPE_Q5_K) {
		const struct gpuos_block_q5_k *x = (const struct gpuos_block_q5_k *)blk;
		for (j = 0; j < GPUOS_QK_K / 64u; j++)
			for (l = 0; l < 32u; l++) {
				uint8_t lo = (uint8_t)(1u << (2u * j)), hi = (uint8_t)(lo << 1);
				a[64u * j + l] = (int8_t)((x->qs[32u * j + l] & 0xfu) + (x->qh[l] & lo ? 16 : 0));
				a[64u * j + 32u + l] = (int8_t)((x->qs[32u * j + l] >> 4) + (x->qh[l] & hi ? 16 : 0));
			}
	} else {
		const struct gpuos_block_q6_k *x = (const struct gpuos_block_q6_k *)blk;
		for (j = 0; j < GPUOS_QK_K / 128u; j++) {
			const uint8_t *ql = x->ql + 64u * j, *qh = x->qh + 32u * j;
			int8_t *o = a + 128u * j;
			for (l = 0; l < 32u; l++) {
				o[l] = (int8_t)(((ql[l] & 0xfu) | ((qh[l] & 3u) << 4)) - 32);
				o[l + 32u] = (int8_t)(((ql[l + 32u] & 0xfu) | (((qh[l] >> 2) & 3u) << 4)) - 32);
				o[l + 64u] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3u) << 4)) - 32);
				o[l + 96u] = (int8_t)(((ql[l + 32u] >> 4) | (((qh[l] >> 6) & 3u) << 4)) - 32);
			}
		}
	}
}

/* ---- activations into the dot types --------------------------------------------- */

GPUOS_INLINE GPUOS_HD float llama_fabsf(float x) { return x < 0.0f ? -x : x; }

/* Round half away from zero, as C's roundf. */
GPUOS_INLINE GPUOS_HD float llama_roundf(float x)
{
	float t = (float)(int32_t)x; /* |x| < 2^31 here */
	if (llama_fabsf(x - t) >= 0.5f)
		t += x < 0.0f ? -1.0f : 1.0f;
	return t;
}

/* Nearest integer, ties to even (ggml's nearest_int, |x| < 2^22). */
GPUOS_INLINE GPUOS_HD int32_t llama_nearest_int(float x)
{
	float v = x + 12582912.0f;
	return (int32_t)(gpuos_f32_as_u32(v) & 0x007fffffu) - 0x00400000;
}

/* x[0, n) as type t (llama_dot_type's answers) into out. */
GPUOS_INLINE GPUOS_HD void llama_quantize_act(uint32_t t, const float *x, void *out, uint64_t n)
{
	uint64_t i;
	uint32_t j;
	switch (t) {
	case GPUOS_GGML_TYPE_F16:
		for (i = 0; i < n; i++)
			((uint16_t *)out)[i] = gpuos_f32_to_f16(x[i]);
		break;
	case GPUOS_GGML_TYPE_BF16:
		for (i = 0; i < n; i++)
			((uint16_t *)out)[i] = gpuos_f32_to_bf16(x[i]);
		break;
	case GPUOS_GGML_TYPE_Q8_0:
		for (i = 0; i < n / GPUOS_QK; i++) {
			struct gpuos_block_q8_0 *y = (struct gpuos_block_q8_0 *)out + i;
			const float *v = x + i * GPUOS_QK;
			float amax = 0.0f, d, id;
			for (j = 0; j < GPUOS_QK; j++)
				amax = llama_fabsf(v[j]) > amax ? llama_fabsf(v[j]) : amax;
			d = amax / 127.0f;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			y->d = gpuos_f32_to_f16(d);
			for (j = 0; j < GPUOS_QK; j++)
				y->qs[j] = (int8_t)llama_roundf(v[j] * id);
		}
		break;
	case LLAMA_TYPE_Q8_K:
		for (i = 0; i < n / GPUOS_QK_K; i++) {
			struct llama_q8_k *y = (struct llama_q8_k *)out + i;
			const float *v = x + i * GPUOS_QK_K;
			float max = 0.0f, amax = 0.0f, iscale;
			for (j = 0; j < GPUOS_QK_K; j++)
				if (llama_fabsf(v[j]) > amax) {
					amax = llama_fabsf(v[j]);
					max = v[j];
				}
			if (amax == 0.0f) {
				y->d = 0.0f;
				for (j = 0; j < GPUOS_QK_K; j++)
					y->qs[j] = 0;
			} else {
				iscale = -127.0f / max;
				for (j = 0; j < GPUOS_QK_K; j++) {
					int32_t q = llama_nearest_int(iscale * v[j]);
					y->qs[j] = (int8_t)(q < 127 ? q : 127);
				}
				y->d = 1.0f / iscale;
			}
			for (j = 0; j < GPUOS_QK_K / 16u; j++) {
				int32_t s = 0;
				uint32_t l;
				for (l = 0; l < 16u; l++)
					s += y->qs[16u * j + l];
				y->bsums[j] = (int16_t)s;
			}
			for (j = 0; j < sizeof(y->pad); j++) /* the same bytes every time */
				y->pad[j] = 0;
		}
		break;
	default:
		for (i = 0; i < n; i++)
			((float *)out)[i] = x[i];
		break;
	}
}

/* ---- one row's dot product with quantised activations ----------------------- */

/* llama_dot for the float types: F32, F16 and BF16 (a double sum). */
GPUOS_INLINE GPUOS_HD float llama_dot_float(uint32_t t, const void *row, const void *act, uint64_t n)
{
	const uint16_t *a = (const uint16_t *)row, *b = (const uint16_t *)act;
	int bf = t == GPUOS_GGML_TYPE_BF16;
	double s = 0.0;
	uint64_t i;
	if (t == GPUOS_GGML_TYPE_F32) {
		for (i = 0; i < n; i++)
			s += (double)(((const float *)row)[i] * ((const float *)act)[i]);
		return (float)s;
	}
	for (i = 0; i < n; i++)
		s += (double)((bf ? gpuos_bf16_to_f32(a[i]) : gpuos_f16_to_f32(a[i])) *
			      (bf ? gpuos_bf16_to_f32(b[i]) : gpuos_f16_to_f32(b[i])));
	return (float)s;
}

/* llama_dot for Q4_0 and Q8_0 weights against Q8_0 activations. */
GPUOS_INLINE GPUOS_HD float llama_dot_q8_0(uint32_t t, const void *row, const void *act, uint64_t n)
{
	const struct gpuos_block_q8_0 *y = (const struct gpuos_block_q8_0 *)act;
	float s = 0.0f;
	uint64_t i;
	uint32_t j;
	for (i = 0; i < n / GPUOS_QK; i++) {
		int32_t sumi = 0;
		float dx;
		if (t == GPUOS_GGML_TYPE_Q4_0) {
			const struct gpuos_block_q4_0 *x = (const struct gpuos_block_q4_0 *)row + i;
			for (j = 0; j < GPUOS_QK / 2u; j++)
				sumi += ((int32_t)(x->qs[j] & 0xfu) - 8) * y[i].qs[j] +
					((int32_t)(x->qs[j] >> 4) - 8) * y[i].qs[j + GPUOS_QK / 2u];
			dx = gpuos_f16_to_f32(x->d);
		} else {
			const struct gpuos_block_q8_0 *x = (const struct gpuos_block_q8_0 *)row + i;
			for (j = 0; j < GPUOS_QK; j++)
				sumi += (int32_t)x->qs[j] * y[i].qs[j];
			dx = gpuos_f16_to_f32(x->d);
		}
		s += (float)sumi * (dx * gpuos_f16_to_f32(y[i].d));
	}
	return s;
}

/* One K-quant super-block (its quants a) against a Q8_K block y: the
 * scaled integer sums by l % 8 into aux32, and the block's scale; the
 * minimum's part (Q4_K, Q5_K) taken off *s. */
GPUOS_INLINE GPUOS_HD float llama_dot_k_block(uint32_t t, const uint8_t *blk, const int8_t *a,
					      const struct llama_q8_k *y, int32_t *aux32, float *s)
{
	uint32_t j, l;
	if (t == GPUOS_GGML_TYPE_Q6_K) {
		const struct gpuos_block_q6_k *x = (const struct gpuos_block_q6_k *)blk;
		/* 16 sub-blocks of 16, each with its int8 scale */
		for (j = 0; j < 16u; j++)
			for (l = 0; l < 16u; l++)
				aux32[l % 8u] += x->scales[j] * (int32_t)(a[16u * j + l] * y->qs[16u * j + l]);
		return gpuos_f16_to_f32(x->d) * y->d;
	} else {
		const struct gpuos_block_q4_k *x = (const struct gpuos_block_q4_k *)blk;
		int32_t mins = 0;
		for (j = 0; j < 8u; j++) {
			uint8_t sc, m;
			gpuos_scale_min_k4(j, x->scales, &sc, &m);
			/* the mins meet the activations' sums of 16, two a sub-block */
			mins += (int32_t)m * (y->bsums[2u * j] + y->bsums[2u * j + 1u]);
			for (l = 0; l < 32u; l++)
				aux32[l % 8u] += (int32_t)sc * (a[32u * j + l] * y->qs[32u * j + l]);
		}
		*s -= gpuos_f16_to_f32(x->dmin) * y->d * (float)mins;
		return gpuos_f16_to_f32(x->d) * y->d;
	}
}

/* llama_dot for Q4_K, Q5_K and Q6_K weights against Q8_K activations. */
GPUOS_INLINE GPUOS_HD float llama_dot_k(uint32_t t, const void *row, const void *act, uint64_t n)
{
	const struct llama_q8_k *y = (const struct llama_q8_k *)act;
	uint32_t bytes, l;
	float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0.0f;
	int8_t a[GPUOS_QK_K];
	uint64_t i;
	llama_type_block(t, &bytes);
	for (i = 0; i < n / GPUOS_QK_K; i++) {
		const uint8_t *blk = (const uint8_t *)row + i * bytes;
		int32_t aux32[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		float d;
		llama_k_quants(t, blk, a);
		d = llama_dot_k_block(t, blk, a, &y[i], aux32, &s);
		for (l = 0; l < 8u; l++)
			sums[l] += d * (float)aux32[l];
	}
	for (l = 0; l < 8u; l++)
		s += sums[l];
	return s;
}

/* Row (type t, n elements) . act (llama_dot_type(t), n elements). */
GPUOS_INLINE GPUOS_HD float llama_dot(uint32_t t, const void *row, const void *act, uint64_t n)
{
	switch (t) {
	case GPUOS_GGML_TYPE_F32:
	case GPUOS_GGML_TYPE_F16:
	case GPUOS_GGML_TYPE_BF16:
		return llama_dot_float(t, row, act, n);
	case GPUOS_GGML_TYPE_Q4_0:
	case GPUOS_GGML_TYPE_Q8_0:
		return llama_dot_q8_0(t, row, act, n);
	case GPUOS_GGML_TYPE_Q4_K:
	case GPUOS_GGML_TYPE_Q5_K:
	case GPUOS_GGML_TYPE_Q6_K:
		return llama_dot_k(t, row, act, n);
	default:
		return 0.0f;
	}
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_APPS_LLAMA_QUANT_H */
