/* SPDX-License-Identifier: MIT */
/*
 * gpuos status [--json] [--socket PATH]: a running service as it sees
 * itself: its runtime (GPU or CPU threads) and device, its pid, uid and
 * uptime, what boot found of MPS, the clients attached now (share, kind,
 * pid, uid, how long, what each posted) and the runtime's counters. Asked
 * through the control socket's `status` request (boot/service.c,
 * status_line, which says what each key of the reply is); the JSON is
 * gpuos.status/1 (docs/json.md). Anyone who may attach may ask; another
 * user's clients show no pid or uid to a viewer who is neither root nor
 * the service's uid (docs/security.md).
 *
 *   socket      /run/gpuos/gpuos.sock
 *   runtime     host (CPU threads), running
 *   device      emu:/var/lib/gpuos/disk.img
 *   service     pid 4120, uid 0, up 2h 05m 11s
 *   MPS         none (host mode)
 *   clients     2 attached (2 of 8 host shares, 0 of 0 GPU areas), 3 connections, 0 apps
 *     SHARE  KIND  PID      UID      CONNECTED  POSTED
 *     1      host  5012     1000     1m 02s     1203
 *   requests    1203 answered, 1.2 GiB, 0 errors
 *   counters    commands 9650, timeouts 0, retries 0, ...
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

#define STATUS_REPLY_MAX (64u << 10)
#define STATUS_MAX_CLIENTS 64u

/* The runtime's counters, in the order text and JSON print them. */
static const char *const totals[] = {
	"requests", "bytes", "errors", "commands", "timeouts", "retries", "aborts", "resets",
	"strays", "duplicates", "untrusted", "zero_copy", "doorbells", "polls",
};
#define NTOTALS (sizeof(totals) / sizeof(totals[0]))

struct st_client {
	unsigned long long share, pid, uid, conn_ms, posted;
	int have_who, have_posted;
	char kind[8];
};

/* The reply, decoded: a text value is NULL where the service left its key out. */
struct status {
	char *runtime, *gpu, *device, *socket, *state, *fatal, *mps, *mps_text, *mps_dir, *mps_log, *mps_why;
	unsigned long long pid, uid, uptime_ms, viewer_uid, viewer_all, connections, apps, host_shares, gpu_areas;
	unsigned long long total[NTOTALS];
	int have_total[NTOTALS];
	struct st_client client[STATUS_MAX_CLIENTS];
	unsigned nclients;
};

/* %XX back into bytes, in place. 0, or -1 for a malformed escape. */
static int unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		unsigned v;
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if (sscanf(s + 1, "%2x", &v) != 1 || !s[1] || !s[2])
			return -1;
		*o++ = (char)v;
		s += 2;
	}
	*o = 0;
	return 0;
}

static int num(const char *v, unsigned long long *out)
{
	char *end;
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -1 : 0;
}

/* client=SHARE,KIND,PID,UID,CONNECTED_MS,POSTED ("?" for PID and UID
 * withheld, for POSTED not counted). */
static int parse_client(char *v, struct st_client *c)
{
	char *f[6], *save = NULL, *p;
	unsigned n = 0;
	for (p = strtok_r(v, ",", &save); p && n < 6; p = strtok_r(NULL, ",", &save))
		f[n++] = p;
	if (n != 6 || p || num(f[0], &c->share) || (strcmp(f[1], "host") && strcmp(f[1], "gpu")) ||
	    num(f[4], &c->conn_ms))
		return -1;
	snprintf(c->kind, sizeof(c->kind), "%s", f[1]);
	c->have_who = strcmp(f[2], "?") != 0;
	if (c->have_who && (num(f[2], &c->pid) || num(f[3], &c->uid)))
		return -1;
	if (!c->have_who && strcmp(f[3], "?"))
		return -1;
	c->have_posted = strcmp(f[5], "?") != 0;
	return c->have_posted && num(f[5], &c->posted) ? -1 : 0;
}

/* "ok status/1 KEY=VALUE ..." into *st (its strings point into line).
 * Keys it does not know are skipped: a newer service may say more. */
static int parse(char *line, struct status *st)
{
	static const struct { const char *key; size_t off; } texts[] = {
		{ "runtime", offsetof(struct status, runtime) }, { "gpu", offsetof(struct status, gpu) },
		{ "device", offsetof(struct status, device) }, { "socket", offsetof(struct status, socket) },
		{ "state", offsetof(struct status, state) }, { "fatal", offsetof(struct status, fatal) },
		{ "mps", offsetof(struct status, mps) },
		{ "mps_text", offsetof(struct status, mps_text) }, { "mps_dir", offsetof(struct status, mps_dir) },
		{ "mps_log", offsetof(struct status, mps_log) }, { "mps_why", offsetof(struct status, mps_why) },
	};
	static const struct { const char *key; size_t off; } nums[] = {
		{ "pid", offsetof(struct status, pid) }, { "uid", offsetof(struct status, uid) },
		{ "uptime_ms", offsetof(struct status, uptime_ms) }, { "viewer_uid", offsetof(struct status, viewer_uid) },
		{ "viewer_all", offsetof(struct status, viewer_all) },
		{ "connections", offsetof(struct status, connections) }, { "apps", offsetof(struct status, apps) },
		{ "host_shares", offsetof(struct status, host_shares) }, { "gpu_areas", offsetof(struct status, gpu_areas) },
	};
	unsigned seen = 0;
	char *save = NULL, *tok;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (strncmp(line, "ok status/1 ", 12))
		return -1;
	for (tok = strtok_r(line + 12, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *v = strchr(tok, '=');
		if (!v)
			return -1;
		*v++ = 0;
		if (!strcmp(tok, "client")) {
			if (st->nclients == STATUS_MAX_CLIENTS || parse_client(v, &st->client[st->nclients]))
				return -1;
			st->nclients++;
			continue;
		}
		if (unescape(v))
			return -1;
		for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			if (!strcmp(tok, texts[i].key))
				*(char **)((char *)st + texts[i].off) = v;
		for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
			if (!strcmp(tok, nums[i].key)) {
				if (num(v, (unsigned long long *)((char *)st + nums[i].off)))
					return -1;
				seen |= 1u << i;
			}
		for (i = 0; i < NTOTALS; i++)
			if (!strncmp(tok, "t.", 2) && !strcmp(tok + 2, totals[i])) {
				if (num(v, &st->total[i]))
					return -1;
				st->have_total[i] = 1;
			}
	}
	/* what every status/1 reply carries */
	return st->runtime && st->socket && st->state && seen == (1u << (sizeof(nums) / sizeof(nums[0]))) - 1u ? 0 : -1;
}

static int by_share(const void *a, const void *b)
{
	const struct st_client *x = a, *y = b;
	return x->share < y->share ? -1 : x->share > y->share;
}

/* "45s", "3m 05s", "2h 05m 11s", "4d 02h 05m" */
static const char *duration(char *buf, size_t len, unsigned long long ms)
{
	unsigned long long s = ms / 1000u;
	if (s < 60u)
		snprintf(buf, len, "%llus", s);
	else if (s < 3600u)
		snprintf(buf, len, "%llum %02llus", s / 60u, s % 60u);
	else if (s < 86400u)
		snprintf(buf, len, "%lluh %02llum %02llus", s / 3600u, s / 60u % 60u, s % 60u);
	else
		snprintf(buf, len, "%llud %02lluh %02llum", s / 86400u, s / 3600u % 24u, s / 60u % 60u);
	return buf;
}

static void text_line(const char *label, const char *value)
{
	printf("%-12s ", label);
	cli_put_escaped(stdout, value, strlen(value));
	putchar('\n');
}

static void print_text(const struct status *st)
{
	char buf[512], d[32], h[32];
	unsigned i, held[2] = { 0, 0 }, hidden = 0;

	text_line("socket", st->socket);
	snprintf(buf, sizeof(buf), "%s (%s), %s", st->runtime,
		 strcmp(st->runtime, "gpu") ? "CPU threads" : st->gpu ? st->gpu : "GPU", st->state);
	text_line("runtime", buf);
	if (st->fatal)
		text_line("failed", st->fatal); /* why the runtime is fatal */
	if (st->device)
		text_line("device", st->device);
	snprintf(buf, sizeof(buf), "pid %llu, uid %llu, up %s", st->pid, st->uid, duration(d, sizeof(d), st->uptime_ms));
	text_line("service", buf);
	if (st->mps_text)
		text_line("MPS", st->mps_text);
	for (i = 0; i < st->nclients; i++) {
		held[!strcmp(st->client[i].kind, "gpu")]++;
		hidden += !st->client[i].have_who;
	}
	snprintf(buf, sizeof(buf), "%u attached (%u of %llu host shares, %u of %llu GPU areas), %llu connection%s, %llu app%s",
		 st->nclients, held[0], st->host_shares, held[1], st->gpu_areas, st->connections,
		 st->connections == 1 ? "" : "s", st->apps, st->apps == 1 ? "" : "s");
	text_line("clients", buf);
	if (st->nclients)
		printf("  %-6s %-5s %-8s %-8s %-10s %s\n", "SHARE", "KIND", "PID", "UID", "CONNECTED", "POSTED");
	for (i = 0; i < st->nclients; i++) {
		const struct st_client *c = &st->client[i];
		char pid[24] = "?", uid[24] = "?", posted[24] = "?";
		if (c->have_who) {
			snprintf(pid, sizeof(pid), "%llu", c->pid);
			snprintf(uid, sizeof(uid), "%llu", c->uid);
		}
		if (c->have_posted)
			snprintf(posted, sizeof(posted), "%llu", c->posted);
		printf("  %-6llu %-5s %-8s %-8s %-10s %s\n", c->share, c->kind, pid, uid, duration(d, sizeof(d), c->conn_ms),
		       posted);
	}
	if (hidden)
		printf("  (?: another user's client, whose pid and uid only root and uid %llu see)\n", st->uid);
	if (st->have_total[0] && st->have_total[1] && st->have_total[2]) {
		snprintf(buf, sizeof(buf), "%llu answered, %s, %llu error%s", st->total[0],
			 cli_human(h, sizeof(h), st->total[1]), st->total[2], st->total[2] == 1 ? "" : "s");
		text_line("requests", buf);
	}
	printf("%-12s ", "counters");
	for (i = 3; i < NTOTALS; i++)
		if (st->have_total[i])
			printf("%s%s %llu", i > 3 ? ", " : "", totals[i], st->total[i]);
	putchar('\n');
}

static void json_text_or_null(struct json *j, const char *key, const char *v)
{
	if (v)
		json_str(j, key, v);
	else
		json_null(j, key);
}

static void print_json(const struct status *st)
{
	struct json j;
	unsigned i;

	json_begin(&j, stdout, "status");
	json_str(&j, "socket", st->socket);
	json_str(&j, "runtime", st->runtime);
	json_text_or_null(&j, "gpu", strcmp(st->runtime, "gpu") ? NULL : st->gpu);
	json_text_or_null(&j, "device", st->device);
	json_str(&j, "state", st->state);
	json_text_or_null(&j, "fatal", st->fatal);
	json_u64(&j, "pid", st->pid);
	json_u64(&j, "uid", st->uid);
	json_u64(&j, "uptime_s", st->uptime_ms / 1000u);
	json_obj(&j, "mps");
	json_str(&j, "state", st->mps ? st->mps : "unknown");
	json_text_or_null(&j, "text", st->mps_text);
	json_text_or_null(&j, "dir", st->mps_dir);
	json_text_or_null(&j, "log_dir", st->mps_log);
	json_text_or_null(&j, "warning", st->mps_why);
	json_end(&j);
	json_obj(&j, "viewer");
	json_u64(&j, "uid", st->viewer_uid);
	json_bool(&j, "sees_all", st->viewer_all != 0);
	json_end(&j);
	json_u64(&j, "connections", st->connections);
	json_u64(&j, "apps", st->apps);
	json_obj(&j, "shares");
	json_u64(&j, "host", st->host_shares);
	json_u64(&j, "gpu", st->gpu_areas);
	json_end(&j);
	json_arr_lines(&j, "clients");
	for (i = 0; i < st->nclients; i++) {
		const struct st_client *c = &st->client[i];
		json_obj(&j, NULL);
		json_u64(&j, "share", c->share);
		json_str(&j, "kind", c->kind);
		if (c->have_who) {
			json_u64(&j, "pid", c->pid);
			json_u64(&j, "uid", c->uid);
		} else {
			json_null(&j, "pid");
			json_null(&j, "uid");
		}
		json_u64(&j, "connected_s", c->conn_ms / 1000u);
		if (c->have_posted)
			json_u64(&j, "posted", c->posted);
		else
			json_null(&j, "posted");
		/* not counted per client by the runtime yet (docs/json.md) */
		json_null(&j, "requests");
		json_null(&j, "bytes");
		json_null(&j, "errors");
		json_end(&j);
	}
	json_end(&j);
	json_obj(&j, "totals");
	for (i = 0; i < NTOTALS; i++)
		if (st->have_total[i])
			json_u64(&j, totals[i], st->total[i]);
		else
			json_null(&j, totals[i]);
	json_end(&j);
	json_finish(&j);
}

int cmd_status(int argc, char **argv)
{
	struct cli c;
	struct status *st = NULL;
	char err[512], *reply = NULL;
	int fd, r, rc = GPUOS_EXIT_FAIL;

	if (cli_parse(&c, "status", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("status", "%s: status takes no arguments", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	fd = gpuos_service_connect(c.socket, err, sizeof(err));
	if (fd < 0) {
		cli_socket_hint(&c, 0, err, sizeof(err));
		cli_err("status", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	reply = malloc(STATUS_REPLY_MAX);
	st = malloc(sizeof(*st));
	if (!reply || !st) {
		cli_err("status", "out of memory");
		goto out;
	}
	reply[0] = 0;
	r = gpuos_service_call(fd, "status\n", reply, STATUS_REPLY_MAX, GPUOS_CLIENT_TIMEOUT_MS);
	if (r == -EIO && !reply[0]) {
		/* A service that refused us may have closed before our line went:
		 * its reason is still there to read. */
		ssize_t n = recv(fd, reply, STATUS_REPLY_MAX - 1, MSG_DONTWAIT);
		if (n > 0) {
			reply[n] = 0;
			reply[strcspn(reply, "\n")] = 0;
			r = 0;
		}
	}
	if (r || strncmp(reply, "ok ", 3)) {
		cli_err("status", "the service at %s %s%.300s", c.socket,
			r ? "did not answer status" : !strcmp(reply, "err unknown request")
						      ? "does not know status (an older gpuos): "
						      : "refused status: ",
			r ? "" : reply);
		goto out;
	}
	if (parse(reply, st)) {
		cli_err("status", "the service at %s sent a malformed status reply", c.socket);
		goto out;
	}
	qsort(st->client, st->nclients, sizeof(st->client[0]), by_share);
	if (c.json)
		print_json(st);
	else
		print_text(st);
	rc = GPUOS_EXIT_OK;
out:
	close(fd);
	free(reply);
	free(st);
	return rc;
}
