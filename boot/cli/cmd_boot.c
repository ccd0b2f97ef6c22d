/* SPDX-License-Identifier: MIT */
/*
 * gpuos boot: the runtime as a service (boot/service.c serves the control
 * socket; docs/security.md says who may do what), and gpuos stop.
 *
 * --mbox-vram puts the mailbox in VRAM (with --vram-mib of VRAM client
 * memory, default 256): GPU apps can post to it, host clients cannot
 * (GPU atomics on pinned host memory do not reach over PCIe, and the host
 * cannot take part in device-scope atomics in VRAM), so attach is refused.
 * SIGINT and SIGTERM stop it the same way as `gpuos stop`.
 *
 * --gpus LIST boots a group (gpuos_boot_group): a runtime per GPU listed,
 * all on the device's controllers, each served on a socket of its own
 * (the first at --socket's path, runtime i at PATH.i), each from a thread
 * of its own. A stop through any of them stops them all.
 *
 * Before its CUDA context exists, boot settles MPS (boot/mps.c): it joins
 * a daemon, or starts one, unless --no-mps or host mode, and says which in
 * one line ("gpuos: MPS: ..."). --config FILE reads boot's options from a
 * file first (the systemd unit's /etc/gpuos/gpuos.conf; docs/service.md).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static volatile int stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

/* --socket-mode: octal permission bits, as chmod takes them. */
static int socket_mode(const char *text, uint32_t *mode)
{
	char *end;
	unsigned long v;
	if (!text) {
		*mode = 0;
		return 0;
	}
	v = strtoul(text, &end, 8);
	if (!*text || *end || text[0] == '-' || v > 0777u) {
		cli_err("boot", "--socket-mode %s: give octal permission bits, such as 0660", text);
		return -1;
	}
	*mode = (uint32_t)v;
	return 0;
}

/* --apps DIR: a directory that only root (or this service's uid) can write. */
static int apps_dir_ok(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		cli_err("boot", "--apps %s: not a directory", dir);
		return 0;
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		cli_err("boot", "--apps %s: must belong to root (or to this service's user) and be writable by no one "
			"else: whoever can write it can run code in the service", dir);
		return 0;
	}
	return 1;
}

/* Is name one of boot's long options (options.c's table)? */
static int option_of_boot(const char *name)
{
	const char *p = cli_command("boot")->options;
	size_t n = strlen(name);
	while ((p = strstr(p, name))) {
		if ((p == cli_command("boot")->options || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return 1;
		p += n;
	}
	return 0;
}

/* The --config file, open, if it belongs to root or to us and no one else
 * can write it: it decides what the service serves and to whom. NULL
 * after one line on stderr. */
static FILE *config_open(const char *file)
{
	struct stat st;
	FILE *f = fopen(file, "re");

	if (!f || fstat(fileno(f), &st)) {
		cli_err("boot", "--config %s: %s", file, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		cli_err("boot", "--config %s: must be a file of root's (or of this service's user) that no one else can "
			"write: it decides what the service serves and to whom", file);
		fclose(f);
		return NULL;
	}
	return f;
}

/* Line ln of the --config file as an option of boot: *arg "--NAME" or
 * "--NAME=VALUE" (allocated), or NULL for a blank line, a comment or
 * NAME = no. 0, or -1 after one line on stderr. */
static int config_line(const char *file, int ln, char *line, char **arg)
{
	char *k = line, *v, *e;

	*arg = NULL;
	while (isspace((unsigned char)*k))
		k++;
	if (!*k || *k == '#')
		return 0;
	e = k + strlen(k);
	while (e > k && isspace((unsigned char)e[-1]))
		*--e = 0;
	v = strchr(k, '=');
	if (v) {
		for (e = v; e > k && isspace((unsigned char)e[-1]); e--)
			;
		*e = 0;
		for (v++; isspace((unsigned char)*v); v++)
			;
	}
	if (!*k || strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(k) || !strcmp(k, "config") ||
	    !option_of_boot(k)) {
		cli_err("boot", "--config %s, line %d: '%s' is not an option of boot (NAME = VALUE, NAME as in "
			"gpuos boot --help without its dashes)", file, ln, k);
		return -1;
	}
	if (v && (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off")))
		return 0;
	if (!v || !*v || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on")) {
		if (asprintf(arg, "--%s", k) < 0)
			*arg = NULL;
	} else if (asprintf(arg, "--%s=%s", k, v) < 0) {
		*arg = NULL;
	}
	if (!*arg) {
		cli_err("boot", "out of memory");
		return -1;
	}
	return 0;
}

/* --config FILE: boot's options, one a line, "NAME = VALUE" (NAME a long
 * option without its dashes; a flag takes yes, or no to leave it out, or
 * no value), a line that begins with # a comment. They come before the
 * command line's in *nargv, so that those win. The file must belong to
 * root or to us and be writable by no one else: it decides what the
 * service serves and to whom. 0, or -1 after one line on stderr. */
static int config_argv(const char *file, int argc, char **argv, int *nargc, char ***nargv)
{
	char line[4096], **av = NULL;
	int n = 0, cap = 0, ln = 0, i;
	FILE *f = config_open(file);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *arg;
		size_t len = strlen(line);
		ln++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			cli_err("boot", "--config %s, line %d: longer than %zu bytes", file, ln, sizeof(line) - 2);
			goto fail;
		}
		if (config_line(file, ln, line, &arg))
			goto fail;
		if (!arg)
			continue;
		if (n + 1 >= cap) {
			char **a = realloc(av, (size_t)(cap = cap * 2 + 16) * sizeof(*av));
			if (!a) {
				free(arg);
				cli_err("boot", "out of memory");
				goto fail;
			}
			av = a;
		}
		av[n++] = arg;
	}
	fclose(f);
	f = NULL;
	{
		char **a = realloc(av, (size_t)(n + argc + 1) * sizeof(*av));
		if (!a) {
			cli_err("boot", "out of memory");
			goto fail;
		}
		av = a;
	}
	for (i = 0; i < argc; i++)
		av[n + i] = argv[i];
	av[n + argc] = NULL;
	*nargc = n + argc;
	*nargv = av; /* held for the command's lifetime: options point into it */
	return 0;
fail:
	if (f)
		fclose(f);
	for (i = 0; i < n; i++)
		free(av[i]);
	free(av);
	return -1;
}

/* The parts of the command line that concern the service. */
static int service_opts(struct cli *c, struct gpuos_service_opts *o, struct service_apps *apps)
{
	memset(o, 0, sizeof(*o));
	o->socket = c->socket;
	o->device = c->boot.device;
	o->group = c->group;
	o->client_timeout_ms = c->client_timeout_ms;
	o->no_perms = c->no_perms;
	if (socket_mode(c->socket_mode, &o->mode))
		return -1;
	if (c->allow_host_apps && !c->apps_dir) {
		cli_err("boot", "--allow-host-apps needs --apps DIR");
		return -1;
	}
	apps->dir = c->apps_dir;
	apps->allow_host = c->allow_host_apps;
	if (apps->dir && !apps_dir_ok(apps->dir))
		return -1;
	o->run = service_run_app;
	o->run_ctx = apps;
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void say_serving(const struct cli *c, struct gpuos_sys *s)
{
	const struct gpuos_info *in = gpuos_sys_info(s);
	if (c->boot.quiet)
		return;
	fprintf(stderr, "gpuos: serving %s (%s), %u warps x %u queues of %u, runtime on %s%s\n", c->boot.device,
		in->model, in->warps, in->queues_used / in->warps, in->depth, in->gpu ? in->gpu_name : "CPU threads (host mode)",
		gpuos_sys_mbox_device(s) ? ", mailbox in VRAM (GPU apps only)" : "");
	/* Kernels of other processes run beside the runtime only under MPS. */
	if (in->gpu)
		fprintf(stderr, in->mps ? "gpuos: MPS runs (%s): kernels of other processes can run beside the runtime\n"
					: "gpuos: MPS does not run (no daemon at %s): kernels of other processes would never run "
					  "beside the runtime (scripts/mps-start.sh, then boot again)\n",
			in->mps_dir);
}

struct group_service {
	struct gpuos_service *v;
	struct gpuos_sys *s;
	char path[4096];
	pthread_t thread;
	int started, rc;
	char err[512];
};

/* One runtime's service; when it ends (a stop through it, or its runtime
 * failed) the others are told to end too. */
static void *serve_one(void *arg)
{
	struct group_service *g = (struct group_service *)arg;
	int zero = 0;
	g->rc = gpuos_service_serve(g->v, g->s, &stop_signal, g->err, sizeof(g->err));
	/* -1: not a signal; relaxed: the services poll it and need nothing
	 * else from this thread */
	__atomic_compare_exchange_n((int *)&stop_signal, &zero, -1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return NULL;
}

/* The MPS line, on a GPU before the runtime's CUDA context is made. */
static void settle_mps(const struct cli *c, struct gpuos_mps *m)
{
	char text[512];
	gpuos_mps_setup(m, c->boot.host_mode, c->no_mps);
	fprintf(stderr, "gpuos: MPS: %s\n", gpuos_mps_text(m, text, sizeof(text)));
}

/* After the runtime stopped: a daemon boot started goes with it. */
static void end_mps(const struct gpuos_mps *m)
{
	char err[256];
	if (m->state != GPUOS_MPS_STARTED)
		return;
	if (gpuos_mps_stop(m, 500, err, sizeof(err)))
		fprintf(stderr, "gpuos: MPS: warning: the daemon started at %s may still run: %s\n", m->dir, err);
	else
		fprintf(stderr, "gpuos: MPS: asked the daemon started at %s to quit (it ends after this process)\n",
			m->dir);
}

static int boot_group(struct cli *c, struct gpuos_service_opts *o, struct gpuos_mps *mps)
{
	char def[108];
	const char *base = c->socket ? c->socket : gpuos_service_default_socket(1, def, sizeof(def)) > 0 ? def : "";
	struct group_service gs[GPUOS_GROUP_MAX];
	struct gpuos_group *grp;
	char err[512];
	uint32_t i, n = c->ngpus;
	int rc = 0;

	memset(gs, 0, sizeof(gs));
	/* every socket first, as for one runtime */
	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(gs[i].path, sizeof(gs[i].path), i ? "%s.%u" : "%s", base, i) >= sizeof(gs[i].path)) {
			cli_err("boot", "--socket %s: too long", base);
			rc = GPUOS_EXIT_USAGE;
			break;
		}
		o->socket = gs[i].path;
		if (gpuos_service_listen(o, &gs[i].v, err, sizeof(err))) {
			cli_err("boot", "%s", err);
			rc = GPUOS_EXIT_FAIL;
			break;
		}
	}
	if (!rc)
		settle_mps(c, mps);
	if (!rc && gpuos_boot_group(&c->boot, n, c->gpus, &grp, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	if (rc) {
		for (i = 0; i < n; i++)
			gpuos_service_close(gs[i].v);
		end_mps(mps);
		return rc;
	}
	printf("ready socket=%s sockets=", base);
	for (i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", gs[i].path);
	printf("\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		gs[i].s = gpuos_group_sys(grp, i);
		if (!c->boot.quiet)
			fprintf(stderr, "gpuos: runtime %u at %s:\n", i, gs[i].path);
		say_serving(c, gs[i].s);
	}
	for (i = 1; i < n; i++)
		gs[i].started = pthread_create(&gs[i].thread, NULL, serve_one, &gs[i]) == 0;
	for (i = 1; i < n; i++)
		if (!gs[i].started) { /* serve_one never ran: nothing serves runtime i */
			cli_err("boot", "runtime %u: cannot start its service thread", i);
			stop_signal = -1;
			rc = GPUOS_EXIT_FAIL;
		}
	serve_one(&gs[0]);
	for (i = 1; i < n; i++)
		if (gs[i].started)
			pthread_join(gs[i].thread, NULL);
	for (i = 0; i < n; i++) {
		if (gs[i].rc) {
			cli_err("boot", "runtime %u: %s", i, gs[i].err);
			rc = GPUOS_EXIT_FAIL;
		}
		gpuos_service_close(gs[i].v); /* the sockets go first: no client reaches a stopping runtime */
	}
	if (gpuos_group_shutdown(grp, err, sizeof(err))) {
		cli_err("boot", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	end_mps(mps);
	if (!c->boot.quiet)
		fprintf(stderr, "gpuos: stopped%s\n", stop_signal > 0 ? " (signal)" : "");
	return rc;
}

/* --config FILE: its options, then the command line's again, into *c. */
static int take_config(struct cli *c, int argc, char **argv)
{
	const char *file = c->config;
	char **nargv;
	int nargc;

	free(c->argv);
	if (config_argv(file, argc, argv, &nargc, &nargv))
		return -1;
	if (cli_parse(c, "boot", nargc, nargv)) {
		cli_err("boot", "(the options of --config %s, then of the command line)", file);
		return -1;
	}
	return 0;
}

/* Does --gpus name a GPU twice where that would hang? An app's kernel
 * waits on its runtime; another runtime of the same GPU parking both to
 * load a module or renew a client's area would wait for that kernel for
 * ever (docs/design.md, "a group"). 1 after one line on stderr. */
static int gpu_twice_refused(const struct cli *c, const struct service_apps *apps)
{
	uint32_t i, j, twice = 0;

	for (i = 0; i < c->ngpus; i++)
		for (j = i + 1; j < c->ngpus; j++)
			twice |= c->gpus[i] == c->gpus[j];
	if (twice && !c->boot.host_mode && (apps->dir || c->boot.gpu_clients)) {
		cli_err("boot", "--gpus names a GPU twice: not with %s (runtimes of one GPU park together, and an "
			"app or a GPU client of one would wait for the other for ever)",
			apps->dir ? "--apps" : "--gpu-clients");
		return 1;
	}
	return 0;
}

int cmd_boot(int argc, char **argv)
{
	struct cli c;
	struct gpuos_service_opts o;
	struct service_apps apps;
	struct gpuos_service *v;
	struct gpuos_sys *s;
	struct gpuos_mps mps;
	char err[512];
	int rc = 0;

	if (cli_parse(&c, "boot", argc, argv) || (c.config && take_config(&c, argc, argv)))
		return GPUOS_EXIT_USAGE;
	if (!c.boot.device || c.argc) {
		cli_err("boot", c.argc ? "%s: boot takes no arguments" : "give --device DEV (emu:IMAGE[,k=v...], null[:SIZE], pci:DDDD:BB:DD.F)%s",
			c.argc ? c.argv[0] : c.config ? ", or device = DEV in the --config file" : "");
		return GPUOS_EXIT_USAGE;
	}
	if (service_opts(&c, &o, &apps))
		return GPUOS_EXIT_USAGE;
	memset(&mps, 0, sizeof(mps)); /* GPUOS_MPS_HOST until settled: nothing to end */
	o.mps = &mps;
	if (c.ngpus) {
		if (gpu_twice_refused(&c, &apps))
			return GPUOS_EXIT_USAGE;
		catch_signals();
		if (c.boot.mbox_vram && !c.boot.dev_heap_bytes)
			c.boot.dev_heap_bytes = 256ull << 20;
		c.boot.heap_shares = GPUOS_SERVICE_SHARES;
		return boot_group(&c, &o, &mps);
	}
	/* The socket first: a second service on the path is refused before
	 * it touches the device. */
	if (gpuos_service_listen(&o, &v, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	catch_signals();
	settle_mps(&c, &mps);
	if (c.boot.mbox_vram && !c.boot.dev_heap_bytes)
		c.boot.dev_heap_bytes = 256ull << 20;
	c.boot.heap_shares = GPUOS_SERVICE_SHARES; /* one per client (boot/service.c) */
	if (gpuos_boot(&c.boot, &s, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		gpuos_service_close(v);
		end_mps(&mps);
		return GPUOS_EXIT_FAIL;
	}
	printf("ready socket=%s\n", gpuos_service_path(v));
	fflush(stdout);
	say_serving(&c, s);
	if (gpuos_service_serve(v, s, &stop_signal, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	gpuos_service_close(v); /* the socket goes first: no client reaches a stopping runtime */
	if (gpuos_shutdown(s, err, sizeof(err))) {
		cli_err("boot", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	end_mps(&mps);
	if (!c.boot.quiet)
		fprintf(stderr, "gpuos: stopped%s\n", stop_signal ? " (signal)" : "");
	return rc;
}

#define STOP_MPS_WAIT_MS 30000u

int cmd_stop(int argc, char **argv)
{
	struct cli c;
	char err[512], reply[4200] = "";
	const char *mps;
	int fd;

	if (cli_parse(&c, "stop", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("stop", "%s: stop takes no arguments", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	fd = gpuos_service_connect(c.socket, err, sizeof(err));
	if (fd < 0) {
		cli_socket_hint(&c, 0, err, sizeof(err));
		cli_err("stop", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if (gpuos_service_call(fd, "stop\n", reply, sizeof(reply), GPUOS_CLIENT_TIMEOUT_MS) ||
	    (strcmp(reply, "ok") && strncmp(reply, "ok mps-quits=", 13))) {
		cli_err("stop", "the service did not accept stop: %s", reply[0] ? reply : "no answer");
		close(fd);
		return GPUOS_EXIT_FAIL;
	}
	mps = !strncmp(reply, "ok mps-quits=", 13) ? reply + 13 : NULL;
	/* Wait until it has closed the socket: the service is gone. */
	{
		char buf[128];
		while (read(fd, buf, sizeof(buf)) > 0)
			;
	}
	close(fd);
	/* The MPS daemon the service started ends after it; until then no CUDA
	 * program gets the GPU. When stop returns, one does. */
	if (mps && gpuos_mps_wait_gone(mps, STOP_MPS_WAIT_MS))
		fprintf(stderr, "gpuos stop: warning: the MPS daemon at %s still runs %u s after the service stopped; "
			"CUDA programs find no GPU until it ends\n", mps, STOP_MPS_WAIT_MS / 1000u);
	return 0;
}
