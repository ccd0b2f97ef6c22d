/* SPDX-License-Identifier: MIT */
/*
 * Apps and GPU clients (include/gpuos/host.h): kernels that post to the
 * runtime's mailbox from the GPU, launched on a stream of their own beside
 * the persistent kernel. An app image is a module of its own, loaded and
 * unloaded with the runtime parked (loading a module while it spins
 * deadlocks, docs/platform.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys_internal.h"

/* ---- GPU clients: their memory, launches of the runtime image -------------------- */

int gpuos_sys_dev_alloc(struct gpuos_sys *s, size_t len, uint64_t *rt)
{
	if (!s->gpu) {
		void *p = aligned_alloc(4096, GPUOS_ALIGN_UP(len, (size_t)4096));
		if (!p)
			return -ENOMEM;
		memset(p, 0, len);
		*rt = (uint64_t)(uintptr_t)p;
		return 0;
	}
	/* cudaMalloc is safe while the runtime spins; cudaFree is not (docs/platform.md). */
	int r = gpuos_gpu_dev_alloc(s->gpu, len, rt);
	if (!r)
		r = gpuos_gpu_memset(s->gpu, *rt, 0, len);
	return r;
}

void gpuos_sys_dev_free(struct gpuos_sys *s, uint64_t rt)
{
	if (!s->gpu)
		free((void *)(uintptr_t)rt);
	else if (!s->running && !s->group) /* a group's others may spin on this GPU */
		gpuos_gpu_dev_free(s->gpu, rt);
	else {
		/* Freeing now would deadlock against the spinning runtime: park around it
		 * (after the stream-ordered loads, which wait for the runtime on their streams). */
		char e[128];
		gpuos_sys_load_drain(s);
		gpuos_park(s, e, sizeof(e));
		gpuos_gpu_dev_free(s->gpu, rt);
		gpuos_resume(s, e, sizeof(e));
	}
}

int gpuos_sys_copy(struct gpuos_sys *s, void *dst, const void *src, size_t len, int to_device)
{
	if (!s->gpu) {
		memcpy(dst, src, len);
		return 0;
	}
	return gpuos_gpu_copy(s->gpu, dst, src, len, to_device);
}

int gpuos_sys_launch_client(struct gpuos_sys *s, const char *entry, uint64_t arg, unsigned grid,
			    unsigned block, char *err, size_t errlen)
{
	if (!s->gpu) {
		snprintf(err, errlen, "GPU clients need the GPU runtime (this one runs in host mode)");
		return -ENODEV;
	}
	return gpuos_gpu_launch(s->gpu, GPUOS_STREAM_CLIENT, gpuos_rt_image, entry, arg, grid, block, err, errlen);
}

int gpuos_sys_wait_client(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (!s->gpu)
		return 0;
	return gpuos_gpu_wait(s->gpu, GPUOS_STREAM_CLIENT, err, errlen);
}

/* ---- app images (gpuos run) ------------------------------------------------------ */

struct gpuos_app {
	struct gpuos_gpu_module *m;
};

int gpuos_sys_gpu_sm(const struct gpuos_sys *s)
{
	return s->gpu ? gpuos_gpu_sm(s->gpu) : 0; /* a client's: its own GPU, opened only where the service's is one */
}

int gpuos_sys_mbox_device(const struct gpuos_sys *s)
{
	return s->mbox_dev.len != 0;
}

int gpuos_sys_app_load(struct gpuos_sys *s, const void *image, const char *entry, struct gpuos_app **out,
		       unsigned *max_threads, char *err, size_t errlen)
{
	struct gpuos_app *a;
	size_t local = 0;
	char e2[256];
	int r, r2;

	*out = NULL;
	if (!s->gpu) {
		snprintf(err, errlen, "app images need the GPU runtime (this one runs in host mode)");
		return -ENODEV;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	/* Loading a module while the runtime spins deadlocks (docs/platform.md). */
	r = gpuos_park(s, err, errlen);
	if (r) {
		free(a);
		return r;
	}
	r = gpuos_gpu_module_load(s->gpu, image, entry, &a->m, &local, max_threads, err, errlen);
	/* A launch needing more stack than the limit would make the driver
	 * raise it then, waiting for an idle device: raise it now, parked. */
	if (!r && local > GPUOS_GPU_STACK_BYTES)
		r = gpuos_gpu_stack_reserve(s->gpu, local, err, errlen);
	if (r && a->m) {
		gpuos_gpu_module_unload(s->gpu, a->m);
		a->m = NULL;
	}
	r2 = gpuos_resume(s, r ? e2 : err, r ? sizeof(e2) : errlen);
	if (r || r2) {
		if (a->m) {
			/* resume failed: the runtime is parked, unloading is safe */
			gpuos_gpu_module_unload(s->gpu, a->m);
		}
		free(a);
		return r ? r : r2;
	}
	*out = a;
	return 0;
}

int gpuos_sys_app_launch(struct gpuos_sys *s, struct gpuos_app *a, uint64_t arg, unsigned grid, unsigned block,
			 char *err, size_t errlen)
{
	return gpuos_gpu_module_launch(s->gpu, a->m, GPUOS_STREAM_CLIENT, arg, grid, block, err, errlen);
}

int gpuos_sys_app_wait(struct gpuos_sys *s, struct gpuos_app *a, char *err, size_t errlen)
{
	(void)a;
	return gpuos_gpu_wait(s->gpu, GPUOS_STREAM_CLIENT, err, errlen);
}

int gpuos_sys_app_running(struct gpuos_sys *s, struct gpuos_app *a)
{
	(void)a;
	return gpuos_gpu_running(s->gpu, GPUOS_STREAM_CLIENT);
}

int gpuos_sys_app_unload(struct gpuos_sys *s, struct gpuos_app *a, char *err, size_t errlen)
{
	int r;
	if (!a)
		return 0;
	/* Unloading synchronises with the device: parked, like the load. */
	r = gpuos_park(s, err, errlen);
	gpuos_gpu_module_unload(s->gpu, a->m);
	free(a);
	if (r)
		return r;
	return gpuos_resume(s, err, errlen);
}
