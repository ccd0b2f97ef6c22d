/* SPDX-License-Identifier: MIT */
/*
 * apps/embed/cat.c - the smallest program that embeds gpuos: boot a runtime
 * on a device, read one file of its ext4 through the mailbox into the
 * runtime's client memory, write it to stdout, shut down. It is built
 * against the installed library only (docs/embedding.md):
 *
 *   cc -o gpuos-cat apps/embed/cat.c $(pkg-config --cflags --libs gpuos)
 *   ./gpuos-cat [--host] DEVICE PATH > FILE
 *
 * DEVICE is what `gpuos --device` takes (emu:IMAGE, pci:...); --host runs
 * the runtime on CPU threads. Exit status 0, 1 when the device or the file
 * fails (one line on stderr says why), 2 on a usage error.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

/* Client memory: the path at 0, a reason at WHY, the data window at DATA. */
#define WHY  GPUOS_PATH_MAX
#define DATA (2u * GPUOS_PATH_MAX)
#define WINDOW (16u << 20)

int main(int argc, char **argv)
{
	struct gpuos_boot_opts o;
	struct gpuos_sys *sys;
	struct gpuos_mbox *mb;
	char err[512], *heap;
	uint64_t heap_rt, heap_len, size = 0, off = 0, got = 0, win;
	uint32_t h, st;
	int a = 1, host = 0, rc = 0, opened;

	if (a < argc && !strcmp(argv[a], "--host")) {
		host = 1;
		a++;
	}
	if (argc - a != 2 || strlen(argv[a + 1]) >= GPUOS_PATH_MAX) {
		fprintf(stderr, "usage: %s [--host] DEVICE PATH\n", argv[0]);
		return 2;
	}
	gpuos_boot_opts_default(&o);
	o.device = argv[a];
	o.host_mode = host;
	o.quiet = 1;
	if (gpuos_boot(&o, &sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-cat: %s: %s\n", argv[a], err);
		return 1;
	}
	mb = gpuos_sys_mbox(sys);
	heap = (char *)gpuos_sys_heap(sys, &heap_rt, &heap_len);
	if (heap_len <= DATA) {
		fprintf(stderr, "gpuos-cat: client memory of %llu bytes is too small\n", (unsigned long long)heap_len);
		gpuos_shutdown(sys, err, sizeof(err));
		return 1;
	}
	win = heap_len - DATA < WINDOW ? heap_len - DATA : WINDOW;
	/* Requests name runtime-space addresses; the host reads and writes the
	 * same bytes through its own mapping. */
	strcpy(heap, argv[a + 1]);
	heap[WHY] = 0;
	st = gpuos_open(mb, (const char *)(uintptr_t)heap_rt, 0, &h, &size, (char *)(uintptr_t)(heap_rt + WHY), 256);
	opened = st == GPUOS_ST_OK;
	if (!opened) {
		fprintf(stderr, "gpuos-cat: %s: %s\n", argv[a + 1], heap[WHY] ? heap + WHY : gpuos_status_name(st));
		rc = 1;
	}
	for (; !rc && off < size; off += got) {
		st = gpuos_read(mb, h, off, win, (void *)(uintptr_t)(heap_rt + DATA), &got);
		if (st != GPUOS_ST_OK || got == 0) {
			fprintf(stderr, "gpuos-cat: %s: read at byte %llu: %s\n", argv[a + 1], (unsigned long long)off,
				st != GPUOS_ST_OK ? gpuos_status_name(st) : "end of file before its size");
			rc = 1;
		} else if (fwrite(heap + DATA, 1, got, stdout) != got) {
			perror("gpuos-cat: stdout");
			rc = 1;
		}
	}
	if (opened)
		gpuos_close(mb, h);
	if (gpuos_shutdown(sys, err, sizeof(err))) {
		fprintf(stderr, "gpuos-cat: shutdown: %s\n", err);
		rc = 1;
	}
	return rc;
}
