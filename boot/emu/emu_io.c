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
	c->bounce = NULL;

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
	for (uint32_t i = c->seg0; i < c->seg0 + c->nseg; i++) {
		if (w->sgl.seg[i].device) {
			/* device memory: stage through host memory, copy with env.dev_copy */
			if (posix_memalign((void **)&c->bounce, EMU_PAGE, c->len)) {
				c->bounce = NULL;
				c->status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INTERNAL, 0);
				return;
			}
			break;
		}
	}
	c->off = slba << e->lba_shift;
	c->op = s->opc == GPUOS_NVME_CMD_READ ? EMU_OP_READ : EMU_OP_WRITE;
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

/* Move the data of every prepared command through the backend. */
static void execute(struct gpuos_emu *e, struct emu_worker *w, uint32_t n)
{
	uint32_t niov = 0, nb = 0;
	uint32_t map[EMU_BATCH];

	for (uint32_t i = 0; i < n; i++) {
		struct emu_cmd *c = &w->cmd[i];
		niov += c->bounce ? 1 : c->nseg;
	}
	if (iov_reserve(w, niov)) {
		for (uint32_t i = 0; i < n; i++)
			if (w->cmd[i].op != EMU_OP_NONE) {
				w->cmd[i].op = EMU_OP_NONE;
				w->cmd[i].status = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INTERNAL, 0);
			}
		return;
	}

	niov = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct emu_cmd *c = &w->cmd[i];
		if (c->op == EMU_OP_NONE)
			continue;
		struct emu_bio *b = &w->bio[nb];
		b->op = c->op;
		b->off = c->off;
		b->len = c->len;
		b->res = 0;
		b->iov = &w->iov[niov];
		b->iovcnt = 0;
		if (c->op == EMU_OP_WRITE && c->bounce) {
			uint16_t st = emu_sgl_copy(e, &w->sgl, c->seg0, c->nseg, c->bounce, c->len, 0);
			if (st) {
				c->status = st;
				c->op = EMU_OP_NONE;
				continue;
			}
		}
		if (c->bounce) {
			w->iov[niov].iov_base = c->bounce;
			w->iov[niov].iov_len = c->len;
			niov++;
			b->iovcnt = 1;
		} else {
			for (uint32_t s = c->seg0; s < c->seg0 + c->nseg; s++) {
				w->iov[niov].iov_base = w->sgl.seg[s].ptr;
				w->iov[niov].iov_len = w->sgl.seg[s].len;
				niov++;
				b->iovcnt++;
			}
		}
		map[nb++] = i;
	}
	if (nb)
		emu_backend_exec(e, w, w->bio, nb);
	for (uint32_t k = 0; k < nb; k++) {
		struct emu_cmd *c = &w->cmd[map[k]];
		int res = w->bio[k].res;
		if (res) {
			c->status = c->op == EMU_OP_READ ?
				    ST(GPUOS_NVME_SCT_MEDIA, GPUOS_NVME_SC_UNRECOVERED_READ, 0) :
				    res == -EROFS ?
				    ST(GPUOS_NVME_SCT_GENERIC, 0x20, 1) : /* Namespace is Write Protected */
				    ST(GPUOS_NVME_SCT_MEDIA, GPUOS_NVME_SC_WRITE_FAULT, 0);
			continue;
		}
		/* the completion is posted only after this returns: device memory
		 * holds the data before the host can see the CQE */
		if (c->op == EMU_OP_READ && c->bounce)
			c->status = emu_sgl_copy(e, &w->sgl, c->seg0, c->nseg, c->bounce, c->len, 1);
	}
}

/* Book-keeping, performance model and lost completions; then queue the CQE. */
static void finish(struct gpuos_emu *e, struct emu_worker *w, struct emu_cmd *c)
{
	emu_stat_add(&e->st.io_cmds, 1);
	if (!c->status) {
		if (c->op == EMU_OP_READ) {
			emu_stat_add(&e->st.read_bytes, c->len);
			emu_stat_add(&e->host_reads, 1);
		} else if (c->op == EMU_OP_WRITE) {
			emu_stat_add(&e->st.write_bytes, c->len);
			emu_stat_add(&e->host_writes, 1);
		}
	}
	emu_account(e, &c->sqe, c->sq->qid, c->status, c->slba);
	free(c->bounce);
	c->bounce = NULL;

	uint64_t due = due_time(e, c);
	uint64_t nth = __atomic_add_fetch(&e->io_posted, 1, __ATOMIC_RELAXED);
	if ((e->o.lost_every && nth % e->o.lost_every == 0) ||
	    (e->o.lost_rate > 0.0 && emu_rand01(&w->rng) < e->o.lost_rate)) {
		emu_stat_add(&e->st.lost, 1);
		return;
	}
	struct emu_pend *p = &w->pend[w->npend++];
	p->due_ns = due;
	p->sq = c->sq;
	p->cid = c->sqe.cid;
	p->status = c->status;
	p->dw0 = 0;
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

/* Fetch and execute one batch from the worker's SQs; returns commands taken. */
static uint32_t fetch_round(struct gpuos_emu *e, struct emu_worker *w)
{
	uint32_t n = 0, maxq, npend0 = w->npend;
	uint64_t now;

	if (!__atomic_load_n(&e->io_run, __ATOMIC_ACQUIRE))
		return 0;
	maxq = __atomic_load_n(&e->max_live_sq, __ATOMIC_ACQUIRE);
	if (!maxq)
		return 0;
	w->sgl.n = 0;
	pthread_rwlock_rdlock(&e->rlock);
	now = gpuos_now_ns();
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
		while (sq->head != tail && n < EMU_BATCH && w->npend + n < EMU_PEND_MAX) {
			if (e->o.cfs_after && !__atomic_load_n(&e->cfs_fired, __ATOMIC_RELAXED) &&
			    __atomic_add_fetch(&e->io_fetched, 1, __ATOMIC_RELAXED) > e->o.cfs_after) {
				/* cfs:N: the N+1st command finds a dead controller; it is
				 * not executed, and it happens once */
				__atomic_store_n(&e->cfs_fired, 1, __ATOMIC_RELAXED);
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
			c->sq = sq;
			c->fetch_ns = now;
			prepare(e, w, c);
			n++;
		}
	}
fetched:
	w->rr++;
	if (n) {
		execute(e, w, n);
		for (uint32_t i = 0; i < n; i++)
			finish(e, w, &w->cmd[i]);
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
	if (!w->npend)
		return 0;
	pthread_rwlock_rdlock(&e->rlock);
	now = gpuos_now_ns();
	for (uint32_t i = 0; i < w->npend; i++) {
		struct emu_pend *p = &w->pend[i];
		int r = 1;
		if (p->due_ns <= now && __atomic_load_n(&p->sq->state, __ATOMIC_ACQUIRE) == Q_LIVE) {
			r = emu_cq_post(e, p->sq->cq, p->sq, p->cid, p->status, p->dw0);
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
		pthread_rwlock_rdlock(&e->rlock);
		for (uint32_t i = 0; i < w->npend; i++) {
			struct emu_pend *p = &w->pend[i];
			if (p->sq != sq) {
				w->pend[j++] = *p;
				continue;
			}
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
		uint64_t next_due;
		uint32_t did = retire_round(e, w);
		did += fetch_round(e, w);
		did += post_round(e, w, &next_due);
		__atomic_store_n(&w->npend_pub, w->npend, __ATOMIC_RELEASE);
		if (did) {
			idle = 0;
			continue;
		}
		/* nothing to do: spin a little (a busy driver rings again soon),
		 * then nap; never past the next completion that falls due */
		uint64_t now = gpuos_now_ns();
		uint64_t nap = ++idle < 512 ? 0 : idle < 4096 ? 20000 : 100000;
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
		/* splitmix-style spread so each worker's stream differs, seed= fixes them all */
		w->rng = (e->o.seed + 1u) * 0x9e3779b97f4a7c15ull ^ (i + 1u) * 0xbf58476d1ce4e5b9ull;
		if (!w->rng)
			w->rng = 1;
		w->pend = calloc(EMU_PEND_MAX, sizeof(*w->pend));
		if (!w->pend) {
			emu_errf(err, errlen, "emu: out of memory");
			return -ENOMEM;
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
	 * launch a kernel that spins (its copy stream: notes/PLATFORM.md). */
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
		for (uint32_t k = 0; k < EMU_BATCH; k++)
			free(w->cmd[k].bounce);
		emu_backend_worker_fini(e, w);
		emu_sgl_free(&w->sgl);
		free(w->iov);
		free(w->pend);
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
