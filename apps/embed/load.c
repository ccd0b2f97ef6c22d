/* SPDX-License-Identifier: MIT */
/*
 * apps/embed/load.c - load GGUF tensors into the program's own cudaMalloc
 * buffer from host code, no kernel written (docs/embedding.md): boot a
 * runtime, register the buffer, gpuos_model_load_host on a stream, copy the
 * bytes back on the same stream and write them to stdout, tensor after
 * tensor in the order named. Without a GPU (or with --host) the runtime
 * runs on CPU threads and the buffer is host memory.
 *
 *   cc -o gpuos-load load.c $(pkg-config --cflags --libs gpuos) \
 *      -I$CUDA/include $CUDA/lib64/libcudart_static.a -ldl -lrt -lpthread
 *   (libgpuos.so keeps its CUDA runtime to itself; libgpuos.a carries one
 *   that the program uses too: link no other with it)
 *   ./gpuos-load [--host] DEVICE MODEL_PATH TENSOR_NAME... > BYTES
 *
 * Exit status 0, 1 when the device, the model or a tensor fails (one line
 * on stderr says why), 2 on a usage error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpuos/gguf.h"
#include "gpuos/host.h"

#define ALIGN 256u

/* Each name's size from the model's tables (gpuos_model_info_host). */
static int sizes_of(struct gpuos_sys *sys, const char *model, int n, char **names, uint64_t *size)
{
	size_t need = 0;
	char *buf;
	int i, r = gpuos_model_info_host(sys, model, NULL, 0, &need);
	if (r && !need) {
		fprintf(stderr, "gpuos-load: %s\n", gpuos_sys_error(sys));
		return -1;
	}
	if (!(buf = malloc(need)) || gpuos_model_info_host(sys, model, buf, need, &need)) {
		fprintf(stderr, "gpuos-load: %s\n", buf ? gpuos_sys_error(sys) : "out of memory");
		free(buf);
		return -1;
	}
	const struct gpuos_gguf_export *x = (const struct gpuos_gguf_export *)buf;
	const struct gpuos_gguf_tensor *t = (const struct gpuos_gguf_tensor *)(buf + x->tensors_off);
	for (i = 0; i < n; i++) {
		uint64_t k;
		for (k = 0; k < x->tensor_count && strcmp(t[k].name, names[i]); k++)
			;
		if (k == x->tensor_count) {
			fprintf(stderr, "gpuos-load: %s: no tensor '%s'\n", model, names[i]);
			free(buf);
			return -1;
		}
		size[i] = t[k].size;
	}
	free(buf);
	return 0;
}

/* A runtime on device (in host mode when asked, or without a GPU).
 * CUDA starts here, eagerly, so that every module of the program is
 * loaded before the runtime's kernel spins (a module load beside it
 * deadlocks), with 32 hardware work queues (a stream that shares one with
 * the runtime's kernel waits behind it forever). gpuos_boot refuses a
 * CUDA started otherwise. */
static int boot_runtime(const char *device, int host_mode, struct gpuos_sys **sys)
{
	struct gpuos_boot_opts o;
	char err[512];
	int gpu;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
	gpu = !host_mode && cudaFree(0) == cudaSuccess;

	gpuos_boot_opts_default(&o);
	o.device = device;
	o.host_mode = !gpu;
	o.quiet = 1;
	if (gpuos_boot(&o, sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-load: %s: %s\n", device, err);
		return -1;
	}
	return 0;
}

/* The loaded tensors (total bytes of buf) into host memory: on the GPU
 * by a copy queued on the load's stream after it. */
static int copy_back(struct gpuos_sys *sys, char *host, const void *buf, uint64_t total, cudaStream_t stream, int gpu)
{
	if (!gpu) {
		memcpy(host, buf, total);
		return 0;
	}
	if (cudaMemcpyAsync(host, buf, total, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
	    cudaStreamSynchronize(stream) != cudaSuccess) {
		fprintf(stderr, "gpuos-load: copying the tensors back failed\n");
		return -1;
	}
	if (gpuos_sys_sync(sys)) {
		fprintf(stderr, "gpuos-load: %s\n", gpuos_sys_error(sys));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gpuos_sys *sys;
	cudaStream_t stream = NULL;
	uint64_t size[64], total = 0, at;
	void *dst[64], *buf = NULL;
	char err[512], *host = NULL;
	int a = 1, host_mode = 0, gpu, rc = 1, n, i, registered = 0;

	if (a < argc && !strcmp(argv[a], "--host")) {
		host_mode = 1;
		a++;
	}
	n = argc - a - 2;
	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: %s [--host] DEVICE MODEL_PATH TENSOR_NAME... (1 to 64 names)\n", argv[0]);
		return 2;
	}
	if (boot_runtime(argv[a], host_mode, &sys))
		return 1;
	gpu = gpuos_sys_gpu_sm(sys) > 0;
	if (sizes_of(sys, argv[a + 1], n, argv + a + 2, size))
		goto out;
	for (i = 0; i < n; i++)
		total += (size[i] + ALIGN - 1) / ALIGN * ALIGN;
	total = total ? (total + 4095) / 4096 * 4096 : 4096;

	/* The program's own memory: cudaMalloc (safe beside the runtime), or
	 * page-aligned host memory in host mode; registered as a destination. */
	if (gpu ? cudaMalloc(&buf, total) != cudaSuccess : !(buf = aligned_alloc(4096, total))) {
		fprintf(stderr, "gpuos-load: no memory for %llu bytes\n", (unsigned long long)total);
		goto out;
	}
	if (gpuos_sys_register(sys, buf, total, gpu ? GPUOS_REGISTER_DEVICE : 0)) {
		fprintf(stderr, "gpuos-load: gpuos_sys_register of %llu bytes failed\n", (unsigned long long)total);
		goto out;
	}
	registered = 1;
	for (i = 0, at = 0; i < n; i++) {
		dst[i] = (char *)buf + at;
		at += (size[i] + ALIGN - 1) / ALIGN * ALIGN;
	}
	if (!(host = malloc(total)))
		goto out;
	/* On the GPU the load is ordered on the stream: the copy queued after it
	 * sees the data. A stream of our own, non-blocking: the legacy default
	 * stream would wait for the runtime's kernel, which never ends. */
	if (gpu && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
		goto out;
	if (gpuos_model_load_host(sys, argv[a + 1], (uint32_t)n, (const char *const *)(argv + a + 2), dst, stream)) {
		fprintf(stderr, "gpuos-load: %s\n", gpuos_sys_error(sys));
		goto out;
	}
	if (copy_back(sys, host, buf, total, stream, gpu))
		goto out;
	for (i = 0; i < n; i++)
		if (fwrite(host + ((char *)dst[i] - (char *)buf), 1, size[i], stdout) != size[i]) {
			perror("gpuos-load: stdout");
			goto out;
		}
	rc = 0;
out:
	if (registered)
		gpuos_sys_unregister(sys, buf);
	if (gpuos_shutdown(sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-load: shutdown: %s\n", err);
		rc = 1;
	}
	/* cudaFree only now: beside the spinning runtime it would deadlock */
	if (buf && gpu)
		cudaFree(buf);
	else
		free(buf);
	if (stream)
		cudaStreamDestroy(stream);
	free(host);
	return rc;
}
