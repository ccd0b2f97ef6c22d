/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine/state.h - a service warp's state (docs/design.md, "The
 * request path"): its command slots, its request table, where its intake
 * stands in each mailbox, and the accessors every part of the request
 * engine shares. Private to runtime/engine.c's translation unit.
 *
 * Lanes work in parallel where the work is parallel (scanning mailbox slots,
 * reading CQEs, writing SQEs, copying data, scanning for timeouts); the
 * bookkeeping of requests and slots is done by lane 0, and every change lane
 * 0 makes to warp state is followed by gpuos_warp_sync() before other lanes
 * read it (on the GPU __syncwarp orders memory among the warp's lanes).
 */
#ifndef GPUOS_RUNTIME_ENGINE_STATE_H
#define GPUOS_RUNTIME_ENGINE_STATE_H

#include <errno.h>

#include "gpuos/internal/rt.h"
#include "gpuos/internal/queue.h"
#include "../answer.h"
#include "../files.h"
#include "../nvme_cmd.h"
#include "../ops.h"
#include "../recover.h"
#include "../util.h"

/* ---- private state ----------------------------------------------------------- */

/* FREE: not in use; its generation is its last command's, so a second
 * completion of that command is told from a stray (a duplicate). BUSY: at
 * the controller. ZOMBIE: timed out, the controller may still answer it.
 * RETRY: failed with DNR clear and queued in retry[] to be sent again; not
 * at the controller, its generation already moved on. */
enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_ZOMBIE = 2, SLOT_RETRY = 3 };
/* ZOMBIE flags. HELD: its request waits for it (the controller writes the
 * destination itself: no answer while the data may still land). ABORTED:
 * an Abort was sent for it (t_submit is when). */
enum { SL_HELD = 1u, SL_ABORTED = 2u };

/* One in-flight NVMe command. Its CID is the slot index in the warp (the
 * low sbits bits, as few as slots_per_warp needs) and the slot's generation
 * (the other 16 - sbits bits: 10 with the default 64 slots). The generation
 * moves on when a slot is taken and when it is queued to be sent again, so
 * a completion for an earlier use of the slot, or for nothing, is told apart
 * and counted. Free slots are reused first in, first out: a slot's CID comes
 * back after slots_per_warp << (16 - sbits) commands of the warp, not after
 * the 256 of its own that a LIFO stack gave the busiest slot. A slot is never
 * reused while the controller may still answer it: a command that timed out
 * stays ZOMBIE until its completion comes (after an Abort), or a controller
 * reset ends it (docs/design.md, "The life of a command"). */
struct rt_slot {
	uint8_t busy;           /* SLOT_* */
	uint8_t tries;          /* submissions after the first (failures with DNR clear) */
	uint8_t flags;          /* SL_HELD, SL_ABORTED (ZOMBIE) */
	uint8_t zc;             /* 1: the controller writes dst itself (at iova): no bounce, no copy */
	uint16_t gen;           /* the CID's bits above the slot index (rt_cid) */
	uint16_t ahead;         /* its SQ entry: places past the tail of queue q (build_sqe; < depth) */
	uint32_t req;           /* index in the warp's request table */
	uint32_t rseq;          /* that request's seq: a late duplicate finds whether it is still unanswered */
	uint32_t q;             /* queue pair of the warp (rt_qp index) it goes on */
	uint32_t copy_len;      /* bytes the command delivers (copied out of the bounce buffer unless zc) */
	uint32_t src_off;       /* where they start in the bounce buffer */
	uint32_t nlb;           /* blocks the command reads */
	uint64_t dst;           /* where they go (runtime space) */
	uint64_t t_submit;
	uint64_t lba;           /* first LBA of the command */
	uint64_t iova;          /* dst as the controller sees it, when zc */
};
static_assert(sizeof(struct rt_slot) == 64, "a slot is a cache line");

struct rt_req {             /* a mailbox request being served */
	uint32_t active;
	uint32_t mslot;         /* mailbox slot index */
	uint32_t status;        /* enum gpuos_status, first failure wins */
	uint32_t outstanding;   /* commands in flight */
	uint16_t nvme_status;
	uint16_t zc;            /* 1: dst is in a region the controller can reach (GPUOS_RT_REGION_DMA) */
	uint32_t h;             /* handle (gen << 8 | slot + 1) whose map gives device offsets, 0: raw
	                         * device; checked at every chunk, so a close shows as CORRUPT */
	uint32_t hint;          /* extent index of the last chunk (files_map) */
	uint32_t vram;          /* 1: dst is in VRAM (a GPU client sees it at device scope) */
	uint32_t seq;           /* which request this entry holds (rt_warp.req_seq when entered) */
	uint32_t rsvd;
	uint64_t batch;         /* the client's batch counter, checked at intake (0: none): the
	                         * runtime's copy, never read again from the client's slot */
	uint64_t off, end;      /* requested byte range: of the namespace, or of the handle's file */
	uint64_t next;          /* first byte not yet submitted */
	uint64_t dst;
	uint64_t dst_iova;      /* dst as the controller sees it, when zc */
	uint64_t done;          /* bytes delivered */
};

/* Where a warp's intake stands in its partition of one mailbox's ring. */
struct rt_intake {
	uint32_t consumed;      /* ring positions of our partition taken so far */
	uint32_t ring_idx;      /* consumed % per, and the lap tag (consumed / per + 1) & 0xffff */
	uint32_t ring_lap;      /* of the next ring entry to take */
};

/* A warp's block of state: struct rt_warp, then its queue pairs (rt_qp).
 * On the GPU the whole block lives in shared memory while the warp runs. */
struct rt_warp {
	uint32_t inited;
	struct rt_intake in0;   /* the service's own mailbox (d->mbox) */
	uint32_t nfree;         /* free command slots */
	uint32_t nreq;          /* active requests */
	uint32_t rr_q;          /* which of each controller's queues submit starts on, < qpm */
	uint32_t rr_req;        /* next request to split */
	/* Bit i: request i is active / still has bytes to submit. Lane 0's
	 * bookkeeping stays O(1) per event: on the GPU every scan of warp state
	 * costs L2 round trips (acquire loads invalidate L1 each loop). */
	uint64_t active_mask;
	uint64_t pending_mask;
	uint32_t fatal;         /* controller failed */
	uint32_t qpw;           /* queue pairs of this warp, nqueues / nwarps (set at each start: */
	uint32_t per;           /* mailbox slots of its partition; no division in the loop) */
	uint64_t iter;
	uint32_t stats_dirty;
	uint32_t defer;         /* answers of a batch (reap, zero_round): DONE stores wait for flush_done */
	uint32_t ndone;
	uint32_t done_list[GPUOS_WARP_MAX];
	uint64_t done_batch[GPUOS_WARP_MAX]; /* each one's batch counter (the runtime's copy) */
	uint32_t cmds[GPUOS_WARP_MAX];  /* slots submit() planned: lane 0 writes, all lanes read */
	struct gpuos_rt_stats st;   /* private counts; published to ctl by publish_stats */
	uint32_t free_head;     /* free_q[free_head] is the next slot to take (FIFO, mod the max) */
	uint32_t sbits;         /* CID bits of the slot index (set at each start) */
	uint32_t smask;         /* (1 << sbits) - 1 */
	uint32_t gmask;         /* 0xffff >> sbits: the generation's bits */
	uint32_t req_seq;       /* requests entered so far: rt_req.seq */
	uint32_t free_q[GPUOS_RT_MAX_SLOTS_PER_WARP];
	struct rt_slot slot[GPUOS_RT_MAX_SLOTS_PER_WARP];
	struct rt_req req[GPUOS_RT_MAX_REQS_PER_WARP];
	/* Arrays (several controllers): after the rest, which keeps its layout */
	uint32_t qpm;           /* queue pairs of this warp per controller, qpw / nctrl (set at each start) */
	uint32_t nrung;         /* queues with entries in the batch being built (rung[]) */
	uint32_t rung[GPUOS_WARP_MAX];  /* rt_qp indices the batch wrote entries to */
	/* The life of a command (docs/design.md) */
	uint32_t nretry;        /* RETRY slots to send again, in the order they failed, submitted first */
	uint32_t retry[GPUOS_RT_MAX_SLOTS_PER_WARP];
	uint32_t rec;           /* a reset is in progress: the word is read every loop */
	uint32_t rec_epoch;     /* the last reset epoch this warp dropped for */
	uint32_t rec_gen[GPUOS_RT_MAX_CTRL]; /* resets of each controller its queues follow */
	/* A service's client mailboxes (rt.h) */
	/* The mailboxes' places, from d at each start: on the GPU every field
	 * of d read in the loop costs an L2 round trip (the acquire loads
	 * invalidate L1), and a client's mailbox must cost nothing when there
	 * is none. */
	uint32_t nclients;      /* d->nclients */
	uint32_t mdev;          /* mbox_dev(d) */
	uint32_t m0vram;        /* the service's own mailbox is in VRAM (GPUOS_RT_MBOX_DEVICE) */
	uint64_t ring0;         /* the service's mailbox's rings */
	uint32_t nhost;         /* clients with areas in host memory: gpuos_rt_gpu_client beyond */
	uint64_t clen;          /* d->share_len */
	uint64_t glen;          /* d->gpu_area_len */
	uint64_t cmbytes;       /* d->cmbox_bytes */
	uint64_t cring;         /* a client mailbox's rings, from its start */
	uint64_t mbox[GPUOS_RT_MAX_CLIENTS + 1]; /* gpuos_rt_mbox_of(d, m): a load, not a branch, per slot */
	uint32_t cper;          /* slots of a client mailbox's partition (set at each start) */
	uint32_t rr_client;     /* the client a probe's intake starts from: round robin */
	struct rt_intake cin[GPUOS_RT_MAX_CLIENTS]; /* client m's at [m - 1] */
	uint32_t cepoch[GPUOS_RT_MAX_CLIENTS]; /* the epoch (struct gpuos_rt_doors) cin[] counts in */
	uint8_t held[GPUOS_RT_MAX_CLIENTS + 1]; /* request table entries of each client (0: the service's) */
	/* Holes and unwritten extents planned this round (lane 0), zero-filled
	 * by the whole warp after it (zero_round), then the requests that end
	 * with them finished. */
	uint32_t nzero;
	uint32_t nzdone;
	uint64_t zdst[GPUOS_WARP_MAX];
	uint32_t zlen[GPUOS_WARP_MAX];
	uint32_t zdone[GPUOS_RT_MAX_REQS_PER_WARP]; /* a request ends at most once a round */
};

struct rt_state {
	uint32_t magic;
	uint32_t nwarps;
	uint32_t nqueues;
	uint32_t rsvd;
	struct rt_recover rec;  /* shared by every participant (runtime/recover.h) */
};

#define RT_STATE_MAGIC 0x74617473u

/* The most any configuration needs (one warp owning every queue): what the
 * GPU kernel reserves in shared memory (kernels/runtime.cu). */
#define GPUOS_RT_LOCAL_MAX_BYTES \
	(GPUOS_ALIGN_UP(sizeof(struct rt_warp), (size_t)64) + GPUOS_RT_MAX_QUEUES * sizeof(struct gpuos_qp))

GPUOS_INLINE GPUOS_HD struct rt_warp *rt_warp(const struct gpuos_rt_desc *d, uint32_t w)
{
	return (struct rt_warp *)(uintptr_t)(d->state + gpuos_align_line(sizeof(struct rt_state)) +
					       (uint64_t)w * gpuos_rt_local_bytes(d));
}

/* Queue pair k of the warp whose state is W: right after it, so an address
 * computed from W (shared memory on the GPU) stays a shared-memory address
 * for the compiler, never a generic pointer loaded from memory. */
GPUOS_INLINE GPUOS_HD struct gpuos_qp *rt_qp(struct rt_warp *W, uint32_t k)
{
	return (struct gpuos_qp *)((char *)W + gpuos_align_line(sizeof(struct rt_warp))) + k;
}


/* Device scope is enough only when every client is a thread of this GPU:
 * a service's client mailboxes are in host memory (its GPU clients' in
 * VRAM, where system scope orders as well). */
GPUOS_INLINE GPUOS_HD int mbox_dev(const struct gpuos_rt_desc *d)
{
	return (d->flags & GPUOS_RT_MBOX_DEVICE) != 0 && d->nclients == 0;
}

/* gpuos_rt_mbox_of, gpuos_rt_slot and gpuos_rt_client_mem from the warp's
 * copies (struct rt_warp). */
GPUOS_INLINE GPUOS_HD uint64_t rt_mbox(const struct rt_warp *W, uint32_t m)
{
	return W->mbox[m];
}
GPUOS_INLINE GPUOS_HD struct gpuos_mbox_slot *rt_slot(const struct rt_warp *W, uint32_t ms)
{
	return (struct gpuos_mbox_slot *)(uintptr_t)(rt_mbox(W, gpuos_rt_ms_client(ms)) + sizeof(struct gpuos_mbox)) +
	       (ms & ((1u << GPUOS_RT_MS_CLIENT_SHIFT) - 1u));
}
GPUOS_INLINE GPUOS_HD int rt_client_mem(const struct rt_warp *W, uint32_t ms, uint64_t p, uint64_t len)
{
	uint32_t m = gpuos_rt_ms_client(ms);
	return m == 0 || gpuos_rt_in_share(rt_mbox(W, m), W->cmbytes, m > W->nhost ? W->glen : W->clen, p, len);
}

/* Stage stamps of a request (abi.h enum gpuos_trace_stage), in builds with
 * GPUOS_TRACE only: the clock reads and stores stay off the measured path. */
#ifdef GPUOS_TRACE
#define TRACE_STAMP(d, ms, stage, t) (gpuos_rt_slot(d, ms)->t_trace_ns[stage] = (t))
#else
#define TRACE_STAMP(d, ms, stage, t) ((void)0)
#endif

/* ---- command slots ------------------------------------------------------------- */

static_assert((GPUOS_RT_MAX_SLOTS_PER_WARP & (GPUOS_RT_MAX_SLOTS_PER_WARP - 1u)) == 0,
	      "the free queue wraps by mask");

/* The CID of slot s's current command. */
GPUOS_INLINE GPUOS_HD uint16_t rt_cid(const struct rt_warp *W, uint32_t s)
{
	return (uint16_t)(s | (uint32_t)W->slot[s].gen << W->sbits);
}

/* Lane 0: the slot free longest (FIFO), with a new generation. The caller
 * checked nfree. */
GPUOS_INLINE GPUOS_HD uint32_t slot_take(struct rt_warp *W)
{
	uint32_t s = W->free_q[W->free_head];
	W->free_head = (W->free_head + 1u) & (GPUOS_RT_MAX_SLOTS_PER_WARP - 1u);
	W->nfree--;
	W->slot[s].gen = (uint16_t)((W->slot[s].gen + 1u) & W->gmask);
	return s;
}

/* Lane 0: slot s is FREE again, behind every other free slot. Its
 * generation stays its last command's (complete_rare tells a duplicate of
 * that command by it). */
GPUOS_INLINE GPUOS_HD void slot_put(struct rt_warp *W, uint32_t s)
{
	W->slot[s].busy = SLOT_FREE;
	W->free_q[(W->free_head + W->nfree) & (GPUOS_RT_MAX_SLOTS_PER_WARP - 1u)] = s;
	W->nfree++;
}

#endif /* GPUOS_RUNTIME_ENGINE_STATE_H */
