/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/nvme_testdrv.h - a small raw NVMe driver for testing the
 * emulated controller from a CPU thread: host memory in one arena mapped at a
 * synthetic IOVA, queues, SQEs, doorbells, CQE polling with timeouts. It
 * knows the spec (gpuos/nvme.h) and the emulator's public API, nothing else.
 *
 * Register stores are __atomic_store_n(RELEASE): on x86 the same single mov
 * as a volatile MMIO store (gpuos_mmio_write32 after gpuos_fence_sys), but
 * ThreadSanitizer sees that it pairs with the emulator's acquire loads.
 *
 * The Makefile's unit rule builds each tests/unit/test_*.c alone against
 * build/libgpuos.a, so test_emu.c includes nvme_testdrv.c rather than
 * linking it; the relative include of emu.h works with only -Iinclude.
 */
#ifndef GPUOS_NVME_TESTDRV_H
#define GPUOS_NVME_TESTDRV_H

#include <stddef.h>
#include <stdint.h>

#include "../../boot/emu/emu.h"

#define TD_ARENA_IOVA  0x10000000ull
#define TD_ARENA_BYTES (16u << 20)
#define TD_MAXQ        16u
/* a hang guard, not a bound: at load 30-50 a command waited past 2 s (a
 * fresh clone's make test, 2026-12-02) */
#define TD_TIMEOUT_MS  30000u

struct td_q {
	uint16_t qid;
	uint32_t sq_size, cq_size;
	struct gpuos_nvme_sqe *sq;
	uint64_t sq_iova;
	struct gpuos_nvme_cqe *cq;
	uint64_t cq_iova;
	uint32_t sq_tail, cq_head, phase;
	uint16_t next_cid;
};

struct td {
	struct gpuos_emu *e;
	struct gpuos_emu_opts o;
	volatile uint32_t *regs;
	uint64_t cap;
	uint32_t dstrd;
	uint8_t *arena;
	size_t brk;
	struct td_q aq;
	struct td_q q[TD_MAXQ + 1];
	char err[256];
};

/* Parse args, create the controller (env may be NULL), map the arena.
 * 0 or a negative errno (message in d->err). */
int td_open(struct td *d, const char *args, const struct gpuos_emu_env *env);
void td_close(struct td *d);
/* The same for a controller made elsewhere (a member of an array): maps the
 * arena; td_close destroys e. */
int td_attach(struct td *d, struct gpuos_emu *e, const struct gpuos_emu_opts *o);

/* Arena memory, zeroed, aligned; *iova gets its bus address. */
void *td_alloc(struct td *d, size_t len, size_t align, uint64_t *iova);
uint64_t td_iova(const struct td *d, const void *p);

uint32_t td_rd32(struct td *d, uint32_t off);
uint64_t td_rd64(struct td *d, uint32_t off);
void td_wr32(struct td *d, uint32_t off, uint32_t v);
void td_wr64(struct td *d, uint32_t off, uint64_t v);
/* Wait until (CSTS & mask) == val: 0 or -ETIMEDOUT. */
int td_wait_csts(struct td *d, uint32_t mask, uint32_t val, uint32_t timeout_ms);

/* Admin queues of `entries`, CC.EN = 1, wait for RDY: 0, -ETIMEDOUT, or
 * -EIO when the controller reports CFS. */
int td_enable(struct td *d, uint32_t entries);
int td_disable(struct td *d);

/* Queue primitives. */
uint16_t td_cid(struct td_q *q);
void td_sq_push(struct td *d, struct td_q *q, const struct gpuos_nvme_sqe *sqe);
void td_sq_ring(struct td *d, struct td_q *q);
/* Take the next CQE (phase matches): 0 or -ETIMEDOUT. ring: also move the
 * CQ head doorbell. */
int td_cq_poll(struct td *d, struct td_q *q, struct gpuos_nvme_cqe *out, uint32_t timeout_ms, int ring);
void td_cq_ring(struct td *d, struct td_q *q);

/* Submit one command on q, wait for its CQE: the status (gpuos form, >= 0),
 * -ETIMEDOUT, or -EPROTO when the CQE's cid or sqid is not the command's.
 * cqe may be NULL. */
int td_cmd(struct td *d, struct td_q *q, struct gpuos_nvme_sqe *sqe, struct gpuos_nvme_cqe *cqe);
int td_admin(struct td *d, struct gpuos_nvme_sqe *sqe, struct gpuos_nvme_cqe *cqe);

int td_identify(struct td *d, uint8_t cns, uint32_t nsid, void *buf4k);
int td_set_nq(struct td *d, uint32_t nsq, uint32_t ncq, uint32_t *dw0);
int td_create_cq(struct td *d, uint16_t qid, uint32_t size);
int td_create_sq(struct td *d, uint16_t qid, uint32_t size, uint16_t cqid);
/* CQ qid and SQ qid on it; 0 or the first failing status (or -ETIMEDOUT). */
int td_create_pair(struct td *d, uint16_t qid, uint32_t sq_size, uint32_t cq_size);
int td_delete_sq(struct td *d, uint16_t qid);
int td_delete_cq(struct td *d, uint16_t qid);
/* Enable with 32-entry admin queues and create pairs 1..n of the given depth. */
int td_bringup(struct td *d, uint32_t npairs, uint32_t depth);

/* PRP1/PRP2 for len bytes at arena address iova, with a PRP list (chained
 * when it outgrows a page) built in the arena when needed. */
void td_prps(struct td *d, uint64_t iova, size_t len, uint64_t *prp1, uint64_t *prp2);
/* An NVM command: read/write/flush. */
void td_rw_sqe(struct gpuos_nvme_sqe *s, uint8_t opc, uint32_t nsid, uint64_t slba,
	       uint32_t nlb, uint64_t prp1, uint64_t prp2);
/* Read or write nlb LBAs at slba to/from arena buffer buf on queue qid. */
int td_rw(struct td *d, uint16_t qid, uint8_t opc, uint64_t slba, uint32_t nlb, void *buf);

/* Fill / check a deterministic pattern for LBA-tagged data. */
void td_pattern(void *buf, size_t len, uint64_t seed);
int td_pattern_ok(const void *buf, size_t len, uint64_t seed);

#endif /* GPUOS_NVME_TESTDRV_H */
