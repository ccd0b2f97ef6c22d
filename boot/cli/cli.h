/* SPDX-License-Identifier: MIT */
/* boot/cli/cli.h - what the `gpuos` commands share: options, errors, clients. */
#ifndef GPUOS_BOOT_CLI_H
#define GPUOS_BOOT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"

/* Exit status of every command (cli_exit_help says it to users). */
#define GPUOS_EXIT_OK    0
#define GPUOS_EXIT_FAIL  1   /* the operation failed: a device error, no such file, ... */
#define GPUOS_EXIT_USAGE 2   /* the command line: an unknown option, a bad value, a missing argument */

/* What gpuos bench does unless told: cmd_bench.c runs with these, and its
 * --help (options.c) says them. */
#define BENCH_ITERS 1000u /* requests per thread */
#define BENCH_BYTES 4096u /* bytes per request */

struct cli {
	struct gpuos_boot_opts boot;
	const char *socket;      /* --socket PATH: use a running service */
	int socket_default;      /* socket is the default one (gpuos_service_default_socket), not given */
	const char *out;         /* -o FILE */
	int json;
	int stats;               /* --stats: the runtime's counters, always, also as JSON (cli_counters) */
	int shard;               /* gguf --shard */
	int part;                /* --part N, -1 = default */
	uint64_t offset, length;
	int have_offset, have_length;
	const char *entry;
	unsigned grid, block;
	int sm;                  /* --arch sm_XY: compute capability XY to check app images against */
	uint32_t threads, iters, bytes; /* bench (0: its default) */
	const char *op;          /* bench --op read|nop (NULL: read) */
	int stages;              /* bench --stages */
	const char *socket_mode; /* boot: --socket-mode (octal text) */
	const char *group;       /* boot: --group */
	uint32_t client_timeout_ms;
	const char *apps_dir;    /* boot: --apps DIR */
	int allow_host_apps;
	int no_perms;            /* boot --no-perms */
	int no_mps;              /* boot --no-mps */
	const char *config;      /* boot --config FILE */
	uint32_t gpus[GPUOS_GROUP_MAX]; /* boot --gpus: a runtime on each */
	uint32_t ngpus;
	/* positional arguments */
	int argc;
	char **argv;
};

/* A subcommand: its entry, usage line, what it does, and the options it
 * takes (names of options.c's table, space-separated). */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;    /* after "gpuos NAME [OPTIONS] " */
	const char *what;
	const char *options;
};
extern const struct cli_command cli_commands[]; /* ends with a NULL name */
extern const char cli_exit_help[];
const struct cli_command *cli_command(const char *name);
/* `gpuos CMD --help`, from the tables. */
void cli_help(FILE *f, const struct cli_command *c);

/* Parse argv (after the command name) into *c: the command's options
 * only (getopt_long; --opt VALUE and --opt=VALUE), positional arguments
 * into c->argv. A bad command line prints one line and returns -1: the
 * caller exits GPUOS_EXIT_USAGE. */
int cli_parse(struct cli *c, const char *cmd, int argc, char **argv);

/* A number: decimal (010 is ten, never octal) or 0x hex, and with
 * suffixes set a size with K, M, G, T (also KiB, MiB, GiB, TiB, k: powers
 * of 1024). 0, -EINVAL (not such a number: trailing junk, a sign, empty),
 * -ERANGE (above max). Never a smaller number than written. */
int cli_size(const char *v, int suffixes, uint64_t max, uint64_t *out);

/* Bytes in human units beside nothing else: "512 B", "4 KiB", "1.5 GiB"
 * (powers of 1024, one decimal unless whole). Returns buf. */
const char *cli_human(char *buf, size_t len, uint64_t bytes);

/* A progress bar on stderr for long reads and loads: only when stderr is a
 * terminal, the work lasts more than a moment, and a known total is at least
 * 16 MiB; quiet otherwise (pipes, logs, tests). */
struct cli_progress {
	int on, shown;
	uint64_t total;          /* 0: not known (bytes and rate, no percentage) */
	double t0, last;         /* seconds (CLOCK_MONOTONIC) */
};
void cli_progress_begin(struct cli_progress *p, uint64_t total);
void cli_progress_begin_open(struct cli_progress *p);           /* total not known yet: set p->total later */
void cli_progress_update(struct cli_progress *p, uint64_t done); /* at most 10 times a second */
void cli_progress_end(struct cli_progress *p);                  /* clears the line */

/* Write all n bytes to fd (retrying short writes); 0 or -errno. */
int cli_write_all(int fd, const char *p, size_t n);

/* CPU seconds of this process so far, leaving out the emulated
 * controller's threads (emu*, and the io_uring workers iou-*); -1 without /proc. */
double cli_cpu_seconds_without_emu(void);
double cli_now_s(void); /* CLOCK_MONOTONIC, seconds */

/* cat and read: len bytes from byte off (of the file behind handle, or of
 * the device for GPUOS_OP_READ_RAW) through several requests in flight, each
 * into its own chunk of client memory [buf, buf + buf_len), written to fd in
 * order, with a progress bar. 0, or -1 with where it stopped set; nothing is
 * left in flight either way. */
struct cli_stream {
	struct gpuos_mbox *mb;
	uint16_t op;             /* GPUOS_OP_READ or GPUOS_OP_READ_RAW */
	uint32_t handle;         /* READ: the open file */
	uint64_t off, len;
	char *buf;               /* client memory: host mapping, */
	uint64_t buf_rt, buf_len; /* its runtime address and size */
	int fd;
	/* out */
	uint64_t done;           /* bytes written to fd */
	uint32_t st;             /* a failed read's status: GPUOS_ST_OK for a short one */
	uint16_t nvme;           /* its NVMe status */
	uint64_t want, got;      /* its bytes asked and read */
	int write_err;           /* -errno of a failed write to fd; 0: a read failed */
};
int cli_stream(struct cli_stream *s);

/* Print "gpuos CMD: MESSAGE" on stderr, MESSAGE escaped as cli_put_escaped
 * does (it may carry names from the disk or the command line). */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Untrusted bytes (names from the disk or a device, paths) as text output
 * shows them, so that none can drive the terminal: as `ls -b` does, a
 * backslash as \\, control characters as \a \b \t \n \v \f \r or \ooo
 * (octal; C1 controls too, byte by byte), bytes that are not UTF-8 as
 * \ooo; the rest, spaces and UTF-8 included, as is. JSON output carries
 * names exactly instead (json.h). cli_put_escaped writes n bytes of s to
 * f and returns the bytes written (for padding); cli_escaped writes the
 * string s into buf (cap bytes with the NUL, "..." where it is cut: 4 per
 * byte of s always fit) and returns buf. */
size_t cli_put_escaped(FILE *f, const void *s, size_t n);
const char *cli_escaped(char *buf, size_t cap, const char *s);

/* The output of cat and read: -o FILE (created, then truncated) or stdout,
 * refused when it is the device's own image file (the same inode: through
 * any name or link). 0 with *fd set (1 for stdout), or the exit status
 * after one line on stderr. */
int cli_output_open(const char *cmd, const struct cli *c, int *fd);

/* After a command: flush stdout and turn a failed write (a full disk, a
 * closed pipe) into "gpuos CMD: writing the output: REASON" and exit
 * status 1. Returns rc, or GPUOS_EXIT_FAIL for a failed write after rc 0. */
int cli_output_done(const char *cmd, int rc);

/* A host client of a runtime: booted for this command's lifetime, or a
 * running service reached through --socket. */
struct client {
	struct gpuos_mbox *mb;
	char *heap;              /* client memory, host mapping */
	uint64_t heap_rt;        /* the same in runtime space */
	uint64_t heap_len;
	struct gpuos_sys *sys;   /* when booted here */
	struct gpuos_attached at; /* when attached to a service (at.sock >= 0) */
};

int client_open(struct cli *c, struct client *cl, char *err, size_t errlen);
/* After err about c->socket: where it was the default, say so and what to
 * give instead (can_boot: the command takes --device too). */
void cli_socket_hint(const struct cli *c, int can_boot, char *err, size_t errlen);
int client_close(struct client *cl, char *err, size_t errlen);

/* Where a service finds the apps that `run` requests name (gpuos boot
 * --apps DIR, --allow-host-apps), and its handler of those requests
 * (boot/cli/cmd_run.c, beside the client's side of the protocol). */
struct service_apps {
	const char *dir;         /* NULL: no apps run */
	int allow_host;          /* .so apps (code in the service's process) too */
};
char *service_run_app(void *ctx, struct gpuos_sys *s, const struct gpuos_peer *who, uint32_t share,
		      const char *line);

int cmd_identify(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_boot(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_parts(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_gguf(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* Controller i of the device (one of an array's; identify, bench): its
 * identity, the emulator's performance model of it, and its own counters
 * when st is not NULL. As a JSON object, or as indented lines of text. */
struct json;
void cli_ctrl_json(struct json *j, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st);
void cli_ctrl_text(FILE *f, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st);

/* The life of a command in numbers (docs/design.md): after read, cat or
 * run, the runtime's retries, aborts, resets, strays, duplicates,
 * untrusted and timeouts on stderr, as one line of text when any is not 0
 * or c->stats is set, and with c->stats also as one JSON object on a line
 * of its own (gpuos.stats/1, docs/json.md). s: the runtime this process
 * booted (parked first, so that its counts are final; the emulator's own
 * counters too); NULL with c->socket: the service's runtime, all its
 * clients since it started, asked on its socket (with c->stats only: its
 * counts are not this command's). Nothing can fail here but the output. */
void cli_counters(const char *cmd, const struct cli *c, struct gpuos_sys *s);

/* "the controller reported an error: NVMe status 0x281 ..." */
void describe_status(char *buf, size_t len, uint32_t st, uint16_t nvme);

#endif /* GPUOS_BOOT_CLI_H */
