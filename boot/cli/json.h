/* SPDX-License-Identifier: MIT */
/* boot/cli/json.h - the one JSON writer of the --json outputs (docs/json.md).
 *
 *   struct json j;
 *   json_begin(&j, stdout, "ls");          {"schema": "gpuos.ls/1"
 *   json_str(&j, "path", "/");             , "path": "/"
 *   json_arr(&j, "entries");               , "entries": [
 *   json_obj(&j, NULL); ... json_end(&j);  {...}
 *   json_end(&j);                          ]
 *   json_finish(&j);                       }\n
 *
 * A key is given inside objects and NULL inside arrays; commas come by
 * themselves. Strings: the escapes RFC 8259 requires, invalid UTF-8 bytes
 * as U+FFFD. Integers exactly; doubles with 17 significant digits (they
 * read back to the same double), NaN and infinities as "nan", "inf", "-inf".
 */
#ifndef GPUOS_BOOT_JSON_H
#define GPUOS_BOOT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	uint8_t more[JSON_MAX_DEPTH]; /* a value was written at this depth: the next one needs a comma */
	uint8_t pretty[JSON_MAX_DEPTH]; /* items of this array on lines of their own */
	char close[JSON_MAX_DEPTH];     /* the bracket that ends this level */
};

/* The top-level object, with "schema": "gpuos.CMD/1" first. */
void json_begin(struct json *j, FILE *f, const char *cmd);
/* Closes it, with a newline. */
void json_finish(struct json *j);

void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
/* An array whose items each start a new line (long lists of objects). */
void json_arr_lines(struct json *j, const char *key);
void json_end(struct json *j); /* of the innermost object or array */

void json_str(struct json *j, const char *key, const char *s);
void json_strn(struct json *j, const char *key, const void *s, size_t n);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_dbl(struct json *j, const char *key, double v);
/* A measurement: a fixed number of decimals (null for NaN or infinity). */
void json_fixed(struct json *j, const char *key, double v, int decimals);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* s, or null where there is none. */
void json_str_or_null(struct json *j, const char *key, const char *s);

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes left), 0 if
 * invalid (overlong forms, surrogates and code points above U+10FFFF
 * included). The text output's escaper (cli.h) decides with it too. */
size_t json_utf8_len(const uint8_t *s, size_t n);

#endif /* GPUOS_BOOT_JSON_H */
