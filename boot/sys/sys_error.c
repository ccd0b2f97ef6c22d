/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's reason (include/gpuos/host.h, gpuos_sys_error): every
 * call of host.h that reports through it sets it with gpuos_sys_fail
 * (boot/sys/sys_internal.h). The lowest file of boot/sys/: the loads, a
 * client's memory and the dequantiser report here alike.
 */
#include <stdarg.h>
#include <stdio.h>

#include "sys_internal.h"

static __thread char last_err[GPUOS_SYS_WHY_LEN];

const char *gpuos_sys_error(const struct gpuos_sys *s)
{
	(void)s;
	return last_err;
}

int gpuos_sys_fail(int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	return r;
}
