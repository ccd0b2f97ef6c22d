/* SPDX-License-Identifier: MIT */
/* The host-mode-only build (make static): no CUDA anywhere. */
#include <errno.h>
#include <stdio.h>

#include "gpu.h"

int gpuos_gpu_open(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen)
{
	(void)dev;
	*out = NULL;
	snprintf(why, whylen, "this gpuos binary is built without CUDA (host mode only)");
	return -ENODEV;
}
int gpuos_gpu_open_client(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen)
{
	return gpuos_gpu_open(out, dev, why, whylen);
}
void gpuos_gpu_close(struct gpuos_gpu *g) { (void)g; }
int gpuos_gpu_peer(struct gpuos_gpu *g, struct gpuos_gpu *to, char *why, size_t whylen) { (void)g; (void)to; snprintf(why, whylen, "no CUDA"); return -EOPNOTSUPP; }
const char *gpuos_gpu_name(const struct gpuos_gpu *g) { (void)g; return "none"; }
int gpuos_gpu_sm(const struct gpuos_gpu *g) { (void)g; return 0; }
int gpuos_gpu_sm_count(const struct gpuos_gpu *g) { (void)g; return 0; }
int gpuos_gpu_host_alloc(struct gpuos_gpu *g, size_t len, void **host, uint64_t *dev) { (void)g; (void)len; (void)host; (void)dev; return -ENODEV; }
void gpuos_gpu_host_free(struct gpuos_gpu *g, void *host) { (void)g; (void)host; }
int gpuos_gpu_host_register(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev) { (void)g; (void)host; (void)len; (void)dev; return -ENODEV; }
void gpuos_gpu_host_unregister(struct gpuos_gpu *g, void *host) { (void)g; (void)host; }
int gpuos_gpu_host_adopt(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev, int *pinned) { (void)g; (void)host; (void)len; (void)dev; (void)pinned; return -ENODEV; }
int gpuos_gpu_is_device(struct gpuos_gpu *g, const void *ptr, size_t len) { (void)g; (void)ptr; (void)len; return 0; }
int gpuos_gpu_reachable(struct gpuos_gpu *g, const void *ptr, size_t len) { (void)g; (void)ptr; (void)len; return 0; }
int gpuos_gpu_io_register(struct gpuos_gpu *g, volatile void *mmio, size_t len, uint64_t *dev, char *why, size_t whylen)
{
	(void)g; (void)mmio; (void)len; (void)dev;
	snprintf(why, whylen, "no CUDA in this build");
	return -ENODEV;
}
void gpuos_gpu_io_unregister(struct gpuos_gpu *g, volatile void *mmio) { (void)g; (void)mmio; }
int gpuos_gpu_dev_alloc(struct gpuos_gpu *g, size_t len, uint64_t *dev) { (void)g; (void)len; (void)dev; return -ENODEV; }
void gpuos_gpu_dev_free(struct gpuos_gpu *g, uint64_t dev) { (void)g; (void)dev; }
int gpuos_gpu_ipc_open(struct gpuos_gpu *g, const unsigned char *handle, uint64_t *base, uint64_t *len) { (void)g; (void)handle; (void)base; (void)len; return -EOPNOTSUPP; }
void gpuos_gpu_ipc_close(struct gpuos_gpu *g, uint64_t base) { (void)g; (void)base; }
int gpuos_gpu_ipc_export(struct gpuos_gpu *g, const void *ptr, size_t len, unsigned char *handle, uint64_t *offset) { (void)g; (void)ptr; (void)len; (void)handle; (void)offset; return -EOPNOTSUPP; }
int gpuos_gpu_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len, int to_device) { (void)g; (void)dst; (void)src; (void)len; (void)to_device; return -ENODEV; }
void gpuos_gpu_thread_init(struct gpuos_gpu *g) { (void)g; }
int gpuos_gpu_memset(struct gpuos_gpu *g, uint64_t dev, int v, size_t len) { (void)g; (void)dev; (void)v; (void)len; return -ENODEV; }
int gpuos_gpu_host_func(struct gpuos_gpu *g, void *stream, void (*fn)(void *), void *arg)
{
	(void)g; (void)stream; (void)fn; (void)arg;
	return -ENODEV;
}
size_t gpuos_gpu_vmm_granularity(struct gpuos_gpu *g) { (void)g; return 0; }
int gpuos_gpu_vmm_reserve(struct gpuos_gpu *g, size_t len, uint64_t *va) { (void)g; (void)len; (void)va; return -ENODEV; }
void gpuos_gpu_vmm_unreserve(struct gpuos_gpu *g, uint64_t va, size_t len) { (void)g; (void)va; (void)len; }
int gpuos_gpu_vmm_map_new(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t *handle, int *fd) { (void)g; (void)va; (void)len; (void)handle; (void)fd; return -ENODEV; }
void gpuos_gpu_vmm_unmap(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t handle) { (void)g; (void)va; (void)len; (void)handle; }
int gpuos_gpu_vmm_import(int fd, size_t len, uint64_t *va, uint64_t *handle, void *head, size_t head_len,
			 char *why, size_t whylen)
{
	(void)fd; (void)len; (void)va; (void)handle; (void)head; (void)head_len;
	snprintf(why, whylen, "this gpuos binary is built without CUDA: it cannot map GPU memory");
	return -ENODEV;
}
void gpuos_gpu_vmm_unimport(uint64_t va, size_t len, uint64_t handle) { (void)va; (void)len; (void)handle; }
int gpuos_gpu_image_load(struct gpuos_gpu *g, const void *image, char *why, size_t whylen) { (void)g; (void)image; (void)why; (void)whylen; return -ENODEV; }
int gpuos_gpu_dma_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len) { (void)g; (void)dst; (void)src; (void)len; return -ENODEV; }
int gpuos_gpu_dma_gather(struct gpuos_gpu *g, void *dst, const void *src, size_t len) { (void)g; (void)dst; (void)src; (void)len; return -ENODEV; }
int gpuos_gpu_dma_zero(struct gpuos_gpu *g, void *dst, size_t len) { (void)g; (void)dst; (void)len; return -ENODEV; }
int gpuos_gpu_dma_mark(struct gpuos_gpu *g, uint64_t *ticket) { (void)g; (void)ticket; return -ENODEV; }
int gpuos_gpu_dma_poll(struct gpuos_gpu *g, uint64_t ticket) { (void)g; (void)ticket; return -ENODEV; }
int gpuos_gpu_launch(struct gpuos_gpu *g, int stream, const void *image, const char *entry, uint64_t arg,
		     unsigned grid, unsigned block, char *why, size_t whylen)
{
	(void)g; (void)stream; (void)image; (void)entry; (void)arg; (void)grid; (void)block;
	snprintf(why, whylen, "no CUDA in this build");
	return -ENODEV;
}
int gpuos_gpu_launch_value(struct gpuos_gpu *g, int stream, const void *image, const char *entry,
			   const void *value, unsigned grid, unsigned block, char *why, size_t whylen)
{
	(void)g; (void)stream; (void)image; (void)entry; (void)value; (void)grid; (void)block;
	snprintf(why, whylen, "no CUDA in this build");
	return -ENODEV;
}
int gpuos_gpu_wait(struct gpuos_gpu *g, int stream, char *why, size_t whylen) { (void)g; (void)stream; (void)why; (void)whylen; return -ENODEV; }
int gpuos_gpu_running(struct gpuos_gpu *g, int stream) { (void)g; (void)stream; return 0; }
int gpuos_gpu_module_load(struct gpuos_gpu *g, const void *image, const char *entry,
			  struct gpuos_gpu_module **out, size_t *local_bytes, unsigned *max_threads, char *why,
			  size_t whylen)
{
	(void)g; (void)image; (void)entry; (void)local_bytes; (void)max_threads;
	*out = NULL;
	snprintf(why, whylen, "no CUDA in this build");
	return -ENODEV;
}
void gpuos_gpu_module_unload(struct gpuos_gpu *g, struct gpuos_gpu_module *m) { (void)g; (void)m; }
int gpuos_gpu_stack_reserve(struct gpuos_gpu *g, size_t bytes, char *why, size_t whylen) { (void)g; (void)bytes; (void)why; (void)whylen; return -ENODEV; }
int gpuos_gpu_module_launch(struct gpuos_gpu *g, struct gpuos_gpu_module *m, int stream, uint64_t arg,
			    unsigned grid, unsigned block, char *why, size_t whylen)
{
	(void)g; (void)m; (void)stream; (void)arg; (void)grid; (void)block;
	snprintf(why, whylen, "no CUDA in this build");
	return -ENODEV;
}
int gpuos_gpu_mps(char *dir, size_t len)
{
	if (len)
		dir[0] = 0;
	return 0;
}
