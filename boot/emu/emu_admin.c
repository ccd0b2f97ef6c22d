/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_admin.c - admin commands of the emulated controller (NVMe base
 * spec 5): Identify (5.17), Set/Get Features Number of Queues (5.27.1.5),
 * Create/Delete I/O CQ and SQ (5.3-5.6), Get Log Page error information and
 * SMART (5.16.1.2, 5.16.1.3), Abort (5.1). Runs on the controller thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define ST(sct, sc, dnr) gpuos_nvme_status_make((sct), (sc), (dnr))
#define ST_FIELD    ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_FIELD, 1)
#define ST_NS       ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_NS, 1)
#define ST_QID      ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_QID_INVALID, 1)
#define ST_QSIZE    ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_QUEUE_SIZE, 1)
#define ST_CQ       ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_CQ_INVALID, 1)
#define ST_XFER     ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_DATA_XFER_ERROR, 0)

/* Send len bytes of the controller's buffer to the command's PRPs. */
static uint16_t data_out(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, const void *src,
			 size_t len)
{
	struct emu_sgl *sgl = &e->c.sgl;
	uint16_t st;

	sgl->n = 0;
	pthread_rwlock_rdlock(&e->rlock);
	st = emu_prp_map(e, sgl, c->prp1, c->prp2, len);
	if (!st)
		st = emu_sgl_copy(e, sgl, 0, sgl->n, (uint8_t *)src, len, 1);
	pthread_rwlock_unlock(&e->rlock);
	return st;
}

static void pad(char *dst, size_t n, const char *src)
{
	size_t k = strlen(src);

	/* ASCII, space padded, no terminator (5.17.2.1) */
	memset(dst, ' ', n);
	memcpy(dst, src, k < n ? k : n);
}

static uint16_t identify(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint8_t cns = (uint8_t)(c->cdw10 & 0xffu);
	uint8_t *buf = e->c.buf;

	memset(buf, 0, EMU_PAGE);
	switch (cns) {
	case GPUOS_NVME_CNS_CONTROLLER: {
		struct gpuos_nvme_id_ctrl *id = (struct gpuos_nvme_id_ctrl *)buf;
		pad(id->sn, sizeof(id->sn), e->o.serial);
		pad(id->mn, sizeof(id->mn), e->o.model);
		pad(id->fr, sizeof(id->fr), "gpuos1");
		id->rab = 6;
		/* MDTS in units of the minimum page, as a power of two; 0 = no limit */
		id->mdts = 0;
		for (uint64_t p = e->mdts_bytes / EMU_PAGE; p > 1; p >>= 1)
			id->mdts++;
		id->cntlid = 1;
		id->ver = GPUOS_NVME_VS(1, 4, 0);
		id->acl = 3;
		id->elpe = EMU_ELOG_ENTRIES - 1;
		id->sqes = (uint8_t)(GPUOS_NVME_SQES_LOG2 << 4 | GPUOS_NVME_SQES_LOG2);
		id->cqes = (uint8_t)(GPUOS_NVME_CQES_LOG2 << 4 | GPUOS_NVME_CQES_LOG2);
		id->nn = 1;
		/* bits 2:1 = 11b: Flush with NSID FFFFFFFFh works; bit 0: a cache
		 * exists only where a file system holds our writes back */
		id->vwc = (uint8_t)(0x6u | (e->o.backend == GPUOS_EMU_FILE ||
					    e->o.backend == GPUOS_EMU_URING));
		break;
	}
	case GPUOS_NVME_CNS_NAMESPACE: {
		struct gpuos_nvme_id_ns *ns = (struct gpuos_nvme_id_ns *)buf;
		if (c->nsid != 1)
			return ST_NS;
		ns->nsze = ns->ncap = ns->nuse = e->nlba;
		ns->nlbaf = 0;
		ns->flbas = 0;
		ns->lbaf[0].lbads = (uint8_t)e->lba_shift;
		break;
	}
	case GPUOS_NVME_CNS_ACTIVE_NS_LIST: {
		if (c->nsid >= 0xfffffffeu)
			return ST_NS;
		uint32_t *list = (uint32_t *)buf;
		/* active NSIDs greater than CDW1.NSID, ascending */
		if (c->nsid < 1)
			list[0] = 1;
		break;
	}
	default:
		return ST_FIELD;
	}
	return data_out(e, c, buf, EMU_PAGE);
}

static uint16_t set_features(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint32_t *dw0)
{
	struct emu_ctrl *ct = &e->c;
	uint8_t fid = (uint8_t)(c->cdw10 & 0xffu);

	if (fid != GPUOS_NVME_FEAT_NUM_QUEUES)
		return ST_FIELD;
	if (c->cdw10 >> 31)           /* SV: nothing here is saveable */
		return ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_FEATURE_NOT_SAVEABLE, 1);
	if (ct->io_queues_made)
		return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_CMD_SEQ_ERROR, 1);
	uint32_t nsqr = c->cdw11 & 0xffffu, ncqr = c->cdw11 >> 16;
	if (nsqr == 0xffffu || ncqr == 0xffffu)   /* 65535 queues is not a thing (5.27.1.5) */
		return ST_FIELD;
	ct->nsqa = GPUOS_MIN(nsqr + 1u, e->nq);
	ct->ncqa = GPUOS_MIN(ncqr + 1u, e->nq);
	*dw0 = (ct->ncqa - 1u) << 16 | (ct->nsqa - 1u);
	return 0;
}

static uint16_t get_features(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint32_t *dw0)
{
	uint8_t fid = (uint8_t)(c->cdw10 & 0xffu);
	uint32_t sel = (c->cdw10 >> 8) & 0x7u;

	if (fid != GPUOS_NVME_FEAT_NUM_QUEUES)
		return ST_FIELD;
	switch (sel) {
	case 0:   /* current */
		*dw0 = (e->c.ncqa - 1u) << 16 | (e->c.nsqa - 1u);
		return 0;
	case 1:   /* default */
	case 2:   /* saved: not saveable, so the default */
		*dw0 = (e->nq - 1u) << 16 | (e->nq - 1u);
		return 0;
	case 3:   /* supported capabilities: changeable */
		*dw0 = 1u << 2;
		return 0;
	default:
		return ST_FIELD;
	}
}

/* Check a queue's base: page aligned, inside one host region. */
static uint16_t queue_mem(struct gpuos_emu *e, uint64_t base, size_t bytes)
{
	int kind = 0;
	uint16_t st = 0;

	if (base & (EMU_PAGE - 1))
		return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_PRP_OFFSET, 1);
	pthread_rwlock_rdlock(&e->rlock);
	/* queues are read and written by the controller's CPU threads, so they
	 * must sit in host memory (device regions would need a copy per entry) */
	if (!emu_translate(e, base, bytes, &kind)) {
		emu_dma_fault(e, base);
		st = ST_XFER;
	} else if (kind != GPUOS_EMU_REGION_HOST) {
		st = ST_FIELD;
	}
	pthread_rwlock_unlock(&e->rlock);
	return st;
}

static uint32_t cc_load(struct gpuos_emu *e)
{
	return __atomic_load_n(emu_reg(e, GPUOS_NVME_REG_CC), __ATOMIC_ACQUIRE);
}

static uint16_t create_cq(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint32_t qid = c->cdw10 & 0xffffu, qsize = (c->cdw10 >> 16) + 1u;
	uint32_t iv = c->cdw11 >> 16;
	uint16_t st;

	if (!qid || qid > e->c.ncqa || e->cq[qid].state != Q_FREE)
		return ST_QID;
	if (qsize < 2 || qsize > gpuos_nvme_cap_mqes(e->cap) + 1u)
		return ST_QSIZE;
	if (!(c->cdw11 & GPUOS_NVME_CREATE_Q_PC))   /* CAP.CQR = 1 */
		return ST_FIELD;
	if ((c->cdw11 & GPUOS_NVME_CREATE_CQ_IEN) && iv)
		return ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_INVALID_INT_VECTOR, 1);
	if ((cc_load(e) & GPUOS_NVME_CC_IOCQES_MASK) >> GPUOS_NVME_CC_IOCQES_SHIFT != GPUOS_NVME_CQES_LOG2)
		return ST_FIELD;
	st = queue_mem(e, c->prp1, (size_t)qsize * EMU_CQE_BYTES);
	if (st)
		return st;

	struct emu_cq *cq = &e->cq[qid];
	cq->iova = c->prp1;
	cq->size = qsize;
	cq->qid = (uint16_t)qid;
	cq->owner = (qid - 1u) % e->nworkers;
	cq->tail = cq->head = 0;
	cq->phase = 1;
	cq->was_full = 0;
	cq->nsq = 0;
	cq->state = Q_LIVE;
	/* no SQ posts here yet, so no worker reads these fields: the SQ's
	 * publishing store orders them before the owner's first use */
	__atomic_store_n(emu_cq_db(e, qid), 0, __ATOMIC_RELAXED);
	e->c.io_queues_made = 1;
	return 0;
}

static uint16_t create_sq(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint32_t qid = c->cdw10 & 0xffffu, qsize = (c->cdw10 >> 16) + 1u;
	uint32_t cqid = c->cdw11 >> 16;
	uint16_t st;

	if (!qid || qid > e->c.nsqa ||
	    __atomic_load_n(&e->sq[qid].state, __ATOMIC_ACQUIRE) != Q_FREE)
		return ST_QID;
	if (qsize < 2 || qsize > gpuos_nvme_cap_mqes(e->cap) + 1u)
		return ST_QSIZE;
	if (!cqid || cqid > e->nq || e->cq[cqid].state != Q_LIVE)
		return ST_CQ;
	if (!(c->cdw11 & GPUOS_NVME_CREATE_Q_PC))
		return ST_FIELD;
	if ((cc_load(e) & GPUOS_NVME_CC_IOSQES_MASK) >> GPUOS_NVME_CC_IOSQES_SHIFT != GPUOS_NVME_SQES_LOG2)
		return ST_FIELD;
	st = queue_mem(e, c->prp1, (size_t)qsize * EMU_SQE_BYTES);
	if (st)
		return st;

	struct emu_sq *sq = &e->sq[qid];
	struct emu_cq *cq = &e->cq[cqid];
	sq->qid = (uint16_t)qid;
	sq->cqid = (uint16_t)cqid;
	sq->iova = c->prp1;
	sq->size = qsize;
	sq->cq = cq;
	/* one writer per CQ: the worker of its SQs. Atomic because every
	 * worker reads it to find its own queues, owner or not */
	__atomic_store_n(&sq->owner, cq->owner, __ATOMIC_RELAXED);
	sq->head = 0;
	/* no CID is outstanding on a new queue */
	if (!sq->live)
		sq->live = calloc(EMU_CID_WORDS, sizeof(*sq->live));
	else
		memset(sq->live, 0, EMU_CID_WORDS * sizeof(*sq->live));
	cq->nsq++;
	__atomic_store_n(emu_sq_db(e, qid), 0, __ATOMIC_RELAXED);
	uint32_t m = __atomic_load_n(&e->max_live_sq, __ATOMIC_RELAXED);
	if (qid > m)
		__atomic_store_n(&e->max_live_sq, qid, __ATOMIC_RELEASE);
	/* release: the fields above before the state; pairs with the worker's
	 * acquire load of state in its scan */
	__atomic_store_n(&sq->state, Q_LIVE, __ATOMIC_RELEASE);
	e->c.io_queues_made = 1;
	return 0;
}

/* Take an SQ back from its worker (which posts or drops what it still holds). */
static void sq_retire(struct gpuos_emu *e, struct emu_sq *sq)
{
	__atomic_store_n(&sq->state, Q_DELETING, __ATOMIC_RELEASE);
	/* acquire: pairs with the worker's release of Q_FREE; after it the
	 * worker no longer touches the SQ or its CQ */
	while (__atomic_load_n(&sq->state, __ATOMIC_ACQUIRE) != Q_FREE) {
		if (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			return;
		emu_nap_ns(20000);
	}
}

static uint16_t delete_sq(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint32_t qid = c->cdw10 & 0xffffu;

	if (!qid || qid > e->nq || __atomic_load_n(&e->sq[qid].state, __ATOMIC_ACQUIRE) != Q_LIVE)
		return ST_QID;
	sq_retire(e, &e->sq[qid]);
	e->sq[qid].cq->nsq--;
	return 0;
}

static uint16_t delete_cq(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint32_t qid = c->cdw10 & 0xffffu;

	if (!qid || qid > e->nq || e->cq[qid].state != Q_LIVE)
		return ST_QID;
	if (e->cq[qid].nsq)
		return ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_INVALID_QUEUE_DELETION, 1);
	e->cq[qid].state = Q_FREE;
	return 0;
}

void emu_queues_reset(struct gpuos_emu *e)
{
	/* ask every worker for its SQs at once, then wait for all of them */
	for (uint32_t q = 1; q <= e->nq; q++)
		if (__atomic_load_n(&e->sq[q].state, __ATOMIC_ACQUIRE) == Q_LIVE)
			__atomic_store_n(&e->sq[q].state, Q_DELETING, __ATOMIC_RELEASE);
	for (uint32_t q = 1; q <= e->nq; q++)
		if (__atomic_load_n(&e->sq[q].state, __ATOMIC_ACQUIRE) != Q_FREE)
			sq_retire(e, &e->sq[q]);
	for (uint32_t q = 1; q <= e->nq; q++) {
		e->cq[q].state = Q_FREE;
		e->cq[q].nsq = 0;
		__atomic_store_n(emu_sq_db(e, q), 0, __ATOMIC_RELAXED);
		__atomic_store_n(emu_cq_db(e, q), 0, __ATOMIC_RELAXED);
	}
}

static uint64_t data_units(uint64_t bytes)
{
	/* thousands of 512-byte units, rounded up (5.16.1.3) */
	return ((bytes + 511u) / 512u + 999u) / 1000u;
}

static uint16_t get_log_page(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c)
{
	uint8_t lid = (uint8_t)(c->cdw10 & 0xffu);
	uint64_t numd = ((uint64_t)(c->cdw11 & 0xffffu) << 16 | (c->cdw10 >> 16)) + 1u;
	uint64_t len = numd * 4u;
	uint64_t off = (uint64_t)c->cdw12 | (uint64_t)c->cdw13 << 32;
	uint8_t *buf = e->c.buf;
	size_t size;

	if (off & 3u)
		return ST_FIELD;
	memset(buf, 0, EMU_PAGE);
	switch (lid) {
	case GPUOS_NVME_LOG_ERROR: {
		struct gpuos_nvme_error_log *l = (struct gpuos_nvme_error_log *)buf;
		size = EMU_ELOG_ENTRIES * sizeof(*l);
		pthread_mutex_lock(&e->elock);
		/* entry 0 is the most recent error */
		for (uint64_t i = 0; i < EMU_ELOG_ENTRIES && i < e->elog_count; i++)
			l[i] = e->elog[(e->elog_count - 1 - i) % EMU_ELOG_ENTRIES];
		pthread_mutex_unlock(&e->elock);
		break;
	}
	case GPUOS_NVME_LOG_SMART: {
		struct gpuos_nvme_smart_log *s = (struct gpuos_nvme_smart_log *)buf;
		if (c->nsid && c->nsid != 1 && c->nsid != 0xffffffffu)
			return ST_NS;
		size = sizeof(*s);
		s->composite_temp = 313;   /* kelvin: a calm 40 C */
		s->avail_spare = 100;
		s->avail_spare_thresh = 10;
		s->data_units_read[0] = data_units(__atomic_load_n(&e->st.read_bytes, __ATOMIC_RELAXED));
		s->data_units_written[0] = data_units(__atomic_load_n(&e->st.write_bytes, __ATOMIC_RELAXED));
		s->host_reads[0] = __atomic_load_n(&e->host_reads, __ATOMIC_RELAXED);
		s->host_writes[0] = __atomic_load_n(&e->host_writes, __ATOMIC_RELAXED);
		s->power_cycles[0] = 1;
		s->media_errors[0] = __atomic_load_n(&e->media_errors, __ATOMIC_RELAXED);
		s->num_err_log_entries[0] = __atomic_load_n(&e->elog_count, __ATOMIC_RELAXED);
		break;
	}
	default:
		return ST(GPUOS_NVME_SCT_CMD_SPECIFIC, GPUOS_NVME_SC_INVALID_LOG_PAGE, 1);
	}
	if (off >= size)
		return ST_FIELD;
	/* as QEMU: transfer what the log holds from the offset, no more */
	return data_out(e, c, buf + off, (size_t)GPUOS_MIN(len, size - off));
}

uint16_t emu_admin_exec(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint32_t *dw0)
{
	*dw0 = 0;
	/* no fused commands, no SGLs (admin commands over PCIe use PRPs, 4.2) */
	if (c->fuse_psdt)
		return ST_FIELD;
	switch (c->opc) {
	case GPUOS_NVME_ADMIN_IDENTIFY:
		return identify(e, c);
	case GPUOS_NVME_ADMIN_SET_FEATURES:
		return set_features(e, c, dw0);
	case GPUOS_NVME_ADMIN_GET_FEATURES:
		return get_features(e, c, dw0);
	case GPUOS_NVME_ADMIN_CREATE_CQ:
		return create_cq(e, c);
	case GPUOS_NVME_ADMIN_CREATE_SQ:
		return create_sq(e, c);
	case GPUOS_NVME_ADMIN_DELETE_SQ:
		return delete_sq(e, c);
	case GPUOS_NVME_ADMIN_DELETE_CQ:
		return delete_cq(e, c);
	case GPUOS_NVME_ADMIN_GET_LOG_PAGE:
		return get_log_page(e, c);
	case GPUOS_NVME_ADMIN_ABORT:
		/* SQID 15:0, CID 31:16 (5.1). Only a command held back
		 * (faults=late) waits long enough to be caught; any other has
		 * run or is running: dw0 bit 0 = 1, "not aborted". */
		*dw0 = emu_late_abort(e, (uint16_t)(c->cdw10 & 0xffffu), (uint16_t)(c->cdw10 >> 16)) ? 0u : 1u;
		return 0;
	default:
		return ST(GPUOS_NVME_SCT_GENERIC, GPUOS_NVME_SC_INVALID_OPCODE, 1);
	}
}
