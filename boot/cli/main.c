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
	"(a notice says so: -q/--quiet, or GPUOS_QUIET_HOST=1 in the environment, silences it;\n"
	"--require-gpu fails instead). `gpuos help COMMAND` (or `gpuos COMMAND --help`) lists its\n"
	"options and examples.\n";

/* Edits (insert, delete, replace, swap two neighbours) from a to b, up to
 * 3 (more: 3), for "did you mean". */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	int d[16][16];
	if (la > 14 || lb > 14)
		return 3;
	for (i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb] < 3 ? d[la][lb] : 3;
}

/* "gpuos: unknown command 'X' (did you mean 'Y'?)": the nearest command
 * within two edits, if one is. */
static int unknown_command(const char *cmd)
{
	const struct cli_command *c, *best = NULL;
	int bd = 3;
	for (c = cli_commands; c->name; c++) {
		int d = distance(cmd, c->name);
		if (d < bd) {
			bd = d;
			best = c;
		}
	}
	fprintf(stderr, "gpuos: unknown command '");
	cli_put_escaped(stderr, cmd, strlen(cmd));
	if (best)
		fprintf(stderr, "' (did you mean '%s'?)\n", best->name);
	else
		fprintf(stderr, "' (gpuos --help lists them)\n");
	return GPUOS_EXIT_USAGE;
}

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
		if (argc > 2 && !strcmp(cmd, "help")) { /* gpuos help COMMAND */
			c = cli_command(argv[2]);
			if (!c)
				return unknown_command(argv[2]);
			cli_help(stdout, c);
			return cli_output_done(c->name, GPUOS_EXIT_OK);
		}
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
	return unknown_command(cmd);
}
