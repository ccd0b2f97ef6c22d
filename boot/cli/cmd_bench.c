/* SPDX-License-Identifier: MIT */
/*
 * gpuos bench --device DEV [--threads T] [--iters N] [--bytes B] [--op read|nop]
 *             [--stages] [--warps W] [--queues Q] [--host] [--json]
 * Requests per second and round-trip latency through the whole path, with
 * GPU threads as clients (a kernel of the runtime image) when the runtime
 * runs on the GPU, CPU threads otherwise. Also the CPU time the process used
 * during the run, without the emulated controller's own threads.
 * --stages: where the time goes, from the runtime's stamps in the mailbox
 * slots (a runtime built with GPUOS_TRACE; docs/benchmarks-log.md).
 * --gpus LIST: a group (gpuos_boot_group), a runtime per GPU listed on the
 * device's controllers, each with the same clients, all at once; the
 * figures of each and of all together (requests over the wall clock of
 * the whole run).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpuos/bench.h"
#include "json.h"

#define BENCH_ITERS    1000u      /* requests per thread unless --iters says */
#define BENCH_BYTES    4096u      /* bytes per request unless --bytes says */
#define BENCH_SAMPLES  1000u      /* latencies kept per thread at most: its last requests */
#define BENCH_BLOCK    128u       /* GPU client threads per block */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Median time of each stage from the stage stamped before it, over the
 * samples that have both; -1 where no sample has the stamp. */
static void stage_medians(const uint32_t *st, uint64_t n, double *med_us)
{
	uint32_t *v = calloc(n ? n : 1, sizeof(uint32_t));
	int k;
	for (k = 0; k < GPUOS_BENCH_STAGES; k++) {
		uint64_t i, m = 0;
		for (i = 0; i < n && v; i++) {
			const uint32_t *row = st + i * GPUOS_BENCH_STAGES;
			uint32_t prev = 0;
			int j;
			if (row[k] == GPUOS_BENCH_NO_STAMP)
				continue;
			for (j = k - 1; j >= 0; j--)
				if (row[j] != GPUOS_BENCH_NO_STAMP) {
					prev = row[j];
					break;
				}
			/* Clocks of different threads may be a little apart: clamp at 0. */
			v[m++] = row[k] > prev ? row[k] - prev : 0;
		}
		if (m) {
			qsort(v, m, sizeof(uint32_t), cmp_u32);
			med_us[k] = v[m / 2] / 1000.0;
		} else {
			med_us[k] = -1;
		}
	}
	free(v);
}

static const char *const stage_name[GPUOS_BENCH_STAGES] = {
	"posted", "taken", "rung", "ctrl", "reaped", "done", "seen",
};


struct hbench {
	struct gpuos_mbox *mb;
	uint64_t dst;
	uint64_t span;
	uint32_t bytes, iters, samples, op;
	uint32_t *lat;
	uint32_t *stages;   /* NULL, or samples rows of GPUOS_BENCH_STAGES */
	uint32_t errors;
	uint64_t seed;
};

static void *host_client(void *p)
{
	struct hbench *h = (struct hbench *)p;
	uint64_t s = h->seed * 0x9e3779b97f4a7c15ull + 1;
	uint64_t nblocks = h->span / h->bytes;
	uint32_t i;
	for (i = 0; i < h->iters; i++) {
		struct gpuos_req rq;
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memset(&rq, 0, sizeof(rq));
		rq.opcode = (uint16_t)h->op;
		rq.offset = (s % nblocks) * h->bytes;
		rq.length = h->bytes;
		rq.dst = h->dst;
		{
			/* The last `samples` requests are kept (the first ones warm up). */
			uint32_t keep = i >= h->iters - h->samples, k = i - (h->iters - h->samples);
			uint32_t status, ns;
			ns = gpuos_bench_one(h->mb, &rq, keep && h->stages ? h->stages + (uint64_t)k * GPUOS_BENCH_STAGES : NULL,
					     &status);
			if (status != GPUOS_ST_OK)
				h->errors++;
			if (keep)
				h->lat[k] = ns;
		}
	}
	return NULL;
}

/* One run, as the command line asks for it. */
struct bench_plan {
	const char *opname;      /* "read" or "nop" */
	uint32_t op;             /* GPUOS_OP_READ_RAW or GPUOS_OP_NOP */
	uint32_t threads, iters, bytes;
	uint32_t samples;        /* latencies kept per thread: its last requests */
	uint64_t n_lat;          /* threads x samples */
	int want_stages;
	/* from the booted system (bench_boot) */
	int gpu;                 /* clients are GPU threads */
	uint64_t span;           /* offsets are drawn from [0, span - bytes] */
};

/* What the clients measured, and the figures made of it. */
struct bench_result {
	uint32_t *lat;           /* n_lat round trips, ns; sorted by bench_summarise */
	uint32_t *stages;        /* NULL, or a row of GPUOS_BENCH_STAGES per latency */
	uint32_t errors;
	double secs;             /* the clients' time, from the first request to the last answer */
	double cpu_s, wall_s;    /* CPU time without the emulator's threads; the wall clock */
	double per_s, gb_per_s, median_us, p99_us;
	double stage_us[GPUOS_BENCH_STAGES]; /* with stages: median of each, -1 where none */
};

/* Read the command line into *c and *p; 0 or GPUOS_EXIT_USAGE. */
static int bench_parse(struct cli *c, struct bench_plan *p, int argc, char **argv)
{
	if (cli_parse(c, "bench", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (!c->boot.device) {
		cli_err("bench", "give --device DEV");
		return GPUOS_EXIT_USAGE;
	}
	if (c->argc) {
		cli_err("bench", "%s: bench takes no arguments", c->argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	memset(p, 0, sizeof(*p));
	p->opname = c->op ? c->op : "read";
	p->op = strcmp(p->opname, "nop") ? GPUOS_OP_READ_RAW : GPUOS_OP_NOP;
	p->threads = c->threads ? c->threads : 1;
	p->iters = c->iters ? c->iters : BENCH_ITERS;
	p->bytes = c->bytes ? c->bytes : BENCH_BYTES;
	p->samples = GPUOS_MIN(p->iters, BENCH_SAMPLES);
	p->n_lat = (uint64_t)p->threads * p->samples;
	p->want_stages = c->stages;
	return 0;
}

/* Boot a runtime with room for every thread's destination and learn where
 * the clients run; 0, or GPUOS_EXIT_FAIL with the reason printed (nothing
 * left booted). */
static void bench_opts(struct cli *c, const struct bench_plan *p)
{
	c->boot.allow_raw = 1;
	c->boot.quiet = 1;
	c->boot.mbox_vram = 1;
	c->boot.dev_heap_bytes = (uint64_t)p->threads * p->bytes;
	if (c->boot.heap_bytes == 0)
		c->boot.heap_bytes = GPUOS_MAX((uint64_t)p->threads * p->bytes, 1u << 20);
}

/* Where the clients run and what they may read, from a booted runtime;
 * 0, or -1 with the reason printed. */
static int bench_learn(struct bench_plan *p, struct gpuos_sys *s)
{
	const struct gpuos_info *in = gpuos_sys_info(s);
	p->gpu = in->gpu;
	p->span = GPUOS_MIN(in->namespace_lbas * in->lba_bytes, 1ull << 40);
	if (p->span < p->bytes) {
		cli_err("bench", "the device is smaller than one request");
		return -1;
	}
	return 0;
}

static int bench_boot(struct cli *c, struct bench_plan *p, struct gpuos_sys **s)
{
	char err[512];

	bench_opts(c, p);
	if (gpuos_boot(&c->boot, s, err, sizeof(err))) {
		cli_err("bench", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if (bench_learn(p, *s)) {
		gpuos_shutdown(*s, err, sizeof(err));
		return GPUOS_EXIT_FAIL;
	}
	return 0;
}

/* The GPU client (bench/bench_client.cuh): a kernel of threads, with its
 * arguments, latencies and counters in device memory. 0, or -1 with the
 * reason printed. */
static int run_gpu_clients(struct gpuos_sys *s, const struct bench_plan *p, struct bench_result *r)
{
	struct gpuos_bench_args a;
	uint64_t a_rt, lat_rt, misc_rt, heap_len, stages_rt = 0;
	uint64_t misc[3] = { 0, ~0ull, 0 }; /* errors, t_start, t_end */
	char err[512];

	memset(&a, 0, sizeof(a));
	if (gpuos_sys_dev_alloc(s, sizeof(a), &a_rt) || gpuos_sys_dev_alloc(s, p->n_lat * 4u, &lat_rt) ||
	    gpuos_sys_dev_alloc(s, sizeof(misc), &misc_rt) ||
	    (r->stages && gpuos_sys_dev_alloc(s, p->n_lat * GPUOS_BENCH_STAGES * 4u, &stages_rt))) {
		cli_err("bench", "out of GPU memory");
		return -1;
	}
	gpuos_sys_copy(s, (void *)(uintptr_t)misc_rt, misc, sizeof(misc), 1);
	a.mbox = gpuos_sys_mbox_rt(s);
	a.dst = gpuos_sys_dev_heap(s, &heap_len);
	a.span = p->span;
	a.lat = lat_rt;
	a.errors = misc_rt;
	a.t_start = misc_rt + 8;
	a.t_end = misc_rt + 16;
	a.bytes = p->bytes;
	a.iters = p->iters;
	a.samples = p->samples;
	a.nthreads = p->threads;
	a.opcode = p->op;
	a.seed = 1234;
	a.stages = stages_rt;
	gpuos_sys_copy(s, (void *)(uintptr_t)a_rt, &a, sizeof(a), 1);
	if (gpuos_sys_launch_client(s, "gpuos_bench_client", a_rt, GPUOS_DIV_ROUND_UP(p->threads, BENCH_BLOCK),
				    GPUOS_MIN(p->threads, BENCH_BLOCK), err, sizeof(err)) ||
	    gpuos_sys_wait_client(s, err, sizeof(err))) {
		cli_err("bench", "%s", err);
		return -1;
	}
	gpuos_sys_copy(s, r->lat, (void *)(uintptr_t)lat_rt, p->n_lat * 4u, 0);
	if (r->stages)
		gpuos_sys_copy(s, r->stages, (void *)(uintptr_t)stages_rt, p->n_lat * GPUOS_BENCH_STAGES * 4u, 0);
	gpuos_sys_copy(s, misc, (void *)(uintptr_t)misc_rt, sizeof(misc), 0);
	r->errors = (uint32_t)misc[0];
	r->secs = (double)(misc[2] - misc[1]) * 1e-9;
	return 0;
}

/* The host client: a CPU thread per client thread, each with its own
 * destination in the heap. 0, or -1 with the reason printed. */
static int run_host_clients(struct gpuos_sys *s, const struct bench_plan *p, struct bench_result *r, double t0)
{
	pthread_t *t = calloc(p->threads, sizeof(pthread_t));
	struct hbench *h = calloc(p->threads, sizeof(struct hbench));
	uint64_t heap_rt, heap_len;
	uint32_t i;

	if (!t || !h) {
		cli_err("bench", "out of memory");
		free(t);
		free(h);
		return -1;
	}
	gpuos_sys_heap(s, &heap_rt, &heap_len);
	for (i = 0; i < p->threads; i++) {
		h[i].mb = gpuos_sys_mbox(s);
		h[i].dst = heap_rt + (uint64_t)i * p->bytes;
		h[i].span = p->span;
		h[i].bytes = p->bytes;
		h[i].iters = p->iters;
		h[i].samples = p->samples;
		h[i].op = p->op;
		h[i].lat = r->lat + (uint64_t)i * p->samples;
		h[i].stages = r->stages ? r->stages + (uint64_t)i * p->samples * GPUOS_BENCH_STAGES : NULL;
		h[i].seed = (uint64_t)i + 1;
		pthread_create(&t[i], NULL, host_client, &h[i]);
	}
	for (i = 0; i < p->threads; i++) {
		pthread_join(t[i], NULL);
		r->errors += h[i].errors;
	}
	r->secs = cli_now_s() - t0;
	free(t);
	free(h);
	return 0;
}

/* Run the clients where the runtime runs, timing the process's CPU and the
 * wall clock around them. 0 or -1 (the reason printed). */
static int bench_run(struct gpuos_sys *s, const struct bench_plan *p, struct bench_result *r)
{
	double cpu0 = cli_cpu_seconds_without_emu(), wall0 = cli_now_s();
	int rc = p->gpu ? run_gpu_clients(s, p, r) : run_host_clients(s, p, r, wall0);

	r->cpu_s = cli_cpu_seconds_without_emu() - cpu0;
	r->wall_s = cli_now_s() - wall0;
	return rc;
}

/* The figures both reports print. */
static void bench_summarise(const struct bench_plan *p, struct bench_result *r)
{
	double reqs = (double)p->threads * p->iters;

	if (r->stages)
		stage_medians(r->stages, p->n_lat, r->stage_us);
	qsort(r->lat, p->n_lat, sizeof(uint32_t), cmp_u32);
	r->per_s = reqs / r->secs;
	r->gb_per_s = reqs * p->bytes / r->secs / 1e9;
	r->median_us = r->lat[p->n_lat / 2] / 1000.0;
	r->p99_us = r->lat[(p->n_lat * 99) / 100] / 1000.0;
}

/* gpuos.bench/1 (docs/json.md): what one runtime's run and a group's
 * share, st the runtime's counters (a group's summed), the controllers'
 * counters from s. The caller ends the object. */
static void json_bench(struct json *j, const struct cli *c, const struct bench_plan *p, const struct bench_result *r,
		       struct gpuos_sys *s, const struct gpuos_stats *st)
{
	const struct gpuos_info *in = gpuos_sys_info(s);
	uint32_t k;

	json_begin(j, stdout, "bench");
	json_str(j, "device", c->boot.device);
	json_str(j, "runtime", p->gpu ? in->gpu_name : "host");
	json_str(j, "op", p->opname);
	json_u64(j, "bytes", p->bytes);
	json_u64(j, "threads", p->threads);
	json_u64(j, "iters", p->iters);
	json_u64(j, "warps", in->warps);
	json_u64(j, "queues", in->queues_used);
	json_fixed(j, "requests_per_s", r->per_s, 0);
	json_fixed(j, "gb_per_s", r->gb_per_s, 3);
	json_fixed(j, "lat_median_us", r->median_us, 2);
	json_fixed(j, "lat_p99_us", r->p99_us, 2);
	json_u64(j, "errors", r->errors);
	json_fixed(j, "cpu_s", r->cpu_s, 3);
	json_fixed(j, "wall_s", r->wall_s, 3);
	/* the runtime's counters (struct gpuos_stats) */
	json_u64(j, "commands", st->commands);
	json_u64(j, "doorbells", st->doorbells);
	json_u64(j, "zero_copy", st->zero_copy);
	json_u64(j, "timeouts", st->timeouts);
	json_u64(j, "strays", st->strays);
	json_u64(j, "aborts", st->aborts);
	json_u64(j, "resets", st->resets);
	json_u64(j, "retries", st->retries);
	json_u64(j, "duplicates", st->duplicates);
	json_u64(j, "untrusted", st->untrusted);
	/* each controller (of an array: every member) with its own counters */
	json_arr(j, "controllers");
	for (k = 0; k < in->nctrl; k++) {
		struct gpuos_ctrl_stats cs;
		int have = gpuos_sys_ctrl_stats(s, k, &cs) == 0;
		cli_ctrl_json(j, k, &in->ctrl[k], have ? &cs : NULL);
	}
	json_end(j);
}

static void report_json(const struct cli *c, const struct bench_plan *p, const struct bench_result *r,
			struct gpuos_sys *s)
{
	struct gpuos_stats st;
	struct json j;
	uint32_t k;

	gpuos_sys_stats(s, &st);
	json_bench(&j, c, p, r, s, &st);
	if (r->stages) {
		/* median us of each stage from the one before */
		json_obj(&j, "stages_us");
		for (k = 0; k < GPUOS_BENCH_STAGES; k++)
			if (r->stage_us[k] >= 0)
				json_fixed(&j, stage_name[k], r->stage_us[k], 2);
		json_end(&j);
	}
	json_finish(&j);
}

static void report_text(const struct cli *c, const struct bench_plan *p, const struct bench_result *r,
			struct gpuos_sys *s)
{
	const struct gpuos_info *in = gpuos_sys_info(s);
	struct gpuos_stats st;
	char ctrl[256], sz[32];
	uint32_t k;

	gpuos_sys_stats(s, &st);
	gpuos_sys_describe_ctrl(s, ctrl, sizeof(ctrl)); /* the text's summary; JSON has the counters */
	printf("%s on %s, runtime on %s, %u warps x %u queues: %u threads x %u %s of %s\n"
	       "  %.0f requests/s, %.3f GB/s, latency median %.2f us, p99 %.2f us, %u errors\n"
	       "  CPU time of the process without the emulator's threads: %.3f s over %.3f s\n"
	       "  %llu commands (%llu zero copy), %llu timed out; controller: %s\n",
	       p->opname, c->boot.device, p->gpu ? in->gpu_name : "CPU threads", in->warps,
	       in->queues_used / in->warps, p->threads, p->iters, p->opname, cli_human(sz, sizeof(sz), p->bytes),
	       r->per_s, r->gb_per_s, r->median_us, r->p99_us, r->errors, r->cpu_s, r->wall_s,
	       (unsigned long long)st.commands, (unsigned long long)st.zero_copy, (unsigned long long)st.timeouts,
	       ctrl);
	if (r->stages) {
		printf("  stages, median us from the one before:");
		for (k = 0; k < GPUOS_BENCH_STAGES; k++)
			if (r->stage_us[k] >= 0)
				printf(" %s %.2f", stage_name[k], r->stage_us[k]);
		putchar('\n');
	}
	if (in->nctrl > 1)
		printf("  an array of %u controllers, chunks of %u KiB:\n", in->nctrl, in->stripe_bytes / 1024u);
	for (k = 0; k < in->nctrl; k++) {
		struct gpuos_ctrl_stats cs;
		int have = gpuos_sys_ctrl_stats(s, k, &cs) == 0;
		cli_ctrl_text(stdout, k, &in->ctrl[k], have ? &cs : NULL);
	}
}

/* ---- --gpus: a group, every runtime benched at once ------------------------------- */

struct group_bench {
	struct gpuos_sys *s;
	struct bench_plan p;
	struct bench_result r;
	int rc;
};

static void *group_bench_one(void *arg)
{
	struct group_bench *b = (struct group_bench *)arg;
	b->rc = bench_run(b->s, &b->p, &b->r);
	return NULL;
}

/* All runtimes together: every latency, requests over the wall clock. */
static void group_summarise(struct group_bench *b, uint32_t n, struct bench_plan *all, struct bench_result *r)
{
	uint32_t i;
	for (i = 0; i < n; i++) {
		memcpy(r->lat + (uint64_t)i * b[i].p.n_lat, b[i].r.lat, b[i].p.n_lat * sizeof(uint32_t));
		r->errors += b[i].r.errors;
		bench_summarise(&b[i].p, &b[i].r);
	}
	bench_summarise(all, r);
}

static void group_report(const struct cli *c, const struct bench_plan *all, const struct bench_result *r,
			 struct group_bench *b, uint32_t n)
{
	const struct gpuos_info *in = gpuos_sys_info(b[0].s);
	struct gpuos_stats st, sum;
	struct json j;
	uint32_t i, k;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < n; i++) {
		gpuos_sys_stats(b[i].s, &st);
		sum.commands += st.commands;
		sum.doorbells += st.doorbells;
		sum.zero_copy += st.zero_copy;
		sum.timeouts += st.timeouts;
		sum.strays += st.strays;
		sum.retries += st.retries; /* no aborts or resets: a group's runtimes send none */
		sum.duplicates += st.duplicates;
		sum.untrusted += st.untrusted;
	}
	if (!c->json) {
		printf("%s on %s, %u runtimes: %u threads x %u %s of %u bytes each\n", all->opname, c->boot.device, n,
		       b[0].p.threads, all->iters, all->opname, all->bytes);
		for (i = 0; i < n; i++)
			printf("  runtime %u on %s: %.0f requests/s, %.3f GB/s, latency median %.2f us, p99 %.2f us, %u errors\n",
			       i, b[i].p.gpu ? gpuos_sys_info(b[i].s)->gpu_name : "CPU threads", b[i].r.per_s,
			       b[i].r.gb_per_s, b[i].r.median_us, b[i].r.p99_us, b[i].r.errors);
		printf("  all together: %.0f requests/s, %.3f GB/s, latency median %.2f us, p99 %.2f us, %u errors over %.3f s\n"
		       "  %llu commands, %llu timed out\n",
		       r->per_s, r->gb_per_s, r->median_us, r->p99_us, r->errors, r->secs,
		       (unsigned long long)sum.commands, (unsigned long long)sum.timeouts);
		for (k = 0; k < in->nctrl; k++) {
			struct gpuos_ctrl_stats cs;
			int have = gpuos_sys_ctrl_stats(b[0].s, k, &cs) == 0;
			cli_ctrl_text(stdout, k, &in->ctrl[k], have ? &cs : NULL);
		}
		return;
	}
	json_bench(&j, c, all, r, b[0].s, &sum);
	json_arr(&j, "runtimes");
	for (i = 0; i < n; i++) {
		gpuos_sys_stats(b[i].s, &st);
		json_obj(&j, NULL);
		json_u64(&j, "index", i);
		json_u64(&j, "gpu", c->gpus[i]);
		json_str(&j, "runtime", b[i].p.gpu ? gpuos_sys_info(b[i].s)->gpu_name : "host");
		json_u64(&j, "threads", b[i].p.threads);
		json_fixed(&j, "requests_per_s", b[i].r.per_s, 0);
		json_fixed(&j, "gb_per_s", b[i].r.gb_per_s, 3);
		json_fixed(&j, "lat_median_us", b[i].r.median_us, 2);
		json_fixed(&j, "lat_p99_us", b[i].r.p99_us, 2);
		json_u64(&j, "errors", b[i].r.errors);
		json_u64(&j, "commands", st.commands);
		json_u64(&j, "timeouts", st.timeouts);
		json_end(&j);
	}
	json_end(&j);
	json_finish(&j);
}

static int bench_group(struct cli *c, struct bench_plan *p)
{
	struct group_bench b[GPUOS_GROUP_MAX];
	pthread_t t[GPUOS_GROUP_MAX];
	int started[GPUOS_GROUP_MAX] = { 0 };
	struct bench_plan all = *p;
	struct bench_result r;
	struct gpuos_group *g;
	char err[512];
	double cpu0, wall0;
	uint32_t i, n = c->ngpus;
	int rc = 0;

	if (p->want_stages) {
		cli_err("bench", "--stages with --gpus: bench one runtime for its stages");
		return GPUOS_EXIT_USAGE;
	}
	bench_opts(c, p);
	if (gpuos_boot_group(&c->boot, n, c->gpus, &g, err, sizeof(err))) {
		cli_err("bench", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	memset(b, 0, sizeof(b));
	memset(&r, 0, sizeof(r));
	all.threads = p->threads * n;
	all.n_lat = p->n_lat * n;
	r.lat = calloc(all.n_lat, sizeof(uint32_t));
	for (i = 0; i < n && r.lat && !rc; i++) {
		b[i].s = gpuos_group_sys(g, i);
		b[i].p = *p;
		b[i].r.lat = calloc(p->n_lat, sizeof(uint32_t));
		if (!b[i].r.lat || bench_learn(&b[i].p, b[i].s))
			rc = GPUOS_EXIT_FAIL;
	}
	if (!r.lat)
		rc = GPUOS_EXIT_FAIL;
	if (!rc) {
		all.gpu = b[0].p.gpu;
		cpu0 = cli_cpu_seconds_without_emu();
		wall0 = cli_now_s();
		for (i = 0; i < n; i++)
			started[i] = pthread_create(&t[i], NULL, group_bench_one, &b[i]) == 0;
		for (i = 0; i < n; i++)
			if (!started[i]) /* no thread: this one runs here, beside the others */
				group_bench_one(&b[i]);
		for (i = 0; i < n; i++)
			if (started[i])
				pthread_join(t[i], NULL);
		r.secs = r.wall_s = cli_now_s() - wall0;
		r.cpu_s = cli_cpu_seconds_without_emu() - cpu0;
		for (i = 0; i < n; i++)
			if (b[i].rc)
				rc = GPUOS_EXIT_FAIL;
	}
	if (!rc) {
		group_summarise(b, n, &all, &r);
		group_report(c, &all, &r, b, n);
	}
	for (i = 0; i < n; i++)
		free(b[i].r.lat);
	free(r.lat);
	if (gpuos_group_shutdown(g, err, sizeof(err))) {
		if (!rc)
			cli_err("bench", "shutdown: %s", err);
		return GPUOS_EXIT_FAIL;
	}
	return rc ? rc : r.errors ? GPUOS_EXIT_FAIL : GPUOS_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
	struct cli c;
	struct bench_plan p;
	struct bench_result r;
	struct gpuos_sys *s;
	char err[512];
	int rc = 0;

	if ((rc = bench_parse(&c, &p, argc, argv)))
		return rc;
	if (c.ngpus)
		return bench_group(&c, &p);
	if ((rc = bench_boot(&c, &p, &s)))
		return rc;
	memset(&r, 0, sizeof(r));
	r.lat = calloc(p.n_lat, sizeof(uint32_t));
	if (p.want_stages)
		r.stages = calloc(p.n_lat * GPUOS_BENCH_STAGES, sizeof(uint32_t));
	if (!r.lat || (p.want_stages && !r.stages)) {
		cli_err("bench", "out of memory");
		rc = GPUOS_EXIT_FAIL;
	} else if (bench_run(s, &p, &r)) {
		rc = GPUOS_EXIT_FAIL;
	} else {
		bench_summarise(&p, &r);
		if (c.json)
			report_json(&c, &p, &r, s);
		else
			report_text(&c, &p, &r, s);
	}
	free(r.lat);
	free(r.stages);
	/* After a failed start the shutdown's own error would hide the first one. */
	if (gpuos_shutdown(s, err, sizeof(err))) {
		if (!rc)
			cli_err("bench", "shutdown: %s", err);
		return GPUOS_EXIT_FAIL;
	}
	return rc ? rc : r.errors ? GPUOS_EXIT_FAIL : GPUOS_EXIT_OK;
}
