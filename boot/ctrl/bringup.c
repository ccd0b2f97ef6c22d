/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bringup.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep(&ts, NULL);
}

/* Wait until (CSTS & mask) == want, at most CAP.TO. CFS ends the wait early. */
static int wait_csts(struct gpuos_nvme_dev *d, uint32_t mask, uint32_t want, const char *step,
		     char *err, size_t errlen)
{
	uint64_t t0 = now_ms();
	uint32_t csts;
	for (;;) {
		csts = gpuos_reg_read32(d->m, GPUOS_NVME_REG_CSTS);
		if (csts == 0xffffffffu) {
			snprintf(err, errlen, "%s: controller registers read all ones (device gone?)", step);
			return -ENODEV;
		}
		if ((csts & mask) == want)
			return 0;
		if (csts & GPUOS_NVME_CSTS_CFS) {
			snprintf(err, errlen, "%s: controller fatal status (CSTS.CFS, CSTS=0x%x)", step, csts);
			return -EIO;
		}
		if (now_ms() - t0 > d->to_ms) {
			snprintf(err, errlen, "%s: timed out after %u ms (CAP.TO), CSTS=0x%x", step, d->to_ms, csts);
			return -ETIMEDOUT;
		}
		sleep_us(200);
	}
}

volatile uint32_t *gpuos_nvme_sq_db(struct gpuos_nvme_dev *d, uint32_t qid)
{
	return d->m->regs + gpuos_nvme_sq_db_offset(qid, d->dstrd) / 4;
}
volatile uint32_t *gpuos_nvme_cq_db(struct gpuos_nvme_dev *d, uint32_t qid)
{
	return d->m->regs + gpuos_nvme_cq_db_offset(qid, d->dstrd) / 4;
}
uint64_t gpuos_nvme_sq_db_rt(struct gpuos_nvme_dev *d, uint32_t qid)
{
	return d->m->regs_rt + gpuos_nvme_sq_db_offset(qid, d->dstrd);
}
uint64_t gpuos_nvme_cq_db_rt(struct gpuos_nvme_dev *d, uint32_t qid)
{
	return d->m->regs_rt + gpuos_nvme_cq_db_offset(qid, d->dstrd);
}

int gpuos_nvme_admin(struct gpuos_nvme_dev *d, struct gpuos_nvme_sqe *cmd, struct gpuos_nvme_cqe *cqe,
		     const char *step, char *err, size_t errlen)
{
	struct gpuos_nvme_cqe e;
	uint64_t t0;
	uint16_t st;

	if (gpuos_qp_sq_space(&d->admin) == 0) {
		snprintf(err, errlen, "%s: admin queue full", step);
		return -EBUSY;
	}
	/* below 0x8000: the runtime's admin commands take the top half */
	cmd->cid = d->next_cid;
	d->next_cid = (uint16_t)((d->next_cid + 1u) & 0x7fffu);
	gpuos_qp_sq_put(&d->admin, 0, cmd);
	gpuos_qp_sq_ring(&d->admin, 1);
	t0 = now_ms();
	for (;;) {
		if (gpuos_qp_cq_peek(&d->admin, 0, &e)) {
			gpuos_qp_cq_consume(&d->admin, 1, e.sqhd);
			if (e.cid != cmd->cid)
				continue; /* a stale completion (e.g. of a timed-out command) */
			break;
		}
		if (now_ms() - t0 > d->to_ms) {
			uint32_t csts = gpuos_reg_read32(d->m, GPUOS_NVME_REG_CSTS);
			snprintf(err, errlen, "%s: no completion within %u ms (CAP.TO)%s", step, d->to_ms,
				 (csts & GPUOS_NVME_CSTS_CFS) ? ", controller fatal status" : "");
			return -ETIMEDOUT;
		}
		sleep_us(20);
	}
	if (cqe)
		*cqe = e;
	st = gpuos_nvme_status_of(e.status);
	if (st) {
		snprintf(err, errlen, "%s: NVMe status 0x%03x %s (SCT %u, SC 0x%02x%s)", step, st,
			 gpuos_nvme_status_name(st), gpuos_nvme_status_sct(st), gpuos_nvme_status_sc(st),
			 gpuos_nvme_status_dnr(st) ? ", DNR" : "");
		return -EIO;
	}
	return 0;
}

static void copy_str(char *dst, const char *src, size_t n)
{
	size_t len = n;
	memcpy(dst, src, n);
	dst[n] = 0;
	while (len > 0 && (dst[len - 1] == ' ' || dst[len - 1] == 0))
		dst[--len] = 0;
}

/* CAP and VS of member into d: queue size, doorbell stride, timeout;
 * refused where gpuos cannot drive the controller. */
static int read_cap(struct gpuos_nvme_dev *d, char *err, size_t errlen)
{
	uint32_t mpsmin;

	d->cap = gpuos_reg_read64(d->m, GPUOS_NVME_REG_CAP);
	d->vs = gpuos_reg_read32(d->m, GPUOS_NVME_REG_VS);
	d->mqes = gpuos_nvme_cap_mqes(d->cap) + 1u;
	d->dstrd = gpuos_nvme_cap_dstrd(d->cap);
	d->to_ms = gpuos_nvme_cap_to(d->cap) * 500u;
	if (d->to_ms == 0)
		d->to_ms = 500;
	mpsmin = gpuos_nvme_cap_mpsmin(d->cap);
	if (d->cap == ~0ull) {
		snprintf(err, errlen, "read CAP: registers read all ones (device gone?)");
		return -ENODEV;
	}
	if (mpsmin != 0) {
		snprintf(err, errlen, "read CAP: minimum page size %u bytes, gpuos needs 4 KiB pages", 4096u << mpsmin);
		return -EOPNOTSUPP;
	}
	if (!(gpuos_nvme_cap_css(d->cap) & GPUOS_NVME_CAP_CSS_NVM)) {
		snprintf(err, errlen, "read CAP: controller does not support the NVM command set");
		return -EOPNOTSUPP;
	}
	if ((size_t)gpuos_nvme_cq_db_offset(GPUOS_ADMIN_DEPTH, d->dstrd) > d->m->regs_len) {
		snprintf(err, errlen, "read CAP: doorbell stride %u does not fit the register window", d->dstrd);
		return -EINVAL;
	}
	return 0;
}

/* The admin queues and a page for identify data, then CC.EN = 1 and
 * CSTS.RDY awaited. The controller is disabled. */
static int enable_admin(struct gpuos_nvme_dev *d, struct gpuos_ctrl *c, char *err, size_t errlen)
{
	uint32_t cc;
	int r;

	r = gpuos_dma_alloc(c, GPUOS_ADMIN_DEPTH * sizeof(struct gpuos_nvme_sqe), GPUOS_MEM_HOST, 1, &d->admin_sq);
	if (!r)
		r = gpuos_dma_alloc(c, GPUOS_ADMIN_DEPTH * sizeof(struct gpuos_nvme_cqe), GPUOS_MEM_HOST, 1, &d->admin_cq);
	if (!r)
		r = gpuos_dma_alloc(c, 4096, GPUOS_MEM_HOST, 1, &d->buf);
	if (r) {
		snprintf(err, errlen, "allocate admin queues: %s", strerror(-r));
		return r;
	}
	gpuos_qp_init(&d->admin, d->admin_sq.host, d->admin_cq.host, gpuos_nvme_sq_db(d, 0), gpuos_nvme_cq_db(d, 0),
		      GPUOS_ADMIN_DEPTH, 0);
	gpuos_reg_write32(d->m, GPUOS_NVME_REG_AQA, ((GPUOS_ADMIN_DEPTH - 1u) << 16) | (GPUOS_ADMIN_DEPTH - 1u));
	gpuos_reg_write64(d->m, GPUOS_NVME_REG_ASQ, d->admin_sq.iova);
	gpuos_reg_write64(d->m, GPUOS_NVME_REG_ACQ, d->admin_cq.iova);
	cc = GPUOS_NVME_CC_CSS_NVM | (0u << GPUOS_NVME_CC_MPS_SHIFT) | GPUOS_NVME_CC_AMS_MASK * 0 |
	     (GPUOS_NVME_SQES_LOG2 << GPUOS_NVME_CC_IOSQES_SHIFT) | (GPUOS_NVME_CQES_LOG2 << GPUOS_NVME_CC_IOCQES_SHIFT);
	gpuos_reg_write32(d->m, GPUOS_NVME_REG_CC, cc);
	gpuos_reg_write32(d->m, GPUOS_NVME_REG_CC, cc | GPUOS_NVME_CC_EN);
	r = wait_csts(d, GPUOS_NVME_CSTS_RDY, GPUOS_NVME_CSTS_RDY, "enable (wait for CSTS.RDY=1)", err, errlen);
	if (r)
		return r;
	d->enabled = 1;
	return 0;
}

/* Identify (CNS cns, of namespace nsid) into d->buf. */
static int identify(struct gpuos_nvme_dev *d, uint32_t nsid, uint32_t cns, const char *step, char *err,
		    size_t errlen)
{
	struct gpuos_nvme_sqe cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	cmd.prp1 = d->buf.iova;
	cmd.nsid = nsid;
	cmd.cdw10 = cns;
	return gpuos_nvme_admin(d, &cmd, NULL, step, err, errlen);
}

/* The controller's names, MDTS and namespace count. */
static int identify_controller(struct gpuos_nvme_dev *d, char *err, size_t errlen)
{
	uint32_t mpsmin = gpuos_nvme_cap_mpsmin(d->cap);
	struct gpuos_nvme_id_ctrl *idc;
	int r = identify(d, 0, GPUOS_NVME_CNS_CONTROLLER, "identify controller", err, errlen);

	if (r)
		return r;
	idc = (struct gpuos_nvme_id_ctrl *)d->buf.host;
	copy_str(d->model, idc->mn, sizeof(idc->mn));
	copy_str(d->serial, idc->sn, sizeof(idc->sn));
	copy_str(d->firmware, idc->fr, sizeof(idc->fr));
	d->mdts_bytes = idc->mdts ? (uint32_t)((4096ull << mpsmin) << idc->mdts > 0x80000000ull
						   ? 0x80000000u : (4096u << mpsmin) << idc->mdts) : 0;
	d->nn = idc->nn;
	return 0;
}

/* The first active namespace (CNS 2 lists active NSIDs above CDW1.NSID)
 * and its LBA format: 512 bytes to 4 KiB, no metadata. */
static int identify_namespace(struct gpuos_nvme_dev *d, char *err, size_t errlen)
{
	struct gpuos_nvme_id_ns *idn;
	uint32_t lbaf;
	int r = identify(d, 0, GPUOS_NVME_CNS_ACTIVE_NS_LIST, "identify active namespace list", err, errlen);

	if (r)
		return r;
	d->nsid = ((uint32_t *)d->buf.host)[0];
	if (d->nsid == 0) {
		snprintf(err, errlen, "identify active namespace list: the controller has no active namespace");
		return -ENODEV;
	}
	r = identify(d, d->nsid, GPUOS_NVME_CNS_NAMESPACE, "identify namespace", err, errlen);
	if (r)
		return r;
	idn = (struct gpuos_nvme_id_ns *)d->buf.host;
	lbaf = idn->flbas & GPUOS_NVME_FLBAS_FMT_MASK;
	if (lbaf > idn->nlbaf || idn->lbaf[lbaf].lbads < 9 || idn->lbaf[lbaf].lbads > 12) {
		snprintf(err, errlen, "identify namespace %u: unsupported LBA format (2^%u bytes)", d->nsid,
			 idn->lbaf[lbaf].lbads);
		return -EOPNOTSUPP;
	}
	if (idn->lbaf[lbaf].ms != 0) {
		snprintf(err, errlen, "identify namespace %u: LBA format with metadata is not supported", d->nsid);
		return -EOPNOTSUPP;
	}
	d->lba_bytes = 1u << idn->lbaf[lbaf].lbads;
	d->ns_lbas = idn->nsze;
	return 0;
}

int gpuos_nvme_enable(struct gpuos_nvme_dev *d, struct gpuos_ctrl *c, uint32_t member, char *err, size_t errlen)
{
	uint32_t cc;
	int r;

	memset(d, 0, sizeof(*d));
	d->c = c;
	d->m = &c->member[member];
	r = read_cap(d, err, errlen);
	if (r)
		return r;

	/* The controller may come up enabled (firmware left it so): disable first. */
	cc = gpuos_reg_read32(d->m, GPUOS_NVME_REG_CC);
	if (cc & GPUOS_NVME_CC_EN)
		gpuos_reg_write32(d->m, GPUOS_NVME_REG_CC, cc & ~GPUOS_NVME_CC_EN);
	r = wait_csts(d, GPUOS_NVME_CSTS_RDY, 0, "disable (wait for CSTS.RDY=0)", err, errlen);
	if (r)
		return r;

	r = enable_admin(d, c, err, errlen);
	if (!r)
		r = identify_controller(d, err, errlen);
	if (!r)
		r = identify_namespace(d, err, errlen);
	if (r)
		gpuos_nvme_shutdown(d, NULL, 0);
	return r;
}

int gpuos_nvme_set_queues(struct gpuos_nvme_dev *d, uint32_t want, char *err, size_t errlen)
{
	struct gpuos_nvme_sqe cmd;
	struct gpuos_nvme_cqe cqe;
	uint32_t nsq, ncq;
	int r;

	if (want == 0 || want > 65535u) {
		snprintf(err, errlen, "set features number of queues: %u queues asked (1..65535)", want);
		return -EINVAL;
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.opc = GPUOS_NVME_ADMIN_SET_FEATURES;
	cmd.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES;
	cmd.cdw11 = ((want - 1u) << 16) | (want - 1u); /* NCQR, NSQR: 0's based */
	r = gpuos_nvme_admin(d, &cmd, &cqe, "set features number of queues", err, errlen);
	if (r)
		return r;
	nsq = (cqe.dw0 & 0xffffu) + 1u;
	ncq = (cqe.dw0 >> 16) + 1u;
	/* The controller may grant more or fewer than asked (QEMU grants 64 whatever). */
	d->io_queues = GPUOS_MIN(want, GPUOS_MIN(nsq, ncq));
	return 0;
}

/* One create/delete I/O queue command for queue qid; its step in err is
 * "<what> <qid>". */
static int queue_cmd(struct gpuos_nvme_dev *d, uint8_t opc, const char *what, uint32_t qid, uint64_t prp1,
		     uint32_t cdw10, uint32_t cdw11, char *err, size_t errlen)
{
	struct gpuos_nvme_sqe cmd;
	char step[64];

	memset(&cmd, 0, sizeof(cmd));
	cmd.opc = opc;
	cmd.prp1 = prp1;
	cmd.cdw10 = cdw10;
	cmd.cdw11 = cdw11;
	snprintf(step, sizeof(step), "%s %u", what, qid);
	return gpuos_nvme_admin(d, &cmd, NULL, step, err, errlen);
}

int gpuos_nvme_create_qpair(struct gpuos_nvme_dev *d, uint32_t qid, uint32_t depth, uint64_t sq_iova,
			    uint64_t cq_iova, char *err, size_t errlen)
{
	uint32_t size_qid = ((depth - 1u) << 16) | qid; /* QSIZE (0's based), QID */
	int r;

	/* CDW11 leaves IEN clear: polled, no interrupts; the SQ's names its CQ */
	r = queue_cmd(d, GPUOS_NVME_ADMIN_CREATE_CQ, "create I/O CQ", qid, cq_iova, size_qid, GPUOS_NVME_CREATE_Q_PC,
		      err, errlen);
	if (r)
		return r;
	r = queue_cmd(d, GPUOS_NVME_ADMIN_CREATE_SQ, "create I/O SQ", qid, sq_iova, size_qid,
		      (qid << 16) | GPUOS_NVME_CREATE_Q_PC, err, errlen);
	if (r) {
		char e2[8];
		queue_cmd(d, GPUOS_NVME_ADMIN_DELETE_CQ, "delete I/O CQ", qid, 0, qid, 0, e2, sizeof(e2));
	}
	return r;
}

int gpuos_nvme_delete_qpair(struct gpuos_nvme_dev *d, uint32_t qid, char *err, size_t errlen)
{
	int r = queue_cmd(d, GPUOS_NVME_ADMIN_DELETE_SQ, "delete I/O SQ", qid, 0, qid, 0, err, errlen);
	if (r)
		return r;
	return queue_cmd(d, GPUOS_NVME_ADMIN_DELETE_CQ, "delete I/O CQ", qid, 0, qid, 0, err, errlen);
}

int gpuos_nvme_shutdown(struct gpuos_nvme_dev *d, char *err, size_t errlen)
{
	char dummy[256];
	int r = 0;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (d->enabled) {
		uint32_t cc = gpuos_reg_read32(d->m, GPUOS_NVME_REG_CC);
		cc = (cc & ~GPUOS_NVME_CC_SHN_MASK) | GPUOS_NVME_CC_SHN_NORMAL;
		gpuos_reg_write32(d->m, GPUOS_NVME_REG_CC, cc);
		r = wait_csts(d, GPUOS_NVME_CSTS_SHST_MASK, GPUOS_NVME_CSTS_SHST_COMPLETE,
			      "shutdown (wait for CSTS.SHST complete)", err, errlen);
		d->enabled = 0;
	}
	/* Disable so the controller stops touching the admin queues before they go. */
	if (d->c && (gpuos_reg_read32(d->m, GPUOS_NVME_REG_CC) & GPUOS_NVME_CC_EN)) {
		uint32_t cc = gpuos_reg_read32(d->m, GPUOS_NVME_REG_CC);
		gpuos_reg_write32(d->m, GPUOS_NVME_REG_CC, cc & ~(GPUOS_NVME_CC_EN | GPUOS_NVME_CC_SHN_MASK));
		wait_csts(d, GPUOS_NVME_CSTS_RDY, 0, "disable after shutdown", dummy, sizeof(dummy));
	}
	if (d->c) {
		if (d->admin_sq.len)
			gpuos_dma_free(d->c, &d->admin_sq);
		if (d->admin_cq.len)
			gpuos_dma_free(d->c, &d->admin_cq);
		if (d->buf.len)
			gpuos_dma_free(d->c, &d->buf);
	}
	return r;
}
