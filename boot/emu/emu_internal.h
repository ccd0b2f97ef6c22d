/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_internal.h - private state of the emulated NVMe controller.
 *
 * Threads and who owns what:
 *   controller thread  CC/CSTS handshake, admin SQ/CQ (queue 0), the queue
 *                      table (creates and deletes I/O queues)
 *   worker thread i    the I/O SQs whose CQ it owns (cq->owner == i), their
 *                      SQ heads, the CQ tails and phases, its pending list
 *   any thread         region table (rwlock), stats (atomics), error log (mutex)
 *
 * The queue table is handed between the controller and a worker through
 * emu_sq.state: the controller fills a free entry and publishes it with a
 * release store of Q_LIVE; it asks for it back with Q_DELETING; the worker
 * answers with a release store of Q_FREE once it no longer touches the SQ or
 * its CQ. Everything else a worker reads of the entry is written before the
 * publishing store and read after an acquire load of state.
 *
 * Every load of a register the driver writes (CC, AQA, ASQ, ACQ, doorbells)
 * is an __atomic load: the driver's store comes from another CPU thread or
 * from a GPU over PCIe, and the acquire on a doorbell pairs with the driver's
 * system fence before its doorbell store (gpuos/port.h), so the queue entries
 * it announces are visible once the new tail is.
 */
#ifndef GPUOS_EMU_INTERNAL_H
#define GPUOS_EMU_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "emu.h"

#define EMU_PAGE          4096u  /* CC.MPS = 0 is the only page size (CAP.MPSMIN = MPSMAX = 0) */
#define EMU_PAGE_SHIFT    12u
#define EMU_SQE_BYTES     64u
#define EMU_CQE_BYTES     16u
#define EMU_ELOG_ENTRIES  64u    /* error information log ring; id_ctrl.elpe = 63 */
#define EMU_BATCH         64u    /* SQEs a worker fetches per round, all its queues together */
#define EMU_PEND_MAX      8192u  /* executed commands waiting to post, per worker */
#define EMU_LATE_MAX      64u    /* commands a worker holds back (faults=late), at most */
#define EMU_ADMIN_BATCH   8u     /* admin SQEs per controller round, so CC stays responsive */
#define EMU_REGS_MAX      (64u << 20) /* largest register file we agree to allocate */
#define EMU_STAGE_SLOTS   256u   /* staging allocations in flight per worker */

/* Queue states (emu_sq.state; emu_cq.state is controller-private). */
enum { Q_FREE = 0, Q_LIVE = 1, Q_DELETING = 2 };

/* States of a faults=late entry (emu_late.state, under late_lock). */
enum { LATE_FREE = 0, LATE_HELD = 1, LATE_ABORTED = 2 };

/* Operations a backend serves. */
enum { EMU_OP_NONE = 0, EMU_OP_READ = 1, EMU_OP_WRITE = 2, EMU_OP_FLUSH = 3 };

struct emu_region {
	uint64_t iova;
	uint64_t len;
	uint8_t *ptr;
	int kind;                /* enum gpuos_emu_region_kind */
};

/* One piece of a translated transfer: len bytes at ptr, host or device memory. */
struct emu_seg {
	uint8_t *ptr;
	size_t len;
	int device;
};

/* A growable list of segments; one per worker and one for the controller. */
struct emu_sgl {
	struct emu_seg *seg;
	uint32_t n, cap;
	uint32_t first;          /* first segment of the command being mapped: never merge below it */
};

struct emu_cq {
	/* set by the controller while no SQ uses the CQ */
	uint64_t iova;           /* base, PRP1 of Create I/O CQ (or ACQ) */
	uint32_t size;           /* entries */
	uint32_t owner;          /* worker index (unused for the admin CQ) */
	uint16_t qid;
	uint8_t state;           /* controller-private: Q_FREE or Q_LIVE */
	uint32_t nsq;            /* controller-private: SQs that post here */
	/* owned by the thread that serves the CQ's SQs */
	uint32_t tail;
	uint32_t head;           /* last valid value of the CQ head doorbell */
	uint32_t phase;          /* phase tag of the next entry written */
	int was_full;            /* inside a cq_full_waits episode */
};

struct emu_sq {
	uint32_t state;          /* atomic; see the top of this file */
	uint16_t qid;
	uint16_t cqid;
	uint64_t iova;
	uint32_t size;
	uint32_t owner;          /* atomic (relaxed): every worker reads it */
	struct emu_cq *cq;
	uint32_t head;           /* owner-private: next entry to fetch */
	/* owner-private: bit c set while a command with CID c is fetched and not
	 * yet answered (cid_conflicts); allocated by the controller at the first
	 * create of the queue, cleared at each create; NULL when that failed */
	uint64_t *live;
};

#define EMU_CID_WORDS (65536u / 64u)

/* A completion executed and waiting for its time (performance model) and
 * for room in its CQ. */
struct emu_pend {
	uint64_t due_ns;
	uint64_t ticket;         /* DMA ticket its data waits for; 0 = none */
	struct emu_sq *sq;
	uint32_t dw0;
	uint16_t cid;
	uint16_t status;         /* gpuos form: SCT<<8 | SC | DNR<<14 */
	uint8_t waited;          /* counted in dma_waits already */
	uint8_t dup;             /* an extra copy (faults=dup*): posting it answers nothing */
	uint8_t twice;           /* faults=dupnow: post a copy right behind it */
};

/* A command inside one worker round. */
struct emu_cmd {
	struct gpuos_nvme_sqe sqe;
	struct emu_sq *sq;
	uint64_t fetch_ns;
	uint64_t slba;
	uint64_t off;            /* byte offset in the namespace */
	size_t len;              /* bytes */
	uint32_t seg0, nseg;     /* segments in the worker's sgl */
	int device;              /* a segment is device memory */
	uint8_t *stage;          /* host staging for device segments (pinned when async) */
	int own_stage;           /* stage is a buffer of its own (posix_memalign), not the ring */
	uint64_t ticket;         /* DMA ticket of its data, 0 = none (synchronous or host) */
	int op;                  /* EMU_OP_*; NONE when the command already has its status */
	uint16_t status;
};

/* A request to a backend; off is a byte offset in the image (an array
 * member's offsets are mapped before, see emu_img_off). */
struct emu_bio {
	int op;
	uint64_t off;
	struct iovec *iov;
	int iovcnt;
	size_t len;
	int res;                 /* out: 0 or a negative errno */
};

struct emu_uring;            /* per-worker io_uring state (emu_backend.c) */

struct emu_worker {
	struct gpuos_emu *e;
	uint32_t idx;
	pthread_t th;
	int started;
	uint32_t ready;          /* env.thread_init has run (release; emu_workers_start waits for it) */
	uint32_t rr;             /* first queue to look at next round (fairness) */
	uint64_t rng;
	struct emu_cmd cmd[EMU_BATCH];
	struct emu_sgl sgl;
	struct iovec *iov;
	uint32_t iov_cap;
	struct emu_bio *bio;     /* a command may need one per stripe chunk */
	uint32_t bio_cap;
	uint32_t *bio_cmd;       /* which command each bio serves */
	/* faults=late: commands held back, not yet executed. The controller
	 * thread's Abort looks for a command here while the worker takes and
	 * refills entries, so the table is under late_lock (an Abort that read
	 * an entry's CID unlocked could end the command that refilled it). */
	pthread_mutex_t late_lock;
	int late_lock_ok;        /* late_lock was initialized */
	struct emu_late { uint32_t state; uint64_t due_ns; struct emu_sq *sq; struct gpuos_nvme_sqe sqe; } late[EMU_LATE_MAX];
	struct emu_pend *pend;
	uint32_t npend;
	uint32_t npend_pub;      /* atomic copy of npend, read by the controller's shutdown drain */
	struct emu_uring *ur;
	/* the DMA engine: tickets this worker issued and saw land */
	uint64_t dma_issued;     /* atomic: last ticket marked (unmap waits for it) */
	uint64_t dma_landed;     /* atomic: every ticket up to this one has landed */
	uint64_t dma_failed;     /* highest ticket whose transfer failed (0: none) */
	/* pinned staging, a ring: allocations are freed in order as their tickets land */
	uint8_t *stage;
	size_t stage_len, stage_head, stage_tail;
	struct { uint64_t ticket; size_t start; } stage_q[EMU_STAGE_SLOTS];
	uint32_t stage_q_head, stage_q_n;
};

/* Controller-thread state; only the controller thread touches it. */
struct emu_ctrl {
	uint32_t last_cc;
	int enabled;             /* CC.EN seen 1 and the configuration was valid */
	int ready;               /* CSTS.RDY is 1 */
	int admin_ok;            /* the admin queue is configured (not after enabled=1 start) */
	int shut;                /* a shutdown was processed; nothing is served until reset */
	uint64_t rdy_at_ns;      /* when CSTS.RDY follows CC.EN; 0 = not pending */
	uint32_t nsqa, ncqa;     /* I/O queues granted (counts, not 0's based) */
	int io_queues_made;      /* any I/O queue created since reset (Set Features NQ rule) */
	int admin_pend;          /* a completion waits for room in the admin CQ */
	struct emu_pend admin_cqe;
	struct emu_sgl sgl;
	uint8_t buf[EMU_PAGE];   /* identify and log page data */
};

/* One per image; the members of an array share it (refs). */
struct emu_backend {
	uint32_t refs;           /* members using it; the last destroy closes it */
	int fd;                  /* file, uring: buffered descriptor; -1 otherwise */
	int fd_direct;           /* uring: O_DIRECT descriptor or -1 */
	int read_only;           /* the image could only be opened read-only */
	uint8_t *ram;            /* ram: the image, padded to whole stripe rows */
	size_t ram_len;
	size_t ram_img;          /* ram: the image's bytes that ram holds (the rest is padding) */
	uint8_t *ram_chunk;      /* ram: each chunk's RAM_CHUNK_* state, loaded when first touched */
	uint8_t *ram_huge;       /* ram: 1 for each 2 MiB block advised huge (one madvise a block) */
	int ram_registered;      /* env.host_register took it: a direct DMA source */
	uint64_t bytes;          /* the image's bytes (null: the namespace size) */
	struct gpuos_emu_env env;
};

struct gpuos_emu {
	struct gpuos_emu_opts o;
	struct gpuos_emu_env env;

	uint32_t *regs;          /* the register file; driver-written words via __atomic only */
	size_t regs_len;
	void *regs_alloc;        /* what to free (calloc) when env.alloc_regs is NULL */

	uint64_t cap;
	uint64_t nlba;           /* namespace size in LBAs */
	uint32_t lba_shift;
	uint64_t mdts_bytes;     /* 0 = no limit */
	uint32_t nq;             /* I/O queue pairs offered (opts.queues) */
	uint32_t nworkers;

	struct emu_backend *be;  /* shared by the members of an array */
	uint32_t arr_n, arr_i;   /* array: members, this one's index (1, 0 alone) */
	uint64_t stripe_bytes;   /* array chunk */

	pthread_rwlock_t rlock;  /* region table; held for reading across each DMA */
	struct emu_region *reg;
	uint32_t nreg;

	struct emu_sq *sq;       /* [0] admin, [1..nq] I/O */
	struct emu_cq *cq;
	uint32_t max_live_sq;    /* atomic: highest SQ id ever published, bounds worker scans */

	struct emu_ctrl c;
	pthread_t ctrl_th;
	int ctrl_started;
	struct emu_worker *w;

	/* cross-thread words, __atomic only */
	uint32_t stop;           /* destroy asked every thread to leave */
	uint32_t io_run;         /* workers may fetch new I/O commands */
	uint32_t fatal;          /* CSTS.CFS set by a worker; the controller stops serving */
	uint64_t bw_next_ns;     /* performance model: when the link is free again */
	uint64_t iops_next_ns;   /* performance model: next command slot */
	uint64_t io_fetched;     /* I/O commands fetched (cfs:N) */
	uint32_t cfs_fired;      /* cfs:N happens once; a reset brings the controller back */
	uint32_t hung;           /* faults=hang fired: nothing is served until a reset */
	uint32_t dead;           /* faults=dead fired: RDY never comes back */
	uint64_t io_posted;      /* I/O completions produced (lost_every:N) */
	struct gpuos_emu_stats st;   /* every field updated with __atomic */
	uint64_t host_reads, host_writes, media_errors; /* SMART counters */

	pthread_mutex_t elock;   /* error log */
	struct gpuos_nvme_error_log elog[EMU_ELOG_ENTRIES];
	uint64_t elog_count;     /* entries ever logged; also atomic for SMART readers */
};

/* ---- registers (emu.c) ---- */
static inline uint32_t *emu_reg(struct gpuos_emu *e, uint32_t off)
{
	return e->regs + off / 4u;
}
static inline uint32_t *emu_sq_db(struct gpuos_emu *e, uint32_t qid)
{
	return emu_reg(e, gpuos_nvme_sq_db_offset(qid, e->o.dstrd));
}
static inline uint32_t *emu_cq_db(struct gpuos_emu *e, uint32_t qid)
{
	return emu_reg(e, gpuos_nvme_cq_db_offset(qid, e->o.dstrd));
}
void emu_csts_or(struct gpuos_emu *e, uint32_t bits);
void emu_set_fatal(struct gpuos_emu *e);
size_t emu_regs_len_for(uint32_t queues, uint32_t dstrd);

/* ---- statistics and error log (emu.c) ---- */
static inline void emu_stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
void emu_log_error(struct gpuos_emu *e, uint16_t sqid, uint16_t cid, uint16_t status,
		   uint64_t lba, uint32_t nsid);
/* Count a finished command and log it when it failed. */
void emu_account(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint16_t sqid,
		 uint16_t status, uint64_t lba);

/* ---- admin (emu_admin.c), controller thread only ---- */
uint16_t emu_admin_exec(struct gpuos_emu *e, const struct gpuos_nvme_sqe *c, uint32_t *dw0);
void emu_queues_reset(struct gpuos_emu *e);

/* ---- DMA: regions, PRPs, CQ posting (emu_dma.c) ---- */
void emu_dma_fault(struct gpuos_emu *e, uint64_t iova);
/* Translate [iova, iova+len) inside one region; NULL (and no fault recorded)
 * when no single region holds it. Caller holds e->rlock. */
uint8_t *emu_translate(struct gpuos_emu *e, uint64_t iova, size_t len, int *kind);
/* Append the segments of a PRP1/PRP2 transfer of len bytes to *sgl.
 * Returns 0 or an NVMe status (PRP Offset Invalid, Data Transfer Error with
 * the fault recorded, Internal Error when out of memory). Caller holds e->rlock. */
uint16_t emu_prp_map(struct gpuos_emu *e, struct emu_sgl *sgl, uint64_t prp1, uint64_t prp2,
		     size_t len);
/* Copy between a linear buffer and segments [seg0, seg0+n) (device ones
 * through env.dev_copy). to_host: buf -> segments. Returns 0 or an NVMe status. */
uint16_t emu_sgl_copy(struct gpuos_emu *e, const struct emu_sgl *sgl, uint32_t seg0, uint32_t n,
		      uint8_t *buf, size_t len, int to_host);
void emu_sgl_free(struct emu_sgl *sgl);
/* Post one completion on cq for SQ sq. Returns 0, -EAGAIN when the CQ is
 * full (the host has not consumed enough), -EFAULT when the CQ memory is
 * unmapped (a DMA fault, recorded). Caller holds e->rlock and owns the CQ. */
int emu_cq_post(struct gpuos_emu *e, struct emu_cq *cq, struct emu_sq *sq, uint16_t cid,
		uint16_t status, uint32_t dw0);
/* Fetch the SQE at sq->head into *out. 0, or -EFAULT (fault recorded).
 * Caller holds e->rlock. */
int emu_sq_fetch(struct gpuos_emu *e, struct emu_sq *sq, struct gpuos_nvme_sqe *out);

/* ---- I/O workers (emu_io.c) ---- */
int emu_workers_start(struct gpuos_emu *e, char *err, size_t errlen);
void emu_workers_join(struct gpuos_emu *e);
/* Pending completions across workers (shutdown drain). */
uint32_t emu_workers_pending(struct gpuos_emu *e);
/* Abort (admin) of a command faults=late holds: 1 when it was found and
 * will complete with Command Abort Requested instead of running. */
int emu_late_abort(struct gpuos_emu *e, uint16_t sqid, uint16_t cid);

/* ---- backends (emu_backend.c) ---- */
/* Image offset of byte moff of this member's namespace; *run: bytes from
 * there to the end of its stripe chunk (the image is contiguous that far). */
static inline uint64_t emu_img_off(const struct gpuos_emu *e, uint64_t moff, uint64_t *run)
{
	if (e->arr_n <= 1) {
		*run = UINT64_MAX;
		return moff;
	}
	uint64_t chunk = moff / e->stripe_bytes, in = moff % e->stripe_bytes;
	*run = e->stripe_bytes - in;
	return (chunk * e->arr_n + e->arr_i) * e->stripe_bytes + in;
}
/* Open the image for e (sets e->nlba); members > 0 of an array share member 0's. */
int emu_backend_open(struct gpuos_emu *e, char *err, size_t errlen);
int emu_backend_share(struct gpuos_emu *e, struct emu_backend *be);
void emu_backend_close(struct gpuos_emu *e);
int emu_backend_worker_init(struct gpuos_emu *e, struct emu_worker *w);
void emu_backend_worker_fini(struct gpuos_emu *e, struct emu_worker *w);
/* Serve n requests; each gets res. Called from worker w (or, for a flush at
 * shutdown, from the controller with w == NULL). */
void emu_backend_exec(struct gpuos_emu *e, struct emu_worker *w, struct emu_bio *b, unsigned n);
/* The ram backend's bytes [off, off + len) of the image loaded (by this
 * thread or another): 0, or -errno where the image could not be read. */
int emu_ram_ready(struct emu_backend *b, uint64_t off, uint64_t len);

/* ---- options (emu_opts.c) ---- */
int emu_opts_check(const struct gpuos_emu_opts *o, char *err, size_t errlen);

/* ---- small helpers ---- */
void emu_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void emu_nap_ns(uint64_t ns);
/* How long an idle thread naps after n naps of its long kind: first, twice
 * as long every 256, up to 1 ms. A wake-up costs about 10 us of CPU on the
 * 2-core build machine: a controller idle for minutes beside the tests'
 * other suites must not keep a core busy waking (issue 35). */
static inline uint64_t emu_idle_nap_ns(uint32_t n, uint64_t first)
{
	uint32_t k = n >> 8;
	uint64_t ns = k < 16 ? first << k : 1000000u;

	return ns < 1000000u ? ns : 1000000u;
}
static inline uint64_t emu_rand(uint64_t *s)
{
	/* xorshift64*: fast, and deterministic for a given seed= */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}
static inline double emu_rand01(uint64_t *s)
{
	return (double)(emu_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif /* GPUOS_EMU_INTERNAL_H */
