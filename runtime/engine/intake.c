/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/intake.c - mailbox intake and answers (docs/design.md,
 * "The request path"): a service warp takes requests from its partition of
 * each mailbox's ring, checks them against the opcode table (runtime/ops.h),
 * enters the reads in its request table or forwards the rest to the
 * metadata warp, and answers every request through finish_slot, which
 * publishes with runtime/answer.h's gpuos_rt_answer like every other
 * completion path. Part of runtime/engine.c's translation unit.
 */

/* A batch counter must be registered memory, 4-byte aligned; on the GPU in
 * VRAM (GPU atomics on pinned host memory do not exist over PCIe). */
GPUOS_INLINE GPUOS_HD int batch_ok(const struct gpuos_rt_desc *d, uint64_t p)
{
	int rg = gpuos_rt_region_of(d, p, 4);
	if (p & 3u || rg < 0)
		return 0;
	return !(d->flags & GPUOS_RT_ON_GPU) || (d->region[rg].flags & GPUOS_RT_REGION_VRAM);
}

/* ---- request completion ------------------------------------------------------ */

/* Lane 0: the DONE stores of a batch of answers (finish_slot with
 * W->defer: reap's and zero_round's). One fence publishes every answer
 * field written so far and the data the lanes copied or zeroed before the
 * last warp sync (it is cumulative); then each DONE is a store that fence
 * made a release (gpuos_rt_answer_done). Pairs with the clients' acquire
 * loads of state. System scope unless every client is a thread of this GPU
 * and every destination is in VRAM. */
GPUOS_INLINE GPUOS_HD void flush_done(const struct gpuos_rt_desc *d, struct rt_warp *W, int sys)
{
	uint32_t i;
	(void)d;
	if (W->ndone == 0)
		return;
	if (sys)
		gpuos_fence_sys();
	else
		gpuos_fence_dev();
	for (i = 0; i < W->ndone; i++)
		gpuos_rt_answer_done((int)W->mdev, rt_slot(W, W->done_list[i]), W->done_batch[i], 1);
	W->ndone = 0;
}

/* Lane 0. Answer mailbox slot `ms` (gpuos_rt_answer): release it to the
 * client at once, at the mailbox's scope (W->mdev: device scope only when
 * every client is a thread of this GPU), or (defer) list it for the next
 * flush_done. batch: the runtime's copy of the request's batch counter,
 * checked at intake (the client's slot is never read again: it could point
 * it anywhere by now). */
GPUOS_INLINE GPUOS_HD void finish_slot(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				       uint32_t status, uint16_t nvme_status, uint64_t result, uint64_t batch)
{
	(void)d;
	(void)w;
	gpuos_rt_answer((int)W->mdev, rt_slot(W, ms), W->defer ? RT_ANSWER_LATER : RT_ANSWER_NOW, status, nvme_status,
			result, batch);
	if (W->defer) {
		W->done_batch[W->ndone] = batch;
		W->done_list[W->ndone++] = ms;
	}
	W->st.requests += 1;
	if (status == GPUOS_ST_OK)
		W->st.bytes += result;
	else
		W->st.errors += 1;
	W->stats_dirty = 1;
}

GPUOS_INLINE GPUOS_HD void finish_req(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ri)
{
	struct rt_req *r = &W->req[ri];
	finish_slot(d, w, W, r->mslot, r->status, r->nvme_status, r->done, r->batch);
	if (gpuos_rt_ms_client(r->mslot))
		W->held[gpuos_rt_ms_client(r->mslot)]--;
	r->active = 0;
	W->nreq--;
	W->active_mask &= ~(1ull << ri);
	W->pending_mask &= ~(1ull << ri);
}

/* Lane 0: finish_slot for a request answered at intake (refused, or with
 * nothing to move), out of line: these paths are cold, and the fewer
 * instructions the service loop spans the better a single warp runs. */
GPUOS_NOINLINE GPUOS_HD static void finish_at_once(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t ms, uint32_t status, uint64_t batch)
{
	finish_slot(d, w, W, ms, status, 0, 0, batch);
}

/* ---- intake -------------------------------------------------------------------- */

/* Lane 0: enter a validated request in the warp's table (intake only runs
 * with a free entry). Returns 1, or 0 when the table is full. */
GPUOS_INLINE GPUOS_HD int enter_req(const struct gpuos_rt_desc *d, struct rt_warp *W, uint32_t ms, uint32_t h,
				    uint64_t off, uint64_t len, uint64_t dst, int rg, uint64_t batch)
{
	uint32_t i;
	static_assert(GPUOS_RT_MAX_REQS_PER_WARP == 64, "request masks are 64 bits");
	if (~W->active_mask != 0) {
		struct rt_req *r;
		i = gpuos_ffs64(~W->active_mask);
		r = &W->req[i];
		r->active = 1;
		W->active_mask |= 1ull << i;
		W->pending_mask |= 1ull << i;
		r->mslot = ms;
		if (gpuos_rt_ms_client(ms))
			W->held[gpuos_rt_ms_client(ms)]++;
		r->status = GPUOS_ST_OK;
		r->nvme_status = 0;
		r->outstanding = 0;
		r->off = off;
		r->end = off + len;
		r->next = off;
		r->dst = dst;
		r->zc = (d->region[rg].flags & GPUOS_RT_REGION_DMA) != 0;
		r->dst_iova = d->region[rg].iova + (dst - d->region[rg].base);
		r->vram = (d->region[rg].flags & GPUOS_RT_REGION_VRAM) != 0;
		r->done = 0;
		r->h = h;
		r->hint = 0;
		r->batch = batch;
		r->seq = ++W->req_seq;
		W->nreq++;
		return 1;
	}
	return 0;
}

/* The request half of a slot (its first 64 bytes), read at once after the
 * acquire of its ring entry: four 16-byte loads in flight, where reading
 * field by field between branches costs an L2 round trip each. */
struct rt_reqcopy {
	uint32_t state;
	uint16_t opcode, flags;
	uint32_t handle, rsvd;
	uint64_t offset, length, dst, arg, batch, tag;
};
static_assert(sizeof(struct rt_reqcopy) == 64 && offsetof(struct rt_reqcopy, batch) == 0x30,
	      "the request half of struct gpuos_mbox_slot");

GPUOS_INLINE GPUOS_HD void read_req(const struct gpuos_mbox_slot *s, struct rt_reqcopy *q)
{
#if GPUOS_ON_GPU
	const uint4 *src = (const uint4 *)s; /* slots are 128-byte aligned */
	uint4 *dst = (uint4 *)q;
	uint4 a = src[0], b = src[1], c = src[2], e = src[3];
	dst[0] = a;
	dst[1] = b;
	dst[2] = c;
	dst[3] = e;
#else
	__builtin_memcpy(q, s, sizeof(*q));
#endif
}

/* Lane 0: where a read of len bytes goes: the registered region holding
 * dst, or -1 when the request was answered at once (nothing to read, or a
 * destination outside registered memory or outside its client's share). */
GPUOS_INLINE GPUOS_HD int read_dst(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				   uint64_t len, uint64_t dst, uint64_t batch)
{
	int rg;
	if (len == 0) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OK, batch);
		return -1;
	}
	rg = gpuos_rt_region_of(d, dst, len);
	/* its share, or memory of its own registered for it alone (rt.h) */
	if (dst == 0 || rg < 0 || (!rt_client_mem(W, ms, dst, len) && d->region[rg].client != gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_DST, batch);
		return -1;
	}
	return rg;
}

/* Client m may read raw bytes (the service's own mailbox: as the runtime
 * allows). The table is written before the client learns of its mailbox
 * (the attach reply), so any request of it comes after. */
GPUOS_INLINE GPUOS_HD int client_may_raw(const struct gpuos_rt_desc *d, uint32_t m)
{
	if (m == 0)
		return 1; /* before any load of d: its cold fields cost an L2 round trip each */
	return (gpuos_load_relaxed_sys32(&((const struct gpuos_rt_client *)(uintptr_t)d->clients)[m - 1u].flags) &
		GPUOS_RT_CLIENT_RAW) != 0;
}

/* Lane 0: hand a file request to the metadata warp with this copy of it,
 * which it serves instead of the slot (files.h); one it refuses (its client
 * holds too many, or the ring has no room) is answered here. */
GPUOS_NOINLINE GPUOS_HD static void forward(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
					    const struct rt_reqcopy *q)
{
	struct gpuos_rt_fwd f;
	uint32_t st;
	f.opcode = q->opcode;
	f.flags = q->flags;
	f.handle = q->handle;
	f.offset = q->offset;
	f.length = q->length;
	f.dst = q->dst;
	f.arg = q->arg;
	f.batch = q->batch;
	f.ms = ms;
	f.rsvd34[0] = f.rsvd34[1] = f.rsvd34[2] = 0;
	st = gpuos_rt_files_forward(d, &f);
	if (st != GPUOS_ST_OK)
		finish_at_once(d, w, W, ms, st, q->batch);
}

/* Lane 0: accept a READ or GGUF_LOAD (see accept). Out of line: the raw
 * read path stays short, and instructions the loop does not run stay out of
 * its way. */
GPUOS_NOINLINE GPUOS_HD static int accept_file(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					       uint32_t ms, uint32_t op, const struct rt_reqcopy *q)
{
	uint64_t off = q->offset, len = q->length, dst = q->dst;
	int rg;
	/* Files and tensors: the handle's extent map (in device memory)
	 * turns file offsets into device offsets; served here. */
	const struct rt_handle *hd;
	uint64_t foff = off;
	uint32_t file = q->handle; /* the handle number whose map holds the bytes */
	/* a file system runs: accept checked it (runtime/ops.h's RT_NEED_FILES) */
	if (q->flags) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_FLAGS, q->batch);
		return 0;
	}
	hd = gpuos_rt_handle(d, q->handle, op == GPUOS_OP_READ ? (1u << H_FILE) | (1u << H_DIR) : 1u << H_MODEL);
	if (!hd || !gpuos_rt_handle_owned(hd, gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_HANDLE, q->batch);
		return 0;
	}
	if (hd->kind == H_DIR) {
		finish_at_once(d, w, W, ms, GPUOS_ST_ISDIR, q->batch);
		return 0;
	}
	if (len > GPUOS_MAX_LENGTH || off + len < off) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OVERFLOW, q->batch);
		return 0;
	}
	if (op == GPUOS_OP_GGUF_LOAD) {
		uint64_t toff, tsize;
		if (gpuos_rt_files_tensor(d, hd, q->arg, &toff, &tsize, &file) || off > tsize ||
		    (len && len > tsize - off)) {
			finish_at_once(d, w, W, ms, GPUOS_ST_BAD_RANGE, q->batch);
			return 0;
		}
		if (len == 0)
			len = tsize - off; /* to the end of the tensor */
		foff = toff + off;
		/* A split model's tensor is read through its shard's map. A CLOSE
		 * racing this load may have put another model in hd's slot (the
		 * race READ has with CLOSE, docs/security.md): whatever shard
		 * that gave, it must be this client's own. */
		if (file != q->handle) {
			const struct rt_handle *sh = gpuos_rt_handle(d, file, 1u << H_SHARD);
			if (!sh || !gpuos_rt_handle_owned(sh, gpuos_rt_ms_client(ms)) ||
			    gpuos_rt_handle(d, q->handle, 1u << H_MODEL) != hd) {
				finish_at_once(d, w, W, ms, GPUOS_ST_BAD_HANDLE, q->batch); /* closed under us */
				return 0;
			}
			hd = sh;
		}
	} else {
		len = off >= hd->size ? 0 : GPUOS_MIN(len, hd->size - off); /* short at EOF */
	}
	rg = read_dst(d, w, W, ms, len, dst, q->batch);
	if (rg < 0)
		return 0;
	if (hd->map == H_MAP_META) {
		forward(d, w, W, ms, q); /* inline data, symlinks: the metadata warp reads them */
		return 0;
	}
	if (enter_req(d, W, ms, file, foff, len, dst, rg, q->batch))
		return 1;
	finish_at_once(d, w, W, ms, GPUOS_ST_NOSPC, q->batch); /* unreachable: refuse rather than drop */
	return 0;
}

/* Lane 0: accept a READ_RAW (RT_ROUTE_RAW, see accept): namespace bytes,
 * for a client with the raw right. Returns 1 if it used a table entry. */
GPUOS_INLINE GPUOS_HD int accept_raw(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				     const struct rt_reqcopy *q)
{
	uint64_t off = q->offset, len = q->length, dst = q->dst;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	int rg;
	if (q->flags) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_FLAGS, q->batch);
		return 0;
	}
	/* RT_NEED_RAW: --allow-raw, and a client given the right */
	if (!(d->flags & GPUOS_RT_ALLOW_RAW) || !client_may_raw(d, gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q->batch);
		return 0;
	}
	if (len > GPUOS_MAX_LENGTH || off + len < off) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OVERFLOW, q->batch);
		return 0;
	}
	if (off + len > ns_bytes) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_RANGE, q->batch);
		return 0;
	}
	rg = read_dst(d, w, W, ms, len, dst, q->batch);
	if (rg < 0)
		return 0;
	if (enter_req(d, W, ms, 0, off, len, dst, rg, q->batch))
		return 1;
	finish_at_once(d, w, W, ms, GPUOS_ST_NOSPC, q->batch); /* unreachable: refuse rather than drop */
	return 0;
}

/* Lane 0: the opcode's row (runtime/ops.h): who answers, what it needs (the
 * raw right is checked on the raw path, after its flags). Returns 1 if the
 * request used a table entry. */
GPUOS_INLINE GPUOS_HD int accept_row(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				     const struct rt_reqcopy *q)
{
	struct rt_op row = rt_op_of(q->opcode);
	if ((row.need & RT_NEED_SERVICE) && gpuos_rt_ms_client(ms)) {
		finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q->batch); /* the service's alone */
		return 0;
	}
	if ((row.need & RT_NEED_FILES) && !d->meta) {
		finish_at_once(d, w, W, ms, GPUOS_ST_NO_FILES, q->batch);
		return 0;
	}
	switch (row.route) {
	case RT_ROUTE_NOP:
		finish_slot(d, w, W, ms, GPUOS_ST_OK, 0, 0, q->batch);
		return 0;
	case RT_ROUTE_FILE:
		return accept_file(d, w, W, ms, q->opcode, q);
	case RT_ROUTE_META:
		forward(d, w, W, ms, q); /* parsers block: the metadata warp answers */
		return 0;
	case RT_ROUTE_RAW:
		return accept_raw(d, w, W, ms, q);
	case RT_ROUTE_REFUSED:
		finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q->batch);
		return 0;
	default:
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_OPCODE, q->batch);
		return 0;
	}
}

/* Lane 0 only. Validate a request just taken; either complete it at once or
 * enter it in the request table. Returns 1 if it used a table entry. */
GPUOS_INLINE GPUOS_HD int accept(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				 uint32_t ms, uint32_t cmd)
{
	struct gpuos_mbox_slot *s = rt_slot(W, ms);
	struct rt_reqcopy q;

	read_req(s, &q);
	/* Mark it ours. The client polls state for DONE meanwhile; relaxed is
	 * enough, TAKEN publishes nothing. */
	gpuos_store_relaxed_sys32(&s->state, GPUOS_SLOT_TAKEN);
#ifdef GPUOS_TRACE
	for (uint32_t k = 0; k < GPUOS_TRACE_STAGES; k++)
		TRACE_STAMP(d, ms, k, k == GPUOS_TRACE_TAKEN ? gpuos_now_ns() : 0);
#endif
	/* The batch counter first: every answer below adds 1 to it, from
	 * this copy (q), which the client cannot change any more. */
	if (q.batch && (!batch_ok(d, q.batch) || !rt_client_mem(W, ms, q.batch, 4))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_DST, 0); /* never touch it */
		return 0;
	}
	if (W->fatal) {
		finish_at_once(d, w, W, ms, GPUOS_ST_CTRL_FATAL, q.batch);
		return 0;
	}
	if (cmd == GPUOS_RT_CMD_STOP) {
		finish_at_once(d, w, W, ms, GPUOS_ST_STOPPING, q.batch);
		return 0;
	}
	return accept_row(d, w, W, ms, &q);
}


/* Warp w's partition of mailbox m's ring (per entries). The layout is the
 * runtime's own, from the descriptor (a client's header is not trusted). */
GPUOS_INLINE GPUOS_HD const uint32_t *rt_ring(const struct rt_warp *W, uint32_t w, uint32_t m, uint32_t per)
{
	return (const uint32_t *)(uintptr_t)(m ? rt_mbox(W, m) + W->cring : W->ring0) + w * per;
}

/* Take new requests from this warp's partition of mailbox m (0: the
 * service's own, else client m's): lanes read the next 32 entries at once;
 * a prefix of entries already written is taken in ring order. An entry is
 * new when it carries the lap of its position (abi.h), so no counter is
 * read first: one load per lane per loop, one round trip. An entry not yet
 * written (its client is between fetch_add and store) stops the batch; the
 * next loop comes back to it. At most `per` positions are ever outstanding
 * (each needs a slot of the partition), so an entry of an old lap is never
 * mistaken for a new one. A client takes at most GPUOS_RT_CLIENT_QUOTA of
 * the warp's request table, so that none starves the others. */
GPUOS_INLINE GPUOS_HD int intake_mbox(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t cmd,
				      uint32_t m)
{
	struct rt_intake *in = m ? &W->cin[m - 1u] : &W->in0;
	uint32_t per = m ? W->cper : W->per;
	const uint32_t *ring = rt_ring(W, w, m, per);
	uint32_t base = (m << GPUOS_RT_MS_CLIENT_SHIFT) | (w * per);
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	int dev = W->mdev;
	uint32_t taken = 0;

	for (;;) {
		uint32_t consumed = in->consumed;
		uint32_t room = GPUOS_RT_MAX_REQS_PER_WARP - W->nreq;
		uint32_t k = width, n, i, idx, lap, e = 0;
		int ok;
		if (m && room > GPUOS_RT_CLIENT_QUOTA - W->held[m])
			room = GPUOS_RT_CLIENT_QUOTA - W->held[m];
		if (m && room) { /* its requests with the metadata warp count too (files.h) */
			uint32_t f = GPUOS_RT_FWD_QUOTA - gpuos_rt_files_room(d, m);
			room = room > f ? room - f : 0;
		}
		if (!W->fatal && cmd != GPUOS_RT_CMD_STOP && k > room)
			k = room; /* a failed or stopping warp answers at once: no table entry needed */
		if (k == 0)
			break;
		/* Position consumed + lane: its index in the ring and its lap,
		 * counted on from the ones of `consumed`; as the clients count
		 * them (pos % per, pos / per) where the 32-bit position wraps. */
		idx = in->ring_idx + lane;
		lap = in->ring_lap;
		if (consumed + lane < consumed) {
			idx = (consumed + lane) % per;
			lap = ((consumed + lane) / per + 1u) & 0xffffu;
		}
		while (idx >= per) {
			idx -= per;
			lap = (lap + 1u) & 0xffffu;
		}
		ok = lane < k;
		if (ok) {
			/* Pairs with the client's release store of the entry. */
			e = gpuos_mbox_load_acquire(dev, &ring[idx]);
			ok = (e >> 16) == lap && (e & 0xffffu) < per;
		}
		n = gpuos_warp_ballot(ok);
		n = (~n == 0u) ? 32u : gpuos_ffs(~n);
		if (n > k)
			n = k;
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			uint32_t slot = gpuos_warp_bcast32(e & 0xffffu, i);
			if (lane == 0)
				accept(d, w, W, base + slot, cmd);
		}
		gpuos_warp_sync();
		if (lane == 0) {
			in->consumed = consumed + n;
			in->ring_idx += n;
			while (in->ring_idx >= per) {
				in->ring_idx -= per;
				in->ring_lap = (in->ring_lap + 1u) & 0xffffu;
			}
			if (in->consumed < consumed) { /* wrapped: count as the clients do */
				in->ring_idx = in->consumed % per;
				in->ring_lap = (in->consumed / per + 1u) & 0xffffu;
			}
		}
		gpuos_warp_sync();
		taken += n;
		if (n < k)
			break; /* the rest is not posted yet */
	}
	return (int)taken;
}

/* A service's client mailboxes: one lane per client looks at the next
 * entry of its ring, all in one round trip; only those with one get the
 * full intake, from a different first client each loop (round robin).
 * Out of line: a runtime without clients never comes here. */
GPUOS_NOINLINE GPUOS_HD static int intake_clients(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t cmd)
{
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width(), nc = W->nclients, first, taken = 0;
	const struct gpuos_rt_doors *D = (const struct gpuos_rt_doors *)(uintptr_t)d->doors;
	/* One word for the warp (broadcast: it steers a loop of warp-wide
	 * ballots). Pairs with the service's release of it after the epoch
	 * (boot/sys/sys_mem.c, doors_publish). */
	uint32_t open = gpuos_warp_bcast32(gpuos_load_acquire_sys32(&D->open), 0);

	for (first = 0; first < nc && open; first += width) {
		uint32_t m = 1u + (W->rr_client + first + lane) % nc, mask;
		int ok = first + lane < nc && ((open >> (m - 1u)) & 1u);
		if (ok) {
			struct rt_intake *in = &W->cin[m - 1u];
			/* The epoch pairs with the service's release of it after it
			 * gave the area a fresh mailbox; the entry with the client's
			 * release store. */
			uint32_t ep = gpuos_load_acquire_sys32(&D->epoch[m - 1u]);
			uint32_t e = gpuos_load_acquire_sys32(&rt_ring(W, w, m, W->cper)[in->ring_idx]);
			if (ep != W->cepoch[m - 1u]) { /* closed, or a new client: its ring starts again */
				W->cepoch[m - 1u] = ep;
				in->consumed = 0;
				in->ring_idx = 0;
				in->ring_lap = 1;
				e = 0; /* read at the old position */
			}
			if (gpuos_rt_epoch_closed(ep))
				e = 0; /* nothing more from a client that left */
			ok = (e >> 16) == in->ring_lap && (e & 0xffffu) < W->cper;
		}
		mask = gpuos_warp_ballot(ok);
		while (mask) {
			uint32_t l = gpuos_ffs(mask);
			mask &= mask - 1u;
			taken += (uint32_t)intake_mbox(d, w, W, cmd, 1u + (W->rr_client + first + l) % nc);
		}
	}
	gpuos_warp_sync();
	if (lane == 0)
		W->rr_client = (W->rr_client + 1u) % nc;
	gpuos_warp_sync();
	return (int)taken;
}

/* clients: a constant (see serve_loop). On the GPU a service's own mailbox,
 * in host memory, is looked at every 16th loop only: a read across PCIe in
 * every loop of every warp slows its clients' requests, and only the service
 * posts there (RELEASE of a share). */
GPUOS_INLINE GPUOS_HD int intake(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t cmd,
				 const int clients)
{
	int taken = 0;
	if (!clients || !GPUOS_ON_GPU || W->m0vram || cmd != GPUOS_RT_CMD_RUN || (W->iter & 15u) == 0)
		taken = intake_mbox(d, w, W, cmd, 0);
	if (clients)
		taken += intake_clients(d, w, W, cmd);
	return taken;
}
