/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_ext4.c - fuzz target for runtime/fs/ext4/*.c. The input is a
 * file system image; bytes past its end read as zeros up to the size the
 * superblock claims (at most 4 MiB), so seeds can leave their trailing zeros
 * out (tests/fuzz/make_ext4_corpus.sh writes them so).
 *
 * Each input is mounted and walked: lookups of fixed paths and of the names
 * found in the root directory (following symlinks and not), directory
 * listings, reads at the start and end of files, extent listings, bmap,
 * readlink, inodes by number. Then, because random bytes rarely carry right
 * crc32c values, the same again on a copy with metadata_csum and gdt_csum
 * turned off: the field checks behind the checksums get fuzzed too.
 *
 * Results are checked for what the API promises (NUL-terminated names of
 * the stated length, reads no longer than asked, extents in order, runs of
 * at least one block); any violation aborts. All work is bounded.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude \
 *         tests/fuzz/fuzz_ext4.c runtime/fs/ext4/*.c runtime/crc.c -o build/fuzz_ext4
 *   build/fuzz_ext4 tests/fuzz/corpus_ext4
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/fs/ext4/ext4.h"

#define CHECK(c)                                                                     \
	do {                                                                         \
		if (!(c)) {                                                          \
			fprintf(stderr, "fuzz_ext4: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                     \
		}                                                                    \
	} while (0)

#define VSIZE_MAX   (4u << 20)    /* zero-extended device size cap */
#define READ_MAX    8192u         /* bytes read per file and offset */
#define MAX_INPUT   (1u << 20)    /* longer inputs are cut */

struct vdev {
	const uint8_t *data;
	size_t size;
	uint64_t vsize;
};

static int vdev_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	const struct vdev *v = (const struct vdev *)ctx;
	uint8_t *d = (uint8_t *)dst;
	uint64_t have;

	/* gpuos_meta_read() checks the range before it calls us */
	CHECK(off <= v->vsize && len <= v->vsize - off);
	have = off < v->size ? v->size - off : 0;
	if (have > len)
		have = len;
	if (have)
		memcpy(d, v->data + off, (size_t)have);
	memset(d + have, 0, len - (size_t)have);
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Big buffers live outside the stack (the fs struct is ~75 KiB). */
static struct gpuos_ext4 fs;
static uint8_t buf[READ_MAX];
static uint8_t copy[MAX_INPUT];

static void check_inode(const struct gpuos_ext4_inode *in, uint32_t ino)
{
	CHECK(in->ino == ino);
	CHECK(in->type >= GPUOS_EXT4_FT_REG && in->type <= GPUOS_EXT4_FT_SYMLINK);
	CHECK(in->map <= GPUOS_EXT4_MAP_FAST_SYMLINK);
	if (in->map == GPUOS_EXT4_MAP_FAST_SYMLINK)
		CHECK(in->size < 60);
	if (in->map == GPUOS_EXT4_MAP_INLINE) /* i_block and system.data hold every byte */
		CHECK(in->size <= GPUOS_EXT4_INLINE_MIN + (uint64_t)in->inline_len);
}

/* Read, map and list the data of an inode. */
static void poke_data(const struct gpuos_ext4_inode *in)
{
	struct gpuos_fs_extent ex[16];
	uint64_t next = 0, pblk, prev_end = 0;
	uint32_t got, n, run, flags, calls;
	char link[GPUOS_EXT4_SYMLINK_MAX + 1];
	int r;

	r = gpuos_ext4_read(&fs, in, 0, READ_MAX, buf, &got);
	if (r == 0)
		CHECK(got <= READ_MAX && got <= in->size);
	if (in->size > 100) {
		r = gpuos_ext4_read(&fs, in, in->size - 100, READ_MAX, buf, &got);
		if (r == 0)
			CHECK(got == 100);
	}
	r = gpuos_ext4_read(&fs, in, UINT64_MAX - 10, 100, buf, &got);
	CHECK(r != 0 || got == 0);

	for (calls = 0; calls < 8 && next != GPUOS_EXT4_EXTENTS_END; calls++) {
		uint64_t start = next;
		uint32_t i;

		r = gpuos_ext4_extents(&fs, in, start, ex, 16, &n, &next);
		if (r)
			break;
		CHECK(n <= 16);
		CHECK(next == GPUOS_EXT4_EXTENTS_END || next > start || n > 0);
		for (i = 0; i < n; i++) {
			CHECK(ex[i].len >= 1);
			CHECK(ex[i].lblk >= prev_end);
			CHECK(ex[i].lblk + ex[i].len <= (1ull << 32));
			prev_end = ex[i].lblk + ex[i].len;
		}
	}
	for (calls = 0; calls < 4; calls++) {
		uint64_t lblk = calls == 3 ? 0xFFFFFFFFull : calls * 7ull;

		r = gpuos_ext4_bmap(&fs, in, lblk, &pblk, &run, &flags);
		if (r == 0) {
			CHECK(run >= 1);
			CHECK(flags == 0 || flags == GPUOS_EXT4_BMAP_HOLE ||
			      flags == GPUOS_EXT4_BMAP_UNWRITTEN);
			if (!(flags & GPUOS_EXT4_BMAP_HOLE))
				CHECK(pblk + run <= fs.blocks_count);
		}
	}
	if (in->type == GPUOS_EXT4_FT_SYMLINK) {
		uint32_t len = 0;

		r = gpuos_ext4_readlink(&fs, in, link, sizeof(link), &len);
		if (r == 0)
			CHECK(len <= GPUOS_EXT4_SYMLINK_MAX && link[len] == '\0');
	}
}

/* List a directory (bounded); remember a few names for lookups. */
static void poke_dir(const struct gpuos_ext4_inode *dir, char names[][GPUOS_EXT4_NAME_MAX + 2],
		     uint32_t *nnames, uint32_t cap)
{
	struct gpuos_fs_dirent de;
	uint64_t cookie = 0;
	int i, r;

	for (i = 0; i < 256; i++) {
		uint64_t before = cookie;

		r = gpuos_ext4_readdir(&fs, dir, &cookie, &de);
		if (r <= 0)
			break;
		CHECK(r == 1);
		CHECK(cookie != before);
		CHECK(de.name_len >= 1 && strlen(de.name) == de.name_len);
		CHECK(de.ino >= 1 && de.ino <= fs.inodes_count);
		if (names && *nnames < cap && strchr(de.name, '/') == NULL) {
			names[*nnames][0] = '/';
			memcpy(names[*nnames] + 1, de.name, de.name_len + 1u);
			(*nnames)++;
		}
	}
}

static void walk(void)
{
	static const char *const paths[] = {
		"/", "//", "/.", "/..", "/a", "/b", "/sp", "/l", "/sl", "/abs", "/dangling", "/loop",
		"/d", "/d/", "/d/n1", "/d/e/up", "/d/e/up/", "/d/../a", "/frag", "/h",
		"/h/entry_with_a_longer_name_7", "/lost+found", "/x/../a", "a", "",
	};
	static char names[16][GPUOS_EXT4_NAME_MAX + 2];
	struct gpuos_ext4_inode in, root;
	uint32_t nnames = 0, i, ino;
	int r;

	r = gpuos_ext4_iget(&fs, GPUOS_EXT4_ROOT_INO, &root);
	CHECK(r == 0); /* mount checked it */
	check_inode(&root, GPUOS_EXT4_ROOT_INO);
	poke_dir(&root, names, &nnames, 16);

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = gpuos_ext4_lookup_at(&fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, paths[i], 0, &in);
		if (r == 0) {
			check_inode(&in, in.ino);
			if (in.type == GPUOS_EXT4_FT_DIR)
				poke_dir(&in, NULL, NULL, 0);
			else
				poke_data(&in);
		} else {
			CHECK(r < 0 && fs.why != NULL);
		}
		r = gpuos_ext4_lookup_at(&fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, paths[i],
					 GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
		if (r == 0 && in.type == GPUOS_EXT4_FT_SYMLINK)
			poke_data(&in);
	}
	for (i = 0; i < nnames; i++) {
		r = gpuos_ext4_lookup_at(&fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, names[i],
					 GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
		if (r != 0)
			continue;
		check_inode(&in, in.ino);
		if (in.type == GPUOS_EXT4_FT_DIR) {
			struct gpuos_ext4_inode sub;

			poke_dir(&in, NULL, NULL, 0);
			/* the directory as a jail */
			if (gpuos_ext4_lookup_at(&fs, in.ino, in.ino, "../x/../..//.", 0, &sub) == 0)
				CHECK(sub.ino == in.ino);
		} else {
			poke_data(&in);
		}
		r = gpuos_ext4_lookup(&fs, names[i], &ino);
		CHECK(r <= 0);
	}
	/* inodes by number: reserved ones, the first few, the last */
	for (i = 1; i < 24; i++)
		if (gpuos_ext4_iget(&fs, i, &in) == 0)
			check_inode(&in, i);
	CHECK(gpuos_ext4_iget(&fs, 0, &in) == -EINVAL);
	if (fs.inodes_count < UINT32_MAX)
		CHECK(gpuos_ext4_iget(&fs, fs.inodes_count + 1, &in) == -EINVAL);
	(void)gpuos_ext4_iget(&fs, fs.inodes_count, &in);
}

static void run(const uint8_t *data, size_t size)
{
	struct vdev v;
	struct gpuos_meta_io io;
	int r;

	v.data = data;
	v.size = size;
	v.vsize = size;
	if (size >= 2048) {
		uint32_t log = le32(data + 1024 + 24);
		uint64_t want = (uint64_t)le32(data + 1024 + 4) << (10 + (log > 6 ? 6 : log));

		if (want > v.vsize)
			v.vsize = want > VSIZE_MAX ? VSIZE_MAX : want;
	}
	io.read = vdev_read;
	io.ctx = &v;
	io.size = v.vsize;

	r = gpuos_ext4_mount(&fs, &io, 0);
	if (r == -EOPNOTSUPP)
		r = gpuos_ext4_mount(&fs, &io, GPUOS_EXT4_MOUNT_NORECOVERY);
	if (r != 0) {
		CHECK(r < 0 && fs.why != NULL);
		return;
	}
	CHECK(fs.why == NULL);
	CHECK(fs.block_size >= 1024 && fs.block_size <= 65536);
	CHECK(fs.blocks_count <= v.vsize / fs.block_size);
	walk();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		size = MAX_INPUT;
	run(data, size);

	/* again without checksums, when the input had them */
	if (size >= 2048 && (le32(data + 1024 + 0x64) & (GPUOS_EXT4_RO_COMPAT_METADATA_CSUM |
							 GPUOS_EXT4_RO_COMPAT_GDT_CSUM))) {
		uint32_t ro = le32(data + 1024 + 0x64) &
			      ~(uint32_t)(GPUOS_EXT4_RO_COMPAT_METADATA_CSUM | GPUOS_EXT4_RO_COMPAT_GDT_CSUM);

		memcpy(copy, data, size);
		copy[1024 + 0x64] = (uint8_t)ro;
		copy[1024 + 0x65] = (uint8_t)(ro >> 8);
		copy[1024 + 0x66] = (uint8_t)(ro >> 16);
		copy[1024 + 0x67] = (uint8_t)(ro >> 24);
		run(copy, size);
	}
	return 0;
}
