/* SPDX-License-Identifier: MIT */
/*
 * apps/llama.c - a llama-family forward pass whose weights come through
 * gpuos (issue 19; DESIGN.md section 13): the model is opened and its
 * layers loaded with the device API (gpuos_model_*), the first R layers
 * kept in VRAM, the others loaded again for every token, double-buffered:
 * layer N+1 lands in one slot while layer N computes from the other; the
 * load of layer N+1 is posted as soon as layer N-1 has finished with its
 * slot, before layer N has landed, so that two loads are in flight and
 * the link does not idle between them.
 *
 *   gpuos run llama.cubin --grid G --block B -- MODEL_PATH --prompt TEXT
 *             [--tokens N] [--resident R | --vram-gib G] [--temp T --seed S]
 *             [--ignore-eos] [--timeline] [--batch B]
 *
 * --vram-gib G (a decimal) keeps as many layers resident as fit in G GiB
 * beside everything else (at most the app's memory, --vram-mib). --timeline
 * prints, for the last token, when each streamed layer's load was posted
 * and landed and when its computation began and ended.
 *
 * --batch B (1 to 32, issue 34) decodes B sequences of the prompt at once:
 * every product reads a weight row once for all of them, so a streamed
 * layer serves B tokens. Greedy, they are B copies of one text; under
 * --temp sequence b draws with seed S + b.
 *
 * It prints the generated text, the prompt's and the generated token ids
 * ("tokens: PROMPT | GENERATED"; "tokens B: ..." for sequence B of a
 * batch), then tokens/s and the load rate (and the batch's tokens/s in
 * all). Greedy
 * unless --temp is given (hundredths: 80 is 0.8). The prompt is tokenized
 * with the model's own vocabulary (apps/llama/tokenizer.h), as llama.cpp's
 * completion does (BOS as the vocabulary says, special tokens parsed);
 * --prompt-ids ID,ID,... gives the ids instead.
 *
 * The arithmetic follows llama.cpp's CPU path so that the tokens can be
 * held to its tokens (tests/emu/llama.sh): the activations are converted to
 * each weight type's dot type before a product (apps/llama/quant.h), the
 * KV cache is binary16, attention scores are binary16 dot products,
 * RMSNorm sums in double, RoPE advances its angle by repeated products.
 *
 * Threads (issue 34): on the GPU a warp is the unit of work, a "team" of
 * 32 lanes: a matrix-vector product gives each warp whole rows and each
 * lane pieces of 32 elements of them, so a warp reads a row coalesced and
 * takes its quantised blocks in integer products (apps/llama/lanes.h);
 * attention gives each warp whole heads; the norms are summed by warp 0,
 * sampling by every warp over its share of the vocabulary (the largest
 * logit; under --temp also the softmax mass, thread 0 then walking only
 * the share its draw falls in). In host
 * mode a team is one CPU thread doing its lanes' work itself. Thread 0
 * also posts and collects the loads; the elementwise steps are cut among
 * all threads by blocks (each element computed as a serial loop would); a
 * barrier over the whole grid separates the steps (every block must be
 * resident: keep G at most one block per SM; on the GPU B a multiple of
 * 32). Host mode runs the same on G x B CPU threads.
 *
 * Memory (args->vram): a table area, then the activations and the KV
 * cache, then the weights: the global tensors and the resident layers once,
 * two slots for the streamed layers.
 */
#include <math.h>

#include "gpuos/app.h"
#include "gpuos/gpuos.h"
#include "llama/lanes.h"
#include "llama/quant.h"
#include "llama/tokenizer.h"
#include "report.h"

GPUOS_APP_ABI_NOTE;

#define MAX_LAYERS 512u
#define MAX_CTX 4096u
#define MAX_IDS 1024u
#define ALIGN 256u
/* Greedy sampling's meeting place: each team's largest logit (the first
 * of equals), then thread 0 takes the largest of those. */
#define MAX_TEAMS 8192u
/* RMSNorm's squares are summed in this many parts, a team each (norm_parts):
 * 256 parts of 32 elements for 8192 give a lane one element of each
 * product plane to add (with 32, a warp took 8 elements in turn, each
 * waiting for its planes: the scale step took 18 us, not 6) */
#define LLAMA_NORM_PARTS 256u

/* A layer's steps, each ended by a grid barrier (--timeline times them). */
enum { S_SCALE, S_NORM, S_QKV, S_ROPE, S_ATTEND, S_QUANT, S_O, S_SCALE2, S_NORM2, S_GATE_UP, S_SWIGLU, S_DOWN,
       S_STEPS };
static inline GPUOS_HD const char *sname(uint32_t k)
{
	switch (k) {
	case S_SCALE: return "scale";     /* the residual's add, the norm's squares (and a streamed layer's wait) */
	case S_NORM: return "norm";       /* x * scale * w, quantised */
	case S_QKV: return "qkv";         /* the Q, K and V products */
	case S_ROPE: return "rope";       /* and the KV cache's row */
	case S_ATTEND: return "attend";
	case S_QUANT: return "quant";     /* attention's output quantised */
	case S_O: return "o";             /* the output product */
	case S_SCALE2: return "scale2";   /* the residual's add, the norm's squares */
	case S_NORM2: return "norm2";
	case S_GATE_UP: return "gate_up"; /* the gate and up products */
	case S_SWIGLU: return "swiglu";   /* and quantised */
	default: return "down";           /* the down product */
	}
}

/* The tensors of a layer, in the order the engine uses them. */
enum { T_ATTN_NORM, T_Q, T_K, T_V, T_O, T_FFN_NORM, T_GATE, T_UP, T_DOWN, T_PER_LAYER };
static inline GPUOS_HD const char *tname(uint32_t k)
{
	switch (k) {
	case T_ATTN_NORM: return "attn_norm.weight";
	case T_Q: return "attn_q.weight";
	case T_K: return "attn_k.weight";
	case T_V: return "attn_v.weight";
	case T_O: return "attn_output.weight";
	case T_FFN_NORM: return "ffn_norm.weight";
	case T_GATE: return "ffn_gate.weight";
	case T_UP: return "ffn_up.weight";
	default: return "ffn_down.weight";
	}
}

struct wt {
	uint32_t idx, type;   /* tensor index, GPUOS_GGML_TYPE_* */
	uint64_t ne0, ne1;    /* row length, rows */
	uint64_t size, off;   /* bytes; offset in its layer's memory */
};

/* What thread 0 sets up and every thread reads (in args->vram). */
struct model {
	uint32_t n_embd, n_head, n_head_kv, n_layer, n_ff, n_vocab, n_rot, head_dim;
	float eps, rope_base;
	uint32_t handle, resident, n_ctx, n_prompt, n_gen;
	uint32_t eos, ignore_eos, n_done;    /* positions so far (bit 31: every sequence has ended) */
	uint32_t nb;                        /* sequences decoded at once (--batch): a layer serves each */
	uint32_t len[LLAMA_MAX_BATCH];      /* each sequence's ids (bit 31: it has reached the end of its text) */
	float temp;
	uint64_t seed, seeds[LLAMA_MAX_BATCH]; /* --seed; sequence b draws with seed + b */
	struct wt embd, out_norm, output;
	struct wt layer[MAX_LAYERS][T_PER_LAYER];
	uint64_t layer_bytes[MAX_LAYERS];
	uint8_t *layer_mem[MAX_LAYERS];     /* resident layers' weights, else the slot it is in */
	uint8_t *glob;                      /* out_norm and output (resident) */
	uint8_t *slot[2];                   /* streamed layers land in these in turn */
	uint32_t seq;                       /* streamed loads posted: the next goes to slot[seq & 1] */
	uint32_t pend_n, pend_head;         /* loads in flight (at most pend_max), the oldest pend[pend_head] */
	uint32_t pend_max;                  /* 2, or 1 where the mailbox holds one layer's loads only */
	struct {
		uint32_t layer;
		uint32_t slot[T_PER_LAYER]; /* its mailbox slots */
		uint8_t *mem;               /* the slot it lands in */
		uint64_t t;                 /* when it was posted */
	} pend[2];
	uint32_t timeline, by_budget;       /* --timeline; resident count from --vram-gib */
	uint64_t t_post[MAX_LAYERS], t_ready[MAX_LAYERS], t_begin[MAX_LAYERS], t_done[MAX_LAYERS], t_token;
	uint64_t t_step[MAX_LAYERS][S_STEPS]; /* --timeline: when each step of a layer ended */
	/* activations, one row a sequence: [nb][width] */
	float *x, *xb, *xb2, *q, *k, *v, *att, *hb, *hb2, *logits;
	uint8_t *act;                       /* each sequence's activation in a dot type, act_stride bytes apart */
	uint64_t act_stride;
	uint16_t *kc, *vc;                  /* binary16 KV cache: [sequence][layer][pos][kv dim] */
	uint32_t ids[LLAMA_MAX_BATCH][MAX_IDS]; /* each sequence's prompt, then what it generated */
	const struct gpuos_tok *tok;        /* the vocabulary's arena, or NULL (--prompt-ids) */
	char *text;                         /* the generated text, decoded */
	uint64_t text_cap;
	double ssq[LLAMA_MAX_BATCH][LLAMA_NORM_PARTS]; /* each sequence's squares' sums, a part a team */
	uint64_t t_start, t_end, load_bytes, stall_ns; /* stall: compute waiting for a load */
	char why[256];
	uint8_t tensor[sizeof(struct gpuos_gguf_tensor)];
	uint8_t xhdr[sizeof(struct gpuos_gguf_export)];
	char name[GPUOS_GGUF_NAME_MAX];
	char kvpath[GPUOS_PATH_MAX];        /* the file holding the KVs (a split model's first shard) */
	float best_v[MAX_TEAMS];            /* sampling: each team's largest logit */
	uint32_t best_i[MAX_TEAMS];         /* and its index */
	uint32_t best[LLAMA_MAX_BATCH];     /* --temp: each sequence's largest, joined */
	double mass[MAX_TEAMS];             /* --temp: each team's sum of exp((logit - largest) / temp) */
};

/* args->scratch: the barrier and the state. */
struct shared {
	uint32_t state;      /* 0 setting up, 1 go, 2 failed (release by thread 0) */
	uint32_t count;      /* the barrier's arrivals */
	uint32_t gen;        /* its generation */
	uint32_t rsvd[13];
};
static_assert(sizeof(struct shared) == 64, "llama scratch");

/* ---- a barrier over every thread ------------------------------------------------- */

/* The grid's arrival: n arrivals (host: every thread; GPU: one thread a
 * block) end a generation. */
static inline GPUOS_HD void arrive(struct shared *sh, uint32_t n)
{
	uint32_t g = gpuos_load_acquire_dev32(&sh->gen), spins = 0;
	/* acq_rel: the arriving thread's writes (on the GPU: its block's, which
	 * bar.sync made its own; the release is cumulative) before its
	 * arrival; the last arrival reads them all (every arrival is an RMW on
	 * one word) and publishes them with the generation's release; the
	 * others acquire it. */
	if (gpuos_fetch_add_acq_rel_dev32(&sh->count, 1u) + 1u == n) {
		gpuos_store_relaxed_sys32(&sh->count, 0);
		gpuos_store_release_dev32(&sh->gen, g + 1u);
		gpuos_wake32(&sh->gen); /* host threads asleep on the generation */
		return;
	}
	while (gpuos_load_acquire_dev32(&sh->gen) == g)
		gpuos_wait_change32(&sh->gen, g, &spins);
}

/* Every thread's writes before it reach every thread after it. On the GPU
 * a block meets first (bar.sync) and one thread of it arrives for all, so
 * the grid's word takes G arrivals, not G x B; the second bar.sync hands
 * what that thread acquired to its block. */
static inline GPUOS_HD void barrier(struct shared *sh, uint32_t n)
{
#if GPUOS_ON_GPU
	(void)n;
	__syncthreads();
	if (threadIdx.x == 0)
		arrive(sh, gridDim.x);
	__syncthreads();
#else
	arrive(sh, n);
#endif
}

/* A barrier that ends step k of layer l; with --timeline thread 0 notes
 * when (after the barrier: every thread's part of the step is done). */
static inline GPUOS_HD void step(struct shared *sh, struct model *m, uint32_t tid, uint32_t nthreads, uint32_t l,
				 uint32_t k)
{
	barrier(sh, nthreads);
	if (tid == 0 && m->timeline)
		m->t_step[l][k] = gpuos_now_ns();
}

/* ---- teams: a warp on the GPU, a thread on the host ------------------------------- */

struct team {
	uint32_t id, n;     /* this team, and how many */
	uint32_t lane, step; /* this thread's lane, and the lanes' stride (1 on the host: all of them) */
};

static inline GPUOS_HD struct team team_of(uint32_t tid, uint32_t nthreads)
{
	struct team t;
#if GPUOS_ON_GPU
	t.id = tid / LLAMA_LANES;
	t.n = nthreads / LLAMA_LANES;
	t.lane = tid % LLAMA_LANES;
	t.step = LLAMA_LANES;
#else
	t.id = tid;
	t.n = nthreads;
	t.lane = 0;
	t.step = 1;
#endif
	return t;
}

/* The team's sum of every lane's v (the same for all lanes). */
static inline GPUOS_HD double team_sum(double v)
{
#if GPUOS_ON_GPU
	uint32_t off;
	for (off = LLAMA_LANES / 2u; off; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
#endif
	return v;
}

static inline GPUOS_HD float team_max(float v)
{
#if GPUOS_ON_GPU
	uint32_t off;
	for (off = LLAMA_LANES / 2u; off; off >>= 1) {
		float o = __shfl_xor_sync(0xffffffffu, v, off);
		v = o > v ? o : v;
	}
#endif
	return v;
}

/* The lanes' writes before it reach the team's lanes after it. */
static inline GPUOS_HD void team_sync(void)
{
#if GPUOS_ON_GPU
	__syncwarp();
#endif
}

/* ---- the steps ------------------------------------------------------------------- */

/* The products' units (issue 34). A product whose output the next step
 * adds into the residual (O and the FFN's down: norm_parts) cuts each
 * quantised row into units of LLAMA_UNIT pieces (4096 elements; a row's
 * last unit what is left), a team taking a unit at a time, and writes
 * unit s's sums into plane s of its output (planes nb x ostride floats
 * apart); norm_parts adds a row's planes in order. With whole rows, the
 * down product (8192 rows of 28672) gave 512 of 1920 warps a fifth row
 * while the others waited at the barrier; in units each warp takes 29 or
 * 30 of 57344. The cut depends on the row's length only: neither the grid
 * nor which team takes a unit changes a bit of the result. The other
 * products, whose next step reads their output as it is, take whole rows
 * (k = 1). A float row is one unit. */
#ifndef LLAMA_UNIT /* -DLLAMA_UNIT=N (pieces) builds another cut to measure beside this one */
#define LLAMA_UNIT 128u
#endif
#ifndef LLAMA_PREFETCH /* -DLLAMA_PREFETCH=0: without prefetch_unit, to measure beside it */
#define LLAMA_PREFETCH 1
#endif
#ifndef LLAMA_AHEAD /* units a team's prefetches run ahead of its products (matvec) */
#define LLAMA_AHEAD 1u
#endif
#define LLAMA_UNIT_ELEMS ((uint64_t)LLAMA_UNIT * LLAMA_PIECE)

static inline GPUOS_HD uint64_t units_of(uint32_t type, uint64_t ne0)
{
	return llama_is_float(type) ? 1u : (ne0 + LLAMA_UNIT_ELEMS - 1u) / LLAMA_UNIT_ELEMS;
}

/* The units of a product that adds into the residual: its output's planes. */
static inline GPUOS_HD uint32_t planes_of(const struct wt *w)
{
	return (uint32_t)units_of(w->type, w->ne0);
}

/* Unit s of row r of a product cut k ways (units of bu bytes; a row's
 * last unit ends with the row): its weights [*b, *e) of base, and its
 * count of elements. */
static inline GPUOS_HD uint64_t unit_span(const struct wt *w, const uint8_t *base, uint64_t rb, uint64_t bu,
					  uint32_t r, uint32_t s, uint32_t k, const uint8_t **b, const uint8_t **e)
{
	const uint8_t *row = base + r * rb;
	*b = row + s * bu;
	*e = s + 1u < k ? *b + bu : row + rb;
	return s + 1u < k ? LLAMA_UNIT_ELEMS : w->ne0 - s * LLAMA_UNIT_ELEMS;
}

/* Unit s of row r's weights on their way into L2 while the team computes
 * the unit before it: one bulk prefetch (sm_90's copy engine takes the
 * whole span), so that the next unit's loads wait for L2, not HBM, and HBM
 * stays busy across this unit's butterfly. The span is rounded in to 16
 * bytes (the instruction's alignment), so it never reaches outside the
 * tensor. A hint: it changes no value. */
static inline GPUOS_HD void prefetch_unit(const struct wt *w, const uint8_t *base, uint64_t rb, uint64_t bu,
					  uint32_t r, uint32_t s, uint32_t k)
{
#if GPUOS_ON_GPU && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && LLAMA_PREFETCH
	const uint8_t *b, *e;
	uint64_t a, z;
	unit_span(w, base, rb, bu, r, s, k, &b, &e);
	a = GPUOS_ALIGN_UP((uint64_t)__cvta_generic_to_global(b), 16u);
	z = (uint64_t)__cvta_generic_to_global(e) & ~(uint64_t)15u;
	if (z > a)
		asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"((uint32_t)(z - a)) : "memory");
#else
	(void)w, (void)base, (void)rb, (void)bu, (void)r, (void)s, (void)k;
#endif
}

/* A team's next unit after (r, s): tm.n units on, that is dr rows and ds
 * units (k a row). */
static inline GPUOS_HD void unit_next(uint32_t *r, uint32_t *s, uint32_t dr, uint32_t ds, uint32_t k)
{
	*r += dr;
	*s += ds;
	if (*s >= k)
		*s -= k, ++*r;
}

/* out[b][r] = W[r] . act[b] for every row r and sequence b (out's rows
 * ostride floats apart, act's m->act_stride bytes), cut into k units a row
 * (1, or planes_of(w) where the next step adds the planes): the teams
 * take units in turn, row by row, a warp's lanes reading each unit
 * together, once for all sequences (apps/llama/lanes.h). `before`: rows of
 * the products this step did before this one with no barrier between (Q
 * before K and V, gate before up): this product's first unit goes to the
 * team after the one that took their last, so that no team takes a unit
 * more than another (K's 1024 rows starting at team 0 again gave the first
 * teams 7 rows of Q, K and V, the rest 4). A team steps from unit to unit
 * by (tm.n / k rows, tm.n % k units): no division in the loop. */
static inline GPUOS_HD void matvec(const struct model *m, const struct wt *w, const uint8_t *mem, float *out,
				   uint64_t ostride, uint64_t before, uint32_t k, uint32_t tid, uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	const uint8_t *base = mem + w->off, *ub, *ue, *act;
	uint64_t rb = llama_row_bytes(w->type, w->ne0), plane = m->nb * ostride, ne;
	/* a unit's bytes of weights (bu) and of each sequence's activations (au) */
	uint64_t bu = k == 1 ? rb : llama_row_bytes(w->type, LLAMA_UNIT_ELEMS);
	uint64_t au = k == 1 ? 0 : llama_row_bytes(llama_dot_type(w->type), LLAMA_UNIT_ELEMS);
	uint32_t b, u = (uint32_t)((tm.id + tm.n - before * k % tm.n) % tm.n), r = u / k, s = u % k;
	uint32_t dr = tm.n / k, ds = tm.n % k, rows = (uint32_t)w->ne1, pr = r, ps = s, i;
	/* the prefetches run LLAMA_AHEAD units ahead from the first unit on
	 * (a unit's second group of loads waits for the first's products) */
	for (i = 0; i < LLAMA_AHEAD && pr < rows; i++) {
		if (tm.lane == 0)
			prefetch_unit(w, base, rb, bu, pr, ps, k);
		unit_next(&pr, &ps, dr, ds, k);
	}
	while (r < rows) {
		float v[LLAMA_MAX_BATCH];
		if (tm.lane == 0 && pr < rows)
			prefetch_unit(w, base, rb, bu, pr, ps, k);
		unit_next(&pr, &ps, dr, ds, k);
		ne = unit_span(w, base, rb, bu, r, s, k, &ub, &ue);
		act = m->act + s * au;
		if (m->nb == 1) /* a constant count: the sums stay in registers */
			llama_rows_dot(w->type, ub, act, 0, 1, ne, tm.lane, v);
		else
			llama_rows_dot(w->type, ub, act, m->act_stride, m->nb, ne, tm.lane, v);
		if (tm.lane == 0)
			for (b = 0; b < m->nb; b++)
				out[s * plane + b * ostride + r] = v[b];
		unit_next(&r, &s, dr, ds, k);
	}
}

/* This thread's share [*b, *e) of n items. The elementwise steps are cut
 * this way; each element is computed as the serial loop would, so the
 * number of threads changes no bit of the result. */
static inline GPUOS_HD void part(uint64_t n, uint32_t tid, uint32_t nthreads, uint64_t *b, uint64_t *e)
{
	*b = n * tid / nthreads;
	*e = n * (tid + 1u) / nthreads;
}

/* Q8_0 and Q8_K activations are quantised a block a team (a warp's lanes
 * together: llama_quantize_block); the float dot types a thread's part. */
static inline GPUOS_HD int team_blocks(uint32_t t)
{
	return t == GPUOS_GGML_TYPE_Q8_0 || t == LLAMA_TYPE_Q8_K;
}

/* This thread's blocks of x[0, n) as type t (the next product's dot type). */
static inline GPUOS_HD void quantize_part(uint32_t t, const float *x, uint8_t *out, uint64_t n, uint32_t tid,
					  uint32_t nthreads)
{
	uint32_t bytes, e = llama_type_block(t, &bytes);
	uint64_t b, f;
	if (team_blocks(t)) {
		struct team tm = team_of(tid, nthreads);
		for (b = tm.id; b < n / e; b += tm.n)
			llama_quantize_block(t, x + b * e, out + b * bytes, tm.lane);
		return;
	}
	part(n / e, tid, nthreads, &b, &f);
	if (f > b)
		llama_quantize_act(t, x + b * e, out + b * bytes, (f - b) * e);
}

/* RMSNorm's sum of squares in LLAMA_NORM_PARTS parts, a team a part, then
 * every team adds the parts: one warp summing 8192 values alone took 17 us
 * of a 673 us layer twice a layer, the rest of the grid waiting at the
 * barrier (H200, 2026-12-02). Summed in double (host: in order; GPU: lane
 * by lane, then the lanes). */
static inline GPUOS_HD double sum_squares(const float *x, uint64_t b, uint64_t e, struct team tm)
{
	double sum = 0.0;
	uint64_t i;
	for (i = b + tm.lane; i < e; i += tm.step)
		sum += (double)(x[i] * x[i]);
	return team_sum(sum);
}

/* x += add (the last product's output, its planes added in order:
 * matvec; NULL, none), then m->ssq[b][p], part p of sequence b's squares
 * of x, by team b x PARTS + p (mod the teams): a lane squares the elements
 * it added, so the residual's add needs no barrier of its own. A barrier
 * must follow before norm_scale_of. */
static inline GPUOS_HD void norm_parts(struct model *m, const float *add, uint64_t planes, uint32_t tid,
				       uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint64_t plane = (uint64_t)m->nb * m->n_embd, s;
	uint32_t k;
	for (k = tm.id; k < m->nb * LLAMA_NORM_PARTS; k += tm.n) {
		uint32_t b = k / LLAMA_NORM_PARTS, p = k % LLAMA_NORM_PARTS;
		float *x = m->x + (uint64_t)b * m->n_embd;
		uint64_t i, e;
		part(m->n_embd, p, LLAMA_NORM_PARTS, &i, &e);
		if (add)
			for (uint64_t j = i + tm.lane; j < e; j += tm.step) {
				const float *a = add + (uint64_t)b * m->n_embd + j;
				float t = a[0];
				for (s = 1; s < planes; s++)
					t += a[s * plane];
				x[j] += t;
			}
		double v = sum_squares(x, i, e, tm);
		if (tm.lane == 0)
			m->ssq[b][p] = v;
	}
}

/* Sequence b's RMSNorm scale (ggml_rms_norm), 1 / sqrt(mean(x^2) + eps),
 * from its parts; every lane of the team gets it. */
static inline GPUOS_HD float norm_scale_of(const struct model *m, uint32_t b, struct team tm)
{
	double sum = 0.0;
	uint32_t p;
	for (p = tm.lane; p < LLAMA_NORM_PARTS; p += tm.step)
		sum += m->ssq[b][p];
	sum = team_sum(sum);
	return 1.0f / sqrtf((float)(sum / m->n_embd) + m->eps);
}

/* y = x * scale * w for this thread's blocks of the dot type t, then those
 * blocks of y as t into out: no barrier between, the blocks are its own. */
static inline GPUOS_HD void norm_quantize_part(float *y, const float *x, const float *w, float scale, uint32_t t,
					       uint8_t *out, uint64_t n, uint32_t tid, uint32_t nthreads)
{
	uint32_t bytes, e = llama_type_block(t, &bytes);
	uint64_t b, f, i;
	if (team_blocks(t)) {
		/* a lane quantises the elements it made: no sync between */
		struct team tm = team_of(tid, nthreads);
		for (b = tm.id; b < n / e; b += tm.n) {
			for (i = b * e + tm.lane; i < (b + 1u) * e; i += tm.step)
				y[i] = x[i] * scale * w[i];
			llama_quantize_block(t, y + b * e, out + b * bytes, tm.lane);
		}
		return;
	}
	part(n / e, tid, nthreads, &b, &f);
	for (i = b * e; i < f * e; i++)
		y[i] = x[i] * scale * w[i];
	if (f > b)
		llama_quantize_act(t, y + b * e, out + b * bytes, (f - b) * e);
}

/* For every sequence: its n-wide row of x (rows xs floats apart) into the
 * dot type t in its activation; this thread's blocks. */
static inline GPUOS_HD void quantize_all(const struct model *m, uint32_t t, const float *x, uint64_t xs, uint64_t n,
					 uint32_t tid, uint32_t nthreads)
{
	uint32_t b;
	for (b = 0; b < m->nb; b++)
		quantize_part(t, x + b * xs, m->act + b * m->act_stride, n, tid, nthreads);
}

/* For every sequence: xb = x * scale * w, then as the dot type t into its
 * activation; this thread's blocks. */
static inline GPUOS_HD void norm_quantize_all(struct model *m, const float *w, uint32_t t, uint32_t tid,
					      uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint64_t e = m->n_embd;
	uint32_t b;
	for (b = 0; b < m->nb; b++)
		norm_quantize_part(m->xb + b * e, m->x + b * e, w, norm_scale_of(m, b, tm), t,
				   m->act + b * m->act_stride, e, tid, nthreads);
}

/* RoPE, llama's "normal" mode, on one head p by a team: pair (2i, 2i + 1)
 * of the first n_rot dimensions turned by pos * base^(-2i / n_rot), lane
 * i's pairs i, i + 32, ...; each lane makes its pair's angle with the same
 * i products the serial loop's running angle took, so every angle is that
 * loop's to the bit. */
static inline GPUOS_HD void rope_head(float *p, uint32_t n_rot, uint32_t pos, float base, struct team tm)
{
	float theta_scale = powf(base, -2.0f / (float)n_rot);
	uint32_t i, k;
	for (i = tm.lane; 2u * i < n_rot; i += tm.step) {
		float theta = (float)pos, c, sn, x0 = p[2u * i], x1 = p[2u * i + 1u];
		for (k = 0; k < i; k++)
			theta *= theta_scale;
		c = cosf(theta);
		sn = sinf(theta);
		p[2u * i] = x0 * c - x1 * sn;
		p[2u * i + 1u] = x0 * sn + x1 * c;
	}
}

/* Sequence b's KV cache rows of layer l, from position 0. */
static inline GPUOS_HD uint64_t kv_row(const struct model *m, uint32_t b, uint32_t l)
{
	return ((uint64_t)b * m->n_layer + l) * m->n_ctx * m->n_head_kv * m->head_dim;
}

/* Head h of sequence b's attention over positions 0..pos (this team's
 * pairs; its lanes take positions, then dimensions). */
static inline GPUOS_HD void attend(struct model *m, uint32_t l, uint32_t pos, uint32_t tid, uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint32_t kvd = m->n_head_kv * m->head_dim, hd = m->head_dim, bh, t, i;
	float scale = 1.0f / sqrtf((float)hd);
	for (bh = tm.id; bh < m->nb * m->n_head; bh += tm.n) {
		uint32_t b = bh / m->n_head, h = bh % m->n_head, kvh = h / (m->n_head / m->n_head_kv);
		const uint16_t *kc = m->kc + kv_row(m, b, l) + (uint64_t)kvh * hd;
		const uint16_t *vc = m->vc + kv_row(m, b, l) + (uint64_t)kvh * hd;
		float *att = m->att + (uint64_t)bh * m->n_ctx, *q = m->q + (uint64_t)b * m->n_embd + (uint64_t)h * hd;
		float max = -INFINITY;
		double sum = 0.0;
		for (t = tm.lane; t <= pos; t += tm.step) {
			/* llama_dot's F16 product of the cached key and the query
			 * as binary16 (the score's dot type), with conversions
			 * that have no branch: a key's loads may all be in flight */
			const uint16_t *kt = kc + (uint64_t)t * kvd;
			double d = 0.0;
			float s;
#if GPUOS_ON_GPU
#pragma unroll 8
#endif
			for (i = 0; i < hd; i++)
				d += (double)(llama_half(kt[i]) * llama_half(llama_f16(q[i])));
			s = (float)d * scale;
			att[t] = s;
			max = s > max ? s : max;
		}
		max = team_max(max);
		for (t = tm.lane; t <= pos; t += tm.step) {
			float e = expf(att[t] - max);
			sum += (double)e;
			att[t] = e;
		}
		sum = team_sum(sum);
		{
			float inv = (float)(1.0 / sum);
			for (t = tm.lane; t <= pos; t += tm.step)
				att[t] = llama_half(llama_f16(att[t] * inv)); /* the weights' dot type */
		}
		/* every lane's weights before any lane takes them all */
		team_sync();
		for (i = tm.lane; i < hd; i += tm.step) {
			double acc = 0.0;
#if GPUOS_ON_GPU
#pragma unroll 8
#endif
			for (t = 0; t <= pos; t++)
				acc += (double)(llama_half(vc[(uint64_t)t * kvd + i]) * att[t]);
			m->xb2[(uint64_t)b * m->n_embd + (uint64_t)h * hd + i] = (float)acc;
		}
	}
}

/* ---- loading (thread 0) --------------------------------------------------------------- */

static inline GPUOS_HD void layer_dst(const struct model *m, uint32_t l, uint8_t *to, uint32_t *idx, void **dst)
{
	uint32_t k;
	for (k = 0; k < T_PER_LAYER; k++) {
		idx[k] = m->layer[l][k].idx;
		dst[k] = to + m->layer[l][k].off;
	}
}

/* A resident layer, once, before generation. */
static inline GPUOS_HD uint32_t load_layer(struct gpuos_app_args *a, struct model *m, uint32_t l, uint8_t *to)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint32_t idx[T_PER_LAYER], st;
	void *dst[T_PER_LAYER];
	uint64_t got = 0;
	layer_dst(m, l, to, idx, dst);
	st = gpuos_model_load_tensors(mb, m->handle, idx, dst, T_PER_LAYER, &got);
	if (st == GPUOS_ST_OK && got != m->layer_bytes[l])
		st = GPUOS_ST_BAD_RANGE;
	return st;
}

/* A streamed layer into the next slot, posted. The slot's last layer has
 * finished: every thread passed the barrier at the end of that layer (two
 * loads before this one) before thread 0 got here. */
static inline GPUOS_HD void stream_post(struct gpuos_app_args *a, struct model *m, uint32_t l)
{
	uint32_t idx[T_PER_LAYER], k = (m->pend_head + m->pend_n) % 2u;
	void *dst[T_PER_LAYER];
	uint8_t *to = m->slot[m->seq++ & 1u];
	layer_dst(m, l, to, idx, dst);
	gpuos_model_post_tensors((struct gpuos_mbox *)(uintptr_t)a->mbox, m->handle, idx, dst, T_PER_LAYER,
				 m->pend[k].slot);
	m->pend[k].mem = to; /* layer_mem[l] when it lands: with one streamed layer, the
			      * next token's copy of it is posted while this one computes */
	m->pend[k].layer = l;
	m->pend[k].t = gpuos_now_ns(); /* t_post[l] when it lands: the row stays this token's */
	m->pend_n++;
}

/* The streamed layer after l, posted; after the last, when another token
 * follows and no layer is resident, the first again. With resident
 * layers the next token's first loads wait for its embedding rows
 * (stream_start): posted here, they held those rows' load 25 ms of a
 * 530 ms token, and then the link idled while the resident layers
 * computed (H200, --vram-gib 20, 2026-12-02). */
static inline GPUOS_HD void stream_post_next(struct gpuos_app_args *a, struct model *m, uint32_t l, int more)
{
	if (l + 1u < m->n_layer)
		stream_post(a, m, l + 1u);
	else if (more && m->resident == 0)
		stream_post(a, m, 0);
}

/* Wait for the oldest load in flight; the time waited is compute stalled. */
static inline GPUOS_HD uint32_t stream_wait(struct gpuos_app_args *a, struct model *m)
{
	uint64_t t0 = gpuos_now_ns(), got = 0;
	uint32_t k = m->pend_head, l = m->pend[k].layer;
	uint32_t st = gpuos_model_wait_tensors((struct gpuos_mbox *)(uintptr_t)a->mbox, m->pend[k].slot, T_PER_LAYER,
					       &got);
	if (st == GPUOS_ST_OK && got != m->layer_bytes[l])
		st = GPUOS_ST_BAD_RANGE;
	m->pend_head = (k + 1u) % 2u;
	m->pend_n--;
	m->layer_mem[l] = m->pend[k].mem;
	m->t_post[l] = m->pend[k].t;
	m->t_ready[l] = gpuos_now_ns();
	m->stall_ns += m->t_ready[l] - t0;
	m->load_bytes += got;
	gpuos_app_progress_add(a, got);
	return st;
}

/* At a token's start, after its embedding rows (thread 0): the first
 * streamed layer, and where two loads may be in flight the one after it,
 * posted, so that they land while the resident layers compute (the slot
 * of the second held the last streamed layer of the token before, which
 * has finished). */
static inline GPUOS_HD void stream_start(struct gpuos_app_args *a, struct model *m)
{
	uint32_t r = m->resident;
	if (r >= m->n_layer)
		return;
	if (m->pend_n == 0)
		stream_post(a, m, r);
	if (m->pend_n == 1 && m->pend_max == 2u && r + 1u < m->n_layer && m->pend[m->pend_head].layer == r)
		stream_post(a, m, r + 1u);
}

/* Layer l's weights in its slot (thread 0, l streamed): posted if nothing
 * is in flight (stream_start and the layers before l have posted it; this
 * only keeps the wait from finding an empty queue); the layer
 * after l posted before l is waited for where two loads may be in flight
 * (the slot l-1 computed from is free: its barrier has passed), else once
 * l has landed. */
static inline GPUOS_HD uint32_t stream_layer(struct gpuos_app_args *a, struct model *m, uint32_t l, int more)
{
	uint32_t st;
	if (m->pend_n == 0)
		stream_post(a, m, l);
	if (m->pend_n < m->pend_max)
		stream_post_next(a, m, l, more);
	st = stream_wait(a, m);
	if (st == GPUOS_ST_OK && m->pend_n == 0)
		stream_post_next(a, m, l, more);
	return st;
}

/* ---- setup (thread 0) ----------------------------------------------------------------- */

static inline GPUOS_HD int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Parse a decimal; -1 on anything else. */
static inline GPUOS_HD int64_t num(const char *s)
{
	int64_t v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000000)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* The tensor called name into *w (its shape checked against ne0 x ne1 when
 * those are given); 0, or a reason in r. */
static inline GPUOS_HD int find(struct gpuos_mbox *mb, struct model *m, const char *name, struct wt *w, struct rep *r)
{
	struct gpuos_gguf_tensor *t = (struct gpuos_gguf_tensor *)m->tensor;
	uint32_t st, i;
	for (i = 0; name[i] && i + 1 < sizeof(m->name); i++)
		m->name[i] = name[i];
	m->name[i] = 0;
	st = gpuos_model_find(mb, m->handle, m->name, &w->idx);
	if (st == GPUOS_ST_OK)
		st = gpuos_model_tensor(mb, m->handle, w->idx, t);
	if (st != GPUOS_ST_OK) {
		rs(r, "llama: tensor ");
		rs(r, name);
		rs(r, ": ");
		rs(r, stname(st));
		rs(r, "\n");
		return -1;
	}
	w->type = t->type;
	w->ne0 = t->ne[0];
	w->ne1 = t->n_dims > 1 ? t->ne[1] : 1;
	w->size = t->size;
	if (!llama_type_block(w->type, NULL) || !llama_row_bytes(w->type, w->ne0) ||
	    (w->type == LLAMA_TYPE_Q8_K) || t->n_dims > 2) {
		rs(r, "llama: tensor ");
		rs(r, name);
		rs(r, ": type ");
		rs(r, gpuos_ggml_type_name(w->type) ? gpuos_ggml_type_name(w->type) : "(unknown)");
		rs(r, t->n_dims > 2 ? " with more than 2 dimensions" : " is not one the engine computes on");
		rs(r, " (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)\n");
		return -1;
	}
	return 0;
}

static inline GPUOS_HD int shape(const struct wt *w, uint64_t ne0, uint64_t ne1, const char *name, struct rep *r)
{
	if (w->ne0 == ne0 && w->ne1 == ne1)
		return 0;
	rs(r, "llama: tensor ");
	rs(r, name);
	rs(r, " is ");
	rn(r, w->ne0);
	rs(r, " x ");
	rn(r, w->ne1);
	rs(r, ", the model's hyperparameters say ");
	rn(r, ne0);
	rs(r, " x ");
	rn(r, ne1);
	rs(r, "\n");
	return -1;
}

/* A KV of the model's export (header and tables in `x`, at `xbytes`): its
 * scalar as a double, or `def` when absent. */
static inline GPUOS_HD double kv_num(const struct gpuos_gguf_export *x, const char *key, double def, int *found)
{
	const struct gpuos_gguf_kv *kv = (const struct gpuos_gguf_kv *)((const char *)x + x->kv_off);
	const char *arena = (const char *)x + x->arena_off;
	uint64_t i;
	for (i = 0; i < x->kv_count; i++) {
		if (!streq(arena + kv[i].key_off, key))
			continue;
		if (found)
			*found = 1;
		switch (kv[i].type) {
		case GPUOS_GGUF_TYPE_FLOAT32:
		case GPUOS_GGUF_TYPE_FLOAT64: return kv[i].val.f64;
		case GPUOS_GGUF_TYPE_INT8:
		case GPUOS_GGUF_TYPE_INT16:
		case GPUOS_GGUF_TYPE_INT32:
		case GPUOS_GGUF_TYPE_INT64: return (double)kv[i].val.i64;
		case GPUOS_GGUF_TYPE_ARRAY: return (double)kv[i].arr.count;
		default: return (double)kv[i].val.u64;
		}
	}
	return def;
}

static inline GPUOS_HD const char *kv_str(const struct gpuos_gguf_export *x, const char *key)
{
	const struct gpuos_gguf_kv *kv = (const struct gpuos_gguf_kv *)((const char *)x + x->kv_off);
	const char *arena = (const char *)x + x->arena_off;
	uint64_t i;
	for (i = 0; i < x->kv_count; i++)
		if (kv[i].type == GPUOS_GGUF_TYPE_STRING && streq(arena + kv[i].key_off, key))
			return arena + kv[i].str.off;
	return "";
}

static inline GPUOS_HD uint8_t *bump(uint8_t **at, uint64_t bytes)
{
	uint8_t *p = *at;
	*at += GPUOS_ALIGN_UP(bytes, (uint64_t)ALIGN);
	return p;
}

/* ---- the vocabulary (thread 0) ----------------------------------------------------- */

/* "G" or "G.DDD" GiB in bytes, or -1 (no strtod on a GPU lane). */
static inline GPUOS_HD int64_t gib_bytes(const char *s)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *p = s;
	for (; *p >= '0' && *p <= '9' && whole < 1000000u; p++)
		whole = whole * 10u + (uint64_t)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9' && scale < 1000000000u; p++) {
			frac = frac * 10u + (uint64_t)(*p - '0');
			scale *= 10u;
		}
	if (p == s || *p || whole >= 1000000u || (p == s + 1 && *s == '.'))
		return -1;
	return (int64_t)((whole << 30) + (frac << 30) / scale);
}

/* The KV called key of the export, or NULL. */
static inline GPUOS_HD const struct gpuos_gguf_kv *kv_of(const struct gpuos_gguf_export *x, const char *key)
{
	const struct gpuos_gguf_kv *kv = (const struct gpuos_gguf_kv *)((const char *)x + x->kv_off);
	const char *arena = (const char *)x + x->arena_off;
	uint64_t i;
	for (i = 0; i < x->kv_count; i++)
		if (streq(arena + kv[i].key_off, key))
			return &kv[i];
	return NULL;
}

static inline GPUOS_HD int64_t kv_id(const struct gpuos_gguf_export *x, const char *key)
{
	const struct gpuos_gguf_kv *kv = kv_of(x, key);
	if (!kv || kv->type == GPUOS_GGUF_TYPE_STRING || kv->type == GPUOS_GGUF_TYPE_ARRAY ||
	    kv->type == GPUOS_GGUF_TYPE_FLOAT32 || kv->type == GPUOS_GGUF_TYPE_FLOAT64)
		return -1;
	if (kv->type == GPUOS_GGUF_TYPE_INT8 || kv->type == GPUOS_GGUF_TYPE_INT16 || kv->type == GPUOS_GGUF_TYPE_INT32 ||
	    kv->type == GPUOS_GGUF_TYPE_INT64)
		return kv->val.i64 < 0 ? 0x7fffffffffffffffll : kv->val.i64;
	return kv->val.u64 > 0x7fffffffffffffffull ? 0x7fffffffffffffffll : (int64_t)kv->val.u64;
}

/* The path of the file that holds the KVs: the model's, or its first
 * shard's (a gguf-split model keeps every KV in shard 1). */
static inline GPUOS_HD void kv_file(const char *path, const struct gpuos_gguf_export *x, char *out, uint32_t cap)
{
	uint32_t n = 0, len = 0, k, cnt, i;
	int p;
	while (path[len])
		len++;
	if (len + 32u > cap) { /* no room to build a name: no such file */
		out[0] = 0;
		return;
	}
	if (!(x->flags & GPUOS_GGUF_F_SPLIT)) {
		for (i = 0; i <= len; i++)
			out[i] = path[i];
		return;
	}
	p = gpuos_gguf_split_parse(path, len, &k, &cnt);
	if (p < 0) { /* the base name, P or P.gguf */
		p = (int)len;
		if (len > 5u && streq(path + len - 5u, ".gguf"))
			p = (int)len - 5;
		cnt = x->split_count;
	}
	for (i = 0; i < (uint32_t)p; i++)
		out[n++] = path[i];
	{
		const char *mid = "-00001-of-";
		for (i = 0; mid[i]; i++)
			out[n++] = mid[i];
		for (i = 0; i < 5u; i++) {
			uint32_t d = cnt, j;
			for (j = 0; j < 4u - i; j++)
				d /= 10u;
			out[n++] = (char)('0' + d % 10u);
		}
		mid = ".gguf";
		for (i = 0; mid[i]; i++)
			out[n++] = mid[i];
	}
	out[n] = 0;
}

/* Read the encoded value of an array KV from file h into *at; its bytes. */
static inline GPUOS_HD const uint8_t *kv_array(struct gpuos_mbox *mb, uint32_t h, const struct gpuos_gguf_export *x,
					       const char *key, uint8_t **at, uint64_t *len, uint32_t *st)
{
	const struct gpuos_gguf_kv *kv = kv_of(x, key);
	uint8_t *p = *at;
	uint64_t got = 0;
	*len = 0;
	if (!kv || kv->type != GPUOS_GGUF_TYPE_ARRAY || *st != GPUOS_ST_OK)
		return NULL;
	*st = gpuos_read(mb, h, kv->val_off, kv->val_bytes, p, &got);
	if (*st == GPUOS_ST_OK && got != kv->val_bytes)
		*st = GPUOS_ST_BAD_RANGE;
	*len = kv->val_bytes;
	*at += GPUOS_ALIGN_UP(kv->val_bytes, (uint64_t)ALIGN);
	return p;
}

static inline GPUOS_HD const char *kv_string(const struct gpuos_gguf_export *x, const char *key, uint32_t *len)
{
	const struct gpuos_gguf_kv *kv = kv_of(x, key);
	if (!kv || kv->type != GPUOS_GGUF_TYPE_STRING || kv->str.len != kv->str.full_len)
		return NULL;
	*len = kv->str.len;
	return (const char *)x + x->arena_off + kv->str.off;
}

/* Bytes the array KV key takes at the end of vram (aligned), 0 when absent. */
static inline GPUOS_HD uint64_t kv_array_bytes(const struct gpuos_gguf_export *x, const char *key)
{
	const struct gpuos_gguf_kv *kv = kv_of(x, key);
	return kv ? kv->val_bytes + ALIGN : 0;
}

/* The vocabulary's source: its KVs from the export x, its arrays read
 * from the file that holds them to *tmp (advanced past them). 0, or a
 * reason in r. */
static inline GPUOS_HD int vocab_src(struct gpuos_app_args *a, struct model *m, const struct gpuos_gguf_export *x,
				     uint8_t **tmp, struct gpuos_tok_src *src, struct rep *r)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint64_t size;
	uint32_t h = 0, st, k;
	uint8_t *p = *tmp;
	char *path = m->kvpath, *why = m->why;
	kv_file(argv[0], x, path, GPUOS_PATH_MAX);
	why[0] = 0;
	st = gpuos_open(mb, path, 0, &h, &size, why, sizeof(m->why));
	if (st != GPUOS_ST_OK) {
		ropen_failed(r, "llama", path, st, why);
		return -1;
	}
	gpuos_tok_src_clear(src);
	src->model = kv_string(x, "tokenizer.ggml.model", &src->model_len);
	src->pre = kv_string(x, "tokenizer.ggml.pre", &src->pre_len);
	src->name = kv_string(x, "general.name", &src->name_len);
	src->tokens = kv_array(mb, h, x, "tokenizer.ggml.tokens", &p, &src->tokens_len, &st);
	src->scores = kv_array(mb, h, x, "tokenizer.ggml.scores", &p, &src->scores_len, &st);
	src->types = kv_array(mb, h, x, "tokenizer.ggml.token_type", &p, &src->types_len, &st);
	src->merges = kv_array(mb, h, x, "tokenizer.ggml.merges", &p, &src->merges_len, &st);
	*tmp = p;
	gpuos_close(mb, h);
	if (st != GPUOS_ST_OK) {
		rs(r, "llama: reading the vocabulary: ");
		rs(r, stname(st));
		rs(r, "\n");
		return -1;
	}
	for (k = 0; k < GPUOS_TOK_KEY_COUNT; k++)
		src->id[k] = kv_id(x, gpuos_tok_key_name(k));
	src->add_bos = (int32_t)kv_id(x, "tokenizer.ggml.add_bos_token");
	src->add_eos = (int32_t)kv_id(x, "tokenizer.ggml.add_eos_token");
	src->add_space_prefix = (int32_t)kv_id(x, "tokenizer.ggml.add_space_prefix");
	return 0;
}

/* The vocabulary's arena from src at *at (kept, for decoding the output),
 * if it fits below tmp; m->tok. 0, or a reason in r. */
static inline GPUOS_HD int vocab_arena(struct model *m, const struct gpuos_tok_src *src, uint8_t **at, const uint8_t *tmp,
				       struct rep *r)
{
	uint64_t need = 0;
	int rc = gpuos_tok_init(src, NULL, 0, &need, m->why, sizeof(m->why));
	if (rc == GPUOS_TOK_E_NOSPC && (uint64_t)(tmp - *at) >= need + ALIGN) {
		uint8_t *arena = bump(at, need);
		rc = gpuos_tok_init(src, arena, need, &need, m->why, sizeof(m->why));
		if (rc == GPUOS_TOK_OK)
			m->tok = (const struct gpuos_tok *)arena;
	}
	if (rc != GPUOS_TOK_OK) {
		rs(r, "llama: the vocabulary: ");
		rs(r, rc == GPUOS_TOK_E_NOSPC ? "needs more vram (--vram-mib)" : m->why);
		rs(r, "\n");
		return -1;
	}
	return 0;
}

/* With --prompt: the vocabulary's arena at *at (kept, for decoding the
 * output), and the prompt's ids. The arrays are read from the file into
 * the end of vram for the while. 0, or a reason in r. */
static inline GPUOS_HD int tokenizer(struct gpuos_app_args *a, struct model *m, const struct gpuos_gguf_export *x,
				     uint8_t **at, const char *prompt, uint32_t *n_ids, struct rep *r)
{
	uint8_t *base = (uint8_t *)(uintptr_t)a->vram, *end = base + a->vram_len;
	struct gpuos_tok_src src;
	uint64_t total = 0, plen = 0, wb;
	uint8_t *tmp;
	int64_t n;
	/* how much the arrays take, to place them at the end of vram */
	total += kv_array_bytes(x, "tokenizer.ggml.tokens");
	total += kv_array_bytes(x, "tokenizer.ggml.scores");
	total += kv_array_bytes(x, "tokenizer.ggml.token_type");
	total += kv_array_bytes(x, "tokenizer.ggml.merges");
	if (!prompt)
		return 0;
	while (prompt[plen])
		plen++;
	wb = gpuos_tok_work_bytes(plen);
	if ((uint64_t)(end - *at) < total + wb + 2u * ALIGN) {
		rs(r, "llama: the vocabulary needs more vram (--vram-mib)\n");
		return -1;
	}
	tmp = (uint8_t *)((uintptr_t)(end - total - wb - ALIGN) & ~(uintptr_t)(ALIGN - 1u));
	if (vocab_src(a, m, x, &tmp, &src, r) || vocab_arena(m, &src, at, tmp, r))
		return -1;
	/* as llama.cpp's completion: BOS as the vocabulary says, special texts parsed */
	n = gpuos_tok_encode(m->tok, prompt, (uint32_t)plen, GPUOS_TOK_ADD_SPECIAL | GPUOS_TOK_PARSE_SPECIAL,
			     (int32_t *)m->ids[0], MAX_IDS, tmp, wb);
	if (n <= 0 || n > (int64_t)MAX_IDS) {
		rs(r, n <= 0 ? "llama: the prompt gives no tokens\n" : "llama: the prompt is over 1024 tokens\n");
		return -1;
	}
	*n_ids = (uint32_t)n;
	m->text_cap = 64u * MAX_IDS;
	m->text = (char *)bump(at, m->text_cap + 1u);
	return 0;
}

/* What the command line says beside what setup keeps in the model. */
struct opts {
	int64_t ntok, resident, budget; /* --tokens; --resident, --vram-gib (-1: not given) */
	const char *prompt;             /* --prompt TEXT, or NULL */
	uint32_t n_ids;                 /* the ids --prompt-ids gave, in ids[0] */
};

/* --prompt-ids' value v: ids separated by commas, appended to m->ids[0]
 * (*n_ids of them). 0, or a reason in r. */
static inline GPUOS_HD int prompt_ids(struct model *m, const char *v, uint32_t *n_ids, struct rep *r)
{
	const char *p = v;
	while (*p && *n_ids < MAX_IDS) {
		int64_t id = 0;
		const char *s = p;
		for (; *p >= '0' && *p <= '9' && id < 100000000; p++)
			id = id * 10 + (*p - '0');
		if (p == s || (*p && *p != ','))
			break;
		m->ids[0][(*n_ids)++] = (uint32_t)id;
		if (*p == ',')
			p++;
	}
	if (*p || !*n_ids) {
		rs(r, "llama: --prompt-ids takes token ids separated by commas\n");
		return -1;
	}
	return 0;
}

/* The options after MODEL_PATH: the sampling, batch and --timeline ones
 * into m, the rest into o. 0, or a reason in r. */
static inline GPUOS_HD int parse_args(struct gpuos_app_args *a, struct model *m, struct opts *o, struct rep *r)
{
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint32_t k;
	o->ntok = 16;
	o->resident = o->budget = -1;
	o->prompt = NULL;
	o->n_ids = 0;
	m->temp = 0.0f;
	m->seed = 1;
	m->nb = 1;
	m->ignore_eos = 0;
	m->timeline = 0;
	if (a->argc < 1) {
		rs(r, "usage: llama -- MODEL_PATH --prompt TEXT [--tokens N] [--resident R | --vram-gib G] [--temp T --seed S] "
		      "[--ignore-eos] [--timeline] [--batch B]\n");
		return -1;
	}
	for (k = 1; k < a->argc; k++) {
		const char *op = argv[k], *v = k + 1 < a->argc ? argv[k + 1] : "";
		if (streq(op, "--tokens") && (o->ntok = num(v)) >= 0)
			k++;
		else if (streq(op, "--resident") && (o->resident = num(v)) >= 0)
			k++;
		else if (streq(op, "--vram-gib") && (o->budget = gib_bytes(v)) >= 0)
			k++;
		else if (streq(op, "--ignore-eos"))
			m->ignore_eos = 1;
		else if (streq(op, "--timeline"))
			m->timeline = 1;
		else if (streq(op, "--batch") && num(v) >= 1 && num(v) <= (int64_t)LLAMA_MAX_BATCH)
			m->nb = (uint32_t)num(v), k++;
		else if (streq(op, "--seed") && num(v) >= 0)
			m->seed = (uint64_t)num(v), k++;
		else if (streq(op, "--temp") && num(v) >= 0)
			m->temp = (float)num(v) / 100.0f, k++; /* hundredths: no strtod on a GPU lane */
		else if (streq(op, "--prompt") && k + 1 < a->argc)
			o->prompt = v, k++;
		else if (streq(op, "--prompt-ids")) {
			if (prompt_ids(m, v, &o->n_ids, r))
				return -1;
			k++;
		} else {
			rs(r, "llama: unknown or incomplete option ");
			rs(r, op);
			rs(r, " (--prompt, --prompt-ids, --tokens, --resident, --vram-gib, --temp in hundredths, --seed, --ignore-eos, "
			      "--timeline, --batch 1..32)\n");
			return -1;
		}
	}
	if (o->resident >= 0 && o->budget >= 0) {
		rs(r, "llama: give --resident R or --vram-gib G, not both\n");
		return -1;
	}
	if (!o->n_ids == !o->prompt) {
		rs(r, "llama: give the prompt as --prompt TEXT or --prompt-ids ID,... (one of them)\n");
		return -1;
	}
	return 0;
}

/* Open the model and read its tables (KVs included) to *at, after the
 * model struct, for the hyperparameters and the vocabulary; kept there
 * (*xt), *at advanced past them. 0, or a reason in r. */
static inline GPUOS_HD int open_model(struct gpuos_app_args *a, struct model *m, uint8_t **at, uint8_t **xt,
				      struct rep *r)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	const char *const *argv = (const char *const *)(uintptr_t)a->argv;
	uint8_t *base = (uint8_t *)(uintptr_t)a->vram;
	uint64_t ntens, needed;
	uint32_t st;
	m->why[0] = 0;
	st = gpuos_model_open(mb, argv[0], 0, &m->handle, &ntens, m->why, sizeof(m->why));
	if (st != GPUOS_ST_OK) {
		ropen_failed(r, "llama", argv[0], st, m->why);
		return -1;
	}
	*xt = *at;
	st = gpuos_model_info(mb, m->handle, (struct gpuos_gguf_export *)*xt, sizeof(struct gpuos_gguf_export), &needed);
	if (st == GPUOS_ST_OK && (uint64_t)(*xt - base) + needed > a->vram_len)
		st = GPUOS_ST_NOSPC;
	if (st == GPUOS_ST_OK)
		bump(at, needed);
	if (st == GPUOS_ST_OK)
		st = gpuos_model_info(mb, m->handle, (struct gpuos_gguf_export *)*xt, needed, &needed);
	if (st != GPUOS_ST_OK) {
		rs(r, "llama: model tables: ");
		rs(r, stname(st));
		rs(r, "\n");
		return -1;
	}
	*(struct gpuos_gguf_export *)m->xhdr = *(struct gpuos_gguf_export *)*xt;
	return 0;
}

/* The architecture and hyperparameters from the KVs of e. 0, or a reason in r. */
static inline GPUOS_HD int hyperparams(struct model *m, const struct gpuos_gguf_export *e, struct rep *r)
{
	const char *arch = kv_str(e, "general.architecture");
	int have = 0;
	if (!streq(arch, "llama")) {
		rs(r, "llama: architecture '");
		rs(r, arch);
		rs(r, "' is not one the engine runs (llama)\n");
		return -1;
	}
	m->n_embd = (uint32_t)kv_num(e, "llama.embedding_length", 0, &have);
	m->n_layer = (uint32_t)kv_num(e, "llama.block_count", 0, NULL);
	m->n_ff = (uint32_t)kv_num(e, "llama.feed_forward_length", 0, NULL);
	m->n_head = (uint32_t)kv_num(e, "llama.attention.head_count", 0, NULL);
	m->n_head_kv = (uint32_t)kv_num(e, "llama.attention.head_count_kv", m->n_head, NULL);
	m->eps = (float)kv_num(e, "llama.attention.layer_norm_rms_epsilon", 1e-5, NULL);
	m->rope_base = (float)kv_num(e, "llama.rope.freq_base", 10000.0, NULL);
	m->head_dim = m->n_head ? m->n_embd / m->n_head : 0;
	m->n_rot = (uint32_t)kv_num(e, "llama.rope.dimension_count", m->head_dim, NULL);
	m->eos = (uint32_t)kv_num(e, "tokenizer.ggml.eos_token_id", 2, NULL);
	if (!have || !m->n_layer || !m->n_head || !m->n_head_kv || m->n_head % m->n_head_kv || m->n_embd % m->n_head ||
	    m->n_layer > MAX_LAYERS || m->head_dim > 256u || m->n_rot > m->head_dim || m->n_rot % 2u) {
		rs(r, "llama: hyperparameters the engine cannot run (embedding, heads, layers up to 512, head size up to 256)\n");
		return -1;
	}
	return 0;
}

/* The global tensors: the embeddings, the output norm and the output head
 * (the embeddings themselves where they are tied). 0, or a reason in r. */
static inline GPUOS_HD int find_globals(struct gpuos_mbox *mb, struct model *m, struct rep *r)
{
	if (find(mb, m, "token_embd.weight", &m->embd, r) || find(mb, m, "output_norm.weight", &m->out_norm, r))
		return -1;
	m->n_vocab = (uint32_t)m->embd.ne1;
	if (find(mb, m, "output.weight", &m->output, r)) {
		/* tied embeddings: the output head is token_embd itself */
		r->n = 0;
		r->p[0] = 0;
		m->output = m->embd;
	}
	if (shape(&m->embd, m->n_embd, m->n_vocab, "token_embd.weight", r) ||
	    shape(&m->out_norm, m->n_embd, 1, "output_norm.weight", r) || m->out_norm.type != GPUOS_GGML_TYPE_F32 ||
	    shape(&m->output, m->n_embd, m->n_vocab, "output.weight", r))
		return -1;
	return 0;
}

/* The name of tensor k of layer l, "blk.L.NAME", into name (64 bytes). */
static inline GPUOS_HD void layer_name(uint32_t l, uint32_t k, char *name)
{
	uint32_t n = 0, d = l, j;
	char digits[12];
	int nd = 0;
	const char *s = "blk.";
	while (*s)
		name[n++] = *s++;
	do {
		digits[nd++] = (char)('0' + d % 10u);
		d /= 10u;
	} while (d);
	while (nd)
		name[n++] = digits[--nd];
	name[n++] = '.';
	for (j = 0; tname(k)[j]; j++)
		name[n++] = tname(k)[j];
	name[n] = 0;
}

/* Layer l's tensors: found, their shapes and types checked, each placed
 * in the layer's memory; its bytes, and its span in layer_mem[l] until
 * the layers are placed. 0, or a reason in r. */
static inline GPUOS_HD int find_layer(struct gpuos_mbox *mb, struct model *m, uint32_t l, struct rep *r)
{
	uint64_t off = 0, kvd = (uint64_t)m->n_head_kv * m->head_dim;
	uint32_t k;
	for (k = 0; k < T_PER_LAYER; k++) {
		char name[64];
		struct wt *w = &m->layer[l][k];
		uint64_t ne0, ne1;
		layer_name(l, k, name);
		if (find(mb, m, name, w, r))
			return -1;
		ne0 = k == T_DOWN ? m->n_ff : m->n_embd;
		ne1 = k == T_ATTN_NORM || k == T_FFN_NORM ? 1u : k == T_K || k == T_V ? kvd
			: k == T_GATE || k == T_UP ? m->n_ff : m->n_embd;
		if (shape(w, ne0, ne1, name, r))
			return -1;
		if ((k == T_ATTN_NORM || k == T_FFN_NORM) && w->type != GPUOS_GGML_TYPE_F32) {
			rs(r, "llama: ");
			rs(r, name);
			rs(r, " is not F32\n");
			return -1;
		}
		w->off = off;
		off = GPUOS_ALIGN_UP(off + w->size, (uint64_t)ALIGN);
	}
	m->layer_bytes[l] = 0;
	for (k = 0; k < T_PER_LAYER; k++)
		m->layer_bytes[l] += m->layer[l][k].size;
	m->layer_mem[l] = (uint8_t *)(uintptr_t)off; /* its span, for now */
	return 0;
}

/* The activations and the KV cache at *at, then the global tensors. */
static inline GPUOS_HD void place_activations(struct model *m, uint8_t **at)
{
	uint64_t kvd = (uint64_t)m->n_head_kv * m->head_dim, nb = m->nb, actb;
	/* a row of activations in any dot type, or an embedding row as stored;
	 * a multiple of 16 bytes */
	actb = GPUOS_ALIGN_UP(4u * (uint64_t)(m->n_ff > m->n_embd ? m->n_ff : m->n_embd) + 1024u, (uint64_t)ALIGN);
	m->act_stride = actb;
	m->x = (float *)bump(at, 4u * nb * m->n_embd);
	/* O's and down's output: a plane for each unit of their rows (matvec) */
	m->xb = (float *)bump(at, 4u * nb * m->n_embd *
			      units_of(GPUOS_GGML_TYPE_Q4_0, m->n_ff > m->n_embd ? m->n_ff : m->n_embd));
	m->xb2 = (float *)bump(at, 4u * nb * m->n_embd);
	m->q = (float *)bump(at, 4u * nb * m->n_embd);
	m->k = (float *)bump(at, 4u * nb * kvd);
	m->v = (float *)bump(at, 4u * nb * kvd);
	m->att = (float *)bump(at, 4u * nb * m->n_head * m->n_ctx);
	m->hb = (float *)bump(at, 4u * nb * m->n_ff);
	m->hb2 = (float *)bump(at, 4u * nb * m->n_ff);
	m->logits = (float *)bump(at, 4u * nb * m->n_vocab);
	m->act = bump(at, nb * actb);
	m->kc = (uint16_t *)bump(at, 2u * nb * m->n_layer * m->n_ctx * kvd);
	m->vc = (uint16_t *)bump(at, 2u * nb * m->n_layer * m->n_ctx * kvd);
	m->glob = bump(at, GPUOS_ALIGN_UP(m->out_norm.size, (uint64_t)ALIGN) + m->output.size);
	m->output.off = GPUOS_ALIGN_UP(m->out_norm.size, (uint64_t)ALIGN);
	m->out_norm.off = 0;
}

/* What the weights need with R layers resident, beside fixed bytes: those
 * layers, and two slots of the largest streamed one when any is streamed. */
static inline GPUOS_HD uint64_t weights_need(const struct model *m, uint64_t fixed, int64_t R)
{
	uint64_t need = fixed, slot = 0;
	uint32_t l;
	for (l = 0; l < m->n_layer; l++) {
		uint64_t span = GPUOS_ALIGN_UP((uint64_t)(uintptr_t)m->layer_mem[l], (uint64_t)ALIGN);
		if (l < (uint32_t)R)
			need += span;
		else
			slot = span > slot ? span : slot;
	}
	return need + 2u * slot;
}

/* How many layers stay resident beside fixed bytes: --resident's count,
 * or the most that fit in --vram-gib's budget (within the app's vram), or
 * none. 0 with m->resident set, or a reason in r. */
static inline GPUOS_HD int choose_resident(struct gpuos_app_args *a, struct model *m, uint64_t fixed, int64_t resident,
					   int64_t budget, struct rep *r)
{
	uint64_t cap = a->vram_len, need = 0;
	int64_t R;
	if (budget >= 0 && (uint64_t)budget < cap)
		cap = (uint64_t)budget;
	if (budget < 0 && resident < 0)
		resident = 0; /* every layer streamed */
	if (resident > (int64_t)m->n_layer) {
		rs(r, "llama: --resident is more than the model's layers\n");
		return -1;
	}
	for (R = resident >= 0 ? resident : (int64_t)m->n_layer; R >= 0; R--) {
		need = weights_need(m, fixed, R);
		if (need <= cap || resident >= 0 || R == 0)
			break;
	}
	if (need > cap) {
		rs(r, "llama: the model needs ");
		rn(r, need);
		rs(r, " bytes of vram (activations, KV cache, output head, resident layers and two slots); there are ");
		rn(r, cap);
		rs(r, budget >= 0 && (uint64_t)budget < a->vram_len ? " (--vram-gib)\n" : " (--vram-mib)\n");
		return -1;
	}
	m->resident = (uint32_t)R;
	m->by_budget = budget >= 0;
	return 0;
}

/* The resident layers' memory at *at, then the two slots the streamed ones
 * land in, and the loads' bookkeeping. 0, or a reason in r. */
static inline GPUOS_HD int place_layers(struct gpuos_app_args *a, struct model *m, uint8_t **at, struct rep *r)
{
	uint32_t nslots = ((struct gpuos_mbox *)(uintptr_t)a->mbox)->nslots, l;
	uint64_t slot = 0;
	for (l = 0; l < m->n_layer; l++) {
		uint64_t span = (uint64_t)(uintptr_t)m->layer_mem[l];
		if (l < m->resident)
			m->layer_mem[l] = bump(at, span);
		else
			slot = span > slot ? span : slot;
	}
	m->slot[0] = slot ? bump(at, slot) : NULL;
	m->slot[1] = slot ? bump(at, slot) : NULL;
	/* a streamed layer's loads stay in the mailbox until collected,
	 * beside the embedding row's */
	if (slot && nslots < T_PER_LAYER + 1u) {
		rs(r, "llama: streaming a layer needs a mailbox of at least 10 slots (--mbox-slots)\n");
		return -1;
	}
	/* two layers in flight take two layers' slots */
	m->pend_max = nslots >= 2u * T_PER_LAYER + 1u ? 2u : 1u;
	m->seq = 0;
	m->pend_n = m->pend_head = 0;
	return 0;
}

/* The prompt's n_ids ids checked against the vocabulary, then every
 * sequence starting from them with a seed of its own. 0, or a reason in r. */
static inline GPUOS_HD int start_sequences(struct model *m, uint32_t n_ids, struct rep *r)
{
	uint32_t i, k;
	for (i = 0; i < n_ids; i++)
		if (m->ids[0][i] >= m->n_vocab) {
			rs(r, "llama: token id ");
			rn(r, m->ids[0][i]);
			rs(r, " is past the vocabulary\n");
			return -1;
		}
	for (k = 0; k < m->nb; k++) {
		for (i = 0; i < n_ids; i++)
			m->ids[k][i] = m->ids[0][i];
		m->len[k] = n_ids;
		m->seeds[k] = m->seed + k;
	}
	return 0;
}

/* The global tensors and the resident layers, loaded once. 0, or a reason in r. */
static inline GPUOS_HD int load_resident(struct gpuos_app_args *a, struct model *m, struct rep *r)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint32_t idx[2] = {m->out_norm.idx, m->output.idx};
	void *dst[2] = {m->glob + m->out_norm.off, m->glob + m->output.off};
	uint64_t got = 0;
	uint32_t st, l;
	st = gpuos_model_load_tensors(mb, m->handle, idx, dst, 2, &got);
	if (st == GPUOS_ST_OK && got != m->out_norm.size + m->output.size)
		st = GPUOS_ST_BAD_RANGE;
	for (l = 0; st == GPUOS_ST_OK && l < m->resident; l++)
		st = load_layer(a, m, l, m->layer_mem[l]);
	if (st != GPUOS_ST_OK) {
		rs(r, "llama: loading the weights: ");
		rs(r, stname(st));
		rs(r, "\n");
		return -1;
	}
	return 0;
}

/* Thread 0 before the first token: the options, the model's tables,
 * tensors and vocabulary, the memory (a table area, the activations and
 * KV cache, then the weights) and the resident weights loaded. 0, or a
 * reason in r. */
static inline GPUOS_HD int setup(struct gpuos_app_args *a, struct model *m, struct rep *r)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint8_t *base = (uint8_t *)(uintptr_t)a->vram, *at = base + GPUOS_ALIGN_UP(sizeof(*m), (uint64_t)ALIGN), *xt;
	struct opts o;
	uint64_t streamed = 0;
	uint32_t l;
	if (parse_args(a, m, &o, r) || open_model(a, m, &at, &xt, r) ||
	    hyperparams(m, (const struct gpuos_gguf_export *)xt, r))
		return -1;
	m->tok = NULL;
	if (tokenizer(a, m, (const struct gpuos_gguf_export *)xt, &at, o.prompt, &o.n_ids, r))
		return -1;
	m->n_prompt = o.n_ids;
	m->n_gen = (uint32_t)o.ntok;
	if (o.n_ids + o.ntok > MAX_IDS) {
		rs(r, "llama: prompt and tokens above 1024\n");
		return -1;
	}
	if (find_globals(mb, m, r))
		return -1;
	for (l = 0; l < m->n_layer; l++)
		if (find_layer(mb, m, l, r))
			return -1;
	m->n_ctx = o.n_ids + (uint32_t)o.ntok;
	place_activations(m, &at);
	if (choose_resident(a, m, (uint64_t)(at - base), o.resident, o.budget, r) || place_layers(a, m, &at, r) ||
	    start_sequences(m, o.n_ids, r) || load_resident(a, m, r))
		return -1;
	for (l = m->resident; l < m->n_layer; l++)
		streamed += m->layer_bytes[l];
	gpuos_app_progress_total(a, streamed * (o.n_ids + (uint64_t)o.ntok));
	return 0;
}

/* ---- one token through the model ------------------------------------------------------ */

static inline GPUOS_HD float silu(float x)
{
	return x / (1.0f + expf(-x));
}

/* RoPE on every sequence's query and key heads, a head a team; a KV
 * head's cache row written by the lanes that turned its pairs (a lane
 * writes the elements it made: no sync between). */
static inline GPUOS_HD void rope_cache(struct model *m, uint32_t l, uint32_t pos, uint32_t tid, uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint64_t E = m->n_embd, hd = m->head_dim, kvd = (uint64_t)m->n_head_kv * hd, i;
	uint32_t nq = m->nb * m->n_head, nk = m->nb * m->n_head_kv, u;
	for (u = tm.id; u < nq + nk; u += tm.n) {
		uint32_t s = u < nq ? u / m->n_head : (u - nq) / m->n_head_kv;
		uint32_t h = u < nq ? u % m->n_head : (u - nq) % m->n_head_kv;
		if (u < nq) {
			rope_head(m->q + s * E + h * hd, m->n_rot, pos, m->rope_base, tm);
			continue;
		}
		{
			float *k = m->k + s * kvd + h * hd;
			const float *v = m->v + s * kvd + h * hd;
			uint16_t *kc = m->kc + kv_row(m, s, l) + pos * kvd + h * hd;
			uint16_t *vc = m->vc + kv_row(m, s, l) + pos * kvd + h * hd;
			rope_head(k, m->n_rot, pos, m->rope_base, tm);
			for (i = 2u * tm.lane; i < hd; i += 2u * tm.step) {
				kc[i] = llama_f16(k[i]);
				vc[i] = llama_f16(v[i]);
				if (i + 1u < hd) {
					kc[i + 1u] = llama_f16(k[i + 1u]);
					vc[i + 1u] = llama_f16(v[i + 1u]);
				}
			}
		}
	}
}

/* SwiGLU (hb = silu(hb) * hb2) by blocks of the down product's dot type
 * dd, each block then quantised by the team (or thread) that made it. */
static inline GPUOS_HD void swiglu_quantize(struct model *m, uint32_t dd, uint32_t tid, uint32_t nthreads)
{
	uint32_t bytes, be = llama_type_block(dd, &bytes), s;
	uint64_t F = m->n_ff, b, e, i;
	for (s = 0; s < m->nb; s++) {
		float *hb = m->hb + s * F, *hb2 = m->hb2 + s * F;
		uint8_t *act = m->act + s * m->act_stride;
		if (team_blocks(dd)) {
			struct team tm = team_of(tid, nthreads);
			for (b = tm.id; b < F / be; b += tm.n) {
				for (i = b * be + tm.lane; i < (b + 1u) * be; i += tm.step)
					hb[i] = silu(hb[i]) * hb2[i];
				llama_quantize_block(dd, hb + b * be, act + b * bytes, tm.lane);
			}
			continue;
		}
		part(F / be, tid, nthreads, &b, &e);
		for (i = b * be; i < e * be; i++)
			hb[i] = silu(hb[i]) * hb2[i];
		if (e > b)
			llama_quantize_act(dd, hb + b * be, act + b * bytes, (e - b) * be);
	}
}

/* For every sequence b: x = embedding(ids[b][pos]), then every layer, then
 * the logits. Thread 0 loads; all threads take the products and their
 * parts of the elementwise steps. `more`: another position follows (with
 * no layer resident, its first streamed layer is loaded during this one's
 * last). 0, or a load's status.
 * whole: a layer's twelve steps in their order, each ended by the barrier
 * that publishes it, read as the layer's one timeline */
static inline GPUOS_HD uint32_t forward(struct gpuos_app_args *a, struct model *m, struct shared *sh, uint32_t pos,
					uint32_t tid, uint32_t nthreads, uint32_t *fail, int more)
{
	struct gpuos_mbox *mb = (struct gpuos_mbox *)(uintptr_t)a->mbox;
	uint64_t E = m->n_embd, F = m->n_ff, kvd = (uint64_t)m->n_head_kv * m->head_dim;
	uint32_t l, s;
	if (tid == 0) {
		m->t_token = gpuos_now_ns();
		/* the embedding rows, loaded alone (before stream_start's loads), dequantised */
		for (s = 0; s < m->nb && !*fail; s++) {
			uint64_t rb = llama_row_bytes(m->embd.type, m->n_embd), got = 0;
			uint8_t *raw = m->act + s * m->act_stride;
			uint32_t st = gpuos_model_load(mb, m->handle, m->embd.idx, raw, (uint64_t)m->ids[s][pos] * rb, rb, &got);
			if (st != GPUOS_ST_OK || got != rb)
				*fail = st != GPUOS_ST_OK ? st : GPUOS_ST_BAD_RANGE;
			else
				gpuos_dequant_row(m->embd.type, raw, m->x + s * E, m->n_embd);
		}
		if (!*fail)
			stream_start(a, m);
	}
	barrier(sh, nthreads);
	if (*fail)
		return *fail;
	for (l = 0; l < m->n_layer; l++) {
		const struct wt *w = m->layer[l];
		uint8_t *mem;
		uint32_t dq = llama_dot_type(w[T_Q].type);
		if (tid == 0) {
			if (l >= m->resident) {
				uint32_t st = stream_layer(a, m, l, more);
				if (st != GPUOS_ST_OK)
					*fail = st;
			}
			m->t_begin[l] = gpuos_now_ns();
		}
		/* the last layer's down output joins the residual */
		norm_parts(m, l ? m->xb : NULL, l ? planes_of(&m->layer[l - 1u][T_DOWN]) : 1u, tid, nthreads);
		/* thread 0's layer_mem[l] and *fail, the teams' parts reach the others through it */
		step(sh, m, tid, nthreads, l, S_SCALE);
		if (*fail)
			return *fail;
		mem = m->layer_mem[l];
		norm_quantize_all(m, (const float *)(mem + w[T_ATTN_NORM].off), dq, tid, nthreads);
		step(sh, m, tid, nthreads, l, S_NORM);
		matvec(m, &w[T_Q], mem, m->q, E, 0, 1, tid, nthreads);
		if (llama_dot_type(w[T_K].type) == dq && llama_dot_type(w[T_V].type) == dq) {
			matvec(m, &w[T_K], mem, m->k, kvd, w[T_Q].ne1, 1, tid, nthreads);
			matvec(m, &w[T_V], mem, m->v, kvd, w[T_Q].ne1 + w[T_K].ne1, 1, tid, nthreads);
		} else {
			barrier(sh, nthreads);
			quantize_all(m, llama_dot_type(w[T_K].type), m->xb, E, E, tid, nthreads);
			barrier(sh, nthreads);
			matvec(m, &w[T_K], mem, m->k, kvd, 0, 1, tid, nthreads);
			barrier(sh, nthreads);
			quantize_all(m, llama_dot_type(w[T_V].type), m->xb, E, E, tid, nthreads);
			barrier(sh, nthreads);
			matvec(m, &w[T_V], mem, m->v, kvd, 0, 1, tid, nthreads);
		}
		step(sh, m, tid, nthreads, l, S_QKV);
		rope_cache(m, l, pos, tid, nthreads);
		step(sh, m, tid, nthreads, l, S_ROPE);
		attend(m, l, pos, tid, nthreads);
		step(sh, m, tid, nthreads, l, S_ATTEND);
		quantize_all(m, llama_dot_type(w[T_O].type), m->xb2, E, E, tid, nthreads);
		step(sh, m, tid, nthreads, l, S_QUANT);
		matvec(m, &w[T_O], mem, m->xb, E, 0, planes_of(&w[T_O]), tid, nthreads);
		step(sh, m, tid, nthreads, l, S_O);
		norm_parts(m, m->xb, planes_of(&w[T_O]), tid, nthreads); /* O's output joins the residual */
		step(sh, m, tid, nthreads, l, S_SCALE2);
		norm_quantize_all(m, (const float *)(mem + w[T_FFN_NORM].off), llama_dot_type(w[T_GATE].type), tid,
				  nthreads);
		step(sh, m, tid, nthreads, l, S_NORM2);
		matvec(m, &w[T_GATE], mem, m->hb, F, 0, 1, tid, nthreads);
		if (llama_dot_type(w[T_UP].type) != llama_dot_type(w[T_GATE].type)) {
			barrier(sh, nthreads);
			quantize_all(m, llama_dot_type(w[T_UP].type), m->xb, E, E, tid, nthreads);
			barrier(sh, nthreads);
			matvec(m, &w[T_UP], mem, m->hb2, F, 0, 1, tid, nthreads);
		} else {
			matvec(m, &w[T_UP], mem, m->hb2, F, w[T_GATE].ne1, 1, tid, nthreads);
		}
		step(sh, m, tid, nthreads, l, S_GATE_UP);
		swiglu_quantize(m, llama_dot_type(w[T_DOWN].type), tid, nthreads);
		step(sh, m, tid, nthreads, l, S_SWIGLU);
		matvec(m, &w[T_DOWN], mem, m->xb, E, 0, planes_of(&w[T_DOWN]), tid, nthreads);
		/* this layer's slot is loaded again (two streamed layers on) only
		 * after every thread has left it; the down output joins the
		 * residual in the next norm's squares (norm_parts) */
		step(sh, m, tid, nthreads, l, S_DOWN);
		if (tid == 0)
			m->t_done[l] = gpuos_now_ns();
	}
	norm_parts(m, m->xb, planes_of(&m->layer[m->n_layer - 1u][T_DOWN]), tid, nthreads);
	barrier(sh, nthreads);
	norm_quantize_all(m, (const float *)(m->glob + m->out_norm.off), llama_dot_type(m->output.type), tid, nthreads);
	barrier(sh, nthreads);
	matvec(m, &m->output, m->glob, m->logits, m->n_vocab, 0, 1, tid, nthreads);
	barrier(sh, nthreads);
	return 0;
}

/* a is before b as the first largest logit: larger, or as large and first
 * (NONE: no index). */
#define NONE 0xffffffffu
static inline GPUOS_HD int better(float av, uint32_t ai, float bv, uint32_t bi)
{
	return ai != NONE && (bi == NONE || av > bv || (av == bv && ai < bi));
}

/* The first largest logit of every sequence, first half: this team's, over
 * its share of each sequence's vocabulary (its lanes interleaved), into
 * best_v/best_i[b * teams + team]; a barrier and argmax_join follow. */
static inline GPUOS_HD uint32_t argmax_teams(const struct model *m, uint32_t nthreads)
{
	uint32_t n = team_of(0, nthreads).n, cap = MAX_TEAMS / m->nb;
	return n < cap ? n : cap;
}

static inline GPUOS_HD void argmax_part(struct model *m, uint32_t tid, uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint32_t nt = argmax_teams(m, nthreads), sq;
	if (tm.id >= nt)
		return;
	for (sq = 0; sq < m->nb; sq++) {
		const float *lg = m->logits + (uint64_t)sq * m->n_vocab;
		uint32_t best = NONE;
		uint64_t b, e, i;
		float bv = 0.0f;
		part(m->n_vocab, tm.id, nt, &b, &e);
		for (i = b + tm.lane; i < e; i += tm.step)
			if (better(lg[i], (uint32_t)i, bv, best)) {
				bv = lg[i];
				best = (uint32_t)i;
			}
#if GPUOS_ON_GPU
		{
			uint32_t off;
			for (off = LLAMA_LANES / 2u; off; off >>= 1) {
				float ov = __shfl_xor_sync(0xffffffffu, bv, off);
				uint32_t oi = __shfl_xor_sync(0xffffffffu, best, off);
				if (better(ov, oi, bv, best)) {
					bv = ov;
					best = oi;
				}
			}
		}
#endif
		if (tm.lane == 0) {
			m->best_v[sq * nt + tm.id] = bv;
			m->best_i[sq * nt + tm.id] = best;
		}
	}
}

/* Second half (thread 0, after the barrier), sequence sq: the teams'
 * shares are in order, so the first of equals stays first. */
static inline GPUOS_HD uint32_t argmax_join(const struct model *m, uint32_t sq, uint32_t nthreads)
{
	uint32_t nt = argmax_teams(m, nthreads), k, best = NONE;
	float bv = 0.0f;
	for (k = 0; k < nt; k++)
		if (better(m->best_v[sq * nt + k], m->best_i[sq * nt + k], bv, best)) {
			bv = m->best_v[sq * nt + k];
			best = m->best_i[sq * nt + k];
		}
	return best == NONE ? 0 : best;
}

/* --temp, after argmax_join has put each sequence's largest in m->best:
 * this team's share of each sequence's softmax mass, exp((logit -
 * largest) / temp) summed in double (lanes interleaved, then the team),
 * into mass[sq * teams + team]; a barrier and sample follow. */
static inline GPUOS_HD double weight(const struct model *m, const float *lg, uint32_t best, uint64_t i)
{
	return exp((double)((lg[i] - lg[best]) / m->temp));
}

static inline GPUOS_HD void mass_part(struct model *m, uint32_t tid, uint32_t nthreads)
{
	struct team tm = team_of(tid, nthreads);
	uint32_t nt = argmax_teams(m, nthreads), sq;
	if (tm.id >= nt)
		return;
	for (sq = 0; sq < m->nb; sq++) {
		const float *lg = m->logits + (uint64_t)sq * m->n_vocab;
		uint64_t b, e, i;
		double sum = 0.0;
		part(m->n_vocab, tm.id, nt, &b, &e);
		for (i = b + tm.lane; i < e; i += tm.step)
			sum += weight(m, lg, m->best[sq], i);
		sum = team_sum(sum);
		if (tm.lane == 0)
			m->mass[sq * nt + tm.id] = sum;
	}
}

/* Sequence sq's next token (thread 0). Greedy: its first largest logit;
 * else a draw from softmax(logits / temp) with the sequence's own seed:
 * the teams' masses give the share where the draw falls, and that share
 * alone is walked. */
static inline GPUOS_HD uint32_t sample(struct model *m, uint32_t sq, uint32_t nthreads)
{
	const float *lg = m->logits + (uint64_t)sq * m->n_vocab;
	uint32_t nt = argmax_teams(m, nthreads), best = m->best[sq], k;
	uint64_t *seed = &m->seeds[sq], b, e, i;
	double sum = 0.0, u, c = 0.0;
	if (m->temp <= 0.0f)
		return best;
	for (k = 0; k < nt; k++)
		sum += m->mass[sq * nt + k];
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	u = (double)(*seed >> 11) / 9007199254740992.0 * sum;
	for (k = 0; k < nt && c + m->mass[sq * nt + k] < u; k++)
		c += m->mass[sq * nt + k];
	if (k == nt)
		return best; /* rounding left u past the last: as the serial walk did */
	part(m->n_vocab, k, nt, &b, &e);
	{
		uint32_t last = best; /* the share's last token of any weight */
		for (i = b; i < e; i++) {
			double wi = weight(m, lg, best, i);
			c += wi;
			if (wi > 0.0)
				last = (uint32_t)i;
			if (c >= u && wi > 0.0)
				return (uint32_t)i;
		}
		return last; /* the walk's rounding fell short of the team's sum */
	}
}

/* Thread 0, after the position pos: each sequence's next id; a sequence
 * that reached the end of its text keeps being computed (the batch moves
 * together) but its length stays. */
static inline GPUOS_HD void next_ids(struct model *m, uint32_t pos, uint32_t nthreads)
{
	uint32_t sq, ended = 0;
	for (sq = 0; sq < m->nb; sq++) {
		uint32_t id = sample(m, sq, nthreads);
		m->ids[sq][pos + 1] = id;
		if (!(m->len[sq] >> 31)) {
			m->len[sq] = pos + 2;
			if (!m->ignore_eos && (m->tok ? gpuos_tok_is_eog(m->tok, (int32_t)id) : id == m->eos))
				m->len[sq] |= 1u << 31; /* the end of its text */
		}
		ended += m->len[sq] >> 31;
	}
	m->n_done = pos + 2;
	if (ended == m->nb)
		m->n_done |= 1u << 31; /* every sequence's end: stop */
}

/* ---- the entry ------------------------------------------------------------------------ */

/* The teams are warps: a block of whole warps on the GPU. */
static inline GPUOS_HD int whole_warps(void)
{
#if GPUOS_ON_GPU
	return blockDim.x % LLAMA_LANES == 0;
#else
	return 1;
#endif
}

/* Thread 0: set up, and publish the model or the failure (its reason in
 * r); 0 when the tokens may begin. */
static inline GPUOS_HD int start(struct gpuos_app_args *a, struct model *m, struct shared *sh, struct rep *r)
{
	if (!whole_warps() || a->vram_len < sizeof(*m) + (1u << 20) || setup(a, m, r)) {
		if (!whole_warps())
			rs(r, "llama: on the GPU --block must be a multiple of 32 (a warp is the engine's unit)\n");
		else if (a->vram_len < sizeof(*m) + (1u << 20))
			rs(r, "llama: needs more vram (--vram-mib)\n");
		a->status = 2;
		/* Publish "failed"; pairs with the others' acquire load of state. */
		gpuos_store_release_dev32(&sh->state, 2);
		return -1;
	}
	m->t_start = gpuos_now_ns();
	/* Publish the model's tables; pairs with the others' acquire load. */
	gpuos_store_release_dev32(&sh->state, 1);
	return 0;
}

/* Collect the loads still in flight: posted before the end of the text,
 * or before a failure. */
static inline GPUOS_HD void drain_loads(struct gpuos_app_args *a, struct model *m)
{
	for (; m->pend_n; m->pend_n--, m->pend_head = (m->pend_head + 1u) % 2u)
		gpuos_model_wait_tensors((struct gpuos_mbox *)(uintptr_t)a->mbox, m->pend[m->pend_head].slot, T_PER_LAYER,
					 NULL);
}

/* Sequence 0's generated text (its first n_all ids), decoded. */
static inline GPUOS_HD void report_text(struct model *m, uint32_t n_all, struct rep *r)
{
	int64_t n;
	if (!m->tok || n_all <= m->n_prompt)
		return;
	n = gpuos_tok_decode(m->tok, (const int32_t *)m->ids[0] + m->n_prompt, n_all - m->n_prompt, 0, m->text,
			     m->text_cap);
	if (n >= 0) {
		m->text[n < (int64_t)m->text_cap ? n : (int64_t)m->text_cap] = 0;
		rs(r, m->text);
		rs(r, "\n");
	}
}

/* "tokens: P | G" for sequence 0 (what the referee reads), "tokens B:
 * P | G" for the others. */
static inline GPUOS_HD void report_tokens(const struct model *m, struct rep *r)
{
	uint32_t sq, pos;
	for (sq = 0; sq < m->nb; sq++) {
		uint32_t n = m->len[sq] & ~(1u << 31);
		rs(r, "tokens");
		if (sq) {
			rs(r, " ");
			rn(r, sq);
		}
		rs(r, ":");
		for (pos = 0; pos < n; pos++) {
			rs(r, pos == m->n_prompt ? " |" : "");
			rs(r, " ");
			rn(r, m->ids[sq][pos]);
		}
		rs(r, "\n");
	}
}

/* The run's rates: tokens/s, the load rate and compute's wait for the
 * loads; with a batch, its tokens/s in all. n_all: sequence 0's ids. */
static inline GPUOS_HD void report_rate(const struct gpuos_app_args *a, const struct model *m, uint32_t n_all,
					struct rep *r)
{
	uint64_t ns = m->t_end - m->t_start, gen = n_all - m->n_prompt, steps = (m->n_done & ~(1u << 31)) - 1u;
	rs(r, "llama: ");
	rn(r, m->n_layer);
	rs(r, " layers (");
	rn(r, m->resident);
	rs(r, m->by_budget ? " resident, as --vram-gib allows), " : " resident), ");
	rn(r, gen);
	rs(r, m->len[0] >> 31 ? " tokens (then the end of the text) in " : " tokens in ");
	rf(r, ns / 1000u, 1000u, 3, 0);
	rs(r, " ms: ");
	rf(r, ns ? steps * 1000000000000ull / ns : 0, 1000u, 3, 0);
	rs(r, " tokens/s (prompt included), streamed ");
	rn(r, m->load_bytes);
	rs(r, " bytes at ");
	rf(r, ns ? m->load_bytes * 1000u / ns : 0, 1000u, 3, 0);
	rs(r, " GB/s over the run, compute waited ");
	rf(r, m->stall_ns / 1000u, 1000u, 3, 0);
	rs(r, " ms for them");
	rs(r, a->on_gpu ? " on the GPU\n" : " (host mode)\n");
	if (m->nb > 1) {
		/* each position computed is a token of every sequence */
		rs(r, "llama: batch ");
		rn(r, m->nb);
		rs(r, ": ");
		rf(r, ns ? steps * m->nb * 1000000000000ull / ns : 0, 1000u, 3, 0);
		rs(r, " tokens/s in all, ");
		rf(r, ns ? steps * 1000000000000ull / ns : 0, 1000u, 3, 0);
		rs(r, " a sequence (prompt included)\n");
	}
}

/* --timeline: the last token's layers, microseconds from its start. */
static inline GPUOS_HD void report_layers(const struct model *m, struct rep *r)
{
	uint32_t l;
	rs(r, "timeline: layer load_posted load_landed compute_begin compute_end (us from the last token's start)\n");
	for (l = 0; l < m->n_layer; l++) {
		uint64_t t0 = m->t_token;
		rs(r, "timeline: ");
		rn(r, l);
		if (l < m->resident) {
			rs(r, " resident - -");
		} else {
			/* posted during the token before: negative */
			rs(r, m->t_post[l] < t0 ? " -" : " ");
			rf(r, (m->t_post[l] < t0 ? t0 - m->t_post[l] : m->t_post[l] - t0) / 1000u, 1u, 0, 0);
			rs(r, " ");
			rf(r, (m->t_ready[l] - t0) / 1000u, 1u, 0, 0);
		}
		rs(r, " ");
		rf(r, (m->t_begin[l] - t0) / 1000u, 1u, 0, 0);
		rs(r, " ");
		rf(r, (m->t_done[l] - t0) / 1000u, 1u, 0, 0);
		rs(r, "\n");
	}
}

/* --timeline: the last token's steps, mean microseconds over the layers. */
static inline GPUOS_HD void report_steps(const struct model *m, struct rep *r)
{
	uint32_t l, k;
	rs(r, "timeline: steps (us, mean of the last token's layers):");
	for (k = 0; k < S_STEPS; k++) {
		uint64_t sum = 0;
		for (l = 0; l < m->n_layer; l++)
			sum += m->t_step[l][k] - (k ? m->t_step[l][k - 1] : m->t_begin[l]);
		rs(r, " ");
		rs(r, sname(k));
		rs(r, "=");
		rf(r, sum / m->n_layer, 1000u, 1, 0);
	}
	rs(r, "\n");
}

GPUOS_HD static void llama_main(struct gpuos_app_args *a, uint32_t tid, uint32_t nthreads)
{
	struct shared *sh = (struct shared *)(uintptr_t)a->scratch;
	struct model *m = (struct model *)(uintptr_t)a->vram;
	uint32_t spins = 0, pos, n_all, fail = 0, *failp = &sh->rsvd[0];
	struct rep r;
	r.p = (char *)(uintptr_t)a->out;
	r.n = 0;
	r.cap = a->out_len;
	if (tid == 0 && start(a, m, sh, &r))
		return;
	while (gpuos_load_acquire_dev32(&sh->state) == 0)
		gpuos_backoff(&spins);
	if (gpuos_load_acquire_dev32(&sh->state) == 2)
		return;
	n_all = m->n_prompt + m->n_gen;
	m->n_done = m->n_prompt;
	for (pos = 0; pos + 1 < n_all; pos++) {
		fail = forward(a, m, sh, pos, tid, nthreads, failp, pos + 2u < n_all);
		if (fail)
			break;
		if (pos + 1 >= m->n_prompt) {
			uint32_t sq;
			argmax_part(m, tid, nthreads);
			barrier(sh, nthreads); /* every team's best before thread 0 joins them */
			if (tid == 0)
				for (sq = 0; sq < m->nb; sq++)
					m->best[sq] = argmax_join(m, sq, nthreads);
			if (m->temp > 0.0f) {
				barrier(sh, nthreads); /* the largest of each sequence before the masses */
				mass_part(m, tid, nthreads);
				barrier(sh, nthreads); /* every team's mass before thread 0 draws */
			}
		}
		if (tid == 0 && pos + 1 >= m->n_prompt)
			next_ids(m, pos, nthreads);
		barrier(sh, nthreads);
		if (m->n_done >> 31)
			break;
	}
	if (tid != 0)
		return;
	m->t_end = gpuos_now_ns();
	drain_loads(a, m);
	if (fail) {
		rs(&r, "llama: loading weights at position ");
		rn(&r, pos);
		rs(&r, ": ");
		rs(&r, stname(fail));
		rs(&r, "\n");
		a->status = 1;
	}
	n_all = m->len[0] & ~(1u << 31); /* sequence 0's: its text and ids first */
	report_text(m, n_all, &r);
	report_tokens(m, &r);
	report_rate(a, m, n_all, &r);
	if (m->timeline && !fail && n_all > 1u) { /* a forward pass ran */
		report_layers(m, &r);
		report_steps(m, &r);
	}
	gpuos_close((struct gpuos_mbox *)(uintptr_t)a->mbox, m->handle);
}

GPUOS_APP_ENTRY(llama)
