/* SPDX-License-Identifier: MIT */
/*
 * apps/gguf_load.c - load named tensors, or whole layers, of a GGUF model
 * into VRAM and check each against the SHA-256 the host gives.
 *
 *   gpuos run gguf_load.cubin --grid G --block B -- MODEL_PATH SPEC...
 *
 *   SPEC   NAME=SHA256HEX          one tensor, verified
 *          NAME                    one tensor, loaded and its SHA-256 printed
 *          layer:N=HEX,HEX,...     every tensor of layer N (blk.N.*), in file
 *                                  order, one hash each
 *          layer:N                 the same, hashes printed
 *
 * Thread 0 resolves the specs into a list of tensors (GGUF_FIND, GGUF_LAYER,
 * GGUF_TENSOR); then thread w of the first W = min(threads, tensors) takes
 * tensors w, w + W, ...: it loads each whole into its own share of args->vram
 * with one GGUF_LOAD (a tensor larger than the share comes in share-sized
 * pieces) and hashes it there. Thread 0 prints one line per tensor (ok,
 * MISMATCH, loaded, or ERROR with the reason) and a summary. Exit status 0
 * when every hash given matched, 1 on any mismatch or failed spec, 2 when
 * nothing could be started (usage, model, memory).
 *
 * Memory: the tensor list (META_BYTES) at the start of args->vram, the
 * threads' shares after it; args->scratch the flags below.
 */
#include "gpuos/app.h"
#include "gpuos/gpuos.h"
#include "all_done.h"
#include "report.h"
#include "sha256.h"

GPUOS_APP_ABI_NOTE;

#define MAX_ITEMS 4096u
#define MAX_LT 1024u              /* tensors in one layer */
#define MIN_SHARE (64u << 10)     /* smallest VRAM share worth a thread */
#define META_WHY 0u               /* char[256] */
#define META_TREC 512u            /* struct gpuos_gguf_tensor */
#define META_IDX 4096u            /* uint32_t[MAX_LT], GGUF_LAYER's answer */
#define META_ITEMS 8192u          /* struct item[MAX_ITEMS] */
#define META_BYTES (META_ITEMS + MAX_ITEMS * 256u + 8192u)

enum { ITEM_PENDING, ITEM_OK, ITEM_MISMATCH, ITEM_LOADED, ITEM_ERROR };

/* One tensor to load (or one spec that failed). */
struct item {
	uint32_t idx;          /* 0x00 tensor index */
	uint32_t result;       /* 0x04 R_* */
	uint64_t size;         /* 0x08 bytes */
	uint32_t st;           /* 0x10 GPUOS_ST_* of a failed request */
	uint32_t has_want;     /* 0x14 */
	uint32_t pieces;       /* 0x18 loads it took */
	uint32_t rsvd1c;       /* 0x1c */
	const char *msg;       /* 0x20 ITEM_ERROR: what went wrong (a string literal) */
	uint8_t want[32];      /* 0x28 */
	uint8_t got[32];       /* 0x48 */
	char name[128];        /* 0x68 NUL-terminated; a spec's text for ITEM_ERROR */
	uint8_t rsvde8[24];    /* 0xe8 */
};
static_assert(sizeof(struct item) == 256, "item size");

/* args->scratch (64 zeroed bytes). */
struct shared {
	uint32_t state;     /* 0x00 0 setting up, 1 go, 2 failed (release by thread 0) */
	uint32_t nitems;    /* 0x04 */
	uint32_t workers;   /* 0x08 threads that load */
	uint32_t done;      /* 0x0c threads finished */
	uint64_t share;     /* 0x10 VRAM bytes per worker */
	uint64_t t0;        /* 0x18 */
	uint64_t bytes;     /* 0x20 loaded, all workers */
	uint64_t rsvd[3];   /* 0x28 */
};
static_assert(sizeof(struct shared) == 64, "gguf_load scratch");

/* ---- spec parsing ------------------------------------------------------------------ */

static inline GPUOS_HD int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* 64 hex digits at s, ended by NUL or ','; 0 and *end past them, or -1. */
static inline GPUOS_HD int parse_hash(const char *s, uint8_t *out, const char **end)
{
	uint32_t i;
	for (i = 0; i < 64; i++) {
		int v = hexval(s[i]);
		if (v < 0)
			return -1;
		if (i & 1u)
			out[i / 2] = (uint8_t)(out[i / 2] | v);
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	if (s[64] && s[64] != ',')
		return -1;
	*end = s + 64;
	return 0;
}

/* Copy [s, s + n) as a NUL-terminated name; -1 when it does not fit. */
static inline GPUOS_HD int set_name(char *dst, const char *s, uint64_t n)
{
	uint64_t i;
	for (i = 0; i < n && i + 1 < 128u; i++)
		dst[i] = s[i];
	dst[i] = 0;
	return i == n ? 0 : -1;
}

static inline GPUOS_HD struct item *new_item(struct item *it, uint32_t *n)
{
	struct item *t;
	if (*n == MAX_ITEMS)
		return 0;
	t = &it[(*n)++];
	t->idx = 0;
	t->result = ITEM_PENDING;
	t->size = 0;
	t->st = GPUOS_ST_OK;
	t->has_want = 0;
	t->pieces = 0;
	t->msg = 0;
	t->name[0] = 0;
	return t;
}

static inline GPUOS_HD void fail_item(struct item *t, const char *spec, const char *msg, uint32_t st)
{
	uint64_t n = 0;
	while (spec[n] && spec[n] != '=')
		n++;
	set_name(t->name, spec, n);
	t->result = ITEM_ERROR;
	t->msg = msg;
	t->st = st;
}

/* Resolve a spec layer:N[=HEX,HEX,...] (eq: its '=' or its end) into an
 * item per tensor of layer N, or one failed item. */
static inline GPUOS_HD void add_layer(struct gpuos_mbox *mb, uint32_t h, char *meta, const char *spec, const char *eq,
				      struct item *it, uint32_t *n)
{
	struct gpuos_gguf_tensor *rec = (struct gpuos_gguf_tensor *)(meta + META_TREC);
	uint32_t *idx = (uint32_t *)(meta + META_IDX);
	uint64_t layer = 0;
	uint32_t st, k, count, first = *n;
	const char *p;
	struct item *t;

	for (p = spec + 6; *p >= '0' && *p <= '9' && layer <= GPUOS_GGUF_MAX_LAYER; p++)
		layer = layer * 10u + (uint64_t)(*p - '0');
	if (p == spec + 6 || p != eq || layer > GPUOS_GGUF_MAX_LAYER) {
		if ((t = new_item(it, n)))
			fail_item(t, spec, "bad spec (want layer:N or layer:N=HEX,HEX,...)", GPUOS_ST_OK);
		return;
	}
	st = gpuos_model_layer(mb, h, (uint32_t)layer, idx, MAX_LT, &count);
	if (st != GPUOS_ST_OK || count == 0) {
		if ((t = new_item(it, n)))
			fail_item(t, spec, st == GPUOS_ST_OK || st == GPUOS_ST_NOENT ? "no such layer" : "layer lookup failed", st);
		return;
	}
	p = *eq ? eq + 1 : 0;
	for (k = 0; k < count; k++) {
		if (!(t = new_item(it, n)))
			return;
		t->idx = idx[k];
		if (p) {
			if (!*p || parse_hash(p, t->want, &p)) {
				*n = first;
				t = new_item(it, n);
				fail_item(t, spec, "give one 64-digit hex SHA-256 per tensor of the layer, comma-separated",
					  GPUOS_ST_OK);
				return;
			}
			t->has_want = 1;
			if (*p == ',')
				p++;
		}
	}
	if (p && *p) {
		*n = first;
		t = new_item(it, n);
		fail_item(t, spec, "more hashes than tensors in the layer", GPUOS_ST_OK);
		return;
	}
	for (k = first; k < *n; k++) {
		st = gpuos_model_tensor(mb, h, it[k].idx, rec);
		if (st != GPUOS_ST_OK) {
			fail_item(&it[k], spec, "tensor record", st);
			continue;
		}
		it[k].size = rec->size;
		set_name(it[k].name, rec->name, rec->name_len);
	}
}

/* Resolve one spec into items. */
static inline GPUOS_HD void add_spec(struct gpuos_mbox *mb, uint32_t h, char *meta, const char *spec, struct item *it,
				     uint32_t *n)
{
	struct gpuos_gguf_tensor *rec = (struct gpuos_gguf_tensor *)(meta + META_TREC);
	const char *eq = spec, *p;
	struct item *t;
	uint32_t st;

	while (*eq && *eq != '=')
		eq++;
	if (spec[0] == 'l' && spec[1] == 'a' && spec[2] == 'y' && spec[3] == 'e' && spec[4] == 'r' && spec[5] == ':') {
		add_layer(mb, h, meta, spec, eq, it, n);
		return;
	}
	if (!(t = new_item(it, n)))
		return;
	if (set_name(t->name, spec, (uint64_t)(eq - spec)) || eq == spec) {
		fail_item(t, spec, "bad tensor name (empty or over 127 bytes)", GPUOS_ST_OK);
		return;
	}
	if (*eq) {
		if (parse_hash(eq + 1, t->want, &p) || *p) {
			fail_item(t, spec, "bad hash (want 64 hex digits)", GPUOS_ST_OK);
			return;
		}
		t->has_want = 1;
	}
	st = gpuos_model_find(mb, h, t->name, &t->idx);
	if (st != GPUOS_ST_OK) {
		fail_item(t, spec, st == GPUOS_ST_NOENT ? "no such tensor" : "lookup failed", st);
		return;
	}
	st = gpuos_model_tensor(mb, h, t->idx, rec);
	if (st != GPUOS_ST_OK) {
		fail_item(t, spec, "tensor record", st);
		return;
	}
	t->size = rec->size;
}

/* ---- work -------------------------------------------------------------------------- */

/* Load item t into buf (share bytes) and hash it there. */
static inline GPUOS_HD void load_one(struct gpuos_app_args *a, struct gpuos_mbox *mb, uint32_t h, struct item *t,
				     uint8_t *buf, uint64_t share, uint64_t *bytes)
{
	struct sha256_ctx c;
	uint64_t off = 0, got, i;
	sha256_init(&c);
	while (off < t->size || (t->size == 0 && t->pieces == 0)) {
		uint64_t len = GPUOS_MIN(share, t->size - off);
		uint32_t st = GPUOS_ST_OK;
		got = 0;
		if (len)
			st = gpuos_model_load(mb, h, t->idx, buf, off, len, &got);
		t->pieces++;
		if (st != GPUOS_ST_OK || got != len) {
			t->result = ITEM_ERROR;
			t->st = st != GPUOS_ST_OK ? st : GPUOS_ST_BAD_RANGE;
			t->msg = "load failed";
			return;
		}
		sha256_update(&c, buf, len);
		off += len;
		*bytes += len;
		gpuos_app_progress_add(a, len);
		if (t->size == 0)
			break;
	}
	sha256_final(&c, t->got);
	if (!t->has_want) {
		t->result = ITEM_LOADED;
		return;
	}
	t->result = ITEM_OK;
	for (i = 0; i < 32; i++)
		if (t->got[i] != t->want[i])
			t->result = ITEM_MISMATCH;
}

/* An item's line of the report after its result: its name, then its
 * size and hashes or why it failed. */
static inline GPUOS_HD void item_line(struct rep *r, const struct item *t)
{
	rs(r, t->name);
	if (t->result == ITEM_ERROR) {
		rs(r, ": ");
		rs(r, t->msg ? t->msg : "not done");
		if (t->st != GPUOS_ST_OK) {
			rs(r, " (");
			rs(r, stname(t->st));
			rs(r, ")");
		}
		rs(r, "\n");
		return;
	}
	rs(r, " ");
	rn(r, t->size);
	rs(r, " bytes");
	if (t->pieces > 1) {
		rs(r, " in ");
		rn(r, t->pieces);
		rs(r, " pieces");
	}
	if (t->result != ITEM_OK) {
		rs(r, " sha256 ");
		rhex(r, t->got, 32);
	}
	if (t->result == ITEM_MISMATCH) {
		rs(r, " expected ");
		rhex(r, t->want, 32);
	}
	rs(r, "\n");
}

static inline GPUOS_HD void report(struct gpuos_app_args *a, struct shared *sh, const struct item *it, uint32_t nthreads)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint64_t elapsed = gpuos_now_ns() - sh->t0, bytes = gpuos_load_relaxed_sys64(&sh->bytes);
	uint32_t i, ok = 0, bad = 0, err = 0, loaded = 0;
	struct rep r;
	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	rs(&r, "gguf_load: ");
	rs(&r, argv[0]);
	rs(&r, ", ");
	rn(&r, sh->nitems);
	rs(&r, " tensors, ");
	rn(&r, sh->workers);
	rs(&r, " of ");
	rn(&r, nthreads);
	rs(&r, a->on_gpu ? " GPU threads loading, " : " host threads loading, ");
	rn(&r, sh->share);
	rs(&r, " bytes of VRAM each\n");
	for (i = 0; i < sh->nitems; i++) {
		const struct item *t = &it[i];
		switch (t->result) {
		case ITEM_OK:
			ok++;
			rs(&r, "ok        ");
			break;
		case ITEM_MISMATCH:
			bad++;
			rs(&r, "MISMATCH  ");
			break;
		case ITEM_LOADED:
			loaded++;
			rs(&r, "loaded    ");
			break;
		default:
			err++;
			rs(&r, "ERROR     ");
			break;
		}
		item_line(&r, t);
	}
	rs(&r, "summary: ");
	rn(&r, ok);
	rs(&r, " ok, ");
	rn(&r, bad);
	rs(&r, " mismatched, ");
	rn(&r, loaded);
	rs(&r, " unverified, ");
	rn(&r, err);
	rs(&r, " errors; ");
	rn(&r, bytes);
	rs(&r, " bytes in ");
	rsec(&r, elapsed);
	rs(&r, " s, ");
	rgbs(&r, bytes, elapsed);
	rs(&r, " GB/s loaded and hashed\n");
	a->status = bad || err ? 1 : 0;
}

/* Thread 0: opens the model, resolves the specs into items and shares
 * the VRAM among the workers; publishes go (1) or failed (2) in
 * sh->state. 0, with the model's handle, when the loads go ahead. */
static inline GPUOS_HD int set_up(struct gpuos_app_args *a, struct shared *sh, uint32_t nthreads, uint32_t *handle)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	char *meta = (char *)(uintptr_t)a->vram, *why = meta + META_WHY;
	struct item *it = (struct item *)(meta + META_ITEMS);
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint32_t i, n = 0, st, w, h = 0;
	uint64_t total = 0;
	const char *bad = 0;
	struct rep r;

	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	sh->t0 = gpuos_now_ns();
	if (a->argc < 2)
		bad = "usage: gguf_load -- MODEL_PATH NAME[=SHA256HEX]... | layer:N[=HEX,HEX,...]...\n";
	else if (a->vram_len < META_BYTES + MIN_SHARE)
		bad = "gguf_load: needs at least 1.2 MiB of vram\n";
	if (!bad) {
		why[0] = 0;
		st = gpuos_model_open(mb, argv[0], 0, &h, 0, why, 256);
		if (st != GPUOS_ST_OK) {
			ropen_failed(&r, "gguf_load", argv[0], st, why);
			bad = ""; /* the whole line is written */
		}
	}
	if (bad) {
		rs(&r, bad);
		a->status = 2;
		/* Publish "failed"; pairs with the other threads' acquire load of state. */
		gpuos_store_release_dev32(&sh->state, 2);
		return -1;
	}
	for (i = 1; i < a->argc; i++) {
		if (n == MAX_ITEMS) {
			struct item *t = &it[MAX_ITEMS - 1];
			fail_item(t, argv[i], "too many tensors (4096 at most)", GPUOS_ST_OK);
			break;
		}
		add_spec(mb, h, meta, argv[i], it, &n);
	}
	w = n < nthreads ? n : nthreads;
	if (w > (a->vram_len - META_BYTES) / MIN_SHARE)
		w = (uint32_t)((a->vram_len - META_BYTES) / MIN_SHARE);
	if (w == 0)
		w = 1;
	sh->nitems = n;
	sh->workers = w;
	sh->share = GPUOS_ALIGN_DOWN((a->vram_len - META_BYTES) / w, (uint64_t)4096);
	sh->bytes = 0;
	for (i = 0; i < n; i++)
		if (it[i].result == ITEM_PENDING)
			total += it[i].size;
	gpuos_app_progress_total(a, total);
	/* Publish the tensor list, handle and shares; pairs with the
	 * other threads' acquire load of state. The handle travels in
	 * rsvd[0]. */
	sh->rsvd[0] = h;
	gpuos_store_release_dev32(&sh->state, 1);
	*handle = h;
	return 0;
}

GPUOS_HD static void gguf_load_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	struct shared *sh = (struct shared *)(uintptr_t)a->scratch;
	char *meta = (char *)(uintptr_t)a->vram;
	struct item *it = (struct item *)(meta + META_ITEMS);
	uint32_t spins = 0, i, h = 0, state;
	uint64_t bytes = 0;

	if (tid == 0) {
		if (set_up(a, sh, nthreads, &h))
			return;
	} else {
		/* Pairs with thread 0's release store of state. */
		while ((state = gpuos_load_acquire_dev32(&sh->state)) == 0)
			gpuos_backoff(&spins);
		if (state != 1)
			return;
		h = (uint32_t)sh->rsvd[0];
	}

	if (tid < sh->workers) {
		uint8_t *buf = (uint8_t *)meta + META_BYTES + (uint64_t)tid * sh->share;
		for (i = tid; i < sh->nitems; i += sh->workers)
			if (it[i].result == ITEM_PENDING)
				load_one(a, mb, h, &it[i], buf, sh->share, &bytes);
		if (bytes)
			gpuos_fetch_add_relaxed_sys64(&sh->bytes, bytes);
	}
	/* Thread 0 reports once every thread's items and bytes are in. */
	if (!app_all_done(&sh->done, tid, nthreads))
		return;
	gpuos_close(mb, h);
	report(a, sh, it, nthreads);
}

GPUOS_APP_ENTRY(gguf_load)
