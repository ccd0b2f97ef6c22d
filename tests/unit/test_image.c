/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_image.c - app image inspection (boot/image.c) and
 * `gpuos image` against
 *  - cubins built at test time by nvcc ($CUDA_HOME/bin/nvcc, default
 *    /usr/local/cuda) from small .cu sources written here: two entries with
 *    different register use, __launch_bounds__, .reqntid (through PTX),
 *    static shared memory, a __device__ helper that is no entry, the ABI
 *    note present, absent and of another version, sm_80, sm_86, sm_90 and
 *    sm_90a, -rdc=true before and after nvlink, a fatbin. Expected values
 *    come from `cuobjdump -res-usage` where it exists, else from ptxas's
 *    own report (--resource-usage) for registers and readelf's section
 *    sizes for shared memory. Without nvcc these tests are skipped.
 *  - hostile input: every truncation, thousands of random mutations (each
 *    must be parsed or refused with one line, never crash), fields of the
 *    headers, sections, notes and attributes set to bad values, an x86 ELF,
 *    an empty file.
 * The cubins are built once per run into a directory the runner's PRE_ALL
 * hook makes (GPUOS_TEST_IMAGE_DIR), each test process building what is
 * missing; write-then-rename keeps parallel tests apart.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../boot/cli/cli.h"
#include "gpuos/host.h"
#include "gpuos/abi.h"

#define DIR_ENV "GPUOS_TEST_IMAGE_DIR"

/* ---- the build directory, tools ---------------------------------------------------- */

static char made_dir[256];

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	if (getenv(DIR_ENV))
		return;
	snprintf(made_dir, sizeof(made_dir), "%s/gpuos-test-image.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(made_dir))
		setenv(DIR_ENV, made_dir, 1);
	else
		made_dir[0] = 0;
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	char cmd[512];
	(void)stats;
	if (made_dir[0] && !getenv("GPUOS_TEST_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", made_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "test_image: could not remove %s\n", made_dir);
	}
}

static const char *dir(void)
{
	static char fallback[256];
	const char *d = getenv(DIR_ENV);
	if (d)
		return d;
	if (!fallback[0]) {
		snprintf(fallback, sizeof(fallback), "/tmp/gpuos-test-image.XXXXXX");
		cr_assert_not_null(mkdtemp(fallback));
	}
	return fallback;
}

static char *tool(const char *name)
{
	static char path[3][512];
	static int n;
	const char *home = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
	char *p = path[n++ % 3];
	snprintf(p, sizeof(path[0]), "%s/bin/%s", home, name);
	return access(p, X_OK) == 0 ? p : NULL;
}

static const char *nvcc_or_skip(void)
{
	const char *n = tool("nvcc");
	if (!n)
		cr_skip_test("no nvcc under $CUDA_HOME/bin (CUDA_HOME=%s)",
			     getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda");
	return n;
}

/* The repository's include/ folder: from the working directory (make runs
 * the tests from the root) or from the binary (BUILD/tests/unit/test_image). */
static const char *include_dir(void)
{
	static char inc[4096];
	char exe[4096];
	ssize_t n;
	if (inc[0])
		return inc;
	if (getcwd(inc, sizeof(inc) - 64)) {
		strcat(inc, "/include");
		char probe[4200];
		snprintf(probe, sizeof(probe), "%s/gpuos/app.h", inc);
		if (access(probe, R_OK) == 0)
			return inc;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(n > 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(inc, sizeof(inc), "%.4000s/../../../include", exe);
	return inc;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;
	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	cr_assert_not_null(b);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	b[n] = 0;
	*len = (size_t)n;
	return b;
}

/* Run a shell command; its stdout and stderr in *out (malloc'd) if asked. */
static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...)
{
	char cmd[8192], tmp[512];
	va_list ap;
	int st;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (out) {
		snprintf(tmp, sizeof(tmp), "%s/out.%d.txt", dir(), (int)getpid());
		strncat(cmd, " >", sizeof(cmd) - strlen(cmd) - 1);
		strncat(cmd, tmp, sizeof(cmd) - strlen(cmd) - 1);
		strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	}
	st = system(cmd);
	if (out) {
		size_t len;
		*out = (char *)read_file(tmp, &len);
		unlink(tmp);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the sources -------------------------------------------------------------------- */

/* Two entries of different register use, one with __launch_bounds__ and
 * shared memory; a helper that is not an entry; a C++ (mangled) entry. */
static const char SRC_TWO[] =
	"#include \"gpuos/app.h\"\n"
	"GPUOS_APP_ABI_NOTE;\n"
	"extern \"C\" __device__ __noinline__ int helper(int x) { return x * 3 + (x >> 2); }\n"
	"extern \"C\" __global__ void light(int *p) { p[threadIdx.x] = helper(p[threadIdx.x]); }\n"
	"extern \"C\" __global__ void __launch_bounds__(256) heavy(double *p, int n) {\n"
	"  __shared__ float s[300];\n"
	"  double a=p[0],b=p[1],c=p[2],d=p[3],e=p[4],f=p[5],g=p[6],h=p[7];\n"
	"  for (int i=0;i<n;i++){a=a*b+c;b=b*c+d;c=c*d+e;d=d*e+f;e=e*f+g;f=f*g+h;g=g*h+a;h=h*a+b;}\n"
	"  s[threadIdx.x % 300] = (float)a; __syncthreads();\n"
	"  p[threadIdx.x]=a+b+c+d+e+f+g+h+s[(threadIdx.x + 1) % 300];\n"
	"}\n"
	"__global__ void __launch_bounds__(128, 2) mangled(int *p) { __shared__ double t[17]; t[threadIdx.x % 17] = 1;\n"
	"  __syncthreads(); p[threadIdx.x] = (int)t[(threadIdx.x + 5) % 17]; }\n";

/* A kernel whose PTX gets .reqntid 64, 2, 1 in place of .maxntid. */
static const char SRC_REQ[] =
	"#include \"gpuos/app.h\"\n"
	"GPUOS_APP_ABI_NOTE;\n"
	"extern \"C\" __global__ void __launch_bounds__(77) req(int *p) { p[threadIdx.x + blockDim.x * threadIdx.y] = 1; }\n";

static const char SRC_NOABI[] = "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n";

static const char SRC_BADABI[] =
	"#include \"gpuos/abi.h\"\n"
	"extern \"C\" __device__ __attribute__((used)) const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION + 1;\n"
	"extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n";

static const char SRC_NOENTRY[] =
	"#include \"gpuos/app.h\"\n"
	"GPUOS_APP_ABI_NOTE;\n"
	"extern \"C\" __device__ int not_an_entry(int x) { return x + 1; }\n";

/* Build (once per run) NAME.cubin (or whatever out names) from src with
 * these nvcc flags; returns the path. ptxas's report goes to NAME.ptxas. */
static const char *build(const char *name, const char *src, const char *flags, const char *out_ext)
{
	static char paths[8][512];
	static int n;
	char *out = paths[n++ % 8], cu[512], tmp[600], *log = NULL;
	const char *nvcc = nvcc_or_skip();
	int rc;

	snprintf(out, sizeof(paths[0]), "%s/%s.%s", dir(), name, out_ext);
	if (access(out, R_OK) == 0)
		return out;
	snprintf(cu, sizeof(cu), "%s/%s.%d.cu", dir(), name, (int)getpid());
	write_file(cu, src, strlen(src));
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", out, (int)getpid());
	rc = sh(&log, "'%s' -std=c++17 -I'%s' %s --resource-usage '%s' -o '%s'", nvcc, include_dir(), flags, cu, tmp);
	cr_assert_eq(rc, 0, "nvcc %s %s failed:\n%s", flags, name, log);
	{
		char rep[600];
		snprintf(rep, sizeof(rep), "%s/%s.ptxas", dir(), name);
		snprintf(cu + strlen(cu), sizeof(cu) - strlen(cu), ".log");
		write_file(cu, log, strlen(log));
		rename(cu, rep);
	}
	free(log);
	cr_assert_eq(rename(tmp, out), 0);
	snprintf(cu, sizeof(cu), "%s/%s.%d.cu", dir(), name, (int)getpid());
	unlink(cu);
	return out;
}

static const char *cubin(const char *name, const char *src, const char *arch)
{
	char flags[64], nm[128];
	snprintf(flags, sizeof(flags), "-cubin -arch=%s", arch);
	snprintf(nm, sizeof(nm), "%s_%s", name, arch);
	return build(nm, src, flags, "cubin");
}

/* req.cubin: the PTX of SRC_REQ with .maxntid 77 turned into .reqntid 64, 2, 1. */
static const char *cubin_reqntid(void)
{
	static char out[512];
	const char *ptx = build("req_sm_90", SRC_REQ, "-ptx -arch=sm_90", "ptx");
	char *log = NULL, fixed[600], tmp[700];
	size_t len;
	char *text, *at;

	snprintf(out, sizeof(out), "%s/reqntid_sm_90.cubin", dir());
	if (access(out, R_OK) == 0)
		return out;
	text = (char *)read_file(ptx, &len);
	at = strstr(text, ".maxntid 77, 1, 1");
	cr_assert_not_null(at, "no .maxntid line in the PTX");
	snprintf(fixed, sizeof(fixed), "%s/reqntid.%d.ptx", dir(), (int)getpid());
	{
		FILE *f = fopen(fixed, "w");
		cr_assert_not_null(f);
		fwrite(text, 1, (size_t)(at - text), f);
		fputs(".reqntid 64, 2, 1", f);
		fputs(at + strlen(".maxntid 77, 1, 1"), f);
		fclose(f);
	}
	free(text);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", out, (int)getpid());
	cr_assert_eq(sh(&log, "'%s' -cubin -arch=sm_90 '%s' -o '%s'", nvcc_or_skip(), fixed, tmp), 0, "%s", log);
	free(log);
	unlink(fixed);
	cr_assert_eq(rename(tmp, out), 0);
	return out;
}

/* ---- oracles ------------------------------------------------------------------------ */

struct expect {
	int regs, shared; /* -1: unknown */
};

/* cuobjdump -res-usage: "Function NAME:\n  REG:12 STACK:0 SHARED:2224 ..." */
static int from_cuobjdump(const char *path, const char *fn, struct expect *e)
{
	const char *cu = tool("cuobjdump");
	char *out = NULL, key[300], *p;
	if (!cu)
		return 0;
	if (sh(&out, "'%s' -res-usage '%s'", cu, path) != 0) {
		free(out);
		return 0;
	}
	snprintf(key, sizeof(key), "Function %s:", fn);
	p = strstr(out, key);
	cr_assert_not_null(p, "cuobjdump names no %s:\n%s", fn, out);
	p = strstr(p, "REG:");
	cr_assert_not_null(p);
	e->regs = atoi(p + 4);
	p = strstr(p, "SHARED:");
	cr_assert_not_null(p);
	e->shared = atoi(p + 7);
	free(out);
	return 1;
}

/* ptxas's report of the build for registers, readelf for .nv.shared.NAME. */
static void from_ptxas_readelf(const char *name, const char *path, const char *fn, struct expect *e)
{
	char rep[600], key[300], *text, *p, *out = NULL;
	size_t len;

	snprintf(rep, sizeof(rep), "%s/%s.ptxas", dir(), name);
	text = (char *)read_file(rep, &len);
	snprintf(key, sizeof(key), "Compiling entry function '%s'", fn);
	p = strstr(text, key);
	cr_assert_not_null(p, "ptxas did not report %s:\n%s", fn, text);
	p = strstr(p, "Used ");
	cr_assert_not_null(p);
	e->regs = atoi(p + 5);
	free(text);

	e->shared = 0;
	cr_assert_eq(sh(&out, "readelf -SW '%s'", path), 0, "readelf: %s", out);
	snprintf(key, sizeof(key), ".nv.shared.%s ", fn);
	p = strstr(out, key);
	if (p) {
		char type[32];
		unsigned long long addr, off, size;
		cr_assert_eq(sscanf(p + strlen(key), "%31s %llx %llx %llx", type, &addr, &off, &size), 4);
		e->shared = (int)size;
	}
	free(out);
}

static void expect_of(const char *name, const char *path, const char *fn, struct expect *e)
{
	if (!from_cuobjdump(path, fn, e))
		from_ptxas_readelf(name, path, fn, e);
}

static void inspect_ok(const char *path, struct gpuos_image_info *in)
{
	char err[512];
	int r = gpuos_image_inspect_file(path, in, err, sizeof(err));
	cr_assert_eq(r, 0, "inspect %s: %d %s", path, r, err);
}

static const struct gpuos_image_entry *entry(const struct gpuos_image_info *in, const char *name)
{
	const struct gpuos_image_entry *e = gpuos_image_entry_find(in, name);
	cr_assert_not_null(e, "no entry %s", name);
	return e;
}

/* ---- real cubins -------------------------------------------------------------------- */

static void check_two(const char *arch)
{
	char name[64];
	const char *path = cubin("two", SRC_TWO, arch);
	struct gpuos_image_info in;
	const struct gpuos_image_entry *light, *heavy, *mangled;
	struct expect el, eh, em;

	snprintf(name, sizeof(name), "two_%s", arch);
	inspect_ok(path, &in);
	cr_assert_str_eq(in.arch, arch);
	cr_assert_eq(in.abi_version, GPUOS_ABI_VERSION);
	cr_assert_eq(in.nentries, 3, "entries: %u (the helper is no entry)", in.nentries);
	cr_assert_null(gpuos_image_entry_find(&in, "helper"));
	light = entry(&in, "light");
	heavy = entry(&in, "heavy");
	mangled = entry(&in, "_Z7mangledPi");

	expect_of(name, path, "light", &el);
	expect_of(name, path, "heavy", &eh);
	expect_of(name, path, "_Z7mangledPi", &em);
	cr_assert_eq(light->registers, (uint32_t)el.regs, "%s light registers %u, expected %d", arch, light->registers,
		     el.regs);
	cr_assert_eq(heavy->registers, (uint32_t)eh.regs, "%s heavy registers %u, expected %d", arch, heavy->registers,
		     eh.regs);
	cr_assert_eq(mangled->registers, (uint32_t)em.regs);
	cr_assert_gt(heavy->registers, light->registers);
	cr_assert_eq(light->shared_bytes, (uint32_t)el.shared);
	cr_assert_eq(heavy->shared_bytes, (uint32_t)eh.shared, "%s heavy shared %u, expected %d", arch,
		     heavy->shared_bytes, eh.shared);
	cr_assert_eq(mangled->shared_bytes, (uint32_t)em.shared);
	cr_assert_eq(light->shared_bytes, 0);
	cr_assert_geq(heavy->shared_bytes, 1200);
	cr_assert_geq(mangled->shared_bytes, 17 * 8);

	cr_assert_eq(light->max_threads, 1024);
	cr_assert_eq(light->block[0], 0);
	cr_assert_eq(heavy->max_threads, 256);
	cr_assert_eq(heavy->block[0], 256);
	cr_assert_eq(heavy->block[1], 1);
	cr_assert_eq(heavy->exact, 0);
	cr_assert_eq(mangled->max_threads, 128);
	gpuos_image_info_free(&in);
	cr_assert_eq(in.entries, NULL);
}

Test(image, entries_sm_80) { check_two("sm_80"); }
Test(image, entries_sm_86) { check_two("sm_86"); }
Test(image, entries_sm_90) { check_two("sm_90"); }

Test(image, arch_specific_sm_90a)
{
	struct gpuos_image_info in;
	char err[512];
	inspect_ok(cubin("two", SRC_TWO, "sm_90a"), &in);
	cr_assert_str_eq(in.arch, "sm_90a");
	cr_assert_eq(in.arch_specific, 1);
	cr_assert_eq(gpuos_image_check_arch(&in, 9, 0, err, sizeof(err)), 0);
	gpuos_image_info_free(&in);
}

Test(image, arch_checks_on_real_cubins)
{
	struct gpuos_image_info i80, i86, i90;
	char err[512];
	inspect_ok(cubin("two", SRC_TWO, "sm_80"), &i80);
	inspect_ok(cubin("two", SRC_TWO, "sm_86"), &i86);
	inspect_ok(cubin("two", SRC_TWO, "sm_90"), &i90);
	cr_assert_eq(i80.sm_major, 8);
	cr_assert_eq(i80.sm_minor, 0);
	cr_assert_eq(i86.sm_minor, 6);
	cr_assert_eq(i90.sm_major, 9);
	cr_assert_eq(gpuos_image_check_arch(&i90, 9, 0, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&i80, 8, 0, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&i80, 8, 9, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&i86, 8, 9, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&i90, 8, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "sm_90") && strstr(err, "sm_80"), "%s", err);
	cr_assert_eq(gpuos_image_check_arch(&i80, 9, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "built for sm_80") && strstr(err, "GPU is sm_90"), "%s", err);
	cr_assert_eq(gpuos_image_check_arch(&i86, 8, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "built for sm_86") && strstr(err, "sm_80"), "%s", err);
	gpuos_image_info_free(&i80);
	gpuos_image_info_free(&i86);
	gpuos_image_info_free(&i90);
}

Test(image, reqntid_is_exact)
{
	struct gpuos_image_info in;
	const struct gpuos_image_entry *e;
	inspect_ok(cubin_reqntid(), &in);
	e = entry(&in, "req");
	cr_assert_eq(e->exact, 1);
	cr_assert_eq(e->block[0], 64);
	cr_assert_eq(e->block[1], 2);
	cr_assert_eq(e->block[2], 1);
	cr_assert_eq(e->max_threads, 128);
	gpuos_image_info_free(&in);
}

Test(image, abi_note_absent)
{
	struct gpuos_image_info in;
	char err[512];
	int r = gpuos_image_inspect_file(cubin("noabi", SRC_NOABI, "sm_90"), &in, err, sizeof(err));
	cr_assert_eq(r, -EPROTO, "%d %s", r, err);
	cr_assert(strstr(err, "no gpuos ABI note") && strstr(err, "GPUOS_APP_ABI_NOTE"), "%s", err);
	cr_assert_null(strchr(err, '\n'));
	cr_assert_eq(in.entries, NULL);
}

Test(image, abi_note_other_version)
{
	struct gpuos_image_info in;
	char err[512], want[64];
	int r = gpuos_image_inspect_file(cubin("badabi", SRC_BADABI, "sm_80"), &in, err, sizeof(err));
	cr_assert_eq(r, -EPROTO, "%d %s", r, err);
	snprintf(want, sizeof(want), "version %u", GPUOS_ABI_VERSION + 1);
	cr_assert(strstr(err, want), "%s", err);
	snprintf(want, sizeof(want), "speaks version %u", GPUOS_ABI_VERSION);
	cr_assert(strstr(err, want), "%s", err);
}

Test(image, no_entry)
{
	struct gpuos_image_info in;
	char err[512];
	int r = gpuos_image_inspect_file(cubin("noentry", SRC_NOENTRY, "sm_90"), &in, err, sizeof(err));
	cr_assert_eq(r, -ENOEXEC, "%d %s", r, err);
	cr_assert(strstr(err, "no entry points"), "%s", err);
}

Test(image, rdc_relocatable_refused_linked_accepted)
{
	struct gpuos_image_info in;
	char err[512], linked[600], *log = NULL;
	const char *rel = build("rdc_sm_90", SRC_TWO, "-cubin -rdc=true -arch=sm_90", "cubin");
	const char *nvlink = tool("nvlink");
	int r = gpuos_image_inspect_file(rel, &in, err, sizeof(err));
	cr_assert_eq(r, -ENOEXEC, "%d %s", r, err);
	cr_assert(strstr(err, "relocatable"), "%s", err);
	/* nvlink comes with nvcc (CUDA toolkit); without it this half would not run */
	cr_assert(nvlink, "nvlink is not installed (the CUDA toolkit has it): the linked half cannot run");
	snprintf(linked, sizeof(linked), "%s/rdc_linked.%d.cubin", dir(), (int)getpid());
	cr_assert_eq(sh(&log, "'%s' -arch=sm_90 '%s' -o '%s'", nvlink, rel, linked), 0, "%s", log);
	free(log);
	inspect_ok(linked, &in);
	cr_assert_eq(in.abi_version, GPUOS_ABI_VERSION, "the note survives nvlink");
	cr_assert_eq(in.nentries, 3);
	cr_assert_null(gpuos_image_entry_find(&in, "helper"));
	cr_assert_eq(entry(&in, "heavy")->max_threads, 256);
	gpuos_image_info_free(&in);
	unlink(linked);
}

Test(image, fatbin_refused)
{
	struct gpuos_image_info in;
	char err[512];
	const char *fb = build("fat", SRC_TWO, "-fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90",
			       "fatbin");
	int r = gpuos_image_inspect_file(fb, &in, err, sizeof(err));
	cr_assert_eq(r, -ENOEXEC, "%d %s", r, err);
	cr_assert(strstr(err, "fatbin"), "%s", err);
}

/* ---- hand-made and hostile input (no nvcc needed) ------------------------------------ */

static int inspect_buf(const void *b, size_t len, char *err, size_t errlen)
{
	struct gpuos_image_info in;
	int r = gpuos_image_inspect(b, len, &in, err, errlen);
	if (r == 0) {
		cr_assert_gt(in.nentries, 0);
		gpuos_image_info_free(&in);
	} else {
		cr_assert(r < 0);
		cr_assert_neq(err[0], 0, "refused (%d) without a message", r);
		cr_assert_null(strchr(err, '\n'), "message of more than one line: %s", err);
	}
	return r;
}

Test(image, empty_and_tiny)
{
	char err[512];
	uint8_t b[64] = {0x7f, 'E', 'L', 'F'};
	char path[600];
	struct gpuos_image_info in;

	cr_assert_eq(inspect_buf("", 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "empty"), "%s", err);
	cr_assert_eq(inspect_buf(NULL, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert_eq(inspect_buf(b, 3, err, sizeof(err)), -ENOEXEC);
	cr_assert_eq(inspect_buf(b, 20, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "truncated"), "%s", err);
	cr_assert_eq(inspect_buf("// Generated by NVIDIA NVVM Compiler\n", 37, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "PTX"), "%s", err);
	cr_assert_eq(inspect_buf("hello", 5, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "not an ELF"), "%s", err);

	snprintf(path, sizeof(path), "%s/empty.%d", dir(), (int)getpid());
	write_file(path, "", 0);
	cr_assert_eq(gpuos_image_inspect_file(path, &in, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, path) && strstr(err, "empty"), "%s", err);
	unlink(path);
	cr_assert_eq(gpuos_image_inspect_file("/nonexistent/app.cubin", &in, err, sizeof(err)), -ENOENT);
	cr_assert_eq(gpuos_image_inspect_file("/", &in, err, sizeof(err)), -EINVAL);
}

Test(image, host_elf_refused)
{
	char err[512];
	size_t len;
	uint8_t *self = read_file("/proc/self/exe", &len);
	cr_assert_eq(inspect_buf(self, len, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "x86-64") && strstr(err, "EM_CUDA"), "%s", err);
	/* the same as ELF32, big-endian */
	self[EI_CLASS] = ELFCLASS32;
	cr_assert_eq(inspect_buf(self, len, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "ELF64"), "%s", err);
	self[EI_CLASS] = ELFCLASS64;
	self[EI_DATA] = ELFDATA2MSB;
	cr_assert_eq(inspect_buf(self, len, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "little-endian"), "%s", err);
	free(self);
}

Test(image, check_arch_rules)
{
	struct gpuos_image_info in;
	char err[512];
	memset(&in, 0, sizeof(in));
	in.sm_major = 8;
	in.sm_minor = 6;
	strcpy(in.arch, "sm_86");
	cr_assert_eq(gpuos_image_check_arch(&in, 8, 6, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&in, 8, 9, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&in, 8, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "newer"), "%s", err);
	cr_assert_eq(gpuos_image_check_arch(&in, 9, 0, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "major"), "%s", err);
	cr_assert_eq(gpuos_image_check_arch(&in, 7, 5, err, sizeof(err)), -ENOEXEC);
	cr_assert_eq(gpuos_image_check_arch(&in, 0, 0, err, sizeof(err)), -EINVAL);
	in.sm_major = 9;
	in.sm_minor = 0;
	in.arch_specific = 1;
	strcpy(in.arch, "sm_90a");
	cr_assert_eq(gpuos_image_check_arch(&in, 9, 0, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_image_check_arch(&in, 9, 1, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "sm_90a") && strstr(err, "only on sm_90"), "%s", err);
}

/* ---- hostile variations of a real cubin --------------------------------------------- */

static uint8_t *good(size_t *len)
{
	uint8_t *b = read_file(cubin("two", SRC_TWO, "sm_90"), len);
	char err[512];
	cr_assert_eq(inspect_buf(b, *len, err, sizeof(err)), 0, "%s", err);
	return b;
}

static uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	memcpy(&v, p, (size_t)n); /* little-endian host (x86-64, AArch64) */
	return v;
}

static void put(uint8_t *p, int n, uint64_t v)
{
	memcpy(p, &v, (size_t)n);
}

static uint8_t *shdr(uint8_t *b, size_t i)
{
	return b + get(b + offsetof(Elf64_Ehdr, e_shoff), 8) + i * sizeof(Elf64_Shdr);
}

static size_t nsections(const uint8_t *b)
{
	return get(b + offsetof(Elf64_Ehdr, e_shnum), 2);
}

static size_t section_named(uint8_t *b, const char *name)
{
	size_t i, shstr = get(b + offsetof(Elf64_Ehdr, e_shstrndx), 2);
	const char *strs = (const char *)b + get(shdr(b, shstr) + offsetof(Elf64_Shdr, sh_offset), 8);
	for (i = 1; i < nsections(b); i++)
		if (!strcmp(strs + get(shdr(b, i) + offsetof(Elf64_Shdr, sh_name), 4), name))
			return i;
	cr_assert_fail("no section %s", name);
	return 0;
}

Test(image, truncated_at_every_length)
{
	size_t len, n, refused = 0;
	uint8_t *b = good(&len);
	char err[512];
	/* every length up to 4 KiB, then every 7th byte */
	for (n = 0; n < len; n += n < 4096 ? 1 : 7) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, b, n);
		cr_assert_neq(inspect_buf(cut, n, err, sizeof(err)), 0, "a %zu-byte prefix of %zu was accepted", n, len);
		refused++;
		free(cut);
	}
	cr_log_info("%zu truncations refused", refused);
	free(b);
}

Test(image, header_fields_hostile)
{
	size_t len, i;
	uint8_t *b = good(&len), *m = malloc(len);
	char err[512];
	static const struct {
		size_t off;
		int n;
		uint64_t v;
		const char *msg;
	} cases[] = {
		{offsetof(Elf64_Ehdr, e_machine), 2, EM_X86_64, "EM_CUDA"},
		{offsetof(Elf64_Ehdr, e_type), 2, ET_REL, "relocatable"},
		{offsetof(Elf64_Ehdr, e_type), 2, ET_DYN, "ELF type"},
		{offsetof(Elf64_Ehdr, e_shoff), 8, ~0ull - 10, "section headers"},
		{offsetof(Elf64_Ehdr, e_shoff), 8, 1ull << 62, "section headers"},
		{offsetof(Elf64_Ehdr, e_shnum), 2, 0xffff, "section headers"},
		{offsetof(Elf64_Ehdr, e_shnum), 2, 0, "no section headers"},
		{offsetof(Elf64_Ehdr, e_shentsize), 2, 40, "section header size"},
		{offsetof(Elf64_Ehdr, e_shstrndx), 2, 0xffff, "name table"},
		{offsetof(Elf64_Ehdr, e_shstrndx), 2, 0, "name table"},
		{offsetof(Elf64_Ehdr, e_flags), 4, 0, "e_flags"},
	};
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(m, b, len);
		put(m + cases[i].off, cases[i].n, cases[i].v);
		cr_assert_neq(inspect_buf(m, len, err, sizeof(err)), 0, "case %zu accepted", i);
		cr_assert(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err, cases[i].msg);
	}
	/* the SM version in e_flags against the toolkit's note */
	memcpy(m, b, len);
	put(m + offsetof(Elf64_Ehdr, e_flags), 4, (get(m + offsetof(Elf64_Ehdr, e_flags), 4) & ~0xff00ull) | 80u << 8);
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "sm_80") && strstr(err, "sm_90"), "%s", err);
	free(m);
	free(b);
}

Test(image, sections_hostile)
{
	size_t len, i, n;
	uint8_t *b = good(&len), *m = malloc(len);
	char err[512];
	n = nsections(b);
	for (i = 1; i < n; i++) {
		if (get(shdr(b, i) + offsetof(Elf64_Shdr, sh_type), 4) == SHT_NOBITS)
			continue;
		memcpy(m, b, len);
		put(shdr(m, i) + offsetof(Elf64_Shdr, sh_offset), 8, len - 1);
		put(shdr(m, i) + offsetof(Elf64_Shdr, sh_size), 8, 2);
		cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL, "section %zu", i);
		cr_assert(strstr(err, "section"), "%s", err);
		memcpy(m, b, len);
		put(shdr(m, i) + offsetof(Elf64_Shdr, sh_size), 8, ~0ull);
		cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL, "section %zu", i);
		memcpy(m, b, len);
		put(shdr(m, i) + offsetof(Elf64_Shdr, sh_name), 4, 0x7fffffff);
		cr_assert_neq(inspect_buf(m, len, err, sizeof(err)), 0, "section %zu name", i);
	}
	/* the symbol table's string table and entry size */
	i = section_named(b, ".symtab");
	memcpy(m, b, len);
	put(shdr(m, i) + offsetof(Elf64_Shdr, sh_link), 4, 999);
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "symbol table"), "%s", err);
	memcpy(m, b, len);
	put(shdr(m, i) + offsetof(Elf64_Shdr, sh_entsize), 8, 16);
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	free(m);
	free(b);
}

Test(image, notes_and_attributes_hostile)
{
	size_t len, s, off;
	uint8_t *b = good(&len), *m = malloc(len);
	char err[512];

	/* .note.nv.cuinfo: name and descriptor lengths past the section */
	s = section_named(b, ".note.nv.cuinfo");
	off = get(shdr(b, s) + offsetof(Elf64_Shdr, sh_offset), 8);
	memcpy(m, b, len);
	put(m + off, 4, 0xfffffff0u); /* namesz */
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "note"), "%s", err);
	memcpy(m, b, len);
	put(m + off + 4, 4, 0x1000); /* descsz */
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "note"), "%s", err);
	memcpy(m, b, len);
	put(shdr(m, s) + offsetof(Elf64_Shdr, sh_size), 8, 7); /* a header cut short */
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);

	/* .nv.info.heavy: an SVAL longer than its section, an unknown format */
	s = section_named(b, ".nv.info.heavy");
	off = get(shdr(b, s) + offsetof(Elf64_Shdr, sh_offset), 8);
	memcpy(m, b, len);
	cr_assert_eq(m[off], 4, "first attribute is an SVAL");
	put(m + off + 2, 2, 0xfff0);
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ".nv.info.heavy") && strstr(err, "claims"), "%s", err);
	memcpy(m, b, len);
	m[off] = 9;
	cr_assert_eq(inspect_buf(m, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "format"), "%s", err);

	/* .nv.info: a register count out of range */
	s = section_named(b, ".nv.info");
	off = get(shdr(b, s) + offsetof(Elf64_Shdr, sh_offset), 8);
	memcpy(m, b, len);
	cr_assert_eq(m[off + 1], 0x2f, "first global attribute is EIATTR_REGCOUNT");
	put(m + off + 8, 4, 4000);
	{
		int r = inspect_buf(m, len, err, sizeof(err));
		/* refused when the count belongs to an entry, ignored otherwise */
		cr_assert(r == 0 || (r == -EOVERFLOW && strstr(err, "registers")), "%d %s", r, err);
	}
	free(m);
	free(b);
}

Test(image, random_mutations, .timeout = 120)
{
	size_t len, i, parsed = 0, refused = 0;
	uint8_t *b = good(&len), *m = malloc(len);
	unsigned seed = 0x5eed1234u;
	char err[512];
	size_t shoff = get(b + offsetof(Elf64_Ehdr, e_shoff), 8);

	for (i = 0; i < 4000; i++) {
		int k, flips = 1 + (int)(rand_r(&seed) % 4);
		memcpy(m, b, len);
		for (k = 0; k < flips; k++) {
			size_t at;
			unsigned pick = (unsigned)rand_r(&seed) % 4;
			if (pick == 0) /* the ELF header */
				at = (size_t)rand_r(&seed) % sizeof(Elf64_Ehdr);
			else if (pick == 1 && shoff < len) /* the section headers */
				at = shoff + (size_t)rand_r(&seed) % (len - shoff);
			else /* anywhere */
				at = (size_t)rand_r(&seed) % len;
			if (rand_r(&seed) % 2)
				m[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
			else
				m[at] = (uint8_t)rand_r(&seed);
		}
		if (inspect_buf(m, len, err, sizeof(err)) == 0)
			parsed++;
		else
			refused++;
	}
	cr_log_info("4000 mutations: %zu parsed, %zu refused", parsed, refused);
	cr_assert_gt(refused, 0);
	free(m);
	free(b);
}

/* ---- gpuos image -------------------------------------------------------------------- */

/* Run cmd_image with stdout and stderr in files; returns the exit status. */
static int run_image(char **out, char **errout, int argc, ...)
{
	char *argv[8], op[600], ep[600];
	int i, rc, o1, o2, fo, fe;
	size_t len;
	va_list ap;
	va_start(ap, argc);
	for (i = 0; i < argc && i < 7; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[i] = NULL;
	snprintf(op, sizeof(op), "%s/stdout.%d", dir(), (int)getpid());
	snprintf(ep, sizeof(ep), "%s/stderr.%d", dir(), (int)getpid());
	fflush(stdout);
	fflush(stderr);
	fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	o1 = dup(1);
	o2 = dup(2);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = cmd_image(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(o1, 1);
	dup2(o2, 2);
	close(o1);
	close(o2);
	close(fo);
	close(fe);
	*out = (char *)read_file(op, &len);
	*errout = (char *)read_file(ep, &len);
	unlink(op);
	unlink(ep);
	return rc;
}

Test(image, command_json)
{
	char *out, *errout, want[2048];
	struct gpuos_image_info in;
	const char *path = cubin("two", SRC_TWO, "sm_90");
	const struct gpuos_image_entry *e;
	size_t n = 0;
	uint32_t i;

	inspect_ok(path, &in);
	cr_assert_eq(run_image(&out, &errout, 2, "--json", path), 0, "%s", errout);
	n += (size_t)snprintf(want + n, sizeof(want) - n,
			      "{\"schema\": \"gpuos.image/1\", \"path\": \"%s\", \"arch\": \"sm_90\", \"sm\": 90, "
			      "\"arch_specific\": false, \"abi_version\": %u, \"entries\": [",
			      path, GPUOS_ABI_VERSION);
	for (i = 0; i < in.nentries; i++) {
		e = &in.entries[i];
		n += (size_t)snprintf(want + n, sizeof(want) - n,
				      "%s{\"name\": \"%s\", \"registers\": %u, \"shared_bytes\": %u, \"max_threads\": %u, "
				      "\"exact_block\": %s, \"block\": [%u, %u, %u]}",
				      i ? ", " : "", e->name, e->registers, e->shared_bytes, e->max_threads,
				      e->exact ? "true" : "false", e->block[0], e->block[1], e->block[2]);
	}
	snprintf(want + n, sizeof(want) - n, "]}\n");
	cr_assert_str_eq(out, want);
	cr_assert(strstr(out, "\"name\": \"heavy\"") && strstr(out, "\"max_threads\": 256"), "%s", out);
	cr_assert_str_eq(errout, "");
	free(out);
	free(errout);

	cr_assert_eq(run_image(&out, &errout, 1, path), 0, "%s", errout);
	cr_assert(strstr(out, "architecture:   sm_90") && strstr(out, "heavy") && strstr(out, "at most 256"), "%s",
		  out);
	free(out);
	free(errout);
	gpuos_image_info_free(&in);
}

Test(image, command_errors)
{
	char *out, *errout;
	cr_assert_eq(run_image(&out, &errout, 0), GPUOS_EXIT_USAGE);
	cr_assert(strstr(errout, "gpuos image: give one app image"), "%s", errout);
	free(out);
	free(errout);
	cr_assert_eq(run_image(&out, &errout, 1, "/proc/self/exe"), GPUOS_EXIT_FAIL);
	cr_assert(!strncmp(errout, "gpuos image: /proc/self/exe: ", 29) && strstr(errout, "x86-64"), "%s", errout);
	cr_assert_eq(strchr(errout, '\n'), errout + strlen(errout) - 1, "one line: %s", errout);
	cr_assert_str_eq(out, "");
	free(out);
	free(errout);
	cr_assert_eq(run_image(&out, &errout, 2, "--bogus", "x.cubin"), GPUOS_EXIT_USAGE);
	free(out);
	free(errout);
}
