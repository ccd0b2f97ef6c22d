/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/safetensors/safetensors.c - safetensors header parser (see
 * safetensors.h for the format and the rules).
 *
 * The JSON is parsed against the schema, not into a tree: the top object's
 * entries are either "__metadata__" (an object of strings, or null) or a
 * tensor (an object of dtype, shape and data_offsets), so each value's type is
 * known where it starts and nothing is ever skipped. One pass fills the
 * caller's tables; then heapsorts (in place, no allocation, O(t log t) even at
 * 100k tensors) find duplicate names and put the tensors in file order, where
 * one walk checks that they tile the data area.
 *
 * String bodies stay in the header as raw spans. They are decoded on the fly,
 * one unit (an escape or a UTF-8 sequence) at a time, by st_unit, which both
 * validates (during the parse) and decodes (for comparisons, hashes and
 * gpuos_st_str_decode); it never reads outside the span it is given.
 *
 * Every helper here is prefixed st_: kernels/ may include several runtime/
 * sources in one translation unit.
 */
#include "safetensors.h"
#include "../../util.h"

#define ST_FNV_OFFSET 2166136261u
#define ST_FNV_PRIME  16777619u

/* ---- dtypes (switches, not arrays: a file-scope array is not visible in
 * nvcc's device pass) ---------------------------------------------------------- */

GPUOS_HD const char *gpuos_st_dtype_name(uint32_t dtype)
{
	switch (dtype) {
	case GPUOS_ST_DTYPE_BOOL: return "BOOL";
	case GPUOS_ST_DTYPE_U8: return "U8";
	case GPUOS_ST_DTYPE_I8: return "I8";
	case GPUOS_ST_DTYPE_F8_E5M2: return "F8_E5M2";
	case GPUOS_ST_DTYPE_F8_E4M3: return "F8_E4M3";
	case GPUOS_ST_DTYPE_I16: return "I16";
	case GPUOS_ST_DTYPE_U16: return "U16";
	case GPUOS_ST_DTYPE_F16: return "F16";
	case GPUOS_ST_DTYPE_BF16: return "BF16";
	case GPUOS_ST_DTYPE_I32: return "I32";
	case GPUOS_ST_DTYPE_U32: return "U32";
	case GPUOS_ST_DTYPE_F32: return "F32";
	case GPUOS_ST_DTYPE_F64: return "F64";
	case GPUOS_ST_DTYPE_I64: return "I64";
	case GPUOS_ST_DTYPE_U64: return "U64";
	default: return NULL;
	}
}

GPUOS_HD uint32_t gpuos_st_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case GPUOS_ST_DTYPE_BOOL:
	case GPUOS_ST_DTYPE_U8:
	case GPUOS_ST_DTYPE_I8:
	case GPUOS_ST_DTYPE_F8_E5M2:
	case GPUOS_ST_DTYPE_F8_E4M3:
		return 1;
	case GPUOS_ST_DTYPE_I16:
	case GPUOS_ST_DTYPE_U16:
	case GPUOS_ST_DTYPE_F16:
	case GPUOS_ST_DTYPE_BF16:
		return 2;
	case GPUOS_ST_DTYPE_I32:
	case GPUOS_ST_DTYPE_U32:
	case GPUOS_ST_DTYPE_F32:
		return 4;
	case GPUOS_ST_DTYPE_F64:
	case GPUOS_ST_DTYPE_I64:
	case GPUOS_ST_DTYPE_U64:
		return 8;
	default:
		return 0;
	}
}

/* dtypes of the format (safetensors 0.5 and later) that this parser refuses
 * as not supported: sub-byte floats, the scale and FNUZ fp8 kinds, complex. */
static GPUOS_HD const char *st_unsupported_dtype(uint32_t i)
{
	switch (i) {
	case 0: return "F4";
	case 1: return "F6_E2M3";
	case 2: return "F6_E3M2";
	case 3: return "F8_E8M0";
	case 4: return "F8_E4M3FNUZ";
	case 5: return "F8_E5M2FNUZ";
	case 6: return "C64";
	default: return NULL;
	}
}

/* The prefixes of gpuos_st_layer_of (safetensors.h lists them). None is a
 * prefix of another, so at most one matches a name. */
static GPUOS_HD const char *st_layer_prefix(uint32_t i)
{
	switch (i) {
	case 0: return "model.layers.";
	case 1: return "model.decoder.layers.";
	case 2: return "model.language_model.layers.";
	case 3: return "language_model.model.layers.";
	case 4: return "transformer.h.";
	case 5: return "transformer.blocks.";
	case 6: return "gpt_neox.layers.";
	case 7: return "layers.";
	case 8: return "blk.";
	default: return NULL;
	}
}

/* The longest prefix above plus the digits of GPUOS_ST_MAX_LAYER and the dot
 * fit in this many bytes: a name's first ST_LAYER_PEEK bytes decide its layer. */
#define ST_LAYER_PEEK 40u
static_assert(sizeof(((struct gpuos_st *)0)->peek_) == ST_LAYER_PEEK, "struct gpuos_st.peek_ holds ST_LAYER_PEEK bytes");

GPUOS_HD int32_t gpuos_st_layer_of(const char *name, size_t len)
{
	const char *p;
	uint32_t i, v;
	size_t pl, j;

	for (i = 0; (p = st_layer_prefix(i)) != NULL; i++) {
		pl = gpuos_str_len(p);
		if (len <= pl || gpuos_mem_cmp(name, p, pl))
			continue;
		j = pl;
		if (name[j] == '0' && j + 1 < len && name[j + 1] >= '0' && name[j + 1] <= '9')
			return -1; /* a leading zero: not a layer number */
		v = 0;
		while (j < len && name[j] >= '0' && name[j] <= '9') {
			v = v * 10u + (uint32_t)(name[j] - '0');
			if (v > GPUOS_ST_MAX_LAYER)
				return -1;
			j++;
		}
		if (j == pl || j >= len || name[j] != '.')
			return -1;
		return (int32_t)v;
	}
	return -1;
}

/* ---- string bodies ------------------------------------------------------------- */

/* st_unit's failures */
#define ST_U_CTRL  (-1)  /* a raw control character (below U+0020) */
#define ST_U_ESC   (-2)  /* an unknown escape, or an unescaped quote */
#define ST_U_HEX   (-3)  /* \u not followed by four hex digits */
#define ST_U_SURR  (-4)  /* a lone or reversed UTF-16 surrogate */
#define ST_U_UTF8  (-5)  /* a byte sequence that is not UTF-8 */
#define ST_U_TRUNC (-6)  /* an escape or a UTF-8 sequence cut by the end */

static GPUOS_HD const char *st_unit_why(int k)
{
	switch (k) {
	case ST_U_CTRL: return "has a control character in a string (it must be escaped)";
	case ST_U_ESC: return "has an invalid escape in a string";
	case ST_U_HEX: return "has a \\u escape without four hex digits";
	case ST_U_SURR: return "has a lone UTF-16 surrogate in a \\u escape";
	case ST_U_UTF8: return "has a string that is not valid UTF-8";
	default: return "has a string that runs past the end of the header";
	}
}

static GPUOS_HD int st_hex4(const uint8_t *s, uint32_t pos, uint32_t end, uint32_t *v)
{
	uint32_t i, c, x = 0;

	if (end - pos < 4)
		return ST_U_TRUNC;
	for (i = 0; i < 4; i++) {
		c = s[pos + i];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			c = c - 'A' + 10;
		else
			return ST_U_HEX;
		x = x << 4 | c;
	}
	*v = x;
	return 0;
}

/* UTF-8 of a code point (not a surrogate, <= U+10FFFF) into b; its length. */
static GPUOS_HD int st_utf8_put(uint32_t cp, uint8_t b[4])
{
	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (uint8_t)(0xc0 | cp >> 6);
		b[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (uint8_t)(0xe0 | cp >> 12);
		b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (uint8_t)(0xf0 | cp >> 18);
	b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	b[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* The escape at s[*pos] (a backslash, *pos < end) decoded into b: its
 * length (1 to 4) with *pos moved past it (a \u escape of a high surrogate
 * takes the low one's after it), or ST_U_* with *pos unchanged. */
static GPUOS_HD int st_escape(const uint8_t *s, uint32_t *pos, uint32_t end, uint8_t b[4])
{
	uint32_t p = *pos, cp, lo;
	int rc;

	if (end - p < 2)
		return ST_U_TRUNC;
	switch (s[p + 1]) {
	case '"': b[0] = '"'; break;
	case '\\': b[0] = '\\'; break;
	case '/': b[0] = '/'; break;
	case 'b': b[0] = 0x08; break;
	case 'f': b[0] = 0x0c; break;
	case 'n': b[0] = 0x0a; break;
	case 'r': b[0] = 0x0d; break;
	case 't': b[0] = 0x09; break;
	case 'u':
		if ((rc = st_hex4(s, p + 2, end, &cp)))
			return rc;
		p += 6;
		if (cp >= 0xdc00 && cp <= 0xdfff)
			return ST_U_SURR;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			/* RFC 8259 section 7: a high surrogate pairs with
			 * the \u escape of a low one right after it. */
			if (end - p < 2 || s[p] != '\\' || s[p + 1] != 'u')
				return ST_U_SURR;
			if ((rc = st_hex4(s, p + 2, end, &lo)))
				return rc;
			if (lo < 0xdc00 || lo > 0xdfff)
				return ST_U_SURR;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			p += 6;
		}
		*pos = p;
		return st_utf8_put(cp, b);
	default:
		return ST_U_ESC;
	}
	*pos = p + 2;
	return 1;
}

/* The UTF-8 sequence of 2 to 4 bytes that starts with c = s[*pos] (>= 0x80,
 * *pos < end), copied into b: its length with *pos moved past it, or ST_U_*
 * with *pos unchanged. */
static GPUOS_HD int st_utf8_seq(const uint8_t *s, uint32_t *pos, uint32_t end, uint8_t b[4])
{
	uint32_t p = *pos, c = s[p], lo, hi, n, i;

	/* RFC 3629 section 4: the second byte's range excludes overlong
	 * forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4). */
	lo = 0x80;
	hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else {
		return ST_U_UTF8;
	}
	if (end - p < n)
		return ST_U_TRUNC;
	if (s[p + 1] < lo || s[p + 1] > hi)
		return ST_U_UTF8;
	for (i = 2; i < n; i++)
		if ((s[p + i] & 0xc0) != 0x80)
			return ST_U_UTF8;
	for (i = 0; i < n; i++)
		b[i] = s[p + i];
	*pos = p + n;
	return (int)n;
}

/*
 * One unit of a string body at s[*pos] (*pos < end): an escape or one UTF-8
 * sequence, decoded into b. Returns its length (1 to 4) and moves *pos past
 * it, or returns ST_U_* with *pos unchanged. Reads only s[*pos, end).
 */
static GPUOS_HD int st_unit(const uint8_t *s, uint32_t *pos, uint32_t end, uint8_t b[4])
{
	uint32_t p = *pos, c = s[p];

	if (c < 0x20)
		return ST_U_CTRL;
	if (c == '"')
		return ST_U_ESC;
	if (c == '\\')
		return st_escape(s, pos, end, b);
	if (c < 0x80) {
		b[0] = (uint8_t)c;
		*pos = p + 1;
		return 1;
	}
	return st_utf8_seq(s, pos, end, b);
}

/* A string body read one decoded byte at a time. */
struct st_dec {
	const uint8_t *s;
	uint32_t pos;
	uint32_t end;
	uint8_t b[4];
	uint32_t bi;
	uint32_t bn;
};

GPUOS_INLINE GPUOS_HD void st_dec_init(struct st_dec *d, const uint8_t *s, uint32_t off, uint32_t raw)
{
	d->s = s;
	d->pos = off;
	d->end = off + raw;
	d->bi = 0;
	d->bn = 0;
}

/* The next decoded byte, -1 at the end, -2 on a malformed body. */
static GPUOS_HD int st_dec_byte(struct st_dec *d)
{
	int k;

	if (d->bi < d->bn)
		return d->b[d->bi++];
	if (d->pos >= d->end)
		return -1;
	k = st_unit(d->s, &d->pos, d->end, d->b);
	if (k <= 0)
		return -2;
	d->bn = (uint32_t)k;
	d->bi = 1;
	return d->b[0];
}

/* Compare two decoded string bodies as unsigned bytes; a prefix sorts first. */
static GPUOS_HD int st_span_cmp(const uint8_t *s, uint32_t ao, uint32_t ar, int aesc, uint32_t bo, uint32_t br,
				int besc)
{
	struct st_dec a, b;
	int x, y, r;

	if (!aesc && !besc) {
		r = gpuos_mem_cmp(s + ao, s + bo, ar < br ? ar : br);
		if (r)
			return r;
		return ar < br ? -1 : ar > br;
	}
	st_dec_init(&a, s, ao, ar);
	st_dec_init(&b, s, bo, br);
	for (;;) {
		x = st_dec_byte(&a);
		y = st_dec_byte(&b);
		if (x < 0)
			x = -1;
		if (y < 0)
			y = -1;
		if (x != y)
			return x < y ? -1 : 1;
		if (x < 0)
			return 0;
	}
}

GPUOS_HD int gpuos_st_str_cmp(const uint8_t *hdr, uint32_t off, uint32_t raw, const char *s)
{
	struct st_dec d;
	size_t i = 0;
	int x, y;

	if ((uint64_t)off + raw > UINT32_MAX)
		return 1;
	st_dec_init(&d, hdr, off, raw);
	for (;;) {
		x = st_dec_byte(&d);
		if (x < 0)
			x = -1;
		y = s[i] ? (int)(uint8_t)s[i] : -1;
		i++;
		if (x != y)
			return x < y ? -1 : 1;
		if (x < 0)
			return 0;
	}
}

GPUOS_HD int gpuos_st_str_decode(const uint8_t *hdr, uint32_t off, uint32_t raw, char *dst, uint32_t cap)
{
	struct st_dec d;
	uint32_t len = 0;
	int x, cut = 0;

	if (!cap)
		return -ENOSPC;
	dst[0] = 0;
	if ((uint64_t)off + raw > UINT32_MAX)
		return -EINVAL;
	st_dec_init(&d, hdr, off, raw);
	while ((x = st_dec_byte(&d)) >= 0) {
		if (len + 1 < cap)
			dst[len] = (char)x;
		else
			cut = 1;
		len++;
	}
	dst[len < cap ? len : cap - 1] = 0;
	if (x == -2)
		return -EINVAL;
	return cut ? -ENOSPC : (int)len;
}

/* ---- the parse: tokens ---------------------------------------------------------- */

struct st_ctx {
	const uint8_t *s;
	uint32_t n;
	uint32_t pos;
	uint32_t base;           /* file offset of s[0]: 8 in a header, 0 in an index */
	int nospace;
	uint32_t meta_seen;
	struct gpuos_st *st;
	struct gpuos_st_error *err;
};

/* A string token: a span of the header and what decoding it gives. */
struct st_str {
	uint32_t off;
	uint32_t raw;
	uint32_t len;
	uint32_t hash;
	int esc;
};

static GPUOS_HD int st_fail(struct st_ctx *c, int rc, const char *why)
{
	if (!c->err->why) {
		c->err->why = why;
		c->err->off = (uint64_t)c->base + c->pos;
	}
	return rc;
}

static GPUOS_HD int st_fail_bad(struct st_ctx *c, int rc, const char *why, uint64_t bad)
{
	if (!c->err->why)
		c->err->bad = bad;
	return st_fail(c, rc, why);
}

GPUOS_INLINE GPUOS_HD int st_is_ws(uint8_t ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Skip whitespace; the next byte, or -1 at the end of the header. */
static GPUOS_HD int st_peek(struct st_ctx *c)
{
	while (c->pos < c->n && st_is_ws(c->s[c->pos]))
		c->pos++;
	return c->pos < c->n ? c->s[c->pos] : -1;
}

static GPUOS_HD int st_syntax(struct st_ctx *c, const char *why)
{
	if (c->pos >= c->n)
		return st_fail(c, -EINVAL, "ends inside the JSON (the header is cut short)");
	return st_fail(c, -EINVAL, why);
}

static GPUOS_HD int st_expect(struct st_ctx *c, int ch, const char *why)
{
	if (st_peek(c) != ch)
		return st_syntax(c, why);
	c->pos++;
	return 0;
}

/*
 * A string token after optional whitespace. Decoded bodies longer than max
 * fail with -ENAMETOOLONG and long_why; copy (cap bytes, NULL for none)
 * receives the decoded prefix, cut and NUL-terminated, for error reports.
 */
static GPUOS_HD int st_string(struct st_ctx *c, struct st_str *str, uint32_t max, const char *long_why, char *copy,
			      uint32_t cap, const char *what)
{
	uint32_t h = ST_FNV_OFFSET, len = 0;
	uint8_t b[4];
	int k, i;

	if (st_peek(c) != '"')
		return st_syntax(c, what);
	c->pos++;
	str->off = c->pos;
	str->esc = 0;
	if (copy)
		copy[0] = 0;
	for (;;) {
		if (c->pos >= c->n)
			return st_fail(c, -EINVAL, "has a string that runs past the end of the header");
		if (c->s[c->pos] == '"')
			break;
		if (c->s[c->pos] == '\\')
			str->esc = 1;
		k = st_unit(c->s, &c->pos, c->n, b);
		if (k <= 0)
			return st_fail(c, -EINVAL, st_unit_why(k));
		for (i = 0; i < k; i++) {
			if (!b[i])
				return st_fail(c, -EINVAL, "has a NUL character (\\u0000) in a string");
			h = (h ^ b[i]) * ST_FNV_PRIME;
			if (copy && len + 1 < cap) {
				copy[len] = (char)b[i];
				copy[len + 1] = 0;
			}
			len++;
		}
		if (len > max)
			return st_fail_bad(c, -ENAMETOOLONG, long_why, len);
	}
	str->raw = c->pos - str->off;
	str->len = len;
	str->hash = h;
	c->pos++;
	return 0;
}

/* Whether a string token decodes to the C string lit. */
static GPUOS_HD int st_is(const struct st_ctx *c, const struct st_str *str, const char *lit)
{
	size_t l = gpuos_str_len(lit);

	if (!str->esc)
		return str->raw == l && !gpuos_mem_cmp(c->s + str->off, lit, l);
	return str->len == l && !gpuos_st_str_cmp(c->s, str->off, str->raw, lit);
}

/* A non-negative JSON integer of at most 64 bits. */
static GPUOS_HD int st_uint(struct st_ctx *c, uint64_t *v)
{
	uint32_t start;
	uint64_t x = 0, d;
	int ch = st_peek(c);

	if (ch == '-')
		return st_fail(c, -EINVAL, "has a negative number in shape or data_offsets");
	if (ch < '0' || ch > '9')
		return st_syntax(c, "expected a non-negative integer");
	start = c->pos;
	if (ch == '0' && c->pos + 1 < c->n && c->s[c->pos + 1] >= '0' && c->s[c->pos + 1] <= '9')
		return st_fail(c, -EINVAL, "has a number with a leading zero (not JSON)");
	while (c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
		d = (uint64_t)(c->s[c->pos] - '0');
		if (x > (UINT64_MAX - d) / 10u) {
			c->pos = start;
			return st_fail(c, -EOVERFLOW, "has an integer that does not fit in 64 bits");
		}
		x = x * 10u + d;
		c->pos++;
	}
	if (c->pos < c->n && (c->s[c->pos] == '.' || c->s[c->pos] == 'e' || c->s[c->pos] == 'E')) {
		c->pos = start;
		return st_fail(c, -EINVAL, "has a number that is not an integer in shape or data_offsets");
	}
	*v = x;
	return 0;
}

/* An array of at most max non-negative integers into out; *count of them. */
static GPUOS_HD int st_uint_array(struct st_ctx *c, uint64_t *out, uint32_t max, uint32_t *count,
				  const char *what, const char *too_many)
{
	uint32_t i = 0;
	int rc, ch;

	if ((rc = st_expect(c, '[', what)))
		return rc;
	if (st_peek(c) == ']') {
		c->pos++;
		*count = 0;
		return 0;
	}
	for (;;) {
		if (i == max) {
			st_peek(c);
			return st_fail_bad(c, -EINVAL, too_many, (uint64_t)max + 1);
		}
		if ((rc = st_uint(c, &out[i])))
			return rc;
		i++;
		ch = st_peek(c);
		if (ch == ',') {
			c->pos++;
			continue;
		}
		if (ch == ']') {
			c->pos++;
			break;
		}
		return st_syntax(c, "expected ',' or ']' in an array");
	}
	*count = i;
	return 0;
}

/* ---- the parse: entries ---------------------------------------------------------- */

#define ST_KEY_DTYPE   1u
#define ST_KEY_SHAPE   2u
#define ST_KEY_OFFSETS 4u

static GPUOS_HD int st_dtype(struct st_ctx *c, uint32_t *dtype)
{
	struct gpuos_st_error *err = c->err;
	struct st_str v;
	const char *name;
	uint32_t i, at;
	int rc;

	at = c->pos;
	if ((rc = st_string(c, &v, GPUOS_ST_NAME_MAX, "has a dtype longer than 1024 bytes", err->token,
			    GPUOS_ST_ERR_TOKEN, "expected a string for dtype")))
		return rc;
	for (i = 1; i < GPUOS_ST_DTYPE_COUNT; i++) {
		if (st_is(c, &v, gpuos_st_dtype_name(i))) {
			*dtype = i;
			err->token[0] = 0;
			return 0;
		}
	}
	c->pos = at;
	st_peek(c);
	for (i = 0; (name = st_unsupported_dtype(i)) != NULL; i++)
		if (st_is(c, &v, name))
			return st_fail(c, -EPROTONOSUPPORT, "has a dtype that this parser does not support");
	return st_fail(c, -EINVAL, "has an unknown dtype");
}

/* The layer of a name token: its first ST_LAYER_PEEK decoded bytes decide. */
static GPUOS_HD int32_t st_layer(const struct st_ctx *c, const struct st_str *name)
{
	char *b = c->st->peek_;
	struct st_dec d;
	uint32_t n = 0;
	int x;

	st_dec_init(&d, c->s, name->off, name->raw);
	while (n < ST_LAYER_PEEK && (x = st_dec_byte(&d)) >= 0)
		b[n++] = (char)x;
	return gpuos_st_layer_of(b, n);
}

/* After an object's member: 1 past a ',' (another member follows), 0 past
 * its '}', or the error (why) for anything else. */
static GPUOS_HD int st_next_member(struct st_ctx *c, const char *why)
{
	int ch = st_peek(c);

	if (ch == ',') {
		c->pos++;
		return 1;
	}
	if (ch == '}') {
		c->pos++;
		return 0;
	}
	return st_syntax(c, why);
}

/* The keys of a tensor's entry, after its '{' up to and past its '}':
 * which were seen (ST_KEY_*), the dtype, and the shape and data_offsets
 * into st's shape_ and offsets_ (*ndim and *noff entries). */
static GPUOS_HD int st_tensor_keys(struct st_ctx *c, uint32_t *seen, uint32_t *dtype, uint32_t *ndim,
				   uint32_t *noff)
{
	struct gpuos_st_error *err = c->err;
	struct st_str k;
	uint32_t key;
	int rc;

	if (st_peek(c) == '}') {
		c->pos++;
		return 0;
	}
	for (;;) {
		if ((rc = st_string(c, &k, GPUOS_ST_NAME_MAX, "has a key longer than 1024 bytes", err->token,
				    GPUOS_ST_ERR_TOKEN, "expected a string key in a tensor's entry")))
			return rc;
		if (st_is(c, &k, "dtype"))
			key = ST_KEY_DTYPE;
		else if (st_is(c, &k, "shape"))
			key = ST_KEY_SHAPE;
		else if (st_is(c, &k, "data_offsets"))
			key = ST_KEY_OFFSETS;
		else
			key = 0;
		if (!key || (*seen & key)) {
			c->pos = k.off - 1;
			return st_fail(c, -EINVAL, key ? "has a duplicate key in its entry" :
				       "has an unknown key in its entry (only dtype, shape, data_offsets)");
		}
		err->token[0] = 0;
		*seen |= key;
		if ((rc = st_expect(c, ':', "expected ':' after a key")))
			return rc;
		if (key == ST_KEY_DTYPE)
			rc = st_dtype(c, dtype);
		else if (key == ST_KEY_SHAPE)
			rc = st_uint_array(c, c->st->shape_, GPUOS_ST_MAX_DIMS, ndim, "expected an array for shape",
					   "has more than 8 dimensions");
		else
			rc = st_uint_array(c, c->st->offsets_, 2, noff, "expected an array for data_offsets",
					   "has data_offsets with more than two entries");
		if (rc)
			return rc;
		if (key == ST_KEY_OFFSETS && *noff != 2) {
			c->pos--;
			return st_fail_bad(c, -EINVAL, "has data_offsets with fewer than two entries", *noff);
		}
		if ((rc = st_next_member(c, "expected ',' or '}' in a tensor's entry")) <= 0)
			return rc;
	}
}

/* A tensor's entry as a whole (keys seen, dtype, ndim dimensions in st's
 * shape_, data_offsets in its offsets_): every key there, and data_offsets
 * that agree with the dtype and shape, inside the file. */
static GPUOS_HD int st_tensor_check(struct st_ctx *c, uint32_t seen, uint32_t dtype, uint32_t ndim)
{
	const struct gpuos_st *st = c->st;
	const uint64_t *shape = st->shape_, *off = st->offsets_;
	uint64_t nel = 1, bytes;
	uint32_t i;

	if (!(seen & ST_KEY_DTYPE))
		return st_fail(c, -EINVAL, "has no dtype");
	if (!(seen & ST_KEY_SHAPE))
		return st_fail(c, -EINVAL, "has no shape");
	if (!(seen & ST_KEY_OFFSETS))
		return st_fail(c, -EINVAL, "has no data_offsets");
	if (off[0] > off[1])
		return st_fail_bad(c, -EINVAL, "has data_offsets whose begin is after its end", off[0]);
	/* Folded in order with checks, as the reference's validate() does. */
	for (i = 0; i < ndim; i++)
		if (gpuos_mul_overflow_u64(nel, shape[i], &nel))
			return st_fail(c, -EOVERFLOW, "has a shape whose product overflows 64 bits");
	if (gpuos_mul_overflow_u64(nel, gpuos_st_dtype_size(dtype), &bytes))
		return st_fail(c, -EOVERFLOW, "has a byte count (shape x dtype size) that overflows 64 bits");
	if (off[1] - off[0] != bytes)
		return st_fail_bad(c, -EINVAL, "has data_offsets that disagree with its dtype and shape",
				   off[1] - off[0]);
	if (off[1] > st->data_len)
		return st_fail_bad(c, -EINVAL, "has data past the end of the file", off[1]);
	return 0;
}

/* A tensor's entry, from its '{' (the name is read). */
static GPUOS_HD int st_tensor(struct st_ctx *c, const struct st_str *name, uint32_t index)
{
	struct gpuos_st *st = c->st;
	struct gpuos_st_tensor *t;
	uint64_t *shape = st->shape_, *off = st->offsets_; /* in st: not the lane's stack */
	uint32_t seen = 0, ndim = 0, noff = 0, dtype = 0, i, start, after;
	int32_t layer;
	int rc;

	if ((rc = st_expect(c, '{', "expected an object for a tensor")))
		return rc;
	start = c->pos - 1;
	if ((rc = st_tensor_keys(c, &seen, &dtype, &ndim, &noff)))
		return rc;

	/* Report what follows at the entry's '{'. */
	after = c->pos;
	c->pos = start;
	if ((rc = st_tensor_check(c, seen, dtype, ndim)))
		return rc;
	c->pos = after;
	layer = st_layer(c, name);
	if (layer >= 0 && (uint32_t)layer + 1 > st->n_layers)
		st->n_layers = (uint32_t)layer + 1;
	if (!st->tensors || index >= st->tensor_cap) {
		c->nospace = 1;
		return 0;
	}
	t = &st->tensors[index];
	gpuos_mem_set(t, 0, sizeof(*t));
	t->begin = off[0];
	t->end = off[1];
	t->abs_begin = st->data_off + off[0];
	t->abs_end = st->data_off + off[1];
	for (i = 0; i < GPUOS_ST_MAX_DIMS; i++)
		t->shape[i] = i < ndim ? shape[i] : 1;
	t->name_off = name->off;
	t->name_raw = name->raw;
	t->name_len = name->len;
	t->hash = name->hash;
	t->index = index;
	t->layer = layer;
	t->dtype = (uint8_t)dtype;
	t->ndim = (uint8_t)ndim;
	t->flags = name->esc ? GPUOS_ST_T_ESCAPED : 0;
	return 0;
}

/* "__metadata__"'s value: null, or an object of string values. */
static GPUOS_HD int st_metadata(struct st_ctx *c)
{
	struct gpuos_st *st = c->st;
	struct gpuos_st_meta *m;
	struct st_str k, v;
	uint32_t i = 0;
	int rc, ch;

	if (c->meta_seen) {
		st_peek(c);
		return st_fail(c, -EINVAL, "has a second __metadata__ entry");
	}
	c->meta_seen = 1;
	ch = st_peek(c);
	if (ch == 'n') {
		if (c->n - c->pos < 4 || gpuos_mem_cmp(c->s + c->pos, "null", 4))
			return st_syntax(c, "expected an object or null for __metadata__");
		c->pos += 4;
		return 0;
	}
	if ((rc = st_expect(c, '{', "expected an object or null for __metadata__")))
		return rc;
	st->flags |= GPUOS_ST_F_METADATA;
	if (st_peek(c) == '}') {
		c->pos++;
		return 0;
	}
	for (;;) {
		if ((rc = st_string(c, &k, GPUOS_ST_NAME_MAX, "has a __metadata__ key longer than 1024 bytes",
				    c->err->token, GPUOS_ST_ERR_TOKEN, "expected a string key in __metadata__")))
			return rc;
		if ((rc = st_expect(c, ':', "expected ':' after a key")))
			return rc;
		if ((rc = st_string(c, &v, GPUOS_ST_VALUE_MAX, "has a __metadata__ value longer than 16 MiB", NULL, 0,
				    "has a __metadata__ value that is not a string")))
			return rc;
		c->err->token[0] = 0;
		if (st->meta && i < st->meta_cap) {
			m = &st->meta[i];
			m->key_off = k.off;
			m->key_raw = k.raw;
			m->key_len = k.len;
			m->key_hash = k.hash;
			m->val_off = v.off;
			m->val_raw = v.raw;
			m->val_len = v.len;
			m->flags = (k.esc ? GPUOS_ST_M_KEY_ESCAPED : 0u) | (v.esc ? GPUOS_ST_M_VAL_ESCAPED : 0u);
		} else if (st->meta) {
			c->nospace = 1;
		}
		i++;
		st->n_meta = i;
		if ((rc = st_next_member(c, "expected ',' or '}' in __metadata__")) <= 0)
			return rc;
	}
}

/* ---- the parse: checks across tensors ------------------------------------------ */

#define ST_BY_OFFSET 0   /* tensors: begin, end, index */
#define ST_BY_NAME   1   /* tensors: hash, decoded name, index */
#define ST_BY_KEY    2   /* meta: hash, decoded key, key_off */
#define ST_BY_POS    3   /* meta: key_off (header order) */

/* Decoded names and keys, compared. */
static GPUOS_HD int st_name_cmp(const uint8_t *s, const struct gpuos_st_tensor *a, const struct gpuos_st_tensor *b)
{
	return st_span_cmp(s, a->name_off, a->name_raw, a->flags & GPUOS_ST_T_ESCAPED, b->name_off, b->name_raw,
			   b->flags & GPUOS_ST_T_ESCAPED);
}

static GPUOS_HD int st_key_cmp(const uint8_t *s, const struct gpuos_st_meta *a, const struct gpuos_st_meta *b)
{
	return st_span_cmp(s, a->key_off, a->key_raw, a->flags & GPUOS_ST_M_KEY_ESCAPED, b->key_off, b->key_raw,
			   b->flags & GPUOS_ST_M_KEY_ESCAPED);
}

static GPUOS_HD int st_cmp(const struct gpuos_st *st, int kind, uint64_t i, uint64_t j)
{
	const struct gpuos_st_tensor *a, *b;
	const struct gpuos_st_meta *x, *y;
	int r;

	if (kind == ST_BY_OFFSET || kind == ST_BY_NAME) {
		a = &st->tensors[i];
		b = &st->tensors[j];
		if (kind == ST_BY_OFFSET) {
			if (a->begin != b->begin)
				return a->begin < b->begin ? -1 : 1;
			if (a->end != b->end)
				return a->end < b->end ? -1 : 1;
		} else {
			if (a->hash != b->hash)
				return a->hash < b->hash ? -1 : 1;
			r = st_name_cmp(st->hdr, a, b);
			if (r)
				return r;
		}
		return a->index < b->index ? -1 : a->index > b->index;
	}
	x = &st->meta[i];
	y = &st->meta[j];
	if (kind == ST_BY_KEY) {
		if (x->key_hash != y->key_hash)
			return x->key_hash < y->key_hash ? -1 : 1;
		r = st_key_cmp(st->hdr, x, y);
		if (r)
			return r;
	}
	return x->key_off < y->key_off ? -1 : x->key_off > y->key_off;
}

/* Word by word through one register: a whole record as a temporary would
 * take 128 bytes of the GPU lane's stack, which every kernel shares. */
static GPUOS_HD void st_swap(struct gpuos_st *st, int kind, uint64_t i, uint64_t j)
{
	uint64_t *a, *b, w;
	uint32_t k, n;

	if (kind == ST_BY_OFFSET || kind == ST_BY_NAME) {
		a = (uint64_t *)(void *)&st->tensors[i];
		b = (uint64_t *)(void *)&st->tensors[j];
		n = (uint32_t)(sizeof(struct gpuos_st_tensor) / 8u);
	} else {
		a = (uint64_t *)(void *)&st->meta[i];
		b = (uint64_t *)(void *)&st->meta[j];
		n = (uint32_t)(sizeof(struct gpuos_st_meta) / 8u);
	}
	for (k = 0; k < n; k++) {
		w = a[k];
		a[k] = b[k];
		b[k] = w;
	}
}

static GPUOS_HD void st_sift(struct gpuos_st *st, int kind, uint64_t root, uint64_t n)
{
	uint64_t child;

	for (;;) {
		child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && st_cmp(st, kind, child, child + 1) < 0)
			child++;
		if (st_cmp(st, kind, root, child) >= 0)
			return;
		st_swap(st, kind, root, child);
		root = child;
	}
}

/* Heapsort: in place, O(n log n) at worst, no recursion. */
static GPUOS_HD void st_sort(struct gpuos_st *st, int kind, uint32_t n)
{
	uint64_t i, end;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		st_sift(st, kind, i, n);
	for (end = n - 1; end > 0; end--) {
		st_swap(st, kind, 0, end);
		st_sift(st, kind, 0, end);
	}
}

/* Point the error report at tensor t. */
static GPUOS_HD int st_fail_tensor(struct st_ctx *c, const struct gpuos_st_tensor *t, int rc, const char *why,
				   uint64_t bad)
{
	c->err->tensor = t->index;
	gpuos_st_str_decode(c->s, t->name_off, t->name_raw, c->err->name, GPUOS_ST_ERR_NAME);
	c->pos = t->name_off - 1;
	return st_fail_bad(c, rc, why, bad);
}

static GPUOS_HD int st_check(struct st_ctx *c)
{
	struct gpuos_st *st = c->st;
	struct gpuos_st_tensor *t = st->tensors;
	struct gpuos_st_meta *m = st->meta;
	uint64_t expect = 0;
	uint32_t i, n = st->n_tensors;

	/* Equal names have equal hashes: sorted, duplicates are neighbours. */
	st_sort(st, ST_BY_NAME, n);
	for (i = 1; i < n; i++) {
		const struct gpuos_st_tensor *a = &t[i - 1], *b = &t[i];

		if (a->hash == b->hash && !st_name_cmp(c->s, a, b))
			return st_fail_tensor(c, b, -EINVAL, "is a duplicate tensor name", 0); /* b: the later one */
	}
	if (m) {
		st_sort(st, ST_BY_KEY, st->n_meta);
		for (i = 1; i < st->n_meta; i++) {
			if (m[i - 1].key_hash == m[i].key_hash && !st_key_cmp(c->s, &m[i - 1], &m[i])) {
				const struct gpuos_st_meta *d = m[i].key_off > m[i - 1].key_off ? &m[i] : &m[i - 1];

				gpuos_st_str_decode(c->s, d->key_off, d->key_raw, c->err->token, GPUOS_ST_ERR_TOKEN);
				c->pos = d->key_off - 1;
				return st_fail(c, -EINVAL, "has a duplicate __metadata__ key");
			}
		}
		st_sort(st, ST_BY_POS, st->n_meta);
	}
	/* In file order the tensors must tile the data area. */
	st_sort(st, ST_BY_OFFSET, n);
	for (i = 0; i < n; i++) {
		if (t[i].begin < expect)
			return st_fail_tensor(c, &t[i], -EINVAL, "overlaps the tensor before it in the file",
					      t[i].begin);
		if (t[i].begin > expect)
			return st_fail_tensor(c, &t[i], -EINVAL,
					      "leaves a hole before its data (no tensor covers those bytes)",
					      t[i].begin - expect);
		expect = t[i].end;
	}
	if (expect != st->data_len) {
		c->pos = c->n;
		if (n)
			return st_fail_tensor(c, &t[n - 1], -EINVAL,
					      "is the last tensor, and bytes follow its data to the end of the file",
					      st->data_len - expect);
		return st_fail_bad(c, -EINVAL, "has no tensors but a data area that is not empty", st->data_len);
	}
	return 0;
}

/* ---- API ------------------------------------------------------------------------ */

static GPUOS_HD void st_err_reset(struct gpuos_st_error *err)
{
	err->why = NULL;
	err->off = 0;
	err->bad = 0;
	err->tensor = -1;
	err->name[0] = 0;
	err->token[0] = 0;
}

/* Header length rules shared by the two entry points. */
static GPUOS_HD int st_check_len(uint64_t n, uint64_t file_size, struct gpuos_st_error *err)
{
	if (n > GPUOS_ST_HEADER_MAX) {
		err->why = "header length is over 100,000,000 bytes (the format's limit)";
		err->bad = n;
		return -E2BIG;
	}
	if (n < 2) {
		err->why = "header length is too small for a JSON object";
		err->bad = n;
		return -EINVAL;
	}
	if (file_size < 8 || n > file_size - 8) {
		err->why = "header runs past the end of the file";
		err->bad = n;
		return -EINVAL;
	}
	return 0;
}

GPUOS_HD int gpuos_st_header_len(const uint8_t first8[8], uint64_t file_size, uint64_t *n,
				 struct gpuos_st_error *err)
{
	uint64_t v;
	int rc;

	st_err_reset(err);
	if (file_size < 8) {
		err->why = "file too short for a safetensors header (8 bytes)";
		err->bad = file_size;
		return -EINVAL;
	}
	v = gpuos_le64(first8);
	if ((rc = st_check_len(v, file_size, err)))
		return rc;
	*n = v;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_st_parse(struct gpuos_st *st, const uint8_t *hdr, uint64_t n,
					   uint64_t file_size, struct gpuos_st_error *err)
{
	struct st_ctx c;
	uint32_t count = 0;
	struct st_str key;
	int rc, ch;

	st_err_reset(err);
	st->hdr = hdr;
	st->header_len = n;
	st->file_size = file_size;
	st->data_off = 0;
	st->data_len = 0;
	st->n_tensors = 0;
	st->n_meta = 0;
	st->n_layers = 0;
	st->flags = 0;
	if ((rc = st_check_len(n, file_size, err)))
		return rc;
	st->data_off = 8 + n;
	st->data_len = file_size - 8 - n;

	c.s = hdr;
	c.n = (uint32_t)n;
	c.pos = 0;
	c.base = 8;
	c.nospace = 0;
	c.meta_seen = 0;
	c.st = st;
	c.err = err;

	if ((rc = st_expect(&c, '{', "does not start with a JSON object")))
		return rc;
	if (st_peek(&c) == '}') {
		c.pos++;
	} else {
		for (;;) {
			err->tensor = count;
			if ((rc = st_string(&c, &key, GPUOS_ST_NAME_MAX, "has a tensor name longer than 1024 bytes",
					    err->name, GPUOS_ST_ERR_NAME, "expected a string key (a tensor name)")))
				return rc;
			if ((rc = st_expect(&c, ':', "expected ':' after a key")))
				return rc;
			if (key.len == 12 && st_is(&c, &key, "__metadata__")) {
				err->tensor = -1;
				err->name[0] = 0;
				rc = st_metadata(&c);
			} else {
				rc = st_tensor(&c, &key, count);
				count++;
				st->n_tensors = count;
			}
			if (rc)
				return rc;
			ch = st_peek(&c);
			if (ch == ',') {
				c.pos++;
				continue;
			}
			if (ch == '}') {
				c.pos++;
				break;
			}
			return st_syntax(&c, "expected ',' or '}' after an entry");
		}
	}
	err->tensor = -1;
	err->name[0] = 0;
	if (st_peek(&c) != -1)
		return st_fail(&c, -EINVAL, "has bytes after the JSON object (only whitespace may pad it)");
	if (c.nospace) {
		c.pos = 0;
		return st_fail(&c, -ENOSPC, "caller's tables are too small");
	}
	if ((rc = st_check(&c)))
		return rc;
	return 0;
}

/* ---- model.safetensors.index.json ------------------------------------------------ */

/* An object's key inside a skipped value, and the ':' after it. */
static GPUOS_HD int st_skip_key(struct st_ctx *c)
{
	struct st_str str;
	int rc;

	if ((rc = st_string(c, &str, UINT32_MAX, "", NULL, 0, "expected a string key in an object")))
		return rc;
	return st_expect(c, ':', "expected ':' after a key");
}

/* A JSON number at c->pos, which starts with ch. */
static GPUOS_HD int st_skip_number(struct st_ctx *c, int ch)
{
	/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
	uint32_t d;

	if (ch == '-')
		c->pos++;
	if (c->pos >= c->n || c->s[c->pos] < '0' || c->s[c->pos] > '9')
		return st_syntax(c, "has a malformed number");
	if (c->s[c->pos] == '0' && c->pos + 1 < c->n && c->s[c->pos + 1] >= '0' && c->s[c->pos + 1] <= '9')
		return st_fail(c, -EINVAL, "has a number with a leading zero (not JSON)");
	while (c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9')
		c->pos++;
	if (c->pos < c->n && c->s[c->pos] == '.') {
		c->pos++;
		for (d = 0; c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9'; d++)
			c->pos++;
		if (!d)
			return st_syntax(c, "has a malformed number");
	}
	if (c->pos < c->n && (c->s[c->pos] == 'e' || c->s[c->pos] == 'E')) {
		c->pos++;
		if (c->pos < c->n && (c->s[c->pos] == '+' || c->s[c->pos] == '-'))
			c->pos++;
		for (d = 0; c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9'; d++)
			c->pos++;
		if (!d)
			return st_syntax(c, "has a malformed number");
	}
	return 0;
}

/* A value that is not an array or object, at c->pos, which starts with ch:
 * a string, true, false, null or a number. */
static GPUOS_HD int st_skip_scalar(struct st_ctx *c, int ch)
{
	struct st_str str;

	if (ch == '"')
		return st_string(c, &str, UINT32_MAX, "", NULL, 0, "expected a value");
	if (ch == 't' || ch == 'f' || ch == 'n') {
		const char *lit = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
		uint32_t l = (uint32_t)gpuos_str_len(lit);
		if (c->n - c->pos < l || gpuos_mem_cmp(c->s + c->pos, lit, l))
			return st_syntax(c, "expected a value");
		c->pos += l;
		return 0;
	}
	if (ch == '-' || (ch >= '0' && ch <= '9'))
		return st_skip_number(c, ch);
	return st_syntax(c, "expected a value");
}

/* Skip one JSON value of any type, validating it (RFC 8259). Nesting is kept
 * in a bit stack (1: an object), so there is no recursion; deeper than
 * GPUOS_ST_INDEX_DEPTH is refused. */
static GPUOS_HD int st_skip_value(struct st_ctx *c)
{
	uint64_t stack = 0;
	uint32_t depth = 0;
	int rc, ch;

	for (;;) {
		/* a value */
		ch = st_peek(c);
		if (ch == '{' || ch == '[') {
			if (depth == GPUOS_ST_INDEX_DEPTH)
				return st_fail(c, -EINVAL, "nests arrays or objects deeper than 32 levels");
			c->pos++;
			stack = (stack << 1) | (ch == '{' ? 1u : 0u);
			depth++;
			ch = st_peek(c);
			if (ch == (stack & 1u ? '}' : ']')) {
				c->pos++;
				stack >>= 1;
				depth--;
				goto after;
			}
			if ((stack & 1u) && (rc = st_skip_key(c)))
				return rc;
			continue;
		}
		if ((rc = st_skip_scalar(c, ch)))
			return rc;
after:
		/* after a value: close what ends here, or go on to the next */
		for (;;) {
			if (!depth)
				return 0;
			ch = st_peek(c);
			if (ch == ',') {
				c->pos++;
				if ((stack & 1u) && (rc = st_skip_key(c)))
					return rc;
				break;
			}
			if (ch == (stack & 1u ? '}' : ']')) {
				c->pos++;
				stack >>= 1;
				depth--;
				continue;
			}
			return st_syntax(c, stack & 1u ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
		}
	}
}

/* Whether a file name (decoded, len bytes) names a file beside the index:
 * not empty, no '/', not "." or "..". */
static GPUOS_HD int st_plain_file(const struct st_ctx *c, const struct st_str *f)
{
	struct st_dec d;
	uint32_t i = 0;
	int b, dots = 1;

	if (!f->len || f->len > GPUOS_ST_INDEX_FILE_MAX)
		return 0;
	st_dec_init(&d, c->s, f->off, f->raw);
	while ((b = st_dec_byte(&d)) >= 0) {
		if (b == '/')
			return 0;
		if (b != '.')
			dots = 0;
		i++;
	}
	return !(dots && i <= 2);
}

static GPUOS_HD int st_weight_map(struct st_ctx *c, struct gpuos_st_index *ix)
{
	struct st_str k, v;
	uint32_t j;
	int rc, ch;

	if ((rc = st_expect(c, '{', "expected an object for weight_map")))
		return rc;
	if (st_peek(c) == '}') {
		c->pos++;
		return 0;
	}
	for (;;) {
		if ((rc = st_string(c, &k, GPUOS_ST_NAME_MAX, "has a tensor name longer than 1024 bytes", c->err->name,
				    GPUOS_ST_ERR_NAME, "expected a string key (a tensor name) in weight_map")))
			return rc;
		if ((rc = st_expect(c, ':', "expected ':' after a key")))
			return rc;
		if ((rc = st_string(c, &v, GPUOS_ST_INDEX_FILE_MAX, "has a file name longer than 255 bytes",
				    c->err->token, GPUOS_ST_ERR_TOKEN, "has a weight_map value that is not a string")))
			return rc;
		if (!st_plain_file(c, &v))
			return st_fail(c, -EINVAL, "has a file name that is not a plain name beside the index "
						   "(empty, \".\", \"..\" or with a '/')");
		/* its file: one seen before, or the next */
		for (j = 0; j < ix->n_files && j < ix->file_cap; j++) {
			const struct gpuos_st_index_file *f = &ix->files[j];
			if (f->hash == v.hash && f->len == v.len &&
			    !st_span_cmp(c->s, f->off, f->raw, f->esc, v.off, v.raw, v.esc))
				break;
		}
		if (j == ix->n_files) {
			if (j < ix->file_cap) {
				ix->files[j].off = v.off;
				ix->files[j].raw = v.raw;
				ix->files[j].len = v.len;
				ix->files[j].hash = v.hash;
				ix->files[j].esc = (uint32_t)v.esc;
			} else {
				c->nospace = 1;
			}
			ix->n_files++;
		}
		if (ix->n_entries < ix->entry_cap) {
			struct gpuos_st_index_entry *e = &ix->entries[ix->n_entries];
			e->name_off = k.off;
			e->name_raw = k.raw;
			e->name_len = k.len;
			e->name_hash = k.hash;
			e->file = j;
			e->flags = k.esc ? GPUOS_ST_T_ESCAPED : 0u;
		} else {
			c->nospace = 1;
		}
		ix->n_entries++;
		c->err->name[0] = 0;
		c->err->token[0] = 0;
		ch = st_peek(c);
		if (ch == ',') {
			c->pos++;
			continue;
		}
		if (ch == '}') {
			c->pos++;
			return 0;
		}
		return st_syntax(c, "expected ',' or '}' in weight_map");
	}
}

GPUOS_NOINLINE GPUOS_HD int gpuos_st_index_parse(struct gpuos_st_index *ix, const uint8_t *json, uint64_t n,
						 struct gpuos_st_error *err)
{
	struct st_ctx c;
	struct st_str key;
	int rc, ch, seen_map = 0;

	st_err_reset(err);
	ix->json = json;
	ix->len = n;
	ix->n_entries = 0;
	ix->n_files = 0;
	if (n > GPUOS_ST_HEADER_MAX) {
		err->why = "is over 100,000,000 bytes";
		err->bad = n;
		return -E2BIG;
	}
	c.s = json;
	c.n = (uint32_t)n;
	c.pos = 0;
	c.base = 0;
	c.nospace = 0;
	c.meta_seen = 0;
	c.st = NULL;
	c.err = err;
	if ((rc = st_expect(&c, '{', "does not start with a JSON object")))
		return rc;
	if (st_peek(&c) == '}') {
		c.pos++;
	} else {
		for (;;) {
			if ((rc = st_string(&c, &key, GPUOS_ST_NAME_MAX, "has a key longer than 1024 bytes", err->token,
					    GPUOS_ST_ERR_TOKEN, "expected a string key")))
				return rc;
			if ((rc = st_expect(&c, ':', "expected ':' after a key")))
				return rc;
			if (key.len == 10 && st_is(&c, &key, "weight_map")) {
				if (seen_map)
					return st_fail(&c, -EINVAL, "has a second weight_map");
				seen_map = 1;
				err->token[0] = 0;
				rc = st_weight_map(&c, ix);
			} else {
				/* "metadata" ({"total_size": ...}) and anything newer writers add */
				err->token[0] = 0;
				rc = st_skip_value(&c);
			}
			if (rc)
				return rc;
			ch = st_peek(&c);
			if (ch == ',') {
				c.pos++;
				continue;
			}
			if (ch == '}') {
				c.pos++;
				break;
			}
			return st_syntax(&c, "expected ',' or '}' after an entry");
		}
	}
	if (st_peek(&c) != -1)
		return st_fail(&c, -EINVAL, "has bytes after the JSON object");
	if (!seen_map) {
		c.pos = 0;
		return st_fail(&c, -EINVAL, "has no weight_map (not a safetensors index)");
	}
	if (!ix->n_entries) {
		c.pos = 0;
		return st_fail(&c, -EINVAL, "has an empty weight_map");
	}
	if (c.nospace) {
		c.pos = 0;
		return st_fail(&c, -ENOSPC, "caller's tables are too small");
	}
	return 0;
}

GPUOS_HD int gpuos_st_index_file_name(const struct gpuos_st_index *ix, uint32_t k, char *dst, uint32_t cap)
{
	if (k >= ix->n_files || k >= ix->file_cap)
		return -EINVAL;
	return gpuos_st_str_decode(ix->json, ix->files[k].off, ix->files[k].raw, dst, cap);
}

GPUOS_HD int gpuos_st_index_entry_name(const struct gpuos_st_index *ix, uint32_t e, char *dst, uint32_t cap)
{
	if (e >= ix->n_entries || e >= ix->entry_cap)
		return -EINVAL;
	return gpuos_st_str_decode(ix->json, ix->entries[e].name_off, ix->entries[e].name_raw, dst, cap);
}

/* ---- lookups ------------------------------------------------------------------------- */

GPUOS_INLINE GPUOS_HD uint32_t st_hash_cstr(const char *s, size_t *len)
{
	uint32_t h = ST_FNV_OFFSET;
	size_t i;

	for (i = 0; s[i] && i <= GPUOS_ST_NAME_MAX; i++)
		h = (h ^ (uint8_t)s[i]) * ST_FNV_PRIME;
	*len = i;
	return h;
}

GPUOS_HD int gpuos_st_find(const struct gpuos_st *st, const char *name)
{
	size_t len;
	uint32_t h = st_hash_cstr(name, &len), i;

	if (len > GPUOS_ST_NAME_MAX || !st->tensors)
		return -ENOENT;
	for (i = 0; i < st->n_tensors && i < st->tensor_cap; i++) {
		const struct gpuos_st_tensor *t = &st->tensors[i];

		if (t->hash == h && t->name_len == len && !gpuos_st_str_cmp(st->hdr, t->name_off, t->name_raw, name))
			return (int)i;
	}
	return -ENOENT;
}

GPUOS_HD int gpuos_st_meta_find(const struct gpuos_st *st, const char *key)
{
	size_t len;
	uint32_t h = st_hash_cstr(key, &len), i;

	if (len > GPUOS_ST_NAME_MAX || !st->meta)
		return -ENOENT;
	for (i = 0; i < st->n_meta && i < st->meta_cap; i++) {
		const struct gpuos_st_meta *m = &st->meta[i];

		if (m->key_hash == h && m->key_len == len && !gpuos_st_str_cmp(st->hdr, m->key_off, m->key_raw, key))
			return (int)i;
	}
	return -ENOENT;
}

GPUOS_HD int gpuos_st_name(const struct gpuos_st *st, const struct gpuos_st_tensor *t, char *dst, uint32_t cap)
{
	return gpuos_st_str_decode(st->hdr, t->name_off, t->name_raw, dst, cap);
}

GPUOS_HD int gpuos_st_layer_next(const struct gpuos_st *st, uint32_t n, int after)
{
	uint32_t i = after < 0 ? 0 : (uint32_t)after + 1;

	if (!st->tensors)
		return -ENOENT;
	for (; i < st->n_tensors && i < st->tensor_cap; i++)
		if (st->tensors[i].layer == (int32_t)n)
			return (int)i;
	return -ENOENT;
}

GPUOS_HD int gpuos_st_layer_span(const struct gpuos_st *st, uint32_t n, uint64_t *off, uint64_t *end)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int i = -1;

	if (n >= st->n_layers)
		return -ENOENT;
	while ((i = gpuos_st_layer_next(st, n, i)) >= 0) {
		const struct gpuos_st_tensor *t = &st->tensors[i];

		if (t->abs_begin < lo)
			lo = t->abs_begin;
		if (t->abs_end > hi)
			hi = t->abs_end;
	}
	if (lo == UINT64_MAX)
		return -ENOENT;
	*off = lo;
	*end = hi;
	return 0;
}
