/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_util.h - what the CPU-side baselines share (bench/baselines.c,
 * bench/layer_base.cu, bench/cufile_load.c): dying with one line, clocks,
 * numbers from the command line, JSON strings. Each program sets
 * bench_who (its name, and its subcommand) before anything can fail.
 */
#ifndef GPUOS_BENCH_UTIL_H
#define GPUOS_BENCH_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

/* Not every program uses every helper. */
#define BENCH_UTIL static __attribute__((unused))

static char bench_who[64] = "bench";
static pthread_mutex_t bench_die_lock = PTHREAD_MUTEX_INITIALIZER;

/* One line on stderr and exit 2, from any thread. _exit: other threads may
 * still be inside the CUDA runtime, whose teardown they would race. */
BENCH_UTIL void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&bench_die_lock);
	fprintf(stderr, "%s: ", bench_who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(2);
}

BENCH_UTIL void ck(cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		die("%s: %s (CUDA error %d)", what, cudaGetErrorString(e), (int)e);
}

/* CPU seconds of this process, every thread's (the CUDA runtime's included). */
BENCH_UTIL double cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

BENCH_UTIL double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A whole decimal number in [lo, hi], or die naming the option. */
BENCH_UTIL uint64_t num(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		die("%s %s: give a whole number from %llu to %llu", opt, s, (unsigned long long)lo,
		    (unsigned long long)hi);
	return v;
}

/* JSON string (a path may hold quotes or control characters). */
BENCH_UTIL void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

#endif /* GPUOS_BENCH_UTIL_H */
