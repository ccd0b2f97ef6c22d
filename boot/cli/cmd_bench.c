/* SPDX-License-Identifier: MIT */
/*
 * gpuos bench --device DEV [--threads T] [--iters N] [--bytes B] [--op read|nop]
 *             [--stages] [--warps W] [--queues Q] [--host] [--json]
 * Requests per second and round-trip latency through the whole path, with
 * GPU threads as clients (a kernel of the runtime image) when the runtime
 * runs on the GPU, CPU threads otherwise. Also the CPU time the process used
 * during the run, without the emulated controller's own threads.
 * --stages: where the time goes, from the runtime's stamps in the mailbox
 * slots (a runtime built with GPUOS_TRACE; docs/benchmarks.md).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpuos/bench.h"
#include "json.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* CPU seconds of this process's threads, leaving out the emulator's
 * (their names start with "emu"): the controller is not the service. */
static double cpu_seconds_without_emu(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	double total = 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[64] = "", buf[1024];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r"))) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		if (strncmp(comm, "emu", 3) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		if ((f = fopen(path, "r"))) {
			if (fgets(buf, sizeof(buf), f)) {
				/* fields after the ")" of comm: state is field 3; utime 14, stime 15 */
				char *p = strrchr(buf, ')');
				unsigned long ut = 0, st = 0;
				if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
					total += (double)(ut + st) / (double)hz;
			}
			fclose(f);
		}
	}
	closedir(d);
	return total;
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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

int cmd_bench(int argc, char **argv)
{
	struct cli c;
	struct gpuos_sys *s;
	char err[512];
	uint32_t threads = 0, iters = 0, bytes = 4096, op = GPUOS_OP_READ_RAW, samples, errors = 0;
	uint32_t *lat, *stages = NULL;
	uint64_t n_lat, span, t_start = ~0ull, t_end = 0;
	int want_stages = 0;
	double secs, cpu0, cpu1, wall0;
	int i, gpu;
	const char *opname = "read";

	if (cli_parse(&c, "bench", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (!c.boot.device) {
		cli_err("bench", "give --device DEV");
		return GPUOS_EXIT_USAGE;
	}
	if (c.argc) {
		cli_err("bench", "%s: bench takes no arguments", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	threads = c.threads;
	iters = c.iters;
	if (c.bytes)
		bytes = c.bytes;
	want_stages = c.stages;
	if (c.op)
		opname = c.op;
	if (!strcmp(opname, "nop"))
		op = GPUOS_OP_NOP;
	c.boot.allow_raw = 1;
	c.boot.quiet = 1;
	c.boot.mbox_vram = 1;
	if (!threads)
		threads = 1;
	if (!iters)
		iters = 1000;
	c.boot.dev_heap_bytes = (uint64_t)threads * bytes;
	if (c.boot.heap_bytes == 0)
		c.boot.heap_bytes = GPUOS_MAX((uint64_t)threads * bytes, 1u << 20);
	if (gpuos_boot(&c.boot, &s, err, sizeof(err))) {
		cli_err("bench", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	gpu = gpuos_sys_info(s)->gpu;
	span = gpuos_sys_info(s)->namespace_lbas * gpuos_sys_info(s)->lba_bytes;
	if (span > (1ull << 40))
		span = 1ull << 40;
	if (span < bytes) {
		cli_err("bench", "the device is smaller than one request");
		gpuos_shutdown(s, err, sizeof(err));
		return GPUOS_EXIT_FAIL;
	}
	samples = iters < 1000 ? iters : 1000;
	n_lat = (uint64_t)threads * samples;
	lat = calloc(n_lat, sizeof(uint32_t));
	if (want_stages)
		stages = calloc(n_lat * GPUOS_BENCH_STAGES, sizeof(uint32_t));
	if (!lat || (want_stages && !stages)) {
		cli_err("bench", "out of memory");
		gpuos_shutdown(s, err, sizeof(err));
		return GPUOS_EXIT_FAIL;
	}
	cpu0 = cpu_seconds_without_emu();
	wall0 = now_s();
	if (gpu) {
		struct gpuos_bench_args a;
		uint64_t a_rt, lat_rt, misc_rt, heap_len, stages_rt = 0;
		uint64_t misc[3] = { 0, ~0ull, 0 };
		memset(&a, 0, sizeof(a));
		if (gpuos_sys_dev_alloc(s, sizeof(a), &a_rt) || gpuos_sys_dev_alloc(s, n_lat * 4u, &lat_rt) ||
		    gpuos_sys_dev_alloc(s, sizeof(misc), &misc_rt) ||
		    (stages && gpuos_sys_dev_alloc(s, n_lat * GPUOS_BENCH_STAGES * 4u, &stages_rt))) {
			cli_err("bench", "out of GPU memory");
			gpuos_shutdown(s, err, sizeof(err));
			return GPUOS_EXIT_FAIL;
		}
		gpuos_sys_copy(s, (void *)(uintptr_t)misc_rt, misc, sizeof(misc), 1);
		a.mbox = gpuos_sys_mbox_rt(s);
		a.dst = gpuos_sys_dev_heap(s, &heap_len);
		a.span = span;
		a.lat = lat_rt;
		a.errors = misc_rt;
		a.t_start = misc_rt + 8;
		a.t_end = misc_rt + 16;
		a.bytes = bytes;
		a.iters = iters;
		a.samples = samples;
		a.nthreads = threads;
		a.opcode = op;
		a.seed = 1234;
		a.stages = stages_rt;
		gpuos_sys_copy(s, (void *)(uintptr_t)a_rt, &a, sizeof(a), 1);
		if (gpuos_sys_launch_client(s, "gpuos_bench_client", a_rt, (threads + 127u) / 128u,
					    threads < 128u ? threads : 128u, err, sizeof(err)) ||
		    gpuos_sys_wait_client(s, err, sizeof(err))) {
			cli_err("bench", "%s", err);
			gpuos_shutdown(s, err, sizeof(err));
			return GPUOS_EXIT_FAIL;
		}
		gpuos_sys_copy(s, lat, (void *)(uintptr_t)lat_rt, n_lat * 4u, 0);
		if (stages)
			gpuos_sys_copy(s, stages, (void *)(uintptr_t)stages_rt, n_lat * GPUOS_BENCH_STAGES * 4u, 0);
		gpuos_sys_copy(s, misc, (void *)(uintptr_t)misc_rt, sizeof(misc), 0);
		errors = (uint32_t)misc[0];
		t_start = misc[1];
		t_end = misc[2];
		secs = (double)(t_end - t_start) * 1e-9;
	} else {
		pthread_t *t = calloc(threads, sizeof(pthread_t));
		struct hbench *h = calloc(threads, sizeof(struct hbench));
		uint64_t heap_rt, heap_len;
		gpuos_sys_heap(s, &heap_rt, &heap_len);
		for (i = 0; i < (int)threads; i++) {
			h[i].mb = gpuos_sys_mbox(s);
			h[i].dst = heap_rt + (uint64_t)i * bytes;
			h[i].span = span;
			h[i].bytes = bytes;
			h[i].iters = iters;
			h[i].samples = samples;
			h[i].op = op;
			h[i].lat = lat + (uint64_t)i * samples;
			h[i].stages = stages ? stages + (uint64_t)i * samples * GPUOS_BENCH_STAGES : NULL;
			h[i].seed = (uint64_t)i + 1;
			pthread_create(&t[i], NULL, host_client, &h[i]);
		}
		for (i = 0; i < (int)threads; i++) {
			pthread_join(t[i], NULL);
			errors += h[i].errors;
		}
		secs = now_s() - wall0;
		free(t);
		free(h);
	}
	cpu1 = cpu_seconds_without_emu();
	{
		double wall = now_s() - wall0;
		double reqs = (double)threads * iters;
		struct gpuos_stats st;
		char ctrl[256];
		const struct gpuos_info *in = gpuos_sys_info(s);
		double med[GPUOS_BENCH_STAGES];
		int k;
		if (stages)
			stage_medians(stages, n_lat, med);
		qsort(lat, n_lat, sizeof(uint32_t), cmp_u32);
		gpuos_sys_stats(s, &st);
		if (c.json) {
			struct json j;
			json_begin(&j, stdout, "bench");
			json_str(&j, "device", c.boot.device);
			json_str(&j, "runtime", gpu ? in->gpu_name : "host");
			json_str(&j, "op", opname);
			json_u64(&j, "bytes", bytes);
			json_u64(&j, "threads", threads);
			json_u64(&j, "iters", iters);
			json_u64(&j, "warps", in->warps);
			json_u64(&j, "queues", in->queues_used);
			json_fixed(&j, "requests_per_s", reqs / secs, 0);
			json_fixed(&j, "gb_per_s", reqs * bytes / secs / 1e9, 3);
			json_fixed(&j, "lat_median_us", lat[n_lat / 2] / 1000.0, 2);
			json_fixed(&j, "lat_p99_us", lat[(n_lat * 99) / 100] / 1000.0, 2);
			json_u64(&j, "errors", errors);
			json_fixed(&j, "cpu_s", cpu1 - cpu0, 3);
			json_fixed(&j, "wall_s", wall, 3);
			/* the runtime's counters (struct gpuos_stats) */
			json_u64(&j, "commands", st.commands);
			json_u64(&j, "doorbells", st.doorbells);
			json_u64(&j, "zero_copy", st.zero_copy);
			json_u64(&j, "timeouts", st.timeouts);
			json_u64(&j, "strays", st.strays);
			json_u64(&j, "aborts", st.aborts);
			json_u64(&j, "resets", st.resets);
			json_u64(&j, "retries", st.retries);
			/* each controller (of an array: every member) with its own counters */
			json_arr(&j, "controllers");
			for (k = 0; k < (int)in->nctrl; k++) {
				struct gpuos_ctrl_stats cs;
				int have = gpuos_sys_ctrl_stats(s, (uint32_t)k, &cs) == 0;
				cli_ctrl_json(&j, (uint32_t)k, &in->ctrl[k], have ? &cs : NULL);
			}
			json_end(&j);
			if (stages) {
				/* median us of each stage from the one before */
				json_obj(&j, "stages_us");
				for (k = 0; k < GPUOS_BENCH_STAGES; k++)
					if (med[k] >= 0)
						json_fixed(&j, stage_name[k], med[k], 2);
				json_end(&j);
			}
			json_finish(&j);
		} else {
			char sz[32];
			gpuos_sys_describe_ctrl(s, ctrl, sizeof(ctrl)); /* the text's summary; JSON has the counters */
			printf("%s on %s, runtime on %s, %u warps x %u queues: %u threads x %u %s of %s\n"
			       "  %.0f requests/s, %.3f GB/s, latency median %.2f us, p99 %.2f us, %u errors\n"
			       "  CPU time of the process without the emulator's threads: %.3f s over %.3f s\n"
			       "  %llu commands (%llu zero copy), %llu timed out; controller: %s\n",
			       opname, c.boot.device, gpu ? in->gpu_name : "CPU threads", in->warps,
			       in->queues_used / in->warps, threads, iters, opname, cli_human(sz, sizeof(sz), bytes),
			       reqs / secs, reqs * bytes / secs / 1e9, lat[n_lat / 2] / 1000.0,
			       lat[(n_lat * 99) / 100] / 1000.0, errors, cpu1 - cpu0, wall, (unsigned long long)st.commands,
			       (unsigned long long)st.zero_copy, (unsigned long long)st.timeouts, ctrl);
			if (stages) {
				printf("  stages, median us from the one before:");
				for (k = 0; k < GPUOS_BENCH_STAGES; k++)
					if (med[k] >= 0)
						printf(" %s %.2f", stage_name[k], med[k]);
				putchar('\n');
			}
			if (in->nctrl > 1)
				printf("  an array of %u controllers, chunks of %u KiB:\n", in->nctrl, in->stripe_bytes / 1024u);
			for (k = 0; k < (int)in->nctrl; k++) {
				struct gpuos_ctrl_stats cs;
				int have = gpuos_sys_ctrl_stats(s, (uint32_t)k, &cs) == 0;
				cli_ctrl_text(stdout, (uint32_t)k, &in->ctrl[k], have ? &cs : NULL);
			}
		}
	}
	free(lat);
	free(stages);
	if (gpuos_shutdown(s, err, sizeof(err))) {
		cli_err("bench", "shutdown: %s", err);
		return GPUOS_EXIT_FAIL;
	}
	return errors ? GPUOS_EXIT_FAIL : 0;
}
