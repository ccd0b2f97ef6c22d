/* SPDX-License-Identifier: MIT */
/*
 * apps/llama/tokenizer.h - the tokenizer of a llama-family model, built from
 * the vocabulary in its GGUF file, with llama.cpp's behaviour. Its referee is
 * llama.cpp itself: tests/emu/llama_tok.sh compares ids and texts with
 * node-llama-cpp's build of it (tests/tools/llama_ref.mjs).
 *
 * Portable C (C11 and C++, gcc and nvcc): every function is GPUOS_HD, nothing
 * allocates, nothing is global but the read-only tables inside the functions
 * that use them (nvcc places those in the module's memory); no libc.
 *
 *   tokenizer.ggml.model "llama" (SentencePiece-style): a space in front of
 *     the text (tokenizer.ggml.add_space_prefix, default true) and after each
 *     special token, spaces become U+2581, the symbols (UTF-8 characters)
 *     merge pairwise, the pair whose token has the best tokenizer.ggml.scores
 *     first (the leftmost of equals), and a symbol that is no token becomes
 *     its byte tokens <0xXX>.
 *   tokenizer.ggml.model "gpt2" (byte-level BPE): the pre-tokenizer that
 *     tokenizer.ggml.pre names splits the text into words, each word's bytes
 *     become GPT-2's 256 printable characters, and symbols merge by the rank
 *     of tokenizer.ggml.merges (lowest first, the leftmost of equals).
 *     Pre-tokenizers, as llama.cpp groups the names (gpuos_tok_pre_of):
 *       absent, "default"               [\p{P}$+<=>^~|]+, GPT-2's, \p{N}+, 3 digits
 *       "gpt-2" "mpt" "olmo" "phi-2" ...  GPT-2's regex
 *       "starcoder" "refact" "smollm" ... single digits, then GPT-2's
 *       "falcon"                        punctuation runs, GPT-2's, 3 digits
 *       "deepseek-llm" "deepseek-coder" their regexes (letters, punctuation, CJK)
 *       "llama-bpe" "llama3" "dbrx" ...  llama3's (digits by 3; "llama-bpe",
 *                                       "llama3": a word that is a token is
 *                                       that token, BOS added by default)
 *       "qwen2" "stablelm2" ...         llama3's with single digits
 *   Before either, tokens of type user-defined (with GPUOS_TOK_PARSE_SPECIAL
 *   also control and unknown ones) are cut out of the text wherever their
 *   text occurs, the longest first.
 *   Anything else is refused by name (GPUOS_TOK_E_UNSUPPORTED and a reason):
 *   other models ("bert", "t5", "rwkv", "gemma4" ...) and other pre-tokenizers.
 *
 * Use:
 *   struct gpuos_tok_src s; gpuos_tok_src_clear(&s);
 *   s.model, s.model_len = tokenizer.ggml.model's bytes (pre, name likewise);
 *   s.tokens, s.tokens_len = the encoded value of tokenizer.ggml.tokens as it
 *     lies in the file (gpuos_gguf_kv.val_off, val_bytes: element type, count,
 *     items); scores, types (token_type) and merges likewise;
 *   s.id[k] = the value of the KV gpuos_tok_key_name(k) (ids), s.add_bos ...;
 *   gpuos_tok_init(&s, NULL, 0, &need, why, sizeof why)     -> GPUOS_TOK_E_NOSPC, need
 *   gpuos_tok_init(&s, arena, need, &need, why, sizeof why) -> GPUOS_TOK_OK
 *   const struct gpuos_tok *t = (const struct gpuos_tok *)arena;
 *   n = gpuos_tok_encode(t, text, len, GPUOS_TOK_ADD_SPECIAL, ids, cap,
 *                        work, gpuos_tok_work_bytes(len))   (n > cap: call again)
 *   m = gpuos_tok_decode(t, ids, n, 0, out, out_cap)          (m > out_cap: likewise)
 * The arena (8-byte aligned) holds all that encode and decode read, at
 * offsets from its start: build it on the host and copy it to the GPU, or
 * build it there; any number of threads may use it at once, each with its
 * own work area. The source arrays are not needed after init.
 *
 * llama.cpp's behaviour (src/llama-vocab.cpp and src/unicode.cpp of the
 * build node-llama-cpp 3.22.1 ships), including its quirks:
 *  - token texts are unique (llama.cpp asserts it); an empty one reads
 *    "[EMPTY_<id>]"; scores may be a float32 or an int32 array;
 *  - default ids: "llama" bos 1, eos 2, unk 0; "gpt2" bos = eos = 11, each
 *    dropped when out of range; a KV's id out of range is ignored;
 *  - its fix-ups by text: end-of-generation and fill-in-the-middle texts
 *    ("<|eot_id|>", "<|endoftext|>", "</s>", "<｜fim▁begin｜>" ...) become
 *    control tokens (so plain text does not produce them) and end generation
 *    (GPUOS_TOK_A_EOG), control tokens named "unused", phi-3's special tokens
 *    (general.name "phi-3"/"phi3") eat the spaces after them;
 *  - the clean-up of spaces in decoded text ("a ." -> "a.", " 's" ...) for
 *    the pre-tokenizers that have it, the first piece's leading space
 *    dropped where a space prefix is added;
 *  - text that is not UTF-8: "llama" takes a lead byte's length, "gpt2" reads
 *    a bad byte as U+FFFD; a byte of no token: "gpt2" drops it;
 *  - Unicode categories from UnicodeData.txt 15.1 (the table below, equal to
 *    llama.cpp's code point for code point), \s is White_Space.
 * Where llama.cpp's result is not defined, this picks: a fill-in-the-middle
 * text of each kind becomes control for every such token, not just the first
 * its hash map meets; special tokens of equal length are cut out in id order
 * (its sort leaves that open: only two overlapping ones could tell); "llama"
 * falls back to the unknown token for a byte with no token (llama.cpp throws).
 */
#ifndef GPUOS_APPS_LLAMA_TOKENIZER_H
#define GPUOS_APPS_LLAMA_TOKENIZER_H

#include "gpuos/port.h"

/* ---- constants ---------------------------------------------------------------- */

#define GPUOS_TOK_MAGIC   0x4b4f5447u /* "GTOK" */
#define GPUOS_TOK_VERSION 1u

/* Results (negative); the reason of an init failure is written to why. */
#define GPUOS_TOK_OK             0
#define GPUOS_TOK_E_NOSPC      (-1) /* arena or work area too small: *need says how much */
#define GPUOS_TOK_E_UNSUPPORTED (-2) /* a model or pre-tokenizer this does not implement */
#define GPUOS_TOK_E_INVALID    (-3) /* a malformed vocabulary (array type, count, bounds) */
#define GPUOS_TOK_E_ARENA      (-4) /* not an arena that gpuos_tok_init built */
#define GPUOS_TOK_E_TOKEN      (-5) /* a token id out of range */

/* struct gpuos_tok.type */
#define GPUOS_TOK_SPM 1u /* tokenizer.ggml.model "llama" */
#define GPUOS_TOK_BPE 2u /* tokenizer.ggml.model "gpt2" */

/* struct gpuos_tok.pre: the pre-tokenizer of a BPE vocabulary (llama.cpp's
 * LLAMA_VOCAB_PRE_TYPE_* that share its splitting) */
#define GPUOS_TOK_PRE_NONE           0u /* SPM */
#define GPUOS_TOK_PRE_DEFAULT        1u /* absent or "default" */
#define GPUOS_TOK_PRE_GPT2           2u /* "gpt-2", "mpt", "olmo", ... */
#define GPUOS_TOK_PRE_STARCODER      3u /* "starcoder", "refact", ...: digits alone, then GPT-2 */
#define GPUOS_TOK_PRE_FALCON         4u
#define GPUOS_TOK_PRE_DEEPSEEK_LLM   5u
#define GPUOS_TOK_PRE_DEEPSEEK_CODER 6u
#define GPUOS_TOK_PRE_LLAMA3         7u /* "llama-bpe", "llama3", "dbrx", "smaug-bpe", ... */
#define GPUOS_TOK_PRE_QWEN2          8u /* "qwen2", "stablelm2", ...: llama3's with single digits */

/* struct gpuos_tok.flags */
#define GPUOS_TOK_F_ADD_BOS       (1u << 0) /* add_special adds the BOS token */
#define GPUOS_TOK_F_ADD_EOS       (1u << 1) /* add_special adds the EOS token */
#define GPUOS_TOK_F_SPACE_PREFIX  (1u << 2) /* SPM: " " before the text (and after special tokens) */
#define GPUOS_TOK_F_CLEAN_SPACES  (1u << 3) /* decode drops " " before ?!., and in " 's" ... */
#define GPUOS_TOK_F_IGNORE_MERGES (1u << 4) /* BPE: a word that is a token is that token */

/* gpuos_tok_encode flags (llama_tokenize's add_special, parse_special) */
#define GPUOS_TOK_ADD_SPECIAL   (1u << 0) /* BOS first and EOS last as the vocabulary says */
#define GPUOS_TOK_PARSE_SPECIAL (1u << 1) /* control tokens' texts in the text are those tokens */
/* gpuos_tok_decode flags (llama_detokenize's remove_special, unparse_special) */
#define GPUOS_TOK_REMOVE_SPECIAL  (1u << 0) /* drop a leading BOS and trailing EOS the vocabulary adds */
#define GPUOS_TOK_UNPARSE_SPECIAL (1u << 1) /* control and unknown tokens give their text (else nothing) */

/* Token attributes (the values of llama.cpp's llama_token_attr), and EOG. */
#define GPUOS_TOK_A_UNKNOWN      (1u << 0)
#define GPUOS_TOK_A_UNUSED       (1u << 1)
#define GPUOS_TOK_A_NORMAL       (1u << 2)
#define GPUOS_TOK_A_CONTROL      (1u << 3)
#define GPUOS_TOK_A_USER_DEFINED (1u << 4)
#define GPUOS_TOK_A_BYTE         (1u << 5)
#define GPUOS_TOK_A_LSTRIP       (1u << 7)
#define GPUOS_TOK_A_RSTRIP       (1u << 8)
#define GPUOS_TOK_A_EOG          (1u << 15) /* ends generation (EOS, EOT, "<|im_end|>" ...) */

/* tokenizer.ggml.token_type values (gguf.md) */
#define GPUOS_TOK_TYPE_NORMAL       1
#define GPUOS_TOK_TYPE_UNKNOWN      2
#define GPUOS_TOK_TYPE_CONTROL      3
#define GPUOS_TOK_TYPE_USER_DEFINED 4
#define GPUOS_TOK_TYPE_UNUSED       5
#define GPUOS_TOK_TYPE_BYTE         6

/* Special token ids: struct gpuos_tok.id[] (-1: none) */
#define GPUOS_TOK_ID_BOS     0
#define GPUOS_TOK_ID_EOS     1
#define GPUOS_TOK_ID_EOT     2
#define GPUOS_TOK_ID_EOM     3
#define GPUOS_TOK_ID_UNK     4
#define GPUOS_TOK_ID_SEP     5
#define GPUOS_TOK_ID_PAD     6
#define GPUOS_TOK_ID_MASK    7
#define GPUOS_TOK_ID_FIM_PRE 8
#define GPUOS_TOK_ID_FIM_SUF 9
#define GPUOS_TOK_ID_FIM_MID 10
#define GPUOS_TOK_ID_FIM_PAD 11
#define GPUOS_TOK_ID_FIM_REP 12
#define GPUOS_TOK_ID_FIM_SEP 13
#define GPUOS_TOK_ID_COUNT   14

/* The KVs that set them, in llama.cpp's order (the deprecated prefix,
 * suffix and middle keys last: they win): gpuos_tok_key_name(k), and the
 * slot of id[] each sets, gpuos_tok_key_slot(k). */
#define GPUOS_TOK_KEY_COUNT 17

#define GPUOS_TOK_WHY_MAX 160u /* a reason fits in this */

/* ---- what init reads ---------------------------------------------------------------- */

/* The vocabulary KVs of a GGUF. Strings: their bytes (not NUL-terminated),
 * NULL when the key is absent. Arrays: the encoded value as in the file
 * (u32 element type, u64 count, the items: a string is u64 length + bytes),
 * NULL when absent. Little-endian, any alignment. */
struct gpuos_tok_src {
	const char *model;       /* tokenizer.ggml.model (required) */
	const char *pre;         /* tokenizer.ggml.pre */
	const char *name;        /* general.name (phi-3's special tokens strip spaces on their right) */
	uint32_t model_len, pre_len, name_len, rsvd;
	const uint8_t *tokens;   /* tokenizer.ggml.tokens: array of string (required) */
	const uint8_t *scores;   /* tokenizer.ggml.scores: array of float32 (or int32) */
	const uint8_t *types;    /* tokenizer.ggml.token_type: array of int32 */
	const uint8_t *merges;   /* tokenizer.ggml.merges: array of string (required for "gpt2") */
	uint64_t tokens_len, scores_len, types_len, merges_len; /* bytes of each value */
	int64_t id[GPUOS_TOK_KEY_COUNT]; /* the KVs of gpuos_tok_key_name(k); -1: absent */
	int32_t add_bos;         /* tokenizer.ggml.add_bos_token: 0, 1; -1: absent */
	int32_t add_eos;         /* tokenizer.ggml.add_eos_token */
	int32_t add_space_prefix; /* tokenizer.ggml.add_space_prefix */
	int32_t rsvd2;
};

/* ---- the arena ---------------------------------------------------------------------- */

/* At the start of the arena; every *_off is a byte offset from it. */
struct gpuos_tok {
	uint32_t magic;          /* GPUOS_TOK_MAGIC */
	uint32_t version;        /* GPUOS_TOK_VERSION */
	uint32_t type;           /* GPUOS_TOK_SPM, GPUOS_TOK_BPE */
	uint32_t pre;            /* GPUOS_TOK_PRE_* */
	uint32_t flags;          /* GPUOS_TOK_F_* */
	uint32_t n_tokens;
	uint32_t n_merges;       /* merges kept (BPE) */
	uint32_t n_special;      /* ids cut out of the text before tokenizing (special_off) */
	uint32_t hash_cap;       /* slots of the token hash (a power of two) */
	uint32_t merge_cap;      /* slots of the merge hash */
	uint32_t max_token_len;
	uint32_t rsvd;
	int32_t id[GPUOS_TOK_ID_COUNT]; /* GPUOS_TOK_ID_*; -1: none */
	int32_t byte_tok[256];   /* SPM: the token of "<0xXX>" (else of the byte); BPE: of the byte; -1 */
	uint64_t text_idx_off;   /* uint32[n_tokens + 1]: token i is text[idx[i] .. idx[i + 1]) */
	uint64_t text_off;       /* the token texts, back to back */
	uint64_t score_off;      /* float[n_tokens] */
	uint64_t attr_off;       /* uint16[n_tokens]: GPUOS_TOK_A_* */
	uint64_t hash_off;       /* uint32[hash_cap]: token id + 1, 0 empty */
	uint64_t merge_idx_off;  /* uint32[n_merges + 1] into merge_text */
	uint64_t merge_text_off; /* the merges ("left right"), back to back, in rank order */
	uint64_t merge_hash_off; /* uint32[merge_cap]: rank + 1, 0 empty */
	uint64_t special_off;    /* int32[n_special]: longest text first */
	uint64_t total;          /* bytes of the arena used */
};

/* ---- small helpers ----------------------------------------------------------------------- */

#define GPUOS_TOK_FN static inline GPUOS_HD
/* the big entry points: kept as calls (the GPU compiles them once) */
#define GPUOS_TOK_ENTRY static __attribute__((unused)) GPUOS_NOINLINE GPUOS_HD

GPUOS_TOK_FN uint32_t gpuos_tok_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

GPUOS_TOK_FN uint64_t gpuos_tok_rd64(const uint8_t *p)
{
	return (uint64_t)gpuos_tok_rd32(p) | ((uint64_t)gpuos_tok_rd32(p + 4) << 32);
}

GPUOS_TOK_FN int gpuos_tok_eq(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	uint32_t i;
	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* a (len) equals the NUL-terminated s */
GPUOS_TOK_FN int gpuos_tok_eqs(const uint8_t *a, uint32_t len, const char *s)
{
	uint32_t i;
	for (i = 0; i < len; i++)
		if (s[i] == 0 || (uint8_t)s[i] != a[i])
			return 0;
	return s[len] == 0;
}

GPUOS_TOK_FN uint32_t gpuos_tok_fnv(uint32_t h, const uint8_t *p, uint32_t n)
{
	uint32_t i;
	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}
#define GPUOS_TOK_FNV0 2166136261u

GPUOS_TOK_FN uint64_t gpuos_tok_align8(uint64_t v)
{
	return (v + 7u) & ~(uint64_t)7u;
}

/* Append s to why (cap bytes, NUL kept); *at is the length so far. */
GPUOS_TOK_FN void gpuos_tok_why(char *why, uint32_t cap, uint32_t *at, const char *s, uint32_t n)
{
	uint32_t i;
	if (!why || !cap)
		return;
	for (i = 0; (n == 0xffffffffu ? s[i] != 0 : i < n) && *at + 1 < cap; i++) {
		char c = s[i];
		why[(*at)++] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	why[*at] = 0;
}
#define GPUOS_TOK_WHY(s) gpuos_tok_why(why, why_len, &wl, (s), 0xffffffffu)

GPUOS_TOK_FN const char *gpuos_tok_strerror(int rc)
{
	switch (rc) {
	case GPUOS_TOK_OK: return "ok";
	case GPUOS_TOK_E_NOSPC: return "arena or work area too small";
	case GPUOS_TOK_E_UNSUPPORTED: return "tokenizer not supported";
	case GPUOS_TOK_E_INVALID: return "malformed vocabulary";
	case GPUOS_TOK_E_ARENA: return "not a tokenizer arena";
	case GPUOS_TOK_E_TOKEN: return "token id out of range";
	default: return "unknown error";
	}
}

GPUOS_TOK_FN const char *gpuos_tok_key_name(uint32_t k)
{
	switch (k) {
	case 0: return "tokenizer.ggml.bos_token_id";
	case 1: return "tokenizer.ggml.eos_token_id";
	case 2: return "tokenizer.ggml.eot_token_id";
	case 3: return "tokenizer.ggml.eom_token_id";
	case 4: return "tokenizer.ggml.unknown_token_id";
	case 5: return "tokenizer.ggml.seperator_token_id"; /* sic, as in GGUF files */
	case 6: return "tokenizer.ggml.padding_token_id";
	case 7: return "tokenizer.ggml.mask_token_id";
	case 8: return "tokenizer.ggml.fim_pre_token_id";
	case 9: return "tokenizer.ggml.fim_suf_token_id";
	case 10: return "tokenizer.ggml.fim_mid_token_id";
	case 11: return "tokenizer.ggml.fim_pad_token_id";
	case 12: return "tokenizer.ggml.fim_rep_token_id";
	case 13: return "tokenizer.ggml.fim_sep_token_id";
	case 14: return "tokenizer.ggml.prefix_token_id";
	case 15: return "tokenizer.ggml.suffix_token_id";
	case 16: return "tokenizer.ggml.middle_token_id";
	default: return 0;
	}
}

GPUOS_TOK_FN uint32_t gpuos_tok_key_slot(uint32_t k)
{
	return k < 14u ? k : k == 14u ? GPUOS_TOK_ID_FIM_PRE : k == 15u ? GPUOS_TOK_ID_FIM_SUF : GPUOS_TOK_ID_FIM_MID;
}

GPUOS_TOK_FN void gpuos_tok_src_clear(struct gpuos_tok_src *s)
{
	uint32_t k;
	uint8_t *p = (uint8_t *)s;
	for (k = 0; k < sizeof(*s); k++)
		p[k] = 0;
	for (k = 0; k < GPUOS_TOK_KEY_COUNT; k++)
		s->id[k] = -1;
	s->add_bos = s->add_eos = s->add_space_prefix = -1;
}

/* ---- arena access -------------------------------------------------------------------------- */

GPUOS_TOK_FN const uint8_t *gpuos_tok_base(const struct gpuos_tok *t)
{
	return (const uint8_t *)t;
}

GPUOS_TOK_FN const uint8_t *gpuos_tok_text(const struct gpuos_tok *t, int32_t id, uint32_t *len)
{
	const uint32_t *idx = (const uint32_t *)(gpuos_tok_base(t) + t->text_idx_off);
	*len = idx[id + 1] - idx[id];
	return gpuos_tok_base(t) + t->text_off + idx[id];
}

GPUOS_TOK_FN uint32_t gpuos_tok_attr(const struct gpuos_tok *t, int32_t id)
{
	if (id < 0 || (uint32_t)id >= t->n_tokens)
		return 0;
	return ((const uint16_t *)(gpuos_tok_base(t) + t->attr_off))[id];
}

GPUOS_TOK_FN float gpuos_tok_score(const struct gpuos_tok *t, int32_t id)
{
	return ((const float *)(gpuos_tok_base(t) + t->score_off))[id];
}

/* The token whose text is s (len bytes), or -1. */
GPUOS_TOK_FN int32_t gpuos_tok_lookup(const struct gpuos_tok *t, const uint8_t *s, uint32_t len)
{
	const uint32_t *slot = (const uint32_t *)(gpuos_tok_base(t) + t->hash_off);
	uint32_t mask = t->hash_cap - 1u, i = gpuos_tok_fnv(GPUOS_TOK_FNV0, s, len) & mask, tl;
	for (;;) {
		uint32_t v = slot[i];
		const uint8_t *tx;
		if (!v)
			return -1;
		tx = gpuos_tok_text(t, (int32_t)(v - 1u), &tl);
		if (tl == len && gpuos_tok_eq(tx, s, len))
			return (int32_t)(v - 1u);
		i = (i + 1u) & mask;
	}
}

GPUOS_TOK_FN int32_t gpuos_tok_lookup_s(const struct gpuos_tok *t, const char *s)
{
	uint32_t n = 0;
	while (s[n])
		n++;
	return gpuos_tok_lookup(t, (const uint8_t *)s, n);
}

/* The rank of the merge "a b" (a, b: symbol texts), or -1. A merge splits
 * at its first space after the first byte (llama.cpp's find(' ', 1)). */
GPUOS_TOK_FN int32_t gpuos_tok_merge_rank(const struct gpuos_tok *t, const uint8_t *a, uint32_t la,
					 const uint8_t *b, uint32_t lb)
{
	const uint8_t *base = gpuos_tok_base(t);
	const uint32_t *slot = (const uint32_t *)(base + t->merge_hash_off);
	const uint32_t *idx = (const uint32_t *)(base + t->merge_idx_off);
	const uint8_t *mt = base + t->merge_text_off;
	uint32_t mask, i, h;
	const uint8_t sp = ' ';
	if (!t->merge_cap || la == 0)
		return -1;
	h = gpuos_tok_fnv(gpuos_tok_fnv(gpuos_tok_fnv(GPUOS_TOK_FNV0, a, la), &sp, 1), b, lb);
	mask = t->merge_cap - 1u;
	for (i = h & mask;; i = (i + 1u) & mask) {
		uint32_t v = slot[i], k;
		const uint8_t *m;
		if (!v)
			return -1;
		m = mt + idx[v - 1u];
		if (idx[v] - idx[v - 1u] != la + 1u + lb || m[la] != ' ' || !gpuos_tok_eq(m, a, la) ||
		    !gpuos_tok_eq(m + la + 1u, b, lb))
			continue;
		for (k = 1; k < la && m[k] != ' '; k++)
			;
		if (k == la)
			return (int32_t)(v - 1u);
	}
}

GPUOS_TOK_FN int gpuos_tok_is_eog(const struct gpuos_tok *t, int32_t id)
{
	return (gpuos_tok_attr(t, id) & GPUOS_TOK_A_EOG) != 0;
}

/* ---- Unicode ----------------------------------------------------------------------------------- */

/* Categories: 0 unassigned (Cn), 1 letter (L*), 2 number (N*), 3 punctuation
 * (P*), 4 mark (M*), 5 symbol (S*), 6 separator (Z*), 7 other (Cc Cf Co Cs). */
#define GPUOS_TOK_CAT_L 1u
#define GPUOS_TOK_CAT_N 2u
#define GPUOS_TOK_CAT_P 3u

/* The White_Space property (PropList.txt), what llama.cpp's \s is. */
GPUOS_TOK_FN int gpuos_tok_is_ws(uint32_t c)
{
	return (c >= 9u && c <= 13u) || c == 32u || c == 0x85u || c == 0xa0u || c == 0x1680u ||
	       (c >= 0x2000u && c <= 0x200au) || c == 0x2028u || c == 0x2029u || c == 0x202fu ||
	       c == 0x205fu || c == 0x3000u;
}

/*
 * The general category of every code point, as runs: (first << 3) | category,
 * from UnicodeData.txt of Unicode 15.0 (Debian's unicode-data) with the 627
 * characters Unicode 15.1 added (U+2EBF0..2EE5D Lo, U+2FFC..2FFF and U+31EF
 * So), which is what llama.cpp's unicode-data.cpp holds (compared code point
 * by code point when this was written). Made by:
 *   cat = {L:1, N:2, P:3, M:4, S:5, Z:6, C:7}[field 2 [0]], Cn = 0, ranges
 *   "<..., First>" .. "<..., Last>" filled; one entry per change of category.
 * whole: a generated data table and its ten-line binary search; cut in
 * pieces, the runs could no longer be compared with their source at once.
 */
GPUOS_TOK_FN uint32_t gpuos_tok_ucat(uint32_t cp)
{
	static const uint32_t runs[] = {
		0x0000007u, 0x0000106u, 0x000010bu, 0x0000125u, 0x000012bu, 0x000015du, 0x0000163u, 0x0000182u,
		0x00001d3u, 0x00001e5u, 0x00001fbu, 0x0000209u, 0x00002dbu, 0x00002f5u, 0x00002fbu, 0x0000305u,
		0x0000309u, 0x00003dbu, 0x00003e5u, 0x00003ebu, 0x00003f5u, 0x00003ffu, 0x0000506u, 0x000050bu,
		0x0000515u, 0x000053bu, 0x0000545u, 0x0000551u, 0x000055bu, 0x0000565u, 0x000056fu, 0x0000575u,
		0x0000592u, 0x00005a5u, 0x00005a9u, 0x00005b3u, 0x00005c5u, 0x00005cau, 0x00005d1u, 0x00005dbu,
		0x00005e2u, 0x00005fbu, 0x0000601u, 0x00006bdu, 0x00006c1u, 0x00007bdu, 0x00007c1u, 0x0001615u,
		0x0001631u, 0x0001695u, 0x0001701u, 0x000172du, 0x0001761u, 0x000176du, 0x0001771u, 0x000177du,
		0x0001804u, 0x0001b81u, 0x0001badu, 0x0001bb1u, 0x0001bc0u, 0x0001bd1u, 0x0001bf3u, 0x0001bf9u,
		0x0001c00u, 0x0001c25u, 0x0001c31u, 0x0001c3bu, 0x0001c41u, 0x0001c58u, 0x0001c61u, 0x0001c68u,
		0x0001c71u, 0x0001d10u, 0x0001d19u, 0x0001fb5u, 0x0001fb9u, 0x0002415u, 0x000241cu, 0x0002451u,
		0x0002980u, 0x0002989u, 0x0002ab8u, 0x0002ac9u, 0x0002ad3u, 0x0002b01u, 0x0002c4bu, 0x0002c58u,
		0x0002c6du, 0x0002c80u, 0x0002c8cu, 0x0002df3u, 0x0002dfcu, 0x0002e03u, 0x0002e0cu, 0x0002e1bu,
		0x0002e24u, 0x0002e33u, 0x0002e3cu, 0x0002e40u, 0x0002e81u, 0x0002f58u, 0x0002f79u, 0x0002f9bu,
		0x0002fa8u, 0x0003007u, 0x0003035u, 0x000304bu, 0x000305du, 0x0003063u, 0x0003075u, 0x0003084u,
		0x00030dbu, 0x00030e7u, 0x00030ebu, 0x0003101u, 0x000325cu, 0x0003302u, 0x0003353u, 0x0003371u,
		0x0003384u, 0x0003389u, 0x00036a3u, 0x00036a9u, 0x00036b4u, 0x00036efu, 0x00036f5u, 0x00036fcu,
		0x0003729u, 0x000373cu, 0x000374du, 0x0003754u, 0x0003771u, 0x0003782u, 0x00037d1u, 0x00037edu,
		0x00037f9u, 0x0003803u, 0x0003870u, 0x000387fu, 0x0003881u, 0x000388cu, 0x0003891u, 0x0003984u,
		0x0003a58u, 0x0003a69u, 0x0003d34u, 0x0003d89u, 0x0003d90u, 0x0003e02u, 0x0003e51u, 0x0003f5cu,
		0x0003fa1u, 0x0003fb5u, 0x0003fbbu, 0x0003fd1u, 0x0003fd8u, 0x0003fecu, 0x0003ff5u, 0x0004001u,
		0x00040b4u, 0x00040d1u, 0x00040dcu, 0x0004121u, 0x000412cu, 0x0004141u, 0x000414cu, 0x0004170u,
		0x0004183u, 0x00041f8u, 0x0004201u, 0x00042ccu, 0x00042e0u, 0x00042f3u, 0x00042f8u, 0x0004301u,
		0x0004358u, 0x0004381u, 0x0004445u, 0x0004449u, 0x0004478u, 0x0004487u, 0x0004490u, 0x00044c4u,
		0x0004501u, 0x0004654u, 0x0004717u, 0x000471cu, 0x0004821u, 0x00049d4u, 0x00049e9u, 0x00049f4u,
		0x0004a81u, 0x0004a8cu, 0x0004ac1u, 0x0004b14u, 0x0004b23u, 0x0004b32u, 0x0004b83u, 0x0004b89u,
		0x0004c0cu, 0x0004c20u, 0x0004c29u, 0x0004c68u, 0x0004c79u, 0x0004c88u, 0x0004c99u, 0x0004d48u,
		0x0004d51u, 0x0004d88u, 0x0004d91u, 0x0004d98u, 0x0004db1u, 0x0004dd0u, 0x0004de4u, 0x0004de9u,
		0x0004df4u, 0x0004e28u, 0x0004e3cu, 0x0004e48u, 0x0004e5cu, 0x0004e71u, 0x0004e78u, 0x0004ebcu,
		0x0004ec0u, 0x0004ee1u, 0x0004ef0u, 0x0004ef9u, 0x0004f14u, 0x0004f20u, 0x0004f32u, 0x0004f81u,
		0x0004f95u, 0x0004fa2u, 0x0004fd5u, 0x0004fe1u, 0x0004febu, 0x0004ff4u, 0x0004ff8u, 0x000500cu,
		0x0005020u, 0x0005029u, 0x0005058u, 0x0005079u, 0x0005088u, 0x0005099u, 0x0005148u, 0x0005151u,
		0x0005188u, 0x0005191u, 0x00051a0u, 0x00051a9u, 0x00051b8u, 0x00051c1u, 0x00051d0u, 0x00051e4u,
		0x00051e8u, 0x00051f4u, 0x0005218u, 0x000523cu, 0x0005248u, 0x000525cu, 0x0005270u, 0x000528cu,
		0x0005290u, 0x00052c9u, 0x00052e8u, 0x00052f1u, 0x00052f8u, 0x0005332u, 0x0005384u, 0x0005391u,
		0x00053acu, 0x00053b3u, 0x00053b8u, 0x000540cu, 0x0005420u, 0x0005429u, 0x0005470u, 0x0005479u,
		0x0005490u, 0x0005499u, 0x0005548u, 0x0005551u, 0x0005588u, 0x0005591u, 0x00055a0u, 0x00055a9u,
		0x00055d0u, 0x00055e4u, 0x00055e9u, 0x00055f4u, 0x0005630u, 0x000563cu, 0x0005650u, 0x000565cu,
		0x0005670u, 0x0005681u, 0x0005688u, 0x0005701u, 0x0005714u, 0x0005720u, 0x0005732u, 0x0005783u,
		0x000578du, 0x0005790u, 0x00057c9u, 0x00057d4u, 0x0005800u, 0x000580cu, 0x0005820u, 0x0005829u,
		0x0005868u, 0x0005879u, 0x0005888u, 0x0005899u, 0x0005948u, 0x0005951u, 0x0005988u, 0x0005991u,
		0x00059a0u, 0x00059a9u, 0x00059d0u, 0x00059e4u, 0x00059e9u, 0x00059f4u, 0x0005a28u, 0x0005a3cu,
		0x0005a48u, 0x0005a5cu, 0x0005a70u, 0x0005aacu, 0x0005ac0u, 0x0005ae1u, 0x0005af0u, 0x0005af9u,
		0x0005b14u, 0x0005b20u, 0x0005b32u, 0x0005b85u, 0x0005b89u, 0x0005b92u, 0x0005bc0u, 0x0005c14u,
		0x0005c19u, 0x0005c20u, 0x0005c29u, 0x0005c58u, 0x0005c71u, 0x0005c88u, 0x0005c91u, 0x0005cb0u,
		0x0005cc9u, 0x0005cd8u, 0x0005ce1u, 0x0005ce8u, 0x0005cf1u, 0x0005d00u, 0x0005d19u, 0x0005d28u,
		0x0005d41u, 0x0005d58u, 0x0005d71u, 0x0005dd0u, 0x0005df4u, 0x0005e18u, 0x0005e34u, 0x0005e48u,
		0x0005e54u, 0x0005e70u, 0x0005e81u, 0x0005e88u, 0x0005ebcu, 0x0005ec0u, 0x0005f32u, 0x0005f9du,
		0x0005fd8u, 0x0006004u, 0x0006029u, 0x0006068u, 0x0006071u, 0x0006088u, 0x0006091u, 0x0006148u,
		0x0006151u, 0x00061d0u, 0x00061e4u, 0x00061e9u, 0x00061f4u, 0x0006228u, 0x0006234u, 0x0006248u,
		0x0006254u, 0x0006270u, 0x00062acu, 0x00062b8u, 0x00062c1u, 0x00062d8u, 0x00062e9u, 0x00062f0u,
		0x0006301u, 0x0006314u, 0x0006320u, 0x0006332u, 0x0006380u, 0x00063bbu, 0x00063c2u, 0x00063fdu,
		0x0006401u, 0x000640cu, 0x0006423u, 0x0006429u, 0x0006468u, 0x0006471u, 0x0006488u, 0x0006491u,
		0x0006548u, 0x0006551u, 0x00065a0u, 0x00065a9u, 0x00065d0u, 0x00065e4u, 0x00065e9u, 0x00065f4u,
		0x0006628u, 0x0006634u, 0x0006648u, 0x0006654u, 0x0006670u, 0x00066acu, 0x00066b8u, 0x00066e9u,
		0x00066f8u, 0x0006701u, 0x0006714u, 0x0006720u, 0x0006732u, 0x0006780u, 0x0006789u, 0x000679cu,
		0x00067a0u, 0x0006804u, 0x0006821u, 0x0006868u, 0x0006871u, 0x0006888u, 0x0006891u, 0x00069dcu,
		0x00069e9u, 0x00069f4u, 0x0006a28u, 0x0006a34u, 0x0006a48u, 0x0006a54u, 0x0006a71u, 0x0006a7du,
		0x0006a80u, 0x0006aa1u, 0x0006abcu, 0x0006ac2u, 0x0006af9u, 0x0006b14u, 0x0006b20u, 0x0006b32u,
		0x0006bcdu, 0x0006bd1u, 0x0006c00u, 0x0006c0cu, 0x0006c20u, 0x0006c29u, 0x0006cb8u, 0x0006cd1u,
		0x0006d90u, 0x0006d99u, 0x0006de0u, 0x0006de9u, 0x0006df0u, 0x0006e01u, 0x0006e38u, 0x0006e54u,
		0x0006e58u, 0x0006e7cu, 0x0006ea8u, 0x0006eb4u, 0x0006eb8u, 0x0006ec4u, 0x0006f00u, 0x0006f32u,
		0x0006f80u, 0x0006f94u, 0x0006fa3u, 0x0006fa8u, 0x0007009u, 0x000718cu, 0x0007191u, 0x00071a4u,
		0x00071d8u, 0x00071fdu, 0x0007201u, 0x000723cu, 0x000727bu, 0x0007282u, 0x00072d3u, 0x00072e0u,
		0x0007409u, 0x0007418u, 0x0007421u, 0x0007428u, 0x0007431u, 0x0007458u, 0x0007461u, 0x0007520u,
		0x0007529u, 0x0007530u, 0x0007539u, 0x000758cu, 0x0007591u, 0x00075a4u, 0x00075e9u, 0x00075f0u,
		0x0007601u, 0x0007628u, 0x0007631u, 0x0007638u, 0x0007644u, 0x0007678u, 0x0007682u, 0x00076d0u,
		0x00076e1u, 0x0007700u, 0x0007801u, 0x000780du, 0x0007823u, 0x000789du, 0x00078a3u, 0x00078adu,
		0x00078c4u, 0x00078d5u, 0x0007902u, 0x00079a5u, 0x00079acu, 0x00079b5u, 0x00079bcu, 0x00079c5u,
		0x00079ccu, 0x00079d3u, 0x00079f4u, 0x0007a01u, 0x0007a40u, 0x0007a49u, 0x0007b68u, 0x0007b8cu,
		0x0007c2bu, 0x0007c34u, 0x0007c41u, 0x0007c6cu, 0x0007cc0u, 0x0007cccu, 0x0007de8u, 0x0007df5u,
		0x0007e34u, 0x0007e3du, 0x0007e68u, 0x0007e75u, 0x0007e83u, 0x0007eadu, 0x0007ecbu, 0x0007ed8u,
		0x0008001u, 0x000815cu, 0x00081f9u, 0x0008202u, 0x0008253u, 0x0008281u, 0x00082b4u, 0x00082d1u,
		0x00082f4u, 0x0008309u, 0x0008314u, 0x0008329u, 0x000833cu, 0x0008371u, 0x000838cu, 0x00083a9u,
		0x0008414u, 0x0008471u, 0x000847cu, 0x0008482u, 0x00084d4u, 0x00084f5u, 0x0008501u, 0x0008630u,
		0x0008639u, 0x0008640u, 0x0008669u, 0x0008670u, 0x0008681u, 0x00087dbu, 0x00087e1u, 0x0009248u,
		0x0009251u, 0x0009270u, 0x0009281u, 0x00092b8u, 0x00092c1u, 0x00092c8u, 0x00092d1u, 0x00092f0u,
		0x0009301u, 0x0009448u, 0x0009451u, 0x0009470u, 0x0009481u, 0x0009588u, 0x0009591u, 0x00095b0u,
		0x00095c1u, 0x00095f8u, 0x0009601u, 0x0009608u, 0x0009611u, 0x0009630u, 0x0009641u, 0x00096b8u,
		0x00096c1u, 0x0009888u, 0x0009891u, 0x00098b0u, 0x00098c1u, 0x0009ad8u, 0x0009aecu, 0x0009b03u,
		0x0009b4au, 0x0009be8u, 0x0009c01u, 0x0009c85u, 0x0009cd0u, 0x0009d01u, 0x0009fb0u, 0x0009fc1u,
		0x0009ff0u, 0x000a003u, 0x000a009u, 0x000b36du, 0x000b373u, 0x000b379u, 0x000b406u, 0x000b409u,
		0x000b4dbu, 0x000b4e8u, 0x000b501u, 0x000b75bu, 0x000b772u, 0x000b789u, 0x000b7c8u, 0x000b801u,
		0x000b894u, 0x000b8b0u, 0x000b8f9u, 0x000b994u, 0x000b9abu, 0x000b9b8u, 0x000ba01u, 0x000ba94u,
		0x000baa0u, 0x000bb01u, 0x000bb68u, 0x000bb71u, 0x000bb88u, 0x000bb94u, 0x000bba0u, 0x000bc01u,
		0x000bda4u, 0x000bea3u, 0x000beb9u, 0x000bec3u, 0x000beddu, 0x000bee1u, 0x000beecu, 0x000bef0u,
		0x000bf02u, 0x000bf50u, 0x000bf82u, 0x000bfd0u, 0x000c003u, 0x000c05cu, 0x000c077u, 0x000c07cu,
		0x000c082u, 0x000c0d0u, 0x000c101u, 0x000c3c8u, 0x000c401u, 0x000c42cu, 0x000c439u, 0x000c54cu,
		0x000c551u, 0x000c558u, 0x000c581u, 0x000c7b0u, 0x000c801u, 0x000c8f8u, 0x000c904u, 0x000c960u,
		0x000c984u, 0x000c9e0u, 0x000ca05u, 0x000ca08u, 0x000ca23u, 0x000ca32u, 0x000ca81u, 0x000cb70u,
		0x000cb81u, 0x000cba8u, 0x000cc01u, 0x000cd60u, 0x000cd81u, 0x000ce50u, 0x000ce82u, 0x000ced8u,
		0x000cef5u, 0x000d001u, 0x000d0bcu, 0x000d0e0u, 0x000d0f3u, 0x000d101u, 0x000d2acu, 0x000d2f8u,
		0x000d304u, 0x000d3e8u, 0x000d3fcu, 0x000d402u, 0x000d450u, 0x000d482u, 0x000d4d0u, 0x000d503u,
		0x000d539u, 0x000d543u, 0x000d570u, 0x000d584u, 0x000d678u, 0x000d804u, 0x000d829u, 0x000d9a4u,
		0x000da29u, 0x000da68u, 0x000da82u, 0x000dad3u, 0x000db0du, 0x000db5cu, 0x000dba5u, 0x000dbebu,
		0x000dbf8u, 0x000dc04u, 0x000dc19u, 0x000dd0cu, 0x000dd71u, 0x000dd82u, 0x000ddd1u, 0x000df34u,
		0x000dfa0u, 0x000dfe3u, 0x000e001u, 0x000e124u, 0x000e1c0u, 0x000e1dbu, 0x000e202u, 0x000e250u,
		0x000e269u, 0x000e282u, 0x000e2d1u, 0x000e3f3u, 0x000e401u, 0x000e448u, 0x000e481u, 0x000e5d8u,
		0x000e5e9u, 0x000e603u, 0x000e640u, 0x000e684u, 0x000e69bu, 0x000e6a4u, 0x000e749u, 0x000e76cu,
		0x000e771u, 0x000e7a4u, 0x000e7a9u, 0x000e7bcu, 0x000e7d1u, 0x000e7d8u, 0x000e801u, 0x000ee04u,
		0x000f001u, 0x000f8b0u, 0x000f8c1u, 0x000f8f0u, 0x000f901u, 0x000fa30u, 0x000fa41u, 0x000fa70u,
		0x000fa81u, 0x000fac0u, 0x000fac9u, 0x000fad0u, 0x000fad9u, 0x000fae0u, 0x000fae9u, 0x000faf0u,
		0x000faf9u, 0x000fbf0u, 0x000fc01u, 0x000fda8u, 0x000fdb1u, 0x000fdedu, 0x000fdf1u, 0x000fdfdu,
		0x000fe11u, 0x000fe28u, 0x000fe31u, 0x000fe6du, 0x000fe81u, 0x000fea0u, 0x000feb1u, 0x000fee0u,
		0x000feedu, 0x000ff01u, 0x000ff6du, 0x000ff80u, 0x000ff91u, 0x000ffa8u, 0x000ffb1u, 0x000ffedu,
		0x000fff8u, 0x0010006u, 0x001005fu, 0x0010083u, 0x0010146u, 0x0010157u, 0x001017eu, 0x0010183u,
		0x0010225u, 0x001022bu, 0x0010295u, 0x001029bu, 0x00102feu, 0x0010307u, 0x0010328u, 0x0010337u,
		0x0010382u, 0x0010389u, 0x0010390u, 0x00103a2u, 0x00103d5u, 0x00103ebu, 0x00103f9u, 0x0010402u,
		0x0010455u, 0x001046bu, 0x0010478u, 0x0010481u, 0x00104e8u, 0x0010505u, 0x0010608u, 0x0010684u,
		0x0010788u, 0x0010805u, 0x0010811u, 0x001081du, 0x0010839u, 0x0010845u, 0x0010851u, 0x00108a5u,
		0x00108a9u, 0x00108b5u, 0x00108c9u, 0x00108f5u, 0x0010921u, 0x001092du, 0x0010931u, 0x001093du,
		0x0010941u, 0x001094du, 0x0010951u, 0x0010975u, 0x0010979u, 0x00109d5u, 0x00109e1u, 0x0010a05u,
		0x0010a29u, 0x0010a55u, 0x0010a71u, 0x0010a7du, 0x0010a82u, 0x0010c19u, 0x0010c2au, 0x0010c55u,
		0x0010c60u, 0x0010c85u, 0x0011843u, 0x0011865u, 0x001194bu, 0x001195du, 0x0012138u, 0x0012205u,
		0x0012258u, 0x0012302u, 0x00124e5u, 0x0012752u, 0x0012805u, 0x0013b43u, 0x0013bb2u, 0x0013ca5u,
		0x0013e2bu, 0x0013e3du, 0x0013f33u, 0x0013f85u, 0x0014c1bu, 0x0014ccdu, 0x0014ec3u, 0x0014ee5u,
		0x0014fe3u, 0x0014ff5u, 0x0015ba0u, 0x0015bb5u, 0x0015cb0u, 0x0015cbdu, 0x0016001u, 0x001672du,
		0x0016759u, 0x001677cu, 0x0016791u, 0x00167a0u, 0x00167cbu, 0x00167eau, 0x00167f3u, 0x0016801u,
		0x0016930u, 0x0016939u, 0x0016940u, 0x0016969u, 0x0016970u, 0x0016981u, 0x0016b40u, 0x0016b79u,
		0x0016b83u, 0x0016b88u, 0x0016bfcu, 0x0016c01u, 0x0016cb8u, 0x0016d01u, 0x0016d38u, 0x0016d41u,
		0x0016d78u, 0x0016d81u, 0x0016db8u, 0x0016dc1u, 0x0016df8u, 0x0016e01u, 0x0016e38u, 0x0016e41u,
		0x0016e78u, 0x0016e81u, 0x0016eb8u, 0x0016ec1u, 0x0016ef8u, 0x0016f04u, 0x0017003u, 0x0017179u,
		0x0017183u, 0x0017285u, 0x0017293u, 0x00172f0u, 0x0017405u, 0x00174d0u, 0x00174ddu, 0x00177a0u,
		0x0017805u, 0x0017eb0u, 0x0017f85u, 0x0018006u, 0x001800bu, 0x0018025u, 0x0018029u, 0x001803au,
		0x0018043u, 0x0018095u, 0x00180a3u, 0x0018105u, 0x001810au, 0x0018154u, 0x0018183u, 0x0018189u,
		0x00181b5u, 0x00181c2u, 0x00181d9u, 0x00181ebu, 0x00181f5u, 0x0018200u, 0x0018209u, 0x00184b8u,
		0x00184ccu, 0x00184ddu, 0x00184e9u, 0x0018503u, 0x0018509u, 0x00187dbu, 0x00187e1u, 0x0018800u,
		0x0018829u, 0x0018980u, 0x0018989u, 0x0018c78u, 0x0018c85u, 0x0018c92u, 0x0018cb5u, 0x0018d01u,
		0x0018e05u, 0x0018f20u, 0x0018f7du, 0x0018f81u, 0x0019005u, 0x00190f8u, 0x0019102u, 0x0019155u,
		0x0019242u, 0x0019285u, 0x001928au, 0x0019305u, 0x0019402u, 0x0019455u, 0x001958au, 0x0019605u,
		0x001a001u, 0x0026e05u, 0x0027001u, 0x0052468u, 0x0052485u, 0x0052638u, 0x0052681u, 0x00527f3u,
		0x0052801u, 0x005306bu, 0x0053081u, 0x0053102u, 0x0053151u, 0x0053160u, 0x0053201u, 0x005337cu,
		0x005339bu, 0x00533a4u, 0x00533f3u, 0x00533f9u, 0x00534f4u, 0x0053501u, 0x0053732u, 0x0053784u,
		0x0053793u, 0x00537c0u, 0x0053805u, 0x00538b9u, 0x0053905u, 0x0053911u, 0x0053c4du, 0x0053c59u,
		0x0053e58u, 0x0053e81u, 0x0053e90u, 0x0053e99u, 0x0053ea0u, 0x0053ea9u, 0x0053ed0u, 0x0053f91u,
		0x0054014u, 0x0054019u, 0x0054034u, 0x0054039u, 0x005405cu, 0x0054061u, 0x005411cu, 0x0054145u,
		0x0054164u, 0x0054168u, 0x0054182u, 0x00541b5u, 0x00541d0u, 0x0054201u, 0x00543a3u, 0x00543c0u,
		0x0054404u, 0x0054411u, 0x00545a4u, 0x0054630u, 0x0054673u, 0x0054682u, 0x00546d0u, 0x0054704u,
		0x0054791u, 0x00547c3u, 0x00547d9u, 0x00547e3u, 0x00547e9u, 0x00547fcu, 0x0054802u, 0x0054851u,
		0x0054934u, 0x0054973u, 0x0054981u, 0x0054a3cu, 0x0054aa0u, 0x0054afbu, 0x0054b01u, 0x0054be8u,
		0x0054c04u, 0x0054c21u, 0x0054d9cu, 0x0054e0bu, 0x0054e70u, 0x0054e79u, 0x0054e82u, 0x0054ed0u,
		0x0054ef3u, 0x0054f01u, 0x0054f2cu, 0x0054f31u, 0x0054f82u, 0x0054fd1u, 0x0054ff8u, 0x0055001u,
		0x005514cu, 0x00551b8u, 0x0055201u, 0x005521cu, 0x0055221u, 0x0055264u, 0x0055270u, 0x0055282u,
		0x00552d0u, 0x00552e3u, 0x0055301u, 0x00553bdu, 0x00553d1u, 0x00553dcu, 0x00553f1u, 0x0055584u,
		0x0055589u, 0x0055594u, 0x00555a9u, 0x00555bcu, 0x00555c9u, 0x00555f4u, 0x0055601u, 0x005560cu,
		0x0055611u, 0x0055618u, 0x00556d9u, 0x00556f3u, 0x0055701u, 0x005575cu, 0x0055783u, 0x0055791u,
		0x00557acu, 0x00557b8u, 0x0055809u, 0x0055838u, 0x0055849u, 0x0055878u, 0x0055889u, 0x00558b8u,
		0x0055901u, 0x0055938u, 0x0055941u, 0x0055978u, 0x0055981u, 0x0055addu, 0x0055ae1u, 0x0055b55u,
		0x0055b60u, 0x0055b81u, 0x0055f1cu, 0x0055f5bu, 0x0055f64u, 0x0055f70u, 0x0055f82u, 0x0055fd0u,
		0x0056001u, 0x006bd20u, 0x006bd81u, 0x006be38u, 0x006be59u, 0x006bfe0u, 0x006c007u, 0x007c801u,
		0x007d370u, 0x007d381u, 0x007d6d0u, 0x007d801u, 0x007d838u, 0x007d899u, 0x007d8c0u, 0x007d8e9u,
		0x007d8f4u, 0x007d8f9u, 0x007d94du, 0x007d951u, 0x007d9b8u, 0x007d9c1u, 0x007d9e8u, 0x007d9f1u,
		0x007d9f8u, 0x007da01u, 0x007da10u, 0x007da19u, 0x007da28u, 0x007da31u, 0x007dd95u, 0x007de18u,
		0x007de99u, 0x007e9f3u, 0x007ea05u, 0x007ea81u, 0x007ec80u, 0x007ec91u, 0x007ee40u, 0x007ee7du,
		0x007ee80u, 0x007ef81u, 0x007efe5u, 0x007f004u, 0x007f083u, 0x007f0d0u, 0x007f104u, 0x007f183u,
		0x007f298u, 0x007f2a3u, 0x007f315u, 0x007f31bu, 0x007f325u, 0x007f338u, 0x007f343u, 0x007f34du,
		0x007f353u, 0x007f360u, 0x007f381u, 0x007f3a8u, 0x007f3b1u, 0x007f7e8u, 0x007f7ffu, 0x007f800u,
		0x007f80bu, 0x007f825u, 0x007f82bu, 0x007f85du, 0x007f863u, 0x007f882u, 0x007f8d3u, 0x007f8e5u,
		0x007f8fbu, 0x007f909u, 0x007f9dbu, 0x007f9f5u, 0x007f9fbu, 0x007fa05u, 0x007fa09u, 0x007fadbu,
		0x007fae5u, 0x007faebu, 0x007faf5u, 0x007fafbu, 0x007fb31u, 0x007fdf8u, 0x007fe11u, 0x007fe40u,
		0x007fe51u, 0x007fe80u, 0x007fe91u, 0x007fec0u, 0x007fed1u, 0x007fee8u, 0x007ff05u, 0x007ff38u,
		0x007ff45u, 0x007ff78u, 0x007ffcfu, 0x007ffe5u, 0x007fff0u, 0x0080001u, 0x0080060u, 0x0080069u,
		0x0080138u, 0x0080141u, 0x00801d8u, 0x00801e1u, 0x00801f0u, 0x00801f9u, 0x0080270u, 0x0080281u,
		0x00802f0u, 0x0080401u, 0x00807d8u, 0x0080803u, 0x0080818u, 0x008083au, 0x00809a0u, 0x00809bdu,
		0x0080a02u, 0x0080bcdu, 0x0080c52u, 0x0080c65u, 0x0080c78u, 0x0080c85u, 0x0080ce8u, 0x0080d05u,
		0x0080d08u, 0x0080e85u, 0x0080fecu, 0x0080ff0u, 0x0081401u, 0x00814e8u, 0x0081501u, 0x0081688u,
		0x0081704u, 0x008170au, 0x00817e0u, 0x0081801u, 0x0081902u, 0x0081920u, 0x0081969u, 0x0081a0au,
		0x0081a11u, 0x0081a52u, 0x0081a58u, 0x0081a81u, 0x0081bb4u, 0x0081bd8u, 0x0081c01u, 0x0081cf0u,
		0x0081cfbu, 0x0081d01u, 0x0081e20u, 0x0081e41u, 0x0081e83u, 0x0081e8au, 0x0081eb0u, 0x0082001u,
		0x00824f0u, 0x0082502u, 0x0082550u, 0x0082581u, 0x00826a0u, 0x00826c1u, 0x00827e0u, 0x0082801u,
		0x0082940u, 0x0082981u, 0x0082b20u, 0x0082b7bu, 0x0082b81u, 0x0082bd8u, 0x0082be1u, 0x0082c58u,
		0x0082c61u, 0x0082c98u, 0x0082ca1u, 0x0082cb0u, 0x0082cb9u, 0x0082d10u, 0x0082d19u, 0x0082d90u,
		0x0082d99u, 0x0082dd0u, 0x0082dd9u, 0x0082de8u, 0x0083001u, 0x00839b8u, 0x0083a01u, 0x0083ab0u,
		0x0083b01u, 0x0083b40u, 0x0083c01u, 0x0083c30u, 0x0083c39u, 0x0083d88u, 0x0083d91u, 0x0083dd8u,
		0x0084001u, 0x0084030u, 0x0084041u, 0x0084048u, 0x0084051u, 0x00841b0u, 0x00841b9u, 0x00841c8u,
		0x00841e1u, 0x00841e8u, 0x00841f9u, 0x00842b0u, 0x00842bbu, 0x00842c2u, 0x0084301u, 0x00843bdu,
		0x00843cau, 0x0084401u, 0x00844f8u, 0x008453au, 0x0084580u, 0x0084701u, 0x0084798u, 0x00847a1u,
		0x00847b0u, 0x00847dau, 0x0084801u, 0x00848b2u, 0x00848e0u, 0x00848fbu, 0x0084901u, 0x00849d0u,
		0x00849fbu, 0x0084a00u, 0x0084c01u, 0x0084dc0u, 0x0084de2u, 0x0084df1u, 0x0084e02u, 0x0084e80u,
		0x0084e92u, 0x0085001u, 0x008500cu, 0x0085020u, 0x008502cu, 0x0085038u, 0x0085064u, 0x0085081u,
		0x00850a0u, 0x00850a9u, 0x00850c0u, 0x00850c9u, 0x00851b0u, 0x00851c4u, 0x00851d8u, 0x00851fcu,
		0x0085202u, 0x0085248u, 0x0085283u, 0x00852c8u, 0x0085301u, 0x00853eau, 0x00853fbu, 0x0085401u,
		0x00854eau, 0x0085500u, 0x0085601u, 0x0085645u, 0x0085649u, 0x008572cu, 0x0085738u, 0x008575au,
		0x0085783u, 0x00857b8u, 0x0085801u, 0x00859b0u, 0x00859cbu, 0x0085a01u, 0x0085ab0u, 0x0085ac2u,
		0x0085b01u, 0x0085b98u, 0x0085bc2u, 0x0085c01u, 0x0085c90u, 0x0085ccbu, 0x0085ce8u, 0x0085d4au,
		0x0085d80u, 0x0086001u, 0x0086248u, 0x0086401u, 0x0086598u, 0x0086601u, 0x0086798u, 0x00867d2u,
		0x0086801u, 0x0086924u, 0x0086940u, 0x0086982u, 0x00869d0u, 0x0087302u, 0x00873f8u, 0x0087401u,
		0x0087550u, 0x008755cu, 0x008756bu, 0x0087570u, 0x0087581u, 0x0087590u, 0x00877ecu, 0x0087801u,
		0x00878eau, 0x0087939u, 0x0087940u, 0x0087981u, 0x0087a34u, 0x0087a8au, 0x0087aabu, 0x0087ad0u,
		0x0087b81u, 0x0087c14u, 0x0087c33u, 0x0087c50u, 0x0087d81u, 0x0087e2au, 0x0087e60u, 0x0087f01u,
		0x0087fb8u, 0x0088004u, 0x0088019u, 0x00881c4u, 0x008823bu, 0x0088270u, 0x0088292u, 0x0088384u,
		0x0088389u, 0x008839cu, 0x00883a9u, 0x00883b0u, 0x00883fcu, 0x0088419u, 0x0088584u, 0x00885dbu,
		0x00885efu, 0x00885f3u, 0x0088614u, 0x0088618u, 0x008866fu, 0x0088670u, 0x0088681u, 0x0088748u,
		0x0088782u, 0x00887d0u, 0x0088804u, 0x0088819u, 0x008893cu, 0x00889a8u, 0x00889b2u, 0x0088a03u,
		0x0088a21u, 0x0088a2cu, 0x0088a39u, 0x0088a40u, 0x0088a81u, 0x0088b9cu, 0x0088ba3u, 0x0088bb1u,
		0x0088bb8u, 0x0088c04u, 0x0088c19u, 0x0088d9cu, 0x0088e09u, 0x0088e2bu, 0x0088e4cu, 0x0088e6bu,
		0x0088e74u, 0x0088e82u, 0x0088ed1u, 0x0088edbu, 0x0088ee1u, 0x0088eebu, 0x0088f00u, 0x0088f0au,
		0x0088fa8u, 0x0089001u, 0x0089090u, 0x0089099u, 0x0089164u, 0x00891c3u, 0x00891f4u, 0x00891f9u,
		0x008920cu, 0x0089210u, 0x0089401u, 0x0089438u, 0x0089441u, 0x0089448u, 0x0089451u, 0x0089470u,
		0x0089479u, 0x00894f0u, 0x00894f9u, 0x008954bu, 0x0089550u, 0x0089581u, 0x00896fcu, 0x0089758u,
		0x0089782u, 0x00897d0u, 0x0089804u, 0x0089820u, 0x0089829u, 0x0089868u, 0x0089879u, 0x0089888u,
		0x0089899u, 0x0089948u, 0x0089951u, 0x0089988u, 0x0089991u, 0x00899a0u, 0x00899a9u, 0x00899d0u,
		0x00899dcu, 0x00899e9u, 0x00899f4u, 0x0089a28u, 0x0089a3cu, 0x0089a48u, 0x0089a5cu, 0x0089a70u,
		0x0089a81u, 0x0089a88u, 0x0089abcu, 0x0089ac0u, 0x0089ae9u, 0x0089b14u, 0x0089b20u, 0x0089b34u,
		0x0089b68u, 0x0089b84u, 0x0089ba8u, 0x008a001u, 0x008a1acu, 0x008a239u, 0x008a25bu, 0x008a282u,
		0x008a2d3u, 0x008a2e0u, 0x008a2ebu, 0x008a2f4u, 0x008a2f9u, 0x008a310u, 0x008a401u, 0x008a584u,
		0x008a621u, 0x008a633u, 0x008a639u, 0x008a640u, 0x008a682u, 0x008a6d0u, 0x008ac01u, 0x008ad7cu,
		0x008adb0u, 0x008adc4u, 0x008ae0bu, 0x008aec1u, 0x008aee4u, 0x008aef0u, 0x008b001u, 0x008b184u,
		0x008b20bu, 0x008b221u, 0x008b228u, 0x008b282u, 0x008b2d0u, 0x008b303u, 0x008b368u, 0x008b401u,
		0x008b55cu, 0x008b5c1u, 0x008b5cbu, 0x008b5d0u, 0x008b602u, 0x008b650u, 0x008b801u, 0x008b8d8u,
		0x008b8ecu, 0x008b960u, 0x008b982u, 0x008b9e3u, 0x008b9fdu, 0x008ba01u, 0x008ba38u, 0x008c001u,
		0x008c164u, 0x008c1dbu, 0x008c1e0u, 0x008c501u, 0x008c702u, 0x008c798u, 0x008c7f9u, 0x008c838u,
		0x008c849u, 0x008c850u, 0x008c861u, 0x008c8a0u, 0x008c8a9u, 0x008c8b8u, 0x008c8c1u, 0x008c984u,
		0x008c9b0u, 0x008c9bcu, 0x008c9c8u, 0x008c9dcu, 0x008c9f9u, 0x008ca04u, 0x008ca09u, 0x008ca14u,
		0x008ca23u, 0x008ca38u, 0x008ca82u, 0x008cad0u, 0x008cd01u, 0x008cd40u, 0x008cd51u, 0x008ce8cu,
		0x008cec0u, 0x008ced4u, 0x008cf09u, 0x008cf13u, 0x008cf19u, 0x008cf24u, 0x008cf28u, 0x008d001u,
		0x008d00cu, 0x008d059u, 0x008d19cu, 0x008d1d1u, 0x008d1dcu, 0x008d1fbu, 0x008d23cu, 0x008d240u,
		0x008d281u, 0x008d28cu, 0x008d2e1u, 0x008d454u, 0x008d4d3u, 0x008d4e9u, 0x008d4f3u, 0x008d518u,
		0x008d581u, 0x008d7c8u, 0x008d803u, 0x008d850u, 0x008e001u, 0x008e048u, 0x008e051u, 0x008e17cu,
		0x008e1b8u, 0x008e1c4u, 0x008e201u, 0x008e20bu, 0x008e230u, 0x008e282u, 0x008e368u, 0x008e383u,
		0x008e391u, 0x008e480u, 0x008e494u, 0x008e540u, 0x008e54cu, 0x008e5b8u, 0x008e801u, 0x008e838u,
		0x008e841u, 0x008e850u, 0x008e859u, 0x008e98cu, 0x008e9b8u, 0x008e9d4u, 0x008e9d8u, 0x008e9e4u,
		0x008e9f0u, 0x008e9fcu, 0x008ea31u, 0x008ea3cu, 0x008ea40u, 0x008ea82u, 0x008ead0u, 0x008eb01u,
		0x008eb30u, 0x008eb39u, 0x008eb48u, 0x008eb51u, 0x008ec54u, 0x008ec78u, 0x008ec84u, 0x008ec90u,
		0x008ec9cu, 0x008ecc1u, 0x008ecc8u, 0x008ed02u, 0x008ed50u, 0x008f701u, 0x008f79cu, 0x008f7bbu,
		0x008f7c8u, 0x008f804u, 0x008f811u, 0x008f81cu, 0x008f821u, 0x008f888u, 0x008f891u, 0x008f9a4u,
		0x008f9d8u, 0x008f9f4u, 0x008fa1bu, 0x008fa82u, 0x008fad0u, 0x008fd81u, 0x008fd88u, 0x008fe02u,
		0x008feadu, 0x008ff90u, 0x008fffbu, 0x0090001u, 0x0091cd0u, 0x0092002u, 0x0092378u, 0x0092383u,
		0x00923a8u, 0x0092401u, 0x0092a20u, 0x0097c81u, 0x0097f8bu, 0x0097f98u, 0x0098001u, 0x009a187u,
		0x009a204u, 0x009a209u, 0x009a23cu, 0x009a2b0u, 0x00a2001u, 0x00a3238u, 0x00b4001u, 0x00b51c8u,
		0x00b5201u, 0x00b52f8u, 0x00b5302u, 0x00b5350u, 0x00b5373u, 0x00b5381u, 0x00b55f8u, 0x00b5602u,
		0x00b5650u, 0x00b5681u, 0x00b5770u, 0x00b5784u, 0x00b57abu, 0x00b57b0u, 0x00b5801u, 0x00b5984u,
		0x00b59bbu, 0x00b59e5u, 0x00b5a01u, 0x00b5a23u, 0x00b5a2du, 0x00b5a30u, 0x00b5a82u, 0x00b5ad0u,
		0x00b5adau, 0x00b5b10u, 0x00b5b19u, 0x00b5bc0u, 0x00b5be9u, 0x00b5c80u, 0x00b7201u, 0x00b7402u,
		0x00b74bbu, 0x00b74d8u, 0x00b7801u, 0x00b7a58u, 0x00b7a7cu, 0x00b7a81u, 0x00b7a8cu, 0x00b7c40u,
		0x00b7c7cu, 0x00b7c99u, 0x00b7d00u, 0x00b7f01u, 0x00b7f13u, 0x00b7f19u, 0x00b7f24u, 0x00b7f28u,
		0x00b7f84u, 0x00b7f90u, 0x00b8001u, 0x00c3fc0u, 0x00c4001u, 0x00c66b0u, 0x00c6801u, 0x00c6848u,
		0x00d7f81u, 0x00d7fa0u, 0x00d7fa9u, 0x00d7fe0u, 0x00d7fe9u, 0x00d7ff8u, 0x00d8001u, 0x00d8918u,
		0x00d8991u, 0x00d8998u, 0x00d8a81u, 0x00d8a98u, 0x00d8aa9u, 0x00d8ab0u, 0x00d8b21u, 0x00d8b40u,
		0x00d8b81u, 0x00d97e0u, 0x00de001u, 0x00de358u, 0x00de381u, 0x00de3e8u, 0x00de401u, 0x00de448u,
		0x00de481u, 0x00de4d0u, 0x00de4e5u, 0x00de4ecu, 0x00de4fbu, 0x00de507u, 0x00de520u, 0x00e7804u,
		0x00e7970u, 0x00e7984u, 0x00e7a38u, 0x00e7a85u, 0x00e7e20u, 0x00e8005u, 0x00e87b0u, 0x00e8805u,
		0x00e8938u, 0x00e894du, 0x00e8b2cu, 0x00e8b55u, 0x00e8b6cu, 0x00e8b9fu, 0x00e8bdcu, 0x00e8c1du,
		0x00e8c2cu, 0x00e8c65u, 0x00e8d54u, 0x00e8d75u, 0x00e8f58u, 0x00e9005u, 0x00e9214u, 0x00e922du,
		0x00e9230u, 0x00e9602u, 0x00e96a0u, 0x00e9702u, 0x00e97a0u, 0x00e9805u, 0x00e9ab8u, 0x00e9b02u,
		0x00e9bc8u, 0x00ea001u, 0x00ea2a8u, 0x00ea2b1u, 0x00ea4e8u, 0x00ea4f1u, 0x00ea500u, 0x00ea511u,
		0x00ea518u, 0x00ea529u, 0x00ea538u, 0x00ea549u, 0x00ea568u, 0x00ea571u, 0x00ea5d0u, 0x00ea5d9u,
		0x00ea5e0u, 0x00ea5e9u, 0x00ea620u, 0x00ea629u, 0x00ea830u, 0x00ea839u, 0x00ea858u, 0x00ea869u,
		0x00ea8a8u, 0x00ea8b1u, 0x00ea8e8u, 0x00ea8f1u, 0x00ea9d0u, 0x00ea9d9u, 0x00ea9f8u, 0x00eaa01u,
		0x00eaa28u, 0x00eaa31u, 0x00eaa38u, 0x00eaa51u, 0x00eaa88u, 0x00eaa91u, 0x00eb530u, 0x00eb541u,
		0x00eb60du, 0x00eb611u, 0x00eb6ddu, 0x00eb6e1u, 0x00eb7ddu, 0x00eb7e1u, 0x00eb8adu, 0x00eb8b1u,
		0x00eb9adu, 0x00eb9b1u, 0x00eba7du, 0x00eba81u, 0x00ebb7du, 0x00ebb81u, 0x00ebc4du, 0x00ebc51u,
		0x00ebd4du, 0x00ebd51u, 0x00ebe1du, 0x00ebe21u, 0x00ebe60u, 0x00ebe72u, 0x00ec005u, 0x00ed004u,
		0x00ed1bdu, 0x00ed1dcu, 0x00ed36du, 0x00ed3acu, 0x00ed3b5u, 0x00ed424u, 0x00ed42du, 0x00ed43bu,
		0x00ed460u, 0x00ed4dcu, 0x00ed500u, 0x00ed50cu, 0x00ed580u, 0x00ef801u, 0x00ef8f8u, 0x00ef929u,
		0x00ef958u, 0x00f0004u, 0x00f0038u, 0x00f0044u, 0x00f00c8u, 0x00f00dcu, 0x00f0110u, 0x00f011cu,
		0x00f0128u, 0x00f0134u, 0x00f0158u, 0x00f0181u, 0x00f0370u, 0x00f047cu, 0x00f0480u, 0x00f0801u,
		0x00f0968u, 0x00f0984u, 0x00f09b9u, 0x00f09f0u, 0x00f0a02u, 0x00f0a50u, 0x00f0a71u, 0x00f0a7du,
		0x00f0a80u, 0x00f1481u, 0x00f1574u, 0x00f1578u, 0x00f1601u, 0x00f1764u, 0x00f1782u, 0x00f17d0u,
		0x00f17fdu, 0x00f1800u, 0x00f2681u, 0x00f2764u, 0x00f2782u, 0x00f27d0u, 0x00f3f01u, 0x00f3f38u,
		0x00f3f41u, 0x00f3f60u, 0x00f3f69u, 0x00f3f78u, 0x00f3f81u, 0x00f3ff8u, 0x00f4001u, 0x00f4628u,
		0x00f463au, 0x00f4684u, 0x00f46b8u, 0x00f4801u, 0x00f4a24u, 0x00f4a59u, 0x00f4a60u, 0x00f4a82u,
		0x00f4ad0u, 0x00f4af3u, 0x00f4b00u, 0x00f638au, 0x00f6565u, 0x00f656au, 0x00f6585u, 0x00f658au,
		0x00f65a8u, 0x00f680au, 0x00f6975u, 0x00f697au, 0x00f69f0u, 0x00f7001u, 0x00f7020u, 0x00f7029u,
		0x00f7100u, 0x00f7109u, 0x00f7118u, 0x00f7121u, 0x00f7128u, 0x00f7139u, 0x00f7140u, 0x00f7149u,
		0x00f7198u, 0x00f71a1u, 0x00f71c0u, 0x00f71c9u, 0x00f71d0u, 0x00f71d9u, 0x00f71e0u, 0x00f7211u,
		0x00f7218u, 0x00f7239u, 0x00f7240u, 0x00f7249u, 0x00f7250u, 0x00f7259u, 0x00f7260u, 0x00f7269u,
		0x00f7280u, 0x00f7289u, 0x00f7298u, 0x00f72a1u, 0x00f72a8u, 0x00f72b9u, 0x00f72c0u, 0x00f72c9u,
		0x00f72d0u, 0x00f72d9u, 0x00f72e0u, 0x00f72e9u, 0x00f72f0u, 0x00f72f9u, 0x00f7300u, 0x00f7309u,
		0x00f7318u, 0x00f7321u, 0x00f7328u, 0x00f7339u, 0x00f7358u, 0x00f7361u, 0x00f7398u, 0x00f73a1u,
		0x00f73c0u, 0x00f73c9u, 0x00f73e8u, 0x00f73f1u, 0x00f73f8u, 0x00f7401u, 0x00f7450u, 0x00f7459u,
		0x00f74e0u, 0x00f7509u, 0x00f7520u, 0x00f7529u, 0x00f7550u, 0x00f7559u, 0x00f75e0u, 0x00f7785u,
		0x00f7790u, 0x00f8005u, 0x00f8160u, 0x00f8185u, 0x00f84a0u, 0x00f8505u, 0x00f8578u, 0x00f858du,
		0x00f8600u, 0x00f860du, 0x00f8680u, 0x00f868du, 0x00f87b0u, 0x00f8802u, 0x00f886du, 0x00f8d70u,
		0x00f8f35u, 0x00f9018u, 0x00f9085u, 0x00f91e0u, 0x00f9205u, 0x00f9248u, 0x00f9285u, 0x00f9290u,
		0x00f9305u, 0x00f9330u, 0x00f9805u, 0x00fb6c0u, 0x00fb6e5u, 0x00fb768u, 0x00fb785u, 0x00fb7e8u,
		0x00fb805u, 0x00fbbb8u, 0x00fbbddu, 0x00fbed0u, 0x00fbf05u, 0x00fbf60u, 0x00fbf85u, 0x00fbf88u,
		0x00fc005u, 0x00fc060u, 0x00fc085u, 0x00fc240u, 0x00fc285u, 0x00fc2d0u, 0x00fc305u, 0x00fc440u,
		0x00fc485u, 0x00fc570u, 0x00fc585u, 0x00fc590u, 0x00fc805u, 0x00fd2a0u, 0x00fd305u, 0x00fd370u,
		0x00fd385u, 0x00fd3e8u, 0x00fd405u, 0x00fd448u, 0x00fd485u, 0x00fd5f0u, 0x00fd5fdu, 0x00fd630u,
		0x00fd675u, 0x00fd6e0u, 0x00fd705u, 0x00fd748u, 0x00fd785u, 0x00fd7c8u, 0x00fd805u, 0x00fdc98u,
		0x00fdca5u, 0x00fde58u, 0x00fdf82u, 0x00fdfd0u, 0x0100001u, 0x0153700u, 0x0153801u, 0x015b9d0u,
		0x015ba01u, 0x015c0f0u, 0x015c101u, 0x0167510u, 0x0167581u, 0x0175f08u, 0x0175f81u, 0x01772f0u,
		0x017c001u, 0x017d0f0u, 0x0180001u, 0x0189a58u, 0x0189a81u, 0x0191d80u, 0x070000fu, 0x0700010u,
		0x0700107u, 0x0700400u, 0x0700804u, 0x0700f80u, 0x0780007u, 0x07ffff0u, 0x0800007u, 0x087fff0u,
	};
	uint32_t lo = 0, hi = (uint32_t)(sizeof(runs) / sizeof(runs[0])) - 1u;
	if (cp >= 0x110000u)
		return 0;
	while (lo < hi) { /* the last run starting at or before cp */
		uint32_t mid = (lo + hi + 1u) >> 1;
		if ((runs[mid] >> 3) <= cp)
			lo = mid;
		else
			hi = mid - 1u;
	}
	return runs[lo] & 7u;
}

/* UTF-8 as llama.cpp reads it (unicode_cpt_from_utf8): a bad sequence is
 * U+FFFD and one byte. */
GPUOS_TOK_FN uint32_t gpuos_tok_utf8_next(const uint8_t *s, uint32_t len, uint32_t *off)
{
	uint32_t o = *off, b = s[o];
	if (!(b & 0x80u)) {
		*off = o + 1u;
		return b;
	}
	if ((b & 0x40u) && !(b & 0x20u)) {
		if (o + 1u < len && (s[o + 1] & 0xc0u) == 0x80u) {
			*off = o + 2u;
			return ((b & 0x1fu) << 6) | (s[o + 1] & 0x3fu);
		}
	} else if ((b & 0x40u) && !(b & 0x10u)) {
		if (o + 2u < len && (s[o + 1] & 0xc0u) == 0x80u && (s[o + 2] & 0xc0u) == 0x80u) {
			*off = o + 3u;
			return ((b & 0x0fu) << 12) | ((s[o + 1] & 0x3fu) << 6) | (s[o + 2] & 0x3fu);
		}
	} else if ((b & 0x40u) && !(b & 0x08u)) {
		if (o + 3u < len && (s[o + 1] & 0xc0u) == 0x80u && (s[o + 2] & 0xc0u) == 0x80u &&
		    (s[o + 3] & 0xc0u) == 0x80u) {
			uint32_t c = ((b & 0x07u) << 18) | ((s[o + 1] & 0x3fu) << 12) | ((s[o + 2] & 0x3fu) << 6) |
				     (s[o + 3] & 0x3fu);
			*off = o + 4u;
			return c <= 0x10ffffu ? c : 0xfffdu;
		}
	}
	*off = o + 1u;
	return 0xfffdu;
}

GPUOS_TOK_FN uint32_t gpuos_tok_utf8_put(uint32_t c, uint8_t *o)
{
	if (c < 0x80u) {
		o[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800u) {
		o[0] = (uint8_t)(0xc0u | (c >> 6));
		o[1] = (uint8_t)(0x80u | (c & 0x3fu));
		return 2;
	}
	if (c < 0x10000u) {
		o[0] = (uint8_t)(0xe0u | (c >> 12));
		o[1] = (uint8_t)(0x80u | ((c >> 6) & 0x3fu));
		o[2] = (uint8_t)(0x80u | (c & 0x3fu));
		return 3;
	}
	o[0] = (uint8_t)(0xf0u | (c >> 18));
	o[1] = (uint8_t)(0x80u | ((c >> 12) & 0x3fu));
	o[2] = (uint8_t)(0x80u | ((c >> 6) & 0x3fu));
	o[3] = (uint8_t)(0x80u | (c & 0x3fu));
	return 4;
}

/* Bytes of the UTF-8 character a lead byte starts (unicode_len_utf8). */
GPUOS_TOK_FN uint32_t gpuos_tok_utf8_len(uint8_t b)
{
	uint32_t h = (uint32_t)b >> 4;
	return h < 12u ? 1u : h < 14u ? 2u : h == 14u ? 3u : 4u;
}

/* GPT-2's byte-level alphabet: the printable bytes stand for themselves,
 * the other 68 (0x00-0x20, 0x7f-0xa0, 0xad) for U+0100.. in byte order. */
GPUOS_TOK_FN uint32_t gpuos_tok_byte_cpt(uint32_t b)
{
	if ((b >= 0x21u && b <= 0x7eu) || (b >= 0xa1u && b <= 0xacu) || b >= 0xaeu)
		return b;
	if (b <= 0x20u)
		return 0x100u + b;
	if (b <= 0xa0u)
		return 0x100u + 33u + (b - 0x7fu);
	return 0x100u + 67u;
}

GPUOS_TOK_FN int32_t gpuos_tok_cpt_byte(uint32_t c)
{
	if ((c >= 0x21u && c <= 0x7eu) || (c >= 0xa1u && c <= 0xacu) || (c >= 0xaeu && c <= 0xffu))
		return (int32_t)c;
	if (c >= 0x100u && c < 0x100u + 33u)
		return (int32_t)(c - 0x100u);
	if (c >= 0x100u + 33u && c < 0x100u + 67u)
		return (int32_t)(c - 0x100u - 33u + 0x7fu);
	if (c == 0x100u + 67u)
		return 0xad;
	return -1;
}

/* ---- init ------------------------------------------------------------------------------------- */

/* An encoded GGUF array value: its element type and count, items from *items. */
GPUOS_TOK_FN int gpuos_tok_arr(const uint8_t *v, uint64_t len, uint32_t *type, uint64_t *count)
{
	if (!v || len < 12u)
		return -1;
	*type = gpuos_tok_rd32(v);
	*count = gpuos_tok_rd64(v + 4);
	return 0;
}

/* Walk an array of strings: sum of lengths, checked against len. */
GPUOS_TOK_FN int gpuos_tok_strs(const uint8_t *v, uint64_t len, uint64_t count, uint64_t *bytes)
{
	uint64_t at = 12u, i, sum = 0;
	for (i = 0; i < count; i++) {
		uint64_t n;
		if (len - at < 8u)
			return -1;
		n = gpuos_tok_rd64(v + at);
		at += 8u;
		if (n > len - at || n > 0x7fffffffu)
			return -1;
		at += n;
		sum += n;
	}
	*bytes = sum;
	return 0;
}

/* Lists of token texts that llama.cpp recognises, '\n'-separated. */
#define GPUOS_TOK_LIST_EOG                                                                             \
	"<|eot_id|>\n<|im_end|>\n<|end|>\n<|return|>\n<|call|>\n<|flush|>\n<|calls|>\n<end_of_turn>\n"   \
	"<|endoftext|>\n</s>\n<|eom_id|>\n<EOT>\n_<EOT>\n[EOT]\n[EOS]\n<|end_of_text|>\n"                \
	"<end_of_utterance>\n<eos>\n<turn|>\n<|tool_response>\n<\xef\xbd\x9c" "end\xe2\x96\x81of"        \
	"\xe2\x96\x81sentence\xef\xbd\x9c>\n[e~["
#define GPUOS_TOK_LIST_EOT                                                                             \
	"<|eot_id|>\n<|im_end|>\n<|end|>\n<end_of_turn>\n<|endoftext|>\n<|end_of_text|>\n<EOT>\n_<EOT>\n" \
	"[EOT]\n<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>\n<end_of_utterance>"
#define GPUOS_TOK_LIST_FIM_PRE                                                                         \
	"<|fim_prefix|>\n<fim-prefix>\n<fim_prefix>\n<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>\n" \
	"<PRE>\n\xe2\x96\x81<PRE>\n<|code_prefix|>\n<|prefix|>"
#define GPUOS_TOK_LIST_FIM_SUF                                                                         \
	"<|fim_suffix|>\n<fim-suffix>\n<fim_suffix>\n<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>\n"   \
	"<SUF>\n\xe2\x96\x81<SUF>\n<|code_suffix|>\n<|suffix|>"
#define GPUOS_TOK_LIST_FIM_MID                                                                         \
	"<|fim_middle|>\n<fim-middle>\n<fim_middle>\n<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>\n"  \
	"<MID>\n\xe2\x96\x81<MID>\n<|code_middle|>\n<|middle|>"
#define GPUOS_TOK_LIST_FIM_PAD "<|fim_pad|>\n<fim-pad>\n<fim_pad>\n<PAD>\n[PAD]"
#define GPUOS_TOK_LIST_FIM_REP "<|fim_repo|>\n<|repo_name|>\n<fim-repo>\n<REPO>\n<reponame>"
#define GPUOS_TOK_LIST_FIM_SEP "<|file_sep|>"
#define GPUOS_TOK_LIST_ALWAYS_USER "<|channel|>\n<|message|>\n<|start|>\n<|constrain|>"

/* The next entry of a list: its bytes and length; 0 at the end. */
GPUOS_TOK_FN int gpuos_tok_list_next(const char **cur, const uint8_t **s, uint32_t *n)
{
	const char *p = *cur;
	uint32_t k = 0;
	if (!p || !*p)
		return 0;
	while (p[k] && p[k] != '\n')
		k++;
	*s = (const uint8_t *)p;
	*n = k;
	*cur = p[k] ? p + k + 1 : p + k;
	return 1;
}

GPUOS_TOK_FN uint16_t *gpuos_tok_attrs_rw(struct gpuos_tok *t)
{
	return (uint16_t *)((uint8_t *)t + t->attr_off);
}

/* Mark the tokens of a list: attribute bits set (or, with replace, the
 * attribute replaced); returns the smallest id marked, or -1. */
GPUOS_TOK_FN int32_t gpuos_tok_mark(struct gpuos_tok *t, const char *list, uint32_t set, int replace)
{
	const uint8_t *s;
	uint32_t n;
	int32_t first = -1;
	uint16_t *attr = gpuos_tok_attrs_rw(t);
	while (gpuos_tok_list_next(&list, &s, &n)) {
		int32_t id = gpuos_tok_lookup(t, s, n);
		if (id < 0)
			continue;
		attr[id] = (uint16_t)(replace ? set : (attr[id] | set));
		if (first < 0 || id < first)
			first = id;
	}
	return first;
}

/* special ids: longer text first, then smaller id */
GPUOS_TOK_FN int gpuos_tok_special_before(const struct gpuos_tok *t, int32_t a, int32_t b)
{
	uint32_t la, lb;
	gpuos_tok_text(t, a, &la);
	gpuos_tok_text(t, b, &lb);
	return la > lb || (la == lb && a < b);
}

/* Sift v[r] down a heap of n whose root comes last in the order. */
GPUOS_TOK_FN void gpuos_tok_sift(const struct gpuos_tok *t, int32_t *v, uint32_t r, uint32_t n)
{
	for (;;) {
		uint32_t c = 2u * r + 1u;
		int32_t x;
		if (c >= n)
			return;
		if (c + 1u < n && gpuos_tok_special_before(t, v[c], v[c + 1u]))
			c++;
		if (!gpuos_tok_special_before(t, v[r], v[c]))
			return;
		x = v[r];
		v[r] = v[c];
		v[c] = x;
		r = c;
	}
}

/* Heapsort (no recursion, no memory): longest text first. */
GPUOS_TOK_FN void gpuos_tok_sort_special(const struct gpuos_tok *t, int32_t *v, uint32_t n)
{
	uint32_t i;
	for (i = n / 2u; i-- > 0;)
		gpuos_tok_sift(t, v, i, n);
	for (i = n; i > 1u; i--) {
		int32_t x = v[0];
		v[0] = v[i - 1u];
		v[i - 1u] = x;
		gpuos_tok_sift(t, v, 0, i - 1u);
	}
}

/* The pre-tokenizer names of llama.cpp this implements: their type, and
 * whether decode cleans spaces, merges are ignored, BOS is added by default. */
GPUOS_TOK_FN int gpuos_tok_pre_of(const uint8_t *p, uint32_t n, uint32_t *pre, uint32_t *flags)
{
	static const char names[] =
		/* name:type:clean:ignore_merges:add_bos */
		"default 1100\n"
		"llama3 7111\nllama-v3 7111\nllama-bpe 7111\nfalcon3 7111\nfalcon-h1 7111\npixtral 7111\n"
		"midm-2.0 7111\nlfm2 7111\ndbrx 7100\nsmaug-bpe 7100\n"
		"deepseek-llm 5000\ndeepseek-coder 6000\nfalcon 4100\n"
		"gpt-2 2100\nphi-2 2100\ngigachat 2100\na.x-4.0 2100\nmellum 2100\nmpt 2100\nolmo 2100\n"
		"jais 2100\nexaone4 2100\ntrillion 2000\ngranite-docling 2000\n"
		"starcoder 3100\nrefact 3100\ncommand-r 3000\nsmollm 3000\ncodeshell 3100\nexaone 3100\n"
		"minerva-7b 3100\nmellum2 3100\n"
		"qwen2 8000\ndeepseek-r1-qwen 8000\nkormo 8000\nf2llmv2 8000\nmegrez 8100\nstablelm2 8100\n"
		"hunyuan 8000";
	const char *c = names;
	while (*c) {
		uint32_t k = 0;
		while (c[k] != ' ')
			k++;
		if (k == n && gpuos_tok_eq((const uint8_t *)c, p, n)) {
			*pre = (uint32_t)(c[k + 1] - '0');
			*flags = (c[k + 2] == '1' ? GPUOS_TOK_F_CLEAN_SPACES : 0u) |
				 (c[k + 3] == '1' ? GPUOS_TOK_F_IGNORE_MERGES : 0u) |
				 (c[k + 4] == '1' ? GPUOS_TOK_F_ADD_BOS : 0u);
			return 0;
		}
		c += k + 5;
		if (*c == '\n')
			c++;
	}
	return -1;
}

/* What init learns from the source before it lays the arena out. */
struct gpuos_tok_plan {
	uint32_t type, pre, flags, n;      /* GPUOS_TOK_SPM/_BPE, GPUOS_TOK_PRE_*, GPUOS_TOK_F_*, tokens */
	uint64_t tbytes;                   /* the token texts' bytes, "[EMPTY_<id>]" included */
	uint64_t n_merges, mbytes;         /* the merges in the file and their texts' bytes */
	uint64_t n_spec_max;               /* room for the special list */
};

/* The model and pre-tokenizer src names, the flags they start with, and
 * the KVs add_bos, add_eos and add_space_prefix over those. GPUOS_TOK_OK,
 * or GPUOS_TOK_E_INVALID / _E_UNSUPPORTED with the reason in why. */
GPUOS_TOK_FN int gpuos_tok_plan_model(const struct gpuos_tok_src *src, struct gpuos_tok_plan *p, char *why,
				      uint32_t why_len)
{
	uint32_t wl = 0;
	p->pre = GPUOS_TOK_PRE_NONE;
	p->flags = 0;
	if (!src->model) {
		GPUOS_TOK_WHY("no tokenizer.ggml.model");
		return GPUOS_TOK_E_INVALID;
	}
	if (gpuos_tok_eqs((const uint8_t *)src->model, src->model_len, "llama")) {
		p->type = GPUOS_TOK_SPM;
		p->flags = GPUOS_TOK_F_ADD_BOS | GPUOS_TOK_F_SPACE_PREFIX;
	} else if (gpuos_tok_eqs((const uint8_t *)src->model, src->model_len, "gpt2")) {
		p->type = GPUOS_TOK_BPE;
		if (!src->pre) {
			p->pre = GPUOS_TOK_PRE_DEFAULT;
			p->flags = GPUOS_TOK_F_CLEAN_SPACES;
		} else if (gpuos_tok_pre_of((const uint8_t *)src->pre, src->pre_len, &p->pre, &p->flags)) {
			GPUOS_TOK_WHY("tokenizer.ggml.pre '");
			gpuos_tok_why(why, why_len, &wl, src->pre, src->pre_len);
			GPUOS_TOK_WHY("' is not supported (a pre-tokenizer this tokenizer does not implement)");
			return GPUOS_TOK_E_UNSUPPORTED;
		}
	} else {
		GPUOS_TOK_WHY("tokenizer.ggml.model '");
		gpuos_tok_why(why, why_len, &wl, src->model, src->model_len);
		GPUOS_TOK_WHY("' is not supported (this tokenizer implements 'llama' and 'gpt2')");
		return GPUOS_TOK_E_UNSUPPORTED;
	}
	if (src->add_bos >= 0)
		p->flags = src->add_bos ? p->flags | GPUOS_TOK_F_ADD_BOS : p->flags & ~GPUOS_TOK_F_ADD_BOS;
	if (src->add_eos >= 0)
		p->flags = src->add_eos ? p->flags | GPUOS_TOK_F_ADD_EOS : p->flags & ~GPUOS_TOK_F_ADD_EOS;
	if (src->add_space_prefix >= 0)
		p->flags = src->add_space_prefix ? p->flags | GPUOS_TOK_F_SPACE_PREFIX
						 : p->flags & ~GPUOS_TOK_F_SPACE_PREFIX;
	return GPUOS_TOK_OK;
}

/* The arrays of src, each checked against its bytes: the tokens (their
 * count and texts' bytes), scores and types for every token, and for BPE
 * the merges. GPUOS_TOK_OK, or GPUOS_TOK_E_INVALID with the reason in why. */
GPUOS_TOK_FN int gpuos_tok_plan_arrays(const struct gpuos_tok_src *src, struct gpuos_tok_plan *p, char *why,
				       uint32_t why_len)
{
	uint32_t wl = 0, ttype = 0, stype = 0, mtype = 0;
	uint64_t count, sc_count = 0, ty_count = 0;
	p->tbytes = p->n_merges = p->mbytes = 0;
	if (gpuos_tok_arr(src->tokens, src->tokens_len, &ttype, &count) || ttype != 8u ||
	    count == 0 || count >= (1u << 28) || gpuos_tok_strs(src->tokens, src->tokens_len, count, &p->tbytes)) {
		GPUOS_TOK_WHY("tokenizer.ggml.tokens is not an array of strings inside its bytes (1 to 2^28)");
		return GPUOS_TOK_E_INVALID;
	}
	p->n = (uint32_t)count;
	if (src->scores) {
		if (gpuos_tok_arr(src->scores, src->scores_len, &stype, &sc_count) || (stype != 6u && stype != 5u) ||
		    sc_count < p->n || src->scores_len - 12u < (uint64_t)p->n * 4u) {
			GPUOS_TOK_WHY("tokenizer.ggml.scores is not an array of float32 (or int32) for every token");
			return GPUOS_TOK_E_INVALID;
		}
	}
	if (src->types) {
		if (gpuos_tok_arr(src->types, src->types_len, &stype, &ty_count) || stype != 5u || ty_count < p->n ||
		    src->types_len - 12u < (uint64_t)p->n * 4u) {
			GPUOS_TOK_WHY("tokenizer.ggml.token_type is not an array of int32 for every token");
			return GPUOS_TOK_E_INVALID;
		}
	}
	if (p->type == GPUOS_TOK_BPE) {
		if (!src->merges) {
			GPUOS_TOK_WHY("a 'gpt2' vocabulary without tokenizer.ggml.merges");
			return GPUOS_TOK_E_INVALID;
		}
		if (gpuos_tok_arr(src->merges, src->merges_len, &mtype, &p->n_merges) || mtype != 8u ||
		    p->n_merges >= (1u << 24) || gpuos_tok_strs(src->merges, src->merges_len, p->n_merges, &p->mbytes)) {
			GPUOS_TOK_WHY("tokenizer.ggml.merges is not an array of strings inside its bytes");
			return GPUOS_TOK_E_INVALID;
		}
	}
	return GPUOS_TOK_OK;
}

/* Token i's tokenizer.ggml.token_type (normal without the array). */
GPUOS_TOK_FN int32_t gpuos_tok_src_type(const struct gpuos_tok_src *src, uint32_t i)
{
	return src->types ? (int32_t)gpuos_tok_rd32(src->types + 12u + 4u * i) : 1;
}

/* The bytes empty texts take as "[EMPTY_<id>]", and the special list's
 * bound: the unknown, control and user-defined tokens, and the texts the
 * fix-ups may make control or user-defined, at most every token. */
GPUOS_TOK_FN void gpuos_tok_plan_specials(const struct gpuos_tok_src *src, struct gpuos_tok_plan *p)
{
	uint64_t at = 12u;
	uint32_t i;
	p->n_spec_max = 0;
	for (i = 0; i < p->n; i++) {
		uint64_t l = gpuos_tok_rd64(src->tokens + at);
		int32_t ty = gpuos_tok_src_type(src, i);
		if (l == 0)
			p->tbytes += 18u; /* "[EMPTY_" 10 digits "]" */
		if (ty == GPUOS_TOK_TYPE_UNKNOWN || ty == GPUOS_TOK_TYPE_CONTROL || ty == GPUOS_TOK_TYPE_USER_DEFINED)
			p->n_spec_max++;
		at += 8u + l;
	}
	p->n_spec_max += 96u; /* texts the fix-ups below may make control or user-defined (61) */
	if (p->n_spec_max > p->n)
		p->n_spec_max = p->n;
}

/* The arena's header in *h: what p says, the hashes' sizes and each
 * table's offset. Returns the arena's bytes. */
GPUOS_TOK_FN uint64_t gpuos_tok_layout(struct gpuos_tok *h, const struct gpuos_tok_plan *p)
{
	uint64_t at;
	uint32_t i;
	for (i = 0; i < sizeof(*h); i++)
		((uint8_t *)h)[i] = 0;
	h->magic = GPUOS_TOK_MAGIC;
	h->version = GPUOS_TOK_VERSION;
	h->type = p->type;
	h->pre = p->pre;
	h->flags = p->flags;
	h->n_tokens = p->n;
	for (h->hash_cap = 16u; h->hash_cap < 2u * p->n; h->hash_cap <<= 1)
		;
	if (p->n_merges)
		for (h->merge_cap = 16u; h->merge_cap < 2u * (uint32_t)p->n_merges; h->merge_cap <<= 1)
			;
	at = gpuos_tok_align8(sizeof(*h));
	h->text_idx_off = at;
	at = gpuos_tok_align8(at + 4u * ((uint64_t)p->n + 1u));
	h->text_off = at;
	at = gpuos_tok_align8(at + p->tbytes);
	h->score_off = at;
	at = gpuos_tok_align8(at + 4u * (uint64_t)p->n);
	h->attr_off = at;
	at = gpuos_tok_align8(at + 2u * (uint64_t)p->n);
	h->hash_off = at;
	at = gpuos_tok_align8(at + 4u * (uint64_t)h->hash_cap);
	h->merge_idx_off = at;
	at = gpuos_tok_align8(at + 4u * (p->n_merges + 1u));
	h->merge_text_off = at;
	at = gpuos_tok_align8(at + p->mbytes);
	h->merge_hash_off = at;
	at = gpuos_tok_align8(at + 4u * (uint64_t)h->merge_cap);
	h->special_off = at;
	at = gpuos_tok_align8(at + 4u * p->n_spec_max);
	h->total = at;
	return at;
}

/* llama.cpp's text of an empty token, "[EMPTY_<id>]", at o; its length. */
GPUOS_TOK_FN uint32_t gpuos_tok_put_empty(uint8_t *o, uint32_t id)
{
	char d[10];
	uint32_t v = id, nd = 0, l = 0, k;
	const char *e = "[EMPTY_";
	for (k = 0; e[k]; k++)
		o[l++] = (uint8_t)e[k];
	do {
		d[nd++] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v);
	while (nd)
		o[l++] = (uint8_t)d[--nd];
	o[l++] = ']';
	return l;
}

/* Token i's score: the float32, or the int32 as a float; 0 without scores. */
GPUOS_TOK_FN float gpuos_tok_src_score(const struct gpuos_tok_src *src, uint32_t i)
{
	uint32_t bits;
	if (!src->scores)
		return 0.0f;
	bits = gpuos_tok_rd32(src->scores + 12u + 4u * i);
	if (gpuos_tok_rd32(src->scores) == 6u) {
		union { uint32_t u; float f; } cv;
		cv.u = bits;
		return cv.f;
	}
	return (float)(int32_t)bits;
}

/* The attribute of a tokenizer.ggml.token_type value (0 for others). */
GPUOS_TOK_FN uint32_t gpuos_tok_attr_of_type(int32_t ty)
{
	switch (ty) {
	case GPUOS_TOK_TYPE_NORMAL: return GPUOS_TOK_A_NORMAL;
	case GPUOS_TOK_TYPE_UNKNOWN: return GPUOS_TOK_A_UNKNOWN;
	case GPUOS_TOK_TYPE_CONTROL: return GPUOS_TOK_A_CONTROL;
	case GPUOS_TOK_TYPE_USER_DEFINED: return GPUOS_TOK_A_USER_DEFINED;
	case GPUOS_TOK_TYPE_UNUSED: return GPUOS_TOK_A_UNUSED;
	case GPUOS_TOK_TYPE_BYTE: return GPUOS_TOK_A_BYTE;
	default: return 0;
	}
}

/* Token i (its text in place, l bytes) into the hash; a repeated text
 * keeps the last id (llama.cpp's map). */
GPUOS_TOK_FN void gpuos_tok_hash_token(struct gpuos_tok *t, uint32_t i, uint32_t l)
{
	uint8_t *base = (uint8_t *)t;
	const uint32_t *idx = (const uint32_t *)(base + t->text_idx_off);
	const uint8_t *tx = base + t->text_off, *s = tx + idx[i];
	uint32_t *slot = (uint32_t *)(base + t->hash_off);
	uint32_t hs = gpuos_tok_fnv(GPUOS_TOK_FNV0, s, l) & (t->hash_cap - 1u);
	for (;;) {
		uint32_t v = slot[hs], ol;
		if (!v) {
			slot[hs] = i + 1u;
			return;
		}
		ol = idx[v] - idx[v - 1u];
		if (v - 1u < i && ol == l && gpuos_tok_eq(tx + idx[v - 1u], s, l)) {
			slot[hs] = i + 1u;
			return;
		}
		hs = (hs + 1u) & (t->hash_cap - 1u);
	}
}

/* The tokens from the source: texts, scores, attributes by type, the hash. */
GPUOS_TOK_FN void gpuos_tok_fill_tokens(struct gpuos_tok *t, const struct gpuos_tok_src *src)
{
	uint8_t *base = (uint8_t *)t;
	uint32_t *idx = (uint32_t *)(base + t->text_idx_off);
	uint8_t *tx = base + t->text_off;
	float *score = (float *)(base + t->score_off);
	uint16_t *attr = (uint16_t *)(base + t->attr_off);
	uint32_t *slot = (uint32_t *)(base + t->hash_off);
	uint32_t o = 0, i, k;
	uint64_t at = 12u;
	for (i = 0; i < t->hash_cap; i++)
		slot[i] = 0;
	for (i = 0; i < t->n_tokens; i++) {
		uint32_t l = (uint32_t)gpuos_tok_rd64(src->tokens + at);
		idx[i] = o;
		if (l) {
			for (k = 0; k < l; k++)
				tx[o + k] = src->tokens[at + 8u + k];
		} else {
			l = gpuos_tok_put_empty(tx + o, i);
		}
		if (l > t->max_token_len)
			t->max_token_len = l;
		score[i] = gpuos_tok_src_score(src, i);
		attr[i] = (uint16_t)gpuos_tok_attr_of_type(gpuos_tok_src_type(src, i));
		gpuos_tok_hash_token(t, i, l);
		o += l;
		idx[i + 1u] = o;
		at += 8u + gpuos_tok_rd64(src->tokens + at);
	}
}

/* The merges (n_merges in the file): "left right" in rank order, hashed;
 * a repeated merge keeps its first rank. */
GPUOS_TOK_FN void gpuos_tok_fill_merges(struct gpuos_tok *t, const struct gpuos_tok_src *src, uint32_t n_merges)
{
	uint8_t *base = (uint8_t *)t;
	uint32_t *midx = (uint32_t *)(base + t->merge_idx_off);
	uint8_t *mt = base + t->merge_text_off;
	uint32_t *slot = (uint32_t *)(base + t->merge_hash_off);
	uint32_t o = 0, r = 0, i, k;
	uint64_t at = 12u;
	for (i = 0; i < t->merge_cap; i++)
		slot[i] = 0;
	midx[0] = 0;
	for (i = 0; i < n_merges; i++) {
		uint32_t l = (uint32_t)gpuos_tok_rd64(src->merges + at), sp, hs;
		const uint8_t *m = src->merges + at + 8u;
		at += 8u + l;
		for (sp = 1; sp < l && m[sp] != ' '; sp++)
			;
		if (sp >= l) /* no split: llama.cpp keeps ("", ""), which no pair meets */
			continue;
		for (k = 0; k < l; k++)
			mt[o + k] = m[k];
		hs = gpuos_tok_fnv(GPUOS_TOK_FNV0, m, l) & (t->merge_cap - 1u);
		for (;;) {
			uint32_t v = slot[hs];
			if (!v) {
				slot[hs] = r + 1u;
				break;
			}
			if (midx[v] - midx[v - 1u] == l && gpuos_tok_eq(mt + midx[v - 1u], m, l))
				break; /* seen: keep the first */
			hs = (hs + 1u) & (t->merge_cap - 1u);
		}
		/* rank r: the file's order (llama.cpp's rank is the index in the
		 * file; only the order of ranks matters) */
		o += l;
		midx[++r] = o;
	}
	t->n_merges = r;
}

/* The special ids: llama.cpp's defaults, then the KVs in its order. */
GPUOS_TOK_FN void gpuos_tok_default_ids(struct gpuos_tok *t, const struct gpuos_tok_src *src)
{
	int32_t *ids = t->id;
	uint32_t i, n = t->n_tokens;
	for (i = 0; i < GPUOS_TOK_ID_COUNT; i++)
		ids[i] = -1;
	if (t->type == GPUOS_TOK_SPM) {
		ids[GPUOS_TOK_ID_BOS] = 1;
		ids[GPUOS_TOK_ID_EOS] = 2;
		ids[GPUOS_TOK_ID_UNK] = 0;
	} else {
		ids[GPUOS_TOK_ID_BOS] = 11;
		ids[GPUOS_TOK_ID_EOS] = 11;
	}
	for (i = 0; i < GPUOS_TOK_KEY_COUNT; i++) {
		uint32_t s = gpuos_tok_key_slot(i);
		if (ids[s] >= 0 && (uint32_t)ids[s] >= n)
			ids[s] = -1; /* a default out of range */
		if (src->id[i] >= 0 && (uint64_t)src->id[i] < n)
			ids[s] = (int32_t)src->id[i]; /* a KV out of range keeps the default */
	}
}

/* An id no KV gave, found by its texts as llama.cpp does: the smallest
 * token of list, and every token of list made control. */
GPUOS_TOK_FN void gpuos_tok_find_id(struct gpuos_tok *t, uint32_t slot, const char *list)
{
	int32_t f;
	if (t->id[slot] < 0 && (f = gpuos_tok_mark(t, list, GPUOS_TOK_A_CONTROL, 0)) >= 0)
		t->id[slot] = f;
}

GPUOS_TOK_FN void gpuos_tok_find_ids(struct gpuos_tok *t)
{
	gpuos_tok_find_id(t, GPUOS_TOK_ID_EOT, GPUOS_TOK_LIST_EOT);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_EOM, "<|eom_id|>");
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_PRE, GPUOS_TOK_LIST_FIM_PRE);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_SUF, GPUOS_TOK_LIST_FIM_SUF);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_MID, GPUOS_TOK_LIST_FIM_MID);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_PAD, GPUOS_TOK_LIST_FIM_PAD);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_REP, GPUOS_TOK_LIST_FIM_REP);
	gpuos_tok_find_id(t, GPUOS_TOK_ID_FIM_SEP, GPUOS_TOK_LIST_FIM_SEP);
}

/* Control tokens named "unused" are unused too. */
GPUOS_TOK_FN void gpuos_tok_mark_unused(struct gpuos_tok *t)
{
	uint16_t *attr = gpuos_tok_attrs_rw(t);
	uint32_t i, k;
	for (i = 0; i < t->n_tokens; i++) {
		uint32_t l;
		const uint8_t *s;
		if (!(attr[i] & GPUOS_TOK_A_CONTROL))
			continue;
		s = gpuos_tok_text(t, (int32_t)i, &l);
		for (k = 0; k + 6u <= l; k++)
			if (gpuos_tok_eqs(s + k, 6, "unused")) {
				attr[i] = (uint16_t)(attr[i] | GPUOS_TOK_A_UNUSED);
				break;
			}
	}
}

/* llama.cpp's exceptions to its EOG texts: "<|end|>" is no EOG beside
 * "<|return|>" and "<|call|>" (o200k_harmony), or "<|calls|>" and
 * "<|flush|>" (solar-open); "</s>" none beside "<|tool_response>". */
GPUOS_TOK_FN void gpuos_tok_eog_exceptions(struct gpuos_tok *t)
{
	uint16_t *attr = gpuos_tok_attrs_rw(t);
	int32_t e_end = gpuos_tok_lookup_s(t, "<|end|>"), e_s = gpuos_tok_lookup_s(t, "</s>");
	int has_ret = gpuos_tok_is_eog(t, gpuos_tok_lookup_s(t, "<|return|>"));
	int has_call = gpuos_tok_is_eog(t, gpuos_tok_lookup_s(t, "<|call|>")) ||
		       gpuos_tok_is_eog(t, gpuos_tok_lookup_s(t, "<|calls|>"));
	int has_flush = gpuos_tok_is_eog(t, gpuos_tok_lookup_s(t, "<|flush|>"));
	if (gpuos_tok_is_eog(t, e_end) && ((has_ret && has_call) || (has_call && has_flush)))
		attr[e_end] = GPUOS_TOK_A_USER_DEFINED;
	if (gpuos_tok_is_eog(t, e_s) && gpuos_tok_is_eog(t, gpuos_tok_lookup_s(t, "<|tool_response>")))
		attr[e_s] = GPUOS_TOK_A_NORMAL;
}

/* End of generation: the fill-in-the-middle pad, repo and separator ids,
 * the EOG texts (made control), EOS, EOT and EOM; gpt-oss's texts that are
 * always shown become user-defined first. */
GPUOS_TOK_FN void gpuos_tok_mark_eog(struct gpuos_tok *t)
{
	uint16_t *attr = gpuos_tok_attrs_rw(t);
	const int32_t *ids = t->id;
	const char *l = GPUOS_TOK_LIST_ALWAYS_USER;
	const uint8_t *s;
	uint32_t k, sl;
	int32_t f;
	for (k = GPUOS_TOK_ID_FIM_PAD; k <= GPUOS_TOK_ID_FIM_SEP; k++)
		if (ids[k] >= 0)
			attr[ids[k]] = (uint16_t)(attr[ids[k]] | GPUOS_TOK_A_EOG);
	gpuos_tok_mark(t, GPUOS_TOK_LIST_EOG, GPUOS_TOK_A_EOG | GPUOS_TOK_A_CONTROL, 0);
	while (gpuos_tok_list_next(&l, &s, &sl))
		if ((f = gpuos_tok_lookup(t, s, sl)) >= 0)
			attr[f] = (uint16_t)(GPUOS_TOK_A_USER_DEFINED | (attr[f] & GPUOS_TOK_A_EOG));
	for (k = GPUOS_TOK_ID_EOS; k <= GPUOS_TOK_ID_EOM; k++)
		if (ids[k] >= 0)
			attr[ids[k]] = (uint16_t)(attr[ids[k]] | GPUOS_TOK_A_EOG);
	gpuos_tok_eog_exceptions(t);
}

/* The special tokens cut out of a text (control, user-defined, unknown),
 * longest first. GPUOS_TOK_OK, or GPUOS_TOK_E_INVALID when there are more
 * than the n_spec_max the layout reserved. */
GPUOS_TOK_FN int gpuos_tok_list_special(struct gpuos_tok *t, uint64_t n_spec_max, char *why, uint32_t why_len)
{
	const uint16_t *attr = gpuos_tok_attrs_rw(t);
	int32_t *sp = (int32_t *)((uint8_t *)t + t->special_off);
	uint32_t wl = 0, ns = 0, i;
	for (i = 0; i < t->n_tokens; i++)
		if (attr[i] & (GPUOS_TOK_A_CONTROL | GPUOS_TOK_A_USER_DEFINED | GPUOS_TOK_A_UNKNOWN)) {
			if (ns >= n_spec_max) {
				GPUOS_TOK_WHY("internal: more special tokens than reserved");
				return GPUOS_TOK_E_INVALID;
			}
			sp[ns++] = (int32_t)i;
		}
	t->n_special = ns;
	gpuos_tok_sort_special(t, sp, ns);
	return GPUOS_TOK_OK;
}

/* Whether general.name has "phi-3" or "phi3" in it, any case. */
GPUOS_TOK_FN int gpuos_tok_is_phi3(const struct gpuos_tok_src *src)
{
	int phi = 0;
	uint32_t k;
	if (!src->name)
		return 0;
	for (k = 0; k < src->name_len && !phi; k++) {
		const char *pat[2] = { "phi-3", "phi3" };
		uint32_t q, j;
		for (q = 0; q < 2u && !phi; q++) {
			for (j = 0; pat[q][j] && k + j < src->name_len; j++) {
				char ch = src->name[k + j];
				if ((ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch) != pat[q][j])
					break;
			}
			phi = pat[q][j] == 0;
		}
	}
	return phi;
}

/* phi-3's special tokens and "</s>" strip the spaces after them; "<unk>",
 * "<s>" and "<|endoftext|>" do not. */
GPUOS_TOK_FN void gpuos_tok_phi3_rstrip(struct gpuos_tok *t)
{
	uint16_t *attr = gpuos_tok_attrs_rw(t);
	const int32_t *sp = (const int32_t *)((const uint8_t *)t + t->special_off);
	uint32_t k;
	int32_t f;
	for (k = 0; k < t->n_special; k++)
		attr[sp[k]] = (uint16_t)(attr[sp[k]] | GPUOS_TOK_A_RSTRIP);
	if ((f = gpuos_tok_lookup_s(t, "</s>")) >= 0)
		attr[f] = (uint16_t)(attr[f] | GPUOS_TOK_A_RSTRIP);
	if ((f = gpuos_tok_lookup_s(t, "<unk>")) >= 0)
		attr[f] = (uint16_t)(attr[f] & ~GPUOS_TOK_A_RSTRIP);
	if ((f = gpuos_tok_lookup_s(t, "<s>")) >= 0)
		attr[f] = (uint16_t)(attr[f] & ~GPUOS_TOK_A_RSTRIP);
	if ((f = gpuos_tok_lookup_s(t, "<|endoftext|>")) >= 0)
		attr[f] = (uint16_t)(attr[f] & ~GPUOS_TOK_A_RSTRIP);
}

/* The attribute fix-ups llama.cpp makes by text, then the special list. */
GPUOS_TOK_FN int gpuos_tok_fix_attrs(struct gpuos_tok *t, const struct gpuos_tok_src *src, uint64_t n_spec_max,
				     char *why, uint32_t why_len)
{
	int rc;
	gpuos_tok_find_ids(t);
	gpuos_tok_mark_unused(t);
	gpuos_tok_mark_eog(t);
	rc = gpuos_tok_list_special(t, n_spec_max, why, why_len);
	if (rc != GPUOS_TOK_OK)
		return rc;
	if (gpuos_tok_is_phi3(src))
		gpuos_tok_phi3_rstrip(t);
	return GPUOS_TOK_OK;
}

/* Each byte's token: SPM's "<0xXX>", else (and BPE's) the byte's own; -1 none. */
GPUOS_TOK_FN void gpuos_tok_byte_fallbacks(struct gpuos_tok *t)
{
	uint32_t i;
	for (i = 0; i < 256u; i++) {
		uint8_t b = (uint8_t)i;
		int32_t one = gpuos_tok_lookup(t, &b, 1);
		if (t->type == GPUOS_TOK_SPM) {
			const char *hx = "0123456789ABCDEF";
			uint8_t s[6];
			int32_t v;
			s[0] = '<';
			s[1] = '0';
			s[2] = 'x';
			s[3] = (uint8_t)hx[i >> 4];
			s[4] = (uint8_t)hx[i & 15u];
			s[5] = '>';
			v = gpuos_tok_lookup(t, s, 6);
			t->byte_tok[i] = v >= 0 ? v : one;
		} else {
			t->byte_tok[i] = one;
		}
	}
}

/*
 * Build the tokenizer of src in arena (arena_len bytes, 8-byte aligned).
 * Returns GPUOS_TOK_OK; GPUOS_TOK_E_NOSPC with *need the bytes it needs
 * (arena may be NULL to ask); or GPUOS_TOK_E_UNSUPPORTED / _E_INVALID with
 * the reason in why (why_len bytes, NUL-terminated; GPUOS_TOK_WHY_MAX is enough).
 */
GPUOS_TOK_ENTRY int gpuos_tok_init(const struct gpuos_tok_src *src, void *arena, uint64_t arena_len,
				   uint64_t *need, char *why, uint32_t why_len)
{
	struct gpuos_tok h, *t;
	struct gpuos_tok_plan p;
	uint32_t wl = 0;
	uint64_t at;
	int rc;

	if (why && why_len)
		why[0] = 0;
	if (need)
		*need = 0;
	rc = gpuos_tok_plan_model(src, &p, why, why_len);
	if (rc == GPUOS_TOK_OK)
		rc = gpuos_tok_plan_arrays(src, &p, why, why_len);
	if (rc != GPUOS_TOK_OK)
		return rc;
	gpuos_tok_plan_specials(src, &p);
	at = gpuos_tok_layout(&h, &p);
	if (at > 0xffffffffu) {
		GPUOS_TOK_WHY("vocabulary too large (over 4 GiB of tables)");
		return GPUOS_TOK_E_INVALID;
	}
	if (need)
		*need = at;
	if (!arena || arena_len < at || ((uintptr_t)arena & 7u)) {
		GPUOS_TOK_WHY(arena && ((uintptr_t)arena & 7u) ? "arena not 8-byte aligned" : "arena too small");
		return GPUOS_TOK_E_NOSPC;
	}
	t = (struct gpuos_tok *)arena;
	*t = h;
	gpuos_tok_fill_tokens(t, src);
	if (p.n_merges)
		gpuos_tok_fill_merges(t, src, (uint32_t)p.n_merges);
	gpuos_tok_default_ids(t, src);
	rc = gpuos_tok_fix_attrs(t, src, p.n_spec_max, why, why_len);
	if (rc != GPUOS_TOK_OK)
		return rc;
	gpuos_tok_byte_fallbacks(t);
	return GPUOS_TOK_OK;
}

/* ---- encode ------------------------------------------------------------------------------------ */

struct gpuos_tok_frag { /* a piece of the text: raw (tok -1) or a special token */
	uint32_t off, len;
	int32_t tok, next;
};
struct gpuos_tok_sym { /* a symbol of the merge loop */
	int32_t prev, next;
	uint32_t off, n;
};
struct gpuos_tok_big { /* a candidate pair: SPM score, BPE -rank (exact below 2^24) */
	float pri;
	int32_t left, right;
	uint32_t size;
};

/* The work area of one encode call, carved from the caller's memory. */
struct gpuos_tok_work {
	struct gpuos_tok_frag *frag;
	uint8_t *buf;        /* the escaped text (SPM) or a mapped word (BPE) */
	uint32_t *cp;        /* code points of a fragment (BPE) */
	uint8_t *fl;         /* their category | White_Space << 3 */
	uint32_t *pa, *pb;   /* pre-tokenizer pieces (lengths in code points) */
	struct gpuos_tok_sym *sym;
	struct gpuos_tok_big *heap;
	uint32_t n_frag, cap_frag, cap_heap, n_heap;
	int32_t *ids;
	uint64_t cap, n;     /* ids written so far (n may pass cap: counted, not written) */
};

/* Bytes of the work area gpuos_tok_encode needs for a text of len bytes. */
GPUOS_TOK_FN uint64_t gpuos_tok_work_bytes(uint64_t len)
{
	uint64_t n = len + 4u;
	return gpuos_tok_align8(16u * (2u * n)) + gpuos_tok_align8(6u * n + 8u) + gpuos_tok_align8(4u * n) +
	       gpuos_tok_align8(n) + 2u * gpuos_tok_align8(4u * n) + gpuos_tok_align8(16u * (3u * n)) +
	       gpuos_tok_align8(16u * (9u * n)) + 64u;
}

GPUOS_TOK_FN void gpuos_tok_emit(struct gpuos_tok_work *w, int32_t id)
{
	if (w->n < w->cap)
		w->ids[w->n] = id;
	w->n++;
}

GPUOS_TOK_FN int gpuos_tok_big_below(const struct gpuos_tok_big *a, const struct gpuos_tok_big *b)
{
	return a->pri < b->pri || (a->pri == b->pri && a->left > b->left);
}

GPUOS_TOK_FN void gpuos_tok_push(struct gpuos_tok_work *w, float pri, int32_t l, int32_t r, uint32_t size)
{
	struct gpuos_tok_big *h = w->heap;
	uint32_t i = w->n_heap;
	if (i >= w->cap_heap)
		return; /* cannot happen: pushes are bounded by 3 per symbol */
	h[i].pri = pri;
	h[i].left = l;
	h[i].right = r;
	h[i].size = size;
	w->n_heap++;
	while (i > 0) {
		uint32_t p = (i - 1u) >> 1;
		struct gpuos_tok_big x;
		if (!gpuos_tok_big_below(&h[p], &h[i]))
			break;
		x = h[p];
		h[p] = h[i];
		h[i] = x;
		i = p;
	}
}

GPUOS_TOK_FN struct gpuos_tok_big gpuos_tok_pop(struct gpuos_tok_work *w)
{
	struct gpuos_tok_big *h = w->heap, top = h[0];
	uint32_t i = 0, n = --w->n_heap;
	h[0] = h[n];
	for (;;) {
		uint32_t c = 2u * i + 1u;
		struct gpuos_tok_big x;
		if (c >= n)
			break;
		if (c + 1u < n && gpuos_tok_big_below(&h[c], &h[c + 1u]))
			c++;
		if (!gpuos_tok_big_below(&h[i], &h[c]))
			break;
		x = h[i];
		h[i] = h[c];
		h[c] = x;
		i = c;
	}
	return top;
}

/* The symbols of buf[0 .. len): one per UTF-8 character (by its lead byte). */
GPUOS_TOK_FN uint32_t gpuos_tok_symbols(struct gpuos_tok_work *w, uint32_t len)
{
	uint32_t off = 0, k = 0;
	while (off < len) {
		uint32_t cl = gpuos_tok_utf8_len(w->buf[off]), nb = cl < len - off ? cl : len - off;
		w->sym[k].prev = (int32_t)k - 1;
		w->sym[k].off = off;
		w->sym[k].n = nb;
		off += nb;
		w->sym[k].next = off == len ? -1 : (int32_t)k + 1;
		k++;
	}
	return k;
}

/* SPM pair: the token of the two symbols' text, by its score. */
GPUOS_TOK_FN void gpuos_tok_spm_try(const struct gpuos_tok *t, struct gpuos_tok_work *w, int32_t l, int32_t r)
{
	int32_t id;
	uint32_t size;
	if (l < 0 || r < 0)
		return;
	size = w->sym[l].n + w->sym[r].n;
	id = gpuos_tok_lookup(t, w->buf + w->sym[l].off, size);
	if (id >= 0)
		gpuos_tok_push(w, gpuos_tok_score(t, id), l, r, size);
}

/* BPE pair: a merge of the two symbols, by its rank. */
GPUOS_TOK_FN void gpuos_tok_bpe_try(const struct gpuos_tok *t, struct gpuos_tok_work *w, int32_t l, int32_t r)
{
	int32_t rank;
	if (l < 0 || r < 0)
		return;
	rank = gpuos_tok_merge_rank(t, w->buf + w->sym[l].off, w->sym[l].n, w->buf + w->sym[r].off, w->sym[r].n);
	if (rank >= 0)
		gpuos_tok_push(w, -(float)rank, l, r, w->sym[l].n + w->sym[r].n);
}

/* Merge the best pairs while there are any (both tokenizers). */
GPUOS_TOK_FN void gpuos_tok_merge(const struct gpuos_tok *t, struct gpuos_tok_work *w, int bpe)
{
	while (w->n_heap) {
		struct gpuos_tok_big b = gpuos_tok_pop(w);
		struct gpuos_tok_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
		if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
			continue; /* one of them merged since */
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			w->sym[r->next].prev = b.left;
		if (bpe) {
			gpuos_tok_bpe_try(t, w, l->prev, b.left);
			gpuos_tok_bpe_try(t, w, b.left, l->next);
		} else {
			gpuos_tok_spm_try(t, w, l->prev, b.left);
			gpuos_tok_spm_try(t, w, b.left, l->next);
		}
	}
}

/* SentencePiece: a raw fragment, " " in front when prefix. */
GPUOS_TOK_FN void gpuos_tok_spm(const struct gpuos_tok *t, struct gpuos_tok_work *w, const uint8_t *s, uint32_t len,
				int prefix)
{
	uint32_t L = 0, i, nsym;
	int32_t k;
	if (prefix) {
		w->buf[L++] = 0xe2;
		w->buf[L++] = 0x96;
		w->buf[L++] = 0x81;
	}
	for (i = 0; i < len; i++) {
		if (s[i] == ' ') {
			w->buf[L++] = 0xe2;
			w->buf[L++] = 0x96;
			w->buf[L++] = 0x81;
		} else {
			w->buf[L++] = s[i];
		}
	}
	nsym = gpuos_tok_symbols(w, L);
	if (!nsym)
		return;
	w->n_heap = 0;
	for (i = 1; i < nsym; i++)
		gpuos_tok_spm_try(t, w, (int32_t)i - 1, (int32_t)i);
	gpuos_tok_merge(t, w, 0);
	for (k = 0; k != -1; k = w->sym[k].next) {
		int32_t id = gpuos_tok_lookup(t, w->buf + w->sym[k].off, w->sym[k].n);
		if (id >= 0) {
			gpuos_tok_emit(w, id);
			continue;
		}
		for (i = 0; i < w->sym[k].n; i++) { /* the bytes: <0xXX> */
			int32_t b = t->byte_tok[w->buf[w->sym[k].off + i]];
			if (b < 0)
				b = t->id[GPUOS_TOK_ID_UNK];
			if (b >= 0)
				gpuos_tok_emit(w, b);
		}
	}
}

/* BPE: one pre-tokenized word, mapped to the byte-level alphabet in buf. */
GPUOS_TOK_FN void gpuos_tok_bpe_word(const struct gpuos_tok *t, struct gpuos_tok_work *w, uint32_t len)
{
	uint32_t i, nsym;
	if (t->flags & GPUOS_TOK_F_IGNORE_MERGES) {
		int32_t id = gpuos_tok_lookup(t, w->buf, len);
		if (id >= 0) {
			gpuos_tok_emit(w, id);
			return;
		}
	}
	nsym = gpuos_tok_symbols(w, len);
	w->n_heap = 0;
	for (i = 1; i < nsym; i++)
		gpuos_tok_bpe_try(t, w, (int32_t)i - 1, (int32_t)i);
	gpuos_tok_merge(t, w, 1);
	for (i = 0; i < nsym; i++) {
		int32_t id;
		uint32_t j;
		if (!w->sym[i].n)
			continue;
		id = gpuos_tok_lookup(t, w->buf + w->sym[i].off, w->sym[i].n);
		if (id >= 0) {
			gpuos_tok_emit(w, id);
			continue;
		}
		for (j = 0; j < w->sym[i].n; j++) { /* what forms no token: its single bytes, where tokens */
			int32_t b = t->byte_tok[w->buf[w->sym[i].off + j]];
			if (b >= 0)
				gpuos_tok_emit(w, b);
		}
	}
}

/* ---- pre-tokenizers: the regexes of llama.cpp, each a split of the pieces ---- */

/* steps: kind << 4 | class */
#define GPUOS_TOK_S_GPT2   1u /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
#define GPUOS_TOK_S_LLAMA3 2u /* llama3's (class: the most digits together, 3 or 1 for qwen2) */
#define GPUOS_TOK_S_RUN    3u /* [class]+ */
#define GPUOS_TOK_S_ONE    4u /* [class] */
#define GPUOS_TOK_S_WSRUN  5u /* \s?[class]+ */
#define GPUOS_TOK_S_TRAIL  6u /* \s+$ */
#define GPUOS_TOK_S_DIGIT3 7u /* [0-9][0-9][0-9] */

/* classes */
#define GPUOS_TOK_C_PUNCT    1u /* [\p{P}\$\+<=>\^~\|] */
#define GPUOS_TOK_C_PUNCT_F  2u /* [\p{P}\$\+<=>\^~\|`] (falcon) */
#define GPUOS_TOK_C_N        3u /* \p{N} */
#define GPUOS_TOK_C_L        4u /* \p{L} */
#define GPUOS_TOK_C_P        5u /* \p{P} */
#define GPUOS_TOK_C_CRLF     6u /* [\r\n] */
#define GPUOS_TOK_C_DS_L     7u /* deepseek-llm's letters (a list of ranges) */
#define GPUOS_TOK_C_DS_P     8u /* deepseek-llm's punctuation */
#define GPUOS_TOK_C_CJK      9u /* [一-龥ࠀ-一가-퟿] */

/* The steps of a pre-tokenizer, k-th (0 after the last). */
GPUOS_TOK_FN uint32_t gpuos_tok_step(uint32_t pre, uint32_t k)
{
#define GPUOS_TOK_ST(kind, cls) (((kind) << 4) | (cls))
	uint32_t s[6] = { 0, 0, 0, 0, 0, 0 };
	switch (pre) {
	case GPUOS_TOK_PRE_DEFAULT:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_PUNCT);
		s[1] = GPUOS_TOK_ST(GPUOS_TOK_S_GPT2, 0);
		s[2] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_N);
		s[3] = GPUOS_TOK_ST(GPUOS_TOK_S_DIGIT3, 0);
		break;
	case GPUOS_TOK_PRE_GPT2:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_GPT2, 0);
		break;
	case GPUOS_TOK_PRE_STARCODER:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_ONE, GPUOS_TOK_C_N);
		s[1] = GPUOS_TOK_ST(GPUOS_TOK_S_GPT2, 0);
		break;
	case GPUOS_TOK_PRE_FALCON:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_PUNCT_F);
		s[1] = GPUOS_TOK_ST(GPUOS_TOK_S_GPT2, 0);
		s[2] = GPUOS_TOK_ST(GPUOS_TOK_S_DIGIT3, 0);
		break;
	case GPUOS_TOK_PRE_DEEPSEEK_LLM:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_ONE, GPUOS_TOK_C_CRLF);
		s[1] = GPUOS_TOK_ST(GPUOS_TOK_S_WSRUN, GPUOS_TOK_C_DS_L);
		s[2] = GPUOS_TOK_ST(GPUOS_TOK_S_WSRUN, GPUOS_TOK_C_DS_P);
		s[3] = GPUOS_TOK_ST(GPUOS_TOK_S_TRAIL, 0);
		s[4] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_CJK);
		s[5] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_N);
		break;
	case GPUOS_TOK_PRE_DEEPSEEK_CODER:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_ONE, GPUOS_TOK_C_CRLF);
		s[1] = GPUOS_TOK_ST(GPUOS_TOK_S_WSRUN, GPUOS_TOK_C_L);
		s[2] = GPUOS_TOK_ST(GPUOS_TOK_S_WSRUN, GPUOS_TOK_C_P);
		s[3] = GPUOS_TOK_ST(GPUOS_TOK_S_RUN, GPUOS_TOK_C_CJK);
		s[4] = GPUOS_TOK_ST(GPUOS_TOK_S_ONE, GPUOS_TOK_C_N);
		break;
	case GPUOS_TOK_PRE_LLAMA3:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_LLAMA3, 3);
		break;
	case GPUOS_TOK_PRE_QWEN2:
		s[0] = GPUOS_TOK_ST(GPUOS_TOK_S_LLAMA3, 1);
		break;
	default:
		break;
	}
#undef GPUOS_TOK_ST
	return k < 6u ? s[k] : 0u;
}

/* deepseek-llm's letter class: [A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-Ֆ
 * Ⴀ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇ
 * ℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ
 * 𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃], as ranges. */
GPUOS_TOK_FN int gpuos_tok_ds_letter(uint32_t c)
{
	static const uint32_t r[] = {
		0x41, 0x5a, 0x61, 0x7a, 0xb5, 0xb5, 0xc0, 0xd6, 0xd8, 0xf6, 0xf8, 0x1ba, 0x1bc, 0x1bf,
		0x1c4, 0x293, 0x295, 0x2af, 0x370, 0x373, 0x376, 0x377, 0x37b, 0x37d, 0x37f, 0x37f,
		0x386, 0x386, 0x388, 0x38a, 0x38c, 0x38c, 0x38e, 0x3a1, 0x3a3, 0x3f5, 0x3f7, 0x481,
		0x48a, 0x52f, 0x531, 0x556, 0x10a0, 0x10c5, 0x13a0, 0x13f5, 0x13f8, 0x13fd, 0x1c90, 0x1cba,
		0x1cbd, 0x1cbf, 0x1d00, 0x1d2b, 0x1d6b, 0x1d77, 0x1d79, 0x1d9a, 0x1e00, 0x1f15, 0x1f18, 0x1f1d,
		0x1f20, 0x1f45, 0x1f48, 0x1f4d, 0x1f50, 0x1f57, 0x1f59, 0x1f59, 0x1f5b, 0x1f5b, 0x1f5d, 0x1f5d,
		0x1f5f, 0x1f7d, 0x1f80, 0x1fb4, 0x1fb6, 0x1fbc, 0x1fbe, 0x1fbe, 0x1fc2, 0x1fc4, 0x1fc6, 0x1fcc,
		0x1fd0, 0x1fd3, 0x1fd6, 0x1fdb, 0x1fe0, 0x1fec, 0x1ff2, 0x1ff4, 0x1ff6, 0x1ffc, 0x2102, 0x2102,
		0x2107, 0x2107, 0x210a, 0x2113, 0x2115, 0x2115, 0x2119, 0x211d, 0x2124, 0x2124, 0x2126, 0x2126,
		0x2128, 0x2128, 0x212a, 0x212d, 0x212f, 0x2134, 0x2139, 0x2139, 0x213c, 0x213f, 0x2145, 0x2149,
		0x214e, 0x214e, 0x2183, 0x2184, 0x2c00, 0x2c7b, 0x2c7e, 0x2ce4, 0x2ceb, 0x2cee, 0x2cf2, 0x2cf3,
		0xa640, 0xa66d, 0xa680, 0xa69b, 0xa722, 0xa76f, 0xa771, 0xa787, 0xa78b, 0xa78e, 0xab70, 0xabbf,
		0xfb00, 0xfb06, 0xfb13, 0xfb17, 0xff21, 0xff3a, 0xff41, 0xff5a, 0x10400, 0x1044f, 0x104b0, 0x104d3,
		0x104d8, 0x104fb, 0x10c80, 0x10cb2, 0x10cc0, 0x10cf2, 0x118a0, 0x118df, 0x1e900, 0x1e943,
	};
	uint32_t i;
	for (i = 0; i < sizeof(r) / sizeof(r[0]); i += 2)
		if (c >= r[i] && c <= r[i + 1])
			return 1;
	return 0;
}

/* Is code point c (flags f) in class cls? \p{..} classes read the category
 * (llama.cpp's "collapsed" text); the others compare code points, with any
 * non-ASCII White_Space read as U+000B (llama.cpp's wregex text). */
GPUOS_TOK_FN int gpuos_tok_in(uint32_t cls, uint32_t c, uint32_t f)
{
	uint32_t cat = f & 7u;
	if (cls >= GPUOS_TOK_C_CRLF && c > 0x7fu && (f & 8u))
		c = 0x0bu;
	switch (cls) {
	case GPUOS_TOK_C_PUNCT_F:
		if (c == '`')
			return 1;
		/* fall through */
	case GPUOS_TOK_C_PUNCT:
		return cat == GPUOS_TOK_CAT_P || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
		       c == '^' || c == '~' || c == '|';
	case GPUOS_TOK_C_N: return cat == GPUOS_TOK_CAT_N;
	case GPUOS_TOK_C_L: return cat == GPUOS_TOK_CAT_L;
	case GPUOS_TOK_C_P: return cat == GPUOS_TOK_CAT_P;
	case GPUOS_TOK_C_CRLF: return c == '\r' || c == '\n';
	case GPUOS_TOK_C_DS_L: return gpuos_tok_ds_letter(c);
	case GPUOS_TOK_C_DS_P: /* [!-/:-~！-／：-～‘-‟　-。] */
		return (c >= 0x21u && c <= 0x2fu) || (c >= 0x3au && c <= 0x7eu) || (c >= 0xff01u && c <= 0xff0fu) ||
		       (c >= 0xff1au && c <= 0xff5eu) || (c >= 0x2018u && c <= 0x201fu) ||
		       (c >= 0x3000u && c <= 0x3002u);
	case GPUOS_TOK_C_CJK: return (c >= 0x800u && c <= 0x9fa5u) || (c >= 0xac00u && c <= 0xd7ffu);
	default: return 0;
	}
}

/* flags of the code point at pos inside the piece [a, b): category | ws << 3,
 * | 0x100 to say "inside"; 0 outside */
#define GPUOS_TOK_F(pos) ((pos) >= a && (pos) < b ? (uint32_t)fl[pos] | 0x100u : 0u)
#define GPUOS_TOK_IS_L(f) (((f) & 7u) == GPUOS_TOK_CAT_L)
#define GPUOS_TOK_IS_N(f) (((f) & 7u) == GPUOS_TOK_CAT_N)
#define GPUOS_TOK_IS_WS(f) (((f) & 8u) != 0)
#define GPUOS_TOK_CUT()                         \
	do {                                    \
		if (pos > prev)                 \
			pb[nb++] = pos - prev;  \
		prev = pos;                     \
	} while (0)

/* GPT-2's regex, as llama.cpp's hand-written matcher of it runs. */
GPUOS_TOK_FN uint32_t gpuos_tok_split_gpt2(const uint32_t *cp, const uint8_t *fl, uint32_t a, uint32_t b,
					   uint32_t *pb, uint32_t nb)
{
	uint32_t pos = a, prev = a;
	while (pos < b) {
		uint32_t c = cp[pos], f = GPUOS_TOK_F(pos), f2, nw;
		if (c == '\'' && pos + 1u < b) {
			uint32_t c1 = cp[pos + 1u];
			if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
				pos += 2u;
				GPUOS_TOK_CUT();
				continue;
			}
			if (pos + 2u < b) {
				uint32_t c2 = cp[pos + 2u];
				if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
					pos += 3u;
					GPUOS_TOK_CUT();
					continue;
				}
			}
		}
		f2 = c == ' ' ? GPUOS_TOK_F(pos + 1u) : f;
		if (GPUOS_TOK_IS_L(f2)) { /* " ?\p{L}+" */
			pos += c == ' ';
			while (GPUOS_TOK_IS_L(GPUOS_TOK_F(pos)))
				pos++;
			GPUOS_TOK_CUT();
			continue;
		}
		if (GPUOS_TOK_IS_N(f2)) { /* " ?\p{N}+" */
			pos += c == ' ';
			while (GPUOS_TOK_IS_N(GPUOS_TOK_F(pos)))
				pos++;
			GPUOS_TOK_CUT();
			continue;
		}
		if (f2 && !GPUOS_TOK_IS_WS(f2) && !GPUOS_TOK_IS_L(f2) && !GPUOS_TOK_IS_N(f2)) { /* " ?[^\s\p{L}\p{N}]+" */
			pos += c == ' ';
			for (;;) {
				uint32_t g = GPUOS_TOK_F(pos);
				if (!g || GPUOS_TOK_IS_WS(g) || GPUOS_TOK_IS_L(g) || GPUOS_TOK_IS_N(g))
					break;
				pos++;
			}
			GPUOS_TOK_CUT();
			continue;
		}
		for (nw = 0; GPUOS_TOK_IS_WS(GPUOS_TOK_F(pos + nw)); nw++)
			;
		if (nw > 1u && pos + nw < b) { /* "\s+(?!\S)": all but the last */
			pos += nw - 1u;
			GPUOS_TOK_CUT();
			continue;
		}
		if (nw > 0u) {
			pos += nw;
			GPUOS_TOK_CUT();
			continue;
		}
		pos++;
		GPUOS_TOK_CUT();
	}
	return nb;
}

/* llama3's contractions, (?i:'s|'t|'re|'ve|'m|'ll|'d), at the quote at
 * pos of a piece ending at b: the code points they take, 0 if none. */
GPUOS_TOK_FN uint32_t gpuos_tok_llama3_contraction(const uint32_t *cp, uint32_t pos, uint32_t b)
{
	uint32_t c1, c2;
	if (pos + 1u >= b)
		return 0;
	c1 = cp[pos + 1u];
	c1 = (c1 >= 'A' && c1 <= 'Z') ? c1 + 32u : c1;
	if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
		return 2u;
	if (pos + 2u >= b)
		return 0;
	c2 = cp[pos + 2u];
	c2 = (c2 >= 'A' && c2 <= 'Z') ? c2 + 32u : c2;
	if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))
		return 3u;
	return 0;
}

/* llama3's regex (digits: 3; qwen2's: 1), as llama.cpp's matcher runs it:
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 * ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
GPUOS_TOK_FN uint32_t gpuos_tok_split_llama3(const uint32_t *cp, const uint8_t *fl, uint32_t a, uint32_t b,
					     uint32_t digits, uint32_t *pb, uint32_t nb)
{
	uint32_t pos = a, prev = a;
	while (pos < b) {
		uint32_t c = cp[pos], f = GPUOS_TOK_F(pos), f2, nw, last, nc;
		if (c == '\'' && (nc = gpuos_tok_llama3_contraction(cp, pos, b)) != 0) {
			pos += nc;
			GPUOS_TOK_CUT();
			continue;
		}
		if (!(c == '\r' || c == '\n' || GPUOS_TOK_IS_N(f)) &&
		    (GPUOS_TOK_IS_L(f) || GPUOS_TOK_IS_L(GPUOS_TOK_F(pos + 1u)))) {
			pos++;
			while (GPUOS_TOK_IS_L(GPUOS_TOK_F(pos)))
				pos++;
			GPUOS_TOK_CUT();
			continue;
		}
		if (GPUOS_TOK_IS_N(f)) {
			uint32_t ini = pos;
			while (GPUOS_TOK_IS_N(GPUOS_TOK_F(pos))) {
				if (++pos - ini >= digits) {
					GPUOS_TOK_CUT();
					ini = pos;
				}
			}
			GPUOS_TOK_CUT();
			continue;
		}
		f2 = c == ' ' ? GPUOS_TOK_F(pos + 1u) : f;
		if (f && !GPUOS_TOK_IS_WS(f2) && !GPUOS_TOK_IS_L(f2) && !GPUOS_TOK_IS_N(f2)) {
			pos += c == ' ';
			for (;;) {
				uint32_t g = GPUOS_TOK_F(pos);
				if (!g || GPUOS_TOK_IS_WS(g) || GPUOS_TOK_IS_L(g) || GPUOS_TOK_IS_N(g))
					break;
				pos++;
			}
			while (pos < b && (cp[pos] == '\r' || cp[pos] == '\n'))
				pos++;
			GPUOS_TOK_CUT();
			continue;
		}
		last = 0;
		for (nw = 0; GPUOS_TOK_IS_WS(GPUOS_TOK_F(pos + nw)); nw++)
			if (cp[pos + nw] == '\r' || cp[pos + nw] == '\n')
				last = pos + nw + 1u;
		if (last > 0u) { /* "\s*[\r\n]+" */
			pos = last;
			GPUOS_TOK_CUT();
			continue;
		}
		if (nw > 1u && pos + nw < b) {
			pos += nw - 1u;
			GPUOS_TOK_CUT();
			continue;
		}
		if (nw > 0u) {
			pos += nw;
			GPUOS_TOK_CUT();
			continue;
		}
		pos++;
		GPUOS_TOK_CUT();
	}
	return nb;
}

/* One step over the pieces pa (np of them) into pb: the pieces the step's
 * regex cuts each into (its matches and what lies between them). */
GPUOS_TOK_FN uint32_t gpuos_tok_split(uint32_t step, const uint32_t *cp, const uint8_t *fl, const uint32_t *pa,
				      uint32_t np, uint32_t *pb)
{
	uint32_t kind = step >> 4, cls = step & 15u, q, a = 0, nb = 0;
	for (q = 0; q < np; q++) {
		uint32_t b = a + pa[q], pos = a, prev = a;
		if (kind == GPUOS_TOK_S_GPT2) {
			nb = gpuos_tok_split_gpt2(cp, fl, a, b, pb, nb);
		} else if (kind == GPUOS_TOK_S_LLAMA3) {
			nb = gpuos_tok_split_llama3(cp, fl, a, b, cls, pb, nb);
		} else if (kind == GPUOS_TOK_S_TRAIL) { /* \s+$: the trailing run of White_Space */
			uint32_t e = b;
			while (e > a && (fl[e - 1u] & 8u))
				e--;
			if (e > a)
				pb[nb++] = e - a;
			if (e < b)
				pb[nb++] = b - e;
		} else {
			while (pos < b) {
				uint32_t e = 0, s0 = pos;
				if (kind == GPUOS_TOK_S_RUN || kind == GPUOS_TOK_S_ONE) {
					if (gpuos_tok_in(cls, cp[pos], fl[pos]))
						e = pos + 1u;
				} else if (kind == GPUOS_TOK_S_WSRUN) {
					if ((fl[pos] & 8u) && pos + 1u < b && gpuos_tok_in(cls, cp[pos + 1u], fl[pos + 1u]))
						e = pos + 2u;
					else if (gpuos_tok_in(cls, cp[pos], fl[pos]))
						e = pos + 1u;
				} else if (kind == GPUOS_TOK_S_DIGIT3) {
					if (pos + 3u <= b && cp[pos] - '0' < 10u && cp[pos + 1u] - '0' < 10u &&
					    cp[pos + 2u] - '0' < 10u)
						e = pos + 3u;
				}
				if (!e) {
					pos++;
					continue;
				}
				if (kind == GPUOS_TOK_S_RUN || kind == GPUOS_TOK_S_WSRUN)
					while (e < b && gpuos_tok_in(cls, cp[e], fl[e]))
						e++;
				if (s0 > prev)
					pb[nb++] = s0 - prev;
				pb[nb++] = e - s0;
				prev = pos = e;
			}
			if (prev < b)
				pb[nb++] = b - prev;
		}
		a = b;
	}
	return nb;
}
#undef GPUOS_TOK_F
#undef GPUOS_TOK_IS_L
#undef GPUOS_TOK_IS_N
#undef GPUOS_TOK_IS_WS
#undef GPUOS_TOK_CUT

/* BPE: a raw fragment: code points, pre-tokenizer, then each word. */
GPUOS_TOK_FN void gpuos_tok_bpe(const struct gpuos_tok *t, struct gpuos_tok_work *w, const uint8_t *s, uint32_t len)
{
	uint32_t ncp = 0, o = 0, np = 1, k, q, c0 = 0, step;
	uint32_t *pa = w->pa, *pb = w->pb;
	while (o < len) {
		uint32_t c = gpuos_tok_utf8_next(s, len, &o);
		w->cp[ncp] = c;
		w->fl[ncp] = (uint8_t)(gpuos_tok_ucat(c) | (gpuos_tok_is_ws(c) ? 8u : 0u));
		ncp++;
	}
	if (!ncp)
		return;
	pa[0] = ncp;
	for (k = 0; (step = gpuos_tok_step(t->pre, k)) != 0; k++) {
		uint32_t *x;
		np = gpuos_tok_split(step, w->cp, w->fl, pa, np, pb);
		x = pa;
		pa = pb;
		pb = x;
	}
	for (q = 0; q < np; q++) {
		uint32_t L = 0, i;
		for (i = c0; i < c0 + pa[q]; i++) {
			uint8_t u[4];
			uint32_t nu = gpuos_tok_utf8_put(w->cp[i], u), j;
			for (j = 0; j < nu; j++)
				L += gpuos_tok_utf8_put(gpuos_tok_byte_cpt(u[j]), w->buf + L);
		}
		c0 += pa[q];
		gpuos_tok_bpe_word(t, w, L);
	}
}

GPUOS_TOK_FN int gpuos_tok_isspace(uint8_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* The work area of an encode call for a text of len bytes, carved from
 * work (gpuos_tok_work_bytes(len) of it); ids (room for cap) its output. */
GPUOS_TOK_FN void gpuos_tok_work_carve(struct gpuos_tok_work *w, void *work, uint32_t len, int32_t *ids, uint32_t cap)
{
	uint8_t *p = (uint8_t *)work;
	uint64_t n = (uint64_t)len + 4u;
	w->frag = (struct gpuos_tok_frag *)p;
	p += gpuos_tok_align8(16u * (2u * n));
	w->buf = p;
	p += gpuos_tok_align8(6u * n + 8u);
	w->cp = (uint32_t *)p;
	p += gpuos_tok_align8(4u * n);
	w->fl = p;
	p += gpuos_tok_align8(n);
	w->pa = (uint32_t *)p;
	p += gpuos_tok_align8(4u * n);
	w->pb = (uint32_t *)p;
	p += gpuos_tok_align8(4u * n);
	w->sym = (struct gpuos_tok_sym *)p;
	p += gpuos_tok_align8(16u * (3u * n));
	w->heap = (struct gpuos_tok_big *)p;
	w->cap_heap = (uint32_t)(9u * n);
	w->cap_frag = (uint32_t)(2u * n);
	w->n_heap = 0;
	w->ids = ids;
	w->cap = ids ? cap : 0;
	w->n = 0;
}

/* Cut the special token id (text tt, lt bytes; attributes a) out of the
 * raw fragment *fp of s wherever it occurs, with the spaces its LSTRIP and
 * RSTRIP take; *fp ends at the last fragment made. Returns 0, or
 * GPUOS_TOK_E_NOSPC when the fragments run out. */
GPUOS_TOK_FN int gpuos_tok_cut_frag(struct gpuos_tok_work *w, int32_t *fp, const uint8_t *s, int32_t id, uint32_t a,
				    const uint8_t *tt, uint32_t lt)
{
	int32_t f = *fp;
	while (w->frag[f].tok < 0 && w->frag[f].len >= lt) {
		uint32_t off = w->frag[f].off, fl = w->frag[f].len, q, m, ll, ro, rl;
		for (q = 0; q + lt <= fl; q++)
			if (s[off + q] == tt[0] && gpuos_tok_eq(s + off + q, tt, lt))
				break;
		if (q + lt > fl)
			break;
		m = off + q;
		ll = q;
		if (a & GPUOS_TOK_A_LSTRIP)
			while (ll > 0 && gpuos_tok_isspace(s[off + ll - 1u]))
				ll--;
		ro = m + lt;
		rl = off + fl - ro;
		if (a & GPUOS_TOK_A_RSTRIP)
			while (rl > 0 && gpuos_tok_isspace(s[ro])) {
				ro++;
				rl--;
			}
		if (w->n_frag + 2u > w->cap_frag)
			return GPUOS_TOK_E_NOSPC; /* cannot happen: 2 per match, a match per byte */
		if (ll > 0) {
			int32_t g = (int32_t)w->n_frag++;
			w->frag[f].len = ll;
			w->frag[g].next = w->frag[f].next;
			w->frag[f].next = g;
			f = g;
		}
		w->frag[f].off = m;
		w->frag[f].len = lt;
		w->frag[f].tok = id;
		if (rl > 0) {
			int32_t g = (int32_t)w->n_frag++;
			w->frag[g].off = ro;
			w->frag[g].len = rl;
			w->frag[g].tok = -1;
			w->frag[g].next = w->frag[f].next;
			w->frag[f].next = g;
			f = g;
		}
	}
	*fp = f;
	return 0;
}

/* The text (len bytes) as a list of fragments: the special tokens' texts
 * cut out, longest first (control and unknown ones only with
 * GPUOS_TOK_PARSE_SPECIAL), raw text between them. 0, or GPUOS_TOK_E_NOSPC. */
GPUOS_TOK_FN int gpuos_tok_cut_specials(const struct gpuos_tok *t, struct gpuos_tok_work *w, const uint8_t *s,
					uint32_t len, uint32_t flags)
{
	const int32_t *sp = (const int32_t *)(gpuos_tok_base(t) + t->special_off);
	const uint16_t *attr = (const uint16_t *)(gpuos_tok_base(t) + t->attr_off);
	uint32_t k;
	int32_t f;
	w->n_frag = 0;
	if (len) {
		w->frag[0].off = 0;
		w->frag[0].len = len;
		w->frag[0].tok = -1;
		w->frag[0].next = -1;
		w->n_frag = 1;
	}
	for (k = 0; k < t->n_special && w->n_frag; k++) {
		int32_t id = sp[k];
		uint32_t a = attr[id], lt;
		const uint8_t *tt = gpuos_tok_text(t, id, &lt);
		if (!(flags & GPUOS_TOK_PARSE_SPECIAL) && (a & (GPUOS_TOK_A_CONTROL | GPUOS_TOK_A_UNKNOWN)))
			continue;
		for (f = 0; f >= 0; f = w->frag[f].next)
			if (gpuos_tok_cut_frag(w, &f, s, id, a, tt, lt))
				return GPUOS_TOK_E_NOSPC;
	}
	return 0;
}

/*
 * Tokenize text (len bytes) into ids (room for cap): returns the number of
 * tokens (when more than cap, only the first cap are written: call again
 * with more room), or GPUOS_TOK_E_NOSPC when work (work_len bytes, 8-byte
 * aligned) is under gpuos_tok_work_bytes(len), GPUOS_TOK_E_ARENA.
 * flags: GPUOS_TOK_ADD_SPECIAL, GPUOS_TOK_PARSE_SPECIAL (llama_tokenize's).
 */
GPUOS_TOK_ENTRY int64_t gpuos_tok_encode(const struct gpuos_tok *t, const char *text, uint32_t len,
					 uint32_t flags, int32_t *ids, uint32_t cap, void *work,
					 uint64_t work_len)
{
	struct gpuos_tok_work w;
	const uint8_t *s = (const uint8_t *)text;
	int32_t f;
	int prev_special = 1;

	if (!t || t->magic != GPUOS_TOK_MAGIC || t->version != GPUOS_TOK_VERSION)
		return GPUOS_TOK_E_ARENA;
	if (!work || work_len < gpuos_tok_work_bytes(len) || ((uintptr_t)work & 7u))
		return GPUOS_TOK_E_NOSPC;
	gpuos_tok_work_carve(&w, work, len, ids, cap);
	if (gpuos_tok_cut_specials(t, &w, s, len, flags))
		return GPUOS_TOK_E_NOSPC;

	if ((flags & GPUOS_TOK_ADD_SPECIAL) && (t->flags & GPUOS_TOK_F_ADD_BOS) && t->id[GPUOS_TOK_ID_BOS] >= 0)
		gpuos_tok_emit(&w, t->id[GPUOS_TOK_ID_BOS]);
	for (f = w.n_frag ? 0 : -1; f >= 0; f = w.frag[f].next) {
		if (w.frag[f].tok >= 0) {
			gpuos_tok_emit(&w, w.frag[f].tok);
			prev_special = 1;
			continue;
		}
		if (t->type == GPUOS_TOK_SPM)
			gpuos_tok_spm(t, &w, s + w.frag[f].off, w.frag[f].len,
				      prev_special && (t->flags & GPUOS_TOK_F_SPACE_PREFIX));
		else
			gpuos_tok_bpe(t, &w, s + w.frag[f].off, w.frag[f].len);
		prev_special = 0;
	}
	if ((flags & GPUOS_TOK_ADD_SPECIAL) && (t->flags & GPUOS_TOK_F_ADD_EOS) && t->id[GPUOS_TOK_ID_EOS] >= 0)
		gpuos_tok_emit(&w, t->id[GPUOS_TOK_ID_EOS]);
	return (int64_t)w.n;
}

/* ---- decode -------------------------------------------------------------------------------------- */

struct gpuos_tok_out {
	uint8_t *p;
	uint64_t cap, n;
	uint32_t skip; /* leading spaces still to drop */
};

GPUOS_TOK_FN void gpuos_tok_put(struct gpuos_tok_out *o, uint8_t c)
{
	if (o->skip && o->n == 0 && c == ' ') {
		o->skip--;
		return;
	}
	if (o->n < o->cap)
		o->p[o->n] = c;
	o->n++;
}

GPUOS_TOK_FN int gpuos_tok_hex(uint8_t c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
 * The text of token id (llama_token_to_piece): at most lstrip leading spaces
 * dropped; flags GPUOS_TOK_UNPARSE_SPECIAL shows control and unknown tokens.
 * Returns its length, written to out when it fits in cap; GPUOS_TOK_E_TOKEN.
 */
GPUOS_TOK_FN int64_t gpuos_tok_piece(const struct gpuos_tok *t, int32_t id, uint32_t lstrip, uint32_t flags,
				     char *out, uint64_t cap)
{
	struct gpuos_tok_out o;
	uint32_t a, l, i;
	const uint8_t *tx;
	if (id < 0 || (uint32_t)id >= t->n_tokens)
		return GPUOS_TOK_E_TOKEN;
	o.p = (uint8_t *)out;
	o.cap = out ? cap : 0;
	o.n = 0;
	o.skip = lstrip;
	a = gpuos_tok_attr(t, id);
	if (!(flags & GPUOS_TOK_UNPARSE_SPECIAL) && (a & (GPUOS_TOK_A_UNKNOWN | GPUOS_TOK_A_CONTROL)))
		return 0;
	tx = gpuos_tok_text(t, id, &l);
	if (a & (GPUOS_TOK_A_UNKNOWN | GPUOS_TOK_A_CONTROL | GPUOS_TOK_A_USER_DEFINED)) {
		for (i = 0; i < l; i++)
			gpuos_tok_put(&o, tx[i]);
	} else if (a & GPUOS_TOK_A_NORMAL) {
		if (t->type == GPUOS_TOK_SPM) { /* U+2581 is a space */
			for (i = 0; i < l; i++) {
				if (i + 2u < l && tx[i] == 0xe2 && tx[i + 1u] == 0x96 && tx[i + 2u] == 0x81) {
					gpuos_tok_put(&o, ' ');
					i += 2u;
				} else {
					gpuos_tok_put(&o, tx[i]);
				}
			}
		} else { /* the byte-level alphabet back to bytes */
			uint32_t at = 0;
			while (at < l) {
				uint32_t c = gpuos_tok_utf8_next(tx, l, &at);
				int32_t b = gpuos_tok_cpt_byte(c);
				if (b >= 0) {
					gpuos_tok_put(&o, (uint8_t)b);
				} else { /* llama.cpp: "[UNK_BYTE_0x" + the character's UTF-8 + the token + "]" */
					const char *u = "[UNK_BYTE_0x", *hx = "0123456789abcdef";
					uint8_t e[4];
					uint32_t ne = gpuos_tok_utf8_put(c, e), j;
					for (j = 0; u[j]; j++)
						gpuos_tok_put(&o, (uint8_t)u[j]);
					for (j = 0; j < ne; j++) {
						gpuos_tok_put(&o, (uint8_t)hx[e[j] >> 4]);
						gpuos_tok_put(&o, (uint8_t)hx[e[j] & 15u]);
					}
					for (j = 0; j < l; j++)
						gpuos_tok_put(&o, tx[j]);
					gpuos_tok_put(&o, ']');
				}
			}
		}
	} else if (a & GPUOS_TOK_A_BYTE) { /* "<0xXX>" */
		int v = 0, d;
		for (i = 3; i < 5u && i < l && (d = gpuos_tok_hex(tx[i])) >= 0; i++)
			v = v * 16 + d;
		gpuos_tok_put(&o, (uint8_t)v);
	}
	return (int64_t)o.n;
}

/*
 * The text of ids (llama_detokenize): returns its length, written to out
 * when it fits in cap (else call again with that much room);
 * GPUOS_TOK_E_TOKEN, GPUOS_TOK_E_ARENA. The first piece loses one leading
 * space where the vocabulary prefixes one (SPM); flags:
 * GPUOS_TOK_REMOVE_SPECIAL, GPUOS_TOK_UNPARSE_SPECIAL.
 */
GPUOS_TOK_ENTRY int64_t gpuos_tok_decode(const struct gpuos_tok *t, const int32_t *ids, uint32_t n,
					 uint32_t flags, char *out, uint64_t cap)
{
	uint32_t remove_space, i;
	uint64_t total = 0;
	uint8_t *x = (uint8_t *)out;
	if (!t || t->magic != GPUOS_TOK_MAGIC || t->version != GPUOS_TOK_VERSION)
		return GPUOS_TOK_E_ARENA;
	if (!out)
		cap = 0;
	remove_space = (t->flags & GPUOS_TOK_F_SPACE_PREFIX) ? 1u : 0u;
	if ((flags & GPUOS_TOK_REMOVE_SPECIAL) && (t->flags & GPUOS_TOK_F_ADD_BOS) && n > 0 &&
	    ids[0] == t->id[GPUOS_TOK_ID_BOS]) {
		remove_space = 0;
		ids++;
		n--;
	}
	if ((flags & GPUOS_TOK_REMOVE_SPECIAL) && (t->flags & GPUOS_TOK_F_ADD_EOS) && n > 0 &&
	    ids[n - 1u] == t->id[GPUOS_TOK_ID_EOS])
		n--;
	for (i = 0; i < n; i++) {
		int64_t r = gpuos_tok_piece(t, ids[i], remove_space, flags, total < cap ? out + total : 0,
					    total < cap ? cap - total : 0);
		if (r < 0)
			return r;
		remove_space = 0;
		total += (uint64_t)r;
	}
	if (total > cap || !(t->flags & GPUOS_TOK_F_CLEAN_SPACES))
		return (int64_t)total;
	{ /* llama.cpp's clean_up_tokenization_spaces, its three passes */
		int64_t tot = (int64_t)total, t1, t2, t3, j;
		t1 = tot;
		tot = tot ? 1 : 0;
		for (j = 1; j < t1; j++) { /* " ?", " !", " .", " ," */
			uint8_t c = x[j];
			if (x[j - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ','))
				tot--;
			x[tot++] = c;
		}
		t2 = tot;
		tot = tot ? 1 : 0;
		for (j = 1; j < t2; j++) { /* " ' " */
			uint8_t c = x[j];
			if (c == '\'' && j + 1 < t2 && x[j - 1] == ' ' && x[j + 1] == ' ') {
				tot--;
				x[++j] = 0;
			}
			x[tot++] = c;
		}
		t3 = tot;
		tot = tot ? 1 : 0;
		for (j = 1; j < t3; j++) { /* " 's", " 'm", " 're", " 've" */
			uint8_t c = x[j];
			if (x[j - 1] == ' ' && c == '\'' && j + 1 < t3) {
				uint8_t c1 = x[j + 1];
				if (c1 == 's' || c1 == 'm')
					tot--;
				else if (j + 2 < t3 && ((c1 == 'r' && x[j + 2] == 'e') || (c1 == 'v' && x[j + 2] == 'e')))
					tot--;
			}
			x[tot++] = c;
		}
		return tot;
	}
}

#endif /* GPUOS_APPS_LLAMA_TOKENIZER_H */
