/* SPDX-License-Identifier: MIT */
/*
 * The geometry of a runtime, planned (boot/sys/sys_plan.h): pure functions of
 * the options and the controllers' limits. Counts that multiply are taken
 * in 64 bits, so that no input, however large, wraps around into a small
 * plan.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuos/internal/rt.h"
#include "sys_plan.h"

#define SHM_ALIGN  0x10000ull   /* the mailbox and the heap start on 64 KiB */
#define SHARE_MIN  (1u << 20)   /* bytes of a client's share of the heap at least */
#define CLIENT_MBOX_SLOTS 256u  /* slots of a service client's own mailbox */

static void notice(struct gpuos_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice(struct gpuos_plan *p, const char *fmt, ...)
{
	va_list ap;
	if (p->nnotices >= GPUOS_PLAN_NOTICES)
		return;
	va_start(ap, fmt);
	vsnprintf(p->notice[p->nnotices++], GPUOS_PLAN_NOTICE_LEN, fmt, ap);
	va_end(ap);
}

int gpuos_plan_check(const struct gpuos_boot_opts *o, char *err, size_t errlen)
{
	uint32_t warps = o->warps ? o->warps : 1;
	if (warps > GPUOS_RT_MAX_WARPS) {
		snprintf(err, errlen, "--warps %u: at most %u", warps, GPUOS_RT_MAX_WARPS);
		return -EINVAL;
	}
	if (o->root) {
		if (o->root[0] != '/') {
			snprintf(err, errlen, "--root %s: give a path from the file system's root (/...)", o->root);
			return -EINVAL;
		}
		if (strlen(o->root) >= GPUOS_RT_ROOT_MAX) {
			snprintf(err, errlen, "--root: a path of at most %u bytes", GPUOS_RT_ROOT_MAX - 1u);
			return -EINVAL;
		}
		if (o->allow_raw) {
			snprintf(err, errlen, "--root confines clients to a directory; --allow-raw would let them read "
				 "the whole device: give one or the other");
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- step 1: the device ---------------------------------------------------------- */

/* The limits every controller keeps; an array's members must agree on
 * what a command means: the LBA size and the namespace ID. */
static int common_limits(const struct gpuos_plan_ctrl *c, uint32_t n, struct gpuos_plan_device *out, char *err,
			 size_t errlen)
{
	const struct gpuos_plan_ctrl *a = &c[0];
	uint32_t m;

	out->mqes = a->mqes;
	out->mdts_bytes = a->mdts_bytes;
	out->to_ms = a->to_ms;
	out->lba_bytes = a->lba_bytes;
	out->nsid = a->nsid;
	for (m = 1; m < n; m++) {
		const struct gpuos_plan_ctrl *b = &c[m];
		if (b->lba_bytes != a->lba_bytes) {
			snprintf(err, errlen, "%s has %u-byte LBAs and %s %u-byte ones: the controllers of an array need one LBA size",
				 a->name, a->lba_bytes, b->name, b->lba_bytes);
			return -EINVAL;
		}
		if (b->nsid != a->nsid) {
			snprintf(err, errlen, "%s serves namespace %u and %s namespace %u: the controllers of an array need one NSID",
				 a->name, a->nsid, b->name, b->nsid);
			return -EINVAL;
		}
		out->mqes = GPUOS_MIN(out->mqes, b->mqes);
		if (b->mdts_bytes && (!out->mdts_bytes || b->mdts_bytes < out->mdts_bytes))
			out->mdts_bytes = b->mdts_bytes;
		out->to_ms = GPUOS_MAX(out->to_ms, b->to_ms);
	}
	return 0;
}

int gpuos_plan_device(const struct gpuos_plan_ctrl *c, uint32_t n, uint32_t stripe_kib,
		      struct gpuos_plan_device *out, char *err, size_t errlen)
{
	uint64_t per = ~0ull, stripe = (uint64_t)stripe_kib * 1024u;
	uint32_t m, lba;
	int r;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n > GPUOS_MAX_CTRL) {
		snprintf(err, errlen, "%u controllers: 1 to %u make a device", n, GPUOS_MAX_CTRL);
		return -EINVAL;
	}
	lba = c[0].lba_bytes;
	/* bring-up refuses other LBA formats; the stripe arithmetic divides by it */
	if (lba < 512u || lba > 4096u || (lba & (lba - 1u))) {
		snprintf(err, errlen, "%s has %u-byte LBAs: 512 to 4096 bytes, a power of two", c[0].name, lba);
		return -EINVAL;
	}
	r = common_limits(c, n, out, err, errlen);
	if (r)
		return r;
	out->nctrl = n;
	if (n == 1) {
		out->ns_lbas = c[0].ns_lbas;
		return 0;
	}
	/* An array: nctrl x the part of the smallest member that whole chunks
	 * cover (the emulator's members are all whole chunks). */
	if (stripe == 0 || stripe % 4096u || stripe % lba || stripe / lba > 0xffffffffull) {
		snprintf(err, errlen, "stripe of %u KiB: it must be a multiple of 4 KiB and of the LBA size (%u bytes)",
			 stripe_kib, lba);
		return -EINVAL;
	}
	out->stripe_lbas = (uint32_t)(stripe / lba);
	for (m = 0; m < n; m++)
		per = GPUOS_MIN(per, c[m].ns_lbas);
	per -= per % out->stripe_lbas;
	if (per == 0) {
		snprintf(err, errlen, "a controller of the array is smaller than one stripe (%u KiB)", stripe_kib);
		return -EINVAL;
	}
	if (per > ~0ull / n) {
		snprintf(err, errlen, "%u controllers of %llu LBAs each: more than 2^64 LBAs", n, (unsigned long long)per);
		return -EINVAL;
	}
	out->ns_lbas = per * n;
	return 0;
}

/* ---- step 2: the queues to ask for ----------------------------------------------- */

int gpuos_plan_ask(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen)
{
	const struct gpuos_boot_opts *o = in->opts;
	uint32_t nctrl = in->dev.nctrl, want = o->warps ? o->warps : 1, nq;
	int r;

	memset(p, 0, sizeof(*p));
	r = gpuos_plan_check(o, err, errlen);
	if (r)
		return r;
	if (nctrl == 0 || nctrl > GPUOS_RT_MAX_CTRL) {
		snprintf(err, errlen, "%u controllers: the runtime serves 1 to %u", nctrl, GPUOS_RT_MAX_CTRL);
		return -EINVAL;
	}
	p->nctrl = nctrl;
	/* Queues: at least one per warp and controller, a multiple of both
	 * (every warp owns queues of every controller of an array, as many of
	 * each), what was granted at most (step 3). */
	p->warps = want;
	if (want * nctrl > GPUOS_RT_MAX_QUEUES) {
		p->warps = GPUOS_RT_MAX_QUEUES / nctrl;
		notice(p, "%u controllers: running %u service warps instead of %u (at most %u queue pairs)", nctrl,
		       p->warps, want, GPUOS_RT_MAX_QUEUES);
	}
	nq = o->queues ? o->queues : p->warps * nctrl;
	nq = GPUOS_MAX(nq, p->warps * nctrl);
	p->nq = GPUOS_MIN(nq, GPUOS_RT_MAX_QUEUES);
	/* Counts asked are per controller, with one more queue pair for the
	 * metadata warp (files and models): it blocks on its reads, so it
	 * shares no queue with a service warp. A controller that makes its
	 * queues itself (one; gpu-null's loopback) moves no data, so it serves
	 * no files. */
	p->ask = in->own_queues ? p->nq : GPUOS_DIV_ROUND_UP(p->nq, nctrl) + (o->no_files ? 0u : 1u);
	/* A group asks for every runtime's: Number of Queues counts to 65535
	 * (NVMe 5.27.1.5, NSQR and NCQR are 16-bit and 0's based) */
	p->runtimes = in->runtimes > 1u ? in->runtimes : 1u;
	if (p->runtimes > 1u && in->own_queues) {
		snprintf(err, errlen, "%s has no controller to share among %u runtimes", in->own_queues, p->runtimes);
		return -EINVAL;
	}
	p->ask = (uint32_t)GPUOS_MIN((uint64_t)p->ask * p->runtimes, 65535u);
	p->ask_notices = p->nnotices;
	return 0;
}

/* ---- step 3: the plan ------------------------------------------------------------ */

/* Service warps and their queue pairs, from what was granted. */
static int plan_queues(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen)
{
	const struct gpuos_boot_opts *o = in->opts;
	uint32_t granted, avail, unit;
	uint64_t nq;

	if (in->io_queues == 0) {
		snprintf(err, errlen, "the controller grants no I/O queue");
		return -EINVAL;
	}
	/* more than asked (QEMU grants 64 whatever) changes nothing below;
	 * a group's runtimes take equal shares, none shared */
	granted = in->io_queues / p->runtimes;
	if (granted == 0) {
		snprintf(err, errlen, "the controller grants %u I/O queues: fewer than the %u runtimes, which share no "
			 "queue pair", in->io_queues, p->runtimes);
		return -EINVAL;
	}
	/* whose share the notices speak of */
	char who[48];
	if (p->runtimes > 1)
		snprintf(who, sizeof(who), "each of the %u runtimes gets", p->runtimes);
	else
		snprintf(who, sizeof(who), "the controller grants");
	p->meta = !o->no_files && !in->own_queues && granted >= 2;
	avail = granted - p->meta;
	if (!p->meta && !o->no_files && !in->own_queues)
		notice(p, "%s 1 I/O queue: no metadata warp, file and model requests are refused", who);
	if (avail < p->warps) {
		notice(p, "%s %u I/O queues; running %u service warps instead of %u", who, granted, avail, p->warps);
		p->warps = avail;
	}
	if (p->meta && (uint64_t)avail * p->nctrl < p->nq)
		notice(p, "%s %u I/O queues, one of them for files: %u left for %u service warps", who, granted, avail,
		       p->warps);
	unit = p->warps * p->nctrl;
	nq = GPUOS_MIN((uint64_t)p->nq, (uint64_t)avail * p->nctrl);
	nq -= nq % unit;
	p->nq = (uint32_t)nq;
	p->qpw = p->nq / p->warps;
	return 0;
}

/* Depth, command slots and transfer size, within the controllers' limits. */
static int plan_commands(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen)
{
	const struct gpuos_boot_opts *o = in->opts;
	uint64_t slots, xfer;

	p->depth = o->depth ? o->depth : 256;
	p->depth = GPUOS_MIN(p->depth, in->dev.mqes);
	if (p->depth < 2) {
		snprintf(err, errlen, "queue depth %u: need at least 2 entries", p->depth);
		return -EINVAL;
	}
	/* a slot is a command in flight: a queue keeps one entry free */
	slots = o->slots ? o->slots : 64;
	slots = GPUOS_MIN(slots, GPUOS_RT_MAX_SLOTS_PER_WARP);
	slots = GPUOS_MIN(slots, (uint64_t)p->qpw * (p->depth - 1u));
	p->slots = (uint32_t)slots;
	xfer = (uint64_t)(o->xfer_kib ? o->xfer_kib : 128) * 1024u;
	if (in->dev.mdts_bytes && xfer > in->dev.mdts_bytes)
		xfer = in->dev.mdts_bytes;
	if (xfer > GPUOS_RT_MAX_XFER) /* what gpuos_rt_desc_check allows */
		xfer = GPUOS_RT_MAX_XFER;
	xfer = GPUOS_ALIGN_DOWN(xfer, 4096u);
	if (xfer < 4096u || xfer < in->dev.lba_bytes) {
		snprintf(err, errlen, "transfer size %u bytes is below one page or one LBA", (unsigned)xfer);
		return -EINVAL;
	}
	p->xfer_bytes = (uint32_t)xfer;
	p->timeout_ns = (uint64_t)(o->timeout_ms ? o->timeout_ms : in->dev.to_ms) * 1000000ull;
	return 0;
}

/* Mailbox slots: one partition per service warp, each of the same size. */
static void plan_mailbox(const struct gpuos_plan_in *in, struct gpuos_plan *p)
{
	uint32_t n = in->opts->mbox_slots ? in->opts->mbox_slots : 1024, w = p->warps;
	n = GPUOS_MAX(n, w);
	n -= n % w;
	if (n / w > GPUOS_MBOX_MAX_PER_PART)
		n = GPUOS_MBOX_MAX_PER_PART * w;
	if (n > GPUOS_RT_MBOX_MAX_SLOTS)
		n = GPUOS_RT_MBOX_MAX_SLOTS - GPUOS_RT_MBOX_MAX_SLOTS % w;
	p->mbox_slots = n;
}

/* What boot allocates, in bytes. */
static int plan_regions(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen)
{
	if (in->opts->heap_shares > GPUOS_RT_MAX_CLIENTS) {
		snprintf(err, errlen, "%u client shares: at most %u", in->opts->heap_shares, GPUOS_RT_MAX_CLIENTS);
		return -EINVAL;
	}
	if (in->opts->heap_shares > 1u) {
		/* a client's mailbox: CLIENT_MBOX_SLOTS, or one slot per warp at least */
		p->nclients = in->opts->heap_shares;
		p->cmbox_slots = GPUOS_MAX(CLIENT_MBOX_SLOTS - CLIENT_MBOX_SLOTS % p->warps, p->warps);
		p->cmbox_bytes = GPUOS_ALIGN_UP(gpuos_mbox_bytes(p->cmbox_slots), 4096u);
	}
	if (in->opts->gpu_clients) {
		uint64_t area = in->opts->gpu_area_bytes ? in->opts->gpu_area_bytes : GPUOS_GPU_AREA_DEFAULT;
		if (in->opts->mbox_vram) {
			snprintf(err, errlen, "GPU clients post to areas of their own: not with the mailbox in VRAM "
				 "(which serves apps the service runs)");
			return -EINVAL;
		}
		if (in->opts->heap_shares <= 1u) {
			snprintf(err, errlen, "GPU clients are a service's (gpuos boot): no client shares to go beside");
			return -EINVAL;
		}
		if (in->opts->gpu_clients > GPUOS_RT_MAX_CLIENTS - p->nclients) {
			snprintf(err, errlen, "%u GPU clients: a service has room for %u beside its %u host clients",
				 in->opts->gpu_clients, GPUOS_RT_MAX_CLIENTS - p->nclients, p->nclients);
			return -EINVAL;
		}
		if (area > (1ull << 40) || area < p->cmbox_bytes + SHARE_MIN) {
			snprintf(err, errlen, "a GPU client's area of %llu bytes: give %u MiB to 1 TiB",
				 (unsigned long long)area, (unsigned)((p->cmbox_bytes + SHARE_MIN + (1u << 20) - 1u) >> 20));
			return -EINVAL;
		}
		p->ngpu_clients = in->opts->gpu_clients;
		p->gpu_area_bytes = GPUOS_ALIGN_UP(area, GPUOS_GPU_AREA_ALIGN);
		p->nclients += p->ngpu_clients;
	}
	uint64_t heap = in->opts->heap_bytes ? in->opts->heap_bytes : 64ull << 20;
	uint64_t cmds = (uint64_t)p->warps * p->slots;

	p->sq_bytes = (uint64_t)p->depth * sizeof(struct gpuos_nvme_sqe);
	p->cq_bytes = (uint64_t)p->depth * sizeof(struct gpuos_nvme_cqe);
	p->bounce_bytes = cmds * p->xfer_bytes;
	p->prp_bytes = cmds * 4096u;
	if (p->meta) {
		p->meta_bounce_bytes = p->xfer_bytes;
		p->meta_prp_bytes = 4096u;
	}
	/* statistics: one line per service warp and one for the metadata warp;
	 * then what each client of a service may do */
	p->ctl_bytes = sizeof(struct gpuos_rt_ctl) + ((uint64_t)p->warps + 1u) * sizeof(struct gpuos_rt_stats);
	p->clients_off = GPUOS_ALIGN_UP(p->ctl_bytes, 64u);
	p->ctl_bytes = p->clients_off + (uint64_t)p->nclients * sizeof(struct gpuos_rt_client);
	if (p->nclients) {
		p->doors_off = GPUOS_ALIGN_UP(p->ctl_bytes, 64u);
		p->ctl_bytes = p->doors_off + sizeof(struct gpuos_rt_doors);
	}
	p->mbox_bytes = gpuos_mbox_bytes(p->mbox_slots);
	p->heap_off = GPUOS_SHM_MBOX_OFF + GPUOS_ALIGN_UP(p->mbox_bytes, SHM_ALIGN);
	/* the segment's length is an off_t (ftruncate) */
	if (heap > (uint64_t)INT64_MAX - (SHM_ALIGN - 1u) - p->heap_off) {
		snprintf(err, errlen, "client heap of %llu bytes: larger than a shared-memory segment can be",
			 (unsigned long long)heap);
		return -EINVAL;
	}
	p->heap_bytes = GPUOS_ALIGN_UP(heap, SHM_ALIGN);
	p->shm_bytes = p->heap_off + p->heap_bytes;
	/* a service's clients each get a share, on pages of their own */
	p->share_bytes = p->heap_bytes;
	if (in->opts->heap_shares > 1u) {
		p->share_bytes = GPUOS_ALIGN_DOWN(p->heap_bytes / in->opts->heap_shares, 4096u);
		if (p->share_bytes < p->cmbox_bytes + SHARE_MIN) {
			snprintf(err, errlen, "a client heap of %llu MiB in %u shares leaves less than %u MiB each",
				 (unsigned long long)(p->heap_bytes >> 20), in->opts->heap_shares, SHARE_MIN >> 20);
			return -EINVAL;
		}
	}
	return 0;
}

int gpuos_plan_make(const struct gpuos_plan_in *in, struct gpuos_plan *p, char *err, size_t errlen)
{
	int r = gpuos_plan_ask(in, p, err, errlen);
	if (!r)
		r = plan_queues(in, p, err, errlen);
	if (!r)
		r = plan_commands(in, p, err, errlen);
	if (!r) {
		plan_mailbox(in, p);
		r = plan_regions(in, p, err, errlen);
	}
	return r;
}

/* ---- where the queues are -------------------------------------------------------- */

uint32_t gpuos_plan_queue_ctrl(const struct gpuos_plan *p, uint32_t q)
{
	return (q % p->qpw) % p->nctrl;
}

uint32_t gpuos_plan_queue_qid(const struct gpuos_plan *p, uint32_t q)
{
	return p->qid_base + (q / p->qpw) * (p->qpw / p->nctrl) + (q % p->qpw) / p->nctrl + 1u;
}

uint32_t gpuos_plan_meta_qid(const struct gpuos_plan *p)
{
	return p->qid_base + p->nq / p->nctrl + 1u;
}

uint32_t gpuos_plan_ctrl_queues(const struct gpuos_plan *p)
{
	return p->nq / p->nctrl + p->meta;
}

void gpuos_plan_runtime(struct gpuos_plan *p, uint32_t i)
{
	p->qid_base = i * gpuos_plan_ctrl_queues(p);
}
