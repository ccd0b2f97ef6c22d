/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_cuda.c - settings of the CUDA layer (boot/cuda.c) that keep
 * a persistent kernel from blocking other work (docs/platform.md). Runs
 * without a GPU: gpuos_gpu_open sets the environment before its first CUDA
 * call, which then fails where no driver is present.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../../boot/gpu.h"

/* Streams the W = 16 bench of issue 12 makes: GPUOS_STREAMS, the main
 * thread's copy stream and one per emulator worker (workers=8). */
#define ISSUE12_STREAMS (GPUOS_STREAMS + 1 + 8)

static int connections_after_open(const char *before)
{
	struct gpuos_gpu *g = NULL;
	char why[256];
	const char *v;

	if (before)
		setenv("CUDA_DEVICE_MAX_CONNECTIONS", before, 1);
	else
		unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
	if (gpuos_gpu_open(&g, 0, why, sizeof(why)) == 0)
		gpuos_gpu_close(g);
	v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	return v ? atoi(v) : 8; /* unset: CUDA's default */
}

/* Issue 12: CUDA maps streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware
 * queues, and work queued behind a persistent kernel in a shared queue waits
 * for that kernel to end. On the GPU machine an emulator worker whose stream
 * shared one with the runtime kernel's never finished a 4 KiB copy, and the
 * SQs it owns were never fetched again (4 x 1023 commands lost at W = 16). */
Test(cuda, a_hardware_queue_for_every_stream)
{
	int n = connections_after_open(NULL);
	cr_assert_geq(n, ISSUE12_STREAMS, "%d CUDA hardware queues for %d streams: a copy stream shares one with a "
		      "persistent kernel and waits for it forever", n, ISSUE12_STREAMS);
}

/* A lower value from the environment brings the stall back (4 queues: 5 of 8
 * workers stuck at their first batch on the GPU machine), so it is raised. */
Test(cuda, a_low_connection_count_is_raised)
{
	int n = connections_after_open("4");
	cr_assert_geq(n, ISSUE12_STREAMS, "CUDA_DEVICE_MAX_CONNECTIONS=4 kept: %d hardware queues for %d streams", n,
		      ISSUE12_STREAMS);
}
