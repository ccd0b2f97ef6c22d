/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu.c - the emulated controller's life: create and destroy, the
 * register file (NVMe base spec 3.1), and the controller thread that follows
 * CC as a real controller does (3.5.1 initialization, 3.6.1 shutdown, 3.7.2
 * controller reset) and serves the admin queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "emu_internal.h"

/* ---- small shared helpers ---- */

void emu_nap_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

void emu_csts_or(struct gpuos_emu *e, uint32_t bits)
{
	__atomic_fetch_or(emu_reg(e, GPUOS_NVME_REG_CSTS), bits, __ATOMIC_RELEASE);
}

static void csts_shst(struct gpuos_emu *e, uint32_t shst)
{
	uint32_t *p = emu_reg(e, GPUOS_NVME_REG_CSTS);
	uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);

	/* a worker may set CFS at the same time: update only the SHST bits */
	while (!__atomic_compare_exchange_n(p, &old, (old & ~GPUOS_NVME_CSTS_SHST_MASK) | shst, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

void emu_set_fatal(struct gpuos_emu *e)
{
	__atomic_store_n(&e->io_run, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->fatal, 1, __ATOMIC_RELEASE);
	emu_csts_or(e, GPUOS_NVME_CSTS_CFS);
}

static uint32_t reg_load(struct gpuos_emu *e, uint32_t off)
{
	/* acquire: pairs with the driver's MMIO store (and the fence before it) */
	return __atomic_load_n(emu_reg(e, off), __ATOMIC_ACQUIRE);
}

static uint64_t reg_load64(struct gpuos_emu *e, uint32_t off)
{
	/* the driver writes 64-bit registers as two dwords, low first (3.1) */
	uint64_t lo = reg_load(e, off), hi = reg_load(e, off + 4);

	return lo | (hi << 32);
}

/* ---- error log and accounting ---- */

void emu_log_error(struct gpuos_emu *e, uint16_t sqid, uint16_t cid, uint16_t status,
		   uint64_t lba, uint32_t nsid)
{
	pthread_mutex_lock(&e->elock);
	uint64_t n = e->elog_count + 1;
	struct gpuos_nvme_error_log *l = &e->elog[(n - 1) % EMU_ELOG_ENTRIES];
	memset(l, 0, sizeof(*l));
	l->error_count = n;
	l->sqid = sqid;
	l->cid = cid;
	l->status = (uint16_t)(status << 1);
	l->parm_err_loc = 0xffff;   /* not reported */
	l->lba = lba;
	l->nsid = nsid;
	__atomic_store_n(&e->elog_count, n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->elock);
}

void emu_account(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint16_t sqid,
		 uint16_t status, uint64_t lba)
{
	if (!status)
		return;
	emu_stat_add(&e->st.errors, 1);
	if (gpuos_nvme_status_sct(status) == GPUOS_NVME_SCT_MEDIA)
		emu_stat_add(&e->media_errors, 1);
	emu_log_error(e, sqid, c->cid, status, lba, c->nsid);
}

/* ---- controller thread ---- */

/* CC.EN 0 -> 1 (3.5.1): check what the driver set up, then become ready. */
static void ctrl_enable(struct gpuos_emu *e, uint32_t cc)
{
	struct emu_ctrl *c = &e->c;
	uint32_t aqa = reg_load(e, GPUOS_NVME_REG_AQA);
	uint64_t asq = reg_load64(e, GPUOS_NVME_REG_ASQ);
	uint64_t acq = reg_load64(e, GPUOS_NVME_REG_ACQ);
	uint32_t asqs = ((aqa & GPUOS_NVME_AQA_ASQS_MASK) >> GPUOS_NVME_AQA_ASQS_SHIFT) + 1;
	uint32_t acqs = ((aqa & GPUOS_NVME_AQA_ACQS_MASK) >> GPUOS_NVME_AQA_ACQS_SHIFT) + 1;
	int ok = 1, kind = 0;

	if ((cc & GPUOS_NVME_CC_MPS_MASK) || (cc & GPUOS_NVME_CC_CSS_MASK) != GPUOS_NVME_CC_CSS_NVM ||
	    (cc & GPUOS_NVME_CC_AMS_MASK))
		ok = 0;
	/* admin queues hold 2 entries at least; bases are page aligned (3.1.9, 3.1.10) */
	if (asqs < 2 || acqs < 2 || (asq & (EMU_PAGE - 1)) || (acq & (EMU_PAGE - 1)))
		ok = 0;
	if (ok) {
		pthread_rwlock_rdlock(&e->rlock);
		if (!emu_translate(e, asq, (size_t)asqs * EMU_SQE_BYTES, &kind) ||
		    kind != GPUOS_EMU_REGION_HOST) {
			emu_dma_fault(e, asq);
			ok = 0;
		} else if (!emu_translate(e, acq, (size_t)acqs * EMU_CQE_BYTES, &kind) ||
			   kind != GPUOS_EMU_REGION_HOST) {
			emu_dma_fault(e, acq);
			ok = 0;
		}
		pthread_rwlock_unlock(&e->rlock);
	}
	if (!ok) {
		/* what QEMU does too: the driver sees CFS instead of a silent timeout */
		emu_csts_or(e, GPUOS_NVME_CSTS_CFS);
		return;
	}

	struct emu_sq *sq = &e->sq[0];
	struct emu_cq *cq = &e->cq[0];
	cq->iova = acq;
	cq->size = acqs;
	cq->qid = 0;
	cq->tail = cq->head = 0;
	cq->phase = 1;
	cq->was_full = 0;
	cq->state = Q_LIVE;
	sq->iova = asq;
	sq->size = asqs;
	sq->qid = 0;
	sq->cqid = 0;
	sq->cq = cq;
	sq->head = 0;
	/* the doorbells start at 0 like a reset controller's (3.1.24) */
	__atomic_store_n(emu_sq_db(e, 0), 0, __ATOMIC_RELAXED);
	__atomic_store_n(emu_cq_db(e, 0), 0, __ATOMIC_RELAXED);
	c->nsqa = c->ncqa = e->nq;
	c->io_queues_made = 0;
	c->admin_pend = 0;
	c->admin_ok = 1;
	c->shut = 0;
	c->enabled = 1;
	if (!e->o.never_ready && !__atomic_load_n(&e->dead, __ATOMIC_RELAXED))
		c->rdy_at_ns = gpuos_now_ns() + (uint64_t)e->o.rdy_ms * 1000000ull;
}

/* CC.EN 1 -> 0 (3.7.2): delete every I/O queue, forget the admin queue,
 * clear CSTS. Faults and the error log survive, as on a real device. */
static void ctrl_reset(struct gpuos_emu *e)
{
	struct emu_ctrl *c = &e->c;

	__atomic_store_n(&e->io_run, 0, __ATOMIC_RELEASE);
	emu_queues_reset(e);
	c->enabled = c->ready = c->admin_ok = c->shut = 0;
	c->rdy_at_ns = 0;
	c->admin_pend = 0;
	e->cq[0].state = Q_FREE;
	__atomic_store_n(emu_sq_db(e, 0), 0, __ATOMIC_RELAXED);
	__atomic_store_n(emu_cq_db(e, 0), 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->fatal, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->hung, 0, __ATOMIC_RELEASE); /* faults=hang: a reset brings it back */
	/* RDY = 0 last: the driver waits for it before it touches anything again */
	__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_CSTS), 0, __ATOMIC_RELEASE);
}

/* CC.SHN 00 -> 01/10 (3.6.1): SHST occurring, finish (normal) or drop
 * (abrupt) what is in flight, flush the backend, SHST complete. */
static void ctrl_shutdown(struct gpuos_emu *e, int abrupt)
{
	struct emu_ctrl *c = &e->c;

	csts_shst(e, GPUOS_NVME_CSTS_SHST_OCCURRING);
	__atomic_store_n(&e->io_run, 0, __ATOMIC_RELEASE);
	if (!abrupt && c->enabled) {
		/* commands already fetched complete; bounded by CAP.TO, the driver's own patience */
		uint64_t limit = gpuos_now_ns() + (uint64_t)e->o.to * 500000000ull;
		while (emu_workers_pending(e) && gpuos_now_ns() < limit &&
		       !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			emu_nap_ns(100000);
		struct emu_bio b = { .op = EMU_OP_FLUSH };
		emu_backend_exec(e, NULL, &b, 1);
	}
	c->shut = 1;
	csts_shst(e, GPUOS_NVME_CSTS_SHST_COMPLETE);
}

static void ctrl_cc(struct gpuos_emu *e, uint32_t old, uint32_t cc)
{
	int en_old = !!(old & GPUOS_NVME_CC_EN), en = !!(cc & GPUOS_NVME_CC_EN);
	uint32_t shn_old = old & GPUOS_NVME_CC_SHN_MASK, shn = cc & GPUOS_NVME_CC_SHN_MASK;

	if (!en_old && en) {
		ctrl_enable(e, cc);
	} else if (en_old && !en) {
		ctrl_reset(e);
	} else if (en && !e->c.ready && (old & ~GPUOS_NVME_CC_SHN_MASK) != (cc & ~GPUOS_NVME_CC_SHN_MASK)) {
		/* we poll values, not writes: a driver that gave up on RDY (or
		 * saw CFS) and rewrote CC with EN 0 then 1 between two polls
		 * shows up as EN 1 -> 1 with other fields changed; treat it as
		 * the reset and enable it was */
		ctrl_reset(e);
		ctrl_enable(e, cc);
	}
	if (!shn_old && shn)
		ctrl_shutdown(e, shn == GPUOS_NVME_CC_SHN_ABRUPT);
	else if (shn_old && !shn)
		csts_shst(e, GPUOS_NVME_CSTS_SHST_NORMAL);   /* as QEMU: SHN cleared, SHST cleared */
}

/* Serve up to EMU_ADMIN_BATCH admin commands; returns how many. */
static int ctrl_admin(struct gpuos_emu *e)
{
	struct emu_ctrl *c = &e->c;
	struct emu_sq *sq = &e->sq[0];
	struct emu_cq *cq = &e->cq[0];
	int done = 0;

	if (__atomic_load_n(&e->hung, __ATOMIC_ACQUIRE))
		return 0; /* faults=hang: admin commands go unanswered too */
	pthread_rwlock_rdlock(&e->rlock);
	if (c->admin_pend) {
		struct emu_pend *p = &c->admin_cqe;
		int r = emu_cq_post(e, cq, sq, p->cid, p->status, p->dw0);
		if (r == -EAGAIN)
			goto out;
		c->admin_pend = 0;
		if (r) {
			emu_set_fatal(e);
			goto out;
		}
		done++;
	}
	/* acquire: pairs with the driver's fence + tail store; the SQEs are then visible */
	uint32_t tail = __atomic_load_n(emu_sq_db(e, 0), __ATOMIC_ACQUIRE);
	if (tail >= sq->size)
		goto out;               /* invalid doorbell write: ignored */
	while (sq->head != tail && done < (int)EMU_ADMIN_BATCH) {
		struct gpuos_nvme_sqe cmd;
		if (emu_sq_fetch(e, sq, &cmd)) {
			emu_set_fatal(e);
			goto out;
		}
		sq->head = (sq->head + 1) % sq->size;
		uint32_t dw0 = 0;
		/* the admin handlers take the region lock themselves where they need it */
		pthread_rwlock_unlock(&e->rlock);
		uint16_t st = emu_admin_exec(e, &cmd, &dw0);
		pthread_rwlock_rdlock(&e->rlock);
		emu_stat_add(&e->st.admin_cmds, 1);
		emu_account(e, &cmd, 0, st, 0);
		done++;
		int r = emu_cq_post(e, cq, sq, cmd.cid, st, dw0);
		if (r == -EAGAIN) {
			c->admin_pend = 1;
			c->admin_cqe.cid = cmd.cid;
			c->admin_cqe.status = st;
			c->admin_cqe.dw0 = dw0;
			break;
		}
		if (r) {
			emu_set_fatal(e);
			break;
		}
	}
out:
	pthread_rwlock_unlock(&e->rlock);
	return done;
}

static void *ctrl_main(void *arg)
{
	struct gpuos_emu *e = arg;
	struct emu_ctrl *c = &e->c;
	uint32_t idle = 0;

	/* napping 20 us must not turn into the default 50 us of timer slack */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		int busy = 0;
		uint32_t cc = reg_load(e, GPUOS_NVME_REG_CC);

		if (cc != c->last_cc) {
			uint32_t old = c->last_cc;
			c->last_cc = cc;
			ctrl_cc(e, old, cc);
			busy = 1;
		}
		if (c->rdy_at_ns && gpuos_now_ns() >= c->rdy_at_ns) {
			c->rdy_at_ns = 0;
			c->ready = 1;
			__atomic_store_n(&e->io_run, 1, __ATOMIC_RELEASE);
			emu_csts_or(e, GPUOS_NVME_CSTS_RDY);
			busy = 1;
		}
		if (c->ready && c->admin_ok && !c->shut && !__atomic_load_n(&e->fatal, __ATOMIC_ACQUIRE))
			busy |= ctrl_admin(e) > 0;

		if (busy) {
			idle = 0;
		} else if (++idle < 256) {
			if (!(idle & 15))
				sched_yield();
			for (int i = 0; i < 16; i++)
				gpuos_pause();
		} else {
			emu_nap_ns(idle < 768 ? 20000 : emu_idle_nap_ns(idle - 768, 40000));
		}
	}
	return NULL;
}

/* ---- create / destroy ---- */

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int ilog2(uint64_t v)
{
	int n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

/* The options' copy in e and what follows from them: geometry, the
 * worker count, the serial number (member i of an array of n). */
static void set_up(struct gpuos_emu *e, const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env,
		   uint32_t n, uint32_t i)
{
	gpuos_emu_opts_default(&e->o);
	memcpy(&e->o, o, GPUOS_MIN(o->size, sizeof(e->o)));
	e->o.size = sizeof(e->o);
	if (env)
		e->env = *env;
	e->arr_n = n;
	e->arr_i = i;
	e->stripe_bytes = (uint64_t)e->o.stripe_kib * 1024u;
	e->lba_shift = (uint32_t)ilog2(e->o.lba_bytes);
	e->mdts_bytes = (uint64_t)e->o.mdts_kib * 1024u;
	e->nq = e->o.queues;
	e->nworkers = GPUOS_MIN(e->o.workers, e->o.queues);
	if (e->env.max_workers)
		e->nworkers = GPUOS_MAX(1u, GPUOS_MIN(e->nworkers, e->env.max_workers / n));
	if (!e->o.serial[0])
		snprintf(e->o.serial, sizeof(e->o.serial), "GPUOS%08X",
			 fnv1a(e->o.backend == GPUOS_EMU_NULL ? "null" : e->o.path));
	if (n > 1) {
		/* members tell themselves apart: "-i" at the end, the rest cut to fit */
		char sfx[8];
		int k = snprintf(sfx, sizeof(sfx), "-%u", i);
		size_t keep = GPUOS_MIN(strlen(e->o.serial), sizeof(e->o.serial) - 1 - (size_t)k);
		e->o.serial[keep] = 0;
		strcat(e->o.serial, sfx);
	}
}

static void init_locks(struct gpuos_emu *e)
{
	pthread_mutex_init(&e->elock, NULL);
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	/* a map() must not starve behind workers that hold the read lock back to back */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&e->rlock, &ra);
	pthread_rwlockattr_destroy(&ra);
}

/* The register file, from env.alloc_regs when given, with CAP and VS set
 * (and CC/CSTS as firmware leaves them for enabled=1). */
static int init_regs(struct gpuos_emu *e, char *err, size_t errlen)
{
	e->regs_len = emu_regs_len_for(e->nq, e->o.dstrd);
	if (e->env.alloc_regs) {
		e->regs = e->env.alloc_regs(e->env.ctx, e->regs_len);
	} else {
		e->regs_alloc = calloc(1, e->regs_len);
		e->regs = e->regs_alloc;
	}
	if (!e->regs) {
		emu_errf(err, errlen, "emu: cannot allocate %zu bytes of registers", e->regs_len);
		return -ENOMEM;
	}

	e->cap = (uint64_t)(e->o.depth - 1) << GPUOS_NVME_CAP_MQES_SHIFT |
		 1ull << GPUOS_NVME_CAP_CQR_SHIFT |
		 (uint64_t)e->o.to << GPUOS_NVME_CAP_TO_SHIFT |
		 (uint64_t)e->o.dstrd << GPUOS_NVME_CAP_DSTRD_SHIFT |
		 GPUOS_NVME_CAP_CSS_NVM << GPUOS_NVME_CAP_CSS_SHIFT |
		 0ull << GPUOS_NVME_CAP_MPSMIN_SHIFT | 0ull << GPUOS_NVME_CAP_MPSMAX_SHIFT;
	__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_CAP), (uint32_t)e->cap, __ATOMIC_RELAXED);
	__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_CAP + 4), (uint32_t)(e->cap >> 32), __ATOMIC_RELAXED);
	__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_VS), GPUOS_NVME_VS(1, 4, 0), __ATOMIC_RELAXED);
	if (e->o.start_enabled) {
		/* as firmware leaves it: enabled and ready, but with no admin queue
		 * the driver may use; the driver must reset the controller first */
		uint32_t cc = GPUOS_NVME_CC_EN | GPUOS_NVME_SQES_LOG2 << GPUOS_NVME_CC_IOSQES_SHIFT |
			      GPUOS_NVME_CQES_LOG2 << GPUOS_NVME_CC_IOCQES_SHIFT;
		__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_CC), cc, __ATOMIC_RELAXED);
		__atomic_store_n(emu_reg(e, GPUOS_NVME_REG_CSTS), GPUOS_NVME_CSTS_RDY, __ATOMIC_RELAXED);
		e->c.last_cc = cc;
		e->c.enabled = e->c.ready = 1;
	}
	/* the regs' initial values are published to the threads by pthread_create */
	return 0;
}

/* One controller; member i of an array of n, sharing be when it is not NULL. */
static int create_one(const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env, uint32_t n, uint32_t i,
		      struct emu_backend *be, struct gpuos_emu **out, char *err, size_t errlen)
{
	struct gpuos_emu *e;
	int r;

	if (err && errlen)
		err[0] = 0;
	if (!o || !out) {
		emu_errf(err, errlen, "emu: no options");
		return -EINVAL;
	}
	*out = NULL;
	if (o->size < offsetof(struct gpuos_emu_opts, serial) + sizeof(o->serial)) {
		emu_errf(err, errlen, "emu: opts.size %zu is not sizeof(struct gpuos_emu_opts)", o->size);
		return -EINVAL;
	}
	r = emu_opts_check(o, err, errlen);
	if (r)
		return r;

	e = calloc(1, sizeof(*e));
	if (!e) {
		emu_errf(err, errlen, "emu: out of memory");
		return -ENOMEM;
	}
	set_up(e, o, env, n, i);
	init_locks(e);

	e->reg = calloc(GPUOS_EMU_MAX_REGIONS, sizeof(*e->reg));
	e->sq = calloc(e->nq + 1u, sizeof(*e->sq));
	e->cq = calloc(e->nq + 1u, sizeof(*e->cq));
	if (!e->reg || !e->sq || !e->cq) {
		emu_errf(err, errlen, "emu: out of memory");
		r = -ENOMEM;
		goto fail;
	}

	r = be ? emu_backend_share(e, be) : emu_backend_open(e, err, errlen);
	if (r)
		goto fail;
	r = init_regs(e, err, errlen);
	if (r)
		goto fail;

	r = emu_workers_start(e, err, errlen);
	if (r)
		goto fail;
	r = pthread_create(&e->ctrl_th, NULL, ctrl_main, e);
	if (r) {
		emu_errf(err, errlen, "emu: cannot start the controller thread: %s", strerror(r));
		r = -r;
		goto fail;
	}
	pthread_setname_np(e->ctrl_th, "emu-ctrl");
	e->ctrl_started = 1;
	*out = e;
	return 0;
fail:
	gpuos_emu_destroy(e);
	return r;
}

int gpuos_emu_create(const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env,
		     struct gpuos_emu **out, char *err, size_t errlen)
{
	if (o && o->size >= offsetof(struct gpuos_emu_opts, ssds) + sizeof(o->ssds) && o->ssds > 1) {
		emu_errf(err, errlen, "emu: ssds=%u is an array: gpuos_emu_create_array", o->ssds);
		return -EINVAL;
	}
	return create_one(o, env, 1, 0, NULL, out, err, errlen);
}

int gpuos_emu_create_array(const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env,
			   struct gpuos_emu **out, char *err, size_t errlen)
{
	uint32_t n = 1;
	int r;

	if (o && o->size >= offsetof(struct gpuos_emu_opts, ssds) + sizeof(o->ssds))
		n = o->ssds ? o->ssds : 1;
	if (!out) {
		emu_errf(err, errlen, "emu: no output array");
		return -EINVAL;
	}
	if (n > GPUOS_EMU_MAX_SSDS) {
		emu_errf(err, errlen, "emu: ssds: must be 1..%d, not %u", GPUOS_EMU_MAX_SSDS, n);
		return -EINVAL;
	}
	r = create_one(o, env, n, 0, NULL, &out[0], err, errlen);
	for (uint32_t i = 1; !r && i < n; i++) {
		r = create_one(o, env, n, i, out[0]->be, &out[i], err, errlen);
		if (r)
			while (i--)
				gpuos_emu_destroy(out[i]);
	}
	return r;
}

void gpuos_emu_destroy(struct gpuos_emu *e)
{
	if (!e)
		return;
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
	if (e->ctrl_started)
		pthread_join(e->ctrl_th, NULL);
	emu_workers_join(e);
	emu_backend_close(e);
	if (e->regs) {
		if (e->regs_alloc)
			free(e->regs_alloc);
		else if (e->env.free_regs)
			e->env.free_regs(e->env.ctx, e->regs, e->regs_len);
	}
	emu_sgl_free(&e->c.sgl);
	free(e->reg);
	for (uint32_t q = 0; e->sq && q <= e->nq; q++)
		free(e->sq[q].live);
	free(e->sq);
	free(e->cq);
	pthread_rwlock_destroy(&e->rlock);
	pthread_mutex_destroy(&e->elock);
	free(e);
}

volatile uint32_t *gpuos_emu_regs(struct gpuos_emu *e)
{
	return e->regs;
}

size_t gpuos_emu_regs_len(struct gpuos_emu *e)
{
	return e->regs_len;
}

uint64_t gpuos_emu_ns_bytes(struct gpuos_emu *e)
{
	return e->nlba << e->lba_shift;
}

uint64_t gpuos_emu_image_bytes(struct gpuos_emu *e)
{
	return e->be->bytes;
}

void gpuos_emu_get_stats(struct gpuos_emu *e, struct gpuos_emu_stats *s)
{
	const struct gpuos_emu_stats *t = &e->st;

	s->admin_cmds = __atomic_load_n(&t->admin_cmds, __ATOMIC_RELAXED);
	s->io_cmds = __atomic_load_n(&t->io_cmds, __ATOMIC_RELAXED);
	s->read_bytes = __atomic_load_n(&t->read_bytes, __ATOMIC_RELAXED);
	s->write_bytes = __atomic_load_n(&t->write_bytes, __ATOMIC_RELAXED);
	s->errors = __atomic_load_n(&t->errors, __ATOMIC_RELAXED);
	s->dma_faults = __atomic_load_n(&t->dma_faults, __ATOMIC_RELAXED);
	s->last_fault_iova = __atomic_load_n(&t->last_fault_iova, __ATOMIC_RELAXED);
	s->lost = __atomic_load_n(&t->lost, __ATOMIC_RELAXED);
	s->cq_full_waits = __atomic_load_n(&t->cq_full_waits, __ATOMIC_RELAXED);
	s->csts = __atomic_load_n(emu_reg(e, GPUOS_NVME_REG_CSTS), __ATOMIC_ACQUIRE);
	s->dma_direct = e->be && e->be->ram_registered;
	s->dma_cmds = __atomic_load_n(&t->dma_cmds, __ATOMIC_RELAXED);
	s->dma_copies = __atomic_load_n(&t->dma_copies, __ATOMIC_RELAXED);
	s->dma_gathered = __atomic_load_n(&t->dma_gathered, __ATOMIC_RELAXED);
	s->dma_batches = __atomic_load_n(&t->dma_batches, __ATOMIC_RELAXED);
	s->dma_waits = __atomic_load_n(&t->dma_waits, __ATOMIC_RELAXED);
	s->busy_ns = __atomic_load_n(&t->busy_ns, __ATOMIC_RELAXED);
	s->io_fetched = __atomic_load_n(&t->io_fetched, __ATOMIC_RELAXED);
	s->dups = __atomic_load_n(&t->dups, __ATOMIC_RELAXED);
	s->cid_conflicts = __atomic_load_n(&t->cid_conflicts, __ATOMIC_RELAXED);
}
