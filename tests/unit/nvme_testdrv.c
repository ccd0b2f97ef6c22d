/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/nvme_testdrv.c - the raw test driver (see nvme_testdrv.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "nvme_testdrv.h"

static void td_nap_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000L };

	nanosleep(&ts, NULL);
}

int td_open(struct td *d, const char *args, const struct gpuos_emu_env *env)
{
	int r;

	memset(d, 0, sizeof(*d));
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	r = gpuos_emu_parse(args, &d->o, d->err, sizeof(d->err));
	if (r)
		return r;
	r = gpuos_emu_create(&d->o, env, &d->e, d->err, sizeof(d->err));
	if (r)
		return r;
	return td_attach(d, d->e, &d->o);
}

int td_attach(struct td *d, struct gpuos_emu *e, const struct gpuos_emu_opts *o)
{
	int r;

	if (d->e != e) {
		memset(d, 0, sizeof(*d));
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
		d->o = *o;
		d->e = e;
	}
	d->regs = gpuos_emu_regs(d->e);
	d->cap = td_rd64(d, GPUOS_NVME_REG_CAP);
	d->dstrd = gpuos_nvme_cap_dstrd(d->cap);
	d->arena = aligned_alloc(4096, TD_ARENA_BYTES);
	if (!d->arena) {
		gpuos_emu_destroy(d->e);
		d->e = NULL;
		return -ENOMEM;
	}
	memset(d->arena, 0, TD_ARENA_BYTES);
	r = gpuos_emu_map(d->e, TD_ARENA_IOVA, d->arena, TD_ARENA_BYTES, GPUOS_EMU_REGION_HOST);
	if (r) {
		snprintf(d->err, sizeof(d->err), "map arena: %d", r);
		td_close(d);
	}
	return r;
}

void td_close(struct td *d)
{
	/* the controller goes first: its threads may still touch the arena */
	gpuos_emu_destroy(d->e);
	d->e = NULL;
	free(d->arena);
	d->arena = NULL;
}

void *td_alloc(struct td *d, size_t len, size_t align, uint64_t *iova)
{
	size_t at = (d->brk + align - 1) / align * align;

	if (at + len > TD_ARENA_BYTES) {
		/* a test asked for more than the arena: its bug, stop here */
		fprintf(stderr, "td_alloc: arena exhausted (%zu + %zu bytes)\n", at, len);
		abort();
	}
	d->brk = at + len;
	if (iova)
		*iova = TD_ARENA_IOVA + at;
	return d->arena + at;
}

uint64_t td_iova(const struct td *d, const void *p)
{
	return TD_ARENA_IOVA + (uint64_t)((const uint8_t *)p - d->arena);
}

uint32_t td_rd32(struct td *d, uint32_t off)
{
	return __atomic_load_n((uint32_t *)(d->regs + off / 4), __ATOMIC_ACQUIRE);
}

uint64_t td_rd64(struct td *d, uint32_t off)
{
	uint64_t lo = td_rd32(d, off), hi = td_rd32(d, off + 4);

	return lo | hi << 32;
}

void td_wr32(struct td *d, uint32_t off, uint32_t v)
{
	/* release: queue entries and data written before are visible to the
	 * controller once it sees this value (its acquire load) */
	__atomic_store_n((uint32_t *)(d->regs + off / 4), v, __ATOMIC_RELEASE);
}

void td_wr64(struct td *d, uint32_t off, uint64_t v)
{
	td_wr32(d, off, (uint32_t)v);
	td_wr32(d, off + 4, (uint32_t)(v >> 32));
}

static uint64_t ms_now(void)
{
	return gpuos_now_ns() / 1000000ull;
}

int td_wait_csts(struct td *d, uint32_t mask, uint32_t val, uint32_t timeout_ms)
{
	uint64_t end = ms_now() + timeout_ms;

	do {
		if ((td_rd32(d, GPUOS_NVME_REG_CSTS) & mask) == val)
			return 0;
		td_nap_us(20);
	} while (ms_now() < end);
	return (td_rd32(d, GPUOS_NVME_REG_CSTS) & mask) == val ? 0 : -ETIMEDOUT;
}

static void q_init(struct td *d, struct td_q *q, uint16_t qid, uint32_t sq_size, uint32_t cq_size)
{
	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->sq_size = sq_size;
	q->cq_size = cq_size;
	if (sq_size)
		q->sq = td_alloc(d, sq_size * sizeof(*q->sq), 4096, &q->sq_iova);
	if (cq_size)
		q->cq = td_alloc(d, cq_size * sizeof(*q->cq), 4096, &q->cq_iova);
	q->phase = 1;
}

int td_enable(struct td *d, uint32_t entries)
{
	q_init(d, &d->aq, 0, entries, entries);
	td_wr32(d, GPUOS_NVME_REG_AQA, (entries - 1) << 16 | (entries - 1));
	td_wr64(d, GPUOS_NVME_REG_ASQ, d->aq.sq_iova);
	td_wr64(d, GPUOS_NVME_REG_ACQ, d->aq.cq_iova);
	td_wr32(d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN | GPUOS_NVME_CC_CSS_NVM |
		GPUOS_NVME_SQES_LOG2 << GPUOS_NVME_CC_IOSQES_SHIFT |
		GPUOS_NVME_CQES_LOG2 << GPUOS_NVME_CC_IOCQES_SHIFT);
	uint64_t end = ms_now() + TD_TIMEOUT_MS;
	do {
		uint32_t csts = td_rd32(d, GPUOS_NVME_REG_CSTS);
		if (csts & GPUOS_NVME_CSTS_CFS)
			return -EIO;
		if (csts & GPUOS_NVME_CSTS_RDY)
			return 0;
		td_nap_us(20);
	} while (ms_now() < end);
	return -ETIMEDOUT;
}

int td_disable(struct td *d)
{
	uint32_t cc = td_rd32(d, GPUOS_NVME_REG_CC);

	td_wr32(d, GPUOS_NVME_REG_CC, cc & ~GPUOS_NVME_CC_EN);
	/* RDY = 0 says the reset is done; after a failed enable RDY already is
	 * 0, and CFS clearing is the sign instead */
	return td_wait_csts(d, GPUOS_NVME_CSTS_RDY | GPUOS_NVME_CSTS_CFS, 0, TD_TIMEOUT_MS);
}

uint16_t td_cid(struct td_q *q)
{
	return q->next_cid++;
}

void td_sq_push(struct td *d, struct td_q *q, const struct gpuos_nvme_sqe *sqe)
{
	(void)d;
	memcpy(&q->sq[q->sq_tail], sqe, sizeof(*sqe));
	q->sq_tail = (q->sq_tail + 1) % q->sq_size;
}

void td_sq_ring(struct td *d, struct td_q *q)
{
	td_wr32(d, gpuos_nvme_sq_db_offset(q->qid, d->dstrd), q->sq_tail);
}

void td_cq_ring(struct td *d, struct td_q *q)
{
	td_wr32(d, gpuos_nvme_cq_db_offset(q->qid, d->dstrd), q->cq_head);
}

int td_cq_poll(struct td *d, struct td_q *q, struct gpuos_nvme_cqe *out, uint32_t timeout_ms, int ring)
{
	uint32_t *w = (uint32_t *)&q->cq[q->cq_head];
	uint64_t end = 0;

	for (unsigned spin = 0;; spin++) {
		/* acquire: the phase word first, then the rest of the entry */
		uint32_t dw3 = __atomic_load_n(&w[3], __ATOMIC_ACQUIRE);
		if (((dw3 >> 16) & 1u) == q->phase) {
			out->dw0 = w[0];
			out->dw1 = w[1];
			out->sqhd = (uint16_t)w[2];
			out->sqid = (uint16_t)(w[2] >> 16);
			out->cid = (uint16_t)dw3;
			out->status = (uint16_t)(dw3 >> 16);
			if (++q->cq_head == q->cq_size) {
				q->cq_head = 0;
				q->phase ^= 1u;
			}
			if (ring)
				td_cq_ring(d, q);
			return 0;
		}
		if (spin < 256) {
			gpuos_pause();
			continue;
		}
		if (!end)
			end = ms_now() + timeout_ms;
		else if (ms_now() >= end)
			return -ETIMEDOUT;
		td_nap_us(10);
	}
}

int td_cmd(struct td *d, struct td_q *q, struct gpuos_nvme_sqe *sqe, struct gpuos_nvme_cqe *cqe)
{
	struct gpuos_nvme_cqe c;

	sqe->cid = td_cid(q);
	td_sq_push(d, q, sqe);
	td_sq_ring(d, q);
	if (td_cq_poll(d, q, &c, TD_TIMEOUT_MS, 1))
		return -ETIMEDOUT;
	if (cqe)
		*cqe = c;
	if (c.cid != sqe->cid || c.sqid != q->qid)
		return -EPROTO;
	return gpuos_nvme_status_of(c.status);
}

int td_admin(struct td *d, struct gpuos_nvme_sqe *sqe, struct gpuos_nvme_cqe *cqe)
{
	return td_cmd(d, &d->aq, sqe, cqe);
}

int td_identify(struct td *d, uint8_t cns, uint32_t nsid, void *buf4k)
{
	struct gpuos_nvme_sqe s;

	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	s.nsid = nsid;
	s.prp1 = td_iova(d, buf4k);
	s.cdw10 = cns;
	return td_admin(d, &s, NULL);
}

int td_set_nq(struct td *d, uint32_t nsq, uint32_t ncq, uint32_t *dw0)
{
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	int r;

	memset(&s, 0, sizeof(s));
	memset(&c, 0, sizeof(c));
	s.opc = GPUOS_NVME_ADMIN_SET_FEATURES;
	s.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES;
	s.cdw11 = (ncq - 1) << 16 | (nsq - 1);
	r = td_admin(d, &s, &c);
	if (dw0)
		*dw0 = c.dw0;
	return r;
}

int td_create_cq(struct td *d, uint16_t qid, uint32_t size)
{
	struct td_q *q = &d->q[qid];
	struct gpuos_nvme_sqe s;
	uint32_t sq_size = q->sq_size;
	struct gpuos_nvme_sqe *sq = q->sq;
	uint64_t sq_iova = q->sq_iova;

	q_init(d, q, qid, 0, size);
	q->sq_size = sq_size;
	q->sq = sq;
	q->sq_iova = sq_iova;
	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_CREATE_CQ;
	s.prp1 = q->cq_iova;
	s.cdw10 = (size - 1) << 16 | qid;
	s.cdw11 = GPUOS_NVME_CREATE_Q_PC;
	return td_admin(d, &s, NULL);
}

int td_create_sq(struct td *d, uint16_t qid, uint32_t size, uint16_t cqid)
{
	struct td_q *q = &d->q[qid];
	struct gpuos_nvme_sqe s;

	q->qid = qid;
	q->sq_size = size;
	q->sq_tail = 0;
	q->sq = td_alloc(d, size * sizeof(*q->sq), 4096, &q->sq_iova);
	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_CREATE_SQ;
	s.prp1 = q->sq_iova;
	s.cdw10 = (size - 1) << 16 | qid;
	s.cdw11 = (uint32_t)cqid << 16 | GPUOS_NVME_CREATE_Q_PC;
	return td_admin(d, &s, NULL);
}

int td_create_pair(struct td *d, uint16_t qid, uint32_t sq_size, uint32_t cq_size)
{
	int r = td_create_cq(d, qid, cq_size);

	if (r)
		return r;
	return td_create_sq(d, qid, sq_size, qid);
}

static int td_delete(struct td *d, uint8_t opc, uint16_t qid)
{
	struct gpuos_nvme_sqe s;

	memset(&s, 0, sizeof(s));
	s.opc = opc;
	s.cdw10 = qid;
	return td_admin(d, &s, NULL);
}

int td_delete_sq(struct td *d, uint16_t qid)
{
	return td_delete(d, GPUOS_NVME_ADMIN_DELETE_SQ, qid);
}

int td_delete_cq(struct td *d, uint16_t qid)
{
	return td_delete(d, GPUOS_NVME_ADMIN_DELETE_CQ, qid);
}

int td_bringup(struct td *d, uint32_t npairs, uint32_t depth)
{
	int r = td_enable(d, 32);

	if (r)
		return r;
	for (uint32_t i = 1; i <= npairs; i++) {
		r = td_create_pair(d, (uint16_t)i, depth, depth);
		if (r)
			return r;
	}
	return 0;
}

void td_prps(struct td *d, uint64_t iova, size_t len, uint64_t *prp1, uint64_t *prp2)
{
	const uint64_t pg = 4096;
	size_t first = pg - (iova & (pg - 1));

	*prp1 = iova;
	*prp2 = 0;
	if (len <= first)
		return;
	uint64_t next = (iova & ~(pg - 1)) + pg;
	size_t rest = len - first;
	if (rest <= pg) {
		*prp2 = next;
		return;
	}
	size_t pages = (rest + pg - 1) / pg;
	uint64_t list_iova;
	uint64_t *list = td_alloc(d, pg, pg, &list_iova);
	*prp2 = list_iova;
	size_t slot = 0;
	for (size_t i = 0; i < pages; i++) {
		/* the last slot chains to a new list page when more than one entry remains */
		if (slot == 511 && pages - i > 1) {
			uint64_t nl_iova;
			uint64_t *nl = td_alloc(d, pg, pg, &nl_iova);
			list[511] = nl_iova;
			list = nl;
			slot = 0;
		}
		list[slot++] = next;
		next += pg;
	}
}

void td_rw_sqe(struct gpuos_nvme_sqe *s, uint8_t opc, uint32_t nsid, uint64_t slba,
	       uint32_t nlb, uint64_t prp1, uint64_t prp2)
{
	memset(s, 0, sizeof(*s));
	s->opc = opc;
	s->nsid = nsid;
	s->prp1 = prp1;
	s->prp2 = prp2;
	s->cdw10 = (uint32_t)slba;
	s->cdw11 = (uint32_t)(slba >> 32);
	s->cdw12 = (nlb - 1) & 0xffffu;
}

int td_rw(struct td *d, uint16_t qid, uint8_t opc, uint64_t slba, uint32_t nlb, void *buf)
{
	struct gpuos_nvme_sqe s;
	uint64_t p1 = 0, p2 = 0;
	size_t brk = d->brk;

	if (buf)
		td_prps(d, td_iova(d, buf), (size_t)nlb * d->o.lba_bytes, &p1, &p2);
	td_rw_sqe(&s, opc, 1, slba, nlb, p1, p2);
	int r = td_cmd(d, &d->q[qid], &s, NULL);
	d->brk = brk;   /* the PRP list pages are free again */
	return r;
}

void td_pattern(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

int td_pattern_ok(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (p[i] != (uint8_t)x)
			return 0;
	}
	return 1;
}
