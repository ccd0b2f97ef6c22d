/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_loop.c - the metadata warp's loop (files.h): the ring the
 * service warps forward requests through, the replies, the dispatch of a
 * request to its operation, and the loop itself with its part in resets.
 */
#include "answer.h"
#include "files_internal.h"
#include "ops.h"

#define FILES_MAGIC 0x73656c66u /* "fles" */

GPUOS_HD uint64_t gpuos_rt_files_bytes(const struct gpuos_rt_desc *d)
{
	if (!d->meta)
		return 0;
	return off_pool(d) + gpuos_align_line((uint64_t)map_extents(d) * sizeof(struct gpuos_fs_extent));
}

/* ---- the service warps' side ------------------------------------------------------ */

/* Forwarded requests a client may hold at most: twice its quota (warps
 * that looked at its room at the same moment may each take some), and
 * never more than its mailbox's slots, so that the clients together never
 * fill the ring (meta_ring_len) and the service's own mailbox always finds
 * room. */
GPUOS_INLINE GPUOS_HD uint32_t fwd_cap(const struct gpuos_rt_desc *d)
{
	return GPUOS_MIN(2u * GPUOS_RT_FWD_QUOTA, d->cmbox_nslots);
}

GPUOS_NOINLINE GPUOS_HD uint32_t gpuos_rt_files_room(const struct gpuos_rt_desc *d, uint32_t m)
{
	uint32_t h;
	if (!d->meta || m == 0 || m > GPUOS_RT_MAX_CLIENTS)
		return GPUOS_RT_FWD_QUOTA;
	/* A hint, relaxed: the forward itself counts exactly. */
	h = gpuos_load_relaxed_dev32(&files_of(d)->fwd_held[m]);
	return h >= GPUOS_RT_FWD_QUOTA ? 0 : GPUOS_RT_FWD_QUOTA - h;
}

GPUOS_NOINLINE GPUOS_HD uint32_t gpuos_rt_files_forward(const struct gpuos_rt_desc *d, const struct gpuos_rt_fwd *f)
{
	struct rt_files *F = files_of(d);
	uint32_t n = meta_ring_len(d), m = gpuos_rt_ms_client(f->ms), pos, was;

	if (m > GPUOS_RT_MAX_CLIENTS)
		return GPUOS_ST_FULL; /* no such client: the service warps never name one */
	/* The client's count first: one that posts its slots again and again
	 * while they are in flight stops at its cap. The counts order nothing
	 * (the entry's release below publishes the request). */
	if (m) {
		uint32_t h = gpuos_load_relaxed_dev32(&F->fwd_held[m]);
		for (;;) {
			if (h >= fwd_cap(d))
				return GPUOS_ST_FULL;
			was = gpuos_cas_acquire_dev32(&F->fwd_held[m], h, h + 1u);
			if (was == h)
				break;
			h = was;
		}
	}
	/* Then a position, only while the ring has room: an entry not yet
	 * served is never written over (the metadata warp would wait at its
	 * position for good, and every file request behind it). The acquire
	 * of consumed pairs with the metadata warp's release store after it
	 * served position consumed - 1: its reads of that entry's copy are
	 * done before we write the copy at the same index. */
	pos = gpuos_load_relaxed_dev32(&F->posted);
	for (;;) {
		if (pos - gpuos_load_acquire_dev32(&F->consumed) >= n) {
			if (m)
				gpuos_fetch_add_relaxed_dev32(&F->fwd_held[m], ~0u); /* not taken after all */
			return GPUOS_ST_FULL;
		}
		was = gpuos_cas_acquire_dev32(&F->posted, pos, pos + 1u);
		if (was == pos)
			break;
		pos = was;
	}
	meta_fwd(d)[pos % n] = *f;
	/* Publish the copy with the entry; pairs with the metadata warp's
	 * acquire load of it. */
	gpuos_store_release_dev32(&meta_ring(d)[pos % n], meta_entry(pos, n, f->ms));
	return GPUOS_ST_OK;
}

GPUOS_HD void gpuos_rt_files_warp_exit(const struct gpuos_rt_desc *d)
{
	/* Release: after this warp's last forward and its state's copy back;
	 * pairs with the metadata warp's acquire load of exits before it
	 * decides that nothing more can come. */
	gpuos_fetch_add_release_dev32(&files_of(d)->exits, 1u);
}

/* ---- requests ------------------------------------------------------------------------- */

/* Publish the reply of a metadata request; on failure write the reason into
 * dst when there is room. */
GPUOS_NOINLINE GPUOS_HD void files_reply(struct rt_files *F, const struct mreq *q, uint32_t st, uint64_t result,
			   uint64_t result2, const char *why)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_mbox_slot *s = q->s;
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	struct gpuos_rt_stats *o = &ctl->stats[d->nwarps];
	int dev = (d->flags & GPUOS_RT_MBOX_DEVICE) != 0;
	uint64_t batch = q->batch; /* the copy checked at intake: the slot is the client's to rewrite */

	if (F->req_dup) {
		/* A command of this request was completed twice: nothing it read
		 * is trusted (docs/design.md, "The life of a command"). A handle
		 * it opened goes again, as its client never learns of it. */
		if (st == GPUOS_ST_OK && (q->op == GPUOS_OP_OPEN || q->op == GPUOS_OP_GGUF_OPEN)) {
			const struct rt_handle *hd =
				gpuos_rt_handle(d, (uint32_t)result, (1u << H_FILE) | (1u << H_DIR) | (1u << H_MODEL));
			if (hd)
				files_free_handle(F, (uint32_t)(hd - F->h));
		}
		/* Whatever it concluded (a name not found, a corrupt block) may
		 * rest on those bytes too. */
		st = GPUOS_ST_DUP_CQE;
		result = result2 = 0;
		why = 0;
		F->n_untrusted++;
		F->req_dup = 0;
	}
	if (st != GPUOS_ST_OK && q->dst && q->length && files_req_mem(F, q, q->dst, GPUOS_MIN(q->length, (uint64_t)WHY_MAX))) {
		struct sbuf sb;
		sb.p = F->why;
		sb.n = 0;
		sb.cap = (uint32_t)GPUOS_MIN(q->length, (uint64_t)WHY_MAX);
		sb_str(&sb, why ? why : gpuos_status_name(st));
		gpuos_buf_copy((void *)(uintptr_t)q->dst, F->why, sb.n + 1u);
	}
	s->result2 = result2;
	/* The one answer (runtime/answer.h): it publishes the reply fields, the
	 * data written to dst (host or device memory) and any handle changes
	 * before DONE; pairs with the client's acquire load of state. Not a hot
	 * path: always system scope (RT_ANSWER_SYS). batch: checked by the
	 * service warp at intake. */
	gpuos_rt_answer(dev, s, RT_ANSWER_SYS, st, st == GPUOS_ST_IO ? F->last_nvme : 0, result, batch);
	/* The host reads these at any time; relaxed, like the service warps' counts. */
	gpuos_store_relaxed_sys64(&o->requests, gpuos_load_relaxed_sys64(&o->requests) + 1u);
	if (st != GPUOS_ST_OK)
		gpuos_store_relaxed_sys64(&o->errors, gpuos_load_relaxed_sys64(&o->errors) + 1u);
	gpuos_store_relaxed_sys64(&o->commands, F->n_cmds);
	gpuos_store_relaxed_sys64(&o->retries, F->n_retries);
	gpuos_store_relaxed_sys64(&o->duplicates, F->n_dups);
	gpuos_store_relaxed_sys64(&o->untrusted, F->n_untrusted);
}

/* Reply with a parser failure: the status from err, the reason from why. */
GPUOS_NOINLINE GPUOS_HD void files_reply_err(struct rt_files *F, const struct mreq *q, int err, const char *what,
			       const char *why)
{
	struct sbuf sb;
	uint32_t st = status_of(err);
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	if (what) {
		sb_str(&sb, what);
		if (why)
			sb_str(&sb, ": ");
	}
	if (why)
		sb_str(&sb, why);
	else if (!what)
		sb_str(&sb, gpuos_status_name(st));
	if (st == GPUOS_ST_IO && F->last_nvme) {
		sb_str(&sb, " (NVMe status 0x");
		{
			const char *hex = "0123456789abcdef";
			char t[5];
			t[0] = hex[(F->last_nvme >> 12) & 15];
			t[1] = hex[(F->last_nvme >> 8) & 15];
			t[2] = hex[(F->last_nvme >> 4) & 15];
			t[3] = hex[F->last_nvme & 15];
			t[4] = 0;
			sb_str(&sb, t);
		}
		sb_str(&sb, ": ");
		sb_str(&sb, gpuos_nvme_status_name(F->last_nvme));
		sb_str(&sb, ")");
	}
	files_reply(F, q, st, 0, 0, F->reason);
}

/* Bytes from p to the end of its registered region, 0 if p is in none. */
GPUOS_INLINE GPUOS_HD uint64_t region_left(const struct gpuos_rt_desc *d, uint64_t p)
{
	int rg = gpuos_rt_region_of(d, p, 1);
	return rg < 0 ? 0 : d->region[rg].len - (p - d->region[rg].base);
}

/* Copy the client's NUL-terminated string at q->arg (at most max bytes with
 * the NUL) into F->path. Returns a status. */
/* The destination of an op that fills in a struct: registered, 8-byte aligned
 * (a misaligned 8-byte store faults the GPU, and with it every client) and at
 * least min bytes. On refusal the reply is sent, with the reason written into
 * dst when it is registered, and 0 is returned. */
GPUOS_HD void *files_struct_dst(struct rt_files *F, const struct mreq *q, uint64_t min, const char *what)
{
	if (!q->dst || !files_req_mem(F, q, q->dst, q->length)) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return 0;
	}
	if (q->dst & 7u) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, "destination not 8-byte aligned");
		return 0;
	}
	if (q->length < min) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, what);
		return 0;
	}
	return (void *)(uintptr_t)q->dst;
}

GPUOS_HD uint32_t files_take_string(struct rt_files *F, const struct mreq *q, uint32_t max)
{
	uint64_t left = region_left(F->d, q->arg);
	const char *p = (const char *)(uintptr_t)q->arg;
	uint32_t m = gpuos_rt_ms_client(q->ms), i;
	if (m) { /* a client's string ends in its share */
		uint64_t end = gpuos_rt_mbox_of(F->d, m) + gpuos_rt_area_len(F->d, m);
		left = gpuos_rt_in_share(gpuos_rt_mbox_of(F->d, m), F->d->cmbox_bytes, gpuos_rt_area_len(F->d, m), q->arg, 1)
			       ? GPUOS_MIN(left, end - q->arg)
			       : 0;
	}
	if (!q->arg || !left)
		return GPUOS_ST_BAD_DST;
	for (i = 0; i < max && i < left; i++) {
		F->path[i] = p[i];
		if (!p[i])
			return GPUOS_ST_OK;
	}
	return i == left ? GPUOS_ST_BAD_DST : GPUOS_ST_NAMETOOLONG;
}

/* An opcode the service warp answers itself (runtime/ops.h): one that
 * came here was forwarded by mistake. */
GPUOS_HD static void files_op_not_forwarded(struct rt_files *F, struct mreq *q)
{
	files_reply(F, q, GPUOS_ST_BAD_OPCODE, 0, 0, 0);
}

/* Serve the request at ring index i: its copy, never its slot (the
 * client's memory, read once by the service warp that took it). */
GPUOS_NOINLINE GPUOS_HD static void serve(struct rt_files *F, uint32_t i, uint32_t ms, uint32_t cmd)
{
	const struct gpuos_rt_desc *d = F->d;
	const struct gpuos_rt_fwd *f = &meta_fwd(d)[i];
	struct mreq q;

	q.s = gpuos_rt_slot(d, ms);
	q.ms = ms;
	q.op = f->opcode;
	q.flags = f->flags;
	q.handle = f->handle;
	q.offset = f->offset;
	q.length = f->length;
	q.dst = f->dst;
	q.arg = f->arg;
	q.batch = f->batch;
	/* The commands this request sends start here (files_io.c: a
	 * completion of one of them that comes twice fails it). */
	F->req_cid0 = F->cid + ((uint16_t)(F->cid + 1u) == 0xffffu ? 2u : 1u); /* as dev_cmd counts */
	F->req_dup = 0;
	if (f->ms != ms) { /* the entry and its copy disagree: never written so */
		files_reply(F, &q, GPUOS_ST_CORRUPT, 0, 0, "metadata ring entry without its request");
		return;
	}
	if (cmd == GPUOS_RT_CMD_STOP) {
		files_reply(F, &q, GPUOS_ST_STOPPING, 0, 0, 0);
		return;
	}
	/* The rows of runtime/ops.h: each opcode's handler on this warp. */
	switch (q.op) {
#define META_ROW(name, route, need, handler) \
	case GPUOS_OP_##name:                 \
		handler(F, &q);               \
		break;
		GPUOS_RT_OPS(META_ROW)
#undef META_ROW
	default: files_reply(F, &q, GPUOS_ST_BAD_OPCODE, 0, 0, 0); break;
	}
}

/* ---- the loop --------------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD void gpuos_rt_meta_run(const struct gpuos_rt_desc *d)
{
	struct rt_files *F = files_of(d);
	uint32_t n = meta_ring_len(d), idle = 0, iter = 0, cmd = GPUOS_RT_CMD_RUN;

	if (gpuos_lane_id() != 0 || !d->meta)
		return;
	F->d = d;
	if (F->magic != FILES_MAGIC) {
		uint32_t i;
		for (i = 0; i < d->nctrl; i++)
			gpuos_rt_queue_start(&F->qp[i], d, &d->queue[d->nqueues + i]);
		for (i = 0; i < GPUOS_RT_HANDLES; i++)
			F->h[i].model = -1;
		F->magic = FILES_MAGIC;
	}
	F->io_dev.F = F;
	F->io_dev.base = 0;
	F->mio_dev.read = files_io_dev_read;
	F->mio_dev.ctx = &F->io_dev;
	F->mio_dev.size = d->ns_lbas << d->lba_shift;
	/* Function pointers of this launch: parsers copy the io they are given. */
	F->mio_part.read = files_io_dev_read;
	F->mio_file.read = files_io_file_read;
	gpuos_fs_set_read(&F->fs, files_io_dev_read);
	F->launches++;
	/* A participant of resets, as each service warp (runtime/recover.h). */
	gpuos_rt_rec_enter(d, gpuos_rt_recover(d));
	files_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d)));

	for (;;) {
		uint32_t pos = gpuos_load_relaxed_dev32(&F->consumed), e; /* ours alone to write */
		files_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d)));
		/* Pairs with the service warps' release store of the entry. */
		e = gpuos_load_acquire_dev32(&meta_ring(d)[pos % n]);
		if ((e & ~META_MS_MASK) == (meta_entry(pos, n, 0) & ~META_MS_MASK)) {
			uint32_t m = gpuos_rt_ms_client(e & META_MS_MASK);
			serve(F, pos % n, e & META_MS_MASK, cmd);
			/* Answered: its client may forward another. */
			if (m && m <= GPUOS_RT_MAX_CLIENTS)
				gpuos_fetch_add_relaxed_dev32(&F->fwd_held[m], ~0u);
			/* Release: our reads of the entry's copy are done before a
			 * forwarder that sees this position free writes it again;
			 * pairs with its acquire load (gpuos_rt_files_forward). */
			gpuos_store_release_dev32(&F->consumed, pos + 1u);
			idle = 0;
			continue;
		}
		/* Now and then, as the service warps do (engine/serve.c). Pairs
		 * with the host's release store (set_cmd). */
		if ((iter++ & 31u) == 0)
			cmd = gpuos_load_acquire_sys32((const uint32_t *)(uintptr_t)d->cmd);
		if (cmd != GPUOS_RT_CMD_RUN) {
			/* Every service warp has left: nothing more can be forwarded.
			 * Pairs with their fence before the exits increment. */
			uint32_t exits = gpuos_load_acquire_dev32(&F->exits);
			if (exits >= d->nwarps * F->launches &&
			    gpuos_load_acquire_dev32(&F->posted) == gpuos_load_relaxed_dev32(&F->consumed) &&
			    gpuos_rt_rec_leave(gpuos_rt_recover(d)))
				break;
		}
		if (++idle > (GPUOS_ON_GPU ? 1024u : 64u))
			gpuos_backoff(&idle);
	}
}
