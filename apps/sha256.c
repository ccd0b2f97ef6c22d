/* SPDX-License-Identifier: MIT */
/*
 * sha256: the SHA-256 digest of files, read through the runtime and hashed
 * on the GPU (FIPS 180-4, section 6.2). One line per file, as sha256sum
 * prints it:
 *
 *     gpuos run build/apps/sha256.cubin --device emu:disk.img -- /etc/hosts
 *     e3b0c442...  /etc/hosts
 *
 * Thread 0 does the work; hashing is sequential by nature. It overlaps
 * reading with hashing by double buffering: while it hashes chunk i in one
 * buffer, the READ of chunk i + 1 into the other is already posted, and it
 * collects that one only when it is done hashing. The buffers are in the
 * app's VRAM (where the bytes land next to the hashing thread), or in the
 * heap when there is too little VRAM. Other threads return at once.
 *
 * Exit status: 0; 1 when a file could not be read (the others are still
 * hashed, as sha256sum does); 2 for bad usage.
 */
#include "gpuos/gpuos.h"
#include "gpuos/app.h"

GPUOS_APP_ABI_NOTE;

#define CHUNK_MAX (1u << 20)     /* bytes per READ */
#define CHUNK_MIN (64u << 10)
#define WHY_BYTES 512u           /* the runtime's reason for a failed open, in the heap */

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------ */

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))                 /* 4.2 */
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))   /* 4.3 */
#define BSIG0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))        /* 4.4 */
#define BSIG1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))        /* 4.5 */
#define SSIG0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))         /* 4.6 */
#define SSIG1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))       /* 4.7 */

/* Round t of 6.2.2 step 4 with the working variables renamed instead of
 * moved (a..h rotate by one each round), and the message schedule of step
 * 1 computed in place in a ring of 16 words. The constants are literals:
 * on the GPU they become immediates, with no table in memory. */
#define ROUND(a, b, c, d, e, f, g, h, t, k)                                                           \
	do {                                                                                          \
		uint32_t wt_;                                                                         \
		if ((t) < 16)                                                                         \
			wt_ = w[(t) & 15];                                                            \
		else                                                                                  \
			wt_ = w[(t) & 15] += SSIG1(w[((t) - 2) & 15]) + w[((t) - 7) & 15] +           \
					     SSIG0(w[((t) - 15) & 15]);                               \
		uint32_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + (k) + wt_;                              \
		uint32_t t2_ = BSIG0(a) + MAJ(a, b, c);                                               \
		(d) += t1_;                                                                           \
		(h) = t1_ + t2_;                                                                      \
	} while (0)

#define ROUND8(t, k0, k1, k2, k3, k4, k5, k6, k7)             \
	do {                                                  \
		ROUND(a, b, c, d, e, f, g, h, (t) + 0, k0);   \
		ROUND(h, a, b, c, d, e, f, g, (t) + 1, k1);   \
		ROUND(g, h, a, b, c, d, e, f, (t) + 2, k2);   \
		ROUND(f, g, h, a, b, c, d, e, (t) + 3, k3);   \
		ROUND(e, f, g, h, a, b, c, d, (t) + 4, k4);   \
		ROUND(d, e, f, g, h, a, b, c, (t) + 5, k5);   \
		ROUND(c, d, e, f, g, h, a, b, (t) + 6, k6);   \
		ROUND(b, c, d, e, f, g, h, a, (t) + 7, k7);   \
	} while (0)

/* One 512-bit block, its 16 words already big-endian decoded (w is used up). */
GPUOS_HD static void sha256_compress(uint32_t hs[8], uint32_t w[16])
{
	uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3], e = hs[4], f = hs[5], g = hs[6], h = hs[7];

	/* K, section 4.2.2 */
	ROUND8(0, 0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u);
	ROUND8(8, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u);
	ROUND8(16, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau);
	ROUND8(24, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u);
	ROUND8(32, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u);
	ROUND8(40, 0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u);
	ROUND8(48, 0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u);
	ROUND8(56, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u);

	/* step 4: the intermediate hash value */
	hs[0] += a;
	hs[1] += b;
	hs[2] += c;
	hs[3] += d;
	hs[4] += e;
	hs[5] += f;
	hs[6] += g;
	hs[7] += h;
}

GPUOS_HD static uint32_t be32(uint32_t x)
{
	/* the words of the message are big-endian (3.1); the GPU and x86 are little-endian */
	return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/* n whole blocks at p (4-byte aligned). */
GPUOS_HD static void sha256_blocks(uint32_t hs[8], const uint8_t *p, uint64_t n)
{
	const uint32_t *q = (const uint32_t *)(const void *)p;
	uint64_t i;
	int j;
	for (i = 0; i < n; i++, q += 16) {
		uint32_t w[16];
		for (j = 0; j < 16; j++)
			w[j] = be32(q[j]);
		sha256_compress(hs, w);
	}
}

/* The last rem (< 64) bytes and the padding of 5.1.1: a 1 bit, zeros, and
 * the message length in bits as 64 bits, in one block or two. */
GPUOS_HD static void sha256_final(uint32_t hs[8], const uint8_t *tail, uint32_t rem, uint64_t total)
{
	uint8_t blk[128];
	uint32_t nb = rem < 56 ? 64u : 128u, i, k;
	uint64_t bits = total * 8u;
	for (i = 0; i < rem; i++)
		blk[i] = tail[i];
	blk[rem] = 0x80;
	for (i = rem + 1; i < nb - 8; i++)
		blk[i] = 0;
	for (i = 0; i < 8; i++)
		blk[nb - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (k = 0; k < nb; k += 64) {
		uint32_t w[16];
		for (i = 0; i < 16; i++)
			w[i] = (uint32_t)blk[k + 4 * i] << 24 | (uint32_t)blk[k + 4 * i + 1] << 16 |
			       (uint32_t)blk[k + 4 * i + 2] << 8 | (uint32_t)blk[k + 4 * i + 3];
		sha256_compress(hs, w);
	}
}

/* ---- the report ------------------------------------------------------------------ */

struct report {
	char *p;
	uint64_t n, cap;
};

GPUOS_HD static void put(struct report *r, const char *s)
{
	while (*s && r->n + 1 < r->cap)
		r->p[r->n++] = *s++;
	r->p[r->n] = 0;
}

GPUOS_HD static void put_u64(struct report *r, uint64_t v)
{
	char buf[24];
	int i = 23;
	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v);
	put(r, buf + i);
}

GPUOS_HD static void put_digest(struct report *r, const uint32_t hs[8])
{
	const char *hex = "0123456789abcdef";
	char buf[65];
	int i, j;
	for (i = 0; i < 8; i++)
		for (j = 0; j < 8; j++)
			buf[i * 8 + j] = hex[(hs[i] >> (28 - 4 * j)) & 15u];
	buf[64] = 0;
	put(r, buf);
}

/* ---- reading ---------------------------------------------------------------------- */

/* Post a READ of [off, off + len) of handle into dst; waits while the mailbox is full. */
GPUOS_HD static uint32_t post_read(struct gpuos_mbox *mb, uint32_t handle, uint64_t off, uint64_t len, void *dst,
				   uint32_t *slot)
{
	struct gpuos_req rq;
	uint32_t spins = 0, st;
	rq.opcode = GPUOS_OP_READ;
	rq.flags = 0;
	rq.handle = handle;
	rq.offset = off;
	rq.length = len;
	rq.dst = (uint64_t)(uintptr_t)dst;
	rq.arg = 0;
	rq.batch = 0;
	rq.tag = off;
	while ((st = gpuos_post(mb, &rq, slot)) == GPUOS_ST_FULL)
		gpuos_backoff(&spins);
	return st;
}

/* Hash one file. 0, or 1 with the reason in the report. */
GPUOS_HD static int hash_file(struct gpuos_mbox *mb, const char *path, char *why, uint8_t *buf[2], uint64_t chunk,
			      struct report *r)
{
	uint32_t hs[8] = { 0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
			   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u }; /* 5.3.3 */
	uint32_t handle = 0, slot[2], st;
	uint64_t size = 0, off, i;
	int fail = 0;

	why[0] = 0;
	st = gpuos_open(mb, path, 0, &handle, &size, why, WHY_BYTES);
	if (st != GPUOS_ST_OK) {
		put(r, "sha256: ");
		put(r, path);
		put(r, ": ");
		put(r, why[0] ? why : "cannot open");
		put(r, " (status ");
		put_u64(r, st);
		put(r, ")\n");
		return 1;
	}
	/* Chunk i goes to buf[i % 2]; chunk i + 1 is in flight while chunk i is hashed. */
	if (size && post_read(mb, handle, 0, size < chunk ? size : chunk, buf[0], &slot[0]) != GPUOS_ST_OK)
		fail = 1;
	for (i = 0, off = 0; off < size && !fail; i++) {
		struct gpuos_result res;
		uint64_t len = size - off < chunk ? size - off : chunk;
		uint64_t next = off + len;
		st = gpuos_wait(mb, slot[i & 1], 0, &res);
		if (st != GPUOS_ST_OK || res.result != len) {
			put(r, "sha256: ");
			put(r, path);
			put(r, ": read of bytes ");
			put_u64(r, off);
			put(r, "..");
			put_u64(r, next);
			put(r, " failed (status ");
			put_u64(r, st);
			put(r, st == GPUOS_ST_OK ? ", short read)\n" : ")\n");
			/* nothing else in flight: chunk i + 1 is posted only below */
			gpuos_close(mb, handle);
			return 1;
		}
		if (next < size &&
		    post_read(mb, handle, next, size - next < chunk ? size - next : chunk, buf[(i + 1) & 1],
			      &slot[(i + 1) & 1]) != GPUOS_ST_OK)
			fail = 1;
		if (next < size) {
			sha256_blocks(hs, buf[i & 1], len / 64u); /* chunk is a multiple of 64 */
		} else {
			sha256_blocks(hs, buf[i & 1], len / 64u);
			sha256_final(hs, buf[i & 1] + (len & ~63ull), (uint32_t)(len & 63u), size);
		}
		off = next;
	}
	if (fail) {
		put(r, "sha256: ");
		put(r, path);
		put(r, ": cannot post a read\n");
		gpuos_close(mb, handle);
		return 1;
	}
	if (size == 0)
		sha256_final(hs, buf[0], 0, 0);
	gpuos_close(mb, handle);
	put_digest(r, hs);
	put(r, "  ");
	put(r, path);
	put(r, "\n");
	return 0;
}

GPUOS_HD static void sha256_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const uint64_t *argv = (const uint64_t *)(uintptr_t)a->argv;
	struct report r;
	uint8_t *base, *buf[2];
	uint64_t avail, chunk;
	uint32_t argc = a->argc, i;
	int bad = 0;

	(void)nthreads;
	if (tid != 0)
		return;
	r.p = (char *)(uintptr_t)a->out;
	r.cap = a->out_len;
	r.n = 0;
	if (r.cap)
		r.p[0] = 0;
	if (argc == 0) {
		put(&r, "usage: gpuos run sha256.cubin --device DEV -- PATH...\n");
		a->status = 2;
		return;
	}
	/* Buffers: VRAM when there is room for two chunks, else the heap after the reason buffer. */
	if (a->vram_len >= 2u * CHUNK_MIN) {
		base = (uint8_t *)(uintptr_t)a->vram;
		avail = a->vram_len;
	} else {
		base = (uint8_t *)(uintptr_t)a->heap + 4096u;
		avail = a->heap_len > 4096u ? a->heap_len - 4096u : 0;
	}
	chunk = (avail / 2u) & ~(uint64_t)(CHUNK_MIN - 1u);
	if (chunk > CHUNK_MAX)
		chunk = CHUNK_MAX;
	if (chunk < CHUNK_MIN || a->heap_len < WHY_BYTES) {
		put(&r, "sha256: too little client memory for two read buffers\n");
		a->status = 2;
		return;
	}
	buf[0] = base;
	buf[1] = base + chunk;
	for (i = 0; i < argc; i++)
		bad |= hash_file(mb, (const char *)(uintptr_t)argv[i], (char *)(uintptr_t)a->heap, buf, chunk, &r);
	a->status = bad ? 1u : 0u;
}

GPUOS_APP_ENTRY(sha256)
