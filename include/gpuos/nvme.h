/* SPDX-License-Identifier: MIT */
/*
 * gpuos/nvme.h - the parts of the NVM Express Base Specification (2.0) that
 * gpuos uses: controller registers (section 3.1), submission and completion
 * queue entries (4.2, 4.6), admin and NVM command set opcodes (5, 7 of the
 * NVM command set spec), identify data structures (5.17.2), status codes
 * (4.6.1.2) and log pages (5.16.1).
 *
 * Spec field names keep the spec's abbreviations. Sub-word fields are
 * shift/mask constants citing their bit range; no bitfields anywhere.
 */
#ifndef GPUOS_NVME_H
#define GPUOS_NVME_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

/* ---- controller registers, byte offsets into BAR0 (3.1) ------------------- */
#define GPUOS_NVME_REG_CAP   0x00u /* controller capabilities, 64-bit */
#define GPUOS_NVME_REG_VS    0x08u /* version */
#define GPUOS_NVME_REG_INTMS 0x0cu /* interrupt mask set */
#define GPUOS_NVME_REG_INTMC 0x10u /* interrupt mask clear */
#define GPUOS_NVME_REG_CC    0x14u /* controller configuration */
#define GPUOS_NVME_REG_CSTS  0x1cu /* controller status */
#define GPUOS_NVME_REG_NSSR  0x20u /* NVM subsystem reset */
#define GPUOS_NVME_REG_AQA   0x24u /* admin queue attributes */
#define GPUOS_NVME_REG_ASQ   0x28u /* admin SQ base address, 64-bit */
#define GPUOS_NVME_REG_ACQ   0x30u /* admin CQ base address, 64-bit */
#define GPUOS_NVME_REG_DBS   0x1000u /* first doorbell (SQ 0 tail) */
#define GPUOS_NVME_REGS_MIN  0x2000u /* enough for the register file and doorbells */

/* Doorbell of SQ y tail at 0x1000 + (2y) * (4 << CAP.DSTRD),
 * CQ y head at 0x1000 + (2y + 1) * (4 << CAP.DSTRD) (3.1.24, 3.1.25). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_sq_db_offset(uint32_t qid, uint32_t dstrd)
{
	return GPUOS_NVME_REG_DBS + (2u * qid) * (4u << dstrd);
}
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cq_db_offset(uint32_t qid, uint32_t dstrd)
{
	return GPUOS_NVME_REG_DBS + (2u * qid + 1u) * (4u << dstrd);
}

/* CAP (3.1.1) */
#define GPUOS_NVME_CAP_MQES_SHIFT   0   /* bits 15:0, max queue entries, 0's based */
#define GPUOS_NVME_CAP_MQES_MASK    0xffffull
#define GPUOS_NVME_CAP_CQR_SHIFT    16  /* bit 16, contiguous queues required */
#define GPUOS_NVME_CAP_AMS_SHIFT    17  /* bits 18:17 */
#define GPUOS_NVME_CAP_TO_SHIFT     24  /* bits 31:24, timeout in 500 ms units */
#define GPUOS_NVME_CAP_TO_MASK      0xffull
#define GPUOS_NVME_CAP_DSTRD_SHIFT  32  /* bits 35:32, doorbell stride 4 << n */
#define GPUOS_NVME_CAP_DSTRD_MASK   0xfull
#define GPUOS_NVME_CAP_NSSRS_SHIFT  36  /* bit 36 */
#define GPUOS_NVME_CAP_CSS_SHIFT    37  /* bits 44:37, command sets supported */
#define GPUOS_NVME_CAP_CSS_MASK     0xffull
#define GPUOS_NVME_CAP_CSS_NVM      0x01ull
#define GPUOS_NVME_CAP_MPSMIN_SHIFT 48  /* bits 51:48, 2^(12+n) */
#define GPUOS_NVME_CAP_MPSMIN_MASK  0xfull
#define GPUOS_NVME_CAP_MPSMAX_SHIFT 52  /* bits 55:52 */
#define GPUOS_NVME_CAP_MPSMAX_MASK  0xfull

GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_mqes(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_MQES_SHIFT) & GPUOS_NVME_CAP_MQES_MASK); }
GPUOS_INLINE GPUOS_HD int gpuos_nvme_cap_cqr(uint64_t cap) { return (int)((cap >> GPUOS_NVME_CAP_CQR_SHIFT) & 1u); }
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_to(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_TO_SHIFT) & GPUOS_NVME_CAP_TO_MASK); }
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_dstrd(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_DSTRD_SHIFT) & GPUOS_NVME_CAP_DSTRD_MASK); }
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_css(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_CSS_SHIFT) & GPUOS_NVME_CAP_CSS_MASK); }
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_mpsmin(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_MPSMIN_SHIFT) & GPUOS_NVME_CAP_MPSMIN_MASK); }
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_cap_mpsmax(uint64_t cap) { return (uint32_t)((cap >> GPUOS_NVME_CAP_MPSMAX_SHIFT) & GPUOS_NVME_CAP_MPSMAX_MASK); }

/* VS (3.1.2): major 31:16, minor 15:8, tertiary 7:0 */
#define GPUOS_NVME_VS(mjr, mnr, ter) (((uint32_t)(mjr) << 16) | ((uint32_t)(mnr) << 8) | (uint32_t)(ter))

/* CC (3.1.5) */
#define GPUOS_NVME_CC_EN            (1u << 0)     /* bit 0 */
#define GPUOS_NVME_CC_CSS_SHIFT     4             /* bits 6:4 */
#define GPUOS_NVME_CC_CSS_MASK      (0x7u << 4)
#define GPUOS_NVME_CC_CSS_NVM       (0x0u << 4)
#define GPUOS_NVME_CC_MPS_SHIFT     7             /* bits 10:7, 2^(12+n) */
#define GPUOS_NVME_CC_MPS_MASK      (0xfu << 7)
#define GPUOS_NVME_CC_AMS_SHIFT     11            /* bits 13:11 */
#define GPUOS_NVME_CC_AMS_MASK      (0x7u << 11)
#define GPUOS_NVME_CC_SHN_SHIFT     14            /* bits 15:14 */
#define GPUOS_NVME_CC_SHN_MASK      (0x3u << 14)
#define GPUOS_NVME_CC_SHN_NONE      (0x0u << 14)
#define GPUOS_NVME_CC_SHN_NORMAL    (0x1u << 14)
#define GPUOS_NVME_CC_SHN_ABRUPT    (0x2u << 14)
#define GPUOS_NVME_CC_IOSQES_SHIFT  16            /* bits 19:16, 2^n bytes */
#define GPUOS_NVME_CC_IOSQES_MASK   (0xfu << 16)
#define GPUOS_NVME_CC_IOCQES_SHIFT  20            /* bits 23:20, 2^n bytes */
#define GPUOS_NVME_CC_IOCQES_MASK   (0xfu << 20)

/* CSTS (3.1.6) */
#define GPUOS_NVME_CSTS_RDY         (1u << 0)     /* bit 0 */
#define GPUOS_NVME_CSTS_CFS         (1u << 1)     /* bit 1, controller fatal status */
#define GPUOS_NVME_CSTS_SHST_SHIFT  2             /* bits 3:2 */
#define GPUOS_NVME_CSTS_SHST_MASK   (0x3u << 2)
#define GPUOS_NVME_CSTS_SHST_NORMAL   (0x0u << 2)
#define GPUOS_NVME_CSTS_SHST_OCCURRING (0x1u << 2)
#define GPUOS_NVME_CSTS_SHST_COMPLETE (0x2u << 2)
#define GPUOS_NVME_CSTS_NSSRO       (1u << 4)     /* bit 4 */
#define GPUOS_NVME_CSTS_PP          (1u << 5)     /* bit 5 */

/* AQA (3.1.8): sizes are 0's based */
#define GPUOS_NVME_AQA_ASQS_SHIFT   0             /* bits 11:0 */
#define GPUOS_NVME_AQA_ASQS_MASK    0xfffu
#define GPUOS_NVME_AQA_ACQS_SHIFT   16            /* bits 27:16 */
#define GPUOS_NVME_AQA_ACQS_MASK    (0xfffu << 16)
#define GPUOS_NVME_ADMIN_QUEUE_MAX  4096u

/* ---- queue entries (4.2, 4.6) ------------------------------------------ */

#define GPUOS_NVME_PAGE_SIZE 4096u   /* gpuos always runs with CC.MPS = 0 */
#define GPUOS_NVME_SQES_LOG2 6u
#define GPUOS_NVME_CQES_LOG2 4u

struct gpuos_nvme_sqe {
	uint8_t  opc;        /* 0x00 opcode */
	uint8_t  fuse_psdt;  /* 0x01 bits 1:0 FUSE, bits 7:6 PSDT (0 = PRPs) */
	uint16_t cid;        /* 0x02 command identifier */
	uint32_t nsid;       /* 0x04 */
	uint32_t cdw2;       /* 0x08 */
	uint32_t cdw3;       /* 0x0c */
	uint64_t mptr;       /* 0x10 metadata pointer */
	uint64_t prp1;       /* 0x18 data pointer, PRP entry 1 */
	uint64_t prp2;       /* 0x20 PRP entry 2 or PRP list pointer */
	uint32_t cdw10;      /* 0x28 */
	uint32_t cdw11;      /* 0x2c */
	uint32_t cdw12;      /* 0x30 */
	uint32_t cdw13;      /* 0x34 */
	uint32_t cdw14;      /* 0x38 */
	uint32_t cdw15;      /* 0x3c */
};
static_assert(sizeof(struct gpuos_nvme_sqe) == 64, "SQE size");
static_assert(offsetof(struct gpuos_nvme_sqe, cid) == 2, "SQE cid");
static_assert(offsetof(struct gpuos_nvme_sqe, nsid) == 4, "SQE nsid");
static_assert(offsetof(struct gpuos_nvme_sqe, prp1) == 24, "SQE prp1");
static_assert(offsetof(struct gpuos_nvme_sqe, prp2) == 32, "SQE prp2");
static_assert(offsetof(struct gpuos_nvme_sqe, cdw10) == 40, "SQE cdw10");
static_assert(offsetof(struct gpuos_nvme_sqe, cdw15) == 60, "SQE cdw15");

struct gpuos_nvme_cqe {
	uint32_t dw0;        /* 0x00 command specific */
	uint32_t dw1;        /* 0x04 command specific / reserved */
	uint16_t sqhd;       /* 0x08 SQ head pointer */
	uint16_t sqid;       /* 0x0a SQ identifier */
	uint16_t cid;        /* 0x0c command identifier */
	uint16_t status;     /* 0x0e bit 0 phase tag, bits 15:1 status field */
};
static_assert(sizeof(struct gpuos_nvme_cqe) == 16, "CQE size");
static_assert(offsetof(struct gpuos_nvme_cqe, sqhd) == 8, "CQE sqhd");
static_assert(offsetof(struct gpuos_nvme_cqe, cid) == 12, "CQE cid");
static_assert(offsetof(struct gpuos_nvme_cqe, status) == 14, "CQE status");

/* CQE DW3 bits 31:16 as the 16-bit "status" word above:
 * bit 0 P, bits 8:1 SC, bits 11:9 SCT, bits 13:12 CRD, bit 14 M, bit 15 DNR. */
#define GPUOS_NVME_CQE_P            0x1u
#define GPUOS_NVME_STATUS_SC_SHIFT  1
#define GPUOS_NVME_STATUS_SC_MASK   (0xffu << 1)
#define GPUOS_NVME_STATUS_SCT_SHIFT 9
#define GPUOS_NVME_STATUS_SCT_MASK  (0x7u << 9)
#define GPUOS_NVME_STATUS_M         (1u << 14)
#define GPUOS_NVME_STATUS_DNR       (1u << 15)

/* An NVMe status as gpuos passes it around: the CQE status word without the
 * phase bit, i.e. (DNR << 14) | (M << 13) | (SCT << 8) | SC; 0 = success.
 * Spec statuses read as SCT<<8|SC, e.g. 0x080 LBA out of range, 0x281
 * unrecovered read error, 0x4002 (DNR) as QEMU reports MDTS violations. */
GPUOS_INLINE GPUOS_HD uint16_t gpuos_nvme_status_of(uint16_t cqe_status) { return (uint16_t)(cqe_status >> 1); }
GPUOS_INLINE GPUOS_HD uint16_t gpuos_nvme_status_make(uint8_t sct, uint8_t sc, int dnr)
{
	return (uint16_t)(((uint16_t)sct << 8) | sc | (dnr ? 0x4000u : 0u));
}
GPUOS_INLINE GPUOS_HD uint8_t gpuos_nvme_status_sc(uint16_t st) { return (uint8_t)(st & 0xffu); }
GPUOS_INLINE GPUOS_HD uint8_t gpuos_nvme_status_sct(uint16_t st) { return (uint8_t)((st >> 8) & 0x7u); }
GPUOS_INLINE GPUOS_HD int gpuos_nvme_status_dnr(uint16_t st) { return (st >> 14) & 1; }

/* Status code types (4.6.1.2.1) */
#define GPUOS_NVME_SCT_GENERIC      0x0
#define GPUOS_NVME_SCT_CMD_SPECIFIC 0x1
#define GPUOS_NVME_SCT_MEDIA        0x2
#define GPUOS_NVME_SCT_PATH         0x3
#define GPUOS_NVME_SCT_VENDOR       0x7

/* Generic command status (SCT 0) */
#define GPUOS_NVME_SC_SUCCESS              0x00
#define GPUOS_NVME_SC_INVALID_OPCODE       0x01
#define GPUOS_NVME_SC_INVALID_FIELD        0x02
#define GPUOS_NVME_SC_CID_CONFLICT         0x03
#define GPUOS_NVME_SC_DATA_XFER_ERROR      0x04
#define GPUOS_NVME_SC_POWER_LOSS_ABORT     0x05
#define GPUOS_NVME_SC_INTERNAL             0x06
#define GPUOS_NVME_SC_ABORT_REQ            0x07
#define GPUOS_NVME_SC_ABORT_SQ_DELETED     0x08
#define GPUOS_NVME_SC_INVALID_NS           0x0b
#define GPUOS_NVME_SC_CMD_SEQ_ERROR        0x0c
#define GPUOS_NVME_SC_INVALID_PRP_OFFSET   0x13
#define GPUOS_NVME_SC_LBA_RANGE            0x80
#define GPUOS_NVME_SC_CAP_EXCEEDED         0x81
#define GPUOS_NVME_SC_NS_NOT_READY         0x82

/* Command specific status (SCT 1) */
#define GPUOS_NVME_SC_CQ_INVALID           0x00
#define GPUOS_NVME_SC_QID_INVALID          0x01
#define GPUOS_NVME_SC_QUEUE_SIZE           0x02
#define GPUOS_NVME_SC_INVALID_LOG_PAGE     0x09
#define GPUOS_NVME_SC_INVALID_QUEUE_DELETION 0x0c
#define GPUOS_NVME_SC_FEATURE_NOT_SAVEABLE 0x0d
#define GPUOS_NVME_SC_INVALID_INT_VECTOR   0x08

/* Media and data integrity errors (SCT 2) */
#define GPUOS_NVME_SC_WRITE_FAULT          0x80
#define GPUOS_NVME_SC_UNRECOVERED_READ     0x81

/* A readable name for a status as above ("LBA Out of Range"); never NULL. */
GPUOS_HD const char *gpuos_nvme_status_name(uint16_t st);

/* ---- opcodes ------------------------------------------------------------- */
/* Admin command set (5) */
#define GPUOS_NVME_ADMIN_DELETE_SQ     0x00
#define GPUOS_NVME_ADMIN_CREATE_SQ     0x01
#define GPUOS_NVME_ADMIN_GET_LOG_PAGE  0x02
#define GPUOS_NVME_ADMIN_DELETE_CQ     0x04
#define GPUOS_NVME_ADMIN_CREATE_CQ     0x05
#define GPUOS_NVME_ADMIN_IDENTIFY      0x06
#define GPUOS_NVME_ADMIN_ABORT         0x08
#define GPUOS_NVME_ADMIN_SET_FEATURES  0x09
#define GPUOS_NVME_ADMIN_GET_FEATURES  0x0a

/* NVM command set I/O (NVM command set spec 3) */
#define GPUOS_NVME_CMD_FLUSH 0x00
#define GPUOS_NVME_CMD_WRITE 0x01
#define GPUOS_NVME_CMD_READ  0x02

/* Create I/O CQ: CDW10 QSIZE 31:16 (0's based), QID 15:0; CDW11 IV 31:16, IEN bit 1, PC bit 0 */
#define GPUOS_NVME_CREATE_Q_PC   (1u << 0)
#define GPUOS_NVME_CREATE_CQ_IEN (1u << 1)
/* Create I/O SQ: CDW11 CQID 31:16, QPRIO 2:1, PC bit 0 */

/* Identify CNS values (CDW10 bits 7:0) */
#define GPUOS_NVME_CNS_NAMESPACE       0x00
#define GPUOS_NVME_CNS_CONTROLLER      0x01
#define GPUOS_NVME_CNS_ACTIVE_NS_LIST  0x02

/* Feature identifiers (5.27.1) */
#define GPUOS_NVME_FEAT_NUM_QUEUES     0x07  /* dw11/dw0: NCQR 31:16, NSQR 15:0, 0's based */

/* Log page identifiers (5.16.1) */
#define GPUOS_NVME_LOG_ERROR           0x01
#define GPUOS_NVME_LOG_SMART           0x02
/* Get Log Page CDW10: NUMDL 31:16, LID 7:0 (NUMD 0's based in dwords; NUMDU in CDW11 15:0) */

/* ---- building commands (PRPs 4.1.1; Read: NVM command set spec 3.2.4) ---- */
/* As liburing's io_uring_prep_*: they fill an SQ entry the caller owns and
 * has not published yet; the caller fences and rings the doorbell. */

/*
 * The PRPs of a transfer of `bytes` at PRP1 `prp1`: PRP1 may start inside a
 * page, every later entry is a whole page. When the transfer fits two
 * pages, *prp2 is the entry (0 when it ends in PRP1's page, else the next
 * page) and the call returns 0. Else it returns the number of entries of
 * the PRP list that PRP2 must point to (gpuos_nvme_prp_list fills one), and
 * *prp2 is 0 until the caller sets it to the list.
 */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_nvme_prp2(uint64_t prp1, uint64_t bytes, uint64_t *prp2)
{
	uint64_t first = GPUOS_NVME_PAGE_SIZE - (prp1 & (GPUOS_NVME_PAGE_SIZE - 1u));

	*prp2 = 0;
	if (bytes > first + GPUOS_NVME_PAGE_SIZE)
		return (uint32_t)GPUOS_DIV_ROUND_UP(bytes - first, GPUOS_NVME_PAGE_SIZE);
	if (bytes > first)
		*prp2 = prp1 + first;
	return 0;
}

/* The n entries of the PRP list of a transfer at prp1: the pages after
 * PRP1's. No chaining: n <= 512 fits one list page. */
GPUOS_INLINE GPUOS_HD void gpuos_nvme_prp_list(uint64_t *list, uint64_t prp1, uint32_t n)
{
	uint64_t page2 = prp1 + (GPUOS_NVME_PAGE_SIZE - (prp1 & (GPUOS_NVME_PAGE_SIZE - 1u)));
	uint32_t k;

	for (k = 0; k < n; k++)
		list[k] = page2 + (uint64_t)k * GPUOS_NVME_PAGE_SIZE;
}

/* A Read of nlb (>= 1) logical blocks from lba of namespace nsid into the
 * buffer of prp1 and prp2; no metadata, no fused operation. All 16 dwords
 * are written: the entry still holds an older command. */
GPUOS_INLINE GPUOS_HD void gpuos_nvme_prep_read(struct gpuos_nvme_sqe *e, uint16_t cid, uint32_t nsid,
						uint64_t lba, uint32_t nlb, uint64_t prp1, uint64_t prp2)
{
	e->opc = GPUOS_NVME_CMD_READ;
	e->fuse_psdt = 0;      /* PSDT 0: PRPs */
	e->cid = cid;
	e->nsid = nsid;
	e->cdw2 = 0;
	e->cdw3 = 0;
	e->mptr = 0;
	e->prp1 = prp1;
	e->prp2 = prp2;
	e->cdw10 = (uint32_t)lba;         /* SLBA bits 31:0 */
	e->cdw11 = (uint32_t)(lba >> 32); /* SLBA bits 63:32 */
	e->cdw12 = nlb - 1u;              /* NLB bits 15:0, 0's based; no flags */
	e->cdw13 = 0;
	e->cdw14 = 0;
	e->cdw15 = 0;
}

/* ---- identify data (5.17.2) -------------------------------------------- */
struct gpuos_nvme_id_ctrl {
	uint16_t vid;          /* 0x000 */
	uint16_t ssvid;        /* 0x002 */
	char     sn[20];       /* 0x004 serial number, ASCII, space padded */
	char     mn[40];       /* 0x018 model number */
	char     fr[8];        /* 0x040 firmware revision */
	uint8_t  rab;          /* 0x048 */
	uint8_t  ieee[3];      /* 0x049 */
	uint8_t  cmic;         /* 0x04c */
	uint8_t  mdts;         /* 0x04d max data transfer, 2^n * CAP.MPSMIN pages; 0 = none */
	uint16_t cntlid;       /* 0x04e */
	uint32_t ver;          /* 0x050 */
	uint8_t  rsvd84[172];  /* 0x054 .. 0x0ff */
	uint16_t oacs;         /* 0x100 */
	uint8_t  acl;          /* 0x102 */
	uint8_t  aerl;         /* 0x103 */
	uint8_t  frmw;         /* 0x104 */
	uint8_t  lpa;          /* 0x105 */
	uint8_t  elpe;         /* 0x106 error log page entries, 0's based */
	uint8_t  npss;         /* 0x107 */
	uint8_t  rsvd264[248]; /* 0x108 .. 0x1ff */
	uint8_t  sqes;         /* 0x200 bits 3:0 required, 7:4 max (log2) */
	uint8_t  cqes;         /* 0x201 */
	uint16_t maxcmd;       /* 0x202 */
	uint32_t nn;           /* 0x204 number of namespaces */
	uint16_t oncs;         /* 0x208 */
	uint16_t fuses;        /* 0x20a */
	uint8_t  fna;          /* 0x20c */
	uint8_t  vwc;          /* 0x20d */
	uint16_t awun;         /* 0x20e */
	uint16_t awupf;        /* 0x210 */
	uint8_t  icsvscc;      /* 0x212 */
	uint8_t  nwpc;         /* 0x213 */
	uint16_t acwu;         /* 0x214 */
	uint16_t rsvd534;      /* 0x216 */
	uint32_t sgls;         /* 0x218 */
	uint8_t  rsvd540[3556]; /* 0x21c .. 0xfff */
};
static_assert(sizeof(struct gpuos_nvme_id_ctrl) == 4096, "identify controller size");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, mn) == 0x18, "id_ctrl mn");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, fr) == 0x40, "id_ctrl fr");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, mdts) == 0x4d, "id_ctrl mdts");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, ver) == 0x50, "id_ctrl ver");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, elpe) == 0x106, "id_ctrl elpe");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, sqes) == 0x200, "id_ctrl sqes");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, nn) == 0x204, "id_ctrl nn");
static_assert(offsetof(struct gpuos_nvme_id_ctrl, sgls) == 0x218, "id_ctrl sgls");

struct gpuos_nvme_lbaf {
	uint16_t ms;           /* 0x0 metadata size */
	uint8_t  lbads;        /* 0x2 LBA data size, 2^n */
	uint8_t  rp;           /* 0x3 bits 1:0 relative performance */
};
static_assert(sizeof(struct gpuos_nvme_lbaf) == 4, "LBA format size");

struct gpuos_nvme_id_ns {
	uint64_t nsze;         /* 0x000 namespace size in LBAs */
	uint64_t ncap;         /* 0x008 */
	uint64_t nuse;         /* 0x010 */
	uint8_t  nsfeat;       /* 0x018 */
	uint8_t  nlbaf;        /* 0x019 number of LBA formats, 0's based */
	uint8_t  flbas;        /* 0x01a bits 3:0 format in use (low bits) */
	uint8_t  mc;           /* 0x01b */
	uint8_t  dpc;          /* 0x01c */
	uint8_t  dps;          /* 0x01d */
	uint8_t  nmic;         /* 0x01e */
	uint8_t  rescap;       /* 0x01f */
	uint8_t  rsvd32[96];   /* 0x020 .. 0x07f */
	struct gpuos_nvme_lbaf lbaf[64]; /* 0x080 */
	uint8_t  rsvd384[3712]; /* 0x180 .. 0xfff */
};
static_assert(sizeof(struct gpuos_nvme_id_ns) == 4096, "identify namespace size");
static_assert(offsetof(struct gpuos_nvme_id_ns, nlbaf) == 0x19, "id_ns nlbaf");
static_assert(offsetof(struct gpuos_nvme_id_ns, flbas) == 0x1a, "id_ns flbas");
static_assert(offsetof(struct gpuos_nvme_id_ns, lbaf) == 0x80, "id_ns lbaf");

#define GPUOS_NVME_FLBAS_FMT_MASK 0xfu  /* bits 3:0 */

/* Error information log entry (5.16.1.2), 64 bytes */
struct gpuos_nvme_error_log {
	uint64_t error_count;  /* 0x00 */
	uint16_t sqid;         /* 0x08 */
	uint16_t cid;          /* 0x0a */
	uint16_t status;       /* 0x0c bit 0 phase, 15:1 status field */
	uint16_t parm_err_loc; /* 0x0e */
	uint64_t lba;          /* 0x10 */
	uint32_t nsid;         /* 0x18 */
	uint8_t  vs;           /* 0x1c */
	uint8_t  trtype;       /* 0x1d */
	uint8_t  rsvd30[2];    /* 0x1e */
	uint64_t csi;          /* 0x20 command specific information */
	uint16_t ttsi;         /* 0x28 */
	uint8_t  rsvd42[22];   /* 0x2a .. 0x3f */
};
static_assert(sizeof(struct gpuos_nvme_error_log) == 64, "error log entry size");
static_assert(offsetof(struct gpuos_nvme_error_log, lba) == 0x10, "error log lba");

/* SMART / health information log (5.16.1.3), 512 bytes; 128-bit counters as two u64 */
struct gpuos_nvme_smart_log {
	uint8_t  critical_warning;    /* 0x00 */
	uint16_t composite_temp;      /* 0x01 kelvin, unaligned */
	uint8_t  avail_spare;         /* 0x03 */
	uint8_t  avail_spare_thresh;  /* 0x04 */
	uint8_t  percent_used;        /* 0x05 */
	uint8_t  endurance_crit;      /* 0x06 */
	uint8_t  rsvd7[25];           /* 0x07 .. 0x1f */
	uint64_t data_units_read[2];  /* 0x20 in 1000 * 512 bytes */
	uint64_t data_units_written[2]; /* 0x30 */
	uint64_t host_reads[2];       /* 0x40 read commands */
	uint64_t host_writes[2];      /* 0x50 */
	uint64_t ctrl_busy_time[2];   /* 0x60 */
	uint64_t power_cycles[2];     /* 0x70 */
	uint64_t power_on_hours[2];   /* 0x80 */
	uint64_t unsafe_shutdowns[2]; /* 0x90 */
	uint64_t media_errors[2];     /* 0xa0 */
	uint64_t num_err_log_entries[2]; /* 0xb0 */
	uint8_t  rsvd192[320];        /* 0xc0 .. 0x1ff */
} __attribute__((packed));
static_assert(sizeof(struct gpuos_nvme_smart_log) == 512, "SMART log size");
static_assert(offsetof(struct gpuos_nvme_smart_log, data_units_read) == 0x20, "SMART data units read");
static_assert(offsetof(struct gpuos_nvme_smart_log, media_errors) == 0xa0, "SMART media errors");

/* Readable names, for messages; never NULL. */
GPUOS_HD const char *gpuos_nvme_admin_opc_name(uint8_t opc);

GPUOS_EXTERN_C_END

#endif /* GPUOS_NVME_H */
