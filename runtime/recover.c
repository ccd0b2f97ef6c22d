/* SPDX-License-Identifier: MIT */
/*
 * The runtime's side of a command's end (runtime/recover.h; docs/design.md,
 * "The life of a command"): admin Abort through the controller's admin
 * queue, and the reset protocol.
 * Lane 0 of a participant runs all of it; these paths are cold.
 */
#include "recover.h"
#include "util.h"

GPUOS_INLINE GPUOS_HD const struct gpuos_rt_admin *rec_admin(const struct gpuos_rt_desc *d, uint32_t m)
{
	return d->admin ? (const struct gpuos_rt_admin *)(uintptr_t)d->admin + m : 0;
}

GPUOS_INLINE GPUOS_HD volatile uint32_t *rec_reg(const struct gpuos_rt_admin *A, uint32_t off)
{
	return (volatile uint32_t *)(uintptr_t)(A->regs + off);
}

GPUOS_HD int gpuos_rt_can_reset(const struct gpuos_rt_desc *d, uint32_t m)
{
	const struct gpuos_rt_admin *A = rec_admin(d, m);
	return A && A->regs && A->sq && A->depth >= 2;
}

/* ---- participants --------------------------------------------------------------- */

GPUOS_HD void gpuos_rt_rec_enter(const struct gpuos_rt_desc *d, struct rt_recover *rs)
{
	uint32_t spins = 0;
	(void)d;
	for (;;) {
		uint32_t w = gpuos_load_acquire_dev32(&rs->word);
		/* acquire: a reset that ended before we join is seen whole (its
		 * gen[] and the queues it made) */
		if (rt_rec_phase(w) == RT_PH_RUN && gpuos_cas_acquire_dev32(&rs->word, w, w + 1u) == w)
			return;
		gpuos_backoff(&spins);
	}
}

GPUOS_HD int gpuos_rt_rec_leave(struct rt_recover *rs)
{
	for (;;) {
		uint32_t w = gpuos_load_acquire_dev32(&rs->word);
		if (rt_rec_phase(w) != RT_PH_RUN)
			return 0;
		/* acq_rel: our last uses of the queues before a later resetter's
		 * count, which no longer waits for us */
		if (gpuos_cas_acq_rel_dev32(&rs->word, w, w - 1u) == w)
			return 1;
	}
}

GPUOS_HD void gpuos_rt_rec_ack(struct rt_recover *rs)
{
	gpuos_fetch_add_release_dev32(&rs->acks, 1u);
}

/* ---- the admin queue (under rs->lock) ----------------------------------------------- */

GPUOS_INLINE GPUOS_HD int lock_try(struct rt_recover *rs)
{
	/* acquire: pairs with the last holder's release; the admin positions
	 * and rs->admin[] it wrote are ours to read */
	return gpuos_cas_acquire_dev32(&rs->lock, 0u, 1u) == 0u;
}

GPUOS_INLINE GPUOS_HD void lock_release(struct rt_recover *rs)
{
	gpuos_store_release_dev32(&rs->lock, 0u);
}

/* The admin queues' positions of this launch: boot wrote where it left
 * them before the launch (kernel start orders that before us). */
GPUOS_NOINLINE GPUOS_HD static void admin_load(const struct gpuos_rt_desc *d, struct rt_recover *rs)
{
	const struct gpuos_rt_ctl *ctl = (const struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	uint32_t e = gpuos_load_relaxed_sys32(&ctl->epoch) + 1u, m;
	if (rs->launch == e)
		return;
	for (m = 0; m < d->nctrl; m++) {
		const struct gpuos_rt_admin *A = rec_admin(d, m);
		struct gpuos_qp *qp = &rs->admin[m];
		if (!A || !A->sq)
			continue;
		gpuos_qp_init(qp, (void *)(uintptr_t)A->sq, (void *)(uintptr_t)A->cq,
			      (volatile uint32_t *)(uintptr_t)A->sq_db, (volatile uint32_t *)(uintptr_t)A->cq_db,
			      A->depth, 0);
		qp->sq_tail = A->sq_tail;
		qp->sq_head = A->sq_head;
		qp->cq_head = A->cq_head;
		qp->phase = A->phase;
	}
	rs->launch = e;
}

/* Leave the position where boot finds it after the runtime parks or stops
 * (host memory; boot reads it after the runtime has left). */
GPUOS_INLINE GPUOS_HD void admin_save(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m)
{
	struct gpuos_rt_admin *A = (struct gpuos_rt_admin *)(uintptr_t)d->admin + m;
	const struct gpuos_qp *qp = &rs->admin[m];
	gpuos_store_relaxed_sys32(&A->sq_tail, qp->sq_tail);
	gpuos_store_relaxed_sys32(&A->sq_head, qp->sq_head);
	gpuos_store_relaxed_sys32(&A->cq_head, qp->cq_head);
	gpuos_store_relaxed_sys32(&A->phase, qp->phase);
}

/* Consume every posted admin completion; returns the status of the one
 * with CID cid (0xffff: none of them), others are done with (an Abort's
 * answer changes nothing here: the command's own completion, or the
 * reset, decides). */
GPUOS_INLINE GPUOS_HD uint32_t admin_reap(struct gpuos_qp *qp, uint16_t cid)
{
	struct gpuos_nvme_cqe c;
	uint32_t st = 0xffffu;
	/* The CQE's acquire (peek) pairs with the controller's posting. */
	while (gpuos_qp_cq_peek(qp, 0, &c)) {
		gpuos_qp_cq_consume(qp, 1, c.sqhd);
		if (c.cid == cid)
			st = gpuos_nvme_status_of(c.status);
	}
	return st;
}

/* Admin commands of the runtime in flight at once, at most: the NVMe Abort
 * Command Limit is 4 at the least a controller may report (ACL is 0's
 * based, and the spec recommends 4), and boot finds room when it takes the
 * queue back. */
#define RT_ADMIN_INFLIGHT 4u

/* Put one admin command on controller m's admin queue; its CID, or 0 when
 * RT_ADMIN_INFLIGHT are out (or the queue is full). */
GPUOS_INLINE GPUOS_HD uint16_t admin_put(struct rt_recover *rs, uint32_t m, struct gpuos_nvme_sqe *e)
{
	struct gpuos_qp *qp = &rs->admin[m];
	(void)admin_reap(qp, 0);
	if (gpuos_qp_sq_space(qp) == 0 || qp->depth - 1u - gpuos_qp_sq_space(qp) >= RT_ADMIN_INFLIGHT)
		return 0;
	e->cid = (uint16_t)(GPUOS_RT_ADMIN_CID | (rs->next_cid++ & 0x7fffu));
	gpuos_qp_sq_put(qp, 0, e);
	/* the fence in gpuos_qp_sq_ring publishes the SQE before the doorbell */
	gpuos_qp_sq_ring(qp, 1);
	return e->cid;
}

/* One admin command, waited for up to CAP.TO; its status, or 0xffff. */
GPUOS_NOINLINE GPUOS_HD static uint32_t admin_run(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m,
						  struct gpuos_nvme_sqe *e)
{
	const struct gpuos_rt_admin *A = rec_admin(d, m);
	uint64_t t0 = gpuos_now_ns(), limit = (uint64_t)A->to_ms * 1000000ull;
	uint32_t spins = 0, st;
	uint16_t cid = admin_put(rs, m, e);
	if (!cid)
		return 0xffffu;
	while ((st = admin_reap(&rs->admin[m], cid)) == 0xffffu && gpuos_now_ns() - t0 < limit)
		gpuos_backoff(&spins);
	return st;
}

GPUOS_HD int gpuos_rt_abort(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m, uint16_t sqid,
			    uint16_t cid)
{
	const struct gpuos_rt_admin *A = rec_admin(d, m);
	struct gpuos_nvme_sqe e;
	int sent = 0;
	if (!A || !A->sq || A->depth < 2)
		return -1;
	if (!lock_try(rs))
		return 0;
	if (rt_rec_phase(gpuos_load_acquire_dev32(&rs->word)) == RT_PH_RUN) {
		admin_load(d, rs);
		__builtin_memset(&e, 0, sizeof(e));
		e.opc = GPUOS_NVME_ADMIN_ABORT;
		e.cdw10 = (uint32_t)sqid | (uint32_t)cid << 16; /* SQID 15:0, CID 31:16 (5.1) */
		sent = admin_put(rs, m, &e) != 0;
		admin_save(d, rs, m);
	}
	lock_release(rs);
	return sent;
}

/* ---- the reset --------------------------------------------------------------------- */

/* Only the resetter writes dead (one at a time: the phase CAS); anyone may
 * read it (gpuos_rt_dead). The first failure's reason stays (go_fatal
 * reports it): why is enum gpuos_rt_fatal | status << 16. */
GPUOS_INLINE GPUOS_HD void rec_mark_dead(struct rt_recover *rs, uint32_t m, uint32_t why, uint32_t csts)
{
	if (!gpuos_load_relaxed_dev32(&rs->dead)) {
		gpuos_store_relaxed_dev32(&rs->dead_why, why | m << 8);
		gpuos_store_relaxed_dev32(&rs->dead_csts, csts);
	}
	gpuos_store_relaxed_dev32(&rs->dead, gpuos_load_relaxed_dev32(&rs->dead) | 1u << m);
}

/* Wait until CSTS.RDY == rdy, bounded by CAP.TO; 0, or -1 (timeout, CFS,
 * or the controller gone) with the last CSTS in *last. The acquire read
 * pairs with the controller's last writes before its RDY change. */
GPUOS_NOINLINE GPUOS_HD static int wait_rdy(const struct gpuos_rt_admin *A, uint32_t rdy, uint32_t *last)
{
	uint64_t t0 = gpuos_now_ns(), limit = (uint64_t)A->to_ms * 1000000ull;
	uint32_t spins = 0;
	for (;;) {
		uint32_t csts = gpuos_mmio_read_acquire32(rec_reg(A, GPUOS_NVME_REG_CSTS));
		*last = csts;
		if (csts == 0xffffffffu || (rdy && (csts & GPUOS_NVME_CSTS_CFS)))
			return -1;
		if ((csts & GPUOS_NVME_CSTS_RDY) == rdy)
			return 0;
		if (gpuos_now_ns() - t0 > limit)
			return -1;
		gpuos_backoff(&spins);
	}
}

GPUOS_HD int gpuos_rt_reset_begin(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m)
{
	const struct gpuos_rt_admin *A = rec_admin(d, m);
	uint32_t w = gpuos_load_acquire_dev32(&rs->word), spins = 0, csts;
	if (!gpuos_rt_can_reset(d, m) || rt_rec_phase(w) != RT_PH_RUN ||
	    gpuos_cas_acq_rel_dev32(&rs->word, w, (uint32_t)RT_PH_DISABLING << 16 | (w & 0xffffu)) != w)
		return 0;
	/* Nobody joins or leaves now. The admin queue is ours for the whole
	 * reset: a holder never waits on anything, so this ends. */
	while (!lock_try(rs))
		gpuos_backoff(&spins);
	/* Relaxed atomics: participants read them while they poll (ordered
	 * by the word, whose release below publishes them). */
	gpuos_store_relaxed_dev32(&rs->ctrl, m);
	gpuos_store_relaxed_dev32(&rs->epoch, gpuos_load_relaxed_dev32(&rs->epoch) + 1u);
	gpuos_store_relaxed_dev32(&rs->acks, 0u);
	gpuos_mmio_write32(rec_reg(A, GPUOS_NVME_REG_CC), A->cc & ~GPUOS_NVME_CC_EN);
	if (wait_rdy(A, 0, &csts)) {
		/* Not even a reset brings it back: fail it (CTRL_FATAL). */
		rec_mark_dead(rs, m, csts == 0xffffffffu ? (uint32_t)GPUOS_RT_FATAL_GONE : (uint32_t)GPUOS_RT_FATAL_NOT_STOPPED,
			      csts);
		lock_release(rs);
		/* release: dead before RUN; pairs with the participants' acquire */
		gpuos_store_release_dev32(&rs->word, w & 0xffffu);
		return 0;
	}
	/* release: the epoch, and RDY = 0 seen (nothing more comes from the
	 * controller), before the participants drop; pairs with their acquire */
	gpuos_store_release_dev32(&rs->word, (uint32_t)RT_PH_DROP << 16 | (w & 0xffffu));
	return 1;
}

/* Zero n CQ entries: a fresh queue's memory must hold no phase tag of 1
 * (the controller's first pass posts 1, NVMe 4.6). */
GPUOS_INLINE GPUOS_HD void zero_cq(uint64_t cq, uint32_t n)
{
	gpuos_buf_zero((void *)(uintptr_t)cq, (uint64_t)n * sizeof(struct gpuos_nvme_cqe));
}

GPUOS_HD void gpuos_rt_reset_finish(const struct gpuos_rt_desc *d, struct rt_recover *rs)
{
	uint32_t m = gpuos_load_relaxed_dev32(&rs->ctrl), w = gpuos_load_relaxed_dev32(&rs->word), present = w & 0xffffu, q, spins = 0;
	const struct gpuos_rt_admin *A = rec_admin(d, m);
	struct gpuos_nvme_sqe e;
	uint32_t why = GPUOS_RT_FATAL_NONE, st = 0, csts = 0;

	/* acquire: pairs with each participant's release ack; they are done
	 * with the queues of m until RUN */
	while (gpuos_load_acquire_dev32(&rs->acks) < present)
		gpuos_backoff(&spins);
	for (q = 0; q < d->nqueues + (d->meta ? d->nctrl : 0u); q++)
		if (d->queue[q].ctrl == m && (q < d->nqueues || q - d->nqueues == m))
			zero_cq(d->queue[q].cq, d->queue[q].depth);
	zero_cq(A->cq, A->depth);
	gpuos_qp_init(&rs->admin[m], (void *)(uintptr_t)A->sq, (void *)(uintptr_t)A->cq,
		      (volatile uint32_t *)(uintptr_t)A->sq_db, (volatile uint32_t *)(uintptr_t)A->cq_db, A->depth, 0);
	/* The admin queue's registers again, as bring-up writes them (a
	 * controller reset keeps them by the spec; not every device does).
	 * The zeroed queues before the controller may write them again: the
	 * fence orders them before these MMIO stores and CC.EN. */
	gpuos_fence_sys();
	gpuos_mmio_write32(rec_reg(A, GPUOS_NVME_REG_AQA), A->aqa);
	gpuos_mmio_write64(rec_reg(A, GPUOS_NVME_REG_ASQ), A->asq_iova);
	gpuos_mmio_write64(rec_reg(A, GPUOS_NVME_REG_ACQ), A->acq_iova);
	gpuos_mmio_write32(rec_reg(A, GPUOS_NVME_REG_CC), A->cc | GPUOS_NVME_CC_EN);
	if (wait_rdy(A, GPUOS_NVME_CSTS_RDY, &csts))
		why = GPUOS_RT_FATAL_NOT_READY;
	if (!why) {
		__builtin_memset(&e, 0, sizeof(e));
		e.opc = GPUOS_NVME_ADMIN_SET_FEATURES;
		e.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES;
		e.cdw11 = (A->nio - 1u) << 16 | (A->nio - 1u); /* NCQR, NSQR: 0's based */
		st = admin_run(d, rs, m, &e); /* a failure: ADMIN, below */
	}
	for (q = 0; !why && !st && q < d->nqueues + (d->meta ? d->nctrl : 0u); q++) {
		const struct gpuos_rt_queue *Q = &d->queue[q];
		if (Q->ctrl != m || (q >= d->nqueues && q - d->nqueues != m))
			continue;
		__builtin_memset(&e, 0, sizeof(e));
		e.opc = GPUOS_NVME_ADMIN_CREATE_CQ;
		e.prp1 = A->cq_iova[q];
		e.cdw10 = (Q->depth - 1u) << 16 | Q->qid;
		e.cdw11 = GPUOS_NVME_CREATE_Q_PC; /* polled: no interrupts */
		st = admin_run(d, rs, m, &e);
		if (st)
			break;
		__builtin_memset(&e, 0, sizeof(e));
		e.opc = GPUOS_NVME_ADMIN_CREATE_SQ;
		e.prp1 = A->sq_iova[q];
		e.cdw10 = (Q->depth - 1u) << 16 | Q->qid;
		e.cdw11 = Q->qid << 16 | GPUOS_NVME_CREATE_Q_PC;
		st = admin_run(d, rs, m, &e);
	}
	if (st && !why)
		why = GPUOS_RT_FATAL_ADMIN;
	admin_save(d, rs, m);
	if (why)
		rec_mark_dead(rs, m, why | st << 16,
			      why == GPUOS_RT_FATAL_NOT_READY ? csts : gpuos_mmio_read32(rec_reg(A, GPUOS_NVME_REG_CSTS)));
	gpuos_store_relaxed_dev32(&rs->gen[m], gpuos_load_relaxed_dev32(&rs->gen[m]) + 1u);
	lock_release(rs);
	/* release: the queues made again (or dead), gen[m], before RUN; pairs
	 * with the participants' acquire of the word */
	gpuos_store_release_dev32(&rs->word, present);
}
