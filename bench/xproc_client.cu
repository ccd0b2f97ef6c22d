// SPDX-License-Identifier: MIT
// A GPU client in a process of its own: it attaches to a service as a GPU
// client (gpuos_service_attach_gpu), and its own kernel posts requests to its
// own mailbox and names its own share, as an inference engine in another
// process would. Against a service in host mode (its area is host memory
// standing in for VRAM) CPU threads post instead, through the same code.
//
//   xproc-client --socket PATH --mode check|rtt|rate [--image FILE]
//                [--threads T] [--iters N] [--bytes B] [--go FILE]
//
//   check: T threads each read N random B-byte ranges of the device
//          (READ_RAW: the service needs --allow-raw, the client root or the
//          service's uid) into places of their own in the share; then every
//          byte is compared with the same range of FILE (the device's image)
//   rtt:   one thread, N NOPs one after another: the round trip's median and p99
//   rate:  T threads, N NOPs each: requests per second
//   stale: fill the share with 0xa5, leave (close the connection) but keep
//          the area mapped, say "left", wait for --go FILE, then check that
//          the old mapping still holds only 0xa5: whatever the next client
//          of the area did, none of it reached memory a client that left
//          still maps
//
// --go FILE: after attaching, wait until FILE exists, so that several
// processes start together (aggregate figures). One JSON line on stdout;
// exit 0 when every request succeeded and every byte matched.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

#define XC_TIMEOUT_NS (20ull * 1000000000ull)

struct xc_args {
	struct gpuos_mbox *mb;  // this process's mapping of its mailbox
	uint64_t dst_rt;        // its share, in the runtime's address space
	uint64_t span;          // device bytes offsets are drawn from
	uint32_t op, bytes, iters, nthreads, seed, distinct; // distinct: request (t, i) lands at its own place
	uint32_t *lat;          // [nthreads * iters] ns, or NULL
	uint32_t *to_done;      // [nthreads * iters] ns from the post to the runtime's DONE (its
	                        // clock is the same GPU's %globaltimer), or NULL
	uint32_t *to_taken;     // the same to its TAKEN stamp (0 unless the runtime is built with
	                        // GPUOS_TRACE), or NULL
	uint32_t *errors;       // requests that failed
};

// Request i of thread t: where it reads from. The host computes the same.
__host__ __device__ static uint64_t xc_offset(const struct xc_args *a, uint32_t t, uint32_t i)
{
	uint64_t x = (((uint64_t)a->seed << 32) | t) * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (x % (a->span / a->bytes)) * a->bytes;
}

__host__ __device__ static uint64_t xc_place(const struct xc_args *a, uint32_t t, uint32_t i)
{
	return a->distinct ? ((uint64_t)t * a->iters + i) * a->bytes : (uint64_t)t * a->bytes;
}

__host__ __device__ static void xc_work(const struct xc_args *a, uint32_t t)
{
	uint32_t i, errs = 0;
	for (i = 0; i < a->iters; i++) {
		struct gpuos_req rq;
		struct gpuos_result res;
		uint32_t slot, spins = 0, st;
		uint64_t t0;
		int read = a->op == GPUOS_OP_READ_RAW;
		memset(&rq, 0, sizeof(rq));
		rq.opcode = (uint16_t)a->op;
		rq.offset = read ? xc_offset(a, t, i) : 0;
		rq.length = read ? a->bytes : 0;
		rq.dst = read ? a->dst_rt + xc_place(a, t, i) : 0;
		rq.tag = i;
		t0 = gpuos_now_ns();
		while (gpuos_post(a->mb, &rq, &slot) == GPUOS_ST_FULL)
			gpuos_backoff(&spins);
		spins = 0;
		st = GPUOS_ST_OK;
		while (!gpuos_poll_keep(a->mb, slot, &res)) {
			gpuos_backoff(&spins);
			if ((spins & 63u) == 0 && gpuos_now_ns() - t0 > XC_TIMEOUT_NS) {
				st = GPUOS_ST_TIMEOUT; // the slot stays the runtime's
				break;
			}
		}
		if (st == GPUOS_ST_OK) {
			const struct gpuos_mbox_slot *sl = &gpuos_mbox_slots(a->mb)[slot];
			uint64_t t1 = gpuos_now_ns(), td = sl->t_done_ns, tt = sl->t_trace_ns[GPUOS_TRACE_TAKEN];
			gpuos_release(a->mb, slot);
			st = res.status;
			if (a->lat)
				a->lat[(uint64_t)t * a->iters + i] = (uint32_t)GPUOS_MIN(t1 - t0, 0xffffffffull);
			if (a->to_done)
				a->to_done[(uint64_t)t * a->iters + i] = td > t0 ? (uint32_t)GPUOS_MIN(td - t0, 0xffffffffull) : 0;
			if (a->to_taken)
				a->to_taken[(uint64_t)t * a->iters + i] = tt > t0 ? (uint32_t)GPUOS_MIN(tt - t0, 0xffffffffull) : 0;
		}
		if (st != GPUOS_ST_OK || (read && res.result != a->bytes))
			errs++;
		if (st == GPUOS_ST_TIMEOUT)
			break; // the slot stays the runtime's: post no more
	}
	if (errs)
		gpuos_fetch_add_relaxed_dev32(a->errors, errs);
}

__global__ void xc_kernel(struct xc_args a)
{
	uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < a.nthreads)
		xc_work(&a, t);
}

struct xc_thread {
	pthread_t th;
	const struct xc_args *a;
	uint32_t t;
};

static void *xc_thread_main(void *p)
{
	struct xc_thread *x = (struct xc_thread *)p;
	xc_work(x->a, x->t);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

static int usage(void)
{
	fprintf(stderr, "usage: xproc-client --socket PATH --mode check|rtt|rate|stale [--image FILE] [--threads T] "
			"[--iters N] [--bytes B] [--go FILE]\n");
	return 2;
}

// Run the work: the GPU's threads where the area is VRAM, else CPU threads.
static int run_work(const struct gpuos_attached *at, struct xc_args *a, char *err, size_t errlen)
{
	uint32_t t;
	if (at->vram) {
		unsigned block = a->nthreads < 256 ? a->nthreads : 256;
		xc_kernel<<<(a->nthreads + block - 1) / block, block>>>(*a);
		cudaError_t e = cudaDeviceSynchronize();
		if (e != cudaSuccess) {
			snprintf(err, errlen, "the client's kernel: %s", cudaGetErrorString(e));
			return -1;
		}
		return 0;
	}
	struct xc_thread *x = (struct xc_thread *)calloc(a->nthreads, sizeof(*x));
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (t = 0; t < a->nthreads; t++) {
		x[t].a = a;
		x[t].t = t;
		if (pthread_create(&x[t].th, NULL, xc_thread_main, &x[t])) {
			snprintf(err, errlen, "pthread_create failed");
			a->nthreads = t; // those started are joined below
			break;
		}
	}
	for (uint32_t k = 0; k < a->nthreads; k++)
		pthread_join(x[k].th, NULL);
	free(x);
	return t == a->nthreads ? 0 : -1;
}

// Counters and latencies live where the workers can reach them.
static void *xc_alloc(int vram, size_t len)
{
	void *p = NULL;
	if (vram)
		return cudaMalloc(&p, len) == cudaSuccess && cudaMemset(p, 0, len) == cudaSuccess ? p : NULL;
	return calloc(1, len);
}

static int xc_fetch(int vram, void *dst, const void *src, size_t len)
{
	if (vram)
		return cudaMemcpy(dst, src, len, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
	memcpy(dst, src, len);
	return 0;
}

// Every byte each request read, against the image at the same offset.
static uint64_t xc_compare(const struct gpuos_attached *at, const struct xc_args *a, int img, char *err,
			   size_t errlen)
{
	uint64_t n = (uint64_t)a->nthreads * a->iters * a->bytes, bad = 0;
	char *got = (char *)malloc(n), *want = (char *)malloc(a->bytes);
	if (!got || !want || xc_fetch(at->vram, got, at->heap, n)) {
		snprintf(err, errlen, "could not read the share back");
		free(got);
		free(want);
		return ~0ull;
	}
	for (uint32_t t = 0; t < a->nthreads; t++)
		for (uint32_t i = 0; i < a->iters; i++) {
			uint64_t off = xc_offset(a, t, i);
			if (pread(img, want, a->bytes, (off_t)off) != (ssize_t)a->bytes ||
			    memcmp(want, got + xc_place(a, t, i), a->bytes))
				bad++;
		}
	free(got);
	free(want);
	return bad;
}

// --mode stale (see the top).
static int stale(struct gpuos_attached *at, const char *go)
{
	uint64_t n = at->heap_len, bad = 0;
	unsigned char *buf = (unsigned char *)malloc(n);
	if (!buf || (at->vram ? cudaMemset(at->heap, 0xa5, n) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess
			      : (memset(at->heap, 0xa5, n), 0))) {
		fprintf(stderr, "xproc-client: could not fill the share\n");
		return 1;
	}
	close(at->sock); // the service takes the area back and renews it
	at->sock = -1;
	printf("left\n");
	fflush(stdout);
	while (access(go, F_OK))
		usleep(1000);
	if (xc_fetch(at->vram, buf, at->heap, n)) {
		fprintf(stderr, "xproc-client: could not read the old mapping\n");
		return 1;
	}
	for (uint64_t i = 0; i < n; i++)
		bad += buf[i] != 0xa5;
	printf("{\"mode\": \"stale\", \"mem\": \"%s\", \"share\": %u, \"bytes\": %llu, \"changed\": %llu}\n",
	       at->vram ? "vram" : "host", at->share, (unsigned long long)n, (unsigned long long)bad);
	free(buf);
	gpuos_service_detach(at);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *mode = NULL, *image = NULL, *go = NULL;
	uint32_t threads = 1, iters = 1000, bytes = 4096, i;
	struct gpuos_attached at;
	struct xc_args a;
	char err[512] = "";
	int img = -1, rc = 0;
	uint64_t bad = 0, n;
	double t0, t1;

	for (i = 1; i + 1 < (uint32_t)argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--socket")) sock = v;
		else if (!strcmp(k, "--mode")) mode = v;
		else if (!strcmp(k, "--image")) image = v;
		else if (!strcmp(k, "--go")) go = v;
		else if (!strcmp(k, "--threads")) threads = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--iters")) iters = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--bytes")) bytes = (uint32_t)strtoul(v, NULL, 10);
		else return usage();
	}
	if (i != (uint32_t)argc || !sock || !mode || !threads || !iters || !bytes || (bytes & 511u) ||
	    (strcmp(mode, "check") && strcmp(mode, "rtt") && strcmp(mode, "rate") && strcmp(mode, "stale")) ||
	    (!strcmp(mode, "check") && !image) || (!strcmp(mode, "stale") && !go))
		return usage();
	if (!strcmp(mode, "rtt"))
		threads = 1;
	if (image && (img = open(image, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "xproc-client: %s: %s\n", image, strerror(errno));
		return 1;
	}
	if (gpuos_service_attach_gpu(sock, &at, err, sizeof(err))) {
		fprintf(stderr, "xproc-client: %s\n", err);
		return 1;
	}
	if (!strcmp(mode, "stale"))
		return stale(&at, go);
	memset(&a, 0, sizeof(a));
	a.mb = at.mb;
	a.dst_rt = at.heap_rt;
	a.op = strcmp(mode, "check") ? GPUOS_OP_NOP : GPUOS_OP_READ_RAW;
	a.bytes = bytes;
	a.iters = iters;
	a.nthreads = threads;
	a.seed = (uint32_t)getpid();
	a.distinct = !strcmp(mode, "check");
	if (img >= 0) {
		off_t end = lseek(img, 0, SEEK_END);
		a.span = end > 0 ? (uint64_t)end : 0;
	}
	n = (uint64_t)threads * iters;
	if ((a.op == GPUOS_OP_READ_RAW && (a.span < bytes || n * bytes > at.heap_len)) || n > (1u << 26)) {
		fprintf(stderr, "xproc-client: %llu requests of %u bytes: the share holds %llu bytes, the image %llu\n",
			(unsigned long long)n, bytes, (unsigned long long)at.heap_len, (unsigned long long)a.span);
		gpuos_service_detach(&at);
		return 2;
	}
	a.errors = (uint32_t *)xc_alloc(at.vram, sizeof(uint32_t));
	a.lat = (uint32_t *)xc_alloc(at.vram, n * sizeof(uint32_t));
	a.to_done = (uint32_t *)xc_alloc(at.vram, n * sizeof(uint32_t));
	a.to_taken = (uint32_t *)xc_alloc(at.vram, n * sizeof(uint32_t));
	if (!a.errors || !a.lat || !a.to_done || !a.to_taken) {
		fprintf(stderr, "xproc-client: out of memory\n");
		gpuos_service_detach(&at);
		return 1;
	}
	while (go && access(go, F_OK))
		usleep(1000);
	t0 = now_s();
	if (run_work(&at, &a, err, sizeof(err))) {
		fprintf(stderr, "xproc-client: %s\n", err);
		rc = 1;
	}
	t1 = now_s();
	{
		uint32_t errors = 0, *lat = (uint32_t *)malloc(n * sizeof(uint32_t)), *td = (uint32_t *)malloc(n * 4), *tt = (uint32_t *)malloc(n * 4);
		if (!lat || !td || !tt || xc_fetch(at.vram, tt, a.to_taken, n * 4) || xc_fetch(at.vram, &errors, a.errors, sizeof(errors)) || xc_fetch(at.vram, lat, a.lat, n * 4) ||
		    xc_fetch(at.vram, td, a.to_done, n * 4)) {
			fprintf(stderr, "xproc-client: could not read the results back\n");
			gpuos_service_detach(&at);
			return 1;
		}
		if (a.op == GPUOS_OP_READ_RAW && !rc)
			bad = xc_compare(&at, &a, img, err, sizeof(err));
		qsort(lat, n, sizeof(uint32_t), cmp_u32);
		qsort(td, n, sizeof(uint32_t), cmp_u32);
		qsort(tt, n, sizeof(uint32_t), cmp_u32);
		printf("{\"mode\": \"%s\", \"mem\": \"%s\", \"share\": %u, \"pid\": %d, \"threads\": %u, \"requests\": %llu, "
		       "\"errors\": %u, \"mismatched\": %llu, \"t_start\": %.6f, \"t_end\": %.6f, \"req_per_s\": %.0f, "
		       "\"p50_ns\": %u, \"p99_ns\": %u, \"to_done_p50_ns\": %u, \"to_taken_p50_ns\": %u}\n",
		       mode, at.vram ? "vram" : "host", at.share, (int)getpid(), threads, (unsigned long long)n, errors,
		       (unsigned long long)bad, t0, t1, (double)n / (t1 - t0), lat[n / 2],
		       lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], td[n / 2], tt[n / 2]);
		if (errors || bad)
			rc = 1;
		free(lat);
		free(td);
		free(tt);
	}
	gpuos_service_detach(&at);
	return rc;
}
