/* SPDX-License-Identifier: MIT */
/*
 * tests/tools/gguf_dump.c - host tool: parse a GGUF with
 * runtime/model/gguf/gguf.c and print it as JSON (tests/tools/gguf_parsed.h),
 * for gguf_compare.py against gguf_ref.mjs or gguf_writer.py. --offset
 * reads a GGUF written raw at that byte offset of a bigger image (the
 * raw-LBA layout).
 *
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude -o build/gguf_dump tests/tools/gguf_dump.c \
 *      runtime/model/gguf/gguf.c -lm
 *   build/gguf_dump [--offset BYTES] [--reads] FILE > out.json
 *
 * Exit status: 0 parsed, 1 refused (the reason on stderr), 2 usage or I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_parsed.h"

struct fio {
	int fd;
	uint64_t base;
	uint64_t reads;
	uint64_t bytes;
};

static int fio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct fio *f = (struct fio *)ctx;
	uint8_t *d = (uint8_t *)dst;

	f->reads++;
	f->bytes += len;
	while (len) {
		ssize_t n = pread(f->fd, d, len, (off_t)(f->base + off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		d += n;
		off += (uint64_t)n;
		len -= (uint32_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gpuos_gguf g;
	static struct gpuos_gguf_parser p;
	struct gpuos_gguf_kv one;
	struct gpuos_meta_io io;
	struct fio f = { -1, 0, 0, 0 };
	struct stat st;
	uint64_t size;
	int i, rc, show_reads = 0;
	const char *path = NULL;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--offset") && i + 1 < argc)
			f.base = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--reads"))
			show_reads = 1;
		else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "usage: gguf_dump [--offset BYTES] [--reads] FILE\n");
		return 2;
	}
	f.fd = open(path, O_RDONLY);
	if (f.fd < 0 || fstat(f.fd, &st)) {
		perror(path);
		return 2;
	}
	size = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(f.fd, BLKGETSIZE64, &size)) {
		perror("BLKGETSIZE64");
		return 2;
	}
	if (f.base > size) {
		fprintf(stderr, "offset past the end of %s\n", path);
		return 2;
	}
	io.read = fio_read;
	io.ctx = &f;
	io.size = size - f.base;

	/* Measure: no tables, a KV table of capacity 0 so the arena is counted. */
	memset(&g, 0, sizeof(g));
	g.mem.kv = &one;
	rc = gpuos_gguf_parse(&g, &p, &io);
	if (rc == -ENOSPC) {
		g.mem.tensors = (struct gpuos_gguf_tensor *)calloc(g.tensor_count + 1, sizeof(*g.mem.tensors));
		g.mem.tensor_cap = (uint32_t)g.tensor_count;
		g.mem.kv = (struct gpuos_gguf_kv *)calloc(g.kv_count + 1, sizeof(*g.mem.kv));
		g.mem.kv_cap = (uint32_t)g.kv_count;
		g.mem.arena = (uint8_t *)malloc(g.arena_used + 1);
		g.mem.arena_cap = (uint32_t)g.arena_used;
		for (g.mem.index_cap = 1; g.mem.index_cap < 2 * g.tensor_count; g.mem.index_cap <<= 1)
			;
		g.mem.index = (uint32_t *)calloc(g.mem.index_cap, sizeof(uint32_t));
		if (!g.mem.tensors || !g.mem.kv || !g.mem.arena || !g.mem.index) {
			fprintf(stderr, "out of memory\n");
			return 2;
		}
		rc = gpuos_gguf_parse(&g, &p, &io);
	}
	if (rc) {
		fprintf(stderr, "%s: ", path);
		gguf_print_error(stderr, &p, rc);
		rc = 1;
		goto out;
	}
	gguf_json_file(stdout, &g);
	if (show_reads)
		fprintf(stderr, "%s: %" PRIu64 " reads, %" PRIu64 " bytes (two passes)\n", path, f.reads,
			f.bytes);
	rc = 0;
out:
	if (g.mem.kv != &one) {
		free(g.mem.tensors);
		free(g.mem.kv);
		free(g.mem.arena);
		free(g.mem.index);
	}
	close(f.fd);
	return rc;
}
