/* SPDX-License-Identifier: MIT */
/*
 * gpuos/gpuos.h - the client API: post requests to the runtime's mailbox and
 * wait for them. Inline and portable: GPU app threads, host tools and tests
 * all use these same functions (gpuos/abi.h has the protocol).
 *
 * Any number of threads may post at once. A thread owns the slot it posted
 * until it has collected the result with gpuos_wait (or gpuos_poll).
 */
#ifndef GPUOS_GPUOS_H
#define GPUOS_GPUOS_H

#include "gpuos/abi.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_req {
	uint16_t opcode;
	uint16_t flags;
	uint32_t handle;
	uint64_t offset;
	uint64_t length;
	uint64_t dst;      /* runtime-space address: a device pointer on the GPU */
	uint64_t arg;
	uint32_t *batch;   /* bumped by 1 when this request completes, or NULL */
	uint64_t tag;
};

struct gpuos_result {
	uint32_t status;       /* enum gpuos_status */
	uint16_t nvme_status;  /* NVMe status of the first failed command, 0 if none */
	uint64_t result;       /* bytes delivered, or opcode specific */
	uint64_t result2;
};

/* Post a request. Returns GPUOS_ST_OK and the slot index in *slot_out, or
 * GPUOS_ST_FULL when no slot could be reserved (retry later: backpressure). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_post(struct gpuos_mbox *mb, const struct gpuos_req *rq, uint32_t *slot_out)
{
	struct gpuos_mbox_slot *slots = gpuos_mbox_slots(mb);
	uint32_t n = mb->nslots, per = n / mb->nparts;
	int dev = (mb->flags & GPUOS_MBOX_F_DEVICE) != 0;
	uint32_t t = gpuos_mbox_fetch_add(dev, &mb->ticket, 1u);
	uint32_t probe = n < GPUOS_MBOX_PROBE ? n : GPUOS_MBOX_PROBE;
	uint32_t i;

	for (i = 0; i < probe; i++) {
		uint32_t idx = (t + i) % n;
		struct gpuos_mbox_slot *s = &slots[idx];
		if (gpuos_load_relaxed_sys32(&s->state) != GPUOS_SLOT_FREE)
			continue;
		if (gpuos_mbox_cas(dev, &s->state, GPUOS_SLOT_FREE, GPUOS_SLOT_CLAIMED) != GPUOS_SLOT_FREE)
			continue;
		s->opcode = rq->opcode;
		s->flags = rq->flags;
		s->handle = rq->handle;
		s->offset = rq->offset;
		s->length = rq->length;
		s->dst = rq->dst;
		s->arg = rq->arg;
		s->batch = (uint64_t)(uintptr_t)rq->batch;
		s->tag = rq->tag;
		gpuos_store_relaxed_sys32(&s->state, GPUOS_SLOT_POSTED);
		{
			uint32_t p = idx / per;
			uint32_t pos = gpuos_mbox_fetch_add(dev, &mb->part[p].posted, 1u);
			uint32_t *ring = (uint32_t *)((char *)mb + mb->ring_off) + (uint64_t)p * per;
			/* Publish the request (fields and state) with the ring entry;
			 * pairs with the service warp's acquire load of the entry. */
			gpuos_mbox_store_release(dev, &ring[pos % per], gpuos_mbox_ring_entry(pos, per, idx - p * per));
		}
		*slot_out = idx;
		return GPUOS_ST_OK;
	}
	return GPUOS_ST_FULL;
}

/* Non-blocking: 1 and *res filled (slot released) when done, else 0. */
GPUOS_INLINE GPUOS_HD int gpuos_poll(struct gpuos_mbox *mb, uint32_t slot, struct gpuos_result *res)
{
	struct gpuos_mbox_slot *s = &gpuos_mbox_slots(mb)[slot];
	int dev = (mb->flags & GPUOS_MBOX_F_DEVICE) != 0;
	/* Pairs with the runtime's release store of DONE: results and data are visible after it. */
	if (gpuos_mbox_load_acquire(dev, &s->state) != GPUOS_SLOT_DONE)
		return 0;
	res->status = s->status;
	res->nvme_status = s->nvme_status;
	res->result = s->result;
	res->result2 = s->result2;
	/* Our reads of the slot happen before anyone reclaims it. */
	gpuos_mbox_store_release(dev, &s->state, GPUOS_SLOT_FREE);
	return 1;
}

/* Wait for a posted request. timeout_ns 0 waits forever. Returns the
 * request's status, or GPUOS_ST_TIMEOUT if the runtime did not answer in
 * time (the slot then stays owned by the runtime; do not reuse it). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_wait(struct gpuos_mbox *mb, uint32_t slot, uint64_t timeout_ns,
					  struct gpuos_result *res)
{
	uint64_t t0 = timeout_ns ? gpuos_now_ns() : 0;
	uint32_t spins = 0, polls = 0;
	while (!gpuos_poll(mb, slot, res)) {
		gpuos_backoff(&spins);
		if (timeout_ns && (++polls & 63u) == 0 && gpuos_now_ns() - t0 > timeout_ns) {
			res->status = GPUOS_ST_TIMEOUT;
			res->nvme_status = 0;
			res->result = 0;
			return GPUOS_ST_TIMEOUT;
		}
	}
	return res->status;
}

/* Post, retrying while the mailbox is full, then wait. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_call(struct gpuos_mbox *mb, const struct gpuos_req *rq, uint64_t timeout_ns,
					  struct gpuos_result *res)
{
	uint32_t slot, spins = 0;
	uint64_t t0 = gpuos_now_ns();
	while (gpuos_post(mb, rq, &slot) == GPUOS_ST_FULL) {
		if (timeout_ns && gpuos_now_ns() - t0 > timeout_ns) {
			res->status = GPUOS_ST_FULL;
			res->nvme_status = 0;
			res->result = 0;
			return GPUOS_ST_FULL;
		}
		gpuos_backoff(&spins);
	}
	return gpuos_wait(mb, slot, timeout_ns, res);
}

/* Read bytes [offset, offset+length) of the device into dst (needs the
 * runtime's allow_raw). Returns the status; *got = bytes delivered. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_read_raw(struct gpuos_mbox *mb, uint64_t offset, uint64_t length,
					      void *dst, uint64_t *got)
{
	struct gpuos_req rq;
	struct gpuos_result res;
	uint32_t st;
	rq.opcode = GPUOS_OP_READ_RAW;
	rq.flags = 0;
	rq.handle = 0;
	rq.offset = offset;
	rq.length = length;
	rq.dst = (uint64_t)(uintptr_t)dst;
	rq.arg = 0;
	rq.batch = 0;
	rq.tag = 0;
	st = gpuos_call(mb, &rq, 0, &res);
	if (got)
		*got = res.result;
	return st;
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_GPUOS_H */
