/* SPDX-License-Identifier: MIT */
/*
 * Booting a runtime (include/gpuos/host.h): the GPU, the controllers, the
 * plan, the queues, the memory, the descriptor, and the runtime itself on
 * the GPU or on CPU threads (host mode), one named step each; identify and
 * shutdown; what a running system reports. boot/sys/sys_internal.h lists the
 * files the steps live in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sys_internal.h"

void gpuos_boot_opts_default(struct gpuos_boot_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

/* The GPU the runtime will run on, with the runtime image loaded; or none:
 * host mode, asked for or because no GPU can be used (a notice says why). */
int gpuos_sys_open_gpu(struct gpuos_sys *s, char *err, size_t errlen)
{
	char why[320];
	int r = 0;
	/* Scripts that run in host mode on purpose silence the notice. */
	if (getenv("GPUOS_QUIET_HOST"))
		s->opts.quiet = 1;
	if (s->opts.host_mode && s->opts.require_gpu) {
		snprintf(err, errlen, "--host and --require-gpu ask for opposite things");
		return -EINVAL;
	}
	if (s->opts.host_mode) {
		if (!s->opts.quiet)
			fprintf(stderr, "gpuos: host mode (--host): the runtime runs on CPU threads\n");
		return 0;
	}
	if (!gpuos_rt_image)
		snprintf(why, sizeof(why), "this binary carries no GPU runtime image");
	if (!gpuos_rt_image || (r = gpuos_gpu_open(&s->gpu, s->opts.gpu, why, sizeof(why)))) {
		s->gpu = NULL;
		if (r == -EPERM) { /* a GPU gpuos must not use as things are: never CPU threads instead */
			snprintf(err, errlen, "%s", why);
			return -EPERM;
		}
		if (s->opts.require_gpu) {
			snprintf(err, errlen, "%s (--require-gpu: not running on CPU threads)", why);
			return -ENODEV;
		}
		if (!s->opts.quiet)
			fprintf(stderr, "gpuos: host mode: %s: running on CPU threads\n", why);
		return 0;
	}
	/* Loaded before the controller opens: its DMA workers find the gather
	 * kernel in it, and nothing is loaded once the runtime spins. */
	if (gpuos_gpu_image_load(s->gpu, gpuos_rt_image, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -EIO;
	}
	return 0;
}

static void fill_info(struct gpuos_sys *s)
{
	struct gpuos_info *i = &s->info;
	const struct gpuos_nvme_dev *nv = gpuos_sys_ctrls(s)->nvme, *a = &nv[0];
	uint32_t m;
	memcpy(i->model, a->model, sizeof(i->model));
	memcpy(i->serial, a->serial, sizeof(i->serial));
	memcpy(i->firmware, a->firmware, sizeof(i->firmware));
	i->version = a->vs;
	i->mqes = s->dev.mqes;
	i->dstrd = a->dstrd;
	i->mdts_bytes = s->dev.mdts_bytes;
	i->lba_bytes = a->lba_bytes;
	i->namespace_lbas = s->dev.ns_lbas;
	i->nsid = a->nsid;
	i->io_queues = s->io_queues;
	i->gpu = s->gpu != NULL;
	snprintf(i->gpu_name, sizeof(i->gpu_name), "%s", s->gpu ? gpuos_gpu_name(s->gpu) : "none (host mode)");
	i->mps = s->gpu ? gpuos_gpu_mps(i->mps_dir, sizeof(i->mps_dir)) : 0;
	i->nctrl = s->nctrl;
	i->stripe_bytes = s->nctrl > 1 ? s->dev.stripe_lbas * a->lba_bytes : 0;
	for (m = 0; m < s->nctrl; m++) {
		struct gpuos_ctrl_info *c = &i->ctrl[m];
		const struct gpuos_ctrl_member *cm = &s->ctrl->member[m];
		snprintf(c->name, sizeof(c->name), "%s", cm->name);
		memcpy(c->model, nv[m].model, sizeof(c->model));
		memcpy(c->serial, nv[m].serial, sizeof(c->serial));
		memcpy(c->firmware, nv[m].firmware, sizeof(c->firmware));
		c->namespace_lbas = nv[m].ns_lbas;
		c->io_queues = nv[m].io_queues;
		c->mdts_bytes = nv[m].mdts_bytes;
		c->gbps = cm->gbps;
		c->iops = cm->iops;
		c->latency_us = cm->latency_us;
	}
}

/* Free everything a system holds, the runtime stopped first; what is not
 * there is skipped, so that a failure at any step of gpuos_boot ends here.
 * A group's other runtimes leave the controllers to their owner, which is
 * torn down last (sys_group.c). */
void gpuos_sys_teardown(struct gpuos_sys *s)
{
	char e[256];

	if (s->running)
		gpuos_sys_stop(s, GPUOS_RT_CMD_STOP, e, sizeof(e));
	gpuos_sys_delete_queues(s, e, sizeof(e));
	gpuos_sys_free_mem(s);
	gpuos_sys_shutdown_ctrls(s, e, sizeof(e));
	gpuos_sys_user_free(s);
	gpuos_sys_load_fini(s);
	gpuos_sys_free_shm(s);
	free(s->desc);
	if (s->ctrl && !s->owner)
		gpuos_ctrl_close(s->ctrl);
	if (s->gpu)
		gpuos_gpu_close(s->gpu);
	pthread_mutex_destroy(&s->admin_lock);
	free(s);
}

int gpuos_identify(const struct gpuos_boot_opts *o, struct gpuos_info *info, char *err, size_t errlen)
{
	struct gpuos_sys *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return -ENOMEM;
	s->opts = *o;
	pthread_mutex_init(&s->admin_lock, NULL);
	/* identify needs no runtime; only a controller that is the GPU itself
	 * (gpu-null) needs the GPU to exist at all */
	s->opts.quiet = 1;
	s->opts.host_mode = o->host_mode || !gpuos_device_on_gpu(o->device);
	r = gpuos_sys_open_gpu(s, err, errlen);
	if (!r)
		r = gpuos_sys_bring_up(s, err, errlen);
	if (!r)
		r = gpuos_sys_set_queues(s, o->queues ? o->queues : 65535u, err, errlen);
	if (!r) {
		fill_info(s);
		*info = s->info;
		r = gpuos_sys_shutdown_ctrls(s, err, errlen);
	}
	gpuos_sys_teardown(s);
	return r;
}

/* ---- gpuos_boot, step by step ---------------------------------------------------- */

/* Notices [from, to) of the plan. o->quiet, not s->opts.quiet: the
 * environment's GPUOS_QUIET_HOST silences only the host-mode notice. */
static void print_notices(const struct gpuos_boot_opts *o, const struct gpuos_plan *p, uint32_t from, uint32_t to)
{
	for (; !o->quiet && from < to; from++)
		fprintf(stderr, "gpuos: %s\n", p->notice[from]);
}

/* Ask every controller for the queue pairs the options want (plan step 2).
 * A controller that makes its queues itself is planned as one
 * (boot/sys/sys_plan.h, own_queues). */
static int grant_queues(struct gpuos_sys *s, const struct gpuos_boot_opts *o, struct gpuos_plan_in *in,
			uint32_t runtimes, char *err, size_t errlen)
{
	int r;
	memset(in, 0, sizeof(*in));
	in->opts = &s->opts;
	in->runtimes = runtimes;
	in->dev = s->dev;
	in->own_queues = s->ctrl->ops->queues ? s->ctrl->ops->prefix : NULL;
	r = gpuos_plan_ask(in, &s->plan, err, errlen);
	if (r)
		return r;
	print_notices(o, &s->plan, 0, s->plan.ask_notices);
	return gpuos_sys_set_queues(s, s->plan.ask, err, errlen);
}

/* The whole geometry, from what the controllers granted (plan step 3). */
static int plan_geometry(struct gpuos_sys *s, const struct gpuos_boot_opts *o, struct gpuos_plan_in *in, char *err,
			 size_t errlen)
{
	int r;
	in->io_queues = s->io_queues;
	r = gpuos_plan_make(in, &s->plan, err, errlen);
	/* the notices come before a refusal, as the plan found them */
	print_notices(o, &s->plan, GPUOS_MIN(s->plan.ask_notices, s->plan.nnotices), s->plan.nnotices);
	return r;
}

/* The drives' counters as they stand before the runtime reads anything,
 * where the controller keeps none of its own for gpuos_sys_ctrl_stats. */
static void read_smart_baseline(struct gpuos_sys *s)
{
	uint32_t m;
	if (s->ctrl->ops->counters)
		return;
	for (m = 0; m < s->nctrl; m++) /* none where no controller is up (gpu-null) */
		if (gpuos_sys_smart_read(s, m, &s->smart0[m]) == 0)
			s->have_smart0 |= 1u << m;
}

/* What gpuos_sys_info reports: the device, and the geometry planned. */
static void boot_info(struct gpuos_sys *s)
{
	s->info.queues_used = s->plan.nq;
	s->info.depth = s->plan.depth;
	s->info.warps = s->plan.warps;
	s->info.xfer_bytes = s->plan.xfer_bytes;
	fill_info(s);
}

int gpuos_sys_new(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen)
{
	struct gpuos_sys *s;
	int r;

	*out = NULL;
	r = gpuos_plan_check(o, err, errlen);
	if (r)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *o;
	pthread_mutex_init(&s->admin_lock, NULL);
	gpuos_sys_load_init(s);
	*out = s;
	return 0;
}

int gpuos_sys_boot_device(struct gpuos_sys *s, uint32_t runtimes, char *err, size_t errlen)
{
	struct gpuos_plan_in in;
	int r = gpuos_sys_bring_up(s, err, errlen);
	if (!r)
		r = grant_queues(s, &s->opts, &in, runtimes, err, errlen);
	if (!r)
		r = plan_geometry(s, &s->opts, &in, err, errlen);
	return r;
}

int gpuos_sys_boot_runtime(struct gpuos_sys *s, char *err, size_t errlen)
{
	int r = gpuos_sys_create_queues(s, err, errlen);
	if (!r)
		r = gpuos_sys_alloc_buffers(s, err, errlen);
	if (!r)
		r = gpuos_sys_make_shm(s, err, errlen);
	if (!r)
		r = gpuos_sys_alloc_client_mem(s, err, errlen);
	if (!r)
		r = gpuos_sys_build_desc(s, err, errlen);
	if (!r) {
		read_smart_baseline(s);
		boot_info(s);
	}
	return r;
}

int gpuos_boot(const struct gpuos_boot_opts *o, struct gpuos_sys **out, char *err, size_t errlen)
{
	struct gpuos_sys *s;
	int r;

	*out = NULL;
	r = gpuos_sys_new(o, &s, err, errlen);
	if (r)
		return r;
	r = gpuos_sys_open_gpu(s, err, errlen);
	if (!r)
		r = gpuos_sys_boot_device(s, 1, err, errlen);
	if (!r)
		r = gpuos_sys_boot_runtime(s, err, errlen);
	if (!r)
		r = gpuos_sys_start(s, err, errlen);
	if (r) {
		gpuos_sys_teardown(s);
		return r;
	}
	*out = s;
	return 0;
}

int gpuos_shutdown(struct gpuos_sys *s, char *err, size_t errlen)
{
	char e2[256];
	int r = 0, r2;

	if (!s)
		return 0;
	if (s->client) {
		gpuos_sys_load_fini(s); /* its loads and models go before its memory (sys_load.c is above sys_client.c) */
		return gpuos_conn_shutdown(s);
	}
	if (s->group) {
		snprintf(err, errlen, "a runtime of a group: gpuos_group_shutdown stops them all");
		return -EINVAL;
	}
	gpuos_sys_load_drain(s); /* a load still to come on a stream posts to the runtime */
	if (s->running)
		r = gpuos_sys_stop(s, GPUOS_RT_CMD_STOP, err, errlen);
	r2 = gpuos_sys_delete_queues(s, r ? e2 : err, r ? sizeof(e2) : errlen);
	if (r2 && !r)
		r = r2;
	r2 = gpuos_sys_shutdown_ctrls(s, r ? e2 : err, r ? sizeof(e2) : errlen);
	if (r2 && !r)
		r = r2;
	gpuos_sys_teardown(s);
	return r;
}

/* ---- what a system reports ------------------------------------------------------- */

const struct gpuos_info *gpuos_sys_info(const struct gpuos_sys *s)
{
	return &s->info;
}

static_assert(sizeof(((struct gpuos_stats *)0)->dup_by_ctrl) == sizeof(((struct gpuos_rt_stats *)0)->dup_by_ctrl),
	      "a count for each controller the runtime counts");

void gpuos_sys_stats(const struct gpuos_sys *s, struct gpuos_stats *st)
{
	const struct gpuos_rt_ctl *ctl = (const struct gpuos_rt_ctl *)s->ctl.host;
	uint32_t w, i;
	memset(st, 0, sizeof(*st));
	for (w = 0; w < gpuos_sys_rt_threads(s->desc); w++) {
		const struct gpuos_rt_stats *x = &ctl->stats[w];
		st->requests += __atomic_load_n(&x->requests, __ATOMIC_RELAXED);
		st->bytes += __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);
		st->errors += __atomic_load_n(&x->errors, __ATOMIC_RELAXED);
		st->commands += __atomic_load_n(&x->commands, __ATOMIC_RELAXED);
		st->timeouts += __atomic_load_n(&x->timeouts, __ATOMIC_RELAXED);
		st->doorbells += __atomic_load_n(&x->doorbells, __ATOMIC_RELAXED);
		st->polls += __atomic_load_n(&x->polls, __ATOMIC_RELAXED);
		st->zero_copy += __atomic_load_n(&x->zero_copy, __ATOMIC_RELAXED);
		st->strays += __atomic_load_n(&x->strays, __ATOMIC_RELAXED);
		st->aborts += __atomic_load_n(&x->aborts, __ATOMIC_RELAXED);
		st->resets += __atomic_load_n(&x->resets, __ATOMIC_RELAXED);
		st->retries += __atomic_load_n(&x->retries, __ATOMIC_RELAXED);
		st->duplicates += __atomic_load_n(&x->duplicates, __ATOMIC_RELAXED);
		st->untrusted += __atomic_load_n(&x->untrusted, __ATOMIC_RELAXED);
		for (i = 0; i < GPUOS_MAX_CTRL; i++)
			st->dup_by_ctrl[i] += __atomic_load_n(&x->dup_by_ctrl[i], __ATOMIC_RELAXED);
	}
	/* pairs with the release stores of the state: boot's at start and
	 * stop (boot/sys/sys_run.c), the runtime's FATAL */
	st->state = __atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE);
	st->notices = __atomic_load_n(&ctl->notices, __ATOMIC_RELAXED);
	/* the acquire of the state above orders them (the runtime's stores
	 * precede its release of FATAL) */
	st->fatal_why = __atomic_load_n(&ctl->fatal_why, __ATOMIC_RELAXED);
	st->fatal_csts = __atomic_load_n(&ctl->fatal_csts, __ATOMIC_RELAXED);
}

int gpuos_sys_ctrl_stats(const struct gpuos_sys *s, uint32_t i, struct gpuos_ctrl_stats *st)
{
	struct gpuos_nvme_smart_log now;
	const struct gpuos_nvme_smart_log *b;
	int r;
	memset(st, 0, sizeof(*st));
	if (i >= s->nctrl)
		return -EINVAL;
	if (s->ctrl->ops->counters)
		return s->ctrl->ops->counters(s->ctrl, i, st);
	if (!(s->have_smart0 & (1u << i)))
		return -EOPNOTSUPP;
	/* A read of the log changes nothing the caller sees as const. The
	 * running runtime may be using the admin queue (aborts, resets): it is
	 * parked around the read. */
	{
		struct gpuos_sys *w = (struct gpuos_sys *)(uintptr_t)s;
		int was = w->running && w->admin.len;
		char e[256];
		if (was && (r = gpuos_park(w, e, sizeof(e))))
			return r;
		r = gpuos_sys_smart_read(w, i, &now);
		if (was) {
			int r2 = gpuos_resume(w, e, sizeof(e));
			if (!r)
				r = r2;
		}
	}
	if (r)
		return r;
	b = &s->smart0[i];
	st->io_cmds = now.host_reads[0] - b->host_reads[0] + now.host_writes[0] - b->host_writes[0];
	st->read_bytes = (now.data_units_read[0] - b->data_units_read[0]) * 512000u;
	st->errors = now.media_errors[0] - b->media_errors[0];
	st->smart = 1;
	return 0;
}

void gpuos_sys_describe_ctrl(const struct gpuos_sys *s, char *buf, size_t len)
{
	if (s->ctrl->ops->describe)
		s->ctrl->ops->describe(s->ctrl, buf, len);
	else if (len)
		buf[0] = 0;
}
