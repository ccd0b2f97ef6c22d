/* SPDX-License-Identifier: MIT */
/*
 * The runtime's life (boot/sys/sys_internal.h): start it (one persistent kernel
 * on the GPU, one warp per block; or CPU threads in host mode,
 * boot/sys/sys_threads.c), stop it or park it (the command word:
 * boot/sys/sys_cmd.c). The admin queues change hands at each start and
 * stop. Whom a park must take along (a group's runtimes on one GPU) is
 * boot/sys/sys_park.c's, above this file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys_internal.h"

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
	struct gpuos_rt_ctl *ctl = gpuos_sys_ctl(s);
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
	struct gpuos_rt_ctl *ctl = gpuos_sys_ctl(s);
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

int gpuos_sys_check(struct gpuos_sys *s, char *err, size_t errlen)
{
	if (s->gpu && s->running && !gpuos_gpu_running(s->gpu, GPUOS_STREAM_RT))
		return gpuos_gpu_wait(s->gpu, GPUOS_STREAM_RT, err, errlen) ? -EIO : 0;
	return 0;
}
