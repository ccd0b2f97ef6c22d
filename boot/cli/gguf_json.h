/* SPDX-License-Identifier: MIT */
/*
 * boot/cli/gguf_json.h - host-only: print a parsed GGUF (runtime/gguf.h)
 * as the JSON that gguf_writer.py describes, gguf_ref.mjs dumps and
 * gguf_compare.py compares:
 *
 *   {"version","tensor_count","kv_count","alignment","data_offset",
 *    "kv":[{"key","type","value"} | {"key","type":"array","elem_type","count","value":[<=16]}],
 *    "tensors":[{"name","type","type_id","dims","rel_offset","abs_offset","byte_size"}]}
 *
 * 64-bit integers are printed exactly, floats with 17 significant digits
 * (they read back to the same double), NaN and infinities as "nan", "inf",
 * "-inf"; invalid UTF-8 bytes become U+FFFD. A KV whose string was cut at
 * GPUOS_GGUF_STR_MAX bytes carries "truncated": true. The `gpuos gguf --json`
 * command is meant to print the same.
 */
#ifndef GPUOS_TESTS_GGUF_JSON_H
#define GPUOS_TESTS_GGUF_JSON_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "../../runtime/gguf.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t gj_utf8_len(const uint8_t *s, size_t n)
{
	uint32_t c;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

static void gj_str(FILE *f, const void *p, size_t n)
{
	const uint8_t *s = (const uint8_t *)p;
	size_t i = 0, l;

	fputc('"', f);
	while (i < n) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
			i++;
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if ((l = gj_utf8_len(s + i, n - i)) == 0) {
			fputs("\\ufffd", f);
			i++;
		} else {
			fwrite(s + i, 1, l, f);
			i += l;
		}
	}
	fputc('"', f);
}

static void gj_double(FILE *f, double d)
{
	if (isnan(d))
		fputs("\"nan\"", f);
	else if (isinf(d))
		fputs(d > 0 ? "\"inf\"" : "\"-inf\"", f);
	else
		fprintf(f, "%.17g", d);
}

static void gj_scalar(FILE *f, uint32_t type, union gpuos_gguf_value v)
{
	switch (type) {
	case GPUOS_GGUF_TYPE_UINT8:
	case GPUOS_GGUF_TYPE_UINT16:
	case GPUOS_GGUF_TYPE_UINT32:
	case GPUOS_GGUF_TYPE_UINT64:
		fprintf(f, "%" PRIu64, v.u64);
		break;
	case GPUOS_GGUF_TYPE_INT8:
	case GPUOS_GGUF_TYPE_INT16:
	case GPUOS_GGUF_TYPE_INT32:
	case GPUOS_GGUF_TYPE_INT64:
		fprintf(f, "%" PRId64, v.i64);
		break;
	case GPUOS_GGUF_TYPE_FLOAT32:
	case GPUOS_GGUF_TYPE_FLOAT64:
		gj_double(f, v.f64);
		break;
	case GPUOS_GGUF_TYPE_BOOL:
		fputs(v.u64 ? "true" : "false", f);
		break;
	default:
		fputs("null", f);
	}
}

/* The "value" list of an array at nesting level (0: the KV's own). */
static void gj_items(FILE *f, const struct gpuos_gguf *g, const struct gpuos_gguf_arr *a, int level)
{
	const void *items = gpuos_gguf_items(g, a);
	uint32_t i;

	fputc('[', f);
	for (i = 0; i < a->n_items; i++) {
		if (i)
			fputs(", ", f);
		if (a->elem_type == GPUOS_GGUF_TYPE_STRING) {
			const struct gpuos_gguf_str *s = (const struct gpuos_gguf_str *)items + i;

			gj_str(f, gpuos_gguf_str_ptr(g, s), s->len);
		} else if (a->elem_type == GPUOS_GGUF_TYPE_ARRAY) {
			const struct gpuos_gguf_arr *in = (const struct gpuos_gguf_arr *)items + i;

			fprintf(f, "{\"elem_type\": \"%s\", \"count\": %" PRIu64,
				gpuos_gguf_type_name(in->elem_type), in->count);
			if (level + 1 <= 1) {
				fputs(", \"value\": ", f);
				gj_items(f, g, in, level + 1);
			}
			fputc('}', f);
		} else {
			gj_scalar(f, a->elem_type, ((const union gpuos_gguf_value *)items)[i]);
		}
	}
	fputc(']', f);
}

static inline void gguf_json_write(FILE *f, const struct gpuos_gguf *g)
{
	uint32_t i, d;

	fprintf(f, "{\n \"version\": %u,\n \"tensor_count\": %" PRIu64 ",\n \"kv_count\": %" PRIu64
		",\n \"alignment\": %u,\n \"data_offset\": %" PRIu64 ",\n \"kv\": [",
		g->version, g->tensor_count, g->kv_count, g->alignment, g->data_offset);
	for (i = 0; i < g->n_kv; i++) {
		const struct gpuos_gguf_kv *kv = &g->mem.kv[i];

		fputs(i ? ",\n  {\"key\": " : "\n  {\"key\": ", f);
		gj_str(f, gpuos_gguf_kv_key(g, kv), kv->key_len);
		fprintf(f, ", \"type\": \"%s\"", gpuos_gguf_type_name(kv->type));
		if (kv->type == GPUOS_GGUF_TYPE_ARRAY) {
			fprintf(f, ", \"elem_type\": \"%s\", \"count\": %" PRIu64 ", \"value\": ",
				gpuos_gguf_type_name(kv->arr.elem_type), kv->arr.count);
			gj_items(f, g, &kv->arr, 0);
		} else if (kv->type == GPUOS_GGUF_TYPE_STRING) {
			fputs(", \"value\": ", f);
			gj_str(f, gpuos_gguf_str_ptr(g, &kv->str), kv->str.len);
		} else {
			fputs(", \"value\": ", f);
			gj_scalar(f, kv->type, kv->val);
		}
		if (kv->flags & GPUOS_GGUF_KV_TRUNCATED)
			fputs(", \"truncated\": true", f);
		fputc('}', f);
	}
	fputs(g->n_kv ? "\n ],\n \"tensors\": [" : "],\n \"tensors\": [", f);
	for (i = 0; i < g->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];

		fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
		gj_str(f, t->name, t->name_len);
		fprintf(f, ", \"type\": \"%s\", \"type_id\": %u, \"dims\": [", gpuos_ggml_type_name(t->type),
			t->type);
		for (d = 0; d < t->n_dims; d++)
			fprintf(f, d ? ", %" PRIu64 : "%" PRIu64, t->ne[d]);
		fprintf(f, "], \"rel_offset\": %" PRIu64 ", \"abs_offset\": %" PRIu64 ", \"byte_size\": %" PRIu64
			"}", t->rel_off, t->abs_off, t->size);
	}
	fputs(g->n_tensors ? "\n ]\n}\n" : "]\n}\n", f);
}

/* One line for a failed parse, e.g.
 *   corrupt GGUF (EINVAL): tensor 3 'blk.0.ffn_up.weight' has data past the end of the file
 *   [byte 1184, value 70368744177696] */
static inline const char *gguf_errno_name(int rc)
{
	switch (-rc) {
	case EINVAL: return "EINVAL";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOSPC: return "ENOSPC";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EIO: return "EIO";
	case ENOENT: return "ENOENT";
	default: return "E?";
	}
}

static inline void gguf_print_error(FILE *f, const struct gpuos_gguf_parser *p, int rc)
{
	fprintf(f, "%s GGUF (%s): ", rc == -EPROTONOSUPPORT ? "unsupported" : rc == -ENOSPC ? "cannot hold" :
		rc == -EIO ? "unreadable" : "corrupt", gguf_errno_name(rc));
	if (p->err_tensor >= 0)
		fprintf(f, "tensor %" PRId64 " '%s' ", p->err_tensor, p->subject);
	else if (p->err_kv >= 0)
		fprintf(f, "KV %" PRId64 " key '%s' ", p->err_kv, p->subject);
	fprintf(f, "%s [byte %" PRIu64 ", value %" PRIu64 "]\n", p->why ? p->why : "?", p->err_off, p->bad);
}

#endif /* GPUOS_TESTS_GGUF_JSON_H */
