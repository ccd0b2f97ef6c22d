/* SPDX-License-Identifier: MIT */
/*
 * apps/llama/lanes.h - the engine's products at memory speed (issue 34).
 *
 * A row's dot product is cut into pieces of 32 elements; piece p is lane
 * p % 32's, so the 32 lanes of a warp read neighbouring bytes of the row
 * at once (one row, one warp: coalesced). A piece's integer product takes
 * four bytes at a time (__dp4a on the GPU, the same sums in C on the host);
 * its scales make it a double; the 32 lanes' sums are added by a butterfly
 * (warp shuffles on the GPU, the same tree over an array on the host, so
 * host mode adds in the same order; nvcc may fuse a K-quant piece's
 * multiply and subtract, so the last bit of a piece can differ).
 *
 * The integer parts equal llama.cpp CPU path's (apps/llama/quant.h's
 * llama_dot): the same quants, the same activations (Q8_0, Q8_K), the same
 * scales. Only the order in which the scaled pieces are added differs
 * (double here, float there), which moves a logit by float rounding: the
 * referee's tie rule (tests/tools/llama_same.py) is about exactly that.
 *
 * A batch: the weights of a piece are unpacked once and taken against
 * every sequence's activations (llama_rows_dot), so that a row read from
 * memory serves B tokens.
 */
#ifndef GPUOS_APPS_LLAMA_LANES_H
#define GPUOS_APPS_LLAMA_LANES_H

#include "quant.h"

GPUOS_EXTERN_C_BEGIN

#define LLAMA_LANES 32u
#define LLAMA_PIECE 32u    /* elements of a piece */
#define LLAMA_MAX_BATCH 32u
#define LLAMA_GROUP 8u     /* sequences a lane sums at once: their sums stay in registers */

/* c + the products of a's and b's four signed bytes. */
GPUOS_INLINE GPUOS_HD int32_t llama_dp4a(int32_t a, int32_t b, int32_t c)
{
#if GPUOS_ON_GPU
	return __dp4a(a, b, c);
#else
	uint32_t k;
	for (k = 0; k < 32u; k += 8u)
		c += (int32_t)(int8_t)(uint8_t)((uint32_t)a >> k) * (int32_t)(int8_t)(uint8_t)((uint32_t)b >> k);
	return c;
#endif
}

/* Four bytes at p, which is 2-byte aligned (Q4_0's 18-byte and Q6_K's
 * 210-byte blocks leave no better), little-endian. */
GPUOS_INLINE GPUOS_HD int32_t llama_ld2(const void *p)
{
	const uint16_t *h = (const uint16_t *)p;
	return (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 16);
}

/* Four bytes at p, 4-byte aligned (Q4_K, Q5_K and Q8_K blocks' quants). */
GPUOS_INLINE GPUOS_HD int32_t llama_ld4(const void *p)
{
	return *(const int32_t *)p;
}

/* 32 bytes at p (4-byte aligned) as 8 ints. al: p is 16-byte aligned, so
 * that on the GPU two 16-byte loads ask for the lane's piece at once; the
 * caller knows it for a whole row (a constant after llama_lane_dot's
 * dispatch, so no branch stays between a group's loads). */
GPUOS_INLINE GPUOS_HD void llama_ld32(const uint8_t *p, int32_t *v, int al)
{
	uint32_t k;
#if GPUOS_ON_GPU
	if (al) {
		int4 a = *(const int4 *)p, b = *(const int4 *)(p + 16);
		v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
		v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
		return;
	}
#else
	(void)al;
#endif
	for (k = 0; k < 8u; k++)
		v[k] = llama_ld4(p + 4u * k);
}

/* 32 bytes at p, which is only 2-byte aligned (a Q6_K block's quants), as
 * 8 ints: three 16-byte aligned loads of the window around them, then each
 * int shifted out of its two words (a 2-byte aligned int took two 2-byte
 * loads, 32 loads a Q6_K piece). The window [p & ~15, +48) must be
 * readable: in a Q6_K block the quants' windows stay inside the block, but
 * for the row's first, which starts no earlier than the tensor (16-byte
 * aligned). The same source on the host. */
GPUOS_INLINE GPUOS_HD void llama_ld32_2(const uint8_t *p, int32_t *v)
{
	uint32_t o = (uint32_t)((uintptr_t)p & 15u), s = o >> 2, sh = 8u * (o & 3u), k;
	const uint8_t *base = p - o;
	int32_t w[12];
#if GPUOS_ON_GPU
	int4 a = ((const int4 *)base)[0], b = ((const int4 *)base)[1], c = ((const int4 *)base)[2];
	w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y;
	w[6] = b.z, w[7] = b.w, w[8] = c.x, w[9] = c.y, w[10] = c.z, w[11] = c.w;
#else
	for (k = 0; k < 12u; k++)
		w[k] = llama_ld4(base + 4u * k);
#endif
#if GPUOS_ON_GPU
#pragma unroll
#endif
	for (k = 0; k < 8u; k++) {
		/* constant indices only, so w stays in registers on the GPU */
		uint32_t lo = (uint32_t)(s == 0 ? w[k] : s == 1 ? w[k + 1u] : s == 2 ? w[k + 2u] : w[k + 3u]);
		uint32_t hi = (uint32_t)(s == 0 ? w[k + 1u] : s == 1 ? w[k + 2u] : s == 2 ? w[k + 3u] : w[k + 4u]);
#if GPUOS_ON_GPU
		v[k] = (int32_t)__funnelshift_r(lo, hi, sh);
#else
		v[k] = (int32_t)(uint32_t)((((uint64_t)hi << 32) | lo) >> sh);
#endif
	}
}

/* A float as binary16, rounding to nearest even: on the GPU the conversion
 * instruction, which rounds as gpuos_f32_to_f16 does (its NaNs aside). */
GPUOS_INLINE GPUOS_HD uint16_t llama_f16(float f)
{
#if GPUOS_ON_GPU
	uint16_t h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
#else
	return gpuos_f32_to_f16(f);
#endif
}

/* A block's binary16 scale as a float. On the GPU the conversion
 * instruction: exact for every finite half, as gpuos_f16_to_f32 is, but
 * without its branches, which would make a group's later loads wait for
 * this piece's scale to arrive. */
GPUOS_INLINE GPUOS_HD float llama_half(uint16_t h)
{
#if GPUOS_ON_GPU
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
#else
	return gpuos_f16_to_f32(h);
#endif
}

/* One piece of weights, unpacked: 32 small integers four to an int, and
 * the scales that make their products with an activation piece a value. */
struct llama_piece {
	int32_t q[8];
	float d, dmin;      /* the block's scales (Q4_K/Q5_K: and its minimum's) */
	int32_t sc0, sc1;   /* Q4_K/Q5_K: the sub-block's scale (sc0) and min (sc1); Q6_K: the two 16s' scales */
	uint32_t blk, sub;  /* the piece's block, and its 32 elements' place in it */
};

/* gpuos_scale_min_k4 without a branch: j is a lane's own (p % 8), so on
 * the GPU a branch on it would split the warp in the middle of a group's
 * loads. The 12 bytes are 3 aligned words (they start 4 bytes into the
 * block); both of ggml's cases are computed and one is kept. */
GPUOS_INLINE GPUOS_HD void llama_scale_min_k4(uint32_t j, const uint8_t *q, int32_t *sc, int32_t *m)
{
	uint32_t w0 = (uint32_t)llama_ld4(q), w1 = (uint32_t)llama_ld4(q + 4), w2 = (uint32_t)llama_ld4(q + 8);
	uint32_t k = 8u * (j & 3u), b0 = (w0 >> k) & 0xffu, b1 = (w1 >> k) & 0xffu, b2 = (w2 >> k) & 0xffu;
	int lo = j < 4u;
	/* j < 4: q[j], q[j + 4]; else (k for j - 4): q[j + 4] with q[j - 4], q[j] */
	*sc = (int32_t)(lo ? b0 & 63u : (b2 & 0xfu) | (b0 >> 6) << 4);
	*m = (int32_t)(lo ? b1 & 63u : (b2 >> 4) | (b1 >> 6) << 4);
}

/* Piece p of a row of type t (a quantised type: Q4_0, Q8_0, Q4_K, Q5_K,
 * Q6_K) unpacked into w; al as llama_ld32's for the row. */
GPUOS_INLINE GPUOS_HD void llama_unpack(uint32_t t, const uint8_t *row, uint64_t p, struct llama_piece *w, int al)
{
	uint32_t k;
	w->dmin = 0.0f;
	w->sc0 = w->sc1 = 0;
	if (t == GPUOS_GGML_TYPE_Q4_0 || t == GPUOS_GGML_TYPE_Q8_0) {
		w->blk = (uint32_t)p;
		w->sub = 0;
		if (t == GPUOS_GGML_TYPE_Q4_0) {
			const struct gpuos_block_q4_0 *x = (const struct gpuos_block_q4_0 *)row + p;
			for (k = 0; k < 4u; k++) {
				int32_t v = llama_ld2(x->qs + 4u * k);
				w->q[k] = v & 0x0f0f0f0f;           /* elements 4k..4k+3 */
				w->q[k + 4u] = (v >> 4) & 0x0f0f0f0f; /* and 16 on */
			}
			w->d = llama_half(x->d);
		} else {
			const struct gpuos_block_q8_0 *x = (const struct gpuos_block_q8_0 *)row + p;
			for (k = 0; k < 8u; k++)
				w->q[k] = llama_ld2(x->qs + 4u * k);
			w->d = llama_half(x->d);
		}
		return;
	}
	w->blk = (uint32_t)(p / 8u);
	w->sub = (uint32_t)(p % 8u);
	if (t == GPUOS_GGML_TYPE_Q4_K || t == GPUOS_GGML_TYPE_Q5_K) {
		/* sub-block s: the low (s even) or high nibbles of qs[32 (s / 2) ..] */
		uint32_t s = w->sub, sh = 4u * (s & 1u);
		const uint8_t *scales;
		int32_t v[8];
		if (t == GPUOS_GGML_TYPE_Q4_K) {
			const struct gpuos_block_q4_k *x = (const struct gpuos_block_q4_k *)row + w->blk;
			scales = x->scales;
			w->d = llama_half(x->d);
			w->dmin = llama_half(x->dmin);
			llama_ld32(x->qs + 32u * (s / 2u), v, al);
			for (k = 0; k < 8u; k++)
				w->q[k] = (v[k] >> sh) & 0x0f0f0f0f;
		} else {
			const struct gpuos_block_q5_k *x = (const struct gpuos_block_q5_k *)row + w->blk;
			int32_t h[8];
			scales = x->scales;
			w->d = llama_half(x->d);
			w->dmin = llama_half(x->dmin);
			llama_ld32(x->qs + 32u * (s / 2u), v, al);
			llama_ld32(x->qh, h, al);
			/* the fifth bit of element l of sub-block s: bit s of qh[l] */
			for (k = 0; k < 8u; k++)
				w->q[k] = ((v[k] >> sh) & 0x0f0f0f0f) | (((h[k] >> s) & 0x01010101) << 4);
		}
		llama_scale_min_k4(s, scales, &w->sc0, &w->sc1);
		return;
	}
	{
		/* Q6_K: piece s is elements 128 j + 32 q + [0, 32), j = s / 4,
		 * q = s % 4: low nibbles (q < 2) or high of ql[64 j + 32 (q & 1) ..],
		 * bits 2q, 2q + 1 of qh[32 j ..]; two scales, one per 16 */
		const struct gpuos_block_q6_k *x = (const struct gpuos_block_q6_k *)row + w->blk;
		uint32_t j = w->sub / 4u, q = w->sub % 4u;
		int32_t l[8], h[8];
		llama_ld32_2(x->ql + 64u * j + 32u * (q & 1u), l);
		llama_ld32_2(x->qh + 32u * j, h);
		for (k = 0; k < 8u; k++)
			w->q[k] = ((l[k] >> (4u * (q >> 1))) & 0x0f0f0f0f) | (((h[k] >> (2u * q)) & 0x03030303) << 4);
		w->d = llama_half(x->d);
		w->sc0 = x->scales[8u * j + 2u * q];
		w->sc1 = x->scales[8u * j + 2u * q + 1u];
	}
}

/* w . the same piece of an activation row (llama_dot_type(t)). */
GPUOS_INLINE GPUOS_HD double llama_piece_dot(uint32_t t, const struct llama_piece *w, const uint8_t *act)
{
	uint32_t k;
	if (t == GPUOS_GGML_TYPE_Q4_0 || t == GPUOS_GGML_TYPE_Q8_0) {
		const struct gpuos_block_q8_0 *y = (const struct gpuos_block_q8_0 *)act + w->blk;
		int32_t sumi = 0;
		for (k = 0; k < 8u; k++)
			sumi = llama_dp4a(w->q[k], llama_ld2(y->qs + 4u * k), sumi);
		if (t == GPUOS_GGML_TYPE_Q4_0) {
			/* the quants are 0..15 for -8..7: take 8 times the activations' sum off */
			int32_t sumy = 0;
			for (k = 0; k < 8u; k++)
				sumy = llama_dp4a(0x01010101, llama_ld2(y->qs + 4u * k), sumy);
			sumi -= 8 * sumy;
		}
		return (double)((float)sumi * (w->d * llama_half(y->d)));
	}
	{
		const struct llama_q8_k *y = (const struct llama_q8_k *)act + w->blk;
		int32_t a[8], bs = llama_ld4(y->bsums + 2u * w->sub); /* the piece's two sums of 16, little-endian */
		int32_t bs0 = (int16_t)(uint16_t)((uint32_t)bs & 0xffffu), bs1 = (int16_t)(uint16_t)((uint32_t)bs >> 16);
		llama_ld32((const uint8_t *)y->qs + 32u * w->sub, a, 1); /* 16-byte aligned: struct llama_q8_k */
		if (t == GPUOS_GGML_TYPE_Q6_K) {
			/* the quants are 0..63 for -32..31: 32 times each 16's sum off */
			int32_t s0 = 0, s1 = 0;
			for (k = 0; k < 4u; k++) {
				s0 = llama_dp4a(w->q[k], a[k], s0);
				s1 = llama_dp4a(w->q[k + 4u], a[k + 4u], s1);
			}
			s0 -= 32 * bs0;
			s1 -= 32 * bs1;
			return (double)(w->d * y->d) * (double)(w->sc0 * s0 + w->sc1 * s1);
		} else {
			int32_t s = 0;
			for (k = 0; k < 8u; k++)
				s = llama_dp4a(w->q[k], a[k], s);
			return (double)(w->d * y->d) * (double)(w->sc0 * s) -
			       (double)(w->dmin * y->d) * (double)(w->sc1 * (bs0 + bs1));
		}
	}
}

/* Element i of a float row (F32, F16, BF16) as a float. */
GPUOS_INLINE GPUOS_HD float llama_elem(uint32_t t, const uint8_t *row, uint64_t i)
{
	if (t == GPUOS_GGML_TYPE_F32)
		return ((const float *)row)[i];
	if (t == GPUOS_GGML_TYPE_BF16)
		return gpuos_bf16_to_f32(((const uint16_t *)row)[i]);
	return gpuos_f16_to_f32(((const uint16_t *)row)[i]);
}

GPUOS_INLINE GPUOS_HD int llama_is_float(uint32_t t)
{
	return t == GPUOS_GGML_TYPE_F32 || t == GPUOS_GGML_TYPE_F16 || t == GPUOS_GGML_TYPE_BF16;
}

/* Pieces a lane has in flight: LLAMA_DEPTH of its pieces are loaded
 * before the first is multiplied, so that a warp keeps LLAMA_DEPTH x 32
 * pieces' bytes on their way from memory (one at a time, the products ran
 * at the latency of memory, not its bandwidth). A batch takes each piece
 * against LLAMA_GROUP sequences, so fewer pieces in flight cover its
 * loads, and its sums need the registers. */
#ifndef LLAMA_DEPTH /* -DLLAMA_DEPTH=N builds another depth to measure beside this one */
#define LLAMA_DEPTH 4u
#endif
#define LLAMA_DEPTH_BATCH 2u

/* llama_lane_dot for a quantised type t over np pieces, `depth` pieces at
 * once (t and depth are constants where it is called): groups of depth
 * pieces (every load of a group before its first product), then the
 * pieces left one by one. The sums are added piece by piece in the same
 * order either way. */
GPUOS_INLINE GPUOS_HD void llama_lane_group(uint32_t t, const uint8_t *row, const uint8_t *act, uint64_t stride,
					    uint32_t nb, uint64_t np, uint32_t lane, double *s, int al, uint32_t depth)
{
	const uint64_t group = (uint64_t)depth * LLAMA_LANES;
	uint64_t p = lane, whole = np - np % group; /* p < whole: all of p's group is in the row */
	uint32_t b, u;
	for (; p < whole; p += group) {
		struct llama_piece w[LLAMA_DEPTH];
#if GPUOS_ON_GPU
#pragma unroll
#endif
		for (u = 0; u < depth; u++)
			llama_unpack(t, row, p + (uint64_t)u * LLAMA_LANES, &w[u], al);
#if GPUOS_ON_GPU
#pragma unroll
#endif
		for (u = 0; u < depth; u++)
#if GPUOS_ON_GPU
#pragma unroll
#endif
			for (b = 0; b < LLAMA_GROUP; b++)
				if (b < nb)
					s[b] += llama_piece_dot(t, &w[u], act + b * stride);
	}
	for (; p < np; p += LLAMA_LANES) {
		struct llama_piece w;
		llama_unpack(t, row, p, &w, al);
#if GPUOS_ON_GPU
#pragma unroll
#endif
		for (b = 0; b < LLAMA_GROUP; b++)
			if (b < nb)
				s[b] += llama_piece_dot(t, &w, act + b * stride);
	}
}

/* llama_lane_group at the depth for one sequence or a batch. */
GPUOS_INLINE GPUOS_HD void llama_lane_pieces(uint32_t t, const uint8_t *row, const uint8_t *act, uint64_t stride,
					     uint32_t nb, uint64_t np, uint32_t lane, double *s, int al)
{
	if (nb == 1)
		llama_lane_group(t, row, act, stride, 1, np, lane, s, al, LLAMA_DEPTH);
	else
		llama_lane_group(t, row, act, stride, nb, np, lane, s, al, LLAMA_DEPTH_BATCH);
}

/* Lane `lane`'s share of row . act[b] for b < nb <= LLAMA_GROUP (act[b] at
 * act + b * stride), added into s[b]: pieces lane, lane + 32, ... The loops
 * over b run to LLAMA_GROUP, so that unrolled on the GPU each s[b] is a
 * register, not local memory. */
GPUOS_INLINE GPUOS_HD void llama_lane_dot(uint32_t t, const uint8_t *row, const uint8_t *act, uint64_t stride,
					  uint32_t nb, uint64_t n, uint32_t lane, double *s)
{
	uint64_t p, np = n / LLAMA_PIECE;
	uint32_t b, i;
	if (llama_is_float(t)) {
		/* the activations are in the weights' type (F32 for F32); a
		 * float row's length need not be a whole number of pieces */
		for (p = lane; p * LLAMA_PIECE < n; p += LLAMA_LANES)
			for (b = 0; b < LLAMA_GROUP; b++)
				for (i = 0; b < nb && i < LLAMA_PIECE && p * LLAMA_PIECE + i < n; i++)
					s[b] += (double)(llama_elem(t, row, p * LLAMA_PIECE + i) *
							 llama_elem(t, act + b * stride, p * LLAMA_PIECE + i));
		return;
	}
	switch (t) { /* one loop per type: a constant t leaves no branch in it */
	case GPUOS_GGML_TYPE_Q4_0:
		llama_lane_pieces(GPUOS_GGML_TYPE_Q4_0, row, act, stride, nb, np, lane, s, 0);
		break;
	case GPUOS_GGML_TYPE_Q8_0:
		llama_lane_pieces(GPUOS_GGML_TYPE_Q8_0, row, act, stride, nb, np, lane, s, 0);
		break;
	case GPUOS_GGML_TYPE_Q6_K:
		llama_lane_pieces(GPUOS_GGML_TYPE_Q6_K, row, act, stride, nb, np, lane, s, 0);
		break;
	case GPUOS_GGML_TYPE_Q4_K:
		if (((uintptr_t)row & 15u) == 0)
			llama_lane_pieces(GPUOS_GGML_TYPE_Q4_K, row, act, stride, nb, np, lane, s, 1);
		else
			llama_lane_pieces(GPUOS_GGML_TYPE_Q4_K, row, act, stride, nb, np, lane, s, 0);
		break;
	default: /* Q5_K: llama_row_bytes refused the rest */
		if (((uintptr_t)row & 15u) == 0)
			llama_lane_pieces(GPUOS_GGML_TYPE_Q5_K, row, act, stride, nb, np, lane, s, 1);
		else
			llama_lane_pieces(GPUOS_GGML_TYPE_Q5_K, row, act, stride, nb, np, lane, s, 0);
	}
}

/* out[b] = row . act[b] for b < nb (at most LLAMA_MAX_BATCH): lane `lane`
 * of a warp on the GPU, where all 32 lanes call it together and all get
 * the sums, LLAMA_GROUP sequences a pass over the row (the row's later
 * passes come from the cache); on the host one call does all 32 lanes'
 * shares and adds them in the butterfly's order. */
GPUOS_INLINE GPUOS_HD void llama_rows_dot(uint32_t t, const uint8_t *row, const uint8_t *act, uint64_t stride,
					  uint32_t nb, uint64_t n, uint32_t lane, float *out)
{
	uint32_t b;
#if GPUOS_ON_GPU
	for (b = 0; b < nb; b += LLAMA_GROUP) {
		uint32_t ng = nb - b < LLAMA_GROUP ? nb - b : LLAMA_GROUP, j, off;
		double s[LLAMA_GROUP];
#pragma unroll
		for (j = 0; j < LLAMA_GROUP; j++)
			s[j] = 0.0;
		llama_lane_dot(t, row, act + b * stride, stride, ng, n, lane, s);
#pragma unroll
		for (j = 0; j < LLAMA_GROUP; j++)
			if (j < ng) {
				for (off = LLAMA_LANES / 2u; off; off >>= 1)
					s[j] += __shfl_xor_sync(0xffffffffu, s[j], off);
				out[b + j] = (float)s[j];
			}
	}
#else
	uint32_t k, off;
	(void)lane;
	for (b = 0; b < nb; b++) {
		double v[LLAMA_LANES];
		for (k = 0; k < LLAMA_LANES; k++) {
			v[k] = 0.0;
			llama_lane_dot(t, row, act + b * stride, 0, 1, n, k, &v[k]);
		}
		/* lane k adds lane k ^ off's sum: lane 0 ends with this tree */
		for (off = LLAMA_LANES / 2u; off; off >>= 1)
			for (k = 0; k < off; k++)
				v[k] += v[k + off];
		out[b] = (float)v[0];
	}
#endif
}

/* One block of an activation (Q8_0: 32 elements, Q8_K: 256) quantised by
 * the 32 lanes of a warp, each taking elements lane, lane + 32, ...: the
 * same bytes as llama_quantize_act's (quant.h). The largest magnitude is
 * found with the same comparisons, Q8_K's first one of equal magnitudes
 * by its index; each quant is its own element's; the 16-element sums are
 * integers. On the host a call quantises the block alone (lane 0). */
GPUOS_INLINE GPUOS_HD void llama_quantize_block(uint32_t t, const float *x, uint8_t *out, uint32_t lane)
{
#if GPUOS_ON_GPU
	uint32_t n = t == LLAMA_TYPE_Q8_K ? GPUOS_QK_K : GPUOS_QK, i, best = ~0u, off;
	float amax = 0.0f, max = 0.0f;
	for (i = lane; i < n; i += LLAMA_LANES)
		if (llama_fabsf(x[i]) > amax) {
			amax = llama_fabsf(x[i]);
			max = x[i];
			best = i;
		}
	for (off = LLAMA_LANES / 2u; off; off >>= 1) {
		float oa = __shfl_xor_sync(0xffffffffu, amax, off), om = __shfl_xor_sync(0xffffffffu, max, off);
		uint32_t ob = __shfl_xor_sync(0xffffffffu, best, off);
		if (oa > amax || (oa == amax && ob < best)) {
			amax = oa;
			max = om;
			best = ob;
		}
	}
	if (t == GPUOS_GGML_TYPE_Q8_0) {
		struct gpuos_block_q8_0 *y = (struct gpuos_block_q8_0 *)out;
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		if (lane == 0)
			y->d = gpuos_f32_to_f16(d);
		y->qs[lane] = (int8_t)llama_roundf(x[lane] * id);
		return;
	}
	{
		struct llama_q8_k *y = (struct llama_q8_k *)out;
		float iscale = amax == 0.0f ? 0.0f : -127.0f / max;
		for (i = lane; i < n; i += LLAMA_LANES) {
			int32_t q = llama_nearest_int(iscale * x[i]);
			y->qs[i] = amax == 0.0f ? 0 : (int8_t)(q < 127 ? q : 127);
		}
		if (lane == 0)
			y->d = amax == 0.0f ? 0.0f : 1.0f / iscale;
		if (lane < sizeof(y->pad))
			y->pad[lane] = 0; /* llama_quantize_act's bytes */
		__syncwarp(); /* every lane's quants before the sums of 16 */
		if (lane < GPUOS_QK_K / 16u) {
			int32_t sum = 0;
			for (i = 0; i < 16u; i++)
				sum += y->qs[16u * lane + i];
			y->bsums[lane] = (int16_t)sum;
		}
	}
#else
	(void)lane;
	llama_quantize_act(t, x, out, t == LLAMA_TYPE_Q8_K ? GPUOS_QK_K : GPUOS_QK);
#endif
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_APPS_LLAMA_LANES_H */
