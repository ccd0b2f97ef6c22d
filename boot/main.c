/* SPDX-License-Identifier: MIT */
/* The `gpuos` command: dispatch to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define GPUOS_VERSION "0.14"
#ifndef GPUOS_CUDA_ARCHS
#define GPUOS_CUDA_ARCHS "unknown" /* the Makefile names them (CUDA_ARCH) */
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuos COMMAND [options]\n"
		"  identify [--json] --device DEV        bring up a controller, print what it is\n"
		"  read --device DEV --allow-raw --offset B --length B [-o FILE]\n"
		"                                        read bytes of the device through the runtime\n"
		"  boot --device DEV [--warps N] [--queues N] [--depth N] [--host] [--socket PATH] [--allow-raw]\n"
		"       [--mbox-vram [--vram-mib N]]\n"
		"                                        run the runtime as a service\n"
		"  stop [--socket PATH]                  stop a running service\n"
		"  ls [--json] --device DEV [--part N] PATH      list a directory of the device's ext4\n"
		"  stat [--json] --device DEV [--part N] PATH    inode, mode, size and extents of a file\n"
		"  cat --device DEV [--part N] PATH [-o FILE]    a file's bytes\n"
		"  gguf [--json] --device DEV [--part N] PATH|@BYTEOFFSET\n"
		"                                        a GGUF model's header, KVs and tensors\n"
		"  image [--json] APP.cubin              inspect an app image: architecture, ABI, entries\n"
		"  run [--device DEV | --socket PATH] APP.cubin [--entry NAME] [--grid G] [--block B]\n"
		"      [--vram-mib N] [--arch sm_XY] [-- ARGS...]\n"
		"                                        run an app (APP.so or --host: its host-mode variant)\n"
		"  bench --device DEV [--threads T] [--iters N] [--bytes B] [--op read|nop] [--stages] [--json]\n"
		"                                        requests/s and latency through the whole path\n"
		"  --version                             the version, the ABI and the GPU architectures built in\n"
		"devices: emu:IMAGE[,k=v...]  null[:SIZE]  gpu-null  pci:DDDD:BB:DD.F\n"
		"options: --opt VALUE or --opt=VALUE; sizes (--offset, --length, --bytes) take K, M, G, T\n"
		"  (KiB, MiB, GiB, TiB) and 0x; a value that is not such a number is refused\n"
		"--host runs the runtime on CPU threads (the default when no GPU is present);\n"
		"  --require-gpu fails instead of running on CPU threads.\n"
		"--no-files boots without the metadata warp (no file or model requests).\n"
		"--no-zero-copy sends every read through the bounce buffers (by default, reads of whole\n"
		"  LBAs into client memory the controller can reach go there directly).\n");
}

int main(int argc, char **argv)
{
	const char *cmd;
	if (argc < 2) {
		usage(stderr);
		return GPUOS_EXIT_FAIL;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("gpuos %s (ABI %u; GPU architectures built in: %s)\n", GPUOS_VERSION, GPUOS_ABI_VERSION,
		       GPUOS_CUDA_ARCHS);
		return 0;
	}
	if (!strcmp(cmd, "identify"))
		return cmd_identify(argc - 2, argv + 2);
	if (!strcmp(cmd, "read"))
		return cmd_read(argc - 2, argv + 2);
	if (!strcmp(cmd, "boot"))
		return cmd_boot(argc - 2, argv + 2);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc - 2, argv + 2);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc - 2, argv + 2);
	if (!strcmp(cmd, "cat"))
		return cmd_cat(argc - 2, argv + 2);
	if (!strcmp(cmd, "gguf"))
		return cmd_gguf(argc - 2, argv + 2);
	if (!strcmp(cmd, "image"))
		return cmd_image(argc - 2, argv + 2);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(argc - 2, argv + 2);
	if (!strcmp(cmd, "stop"))
		return cmd_stop(argc - 2, argv + 2);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "gpuos: unknown command '%s'\n", cmd);
	usage(stderr);
	return GPUOS_EXIT_FAIL;
}
