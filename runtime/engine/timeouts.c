/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/timeouts.c - a service warp's commands that do not end
 * well (docs/design.md, "The life of a command"): a command late by a
 * timeout (gpuos_rt_cmd_late's steps: Abort, then a controller reset), the
 * warp's part in resets (runtime/recover.h's one follower, as the metadata
 * warp's), and a controller that failed for good. Lane 0 unless a function
 * says otherwise; every path here is cold. Part of runtime/engine.c's
 * translation unit.
 */

GPUOS_NOINLINE GPUOS_HD static void go_fatal(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t why,
					     uint32_t csts);

/* Lane 0: fail the request of slot s (timed out or controller dead). The
 * slot becomes a ZOMBIE: never reused while the controller may answer it.
 * A request whose data the controller writes itself (zero copy) is held
 * until the command ends; one that bounces is answered now (the bounce
 * buffer is the slot's, and stays so). */
GPUOS_INLINE GPUOS_HD void abandon(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				   uint32_t s, uint32_t status)
{
	struct rt_slot *sl = &W->slot[s];
	struct rt_req *r = &W->req[sl->req];
	sl->busy = SLOT_ZOMBIE;
	sl->flags = 0;
	if (r->status == GPUOS_ST_OK)
		r->status = status;
	W->pending_mask &= ~(1ull << sl->req);
	if (sl->zc && status == GPUOS_ST_TIMEOUT) {
		sl->flags = SL_HELD;
		return;
	}
	r->outstanding--;
	if (r->outstanding == 0)
		finish_req(d, w, W, sl->req);
}

/* Lane 0: end every command of this warp on controller m, which a reset
 * has stopped (phase DROP: it writes nothing any more). Their requests
 * fail with CTRL_RESET; zombies are simply over. Queues restart on RUN. */
GPUOS_NOINLINE GPUOS_HD static void drop_ctrl(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t m)
{
	uint32_t s, i, k;
	for (s = 0; s < d->slots_per_warp; s++) {
		struct rt_slot *sl = &W->slot[s];
		struct rt_req *r = &W->req[sl->req];
		if (sl->busy == SLOT_FREE || sl->q % d->nctrl != m)
			continue;
		if (sl->busy == SLOT_BUSY || sl->busy == SLOT_RETRY || (sl->flags & SL_HELD)) {
			if (r->status == GPUOS_ST_OK)
				r->status = GPUOS_ST_CTRL_RESET;
			W->pending_mask &= ~(1ull << sl->req);
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		}
		slot_put(W, s);
	}
	/* Retries queued for m were dropped above (their slots are FREE now). */
	for (i = k = 0; i < W->nretry; i++)
		if (W->slot[W->retry[i]].busy == SLOT_RETRY)
			W->retry[k++] = W->retry[i];
	W->nretry = k;
}

/* The warp as a participant of resets (struct rt_rec_part). */
struct warp_part {
	const struct gpuos_rt_desc *d;
	uint32_t w;
	struct rt_warp *W;
};

/* DROP: every command of the warp on controller m ends (drop_ctrl). */
GPUOS_HD static void warp_drop(void *ctx, uint32_t m)
{
	struct warp_part *p = (struct warp_part *)ctx;
	drop_ctrl(p->d, p->w, p->W, m);
}

/* RUN again: queues of controller m start from zero, as the controller's
 * re-created ones do. */
GPUOS_HD static void warp_restart(void *ctx, uint32_t m)
{
	struct warp_part *p = (struct warp_part *)ctx;
	uint32_t k;
	for (k = m; k < p->W->qpw; k += p->d->nctrl)
		gpuos_rt_queue_start(rt_qp(p->W, k), p->d, &p->d->queue[p->w * p->W->qpw + k]);
}

/* Warp w as the participant p of runtime/recover.h's follower (wp: its
 * context, which p points to). */
GPUOS_INLINE GPUOS_HD void warp_part(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				     struct warp_part *wp, struct rt_rec_part *p)
{
	wp->d = d;
	wp->w = w;
	wp->W = W;
	p->epoch = &W->rec_epoch;
	p->gen = W->rec_gen;
	p->drop = warp_drop;
	p->restart = warp_restart;
	p->ctx = wp;
}

/* Lane 0: follow the reset protocol (runtime/recover.h) from the word.
 * Returns 1 while a reset keeps this warp from its queues. */
GPUOS_NOINLINE GPUOS_HD static int rec_follow(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t word)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	struct warp_part wp;
	struct rt_rec_part part;
	warp_part(d, w, W, &wp, &part);
	if (gpuos_rt_rec_follow(d, word, &part))
		return W->rec = 1;
	if (gpuos_rt_dead(rs) && !W->fatal)
		go_fatal(d, w, W, gpuos_load_relaxed_dev32(&rs->dead_why), gpuos_load_relaxed_dev32(&rs->dead_csts));
	return W->rec = 0;
}

/* Lane 0: reset controller m, or take part in the reset another
 * participant started (gpuos_rt_rec_reset); then follow wherever the word
 * stands (RUN again, dead, or another's reset: the loop goes on following
 * it). */
GPUOS_NOINLINE GPUOS_HD static void rec_reset(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t m)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	struct warp_part wp;
	struct rt_rec_part part;
	warp_part(d, w, W, &wp, &part);
	W->st.resets += (uint64_t)gpuos_rt_rec_reset(d, m, &part);
	rec_follow(d, w, W, gpuos_rt_rec_word(rs));
}

/* Lane 0: slot s is late (BUSY or ZOMBIE past the timeout, at `now`): the
 * next of gpuos_rt_cmd_late's steps. A BUSY one fails its request first
 * (abandon). Aborted: its completion (aborted or done) frees the slot. An
 * Abort not sent now (admin queue busy) goes again next time. Aborted a
 * whole timeout ago: reset its controller, or fail the runtime when it
 * cannot be reset. */
GPUOS_INLINE GPUOS_HD void slot_late(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t s,
				     uint64_t now)
{
	struct rt_slot *sl = &W->slot[s];
	uint32_t m = sl->q % d->nctrl;
	int sent;
	if (sl->busy == SLOT_BUSY) {
		abandon(d, w, W, s, GPUOS_ST_TIMEOUT);
		W->st.timeouts += 1;
		sl->t_submit = now;
	}
	if ((sl->flags & SL_ABORTED) && !(sl->busy == SLOT_ZOMBIE && now - sl->t_submit > d->timeout_ns))
		return;
	switch (gpuos_rt_cmd_late(d, m, (uint16_t)rt_qp(W, sl->q)->qid, rt_cid(W, s), (sl->flags & SL_ABORTED) != 0,
				  &sent)) {
	case RT_LATE_ABORTED:
		sl->flags |= SL_ABORTED;
		sl->t_submit = now;
		W->st.aborts += (uint64_t)sent;
		break;
	case RT_LATE_RESET:
		rec_reset(d, w, W, m);
		break;
	case RT_LATE_STUCK:
		go_fatal(d, w, W, GPUOS_RT_FATAL_STUCK | m << 8, /* nothing more the runtime can do */
			 d->csts[m] ? gpuos_mmio_read32((const volatile uint32_t *)(uintptr_t)d->csts[m]) : 0u);
		break;
	default:
		break;
	}
}

/* All lanes: find the warp's late commands, a lane a slot; lane 0 takes
 * each one a step further (slot_late). */
GPUOS_NOINLINE GPUOS_HD static void check_timeouts(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint64_t now = gpuos_now_ns();
	uint32_t i;

	for (i = 0; i < d->slots_per_warp; i += width) {
		uint32_t s = i + lane;
		/* At the controller: BUSY, or ZOMBIE (timed out, aborted). A RETRY
		 * slot waits in retry[] and is at no controller: its clock starts
		 * when it is sent again. */
		int late = s < d->slots_per_warp &&
			   (W->slot[s].busy == SLOT_BUSY || W->slot[s].busy == SLOT_ZOMBIE) &&
			   now - W->slot[s].t_submit > d->timeout_ns;
		uint32_t mlate = gpuos_warp_ballot(late);
		gpuos_warp_sync();
		if (lane == 0) {
			while (mlate && !W->rec && !W->fatal) {
				uint32_t b = gpuos_ffs(mlate);
				mlate &= mlate - 1u;
				if (W->slot[i + b].busy != SLOT_BUSY && W->slot[i + b].busy != SLOT_ZOMBIE)
					continue; /* a reset just ended it */
				slot_late(d, w, W, i + b, now);
			}
			W->stats_dirty = 1;
		}
		gpuos_warp_sync();
	}
}

/* Lane 0: the controller is dead; fail everything in flight and all new work. */
GPUOS_NOINLINE GPUOS_HD static void go_fatal(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t why,
					     uint32_t csts)
{
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	uint32_t s, i;

	W->fatal = 1;
	/* Every warp comes here; the first says why (the CAS from NONE: the
	 * others follow the same failure, maybe seen later or otherwise). Its
	 * CSTS is ordered before the host's read by its release of the state
	 * below. */
	if (gpuos_cas_acquire_sys32(&ctl->fatal_why, GPUOS_RT_FATAL_NONE, why) == GPUOS_RT_FATAL_NONE)
		gpuos_store_relaxed_sys32(&ctl->fatal_csts, csts);
	for (s = 0; s < d->slots_per_warp; s++) {
		struct rt_slot *sl = &W->slot[s];
		if (sl->busy == SLOT_RETRY) {
			/* Waiting to be sent again: not at the controller, so
			 * nothing of it can land. Each RETRY slot once (retry[] is
			 * emptied below, not walked). */
			struct rt_req *r = &W->req[sl->req];
			if (r->status == GPUOS_ST_OK)
				r->status = GPUOS_ST_CTRL_FATAL;
			W->pending_mask &= ~(1ull << sl->req);
			slot_put(W, s);
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		} else if (sl->busy == SLOT_BUSY) {
			abandon(d, w, W, s, GPUOS_ST_CTRL_FATAL);
		} else if (sl->busy == SLOT_ZOMBIE && (sl->flags & SL_HELD)) {
			/* The controller is gone: nothing more will land. */
			struct rt_req *r = &W->req[sl->req];
			sl->flags &= (uint8_t)~SL_HELD;
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		}
	}
	W->nretry = 0;
	/* Requests not fully submitted: fail them now. */
	for (i = 0; i < GPUOS_RT_MAX_REQS_PER_WARP; i++) {
		struct rt_req *r = &W->req[i];
		if (r->active && r->outstanding == 0) {
			r->status = GPUOS_ST_CTRL_FATAL;
			finish_req(d, w, W, i);
		}
	}
	gpuos_store_release_sys32(&ctl->state, GPUOS_RT_STATE_FATAL);
}

/* All lanes: read each controller's CSTS. A fatal status is what a reset
 * is for (NVMe 10.5 in the base spec's error handling: the host resets the
 * controller); one the runtime cannot reset, or a controller gone (all
 * ones), fails the whole array, as a dead disk fails a RAID-0. */
GPUOS_NOINLINE GPUOS_HD static void check_csts(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t m;
	for (m = 0; m < d->nctrl; m++) {
		uint32_t csts;
		if (!d->csts[m])
			continue;
		csts = gpuos_warp_bcast32(gpuos_mmio_read32((const volatile uint32_t *)(uintptr_t)d->csts[m]), 0);
		gpuos_warp_sync();
		if ((csts & GPUOS_NVME_CSTS_CFS) || csts == 0xffffffffu) {
			if (gpuos_lane_id() == 0) {
				struct rt_recover *rs = gpuos_rt_recover(d);
				if (gpuos_rt_dead(rs) & (1u << m)) /* a reset failed: its reason */
					go_fatal(d, w, W, gpuos_load_relaxed_dev32(&rs->dead_why),
						 gpuos_load_relaxed_dev32(&rs->dead_csts));
				else if (csts != 0xffffffffu && gpuos_rt_can_reset(d, m))
					rec_reset(d, w, W, m);
				else
					go_fatal(d, w, W,
						 (csts == 0xffffffffu ? GPUOS_RT_FATAL_GONE : GPUOS_RT_FATAL_CFS) | m << 8,
						 csts);
			}
			gpuos_warp_sync();
			return;
		}
	}
}
