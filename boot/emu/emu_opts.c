/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_opts.c - options of the emulated controller: defaults, the
 * "PATH[,k=v...]" parser and the checks that create() repeats, so that a
 * struct filled by hand is held to the same rules as a parsed string.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

void emu_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void gpuos_emu_opts_default(struct gpuos_emu_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->backend = GPUOS_EMU_RAM;
	o->null_bytes = 1ull << 40;
	o->lba_bytes = 512;
	o->mdts_kib = 512;
	o->queues = 16;
	o->depth = 1024;
	o->dstrd = 0;
	o->workers = 2;            /* parse recomputes it: min(queues, a worker per 4 CPUs, 2 at least) */
	o->to = 20;
	o->rdy_ms = 1;
	o->fault_rate_status = 0x281;
	o->late_ms = 1000;
	o->duplate_ms = 5;
	o->seed = 1;
	o->ssds = 1;
	o->stripe_kib = 512;
	o->gather_kib = 64;
	o->stage_mib = 32;
	o->direct = 1;
	snprintf(o->model, sizeof(o->model), "%s", "gpuos emulated NVMe");
}

size_t emu_regs_len_for(uint32_t queues, uint32_t dstrd)
{
	/* the CQ head doorbell of the last queue ends the register file */
	uint64_t end = (uint64_t)GPUOS_NVME_REG_DBS +
		       (2ull * queues + 2ull) * (4ull << dstrd);
	uint64_t len = GPUOS_ALIGN_UP(end, (uint64_t)EMU_PAGE);

	if (len < GPUOS_NVME_REGS_MIN)
		len = GPUOS_NVME_REGS_MIN;
	return len > (uint64_t)EMU_REGS_MAX ? 0 : (size_t)len;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s))
			return 0;
	return 1;
}

/* Refuse v outside lo..hi ("emu: NAME: must be lo..hi NOTE, not v"), so
 * that each limit is written once. 0 or -EINVAL. */
static int check_range(const char *name, uint32_t v, uint32_t lo, uint32_t hi, const char *note, char *err,
		       size_t errlen)
{
	if (v >= lo && v <= hi)
		return 0;
	emu_errf(err, errlen, "emu: %s: must be %u..%u%s, not %u", name, lo, hi, note, v);
	return -EINVAL;
}

/* mdts= and stripe=, in KiB: up to 1 GiB. */
#define EMU_MAX_KIB (1u << 20)

/* backend=, the image path, lba= and mdts=: what a command's blocks are. */
static int check_blocks(const struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	if (o->backend > GPUOS_EMU_NULL) {
		emu_errf(err, errlen, "emu: backend: unknown backend %d", (int)o->backend);
		return -EINVAL;
	}
	if (o->backend != GPUOS_EMU_NULL && !o->path[0]) {
		emu_errf(err, errlen, "emu: no image path (use \"null\" for an image-less controller)");
		return -EINVAL;
	}
	if (o->lba_bytes != 512 && o->lba_bytes != 4096) {
		emu_errf(err, errlen, "emu: lba: must be 512 or 4096, not %u", o->lba_bytes);
		return -EINVAL;
	}
	/* MDTS is a power of two times the minimum page (identify 5.17.2.1) */
	if (o->mdts_kib && (o->mdts_kib % 4 || (o->mdts_kib / 4) & (o->mdts_kib / 4 - 1) ||
			    o->mdts_kib > EMU_MAX_KIB)) {
		emu_errf(err, errlen, "emu: mdts: must be 0 or 4 KiB times a power of two up to %u GiB, not %u",
			 EMU_MAX_KIB >> 20, o->mdts_kib);
		return -EINVAL;
	}
	/* MDTS 0 means "no limit", so one page (2^0) cannot be said */
	if (o->mdts_kib == 4) {
		emu_errf(err, errlen, "emu: mdts: 4 KiB cannot be reported (MDTS 0 means no limit); use 8 or more");
		return -EINVAL;
	}
	return 0;
}

/* The queues, their doorbells, the workers, the timing model and size=. */
static int check_queues(const struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	int r;

	if ((r = check_range("queues", o->queues, 1, 65535, "", err, errlen)) ||
	    (r = check_range("depth", o->depth, 2, 65536, " (CAP.MQES is 16 bits)", err, errlen)) ||
	    (r = check_range("dstrd", o->dstrd, 0, 15, "", err, errlen)))
		return r;
	if (!emu_regs_len_for(o->queues, o->dstrd)) {
		emu_errf(err, errlen, "emu: dstrd: stride %u with %u queues needs more than %u MiB of doorbells",
			 o->dstrd, o->queues, EMU_REGS_MAX >> 20);
		return -EINVAL;
	}
	if ((r = check_range("workers", o->workers, 1, 256, "", err, errlen)) ||
	    (r = check_range("to", o->to, 1, 255, " (500 ms units)", err, errlen)) ||
	    (r = check_range("rdy_ms", o->rdy_ms, 0, 600000, "", err, errlen)))
		return r;
	if (!(o->gbps >= 0.0) || !isfinite(o->gbps)) {
		emu_errf(err, errlen, "emu: gbps: must be a finite rate >= 0");
		return -EINVAL;
	}
	if (o->backend == GPUOS_EMU_NULL && o->null_bytes < o->lba_bytes) {
		emu_errf(err, errlen, "emu: size: %llu bytes is less than one LBA",
			 (unsigned long long)o->null_bytes);
		return -EINVAL;
	}
	return 0;
}

/* faults=: the LBA ranges, the probabilities and rate's status. */
static int check_faults(const struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	if (o->n_lba_faults > GPUOS_EMU_MAX_LBA_FAULTS) {
		emu_errf(err, errlen, "emu: faults: at most %d lba ranges", GPUOS_EMU_MAX_LBA_FAULTS);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < o->n_lba_faults; i++) {
		if (o->lba_fault[i].end < o->lba_fault[i].start || !o->lba_fault[i].status) {
			emu_errf(err, errlen, "emu: faults: lba range %u is empty or has status 0", i);
			return -EINVAL;
		}
	}
	if (!(o->fault_rate >= 0.0 && o->fault_rate <= 1.0) ||
	    !(o->lost_rate >= 0.0 && o->lost_rate <= 1.0) ||
	    !(o->late_rate >= 0.0 && o->late_rate <= 1.0) ||
	    !(o->hang_rate >= 0.0 && o->hang_rate <= 1.0) || !(o->dup_rate >= 0.0 && o->dup_rate <= 1.0) ||
	    !(o->dupnow_rate >= 0.0 && o->dupnow_rate <= 1.0) || !(o->duplate_rate >= 0.0 && o->duplate_rate <= 1.0)) {
		emu_errf(err, errlen, "emu: faults: probabilities must be in [0, 1]");
		return -EINVAL;
	}
	if (o->fault_rate > 0.0 && !o->fault_rate_status) {
		emu_errf(err, errlen, "emu: faults: rate needs a non-zero status");
		return -EINVAL;
	}
	return 0;
}

/* ssds=, stripe=, gather=, stage= and the identify strings. */
static int check_array(const struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	int r;

	if ((r = check_range("ssds", o->ssds, 1, GPUOS_EMU_MAX_SSDS, "", err, errlen)))
		return r;
	/* a chunk holds whole pages and whole LBAs, so no command's page or
	 * block straddles two members */
	if (!o->stripe_kib || o->stripe_kib % 4 || (o->stripe_kib * 1024u) % o->lba_bytes ||
	    o->stripe_kib > EMU_MAX_KIB) {
		emu_errf(err, errlen, "emu: stripe: must be a multiple of 4 KiB and of the LBA size, up to %u GiB, not %u",
			 EMU_MAX_KIB >> 20, o->stripe_kib);
		return -EINVAL;
	}
	if ((r = check_range("gather", o->gather_kib, 0, 65536, " KiB", err, errlen)) ||
	    (r = check_range("stage", o->stage_mib, 1, 4096, " MiB", err, errlen)))
		return r;
	/* the identify fields' lengths, the NUL aside */
	if (memchr(o->model, 0, sizeof(o->model)) == NULL || !printable(o->model)) {
		emu_errf(err, errlen, "emu: model: at most %u printable characters", (unsigned)sizeof(o->model) - 1u);
		return -EINVAL;
	}
	if (memchr(o->serial, 0, sizeof(o->serial)) == NULL || !printable(o->serial)) {
		emu_errf(err, errlen, "emu: serial: at most %u printable characters", (unsigned)sizeof(o->serial) - 1u);
		return -EINVAL;
	}
	return 0;
}

int emu_opts_check(const struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	int r;

	if ((r = check_blocks(o, err, errlen)) || (r = check_queues(o, err, errlen)) ||
	    (r = check_faults(o, err, errlen)) || (r = check_array(o, err, errlen)))
		return r;
	return 0;
}

/* ---- parser ---- */

/* A number as the command line takes one (boot/cli): decimal, or hex
 * after 0x; never octal ("010" is ten). */
static unsigned long long dec_or_hex(const char *s, char **end)
{
	return strtoull(s, end, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = dec_or_hex(s, &end);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "true"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "off") || !strcmp(s, "false"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static int parse_prob(const char *s, double *out)
{
	char *end;

	if (!*s)
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0.0 && v <= 1.0))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Bytes with an optional binary suffix: 4096, 64M, 1T. */
static int parse_bytes(const char *s, uint64_t *out)
{
	char num[32], *end;
	size_t n = strlen(s);
	unsigned shift = 0;

	if (!n || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift)
		num[--n] = 0;
	if (!n || num[0] == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long v = dec_or_hex(num, &end);
	if (errno || *end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* An NVMe status as SCT<<8|SC in hex ("281", "0x281"), DNR (0x4000) allowed. */
static int parse_status(const char *s, uint16_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 16);
	if (errno || *end || v == 0 || v > 0x7fff)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* lba:START[-END][:STATUS] after its count is checked; -EINVAL for a bad item. */
static int parse_lba_fault(char *arg, const char *arg2, struct gpuos_emu_opts *o)
{
	uint64_t a, b;
	uint16_t st = 0x281;
	char *dash = strchr(arg, '-');

	if (dash)
		*dash++ = 0;
	if (parse_u64(arg, &a))
		return -EINVAL;
	b = a;
	if (dash && (parse_u64(dash, &b) || b < a))
		return -EINVAL;
	if (arg2 && parse_status(arg2, &st))
		return -EINVAL;
	o->lba_fault[o->n_lba_faults].start = a;
	o->lba_fault[o->n_lba_faults].end = b;
	o->lba_fault[o->n_lba_faults].status = st;
	o->n_lba_faults++;
	return 0;
}

/* A faults= item other than lba, named s with its argument arg and the
 * optional second arg2: 0 when it is known and its values are good,
 * -EINVAL otherwise. */
static int parse_fault_item(const char *s, const char *arg, const char *arg2, struct gpuos_emu_opts *o)
{
	if (!strcmp(s, "late")) {
		if (parse_prob(arg, &o->late_rate) || (arg2 && (parse_u32(arg2, &o->late_ms) || !o->late_ms)))
			return -EINVAL;
		return 0;
	}
	if (!strcmp(s, "duplate")) {
		if (parse_prob(arg, &o->duplate_rate) ||
		    (arg2 && (parse_u32(arg2, &o->duplate_ms) || !o->duplate_ms)))
			return -EINVAL;
		return 0;
	}
	if (!strcmp(s, "rate")) {
		if (parse_prob(arg, &o->fault_rate) || (arg2 && parse_status(arg2, &o->fault_rate_status)))
			return -EINVAL;
		return 0;
	}
	if (arg2)
		return -EINVAL;
	if (!strcmp(s, "lost"))
		return parse_prob(arg, &o->lost_rate) ? -EINVAL : 0;
	if (!strcmp(s, "lost_every"))
		return parse_u32(arg, &o->lost_every) || !o->lost_every ? -EINVAL : 0;
	if (!strcmp(s, "cfs"))
		return parse_u64(arg, &o->cfs_after) || !o->cfs_after ? -EINVAL : 0;
	if (!strcmp(s, "dup"))
		return parse_prob(arg, &o->dup_rate) ? -EINVAL : 0;
	if (!strcmp(s, "dupnow"))
		return parse_prob(arg, &o->dupnow_rate) ? -EINVAL : 0;
	if (!strcmp(s, "dead"))
		return parse_u64(arg, &o->dead_after) || !o->dead_after ? -EINVAL : 0;
	if (!strcmp(s, "hang"))
		return parse_prob(arg, &o->hang_rate) ? -EINVAL : 0;
	return -EINVAL;
}

/* One faults= item; s is modified. */
static int parse_fault(char *s, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	char orig[96];
	char *colon = strchr(s, ':');

	snprintf(orig, sizeof(orig), "%s", s);

	if (!colon)
		goto bad;
	*colon = 0;
	char *arg = colon + 1;
	char *arg2 = strchr(arg, ':');
	if (arg2)
		*arg2++ = 0;

	if (!strcmp(s, "lba")) {
		if (o->n_lba_faults >= GPUOS_EMU_MAX_LBA_FAULTS) {
			emu_errf(err, errlen, "emu: faults: at most %d lba ranges", GPUOS_EMU_MAX_LBA_FAULTS);
			return -EINVAL;
		}
		if (parse_lba_fault(arg, arg2, o))
			goto bad;
		return 0;
	}
	if (!parse_fault_item(s, arg, arg2, o))
		return 0;
bad:
	emu_errf(err, errlen,
		 "emu: faults: bad item '%s' (lba:START[-END][:STATUS], rate:P[:STATUS], lost:P, lost_every:N, cfs:N, "
		 "late:P[:MS], hang:P, dup:P, dupnow:P, duplate:P[:MS], dead:N)",
		 orig);
	return -EINVAL;
}

static int parse_backend(const char *val, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	int r = 0;

	if (!strcmp(val, "ram")) o->backend = GPUOS_EMU_RAM;
	else if (!strcmp(val, "file")) o->backend = GPUOS_EMU_FILE;
	else if (!strcmp(val, "uring")) o->backend = GPUOS_EMU_URING;
	else if (!strcmp(val, "null")) o->backend = GPUOS_EMU_NULL;
	else r = -EINVAL;
	if (r)
		emu_errf(err, errlen, "emu: backend: '%s' is not ram, file, uring or null", val);
	return r;
}

/* model= or serial=, as identify reports it. */
static int parse_ident(const char *key, const char *val, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	char *dst = key[0] == 'm' ? o->model : o->serial;
	size_t cap = key[0] == 'm' ? sizeof(o->model) : sizeof(o->serial);

	if (strlen(val) >= cap || !printable(val)) {
		emu_errf(err, errlen, "emu: %s: at most %zu printable characters", key, cap - 1);
		return -EINVAL;
	}
	memcpy(dst, val, strlen(val) + 1);
	return 0;
}

/* faults=ITEM[+ITEM...]; val is modified. */
static int parse_faults(char *val, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	char *save = NULL;
	int r;

	if (!*val) {
		emu_errf(err, errlen, "emu: faults: empty list");
		return -EINVAL;
	}
	for (char *it = strtok_r(val, "+", &save); it; it = strtok_r(NULL, "+", &save)) {
		r = parse_fault(it, o, err, errlen);
		if (r)
			return r;
	}
	return 0;
}

/* A key whose value is one number or flag: 0, -EINVAL for a bad value,
 * -ENOENT for a key that is not one of them. */
static int parse_scalar(const char *key, const char *val, struct gpuos_emu_opts *o, int *workers_set)
{
	int r = 0;

	if (!strcmp(key, "size"))
		r = parse_bytes(val, &o->null_bytes) || !o->null_bytes ? -EINVAL : 0;
	else if (!strcmp(key, "lba"))
		r = parse_u32(val, &o->lba_bytes);
	else if (!strcmp(key, "mdts"))
		r = parse_u32(val, &o->mdts_kib);
	else if (!strcmp(key, "queues"))
		r = parse_u32(val, &o->queues);
	else if (!strcmp(key, "depth"))
		r = parse_u32(val, &o->depth);
	else if (!strcmp(key, "dstrd"))
		r = parse_u32(val, &o->dstrd);
	else if (!strcmp(key, "workers")) {
		r = parse_u32(val, &o->workers);
		*workers_set = 1;
	} else if (!strcmp(key, "to"))
		r = parse_u32(val, &o->to);
	else if (!strcmp(key, "rdy_ms"))
		r = parse_u32(val, &o->rdy_ms);
	else if (!strcmp(key, "never_ready"))
		r = parse_bool(val, &o->never_ready);
	else if (!strcmp(key, "enabled"))
		r = parse_bool(val, &o->start_enabled);
	else if (!strcmp(key, "latency_us"))
		r = parse_u32(val, &o->latency_us);
	else if (!strcmp(key, "gbps")) {
		char *end;
		errno = 0;
		o->gbps = strtod(val, &end);
		r = (!*val || errno || *end || !(o->gbps >= 0.0) || !isfinite(o->gbps)) ? -EINVAL : 0;
	} else if (!strcmp(key, "iops"))
		r = parse_u32(val, &o->iops);
	else if (!strcmp(key, "ooo"))
		r = parse_bool(val, &o->ooo);
	else if (!strcmp(key, "seed"))
		r = parse_u64(val, &o->seed);
	else if (!strcmp(key, "ssds"))
		r = parse_u32(val, &o->ssds);
	else if (!strcmp(key, "stripe"))
		r = parse_u32(val, &o->stripe_kib);
	else if (!strcmp(key, "gather"))
		r = parse_u32(val, &o->gather_kib);
	else if (!strcmp(key, "stage"))
		r = parse_u32(val, &o->stage_mib);
	else if (!strcmp(key, "direct"))
		r = parse_bool(val, &o->direct);
	else
		r = -ENOENT;
	return r;
}

static int parse_kv(char *key, char *val, struct gpuos_emu_opts *o, int *workers_set,
		    char *err, size_t errlen)
{
	int r;

	if (!strcmp(key, "backend"))
		return parse_backend(val, o, err, errlen);
	if (!strcmp(key, "model") || !strcmp(key, "serial"))
		return parse_ident(key, val, o, err, errlen);
	if (!strcmp(key, "faults"))
		return parse_faults(val, o, err, errlen);
	r = parse_scalar(key, val, o, workers_set);
	if (r == -ENOENT) {
		emu_errf(err, errlen, "emu: unknown option '%s'", key);
		return -EINVAL;
	}
	if (r)
		emu_errf(err, errlen, "emu: %s: bad value '%s'", key, val);
	return r;
}

int gpuos_emu_parse(const char *args, struct gpuos_emu_opts *o, char *err, size_t errlen)
{
	char *buf, *save = NULL, *tok;
	int workers_set = 0, r = 0;

	gpuos_emu_opts_default(o);
	if (err && errlen)
		err[0] = 0;
	if (!args) {
		emu_errf(err, errlen, "emu: no arguments");
		return -EINVAL;
	}
	buf = strdup(args);
	if (!buf) {
		emu_errf(err, errlen, "emu: out of memory");
		return -ENOMEM;
	}

	/* the path runs to the first comma; strtok_r would skip an empty one */
	char *comma = strchr(buf, ',');
	if (comma)
		*comma = 0;
	if (strlen(buf) >= sizeof(o->path)) {
		emu_errf(err, errlen, "emu: path: longer than %zu bytes", sizeof(o->path) - 1);
		r = -EINVAL;
		goto out;
	}
	if (!strcmp(buf, "null")) {
		o->backend = GPUOS_EMU_NULL;
	} else {
		memcpy(o->path, buf, strlen(buf) + 1);
	}

	for (tok = comma ? strtok_r(comma + 1, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			emu_errf(err, errlen, "emu: option '%s' is not key=value", tok);
			r = -EINVAL;
			goto out;
		}
		*eq = 0;
		r = parse_kv(tok, eq + 1, o, &workers_set, err, errlen);
		if (r)
			goto out;
	}
	if (!workers_set) {
		/* a worker per four CPUs, two at least: on the GPU machine (16)
		 * four keep a stream of 1 MiB reads at the link's rate, where two
		 * reach 76 % of it (docs/benchmarks-log.md); a 2-core machine keeps two
		 * (with one, a fresh clone's make test was no quicker, 2026-12-03) */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		uint32_t want = cpus >= 8 ? (uint32_t)GPUOS_MIN(cpus / 4, 8L) : 2u;
		o->workers = GPUOS_MIN(o->queues, want);
	}
	r = emu_opts_check(o, err, errlen);
out:
	free(buf);
	return r;
}
