/* SPDX-License-Identifier: MIT */
/*
 * The controllers of a system (boot/sys/sys_internal.h): bring-up of every
 * controller of the device, the number of queues, the I/O queue pairs, the
 * SMART log and the way back (delete queues, CC.SHN). One controller at a
 * time through boot/ctrl/bringup.h; an error from an array's member names it.
 * A group's runtimes (sys_group.c) use their owner's controllers: its
 * nvme[] and admin queues, under its admin_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sys_internal.h"

/* "NAME: reason" for a member of an array, the reason alone otherwise. */
static void member_err(const struct gpuos_sys *s, uint32_t m, uint32_t n, const char *e, char *err, size_t errlen)
{
	if (n > 1)
		snprintf(err, errlen, "%s: %s", s->ctrl->member[m].name, e);
	else
		snprintf(err, errlen, "%s", e);
}

/* The namespace the runtime serves and the limits every controller keeps
 * (boot/sys/sys_plan.h). */
static int plan_device(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_plan_ctrl c[GPUOS_CTRL_MAX_MEMBERS];
	uint32_t m;
	for (m = 0; m < s->nctrl; m++) {
		const struct gpuos_nvme_dev *n = &s->nvme[m];
		c[m].name = s->ctrl->member[m].name;
		c[m].mqes = n->mqes;
		c[m].mdts_bytes = n->mdts_bytes;
		c[m].to_ms = n->to_ms;
		c[m].lba_bytes = n->lba_bytes;
		c[m].nsid = n->nsid;
		c[m].ns_lbas = n->ns_lbas;
	}
	return gpuos_plan_device(c, s->nctrl, s->ctrl->stripe_kib, &s->dev, err, errlen);
}

int gpuos_sys_bring_up(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t m;
	int r;
	r = gpuos_ctrl_open(s->opts.device, s->gpu, s->opts.force, s->opts.sim_vram, &s->ctrl, err, errlen);
	if (r)
		return r;
	if (s->ctrl->notice[0] && !s->opts.quiet)
		fprintf(stderr, "gpuos: %s\n", s->ctrl->notice);
	for (m = 0; m < s->ctrl->nmembers; m++) {
		char e[400];
		if (s->ctrl->ops->identity) { /* no registers: nothing to enable, nothing up */
			s->ctrl->ops->identity(s->ctrl, m, &s->nvme[m]);
			continue;
		}
		r = gpuos_nvme_enable(&s->nvme[m], s->ctrl, m, e, sizeof(e));
		if (r) {
			member_err(s, m, s->ctrl->nmembers, e, err, errlen);
			return r;
		}
		s->nvme_up = m + 1;
	}
	s->nctrl = s->ctrl->nmembers;
	return plan_device(s, err, errlen);
}

int gpuos_sys_set_queues(struct gpuos_sys *s, uint32_t want, char *err, size_t errlen)
{
	uint32_t m;
	for (m = 0; m < s->nctrl; m++) {
		char e[400];
		int r = 0;
		if (s->ctrl->ops->grant)
			s->nvme[m].io_queues = s->ctrl->ops->grant(s->ctrl, want);
		else
			r = gpuos_nvme_set_queues(&s->nvme[m], want, e, sizeof(e));
		if (r) {
			member_err(s, m, s->nctrl, e, err, errlen);
			return r;
		}
		s->io_queues = m ? GPUOS_MIN(s->io_queues, s->nvme[m].io_queues) : s->nvme[m].io_queues;
	}
	return 0;
}

/* Queue pair i of the runtime's, on controller m as qid. */
static int create_qpair(struct gpuos_sys *s, uint32_t i, uint32_t m, uint32_t qid, char *err, size_t errlen)
{
	struct gpuos_sys *o = gpuos_sys_ctrls(s);
	int r;
	pthread_mutex_lock(&o->admin_lock);
	r = gpuos_nvme_create_qpair(&o->nvme[m], qid, s->plan.depth, s->sq[i].iova, s->cq[i].iova, err, errlen);
	pthread_mutex_unlock(&o->admin_lock);
	if (!r) {
		s->nq[m] = qid; /* qids of a controller come in increasing order */
		s->sq_db[i] = gpuos_nvme_sq_db_rt(&o->nvme[m], qid);
		s->cq_db[i] = gpuos_nvme_cq_db_rt(&o->nvme[m], qid);
	}
	return r;
}

int gpuos_sys_create_queues(struct gpuos_sys *s, char *err, size_t errlen)
{
	const struct gpuos_plan *p = &s->plan;
	uint32_t q, m;
	int r;

	if (s->ctrl->ops->queues)
		return s->ctrl->ops->queues(s->ctrl, p->nq, p->depth, s->sq, s->cq, s->sq_db, s->cq_db, err, errlen);
	for (q = 0; q < p->nq; q++) {
		r = gpuos_sys_alloc_qpair(s, q);
		if (r) {
			snprintf(err, errlen, "allocate I/O queue %u: %s", q + 1, strerror(-r));
			return r;
		}
		r = create_qpair(s, q, gpuos_plan_queue_ctrl(p, q), gpuos_plan_queue_qid(p, q), err, errlen);
		if (r)
			return r;
	}
	/* The metadata warp's queue pair on each controller, after the service warps' */
	for (m = 0; p->meta && m < s->nctrl; m++) {
		r = gpuos_sys_alloc_qpair(s, p->nq + m);
		if (r) {
			snprintf(err, errlen, "allocate the metadata queue: %s", strerror(-r));
			return r;
		}
		r = create_qpair(s, p->nq + m, m, gpuos_plan_meta_qid(p), err, errlen);
		if (r)
			return r;
	}
	return 0;
}

int gpuos_sys_delete_queues(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_sys *o = gpuos_sys_ctrls(s);
	uint32_t m, q;
	int r = 0, r2;
	/* its own qids only: a group's other runtimes' lie below qid_base
	 * and above its highest */
	pthread_mutex_lock(&o->admin_lock);
	for (m = 0; m < o->nvme_up; m++) {
		/* A controller that left one admin command unanswered answers
		 * no more (each would wait CAP.TO): its queues go with CC.EN = 0
		 * at shutdown (NVMe 3.7.2). The error is the first one. */
		for (q = s->nq[m]; q > s->plan.qid_base && !(o->admin_dead & 1u << m); q--) {
			r2 = gpuos_nvme_delete_qpair(&o->nvme[m], q, r ? NULL : err, r ? 0 : errlen);
			if (r2 == -ETIMEDOUT)
				o->admin_dead |= 1u << m;
			if (r2 && !r)
				r = r2;
		}
		s->nq[m] = 0;
	}
	pthread_mutex_unlock(&o->admin_lock);
	return r;
}

int gpuos_sys_shutdown_ctrls(struct gpuos_sys *s, char *err, size_t errlen)
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

/* NVMe 5.16.1.3 (SMART / Health Information), through the host's side of
 * the admin queue: a running runtime may be using it (aborts, resets), so
 * gpuos_sys_ctrl_stats parks it around the read. */
int gpuos_sys_smart_read(struct gpuos_sys *s, uint32_t m, struct gpuos_nvme_smart_log *out)
{
	struct gpuos_sys *o = gpuos_sys_ctrls(s);
	struct gpuos_nvme_dev *d = &o->nvme[m];
	struct gpuos_nvme_sqe cmd;
	char e[256];
	int r;
	if (m >= o->nvme_up || !d->buf.host)
		return -EOPNOTSUPP;
	memset(&cmd, 0, sizeof(cmd));
	cmd.opc = GPUOS_NVME_ADMIN_GET_LOG_PAGE;
	cmd.nsid = 0xffffffffu; /* the controller as a whole */
	cmd.prp1 = d->buf.iova;
	cmd.cdw10 = GPUOS_NVME_LOG_SMART | ((uint32_t)(sizeof(*out) / 4u - 1u) << 16); /* NUMDL, 0's based */
	/* a group's runtimes may ask from their own threads (their services) */
	pthread_mutex_lock(&o->admin_lock);
	r = gpuos_nvme_admin(d, &cmd, NULL, "get log page (SMART)", e, sizeof(e));
	if (!r)
		memcpy(out, d->buf.host, sizeof(*out));
	pthread_mutex_unlock(&o->admin_lock);
	return r;
}
