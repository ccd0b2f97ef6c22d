/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu.h - the emulated NVMe controller.
 *
 * A device, not a mock: a register file at NVMe offsets (CAP, VS, CC, CSTS,
 * AQA, ASQ, ACQ, doorbells at 0x1000 with CAP.DSTRD stride) in memory the
 * driver writes with ordinary MMIO stores (a CPU thread, or a GPU with
 * st.mmio.relaxed.sys); a controller thread that follows CC (enable/reset
 * handshake, shutdown) and serves the admin queue; worker threads that poll
 * the I/O SQ doorbells and serve read/write/flush. Every address in a queue
 * or PRP is an IOVA translated through the table of regions mapped with
 * gpuos_emu_map(); anything else is a DMA fault (status 0x004 Data Transfer
 * Error plus a recorded event), never a crash.
 *
 * It knows only the NVMe spec (gpuos/nvme.h); nothing of the runtime.
 *
 * What a driver may rely on beyond the spec:
 * - CC is polled, not trapped. After CC.EN 1 -> 0 wait for CSTS.RDY = 0 (and,
 *   when CSTS.CFS was set, for CFS = 0) before setting EN again, as the spec
 *   asks; a CC rewritten while RDY is still 0 is taken as a fresh enable.
 * - Enabling with a bad configuration (CC.MPS/CSS/AMS, AQA sizes < 2, ASQ or
 *   ACQ unaligned or outside every host region) sets CSTS.CFS, as QEMU does.
 * - Statuses, in gpuos form SCT<<8 | SC with DNR = 0x4000, as QEMU reports them:
 *   0x4001 invalid opcode; 0x4002 invalid field (also MDTS exceeded, SGL or
 *   fused commands, CC.IOSQES/IOCQES not 6/4 at queue creation, queues in
 *   device memory); 0x0004 DMA fault (an address outside every region);
 *   0x400b invalid NSID; 0x400c Set Features Number of Queues after queues
 *   exist; 0x4013 PRP offset invalid; 0x4020 write to an image opened
 *   read-only; 0x4080 LBA out of range; 0x0281 a failed backend read (also
 *   the default injected status); 0x0280 a failed backend write or flush;
 *   admin 0x4100 CQ invalid, 0x4101 QID invalid, 0x4102 queue size, 0x4108
 *   interrupt vector, 0x4109 log page, 0x410c queue deletion, 0x410d not
 *   saveable.
 * - Queues must sit in HOST regions (CPU threads poll them); data and PRP
 *   lists may be in DEVICE regions. Queue entries are translated at every
 *   access: memory unmapped under a live queue is a DMA fault and sets CFS.
 * - gpuos_emu_unmap() returns once no transfer in flight uses the region.
 * - cfs:N happens once: the N+1st fetched I/O command is not executed and
 *   CSTS.CFS is set; a controller reset clears it and service resumes.
 * - Deleting an SQ posts what already completed if its CQ has room and drops
 *   the rest; a controller reset drops everything in flight.
 * - Abort (admin 0x08) ends a command faults=late holds; for any other it
 *   answers "not aborted" (DW0 bit 0 = 1).
 * - A command's PRPs (and PRP list) are read, and its data moved, in the round
 *   that fetched it; the completion follows when the performance model says.
 *   A command faults=late holds reads its PRP list and moves its data when it
 *   runs, as a real SSD may at any time before its completion: a driver that
 *   reuses the list page of a command still out reads wrong bytes then.
 */
#ifndef GPUOS_EMU_H
#define GPUOS_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "gpuos/nvme.h"

enum gpuos_emu_backend {
	GPUOS_EMU_RAM = 0,   /* image read into memory at start; writes stay in memory */
	GPUOS_EMU_FILE = 1,  /* pread/pwrite on the image */
	GPUOS_EMU_URING = 2, /* io_uring, O_DIRECT where the file system allows */
	GPUOS_EMU_NULL = 3   /* no data: reads return zeros, writes vanish */
};

#define GPUOS_EMU_MAX_LBA_FAULTS 16
#define GPUOS_EMU_MAX_REGIONS    1024   /* gpuos_emu_map() entries */

/* Options, from "emu:PATH[,k=v...]" (see gpuos_emu_parse). */
struct gpuos_emu_opts {
	size_t   size;           /* sizeof(struct gpuos_emu_opts), for growth */
	char     path[4096];     /* image; empty for backend=null */
	enum gpuos_emu_backend backend;   /* backend=ram|file|uring|null, default ram */
	uint64_t null_bytes;     /* size of a null namespace (size=BYTES), default 1 TiB */
	uint32_t lba_bytes;      /* lba=512|4096, default 512 */
	uint32_t mdts_kib;       /* mdts=KiB, a power of two times 4 KiB; 0 = no limit; default 512 */
	uint32_t queues;         /* queues=N: I/O queue pairs granted at most, default 16 */
	uint32_t depth;          /* depth=N: MQES+1, entries per queue at most, default 1024 */
	uint32_t dstrd;          /* dstrd=N: CAP.DSTRD, default 0 */
	uint32_t workers;        /* workers=N: I/O worker threads, default min(queues, 2) */
	uint32_t to;             /* to=N: CAP.TO in 500 ms units, default 20 */
	uint32_t rdy_ms;         /* rdy_ms=N: delay before CSTS.RDY follows CC.EN, default 1 */
	int      never_ready;    /* never_ready=1: CSTS.RDY never becomes 1 (a broken controller) */
	int      start_enabled;  /* enabled=1: comes up with CC.EN=1 and CSTS.RDY=1, as after firmware */
	uint32_t latency_us;     /* latency_us=N: each command completes no earlier than N us after fetch */
	double   gbps;           /* gbps=X: transfer rate limit in GB/s (1e9 bytes), 0 = none */
	uint32_t iops;           /* iops=N: command rate limit, 0 = none */
	int      ooo;            /* ooo=1: post completions out of fetch order */
	/* faults=ITEM[+ITEM...] with ITEM one of
	 *   lba:START[-END][:STATUS]  commands touching these LBAs fail with STATUS
	 *                             (hex SCT<<8|SC, default 0x281 unrecovered read error)
	 *   rate:P[:STATUS]           each I/O command fails with probability P
	 *   lost:P                    each I/O completion is silently dropped with probability P
	 *   lost_every:N              every Nth I/O completion is dropped
	 *   cfs:N                     after N I/O commands the controller sets CSTS.CFS and stops
	 *   late:P[:MS]               each I/O command is held MS ms (default 1000) with probability
	 *                             P, then executed (its data lands then) unless an Abort ends it
	 *   hang:P                    each I/O command hangs the controller with probability P: it
	 *                             fetches and completes nothing (admin too) until a reset
	 *   dup:P                     each I/O completion is posted twice with probability P,
	 *                             the second 20 us later
	 *   dupnow:P                  the same, the second right behind the first in the CQ
	 *                             (a driver finds both in one pass)
	 *   duplate:P[:MS]            the same, the second MS ms later (default 5): by then
	 *                             the driver may have used the CID for another command
	 *   dead:N                    as cfs:N, and CSTS.RDY never comes back after a reset
	 */
	struct { uint64_t start, end; uint16_t status; } lba_fault[GPUOS_EMU_MAX_LBA_FAULTS];
	uint32_t n_lba_faults;
	double   fault_rate;
	uint16_t fault_rate_status;
	double   lost_rate;
	uint32_t lost_every;
	uint64_t cfs_after;
	double   late_rate;
	uint32_t late_ms;
	double   hang_rate;
	double   dup_rate;
	double   dupnow_rate;
	double   duplate_rate;
	uint32_t duplate_ms;
	uint64_t dead_after;
	uint64_t seed;           /* seed=N for the random faults and ooo shuffles */
	char     model[41];      /* model=STR (no commas), default "gpuos emulated NVMe" */
	char     serial[21];     /* serial=STR, default derived from the path */
	/* An array (docs/emulator.md, "Arrays"): ssds=N controllers hold the
	 * image striped RAID-0 style in chunks of stripe=KiB: chunk k of the
	 * image lives on member k % N at member chunk k / N. Every member has
	 * its own registers, queues, workers, performance model (gbps, iops,
	 * latency_us are per SSD) and statistics; they share one backend. */
	uint32_t ssds;           /* ssds=N, 1..GPUOS_EMU_MAX_SSDS, default 1 */
	uint32_t stripe_kib;     /* stripe=KiB, a multiple of 4 and of the LBA size, default 512 */
	uint32_t gather_kib;     /* gather=KiB: pieces up to this size go through dma_gather
	                          * (batched), larger ones through dma_copy; default 64, 0 = never */
	uint32_t stage_mib;      /* stage=MiB: pinned staging per worker (file, uring), default 32 */
	int direct;              /* direct=0: the uring backend reads through the page cache
	                          * (buffered) even where O_DIRECT would work; default 1 */
};

#define GPUOS_EMU_MAX_SSDS 16

/* Defaults into *o. */
void gpuos_emu_opts_default(struct gpuos_emu_opts *o);

/* Parse "PATH[,k=v...]" (the part after "emu:") into *o, defaults first.
 * Returns 0, or -EINVAL with a one-line reason in err. */
int gpuos_emu_parse(const char *args, struct gpuos_emu_opts *o, char *err, size_t errlen);

/* Where the register file and DMA copies go. All callbacks may be NULL:
 * then registers live in ordinary memory and DEVICE regions are refused. */
struct gpuos_emu_env {
	void *ctx;
	/* memory the driver (CPU or GPU) writes with MMIO stores; zeroed */
	void *(*alloc_regs)(void *ctx, size_t len);
	void (*free_regs)(void *ctx, void *p, size_t len);
	/* copy between host memory and device memory (emulated DMA into VRAM);
	 * returns only when the copy is complete; 0 or a negative errno */
	int (*dev_copy)(void *ctx, void *dst, const void *src, size_t len, int to_device);
	/* optional: run by each I/O worker thread before it serves anything
	 * (what dev_copy and the dma_* calls need per thread, set up while no
	 * GPU kernel spins); gpuos_emu_create returns after every worker has
	 * run it. thread_fini: run by the worker as it leaves. */
	void (*thread_init)(void *ctx);
	void (*thread_fini)(void *ctx);
	/* The DMA engine (docs/emulator.md), optional (all of dma_* or none):
	 * without it, data for device memory moves through dev_copy, one
	 * synchronous copy per segment. Every dma_* call comes from an I/O
	 * worker thread and acts on that thread's own channel:
	 *   dma_copy    enqueue a copy of len bytes from host memory (registered
	 *               with host_register, or from pinned_alloc) to device memory
	 *   dma_gather  the same for a small piece; pieces are gathered and moved
	 *               together (one batched transfer) at the next dma_mark
	 *   dma_zero    enqueue zeroing len bytes of device memory
	 *   dma_mark    *ticket (increasing, from 1) then names everything
	 *               enqueued on the channel so far
	 *   dma_poll    1 once everything up to ticket has landed in device
	 *               memory, 0 not yet, -EIO when a transfer failed
	 * All return 0 or a negative errno (-EIO: the transfer could not be
	 * queued; the command fails with a data transfer error). */
	int (*dma_copy)(void *ctx, void *dst, const void *src, size_t len);
	int (*dma_gather)(void *ctx, void *dst, const void *src, size_t len);
	int (*dma_zero)(void *ctx, void *dst, size_t len);
	int (*dma_mark)(void *ctx, uint64_t *ticket);
	int (*dma_poll)(void *ctx, uint64_t ticket);
	/* optional: make the ram backend's image a direct source of dma_copy
	 * (pinned and mapped for the GPU); 0 or -errno (then reads into device
	 * memory stage through pinned_alloc memory) */
	int (*host_register)(void *ctx, void *p, size_t len);
	void (*host_unregister)(void *ctx, void *p);
	/* optional: the most I/O worker threads this environment can serve, all
	 * members of an array together (each needs a channel); 0 = no limit.
	 * create_array gives each member at most max_workers / N of them. */
	uint32_t max_workers;
	/* optional: staging memory dma_copy may read from; NULL when out of memory */
	void *(*pinned_alloc)(void *ctx, size_t len);
	void (*pinned_free)(void *ctx, void *p, size_t len);
};

enum gpuos_emu_region_kind {
	GPUOS_EMU_REGION_HOST = 0,   /* ptr is a host address */
	GPUOS_EMU_REGION_DEVICE = 1  /* ptr is a device address: data moves through dev_copy */
};

struct gpuos_emu_stats {
	uint64_t admin_cmds;
	uint64_t io_cmds;        /* I/O commands finished (executed, or ended by an Abort), those
	                          * whose completion was dropped (lost) included; not those a
	                          * hang, a reset or a queue deletion ended */
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t errors;         /* commands completed with a non-zero status */
	uint64_t dma_faults;     /* addresses outside every region */
	uint64_t last_fault_iova;
	uint64_t lost;           /* completions dropped by fault injection */
	uint64_t cq_full_waits;  /* times a worker waited for CQ space */
	uint32_t csts;
	uint32_t dma_direct;     /* the ram image is registered: reads into VRAM copy straight from it */
	/* the DMA engine */
	uint64_t dma_cmds;       /* commands whose data moved asynchronously */
	uint64_t dma_copies;     /* pieces moved with one copy each */
	uint64_t dma_gathered;   /* small pieces moved in batches */
	uint64_t dma_batches;    /* dma_mark calls (batches) */
	uint64_t dma_waits;      /* commands whose time had come while their data was still on the way */
	uint64_t busy_ns;        /* nanoseconds the worker threads spent serving, summed */
	/* the life of a command: what the driver did with CIDs, and the
	 * duplicates faults= made of completions */
	uint64_t io_fetched;     /* I/O commands fetched from the SQs (io_cmds once all have finished) */
	uint64_t dups;           /* extra completions made by dup, dupnow and duplate (a reset or
	                          * a queue deletion may drop some before they are posted) */
	uint64_t cid_conflicts;  /* commands fetched while an earlier one with the same CID on the
	                          * same SQ had not been answered (NVMe 4.2: a CID is unique among
	                          * a queue's outstanding commands); executed all the same */
};

struct gpuos_emu;

/* Create the controller: opens the backend, allocates the register file
 * through env (copied), starts the controller thread. Returns 0 or a
 * negative errno with a one-line reason in err: -EINVAL bad options (also
 * o->size not set, an image smaller than one LBA), -ENOENT and the other
 * open(2) errors for the image ("emu: PATH: No such file or directory"),
 * -ENOMEM, or io_uring setup errors for backend=uring. */
int gpuos_emu_create(const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env,
		     struct gpuos_emu **out, char *err, size_t errlen);

/* Create the o->ssds members of an array (o->ssds == 1: one controller,
 * as gpuos_emu_create). out[i] is member i; member i's namespace holds
 * chunks i, i + N, i + 2N, ... of the image, and every member has the same
 * namespace size: ceil(image / (N * stripe)) * stripe bytes (what lies
 * past the image's end reads as zeros). Serial numbers end in "-i".
 * Returns 0 or what gpuos_emu_create returns; on failure no member is left. */
int gpuos_emu_create_array(const struct gpuos_emu_opts *o, const struct gpuos_emu_env *env,
			   struct gpuos_emu **out, char *err, size_t errlen);

/* Stop every thread, close the backend, free the register file. Members of
 * an array may be destroyed in any order; the shared backend goes with the
 * last one. */
void gpuos_emu_destroy(struct gpuos_emu *e);

/* The register file (BAR0), GPUOS_NVME_REGS_MIN bytes at least. */
volatile uint32_t *gpuos_emu_regs(struct gpuos_emu *e);
size_t gpuos_emu_regs_len(struct gpuos_emu *e);

/* IOMMU-like table: [iova, iova+len) maps to ptr. Regions must not overlap.
 * Returns 0, -EEXIST on overlap, -ENOSPC when the table is full (more than
 * GPUOS_EMU_MAX_REGIONS), -ENOTSUP for a DEVICE region without
 * env.dev_copy, -EINVAL for len 0 or a range that wraps. unmap: 0 or
 * -ENOENT when no region starts at iova. Both may be called from any thread. */
int gpuos_emu_map(struct gpuos_emu *e, uint64_t iova, void *ptr, size_t len,
		  enum gpuos_emu_region_kind kind);
int gpuos_emu_unmap(struct gpuos_emu *e, uint64_t iova);

void gpuos_emu_get_stats(struct gpuos_emu *e, struct gpuos_emu_stats *s);

/* Namespace size in bytes (as identify reports it times the LBA size). */
uint64_t gpuos_emu_ns_bytes(struct gpuos_emu *e);
/* The image's own size in bytes (the null backend: its size). */
uint64_t gpuos_emu_image_bytes(struct gpuos_emu *e);

#endif /* GPUOS_EMU_H */
