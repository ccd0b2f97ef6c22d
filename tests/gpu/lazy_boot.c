/* SPDX-License-Identifier: MIT */
/*
 * tests/gpu/lazy_boot.c - a program that makes its first CUDA call before
 * gpuos_boot, as an engine that embeds gpuos may. Under lazy module loading
 * the boot must refuse, saying what to do (a launch behind the runtime
 * kernel would wait forever); with CUDA_MODULE_LOADING=EAGER in the
 * environment from the start it must boot on the GPU and read, also into
 * memory the program pinned itself (gpuos_sys_register); with fewer than
 * 32 hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) it must refuse too.
 *   lazy_boot IMAGE     exit 0: what the environment asked for happened
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

int main(int argc, char **argv)
{
	struct gpuos_boot_opts o;
	struct gpuos_sys *sys;
	char dev[600], err[512];
	const char *m = getenv("CUDA_MODULE_LOADING");
	const char *c = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	int eager = m && !strcmp(m, "EAGER"), r; /* the suite runs it with EAGER and with LAZY */
	int queues = c ? atoi(c) : 8;
	uint64_t rt, len, got = 0;
	if (argc != 2)
		return 2;
	if (cudaFree(0) != cudaSuccess) { /* the program's own first CUDA call */
		fprintf(stderr, "lazy_boot: no CUDA device\n");
		return 1;
	}
	gpuos_boot_opts_default(&o);
	snprintf(dev, sizeof(dev), "emu:%s", argv[1]);
	o.device = dev;
	o.require_gpu = 1;
	o.allow_raw = 1;
	o.quiet = 1;
	r = gpuos_boot(&o, &sys, err, sizeof(err));
	printf("CUDA_MODULE_LOADING=%s CUDA_DEVICE_MAX_CONNECTIONS=%s: boot %d: %s\n", m ? m : "(unset)",
	       c ? c : "(unset)", r, r ? err : "ok");
	if (queues < 32)
		return r == -EPERM && strstr(err, "CUDA_DEVICE_MAX_CONNECTIONS=32") ? 0 : 1;
	if (!eager)
		return r == -EPERM && strstr(err, "CUDA_MODULE_LOADING=EAGER") ? 0 : 1;
	if (r)
		return 1;
	gpuos_sys_heap(sys, &rt, &len);
	r = gpuos_read_raw(gpuos_sys_mbox(sys), 0, 4096, (void *)(uintptr_t)rt, &got) != GPUOS_ST_OK || got != 4096;
	/* The program's own pinned memory (cudaHostAlloc) registers as it is,
	 * and is read into; as "device memory" it is refused. */
	{
		unsigned char *pin = NULL, want[8192];
		FILE *f = fopen(argv[1], "rb");
		int bad = !f || fread(want, 1, sizeof(want), f) != sizeof(want) ||
			  cudaHostAlloc((void **)&pin, 1u << 20, cudaHostAllocMapped) != cudaSuccess;
		if (f)
			fclose(f);
		int rd = bad ? 0 : gpuos_sys_register(sys, pin, 1u << 20, GPUOS_REGISTER_DEVICE);
		int rh = bad ? 0 : gpuos_sys_register(sys, pin, 1u << 20, 0);
		uint32_t st = rh ? 0 : gpuos_read_raw(gpuos_sys_mbox(sys), 0, sizeof(want), pin + 64, &got);
		int same = !rh && st == GPUOS_ST_OK && !memcmp(pin + 64, want, sizeof(want));
		int ru = rh ? 0 : gpuos_sys_unregister(sys, pin);
		bad = bad || rd != -EINVAL || rh || !same || ru;
		printf("cudaHostAlloc memory: as device memory %d (want %d), registered %d, read %s, same %d, "
		       "unregistered %d: %s\n", rd, -EINVAL, rh, gpuos_status_name(st), same, ru, bad ? "FAILED" : "ok");
		r |= bad;
	}
	if (gpuos_shutdown(sys, err, sizeof(err)))
		r = 1;
	return r;
}
