/* SPDX-License-Identifier: MIT */
/*
 * apps/iops.c - random 4 KiB reads of one file from every thread of the
 * launch; IOPS and latency percentiles.
 *
 *   gpuos run iops.cubin --grid G --block B -- PATH [--seconds S | --reads N]
 *
 * Thread 0 opens PATH and publishes the handle; then every thread posts its
 * own READ requests (one in flight per thread, so G*B requests in flight)
 * at random 4 KiB-aligned offsets into a 4 KiB buffer of its own in VRAM,
 * and times each from post to completion. Latencies go to a shared
 * log-linear histogram (16 buckets per power of two: a percentile is good to
 * about 3 %). Default: --seconds 1.
 *
 * Memory: the histogram at the start of args->vram, the per-thread buffers
 * after it; args->scratch holds the flags and counters below.
 */
#include "gpuos/app.h"
#include "gpuos/gpuos.h"
#include "all_done.h"
#include "report.h"

GPUOS_APP_ABI_NOTE;

#define IO_BYTES 4096u
#define HIST_N 1024u                        /* buckets: exponents 0..63 x 16 */
#define BUF_OFF 65536u                      /* per-thread buffers from here in vram */

/* args->scratch (64 zeroed bytes). */
struct shared {
	uint32_t state;     /* 0x00 0 setting up, 1 go, 2 failed (thread 0 stores with release) */
	uint32_t handle;    /* 0x04 */
	uint64_t size;      /* 0x08 file bytes */
	uint64_t t0;        /* 0x10 start, ns */
	uint64_t reads;     /* 0x18 completed reads, all threads */
	uint32_t done;      /* 0x20 threads finished */
	uint32_t errors;    /* 0x24 failed reads */
	uint32_t bufs;      /* 0x28 buffers that fit in vram */
	uint32_t rsvd2c;    /* 0x2c */
	uint64_t max_ns;    /* 0x30 largest latency seen by thread 0's own reads (not shared) */
	uint64_t rsvd38;    /* 0x38 */
};
static_assert(sizeof(struct shared) == 64, "iops scratch");

/* ---- helpers -------------------------------------------------------------------- */

static inline GPUOS_HD int streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Decimal with up to 3 fractional digits, in thousandths; -1 if malformed. */
static inline GPUOS_HD int64_t parse_milli(const char *s)
{
	uint64_t v = 0, frac = 0, fd = 0;
	if (!*s)
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10u + (uint64_t)(*s - '0');
		if (v > 1000000000ull)
			return -1;
	}
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			if (fd < 3) {
				frac = frac * 10u + (uint64_t)(*s - '0');
				fd++;
			}
	if (*s)
		return -1;
	while (fd++ < 3)
		frac *= 10u;
	return (int64_t)(v * 1000u + frac);
}

static inline GPUOS_HD uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline GPUOS_HD uint32_t ilog2(uint64_t v)
{
	uint32_t e = 0;
	while (v >>= 1)
		e++;
	return e;
}

/* Bucket of a latency: exact below 16 ns, then 16 per power of two. */
static inline GPUOS_HD uint32_t bucket(uint64_t v)
{
	uint32_t e;
	if (v < 16)
		return (uint32_t)v;
	e = ilog2(v);
	return (e - 3u) * 16u + (uint32_t)((v >> (e - 4u)) & 15u);
}

/* The middle of a bucket, ns. */
static inline GPUOS_HD uint64_t bucket_mid(uint32_t i)
{
	uint32_t e;
	if (i < 16)
		return i;
	e = i / 16u + 3u;
	return ((uint64_t)(16u + i % 16u) << (e - 4u)) + ((1ull << (e - 4u)) >> 1);
}

struct params {
	uint64_t reads;      /* total, 0: timed */
	uint64_t ns;         /* run time when timed */
	const char *path;
	const char *bad;     /* usage error */
};

static inline GPUOS_HD void parse(const struct gpuos_app_args *a, struct params *p)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint32_t i;
	p->reads = 0;
	p->ns = 1000000000ull;
	p->path = a->argc ? argv[0] : 0;
	p->bad = a->argc ? 0 : "usage: iops -- PATH [--seconds S | --reads N]";
	for (i = 1; i < a->argc && !p->bad; i++) {
		int64_t v = i + 1 < a->argc ? parse_milli(argv[i + 1]) : -1;
		if (streq(argv[i], "--seconds") && v > 0) {
			p->ns = (uint64_t)v * 1000000ull;
			p->reads = 0;
		} else if (streq(argv[i], "--reads") && v >= 1000 && v % 1000 == 0) {
			p->reads = (uint64_t)v / 1000u;
		} else {
			p->bad = "usage: iops -- PATH [--seconds S (> 0) | --reads N (whole, > 0)]";
		}
		i++;
	}
}

static inline GPUOS_HD void percentile(struct rep *r, const uint32_t *hist, uint64_t total, uint64_t per_mille,
				       const char *label)
{
	uint64_t want = (total * per_mille + 999u) / 1000u, cum = 0;
	uint32_t i;
	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_N; i++) {
		cum += hist[i];
		if (cum >= want)
			break;
	}
	rs(r, label);
	rf(r, bucket_mid(i < HIST_N ? i : HIST_N - 1), 1000, 1, 0);
	rs(r, " us");
}

/* Thread 0: opens the file, zeroes the histogram and publishes go (1)
 * or failed (2) in sh->state. 0 when the run goes ahead. */
static inline GPUOS_HD int set_up(struct gpuos_app_args *a, struct params *p, struct shared *sh, uint32_t *hist)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	struct rep r;
	uint32_t st = GPUOS_ST_OK, h = 0, i;
	uint64_t size = 0;
	char *why = (char *)(uintptr_t)a->vram + BUF_OFF - 512; /* registered: a valid dst */

	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	if (!p->bad && a->vram_len < BUF_OFF + IO_BYTES)
		p->bad = "iops: needs at least 68 KiB of vram";
	if (!p->bad) {
		why[0] = 0;
		st = gpuos_open(mb, p->path, 0, &h, &size, why, 256);
		if (st != GPUOS_ST_OK) {
			ropen_failed(&r, "iops", p->path, st, why);
		} else if (size < IO_BYTES) {
			rs(&r, "iops: ");
			rs(&r, p->path);
			rs(&r, ": smaller than 4 KiB\n");
			gpuos_close(mb, h);
			st = GPUOS_ST_BAD_RANGE;
		}
	} else {
		rs(&r, p->bad);
		rs(&r, "\n");
	}
	if (p->bad || st != GPUOS_ST_OK) {
		a->status = 2;
		/* Publish "failed"; pairs with the other threads' acquire load of state. */
		gpuos_store_release_dev32(&sh->state, 2);
		return -1;
	}
	for (i = 0; i < HIST_N; i++)
		hist[i] = 0;
	sh->handle = h;
	sh->size = size;
	sh->bufs = (uint32_t)GPUOS_MIN((a->vram_len - BUF_OFF) / IO_BYTES, 0xffffffffull);
	sh->t0 = gpuos_now_ns();
	/* Publish the zeroed histogram, handle, size and start time; pairs
	 * with the acquire load of state by every other thread in iops_main. */
	gpuos_store_release_dev32(&sh->state, 1);
	return 0;
}

/* Thread 0, once every thread's histogram and counters are in: the
 * report, and the file closed. maxl: thread 0's own largest latency. */
static inline GPUOS_HD void report(struct gpuos_app_args *a, const struct params *p, struct shared *sh,
				   const uint32_t *hist, uint32_t nthreads, uint64_t maxl)
{
	struct rep r;
	uint64_t total = 0, elapsed, reads;
	uint32_t i;

	elapsed = gpuos_now_ns() - sh->t0;
	reads = gpuos_load_relaxed_sys64(&sh->reads);
	for (i = 0; i < HIST_N; i++)
		total += hist[i];
	gpuos_close((struct gpuos_mbox *)(uintptr_t)a->mbox, sh->handle);
	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	rs(&r, "iops: ");
	rs(&r, p->path);
	rs(&r, ", ");
	rn(&r, sh->size);
	rs(&r, " bytes, ");
	rn(&r, nthreads);
	rs(&r, a->on_gpu ? " GPU threads" : " host threads");
	rs(&r, ", one 4 KiB read in flight each\n");
	rs(&r, "reads ");
	rn(&r, reads);
	rs(&r, "  errors ");
	rn(&r, sh->errors);
	rs(&r, "  time ");
	rsec(&r, elapsed);
	rs(&r, " s\n");
	rs(&r, "IOPS ");
	rn(&r, elapsed ? reads * 1000000000ull / elapsed : 0);
	rs(&r, "  MB/s ");
	rf(&r, elapsed ? reads * IO_BYTES * 1000u / elapsed : 0, 1, 0, 0);
	rs(&r, "\nlatency");
	percentile(&r, hist, total, 500, "  p50 ");
	percentile(&r, hist, total, 990, "  p99 ");
	percentile(&r, hist, total, 999, "  p999 ");
	rs(&r, "  max(thread 0) ");
	rf(&r, maxl, 1000, 1, 0);
	rs(&r, " us\n");
	a->status = sh->errors || reads == 0 ? 1 : 0;
}

GPUOS_HD static void iops_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	struct shared *sh = (struct shared *)(uintptr_t)a->scratch;
	uint32_t *hist = (uint32_t *)(uintptr_t)a->vram;
	struct params p;
	uint64_t mine, done = 0, s = 0x5eed0000ull + tid, blocks, end_ns = 0, maxl = 0;
	uint32_t spins = 0, errs = 0;
	char *buf;

	parse(a, &p);
	if (tid == 0) {
		if (set_up(a, &p, sh, hist))
			return;
	} else {
		uint32_t state;
		/* Pairs with thread 0's release store of state. */
		while ((state = gpuos_load_acquire_dev32(&sh->state)) == 0)
			gpuos_backoff(&spins);
		if (state != 1)
			return;
	}

	blocks = sh->size / IO_BYTES;
	/* Threads beyond the buffers that fit share them: the data is not looked at. */
	buf = (char *)(uintptr_t)a->vram + BUF_OFF + (uint64_t)(tid % sh->bufs) * IO_BYTES;
	mine = p.reads ? p.reads / nthreads + (tid < p.reads % nthreads ? 1u : 0u) : ~0ull;
	end_ns = sh->t0 + p.ns;
	while (done < mine) {
		uint64_t off = (rng_next(&s) % blocks) * IO_BYTES, got = 0, t1, t2;
		uint32_t st;
		t1 = gpuos_now_ns();
		if (!p.reads && t1 >= end_ns)
			break;
		st = gpuos_read(mb, sh->handle, off, IO_BYTES, buf, &got);
		t2 = gpuos_now_ns();
		if (st != GPUOS_ST_OK || got != IO_BYTES) {
			errs++;
			if (errs > 16 && errs > done)
				break; /* failing: stop early, the report says so */
			continue;
		}
		gpuos_fetch_add_relaxed_dev32(&hist[bucket(t2 - t1)], 1u);
		if (t2 - t1 > maxl)
			maxl = t2 - t1;
		done++;
	}
	gpuos_fetch_add_relaxed_sys64(&sh->reads, done);
	if (errs)
		gpuos_fetch_add_relaxed_dev32(&sh->errors, errs);
	/* Thread 0 reports once every thread's histogram and counters are in. */
	if (app_all_done(&sh->done, tid, nthreads))
		report(a, &p, sh, hist, nthreads, maxl);
}

GPUOS_APP_ENTRY(iops)
