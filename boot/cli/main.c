/* SPDX-License-Identifier: MIT */
/* The `gpuos` command: dispatch to the subcommands, one table for the
 * dispatch, `gpuos --help` and `gpuos CMD --help`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define GPUOS_VERSION "0.14"
#ifndef GPUOS_CUDA_ARCHS
#define GPUOS_CUDA_ARCHS "unknown" /* the Makefile names them (CUDA_ARCH) */
#endif

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis; /* after "gpuos NAME " */
	const char *what;
} commands[] = {
	{ "identify", cmd_identify, "[--json] --device DEV", "bring up a controller, print what it is" },
	{ "read", cmd_read, "--device DEV --allow-raw --offset B --length B [-o FILE]",
	  "read bytes of the device through the runtime" },
	{ "boot", cmd_boot,
	  "--device DEV [--warps N] [--queues N] [--depth N] [--host] [--socket PATH] [--allow-raw]\n"
	  "       [--mbox-vram [--vram-mib N]]",
	  "run the runtime as a service" },
	{ "stop", cmd_stop, "[--socket PATH]", "stop a running service" },
	{ "ls", cmd_ls, "[--json] --device DEV [--part N] PATH", "list a directory of the device's ext4" },
	{ "stat", cmd_stat, "[--json] --device DEV [--part N] PATH", "inode, mode, size and extents of a file" },
	{ "cat", cmd_cat, "--device DEV [--part N] PATH [-o FILE]", "a file's bytes" },
	{ "gguf", cmd_gguf, "[--json] --device DEV [--part N] PATH|@BYTEOFFSET",
	  "a GGUF model's header, KVs and tensors" },
	{ "image", cmd_image, "[--json] APP.cubin", "inspect an app image: architecture, ABI, entries" },
	{ "run", cmd_run,
	  "[--device DEV | --socket PATH] APP.cubin [--entry NAME] [--grid G] [--block B]\n"
	  "      [--vram-mib N] [--arch sm_XY] [-- ARGS...]",
	  "run an app (APP.so or --host: its host-mode variant)" },
	{ "bench", cmd_bench, "--device DEV [--threads T] [--iters N] [--bytes B] [--op read|nop] [--stages] [--json]",
	  "requests/s and latency through the whole path" },
};

static const char common[] =
	"devices: emu:IMAGE[,k=v...]  null[:SIZE]  gpu-null  pci:DDDD:BB:DD.F[+...][,stripe=KiB]\n"
	"options: --opt VALUE or --opt=VALUE; sizes (--offset, --length, --bytes) take K, M, G, T\n"
	"  (KiB, MiB, GiB, TiB) and 0x; a value that is not such a number is refused\n"
	"--host runs the runtime on CPU threads (the default when no GPU is present);\n"
	"  --require-gpu fails instead of running on CPU threads.\n"
	"--no-files boots without the metadata warp (no file or model requests).\n"
	"--no-zero-copy sends every read through the bounce buffers (by default, reads of whole\n"
	"  LBAs into client memory the controller can reach go there directly).\n"
	"exit status: 0 done, 2 an error (a message on stderr, one line).\n";

static void usage(FILE *f)
{
	size_t i;
	fprintf(f, "usage: gpuos COMMAND [options]\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s %s\n      %s\n", commands[i].name, commands[i].synopsis, commands[i].what);
	fprintf(f, "  --version\n      the version, the ABI and the GPU architectures built in\n"
		   "  COMMAND --help\n      one command's usage\n%s", common);
}

static void usage_of(const struct command *c)
{
	printf("usage: gpuos %s %s\n%s\n%s", c->name, c->synopsis, c->what, common);
}

int main(int argc, char **argv)
{
	const char *cmd;
	size_t i;
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
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		int k;
		if (strcmp(cmd, commands[i].name))
			continue;
		/* --help anywhere before "--" (after it, arguments are an app's) */
		for (k = 2; k < argc && strcmp(argv[k], "--"); k++)
			if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
				usage_of(&commands[i]);
				return 0;
			}
		return commands[i].fn(argc - 2, argv + 2);
	}
	fprintf(stderr, "gpuos: unknown command '%s'\n", cmd);
	usage(stderr);
	return GPUOS_EXIT_FAIL;
}
