/* SPDX-License-Identifier: MIT */
/*
 * PARTS through the whole runtime (client -> mailbox -> metadata warp ->
 * runtime/gpt.c on its own queue -> emulated controller -> client memory):
 * the table of tests/tools/files_images.sh's gpt.img (sgdisk: partition 1 at
 * LBA 2048 without a file system, 2 at 6161 holding ext4), paging through
 * it, a device without a table, and hostile requests: a short buffer, one
 * outside client memory or crossing its end, a misaligned one, unknown
 * flags. Each gets its status, nothing is written past the buffer, and the
 * runtime keeps serving. GPUOS_TEST_GPU=1 runs the runtime on the GPU.
 */
#ifdef GPUOS_MINI_CRITERION
#include "../gpu/mini_criterion.h"
#else
#include <criterion/criterion.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

#include "booted.h"

static void boot_img(struct booted *b, const char *img)
{
	struct gpuos_boot_opts o;
	char dev[1024];
	gpuos_boot_opts_default(&o);
	snprintf(dev, sizeof(dev), "emu:%s/%s", dir, img);
	o.device = dev;
	o.heap_bytes = 8u << 20;
	booted_start(b, &o);
}

#define RT(b, off) ((struct gpuos_parts *)(uintptr_t)((b)->heap_rt + (off)))
#define CANARY 0x5a

/* PARTS into heap bytes [off, off + len), the 4 KiB after them set to
 * CANARY and checked untouched afterwards. */
static uint32_t parts_at(struct booted *b, uint64_t off, uint64_t len, uint32_t first, struct gpuos_result *res)
{
	uint32_t st, i;
	memset(b->heap + off, 0, len);
	memset(b->heap + off + len, CANARY, 4096);
	st = gpuos_request(b->mb, GPUOS_OP_PARTS, 0, 0, first, len, RT(b, off), 0, res);
	for (i = 0; i < 4096; i++)
		cr_assert_eq((uint8_t)b->heap[off + len + i], CANARY, "byte %u after the buffer was written", i);
	return st;
}

TestSuite(parts, .init = images, .timeout = 120);

Test(parts, gpt_table_and_paging)
{
	struct booted b;
	struct gpuos_result res;
	struct gpuos_parts *t;
	uint64_t one = sizeof(struct gpuos_parts) + sizeof(struct gpuos_part);

	boot_img(&b, "gpt.img");
	t = (struct gpuos_parts *)b.heap;
	cr_assert_eq(parts_at(&b, 0, 64 << 10, 0, &res), GPUOS_ST_OK, "%s", b.heap);
	cr_assert_eq(t->scheme, GPUOS_PARTS_GPT);
	cr_assert_eq(t->lba_bytes, 512);
	cr_assert_eq(t->disk_lbas, 30u << 11);
	cr_assert_eq(t->total, 2);
	cr_assert_eq(t->found, 2);
	cr_assert_eq(t->n, 2);
	cr_assert_eq(res.result, 2);
	cr_assert_eq(res.result2, 2);
	cr_assert_eq(t->header_lba, 1);
	cr_assert_eq(t->n_entries, 128);
	cr_assert_eq(t->flags, 0);
	cr_assert_eq(t->part[0].number, 1);
	cr_assert_eq(t->part[0].first_lba, 2048);
	cr_assert_eq(t->part[0].last_lba, 4095);
	cr_assert_str_eq(t->part[0].type_guid, "0FC63DAF-8483-4772-8E79-3D69D8477DE4");
	cr_assert_eq(t->part[0].fs, GPUOS_PART_FS_UNKNOWN);
	cr_assert_eq(t->part[0].flags, 0);
	cr_assert_eq(t->part[1].number, 2);
	cr_assert_eq(t->part[1].first_lba, 6161);
	cr_assert_eq(t->part[1].last_lba, 6161 + (24u << 11) - 1);
	cr_assert_eq(t->part[1].fs, GPUOS_PART_FS_EXT);
	cr_assert_eq(t->part[1].flags, GPUOS_PART_F_FILES);
	cr_assert_eq(strlen(t->part[1].unique_guid), 36);

	/* room for one partition: pages of one */
	cr_assert_eq(parts_at(&b, 0, one, 0, &res), GPUOS_ST_OK);
	cr_assert(t->n == 1 && t->first == 0 && t->total == 2 && t->part[0].number == 1);
	cr_assert_eq(parts_at(&b, 0, one, 1, &res), GPUOS_ST_OK);
	cr_assert(t->n == 1 && t->first == 1 && t->part[0].number == 2 && t->part[0].fs == GPUOS_PART_FS_EXT);
	cr_assert_eq(parts_at(&b, 0, one, 7, &res), GPUOS_ST_OK);
	cr_assert(t->n == 0 && t->total == 2);
	/* room for the table alone */
	cr_assert_eq(parts_at(&b, 0, sizeof(*t), 0, &res), GPUOS_ST_OK);
	cr_assert(t->n == 0 && t->total == 2);
	shut(&b);
}

Test(parts, hostile_requests_get_a_status)
{
	struct booted b;
	struct gpuos_result res;
	struct gpuos_parts *t;
	uint32_t st;

	boot_img(&b, "gpt.img");
	t = (struct gpuos_parts *)b.heap;
	/* too short for the table: BAD_DST, the reason cut to the buffer */
	cr_assert_eq(parts_at(&b, 0, sizeof(*t) - 1, 0, &res), GPUOS_ST_BAD_DST);
	cr_assert(strstr(b.heap, "shorter"), "reason: %s", b.heap);
	cr_assert_eq(parts_at(&b, 0, 8, 0, &res), GPUOS_ST_BAD_DST);
	cr_assert_eq(memchr(b.heap, 0, 8) != NULL, 1, "the reason is cut and terminated inside 8 bytes");
	cr_assert_eq(parts_at(&b, 0, 0, 0, &res), GPUOS_ST_BAD_DST);
	/* misaligned */
	cr_assert_eq(parts_at(&b, 4, 4096, 0, &res), GPUOS_ST_BAD_DST);
	cr_assert(strstr(b.heap + 4, "aligned"), "reason: %s", b.heap + 4);
	/* outside client memory, or crossing its end */
	st = gpuos_request(b.mb, GPUOS_OP_PARTS, 0, 0, 0, 4096, (void *)(uintptr_t)8, 0, &res);
	cr_assert_eq(st, GPUOS_ST_BAD_DST);
	st = gpuos_request(b.mb, GPUOS_OP_PARTS, 0, 0, 0, 4096, RT(&b, b.heap_len - 2048), 0, &res);
	cr_assert_eq(st, GPUOS_ST_BAD_DST);
	st = gpuos_request(b.mb, GPUOS_OP_PARTS, 0, 0, 0, ~0ull, RT(&b, 0), 0, &res);
	cr_assert_eq(st, GPUOS_ST_BAD_DST);
	/* unknown flags */
	st = gpuos_request(b.mb, GPUOS_OP_PARTS, 1, 0, 0, 4096, RT(&b, 0), 0, &res);
	cr_assert_eq(st, GPUOS_ST_BAD_FLAGS);
	/* and it keeps serving */
	cr_assert_eq(gpuos_part_table(b.mb, RT(&b, 0), 4096, 0), GPUOS_ST_OK);
	cr_assert_eq(t->total, 2);
	shut(&b);
}

Test(parts, no_partition_table)
{
	struct booted b;
	struct gpuos_result res;
	struct gpuos_parts *t;

	boot_img(&b, "ext4.img");
	t = (struct gpuos_parts *)b.heap;
	cr_assert_eq(parts_at(&b, 0, 4096, 0, &res), GPUOS_ST_OK, "%s", b.heap);
	cr_assert_eq(t->scheme, GPUOS_PARTS_NONE);
	cr_assert_eq(t->total, 0);
	cr_assert_eq(t->n, 0);
	cr_assert_eq(t->whole_fs, GPUOS_PART_FS_EXT);
	cr_assert_eq(t->disk_lbas, 32u << 11);
	shut(&b);
}
