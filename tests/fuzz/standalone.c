/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/standalone.c - a main() for the fuzz targets on machines without
 * libFuzzer: runs LLVMFuzzerTestOneInput over every file of the corpus
 * directories (or files) given, then over N random mutations of them, under
 * gcc's -fsanitize=address,undefined. A crash (a sanitizer report, abort or
 * a signal) leaves the input that caused it in crash-<pid> in the current
 * directory.
 *
 *   gcc -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
 *       -D_GNU_SOURCE -Iinclude tests/fuzz/standalone.c tests/fuzz/fuzz_gguf.c \
 *       runtime/model/gguf/gguf.c -o build/fuzz_gguf_sa
 *   build/fuzz_gguf_sa [-n 100000] [-s SEED] [-t SECONDS] [-m MAXLEN] CORPUS...
 *
 * Mutations: bit flips, random bytes, "interesting" integers (0, -1, 2^31,
 * 2^32, 2^63, ...) written as 1/2/4/8-byte little-endian values, small
 * arithmetic on a field, chunk copy/insert/erase, truncation, splicing two
 * inputs; one to eight of them stacked.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gcc's and clang's sanitizer runtimes call this before they exit on an error. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

#define GPUOS_FUZZ_MIN(a, b) ((a) < (b) ? (a) : (b))

static const uint8_t *volatile cur_data;
static volatile size_t cur_size;
static char crash[64];

/* Write the input being run; async-signal-safe. */
static void dump_crash(void)
{
	int fd = open(crash, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (write(fd, (const void *)cur_data, cur_size) < 0) {
			/* nothing more to do in a dying process */
		}
		close(fd);
		if (write(2, "standalone: input saved in ", 27) < 0 || write(2, crash, strlen(crash)) < 0 ||
		    write(2, "\n", 1) < 0) {
			/* as above */
		}
	}
}

static void on_signal(int sig)
{
	dump_crash();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run_one(const uint8_t *d, size_t n)
{
	cur_data = d;
	cur_size = n;
	LLVMFuzzerTestOneInput(d, n);
}

struct input {
	uint8_t *data;
	size_t size;
};

static struct input *corpus;
static size_t n_corpus, cap_corpus;
static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static size_t rn(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static void add_file(const char *path, size_t maxlen)
{
	FILE *f = fopen(path, "rb");
	struct input in;
	long len;

	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return;
	}
	if ((size_t)len > maxlen)
		len = (long)maxlen;
	in.size = (size_t)len;
	in.data = (uint8_t *)malloc(in.size + 1);
	if (!in.data || fread(in.data, 1, in.size, f) != in.size) {
		free(in.data);
		fclose(f);
		return;
	}
	fclose(f);
	if (n_corpus == cap_corpus) {
		cap_corpus = cap_corpus ? 2 * cap_corpus : 64;
		corpus = (struct input *)realloc(corpus, cap_corpus * sizeof(*corpus));
		if (!corpus)
			exit(2);
	}
	corpus[n_corpus++] = in;
}

static void add_path(const char *path, size_t maxlen)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	char buf[4096];

	if (stat(path, &st))
		return;
	if (!S_ISDIR(st.st_mode)) {
		add_file(path, maxlen);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s", path, e->d_name);
		if (!stat(buf, &st) && S_ISREG(st.st_mode))
			add_file(buf, maxlen);
	}
	closedir(d);
}

static const uint64_t interesting[] = {
	0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 16, 31, 32, 33, 63, 64, 91, 92, 127, 128, 255, 256, 511, 512,
	4095, 4096, 65535, 65536, 0x7fffffffull, 0x80000000ull, 0xffffffffull, 0x100000000ull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull, 0xfffffffffffffff0ull,
	0x5452415020494645ull, 0x46554747ull, 0xeeull, 0xaa55ull,
};

/* One mutation of buf (size *n, capacity cap). */
static void mutate_once(uint8_t *buf, size_t *n, size_t cap)
{
	size_t len = *n, a, b, k;
	uint64_t v;
	int w;

	switch (rn(10)) {
	case 0: /* bit flip */
		if (len)
			buf[rn(len)] ^= (uint8_t)(1u << rn(8));
		break;
	case 1: /* random byte */
		if (len)
			buf[rn(len)] = (uint8_t)rnd();
		break;
	case 2: /* interesting integer */
	case 3:
		w = 1 << rn(4);
		if (len >= (size_t)w) {
			a = rn(len - (size_t)w + 1);
			v = interesting[rn(sizeof(interesting) / sizeof(interesting[0]))];
			for (k = 0; k < (size_t)w; k++)
				buf[a + k] = (uint8_t)(v >> (8 * k));
		}
		break;
	case 4: /* add/subtract a little to a 4- or 8-byte field */
		w = rn(2) ? 8 : 4;
		if (len >= (size_t)w) {
			a = rn(len - (size_t)w + 1);
			v = 0;
			for (k = 0; k < (size_t)w; k++)
				v |= (uint64_t)buf[a + k] << (8 * k);
			v += (uint64_t)(int64_t)((int)rn(65) - 32);
			for (k = 0; k < (size_t)w; k++)
				buf[a + k] = (uint8_t)(v >> (8 * k));
		}
		break;
	case 5: /* copy a chunk over another place */
		if (len > 1) {
			a = rn(len);
			b = rn(len);
			k = rn(GPUOS_FUZZ_MIN(len - a, len - b) + 1);
			memmove(buf + b, buf + a, k);
		}
		break;
	case 6: /* insert random or repeated bytes */
		k = rn(64) + 1;
		if (len + k <= cap) {
			a = rn(len + 1);
			memmove(buf + a + k, buf + a, len - a);
			if (rn(2))
				memset(buf + a, (int)rnd(), k);
			else
				for (b = 0; b < k; b++)
					buf[a + b] = (uint8_t)rnd();
			*n = len + k;
		}
		break;
	case 7: /* erase a chunk */
		if (len) {
			a = rn(len);
			k = rn(GPUOS_FUZZ_MIN(len - a, 64) + 1);
			memmove(buf + a, buf + a + k, len - a - k);
			*n = len - k;
		}
		break;
	case 8: /* truncate */
		if (len)
			*n = rn(len + 1);
		break;
	case 9: /* splice: the tail of another input */
		if (n_corpus) {
			const struct input *o = &corpus[rn(n_corpus)];

			a = rn(len + 1);
			b = rn(o->size + 1);
			k = GPUOS_FUZZ_MIN(o->size - b, cap - a);
			memcpy(buf + a, o->data + b, k);
			*n = a + k > len ? a + k : len;
		}
		break;
	}
}

int main(int argc, char **argv)
{
	unsigned long long runs = 100000, seed = (unsigned long long)time(NULL), i;
	double limit = 0;
	size_t maxlen = 1u << 20, cap, n, k;
	uint8_t *buf;
	struct timespec t0, t1;
	int opt, j;

	while ((opt = getopt(argc, argv, "n:s:t:m:")) != -1) {
		switch (opt) {
		case 'n': runs = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': limit = atof(optarg); break;
		case 'm': maxlen = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [-n RUNS] [-s SEED] [-t SECONDS] [-m MAXLEN] CORPUS...\n", argv[0]);
			return 2;
		}
	}
	for (j = optind; j < argc; j++)
		add_path(argv[j], maxlen);
	rng_state = seed * 2654435761u + 1;
	snprintf(crash, sizeof(crash), "crash-%d", (int)getpid());
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(dump_crash);
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGFPE, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	for (k = 0; k < n_corpus; k++)
		run_one(corpus[k].data, corpus[k].size);
	cap = maxlen + 64;
	buf = (uint8_t *)malloc(cap);
	if (!buf)
		return 2;
	for (i = 0; i < runs; i++) {
		uint8_t *exact;

		if (n_corpus) {
			const struct input *in = &corpus[rn(n_corpus)];

			n = in->size < cap ? in->size : cap;
			memcpy(buf, in->data, n);
		} else {
			n = rn(4096);
			for (k = 0; k < n; k++)
				buf[k] = (uint8_t)rnd();
		}
		for (k = rn(8) + 1; k; k--)
			mutate_once(buf, &n, cap);
		/* an exact-size copy so that ASan catches a read one past the end */
		exact = (uint8_t *)malloc(n ? n : 1);
		if (!exact)
			return 2;
		memcpy(exact, buf, n);
		run_one(exact, n);
		free(exact);
		if (limit > 0 && (i & 255) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 > limit) {
				i++;
				break;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("standalone: %zu corpus inputs, %llu mutations, seed %llu, %.1f s, no crash\n", n_corpus, i, seed,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(buf);
	return 0;
}
