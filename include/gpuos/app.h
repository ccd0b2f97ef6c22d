/* SPDX-License-Identifier: MIT */
/*
 * gpuos/app.h - what a GPU app image carries so that boot/ can check it
 * before loading it (docs/apps.md, "Running"; gpuos_image_inspect in boot/image.c reads it).
 *
 * An app marks its image, once, at namespace scope of one of its .cu files:
 *
 *     #include "gpuos/app.h"
 *     GPUOS_APP_ABI_NOTE;
 *
 * The ABI note is a device variable with C linkage,
 *
 *     extern "C" __device__ const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION;
 *
 * marked used so that no compiler pass drops it. nvcc 13 puts it in the
 * cubin as an STT_OBJECT symbol of size 4 named gpuos_abi_version in
 * .nv.global.init, its value the offset of the 4 little-endian bytes in
 * that section; the same holds for -rdc=true objects after nvlink.
 * (nvcc keeps no ELF note of the program's own: its .note.nv.* sections
 * are the toolkit's, so a symbol is what survives.) boot/ finds it by name
 * and reads it through its section and value, whatever the section.
 *
 * Built by gcc or g++ (the host-mode variants of apps), the macro defines
 * the same symbol as an ordinary constant with C linkage.
 *
 * Use it once per image: with -rdc=true two definitions clash at link time,
 * which is the right answer (one image, one ABI version).
 */
#ifndef GPUOS_APP_H
#define GPUOS_APP_H

#include "gpuos/abi.h"
#include "gpuos/port.h"

#if defined(__CUDACC__)
#define GPUOS_APP_ABI_NOTE                                                                      \
	extern "C" __device__ __attribute__((used)) const unsigned int gpuos_abi_version = \
		GPUOS_ABI_VERSION
#elif defined(__cplusplus)
#define GPUOS_APP_ABI_NOTE \
	extern "C" __attribute__((used)) const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION
#else
#define GPUOS_APP_ABI_NOTE __attribute__((used)) const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION
#endif

/* The symbol's name, for tools that look it up. */
#define GPUOS_APP_ABI_SYMBOL "gpuos_abi_version"

/* ---- what `gpuos run` hands an app ----------------------------------------------
 *
 * An app is one portable source file, apps/NAME.c, written against
 * gpuos/gpuos.h: nvcc builds it (-x cu) into build/apps/NAME.cubin, gcc into
 * build/apps/NAME.so, the host-mode variant that `gpuos run` uses when the
 * runtime runs on CPU threads. Its entry:
 *
 *     GPUOS_HD static void NAME_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
 *     { ... }
 *     GPUOS_APP_ENTRY(NAME)
 *
 * runs once per thread: on the GPU tid = blockIdx.x * blockDim.x +
 * threadIdx.x of a --grid G --block B launch; in host mode on G * B host
 * threads (warp width 1: the gpuos_warp_* helpers degrade to one lane).
 * Threads of one launch may wait for each other through memory (atomics of
 * gpuos/port.h) only if all of them run at once: keep G small enough to be
 * resident (one block per SM at most is always safe).
 */
#define GPUOS_APP_MAGIC 0x70706167u /* "gapp" */
#define GPUOS_APP_MAX_ARGS 64u

struct gpuos_app_args {
	uint32_t magic;        /* 0x00 GPUOS_APP_MAGIC */
	uint32_t version;      /* 0x04 GPUOS_ABI_VERSION */
	uint64_t mbox;         /* 0x08 struct gpuos_mbox *, runtime space: gpuos_post() and friends */
	uint64_t heap;         /* 0x10 client memory (registered: a valid dst), host memory */
	uint64_t heap_len;     /* 0x18 */
	uint64_t vram;         /* 0x20 client memory in VRAM (registered); host mode: ordinary memory */
	uint64_t vram_len;     /* 0x28 */
	uint32_t argc;         /* 0x30 the arguments after `--` */
	uint32_t threads;      /* 0x34 grid x block */
	uint64_t argv;         /* 0x38 const char *const[argc], strings in heap (NUL-terminated) */
	uint64_t out;          /* 0x40 char[out_len] in heap: the app's report, printed by gpuos run */
	uint64_t out_len;      /* 0x48 */
	uint32_t status;       /* 0x50 exit status, written by the app (0: success); starts 0 */
	uint32_t on_gpu;       /* 0x54 1: a GPU launch; 0: the host-mode variant */
	uint64_t scratch;      /* 0x58 64 zeroed bytes (in vram) for the app's own counters and flags */
	uint64_t progress_done;  /* 0x60 bytes moved so far: gpuos_app_progress_add */
	uint64_t progress_total; /* 0x68 bytes the app will move, 0 unknown: gpuos_app_progress_total */
	uint64_t rsvd[2];        /* 0x70 .. 0x7f */
};
static_assert(sizeof(struct gpuos_app_args) == 128, "app args size");
static_assert(offsetof(struct gpuos_app_args, status) == 0x50, "app args status");

/* Progress for the bar of `gpuos run` (on stderr, when it is a terminal):
 * the app says once how many bytes it will move, and each thread adds what
 * it has moved. Relaxed and system scope: the host only displays them while
 * the app runs; nothing else is ordered by them. An app that says nothing
 * gets a bar of the runtime's bytes without a percentage. */
GPUOS_INLINE GPUOS_HD void gpuos_app_progress_total(struct gpuos_app_args *a, uint64_t bytes)
{
	gpuos_store_relaxed_sys64(&a->progress_total, bytes);
}

GPUOS_INLINE GPUOS_HD void gpuos_app_progress_add(struct gpuos_app_args *a, uint64_t bytes)
{
	gpuos_fetch_add_relaxed_sys64(&a->progress_done, bytes);
}

#if defined(__CUDACC__)
#define GPUOS_APP_ENTRY(name)                                                            \
	extern "C" __global__ void name(struct gpuos_app_args *a)                        \
	{                                                                                \
		name##_main(a, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x); \
	}
#else
/* Host-mode variant: gpuos run calls it from each of `threads` host threads. */
#define GPUOS_APP_ENTRY(name)                                                            \
	void name(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads);            \
	void name(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)             \
	{                                                                                \
		name##_main(a, tid, nthreads);                                           \
	}
#endif

#endif /* GPUOS_APP_H */
