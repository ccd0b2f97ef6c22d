/* SPDX-License-Identifier: MIT */
/* boot/cli/cli.h - what the `gpuos` commands share: options, errors, clients. */
#ifndef GPUOS_BOOT_CLI_H
#define GPUOS_BOOT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

#define GPUOS_EXIT_FAIL 2   /* every error: bad usage, bad device, failed I/O */

struct cli {
	struct gpuos_boot_opts boot;
	const char *socket;      /* --socket PATH: use a running service */
	const char *out;         /* -o FILE */
	int json;
	int part;                /* --part N, -1 = default */
	uint64_t offset, length;
	int have_offset, have_length;
	const char *entry;
	unsigned grid, block;
	int sm;                  /* --arch sm_XY: compute capability XY to check app images against */
	int verbose;
	/* positional arguments */
	int argc;
	char **argv;
};

/* Parse argv (after the command name) into *c. Unknown options are an
 * error (exit 2 with a message). Returns 0 or -1. */
int cli_parse(struct cli *c, const char *cmd, int argc, char **argv);

/* A number: decimal or 0x hex, and with suffixes set a size with K, M, G,
 * T (also KiB, MiB, GiB, TiB, k: powers of 1024). 0, -EINVAL (not such
 * a number: trailing junk, a sign, empty), -ERANGE (above max). Never a
 * smaller number than written. */
int cli_size(const char *v, int suffixes, uint64_t max, uint64_t *out);
/* The same for option opt, with the error printed: a count, or bytes. */
int cli_num(const char *cmd, const char *opt, const char *v, uint64_t max, uint64_t *out);
int cli_bytes(const char *cmd, const char *opt, const char *v, uint64_t max, uint64_t *out);
/* "--name=value": name into buf, returns value; NULL for any other form. */
const char *cli_split_eq(const char *a, char *buf, size_t len);

/* Write all n bytes to fd (retrying short writes); 0 or -errno. */
int cli_write_all(int fd, const char *p, size_t n);

/* Print "gpuos CMD: MESSAGE" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A host client of a runtime: booted for this command's lifetime, or a
 * running service reached through --socket. */
struct client {
	struct gpuos_mbox *mb;
	char *heap;              /* client memory, host mapping */
	uint64_t heap_rt;        /* the same in runtime space */
	uint64_t heap_len;
	struct gpuos_sys *sys;   /* when booted here */
	int sock;                /* when attached: the service connection (held open) */
	void *shm;
	uint64_t shm_len;
};

int client_open(struct cli *c, struct client *cl, char *err, size_t errlen);
int client_close(struct client *cl, char *err, size_t errlen);

/* Default socket path when --socket is given without a value elsewhere. */
#define GPUOS_DEFAULT_SOCKET "/tmp/gpuos.sock"

int cmd_identify(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_boot(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_gguf(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* Controller i of the device (one of an array's; identify, bench): its
 * identity, the emulator's performance model of it, and its own counters
 * when st is not NULL. As a JSON object, or as indented lines of text. */
void cli_ctrl_json(FILE *f, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st);
void cli_ctrl_text(FILE *f, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st);

/* "the controller reported an error: NVMe status 0x281 ..." */
void describe_status(char *buf, size_t len, uint32_t st, uint16_t nvme);

#endif /* GPUOS_BOOT_CLI_H */
