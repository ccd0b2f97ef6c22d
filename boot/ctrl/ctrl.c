/* SPDX-License-Identifier: MIT */
/* Controller selection by device string, and DMA memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ctrl.h"

/* The kinds of controller, one row each (a kind is its file's ops table),
 * longest prefix first: "gpu-null" before "null". */
extern const struct gpuos_ctrl_ops gpuos_ctrl_emu_ops;     /* boot/ctrl/ctrl_emu.c */
extern const struct gpuos_ctrl_ops gpuos_ctrl_gpunull_ops; /* boot/ctrl/loopback.c */
extern const struct gpuos_ctrl_ops gpuos_ctrl_null_ops;    /* boot/ctrl/ctrl_emu.c */
/* A strong reference: a weak one pulls no member out of libgpuos.a, and the
 * binary with CUDA then had no pci: at all (issue 13). */
extern const struct gpuos_ctrl_ops gpuos_ctrl_pci_ops;     /* boot/pci/pci.c */
static const struct gpuos_ctrl_ops *const kinds[] = {
	&gpuos_ctrl_emu_ops,
	&gpuos_ctrl_gpunull_ops,
	&gpuos_ctrl_null_ops,
	&gpuos_ctrl_pci_ops,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

uint64_t gpuos_iova_base(void)
{
	uint64_t rnd = 0;
	struct timespec t;
	/* GRND_INSECURE (Linux 5.6): random bytes even before the pool is
	 * ready. An older kernel refuses the flag: then what the pool has,
	 * without waiting. Nothing here needs more than bases that differ. */
	if (getrandom(&rnd, sizeof(rnd), GRND_INSECURE) == (ssize_t)sizeof(rnd) ||
	    getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) == (ssize_t)sizeof(rnd))
		return gpuos_iova_base_of(rnd);
	/* No getrandom at all (seccomp, a kernel before 3.17): the time, the
	 * process and where ASLR put this frame, mixed (splitmix64's finaliser). */
	clock_gettime(CLOCK_MONOTONIC, &t);
	rnd = (uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&t;
	rnd = (rnd ^ rnd >> 30) * 0xbf58476d1ce4e5b9ull;
	rnd = (rnd ^ rnd >> 27) * 0x94d049bb133111ebull;
	return gpuos_iova_base_of(rnd ^ rnd >> 31);
}

/* The kind of controller dev names (its ops, *args the rest of the string),
 * with the checks of a device list; NULL with the reason in err. */
static const struct gpuos_ctrl_ops *device_kind(const char *dev, const char **args, char *err, size_t errlen)
{
	const struct gpuos_ctrl_ops *const *table = kinds;
	const struct gpuos_ctrl_ops *ops = NULL;
	size_t i, n = NKINDS;

	if (!dev || !*dev) {
		snprintf(err, errlen, "no device given (--device emu:IMAGE, null, or pci:DDDD:BB:DD.F)");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		size_t pl = strlen(table[i]->prefix);
		if (strncmp(dev, table[i]->prefix, pl) == 0) {
			ops = table[i];
			dev += pl;
			break;
		}
	}
	if (!ops) {
		snprintf(err, errlen, "device '%s': unknown kind (expected emu:IMAGE[,k=v...], null[:SIZE], gpu-null or pci:DDDD:BB:DD.F)", dev);
		return NULL;
	}
	/* A device list ("pci:A+B") is one kind of controller: an array
	 * stripes over like members, and one ops table drives them all. */
	for (const char *p = strchr(dev, '+'); p; p = strchr(p + 1, '+')) {
		for (i = 0; i < n; i++) {
			size_t pl = strlen(table[i]->prefix);
			char after = p[1 + pl];
			if (strncmp(p + 1, table[i]->prefix, pl) != 0 || (table[i] == ops && ops->lists))
				continue;
			/* "null" and "gpu-null" are whole words ("+nullfs.img" is a name) */
			if (table[i]->prefix[pl - 1] != ':' && after && after != ':' && after != '+' && after != ',')
				continue;
			if (table[i] == ops) {
				snprintf(err, errlen,
					 "device list '%s%s': %s controllers make no lists (an emulated array is "
					 "emu:IMAGE,ssds=N[,stripe=KiB]; real ones are pci:A+B+...)",
					 ops->prefix, dev, ops->prefix);
				return NULL;
			}
			snprintf(err, errlen,
				 "device list '%s%s' mixes %s and %s controllers: an array is made of one kind "
				 "(pci:A+B+..., or emu:IMAGE,ssds=N)",
				 ops->prefix, dev, ops->prefix, table[i]->prefix);
			return NULL;
		}
	}
	*args = dev;
	return ops;
}

int gpuos_device_check(const char *dev, char *err, size_t errlen)
{
	const char *args = NULL;
	const struct gpuos_ctrl_ops *ops = device_kind(dev, &args, err, errlen);
	if (!ops)
		return -EINVAL;
	return ops->parse ? ops->parse(args, err, errlen) : 0;
}

int gpuos_device_on_gpu(const char *dev)
{
	size_t i;
	for (i = 0; dev && i < NKINDS; i++)
		if (strncmp(dev, kinds[i]->prefix, strlen(kinds[i]->prefix)) == 0)
			return kinds[i]->on_gpu;
	return 0;
}

int gpuos_ctrl_open(const char *dev, struct gpuos_gpu *gpu, int force, int sim_vram, struct gpuos_ctrl **out,
		    char *err, size_t errlen)
{
	const struct gpuos_ctrl_ops *ops;
	struct gpuos_ctrl *c;
	int r;

	*out = NULL;
	if (!(ops = device_kind(dev, &dev, err, errlen)))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ops = ops;
	c->gpu = gpu;
	c->force = force;
	c->sim_vram = sim_vram && !gpu;
	c->next_iova = gpuos_iova_base(); /* boot/ctrl/ctrl.h says why random */
	pthread_mutex_init(&c->iova_lock, NULL);
	c->nmembers = 1;
	snprintf(c->member[0].name, sizeof(c->member[0].name), "%s%s", ops->prefix, dev);
	r = ops->open(c, dev, err, errlen);
	if (r) {
		pthread_mutex_destroy(&c->iova_lock);
		free(c);
		return r;
	}
	if (c->nmembers == 0 || c->nmembers > GPUOS_CTRL_MAX_MEMBERS) { /* an ops table's bug */
		snprintf(err, errlen, "device '%s%s': %u controllers", ops->prefix, dev, c->nmembers);
		ops->close(c);
		free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

void gpuos_ctrl_close(struct gpuos_ctrl *c)
{
	if (!c)
		return;
	c->ops->close(c);
	pthread_mutex_destroy(&c->iova_lock);
	free(c);
}

int gpuos_dma_alloc_on(struct gpuos_ctrl *c, struct gpuos_gpu *gpu, size_t len, enum gpuos_mem_kind kind, int map,
		       struct gpuos_dma *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	len = GPUOS_ALIGN_UP(len, (size_t)4096);
	out->len = len;
	out->gpu = gpu;
	if (gpu && kind == GPUOS_MEM_VRAM) {
		r = gpuos_gpu_dev_alloc(gpu, len, &out->rt);
		if (r)
			return r;
		r = gpuos_gpu_memset(gpu, out->rt, 0, len);
		if (r) {
			gpuos_gpu_dev_free(gpu, out->rt);
			return r;
		}
		out->vram = 1;
	} else if (map && c->ops->alloc) {
		r = c->ops->alloc(c, len, &out->host, &out->iova);
		if (r)
			return r;
		out->rt = (uint64_t)(uintptr_t)out->host;
		if (gpu && (r = gpuos_gpu_host_register(gpu, out->host, len, &out->rt))) {
			c->ops->free(c, out->host, out->iova, len);
			memset(out, 0, sizeof(*out));
			return r;
		}
		out->ctrl_mem = 1;
		return 0;
	} else if (gpu) {
		r = gpuos_gpu_host_alloc(gpu, len, &out->host, &out->rt);
		if (r)
			return r;
	} else {
		/* Fresh anonymous pages are zero and cost nothing until touched:
		 * host mode boots a runtime per command, and most of the files
		 * region is never touched by a short one. */
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -ENOMEM;
		out->host = p;
		out->rt = (uint64_t)(uintptr_t)out->host;
	}
	if (map) {
		r = c->ops->map(c, out->vram ? (void *)(uintptr_t)out->rt : out->host, len,
				out->vram || (c->sim_vram && kind == GPUOS_MEM_VRAM), &out->iova);
		if (r) {
			gpuos_dma_free(c, out);
			return r;
		}
	}
	return 0;
}

int gpuos_dma_alloc(struct gpuos_ctrl *c, size_t len, enum gpuos_mem_kind kind, int map, struct gpuos_dma *out)
{
	return gpuos_dma_alloc_on(c, c->gpu, len, kind, map, out);
}

void gpuos_dma_free(struct gpuos_ctrl *c, struct gpuos_dma *d)
{
	if (d->ctrl_mem) {
		if (d->gpu)
			gpuos_gpu_host_unregister(d->gpu, d->host);
		c->ops->free(c, d->host, d->iova, d->len);
		memset(d, 0, sizeof(*d));
		return;
	}
	if (d->iova)
		c->ops->unmap(c, d->iova, d->len);
	if (d->vram)
		gpuos_gpu_dev_free(d->gpu, d->rt);
	else if (d->gpu)
		gpuos_gpu_host_free(d->gpu, d->host);
	else
		munmap(d->host, d->len);
	memset(d, 0, sizeof(*d));
}
