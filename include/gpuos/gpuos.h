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
#include "gpuos/gguf.h"

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

/* Fill a slot this client has claimed (state CLAIMED) and post it on its
 * partition's ring. */
GPUOS_INLINE GPUOS_HD void gpuos_post_claimed(struct gpuos_mbox *mb, uint32_t idx, const struct gpuos_req *rq)
{
	struct gpuos_mbox_slot *s = &gpuos_mbox_slots(mb)[idx];
	uint32_t per = mb->nslots / mb->nparts, p = idx / per, pos;
	int dev = (mb->flags & GPUOS_MBOX_F_DEVICE) != 0;
	uint32_t *ring = (uint32_t *)((char *)mb + mb->ring_off) + (uint64_t)p * per;

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
	pos = gpuos_mbox_fetch_add_relaxed(dev, &mb->part[p].posted, 1u); /* a position; the entry's release publishes */
	/* Publish the request (fields and state) with the ring entry; pairs
	 * with the service warp's acquire load of the entry. */
	gpuos_mbox_store_release(dev, &ring[pos % per], gpuos_mbox_ring_entry(pos, per, idx - p * per));
}

/* Post a request. Returns GPUOS_ST_OK and the slot index in *slot_out, or
 * GPUOS_ST_FULL when no slot could be reserved (retry later: backpressure). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_post(struct gpuos_mbox *mb, const struct gpuos_req *rq, uint32_t *slot_out)
{
	struct gpuos_mbox_slot *slots = gpuos_mbox_slots(mb);
	uint32_t n = mb->nslots;
	int dev = (mb->flags & GPUOS_MBOX_F_DEVICE) != 0;
	uint32_t t, probe = n < GPUOS_MBOX_PROBE ? n : GPUOS_MBOX_PROBE;
	uint32_t i;

#if GPUOS_ON_GPU
	{
		/* A GPU thread tries its home slot first: with no more threads
		 * than slots each has its own, and one CAS takes it (the ticket's
		 * atomic saved, a round trip to L2 and one hot word for all).
		 * Neighbouring threads' homes are in different partitions, so a
		 * block spreads over the service warps as the ticket spreads it. */
		uint32_t parts = mb->nparts, per = n / parts;
		uint32_t g = ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) *
				     (blockDim.x * blockDim.y * blockDim.z) +
			     (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
		uint32_t q = g / parts, home = (g - q * parts) * per + q % per;
		if (gpuos_mbox_cas_acquire(dev, &slots[home].state, GPUOS_SLOT_FREE, GPUOS_SLOT_CLAIMED) == GPUOS_SLOT_FREE) {
			gpuos_post_claimed(mb, home, rq);
			*slot_out = home;
			return GPUOS_ST_OK;
		}
	}
#endif
	t = gpuos_mbox_fetch_add_relaxed(dev, &mb->ticket, 1u);
	for (i = 0; i < probe; i++) {
		uint32_t idx = (t + i) % n;
		struct gpuos_mbox_slot *s = &slots[idx];
#if !GPUOS_ON_GPU
		/* A CPU's failed CAS still takes the line exclusive: look first.
		 * On a GPU both go to L2, and the look would cost a round trip. */
		if (gpuos_load_relaxed_sys32(&s->state) != GPUOS_SLOT_FREE)
			continue;
#endif
		if (gpuos_mbox_cas_acquire(dev, &s->state, GPUOS_SLOT_FREE, GPUOS_SLOT_CLAIMED) != GPUOS_SLOT_FREE)
			continue;
		gpuos_post_claimed(mb, idx, rq);
		*slot_out = idx;
		return GPUOS_ST_OK;
	}
	return GPUOS_ST_FULL;
}

/* Non-blocking: 1 and *res filled when done, else 0. The slot stays the
 * caller's (its t_done_ns and trace stamps readable) until gpuos_release. */
GPUOS_INLINE GPUOS_HD int gpuos_poll_keep(struct gpuos_mbox *mb, uint32_t slot, struct gpuos_result *res)
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
	return 1;
}

/* Give a completed slot back to the mailbox. */
GPUOS_INLINE GPUOS_HD void gpuos_release(struct gpuos_mbox *mb, uint32_t slot)
{
	int dev = (mb->flags & GPUOS_MBOX_F_DEVICE) != 0;
	/* Our reads of the slot happen before anyone reclaims it; pairs with
	 * the next client's acquire CAS in gpuos_post. */
	gpuos_mbox_store_release(dev, &gpuos_mbox_slots(mb)[slot].state, GPUOS_SLOT_FREE);
}

/* Non-blocking: 1 and *res filled (slot released) when done, else 0. */
GPUOS_INLINE GPUOS_HD int gpuos_poll(struct gpuos_mbox *mb, uint32_t slot, struct gpuos_result *res)
{
	if (!gpuos_poll_keep(mb, slot, res))
		return 0;
	gpuos_release(mb, slot);
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


/* ---- files and models (gpuos/abi.h has the table of opcodes) -------------------- *
 * Pointers (paths, names, destinations) are runtime-space addresses in
 * registered memory: device pointers into the client heaps on the GPU. Every
 * call returns the request's status; where a `why` buffer is given, a failed
 * call leaves a NUL-terminated reason there ("corrupt superblock: bad magic").
 */

/* One request, waited for. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_request(struct gpuos_mbox *mb, uint16_t op, uint16_t flags, uint32_t handle,
					     uint64_t offset, uint64_t length, const void *dst, uint64_t arg,
					     struct gpuos_result *res)
{
	struct gpuos_req rq;
	rq.opcode = op;
	rq.flags = flags;
	rq.handle = handle;
	rq.offset = offset;
	rq.length = length;
	rq.dst = (uint64_t)(uintptr_t)dst;
	rq.arg = arg;
	rq.batch = 0;
	rq.tag = 0;
	return gpuos_call(mb, &rq, 0, res);
}

/* Open a file or directory: *handle and its size in bytes. flags: GPUOS_OPEN_NOFOLLOW. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_open(struct gpuos_mbox *mb, const char *path, uint32_t flags, uint32_t *handle,
					  uint64_t *size, char *why, uint32_t why_len)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_OPEN, (uint16_t)flags, 0, 0, why ? why_len : 0, why,
				    (uint64_t)(uintptr_t)path, &res);
	if (handle)
		*handle = st == GPUOS_ST_OK ? (uint32_t)res.result : 0;
	if (size)
		*size = st == GPUOS_ST_OK ? res.result2 : 0;
	return st;
}

/* stat (flags GPUOS_OPEN_NOFOLLOW: lstat) of a path into st, a buffer of
 * `bytes` (>= sizeof(struct gpuos_stat)); extents from index `first` follow
 * while they fit (st->n of st->nextents). On failure st holds the reason. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_stat_path(struct gpuos_mbox *mb, const char *path, uint32_t flags,
					       struct gpuos_stat *st, uint64_t bytes, uint32_t first)
{
	struct gpuos_result res;
	return gpuos_request(mb, GPUOS_OP_STAT, (uint16_t)flags, 0, first, bytes, st, (uint64_t)(uintptr_t)path, &res);
}

/* The same for an open handle. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_fstat(struct gpuos_mbox *mb, uint32_t handle, struct gpuos_stat *st,
					   uint64_t bytes, uint32_t first)
{
	struct gpuos_result res;
	return gpuos_request(mb, GPUOS_OP_STAT, GPUOS_STAT_HANDLE, handle, first, bytes, st, 0, &res);
}

/* The partition table the runtime found (GPT, MBR, or none: the whole
 * device) into p, a buffer of `bytes` (>= sizeof(struct gpuos_parts), 8-byte
 * aligned); its partitions from index `first` follow while they fit (p->n of
 * p->total). On failure p holds the reason: CORRUPT (neither GPT header is
 * valid), IO, BAD_DST (p outside registered memory, too short, misaligned). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_part_table(struct gpuos_mbox *mb, struct gpuos_parts *p, uint64_t bytes,
						uint32_t first)
{
	struct gpuos_result res;
	return gpuos_request(mb, GPUOS_OP_PARTS, 0, 0, first, bytes, p, 0, &res);
}

/* Directory entries from *cookie on (start with 0) into ents[cap]; *n of
 * them. *cookie becomes GPUOS_DIR_END after the last one. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_readdir(struct gpuos_mbox *mb, uint32_t handle, uint64_t *cookie,
					     struct gpuos_dirent *ents, uint32_t cap, uint32_t *n)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_READDIR, 0, handle, *cookie, (uint64_t)cap * sizeof(*ents), ents, 0,
				    &res);
	*n = st == GPUOS_ST_OK ? (uint32_t)res.result : 0;
	if (st == GPUOS_ST_OK)
		*cookie = res.result2;
	return st;
}

/* Bytes [offset, offset+length) of an open file into dst; *got is short at
 * the end of the file. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_read(struct gpuos_mbox *mb, uint32_t handle, uint64_t offset, uint64_t length,
					  void *dst, uint64_t *got)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_READ, 0, handle, offset, length, dst, 0, &res);
	if (got)
		*got = st == GPUOS_ST_OK ? res.result : 0;
	return st;
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_close(struct gpuos_mbox *mb, uint32_t handle)
{
	struct gpuos_result res;
	return gpuos_request(mb, GPUOS_OP_CLOSE, 0, handle, 0, 0, 0, 0, &res);
}

/* Open a GGUF model: a file (path), or with path NULL one written raw at
 * byte raw_offset of the device (needs allow_raw). *handle, *n_tensors.
 * A gguf-split model opens whole from any of its shards or its base name
 * (gpuos/abi.h, GGUF_OPEN); its tensors' shard field says which file holds
 * each, and loads read from the right one. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_open(struct gpuos_mbox *mb, const char *path, uint64_t raw_offset,
					       uint32_t *handle, uint64_t *n_tensors, char *why, uint32_t why_len)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_GGUF_OPEN, path ? 0 : GPUOS_GGUF_RAW, 0, path ? 0 : raw_offset,
				    why ? why_len : 0, why, (uint64_t)(uintptr_t)path, &res);
	if (handle)
		*handle = st == GPUOS_ST_OK ? (uint32_t)res.result : 0;
	if (n_tensors)
		*n_tensors = st == GPUOS_ST_OK ? res.result2 : 0;
	return st;
}

/* The model's header and, when `bytes` allow (*needed says how many), its
 * tensor and KV tables (struct gpuos_gguf_export). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_info(struct gpuos_mbox *mb, uint32_t handle, struct gpuos_gguf_export *x,
					       uint64_t bytes, uint64_t *needed)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_GGUF_INFO, 0, handle, 0, bytes, x, 0, &res);
	if (needed)
		*needed = st == GPUOS_ST_OK ? res.result : 0;
	return st;
}

/* Index of the tensor called name (a NUL-terminated string in registered memory). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_find(struct gpuos_mbox *mb, uint32_t handle, const char *name,
					       uint32_t *index)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_GGUF_FIND, 0, handle, 0, 0, 0, (uint64_t)(uintptr_t)name, &res);
	*index = st == GPUOS_ST_OK ? (uint32_t)res.result : 0;
	return st;
}

/* Tensor `index`: name, type, dims, offsets and size. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_tensor(struct gpuos_mbox *mb, uint32_t handle, uint32_t index,
						 struct gpuos_gguf_tensor *t)
{
	struct gpuos_result res;
	return gpuos_request(mb, GPUOS_OP_GGUF_TENSOR, 0, handle, 0, sizeof(*t), t, index, &res);
}

/* Bytes [offset, offset+length) of tensor `index` into dst (length 0: to the
 * end of the tensor). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_load(struct gpuos_mbox *mb, uint32_t handle, uint32_t index, void *dst,
					       uint64_t offset, uint64_t length, uint64_t *got)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_GGUF_LOAD, 0, handle, offset, length, dst, index, &res);
	if (got)
		*got = st == GPUOS_ST_OK ? res.result : 0;
	return st;
}

/* The tensors of layer n (names "blk.n.*") in file order: their indices in
 * idx[cap], their number in *count (NOSPC when more than cap). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_layer(struct gpuos_mbox *mb, uint32_t handle, uint32_t n, uint32_t *idx,
						uint32_t cap, uint32_t *count)
{
	struct gpuos_result res;
	uint32_t st = gpuos_request(mb, GPUOS_OP_GGUF_LAYER, 0, handle, 0, (uint64_t)cap * 4u, idx, n, &res);
	*count = (st == GPUOS_ST_OK || st == GPUOS_ST_NOSPC) ? (uint32_t)res.result : 0;
	return st;
}

/* The request that loads the whole of tensor idx into dst. */
GPUOS_INLINE GPUOS_HD void gpuos_tensor_req(struct gpuos_req *rq, uint32_t handle, uint32_t idx, void *dst, uint32_t tag)
{
	rq->opcode = GPUOS_OP_GGUF_LOAD;
	rq->flags = 0;
	rq->handle = handle;
	rq->offset = 0;
	rq->length = 0;
	rq->dst = (uint64_t)(uintptr_t)dst;
	rq->arg = idx;
	rq->batch = 0;
	rq->tag = tag;
}

/* Load n whole tensors, idx[i] into dst[i], in the caller's order, all in
 * flight at once (as many as the mailbox takes). Returns OK or the first
 * failure; *bytes is the total delivered. One thread; a layer loader calls
 * it with the indices gpuos_model_layer gave, in any order it likes. */
#define GPUOS_LOAD_WINDOW 64u
GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_load_tensors(struct gpuos_mbox *mb, uint32_t handle, const uint32_t *idx,
						       void *const *dst, uint32_t n, uint64_t *bytes)
{
	uint32_t slot[GPUOS_LOAD_WINDOW];
	uint32_t posted = 0, done = 0, first_bad = GPUOS_ST_OK, spins = 0;
	uint64_t total = 0;
	while (done < n) {
		while (posted < n && posted - done < GPUOS_LOAD_WINDOW) {
			struct gpuos_req rq;
			gpuos_tensor_req(&rq, handle, idx[posted], dst[posted], posted);
			if (gpuos_post(mb, &rq, &slot[posted % GPUOS_LOAD_WINDOW]) != GPUOS_ST_OK)
				break; /* full: collect first */
			posted++;
		}
		if (posted == done) {
			gpuos_backoff(&spins);
			continue;
		}
		{
			struct gpuos_result res;
			uint32_t st = gpuos_wait(mb, slot[done % GPUOS_LOAD_WINDOW], 0, &res);
			if (st == GPUOS_ST_OK)
				total += res.result;
			else if (first_bad == GPUOS_ST_OK)
				first_bad = st;
			done++;
		}
	}
	if (bytes)
		*bytes = total;
	return first_bad;
}

/* The same in two halves, for a loader that computes while its next
 * tensors land (double buffering): post n (at most GPUOS_LOAD_WINDOW; a
 * full mailbox is waited out) and keep their slots, then later wait for
 * them all. gpuos_model_wait_tensors returns OK or the first failure and
 * the total delivered; every slot is released either way. */
GPUOS_INLINE GPUOS_HD void gpuos_model_post_tensors(struct gpuos_mbox *mb, uint32_t handle, const uint32_t *idx,
						   void *const *dst, uint32_t n, uint32_t *slots)
{
	uint32_t i, spins = 0;
	for (i = 0; i < n; i++) {
		struct gpuos_req rq;
		gpuos_tensor_req(&rq, handle, idx[i], dst[i], i);
		while (gpuos_post(mb, &rq, &slots[i]) != GPUOS_ST_OK)
			gpuos_backoff(&spins);
	}
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_model_wait_tensors(struct gpuos_mbox *mb, const uint32_t *slots, uint32_t n,
						       uint64_t *bytes)
{
	uint32_t i, first_bad = GPUOS_ST_OK;
	uint64_t total = 0;
	for (i = 0; i < n; i++) {
		struct gpuos_result res;
		uint32_t st = gpuos_wait(mb, slots[i], 0, &res);
		if (st == GPUOS_ST_OK)
			total += res.result;
		else if (first_bad == GPUOS_ST_OK)
			first_bad = st;
	}
	if (bytes)
		*bytes = total;
	return first_bad;
}

/* Warp-wide read (GPU: every lane of the warp calls it with the same
 * arguments; host: one thread): the range is cut in up to 32 slices of at
 * least 128 KiB, each lane posts one and all wait together, so one warp
 * keeps many commands in flight. Returns the first failure or OK in every
 * lane; *got is the total. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_warp_read(struct gpuos_mbox *mb, uint32_t handle, uint64_t offset,
					       uint64_t length, void *dst, uint64_t *got)
{
	uint32_t lane = gpuos_lane_id(), width = gpuos_warp_width(), i, st = GPUOS_ST_OK, bad;
	uint64_t slice = (length + width - 1u) / width, mine_off, mine_len, n = 0, total = 0;
	if (slice < (128u << 10))
		slice = 128u << 10;
	slice = GPUOS_ALIGN_UP(slice, (uint64_t)4096);
	mine_off = (uint64_t)lane * slice;
	mine_len = mine_off < length ? (length - mine_off < slice ? length - mine_off : slice) : 0;
	if (mine_len)
		st = gpuos_read(mb, handle, offset + mine_off, mine_len, (char *)dst + mine_off, &n);
	bad = gpuos_warp_ballot(st != GPUOS_ST_OK);
	if (bad)
		st = gpuos_warp_bcast32(st, gpuos_ffs(bad));
	for (i = 0; i < width; i++)
		total += gpuos_warp_bcast64(n, i);
	if (got)
		*got = total;
	return st;
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_GPUOS_H */
