/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_gpt.c - the partition table parser (runtime/gpt.c) against
 *  - images made by sgdisk at run time (gdisk package): partitions at
 *    non-MiB-aligned LBAs, names, GUIDs, corrupted primary/backup headers and
 *    entry arrays, hybrid and plain MBRs, truncated images;
 *  - images built here (4096-byte sectors, which sgdisk cannot make on a file,
 *    and hostile header fields with their CRCs made right so that the field
 *    checks themselves are reached).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/crc.h"
#include "../../runtime/gpt.h"
#include "../../runtime/util.h"

/* ---- ios: a file (pread) or a buffer ----------------------------------------------- */

struct dio {
	int fd;             /* -1: buf */
	uint8_t *buf;
	unsigned reads;
	int fail_at;        /* read number that fails with -EIO, 0 never */
};

static int dio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct dio *d = (struct dio *)ctx;

	d->reads++;
	if (d->fail_at && (int)d->reads == d->fail_at)
		return -EIO;
	if (d->fd < 0) {
		memcpy(dst, d->buf + off, len);
		return 0;
	}
	return pread(d->fd, dst, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

struct res {
	struct gpuos_gpt g;
	struct gpuos_gpt_parser p;
	struct gpuos_gpt_part parts[16];
	struct dio d;
	struct gpuos_meta_io io;
	int rc;
};

static struct res *parse_io(struct res *r, uint32_t ss, uint32_t cap)
{
	r->io.read = dio_read;
	r->io.ctx = &r->d;
	r->g.parts = r->parts;
	r->g.part_cap = cap;
	r->rc = gpuos_gpt_parse(&r->g, &r->p, &r->io, ss);
	return r;
}

static struct res *parse_file(const char *path, uint32_t ss, uint32_t cap)
{
	struct res *r = (struct res *)calloc(1, sizeof(*r));
	struct stat st;

	cr_assert(r);
	r->d.fd = open(path, O_RDONLY);
	cr_assert(r->d.fd >= 0, "open %s", path);
	cr_assert(fstat(r->d.fd, &st) == 0);
	r->io.size = (uint64_t)st.st_size;
	return parse_io(r, ss, cap);
}

static struct res *parse_buf(uint8_t *buf, uint64_t size, uint32_t ss, uint32_t cap)
{
	struct res *r = (struct res *)calloc(1, sizeof(*r));

	cr_assert(r);
	r->d.fd = -1;
	r->d.buf = buf;
	r->io.size = size;
	return parse_io(r, ss, cap);
}

static void res_free(struct res *r)
{
	if (r->d.fd >= 0)
		close(r->d.fd);
	free(r);
}

/* ---- temp dir and shell ---------------------------------------------------------------- */

static char tmpdir[64];

static void mktmp(void)
{
	strcpy(tmpdir, "/tmp/gpuos-gpt-XXXXXX");
	cr_assert(mkdtemp(tmpdir));
}

static void rmtmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (tmpdir[0] && system(cmd)) {
		/* nothing to do */
	}
}

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(system(cmd) == 0, "failed: %s", cmd);
}

static int have_sgdisk(void)
{
	return system("command -v sgdisk >/dev/null 2>&1") == 0;
}

#define NEED_SGDISK() do { if (!have_sgdisk()) cr_skip("sgdisk (gdisk) is not installed"); } while (0)

static void xor_byte(const char *path, uint64_t off, uint8_t x)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert(fd >= 0);
	cr_assert(pread(fd, &b, 1, (off_t)off) == 1);
	b ^= x;
	cr_assert(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

/* 64 MiB, three partitions: 1 at 1 MiB (Linux fs), 2 at LBA 34817 (EFI, not
 * MiB-aligned), 3 at LBA 40000 (Linux fs, a UTF-16 name). */
#define DISK_MIB 64
#define DISK_LBAS (DISK_MIB * 2048ull)
static void make_disk(char *path, size_t cap, const char *name)
{
	snprintf(path, cap, "%s/%s", tmpdir, name);
	sh("truncate -s %dM '%s' && sgdisk -o -U 11111111-2222-3333-4444-555555555555 -a 1 "
	   "-n 1:2048:+16M -t 1:8300 -c 1:rootfs -u 1:AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE "
	   "-n 2:34817:+1M -t 2:EF00 -c '2:EFI system' "
	   "-n 3:40000:+2M -t 3:8300 -c '3:\xc3\xbcmlaut\xf0\x9f\x98\x80x' '%s' >/dev/null",
	   DISK_MIB, path, path);
}

static void expect_three(const struct gpuos_gpt *g)
{
	const uint8_t esp[16] = GPUOS_GPT_GUID_ESP;
	char s[37];

	cr_assert_eq(g->scheme, GPUOS_PT_GPT);
	cr_assert_eq(g->n_parts, 3);
	cr_assert_eq(g->n_used, 3);
	cr_assert_eq(g->n_entries, 128);
	cr_assert_eq(g->entry_size, 128);
	cr_assert_eq(g->first_usable_lba, 34);
	cr_assert_eq(g->last_usable_lba, DISK_LBAS - 34);
	gpuos_gpt_guid_format(g->disk_guid, s);
	cr_assert_str_eq(s, "11111111-2222-3333-4444-555555555555");

	cr_assert_eq(g->parts[0].first_lba, 2048);
	cr_assert_eq(g->parts[0].last_lba, 2048 + 32768 - 1);
	cr_assert(gpuos_gpt_guid_is_linux_fs(g->parts[0].type_guid));
	cr_assert_str_eq(g->parts[0].name, "rootfs");
	cr_assert_eq(g->parts[0].index, 0);
	gpuos_gpt_guid_format(g->parts[0].unique_guid, s);
	cr_assert_str_eq(s, "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE");

	cr_assert_eq(g->parts[1].first_lba, 34817, "a start that is not MiB-aligned");
	cr_assert_eq(g->parts[1].last_lba, 34817 + 2048 - 1);
	cr_assert_eq(gpuos_mem_cmp(g->parts[1].type_guid, esp, 16), 0);
	cr_assert_str_eq(g->parts[1].name, "EFI system");

	cr_assert_eq(g->parts[2].first_lba, 40000);
	cr_assert(gpuos_gpt_guid_is_linux_fs(g->parts[2].type_guid));
	cr_assert_str_eq(g->parts[2].name, "?mlaut?x", "UTF-16 to ASCII: %s", g->parts[2].name);
}

/* ---- sgdisk images ---------------------------------------------------------------------- */

TestSuite(gpt_sgdisk, .init = mktmp, .fini = rmtmp, .timeout = 60);

Test(gpt_sgdisk, three_partitions)
{
	const uint8_t linux_fs[16] = GPUOS_GPT_GUID_LINUX_FS;
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert_eq(r->g.flags, 0, "flags %#x (backup: %s)", r->g.flags, r->g.backup_why);
	cr_assert_eq(r->g.header_lba, 1);
	cr_assert_eq(r->g.alternate_lba, DISK_LBAS - 1);
	cr_assert_eq(r->g.entries_lba, 2);
	cr_assert_eq(gpuos_gpt_find_type(&r->g, linux_fs, 0), 0);
	cr_assert_eq(gpuos_gpt_find_type(&r->g, linux_fs, 1), 2);
	cr_assert_eq(gpuos_gpt_find_type(&r->g, linux_fs, 3), -ENOENT);
	/* MBR, primary header, 16 KiB of entries in 4 KiB chunks, backup header */
	cr_assert_eq(r->d.reads, 1 + 1 + 4 + 1);
	res_free(r);
}

Test(gpt_sgdisk, primary_header_corrupt_backup_used)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	xor_byte(path, 512 + 0x30, 0x01); /* last_usable_lba, CRC now wrong */
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert(r->g.flags & GPUOS_GPT_F_BACKUP_USED);
	cr_assert_str_eq(r->g.primary_why, "GPT header CRC mismatch");
	cr_assert_eq(r->g.header_lba, DISK_LBAS - 1);
	cr_assert_eq(r->g.entries_lba, DISK_LBAS - 33);
	res_free(r);
}

Test(gpt_sgdisk, primary_signature_gone_backup_used)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	sh("dd if=/dev/zero of='%s' bs=512 seek=1 count=1 conv=notrunc status=none", path);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert(r->g.flags & GPUOS_GPT_F_BACKUP_USED);
	cr_assert_str_eq(r->g.primary_why, "no GPT signature");
	res_free(r);
}

Test(gpt_sgdisk, primary_entries_crc_backup_used)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	xor_byte(path, 1024 + 128 + 0x38, 0x20); /* entry 1's name: 'E' -> 'e' */
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert(r->g.flags & GPUOS_GPT_F_BACKUP_USED);
	cr_assert_str_eq(r->g.primary_why, "GPT partition entry array CRC mismatch");
	res_free(r);
}

Test(gpt_sgdisk, backup_corrupt_primary_used)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	xor_byte(path, (DISK_LBAS - 1) * 512 + 0x20, 0x01);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert_eq(r->g.flags, GPUOS_GPT_F_BACKUP_BAD);
	cr_assert_str_eq(r->g.backup_why, "GPT header CRC mismatch");
	cr_assert_eq(r->g.header_lba, 1);
	res_free(r);
}

Test(gpt_sgdisk, both_headers_corrupt)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	xor_byte(path, 512 + 0x30, 0x01);
	xor_byte(path, (DISK_LBAS - 1) * 512 + 0x30, 0x01);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.why, "primary and backup GPT are both invalid");
	cr_assert_str_eq(r->g.primary_why, "GPT header CRC mismatch");
	cr_assert_str_eq(r->g.backup_why, "GPT header CRC mismatch");
	res_free(r);
}

Test(gpt_sgdisk, both_entry_arrays_corrupt)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	xor_byte(path, 1024 + 0x20, 0x01);
	xor_byte(path, (DISK_LBAS - 33) * 512 + 0x20, 0x01);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->g.primary_why, "GPT partition entry array CRC mismatch");
	cr_assert_str_eq(r->g.backup_why, "GPT partition entry array CRC mismatch");
	cr_assert_eq(r->g.n_parts, 0, "nothing from a table whose CRC failed");
	res_free(r);
}

Test(gpt_sgdisk, headers_wiped_or_whole_disk_blank)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	sh("dd if=/dev/zero of='%s' bs=512 seek=1 count=1 conv=notrunc status=none && "
	   "dd if=/dev/zero of='%s' bs=512 seek=%llu count=1 conv=notrunc status=none",
	   path, path, DISK_LBAS - 1);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, -EINVAL, "a protective MBR promises a GPT");
	cr_assert_str_eq(r->p.why, "protective MBR but no GPT header");
	res_free(r);

	sh("dd if=/dev/zero of='%s' bs=512 count=1 conv=notrunc status=none", path);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.scheme, GPUOS_PT_NONE, "no partition table");
	cr_assert_eq(r->g.n_parts, 0);
	res_free(r);
}

Test(gpt_sgdisk, no_protective_mbr)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	sh("dd if=/dev/zero of='%s' bs=512 count=1 conv=notrunc status=none", path);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert_eq(r->g.flags, GPUOS_GPT_F_NO_PMBR);
	res_free(r);
}

Test(gpt_sgdisk, plain_mbr)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "m.img");
	sh("sgdisk -m 1:2 '%s' >/dev/null", path);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	cr_assert_eq(r->g.scheme, GPUOS_PT_MBR);
	cr_assert_eq(r->g.n_parts, 2);
	cr_assert_eq(r->g.parts[0].mbr_type, 0x83);
	cr_assert_eq(r->g.parts[0].first_lba, 2048);
	cr_assert_eq(r->g.parts[0].last_lba, 34815);
	cr_assert_eq(r->g.parts[1].mbr_type, 0xef);
	cr_assert_eq(r->g.parts[1].first_lba, 34817);
	cr_assert_eq(r->g.parts[1].index, 1);
	res_free(r);
}

Test(gpt_sgdisk, hybrid_mbr)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "h.img");
	sh("sgdisk -h 1:EE '%s' >/dev/null", path);
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert_eq(r->g.flags, GPUOS_GPT_F_HYBRID_MBR);
	res_free(r);
}

Test(gpt_sgdisk, table_too_small)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	r = parse_file(path, 512, 2);
	cr_assert_eq(r->rc, -ENOSPC);
	cr_assert_eq(r->g.n_parts, 2);
	cr_assert_eq(r->g.n_used, 3);
	res_free(r);
	r = parse_file(path, 512, 0);
	cr_assert_eq(r->rc, -ENOSPC);
	cr_assert_eq(r->g.n_used, 3);
	res_free(r);
}

Test(gpt_sgdisk, truncated_image)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	sh("truncate -s 60M '%s'", path); /* the backup is gone, the last usable LBA too */
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, -EINVAL, "last usable LBA past the end: %s", r->g.primary_why);
	cr_assert_str_eq(r->g.primary_why, "GPT usable LBA range out of bounds");
	res_free(r);
}

Test(gpt_sgdisk, grown_image)
{
	char path[128];
	struct res *r;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	sh("truncate -s 80M '%s'", path); /* the backup is no longer at the end */
	r = parse_file(path, 512, 16);
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	expect_three(&r->g);
	cr_assert_eq(r->g.flags, 0, "the backup is found through alternate_lba: %s", r->g.backup_why);
	res_free(r);
}

Test(gpt_sgdisk, device_errors)
{
	char path[128];
	int at;

	NEED_SGDISK();
	make_disk(path, sizeof(path), "d.img");
	for (at = 1; at <= 7; at++) {
		struct res *r = (struct res *)calloc(1, sizeof(*r));
		struct stat st;

		r->d.fd = open(path, O_RDONLY);
		cr_assert(fstat(r->d.fd, &st) == 0);
		r->io.size = (uint64_t)st.st_size;
		r->d.fail_at = at;
		parse_io(r, 512, 16);
		cr_assert_eq(r->rc, -EIO, "read %d fails: rc %d", at, r->rc);
		res_free(r);
	}
}

/* ---- images built here ---------------------------------------------------------------------------- */

struct bpart {
	uint64_t first, last;
	const char *name;
};

/* A GPT disk of lbas sectors of ss bytes: protective MBR, primary at 1 with
 * its entries at 2, backup entries and header at the end. */
static uint8_t *build(uint32_t ss, uint64_t lbas, uint32_t n_entries, uint32_t esz, const struct bpart *pt,
		      int np)
{
	const uint8_t linux_fs[16] = GPUOS_GPT_GUID_LINUX_FS;
	uint8_t *d = (uint8_t *)calloc(lbas, ss);
	uint64_t bytes = (uint64_t)n_entries * esz, esec = (bytes + ss - 1) / ss;
	uint64_t fu = 2 + esec, lu = lbas - 2 - esec;
	uint8_t *arr = (uint8_t *)calloc(1, bytes + 1);
	uint32_t crc;
	int i, k, side;

	cr_assert(d && arr);
	d[446 + 4] = 0xee;
	gpuos_put_le32(d + 446 + 8, 1);
	gpuos_put_le32(d + 446 + 12, lbas - 1 > 0xffffffffu ? 0xffffffffu : (uint32_t)(lbas - 1));
	d[510] = 0x55;
	d[511] = 0xaa;
	for (i = 0; i < np; i++) {
		uint8_t *e = arr + (size_t)i * esz;

		memcpy(e, linux_fs, 16);
		for (k = 0; k < 16; k++)
			e[16 + k] = (uint8_t)(i * 16 + k + 1);
		gpuos_put_le64(e + 32, pt[i].first);
		gpuos_put_le64(e + 40, pt[i].last);
		for (k = 0; pt[i].name[k] && k < 36; k++)
			gpuos_put_le16(e + 56 + 2 * k, (uint8_t)pt[i].name[k]);
	}
	crc = gpuos_crc32(0, arr, bytes);
	memcpy(d + 2 * ss, arr, bytes);
	memcpy(d + (lu + 1) * ss, arr, bytes);
	for (side = 0; side < 2; side++) {
		uint64_t my = side ? lbas - 1 : 1, alt = side ? 1 : lbas - 1;
		uint8_t *h = d + my * ss;

		gpuos_put_le64(h + 0x00, GPUOS_GPT_SIGNATURE);
		gpuos_put_le32(h + 0x08, GPUOS_GPT_REVISION);
		gpuos_put_le32(h + 0x0c, 92);
		gpuos_put_le64(h + 0x18, my);
		gpuos_put_le64(h + 0x20, alt);
		gpuos_put_le64(h + 0x28, fu);
		gpuos_put_le64(h + 0x30, lu);
		for (k = 0; k < 16; k++)
			h[0x38 + k] = (uint8_t)(0xd0 + k);
		gpuos_put_le64(h + 0x48, side ? lu + 1 : 2);
		gpuos_put_le32(h + 0x50, n_entries);
		gpuos_put_le32(h + 0x54, esz);
		gpuos_put_le32(h + 0x58, crc);
		gpuos_put_le32(h + 0x10, gpuos_crc32(0, h, 92));
	}
	free(arr);
	return d;
}

/* Set a header field (4 or 8 bytes) and make the header CRC right again. */
static void hdr_set(uint8_t *d, uint32_t ss, uint64_t lba, uint32_t off, int width, uint64_t v)
{
	uint8_t *h = d + lba * ss;
	uint32_t hs;

	if (width == 8)
		gpuos_put_le64(h + off, v);
	else
		gpuos_put_le32(h + off, (uint32_t)v);
	hs = gpuos_le32(h + 0x0c);
	if (hs < 92 || hs > ss)
		hs = 92;
	gpuos_put_le32(h + 0x10, 0);
	gpuos_put_le32(h + 0x10, gpuos_crc32(0, h, hs));
}

Test(gpt_built, sector_4096)
{
	const struct bpart pt[] = {{256, 1023, "data"}, {1029, 1100, "odd"}};
	uint64_t lbas = 2048; /* 8 MiB */
	uint8_t *d = build(4096, lbas, 128, 128, pt, 2);
	struct res *r;

	r = parse_buf(d, lbas * 4096, 4096, 16);
	cr_assert_eq(r->rc, 0, "%s / %s", r->p.why, r->g.primary_why);
	cr_assert_eq(r->g.scheme, GPUOS_PT_GPT);
	cr_assert_eq(r->g.flags, 0, "%s", r->g.backup_why);
	cr_assert_eq(r->g.sector_size, 4096);
	cr_assert_eq(r->g.first_usable_lba, 2 + 4);
	cr_assert_eq(r->g.n_parts, 2);
	cr_assert_eq(r->g.parts[1].first_lba, 1029);
	cr_assert_str_eq(r->g.parts[1].name, "odd");
	res_free(r);

	/* read as 512-byte sectors there is a protective MBR and no GPT */
	r = parse_buf(d, lbas * 4096, 512, 16);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.why, "protective MBR but no GPT header");
	res_free(r);
	free(d);
}

Test(gpt_built, entry_size_256_and_empty_table)
{
	const struct bpart pt[] = {{100, 199, "a"}, {300, 399, "b"}};
	uint8_t *d = build(512, 4096, 64, 256, pt, 2);
	struct res *r = parse_buf(d, 4096 * 512ull, 512, 16);

	cr_assert_eq(r->rc, 0, "%s / %s", r->p.why, r->g.primary_why);
	cr_assert_eq(r->g.entry_size, 256);
	cr_assert_eq(r->g.n_parts, 2);
	cr_assert_eq(r->g.parts[1].index, 1);
	res_free(r);
	free(d);

	d = build(512, 4096, 0, 128, pt, 0);
	r = parse_buf(d, 4096 * 512ull, 512, 16);
	cr_assert_eq(r->rc, 0, "%s / %s", r->p.why, r->g.primary_why);
	cr_assert_eq(r->g.scheme, GPUOS_PT_GPT);
	cr_assert_eq(r->g.n_parts, 0);
	res_free(r);
	free(d);
}

Test(gpt_built, entries_outside_usable_skipped)
{
	const struct bpart pt[] = {{100, 199, "ok"}, {10, 50, "over-table"}, {4000, 5000, "past-end"},
				   {300, 299, "backwards"}};
	uint8_t *d = build(512, 4096, 128, 128, pt, 4);
	struct res *r = parse_buf(d, 4096 * 512ull, 512, 16);

	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	cr_assert_eq(r->g.n_parts, 1);
	cr_assert_eq(r->g.n_skipped, 3);
	cr_assert(r->g.flags & GPUOS_GPT_F_SKIPPED);
	cr_assert_str_eq(r->g.parts[0].name, "ok");
	res_free(r);
	free(d);
}

/* Hostile header fields, CRC made right: the primary is refused for the
 * right reason and the backup used; with both hostile, -EINVAL. */
Test(gpt_built, hostile_header_fields)
{
	static const struct {
		uint32_t off;
		int width;
		uint64_t v;
		const char *why;
	} c[] = {
		{0x50, 4, 0xffffffffu, "larger than 1 MiB"},
		{0x50, 4, 8193, "larger than 1 MiB"},
		{0x54, 4, 0, "entry size"},
		{0x54, 4, 100, "entry size"},
		{0x54, 4, 192, "entry size"},
		{0x54, 4, 8192, "entry size"},
		{0x54, 4, 0x80000000u, "entry size"},
		{0x0c, 4, 91, "header size"},
		{0x0c, 4, 513, "header size"},
		{0x0c, 4, 0xffffffffu, "header size"},
		{0x08, 4, 0x00020000, "revision"},
		{0x18, 8, 5, "own LBA"},
		{0x28, 8, 0, "usable"},
		{0x28, 8, 4063, "usable"},
		{0x28, 8, 20, "overlaps"}, /* primary: usable starts in its entry array */
		{0x30, 8, 4096, "usable"},
		{0x30, 8, UINT64_MAX, "usable"},
		{0x48, 8, 0, "entry array"},
		{0x48, 8, 1, "entry array"},
		{0x48, 8, 4095, "entry array"},
		{0x48, 8, 100, "entry array"},
		{0x48, 8, 1ull << 63, "entry array"},
		{0x48, 8, UINT64_MAX, "entry array"},
		{0x58, 4, 0x12345678, "CRC mismatch"},
	};
	const struct bpart pt[] = {{100, 199, "a"}};
	uint64_t lbas = 4096;
	unsigned i;

	for (i = 0; i < GPUOS_ARRAY_SIZE(c); i++) {
		uint8_t *d = build(512, lbas, 128, 128, pt, 1);
		struct res *r;

		hdr_set(d, 512, 1, c[i].off, c[i].width, c[i].v);
		r = parse_buf(d, lbas * 512, 512, 16);
		cr_assert_eq(r->rc, 0, "case %u: %s", i, r->p.why);
		cr_assert(r->g.flags & GPUOS_GPT_F_BACKUP_USED, "case %u", i);
		cr_assert(strstr(r->g.primary_why, c[i].why), "case %u: '%s' lacks '%s'", i, r->g.primary_why,
			  c[i].why);
		cr_assert_eq(r->g.n_parts, 1);
		res_free(r);

		/* the same field in the backup (its own LBA differs; its array
		 * sits after the usable range, so overlap it from that side) */
		if (c[i].off == 0x18)
			hdr_set(d, 512, lbas - 1, 0x18, 8, 7);
		else if (c[i].off == 0x28 && c[i].v == 20)
			hdr_set(d, 512, lbas - 1, 0x30, 8, lbas - 20);
		else
			hdr_set(d, 512, lbas - 1, c[i].off, c[i].width, c[i].v);
		r = parse_buf(d, lbas * 512, 512, 16);
		cr_assert_eq(r->rc, -EINVAL, "case %u both", i);
		cr_assert_str_eq(r->p.why, "primary and backup GPT are both invalid");
		res_free(r);
		free(d);
	}
}

Test(gpt_built, backup_checked_against_primary)
{
	const struct bpart pt[] = {{100, 199, "a"}};
	uint64_t lbas = 4096;
	uint8_t *d = build(512, lbas, 128, 128, pt, 1);
	struct res *r;

	hdr_set(d, 512, 1, 0x20, 8, lbas + 5); /* primary's alternate_lba off the disk */
	r = parse_buf(d, lbas * 512, 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.flags, GPUOS_GPT_F_BACKUP_BAD);
	cr_assert_str_eq(r->g.backup_why, "alternate LBA is not on the disk");
	res_free(r);
	free(d);

	d = build(512, lbas, 128, 128, pt, 1);
	hdr_set(d, 512, lbas - 1, 0x58, 4, 0x1234); /* a valid backup header for other entries */
	r = parse_buf(d, lbas * 512, 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.flags, GPUOS_GPT_F_BACKUP_BAD);
	cr_assert_str_eq(r->g.backup_why, "backup header does not match the primary");
	res_free(r);
	free(d);
}

Test(gpt_built, small_and_odd_devices)
{
	uint8_t z[8192];
	struct res *r;

	memset(z, 0, sizeof(z));
	r = parse_buf(z, 511, 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.scheme, GPUOS_PT_NONE);
	res_free(r);
	r = parse_buf(z, sizeof(z), 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.scheme, GPUOS_PT_NONE);
	res_free(r);
	r = parse_buf(z, sizeof(z), 1024, 16);
	cr_assert_eq(r->rc, -EINVAL);
	res_free(r);
	/* a boot sector (0x55AA, junk where the records would be) is no MBR */
	memset(z + 446, 0x41, 64);
	z[510] = 0x55;
	z[511] = 0xaa;
	r = parse_buf(z, sizeof(z), 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.scheme, GPUOS_PT_NONE);
	res_free(r);
}

Test(gpt_built, mbr_records_out_of_bounds_skipped)
{
	uint8_t z[64 * 512];
	struct res *r;

	memset(z, 0, sizeof(z));
	z[446 + 4] = 0x83; /* ok: 8..39 */
	gpuos_put_le32(z + 446 + 8, 8);
	gpuos_put_le32(z + 446 + 12, 32);
	z[462 + 4] = 0x83; /* past the end */
	gpuos_put_le32(z + 462 + 8, 40);
	gpuos_put_le32(z + 462 + 12, 0xffffffffu);
	z[478 + 4] = 0x07; /* starts at 0 */
	gpuos_put_le32(z + 478 + 12, 4);
	z[510] = 0x55;
	z[511] = 0xaa;
	r = parse_buf(z, sizeof(z), 512, 16);
	cr_assert_eq(r->rc, 0);
	cr_assert_eq(r->g.scheme, GPUOS_PT_MBR);
	cr_assert_eq(r->g.n_parts, 1);
	cr_assert_eq(r->g.n_skipped, 2);
	cr_assert_eq(r->g.parts[0].last_lba, 39);
	res_free(r);
}

Test(gpt_built, guid_text)
{
	const uint8_t lfs[16] = GPUOS_GPT_GUID_LINUX_FS;
	uint8_t g[16];
	char s[37];

	gpuos_gpt_guid_format(lfs, s);
	cr_assert_str_eq(s, "0FC63DAF-8483-4772-8E79-3D69D8477DE4");
	cr_assert_eq(gpuos_gpt_guid_parse("0fc63daf-8483-4772-8e79-3d69d8477de4", g), 0);
	cr_assert(gpuos_gpt_guid_is_linux_fs(g));
	cr_assert_eq(gpuos_gpt_guid_parse("C12A7328-F81F-11D2-BA4B-00A0C93EC93B", g), 0);
	{
		const uint8_t esp[16] = GPUOS_GPT_GUID_ESP;

		cr_assert_eq(memcmp(g, esp, 16), 0);
	}
	cr_assert_eq(gpuos_gpt_guid_parse("C12A7328-F81F-11D2-BA4B-00A0C93EC93", g), -EINVAL);
	cr_assert_eq(gpuos_gpt_guid_parse("C12A7328-F81F-11D2-BA4B-00A0C93EC93BX", g), -EINVAL);
	cr_assert_eq(gpuos_gpt_guid_parse("C12A7328F81F-11D2-BA4B-00A0C93EC93B", g), -EINVAL);
	cr_assert_eq(gpuos_gpt_guid_parse("G12A7328-F81F-11D2-BA4B-00A0C93EC93B", g), -EINVAL);
}
