/* SPDX-License-Identifier: MIT */
/*
 * runtime/rt.h - the runtime's service loop: W service warps, each owning
 * nqueues / W queue pairs and one partition of the mailbox (DESIGN.md 2, 6).
 * The same code runs on a GPU warp (32 lanes, from kernels/) and on a host
 * thread (width 1, from boot/ in host mode).
 */
#ifndef GPUOS_RUNTIME_RT_H
#define GPUOS_RUNTIME_RT_H

#include "gpuos/rt.h"

GPUOS_EXTERN_C_BEGIN

/* Bytes of private state the runtime needs for this descriptor; boot
 * allocates them (device memory on the GPU), zeroes them once before the
 * first launch, and keeps them across park/resume. */
GPUOS_HD uint64_t gpuos_rt_state_bytes(const struct gpuos_rt_desc *d);

/* Checks a descriptor boot built; 0 or -EINVAL. Host side, before launch. */
int gpuos_rt_desc_check(const struct gpuos_rt_desc *d, const char **why);

/* Serve as service warp w until the host asks to park or stop (ctl->cmd).
 * Every lane of the warp calls it (host: one thread). Returns after this
 * warp has drained its in-flight commands. local/local_bytes: memory private
 * to this warp and fast to reach (a GPU block's shared memory) where the
 * warp keeps its working state while it runs; NULL: work in d->state. */
GPUOS_HD void gpuos_rt_warp_run(const struct gpuos_rt_desc *d, uint32_t w, void *local, uint64_t local_bytes);

/* Bytes of `local` the warp needs for this descriptor. */
GPUOS_HD uint64_t gpuos_rt_local_bytes(const struct gpuos_rt_desc *d);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_RT_H */
