/* SPDX-License-Identifier: MIT */
/*
 * tests/tools/dequant_check.c - gpuos_dequant (gpuos/host.h) on the host,
 * for tests/tools/quant_ref.py --dequant to compare with its own model of
 * ggml's types: reads cases from stdin, one a line,
 *     TYPE OUT N SRC_HEX       (ggml type ids; N elements of TYPE)
 * and prints for each the N elements of OUT in hex, or "error RC: REASON".
 * Converts with no system (CPU threads, as host mode does); exit 2 on a
 * malformed line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuos/host.h"
#include "gpuos/quant.h"

int main(void)
{
	static char line[1 << 22];
	while (fgets(line, sizeof(line), stdin)) {
		unsigned t, out;
		unsigned long long n;
		int at = 0, r;
		if (sscanf(line, "%u %u %llu %n", &t, &out, &n, &at) != 3 || !at)
			return 2;
		const char *hex = line + at;
		size_t len = strcspn(hex, "\n") / 2, ob = gpuos_dequant_out_bytes(out) ? gpuos_dequant_out_bytes(out) : 4;
		uint8_t *src = malloc(len + 1), *dst = malloc(n * ob + 1);
		if (!src || !dst)
			return 3;
		for (size_t i = 0; i < len; i++) {
			unsigned v;
			if (sscanf(hex + 2 * i, "%2x", &v) != 1)
				return 2;
			src[i] = (uint8_t)v;
		}
		r = gpuos_dequant(NULL, t, src, len, dst, out, n);
		if (r) {
			printf("error %d: %s\n", r, gpuos_sys_error(NULL));
		} else {
			for (size_t i = 0; i < n * ob; i++)
				printf("%02x", dst[i]);
			putchar('\n');
		}
		free(src);
		free(dst);
	}
	return 0;
}
