/* SPDX-License-Identifier: MIT */
/*
 * boot/app_run.h - running one app (gpuos/app.h) in a booted runtime: what
 * `gpuos run --device` does in its own process and what the service does
 * for `gpuos run --socket` (boot/service.c).
 *
 * On the GPU: the cubin is inspected (boot/image.h: architecture against
 * the GPU's, ABI note, entry, threads per block), loaded with the runtime
 * parked, launched on the client stream, waited for, unloaded parked. In
 * host mode: the host-mode variant NAME.so beside NAME.cubin (or the .so
 * given) is dlopen'ed and its entry runs on grid x block host threads.
 * Host-only; functions return 0 or a negative errno, the reason in err.
 */
#ifndef GPUOS_BOOT_APP_RUN_H
#define GPUOS_BOOT_APP_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "gpuos/host.h"

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

#endif /* GPUOS_BOOT_APP_RUN_H */
