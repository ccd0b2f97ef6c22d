/* SPDX-License-Identifier: MIT */
/*
 * Several runtimes on one device (include/gpuos/host.h, gpuos_boot_group;
 * docs/design.md, "Scale-out"). The first runtime owns the controllers: it
 * brings them up and asks for every runtime's queue pairs at once (Number
 * of Queues is set once per controller reset). Each runtime is planned
 * alike and takes its own range of qids (boot/sys/sys_plan.h,
 * gpuos_plan_runtime), with memory, mailbox and heap of its own on its own
 * GPU. The order matters:
 *  - every GPU is opened, and the runtime image loaded on it, before any
 *    runtime starts: a module load waits for every kernel of its context;
 *  - every queue pair is created before any runtime starts, through the
 *    owner's admin queue (none of the runtimes holds it: a group's runtimes
 *    abort and reset nothing, boot/sys/sys_desc.c says why);
 *  - the queue pairs are deleted after every runtime has stopped, and the
 *    controllers shut down after that.
 * A park of one runtime parks every runtime on its GPU (boot/sys/sys_park.c,
 * with the group's park counts of struct gpuos_group, sys_internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys_internal.h"

uint32_t gpuos_group_size(const struct gpuos_group *g)
{
	return g ? g->n : 0;
}

struct gpuos_sys *gpuos_group_sys(const struct gpuos_group *g, uint32_t i)
{
	return g && i < g->n ? g->sys[i] : NULL;
}

/* "runtime I (GPU K): reason" for what failed on one runtime. */
static void runtime_err(const struct gpuos_group *g, uint32_t i, const char *e, char *err, size_t errlen)
{
	const struct gpuos_sys *s = g->sys[i];
	if (s->gpu)
		snprintf(err, errlen, "runtime %u (GPU %u): %s", i, s->opts.gpu, e);
	else
		snprintf(err, errlen, "runtime %u: %s", i, e);
}

/* Every runtime's GPU, all on GPUs or all on CPU threads (the first
 * decides, the others follow or fail with their own reason); the owner's GPU
 * (whose copy engines an emulated controller moves data with) reaching
 * every other's memory. */
static int open_gpus(struct gpuos_group *g, char *err, size_t errlen)
{
	char e[400];
	uint32_t i;
	int r;
	for (i = 0; i < g->n; i++) {
		/* the first decides: on a GPU, the others must be too (their own
		 * reason if they cannot), in host mode all are */
		if (i && g->sys[0]->gpu)
			g->sys[i]->opts.require_gpu = 1;
		if (i && !g->sys[0]->gpu) {
			g->sys[i]->opts.host_mode = 1;
			g->sys[i]->opts.quiet = 1; /* the first said so already */
		}
		r = gpuos_sys_open_gpu(g->sys[i], e, sizeof(e));
		if (r) {
			runtime_err(g, i, e, err, errlen);
			return r;
		}
	}
	for (i = 1; i < g->n; i++) {
		if (!g->sys[i]->gpu || g->sys[i]->opts.gpu == g->sys[0]->opts.gpu)
			continue;
		r = gpuos_gpu_peer(g->sys[0]->gpu, g->sys[i]->gpu, e, sizeof(e));
		if (r) {
			runtime_err(g, i, e, err, errlen);
			return r;
		}
	}
	return 0;
}

/* Runtime i (i > 0) on the owner's controllers, with the owner's plan and
 * its own qids. */
static void share_device(struct gpuos_group *g, uint32_t i)
{
	struct gpuos_sys *s = g->sys[i], *o = g->sys[0];
	s->ctrl = o->ctrl;
	s->nctrl = o->nctrl;
	s->dev = o->dev;
	s->io_queues = o->io_queues;
	s->plan = o->plan;
	gpuos_plan_runtime(&s->plan, i);
}

/* Tear down in the reverse order of boot: every runtime stopped, then
 * the others before the owner, whose controllers they use. */
static void group_free(struct gpuos_group *g)
{
	char e[256];
	uint32_t i;
	for (i = 0; i < g->n; i++)
		if (g->sys[i] && g->sys[i]->running)
			gpuos_sys_stop(g->sys[i], GPUOS_RT_CMD_STOP, e, sizeof(e));
	for (i = g->n; i-- > 0;)
		if (g->sys[i])
			gpuos_sys_teardown(g->sys[i]);
	pthread_mutex_destroy(&g->park_lock);
	free(g);
}

int gpuos_boot_group(const struct gpuos_boot_opts *o, uint32_t n, const uint32_t *gpus, struct gpuos_group **out,
		     char *err, size_t errlen)
{
	struct gpuos_group *g;
	char e[400];
	uint32_t i;
	int r = 0;

	*out = NULL;
	if (n == 0 || n > GPUOS_GROUP_MAX) {
		snprintf(err, errlen, "%u runtimes: a group has 1 to %u", n, GPUOS_GROUP_MAX);
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->park_lock, NULL);
	for (i = 0; i < n && !r; i++) {
		struct gpuos_boot_opts oi = *o;
		if (gpus)
			oi.gpu = gpus[i];
		r = gpuos_sys_new(&oi, &g->sys[i], err, errlen);
		if (!r) {
			g->n = i + 1;
			g->sys[i]->group = g;
			g->sys[i]->owner = i ? g->sys[0] : NULL;
		}
	}
	if (!r)
		r = open_gpus(g, err, errlen);
	if (!r)
		r = gpuos_sys_boot_device(g->sys[0], n, err, errlen);
	for (i = 1; !r && i < n; i++) {
		/* a real controller's registers are mapped for the owner's GPU
		 * only (cudaHostRegisterIoMemory in its context); an emulated
		 * one's are pinned host memory every GPU reaches */
		if (g->sys[i]->gpu && g->sys[i]->opts.gpu != g->sys[0]->opts.gpu && !g->sys[0]->ctrl->regs_gpu_readable) {
			snprintf(err, errlen, "runtime %u (GPU %u): the controller's doorbells are mapped for GPU %u only, the "
				 "owner's: runtimes on other GPUs of a real controller are not built yet", i,
				 g->sys[i]->opts.gpu, g->sys[0]->opts.gpu);
			r = -EOPNOTSUPP;
		}
	}
	for (i = 0; !r && i < n; i++) {
		if (i)
			share_device(g, i);
		r = gpuos_sys_boot_runtime(g->sys[i], e, sizeof(e));
		if (r)
			runtime_err(g, i, e, err, errlen);
	}
	/* every queue pair exists: now the runtimes may spin */
	for (i = 0; !r && i < n; i++) {
		r = gpuos_sys_start(g->sys[i], e, sizeof(e));
		if (r)
			runtime_err(g, i, e, err, errlen);
	}
	if (r) {
		group_free(g);
		return r;
	}
	*out = g;
	return 0;
}

int gpuos_group_shutdown(struct gpuos_group *g, char *err, size_t errlen)
{
	char e[400];
	uint32_t i;
	int r = 0, r2;

	if (!g)
		return 0;
	for (i = 0; i < g->n; i++) /* a load still to come on a stream posts to its runtime */
		gpuos_sys_load_drain(g->sys[i]);
	for (i = 0; i < g->n; i++) {
		if (!g->sys[i]->running)
			continue;
		r2 = gpuos_sys_stop(g->sys[i], GPUOS_RT_CMD_STOP, e, sizeof(e));
		if (r2 && !r) {
			runtime_err(g, i, e, err, errlen);
			r = r2;
		}
	}
	for (i = g->n; i-- > 0;) {
		if (g->sys[i]->running)
			continue; /* it may still ring its doorbells: its queues go with CC.EN = 0 */
		r2 = gpuos_sys_delete_queues(g->sys[i], e, sizeof(e));
		if (r2 && !r) {
			runtime_err(g, i, e, err, errlen);
			r = r2;
		}
	}
	r2 = gpuos_sys_shutdown_ctrls(g->sys[0], e, sizeof(e));
	if (r2 && !r) {
		snprintf(err, errlen, "%s", e);
		r = r2;
	}
	group_free(g);
	return r;
}
