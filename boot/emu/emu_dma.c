/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_dma.c - the emulated controller's side of the bus: the
 * IOMMU-like region table, PRP walking (NVMe base spec 4.3, "Physical Region
 * Page Entry and List"), data copies into host and device memory, SQE fetch
 * and CQE posting (4.6, phase tag; 3.3.1.2, a full queue is never overwritten).
 *
 * Every address the driver hands the controller goes through emu_translate();
 * the region table's read lock is held from translation to the end of the
 * copy, so gpuos_emu_unmap() returns only once no transfer still uses the
 * region, and an address outside every region is a fault, never a wild access.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define ST(sct, sc, dnr) gpuos_nvme_status_make((sct), (sc), (dnr))

void emu_dma_fault(struct gpuos_emu *e, uint64_t iova)
{
	emu_stat_add(&e->st.dma_faults, 1);
	__atomic_store_n(&e->st.last_fault_iova, iova, __ATOMIC_RELAXED);
}

/* Index of the region holding iova, or -1. Caller holds e->rlock. */
static int region_find(struct gpuos_emu *e, uint64_t iova)
{
	uint32_t lo = 0, hi = e->nreg;

	/* last region whose start is <= iova */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (e->reg[mid].iova <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	const struct emu_region *r = &e->reg[lo - 1];
	return iova - r->iova < r->len ? (int)(lo - 1) : -1;
}

uint8_t *emu_translate(struct gpuos_emu *e, uint64_t iova, size_t len, int *kind)
{
	int i = region_find(e, iova);

	if (i < 0)
		return NULL;
	const struct emu_region *r = &e->reg[i];
	if (len > r->len - (iova - r->iova))
		return NULL;
	if (kind)
		*kind = r->kind;
	return r->ptr + (iova - r->iova);
}

int gpuos_emu_map(struct gpuos_emu *e, uint64_t iova, void *ptr, size_t len,
		  enum gpuos_emu_region_kind kind)
{
	int r = 0;

	if (!e || !ptr || !len || iova + len < iova)
		return -EINVAL;
	if (kind != GPUOS_EMU_REGION_HOST && kind != GPUOS_EMU_REGION_DEVICE)
		return -EINVAL;
	if (kind == GPUOS_EMU_REGION_DEVICE && !e->env.dev_copy)
		return -ENOTSUP;
	pthread_rwlock_wrlock(&e->rlock);
	if (e->nreg >= GPUOS_EMU_MAX_REGIONS) {
		r = -ENOSPC;
		goto out;
	}
	uint32_t pos = 0;
	while (pos < e->nreg && e->reg[pos].iova < iova)
		pos++;
	/* neighbours are the only candidates for overlap in a sorted, disjoint table */
	if (pos > 0 && e->reg[pos - 1].iova + e->reg[pos - 1].len > iova) {
		r = -EEXIST;
		goto out;
	}
	if (pos < e->nreg && iova + len > e->reg[pos].iova) {
		r = -EEXIST;
		goto out;
	}
	memmove(&e->reg[pos + 1], &e->reg[pos], (e->nreg - pos) * sizeof(e->reg[0]));
	e->reg[pos].iova = iova;
	e->reg[pos].len = len;
	e->reg[pos].ptr = (uint8_t *)ptr;
	e->reg[pos].kind = kind;
	e->nreg++;
out:
	pthread_rwlock_unlock(&e->rlock);
	return r;
}

int gpuos_emu_unmap(struct gpuos_emu *e, uint64_t iova)
{
	int r = -ENOENT;

	if (!e)
		return -EINVAL;
	int device = 0;
	/* the write lock waits for every transfer being set up (they hold the read lock) */
	pthread_rwlock_wrlock(&e->rlock);
	for (uint32_t i = 0; i < e->nreg; i++) {
		if (e->reg[i].iova == iova) {
			device = e->reg[i].kind == GPUOS_EMU_REGION_DEVICE;
			memmove(&e->reg[i], &e->reg[i + 1], (e->nreg - i - 1) * sizeof(e->reg[0]));
			e->nreg--;
			r = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&e->rlock);
	/* and for the DMA engine's transfers into it that are still on the way
	 * (queued before the region left the table, which no new one can name) */
	for (uint32_t i = 0; device && e->w && i < e->nworkers; i++) {
		/* acquire: pairs with the worker's release of its tickets */
		uint64_t want = __atomic_load_n(&e->w[i].dma_issued, __ATOMIC_ACQUIRE);
		uint64_t limit = gpuos_now_ns() + 10ull * 1000000000ull;
		while (__atomic_load_n(&e->w[i].dma_landed, __ATOMIC_ACQUIRE) < want &&
		       !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) && gpuos_now_ns() < limit)
			emu_nap_ns(10000);
	}
	return r;
}

/* ---- scatter lists ---- */

void emu_sgl_free(struct emu_sgl *sgl)
{
	free(sgl->seg);
	sgl->seg = NULL;
	sgl->n = sgl->cap = 0;
}

static int sgl_push(struct emu_sgl *sgl, uint8_t *ptr, size_t len, int device)
{
	if (sgl->n > sgl->first) {
		struct emu_seg *last = &sgl->seg[sgl->n - 1];
		/* neighbouring pages of one buffer become one copy / one iovec;
		 * never across commands: each command's segments must stay its own
		 * (two commands' buffers may well be neighbours in memory) */
		if (last->device == device && last->ptr + last->len == ptr) {
			last->len += len;
			return 0;
		}
	}
	if (sgl->n == sgl->cap) {
		uint32_t cap = sgl->cap ? sgl->cap * 2 : 64;
		struct emu_seg *s = realloc(sgl->seg, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		sgl->seg = s;
		sgl->cap = cap;
	}
	sgl->seg[sgl->n].ptr = ptr;
	sgl->seg[sgl->n].len = len;
	sgl->seg[sgl->n].device = device;
	sgl->n++;
	return 0;
}

/* The start of [iova, iova+len) in host memory: its pointer, how many of
 * its bytes lie in that one region (a buffer may straddle adjacent regions)
 * and the region. NULL, with the DMA fault counted, where no region holds
 * iova. Caller holds e->rlock. */
static const struct emu_region *region_span(struct gpuos_emu *e, uint64_t iova, size_t len, uint8_t **ptr,
					     size_t *n)
{
	int i = region_find(e, iova);
	if (i < 0) {
		emu_dma_fault(e, iova);
		return NULL;
	}
	const struct emu_region *r = &e->reg[i];
	uint64_t in = r->len - (iova - r->iova);
	*ptr = r->ptr + (iova - r->iova);
	*n = len < in ? len : (size_t)in;
	return r;
}

/* Add [iova, iova+len) to the list. */
static uint16_t sgl_add(struct gpuos_emu *e, struct emu_sgl *sgl, uint64_t iova, size_t len)
{
	while (len) {
		uint8_t *p;
		size_t n;
		const struct emu_region *r = region_span(e, iova, len, &p, &n);
		if (!r)
			return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		if (sgl_push(sgl, p, n, r->kind == GPUOS_EMU_REGION_DEVICE))
			return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INTERNAL, 0);
		iova += n;
		len -= n;
	}
	return 0;
}

/* Read n bytes the driver placed at iova (a PRP list) into buf. */
static uint16_t dma_read(struct gpuos_emu *e, uint64_t iova, void *buf, size_t n)
{
	uint8_t *dst = buf;

	while (n) {
		uint8_t *p;
		size_t k;
		const struct emu_region *r = region_span(e, iova, n, &p, &k);
		if (!r)
			return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		if (r->kind == GPUOS_EMU_REGION_DEVICE) {
			if (e->env.dev_copy(e->env.ctx, dst, p, k, 0))
				return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		} else {
			memcpy(dst, p, k);
		}
		dst += k;
		iova += k;
		n -= k;
	}
	return 0;
}

uint16_t emu_prp_map(struct gpuos_emu *e, struct emu_sgl *sgl, uint64_t prp1, uint64_t prp2,
		     size_t len)
{
	const uint16_t bad_off = ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_PRP_OFFSET, 1);
	uint64_t ent[EMU_PAGE / 8];
	uint16_t st;

	sgl->first = sgl->n;
	if (!len)
		return 0;
	/* PRP1 may start inside a page but must be dword aligned (4.3) */
	if (prp1 & 3u)
		return bad_off;
	size_t first = EMU_PAGE - (size_t)(prp1 & (EMU_PAGE - 1));
	if (first > len)
		first = len;
	st = sgl_add(e, sgl, prp1, first);
	if (st)
		return st;
	len -= first;
	if (!len)
		return 0;

	/* one more page: PRP2 is that page, offset 0 */
	if (len <= EMU_PAGE) {
		if (prp2 & (EMU_PAGE - 1))
			return bad_off;
		return sgl_add(e, sgl, prp2, len);
	}

	/* more: PRP2 points into a PRP list (qword aligned, may have an offset);
	 * the last entry of a list page chains to the next list when entries remain */
	uint64_t list = prp2;
	uint64_t pages = GPUOS_DIV_ROUND_UP(len, (size_t)EMU_PAGE);
	uint64_t hops = 0;
	while (len) {
		if (list & 7u)
			return bad_off;
		/* a chain that never yields data pages (a list pointing at itself) ends here */
		if (++hops > pages + 1)
			return bad_off;
		uint64_t need = GPUOS_DIV_ROUND_UP(len, (size_t)EMU_PAGE);
		uint64_t slots = (EMU_PAGE - (list & (EMU_PAGE - 1))) / 8;
		int chain = need > slots;
		uint64_t nread = chain ? slots : need;
		/* read only the entries this transfer needs: the rest of the page
		 * may well be unmapped */
		st = dma_read(e, list, ent, nread * 8);
		if (st)
			return st;
		uint64_t ndata = chain ? slots - 1 : nread;
		for (uint64_t i = 0; i < ndata; i++) {
			if (ent[i] & (EMU_PAGE - 1))
				return bad_off;
			size_t n = len < EMU_PAGE ? len : EMU_PAGE;
			st = sgl_add(e, sgl, ent[i], n);
			if (st)
				return st;
			len -= n;
		}
		if (chain)
			list = ent[slots - 1];
	}
	return 0;
}

uint16_t emu_sgl_copy(struct gpuos_emu *e, const struct emu_sgl *sgl, uint32_t seg0, uint32_t n,
		      uint8_t *buf, size_t len, int to_host)
{
	for (uint32_t i = seg0; i < seg0 + n && len; i++) {
		const struct emu_seg *s = &sgl->seg[i];
		size_t k = s->len < len ? s->len : len;
		if (s->device) {
			int r = to_host ? e->env.dev_copy(e->env.ctx, s->ptr, buf, k, 1)
					: e->env.dev_copy(e->env.ctx, buf, s->ptr, k, 0);
			if (r)
				return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0);
		} else if (to_host) {
			memcpy(s->ptr, buf, k);
		} else {
			memcpy(buf, s->ptr, k);
		}
		buf += k;
		len -= k;
	}
	return 0;
}

/* ---- queues ---- */

int emu_sq_fetch(struct gpuos_emu *e, struct emu_sq *sq, struct gpuos_nvme_sqe *out)
{
	uint64_t iova = sq->iova + (uint64_t)sq->head * EMU_SQE_BYTES;
	int kind = 0;
	uint8_t *p = emu_translate(e, iova, EMU_SQE_BYTES, &kind);

	if (!p || kind != GPUOS_EMU_REGION_HOST) {
		emu_dma_fault(e, iova);
		return -EFAULT;
	}
	/* plain copy: the driver wrote the entry before its fence and the tail
	 * doorbell store, which the caller loaded with acquire */
	memcpy(out, p, sizeof(*out));
	return 0;
}

/* The CQ head doorbell, when it moves forward inside the posted entries. */
static void cq_head_update(struct gpuos_emu *e, struct emu_cq *cq)
{
	/* acquire: the driver read the entries it releases before this store,
	 * so we may overwrite them after it */
	uint32_t h = __atomic_load_n(emu_cq_db(e, cq->qid), __ATOMIC_ACQUIRE);
	uint32_t used = (cq->tail + cq->size - cq->head) % cq->size;
	uint32_t adv = (h + cq->size - cq->head) % cq->size;

	/* a head outside [old head, tail] is an invalid doorbell write (3.1.25); keep the old one */
	if (h < cq->size && adv <= used)
		cq->head = h;
}

int emu_cq_post(struct gpuos_emu *e, struct emu_cq *cq, struct emu_sq *sq, uint16_t cid,
		uint16_t status, uint32_t dw0)
{
	cq_head_update(e, cq);
	if ((cq->tail + 1) % cq->size == cq->head) {
		/* full: the host has not consumed enough; wait rather than overwrite */
		if (!cq->was_full) {
			cq->was_full = 1;
			emu_stat_add(&e->st.cq_full_waits, 1);
		}
		return -EAGAIN;
	}
	cq->was_full = 0;

	uint64_t iova = cq->iova + (uint64_t)cq->tail * EMU_CQE_BYTES;
	int kind = 0;
	uint32_t *w = (uint32_t *)emu_translate(e, iova, EMU_CQE_BYTES, &kind);
	if (!w || kind != GPUOS_EMU_REGION_HOST) {
		emu_dma_fault(e, iova);
		return -EFAULT;
	}
	/* relaxed atomics, not plain stores: the driver may still be reading
	 * the slot's previous entry with atomic loads (gpuos_qp_cq_peek) when
	 * its CQ head doorbell is a plain MMIO store that orders nothing for
	 * a race detector; on x86 these are the same movs */
	__atomic_store_n(&w[0], dw0, __ATOMIC_RELAXED);
	__atomic_store_n(&w[1], 0u, __ATOMIC_RELAXED);
	__atomic_store_n(&w[2], (uint32_t)sq->head | ((uint32_t)sq->qid << 16), __ATOMIC_RELAXED);
	uint32_t dw3 = (uint32_t)cid |
		       ((uint32_t)(((uint32_t)status << 1) | (cq->phase & 1u)) << 16);
	/* release: DW0-DW2 and the command's data are visible before the new
	 * phase tag; pairs with the driver's acquire load of the phase word */
	__atomic_store_n(&w[3], dw3, __ATOMIC_RELEASE);
	if (++cq->tail == cq->size) {
		cq->tail = 0;
		cq->phase ^= 1u;
	}
	return 0;
}
