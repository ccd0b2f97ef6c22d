/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_plan.c - the geometry of a runtime (boot/sys/sys_plan.c), a
 * pure function of the options and the controllers' limits: the defaults;
 * clamping to what the controllers allow (MDTS below the transfer size, a
 * small MQES, few queues granted, gpu-null); arrays of controllers (common
 * limits, the striped namespace, where each queue lives); the metadata warp
 * on and off; the combinations refused, with their messages; and inputs as
 * large as their types allow, which must neither wrap nor break the plan's
 * invariants.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../boot/sys/sys_plan.h"
#include "gpuos/internal/rt.h"

/* ---- the fixture: a device and options ------------------------------------------- */

struct fx {
	struct gpuos_boot_opts o;
	struct gpuos_plan_ctrl c[GPUOS_MAX_CTRL];
	uint32_t n, stripe_kib;
	struct gpuos_plan_in in;
	struct gpuos_plan p;
	char err[256];
};

/* n controllers like a small NVMe SSD: 1024 entries, no MDTS, 2 s CAP.TO,
 * 512-byte LBAs, 1 GiB. */
static void fx_init(struct fx *f, uint32_t n)
{
	static const char *names[] = { "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7",
				       "c8", "c9", "c10", "c11", "c12", "c13", "c14", "c15" };
	uint32_t m;
	memset(f, 0, sizeof(*f));
	gpuos_boot_opts_default(&f->o);
	f->n = n;
	f->stripe_kib = 512;
	for (m = 0; m < GPUOS_MAX_CTRL; m++) {
		f->c[m].name = names[m];
		f->c[m].mqes = 1024;
		f->c[m].to_ms = 2000;
		f->c[m].lba_bytes = 512;
		f->c[m].nsid = 1;
		f->c[m].ns_lbas = 1ull << 21;
	}
}

static int fx_device(struct fx *f)
{
	f->in.opts = &f->o;
	return gpuos_plan_device(f->c, f->n, f->stripe_kib, &f->in.dev, f->err, sizeof(f->err));
}

/* As boot does: the device, the ask, then the plan with what the
 * controllers grant of the ask (each at most `most`). */
static int fx_plan(struct fx *f, uint32_t most)
{
	int r = fx_device(f);
	f->err[0] = 0;
	if (!r)
		r = gpuos_plan_ask(&f->in, &f->p, f->err, sizeof(f->err));
	if (r)
		return r;
	f->in.io_queues = f->in.own_queues ? f->p.ask : GPUOS_MIN(f->p.ask, most);
	return gpuos_plan_make(&f->in, &f->p, f->err, sizeof(f->err));
}

/* What every plan holds, whatever it was made from. */
static void invariants(const struct gpuos_plan *p)
{
	cr_assert(p->warps >= 1 && p->warps <= GPUOS_RT_MAX_WARPS, "warps %u", p->warps);
	cr_assert(p->nctrl >= 1 && p->nctrl <= GPUOS_RT_MAX_CTRL);
	cr_assert(p->nq >= p->warps * p->nctrl && p->nq <= GPUOS_RT_MAX_QUEUES, "nq %u", p->nq);
	cr_assert_eq(p->nq, p->warps * p->qpw);
	cr_assert_eq(p->qpw % p->nctrl, 0, "qpw %u, nctrl %u", p->qpw, p->nctrl);
	cr_assert(p->depth >= 2);
	cr_assert(p->slots >= 1 && p->slots <= GPUOS_RT_MAX_SLOTS_PER_WARP);
	cr_assert((uint64_t)p->slots <= (uint64_t)p->qpw * (p->depth - 1u));
	cr_assert(p->xfer_bytes >= 4096u && p->xfer_bytes <= GPUOS_RT_MAX_XFER && p->xfer_bytes % 4096u == 0);
	cr_assert(p->mbox_slots >= p->warps && p->mbox_slots % p->warps == 0);
	cr_assert(p->mbox_slots / p->warps <= GPUOS_MBOX_MAX_PER_PART);
	if (p->meta)
		cr_assert(p->mbox_slots <= 65535u);
	cr_assert_eq(p->sq_bytes, (uint64_t)p->depth * 64u);
	cr_assert_eq(p->cq_bytes, (uint64_t)p->depth * 16u);
	cr_assert_eq(p->bounce_bytes, (uint64_t)p->warps * p->slots * p->xfer_bytes);
	cr_assert_eq(p->prp_bytes, (uint64_t)p->warps * p->slots * 4096u);
	cr_assert_eq(p->meta_bounce_bytes, p->meta ? p->xfer_bytes : 0u);
	cr_assert_eq(p->meta_prp_bytes, p->meta ? 4096u : 0u);
	cr_assert_eq(p->ctl_bytes, sizeof(struct gpuos_rt_ctl) + (p->warps + 1u) * sizeof(struct gpuos_rt_stats));
	cr_assert_eq(p->mbox_bytes, gpuos_mbox_bytes(p->mbox_slots));
	cr_assert(p->heap_off % 65536u == GPUOS_SHM_MBOX_OFF && p->heap_off >= GPUOS_SHM_MBOX_OFF + p->mbox_bytes);
	cr_assert(p->heap_bytes % 65536u == 0 && p->heap_bytes > 0);
	cr_assert_eq(p->shm_bytes, p->heap_off + p->heap_bytes);
	cr_assert(p->nnotices <= GPUOS_PLAN_NOTICES && p->ask_notices <= p->nnotices);
}

/* Each controller numbers its queues 1.. in increasing order of q, every
 * warp owns as many on each, and the metadata warp's come after them. */
static void queue_map(const struct gpuos_plan *p)
{
	uint32_t next[GPUOS_RT_MAX_CTRL] = { 0 }, per[GPUOS_RT_MAX_WARPS][GPUOS_RT_MAX_CTRL];
	uint32_t q, m, w;
	memset(per, 0, sizeof(per));
	for (q = 0; q < p->nq; q++) {
		m = gpuos_plan_queue_ctrl(p, q);
		cr_assert(m < p->nctrl);
		cr_assert_eq(gpuos_plan_queue_qid(p, q), next[m] + 1u, "queue %u: qid %u on controller %u, %u expected", q,
			     gpuos_plan_queue_qid(p, q), m, next[m] + 1u);
		next[m]++;
		per[q / p->qpw][m]++;
	}
	for (m = 0; m < p->nctrl; m++) {
		cr_assert_eq(next[m], p->nq / p->nctrl);
		for (w = 0; w < p->warps; w++)
			cr_assert_eq(per[w][m], p->qpw / p->nctrl);
	}
	cr_assert_eq(gpuos_plan_meta_qid(p), p->nq / p->nctrl + 1u);
}

/* The plan uses no queue the controllers did not grant: the service warps'
 * nq / nctrl on each, and the metadata warp's after them. */
static void within_grant(const struct fx *f)
{
	uint32_t granted = GPUOS_MIN(f->in.io_queues, f->p.ask);
	cr_assert(f->p.nq / f->p.nctrl + f->p.meta <= granted, "%u + %u queues on each of %u granted",
		  f->p.nq / f->p.nctrl, f->p.meta, granted);
	if (f->p.meta)
		cr_assert(gpuos_plan_meta_qid(&f->p) <= granted);
}

/* ---- plans, from the options and what the controllers allow ---------------------- */

/* One boot: the device (n controllers like fx_init's, but for mqes and
 * mdts where set), the options, the most queue pairs each controller grants
 * (0: all it is asked), and the plan expected, with its notices in order. */
struct row {
	const char *what;
	uint32_t n, mqes, mdts_bytes, grant;
	const char *own_queues;  /* the controller that makes its queues itself */
	struct gpuos_boot_opts o;
	struct {
		uint32_t ask, warps, nq, meta, depth, slots, xfer_kib, mbox;
	} want;
	const char *notice[3];
};

static const struct row rows[] = {
	{ .what = "defaults: one warp, its queue pair and the metadata warp's", .n = 1,
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "options taken as given", .n = 1,
	  .o = { .warps = 4, .queues = 8, .depth = 512, .slots = 128, .xfer_kib = 256, .mbox_slots = 4096 },
	  .want = { .ask = 9, .warps = 4, .nq = 8, .meta = 1, .depth = 512, .slots = 128, .xfer_kib = 256, .mbox = 4096 } },
	{ .what = "a queue pair per warp at least", .n = 1, .o = { .warps = 4, .queues = 2 },
	  .want = { .ask = 5, .warps = 4, .nq = 4, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "queue pairs a multiple of the warps", .n = 1, .o = { .warps = 4, .queues = 7 },
	  .want = { .ask = 8, .warps = 4, .nq = 4, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "queue pairs the runtime's most", .n = 1, .o = { .warps = 4, .queues = 1000 },
	  .want = { .ask = 257, .warps = 4, .nq = 256, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "MDTS below the transfer size", .n = 1, .mdts_bytes = 64u << 10,
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 64, .mbox = 1024 } },
	{ .what = "MDTS of whole pages only", .n = 1, .mdts_bytes = 6000,
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 4, .mbox = 1024 } },
	{ .what = "no MDTS: 2 MiB at most", .n = 1, .o = { .xfer_kib = 4096 },
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 2048, .mbox = 1024 } },
	{ .what = "MQES caps the depth, a queue keeps one entry free", .n = 1, .mqes = 64,
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 64, .slots = 63, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "the smallest MQES", .n = 1, .mqes = 2,
	  .want = { .ask = 2, .warps = 1, .nq = 1, .meta = 1, .depth = 2, .slots = 1, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "slots: one free entry on each of 4 queues", .n = 1, .mqes = 2, .o = { .warps = 2, .queues = 8 },
	  .want = { .ask = 9, .warps = 2, .nq = 8, .meta = 1, .depth = 2, .slots = 4, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "few queues granted", .n = 1, .grant = 3, .o = { .warps = 4, .queues = 8 },
	  .want = { .ask = 9, .warps = 2, .nq = 2, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 },
	  .notice = { "the controller grants 3 I/O queues; running 2 service warps instead of 4",
		      "the controller grants 3 I/O queues, one of them for files: 2 left for 2 service warps" } },
	{ .what = "one queue granted: no metadata warp", .n = 1, .grant = 1, .o = { .warps = 4 },
	  .want = { .ask = 5, .warps = 1, .nq = 1, .meta = 0, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 },
	  .notice = { "the controller grants 1 I/O queue: no metadata warp, file and model requests are refused",
		      "the controller grants 1 I/O queues; running 1 service warps instead of 4" } },
	{ .what = "no files: no queue pair for them, no notice", .n = 1, .o = { .no_files = 1, .mbox_slots = 0xffffffffu },
	  .want = { .ask = 1, .warps = 1, .nq = 1, .meta = 0, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 65535 } },
	{ .what = "the runtime names a mailbox's slots in 16 bits", .n = 1, .o = { .warps = 3, .mbox_slots = 1u << 20 },
	  .want = { .ask = 4, .warps = 3, .nq = 3, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 65535 } },
	{ .what = "without a metadata warp too", .n = 1, .o = { .warps = 3, .mbox_slots = 1u << 20, .no_files = 1 },
	  .want = { .ask = 3, .warps = 3, .nq = 3, .meta = 0, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 65535 } },
	{ .what = "mailbox slots a multiple of the warps", .n = 1, .o = { .warps = 3, .mbox_slots = 1000 },
	  .want = { .ask = 4, .warps = 3, .nq = 3, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 999 } },
	{ .what = "a mailbox slot per warp at least", .n = 1, .o = { .warps = 3, .mbox_slots = 1 },
	  .want = { .ask = 4, .warps = 3, .nq = 3, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 3 } },
	{ .what = "gpu-null: grants what it is asked, serves no files", .n = 1, .own_queues = "gpu-null",
	  .o = { .warps = 8, .queues = 16 },
	  .want = { .ask = 16, .warps = 8, .nq = 16, .meta = 0, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "an array: each warp owns a queue pair on every controller", .n = 4, .o = { .warps = 2 },
	  .want = { .ask = 3, .warps = 2, .nq = 8, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "an array: queue pairs a multiple of warps x controllers", .n = 2, .o = { .warps = 2, .queues = 5 },
	  .want = { .ask = 4, .warps = 2, .nq = 4, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 } },
	{ .what = "an array caps the warps", .n = 4, .o = { .warps = 100 },
	  .want = { .ask = 65, .warps = 64, .nq = 256, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 },
	  .notice = { "4 controllers: running 64 service warps instead of 100 (at most 256 queue pairs)" } },
	{ .what = "an array with few queues granted", .n = 2, .grant = 3, .o = { .warps = 4 },
	  .want = { .ask = 5, .warps = 2, .nq = 4, .meta = 1, .depth = 256, .slots = 64, .xfer_kib = 128, .mbox = 1024 },
	  .notice = { "the controller grants 3 I/O queues; running 2 service warps instead of 4",
		      "the controller grants 3 I/O queues, one of them for files: 2 left for 2 service warps" } },
};

static void check_row(const struct row *w)
{
	struct fx f;
	uint32_t m, i;
	fx_init(&f, w->n);
	f.o = w->o;
	f.o.size = sizeof(f.o);
	f.in.own_queues = w->own_queues;
	for (m = 0; m < w->n; m++) {
		f.c[m].mqes = w->mqes ? w->mqes : f.c[m].mqes;
		f.c[m].mdts_bytes = w->mdts_bytes;
	}
	cr_assert_eq(fx_plan(&f, w->grant ? w->grant : 65535u), 0, "%s: %s", w->what, f.err);
	cr_assert_eq(f.p.ask, w->want.ask, "%s: ask %u", w->what, f.p.ask);
	cr_assert_eq(f.p.warps, w->want.warps, "%s: warps %u", w->what, f.p.warps);
	cr_assert_eq(f.p.nq, w->want.nq, "%s: nq %u", w->what, f.p.nq);
	cr_assert_eq(f.p.meta, w->want.meta, "%s: meta %u", w->what, f.p.meta);
	cr_assert_eq(f.p.depth, w->want.depth, "%s: depth %u", w->what, f.p.depth);
	cr_assert_eq(f.p.slots, w->want.slots, "%s: slots %u", w->what, f.p.slots);
	cr_assert_eq(f.p.xfer_bytes, w->want.xfer_kib << 10, "%s: xfer %u", w->what, f.p.xfer_bytes);
	cr_assert_eq(f.p.mbox_slots, w->want.mbox, "%s: mailbox slots %u", w->what, f.p.mbox_slots);
	for (i = 0; i < 3 && w->notice[i]; i++)
		cr_assert(i < f.p.nnotices && strcmp(f.p.notice[i], w->notice[i]) == 0, "%s: notice %u is '%s'", w->what, i,
			  i < f.p.nnotices ? f.p.notice[i] : "");
	cr_assert_eq(f.p.nnotices, i, "%s: %u notices", w->what, f.p.nnotices);
	invariants(&f.p);
	queue_map(&f.p);
	within_grant(&f);
}

Test(plan, geometry)
{
	size_t i;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		check_row(&rows[i]);
}

Test(plan, default_sizes)
{
	struct fx f;
	fx_init(&f, 1);
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	cr_assert_eq(f.p.timeout_ns, 2000ull * 1000000ull, "CAP.TO without --timeout-ms");
	cr_assert_eq(f.p.bounce_bytes, 64ull * (128u << 10));
	cr_assert_eq(f.p.meta_bounce_bytes, 128u << 10);
	cr_assert_eq(f.p.heap_bytes, 64ull << 20);
	f.o.heap_bytes = (1ull << 20) + 1;
	f.o.timeout_ms = 5;
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	cr_assert_eq(f.p.heap_bytes, (1ull << 20) + 65536u, "rounded up to 64 KiB");
	cr_assert_eq(f.p.timeout_ns, 5000000ull);
	invariants(&f.p);
}

Test(plan, more_granted_than_asked)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.warps = 2;
	cr_assert_eq(fx_device(&f), 0, "%s", f.err);
	f.in.io_queues = 64; /* QEMU grants 64 whatever is asked */
	cr_assert_eq(gpuos_plan_make(&f.in, &f.p, f.err, sizeof(f.err)), 0, "%s", f.err);
	cr_assert_eq(f.p.nq, 2);
	cr_assert_eq(f.p.nnotices, 0);
	invariants(&f.p);
}

/* ---- arrays: the device ---------------------------------------------------------- */

Test(plan, array_common_limits)
{
	struct fx f;
	fx_init(&f, 3);
	f.c[0].mqes = 1024;
	f.c[1].mqes = 256;
	f.c[2].mqes = 4096;
	f.c[0].mdts_bytes = 0;
	f.c[1].mdts_bytes = 256u << 10;
	f.c[2].mdts_bytes = 128u << 10;
	f.c[1].to_ms = 30000;
	f.c[0].ns_lbas = 1u << 20;
	f.c[1].ns_lbas = (1u << 20) + 1000; /* the part whole chunks cover counts */
	f.c[2].ns_lbas = 1u << 21;
	cr_assert_eq(fx_device(&f), 0, "%s", f.err);
	cr_assert_eq(f.in.dev.nctrl, 3);
	cr_assert_eq(f.in.dev.mqes, 256);
	cr_assert_eq(f.in.dev.mdts_bytes, 128u << 10, "the smallest MDTS that is set");
	cr_assert_eq(f.in.dev.to_ms, 30000);
	cr_assert_eq(f.in.dev.stripe_lbas, 1024);
	cr_assert_eq(f.in.dev.ns_lbas, 3ull << 20);
	f.c[0].ns_lbas = (1u << 20) + 1023; /* the smallest, less its partial chunk */
	f.c[1].ns_lbas = 1u << 21;
	cr_assert_eq(fx_device(&f), 0, "%s", f.err);
	cr_assert_eq(f.in.dev.ns_lbas, 3ull << 20);
}

Test(plan, single_controller_keeps_its_namespace)
{
	struct fx f;
	fx_init(&f, 1);
	f.c[0].ns_lbas = 1000003; /* no chunks: every LBA */
	f.stripe_kib = 0;         /* and no stripe to check */
	cr_assert_eq(fx_device(&f), 0, "%s", f.err);
	cr_assert_eq(f.in.dev.ns_lbas, 1000003);
	cr_assert_eq(f.in.dev.stripe_lbas, 0);
}

/* ---- refused --------------------------------------------------------------------- */

/* The device of f refused with msg (NULL: any reason). */
static void device_refused(struct fx *f, const char *msg)
{
	cr_assert_eq(fx_device(f), -EINVAL, "refused: %s", msg ? msg : "(any reason)");
	cr_assert(f->err[0]);
	if (msg)
		cr_assert_str_eq(f->err, msg);
}

/* The plan of f (as boot makes it: every queue asked for granted, or
 * f->in.io_queues as it stands with raw) refused with msg. */
static void plan_refused(struct fx *f, int raw, const char *msg)
{
	int r = raw ? gpuos_plan_make(&f->in, &f->p, f->err, sizeof(f->err)) : fx_plan(f, 65535);
	cr_assert_eq(r, -EINVAL, "refused: %s", msg);
	cr_assert_str_eq(f->err, msg);
}

Test(plan, refuses_too_many_warps)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.warps = GPUOS_RT_MAX_WARPS + 1u;
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), -EINVAL);
	cr_assert_str_eq(f.err, "--warps 257: at most 256");
	plan_refused(&f, 0, "--warps 257: at most 256");
	f.o.warps = GPUOS_RT_MAX_WARPS;
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), 0);
}

Test(plan, checks_the_root)
{
	struct fx f;
	char longer[GPUOS_RT_ROOT_MAX + 1];
	fx_init(&f, 1);
	f.o.root = "/models";
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), 0, "%s", f.err);
	f.o.root = "models";
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), -EINVAL);
	cr_assert_str_eq(f.err, "--root models: give a path from the file system's root (/...)");
	memset(longer, 'a', sizeof(longer) - 1);
	longer[0] = '/';
	longer[GPUOS_RT_ROOT_MAX - 1] = 0; /* 255 bytes: fits with its NUL */
	f.o.root = longer;
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), 0, "%s", f.err);
	longer[GPUOS_RT_ROOT_MAX - 1] = 'a';
	longer[GPUOS_RT_ROOT_MAX] = 0;
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), -EINVAL);
	cr_assert_str_eq(f.err, "--root: a path of at most 255 bytes");
	f.o.root = "/models";
	f.o.allow_raw = 1;
	cr_assert_eq(gpuos_plan_check(&f.o, f.err, sizeof(f.err)), -EINVAL);
	cr_assert(strstr(f.err, "--allow-raw") != NULL, "%s", f.err);
}

Test(plan, refuses_a_depth_below_2)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.depth = 1;
	plan_refused(&f, 0, "queue depth 1: need at least 2 entries");
	f.o.depth = 0;
	f.c[0].mqes = 1;
	plan_refused(&f, 0, "queue depth 1: need at least 2 entries");
}

Test(plan, refuses_a_transfer_below_a_page_or_an_lba)
{
	struct fx f;
	fx_init(&f, 1);
	f.c[0].mdts_bytes = 2048;
	plan_refused(&f, 0, "transfer size 0 bytes is below one page or one LBA");
	fx_init(&f, 1);
	cr_assert_eq(fx_device(&f), 0);
	f.in.dev.lba_bytes = 8192; /* bring-up refuses these; the plan still checks */
	f.in.io_queues = 2;
	f.o.xfer_kib = 4;
	plan_refused(&f, 1, "transfer size 4096 bytes is below one page or one LBA");
}

Test(plan, refuses_no_queue_granted)
{
	struct fx f;
	fx_init(&f, 1);
	cr_assert_eq(fx_device(&f), 0);
	f.in.io_queues = 0;
	plan_refused(&f, 1, "the controller grants no I/O queue");
}

Test(plan, refuses_arrays_that_disagree)
{
	struct fx f;
	fx_init(&f, 2);
	f.c[1].lba_bytes = 4096;
	device_refused(&f, "c0 has 512-byte LBAs and c1 4096-byte ones: the controllers of an array need one LBA size");
	fx_init(&f, 3);
	f.c[2].nsid = 2;
	device_refused(&f, "c0 serves namespace 1 and c2 namespace 2: the controllers of an array need one NSID");
}

Test(plan, refuses_bad_stripes)
{
	static const uint32_t bad[] = { 0, 6, 1u << 31 };
	struct fx f;
	uint32_t i;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[160];
		fx_init(&f, 2);
		f.stripe_kib = bad[i];
		snprintf(want, sizeof(want),
			 "stripe of %u KiB: it must be a multiple of 4 KiB and of the LBA size (512 bytes)", bad[i]);
		device_refused(&f, want);
	}
	fx_init(&f, 2);
	f.c[1].ns_lbas = 1023; /* less than one 512 KiB chunk */
	device_refused(&f, "a controller of the array is smaller than one stripe (512 KiB)");
}

Test(plan, refuses_impossible_devices)
{
	struct fx f;
	fx_init(&f, 0);
	device_refused(&f, "0 controllers: 1 to 16 make a device");
	fx_init(&f, GPUOS_MAX_CTRL + 1u);
	device_refused(&f, "17 controllers: 1 to 16 make a device");
	fx_init(&f, 1);
	f.c[0].lba_bytes = 520;
	device_refused(&f, "c0 has 520-byte LBAs: 512 to 4096 bytes, a power of two");
	f.c[0].lba_bytes = 0;
	device_refused(&f, "c0 has 0-byte LBAs: 512 to 4096 bytes, a power of two");
}

/* ---- huge inputs ----------------------------------------------------------------- */

Test(plan, huge_options_clamp_without_wrapping)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.warps = GPUOS_RT_MAX_WARPS;
	f.o.queues = UINT32_MAX;
	f.o.depth = UINT32_MAX;
	f.o.slots = UINT32_MAX;
	f.o.xfer_kib = UINT32_MAX; /* x 1024 wraps in 32 bits */
	f.o.mbox_slots = UINT32_MAX;
	f.o.timeout_ms = UINT32_MAX;
	f.o.heap_bytes = 1ull << 40;
	f.c[0].mqes = UINT32_MAX;
	f.c[0].to_ms = UINT32_MAX;
	cr_assert_eq(fx_plan(&f, UINT32_MAX), 0, "%s", f.err);
	cr_assert_eq(f.p.warps, GPUOS_RT_MAX_WARPS);
	cr_assert_eq(f.p.nq, GPUOS_RT_MAX_QUEUES);
	cr_assert_eq(f.p.depth, UINT32_MAX);
	cr_assert_eq(f.p.sq_bytes, (uint64_t)UINT32_MAX * 64u);
	cr_assert_eq(f.p.slots, GPUOS_RT_MAX_SLOTS_PER_WARP);
	cr_assert_eq(f.p.xfer_bytes, 2u << 20);
	cr_assert_eq(f.p.bounce_bytes, 128ull << 30);
	cr_assert_eq(f.p.timeout_ns, (uint64_t)UINT32_MAX * 1000000ull);
	cr_assert_eq(f.p.heap_bytes, 1ull << 40);
	within_grant(&f);
	invariants(&f.p);
	queue_map(&f.p);
	f.o.xfer_kib = 1u << 22; /* 4 GiB: 0 in 32 bits */
	cr_assert_eq(fx_plan(&f, UINT32_MAX), 0, "%s", f.err);
	cr_assert_eq(f.p.xfer_bytes, 2u << 20);
	/* granted far more than asked, the plan stays within the ask */
	cr_assert_eq(fx_device(&f), 0);
	f.in.io_queues = UINT32_MAX;
	cr_assert_eq(gpuos_plan_make(&f.in, &f.p, f.err, sizeof(f.err)), 0, "%s", f.err);
	invariants(&f.p);
}

Test(plan, huge_heap_refused)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.heap_bytes = UINT64_MAX;
	plan_refused(&f, 0, "client heap of 18446744073709551615 bytes: larger than a shared-memory segment can be");
	f.o.heap_bytes = (uint64_t)INT64_MAX;
	plan_refused(&f, 0, "client heap of 9223372036854775807 bytes: larger than a shared-memory segment can be");
	f.o.heap_bytes = 1ull << 50;
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	invariants(&f.p);
}

Test(plan, huge_namespaces)
{
	struct fx f;
	uint32_t m;
	fx_init(&f, GPUOS_MAX_CTRL);
	for (m = 0; m < GPUOS_MAX_CTRL; m++)
		f.c[m].ns_lbas = UINT64_MAX;
	device_refused(&f, "16 controllers of 18446744073709550592 LBAs each: more than 2^64 LBAs");
	for (m = 0; m < GPUOS_MAX_CTRL; m++)
		f.c[m].ns_lbas = UINT64_MAX / GPUOS_MAX_CTRL;
	cr_assert_eq(fx_device(&f), 0, "%s", f.err);
	cr_assert_eq(f.in.dev.ns_lbas % ((uint64_t)GPUOS_MAX_CTRL * f.in.dev.stripe_lbas), 0);
	f.stripe_kib = UINT32_MAX & ~3u; /* 4 TiB chunks: whole pages, but not 2^32 LBAs */
	device_refused(&f, NULL);
}

/* Every combination of a sweep: either refused with a reason, or a plan
 * that keeps every invariant. */
Test(plan, sweep_keeps_the_invariants)
{
	static const uint32_t warps[] = { 0, 1, 2, 3, 7, 16, 64, 255, 256 };
	static const uint32_t queues[] = { 0, 1, 5, 64, 256, 100000 };
	static const uint32_t grants[] = { 1, 2, 3, 17, 64, 65535 };
	static const uint32_t nctrls[] = { 1, 2, 3, 16 };
	struct fx f;
	uint32_t a, b, c, d, e, plans = 0;
	for (a = 0; a < sizeof(warps) / sizeof(warps[0]); a++)
		for (b = 0; b < sizeof(queues) / sizeof(queues[0]); b++)
			for (c = 0; c < sizeof(grants) / sizeof(grants[0]); c++)
				for (d = 0; d < sizeof(nctrls) / sizeof(nctrls[0]); d++)
					for (e = 0; e < 2; e++) {
						fx_init(&f, nctrls[d]);
						f.o.warps = warps[a];
						f.o.queues = queues[b];
						f.o.no_files = (int)e;
						f.c[0].mqes = 3 + a;
						if (fx_plan(&f, grants[c])) {
							cr_assert(f.err[0], "refused without a reason");
							continue;
						}
						invariants(&f.p);
						queue_map(&f.p);
						within_grant(&f);
						plans++;
					}
	cr_assert_eq(plans, 9u * 6u * 6u * 4u * 2u, "none of these is refused");
}

/* A service's GPU clients: areas after the host clients', sized in whole
 * VRAM allocation pieces, each with a line of rights and a door. */
Test(plan, gpu_clients)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.heap_shares = 8;
	f.o.gpu_clients = 4;
	f.o.gpu_area_bytes = 3ull << 20;
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	cr_assert_eq(f.p.nclients, 12u);
	cr_assert_eq(f.p.ngpu_clients, 4u);
	cr_assert_eq(f.p.gpu_area_bytes, 4ull << 20, "rounded up to GPUOS_GPU_AREA_ALIGN");
	cr_assert(f.p.gpu_area_bytes > f.p.cmbox_bytes);
	cr_assert(f.p.doors_off % 64u == 0 && f.p.doors_off >= f.p.clients_off + 12u * sizeof(struct gpuos_rt_client));
	cr_assert_eq(f.p.ctl_bytes, f.p.doors_off + sizeof(struct gpuos_rt_doors));
	f.o.gpu_area_bytes = 0;
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	cr_assert_eq(f.p.gpu_area_bytes, GPUOS_GPU_AREA_DEFAULT);
	f.o.gpu_clients = GPUOS_RT_MAX_CLIENTS - 8u;
	cr_assert_eq(fx_plan(&f, 65535), 0, "%s", f.err);
	cr_assert_eq(f.p.nclients, GPUOS_RT_MAX_CLIENTS);
	f.o.gpu_clients++;
	plan_refused(&f, 0, "24 GPU clients: a service has room for 23 beside its 8 host clients");
	f.o.gpu_clients = 1;
	f.o.heap_shares = 0;
	plan_refused(&f, 0, "GPU clients are a service's (gpuos boot): no client shares to go beside");
	f.o.heap_shares = 8;
	f.o.gpu_area_bytes = 4096;
	plan_refused(&f, 0, "a GPU client's area of 4096 bytes: give 2 MiB to 1 TiB");
	f.o.gpu_area_bytes = (1ull << 40) + 1u;
	plan_refused(&f, 0, "a GPU client's area of 1099511627777 bytes: give 2 MiB to 1 TiB");
	f.o.gpu_area_bytes = 0;
	f.o.mbox_vram = 1;
	plan_refused(&f, 0, "GPU clients post to areas of their own: not with the mailbox in VRAM (which serves apps the "
			    "service runs)");
}

/* ---- a group: runtimes sharing the controllers (docs/design.md, "Scale-out") ---- */

/* n runtimes on `nctrl` controllers that grant at most `most` each: the ask
 * covers all of them, each runtime's qids are its own, and together they
 * stay within the grant. */
static void group(uint32_t nctrl, uint32_t n, uint32_t warps, uint32_t most, int no_files)
{
	struct fx f;
	uint8_t used[GPUOS_MAX_CTRL][1024];
	uint32_t i, q, m, granted;
	fx_init(&f, nctrl);
	f.o.warps = warps;
	f.o.no_files = no_files;
	f.in.runtimes = n;
	memset(used, 0, sizeof(used));
	cr_assert_eq(fx_plan(&f, most), 0, "%u runtimes, %u warps, %u controllers: %s", n, warps, nctrl, f.err);
	invariants(&f.p);
	cr_assert_eq(f.p.runtimes, n);
	cr_assert_eq(f.p.ask, GPUOS_MIN((warps + (no_files ? 0u : 1u)) * n, 65535u), "ask %u", f.p.ask);
	granted = GPUOS_MIN(f.in.io_queues, f.p.ask);
	cr_assert(gpuos_plan_ctrl_queues(&f.p) * n <= granted, "%u runtimes x %u queues in %u granted", n,
		  gpuos_plan_ctrl_queues(&f.p), granted);
	for (i = 0; i < n; i++) {
		struct gpuos_plan p = f.p;
		gpuos_plan_runtime(&p, i);
		for (q = 0; q < p.nq; q++) {
			uint32_t qid = gpuos_plan_queue_qid(&p, q);
			m = gpuos_plan_queue_ctrl(&p, q);
			cr_assert(qid >= 1 && qid <= granted && qid < 1024, "runtime %u queue %u: qid %u", i, q, qid);
			cr_assert_eq(used[m][qid], 0, "runtime %u: qid %u of controller %u is taken", i, qid, m);
			used[m][qid] = 1;
		}
		for (m = 0; p.meta && m < nctrl; m++) {
			uint32_t qid = gpuos_plan_meta_qid(&p);
			cr_assert(qid >= 1 && qid <= granted, "runtime %u: metadata qid %u", i, qid);
			cr_assert_eq(used[m][qid], 0, "runtime %u: metadata qid %u of controller %u is taken", i, qid, m);
			used[m][qid] = 1;
		}
	}
}

Test(plan, group_shares_no_queue_pair)
{
	group(1, 2, 1, 1024, 0);
	group(1, 2, 4, 1024, 0);
	group(1, 3, 2, 9, 0);       /* 9 granted: 3 each, one for files */
	group(4, 2, 2, 1024, 0);    /* 2 GPUs x 4 SSDs */
	group(2, 8, 1, 64, 1);
	group(1, 2, 8, 10, 0);      /* fewer than asked: 5 each, 4 warps */
}

Test(plan, group_notices_speak_of_each_runtimes_share)
{
	struct fx f;
	fx_init(&f, 1);
	f.o.warps = 8;
	f.in.runtimes = 2;
	cr_assert_eq(fx_plan(&f, 10), 0, "%s", f.err);
	cr_assert_eq(f.p.warps, 4);
	cr_assert_eq(f.p.nnotices, 2);
	cr_assert_str_eq(f.p.notice[0], "each of the 2 runtimes gets 5 I/O queues; running 4 service warps instead of 8");
	cr_assert_str_eq(f.p.notice[1], "each of the 2 runtimes gets 5 I/O queues, one of them for files: 4 left for 4 "
			 "service warps");
}

Test(plan, group_refusals)
{
	struct fx f;
	fx_init(&f, 1);
	f.in.runtimes = 3;
	cr_assert_eq(fx_device(&f), 0);
	f.in.io_queues = 2;
	plan_refused(&f, 1, "the controller grants 2 I/O queues: fewer than the 3 runtimes, which share no queue pair");
	fx_init(&f, 1);
	f.in.runtimes = 2;
	f.in.own_queues = "gpu-null";
	cr_assert_neq(fx_plan(&f, 0), 0);
	cr_assert_str_eq(f.err, "gpu-null has no controller to share among 2 runtimes");
}
