/* SPDX-License-Identifier: MIT */
/*
 * The emulated controller (boot/emu) behind the ops table: "emu:PATH[,k=v]"
 * and "null[:SIZE]" (an emulated controller with the null backend: every
 * command completes at once, no data moves; it measures the host path).
 * With a GPU, the register file is pinned mapped memory the GPU's MMIO
 * stores reach, and DMA into VRAM goes through a copy stream.
 * "emu:IMG,ssds=N" is an array: N controllers (members) holding the image
 * striped (boot/emu/emu.h); every DMA region is mapped into each of them at
 * the same IOVA.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl.h"
#include "../emu/emu.h"

struct emu_priv {
	struct gpuos_emu *emu[GPUOS_EMU_MAX_SSDS]; /* the members */
	uint32_t n;
	/* register files allocated through env (with a GPU): host mapping and
	 * device address of each, in allocation order */
	uint32_t nregs;
	void *regs_host[GPUOS_EMU_MAX_SSDS];
	uint64_t regs_dev[GPUOS_EMU_MAX_SSDS];
	struct gpuos_emu_opts o;   /* as parsed: the members' performance model */
};

static void *emu_alloc_regs(void *ctx, size_t len)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)ctx;
	struct emu_priv *p = (struct emu_priv *)c->priv;
	uint32_t i = p->nregs;
	if (i >= GPUOS_EMU_MAX_SSDS || gpuos_gpu_host_alloc(c->gpu, len, &p->regs_host[i], &p->regs_dev[i]))
		return NULL;
	p->nregs++;
	return p->regs_host[i];
}

/* The device address of a register file emu_alloc_regs handed out. */
static uint64_t regs_dev_of(struct emu_priv *p, volatile uint32_t *host)
{
	uint32_t i;
	for (i = 0; i < p->nregs; i++)
		if (p->regs_host[i] == (void *)(uintptr_t)host)
			return p->regs_dev[i];
	return 0;
}

static void emu_free_regs(void *ctx, void *ptr, size_t len)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)ctx;
	(void)len;
	gpuos_gpu_host_free(c->gpu, ptr);
}

static int emu_dev_copy(void *ctx, void *dst, const void *src, size_t len, int to_device)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)ctx;
	return gpuos_gpu_copy(c->gpu, dst, src, len, to_device);
}

static void emu_thread_init(void *ctx)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)ctx;
	gpuos_gpu_thread_init(c->gpu);
}

/* ---- the DMA engine with a GPU (boot/gpu.h's per-thread channels) ---- */
static int gpu_dma_copy(void *ctx, void *dst, const void *src, size_t len)
{
	return gpuos_gpu_dma_copy(((struct gpuos_ctrl *)ctx)->gpu, dst, src, len);
}
static int gpu_dma_gather(void *ctx, void *dst, const void *src, size_t len)
{
	return gpuos_gpu_dma_gather(((struct gpuos_ctrl *)ctx)->gpu, dst, src, len);
}
static int gpu_dma_zero(void *ctx, void *dst, size_t len)
{
	return gpuos_gpu_dma_zero(((struct gpuos_ctrl *)ctx)->gpu, dst, len);
}
static int gpu_dma_mark(void *ctx, uint64_t *ticket)
{
	return gpuos_gpu_dma_mark(((struct gpuos_ctrl *)ctx)->gpu, ticket);
}
static int gpu_dma_poll(void *ctx, uint64_t ticket)
{
	return gpuos_gpu_dma_poll(((struct gpuos_ctrl *)ctx)->gpu, ticket);
}
static int gpu_host_register(void *ctx, void *p, size_t len)
{
	uint64_t dev;
	return gpuos_gpu_host_register(((struct gpuos_ctrl *)ctx)->gpu, p, len, &dev);
}
static void gpu_host_unregister(void *ctx, void *p)
{
	gpuos_gpu_host_unregister(((struct gpuos_ctrl *)ctx)->gpu, p);
}
static void *gpu_pinned_alloc(void *ctx, size_t len)
{
	void *p = NULL;
	uint64_t dev;
	return gpuos_gpu_host_alloc(((struct gpuos_ctrl *)ctx)->gpu, len, &p, &dev) ? NULL : p;
}
static void gpu_pinned_free(void *ctx, void *p, size_t len)
{
	(void)len;
	gpuos_gpu_host_free(((struct gpuos_ctrl *)ctx)->gpu, p);
}

/* ---- sim_vram (host mode, tests): "device memory" that is host memory ----
 * The same DMA engine runs, on a simulated channel per worker thread whose
 * transfers land late: a ticket's copies happen only when it is polled
 * SIM_LAND_NS after its mark, so a completion posted before its data had
 * landed would show stale bytes. */
#define SIM_LAND_NS 100000u
static int sim_copy(void *ctx, void *dst, const void *src, size_t len, int to_device)
{
	(void)ctx;
	(void)to_device;
	memcpy(dst, src, len);
	return 0;
}

struct sim_op {
	uint8_t *dst;
	const uint8_t *src;   /* NULL: zeros */
	size_t len;
	uint64_t ticket;      /* 0 until marked */
};
static __thread struct {
	struct sim_op *op;
	size_t n, cap;
	uint64_t marked, landed;
	uint64_t mark_ns[64];              /* when recent tickets were marked */
} sim;

static int sim_put(void *dst, const void *src, size_t len)
{
	if (sim.n == sim.cap) {
		size_t cap = sim.cap ? sim.cap * 2 : 256;
		struct sim_op *o = realloc(sim.op, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		sim.op = o;
		sim.cap = cap;
	}
	sim.op[sim.n++] = (struct sim_op){ (uint8_t *)dst, (const uint8_t *)src, len, 0 };
	return 0;
}
static int sim_dma_copy(void *ctx, void *dst, const void *src, size_t len)
{
	(void)ctx;
	return sim_put(dst, src, len);
}
static int sim_dma_zero(void *ctx, void *dst, size_t len)
{
	(void)ctx;
	return sim_put(dst, NULL, len);
}
static int sim_dma_mark(void *ctx, uint64_t *ticket)
{
	(void)ctx;
	*ticket = ++sim.marked;
	sim.mark_ns[*ticket % 64] = gpuos_now_ns();
	for (size_t i = sim.n; i-- && !sim.op[i].ticket;)
		sim.op[i].ticket = sim.marked;
	return 0;
}
static int sim_dma_poll(void *ctx, uint64_t ticket)
{
	size_t i, j = 0;
	(void)ctx;
	if (ticket > sim.marked)
		return -EIO;
	if (ticket <= sim.landed)
		return 1;
	if (ticket + 64 > sim.marked && gpuos_now_ns() < sim.mark_ns[ticket % 64] + SIM_LAND_NS)
		return 0;   /* still on the way */
	for (i = 0; i < sim.n; i++) {
		struct sim_op *o = &sim.op[i];
		if (o->ticket && o->ticket <= ticket) {
			if (o->src)
				memcpy(o->dst, o->src, o->len);
			else
				memset(o->dst, 0, o->len);
		} else {
			sim.op[j++] = *o;
		}
	}
	sim.n = j;
	sim.landed = ticket;
	return 1;
}
static void sim_thread_fini(void *ctx)
{
	(void)ctx;
	free(sim.op);
	memset(&sim, 0, sizeof(sim));
}
static void *sim_pinned_alloc(void *ctx, size_t len)
{
	void *p = NULL;
	(void)ctx;
	return posix_memalign(&p, 4096, len) ? NULL : p;
}
static void sim_pinned_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	free(p);
}

/* What the emulated controller gets of this machine: with a GPU, pinned
 * registers the GPU's MMIO stores reach and the GPU's DMA channels; with
 * sim_vram, the simulated ones; else plain memory and no device regions. */
static void env_fill(struct gpuos_ctrl *c, struct gpuos_emu_env *env)
{
	memset(env, 0, sizeof(*env));
	env->ctx = c;
	if (c->sim_vram) {
		env->dev_copy = sim_copy;
		env->dma_copy = sim_dma_copy;
		env->dma_gather = sim_dma_copy;
		env->dma_zero = sim_dma_zero;
		env->dma_mark = sim_dma_mark;
		env->dma_poll = sim_dma_poll;
		env->thread_fini = sim_thread_fini;
		env->pinned_alloc = sim_pinned_alloc;
		env->pinned_free = sim_pinned_free;
	}
	if (c->gpu) {
		env->alloc_regs = emu_alloc_regs;
		env->free_regs = emu_free_regs;
		env->dev_copy = emu_dev_copy;
		env->thread_init = emu_thread_init;
		env->thread_fini = NULL;
		env->dma_copy = gpu_dma_copy;
		env->dma_gather = gpu_dma_gather;
		env->dma_zero = gpu_dma_zero;
		env->dma_mark = gpu_dma_mark;
		env->dma_poll = gpu_dma_poll;
		env->host_register = gpu_host_register;
		env->host_unregister = gpu_host_unregister;
		env->pinned_alloc = gpu_pinned_alloc;
		env->pinned_free = gpu_pinned_free;
		env->max_workers = GPUOS_GPU_WORKER_STREAMS;
	}
}

static int emu_start(struct gpuos_ctrl *c, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	struct emu_priv *p = calloc(1, sizeof(*p));
	struct gpuos_emu_env env;
	uint32_t i;
	int r;

	if (!p)
		return -ENOMEM;
	c->priv = p;
	env_fill(c, &env);
	p->o = *o;
	p->n = o->ssds ? o->ssds : 1;
	r = gpuos_emu_create_array(o, &env, p->emu, err, errlen);
	if (r) {
		free(p);
		c->priv = NULL;
		return r;
	}
	c->nmembers = p->n;
	c->stripe_kib = o->stripe_kib;
	for (i = 0; i < p->n; i++) {
		struct gpuos_ctrl_member *m = &c->member[i];
		m->regs = gpuos_emu_regs(p->emu[i]);
		m->regs_len = gpuos_emu_regs_len(p->emu[i]);
		m->regs_rt = c->gpu ? regs_dev_of(p, m->regs) : (uint64_t)(uintptr_t)m->regs;
		if (p->n > 1)
			snprintf(m->name, sizeof(m->name), "emu member %u of %u", i, p->n);
		m->gbps = o->gbps;
		m->iops = o->iops;
		m->latency_us = o->latency_us;
	}
	c->regs_gpu_readable = 1;
	if (p->n == 1 && o->backend != GPUOS_EMU_NULL) {
		uint64_t img = gpuos_emu_image_bytes(p->emu[0]), ns = gpuos_emu_ns_bytes(p->emu[0]);
		if (ns > img) /* said once: a file given as the device need not be whole LBAs */
			snprintf(c->notice, sizeof(c->notice), "emu: %.400s is %llu bytes, not whole %u-byte LBAs: served "
				 "as %llu, the last %llu bytes zeros", o->path, (unsigned long long)img, o->lba_bytes,
				 (unsigned long long)ns, (unsigned long long)(ns - img));
	}
	return 0;
}

/* "null" or "null:SIZE" as the emulator's options. */
static int null_spec(const char *args, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	char spec[128];
	if (*args == ':')
		snprintf(spec, sizeof(spec), "null,backend=null,size=%.100s", args + 1);
	else if (*args == 0)
		snprintf(spec, sizeof(spec), "null,backend=null");
	else {
		snprintf(err, errlen, "device 'null%s': expected null or null:SIZE", args);
		return -EINVAL;
	}
	return gpuos_emu_parse(spec, o, err, errlen);
}

/* The options of "emu:ARGS" (null 0) or "nullARGS" (null 1) into o. */
static int spec_of(int null, const char *args, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	return null ? null_spec(args, o, err, errlen) : gpuos_emu_parse(args, o, err, errlen);
}

/* Parse, and start the emulator unless c is NULL (the parse hook). */
static int parse_and_start(struct gpuos_ctrl *c, int null, const char *args, char *err, size_t errlen)
{
	struct gpuos_emu_opts *o = malloc(sizeof(*o));
	int r;
	if (!o)
		return -ENOMEM;
	r = spec_of(null, args, o, err, errlen);
	if (!r && c)
		r = emu_start(c, o, err, errlen);
	free(o);
	return r;
}

static int emu_parse(const char *args, char *err, size_t errlen)
{
	return parse_and_start(NULL, 0, args, err, errlen);
}

static int emu_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	return parse_and_start(c, 0, args, err, errlen);
}

static int null_parse(const char *args, char *err, size_t errlen)
{
	return parse_and_start(NULL, 1, args, err, errlen);
}

static int null_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	return parse_and_start(c, 1, args, err, errlen);
}

static void emu_close(struct gpuos_ctrl *c)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	uint32_t i;
	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		gpuos_emu_destroy(p->emu[i]);
	free(p);
	c->priv = NULL;
}

/* Every member reaches the region at the same IOVA: a PRP built for one
 * chunk of an array is good on whichever member holds it. */
static int emu_map(struct gpuos_ctrl *c, void *ptr, size_t len, int vram, uint64_t *iova)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	uint64_t a;
	uint32_t i;
	int r = 0;
	/* a group's runtimes map from their own threads: one IOVA range each */
	pthread_mutex_lock(&c->iova_lock);
	a = c->next_iova;
	c->next_iova = gpuos_iova_after(a, len);
	pthread_mutex_unlock(&c->iova_lock);
	for (i = 0; i < p->n && !r; i++)
		r = gpuos_emu_map(p->emu[i], a, ptr, len, vram ? GPUOS_EMU_REGION_DEVICE : GPUOS_EMU_REGION_HOST);
	if (r) {
		while (i-- > 1)
			gpuos_emu_unmap(p->emu[i - 1], a);
		return r;
	}
	*iova = a;
	return 0;
}

static void emu_unmap(struct gpuos_ctrl *c, uint64_t iova, size_t len)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	uint32_t i;
	(void)len;
	for (i = 0; i < p->n; i++)
		gpuos_emu_unmap(p->emu[i], iova);
}

static int emu_counters(struct gpuos_ctrl *c, uint32_t i, struct gpuos_ctrl_stats *out)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	struct gpuos_emu_stats s;
	if (i >= p->n)
		return -EINVAL;
	gpuos_emu_get_stats(p->emu[i], &s);
	out->io_cmds = s.io_cmds;
	out->read_bytes = s.read_bytes;
	out->errors = s.errors;
	out->dma_faults = s.dma_faults;
	out->lost = s.lost;
	out->dma = 1;
	out->dma_cmds = s.dma_cmds;
	out->dma_copies = s.dma_copies;
	out->dma_gathered = s.dma_gathered;
	out->dma_batches = s.dma_batches;
	out->dma_waits = s.dma_waits;
	out->busy_s = (double)s.busy_ns / 1e9;
	out->io_fetched = s.io_fetched;
	out->dups = s.dups;
	out->cid_conflicts = s.cid_conflicts;
	return 0;
}

/* All members together. */
static void emu_describe(struct gpuos_ctrl *c, char *buf, size_t len)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	struct gpuos_ctrl_stats t, s;
	uint32_t i;
	char arr[64] = "";
	memset(&t, 0, sizeof(t));
	for (i = 0; i < p->n && !emu_counters(c, i, &s); i++) {
		t.io_cmds += s.io_cmds;
		t.read_bytes += s.read_bytes;
		t.errors += s.errors;
		t.dma_faults += s.dma_faults;
		t.lost += s.lost;
	}
	if (p->n > 1)
		snprintf(arr, sizeof(arr), " (array of %u, stripe %u KiB)", p->n, p->o.stripe_kib);
	snprintf(buf, len, "emu%s: %llu I/O commands, %llu bytes read, %llu errors, %llu DMA faults, %llu lost", arr,
		 (unsigned long long)t.io_cmds, (unsigned long long)t.read_bytes, (unsigned long long)t.errors,
		 (unsigned long long)t.dma_faults, (unsigned long long)t.lost);
}

const struct gpuos_ctrl_ops gpuos_ctrl_emu_ops = {
	.prefix = "emu:",
	.open = emu_open,
	.parse = emu_parse,
	.close = emu_close,
	.map = emu_map,
	.unmap = emu_unmap,
	.describe = emu_describe,
	.counters = emu_counters,
};

const struct gpuos_ctrl_ops gpuos_ctrl_null_ops = {
	.prefix = "null",
	.open = null_open,
	.parse = null_parse,
	.close = emu_close,
	.map = emu_map,
	.unmap = emu_unmap,
	.describe = emu_describe,
	.counters = emu_counters,
};
