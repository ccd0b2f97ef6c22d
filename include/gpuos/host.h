/* SPDX-License-Identifier: MIT */
/*
 * gpuos/host.h - the host API: boot a runtime on a controller, hand clients
 * the mailbox and registered memory, park/resume, statistics, shutdown.
 * The `gpuos` command is built on it; embedding programs link libgpuos.
 *
 * Rules while the runtime runs on the GPU (docs/platform.md): no module
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
	uint32_t heap_shares;     /* split it in this many client shares (a service, 0 or 1: no
	                           * split); the runtime counts and releases handles per share */
	uint64_t dev_heap_bytes;  /* client memory in VRAM for GPU clients (0: none) */
	int mbox_vram;            /* mailbox in VRAM: fastest for GPU clients, no host clients */
	uint32_t timeout_ms;      /* per command (0: the controller's CAP.TO) */
	int host_mode;            /* run the runtime on CPU threads even with a GPU */
	int require_gpu;          /* fail, rather than run on CPU threads, when no GPU can be used */
	int allow_raw;            /* READ_RAW allowed */
	const char *root;         /* clients see only this directory of the file system, as "/"
	                           * (NULL or "/": all of it); absolute, under GPUOS_RT_ROOT_MAX
	                           * bytes; refused with allow_raw, which would read around it */
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
	uint32_t gpu_clients;     /* a service's GPU clients (with heap_shares > 1): areas of their
	                           * own (mailbox and share) in VRAM, which kernels of other
	                           * processes map and post to (docs/security.md); in host mode
	                           * host memory that stands in for it */
	uint64_t gpu_area_bytes;  /* each one's area (0: GPUOS_GPU_AREA_DEFAULT), rounded up to
	                           * GPUOS_GPU_AREA_ALIGN */
	uint32_t files_mib;       /* device memory for the open files' extent maps, MiB (0: 6, 262144
	                           * extents): a file opens when its map fits beside the others' */
	uint32_t map_extents;     /* tests: the same pool counted in extents, over files_mib */
	uint32_t gpu;             /* the CUDA device the runtime runs on (0: the first) */
};
#define GPUOS_GPU_AREA_DEFAULT (64ull << 20)
#define GPUOS_GPU_AREA_ALIGN   (2ull << 20) /* the H100's VRAM allocation granularity */

#define GPUOS_MAX_CTRL 16   /* controllers of an array */

/* One controller of the device (an array has several, docs/design.md). */
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
	/* the emulated controller's own account of the command stream: I/O
	 * commands fetched, completions it duplicated on purpose (faults=dup*),
	 * and commands fetched while another of the same CID on the same queue
	 * was unanswered (a host bug the spec forbids); 0 for other controllers */
	uint64_t io_fetched, dups, cid_conflicts;
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
	int mps;                   /* 1: an MPS daemon ran when the runtime's context was made
	                            * (kernels of other processes can run beside it) */
	char mps_dir[108];         /* its pipe directory */
	uint32_t nctrl;            /* controllers (1, or an array's members) */
	uint32_t stripe_bytes;     /* an array's chunk size (nctrl > 1), else 0 */
	struct gpuos_ctrl_info ctrl[GPUOS_MAX_CTRL];
};

struct gpuos_stats {
	uint64_t requests, bytes, errors, commands, timeouts, doorbells, polls;
	uint64_t zero_copy;        /* commands the controller wrote straight into the destination */
	/* The life of a command (docs/design.md) */
	uint64_t strays;           /* completions that matched nothing in flight */
	uint64_t aborts;           /* NVMe Aborts sent for commands that timed out */
	uint64_t resets;           /* controller resets the runtime did */
	uint64_t retries;          /* commands sent again after a failure with DNR clear */
	uint32_t state;            /* enum gpuos_rt_state */
	uint32_t notices;          /* GPUOS_NOTICE_* */
	uint64_t duplicates;       /* completions for a command already completed, or already queued
	                            * to be sent again (struct gpuos_rt_stats) */
	uint64_t untrusted;        /* requests failed with GPUOS_ST_DUP_CQE */
	uint32_t dup_by_ctrl[GPUOS_MAX_CTRL]; /* duplicates by controller of an array (info.ctrl[i]) */
	/* state FATAL: why (enum gpuos_rt_fatal | controller << 8 | admin
	 * status << 16; gpuos_fatal_name) and the CSTS read then */
	uint32_t fatal_why, fatal_csts;
};

/* The release; libgpuos's gpuos.pc and `gpuos --version` say it too. */
#define GPUOS_VERSION "0.15"

struct gpuos_sys;

void gpuos_boot_opts_default(struct gpuos_boot_opts *o);

/* Open the controller, bring it up, create the queues, start the runtime.
 * 0 or a negative errno with the reason in err; -EPERM when the program
 * started CUDA before with lazy module loading (docs/embedding.md). */
int gpuos_boot(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen);

/* Bring-up only (no runtime): fill *info and shut the controller down again. */
int gpuos_identify(const struct gpuos_boot_opts *o, struct gpuos_info *info, char *err, size_t errlen);

/* Drain and stop the runtime, delete the queues, CC.SHN, free everything. */
int gpuos_shutdown(struct gpuos_sys *s, char *err, size_t errlen);

/* Park: the runtime finishes in-flight commands, keeps its state, exits.
 * Resume: it continues where it stopped. */
int gpuos_park(struct gpuos_sys *s, char *err, size_t errlen);
int gpuos_resume(struct gpuos_sys *s, char *err, size_t errlen);

/* ---- several runtimes on one device (docs/design.md, "Scale-out") ----
 * The device's controllers are brought up once and their I/O queue pairs
 * divided among n runtimes, one per entry of gpus (CUDA devices; a device
 * may be named twice; ignored in host mode, where every runtime runs on
 * CPU threads). No queue pair is shared: each runtime gets an equal share
 * of what the controllers grant, with o's options for the rest. Each is a
 * struct gpuos_sys of its own (its mailbox, heap, clients), for everything
 * above but gpuos_shutdown. A reset would take every runtime's queue pairs
 * with it, so a group's runtimes abort and reset nothing: a command that
 * times out fails (docs/design.md). Parking one parks those on its GPU. */
#define GPUOS_GROUP_MAX 8u
struct gpuos_group;
int gpuos_boot_group(const struct gpuos_boot_opts *o, uint32_t n, const uint32_t *gpus, struct gpuos_group **out,
		     char *err, size_t errlen);
uint32_t gpuos_group_size(const struct gpuos_group *g);
struct gpuos_sys *gpuos_group_sys(const struct gpuos_group *g, uint32_t i);
/* Stop every runtime, then delete their queues and shut the controllers
 * down. 0 or the first error. */
int gpuos_group_shutdown(struct gpuos_group *g, char *err, size_t errlen);

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

/*
 * The caller's own memory as a destination of reads and loads: host memory
 * (malloc, mmap: page aligned) or, with GPUOS_REGISTER_DEVICE, device memory
 * (cudaMalloc) of the runtime's GPU. The runtime is parked while the region
 * is added and resumed after. Where the controller can reach the memory
 * (the emulator, VFIO for host memory) whole LBAs land there directly (zero
 * copy); otherwise reads bounce. Requests name the memory by its runtime
 * address: the pointer itself (host mode, device memory, host memory under
 * the GPU's unified addressing). Only the runtime's own mailbox may name it;
 * a service's clients keep to their shares. A request into memory that is
 * not registered is refused (BAD_DST).
 * Host memory the caller pinned already (cudaHostAlloc) is taken as it is.
 * Returns 0, -EINVAL (len 0, host memory not page aligned, an overlap with a
 * registered region or the runtime's own memory, GPUOS_REGISTER_DEVICE on
 * memory that is not the GPU's), -ENOSPC (GPUOS_SYS_USER_REGIONS are
 * registered), -EOPNOTSUPP (device memory without a GPU), -EIO (park, pin
 * or resume failed: the region is not registered). gpuos_sys_unregister(ptr)
 * undoes it: -ENOENT if ptr was not registered, -EINVAL for gpuos_sys_alloc memory, -EIO if the runtime did not
 * resume (the region is gone all the same). Not from two threads at once, nor while requests into the
 * region are in flight.
 */
#define GPUOS_REGISTER_DEVICE (1u << 0)
#define GPUOS_SYS_USER_REGIONS 16u
int gpuos_sys_register(struct gpuos_sys *s, void *ptr, size_t len, uint32_t flags);
int gpuos_sys_unregister(struct gpuos_sys *s, void *ptr);

/*
 * Memory of the system's as a destination: len bytes of VRAM of the
 * runtime's GPU (GPUOS_REGISTER_DEVICE) or of page-aligned host memory
 * (pinned and mapped for the GPU where there is one), zeroed and registered
 * as gpuos_sys_register does (one of GPUOS_SYS_USER_REGIONS). *ptr is its
 * runtime address (a device pointer, or the host pointer). gpuos_sys_free
 * unregisters and frees it with the runtime parked (cudaFree beside the
 * spinning runtime deadlocks, docs/platform.md), once the stream-ordered
 * loads have ended. Returns 0, -EINVAL (len
 * 0, unknown flags; free: ptr not from gpuos_sys_alloc), -EOPNOTSUPP
 * (device memory in host mode), -ENOMEM, -ENOSPC, -EIO (as register).
 * Not from two threads at once.
 */
int gpuos_sys_alloc(struct gpuos_sys *s, size_t len, uint32_t flags, void **ptr);
int gpuos_sys_free(struct gpuos_sys *s, void *ptr);

/*
 * A client of the service instead of a runtime of one's own (docs/design.md
 * section 12, docs/service.md "Your own memory"): gpuos_connect attaches to
 * the service at socket (NULL: the default socket) and returns a system
 * that takes the calls of "loading from host code" below, gpuos_dequant,
 * gpuos_sys_sync and gpuos_sys_error, and these on memory:
 * - gpuos_sys_alloc: a memfd (host) or cudaMalloc (GPUOS_REGISTER_DEVICE,
 *   where the service's runtime is on a GPU and this process has one) of
 *   this process's own, registered with the service;
 * - gpuos_sys_register(GPUOS_REGISTER_DEVICE): device memory of this
 *   process (a cudaMalloc buffer, a tensor's storage), by its IPC handle;
 * - gpuos_sys_register_fd: host memory at ptr that maps fd from offset (a
 *   memfd sealed with F_SEAL_SHRINK);
 * - gpuos_sys_unregister: the service lets go; memory from gpuos_sys_alloc
 *   stays this process's, to be registered again or freed;
 * - gpuos_sys_free, gpuos_shutdown (detach: the service drops every range).
 * A client registers GPUOS_SYS_CLIENT_REGIONS ranges at once; what it
 * unregistered it keeps without limit. gpuos_park and gpuos_resume do
 * nothing: no runtime spins in this process, and CUDA here obeys no rule.
 * Loads are posted through the client's own mailbox: the service's CPU is
 * not on the data path. Other gpuos_sys calls are not for a client.
 * 0 or -errno with the reason in err (as gpuos_service_attach).
 */
int gpuos_connect(const char *socket, struct gpuos_sys **out, char *err, size_t errlen);
int gpuos_sys_register_fd(struct gpuos_sys *s, void *ptr, int fd, uint64_t offset, size_t len);
/* 1 for a system gpuos_connect made. */
int gpuos_sys_is_client(const struct gpuos_sys *s);

/* ---- loading from host code, no kernel to write (docs/embedding.md) -------------
 * The calling thread opens the model or file through the runtime's own
 * mailbox (a host-memory one: -EOPNOTSUPP when it is in VRAM), checks every
 * name, range and destination, then loads everything with as many requests
 * in flight as the mailbox takes. Paths, names and answers travel in a
 * buffer of the system's, registered on the first call (one of
 * GPUOS_SYS_USER_REGIONS) and grown when a model's tables need more.
 *
 * dst[i] is registered memory (gpuos_sys_register, gpuos_sys_alloc, the
 * client heap) with room for the whole tensor or range; anything else is
 * refused before a byte moves. A model opens as gpuos_model_open does
 * (a gguf-split model from any shard or its base name). Tensors of a
 * one-file model that follow each other in the file and in dst (in one
 * registered region) are read as one range of the file: a model laid out
 * as its file is loads at a file read's rate.
 *
 * stream NULL: the call returns when the data has landed (or failed).
 * stream a cudaStream_t (the GPU runtime; in host mode it is ignored and
 * the call is synchronous): the checks are made and the call returns; the
 * loads start once the work queued on the stream before the call has
 * finished, and work queued on it after the call sees the data (a host
 * function on the stream carries them). A failure of such a load is
 * reported by gpuos_sys_sync, which waits for every stream-ordered load.
 *
 * Returns 0; -EINVAL (n 0, a NULL argument, a range that overflows),
 * -ENOENT (no such file, model or tensor), -ERANGE (a range past the end
 * of the file), -EFAULT (a destination outside registered memory, or too
 * small for what lands there), -ENAMETOOLONG, -EUCLEAN (a corrupt model or
 * file system), -EIO, -ETIMEDOUT, -EOPNOTSUPP, -ENOMEM, or another
 * negative errno for what the runtime answered; gpuos_sys_error says why
 * in one line. Any thread; calls from several threads take turns for the
 * checks and load side by side.
 */
int gpuos_model_load_host(struct gpuos_sys *s, const char *path, uint32_t n, const char *const names[],
			  void *const dst[], void *stream);
/* Bytes [offset[i], offset[i] + length[i]) of the file at path into dst[i]. */
int gpuos_file_load_host(struct gpuos_sys *s, const char *path, uint32_t n, const uint64_t offset[],
			 const uint64_t length[], void *const dst[], void *stream);
/* A model's header and tables as the runtime parsed them (struct
 * gpuos_gguf_export, gpuos/gguf.h: tensors, KVs, arena) copied into buf;
 * *needed: the export's size. -ENOSPC when len < *needed (buf untouched);
 * else as gpuos_model_load_host. */
int gpuos_model_info_host(struct gpuos_sys *s, const char *path, void *buf, size_t len, size_t *needed);
/*
 * A model opened once for many loads. gpuos_model_open_host opens path as
 * gpuos_model_load_host does and keeps, in this process, the model's tables
 * (gpuos_model_info_id copies them, as gpuos_model_info_host) and, for a
 * one-file model (a GGUF or safetensors file), a handle on its file that
 * the runtime keeps open, checked at the open to be the file the tables
 * were parsed from (same inode, size and mtime). gpuos_model_load_id then
 * loads as gpuos_model_load_host, with no request but its reads: no path
 * looked up, no tables parsed or fetched again. At most 8 such handles are
 * kept by one system; past that, the least recently used model gives its
 * handle back and opens its file again at its next load, refused with
 * -ESTALE if the path names another file by then. A gguf-split model or
 * a checkpoint through its index.json loads by its path each time, as
 * gpuos_model_load_host. *needed (when not NULL): the size of the tables.
 * The handle is the caller's alone: the runtime refuses it to anyone
 * else, and a service closes it when its client leaves.
 * gpuos_model_close_host waits for the id's loads in flight and closes its
 * handle; an id is never used again. gpuos_shutdown forgets every one.
 * Returns as gpuos_model_load_host, and -EBADF for an id not open.
 */
int gpuos_model_open_host(struct gpuos_sys *s, const char *path, uint32_t *id, size_t *needed);
int gpuos_model_info_id(struct gpuos_sys *s, uint32_t id, void *buf, size_t len, size_t *needed);
int gpuos_model_load_id(struct gpuos_sys *s, uint32_t id, uint32_t n, const char *const names[], void *const dst[],
			void *stream);
int gpuos_model_close_host(struct gpuos_sys *s, uint32_t id);
/* A file's size in bytes. As gpuos_model_load_host. */
int gpuos_file_size_host(struct gpuos_sys *s, const char *path, uint64_t *size);
/*
 * Convert n elements of model type `type` (a ggml id of gpuos/gguf.h) at src
 * into dst as out_type (GPUOS_GGML_TYPE_F32, _F16 or _BF16): the values
 * ggml's dequantize_row_* give (gpuos/quant.h, every float32 rounding in
 * ggml's order, none fused), rounded to nearest even for 16-bit outputs. A
 * NaN is written as the output's quiet NaN (0x7fc00000, 0x7e00, 0x7fc0)
 * whatever its payload was. Types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
 *
 * src and dst are device memory on a GPU system (the caller's own
 * cudaMalloc or tensor memory, any memory this GPU can write; mapped pinned
 * host memory too): the GPU converts them with a kernel of the runtime
 * image on a stream of the library's own, beside a spinning runtime, and the
 * call waits for that stream only. Host memory in host mode, or s NULL (no
 * system needed), or both src and dst in ordinary host memory on a GPU
 * system: CPU threads convert it, with the same code. n must be a multiple
 * of the type's block (1, 32 or 256 elements); src_bytes at least the
 * bytes of n elements; src 2-byte aligned (4 for F32), dst aligned to its
 * element. n 0 does nothing.
 *
 * Returns 0 when dst holds the result; -EINVAL (an unknown type or output
 * type, n not whole blocks, src_bytes too small, a NULL or misaligned
 * pointer), -ENOTSUP (a type with no dequantiser: IQ*, TQ*, MXFP4, Q8_1,
 * integers...), -EFAULT (one of src and dst is memory the GPU cannot reach,
 * the other the GPU's), -EIO (a CUDA failure). gpuos_sys_error says why in
 * one line. Any thread; calls from several threads take turns on the GPU.
 */
int gpuos_dequant(struct gpuos_sys *s, uint32_t type, const void *src, uint64_t src_bytes, void *dst,
		  uint32_t out_type, uint64_t n);
/* Wait for the stream-ordered loads of this system to end: 0, or the
 * first failure since the last gpuos_sys_sync (gpuos_sys_error says why). */
int gpuos_sys_sync(struct gpuos_sys *s);
/* The reason of the calling thread's last failed call of this section;
 * "" when there was none. Valid until its next such call. */
const char *gpuos_sys_error(const struct gpuos_sys *s);

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

/* Client share k (0-based) of heap_shares: the memory its requests may
 * name, its host address, and its runtime address and length; NULL when k
 * is out of range. In a runtime with client areas (heap_shares > 1) that is
 * the area past the client's mailbox. */
void *gpuos_sys_share(const struct gpuos_sys *s, uint32_t k, uint64_t *rt_addr, uint64_t *len);

/* A service's client areas (docs/security.md, "Isolation between
 * clients"): area k (0-based) holds client k + 1's own mailbox, then its
 * share. Its memfd (what the client maps, and all it maps), its runtime
 * address and length, and where the share starts in it. -1 when k is out of
 * range or the runtime has no client areas. */
int gpuos_sys_client_area(const struct gpuos_sys *s, uint32_t k, uint64_t *rt, uint64_t *len, uint64_t *share_off);
/* GPU clients (gpu_clients): areas heap_shares .. heap_shares + gpu_clients
 * - 1. On a GPU such an area is VRAM and its descriptor one that
 * cuMemImportFromShareableHandle takes; in host mode it is a memfd. Either
 * way its mailbox has GPUOS_MBOX_F_DEVICE. gpuos_sys_client_gpu: 1 if area
 * k is one. */
int gpuos_sys_client_gpu(const struct gpuos_sys *s, uint32_t k);
uint32_t gpuos_sys_gpu_clients(const struct gpuos_sys *s);
/* Client k's rights from now on: its peer credentials (uid, gid, groups)
 * and GPUOS_RT_CLIENT_* flags, written before the client learns of its
 * area; then the runtime looks at its mailbox. 0, or -errno (the area is
 * closed and not renewed, or the GPU took no copy). */
struct gpuos_rt_client;
int gpuos_sys_client_admit(struct gpuos_sys *s, uint32_t k, const struct gpuos_rt_client *c);
/* Client k left: its rights go, and the runtime takes nothing more from
 * its mailbox. */
void gpuos_sys_client_close(struct gpuos_sys *s, uint32_t k);
/* Then (it closes k first if need be): the runtime parked, so that what it
 * took is finished, fresh memory for the area (the old memfd's pages stay
 * with whoever still maps them, and reach nothing), the runtime resumed and
 * told to take from the new ring. 0, or -errno with why (the area must not
 * be given out again). */
int gpuos_sys_client_renew(struct gpuos_sys *s, uint32_t k, char *err, size_t errlen);
/* The same for the n areas ks[], all under one park (a park costs every
 * client its time). On failure some may be renewed and others not: renew
 * them one by one to learn which cannot be. */
int gpuos_sys_client_renew_n(struct gpuos_sys *s, const uint32_t *ks, uint32_t n, char *err, size_t errlen);

/* Memory of client k's own (a service's client, docs/service.md,
 * "Your own memory") as a destination of its requests alone: the runtime
 * refuses it to every other client (BAD_DST), and the controller writes it
 * directly where it can reach it. Host memory is a memfd of the client's
 * (fd; sealed with F_SEAL_SHRINK, so that it cannot shrink under the
 * mapping), mapped here from offset; VRAM is an allocation the client
 * exported with cudaIpcGetMemHandle (ipc), offset into it. len is a
 * multiple of the page size. *rt is where its requests name it (offset 0
 * of the range). The runtime is parked meanwhile. Returns 0, -EINVAL,
 * -EPERM (not a shmem memfd with the seal), -ERANGE (the range passes the end of
 * the file or allocation), -ENOSPC (the client holds
 * GPUOS_SYS_CLIENT_REGIONS), -E2BIG (on a GPU, where host memory is
 * pinned: more than a quarter of the machine's memory for one client),
 * -EBUSY (all GPUOS_SYS_USER_REGIONS are in use), -EEXIST (the range
 * overlaps one registered already: an allocation lent twice), -EOPNOTSUPP (VRAM without a GPU), -EIO. Unregister gives it back;
 * renewing the client's area (it left) drops all of them. The service's
 * loop calls these, one at a time. */
#define GPUOS_SYS_CLIENT_REGIONS 4u
struct gpuos_client_mem {
	int vram;
	int fd;                               /* host memory: the memfd, -1 for VRAM */
	unsigned char ipc[64];                /* VRAM: cudaIpcMemHandle_t */
	uint64_t offset, len;
};
int gpuos_sys_client_register(struct gpuos_sys *s, uint32_t k, const struct gpuos_client_mem *m, uint64_t *rt);
int gpuos_sys_client_unregister(struct gpuos_sys *s, uint32_t k, uint64_t rt);
/* Every range client k lent goes, under a park of its own: for an area
 * that could not be renewed (its renewal drops them otherwise). 0 or -EIO. */
int gpuos_sys_client_forget(struct gpuos_sys *s, uint32_t k);

/* GPU mode: the runtime kernel stopped on its own (a fault); -EIO + reason. */
int gpuos_sys_check(struct gpuos_sys *s, char *err, size_t errlen);

/* ---- apps (gpuos run, docs/apps.md) ----------------------------------------------
 * An app image (a cubin built against gpuos/gpuos.h and gpuos/app.h) loaded
 * into a running runtime on the GPU, one entry of it launched as a client on
 * a stream of its own. Load and unload park the runtime around the Driver
 * API calls (loading a module while it spins deadlocks, docs/platform.md):
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
/* 1 while the launch runs (0 once it ended, failed or not). */
int gpuos_sys_app_running(struct gpuos_sys *s, struct gpuos_app *a);
/* Unload (parked) and free a; NULL is a no-op. 0 or what park/resume return. */
int gpuos_sys_app_unload(struct gpuos_sys *s, struct gpuos_app *a, char *err, size_t errlen);

/* ---- the shared-memory segment of a runtime (a service's clients map it) -------
 * A header page, the mailbox, and the client heap (the memory clients name
 * as destinations). Another process maps it by name (given by the service's
 * control socket) and posts with gpuos/gpuos.h; addresses in requests are
 * runtime-space: rt_base + (offset into the segment). */
#define GPUOS_SHM_MAGIC 0x6d687367u /* "gshm" */
#define GPUOS_SHM_MBOX_OFF 4096u

struct gpuos_shm_hdr {
	uint32_t magic;
	uint32_t version;   /* GPUOS_ABI_VERSION */
	uint64_t mbox_off;  /* byte offset of struct gpuos_mbox */
	uint64_t heap_off;  /* byte offset of the client heap */
	uint64_t heap_len;
	uint64_t rt_base;   /* runtime-space address of byte 0 of the segment */
};

/* ---- the service (gpuos boot) and its clients, in other processes ---------------
 * One runtime behind a control socket (boot/service.c; docs/security.md says
 * who may do what). Only root, the service's own uid and the members of its
 * group get in (SO_PEERCRED); each attached client gets one share of the
 * client heap and the segment's descriptor, never a name to open. */
#define GPUOS_DEFAULT_SOCKET "/run/gpuos/gpuos.sock"
#define GPUOS_SOCKET_NAME "gpuos.sock"      /* in $XDG_RUNTIME_DIR (gpuos_service_default_socket) */
#define GPUOS_SERVICE_SHARES 8u         /* client shares of a service's heap */
#define GPUOS_CLIENT_TIMEOUT_MS 30000   /* a client waits this long for the service's answer */

struct gpuos_peer {
	uint32_t uid, gid, pid;   /* of the client process, at connect() */
};

struct gpuos_mps;
struct gpuos_service_opts {
	const char *socket;       /* NULL: gpuos_service_default_socket's (its directory made 0755
	                           * when it is GPUOS_DEFAULT_SOCKET's) */
	uint32_t mode;            /* the socket's permission bits (0: 0660) */
	const char *group;        /* a group whose members may connect (NULL: "gpuos" if it exists) */
	uint32_t client_timeout_ms; /* disconnect a client that leaves a request unfinished or a
	                           * reply unread, or idles with no share, this long (0: 10 s) */
	int no_perms;             /* 1: ext4 mode bits are not checked against clients' credentials */
	/* A `run` request: the app runs in client share `share` (gpuos_sys_share);
	 * returns the reply line with its '\n' (malloc'ed), or NULL. */
	char *(*run)(void *ctx, struct gpuos_sys *s, const struct gpuos_peer *who, uint32_t share,
		     const char *line);
	void *run_ctx;
	/* What `status` says of the service besides its runtime (NULL: not said) */
	const char *device;       /* the device string it was booted on */
	const struct gpuos_mps *mps; /* what boot found of MPS (gpuos_mps_setup) */
};

/* The default control socket (docs/service.md), in buf: $GPUOS_SOCKET
 * where set; else, for a uid other than root, $XDG_RUNTIME_DIR/gpuos.sock
 * (for a client: only where that socket exists); else
 * GPUOS_DEFAULT_SOCKET. service: 1 for the service's side, 0 for a
 * client's. Returns which rule chose it (GPUOS_SOCKET_FROM_*), or
 * -ENAMETOOLONG when it does not fit a socket's address. */
enum { GPUOS_SOCKET_FROM_ENV = 1, GPUOS_SOCKET_FROM_XDG = 2, GPUOS_SOCKET_FROM_SYSTEM = 3 };
int gpuos_service_default_socket(int service, char *buf, size_t len);

/* ---- CUDA MPS for the service (boot/mps.c, docs/service.md) ---------------------
 * Kernels of other processes run beside the runtime's only when both are
 * clients of one MPS daemon, and a process becomes one when CUDA starts in it
 * while a daemon answers at its pipe directory: so `gpuos boot` settles MPS
 * before it makes its CUDA context. */
enum gpuos_mps_state {
	GPUOS_MPS_HOST = 0,       /* none: the runtime runs in host mode */
	GPUOS_MPS_OFF = 1,        /* --no-mps */
	GPUOS_MPS_JOINED = 2,     /* a daemon answered at dir */
	GPUOS_MPS_STARTED = 3,    /* none answered; boot started one at dir */
	GPUOS_MPS_FAILED = 4      /* none answered and none could be started (why) */
};
struct gpuos_mps {
	int state;                /* enum gpuos_mps_state */
	char dir[108];            /* the pipe directory (JOINED, STARTED, FAILED) */
	char log_dir[108];        /* STARTED, FAILED: the daemon's log directory */
	char why[256];            /* FAILED: the reason, one line */
};
/* 1 if an MPS control daemon answers at dir (its control endpoint, a socket
 * that accepts or a FIFO with a reader); 0 if none does (no endpoint, or a
 * stale one); -EACCES (one we may not use), -ENAMETOOLONG. Needs no GPU. */
int gpuos_mps_probe(const char *dir);
/* Run `prog -d` (the MPS control daemon; NULL: nvidia-cuda-mps-control from
 * PATH) with CUDA_MPS_PIPE_DIRECTORY=dir and CUDA_MPS_LOG_DIRECTORY=log_dir
 * (both made, 0755, where missing), then wait up to wait_ms for it to answer
 * at dir. 0, or -ENOENT (no such program), -EIO (it failed or never
 * answered), -errno; the reason in err. */
int gpuos_mps_start(const char *prog, const char *dir, const char *log_dir, unsigned wait_ms, char *err,
		    size_t errlen);
/* Does device (a --device string: emu:IMAGE[,k=v...], null[:SIZE],
 * gpu-null, pci:DDDD:BB:DD.F[+...][,k=v]) parse? Its syntax alone: nothing
 * is opened, no file looked at. 0, or -EINVAL with the reason in err. */
int gpuos_device_check(const char *device, char *err, size_t errlen);
/* Settle MPS for a runtime about to boot (before any CUDA call of this
 * process): host mode (host_mode, or no NVIDIA GPU, or no runtime image in
 * this binary): HOST; no_mps: OFF; a daemon at $CUDA_MPS_PIPE_DIRECTORY
 * (default /tmp/nvidia-mps): JOINED; else one is started there, logging to
 * $CUDA_MPS_LOG_DIRECTORY (default /tmp/nvidia-log): STARTED, or FAILED
 * (never fatal). CUDA_MPS_PIPE_DIRECTORY is set in this process to the
 * directory used. The program run: $GPUOS_MPS_CONTROL, else
 * nvidia-cuda-mps-control. */
void gpuos_mps_setup(struct gpuos_mps *m, int host_mode, int no_mps);
/* Ask the daemon that gpuos_mps_setup started (state STARTED; else nothing
 * to do) to quit, as `echo quit | nvidia-cuda-mps-control` does. The
 * daemon ends once its clients have, and the calling process is one: the
 * control program is watched for wait_ms, to report one that fails; one
 * still running then is taking the quit (0). 0, or -errno with the reason
 * in err. */
int gpuos_mps_stop(const struct gpuos_mps *m, unsigned wait_ms, char *err, size_t errlen);
/* Wait up to wait_ms until the daemon at pipe directory dir has gone: its
 * endpoint answers no more and no nvidia-cuda-mps-* process of that
 * directory runs (until then a CUDA process that starts finds no device;
 * on the H200 3 s after the service ended). 0, or -ETIMEDOUT. */
int gpuos_mps_wait_gone(const char *dir, unsigned wait_ms);
/* The one line boot prints after "MPS: ", and the state's name in status
 * ("host", "off", "joined", "started", "failed"). */
const char *gpuos_mps_text(const struct gpuos_mps *m, char *buf, size_t len);
const char *gpuos_mps_state_name(int state);

struct gpuos_service;
/* Make the control socket (refusing a path a live service, or another
 * user, holds) before the runtime boots. */
int gpuos_service_listen(const struct gpuos_service_opts *o, struct gpuos_service **out, char *err,
			 size_t errlen);
/* Serve until a stop request, *stop, or a runtime failure (-EIO). s must
 * have been booted with heap_shares = GPUOS_SERVICE_SHARES. */
int gpuos_service_serve(struct gpuos_service *v, struct gpuos_sys *s, const volatile int *stop, char *err,
			size_t errlen);
void gpuos_service_close(struct gpuos_service *v);
/* The path the service listens on. */
const char *gpuos_service_path(const struct gpuos_service *v);

/* The client's side: connect (refusing a socket or a process of another
 * non-root user), one request line and its reply within timeout_ms. */
int gpuos_service_connect(const char *path, char *err, size_t errlen);
int gpuos_service_call(int fd, const char *line, char *reply, size_t len, int timeout_ms);

struct gpuos_attached {
	struct gpuos_mbox *mb;
	char *heap;               /* this client's share, host mapping */
	uint64_t heap_rt;         /* the same in runtime space */
	uint64_t heap_len;
	uint32_t share;           /* 1-based */
	int sock;                 /* the connection, held open while attached */
	void *shm;
	uint64_t shm_len;
	int vram;                 /* the area is VRAM (a GPU client's): mb and heap are device pointers */
	uint64_t vram_handle;     /* its allocation, as imported */
	void *watch;              /* the connection's watcher (gpuos_service_gone), NULL: none */
};
int gpuos_service_attach(const char *path, struct gpuos_attached *at, char *err, size_t errlen);
/* A GPU client's attach: an area whose mailbox this process's kernels post
 * to (device scope) and whose share they name as destinations (heap_rt +
 * offset, in the runtime's address space; heap is the same bytes here). On
 * a GPU the area is VRAM, mapped on the current device (the CUDA runtime's
 * primary context): mb and heap are device pointers. A service in host mode
 * gives host memory that stands in for it (vram 0), mapped as attach does. */
int gpuos_service_attach_gpu(const char *path, struct gpuos_attached *at, char *err, size_t errlen);
void gpuos_service_detach(struct gpuos_attached *at);
/* Memory of the attached client's own as a destination of its requests
 * (struct gpuos_client_mem: a memfd sealed with F_SEAL_SHRINK, or VRAM
 * by its IPC handle): *rt is where its requests name byte `offset` of it.
 * Every other client's request naming it is refused (BAD_DST). Parks the
 * service's runtime for a moment. gpuos_service_unregister gives it back;
 * detach (or the client's end) gives back all. 0, or -errno with the
 * service's reason in err: -ENOSPC (GPUOS_SYS_CLIENT_REGIONS held), -EBUSY,
 * -ERANGE, -EINVAL, -EOPNOTSUPP (VRAM, a service in host mode), -ENOENT
 * (unregister: not registered), -EPIPE or -ETIMEDOUT (the service is gone). */
int gpuos_service_register(struct gpuos_attached *at, const struct gpuos_client_mem *m, uint64_t *rt, char *err,
			   size_t errlen);
int gpuos_service_unregister(struct gpuos_attached *at, uint64_t rt, char *err, size_t errlen);
/* Every wait of an attached client is bounded. A thread of the client
 * library watches the connection from attach to detach: when the service
 * closes it (it stopped, or died) or answers none of the requests waiting
 * in the area's mailbox for GPUOS_CLIENT_TIMEOUT_MS (the environment's
 * GPUOS_CLIENT_TIMEOUT_MS, in ms, where set), the service is gone: the
 * connection is shut, and every request waiting in the mailbox, and every
 * one posted later, completes with GPUOS_ST_GONE (a host-memory area; a
 * VRAM area's kernels ask gpuos_service_gone). A slot a request completed
 * so may still be written by a service that was only slow: after
 * GPUOS_ST_GONE detach, do not post again. Returns 0 while the service is
 * there, 1 when it closed the connection, 2 when it did not answer. */
int gpuos_service_gone(const struct gpuos_attached *at);

/* ---- app images (ELF cubins), inspected before they are loaded ------------------
 * Architecture, the gpuos ABI note (gpuos/app.h), the entry points and, per
 * entry, what it needs from the SM (registers, static shared memory, threads
 * per block). Every offset, size and count in the file is hostile input: a
 * fatbin, a host ELF, a relocatable object, a truncated or malformed file is
 * refused with one line saying why, never a crash or a read past the buffer. */
/* What CUDA allows per block when an image declares no limit. */
#define GPUOS_IMAGE_DEFAULT_MAX_THREADS 1024u
/* Refused beyond these: no real app comes near them. */
#define GPUOS_IMAGE_MAX_ENTRIES 4096u
#define GPUOS_IMAGE_MAX_BYTES   (1ull << 30)

struct gpuos_image_entry {
	char *name;             /* the kernel's symbol (mangled unless extern "C"); owned by the info */
	uint32_t registers;     /* per thread (EIATTR_REGCOUNT) */
	uint32_t shared_bytes;  /* static shared memory per block: the size of .nv.shared.NAME, as
	                         * cuobjdump -res-usage reports it (for sm_90 nvcc 13 counts the
	                         * 1 KiB it reserves for the system in it; the driver's
	                         * CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES leaves that out) */
	uint32_t max_threads;   /* per block: what the image declares, else 1024 */
	uint32_t block[3];      /* the declared x, y, z (maxntid or reqntid), 0 0 0 if none */
	int exact;              /* 1: reqntid, a launch must use exactly block[] */
};

struct gpuos_image_info {
	uint32_t sm_major, sm_minor; /* e.g. 9, 0 */
	int arch_specific;           /* built for sm_XYa: runs on sm_XY only */
	char arch[16];               /* "sm_90", "sm_90a" */
	uint32_t elf_abi;            /* EI_ABIVERSION of the cubin (8 for nvcc 13) */
	uint32_t abi_version;        /* the image's gpuos ABI (== GPUOS_ABI_VERSION once inspected) */
	uint32_t nentries;
	struct gpuos_image_entry *entries; /* symbol-table order */
};

/*
 * Inspect an image held in memory. buf is only read, and need not outlive
 * the call; *out is filled on success and must then be released with
 * gpuos_image_info_free(). On failure *out holds nothing to free and err
 * says why in one line. Checks, in order: not a fatbin or PTX, ELF64
 * little-endian, EM_CUDA, an executable cubin (not -rdc=true before
 * linking), every header, section, symbol, note and attribute in bounds,
 * an SM architecture in e_flags, the gpuos ABI note equal to
 * GPUOS_ABI_VERSION, at least one entry point.
 * Returns 0, -ENOEXEC (not a loadable CUDA cubin), -EINVAL (malformed),
 * -EOVERFLOW (a value out of range), -EPROTO (ABI note missing or of
 * another version), -ENOMEM. Host, any thread.
 */
int gpuos_image_inspect(const void *buf, size_t len, struct gpuos_image_info *out, char *err, size_t errlen);

/* The same for a file (at most GPUOS_IMAGE_MAX_BYTES). Returns as above,
 * or the negative errno of opening or reading it. */
/* Read a whole image file (a regular file of at most GPUOS_IMAGE_MAX_BYTES)
 * into *buf (malloc'd; the caller frees it). 0 or a negative errno with a
 * one-line reason naming the path. */
int gpuos_image_read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen);

int gpuos_image_inspect_file(const char *path, struct gpuos_image_info *out, char *err, size_t errlen);
/* A host-mode variant (APP.so): its gpuos ABI version, read from the file
 * without loading it (a library's constructors run at dlopen). 0; -ENOEXEC
 * (not a shared library of this machine), -EPROTO (no or a malformed ABI
 * note) with why. */
int gpuos_image_so_abi(const char *path, uint32_t *abi, char *err, size_t errlen);

/* Release what gpuos_image_inspect() allocated; *info is zeroed. */
void gpuos_image_info_free(struct gpuos_image_info *info);

/*
 * Can this image run on a GPU of compute capability sm_major.sm_minor?
 * CUDA's rules for SASS: the same major version and a minor no newer than
 * the GPU's (sm_86 code runs on sm_89, never on sm_80 or sm_90);
 * architecture-specific code (sm_90a) runs on exactly its own version.
 * Returns 0, or -ENOEXEC with err naming the image's and the GPU's
 * architecture.
 */
int gpuos_image_check_arch(const struct gpuos_image_info *info, int sm_major, int sm_minor, char *err,
			   size_t errlen);

/* The entry called name, or NULL. */
const struct gpuos_image_entry *gpuos_image_entry_find(const struct gpuos_image_info *info, const char *name);

/* ---- running one app (gpuos/app.h) in a booted runtime ---------------------------
 * What `gpuos run --device` does in its own process and what the service
 * does for `gpuos run --socket`. On the GPU: the cubin is inspected
 * (architecture against the GPU's, ABI note, entry, threads per block),
 * loaded with the runtime parked, launched on the client stream, waited
 * for, unloaded parked. In host mode: the host-mode variant NAME.so beside
 * NAME.cubin (or the .so given) is dlopen'ed and its entry runs on grid x
 * block host threads. Functions return 0 or a negative errno, the reason in err. */
#define APP_OUT_BYTES (64u << 10)       /* the app's report (args->out) */
#define APP_HOST_MAX_THREADS 4096u      /* grid x block in host mode */
#define APP_MIN_HEAP (1u << 20)         /* client memory an app needs at least */

struct app_run {
	const char *image;      /* APP.cubin, or APP.so (the host-mode variant itself) */
	const char *entry;      /* NULL: the image's only entry, or the one named like the file */
	unsigned grid, block;   /* 0: 1 and 32 */
	int argc;               /* the arguments after `--` (at most GPUOS_APP_MAX_ARGS) */
	char **argv;
	int sm;                 /* check the cubin against this compute capability (90) instead of
	                         * the GPU's; 0: the GPU's, no check in host mode */
	/* Called about 10 times a second while the app runs (NULL: never), with
	 * the bytes the app says it moved of total, or, when it says nothing
	 * (total 0), the runtime's bytes since the launch. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

struct app_result {
	uint32_t status;        /* what the app wrote into args->status */
	char *out;              /* its report, NUL-terminated (malloc'ed; app_result_free) */
	struct gpuos_stats delta; /* the runtime's requests, bytes, errors... during the run */
	int gpu;                /* 1: ran on the GPU */
	char entry[256];        /* the entry that ran */
};

/* 1 if path names a host-mode variant (ends in .so). */
int app_is_host_variant(const char *path);
/* The host-mode variant a runtime in host mode runs for a cubin: the .so
 * beside it ("dir/app.cubin" -> "dir/app.so", "app.cubin" -> "./app.so"). */
void app_host_variant_of(const char *cubin, char *buf, size_t len);

/* Checks that need no runtime: a cubin is inspected (ABI note, entry,
 * block against its declared limit, and the architecture when o->sm is
 * given); a .so is opened and its entry and ABI symbol looked up. */
int app_check(const struct app_run *o, char *err, size_t errlen);

/* Run the app in s, using the client memory [heap, heap + heap_len) (host
 * mapping; heap_rt in runtime space) for its arguments, report and heap.
 * Returns 0 with *res filled (then app_result_free), or a negative errno:
 * -ENOEXEC/-EPROTO/-EINVAL for an image that cannot run here, -EIO when the
 * GPU failed (the runtime is then unusable: shut it down). */
int app_run(struct gpuos_sys *s, char *heap, uint64_t heap_rt, uint64_t heap_len, const struct app_run *o,
	    struct app_result *res, char *err, size_t errlen);
void app_result_free(struct app_result *res);

#ifdef __cplusplus
}
#endif

#endif /* GPUOS_HOST_H */
