/* SPDX-License-Identifier: MIT */
/*
 * boot/gpu.h on CUDA: the CUDA runtime is linked statically (it finds
 * libcuda.so.1 at run time), and the few Driver API calls the runtime API
 * lacks (loading the embedded image, launching from it) are reached through
 * cudaGetDriverEntryPointByVersion. On a machine without the driver every
 * entry point fails cleanly and gpuos runs in host mode.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gpu.h"
#include "gpuos/internal/dma.h"

typedef CUresult (*pfn_module_load_data)(CUmodule *, const void *);
typedef CUresult (*pfn_launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*pfn_get_error_string)(CUresult, const char **);

struct gpuos_gpu {
	int dev;
	char name[256];
	int sm;
	int sm_count;
	CUmodule module;
	const void *image;
	cudaStream_t stream[GPUOS_STREAMS]; /* non-blocking: never wait on each other */
	pfn_module_load_data module_load_data;
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	pfn_launch_kernel launch_kernel;
	pfn_get_error_string get_error_string;
	CUresult (*module_unload)(CUmodule);
	CUresult (*func_get_attribute)(int *, CUfunction_attribute, CUfunction);
	CUfunction gather;          /* gpuos_dma_gather of the runtime image, or NULL */
	int host_ptr_is_dev;        /* registered host memory has the same address on the GPU */
	pthread_mutex_t lock;       /* module loading from several threads */
};

/* An app image loaded as a module of its own (gpuos run). */
struct gpuos_gpu_module {
	CUmodule module;
	CUfunction fn;
	char entry[128];
};

static const char *cu_err(struct gpuos_gpu *g, CUresult r);

/* The CUDA runtime acts on the calling thread's current device (and the
 * Driver API on its primary context, current with it): every call on g's
 * behalf makes g's device current first. Several runtimes of a group may
 * run on different GPUs of one process (docs/design.md, "Scale-out"). */
static void use(const struct gpuos_gpu *g)
{
	if (g)
		(void)cudaSetDevice(g->dev);
}

static int entry(const char *sym, void **fn)
{
	enum cudaDriverEntryPointQueryResult q;
	cudaError_t e = cudaGetDriverEntryPointByVersion(sym, fn, 12000, cudaEnableDefault, &q);
	return (e == cudaSuccess && q == cudaDriverEntryPointSuccess && *fn) ? 0 : -ENOSYS;
}

int gpuos_gpu_mps(char *dir, size_t len)
{
	const char *d = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char control[4200];
	struct stat st;
	if (!d || !*d)
		d = "/tmp/nvidia-mps";
	snprintf(dir, len, "%s", d);
	snprintf(control, sizeof(control), "%s/control", d);
	if (stat(control, &st) || !(S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)))
		return 0;
	return gpuos_mps_daemon_runs(NULL);
}

/* The environment CUDA reads at its first call. The work queues a
 * context made before this call has (CUDA_DEVICE_MAX_CONNECTIONS, 8 by
 * default); 32 for a client, which needs none set. */
static int set_environment(int client)
{
	const char *conn;
	int conn0;

	/* Before the first CUDA call: every function is loaded when its module
	 * is, never lazily while the runtime spins (docs/platform.md). */
	if (!client)
		setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	/* Streams share the GPU's hardware work queues, 8 by default: work on
	 * a stream that shares one with the runtime's waits behind the kernel
	 * that never ends (seen: an emulator worker stuck in its first copy,
	 * the SQs it owns never fetched again, 4 x 1023 commands lost at
	 * W = 16). 32 (CUDA's most) keeps apart the streams gpuos makes: its
	 * own, and at most GPUOS_GPU_WORKER_STREAMS of emulator workers
	 * (boot/gpu.h). A lower value from the environment is raised. */
	conn = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	conn0 = conn ? atoi(conn) : 8; /* what a context made before this call has */
	if (client)
		conn0 = 32;
	if (conn0 < 32)
		setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
	return conn0;
}

/* Why cudaGetDeviceCount found no GPU (e), said plainly: the runtime's own
 * words for "no driver" are "CUDA driver version is insufficient for CUDA
 * runtime version". -ENODEV. */
static int no_gpu(cudaError_t e, char *why, size_t whylen)
{
	void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (!drv)
		snprintf(why, whylen, "no NVIDIA GPU driver found (libcuda.so.1)");
	else if (e == cudaSuccess || e == cudaErrorNoDevice)
		snprintf(why, whylen, "no NVIDIA GPU found");
	else if (e == cudaErrorInsufficientDriver)
		snprintf(why, whylen, "the NVIDIA driver is too old for this build's CUDA %d.%d", CUDART_VERSION / 1000,
			 CUDART_VERSION % 1000 / 10);
	else
		snprintf(why, whylen, "no usable GPU (%s)", cudaGetErrorString(e));
	if (drv)
		dlclose(drv);
	return -ENODEV;
}

/* The program may have made its first CUDA call before gpuos_boot, its
 * context made with conn0 < 32 work queues: then set_environment came too
 * late, and streams (the emulator's among them) would share a queue with
 * the runtime kernel and wait behind it forever. Refuse rather than hang
 * (docs/embedding.md): -EPERM. Asked before our own first call that makes
 * the context (cudaSetDevice). */
static int context_made_early(uint32_t dev, int conn0, char *why, size_t whylen)
{
	CUresult (*ctx_state)(CUdevice, unsigned *, int *) = NULL;
	unsigned flags = 0;
	int active = 0;

	if (!entry("cuDevicePrimaryCtxGetState", (void **)&ctx_state) && ctx_state((CUdevice)dev, &flags, &active) == CUDA_SUCCESS &&
	    active) {
		snprintf(why, whylen,
			 "CUDA was initialised before gpuos_boot with CUDA_DEVICE_MAX_CONNECTIONS %d: set "
			 "CUDA_DEVICE_MAX_CONNECTIONS=32 (and CUDA_MODULE_LOADING=EAGER) in the environment before "
			 "the program's first CUDA call (docs/embedding.md)", conn0);
		return -EPERM;
	}
	return 0;
}

/* Host threads that wait for the GPU sleep instead of spinning: after
 * boot the CPU has nothing to do, and should use no time doing it. */
static void sleep_when_waiting(uint32_t dev, int client)
{
	int cur = 0;

	if (cudaGetDevice(&cur) != cudaSuccess)
		cur = 0;
	if (client) {
		/* the program's context, as it made it (or will) */
	} else if ((int)dev == cur) {
		cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost);
	} else {
		/* cudaSetDeviceFlags sets the current device's, which is another
		 * GPU until cudaSetDevice below makes g's current (a group opens
		 * several from one thread, in any order) */
		CUresult (*primary_flags)(CUdevice, unsigned) = NULL;
		if (!entry("cuDevicePrimaryCtxSetFlags", (void **)&primary_flags))
			(void)primary_flags((CUdevice)dev, CU_CTX_SCHED_BLOCKING_SYNC | CU_CTX_MAP_HOST);
	}
}

/* The Driver API calls the runtime API lacks, into g. */
static int driver_entries(struct gpuos_gpu *g)
{
	return entry("cuModuleLoadData", (void **)&g->module_load_data) ||
	       entry("cuModuleGetFunction", (void **)&g->module_get_function) ||
	       entry("cuLaunchKernel", (void **)&g->launch_kernel) ||
	       entry("cuGetErrorString", (void **)&g->get_error_string) ||
	       entry("cuModuleUnload", (void **)&g->module_unload) ||
	       entry("cuFuncGetAttribute", (void **)&g->func_get_attribute) ? -ENOSYS : 0;
}

/* The program may have made its first CUDA call before gpuos_boot: then
 * CUDA_MODULE_LOADING came too late, and functions load lazily, at their
 * first launch, which waits behind the runtime kernel forever
 * (docs/platform.md). Refuse rather than hang: -EPERM. */
static int loads_lazily(char *why, size_t whylen)
{
	CUresult (*loading_mode)(CUmoduleLoadingMode *) = NULL;
	CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;

	if (!entry("cuModuleGetLoadingMode", (void **)&loading_mode) && loading_mode(&mode) == CUDA_SUCCESS &&
	    mode != CU_MODULE_EAGER_LOADING) {
		snprintf(why, whylen,
			 "CUDA loads modules lazily in this process (CUDA was initialised before gpuos_boot, "
			 "without CUDA_MODULE_LOADING=EAGER): set CUDA_MODULE_LOADING=EAGER in the environment "
			 "before the program's first CUDA call (docs/embedding.md)");
		return -EPERM;
	}
	return 0;
}

/* The stack of every kernel we launch, fixed before the first launch: a
 * launch that needs more than the current limit makes the driver grow it,
 * which waits for the device to go idle, which a persistent kernel never
 * does (seen: the gpu-null loopback kernel running and the runtime kernel,
 * 1664 bytes of cumulative stack with the parsers, never starting).
 * GPUOS_GPU_STACK_BYTES covers the runtime image (ptxas -v, checked by the
 * Makefile). */
static int fix_stack(char *why, size_t whylen)
{
	size_t cur = 0;

	if (cudaDeviceGetLimit(&cur, cudaLimitStackSize) != cudaSuccess ||
	    (cur < GPUOS_GPU_STACK_BYTES && cudaDeviceSetLimit(cudaLimitStackSize, GPUOS_GPU_STACK_BYTES) != cudaSuccess)) {
		snprintf(why, whylen, "cannot set the GPU stack size to %u bytes", GPUOS_GPU_STACK_BYTES);
		return -ENODEV;
	}
	return 0;
}

/* client: for a process that is a client of a service (gpuos_connect): no
 * runtime spins in it, so none of the settings and refusals below that
 * exist because one does; CUDA as the program set it up (launches may
 * grow the stack there: nothing spins). */
static int open_gpu(struct gpuos_gpu **out, uint32_t dev, int client, char *why, size_t whylen)
{
	struct gpuos_gpu *g;
	struct cudaDeviceProp prop;
	int n = 0, conn0, same = 0, r;
	cudaError_t e;

	*out = NULL;
	conn0 = set_environment(client);
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0)
		return no_gpu(e, why, whylen);
	if (conn0 < 32 && context_made_early(dev, conn0, why, whylen))
		return -EPERM;
	if (dev >= (uint32_t)n) {
		snprintf(why, whylen, "no GPU %u: this machine has %d (0 to %d)", dev, n, n - 1);
		return -ENODEV;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->dev = (int)dev;
	pthread_mutex_init(&g->lock, NULL);
	sleep_when_waiting(dev, client);
	if (cudaSetDevice(g->dev) != cudaSuccess || cudaGetDeviceProperties(&prop, g->dev) != cudaSuccess) {
		snprintf(why, whylen, "cannot open GPU %u", dev);
		free(g);
		return -ENODEV;
	}
	snprintf(g->name, sizeof(g->name), "%s", prop.name);
	/* the gather kernel reads pinned sources by their host address */
	g->host_ptr_is_dev = cudaDeviceGetAttribute(&same, cudaDevAttrCanUseHostPointerForRegisteredMem, g->dev) ==
				     cudaSuccess && same;
	g->sm = prop.major * 10 + prop.minor;
	g->sm_count = prop.multiProcessorCount;
	if (!prop.unifiedAddressing || !prop.canMapHostMemory) {
		snprintf(why, whylen, "GPU %s lacks unified addressing or mapped host memory", g->name);
		free(g);
		return -ENODEV;
	}
	if (driver_entries(g)) {
		snprintf(why, whylen, "the CUDA driver lacks the Driver API entry points gpuos needs");
		free(g);
		return -ENODEV;
	}
	r = client ? 0 : loads_lazily(why, whylen);
	if (!r && !client)
		r = fix_stack(why, whylen);
	if (r) {
		free(g);
		return r;
	}
	for (n = 0; n < GPUOS_STREAMS; n++) {
		if (cudaStreamCreateWithFlags(&g->stream[n], cudaStreamNonBlocking) != cudaSuccess) {
			snprintf(why, whylen, "cannot create a stream");
			free(g);
			return -ENODEV;
		}
	}
	*out = g;
	return 0;
}

int gpuos_gpu_open(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen)
{
	return open_gpu(out, dev, 0, why, whylen);
}

int gpuos_gpu_open_client(struct gpuos_gpu **out, uint32_t dev, char *why, size_t whylen)
{
	return open_gpu(out, dev, 1, why, whylen);
}

void gpuos_gpu_close(struct gpuos_gpu *g)
{
	use(g);
	if (!g)
		return;
	for (int i = 0; i < GPUOS_STREAMS; i++)
		cudaStreamDestroy(g->stream[i]);
	free(g);
}

int gpuos_gpu_peer(struct gpuos_gpu *g, struct gpuos_gpu *to, char *why, size_t whylen)
{
	int can = 0;
	cudaError_t e;
	if (g->dev == to->dev)
		return 0;
	if (cudaDeviceCanAccessPeer(&can, g->dev, to->dev) != cudaSuccess || !can) {
		snprintf(why, whylen, "GPU %d cannot reach GPU %d's memory (no peer access between them)", g->dev, to->dev);
		return -EOPNOTSUPP;
	}
	use(g);
	e = cudaDeviceEnablePeerAccess(to->dev, 0);
	if (e == cudaErrorPeerAccessAlreadyEnabled) {
		(void)cudaGetLastError();
		e = cudaSuccess;
	}
	if (e != cudaSuccess) {
		snprintf(why, whylen, "peer access from GPU %d to GPU %d: %s", g->dev, to->dev, cudaGetErrorString(e));
		return -EOPNOTSUPP;
	}
	return 0;
}

const char *gpuos_gpu_name(const struct gpuos_gpu *g) { return g->name; }
int gpuos_gpu_sm(const struct gpuos_gpu *g) { return g->sm; }
int gpuos_gpu_sm_count(const struct gpuos_gpu *g) { return g->sm_count; }

int gpuos_gpu_host_alloc(struct gpuos_gpu *g, size_t len, void **host, uint64_t *dev)
{
	void *p = NULL, *d = NULL;
	use(g);
	if (cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return -ENOMEM;
	if (cudaHostGetDevicePointer(&d, p, 0) != cudaSuccess) {
		cudaFreeHost(p);
		return -EIO;
	}
	memset(p, 0, len);
	*host = p;
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

void gpuos_gpu_host_free(struct gpuos_gpu *g, void *host)
{
	(void)g;
	if (host)
		cudaFreeHost(host);
}

int gpuos_gpu_host_register(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev)
{
	void *d = NULL;
	use(g);
	if (cudaHostRegister(host, len, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess)
		return -ENOMEM;
	if (cudaHostGetDevicePointer(&d, host, 0) != cudaSuccess) {
		cudaHostUnregister(host);
		return -EIO;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

void gpuos_gpu_host_unregister(struct gpuos_gpu *g, void *host)
{
	(void)g;
	cudaHostUnregister(host);
}

int gpuos_gpu_host_adopt(struct gpuos_gpu *g, void *host, size_t len, uint64_t *dev, int *pinned)
{
	void *d = NULL;
	struct cudaPointerAttributes a;
	cudaError_t e;
	use(g);
	*pinned = 0;
	/* The caller's own pinning (cudaHostAlloc, cudaHostRegister): take it
	 * as it is, when it covers the whole range. */
	if (cudaPointerGetAttributes(&a, host) == cudaSuccess && a.type == cudaMemoryTypeHost &&
	    cudaPointerGetAttributes(&a, (const char *)host + len - 1) == cudaSuccess && a.type == cudaMemoryTypeHost) {
		if (cudaHostGetDevicePointer(&d, host, 0) != cudaSuccess) {
			cudaGetLastError();
			return -EIO;
		}
		*dev = (uint64_t)(uintptr_t)d;
		return 0;
	}
	cudaGetLastError();
	e = cudaHostRegister(host, len, cudaHostRegisterMapped | cudaHostRegisterPortable);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return -ENOMEM;
	}
	*pinned = 1;
	if (cudaHostGetDevicePointer(&d, host, 0) != cudaSuccess) {
		cudaGetLastError();
		if (*pinned)
			cudaHostUnregister(host);
		*pinned = 0;
		return -EIO;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

int gpuos_gpu_is_device(struct gpuos_gpu *g, const void *ptr, size_t len)
{
	struct cudaPointerAttributes a, b;
	(void)g;
	if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess ||
	    cudaPointerGetAttributes(&b, (const char *)ptr + len - 1) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return a.type == cudaMemoryTypeDevice && b.type == cudaMemoryTypeDevice && a.device == 0 && b.device == 0;
}

int gpuos_gpu_reachable(struct gpuos_gpu *g, const void *ptr, size_t len)
{
	const void *ends[2] = { ptr, (const char *)ptr + len - 1 };
	use(g);
	for (int i = 0; i < 2; i++) {
		struct cudaPointerAttributes a;
		if (cudaPointerGetAttributes(&a, ends[i]) != cudaSuccess) {
			(void)cudaGetLastError();
			return 0;
		}
		if (a.type == cudaMemoryTypeUnregistered || (a.type == cudaMemoryTypeHost && a.devicePointer != ends[i]))
			return 0;
	}
	return 1;
}

int gpuos_gpu_io_register(struct gpuos_gpu *g, volatile void *mmio, size_t len, uint64_t *dev, char *why,
			  size_t whylen)
{
	use(g);
	void *p = (void *)(uintptr_t)mmio, *d = NULL;
	int ok = 0;
	cudaError_t e;

	if (cudaDeviceGetAttribute(&ok, cudaDevAttrHostRegisterSupported, g->dev) != cudaSuccess || !ok) {
		snprintf(why, whylen, "GPU %s cannot register host mappings (cudaDevAttrHostRegisterSupported is 0)",
			 g->name);
		return -EOPNOTSUPP;
	}
	/* IoMemory: the range is another device's MMIO, not pageable memory; the
	 * driver maps its physical address for the GPU (peer to peer). Mapped:
	 * we want the GPU-side address of it. */
	e = cudaHostRegister(p, len, cudaHostRegisterIoMemory | cudaHostRegisterMapped);
	if (e != cudaSuccess) {
		(void)cudaGetLastError(); /* not sticky, but leave no error behind for later calls */
		if (e == cudaErrorNotPermitted) {
			snprintf(why, whylen, "cudaHostRegister(BAR0, IoMemory) refused: %s (it needs root)",
				 cudaGetErrorString(e));
			return -EPERM;
		}
		if (e == cudaErrorNotSupported || e == cudaErrorInvalidValue) {
			snprintf(why, whylen,
				 "cudaHostRegister(BAR0, IoMemory) refused: %s: this GPU driver, kernel or platform "
				 "does not let the GPU reach another device's registers (docs/hardware.md); use --host",
				 cudaGetErrorString(e));
			return -EOPNOTSUPP;
		}
		snprintf(why, whylen, "cudaHostRegister(BAR0, IoMemory) failed: %s", cudaGetErrorString(e));
		return -EIO;
	}
	if (cudaHostGetDevicePointer(&d, p, 0) != cudaSuccess) {
		(void)cudaGetLastError();
		cudaHostUnregister(p);
		snprintf(why, whylen, "BAR0 is registered but the GPU has no address for it (cudaHostGetDevicePointer)");
		return -EIO;
	}
	*dev = (uint64_t)(uintptr_t)d;
	return 0;
}

void gpuos_gpu_io_unregister(struct gpuos_gpu *g, volatile void *mmio)
{
	(void)g;
	cudaHostUnregister((void *)(uintptr_t)mmio);
}

int gpuos_gpu_dev_alloc(struct gpuos_gpu *g, size_t len, uint64_t *dev)
{
	void *p = NULL;
	use(g);
	if (cudaMalloc(&p, len) != cudaSuccess)
		return -ENOMEM;
	*dev = (uint64_t)(uintptr_t)p;
	return 0;
}

void gpuos_gpu_dev_free(struct gpuos_gpu *g, uint64_t dev)
{
	use(g);
	/* cudaFree synchronises the device: never while the runtime spins
	 * (docs/platform.md); callers free only after it has stopped. */
	if (dev)
		cudaFree((void *)(uintptr_t)dev);
}

int gpuos_gpu_ipc_open(struct gpuos_gpu *g, const unsigned char *handle, uint64_t *base, uint64_t *len)
{
	CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr);
	cudaIpcMemHandle_t h;
	CUdeviceptr b = 0;
	size_t n = 0;
	void *p = NULL;
	_Static_assert(sizeof(h) == GPUOS_GPU_IPC_HANDLE, "cudaIpcMemHandle_t");
	use(g);
	memcpy(&h, handle, sizeof(h));
	if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
		cudaGetLastError();
		return -EINVAL;
	}
	if (entry("cuMemGetAddressRange", (void **)&range) || range(&b, &n, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS ||
	    b != (CUdeviceptr)(uintptr_t)p || n == 0) {
		cudaIpcCloseMemHandle(p);
		cudaGetLastError();
		return -EIO;
	}
	*base = (uint64_t)b;
	*len = (uint64_t)n;
	return 0;
}

int gpuos_gpu_ipc_export(struct gpuos_gpu *g, const void *ptr, size_t len, unsigned char *handle, uint64_t *offset)
{
	CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr);
	cudaIpcMemHandle_t h;
	CUdeviceptr b = 0;
	size_t n = 0;
	use(g);
	if (!gpuos_gpu_is_device(g, ptr, len))
		return -EINVAL;
	if (entry("cuMemGetAddressRange", (void **)&range) || range(&b, &n, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
		return -EIO;
	if ((uint64_t)(uintptr_t)ptr - b + len > n)
		return -ERANGE; /* across two allocations */
	if (cudaIpcGetMemHandle(&h, (void *)(uintptr_t)b) != cudaSuccess) {
		cudaGetLastError();
		return -EOPNOTSUPP; /* memory IPC cannot export (VMM, managed) */
	}
	memcpy(handle, &h, sizeof(h));
	*offset = (uint64_t)(uintptr_t)ptr - b;
	return 0;
}

void gpuos_gpu_ipc_close(struct gpuos_gpu *g, uint64_t base)
{
	use(g);
	if (base && cudaIpcCloseMemHandle((void *)(uintptr_t)base) != cudaSuccess)
		cudaGetLastError();
}

/* ---- per-thread channels ----
 * Each calling thread gets its own non-blocking stream, so emulator workers
 * copying at once never wait on each other or on the runtime kernel, and,
 * for the DMA engine, a ring of events (one per ticket) and of gather piece
 * lists in pinned memory (one per ticket: a list is reused only after the
 * launch that read it has landed). */
#define CHAN_TICKETS 32u       /* tickets in flight per channel */
#define CHAN_PIECES  4096u     /* gathered pieces per ticket */

struct chan {
	cudaStream_t s;
	cudaEvent_t ev[CHAN_TICKETS];
	struct gpuos_dma_piece *pieces;     /* CHAN_TICKETS lists of CHAN_PIECES */
	uint32_t npieces;                   /* in the list of ticket marked + 1 */
	uint64_t marked, landed;
	int dma;                            /* the events and lists exist */
	/* a copy still open for merging */
	uint8_t *cdst;
	const uint8_t *csrc;
	size_t clen;
};

/* A thread's channels, one per GPU it works for: a stream belongs to the
 * device current when it was made, and a group's runtimes on several GPUs
 * are set up from one thread. */
#define CHAN_DEVICES 16u

struct chans {
	struct chan *on[CHAN_DEVICES];
};

static pthread_key_t chan_key;
static pthread_once_t chan_once = PTHREAD_ONCE_INIT;

static void chan_free_one(struct chan *c)
{
	if (c->dma) {
		for (uint32_t i = 0; i < CHAN_TICKETS; i++)
			cudaEventDestroy(c->ev[i]);
		cudaFreeHost(c->pieces);
	}
	cudaStreamDestroy(c->s);
	free(c);
}

static void chan_free(void *p)
{
	struct chans *cs = (struct chans *)p;
	for (uint32_t d = 0; d < CHAN_DEVICES; d++)
		if (cs->on[d])
			chan_free_one(cs->on[d]);
	free(cs);
}
static void chan_key_make(void) { pthread_key_create(&chan_key, chan_free); }

/* The calling thread's channel for g's device, made on first use (with g's
 * device current). NULL when it cannot be made. */
static struct chan *my_chan(const struct gpuos_gpu *g)
{
	struct chans *cs;
	struct chan *c;
	uint32_t d = g && g->dev > 0 ? (uint32_t)g->dev : 0u;
	if (d >= CHAN_DEVICES)
		return NULL;
	pthread_once(&chan_once, chan_key_make);
	cs = (struct chans *)pthread_getspecific(chan_key);
	if (!cs) {
		cs = (struct chans *)calloc(1, sizeof(*cs));
		if (!cs)
			return NULL;
		pthread_setspecific(chan_key, cs);
	}
	c = cs->on[d];
	if (!c) {
		c = (struct chan *)calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		use(g);
		if (cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking) != cudaSuccess) {
			free(c);
			return NULL;
		}
		cs->on[d] = c;
	}
	return c;
}

static cudaStream_t my_stream(const struct gpuos_gpu *g)
{
	struct chan *c = my_chan(g);
	return c ? c->s : NULL;
}

int gpuos_gpu_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len, int to_device)
{
	use(g);
	cudaStream_t s = my_stream(g);
	(void)g;
	if (!s)
		return -EIO;
	if (cudaMemcpyAsync(dst, src, len, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s) != cudaSuccess)
		return -EIO;
	return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -EIO;
}

void gpuos_gpu_thread_init(struct gpuos_gpu *g)
{
	use(g);
	struct chan *c = my_chan(g);
	if (!c || c->dma)
		return;
	/* everything the channel needs, made now: while a kernel spins later,
	 * nothing may be created that synchronises the device */
	for (uint32_t i = 0; i < CHAN_TICKETS; i++)
		if (cudaEventCreateWithFlags(&c->ev[i], cudaEventDisableTiming) != cudaSuccess) {
			while (i--)
				cudaEventDestroy(c->ev[i]);
			return;
		}
	if (cudaHostAlloc((void **)&c->pieces, (size_t)CHAN_TICKETS * CHAN_PIECES * sizeof(struct gpuos_dma_piece),
			  cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
		for (uint32_t i = 0; i < CHAN_TICKETS; i++)
			cudaEventDestroy(c->ev[i]);
		return;
	}
	c->dma = 1;
	pthread_mutex_lock(&g->lock);
	if (g->module && !g->gather && g->host_ptr_is_dev &&
	    g->module_get_function(&g->gather, g->module, "gpuos_dma_gather") != CUDA_SUCCESS)
		g->gather = NULL;
	pthread_mutex_unlock(&g->lock);
}

/* Wait until ticket t has landed (the ring slot it holds is needed again). */
static int chan_wait(struct chan *c, uint64_t t)
{
	if (t <= c->landed)
		return 0;
	if (cudaEventSynchronize(c->ev[t % CHAN_TICKETS]) != cudaSuccess)
		return -EIO;
	c->landed = t;
	return 0;
}

static int chan_flush_copy(struct chan *c)
{
	cudaError_t e = cudaSuccess;
	if (c->clen)
		e = cudaMemcpyAsync(c->cdst, c->csrc, c->clen, cudaMemcpyHostToDevice, c->s);
	c->clen = 0;
	return e == cudaSuccess ? 0 : -EIO;
}

int gpuos_gpu_dma_copy(struct gpuos_gpu *g, void *dst, const void *src, size_t len)
{
	struct chan *c = my_chan(g);
	(void)g;
	if (!c || !c->dma)
		return -EIO;
	if (c->clen && c->cdst + c->clen == (uint8_t *)dst && c->csrc + c->clen == (const uint8_t *)src) {
		c->clen += len;        /* neighbours at both ends: one transfer */
		return 0;
	}
	if (chan_flush_copy(c))
		return -EIO;
	c->cdst = (uint8_t *)dst;
	c->csrc = (const uint8_t *)src;
	c->clen = len;
	return 0;
}

static int gather_add(struct gpuos_gpu *g, struct chan *c, void *dst, const void *src, size_t len)
{
	uint64_t t = c->marked + 1;
	struct gpuos_dma_piece *list = c->pieces + (t % CHAN_TICKETS) * CHAN_PIECES;

	if (!g->gather || c->npieces == CHAN_PIECES)
		return 1;                          /* not gathered: the caller copies */
	if (!c->npieces && t > CHAN_TICKETS && chan_wait(c, t - CHAN_TICKETS))
		return -EIO;                       /* the list's last reader must be done */
	if (c->npieces) {
		struct gpuos_dma_piece *p = &list[c->npieces - 1];
		if (p->dst + p->len == (uint64_t)(uintptr_t)dst &&
		    (src ? p->src && p->src + p->len == (uint64_t)(uintptr_t)src : !p->src)) {
			p->len += len;
			return 0;
		}
	}
	list[c->npieces].dst = (uint64_t)(uintptr_t)dst;
	list[c->npieces].src = (uint64_t)(uintptr_t)src;
	list[c->npieces].len = len;
	list[c->npieces].rsvd18 = 0;
	c->npieces++;
	return 0;
}

int gpuos_gpu_dma_gather(struct gpuos_gpu *g, void *dst, const void *src, size_t len)
{
	struct chan *c = my_chan(g);
	int r;
	if (!c || !c->dma)
		return -EIO;
	r = gather_add(g, c, dst, src, len);
	return r > 0 ? gpuos_gpu_dma_copy(g, dst, src, len) : r;
}

int gpuos_gpu_dma_zero(struct gpuos_gpu *g, void *dst, size_t len)
{
	struct chan *c = my_chan(g);
	int r;
	if (!c || !c->dma)
		return -EIO;
	if (len <= 65536u && (r = gather_add(g, c, dst, NULL, len)) <= 0)
		return r;
	return cudaMemsetAsync(dst, 0, len, c->s) == cudaSuccess ? 0 : -EIO;
}

int gpuos_gpu_dma_mark(struct gpuos_gpu *g, uint64_t *ticket)
{
	struct chan *c = my_chan(g);
	uint64_t t;
	if (!c || !c->dma)
		return -EIO;
	t = c->marked + 1;
	if (chan_flush_copy(c))
		return -EIO;
	if (c->npieces) {
		struct gpuos_dma_batch b;
		uint64_t maxlen = 0;
		void *params[1] = { &b };
		const struct gpuos_dma_piece *list = c->pieces + (t % CHAN_TICKETS) * CHAN_PIECES;
		for (uint32_t i = 0; i < c->npieces; i++)
			maxlen = list[i].len > maxlen ? list[i].len : maxlen;
		b.pieces = (uint64_t)(uintptr_t)list;   /* mapped pinned memory: same address on the GPU */
		b.n = c->npieces;
		b.rsvd0c = 0;
		unsigned units = (unsigned)((maxlen + GPUOS_DMA_UNIT - 1) / GPUOS_DMA_UNIT);
		/* the piece list in pinned memory is complete before the launch
		 * reads it: the launch orders host writes before the kernel */
		CUresult r = g->launch_kernel(g->gather, c->npieces, units > 65535u ? 65535u : units, 1, 256, 1, 1, 0,
					      (CUstream)c->s, params, NULL);
		c->npieces = 0;
		if (r != CUDA_SUCCESS)
			return -EIO;
	}
	/* the event's slot held ticket t - CHAN_TICKETS: it must have landed */
	if (t > CHAN_TICKETS && chan_wait(c, t - CHAN_TICKETS))
		return -EIO;
	if (cudaEventRecord(c->ev[t % CHAN_TICKETS], c->s) != cudaSuccess)
		return -EIO;
	c->marked = t;
	*ticket = t;
	return 0;
}

int gpuos_gpu_dma_poll(struct gpuos_gpu *g, uint64_t ticket)
{
	struct chan *c = my_chan(g);
	cudaError_t e;
	(void)g;
	if (!c || !c->dma || ticket > c->marked)
		return -EIO;
	if (ticket <= c->landed)
		return 1;
	if (ticket + CHAN_TICKETS <= c->marked)
		return -EIO;                        /* its event was reused: not asked in order */
	e = cudaEventQuery(c->ev[ticket % CHAN_TICKETS]);
	if (e == cudaErrorNotReady)
		return 0;
	if (e != cudaSuccess)
		return -EIO;
	c->landed = ticket;
	return 1;
}

int gpuos_gpu_image_load(struct gpuos_gpu *g, const void *image, char *why, size_t whylen)
{
	int r = 0;
	use(g);
	pthread_mutex_lock(&g->lock);
	if (!g->module || g->image != image) {
		CUresult cr = g->module_load_data(&g->module, image);
		if (cr != CUDA_SUCCESS) {
			snprintf(why, whylen, "cannot load the runtime image: %s", cu_err(g, cr));
			r = -EIO;
		} else {
			g->image = image;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return r;
}

int gpuos_gpu_memset(struct gpuos_gpu *g, uint64_t dev, int v, size_t len)
{
	use(g);
	cudaStream_t s = my_stream(g);
	(void)g;
	if (!s)
		return -EIO;
	if (cudaMemsetAsync((void *)(uintptr_t)dev, v, len, s) != cudaSuccess)
		return -EIO;
	return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -EIO;
}

int gpuos_gpu_host_func(struct gpuos_gpu *g, void *stream, void (*fn)(void *), void *arg)
{
	(void)g;
	return cudaLaunchHostFunc((cudaStream_t)stream, fn, arg) == cudaSuccess ? 0 : -EIO;
}

/* ---- VRAM for other processes (the Driver API's virtual memory management) ---- */

static void vmm_prop(int dev, CUmemAllocationProp *p)
{
	memset(p, 0, sizeof(*p));
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = dev;
	p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

static int vmm_access(uint64_t va, size_t len, int dev)
{
	CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
	CUmemAccessDesc a;
	memset(&a, 0, sizeof(a));
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = dev;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (entry("cuMemSetAccess", (void **)&set_access))
		return -ENOSYS;
	return set_access((CUdeviceptr)va, len, &a, 1) == CUDA_SUCCESS ? 0 : -EIO;
}

size_t gpuos_gpu_vmm_granularity(struct gpuos_gpu *g)
{
	CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
	CUmemAllocationProp p;
	size_t n = 0;
	vmm_prop(g->dev, &p);
	if (entry("cuMemGetAllocationGranularity", (void **)&gran) ||
	    gran(&n, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
		return 0;
	return n;
}

int gpuos_gpu_vmm_reserve(struct gpuos_gpu *g, size_t len, uint64_t *va)
{
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
	CUdeviceptr p = 0;
	use(g);
	if (entry("cuMemAddressReserve", (void **)&reserve))
		return -ENOSYS;
	if (reserve(&p, len, 0, 0, 0) != CUDA_SUCCESS)
		return -ENOMEM;
	*va = (uint64_t)p;
	return 0;
}

void gpuos_gpu_vmm_unreserve(struct gpuos_gpu *g, uint64_t va, size_t len)
{
	CUresult (*release)(CUdeviceptr, size_t);
	(void)g;
	if (!entry("cuMemAddressFree", (void **)&release))
		release((CUdeviceptr)va, len);
}

int gpuos_gpu_vmm_map_new(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t *handle, int *fd)
{
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*exp)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp p;
	int f = -1;
	use(g);

	if (entry("cuMemCreate", (void **)&create) || entry("cuMemMap", (void **)&map) ||
	    entry("cuMemExportToShareableHandle", (void **)&exp) || entry("cuMemRelease", (void **)&release))
		return -ENOSYS;
	vmm_prop(g->dev, &p);
	if (create(&h, len, &p, 0) != CUDA_SUCCESS)
		return -ENOMEM;
	if (map((CUdeviceptr)va, len, 0, h, 0) != CUDA_SUCCESS) {
		release(h);
		return -EIO;
	}
	if (vmm_access(va, len, g->dev) || exp(&f, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) {
		gpuos_gpu_vmm_unmap(g, va, len, (uint64_t)h);
		return -EIO;
	}
	/* Not for a program this process might start. */
	fcntl(f, F_SETFD, FD_CLOEXEC);
	*handle = (uint64_t)h;
	*fd = f;
	return 0;
}

void gpuos_gpu_vmm_unmap(struct gpuos_gpu *g, uint64_t va, size_t len, uint64_t handle)
{
	CUresult (*unmap)(CUdeviceptr, size_t);
	CUresult (*release)(CUmemGenericAllocationHandle);
	(void)g;
	if (!entry("cuMemUnmap", (void **)&unmap))
		unmap((CUdeviceptr)va, len);
	/* The allocation itself lives on while another process maps it. */
	if (!entry("cuMemRelease", (void **)&release))
		release((CUmemGenericAllocationHandle)handle);
}

int gpuos_gpu_vmm_import(int fd, size_t len, uint64_t *va, uint64_t *handle, void *head, size_t head_len,
			 char *why, size_t whylen)
{
	CUresult (*import)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUmemGenericAllocationHandle h;
	int dev = 0;
	uint64_t p = 0;
	CUresult r;

	/* The CUDA runtime's primary context, current on this thread. */
	if (cudaFree(0) != cudaSuccess || cudaGetDevice(&dev) != cudaSuccess) {
		snprintf(why, whylen, "no CUDA device to map the service's memory on");
		return -ENODEV;
	}
	if (entry("cuMemImportFromShareableHandle", (void **)&import) || entry("cuMemMap", (void **)&map) ||
	    entry("cuMemRelease", (void **)&release)) {
		snprintf(why, whylen, "this CUDA driver lacks virtual memory management (cuMemImportFromShareableHandle)");
		return -ENOSYS;
	}
	r = import(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "import the service's GPU memory (cuMemImportFromShareableHandle): error %d%s",
			 (int)r, r == CUDA_ERROR_INVALID_DEVICE ? ": it lives on another GPU" : "");
		return -EIO;
	}
	if (gpuos_gpu_vmm_reserve(NULL, len, &p)) {
		release(h);
		snprintf(why, whylen, "reserve %zu bytes of GPU address space", len);
		return -ENOMEM;
	}
	if (map((CUdeviceptr)p, len, 0, h, 0) != CUDA_SUCCESS || vmm_access(p, len, dev)) {
		gpuos_gpu_vmm_unimport(p, len, (uint64_t)h);
		snprintf(why, whylen, "map the service's GPU memory (%zu bytes): the area is smaller, or another GPU's",
			 len);
		return -EIO;
	}
	if (head_len > len || cudaMemcpy(head, (const void *)(uintptr_t)p, head_len, cudaMemcpyDeviceToHost) != cudaSuccess) {
		gpuos_gpu_vmm_unimport(p, len, (uint64_t)h);
		snprintf(why, whylen, "read the service's GPU memory");
		return -EIO;
	}
	*va = p;
	*handle = (uint64_t)h;
	return 0;
}

void gpuos_gpu_vmm_unimport(uint64_t va, size_t len, uint64_t handle)
{
	gpuos_gpu_vmm_unmap(NULL, va, len, handle);
	gpuos_gpu_vmm_unreserve(NULL, va, len);
}

static const char *cu_err(struct gpuos_gpu *g, CUresult r)
{
	const char *s = NULL;
	if (g->get_error_string(r, &s) != CUDA_SUCCESS || !s)
		s = "unknown CUDA error";
	return s;
}

/* Launch entry_name of image with one parameter whose value is at *param. */
static int launch(struct gpuos_gpu *g, int stream, const void *image, const char *entry_name, void *param,
		  unsigned grid, unsigned block, char *why, size_t whylen)
{
	CUfunction fn;
	CUresult r;
	void *params[1];
	use(g);

	if (!g->module || g->image != image) {
		r = g->module_load_data(&g->module, image);
		if (r != CUDA_SUCCESS) {
			snprintf(why, whylen, "cannot load the runtime image: %s", cu_err(g, r));
			return -EIO;
		}
		g->image = image;
	}
	r = g->module_get_function(&fn, g->module, entry_name);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "no entry %s in the runtime image: %s", entry_name, cu_err(g, r));
		return -EIO;
	}
	params[0] = param;
	r = g->launch_kernel(fn, grid, 1, 1, block, 1, 1, 0, (CUstream)g->stream[stream], params, NULL);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "cannot launch %s: %s", entry_name, cu_err(g, r));
		return -EIO;
	}
	return 0;
}

int gpuos_gpu_launch(struct gpuos_gpu *g, int stream, const void *image, const char *entry_name, uint64_t arg,
		     unsigned grid, unsigned block, char *why, size_t whylen)
{
	return launch(g, stream, image, entry_name, &arg, grid, block, why, whylen);
}

int gpuos_gpu_launch_value(struct gpuos_gpu *g, int stream, const void *image, const char *entry_name,
			   const void *value, unsigned grid, unsigned block, char *why, size_t whylen)
{
	return launch(g, stream, image, entry_name, (void *)value, grid, block, why, whylen);
}

int gpuos_gpu_wait(struct gpuos_gpu *g, int stream, char *why, size_t whylen)
{
	use(g);
	cudaError_t e = cudaStreamSynchronize(g->stream[stream]);
	if (e != cudaSuccess) {
		snprintf(why, whylen, "%s kernel failed: %s",
			 stream == GPUOS_STREAM_CLIENT ? "the client" : stream == GPUOS_STREAM_WORK ? "gpuos's" : "runtime",
			 cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

int gpuos_gpu_running(struct gpuos_gpu *g, int stream)
{
	return cudaStreamQuery(g->stream[stream]) == cudaErrorNotReady;
}

int gpuos_gpu_module_load(struct gpuos_gpu *g, const void *image, const char *entry_name,
			  struct gpuos_gpu_module **out, size_t *local_bytes, unsigned *max_threads, char *why,
			  size_t whylen)
{
	struct gpuos_gpu_module *m;
	int local = 0, maxt = 0;
	CUresult r;
	use(g);

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	snprintf(m->entry, sizeof(m->entry), "%s", entry_name);
	/* CUDA_MODULE_LOADING=EAGER (set in gpuos_gpu_open): every function of
	 * the module is loaded now, while the runtime is parked, and nothing
	 * lazily at the first launch, when it spins again. */
	r = g->module_load_data(&m->module, image);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "the driver cannot load the app image: %s", cu_err(g, r));
		free(m);
		return -EIO;
	}
	r = g->module_get_function(&m->fn, m->module, entry_name);
	if (r == CUDA_SUCCESS)
		r = g->func_get_attribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, m->fn);
	if (r == CUDA_SUCCESS)
		r = g->func_get_attribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, m->fn);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "entry %s of the app image: %s", entry_name, cu_err(g, r));
		g->module_unload(m->module);
		free(m);
		return -EIO;
	}
	if (local_bytes)
		*local_bytes = local > 0 ? (size_t)local : 0;
	if (max_threads)
		*max_threads = maxt > 0 ? (unsigned)maxt : 0;
	*out = m;
	return 0;
}

void gpuos_gpu_module_unload(struct gpuos_gpu *g, struct gpuos_gpu_module *m)
{
	use(g);
	if (!m)
		return;
	/* Parked: unloading synchronises with the device like cudaFree. */
	g->module_unload(m->module);
	free(m);
}

int gpuos_gpu_stack_reserve(struct gpuos_gpu *g, size_t bytes, char *why, size_t whylen)
{
	size_t cur = 0;
	use(g);
	if (cudaDeviceGetLimit(&cur, cudaLimitStackSize) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(why, whylen, "cannot read the GPU stack size");
		return -EIO;
	}
	if (cur >= bytes)
		return 0;
	/* Raised here, with the runtime parked, never by the driver at a
	 * launch: that waits for an idle device, which a spinning runtime
	 * never gives (see gpuos_gpu_open). */
	bytes = GPUOS_ALIGN_UP(bytes, (size_t)16);
	if (cudaDeviceSetLimit(cudaLimitStackSize, bytes) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(why, whylen, "cannot raise the GPU stack size to %zu bytes per thread", bytes);
		return -EIO;
	}
	return 0;
}

int gpuos_gpu_module_launch(struct gpuos_gpu *g, struct gpuos_gpu_module *m, int stream, uint64_t arg,
			    unsigned grid, unsigned block, char *why, size_t whylen)
{
	void *params[1];
	CUresult r;
	use(g);
	params[0] = &arg;
	r = g->launch_kernel(m->fn, grid, 1, 1, block, 1, 1, 0, (CUstream)g->stream[stream], params, NULL);
	if (r != CUDA_SUCCESS) {
		snprintf(why, whylen, "cannot launch %s (grid %u, block %u): %s", m->entry, grid, block, cu_err(g, r));
		return -EIO;
	}
	return 0;
}
