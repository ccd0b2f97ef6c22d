/* SPDX-License-Identifier: MIT */
/*
 * gpuos/internal/rt.h - the runtime descriptor: what boot/ hands the runtime before it
 * launches it (device memory layout, queues, regions, limits). Written by the
 * host before launch, read-only for the runtime. All addresses are in the
 * runtime's address space (device pointers on the GPU, host pointers in host
 * mode); IOVAs are what the controller sees.
 */
#ifndef GPUOS_RT_H
#define GPUOS_RT_H

#include "gpuos/abi.h"
#include "gpuos/nvme.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_RT_MAX_QUEUES  256u
#define GPUOS_RT_MAX_REGIONS 64u
#define GPUOS_RT_ROOT_MAX 256u  /* bytes of the --root path, with its NUL */
#define GPUOS_RT_MAX_WARPS   256u
#define GPUOS_RT_MAX_SLOTS_PER_WARP 256u /* in-flight commands per warp (CIDs) */
#define GPUOS_RT_MAX_REQS_PER_WARP  64u  /* requests a warp works on at once */
#define GPUOS_RT_MAX_CTRL    16u        /* controllers of an array (docs/design.md) */
/* Bytes per command at most: a command slot has one PRP list page, 512
 * entries of 4 KiB. The KiB are a plain number, so that the runtime's
 * messages can quote it (GPUOS_STRINGIFY). */
#define GPUOS_RT_MAX_XFER_KIB 2048
#define GPUOS_RT_MAX_XFER    (GPUOS_RT_MAX_XFER_KIB * 1024u)
/* Mailbox slots at most with a metadata warp: its ring names them in 16 bits. */
#define GPUOS_RT_MBOX_MAX_SLOTS 65535 /* slots of one mailbox: 16 bits of ms (gpuos_rt_ms_client) */

/* flags */
/* A service's clients (docs/security.md, "Isolation between clients"):
 * client m (1..nclients) posts to a mailbox of its own, at the start of its
 * own area, and its requests may name only the memory of its share. What
 * each may do beyond that is in a table only the service writes. */
/* GPUOS_RT_MAX_CLIENTS: gpuos/abi.h (a limit clients see too) */
#define GPUOS_RT_CLIENT_GROUPS 16u    /* supplementary groups checked against a file's gid */
#define GPUOS_RT_CLIENT_RAW   (1u << 0) /* may READ_RAW (needs GPUOS_RT_ALLOW_RAW too) */
#define GPUOS_RT_CLIENT_PERMS (1u << 1) /* ext4 mode bits are checked against uid, gid and groups */
#define GPUOS_RT_CLIENT_QUOTA 16u     /* of a warp's GPUOS_RT_MAX_REQS_PER_WARP, one client holds at most */
struct gpuos_rt_client {
	uint32_t flags;        /* 0x00 GPUOS_RT_CLIENT_*; 0 while no client is attached */
	uint32_t uid;          /* 0x04 the peer's credentials (SO_PEERCRED) */
	uint32_t gid;          /* 0x08 */
	uint32_t ngroups;      /* 0x0c of groups[] */
	uint32_t rsvd10[4];    /* 0x10 (the area's epoch is in struct gpuos_rt_doors) */
	uint32_t groups[GPUOS_RT_CLIENT_GROUPS]; /* 0x20 */
};
static_assert(sizeof(struct gpuos_rt_client) == 96, "rt client size");

/* What the service warps look at every loop: which clients are attached,
 * and each area's epoch. In VRAM on the GPU (a copy boot writes after each
 * change, as it does the command word: a read of host memory in every loop
 * of every warp slowed a client's round trip tenfold), in the control block
 * in host mode. */
struct gpuos_rt_doors {
	uint32_t open;         /* bit m - 1: client m is attached (admitted and not closed); the
	                        * others' mailboxes are not looked at */
	uint32_t epoch[GPUOS_RT_MAX_CLIENTS]; /* client m's at [m - 1]: odd, the area is closed
	                        * (its client left: take nothing more); even and new, a fresh
	                        * mailbox (take from its ring's position 0) */
};
static_assert(sizeof(struct gpuos_rt_doors) == 128, "rt doors size");

/* A request's mailbox slot as the runtime names it (ms): the client in the
 * top 16 bits (0: the service's own mailbox, d->mbox), the slot of that
 * mailbox below. */
#define GPUOS_RT_MS_CLIENT_SHIFT 16u
GPUOS_INLINE GPUOS_HD uint32_t gpuos_rt_ms_client(uint32_t ms)
{
	return ms >> GPUOS_RT_MS_CLIENT_SHIFT;
}

#define GPUOS_RT_ALLOW_RAW   (1u << 0)  /* READ_RAW allowed */
#define GPUOS_RT_ALLOW_WRITE (1u << 1)
#define GPUOS_RT_MBOX_DEVICE (1u << 2)  /* the mailbox has GPUOS_MBOX_F_DEVICE */
#define GPUOS_RT_ON_GPU      (1u << 3)  /* the runtime runs on the GPU (no atomics on host memory) */
#define GPUOS_RT_QUEUES_DEVICE (1u << 4) /* queues and doorbells in VRAM, served by this GPU (gpu-null) */

struct gpuos_rt_queue {
	uint64_t sq;           /* 0x00 struct gpuos_nvme_sqe[depth], DMA memory */
	uint64_t cq;           /* 0x08 struct gpuos_nvme_cqe[depth], DMA memory */
	uint64_t sq_db;        /* 0x10 volatile uint32_t *, MMIO */
	uint64_t cq_db;        /* 0x18 volatile uint32_t *, MMIO */
	uint32_t qid;          /* 0x20 NVMe queue id (1-based) */
	uint32_t depth;        /* 0x24 entries (MQES+1 at most) */
	uint32_t ctrl;         /* 0x28 the controller (array member) the queue belongs to */
	uint32_t rsvd2c;       /* 0x2c */
};
static_assert(sizeof(struct gpuos_rt_queue) == 48, "rt queue size");

/* Memory clients may name as a destination: [base, base+len). With
 * GPUOS_RT_REGION_DMA the controller reaches it at iova..iova+len, and reads
 * that cover whole LBAs go there directly (zero copy: docs/design.md,
 * "The request path"); without it they go through the bounce buffers. */
#define GPUOS_RT_REGION_VRAM (1u << 0)
#define GPUOS_RT_REGION_DMA  (1u << 1)
struct gpuos_rt_region {
	uint64_t base;         /* 0x00 runtime-space address */
	uint64_t len;          /* 0x08 */
	uint64_t iova;         /* 0x10 */
	uint32_t flags;        /* 0x18 */
	uint32_t client;       /* 0x1c 0: boot's or the embedding program's; m: client m's own memory
	                        * (registered through the service), which only its requests and
	                        * the service's own mailbox may name (gpuos_rt_client_mem) */
};
static_assert(sizeof(struct gpuos_rt_region) == 32, "rt region size");

#define GPUOS_RT_EXTENT_BYTES 24u /* one extent of a map (runtime/fs/fs_types.h, struct gpuos_fs_extent) */

struct gpuos_rt_desc {
	uint32_t magic;        /* GPUOS_RT_MAGIC */
	uint32_t version;      /* GPUOS_ABI_VERSION */
	uint32_t nwarps;       /* service warps (host mode: threads) */
	uint32_t nqueues;      /* I/O queue pairs, nqueues % nwarps == 0, >= nwarps */
	uint32_t nsid;         /* namespace served */
	uint32_t lba_shift;    /* log2 of the LBA size (every member's) */
	uint64_t ns_lbas;      /* namespace size in LBAs: of the array, nctrl x a member's striped part */
	uint32_t xfer_bytes;   /* bytes per command at most (MDTS and bounce size), multiple of 4 KiB */
	uint32_t flags;        /* GPUOS_RT_ALLOW_* */
	uint64_t timeout_ns;   /* a command that takes longer fails its request */
	/* An array (docs/design.md, "Arrays of SSDs"): the namespace is
	 * striped over nctrl controllers in chunks of stripe_lbas
	 * (gpuos_rt_stripe_map). Queue k of a service warp belongs to
	 * controller k % nctrl, so every warp owns queues of every member
	 * (gpuos_rt_desc_check). */
	uint32_t nctrl;        /* controllers, 1..GPUOS_RT_MAX_CTRL (their CSTS: csts[] below) */
	uint32_t stripe_lbas;  /* chunk size in LBAs (nctrl > 1) */
	uint64_t mbox;         /* struct gpuos_mbox * */
	uint32_t mbox_nslots;  /* its slots (a copy: the header may sit across PCIe) */
	uint32_t rsvd_mb;
	uint64_t ctl;          /* struct gpuos_rt_ctl * */
	uint64_t cmd;          /* uint32_t the runtime polls for GPUOS_RT_CMD_*: &ctl->cmd in host
	                        * mode, a copy in VRAM on the GPU (boot/sys/sys_cmd.c, gpuos_sys_set_cmd) */
	uint64_t state;        /* runtime private state, state_bytes long, zeroed before first launch */
	uint64_t state_bytes;
	uint32_t slots_per_warp; /* in-flight commands per warp, <= GPUOS_RT_MAX_SLOTS_PER_WARP */
	uint32_t nregions;
	/* Per command slot: a bounce buffer of xfer_bytes and a PRP list page. Slot s
	 * of warp w is index w * slots_per_warp + s. */
	uint64_t bounce;       /* runtime-space address of bounce buffer 0 */
	uint64_t bounce_iova;
	uint64_t prp;          /* PRP list pages, 4 KiB each, in DMA memory */
	uint64_t prp_iova;
	/* Files and models (runtime/files.h). When `meta` is 1 a metadata warp
	 * runs beside the service warps (block nwarps on the GPU, one more thread
	 * in host mode) and owns queue[nqueues + m] of each controller m and its
	 * own bounce buffer. */
	uint32_t meta;
	uint32_t part;         /* GPT partition to mount: 0 = the first holding ext4 (or the whole
	                        * device without a partition table), N = partition N (1-based) */
	uint64_t files;        /* files state (handles, extent maps, block cache, models), zeroed */
	uint64_t files_bytes;
	uint64_t meta_bounce;  /* xfer_bytes of DMA memory for the metadata warp */
	uint64_t meta_bounce_iova;
	uint64_t meta_prp;     /* its PRP list page (prebuilt, like the slots' pages) */
	uint64_t meta_prp_iova;
	struct gpuos_rt_region region[GPUOS_RT_MAX_REGIONS];
	/* Cold from here on (read every 256 loops, or at start): after the hot
	 * fields, so that those keep few constant-cache lines on the GPU. */
	uint64_t csts[GPUOS_RT_MAX_CTRL]; /* const volatile uint32_t * CSTS of each controller, MMIO (0: not polled) */
	uint64_t admin;        /* struct gpuos_rt_admin *: the admin side of recovery, 0: none */
	uint32_t retries;      /* times a command failed with DNR clear is sent again, at most */
	uint32_t nshares;      /* client shares (a service): [share_base + k * share_len, + share_len)
	                        * is share k + 1; handles are counted and released per share */
	uint64_t share_base;   /* runtime address of share 1 */
	uint64_t share_len;
	/* --root: the directory every path starts from and ".." and symlinks
	 * stop at (gpuos_ext4_lookup_at), as a path from the file system's root;
	 * "" is the file system's root. Resolved by the metadata warp at mount. */
	char root[GPUOS_RT_ROOT_MAX];
	struct gpuos_rt_queue queue[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL]; /* + the metadata warp's */
	/* Client mailboxes (a service; 0 clients otherwise): nclients ==
	 * nshares, and share m is client m's area: its mailbox (cmbox_nslots
	 * slots in nwarps partitions) in the first cmbox_bytes, then the memory
	 * its requests may name, to the share's end (gpuos_rt_client_mem).
	 * Last, so that the rest keeps its layout (the loop reads queue[]). */
	uint32_t nclients;
	uint32_t cmbox_nslots;
	uint64_t cmbox_bytes;  /* the mailbox's part of an area, 4 KiB aligned */
	uint64_t clients;      /* struct gpuos_rt_client[nclients], host memory only the service writes */
	uint64_t doors;        /* struct gpuos_rt_doors *, only the service writes */
	/* GPU clients (kernels of other processes, docs/security.md): the
	 * last ngpu_clients of the nclients have their areas in VRAM, at
	 * gpu_area_base + i * gpu_area_len, laid out as the others, their
	 * mailboxes with GPUOS_MBOX_F_DEVICE. */
	uint32_t ngpu_clients;
	uint32_t map_extents;  /* extents the open files' maps share (runtime/files.h, a pool at
	                        * the end of the files region), 0: GPUOS_RT_MAP_EXTENTS; each
	                        * GPUOS_RT_EXTENT_BYTES */
	uint64_t gpu_area_base;
	uint64_t gpu_area_len;
};

/* What the runtime needs to recover a controller by itself (docs/design.md,
 * "The life of a command"): abort a command that timed out, and reset the
 * controller when the abort does not help (disable, enable, re-create the
 * queues, as bring-up does).
 * One per controller, in host memory boot maps for the runtime; read only
 * on those cold paths. regs == 0: the runtime cannot read this controller's
 * registers (a GPU and a real SSD's BAR), so it cannot reset it; a command
 * the abort does not bring back then fails the controller. */
struct gpuos_rt_admin {
	uint64_t regs;         /* BAR0 (CC at 0x14, CSTS at 0x1c), runtime space */
	uint64_t sq, cq;       /* the admin queue's memory, runtime space */
	uint64_t sq_db, cq_db; /* its doorbells, runtime space */
	uint32_t depth;        /* admin queue entries */
	uint32_t to_ms;        /* CAP.TO: the bound of each wait for CSTS.RDY */
	uint32_t cc;           /* CC as bring-up enabled it: written back to enable again */
	uint32_t nio;          /* I/O queue pairs granted (Set Features Number of Queues, again after a reset) */
	uint64_t asq_iova, acq_iova; /* the admin queue as the controller addresses it (ASQ, ACQ: */
	uint32_t aqa;          /* written again before enabling, as bring-up does) */
	uint32_t rsvd_aqa;
	/* Where the admin queue stands: written by whoever used it last (boot
	 * before a launch, the runtime after each use); never by both while
	 * the runtime runs (boot parks it first, boot/sys/sys_park.c). */
	uint32_t sq_tail, sq_head, cq_head, phase;
	uint64_t sq_iova[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL]; /* each queue of the descriptor, as */
	uint64_t cq_iova[GPUOS_RT_MAX_QUEUES + GPUOS_RT_MAX_CTRL]; /* the controller addresses it */
};
static_assert(offsetof(struct gpuos_rt_desc, nctrl) == 48 && offsetof(struct gpuos_rt_desc, mbox) == 56,
	      "the hot fields keep their places (nctrl and stripe_lbas where one CSTS pointer was)");
/* Where array LBA `lba` lives (md RAID-0 chunk mapping; docs/design.md,
 * "Arrays of SSDs"): chunk k = lba / stripe_lbas is on controller k % nctrl at
 * its LBA (k / nctrl) * stripe_lbas + lba % stripe_lbas. Returns how many LBAs
 * from lba on stay contiguous there: to the end of the chunk (nothing is merged
 * across chunks), or of the namespace with one controller. The one place the
 * mapping is written: service warps and metadata warp split with it. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_rt_stripe_map(const struct gpuos_rt_desc *d, uint64_t lba, uint32_t *ctrl,
						   uint64_t *ctrl_lba)
{
	uint64_t k, in;
	if (d->nctrl <= 1) {
		*ctrl = 0;
		*ctrl_lba = lba;
		return lba < d->ns_lbas ? d->ns_lbas - lba : 1u;
	}
	/* Divisions (software on the GPU): once per command, not per byte. */
	k = lba / d->stripe_lbas;
	in = lba - k * d->stripe_lbas;
	*ctrl = (uint32_t)(k % d->nctrl);
	*ctrl_lba = (k / d->nctrl) * d->stripe_lbas + in;
	return d->stripe_lbas - in;
}

/* The index of the registered region (memory clients may name) that holds
 * [p, p+len), or -1 when none does. An index, not a pointer: on the GPU the
 * descriptor is a kernel parameter, read through the constant cache when
 * indexed (LDC), through memory when dereferenced by pointer (measured:
 * three such loads added 0.5 us to a request). */
GPUOS_INLINE GPUOS_HD int gpuos_rt_region_of(const struct gpuos_rt_desc *d, uint64_t p, uint64_t len)
{
	uint32_t i;
	for (i = 0; i < d->nregions; i++) {
		uint64_t base = d->region[i].base, rlen = d->region[i].len;
		if (p >= base && p - base <= rlen && len <= rlen - (p - base))
			return (int)i;
	}
	return -1;
}

/* Client m's area: its mailbox, then its share. Clients 1..nclients -
 * ngpu_clients are in the host's client heap (share m), the rest in VRAM. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_gpu_client(const struct gpuos_rt_desc *d, uint32_t m)
{
	return m > d->nclients - d->ngpu_clients;
}
GPUOS_INLINE GPUOS_HD uint64_t gpuos_rt_area_len(const struct gpuos_rt_desc *d, uint32_t m)
{
	return gpuos_rt_gpu_client(d, m) ? d->gpu_area_len : d->share_len;
}
/* The mailbox of client m (1..nclients), or the service's own for m = 0. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_rt_mbox_of(const struct gpuos_rt_desc *d, uint32_t m)
{
	uint32_t nhost = d->nclients - d->ngpu_clients;
	if (!m)
		return d->mbox;
	return m <= nhost ? d->share_base + (uint64_t)(m - 1u) * d->share_len
			  : d->gpu_area_base + (uint64_t)(m - 1u - nhost) * d->gpu_area_len;
}

/* Slot ms (gpuos_rt_ms_client) of its mailbox. The layout is the
 * runtime's own (slots right after the header): a client's header is never
 * trusted. */
GPUOS_INLINE GPUOS_HD struct gpuos_mbox_slot *gpuos_rt_slot(const struct gpuos_rt_desc *d, uint32_t ms)
{
	return (struct gpuos_mbox_slot *)(uintptr_t)(gpuos_rt_mbox_of(d, gpuos_rt_ms_client(ms)) +
						      sizeof(struct gpuos_mbox)) +
	       (ms & ((1u << GPUOS_RT_MS_CLIENT_SHIFT) - 1u));
}

/* An odd epoch: client m's area is closed (struct gpuos_rt_doors). */
GPUOS_INLINE GPUOS_HD int gpuos_rt_epoch_closed(uint32_t epoch)
{
	return epoch & 1u;
}

/* 1 if [p, p + len) is memory a request of client m may name: its share
 * past its mailbox, or a region registered for it alone (its own memory,
 * gpuos_rt_region.client). Client 0 (the service's own mailbox) may name
 * any registered memory. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_in_share(uint64_t area, uint64_t cmbox_bytes, uint64_t share_len, uint64_t p,
					      uint64_t len)
{
	uint64_t lo = area + cmbox_bytes, hi = area + share_len;
	return p >= lo && p <= hi && len <= hi - p;
}
GPUOS_INLINE GPUOS_HD int gpuos_rt_own_region(const struct gpuos_rt_desc *d, uint32_t m, uint64_t p, uint64_t len)
{
	int rg = gpuos_rt_region_of(d, p, len);
	return m != 0 && rg >= 0 && d->region[rg].client == m;
}
GPUOS_INLINE GPUOS_HD int gpuos_rt_client_mem(const struct gpuos_rt_desc *d, uint32_t m, uint64_t p, uint64_t len)
{
	return m == 0 || gpuos_rt_in_share(gpuos_rt_mbox_of(d, m), d->cmbox_bytes, gpuos_rt_area_len(d, m), p, len) ||
	       gpuos_rt_own_region(d, m, p, len);
}

GPUOS_INLINE GPUOS_HD int gpuos_rt_registered(const struct gpuos_rt_desc *d, uint64_t p, uint64_t len)
{
	return gpuos_rt_region_of(d, p, len) >= 0;
}

/* ---- the runtime's entry points (boot reaches the runtime only through this
 * header: docs/design.md, "Layout and arrows"). kernels/ runs them on the
 * GPU; boot's host mode runs them on CPU threads. */

/* Bytes of private state the runtime needs for this descriptor; boot
 * allocates them (device memory on the GPU), zeroes them once before the
 * first launch, and keeps them across park/resume. */
GPUOS_HD uint64_t gpuos_rt_state_bytes(const struct gpuos_rt_desc *d);
/* Bytes of `local` a service warp needs (gpuos_rt_warp_run). */
GPUOS_HD uint64_t gpuos_rt_local_bytes(const struct gpuos_rt_desc *d);
/* Checks a descriptor boot built; 0 or -EINVAL with the reason in *why.
 * Host side, before launch. */
int gpuos_rt_desc_check(const struct gpuos_rt_desc *d, const char **why);
/* Serve as service warp w until the host asks to park or stop (ctl->cmd).
 * Every lane of the warp calls it (host: one thread). Returns after this
 * warp has drained its in-flight commands. local/local_bytes: memory private
 * to this warp and fast to reach (a GPU block's shared memory) where the
 * warp keeps its working state while it runs; NULL: work in d->state. */
GPUOS_HD void gpuos_rt_warp_run(const struct gpuos_rt_desc *d, uint32_t w, void *local, uint64_t local_bytes);
/* Bytes of the files region (d->files) for this descriptor (0 without meta). */
GPUOS_HD uint64_t gpuos_rt_files_bytes(const struct gpuos_rt_desc *d);
/* The metadata warp: every lane calls it (lane 0 works). Returns when the
 * host parks or stops the runtime and every service warp has left. */
GPUOS_HD void gpuos_rt_meta_run(const struct gpuos_rt_desc *d);

/* The runtime kernel takes the descriptor by value (kernel parameters: at
 * most 32764 bytes, CUDA 12.1 and sm_70 on). */
static_assert(sizeof(struct gpuos_rt_desc) <= 32764, "descriptor fits the kernel parameters");

GPUOS_EXTERN_C_END

#endif /* GPUOS_RT_H */
