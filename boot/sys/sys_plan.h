/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_plan.h - the geometry of a runtime, planned from the boot options
 * (include/gpuos/host.h) and what the controllers report: pure functions, no
 * allocation, no I/O, no notices printed (they come back as text), so that
 * tests/unit/test_plan.c can try every corner without a controller.
 *
 * Three steps, as boot takes them (boot/sys/sys.c):
 *  1. gpuos_plan_device: what the controllers of the device have in common,
 *     one controller's limits or an array's (docs/design.md, "Arrays of SSDs");
 *  2. gpuos_plan_ask: how many I/O queue pairs to ask each controller for
 *     (NVMe 5.27.1.5, Set Features Number of Queues);
 *  3. gpuos_plan_make: with what they granted, the rest: service warps,
 *     queues per warp, depth, command slots, transfer size, mailbox slots
 *     and the size of every region boot allocates.
 *
 * An array is served by every service warp: queue k of a warp is on
 * controller k % nctrl, so each warp owns as many queue pairs on every
 * controller, and the metadata warp owns one on each.
 *
 * A group of runtimes on the same controllers (one per GPU) is planned
 * once: each runtime gets an equal share of the queue pairs granted, and
 * runtime i's qids come after runtime i-1's (gpuos_plan_runtime).
 */
#ifndef GPUOS_BOOT_SYS_PLAN_H
#define GPUOS_BOOT_SYS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gpuos/host.h"

/* One controller as bring-up found it (boot/ctrl/bringup.h, struct gpuos_nvme_dev). */
struct gpuos_plan_ctrl {
	const char *name;        /* for messages: "emu member 1", "pci:0000:01:00.0" */
	uint32_t mqes;           /* CAP.MQES + 1: entries per queue at most */
	uint32_t mdts_bytes;     /* 0: no limit */
	uint32_t to_ms;          /* CAP.TO in ms */
	uint32_t lba_bytes;      /* a power of two, 512 to 4096 */
	uint32_t nsid;
	uint64_t ns_lbas;
};

/* The device as the runtime serves it: one controller, or an array striped
 * in chunks over nctrl of them, with the limits every one of them keeps. */
struct gpuos_plan_device {
	uint32_t nctrl;          /* 1 to GPUOS_MAX_CTRL */
	uint32_t mqes;           /* the smallest */
	uint32_t mdts_bytes;     /* the smallest that is set; 0: none sets one */
	uint32_t to_ms;          /* the largest */
	uint32_t lba_bytes;      /* every controller's */
	uint32_t nsid;           /* every controller's */
	uint64_t ns_lbas;        /* one controller's; an array's: nctrl x the striped part of the smallest */
	uint32_t stripe_lbas;    /* an array's chunk (nctrl > 1), else 0 */
};

struct gpuos_plan_in {
	const struct gpuos_boot_opts *opts;
	struct gpuos_plan_device dev;
	/* Non-NULL, the controller's name: it makes its queue pairs itself
	 * (gpu-null; boot/ctrl/ctrl.h's queues hook): one controller that grants
	 * what it is asked, moves no data so serves no files, and has no
	 * controller's queues to share among the runtimes of a group */
	const char *own_queues;
	uint32_t io_queues;      /* step 3: I/O queue pairs granted, the fewest of any controller */
	uint32_t runtimes;       /* runtimes sharing the controllers (a group, docs/design.md
	                          * "Scale-out"): 0 or 1 for one. Each is planned alike: step 2
	                          * asks for all of them, step 3 gives each io_queues / runtimes */
};

/* Notices: one line each, without "gpuos: " and newline; boot prints them
 * unless quiet. At most one of step 2, two of step 3. */
#define GPUOS_PLAN_NOTICES 4u
#define GPUOS_PLAN_NOTICE_LEN 160u

struct gpuos_plan {
	uint32_t nctrl;          /* controllers */
	uint32_t ask;            /* I/O queue pairs to ask each controller for (step 2) */
	uint32_t warps;          /* service warps */
	uint32_t nq;             /* their queue pairs, all controllers together: warps x qpw */
	uint32_t qpw;            /* queue pairs per warp, a multiple of nctrl */
	uint32_t meta;           /* 1: a metadata warp, one more queue pair on each controller */
	uint32_t depth;          /* entries per queue, 2 to MQES */
	uint32_t slots;          /* command slots (in-flight commands) per warp */
	uint32_t xfer_bytes;     /* bytes per command at most, a multiple of 4 KiB, MDTS at most */
	uint32_t mbox_slots;     /* mailbox slots, one partition per warp, a multiple of warps */
	uint32_t runtimes;       /* runtimes planned alike on the same controllers (1: alone) */
	uint32_t qid_base;       /* qids below this one on each controller are other runtimes'
	                          * (gpuos_plan_runtime); 0 for the first or only one */
	uint64_t timeout_ns;     /* per command */
	/* Region sizes in bytes */
	uint64_t sq_bytes, cq_bytes;   /* one queue pair's */
	uint64_t bounce_bytes;         /* a buffer of xfer_bytes per command slot */
	uint64_t prp_bytes;            /* a PRP list page per command slot */
	uint64_t meta_bounce_bytes;    /* the metadata warp's buffer (0 without one) */
	uint64_t meta_prp_bytes;       /* and its PRP list page */
	uint64_t ctl_bytes;            /* control block: struct gpuos_rt_ctl, a statistics line per warp */
	/* The shared segment (include/gpuos/host.h): header page, mailbox, client heap */
	uint64_t mbox_bytes;
	uint64_t heap_off;             /* the heap's offset in the segment, 64 KiB aligned */
	uint64_t heap_bytes;           /* rounded up to 64 KiB */
	uint64_t share_bytes;          /* one client share of the heap (heap_shares), 4 KiB aligned */
	/* A service's clients (heap_shares > 1): one per share, whose first
	 * cmbox_bytes hold the client's own mailbox (include/gpuos/internal/rt.h) */
	uint32_t nclients;
	uint32_t cmbox_slots;
	uint64_t cmbox_bytes;
	uint64_t clients_off;          /* struct gpuos_rt_client[nclients] in the control block */
	uint64_t doors_off;            /* and struct gpuos_rt_doors (host mode; a VRAM copy on a GPU) */
	uint32_t ngpu_clients;         /* of nclients, the last ones: areas in VRAM (gpu_clients) */
	uint64_t gpu_area_bytes;       /* each such area */
	uint64_t shm_bytes;            /* the whole segment */
	uint32_t nnotices;             /* notice[0..nnotices) */
	uint32_t ask_notices;          /* of them, step 2's: notice[0..ask_notices) */
	char notice[GPUOS_PLAN_NOTICES][GPUOS_PLAN_NOTICE_LEN];
};

/* The options alone, before anything is opened. 0, or -EINVAL with the
 * reason in err. */
int gpuos_plan_check(const struct gpuos_boot_opts *o, char *err, size_t errlen);

/* Step 1: c[0..n) into *out. An array's controllers must agree on the LBA
 * size and the namespace ID, and its chunk (stripe_kib) must be whole pages
 * and LBAs that every controller holds at least once. 0, or -EINVAL with
 * the reason in err. */
int gpuos_plan_device(const struct gpuos_plan_ctrl *c, uint32_t n, uint32_t stripe_kib,
		      struct gpuos_plan_device *out, char *err, size_t errlen);

/* Step 2: p->ask and the warps and queue pairs wanted, from in->opts and
 * in->dev (in->io_queues unused). Fills *p from scratch. 0, or -EINVAL. */
int gpuos_plan_ask(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen);

/* Step 3: the whole plan (step 2 included, so *p needs nothing before),
 * in->io_queues being what the controllers granted for p->ask. 0, or
 * -EINVAL for a combination that cannot run (a queue depth below 2, a
 * transfer size below a page or an LBA, no queue granted, a heap larger
 * than a shared segment can be), with the reason in err. */
int gpuos_plan_make(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen);

/* Where the service warps' queue pair q (0 <= q < p->nq) lives: queue
 * k = q % qpw of warp q / qpw is on controller k % nctrl, which numbers its
 * queues warp by warp from 1 (in increasing order of q). The metadata
 * warp's queue pair on each controller comes after them. */
uint32_t gpuos_plan_queue_ctrl(const struct gpuos_plan *p, uint32_t q);
uint32_t gpuos_plan_queue_qid(const struct gpuos_plan *p, uint32_t q);
uint32_t gpuos_plan_meta_qid(const struct gpuos_plan *p);

/* Queue pairs one runtime uses on each controller: its service warps'
 * share of p->nq and the metadata warp's. */
uint32_t gpuos_plan_ctrl_queues(const struct gpuos_plan *p);
/* Runtime i (0 <= i < p->runtimes) of a group: the same plan, its qids
 * after those of runtimes 0..i-1 on every controller, so that no queue
 * pair is shared and all fit in what was granted. */
void gpuos_plan_runtime(struct gpuos_plan *p, uint32_t i);

#endif /* GPUOS_BOOT_SYS_PLAN_H */
