/* SPDX-License-Identifier: MIT */
/*
 * boot/gpu.h - everything boot/ needs from CUDA, behind one small interface.
 * boot/cuda.c implements it with the statically linked CUDA runtime and the
 * Driver API reached at run time (never a link against libcuda);
 * boot/cuda_none.c is the host-mode-only build (make static).
 *
 * All functions are host-only; 0 or a negative errno.
 */
#ifndef GPUOS_BOOT_GPU_H
#define GPUOS_BOOT_GPU_H

#include <stddef.h>
#include <stdint.h>

/* Threads with a channel of their own (an emulated controller's workers,
 * all members of an array together) at most: with the streams of
 * gpuos_gpu_open and the main thread's, one hardware work queue each of the
 * 32 (boot/cuda.c says why they must not share). */
#define GPUOS_GPU_WORKER_STREAMS 24u

/* Stack per GPU thread, set before the first launch (boot/cuda.c says why).
 * 3 KiB since the safetensors parser joined the metadata warp (ptxas: 2608
 * bytes cumulative, 1920 before). The driver reserves it for every thread
 * that can be resident: 132 SMs x 2048 threads x 3 KiB = 830 MB of an H200
 * (553 MB at 2 KiB). */
#define GPUOS_GPU_STACK_BYTES 3072u

struct gpuos_gpu;

/* The runtime image linked into the gpuos binary (kernels/image.S); absent
 * from a build without CUDA, which runs in host mode only. */
extern const char gpuos_rt_image[] __attribute__((weak));

/* Open GPU dev (a CUDA device ordinal, 0 the first). -ENODEV (with the
 * reason in why) when there is no driver or no such device: the caller
 * runs in host mode. Every call on g makes its device the calling
 * thread's current one. Sets
 * CUDA_MODULE_LOADING=EAGER first (a lazy load while the runtime spins
 * deadlocks, docs/platform.md). -EPERM when CUDA was started before with
 * lazy loading: the caller refuses to boot (never CPU threads instead). */
int gpuos_gpu_open(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen);
void gpuos_gpu_close(struct gpuos_gpu *g);
/* The same for a client of a service (gpuos_connect): no runtime spins in
 * the process, so CUDA stays as the program set it up (no EAGER, no
 * 32 work queues, no stack limit, no refusal of a context made before). */
int gpuos_gpu_open_client(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen);
/* Let g (its kernels and copies) reach to's memory, another GPU's: peer
 * access (NVLink or PCIe), for a group's runtimes on several GPUs. 0, or
 * -EOPNOTSUPP with the reason in why. */
int gpuos_gpu_peer(struct gpuos_gpu *g, struct gpuos_gpu *to, char *why, size_t whylen);
const char *gpuos_gpu_name(const struct gpuos_gpu *g);
/* 1 if an MPS control daemon serves this machine (its pipe directory,
 * CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps, holds its control endpoint and
 * the daemon process lives), with that directory in dir; else 0. A context
 * created while it runs is an MPS client: only then do kernels of other
 * processes run beside the runtime's (docs/platform.md). Needs no GPU. */
int gpuos_gpu_mps(char *dir, size_t len);
/* A live process of an MPS daemon, of the one at pipe directory dir when
 * dir is not NULL (boot/mps.c: it needs no CUDA). */
int gpuos_mps_daemon_runs(const char *dir);
int gpuos_gpu_sm(const struct gpuos_gpu *g);       /* e.g. 90 */
int gpuos_gpu_sm_count(const struct gpuos_gpu *g);

/* Pinned host memory, mapped for the GPU (zero-copy); *dev is its device address. */
int gpuos_gpu_host_alloc(struct gpuos_gpu *g, size_t len, void **host, uint64_t *dev);
void gpuos_gpu_host_free(struct gpuos_gpu *g, void *host);
/* Pin and map existing host memory (page aligned) for the GPU. */
int gpuos_gpu_host_register(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev);
void gpuos_gpu_host_unregister(struct gpuos_gpu *g, void *host);
/* A caller's memory (gpuos_sys_register): pin and map host memory as
 * gpuos_gpu_host_register does (*pinned 1: unregister it after), or take
 * memory the caller pinned already (cudaHostAlloc, its own
 * cudaHostRegister; *pinned 0). *dev its device address. 0, -ENOMEM, -EIO. */
int gpuos_gpu_host_adopt(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev, int *pinned);
/* 1 when [ptr, ptr + len) is device memory of this GPU (cudaMalloc), else 0. */
int gpuos_gpu_is_device(struct gpuos_gpu *g, const void *ptr, size_t len);
/* 1 when g's kernels can read and write [ptr, ptr + len) at those
 * addresses: device memory (cudaMalloc, VMM, IPC, managed) or host memory
 * mapped for the GPU under the same address; 0 for anything else, such as
 * pageable host memory (a kernel touching it would fault, and take the
 * context and the runtime with it). len > 0. */
int gpuos_gpu_reachable(struct gpuos_gpu *g, const void *ptr, size_t len);
/* Map another PCIe device's registers for the GPU (cudaHostRegisterIoMemory):
 * mmio is that device's BAR as this process maps it (VFIO region or sysfs
 * resource file), page aligned, len a multiple of the page size. GPU stores
 * to *dev then travel peer to peer to the device (doorbells); GPU loads may
 * not on some platforms (docs/hardware.md). 0; -EOPNOTSUPP when the GPU,
 * driver or kernel does not allow it; -EPERM when it needs root; -EIO
 * otherwise; the reason in why. */
int gpuos_gpu_io_register(struct gpuos_gpu *g, volatile void *mmio, size_t len, uint64_t *dev, char *why,
			  size_t whylen);
void gpuos_gpu_io_unregister(struct gpuos_gpu *g, volatile void *mmio);
/* Device memory of another process (a client of the service): its
 * cudaIpcGetMemHandle (GPUOS_GPU_IPC_HANDLE bytes) opened here, and the
 * whole allocation it names: *base and *len (cuMemGetAddressRange), so
 * that what a client asks for is checked against what it exported, never
 * against whatever lies beside it. 0, -EOPNOTSUPP (no CUDA), -EINVAL (not
 * a handle this GPU opens), -EIO. gpuos_gpu_ipc_close unmaps it: never
 * while the runtime spins (it waits for the device, like cudaFree). */
#define GPUOS_GPU_IPC_HANDLE 64u
int gpuos_gpu_ipc_open(struct gpuos_gpu *g, const unsigned char *handle, uint64_t *base, uint64_t *len);
void gpuos_gpu_ipc_close(struct gpuos_gpu *g, uint64_t base);
/* The exporting side: the handle of the allocation holding [ptr, ptr +
 * len) (device memory of this process) and ptr's offset in it. -EINVAL
 * (not device memory), -ERANGE (the range crosses allocations),
 * -EOPNOTSUPP (memory cudaIpcGetMemHandle cannot export), -EIO. */
int gpuos_gpu_ipc_export(struct gpuos_gpu *g, const void *ptr, size_t len, unsigned char *handle, uint64_t *offset);
/* Device memory. */
int gpuos_gpu_dev_alloc(struct gpuos_gpu *g, size_t len, uint64_t *dev);
void gpuos_gpu_dev_free(struct gpuos_gpu *g, uint64_t dev);
/* Synchronous copy on the calling thread's own non-blocking stream (safe
 * while the runtime kernel spins). to_device: host -> device, else device -> host. */
int gpuos_gpu_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len, int to_device);
/* Set up what gpuos_gpu_copy needs in the calling thread (its stream), so
 * that its first copy creates nothing while a kernel spins. */
void gpuos_gpu_thread_init(struct gpuos_gpu *g);
int gpuos_gpu_memset(struct gpuos_gpu *g, uint64_t dev, int v, size_t len);
/* Run fn(arg) on a CUDA thread once the work queued on stream (a
 * cudaStream_t) before it has finished; work queued after it waits for fn
 * to return. fn makes no CUDA call. 0 or -EIO. */
int gpuos_gpu_host_func(struct gpuos_gpu *g, void *stream, void (*fn)(void *), void *arg);
/* VRAM another process can map (a service's GPU clients): an address
 * range reserved once, each piece of it backed by an allocation of its own
 * that exports as a file descriptor (the Driver API's virtual memory
 * management). A piece is renewed by unmapping its allocation and mapping a
 * fresh one at the same address: a process that imported the old one keeps
 * it, and reaches nothing of the new. None of these synchronise with a
 * kernel that spins (measured on the H100 beside a persistent kernel, under
 * MPS: docs/platform.md). len: a multiple of gpuos_gpu_vmm_granularity. */
size_t gpuos_gpu_vmm_granularity(struct gpuos_gpu *g);
int gpuos_gpu_vmm_reserve(struct gpuos_gpu *g, size_t len, uint64_t *va);
void gpuos_gpu_vmm_unreserve(struct gpuos_gpu *g, uint64_t va, size_t len);
/* Back [va, va + len) with a fresh allocation, readable and writable by
 * this GPU; *handle is it, *fd its descriptor for another process. */
int gpuos_gpu_vmm_map_new(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t *handle, int *fd);
void gpuos_gpu_vmm_unmap(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t handle);
/* The other side, in a client process (its current device, the CUDA
 * runtime's primary context): map what fd names, len bytes, at *va, and
 * copy its first head_len bytes into head. */
int gpuos_gpu_vmm_import(int fd, size_t len, uint64_t *va, uint64_t *handle, void *head, size_t head_len,
			 char *why, size_t whylen);
void gpuos_gpu_vmm_unimport(uint64_t va, size_t len, uint64_t handle);
/* Load the runtime image now (once), while no kernel spins, so that its
 * kernels (the DMA gather kernel among them) can be launched later. */
int gpuos_gpu_image_load(struct gpuos_gpu *g, const void *image, char *why, size_t whylen);

/* ---- the calling thread's DMA channel (the emulated controller's engine) ----
 * Set up by gpuos_gpu_thread_init. Transfers are queued on the thread's
 * stream and land in order. dma_copy merges a copy that continues the one
 * before it (both ends) into one copy-engine transfer; dma_gather collects
 * small pieces that one launch of the gather kernel moves at the next mark
 * (SMs read the pinned source through its device mapping); dma_zero zeroes.
 * Sources are pinned host memory (gpuos_gpu_host_alloc or _register).
 * mark: *ticket names everything queued so far; poll: 1 landed, 0 not yet,
 * -EIO failed. All 0 or a negative errno. */
int gpuos_gpu_dma_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len);
int gpuos_gpu_dma_gather(struct gpuos_gpu *g, void *dst, const void *src, size_t len);
int gpuos_gpu_dma_zero(struct gpuos_gpu *g, void *dst, size_t len);
int gpuos_gpu_dma_mark(struct gpuos_gpu *g, uint64_t *ticket);
int gpuos_gpu_dma_poll(struct gpuos_gpu *g, uint64_t ticket);

/* Streams: the runtime kernel, the loopback controller, client kernels,
 * and the library's own short kernels that a call launches and waits for
 * (gpuos_dequant). All made by gpuos_gpu_open, before the runtime spins. */
enum gpuos_gpu_stream {
	GPUOS_STREAM_RT = 0, GPUOS_STREAM_LOOP = 1, GPUOS_STREAM_CLIENT = 2, GPUOS_STREAM_WORK = 3, GPUOS_STREAMS = 4
};

/* Load the runtime image (once: every kernel of gpuos is in it, loaded
 * before the runtime spins), launch `entry` with one pointer argument on
 * the given non-blocking stream, grid x block threads. Returns at once. */
int gpuos_gpu_launch(struct gpuos_gpu *g, int stream, const void *image, const char *entry, uint64_t arg,
		     unsigned grid, unsigned block, char *why, size_t whylen);
/* The same with a parameter passed by value: *value, the kernel's parameter
 * type's size (up to 32 KiB of kernel parameters, CUDA 12.1 and sm_70 on). */
int gpuos_gpu_launch_value(struct gpuos_gpu *g, int stream, const void *image, const char *entry,
			   const void *value, unsigned grid, unsigned block, char *why, size_t whylen);
/* Wait for the launches on a stream to end; -EIO with the CUDA error in why. */
int gpuos_gpu_wait(struct gpuos_gpu *g, int stream, char *why, size_t whylen);
/* 1 if work on the stream is still running. */
int gpuos_gpu_running(struct gpuos_gpu *g, int stream);

/* ---- app images (gpuos run) ------------------------------------------------------
 * Any image (a cubin, a fatbin) loaded as a module of its own, one entry of
 * it launched as a client. Loading and unloading a module while the runtime
 * kernel spins deadlocks (docs/platform.md): the caller parks the runtime
 * around gpuos_gpu_module_load, gpuos_gpu_stack_reserve and
 * gpuos_gpu_module_unload.
 */
struct gpuos_gpu_module;

/* Load image as a module and find the kernel `entry` (one pointer
 * parameter). *local_bytes: its local memory (stack) per thread,
 * *max_threads: the most threads per block it can be launched with (its
 * registers allow). 0; -EIO with the driver's reason in why; -ENOMEM. */
int gpuos_gpu_module_load(struct gpuos_gpu *g, const void *image, const char *entry,
			  struct gpuos_gpu_module **out, size_t *local_bytes, unsigned *max_threads, char *why,
			  size_t whylen);
/* Unload it (parked only) and free *m. */
void gpuos_gpu_module_unload(struct gpuos_gpu *g, struct gpuos_gpu_module *m);
/* Raise the per-thread stack limit to at least bytes (never lowers it). The
 * driver waits for the device to go idle to do it: parked only. */
int gpuos_gpu_stack_reserve(struct gpuos_gpu *g, size_t bytes, char *why, size_t whylen);
/* Launch the module's entry with one pointer argument on a stream; returns
 * at once (gpuos_gpu_wait waits). */
int gpuos_gpu_module_launch(struct gpuos_gpu *g, struct gpuos_gpu_module *m, int stream, uint64_t arg,
			    unsigned grid, unsigned block, char *why, size_t whylen);

#endif /* GPUOS_BOOT_GPU_H */
