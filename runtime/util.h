/* SPDX-License-Identifier: MIT */
/*
 * runtime/util.h - the few libc-like helpers the runtime core needs, written
 * out so that they run on a GPU lane as well as on the host: byte copies and
 * compares, C string length and compares, little-endian loads and stores from
 * unaligned byte pointers, checked 64-bit arithmetic and alignment. All are
 * inline. The gpuos_mem_* ones go a byte at a time: metadata parsing is not
 * a hot path, and plain loops keep them free of alignment and aliasing
 * assumptions. The gpuos_buf_* ones move data buffers 8 bytes at a time
 * where alignment allows.
 *
 * Context: any (host thread or GPU lane); no state.
 */
#ifndef GPUOS_RUNTIME_UTIL_H
#define GPUOS_RUNTIME_UTIL_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

/* ---- memory ---------------------------------------------------------------- */

/* memcpy(); the ranges must not overlap. */
GPUOS_INLINE GPUOS_HD void gpuos_mem_copy(void *dst, const void *src, size_t n)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = s[i];
}

/* memset(). */
GPUOS_INLINE GPUOS_HD void gpuos_mem_set(void *dst, int c, size_t n)
{
	uint8_t *d = (uint8_t *)dst;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (uint8_t)c;
}

/* memcmp(): <0, 0, >0 as the first differing byte (unsigned) compares. */
GPUOS_INLINE GPUOS_HD int gpuos_mem_cmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i])
			return (int)x[i] - (int)y[i];
	return 0;
}

/* True when all n bytes are zero. */
GPUOS_INLINE GPUOS_HD int gpuos_mem_is_zero(const void *a, size_t n)
{
	const uint8_t *x = (const uint8_t *)a;
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i])
			return 0;
	return 1;
}

/* memcpy() for data buffers (cache pages, client memory): 8 bytes at a time
 * where both ends are 8-byte aligned, so that a GPU lane copies a 4 KiB page
 * in 512 loads, not 4096. Not for an object that the same code then reads
 * through its own type: the stores are uint64_t, and type-based alias
 * analysis may move such reads before them (gpuos_mem_copy is for those). */
GPUOS_INLINE GPUOS_HD void gpuos_buf_copy(void *dst, const void *src, uint64_t n)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	uint64_t i = 0;

	if ((((uintptr_t)d | (uintptr_t)s) & 7u) == 0)
		for (; i + 8u <= n; i += 8u)
			*(uint64_t *)(d + i) = *(const uint64_t *)(s + i);
	for (; i < n; i++)
		d[i] = s[i];
}

/* n zero bytes at dst by the `width` lanes of a warp, this one being
 * `lane`: lane 0 the unaligned head and tail, every lane every width-th
 * word between. */
GPUOS_INLINE GPUOS_HD void gpuos_buf_zero_lanes(void *dst, uint64_t n, uint32_t lane, uint32_t width)
{
	uint8_t *p = (uint8_t *)dst;
	uint64_t head = (8u - ((uintptr_t)p & 7u)) & 7u, words, i;

	if (head > n)
		head = n;
	words = (n - head) / 8u;
	if (lane == 0) {
		for (i = 0; i < head; i++)
			p[i] = 0;
		for (i = head + words * 8u; i < n; i++)
			p[i] = 0;
	}
	for (i = lane; i < words; i += width)
		*(uint64_t *)(p + head + i * 8u) = 0;
}

/* Zero a data buffer (a hole of a file, queue memory): bytes up to an 8-byte
 * boundary, then 8 at a time. The caveat of gpuos_buf_copy holds. */
GPUOS_INLINE GPUOS_HD void gpuos_buf_zero(void *dst, uint64_t n)
{
	gpuos_buf_zero_lanes(dst, n, 0, 1);
}

/* ---- C strings ------------------------------------------------------------- */

GPUOS_INLINE GPUOS_HD size_t gpuos_str_len(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* strnlen(): at most max, never reads s[max]. */
GPUOS_INLINE GPUOS_HD size_t gpuos_str_nlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

GPUOS_INLINE GPUOS_HD int gpuos_str_cmp(const char *a, const char *b)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	return (int)*x - (int)*y;
}

GPUOS_INLINE GPUOS_HD int gpuos_str_ncmp(const char *a, const char *b, size_t n)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
	size_t i;

	for (i = 0; i < n; i++) {
		if (x[i] != y[i])
			return (int)x[i] - (int)y[i];
		if (!x[i])
			return 0;
	}
	return 0;
}

/* Copy at most cap-1 bytes of src and NUL-terminate (cap > 0); returns the
 * number of bytes copied. Like strlcpy() without the length of src. */
GPUOS_INLINE GPUOS_HD size_t gpuos_str_copy(char *dst, const char *src, size_t cap)
{
	size_t i = 0;

	if (!cap)
		return 0;
	while (i + 1 < cap && src[i]) {
		dst[i] = src[i];
		i++;
	}
	dst[i] = '\0';
	return i;
}

/* ---- little-endian loads and stores from byte pointers ---------------------- */

GPUOS_INLINE GPUOS_HD uint16_t gpuos_le16(const void *p)
{
	const uint8_t *b = (const uint8_t *)p;

	return (uint16_t)(b[0] | (uint16_t)b[1] << 8);
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_le32(const void *p)
{
	const uint8_t *b = (const uint8_t *)p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

GPUOS_INLINE GPUOS_HD uint64_t gpuos_le64(const void *p)
{
	const uint8_t *b = (const uint8_t *)p;

	return (uint64_t)gpuos_le32(b) | (uint64_t)gpuos_le32(b + 4) << 32;
}

GPUOS_INLINE GPUOS_HD void gpuos_put_le16(void *p, uint16_t v)
{
	uint8_t *b = (uint8_t *)p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

GPUOS_INLINE GPUOS_HD void gpuos_put_le32(void *p, uint32_t v)
{
	uint8_t *b = (uint8_t *)p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

GPUOS_INLINE GPUOS_HD void gpuos_put_le64(void *p, uint64_t v)
{
	gpuos_put_le32(p, (uint32_t)v);
	gpuos_put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* ---- checked arithmetic ------------------------------------------------------
 * Return 1 (and leave *r unspecified) when the result does not fit in 64 bits.
 * Written out because __builtin_*_overflow is not available in nvcc's device
 * pass.
 */
GPUOS_INLINE GPUOS_HD int gpuos_add_overflow_u64(uint64_t a, uint64_t b, uint64_t *r)
{
	*r = a + b;
	return *r < a;
}

GPUOS_INLINE GPUOS_HD int gpuos_mul_overflow_u64(uint64_t a, uint64_t b, uint64_t *r)
{
	*r = a * b;
	return a != 0 && *r / a != b;
}

GPUOS_INLINE GPUOS_HD int gpuos_is_pow2_u64(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Round v up to a multiple of the power of two a; 1 on overflow (for
 * lengths read from a disk; GPUOS_ALIGN_UP of port.h for the others). */
GPUOS_INLINE GPUOS_HD int gpuos_align_up_u64(uint64_t v, uint64_t a, uint64_t *r)
{
	uint64_t t;

	if (gpuos_add_overflow_u64(v, a - 1, &t))
		return 1;
	*r = t & ~(a - 1);
	return 0;
}

/* ---- alignment of the runtime's own layouts --------------------------------- */

/* v rounded up to a whole 64-byte line: the runtime's blocks and regions
 * start on one, so that no two of them share a cache line. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_align_line(uint64_t v)
{
	return GPUOS_ALIGN_UP(v, (uint64_t)64);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_UTIL_H */
