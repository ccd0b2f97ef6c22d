/* SPDX-License-Identifier: MIT */
/*
 * The service (gpuos boot): one runtime behind a control socket, shared by
 * the clients it admits, and the client's side of attaching to it. What a
 * client can and cannot do, and how each promise is tested, is in
 * docs/security.md.
 *
 * The control socket speaks one line per request:
 *   attach  -> "ok heap_off=N heap_len=N shm_len=N share=K rt=N", with the
 *              descriptor of the client's own area (SCM_RIGHTS): its mailbox
 *              at 0, its share at heap_off, shm_len bytes in all, at runtime
 *              address rt; the client maps that alone and owns share K
 *              until its connection closes
 *   attach gpu -> the same with " mem=vram" (or " mem=host" in host mode,
 *              where host memory stands in for VRAM): an area for a GPU
 *              client, whose kernels post to its mailbox at device scope;
 *              the descriptor is one cuMemImportFromShareableHandle takes.
 *              Only a service that has such areas (gpuos boot --gpu-clients)
 *              and, on a GPU, runs under MPS gives them out
 *   register host off=N len=N, with a memfd (SCM_RIGHTS) -> "ok rt=N":
 *              memory of the attached client's own, sealed against
 *              shrinking, as a destination of its requests alone
 *              (gpuos_sys_client_register); rt is where they name it
 *   register vram off=N len=N ipc=HEX -> "ok rt=N": the same for VRAM the
 *              client exported (cudaIpcGetMemHandle, 128 hex digits)
 *   unregister rt=N -> "ok": gives it back; all of a client's go when it
 *              leaves, with its area
 *   stats   -> one JSON line of runtime statistics
 *   status  -> "ok status/1 KEY=VALUE ...": the service, its runtime, MPS,
 *              the clients attached now and the counters, for `gpuos status`
 *              (boot/cli/cmd_status.c; status_line says what each key is)
 *   run ... -> an app, by the handler the caller gave (boot/cli/cmd_run.c)
 *   stop    -> "ok", then a graceful stop (root and the service's uid only)
 *
 * The loop never blocks on a client: sockets are non-blocking, replies wait
 * in a buffer per connection, and a client whose line does not arrive
 * whole within client_timeout_ms of its first byte, or that leaves a reply
 * unread or idles without a share that long, is disconnected. A user other
 * than root and the service's own holds at most SVC_MAX_CONN_PER_UID
 * connections and half the shares, and all of them together leave
 * SVC_CONN_RESERVE connections and a quarter of the shares to those two. A
 * `run` runs its app in a thread of its own; apps take turns (sys_lock:
 * loading one parks the runtime), and the loop renews the areas of leaving
 * clients only between them, all at once and paced (renew_due).
 *
 * A share comes back only when nothing can reach it any more: its handles
 * are released (the RELEASE request), requests still in flight into it
 * have finished, slots the client left behind are freed, and its area has
 * fresh zero pages for the next client.
 *
 * The client's side (attach) checks every number of the reply, and a thread
 * watches the connection until detach, so that no wait of the client
 * outlasts its service (gpuos_service_gone).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpuos/gpuos.h"
#include "gpuos/host.h"
#include "gpuos/internal/rt.h"
#include "gpu.h"

#define SVC_MAX_CONN 64u
/* Connections of one uid other than root's and the service's own at most,
 * and of all such uids together: the rest is root's and the service user's
 * (a flood of one user, or of several, never locks them out). */
#define SVC_MAX_CONN_PER_UID 16u
#define SVC_CONN_RESERVE 8u
#define SVC_LINE_MAX 8192u           /* one request line: a run carries its app and arguments */
#define SVC_OUT_MAX (1u << 20)       /* replies waiting for a client that does not read */
#define SVC_TICK_MS 200              /* timeouts and draining shares are looked at this often */
#define SVC_DEFAULT_TIMEOUT_MS 10000u
#define SVC_DEFAULT_MODE 0660u
#define SVC_MAX_GROUPS 64
#define SVC_MAX_APPS 4u              /* runs at once: one app runs, the others wait their turn */
/* A share given back gets fresh memory, which parks the runtime (every
 * client waits for it): all shares given back meanwhile under one park, and
 * after it a pause of SVC_RENEW_SHARE - 1 times what it took (at least
 * SVC_RENEW_GAP_MS), so that clients that come and go as fast as they can
 * cost the others at most 1/SVC_RENEW_SHARE of the time. */
#define SVC_RENEW_SHARE 20u
#define SVC_RENEW_GAP_MS 100u
/* An attach refused to a user (its shares, or all users', at their cap)
 * is answered this much later, at the loop's next tick after it: a client
 * that asks again and again waits, rather than costing the others a core. */
#define SVC_REFUSE_DELAY_MS 200u
/* What a refusal for want of a share adds where shares that count against
 * it are being given back: it passes, and a client asks again (attach). */
#define SVC_DRAINING " being given back)"
/* What the service maps of a client's area to count its requests: the
 * mailbox header (status). */
#define SVC_MBOX_MAP GPUOS_ALIGN_UP(sizeof(struct gpuos_mbox), (size_t)4096)

enum share_state { SHARE_FREE, SHARE_HELD, SHARE_DRAINING, SHARE_RETIRED /* its area could not be renewed */ };

struct svc_conn {
	int fd;                  /* -1: unused */
	struct gpuos_peer peer;
	int privileged;          /* root or the service's own uid */
	int share;               /* client share held, -1: none */
	uint64_t t_active;       /* ms: when it last made progress (a whole line served, a reply sent) */
	uint64_t t_line;         /* ms: when the first byte of the unfinished line in `in` came: the
				  * whole line must come within the client timeout, however it
				  * trickles in */
	char in[SVC_LINE_MAX];
	size_t in_n;
	char *out;               /* replies not yet written */
	size_t out_n, out_off;
	int app;                 /* its run in progress (v->app[]), -1: none; no more lines until it ends */
	uint64_t t_hold;         /* ms: its replies wait until then (SVC_REFUSE_DELAY_MS) */
	uint64_t t_connect;      /* ms: when it connected (status) */
	/* Attached: its area's mailbox header, mapped read-only, whose
	 * partition counters say how many requests it posted (status); NULL
	 * where the area cannot be mapped here (VRAM). posted adds up each
	 * partition's counter since posted_at (they wrap at 2^32). */
	const struct gpuos_mbox *mb;
	int pass_fd;             /* a descriptor that came with its input (register host), -1: none */
	uint64_t posted;
	uint32_t posted_at[GPUOS_MBOX_MAX_PARTS];
};

/* A `run`: the app runs in a thread of its own, so that the loop goes on. */
struct svc_app {
	int used;
	pthread_t th;
	struct gpuos_service *v;
	int conn;                /* index of the connection that asked, -1 once it closed */
	uint32_t share;
	struct gpuos_peer peer;
	char *line;
	char *reply;             /* written by the thread before done */
	int done;                /* stored with release by the thread when reply is there */
};

struct svc_share {
	int state;               /* enum share_state */
	uint32_t uid;            /* who holds it */
	int privileged;          /* it is root or the service's uid (share_reserve) */
	int renewed;             /* draining: its area has fresh memory */
	int dirty;               /* draining: a request of the service's own mailbox named it */
	int release_posted;      /* draining: the RELEASE request is in the mailbox */
	uint32_t release_slot;
	/* what its client lent (register host / vram), for the caps of its uid */
	struct svc_lent {
		uint64_t rt, len;    /* rt 0: an unused entry */
		int host;            /* host memory: pinned where the runtime is on a GPU */
	} lent[GPUOS_SYS_CLIENT_REGIONS];
};

struct gpuos_service {
	struct gpuos_service_opts o;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	uint32_t uid;            /* the service's own */
	int has_group;
	uint32_t group;
	struct gpuos_sys *s;
	int stopping;
	struct svc_conn conn[SVC_MAX_CONN];
	struct svc_share share[GPUOS_RT_MAX_CLIENTS]; /* host clients' [0, SHARES), GPU clients' after */
	uint32_t nshares;        /* GPUOS_SERVICE_SHARES + the runtime's GPU client areas */
	struct svc_app app[SVC_MAX_APPS];
	uint64_t t_renew;        /* ms: no renewal before (SVC_RENEW_SHARE) */
	/* Held by a running app (its load and unload park the runtime) and,
	 * with trylock, by the loop to renew an area or to look at the
	 * runtime kernel: never two parks at once, and the loop never waits. */
	pthread_mutex_t sys_lock;
	int wake[2];             /* an app that ended writes a byte: the loop's poll wakes */
	uint64_t t_start;        /* ms: when it began to listen (status: uptime) */
};

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* ---- the socket file ---------------------------------------------------------------- */

/* The default socket's directory: made by root, 0755, and refused when
 * someone else could have put a socket of theirs in it. */
static int socket_dir(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s (give --socket PATH in a directory of yours)", dir, strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	/* /tmp (sticky, anyone may create) is fine for a path given by hand;
	 * a directory owned by another user, or writable by others without
	 * the sticky bit, lets them replace our socket. */
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		snprintf(err, errlen, "%s: not a directory owned by root or by us and closed to others: refusing "
			 "to put the control socket there", dir);
		return -EPERM;
	}
	return 0;
}

/* A live service on the path stays; a stale socket of ours or root's goes;
 * anything else there is refused, never removed. */
static int socket_clear(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket: refusing to replace it", path);
		return -EEXIST;
	}
	fd = gpuos_service_connect(path, err, errlen);
	if (fd >= 0) {
		close(fd);
		snprintf(err, errlen, "a gpuos service already runs at %s (gpuos stop --socket %s)", path, path);
		return -EADDRINUSE;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u: refusing to remove it", path, (unsigned)st.st_uid);
		return -EPERM;
	}
	if (unlink(path) && errno != ENOENT) {
		snprintf(err, errlen, "remove the stale socket %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int group_of(const char *name, uint32_t *gid)
{
	char line[1024];
	FILE *f;
	/* /etc/group read directly: a static binary has no NSS to ask */
	if (!name || !*name || !(f = fopen("/etc/group", "re")))
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *end;
		unsigned long v;
		if (!c1 || (size_t)(c1 - line) != strlen(name) || strncmp(line, name, strlen(name)))
			continue;
		c2 = strchr(c1 + 1, ':');
		if (!c2)
			break;
		v = strtoul(c2 + 1, &end, 10);
		fclose(f);
		if (end == c2 + 1 || *end != ':' || v > UINT32_MAX)
			return -EINVAL;
		*gid = (uint32_t)v;
		return 0;
	}
	fclose(f);
	return -ENOENT;
}

/* v's listening socket at path: its group and mode set before it
 * listens. */
static int bind_socket(struct gpuos_service *v, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a;
	mode_t old;
	int r;

	v->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, path, strlen(path));
	/* Born 0600: nobody connects before the mode and group are set. */
	old = umask(0177);
	r = v->lfd < 0 || bind(v->lfd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	umask(old);
	if (!r && v->has_group && chown(path, (uid_t)-1, (gid_t)v->group))
		r = -errno;
	if (!r && chmod(path, (mode_t)(v->o.mode & 0777u)))
		r = -errno;
	if (!r && listen(v->lfd, 64))
		r = -errno;
	if (r) {
		snprintf(err, errlen, "control socket %s: %s", path, strerror(-r));
		if (v->lfd >= 0)
			unlink(path);
		return r;
	}
	return 0;
}

int gpuos_service_listen(const struct gpuos_service_opts *o, struct gpuos_service **out, char *err, size_t errlen)
{
	struct gpuos_service *v;
	char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *path = o->socket;
	int r, i, rule = 0;

	*out = NULL;
	if (!path) {
		rule = gpuos_service_default_socket(1, def, sizeof(def));
		if (rule < 0) {
			snprintf(err, errlen, "the default socket ($GPUOS_SOCKET) is too long for a socket's address: "
				 "give --socket PATH");
			return rule;
		}
		path = def;
	}
	if (strlen(path) >= sizeof(def) || !*path) {
		snprintf(err, errlen, "socket path empty or too long: %s", path);
		return -ENAMETOOLONG;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->o = *o;
	if (!v->o.mode)
		v->o.mode = SVC_DEFAULT_MODE;
	if (!v->o.client_timeout_ms)
		v->o.client_timeout_ms = SVC_DEFAULT_TIMEOUT_MS;
	snprintf(v->path, sizeof(v->path), "%s", path);
	v->uid = (uint32_t)geteuid();
	v->t_start = now_ms();
	v->lfd = -1;
	v->wake[0] = v->wake[1] = -1;
	pthread_mutex_init(&v->sys_lock, NULL);
	if (pipe2(v->wake, O_CLOEXEC | O_NONBLOCK)) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	for (i = 0; i < (int)SVC_MAX_CONN; i++) {
		v->conn[i].fd = -1;
		v->conn[i].pass_fd = -1;
	}
	if (o->group) {
		r = group_of(o->group, &v->group);
		if (r) {
			snprintf(err, errlen, "--group %s: no such group in /etc/group", o->group);
			goto fail;
		}
		v->has_group = 1;
	} else {
		v->has_group = group_of("gpuos", &v->group) == 0;
	}
	/* A path given (--socket, $GPUOS_SOCKET) is the caller's choice; the
	 * default directories are checked, and /run/gpuos made. */
	r = rule == GPUOS_SOCKET_FROM_SYSTEM || rule == GPUOS_SOCKET_FROM_XDG ? socket_dir(path, err, errlen) : 0;
	if (!r)
		r = socket_clear(path, err, errlen);
	if (r)
		goto fail;
	r = bind_socket(v, path, err, errlen);
	if (r)
		goto fail;
	*out = v;
	return 0;
fail:
	if (v->lfd >= 0)
		close(v->lfd);
	if (v->wake[0] >= 0) {
		close(v->wake[0]);
		close(v->wake[1]);
	}
	pthread_mutex_destroy(&v->sys_lock);
	free(v);
	return r;
}

/* ---- connections ---------------------------------------------------------------------- */

/* The peer's supplementary groups as they were at connect(), at most
 * SVC_MAX_GROUPS of them, into g; how many (0 where the kernel says none). */
static unsigned peer_groups(int fd, gid_t g[SVC_MAX_GROUPS])
{
	socklen_t len = SVC_MAX_GROUPS * sizeof(gid_t);
	return getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) ? 0 : (unsigned)(len / sizeof(gid_t));
}

static int peer_in_group(struct gpuos_service *v, int fd, const struct gpuos_peer *p)
{
	gid_t g[SVC_MAX_GROUPS];
	unsigned i, n;
	if (!v->has_group)
		return 0;
	if (p->gid == v->group)
		return 1;
	n = peer_groups(fd, g);
	for (i = 0; i < n; i++)
		if (g[i] == v->group)
			return 1;
	return 0;
}

/* Share k goes back once nothing can reach it any more (share_drain). */
static void share_drain_start(struct gpuos_service *v, uint32_t k)
{
	v->share[k].state = SHARE_DRAINING;
	v->share[k].release_posted = 0;
	v->share[k].renewed = 0;
	v->share[k].dirty = 0;
}

static void conn_close(struct gpuos_service *v, struct svc_conn *c)
{
	if (c->app >= 0)
		v->app[c->app].conn = -1; /* it runs to its end; its reply goes nowhere */
	if (c->share >= 0) {
		gpuos_sys_client_close(v->s, (uint32_t)c->share); /* takes nothing more from its mailbox */
		share_drain_start(v, (uint32_t)c->share);
	}
	if (c->mb)
		munmap((void *)(uintptr_t)c->mb, SVC_MBOX_MAP);
	if (c->pass_fd >= 0)
		close(c->pass_fd);
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->share = -1;
	c->app = -1;
	c->pass_fd = -1;
}

/* Attached clients that have gone (hung up) before the loop read their
 * end, closed now: a client that exits just before the next one attaches
 * had its share counted as held, not as being given back. How many. */
static unsigned conns_reap_gone(struct gpuos_service *v, const struct svc_conn *me)
{
	struct pollfd pf[SVC_MAX_CONN];
	struct svc_conn *at[SVC_MAX_CONN];
	unsigned i, n = 0, gone = 0;

	for (i = 0; i < SVC_MAX_CONN; i++) {
		struct svc_conn *c = &v->conn[i];
		if (c == me || c->fd < 0 || c->share < 0 || c->app >= 0)
			continue;
		pf[n].fd = c->fd;
		pf[n].events = 0; /* POLLHUP and POLLERR come all the same */
		pf[n].revents = 0;
		at[n++] = c;
	}
	if (!n || poll(pf, (nfds_t)n, 0) <= 0)
		return 0;
	for (i = 0; i < n; i++)
		if (pf[i].revents & (POLLHUP | POLLERR)) {
			conn_close(v, at[i]);
			gone++;
		}
	return gone;
}

/* Write what is queued; 0, or -1 when the client is gone. */
static int conn_flush(struct svc_conn *c)
{
	if (c->t_hold && now_ms() < c->t_hold)
		return 0; /* the timeouts' pass sends it (gpuos_service_serve) */
	c->t_hold = 0;
	while (c->out_off < c->out_n) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_n - c->out_off, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->out_off += (size_t)w;
		c->t_active = now_ms();
	}
	c->out_off = c->out_n = 0;
	return 0;
}

/* Queue a reply; 0, or -1 when the client is gone or reads too little. */
static int conn_send(struct svc_conn *c, const char *text)
{
	size_t n = strlen(text);
	char *p;
	if (c->out_n - c->out_off + n > SVC_OUT_MAX)
		return -1;
	p = realloc(c->out, c->out_n + n);
	if (!p)
		return -1;
	c->out = p;
	memcpy(c->out + c->out_n, text, n);
	c->out_n += n;
	return conn_flush(c);
}

static int conn_printf(struct svc_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int conn_printf(struct svc_conn *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return conn_send(c, line);
}

/* An idle connection that holds nothing and owes nothing may be closed to
 * make room. */
static int conn_idle(const struct svc_conn *x)
{
	return x->fd >= 0 && x->share < 0 && x->app < 0 && !x->in_n && !x->out_n;
}

/* The slot a new connection of peer p takes: a free one, or the one of
 * the connection idle longest (conn_idle; the caller closes it), so that
 * an idle flood locks nobody out. A uid other than root's and the
 * service's own holds at most SVC_MAX_CONN_PER_UID connections, and all
 * such uids together leave SVC_CONN_RESERVE to root and the service's
 * user: connections that are not idle (a line that trickles in, byte by
 * byte) cannot be taken from them, so they get no more than that. NULL
 * with the reason in why. */
static struct svc_conn *conn_slot(struct gpuos_service *v, const struct gpuos_peer *p, char *why, size_t whylen)
{
	int priv = p->uid == 0 || p->uid == v->uid;
	unsigned i, mine = 0, others = 0;
	struct svc_conn *free_c = NULL, *idle_mine = NULL, *idle_others = NULL, *idle_any = NULL;

	for (i = 0; i < SVC_MAX_CONN; i++) {
		struct svc_conn *x = &v->conn[i];
		int xpriv;
		if (x->fd < 0) {
			free_c = free_c ? free_c : x;
			continue;
		}
		xpriv = x->privileged;
		mine += !xpriv && x->peer.uid == p->uid;
		others += !xpriv;
		if (!conn_idle(x))
			continue;
		if (!idle_any || x->t_active < idle_any->t_active)
			idle_any = x;
		if (!xpriv && (!idle_others || x->t_active < idle_others->t_active))
			idle_others = x;
		if (!xpriv && x->peer.uid == p->uid && (!idle_mine || x->t_active < idle_mine->t_active))
			idle_mine = x;
	}
	if (priv) {
		if (free_c || idle_any)
			return free_c ? free_c : idle_any;
		snprintf(why, whylen, "too many connections (%u)", SVC_MAX_CONN);
		return NULL;
	}
	if (mine >= SVC_MAX_CONN_PER_UID) {
		if (idle_mine)
			return idle_mine;
		snprintf(why, whylen, "uid %u holds %u connections, as many as one user may", (unsigned)p->uid, mine);
		return NULL;
	}
	if (others >= SVC_MAX_CONN - SVC_CONN_RESERVE) {
		if (idle_others)
			return idle_others;
		snprintf(why, whylen, "too many connections (%u; the last %u are kept for root and uid %u)", SVC_MAX_CONN,
			 SVC_CONN_RESERVE, (unsigned)v->uid);
		return NULL;
	}
	if (free_c)
		return free_c;
	if (idle_others)
		return idle_others; /* then a privileged idle one: the reserve is not for idling */
	if (idle_any)
		return idle_any;
	snprintf(why, whylen, "too many connections (%u)", SVC_MAX_CONN);
	return NULL;
}

static void accept_one(struct gpuos_service *v)
{
	char why[160];
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct svc_conn *c = NULL;
	struct gpuos_peer p;
	int fd = accept4(v->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		close(fd);
		return;
	}
	p.uid = (uint32_t)cr.uid;
	p.gid = (uint32_t)cr.gid;
	p.pid = (uint32_t)cr.pid;
	if (p.uid != 0 && p.uid != v->uid && !peer_in_group(v, fd, &p)) {
		dprintf(fd, "err uid %u may not use this service (root, uid %u%s)\n", (unsigned)p.uid, (unsigned)v->uid,
			v->has_group ? " and its group" : "");
		close(fd);
		return;
	}
	c = conn_slot(v, &p, why, sizeof(why));
	if (!c) {
		dprintf(fd, "err %s\n", why);
		close(fd);
		return;
	}
	if (c->fd >= 0)
		conn_close(v, c);
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->peer = p;
	c->privileged = p.uid == 0 || p.uid == v->uid;
	c->share = -1;
	c->app = -1;
	c->pass_fd = -1;
	c->t_active = c->t_connect = now_ms();
}

/* Shares of a kind that no uid but root and the service's own may take:
 * a quarter (2 of the 8 client shares), so that users together never lock
 * root out. */
static unsigned share_reserve(unsigned n)
{
	return n / 4u;
}

/* A refusal's reason names the n shares counted against it that are being
 * given back (SVC_DRAINING), where there are any: then it passes. -1. */
static int say_back(char *why, size_t whylen, unsigned n)
{
	size_t l = strlen(why);
	if (n && l < whylen)
		snprintf(why + l, whylen - l, " (%u" SVC_DRAINING, n);
	return -1;
}

/* A free share of the kind asked for (a host client's, or a GPU
 * client's) for this peer: no uid but root and the service's may hold
 * more than half of a kind (at least one), so no one user locks the
 * others out, and all of them together leave share_reserve of them to
 * root and the service's user. */
static int share_take(struct gpuos_service *v, const struct svc_conn *c, int gpu, char *why, size_t whylen)
{
	unsigned lo = gpu ? GPUOS_SERVICE_SHARES : 0, hi = gpu ? v->nshares : GPUOS_SERVICE_SHARES;
	unsigned k, held = 0, users = 0, freek = hi, n = hi - lo;
	unsigned back_mine = 0, back_users = 0, back_all = 0; /* of those, being given back */
	const char *kind = gpu ? "GPU client areas" : "client shares";
	for (k = lo; k < hi; k++) {
		int drain = v->share[k].state == SHARE_DRAINING;
		back_all += drain;
		if (v->share[k].state == SHARE_FREE)
			freek = freek == hi ? k : freek;
		else if ((v->share[k].state == SHARE_HELD || drain) && v->share[k].uid == c->peer.uid) {
			held++; /* one given back counts until it is free again: leaving and coming back
				 * in a loop, a user holds no more than by staying */
			back_mine += drain;
		}
		/* Held by users, or given back by them and not yet free again */
		if ((v->share[k].state == SHARE_HELD || drain) && !v->share[k].privileged) {
			users++;
			back_users += drain;
		}
	}
	if (!c->privileged && held >= (n / 2 ? n / 2 : 1)) {
		snprintf(why, whylen, "uid %u holds %u of the %u %s, as many as one user may", (unsigned)c->peer.uid,
			 held, n, kind);
		return say_back(why, whylen, back_mine);
	}
	if (!c->privileged && users >= n - share_reserve(n)) {
		snprintf(why, whylen, "users hold %u of the %u %s; the other %u are kept for root and uid %u", users, n,
			 kind, share_reserve(n), (unsigned)v->uid);
		return say_back(why, whylen, back_users);
	}
	if (freek == hi) {
		snprintf(why, whylen, "all %u %s in use", n, kind);
		return say_back(why, whylen, back_all);
	}
	v->share[freek].state = SHARE_HELD;
	v->share[freek].uid = c->peer.uid;
	v->share[freek].privileged = c->privileged;
	return (int)freek;
}

/* What client k may do: its credentials for the file permission checks,
 * and raw reads for root and the service's own uid (where the runtime
 * allows them at all). */
static int admit(struct gpuos_service *v, const struct svc_conn *c, int k)
{
	struct gpuos_rt_client who;
	gid_t g[SVC_MAX_GROUPS];
	unsigned i, n = peer_groups(c->fd, g);

	memset(&who, 0, sizeof(who));
	who.uid = c->peer.uid;
	who.gid = c->peer.gid;
	for (i = 0; i < n && who.ngroups < GPUOS_RT_CLIENT_GROUPS; i++)
		who.groups[who.ngroups++] = g[i];
	who.flags = (c->privileged ? GPUOS_RT_CLIENT_RAW : 0) | (v->o.no_perms ? 0 : GPUOS_RT_CLIENT_PERMS);
	return gpuos_sys_client_admit(v->s, (uint32_t)k, &who);
}

/* ---- what status says ------------------------------------------------------------------ */

/* The mailbox partitions of a client's area: one per service warp. */
static uint32_t svc_nparts(const struct gpuos_service *v)
{
	return GPUOS_MIN(gpuos_sys_info(v->s)->warps, GPUOS_MBOX_MAX_PARTS);
}

/* Add what c posted since last looked at: its mailbox's partition
 * counters, which its client bumps once a request (gpuos_post). They are
 * the client's own and it may write anything there: the figure says what a
 * client says of itself, never what another did. */
static void conn_count(const struct gpuos_service *v, struct svc_conn *c)
{
	uint32_t p, n = svc_nparts(v);
	if (!c->mb)
		return;
	for (p = 0; p < n; p++) {
		/* A counter: it orders nothing. */
		uint32_t x = __atomic_load_n(&c->mb->part[p].posted, __ATOMIC_RELAXED);
		c->posted += (uint32_t)(x - c->posted_at[p]);
		c->posted_at[p] = x;
	}
}

/* An attached client's area (fd): its mailbox header, mapped read-only to
 * count; an area that is not host memory (VRAM) cannot be, and is not
 * counted. */
static void conn_count_start(const struct gpuos_service *v, struct svc_conn *c, int k, int fd)
{
	/* host memory: a host client's area, or a GPU client's in host mode
	 * (as the attach reply's mem= says) */
	int host = !gpuos_sys_client_gpu(v->s, (uint32_t)k) || !gpuos_sys_gpu_sm(v->s);
	void *p = host ? mmap(NULL, SVC_MBOX_MAP, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	c->mb = p == MAP_FAILED ? NULL : (const struct gpuos_mbox *)p;
	memset(c->posted_at, 0, sizeof(c->posted_at));
	conn_count(v, c);
	c->posted = 0;
}

/* A value of the status line: bytes outside '!'..'~', and % = , as %XX. */
static void put_val(FILE *f, const char *s)
{
	const unsigned char *p;
	for (p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == '%' || *p == '=' || *p == ',')
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
}

static const char *rt_state_name(uint32_t st)
{
	switch (st) {
	case GPUOS_RT_STATE_BOOT: return "boot";
	case GPUOS_RT_STATE_RUNNING: return "running";
	case GPUOS_RT_STATE_PARKED: return "parked";
	case GPUOS_RT_STATE_STOPPED: return "stopped";
	case GPUOS_RT_STATE_FATAL: return "fatal";
	default: return "unknown";
	}
}

/* The status line's mps keys. */
static void put_mps(FILE *f, const struct gpuos_mps *m)
{
	char text[512];

	fprintf(f, " mps=%s mps_text=", gpuos_mps_state_name(m->state));
	put_val(f, gpuos_mps_text(m, text, sizeof(text)));
	if (m->dir[0]) {
		fprintf(f, " mps_dir=");
		put_val(f, m->dir);
	}
	if (m->log_dir[0] && m->state != GPUOS_MPS_JOINED) {
		fprintf(f, " mps_log=");
		put_val(f, m->log_dir);
	}
	if (m->why[0]) {
		fprintf(f, " mps_why=");
		put_val(f, m->why);
	}
}

/* The status line's client=... keys, one per attached client, as viewer
 * me may see them, at time t. */
static void put_clients(FILE *f, struct gpuos_service *v, const struct svc_conn *me, uint64_t t)
{
	unsigned i;

	for (i = 0; i < SVC_MAX_CONN; i++) {
		struct svc_conn *c = &v->conn[i];
		/* Another user's client: how many and what kind, never who (its
		 * pid and uid) to a viewer who is not root or the service's. */
		int shown = me->privileged || c->peer.uid == me->peer.uid;
		if (c->fd < 0 || c->share < 0)
			continue;
		conn_count(v, c);
		fprintf(f, " client=%d,%s,", c->share + 1, gpuos_sys_client_gpu(v->s, (uint32_t)c->share) ? "gpu" : "host");
		if (shown)
			fprintf(f, "%u,%u,", (unsigned)c->peer.pid, (unsigned)c->peer.uid);
		else
			fprintf(f, "?,?,");
		fprintf(f, "%llu,", (unsigned long long)(t - c->t_connect));
		if (c->mb)
			fprintf(f, "%llu", (unsigned long long)c->posted);
		else
			fprintf(f, "?");
	}
}

/* The reply to `status`, for the viewer on connection me (who asked: it
 * passed accept_one's rights check, as for attach). One line:
 *   ok status/1 KEY=VALUE ...
 * values escaped as put_val does, a key left out where it has no value:
 *   runtime gpu|host, gpu (its name), device, pid, uid (the service's),
 *   uptime_ms, socket, state (the runtime's), fatal (why, where state is
 *   fatal: gpuos_fatal_name), mps (gpuos_mps_state_name),
 *   mps_text (boot's line after "MPS: "), mps_dir, mps_log, mps_why,
 *   viewer_uid, viewer_all (1: root or the service's uid, who see every
 *   client's pid and uid), connections, apps (running or waiting),
 *   host_shares, gpu_areas, t.NAME (the runtime's counters since boot:
 *   requests bytes errors commands timeouts retries aborts resets strays
 *   duplicates untrusted zero_copy doorbells polls), and one
 *   client=SHARE,KIND,PID,UID,CONNECTED_MS,POSTED per attached client:
 *   KIND host|gpu, PID and UID "?" to a viewer who is neither root, the
 *   service's uid nor that client's uid (docs/security.md), POSTED "?"
 *   where the area is not counted. NULL when out of memory. */
static char *status_line(struct gpuos_service *v, const struct svc_conn *me)
{
	const struct gpuos_info *in = gpuos_sys_info(v->s);
	struct gpuos_stats st;
	char *buf = NULL, text[512];
	size_t len = 0;
	uint64_t t = now_ms();
	unsigned i, napps = 0, nconn = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	gpuos_sys_stats(v->s, &st);
	fprintf(f, "ok status/1 runtime=%s gpu=", in->gpu ? "gpu" : "host");
	put_val(f, in->gpu_name);
	if (v->o.device) {
		fprintf(f, " device=");
		put_val(f, v->o.device);
	}
	fprintf(f, " pid=%u uid=%u uptime_ms=%llu socket=", (unsigned)getpid(), (unsigned)v->uid,
		(unsigned long long)(t - v->t_start));
	put_val(f, v->path);
	fprintf(f, " state=%s", rt_state_name(st.state));
	if (st.state == GPUOS_RT_STATE_FATAL) {
		snprintf(text, sizeof(text), "%s (controller %u, status 0x%x, CSTS 0x%x)", gpuos_fatal_name(st.fatal_why),
			 st.fatal_why >> 8 & 0xffu, st.fatal_why >> 16, st.fatal_csts);
		fprintf(f, " fatal=");
		put_val(f, text);
	}
	if (v->o.mps)
		put_mps(f, v->o.mps);
	for (i = 0; i < SVC_MAX_APPS; i++)
		napps += v->app[i].used != 0;
	for (i = 0; i < SVC_MAX_CONN; i++)
		nconn += v->conn[i].fd >= 0;
	fprintf(f, " viewer_uid=%u viewer_all=%d connections=%u apps=%u host_shares=%u gpu_areas=%u",
		(unsigned)me->peer.uid, me->privileged, nconn, napps, GPUOS_SERVICE_SHARES,
		v->nshares - GPUOS_SERVICE_SHARES);
	fprintf(f,
		" t.requests=%llu t.bytes=%llu t.errors=%llu t.commands=%llu t.timeouts=%llu t.retries=%llu"
		" t.aborts=%llu t.resets=%llu t.strays=%llu t.duplicates=%llu t.untrusted=%llu t.zero_copy=%llu"
		" t.doorbells=%llu t.polls=%llu",
		(unsigned long long)st.requests, (unsigned long long)st.bytes, (unsigned long long)st.errors,
		(unsigned long long)st.commands, (unsigned long long)st.timeouts, (unsigned long long)st.retries,
		(unsigned long long)st.aborts, (unsigned long long)st.resets, (unsigned long long)st.strays,
		(unsigned long long)st.duplicates, (unsigned long long)st.untrusted, (unsigned long long)st.zero_copy,
		(unsigned long long)st.doorbells, (unsigned long long)st.polls);
	put_clients(f, v, me, t);
	fputc('\n', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* "ok heap_off=N heap_len=N shm_len=N share=K rt=N[ mem=vram|host]" with
 * the descriptor of the client's own area (its mailbox at 0, its share at
 * heap_off): all it maps. */
/* line as one message on sock, with descriptor fd (SCM_RIGHTS) when fd >= 0:
 * the descriptor travels with the line's first byte. 0, or -EIO when not
 * all of it went (a line is short: one message, whole). */
static int send_line_fd(int sock, const char *line, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)(uintptr_t)line, .iov_len = strlen(line) };
	struct msghdr m;
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *cm;
		memset(cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)strlen(line) ? 0 : -EIO;
}

static int send_attach(struct gpuos_service *v, struct svc_conn *c, int k)
{
	char line[256];
	uint64_t rt, len, share_off;
	int fd = gpuos_sys_client_area(v->s, (uint32_t)k, &rt, &len, &share_off);

	if (fd < 0 || admit(v, c, k))
		return -1;
	snprintf(line, sizeof(line), "ok heap_off=%llu heap_len=%llu shm_len=%llu share=%d rt=%llu%s\n",
		 (unsigned long long)share_off, (unsigned long long)(len - share_off), (unsigned long long)len, k + 1,
		 (unsigned long long)rt,
		 !gpuos_sys_client_gpu(v->s, (uint32_t)k) ? "" : gpuos_sys_gpu_sm(v->s) ? " mem=vram" : " mem=host");
	/* Nothing else is queued (checked by the caller). */
	if (send_line_fd(c->fd, line, fd))
		return -1;
	conn_count_start(v, c, k, fd);
	return 0;
}

static void stats_line(struct gpuos_service *v, char *out, size_t len)
{
	struct gpuos_stats st;
	gpuos_sys_stats(v->s, &st);
	snprintf(out, len,
		 "{\"requests\": %llu, \"bytes\": %llu, \"errors\": %llu, \"commands\": %llu, \"timeouts\": %llu, "
		 "\"doorbells\": %llu, \"polls\": %llu, \"zero_copy\": %llu, \"strays\": %llu, "
		 "\"aborts\": %llu, \"resets\": %llu, \"retries\": %llu, \"duplicates\": %llu, \"untrusted\": %llu, "
		 "\"state\": %u}\n",
		 (unsigned long long)st.requests, (unsigned long long)st.bytes, (unsigned long long)st.errors,
		 (unsigned long long)st.commands, (unsigned long long)st.timeouts, (unsigned long long)st.doorbells,
		 (unsigned long long)st.polls, (unsigned long long)st.zero_copy, (unsigned long long)st.strays,
		 (unsigned long long)st.aborts, (unsigned long long)st.resets, (unsigned long long)st.retries,
		 (unsigned long long)st.duplicates, (unsigned long long)st.untrusted, st.state);
}

static void *app_main(void *p)
{
	struct svc_app *a = p;
	struct gpuos_service *v = a->v;
	pthread_mutex_lock(&v->sys_lock);
	a->reply = v->o.run(v->o.run_ctx, v->s, &a->peer, a->share, a->line);
	pthread_mutex_unlock(&v->sys_lock);
	/* Publishes the reply; pairs with the loop's acquire load (app_reap). */
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	if (write(v->wake[1], "x", 1) < 0) {
		/* the pipe is full: the loop is awake anyway */
	}
	return NULL;
}

/* A run: a share and a thread for the app; its reply comes when it ends. */
static int app_start(struct gpuos_service *v, struct svc_conn *c, const char *line)
{
	struct svc_app *a = NULL;
	char why[256];
	unsigned i;
	int k;
	for (i = 0; i < SVC_MAX_APPS && !a; i++)
		if (!v->app[i].used)
			a = &v->app[i];
	if (!a)
		return conn_printf(c, "err %u apps run or wait their turn: try again later\n", SVC_MAX_APPS);
	k = share_take(v, c, 0, why, sizeof(why));
	if (k < 0 && conns_reap_gone(v, c))
		k = share_take(v, c, 0, why, sizeof(why));
	if (k < 0)
		return conn_printf(c, "err %s\n", why);
	memset(a, 0, sizeof(*a));
	a->v = v;
	a->conn = (int)(c - v->conn);
	a->share = (uint32_t)k;
	a->peer = c->peer;
	a->line = strdup(line);
	if (!a->line || pthread_create(&a->th, NULL, app_main, a)) {
		free(a->line);
		share_drain_start(v, (uint32_t)k);
		return conn_printf(c, "err no thread for the app\n");
	}
	a->used = 1;
	c->app = (int)(a - v->app);
	return 0;
}

/* Apps that ended: their replies to their clients (if still there), their
 * shares drained like a client's (handles they left open go). */
static void app_reap(struct gpuos_service *v, int wait)
{
	unsigned i;
	for (i = 0; i < SVC_MAX_APPS; i++) {
		struct svc_app *a = &v->app[i];
		if (!a->used || (!wait && !__atomic_load_n(&a->done, __ATOMIC_ACQUIRE)))
			continue;
		pthread_join(a->th, NULL);
		if (a->conn >= 0) {
			struct svc_conn *c = &v->conn[a->conn];
			c->app = -1;
			c->t_active = now_ms();
			if (conn_send(c, a->reply ? a->reply : "err out of memory\n"))
				conn_close(v, c);
		}
		share_drain_start(v, a->share);
		free(a->line);
		free(a->reply);
		memset(a, 0, sizeof(*a));
	}
}

/* 128 hex digits into GPUOS_GPU_IPC_HANDLE bytes; 0, or -1. */
static int parse_hex(const char *h, unsigned char *out, size_t n)
{
	size_t i;
	if (strlen(h) != 2 * n)
		return -1;
	for (i = 0; i < 2 * n; i++) {
		char ch = h[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		out[i / 2] = (unsigned char)(i % 2 ? out[i / 2] * 16u + (unsigned)d : (unsigned)d);
	}
	return 0;
}

/* A uid other than root's and the service's own lends at most half the
 * runtime's user regions, and, on a GPU (where lent host memory is
 * pinned), a quarter of the machine's memory, over all its shares. */
#define SVC_UID_REGIONS (GPUOS_SYS_USER_REGIONS / 2u)
static int uid_may_lend(const struct gpuos_service *v, uint32_t uid, uint64_t len, int host)
{
	uint64_t pinned = host ? len : 0, phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint32_t k, i, n = 1;
	for (k = 0; k < v->nshares; k++) {
		if ((v->share[k].state != SHARE_HELD && v->share[k].state != SHARE_DRAINING) || v->share[k].uid != uid)
			continue;
		for (i = 0; i < GPUOS_SYS_CLIENT_REGIONS; i++) {
			n += v->share[k].lent[i].rt != 0;
			pinned += v->share[k].lent[i].rt && v->share[k].lent[i].host ? v->share[k].lent[i].len : 0;
		}
	}
	return n <= SVC_UID_REGIONS && (!gpuos_sys_gpu_sm(v->s) || pinned <= phys / 4);
}

/* The share's record of what it lent: the region at rt added, or
 * forgotten when unreg. */
static void record_lent(struct svc_lent *l, int unreg, uint64_t rt, uint64_t len, int host)
{
	uint32_t i;

	for (i = 0; i < GPUOS_SYS_CLIENT_REGIONS; i++) {
		if (unreg && l[i].rt == rt)
			memset(&l[i], 0, sizeof(l[i]));
		else if (!unreg && !l[i].rt) {
			l[i].rt = rt;
			l[i].len = len;
			l[i].host = host;
			break;
		}
	}
}

/* The reply to a register (or unregister, unreg) that the runtime
 * answered r: a line for each of its errors. */
static int register_reply(struct svc_conn *c, int r, int unreg, unsigned long long rt, int vram)
{
	switch (r) {
	case 0:
		return unreg ? conn_printf(c, "ok\n") : conn_printf(c, "ok rt=%llu\n", rt);
	case -ENOENT:
		return conn_printf(c, "err no memory of yours is registered at %llu\n", rt);
	case -EPERM:
		return conn_printf(c, "err the memfd is not sealed against shrinking (F_SEAL_SHRINK)\n");
	case -ERANGE:
		return conn_printf(c, "err the range passes the end of the %s\n", vram ? "allocation" : "memfd");
	case -ENOSPC:
		return conn_printf(c, "err a client registers %u ranges at most: unregister one first\n",
				   GPUOS_SYS_CLIENT_REGIONS);
	case -EEXIST:
		return conn_printf(c, "err that memory is lent already\n");
	case -E2BIG:
		return conn_printf(c, "err a client pins at most a quarter of this machine's memory at once\n");
	case -EBUSY:
		return conn_printf(c, "err busy: every region of the runtime is in use; ask again later\n");
	case -EOPNOTSUPP:
		return conn_printf(c, "err this service's runtime cannot take VRAM of another process (host mode)\n");
	case -EINVAL:
		return conn_printf(c, "err not memory the service can register (%s)\n",
				   vram ? "not an IPC handle of this GPU's memory" : "a length of whole pages, a memfd");
	default:
		return conn_printf(c, "err register: %s\n", strerror(-r));
	}
}

/* register / unregister: memory of the client's own (gpuos_sys_client_register).
 * The runtime is parked meanwhile, so never while an app holds it (the
 * client asks again). */
static int serve_register(struct gpuos_service *v, struct svc_conn *c, const char *line)
{
	struct gpuos_client_mem m;
	unsigned long long off = 0, len = 0, rt = 0;
	char hex[2 * GPUOS_GPU_IPC_HANDLE + 2];
	int used = -1, r, fd = c->pass_fd;
	c->pass_fd = -1; /* this line's, whatever it asks: closed below unless the service keeps its mapping */
	memset(&m, 0, sizeof(m));
	m.fd = -1;
	if (c->share < 0) {
		r = conn_printf(c, "err attach first: memory is registered for an attached client\n");
		goto out;
	}
	if (!strncmp(line, "unregister ", 11)) {
		if (sscanf(line, "unregister rt=%llu%n", &rt, &used) != 1 || line[used]) {
			r = conn_printf(c, "err usage: unregister rt=N\n");
			goto out;
		}
	} else if (!strncmp(line, "register host ", 14)) {
		if (sscanf(line, "register host off=%llu len=%llu%n", &off, &len, &used) != 2 || line[used]) {
			r = conn_printf(c, "err usage: register host off=N len=N, with the memfd\n");
			goto out;
		}
		if (fd < 0) {
			r = conn_printf(c, "err register host: no memfd came with the request\n");
			goto out;
		}
		m.fd = fd;
	} else if (sscanf(line, "register vram off=%llu len=%llu ipc=%129s%n", &off, &len, hex, &used) != 3 ||
		   line[used] || parse_hex(hex, m.ipc, GPUOS_GPU_IPC_HANDLE)) {
		r = conn_printf(c, "err usage: register vram off=N len=N ipc=HEX (%u hex digits)\n",
				2u * GPUOS_GPU_IPC_HANDLE);
		goto out;
	} else {
		m.vram = 1;
	}
	m.offset = off;
	m.len = len;
	if (line[0] != 'u' && !c->privileged && !uid_may_lend(v, c->peer.uid, len, !m.vram)) {
		r = conn_printf(c, "err uid %u lends %u ranges at most, and on a GPU pins at most a quarter of this "
				"machine's memory, over all its clients\n", (unsigned)c->peer.uid, SVC_UID_REGIONS);
		goto out;
	}
	if (pthread_mutex_trylock(&v->sys_lock)) {
		r = conn_printf(c, "err busy: an app is loading; ask again\n");
		goto out;
	}
	if (line[0] == 'u')
		r = gpuos_sys_client_unregister(v->s, (uint32_t)c->share, rt);
	else
		r = gpuos_sys_client_register(v->s, (uint32_t)c->share, &m, (uint64_t *)&rt);
	pthread_mutex_unlock(&v->sys_lock);
	if (!r)
		record_lent(v->share[c->share].lent, line[0] == 'u', rt, len, !m.vram);
	r = register_reply(c, r, line[0] == 'u', rt, m.vram);
out:
	if (fd >= 0)
		close(fd); /* the service maps it (or not) on its own */
	return r;
}

/* One request line; 0, or -1 when the connection must go. */
static int serve_line(struct gpuos_service *v, struct svc_conn *c, const char *line)
{
	char why[256];
	int k;

	if (!strcmp(line, "attach") || !strcmp(line, "attach gpu")) {
		int gpu = line[6] != 0;
		if (gpuos_sys_mbox_device(v->s) && !gpu)
			return conn_printf(c, "err this service's mailbox is in VRAM (gpuos boot --mbox-vram): it serves "
					   "GPU apps (gpuos run --socket), not host clients\n");
		if (gpu && v->nshares == GPUOS_SERVICE_SHARES)
			return conn_printf(c, "err this service has no GPU client areas (gpuos boot --gpu-clients N)\n");
		/* A client's kernels run beside the runtime's only under MPS,
		 * which the runtime's own context must have joined at boot. */
		if (gpu && gpuos_sys_gpu_sm(v->s) && !gpuos_sys_info(v->s)->mps)
			return conn_printf(c, "err GPU clients need MPS, and this service booted without it "
					   "(scripts/mps-start.sh, then boot the service again)\n");
		if (c->share >= 0)
			return conn_printf(c, "err already attached\n");
		if (c->out_n)
			return -1; /* a client that sends attach behind unread replies */
		k = share_take(v, c, gpu, why, sizeof(why));
		if (k < 0 && conns_reap_gone(v, c))
			k = share_take(v, c, gpu, why, sizeof(why));
		if (k < 0) {
			if (!c->privileged)
				c->t_hold = now_ms() + SVC_REFUSE_DELAY_MS;
			return conn_printf(c, "err %s\n", why);
		}
		c->share = k;
		return send_attach(v, c, k);
	}
	if (!strncmp(line, "register ", 9) || !strncmp(line, "unregister ", 11))
		return serve_register(v, c, line);
	if (!strcmp(line, "stats")) {
		char js[1024];
		stats_line(v, js, sizeof(js));
		return conn_send(c, js);
	}
	if (!strcmp(line, "status")) {
		char *st = status_line(v, c);
		int r = conn_send(c, st ? st : "err out of memory\n");
		free(st);
		return r;
	}
	if (!strncmp(line, "run ", 4)) {
		if (!v->o.run)
			return conn_printf(c, "err this service runs no apps\n");
		return app_start(v, c, line);
	}
	if (!strcmp(line, "stop")) {
		if (!c->privileged)
			return conn_printf(c, "err only root and uid %u may stop this service\n", (unsigned)v->uid);
		v->stopping = 1;
		/* A daemon the service started quits only once the service has
		 * gone (it is the daemon's client); until then a CUDA process
		 * finds no device. The stopper waits for it (gpuos stop). */
		if (v->o.mps && v->o.mps->state == GPUOS_MPS_STARTED)
			return conn_printf(c, "ok mps-quits=%s\n", v->o.mps->dir);
		return conn_printf(c, "ok\n");
	}
	return conn_printf(c, "err unknown request\n");
}

static void conn_input(struct gpuos_service *v, struct svc_conn *c)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = c->in + c->in_n, .iov_len = sizeof(c->in) - 1 - c->in_n };
	struct msghdr m;
	struct cmsghdr *cm;
	ssize_t got;
	char *nl;

	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	got = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC);
	/* A descriptor comes with the line that uses it (register host): kept
	 * for that line, one at a time; any other goes (more than fit were
	 * closed by the kernel: MSG_CTRUNC). */
	for (cm = got > 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm)) {
		size_t i, nfd;
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->pass_fd < 0)
				c->pass_fd = fd;
			else
				close(fd);
		}
	}
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (got <= 0) {
		conn_close(v, c);
		return;
	}
	if (!c->in_n)
		c->t_line = now_ms(); /* a line begins: it has the client timeout to end */
	c->in_n += (size_t)got;
	c->in[c->in_n] = 0;
	while ((nl = memchr(c->in, '\n', c->in_n))) {
		size_t used = (size_t)(nl + 1 - c->in);
		*nl = 0;
		if (strlen(c->in) != used - 1 || serve_line(v, c, c->in)) { /* a NUL inside: not a client of ours */
			conn_close(v, c);
			return;
		}
		if (c->pass_fd >= 0) { /* came with a line that takes none */
			close(c->pass_fd);
			c->pass_fd = -1;
		}
		memmove(c->in, nl + 1, c->in_n - used);
		c->in_n -= used;
		c->in[c->in_n] = 0;
		/* A whole line is progress; the next one's time starts now, also
		 * for what came with this one. */
		c->t_active = c->t_line = now_ms();
	}
	if (c->in_n >= sizeof(c->in) - 1) { /* a line too long */
		conn_printf(c, "err request line longer than %u bytes\n", SVC_LINE_MAX - 1);
		conn_close(v, c);
	}
}

/* ---- giving shares back ---------------------------------------------------------------- */

static int in_share(uint64_t a, uint64_t base, uint64_t len)
{
	return a >= base && a - base < len;
}

/* Move a draining share on: release its handles, wait for its requests in
 * flight, free slots its client left, zero it. 1 when free again. */
static int share_drain(struct gpuos_service *v, uint32_t k)
{
	struct svc_share *sh = &v->share[k];
	struct gpuos_mbox *mb = gpuos_sys_mbox(v->s);
	struct gpuos_mbox_slot *slots;
	struct gpuos_result res;
	uint64_t base = 0, len = 0;
	char *p = gpuos_sys_share(v->s, k, &base, &len);
	uint32_t i, busy = 0;

	/* First the client's own area: fresh memory, after the runtime has
	 * finished what it took from it (renew_due). */
	if (!sh->renewed)
		return 0;
	if (gpuos_sys_client_gpu(v->s, k))
		p = NULL; /* renewed is zeroed; the service's own mailbox never names it */
	else if (gpuos_sys_mbox_device(v->s)) {
		/* No host access to a VRAM mailbox: apps run one at a time and
		 * have finished; their open handles stay (docs/security.md). */
		memset(p, 0, len);
		sh->state = SHARE_FREE;
		return 1;
	}
	slots = gpuos_mbox_slots(mb);
	if (!sh->release_posted) {
		struct gpuos_req rq;
		memset(&rq, 0, sizeof(rq));
		rq.opcode = GPUOS_OP_RELEASE;
		rq.arg = k + 1u;
		if (gpuos_post(mb, &rq, &sh->release_slot) != GPUOS_ST_OK)
			return 0; /* mailbox full: next tick */
		sh->release_posted = 1;
	}
	if (sh->release_posted == 1) {
		if (!gpuos_poll(mb, sh->release_slot, &res))
			return 0;
		/* Refused for want of room with the metadata warp: again, later
		 * (the share's handles must go before another client gets it). */
		sh->release_posted = res.status == GPUOS_ST_FULL ? 0 : 2;
		if (!sh->release_posted)
			return 0;
	}
	for (i = 0; p && i < mb->nslots; i++) {
		struct gpuos_mbox_slot *s = &slots[i];
		/* Pairs with the runtime's release of DONE: its writes to the share are done. */
		uint32_t st = gpuos_load_acquire_sys32(&s->state);
		if (st == GPUOS_SLOT_FREE || !(in_share(s->dst, base, len) || in_share(s->arg, base, len) ||
					       in_share(s->batch, base, len)))
			continue;
		sh->dirty = 1; /* an app's request (the service's own mailbox) named the share */
		if (st == GPUOS_SLOT_POSTED || st == GPUOS_SLOT_TAKEN)
			busy++;
		else /* CLAIMED or DONE: the client left it; the runtime no longer looks */
			gpuos_store_release_sys32(&s->state, GPUOS_SLOT_FREE);
	}
	if (busy)
		return 0;
	/* The next client sees nothing of this one: the renewal gave the area
	 * fresh zero pages; only an app's requests through the service's own
	 * mailbox may have written them since (touching every page of every
	 * share that comes back had cost a client that comes and goes 8 MiB
	 * of page faults each time). */
	if (p && sh->dirty)
		memset(p, 0, len);
	sh->state = SHARE_FREE;
	return 1;
}

/* ---- the loop ------------------------------------------------------------------------- */

/* Shares given back whose areas wait for fresh memory: all of them under
 * one park, once the pause after the last one is over (SVC_RENEW_SHARE).
 * A batch that fails is done again one by one: a share that cannot be
 * renewed is not given out again (its area may still hold its last
 * client's bytes). 1 while some still wait. */
static int renew_due(struct gpuos_service *v)
{
	uint32_t ks[GPUOS_RT_MAX_CLIENTS], n = 0, k, i;
	uint64_t t0 = now_ms();
	char why[256];
	int r;

	for (k = 0; k < v->nshares; k++)
		if (v->share[k].state == SHARE_DRAINING && !v->share[k].renewed)
			ks[n++] = k;
	if (!n)
		return 0;
	if (t0 < v->t_renew || pthread_mutex_trylock(&v->sys_lock))
		return 1; /* not yet, or an app runs (its loads park the runtime): after it */
	r = gpuos_sys_client_renew_n(v->s, ks, n, why, sizeof(why));
	for (i = 0; i < n; i++) {
		if (r && gpuos_sys_client_renew(v->s, ks[i], why, sizeof(why))) {
			fprintf(stderr, "gpuos: client share %u is not given out again: %s\n", ks[i] + 1u, why);
			v->share[ks[i]].state = SHARE_RETIRED;
			/* what its client lent goes all the same */
			if (gpuos_sys_client_forget(v->s, ks[i]))
				fprintf(stderr, "gpuos: client share %u: the memory its client lent stays mapped\n", ks[i] + 1u);
			memset(v->share[ks[i]].lent, 0, sizeof(v->share[ks[i]].lent));
			continue;
		}
		memset(v->share[ks[i]].lent, 0, sizeof(v->share[ks[i]].lent)); /* dropped with the renewal */
		v->share[ks[i]].renewed = 1;
	}
	pthread_mutex_unlock(&v->sys_lock);
	/* A park costs every client its duration: at most 1/SVC_RENEW_SHARE of
	 * the time goes to renewals, however fast clients come and go. */
	v->t_renew = now_ms() + GPUOS_MAX((now_ms() - t0) * (SVC_RENEW_SHARE - 1u), (uint64_t)SVC_RENEW_GAP_MS);
	return 0;
}

/* How long the loop may sleep: a tick, or until renewals may run (tried
 * again every 10 ms while an app holds them up). */
static int poll_ms(const struct gpuos_service *v, int renewing)
{
	uint64_t t = now_ms();
	if (!renewing)
		return SVC_TICK_MS;
	return (int)GPUOS_MIN(v->t_renew > t + 10u ? v->t_renew - t : 10u, (uint64_t)SVC_TICK_MS);
}

/* What serve polls: the listener (map -1), the apps' wake pipe (-2) and
 * each connection (its index). How many. */
static int poll_set(const struct gpuos_service *v, struct pollfd *pf, int *map)
{
	unsigned i;
	int n = 0;

	pf[n].fd = v->lfd;
	pf[n].events = POLLIN;
	map[n++] = -1;
	pf[n].fd = v->wake[0];
	pf[n].events = POLLIN;
	map[n++] = -2;
	for (i = 0; i < SVC_MAX_CONN; i++) {
		if (v->conn[i].fd < 0)
			continue;
		pf[n].fd = v->conn[i].fd;
		/* While its app runs a client's next lines wait in the socket. */
		pf[n].events = (short)((v->conn[i].app < 0 && !v->conn[i].t_hold ? POLLIN : 0) |
				       (v->conn[i].out_n && !v->conn[i].t_hold ? POLLOUT : 0));
		map[n++] = (int)i;
	}
	return n;
}

/* What poll found on the n descriptors of poll_set. */
static void serve_events(struct gpuos_service *v, const struct pollfd *pf, const int *map, int n)
{
	char drain[64];
	int i;

	for (i = 0; i < n; i++) {
		struct svc_conn *c;
		if (!pf[i].revents)
			continue;
		if (map[i] == -1) {
			accept_one(v);
			continue;
		}
		if (map[i] == -2) {
			while (read(v->wake[0], drain, sizeof(drain)) > 0)
				;
			app_reap(v, 0);
			continue;
		}
		c = &v->conn[map[i]];
		if (c->fd < 0)
			continue;
		if ((pf[i].revents & POLLOUT) && conn_flush(c)) {
			conn_close(v, c);
			continue;
		}
		if (c->app >= 0 && (pf[i].revents & (POLLHUP | POLLERR)))
			conn_close(v, c);
		else if (c->app < 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			conn_input(v, c);
	}
}

/* Each connection's counters and timers: a refusal held back goes out,
 * one that overstays is closed. */
static void serve_timers(struct gpuos_service *v)
{
	uint64_t t = now_ms();
	unsigned i;

	for (i = 0; i < SVC_MAX_CONN; i++) {
		struct svc_conn *c = &v->conn[i];
		if (c->fd < 0)
			continue;
		conn_count(v, c); /* often enough that no counter wraps unseen */
		if (c->app >= 0)
			continue;
		if (c->t_hold && t >= c->t_hold && conn_flush(c)) { /* a refusal held back */
			conn_close(v, c);
			continue;
		}
		/* A line that does not end in time, however it trickles in
		 * (a byte now and then restarts no timer); a reply not read;
		 * an idle connection without a share. An attached one idles
		 * as it likes. */
		if ((c->in_n && t - c->t_line >= v->o.client_timeout_ms) ||
		    ((c->out_n || (!c->in_n && c->share < 0)) && t - c->t_active >= v->o.client_timeout_ms))
			conn_close(v, c);
	}
}

int gpuos_service_serve(struct gpuos_service *v, struct gpuos_sys *s, const volatile int *stop, char *err,
			size_t errlen)
{
	struct pollfd pf[SVC_MAX_CONN + 2]; /* the listener, the apps' wake pipe, each connection */
	int map[SVC_MAX_CONN + 2];
	unsigned k;
	int n, r = 0, renewing = 0;

	v->s = s;
	v->nshares = GPUOS_SERVICE_SHARES + gpuos_sys_gpu_clients(s);
	while (!v->stopping && !*stop) {
		n = poll_set(v, pf, map);
		if (poll(pf, (nfds_t)n, poll_ms(v, renewing)) < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "poll: %s", strerror(errno));
			break;
		}
		/* Not while an app holds the runtime: its park would look like an end. */
		if (!pthread_mutex_trylock(&v->sys_lock)) {
			r = gpuos_sys_check(s, err, errlen);
			pthread_mutex_unlock(&v->sys_lock);
			if (r)
				break;
		}
		serve_events(v, pf, map, n);
		serve_timers(v);
		renewing = renew_due(v);
		for (k = 0; k < v->nshares; k++)
			if (v->share[k].state == SHARE_DRAINING)
				share_drain(v, k);
	}
	/* A stop waits for the apps that run to end (the runtime serves them
	 * until then). */
	app_reap(v, 1);
	return r;
}

const char *gpuos_service_path(const struct gpuos_service *v)
{
	return v->path;
}

void gpuos_service_close(struct gpuos_service *v)
{
	unsigned i;
	if (!v)
		return;
	for (i = 0; i < SVC_MAX_CONN; i++)
		if (v->conn[i].fd >= 0) {
			if (v->conn[i].mb)
				munmap((void *)(uintptr_t)v->conn[i].mb, SVC_MBOX_MAP);
			close(v->conn[i].fd);
			free(v->conn[i].out);
		}
	if (v->lfd >= 0) {
		close(v->lfd);
		unlink(v->path);
	}
	close(v->wake[0]);
	close(v->wake[1]);
	pthread_mutex_destroy(&v->sys_lock);
	free(v);
}

/* ---- the client's side ------------------------------------------------------------------ */

int gpuos_service_default_socket(int service, char *buf, size_t len)
{
	const char *e = getenv("GPUOS_SOCKET"), *x = getenv("XDG_RUNTIME_DIR");
	size_t cap = GPUOS_MIN(len, sizeof(((struct sockaddr_un *)0)->sun_path));
	char p[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;

	if (e && *e)
		return (size_t)snprintf(buf, len, "%s", e) >= cap ? -ENAMETOOLONG : GPUOS_SOCKET_FROM_ENV;
	/* A user's own service lives in its runtime directory; root's is the
	 * machine's (the systemd unit's, which has no XDG_RUNTIME_DIR). A
	 * client takes the user's where one is there, else the machine's. */
	if (geteuid() != 0 && x && x[0] == '/' && (size_t)snprintf(p, sizeof(p), "%s/%s", x, GPUOS_SOCKET_NAME) < cap &&
	    (service || (lstat(p, &st) == 0 && S_ISSOCK(st.st_mode)))) {
		snprintf(buf, len, "%s", p);
		return GPUOS_SOCKET_FROM_XDG;
	}
	if (strlen(GPUOS_DEFAULT_SOCKET) >= cap)
		return -ENAMETOOLONG;
	snprintf(buf, len, "%s", GPUOS_DEFAULT_SOCKET);
	return GPUOS_SOCKET_FROM_SYSTEM;
}

int gpuos_service_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path) || !*path) {
		snprintf(err, errlen, "socket path empty or too long: %s", path);
		return -ENAMETOOLONG;
	}
	/* A socket someone else put there is not our service. */
	if (stat(path, &st) == 0 && st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, neither root nor you: refusing to trust it", path,
			 (unsigned)st.st_uid);
		return -EPERM;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, path, strlen(path));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "no gpuos service at %s: %s", path, strerror(e));
		return -e;
	}
	/* ... nor is a process of another user behind it. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || (cr.uid != 0 && cr.uid != geteuid())) {
		close(fd);
		snprintf(err, errlen, "the process at %s runs as uid %u, neither root nor you: refusing to trust it",
			 path, (unsigned)cr.uid);
		return -EPERM;
	}
	return fd;
}

/* Read one reply line (and a descriptor, when fd_out) within timeout_ms. */
static int recv_line(int fd, char *reply, size_t len, int timeout_ms, int *fd_out)
{
	size_t n = 0;
	if (fd_out)
		*fd_out = -1;
	while (n + 1 < len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = reply + n, .iov_len = 1 };
		struct msghdr m;
		struct cmsghdr *cm;
		ssize_t r;
		int pr = poll(&pf, 1, timeout_ms);
		if (pr == 0)
			return -ETIMEDOUT;
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		if (r <= 0)
			return -EIO;
		for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
			    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
				int got;
				memcpy(&got, CMSG_DATA(cm), sizeof(int));
				if (fd_out && *fd_out < 0)
					*fd_out = got;
				else
					close(got);
			}
		if (reply[n] == '\n')
			break;
		n++;
	}
	reply[n] = 0;
	return 0;
}

int gpuos_service_call(int fd, const char *line, char *reply, size_t len, int timeout_ms)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t w = send(fd, line + off, n - off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		off += (size_t)w;
	}
	return recv_line(fd, reply, len, timeout_ms, NULL);
}

/* Parse "ok heap_off=N heap_len=N shm_len=N share=K rt=N" exactly, and
 * after it " mem=vram" or " mem=host" where a GPU client asked (*vram). */
static int parse_attach(const char *reply, int gpu, uint64_t *off, uint64_t *len, uint64_t *shm_len,
			uint32_t *share, uint64_t *rt, int *vram)
{
	unsigned long long o, l, s, a;
	unsigned k;
	int used = -1;
	if (sscanf(reply, "ok heap_off=%llu heap_len=%llu shm_len=%llu share=%u rt=%llu%n", &o, &l, &s, &k, &a,
		   &used) != 5 ||
	    used < 0)
		return -1;
	reply += used;
	*vram = !strcmp(reply, " mem=vram");
	if (gpu ? !*vram && strcmp(reply, " mem=host") : reply[0] != 0)
		return -1;
	*off = o;
	*len = l;
	*shm_len = s;
	*share = k;
	*rt = a;
	return 0;
}

/* The area's own header, as the service wrote it: the layout this build
 * posts by, and device scope exactly where a GPU client asked. */
static int area_header_ok(const struct gpuos_mbox *mb, uint64_t off, int gpu)
{
	return mb->magic == GPUOS_MBOX_MAGIC && mb->version == GPUOS_ABI_VERSION && mb->nslots != 0 &&
	       mb->nparts != 0 && mb->nparts <= GPUOS_MBOX_MAX_PARTS && mb->nslots % mb->nparts == 0 &&
	       mb->nslots / mb->nparts <= GPUOS_MBOX_MAX_PER_PART && mb->slots_off == sizeof(struct gpuos_mbox) &&
	       gpuos_mbox_bytes(mb->nslots) <= off &&
	       mb->ring_off == sizeof(struct gpuos_mbox) + (uint64_t)mb->nslots * sizeof(struct gpuos_mbox_slot) &&
	       (mb->flags == GPUOS_MBOX_F_DEVICE) == (gpu != 0) && (mb->flags & ~GPUOS_MBOX_F_DEVICE) == 0;
}

/* ---- the client's side: the connection's watcher ----------------------------------------
 * A thread from attach to detach (host.h, gpuos_service_gone): every wait
 * of an attached client ends, with GPUOS_ST_GONE when the service closed
 * the connection (it stopped, or died: the kernel closes a dead process's
 * sockets) or answered nothing for the client timeout while requests
 * waited. */
struct svc_watch {
	pthread_t th;
	int sock;                /* the attach connection (the client's, not closed here) */
	int wake[2];             /* detach writes a byte: the thread ends */
	struct gpuos_mbox_slot *slots; /* the area's slots, host mapping; NULL: a VRAM area */
	uint32_t nslots;         /* from the header as attach checked it */
	uint64_t timeout_ms;
	int gone;                /* 0, 1: closed, 2: no answer in time (atomic) */
	/* Held while the thread polls and reads the connection, and by a call
	 * of the client's on it (attached_call): the thread, which drops what
	 * the service sends, never takes a reply meant for the call. */
	pthread_mutex_t io;
	int nudge[2];            /* a call writes a byte: the thread lets go of io at once */
	/* Calls waiting for io (atomic; one less under io). The thread does not
	 * take io again while one waits: a mutex is not fair, and the thread,
	 * which takes it back microseconds after it lets go, kept a waiting
	 * call out for seconds (measured: 413 ms median for a 4 KiB read). */
	uint32_t want;
	pthread_cond_t turn;     /* broadcast under io when a call ends */
};

static uint64_t client_timeout_ms(void)
{
	const char *e = getenv("GPUOS_CLIENT_TIMEOUT_MS");
	char *end;
	unsigned long long v;
	if (!e || !*e)
		return GPUOS_CLIENT_TIMEOUT_MS;
	v = strtoull(e, &end, 10);
	return *end || v == 0 ? GPUOS_CLIENT_TIMEOUT_MS : (uint64_t)v;
}

/* The requests waiting in the area: completed with GPUOS_ST_GONE once the
 * service is gone. Their result fields first, then DONE with release
 * (pairs with the client's acquire of state in gpuos_poll); a compare and
 * swap, so that a slot the service answered meanwhile, or one the client
 * has taken again, is left as it is. Returns how many wait; *sum adds up
 * the slots' completion times (they change whenever the service answers). */
static uint32_t watch_scan(struct svc_watch *w, int gone, uint64_t *sum)
{
	uint32_t i, waiting = 0;
	*sum = 0;
	for (i = 0; i < w->nslots; i++) {
		struct gpuos_mbox_slot *s = &w->slots[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		*sum += __atomic_load_n(&s->t_done_ns, __ATOMIC_RELAXED);
		if (st != GPUOS_SLOT_POSTED && st != GPUOS_SLOT_TAKEN)
			continue;
		waiting++;
		if (!gone)
			continue;
		__atomic_store_n(&s->nvme_status, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->result, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->result2, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->status, GPUOS_ST_GONE, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&s->state, &st, GPUOS_SLOT_DONE, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	return waiting;
}

static void *watch_main(void *p)
{
	struct svc_watch *w = p;
	uint64_t last = 0, t_answer = now_ms();
	int gone = 0;

	for (;;) {
		struct pollfd pf[3] = { { .fd = w->wake[0], .events = POLLIN },
					{ .fd = w->sock, .events = POLLIN | POLLRDHUP },
					{ .fd = w->nudge[0], .events = POLLIN } };
		uint64_t sum = 0, t;
		uint32_t waiting;
		/* Once gone, requests posted later are answered within 10 ms. A
		 * call nudges: the thread lets go of io, and waits for it. */
		pthread_mutex_lock(&w->io);
		/* calls first (pairs with the increment in attached_call, made
		 * before its nudge: one that came after this look nudges the poll) */
		while (__atomic_load_n(&w->want, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&w->turn, &w->io);
		pf[1].fd = gone ? -1 : w->sock;
		if (poll(pf, 3, gone ? 10 : 100) < 0 && errno != EINTR)
			pf[0].revents = POLLIN; /* cannot watch: end (detach still joins) */
		if (pf[2].revents) {
			char b[16];
			while (read(w->nudge[0], b, sizeof(b)) > 0)
				;
		} else if (!pf[0].revents && !gone && pf[1].revents) {
			char b[256];
			ssize_t r = recv(w->sock, b, sizeof(b), MSG_DONTWAIT);
			/* The service sends nothing after the attach reply but to a
			 * call (which holds io): what it might send is dropped; an end
			 * of file is its end. */
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				gone = 1;
		}
		pthread_mutex_unlock(&w->io);
		if (pf[0].revents)
			break;
		waiting = w->slots ? watch_scan(w, 0, &sum) : 0;
		t = now_ms();
		if (!waiting || sum != last)
			t_answer = t; /* nothing waits, or something was answered */
		last = sum;
		if (!gone && waiting && t - t_answer >= w->timeout_ms) {
			gone = 2;
			/* The service lets the share go as it does for any client that leaves. */
			shutdown(w->sock, SHUT_RDWR);
		}
		if (gone) {
			/* Before the requests' answers: a client that sees GPUOS_ST_GONE
			 * finds gpuos_service_gone set. */
			__atomic_store_n(&w->gone, gone, __ATOMIC_RELEASE);
			if (w->slots)
				watch_scan(w, gone, &sum);
		}
	}
	return NULL;
}

static void watch_stop(struct svc_watch *w)
{
	if (!w)
		return;
	if (write(w->wake[1], "x", 1) != 1) {
		/* the pipe holds a byte already: the thread wakes all the same */
	}
	pthread_join(w->th, NULL);
	close(w->wake[0]);
	close(w->wake[1]);
	close(w->nudge[0]);
	close(w->nudge[1]);
	pthread_mutex_destroy(&w->io);
	pthread_cond_destroy(&w->turn);
	free(w);
}

/* The watcher of an attached client; NULL when there can be none (no
 * memory, no thread): its waits are then bounded only by the service. */
static struct svc_watch *watch_start(int sock, struct gpuos_mbox_slot *slots, uint32_t nslots)
{
	struct svc_watch *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int r;
	if (!w)
		return NULL;
	w->sock = sock;
	w->slots = slots;
	w->nslots = nslots;
	w->timeout_ms = client_timeout_ms();
	pthread_mutex_init(&w->io, NULL);
	pthread_cond_init(&w->turn, NULL);
	if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK)) {
		free(w);
		return NULL;
	}
	if (pipe2(w->nudge, O_CLOEXEC | O_NONBLOCK)) {
		close(w->wake[0]);
		close(w->wake[1]);
		free(w);
		return NULL;
	}
	/* Signals stay the caller's threads' business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&w->th, NULL, watch_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		close(w->wake[0]);
		close(w->wake[1]);
		close(w->nudge[0]);
		close(w->nudge[1]);
		free(w);
		return NULL;
	}
	return w;
}

int gpuos_service_gone(const struct gpuos_attached *at)
{
	const struct svc_watch *w = at->watch;
	return w ? __atomic_load_n(&w->gone, __ATOMIC_ACQUIRE) : 0;
}

/* Map the area sfd names: host memory with mmap, VRAM through the Driver
 * API (its header copied out to check). */
static int area_map_client(struct gpuos_attached *at, int sfd, int vram, uint64_t off, struct gpuos_mbox *hdr,
			   char *err, size_t errlen)
{
	struct stat st;
	if (vram) {
		uint64_t va = 0, h = 0;
		int r = gpuos_gpu_vmm_import(sfd, at->shm_len, &va, &h, hdr, sizeof(*hdr), err, errlen);
		if (r)
			return r;
		at->shm = (void *)(uintptr_t)va;
		at->vram = 1;
		at->vram_handle = h;
		return 0;
	}
	if (fstat(sfd, &st) || (uint64_t)st.st_size != at->shm_len || at->shm_len < off) {
		snprintf(err, errlen, "the service's client memory is not the size it said");
		return -EPROTO;
	}
	at->shm = mmap(NULL, at->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (at->shm == MAP_FAILED) {
		at->shm = NULL;
		snprintf(err, errlen, "map the service's shared memory: %s", strerror(errno));
		return -EIO;
	}
	memcpy(hdr, at->shm, sizeof(*hdr));
	return 0;
}

/* The attach request and its reply; the connection, or -errno (err says
 * why). A refusal that passes (shares being given back: SVC_DRAINING) is
 * asked again: they come free once the service has renewed them (paced:
 * renew_due), in seconds on a loaded machine. A hang guard, not a bound on
 * the service's speed: it gives up once its answer has stayed the same for
 * the client timeout (an app that holds renewals up, a runtime that no
 * longer answers). *r: recv_line's result. */
static int attach_ask(const char *path, const char *req, char *reply, size_t len, int *sfd, int *r, char *err,
		      size_t errlen)
{
	char last[512] = "";
	uint64_t t0 = now_ms();
	int fd;

	for (;; usleep(50000)) {
		fd = gpuos_service_connect(path, err, errlen);
		if (fd < 0)
			return fd;
		*r = send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req)
			     ? recv_line(fd, reply, len, (int)client_timeout_ms(), sfd)
			     : -EIO;
		if (*r || !strstr(reply, SVC_DRAINING))
			return fd;
		if (strcmp(reply, last)) { /* progress: shares came free (and went to others) */
			snprintf(last, sizeof(last), "%s", reply);
			t0 = now_ms();
		} else if (now_ms() - t0 >= client_timeout_ms()) {
			snprintf(reply + strlen(reply), len - strlen(reply), "; still so after %llu s",
				 (unsigned long long)(client_timeout_ms() / 1000u));
			return fd;
		}
		close(fd);
		if (*sfd >= 0)
			close(*sfd);
		*sfd = -1;
	}
}

static int attach(const char *path, int gpu, struct gpuos_attached *at, char *err, size_t errlen)
{
	char reply[512];
	struct gpuos_mbox *hdr = malloc(sizeof(*hdr)); /* 16 KiB: off the stack */
	uint64_t off, len, shm_len, rt;
	int fd, sfd = -1, r = 0, vram = 0;

	memset(at, 0, sizeof(*at));
	at->sock = -1;
	if (!hdr) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fd = attach_ask(path, gpu ? "attach gpu\n" : "attach\n", reply, sizeof(reply), &sfd, &r, err, errlen);
	if (fd < 0) {
		free(hdr);
		return fd;
	}
	if (r || strncmp(reply, "ok ", 3)) {
		snprintf(err, errlen, "service at %s refused to attach: %s", path,
			 r == -ETIMEDOUT ? "no answer in time" : r ? "connection lost" : reply);
		goto fail;
	}
	/* Every number from the service is checked before it is used, in an
	 * order that cannot overflow. */
	if (parse_attach(reply, gpu, &off, &len, &shm_len, &at->share, &rt, &vram) || sfd < 0 ||
	    off < sizeof(struct gpuos_mbox) || len == 0 || off > shm_len || len > shm_len - off || rt + shm_len < rt) {
		snprintf(err, errlen, "service at %s sent a malformed attach reply: %.200s", path, reply);
		r = -EPROTO;
		goto fail;
	}
	at->shm_len = shm_len;
	r = area_map_client(at, sfd, vram, off, hdr, err, errlen);
	if (r)
		goto fail;
	close(sfd);
	sfd = -1;
	/* The client's own area: its mailbox, then its share at off. */
	if (!area_header_ok(hdr, off, gpu)) {
		snprintf(err, errlen, "the service's client memory has another layout (ABI %u, ours %u)", hdr->version,
			 GPUOS_ABI_VERSION);
		r = -EPROTO;
		goto fail;
	}
	at->mb = (struct gpuos_mbox *)at->shm;
	at->heap = (char *)at->shm + off;
	at->heap_rt = rt + off;
	at->heap_len = len;
	at->sock = fd; /* held open: the service gives the share back when it closes */
	/* The slots as the checked copy of the header places them (they end
	 * before the share: area_header_ok). */
	at->watch = watch_start(fd, at->vram ? NULL : (struct gpuos_mbox_slot *)((char *)at->shm + sizeof(*hdr)),
				hdr->nslots);
	free(hdr);
	return 0;
fail:
	if (sfd >= 0)
		close(sfd);
	close(fd);
	gpuos_service_detach(at);
	free(hdr);
	return r ? r : -EIO;
}

int gpuos_service_attach(const char *path, struct gpuos_attached *at, char *err, size_t errlen)
{
	return attach(path, 0, at, err, errlen);
}

int gpuos_service_attach_gpu(const char *path, struct gpuos_attached *at, char *err, size_t errlen)
{
	return attach(path, 1, at, err, errlen);
}

/* One call on the attached connection, its descriptor (fd >= 0) with it:
 * the watcher, which reads and drops what the service sends, stands aside
 * meanwhile (its io lock). A call that gets no answer in time ends the
 * connection: a late reply must never be taken for the next call's. */
static int attached_call(struct gpuos_attached *at, const char *line, int fd, char *reply, size_t len)
{
	struct svc_watch *w = at->watch;
	int r;
	if (at->sock < 0 || gpuos_service_gone(at))
		return -EPIPE;
	if (w) {
		/* release: the watcher's acquire load sees it before it polls again */
		__atomic_add_fetch(&w->want, 1, __ATOMIC_RELEASE);
		if (write(w->nudge[1], "n", 1) != 1) {
			/* the pipe holds a byte already: the thread lets go all the same */
		}
		pthread_mutex_lock(&w->io);
		__atomic_sub_fetch(&w->want, 1, __ATOMIC_RELAXED); /* under io: the watcher reads it there */
	}
	r = send_line_fd(at->sock, line, fd);
	if (!r)
		r = recv_line(at->sock, reply, len, (int)client_timeout_ms(), NULL);
	if (r == -ETIMEDOUT)
		shutdown(at->sock, SHUT_RDWR); /* the watcher sees the end: the service is gone for us */
	if (w) {
		pthread_cond_broadcast(&w->turn); /* the watcher goes on once no call waits */
		pthread_mutex_unlock(&w->io);
	}
	return r;
}

/* register and unregister answer "ok ..." or "err WHY"; busy: asked again
 * for a while (an app of the service is loading). */
static int attached_ask(struct gpuos_attached *at, const char *line, int fd, char *reply, size_t len, char *err,
			size_t errlen)
{
	uint64_t t0 = now_ms();
	int r;
	for (;;) {
		r = attached_call(at, line, fd, reply, len);
		if (r) {
			snprintf(err, errlen, "the service %s", r == -ETIMEDOUT ? "did not answer in time" : "is gone");
			return r;
		}
		if (strncmp(reply, "err busy", 8) || now_ms() - t0 > client_timeout_ms())
			break;
		usleep(20000);
	}
	if (!strncmp(reply, "ok", 2))
		return 0;
	snprintf(err, errlen, "%s", !strncmp(reply, "err ", 4) ? reply + 4 : reply);
	return strstr(reply, "registers") ? -ENOSPC : strstr(reply, "busy") ? -EBUSY : strstr(reply, "no memory of yours")
		? -ENOENT : strstr(reply, "host mode") ? -EOPNOTSUPP : strstr(reply, "passes the end") ? -ERANGE : -EINVAL;
}

int gpuos_service_register(struct gpuos_attached *at, const struct gpuos_client_mem *m, uint64_t *rt, char *err,
			   size_t errlen)
{
	char line[64 + 2 * GPUOS_GPU_IPC_HANDLE], reply[256];
	unsigned long long v = 0;
	int used = -1, r, n;
	*rt = 0;
	if (m->vram) {
		n = snprintf(line, sizeof(line), "register vram off=%llu len=%llu ipc=", (unsigned long long)m->offset,
			     (unsigned long long)m->len);
		for (unsigned i = 0; i < GPUOS_GPU_IPC_HANDLE; i++)
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%02x", m->ipc[i]);
		snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	} else {
		snprintf(line, sizeof(line), "register host off=%llu len=%llu\n", (unsigned long long)m->offset,
			 (unsigned long long)m->len);
	}
	r = attached_ask(at, line, m->vram ? -1 : m->fd, reply, sizeof(reply), err, errlen);
	if (r)
		return r;
	if (sscanf(reply, "ok rt=%llu%n", &v, &used) != 1 || reply[used] || v == 0) {
		snprintf(err, errlen, "the service sent a malformed register reply: %.100s", reply);
		return -EPROTO;
	}
	*rt = v;
	return 0;
}

int gpuos_service_unregister(struct gpuos_attached *at, uint64_t rt, char *err, size_t errlen)
{
	char line[64], reply[256];
	snprintf(line, sizeof(line), "unregister rt=%llu\n", (unsigned long long)rt);
	return attached_ask(at, line, -1, reply, sizeof(reply), err, errlen);
}

void gpuos_service_detach(struct gpuos_attached *at)
{
	watch_stop(at->watch); /* before the mapping it scans goes */
	if (at->shm && at->vram)
		gpuos_gpu_vmm_unimport((uint64_t)(uintptr_t)at->shm, at->shm_len, at->vram_handle);
	else if (at->shm)
		munmap(at->shm, at->shm_len);
	if (at->sock >= 0)
		close(at->sock);
	memset(at, 0, sizeof(*at));
	at->sock = -1;
}
