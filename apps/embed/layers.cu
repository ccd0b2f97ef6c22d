/* SPDX-License-Identifier: MIT */
/*
 * apps/embed/layers.cu - a CUDA program whose own kernel talks to gpuos: it
 * boots a runtime, and its kernel opens a GGUF model through the mailbox,
 * loads every layer into the program's own registered buffer and sums each
 * one (gpuos_bench_sum_words, all threads of the block). Without a GPU (or
 * with --host) the runtime runs on CPU threads and the same function runs
 * on the main thread as a block of one. Built against the installed library
 * (docs/embedding.md):
 *
 *   nvcc -arch=sm_90 -o gpuos-layers layers.cu $(pkg-config --cflags --libs gpuos)
 *   nvcc -arch=sm_90 --cudart=none -o gpuos-layers layers.cu $(pkg-config --cflags --libs-only-L gpuos) \
 *        -Xlinker -Bstatic,-lgpuos,-luring,-lelf,-lz,-lzstd,-Bdynamic -lstdc++ -lpthread -ldl -lrt -lm
 *
 * One CUDA runtime for the program's own calls: libgpuos.so keeps its own
 * to itself, so the program links nvcc's (the static one, the default);
 * libgpuos.a carries one that the program uses, hence --cudart=none. nvcc
 * puts -Xlinker options before the libraries, hence one list for the
 * static part.
 *
 *   ./gpuos-layers [--host] DEVICE MODEL_PATH
 *
 * It prints "layer N tensors T bytes B sum S" for each layer (S: the sum
 * mod 2^64 of its tensors' checksums, 16 hex digits), then "layers L bytes
 * B gpu|host". Exit status 0, 1 when the device, the model or a layer fails
 * (one line on stderr says why), 2 on a usage error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "gpuos/bench.h"
#include "gpuos/gpuos.h"
#include "gpuos/host.h"

#define THREADS 256u   /* the block of the GPU kernel */
#define CAP     1024u  /* tensors in one layer at most */
#define ALIGN   256u   /* each tensor's place in the buffer */

struct result {
	uint32_t status;     /* enum gpuos_status of the first failure */
	int32_t layer;       /* where it failed, -1: opening the model */
	uint32_t handle, n_layers;
	uint64_t max_span;   /* bytes the largest layer takes in the buffer */
};

struct layer_out {
	uint64_t tensors, bytes, sum;
};

/* The program's control memory: what the runtime reads and writes in it
 * (path, reasons, tables) must be registered, as the data buffer is. */
struct ctl {
	struct result res;
	char why[256];
	char path[GPUOS_PATH_MAX];
	struct gpuos_gguf_export info;
	uint32_t n;                  /* tensors of the current layer */
	uint32_t idx[CAP];
	struct gpuos_gguf_tensor t[CAP];
	void *dst[CAP];
	uint64_t span;
};

__host__ __device__ static void block_sync(void)
{
#ifdef __CUDA_ARCH__
	__syncthreads();
#endif
}


/* Layer L's tensors, their sizes and places at data (one thread). */
__host__ __device__ static uint32_t layer_tensors(struct gpuos_mbox *mb, struct ctl *c, uint32_t L, uint8_t *data)
{
	uint32_t st = gpuos_model_layer(mb, c->res.handle, L, c->idx, CAP, &c->n), i;
	if (st == GPUOS_ST_NOENT) { /* a number no tensor uses: an empty layer */
		c->n = 0;
		st = GPUOS_ST_OK;
	}
	c->span = 0;
	for (i = 0; st == GPUOS_ST_OK && i < c->n; i++) {
		st = gpuos_model_tensor(mb, c->res.handle, c->idx[i], &c->t[i]);
		c->dst[i] = (void *)((uintptr_t)data + c->span);
		c->span += (c->t[i].size + ALIGN - 1) / ALIGN * ALIGN;
	}
	return st;
}

/* First pass (one thread): open the model, and size the largest layer. */
__host__ __device__ static void plan(struct gpuos_mbox *mb, struct ctl *c)
{
	uint32_t st, L;
	c->res.layer = -1;
	c->res.max_span = 0;
	c->why[0] = 0;
	st = gpuos_model_open(mb, c->path, 0, &c->res.handle, NULL, c->why, sizeof(c->why));
	if (st == GPUOS_ST_OK)
		st = gpuos_model_info(mb, c->res.handle, &c->info, sizeof(c->info), NULL);
	c->res.n_layers = st == GPUOS_ST_OK ? c->info.n_layers : 0;
	for (L = 0; st == GPUOS_ST_OK && L < c->res.n_layers; L++) {
		c->res.layer = (int32_t)L;
		st = layer_tensors(mb, c, L, NULL);
		if (c->span > c->res.max_span)
			c->res.max_span = c->span;
	}
	c->res.status = st;
}

/* Second pass (all threads of a block): thread 0 loads layer after layer
 * into data, then every thread sums a strided share of each tensor's words
 * into parts[tid], and thread 0 adds the parts (no atomics: the barrier
 * orders the parts before it reads them). */
__host__ __device__ static void run(struct gpuos_mbox *mb, struct ctl *c, struct layer_out *out, uint8_t *data,
				    uint32_t tid, uint32_t nth, uint64_t *parts)
{
	uint32_t L, i;
	for (L = 0; L < c->res.n_layers; L++) {
		uint64_t got = 0, w, mine = 0;
		if (tid == 0) {
			uint32_t st = layer_tensors(mb, c, L, data);
			if (st == GPUOS_ST_OK && c->n)
				st = gpuos_model_load_tensors(mb, c->res.handle, c->idx, c->dst, c->n, &got);
			c->res.status = st;
			c->res.layer = (int32_t)L;
			out[L].tensors = c->n;
			out[L].bytes = got;
		}
		block_sync();
		if (c->res.status != GPUOS_ST_OK)
			break;
		for (i = 0; i < c->n; i++) {
			uint64_t len = c->t[i].size;
			for (w = tid; w < gpuos_bench_words(len); w += nth)
				mine += gpuos_bench_sum_words(c->dst[i], len, 0, w, 1);
		}
		parts[tid] = mine;
		block_sync();
		if (tid == 0) {
			uint64_t sum = 0;
			for (i = 0; i < nth; i++)
				sum += parts[i];
			out[L].sum = sum;
		}
		/* the parts are written again for the next layer only after
		 * thread 0 has read them */
		block_sync();
	}
	if (tid == 0)
		gpuos_close(mb, c->res.handle);
}

__global__ void plan_kernel(struct gpuos_mbox *mb, struct ctl *c)
{
	plan(mb, c);
}

__global__ void run_kernel(struct gpuos_mbox *mb, struct ctl *c, struct layer_out *out, uint8_t *data)
{
	__shared__ uint64_t parts[THREADS];
	run(mb, c, out, data, threadIdx.x, blockDim.x, parts);
}

/* Memory of the program's own, registered as a destination: cudaMalloc'd
 * VRAM on the GPU (cudaMalloc is safe beside the running runtime),
 * page-aligned host memory in host mode. *p is freed by the caller, even
 * when registering failed. */
static int alloc_registered(struct gpuos_sys *sys, int gpu, size_t len, void **p)
{
	*p = NULL;
	len = (len + 4095) / 4096 * 4096;
	if (gpu ? cudaMalloc(p, len) != cudaSuccess : !(*p = aligned_alloc(4096, len)))
		return -1;
	if (!gpu)
		memset(*p, 0, len);
	return gpuos_sys_register(sys, *p, len, gpu ? GPUOS_REGISTER_DEVICE : 0);
}

/* Copies between the program's memory and the host on its own stream. A
 * stream of its own, non-blocking: the legacy default stream would wait
 * for the runtime's kernel, which never ends. Synchronise the stream, never
 * the device (cudaDeviceSynchronize waits for the runtime too). */
static int copy(cudaStream_t s, void *dst, const void *src, size_t len, cudaMemcpyKind kind)
{
	if (!s) {
		memcpy(dst, src, len);
		return 0;
	}
	return cudaMemcpyAsync(dst, src, len, kind, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess;
}

/* A runtime on device (in host mode when asked, or without a GPU).
 * CUDA starts here, eagerly, so that this program's kernels are loaded
 * before the runtime's kernel spins (a module load beside it deadlocks),
 * with 32 hardware work queues (a stream that shares one with the
 * runtime's kernel waits behind it forever). gpuos_boot refuses a CUDA
 * started otherwise. No GPU or driver: host mode. */
static int boot_runtime(const char *device, int host, struct gpuos_sys **sys)
{
	struct gpuos_boot_opts o;
	char err[512];
	int gpu;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
	gpu = !host && cudaFree(0) == cudaSuccess;

	gpuos_boot_opts_default(&o);
	o.device = device;
	o.host_mode = !gpu;
	/* GPU atomics do not work on a host-memory mailbox over PCIe: a kernel
	 * that posts needs the mailbox in VRAM. */
	o.mbox_vram = gpu;
	o.quiet = 1;
	if (gpuos_boot(&o, sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-layers: %s: %s\n", device, err);
		return -1;
	}
	return 0;
}

static int cuda_failed(void)
{
	fprintf(stderr, "gpuos-layers: CUDA: %s\n", cudaGetErrorString(cudaGetLastError()));
	return 1;
}

static int layer_failed(const struct ctl *h)
{
	fprintf(stderr, "gpuos-layers: layer %d: %s\n", h->res.layer, gpuos_status_name(h->res.status));
	return 1;
}

/* Both passes over the model of c->path (h: the host's copy of c), each
 * layer printed. 0, or 1 after one line on stderr. *out (registered) and
 * *lo are the caller's to free once the runtime has stopped. */
static int passes(struct gpuos_sys *sys, cudaStream_t stream, int gpu, const char *model, struct ctl *c,
		  struct ctl *h, struct layer_out **out, struct layer_out **lo)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)gpuos_sys_mbox_rt(sys);
	uint64_t out_span, total = 0;
	uint8_t *data;
	uint32_t L;

	/* Pass 1: how large the largest layer is. */
	if (gpu) {
		plan_kernel<<<1, 1, 0, stream>>>(mb, c);
		if (cudaGetLastError() != cudaSuccess)
			return cuda_failed();
	} else {
		plan(mb, c);
	}
	if (copy(stream, h, c, offsetof(struct ctl, path), cudaMemcpyDeviceToHost))
		return cuda_failed();
	if (h->res.status != GPUOS_ST_OK && h->res.layer < 0) {
		fprintf(stderr, "gpuos-layers: %s: %s\n", model, h->why[0] ? h->why : gpuos_status_name(h->res.status));
		return 1;
	}
	if (h->res.status != GPUOS_ST_OK)
		return layer_failed(h);

	/* Pass 2: the output array, then room for the largest layer. */
	out_span = ((uint64_t)h->res.n_layers * sizeof(struct layer_out) + ALIGN - 1) / ALIGN * ALIGN;
	if (!(*lo = (struct layer_out *)calloc(h->res.n_layers + 1, sizeof(**lo))) ||
	    alloc_registered(sys, gpu, out_span + h->res.max_span + 1, (void **)out)) {
		fprintf(stderr, "gpuos-layers: no memory for a layer of %llu bytes\n",
			(unsigned long long)h->res.max_span);
		return 1;
	}
	data = (uint8_t *)*out + out_span;
	if (gpu) {
		run_kernel<<<1, THREADS, 0, stream>>>(mb, c, *out, data);
		if (cudaGetLastError() != cudaSuccess)
			return cuda_failed();
	} else {
		uint64_t part;
		run(mb, c, *out, data, 0, 1, &part);
	}
	if (copy(stream, h, c, offsetof(struct ctl, path), cudaMemcpyDeviceToHost) ||
	    copy(stream, *lo, *out, h->res.n_layers * sizeof(**lo), cudaMemcpyDeviceToHost))
		return cuda_failed();
	if (h->res.status != GPUOS_ST_OK)
		return layer_failed(h);
	for (L = 0; L < h->res.n_layers; L++) {
		printf("layer %u tensors %llu bytes %llu sum %016llx\n", L, (unsigned long long)(*lo)[L].tensors,
		       (unsigned long long)(*lo)[L].bytes, (unsigned long long)(*lo)[L].sum);
		total += (*lo)[L].bytes;
	}
	printf("layers %u bytes %llu %s\n", h->res.n_layers, (unsigned long long)total, gpu ? "gpu" : "host");
	return 0;
}

int main(int argc, char **argv)
{
	struct gpuos_sys *sys;
	struct ctl *c = NULL, *h = NULL;
	struct layer_out *out = NULL, *lo = NULL;
	cudaStream_t stream = NULL;
	char err[512];
	int a = 1, host = 0, gpu, rc = 1;

	if (a < argc && !strcmp(argv[a], "--host")) {
		host = 1;
		a++;
	}
	if (argc - a != 2 || strlen(argv[a + 1]) >= GPUOS_PATH_MAX) {
		fprintf(stderr, "usage: %s [--host] DEVICE MODEL_PATH\n", argv[0]);
		return 2;
	}
	if (boot_runtime(argv[a], host, &sys))
		return 1;
	gpu = gpuos_sys_gpu_sm(sys) > 0;
	if ((gpu && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) ||
	    !(h = (struct ctl *)calloc(1, sizeof(*h))) || alloc_registered(sys, gpu, sizeof(*c), (void **)&c)) {
		fprintf(stderr, "gpuos-layers: no memory for the control block\n");
		goto out;
	}
	strcpy(h->path, argv[a + 1]);
	if (copy(stream, c->path, h->path, sizeof(h->path), cudaMemcpyHostToDevice))
		cuda_failed();
	else
		rc = passes(sys, stream, gpu, argv[a + 1], c, h, &out, &lo);
out:
	if (c) /* -ENOENT where registering had failed */
		gpuos_sys_unregister(sys, c);
	if (out)
		gpuos_sys_unregister(sys, out);
	if (gpuos_shutdown(sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-layers: shutdown: %s\n", err);
		rc = 1;
	}
	/* cudaFree only now: it waits for the device to go idle, which it never
	 * does while the runtime's kernel spins. */
	if (gpu) {
		cudaFree(c);
		cudaFree(out);
		if (stream)
			cudaStreamDestroy(stream);
	} else {
		free(c);
		free(out);
	}
	free(h);
	free(lo);
	return rc;
}
