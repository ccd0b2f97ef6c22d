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
	"--require-gpu fails instead). -q before the command is the command's own -q. `gpuos help\n"
	"COMMAND` (or `gpuos COMMAND --help`) lists its options and examples.\n";

static const char examples[] =
	"\nexamples:\n"
	"  gpuos identify --device emu:disk.img\n"
	"  gpuos -q ls --device emu:disk.img /models\n"
	"  gpuos cat --device pci:0000:01:00.0 --offset 4K --length 64 /models/m.gguf | xxd\n"
	"  gpuos help cat\n";

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

/* The commands nearest cmd, into best[] (up to 3; returns how many): those
 * fewest edits away, two at most and no more than half its letters ("ca"
 * for cat, not "st" for stop); else the only command that cmd begins, two
 * letters at least ("ident" for identify). */
static int nearest(const char *cmd, const struct cli_command **best)
{
	const struct cli_command *c, *prefix = NULL;
	size_t n = strlen(cmd);
	int lim = n / 2 < 2 ? (int)(n / 2) : 2, bd = lim + 1, nb = 0, prefixes = 0;
	for (c = cli_commands; c->name; c++) {
		int d = distance(cmd, c->name);
		if (d < bd) {
			bd = d;
			nb = 0;
		}
		if (d == bd && d <= lim && nb < 3)
			best[nb++] = c;
		if (n >= 2 && !strncmp(c->name, cmd, n)) {
			prefix = c;
			prefixes++;
		}
	}
	if (!nb && prefixes == 1)
		best[nb++] = prefix;
	return nb;
}

/* "gpuos: unknown command 'X' (did you mean 'Y'?)", exit 2. */
static int unknown_command(const char *cmd)
{
	const struct cli_command *best[3];
	int i, nb = nearest(cmd, best);
	fprintf(stderr, "gpuos: unknown command '");
	cli_put_escaped(stderr, cmd, strlen(cmd));
	if (!nb)
		fprintf(stderr, "' (gpuos --help lists them)\n");
	for (i = 0; i < nb; i++)
		fprintf(stderr, "%s'%s'%s", i ? " or " : "' (did you mean ", best[i]->name, i + 1 < nb ? "" : "?)\n");
	return GPUOS_EXIT_USAGE;
}

static void usage(FILE *f)
{
	const struct cli_command *c;
	fprintf(f, "usage: gpuos [-q] COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (c = cli_commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->what);
	fprintf(f, "\noptions before the command:\n"
		   "  -q, --quiet    no notices on stderr (the command's own -q/--quiet)\n"
		   "  -h, --help     this help; gpuos help COMMAND: COMMAND's\n"
		   "      --version  the version, the ABI and the GPU architectures built in\n\n%s\n%s%s",
		common, cli_exit_help, examples);
}

/* `gpuos help [COMMAND]`, `gpuos --help`: the help on stdout, exit 0. */
static int help(int argc, char **argv)
{
	const struct cli_command *c;
	if (argc > 1) { /* gpuos help COMMAND */
		c = cli_command(argv[1]);
		if (!c)
			return unknown_command(argv[1]);
		cli_help(stdout, c);
		return cli_output_done(c->name, GPUOS_EXIT_OK);
	}
	usage(stdout);
	return cli_output_done(argv[0], GPUOS_EXIT_OK);
}

int main(int argc, char **argv)
{
	const struct cli_command *c;
	const char *cmd;
	int first = 1, k;
	/* -q/--quiet before the command: the command's own -q */
	while (first < argc && (!strcmp(argv[first], "-q") || !strcmp(argv[first], "--quiet")))
		first++;
	if (first >= argc) {
		usage(stderr);
		return GPUOS_EXIT_USAGE;
	}
	cmd = argv[first];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("gpuos %s (ABI %u; GPU architectures built in: %s)\n", GPUOS_VERSION, GPUOS_ABI_VERSION,
		       GPUOS_CUDA_ARCHS);
		return cli_output_done(cmd, GPUOS_EXIT_OK);
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return help(1, argv + first);
	if (!strcmp(cmd, "help"))
		return help(argc - first, argv + first);
	c = cli_command(cmd);
	if (!c)
		return unknown_command(cmd);
	/* --help anywhere before "--" (after it, arguments are an app's) */
	for (k = first + 1; k < argc && strcmp(argv[k], "--"); k++)
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			cli_help(stdout, c);
			return cli_output_done(c->name, GPUOS_EXIT_OK);
		}
	/* every command's output checked once, here; a -q given before the
	 * command goes to it in the command's own slot */
	k = first + 1;
	if (first > 1)
		argv[--k] = (char *)"--quiet";
	return cli_output_done(c->name, c->fn(argc - k, argv + k));
}
