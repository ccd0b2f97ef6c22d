/* SPDX-License-Identifier: MIT */
/* The `gpuos` command: dispatch to the subcommands of options.c's table,
 * `gpuos --help` and `gpuos --version`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef GPUOS_CUDA_ARCHS
#define GPUOS_CUDA_ARCHS "unknown" /* the Makefile names them (CUDA_ARCH) */
#endif

static const char common[] =
	"DEV: emu:IMAGE[,k=v...]  null[:SIZE]  gpu-null  pci:DDDD:BB:DD.F[+...][,stripe=KiB]\n\n"
	"Commands that boot a runtime run it on the GPU, or on CPU threads where there is no GPU\n"
	"(a notice says so; --require-gpu fails instead). `gpuos COMMAND --help` lists its options.\n";

static void usage(FILE *f)
{
	const struct cli_command *c;
	fprintf(f, "usage: gpuos COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (c = cli_commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->what);
	fprintf(f, "  %-9s %s\n\n%s\n%s", "--version", "the version, the ABI and the GPU architectures built in", common,
		cli_exit_help);
}

int main(int argc, char **argv)
{
	const struct cli_command *c;
	const char *cmd;
	if (argc < 2) {
		usage(stderr);
		return GPUOS_EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("gpuos %s (ABI %u; GPU architectures built in: %s)\n", GPUOS_VERSION, GPUOS_ABI_VERSION,
		       GPUOS_CUDA_ARCHS);
		return cli_output_done(cmd, GPUOS_EXIT_OK);
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return cli_output_done(cmd, GPUOS_EXIT_OK);
	}
	c = cli_command(cmd);
	if (c) {
		int k;
		/* --help anywhere before "--" (after it, arguments are an app's) */
		for (k = 2; k < argc && strcmp(argv[k], "--"); k++)
			if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
				cli_help(stdout, c);
				return cli_output_done(c->name, GPUOS_EXIT_OK);
			}
		/* every command's output checked once, here */
		return cli_output_done(c->name, c->fn(argc - 2, argv + 2));
	}
	fprintf(stderr, "gpuos: unknown command '%s'\n", cmd);
	usage(stderr);
	return GPUOS_EXIT_USAGE;
}
