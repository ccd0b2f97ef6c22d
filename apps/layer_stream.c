/* SPDX-License-Identifier: MIT */
/*
 * apps/layer_stream.c - stream every layer of a GGUF model (blk.0.*, blk.1.*,
 * ... in forward order) into two VRAM slots, double buffered, while the
 * other threads reduce the layer loaded before.
 *
 *   gpuos run layer_stream.cubin --grid G --block B -- MODEL_PATH [RESIDENT]
 *
 * RESIDENT (default 0) layers, the first ones, are loaded once before the
 * clock starts, each into VRAM of its own, and computed from there; only
 * the others are streamed (the tiered loader of a model larger than VRAM:
 * as many layers resident as fit, the rest read for every token). The
 * report's wall time, first load to last reduction, is one pass over the
 * model: the time per token-equivalent.
 *
 * Thread 0 is the loader: it loads layer N into slot N % 2 with
 * gpuos_model_load_tensors (all of the layer's tensors in flight at once)
 * and hands the slot over; the compute threads checksum the layer in the
 * other slot meanwhile, each a share of its 4 KiB chunks, and the last of
 * them to finish gives the slot back. The compute threads are those of the
 * warps after the loader's (the other lanes of its warp return at once:
 * lanes of one warp that diverge run by turns, so computing lanes would
 * stall the loader), or, with a single warp or in host mode (warp width 1),
 * threads 1..G*B-1. With one thread, thread 0 does both in turn (no overlap).
 *
 * The reduction (the demo recomputes it on the host from the file): a tensor
 * is cut in 4096-byte chunks c = 0, 1, ... (the last one shorter); chunk c of
 * the tensor at position `rank` of its layer (file order) contributes
 *     mix64((c << 32 | crc32(chunk)) + rank * 0x9e3779b97f4a7c15)
 * where crc32 is zlib's (IEEE 802.3, reflected) and mix64 the splitmix64
 * finalizer; the layer's checksum is the sum of the contributions mod 2^64.
 * Order-independent, so any thread may take any chunk, and still sensitive
 * to every byte and to where it landed.
 *
 * Memory: args->vram holds a 1 MiB table area (META_*), then the two slots,
 * each as large as the largest layer, then the resident layers; args->scratch
 * the flags below.
 */
#include "gpuos/app.h"
#include "gpuos/bench.h"
#include "gpuos/gpuos.h"
#include "report.h"

GPUOS_APP_ABI_NOTE;

#define CHUNK GPUOS_BENCH_CHUNK
#define ALIGN 256u                /* tensor start within a slot */
#define MAX_LAYERS 1024u
#define MAX_LT 1024u              /* tensors in one layer */
#define MAX_ENT 16384u            /* tensors in all layers */

/* The table area at the start of args->vram (registered memory: the runtime
 * writes reasons, tensor records and index lists there). */
#define META_WHY 0u               /* char[256] */
#define META_TREC 512u            /* struct gpuos_gguf_tensor */
#define META_XHDR 1024u           /* struct gpuos_gguf_export (header only) */
#define META_IDX 4096u            /* uint32_t[MAX_LT], GGUF_LAYER's answer */
#define META_LREC 8192u           /* struct lrec[MAX_LAYERS] */
#define META_ENT 81920u           /* struct ent[MAX_ENT] */
#define META_DST 606208u          /* void *[MAX_LT], the loader's */
#define META_LIDX 614400u         /* uint32_t[MAX_LT], the loader's */
#define META_LPTR 618496u         /* uint8_t *[MAX_LAYERS]: a resident layer's data, else NULL */
#define META_BYTES (1u << 20)

/* One tensor of a layer. */
struct ent {
	uint32_t idx;      /* 0x00 tensor index in the model */
	uint32_t rank;     /* 0x04 position in its layer */
	uint64_t size;     /* 0x08 bytes */
	uint64_t off;      /* 0x10 offset in the slot */
	uint64_t chunk0;   /* 0x18 its first chunk, counted from the layer's first */
};
static_assert(sizeof(struct ent) == 32, "ent size");

/* One layer. */
struct lrec {
	uint32_t layer;    /* 0x00 N of blk.N */
	uint32_t first;    /* 0x04 first ent */
	uint32_t n;        /* 0x08 ents */
	uint32_t st;       /* 0x0c load status (GPUOS_ST_*) */
	uint64_t bytes;    /* 0x10 */
	uint64_t chunks;   /* 0x18 */
	uint64_t t_load0;  /* 0x20 loader: load posted */
	uint64_t t_load1;  /* 0x28 loader: load complete, slot handed over */
	uint64_t t_comp1;  /* 0x30 last compute thread: reduction complete */
	uint64_t sum;      /* 0x38 checksum */
};
static_assert(sizeof(struct lrec) == 64, "lrec size");
static_assert(META_LREC + MAX_LAYERS * sizeof(struct lrec) <= META_ENT, "meta lrec");
static_assert(META_ENT + MAX_ENT * sizeof(struct ent) <= META_DST, "meta ent");
static_assert(META_LIDX + MAX_LT * 4u <= META_BYTES, "meta size");

/* args->scratch (64 zeroed bytes, VRAM): the hand-over between the loader and
 * the compute threads. Slot s holds layer i (the i-th of the table) when
 * ready[s] == i + 1; it is free again when freed[s] == i + 1. */
struct shared {
	uint32_t state;     /* 0x00 0 setting up, 1 go, 2 failed (release by thread 0) */
	uint32_t nlayers;   /* 0x04 */
	uint32_t ready[2];  /* 0x08 loader, release */
	uint32_t freed[2];  /* 0x10 last compute thread, release */
	uint32_t arrive[2]; /* 0x18 compute threads done with the slot's layer */
	uint64_t acc[2];    /* 0x20 the slot's checksum being summed */
	uint64_t slot_bytes;/* 0x30 */
	uint32_t abort;     /* 0x38 i + 1: the load of layer i failed, stop there */
	uint16_t ncompute;  /* 0x3c */
	uint16_t resident;  /* 0x3e layers 0 .. resident-1 stay in VRAM */
};
static_assert(sizeof(struct shared) == 64, "layer_stream scratch");
static_assert(META_LPTR + MAX_LAYERS * 8u <= META_BYTES, "meta lptr");

/* ---- the reduction ------------------------------------------------------------------ */

/* This thread's share (chunks r, r + nc, ...) of a layer's checksum. */
static inline GPUOS_HD uint64_t layer_part(const struct ent *e, uint32_t n, const uint8_t *slot, uint64_t chunks,
					   uint32_t r, uint32_t nc, const uint32_t *tab)
{
	uint64_t sum = 0, g;
	uint32_t k = 0;
	for (g = r; g < chunks; g += nc) {
		uint64_t c, off, len;
		while (k + 1 < n && e[k + 1].chunk0 <= g)
			k++;
		c = g - e[k].chunk0;
		off = c * CHUNK;
		len = GPUOS_MIN((uint64_t)CHUNK, e[k].size - off);
		sum += gpuos_bench_chunk_term(slot + e[k].off + off, len, c, e[k].rank, tab);
	}
	return sum;
}

/* A compute thread's part of layer i (slot s), then its arrival; the last of
 * the `nc` arrivals records the checksum and frees the slot. */
static inline GPUOS_HD void compute_layer(struct shared *sh, struct lrec *L, const struct ent *ents, const uint8_t *slot,
					  uint32_t i, uint32_t r, uint32_t nc, const uint32_t *tab)
{
	uint32_t s = i & 1u;
	uint64_t part = layer_part(ents + L->first, L->n, slot, L->chunks, r, nc, tab);
	if (part)
		gpuos_fetch_add_relaxed_sys64(&sh->acc[s], part); /* on VRAM, device-wide; the arrival orders it */
	/* The arrival is acq_rel: its release half orders this thread's reads
	 * of the slot and its acc add before it; the last arrival's acquire
	 * half reads the end of that release sequence (every arrival is an RMW
	 * on the same word), so those reads and adds happen before the
	 * checksum is read and the slot is freed. */
	if (gpuos_fetch_add_acq_rel_dev32(&sh->arrive[s], 1u) + 1u != nc)
		return;
	L->sum = gpuos_load_relaxed_sys64(&sh->acc[s]);
	L->t_comp1 = gpuos_now_ns();
	gpuos_store_relaxed_sys64(&sh->acc[s], 0);
	gpuos_store_relaxed_sys32(&sh->arrive[s], 0);
	/* Publish the checksum, the reset acc and arrive and "we are done
	 * reading the slot"; pairs with the loader's acquire load of freed[s]
	 * before it loads layer i + 2 there (and before it writes the report). */
	gpuos_store_release_dev32(&sh->freed[s], i + 1u);
}

/* ---- loading (thread 0) ----------------------------------------------------------------- */

/* All of layer L's tensors at their places from `at`, in flight at once.
 * The status, BAD_RANGE when fewer bytes came than the tensors hold;
 * *got the bytes that came. */
static inline GPUOS_HD uint32_t load_layer(struct gpuos_mbox *mb, uint32_t h, char *meta, const struct ent *ents,
					   const struct lrec *L, uint8_t *at, uint64_t *got)
{
	void **dst = (void **)(meta + META_DST);
	uint32_t *lidx = (uint32_t *)(meta + META_LIDX);
	uint64_t want = 0;
	uint32_t k, st;
	for (k = 0; k < L->n; k++) {
		lidx[k] = ents[L->first + k].idx;
		dst[k] = at + ents[L->first + k].off;
		want += ents[L->first + k].size;
	}
	*got = 0;
	st = gpuos_model_load_tensors(mb, h, lidx, dst, L->n, got);
	return st == GPUOS_ST_OK && *got != want ? GPUOS_ST_BAD_RANGE : st;
}

/* ---- setup (thread 0) ----------------------------------------------------------------- */

/* RESIDENT, the optional second argument, into *resident; 0, or a reason
 * written to r. */
static inline GPUOS_HD int parse_args(const struct gpuos_app_args *a, uint64_t *resident, struct rep *r)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	const char *p;

	*resident = 0;
	if (a->argc < 1 || a->argc > 2) {
		rs(r, "usage: layer_stream -- MODEL_PATH [RESIDENT]\n");
		return -1;
	}
	if (a->argc == 1)
		return 0;
	for (p = argv[1]; *p >= '0' && *p <= '9' && *resident <= MAX_LAYERS; p++)
		*resident = *resident * 10u + (uint64_t)(*p - '0');
	if (*p || p == argv[1] || *resident > MAX_LAYERS) {
		rs(r, "layer_stream: RESIDENT is a number of layers, 0 to 1024\n");
		return -1;
	}
	return 0;
}

/* Layer n's `count` tensors (their indexes in idx) as ents e, each at its
 * ALIGN-ed place in a slot; *off and *chunks: the layer's bytes in a slot
 * and its chunks. 0, or a reason written to r. */
static inline GPUOS_HD int layer_ents(struct gpuos_mbox *mb, uint32_t h, char *meta, const uint32_t *idx,
				      uint32_t count, struct ent *e, uint64_t *off, uint64_t *chunks, struct rep *r)
{
	struct gpuos_gguf_tensor *t = (struct gpuos_gguf_tensor *)(meta + META_TREC);
	uint32_t k, st;

	*off = *chunks = 0;
	for (k = 0; k < count; k++) {
		st = gpuos_model_tensor(mb, h, idx[k], t);
		if (st != GPUOS_ST_OK) {
			rs(r, "layer_stream: tensor record: ");
			rs(r, stname(st));
			rs(r, "\n");
			return -1;
		}
		e[k].idx = idx[k];
		e[k].rank = k;
		e[k].size = t->size;
		e[k].off = *off;
		e[k].chunk0 = *chunks;
		*off = GPUOS_ALIGN_UP(*off + t->size, (uint64_t)ALIGN);
		*chunks += GPUOS_DIV_ROUND_UP(t->size, (uint64_t)CHUNK);
	}
	return 0;
}

/* The layer table (lrec, ent) of the model's n_layers: *nl layers, *ne
 * tensors, *slot the bytes of the largest layer in a slot. 0, or a reason
 * written to r. */
static inline GPUOS_HD int layer_table(struct gpuos_mbox *mb, uint32_t h, char *meta, uint32_t n_layers, uint32_t *nl,
				       uint32_t *ne, uint64_t *slot, struct rep *r)
{
	uint32_t *idx = (uint32_t *)(meta + META_IDX);
	struct lrec *lr = (struct lrec *)(meta + META_LREC);
	struct ent *ents = (struct ent *)(meta + META_ENT);
	uint32_t n, st, count;

	for (n = 0; n < n_layers; n++) {
		uint64_t off = 0, chunks = 0;
		st = gpuos_model_layer(mb, h, n, idx, MAX_LT, &count);
		if (st != GPUOS_ST_OK) {
			rs(r, "layer_stream: layer ");
			rn(r, n);
			rs(r, st == GPUOS_ST_NOSPC ? ": more than 1024 tensors\n" : ": ");
			if (st != GPUOS_ST_NOSPC) {
				rs(r, stname(st));
				rs(r, "\n");
			}
			return -1;
		}
		if (count == 0)
			continue;
		if (*nl == MAX_LAYERS || *ne + count > MAX_ENT) {
			rs(r, "layer_stream: more than 1024 layers or 16384 tensors\n");
			return -1;
		}
		if (layer_ents(mb, h, meta, idx, count, &ents[*ne], &off, &chunks, r))
			return -1;
		lr[*nl].layer = n;
		lr[*nl].first = *ne;
		lr[*nl].n = count;
		lr[*nl].st = GPUOS_ST_OK;
		lr[*nl].bytes = 0;
		lr[*nl].chunks = chunks;
		lr[*nl].t_load0 = lr[*nl].t_load1 = lr[*nl].t_comp1 = 0;
		lr[*nl].sum = 0;
		*slot = GPUOS_MAX(*slot, off);
		*ne += count;
		(*nl)++;
	}
	return 0;
}

/* The resident layers, before the clock starts: each at its place after
 * the slots, its place in META_LPTR (NULL for a streamed layer). 0, or a
 * reason written to r. */
static inline GPUOS_HD int load_resident(struct gpuos_mbox *mb, uint32_t h, char *meta, uint32_t nl,
					 uint32_t resident, uint64_t slot, struct rep *r)
{
	const struct lrec *lr = (const struct lrec *)(meta + META_LREC);
	const struct ent *ents = (const struct ent *)(meta + META_ENT);
	uint8_t **lptr = (uint8_t **)(meta + META_LPTR);
	uint8_t *at = (uint8_t *)meta + META_BYTES + 2u * slot;
	uint32_t n, st;

	for (n = 0; n < nl; n++) {
		const struct lrec *L = &lr[n];
		uint64_t got;
		lptr[n] = NULL;
		if (n >= resident)
			continue;
		st = load_layer(mb, h, meta, ents, L, at, &got);
		if (st != GPUOS_ST_OK) {
			rs(r, "layer_stream: resident layer ");
			rn(r, L->layer);
			rs(r, ": ");
			rs(r, stname(st));
			rs(r, "\n");
			return -1;
		}
		lptr[n] = at;
		const struct ent *e = &ents[L->first + L->n - 1u];
		at += GPUOS_ALIGN_UP(e->off + e->size, (uint64_t)CHUNK);
	}
	return 0;
}

/* Fill the layer table; 0, or a reason written to r. */
static inline GPUOS_HD int setup(struct gpuos_app_args *a, struct gpuos_mbox *mb, struct shared *sh, uint32_t *handle,
				 struct rep *r)
{
	char *meta = (char *)(uintptr_t)a->vram;
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	char *why = meta + META_WHY;
	struct gpuos_gguf_export *x = (struct gpuos_gguf_export *)(meta + META_XHDR);
	const struct lrec *lr = (const struct lrec *)(meta + META_LREC);
	const struct ent *ents = (const struct ent *)(meta + META_ENT);
	uint32_t st, h, n, nl = 0, ne = 0, k;
	uint64_t ntens, needed, slot = 0, resident, res_bytes = 0, total = 0;

	if (parse_args(a, &resident, r))
		return -1;
	if (a->vram_len < META_BYTES + 2u * CHUNK) {
		rs(r, "layer_stream: needs more than 1 MiB of vram\n");
		return -1;
	}
	why[0] = 0;
	st = gpuos_model_open(mb, argv[0], 0, &h, &ntens, why, 256);
	if (st != GPUOS_ST_OK) {
		ropen_failed(r, "layer_stream", argv[0], st, why);
		return -1;
	}
	*handle = h;
	st = gpuos_model_info(mb, h, x, sizeof(*x), &needed);
	if (st != GPUOS_ST_OK) {
		rs(r, "layer_stream: model info: ");
		rs(r, stname(st));
		rs(r, "\n");
		return -1;
	}
	if (layer_table(mb, h, meta, x->n_layers, &nl, &ne, &slot, r))
		return -1;
	if (nl == 0) {
		rs(r, "layer_stream: ");
		rs(r, argv[0]);
		rs(r, ": no layers (no blk.N.* tensors)\n");
		return -1;
	}
	slot = GPUOS_ALIGN_UP(slot, (uint64_t)CHUNK);
	if (resident > nl) {
		rs(r, "layer_stream: RESIDENT ");
		rn(r, resident);
		rs(r, " is more than the model's ");
		rn(r, nl);
		rs(r, " layers\n");
		return -1;
	}
	for (n = 0; n < (uint32_t)resident; n++) {
		const struct ent *e = &ents[lr[n].first + lr[n].n - 1u];
		res_bytes += GPUOS_ALIGN_UP(e->off + e->size, (uint64_t)CHUNK);
	}
	if (slot > (a->vram_len - META_BYTES) / 2u || res_bytes > a->vram_len - META_BYTES - 2u * slot) {
		rs(r, "layer_stream: two slots of the largest layer and the resident layers need ");
		rn(r, META_BYTES + 2u * slot + res_bytes);
		rs(r, " bytes of vram, there are ");
		rn(r, a->vram_len);
		rs(r, "\n");
		return -1;
	}
	sh->nlayers = nl;
	sh->slot_bytes = slot;
	sh->resident = (uint16_t)resident;
	if (load_resident(mb, h, meta, nl, (uint32_t)resident, slot, r))
		return -1;
	for (k = 0; k < ne; k++)
		total += ents[k].size;
	gpuos_app_progress_total(a, total);
	return 0;
}

/* ---- the report (thread 0, after the last layer) --------------------------------------- */

static inline GPUOS_HD void report(struct gpuos_app_args *a, struct shared *sh, const struct lrec *lr, uint32_t done,
				   uint32_t nthreads, uint32_t first, struct rep *r)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint64_t bytes = 0, streamed = 0, load_ns = 0, ovl_ns = 0, comp_ns = 0, wall, prev_c0 = 0, prev_c1 = 0;
	uint32_t i;
	rs(r, "layer_stream: ");
	rs(r, argv[0]);
	rs(r, ", ");
	rn(r, sh->nlayers);
	rs(r, " layers (");
	rn(r, sh->resident);
	rs(r, " resident), 2 slots of ");
	rn(r, sh->slot_bytes);
	rs(r, " bytes, 1 loader + ");
	rn(r, nthreads > first ? nthreads - first : 1);
	rs(r, nthreads > 1 ? " compute threads" : " compute thread (the same: no overlap)");
	if (first > 1)
		rs(r, " (the rest of the loader's warp idle)");
	rs(r, a->on_gpu ? " on the GPU\n" : " (host mode)\n");
	rs(r, "layer tensors      bytes   load_ms compute_ms overlap_ms checksum\n");
	for (i = 0; i < done; i++) {
		const struct lrec *L = &lr[i];
		uint64_t c0 = GPUOS_MAX(L->t_load1, prev_c1), c1 = L->t_comp1, ovl = 0;
		if (i > 0) {
			uint64_t lo = GPUOS_MAX(L->t_load0, prev_c0), hi = GPUOS_MIN(L->t_load1, prev_c1);
			ovl = hi > lo ? hi - lo : 0;
		}
		rnw(r, L->layer, 5);
		rnw(r, L->n, 8);
		rnw(r, L->bytes, 11);
		rf(r, (L->t_load1 - L->t_load0) / 1000u, 1000, 3, 10);
		rf(r, c1 > c0 ? (c1 - c0) / 1000u : 0, 1000, 3, 11);
		rf(r, ovl / 1000u, 1000, 3, 11);
		rs(r, " ");
		rx64(r, L->sum);
		rs(r, "\n");
		bytes += L->bytes;
		streamed += i < sh->resident ? 0 : L->bytes;
		load_ns += L->t_load1 - L->t_load0;
		comp_ns += c1 > c0 ? c1 - c0 : 0;
		ovl_ns += ovl;
		prev_c0 = c0;
		prev_c1 = c1;
	}
	if (done < sh->nlayers) {
		rs(r, "layer ");
		rn(r, lr[done].layer);
		rs(r, ": load failed: ");
		rs(r, stname(lr[done].st));
		rs(r, "\n");
	}
	wall = done ? lr[done - 1].t_comp1 - lr[0].t_load0 : 0;
	rs(r, "total ");
	rn(r, bytes);
	rs(r, " bytes in ");
	rn(r, done);
	rs(r, " layers, ");
	rsec(r, wall);
	rs(r, " s: ");
	rgbs(r, streamed, wall);
	rs(r, " GB/s streamed (");
	rn(r, streamed);
	rs(r, " bytes), loads ");
	rgbs(r, streamed, load_ns);
	rs(r, " GB/s, compute ");
	rgbs(r, bytes, comp_ns);
	rs(r, " GB/s\noverlap ");
	rf(r, ovl_ns / 1000u, 1000, 3, 0);
	rs(r, " ms: ");
	rn(r, comp_ns ? ovl_ns * 100u / comp_ns : 0);
	rs(r, "% of the compute time was hidden behind loads (");
	rn(r, load_ns ? ovl_ns * 100u / load_ns : 0);
	rs(r, "% of the load time)\npass ");
	rf(r, wall, 1000000u, 3, 0);
	rs(r, " ms: one token-equivalent (every layer once)\n");
}

/* ---- the entry ------------------------------------------------------------------------ */

/* Thread 0 after setup: every layer into slot i % 2 in turn (a resident
 * one is used where it lies), handed over to the compute threads, or
 * computed here when it is the only thread. How many were handed over;
 * fewer than sh->nlayers when a load failed. */
static inline GPUOS_HD uint32_t load_layers(struct gpuos_app_args *a, struct shared *sh, uint32_t h, uint32_t nthreads,
					    const uint32_t *tab)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	char *meta = (char *)(uintptr_t)a->vram;
	struct lrec *lr = (struct lrec *)(meta + META_LREC);
	const struct ent *ents = (const struct ent *)(meta + META_ENT);
	uint8_t *const *lptr = (uint8_t *const *)(meta + META_LPTR);
	uint8_t *slots = (uint8_t *)meta + META_BYTES;
	uint32_t i, spins, done = 0, nl = sh->nlayers;

	for (i = 0; i < nl; i++) {
		struct lrec *L = &lr[i];
		uint32_t s = i & 1u, k, st;
		uint8_t *slot = slots + (uint64_t)s * sh->slot_bytes;
		uint64_t got = 0;
		/* Wait until the compute threads are done with layer i - 2 in
		 * this slot; pairs with the last one's release store of freed[s]. */
		spins = 0;
		while (i >= 2 && gpuos_load_acquire_dev32(&sh->freed[s]) != i - 1u)
			gpuos_backoff(&spins);
		if (lptr[i]) {
			slot = lptr[i]; /* resident: nothing to load */
			L->t_load0 = L->t_load1 = gpuos_now_ns();
			for (k = 0; k < L->n; k++)
				L->bytes += ents[L->first + k].size;
			L->st = GPUOS_ST_OK;
			gpuos_store_release_dev32(&sh->ready[s], i + 1u); /* as below */
			if (nthreads == 1)
				compute_layer(sh, L, ents, slot, i, 0, 1, tab);
			done++;
			continue;
		}
		L->t_load0 = gpuos_now_ns();
		st = load_layer(mb, h, meta, ents, L, slot, &got);
		L->t_load1 = gpuos_now_ns();
		L->bytes = got;
		gpuos_app_progress_add(a, got);
		L->st = st;
		if (st != GPUOS_ST_OK) {
			/* Stop the compute threads at layer i; pairs with their
			 * acquire load of abort while they wait for it. */
			gpuos_store_release_dev32(&sh->abort, i + 1u);
			break;
		}
		/* Hand the slot over: the tensors (visible to this thread
		 * since gpuos_wait's acquire of each DONE) and the times;
		 * pairs with the compute threads' acquire load of ready[s]. */
		gpuos_store_release_dev32(&sh->ready[s], i + 1u);
		if (nthreads == 1)
			compute_layer(sh, L, ents, slot, i, 0, 1, tab);
		done++;
	}
	return done;
}

/* Thread 0: the layer table, the loads, and the report once the last
 * layer handed over is reduced. */
static inline GPUOS_HD void loader(struct gpuos_app_args *a, struct shared *sh, uint32_t nthreads, uint32_t first,
				   uint32_t nc, const uint32_t *tab)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const struct lrec *lr = (const struct lrec *)((char *)(uintptr_t)a->vram + META_LREC);
	struct rep r;
	uint32_t h = 0, done, spins = 0;

	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	sh->ncompute = nc;
	if (setup(a, mb, sh, &h, &r)) {
		if (h)
			gpuos_close(mb, h);
		a->status = 2;
		/* Publish "failed"; pairs with the compute threads' acquire load of state. */
		gpuos_store_release_dev32(&sh->state, 2);
		return;
	}
	/* Publish the layer table and slot size; pairs with the compute
	 * threads' acquire load of state. */
	gpuos_store_release_dev32(&sh->state, 1);
	done = load_layers(a, sh, h, nthreads, tab);
	/* Wait for the reduction of the last layer handed over; pairs with
	 * the release store of freed by its last compute thread. */
	while (done && gpuos_load_acquire_dev32(&sh->freed[(done - 1u) & 1u]) != done)
		gpuos_backoff(&spins);
	gpuos_close(mb, h);
	report(a, sh, lr, done, nthreads, first, &r);
	a->status = done == sh->nlayers ? 0 : 1;
}

GPUOS_HD static void layer_stream_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct shared *sh = (struct shared *)(uintptr_t)a->scratch;
	char *meta = (char *)(uintptr_t)a->vram;
	struct lrec *lr = (struct lrec *)(meta + META_LREC);
	const struct ent *ents = (const struct ent *)(meta + META_ENT);
	uint8_t *slots = (uint8_t *)meta + META_BYTES;
	uint32_t width = gpuos_warp_width(), first = nthreads > width ? width : 1u;
	uint32_t tab[16], spins = 0, i, nl, nc = nthreads > first ? nthreads - first : 1u;

	gpuos_bench_crc_table(tab);
	if (tid == 0) {
		loader(a, sh, nthreads, first, nc, tab);
		return;
	}

	if (tid < first)
		return; /* the loader's warp-mates */
	{
		uint32_t state;
		/* Pairs with thread 0's release store of state. */
		while ((state = gpuos_load_acquire_dev32(&sh->state)) == 0)
			gpuos_backoff(&spins);
		if (state != 1)
			return;
	}
	nl = sh->nlayers;
	for (i = 0; i < nl; i++) {
		uint32_t s = i & 1u;
		spins = 0;
		/* Pairs with the loader's release store of ready[s] (the layer's
		 * bytes and record) or of abort. */
		while (gpuos_load_acquire_dev32(&sh->ready[s]) != i + 1u) {
			uint32_t ab = gpuos_load_acquire_dev32(&sh->abort);
			if (ab && ab <= i + 1u)
				return; /* layer ab - 1 never comes; earlier ones do */
			gpuos_backoff(&spins);
		}
		{
			/* Set by thread 0 before its release store of state (acquired above). */
			const uint8_t *data = ((uint8_t *const *)(meta + META_LPTR))[i];
			compute_layer(sh, &lr[i], ents, data ? data : slots + (uint64_t)s * sh->slot_bytes, i, tid - first, nc,
				      tab);
		}
	}
}

GPUOS_APP_ENTRY(layer_stream)
