/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/nvme.c - a service warp's NVMe commands (docs/design.md,
 * "The request path", "The scheduler"): plan turns its requests into
 * commands (raw device bytes, or a file's by its handle's extent map, split
 * by transfer size and array chunk, holes zero-filled instead), submit
 * writes their SQEs a lane each and rings once a batch, reap reads CQEs a
 * lane each and copies bounced data out. One command's SQE, its retry rule
 * and its completion are runtime/nvme_cmd.h's, which the metadata warp's
 * reads use too. Part of runtime/engine.c's translation unit.
 */

/* ---- data movement ------------------------------------------------------------- */

/* Copy len bytes, all lanes of the warp together. The caller fences (each
 * lane its own writes) before the lane that publishes DONE does so. */
GPUOS_INLINE GPUOS_HD void warp_copy(void *dst, const void *src, uint64_t len)
{
#if GPUOS_ON_GPU
	uint32_t lane = gpuos_lane_id();
	char *d = (char *)dst;
	const char *s = (const char *)src;
	uint64_t i = 0;
	if ((((uintptr_t)d | (uintptr_t)s) & 15u) == 0) {
		uint64_t n16 = len / 16u, k = lane;
		const uint4 *s4 = (const uint4 *)s;
		uint4 *d4 = (uint4 *)d;
		/* Eight loads in flight per lane before the stores: the source is
		 * in L2 at best, and one load at a time pays its latency each
		 * time (4 KiB took 1.8 us so on an H100). */
		for (; k + 7u * 32u < n16; k += 8u * 32u) {
			uint4 v[8];
#pragma unroll
			for (uint32_t j = 0; j < 8u; j++)
				v[j] = s4[k + j * 32u];
#pragma unroll
			for (uint32_t j = 0; j < 8u; j++)
				d4[k + j * 32u] = v[j];
		}
		for (; k < n16; k += 32u)
			d4[k] = s4[k];
		i = n16 * 16u;
	} else if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0) {
		uint64_t n4 = len / 4u;
		for (uint64_t k = lane; k < n4; k += 32u)
			((uint32_t *)d)[k] = ((const uint32_t *)s)[k];
		i = n4 * 4u;
	}
	for (uint64_t k = i + lane; k < len; k += 32u)
		d[k] = s[k];
#else
	__builtin_memcpy(dst, src, (size_t)len);
#endif
}

/* ---- submission ------------------------------------------------------------------ */

/* All lanes, after plan: the zeros it listed (holes and unwritten extents
 * of files), then the requests that ended with them. Lane 0 alone took 14 us
 * a 4 KiB hole on the H100: a file with a hole every 64 KiB streamed at a
 * tenth of the rate of the same file without (docs/benchmarks-log.md). */
GPUOS_NOINLINE GPUOS_HD static void zero_round(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					       uint32_t lane, uint32_t width)
{
	uint32_t k, nz = W->nzero;
	for (k = 0; k < nz; k++)
		gpuos_buf_zero_lanes((void *)(uintptr_t)W->zdst[k], W->zlen[k], lane, width);
	/* The lanes' zeros happen before lane 0's fence in flush_done through
	 * this sync: the grid-barrier pattern, as for SQEs. */
	gpuos_warp_sync();
	if (lane == 0) {
		/* Answered as a batch, as reap answers (flush_done: one fence, then
		 * the DONE stores; done_list holds GPUOS_WARP_MAX of them). Its
		 * scope is the mailbox's (system unless every client is a thread
		 * of this GPU), and system scope too when any zeros are in host
		 * memory, as for complete_cmd's copies: flush_done's fence,
		 * cumulative through the sync above, makes the lanes' stores
		 * visible there before the DONE stores. */
		int sys = !W->mdev;
		for (k = 0; k < W->nzdone; k++)
			sys |= !W->req[W->zdone[k]].vram;
		W->defer = 1;
		for (k = 0; k < W->nzdone; k++) {
			finish_req(d, w, W, W->zdone[k]);
			if (W->ndone == GPUOS_WARP_MAX)
				flush_done(d, W, sys);
		}
		flush_done(d, W, sys);
		W->defer = 0;
		W->nzero = 0;
		W->nzdone = 0;
	}
	/* Lane 0's reset of the lists before any lane reads them again. */
	gpuos_warp_sync();
}

/* Lane 0, plan: commands to send again come first, in the order they
 * failed: their slots, bytes and CIDs (a new generation, complete_rare) are
 * set. One that finds no room (this round's batch, or its controller's
 * queue) stays queued for the next round: deferred, never lost. Only RETRY
 * slots are ever in retry[], each once (every other way out of RETRY takes
 * its entry out too: drop_ctrl, go_fatal). Returns the commands planned. */
GPUOS_INLINE GPUOS_HD uint32_t plan_retries(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					    uint32_t base, uint32_t max, uint32_t *cmds, const int array)
{
	uint32_t i, k = 0, n = 0;
	for (i = 0; i < W->nretry; i++) {
		uint32_t s = W->retry[i], q = base, ahead = n;
		struct rt_slot *sl = &W->slot[s];
		struct rt_req *r = &W->req[sl->req];
		if (r->status != GPUOS_ST_OK) {
			/* Its request failed meanwhile: nothing to send for it. */
			slot_put(W, s);
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
			continue;
		}
		if (n >= max) {
			W->retry[k++] = s;
			continue;
		}
		if (array) {
			/* queue k of the warp is controller k % nctrl's */
			struct gpuos_qp *aq;
			q = base + sl->q % d->nctrl;
			aq = rt_qp(W, q);
			if (aq->ahead >= gpuos_qp_sq_space(aq)) {
				W->retry[k++] = s;
				continue;
			}
			if (aq->ahead == 0)
				W->rung[W->nrung++] = q;
			ahead = aq->ahead++;
		}
		sl->busy = SLOT_BUSY;
		sl->q = q;
		sl->ahead = (uint16_t)ahead;
		W->st.retries += 1;
		cmds[n++] = s;
	}
	W->nretry = k;
	return n;
}

/* Lane 0, plan: where request ri's next byte lies, *dev (device bytes) and
 * *run (how many continue there, at most what it still needs), *zero when
 * they read as zeros. Returns 1 when it failed instead: its handle was
 * closed under it. */
GPUOS_INLINE GPUOS_HD int plan_map(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ri,
				   uint64_t *dev, uint64_t *run, int *zero)
{
	struct rt_req *r = &W->req[ri];
	const struct rt_handle *hd;
	if (r->h == 0) {
		*dev = r->next;
		*run = r->end - r->next;
	} else if (!(hd = gpuos_rt_handle(d, r->h, (1u << H_FILE) | (1u << H_MODEL) | (1u << H_SHARD))) ||
		   gpuos_rt_files_map(d, hd, r->next, dev, run, zero, &r->hint)) {
		/* The handle was closed under us: its map may hold another
		 * file's extents now (the pool is shared), so stop here. */
		r->status = GPUOS_ST_CORRUPT;
		W->pending_mask &= ~(1ull << ri);
		/* after zeros listed for it this round, if any may be */
		if (r->outstanding == 0 && W->nzero)
			W->zdone[W->nzdone++] = ri;
		else if (r->outstanding == 0)
			finish_req(d, w, W, ri);
		return 1;
	}
	*run = GPUOS_MIN(*run, r->end - r->next);
	return 0;
}

/* Lane 0, plan: request ri's next `run` bytes at device byte dev (not
 * zeros) as one command, cmds[n], on queue base + the controller holding
 * them. Returns 0 when that queue has no room this round (the rest waits
 * for the next round), else 1. */
GPUOS_INLINE GPUOS_HD int plan_cmd(const struct gpuos_rt_desc *d, struct rt_warp *W, uint32_t ri, uint32_t base,
				   uint64_t dev, uint64_t run, uint32_t *cmds, uint32_t n, const int array)
{
	struct rt_req *r = &W->req[ri];
	uint64_t lbs = 1ull << d->lba_shift, iova = r->dst_iova + (r->next - r->off);
	uint64_t lba = dev >> d->lba_shift, clba = lba, span0 = lba << d->lba_shift;
	uint64_t chunk = GPUOS_MIN(run, span0 + d->xfer_bytes - dev);
	uint32_t zc = 0, q = base, ahead = n, s;
	struct rt_slot *sl;
	if (array) {
		/* Never past the end of the array chunk: the next LBAs live on
		 * another controller. */
		struct gpuos_qp *aq;
		uint32_t m;
		uint64_t left = gpuos_rt_stripe_map(d, lba, &m, &clba);
		if (left < (uint64_t)d->xfer_bytes >> d->lba_shift)
			chunk = GPUOS_MIN(chunk, (left << d->lba_shift) - (dev - span0));
		/* on that controller's queue of this round, if it has room */
		q = base + m;
		aq = rt_qp(W, q);
		if (aq->ahead >= gpuos_qp_sq_space(aq))
			return 0;
		if (aq->ahead == 0)
			W->rung[W->nrung++] = q; /* at most one per command of the batch */
		ahead = aq->ahead++;
	}
	/* Zero copy: whole LBAs straight into the destination, when it starts
	 * on an LBA of the device and on a dword (PRP1, NVMe 4.1.1). A short
	 * tail goes through the bounce buffer next. */
	if (r->zc && dev == span0 && chunk >= lbs && (iova & 3u) == 0) {
		chunk &= ~(lbs - 1u);
		zc = 1;
	}
	s = slot_take(W);
	sl = &W->slot[s];
	sl->tries = 0;
	sl->flags = 0;
	sl->zc = (uint8_t)zc;
	sl->iova = iova;
	W->st.zero_copy += zc;
	sl->busy = SLOT_BUSY;
	sl->req = ri;
	sl->rseq = r->seq;
	sl->q = q;
	sl->ahead = (uint16_t)ahead;
	W->st.commands += 1;
	sl->lba = clba; /* the controller's LBA */
	sl->src_off = (uint32_t)(dev - span0);
	sl->copy_len = (uint32_t)chunk;
	sl->dst = r->dst + (r->next - r->off);
	sl->nlb = (uint32_t)((dev + chunk - span0 + lbs - 1u) >> d->lba_shift);
	r->next += chunk;
	r->outstanding++;
	cmds[n] = s;
	return 1;
}

/* Lane 0: plan up to `max` commands into cmds[] (slot indices). Returns
 * the count. The SQEs are written by all lanes afterwards. A command covers
 * whole LBAs of one contiguous device range: of the raw device, or of one
 * extent of a file (the handle's map), and of one chunk of an array
 * (gpuos_rt_stripe_map). Holes and unwritten extents are listed for
 * zero_round, at most xfer_bytes per step and GPUOS_WARP_MAX steps a round.
 * Each command goes on queue base + m of the warp, m the controller that
 * holds its LBAs (queue k of a warp belongs to controller k % nctrl,
 * gpuos_rt_desc_check). With one controller that is queue base, and the
 * caller's max is what it has room for; with several (`array`, a constant
 * at each call), each queue's room is checked per command, and the queues
 * written are listed in rung[]. */
GPUOS_INLINE GPUOS_HD uint32_t plan(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t base,
				    uint32_t max, uint32_t *cmds, const int array)
{
	uint32_t n = W->nretry ? plan_retries(d, w, W, base, max, cmds, array) : 0, steps = 0;

	while (n < max && steps < max && W->nfree > 0 && W->pending_mask) {
		/* The next pending request at or after rr_req, round robin. */
		uint64_t later = W->pending_mask & (~0ull << W->rr_req), dev, run;
		uint32_t ri = W->rr_req = gpuos_ffs64(later ? later : W->pending_mask);
		struct rt_req *r = &W->req[ri];
		int zero = 0;

		if (plan_map(d, w, W, ri, &dev, &run, &zero))
			continue;
		if (zero) {
			uint64_t chunk = GPUOS_MIN(run, (uint64_t)d->xfer_bytes);
			if (W->nzero == GPUOS_WARP_MAX)
				break; /* this round's list is full: the rest next round */
			W->zdst[W->nzero] = r->dst + (r->next - r->off);
			W->zlen[W->nzero++] = (uint32_t)chunk;
			r->next += chunk;
			r->done += chunk;
			steps++;
		} else if (plan_cmd(d, W, ri, base, dev, run, cmds, n, array)) {
			n++;
		} else {
			break; /* its queue is full: the rest waits for the next round */
		}
		/* Spread a large request: the next chunk may go to another queue,
		 * so move on to the next request only when this one is all planned. */
		if (r->next >= r->end) {
			W->pending_mask &= ~(1ull << ri);
			W->rr_req = (ri + 1u) % GPUOS_RT_MAX_REQS_PER_WARP;
			/* It was all zeros: finished once they are written. */
			if (r->outstanding == 0 && zero)
				W->zdone[W->nzdone++] = ri;
			else if (r->outstanding == 0)
				finish_req(d, w, W, ri);
		}
	}
	return n;
}

/* Any lane: build the SQE of command slot s (warp w) into place `ahead` of
 * queue qp; a PRP list, when it needs one, in the slot's own page. */
GPUOS_INLINE GPUOS_HD void build_sqe(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				     struct gpuos_qp *qp, uint32_t ahead, uint32_t s)
{
	struct rt_slot *sl = &W->slot[s];
	uint32_t gs = w * d->slots_per_warp + s;
	uint64_t iova = sl->zc ? sl->iova : d->bounce_iova + (uint64_t)gs * d->xfer_bytes;
	uint64_t page = (uint64_t)gs * GPUOS_NVME_PAGE_SIZE;

	gpuos_rt_cmd_read(d, qp, ahead, rt_cid(W, s), sl->lba, sl->nlb, iova, (uint64_t *)(uintptr_t)(d->prp + page),
			  d->prp_iova + page);
}

/* Lane 0: publish a batch written to several queues (an array's round):
 * one fence, then each queue's doorbell. */
GPUOS_INLINE GPUOS_HD void ring_rung(const struct gpuos_rt_desc *d, struct rt_warp *W)
{
	uint32_t i;
	/* Publish every SQE of the batch (DMA memory) before any controller
	 * sees a new tail; pairs with each controller's SQE fetch after it
	 * reads its doorbell. Device scope where the controller is this GPU
	 * (gpu-null). */
	if (d->flags & GPUOS_RT_QUEUES_DEVICE)
		gpuos_fence_dev();
	else
		gpuos_fence_sys();
	for (i = 0; i < W->nrung; i++) {
		struct gpuos_qp *rq = rt_qp(W, W->rung[i]);
		gpuos_qp_sq_advance(rq, rq->ahead);
		rq->ahead = 0;
	}
	W->st.doorbells += W->nrung;
	W->nrung = 0;
}

/* Lane 0: plan a round on queue base (see plan) and stamp its commands. */
GPUOS_INLINE GPUOS_HD uint32_t plan_round(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					  uint32_t base, struct gpuos_qp *qp, const int array)
{
	uint32_t max = GPUOS_WARP_MAX, n, i;
	if (!array)
		max = GPUOS_MIN(max, gpuos_qp_sq_space(qp));
	n = plan(d, w, W, base, max, W->cmds, array);
	if (n) {
		uint64_t now = gpuos_now_ns();
		for (i = 0; i < n; i++)
			W->slot[W->cmds[i]].t_submit = now;
	}
	return n;
}

/* All lanes: plan and submit what the warp's requests still need, a
 * round per queue. `array` is a constant at each call (submit below), so
 * the one-controller path is compiled without the array's steps: branched
 * around, they cost it 0.6 us of round trip and 3.6 % of requests/s on
 * gpu-null (docs/benchmarks-log.md). */
GPUOS_INLINE GPUOS_HD int submit_rounds(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, const int array)
{
	uint32_t qpm = W->qpm;
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint32_t *cmds = W->cmds;
	uint32_t k, total = 0;

	/* Round k fills queue j = rr_q + k (mod qpm) of every controller: queue
	 * j * nctrl + m of the warp is controller m's. A batch of up to 32
	 * commands a round; one fence for it and a doorbell per queue written. */
	for (k = 0; k < qpm; k++) {
		uint32_t j = W->rr_q + k >= qpm ? W->rr_q + k - qpm : W->rr_q + k; /* both < qpm */
		uint32_t base = array ? j * d->nctrl : j, one = !array;
		struct gpuos_qp *qp = rt_qp(W, base); /* the batch's queue with one controller */
		uint32_t n = 0, i;

		if (lane == 0)
			n = plan_round(d, w, W, base, qp, array);
		/* The slots lane 0 just planned (and cmds[], rung[], the zeros'
		 * lists) are read by every lane below. */
		gpuos_warp_sync();
		n = gpuos_warp_bcast32(n, 0);
		if (W->nzero)
			zero_round(d, w, W, lane, width);
		if (n == 0) {
			gpuos_warp_sync();
			if (W->nfree == 0)
				break;
			continue;
		}
		for (i = lane; i < n; i += width) {
			/* One controller: command i is entry i of queue base. */
			const struct rt_slot *sl = &W->slot[cmds[i]];
			build_sqe(d, w, W, one ? qp : rt_qp(W, sl->q), one ? i : sl->ahead, cmds[i]);
		}
		/* The lanes' SQE writes happen before lane 0's fence below through
		 * this sync (the grid-barrier pattern: sync, then one thread fences
		 * and signals), so one fence publishes the whole batch. */
		gpuos_warp_sync();
		if (lane == 0 && one) {
			/* One fence and one doorbell store for the batch (in gpuos_qp_sq_ring). */
			gpuos_qp_sq_ring(qp, n);
			W->st.doorbells += 1;
		} else if (lane == 0) {
			ring_rung(d, W);
		}
		if (lane == 0) {
#ifdef GPUOS_TRACE
			for (i = 0; i < n; i++) {
				const struct rt_slot *sl = &W->slot[cmds[i]];
				if (sl->dst == W->req[sl->req].dst) /* the request's first command */
					TRACE_STAMP(d, W->req[sl->req].mslot, GPUOS_TRACE_RUNG, gpuos_now_ns());
			}
#endif
			W->stats_dirty = 1; /* commands and retries were counted by plan */
		}
		gpuos_warp_sync();
		total += n;
	}
	if (lane == 0)
		W->rr_q = W->rr_q + 1u >= qpm ? 0 : W->rr_q + 1u;
	gpuos_warp_sync();
	return (int)total;
}

GPUOS_NOINLINE GPUOS_HD static int submit_array(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	return submit_rounds(d, w, W, 1);
}

GPUOS_INLINE GPUOS_HD int submit(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	return d->nctrl > 1 ? submit_array(d, w, W) : submit_rounds(d, w, W, 0);
}

/* ---- completion ------------------------------------------------------------------ */

/* Lane 0: a second completion of slot sl's last command, reaped on the
 * warp's queue k. Evidence, not noise: a controller that completes a command
 * twice may have completed it before its data landed, or may write it again
 * (docs/design.md, "The life of a command"). Counted by controller; its
 * request, if still unanswered, fails with DUP_CQE, also when its answer was
 * written in this reap pass but not yet published (flush_done). A request
 * answered before the duplicate came cannot be taken back: the counters (and
 * the tools that print them) are what tells. */
GPUOS_NOINLINE GPUOS_HD static void dup_cqe(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t k,
					    const struct rt_slot *sl)
{
	struct rt_req *r = &W->req[sl->req];
	uint32_t i;
	W->st.duplicates += 1;
	W->st.dup_by_ctrl[k % d->nctrl] += 1;
	W->stats_dirty = 1;
	if (r->seq != sl->rseq)
		return; /* the entry holds a later request: this one was answered long ago */
	if (r->active) {
		if (r->status == GPUOS_ST_OK) {
			r->status = GPUOS_ST_DUP_CQE;
			W->st.untrusted += 1;
		}
		W->pending_mask &= ~(1ull << sl->req); /* submit no more of it */
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
		return;
	}
	for (i = 0; i < W->ndone; i++) {
		struct gpuos_mbox_slot *m = rt_slot(W, W->done_list[i]);
		if (W->done_list[i] != r->mslot || r->status != GPUOS_ST_OK)
			continue;
		/* Answered in this pass, DONE not stored yet: the client reads
		 * nothing of the slot before it (flush_done's fence). */
		m->status = GPUOS_ST_DUP_CQE;
		m->result = 0;
		r->status = GPUOS_ST_DUP_CQE;
		W->st.bytes -= r->done;
		W->st.errors += 1;
		W->st.untrusted += 1;
	}
}

/* Lane 0: a completion off the common path (complete_cmd), reaped on the
 * warp's queue k. */
GPUOS_NOINLINE GPUOS_HD static void complete_rare(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t k, uint16_t cid, uint16_t st)
{
	uint32_t s = cid & W->smask, g = (uint32_t)cid >> W->sbits;
	struct rt_slot *sl = &W->slot[s < d->slots_per_warp ? s : 0];
	struct rt_req *r;
	if (s < d->slots_per_warp && sl->q == k &&
	    ((sl->busy == SLOT_FREE && sl->gen == g) ||
	     (sl->busy == SLOT_RETRY && ((sl->gen - 1u) & W->gmask) == g))) {
		dup_cqe(d, w, W, k, sl); /* of a command that completed, or failed and waits to go again */
		return;
	}
	if (s >= d->slots_per_warp || sl->q != k || sl->busy == SLOT_FREE || sl->busy == SLOT_RETRY || sl->gen != g) {
		/* Nothing in flight has this CID on this queue: counted and
		 * dropped (a controller's bug, a duplicate of a command whose slot
		 * moved on, or a completion the reset overtook). */
		W->st.strays += 1;
		W->stats_dirty = 1;
		return;
	}
	r = &W->req[sl->req];
	if (sl->busy == SLOT_BUSY && r->status == GPUOS_ST_OK) {
		/* Failed with DNR clear: the same command again (its slot, bytes
		 * and destination), a bounded number of times. A new generation
		 * at once: a second copy of this completion is a duplicate, never
		 * a second retry, and the command sent again has a CID of its own. */
		sl->busy = SLOT_RETRY;
		sl->gen = (uint16_t)((sl->gen + 1u) & W->gmask);
		sl->tries++;
		W->retry[W->nretry++] = s;
		return;
	}
	if (sl->busy == SLOT_BUSY) {
		/* Its request failed already: nothing to send again for it. */
		slot_put(W, s);
		r->outstanding--;
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
		return;
	}
	/* A command that timed out came back (done, or aborted): its slot is
	 * free again, and a request that waited for it (HELD: its data could
	 * still land) may be answered now. Its status stays TIMEOUT. */
	slot_put(W, s);
	if (sl->flags & SL_HELD) {
		r->outstanding--;
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
	}
	(void)st;
}

/* All lanes: handle one CQE of warp w, reaped on its queue k. Returns 1
 * when data went to memory that needs a system-scope fence before DONE.
 * t_ctrl: the controller's stamp in the CQE (trace builds with gpu-null),
 * t_reap: when it was read. */
GPUOS_INLINE GPUOS_HD int complete_cmd(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t k,
				       uint16_t cid, uint16_t cqe_status, uint64_t t_ctrl, uint64_t t_reap)
{
	uint32_t lane = gpuos_lane_id();
	uint16_t st = gpuos_nvme_status_of(cqe_status);
	struct rt_slot *sl;
	struct rt_req *r;
	uint32_t s = cid & W->smask;

	int sys = !W->mdev;

	(void)t_ctrl; /* stamped in trace builds only */
	(void)t_reap;
	sl = &W->slot[s < d->slots_per_warp ? s : 0];
	if (s >= d->slots_per_warp || sl->busy != SLOT_BUSY || sl->gen != ((uint32_t)cid >> W->sbits) || sl->q != k ||
	    gpuos_rt_cmd_retry(d, st, sl->tries)) {
		/* Off the common path: a stray, a duplicate, a command that timed
		 * out, one to send again. All lanes read the slot before lane 0
		 * changes it. */
		gpuos_warp_sync();
		if (lane == 0)
			complete_rare(d, w, W, k, cid, st);
		gpuos_warp_sync();
		return 0;
	}
	r = &W->req[sl->req];
	if (st == 0 && r->status == GPUOS_ST_OK) {
		if (!sl->zc) {
			uint32_t gs = w * d->slots_per_warp + s;
			const char *src = (const char *)(uintptr_t)(d->bounce + (uint64_t)gs * d->xfer_bytes) +
					  sl->src_off;
			/* The data came by DMA before the CQE; the CQE acquire in
			 * gpuos_qp_cq_peek orders these reads after it. */
			warp_copy((void *)(uintptr_t)sl->dst, src, sl->copy_len);
		}
		/* Host memory (copied, or written by the controller) reaches a
		 * client through a system-scope DONE. */
		sys |= !r->vram;
	}
	gpuos_warp_sync();
	if (lane == 0) {
		TRACE_STAMP(d, r->mslot, GPUOS_TRACE_CTRL, t_ctrl);
		TRACE_STAMP(d, r->mslot, GPUOS_TRACE_REAPED, t_reap);
		if (st != 0) {
			if (r->status == GPUOS_ST_OK) {
				r->status = GPUOS_ST_NVME;
				W->pending_mask &= ~(1ull << sl->req); /* submit no more of it */
				r->nvme_status = st;
			}
		} else if (r->status == GPUOS_ST_OK) {
			r->done += sl->copy_len;
		}
		slot_put(W, s);
		r->outstanding--;
		if (r->outstanding == 0 && (r->next >= r->end || r->status != GPUOS_ST_OK))
			finish_req(d, w, W, sl->req);
	}
	gpuos_warp_sync();
	return sys;
}

GPUOS_INLINE GPUOS_HD int reap(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t qpw = W->qpw;
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint32_t k;
	int total = 0;

	for (k = 0; k < qpw; k++) {
		struct gpuos_qp *qp = rt_qp(W, k);
		uint32_t consumed = 0;
		uint16_t last_sqhd = 0;
		uint64_t t_ctrl = 0, t_reap = 0; /* stage stamps, trace builds */
		int sys = !W->mdev;

		for (;;) {
			struct gpuos_nvme_cqe e;
			uint32_t ahead = consumed + lane;
			int ok = ahead < qp->depth ? gpuos_qp_cq_peek(qp, ahead, &e) : 0;
			uint32_t mask = gpuos_warp_ballot(ok);
			/* Only a prefix of posted entries counts: entries after a gap
			 * are not the controller's yet in our pass. */
			uint32_t n = (~mask == 0u) ? 32u : gpuos_ffs(~mask);
			uint32_t i;
			if (n > width)
				n = width;
			if (n == 0)
				break;
			if (lane == 0)
				W->defer = 1;
			gpuos_warp_sync();
#ifdef GPUOS_TRACE
			t_reap = gpuos_now_ns();
#endif
			for (i = 0; i < n; i++) {
				uint16_t cid = (uint16_t)gpuos_warp_bcast32(ok ? e.cid : 0, i);
				uint16_t status = (uint16_t)gpuos_warp_bcast32(ok ? e.status : 0, i);
#ifdef GPUOS_TRACE
				t_ctrl = gpuos_warp_bcast32(ok ? e.dw0 : 0, i) |
					 (uint64_t)gpuos_warp_bcast32(ok ? e.dw1 : 0, i) << 32;
#endif
				sys |= complete_cmd(d, w, W, k, cid, status, t_ctrl, t_reap);
			}
			/* The data the lanes copied happens before lane 0's fence in
			 * flush_done through this sync; that one fence publishes it
			 * with the completions (as in submit). */
			gpuos_warp_sync();
			if (lane == 0) {
				flush_done(d, W, sys);
				W->defer = 0;
			}
			/* The SQ head of the batch's last entry, used only now: its
			 * load (after the acquire in gpuos_qp_cq_peek) overlapped the
			 * work above rather than delaying it. */
			last_sqhd = (uint16_t)gpuos_warp_bcast32(ok ? e.sqhd : 0, n - 1u);
			gpuos_warp_sync();
			consumed += n;
			if (consumed + width > qp->depth - 1u)
				break; /* never look a full lap ahead */
		}
		if (consumed) {
			if (lane == 0)
				gpuos_qp_cq_consume(qp, consumed, last_sqhd);
			gpuos_warp_sync();
			total += (int)consumed;
		}
	}
	return total;
}
