/* SPDX-License-Identifier: MIT */
/*
 * The descriptor the runtime reads (include/gpuos/internal/rt.h), written on the host
 * from the plan (boot/sys/sys_plan.h) and the regions of boot/sys/sys_mem.c, with
 * what the runtime alone uses: its command word, its admin table, its state
 * and its files region. Read-only for the runtime, which gets it by value at
 * each launch (boot/sys/sys_run.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys_internal.h"

/* Controller m's BAR0 where the runtime may read it, else 0: the GPU may
 * not read another device's BAR on every platform (a real SSD's). */
static uint64_t regs_rt(const struct gpuos_sys *s, uint32_t m)
{
	const struct gpuos_ctrl_member *cm = &s->ctrl->member[m];
	return cm->regs_rt && (!s->gpu || s->ctrl->regs_gpu_readable) ? cm->regs_rt : 0;
}

/* The namespace, the geometry and the limits. */
static void desc_geometry(struct gpuos_sys *s, struct gpuos_rt_desc *d)
{
	const struct gpuos_plan *p = &s->plan;
	uint32_t m;

	d->magic = GPUOS_RT_MAGIC;
	d->version = GPUOS_ABI_VERSION;
	d->nwarps = p->warps;
	d->nqueues = p->nq;
	d->nsid = s->dev.nsid;
	d->lba_shift = (uint32_t)__builtin_ctz(s->dev.lba_bytes);
	d->ns_lbas = s->dev.ns_lbas;
	d->nctrl = p->nctrl;
	d->stripe_lbas = s->dev.stripe_lbas;
	d->xfer_bytes = p->xfer_bytes;
	d->slots_per_warp = p->slots;
	d->timeout_ns = p->timeout_ns;
	d->retries = 3; /* a command failed with DNR clear goes again at most 3 times */
	d->flags = s->opts.allow_raw ? GPUOS_RT_ALLOW_RAW : 0;
	if (s->gpu)
		d->flags |= GPUOS_RT_ON_GPU;
	if (s->ctrl->ops->on_gpu)
		d->flags |= GPUOS_RT_QUEUES_DEVICE;
	/* CSTS is polled for CFS where the runtime can read it; otherwise a dead
	 * controller shows as command timeouts. */
	for (m = 0; m < p->nctrl; m++)
		d->csts[m] = regs_rt(s, m) ? regs_rt(s, m) + GPUOS_NVME_REG_CSTS : 0;
}

/* The mailbox, the control block and the command word the runtime polls:
 * &ctl->cmd in host mode, a copy in VRAM on the GPU (boot/sys/sys_cmd.c says why). */
static int desc_control(struct gpuos_sys *s, struct gpuos_rt_desc *d, char *err, size_t errlen)
{
	int r;
	d->mbox = s->mbox_dev.len ? s->mbox_dev.rt : s->shm_rt + GPUOS_SHM_MBOX_OFF;
	d->mbox_nslots = s->plan.mbox_slots;
	if (s->mbox_dev.len)
		d->flags |= GPUOS_RT_MBOX_DEVICE;
	d->ctl = s->ctl.rt;
	d->cmd = d->ctl + offsetof(struct gpuos_rt_ctl, cmd);
	if (!s->gpu)
		return 0;
	r = gpuos_sys_alloc_rt(s, 64, GPUOS_MEM_VRAM, &s->cmd, "the runtime's command word", err, errlen);
	if (!r)
		d->cmd = s->cmd.rt;
	/* Zero, as the control block's: every door closed, every epoch 0. */
	if (!r && s->plan.nclients)
		r = gpuos_sys_alloc_rt(s, sizeof(struct gpuos_rt_doors), GPUOS_MEM_VRAM, &s->doors, "the clients' doors", err,
				       errlen);
	if (!r && s->doors.len)
		r = gpuos_gpu_memset(s->gpu, s->doors.rt, 0, s->doors.len) ? -EIO : 0;
	return r;
}

/* The command slots' buffers, and the memory clients may name as a
 * destination: the client heap, and VRAM client memory where there is some. */
static void desc_regions(struct gpuos_sys *s, struct gpuos_rt_desc *d)
{
	const struct gpuos_shm_hdr *h = (const struct gpuos_shm_hdr *)s->shm;

	d->bounce = s->bounce.rt;
	d->bounce_iova = s->bounce.iova;
	d->prp = s->prp.rt;
	d->prp_iova = s->prp.iova;
	d->nregions = 1;
	d->region[0].base = s->shm_rt + h->heap_off;
	d->region[0].len = h->heap_len;
	if (s->opts.heap_shares > 1u) {
		d->nshares = s->plan.nclients;
		d->share_base = d->region[0].base;
		d->share_len = s->plan.share_bytes;
		d->nclients = s->plan.nclients;
		d->cmbox_nslots = s->plan.cmbox_slots;
		d->cmbox_bytes = s->plan.cmbox_bytes;
		d->clients = s->ctl.rt + s->plan.clients_off;
		d->doors = s->doors.len ? s->doors.rt : s->ctl.rt + s->plan.doors_off;
	}
	/* Zero copy into the heap where the controller can map it (the
	 * emulator; VFIO pins it); otherwise reads into it bounce. Not where
	 * the controller pins it and a service's client areas must take fresh
	 * pages when their clients leave (gpuos_sys_client_renew). */
	if (!s->opts.no_zero_copy && s->ctrl->ops->map && !(s->plan.nclients && s->ctrl->ops->pins) &&
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
	/* The GPU clients' areas (VRAM on a GPU): reads into them bounce. */
	if (s->plan.ngpu_clients) {
		struct gpuos_rt_region *g = &d->region[d->nregions++];
		d->ngpu_clients = s->plan.ngpu_clients;
		d->gpu_area_base = s->garea_rt;
		d->gpu_area_len = s->plan.gpu_area_bytes;
		g->base = s->garea_rt;
		g->len = (uint64_t)s->plan.ngpu_clients * s->plan.gpu_area_bytes;
		g->flags = s->gpu ? GPUOS_RT_REGION_VRAM : 0;
	}
}

static void desc_queue(struct gpuos_rt_queue *dq, const struct gpuos_dma *sq, const struct gpuos_dma *cq,
		       uint64_t sq_db, uint64_t cq_db, uint32_t qid, uint32_t depth, uint32_t ctrl)
{
	dq->sq = sq->rt;
	dq->cq = cq->rt;
	dq->sq_db = sq_db;
	dq->cq_db = cq_db;
	dq->qid = qid;
	dq->depth = depth;
	dq->ctrl = ctrl;
}

/* The service warps' queue pairs, with the doorbells their controller
 * placed (boot/sys/sys_ctrl.c). */
static void desc_queues(struct gpuos_sys *s, struct gpuos_rt_desc *d)
{
	const struct gpuos_plan *p = &s->plan;
	uint32_t q;
	for (q = 0; q < p->nq; q++)
		desc_queue(&d->queue[q], &s->sq[q], &s->cq[q], s->sq_db[q], s->cq_db[q], gpuos_plan_queue_qid(p, q),
			   p->depth, gpuos_plan_queue_ctrl(p, q));
}

/* Controller m's admin queue and the registers the runtime needs to abort
 * and reset by itself (docs/design.md, "The life of a command"). */
static void admin_entry(struct gpuos_sys *s, uint32_t m, struct gpuos_rt_admin *A)
{
	struct gpuos_nvme_dev *n = &s->nvme[m];
	/* CSTS.RDY must be read to reset: not where the GPU cannot read the
	 * controller's registers (a real SSD's BAR) */
	A->regs = regs_rt(s, m);
	A->sq = n->admin_sq.rt;
	A->cq = n->admin_cq.rt;
	A->sq_db = gpuos_nvme_sq_db_rt(n, 0);
	A->cq_db = gpuos_nvme_cq_db_rt(n, 0);
	A->depth = GPUOS_ADMIN_DEPTH;
	A->to_ms = n->to_ms;
	A->cc = gpuos_reg_read32(n->m, GPUOS_NVME_REG_CC);
	A->nio = n->io_queues;
	A->asq_iova = n->admin_sq.iova;
	A->acq_iova = n->admin_cq.iova;
	A->aqa = gpuos_reg_read32(n->m, GPUOS_NVME_REG_AQA);
}

/* The admin table: one entry per controller, and every I/O queue as the
 * controller addresses it (to create it again after a reset). A controller
 * without registers (gpu-null: none is up) has no admin queue, nor has a
 * group's runtime: the admin queues are the host's, shared by all, and a
 * reset would take the other runtimes' queue pairs (rec_admin: no aborts,
 * no resets; timeouts fail). */
static int desc_admin(struct gpuos_sys *s, struct gpuos_rt_desc *d, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	struct gpuos_rt_admin *A;
	uint32_t m, q;
	int r;

	if (!s->nvme_up || s->group)
		return 0;
	r = gpuos_sys_alloc_rt(s, p->nctrl * sizeof(*A), GPUOS_MEM_HOST, &s->admin, "the runtime's admin table", err,
			       errlen);
	if (r)
		return r;
	A = s->admin.host;
	for (m = 0; m < p->nctrl; m++)
		admin_entry(s, m, &A[m]);
	for (q = 0; q < p->nq; q++) {
		A[gpuos_plan_queue_ctrl(p, q)].sq_iova[q] = s->sq[q].iova;
		A[gpuos_plan_queue_ctrl(p, q)].cq_iova[q] = s->cq[q].iova;
	}
	for (m = 0; p->meta && m < p->nctrl; m++) {
		A[m].sq_iova[p->nq + m] = s->sq[p->nq + m].iova;
		A[m].cq_iova[p->nq + m] = s->cq[p->nq + m].iova;
	}
	d->admin = s->admin.rt;
	return 0;
}

/* The runtime's private state, as large as the descriptor so far needs. */
static int desc_state(struct gpuos_sys *s, struct gpuos_rt_desc *d, char *err, size_t errlen)
{
	int r;
	d->state_bytes = gpuos_rt_state_bytes(d);
	r = gpuos_sys_alloc_rt(s, d->state_bytes, GPUOS_MEM_VRAM, &s->state, "runtime state", err, errlen);
	if (!r)
		d->state = s->state.rt;
	return r;
}

/* The metadata warp (files and models): its queue pair on each controller,
 * its buffer, and the files region. */
static int desc_meta(struct gpuos_sys *s, struct gpuos_rt_desc *d, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	uint32_t m, qid = gpuos_plan_meta_qid(p);
	char what[64];
	int r;

	if (!p->meta)
		return 0;
	d->meta = 1;
	d->part = s->opts.part;
	if (s->opts.root) /* checked by the plan: absolute and short enough */
		snprintf(d->root, sizeof(d->root), "%s", s->opts.root);
	for (m = 0; m < p->nctrl; m++)
		desc_queue(&d->queue[p->nq + m], &s->sq[p->nq + m], &s->cq[p->nq + m], s->sq_db[p->nq + m],
			   s->cq_db[p->nq + m], qid, p->depth, m);
	d->meta_bounce = s->meta_bounce.rt;
	d->meta_bounce_iova = s->meta_bounce.iova;
	d->meta_prp = s->meta_prp.rt;
	d->meta_prp_iova = s->meta_prp.iova;
	if (s->opts.map_extents)
		d->map_extents = s->opts.map_extents;
	else if (s->opts.files_mib)
		d->map_extents = (uint32_t)(((uint64_t)s->opts.files_mib << 20) / GPUOS_RT_EXTENT_BYTES);
	d->files_bytes = gpuos_rt_files_bytes(d);
	snprintf(what, sizeof(what), "%llu bytes for files and models", (unsigned long long)d->files_bytes);
	r = gpuos_sys_alloc_rt(s, d->files_bytes, GPUOS_MEM_VRAM, &s->files, what, err, errlen);
	if (!r)
		d->files = s->files.rt;
	return r;
}

int gpuos_sys_build_desc(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_rt_desc *d = s->desc = calloc(1, sizeof(*d));
	const char *why;
	int r;

	if (!d)
		return -ENOMEM;
	desc_geometry(s, d);
	r = desc_control(s, d, err, errlen);
	if (r)
		return r;
	desc_regions(s, d);
	desc_queues(s, d);
	r = desc_admin(s, d, err, errlen);
	if (!r)
		r = desc_state(s, d, err, errlen);
	if (!r)
		r = desc_meta(s, d, err, errlen);
	if (r)
		return r;
	if (gpuos_rt_desc_check(d, &why)) {
		snprintf(err, errlen, "runtime descriptor: %s", why);
		return -EINVAL;
	}
	return 0;
}
