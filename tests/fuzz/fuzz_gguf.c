/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_gguf.c - fuzz target for runtime/model/gguf/gguf.c. The
 * input is the GGUF file itself, read through a gpuos_meta_io over the
 * buffer (the io refuses reads past its size, as the runtime's does, so
 * ASan sees any read the parser makes outside the file).
 *
 * Each input is parsed three ways and the results must agree:
 *   big tables (with a name index), tiny tables (-ENOSPC paths), no tables.
 * A successful parse is then checked: offsets inside the file and aligned,
 * every tensor found by its own name, layers consistent, arena references in
 * bounds and NUL-terminated.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude \
 *         tests/fuzz/fuzz_gguf.c runtime/model/gguf/gguf.c -o build/fuzz_gguf
 *   gcc -g -O1 -fsanitize=address,undefined -D_GNU_SOURCE -Iinclude \
 *       tests/fuzz/standalone.c tests/fuzz/fuzz_gguf.c runtime/model/gguf/gguf.c -o build/fuzz_gguf_sa
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/model/gguf/gguf.h"

#define CHECK(c)                                                                   \
	do {                                                                       \
		if (!(c)) {                                                        \
			fprintf(stderr, "fuzz_gguf: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                   \
		}                                                                  \
	} while (0)

struct bio {
	const uint8_t *data;
	size_t size;
};

static int bio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	const struct bio *b = (const struct bio *)ctx;

	CHECK(off <= b->size && len <= b->size - off); /* gpuos_meta_read checked it */
	memcpy(dst, b->data + off, len);
	return 0;
}

#define BIG_T 256
#define BIG_KV 256
#define BIG_ARENA (1u << 20)

static struct gpuos_gguf_parser p;
static struct gpuos_gguf_tensor tensors[BIG_T];
static struct gpuos_gguf_kv kv[BIG_KV];
static uint8_t arena[BIG_ARENA];
static uint32_t index_[2 * BIG_T];

static void check_str(const struct gpuos_gguf *g, const struct gpuos_gguf_str *s)
{
	CHECK((uint64_t)s->off + s->len < g->arena_used + 1);
	CHECK(s->len <= s->full_len && s->len <= GPUOS_GGUF_STR_MAX);
	CHECK(g->mem.arena[s->off + s->len] == 0);
}

static void check_arr(const struct gpuos_gguf *g, const struct gpuos_gguf_arr *a, int level)
{
	uint32_t i;

	CHECK(a->n_items <= GPUOS_GGUF_ARR_ITEMS && a->n_items <= a->count);
	CHECK(a->elem_type < GPUOS_GGUF_TYPE_COUNT);
	if (!a->n_items)
		return;
	CHECK(a->items_off % 8 == 0 && a->items_off < g->arena_used);
	for (i = 0; i < a->n_items; i++) {
		if (a->elem_type == GPUOS_GGUF_TYPE_STRING)
			check_str(g, (const struct gpuos_gguf_str *)gpuos_gguf_items(g, a) + i);
		else if (a->elem_type == GPUOS_GGUF_TYPE_ARRAY) {
			CHECK(level < 2);
			check_arr(g, (const struct gpuos_gguf_arr *)gpuos_gguf_items(g, a) + i, level + 1);
		}
	}
}

static void check_ok(const struct gpuos_gguf *g, uint64_t size)
{
	uint32_t i, idx[8], n;
	uint64_t lo, hi;

	CHECK(g->version == 2 || g->version == 3);
	CHECK(g->alignment && !(g->alignment & (g->alignment - 1)));
	CHECK(g->data_offset % g->alignment == 0);
	CHECK(g->tensor_info_end <= size && g->data_offset >= g->tensor_info_end);
	CHECK(g->n_tensors == g->tensor_count && g->n_kv == g->kv_count);
	CHECK(g->tensor_count == 0 || g->data_end <= size);
	CHECK(g->arena_used <= g->mem.arena_cap);
	for (i = 0; i < g->n_kv; i++) {
		const struct gpuos_gguf_kv *k = &g->mem.kv[i];

		CHECK(k->type < GPUOS_GGUF_TYPE_COUNT);
		CHECK(k->key_off + k->key_len < g->arena_used + 1 && g->mem.arena[k->key_off + k->key_len] == 0);
		CHECK(k->val_off + k->val_bytes <= size);
		CHECK(gpuos_gguf_find_kv(g, gpuos_gguf_kv_key(g, k)) == (int)i);
		if (k->type == GPUOS_GGUF_TYPE_STRING)
			check_str(g, &k->str);
		if (k->type == GPUOS_GGUF_TYPE_ARRAY)
			check_arr(g, &k->arr, 0);
	}
	for (i = 0; i < g->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &g->mem.tensors[i];
		uint32_t b, s;

		CHECK(t->abs_off == g->data_offset + t->rel_off);
		CHECK(t->abs_off % g->alignment == 0);
		CHECK(t->abs_off <= size && t->size <= size - t->abs_off);
		CHECK(t->abs_off + t->size <= g->data_end);
		CHECK(t->n_dims <= GPUOS_GGUF_MAX_DIMS && t->name_len < GPUOS_GGUF_NAME_MAX);
		CHECK(gpuos_ggml_type_size(t->type, &b, &s) == 0 && t->ne[0] % b == 0);
		CHECK(gpuos_gguf_find(g, t->name) == (int)i);
		CHECK(t->layer < (int32_t)g->n_layers);
		if (t->layer >= 0) {
			CHECK(gpuos_gguf_layer_span(g, (uint32_t)t->layer, &lo, &hi) == 0);
			CHECK(lo <= t->abs_off && t->abs_off + t->size <= hi);
			CHECK(gpuos_gguf_layer(g, (uint32_t)t->layer, idx, 8, &n) == (n > 8 ? -ENOSPC : 0));
		}
	}
}

static int parse(struct gpuos_gguf *g, const struct gpuos_meta_io *io, uint32_t nt, uint32_t nk,
		 uint32_t na, int with_index)
{
	memset(g, 0, sizeof(*g));
	if (nt) {
		g->mem.tensors = tensors;
		g->mem.tensor_cap = nt;
	}
	if (nk) {
		g->mem.kv = kv;
		g->mem.kv_cap = nk;
	}
	if (na) {
		g->mem.arena = arena;
		g->mem.arena_cap = na;
	}
	if (with_index) {
		g->mem.index = index_;
		g->mem.index_cap = 2 * BIG_T;
	}
	return gpuos_gguf_parse(g, &p, io);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bio b = { data, size };
	struct gpuos_meta_io io = { bio_read, &b, size };
	struct gpuos_gguf g;
	int big, tiny, none;

	big = parse(&g, &io, BIG_T, BIG_KV, BIG_ARENA, 1);
	CHECK(big <= 0);
	CHECK(big == 0 || p.why != NULL);
	if (big == 0)
		check_ok(&g, size);

	tiny = parse(&g, &io, 2, 2, 200, 0);
	none = parse(&g, &io, 0, 0, 0, 0);
	/* Tables only add -ENOSPC and the duplicate checks (-EINVAL), which
	 * may come before the error the validating parse meets. */
	if (big == 0) {
		CHECK(tiny == 0 || tiny == -ENOSPC);
		CHECK(none == 0);
	}
	if (big == -ENOSPC)
		CHECK(none == 0);
	if (none != 0) {
		CHECK(big == none || big == -EINVAL);
		CHECK(tiny == none || tiny == -EINVAL);
	}
	return 0;
}
