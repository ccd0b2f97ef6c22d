/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_register.c - the caller's own memory as a destination
 * (gpuos_sys_register, host.h): park the runtime, pin and map the memory
 * where it can be, add a region to the descriptor, resume. The descriptor
 * goes to the runtime when it starts (by value on the GPU, by pointer to
 * host threads), so a parked runtime takes the new regions with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

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
		g->client = u->client;
		if (u->mapped) {
			g->iova = u->iova;
			g->flags |= GPUOS_RT_REGION_DMA;
		}
	}
}

/* Unmap and unpin a region; memory gpuos_sys_alloc made is freed too, and
 * a client's memfd mapping or IPC handle closed (the caller has parked or
 * stopped the runtime: cudaFree or cudaIpcCloseMemHandle beside it
 * deadlocks). */
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
	if (u->map)
		munmap(u->map, u->len);
	if (u->ipc)
		gpuos_gpu_ipc_close(s->gpu, u->ipc);
	memset(u, 0, sizeof(*u));
}

/* What add or del works on: the region (ptr, len, flags and, for a
 * client's memory, its owner and mapping), or, for a client's VRAM, the
 * IPC handle that add opens under the park. */
struct reg_req {
	struct sys_user_region u;
	const unsigned char *ipc_handle; /* GPUOS_GPU_IPC_HANDLE bytes, or NULL */
	uint64_t ipc_off;
	uint64_t *rt;                    /* the region's runtime address, out */
	int taken;                       /* add ran: the mapping is its to release, even on failure */
};

static int add(struct gpuos_sys *s, struct reg_req *q);
static int del(struct gpuos_sys *s, struct reg_req *q);
static int overlaps(const struct gpuos_sys *s, uint64_t a, uint64_t len);

/* Park around f; resume after whatever f did. When the runtime does not
 * resume, an added region is taken out again: -EIO means "not registered"
 * for register and "no longer registered" for unregister. */
static int parked(struct gpuos_sys *s, int (*f)(struct gpuos_sys *, struct reg_req *), struct reg_req *q)
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
	r = f(s, q);
	if (was && gpuos_resume(s, e, sizeof(e))) {
		if (!r && f == add)
			del(s, q);
		return -EIO;
	}
	return r;
}

/* Opens a client's IPC handle (parked: the open may wait for the device)
 * and checks that the range it asked for lies in what it exported. */
static int open_ipc(struct gpuos_sys *s, struct reg_req *q)
{
	uint64_t base = 0, n = 0;
	int r = gpuos_gpu_ipc_open(s->gpu, q->ipc_handle, &base, &n);
	if (r)
		return r;
	if (q->ipc_off > n || q->u.len > n - q->ipc_off) {
		gpuos_gpu_ipc_close(s->gpu, base);
		return -ERANGE;
	}
	q->u.ipc = base;
	q->u.ptr = (void *)(uintptr_t)(base + q->ipc_off);
	return 0;
}

static int add(struct gpuos_sys *s, struct reg_req *q)
{
	struct sys_user_region *u = &s->user[s->nuser];
	uint32_t first = s->desc->nregions - s->nuser;
	uint64_t rt = 0;
	int r;
	q->taken = 1;
	if (first + s->nuser >= GPUOS_RT_MAX_REGIONS) {
		if (q->u.map)
			munmap(q->u.map, q->u.len);
		return -ENOSPC;
	}
	if (q->ipc_handle && (r = open_ipc(s, q)))
		return r;
	/* A client's range is new to the runtime (its IPC allocation may be
	 * one another client lent already: the first would own it) */
	if (q->u.client && overlaps(s, (uint64_t)(uintptr_t)q->u.ptr, q->u.len)) {
		if (q->u.ipc)
			gpuos_gpu_ipc_close(s->gpu, q->u.ipc);
		if (q->u.map)
			munmap(q->u.map, q->u.len);
		return -EEXIST;
	}
	*u = q->u;
	u->pinned = u->mapped = 0;
	if (!(u->flags & GPUOS_REGISTER_DEVICE) && s->gpu) {
		/* Host memory the GPU's copies and the runtime's lanes reach; with
		 * unified addressing its device address is the pointer itself. */
		if (gpuos_gpu_host_adopt(s->gpu, u->ptr, u->len, &rt, &u->pinned)) {
			release(s, u);
			return -EIO;
		}
		if (rt != (uint64_t)(uintptr_t)u->ptr) {
			release(s, u);
			return -EOPNOTSUPP;
		}
	}
	/* Zero copy where the controller reaches it; VRAM through the
	 * controller's P2P mapping (the emulator's DMA engine), if it has one. */
	if (!s->opts.no_zero_copy && s->ctrl->ops->map && (!(u->flags & GPUOS_REGISTER_DEVICE) || s->gpu) &&
	    s->ctrl->ops->map(s->ctrl, u->ptr, u->len, (u->flags & GPUOS_REGISTER_DEVICE) != 0, &u->iova) == 0)
		u->mapped = 1;
	s->nuser++;
	user_regions(s, first);
	if (q->rt)
		*q->rt = (uint64_t)(uintptr_t)u->ptr;
	q->u = *u; /* del finds it again (a resume that fails) */
	return 0;
}

static int del(struct gpuos_sys *s, struct reg_req *q)
{
	uint32_t first = s->desc->nregions - s->nuser, k;
	for (k = 0; k < s->nuser && !(s->user[k].ptr == q->u.ptr && s->user[k].client == q->u.client); k++)
		;
	if (k == s->nuser)
		return -ENOENT;
	release(s, &s->user[k]);
	memmove(&s->user[k], &s->user[k + 1], (s->nuser - k - 1) * sizeof(s->user[0]));
	s->nuser--;
	user_regions(s, first);
	return 0;
}

/* Nothing already registered, boot's regions included, may overlap
 * [a, a + len). */
static int overlaps(const struct gpuos_sys *s, uint64_t a, uint64_t len)
{
	uint32_t k;
	for (k = 0; k < s->desc->nregions; k++) {
		const struct gpuos_rt_region *g = &s->desc->region[k];
		if (a < g->base + g->len && g->base < a + len)
			return 1;
	}
	return 0;
}

int gpuos_sys_register(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr, page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct reg_req q;
	if (s->client)
		return gpuos_conn_register(s, ptr, len, flags, -1, 0);
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
	if (overlaps(s, a, len))
		return -EINVAL;
	if (s->nuser == GPUOS_SYS_USER_REGIONS)
		return -ENOSPC;
	memset(&q, 0, sizeof(q));
	q.u.ptr = ptr;
	q.u.len = len;
	q.u.flags = flags;
	return parked(s, add, &q);
}

int gpuos_sys_client_register(struct gpuos_sys *s, uint32_t k, const struct gpuos_client_mem *m, uint64_t *rt)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct reg_req q;
	uint32_t i, mine = 0;
	void *p;
	int r;
	*rt = 0;
	if (k >= s->plan.nclients || m->len == 0 || m->len % page || (m->vram && m->fd >= 0) || (!m->vram && m->fd < 0))
		return -EINVAL;
	for (i = 0; i < s->nuser; i++)
		mine += s->user[i].client == k + 1u;
	if (mine >= GPUOS_SYS_CLIENT_REGIONS)
		return -ENOSPC;
	if (s->nuser == GPUOS_SYS_USER_REGIONS)
		return -EBUSY; /* other clients' and the program's: later */
	memset(&q, 0, sizeof(q));
	q.u.len = m->len;
	q.u.client = k + 1u;
	if (m->vram) {
		if (!s->gpu)
			return -EOPNOTSUPP;
		q.u.flags = GPUOS_REGISTER_DEVICE;
		q.ipc_handle = m->ipc;
		q.ipc_off = m->offset;
		q.rt = rt;
		return parked(s, add, &q);
	}
	/* Host memory: the client's memfd, sealed against shrinking (a file
	 * cut short under the mapping would fault the service on its next
	 * write: SIGBUS), mapped here whole. On a GPU it is pinned: a client
	 * pins at most a quarter of the machine's memory at once. */
	{
		uint64_t held = m->len, phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * page;
		for (i = 0; i < s->nuser; i++)
			held += s->user[i].client == k + 1u && !(s->user[i].flags & GPUOS_REGISTER_DEVICE) ? s->user[i].len : 0;
		if (s->gpu && held > phys / 4)
			return -E2BIG;
	}
	r = fcntl(m->fd, F_GET_SEALS);
	if (r < 0 || !(r & F_SEAL_SHRINK))
		return -EPERM;
	{
		/* shmem only: a hugetlbfs memfd seals too, and a hole punched in
		 * it faults the service's next write when the pool runs dry */
		struct statfs sf;
		if (fstatfs(m->fd, &sf) || sf.f_type != TMPFS_MAGIC)
			return -EPERM;
	}
	{
		struct stat st;
		if (fstat(m->fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < m->offset ||
		    m->len > (uint64_t)st.st_size - m->offset || m->offset % page)
			return -ERANGE;
	}
	p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, (off_t)m->offset);
	if (p == MAP_FAILED)
		return -errno;
	q.u.ptr = p;
	q.u.map = p;
	q.rt = rt;
	r = parked(s, add, &q);
	if (r && !q.taken)
		munmap(p, m->len); /* the park failed before add could take it */
	return r;
}

int gpuos_sys_client_unregister(struct gpuos_sys *s, uint32_t k, uint64_t rt)
{
	struct reg_req q;
	uint32_t i;
	for (i = 0; i < s->nuser && !(s->user[i].client == k + 1u && (uint64_t)(uintptr_t)s->user[i].ptr == rt); i++)
		;
	if (k >= s->plan.nclients || i == s->nuser)
		return -ENOENT;
	memset(&q, 0, sizeof(q));
	q.u.ptr = s->user[i].ptr;
	q.u.client = k + 1u;
	return parked(s, del, &q);
}

static int drop_all(struct gpuos_sys *s, struct reg_req *q)
{
	gpuos_sys_client_regions_drop(s, q->u.client - 1u);
	return 0;
}

int gpuos_sys_client_forget(struct gpuos_sys *s, uint32_t k)
{
	struct reg_req q;
	uint32_t i, n = 0;
	for (i = 0; i < s->nuser; i++)
		n += s->user[i].client == k + 1u;
	if (k >= s->plan.nclients || !n)
		return 0;
	memset(&q, 0, sizeof(q));
	q.u.client = k + 1u;
	return parked(s, drop_all, &q);
}

/* Every region of client k + 1 goes (the caller has parked: the renewal
 * of its area, boot/sys/sys_mem.c). */
void gpuos_sys_client_regions_drop(struct gpuos_sys *s, uint32_t k)
{
	struct reg_req q;
	uint32_t i = 0;
	while (i < s->nuser) {
		if (s->user[i].client != k + 1u) {
			i++;
			continue;
		}
		memset(&q, 0, sizeof(q));
		q.u.ptr = s->user[i].ptr;
		q.u.client = k + 1u;
		del(s, &q);
	}
}

static int unreg(struct gpuos_sys *s, void *ptr)
{
	struct reg_req q;
	memset(&q, 0, sizeof(q));
	q.u.ptr = ptr;
	return parked(s, del, &q);
}

int gpuos_sys_alloc(struct gpuos_sys *s, size_t len, uint32_t flags, void **ptr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t dev = 0;
	void *p;
	int r;
	*ptr = NULL;
	if (s->client)
		return gpuos_conn_alloc(s, len, flags, ptr);
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
	if (s->client)
		return gpuos_conn_free(s, ptr);
	for (k = 0; k < s->nuser && !(s->user[k].ptr == ptr && s->user[k].owned); k++)
		;
	if (k == s->nuser)
		return -EINVAL;
	return unreg(s, ptr);
}

int gpuos_sys_unregister(struct gpuos_sys *s, void *ptr)
{
	uint32_t k;
	if (s->client)
		return gpuos_conn_unregister(s, ptr);
	for (k = 0; k < s->nuser && s->user[k].ptr != ptr; k++)
		;
	if (k == s->nuser)
		return -ENOENT;
	if (s->user[k].owned)
		return -EINVAL; /* the system's own: gpuos_sys_free */
	return unreg(s, ptr);
}

int gpuos_sys_register_fd(struct gpuos_sys *s, void *ptr, int fd, uint64_t offset, size_t len)
{
	if (!s->client)
		return -EOPNOTSUPP; /* a runtime of this process reaches its memory as it is */
	if (fd < 0)
		return -EINVAL;
	return gpuos_conn_register(s, ptr, len, 0, fd, offset);
}

void gpuos_sys_user_free(struct gpuos_sys *s)
{
	uint32_t k;
	for (k = 0; k < s->nuser; k++)
		release(s, &s->user[k]);
	s->nuser = 0;
}
