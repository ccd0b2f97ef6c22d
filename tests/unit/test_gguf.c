/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_gguf.c - the GGUF parser (runtime/model/gguf/gguf.c) against
 *  - files written by tests/tools/gguf_writer.py, compared field by field with
 *    the writer's own JSON description through tests/tools/gguf_compare.py;
 *  - the writer's catalogue of hostile files, each with its errno and reason;
 *  - real files in ../shared/testdata/gguf (skipped when absent);
 *  - the raw layout (a GGUF at a byte offset of an image), read chunking,
 *    device errors, -ENOSPC with measure-and-retry, lookups and layer groups.
 * Run from the repository root (make test-unit does).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/model/gguf/gguf.h"
#include "../../runtime/util.h"
#include "../tools/gguf_parsed.h"

#define WRITER "tests/tools/gguf_writer.py"
#define COMPARE "tests/tools/gguf_compare.py"
#define REAL "../shared/testdata/gguf"

/* ---- a file-backed meta_io ------------------------------------------------------ */

struct fio {
	int fd;
	uint64_t base;      /* byte offset of the GGUF in the file */
	unsigned reads;
	uint64_t bytes;
	uint32_t max_len;
	int fail_at;        /* read number that fails with -EIO, 0 never */
};

static int fio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct fio *f = (struct fio *)ctx;
	ssize_t n;

	f->reads++;
	f->bytes += len;
	if (len > f->max_len)
		f->max_len = len;
	if (f->fail_at && (int)f->reads == f->fail_at)
		return -EIO;
	n = pread(f->fd, dst, len, (off_t)(f->base + off));
	return n == (ssize_t)len ? 0 : -EIO;
}

static void fio_open(struct fio *f, struct gpuos_meta_io *io, const char *path, uint64_t base)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->fd = open(path, O_RDONLY);
	cr_assert(f->fd >= 0, "open %s", path);
	cr_assert(fstat(f->fd, &st) == 0);
	f->base = base;
	io->read = fio_read;
	io->ctx = f;
	io->size = (uint64_t)st.st_size - base;
}

/* ---- parsing with generous tables ------------------------------------------------- */

struct parsed {
	struct gpuos_gguf g;
	struct gpuos_gguf_parser p;
	struct fio f;
	struct gpuos_meta_io io;
	int rc;
};

static void mem_alloc(struct gpuos_gguf *g, uint32_t tensors, uint32_t kvs, uint32_t arena, uint32_t index)
{
	memset(&g->mem, 0, sizeof(g->mem));
	g->mem.tensors = (struct gpuos_gguf_tensor *)calloc(tensors + 1, sizeof(*g->mem.tensors));
	g->mem.tensor_cap = tensors;
	g->mem.kv = (struct gpuos_gguf_kv *)calloc(kvs + 1, sizeof(*g->mem.kv));
	g->mem.kv_cap = kvs;
	g->mem.arena = (uint8_t *)malloc(arena + 1);
	g->mem.arena_cap = arena;
	if (index) {
		g->mem.index = (uint32_t *)calloc(index, sizeof(uint32_t));
		g->mem.index_cap = index;
	}
	cr_assert(g->mem.tensors && g->mem.kv && g->mem.arena);
}

static void mem_free(struct gpuos_gguf *g)
{
	free(g->mem.tensors);
	free(g->mem.kv);
	free(g->mem.arena);
	free(g->mem.index);
	memset(&g->mem, 0, sizeof(g->mem));
}

static struct parsed *parse_file(const char *path, uint64_t base, int with_index)
{
	struct parsed *r = (struct parsed *)calloc(1, sizeof(*r));

	cr_assert(r);
	fio_open(&r->f, &r->io, path, base);
	mem_alloc(&r->g, 4096, 1024, 8u << 20, with_index ? 8192 : 0);
	r->rc = gpuos_gguf_parse(&r->g, &r->p, &r->io);
	return r;
}

static void parsed_free(struct parsed *r)
{
	close(r->f.fd);
	mem_free(&r->g);
	free(r);
}

/* ---- the writer ------------------------------------------------------------------- */

static char tmpdir[64];

static void mktmp(void)
{
	strcpy(tmpdir, "/tmp/gpuos-gguf-XXXXXX");
	cr_assert(mkdtemp(tmpdir), "mkdtemp");
}

static void rmtmp(void)
{
	char cmd[128];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd)) {
			/* nothing to do */
		}
	}
}

/* Write case `name` with the writer; paths of the file and its JSON. */
static void write_case(const char *name, int seed, char *gguf, char *json, size_t cap)
{
	char cmd[512];

	snprintf(gguf, cap, "%s/%s.gguf", tmpdir, name);
	snprintf(json, cap, "%s/%s.json", tmpdir, name);
	snprintf(cmd, sizeof(cmd), "python3 " WRITER " --case %s --seed %d '%s' --json '%s'", name, seed, gguf,
		 json);
	cr_assert(system(cmd) == 0, "gguf_writer.py failed: %s", cmd);
}

/* Parse a writer case and compare the parse with the writer's description. */
static struct parsed *check_case(const char *name, int seed)
{
	char gguf[256], json[256], out[300], cmd[1024];
	struct parsed *r;
	FILE *f;

	write_case(name, seed, gguf, json, sizeof(gguf));
	r = parse_file(gguf, 0, 1);
	if (r->rc)
		gguf_print_error(stderr, &r->p, r->rc);
	cr_assert_eq(r->rc, 0, "%s: parse failed: %d (%s '%s')", name, r->rc, r->p.why, r->p.subject);
	snprintf(out, sizeof(out), "%s/%s.parsed.json", tmpdir, name);
	f = fopen(out, "w");
	cr_assert(f);
	gguf_json_file(f, &r->g);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 " COMPARE " --quiet '%s' '%s'", json, out);
	cr_assert(system(cmd) == 0, "%s: the parse differs from what the writer wrote (see above)", name);
	return r;
}

/* ---- type tables -------------------------------------------------------------------- */

Test(gguf, ggml_type_table)
{
	/* id, block, bytes: ggml-common.h */
	static const uint32_t want[][3] = {
		{0, 1, 4}, {1, 1, 2}, {2, 32, 18}, {3, 32, 20}, {6, 32, 22}, {7, 32, 24}, {8, 32, 34},
		{9, 32, 36}, {10, 256, 84}, {11, 256, 110}, {12, 256, 144}, {13, 256, 176}, {14, 256, 210},
		{15, 256, 292}, {16, 256, 66}, {17, 256, 74}, {18, 256, 98}, {19, 256, 50}, {20, 32, 18},
		{21, 256, 110}, {22, 256, 82}, {23, 256, 136}, {24, 1, 1}, {25, 1, 2}, {26, 1, 4},
		{27, 1, 8}, {28, 1, 8}, {29, 256, 56}, {30, 1, 2}, {34, 256, 54}, {35, 256, 66},
		{39, 32, 17}, {40, 64, 36}, {41, 128, 18}, {42, 64, 18},
	};
	static const uint32_t removed[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 99, 0xffffffffu};
	uint32_t i, b, s;

	for (i = 0; i < GPUOS_ARRAY_SIZE(want); i++) {
		cr_assert_eq(gpuos_ggml_type_size(want[i][0], &b, &s), 0, "type %u", want[i][0]);
		cr_assert_eq(b, want[i][1], "type %u block", want[i][0]);
		cr_assert_eq(s, want[i][2], "type %u bytes", want[i][0]);
		cr_assert_not_null(gpuos_ggml_type_name(want[i][0]));
	}
	for (i = 0; i < GPUOS_ARRAY_SIZE(removed); i++) {
		cr_assert_eq(gpuos_ggml_type_size(removed[i], &b, &s), -EINVAL, "type %u", removed[i]);
		cr_assert_null(gpuos_ggml_type_name(removed[i]));
	}
	cr_assert_str_eq(gpuos_ggml_type_name(GPUOS_GGML_TYPE_Q4_K), "Q4_K");
	cr_assert_str_eq(gpuos_ggml_type_name(GPUOS_GGML_TYPE_BF16), "BF16");
	cr_assert_str_eq(gpuos_gguf_type_name(GPUOS_GGUF_TYPE_FLOAT64), "float64");
	cr_assert_null(gpuos_gguf_type_name(13));
}

Test(gguf, util_helpers)
{
	uint8_t b[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x88};
	uint8_t c[8];
	uint64_t r;
	char s[8];

	cr_assert_eq(gpuos_le16(b), 0x0201);
	cr_assert_eq(gpuos_le32(b + 1), 0x05040302u);
	cr_assert_eq(gpuos_le64(b), 0x8807060504030201ull);
	gpuos_put_le64(c, 0x8807060504030201ull);
	cr_assert_eq(gpuos_mem_cmp(b, c, 8), 0);
	gpuos_put_le32(c, 0xdeadbeef);
	cr_assert_eq(gpuos_le32(c), 0xdeadbeefu);
	gpuos_put_le16(c, 0xbeef);
	cr_assert_eq(gpuos_le16(c), 0xbeef);
	gpuos_mem_set(c, 0, 8);
	cr_assert(gpuos_mem_is_zero(c, 8));
	cr_assert(gpuos_mem_cmp("ab", "ac", 2) < 0);
	cr_assert_eq(gpuos_str_len("hello"), 5);
	cr_assert_eq(gpuos_str_nlen("hello", 3), 3);
	cr_assert_eq(gpuos_str_cmp("abc", "abc"), 0);
	cr_assert(gpuos_str_cmp("abc", "abd") < 0);
	cr_assert(gpuos_str_cmp("ab", "abc") < 0);
	cr_assert_eq(gpuos_str_ncmp("abcx", "abcy", 3), 0);
	cr_assert_eq(gpuos_str_copy(s, "truncate me", sizeof(s)), 7);
	cr_assert_str_eq(s, "truncat");
	cr_assert(gpuos_add_overflow_u64(UINT64_MAX, 1, &r));
	cr_assert(!gpuos_add_overflow_u64(UINT64_MAX - 1, 1, &r) && r == UINT64_MAX);
	cr_assert(gpuos_mul_overflow_u64(1ull << 32, 1ull << 32, &r));
	cr_assert(!gpuos_mul_overflow_u64(1ull << 31, 1ull << 32, &r) && r == 1ull << 63);
	cr_assert(!gpuos_align_up_u64(33, 32, &r) && r == 64);
	cr_assert(gpuos_align_up_u64(UINT64_MAX - 3, 32, &r));
	cr_assert(gpuos_is_pow2_u64(4096) && !gpuos_is_pow2_u64(0) && !gpuos_is_pow2_u64(48));
}

/* ---- files from the project's writer ------------------------------------------------------ */

TestSuite(gguf_writer, .init = mktmp, .fini = rmtmp, .timeout = 120);

Test(gguf_writer, all_types_v3)
{
	struct parsed *r = check_case("all-v3", 7);
	const struct gpuos_gguf *g = &r->g;
	const struct gpuos_gguf_kv *kv;
	const struct gpuos_gguf_str *s;
	int i;

	cr_assert_eq(g->version, 3);
	cr_assert_eq(g->alignment, 32);
	cr_assert(g->flags & GPUOS_GGUF_F_PACKED);
	cr_assert(g->flags & GPUOS_GGUF_F_TRUNCATED);
	cr_assert(!(g->flags & GPUOS_GGUF_F_DATA_PAST_EOF));
	cr_assert_eq(g->data_offset % 32, 0);
	cr_assert_geq(g->data_offset, g->tensor_info_end);
	cr_assert_lt(g->data_offset - g->tensor_info_end, 32);

	i = gpuos_gguf_find_kv(g, "general.long_string");
	cr_assert_geq(i, 0);
	kv = &g->mem.kv[i];
	cr_assert_eq(kv->type, GPUOS_GGUF_TYPE_STRING);
	cr_assert(kv->flags & GPUOS_GGUF_KV_TRUNCATED);
	cr_assert_eq(kv->str.full_len, 65536 + 4464);
	cr_assert_eq(kv->str.len, GPUOS_GGUF_STR_MAX);
	cr_assert_eq(gpuos_gguf_str_ptr(g, &kv->str)[GPUOS_GGUF_STR_MAX], 0);
	cr_assert_eq(kv->val_bytes, 8 + 65536 + 4464);

	i = gpuos_gguf_find_kv(g, "test.i64");
	cr_assert_eq(g->mem.kv[i].val.i64, INT64_MIN);
	i = gpuos_gguf_find_kv(g, "test.u64");
	cr_assert_eq(g->mem.kv[i].val.u64, UINT64_MAX);
	i = gpuos_gguf_find_kv(g, "test.f32");
	cr_assert_eq(g->mem.kv[i].val.f64, (double)0.1f);
	i = gpuos_gguf_find_kv(g, "test.true");
	cr_assert_eq(g->mem.kv[i].val.u64, 1);

	i = gpuos_gguf_find_kv(g, "tokenizer.ggml.tokens");
	kv = &g->mem.kv[i];
	cr_assert_eq(kv->arr.elem_type, GPUOS_GGUF_TYPE_STRING);
	cr_assert_eq(kv->arr.count, 1000);
	cr_assert_eq(kv->arr.n_items, 16);
	s = (const struct gpuos_gguf_str *)gpuos_gguf_items(g, &kv->arr);
	cr_assert_str_eq(gpuos_gguf_str_ptr(g, &s[1]), "<s>");

	i = gpuos_gguf_find_kv(g, "test.nested3");
	kv = &g->mem.kv[i];
	cr_assert_eq(kv->arr.elem_type, GPUOS_GGUF_TYPE_ARRAY);
	{
		const struct gpuos_gguf_arr *in = (const struct gpuos_gguf_arr *)gpuos_gguf_items(g, &kv->arr);
		const struct gpuos_gguf_arr *in2 = (const struct gpuos_gguf_arr *)gpuos_gguf_items(g, &in[0]);

		cr_assert_eq(in[0].elem_type, GPUOS_GGUF_TYPE_ARRAY);
		cr_assert_eq(in[0].count, 2);
		cr_assert_eq(in2[0].elem_type, GPUOS_GGUF_TYPE_UINT16);
		cr_assert_eq(in2[0].count, 2);
		cr_assert_eq(in2[0].n_items, 0, "third level keeps the header only");
	}
	cr_assert_eq(gpuos_gguf_find_kv(g, "no.such.key"), -ENOENT);
	cr_assert_eq(g->n_layers, 4);
	parsed_free(r);
}

Test(gguf_writer, all_types_v2)
{
	struct parsed *r = check_case("all-v2", 3);

	cr_assert_eq(r->g.version, 2);
	cr_assert_eq(r->g.alignment, 64);
	parsed_free(r);
}

Test(gguf_writer, alignments)
{
	static const char *cases[] = {"align-32", "align-64", "align-4096", "default-align"};
	static const uint32_t align[] = {32, 64, 4096, 32};
	unsigned i, t;

	for (i = 0; i < 4; i++) {
		struct parsed *r = check_case(cases[i], 11 + (int)i);

		cr_assert_eq(r->g.alignment, align[i], "%s", cases[i]);
		cr_assert_eq(r->g.data_offset % align[i], 0);
		for (t = 0; t < r->g.n_tensors; t++)
			cr_assert_eq(r->g.mem.tensors[t].abs_off % align[i], 0, "%s tensor %u", cases[i], t);
		cr_assert(r->g.flags & GPUOS_GGUF_F_PACKED);
		parsed_free(r);
	}
}

Test(gguf_writer, shuffled_kv_order)
{
	int seed;

	for (seed = 100; seed < 105; seed++)
		parsed_free(check_case("small", seed));
}

Test(gguf_writer, sparse_above_4g_packed)
{
	struct parsed *r = check_case("sparse-4g", 1);
	const struct gpuos_gguf_tensor *t;
	int i = gpuos_gguf_find(&r->g, "blk.0.attn_q.weight");

	cr_assert_geq(i, 0);
	t = &r->g.mem.tensors[i];
	cr_assert_gt(t->rel_off, 1ull << 32);
	cr_assert_eq(t->abs_off, r->g.data_offset + t->rel_off);
	cr_assert_eq(t->size, 8 * 144);
	cr_assert(r->g.flags & GPUOS_GGUF_F_PACKED);
	cr_assert_eq(r->g.mem.tensors[0].size, 65536ull * 16385 * 4);
	cr_assert_leq(r->g.data_end, r->g.file_size);
	parsed_free(r);
}

Test(gguf_writer, sparse_gap)
{
	struct parsed *r = check_case("sparse-gap", 1);
	int i = gpuos_gguf_find(&r->g, "blk.1.attn_q.weight");

	cr_assert_geq(i, 0);
	cr_assert_eq(r->g.mem.tensors[i].rel_off, 1ull << 33);
	cr_assert(!(r->g.flags & GPUOS_GGUF_F_PACKED), "a gap is not what llama.cpp writes");
	cr_assert_eq(r->g.data_end, r->g.data_offset + (1ull << 33) + 8 * 34 * 2);
	parsed_free(r);
}

Test(gguf_writer, layers_and_lookup)
{
	struct parsed *r = check_case("many-layers", 5);
	const struct gpuos_gguf *g = &r->g;
	uint32_t idx[16], n, i;
	uint64_t lo, hi;
	int j, k;

	cr_assert_eq(g->n_layers, 40);
	cr_assert_eq(g->n_tensors, 362);
	cr_assert(g->flags & GPUOS_GGUF_F_INDEXED);
	cr_assert_eq(gpuos_gguf_layer(g, 7, idx, 16, &n), 0);
	cr_assert_eq(n, 9);
	for (i = 0; i < n; i++) {
		cr_assert_eq(gpuos_str_ncmp(g->mem.tensors[idx[i]].name, "blk.7.", 6), 0);
		cr_assert_eq(g->mem.tensors[idx[i]].layer, 7);
		if (i)
			cr_assert_gt(idx[i], idx[i - 1], "file order");
	}
	cr_assert_str_eq(g->mem.tensors[idx[0]].name, "blk.7.attn_norm.weight");
	cr_assert_str_eq(g->mem.tensors[idx[8]].name, "blk.7.ffn_down.weight");
	cr_assert_eq(gpuos_gguf_layer(g, 7, idx, 4, &n), -ENOSPC);
	cr_assert_eq(n, 9);
	cr_assert_eq(gpuos_gguf_layer(g, 40, idx, 16, &n), -ENOENT);
	cr_assert_eq(gpuos_gguf_layer_span(g, 7, &lo, &hi), 0);
	cr_assert_eq(lo, g->mem.tensors[idx[0]].abs_off);
	cr_assert_eq(hi, g->mem.tensors[idx[8]].abs_off + g->mem.tensors[idx[8]].size);
	j = -1;
	n = 0;
	while ((j = gpuos_gguf_layer_next(g, 39, j)) >= 0)
		n++;
	cr_assert_eq(n, 9);

	/* find: with the index, then without it (linear), same answers */
	for (k = 0; k < 2; k++) {
		struct gpuos_gguf g2 = *g;

		if (k)
			g2.flags &= ~GPUOS_GGUF_F_INDEXED;
		cr_assert_eq(gpuos_gguf_find(&g2, "token_embd.weight"), 0);
		cr_assert_eq(gpuos_gguf_find(&g2, "output.weight"), 361);
		j = gpuos_gguf_find(&g2, "blk.33.ffn_up.weight");
		cr_assert_geq(j, 0);
		cr_assert_str_eq(g->mem.tensors[j].name, "blk.33.ffn_up.weight");
		cr_assert_eq(gpuos_gguf_find(&g2, "blk.33.ffn_up.weigh"), -ENOENT);
		cr_assert_eq(gpuos_gguf_find(&g2, "blk.40.ffn_up.weight"), -ENOENT);
		cr_assert_eq(gpuos_gguf_find(&g2, ""), -ENOENT);
	}
	parsed_free(r);
}

Test(gguf_writer, layer_names)
{
	struct parsed *r = check_case("layer-names", 1);
	static const struct {
		const char *name;
		int layer;
	} want[] = {
		{"blk.0.x", 0}, {"blk.12.attn.weight", 12}, {"blk.007.y", 7}, {"blk.", -1}, {"blk.3", -1},
		{"blk.x.y", -1}, {"blk.3x.y", -1}, {"blk..y", -1}, {"blk.99999999.y", -1}, {"xblk.1.y", -1},
		{"blk.1048576.z", 1048576},
	};
	unsigned i;

	for (i = 0; i < GPUOS_ARRAY_SIZE(want); i++) {
		int t = gpuos_gguf_find(&r->g, want[i].name);

		cr_assert_geq(t, 0, "%s", want[i].name);
		cr_assert_eq(r->g.mem.tensors[t].layer, want[i].layer, "%s: %d", want[i].name,
			     r->g.mem.tensors[t].layer);
	}
	cr_assert_eq(r->g.n_layers, 1048577);
	parsed_free(r);
}

Test(gguf_writer, vocab_only_data_past_eof)
{
	struct parsed *r = check_case("vocab", 2);

	cr_assert_eq(r->g.tensor_count, 0);
	cr_assert(r->g.flags & GPUOS_GGUF_F_DATA_PAST_EOF);
	cr_assert_eq(r->g.n_layers, 0);
	parsed_free(r);
}

Test(gguf_writer, empty_and_nested_max)
{
	struct parsed *r = check_case("empty", 1);

	cr_assert_eq(r->g.kv_count, 0);
	cr_assert_eq(r->g.tensor_count, 0);
	cr_assert_eq(r->g.data_offset, 32);
	parsed_free(r);
	parsed_free(check_case("nested-8", 1));
}

/* Every hostile case of the writer: the errno and the reason it names. */
Test(gguf_writer, hostile_catalogue)
{
	FILE *l = popen("python3 " WRITER " --list", "r");
	char line[128], name[96], kind[32];
	int n = 0;

	cr_assert(l);
	while (fgets(line, sizeof(line), l)) {
		char gguf[256], json[256], buf[512], *e, *w, *q;
		struct parsed *r;
		FILE *f;
		size_t k;

		if (sscanf(line, "%95s %31s", name, kind) != 2 || strcmp(kind, "hostile"))
			continue;
		write_case(name, 1, gguf, json, sizeof(gguf));
		f = fopen(json, "r");
		cr_assert(f);
		k = fread(buf, 1, sizeof(buf) - 1, f);
		buf[k] = 0;
		fclose(f);
		/* {"expect": {"errno": "EINVAL", "why": "..."}} */
		e = strstr(buf, "\"errno\": \"");
		w = strstr(buf, "\"why\": \"");
		cr_assert(e && w, "%s: bad JSON %s", name, buf);
		e += 10;
		*strchr(e, '"') = 0;
		w += 8;
		q = strchr(w, '"');
		*q = 0;
		r = parse_file(gguf, 0, 1);
		cr_assert_str_eq(gguf_errno_name(r->rc), e, "%s: got %d (%s) want %s", name, r->rc,
				 r->p.why ? r->p.why : "-", e);
		cr_assert_not_null(r->p.why, "%s: no reason", name);
		cr_assert(strstr(r->p.why, w), "%s: reason '%s' lacks '%s'", name, r->p.why, w);
		parsed_free(r);
		n++;
	}
	pclose(l);
	cr_assert_geq(n, 30, "only %d hostile cases", n);
}

/* The reason names the subject: tensor name, key, value. */
Test(gguf_writer, error_report_names_subject)
{
	char gguf[256], json[256];
	struct parsed *r;

	write_case("offset-past-eof", 1, gguf, json, sizeof(gguf));
	r = parse_file(gguf, 0, 0);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.subject, "far");
	cr_assert_eq(r->p.err_tensor, 2);
	cr_assert_str_eq(r->p.why, "has data past the end of the file");
	parsed_free(r);

	/* duplicates are found without the hash index too */
	write_case("dup-tensor", 1, gguf, json, sizeof(gguf));
	r = parse_file(gguf, 0, 0);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.why, "is a duplicate tensor name");
	cr_assert_str_eq(r->p.subject, "output.weight");
	parsed_free(r);

	write_case("kv-type-13", 1, gguf, json, sizeof(gguf));
	r = parse_file(gguf, 0, 0);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.subject, "dict1");
	cr_assert_eq(r->p.bad, 13);
	cr_assert_geq(r->p.err_kv, 0);
	cr_assert_eq(r->p.err_tensor, -1);
	parsed_free(r);
}

/* -ENOSPC: everything is still validated, the counts and arena_used say what
 * a retry needs, and a retry with exactly that succeeds. */
Test(gguf_writer, enospc_measure_and_retry)
{
	char gguf[256], json[256];
	struct gpuos_gguf g, full;
	static struct gpuos_gguf_parser p;
	struct gpuos_gguf_kv one;
	struct gpuos_meta_io io;
	struct fio f;
	uint64_t need;
	int rc;

	write_case("all-v3", 9, gguf, json, sizeof(gguf));
	fio_open(&f, &io, gguf, 0);

	memset(&g, 0, sizeof(g));
	g.mem.kv = &one; /* capacity 0: measure */
	rc = gpuos_gguf_parse(&g, &p, &io);
	cr_assert_eq(rc, -ENOSPC);
	cr_assert_eq(g.kv_count, 42);
	cr_assert_eq(g.tensor_count, 54);
	need = g.arena_used;
	cr_assert_gt(need, 65536 * 2);

	mem_alloc(&g, (uint32_t)g.tensor_count, (uint32_t)g.kv_count, (uint32_t)need, 128);
	rc = gpuos_gguf_parse(&g, &p, &io);
	cr_assert_eq(rc, 0, "retry with measured sizes: %d %s", rc, p.why);
	cr_assert_eq(g.arena_used, need);
	full = g;

	/* one byte less arena, one KV less, one tensor less, a small index */
	g.mem.arena_cap = (uint32_t)need - 1;
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), -ENOSPC);
	cr_assert_eq(g.arena_used, need);
	g = full;
	g.mem.kv_cap = 41;
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), -ENOSPC);
	cr_assert_eq(g.arena_used, need, "a KV past the table is measured too");
	g = full;
	g.mem.tensor_cap = 53;
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), -ENOSPC);
	cr_assert_eq(g.n_tensors, 53);
	g = full;
	g.mem.index_cap = 64;
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), -ENOSPC);
	g = full;
	g.mem.index_cap = 100;
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), -EINVAL);

	/* nothing wanted: validate only */
	g = full;
	memset(&g.mem, 0, sizeof(g.mem));
	cr_assert_eq(gpuos_gguf_parse(&g, &p, &io), 0);
	cr_assert_eq(g.n_kv, 0);
	cr_assert_eq(g.n_tensors, 0);
	cr_assert_eq(g.data_offset, full.data_offset);
	cr_assert_eq(g.data_end, full.data_end);
	cr_assert_eq(g.n_layers, full.n_layers);
	g = full;
	mem_free(&g);
	close(f.fd);
}

/* The raw layout: the GGUF written at an odd byte offset of a bigger image
 * parses the same as the file, offsets relative to the GGUF. */
Test(gguf_writer, raw_at_device_offset)
{
	char gguf[256], json[256], img[300], cmd[1200];
	struct parsed *a, *b;
	uint64_t base = (1u << 20) + 7 * 512 + 3;
	uint32_t i;

	write_case("many-layers", 4, gguf, json, sizeof(gguf));
	snprintf(img, sizeof(img), "%s/disk.img", tmpdir);
	snprintf(cmd, sizeof(cmd), "truncate -s 64M '%s' && dd if='%s' of='%s' bs=64K seek=%llu oflag=seek_bytes conv=notrunc status=none",
		 img, gguf, img, (unsigned long long)base);
	cr_assert(system(cmd) == 0);
	a = parse_file(gguf, 0, 1);
	b = parse_file(img, base, 1);
	cr_assert_eq(a->rc, 0);
	cr_assert_eq(b->rc, 0, "raw: %s", b->p.why);
	cr_assert_eq(a->g.data_offset, b->g.data_offset);
	cr_assert_eq(a->g.n_tensors, b->g.n_tensors);
	cr_assert_eq(b->g.file_size, (64u << 20) - base);
	for (i = 0; i < a->g.n_tensors; i++) {
		cr_assert_eq(a->g.mem.tensors[i].abs_off, b->g.mem.tensors[i].abs_off);
		cr_assert_str_eq(a->g.mem.tensors[i].name, b->g.mem.tensors[i].name);
	}
	parsed_free(a);
	parsed_free(b);
}

/* ---- the real files written by others -------------------------------------------------------- */

static int have_real(void)
{
	struct stat st;

	return stat(REAL, &st) == 0 && S_ISDIR(st.st_mode);
}

#define NEED_REAL() do { if (!have_real()) cr_skip("no " REAL " here"); } while (0)

Test(gguf_real, vocab_files_accepted)
{
	static const char *names[] = {"baichuan", "bert-bge", "deepseek-coder", "deepseek-llm", "falcon",
				      "gpt-2", "gpt-neox", "llama-spm", "mpt", "phi-3", "refact", "starcoder"};
	static const unsigned kv[] = {18, 20, 25, 23, 18, 16, 17, 22, 17, 26, 18, 19};
	char path[256];
	unsigned i;

	NEED_REAL();
	for (i = 0; i < GPUOS_ARRAY_SIZE(names); i++) {
		struct parsed *r;
		int t;

		snprintf(path, sizeof(path), REAL "/vocab/ggml-vocab-%s.gguf", names[i]);
		r = parse_file(path, 0, 1);
		cr_assert_eq(r->rc, 0, "%s: %d %s '%s'", path, r->rc, r->p.why, r->p.subject);
		cr_assert_eq(r->g.version, 3);
		cr_assert_eq(r->g.tensor_count, 0);
		cr_assert_eq(r->g.kv_count, kv[i], "%s", path);
		cr_assert_eq(r->g.n_kv, kv[i]);
		cr_assert(r->g.flags & GPUOS_GGUF_F_DATA_PAST_EOF, "%s: README says not padded", path);
		t = gpuos_gguf_find_kv(&r->g, "tokenizer.ggml.tokens");
		cr_assert_geq(t, 0, "%s", path);
		cr_assert_eq(r->g.mem.kv[t].arr.elem_type, GPUOS_GGUF_TYPE_STRING);
		cr_assert_geq(r->g.mem.kv[t].arr.count, 30000, "%s", path);
		/* chunked: a few hundred 4 KiB reads, never byte by byte */
		cr_assert_leq(r->f.max_len, GPUOS_GGUF_WINDOW);
		cr_assert_lt(r->f.reads, r->io.size / 2048 + 4, "%s: %u reads", path, r->f.reads);
		parsed_free(r);
	}
}

Test(gguf_real, llama2_tiny_random)
{
	struct parsed *r;
	const struct gpuos_gguf *g;
	uint32_t idx[16], n, i;
	int t;

	NEED_REAL();
	r = parse_file(REAL "/llama-2-tiny-random.gguf", 0, 1);
	g = &r->g;
	cr_assert_eq(r->rc, 0, "%s", r->p.why);
	cr_assert_eq(g->version, 3);
	cr_assert_eq(g->tensor_count, 12);
	cr_assert_eq(g->kv_count, 18);
	cr_assert_eq(g->alignment, 32);
	cr_assert_eq(g->n_layers, 1);
	cr_assert(g->flags & GPUOS_GGUF_F_PACKED);
	cr_assert_eq(g->data_end, g->file_size);
	t = gpuos_gguf_find_kv(g, "general.architecture");
	cr_assert_str_eq(gpuos_gguf_str_ptr(g, &g->mem.kv[t].str), "llama");
	t = gpuos_gguf_find(g, "token_embd.weight");
	cr_assert_eq(t, 0);
	cr_assert_eq(g->mem.tensors[0].type, GPUOS_GGML_TYPE_F16);
	cr_assert_eq(g->mem.tensors[0].ne[0], 8);
	cr_assert_eq(g->mem.tensors[0].ne[1], 32000);
	cr_assert_eq(g->mem.tensors[0].size, 8 * 32000 * 2);
	cr_assert_eq(gpuos_gguf_layer(g, 0, idx, 16, &n), 0);
	cr_assert_eq(n, 9);
	for (i = 0; i < n; i++)
		cr_assert_eq(gpuos_str_ncmp(g->mem.tensors[idx[i]].name, "blk.0.", 6), 0);
	parsed_free(r);
}

Test(gguf_real, refused_with_their_reasons)
{
	struct parsed *r;

	NEED_REAL();
	r = parse_file(REAL "/ggml-vocab-llama-v1-2023-08-17.gguf", 0, 0);
	cr_assert_eq(r->rc, -EPROTONOSUPPORT);
	cr_assert_str_eq(r->p.why, "GGUF version 1 is not supported");
	parsed_free(r);

	r = parse_file(REAL "/example-FUGG-magic.gguf", 0, 0);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert(strstr(r->p.why, "FUGG"), "%s", r->p.why);
	parsed_free(r);

	r = parse_file(REAL "/test_writer-objtype13.gguf", 0, 0);
	cr_assert_eq(r->rc, -EINVAL);
	cr_assert_str_eq(r->p.why, "has an unknown value type");
	cr_assert_eq(r->p.bad, 13);
	cr_assert_str_eq(r->p.subject, "dict1");
	parsed_free(r);
}

/* ---- io behaviour ----------------------------------------------------------------------------------- */

TestSuite(gguf_io, .init = mktmp, .fini = rmtmp, .timeout = 60);

Test(gguf_io, device_error_is_eio)
{
	char gguf[256], json[256];
	int at;

	write_case("many-layers", 1, gguf, json, sizeof(gguf));
	for (at = 1; at <= 4; at++) {
		struct parsed *r = (struct parsed *)calloc(1, sizeof(*r));

		fio_open(&r->f, &r->io, gguf, 0);
		r->f.fail_at = at;
		mem_alloc(&r->g, 512, 16, 1 << 16, 0);
		r->rc = gpuos_gguf_parse(&r->g, &r->p, &r->io);
		cr_assert_eq(r->rc, -EIO, "fail at read %d: %d", at, r->rc);
		cr_assert_str_eq(r->p.why, "device read error");
		parsed_free(r);
	}
}

Test(gguf_io, reads_in_window_chunks)
{
	char gguf[256], json[256];
	struct parsed *r;

	write_case("all-v3", 1, gguf, json, sizeof(gguf));
	r = parse_file(gguf, 0, 1);
	cr_assert_eq(r->rc, 0);
	cr_assert_leq(r->f.max_len, GPUOS_GGUF_WINDOW);
	/* the header is ~170 KB: about one read per 4 KiB, plus reloads at skips */
	cr_assert_lt(r->f.reads, r->g.tensor_info_end / 4096 * 2 + 8, "%u reads for %llu bytes", r->f.reads,
		     (unsigned long long)r->g.tensor_info_end);
	parsed_free(r);
}

/* Every prefix of a valid file (the io's size cut short) is refused cleanly. */
Test(gguf_io, every_truncation_refused)
{
	char gguf[256], json[256];
	struct parsed *full;
	uint64_t len, end;

	write_case("small", 1, gguf, json, sizeof(gguf));
	full = parse_file(gguf, 0, 1);
	cr_assert_eq(full->rc, 0);
	end = full->g.data_end;
	cr_assert_gt(end, 200);
	for (len = 0; len < end; len++) {
		full->io.size = len;
		full->rc = gpuos_gguf_parse(&full->g, &full->p, &full->io);
		cr_assert_eq(full->rc, -EINVAL, "prefix %llu: rc %d (%s)", (unsigned long long)len, full->rc,
			     full->p.why ? full->p.why : "-");
	}
	full->io.size = len;
	cr_assert_eq(gpuos_gguf_parse(&full->g, &full->p, &full->io), 0);
	parsed_free(full);
}

/* ---- a reader written by others: @huggingface/gguf through gguf_ref.mjs ------------------------------- */

#define REF_MODULES "node_modules"

/* Installed by scripts/deps.sh (make test runs it first), never here: a test
 * reaches no network. */
static int have_ref(void)
{
	struct stat st;

	return stat(REF_MODULES "/@huggingface/gguf/package.json", &st) == 0 &&
	       system("command -v node >/dev/null 2>&1") == 0;
}

/* Our parse and the npm reader's, as JSON, must agree. */
static void agree_with_ref(const char *path)
{
	char ours[300], ref[300], cmd[1200];
	struct parsed *r = parse_file(path, 0, 1);
	FILE *f;

	cr_assert_eq(r->rc, 0, "%s: %s", path, r->p.why);
	snprintf(ours, sizeof(ours), "%s/ours.json", tmpdir);
	snprintf(ref, sizeof(ref), "%s/ref.json", tmpdir);
	f = fopen(ours, "w");
	cr_assert(f);
	gguf_json_file(f, &r->g);
	fclose(f);
	parsed_free(r);
	snprintf(cmd, sizeof(cmd), "node tests/tools/gguf_ref.mjs --modules " REF_MODULES " '%s' > '%s'", path, ref);
	cr_assert(system(cmd) == 0, "gguf_ref.mjs failed on %s", path);
	snprintf(cmd, sizeof(cmd), "python3 " COMPARE " --quiet '%s' '%s'", ref, ours);
	cr_assert(system(cmd) == 0, "%s: @huggingface/gguf and gpuos disagree (see above)", path);
}

TestSuite(gguf_ref, .init = mktmp, .fini = rmtmp, .timeout = 300);

Test(gguf_ref, npm_reader_agrees)
{
	static const char *cases[] = {"all-v3", "all-v2", "align-4096", "sparse-4g", "sparse-gap", "many-layers",
				      "vocab", "empty"};
	char gguf[256], json[256], path[256];
	FILE *l;
	unsigned i, n = 0;

	cr_assert(have_ref(), "no node or no " REF_MODULES "/@huggingface/gguf: scripts/deps.sh installs them");
	for (i = 0; i < GPUOS_ARRAY_SIZE(cases); i++) {
		write_case(cases[i], 21 + (int)i, gguf, json, sizeof(gguf));
		agree_with_ref(gguf);
		n++;
	}
	if (!have_real()) {
		cr_log_warn("no " REAL ": compared writer files only");
		return;
	}
	agree_with_ref(REAL "/llama-2-tiny-random.gguf");
	l = popen("ls " REAL "/vocab/*.gguf", "r");
	cr_assert(l);
	while (fgets(path, sizeof(path), l)) {
		path[strcspn(path, "\n")] = 0;
		agree_with_ref(path);
		n++;
	}
	pclose(l);
	cr_assert_geq(n, 20);
}

/* gguf-split's names (gpuos/gguf.h): what parses, what does not, and the
 * names built back. */
Test(gguf_split, names)
{
	static const struct {
		const char *path;
		int prefix;
		uint32_t k, n;
	} cases[] = {
		{"/m/llama-3.1-70b-q4_k_m-00001-of-00005.gguf", 23, 1, 5},
		{"x-00012-of-00099.gguf", 1, 12, 99},
		{"-00001-of-00002.gguf", -1, 0, 0},          /* no prefix */
		{"m-0001-of-00002.gguf", -1, 0, 0},          /* four digits */
		{"m-00001-of-00002.gguf.part", -1, 0, 0},
		{"m-00001-of-0000x.gguf", -1, 0, 0},
		{"m-00001_of-00002.gguf", -1, 0, 0},
		{"m.gguf", -1, 0, 0},
	};
	char out[64];
	uint32_t i, k = 0, n = 0;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int pl = gpuos_gguf_split_parse(cases[i].path, (uint32_t)strlen(cases[i].path), &k, &n);
		cr_assert_eq(pl, cases[i].prefix, "%s", cases[i].path);
		if (pl >= 0) {
			cr_assert_eq(k, cases[i].k, "%s", cases[i].path);
			cr_assert_eq(n, cases[i].n, "%s", cases[i].path);
			cr_assert_eq(gpuos_gguf_split_name(out, sizeof(out), cases[i].path, (uint32_t)pl, k, n),
				     strlen(cases[i].path) < sizeof(out) ? strlen(cases[i].path) : 0);
			if (strlen(cases[i].path) < sizeof(out))
				cr_assert_str_eq(out, cases[i].path);
		}
	}
	cr_assert_eq(gpuos_gguf_split_name(out, sizeof(out), "m", 1, 3, 99999), 21);
	cr_assert_str_eq(out, "m-00003-of-99999.gguf");
	cr_assert_eq(gpuos_gguf_split_name(out, 21, "m", 1, 3, 4), 0, "no room for the NUL");
	cr_assert_eq(gpuos_gguf_split_name(out, sizeof(out), "m", 1, 0, 4), 0, "shards count from 1");
	cr_assert_eq(gpuos_gguf_split_name(out, sizeof(out), "m", 1, 5, 4), 0, "k past n");
	cr_assert_eq(gpuos_gguf_split_name(out, sizeof(out), "m", 1, 1, 100000), 0, "six digits");
}
