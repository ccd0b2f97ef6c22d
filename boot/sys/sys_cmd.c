/* SPDX-License-Identifier: MIT */
/*
 * The runtime's command word (boot/sys/sys_internal.h): run, park or stop.
 * The lowest file of the runtime's life: sys_threads.c tells the threads
 * it started to stop through it, sys_run.c starts, parks and stops.
 */
#include "sys_internal.h"

/* Tell the runtime to run, park or stop. ctl->cmd is the record and, in
 * host mode, what the runtime threads poll (pairs with their acquire load).
 * On the GPU they poll a copy in VRAM (d->cmd): a load of host memory is a
 * PCIe round trip that stalls the service loop (about 1.2 us on an H100).
 * The copy goes through the copy engine, which the persistent kernel does
 * not block. */
int gpuos_sys_set_cmd(struct gpuos_sys *s, uint32_t cmd)
{
	__atomic_store_n(&gpuos_sys_ctl(s)->cmd, cmd, __ATOMIC_RELEASE);
	if (s->gpu && s->cmd.len)
		return gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->cmd.rt, &cmd, sizeof(cmd), 1);
	return 0;
}
