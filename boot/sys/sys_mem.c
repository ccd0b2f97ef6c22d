/* SPDX-License-Identifier: MIT */
/*
 * The memory of a system (boot/sys/sys_internal.h), sized by the plan
 * (boot/sys/sys_plan.h). By who touches it:
 * - queues (SQ/CQ) and PRP lists: pinned host memory the controller DMAs
 *   (Tier 1); bounce buffers: VRAM on the GPU (emulated P2P for emu:), host
 *   memory otherwise and for controllers that cannot DMA into VRAM (pci:);
 * - mailbox and client heap: one shared-memory segment (include/gpuos/host.h),
 *   so host clients in other processes can post (the service,
 *   boot/cli/cmd_boot.c), registered with the GPU;
 * - control block: pinned host memory; runtime state: VRAM (the descriptor
 *   goes by value, boot/sys/sys_run.c).
 * And where they are (host.h: gpuos_sys_mbox, gpuos_sys_heap, the shares
 * and the clients' areas), for the loads above and the service.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sys_internal.h"

int gpuos_sys_alloc_rt(struct gpuos_sys *s, size_t len, enum gpuos_mem_kind kind, struct gpuos_dma *out,
		       const char *what, char *err, size_t errlen)
{
	int r = gpuos_dma_alloc_on(s->ctrl, s->gpu, len, kind, 0, out);
	if (r)
		snprintf(err, errlen, "allocate %s: %s", what, strerror(-r));
	return r;
}

int gpuos_sys_alloc_qpair(struct gpuos_sys *s, uint32_t i)
{
	int r = gpuos_dma_alloc_on(s->ctrl, s->gpu, s->plan.sq_bytes, GPUOS_MEM_HOST, 1, &s->sq[i]);
	if (!r)
		r = gpuos_dma_alloc_on(s->ctrl, s->gpu, s->plan.cq_bytes, GPUOS_MEM_HOST, 1, &s->cq[i]);
	return r;
}

/* Where data lands first: in VRAM where the controller can DMA there (P2P,
 * or emulated); in host memory where it cannot (pci: through VFIO or uio). */
static enum gpuos_mem_kind bounce_kind(const struct gpuos_sys *s)
{
	return s->ctrl->dma_host_only ? GPUOS_MEM_HOST : GPUOS_MEM_VRAM;
}

/* The metadata warp's buffer and PRP list, like a command slot's; its PRP
 * list is written once, here, as it always points into its own buffer. */
static int alloc_meta_buffer(struct gpuos_sys *s, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	uint32_t pg;
	int r = gpuos_dma_alloc_on(s->ctrl, s->gpu, p->meta_bounce_bytes, bounce_kind(s), 1, &s->meta_bounce);
	if (!r)
		r = gpuos_dma_alloc_on(s->ctrl, s->gpu, p->meta_prp_bytes, GPUOS_MEM_HOST, 1, &s->meta_prp);
	if (r) {
		snprintf(err, errlen, "allocate the metadata buffer: %s", strerror(-r));
		return r;
	}
	for (pg = 1; pg < p->xfer_bytes / 4096u; pg++)
		((uint64_t *)s->meta_prp.host)[pg - 1u] = s->meta_bounce.iova + (uint64_t)pg * 4096u;
	return 0;
}

int gpuos_sys_alloc_buffers(struct gpuos_sys *s, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	/* One bounce buffer and one PRP list per command slot. The slots' PRP
	 * lists are written by the runtime with each command (into the bounce
	 * buffer, or straight into the destination). */
	int r = gpuos_dma_alloc_on(s->ctrl, s->gpu, p->bounce_bytes, bounce_kind(s), 1, &s->bounce);
	if (!r)
		r = gpuos_dma_alloc_on(s->ctrl, s->gpu, p->prp_bytes, GPUOS_MEM_HOST, 1, &s->prp);
	if (r) {
		snprintf(err, errlen, "allocate %llu bytes of bounce buffers: %s", (unsigned long long)p->bounce_bytes,
			 strerror(-r));
		return r;
	}
	return p->meta ? alloc_meta_buffer(s, err, errlen) : 0;
}

/* ---- the shared segment ---------------------------------------------------------- */

/* The segment is unnamed (memfd): nothing stays behind in /dev/shm when
 * the process dies, and none is needed (a minimal initramfs, a container's
 * 64 MB /dev/shm). A service hands its descriptor to each client over the
 * control socket (SCM_RIGHTS), so only processes it let in can map it. */
static int shm_open_anon(char *err, size_t errlen)
{
	int fd = memfd_create("gpuos", MFD_CLOEXEC);
	if (fd < 0) {
		int r = -errno;
		snprintf(err, errlen, "anonymous shared memory (memfd_create): %s", strerror(errno));
		return r;
	}
	return fd;
}

/* A mapping at a random place of the address space, of its own: a service
 * tells each client the runtime address of its area (the attach reply), and
 * that number must say nothing of where the service's code, libraries,
 * heap or stack lie (docs/security.md). 2 MiB aligned, between 16 TiB and
 * 126 TiB; where no random place is free, wherever the kernel puts it. */
static void *mmap_random(size_t len, int prot, int flags, int fd)
{
	const uint64_t lo = 1ull << 44, hi = 126ull << 40, align = 2ull << 20;
	int i;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	/* A sanitizer keeps its shadow memory in that range: the kernel's place. */
	i = 16;
#else
	i = 0;
#endif
	for (; i < 16 && len < hi - lo; i++) {
		uint64_t r, at;
		void *p;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			break;
		at = lo + (r % ((hi - lo - len) / align)) * align;
		p = mmap((void *)(uintptr_t)at, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);
		if (p == (void *)(uintptr_t)at)
			return p;
		if (p != MAP_FAILED)
			munmap(p, len); /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
	}
	return mmap(NULL, len, prot, flags, fd, 0);
}

/* Size the segment and map it; on failure nothing stays behind. */
static int shm_map(struct gpuos_sys *s, int fd, char *err, size_t errlen)
{
	int r;
	if (ftruncate(fd, (off_t)s->shm_len)) {
		r = -errno;
		close(fd);
		snprintf(err, errlen, "shared memory of %zu bytes: %s", s->shm_len, strerror(-r));
		return r;
	}
	/* Prefaulted for the GPU (registration pins it all anyway); in host
	 * mode pages come as clients touch them. */
	s->shm = mmap_random(s->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED | (s->gpu ? MAP_POPULATE : 0), fd);
	if (s->shm == MAP_FAILED) {
		s->shm = NULL;
		close(fd);
		snprintf(err, errlen, "map shared memory: %s", strerror(errno));
		return -ENOMEM;
	}
	s->shm_fd = fd; /* for clients of a service (gpuos_sys_shm_fd) */
	return 0;
}

/* The header of a mailbox of n slots in nparts partitions (slots FREE and
 * rings empty: zero pages). */
static void mbox_header(struct gpuos_mbox *mb, uint32_t n, uint32_t nparts)
{
	mb->magic = GPUOS_MBOX_MAGIC;
	mb->version = GPUOS_ABI_VERSION;
	mb->nslots = n;
	mb->nparts = nparts;
	mb->slots_off = sizeof(struct gpuos_mbox);
	mb->ring_off = sizeof(struct gpuos_mbox) + (uint64_t)n * sizeof(struct gpuos_mbox_slot);
}

/* len bytes of fresh memory from a new memfd, mapped at `at` over what was
 * there (prefaulted with populate); its descriptor, or -errno. */
static int memfd_at(void *at, uint64_t len, const char *name, int populate)
{
	int fd = memfd_create(name, MFD_CLOEXEC), r;
	if (fd < 0 || ftruncate(fd, (off_t)len) ||
	    mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | (populate ? MAP_POPULATE : 0), fd, 0) ==
		    MAP_FAILED) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

/* Client area k (share k + 1): fresh memory from a new memfd, mapped over
 * what was there, with an empty mailbox. A client that kept the old one
 * mapped sees nothing of the next. */
static int area_map(struct gpuos_sys *s, uint32_t k, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	char *at = (char *)s->shm + p->heap_off + (uint64_t)k * p->share_bytes;
	int fd = memfd_at(at, p->share_bytes, "gpuos-client", s->gpu != NULL);
	if (fd < 0) {
		snprintf(err, errlen, "memory of client area %u: %s", k + 1u, strerror(-fd));
		return fd;
	}
	if (s->area_fd[k] > 0)
		close(s->area_fd[k]);
	s->area_fd[k] = fd;
	mbox_header((struct gpuos_mbox *)at, p->cmbox_slots, p->warps);
	return 0;
}

/* ---- GPU clients' areas ------------------------------------------------------------ */

static uint32_t nhost_areas(const struct gpuos_sys *s)
{
	return s->plan.nclients - s->plan.ngpu_clients;
}

/* GPU client area k (k >= nhost_areas): fresh memory at its place, zeroed,
 * with an empty mailbox whose clients post at device scope. */
static int garea_map(struct gpuos_sys *s, uint32_t k, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	uint64_t off = (uint64_t)(k - nhost_areas(s)) * p->gpu_area_bytes, h = 0;
	struct gpuos_mbox hdr;
	int fd = -1, r;

	memset(&hdr, 0, sizeof(hdr));
	mbox_header(&hdr, p->cmbox_slots, p->warps);
	hdr.flags = GPUOS_MBOX_F_DEVICE;
	if (!s->gpu) {
		char *at = (char *)s->garea + off;
		fd = memfd_at(at, p->gpu_area_bytes, "gpuos-gpu-client", 0);
		r = fd < 0 ? fd : 0;
		if (!r)
			memcpy(at, &hdr, sizeof(hdr));
	} else {
		if (s->garea_handle[k]) {
			gpuos_gpu_vmm_unmap(s->gpu, s->garea_rt + off, p->gpu_area_bytes, s->garea_handle[k]);
			s->garea_handle[k] = 0;
			/* Its descriptor would keep the last client's memory alive. */
			close(s->area_fd[k]);
			s->area_fd[k] = -1;
		}
		r = gpuos_gpu_vmm_map_new(s->gpu, s->garea_rt + off, p->gpu_area_bytes, &h, &fd);
		if (!r)
			s->garea_handle[k] = h;
		if (!r)
			r = gpuos_gpu_memset(s->gpu, s->garea_rt + off, 0, p->gpu_area_bytes);
		if (!r)
			r = gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)(s->garea_rt + off), &hdr, sizeof(hdr), 1);
	}
	if (r) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "memory of GPU client area %u: %s", k + 1u, strerror(-r));
		return r;
	}
	if (s->area_fd[k] > 0)
		close(s->area_fd[k]);
	s->area_fd[k] = fd;
	return 0;
}

/* One address range for all GPU clients' areas, each then mapped. */
static int make_gareas(struct gpuos_sys *s, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	uint64_t len = (uint64_t)p->ngpu_clients * p->gpu_area_bytes;
	uint32_t k;
	int r = 0;

	if (!p->ngpu_clients)
		return 0;
	if (s->gpu) {
		size_t g = gpuos_gpu_vmm_granularity(s->gpu);
		if (!g || p->gpu_area_bytes % g) {
			snprintf(err, errlen, "GPU client areas: this GPU maps VRAM for other processes in pieces of %zu "
				 "bytes, not %llu", g, (unsigned long long)p->gpu_area_bytes);
			return -EOPNOTSUPP;
		}
		r = gpuos_gpu_vmm_reserve(s->gpu, len, &s->garea_rt);
	} else {
		s->garea = mmap_random(len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
		r = s->garea == MAP_FAILED ? -errno : 0;
		if (r)
			s->garea = NULL;
		s->garea_rt = (uint64_t)(uintptr_t)s->garea;
	}
	if (r) {
		snprintf(err, errlen, "address space for %u GPU client areas: %s", p->ngpu_clients, strerror(-r));
		return r;
	}
	for (k = nhost_areas(s); !r && k < p->nclients; k++)
		r = garea_map(s, k, err, errlen);
	return r;
}

static void free_gareas(struct gpuos_sys *s)
{
	const struct gpuos_plan *p = &s->plan;
	uint64_t len = (uint64_t)p->ngpu_clients * p->gpu_area_bytes;
	uint32_t k;
	for (k = nhost_areas(s); k < p->nclients && s->gpu; k++)
		if (s->garea_handle[k])
			gpuos_gpu_vmm_unmap(s->gpu, s->garea_rt + (uint64_t)(k - nhost_areas(s)) * p->gpu_area_bytes,
					    p->gpu_area_bytes, s->garea_handle[k]);
	if (s->gpu && s->garea_rt)
		gpuos_gpu_vmm_unreserve(s->gpu, s->garea_rt, len);
	if (s->garea)
		munmap(s->garea, len);
	s->garea = NULL;
	s->garea_rt = 0;
}

/* The segment's header and the mailbox's, as clients find them. */
static void shm_headers(struct gpuos_sys *s)
{
	const struct gpuos_plan *p = &s->plan;
	struct gpuos_shm_hdr *h = (struct gpuos_shm_hdr *)s->shm;
	struct gpuos_mbox *mb;

	h->magic = GPUOS_SHM_MAGIC;
	h->version = GPUOS_ABI_VERSION;
	h->mbox_off = GPUOS_SHM_MBOX_OFF;
	h->heap_off = p->heap_off;
	h->heap_len = p->heap_bytes;
	h->rt_base = s->shm_rt;
	mb = (struct gpuos_mbox *)((char *)s->shm + h->mbox_off);
	mbox_header(mb, p->mbox_slots, p->warps);
}

int gpuos_sys_make_shm(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t k;
	int fd, r;

	s->shm_len = s->plan.shm_bytes;
	fd = shm_open_anon(err, errlen);
	if (fd < 0)
		return fd;
	r = shm_map(s, fd, err, errlen);
	for (k = 0; !r && k < nhost_areas(s); k++)
		r = area_map(s, k, err, errlen);
	if (!r)
		r = make_gareas(s, err, errlen);
	if (r)
		return r;
	if (s->gpu) {
		r = gpuos_gpu_host_register(s->gpu, s->shm, s->shm_len, &s->shm_rt);
		if (r) {
			snprintf(err, errlen, "register shared memory with the GPU: %s", strerror(-r));
			return r;
		}
		s->shm_registered = 1;
	} else {
		s->shm_rt = (uint64_t)(uintptr_t)s->shm;
	}
	shm_headers(s);
	return 0;
}

/* ---- a service's clients ----------------------------------------------------------- */

static struct gpuos_rt_client *clients_table(struct gpuos_sys *s)
{
	return (struct gpuos_rt_client *)((char *)s->ctl.host + s->plan.clients_off);
}

/* The doors (struct gpuos_rt_doors) as they stand: area k's epoch, then
 * which are open, each with release (pairs with the service warps' acquire
 * loads, runtime/engine/intake.c intake_clients); on a GPU then copied whole to the VRAM copy
 * they read. A copy the warps see torn is harmless: a door closes together
 * with an odd epoch, and opens (admit) only after the renewal that
 * published the area's even one. */
static int doors_publish(struct gpuos_sys *s, uint32_t k)
{
	struct gpuos_rt_doors *h = (struct gpuos_rt_doors *)((char *)s->ctl.host + s->plan.doors_off);
	__atomic_store_n(&h->epoch[k], s->area_epoch[k], __ATOMIC_RELEASE);
	__atomic_store_n(&h->open, s->doors_open, __ATOMIC_RELEASE);
	return s->doors.len ? gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->doors.rt, h, sizeof(*h), 1) : 0;
}

int gpuos_sys_client_admit(struct gpuos_sys *s, uint32_t k, const struct gpuos_rt_client *c)
{
	struct gpuos_rt_client *t = clients_table(s) + k;
	if (k >= s->plan.nclients || gpuos_rt_epoch_closed(s->area_epoch[k]))
		return -EINVAL;
	*t = *c;
	/* Flags last, with release: the credentials before them; then the
	 * door, after them. The client learns of its area only after this
	 * (the attach reply goes out through a system call, which orders it),
	 * so the runtime reads these rights for any request of it. */
	__atomic_store_n(&t->flags, c->flags, __ATOMIC_RELEASE);
	s->doors_open |= 1u << k;
	return doors_publish(s, k);
}

void gpuos_sys_client_close(struct gpuos_sys *s, uint32_t k)
{
	if (k >= s->plan.nclients || gpuos_rt_epoch_closed(s->area_epoch[k]))
		return;
	/* The service warps take nothing more from this mailbox. Its rights
	 * stay as they are: requests taken before are still checked against
	 * them (clearing them would switch the checks off), and the next
	 * admit writes the next client's before the door opens again. A
	 * failed copy leaves the door open to the same client, with its own
	 * rights, until the renewal (which parks first) publishes again. */
	s->doors_open &= ~(1u << k);
	++s->area_epoch[k];
	doors_publish(s, k);
}

int gpuos_sys_client_renew(struct gpuos_sys *s, uint32_t k, char *err, size_t errlen)
{
	return gpuos_sys_client_renew_n(s, &k, 1, err, errlen);
}

int gpuos_sys_client_renew_n(struct gpuos_sys *s, const uint32_t *ks, uint32_t n, char *err, size_t errlen)
{
	uint64_t rt = 0;
	uint32_t i;
	int r = 0, r2, host = 0;

	for (i = 0; i < n; i++)
		if (ks[i] >= s->plan.nclients)
			return -EINVAL;
	for (i = 0; i < n; i++) {
		gpuos_sys_client_close(s, ks[i]);
		host |= ks[i] < nhost_areas(s);
		if (ks[i] < nhost_areas(s) && s->heap_mapped && s->ctrl->ops->pins) {
			snprintf(err, errlen,
				 "the controller pins the client heap (VFIO): client area %u cannot take fresh memory",
				 ks[i] + 1u);
			return -EOPNOTSUPP;
		}
	}
	/* Parked, the runtime has finished everything it took from the old
	 * mailboxes (their epochs are closed: it took nothing after) and reads
	 * no client memory while it changes under the same addresses. On a GPU
	 * the old pages of host areas are pinned: unregister, map fresh ones,
	 * register again. */
	r = gpuos_park(s, err, errlen);
	if (r)
		return r;
	/* The memory of its own the client registered goes with it: the next
	 * client of the area is another. */
	for (i = 0; i < n; i++)
		gpuos_sys_client_regions_drop(s, ks[i]);
	if (host && s->shm_registered) {
		gpuos_gpu_host_unregister(s->gpu, s->shm);
		s->shm_registered = 0;
	}
	for (i = 0; !r && i < n; i++)
		r = ks[i] < nhost_areas(s) ? area_map(s, ks[i], err, errlen) : garea_map(s, ks[i], err, errlen);
	if (host && s->gpu) {
		r2 = gpuos_gpu_host_register(s->gpu, s->shm, s->shm_len, &rt);
		if (r2 || rt != s->shm_rt) {
			snprintf(err, errlen, "register the shared segment again: %s",
				 r2 ? strerror(-r2) : "the GPU maps it at another address");
			return r2 ? r2 : -EIO;
		}
		s->shm_registered = 1;
	}
	r2 = gpuos_resume(s, err, errlen);
	if (r || r2)
		return r ? r : r2;
	/* The fresh, empty mailboxes: the warps take from their rings' start. */
	for (i = 0; i < n; i++) {
		++s->area_epoch[ks[i]];
		r2 = doors_publish(s, ks[i]);
		r = r ? r : r2;
	}
	return r;
}

/* ---- what clients reach ---------------------------------------------------------- */

/* The mailbox in VRAM: the same header, device scope; slots start FREE (zero). */
static int alloc_mbox_vram(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_mbox hdr = *gpuos_sys_mbox(s);
	int r;
	hdr.flags |= GPUOS_MBOX_F_DEVICE;
	r = gpuos_dma_alloc_on(s->ctrl, s->gpu, s->plan.mbox_bytes, GPUOS_MEM_VRAM, 0, &s->mbox_dev);
	if (!r)
		r = gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->mbox_dev.rt, &hdr, sizeof(hdr), 1);
	if (r)
		snprintf(err, errlen, "allocate the mailbox in VRAM: %s", strerror(-r));
	return r;
}

/* VRAM client memory: mapped for the controller where it can reach VRAM
 * (zero copy); where it cannot (pci: without P2P), reads into it bounce. */
static int alloc_dev_heap(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint64_t len = s->opts.dev_heap_bytes;
	int r = -EOPNOTSUPP;
	if (!s->opts.no_zero_copy && !s->ctrl->dma_host_only)
		r = gpuos_dma_alloc_on(s->ctrl, s->gpu, len, GPUOS_MEM_VRAM, 1, &s->dev_heap);
	if (r)
		r = gpuos_dma_alloc_on(s->ctrl, s->gpu, len, GPUOS_MEM_VRAM, 0, &s->dev_heap);
	if (r)
		snprintf(err, errlen, "allocate %llu bytes of VRAM client memory: %s", (unsigned long long)len,
			 strerror(-r));
	return r;
}

int gpuos_sys_alloc_client_mem(struct gpuos_sys *s, char *err, size_t errlen)
{
	int r = 0;
	if (s->opts.mbox_vram && s->gpu)
		r = alloc_mbox_vram(s, err, errlen);
	if (!r && s->opts.dev_heap_bytes && s->gpu)
		r = alloc_dev_heap(s, err, errlen);
	if (!r)
		r = gpuos_sys_alloc_rt(s, s->plan.ctl_bytes, GPUOS_MEM_HOST, &s->ctl, "the control block", err, errlen);
	return r;
}

/* ---- the way back ---------------------------------------------------------------- */

static void free_dma(struct gpuos_sys *s, struct gpuos_dma *d)
{
	if (d->len)
		gpuos_dma_free(s->ctrl, d);
}

void gpuos_sys_free_shm(struct gpuos_sys *s)
{
	uint32_t k;
	if (!s->shm)
		return;
	if (s->heap_mapped)
		s->ctrl->ops->unmap(s->ctrl, s->heap_iova, ((struct gpuos_shm_hdr *)s->shm)->heap_len);
	if (s->shm_registered)
		gpuos_gpu_host_unregister(s->gpu, s->shm);
	munmap(s->shm, s->shm_len);
	close(s->shm_fd);
	free_gareas(s);
	for (k = 0; k < s->plan.nclients; k++)
		if (s->area_fd[k] > 0)
			close(s->area_fd[k]);
}

void gpuos_sys_free_mem(struct gpuos_sys *s)
{
	uint32_t q;
	for (q = 0; q < GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL; q++) {
		free_dma(s, &s->sq[q]);
		free_dma(s, &s->cq[q]);
	}
	free_dma(s, &s->bounce);
	free_dma(s, &s->prp);
	free_dma(s, &s->files);
	free_dma(s, &s->meta_bounce);
	free_dma(s, &s->meta_prp);
	free_dma(s, &s->ctl);
	free_dma(s, &s->admin);
	free_dma(s, &s->state);
	free_dma(s, &s->cmd);
	free_dma(s, &s->doors);
	free_dma(s, &s->mbox_dev);
	free_dma(s, &s->dev_heap);
}

/* ---- where the regions are (host.h): the mailbox, the heap and its shares,
 * the clients' areas; a client's are its connection's (sys_client.c) ---- */

struct gpuos_mbox *gpuos_sys_mbox(const struct gpuos_sys *s)
{
	if (s->client)
		return gpuos_conn_mbox(s);
	return (struct gpuos_mbox *)((char *)s->shm + GPUOS_SHM_MBOX_OFF);
}

void *gpuos_sys_heap(const struct gpuos_sys *s, uint64_t *rt_addr, uint64_t *len)
{
	const struct gpuos_shm_hdr *h = (const struct gpuos_shm_hdr *)s->shm;
	if (s->client)
		return gpuos_conn_share(s, rt_addr, len);
	if (rt_addr)
		*rt_addr = s->shm_rt + h->heap_off;
	if (len)
		*len = h->heap_len;
	return (char *)s->shm + h->heap_off;
}

void *gpuos_sys_share(const struct gpuos_sys *s, uint32_t k, uint64_t *rt_addr, uint64_t *len)
{
	uint64_t heap_rt, n = s->opts.heap_shares > 1u ? s->opts.heap_shares : 1u;
	uint64_t at = (uint64_t)k * s->plan.share_bytes + s->plan.cmbox_bytes; /* past a client's mailbox */
	char *heap = gpuos_sys_heap(s, &heap_rt, NULL);
	if (k >= n)
		return NULL;
	if (rt_addr)
		*rt_addr = heap_rt + at;
	if (len)
		*len = s->plan.share_bytes - s->plan.cmbox_bytes;
	return heap + at;
}

int gpuos_sys_client_area(const struct gpuos_sys *s, uint32_t k, uint64_t *rt, uint64_t *len, uint64_t *share_off)
{
	uint32_t nhost = s->plan.nclients - s->plan.ngpu_clients;
	if (k >= s->plan.nclients)
		return -1;
	*rt = k < nhost ? s->desc->share_base + (uint64_t)k * s->plan.share_bytes
			: s->garea_rt + (uint64_t)(k - nhost) * s->plan.gpu_area_bytes;
	*len = k < nhost ? s->plan.share_bytes : s->plan.gpu_area_bytes;
	*share_off = s->plan.cmbox_bytes;
	return s->area_fd[k];
}

int gpuos_sys_client_gpu(const struct gpuos_sys *s, uint32_t k)
{
	return k < s->plan.nclients && k >= s->plan.nclients - s->plan.ngpu_clients;
}

uint32_t gpuos_sys_gpu_clients(const struct gpuos_sys *s)
{
	return s->plan.ngpu_clients;
}

uint64_t gpuos_sys_mbox_rt(const struct gpuos_sys *s)
{
	return s->desc->mbox;
}

uint64_t gpuos_sys_dev_heap(const struct gpuos_sys *s, uint64_t *len)
{
	if (len)
		*len = s->dev_heap.len;
	return s->dev_heap.rt;
}
