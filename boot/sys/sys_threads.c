/* SPDX-License-Identifier: MIT */
/*
 * Host mode (docs/design.md, "Modes"): the runtime on CPU threads, one thread
 * per service "warp" of width 1 and one for the metadata warp, against the
 * same controllers and the same descriptor as on the GPU. Every thread of a
 * system is started and joined here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sys_internal.h"

struct warp_arg {
	const struct gpuos_rt_desc *d;
	uint32_t w;
};

static void *host_warp(void *p)
{
	struct warp_arg *a = (struct warp_arg *)p;
	if (a->w < a->d->nwarps)
		gpuos_rt_warp_run(a->d, a->w, NULL, 0); /* host memory is as close as it gets */
	else
		gpuos_rt_meta_run(a->d); /* the metadata warp: one more thread */
	free(a);
	return NULL;
}

uint32_t gpuos_sys_rt_threads(const struct gpuos_rt_desc *d)
{
	return d->nwarps + (d->meta ? 1u : 0u);
}

/* Thread w; 0 or -1. */
static int start_thread(struct gpuos_sys *s, uint32_t w)
{
	struct warp_arg *a = malloc(sizeof(*a));
	if (a) {
		a->d = s->desc;
		a->w = w;
	}
	if (!a || pthread_create(&s->threads[w], NULL, host_warp, a)) {
		free(a);
		return -1;
	}
	return 0;
}

int gpuos_sys_threads_start(struct gpuos_sys *s, char *err, size_t errlen)
{
	uint32_t w;

	s->threads = calloc(gpuos_sys_rt_threads(s->desc), sizeof(pthread_t));
	if (!s->threads)
		return -ENOMEM;
	for (w = 0; w < gpuos_sys_rt_threads(s->desc); w++) {
		if (start_thread(s, w) == 0)
			continue;
		snprintf(err, errlen, "cannot start runtime thread %u", w);
		/* threads already started see STOP and leave */
		gpuos_sys_set_cmd(s, GPUOS_RT_CMD_STOP);
		while (w-- > 0)
			pthread_join(s->threads[w], NULL);
		free(s->threads);
		s->threads = NULL;
		return -EAGAIN;
	}
	return 0;
}

void gpuos_sys_threads_join(struct gpuos_sys *s)
{
	uint32_t w;
	for (w = 0; w < gpuos_sys_rt_threads(s->desc); w++)
		pthread_join(s->threads[w], NULL);
	free(s->threads);
	s->threads = NULL;
}
