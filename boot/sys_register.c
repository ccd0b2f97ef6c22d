/* SPDX-License-Identifier: MIT */
/*
 * boot/sys_register.c - the caller's own memory as a destination
 * (gpuos_sys_register, host.h): park the runtime, pin and map the memory
 * where it can be, add a region to the descriptor, resume. The descriptor
 * goes to the runtime when it starts (by value on the GPU, by pointer to
 * host threads), so a parked runtime takes the new regions with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys_internal.h"

/* The regions after boot's own (desc_regions) are the user's, in s->user
 * order: rewrite them from s->user. */
static void user_regions(struct gpuos_sys *s, uint32_t first)
{
	struct gpuos_rt_desc *d = s->desc;
	uint32_t k;
	d->nregions = first;
	for (k = 0; k < s->nuser; k++) {
		struct gpuos_rt_region *g = &d->region[d->nregions++];
		const struct sys_user_region *u = &s->user[k];
		memset(g, 0, sizeof(*g));
		g->base = (uint64_t)(uintptr_t)u->ptr;
		g->len = u->len;
		g->flags = (u->flags & GPUOS_REGISTER_DEVICE) && s->gpu ? GPUOS_RT_REGION_VRAM : 0;
		if (u->mapped) {
			g->iova = u->iova;
			g->flags |= GPUOS_RT_REGION_DMA;
		}
	}
}

/* Unmap and unpin a region; memory gpuos_sys_alloc made is freed too (the
 * caller has parked or stopped the runtime: cudaFree beside it deadlocks). */
static void release(struct gpuos_sys *s, struct sys_user_region *u)
{
	if (u->mapped)
		s->ctrl->ops->unmap(s->ctrl, u->iova, u->len);
	if (u->pinned)
		gpuos_gpu_host_unregister(s->gpu, u->ptr);
	if (u->owned && (u->flags & GPUOS_REGISTER_DEVICE))
		gpuos_gpu_dev_free(s->gpu, (uint64_t)(uintptr_t)u->ptr);
	else if (u->owned)
		free(u->ptr);
	memset(u, 0, sizeof(*u));
}

static int add(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags);
static int del(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags);

/* Park around f; resume after whatever f did. When the runtime does not
 * resume, an added region is taken out again: -EIO means "not registered"
 * for register and "no longer registered" for unregister. */
static int parked(struct gpuos_sys *s, int (*f)(struct gpuos_sys *, void *, size_t, uint32_t), void *ptr,
		  size_t len, uint32_t flags)
{
	char e[256];
	/* in a group another runtime's park may have stopped this one: park
	 * through the group's counts all the same */
	int was = s->running || s->group, r;
	/* A stream-ordered load waits for the runtime on its stream; a
	 * cudaFree or cudaHostUnregister while it is parked would wait for
	 * that stream: let those loads end first. */
	gpuos_sys_load_drain(s);
	if (was && gpuos_park(s, e, sizeof(e)))
		return -EIO;
	r = f(s, ptr, len, flags);
	if (was && gpuos_resume(s, e, sizeof(e))) {
		if (!r && f == add)
			del(s, ptr, len, flags);
		return -EIO;
	}
	return r;
}

static int add(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags)
{
	struct sys_user_region *u = &s->user[s->nuser];
	uint32_t first = s->desc->nregions - s->nuser;
	uint64_t rt = 0;
	if (first + s->nuser >= GPUOS_RT_MAX_REGIONS)
		return -ENOSPC;
	memset(u, 0, sizeof(*u));
	u->ptr = ptr;
	u->len = len;
	u->flags = flags;
	if (!(flags & GPUOS_REGISTER_DEVICE) && s->gpu) {
		/* Host memory the GPU's copies and the runtime's lanes reach; with
		 * unified addressing its device address is the pointer itself. */
		if (gpuos_gpu_host_adopt(s->gpu, ptr, len, &rt, &u->pinned))
			return -EIO;
		if (rt != (uint64_t)(uintptr_t)ptr) {
			release(s, u);
			return -EOPNOTSUPP;
		}
	}
	/* Zero copy where the controller reaches it; VRAM through the
	 * controller's P2P mapping (the emulator's DMA engine), if it has one. */
	if (!s->opts.no_zero_copy && s->ctrl->ops->map && (!(flags & GPUOS_REGISTER_DEVICE) || s->gpu) &&
	    s->ctrl->ops->map(s->ctrl, ptr, len, (flags & GPUOS_REGISTER_DEVICE) != 0, &u->iova) == 0)
		u->mapped = 1;
	s->nuser++;
	user_regions(s, first);
	return 0;
}

static int del(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags)
{
	uint32_t first = s->desc->nregions - s->nuser, k;
	(void)len;
	(void)flags;
	for (k = 0; k < s->nuser && s->user[k].ptr != ptr; k++)
		;
	if (k == s->nuser)
		return -ENOENT;
	release(s, &s->user[k]);
	memmove(&s->user[k], &s->user[k + 1], (s->nuser - k - 1) * sizeof(s->user[0]));
	s->nuser--;
	user_regions(s, first);
	return 0;
}

int gpuos_sys_register(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr, page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint32_t k;
	if (!ptr || len == 0 || (flags & ~GPUOS_REGISTER_DEVICE) || a + len < a)
		return -EINVAL;
	if ((flags & GPUOS_REGISTER_DEVICE) && !s->gpu)
		return -EOPNOTSUPP;
	if ((flags & GPUOS_REGISTER_DEVICE) && !gpuos_gpu_is_device(s->gpu, ptr, len))
		return -EINVAL; /* not device memory of the runtime's GPU */
	/* nor the runtime's own shared segment (mailbox, control, heap) */
	if (a < (uint64_t)(uintptr_t)s->shm + s->shm_len && (uint64_t)(uintptr_t)s->shm < a + len)
		return -EINVAL;
	if (!(flags & GPUOS_REGISTER_DEVICE) && (a % page || len % page))
		return -EINVAL; /* what pinning and the controller's mapping take */
	/* Nothing already registered, boot's regions included, may overlap. */
	for (k = 0; k < s->desc->nregions; k++) {
		const struct gpuos_rt_region *g = &s->desc->region[k];
		if (a < g->base + g->len && g->base < a + len)
			return -EINVAL;
	}
	if (s->nuser == GPUOS_SYS_USER_REGIONS)
		return -ENOSPC;
	return parked(s, add, ptr, len, flags);
}

int gpuos_sys_alloc(struct gpuos_sys *s, size_t len, uint32_t flags, void **ptr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t dev = 0;
	void *p;
	int r;
	*ptr = NULL;
	if (len == 0 || (flags & ~GPUOS_REGISTER_DEVICE))
		return -EINVAL;
	if ((flags & GPUOS_REGISTER_DEVICE) && !s->gpu)
		return -EOPNOTSUPP;
	if (s->nuser == GPUOS_SYS_USER_REGIONS)
		return -ENOSPC;
	if (flags & GPUOS_REGISTER_DEVICE) {
		/* cudaMalloc and a memset on a stream of our own are safe beside
		 * the spinning runtime (docs/platform.md) */
		r = gpuos_gpu_dev_alloc(s->gpu, len, &dev);
		if (!r && (r = gpuos_gpu_memset(s->gpu, dev, 0, len)))
			gpuos_gpu_dev_free(s->gpu, dev); /* not registered yet: nothing reads it */
		if (r)
			return -ENOMEM;
		p = (void *)(uintptr_t)dev;
	} else {
		len = (len + page - 1) / page * page;
		p = aligned_alloc(page, len);
		if (!p)
			return -ENOMEM;
		memset(p, 0, len);
	}
	r = gpuos_sys_register(s, p, len, flags);
	if (r) {
		if (flags & GPUOS_REGISTER_DEVICE)
			gpuos_sys_dev_free(s, dev); /* parked if the runtime runs */
		else
			free(p);
		return r;
	}
	s->user[s->nuser - 1].owned = 1; /* register put it last */
	*ptr = p;
	return 0;
}

int gpuos_sys_free(struct gpuos_sys *s, void *ptr)
{
	uint32_t k;
	for (k = 0; k < s->nuser && !(s->user[k].ptr == ptr && s->user[k].owned); k++)
		;
	if (k == s->nuser)
		return -EINVAL;
	return parked(s, del, ptr, 0, 0);
}

int gpuos_sys_unregister(struct gpuos_sys *s, void *ptr)
{
	uint32_t k;
	for (k = 0; k < s->nuser && s->user[k].ptr != ptr; k++)
		;
	if (k == s->nuser)
		return -ENOENT;
	if (s->user[k].owned)
		return -EINVAL; /* the system's own: gpuos_sys_free */
	return parked(s, del, ptr, 0, 0);
}

void gpuos_sys_user_free(struct gpuos_sys *s)
{
	uint32_t k;
	for (k = 0; k < s->nuser; k++)
		release(s, &s->user[k]);
	s->nuser = 0;
}
