/* SPDX-License-Identifier: MIT */
/*
 * tests/gpu/mini_criterion.h - the subset of Criterion's API the shared
 * suites use, for the GPU machine, which has no Criterion. Each test runs in
 * a forked child (a crash stays contained, as with Criterion); the runner
 * prints one line per test and a summary, and exits non-zero on a failure.
 */
#ifndef GPUOS_MINI_CRITERION_H
#define GPUOS_MINI_CRITERION_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct mc_test {
	const char *suite, *name;
	void (*fn)(void);
	int timeout;
};
struct mc_suite {
	const char *name;
	void (*init)(void);
	void (*fini)(void);
	int timeout;
};
struct mc_opts {
	int timeout;
	void (*init)(void);
	void (*fini)(void);
	int disabled;
};

#define MC_MAX 256
static struct mc_test mc_tests[MC_MAX];
static int mc_ntests;
static struct mc_suite mc_suites[32];
static int mc_nsuites;

#define MC_CAT2(a, b) a##b
#define MC_CAT(a, b) MC_CAT2(a, b)

#define TestSuite(s, ...)                                                             \
	__attribute__((constructor)) static void MC_CAT(mc_suite_, s)(void)           \
	{                                                                             \
		struct mc_opts o = { 0, 0, 0, 0, ##__VA_ARGS__ };                     \
		mc_suites[mc_nsuites].name = #s;                                      \
		mc_suites[mc_nsuites].init = o.init;                                  \
		mc_suites[mc_nsuites].fini = o.fini;                                  \
		mc_suites[mc_nsuites++].timeout = o.timeout;                          \
	}

#define Test(s, n, ...)                                                               \
	static void MC_CAT(mc_fn_##s##_, n)(void);                                    \
	__attribute__((constructor)) static void MC_CAT(mc_reg_##s##_, n)(void)       \
	{                                                                             \
		struct mc_opts o = { 0, 0, 0, 0, ##__VA_ARGS__ };                     \
		mc_tests[mc_ntests].suite = #s;                                       \
		mc_tests[mc_ntests].name = #n;                                        \
		mc_tests[mc_ntests].fn = MC_CAT(mc_fn_##s##_, n);                     \
		mc_tests[mc_ntests++].timeout = o.timeout;                            \
	}                                                                             \
	static void MC_CAT(mc_fn_##s##_, n)(void)

#define MC_FAIL(...)                                                                  \
	do {                                                                          \
		fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);                   \
		fprintf(stderr, "" __VA_ARGS__);                                      \
		fprintf(stderr, "\n");                                                \
		_exit(1);                                                             \
	} while (0)

#define cr_assert(c, ...) do { if (!(c)) MC_FAIL("assertion failed: " #c " " __VA_ARGS__); } while (0)
#define cr_assert_eq(a, b, ...) do { if (!((a) == (b))) MC_FAIL("%s == %s failed (%lld vs %lld) " , #a, #b, (long long)(a), (long long)(b)); } while (0)
#define cr_assert_neq(a, b, ...) do { if ((a) == (b)) MC_FAIL("%s != %s failed", #a, #b); } while (0)
#define cr_assert_gt(a, b, ...) do { if (!((a) > (b))) MC_FAIL("%s > %s failed (%lld vs %lld)", #a, #b, (long long)(a), (long long)(b)); } while (0)
#define cr_assert_lt(a, b, ...) do { if (!((a) < (b))) MC_FAIL("%s < %s failed (%lld vs %lld)", #a, #b, (long long)(a), (long long)(b)); } while (0)
#define cr_assert_geq(a, b, ...) do { if (!((a) >= (b))) MC_FAIL("%s >= %s failed", #a, #b); } while (0)
#define cr_assert_leq(a, b, ...) do { if (!((a) <= (b))) MC_FAIL("%s <= %s failed (%lld vs %lld)", #a, #b, (long long)(a), (long long)(b)); } while (0)
#define cr_assert_str_eq(a, b, ...) do { if (strcmp((a), (b))) MC_FAIL("%s == %s failed ('%s' vs '%s')", #a, #b, (a), (b)); } while (0)
#define cr_assert_not_null(p, ...) do { if (!(p)) MC_FAIL("%s is NULL", #p); } while (0)
#define cr_assert_null(p, ...) do { if ((p)) MC_FAIL("%s is not NULL", #p); } while (0)
#define cr_skip(...) do { fprintf(stderr, "    skipped: " __VA_ARGS__); fprintf(stderr, "\n"); _exit(77); } while (0)
#define cr_skip_test(...) cr_skip(__VA_ARGS__) /* Criterion's name */
#define cr_log_info(...) do { fprintf(stderr, "    " __VA_ARGS__); fprintf(stderr, "\n"); } while (0)

int main(int argc, char **argv)
{
	int i, k, pass = 0, failn = 0, skip = 0;
	const char *only = argc > 1 ? argv[1] : NULL;
	for (i = 0; i < mc_ntests; i++) {
		struct mc_test *t = &mc_tests[i];
		struct mc_suite *su = NULL;
		char full[256];
		int st = 0, timeout;
		struct rusage ru;
		pid_t pid;
		time_t t0;
		snprintf(full, sizeof(full), "%s::%s", t->suite, t->name);
		if (only && !strstr(full, only))
			continue;
		for (k = 0; k < mc_nsuites; k++)
			if (!strcmp(mc_suites[k].name, t->suite))
				su = &mc_suites[k];
		timeout = t->timeout ? t->timeout : su && su->timeout ? su->timeout : 60;
		/* GPUOS_TEST_TIMEOUT_SCALE=N: N times the hang guard (make test's
		 * ThreadSanitizer runs, several times slower, beside other suites) */
		if (getenv("GPUOS_TEST_TIMEOUT_SCALE") && atoi(getenv("GPUOS_TEST_TIMEOUT_SCALE")) > 1)
			timeout *= atoi(getenv("GPUOS_TEST_TIMEOUT_SCALE"));
		t0 = time(NULL);
		pid = fork();
		if (pid == 0) {
			alarm((unsigned)timeout);
			if (su && su->init)
				su->init();
			t->fn();
			if (su && su->fini)
				su->fini();
			_exit(0);
		}
		/* the test's CPU seconds too: where a suite's CPU goes (make test
		 * runs suites side by side on 2 cores) */
		memset(&ru, 0, sizeof(ru));
		wait4(pid, &st, 0, &ru);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			pass++;
			printf("[PASS] %s (%lds, cpu %lds)\n", full, (long)(time(NULL) - t0),
			       (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec));
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			skip++;
			printf("[SKIP] %s\n", full);
		} else {
			failn++;
			printf("[FAIL] %s (%s %d; %lds, cpu %lds)\n", full, WIFSIGNALED(st) ? "signal" : "exit",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), (long)(time(NULL) - t0),
			       (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec));
		}
		fflush(stdout);
	}
	printf("Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d\n", pass + failn + skip, pass, failn, skip);
	return failn ? 1 : 0;
}

#endif /* GPUOS_MINI_CRITERION_H */
