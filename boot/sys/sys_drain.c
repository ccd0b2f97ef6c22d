/* SPDX-License-Identifier: MIT */
/*
 * The load state of a system (struct sys_load, boot/sys/sys_internal.h):
 * its locks made, and the stream-ordered loads still to come waited for.
 * Below the files that must wait for them before memory or the runtime goes
 * (a client's memory, registered memory, app images, shutdown); the loads
 * themselves, and the models they keep, are boot/sys/sys_load.c's, above
 * them all.
 */
#include "sys_internal.h"

void gpuos_sys_load_init(struct gpuos_sys *s)
{
	pthread_mutex_init(&s->load.lock, NULL);
	pthread_mutex_init(&s->load.async_lock, NULL);
	pthread_cond_init(&s->load.idle, NULL);
	s->load.inited = 1;
}

void gpuos_sys_load_drain(struct gpuos_sys *s)
{
	if (!s->load.inited)
		return;
	pthread_mutex_lock(&s->load.async_lock);
	while (s->load.pending)
		pthread_cond_wait(&s->load.idle, &s->load.async_lock);
	pthread_mutex_unlock(&s->load.async_lock);
}
