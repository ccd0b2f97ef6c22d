/* SPDX-License-Identifier: MIT */
/*
 * runtime/answer.h - the one way a mailbox request is answered (abi.h,
 * struct gpuos_mbox_slot; docs/design.md, "The request path"). Every
 * completion path calls gpuos_rt_answer: the service warps' finish_slot
 * (runtime/engine/intake.c: requests answered at intake, requests whose
 * commands or zeros are done) and the metadata warp's files_reply
 * (runtime/files_loop.c).
 *
 * The client reads nothing of its slot before it sees state == DONE (its
 * acquire load, gpuos.h): the answer's fields, and the data and anything
 * else written for the request, are published by the DONE store, which
 * pairs with that load; the batch counter's add comes after it, with
 * release too (a client waiting on the counter reads the slots it counts).
 *
 * Context: one lane (lane 0 of a service warp, the metadata warp's lane).
 */
#ifndef GPUOS_RUNTIME_ANSWER_H
#define GPUOS_RUNTIME_ANSWER_H

#include "gpuos/abi.h"
#include "util.h"

GPUOS_EXTERN_C_BEGIN

/* How gpuos_rt_answer publishes. */
enum rt_answer_how {
	/* Release DONE at once, at the mailbox's scope (dev: every client is a
	 * thread of this GPU): it publishes what this lane wrote. */
	RT_ANSWER_NOW = 0,
	/* A system-scope fence first: what was written for the request, to
	 * host or device memory, reaches any client (the metadata warp: not a
	 * hot path), then DONE as RT_ANSWER_NOW. */
	RT_ANSWER_SYS = 1,
	/* The fields only: the caller lists the slot, and for the whole list
	 * one fence, then gpuos_rt_answer_done(..., 1) each (flush_done). */
	RT_ANSWER_LATER = 2,
};

/* Release slot s to its client: DONE, then one more on its batch counter
 * (batch: the runtime's copy, checked at intake, 0: none). fenced: a fence
 * of this lane since the answer's last write publishes it already (one
 * fence for a batch of answers), so a store that the fence made a release
 * is enough; else a release store at the mailbox's scope. Either pairs with
 * the client's acquire load of state. */
GPUOS_INLINE GPUOS_HD void gpuos_rt_answer_done(int dev, struct gpuos_mbox_slot *s, uint64_t batch, int fenced)
{
	if (fenced)
		gpuos_store_fenced32(&s->state, GPUOS_SLOT_DONE);
	else
		gpuos_mbox_store_release(dev, &s->state, GPUOS_SLOT_DONE);
	if (batch) /* checked at intake: registered memory the runtime may use atomics on */
		gpuos_mbox_fetch_add_release(dev, (uint32_t *)(uintptr_t)batch, 1u);
}

/* Answer the request in slot s: its status, NVMe status and result (bytes
 * delivered, or what the opcode returns), stamped with the time; published
 * as `how` says. A second result (result2, the metadata warp's) is written
 * by the caller before this call, which publishes it with the rest. */
GPUOS_INLINE GPUOS_HD void gpuos_rt_answer(int dev, struct gpuos_mbox_slot *s, uint32_t how, uint32_t status,
					   uint16_t nvme_status, uint64_t result, uint64_t batch)
{
	s->status = status;
	s->nvme_status = nvme_status;
	s->result = result;
	s->t_done_ns = gpuos_now_ns();
	if (how == RT_ANSWER_LATER)
		return;
	if (how == RT_ANSWER_SYS)
		gpuos_fence_sys(); /* the fields and the data, to any scope, before DONE below */
	gpuos_rt_answer_done(dev, s, batch, 0);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_ANSWER_H */
