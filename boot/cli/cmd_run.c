/* SPDX-License-Identifier: MIT */
/*
 * gpuos run [--device DEV | --socket PATH] APP.cubin|APP.so [--entry NAME]
 *           [--grid G] [--block B] [--host] [--vram-mib N] [--arch sm_XY] [-- ARGS...]
 *
 * Runs one app (gpuos/app.h, docs/apps.md): in a runtime booted for the
 * app's lifetime (--device), or inside a running service (--socket: the
 * service loads, launches and unloads it in its own process and replies).
 * Prints the app's report, "exit status N" and the runtime's statistics for
 * the run; exits with the app's status (0..255), or 2 when gpuos failed.
 *
 * The service's side of the protocol is here too (service_run_app), so
 * that both ends of it sit in one file. One line each way:
 *   run app=HEX entry=HEX|- grid=G block=B arch=N args=HEX,HEX,...
 *   ok status=N gpu=0|1 entry=HEX requests=N bytes=N errors=N commands=N out=HEX
 *   err MESSAGE
 * (HEX: the bytes of a string in hexadecimal, so that no argument can break
 * the line.) A client names an app; it never gives a path or bytes that the
 * service would execute: the service looks the name up in the directory its
 * operator named (gpuos boot --apps DIR; docs/security.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuos/app.h"

#include "cli.h"

#define RUN_REQ_MAX 8192u
#define RUN_REPLY_MAX (2u * APP_OUT_BYTES + 1024u)
#define DEFAULT_VRAM_MIB 256u

/* ---- the line protocol --------------------------------------------------------- */

static char *hex_encode(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = strlen(s), i;
	char *h = malloc(2 * n + 1);
	if (!h)
		return NULL;
	for (i = 0; i < n; i++) {
		h[2 * i] = digits[(unsigned char)s[i] >> 4];
		h[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	h[2 * n] = 0;
	return h;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* n hex digits at h into a new NUL-terminated string; NULL when malformed
 * or when it would hold a NUL. */
static char *hex_decode(const char *h, size_t n)
{
	char *s;
	size_t i;
	if (n % 2)
		return NULL;
	s = malloc(n / 2 + 1);
	if (!s)
		return NULL;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			free(s);
			return NULL;
		}
		s[i] = (char)(hi << 4 | lo);
	}
	s[n / 2] = 0;
	return s;
}

/* The value of key= in a line of space-separated key=value fields, and its length. */
static const char *field(const char *line, const char *key, size_t *len)
{
	size_t kl = strlen(key);
	const char *p = line;
	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			p += kl + 1;
			*len = strcspn(p, " ");
			return p;
		}
		p += kl;
	}
	return NULL;
}

static int field_num(const char *line, const char *key, unsigned long long *v)
{
	size_t n;
	const char *p = field(line, key, &n);
	char *end;
	if (!p || !n)
		return -1;
	*v = strtoull(p, &end, 10);
	return end == p + n ? 0 : -1;
}

/* A file the service may load code from: a regular file (no symlink) of
 * root or the service's user that no one else can write. 0, or -ENOENT and
 * -EPERM with why. */
static int trusted_file(const char *path, const char *name, char *why, size_t whylen)
{
	struct stat st;
	if (lstat(path, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "no app %s in the service's apps directory", name);
		return -ENOENT;
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, whylen, "app %s is writable by others or belongs to another user: refused", name);
		return -EPERM;
	}
	return 0;
}

/* The app a run request names: a plain file name in the service's apps
 * directory, a trusted file, and a .so only where host apps are allowed.
 * A runtime in host mode runs the .so beside a cubin: that one is checked
 * the same way. */
static int resolve_app(const struct service_apps *a, int on_gpu, const char *name, char *path, size_t len,
		       char *why, size_t whylen)
{
	char so[4096], so_name[4096 + 8];
	int r;
	if (!a->dir) {
		snprintf(why, whylen, "this service runs no apps (gpuos boot --apps DIR)");
		return -EPERM;
	}
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    (size_t)snprintf(path, len, "%s/%s", a->dir, name) >= len) {
		snprintf(why, whylen, "name an app of the service's apps directory, not a path");
		return -EINVAL;
	}
	r = trusted_file(path, name, why, whylen);
	if (r)
		return r;
	/* A host-mode runtime runs the .so beside a cubin: code in this process. */
	if ((app_is_host_variant(path) || !on_gpu) && !a->allow_host) {
		snprintf(why, whylen, "%s would run as host code in the service's process (a .so, or a runtime in "
			 "host mode): the service runs that only with --allow-host-apps", name);
		return -EPERM;
	}
	if (!on_gpu && !app_is_host_variant(path)) {
		app_host_variant_of(path, so, sizeof(so));
		snprintf(so_name, sizeof(so_name), "%s (its host-mode variant)", strrchr(so, '/') + 1);
		return trusted_file(so, so_name, why, whylen);
	}
	return 0;
}

/* A run request's args=HEX,HEX,... into argv[*argc] (allocated; *argc of
 * them even on failure). -1 when they are malformed or too many. */
static int request_args(const char *line, char **argv, int *argc)
{
	size_t n;
	const char *p = field(line, "args", &n), *q;

	for (q = p; p && q < p + n && *argc < (int)GPUOS_APP_MAX_ARGS;) {
		size_t k = strcspn(q, ", ");
		argv[*argc] = k ? hex_decode(q, k) : strdup("");
		if (!argv[*argc])
			break;
		(*argc)++;
		q += k;
		if (*q != ',')
			break;
		q++;
	}
	return p && q != p + n ? -1 : 0;
}

/* The reply to a run that ran: "ok status=... out=HEX". */
static void reply_ok(FILE *out, const struct app_result *res)
{
	char *out_hex = hex_encode(res->out), *ehex = hex_encode(res->entry);

	if (!out_hex || !ehex)
		fprintf(out, "err out of memory\n");
	else
		fprintf(out, "ok status=%u gpu=%d entry=%s requests=%llu bytes=%llu errors=%llu commands=%llu out=%s\n",
			res->status, res->gpu, ehex, (unsigned long long)res->delta.requests,
			(unsigned long long)res->delta.bytes, (unsigned long long)res->delta.errors,
			(unsigned long long)res->delta.commands, out_hex);
	free(ehex);
	free(out_hex);
}

static int service_run_request(const struct service_apps *apps, struct gpuos_sys *s, char *heap, uint64_t heap_rt,
			       uint64_t heap_len, const char *line, FILE *out)
{
	char path[PATH_MAX];
	struct app_run o;
	struct app_result res;
	unsigned long long grid = 0, block = 0, sm = 0;
	char *image = NULL, *entry = NULL, *argv[GPUOS_APP_MAX_ARGS], err[512];
	const char *p;
	size_t n;
	int argc = 0, r, i;

	memset(&o, 0, sizeof(o));
	p = field(line, "app", &n);
	if (p)
		image = hex_decode(p, n);
	p = field(line, "entry", &n);
	if (p && !(n == 1 && *p == '-'))
		entry = hex_decode(p, n);
	if (!image || (p && !(n == 1 && *p == '-') && !entry) || field_num(line, "grid", &grid) ||
	    field_num(line, "block", &block) || field_num(line, "arch", &sm) || grid > UINT_MAX || block > UINT_MAX ||
	    sm > 999) {
		fprintf(out, "err malformed run request\n");
		free(image);
		free(entry);
		return -EINVAL;
	}
	r = resolve_app(apps, gpuos_sys_info(s)->gpu != 0, image, path, sizeof(path), err, sizeof(err));
	if (r) {
		fprintf(out, "err %s\n", err);
		free(image);
		free(entry);
		return r;
	}
	if (request_args(line, argv, &argc)) {
		fprintf(out, "err malformed or too many arguments (at most %u)\n", GPUOS_APP_MAX_ARGS);
		r = -EINVAL;
		goto out;
	}
	o.image = path;
	o.entry = entry;
	o.grid = (unsigned)grid;
	o.block = (unsigned)block;
	o.argc = argc;
	o.argv = argv;
	o.sm = (int)sm;
	r = app_run(s, heap, heap_rt, heap_len, &o, &res, err, sizeof(err));
	if (r) {
		fprintf(out, "err %s\n", err);
		goto out;
	}
	reply_ok(out, &res);
	app_result_free(&res);
out:
	for (i = 0; i < argc; i++)
		free(argv[i]);
	free(image);
	free(entry);
	return r;
}

/* The service's handler of run requests (struct gpuos_service_opts): the
 * reply line, built in memory. */
char *service_run_app(void *ctx, struct gpuos_sys *s, const struct gpuos_peer *who, uint32_t share,
		      const char *line)
{
	char *reply = NULL, *heap;
	size_t n = 0;
	uint64_t heap_rt, heap_len;
	FILE *f = open_memstream(&reply, &n);
	(void)who;
	if (!f)
		return NULL;
	heap = gpuos_sys_share(s, share, &heap_rt, &heap_len);
	if (!heap)
		fprintf(f, "err no client share %u\n", share);
	else
		service_run_request((const struct service_apps *)ctx, s, heap, heap_rt, heap_len, line, f);
	if (fclose(f)) {
		free(reply);
		return NULL;
	}
	return reply;
}

/* ---- the command ---------------------------------------------------------------- */

/* The app's output on stdout (as it wrote it: a pipe gets just that);
 * the run's status and statistics on stderr. */
/* The app's progress, or the runtime's bytes while the app says nothing. */
static void run_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct cli_progress *bar = (struct cli_progress *)ctx;
	bar->total = total;
	cli_progress_update(bar, done);
}

static void print_result(const struct app_result *res, const char *where)
{
	size_t n = strlen(res->out);
	fputs(res->out, stdout);
	if (n && res->out[n - 1] != '\n')
		fputc('\n', stdout);
	fflush(stdout);
	fprintf(stderr, "exit status %u\n", res->status);
	fprintf(stderr, "runtime: %llu requests, %llu bytes, %llu errors, %llu commands, %llu zero copy (%s)\n",
		(unsigned long long)res->delta.requests, (unsigned long long)res->delta.bytes,
		(unsigned long long)res->delta.errors, (unsigned long long)res->delta.commands,
		(unsigned long long)res->delta.zero_copy, where);
}

static int exit_code(uint32_t status)
{
	return status > 255u ? 255 : (int)status;
}

/* The run request for the service: "run app=HEX entry=HEX|- grid= block=
 * arch= args=HEX,...\n" in line (RUN_REQ_MAX bytes). Its length, or 0 when
 * it does not fit. */
static size_t run_request_line(const struct app_run *o, char *line)
{
	size_t len;
	char *h = hex_encode(o->image);
	int i;

	len = (size_t)snprintf(line, RUN_REQ_MAX, "run app=%s", h ? h : "");
	free(h);
	h = o->entry ? hex_encode(o->entry) : NULL;
	len += (size_t)snprintf(line + len, len < RUN_REQ_MAX ? RUN_REQ_MAX - len : 0,
				" entry=%s grid=%u block=%u arch=%d args=", h ? h : "-", o->grid, o->block, o->sm);
	free(h);
	for (i = 0; i < o->argc && len < RUN_REQ_MAX; i++) {
		h = hex_encode(o->argv[i]);
		len += (size_t)snprintf(line + len, RUN_REQ_MAX - len, "%s%s", i ? "," : "", h ? h : "");
		free(h);
	}
	if (len + 2 >= RUN_REQ_MAX)
		return 0;
	line[len++] = '\n';
	line[len] = 0;
	return len;
}

/* Sends line to the service and reads its one-line reply into reply
 * (RUN_REPLY_MAX bytes, up to twice the report in hex), without its
 * newline. Its length, or -1 after one line on stderr. */
static ssize_t run_ask(struct cli *c, const char *line, size_t len, char *reply)
{
	char err[512];
	size_t n = 0;
	int fd = gpuos_service_connect(c->socket, err, sizeof(err));

	if (fd < 0) {
		cli_socket_hint(c, 1, err, sizeof(err));
		cli_err("run", "%s", err);
		return -1;
	}
	if (write(fd, line, len) != (ssize_t)len) {
		cli_err("run", "the service at %s closed the connection", c->socket);
		close(fd);
		return -1;
	}
	while (n + 1 < RUN_REPLY_MAX) {
		ssize_t r = read(fd, reply + n, RUN_REPLY_MAX - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(reply + n - (size_t)r, '\n', (size_t)r))
			break;
	}
	close(fd);
	reply[n] = 0;
	if (n && reply[n - 1] == '\n')
		reply[--n] = 0;
	return (ssize_t)n;
}

/* The service's "ok ..." reply into *res (its out allocated). -1 when
 * it is malformed. */
static int run_reply(const char *reply, struct app_result *res)
{
	unsigned long long v;
	const char *p;
	size_t n;

	memset(res, 0, sizeof(*res));
	if (field_num(reply, "status", &v))
		return -1;
	res->status = (uint32_t)v;
	if (field_num(reply, "gpu", &v))
		return -1;
	res->gpu = (int)v;
	if (field_num(reply, "requests", &v))
		return -1;
	res->delta.requests = v;
	if (field_num(reply, "bytes", &v))
		return -1;
	res->delta.bytes = v;
	if (field_num(reply, "errors", &v))
		return -1;
	res->delta.errors = v;
	if (field_num(reply, "commands", &v))
		return -1;
	res->delta.commands = v;
	p = field(reply, "out", &n);
	if (!p)
		return -1;
	res->out = n ? hex_decode(p, n) : strdup("");
	return res->out ? 0 : -1;
}

static int run_via_socket(struct cli *c, const struct app_run *o)
{
	char *line = NULL, *reply = NULL;
	struct app_result res;
	size_t len;
	ssize_t n;
	int rc = GPUOS_EXIT_FAIL;

	/* A name in the service's apps directory: never a path of ours. */
	if (strchr(o->image, '/')) {
		cli_err("run", "%s: %s, name an app of the service's apps directory (gpuos boot --apps DIR), not a path",
			o->image, c->socket_default ? "give --device DEV to run it here; through the service" : "with --socket");
		return GPUOS_EXIT_USAGE;
	}
	line = malloc(RUN_REQ_MAX);
	reply = malloc(RUN_REPLY_MAX);
	if (!line || !reply)
		goto out;
	len = run_request_line(o, line);
	if (!len) {
		cli_err("run", "the app's name and arguments are too long for the service (%u bytes)", RUN_REQ_MAX);
		goto out;
	}
	n = run_ask(c, line, len, reply);
	if (n < 0)
		goto out;
	if (strncmp(reply, "ok ", 3)) {
		cli_err("run", "%s", !strncmp(reply, "err ", 4) ? reply + 4 : n ? reply : "the service closed the connection");
		goto out;
	}
	if (run_reply(reply, &res)) {
		cli_err("run", "the service's reply is malformed");
		goto out;
	}
	{
		char where[PATH_MAX + 64];
		snprintf(where, sizeof(where), "service %s, %s", c->socket, res.gpu ? "on the GPU" : "host mode");
		print_result(&res, where);
	}
	cli_counters("run", c, NULL);
	rc = exit_code(res.status);
	app_result_free(&res);
out:
	free(line);
	free(reply);
	return rc;
}

/* Boots a runtime for the app's lifetime, runs it, prints its result
 * and shuts the runtime down. The exit code. */
static int run_here(struct cli *c, struct app_run *o)
{
	struct cli_progress bar;
	struct app_result res;
	struct gpuos_sys *s;
	char err[512], *heap;
	uint64_t heap_rt, heap_len;
	double cpu0, cpu1, wall0, wall1;
	int r, rc;

	/* A runtime for the app's lifetime. GPU clients post only into a
	 * mailbox in VRAM (docs/design.md, Known limits); the host-mode
	 * variant needs the runtime on CPU threads. */
	if (app_is_host_variant(o->image))
		c->boot.host_mode = 1;
	c->boot.mbox_vram = 1;
	if (!c->boot.dev_heap_bytes)
		c->boot.dev_heap_bytes = (uint64_t)DEFAULT_VRAM_MIB << 20;
	if (c->part >= 0)
		c->boot.part = (uint32_t)c->part;
	r = gpuos_boot(&c->boot, &s, err, sizeof(err));
	if (r) {
		cli_err("run", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	heap = (char *)gpuos_sys_heap(s, &heap_rt, &heap_len);
	cli_progress_begin_open(&bar);
	o->progress = run_progress;
	o->progress_ctx = &bar;
	cpu0 = cli_cpu_seconds_without_emu();
	wall0 = cli_now_s();
	r = app_run(s, heap, heap_rt, heap_len, o, &res, err, sizeof(err));
	wall1 = cli_now_s();
	cpu1 = cli_cpu_seconds_without_emu();
	cli_progress_end(&bar);
	if (r) {
		cli_err("run", "%s", err);
		rc = GPUOS_EXIT_FAIL;
	} else {
		char where[256];
		const struct gpuos_info *in = gpuos_sys_info(s);
		snprintf(where, sizeof(where), "%s, %s", c->boot.device, res.gpu ? in->gpu_name : "host mode");
		print_result(&res, where);
		/* What the service side cost the CPU: the benchmarks' "CPU seconds per GB". */
		if (cpu0 >= 0 && cpu1 >= 0)
			fprintf(stderr, "host CPU: %.3f s outside the emulator's threads, over %.3f s of running the app\n",
				cpu1 > cpu0 ? cpu1 - cpu0 : 0.0, wall1 - wall0); /* ticks and rusage: not exact */
		rc = exit_code(res.status);
		app_result_free(&res);
	}
	cli_counters("run", c, s);
	if (gpuos_shutdown(s, err, sizeof(err))) {
		cli_err("run", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	return rc;
}

int cmd_run(int argc, char **argv)
{
	struct cli c;
	struct app_run o;
	char err[512];
	int split = argc, i, rc;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			split = i;
			break;
		}
	}
	if (cli_parse(&c, "run", split, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc != 1) {
		cli_err("run", "give one app image: gpuos run [--device DEV | --socket PATH] APP.cubin [--entry NAME] "
			"[--grid G] [--block B] [-- ARGS...]");
		free(c.argv);
		return GPUOS_EXIT_USAGE;
	}
	memset(&o, 0, sizeof(o));
	o.image = c.argv[0];
	o.entry = c.entry;
	o.grid = c.grid;
	o.block = c.block;
	o.sm = c.sm;
	o.argc = split < argc ? argc - split - 1 : 0;
	o.argv = split < argc ? argv + split + 1 : NULL;
	if (!c.socket && !c.boot.device) {
		cli_err("run", "give --device DEV (emu:IMAGE, null, pci:...) or --socket PATH");
		free(c.argv);
		return GPUOS_EXIT_USAGE;
	}
	if (c.socket) {
		rc = run_via_socket(&c, &o);
		free(c.argv);
		return rc;
	}
	/* What can be checked without a runtime, before one is booted. */
	if (app_check(&o, err, sizeof(err))) {
		cli_err("run", "%s", err);
		free(c.argv);
		return GPUOS_EXIT_FAIL;
	}
	rc = run_here(&c, &o);
	free(c.argv);
	return rc;
}
