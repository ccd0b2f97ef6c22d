/* SPDX-License-Identifier: MIT */
/* boot/cli/json.h - writing JSON values for the --json outputs. */
#ifndef GPUOS_BOOT_JSON_H
#define GPUOS_BOOT_JSON_H

#include <stdio.h>

/* A JSON string with the escapes RFC 8259 requires; bytes >= 0x80 pass
 * through when they form valid UTF-8, else become \u00XX of the byte. */
static inline void json_strn(FILE *f, const char *s, size_t n)
{
	size_t i;
	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			fputc('\\', f);
			fputc(ch, f);
		} else if (ch == '\n') {
			fputs("\\n", f);
		} else if (ch == '\r') {
			fputs("\\r", f);
		} else if (ch == '\t') {
			fputs("\\t", f);
		} else if (ch < 0x20 || ch == 0x7f) {
			fprintf(f, "\\u%04x", ch);
		} else if (ch < 0x80) {
			fputc(ch, f);
		} else {
			/* validate one UTF-8 sequence */
			size_t len = ch >= 0xf0 && ch < 0xf5 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 && ch < 0xe0 ? 2 : 0;
			size_t k;
			int ok = len != 0 && i + len <= n;
			for (k = 1; ok && k < len; k++)
				ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
			if (ok) {
				fwrite(s + i, 1, len, f);
				i += len - 1;
			} else {
				fprintf(f, "\\u%04x", ch);
			}
		}
	}
	fputc('"', f);
}

static inline void json_str(FILE *f, const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	json_strn(f, s, n);
}

#endif /* GPUOS_BOOT_JSON_H */
