/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_ctrl.c - boot/ctrl/ctrl.c: the IOVAs a controller that picks
 * them itself hands out start at a random base for each controller opened
 * (so for each process), a multiple of 1 MiB in [4 GiB, 256 GiB), so that
 * a late DMA of an earlier process finds nothing mapped where this one's
 * buffers are (boot/ctrl/ctrl.h). Checked on the emulator's null controller:
 * bases differ between controllers, every region lies above its
 * controller's base and within 39 bits (the narrowest IOMMU address width),
 * regions follow one another as before.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boot/ctrl/ctrl.h"

#define NBASES ((GPUOS_IOVA_BASE_MAX - GPUOS_IOVA_BASE_MIN) / GPUOS_IOVA_ALIGN)

static void base_ok(uint64_t b)
{
	cr_assert(b >= GPUOS_IOVA_BASE_MIN && b < GPUOS_IOVA_BASE_MAX, "base 0x%llx outside [4 GiB, 256 GiB)",
		  (unsigned long long)b);
	cr_assert_eq(b % GPUOS_IOVA_ALIGN, 0, "base 0x%llx not on a 1 MiB boundary", (unsigned long long)b);
}

/* Every random word gives a base in range; the range's ends are reachable. */
Test(ctrl, iova_base_of_random_words)
{
	static const uint64_t words[] = { 0, 1, NBASES - 1, NBASES, NBASES + 1, 0x8000000000000000ull, ~0ull,
					  ~0ull - 1, 0x123456789abcdefull };
	size_t i;
	cr_assert_eq(gpuos_iova_base_of(0), GPUOS_IOVA_BASE_MIN);
	cr_assert_eq(gpuos_iova_base_of(NBASES - 1), GPUOS_IOVA_BASE_MAX - GPUOS_IOVA_ALIGN);
	cr_assert_eq(gpuos_iova_base_of(NBASES), GPUOS_IOVA_BASE_MIN);
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		base_ok(gpuos_iova_base_of(words[i]));
	for (i = 0; i < 100000; i++)
		base_ok(gpuos_iova_base_of((uint64_t)random() << 33 ^ (uint64_t)random() << 2 ^ i));
}

/* getrandom's bases: in range and apart (64 of 258,048 bases: two alike
 * about once in 126 runs, three alike practically never). */
Test(ctrl, iova_bases_differ)
{
	uint64_t b[64];
	int i, k, same = 0;
	for (i = 0; i < 64; i++) {
		b[i] = gpuos_iova_base();
		base_ok(b[i]);
		for (k = 0; k < i; k++)
			same += b[k] == b[i];
	}
	cr_assert_leq(same, 2, "%d pairs of 64 random bases alike", same);
}

/* Two controllers (two processes' worth): their own bases, the regions of
 * each from there up, one after the other with the 1 MiB gap, within 39 bits. */
Test(ctrl, two_controllers_map_apart)
{
	struct gpuos_ctrl *c[8];
	struct gpuos_dma d[8][3];
	static const size_t len[3] = { 3u << 20, 4096, 64u << 20 };
	char err[256];
	int i, k, apart = 0;

	for (i = 0; i < 8; i++) {
		uint64_t base, want;
		cr_assert_eq(gpuos_ctrl_open("null:1M", NULL, 0, 0, &c[i], err, sizeof(err)), 0, "%s", err);
		base = c[i]->next_iova;
		base_ok(base);
		want = base;
		for (k = 0; k < 3; k++) {
			cr_assert_eq(gpuos_dma_alloc(c[i], len[k], GPUOS_MEM_HOST, 1, &d[i][k]), 0);
			cr_assert_eq(d[i][k].iova, want, "region %d at 0x%llx, want 0x%llx", k,
				     (unsigned long long)d[i][k].iova, (unsigned long long)want);
			cr_assert_leq(d[i][k].iova + d[i][k].len, 1ull << 39);
			want = gpuos_iova_after(want, d[i][k].len);
		}
		if (i && d[i][0].iova != d[0][0].iova)
			apart++;
	}
	cr_assert_geq(apart, 6, "only %d of 7 controllers started elsewhere than the first", apart);
	for (i = 0; i < 8; i++) {
		for (k = 0; k < 3; k++)
			gpuos_dma_free(c[i], &d[i][k]);
		gpuos_ctrl_close(c[i]);
	}
}
