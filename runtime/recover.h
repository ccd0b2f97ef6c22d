/* SPDX-License-Identifier: MIT */
/*
 * runtime/recover.h - the end of a command the controller did not answer
 * (docs/design.md, "The life of a command"): an NVMe Abort, and when that
 * does not bring it back, a controller reset the runtime does by itself
 * (disable, enable, queues re-created, as bring-up does). No CPU on this
 * path.
 *
 * A reset stops every participant (the service warps and the metadata
 * warp) at once, because each owns queues of the controller:
 *   RUN -> DISABLING   one participant (the resetter) wins a CAS, clears
 *                      CC.EN and waits for CSTS.RDY = 0: from then on the
 *                      controller writes nothing (NVMe 3.7.2)
 *       -> DROP        each participant fails its commands on that
 *                      controller (CTRL_RESET), stops reaping and
 *                      submitting, and acknowledges
 *       -> ENABLING    every participant present has acknowledged: the
 *                      resetter zeroes the CQs, sets CC.EN, waits for
 *                      RDY = 1, and re-creates every I/O queue
 *       -> RUN         participants start their queues on it from zero.
 * Participants count themselves in at launch and out when they leave, in
 * the same word as the phase: nobody leaves or joins during a reset, so the
 * resetter knows how many acknowledgements to wait for.
 */
#ifndef GPUOS_RUNTIME_RECOVER_H
#define GPUOS_RUNTIME_RECOVER_H

#include "gpuos/internal/rt.h"
#include "gpuos/internal/queue.h"

GPUOS_EXTERN_C_BEGIN

enum { RT_PH_RUN = 0, RT_PH_DISABLING = 1, RT_PH_DROP = 2, RT_PH_ENABLING = 3 };

/* Runtime-space CIDs of the runtime's admin commands: the top half, so a
 * stale completion never matches one of boot's (bringup.c keeps below). */
#define GPUOS_RT_ADMIN_CID 0x8000u

/* Shared by the participants; in the state region (device memory on the
 * GPU). word, ctrl, epoch, acks, dead, gen[] are read while others may
 * write them: device-scope atomics only (the word's release/acquire
 * orders the rest). launch, next_cid and admin[] belong to the holder of
 * lock. */
struct rt_recover {
	uint32_t word;         /* phase << 16 | participants present */
	uint32_t ctrl;         /* the controller being reset */
	uint32_t epoch;        /* resets begun; a participant drops once per epoch */
	uint32_t acks;         /* participants that dropped in this epoch */
	uint32_t lock;         /* the admin queues: 0 free, 1 held */
	uint32_t dead;         /* bit m: controller m could not be reset */
	uint32_t dead_why;     /* the first failed reset: gpuos_rt_fatal | m << 8 | status << 16 */
	uint32_t dead_csts;    /* and the CSTS read when it gave up */
	uint32_t launch;       /* ctl->epoch + 1 the admin positions were loaded for */
	uint32_t next_cid;
	uint32_t gen[GPUOS_RT_MAX_CTRL];  /* resets completed, per controller */
	struct gpuos_qp admin[GPUOS_RT_MAX_CTRL];
};

GPUOS_INLINE GPUOS_HD uint32_t rt_rec_phase(uint32_t word) { return word >> 16; }

/* The one rt_recover of this runtime (in the state region's header,
 * runtime/engine/serve.c). */
GPUOS_HD struct rt_recover *gpuos_rt_recover(const struct gpuos_rt_desc *d);

/* Queue pair qp driving descriptor queue q from its start: at the first
 * launch, and after a reset re-created the queue (head, tail and phase as a
 * new queue's). */
GPUOS_INLINE GPUOS_HD void gpuos_rt_queue_start(struct gpuos_qp *qp, const struct gpuos_rt_desc *d,
						const struct gpuos_rt_queue *q)
{
	gpuos_qp_init(qp, (void *)(uintptr_t)q->sq, (void *)(uintptr_t)q->cq, (volatile uint32_t *)(uintptr_t)q->sq_db,
		      (volatile uint32_t *)(uintptr_t)q->cq_db, q->depth, q->qid);
	qp->dev = (d->flags & GPUOS_RT_QUEUES_DEVICE) != 0;
}

/* Lane 0. Count in at launch (waits for a reset in progress to end). */
GPUOS_HD void gpuos_rt_rec_enter(const struct gpuos_rt_desc *d, struct rt_recover *rs);
/* Lane 0. Count out; 0 while a reset is in progress (stay and take part). */
GPUOS_HD int gpuos_rt_rec_leave(struct rt_recover *rs);
/* Lane 0. The word, acquired: pairs with the resetter's release of each
 * phase (and what it did before: RDY = 0 seen, the queues re-created). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_rt_rec_word(struct rt_recover *rs)
{
	return gpuos_load_acquire_dev32(&rs->word);
}
/* Lane 0. This participant has dropped its commands of the controller
 * being reset: release, so the resetter (acquire of acks) sees it done
 * with those queues before it zeroes them. */
GPUOS_HD void gpuos_rt_rec_ack(struct rt_recover *rs);
/* Lane 0. Send an NVMe Abort for command cid on queue sqid of controller
 * m; returns 1 when sent, 0 when it cannot be now (try again later), -1
 * when the runtime has no admin queue for m (gpu-null). */
GPUOS_HD int gpuos_rt_abort(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m, uint16_t sqid,
			    uint16_t cid);
/* Lane 0. Start resetting controller m: 1 when this participant is the
 * resetter and the controller is disabled (phase DROP: now drop, ack and
 * call gpuos_rt_reset_finish), 0 when another reset is in progress or the
 * controller cannot be reset (rs->dead says). */
GPUOS_HD int gpuos_rt_reset_begin(const struct gpuos_rt_desc *d, struct rt_recover *rs, uint32_t m);
/* Lane 0, the resetter after its own ack: wait for the others, re-enable,
 * re-create the queues, back to RUN. */
GPUOS_HD void gpuos_rt_reset_finish(const struct gpuos_rt_desc *d, struct rt_recover *rs);
/* Controllers a reset could not bring back (bit m). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_rt_dead(struct rt_recover *rs)
{
	return gpuos_load_relaxed_dev32(&rs->dead);
}
/* Whether the runtime can reset controller m by itself. */
GPUOS_HD int gpuos_rt_can_reset(const struct gpuos_rt_desc *d, uint32_t m);

/* A participant (a service warp, the metadata warp) as the reset-follower
 * sees it: what it has followed, and its own part of a reset. */
struct rt_rec_part {
	uint32_t *epoch;       /* the last reset epoch it dropped for */
	uint32_t *gen;         /* [nctrl]: resets of each controller its queues follow */
	/* DROP: end what it has at controller m, which writes nothing more
	 * (its requests fail with CTRL_RESET). */
	void (*drop)(void *ctx, uint32_t m);
	/* RUN again: start its queues of m from zero, as the reset re-created them. */
	void (*restart)(void *ctx, uint32_t m);
	void *ctx;
};

/* Lane 0 of a participant: the one reset-follower. From the word (read
 * with gpuos_rt_rec_word, whose acquire orders the loads below after the
 * resetter's release of the phase): in DROP, once an epoch, drop what it has
 * on the controller being reset, then acknowledge (gpuos_rt_rec_ack's
 * release: the drop before the resetter zeroes the queues); in RUN, restart
 * its queues of each controller reset since it last looked. Returns 1
 * while a reset keeps it from its queues (no reaping, no submitting). */
GPUOS_INLINE GPUOS_HD int gpuos_rt_rec_follow(const struct gpuos_rt_desc *d, uint32_t word, const struct rt_rec_part *p)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	uint32_t ph = rt_rec_phase(word), m;
	if (ph == RT_PH_DROP && *p->epoch != gpuos_load_relaxed_dev32(&rs->epoch)) {
		p->drop(p->ctx, gpuos_load_relaxed_dev32(&rs->ctrl));
		*p->epoch = gpuos_load_relaxed_dev32(&rs->epoch);
		gpuos_rt_rec_ack(rs);
	}
	if (ph != RT_PH_RUN)
		return 1;
	for (m = 0; m < d->nctrl; m++) {
		if (p->gen[m] == gpuos_load_relaxed_dev32(&rs->gen[m]))
			continue;
		p->restart(p->ctx, m);
		p->gen[m] = gpuos_load_relaxed_dev32(&rs->gen[m]);
	}
	return 0;
}

/* Lane 0 of a participant: reset controller m, or take part in the reset
 * another participant began; either way follow the word as far as it goes
 * now. Returns 1 when this participant was the resetter. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_rec_reset(const struct gpuos_rt_desc *d, uint32_t m, const struct rt_rec_part *p)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	int did = gpuos_rt_reset_begin(d, rs, m);
	if (did) {
		gpuos_rt_rec_follow(d, gpuos_rt_rec_word(rs), p); /* our own drop and ack */
		gpuos_rt_reset_finish(d, rs);
	}
	gpuos_rt_rec_follow(d, gpuos_rt_rec_word(rs), p);
	return did;
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_RECOVER_H */
