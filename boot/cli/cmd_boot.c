/* SPDX-License-Identifier: MIT */
/*
 * gpuos boot: the runtime as a service, and gpuos stop.
 *
 * The control socket speaks one line per request:
 *   attach  -> "ok shm=NAME heap_off=N heap_len=N": the client maps the
 *              shared segment (mailbox + heap) and owns one share of the
 *              heap until it closes the connection
 *   stats   -> one JSON line of runtime statistics
 *   run ... -> load an app, launch it, wait, unload it, reply with its status,
 *              report and the statistics of the run (gpuos run --socket; the
 *              protocol is in boot/cli/cmd_run.c). The service serves nothing
 *              else on its socket while an app runs.
 *   stop    -> "ok", then a graceful stop (drain, delete queues, CC.SHN)
 *
 * --mbox-vram puts the mailbox in VRAM (with --vram-mib of VRAM client
 * memory, default 256): GPU apps can post to it, host clients cannot
 * (GPU atomics on pinned host memory do not reach over PCIe, and the host
 * cannot take part in device-scope atomics in VRAM), so attach is refused.
 * SIGINT and SIGTERM stop it the same way.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>


#include "cli.h"


int service_run_request(struct gpuos_sys *s, char *heap, uint64_t heap_rt, uint64_t heap_len, const char *line,
			int fd);

int service_connect(const char *path, char *err, size_t errlen);
int service_call(int fd, const char *line, char *reply, size_t len);

#define MAX_CONN 64
#define HEAP_SHARES 8

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

struct conn {
	int fd;
	int share;     /* heap share held, -1 none */
	char buf[8192]; /* one request line: a run request carries its image path and arguments */
	size_t n;
};

static void stats_json(struct gpuos_sys *s, char *out, size_t len)
{
	struct gpuos_stats st;
	char ctrl[256];
	gpuos_sys_stats(s, &st);
	gpuos_sys_describe_ctrl(s, ctrl, sizeof(ctrl));
	snprintf(out, len,
		 "{\"requests\": %llu, \"bytes\": %llu, \"errors\": %llu, \"commands\": %llu, \"timeouts\": %llu, "
		 "\"doorbells\": %llu, \"polls\": %llu, \"zero_copy\": %llu, \"strays\": %llu, "
		 "\"aborts\": %llu, \"resets\": %llu, \"retries\": %llu, \"state\": %u}",
		 (unsigned long long)st.requests, (unsigned long long)st.bytes, (unsigned long long)st.errors,
		 (unsigned long long)st.commands, (unsigned long long)st.timeouts, (unsigned long long)st.doorbells,
		 (unsigned long long)st.polls, (unsigned long long)st.zero_copy, (unsigned long long)st.strays,
		 (unsigned long long)st.aborts, (unsigned long long)st.resets, (unsigned long long)st.retries, st.state);
}

int cmd_boot(int argc, char **argv)
{
	struct cli c;
	struct gpuos_sys *s;
	static struct conn conns[MAX_CONN];
	int share_used[HEAP_SHARES] = { 0 };
	struct sockaddr_un a;
	struct sigaction sa;
	const char *path;
	char err[512];
	uint64_t heap_rt, heap_len, share_len;
	char *heap;
	int lfd, i, stopping = 0, rc = 0;

	if (cli_parse(&c, "boot", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (!c.boot.device || c.argc) {
		cli_err("boot", c.argc ? "%s: boot takes no arguments" : "give --device DEV (emu:IMAGE[,k=v...], null[:SIZE], pci:DDDD:BB:DD.F)%s",
			c.argc ? c.argv[0] : "");
		return GPUOS_EXIT_USAGE;
	}
	path = c.socket ? c.socket : GPUOS_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(a.sun_path)) {
		cli_err("boot", "socket path too long: %s", path);
		return GPUOS_EXIT_USAGE;
	}
	/* A live service on the path stays; a stale socket file goes. */
	{
		int fd = service_connect(path, err, sizeof(err));
		if (fd >= 0) {
			close(fd);
			cli_err("boot", "a gpuos service already runs at %s (gpuos stop --socket %s)", path, path);
			return GPUOS_EXIT_FAIL;
		}
		unlink(path);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (c.boot.mbox_vram && !c.boot.dev_heap_bytes)
		c.boot.dev_heap_bytes = 256ull << 20;
	c.boot.shared_shm = 1;   /* clients in other processes map it by name */
	if (gpuos_boot(&c.boot, &s, err, sizeof(err))) {
		cli_err("boot", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	heap = (char *)gpuos_sys_heap(s, &heap_rt, &heap_len);
	share_len = (heap_len / HEAP_SHARES) & ~0xfffull;

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	strcpy(a.sun_path, path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16)) {
		cli_err("boot", "control socket %s: %s", path, strerror(errno));
		gpuos_shutdown(s, err, sizeof(err));
		return GPUOS_EXIT_FAIL;
	}
	for (i = 0; i < MAX_CONN; i++)
		conns[i].fd = -1;
	printf("ready socket=%s\n", path);
	fflush(stdout);
	if (!c.boot.quiet) {
		const struct gpuos_info *in = gpuos_sys_info(s);
		fprintf(stderr, "gpuos: serving %s (%s), %u warps x %u queues of %u, runtime on %s%s\n",
			c.boot.device, in->model, in->warps, in->queues_used / in->warps, in->depth,
			in->gpu ? in->gpu_name : "CPU threads (host mode)",
			gpuos_sys_mbox_device(s) ? ", mailbox in VRAM (GPU apps only)" : "");
	}

	while (!stopping && !stop_signal) {
		struct pollfd pf[MAX_CONN + 1];
		int map[MAX_CONN + 1], n = 0;
		pf[n].fd = lfd;
		pf[n].events = POLLIN;
		map[n++] = -1;
		for (i = 0; i < MAX_CONN; i++) {
			if (conns[i].fd < 0)
				continue;
			pf[n].fd = conns[i].fd;
			pf[n].events = POLLIN;
			map[n++] = i;
		}
		if (poll(pf, (nfds_t)n, 500) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (gpuos_sys_check(s, err, sizeof(err))) {
			cli_err("boot", "%s", err);
			rc = GPUOS_EXIT_FAIL;
			break;
		}
		for (i = 0; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (map[i] < 0) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				int k;
				if (fd < 0)
					continue;
				for (k = 0; k < MAX_CONN && conns[k].fd >= 0; k++)
					;
				if (k == MAX_CONN) {
					dprintf(fd, "err too many connections\n");
					close(fd);
					continue;
				}
				conns[k].fd = fd;
				conns[k].share = -1;
				conns[k].n = 0;
				continue;
			}
			struct conn *cn = &conns[map[i]];
			ssize_t got = read(cn->fd, cn->buf + cn->n, sizeof(cn->buf) - 1 - cn->n);
			if (got <= 0) {
				if (cn->share >= 0)
					share_used[cn->share] = 0;
				close(cn->fd);
				cn->fd = -1;
				continue;
			}
			cn->n += (size_t)got;
			cn->buf[cn->n] = 0;
			char *nl;
			while ((nl = strchr(cn->buf, '\n'))) {
				*nl = 0;
				if (!strcmp(cn->buf, "attach")) {
					int k;
					for (k = 0; k < HEAP_SHARES && share_used[k]; k++)
						;
					if (gpuos_sys_mbox_device(s))
						dprintf(cn->fd, "err this service's mailbox is in VRAM (gpuos boot --mbox-vram): it serves "
							"GPU apps (gpuos run --socket), not host clients\n");
					else if (cn->share >= 0)
						dprintf(cn->fd, "err already attached\n");
					else if (k == HEAP_SHARES)
						dprintf(cn->fd, "err all %d heap shares in use\n", HEAP_SHARES);
					else {
						const struct gpuos_shm_hdr *h = (const struct gpuos_shm_hdr *)((char *)gpuos_sys_mbox(s) - GPUOS_SHM_MBOX_OFF);
						share_used[k] = 1;
						cn->share = k;
						dprintf(cn->fd, "ok shm=%s heap_off=%llu heap_len=%llu\n", gpuos_sys_shm_name(s),
							(unsigned long long)(h->heap_off + (uint64_t)k * share_len),
							(unsigned long long)share_len);
					}
				} else if (!strcmp(cn->buf, "stats")) {
					char js[1024];
					stats_json(s, js, sizeof(js));
					dprintf(cn->fd, "%s\n", js);
				} else if (!strncmp(cn->buf, "run ", 4)) {
					/* The app's memory: a heap share of its own for the run. */
					int k;
					for (k = 0; k < HEAP_SHARES && share_used[k]; k++)
						;
					if (k == HEAP_SHARES) {
						dprintf(cn->fd, "err all %d heap shares in use\n", HEAP_SHARES);
					} else {
						share_used[k] = 1;
						service_run_request(s, heap + (uint64_t)k * share_len, heap_rt + (uint64_t)k * share_len,
								    share_len, cn->buf, cn->fd);
						share_used[k] = 0;
					}
				} else if (!strcmp(cn->buf, "stop")) {
					dprintf(cn->fd, "ok\n");
					stopping = 1;
				} else {
					dprintf(cn->fd, "err unknown request\n");
				}
				memmove(cn->buf, nl + 1, cn->n - (size_t)(nl + 1 - cn->buf) + 1);
				cn->n -= (size_t)(nl + 1 - cn->buf);
			}
			if (cn->n >= sizeof(cn->buf) - 1) {
				close(cn->fd); /* a line too long: not a client of ours */
				if (cn->share >= 0)
					share_used[cn->share] = 0;
				cn->fd = -1;
			}
		}
	}
	close(lfd);
	unlink(path);
	if (gpuos_shutdown(s, err, sizeof(err))) {
		cli_err("boot", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	for (i = 0; i < MAX_CONN; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	if (!c.boot.quiet)
		fprintf(stderr, "gpuos: stopped%s\n", stop_signal ? " (signal)" : "");
	return rc;
}

int cmd_stop(int argc, char **argv)
{
	struct cli c;
	char err[512], reply[128];
	int fd;

	if (cli_parse(&c, "stop", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("stop", "%s: stop takes no arguments", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	fd = service_connect(c.socket ? c.socket : GPUOS_DEFAULT_SOCKET, err, sizeof(err));
	if (fd < 0) {
		cli_err("stop", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if (service_call(fd, "stop\n", reply, sizeof(reply)) || strcmp(reply, "ok")) {
		cli_err("stop", "the service did not accept stop: %s", reply);
		close(fd);
		return GPUOS_EXIT_FAIL;
	}
	/* Wait until it has closed the socket: the service is gone. */
	while (read(fd, reply, sizeof(reply)) > 0)
		;
	close(fd);
	return 0;
}
