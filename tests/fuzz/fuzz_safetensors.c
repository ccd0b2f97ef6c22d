/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_safetensors.c - fuzz target for
 * runtime/model/safetensors/safetensors.c. The input is the safetensors
 * file itself; the header is copied into a buffer of exactly its length, so
 * ASan sees any read the parser makes past it.
 *
 * Each input is parsed three ways and the results must agree:
 *   big tables (tensors and metadata), tiny tables (-ENOSPC paths), none.
 * The JSON pass is the same whatever the tables, so an error found there is
 * the same error (reason and byte) in all three; the checks across tensors
 * (duplicates, coverage) need the full tables and come after it.
 * A successful parse is then checked: the tensors tile the data area, each is
 * found by its own decoded name, sizes agree with dtype and shape, layers
 * agree with gpuos_st_layer_of, metadata keys are found and values decode.
 * Random spans of the header go through the string helpers too.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude \
 *         tests/fuzz/fuzz_safetensors.c runtime/model/safetensors/safetensors.c -o build/fuzz_safetensors
 *   gcc -g -O1 -fsanitize=address,undefined -D_GNU_SOURCE -Iinclude tests/fuzz/standalone.c \
 *       tests/fuzz/fuzz_safetensors.c runtime/model/safetensors/safetensors.c -o build/fuzz_safetensors_sa
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/model/safetensors/safetensors.h"

#define CHECK(c)                                                                          \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "fuzz_safetensors: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                          \
		}                                                                         \
	} while (0)

#define BIG_T 4096
#define BIG_M 256

static struct gpuos_st_tensor tensors[BIG_T];
static struct gpuos_st_meta meta[BIG_M];
static char name[GPUOS_ST_NAME_MAX + 1];
static char name2[GPUOS_ST_NAME_MAX + 1];

static int parse(struct gpuos_st *st, struct gpuos_st_error *err, const uint8_t *hdr, uint64_t n, uint64_t size,
		 uint32_t nt, uint32_t nm)
{
	memset(st, 0, sizeof(*st));
	if (nt) {
		st->tensors = tensors;
		st->tensor_cap = nt;
	}
	if (nm) {
		st->meta = meta;
		st->meta_cap = nm;
	}
	return gpuos_st_parse(st, hdr, n, size, err);
}

static void check_ok(const struct gpuos_st *st, uint64_t n, uint64_t size)
{
	uint64_t at = 0, nel, lo, hi;
	uint32_t i, d;
	int len;

	CHECK(st->header_len == n && st->data_off == 8 + n && st->data_off + st->data_len == size);
	CHECK(st->n_tensors <= BIG_T && st->n_meta <= BIG_M);
	for (i = 0; i < st->n_tensors; i++) {
		const struct gpuos_st_tensor *t = &st->tensors[i];

		CHECK(t->begin == at && t->begin <= t->end);
		CHECK(t->abs_begin == st->data_off + t->begin && t->abs_end == st->data_off + t->end);
		at = t->end;
		CHECK(gpuos_st_dtype_name(t->dtype) != NULL && t->ndim <= GPUOS_ST_MAX_DIMS);
		nel = 1;
		for (d = 0; d < t->ndim; d++)
			nel *= t->shape[d];
		for (; d < GPUOS_ST_MAX_DIMS; d++)
			CHECK(t->shape[d] == 1);
		CHECK(nel * gpuos_st_dtype_size(t->dtype) == t->end - t->begin);
		CHECK((uint64_t)t->name_off + t->name_raw < n);
		len = gpuos_st_name(st, t, name, sizeof(name));
		CHECK(len >= 0 && (uint32_t)len == t->name_len && len <= (int)GPUOS_ST_NAME_MAX);
		CHECK(strlen(name) == (size_t)len);
		CHECK(gpuos_st_find(st, name) == (int)i);
		CHECK(gpuos_st_str_cmp(st->hdr, t->name_off, t->name_raw, name) == 0);
		CHECK(t->layer == gpuos_st_layer_of(name, (size_t)len));
		CHECK(t->layer < (int32_t)st->n_layers);
		if (t->layer >= 0) {
			CHECK(gpuos_st_layer_span(st, (uint32_t)t->layer, &lo, &hi) == 0);
			CHECK(lo <= t->abs_begin && t->abs_end <= hi);
		}
		if (i && t[-1].begin == t->begin && t[-1].end == t->end)
			CHECK(t[-1].index < t->index);
	}
	CHECK(at == st->data_len);
	for (i = 0; i < st->n_meta; i++) {
		const struct gpuos_st_meta *m = &st->meta[i];

		CHECK(i == 0 || m[-1].key_off < m->key_off);
		len = gpuos_st_str_decode(st->hdr, m->key_off, m->key_raw, name, sizeof(name));
		CHECK(len >= 0 && (uint32_t)len == m->key_len);
		CHECK(gpuos_st_meta_find(st, name) == (int)i);
		len = gpuos_st_str_decode(st->hdr, m->val_off, m->val_raw, name2, sizeof(name2));
		CHECK(len == -ENOSPC || (len >= 0 && (uint32_t)len == m->val_len));
	}
}

/* Any span of the header goes through the helpers without reading outside it. */
static void spans(const uint8_t *hdr, uint64_t n, const uint8_t *data, size_t size)
{
	uint32_t k, off, raw;
	int a, b;

	for (k = 0; k + 4 <= size && k < 64; k += 4) {
		off = (uint32_t)(((uint32_t)data[k] << 8 | data[k + 1]) % (n + 1));
		raw = (uint32_t)(((uint32_t)data[k + 2] << 8 | data[k + 3]) % (n - off + 1));
		a = gpuos_st_str_decode(hdr, off, raw, name, sizeof(name));
		CHECK(a == -EINVAL || a == -ENOSPC || (a >= 0 && (uint32_t)a <= raw && strlen(name) <= (size_t)a));
		b = gpuos_st_str_cmp(hdr, off, raw, name);
		if (a >= 0 && strlen(name) == (size_t)a)
			CHECK(b == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpuos_st_error eb, et, en;
	struct gpuos_st st;
	uint8_t *hdr;
	uint64_t n;
	int big, tiny, none;

	if (gpuos_st_header_len(data, size, &n, &eb)) {
		CHECK(eb.why != NULL);
		return 0;
	}
	CHECK(eb.why == NULL && n >= 2 && 8 + n <= size);
	hdr = (uint8_t *)malloc(n);
	CHECK(hdr);
	memcpy(hdr, data + 8, n);

	big = parse(&st, &eb, hdr, n, size, BIG_T, BIG_M);
	CHECK(big <= 0 && (big == 0) == (eb.why == NULL));
	if (big == 0)
		check_ok(&st, n, size);
	else
		CHECK(eb.off >= 8 && eb.off <= 8 + n && strlen(eb.name) < GPUOS_ST_ERR_NAME &&
		      strlen(eb.token) < GPUOS_ST_ERR_TOKEN);

	tiny = parse(&st, &et, hdr, n, size, 2, 1);
	none = parse(&st, &en, hdr, n, size, 0, 0);
	if (none != 0 && none != -ENOSPC) {
		/* an error of the JSON pass: the same with any tables */
		CHECK(big == none && tiny == none);
		CHECK(eb.why == en.why && et.why == en.why && eb.off == en.off && et.off == en.off);
		CHECK(eb.tensor == en.tensor && !strcmp(eb.name, en.name) && !strcmp(eb.token, en.token));
	} else {
		/* the JSON pass passed: errors can only come from the checks across tensors */
		CHECK(big != -ENOSPC || st.n_tensors > BIG_T || st.n_meta > BIG_M);
		CHECK(tiny == big || tiny == -ENOSPC);
		if (st.n_tensors == 0)
			CHECK(none == big || (big == -EINVAL && none == 0)); /* duplicate metadata keys */
		else
			CHECK(none == -ENOSPC);
	}
	spans(hdr, n, data, size);
	free(hdr);
	return 0;
}
