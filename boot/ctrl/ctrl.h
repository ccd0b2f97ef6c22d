/* SPDX-License-Identifier: MIT */
/*
 * boot/ctrl/ctrl.h - controllers behind one ops table, chosen at run time from the
 * device string (docs/design.md, "Controllers"): "emu:PATH[,k=v...]",
 * "null[:SIZE]", "pci:DDDD:BB:DD.F". And the DMA memory every controller
 * reads and writes.
 *
 * One device string may name an array of controllers (docs/design.md,
 * "Arrays of SSDs"): "emu:IMG,ssds=N[,stripe=KiB]" or
 * "pci:A+B+...[,stripe=KiB]". Each member has its own registers (struct
 * gpuos_ctrl_member); DMA memory is shared: map/alloc make it reachable by
 * every member at the same IOVA, so one PRP is good on any of them.
 */
#ifndef GPUOS_BOOT_CTRL_H
#define GPUOS_BOOT_CTRL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../gpu.h"
#include "gpuos/host.h"
#include "gpuos/port.h"

#define GPUOS_CTRL_MAX_MEMBERS GPUOS_MAX_CTRL
#define GPUOS_CTRL_STRIPE_KIB  512u    /* an array's default chunk size (md's; docs/benchmarks-log.md says why) */

struct gpuos_ctrl;
struct gpuos_dma;
struct gpuos_nvme_dev; /* boot/ctrl/bringup.h */

struct gpuos_ctrl_ops {
	const char *prefix;    /* device string prefix: "emu:", "null", "pci:" */
	/* args: the device string after the prefix. 0 or -errno, reason in err. */
	int (*open)(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen);
	/* The string's syntax alone (args as for open), nothing opened or
	 * touched: 0, or -EINVAL with the reason (gpuos_device_check). */
	int (*parse)(const char *args, char *err, size_t errlen);
	void (*close)(struct gpuos_ctrl *c);
	/* Make [ptr, ptr+len) reachable by the controller's DMA at *iova.
	 * vram: ptr is a GPU device address (emulated P2P), else host memory. */
	int (*map)(struct gpuos_ctrl *c, void *ptr, size_t len, int vram, uint64_t *iova);
	/* (map, unmap, alloc and free act on every member of an array at once) */
	void (*unmap)(struct gpuos_ctrl *c, uint64_t iova, size_t len);
	/* Optional, for controllers whose DMA memory must come from a particular
	 * place (pci: physically contiguous hugepages under uio; anonymous pages
	 * VFIO can pin, where cudaHostAlloc memory cannot be). Returns len bytes
	 * (a multiple of 4 KiB) of zeroed host memory already mapped at *iova, or
	 * -ENOMEM / -errno. gpuos_dma_alloc uses it for mapped GPUOS_MEM_HOST and
	 * registers the memory with the GPU when there is one. free undoes both. */
	int (*alloc)(struct gpuos_ctrl *c, size_t len, void **host, uint64_t *iova);
	void (*free)(struct gpuos_ctrl *c, void *host, uint64_t iova, size_t len);
	/* Optional: one line of controller statistics for --verbose / stats
	 * (of all members together). */
	void (*describe)(struct gpuos_ctrl *c, char *buf, size_t len);
	/* Optional: member i's own counters. 0 or -EINVAL (no member i). */
	int (*counters)(struct gpuos_ctrl *c, uint32_t i, struct gpuos_ctrl_stats *out);
	/* ---- hooks of a controller that is no NVMe register file (gpu-null) ----
	 * Each is optional; NULL is the NVMe way (boot/ctrl/bringup.h): CC.EN and
	 * Identify through the registers, Set Features Number of Queues, queue
	 * pairs created on the admin queue, nothing to start or stop beside
	 * the runtime. A controller with identity has no admin queue, so
	 * nothing to delete or shut down either. */
	/* In place of bring-up: what member m answers for Identify, written
	 * over *d (which it zeroes first). */
	void (*identity)(struct gpuos_ctrl *c, uint32_t m, struct gpuos_nvme_dev *d);
	/* In place of Set Features: the I/O queue pairs granted for want. */
	uint32_t (*grant)(struct gpuos_ctrl *c, uint32_t want);
	/* In place of Create I/O SQ/CQ: the controller makes nq queue pairs of
	 * depth entries itself; sq[], cq[] their DMA records and sq_db[],
	 * cq_db[] their doorbells (runtime space). 0 or -errno, reason in err.
	 * Such a controller moves no data (the runtime's metadata warp has
	 * nothing to read) and shares no queues among runtimes (boot/sys/sys_plan.h). */
	int (*queues)(struct gpuos_ctrl *c, uint32_t nq, uint32_t depth, struct gpuos_dma *sq, struct gpuos_dma *cq,
		      uint64_t *sq_db, uint64_t *cq_db, char *err, size_t errlen);
	/* Start the controller's own work with image (before the runtime's
	 * launch); stop it (after the runtime has drained), keeping its queues'
	 * progress for the next start. 0 or -errno, reason in err. */
	int (*start)(struct gpuos_ctrl *c, const void *image, char *err, size_t errlen);
	int (*stop)(struct gpuos_ctrl *c, char *err, size_t errlen);
	/* 1: the controller is the GPU itself (needs one; its queues and
	 * doorbells are in VRAM, so device scope orders enough) */
	int on_gpu;
	/* 1: the device string may list several controllers, "A+B+..." (pci:) */
	int lists;
	/* 1: map pins the pages it maps (VFIO): a mapped range cannot take
	 * fresh pages later (a service's client areas, boot/sys/sys_mem.c) */
	int pins;
};

/* One controller of the device: its registers, and what reports say of it. */
struct gpuos_ctrl_member {
	volatile uint32_t *regs;  /* BAR0 as the host maps it */
	uint64_t regs_rt;         /* BAR0 as the runtime sees it (GPU address, or == regs) */
	size_t regs_len;
	char name[48];            /* "pci:0000:01:00.0", "emu member 2" */
	/* the emulator's performance model (0: none, or a real drive) */
	double gbps;
	uint32_t iops, latency_us;
};

struct gpuos_ctrl {
	const struct gpuos_ctrl_ops *ops;
	uint32_t nmembers;        /* controllers behind the device string, >= 1 (set by open) */
	uint32_t stripe_kib;      /* an array's chunk size (nmembers > 1) */
	struct gpuos_ctrl_member member[GPUOS_CTRL_MAX_MEMBERS];
	struct gpuos_gpu *gpu;    /* NULL in host mode */
	void *priv;
	int force;                /* --force: skip the safety refusals of pci: */
	int dma_host_only;        /* set by open: the controller cannot DMA into VRAM
				     (pci: without P2P), so bounce buffers are host memory */
	int sim_vram;             /* see gpuos_boot_opts.sim_vram */
	int regs_gpu_readable;    /* the GPU may read the registers (emu: memory); a GPU
	                           * may not read another device's BAR on every platform */
	uint64_t next_iova;       /* for controllers that pick IOVAs themselves: starts at a random
	                           * base (gpuos_iova_base) */
	pthread_mutex_t iova_lock; /* next_iova: a group's runtimes map from their own threads */
	char notice[600];         /* set by open: a line to say once (gpuos_sys_bring_up prints it) */
};

/* Controllers that pick IOVAs themselves start each region on a 1 MiB
 * boundary and leave a 1 MiB gap after it: an overrun is a DMA fault, not
 * a neighbour's data. */
#define GPUOS_IOVA_ALIGN 0x100000ull
/* The first IOVA a region may take after one of len bytes at a. */
static inline uint64_t gpuos_iova_after(uint64_t a, uint64_t len)
{
	return a + GPUOS_ALIGN_UP(len, GPUOS_IOVA_ALIGN) + GPUOS_IOVA_ALIGN;
}

/* Where those IOVAs start: a random base for each controller opened, so
 * for each process. A controller may still write for a command of an
 * earlier process that has gone (QEMU's NVMe completing a read after a
 * reset cancelled it, an SSD's late DMA): had every process mapped the
 * same IOVAs, those bytes would land silently in whatever buffer the
 * process now there keeps at that address. With bases apart they hit an
 * unmapped IOVA: an IOMMU fault (VFIO; logged), a DMA fault (the
 * emulator's IOMMU-like table; counted). The base is a multiple of
 * GPUOS_IOVA_ALIGN in [GPUOS_IOVA_BASE_MIN, GPUOS_IOVA_BASE_MAX):
 *  - from 4 GiB: never a host pointer by accident, and above the x86 MSI
 *    window and the low reserved ranges IOMMUs report;
 *  - below 256 GiB (2^38): regions of up to 256 GiB in all still fit
 *    within 39 bits, the narrowest address width of an Intel IOMMU (and
 *    QEMU's intel-iommu default, aw-bits=39); AMD's is 48. VFIO's ranges
 *    (VFIO_IOMMU_GET_INFO) hold the allocator to what the IOMMU accepts;
 *    the emulator's table takes any 64-bit IOVA.
 * The same regions in the same order, at another base: nothing else about
 * a run depends on it. */
#define GPUOS_IOVA_BASE_MIN 0x100000000ull   /* 4 GiB */
#define GPUOS_IOVA_BASE_MAX 0x4000000000ull  /* 256 GiB */
static_assert(GPUOS_IOVA_BASE_MIN % GPUOS_IOVA_ALIGN == 0 && GPUOS_IOVA_BASE_MAX % GPUOS_IOVA_ALIGN == 0,
	      "IOVA bases on region boundaries");

/* The base a random 64-bit word picks (every word one of the range's
 * bases, each base as likely as the next but for 2^-46). */
static inline uint64_t gpuos_iova_base_of(uint64_t rnd)
{
	uint64_t n = (GPUOS_IOVA_BASE_MAX - GPUOS_IOVA_BASE_MIN) / GPUOS_IOVA_ALIGN;
	return GPUOS_IOVA_BASE_MIN + rnd % n * GPUOS_IOVA_ALIGN;
}

/* A fresh random base (getrandom; never blocks, not even before the
 * kernel's random pool is ready, as in a guest just booted). */
uint64_t gpuos_iova_base(void);

/* 1 where dev names a controller that is the GPU itself (ops->on_gpu),
 * else 0 (an unknown kind too): the one kind gpuos_identify needs a GPU for. */
int gpuos_device_on_gpu(const char *dev);

/* Open the controller named by dev. gpu may be NULL (host mode). Returns 0,
 * -EINVAL for a device string no controller knows, or the controller's error;
 * a one-line reason in err. */
int gpuos_ctrl_open(const char *dev, struct gpuos_gpu *gpu, int force, int sim_vram, struct gpuos_ctrl **out,
		    char *err, size_t errlen);
void gpuos_ctrl_close(struct gpuos_ctrl *c);

/* ---- DMA memory ---------------------------------------------------------------- */
enum gpuos_mem_kind {
	GPUOS_MEM_HOST = 0,  /* pinned host memory (plain memory in host mode) */
	GPUOS_MEM_VRAM = 1   /* GPU memory; host memory in host mode */
};

struct gpuos_dma {
	void *host;       /* host mapping, NULL for VRAM */
	uint64_t rt;      /* address in the runtime's space */
	uint64_t iova;    /* address the controller uses; 0 when not mapped */
	size_t len;
	int vram;
	int ctrl_mem;     /* from ops->alloc: ops->free releases it */
	struct gpuos_gpu *gpu; /* the GPU whose memory (VRAM, pinned) it is; NULL in host mode */
};

/* Allocate len bytes (rounded up to 4 KiB, zeroed) and map them for the
 * controller unless map == 0. 0 or -ENOMEM / the controller's map error. */
int gpuos_dma_alloc(struct gpuos_ctrl *c, size_t len, enum gpuos_mem_kind kind, int map, struct gpuos_dma *out);
/* The same on a given GPU's memory (a group's runtime on another GPU than
 * the controller's, docs/design.md "Scale-out"); gpuos_dma_alloc is it on
 * the controller's GPU. */
int gpuos_dma_alloc_on(struct gpuos_ctrl *c, struct gpuos_gpu *gpu, size_t len, enum gpuos_mem_kind kind, int map,
		       struct gpuos_dma *out);
void gpuos_dma_free(struct gpuos_ctrl *c, struct gpuos_dma *d);

/* Register operations of one member for the host side of bring-up (port.h's
 * MMIO primitives). */
static inline uint32_t gpuos_reg_read32(const struct gpuos_ctrl_member *m, uint32_t off)
{
	return gpuos_mmio_read_acquire32(m->regs + off / 4);
}
static inline void gpuos_reg_write32(const struct gpuos_ctrl_member *m, uint32_t off, uint32_t v)
{
	gpuos_mmio_write32(m->regs + off / 4, v);
}
/* 64-bit registers as two dwords, low first (NVMe 3.1). */
static inline uint64_t gpuos_reg_read64(const struct gpuos_ctrl_member *m, uint32_t off)
{
	return gpuos_mmio_read64(m->regs + off / 4);
}
static inline void gpuos_reg_write64(const struct gpuos_ctrl_member *m, uint32_t off, uint64_t v)
{
	gpuos_mmio_write64(m->regs + off / 4, v);
}

#endif /* GPUOS_BOOT_CTRL_H */
