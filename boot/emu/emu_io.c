/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_io.c - the I/O workers of the emulated controller: they poll
 * the SQ tail doorbells of their queues, fetch and check NVM commands (read,
 * write, flush: NVM command set spec 3.2.4, 3.2.6, 3.3.4), move the data
 * through the backend, and post completions when the performance model says
 * so and the CQ has room. Fault injection lives here too.
 *
 * One worker owns a CQ and every SQ that posts to it, so a CQ's tail and
 * phase have one writer and need no lock.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "emu_internal.h"

#define ST(sct, sc, dnr) gpuos_nvme_status_make((sct), (sc), (dnr))

/* ---- performance model ---- */

/* Book dur ns on a shared timeline that is free from *next on; returns when
 * this booking ends. Workers share the device's link and command rate. */
static uint64_t book(uint64_t *next, uint64_t now, uint64_t dur)
{
	uint64_t cur = __atomic_load_n(next, __ATOMIC_RELAXED), start, end;

	do {
		start = cur > now ? cur : now;
		end = start + dur;
	} while (!__atomic_compare_exchange_n(next, &cur, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return end;
}

static uint64_t due_time(struct gpuos_emu *e, const struct emu_cmd *c)
{
	uint64_t due = c->fetch_ns + (uint64_t)e->o.latency_us * 1000u;

	if (e->o.iops) {
		uint64_t t = book(&e->iops_next_ns, c->fetch_ns, 1000000000ull / e->o.iops);
		due = GPUOS_MAX(due, t);
	}
	if (e->o.gbps > 0.0 && c->len && !c->status) {
		/* gbps is 1e9 bytes per second, so bytes / gbps is in ns */
		uint64_t t = book(&e->bw_next_ns, c->fetch_ns, (uint64_t)((double)c->len / e->o.gbps));
		due = GPUOS_MAX(due, t);
	}
	return due;
}

/* ---- command checks ---- */

static uint16_t injected_fault(struct gpuos_emu *e, struct emu_worker *w, uint64_t slba, uint64_t nlb)
{
	for (uint32_t i = 0; i < e->o.n_lba_faults; i++) {
		if (slba <= e->o.lba_fault[i].end && slba + nlb - 1 >= e->o.lba_fault[i].start)
			return e->o.lba_fault[i].status;
	}
	if (e->o.fault_rate > 0.0 && emu_rand01(&w->rng) < e->o.fault_rate)
		return e->o.fault_rate_status;
	return 0;
}

/* Check an I/O command and map its data; sets c->op, or c->status. */
static void prepare(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c)
{
	const struct gpuos_nvme_sqe *s = &c->sqe;

	c->op = EMU_OP_NONE;
	c->status = 0;
	c->len = 0;
	c->slba = 0;
	c->nseg = 0;
	c->device = 0;
	c->stage = NULL;
	c->own_stage = 0;
	c->ticket = 0;

	if (s->opc != GPUOS_NVME_CMD_READ && s->opc != GPUOS_NVME_CMD_WRITE &&
	    s->opc != GPUOS_NVME_CMD_FLUSH) {
		c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_OPCODE, 1);
		return;
	}
	/* fused operations and SGLs are not supported */
	if (s->fuse_psdt) {
		c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_FIELD, 1);
		return;
	}
	if (s->opc == GPUOS_NVME_CMD_FLUSH) {
		/* NSID FFFFFFFFh flushes every namespace (id_ctrl.vwc bits 2:1 = 11b) */
		if (s->nsid != 1 && s->nsid != 0xffffffffu)
			c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_NS, 1);
		else
			c->op = EMU_OP_FLUSH;
		return;
	}
	if (s->nsid != 1) {
		c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_NS, 1);
		return;
	}
	uint64_t slba = (uint64_t)s->cdw10 | (uint64_t)s->cdw11 << 32;
	uint64_t nlb = (uint64_t)(s->cdw12 & 0xffffu) + 1u;   /* 0's based */
	c->slba = slba;
	c->len = (size_t)(nlb << e->lba_shift);
	if (e->mdts_bytes && c->len > e->mdts_bytes) {
		c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_FIELD, 1);
		return;
	}
	if (slba >= e->nlba || nlb > e->nlba - slba) {
		c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_LBA_RANGE, 1);
		return;
	}
	c->status = injected_fault(e, w, slba, nlb);
	if (c->status)
		return;

	c->seg0 = w->sgl.n;
	c->status = emu_prp_map(e, &w->sgl, s->prp1, s->prp2, c->len);
	c->nseg = w->sgl.n - c->seg0;
	if (c->status)
		return;
	for (uint32_t i = c->seg0; i < c->seg0 + c->nseg; i++)
		c->device |= w->sgl.seg[i].device;
	c->off = slba << e->lba_shift;
	c->op = s->opc == GPUOS_NVME_CMD_READ ? EMU_OP_READ : EMU_OP_WRITE;
}

/* Bytes queued between two marks of a round (about 50 us of a PCIe 5 link). */
#define DMA_MARK_BYTES (2u << 20)

/* ---- the DMA engine (docs/design.md, "The emulated controller's DMA engine") ----
 * Reads into device memory never block the worker: their data is queued on
 * the worker's DMA channel (straight from the ram backend's registered image,
 * or from pinned staging the file backends read into), one ticket marks the
 * round, and the completions wait in the pending list until the ticket has
 * landed. Without env.dma_mark every device transfer is a synchronous
 * env.dev_copy, as before. */

static int dma_engine(const struct gpuos_emu *e)
{
	return e->env.dma_mark != NULL;
}

/* Fail the pending completions of a ticket whose transfer failed. */
static void dma_fail(struct emu_worker *w, uint64_t t)
{
	for (uint32_t i = 0; i < w->npend; i++)
		if (w->pend[i].ticket == t && !w->pend[i].status)
			w->pend[i].status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
	w->dma_failed = t;
}

/* Advance dma_landed over the tickets that have landed (they land in
 * order: one channel), and free the staging they held. */
static void dma_reap(struct gpuos_emu *e, struct emu_worker *w)
{
	uint64_t landed = w->dma_landed, issued = w->dma_issued;

	while (landed < issued) {
		int r = e->env.dma_poll(e->env.ctx, landed + 1);
		if (r == 0)
			break;
		landed++;
		if (r < 0)
			dma_fail(w, landed);
	}
	/* release: the data of every ticket up to here is in device memory;
	 * pairs with the acquire in gpuos_emu_unmap */
	__atomic_store_n(&w->dma_landed, landed, __ATOMIC_RELEASE);
	while (w->stage_q_n && w->stage_q[w->stage_q_head].ticket &&
	       w->stage_q[w->stage_q_head].ticket <= landed) {
		w->stage_q_head = (w->stage_q_head + 1) % EMU_STAGE_SLOTS;
		w->stage_q_n--;
	}
}

/* len bytes of pinned staging in the worker's ring, or NULL when it has no
 * room now. Entries get their ticket when the round is marked (0 until then). */
static uint8_t *stage_get(struct emu_worker *w, size_t len)
{
	size_t at;

	len = GPUOS_ALIGN_UP(len, (size_t)EMU_PAGE);   /* O_DIRECT wants aligned buffers */
	if (!w->stage || len > w->stage_len || w->stage_q_n == EMU_STAGE_SLOTS)
		return NULL;
	if (!w->stage_q_n) {
		at = 0;
	} else {
		size_t old = w->stage_q[w->stage_q_head].start;
		if (w->stage_head > old) {
			/* in use: [old, head) */
			if (w->stage_head + len <= w->stage_len)
				at = w->stage_head;
			else if (len <= old)
				at = 0;
			else
				return NULL;
		} else if (w->stage_head + len <= old) {
			at = w->stage_head;    /* wrapped: in use [old, end) and [0, head) */
		} else {
			return NULL;
		}
	}
	uint32_t k = (w->stage_q_head + w->stage_q_n++) % EMU_STAGE_SLOTS;
	w->stage_q[k].start = at;
	w->stage_q[k].ticket = 0;
	w->stage_head = at + len;
	return w->stage + at;
}

/* Staging for c, waiting for earlier rounds' transfers to land when the
 * ring is full; NULL when this round alone fills it. */
static uint8_t *stage_wait(struct gpuos_emu *e, struct emu_worker *w, size_t len)
{
	uint8_t *p = stage_get(w, len);
	uint64_t limit = gpuos_now_ns() + 10ull * 1000000000ull;

	while (!p && w->dma_landed < w->dma_issued && gpuos_now_ns() < limit) {
		for (int i = 0; i < 64; i++)
			gpuos_pause();
		dma_reap(e, w);
		p = stage_get(w, len);
	}
	return p;
}

/* Queue host -> device bytes on the channel: small pieces are gathered. */
static int dma_put(struct gpuos_emu *e, void *dst, const void *src, size_t len)
{
	if (len <= (size_t)e->o.gather_kib * 1024u) {
		emu_stat_add(&e->st.dma_gathered, 1);
		return e->env.dma_gather(e->env.ctx, dst, src, len);
	}
	emu_stat_add(&e->st.dma_copies, 1);
	return e->env.dma_copy(e->env.ctx, dst, src, len);
}

/* Copy the linear buffer buf into the command's segments, device ones on
 * the channel (async) or with dev_copy; host ones with memcpy. */
static uint16_t scatter(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c, const uint8_t *buf, int async)
{
	size_t left = c->len;

	for (uint32_t i = c->seg0; i < c->seg0 + c->nseg && left; i++) {
		const struct emu_seg *sg = &w->sgl.seg[i];
		size_t k = GPUOS_MIN(sg->len, left);
		int r = 0;
		if (!sg->device)
			memcpy(sg->ptr, buf, k);
		else if (async)
			r = dma_put(e, sg->ptr, buf, k);
		else
			r = e->env.dev_copy(e->env.ctx, sg->ptr, buf, k, 1);
		if (r)
			return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		buf += k;
		left -= k;
	}
	return 0;
}

/* A read of the ram backend's registered image into the command's
 * segments: one queued transfer per (segment, stripe chunk) piece. */
static uint16_t ram_direct(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c)
{
	uint64_t moff = c->off;

	for (uint32_t i = c->seg0; i < c->seg0 + c->nseg; i++) {
		const struct emu_seg *sg = &w->sgl.seg[i];
		for (size_t done = 0; done < sg->len;) {
			uint64_t run, img = emu_img_off(e, moff, &run);
			size_t k = (size_t)GPUOS_MIN((uint64_t)(sg->len - done), run);
			/* no emu_ram_ready: a registered image was loaded whole at open */
			int r = sg->device ? dma_put(e, sg->ptr + done, e->be->ram + img, k) :
					     (memcpy(sg->ptr + done, e->be->ram + img, k), 0);
			if (r)
				return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
			done += k;
			moff += k;
		}
	}
	return 0;
}

/* The null backend's reads into device memory: zeros, queued. */
static uint16_t null_direct(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c)
{
	for (uint32_t i = c->seg0; i < c->seg0 + c->nseg; i++) {
		const struct emu_seg *sg = &w->sgl.seg[i];
		if (sg->device ? e->env.dma_zero(e->env.ctx, sg->ptr, sg->len) : (memset(sg->ptr, 0, sg->len), 0))
			return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
	}
	emu_stat_add(&e->st.dma_copies, c->nseg);
	return 0;
}

/* Mark what the round queued so far: the commands waiting for a ticket get
 * it; last: the round is over, and its staging is free once the ticket
 * lands (at once when nothing was queued). */
static void dma_mark_round(struct gpuos_emu *e, struct emu_worker *w, uint32_t n, int last)
{
	uint64_t t = 0;
	int want = 0;

	for (uint32_t i = 0; i < n && !want; i++)
		want = w->cmd[i].ticket == UINT64_MAX;
	if (want && e->env.dma_mark(e->env.ctx, &t) == 0) {
		emu_stat_add(&e->st.dma_batches, 1);
		/* release: unmap (acquire) waits for what it names to land */
		__atomic_store_n(&w->dma_issued, t, __ATOMIC_RELEASE);
	} else {
		t = 0;   /* nothing queued, or it could not be marked: the commands fail */
	}
	for (uint32_t i = 0; i < n; i++) {
		struct emu_cmd *c = &w->cmd[i];
		if (c->ticket != UINT64_MAX)
			continue;
		if (t) {
			c->ticket = t;
			emu_stat_add(&e->st.dma_cmds, 1);
		} else {
			c->ticket = 0;
			c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		}
	}
	if (!last)
		return;
	for (uint32_t j = 0; j < w->stage_q_n; j++) {
		uint32_t k = (w->stage_q_head + j) % EMU_STAGE_SLOTS;
		if (!w->stage_q[k].ticket)
			w->stage_q[k].ticket = t ? t : GPUOS_MAX(w->dma_issued, 1u);
	}
	dma_reap(e, w);
}

static int iov_reserve(struct emu_worker *w, uint32_t n)
{
	if (n <= w->iov_cap)
		return 0;
	uint32_t cap = w->iov_cap ? w->iov_cap : 256;
	while (cap < n)
		cap *= 2;
	struct iovec *v = realloc(w->iov, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->iov = v;
	w->iov_cap = cap;
	return 0;
}

static int bio_reserve(struct emu_worker *w, uint32_t n)
{
	if (n <= w->bio_cap)
		return 0;
	uint32_t cap = w->bio_cap ? w->bio_cap : 2 * EMU_BATCH;
	while (cap < n)
		cap *= 2;
	struct emu_bio *b = realloc(w->bio, cap * sizeof(*b));
	if (b)
		w->bio = b;
	uint32_t *m = realloc(w->bio_cmd, cap * sizeof(*m));
	if (m)
		w->bio_cmd = m;
	if (!b || !m)
		return -ENOMEM;
	w->bio_cap = cap;
	return 0;
}

/* Backend requests for command ci: one per stripe chunk its range touches.
 * The data is the linear buffer lin when not NULL, else its segments. */
static void add_bios(struct gpuos_emu *e, struct emu_worker *w, uint32_t ci, uint8_t *lin,
		     uint32_t *nb, uint32_t *niov)
{
	struct emu_cmd *c = &w->cmd[ci];
	uint64_t moff = c->off;
	size_t left = c->len, in_seg = 0;
	uint32_t s = c->seg0;

	while (left) {
		uint64_t run, img = emu_img_off(e, moff, &run);
		size_t chunk = (size_t)GPUOS_MIN((uint64_t)left, run);
		struct emu_bio *b = &w->bio[*nb];
		b->op = c->op;
		b->off = img;
		b->len = chunk;
		b->res = 0;
		b->iov = &w->iov[*niov];
		b->iovcnt = 0;
		w->bio_cmd[(*nb)++] = ci;
		if (lin) {
			w->iov[(*niov)++] = (struct iovec){ lin + (c->len - left), chunk };
			b->iovcnt = 1;
		} else {
			for (size_t need = chunk; need;) {
				const struct emu_seg *sg = &w->sgl.seg[s];
				size_t k = GPUOS_MIN(sg->len - in_seg, need);
				w->iov[(*niov)++] = (struct iovec){ sg->ptr + in_seg, k };
				b->iovcnt++;
				need -= k;
				in_seg += k;
				if (in_seg == sg->len) {
					s++;
					in_seg = 0;
				}
			}
		}
		moff += chunk;
		left -= chunk;
	}
}

static void fail_all(struct emu_worker *w, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (w->cmd[i].op != EMU_OP_NONE) {
			w->cmd[i].op = EMU_OP_NONE;
			w->cmd[i].status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INTERNAL, 0);
		}
}

/* Room for the round's bios and iovecs at most: a chunk per stripe or
 * per LBA a command spans, an iovec per chunk and segment. */
static int reserve_round(struct gpuos_emu *e, struct emu_worker *w, uint32_t n)
{
	uint32_t maxb = 0, maxiov = 0;
	uint64_t stripe = e->arr_n > 1 ? e->stripe_bytes : UINT64_MAX;

	for (uint32_t i = 0; i < n; i++) {
		const struct emu_cmd *c = &w->cmd[i];
		uint32_t chunks = c->op == EMU_OP_FLUSH ? 1 :
				  (uint32_t)GPUOS_MIN((uint64_t)c->len / stripe + 2u, (uint64_t)c->len / 512u + 1u);
		maxb += chunks;
		maxiov += chunks + c->nseg;
	}
	return bio_reserve(w, maxb) || iov_reserve(w, maxiov);
}

/* A read into device memory straight from the RAM image or the null
 * backend through the DMA engine; nothing is left for the backend. */
static void read_direct(struct gpuos_emu *e, struct emu_worker *w, uint32_t n, struct emu_cmd *c,
			size_t *since_mark)
{
	c->status = e->be->ram_registered ? ram_direct(e, w, c) : null_direct(e, w, c);
	c->op = EMU_OP_NONE;            /* nothing left for the backend */
	if (!c->status) {
		c->ticket = UINT64_MAX;  /* a ticket at the next mark */
		/* marks every DMA_MARK_BYTES: the first commands of a
		 * long round complete while the rest still move */
		if ((*since_mark += c->len) >= DMA_MARK_BYTES) {
			dma_mark_round(e, w, n, 0);
			*since_mark = 0;
		}
	}
}

/* Host memory for a command on device memory: 0 when c->stage holds a
 * write's data or awaits a read's, -1 when the command failed (its status
 * set, nothing left for the backend). */
static int stage_cmd(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c, int async)
{
	/* through host memory: pinned staging when the channel moves it, a
	 * buffer of its own for synchronous copies (and writes, whose data
	 * must be read out of device memory before the backend sees it) */
	if (async && c->op == EMU_OP_READ)
		c->stage = stage_wait(e, w, c->len);
	if (!c->stage) {
		if (posix_memalign((void **)&c->stage, EMU_PAGE, c->len)) {
			c->stage = NULL;
			c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INTERNAL, 0);
			c->op = EMU_OP_NONE;
			return -1;
		}
		c->own_stage = 1;   /* freed in finish */
	}
	if (c->op == EMU_OP_WRITE) {
		uint16_t st = emu_sgl_copy(e, &w->sgl, c->seg0, c->nseg, c->stage, c->len, 0);
		if (st) {
			c->status = st;
			c->op = EMU_OP_NONE;
			return -1;
		}
	}
	return 0;
}

/* A failed bio fails its command, unless an earlier status stands. */
static void bio_statuses(struct emu_worker *w, uint32_t nb)
{
	for (uint32_t k = 0; k < nb; k++) {
		struct emu_cmd *c = &w->cmd[w->bio_cmd[k]];
		int res = w->bio[k].res;
		if (res && !c->status)
			c->status = c->op == EMU_OP_READ ?
				    ST(GPUOS_NVME_SCT_MEDIA, GPUOS_NVME_SC_UNRECOVERED_READ, 0) :
				    res == -EROFS ?
				    ST(GPUOS_NVME_SCT_GENERIC, 0x20, 1) : /* Namespace is Write Protected */
				    ST(GPUOS_NVME_SCT_MEDIA, GPUOS_NVME_SC_WRITE_FAULT, 0);
	}
}

/* staged reads: now into device memory */
static void scatter_staged(struct gpuos_emu *e, struct emu_worker *w, uint32_t n, int async)
{
	for (uint32_t i = 0; i < n; i++) {
		struct emu_cmd *c = &w->cmd[i];
		if (c->op != EMU_OP_READ || !c->device || c->status)
			continue;
		c->status = scatter(e, w, c, c->stage, async && !c->own_stage);
		if (!c->own_stage && !c->status) {
			c->ticket = UINT64_MAX;
		}
	}
}

/* Move the data of every prepared command: the backend for what it must
 * read or write, the DMA engine for what goes into device memory. */
static void execute(struct gpuos_emu *e, struct emu_worker *w, uint32_t n)
{
	const int async = dma_engine(e);
	uint32_t nb = 0, niov = 0;
	size_t since_mark = 0;

	if (reserve_round(e, w, n)) {
		fail_all(w, n);
		return;
	}

	for (uint32_t i = 0; i < n; i++) {
		struct emu_cmd *c = &w->cmd[i];
		if (c->op == EMU_OP_NONE)
			continue;
		if (c->op == EMU_OP_FLUSH) {
			struct emu_bio *b = &w->bio[nb];
			memset(b, 0, sizeof(*b));
			b->op = EMU_OP_FLUSH;
			w->bio_cmd[nb++] = i;
			continue;
		}
		if (!c->device) {
			add_bios(e, w, i, NULL, &nb, &niov);
			continue;
		}
		if (c->op == EMU_OP_READ && async && (e->be->ram_registered || e->o.backend == GPUOS_EMU_NULL)) {
			read_direct(e, w, n, c, &since_mark);
			continue;
		}
		if (stage_cmd(e, w, c, async))
			continue;
		add_bios(e, w, i, c->stage, &nb, &niov);
	}
	if (nb)
		emu_backend_exec(e, w, w->bio, nb);
	bio_statuses(w, nb);
	scatter_staged(e, w, n, async);
	if (async)
		dma_mark_round(e, w, n, 1);
}

/* ---- CIDs outstanding (stats.cid_conflicts), owner worker only ---- */

static void cid_fetched(struct gpuos_emu *e, struct emu_sq *sq, uint16_t cid)
{
	uint64_t bit = 1ull << (cid % 64u);

	if (!sq->live)
		return;
	if (sq->live[cid / 64u] & bit)
		emu_stat_add(&e->st.cid_conflicts, 1);
	sq->live[cid / 64u] |= bit;
}

static void cid_answered(struct emu_sq *sq, uint16_t cid)
{
	if (sq->live)
		sq->live[cid / 64u] &= ~(1ull << (cid % 64u));
}

/* faults=dup, duplate: a copy of completion p, posted at due. */
static void dup_copy(struct gpuos_emu *e, struct emu_worker *w, const struct emu_pend *p, uint64_t due)
{
	struct emu_pend *q = &w->pend[w->npend++];

	*q = *p;
	q->due_ns = due;
	q->dup = 1;
	q->twice = 0;
	emu_stat_add(&e->st.dups, 1);
}

/* Book-keeping, performance model and lost completions; then queue the CQE.
 * left: completions of the round still to queue after this one (the room
 * fetch_round kept for them is not the copies' to take). */
static void finish(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c, uint32_t left)
{
	int op = c->op != EMU_OP_NONE ? c->op :
		 c->sqe.opc == GPUOS_NVME_CMD_READ ? EMU_OP_READ :
		 c->sqe.opc == GPUOS_NVME_CMD_WRITE ? EMU_OP_WRITE : EMU_OP_NONE;

	emu_stat_add(&e->st.io_cmds, 1);
	if (!c->status) {
		if (op == EMU_OP_READ) {
			emu_stat_add(&e->st.read_bytes, c->len);
			emu_stat_add(&e->host_reads, 1);
		} else if (op == EMU_OP_WRITE) {
			emu_stat_add(&e->st.write_bytes, c->len);
			emu_stat_add(&e->host_writes, 1);
		}
	}
	emu_account(e, &c->sqe, c->sq->qid, c->status, c->slba);
	if (c->own_stage)
		free(c->stage);   /* a buffer of its own (no DMA engine, or staging full) */
	c->own_stage = 0;
	c->stage = NULL;

	uint64_t due = due_time(e, c);
	uint64_t nth = __atomic_add_fetch(&e->io_posted, 1, __ATOMIC_RELAXED);
	if ((e->o.lost_every && nth % e->o.lost_every == 0) ||
	    (e->o.lost_rate > 0.0 && emu_rand01(&w->rng) < e->o.lost_rate)) {
		emu_stat_add(&e->st.lost, 1);
		cid_answered(c->sq, c->sqe.cid);   /* as far as the controller knows */
		return;
	}
	struct emu_pend *p = &w->pend[w->npend++];
	p->due_ns = due;
	p->ticket = c->ticket;
	p->waited = 0;
	p->sq = c->sq;
	p->cid = c->sqe.cid;
	p->status = c->status;
	p->dw0 = 0;
	p->dup = 0;
	p->twice = 0;
	/* the same completion again: a little later, right behind it, or once
	 * the driver may have given the CID to another command */
	if (e->o.dup_rate > 0.0 && emu_rand01(&w->rng) < e->o.dup_rate && w->npend + left < EMU_PEND_MAX)
		dup_copy(e, w, p, due + 20000u);
	if (e->o.dupnow_rate > 0.0 && emu_rand01(&w->rng) < e->o.dupnow_rate) {
		p->twice = 1;
		emu_stat_add(&e->st.dups, 1);
	}
	if (e->o.duplate_rate > 0.0 && emu_rand01(&w->rng) < e->o.duplate_rate && w->npend + left < EMU_PEND_MAX)
		dup_copy(e, w, p, due + (uint64_t)e->o.duplate_ms * 1000000u);
}

/* ooo=1: the completions of one fetched batch leave in another order. */
static void shuffle(struct emu_worker *w, uint32_t from)
{
	uint32_t n = w->npend - from;
	struct emu_pend *p = &w->pend[from];
	int moved = 0;

	if (n < 2)
		return;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(emu_rand(&w->rng) % (i + 1));
		struct emu_pend t = p[i];
		p[i] = p[j];
		p[j] = t;
		moved |= i != j;
	}
	if (!moved) {
		/* a shuffle that changed nothing would hide the mode: reverse instead */
		for (uint32_t i = 0; i < n / 2; i++) {
			struct emu_pend t = p[i];
			p[i] = p[n - 1 - i];
			p[n - 1 - i] = t;
		}
	}
}

/* faults=late: hold command c back until due; 0 when there is no room. */
static int late_hold(struct emu_worker *w, const struct emu_cmd *c, uint64_t due)
{
	int held = 0;

	pthread_mutex_lock(&w->late_lock);
	for (uint32_t i = 0; i < EMU_LATE_MAX && !held; i++) {
		struct emu_late *l = &w->late[i];
		if (l->state != LATE_FREE)
			continue;
		l->sqe = c->sqe;
		l->sq = c->sq;
		l->due_ns = due;
		l->state = LATE_HELD;
		held = 1;
	}
	pthread_mutex_unlock(&w->late_lock);
	return held;
}

/* Held commands whose time has come go into this round (cmd[0..]); those
 * an Abort ended complete with Command Abort Requested, no data. */
static uint32_t late_take(struct gpuos_emu *e, struct emu_worker *w, uint64_t now)
{
	uint32_t n = 0;

	pthread_mutex_lock(&w->late_lock);
	for (uint32_t i = 0; i < EMU_LATE_MAX && n < EMU_BATCH && w->npend + n + 1u < EMU_PEND_MAX; i++) {
		struct emu_late *l = &w->late[i];
		if (l->state == LATE_ABORTED) {
			struct emu_pend *p = &w->pend[w->npend++];
			memset(p, 0, sizeof(*p));
			p->due_ns = now;
			p->sq = l->sq;
			p->cid = l->sqe.cid;
			p->status = gpuos_nvme_status_make(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_ABORT_REQ, 0);
			emu_stat_add(&e->st.io_cmds, 1);
			l->state = LATE_FREE;
		} else if (l->state == LATE_HELD && l->due_ns <= now) {
			struct emu_cmd *c = &w->cmd[n++];
			c->sqe = l->sqe;
			c->sq = l->sq;
			c->fetch_ns = now;
			l->state = LATE_FREE;
		}
	}
	pthread_mutex_unlock(&w->late_lock);
	for (uint32_t i = 0; i < n; i++)
		prepare(e, w, &w->cmd[i]);
	return n;
}

int emu_late_abort(struct gpuos_emu *e, uint16_t sqid, uint16_t cid)
{
	int found = 0;

	for (uint32_t k = 0; k < e->nworkers && !found; k++) {
		struct emu_worker *w = &e->w[k];
		pthread_mutex_lock(&w->late_lock);
		for (uint32_t i = 0; i < EMU_LATE_MAX && !found; i++) {
			struct emu_late *l = &w->late[i];
			if (l->state == LATE_HELD && l->sq->qid == sqid && l->sqe.cid == cid) {
				l->state = LATE_ABORTED;
				found = 1;
			}
		}
		pthread_mutex_unlock(&w->late_lock);
	}
	return found;
}

/* Fetch and execute one batch from the worker's SQs; returns commands taken. */
static uint32_t fetch_round(struct gpuos_emu *e, struct emu_worker *w)
{
	uint32_t n = 0, maxq, npend0 = w->npend;
	uint64_t now;

	if (!__atomic_load_n(&e->io_run, __ATOMIC_ACQUIRE) || __atomic_load_n(&e->hung, __ATOMIC_ACQUIRE))
		return 0;
	maxq = __atomic_load_n(&e->max_live_sq, __ATOMIC_ACQUIRE);
	if (!maxq)
		return 0;
	w->sgl.n = 0;
	pthread_rwlock_rdlock(&e->rlock);
	now = gpuos_now_ns();
	if (e->o.late_rate > 0.0)
		n = late_take(e, w, now);
	for (uint32_t k = 0; k < maxq && n < EMU_BATCH && w->npend + n < EMU_PEND_MAX; k++) {
		uint32_t q = 1u + (w->rr + k) % maxq;
		struct emu_sq *sq = &e->sq[q];
		/* acquire: pairs with the controller's release of Q_LIVE */
		if (__atomic_load_n(&sq->state, __ATOMIC_ACQUIRE) != Q_LIVE ||
		    __atomic_load_n(&sq->owner, __ATOMIC_RELAXED) != w->idx)
			continue;
		/* acquire: pairs with the driver's fence + tail doorbell store */
		uint32_t tail = __atomic_load_n(emu_sq_db(e, q), __ATOMIC_ACQUIRE);
		if (tail >= sq->size)
			continue;       /* invalid doorbell write (3.1.24): ignored */
		/* The model's time runs from the fetch, which comes after the
		 * doorbell was seen: a clock read before that load could predate
		 * the doorbell (a worker preempted in between) and complete early. */
		if (sq->head != tail)
			now = gpuos_now_ns();
		while (sq->head != tail && n < EMU_BATCH && w->npend + n < EMU_PEND_MAX) {
			uint64_t cfs_at = e->o.cfs_after ? e->o.cfs_after : e->o.dead_after;
			if (cfs_at && !__atomic_load_n(&e->cfs_fired, __ATOMIC_RELAXED) &&
			    __atomic_add_fetch(&e->io_fetched, 1, __ATOMIC_RELAXED) > cfs_at) {
				/* cfs:N: the N+1st command finds a dead controller; it is
				 * not executed, and it happens once (dead:N: for good) */
				__atomic_store_n(&e->cfs_fired, 1, __ATOMIC_RELAXED);
				if (e->o.dead_after)
					__atomic_store_n(&e->dead, 1, __ATOMIC_RELAXED);
				emu_set_fatal(e);
				goto fetched;
			}
			struct emu_cmd *c = &w->cmd[n];
			if (emu_sq_fetch(e, sq, &c->sqe)) {
				/* the SQ's memory went away under a live queue */
				emu_set_fatal(e);
				goto fetched;
			}
			sq->head = (sq->head + 1u) % sq->size;
			emu_stat_add(&e->st.io_fetched, 1);
			cid_fetched(e, sq, c->sqe.cid);
			c->sq = sq;
			c->fetch_ns = now;
			if (e->o.hang_rate > 0.0 && emu_rand01(&w->rng) < e->o.hang_rate) {
				/* hang:P: this command is never executed, and nothing more
				 * is served until the driver resets the controller */
				emu_stat_add(&e->st.lost, 1);
				__atomic_store_n(&e->hung, 1u, __ATOMIC_RELEASE);
				goto fetched;
			}
			if (e->o.late_rate > 0.0 && emu_rand01(&w->rng) < e->o.late_rate &&
			    late_hold(w, c, now + (uint64_t)e->o.late_ms * 1000000ull))
				continue;
			prepare(e, w, c);
			n++;
		}
	}
fetched:
	w->rr++;
	if (n) {
		execute(e, w, n);
		for (uint32_t i = 0; i < n; i++)
			finish(e, w, &w->cmd[i], n - 1u - i);
		if (e->o.ooo)
			shuffle(w, npend0);
	}
	pthread_rwlock_unlock(&e->rlock);
	return n;
}

/* Post every due completion the CQs have room for; returns how many. */
static uint32_t post_round(struct gpuos_emu *e, struct emu_worker *w, uint64_t *next_due)
{
	uint32_t j = 0, posted = 0;
	uint64_t now;

	*next_due = UINT64_MAX;
	if (w->dma_landed < w->dma_issued)
		dma_reap(e, w);
	if (!w->npend || __atomic_load_n(&e->hung, __ATOMIC_ACQUIRE))
		return 0;
	pthread_rwlock_rdlock(&e->rlock);
	now = gpuos_now_ns();
	for (uint32_t i = 0; i < w->npend; i++) {
		struct emu_pend *p = &w->pend[i];
		int r = 1;
		if (p->ticket > w->dma_landed) {
			/* its data is still on the way: the CQE must not overtake it */
			if (p->due_ns <= now && !p->waited) {
				p->waited = 1;
				emu_stat_add(&e->st.dma_waits, 1);
			}
		} else if (p->due_ns <= now && __atomic_load_n(&p->sq->state, __ATOMIC_ACQUIRE) == Q_LIVE) {
			r = emu_cq_post(e, p->sq->cq, p->sq, p->cid, p->status, p->dw0);
			if (r == 0 && !p->dup)
				cid_answered(p->sq, p->cid);
			if (r == 0 && p->twice) {
				/* dupnow: the copy in the next entry, or as soon as
				 * the CQ has room for it */
				posted++;
				p->twice = 0;
				p->dup = 1;
				r = emu_cq_post(e, p->sq->cq, p->sq, p->cid, p->status, p->dw0);
			}
			if (r == -EFAULT)
				emu_set_fatal(e);
		}
		if (r == 0 || r == -EFAULT) {
			posted++;
			continue;
		}
		if (p->due_ns < *next_due)
			*next_due = p->due_ns;
		w->pend[j++] = *p;
	}
	w->npend = j;
	pthread_rwlock_unlock(&e->rlock);
	return posted;
}

/* Wait (bounded) until every transfer this worker queued has landed. */
static void dma_drain(struct gpuos_emu *e, struct emu_worker *w)
{
	uint64_t limit = gpuos_now_ns() + 10ull * 1000000000ull;

	while (w->dma_landed < w->dma_issued && gpuos_now_ns() < limit) {
		dma_reap(e, w);
		if (w->dma_landed < w->dma_issued)
			emu_nap_ns(2000);
	}
}

/* Hand back SQs the controller is deleting: what completed is posted if the
 * CQ has room, the rest is dropped (the host is tearing the queue down). */
static uint32_t retire_round(struct gpuos_emu *e, struct emu_worker *w)
{
	uint32_t maxq = __atomic_load_n(&e->max_live_sq, __ATOMIC_ACQUIRE), done = 0;

	for (uint32_t q = 1; q <= maxq; q++) {
		struct emu_sq *sq = &e->sq[q];
		if (__atomic_load_n(&sq->state, __ATOMIC_ACQUIRE) != Q_DELETING ||
		    __atomic_load_n(&sq->owner, __ATOMIC_RELAXED) != w->idx)
			continue;
		uint32_t j = 0;
		dma_drain(e, w);
		/* held commands of the queue end here: never executed */
		pthread_mutex_lock(&w->late_lock);
		for (uint32_t i = 0; i < EMU_LATE_MAX; i++)
			if (w->late[i].state != LATE_FREE && w->late[i].sq == sq)
				w->late[i].state = LATE_FREE;
		pthread_mutex_unlock(&w->late_lock);
		pthread_rwlock_rdlock(&e->rlock);
		for (uint32_t i = 0; i < w->npend; i++) {
			struct emu_pend *p = &w->pend[i];
			if (p->sq != sq) {
				w->pend[j++] = *p;
				continue;
			}
			if (emu_cq_post(e, sq->cq, sq, p->cid, p->status, p->dw0) == 0 && p->twice)
				(void)emu_cq_post(e, sq->cq, sq, p->cid, p->status, p->dw0);
		}
		w->npend = j;
		pthread_rwlock_unlock(&e->rlock);
		/* release: our last touches of the SQ and its CQ happen before the
		 * controller (acquire in sq_retire) reuses them */
		__atomic_store_n(&sq->state, Q_FREE, __ATOMIC_RELEASE);
		done++;
	}
	return done;
}

static void *worker_main(void *arg)
{
	struct emu_worker *w = arg;
	struct gpuos_emu *e = w->e;
	uint32_t idle = 0;

	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	if (e->env.thread_init)
		e->env.thread_init(e->env.ctx);
	__atomic_store_n(&w->ready, 1u, __ATOMIC_RELEASE); /* pairs with emu_workers_start */
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		uint64_t next_due, t0 = gpuos_now_ns();
		uint32_t did = retire_round(e, w);
		did += fetch_round(e, w);
		did += post_round(e, w, &next_due);
		__atomic_store_n(&w->npend_pub, w->npend, __ATOMIC_RELEASE);
		if (did) {
			emu_stat_add(&e->st.busy_ns, gpuos_now_ns() - t0);
			idle = 0;
			continue;
		}
		/* nothing to do: spin a little (a busy driver rings again soon),
		 * then nap; never past the next completion that falls due, and
		 * not at all while transfers are on the way */
		uint64_t now = gpuos_now_ns();
		uint64_t nap = ++idle < 512 || w->dma_landed < w->dma_issued ? 0 :
			       idle < 1024 ? 20000 : emu_idle_nap_ns(idle - 1024, 40000);
		if (next_due != UINT64_MAX && next_due > now && next_due - now < nap)
			nap = next_due - now;
		if (nap < 5000) {
			/* yield now and then: where threads outnumber cores the
			 * driver we wait for may be queued behind us */
			if (!(idle & 15))
				sched_yield();
			for (int i = 0; i < 16; i++)
				gpuos_pause();
		} else {
			emu_nap_ns(nap);
		}
	}
	/* nothing queued on the channel may land after the memory is gone */
	dma_drain(e, w);
	if (e->env.thread_fini)
		e->env.thread_fini(e->env.ctx);
	return NULL;
}

int emu_workers_start(struct gpuos_emu *e, char *err, size_t errlen)
{
	e->w = calloc(e->nworkers, sizeof(*e->w));
	if (!e->w) {
		emu_errf(err, errlen, "emu: out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < e->nworkers; i++) {
		struct emu_worker *w = &e->w[i];
		w->e = e;
		w->idx = i;
		if (pthread_mutex_init(&w->late_lock, NULL)) {
			emu_errf(err, errlen, "emu: cannot create a lock");
			return -ENOMEM;
		}
		w->late_lock_ok = 1;
		/* splitmix-style spread so each worker's stream differs, seed= fixes them all */
		w->rng = (e->o.seed + 1u) * 0x9e3779b97f4a7c15ull ^ (i + 1u) * 0xbf58476d1ce4e5b9ull;
		if (!w->rng)
			w->rng = 1;
		w->pend = calloc(EMU_PEND_MAX, sizeof(*w->pend));
		if (!w->pend) {
			emu_errf(err, errlen, "emu: out of memory");
			return -ENOMEM;
		}
		/* pinned staging for backends that read into host memory first;
		 * none for ram (registered) and null, which need none */
		int stage = dma_engine(e) && e->env.pinned_alloc &&
			    (e->o.backend == GPUOS_EMU_FILE || e->o.backend == GPUOS_EMU_URING ||
			     (e->o.backend == GPUOS_EMU_RAM && !e->be->ram_registered));
		if (stage) {
			w->stage_len = (size_t)e->o.stage_mib << 20;
			w->stage = e->env.pinned_alloc(e->env.ctx, w->stage_len);
			if (!w->stage) {
				emu_errf(err, errlen, "emu: cannot allocate %u MiB of pinned staging (stage=)",
					 e->o.stage_mib);
				return -ENOMEM;
			}
		}
		int r = emu_backend_worker_init(e, w);
		if (r) {
			emu_errf(err, errlen, "emu: io_uring setup failed: %s", strerror(-r));
			return r;
		}
	}
	for (uint32_t i = 0; i < e->nworkers; i++) {
		int r = pthread_create(&e->w[i].th, NULL, worker_main, &e->w[i]);
		if (r) {
			emu_errf(err, errlen, "emu: cannot start worker %u: %s", i, strerror(r));
			return -r;
		}
		e->w[i].started = 1;
		{
			/* Named so tools can tell the controller's CPU time from the service's. */
			char name[16];
			snprintf(name, sizeof(name), "emu-io%u", i % 1000u);
			pthread_setname_np(e->w[i].th, name);
		}
	}
	/* Every worker's per-thread setup happens now, before the driver can
	 * launch a kernel that spins (its copy stream: docs/platform.md). */
	for (uint32_t i = 0; i < e->nworkers; i++)
		while (!__atomic_load_n(&e->w[i].ready, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	return 0;
}

void emu_workers_join(struct gpuos_emu *e)
{
	if (!e->w)
		return;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		struct emu_worker *w = &e->w[i];
		if (w->started)
			pthread_join(w->th, NULL);
		emu_backend_worker_fini(e, w);
		emu_sgl_free(&w->sgl);
		free(w->iov);
		free(w->bio);
		free(w->bio_cmd);
		free(w->pend);
		if (w->late_lock_ok)
			pthread_mutex_destroy(&w->late_lock);
		if (w->stage)
			e->env.pinned_free(e->env.ctx, w->stage, w->stage_len);
	}
	free(e->w);
	e->w = NULL;
}

uint32_t emu_workers_pending(struct gpuos_emu *e)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < e->nworkers; i++)
		n += __atomic_load_n(&e->w[i].npend_pub, __ATOMIC_ACQUIRE);
	return n;
}
