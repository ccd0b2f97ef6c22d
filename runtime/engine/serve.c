/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/serve.c - the service loop (docs/design.md, "The request
 * path"). One warp = one owner of its queue pairs, its command slots and
 * its mailbox partition: no locks between warps. Each loop it reaps its
 * completions, takes new requests, submits what they need, and now and
 * then follows the host's command word, resets and timeouts. Also the
 * runtime's entry points for boot (include/gpuos/internal/rt.h): its sizes
 * and the descriptor's check. Part of runtime/engine.c's translation unit.
 */

/* ---- sizes and the descriptor ----------------------------------------------------- */

/* Bytes of one warp's block: its state and its queue pairs. */
GPUOS_HD uint64_t gpuos_rt_local_bytes(const struct gpuos_rt_desc *d)
{
	return gpuos_align_line(gpuos_align_line(sizeof(struct rt_warp)) + (uint64_t)(d->nqueues / d->nwarps) * sizeof(struct gpuos_qp));
}

GPUOS_HD uint64_t gpuos_rt_state_bytes(const struct gpuos_rt_desc *d)
{
	return gpuos_align_line(sizeof(struct rt_state)) + (uint64_t)d->nwarps * gpuos_rt_local_bytes(d);
}

GPUOS_HD struct rt_recover *gpuos_rt_recover(const struct gpuos_rt_desc *d)
{
	return &((struct rt_state *)(uintptr_t)d->state)->rec;
}

/* The metadata warp's queue of controller m is queue[nqueues + m]. */
static int meta_queues(const struct gpuos_rt_desc *d)
{
	uint32_t m;
	for (m = 0; m < d->nctrl; m++)
		if (d->queue[d->nqueues + m].depth < 2)
			return 0;
	return 1;
}

/* Queue k of each warp belongs to controller k % nctrl (plan and submit
 * pick a controller's queue by that rule), as the descriptor says. */
static int queues_by_member(const struct gpuos_rt_desc *d)
{
	uint32_t qpw = d->nqueues / d->nwarps, q;
	for (q = 0; q < d->nqueues; q++)
		if (d->queue[q].ctrl != (q % qpw) % d->nctrl)
			return 0;
	for (q = 0; d->meta && q < d->nctrl; q++)
		if (d->queue[d->nqueues + q].ctrl != q)
			return 0;
	return 1;
}

int gpuos_rt_desc_check(const struct gpuos_rt_desc *d, const char **why)
{
	const char *w = 0;
	if (d->magic != GPUOS_RT_MAGIC || d->version != GPUOS_ABI_VERSION)
		w = "descriptor magic or version";
	else if (d->nwarps == 0 || d->nwarps > GPUOS_RT_MAX_WARPS)
		w = "service warps out of range";
	else if (d->nqueues < d->nwarps || d->nqueues > GPUOS_RT_MAX_QUEUES || d->nqueues % d->nwarps)
		w = "queues must be a multiple of the service warps";
	else if (d->nctrl == 0 || d->nctrl > GPUOS_RT_MAX_CTRL || (d->nctrl > 1 && d->stripe_lbas == 0))
		w = "controllers out of range, or an array without a stripe size";
	else if ((d->nqueues / d->nwarps) % d->nctrl || !queues_by_member(d))
		w = "every service warp needs the same number of queues of every controller";
	else if (d->slots_per_warp == 0 || d->slots_per_warp > GPUOS_RT_MAX_SLOTS_PER_WARP)
		w = "command slots per warp out of range";
	else if (d->xfer_bytes < 4096u || d->xfer_bytes % 4096u || d->xfer_bytes > GPUOS_RT_MAX_XFER)
		w = "transfer size must be a multiple of 4 KiB, at most " GPUOS_STRINGIFY(GPUOS_RT_MAX_XFER_KIB) " KiB";
	else if (d->lba_shift < 9 || d->lba_shift > 12)
		w = "LBA size must be 512..4096 bytes";
	else if (d->nregions > GPUOS_RT_MAX_REGIONS)
		w = "too many regions";
	else if (d->state_bytes < gpuos_rt_state_bytes(d))
		w = "state too small";
	else if (d->mbox_nslots == 0 || d->mbox_nslots % d->nwarps)
		w = "mailbox slots must be a multiple of the service warps";
	else if (d->mbox_nslots > GPUOS_RT_MBOX_MAX_SLOTS)
		w = "at most " GPUOS_STRINGIFY(GPUOS_RT_MBOX_MAX_SLOTS) " mailbox slots";
	else if (d->nclients > GPUOS_RT_MAX_CLIENTS ||
		 (d->nclients && (d->nclients != d->nshares || !d->clients)))
		w = "clients out of range, or without a share and a table each";
	else if (d->nclients && (d->cmbox_nslots == 0 || d->cmbox_nslots % d->nwarps ||
				 d->cmbox_nslots > GPUOS_RT_MBOX_MAX_SLOTS ||
				 d->cmbox_bytes < gpuos_mbox_bytes(d->cmbox_nslots) || d->cmbox_bytes >= d->share_len))
		w = "client mailboxes do not fit their shares";
	else if (d->ngpu_clients > d->nclients ||
		 (d->ngpu_clients && (!d->gpu_area_base || d->cmbox_bytes >= d->gpu_area_len)))
		w = "GPU client areas out of range, or too small for their mailboxes";
	else if (d->meta && (d->files_bytes < gpuos_rt_files_bytes(d) || !d->files || !meta_queues(d)))
		w = "files region or metadata queues missing";
	if (why)
		*why = w;
	return w ? -EINVAL : 0;
}

/* ---- statistics ---------------------------------------------------------------------- */

/* Statistics are counted in the warp's own state (device memory) and
 * published to the control block (host memory, read by the host at any
 * time) with relaxed stores now and then: never a read across PCIe per
 * request. */
GPUOS_NOINLINE GPUOS_HD static void publish_stats(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	struct gpuos_rt_stats *o = &ctl->stats[w];
	gpuos_store_relaxed_sys64(&o->requests, W->st.requests);
	gpuos_store_relaxed_sys64(&o->bytes, W->st.bytes);
	gpuos_store_relaxed_sys64(&o->errors, W->st.errors);
	gpuos_store_relaxed_sys64(&o->commands, W->st.commands);
	gpuos_store_relaxed_sys64(&o->timeouts, W->st.timeouts);
	gpuos_store_relaxed_sys64(&o->doorbells, W->st.doorbells);
	gpuos_store_relaxed_sys64(&o->polls, W->st.polls);
	gpuos_store_relaxed_sys64(&o->inflight, d->slots_per_warp - W->nfree);
	gpuos_store_relaxed_sys64(&o->zero_copy, W->st.zero_copy);
	gpuos_store_relaxed_sys64(&o->strays, W->st.strays);
	gpuos_store_relaxed_sys64(&o->aborts, W->st.aborts);
	gpuos_store_relaxed_sys64(&o->resets, W->st.resets);
	gpuos_store_relaxed_sys64(&o->retries, W->st.retries);
	gpuos_store_relaxed_sys64(&o->duplicates, W->st.duplicates);
	gpuos_store_relaxed_sys64(&o->untrusted, W->st.untrusted);
	for (uint32_t m = 0; m < d->nctrl; m++)
		gpuos_store_relaxed_sys32(&o->dup_by_ctrl[m], W->st.dup_by_ctrl[m]);
	W->stats_dirty = 0;
}

/* ---- the loop ------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD static void warp_init(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t qpw = d->nqueues / d->nwarps;
	uint32_t s, k;

	for (k = 0; k < qpw; k++)
		gpuos_rt_queue_start(rt_qp(W, k), d, &d->queue[w * qpw + k]);
	W->nfree = 0;
	W->free_head = 0;
	for (s = 0; s < d->slots_per_warp; s++) {
		W->slot[s].gen = 0;
		W->slot[s].q = ~0u; /* no command yet: any completion for it is a stray */
		slot_put(W, s);
	}
	W->nretry = 0;
	W->req_seq = 0;
	W->nreq = 0;
	W->active_mask = 0;
	W->pending_mask = 0;
	W->rr_q = 0;
	W->rr_req = 0;
	for (k = 0; k <= GPUOS_RT_MAX_CLIENTS; k++) {
		struct rt_intake *in = k ? &W->cin[k - 1u] : &W->in0;
		in->consumed = 0;
		in->ring_idx = 0;
		in->ring_lap = 1; /* position 0 is in lap 0, tagged 1 (abi.h) */
		W->held[k] = 0;
		if (k)
			W->cepoch[k - 1u] = 0;
	}
	W->rr_client = 0;
	W->fatal = 0;
	W->inited = 1;
}

/* Copy n bytes (a multiple of 8, both 8-byte aligned), all lanes together;
 * the caller syncs the warp before anyone reads the copy. */
GPUOS_INLINE GPUOS_HD void warp_copy_words(void *dst, const void *src, uint64_t n)
{
	uint64_t *dq = (uint64_t *)dst;
	const uint64_t *sq = (const uint64_t *)src;
	uint64_t i;
	for (i = gpuos_lane_id(); i < n / 8u; i += gpuos_warp_width())
		dq[i] = sq[i];
}

/* The service loop of warp w until park or stop; clients is a constant. */
GPUOS_INLINE GPUOS_HD void serve_loop(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, const int clients)
{
	uint32_t lane = gpuos_lane_id();
	uint32_t idle = 0, cmd = GPUOS_RT_CMD_RUN;

	for (;;) {
		int work = 0;
		uint64_t it = W->iter;

		/* Read now and then, not per loop: on the GPU an L2 round trip
		 * (boot keeps it in VRAM), in host mode a shared line. Pairs with
		 * the host's release store (set_cmd). */
		if ((it & 31u) == 0)
			cmd = gpuos_warp_bcast32(gpuos_load_acquire_sys32((const uint32_t *)(uintptr_t)d->cmd), 0);
		if ((it & 255u) == 0 && !W->fatal)
			check_csts(d, w, W);
		/* A reset (runtime/recover.h): looked at with cmd, every loop while
		 * one keeps us from the queues (no reaping, no submitting). */
		if (W->rec || (it & 31u) == 0) {
			if (lane == 0) {
				uint32_t word = gpuos_rt_rec_word(gpuos_rt_recover(d));
				if (W->rec || rt_rec_phase(word) != RT_PH_RUN)
					rec_follow(d, w, W, word);
			}
			gpuos_warp_sync();
		}
		/* Nothing in flight: no CQ to look at. Nothing left to submit: no
		 * SQ to fill. Each skipped step saves loads that miss L1. */
		if (W->nfree != d->slots_per_warp && !W->rec)
			work += reap(d, w, W);
		if (cmd != GPUOS_RT_CMD_PARK)
			work += intake(d, w, W, cmd, clients);
		if (!W->fatal && (W->pending_mask || W->nretry) && !W->rec)
			work += submit(d, w, W);
		if ((it & 255u) == 0)
			check_timeouts(d, w, W);
		gpuos_warp_sync();
		if (lane == 0) {
			W->iter = it + 1;
			W->st.polls += 1;
			if ((it & 1023u) == 0 || (!work && W->stats_dirty))
				publish_stats(d, w, W);
		}
		gpuos_warp_sync();
		if (cmd != GPUOS_RT_CMD_RUN) {
			/* Park: finish what was taken, take nothing new. Stop: also answer
			 * every posted request (STOPPING) before leaving. Zombies drain
			 * too (their completion, or a reset, ends them): a slot the
			 * controller may still answer must not outlive our queues'
			 * state. Nobody leaves during a reset (it counts on us). */
			uint32_t busy = 0, s, go = 0;
			for (s = 0; s < d->slots_per_warp; s++)
				busy += W->slot[s].busy == SLOT_BUSY || W->slot[s].busy == SLOT_RETRY ||
					(W->slot[s].busy == SLOT_ZOMBIE && !W->fatal);
			if (W->nreq == 0 && busy == 0 && lane == 0)
				go = (uint32_t)gpuos_rt_rec_leave(gpuos_rt_recover(d));
			if (gpuos_warp_bcast32(go, 0)) {
				if (cmd == GPUOS_RT_CMD_STOP)
					intake(d, w, W, cmd, clients); /* answer what is still posted */
				break;
			}
		}
		/* Quiet: poll fast for a while (the next request is often a few
		 * microseconds away), then back off. */
		if (work)
			idle = 0;
		else if (++idle > (GPUOS_ON_GPU ? 4096u : 64u))
			gpuos_backoff(&idle);
	}
}

GPUOS_HD void gpuos_rt_warp_run(const struct gpuos_rt_desc *d, uint32_t w, void *local, uint64_t local_bytes)
{
	struct rt_warp *G = rt_warp(d, w), *W = G;
	uint32_t lane = gpuos_lane_id();

	(void)local;
	(void)local_bytes;
	if (lane == 0 && !G->inited)
		warp_init(d, w, G);
	gpuos_warp_sync();
#if GPUOS_ON_GPU
	/* The warp's block is private: work on a copy in shared memory, which
	 * the acquire loads of the loop do not evict (global state costs an
	 * L2 round trip per access after each of them). Always, so that the
	 * compiler sees shared-memory addresses (not generic ones) in all the
	 * loop's bookkeeping. The kernel reserves room for the largest
	 * configuration; copied back when the warp leaves, so park/resume
	 * keep everything. */
	if (gpuos_rt_local_bytes(d) > local_bytes)
		__trap(); /* cannot happen: gpuos_rt_desc_check bounds the queues */
	W = (struct rt_warp *)local;
	warp_copy_words(W, G, gpuos_rt_local_bytes(d));
	gpuos_warp_sync();
#endif
	if (lane == 0) {
		W->qpw = d->nqueues / d->nwarps;
		W->per = d->mbox_nslots / d->nwarps;
		W->cper = d->cmbox_nslots / d->nwarps;
		W->nclients = d->nclients;
		W->mdev = (uint32_t)mbox_dev(d);
		W->m0vram = (d->flags & GPUOS_RT_MBOX_DEVICE) != 0;
		W->ring0 = d->mbox + sizeof(struct gpuos_mbox) + (uint64_t)d->mbox_nslots * sizeof(struct gpuos_mbox_slot);
		W->nhost = d->nclients - d->ngpu_clients;
		W->clen = d->share_len;
		W->glen = d->gpu_area_len;
		for (uint32_t m = 0; m <= d->nclients && m <= GPUOS_RT_MAX_CLIENTS; m++)
			W->mbox[m] = gpuos_rt_mbox_of(d, m);
		W->cmbytes = d->cmbox_bytes;
		W->cring = sizeof(struct gpuos_mbox) + (uint64_t)d->cmbox_nslots * sizeof(struct gpuos_mbox_slot);
		W->qpm = W->qpw / d->nctrl;
		W->nrung = 0;
		/* The CID: as few bits for the slot as slots_per_warp needs, the
		 * rest for the generation (slots_per_warp is the plan's, the same
		 * at every launch of a runtime, so in-flight CIDs keep their sense
		 * across park and resume). */
		for (W->sbits = 1; (1u << W->sbits) < d->slots_per_warp; W->sbits++)
			;
		W->smask = (1u << W->sbits) - 1u;
		W->gmask = 0xffffu >> W->sbits;
		/* Count in as a participant of resets; queues of a controller reset
		 * while we were away start from zero. */
		gpuos_rt_rec_enter(d, gpuos_rt_recover(d));
		rec_follow(d, w, W, gpuos_rt_rec_word(gpuos_rt_recover(d)));
	}
	gpuos_warp_sync();
	/* Two copies of the loop: without client mailboxes the intake makes no
	 * call (a call in the loop cost 0.4 us a request on the H100). */
	if (W->nclients)
		serve_loop(d, w, W, 1);
	else
		serve_loop(d, w, W, 0);
	gpuos_warp_sync();
	if (lane == 0)
		publish_stats(d, w, W);
	gpuos_warp_sync();
	if (W != G) {
		warp_copy_words(G, W, gpuos_rt_local_bytes(d));
		gpuos_warp_sync();
	}
	if (lane == 0 && d->meta) {
		/* Our state is back in device memory; pairs with the metadata
		 * warp's acquire of exits (and the host's wait for the kernel). */
		gpuos_rt_files_warp_exit(d); /* after our last forward to the metadata warp */
	}
}
