/* SPDX-License-Identifier: MIT */
/*
 * apps/sha256.h - SHA-256 (FIPS 180-4, sections 4.1.2, 4.2.2, 5.1.1, 5.3.3,
 * 6.2) for app code that runs on a GPU lane or a host thread: one context
 * per thread, incremental (init, update any number of times, final).
 *
 * No tables: the 64 round constants are immediates of fully unrolled rounds,
 * so nothing needs __constant__ memory and gcc and nvcc compile the same
 * text. Full blocks are read as 32-bit words where the input is 4-byte
 * aligned (VRAM loads on the GPU), bytes otherwise.
 */
#ifndef GPUOS_APPS_SHA256_H
#define GPUOS_APPS_SHA256_H

#include "gpuos/port.h"

struct sha256_ctx {
	uint32_t h[8];       /* chaining value H(i) */
	uint64_t len;        /* message bytes so far */
	uint32_t nbuf;       /* bytes waiting in buf, < 64 */
	uint8_t buf[64];
};

#define SHA256_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define SHA256_CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))            /* 4.2 (4.2) */
#define SHA256_MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define SHA256_BS0(x) (SHA256_ROTR(x, 2) ^ SHA256_ROTR(x, 13) ^ SHA256_ROTR(x, 22))
#define SHA256_BS1(x) (SHA256_ROTR(x, 6) ^ SHA256_ROTR(x, 11) ^ SHA256_ROTR(x, 25))
#define SHA256_SS0(x) (SHA256_ROTR(x, 7) ^ SHA256_ROTR(x, 18) ^ ((x) >> 3))
#define SHA256_SS1(x) (SHA256_ROTR(x, 17) ^ SHA256_ROTR(x, 19) ^ ((x) >> 10))

/* W_t of 6.2.2 step 1 in a 16-word ring: rounds 16..63 extend it in place. */
#define SHA256_W(t)                                                                                   \
	((t) < 16 ? w[(t) & 15]                                                                       \
		  : (w[(t) & 15] += SHA256_SS1(w[((t) - 2) & 15]) + w[((t) - 7) & 15] +              \
				    SHA256_SS0(w[((t) - 15) & 15])))
/* One round of 6.2.2 step 3, the working variables renamed instead of moved. */
#define SHA256_RND(a, b, c, d, e, f, g, h, t, k)                                                      \
	do {                                                                                          \
		uint32_t t1_ = h + SHA256_BS1(e) + SHA256_CH(e, f, g) + (k) + SHA256_W(t);             \
		uint32_t t2_ = SHA256_BS0(a) + SHA256_MAJ(a, b, c);                                    \
		d += t1_;                                                                             \
		h = t1_ + t2_;                                                                        \
	} while (0)
#define SHA256_R8(t, k0, k1, k2, k3, k4, k5, k6, k7)                                                  \
	do {                                                                                          \
		SHA256_RND(a, b, c, d, e, f, g, h, (t) + 0, k0);                                      \
		SHA256_RND(h, a, b, c, d, e, f, g, (t) + 1, k1);                                      \
		SHA256_RND(g, h, a, b, c, d, e, f, (t) + 2, k2);                                      \
		SHA256_RND(f, g, h, a, b, c, d, e, (t) + 3, k3);                                      \
		SHA256_RND(e, f, g, h, a, b, c, d, (t) + 4, k4);                                      \
		SHA256_RND(d, e, f, g, h, a, b, c, (t) + 5, k5);                                      \
		SHA256_RND(c, d, e, f, g, h, a, b, (t) + 6, k6);                                      \
		SHA256_RND(b, c, d, e, f, g, h, a, (t) + 7, k7);                                      \
	} while (0)

/* 6.2.2: one 512-bit block, its 16 words already big-endian-decoded in w. */
GPUOS_INLINE GPUOS_HD void sha256_block(uint32_t *hv, uint32_t *w)
{
	uint32_t a = hv[0], b = hv[1], c = hv[2], d = hv[3], e = hv[4], f = hv[5], g = hv[6], h = hv[7];
	/* K_0..K_63 of 4.2.2 */
	SHA256_R8(0, 0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
		  0xab1c5ed5u);
	SHA256_R8(8, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u,
		  0xc19bf174u);
	SHA256_R8(16, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu,
		  0x76f988dau);
	SHA256_R8(24, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u,
		  0x14292967u);
	SHA256_R8(32, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu,
		  0x92722c85u);
	SHA256_R8(40, 0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u,
		  0x106aa070u);
	SHA256_R8(48, 0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu,
		  0x682e6ff3u);
	SHA256_R8(56, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
		  0xc67178f2u);
	hv[0] += a;
	hv[1] += b;
	hv[2] += c;
	hv[3] += d;
	hv[4] += e;
	hv[5] += f;
	hv[6] += g;
	hv[7] += h;
}

GPUOS_INLINE GPUOS_HD uint32_t sha256_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

GPUOS_INLINE GPUOS_HD uint32_t sha256_bswap32(uint32_t x)
{
	return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/* 5.3.3: the initial hash value H(0). */
GPUOS_INLINE GPUOS_HD void sha256_init(struct sha256_ctx *c)
{
	c->h[0] = 0x6a09e667u;
	c->h[1] = 0xbb67ae85u;
	c->h[2] = 0x3c6ef372u;
	c->h[3] = 0xa54ff53au;
	c->h[4] = 0x510e527fu;
	c->h[5] = 0x9b05688cu;
	c->h[6] = 0x1f83d9abu;
	c->h[7] = 0x5be0cd19u;
	c->len = 0;
	c->nbuf = 0;
}

GPUOS_INLINE GPUOS_HD void sha256_update(struct sha256_ctx *c, const void *data, uint64_t n)
{
	const uint8_t *p = (const uint8_t *)data;
	uint32_t w[16], i;
	c->len += n;
	if (c->nbuf) {
		while (n && c->nbuf < 64) {
			c->buf[c->nbuf++] = *p++;
			n--;
		}
		if (c->nbuf < 64)
			return;
		for (i = 0; i < 16; i++)
			w[i] = sha256_be32(c->buf + 4 * i);
		sha256_block(c->h, w);
		c->nbuf = 0;
	}
	if (((uintptr_t)p & 3u) == 0) {
		for (; n >= 64; n -= 64, p += 64) {
			const uint32_t *q = (const uint32_t *)(const void *)p;
			for (i = 0; i < 16; i++)
				w[i] = sha256_bswap32(q[i]); /* little-endian load (port.h checks) */
			sha256_block(c->h, w);
		}
	} else {
		for (; n >= 64; n -= 64, p += 64) {
			for (i = 0; i < 16; i++)
				w[i] = sha256_be32(p + 4 * i);
			sha256_block(c->h, w);
		}
	}
	while (n--)
		c->buf[c->nbuf++] = *p++;
}

/* 5.1.1 padding: a 1 bit, zeros, the 64-bit big-endian bit length. */
GPUOS_INLINE GPUOS_HD void sha256_final(struct sha256_ctx *c, uint8_t out[32])
{
	uint64_t bits = c->len * 8u;
	uint32_t w[16], i;
	c->buf[c->nbuf++] = 0x80;
	if (c->nbuf > 56) {
		while (c->nbuf < 64)
			c->buf[c->nbuf++] = 0;
		for (i = 0; i < 16; i++)
			w[i] = sha256_be32(c->buf + 4 * i);
		sha256_block(c->h, w);
		c->nbuf = 0;
	}
	while (c->nbuf < 56)
		c->buf[c->nbuf++] = 0;
	for (i = 0; i < 8; i++)
		c->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	for (i = 0; i < 16; i++)
		w[i] = sha256_be32(c->buf + 4 * i);
	sha256_block(c->h, w);
	for (i = 0; i < 8; i++) {
		out[4 * i + 0] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

#endif /* GPUOS_APPS_SHA256_H */
