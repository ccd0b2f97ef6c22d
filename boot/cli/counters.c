/* SPDX-License-Identifier: MIT */
/*
 * The life of a command in numbers (docs/design.md, "The life of a
 * command"), after gpuos read, cat and run: what the runtime had to do
 * beyond asking and being answered (retries, aborts, resets, timeouts) and
 * what the controller did that it should not have (strays, duplicates, and
 * the requests those made untrusted). One line of text on stderr when any
 * is not 0, or with --stats; --stats adds the same as one JSON object on a
 * line of its own (gpuos.stats/1, docs/json.md), which tests read
 * (tests/qemu). stdout stays the command's: the bytes of read and cat, the
 * app's report of run.
 *
 *   gpuos read: counters: retries 0, aborts 0, resets 0, strays 1, duplicates 1, untrusted 1, timeouts 0
 *   gpuos read: controller emu:disk.img: io_fetched 12, io_cmds 12, errors 0, dma_faults 0, lost 0, dups 1, cid_conflicts 0
 *   {"schema": "gpuos.stats/1", "command": "read", "source": "runtime", ...}
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

/* The counters this prints, in the order it prints them; of a service, as
 * its stats line names them (boot/service.c). */
struct counts {
	uint64_t requests, errors, commands;
	uint64_t retries, aborts, resets, strays, duplicates, untrusted, timeouts;
	int have_dup, have_untrusted;   /* a service may be older than these two */
};

/* A controller that counts for itself without a command of its own (the
 * emulator, and null which is the emulator too): asking a real SSD means
 * reading its SMART log through the admin queue, no cheap thing to do
 * after every command, and QEMU would count that command too. */
static int ctrl_counts_itself(const struct cli *c)
{
	const char *d = c->boot.device;
	return d && (!strncmp(d, "emu:", 4) || !strncmp(d, "null", 4));
}

/* "key": N in the service's stats line; 0, or -1 when absent or malformed. */
static int line_u64(const char *line, const char *key, uint64_t *v)
{
	char pat[48];
	const char *p;
	char *end;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return errno || end == p ? -1 : 0;
}

/* The service's counters, through its socket. 0, or -1 with why. */
static int service_counts(const char *sock, struct counts *k, char *why, size_t len)
{
	char reply[1024] = "";
	int fd = gpuos_service_connect(sock, why, len), r;
	if (fd < 0)
		return -1;
	r = gpuos_service_call(fd, "stats\n", reply, sizeof(reply), GPUOS_CLIENT_TIMEOUT_MS);
	close(fd);
	if (r || reply[0] != '{') {
		snprintf(why, len, "the service did not answer stats%s%.200s", reply[0] ? ": " : "", reply);
		return -1;
	}
	if (line_u64(reply, "requests", &k->requests) || line_u64(reply, "errors", &k->errors) ||
	    line_u64(reply, "commands", &k->commands) || line_u64(reply, "retries", &k->retries) ||
	    line_u64(reply, "aborts", &k->aborts) || line_u64(reply, "resets", &k->resets) ||
	    line_u64(reply, "strays", &k->strays) || line_u64(reply, "timeouts", &k->timeouts)) {
		snprintf(why, len, "the service's stats line lacks a counter: %.300s", reply);
		return -1;
	}
	k->have_dup = !line_u64(reply, "duplicates", &k->duplicates);
	k->have_untrusted = !line_u64(reply, "untrusted", &k->untrusted);
	return 0;
}

/* Exact counts: the runtime publishes every warp's when it parks (a
 * running one now and then). It is shut down next, and a parked runtime
 * shuts down as a running one does. */
static void runtime_counts(struct gpuos_sys *s, struct gpuos_stats *st)
{
	char e[256];
	gpuos_sys_stats(s, st);
	if (st->state == GPUOS_RT_STATE_RUNNING && !gpuos_park(s, e, sizeof(e)))
		gpuos_sys_stats(s, st);
}

static void num(FILE *f, const char *sep, const char *key, int have, uint64_t v)
{
	if (have)
		fprintf(f, "%s%s %llu", sep, key, (unsigned long long)v);
	else
		fprintf(f, "%s%s ?", sep, key);
}

static void json_num(struct json *j, const char *key, int have, uint64_t v)
{
	if (have)
		json_u64(j, key, v);
	else
		json_null(j, key);
}

/* What a command saw: the counters and, of a runtime booted here, its
 * controllers' own where they count for themselves. */
struct seen {
	struct counts k;
	int runtime;                    /* else a service's, through its socket */
	const struct gpuos_info *in;    /* of the runtime */
	struct gpuos_stats st;
	struct gpuos_ctrl_stats cs[GPUOS_MAX_CTRL];
	int have_cs[GPUOS_MAX_CTRL];
	uint32_t nctrl;
	int ctrl_odd, dup_odd;          /* something a controller should not have done */
};

/* A runtime booted here: its exact counts, and its controllers' own. */
static void seen_runtime(const struct cli *c, struct gpuos_sys *s, struct seen *w)
{
	struct counts *k = &w->k;
	uint32_t i;

	w->runtime = 1;
	w->in = gpuos_sys_info(s);
	runtime_counts(s, &w->st);
	k->requests = w->st.requests;
	k->errors = w->st.errors;
	k->commands = w->st.commands;
	k->retries = w->st.retries;
	k->aborts = w->st.aborts;
	k->resets = w->st.resets;
	k->strays = w->st.strays;
	k->duplicates = w->st.duplicates;
	k->untrusted = w->st.untrusted;
	k->timeouts = w->st.timeouts;
	k->have_dup = k->have_untrusted = 1;
	w->nctrl = w->in->nctrl < GPUOS_MAX_CTRL ? w->in->nctrl : GPUOS_MAX_CTRL;
	for (i = 0; i < w->nctrl; i++) {
		w->dup_odd |= w->st.dup_by_ctrl[i] != 0;
		if (ctrl_counts_itself(c) && !gpuos_sys_ctrl_stats(s, i, &w->cs[i])) {
			w->have_cs[i] = 1;
			w->ctrl_odd |= w->cs[i].dma_faults || w->cs[i].lost || w->cs[i].cid_conflicts;
		}
	}
}

/* The counters' line, and a line for each controller that counts. */
static void write_text(FILE *f, const char *cmd, const struct seen *w)
{
	const struct counts *k = &w->k;
	const struct gpuos_ctrl_stats *cs = w->cs;
	uint32_t i;

	fprintf(f, "gpuos %s: %s: ", cmd, w->runtime ? "counters" : "service counters (all its clients, since it started)");
	num(f, "", "retries", 1, k->retries);
	num(f, ", ", "aborts", 1, k->aborts);
	num(f, ", ", "resets", 1, k->resets);
	num(f, ", ", "strays", 1, k->strays);
	num(f, ", ", "duplicates", k->have_dup, k->duplicates);
	num(f, ", ", "untrusted", k->have_untrusted, k->untrusted);
	num(f, ", ", "timeouts", 1, k->timeouts);
	if (w->dup_odd && w->nctrl > 1) {
		fprintf(f, " (duplicates by controller:");
		for (i = 0; i < w->nctrl; i++)
			fprintf(f, " %u", w->st.dup_by_ctrl[i]);
		fputc(')', f);
	}
	fputc('\n', f);
	for (i = 0; i < w->nctrl; i++) {
		if (!w->have_cs[i])
			continue;
		fprintf(f, "gpuos %s: controller ", cmd);
		cli_put_escaped(f, w->in->ctrl[i].name, strnlen(w->in->ctrl[i].name, sizeof(w->in->ctrl[i].name)));
		fprintf(f, ": io_fetched %llu, io_cmds %llu, errors %llu, dma_faults %llu, lost %llu, dups %llu, "
			"cid_conflicts %llu\n", (unsigned long long)cs[i].io_fetched, (unsigned long long)cs[i].io_cmds,
			(unsigned long long)cs[i].errors, (unsigned long long)cs[i].dma_faults, (unsigned long long)cs[i].lost,
			(unsigned long long)cs[i].dups, (unsigned long long)cs[i].cid_conflicts);
	}
}

/* The runtime's controllers in the JSON: each one's duplicates, name and
 * own counters. */
static void json_controllers(struct json *j, const struct seen *w)
{
	const struct gpuos_ctrl_stats *cs = w->cs;
	uint32_t i;

	json_arr(j, "duplicates_by_controller");
	for (i = 0; i < w->nctrl; i++)
		json_u64(j, NULL, w->st.dup_by_ctrl[i]);
	json_end(j);
	json_arr(j, "controllers");
	for (i = 0; i < w->nctrl; i++) {
		json_obj(j, NULL);
		json_u64(j, "index", i);
		json_strn(j, "name", w->in->ctrl[i].name, strnlen(w->in->ctrl[i].name, sizeof(w->in->ctrl[i].name)));
		if (w->have_cs[i]) {
			json_obj(j, "counters");
			json_u64(j, "io_fetched", cs[i].io_fetched);
			json_u64(j, "io_cmds", cs[i].io_cmds);
			json_u64(j, "errors", cs[i].errors);
			json_u64(j, "dma_faults", cs[i].dma_faults);
			json_u64(j, "lost", cs[i].lost);
			json_u64(j, "dups", cs[i].dups);
			json_u64(j, "cid_conflicts", cs[i].cid_conflicts);
			json_end(j);
		}
		json_end(j);
	}
	json_end(j);
}

/* The same as one JSON object on a line (gpuos.stats/1). */
static void write_json(FILE *f, const char *cmd, const struct cli *c, const struct seen *w)
{
	const struct counts *k = &w->k;
	struct json j;

	json_begin(&j, f, "stats");
	json_str(&j, "command", cmd);
	json_str(&j, "source", w->runtime ? "runtime" : "service");
	if (w->runtime)
		json_str(&j, "device", c->boot.device);
	else
		json_str(&j, "socket", c->socket);
	json_u64(&j, "requests", k->requests);
	json_u64(&j, "errors", k->errors);
	json_u64(&j, "commands", k->commands);
	json_u64(&j, "retries", k->retries);
	json_u64(&j, "aborts", k->aborts);
	json_u64(&j, "resets", k->resets);
	json_u64(&j, "strays", k->strays);
	json_num(&j, "duplicates", k->have_dup, k->duplicates);
	json_num(&j, "untrusted", k->have_untrusted, k->untrusted);
	json_u64(&j, "timeouts", k->timeouts);
	if (w->runtime)
		json_controllers(&j, w);
	json_finish(&j);
}

void cli_counters(const char *cmd, const struct cli *c, struct gpuos_sys *s)
{
	struct seen w;
	const struct counts *k = &w.k;
	char why[512], *buf = NULL;
	size_t len = 0;
	FILE *f;

	memset(&w, 0, sizeof(w));
	if (s) {
		seen_runtime(c, s, &w);
	} else if (c->socket && c->stats) {
		if (service_counts(c->socket, &w.k, why, sizeof(why))) {
			cli_err(cmd, "the service's counters: %s", why);
			return;
		}
	} else {
		return; /* a service's counts are not this command's: only asked for */
	}
	if (!c->stats && !w.ctrl_odd && !k->retries && !k->aborts && !k->resets && !k->strays && !k->duplicates &&
	    !k->untrusted && !k->timeouts)
		return;

	/* Built whole, then written at once: stderr is unbuffered, and the
	 * emulator's threads may print on it too. */
	f = open_memstream(&buf, &len);
	if (!f)
		return;
	write_text(f, cmd, &w);
	if (c->stats)
		write_json(f, cmd, c, &w);
	if (fclose(f) == 0 && buf)
		cli_write_all(2, buf, len);
	free(buf);
}
