/* SPDX-License-Identifier: MIT */
/*
 * boot/ctrl/bringup.h - controller bring-up on the host, for any controller behind
 * the ops table (NVMe base spec 3.5.1 "Memory-based controller
 * initialization"): disable and wait for RDY=0, admin queues, enable and wait
 * for RDY=1, identify, number of queues, I/O queue pairs, and the way back
 * (delete queues, CC.SHN, wait for SHST complete). Every wait is bounded by
 * CAP.TO. Errors name the step and decode the NVMe status.
 */
#ifndef GPUOS_BOOT_BRINGUP_H
#define GPUOS_BOOT_BRINGUP_H

#include "ctrl.h"
#include "gpuos/nvme.h"
#include "gpuos/internal/queue.h"

#define GPUOS_ADMIN_DEPTH 32u

struct gpuos_nvme_dev {
	struct gpuos_ctrl *c;
	struct gpuos_ctrl_member *m;  /* the controller's registers (a member of c) */
	uint64_t cap;
	uint32_t vs;
	uint32_t mqes;           /* CAP.MQES + 1: entries per queue at most */
	uint32_t dstrd;
	uint32_t to_ms;          /* CAP.TO in ms */
	uint32_t mdts_bytes;     /* 0 = no limit reported */
	uint32_t lba_bytes;
	uint64_t ns_lbas;
	uint32_t nsid;
	uint32_t nn;
	uint32_t io_queues;      /* granted by Set Features Number of Queues */
	char model[41], serial[21], firmware[9];
	struct gpuos_dma admin_sq, admin_cq, buf;
	struct gpuos_qp admin;
	uint16_t next_cid;
	int enabled;
};

/* Reset, admin queues, enable, identify controller and namespace of
 * member `member` of c (0 for a single controller). */
int gpuos_nvme_enable(struct gpuos_nvme_dev *d, struct gpuos_ctrl *c, uint32_t member, char *err, size_t errlen);

/* Ask for `want` I/O queue pairs; d->io_queues = what was granted (min of both). */
int gpuos_nvme_set_queues(struct gpuos_nvme_dev *d, uint32_t want, char *err, size_t errlen);

/* Create I/O CQ and SQ number qid over the given DMA memory. */
int gpuos_nvme_create_qpair(struct gpuos_nvme_dev *d, uint32_t qid, uint32_t depth, uint64_t sq_iova,
			    uint64_t cq_iova, char *err, size_t errlen);
int gpuos_nvme_delete_qpair(struct gpuos_nvme_dev *d, uint32_t qid, char *err, size_t errlen);

/* CC.SHN normal, wait for SHST complete, free the admin queues. */
int gpuos_nvme_shutdown(struct gpuos_nvme_dev *d, char *err, size_t errlen);

/* One admin command, synchronous; the CQE into *cqe when given. Returns 0,
 * -EIO with the decoded status in err, -ETIMEDOUT. */
int gpuos_nvme_admin(struct gpuos_nvme_dev *d, struct gpuos_nvme_sqe *cmd, struct gpuos_nvme_cqe *cqe,
		     const char *step, char *err, size_t errlen);

/* The doorbell register address of SQ/CQ qid, host mapping and runtime space. */
volatile uint32_t *gpuos_nvme_sq_db(struct gpuos_nvme_dev *d, uint32_t qid);
volatile uint32_t *gpuos_nvme_cq_db(struct gpuos_nvme_dev *d, uint32_t qid);
uint64_t gpuos_nvme_sq_db_rt(struct gpuos_nvme_dev *d, uint32_t qid);
uint64_t gpuos_nvme_cq_db_rt(struct gpuos_nvme_dev *d, uint32_t qid);

#endif /* GPUOS_BOOT_BRINGUP_H */
