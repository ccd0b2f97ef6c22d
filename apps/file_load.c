/* SPDX-License-Identifier: MIT */
/*
 * apps/file_load.c - a whole file into VRAM, in order, as fast as the
 * runtime goes, then the checksum of the VRAM copy (the whole-file rows of
 * docs/benchmarks.md compare it with every other path's).
 *
 *   gpuos run file_load.cubin --vram-mib M --grid G --block B -- PATH [PIECE_KIB]
 *
 * Thread 0 opens PATH and publishes its handle and size. Then each warp
 * takes pieces of PIECE_KIB (default 32768) in file order from a shared
 * counter and reads each with gpuos_warp_read (its lanes post up to 32
 * slices of it at once), straight to the piece's place in args->vram: G * B
 * / 32 warps keep that many pieces in flight. The clock runs from the
 * handle's publication to the last piece's arrival. Then every thread adds
 * its share of gpuos_bench_sum_words over the copy, and thread 0 reports:
 *
 *   file_load: PATH, BYTES bytes in S s: X GB/s (W warps, pieces of P KiB)
 *   result bytes=BYTES ns=NS sum=HEX16
 *
 * Exit status 0; 1 when a read failed (its status named); 2 when nothing
 * could start (usage, the file, memory). In host mode (warp width 1) every
 * thread is a warp of one. All threads wait for each other: keep the grid
 * resident (one block per SM at most).
 */
#include "gpuos/app.h"
#include "gpuos/bench.h"
#include "gpuos/gpuos.h"
#include "all_done.h"
#include "report.h"

GPUOS_APP_ABI_NOTE;

#define META_BYTES 4096u        /* the path's reason buffer; the copy starts after it */
#define DEFAULT_PIECE (32u << 20) /* 1 MiB a lane: fewer, larger requests (4 MiB pieces went half as fast) */

/* args->scratch: 64 zeroed bytes. */
struct shared {
	uint32_t state;      /* 0x00 0 starting, 1 go, 2 failed to start */
	uint32_t handle;     /* 0x04 */
	uint64_t size;       /* 0x08 */
	uint64_t next;       /* 0x10 next piece's offset */
	uint64_t t0;         /* 0x18 the clock's start */
	uint64_t t1;         /* 0x20 the last piece's arrival */
	uint32_t read_done;  /* 0x28 warps done reading */
	uint32_t bad;        /* 0x2c first failed read's status + 1, 0 none */
	uint64_t sum;        /* 0x30 */
	uint32_t done;       /* 0x38 threads done summing */
	uint32_t piece_kib;  /* 0x3c */
};
static_assert(sizeof(struct shared) == 64, "file_load scratch");

static inline GPUOS_HD uint64_t parse_u64(const char *s, int *ok)
{
	uint64_t v = 0;
	*ok = *s != 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1000000000u) {
			*ok = 0;
			return 0;
		}
		v = v * 10u + (uint64_t)(*s - '0');
	}
	return v;
}

/* Thread 0: open the file; 0, or a reason written to r. */
static inline GPUOS_HD int start(struct gpuos_app_args *a, struct gpuos_mbox *mb, struct shared *sh, struct rep *r)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	char *why = (char *)(uintptr_t)a->vram;
	uint64_t size = 0, piece = DEFAULT_PIECE;
	uint32_t h = 0, st;
	int ok = 1;

	if (a->argc < 1 || a->argc > 2) {
		rs(r, "usage: file_load -- PATH [PIECE_KIB]\n");
		return -1;
	}
	if (a->argc == 2)
		piece = parse_u64(argv[1], &ok) << 10;
	if (!ok || piece < 4096u || piece > (1ull << 30) || piece % 4096u) {
		rs(r, "file_load: PIECE_KIB is a multiple of 4 from 4 to 1048576\n");
		return -1;
	}
	if (a->vram_len < META_BYTES) {
		rs(r, "file_load: needs --vram-mib\n");
		return -1;
	}
	why[0] = 0;
	st = gpuos_open(mb, argv[0], 0, &h, &size, why, 256);
	if (st != GPUOS_ST_OK) {
		ropen_failed(r, "file_load", argv[0], st, why);
		return -1;
	}
	if (size > a->vram_len - META_BYTES) {
		gpuos_close(mb, h);
		rs(r, "file_load: ");
		rs(r, argv[0]);
		rs(r, " has ");
		rn(r, size);
		rs(r, " bytes, more than the ");
		rn(r, a->vram_len - META_BYTES);
		rs(r, " bytes of vram for it (--vram-mib; in host mode --heap-mib)\n");
		return -1;
	}
	sh->handle = h;
	sh->size = size;
	sh->piece_kib = (uint32_t)(piece >> 10);
	gpuos_app_progress_total(a, size);
	return 0;
}

/* This warp's share of the reads: the next piece of the file until none
 * is left, each into its place in copy; the first failure in sh->bad. */
static inline GPUOS_HD void read_pieces(struct gpuos_app_args *a, struct shared *sh, uint8_t *copy, uint64_t size,
					uint64_t piece)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint32_t lane = gpuos_lane_id();

	for (;;) {
		uint64_t off = 0, got = 0, len;
		uint32_t st;
		if (lane == 0)
			off = gpuos_fetch_add_relaxed_sys64(&sh->next, piece);
		off = gpuos_warp_bcast64(off, 0);
		if (off >= size)
			break;
		len = GPUOS_MIN(piece, size - off);
		st = gpuos_warp_read(mb, sh->handle, off, len, copy + off, &got);
		if (st == GPUOS_ST_OK && got != len)
			st = GPUOS_ST_BAD_RANGE; /* short: the file shrank under us */
		if (lane == 0) {
			if (st != GPUOS_ST_OK)
				gpuos_cas_acquire_dev32(&sh->bad, 0, st + 1u);
			gpuos_app_progress_add(a, got);
		}
	}
}

/* Thread 0, once every thread has summed: the report. */
static inline GPUOS_HD void report(struct gpuos_app_args *a, struct shared *sh, uint32_t nwarps, struct rep *r)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint64_t ns = sh->t1 - sh->t0, size = sh->size;
	uint32_t bad = sh->bad;

	gpuos_close(mb, sh->handle);
	if (bad) {
		rs(r, "file_load: ");
		rs(r, argv[0]);
		rs(r, ": a read failed: ");
		rs(r, stname(bad - 1u));
		rs(r, "\n");
		a->status = 1;
		return;
	}
	rs(r, "file_load: ");
	rs(r, argv[0]);
	rs(r, ", ");
	rn(r, size);
	rs(r, " bytes in ");
	rsec(r, ns);
	rs(r, " s: ");
	rgbs(r, size, ns);
	rs(r, " GB/s (");
	rn(r, nwarps);
	rs(r, a->on_gpu ? " warps" : " threads");
	rs(r, ", pieces of ");
	rn(r, sh->piece_kib);
	rs(r, " KiB)\nresult bytes=");
	rn(r, size);
	rs(r, " ns=");
	rn(r, ns);
	rs(r, " sum=");
	rx64(r, sh->sum);
	rs(r, "\n");
	a->status = 0;
}

GPUOS_HD static void file_load_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	struct shared *sh = (struct shared *)(uintptr_t)a->scratch;
	uint8_t *copy = (uint8_t *)(uintptr_t)a->vram + META_BYTES;
	uint32_t width = gpuos_warp_width(), lane = gpuos_lane_id(), nwarps = (nthreads + width - 1u) / width;
	uint32_t spins = 0, state;
	uint64_t size, piece, words, i, part = 0;
	struct rep r;

	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	if (tid == 0) {
		if (start(a, mb, sh, &r)) {
			a->status = 2;
			/* Publish "failed"; pairs with the others' acquire load of state. */
			gpuos_store_release_dev32(&sh->state, 2);
			return;
		}
		sh->t0 = gpuos_now_ns();
		/* Publish the handle, size, piece and start time; pairs with the
		 * acquire load of state below. */
		gpuos_store_release_dev32(&sh->state, 1);
	}
	while ((state = gpuos_load_acquire_dev32(&sh->state)) == 0)
		gpuos_backoff(&spins);
	if (state != 1)
		return;
	size = sh->size;
	piece = (uint64_t)sh->piece_kib << 10;

	/* 1. Read: a warp at a time, pieces in file order. */
	read_pieces(a, sh, copy, size, piece);
	if (lane == 0) {
		/* Release: this warp's reads (each acquired by gpuos_wait) before
		 * its arrival; the last arrival's acquire half sees every warp's. */
		if (gpuos_fetch_add_acq_rel_dev32(&sh->read_done, 1u) + 1u == nwarps)
			sh->t1 = gpuos_now_ns();
	}
	/* Every thread sums, so all wait for the last warp; pairs with the
	 * acq_rel arrivals above (a release sequence on one word). */
	spins = 0;
	while (gpuos_load_acquire_dev32(&sh->read_done) < nwarps)
		gpuos_backoff(&spins);

	/* 2. Sum: word i to thread i % nthreads, so a warp reads adjacent words. */
	words = gpuos_bench_words(size);
	if (gpuos_load_relaxed_dev32(&sh->bad) == 0)
		for (i = tid; i < words; i += nthreads)
			part += gpuos_bench_sum_words(copy, size, 0, i, 1);
	if (part)
		gpuos_fetch_add_relaxed_sys64(&sh->sum, part); /* ordered by app_all_done's release */
	if (!app_all_done(&sh->done, tid, nthreads))
		return;

	/* 3. Report (thread 0): t1 and sum were published by the arrivals. */
	report(a, sh, nwarps, &r);
}

GPUOS_APP_ENTRY(file_load)
