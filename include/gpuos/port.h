/* SPDX-License-Identifier: MIT */
/*
 * gpuos/port.h - the only header that knows gcc from nvcc.
 *
 * Everything in include/gpuos/ and runtime/ is C11 that is also valid C++ and
 * compiles for the host (gcc, one "lane" per service thread) and for the GPU
 * (nvcc, 32 lanes per warp). This file names the primitives they share:
 * function qualifiers, lane/warp helpers, atomics with explicit ordering and
 * scope, fences, MMIO stores, a monotonic clock.
 *
 * Scopes: "dev" orders against other threads of the same GPU (or, on the host,
 * other CPU threads); "sys" orders against the CPU and against PCIe peers (the
 * SSD, or the emulated controller's CPU threads). Ordering follows the PTX
 * memory model (PTX ISA, "Memory Consistency Model") on the GPU and the C11
 * model through the __atomic builtins on the host.
 */
#ifndef GPUOS_PORT_H
#define GPUOS_PORT_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(__CUDACC__)
#error "gpuos/port.h needs clock_gettime and nanosleep: compile with -D_GNU_SOURCE (the Makefile does)"
#endif
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpuos assumes a little-endian host (NVMe structures are little-endian)"
#endif

#ifndef __cplusplus
/* C11's keyword; <assert.h> maps static_assert to it in C. */
#ifndef static_assert
#define static_assert _Static_assert
#endif
#endif

#ifdef __cplusplus
#define GPUOS_EXTERN_C_BEGIN extern "C" {
#define GPUOS_EXTERN_C_END }
#else
#define GPUOS_EXTERN_C_BEGIN
#define GPUOS_EXTERN_C_END
#endif

#if defined(__CUDACC__)
#define GPUOS_HD __host__ __device__
#define GPUOS_INLINE static __forceinline__
#define GPUOS_NOINLINE __noinline__
#else
#define GPUOS_HD
#define GPUOS_INLINE static inline __attribute__((always_inline))
#define GPUOS_NOINLINE __attribute__((noinline))
#endif
/* GPUOS_NOINLINE marks the big, cold entry points (parsers, the metadata
 * warp's operations): kept as calls, they stay out of the service warps'
 * hot loop and keep the device compiler's work per function small. */

/* True in the device pass of nvcc: code here runs on a GPU lane. */
#if defined(__CUDA_ARCH__)
#define GPUOS_ON_GPU 1
#else
#define GPUOS_ON_GPU 0
#endif

#define GPUOS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GPUOS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- lanes and warps ------------------------------------------------------
 * A "warp" is the unit that owns queue pairs. On the GPU it is 32 lanes; on
 * the host it is one thread, width 1, lane 0. Code written as
 * for (i = lane; i < n; i += width) runs unchanged on both.
 */
#define GPUOS_WARP_MAX 32u

GPUOS_INLINE GPUOS_HD uint32_t gpuos_warp_width(void)
{
#if GPUOS_ON_GPU
	return 32u;
#else
	return 1u;
#endif
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_lane_id(void)
{
#if GPUOS_ON_GPU
	uint32_t l;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
	return l;
#else
	return 0u;
#endif
}

/* Bit i set when lane i passes pred. All lanes of the warp must call it. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_warp_ballot(int pred)
{
#if GPUOS_ON_GPU
	return __ballot_sync(0xffffffffu, pred);
#else
	return pred ? 1u : 0u;
#endif
}

/* Value of v held by lane src. All lanes of the warp must call it. */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_warp_bcast64(uint64_t v, uint32_t src)
{
#if GPUOS_ON_GPU
	return __shfl_sync(0xffffffffu, (unsigned long long)v, (int)src);
#else
	(void)src;
	return v;
#endif
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_warp_bcast32(uint32_t v, uint32_t src)
{
#if GPUOS_ON_GPU
	return __shfl_sync(0xffffffffu, v, (int)src);
#else
	(void)src;
	return v;
#endif
}

/* Reconverge the warp; orders shared/global accesses among its lanes. */
GPUOS_INLINE GPUOS_HD void gpuos_warp_sync(void)
{
#if GPUOS_ON_GPU
	__syncwarp();
#endif
}

GPUOS_INLINE GPUOS_HD uint32_t gpuos_popc(uint32_t v)
{
#if GPUOS_ON_GPU
	return (uint32_t)__popc(v);
#else
	return (uint32_t)__builtin_popcount(v);
#endif
}

/* Number of set bits of mask below bit `lane` (rank of this lane among the set). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_rank_below(uint32_t mask, uint32_t lane)
{
	return gpuos_popc(mask & ((1u << lane) - 1u));
}

/* Index of the lowest set bit; mask must be non-zero. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_ffs(uint32_t mask)
{
#if GPUOS_ON_GPU
	return (uint32_t)__ffs((int)mask) - 1u;
#else
	return (uint32_t)__builtin_ctz(mask);
#endif
}

/* Index of the lowest set bit of a 64-bit mask; mask must be non-zero. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_ffs64(uint64_t mask)
{
#if GPUOS_ON_GPU
	return (uint32_t)__ffsll((long long)mask) - 1u;
#else
	return (uint32_t)__builtin_ctzll(mask);
#endif
}

/* Back off politely while polling. */
GPUOS_INLINE GPUOS_HD void gpuos_pause(void)
{
#if GPUOS_ON_GPU
	__nanosleep(64);
#elif defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Wait politely in a poll loop; *spins counts the calls since the last
 * progress (the caller zeroes it). The GPU sleeps 20 ns for a while, then
 * longer, up to 1 us. A host thread spins, then yields (on a machine with
 * fewer cores than polling threads the one we wait for may need our core:
 * without the yields a fresh clone's service.sh took 311 s in make test
 * against 222, and test_runtime's 64 clients 45 s against 18, 2026-12-03),
 * then naps: 20 us, twice as long every 64 naps, up to 1 ms. A wake-up costs
 * a host thread about 10 us of CPU on the 2-core build machine, so 20 us naps
 * forever kept each idle service thread at 12 % of a core (issue 35); the
 * cap bounds how late a long wait notices its answer, and the first ~100 ms
 * of a wait still poll often. Polling only: nothing here orders memory (the
 * caller's acquire loads do). */
#if !GPUOS_ON_GPU
#include <sched.h>
/* One step of a host wait: a pause the first 64 calls, then a yield until
 * call naps_from; after that the nap the caller takes, in ns (0 for a step
 * that paused or yielded here). *spins counts the calls
 * (saturating: a wait of 49 days stays at the longest nap). */
static inline long gpuos_host_wait_step(uint32_t *spins, uint32_t naps_from)
{
	uint32_t n = *spins < UINT32_MAX ? ++*spins : *spins;
	uint32_t k = (n - naps_from) >> 6;
	if (n < 64)
		gpuos_pause();
	else if (n < naps_from)
		sched_yield();
	return n < naps_from ? 0 : k < 6 ? 20000L << k : 1000000L;
}
#endif
GPUOS_INLINE GPUOS_HD void gpuos_backoff(uint32_t *spins)
{
#if GPUOS_ON_GPU
	uint32_t n = ++*spins;
	__nanosleep(n < 256 ? 20u : n < 8192 ? 200u : 1000u);
#else
	struct timespec ts = { 0, gpuos_host_wait_step(spins, 256) };
	if (ts.tv_nsec)
		nanosleep(&ts, 0);
#endif
}

/* Wait politely for *word to leave `seen`: gpuos_backoff, where a host
 * thread's naps sleep in the kernel on the word (a futex), so that the
 * thread that changes it ends the nap by calling gpuos_wake32(word) after
 * its store (a barrier's generation); it does not yield first. Under load
 * the waiter then neither holds a core nor oversleeps: the llama engine's
 * barrier took 22 % less CPU and time beside two busy suites (2026-12-03).
 * Not for mailbox answers: a wake per answer and 64 clients asleep made
 * test_runtime's many_clients test 3.5 times slower under TSan (every
 * answer a switch to its client).
 * A nap that ends unwoken only polls again: a writer that does not wake
 * (the GPU) costs latency, not correctness. Polling only, as gpuos_backoff:
 * the futex compares the word and orders nothing; the caller's acquire load
 * after the return does. Not a private futex: services share memory with
 * client processes. */
#if !GPUOS_ON_GPU && defined(__linux__) && (defined(_GNU_SOURCE) || defined(_DEFAULT_SOURCE))
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define GPUOS_HOST_FUTEX 1
#else
#define GPUOS_HOST_FUTEX 0
#endif
GPUOS_INLINE GPUOS_HD void gpuos_wait_change32(const uint32_t *word, uint32_t seen, uint32_t *spins)
{
#if GPUOS_HOST_FUTEX
	/* no yields: the waker's call ends the sleep */
	struct timespec ts = { 0, gpuos_host_wait_step(spins, 64) };
	if (ts.tv_nsec)
		(void)syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
#else
	(void)word;
	(void)seen;
	gpuos_backoff(spins);
#endif
}

/* Wake every host thread in gpuos_wait_change32 on word (after the store
 * that changed it); nothing on the GPU. */
GPUOS_INLINE GPUOS_HD void gpuos_wake32(uint32_t *word)
{
#if GPUOS_HOST_FUTEX
	(void)syscall(SYS_futex, word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
#else
	(void)word;
#endif
}

/* ---- clock ------------------------------------------------------------------
 * Nanoseconds from an arbitrary origin, monotonic. On the GPU %globaltimer
 * (updated about every microsecond); on the host CLOCK_MONOTONIC.
 */

GPUOS_INLINE GPUOS_HD uint64_t gpuos_now_ns(void)
{
#if GPUOS_ON_GPU
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* ---- atomics ----------------------------------------------------------------
 * Named by ordering and scope. _dev: other threads of this GPU (or other CPU
 * threads in host mode). _sys: the CPU and PCIe peers too.
 */
/* One definition per compiler pass: PTX ld/st with .sem.scope on the GPU,
 * __atomic builtins on the host. */
#if GPUOS_ON_GPU
#define GPUOS_DEF_LD(name, T, bits, C, sem, scope, hostorder)                  \
	GPUOS_INLINE GPUOS_HD T name(const T *p)                               \
	{                                                                      \
		T r;                                                           \
		asm volatile("ld." sem "." scope ".global.u" #bits " %0, [%1];" \
			     : "=" C(r) : "l"(p) : "memory");                  \
		return r;                                                      \
	}
#define GPUOS_DEF_ST(name, T, bits, C, sem, scope, hostorder)                  \
	GPUOS_INLINE GPUOS_HD void name(T *p, T v)                             \
	{                                                                      \
		asm volatile("st." sem "." scope ".global.u" #bits " [%0], %1;" \
			     :: "l"(p), C(v) : "memory");                      \
	}
#else
#define GPUOS_DEF_LD(name, T, bits, C, sem, scope, hostorder)                  \
	GPUOS_INLINE GPUOS_HD T name(const T *p)                               \
	{                                                                      \
		return __atomic_load_n(p, hostorder);                          \
	}
#define GPUOS_DEF_ST(name, T, bits, C, sem, scope, hostorder)                  \
	GPUOS_INLINE GPUOS_HD void name(T *p, T v)                             \
	{                                                                      \
		__atomic_store_n(p, v, hostorder);                             \
	}
#endif

GPUOS_DEF_LD(gpuos_load_acquire_dev32, uint32_t, 32, "r", "acquire", "gpu", __ATOMIC_ACQUIRE)
GPUOS_DEF_LD(gpuos_load_acquire_sys32, uint32_t, 32, "r", "acquire", "sys", __ATOMIC_ACQUIRE)
GPUOS_DEF_LD(gpuos_load_relaxed_dev32, uint32_t, 32, "r", "relaxed", "gpu", __ATOMIC_RELAXED)
GPUOS_DEF_LD(gpuos_load_relaxed_sys32, uint32_t, 32, "r", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_LD(gpuos_load_acquire_sys64, uint64_t, 64, "l", "acquire", "sys", __ATOMIC_ACQUIRE)
GPUOS_DEF_LD(gpuos_load_relaxed_sys64, uint64_t, 64, "l", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_LD(gpuos_load_relaxed_sys16, uint16_t, 16, "h", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_ST(gpuos_store_release_dev32, uint32_t, 32, "r", "release", "gpu", __ATOMIC_RELEASE)
GPUOS_DEF_ST(gpuos_store_relaxed_dev32, uint32_t, 32, "r", "relaxed", "gpu", __ATOMIC_RELAXED)
GPUOS_DEF_ST(gpuos_store_release_sys32, uint32_t, 32, "r", "release", "sys", __ATOMIC_RELEASE)
GPUOS_DEF_ST(gpuos_store_relaxed_sys32, uint32_t, 32, "r", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_ST(gpuos_store_relaxed_sys64, uint64_t, 64, "l", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_ST(gpuos_store_release_sys64, uint64_t, 64, "l", "release", "sys", __ATOMIC_RELEASE)

/* Read-modify-writes, named by ordering and scope like the loads and
 * stores: the GPU runs PTX atom.SEM.SCOPE (sm_70+), the host the __atomic
 * builtin of the same order, so ThreadSanitizer checks the orderings the
 * GPU runs (docs/design.md, "The life of a command"). Each returns the old
 * value. _sys forms on the GPU only on memory where system-scope atomics
 * work (device memory), never on pinned host memory: PCIe gives no atomics
 * there. */
#if GPUOS_ON_GPU
#define GPUOS_DEF_ADD(name, T, bits, C, sem, scope, hostorder)                          \
	GPUOS_INLINE GPUOS_HD T name(T *p, T v)                                          \
	{                                                                                \
		T r;                                                                     \
		asm volatile("atom." sem "." scope ".global.add.u" #bits " %0, [%1], %2;" \
			     : "=" C(r) : "l"(p), C(v) : "memory");                      \
		return r;                                                                \
	}
#define GPUOS_DEF_CAS(name, sem, scope, hostorder)                                       \
	GPUOS_INLINE GPUOS_HD uint32_t name(uint32_t *p, uint32_t expect, uint32_t desired) \
	{                                                                                \
		uint32_t r;                                                              \
		asm volatile("atom." sem "." scope ".global.cas.b32 %0, [%1], %2, %3;"   \
			     : "=r"(r) : "l"(p), "r"(expect), "r"(desired) : "memory"); \
		return r;                                                                \
	}
#else
#define GPUOS_DEF_ADD(name, T, bits, C, sem, scope, hostorder)                          \
	GPUOS_INLINE GPUOS_HD T name(T *p, T v)                                          \
	{                                                                                \
		return __atomic_fetch_add(p, v, hostorder);                              \
	}
/* A failed compare reads with the strongest order a load may have: the
 * acquire half, as the GPU's atom does. */
#define GPUOS_DEF_CAS(name, sem, scope, hostorder)                                       \
	GPUOS_INLINE GPUOS_HD uint32_t name(uint32_t *p, uint32_t expect, uint32_t desired) \
	{                                                                                \
		__atomic_compare_exchange_n(p, &expect, desired, 0, hostorder,           \
					    hostorder == __ATOMIC_RELAXED ? __ATOMIC_RELAXED     \
					    : __ATOMIC_ACQUIRE);                                 \
		return expect;                                                           \
	}
#endif

GPUOS_DEF_ADD(gpuos_fetch_add_relaxed_dev32, uint32_t, 32, "r", "relaxed", "gpu", __ATOMIC_RELAXED)
GPUOS_DEF_ADD(gpuos_fetch_add_relaxed_sys32, uint32_t, 32, "r", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_ADD(gpuos_fetch_add_relaxed_sys64, uint64_t, 64, "l", "relaxed", "sys", __ATOMIC_RELAXED)
GPUOS_DEF_ADD(gpuos_fetch_add_release_dev32, uint32_t, 32, "r", "release", "gpu", __ATOMIC_RELEASE)
GPUOS_DEF_ADD(gpuos_fetch_add_release_sys32, uint32_t, 32, "r", "release", "sys", __ATOMIC_RELEASE)
GPUOS_DEF_ADD(gpuos_fetch_add_acq_rel_dev32, uint32_t, 32, "r", "acq_rel", "gpu", __ATOMIC_ACQ_REL)
GPUOS_DEF_CAS(gpuos_cas_acquire_dev32, "acquire", "gpu", __ATOMIC_ACQUIRE)
GPUOS_DEF_CAS(gpuos_cas_acquire_sys32, "acquire", "sys", __ATOMIC_ACQUIRE)
GPUOS_DEF_CAS(gpuos_cas_acq_rel_dev32, "acq_rel", "gpu", __ATOMIC_ACQ_REL)

/* ---- fences -------------------------------------------------------------- */

/* Orders this thread's earlier memory accesses before its later ones as seen
 * by other threads of this GPU (host: other CPU threads). */
GPUOS_INLINE GPUOS_HD void gpuos_fence_dev(void)
{
#if GPUOS_ON_GPU
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#elif defined(__SANITIZE_THREAD__)
	__asm__ __volatile__("" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The same, observed by the CPU and by PCIe peers (an SSD fetching an SQE,
 * the emulated controller's threads). */
GPUOS_INLINE GPUOS_HD void gpuos_fence_sys(void)
{
#if GPUOS_ON_GPU
	asm volatile("fence.sc.sys;" ::: "memory");
#elif defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer does not model fences. On the host every fence_sys
	 * is followed by an MMIO store, which is a release store there (below),
	 * so the ordering TSan checks is carried by that store. */
	__asm__ __volatile__("" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* A store that an earlier fence of this thread already made a release
 * (one fence for a batch of publications). On the GPU a relaxed system-scope
 * store; on the host a release store: the same instruction on x86, and the
 * form ThreadSanitizer understands (it does not model fences). */
GPUOS_INLINE GPUOS_HD void gpuos_store_fenced32(uint32_t *p, uint32_t v)
{
#if GPUOS_ON_GPU
	asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* ---- MMIO -------------------------------------------------------------------
 * Controller registers (BAR0 or the emulator's register file). Stores are
 * never merged or reordered with other MMIO stores of this thread; on the GPU
 * they are st.mmio.relaxed.sys (PTX ISA 8.2, sm_70+), which also work on
 * ordinary pinned host memory. A doorbell store still needs a fence_sys
 * before it to publish the queue entries it announces.
 */
GPUOS_INLINE GPUOS_HD void gpuos_mmio_write32(volatile uint32_t *reg, uint32_t v)
{
#if GPUOS_ON_GPU
	asm volatile("st.mmio.relaxed.sys.global.u32 [%0], %1;" :: "l"(reg), "r"(v) : "memory");
#else
	/* A release store (a plain mov on x86): an emulated controller's thread
	 * reading the register with acquire sees what came before it. */
	__atomic_store_n((uint32_t *)(uintptr_t)reg, v, __ATOMIC_RELEASE);
#endif
}

/* Relaxed on both sides: a register value with nothing behind it (CFS). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mmio_read32(const volatile uint32_t *reg)
{
#if GPUOS_ON_GPU
	uint32_t v;
	asm volatile("ld.mmio.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(reg) : "memory");
	return v;
#else
	return __atomic_load_n((const uint32_t *)(uintptr_t)reg, __ATOMIC_RELAXED);
#endif
}

/* A register read that later accesses must follow (CSTS.RDY before the
 * queues are touched again): pairs with the controller's release of the
 * register (the emulator's store; a device's own ordering). On the GPU the
 * load and then a system-scope fence, at least an acquire; on the host an
 * acquire load, the form ThreadSanitizer understands. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mmio_read_acquire32(const volatile uint32_t *reg)
{
#if GPUOS_ON_GPU
	uint32_t v;
	asm volatile("ld.mmio.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(reg) : "memory");
	asm volatile("fence.acq_rel.sys;" ::: "memory");
	return v;
#else
	return __atomic_load_n((const uint32_t *)(uintptr_t)reg, __ATOMIC_ACQUIRE);
#endif
}

/* 64-bit registers (CAP, ASQ, ACQ): two 32-bit accesses, low half first
 * (NVMe base spec 3.1.2: the host may access them as two dwords). */
GPUOS_INLINE GPUOS_HD void gpuos_mmio_write64(volatile uint32_t *reg, uint64_t v)
{
	gpuos_mmio_write32(reg, (uint32_t)v);
	gpuos_mmio_write32(reg + 1, (uint32_t)(v >> 32));
}

GPUOS_INLINE GPUOS_HD uint64_t gpuos_mmio_read64(const volatile uint32_t *reg)
{
	uint64_t lo = gpuos_mmio_read_acquire32(reg);
	uint64_t hi = gpuos_mmio_read_acquire32(reg + 1);
	return lo | (hi << 32);
}

/* ---- float32 arithmetic rounded at every step ------------------------------
 * For results that must equal the CPU's bit for bit (gpuos/quant.h): nvcc
 * fuses a * b + c into one FMA by default, which rounds once instead of
 * twice; these never fuse. gcc in ISO C mode (-std=c11) does not contract.
 */
#if GPUOS_ON_GPU
#define GPUOS_RN_(dev, host) (dev)
#else
#define GPUOS_RN_(dev, host) (host)
#endif
GPUOS_INLINE GPUOS_HD float gpuos_fmul_rn(float a, float b) { return GPUOS_RN_(__fmul_rn(a, b), a * b); }
GPUOS_INLINE GPUOS_HD float gpuos_fadd_rn(float a, float b) { return GPUOS_RN_(__fadd_rn(a, b), a + b); }
GPUOS_INLINE GPUOS_HD float gpuos_fsub_rn(float a, float b) { return GPUOS_RN_(__fsub_rn(a, b), a - b); }

/* ---- small helpers ---------------------------------------------------------- */
#define GPUOS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GPUOS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GPUOS_DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))
#define GPUOS_ALIGN_UP(a, b) (GPUOS_DIV_ROUND_UP(a, b) * (b))
#define GPUOS_ALIGN_DOWN(a, b) ((a) / (b) * (b))
#define GPUOS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* A macro's value as a string literal, for messages that cannot be
 * formatted (the runtime has no printf): "at most " GPUOS_STRINGIFY(N). */
#define GPUOS_STRINGIFY_(x) #x
#define GPUOS_STRINGIFY(x) GPUOS_STRINGIFY_(x)

#endif /* GPUOS_PORT_H */
