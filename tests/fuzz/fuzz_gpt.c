/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_gpt.c - fuzz target for runtime/gpt.c. The input is a disk
 * image, read through a gpuos_meta_io over the buffer, as 512-byte sectors
 * and (when big enough) as 4096-byte sectors.
 *
 * Random bytes rarely carry right CRC32s, so each image is also parsed after
 * the harness recomputes the CRCs of whatever headers it finds (entries CRC,
 * then header CRC): that lets the fuzzer reach every field check behind them.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude \
 *         tests/fuzz/fuzz_gpt.c runtime/gpt.c runtime/crc.c -o build/fuzz_gpt
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/crc.h"
#include "../../runtime/gpt.h"
#include "../../runtime/util.h"

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "fuzz_gpt: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                  \
		}                                                                 \
	} while (0)

struct bio {
	const uint8_t *data;
	size_t size;
};

static int bio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	const struct bio *b = (const struct bio *)ctx;

	CHECK(off <= b->size && len <= b->size - off);
	memcpy(dst, b->data + off, len);
	return 0;
}

static struct gpuos_gpt_parser p;
static struct gpuos_gpt_part parts[32];

static void run(const uint8_t *data, size_t size, uint32_t ss, uint32_t cap)
{
	struct bio b = { data, size };
	struct gpuos_meta_io io = { bio_read, &b, size };
	struct gpuos_gpt g;
	uint32_t i;
	int rc;

	memset(&g, 0, sizeof(g));
	g.parts = parts;
	g.part_cap = cap;
	rc = gpuos_gpt_parse(&g, &p, &io, ss);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENOSPC);
	CHECK(rc == 0 || p.why);
	CHECK(g.n_parts <= cap && g.n_parts <= g.n_used);
	if (rc == -ENOSPC)
		CHECK(g.n_used > cap);
	if (rc)
		return;
	CHECK(g.n_parts == g.n_used);
	CHECK(g.scheme == GPUOS_PT_NONE || g.scheme == GPUOS_PT_GPT || g.scheme == GPUOS_PT_MBR);
	if (g.scheme == GPUOS_PT_GPT) {
		CHECK(g.first_usable_lba <= g.last_usable_lba && g.last_usable_lba < g.disk_lbas);
		CHECK(g.header_lba == 1 || g.header_lba == g.disk_lbas - 1);
		CHECK(!!(g.flags & GPUOS_GPT_F_BACKUP_USED) == (g.header_lba != 1));
	}
	for (i = 0; i < g.n_parts; i++) {
		const struct gpuos_gpt_part *pt = &g.parts[i];

		CHECK(pt->first_lba <= pt->last_lba && pt->last_lba < g.disk_lbas);
		if (g.scheme == GPUOS_PT_GPT)
			CHECK(pt->first_lba >= g.first_usable_lba && pt->last_lba <= g.last_usable_lba);
		CHECK(memchr(pt->name, 0, sizeof(pt->name)) != NULL);
	}
}

/* Make the CRCs of a header at lba (and of its entry array, when it lies in
 * the image) right. */
static void fix_crcs(uint8_t *d, size_t size, uint32_t ss, uint64_t lba)
{
	uint8_t *h;
	uint32_t hs;
	uint64_t elba, bytes;

	if (lba >= size / ss)
		return;
	h = d + lba * ss;
	if (gpuos_le64(h) != GPUOS_GPT_SIGNATURE)
		return;
	hs = gpuos_le32(h + 0x0c);
	if (hs < 92 || hs > ss)
		return;
	elba = gpuos_le64(h + 0x48);
	bytes = (uint64_t)gpuos_le32(h + 0x50) * gpuos_le32(h + 0x54);
	if (elba < size / ss && bytes <= size - elba * ss)
		gpuos_put_le32(h + 0x58, gpuos_crc32(0, d + elba * ss, (size_t)bytes));
	gpuos_put_le32(h + 0x10, 0);
	gpuos_put_le32(h + 0x10, gpuos_crc32(0, h, hs));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t ss[2] = {512, 4096};
	uint8_t *copy;
	int k;

	run(data, size, 512, 32);
	run(data, size, 512, 1);
	if (size >= 3 * 4096)
		run(data, size, 4096, 32);
	if (size > (8u << 20) || size < 1024)
		return 0;
	copy = (uint8_t *)malloc(size);
	if (!copy)
		return 0;
	for (k = 0; k < 2; k++) {
		if (size / ss[k] < 3)
			continue;
		memcpy(copy, data, size);
		fix_crcs(copy, size, ss[k], 1);
		fix_crcs(copy, size, ss[k], size / ss[k] - 1);
		run(copy, size, ss[k], 32);
	}
	free(copy);
	return 0;
}
