/* SPDX-License-Identifier: MIT */
/*
 * The runtime's life (boot/sys/sys_internal.h): start it (one persistent kernel
 * on the GPU, one warp per block; or CPU threads in host mode,
 * boot/sys/sys_threads.c), park it and resume it around what must not run
 * beside it, stop it. The admin queues change hands at each start and stop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys_internal.h"

static struct gpuos_rt_ctl *ctl_host(struct gpuos_sys *s)
{
	return (struct gpuos_rt_ctl *)s->ctl.host;
}

/* Tell the runtime to run, park or stop. ctl->cmd is the record and, in
 * host mode, what the runtime threads poll (pairs with their acquire load).
 * On the GPU they poll a copy in VRAM (d->cmd): a load of host memory is a
 * PCIe round trip that stalls the service loop (about 1.2 us on an H100).
 * The copy goes through the copy engine, which the persistent kernel does
 * not block. */
int gpuos_sys_set_cmd(struct gpuos_sys *s, uint32_t cmd)
{
	__atomic_store_n(&ctl_host(s)->cmd, cmd, __ATOMIC_RELEASE);
	if (s->gpu && s->cmd.len)
		return gpuos_gpu_copy(s->gpu, (void *)(uintptr_t)s->cmd.rt, &cmd, sizeof(cmd), 1);
	return 0;
}

/* The admin queues change hands (docs/design.md, "The life of a command"):
 * the runtime uses them to abort and reset while it runs, boot before and
 * after. Whoever takes them starts where the other left them. */
static void admin_to_runtime(struct gpuos_sys *s)
{
	struct gpuos_rt_admin *A = s->admin.host;
	uint32_t m;
	for (m = 0; A && m < s->nctrl; m++) {
		A[m].sq_tail = s->nvme[m].admin.sq_tail;
		A[m].sq_head = s->nvme[m].admin.sq_head;
		A[m].cq_head = s->nvme[m].admin.cq_head;
		A[m].phase = s->nvme[m].admin.phase;
	}
}

static void admin_from_runtime(struct gpuos_sys *s)
{
	struct gpuos_rt_admin *A = s->admin.host;
	uint32_t m;
	for (m = 0; A && m < s->nctrl; m++) {
		struct gpuos_qp *qp = &s->nvme[m].admin;
		struct gpuos_nvme_cqe e;
		uint64_t t0 = gpuos_now_ns();
		qp->sq_tail = __atomic_load_n(&A[m].sq_tail, __ATOMIC_RELAXED);
		qp->sq_head = __atomic_load_n(&A[m].sq_head, __ATOMIC_RELAXED);
		qp->cq_head = __atomic_load_n(&A[m].cq_head, __ATOMIC_RELAXED);
		qp->phase = __atomic_load_n(&A[m].phase, __ATOMIC_RELAXED);
		/* The runtime does not wait for its Aborts: take their completions
		 * (at most RT_ADMIN_INFLIGHT, runtime/recover.c) before boot's own
		 * commands, bounded by CAP.TO. */
		while (qp->sq_head != qp->sq_tail && gpuos_now_ns() - t0 < (uint64_t)s->nvme[m].to_ms * 1000000ull) {
			if (gpuos_qp_cq_peek(qp, 0, &e))
				gpuos_qp_cq_consume(qp, 1, e.sqhd);
			else
				usleep(20);
		}
	}
}

/* The persistent kernel (and before it, a controller's own work on the GPU:
 * gpu-null's loopback kernel, boot/ctrl/ctrl.h's start hook). */
static int launch_gpu(struct gpuos_sys *s, char *err, size_t errlen)
{
	int r;
	if (s->ctrl->ops->start && (r = s->ctrl->ops->start(s->ctrl, gpuos_rt_image, err, errlen)))
		return r;
	/* The descriptor goes by value: the kernel reads it from its
	 * parameter space (constant cache), which the loop's acquire
	 * loads do not evict. */
	return gpuos_gpu_launch_value(s->gpu, GPUOS_STREAM_RT, gpuos_rt_image, "gpuos_rt_kernel", s->desc,
				      gpuos_sys_rt_threads(s->desc), 32, err, errlen);
}

int gpuos_sys_start(struct gpuos_sys *s, char *err, size_t errlen)
{
	struct gpuos_rt_ctl *ctl = ctl_host(s);
	int r;

	/* Publish cmd=RUN and every descriptor write before the runtime starts
	 * (thread/kernel start also orders). */
	r = gpuos_sys_set_cmd(s, GPUOS_RT_CMD_RUN);
	if (r) {
		snprintf(err, errlen, "set the runtime's command: %s", strerror(-r));
		return r;
	}
	/* For other host threads: pairs with gpuos_sys_stats' acquire load.
	 * Once started, the runtime may replace it with FATAL. */
	__atomic_store_n(&ctl->state, GPUOS_RT_STATE_RUNNING, __ATOMIC_RELEASE);
	admin_to_runtime(s); /* the launch below orders it before the runtime */
	ctl->epoch++;
	r = s->gpu ? launch_gpu(s, err, errlen) : gpuos_sys_threads_start(s, err, errlen);
	if (r)
		return r;
	s->running = 1;
	return 0;
}

/* Wait until every warp has left: the kernel ends (then the controller's
 * own work stops, after the runtime has drained: the stop hook), or the
 * threads are joined. */
static int wait_runtime(struct gpuos_sys *s, char *err, size_t errlen)
{
	int r;
	if (!s->gpu) {
		gpuos_sys_threads_join(s);
		return 0;
	}
	r = gpuos_gpu_wait(s->gpu, GPUOS_STREAM_RT, err, errlen);
	if (s->ctrl->ops->stop) {
		int r2 = s->ctrl->ops->stop(s->ctrl, err, errlen);
		if (!r)
			r = r2;
	}
	return r;
}

int gpuos_sys_stop(struct gpuos_sys *s, uint32_t cmd, char *err, size_t errlen)
{
	struct gpuos_rt_ctl *ctl = ctl_host(s);
	int r;

	if (!s->running)
		return 0;
	r = gpuos_sys_set_cmd(s, cmd);
	if (r) {
		snprintf(err, errlen, "tell the runtime to %s: %s", cmd == GPUOS_RT_CMD_PARK ? "park" : "stop",
			 strerror(-r));
		return r;
	}
	r = wait_runtime(s, err, errlen);
	s->running = 0;
	admin_from_runtime(s); /* it has left: the wait or the joins order its writes before */
	/* FATAL (the runtime's release store) stays; the wait or the joins
	 * have ordered that store before this load. The new state pairs with
	 * gpuos_sys_stats' acquire load. */
	if (__atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE) != GPUOS_RT_STATE_FATAL)
		__atomic_store_n(&ctl->state, cmd == GPUOS_RT_CMD_PARK ? GPUOS_RT_STATE_PARKED : GPUOS_RT_STATE_STOPPED,
				 __ATOMIC_RELEASE);
	return r;
}

int gpuos_park(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->client)
		return 0; /* the service's runtime: nothing of this process spins */
	if (s->group)
		return gpuos_group_park(s, err, errlen);
	return gpuos_sys_stop(s, GPUOS_RT_CMD_PARK, err, errlen);
}

int gpuos_resume(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->client)
		return 0;
	if (s->group)
		return gpuos_group_resume(s, err, errlen);
	if (s->running)
		return 0;
	return gpuos_sys_start(s, err, errlen);
}

int gpuos_sys_check(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->gpu && s->running && !gpuos_gpu_running(s->gpu, GPUOS_STREAM_RT))
		return gpuos_gpu_wait(s->gpu, GPUOS_STREAM_RT, err, errlen) ? -EIO : 0;
	return 0;
}
