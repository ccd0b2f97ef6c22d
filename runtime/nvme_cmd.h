/* SPDX-License-Identifier: MIT */
/*
 * runtime/nvme_cmd.h - one NVMe read command's life, the same for every
 * warp that sends them (docs/design.md, "The life of a command"): its SQE
 * and PRPs, its completion, whether a failure is sent again, and the steps
 * when it is late (Abort, then a controller reset). The service warps send
 * batches of them (runtime/engine/nvme.c: plan, submit, reap;
 * runtime/engine/timeouts.c); the metadata warp sends one at a time and
 * waits (runtime/files_io.c, dev_cmd). One engine: neither has a rule of its
 * own for these.
 *
 * Context: lane 0 unless a function says otherwise.
 */
#ifndef GPUOS_RUNTIME_NVME_CMD_H
#define GPUOS_RUNTIME_NVME_CMD_H

#include "gpuos/internal/rt.h"
#include "gpuos/internal/queue.h"
#include "recover.h"

GPUOS_EXTERN_C_BEGIN

/* Any lane: the read SQE of nlb blocks at controller LBA lba into iova
 * (DMA memory the controller reaches), at place `ahead` past qp's tail.
 * A transfer of more than two pages names a PRP list at list_iova; list:
 * where to write that list now (runtime address), or NULL when it is
 * prebuilt there. Nothing is visible to the controller before the caller's
 * fence and doorbell (gpuos_qp_sq_ring, or one fence for a batch). */
GPUOS_INLINE GPUOS_HD void gpuos_rt_cmd_read(const struct gpuos_rt_desc *d, struct gpuos_qp *qp, uint32_t ahead,
					     uint16_t cid, uint64_t lba, uint32_t nlb, uint64_t iova, uint64_t *list,
					     uint64_t list_iova)
{
	uint64_t prp2;
	uint32_t n = gpuos_nvme_prp2(iova, (uint64_t)nlb << d->lba_shift, &prp2);
	if (n) {
		/* More than two pages: n <= xfer_bytes / 4 KiB <= 512 entries,
		 * one page, no chaining. */
		if (list)
			gpuos_nvme_prp_list(list, iova, n);
		prp2 = list_iova;
	}
	gpuos_nvme_prep_read(gpuos_qp_sq_entry(qp, ahead), cid, d->nsid, lba, nlb, iova, prp2);
}

/* The next completion of qp, consumed (its CQ head doorbell written), or 0
 * when none is posted. The acquire of its phase (gpuos_qp_cq_peek) pairs
 * with the controller's posting: the data it wrote before, and the rest of
 * the entry, are read after it. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_cmd_reap(struct gpuos_qp *qp, struct gpuos_nvme_cqe *c)
{
	if (!gpuos_qp_cq_peek(qp, 0, c))
		return 0;
	gpuos_qp_cq_consume(qp, 1, c->sqhd);
	return 1;
}

/* A command that failed with NVMe status st (0: it did not) after `tries`
 * sends beyond its first is sent again: DNR clear, at most d->retries times. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_cmd_retry(const struct gpuos_rt_desc *d, uint16_t st, uint32_t tries)
{
	return st && !gpuos_nvme_status_dnr(st) && tries < d->retries;
}

/* What gpuos_rt_cmd_late says to do. */
enum rt_late {
	RT_LATE_WAIT = 0,  /* the admin queue is busy: ask again at the next look */
	RT_LATE_ABORTED,   /* an Abort was sent (or none can be: no admin queue); its clock starts again */
	RT_LATE_RESET,     /* reset its controller (gpuos_rt_rec_reset) */
	RT_LATE_STUCK,     /* the runtime cannot reset it: nothing more it can do */
};

/* The next step for command cid on queue sqid of controller m, which is
 * late by a whole timeout (aborted: the Abort step is behind it, and as
 * long again has passed since). Never given up on while the controller may
 * still write its destination: first an NVMe Abort (5.1), which ends it
 * with a completion; then a reset. *sent: 1 when an Abort went out now. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_cmd_late(const struct gpuos_rt_desc *d, uint32_t m, uint16_t sqid, uint16_t cid,
					    int aborted, int *sent)
{
	*sent = 0;
	if (!aborted) {
		int a = gpuos_rt_abort(d, gpuos_rt_recover(d), m, sqid, cid);
		*sent = a > 0;
		return a ? RT_LATE_ABORTED : RT_LATE_WAIT;
	}
	return gpuos_rt_can_reset(d, m) ? RT_LATE_RESET : RT_LATE_STUCK;
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_NVME_CMD_H */
