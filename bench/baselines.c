/* SPDX-License-Identifier: MIT */
/*
 * bench/baselines.c - the CPU data paths that gpuos's figures are ratios
 * against, measured in the same run on the same machine (bench/datapath.sh).
 *
 *   baselines h2d [--chunk-mib 8] [--total-mib 4096]
 *   baselines d2d [--chunk-mib 8] [--total-mib 4096]   (VRAM to VRAM: HBM's copy rate)
 *       cudaMemcpy host to device from one pinned buffer, chunk by chunk,
 *       into a VRAM window of at most 1 GiB: the link's line rate.
 *   baselines pread FILE [--threads 4] [--chunk-mib 8]
 *       the whole file into VRAM: each thread preads chunks (taken from a
 *       shared counter) into two pinned buffers and sends each with
 *       cudaMemcpyAsync on its own stream while it reads the next.
 *   baselines mmap FILE [--chunk-mib 8]
 *       one thread: memcpy from an mmap of the file into two pinned buffers,
 *       each sent with cudaMemcpyAsync, double buffered.
 *   baselines uring FILE [--qd 32] [--bs-kib 1024] [--direct]
 *       liburing reads (O_DIRECT with --direct), qd in flight, into pinned
 *       buffers; each completed buffer goes to VRAM with cudaMemcpyAsync and
 *       is read into again once that copy has finished.
 *   baselines rand FILE [--qd 32] [--bs-kib 4] [--reads 200000] [--direct]
 *       random reads of bs at bs-aligned offsets, liburing, qd in flight,
 *       into host memory (the BaM workload's CPU side; no GPU needed): IOPS
 *       and the latency of each read from its submission to its completion
 *       (p50, p99). One read in 1024 is compared with pread of the same range.
 *
 * Each prints one JSON object on stdout: bench, bytes, seconds, gb_per_s
 * (1e9 bytes/s), cpu_s (the process's CPU seconds in the timed part) and
 * cpu_s_per_gb, its parameters and the GPU. The timed part is the data
 * movement only (buffers, streams and the VRAM destination are set up
 * before). File benches check that they moved exactly the file's size,
 * compare samples of VRAM with the file, and give "sum", the checksum of
 * the whole VRAM copy (bench/vram_sum.h) that every path of the whole-file
 * rows must match. Any failure, a missing GPU included: one line on stderr
 * and exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "vram_sum.h"

#define MIB (1ull << 20)

static void usage(void)
{
	fprintf(stderr, "usage: baselines h2d|d2d [--chunk-mib 8] [--total-mib 4096] | pread FILE [--threads 4] "
			"[--chunk-mib 8] | mmap FILE [--chunk-mib 8] | uring FILE [--qd 32] [--bs-kib 1024] [--direct] | "
			"rand FILE [--qd 32] [--bs-kib 4] [--reads 200000] [--direct]\n");
	_exit(2);
}

static char gpu_name[256];
static int gpu_sms;

/* The GPU, or die saying there is none (here: no driver, error 35). */
static void gpu_init(void)
{
	struct cudaDeviceProp p;
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		die("no GPU: cudaGetDeviceCount: %s (CUDA error %d)", cudaGetErrorString(e), (int)e);
	if (n == 0)
		die("no GPU: cudaGetDeviceCount found none");
	ck(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
	snprintf(gpu_name, sizeof(gpu_name), "%s", p.name);
	gpu_sms = p.multiProcessorCount;
}

static void *pinned(uint64_t len)
{
	void *p;
	ck(cudaHostAlloc(&p, len, cudaHostAllocDefault), "cudaHostAlloc (pinned staging)");
	memset(p, 0x5a, len);   /* fault the pages in before the clock starts */
	return p;
}

static char *vram(uint64_t len)
{
	void *p;
	size_t free_b = 0, total_b = 0;
	cudaError_t e = cudaMalloc(&p, len);
	if (e != cudaSuccess) {
		cudaMemGetInfo(&free_b, &total_b);
		die("cudaMalloc of %llu bytes for the destination: %s (%llu of %llu bytes free)",
		    (unsigned long long)len, cudaGetErrorString(e), (unsigned long long)free_b,
		    (unsigned long long)total_b);
	}
	return (char *)p;
}

/* ---- files ---------------------------------------------------------------------- */

struct src {
	const char *path;
	int fd;
	uint64_t size;
};

static void src_open(struct src *f, const char *path, int direct)
{
	struct stat st;
	f->path = path;
	f->fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	if (f->fd < 0)
		die("%s: %s%s", path, strerror(errno),
		    direct && errno == EINVAL ? " (the file system refuses O_DIRECT)" : "");
	if (fstat(f->fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die("%s: not a regular file", path);
	if (st.st_size == 0)
		die("%s: empty file", path);
	f->size = (uint64_t)st.st_size;
}

static void pread_full(int fd, char *buf, uint64_t len, uint64_t off, const char *path)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("%s: pread at %llu: %s", path, (unsigned long long)off, strerror(errno));
		if (r == 0)
			die("%s: ends at %llu, before its size said (changed while read?)", path, (unsigned long long)off);
		buf += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
}

/* Samples of VRAM against the file (start, thirds, middle, end), through a
 * buffered descriptor of its own: data at a wrong offset, or missing, fails. */
static void verify(const struct src *f, const char *dst)
{
	enum { SAMPLE = 65536, N = 5 };
	uint64_t at[N] = { 0, f->size / 3, f->size / 2, f->size / 3 * 2, f->size > SAMPLE ? f->size - SAMPLE : 0 };
	char *want = (char *)malloc(SAMPLE), *got = (char *)malloc(SAMPLE);
	int fd = open(f->path, O_RDONLY), i;
	if (!want || !got)
		die("out of memory");
	if (fd < 0)
		die("%s: reopening to verify: %s", f->path, strerror(errno));
	for (i = 0; i < N; i++) {
		uint64_t len = f->size - at[i] < SAMPLE ? f->size - at[i] : SAMPLE;
		pread_full(fd, want, len, at[i], f->path);
		ck(cudaMemcpy(got, dst + at[i], len, cudaMemcpyDeviceToHost), "cudaMemcpy (verify)");
		if (memcmp(want, got, len))
			die("%s: VRAM differs from the file in the %llu bytes at %llu", f->path, (unsigned long long)len,
			    (unsigned long long)at[i]);
	}
	close(fd);
	free(want);
	free(got);
}

/* The first copy into a fresh allocation pays for mapping it: do it now. */
static void warm(char *dst, const char *buf, uint64_t len)
{
	ck(cudaMemcpy(dst, buf, len, cudaMemcpyHostToDevice), "cudaMemcpy (warm-up)");
}

/* One JSON line. A file bench (f) also gives the checksum of its VRAM copy
 * (dst; bench/vram_sum.h), and cpu, the CPU seconds of the timed part. */
static void report(const char *bench, const struct src *f, const char *dst, uint64_t bytes, double secs, double cpu,
		   const char *params)
{
	uint64_t sum = 0;
	const char *err = NULL;
	if (f && (sum = vram_sum(dst, f->size, &err), err))
		die("%s: %s failed", f->path, err);
	printf("{\"bench\": \"%s\", ", bench);
	if (f) {
		fputs("\"file\": ", stdout);
		json_str(f->path);
		printf(", \"file_bytes\": %llu, \"verified\": true, \"sum\": \"%016llx\", ", (unsigned long long)f->size,
		       (unsigned long long)sum);
	}
	printf("\"bytes\": %llu, \"seconds\": %.6f, \"gb_per_s\": %.3f, \"cpu_s\": %.3f, \"cpu_s_per_gb\": %.3f, %s, "
	       "\"gpu\": ", (unsigned long long)bytes, secs, (double)bytes / secs / 1e9, cpu, cpu / ((double)bytes / 1e9),
	       params);
	json_str(gpu_name);
	printf(", \"sms\": %d}\n", gpu_sms);
}

/* ---- h2d ---------------------------------------------------------------------- */

static int run_h2d(uint64_t chunk, uint64_t total)
{
	uint64_t window = total < 1024 * MIB ? total : 1024 * MIB, off, moved = 0;
	char *buf, *dst, params[128];
	double t0, t1, c0, c1;
	gpu_init();
	window -= window % chunk;
	if (window < chunk)
		window = chunk;
	buf = (char *)pinned(chunk);
	dst = vram(window);
	warm(dst, buf, chunk);
	c0 = cpu_s();
	t0 = now_s();
	for (off = 0; off < total; off += chunk) {
		uint64_t n = total - off < chunk ? total - off : chunk;
		ck(cudaMemcpy(dst + off % window, buf, n, cudaMemcpyHostToDevice), "cudaMemcpy");
		moved += n;
	}
	t1 = now_s();
	c1 = cpu_s();
	if (moved != total)
		die("moved %llu bytes, not %llu", (unsigned long long)moved, (unsigned long long)total);
	snprintf(params, sizeof(params), "\"chunk_mib\": %llu, \"total_mib\": %llu",
		 (unsigned long long)(chunk / MIB), (unsigned long long)(total / MIB));
	report("h2d", NULL, NULL, moved, t1 - t0, c1 - c0, params);
	return 0;
}

/* ---- d2d: the bytes of a chunk copied from one VRAM buffer to another, as
 * many times as total says (issue 34: the llama engine's products are
 * measured against it; bytes copied, so each is read once and written once) */

static int run_d2d(uint64_t chunk, uint64_t total)
{
	uint64_t off, moved = 0;
	char *src, *dst, params[128];
	double t0, t1, c0, c1;
	gpu_init();
	src = vram(chunk);
	dst = vram(chunk);
	ck(cudaMemset(src, 1, chunk), "cudaMemset");
	ck(cudaMemcpy(dst, src, chunk, cudaMemcpyDeviceToDevice), "cudaMemcpy"); /* warm */
	ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	c0 = cpu_s();
	t0 = now_s();
	for (off = 0; off < total; off += chunk) {
		uint64_t n = total - off < chunk ? total - off : chunk;
		ck(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
		moved += n;
	}
	ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	t1 = now_s();
	c1 = cpu_s();
	snprintf(params, sizeof(params), "\"chunk_mib\": %llu, \"total_mib\": %llu",
		 (unsigned long long)(chunk / MIB), (unsigned long long)(total / MIB));
	report("d2d", NULL, NULL, moved, t1 - t0, c1 - c0, params);
	return 0;
}

/* ---- pread and mmap: double-buffered chunk loops ------------------------------ */

struct loop {
	const struct src *f;
	const char *map;        /* mmap: the mapping; pread: NULL */
	char *dst;
	uint64_t chunk;
	uint64_t *next;         /* shared: the next chunk's offset */
	uint64_t moved;
	char *buf[2];
	cudaStream_t stream;
	cudaEvent_t ev[2];
};

static void loop_init(struct loop *l, const struct src *f, const char *map, char *dst, uint64_t chunk, uint64_t *next)
{
	int b;
	memset(l, 0, sizeof(*l));
	l->f = f;
	l->map = map;
	l->dst = dst;
	l->chunk = chunk;
	l->next = next;
	ck(cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking), "cudaStreamCreate");
	for (b = 0; b < 2; b++) {
		l->buf[b] = (char *)pinned(chunk);
		ck(cudaEventCreateWithFlags(&l->ev[b], cudaEventDisableTiming), "cudaEventCreate");
	}
}

static void *loop_run(void *p)
{
	struct loop *l = (struct loop *)p;
	int used[2] = { 0, 0 };
	uint64_t k;
	for (k = 0;; k++) {
		/* Chunks are handed out in file order, so the threads read near one another. */
		uint64_t off = __atomic_fetch_add(l->next, l->chunk, __ATOMIC_RELAXED);
		uint64_t n;
		int b = (int)(k & 1);
		if (off >= l->f->size)
			break;
		n = l->f->size - off < l->chunk ? l->f->size - off : l->chunk;
		/* The copy that last read this buffer must be done before we overwrite it. */
		if (used[b])
			ck(cudaEventSynchronize(l->ev[b]), "cudaEventSynchronize");
		if (l->map)
			memcpy(l->buf[b], l->map + off, n);
		else
			pread_full(l->f->fd, l->buf[b], n, off, l->f->path);
		ck(cudaMemcpyAsync(l->dst + off, l->buf[b], n, cudaMemcpyHostToDevice, l->stream), "cudaMemcpyAsync");
		ck(cudaEventRecord(l->ev[b], l->stream), "cudaEventRecord");
		used[b] = 1;
		l->moved += n;
	}
	ck(cudaStreamSynchronize(l->stream), "cudaStreamSynchronize");
	return NULL;
}

static int run_loops(const char *bench, const char *path, int threads, uint64_t chunk)
{
	struct src f;
	struct loop *l;
	pthread_t *t;
	uint64_t next = 0, moved = 0;
	char *dst, params[128];
	const char *map = NULL;
	double t0, t1, c0, c1;
	int i, use_mmap = !strcmp(bench, "mmap");
	src_open(&f, path, 0);
	gpu_init();
	if (use_mmap) {
		void *m = mmap(NULL, f.size, PROT_READ, MAP_PRIVATE, f.fd, 0);
		if (m == MAP_FAILED)
			die("%s: mmap: %s", path, strerror(errno));
		madvise(m, f.size, MADV_SEQUENTIAL);   /* advice only: its failure changes nothing */
		map = (const char *)m;
	}
	dst = vram(f.size);
	l = (struct loop *)calloc((size_t)threads, sizeof(*l));
	t = (pthread_t *)calloc((size_t)threads, sizeof(*t));
	if (!l || !t)
		die("out of memory");
	for (i = 0; i < threads; i++)
		loop_init(&l[i], &f, map, dst, chunk, &next);
	warm(dst, l[0].buf[0], f.size < chunk ? f.size : chunk);
	c0 = cpu_s();
	t0 = now_s();
	for (i = 0; i < threads; i++) {
		int e = pthread_create(&t[i], NULL, loop_run, &l[i]);
		if (e)
			die("pthread_create: %s", strerror(e));
	}
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		moved += l[i].moved;
	}
	t1 = now_s();
	c1 = cpu_s();
	if (moved != f.size)
		die("%s: moved %llu bytes, the file has %llu", path, (unsigned long long)moved, (unsigned long long)f.size);
	verify(&f, dst);
	if (use_mmap)
		snprintf(params, sizeof(params), "\"chunk_mib\": %llu", (unsigned long long)(chunk / MIB));
	else
		snprintf(params, sizeof(params), "\"threads\": %d, \"chunk_mib\": %llu", threads,
			 (unsigned long long)(chunk / MIB));
	report(bench, &f, dst, moved, t1 - t0, c1 - c0, params);
	return 0;
}

/* ---- uring ------------------------------------------------------------------- */

enum { SLOT_FREE, SLOT_READING, SLOT_COPYING };

struct slot {
	char *buf;
	uint64_t off;      /* where this buffer's data starts in the file */
	uint64_t len;      /* bytes it holds when full */
	uint64_t got;      /* bytes read so far */
	int state;
	cudaEvent_t ev;    /* recorded after its copy to VRAM */
};

static void submit_read(struct io_uring *ring, int fd, struct slot *s, int direct)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	uint64_t want = s->len - s->got;
	/* O_DIRECT lengths are whole blocks; past the end of the file the read is
	 * short, and the buffer (bs, a multiple of 4 KiB) holds the rounded length. */
	if (direct)
		want = (want + 4095) & ~4095ull;
	if (!sqe)
		die("io_uring: no free submission entry");
	io_uring_prep_read(sqe, fd, s->buf + s->got, (unsigned)want, s->off + s->got);
	io_uring_sqe_set_data(sqe, s);
	s->state = SLOT_READING;
}

static int run_uring(const char *path, unsigned qd, uint64_t bs, int direct)
{
	struct src f;
	struct io_uring ring;
	struct slot *sl;
	cudaStream_t stream;
	uint64_t next = 0, moved = 0;
	unsigned i, reading = 0, copying = 0;
	char *dst, *bufs, params[128];
	double t0, t1, c0, c1;
	int r;
	src_open(&f, path, direct);
	gpu_init();
	r = io_uring_queue_init(qd, &ring, 0);
	if (r < 0)
		die("io_uring_queue_init(%u): %s", qd, strerror(-r));
	dst = vram(f.size);
	bufs = (char *)pinned((uint64_t)qd * bs);   /* page aligned, as O_DIRECT needs */
	sl = (struct slot *)calloc(qd, sizeof(*sl));
	if (!sl)
		die("out of memory");
	for (i = 0; i < qd; i++) {
		sl[i].buf = bufs + (uint64_t)i * bs;
		ck(cudaEventCreateWithFlags(&sl[i].ev, cudaEventDisableTiming), "cudaEventCreate");
	}
	ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
	warm(dst, bufs, f.size < bs ? f.size : bs);
	c0 = cpu_s();
	t0 = now_s();
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned queued = 0, head, seen = 0;
		/* Every free buffer takes the next piece of the file. */
		for (i = 0; i < qd && next < f.size; i++) {
			if (sl[i].state != SLOT_FREE)
				continue;
			sl[i].off = next;
			sl[i].len = f.size - next < bs ? f.size - next : bs;
			sl[i].got = 0;
			next += sl[i].len;
			submit_read(&ring, f.fd, &sl[i], direct);
			queued++;
		}
		if (queued) {
			r = io_uring_submit(&ring);
			if (r < 0)
				die("io_uring_submit: %s", strerror(-r));
			reading += queued;
		}
		if (!reading && !copying && next >= f.size)
			break;
		if (reading) {
			r = io_uring_wait_cqe(&ring, &cqe);
			if (r < 0)
				die("io_uring_wait_cqe: %s", strerror(-r));
			queued = 0;
			io_uring_for_each_cqe(&ring, head, cqe) {
				struct slot *s = (struct slot *)io_uring_cqe_get_data(cqe);
				seen++;
				if (cqe->res < 0)
					die("%s: read of %llu bytes at %llu: %s", path, (unsigned long long)(s->len - s->got),
					    (unsigned long long)(s->off + s->got), strerror(-cqe->res));
				if (cqe->res == 0)
					die("%s: ends at %llu, before its size said", path, (unsigned long long)(s->off + s->got));
				s->got += (uint64_t)cqe->res;
				if (s->got < s->len) {
					/* A short read: read the rest (block aligned under O_DIRECT). */
					if (direct && s->got % 4096)
						die("%s: O_DIRECT read at %llu came back short and unaligned (%d bytes)", path,
						    (unsigned long long)s->off, cqe->res);
					submit_read(&ring, f.fd, s, direct);
					queued++;
					continue;
				}
				reading--;
				ck(cudaMemcpyAsync(dst + s->off, s->buf, s->len, cudaMemcpyHostToDevice, stream),
				   "cudaMemcpyAsync");
				ck(cudaEventRecord(s->ev, stream), "cudaEventRecord");
				s->state = SLOT_COPYING;
				copying++;
				moved += s->len;
			}
			io_uring_cq_advance(&ring, seen);
			if (queued) {
				r = io_uring_submit(&ring);
				if (r < 0)
					die("io_uring_submit: %s", strerror(-r));
			}
		}
		/* Buffers whose copy has landed can be read into again. */
		{
			unsigned freed = 0;
			for (i = 0; i < qd; i++) {
				cudaError_t e;
				if (sl[i].state != SLOT_COPYING)
					continue;
				e = cudaEventQuery(sl[i].ev);
				if (e == cudaErrorNotReady)
					continue;
				ck(e, "cudaEventQuery");
				sl[i].state = SLOT_FREE;
				copying--;
				freed++;
			}
			/* Nothing to wait on but copies: block on one rather than spin. */
			if (!freed && !reading && copying)
				for (i = 0; i < qd; i++)
					if (sl[i].state == SLOT_COPYING) {
						ck(cudaEventSynchronize(sl[i].ev), "cudaEventSynchronize");
						break;
					}
		}
	}
	ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
	t1 = now_s();
	c1 = cpu_s();
	io_uring_queue_exit(&ring);
	if (moved != f.size)
		die("%s: moved %llu bytes, the file has %llu", path, (unsigned long long)moved, (unsigned long long)f.size);
	verify(&f, dst);
	snprintf(params, sizeof(params), "\"qd\": %u, \"bs_kib\": %llu, \"direct\": %s", qd,
		 (unsigned long long)(bs >> 10), direct ? "true" : "false");
	report("uring", &f, dst, moved, t1 - t0, c1 - c0, params);
	return 0;
}

/* ---- rand ---------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

struct rand_slot {
	char *buf;
	uint64_t off;
	double t0;
};

static int run_rand(const char *path, unsigned qd, uint64_t bs, uint64_t reads, int direct)
{
	struct src f;
	struct io_uring ring;
	struct rand_slot *sl;
	uint32_t *lat;
	uint64_t blocks, issued = 0, done = 0, x = 0x9e3779b97f4a7c15ull, checked = 0;
	char *bufs, *want = (char *)malloc(bs), params[160];
	double t0, t1, c0, c1;
	unsigned i;
	int r, vfd;

	src_open(&f, path, direct);
	blocks = f.size / bs;
	if (!blocks)
		die("%s: smaller than one read of %llu bytes", path, (unsigned long long)bs);
	vfd = open(path, O_RDONLY);
	r = io_uring_queue_init(qd, &ring, 0);
	if (r < 0)
		die("io_uring_queue_init(%u): %s", qd, strerror(-r));
	if (posix_memalign((void **)&bufs, 4096, (size_t)qd * bs) || !want || vfd < 0)
		die("out of memory, or %s cannot be opened again", path);
	sl = (struct rand_slot *)calloc(qd, sizeof(*sl));
	lat = (uint32_t *)malloc(reads * sizeof(uint32_t));
	if (!sl || !lat)
		die("out of memory");
	c0 = cpu_s();
	t0 = now_s();
	for (i = 0; i < qd && issued < reads; i++, issued++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		sl[i].buf = bufs + (uint64_t)i * bs;
		sl[i].off = (x % blocks) * bs;
		sl[i].t0 = now_s();
		io_uring_prep_read(sqe, f.fd, sl[i].buf, (unsigned)bs, sl[i].off);
		io_uring_sqe_set_data(sqe, &sl[i]);
	}
	io_uring_submit(&ring);
	while (done < reads) {
		struct io_uring_cqe *cqe;
		struct rand_slot *s;
		r = io_uring_wait_cqe(&ring, &cqe);
		if (r < 0)
			die("io_uring_wait_cqe: %s", strerror(-r));
		s = (struct rand_slot *)io_uring_cqe_get_data(cqe);
		if (cqe->res != (int)bs)
			die("%s: read of %llu bytes at %llu: %s", path, (unsigned long long)bs, (unsigned long long)s->off,
			    cqe->res < 0 ? strerror(-cqe->res) : "short");
		io_uring_cqe_seen(&ring, cqe);
		lat[done] = (uint32_t)((now_s() - s->t0) * 1e9);
		if ((done & 1023u) == 0) {
			pread_full(vfd, want, bs, s->off, path);
			if (memcmp(want, s->buf, bs))
				die("%s: the read at %llu differs from pread", path, (unsigned long long)s->off);
			checked++;
		}
		done++;
		if (issued < reads) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			s->off = (x % blocks) * bs;
			s->t0 = now_s();
			io_uring_prep_read(sqe, f.fd, s->buf, (unsigned)bs, s->off);
			io_uring_sqe_set_data(sqe, s);
			io_uring_submit(&ring);
			issued++;
		}
	}
	t1 = now_s();
	c1 = cpu_s();
	qsort(lat, reads, sizeof(uint32_t), cmp_u32);
	printf("{\"bench\": \"rand\", \"file\": ");
	json_str(f.path);
	snprintf(params, sizeof(params),
		 "\"qd\": %u, \"bs\": %llu, \"direct\": %s, \"reads\": %llu, \"checked\": %llu, \"iops\": %.0f, "
		 "\"lat_p50_us\": %.2f, \"lat_p99_us\": %.2f",
		 qd, (unsigned long long)bs, direct ? "true" : "false", (unsigned long long)reads,
		 (unsigned long long)checked, (double)reads / (t1 - t0), lat[reads / 2] / 1e3, lat[reads * 99 / 100] / 1e3);
	printf(", \"bytes\": %llu, \"seconds\": %.6f, \"gb_per_s\": %.3f, \"cpu_s\": %.3f, %s}\n",
	       (unsigned long long)(reads * bs), t1 - t0, (double)(reads * bs) / (t1 - t0) / 1e9, c1 - c0, params);
	io_uring_queue_exit(&ring);
	close(vfd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	uint64_t chunk = 8 * MIB, total = 4096 * MIB, bs = 0; /* 0: the command's own default */
	unsigned qd = 32;
	uint64_t reads = 200000;
	int threads = 4, direct = 0, i, first;
	const char *cmd;
	if (argc < 2)
		usage();
	snprintf(bench_who, sizeof(bench_who), "baselines %.40s", argv[1]);
	cmd = argv[1];
	if (strcmp(cmd, "h2d") && strcmp(cmd, "d2d") && strcmp(cmd, "pread") && strcmp(cmd, "mmap") && strcmp(cmd, "uring") &&
	    strcmp(cmd, "rand"))
		usage();
	first = strcmp(cmd, "h2d") && strcmp(cmd, "d2d") ? 3 : 2;
	if (first == 3) {
		if (argc < 3 || argv[2][0] == '-')
			die("give FILE");
		file = argv[2];
	}
	for (i = first; i < argc; i++) {
		const char *o = argv[i];
		int takes = strcmp(o, "--direct") != 0;
		if (takes && i + 1 >= argc)
			die("%s needs a value", o);
		if (!strcmp(o, "--chunk-mib") && strcmp(cmd, "uring"))
			chunk = num(o, argv[++i], 1, 4096) * MIB;
		else if (!strcmp(o, "--total-mib") && (!strcmp(cmd, "h2d") || !strcmp(cmd, "d2d")))
			total = num(o, argv[++i], 1, 1 << 24) * MIB;
		else if (!strcmp(o, "--threads") && !strcmp(cmd, "pread"))
			threads = (int)num(o, argv[++i], 1, 256);
		else if (!strcmp(o, "--qd") && (!strcmp(cmd, "uring") || !strcmp(cmd, "rand")))
			qd = (unsigned)num(o, argv[++i], 1, 4096);
		else if (!strcmp(o, "--bs-kib") && (!strcmp(cmd, "uring") || !strcmp(cmd, "rand")))
			bs = num(o, argv[++i], 4, 1 << 20) << 10;
		else if (!strcmp(o, "--reads") && !strcmp(cmd, "rand"))
			reads = num(o, argv[++i], 1, 1u << 30);
		else if (!strcmp(o, "--direct") && (!strcmp(cmd, "uring") || !strcmp(cmd, "rand")))
			direct = 1;
		else
			die("unknown option %s", o);
	}
	if (!bs)
		bs = !strcmp(cmd, "rand") ? 4096 : 1024 << 10;
	if (direct && bs % 4096)
		die("--bs-kib must be a multiple of 4 with --direct");
	if (!strcmp(cmd, "h2d"))
		return run_h2d(chunk, total);
	if (!strcmp(cmd, "d2d"))
		return run_d2d(chunk, total);
	if (!strcmp(cmd, "uring"))
		return run_uring(file, qd, bs, direct);
	if (!strcmp(cmd, "rand"))
		return run_rand(file, qd, bs, reads, direct);
	return run_loops(cmd, file, !strcmp(cmd, "pread") ? threads : 1, chunk);
}
