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
 */
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

/* The parts of the command line that concern the service. */
static int service_opts(struct cli *c, struct gpuos_service_opts *o, struct service_apps *apps)
{
	memset(o, 0, sizeof(*o));
	o->socket = c->socket;
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

static int boot_group(struct cli *c, struct gpuos_service_opts *o)
{
	const char *base = c->socket ? c->socket : GPUOS_DEFAULT_SOCKET;
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
	if (!rc && gpuos_boot_group(&c->boot, n, c->gpus, &grp, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	if (rc) {
		for (i = 0; i < n; i++)
			gpuos_service_close(gs[i].v);
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
	if (!c->boot.quiet)
		fprintf(stderr, "gpuos: stopped%s\n", stop_signal > 0 ? " (signal)" : "");
	return rc;
}

int cmd_boot(int argc, char **argv)
{
	struct cli c;
	struct gpuos_service_opts o;
	struct service_apps apps;
	struct gpuos_service *v;
	struct gpuos_sys *s;
	char err[512];
	int rc = 0;

	if (cli_parse(&c, "boot", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (!c.boot.device || c.argc) {
		cli_err("boot", c.argc ? "%s: boot takes no arguments" : "give --device DEV (emu:IMAGE[,k=v...], null[:SIZE], pci:DDDD:BB:DD.F)%s",
			c.argc ? c.argv[0] : "");
		return GPUOS_EXIT_USAGE;
	}
	if (service_opts(&c, &o, &apps))
		return GPUOS_EXIT_USAGE;
	if (c.ngpus) {
		uint32_t i, j, twice = 0;
		for (i = 0; i < c.ngpus; i++)
			for (j = i + 1; j < c.ngpus; j++)
				twice |= c.gpus[i] == c.gpus[j];
		/* an app's kernel waits on its runtime; another runtime of the same
		 * GPU parking both to load a module or renew a client's area would
		 * wait for that kernel for ever (docs/design.md, "a group") */
		if (twice && !c.boot.host_mode && (apps.dir || c.boot.gpu_clients)) {
			cli_err("boot", "--gpus names a GPU twice: not with %s (runtimes of one GPU park together, and an "
				"app or a GPU client of one would wait for the other for ever)",
				apps.dir ? "--apps" : "--gpu-clients");
			return GPUOS_EXIT_USAGE;
		}
		catch_signals();
		if (c.boot.mbox_vram && !c.boot.dev_heap_bytes)
			c.boot.dev_heap_bytes = 256ull << 20;
		c.boot.heap_shares = GPUOS_SERVICE_SHARES;
		return boot_group(&c, &o);
	}
	/* The socket first: a second service on the path is refused before
	 * it touches the device. */
	if (gpuos_service_listen(&o, &v, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	catch_signals();
	if (c.boot.mbox_vram && !c.boot.dev_heap_bytes)
		c.boot.dev_heap_bytes = 256ull << 20;
	c.boot.heap_shares = GPUOS_SERVICE_SHARES; /* one per client (boot/service.c) */
	if (gpuos_boot(&c.boot, &s, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		gpuos_service_close(v);
		return GPUOS_EXIT_FAIL;
	}
	printf("ready socket=%s\n", c.socket ? c.socket : GPUOS_DEFAULT_SOCKET);
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
	if (!c.boot.quiet)
		fprintf(stderr, "gpuos: stopped%s\n", stop_signal ? " (signal)" : "");
	return rc;
}

int cmd_stop(int argc, char **argv)
{
	struct cli c;
	char err[512], reply[128] = "";
	int fd;

	if (cli_parse(&c, "stop", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("stop", "%s: stop takes no arguments", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	fd = gpuos_service_connect(c.socket ? c.socket : GPUOS_DEFAULT_SOCKET, err, sizeof(err));
	if (fd < 0) {
		cli_err("stop", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if (gpuos_service_call(fd, "stop\n", reply, sizeof(reply), GPUOS_CLIENT_TIMEOUT_MS) || strcmp(reply, "ok")) {
		cli_err("stop", "the service did not accept stop: %s", reply[0] ? reply : "no answer");
		close(fd);
		return GPUOS_EXIT_FAIL;
	}
	/* Wait until it has closed the socket: the service is gone. */
	while (read(fd, reply, sizeof(reply)) > 0)
		;
	close(fd);
	return 0;
}
