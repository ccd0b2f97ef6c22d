/* SPDX-License-Identifier: MIT */
/*
 * bench/cufile_load.c - path (d) of the whole-file rows: the file into VRAM
 * with NVIDIA's cuFile (GPUDirect Storage), T threads each taking the next
 * CHUNK of the file from a shared counter and reading it with cuFileRead
 * straight to its place in one cudaMalloc'd buffer.
 *
 *   cufile-load FILE [--threads 8] [--chunk-mib 16] [--buffered]
 *
 * Built on the GPU machine by bench/all.sh, which has libcufile (this one
 * has no cufile.h): cc -Iinclude -Ibench -I$CUDA/include ... -lcufile.
 * cuFile runs in one of two modes, and the JSON says which ran:
 *   "gds"    the nvidia-fs kernel driver is loaded (/proc/driver/nvidia-fs):
 *            DMA from the drive to VRAM;
 *   "compat" it is not: cuFile reads with POSIX calls into its own pinned
 *            bounce buffers and copies them to VRAM (cufile.json's
 *            allow_compat_mode, on by default).
 * The file is opened with O_DIRECT where its file system allows it (GDS
 * needs it), else, or with --buffered, without ("direct": false: compat
 * mode then reads through the page cache).
 *
 * cuFileHandleRegister looks the file's block device up through udev, in
 * either mode, and fails (error 5027 here, its log saying "udev property
 * not found: ID_FS_USAGE") where udev keeps no record of it: in containers,
 * which have no /run/udev. bench/all.sh writes the record it needs. Files
 * on tmpfs or overlay have no block device at all: cuFile refuses them.
 *
 * One JSON object on stdout, with the keys of bench/baselines.c (bench,
 * file, file_bytes, sum, bytes, seconds, gb_per_s, cpu_s, cpu_s_per_gb, gpu)
 * plus mode, direct, threads, chunk_mib. sum is the checksum of the whole
 * VRAM copy (bench/vram_sum.h). Any failure: one line on stderr, exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cufile.h>

#include "bench_util.h"
#include "vram_sum.h"

#define MIB (1ull << 20)

static void ck_file(CUfileError_t e, const char *what)
{
	if (e.err != CU_FILE_SUCCESS)
		die("%s: cuFile error %d (cufile.h CUfileOpError; CUDA driver error %d)", what, (int)e.err,
		    (int)e.cu_err);
}

struct job {
	CUfileHandle_t fh;
	char *dst;
	uint64_t size, chunk;
	uint64_t *next;
	uint64_t moved;
	const char *path;
};

static void *reader(void *p)
{
	struct job *j = (struct job *)p;
	int dev_set = cudaSetDevice(0) == cudaSuccess;
	if (!dev_set)
		die("cudaSetDevice in a reader thread");
	for (;;) {
		uint64_t off = __atomic_fetch_add(j->next, j->chunk, __ATOMIC_RELAXED), done = 0;
		uint64_t n;
		if (off >= j->size)
			break;
		n = j->size - off < j->chunk ? j->size - off : j->chunk;
		while (done < n) {
			ssize_t r = cuFileRead(j->fh, j->dst, n - done, (off_t)(off + done), (off_t)(off + done));
			if (r < 0)
				die("%s: cuFileRead of %llu bytes at %llu: %s", j->path, (unsigned long long)(n - done),
				    (unsigned long long)(off + done),
				    r == -1 ? strerror(errno) : "a cuFile error (negative CUfileOpError)");
			if (r == 0)
				die("%s: ends at %llu, before its size said", j->path, (unsigned long long)(off + done));
			done += (uint64_t)r;
		}
		j->moved += n;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *path, *mode, *err = NULL;
	uint64_t chunk = 16 * MIB, next = 0, moved = 0, sum;
	int threads = 8, i, fd, direct = 1;
	struct stat st;
	struct cudaDeviceProp prop;
	CUfileDescr_t descr;
	CUfileHandle_t fh;
	struct job *jobs;
	pthread_t *th;
	char *dst;
	double t0, t1, c0, c1;

	snprintf(bench_who, sizeof(bench_who), "cufile-load");
	if (argc < 2 || argv[1][0] == '-')
		die("usage: cufile-load FILE [--threads T] [--chunk-mib M] [--buffered]");
	path = argv[1];
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--buffered")) {
			direct = 0;
			continue;
		}
		if (i + 1 >= argc)
			die("%s needs a value", argv[i]);
		if (!strcmp(argv[i], "--threads")) {
			threads = (int)num(argv[i], argv[i + 1], 1, 256);
			i++;
		} else if (!strcmp(argv[i], "--chunk-mib")) {
			chunk = num(argv[i], argv[i + 1], 1, 4096) * MIB;
			i++;
		} else
			die("unknown option %s", argv[i]);
	}
	fd = direct ? open(path, O_RDONLY | O_DIRECT) : -1;
	if (!direct || (fd < 0 && errno == EINVAL)) {
		direct = 0;
		fd = open(path, O_RDONLY);
	}
	if (fd < 0 || fstat(fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		die("%s: not a non-empty regular file", path);
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || cudaSetDevice(0) != cudaSuccess)
		die("no GPU");
	mode = access("/proc/driver/nvidia-fs/stats", R_OK) == 0 ? "gds" : "compat";
	if (getenv("CUFILE_FORCE_COMPAT_MODE") && !strcmp(getenv("CUFILE_FORCE_COMPAT_MODE"), "true"))
		mode = "compat";
	ck_file(cuFileDriverOpen(), "cuFileDriverOpen");
	memset(&descr, 0, sizeof(descr));
	descr.handle.fd = fd;
	descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	ck_file(cuFileHandleRegister(&fh, &descr), "cuFileHandleRegister");
	if (cudaMalloc((void **)&dst, (size_t)st.st_size) != cudaSuccess)
		die("cudaMalloc of %lld bytes", (long long)st.st_size);
	/* Registration pins the buffer for DMA; where it fails (BAR space, or
	 * compat mode) cuFile goes through its own bounce buffers instead. */
	(void)cuFileBufRegister(dst, (size_t)st.st_size, 0);
	/* The first read pays for the driver's setup: one chunk, not timed. */
	if (cuFileRead(fh, dst, (size_t)(st.st_size < (off_t)chunk ? st.st_size : (off_t)chunk), 0, 0) < 0)
		die("%s: the first cuFileRead failed", path);
	jobs = calloc((size_t)threads, sizeof(*jobs));
	th = calloc((size_t)threads, sizeof(*th));
	if (!jobs || !th)
		die("out of memory");
	c0 = cpu_s();
	t0 = now_s();
	for (i = 0; i < threads; i++) {
		jobs[i] = (struct job){ fh, dst, (uint64_t)st.st_size, chunk, &next, 0, path };
		if (pthread_create(&th[i], NULL, reader, &jobs[i]))
			die("pthread_create");
	}
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		moved += jobs[i].moved;
	}
	/* cuFileRead returns once the data is in VRAM; nothing left in flight. */
	t1 = now_s();
	c1 = cpu_s();
	if (moved != (uint64_t)st.st_size)
		die("%s: moved %llu bytes, the file has %lld", path, (unsigned long long)moved, (long long)st.st_size);
	sum = vram_sum(dst, (uint64_t)st.st_size, &err);
	if (err)
		die("%s failed", err);
	fputs("{\"bench\": \"cufile\", \"file\": ", stdout);
	json_str(path);
	printf(", \"file_bytes\": %lld, \"sum\": \"%016llx\", \"bytes\": %llu, "
	       "\"seconds\": %.6f, \"gb_per_s\": %.3f, \"cpu_s\": %.3f, \"cpu_s_per_gb\": %.3f, \"mode\": \"%s\", "
	       "\"direct\": %s, \"threads\": %d, \"chunk_mib\": %llu, \"gpu\": ",
	       (long long)st.st_size, (unsigned long long)sum, (unsigned long long)moved, t1 - t0,
	       (double)moved / (t1 - t0) / 1e9, c1 - c0, (c1 - c0) / ((double)moved / 1e9), mode,
	       direct ? "true" : "false", threads, (unsigned long long)(chunk / MIB));
	json_str(prop.name);
	puts("}");
	cuFileBufDeregister(dst);
	cuFileHandleDeregister(fh);
	close(fd);
	return 0;
}
