/* SPDX-License-Identifier: MIT */
/* The JSON writer of the --json outputs (json.h says how to use it). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

size_t json_utf8_len(const uint8_t *s, size_t n)
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
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

static void string(FILE *f, const void *p, size_t n)
{
	const uint8_t *s = (const uint8_t *)p;
	size_t i = 0, l;

	fputc('"', f);
	while (i < n) {
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
			i++;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			fputs(c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r", f);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if ((l = json_utf8_len(s + i, n - i)) == 0) {
			fputs("\\ufffd", f);
			i++;
		} else {
			fwrite(s + i, 1, l, f);
			i += l;
		}
	}
	fputc('"', f);
}

/* The comma, newline and key before a value at the current depth. */
static void lead(struct json *j, const char *key)
{
	int d = j->depth;
	if (j->more[d])
		fputc(',', j->f);
	if (j->pretty[d])
		fputs("\n ", j->f);
	else if (j->more[d])
		fputc(' ', j->f);
	j->more[d] = 1;
	if (key) {
		string(j->f, key, strlen(key));
		fputs(": ", j->f);
	}
}

static void nest(struct json *j, const char *key, char c, int pretty)
{
	lead(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->more[j->depth] = 0;
	j->pretty[j->depth] = (uint8_t)pretty;
	j->close[j->depth] = c == '{' ? '}' : ']';
}

void json_begin(struct json *j, FILE *f, const char *cmd)
{
	j->f = f;
	j->depth = 0;
	j->more[0] = 0;
	j->pretty[0] = 0;
	fputc('{', f);
	j->depth = 1;
	j->more[1] = 0;
	j->pretty[1] = 0;
	lead(j, "schema");
	fprintf(f, "\"gpuos.%s/1\"", cmd);
}

void json_finish(struct json *j)
{
	while (j->depth > 1)
		json_end(j);
	fputs("}\n", j->f);
	j->depth = 0;
}

void json_obj(struct json *j, const char *key)
{
	nest(j, key, '{', 0);
}

void json_arr(struct json *j, const char *key)
{
	nest(j, key, '[', 0);
}

void json_arr_lines(struct json *j, const char *key)
{
	nest(j, key, '[', 1);
}

void json_end(struct json *j)
{
	if (j->pretty[j->depth] && j->more[j->depth])
		fputc('\n', j->f); /* the last item had a line of its own: so has the bracket */
	fputc(j->close[j->depth], j->f);
	if (j->depth > 1)
		j->depth--;
}

void json_str(struct json *j, const char *key, const char *s)
{
	lead(j, key);
	string(j->f, s, strlen(s));
}

void json_strn(struct json *j, const char *key, const void *s, size_t n)
{
	lead(j, key);
	string(j->f, s, n);
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	lead(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	lead(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	lead(j, key);
	if (isnan(v))
		fputs("\"nan\"", j->f);
	else if (isinf(v))
		fputs(v > 0 ? "\"inf\"" : "\"-inf\"", j->f);
	else
		fprintf(j->f, "%.17g", v);
}

void json_fixed(struct json *j, const char *key, double v, int decimals)
{
	lead(j, key);
	if (isnan(v) || isinf(v))
		fputs("null", j->f);
	else
		fprintf(j->f, "%.*f", decimals, v);
}

void json_bool(struct json *j, const char *key, int v)
{
	lead(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	lead(j, key);
	fputs("null", j->f);
}

void json_str_or_null(struct json *j, const char *key, const char *s)
{
	if (s)
		json_str(j, key, s);
	else
		json_null(j, key);
}
