/* SPDX-License-Identifier: MIT */
/*
 * Parking (include/gpuos/host.h, gpuos_park and gpuos_resume): the runtime
 * stops spinning around what must not run beside it, and starts again. A
 * runtime of a group (boot/sys/sys_group.c) takes every runtime on its GPU
 * along: a module load, a stack limit or a VRAM mapping waits for every
 * kernel of the context. Above the runtime's life (boot/sys/sys_run.c,
 * start and stop), below everything that parks (sys_app.c, sys_mem.c,
 * sys_register.c, sys.c).
 */
#include "sys_internal.h"

/* Runtimes whose kernels share a context: the same GPU. In host mode
 * nothing needs another runtime parked. */
static int same_gpu(const struct gpuos_sys *a, const struct gpuos_sys *b)
{
	return a == b || (a->gpu && b->gpu && a->opts.gpu == b->opts.gpu);
}

/* Park (park 1) or resume every runtime on s's GPU. Parks nest: the park
 * that takes a runtime's count from 0 stops it (and notes whether it was
 * running), the resume that brings it back to 0 restarts it if it was. A
 * park that fails undoes what it did, so nothing stays parked for a caller
 * that does not resume after an error. */
static int park_same_gpu(struct gpuos_sys *s, int park, char *err, size_t errlen)
{
	struct gpuos_group *g = s->group;
	uint32_t took[GPUOS_GROUP_MAX] = { 0 };
	char e2[256];
	uint32_t i;
	int r = 0;
	pthread_mutex_lock(&g->park_lock);
	for (i = 0; i < g->n && !r; i++) {
		struct gpuos_sys *t = g->sys[i];
		if (!same_gpu(s, t))
			continue;
		if (park) {
			took[i] = 1;
			if (g->parks[i]++)
				continue;
			g->was_running[i] = (uint32_t)t->running;
			if (t->running)
				r = gpuos_sys_stop(t, GPUOS_RT_CMD_PARK, err, errlen);
		} else if (g->parks[i] ? --g->parks[i] == 0 : t == s) {
			/* the last resume, or a resume of s itself with no park
			 * outstanding (after a start that failed): start it if it ran */
			if (g->was_running[i] && !t->running)
				r = gpuos_sys_start(t, err, errlen);
		}
	}
	for (i = 0; park && r && i < g->n; i++) /* undo: this park never happened */
		if (took[i] && --g->parks[i] == 0 && g->was_running[i] && !g->sys[i]->running)
			gpuos_sys_start(g->sys[i], e2, sizeof(e2));
	pthread_mutex_unlock(&g->park_lock);
	return r;
}

int gpuos_park(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->client)
		return 0; /* the service's runtime: nothing of this process spins */
	if (s->group)
		return park_same_gpu(s, 1, err, errlen);
	return gpuos_sys_stop(s, GPUOS_RT_CMD_PARK, err, errlen);
}

int gpuos_resume(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->client)
		return 0;
	if (s->group)
		return park_same_gpu(s, 0, err, errlen);
	if (s->running)
		return 0;
	return gpuos_sys_start(s, err, errlen);
}
