/* SPDX-License-Identifier: MIT */
/*
 * tests/tools/tok_check.c - host tool: the tokenizer of apps/llama/tokenizer.h
 * on the vocabulary of a GGUF file, speaking the line protocol of
 * tests/tools/llama_ref.mjs (llama.cpp's side) so that tests/emu/llama_tok.sh
 * can compare the two line by line.
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -o build/tok_check tests/tools/tok_check.c runtime/model/gguf/gguf.c
 *   build/tok_check MODEL.gguf [--bos] [--special] [--text] < strings.jsonl   (tokenize)
 *   build/tok_check MODEL.gguf --decode [--remove-special] [--special] < ids.jsonl
 *   build/tok_check MODEL.gguf --info
 *
 * The GGUF is parsed by runtime/model/gguf/gguf.c (plain stdio underneath); each
 * tokenizer KV's encoded value is read from the file at its val_off,
 * val_bytes long, and handed to gpuos_tok_init as the runtime would hand it
 * on the GPU; the arena it builds is used through a copy (it holds offsets,
 * no pointers). Input lines are JSON strings (tokenize) or JSON arrays of ids
 * (--decode); output lines are JSON arrays, or {"ids": [...], "text": "..."}
 * with --text, or JSON strings (--decode). Decoded bytes that are not UTF-8
 * are written as U+FFFD the way a JS string gets them from llama.cpp's bytes
 * (the WHATWG decoder: one per maximal ill-formed subpart), so the texts
 * compare with llama_ref.mjs's.
 *
 * Exit status: 0 done, 1 the tokenizer refused the vocabulary (the reason on
 * stderr, "refused: ..."), 2 usage, I/O or a malformed input line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/model/gguf/gguf.h"
#include "../../apps/llama/tokenizer.h"

static int fd = -1;

static int fio_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	uint8_t *d = (uint8_t *)dst;
	(void)ctx;
	while (len) {
		ssize_t n = pread(fd, d, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		d += n;
		off += (uint64_t)n;
		len -= (uint32_t)n;
	}
	return 0;
}

static void die(const char *what)
{
	fprintf(stderr, "tok_check: %s\n", what);
	exit(2);
}

/* The encoded value of a KV, read from the file (NULL when absent). */
static uint8_t *kv_value(const struct gpuos_gguf *g, const char *key, uint64_t *len)
{
	int i = gpuos_gguf_find_kv(g, key);
	const struct gpuos_gguf_kv *kv;
	uint8_t *buf;
	*len = 0;
	if (i < 0)
		return NULL;
	kv = &g->mem.kv[i];
	buf = (uint8_t *)malloc(kv->val_bytes ? kv->val_bytes : 1);
	if (!buf)
		die("out of memory");
	for (uint64_t at = 0; at < kv->val_bytes;) {
		uint64_t n = kv->val_bytes - at > (1u << 30) ? (1u << 30) : kv->val_bytes - at;
		if (fio_read(NULL, kv->val_off + at, (uint32_t)n, buf + at))
			die("read error");
		at += n;
	}
	*len = kv->val_bytes;
	return buf;
}

static const char *kv_str(const struct gpuos_gguf *g, const char *key, uint32_t *len)
{
	int i = gpuos_gguf_find_kv(g, key);
	if (i < 0 || g->mem.kv[i].type != GPUOS_GGUF_TYPE_STRING)
		return NULL;
	*len = g->mem.kv[i].str.len;
	return gpuos_gguf_str_ptr(g, &g->mem.kv[i].str);
}

static int64_t kv_int(const struct gpuos_gguf *g, const char *key)
{
	int i = gpuos_gguf_find_kv(g, key);
	if (i < 0)
		return -1;
	switch (g->mem.kv[i].type) {
	case GPUOS_GGUF_TYPE_UINT8: case GPUOS_GGUF_TYPE_UINT16: case GPUOS_GGUF_TYPE_UINT32:
	case GPUOS_GGUF_TYPE_UINT64: case GPUOS_GGUF_TYPE_BOOL:
		return g->mem.kv[i].val.u64 > INT64_MAX ? INT64_MAX : (int64_t)g->mem.kv[i].val.u64;
	case GPUOS_GGUF_TYPE_INT8: case GPUOS_GGUF_TYPE_INT16: case GPUOS_GGUF_TYPE_INT32:
	case GPUOS_GGUF_TYPE_INT64:
		return g->mem.kv[i].val.i64 < 0 ? INT64_MAX : g->mem.kv[i].val.i64;
	default:
		return -1;
	}
}

/* ---- JSON in and out -------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void bput(struct buf *b, uint8_t c)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->p = (uint8_t *)realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory");
	}
	b->p[b->n++] = c;
}

static void bput_cp(struct buf *b, uint32_t c)
{
	uint8_t u[4];
	uint32_t n = gpuos_tok_utf8_put(c, u);
	for (uint32_t i = 0; i < n; i++)
		bput(b, u[i]);
}

static int hex4(const char *s, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int d = gpuos_tok_hex((uint8_t)s[i]);
		if (d < 0)
			return -1;
		*v = *v * 16u + (uint32_t)d;
	}
	return 0;
}

/* A JSON string (the whole line, spaces around allowed) into UTF-8 bytes. */
static int json_string(const char *s, struct buf *out)
{
	out->n = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s++ != '"')
		return -1;
	for (;;) {
		uint8_t c = (uint8_t)*s++;
		uint32_t v, w;
		if (c == 0)
			return -1;
		if (c == '"')
			break;
		if (c != '\\') {
			bput(out, c);
			continue;
		}
		switch (*s++) {
		case '"': bput(out, '"'); break;
		case '\\': bput(out, '\\'); break;
		case '/': bput(out, '/'); break;
		case 'b': bput(out, '\b'); break;
		case 'f': bput(out, '\f'); break;
		case 'n': bput(out, '\n'); break;
		case 'r': bput(out, '\r'); break;
		case 't': bput(out, '\t'); break;
		case 'u':
			if (hex4(s, &v))
				return -1;
			s += 4;
			if (v >= 0xd800 && v < 0xdc00 && s[0] == '\\' && s[1] == 'u' && !hex4(s + 2, &w) &&
			    w >= 0xdc00 && w < 0xe000) {
				v = 0x10000u + ((v - 0xd800u) << 10) + (w - 0xdc00u);
				s += 6;
			} else if (v >= 0xd800 && v < 0xe000) {
				v = 0xfffd; /* a lone surrogate: what JS gives llama.cpp */
			}
			bput_cp(out, v);
			break;
		default:
			return -1;
		}
	}
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return *s ? -1 : 0;
}

/* A JSON array of non-negative integers. */
static int json_ids(const char *s, int32_t **ids, uint32_t *n, uint32_t *cap)
{
	*n = 0;
	while (*s == ' ')
		s++;
	if (*s++ != '[')
		return -1;
	for (;;) {
		char *e;
		long v;
		while (*s == ' ' || *s == ',')
			s++;
		if (*s == ']')
			return 0;
		v = strtol(s, &e, 10);
		if (e == s || v < 0 || v > INT32_MAX)
			return -1;
		s = e;
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			*ids = (int32_t *)realloc(*ids, *cap * sizeof(**ids));
			if (!*ids)
				die("out of memory");
		}
		(*ids)[(*n)++] = (int32_t)v;
	}
}

/* Bytes as a JSON string, as a JS string would hold them (WHATWG UTF-8
 * decoding: U+FFFD for each maximal ill-formed subpart). */
static void json_text(FILE *f, const uint8_t *p, size_t n)
{
	uint32_t cp = 0, need = 0, seen = 0, lo = 0x80, hi = 0xbf;
	struct buf o = { 0, 0, 0 };
	for (size_t i = 0; i < n; i++) {
		uint8_t b = p[i];
		if (!need) {
			if (b < 0x80) {
				bput_cp(&o, b);
			} else if (b >= 0xc2 && b <= 0xdf) {
				need = 1;
				cp = b & 0x1fu;
			} else if (b >= 0xe0 && b <= 0xef) {
				if (b == 0xe0)
					lo = 0xa0;
				if (b == 0xed)
					hi = 0x9f;
				need = 2;
				cp = b & 0xfu;
			} else if (b >= 0xf0 && b <= 0xf4) {
				if (b == 0xf0)
					lo = 0x90;
				if (b == 0xf4)
					hi = 0x8f;
				need = 3;
				cp = b & 7u;
			} else {
				bput_cp(&o, 0xfffd);
			}
			continue;
		}
		if (b < lo || b > hi) {
			cp = need = seen = 0;
			lo = 0x80;
			hi = 0xbf;
			bput_cp(&o, 0xfffd);
			i--; /* read it again */
			continue;
		}
		lo = 0x80;
		hi = 0xbf;
		cp = (cp << 6) | (b & 0x3fu);
		if (++seen == need) {
			bput_cp(&o, cp);
			cp = need = seen = 0;
		}
	}
	if (need)
		bput_cp(&o, 0xfffd);
	fputc('"', f);
	for (size_t i = 0; i < o.n; i++) {
		uint8_t c = o.p[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
	free(o.p);
}

static void json_id_array(FILE *f, const int32_t *ids, int64_t n)
{
	fputc('[', f);
	for (int64_t i = 0; i < n; i++)
		fprintf(f, i ? ",%d" : "%d", ids[i]);
	fputc(']', f);
}

int main(int argc, char **argv)
{
	struct gpuos_gguf g;
	static struct gpuos_gguf_parser p;
	struct gpuos_gguf_kv one;
	struct gpuos_meta_io io;
	struct gpuos_tok_src src;
	struct stat st;
	const char *path = NULL;
	int bos = 0, special = 0, text = 0, decode = 0, remove_special = 0, info = 0, rc;
	uint64_t need = 0, tl, sl, yl, ml;
	char why[GPUOS_TOK_WHY_MAX];
	void *arena = NULL;
	const struct gpuos_tok *t;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bos"))
			bos = 1;
		else if (!strcmp(argv[i], "--no-bos"))
			bos = 0;
		else if (!strcmp(argv[i], "--special"))
			special = 1;
		else if (!strcmp(argv[i], "--text"))
			text = 1;
		else if (!strcmp(argv[i], "--decode"))
			decode = 1;
		else if (!strcmp(argv[i], "--remove-special"))
			remove_special = 1;
		else if (!strcmp(argv[i], "--info"))
			info = 1;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			die("usage: tok_check MODEL.gguf [--bos] [--special] [--text] | --decode [--remove-special] "
			    "[--special] | --info");
	}
	if (!path)
		die("usage: tok_check MODEL.gguf [--bos] [--special] [--text] | --decode [--remove-special] | --info");
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		return 2;
	}

	/* the GGUF's tables: measure, then parse into exact allocations */
	io.read = fio_read;
	io.ctx = NULL;
	io.size = (uint64_t)st.st_size;
	memset(&g, 0, sizeof(g));
	g.mem.kv = &one;
	rc = gpuos_gguf_parse(&g, &p, &io);
	if (rc == -ENOSPC) {
		g.mem.tensors = (struct gpuos_gguf_tensor *)calloc(g.tensor_count + 1, sizeof(*g.mem.tensors));
		g.mem.tensor_cap = (uint32_t)g.tensor_count;
		g.mem.kv = (struct gpuos_gguf_kv *)calloc(g.kv_count + 1, sizeof(*g.mem.kv));
		g.mem.kv_cap = (uint32_t)g.kv_count;
		g.mem.arena = (uint8_t *)malloc(g.arena_used + 1);
		g.mem.arena_cap = (uint32_t)g.arena_used;
		if (!g.mem.tensors || !g.mem.kv || !g.mem.arena)
			die("out of memory");
		rc = gpuos_gguf_parse(&g, &p, &io);
	}
	if (rc) {
		fprintf(stderr, "tok_check: %s: not a GGUF the parser accepts (%d: %s)\n", path, rc,
			p.why ? p.why : "?");
		return 2;
	}

	/* the vocabulary, as the file holds it */
	gpuos_tok_src_clear(&src);
	src.model = kv_str(&g, "tokenizer.ggml.model", &src.model_len);
	src.pre = kv_str(&g, "tokenizer.ggml.pre", &src.pre_len);
	src.name = kv_str(&g, "general.name", &src.name_len);
	src.tokens = kv_value(&g, "tokenizer.ggml.tokens", &tl);
	src.tokens_len = tl;
	src.scores = kv_value(&g, "tokenizer.ggml.scores", &sl);
	src.scores_len = sl;
	src.types = kv_value(&g, "tokenizer.ggml.token_type", &yl);
	src.types_len = yl;
	src.merges = kv_value(&g, "tokenizer.ggml.merges", &ml);
	src.merges_len = ml;
	for (uint32_t k = 0; k < GPUOS_TOK_KEY_COUNT; k++)
		src.id[k] = kv_int(&g, gpuos_tok_key_name(k));
	src.add_bos = (int32_t)kv_int(&g, "tokenizer.ggml.add_bos_token");
	src.add_eos = (int32_t)kv_int(&g, "tokenizer.ggml.add_eos_token");
	src.add_space_prefix = (int32_t)kv_int(&g, "tokenizer.ggml.add_space_prefix");

	rc = gpuos_tok_init(&src, NULL, 0, &need, why, sizeof(why));
	if (rc == GPUOS_TOK_E_NOSPC) {
		arena = aligned_alloc(8, (need + 7) & ~(uint64_t)7);
		if (!arena)
			die("out of memory");
		rc = gpuos_tok_init(&src, arena, need, &need, why, sizeof(why));
	}
	if (rc) {
		fprintf(stderr, "tok_check: refused: %s (%s)\n", why, gpuos_tok_strerror(rc));
		return 1;
	}
	{ /* the arena holds offsets only: use a copy of it, as a GPU would */
		void *copy = aligned_alloc(8, (need + 7) & ~(uint64_t)7);
		if (!copy)
			die("out of memory");
		memcpy(copy, arena, need);
		memset(arena, 0xa5, need);
		free(arena);
		arena = copy;
	}
	t = (const struct gpuos_tok *)arena;
	free((void *)src.tokens);
	free((void *)src.scores);
	free((void *)src.types);
	free((void *)src.merges);

	if (info) {
		printf("{\"type\": \"%s\", \"pre\": %u, \"n_tokens\": %u, \"n_merges\": %u, \"n_special\": %u, "
		       "\"bos\": %d, \"eos\": %d, \"eot\": %d, \"add_bos\": %s, \"add_eos\": %s, \"arena_bytes\": %" PRIu64
		       "}\n",
		       t->type == GPUOS_TOK_SPM ? "spm" : "bpe", t->pre, t->n_tokens, t->n_merges, t->n_special,
		       t->id[GPUOS_TOK_ID_BOS], t->id[GPUOS_TOK_ID_EOS], t->id[GPUOS_TOK_ID_EOT],
		       (t->flags & GPUOS_TOK_F_ADD_BOS) ? "true" : "false",
		       (t->flags & GPUOS_TOK_F_ADD_EOS) ? "true" : "false", t->total);
		return 0;
	}

	{
		char *line = NULL;
		size_t lcap = 0;
		ssize_t ll;
		struct buf in = { 0, 0, 0 };
		int32_t *ids = NULL;
		uint32_t nids = 0, idcap = 0;
		void *work = NULL;
		uint64_t work_cap = 0;
		char *out = NULL;
		uint64_t out_cap = 0;
		long lineno = 0;
		uint32_t eflags = (bos ? GPUOS_TOK_ADD_SPECIAL : 0u) | (special ? GPUOS_TOK_PARSE_SPECIAL : 0u);
		uint32_t dflags = (special ? GPUOS_TOK_UNPARSE_SPECIAL : 0u);

		while ((ll = getline(&line, &lcap, stdin)) >= 0) {
			int64_t n;
			lineno++;
			if (ll == 0 || line[0] == '\n')
				continue;
			if (decode) {
				if (json_ids(line, &ids, &nids, &idcap))
					die("a line that is not a JSON array of ids");
				dflags = (special ? GPUOS_TOK_UNPARSE_SPECIAL : 0u) |
					 (remove_special ? GPUOS_TOK_REMOVE_SPECIAL : 0u);
			} else {
				uint64_t wb;
				if (json_string(line, &in))
					die("a line that is not a JSON string");
				wb = gpuos_tok_work_bytes(in.n);
				if (wb > work_cap) {
					free(work);
					work_cap = wb;
					work = aligned_alloc(8, (wb + 7) & ~(uint64_t)7);
					if (!work)
						die("out of memory");
				}
				for (;;) {
					n = gpuos_tok_encode(t, in.n ? (const char *)in.p : "", (uint32_t)in.n, eflags, ids,
							     idcap, work, work_cap);
					if (n < 0) {
						fprintf(stderr, "tok_check: line %ld: encode: %s\n", lineno,
							gpuos_tok_strerror((int)n));
						return 2;
					}
					if ((uint64_t)n <= idcap)
						break;
					idcap = (uint32_t)n;
					ids = (int32_t *)realloc(ids, idcap * sizeof(*ids));
					if (!ids)
						die("out of memory");
				}
				nids = (uint32_t)n;
				if (!text) {
					json_id_array(stdout, ids, nids);
					fputc('\n', stdout);
					continue;
				}
				dflags = (special ? GPUOS_TOK_UNPARSE_SPECIAL : 0u) | (bos ? GPUOS_TOK_REMOVE_SPECIAL : 0u);
			}
			for (;;) {
				n = gpuos_tok_decode(t, ids, nids, dflags, out, out_cap);
				if (n < 0) {
					fprintf(stderr, "tok_check: line %ld: decode: %s\n", lineno,
						gpuos_tok_strerror((int)n));
					return 2;
				}
				if ((uint64_t)n <= out_cap)
					break;
				out_cap = (uint64_t)n;
				out = (char *)realloc(out, out_cap);
				if (!out)
					die("out of memory");
			}
			if (decode) {
				json_text(stdout, (const uint8_t *)out, (size_t)n);
			} else {
				fputs("{\"ids\": ", stdout);
				json_id_array(stdout, ids, nids);
				fputs(", \"text\": ", stdout);
				json_text(stdout, (const uint8_t *)out, (size_t)n);
				fputc('}', stdout);
			}
			fputc('\n', stdout);
		}
		free(line);
		free(in.p);
		free(ids);
		free(work);
		free(out);
	}
	free(arena);
	return 0;
}
