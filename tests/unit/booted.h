/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/booted.h - what the tests that boot the whole runtime share
 * (test_runtime.c, test_files.c, test_parts.c): a booted runtime with its
 * mailbox and client memory, and its shutdown; the images of
 * tests/tools/files_images.sh, built once. Host mode; GPUOS_TEST_GPU=1 boots
 * the runtime on the GPU and fails where it would run on CPU threads.
 * Include it after Criterion (or tests/gpu/mini_criterion.h) and
 * gpuos/host.h.
 */
#ifndef GPUOS_TESTS_BOOTED_H
#define GPUOS_TESTS_BOOTED_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[512]; /* the images: GPUOS_FILES_DIR, or build/files-img */

/* A suite's .init where its tests boot on those images: find them, or
 * build them. */
static inline void images(void)
{
	char cmd[1200], ok[600];
	const char *d = getenv("GPUOS_FILES_DIR");
	snprintf(dir, sizeof(dir), "%s", d ? d : "build/files-img");
	snprintf(ok, sizeof(ok), "%s/ok", dir);
	if (access(ok, F_OK) == 0)
		return;
	/* Criterion runs tests in parallel processes: one builds, the others wait. */
	snprintf(cmd, sizeof(cmd), "flock '%s.lock' sh -c 'test -e \"$1/ok\" || sh tests/tools/files_images.sh \"$1\"' sh '%s' >/dev/null 2>&1",
		 dir, dir);
	if (system(cmd) != 0 || access(ok, F_OK) != 0)
		cr_skip("cannot build the test images (mke2fs, sgdisk, python3): see tests/tools/files_images.sh");
}

/* A file under the images' folder (rel: "ext4.img", "src/big.bin"), whole;
 * the caller frees it. */
static inline unsigned char *images_read(const char *rel, size_t *len)
{
	char p[1200];
	unsigned char *b;
	long n;
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "rb");
	cr_assert_not_null(f, "%s", p);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
	b = (unsigned char *)malloc((size_t)n + 1);
	cr_assert_not_null(b);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* A source file of the images (the tree tests/tools/files_images.sh wrote). */
static inline unsigned char *slurp(const char *rel, size_t *len)
{
	char p[700];
	snprintf(p, sizeof(p), "src/%s", rel);
	return images_read(p, len);
}

struct booted {
	struct gpuos_sys *sys;
	struct gpuos_mbox *mb;
	char *heap;
	uint64_t heap_rt, heap_len;
};

/* Boot with o (the caller sets the device and what its tests need), quiet,
 * on the GPU under GPUOS_TEST_GPU. */
static inline void booted_start(struct booted *b, struct gpuos_boot_opts *o)
{
	char err[512];
	o->host_mode = getenv("GPUOS_TEST_GPU") ? 0 : 1;
	o->quiet = 1;
	cr_assert_eq(gpuos_boot(o, &b->sys, err, sizeof(err)), 0, "boot %s: %s", o->device, err);
	/* the GPU suite must not pass on CPU threads (issue 13) */
	cr_assert(!getenv("GPUOS_TEST_GPU") || gpuos_sys_info(b->sys)->gpu,
		  "GPUOS_TEST_GPU is set but the runtime runs on CPU threads (no GPU opened)");
	b->mb = gpuos_sys_mbox(b->sys);
	b->heap = (char *)gpuos_sys_heap(b->sys, &b->heap_rt, &b->heap_len);
}

static inline void shut(struct booted *b)
{
	char err[512];
	int r = gpuos_shutdown(b->sys, err, sizeof(err));
	cr_assert_eq(r, 0, "shutdown: %s", err);
}

#endif /* GPUOS_TESTS_BOOTED_H */
