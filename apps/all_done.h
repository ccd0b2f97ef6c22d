/* SPDX-License-Identifier: MIT */
/*
 * apps/all_done.h - the end of an app whose threads all work and thread 0
 * reports: every thread counts itself done, thread 0 waits for the rest.
 */
#ifndef GPUOS_APPS_ALL_DONE_H
#define GPUOS_APPS_ALL_DONE_H

#include "gpuos/abi.h"

/* Every thread calls it once, after its last write the report reads.
 * Returns 1 to thread 0 once all nthreads have arrived, their writes
 * visible; 0 to the others, which should return. */
static inline GPUOS_HD int app_all_done(uint32_t *done, uint32_t tid, uint32_t nthreads)
{
	uint32_t spins = 0;
	/* Release: this thread's results before its increment. Every
	 * increment is an RMW on one word, so thread 0's acquire load that
	 * reads the last of them synchronises with all (a release sequence). */
	gpuos_fetch_add_release_dev32(done, 1u);
	if (tid != 0)
		return 0;
	while (gpuos_load_acquire_dev32(done) < nthreads)
		gpuos_backoff(&spins);
	return 1;
}

#endif /* GPUOS_APPS_ALL_DONE_H */
