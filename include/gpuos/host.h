/* SPDX-License-Identifier: MIT */
/*
 * gpuos/host.h - the host API: boot a runtime on a controller, hand clients
 * the mailbox and registered memory, park/resume, statistics, shutdown.
 * The `gpuos` command is built on it; embedding programs link libgpuos.
 *
 * Rules while the runtime runs on the GPU (notes/PLATFORM.md): no module
 * loads, no cudaFree, no device-wide synchronisation - or gpuos_park()
 * around them.
 *
 * Functions return 0 or a negative errno; a one-line reason goes to err.
 */
#ifndef GPUOS_HOST_H
#define GPUOS_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "gpuos/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gpuos_boot_opts {
	size_t size;              /* sizeof(struct gpuos_boot_opts) */
	const char *device;       /* emu:PATH[,k=v], null[:SIZE], pci:DDDD:BB:DD.F; an array of
	                           * controllers: emu:PATH,ssds=N[,stripe=KiB], pci:A+B+...[,stripe=KiB] */
	uint32_t warps;           /* service warps (0: 1) */
	uint32_t queues;          /* I/O queue pairs asked for, all controllers together (0: one per
	                           * warp and controller) */
	uint32_t depth;           /* entries per queue (0: 256, capped by MQES) */
	uint32_t slots;           /* in-flight commands per warp (0: 64) */
	uint32_t xfer_kib;        /* bytes per command in KiB (0: 128, capped by MDTS) */
	uint32_t mbox_slots;      /* mailbox slots (0: 1024) */
	uint64_t heap_bytes;      /* client memory shared with host clients (0: 64 MiB) */
	uint64_t dev_heap_bytes;  /* client memory in VRAM for GPU clients (0: none) */
	int mbox_vram;            /* mailbox in VRAM: fastest for GPU clients, no host clients */
	int shared_shm;           /* other processes attach (the service): the mailbox and heap in a
	                           * named POSIX segment in /dev/shm; else anonymous shared memory
	                           * (memfd), which needs no /dev/shm */
	uint32_t timeout_ms;      /* per command (0: the controller's CAP.TO) */
	int host_mode;            /* run the runtime on CPU threads even with a GPU */
	int require_gpu;          /* fail, rather than run on CPU threads, when no GPU can be used */
	int allow_raw;            /* READ_RAW allowed */
	int force;                /* pci: skip safety refusals */
	int quiet;                /* no notices on stderr */
	int sim_vram;             /* host mode, tests: VRAM buffers become the controller's "device
	                           * memory", moved by memcpy, so the emulator's device-memory
	                           * path runs without a GPU */
	int no_files;             /* no metadata warp: no file or model requests, one queue pair
	                           * and the files region (about 31 MiB of VRAM) saved */
	uint32_t part;            /* GPT partition holding the file system: 0 = the first holding
	                           * ext2/3/4 (or the whole device without a table), N = partition N */
	int no_zero_copy;         /* reads always go through the bounce buffers, even into client
	                           * memory the controller can reach (to measure or rule out zero copy) */
};

#define GPUOS_MAX_CTRL 16   /* controllers of an array */

/* One controller of the device (an array has several, DESIGN.md 10). */
struct gpuos_ctrl_info {
	char name[48];             /* "pci:0000:01:00.0", "emu member 1 of 4", or the device string */
	char model[41], serial[21], firmware[9];
	uint64_t namespace_lbas;   /* its own namespace */
	uint32_t io_queues;        /* granted by it */
	uint32_t mdts_bytes;       /* 0: no limit */
	/* the emulator's performance model of it (0: none, or a real drive) */
	double gbps;
	uint32_t iops, latency_us;
};

/* A controller's own counters since boot (gpuos_sys_ctrl_stats): the
 * emulator's, or a drive's SMART / health log (smart = 1: read_bytes in the
 * log's units of 512,000 bytes, rounded up; errors are media errors; no DMA
 * faults or lost completions are counted). */
struct gpuos_ctrl_stats {
	uint64_t io_cmds, read_bytes, errors, dma_faults, lost;
	int smart;
	/* the emulated controller's DMA engine (dma: 0 where there is none):
	 * commands whose data moved asynchronously, copy-engine pieces,
	 * gathered pieces, marks (batches), commands whose time had come
	 * while their data was still on the way, worker seconds busy */
	int dma;
	uint64_t dma_cmds, dma_copies, dma_gathered, dma_batches, dma_waits;
	double busy_s;
};

/* The device as the runtime serves it. For an array the top-level fields
 * describe the array: the first controller's identity, the striped
 * namespace, and the smallest limits of its members. */
struct gpuos_info {
	char model[41], serial[21], firmware[9];
	uint32_t version;          /* VS register */
	uint32_t mqes;             /* CAP.MQES + 1 */
	uint32_t dstrd;
	uint32_t mdts_bytes;       /* 0: no limit */
	uint32_t lba_bytes;
	uint64_t namespace_lbas;
	uint32_t nsid;
	uint32_t io_queues;        /* granted by the controller */
	uint32_t queues_used;
	uint32_t depth;
	uint32_t warps;
	uint32_t xfer_bytes;
	int gpu;                   /* 1: the runtime runs on the GPU */
	char gpu_name[128];
	uint32_t nctrl;            /* controllers (1, or an array's members) */
	uint32_t stripe_bytes;     /* an array's chunk size (nctrl > 1), else 0 */
	struct gpuos_ctrl_info ctrl[GPUOS_MAX_CTRL];
};

struct gpuos_stats {
	uint64_t requests, bytes, errors, commands, timeouts, doorbells, polls;
	uint64_t zero_copy;        /* commands the controller wrote straight into the destination */
	/* The life of a command (DESIGN.md 11) */
	uint64_t strays;           /* completions that matched nothing in flight */
	uint64_t aborts;           /* NVMe Aborts sent for commands that timed out */
	uint64_t resets;           /* controller resets the runtime did */
	uint64_t retries;          /* commands sent again after a failure with DNR clear */
	uint32_t state;            /* enum gpuos_rt_state */
	uint32_t notices;          /* GPUOS_NOTICE_* */
};

struct gpuos_sys;

void gpuos_boot_opts_default(struct gpuos_boot_opts *o);

/* Open the controller, bring it up, create the queues, start the runtime. */
int gpuos_boot(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen);

/* Bring-up only (no runtime): fill *info and shut the controller down again. */
int gpuos_identify(const struct gpuos_boot_opts *o, struct gpuos_info *info, char *err, size_t errlen);

/* Drain and stop the runtime, delete the queues, CC.SHN, free everything. */
int gpuos_shutdown(struct gpuos_sys *s, char *err, size_t errlen);

/* Park: the runtime finishes in-flight commands, keeps its state, exits.
 * Resume: it continues where it stopped. */
int gpuos_park(struct gpuos_sys *s, char *err, size_t errlen);
int gpuos_resume(struct gpuos_sys *s, char *err, size_t errlen);

const struct gpuos_info *gpuos_sys_info(const struct gpuos_sys *s);
void gpuos_sys_stats(const struct gpuos_sys *s, struct gpuos_stats *st);
/* One line describing the controller's own counters (emulator: DMA faults...),
 * of all the controllers of an array together. */
void gpuos_sys_describe_ctrl(const struct gpuos_sys *s, char *buf, size_t len);
/* Controller i's own counters since boot (i < info.nctrl). 0, -EINVAL (no
 * such controller), -EOPNOTSUPP (gpu-null, or a drive without a SMART log),
 * -EIO / -ETIMEDOUT (the log could not be read). Not from two threads at once. */
int gpuos_sys_ctrl_stats(const struct gpuos_sys *s, uint32_t i, struct gpuos_ctrl_stats *st);

/* The mailbox as host code sees it (host clients post with gpuos/gpuos.h). */
struct gpuos_mbox *gpuos_sys_mbox(const struct gpuos_sys *s);

/* Client memory registered with the runtime: host mapping + runtime-space
 * address of the same bytes. */
void *gpuos_sys_heap(const struct gpuos_sys *s, uint64_t *rt_addr, uint64_t *len);

/* The mailbox in runtime space (what GPU clients are given). */
uint64_t gpuos_sys_mbox_rt(const struct gpuos_sys *s);

/* VRAM client memory (dev_heap_bytes), runtime-space address; 0 if none. */
uint64_t gpuos_sys_dev_heap(const struct gpuos_sys *s, uint64_t *len);

/* GPU mode: allocate/copy/free device memory and launch a kernel of the
 * runtime image as a client (stream of its own), wait for it. */
int gpuos_sys_dev_alloc(struct gpuos_sys *s, size_t len, uint64_t *rt);
void gpuos_sys_dev_free(struct gpuos_sys *s, uint64_t rt);
int gpuos_sys_copy(struct gpuos_sys *s, void *dst, const void *src, size_t len, int to_device);
int gpuos_sys_launch_client(struct gpuos_sys *s, const char *entry, uint64_t arg, unsigned grid,
			    unsigned block, char *err, size_t errlen);
int gpuos_sys_wait_client(struct gpuos_sys *s, char *err, size_t errlen);

/* The shared-memory name and layout, for other processes (see boot/service.c). */
const char *gpuos_sys_shm_name(const struct gpuos_sys *s);

/* No other process will attach: drop the segment's name now, so that
 * nothing stays behind in /dev/shm if this process is killed (the mapping
 * lives on until it exits). gpuos_sys_shm_name() is "" afterwards. */
void gpuos_sys_shm_private(struct gpuos_sys *s);

/* GPU mode: the runtime kernel stopped on its own (a fault); -EIO + reason. */
int gpuos_sys_check(struct gpuos_sys *s, char *err, size_t errlen);

/* ---- apps (gpuos run, DESIGN.md section 3) ----------------------------------------
 * An app image (a cubin built against gpuos/gpuos.h and gpuos/app.h) loaded
 * into a running runtime on the GPU, one entry of it launched as a client on
 * a stream of its own. Load and unload park the runtime around the Driver
 * API calls (loading a module while it spins deadlocks, notes/PLATFORM.md):
 * requests in flight finish first, new ones wait in the mailbox. One thread
 * at a time per runtime; boot/image.h checks an image before it is loaded.
 */
struct gpuos_app;

/* Compute capability of the runtime's GPU (90 for sm_90); 0 in host mode. */
int gpuos_sys_gpu_sm(const struct gpuos_sys *s);
/* 1 if the mailbox is in VRAM (mbox_vram on a GPU): GPU clients only. */
int gpuos_sys_mbox_device(const struct gpuos_sys *s);

/* Load image (the file's bytes; only read during the call) and find entry,
 * a kernel taking one pointer. *max_threads (may be NULL): the most threads
 * per block the driver allows it. Raises the GPU stack limit when the entry
 * needs more. Returns 0 and *out; -ENODEV in host mode; -EIO (the driver's
 * reason in err); -ENOMEM; or what park/resume return. */
int gpuos_sys_app_load(struct gpuos_sys *s, const void *image, const char *entry, struct gpuos_app **out,
		       unsigned *max_threads, char *err, size_t errlen);
/* Launch the entry with arg (a runtime-space pointer) on grid x block
 * threads; returns at once. 0 or -EIO. */
int gpuos_sys_app_launch(struct gpuos_sys *s, struct gpuos_app *a, uint64_t arg, unsigned grid, unsigned block,
			 char *err, size_t errlen);
/* Wait for the launch to end. 0, or -EIO when the kernel failed (a fault
 * leaves the GPU context unusable: shut down next). */
int gpuos_sys_app_wait(struct gpuos_sys *s, struct gpuos_app *a, char *err, size_t errlen);
/* Unload (parked) and free a; NULL is a no-op. 0 or what park/resume return. */
int gpuos_sys_app_unload(struct gpuos_sys *s, struct gpuos_app *a, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* GPUOS_HOST_H */
