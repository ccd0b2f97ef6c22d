/* SPDX-License-Identifier: MIT */
/*
 * The emulated controller (boot/emu) behind the ops table: "emu:PATH[,k=v]"
 * and "null[:SIZE]" (an emulated controller with the null backend: every
 * command completes at once, no data moves; it measures the host path).
 * With a GPU, the register file is pinned mapped memory the GPU's MMIO
 * stores reach, and DMA into VRAM goes through a copy stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl.h"
#include "emu/emu.h"

struct emu_priv {
	struct gpuos_emu *emu;
	void *regs_host;
	uint64_t regs_dev;
};

static void *emu_alloc_regs(void *ctx, size_t len)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)ctx;
	struct emu_priv *p = (struct emu_priv *)c->priv;
	if (gpuos_gpu_host_alloc(c->gpu, len, &p->regs_host, &p->regs_dev))
		return NULL;
	return p->regs_host;
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

/* sim_vram: "device memory" that is host memory, moved by memcpy. */
static int sim_copy(void *ctx, void *dst, const void *src, size_t len, int to_device)
{
	(void)ctx;
	(void)to_device;
	memcpy(dst, src, len);
	return 0;
}

static int emu_start(struct gpuos_ctrl *c, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	struct emu_priv *p = calloc(1, sizeof(*p));
	struct gpuos_emu_env env;
	int r;

	if (!p)
		return -ENOMEM;
	c->priv = p;
	memset(&env, 0, sizeof(env));
	if (c->sim_vram)
		env.dev_copy = sim_copy;
	if (c->gpu) {
		env.ctx = c;
		env.alloc_regs = emu_alloc_regs;
		env.free_regs = emu_free_regs;
		env.dev_copy = emu_dev_copy;
		env.thread_init = emu_thread_init;
	}
	r = gpuos_emu_create(o, &env, &p->emu, err, errlen);
	if (r) {
		free(p);
		c->priv = NULL;
		return r;
	}
	c->regs = gpuos_emu_regs(p->emu);
	c->regs_len = gpuos_emu_regs_len(p->emu);
	c->regs_rt = c->gpu ? p->regs_dev : (uint64_t)(uintptr_t)c->regs;
	c->regs_gpu_readable = 1;
	return 0;
}

static int emu_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	struct gpuos_emu_opts *o = malloc(sizeof(*o));
	int r;
	if (!o)
		return -ENOMEM;
	r = gpuos_emu_parse(args, o, err, errlen);
	if (!r)
		r = emu_start(c, o, err, errlen);
	free(o);
	return r;
}

static int null_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	char spec[128];
	struct gpuos_emu_opts *o = malloc(sizeof(*o));
	int r;

	if (!o)
		return -ENOMEM;
	/* "null" or "null:SIZE" */
	if (*args == ':')
		snprintf(spec, sizeof(spec), "null,backend=null,size=%s", args + 1);
	else if (*args == 0)
		snprintf(spec, sizeof(spec), "null,backend=null");
	else {
		snprintf(err, errlen, "device 'null%s': expected null or null:SIZE", args);
		free(o);
		return -EINVAL;
	}
	r = gpuos_emu_parse(spec, o, err, errlen);
	if (!r)
		r = emu_start(c, o, err, errlen);
	free(o);
	return r;
}

static void emu_close(struct gpuos_ctrl *c)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	if (!p)
		return;
	gpuos_emu_destroy(p->emu);
	free(p);
	c->priv = NULL;
}

static int emu_map(struct gpuos_ctrl *c, void *ptr, size_t len, int vram, uint64_t *iova)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	uint64_t a = c->next_iova;
	int r = gpuos_emu_map(p->emu, a, ptr, len, vram ? GPUOS_EMU_REGION_DEVICE : GPUOS_EMU_REGION_HOST);
	if (r)
		return r;
	/* A guard gap between regions: an overrun is a DMA fault, not a neighbour's data. */
	c->next_iova += ((len + 0xfffffu) & ~(uint64_t)0xfffffu) + 0x100000u;
	*iova = a;
	return 0;
}

static void emu_unmap(struct gpuos_ctrl *c, uint64_t iova, size_t len)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	(void)len;
	gpuos_emu_unmap(p->emu, iova);
}

static void emu_describe(struct gpuos_ctrl *c, char *buf, size_t len)
{
	struct emu_priv *p = (struct emu_priv *)c->priv;
	struct gpuos_emu_stats s;
	gpuos_emu_get_stats(p->emu, &s);
	snprintf(buf, len, "emu: %llu I/O commands, %llu bytes read, %llu errors, %llu DMA faults, %llu lost",
		 (unsigned long long)s.io_cmds, (unsigned long long)s.read_bytes, (unsigned long long)s.errors,
		 (unsigned long long)s.dma_faults, (unsigned long long)s.lost);
}

const struct gpuos_ctrl_ops gpuos_ctrl_emu_ops = {
	.prefix = "emu:",
	.open = emu_open,
	.close = emu_close,
	.map = emu_map,
	.unmap = emu_unmap,
	.describe = emu_describe,
};

const struct gpuos_ctrl_ops gpuos_ctrl_null_ops = {
	.prefix = "null",
	.open = null_open,
	.close = emu_close,
	.map = emu_map,
	.unmap = emu_unmap,
	.describe = emu_describe,
};
