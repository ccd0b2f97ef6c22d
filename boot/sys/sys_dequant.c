/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_dequant.c - gpuos_dequant (host.h): n elements of a GGUF tensor
 * type into F32, F16 or BF16, the values of gpuos/quant.h. On the GPU its
 * kernel (kernels/dequant.cuh, in the runtime image, so loaded before the
 * runtime spins) runs on the library's work stream, beside the runtime, and
 * the call waits for that stream alone: never the legacy stream, never the
 * device (docs/embedding.md). In host mode, and for host memory, the same
 * function runs on CPU threads, each over a range of the elements.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "gpuos/quant.h"
#include "sys_internal.h"

#define HOST_THREADS_MAX 16u
#define HOST_PER_THREAD  (1ull << 18) /* elements a thread must have to be started */
#define GPU_BLOCK        256u
#define GPU_BLOCKS_PER_SM 8u

struct host_part {
	uint32_t type, out;
	const void *src;
	void *dst;
	uint64_t first, end;
};

static void *host_run(void *arg)
{
	const struct host_part *p = (const struct host_part *)arg;
	gpuos_dequant_span(p->type, p->src, p->out, p->dst, p->first, 1, p->end);
	return NULL;
}

/* On CPU threads: the caller's and up to HOST_THREADS_MAX - 1 more, each
 * over its own range (a multiple of 4096 elements: no two write a cache
 * line). Where a thread cannot be started the caller does its part. */
static void on_cpu(uint32_t type, const void *src, void *dst, uint32_t out, uint64_t n)
{
	struct host_part part[HOST_THREADS_MAX];
	pthread_t th[HOST_THREADS_MAX];
	int started[HOST_THREADS_MAX] = {0};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t k = n / HOST_PER_THREAD, chunk;
	uint32_t i, nt;

	k = k < 1 ? 1 : k;
	k = cpus > 0 && (uint64_t)cpus < k ? (uint64_t)cpus : k;
	nt = k < HOST_THREADS_MAX ? (uint32_t)k : HOST_THREADS_MAX;
	chunk = GPUOS_ALIGN_UP(GPUOS_DIV_ROUND_UP(n, nt), 4096ull);
	for (i = 0; i < nt; i++) {
		part[i].type = type;
		part[i].out = out;
		part[i].src = src;
		part[i].dst = dst;
		part[i].first = GPUOS_MIN(n, i * chunk);
		part[i].end = GPUOS_MIN(n, (i + 1) * chunk);
		if (i > 0)
			started[i] = pthread_create(&th[i], NULL, host_run, &part[i]) == 0;
	}
	for (i = 0; i < nt; i++)
		if (!started[i])
			host_run(&part[i]);
	for (i = 1; i < nt; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

static int on_gpu(struct gpuos_sys *s, uint32_t type, const void *src, void *dst, uint32_t out, uint64_t n)
{
	struct gpuos_dequant_job job;
	int sms = gpuos_gpu_sm_count(s->gpu);
	uint64_t blocks = GPUOS_DIV_ROUND_UP(n, (uint64_t)GPU_BLOCK);
	uint64_t most = (uint64_t)(sms > 0 ? sms : 1) * GPU_BLOCKS_PER_SM;
	char why[256];
	int r;

	job.src = (uint64_t)(uintptr_t)src;
	job.dst = (uint64_t)(uintptr_t)dst;
	job.n = n;
	job.type = type;
	job.out_type = out;
	/* the threads stride over the elements: enough blocks to fill the GPU
	 * beside the runtime's warps, no more */
	r = gpuos_gpu_launch_value(s->gpu, GPUOS_STREAM_WORK, gpuos_rt_image, "gpuos_dequant_kernel", &job,
				   (unsigned)GPUOS_MIN(blocks, most), GPU_BLOCK, why, sizeof(why));
	if (!r)
		r = gpuos_gpu_wait(s->gpu, GPUOS_STREAM_WORK, why, sizeof(why));
	return r ? gpuos_sys_fail(-EIO, "dequantise on the GPU: %s", why) : 0;
}

int gpuos_dequant(struct gpuos_sys *s, uint32_t type, const void *src, uint64_t src_bytes, void *dst,
		  uint32_t out_type, uint64_t n)
{
	const char *name = gpuos_ggml_type_name(type), *oname = gpuos_ggml_type_name(out_type);
	uint32_t bytes, e = gpuos_quant_block(type, &bytes), ob = gpuos_dequant_out_bytes(out_type);
	uint32_t salign = type == GPUOS_GGML_TYPE_F32 ? 4u : 2u; /* a float, or the blocks' binary16 fields */
	uint64_t need;
	int src_gpu, dst_gpu;

	gpuos_sys_fail(0, "%s", "");
	if (!name)
		return gpuos_sys_fail(-EINVAL, "dequantise: %u is no ggml type", type);
	if (!e)
		return gpuos_sys_fail(-ENOTSUP, "dequantise: no dequantiser for %s (F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
				      "Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K have one)", name);
	if (!ob)
		return gpuos_sys_fail(-EINVAL, "dequantise: the output type must be F32, F16 or BF16, not %s%s",
				      oname ? oname : "an unknown type", oname ? "" : " id");
	if (n % e)
		return gpuos_sys_fail(-EINVAL, "dequantise: %llu elements are not whole %s blocks of %u",
				      (unsigned long long)n, name, e);
	if (n / e > UINT64_MAX / bytes || n > UINT64_MAX / ob)
		return gpuos_sys_fail(-EINVAL, "dequantise: %llu elements overflow 64 bits of bytes", (unsigned long long)n);
	need = n / e * bytes;
	if (src_bytes < need)
		return gpuos_sys_fail(-EINVAL, "dequantise: %llu elements of %s take %llu bytes; src has %llu",
				      (unsigned long long)n, name, (unsigned long long)need, (unsigned long long)src_bytes);
	if (!n)
		return 0;
	if (!src || !dst)
		return gpuos_sys_fail(-EINVAL, "dequantise: a NULL %s", src ? "dst" : "src");
	if ((uintptr_t)src % salign)
		return gpuos_sys_fail(-EINVAL, "dequantise: src is not aligned to %u bytes", salign);
	if ((uintptr_t)dst % ob)
		return gpuos_sys_fail(-EINVAL, "dequantise: dst is not aligned to %u bytes", ob);
	if (!s || !s->gpu) {
		on_cpu(type, src, dst, out_type, n);
		return 0;
	}
	src_gpu = gpuos_gpu_reachable(s->gpu, src, (size_t)need);
	dst_gpu = gpuos_gpu_reachable(s->gpu, dst, (size_t)(n * ob));
	if (!src_gpu && !dst_gpu) { /* both in host memory: the CPU reaches them */
		on_cpu(type, src, dst, out_type, n);
		return 0;
	}
	if (!src_gpu || !dst_gpu)
		return gpuos_sys_fail(-EFAULT, "dequantise: %s is memory the GPU cannot reach (pageable host memory?) "
				      "while %s is the GPU's", src_gpu ? "dst" : "src", src_gpu ? "src" : "dst");
	return on_gpu(s, type, src, dst, out_type, n);
}
