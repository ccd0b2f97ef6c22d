/* SPDX-License-Identifier: MIT */
/*
 * apps/report.h - the text of an app's report (gpuos_app_args.out), built
 * without printf (it runs on a GPU lane or a host thread): strings,
 * decimals, fixed-point ratios, hex; short names of request statuses and
 * the line for a failed open.
 */
#ifndef GPUOS_APPS_REPORT_H
#define GPUOS_APPS_REPORT_H

#include "gpuos/abi.h"

struct rep {
	char *p;
	uint64_t n, cap;
};

static inline GPUOS_HD void rs(struct rep *r, const char *s)
{
	for (; *s; s++)
		if (r->n + 1 < r->cap)
			r->p[r->n++] = *s;
	if (r->cap)
		r->p[r->n] = 0;
}

/* Unsigned decimal, right-aligned in `width` columns. */
static inline GPUOS_HD void rnw(struct rep *r, uint64_t v, uint32_t width)
{
	char t[24];
	int i = 23;
	t[i] = 0;
	do {
		t[--i] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v);
	while (23u - (uint32_t)i < width && i > 0)
		t[--i] = ' ';
	rs(r, t + i);
}

static inline GPUOS_HD void rn(struct rep *r, uint64_t v)
{
	rnw(r, v, 0);
}

/* num/den with `dec` decimals (0..3), rounded, right-aligned in `width`. */
static inline GPUOS_HD void rf(struct rep *r, uint64_t num, uint64_t den, uint32_t dec, uint32_t width)
{
	uint64_t scale = dec == 0 ? 1 : dec == 1 ? 10 : dec == 2 ? 100 : 1000, v, f;
	char t[8];
	uint32_t i, digits = 1;
	if (!den) {
		rs(r, "-");
		return;
	}
	v = (num * scale + den / 2) / den; /* callers keep num * 1000 below 2^64 */
	for (f = v / scale; f >= 10u; f /= 10u)
		digits++;
	rnw(r, v / scale, width > digits + dec + 1 ? width - dec - (dec ? 1 : 0) : 0);
	if (!dec)
		return;
	f = v % scale;
	t[dec] = 0;
	for (i = dec; i-- > 0; f /= 10u)
		t[i] = (char)('0' + f % 10u);
	rs(r, ".");
	rs(r, t);
}

/* ns as seconds, 3 decimals. */
static inline GPUOS_HD void rsec(struct rep *r, uint64_t ns)
{
	rf(r, ns / 1000u, 1000000u, 3, 0);
}

/* bytes in ns as GB/s, 3 decimals; 0 when no time passed. */
static inline GPUOS_HD void rgbs(struct rep *r, uint64_t bytes, uint64_t ns)
{
	rf(r, ns ? bytes * 1000u / ns : 0, 1000, 3, 0);
}

/* n bytes as lowercase hex (a digest). */
static inline GPUOS_HD void rhex(struct rep *r, const uint8_t *b, uint32_t n)
{
	char t[3];
	uint32_t i;
	t[2] = 0;
	for (i = 0; i < n; i++) {
		t[0] = "0123456789abcdef"[b[i] >> 4];
		t[1] = "0123456789abcdef"[b[i] & 15u];
		rs(r, t);
	}
}

static inline GPUOS_HD void rx64(struct rep *r, uint64_t v)
{
	char t[17];
	int i;
	for (i = 15; i >= 0; i--, v >>= 4)
		t[i] = "0123456789abcdef"[v & 15u];
	t[16] = 0;
	rs(r, t);
}

static inline GPUOS_HD const char *stname(uint32_t st)
{
	switch (st) {
	case GPUOS_ST_OK: return "OK";
	case GPUOS_ST_BAD_RANGE: return "BAD_RANGE";
	case GPUOS_ST_BAD_DST: return "BAD_DST";
	case GPUOS_ST_NVME: return "NVME";
	case GPUOS_ST_TIMEOUT: return "TIMEOUT";
	case GPUOS_ST_CTRL_FATAL: return "CTRL_FATAL";
	case GPUOS_ST_CTRL_RESET: return "CTRL_RESET";
	case GPUOS_ST_DUP_CQE: return "DUP_CQE";
	case GPUOS_ST_NOENT: return "NOENT";
	case GPUOS_ST_NOTDIR: return "NOTDIR";
	case GPUOS_ST_ISDIR: return "ISDIR";
	case GPUOS_ST_CORRUPT: return "CORRUPT";
	case GPUOS_ST_UNSUPPORTED: return "UNSUPPORTED";
	case GPUOS_ST_NOSPC: return "NOSPC";
	case GPUOS_ST_IO: return "IO";
	case GPUOS_ST_NO_FILES: return "NO_FILES";
	case GPUOS_ST_NAMETOOLONG: return "NAMETOOLONG";
	default: return "error";
	}
}

/* "app: path: STATUS (why)\n", an app's line for a file or model it could
 * not open; why is the runtime's reason, left out when empty. */
static inline GPUOS_HD void ropen_failed(struct rep *r, const char *app, const char *path, uint32_t st,
					 const char *why)
{
	rs(r, app);
	rs(r, ": ");
	rs(r, path);
	rs(r, ": ");
	rs(r, stname(st));
	if (why[0]) {
		rs(r, " (");
		rs(r, why);
		rs(r, ")");
	}
	rs(r, "\n");
}

#endif /* GPUOS_APPS_REPORT_H */
