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
#include "report.h"
#include "sha256.h"

GPUOS_APP_ABI_NOTE;

#define CHUNK_MAX (1u << 20)     /* bytes per READ */
#define CHUNK_MIN (64u << 10)
#define WHY_BYTES 512u           /* the runtime's reason for a failed open, in the heap */

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
			      struct rep *r)
{
	struct sha256_ctx c;
	uint8_t md[32];
	uint32_t handle = 0, slot[2], st;
	uint64_t size = 0, off, i;
	int fail = 0;

	why[0] = 0;
	sha256_init(&c);
	st = gpuos_open(mb, path, 0, &handle, &size, why, WHY_BYTES);
	if (st != GPUOS_ST_OK) {
		rs(r, "sha256: ");
		rs(r, path);
		rs(r, ": ");
		rs(r, why[0] ? why : "cannot open");
		rs(r, " (status ");
		rn(r, st);
		rs(r, ")\n");
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
			rs(r, "sha256: ");
			rs(r, path);
			rs(r, ": read of bytes ");
			rn(r, off);
			rs(r, "..");
			rn(r, next);
			rs(r, " failed (status ");
			rn(r, st);
			rs(r, st == GPUOS_ST_OK ? ", short read)\n" : ")\n");
			/* nothing else in flight: chunk i + 1 is posted only below */
			gpuos_close(mb, handle);
			return 1;
		}
		if (next < size &&
		    post_read(mb, handle, next, size - next < chunk ? size - next : chunk, buf[(i + 1) & 1],
			      &slot[(i + 1) & 1]) != GPUOS_ST_OK)
			fail = 1;
		sha256_update(&c, buf[i & 1], len);
		off = next;
	}
	if (fail) {
		rs(r, "sha256: ");
		rs(r, path);
		rs(r, ": cannot post a read\n");
		gpuos_close(mb, handle);
		return 1;
	}
	sha256_final(&c, md);
	gpuos_close(mb, handle);
	rhex(r, md, 32);
	rs(r, "  ");
	rs(r, path);
	rs(r, "\n");
	return 0;
}

GPUOS_HD static void sha256_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const uint64_t *argv = (const uint64_t *)(uintptr_t)a->argv;
	struct rep r;
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
		rs(&r, "usage: gpuos run sha256.cubin --device DEV -- PATH...\n");
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
	chunk = GPUOS_ALIGN_DOWN(avail / 2u, (uint64_t)CHUNK_MIN);
	if (chunk > CHUNK_MAX)
		chunk = CHUNK_MAX;
	if (chunk < CHUNK_MIN || a->heap_len < WHY_BYTES) {
		rs(&r, "sha256: too little client memory for two read buffers\n");
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
