/* SPDX-License-Identifier: MIT */
/*
 * Running one app in a booted runtime (boot/app_run.h).
 *
 * Client memory an app gets, cut from the heap region the caller hands in:
 *
 *   heap + 0        struct gpuos_app_args (what the entry is given)
 *   heap + 128      64 bytes of scratch (host mode; on the GPU it is in VRAM)
 *   heap + 256      argv[argc] (runtime-space pointers), then the strings
 *   next page       out[APP_OUT_BYTES]
 *   next 64 KiB..   the app's heap; in host mode its second half is the
 *                   app's "vram" (host mode has no VRAM, and a destination
 *                   must lie in registered memory)
 *
 * On the GPU the app's vram is the runtime's VRAM client memory
 * (dev_heap_bytes) after a first 64 KiB whose first 64 bytes are the
 * scratch. The heap is host memory the GPU reaches over PCIe: the app's
 * status and report are read from there after the kernel has ended.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuos/app.h"

#include "gpuos/host.h"

#define ARGS_OFF 0u
#define SCRATCH_OFF 128u
#define ARGV_OFF 256u
#define VRAM_SKIP (64u << 10)

typedef void (*host_entry_fn)(struct gpuos_app_args *, uint32_t, uint32_t);

int app_is_host_variant(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && strcmp(path + n - 3, ".so") == 0;
}

/* "build/apps/sha256.cubin" -> "sha256" */
static void stem(const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');
	const char *dot;
	b = b ? b + 1 : path;
	dot = strrchr(b, '.');
	snprintf(buf, len, "%.*s", (int)(dot && dot != b ? (size_t)(dot - b) : strlen(b)), b);
}

/* "build/apps/sha256.cubin" -> "build/apps/sha256.so"; a name without a
 * slash gets "./" (dlopen would search the library path otherwise). */
void app_host_variant_of(const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');
	const char *dot = strrchr(b ? b + 1 : path, '.');
	size_t keep = dot && dot != (b ? b + 1 : path) ? (size_t)(dot - path) : strlen(path);
	snprintf(buf, len, "%s%.*s.so", b ? "" : "./", (int)keep, path);
}

static void so_path(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", strchr(path, '/') ? "" : "./", path);
}

/* Open a host-mode variant and find its entry; checks its ABI symbol. */
static int host_open(const char *path, const char *entry, void **handle, host_entry_fn *fn, char *err,
		     size_t errlen)
{
	char p[4096];
	const unsigned int *abi;
	void *h;

	so_path(path, p, sizeof(p));
	/* The ABI first, from the file: loading runs the library's code. */
	{
		uint32_t v;
		char why[256];
		int r = gpuos_image_so_abi(p, &v, why, sizeof(why));
		if (r) {
			snprintf(err, errlen, "%s: %s", path, why);
			return r;
		}
		if (v != GPUOS_ABI_VERSION) {
			snprintf(err, errlen, "%s is built for gpuos ABI %u, this runtime speaks %u", path, v,
				 GPUOS_ABI_VERSION);
			return -EPROTO;
		}
	}
	h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "cannot open the host-mode variant: %s", dlerror());
		return -ENOEXEC;
	}
	abi = (const unsigned int *)dlsym(h, GPUOS_APP_ABI_SYMBOL);
	if (!abi) {
		snprintf(err, errlen, "%s has no gpuos ABI note (GPUOS_APP_ABI_NOTE; symbol %s)", path,
			 GPUOS_APP_ABI_SYMBOL);
		dlclose(h);
		return -EPROTO;
	}
	if (*abi != GPUOS_ABI_VERSION) {
		snprintf(err, errlen, "%s is built for gpuos ABI %u, this runtime speaks %u", path, *abi,
			 GPUOS_ABI_VERSION);
		dlclose(h);
		return -EPROTO;
	}
	*(void **)fn = dlsym(h, entry);
	if (!*fn) {
		snprintf(err, errlen, "%s has no entry %s", path, entry);
		dlclose(h);
		return -ENOEXEC;
	}
	*handle = h;
	return 0;
}

/* The entry to run: the one asked for, the only one, or the one named like the file. */
static int pick_entry(const struct gpuos_image_info *in, const struct app_run *o,
		      const struct gpuos_image_entry **out, char *err, size_t errlen)
{
	char name[256];
	uint32_t i;
	size_t n = 0;

	if (o->entry) {
		*out = gpuos_image_entry_find(in, o->entry);
		if (*out)
			return 0;
		n = (size_t)snprintf(err, errlen, "%s has no entry %s (entries:", o->image, o->entry);
	} else {
		if (in->nentries == 1) {
			*out = &in->entries[0];
			return 0;
		}
		stem(o->image, name, sizeof(name));
		*out = gpuos_image_entry_find(in, name);
		if (*out)
			return 0;
		n = (size_t)snprintf(err, errlen, "%s has %u entries and none is called %s: give --entry (entries:",
				     o->image, in->nentries, name);
	}
	for (i = 0; i < in->nentries && n < errlen; i++)
		n += (size_t)snprintf(err + n, errlen - n, " %s", in->entries[i].name);
	if (n < errlen)
		snprintf(err + n, errlen - n, ")");
	return -ENOENT;
}

static void geometry(const struct app_run *o, unsigned *grid, unsigned *block)
{
	*grid = o->grid ? o->grid : 1u;
	*block = o->block ? o->block : 32u;
}

/* Inspect a cubin (its bytes in buf) against o: entry, block, arch (sm > 0). */
static int check_cubin(const void *buf, size_t len, const struct app_run *o, int sm,
		       struct gpuos_image_info *in, char *entry, size_t entry_len, char *err, size_t errlen)
{
	const struct gpuos_image_entry *e;
	char why[512];
	unsigned grid, block;
	int r;

	r = gpuos_image_inspect(buf, len, in, why, sizeof(why));
	if (r) {
		snprintf(err, errlen, "%s: %s", o->image, why);
		return r;
	}
	if (sm > 0 && (r = gpuos_image_check_arch(in, sm / 10, sm % 10, why, sizeof(why)))) {
		snprintf(err, errlen, "%s: %s%s", o->image, why, o->sm ? " (checked against --arch)" : "");
		goto fail;
	}
	r = pick_entry(in, o, &e, err, errlen);
	if (r)
		goto fail;
	geometry(o, &grid, &block);
	if (block > e->max_threads || (e->exact && block != e->max_threads)) {
		snprintf(err, errlen, "--block %u: entry %s allows %s %u threads per block", block, e->name,
			 e->exact ? "exactly" : "at most", e->max_threads);
		r = -EINVAL;
		goto fail;
	}
	snprintf(entry, entry_len, "%s", e->name);
	return 0;
fail:
	gpuos_image_info_free(in);
	return r;
}

static int check_geometry(const struct app_run *o, int host, char *err, size_t errlen)
{
	unsigned grid, block;
	geometry(o, &grid, &block);
	if (block > GPUOS_IMAGE_DEFAULT_MAX_THREADS) { /* CUDA's limit, the default of an image */
		snprintf(err, errlen, "--block %u: at most %u threads per block", block, GPUOS_IMAGE_DEFAULT_MAX_THREADS);
		return -EINVAL;
	}
	if (host && (uint64_t)grid * block > APP_HOST_MAX_THREADS) {
		snprintf(err, errlen, "--grid %u --block %u: host mode runs at most %u threads", grid, block,
			 APP_HOST_MAX_THREADS);
		return -EINVAL;
	}
	if ((uint64_t)grid * block > 0xffffffffull) {
		snprintf(err, errlen, "--grid %u --block %u: too many threads", grid, block);
		return -EINVAL;
	}
	if (o->argc > (int)GPUOS_APP_MAX_ARGS) {
		snprintf(err, errlen, "%d arguments: at most %u", o->argc, GPUOS_APP_MAX_ARGS);
		return -E2BIG;
	}
	return 0;
}

int app_check(const struct app_run *o, char *err, size_t errlen)
{
	char entry[256];
	int r;

	if (app_is_host_variant(o->image)) {
		void *h;
		host_entry_fn fn;
		r = check_geometry(o, 1, err, errlen);
		if (r)
			return r;
		if (!o->entry)
			stem(o->image, entry, sizeof(entry));
		r = host_open(o->image, o->entry ? o->entry : entry, &h, &fn, err, errlen);
		if (!r)
			dlclose(h);
		return r;
	} else {
		struct gpuos_image_info in;
		uint8_t *buf;
		size_t len;
		r = check_geometry(o, 0, err, errlen);
		if (r)
			return r;
		r = gpuos_image_read_file(o->image, &buf, &len, err, errlen);
		if (r)
			return r;
		r = check_cubin(buf, len, o, o->sm, &in, entry, sizeof(entry), err, errlen);
		free(buf);
		if (!r)
			gpuos_image_info_free(&in);
		return r;
	}
}

/* ---- progress while the app runs --------------------------------------------- */

struct watch {
	struct gpuos_sys *s;
	const struct app_run *o;
	const struct gpuos_app_args *a;
	uint64_t bytes0; /* the runtime's bytes at the launch */
};

#define WATCH_NS 10000000L /* between two looks; the caller's bar limits its own rate */

/* Relaxed loads: the app's counters and the runtime's are only displayed. */
static void watch_report(const struct watch *w)
{
	uint64_t total = __atomic_load_n(&w->a->progress_total, __ATOMIC_RELAXED);
	uint64_t done;
	if (total) {
		done = __atomic_load_n(&w->a->progress_done, __ATOMIC_RELAXED);
	} else {
		struct gpuos_stats st;
		gpuos_sys_stats(w->s, &st);
		done = st.bytes - w->bytes0;
	}
	w->o->progress(w->o->progress_ctx, done, total);
}

static void watch_sleep(void)
{
	struct timespec ts = {0, WATCH_NS};
	nanosleep(&ts, NULL);
}

/* ---- host mode ---------------------------------------------------------------- */

struct host_thread {
	host_entry_fn fn;
	struct gpuos_app_args *a;
	uint32_t tid, n;
	uint32_t *running; /* threads not yet returned, shared by all */
};

static void *host_thread_main(void *p)
{
	struct host_thread *t = (struct host_thread *)p;
	t->fn(t->a, t->tid, t->n);
	/* Release: after the app's work; pairs with the watcher's acquire load,
	 * which only decides when to stop displaying (the joins order the rest). */
	__atomic_sub_fetch(t->running, 1u, __ATOMIC_RELEASE);
	return NULL;
}

static int run_host(host_entry_fn fn, struct gpuos_app_args *a, uint32_t n, const struct watch *w, char *err,
		    size_t errlen)
{
	uint32_t running = n;
	pthread_t *th = calloc(n, sizeof(pthread_t));
	struct host_thread *ht = calloc(n, sizeof(struct host_thread));
	pthread_attr_t attr;
	uint32_t i, started = 0;
	int r = 0;

	if (!th || !ht) {
		free(th);
		free(ht);
		return -ENOMEM;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1u << 20);
	for (i = 0; i < n; i++) {
		ht[i].fn = fn;
		ht[i].a = a;
		ht[i].tid = i;
		ht[i].n = n;
		ht[i].running = &running;
		if (pthread_create(&th[i], &attr, host_thread_main, &ht[i])) {
			/* The threads already started may wait for this one: the
			 * app is told it has fewer, which only apps that count
			 * on all of them notice. */
			snprintf(err, errlen, "cannot start app thread %u of %u", i, n);
			r = -EAGAIN;
			break;
		}
		started++;
	}
	pthread_attr_destroy(&attr);
	__atomic_sub_fetch(&running, n - started, __ATOMIC_RELAXED);
	while (w && __atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		watch_report(w);
		watch_sleep();
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	free(ht);
	return r;
}

/* Exact statistics: the runtime publishes them when it parks. */
static void stats_now(struct gpuos_sys *s, int park, struct gpuos_stats *st)
{
	char e[256];
	if (park && !gpuos_park(s, e, sizeof(e))) {
		gpuos_sys_stats(s, st);
		gpuos_resume(s, e, sizeof(e));
		return;
	}
	gpuos_sys_stats(s, st);
}

static void stats_sub(struct gpuos_stats *d, const struct gpuos_stats *a, const struct gpuos_stats *b)
{
	d->requests = b->requests - a->requests;
	d->bytes = b->bytes - a->bytes;
	d->errors = b->errors - a->errors;
	d->commands = b->commands - a->commands;
	d->timeouts = b->timeouts - a->timeouts;
	d->doorbells = b->doorbells - a->doorbells;
	d->polls = b->polls - a->polls;
	d->zero_copy = b->zero_copy - a->zero_copy;
	d->state = b->state;
	d->notices = b->notices;
}

/* One run of an app: what app_run's steps hand on to the next. */
struct run {
	struct gpuos_sys *s;
	const struct app_run *o;
	int on_gpu;
	unsigned grid, block;
	char entry[256], so[4096];
	struct gpuos_app *app;    /* loaded on the GPU, until unloaded */
	void *handle;             /* the host-mode variant, until closed */
	host_entry_fn fn;
	uint64_t out_off;         /* of the app's report in the heap */
};

/* The checked cubin in buf onto the GPU, into x->app. */
static int load_cubin(struct run *x, const uint8_t *buf, char *err, size_t errlen)
{
	unsigned maxt = 0;
	uint64_t dev_len = 0;
	int r;

	if (!gpuos_sys_mbox_device(x->s)) {
		snprintf(err, errlen, "GPU apps post to a mailbox in VRAM: this runtime's is in host memory "
			 "(boot the service with --mbox-vram)");
		return -EINVAL;
	}
	gpuos_sys_dev_heap(x->s, &dev_len);
	if (dev_len < VRAM_SKIP + APP_MIN_HEAP) {
		snprintf(err, errlen, "the runtime has %llu bytes of VRAM client memory; apps need at least %u "
			 "(--vram-mib)", (unsigned long long)dev_len, VRAM_SKIP + APP_MIN_HEAP);
		return -ENOMEM;
	}
	r = gpuos_sys_app_load(x->s, buf, x->entry, &x->app, &maxt, err, errlen);
	if (r)
		return r;
	if (maxt && x->block > maxt) {
		char e2[256];
		snprintf(err, errlen, "--block %u: the driver allows entry %s at most %u threads per block "
			 "(its registers)", x->block, x->entry, maxt);
		gpuos_sys_app_unload(x->s, x->app, e2, sizeof(e2));
		x->app = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Step 1, the image: inspected, loaded (GPU) or its host-mode variant
 * opened. Nothing is left loaded or open on failure. */
static int open_image(struct run *x, char *err, size_t errlen)
{
	const struct app_run *o = x->o;
	struct gpuos_image_info in;
	uint8_t *buf;
	size_t len;
	int r;

	if (app_is_host_variant(o->image)) {
		if (o->entry)
			snprintf(x->entry, sizeof(x->entry), "%s", o->entry);
		else
			stem(o->image, x->entry, sizeof(x->entry));
		snprintf(x->so, sizeof(x->so), "%s", o->image);
		return host_open(x->so, x->entry, &x->handle, &x->fn, err, errlen);
	}
	r = gpuos_image_read_file(o->image, &buf, &len, err, errlen);
	if (r)
		return r;
	r = check_cubin(buf, len, o, o->sm ? o->sm : gpuos_sys_gpu_sm(x->s), &in, x->entry, sizeof(x->entry), err,
			errlen);
	if (r) {
		free(buf);
		return r;
	}
	gpuos_image_info_free(&in);
	if (x->on_gpu) {
		r = load_cubin(x, buf, err, errlen);
		free(buf);
		return r;
	}
	free(buf);
	app_host_variant_of(o->image, x->so, sizeof(x->so));
	if (access(x->so, F_OK)) {
		snprintf(err, errlen, "no GPU runtime here (host mode) and no host-mode variant %s beside %s "
			 "(make builds both)", x->so, o->image);
		return -ENOENT;
	}
	return host_open(x->so, x->entry, &x->handle, &x->fn, err, errlen);
}

/* Step 2: arguments, report and memory, in the client heap (the layout
 * at the top of this file), described in *a. */
static int place_args(struct run *x, struct gpuos_app_args *a, char *heap, uint64_t heap_rt, uint64_t heap_len,
		      char *err, size_t errlen)
{
	const struct app_run *o = x->o;
	uint64_t *argv_rt = (uint64_t *)(heap + ARGV_OFF);
	uint64_t str_bytes = 0, p, rest_off, rest;
	int i, r;

	for (i = 0; i < o->argc; i++)
		str_bytes += strlen(o->argv[i]) + 1u;
	x->out_off = GPUOS_ALIGN_UP(ARGV_OFF + (uint64_t)o->argc * 8u + str_bytes, 4096u);
	rest_off = GPUOS_ALIGN_UP(x->out_off + APP_OUT_BYTES, (uint64_t)VRAM_SKIP);
	if (heap_len < rest_off + APP_MIN_HEAP) {
		snprintf(err, errlen, "%llu bytes of client memory: the app needs at least %llu (--heap-mib)",
			 (unsigned long long)heap_len, (unsigned long long)(rest_off + APP_MIN_HEAP));
		return -ENOMEM;
	}
	rest = heap_len - rest_off;
	memset(heap, 0, rest_off);
	p = ARGV_OFF + (uint64_t)o->argc * 8u;
	for (i = 0; i < o->argc; i++) {
		size_t n = strlen(o->argv[i]) + 1u;
		memcpy(heap + p, o->argv[i], n);
		argv_rt[i] = heap_rt + p;
		p += n;
	}
	a->magic = GPUOS_APP_MAGIC;
	a->version = GPUOS_ABI_VERSION;
	a->mbox = gpuos_sys_mbox_rt(x->s);
	a->argc = (uint32_t)o->argc;
	a->threads = x->grid * x->block;
	a->argv = heap_rt + ARGV_OFF;
	a->out = heap_rt + x->out_off;
	a->out_len = APP_OUT_BYTES;
	a->status = 0;
	a->on_gpu = (uint32_t)x->on_gpu;
	if (x->on_gpu) {
		static const uint8_t zero[64];
		uint64_t dev_len = 0, dev = gpuos_sys_dev_heap(x->s, &dev_len);
		a->heap = heap_rt + rest_off;
		a->heap_len = rest;
		a->scratch = dev;
		a->vram = dev + VRAM_SKIP;
		a->vram_len = dev_len - VRAM_SKIP;
		/* On the calling thread's own stream: safe while the runtime spins. */
		r = gpuos_sys_copy(x->s, (void *)(uintptr_t)dev, zero, sizeof(zero), 1);
		if (r)
			snprintf(err, errlen, "cannot clear the app's scratch in VRAM");
		return r;
	}
	{
		uint64_t half = GPUOS_ALIGN_DOWN(rest / 2u, 4096u);
		a->heap = heap_rt + rest_off;
		a->heap_len = half;
		a->vram = heap_rt + rest_off + half;
		a->vram_len = rest - half;
		a->scratch = heap_rt + SCRATCH_OFF;
	}
	return 0;
}

/* Step 3: run the app to its end, then unload or close it (also when it
 * failed), with the runtime's statistics before and after. */
static int run_app(struct run *x, struct gpuos_app_args *a, uint64_t heap_rt, struct gpuos_stats *before,
		   struct gpuos_stats *after, char *err, size_t errlen)
{
	const struct app_run *o = x->o;
	struct watch w;
	int r;

	stats_now(x->s, !x->on_gpu, before);
	w.s = x->s;
	w.o = o;
	w.a = a;
	w.bytes0 = before->bytes;
	if (x->on_gpu) {
		/* The launch orders the host's writes of the heap before the kernel's reads. */
		r = gpuos_sys_app_launch(x->s, x->app, heap_rt + ARGS_OFF, x->grid, x->block, err, errlen);
		while (!r && o->progress && gpuos_sys_app_running(x->s, x->app)) {
			watch_report(&w);
			watch_sleep();
		}
		if (!r)
			r = gpuos_sys_app_wait(x->s, x->app, err, errlen);
		if (r) {
			/* A failed kernel leaves the context unusable: nothing to unload into. */
			return r;
		}
		r = gpuos_sys_app_unload(x->s, x->app, err, errlen);
		x->app = NULL;
		if (r)
			return r;
	} else {
		r = run_host(x->fn, a, x->grid * x->block, o->progress ? &w : NULL, err, errlen);
		dlclose(x->handle);
		x->handle = NULL;
		if (r)
			return r;
	}
	stats_now(x->s, !x->on_gpu, after);
	return 0;
}

int app_run(struct gpuos_sys *s, char *heap, uint64_t heap_rt, uint64_t heap_len, const struct app_run *o,
	    struct app_result *res, char *err, size_t errlen)
{
	const struct gpuos_info *info = gpuos_sys_info(s);
	struct gpuos_app_args *a = (struct gpuos_app_args *)(heap + ARGS_OFF);
	struct gpuos_stats before, after;
	struct run x;
	int r;

	memset(res, 0, sizeof(*res));
	memset(&x, 0, sizeof(x));
	x.s = s;
	x.o = o;
	x.on_gpu = info->gpu && !app_is_host_variant(o->image);
	geometry(o, &x.grid, &x.block);
	r = check_geometry(o, !x.on_gpu, err, errlen);
	if (r)
		return r;
	if (info->gpu && !x.on_gpu) {
		snprintf(err, errlen, "%s is a host-mode variant: it runs only against a runtime in host mode (--host)",
			 o->image);
		return -EINVAL;
	}
	r = open_image(&x, err, errlen);
	if (r)
		return r;
	snprintf(res->entry, sizeof(res->entry), "%s", x.entry);
	res->gpu = x.on_gpu;
	r = place_args(&x, a, heap, heap_rt, heap_len, err, errlen);
	if (r)
		goto unload;
	r = run_app(&x, a, heap_rt, &before, &after, err, errlen);
	if (r)
		return r;
	stats_sub(&res->delta, &before, &after);

	/* 4. What the app left. Pairs with the kernel's end (stream synchronised)
	 * or the joins of the host threads. */
	res->status = __atomic_load_n(&a->status, __ATOMIC_ACQUIRE);
	heap[x.out_off + APP_OUT_BYTES - 1u] = 0;
	res->out = strdup(heap + x.out_off);
	if (!res->out)
		return -ENOMEM;
	return 0;
unload:
	if (x.app) {
		char e2[256];
		gpuos_sys_app_unload(s, x.app, e2, sizeof(e2));
	}
	if (x.handle)
		dlclose(x.handle);
	return r;
}

void app_result_free(struct app_result *res)
{
	free(res->out);
	res->out = NULL;
}
