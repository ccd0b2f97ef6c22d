/* SPDX-License-Identifier: MIT */
/*
 * apps/remote/remote.cu - remote loads between GPUs through NVSHMEM
 * (gpuos/remote.h, docs/scale-out.md). One program, one process per PE:
 *
 *   gpuos-remote serve  UIDFILE NPES DEVICE [MODEL]
 *       PE 0. Makes the job's unique ID (written to UIDFILE), boots a gpuos
 *       runtime on DEVICE on its GPU and runs the server kernel
 *       (apps/remote/serve.h): requests of the other PEs are loaded through
 *       the runtime and put into their receive buffers. MODEL: a GGUF path
 *       on DEVICE whose tensors clients may ask for by name. Ends when every
 *       client has said it is done.
 *   gpuos-remote client UIDFILE NPES PE DEVICE PATH [MODEL TENSOR...]
 *       PE 1..NPES-1. Boots a runtime of its own on DEVICE (the same image,
 *       on its GPU) for the local baseline, and measures, with the same
 *       bytes of PATH both ways: the round trip of 4 KiB reads (remote and
 *       local, one at a time) and the rate of 8 MiB reads (remote with 8 in
 *       flight, local one at a time); every remote read is compared with
 *       the local one. Each TENSOR of MODEL (the server's model) is loaded
 *       remotely by name and compared with its local load. Prints one JSON
 *       line.
 *
 * The server's clients read what its runtime lets any client read:
 * GPUOS_REMOTE_ROOT=DIR confines them to DIR (the runtime's --root); never
 * raw device bytes. The server also ends when its host raises area->stop:
 * after GPUOS_REMOTE_SECONDS (default 600), so that a client that died
 * without saying it is done does not keep it for ever.
 *
 * GPU: GPUOS_REMOTE_GPU (default: PE modulo the GPUs). Bootstrapped with
 * the unique ID (nvshmemx_init_attr), no launcher. NVLink multicast stays
 * off (NVSHMEM_DISABLE_NVLS=1, set here before NVSHMEM starts). Built on
 * the GPU machine against its NVSHMEM (tests/gpu/remote.sh); not part of
 * make.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"
#include "gpuos/remote.h"
#include "serve.h"

#define RECV_BYTES  (256ull << 20)  /* every PE's receive buffer */
#define STAGE_BYTES (16ull << 20)   /* the server's staging */
#define BIG         (8ull << 20)    /* the rate's request */
#define SMALL       4096ull         /* the round trip's */
#define ROUNDS      400u            /* 4 KiB round trips each way */
#define INFLIGHT    8u

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "gpuos-remote: %s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

/* Symmetric addresses: the same on every PE. */
struct sym {
	struct gpuos_remote_area *area;
	uint8_t *recv;
	uint64_t *done;   /* clients finished, on the server */
};

/* ---- the server: the transport on NVSHMEM ------------------------------------------ */

__device__ static void nv_put(void *ctx, uint32_t pe, uint64_t dst, const void *src, uint64_t len)
{
	const struct sym *y = (const struct sym *)ctx;
	nvshmem_putmem(y->recv + dst, src, len, (int)pe); /* blocking: src may be reused on return */
}

__device__ static void nv_answer(void *ctx, uint32_t pe, uint32_t slot, const struct gpuos_remote_res *res)
{
	const struct sym *y = (const struct sym *)ctx;
	/* the server's own res[slot] (it is no client) holds the answer as the
	 * put's symmetric source */
	y->area->res[slot] = *res;
	/* what the runtime wrote into pe's buffer directly (the answer of its
	 * mailbox request, acquired, came after it) and the data's puts, all
	 * before the answer's put and signal */
	__threadfence_system();
	nvshmem_fence();
	nvshmem_putmem_signal(&y->area->res[slot], &y->area->res[slot], sizeof(*res), &y->area->res_sig[slot], res->seq,
			      NVSHMEM_SIGNAL_SET, (int)pe);
}

__global__ void serve_kernel(struct remote_server *s, const struct sym *y, const char *model, uint32_t clients,
			     uint32_t *model_status)
{
	uint32_t spins = 0;
	s->x.put = nv_put;
	s->x.answer = nv_answer;
	s->x.ctx = (void *)y;
	*model_status = GPUOS_ST_OK;
	if (model[0])
		*model_status = gpuos_model_open(s->mb, model, 0, &s->model, NULL, NULL, 0);
	/* acquire: pairs with each client's atomic add after its last answer,
	 * and with the host's copy that raises stop */
	while (gpuos_load_acquire_sys64(y->done) < clients && !gpuos_load_acquire_sys64(&y->area->stop))
		if (remote_poll(s))
			spins = 0;
		else
			gpuos_backoff(&spins);
	remote_close_all(s);
	if (s->model)
		gpuos_close(s->mb, s->model);
}

/* ---- the client ------------------------------------------------------------------- */

struct cjob {
	uint32_t server;
	const char *path;             /* on the device: the file's path (registered for the local loads) */
	uint64_t file_bytes;
	uint8_t *local;               /* registered with the local runtime: its bytes */
	struct gpuos_mbox *mb;        /* the local runtime's */
	uint32_t seq[GPUOS_REMOTE_SLOTS];
	/* out */
	uint64_t remote_ns[ROUNDS], local_ns[ROUNDS];
	uint64_t remote_big_ns, local_big_ns, big_bytes;
	uint32_t status, mismatch;
	uint64_t mismatch_at;
	uint32_t tensors_ok, tensors_bad;
};

/* Request rq into the server's slot k (the client's own row of its area is
 * the put's symmetric source), then its signal. */
__device__ static void post(const struct sym *y, struct cjob *c, uint32_t k, const struct gpuos_remote_req *rq)
{
	int me = nvshmem_my_pe();
	struct gpuos_remote_req *src = &y->area->req[me][k];
	*src = *rq;
	src->seq = ++c->seq[k];
	nvshmem_putmem_signal(src, src, sizeof(*src), &y->area->req_sig[me][k], src->seq, NVSHMEM_SIGNAL_SET,
			      (int)c->server);
}

__device__ static struct gpuos_remote_res answer(const struct sym *y, struct cjob *c, uint32_t k)
{
	nvshmem_signal_wait_until(&y->area->res_sig[k], NVSHMEM_CMP_EQ, c->seq[k]);
	return y->area->res[k];
}

__device__ static void req_range(struct gpuos_remote_req *rq, const char *path, uint64_t off, uint64_t len,
				 uint64_t dst)
{
	uint32_t i;
	memset(rq, 0, sizeof(*rq));
	rq->op = GPUOS_REMOTE_RANGE;
	for (i = 0; i < GPUOS_REMOTE_NAME_MAX - 1 && path[i]; i++)
		rq->name[i] = path[i];
	rq->offset = off;
	rq->length = len;
	rq->dst = dst;
}

/* Where the i-th request reads: spread over the file, block aligned. */
__device__ static uint64_t where(const struct cjob *c, uint64_t i, uint64_t len)
{
	uint64_t span = c->file_bytes - len;
	return span ? (i * 7919ull * 4096ull) % span / 4096ull * 4096ull : 0;
}

__device__ static int same(const uint8_t *a, const uint8_t *b, uint64_t n, uint64_t *at)
{
	for (uint64_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			*at = i;
			return 0;
		}
	return 1;
}

/* One thread: the round trips, then the rates, each remote read compared
 * with the local one of the same bytes. */
__global__ void client_kernel(const struct sym *y, struct cjob *c)
{
	struct gpuos_remote_req rq;
	struct gpuos_remote_res r;
	uint64_t i, t0, got, at = 0, n_big;
	uint32_t st, h = 0, k;

	c->status = gpuos_open(c->mb, c->path, 0, &h, &c->file_bytes, NULL, 0);
	if (c->status != GPUOS_ST_OK)
		return;
	for (i = 0; i < ROUNDS; i++) {
		uint64_t off = where(c, i, SMALL);
		req_range(&rq, c->path, off, SMALL, 0);
		t0 = gpuos_now_ns();
		post(y, c, 0, &rq);
		r = answer(y, c, 0);
		c->remote_ns[i] = gpuos_now_ns() - t0;
		t0 = gpuos_now_ns();
		st = gpuos_read(c->mb, h, off, SMALL, c->local, &got);
		c->local_ns[i] = gpuos_now_ns() - t0;
		if (r.status != GPUOS_ST_OK || st != GPUOS_ST_OK) {
			c->status = r.status != GPUOS_ST_OK ? r.status : st;
			goto out;
		}
		if (!c->mismatch && (r.bytes != SMALL || !same(y->recv, c->local, SMALL, &at))) {
			c->mismatch = 1;
			c->mismatch_at = off + at;
		}
	}
	/* rates: the same n_big reads of BIG bytes, remote 8 in flight into 8
	 * places of the receive buffer, local one at a time */
	n_big = c->file_bytes / BIG < 64 ? c->file_bytes / BIG : 64;
	c->big_bytes = n_big * BIG;
	t0 = gpuos_now_ns();
	for (i = 0; i < n_big + INFLIGHT; i++) {
		k = (uint32_t)(i % INFLIGHT);
		if (i >= INFLIGHT && i - INFLIGHT < n_big) { /* request i - 8 was posted (or skipped after a failure) */
			r = answer(y, c, k);
			if ((r.status != GPUOS_ST_OK || r.bytes != BIG) && c->status == GPUOS_ST_OK)
				c->status = r.status != GPUOS_ST_OK ? r.status : GPUOS_ST_BAD_RANGE;
		}
		/* after a failure nothing more is posted, but the loop runs on
		 * and takes the answer of everything in flight (a slot with
		 * nothing new answers at once), so that none lands after this PE
		 * says it is done */
		if (i < n_big && c->status == GPUOS_ST_OK) {
			req_range(&rq, c->path, i * BIG, BIG, k * BIG);
			post(y, c, k, &rq);
		}
	}
	if (c->status != GPUOS_ST_OK)
		goto out;
	c->remote_big_ns = gpuos_now_ns() - t0;
	t0 = gpuos_now_ns();
	for (i = 0; i < n_big; i++) {
		st = gpuos_read(c->mb, h, i * BIG, BIG, c->local + (i % INFLIGHT) * BIG, &got);
		if (st != GPUOS_ST_OK || got != BIG) {
			c->status = st != GPUOS_ST_OK ? st : GPUOS_ST_BAD_RANGE;
			goto out;
		}
	}
	c->local_big_ns = gpuos_now_ns() - t0;
	/* the last 8 big reads of each side are in place: compare them */
	for (i = n_big > INFLIGHT ? n_big - INFLIGHT : 0; i < n_big && !c->mismatch; i++)
		if (!same(y->recv + (i % INFLIGHT) * BIG, c->local + (i % INFLIGHT) * BIG, BIG, &at)) {
			c->mismatch = 2;
			c->mismatch_at = i * BIG + at;
		}
out:
	gpuos_close(c->mb, h);
}

/* Each tensor by name, remote and local, compared. */
__global__ void tensor_kernel(const struct sym *y, struct cjob *c, const char *model, const char *names, uint32_t n)
{
	struct gpuos_remote_req rq;
	struct gpuos_remote_res r;
	struct gpuos_gguf_tensor *t = (struct gpuos_gguf_tensor *)(c->local + (RECV_BYTES - 4096));
	uint32_t h = 0, i, j, idx, st;
	uint64_t at, got;
	if (gpuos_model_open(c->mb, model, 0, &h, NULL, NULL, 0) != GPUOS_ST_OK) {
		c->tensors_bad = n;
		return;
	}
	for (i = 0; i < n; i++, names += GPUOS_REMOTE_NAME_MAX) {
		memset(&rq, 0, sizeof(rq));
		rq.op = GPUOS_REMOTE_TENSOR;
		for (j = 0; j < GPUOS_REMOTE_NAME_MAX - 1 && names[j]; j++)
			rq.name[j] = names[j];
		post(y, c, 0, &rq);
		r = answer(y, c, 0);
		st = gpuos_model_find(c->mb, h, names, &idx);
		if (st == GPUOS_ST_OK)
			st = gpuos_model_tensor(c->mb, h, idx, t);
		if (st == GPUOS_ST_OK)
			st = gpuos_model_load(c->mb, h, idx, c->local, 0, 0, &got);
		if (r.status == GPUOS_ST_OK && st == GPUOS_ST_OK && r.bytes == t->size && got == t->size &&
		    same(y->recv, c->local, got, &at))
			c->tensors_ok++;
		else
			c->tensors_bad++;
	}
	gpuos_close(c->mb, h);
}

/* ---- both ------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void nv_start(const char *uidfile, int npes, int pe)
{
	nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
	nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
	int n;
	if (pe == 0) {
		char tmp[4200];
		FILE *f;
		nvshmemx_get_uniqueid(&id);
		snprintf(tmp, sizeof(tmp), "%s.tmp", uidfile);
		f = fopen(tmp, "wb");
		if (!f || fwrite(&id, sizeof(id), 1, f) != 1 || fclose(f) || rename(tmp, uidfile)) {
			fprintf(stderr, "gpuos-remote: cannot write %s\n", uidfile);
			exit(1);
		}
	} else {
		FILE *f = NULL;
		for (n = 0; n < 600 && !(f = fopen(uidfile, "rb")); n++)
			usleep(100000);
		if (!f || fread(&id, sizeof(id), 1, f) != 1) {
			fprintf(stderr, "gpuos-remote: no unique ID in %s\n", uidfile);
			exit(1);
		}
		fclose(f);
	}
	nvshmemx_set_attr_uniqueid_args(pe, npes, &id, &attr);
	if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr)) {
		fprintf(stderr, "gpuos-remote: NVSHMEM did not start (PE %d of %d)\n", pe, npes);
		exit(1);
	}
}

static struct gpuos_sys *boot(const char *device, int mbox_vram, const char *root)
{
	struct gpuos_boot_opts o;
	struct gpuos_sys *s;
	char err[512];
	int dev = 0;
	gpuos_boot_opts_default(&o);
	cudaGetDevice(&dev);
	o.device = device;
	o.gpu = (uint32_t)dev;
	o.require_gpu = 1;
	o.mbox_vram = mbox_vram;
	o.root = root;
	o.warps = 4;
	o.quiet = 1;
	if (gpuos_boot(&o, &s, err, sizeof(err))) {
		fprintf(stderr, "gpuos-remote: boot %s: %s\n", device, err);
		exit(1);
	}
	return s;
}

/* Device memory of the process's own, registered with the runtime. */
static void *reg(struct gpuos_sys *s, void *p, size_t len)
{
	if (gpuos_sys_register(s, p, len, GPUOS_REGISTER_DEVICE)) {
		fprintf(stderr, "gpuos-remote: cannot register %zu bytes with the runtime\n", len);
		exit(1);
	}
	return p;
}

/* Copies on the program's own non-blocking stream, never the legacy
 * default one (docs/embedding.md: it can wait for the runtime's kernel). */
static void *dev_str(cudaStream_t st, const char *s, size_t len)
{
	void *p;
	char *h = (char *)calloc(1, len);
	snprintf(h, len, "%s", s);
	CK(cudaMalloc(&p, len));
	CK(cudaMemcpyAsync(p, h, len, cudaMemcpyHostToDevice, st));
	CK(cudaStreamSynchronize(st));
	free(h);
	return p;
}

/* This client is done: after its last answer, so nothing of it is in
 * flight; the server ends when all are. */
__global__ void done_kernel(const struct sym *y, int server)
{
	nvshmem_uint64_atomic_add(y->done, 1, server);
}

/* The server's host side: until every client is done, or the time is
 * up (GPUOS_REMOTE_SECONDS); then it raises stop through a stream of its
 * own (the kernel spins on st). */
static void wait_or_stop(cudaStream_t st, struct gpuos_remote_area *area)
{
	const char *sec = getenv("GPUOS_REMOTE_SECONDS");
	long left = (sec ? atol(sec) : 600) * 10;
	uint64_t one = 1;
	cudaStream_t st2;

	CK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
	while (cudaStreamQuery(st) == cudaErrorNotReady && left-- > 0)
		usleep(100000);
	if (cudaStreamQuery(st) == cudaErrorNotReady) {
		fprintf(stderr, "gpuos-remote: time is up: stopping the server\n");
		CK(cudaMemcpyAsync(&area->stop, &one, sizeof(one), cudaMemcpyHostToDevice, st2));
		CK(cudaStreamSynchronize(st2));
	}
}

/* PE 0: a runtime on argv[4], the server kernel until every client is
 * done, its JSON line. The runtime, to be shut down. */
static struct gpuos_sys *serve_main(cudaStream_t st, const struct sym *y, const struct sym *dy, uint8_t *stage,
				    int npes, int gpu, int argc, char **argv)
{
	struct remote_server hs, *ds;
	uint32_t mst = 0, *dmst;
	char *name, *model;
	struct gpuos_sys *sys;

	sys = boot(argv[4], 1, getenv("GPUOS_REMOTE_ROOT"));
	memset(&hs, 0, sizeof(hs));
	CK(cudaMalloc(&name, GPUOS_REMOTE_NAME_MAX));
	model = (char *)dev_str(st, argc > 5 ? argv[5] : "", GPUOS_PATH_MAX);
	hs.mb = (struct gpuos_mbox *)(uintptr_t)gpuos_sys_mbox_rt(sys);
	hs.stage = (uint8_t *)reg(sys, stage, STAGE_BYTES);
	hs.stage_bytes = STAGE_BYTES;
	hs.name = (char *)reg(sys, name, GPUOS_REMOTE_NAME_MAX);
	reg(sys, model, GPUOS_PATH_MAX);
	hs.recv_bytes = RECV_BYTES;
	/* direct where this GPU reaches a client's receive buffer (NVLink,
	 * PCIe peer, or the same GPU), unless GPUOS_REMOTE_PUT asks for the
	 * put path (what InfiniBand would take) */
	for (int p = 1; p < npes && !getenv("GPUOS_REMOTE_PUT"); p++) {
		uint8_t *peer = (uint8_t *)nvshmem_ptr(y->recv, p);
		if (peer && gpuos_sys_register(sys, peer, RECV_BYTES, GPUOS_REGISTER_DEVICE) == 0)
			hs.direct[p] = peer;
	}
	hs.npes = (uint32_t)npes;
	hs.me = 0;
	hs.area = y->area;
	CK(cudaMalloc(&ds, sizeof(hs)));
	CK(cudaMalloc(&dmst, sizeof(uint32_t)));
	CK(cudaMemcpyAsync(ds, &hs, sizeof(hs), cudaMemcpyHostToDevice, st));
	serve_kernel<<<1, 1, 0, st>>>(ds, dy, model, (uint32_t)npes - 1, dmst);
	CK(cudaGetLastError());
	fprintf(stderr, "gpuos-remote: PE 0 serving on GPU %d\n", gpu);
	wait_or_stop(st, y->area);
	CK(cudaStreamSynchronize(st));
	CK(cudaMemcpyAsync(&hs, ds, sizeof(hs), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&mst, dmst, sizeof(mst), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	printf("{\"pe\": 0, \"gpu\": %d, \"path\": \"%s\", \"served\": %llu, \"failed\": %llu, \"bytes\": %llu, "
	       "\"model\": \"%s\"}\n", gpu, hs.direct[1] ? "direct" : "put", (unsigned long long)hs.served,
	       (unsigned long long)hs.failed, (unsigned long long)hs.bytes, gpuos_status_name(mst));
	return sys;
}

/* PE 1..: a runtime on argv[5] for the local baseline, the client's
 * measures and tensor loads, its JSON line. The runtime, to be shut down. */
static struct gpuos_sys *client_main(cudaStream_t st, const struct sym *dy, int pe, int gpu, int argc, char **argv)
{
	struct cjob *c, *hc = (struct cjob *)calloc(1, sizeof(*hc));
	uint8_t *local;
	char *path, *model = NULL, *names = NULL;
	uint32_t nt = argc > 8 ? (uint32_t)argc - 8 : 0, i;
	struct gpuos_sys *sys;

	sys = boot(argv[5], 1, NULL);
	CK(cudaMalloc(&c, sizeof(*c)));
	CK(cudaMalloc(&local, RECV_BYTES));
	path = (char *)reg(sys, dev_str(st, argv[6], GPUOS_PATH_MAX), GPUOS_PATH_MAX);
	hc->server = 0;
	hc->path = path;
	hc->local = (uint8_t *)reg(sys, local, RECV_BYTES);
	hc->mb = (struct gpuos_mbox *)(uintptr_t)gpuos_sys_mbox_rt(sys);
	CK(cudaMemcpyAsync(c, hc, sizeof(*hc), cudaMemcpyHostToDevice, st));
	client_kernel<<<1, 1, 0, st>>>(dy, c);
	CK(cudaGetLastError());
	if (nt) {
		char *hn = (char *)calloc(nt, GPUOS_REMOTE_NAME_MAX);
		for (i = 0; i < nt; i++)
			snprintf(hn + (size_t)i * GPUOS_REMOTE_NAME_MAX, GPUOS_REMOTE_NAME_MAX, "%s", argv[8 + i]);
		model = (char *)reg(sys, dev_str(st, argv[7], GPUOS_PATH_MAX), GPUOS_PATH_MAX);
		CK(cudaMalloc(&names, (size_t)nt * GPUOS_REMOTE_NAME_MAX));
		reg(sys, names, (size_t)nt * GPUOS_REMOTE_NAME_MAX);
		CK(cudaMemcpyAsync(names, hn, (size_t)nt * GPUOS_REMOTE_NAME_MAX, cudaMemcpyHostToDevice, st));
		tensor_kernel<<<1, 1, 0, st>>>(dy, c, model, names, nt);
		CK(cudaGetLastError());
		free(hn);
	}
	CK(cudaMemcpyAsync(hc, c, sizeof(*hc), cudaMemcpyDeviceToHost, st));
	done_kernel<<<1, 1, 0, st>>>(dy, 0);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(st));
	qsort(hc->remote_ns, ROUNDS, sizeof(uint64_t), cmp_u64);
	qsort(hc->local_ns, ROUNDS, sizeof(uint64_t), cmp_u64);
	printf("{\"pe\": %d, \"gpu\": %d, \"status\": \"%s\", \"mismatch\": %u, \"mismatch_at\": %llu, "
	       "\"remote_4k_median_us\": %.2f, \"local_4k_median_us\": %.2f, \"remote_4k_p99_us\": %.2f, "
	       "\"local_4k_p99_us\": %.2f, \"big_bytes\": %llu, \"remote_gb_per_s\": %.3f, \"local_gb_per_s\": %.3f, "
	       "\"tensors_ok\": %u, \"tensors_bad\": %u}\n",
	       pe, gpu, gpuos_status_name(hc->status), hc->mismatch, (unsigned long long)hc->mismatch_at,
	       hc->remote_ns[ROUNDS / 2] / 1e3, hc->local_ns[ROUNDS / 2] / 1e3, hc->remote_ns[ROUNDS * 99 / 100] / 1e3,
	       hc->local_ns[ROUNDS * 99 / 100] / 1e3, (unsigned long long)hc->big_bytes,
	       hc->remote_big_ns ? hc->big_bytes / (double)hc->remote_big_ns : 0.0,
	       hc->local_big_ns ? hc->big_bytes / (double)hc->local_big_ns : 0.0, hc->tensors_ok, hc->tensors_bad);
	free(hc);
	return sys;
}

int main(int argc, char **argv)
{
	int serve = argc >= 5 && !strcmp(argv[1], "serve"), client = argc >= 7 && !strcmp(argv[1], "client");
	int npes, pe, ngpu = 0, gpu;
	struct sym y, *dy;
	struct gpuos_sys *sys;
	cudaStream_t st;
	const char *g;

	if (!serve && !client) {
		fprintf(stderr, "usage: gpuos-remote serve UIDFILE NPES DEVICE [MODEL]\n"
				"       gpuos-remote client UIDFILE NPES PE DEVICE PATH [TENSOR...]\n");
		return 2;
	}
	npes = atoi(argv[3]);
	pe = serve ? 0 : atoi(argv[4]);
	if (npes < 2 || npes > (int)GPUOS_REMOTE_PES || pe < 0 || pe >= npes) {
		fprintf(stderr, "gpuos-remote: NPES 2 to %u, PE below it\n", GPUOS_REMOTE_PES);
		return 2;
	}
	/* before CUDA and NVSHMEM start: gpuos_boot needs both (a lazy load
	 * beside the runtime deadlocks, a shared work queue stalls), and
	 * NVLink multicast must stay off */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
	CK(cudaGetDeviceCount(&ngpu));
	g = getenv("GPUOS_REMOTE_GPU");
	gpu = g ? atoi(g) : pe % ngpu;
	CK(cudaSetDevice(gpu));
	nv_start(argv[2], npes, pe);
	/* every symmetric allocation before the runtime spins */
	y.area = (struct gpuos_remote_area *)nvshmem_malloc(sizeof(struct gpuos_remote_area));
	y.recv = (uint8_t *)nvshmem_malloc(RECV_BYTES);
	y.done = (uint64_t *)nvshmem_malloc(sizeof(uint64_t));
	uint8_t *stage = (uint8_t *)nvshmem_malloc(STAGE_BYTES);
	if (!y.area || !y.recv || !y.done || !stage) {
		fprintf(stderr, "gpuos-remote: nvshmem_malloc failed\n");
		return 1;
	}
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CK(cudaMemsetAsync(y.area, 0, sizeof(struct gpuos_remote_area), st));
	CK(cudaMemsetAsync(y.done, 0, sizeof(uint64_t), st));
	CK(cudaMalloc(&dy, sizeof(y)));
	CK(cudaMemcpyAsync(dy, &y, sizeof(y), cudaMemcpyHostToDevice, st));
	CK(cudaStreamSynchronize(st));
	nvshmem_barrier_all(); /* every PE's area zeroed before any request */

	if (serve)
		sys = serve_main(st, &y, dy, stage, npes, gpu, argc, argv);
	else
		sys = client_main(st, dy, pe, gpu, argc, argv);
	fflush(stdout);
	{
		char err[512];
		if (gpuos_shutdown(sys, err, sizeof(err)))
			fprintf(stderr, "gpuos-remote: shutdown: %s\n", err);
	}
	nvshmem_barrier_all();
	nvshmem_free(stage);
	nvshmem_free(y.done);
	nvshmem_free(y.recv);
	nvshmem_free(y.area);
	nvshmem_finalize();
	return 0;
}
