/* SPDX-License-Identifier: MIT */
/*
 * Booting a runtime (include/gpuos/host.h): controller, bring-up, queues,
 * DMA memory, the descriptor, and the runtime itself on the GPU (one
 * persistent kernel, one warp per block) or on CPU threads (host mode).
 *
 * Memory, by who touches it:
 * - queues (SQ/CQ) and PRP lists: pinned host memory the controller DMAs
 *   (Tier 1); bounce buffers: VRAM on the GPU (emulated P2P for emu:), host
 *   memory otherwise and for controllers that cannot DMA into VRAM (pci:);
 * - mailbox and client heap: one shared-memory segment, so host clients in
 *   other processes can post (boot/service.c), registered with the GPU;
 * - control block: pinned host memory; runtime state and descriptor: VRAM.
 *
 * An array (DESIGN.md 10: "emu:IMG,ssds=N", "pci:A+B") is brought up
 * controller by controller; the runtime stripes over all of them, and each
 * service warp owns queue pairs on every one (queue k of a warp is on
 * controller k % nctrl), as the metadata warp does (one each).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "gpuos/host.h"
#include "gpuos/rt.h"
#include "bringup.h"
#include "ctrl.h"
#include "gpu.h"
#include "loopback.h"
#include "gpuos/loopback.h"
#include "shm.h"

extern const char gpuos_rt_image[] __attribute__((weak));

struct gpuos_sys {
	struct gpuos_boot_opts opts;
	struct gpuos_info info;
	struct gpuos_gpu *gpu;
	struct gpuos_ctrl *ctrl;
	struct gpuos_nvme_dev nvme[GPUOS_CTRL_MAX_MEMBERS]; /* one per controller of the device */
	uint32_t nctrl;           /* controllers (an array's members), nvme[0..nctrl) */
	uint32_t nvme_up;         /* of them enabled: nvme[0..nvme_up) */
	uint32_t nq[GPUOS_CTRL_MAX_MEMBERS]; /* queue pairs created on each: qids 1..nq[m] */
	/* The namespace served and the limits every controller keeps */
	uint64_t ns_lbas;         /* the array's: nctrl x the striped part of the smallest */
	uint32_t stripe_lbas;     /* the array's chunk (nctrl > 1) */
	uint32_t mqes, mdts_bytes, to_ms, io_queues;
	/* Each controller's SMART log at boot, where it keeps no counters we
	 * read directly (pci:): gpuos_sys_ctrl_stats reports what changed since */
	struct gpuos_nvme_smart_log smart0[GPUOS_CTRL_MAX_MEMBERS];
	uint32_t have_smart0;     /* bit m: smart0[m] read */
	/* I/O queue pairs: the service warps', then the metadata warp's (one per controller) */
	struct gpuos_dma sq[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL], cq[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL];
	struct gpuos_dma bounce, prp, ctl, state, mbox_dev, dev_heap;
	struct gpuos_dma cmd;        /* on the GPU: the VRAM copy of ctl->cmd the runtime polls */
	struct gpuos_dma files, meta_bounce, meta_prp;
	struct gpuos_dma admin;      /* struct gpuos_rt_admin per controller: the runtime's recovery */
	uint64_t loop_sq_db[GPUOS_RT_MAX_QUEUES + 1], loop_cq_db[GPUOS_RT_MAX_QUEUES + 1];
	struct gpuos_rt_desc *desc;   /* host copy */
	/* shared segment: header, mailbox, heap */
	char shm_name[64];
	void *shm;
	size_t shm_len;
	uint64_t shm_rt;              /* runtime-space address of the segment */
	int shm_registered;
	uint64_t heap_iova;           /* the client heap as the controller sees it (heap_mapped) */
	int heap_mapped;
	/* host mode */
	pthread_t *threads;
	int running;
};

struct warp_arg {
	const struct gpuos_rt_desc *d;
	uint32_t w;
};

static void *host_warp(void *p)
{
	struct warp_arg *a = (struct warp_arg *)p;
	if (a->w < a->d->nwarps)
		gpuos_rt_warp_run(a->d, a->w, NULL, 0); /* host memory is as close as it gets */
	else
		gpuos_rt_meta_run(a->d); /* the metadata warp: one more thread */
	free(a);
	return NULL;
}

/* Service warps plus the metadata warp. */
static uint32_t rt_threads(const struct gpuos_rt_desc *d)
{
	return d->nwarps + (d->meta ? 1u : 0u);
}

void gpuos_boot_opts_default(struct gpuos_boot_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

static struct gpuos_rt_ctl *ctl_host(struct gpuos_sys *s)
{
	return (struct gpuos_rt_ctl *)s->ctl.host;
}

/* Tell the runtime to run, park or stop. ctl->cmd is the record and, in
 * host mode, what the runtime threads poll (pairs with their acquire load).
 * On the GPU they poll a copy in VRAM (d->cmd): a load of host memory is a
 * PCIe round trip that stalls the service loop (about 1.2 us on an H100).
 * The copy goes through the copy engine, which the persistent kernel does
 * not block. */
static int set_cmd(struct gpuos_sys *s, uint32_t cmd)
{
	__atomic_store_n(&ctl_host(s)->cmd, cmd, __ATOMIC_RELEASE);
	if (s->gpu && s->cmd.len)
		return gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->cmd.rt, &cmd, sizeof(cmd), 1);
	return 0;
}

/* The admin queues change hands (DESIGN.md 11): the runtime uses them to
 * abort and reset while it runs, boot before and after. Whoever takes them
 * starts where the other left them. */
static void admin_to_runtime(struct gpuos_sys *s)
{
	struct gpuos_rt_admin *A = s->admin.host;
	uint32_t m;
	for (m = 0; A && m < s->nctrl; m++) {
		A[m].sq_tail = s->nvme[m].admin.sq_tail;
		A[m].sq_head = s->nvme[m].admin.sq_head;
		A[m].cq_head = s->nvme[m].admin.cq_head;
		A[m].phase = s->nvme[m].admin.phase;
	}
}

static void admin_from_runtime(struct gpuos_sys *s)
{
	struct gpuos_rt_admin *A = s->admin.host;
	uint32_t m;
	for (m = 0; A && m < s->nctrl; m++) {
		struct gpuos_qp *qp = &s->nvme[m].admin;
		struct gpuos_nvme_cqe e;
		uint64_t t0 = gpuos_now_ns();
		qp->sq_tail = __atomic_load_n(&A[m].sq_tail, __ATOMIC_RELAXED);
		qp->sq_head = __atomic_load_n(&A[m].sq_head, __ATOMIC_RELAXED);
		qp->cq_head = __atomic_load_n(&A[m].cq_head, __ATOMIC_RELAXED);
		qp->phase = __atomic_load_n(&A[m].phase, __ATOMIC_RELAXED);
		/* The runtime does not wait for its Aborts: take their completions
		 * (at most RT_ADMIN_INFLIGHT, runtime/recover.c) before boot's own
		 * commands, bounded by CAP.TO. */
		while (qp->sq_head != qp->sq_tail && gpuos_now_ns() - t0 < (uint64_t)s->nvme[m].to_ms * 1000000ull) {
			if (gpuos_qp_cq_peek(qp, 0, &e))
				gpuos_qp_cq_consume(qp, 1, e.sqhd);
			else
				usleep(20);
		}
	}
}

static int start_runtime(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_rt_ctl *ctl = ctl_host(s);
	uint32_t w;
	int r;

	/* Publish cmd=RUN and every descriptor write before the runtime starts
	 * (thread/kernel start also orders). */
	r = set_cmd(s, GPUOS_RT_CMD_RUN);
	if (r) {
		snprintf(err, errlen, "set the runtime's command: %s", strerror(-r));
		return r;
	}
	__atomic_store_n(&ctl->state, GPUOS_RT_STATE_RUNNING, __ATOMIC_RELEASE);
	admin_to_runtime(s); /* the launch below orders it before the runtime */
	ctl->epoch++;
	if (s->gpu) {
		if (s->ctrl->ops->loopback && (r = gpuos_loop_start(s->ctrl, gpuos_rt_image, err, errlen)))
			return r;
		/* The descriptor goes by value: the kernel reads it from its
		 * parameter space (constant cache), which the loop's acquire
		 * loads do not evict. */
		r = gpuos_gpu_launch_value(s->gpu, GPUOS_STREAM_RT, gpuos_rt_image, "gpuos_rt_kernel", s->desc,
					   rt_threads(s->desc), 32, err, errlen);
		if (r)
			return r;
	} else {
		s->threads = calloc(rt_threads(s->desc), sizeof(pthread_t));
		if (!s->threads)
			return -ENOMEM;
		for (w = 0; w < rt_threads(s->desc); w++) {
			struct warp_arg *a = malloc(sizeof(*a));
			if (a) {
				a->d = s->desc;
				a->w = w;
			}
			if (!a || pthread_create(&s->threads[w], NULL, host_warp, a)) {
				free(a);
				snprintf(err, errlen, "cannot start runtime thread %u", w);
				/* threads already started see STOP and leave */
				set_cmd(s, GPUOS_RT_CMD_STOP);
				while (w-- > 0)
					pthread_join(s->threads[w], NULL);
				free(s->threads);
				s->threads = NULL;
				return -EAGAIN;
			}
		}
	}
	s->running = 1;
	return 0;
}

/* Ask the runtime to park or stop and wait until every warp has left. */
static int stop_runtime(struct gpuos_sys *s, uint32_t cmd, char *err, size_t errlen)
{
	struct gpuos_rt_ctl *ctl = ctl_host(s);
	uint32_t w;
	int r = 0;

	if (!s->running)
		return 0;
	r = set_cmd(s, cmd);
	if (r) {
		snprintf(err, errlen, "tell the runtime to %s: %s", cmd == GPUOS_RT_CMD_PARK ? "park" : "stop",
			 strerror(-r));
		return r;
	}
	if (s->gpu) {
		r = gpuos_gpu_wait(s->gpu, GPUOS_STREAM_RT, err, errlen);
		/* The loopback controller stops after the runtime has drained. */
		if (s->ctrl->ops->loopback) {
			int r2 = gpuos_loop_stop(s->ctrl, err, errlen);
			if (!r)
				r = r2;
		}
	} else {
		for (w = 0; w < rt_threads(s->desc); w++)
			pthread_join(s->threads[w], NULL);
		free(s->threads);
		s->threads = NULL;
	}
	s->running = 0;
	admin_from_runtime(s); /* it has left: the wait or the joins order its writes before */
	if (__atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE) != GPUOS_RT_STATE_FATAL)
		__atomic_store_n(&ctl->state, cmd == GPUOS_RT_CMD_PARK ? GPUOS_RT_STATE_PARKED : GPUOS_RT_STATE_STOPPED,
				 __ATOMIC_RELEASE);
	return r;
}

int gpuos_park(struct gpuos_sys *s, char *err, size_t errlen)
{
	return stop_runtime(s, GPUOS_RT_CMD_PARK, err, errlen);
}

int gpuos_resume(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->running)
		return 0;
	return start_runtime(s, err, errlen);
}

/* Delete every controller's I/O queue pairs, newest first. 0 or the first error. */
static int delete_queues(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t m, q;
	int r = 0, r2;
	for (m = 0; m < s->nvme_up; m++) {
		for (q = s->nq[m]; q > 0; q--) {
			r2 = gpuos_nvme_delete_qpair(&s->nvme[m], q, err, errlen);
			if (r2 && !r)
				r = r2;
		}
		s->nq[m] = 0;
	}
	return r;
}

/* CC.SHN on every controller that is up. 0 or the first error. */
static int shutdown_ctrls(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t m;
	int r = 0, r2;
	for (m = 0; m < s->nvme_up; m++) {
		r2 = gpuos_nvme_shutdown(&s->nvme[m], r ? NULL : err, errlen);
		if (r2 && !r)
			r = r2;
	}
	s->nvme_up = 0;
	return r;
}

static void teardown(struct gpuos_sys *s)
{
	char e[256];
	uint32_t q;

	if (s->running)
		stop_runtime(s, GPUOS_RT_CMD_STOP, e, sizeof(e));
	delete_queues(s, e, sizeof(e));
	for (q = 0; q < GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL; q++) {
		if (s->sq[q].len)
			gpuos_dma_free(s->ctrl, &s->sq[q]);
		if (s->cq[q].len)
			gpuos_dma_free(s->ctrl, &s->cq[q]);
	}
	if (s->bounce.len)
		gpuos_dma_free(s->ctrl, &s->bounce);
	if (s->prp.len)
		gpuos_dma_free(s->ctrl, &s->prp);
	if (s->files.len)
		gpuos_dma_free(s->ctrl, &s->files);
	if (s->meta_bounce.len)
		gpuos_dma_free(s->ctrl, &s->meta_bounce);
	if (s->meta_prp.len)
		gpuos_dma_free(s->ctrl, &s->meta_prp);
	if (s->ctl.len)
		gpuos_dma_free(s->ctrl, &s->ctl);
	if (s->admin.len)
		gpuos_dma_free(s->ctrl, &s->admin);
	if (s->state.len)
		gpuos_dma_free(s->ctrl, &s->state);
	if (s->cmd.len)
		gpuos_dma_free(s->ctrl, &s->cmd);
	if (s->mbox_dev.len)
		gpuos_dma_free(s->ctrl, &s->mbox_dev);
	if (s->dev_heap.len)
		gpuos_dma_free(s->ctrl, &s->dev_heap);
	shutdown_ctrls(s, e, sizeof(e));
	if (s->shm) {
		if (s->heap_mapped)
			s->ctrl->ops->unmap(s->ctrl, s->heap_iova, ((struct gpuos_shm_hdr *)s->shm)->heap_len);
		if (s->shm_registered)
			gpuos_gpu_host_unregister(s->gpu, s->shm);
		munmap(s->shm, s->shm_len);
		if (s->shm_name[0])
			shm_unlink(s->shm_name);
	}
	free(s->desc);
	if (s->ctrl)
		gpuos_ctrl_close(s->ctrl);
	if (s->gpu)
		gpuos_gpu_close(s->gpu);
	free(s);
}

static int open_gpu(struct gpuos_sys *s, char *err, size_t errlen)
{
	char why[256];
	/* Scripts that run in host mode on purpose silence the notice. */
	if (getenv("GPUOS_QUIET_HOST"))
		s->opts.quiet = 1;
	if (s->opts.host_mode && s->opts.require_gpu) {
		snprintf(err, errlen, "--host and --require-gpu ask for opposite things");
		return -EINVAL;
	}
	if (s->opts.host_mode) {
		if (!s->opts.quiet)
			fprintf(stderr, "gpuos: host mode (--host): the runtime runs on CPU threads\n");
		return 0;
	}
	if (!gpuos_rt_image)
		snprintf(why, sizeof(why), "this binary carries no GPU runtime image");
	if (!gpuos_rt_image || gpuos_gpu_open(&s->gpu, why, sizeof(why))) {
		s->gpu = NULL;
		if (s->opts.require_gpu) {
			snprintf(err, errlen, "%s (--require-gpu: not running on CPU threads)", why);
			return -ENODEV;
		}
		if (!s->opts.quiet)
			fprintf(stderr, "gpuos: host mode: %s: running on CPU threads\n", why);
		return 0;
	}
	/* Loaded before the controller opens: its DMA workers find the gather
	 * kernel in it, and nothing is loaded once the runtime spins. */
	if (gpuos_gpu_image_load(s->gpu, gpuos_rt_image, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -EIO;
	}
	return 0;
}

static int make_shm(struct gpuos_sys *s, uint32_t nslots, uint32_t nparts, char *err, size_t errlen)
{
	uint64_t mbox_bytes = gpuos_mbox_bytes(nslots);
	uint64_t heap = s->opts.heap_bytes ? s->opts.heap_bytes : 64ull << 20;
	struct gpuos_shm_hdr *h;
	struct gpuos_mbox *mb;
	int fd, r;

	heap = (heap + 0xffffu) & ~0xffffull;
	s->shm_len = GPUOS_SHM_MBOX_OFF + ((mbox_bytes + 0xffffu) & ~0xffffull) + heap;
	if (!s->opts.shared_shm) {
		/* a runtime for this process alone: no name, no /dev/shm (a
		 * minimal initramfs, a container's 64 MB /dev/shm) */
		s->shm_name[0] = 0;
		fd = memfd_create("gpuos", MFD_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			snprintf(err, errlen, "anonymous shared memory (memfd_create): %s", strerror(errno));
			return r;
		}
	} else {
		struct statvfs v;
		/* tmpfs gives the pages only as they are touched: a segment larger
		 * than what is free would fail later, in a client, with SIGBUS */
		if (statvfs("/dev/shm", &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize < s->shm_len) {
			snprintf(err, errlen,
				 "shared memory: /dev/shm has %llu MiB free, the service's mailbox and heap need %llu MiB "
				 "(a smaller --heap-mib, or a larger /dev/shm)",
				 (unsigned long long)((uint64_t)v.f_bavail * v.f_frsize >> 20),
				 (unsigned long long)((s->shm_len + (1u << 20) - 1) >> 20));
			return -ENOSPC;
		}
		snprintf(s->shm_name, sizeof(s->shm_name), "/gpuos-%d-%p", (int)getpid(), (void *)s);
		fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0) {
			r = -errno;
			snprintf(err, errlen, "shared memory %s: %s", s->shm_name, strerror(errno));
			s->shm_name[0] = 0;
			return r;
		}
	}
	if (ftruncate(fd, (off_t)s->shm_len)) {
		r = -errno;
		close(fd);
		if (s->shm_name[0])
			shm_unlink(s->shm_name);
		snprintf(err, errlen, "shared memory of %zu bytes: %s", s->shm_len, strerror(-r));
		return r;
	}
	/* Prefaulted for the GPU (registration pins it all anyway); in host
	 * mode pages come as clients touch them. */
	s->shm = mmap(NULL, s->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED | (s->gpu ? MAP_POPULATE : 0), fd, 0);
	close(fd);
	if (s->shm == MAP_FAILED) {
		s->shm = NULL;
		if (s->shm_name[0])
			shm_unlink(s->shm_name);
		snprintf(err, errlen, "map shared memory: %s", strerror(errno));
		return -ENOMEM;
	}
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
	h = (struct gpuos_shm_hdr *)s->shm;
	h->magic = GPUOS_SHM_MAGIC;
	h->version = GPUOS_ABI_VERSION;
	h->mbox_off = GPUOS_SHM_MBOX_OFF;
	h->heap_off = GPUOS_SHM_MBOX_OFF + ((mbox_bytes + 0xffffu) & ~0xffffull);
	h->heap_len = heap;
	h->rt_base = s->shm_rt;
	mb = (struct gpuos_mbox *)((char *)s->shm + h->mbox_off);
	mb->magic = GPUOS_MBOX_MAGIC;
	mb->version = GPUOS_ABI_VERSION;
	mb->nslots = nslots;
	mb->nparts = nparts;
	mb->slots_off = sizeof(struct gpuos_mbox);
	mb->ring_off = sizeof(struct gpuos_mbox) + (uint64_t)nslots * sizeof(struct gpuos_mbox_slot);
	return 0;
}

/* The namespace the runtime serves and the limits every controller keeps:
 * one controller's, or an array's (DESIGN.md 10): nctrl x the part of the
 * smallest member that whole chunks cover (the emulator's members are all
 * whole chunks). The members must agree on what a command means: the LBA
 * size and the namespace ID. */
static int array_geometry(struct gpuos_sys *s, char *err, size_t errlen)
{
	const struct gpuos_nvme_dev *a = &s->nvme[0];
	uint64_t per = ~0ull, stripe = (uint64_t)s->ctrl->stripe_kib * 1024u;
	uint32_t m;

	s->mqes = a->mqes;
	s->mdts_bytes = a->mdts_bytes;
	s->to_ms = a->to_ms;
	for (m = 1; m < s->nctrl; m++) {
		const struct gpuos_nvme_dev *b = &s->nvme[m];
		const char *an = s->ctrl->member[0].name, *bn = s->ctrl->member[m].name;
		if (b->lba_bytes != a->lba_bytes) {
			snprintf(err, errlen, "%s has %u-byte LBAs and %s %u-byte ones: the controllers of an array need one LBA size",
				 an, a->lba_bytes, bn, b->lba_bytes);
			return -EINVAL;
		}
		if (b->nsid != a->nsid) {
			snprintf(err, errlen, "%s serves namespace %u and %s namespace %u: the controllers of an array need one NSID",
				 an, a->nsid, bn, b->nsid);
			return -EINVAL;
		}
		s->mqes = GPUOS_MIN(s->mqes, b->mqes);
		if (b->mdts_bytes && (!s->mdts_bytes || b->mdts_bytes < s->mdts_bytes))
			s->mdts_bytes = b->mdts_bytes;
		s->to_ms = GPUOS_MAX(s->to_ms, b->to_ms);
	}
	if (s->nctrl == 1) {
		s->ns_lbas = a->ns_lbas;
		s->stripe_lbas = 0;
		return 0;
	}
	if (stripe == 0 || stripe % 4096u || stripe % a->lba_bytes || stripe / a->lba_bytes > 0xffffffffull) {
		snprintf(err, errlen, "stripe of %u KiB: it must be a multiple of 4 KiB and of the LBA size (%u bytes)",
			 s->ctrl->stripe_kib, a->lba_bytes);
		return -EINVAL;
	}
	s->stripe_lbas = (uint32_t)(stripe / a->lba_bytes);
	for (m = 0; m < s->nctrl; m++)
		per = GPUOS_MIN(per, s->nvme[m].ns_lbas);
	per -= per % s->stripe_lbas;
	if (per == 0) {
		snprintf(err, errlen, "a controller of the array is smaller than one stripe (%u KiB)", s->ctrl->stripe_kib);
		return -EINVAL;
	}
	s->ns_lbas = per * s->nctrl;
	return 0;
}

static int bring_up(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t m;
	int r;
	r = gpuos_ctrl_open(s->opts.device, s->gpu, s->opts.force, s->opts.sim_vram, &s->ctrl, err, errlen);
	if (r)
		return r;
	if (s->ctrl->ops->loopback) {
		/* gpu-null: nothing to bring up; it answers like a 1 TiB namespace. */
		struct gpuos_nvme_dev *d = &s->nvme[0];
		memset(d, 0, sizeof(*d));
		d->c = s->ctrl;
		d->vs = GPUOS_NVME_VS(2, 0, 0);
		d->mqes = 4096;
		d->to_ms = 10000;
		d->lba_bytes = 512;
		d->ns_lbas = 1ull << 31;
		d->nsid = 1;
		d->nn = 1;
		snprintf(d->model, sizeof(d->model), "gpuos gpu-null loopback");
		snprintf(d->serial, sizeof(d->serial), "gpu-null");
		snprintf(d->firmware, sizeof(d->firmware), "1.0");
		s->nctrl = 1;
		return array_geometry(s, err, errlen);
	}
	for (m = 0; m < s->ctrl->nmembers; m++) {
		char e[400];
		r = gpuos_nvme_enable(&s->nvme[m], s->ctrl, m, e, sizeof(e));
		if (r) {
			if (s->ctrl->nmembers > 1)
				snprintf(err, errlen, "%s: %s", s->ctrl->member[m].name, e);
			else
				snprintf(err, errlen, "%s", e);
			return r;
		}
		s->nvme_up = m + 1;
	}
	s->nctrl = s->ctrl->nmembers;
	return array_geometry(s, err, errlen);
}

/* Ask every controller for `want` I/O queue pairs; io_queues = the fewest granted. */
static int set_queues(struct gpuos_sys *s, uint32_t want, char *err, size_t errlen)
{
	uint32_t m;
	for (m = 0; m < s->nctrl; m++) {
		char e[400];
		int r = gpuos_nvme_set_queues(&s->nvme[m], want, e, sizeof(e));
		if (r) {
			if (s->nctrl > 1)
				snprintf(err, errlen, "%s: %s", s->ctrl->member[m].name, e);
			else
				snprintf(err, errlen, "%s", e);
			return r;
		}
		s->io_queues = m ? GPUOS_MIN(s->io_queues, s->nvme[m].io_queues) : s->nvme[m].io_queues;
	}
	return 0;
}

/* Controller m's SMART / health log (NVMe 5.16.1.3), through the admin
 * queue (the host's own; the runtime uses I/O queues only). */
static int smart_read(struct gpuos_sys *s, uint32_t m, struct gpuos_nvme_smart_log *out)
{
	struct gpuos_nvme_dev *d = &s->nvme[m];
	struct gpuos_nvme_sqe cmd;
	char e[256];
	int r;
	if (m >= s->nvme_up || !d->buf.host)
		return -EOPNOTSUPP;
	memset(&cmd, 0, sizeof(cmd));
	cmd.opc = GPUOS_NVME_ADMIN_GET_LOG_PAGE;
	cmd.nsid = 0xffffffffu; /* the controller as a whole */
	cmd.prp1 = d->buf.iova;
	cmd.cdw10 = GPUOS_NVME_LOG_SMART | ((uint32_t)(sizeof(*out) / 4u - 1u) << 16); /* NUMDL, 0's based */
	r = gpuos_nvme_admin(d, &cmd, NULL, "get log page (SMART)", e, sizeof(e));
	if (!r)
		memcpy(out, d->buf.host, sizeof(*out));
	return r;
}

/* The NVMe queue id of queue q (of all the runtime's, qpw per warp): queue
 * k = q % qpw of warp w is on controller k % nctrl, which numbers its
 * queues warp by warp from 1. */
static uint32_t queue_qid(uint32_t q, uint32_t qpw, uint32_t nctrl)
{
	return (q / qpw) * (qpw / nctrl) + (q % qpw) / nctrl + 1u;
}

static void fill_info(struct gpuos_sys *s)
{
	struct gpuos_info *i = &s->info;
	const struct gpuos_nvme_dev *a = &s->nvme[0];
	uint32_t m;
	memcpy(i->model, a->model, sizeof(i->model));
	memcpy(i->serial, a->serial, sizeof(i->serial));
	memcpy(i->firmware, a->firmware, sizeof(i->firmware));
	i->version = a->vs;
	i->mqes = s->mqes;
	i->dstrd = a->dstrd;
	i->mdts_bytes = s->mdts_bytes;
	i->lba_bytes = a->lba_bytes;
	i->namespace_lbas = s->ns_lbas;
	i->nsid = a->nsid;
	i->io_queues = s->io_queues;
	i->gpu = s->gpu != NULL;
	snprintf(i->gpu_name, sizeof(i->gpu_name), "%s", s->gpu ? gpuos_gpu_name(s->gpu) : "none (host mode)");
	i->nctrl = s->nctrl;
	i->stripe_bytes = s->nctrl > 1 ? s->stripe_lbas * a->lba_bytes : 0;
	for (m = 0; m < s->nctrl; m++) {
		struct gpuos_ctrl_info *c = &i->ctrl[m];
		const struct gpuos_ctrl_member *cm = &s->ctrl->member[m];
		snprintf(c->name, sizeof(c->name), "%s", cm->name);
		memcpy(c->model, s->nvme[m].model, sizeof(c->model));
		memcpy(c->serial, s->nvme[m].serial, sizeof(c->serial));
		memcpy(c->firmware, s->nvme[m].firmware, sizeof(c->firmware));
		c->namespace_lbas = s->nvme[m].ns_lbas;
		c->io_queues = s->nvme[m].io_queues;
		c->mdts_bytes = s->nvme[m].mdts_bytes;
		c->gbps = cm->gbps;
		c->iops = cm->iops;
		c->latency_us = cm->latency_us;
	}
}

int gpuos_identify(const struct gpuos_boot_opts *o, struct gpuos_info *info, char *err, size_t errlen)
{
	struct gpuos_sys *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return -ENOMEM;
	s->opts = *o;
	/* identify needs no runtime; only gpu-null needs the GPU to exist at all */
	s->opts.quiet = 1;
	s->opts.host_mode = o->host_mode || !o->device || strncmp(o->device, "gpu-null", 8) != 0;
	r = open_gpu(s, err, errlen);
	if (!r)
		r = bring_up(s, err, errlen);
	if (!r && s->ctrl->ops->loopback)
		s->io_queues = s->nvme[0].io_queues = GPUOS_LOOP_MAX_QUEUES;
	else if (!r)
		r = set_queues(s, o->queues ? o->queues : 65535u, err, errlen);
	if (!r) {
		fill_info(s);
		*info = s->info;
		r = shutdown_ctrls(s, err, errlen);
	}
	teardown(s);
	return r;
}

int gpuos_boot(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen)
{
	struct gpuos_sys *s = calloc(1, sizeof(*s));
	struct gpuos_rt_desc *d;
	uint32_t warps, qpw, nq, depth, slots, xfer, nslots, q, meta, avail, nctrl, unit, m;
	const char *why;
	int r;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->opts = *o;
	warps = o->warps ? o->warps : 1;
	if (warps > GPUOS_RT_MAX_WARPS) {
		snprintf(err, errlen, "--warps %u: at most %u", warps, GPUOS_RT_MAX_WARPS);
		free(s);
		return -EINVAL;
	}
	r = open_gpu(s, err, errlen);
	if (!r)
		r = bring_up(s, err, errlen);
	if (r)
		goto fail;

	/* Queues: at least one per warp and controller, a multiple of both
	 * (every warp owns queues of every controller of an array, as many of
	 * each), what was granted at most. Counts below are per controller. */
	nctrl = s->nctrl;
	if (warps * nctrl > GPUOS_RT_MAX_QUEUES) {
		if (!o->quiet)
			fprintf(stderr, "gpuos: %u controllers: running %u service warps instead of %u (at most %u queue pairs)\n",
				nctrl, GPUOS_RT_MAX_QUEUES / nctrl, warps, GPUOS_RT_MAX_QUEUES);
		warps = GPUOS_RT_MAX_QUEUES / nctrl;
	}
	nq = o->queues ? o->queues : warps * nctrl;
	if (nq < warps * nctrl)
		nq = warps * nctrl;
	if (nq > GPUOS_RT_MAX_QUEUES)
		nq = GPUOS_RT_MAX_QUEUES;
	/* One more queue pair for the metadata warp (files and models): it
	 * blocks on its reads, so it shares no queue with a service warp. The
	 * gpu-null loopback moves no data, so it serves no files. */
	if (s->ctrl->ops->loopback)
		s->io_queues = s->nvme[0].io_queues = nq;
	else if ((r = set_queues(s, GPUOS_DIV_ROUND_UP(nq, nctrl) + (o->no_files ? 0u : 1u), err, errlen)))
		goto fail;
	meta = !o->no_files && !s->ctrl->ops->loopback && s->io_queues >= 2;
	avail = s->io_queues - (meta ? 1u : 0u);
	if (!meta && !o->no_files && !s->ctrl->ops->loopback && !o->quiet)
		fprintf(stderr, "gpuos: the controller grants 1 I/O queue: no metadata warp, file and model requests are refused\n");
	if (avail < warps) {
		if (!o->quiet)
			fprintf(stderr, "gpuos: the controller grants %u I/O queues; running %u service warps instead of %u\n",
				s->io_queues, avail, warps);
		warps = avail;
	}
	if (meta && avail * nctrl < nq && !o->quiet)
		fprintf(stderr, "gpuos: the controller grants %u I/O queues, one of them for files: %u left for %u service warps\n",
			s->io_queues, avail, warps);
	unit = warps * nctrl;
	nq = GPUOS_MIN(nq, avail * nctrl);
	nq -= nq % unit;
	qpw = nq / warps;
	depth = o->depth ? o->depth : 256;
	depth = GPUOS_MIN(depth, s->mqes);
	if (depth < 2) {
		snprintf(err, errlen, "queue depth %u: need at least 2 entries", depth);
		r = -EINVAL;
		goto fail;
	}
	slots = o->slots ? o->slots : 64;
	slots = GPUOS_MIN(slots, GPUOS_RT_MAX_SLOTS_PER_WARP);
	slots = GPUOS_MIN(slots, qpw * (depth - 1u));
	xfer = (o->xfer_kib ? o->xfer_kib : 128) * 1024u;
	if (s->mdts_bytes && xfer > s->mdts_bytes)
		xfer = s->mdts_bytes;
	if (xfer > 2u << 20)
		xfer = 2u << 20;
	xfer &= ~4095u;
	if (xfer < 4096u || xfer < s->nvme[0].lba_bytes) {
		snprintf(err, errlen, "transfer size %u bytes is below one page or one LBA", xfer);
		r = -EINVAL;
		goto fail;
	}

	/* I/O queue pairs: contiguous, page aligned (CAP.CQR). */
	if (s->ctrl->ops->loopback) {
		r = gpuos_loop_queues(s->ctrl, nq, depth, s->sq, s->cq, s->loop_sq_db, s->loop_cq_db, err, errlen);
		if (r)
			goto fail;
	}
	/* Queue q is queue k = q % qpw of warp q / qpw, on controller k % nctrl;
	 * each controller numbers its own queues from 1 (queue_qid). */
	for (q = 0; q < nq && !s->ctrl->ops->loopback; q++) {
		uint32_t qid = queue_qid(q, qpw, nctrl);
		m = (q % qpw) % nctrl;
		r = gpuos_dma_alloc(s->ctrl, (size_t)depth * sizeof(struct gpuos_nvme_sqe), GPUOS_MEM_HOST, 1, &s->sq[q]);
		if (!r)
			r = gpuos_dma_alloc(s->ctrl, (size_t)depth * sizeof(struct gpuos_nvme_cqe), GPUOS_MEM_HOST, 1, &s->cq[q]);
		if (r) {
			snprintf(err, errlen, "allocate I/O queue %u: %s", q + 1, strerror(-r));
			goto fail;
		}
		r = gpuos_nvme_create_qpair(&s->nvme[m], qid, depth, s->sq[q].iova, s->cq[q].iova, err, errlen);
		if (r)
			goto fail;
		s->nq[m] = qid; /* qids of a controller come in increasing order */
	}
	for (m = 0; meta && m < nctrl; m++) {
		/* The metadata warp's queue pair on controller m: qid nq / nctrl + 1 */
		r = gpuos_dma_alloc(s->ctrl, (size_t)depth * sizeof(struct gpuos_nvme_sqe), GPUOS_MEM_HOST, 1, &s->sq[nq + m]);
		if (!r)
			r = gpuos_dma_alloc(s->ctrl, (size_t)depth * sizeof(struct gpuos_nvme_cqe), GPUOS_MEM_HOST, 1,
					    &s->cq[nq + m]);
		if (r) {
			snprintf(err, errlen, "allocate the metadata queue: %s", strerror(-r));
			goto fail;
		}
		r = gpuos_nvme_create_qpair(&s->nvme[m], nq / nctrl + 1u, depth, s->sq[nq + m].iova, s->cq[nq + m].iova,
					    err, errlen);
		if (r)
			goto fail;
		s->nq[m] = nq / nctrl + 1u;
	}

	/* Bounce buffers and their PRP lists, one of each per command slot. */
	/* In VRAM where the controller can DMA there (P2P, or emulated); in host
	 * memory where it cannot (pci: through VFIO or uio). */
	r = gpuos_dma_alloc(s->ctrl, (size_t)warps * slots * xfer,
			    s->ctrl->dma_host_only ? GPUOS_MEM_HOST : GPUOS_MEM_VRAM, 1, &s->bounce);
	if (!r)
		r = gpuos_dma_alloc(s->ctrl, (size_t)warps * slots * 4096u, GPUOS_MEM_HOST, 1, &s->prp);
	if (r) {
		snprintf(err, errlen, "allocate %zu bytes of bounce buffers: %s", (size_t)warps * slots * xfer, strerror(-r));
		goto fail;
	}
	/* The slots' PRP lists are written by the runtime with each command
	 * (into the bounce buffer, or straight into the destination). */
	if (meta) {
		/* The metadata warp's buffer and PRP list, like a command slot's. */
		uint32_t pg;
		r = gpuos_dma_alloc(s->ctrl, xfer, s->ctrl->dma_host_only ? GPUOS_MEM_HOST : GPUOS_MEM_VRAM, 1,
				    &s->meta_bounce);
		if (!r)
			r = gpuos_dma_alloc(s->ctrl, 4096u, GPUOS_MEM_HOST, 1, &s->meta_prp);
		if (r) {
			snprintf(err, errlen, "allocate the metadata buffer: %s", strerror(-r));
			goto fail;
		}
		for (pg = 1; pg < xfer / 4096u; pg++)
			((uint64_t *)s->meta_prp.host)[pg - 1u] = s->meta_bounce.iova + (uint64_t)pg * 4096u;
	}

	nslots = o->mbox_slots ? o->mbox_slots : 1024;
	nslots = GPUOS_MAX(nslots, warps);
	nslots -= nslots % warps;
	if (nslots / warps > GPUOS_MBOX_MAX_PER_PART)
		nslots = GPUOS_MBOX_MAX_PER_PART * warps;
	if (meta && nslots > 65535u) /* the metadata ring names slots in 16 bits */
		nslots = 65535u - 65535u % warps;
	r = make_shm(s, nslots, warps, err, errlen);
	if (r)
		goto fail;
	if (o->mbox_vram && s->gpu) {
		/* The same header, in VRAM, device scope; slots start FREE (zero). */
		uint64_t mb_bytes = gpuos_mbox_bytes(nslots);
		struct gpuos_mbox hdr = *gpuos_sys_mbox(s);
		hdr.flags |= GPUOS_MBOX_F_DEVICE;
		r = gpuos_dma_alloc(s->ctrl, mb_bytes, GPUOS_MEM_VRAM, 0, &s->mbox_dev);
		if (!r)
			r = gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->mbox_dev.rt, &hdr, sizeof(hdr), 1);
		if (r) {
			snprintf(err, errlen, "allocate the mailbox in VRAM: %s", strerror(-r));
			goto fail;
		}
	}
	if (o->dev_heap_bytes && s->gpu) {
		/* Mapped for the controller where it can reach VRAM (zero copy);
		 * where it cannot (pci: without P2P), reads into it bounce. */
		r = -EOPNOTSUPP;
		if (!o->no_zero_copy && !s->ctrl->dma_host_only)
			r = gpuos_dma_alloc(s->ctrl, o->dev_heap_bytes, GPUOS_MEM_VRAM, 1, &s->dev_heap);
		if (r)
			r = gpuos_dma_alloc(s->ctrl, o->dev_heap_bytes, GPUOS_MEM_VRAM, 0, &s->dev_heap);
		if (r) {
			snprintf(err, errlen, "allocate %llu bytes of VRAM client memory: %s",
				 (unsigned long long)o->dev_heap_bytes, strerror(-r));
			goto fail;
		}
	}
	/* statistics: one line per service warp and one for the metadata warp */
	r = gpuos_dma_alloc(s->ctrl, sizeof(struct gpuos_rt_ctl) + (warps + 1u) * sizeof(struct gpuos_rt_stats),
			    GPUOS_MEM_HOST, 0, &s->ctl);
	if (r)
		goto fail;

	d = s->desc = calloc(1, sizeof(*d));
	if (!d) {
		r = -ENOMEM;
		goto fail;
	}
	d->magic = GPUOS_RT_MAGIC;
	d->version = GPUOS_ABI_VERSION;
	d->nwarps = warps;
	d->nqueues = nq;
	d->nsid = s->nvme[0].nsid;
	d->lba_shift = (uint32_t)__builtin_ctz(s->nvme[0].lba_bytes);
	d->ns_lbas = s->ns_lbas;
	d->nctrl = nctrl;
	d->stripe_lbas = s->stripe_lbas;
	d->xfer_bytes = xfer;
	d->flags = o->allow_raw ? GPUOS_RT_ALLOW_RAW : 0;
	d->timeout_ns = (uint64_t)(o->timeout_ms ? o->timeout_ms : s->to_ms) * 1000000ull;
	/* CSTS is polled for CFS where the runtime can read it; otherwise a dead
	 * controller shows as command timeouts. */
	for (m = 0; m < nctrl; m++)
		d->csts[m] = s->ctrl->member[m].regs_rt && (!s->gpu || s->ctrl->regs_gpu_readable)
				     ? s->ctrl->member[m].regs_rt + GPUOS_NVME_REG_CSTS : 0;
	d->mbox = s->mbox_dev.len ? s->mbox_dev.rt : s->shm_rt + GPUOS_SHM_MBOX_OFF;
	d->mbox_nslots = nslots;
	if (s->mbox_dev.len)
		d->flags |= GPUOS_RT_MBOX_DEVICE;
	if (s->gpu)
		d->flags |= GPUOS_RT_ON_GPU;
	if (s->ctrl->ops->loopback)
		d->flags |= GPUOS_RT_QUEUES_DEVICE;
	d->ctl = s->ctl.rt;
	d->cmd = d->ctl + offsetof(struct gpuos_rt_ctl, cmd);
	d->retries = 3; /* a command failed with DNR clear goes again at most 3 times */
	if (s->gpu) {
		r = gpuos_dma_alloc(s->ctrl, 64, GPUOS_MEM_VRAM, 0, &s->cmd);
		if (r) {
			snprintf(err, errlen, "allocate the runtime's command word: %s", strerror(-r));
			goto fail;
		}
		d->cmd = s->cmd.rt;
	}
	d->slots_per_warp = slots;
	d->bounce = s->bounce.rt;
	d->bounce_iova = s->bounce.iova;
	d->prp = s->prp.rt;
	d->prp_iova = s->prp.iova;
	/* The client heap is the one region clients may name as a destination. */
	{
		struct gpuos_shm_hdr *h = (struct gpuos_shm_hdr *)s->shm;
		d->nregions = 1;
		d->region[0].base = s->shm_rt + h->heap_off;
		d->region[0].len = h->heap_len;
		/* Zero copy into the heap where the controller can map it (the
		 * emulator; VFIO pins it); otherwise reads into it bounce. */
		if (!o->no_zero_copy && s->ctrl->ops->map &&
		    s->ctrl->ops->map(s->ctrl, (char *)s->shm + h->heap_off, h->heap_len, 0, &s->heap_iova) == 0) {
			s->heap_mapped = 1;
			d->region[0].iova = s->heap_iova;
			d->region[0].flags = GPUOS_RT_REGION_DMA;
		}
		if (s->dev_heap.len) {
			d->region[1].base = s->dev_heap.rt;
			d->region[1].len = s->dev_heap.len;
			d->region[1].flags = GPUOS_RT_REGION_VRAM;
			if (s->dev_heap.iova) {
				d->region[1].iova = s->dev_heap.iova;
				d->region[1].flags |= GPUOS_RT_REGION_DMA;
			}
			d->nregions = 2;
		}
	}
	for (q = 0; q < nq; q++) {
		uint32_t qid = s->ctrl->ops->loopback ? q + 1 : queue_qid(q, qpw, nctrl);
		m = (q % qpw) % nctrl;
		d->queue[q].sq = s->sq[q].rt;
		d->queue[q].cq = s->cq[q].rt;
		d->queue[q].sq_db = s->ctrl->ops->loopback ? s->loop_sq_db[q] : gpuos_nvme_sq_db_rt(&s->nvme[m], qid);
		d->queue[q].cq_db = s->ctrl->ops->loopback ? s->loop_cq_db[q] : gpuos_nvme_cq_db_rt(&s->nvme[m], qid);
		d->queue[q].qid = qid;
		d->queue[q].depth = depth;
		d->queue[q].ctrl = m;
	}
	/* What the runtime needs to abort and reset by itself. */
	if (!s->ctrl->ops->loopback) {
		struct gpuos_rt_admin *A;
		r = gpuos_dma_alloc(s->ctrl, nctrl * sizeof(*A), GPUOS_MEM_HOST, 0, &s->admin);
		if (r) {
			snprintf(err, errlen, "allocate the runtime's admin table: %s", strerror(-r));
			goto fail;
		}
		A = s->admin.host;
		for (m = 0; m < nctrl; m++) {
			struct gpuos_nvme_dev *n = &s->nvme[m];
			/* CSTS.RDY must be read to reset: not where the GPU cannot
			 * read the controller's registers (a real SSD's BAR) */
			A[m].regs = s->ctrl->member[m].regs_rt && (!s->gpu || s->ctrl->regs_gpu_readable)
					    ? s->ctrl->member[m].regs_rt : 0;
			A[m].sq = n->admin_sq.rt;
			A[m].cq = n->admin_cq.rt;
			A[m].sq_db = gpuos_nvme_sq_db_rt(n, 0);
			A[m].cq_db = gpuos_nvme_cq_db_rt(n, 0);
			A[m].depth = GPUOS_ADMIN_DEPTH;
			A[m].to_ms = n->to_ms;
			A[m].cc = gpuos_reg_read32(n->m, GPUOS_NVME_REG_CC);
			A[m].nio = n->io_queues;
			A[m].asq_iova = n->admin_sq.iova;
			A[m].acq_iova = n->admin_cq.iova;
			A[m].aqa = gpuos_reg_read32(n->m, GPUOS_NVME_REG_AQA);
		}
		for (q = 0; q < nq; q++) {
			A[(q % qpw) % nctrl].sq_iova[q] = s->sq[q].iova;
			A[(q % qpw) % nctrl].cq_iova[q] = s->cq[q].iova;
		}
		for (m = 0; meta && m < nctrl; m++) {
			A[m].sq_iova[nq + m] = s->sq[nq + m].iova;
			A[m].cq_iova[nq + m] = s->cq[nq + m].iova;
		}
		d->admin = s->admin.rt;
	}
	d->state_bytes = gpuos_rt_state_bytes(d);
	r = gpuos_dma_alloc(s->ctrl, d->state_bytes, GPUOS_MEM_VRAM, 0, &s->state);
	if (r) {
		snprintf(err, errlen, "allocate runtime state: %s", strerror(-r));
		goto fail;
	}
	d->state = s->state.rt;
	if (meta) {
		d->meta = 1;
		d->part = o->part;
		for (m = 0; m < nctrl; m++) {
			struct gpuos_rt_queue *mq = &d->queue[nq + m];
			mq->sq = s->sq[nq + m].rt;
			mq->cq = s->cq[nq + m].rt;
			mq->sq_db = gpuos_nvme_sq_db_rt(&s->nvme[m], nq / nctrl + 1u);
			mq->cq_db = gpuos_nvme_cq_db_rt(&s->nvme[m], nq / nctrl + 1u);
			mq->qid = nq / nctrl + 1u;
			mq->depth = depth;
			mq->ctrl = m;
		}
		d->meta_bounce = s->meta_bounce.rt;
		d->meta_bounce_iova = s->meta_bounce.iova;
		d->meta_prp = s->meta_prp.rt;
		d->meta_prp_iova = s->meta_prp.iova;
		d->files_bytes = gpuos_rt_files_bytes(d);
		r = gpuos_dma_alloc(s->ctrl, d->files_bytes, GPUOS_MEM_VRAM, 0, &s->files);
		if (r) {
			snprintf(err, errlen, "allocate %llu bytes for files and models: %s",
				 (unsigned long long)d->files_bytes, strerror(-r));
			goto fail;
		}
		d->files = s->files.rt;
	}
	if (gpuos_rt_desc_check(d, &why)) {
		snprintf(err, errlen, "runtime descriptor: %s", why);
		r = -EINVAL;
		goto fail;
	}
	/* The drives' counters as they stand before the runtime reads anything. */
	for (m = 0; m < nctrl && !s->ctrl->ops->counters && !s->ctrl->ops->loopback; m++)
		if (smart_read(s, m, &s->smart0[m]) == 0)
			s->have_smart0 |= 1u << m;
	s->info.queues_used = nq;
	s->info.depth = depth;
	s->info.warps = warps;
	s->info.xfer_bytes = xfer;
	fill_info(s);
	r = start_runtime(s, err, errlen);
	if (r)
		goto fail;
	*out = s;
	return 0;
fail:
	teardown(s);
	return r;
}

int gpuos_shutdown(struct gpuos_sys *s, char *err, size_t errlen)
{
	char e2[256];
	int r = 0, r2;

	if (!s)
		return 0;
	if (s->running)
		r = stop_runtime(s, GPUOS_RT_CMD_STOP, err, errlen);
	r2 = delete_queues(s, r ? e2 : err, r ? sizeof(e2) : errlen);
	if (r2 && !r)
		r = r2;
	r2 = shutdown_ctrls(s, r ? e2 : err, r ? sizeof(e2) : errlen);
	if (r2 && !r)
		r = r2;
	teardown(s);
	return r;
}

const struct gpuos_info *gpuos_sys_info(const struct gpuos_sys *s)
{
	return &s->info;
}

void gpuos_sys_stats(const struct gpuos_sys *s, struct gpuos_stats *st)
{
	const struct gpuos_rt_ctl *ctl = (const struct gpuos_rt_ctl *)s->ctl.host;
	uint32_t w;
	memset(st, 0, sizeof(*st));
	for (w = 0; w < rt_threads(s->desc); w++) {
		const struct gpuos_rt_stats *x = &ctl->stats[w];
		st->requests += __atomic_load_n(&x->requests, __ATOMIC_RELAXED);
		st->bytes += __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);
		st->errors += __atomic_load_n(&x->errors, __ATOMIC_RELAXED);
		st->commands += __atomic_load_n(&x->commands, __ATOMIC_RELAXED);
		st->timeouts += __atomic_load_n(&x->timeouts, __ATOMIC_RELAXED);
		st->doorbells += __atomic_load_n(&x->doorbells, __ATOMIC_RELAXED);
		st->polls += __atomic_load_n(&x->polls, __ATOMIC_RELAXED);
		st->zero_copy += __atomic_load_n(&x->zero_copy, __ATOMIC_RELAXED);
		st->strays += __atomic_load_n(&x->strays, __ATOMIC_RELAXED);
		st->aborts += __atomic_load_n(&x->aborts, __ATOMIC_RELAXED);
		st->resets += __atomic_load_n(&x->resets, __ATOMIC_RELAXED);
		st->retries += __atomic_load_n(&x->retries, __ATOMIC_RELAXED);
	}
	st->state = __atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE);
	st->notices = __atomic_load_n(&ctl->notices, __ATOMIC_RELAXED);
}

int gpuos_sys_ctrl_stats(const struct gpuos_sys *s, uint32_t i, struct gpuos_ctrl_stats *st)
{
	struct gpuos_nvme_smart_log now;
	const struct gpuos_nvme_smart_log *b;
	int r;
	memset(st, 0, sizeof(*st));
	if (i >= s->nctrl)
		return -EINVAL;
	if (s->ctrl->ops->counters)
		return s->ctrl->ops->counters(s->ctrl, i, st);
	if (!(s->have_smart0 & (1u << i)))
		return -EOPNOTSUPP;
	/* A read of the log changes nothing the caller sees as const. The
	 * running runtime may be using the admin queue (aborts, resets): it is
	 * parked around the read. */
	{
		struct gpuos_sys *w = (struct gpuos_sys *)(uintptr_t)s;
		int was = w->running && w->admin.len;
		char e[256];
		if (was && (r = gpuos_park(w, e, sizeof(e))))
			return r;
		r = smart_read(w, i, &now);
		if (was) {
			int r2 = gpuos_resume(w, e, sizeof(e));
			if (!r)
				r = r2;
		}
	}
	if (r)
		return r;
	b = &s->smart0[i];
	st->io_cmds = now.host_reads[0] - b->host_reads[0] + now.host_writes[0] - b->host_writes[0];
	st->read_bytes = (now.data_units_read[0] - b->data_units_read[0]) * 512000u;
	st->errors = now.media_errors[0] - b->media_errors[0];
	st->smart = 1;
	return 0;
}

void gpuos_sys_describe_ctrl(const struct gpuos_sys *s, char *buf, size_t len)
{
	if (s->ctrl->ops->describe)
		s->ctrl->ops->describe(s->ctrl, buf, len);
	else if (len)
		buf[0] = 0;
}

struct gpuos_mbox *gpuos_sys_mbox(const struct gpuos_sys *s)
{
	return (struct gpuos_mbox *)((char *)s->shm + GPUOS_SHM_MBOX_OFF);
}

void *gpuos_sys_heap(const struct gpuos_sys *s, uint64_t *rt_addr, uint64_t *len)
{
	const struct gpuos_shm_hdr *h = (const struct gpuos_shm_hdr *)s->shm;
	if (rt_addr)
		*rt_addr = s->shm_rt + h->heap_off;
	if (len)
		*len = h->heap_len;
	return (char *)s->shm + h->heap_off;
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

int gpuos_sys_dev_alloc(struct gpuos_sys *s, size_t len, uint64_t *rt)
{
	if (!s->gpu) {
		void *p = aligned_alloc(4096, (len + 4095u) & ~(size_t)4095u);
		if (!p)
			return -ENOMEM;
		memset(p, 0, len);
		*rt = (uint64_t)(uintptr_t)p;
		return 0;
	}
	/* cudaMalloc is safe while the runtime spins; cudaFree is not (PLATFORM.md). */
	int r = gpuos_gpu_dev_alloc(s->gpu, len, rt);
	if (!r)
		r = gpuos_gpu_memset(s->gpu, *rt, 0, len);
	return r;
}

void gpuos_sys_dev_free(struct gpuos_sys *s, uint64_t rt)
{
	if (!s->gpu)
		free((void *)(uintptr_t)rt);
	else if (!s->running)
		gpuos_gpu_dev_free(s->gpu, rt);
	else {
		/* Freeing now would deadlock against the spinning runtime: park around it. */
		char e[128];
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

void gpuos_sys_shm_private(struct gpuos_sys *s)
{
	if (s->shm_name[0])
		shm_unlink(s->shm_name);
	s->shm_name[0] = 0;
}

const char *gpuos_sys_shm_name(const struct gpuos_sys *s)
{
	return s->shm_name;
}

int gpuos_sys_check(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->gpu && s->running && !gpuos_gpu_running(s->gpu, GPUOS_STREAM_RT))
		return gpuos_gpu_wait(s->gpu, GPUOS_STREAM_RT, err, errlen) ? -EIO : 0;
	return 0;
}

/* ---- apps (gpuos run) --------------------------------------------------------- */

struct gpuos_app {
	struct gpuos_gpu_module *m;
};

int gpuos_sys_gpu_sm(const struct gpuos_sys *s)
{
	return s->gpu ? gpuos_gpu_sm(s->gpu) : 0;
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
	/* Loading a module while the runtime spins deadlocks (notes/PLATFORM.md). */
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
