/* SPDX-License-Identifier: MIT */
/*
 * The service loop (docs/design.md, "The request path"). One warp = one
 * owner of its queue pairs, its command slots and its mailbox partition: no
 * locks between warps.
 *
 * Lanes work in parallel where the work is parallel (scanning mailbox slots,
 * reading CQEs, writing SQEs, copying data, scanning for timeouts); the
 * bookkeeping of requests and slots is done by lane 0, and every change lane
 * 0 makes to warp state is followed by gpuos_warp_sync() before other lanes
 * read it (on the GPU __syncwarp orders memory among the warp's lanes).
 */
#include <errno.h>

#include "gpuos/internal/rt.h"
#include "files.h"
#include "gpuos/internal/queue.h"
#include "ops.h"
#include "recover.h"
#include "util.h"

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
	uint32_t defer;         /* completions in reap: DONE stores wait for flush_done */
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

/* Bytes of one warp's block: its state and its queue pairs. */
GPUOS_HD uint64_t gpuos_rt_local_bytes(const struct gpuos_rt_desc *d)
{
	return gpuos_align_line(gpuos_align_line(sizeof(struct rt_warp)) + (uint64_t)(d->nqueues / d->nwarps) * sizeof(struct gpuos_qp));
}

/* The most any configuration needs (one warp owning every queue): what the
 * GPU kernel reserves in shared memory (kernels/runtime.cu). */
#define GPUOS_RT_LOCAL_MAX_BYTES \
	(GPUOS_ALIGN_UP(sizeof(struct rt_warp), (size_t)64) + GPUOS_RT_MAX_QUEUES * sizeof(struct gpuos_qp))

GPUOS_HD uint64_t gpuos_rt_state_bytes(const struct gpuos_rt_desc *d)
{
	return gpuos_align_line(sizeof(struct rt_state)) + (uint64_t)d->nwarps * gpuos_rt_local_bytes(d);
}

GPUOS_INLINE GPUOS_HD struct rt_warp *rt_warp(const struct gpuos_rt_desc *d, uint32_t w)
{
	return (struct rt_warp *)(uintptr_t)(d->state + gpuos_align_line(sizeof(struct rt_state)) +
					       (uint64_t)w * gpuos_rt_local_bytes(d));
}

GPUOS_HD struct rt_recover *gpuos_rt_recover(const struct gpuos_rt_desc *d)
{
	return &((struct rt_state *)(uintptr_t)d->state)->rec;
}

/* Queue pair k of the warp whose state is W: right after it, so an address
 * computed from W (shared memory on the GPU) stays a shared-memory address
 * for the compiler, never a generic pointer loaded from memory. */
GPUOS_INLINE GPUOS_HD struct gpuos_qp *rt_qp(struct rt_warp *W, uint32_t k)
{
	return (struct gpuos_qp *)((char *)W + gpuos_align_line(sizeof(struct rt_warp))) + k;
}

/* The metadata warp's queue of controller m is queue[nqueues + m]. */
static int meta_queues(const struct gpuos_rt_desc *d)
{
	uint32_t m;
	for (m = 0; m < d->nctrl; m++)
		if (d->queue[d->nqueues + m].depth < 2)
			return 0;
	return 1;
}

/* Queue k of each warp belongs to controller k % nctrl (plan and submit
 * pick a controller's queue by that rule), as the descriptor says. */
static int queues_by_member(const struct gpuos_rt_desc *d)
{
	uint32_t qpw = d->nqueues / d->nwarps, q;
	for (q = 0; q < d->nqueues; q++)
		if (d->queue[q].ctrl != (q % qpw) % d->nctrl)
			return 0;
	for (q = 0; d->meta && q < d->nctrl; q++)
		if (d->queue[d->nqueues + q].ctrl != q)
			return 0;
	return 1;
}

int gpuos_rt_desc_check(const struct gpuos_rt_desc *d, const char **why)
{
	const char *w = 0;
	if (d->magic != GPUOS_RT_MAGIC || d->version != GPUOS_ABI_VERSION)
		w = "descriptor magic or version";
	else if (d->nwarps == 0 || d->nwarps > GPUOS_RT_MAX_WARPS)
		w = "service warps out of range";
	else if (d->nqueues < d->nwarps || d->nqueues > GPUOS_RT_MAX_QUEUES || d->nqueues % d->nwarps)
		w = "queues must be a multiple of the service warps";
	else if (d->nctrl == 0 || d->nctrl > GPUOS_RT_MAX_CTRL || (d->nctrl > 1 && d->stripe_lbas == 0))
		w = "controllers out of range, or an array without a stripe size";
	else if ((d->nqueues / d->nwarps) % d->nctrl || !queues_by_member(d))
		w = "every service warp needs the same number of queues of every controller";
	else if (d->slots_per_warp == 0 || d->slots_per_warp > GPUOS_RT_MAX_SLOTS_PER_WARP)
		w = "command slots per warp out of range";
	else if (d->xfer_bytes < 4096u || d->xfer_bytes % 4096u || d->xfer_bytes > GPUOS_RT_MAX_XFER)
		w = "transfer size must be a multiple of 4 KiB, at most " GPUOS_STRINGIFY(GPUOS_RT_MAX_XFER_KIB) " KiB";
	else if (d->lba_shift < 9 || d->lba_shift > 12)
		w = "LBA size must be 512..4096 bytes";
	else if (d->nregions > GPUOS_RT_MAX_REGIONS)
		w = "too many regions";
	else if (d->state_bytes < gpuos_rt_state_bytes(d))
		w = "state too small";
	else if (d->mbox_nslots == 0 || d->mbox_nslots % d->nwarps)
		w = "mailbox slots must be a multiple of the service warps";
	else if (d->mbox_nslots > GPUOS_RT_MBOX_MAX_SLOTS)
		w = "at most " GPUOS_STRINGIFY(GPUOS_RT_MBOX_MAX_SLOTS) " mailbox slots";
	else if (d->nclients > GPUOS_RT_MAX_CLIENTS ||
		 (d->nclients && (d->nclients != d->nshares || !d->clients)))
		w = "clients out of range, or without a share and a table each";
	else if (d->nclients && (d->cmbox_nslots == 0 || d->cmbox_nslots % d->nwarps ||
				 d->cmbox_nslots > GPUOS_RT_MBOX_MAX_SLOTS ||
				 d->cmbox_bytes < gpuos_mbox_bytes(d->cmbox_nslots) || d->cmbox_bytes >= d->share_len))
		w = "client mailboxes do not fit their shares";
	else if (d->ngpu_clients > d->nclients ||
		 (d->ngpu_clients && (!d->gpu_area_base || d->cmbox_bytes >= d->gpu_area_len)))
		w = "GPU client areas out of range, or too small for their mailboxes";
	else if (d->meta && (d->files_bytes < gpuos_rt_files_bytes(d) || !d->files || !meta_queues(d)))
		w = "files region or metadata queues missing";
	if (why)
		*why = w;
	return w ? -EINVAL : 0;
}

/* Statistics are counted in the warp's own state (device memory) and
 * published to the control block (host memory, read by the host at any
 * time) with relaxed stores now and then: never a read across PCIe per
 * request. */
GPUOS_NOINLINE GPUOS_HD static void publish_stats(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	struct gpuos_rt_stats *o = &ctl->stats[w];
	gpuos_store_relaxed_sys64(&o->requests, W->st.requests);
	gpuos_store_relaxed_sys64(&o->bytes, W->st.bytes);
	gpuos_store_relaxed_sys64(&o->errors, W->st.errors);
	gpuos_store_relaxed_sys64(&o->commands, W->st.commands);
	gpuos_store_relaxed_sys64(&o->timeouts, W->st.timeouts);
	gpuos_store_relaxed_sys64(&o->doorbells, W->st.doorbells);
	gpuos_store_relaxed_sys64(&o->polls, W->st.polls);
	gpuos_store_relaxed_sys64(&o->inflight, d->slots_per_warp - W->nfree);
	gpuos_store_relaxed_sys64(&o->zero_copy, W->st.zero_copy);
	gpuos_store_relaxed_sys64(&o->strays, W->st.strays);
	gpuos_store_relaxed_sys64(&o->aborts, W->st.aborts);
	gpuos_store_relaxed_sys64(&o->resets, W->st.resets);
	gpuos_store_relaxed_sys64(&o->retries, W->st.retries);
	gpuos_store_relaxed_sys64(&o->duplicates, W->st.duplicates);
	gpuos_store_relaxed_sys64(&o->untrusted, W->st.untrusted);
	for (uint32_t m = 0; m < d->nctrl; m++)
		gpuos_store_relaxed_sys32(&o->dup_by_ctrl[m], W->st.dup_by_ctrl[m]);
	W->stats_dirty = 0;
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

/* ---- data movement ------------------------------------------------------------- */

/* Copy len bytes, all lanes of the warp together. The caller fences (each
 * lane its own writes) before the lane that publishes DONE does so. */
GPUOS_INLINE GPUOS_HD void warp_copy(void *dst, const void *src, uint64_t len)
{
#if GPUOS_ON_GPU
	uint32_t lane = gpuos_lane_id();
	char *d = (char *)dst;
	const char *s = (const char *)src;
	uint64_t i = 0;
	if ((((uintptr_t)d | (uintptr_t)s) & 15u) == 0) {
		uint64_t n16 = len / 16u, k = lane;
		const uint4 *s4 = (const uint4 *)s;
		uint4 *d4 = (uint4 *)d;
		/* Eight loads in flight per lane before the stores: the source is
		 * in L2 at best, and one load at a time pays its latency each
		 * time (4 KiB took 1.8 us so on an H100). */
		for (; k + 7u * 32u < n16; k += 8u * 32u) {
			uint4 v[8];
#pragma unroll
			for (uint32_t j = 0; j < 8u; j++)
				v[j] = s4[k + j * 32u];
#pragma unroll
			for (uint32_t j = 0; j < 8u; j++)
				d4[k + j * 32u] = v[j];
		}
		for (; k < n16; k += 32u)
			d4[k] = s4[k];
		i = n16 * 16u;
	} else if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0) {
		uint64_t n4 = len / 4u;
		for (uint64_t k = lane; k < n4; k += 32u)
			((uint32_t *)d)[k] = ((const uint32_t *)s)[k];
		i = n4 * 4u;
	}
	for (uint64_t k = i + lane; k < len; k += 32u)
		d[k] = s[k];
#else
	__builtin_memcpy(dst, src, (size_t)len);
#endif
}


/* A batch counter must be registered memory, 4-byte aligned; on the GPU in
 * VRAM (GPU atomics on pinned host memory do not exist over PCIe). */
GPUOS_INLINE GPUOS_HD int batch_ok(const struct gpuos_rt_desc *d, uint64_t p)
{
	int rg = gpuos_rt_region_of(d, p, 4);
	if (p & 3u || rg < 0)
		return 0;
	return !(d->flags & GPUOS_RT_ON_GPU) || (d->region[rg].flags & GPUOS_RT_REGION_VRAM);
}

/* ---- request completion ------------------------------------------------------ */

/* Lane 0: the DONE stores of a batch of completions (see finish_slot). One
 * fence publishes every completion field written so far and the data the
 * lanes copied before the last warp sync (it is cumulative); then each DONE
 * is a relaxed store. Pairs with the clients' acquire loads of
 * state. System scope unless every client is a thread of this GPU and every
 * destination is in VRAM. */
GPUOS_INLINE GPUOS_HD void flush_done(const struct gpuos_rt_desc *d, struct rt_warp *W, int sys)
{
	uint32_t i;
	(void)d;
	if (W->ndone == 0)
		return;
	if (sys)
		gpuos_fence_sys();
	else
		gpuos_fence_dev();
	for (i = 0; i < W->ndone; i++) {
		struct gpuos_mbox_slot *s = rt_slot(W, W->done_list[i]);
		uint64_t batch = W->done_batch[i];
		gpuos_store_fenced32(&s->state, GPUOS_SLOT_DONE);
		if (batch) /* checked at intake: registered memory the runtime may use atomics on */
			gpuos_mbox_fetch_add_release(W->mdev, (uint32_t *)(uintptr_t)batch, 1u);
	}
	W->ndone = 0;
}

/* Lane 0. Write the result of mailbox slot `ms`; release it to the client at
 * once, or (defer) leave the DONE store to the next flush_done. batch: the
 * runtime's copy of the request's batch counter, checked at intake (the
 * client's slot is never read again: it could point it anywhere by now). */
GPUOS_INLINE GPUOS_HD void finish_slot(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				       uint32_t status, uint16_t nvme_status, uint64_t result, uint64_t batch)
{
	struct gpuos_mbox_slot *s = rt_slot(W, ms);
	(void)d;
	(void)w;

	s->status = status;
	s->nvme_status = nvme_status;
	s->result = result;
	s->t_done_ns = gpuos_now_ns();
	if (W->defer) {
		W->done_batch[W->ndone] = batch;
		W->done_list[W->ndone++] = ms;
	} else {
		/* Publish the completion fields before DONE; pairs with the client's
		 * acquire load of state. System scope unless every client is a
		 * thread of this GPU. */
		gpuos_mbox_store_release(W->mdev, &s->state, GPUOS_SLOT_DONE);
		if (batch) /* checked at intake: registered memory the runtime may use atomics on */
			gpuos_mbox_fetch_add_release(W->mdev, (uint32_t *)(uintptr_t)batch, 1u);
	}
	W->st.requests += 1;
	if (status == GPUOS_ST_OK)
		W->st.bytes += result;
	else
		W->st.errors += 1;
	W->stats_dirty = 1;
}

GPUOS_INLINE GPUOS_HD void finish_req(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ri)
{
	struct rt_req *r = &W->req[ri];
	finish_slot(d, w, W, r->mslot, r->status, r->nvme_status, r->done, r->batch);
	if (gpuos_rt_ms_client(r->mslot))
		W->held[gpuos_rt_ms_client(r->mslot)]--;
	r->active = 0;
	W->nreq--;
	W->active_mask &= ~(1ull << ri);
	W->pending_mask &= ~(1ull << ri);
}

/* Lane 0: finish_slot for a request answered at intake (refused, or with
 * nothing to move), out of line: these paths are cold, and the fewer
 * instructions the service loop spans the better a single warp runs. */
GPUOS_NOINLINE GPUOS_HD static void finish_at_once(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t ms, uint32_t status, uint64_t batch)
{
	finish_slot(d, w, W, ms, status, 0, 0, batch);
}

/* ---- intake -------------------------------------------------------------------- */

/* Lane 0: enter a validated request in the warp's table (intake only runs
 * with a free entry). Returns 1, or 0 when the table is full. */
GPUOS_INLINE GPUOS_HD int enter_req(const struct gpuos_rt_desc *d, struct rt_warp *W, uint32_t ms, uint32_t h,
				    uint64_t off, uint64_t len, uint64_t dst, int rg, uint64_t batch)
{
	uint32_t i;
	static_assert(GPUOS_RT_MAX_REQS_PER_WARP == 64, "request masks are 64 bits");
	if (~W->active_mask != 0) {
		struct rt_req *r;
		i = gpuos_ffs64(~W->active_mask);
		r = &W->req[i];
		r->active = 1;
		W->active_mask |= 1ull << i;
		W->pending_mask |= 1ull << i;
		r->mslot = ms;
		if (gpuos_rt_ms_client(ms))
			W->held[gpuos_rt_ms_client(ms)]++;
		r->status = GPUOS_ST_OK;
		r->nvme_status = 0;
		r->outstanding = 0;
		r->off = off;
		r->end = off + len;
		r->next = off;
		r->dst = dst;
		r->zc = (d->region[rg].flags & GPUOS_RT_REGION_DMA) != 0;
		r->dst_iova = d->region[rg].iova + (dst - d->region[rg].base);
		r->vram = (d->region[rg].flags & GPUOS_RT_REGION_VRAM) != 0;
		r->done = 0;
		r->h = h;
		r->hint = 0;
		r->batch = batch;
		r->seq = ++W->req_seq;
		W->nreq++;
		return 1;
	}
	return 0;
}

/* The request half of a slot (its first 64 bytes), read at once after the
 * acquire of its ring entry: four 16-byte loads in flight, where reading
 * field by field between branches costs an L2 round trip each. */
struct rt_reqcopy {
	uint32_t state;
	uint16_t opcode, flags;
	uint32_t handle, rsvd;
	uint64_t offset, length, dst, arg, batch, tag;
};
static_assert(sizeof(struct rt_reqcopy) == 64 && offsetof(struct rt_reqcopy, batch) == 0x30,
	      "the request half of struct gpuos_mbox_slot");

GPUOS_INLINE GPUOS_HD void read_req(const struct gpuos_mbox_slot *s, struct rt_reqcopy *q)
{
#if GPUOS_ON_GPU
	const uint4 *src = (const uint4 *)s; /* slots are 128-byte aligned */
	uint4 *dst = (uint4 *)q;
	uint4 a = src[0], b = src[1], c = src[2], e = src[3];
	dst[0] = a;
	dst[1] = b;
	dst[2] = c;
	dst[3] = e;
#else
	__builtin_memcpy(q, s, sizeof(*q));
#endif
}

/* Lane 0: where a read of len bytes goes: the registered region holding
 * dst, or -1 when the request was answered at once (nothing to read, or a
 * destination outside registered memory or outside its client's share). */
GPUOS_INLINE GPUOS_HD int read_dst(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
				   uint64_t len, uint64_t dst, uint64_t batch)
{
	int rg;
	if (len == 0) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OK, batch);
		return -1;
	}
	rg = gpuos_rt_region_of(d, dst, len);
	/* its share, or memory of its own registered for it alone (rt.h) */
	if (dst == 0 || rg < 0 || (!rt_client_mem(W, ms, dst, len) && d->region[rg].client != gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_DST, batch);
		return -1;
	}
	return rg;
}

/* Client m may read raw bytes (the service's own mailbox: as the runtime
 * allows). The table is written before the client learns of its mailbox
 * (the attach reply), so any request of it comes after. */
GPUOS_INLINE GPUOS_HD int client_may_raw(const struct gpuos_rt_desc *d, uint32_t m)
{
	if (m == 0)
		return 1; /* before any load of d: its cold fields cost an L2 round trip each */
	return (gpuos_load_relaxed_sys32(&((const struct gpuos_rt_client *)(uintptr_t)d->clients)[m - 1u].flags) &
		GPUOS_RT_CLIENT_RAW) != 0;
}

/* Lane 0: hand a file request to the metadata warp with this copy of it,
 * which it serves instead of the slot (files.h); one it refuses (its client
 * holds too many, or the ring has no room) is answered here. */
GPUOS_NOINLINE GPUOS_HD static void forward(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t ms,
					    const struct rt_reqcopy *q)
{
	struct gpuos_rt_fwd f;
	uint32_t st;
	f.opcode = q->opcode;
	f.flags = q->flags;
	f.handle = q->handle;
	f.offset = q->offset;
	f.length = q->length;
	f.dst = q->dst;
	f.arg = q->arg;
	f.batch = q->batch;
	f.ms = ms;
	f.rsvd34[0] = f.rsvd34[1] = f.rsvd34[2] = 0;
	st = gpuos_rt_files_forward(d, &f);
	if (st != GPUOS_ST_OK)
		finish_at_once(d, w, W, ms, st, q->batch);
}

/* Lane 0: accept a READ or GGUF_LOAD (see accept). Out of line: the raw
 * read path stays short, and instructions the loop does not run stay out of
 * its way. */
GPUOS_NOINLINE GPUOS_HD static int accept_file(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					       uint32_t ms, uint32_t op, const struct rt_reqcopy *q)
{
	uint64_t off = q->offset, len = q->length, dst = q->dst;
	int rg;
	/* Files and tensors: the handle's extent map (in device memory)
	 * turns file offsets into device offsets; served here. */
	const struct rt_handle *hd;
	uint64_t foff = off;
	uint32_t file = q->handle; /* the handle number whose map holds the bytes */
	/* a file system runs: accept checked it (runtime/ops.h's RT_NEED_FILES) */
	if (q->flags) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_FLAGS, q->batch);
		return 0;
	}
	hd = gpuos_rt_handle(d, q->handle, op == GPUOS_OP_READ ? (1u << H_FILE) | (1u << H_DIR) : 1u << H_MODEL);
	if (!hd || !gpuos_rt_handle_owned(hd, gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_HANDLE, q->batch);
		return 0;
	}
	if (hd->kind == H_DIR) {
		finish_at_once(d, w, W, ms, GPUOS_ST_ISDIR, q->batch);
		return 0;
	}
	if (len > GPUOS_MAX_LENGTH || off + len < off) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OVERFLOW, q->batch);
		return 0;
	}
	if (op == GPUOS_OP_GGUF_LOAD) {
		uint64_t toff, tsize;
		if (gpuos_rt_files_tensor(d, hd, q->arg, &toff, &tsize, &file) || off > tsize ||
		    (len && len > tsize - off)) {
			finish_at_once(d, w, W, ms, GPUOS_ST_BAD_RANGE, q->batch);
			return 0;
		}
		if (len == 0)
			len = tsize - off; /* to the end of the tensor */
		foff = toff + off;
		/* A split model's tensor is read through its shard's map. A CLOSE
		 * racing this load may have put another model in hd's slot (the
		 * race READ has with CLOSE, docs/security.md): whatever shard
		 * that gave, it must be this client's own. */
		if (file != q->handle) {
			const struct rt_handle *sh = gpuos_rt_handle(d, file, 1u << H_SHARD);
			if (!sh || !gpuos_rt_handle_owned(sh, gpuos_rt_ms_client(ms)) ||
			    gpuos_rt_handle(d, q->handle, 1u << H_MODEL) != hd) {
				finish_at_once(d, w, W, ms, GPUOS_ST_BAD_HANDLE, q->batch); /* closed under us */
				return 0;
			}
			hd = sh;
		}
	} else {
		len = off >= hd->size ? 0 : GPUOS_MIN(len, hd->size - off); /* short at EOF */
	}
	rg = read_dst(d, w, W, ms, len, dst, q->batch);
	if (rg < 0)
		return 0;
	if (hd->map == H_MAP_META) {
		forward(d, w, W, ms, q); /* inline data, symlinks: the metadata warp reads them */
		return 0;
	}
	if (enter_req(d, W, ms, file, foff, len, dst, rg, q->batch))
		return 1;
	finish_at_once(d, w, W, ms, GPUOS_ST_NOSPC, q->batch); /* unreachable: refuse rather than drop */
	return 0;
}

/* Lane 0 only. Validate a request just taken; either complete it at once or
 * enter it in the request table. Returns 1 if it used a table entry. */
GPUOS_INLINE GPUOS_HD int accept(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				 uint32_t ms, uint32_t cmd)
{
	struct gpuos_mbox_slot *s = rt_slot(W, ms);
	struct rt_reqcopy q;
	uint32_t op;
	uint64_t off, len, dst;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	int rg;

	read_req(s, &q);
	op = q.opcode;
	off = q.offset;
	len = q.length;
	dst = q.dst;

	/* Mark it ours. The client polls state for DONE meanwhile; relaxed is
	 * enough, TAKEN publishes nothing. */
	gpuos_store_relaxed_sys32(&s->state, GPUOS_SLOT_TAKEN);
#ifdef GPUOS_TRACE
	for (uint32_t k = 0; k < GPUOS_TRACE_STAGES; k++)
		TRACE_STAMP(d, ms, k, k == GPUOS_TRACE_TAKEN ? gpuos_now_ns() : 0);
#endif
	/* The batch counter first: every answer below adds 1 to it, from
	 * this copy (q), which the client cannot change any more. */
	if (q.batch && (!batch_ok(d, q.batch) || !rt_client_mem(W, ms, q.batch, 4))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_DST, 0); /* never touch it */
		return 0;
	}
	if (W->fatal) {
		finish_at_once(d, w, W, ms, GPUOS_ST_CTRL_FATAL, q.batch);
		return 0;
	}
	if (cmd == GPUOS_RT_CMD_STOP) {
		finish_at_once(d, w, W, ms, GPUOS_ST_STOPPING, q.batch);
		return 0;
	}
	/* The opcode's row (runtime/ops.h): who answers, what it needs (the
	 * raw right is checked on the raw path, after its flags). */
	{
		struct rt_op row = rt_op_of(op);
		if ((row.need & RT_NEED_SERVICE) && gpuos_rt_ms_client(ms)) {
			finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q.batch); /* the service's alone */
			return 0;
		}
		if ((row.need & RT_NEED_FILES) && !d->meta) {
			finish_at_once(d, w, W, ms, GPUOS_ST_NO_FILES, q.batch);
			return 0;
		}
		switch (row.route) {
		case RT_ROUTE_NOP:
			finish_slot(d, w, W, ms, GPUOS_ST_OK, 0, 0, q.batch);
			return 0;
		case RT_ROUTE_FILE:
			return accept_file(d, w, W, ms, op, &q);
		case RT_ROUTE_META:
			forward(d, w, W, ms, &q); /* parsers block: the metadata warp answers */
			return 0;
		case RT_ROUTE_RAW:
			break; /* below */
		case RT_ROUTE_REFUSED:
			finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q.batch);
			return 0;
		default:
			finish_at_once(d, w, W, ms, GPUOS_ST_BAD_OPCODE, q.batch);
			return 0;
		}
	}
	/* RT_ROUTE_RAW: READ_RAW */
	if (q.flags) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_FLAGS, q.batch);
		return 0;
	}
	/* RT_NEED_RAW: --allow-raw, and a client given the right */
	if (!(d->flags & GPUOS_RT_ALLOW_RAW) || !client_may_raw(d, gpuos_rt_ms_client(ms))) {
		finish_at_once(d, w, W, ms, GPUOS_ST_DENIED, q.batch);
		return 0;
	}
	if (len > GPUOS_MAX_LENGTH || off + len < off) {
		finish_at_once(d, w, W, ms, GPUOS_ST_OVERFLOW, q.batch);
		return 0;
	}
	if (off + len > ns_bytes) {
		finish_at_once(d, w, W, ms, GPUOS_ST_BAD_RANGE, q.batch);
		return 0;
	}
	rg = read_dst(d, w, W, ms, len, dst, q.batch);
	if (rg < 0)
		return 0;
	if (enter_req(d, W, ms, 0, off, len, dst, rg, q.batch))
		return 1;
	finish_at_once(d, w, W, ms, GPUOS_ST_NOSPC, q.batch); /* unreachable: refuse rather than drop */
	return 0;
}


/* Warp w's partition of mailbox m's ring (per entries). The layout is the
 * runtime's own, from the descriptor (a client's header is not trusted). */
GPUOS_INLINE GPUOS_HD const uint32_t *rt_ring(const struct rt_warp *W, uint32_t w, uint32_t m, uint32_t per)
{
	return (const uint32_t *)(uintptr_t)(m ? rt_mbox(W, m) + W->cring : W->ring0) + w * per;
}

/* Take new requests from this warp's partition of mailbox m (0: the
 * service's own, else client m's): lanes read the next 32 entries at once;
 * a prefix of entries already written is taken in ring order. An entry is
 * new when it carries the lap of its position (abi.h), so no counter is
 * read first: one load per lane per loop, one round trip. An entry not yet
 * written (its client is between fetch_add and store) stops the batch; the
 * next loop comes back to it. At most `per` positions are ever outstanding
 * (each needs a slot of the partition), so an entry of an old lap is never
 * mistaken for a new one. A client takes at most GPUOS_RT_CLIENT_QUOTA of
 * the warp's request table, so that none starves the others. */
GPUOS_INLINE GPUOS_HD int intake_mbox(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t cmd,
				      uint32_t m)
{
	struct rt_intake *in = m ? &W->cin[m - 1u] : &W->in0;
	uint32_t per = m ? W->cper : W->per;
	const uint32_t *ring = rt_ring(W, w, m, per);
	uint32_t base = (m << GPUOS_RT_MS_CLIENT_SHIFT) | (w * per);
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	int dev = W->mdev;
	uint32_t taken = 0;

	for (;;) {
		uint32_t consumed = in->consumed;
		uint32_t room = GPUOS_RT_MAX_REQS_PER_WARP - W->nreq;
		uint32_t k = width, n, i, idx, lap, e = 0;
		int ok;
		if (m && room > GPUOS_RT_CLIENT_QUOTA - W->held[m])
			room = GPUOS_RT_CLIENT_QUOTA - W->held[m];
		if (m && room) { /* its requests with the metadata warp count too (files.h) */
			uint32_t f = GPUOS_RT_FWD_QUOTA - gpuos_rt_files_room(d, m);
			room = room > f ? room - f : 0;
		}
		if (!W->fatal && cmd != GPUOS_RT_CMD_STOP && k > room)
			k = room; /* a failed or stopping warp answers at once: no table entry needed */
		if (k == 0)
			break;
		/* Position consumed + lane: its index in the ring and its lap,
		 * counted on from the ones of `consumed`; as the clients count
		 * them (pos % per, pos / per) where the 32-bit position wraps. */
		idx = in->ring_idx + lane;
		lap = in->ring_lap;
		if (consumed + lane < consumed) {
			idx = (consumed + lane) % per;
			lap = ((consumed + lane) / per + 1u) & 0xffffu;
		}
		while (idx >= per) {
			idx -= per;
			lap = (lap + 1u) & 0xffffu;
		}
		ok = lane < k;
		if (ok) {
			/* Pairs with the client's release store of the entry. */
			e = gpuos_mbox_load_acquire(dev, &ring[idx]);
			ok = (e >> 16) == lap && (e & 0xffffu) < per;
		}
		n = gpuos_warp_ballot(ok);
		n = (~n == 0u) ? 32u : gpuos_ffs(~n);
		if (n > k)
			n = k;
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			uint32_t slot = gpuos_warp_bcast32(e & 0xffffu, i);
			if (lane == 0)
				accept(d, w, W, base + slot, cmd);
		}
		gpuos_warp_sync();
		if (lane == 0) {
			in->consumed = consumed + n;
			in->ring_idx += n;
			while (in->ring_idx >= per) {
				in->ring_idx -= per;
				in->ring_lap = (in->ring_lap + 1u) & 0xffffu;
			}
			if (in->consumed < consumed) { /* wrapped: count as the clients do */
				in->ring_idx = in->consumed % per;
				in->ring_lap = (in->consumed / per + 1u) & 0xffffu;
			}
		}
		gpuos_warp_sync();
		taken += n;
		if (n < k)
			break; /* the rest is not posted yet */
	}
	return (int)taken;
}

/* A service's client mailboxes: one lane per client looks at the next
 * entry of its ring, all in one round trip; only those with one get the
 * full intake, from a different first client each loop (round robin).
 * Out of line: a runtime without clients never comes here. */
GPUOS_NOINLINE GPUOS_HD static int intake_clients(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t cmd)
{
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width(), nc = W->nclients, first, taken = 0;
	const struct gpuos_rt_doors *D = (const struct gpuos_rt_doors *)(uintptr_t)d->doors;
	/* One word for the warp (broadcast: it steers a loop of warp-wide
	 * ballots). Pairs with the service's release of it after the epoch
	 * (boot/sys_mem.c, doors_publish). */
	uint32_t open = gpuos_warp_bcast32(gpuos_load_acquire_sys32(&D->open), 0);

	for (first = 0; first < nc && open; first += width) {
		uint32_t m = 1u + (W->rr_client + first + lane) % nc, mask;
		int ok = first + lane < nc && ((open >> (m - 1u)) & 1u);
		if (ok) {
			struct rt_intake *in = &W->cin[m - 1u];
			/* The epoch pairs with the service's release of it after it
			 * gave the area a fresh mailbox; the entry with the client's
			 * release store. */
			uint32_t ep = gpuos_load_acquire_sys32(&D->epoch[m - 1u]);
			uint32_t e = gpuos_load_acquire_sys32(&rt_ring(W, w, m, W->cper)[in->ring_idx]);
			if (ep != W->cepoch[m - 1u]) { /* closed, or a new client: its ring starts again */
				W->cepoch[m - 1u] = ep;
				in->consumed = 0;
				in->ring_idx = 0;
				in->ring_lap = 1;
				e = 0; /* read at the old position */
			}
			if (gpuos_rt_epoch_closed(ep))
				e = 0; /* nothing more from a client that left */
			ok = (e >> 16) == in->ring_lap && (e & 0xffffu) < W->cper;
		}
		mask = gpuos_warp_ballot(ok);
		while (mask) {
			uint32_t l = gpuos_ffs(mask);
			mask &= mask - 1u;
			taken += (uint32_t)intake_mbox(d, w, W, cmd, 1u + (W->rr_client + first + l) % nc);
		}
	}
	gpuos_warp_sync();
	if (lane == 0)
		W->rr_client = (W->rr_client + 1u) % nc;
	gpuos_warp_sync();
	return (int)taken;
}

/* clients: a constant (see serve_loop). On the GPU a service's own mailbox,
 * in host memory, is looked at every 16th loop only: a read across PCIe in
 * every loop of every warp slows its clients' requests, and only the service
 * posts there (RELEASE of a share). */
GPUOS_INLINE GPUOS_HD int intake(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t cmd,
				 const int clients)
{
	int taken = 0;
	if (!clients || !GPUOS_ON_GPU || W->m0vram || cmd != GPUOS_RT_CMD_RUN || (W->iter & 15u) == 0)
		taken = intake_mbox(d, w, W, cmd, 0);
	if (clients)
		taken += intake_clients(d, w, W, cmd);
	return taken;
}

/* ---- submission ------------------------------------------------------------------ */

/* All lanes, after plan: the zeros it listed (holes and unwritten extents
 * of files), then the requests that ended with them. Lane 0 alone took 14 us
 * a 4 KiB hole on the H100: a file with a hole every 64 KiB streamed at a
 * tenth of the rate of the same file without (docs/benchmarks-log.md). */
GPUOS_NOINLINE GPUOS_HD static void zero_round(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
					       uint32_t lane, uint32_t width)
{
	uint32_t k, nz = W->nzero;
	for (k = 0; k < nz; k++)
		gpuos_buf_zero_lanes((void *)(uintptr_t)W->zdst[k], W->zlen[k], lane, width);
	/* The lanes' zeros happen before lane 0's DONE stores (finish_req's
	 * release) through this sync: the grid-barrier pattern, as for SQEs. */
	gpuos_warp_sync();
	if (lane == 0) {
		int sys = 0;
		for (k = 0; k < W->nzdone; k++)
			sys |= !W->req[W->zdone[k]].vram;
		/* Zeros in host memory reach a client through system scope, as
		 * complete_cmd's copies do: this fence makes the lanes' stores
		 * (cumulative through the sync above) visible there before the
		 * DONE stores below; finish_slot's own release may be device scope. */
		if (sys && W->nzdone)
			gpuos_fence_sys();
		for (k = 0; k < W->nzdone; k++)
			finish_req(d, w, W, W->zdone[k]);
		W->nzero = 0;
		W->nzdone = 0;
	}
	/* Lane 0's reset of the lists before any lane reads them again. */
	gpuos_warp_sync();
}

/* Lane 0: plan up to `max` commands into cmds[] (slot indices). Returns
 * the count. The SQEs are written by all lanes afterwards. A command covers
 * whole LBAs of one contiguous device range: of the raw device, or of one
 * extent of a file (the handle's map), and of one chunk of an array
 * (gpuos_rt_stripe_map). Holes and unwritten extents are listed for
 * zero_round, at most xfer_bytes per step and GPUOS_WARP_MAX steps a round.
 * Each command goes on queue base + m of the warp, m the controller that
 * holds its LBAs (queue k of a warp belongs to controller k % nctrl,
 * gpuos_rt_desc_check). With one controller that is queue base, and the
 * caller's max is what it has room for; with several (`array`, a constant
 * at each call), each queue's room is checked per command, and the queues
 * written are listed in rung[]. */
GPUOS_INLINE GPUOS_HD uint32_t plan(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t base,
				    uint32_t max, uint32_t *cmds, const int array)
{
	uint32_t n = 0, steps = 0;
	uint64_t lbs = 1ull << d->lba_shift;

	/* Commands to send again come first, in the order they failed: their
	 * slots, bytes and CIDs (a new generation, complete_rare) are set. One
	 * that finds no room (this round's batch, or its controller's queue)
	 * stays queued for the next round: deferred, never lost. Only RETRY
	 * slots are ever in retry[], each once (every other way out of RETRY
	 * takes its entry out too: drop_ctrl, go_fatal). */
	if (W->nretry) {
		uint32_t i, k = 0;
		for (i = 0; i < W->nretry; i++) {
			uint32_t s = W->retry[i], q = base, ahead = n;
			struct rt_slot *sl = &W->slot[s];
			struct rt_req *r = &W->req[sl->req];
			if (r->status != GPUOS_ST_OK) {
				/* Its request failed meanwhile: nothing to send for it. */
				slot_put(W, s);
				r->outstanding--;
				if (r->outstanding == 0)
					finish_req(d, w, W, sl->req);
				continue;
			}
			if (n >= max) {
				W->retry[k++] = s;
				continue;
			}
			if (array) {
				/* queue k of the warp is controller k % nctrl's */
				struct gpuos_qp *aq;
				q = base + sl->q % d->nctrl;
				aq = rt_qp(W, q);
				if (aq->ahead >= gpuos_qp_sq_space(aq)) {
					W->retry[k++] = s;
					continue;
				}
				if (aq->ahead == 0)
					W->rung[W->nrung++] = q;
				ahead = aq->ahead++;
			}
			sl->busy = SLOT_BUSY;
			sl->q = q;
			sl->ahead = (uint16_t)ahead;
			W->st.retries += 1;
			cmds[n++] = s;
		}
		W->nretry = k;
	}
	while (n < max && steps < max && W->nfree > 0 && W->pending_mask) {
		struct rt_req *r;
		const struct rt_handle *hd;
		uint64_t dev, run, span0, chunk, later;
		uint32_t s, ri;
		int zero = 0, zeroed;
		struct rt_slot *sl;

		/* The next pending request at or after rr_req, round robin. */
		later = W->pending_mask & (~0ull << W->rr_req);
		ri = W->rr_req = gpuos_ffs64(later ? later : W->pending_mask);
		r = &W->req[ri];
		if (r->h == 0) {
			dev = r->next;
			run = r->end - r->next;
		} else if (!(hd = gpuos_rt_handle(d, r->h, (1u << H_FILE) | (1u << H_MODEL) | (1u << H_SHARD))) ||
			   gpuos_rt_files_map(d, hd, r->next, &dev, &run, &zero, &r->hint)) {
			/* The handle was closed under us: its map may hold another
			 * file's extents now (the pool is shared), so stop here. */
			r->status = GPUOS_ST_CORRUPT;
			W->pending_mask &= ~(1ull << ri);
			/* after zeros listed for it this round, if any may be */
			if (r->outstanding == 0 && W->nzero)
				W->zdone[W->nzdone++] = ri;
			else if (r->outstanding == 0)
				finish_req(d, w, W, ri);
			continue;
		}
		run = GPUOS_MIN(run, r->end - r->next);
		zeroed = zero;
		if (zero) {
			if (W->nzero == GPUOS_WARP_MAX)
				break; /* this round's list is full: the rest next round */
			chunk = GPUOS_MIN(run, (uint64_t)d->xfer_bytes);
			W->zdst[W->nzero] = r->dst + (r->next - r->off);
			W->zlen[W->nzero++] = (uint32_t)chunk;
			r->next += chunk;
			r->done += chunk;
			steps++;
		} else {
			uint64_t iova = r->dst_iova + (r->next - r->off);
			uint64_t lba = dev >> d->lba_shift, clba = lba;
			uint32_t zc = 0, q = base, ahead = n;
			span0 = lba << d->lba_shift;
			chunk = GPUOS_MIN(run, span0 + d->xfer_bytes - dev);
			if (array) {
				/* Never past the end of the array chunk: the next LBAs
				 * live on another controller. */
				struct gpuos_qp *aq;
				uint32_t m;
				uint64_t left = gpuos_rt_stripe_map(d, lba, &m, &clba);
				if (left < (uint64_t)d->xfer_bytes >> d->lba_shift)
					chunk = GPUOS_MIN(chunk, (left << d->lba_shift) - (dev - span0));
				/* on that controller's queue of this round, if it has room */
				q = base + m;
				aq = rt_qp(W, q);
				if (aq->ahead >= gpuos_qp_sq_space(aq))
					break; /* that queue is full: the rest waits for the next round */
				if (aq->ahead == 0)
					W->rung[W->nrung++] = q; /* at most one per command of the batch */
				ahead = aq->ahead++;
			}
			/* Zero copy: whole LBAs straight into the destination, when it
			 * starts on an LBA of the device and on a dword (PRP1, NVMe
			 * 4.1.1). A short tail goes through the bounce buffer next. */
			if (r->zc && dev == span0 && chunk >= lbs && (iova & 3u) == 0) {
				chunk &= ~(lbs - 1u);
				zc = 1;
			}
			s = slot_take(W);
			sl = &W->slot[s];
			sl->tries = 0;
			sl->flags = 0;
			sl->zc = (uint8_t)zc;
			sl->iova = iova;
			W->st.zero_copy += zc;
			sl->busy = SLOT_BUSY;
			sl->req = ri;
			sl->rseq = r->seq;
			sl->q = q;
			sl->ahead = (uint16_t)ahead;
			W->st.commands += 1;
			sl->lba = clba; /* the controller's LBA */
			sl->src_off = (uint32_t)(dev - span0);
			sl->copy_len = (uint32_t)chunk;
			sl->dst = r->dst + (r->next - r->off);
			sl->nlb = (uint32_t)((dev + chunk - span0 + lbs - 1u) >> d->lba_shift);
			r->next += chunk;
			r->outstanding++;
			cmds[n++] = s;
		}
		/* Spread a large request: the next chunk may go to another queue,
		 * so move on to the next request only when this one is all planned. */
		if (r->next >= r->end) {
			W->pending_mask &= ~(1ull << ri);
			W->rr_req = (ri + 1u) % GPUOS_RT_MAX_REQS_PER_WARP;
			/* It was all zeros: finished once they are written. */
			if (r->outstanding == 0 && zeroed)
				W->zdone[W->nzdone++] = ri;
			else if (r->outstanding == 0)
				finish_req(d, w, W, ri);
		}
	}
	return n;
}

/* Build the SQE of command slot s (warp w) into place `ahead` of queue qp. */
GPUOS_INLINE GPUOS_HD void build_sqe(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				     struct gpuos_qp *qp, uint32_t ahead, uint32_t s)
{
	struct rt_slot *sl = &W->slot[s];
	uint32_t gs = w * d->slots_per_warp + s;
	uint64_t iova = sl->zc ? sl->iova : d->bounce_iova + (uint64_t)gs * d->xfer_bytes;
	uint64_t lba = sl->lba;
	uint32_t nlb = sl->nlb, n;
	uint64_t bytes = (uint64_t)nlb << d->lba_shift, prp2;
	struct gpuos_nvme_sqe *e = gpuos_qp_sq_entry(qp, ahead);

	n = gpuos_nvme_prp2(iova, bytes, &prp2);
	if (n) {
		/* More than two pages: a list in the slot's own page
		 * (n <= xfer_bytes / 4 KiB <= 512: one page, no chaining). */
		gpuos_nvme_prp_list((uint64_t *)(uintptr_t)(d->prp + (uint64_t)gs * GPUOS_NVME_PAGE_SIZE), iova, n);
		prp2 = d->prp_iova + (uint64_t)gs * GPUOS_NVME_PAGE_SIZE;
	}
	gpuos_nvme_prep_read(e, rt_cid(W, s), d->nsid, lba, nlb, iova, prp2);
}

/* All lanes: plan and submit what the warp's requests still need, a
 * round per queue. `array` is a constant at each call (submit below), so
 * the one-controller path is compiled without the array's steps: branched
 * around, they cost it 0.6 us of round trip and 3.6 % of requests/s on
 * gpu-null (docs/benchmarks-log.md). */
GPUOS_INLINE GPUOS_HD int submit_rounds(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, const int array)
{
	uint32_t qpm = W->qpm;
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint32_t *cmds = W->cmds;
	uint32_t k, total = 0;

	/* Round k fills queue j = rr_q + k (mod qpm) of every controller: queue
	 * j * nctrl + m of the warp is controller m's. A batch of up to 32
	 * commands a round; one fence for it and a doorbell per queue written. */
	for (k = 0; k < qpm; k++) {
		uint32_t j = W->rr_q + k >= qpm ? W->rr_q + k - qpm : W->rr_q + k; /* both < qpm */
		uint32_t base = array ? j * d->nctrl : j, one = !array;
		struct gpuos_qp *qp = rt_qp(W, base); /* the batch's queue with one controller */
		uint32_t n = 0, i;

		if (lane == 0) {
			uint32_t max = GPUOS_WARP_MAX;
			if (one)
				max = GPUOS_MIN(max, gpuos_qp_sq_space(qp));
			n = plan(d, w, W, base, max, cmds, array);
			if (n) {
				uint64_t now = gpuos_now_ns();
				for (i = 0; i < n; i++)
					W->slot[cmds[i]].t_submit = now;
			}
		}
		/* The slots lane 0 just planned (and cmds[], rung[], the zeros'
		 * lists) are read by every lane below. */
		gpuos_warp_sync();
		n = gpuos_warp_bcast32(n, 0);
		if (W->nzero)
			zero_round(d, w, W, lane, width);
		if (n == 0) {
			gpuos_warp_sync();
			if (W->nfree == 0)
				break;
			continue;
		}
		for (i = lane; i < n; i += width) {
			/* One controller: command i is entry i of queue base. */
			const struct rt_slot *sl = &W->slot[cmds[i]];
			build_sqe(d, w, W, one ? qp : rt_qp(W, sl->q), one ? i : sl->ahead, cmds[i]);
		}
		/* The lanes' SQE writes happen before lane 0's fence below through
		 * this sync (the grid-barrier pattern: sync, then one thread fences
		 * and signals), so one fence publishes the whole batch. */
		gpuos_warp_sync();
		if (lane == 0 && one) {
			/* One fence and one doorbell store for the batch (in gpuos_qp_sq_ring). */
			gpuos_qp_sq_ring(qp, n);
			W->st.doorbells += 1;
		} else if (lane == 0) {
			/* Publish every SQE of the batch (DMA memory) before any
			 * controller sees a new tail; pairs with each controller's SQE
			 * fetch after it reads its doorbell. Device scope where the
			 * controller is this GPU (gpu-null). */
			if (d->flags & GPUOS_RT_QUEUES_DEVICE)
				gpuos_fence_dev();
			else
				gpuos_fence_sys();
			for (i = 0; i < W->nrung; i++) {
				struct gpuos_qp *rq = rt_qp(W, W->rung[i]);
				gpuos_qp_sq_advance(rq, rq->ahead);
				rq->ahead = 0;
			}
			W->st.doorbells += W->nrung;
			W->nrung = 0;
		}
		if (lane == 0) {
#ifdef GPUOS_TRACE
			for (i = 0; i < n; i++) {
				const struct rt_slot *sl = &W->slot[cmds[i]];
				if (sl->dst == W->req[sl->req].dst) /* the request's first command */
					TRACE_STAMP(d, W->req[sl->req].mslot, GPUOS_TRACE_RUNG, gpuos_now_ns());
			}
#endif
			W->stats_dirty = 1; /* commands and retries were counted by plan */
		}
		gpuos_warp_sync();
		total += n;
	}
	if (lane == 0)
		W->rr_q = W->rr_q + 1u >= qpm ? 0 : W->rr_q + 1u;
	gpuos_warp_sync();
	return (int)total;
}

GPUOS_NOINLINE GPUOS_HD static int submit_array(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	return submit_rounds(d, w, W, 1);
}

GPUOS_INLINE GPUOS_HD int submit(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	return d->nctrl > 1 ? submit_array(d, w, W) : submit_rounds(d, w, W, 0);
}

/* ---- completion ------------------------------------------------------------------ */

/* All lanes: handle one CQE of warp w. Returns 1 when data went to memory
 * that needs a system-scope fence before DONE. t_ctrl: the controller's
 * stamp in the CQE (trace builds with gpu-null), t_reap: when it was read. */
/* Lane 0: a second completion of slot sl's last command, reaped on the
 * warp's queue k. Evidence, not noise: a controller that completes a command
 * twice may have completed it before its data landed, or may write it again
 * (docs/design.md, "The life of a command"). Counted by controller; its
 * request, if still unanswered, fails with DUP_CQE, also when its answer was
 * written in this reap pass but not yet published (flush_done). A request
 * answered before the duplicate came cannot be taken back: the counters (and
 * the tools that print them) are what tells. */
GPUOS_NOINLINE GPUOS_HD static void dup_cqe(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t k,
					    const struct rt_slot *sl)
{
	struct rt_req *r = &W->req[sl->req];
	uint32_t i;
	W->st.duplicates += 1;
	W->st.dup_by_ctrl[k % d->nctrl] += 1;
	W->stats_dirty = 1;
	if (r->seq != sl->rseq)
		return; /* the entry holds a later request: this one was answered long ago */
	if (r->active) {
		if (r->status == GPUOS_ST_OK) {
			r->status = GPUOS_ST_DUP_CQE;
			W->st.untrusted += 1;
		}
		W->pending_mask &= ~(1ull << sl->req); /* submit no more of it */
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
		return;
	}
	for (i = 0; i < W->ndone; i++) {
		struct gpuos_mbox_slot *m = rt_slot(W, W->done_list[i]);
		if (W->done_list[i] != r->mslot || r->status != GPUOS_ST_OK)
			continue;
		/* Answered in this pass, DONE not stored yet: the client reads
		 * nothing of the slot before it (flush_done's fence). */
		m->status = GPUOS_ST_DUP_CQE;
		m->result = 0;
		r->status = GPUOS_ST_DUP_CQE;
		W->st.bytes -= r->done;
		W->st.errors += 1;
		W->st.untrusted += 1;
	}
}

/* Lane 0: a completion off the common path (complete_cmd), reaped on the
 * warp's queue k. */
GPUOS_NOINLINE GPUOS_HD static void complete_rare(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
						  uint32_t k, uint16_t cid, uint16_t st)
{
	uint32_t s = cid & W->smask, g = (uint32_t)cid >> W->sbits;
	struct rt_slot *sl = &W->slot[s < d->slots_per_warp ? s : 0];
	struct rt_req *r;
	if (s < d->slots_per_warp && sl->q == k &&
	    ((sl->busy == SLOT_FREE && sl->gen == g) ||
	     (sl->busy == SLOT_RETRY && ((sl->gen - 1u) & W->gmask) == g))) {
		dup_cqe(d, w, W, k, sl); /* of a command that completed, or failed and waits to go again */
		return;
	}
	if (s >= d->slots_per_warp || sl->q != k || sl->busy == SLOT_FREE || sl->busy == SLOT_RETRY || sl->gen != g) {
		/* Nothing in flight has this CID on this queue: counted and
		 * dropped (a controller's bug, a duplicate of a command whose slot
		 * moved on, or a completion the reset overtook). */
		W->st.strays += 1;
		W->stats_dirty = 1;
		return;
	}
	r = &W->req[sl->req];
	if (sl->busy == SLOT_BUSY && r->status == GPUOS_ST_OK) {
		/* Failed with DNR clear: the same command again (its slot, bytes
		 * and destination), a bounded number of times. A new generation
		 * at once: a second copy of this completion is a duplicate, never
		 * a second retry, and the command sent again has a CID of its own. */
		sl->busy = SLOT_RETRY;
		sl->gen = (uint16_t)((sl->gen + 1u) & W->gmask);
		sl->tries++;
		W->retry[W->nretry++] = s;
		return;
	}
	if (sl->busy == SLOT_BUSY) {
		/* Its request failed already: nothing to send again for it. */
		slot_put(W, s);
		r->outstanding--;
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
		return;
	}
	/* A command that timed out came back (done, or aborted): its slot is
	 * free again, and a request that waited for it (HELD: its data could
	 * still land) may be answered now. Its status stays TIMEOUT. */
	slot_put(W, s);
	if (sl->flags & SL_HELD) {
		r->outstanding--;
		if (r->outstanding == 0)
			finish_req(d, w, W, sl->req);
	}
	(void)st;
}

GPUOS_INLINE GPUOS_HD int complete_cmd(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t k,
				       uint16_t cid, uint16_t cqe_status, uint64_t t_ctrl, uint64_t t_reap)
{
	uint32_t lane = gpuos_lane_id();
	uint16_t st = gpuos_nvme_status_of(cqe_status);
	struct rt_slot *sl;
	struct rt_req *r;
	uint32_t s = cid & W->smask;

	int sys = !W->mdev;

	(void)t_ctrl; /* stamped in trace builds only */
	(void)t_reap;
	sl = &W->slot[s < d->slots_per_warp ? s : 0];
	if (s >= d->slots_per_warp || sl->busy != SLOT_BUSY || sl->gen != ((uint32_t)cid >> W->sbits) || sl->q != k ||
	    (st && !gpuos_nvme_status_dnr(st) && sl->tries < d->retries)) {
		/* Off the common path: a stray, a duplicate, a command that timed
		 * out, one to send again. All lanes read the slot before lane 0
		 * changes it. */
		gpuos_warp_sync();
		if (lane == 0)
			complete_rare(d, w, W, k, cid, st);
		gpuos_warp_sync();
		return 0;
	}
	r = &W->req[sl->req];
	if (st == 0 && r->status == GPUOS_ST_OK) {
		if (!sl->zc) {
			uint32_t gs = w * d->slots_per_warp + s;
			const char *src = (const char *)(uintptr_t)(d->bounce + (uint64_t)gs * d->xfer_bytes) +
					  sl->src_off;
			/* The data came by DMA before the CQE; the CQE acquire in
			 * gpuos_qp_cq_peek orders these reads after it. */
			warp_copy((void *)(uintptr_t)sl->dst, src, sl->copy_len);
		}
		/* Host memory (copied, or written by the controller) reaches a
		 * client through a system-scope DONE. */
		sys |= !r->vram;
	}
	gpuos_warp_sync();
	if (lane == 0) {
		TRACE_STAMP(d, r->mslot, GPUOS_TRACE_CTRL, t_ctrl);
		TRACE_STAMP(d, r->mslot, GPUOS_TRACE_REAPED, t_reap);
		if (st != 0) {
			if (r->status == GPUOS_ST_OK) {
				r->status = GPUOS_ST_NVME;
				W->pending_mask &= ~(1ull << sl->req); /* submit no more of it */
				r->nvme_status = st;
			}
		} else if (r->status == GPUOS_ST_OK) {
			r->done += sl->copy_len;
		}
		slot_put(W, s);
		r->outstanding--;
		if (r->outstanding == 0 && (r->next >= r->end || r->status != GPUOS_ST_OK))
			finish_req(d, w, W, sl->req);
	}
	gpuos_warp_sync();
	return sys;
}

GPUOS_INLINE GPUOS_HD int reap(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t qpw = W->qpw;
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint32_t k;
	int total = 0;

	for (k = 0; k < qpw; k++) {
		struct gpuos_qp *qp = rt_qp(W, k);
		uint32_t consumed = 0;
		uint16_t last_sqhd = 0;
		uint64_t t_ctrl = 0, t_reap = 0; /* stage stamps, trace builds */
		int sys = !W->mdev;

		for (;;) {
			struct gpuos_nvme_cqe e;
			uint32_t ahead = consumed + lane;
			int ok = ahead < qp->depth ? gpuos_qp_cq_peek(qp, ahead, &e) : 0;
			uint32_t mask = gpuos_warp_ballot(ok);
			/* Only a prefix of posted entries counts: entries after a gap
			 * are not the controller's yet in our pass. */
			uint32_t n = (~mask == 0u) ? 32u : gpuos_ffs(~mask);
			uint32_t i;
			if (n > width)
				n = width;
			if (n == 0)
				break;
			if (lane == 0)
				W->defer = 1;
			gpuos_warp_sync();
#ifdef GPUOS_TRACE
			t_reap = gpuos_now_ns();
#endif
			for (i = 0; i < n; i++) {
				uint16_t cid = (uint16_t)gpuos_warp_bcast32(ok ? e.cid : 0, i);
				uint16_t status = (uint16_t)gpuos_warp_bcast32(ok ? e.status : 0, i);
#ifdef GPUOS_TRACE
				t_ctrl = gpuos_warp_bcast32(ok ? e.dw0 : 0, i) |
					 (uint64_t)gpuos_warp_bcast32(ok ? e.dw1 : 0, i) << 32;
#endif
				sys |= complete_cmd(d, w, W, k, cid, status, t_ctrl, t_reap);
			}
			/* The data the lanes copied happens before lane 0's fence in
			 * flush_done through this sync; that one fence publishes it
			 * with the completions (as in submit). */
			gpuos_warp_sync();
			if (lane == 0) {
				flush_done(d, W, sys);
				W->defer = 0;
			}
			/* The SQ head of the batch's last entry, used only now: its
			 * load (after the acquire in gpuos_qp_cq_peek) overlapped the
			 * work above rather than delaying it. */
			last_sqhd = (uint16_t)gpuos_warp_bcast32(ok ? e.sqhd : 0, n - 1u);
			gpuos_warp_sync();
			consumed += n;
			if (consumed + width > qp->depth - 1u)
				break; /* never look a full lap ahead */
		}
		if (consumed) {
			if (lane == 0)
				gpuos_qp_cq_consume(qp, consumed, last_sqhd);
			gpuos_warp_sync();
			total += (int)consumed;
		}
	}
	return total;
}

/* ---- timeouts and controller failure --------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD static void go_fatal(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t why,
					     uint32_t csts);

/* Lane 0: fail the request of slot s (timed out or controller dead). The
 * slot becomes a ZOMBIE: never reused while the controller may answer it.
 * A request whose data the controller writes itself (zero copy) is held
 * until the command ends; one that bounces is answered now (the bounce
 * buffer is the slot's, and stays so). */
GPUOS_INLINE GPUOS_HD void abandon(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W,
				   uint32_t s, uint32_t status)
{
	struct rt_slot *sl = &W->slot[s];
	struct rt_req *r = &W->req[sl->req];
	sl->busy = SLOT_ZOMBIE;
	sl->flags = 0;
	if (r->status == GPUOS_ST_OK)
		r->status = status;
	W->pending_mask &= ~(1ull << sl->req);
	if (sl->zc && status == GPUOS_ST_TIMEOUT) {
		sl->flags = SL_HELD;
		return;
	}
	r->outstanding--;
	if (r->outstanding == 0)
		finish_req(d, w, W, sl->req);
}

/* Lane 0: end every command of this warp on controller m, which a reset
 * has stopped (phase DROP: it writes nothing any more). Their requests
 * fail with CTRL_RESET; zombies are simply over. Queues restart on RUN. */
GPUOS_NOINLINE GPUOS_HD static void drop_ctrl(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t m)
{
	uint32_t s, i, k;
	for (s = 0; s < d->slots_per_warp; s++) {
		struct rt_slot *sl = &W->slot[s];
		struct rt_req *r = &W->req[sl->req];
		if (sl->busy == SLOT_FREE || sl->q % d->nctrl != m)
			continue;
		if (sl->busy == SLOT_BUSY || sl->busy == SLOT_RETRY || (sl->flags & SL_HELD)) {
			if (r->status == GPUOS_ST_OK)
				r->status = GPUOS_ST_CTRL_RESET;
			W->pending_mask &= ~(1ull << sl->req);
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		}
		slot_put(W, s);
	}
	/* Retries queued for m were dropped above (their slots are FREE now). */
	for (i = k = 0; i < W->nretry; i++)
		if (W->slot[W->retry[i]].busy == SLOT_RETRY)
			W->retry[k++] = W->retry[i];
	W->nretry = k;
}

/* Lane 0: follow the reset protocol (runtime/recover.h) from the word w.
 * Returns 1 while a reset keeps this warp from its queues. */
GPUOS_NOINLINE GPUOS_HD static int rec_follow(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t word)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	uint32_t ph = rt_rec_phase(word), m, k;
	if (ph == RT_PH_DROP && W->rec_epoch != gpuos_load_relaxed_dev32(&rs->epoch)) {
		drop_ctrl(d, w, W, gpuos_load_relaxed_dev32(&rs->ctrl));
		W->rec_epoch = gpuos_load_relaxed_dev32(&rs->epoch);
		gpuos_rt_rec_ack(rs);
	}
	if (ph != RT_PH_RUN)
		return W->rec = 1;
	/* RUN: queues of a controller reset since we last looked start from
	 * zero, as the controller's re-created ones do. */
	for (m = 0; m < d->nctrl; m++) {
		if (W->rec_gen[m] == gpuos_load_relaxed_dev32(&rs->gen[m]))
			continue;
		for (k = m; k < W->qpw; k += d->nctrl)
			gpuos_rt_queue_start(rt_qp(W, k), d, &d->queue[w * W->qpw + k]);
		W->rec_gen[m] = gpuos_load_relaxed_dev32(&rs->gen[m]);
	}
	if (gpuos_rt_dead(rs) && !W->fatal)
		go_fatal(d, w, W, gpuos_load_relaxed_dev32(&rs->dead_why), gpuos_load_relaxed_dev32(&rs->dead_csts));
	return W->rec = 0;
}

/* Lane 0: reset controller m, or take part in the reset another
 * participant started; then follow wherever the word stands (RUN again,
 * dead, or another's reset: the loop goes on following it). */
GPUOS_NOINLINE GPUOS_HD static void rec_reset(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t m)
{
	struct rt_recover *rs = gpuos_rt_recover(d);
	if (gpuos_rt_reset_begin(d, rs, m)) {
		W->st.resets += 1;
		rec_follow(d, w, W, gpuos_rt_rec_word(rs)); /* our own drop and ack */
		gpuos_rt_reset_finish(d, rs);
	}
	rec_follow(d, w, W, gpuos_rt_rec_word(rs));
}

/* Lane 0: zombie s has had its Abort for a whole timeout: reset its
 * controller. */
GPUOS_NOINLINE GPUOS_HD static void zombie_stuck(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t s)
{
	uint32_t m = W->slot[s].q % d->nctrl;
	if (gpuos_rt_can_reset(d, m))
		rec_reset(d, w, W, m);
	else
		go_fatal(d, w, W, GPUOS_RT_FATAL_STUCK | m << 8, /* nothing more the runtime can do */
			 d->csts[m] ? gpuos_mmio_read32((const volatile uint32_t *)(uintptr_t)d->csts[m]) : 0u);
}

GPUOS_NOINLINE GPUOS_HD static void check_timeouts(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width();
	uint64_t now = gpuos_now_ns();
	uint32_t i;

	for (i = 0; i < d->slots_per_warp; i += width) {
		uint32_t s = i + lane;
		/* At the controller: BUSY, or ZOMBIE (timed out, aborted). A RETRY
		 * slot waits in retry[] and is at no controller: its clock starts
		 * when it is sent again. */
		int late = s < d->slots_per_warp &&
			   (W->slot[s].busy == SLOT_BUSY || W->slot[s].busy == SLOT_ZOMBIE) &&
			   now - W->slot[s].t_submit > d->timeout_ns;
		uint32_t mlate = gpuos_warp_ballot(late);
		gpuos_warp_sync();
		if (lane == 0) {
			while (mlate && !W->rec && !W->fatal) {
				uint32_t b = gpuos_ffs(mlate);
				struct rt_slot *sl = &W->slot[i + b];
				mlate &= mlate - 1u;
				if (sl->busy != SLOT_BUSY && sl->busy != SLOT_ZOMBIE)
					continue; /* a reset just ended it */
				if (sl->busy == SLOT_BUSY) {
					abandon(d, w, W, i + b, GPUOS_ST_TIMEOUT);
					W->st.timeouts += 1;
					sl->t_submit = now;
				}
				if (!(sl->flags & SL_ABORTED)) {
					/* Ask the controller to end it (5.1); its completion
					 * (aborted or done) frees the slot. Not sent now
					 * (admin queue busy): again next time. */
					int a = gpuos_rt_abort(d, gpuos_rt_recover(d), sl->q % d->nctrl,
							       (uint16_t)rt_qp(W, sl->q)->qid,
							       rt_cid(W, i + b));
					if (a) { /* sent, or no admin queue to send it on (-1) */
						sl->flags |= SL_ABORTED;
						sl->t_submit = now;
						W->st.aborts += a > 0;
					}
				} else if (sl->busy == SLOT_ZOMBIE && now - sl->t_submit > d->timeout_ns) {
					zombie_stuck(d, w, W, i + b);
				}
			}
			W->stats_dirty = 1;
		}
		gpuos_warp_sync();
	}
}

/* Lane 0: the controller is dead; fail everything in flight and all new work. */
GPUOS_NOINLINE GPUOS_HD static void go_fatal(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, uint32_t why,
					     uint32_t csts)
{
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	uint32_t s, i;

	W->fatal = 1;
	/* Every warp comes here; the first says why (the CAS from NONE: the
	 * others follow the same failure, maybe seen later or otherwise). Its
	 * CSTS is ordered before the host's read by its release of the state
	 * below. */
	if (gpuos_cas_acquire_sys32(&ctl->fatal_why, GPUOS_RT_FATAL_NONE, why) == GPUOS_RT_FATAL_NONE)
		gpuos_store_relaxed_sys32(&ctl->fatal_csts, csts);
	for (s = 0; s < d->slots_per_warp; s++) {
		struct rt_slot *sl = &W->slot[s];
		if (sl->busy == SLOT_RETRY) {
			/* Waiting to be sent again: not at the controller, so
			 * nothing of it can land. Each RETRY slot once (retry[] is
			 * emptied below, not walked). */
			struct rt_req *r = &W->req[sl->req];
			if (r->status == GPUOS_ST_OK)
				r->status = GPUOS_ST_CTRL_FATAL;
			W->pending_mask &= ~(1ull << sl->req);
			slot_put(W, s);
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		} else if (sl->busy == SLOT_BUSY) {
			abandon(d, w, W, s, GPUOS_ST_CTRL_FATAL);
		} else if (sl->busy == SLOT_ZOMBIE && (sl->flags & SL_HELD)) {
			/* The controller is gone: nothing more will land. */
			struct rt_req *r = &W->req[sl->req];
			sl->flags &= (uint8_t)~SL_HELD;
			r->outstanding--;
			if (r->outstanding == 0)
				finish_req(d, w, W, sl->req);
		}
	}
	W->nretry = 0;
	/* Requests not fully submitted: fail them now. */
	for (i = 0; i < GPUOS_RT_MAX_REQS_PER_WARP; i++) {
		struct rt_req *r = &W->req[i];
		if (r->active && r->outstanding == 0) {
			r->status = GPUOS_ST_CTRL_FATAL;
			finish_req(d, w, W, i);
		}
	}
	gpuos_store_release_sys32(&ctl->state, GPUOS_RT_STATE_FATAL);
}

/* All lanes: read each controller's CSTS. A fatal status is what a reset
 * is for (NVMe 10.5 in the base spec's error handling: the host resets the
 * controller); one the runtime cannot reset, or a controller gone (all
 * ones), fails the whole array, as a dead disk fails a RAID-0. */
GPUOS_NOINLINE GPUOS_HD static void check_csts(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t m;
	for (m = 0; m < d->nctrl; m++) {
		uint32_t csts;
		if (!d->csts[m])
			continue;
		csts = gpuos_warp_bcast32(gpuos_mmio_read32((const volatile uint32_t *)(uintptr_t)d->csts[m]), 0);
		gpuos_warp_sync();
		if ((csts & GPUOS_NVME_CSTS_CFS) || csts == 0xffffffffu) {
			if (gpuos_lane_id() == 0) {
				struct rt_recover *rs = gpuos_rt_recover(d);
				if (gpuos_rt_dead(rs) & (1u << m)) /* a reset failed: its reason */
					go_fatal(d, w, W, gpuos_load_relaxed_dev32(&rs->dead_why),
						 gpuos_load_relaxed_dev32(&rs->dead_csts));
				else if (csts != 0xffffffffu && gpuos_rt_can_reset(d, m))
					rec_reset(d, w, W, m);
				else
					go_fatal(d, w, W,
						 (csts == 0xffffffffu ? GPUOS_RT_FATAL_GONE : GPUOS_RT_FATAL_CFS) | m << 8,
						 csts);
			}
			gpuos_warp_sync();
			return;
		}
	}
}

/* ---- the loop ------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD static void warp_init(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W)
{
	uint32_t qpw = d->nqueues / d->nwarps;
	uint32_t s, k;

	for (k = 0; k < qpw; k++)
		gpuos_rt_queue_start(rt_qp(W, k), d, &d->queue[w * qpw + k]);
	W->nfree = 0;
	W->free_head = 0;
	for (s = 0; s < d->slots_per_warp; s++) {
		W->slot[s].gen = 0;
		W->slot[s].q = ~0u; /* no command yet: any completion for it is a stray */
		slot_put(W, s);
	}
	W->nretry = 0;
	W->req_seq = 0;
	W->nreq = 0;
	W->active_mask = 0;
	W->pending_mask = 0;
	W->rr_q = 0;
	W->rr_req = 0;
	for (k = 0; k <= GPUOS_RT_MAX_CLIENTS; k++) {
		struct rt_intake *in = k ? &W->cin[k - 1u] : &W->in0;
		in->consumed = 0;
		in->ring_idx = 0;
		in->ring_lap = 1; /* position 0 is in lap 0, tagged 1 (abi.h) */
		W->held[k] = 0;
		if (k)
			W->cepoch[k - 1u] = 0;
	}
	W->rr_client = 0;
	W->fatal = 0;
	W->inited = 1;
}

/* Copy n bytes (a multiple of 8, both 8-byte aligned), all lanes together;
 * the caller syncs the warp before anyone reads the copy. */
GPUOS_INLINE GPUOS_HD void warp_copy_words(void *dst, const void *src, uint64_t n)
{
	uint64_t *dq = (uint64_t *)dst;
	const uint64_t *sq = (const uint64_t *)src;
	uint64_t i;
	for (i = gpuos_lane_id(); i < n / 8u; i += gpuos_warp_width())
		dq[i] = sq[i];
}

/* The service loop of warp w until park or stop; clients is a constant. */
GPUOS_INLINE GPUOS_HD void serve_loop(const struct gpuos_rt_desc *d, uint32_t w, struct rt_warp *W, const int clients)
{
	uint32_t lane = gpuos_lane_id();
	uint32_t idle = 0, cmd = GPUOS_RT_CMD_RUN;

	for (;;) {
		int work = 0;
		uint64_t it = W->iter;

		/* Read now and then, not per loop: on the GPU an L2 round trip
		 * (boot keeps it in VRAM), in host mode a shared line. Pairs with
		 * the host's release store (set_cmd). */
		if ((it & 31u) == 0)
			cmd = gpuos_warp_bcast32(gpuos_load_acquire_sys32((const uint32_t *)(uintptr_t)d->cmd), 0);
		if ((it & 255u) == 0 && !W->fatal)
			check_csts(d, w, W);
		/* A reset (runtime/recover.h): looked at with cmd, every loop while
		 * one keeps us from the queues (no reaping, no submitting). */
		if (W->rec || (it & 31u) == 0) {
			if (lane == 0) {
				uint32_t word = gpuos_rt_rec_word(gpuos_rt_recover(d));
				if (W->rec || rt_rec_phase(word) != RT_PH_RUN)
					rec_follow(d, w, W, word);
			}
			gpuos_warp_sync();
		}
		/* Nothing in flight: no CQ to look at. Nothing left to submit: no
		 * SQ to fill. Each skipped step saves loads that miss L1. */
		if (W->nfree != d->slots_per_warp && !W->rec)
			work += reap(d, w, W);
		if (cmd != GPUOS_RT_CMD_PARK)
			work += intake(d, w, W, cmd, clients);
		if (!W->fatal && (W->pending_mask || W->nretry) && !W->rec)
			work += submit(d, w, W);
		if ((it & 255u) == 0)
			check_timeouts(d, w, W);
		gpuos_warp_sync();
		if (lane == 0) {
			W->iter = it + 1;
			W->st.polls += 1;
			if ((it & 1023u) == 0 || (!work && W->stats_dirty))
				publish_stats(d, w, W);
		}
		gpuos_warp_sync();
		if (cmd != GPUOS_RT_CMD_RUN) {
			/* Park: finish what was taken, take nothing new. Stop: also answer
			 * every posted request (STOPPING) before leaving. Zombies drain
			 * too (their completion, or a reset, ends them): a slot the
			 * controller may still answer must not outlive our queues'
			 * state. Nobody leaves during a reset (it counts on us). */
			uint32_t busy = 0, s, go = 0;
			for (s = 0; s < d->slots_per_warp; s++)
				busy += W->slot[s].busy == SLOT_BUSY || W->slot[s].busy == SLOT_RETRY ||
					(W->slot[s].busy == SLOT_ZOMBIE && !W->fatal);
			if (W->nreq == 0 && busy == 0 && lane == 0)
				go = (uint32_t)gpuos_rt_rec_leave(gpuos_rt_recover(d));
			if (gpuos_warp_bcast32(go, 0)) {
				if (cmd == GPUOS_RT_CMD_STOP)
					intake(d, w, W, cmd, clients); /* answer what is still posted */
				break;
			}
		}
		/* Quiet: poll fast for a while (the next request is often a few
		 * microseconds away), then back off. */
		if (work)
			idle = 0;
		else if (++idle > (GPUOS_ON_GPU ? 4096u : 64u))
			gpuos_backoff(&idle);
	}
}

GPUOS_HD void gpuos_rt_warp_run(const struct gpuos_rt_desc *d, uint32_t w, void *local, uint64_t local_bytes)
{
	struct rt_warp *G = rt_warp(d, w), *W = G;
	uint32_t lane = gpuos_lane_id();

	(void)local;
	(void)local_bytes;
	if (lane == 0 && !G->inited)
		warp_init(d, w, G);
	gpuos_warp_sync();
#if GPUOS_ON_GPU
	/* The warp's block is private: work on a copy in shared memory, which
	 * the acquire loads of the loop do not evict (global state costs an
	 * L2 round trip per access after each of them). Always, so that the
	 * compiler sees shared-memory addresses (not generic ones) in all the
	 * loop's bookkeeping. The kernel reserves room for the largest
	 * configuration; copied back when the warp leaves, so park/resume
	 * keep everything. */
	if (gpuos_rt_local_bytes(d) > local_bytes)
		__trap(); /* cannot happen: gpuos_rt_desc_check bounds the queues */
	W = (struct rt_warp *)local;
	warp_copy_words(W, G, gpuos_rt_local_bytes(d));
	gpuos_warp_sync();
#endif
	if (lane == 0) {
		W->qpw = d->nqueues / d->nwarps;
		W->per = d->mbox_nslots / d->nwarps;
		W->cper = d->cmbox_nslots / d->nwarps;
		W->nclients = d->nclients;
		W->mdev = (uint32_t)mbox_dev(d);
		W->m0vram = (d->flags & GPUOS_RT_MBOX_DEVICE) != 0;
		W->ring0 = d->mbox + sizeof(struct gpuos_mbox) + (uint64_t)d->mbox_nslots * sizeof(struct gpuos_mbox_slot);
		W->nhost = d->nclients - d->ngpu_clients;
		W->clen = d->share_len;
		W->glen = d->gpu_area_len;
		for (uint32_t m = 0; m <= d->nclients && m <= GPUOS_RT_MAX_CLIENTS; m++)
			W->mbox[m] = gpuos_rt_mbox_of(d, m);
		W->cmbytes = d->cmbox_bytes;
		W->cring = sizeof(struct gpuos_mbox) + (uint64_t)d->cmbox_nslots * sizeof(struct gpuos_mbox_slot);
		W->qpm = W->qpw / d->nctrl;
		W->nrung = 0;
		/* The CID: as few bits for the slot as slots_per_warp needs, the
		 * rest for the generation (slots_per_warp is the plan's, the same
		 * at every launch of a runtime, so in-flight CIDs keep their sense
		 * across park and resume). */
		for (W->sbits = 1; (1u << W->sbits) < d->slots_per_warp; W->sbits++)
			;
		W->smask = (1u << W->sbits) - 1u;
		W->gmask = 0xffffu >> W->sbits;
		/* Count in as a participant of resets; queues of a controller reset
		 * while we were away start from zero. */
		gpuos_rt_rec_enter(d, gpuos_rt_recover(d));
		rec_follow(d, w, W, gpuos_rt_rec_word(gpuos_rt_recover(d)));
	}
	gpuos_warp_sync();
	/* Two copies of the loop: without client mailboxes the intake makes no
	 * call (a call in the loop cost 0.4 us a request on the H100). */
	if (W->nclients)
		serve_loop(d, w, W, 1);
	else
		serve_loop(d, w, W, 0);
	gpuos_warp_sync();
	if (lane == 0)
		publish_stats(d, w, W);
	gpuos_warp_sync();
	if (W != G) {
		warp_copy_words(G, W, gpuos_rt_local_bytes(d));
		gpuos_warp_sync();
	}
	if (lane == 0 && d->meta) {
		/* Our state is back in device memory; pairs with the metadata
		 * warp's acquire of exits (and the host's wait for the kernel). */
		gpuos_rt_files_warp_exit(d); /* after our last forward to the metadata warp */
	}
}
