/* SPDX-License-Identifier: MIT */
/*
 * tests/tools/quant_check.c - apps/llama/quant.h on the host, for
 * tests/tools/quant_ref.py to compare with its own implementation of ggml's
 * types: reads cases from stdin, one a line,
 *     TYPE N ROW_HEX X_HEX          (X: N little-endian binary32 values)
 * and prints for each
 *     DEQUANT_HEX ACT_HEX DOT_HEX LANES_HEX
 *         (N binary32 values; the activations in the dot type; the dot
 *         product, binary32; the same product as the engine takes it, by
 *         32 lanes of pieces (apps/llama/lanes.h), binary32)
 * and for "h VALUE_HEX" lines (a binary32) its binary16 and bfloat16 and back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../apps/llama/lanes.h"
#include "../../apps/llama/quant.h"

static int unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static void hex(const void *p, size_t n)
{
	const uint8_t *b = (const uint8_t *)p;
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

int main(void)
{
	static char line[1 << 22];
	while (fgets(line, sizeof(line), stdin)) {
		char *tok[4] = {0};
		int k = 0;
		for (char *p = strtok(line, " \n"); p && k < 4; p = strtok(NULL, " \n"))
			tok[k++] = p;
		if (k == 2 && !strcmp(tok[0], "h")) {
			uint32_t u = (uint32_t)strtoul(tok[1], NULL, 16);
			float f = gpuos_u32_as_f32(u);
			uint16_t h = gpuos_f32_to_f16(f), b = gpuos_f32_to_bf16(f);
			printf("%04x %04x %08x %08x\n", h, b, gpuos_f32_as_u32(gpuos_f16_to_f32(h)),
			       gpuos_f32_as_u32(gpuos_bf16_to_f32(b)));
			continue;
		}
		if (k != 4)
			return 2;
		uint32_t t = (uint32_t)atoi(tok[0]), dt = llama_dot_type(t);
		uint64_t n = strtoull(tok[1], NULL, 10), rb = llama_row_bytes(t, n), ab = llama_row_bytes(dt, n);
		uint8_t *row = malloc(rb), *act = malloc(ab);
		float *x = malloc(n * 4), *y = malloc(n * 4);
		if (!rb || !ab || strlen(tok[2]) != 2 * rb || strlen(tok[3]) != 8 * n || unhex(tok[2], row, rb) ||
		    unhex(tok[3], (uint8_t *)x, n * 4))
			return 3;
		gpuos_dequant_row(t, row, y, n);
		llama_quantize_act(dt, x, act, n);
		float d = llama_dot(t, row, act, n), lanes;
		llama_rows_dot(t, row, act, 0, 1, n, 0, &lanes);
		hex(y, n * 4);
		putchar(' ');
		hex(act, ab);
		putchar(' ');
		hex(&d, 4);
		putchar(' ');
		hex(&lanes, 4);
		putchar('\n');
		free(row);
		free(act);
		free(x);
		free(y);
	}
	return 0;
}
