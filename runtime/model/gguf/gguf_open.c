/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/gguf/gguf_open.c - GGUF's opener in the metadata warp
 * (../model.h): a GGUF file parsed (gguf.h) into a model's tables, and a
 * gguf-split model opened as one over its shards (each an H_SHARD handle,
 * its tensors appended to the first shard's tables), found from any shard
 * or from the base name the shards share. Its refusals name GGUF and its
 * split KVs; the runtime's handles, lookups and replies are
 * files_internal.h's.
 */
#include "gguf_open.h"
#include "../../files_internal.h"

/* Parse the GGUF of handle slot i into g (its mem set). */
GPUOS_HD static int parse_file(struct rt_files *F, uint32_t i, struct gpuos_gguf *g)
{
	F->io_file.F = F;
	F->io_file.handle = i;
	F->io_file.hint = 0;
	F->mio_file.read = files_io_file_read;
	F->mio_file.ctx = &F->io_file;
	F->mio_file.size = F->h[i].size;
	return gpuos_gguf_parse(g, &F->fmt.gguf.parser, &F->mio_file);
}

/* The reason and status of parse error r (not -EIO) into sb. */
GPUOS_NOINLINE GPUOS_HD static uint32_t parse_why(const struct rt_files *F, int r, struct sbuf *sb)
{
	if (r == -EPROTONOSUPPORT) {
		sb_str(sb, "unsupported GGUF: ");
		sb_str(sb, F->fmt.gguf.parser.why);
		if (F->fmt.gguf.parser.bad) {
			sb_str(sb, " (");
			sb_num(sb, F->fmt.gguf.parser.bad);
			sb_str(sb, ")");
		}
		return GPUOS_ST_UNSUPPORTED;
	}
	if (r == -ENOSPC) {
		sb_str(sb, "GGUF too large for the runtime's tables (at most ");
		sb_num(sb, GPUOS_RT_MODEL_TENSORS);
		sb_str(sb, " tensors, ");
		sb_num(sb, GPUOS_RT_MODEL_KV);
		sb_str(sb, " KVs, ");
		sb_num(sb, GPUOS_RT_MODEL_ARENA >> 20);
		sb_str(sb, " MiB of keys and strings)");
		return GPUOS_ST_NOSPC;
	}
	sb_str(sb, "corrupt GGUF: ");
	sb_str(sb, F->fmt.gguf.parser.why);
	if (F->fmt.gguf.parser.err_tensor >= 0) {
		sb_str(sb, " (tensor ");
		sb_num(sb, (uint64_t)F->fmt.gguf.parser.err_tensor);
		sb_str(sb, " '");
		sb_str(sb, F->fmt.gguf.parser.subject);
		sb_str(sb, "')");
	} else if (F->fmt.gguf.parser.err_kv >= 0) {
		sb_str(sb, " (KV ");
		sb_num(sb, (uint64_t)F->fmt.gguf.parser.err_kv);
		if (F->fmt.gguf.parser.subject[0]) {
			sb_str(sb, " '");
			sb_str(sb, F->fmt.gguf.parser.subject);
			sb_str(sb, "'");
		}
		sb_str(sb, ")");
	}
	if (F->fmt.gguf.parser.bad) {
		sb_str(sb, " [value ");
		sb_num(sb, F->fmt.gguf.parser.bad);
		sb_str(sb, "]");
	}
	return GPUOS_ST_CORRUPT;
}

/* ---- split models (gguf-split) ------------------------------------------------------ */

/* A shard's split KVs. */
struct split {
	uint64_t no, count, tensors;
};

/* Integer KV `key` of g: 1 with *v, 0 when absent, -1 when it is not a
 * non-negative integer. */
GPUOS_HD static int kv_uint(const struct gpuos_gguf *g, const char *key, uint64_t *v)
{
	int i = gpuos_gguf_find_kv(g, key);
	const struct gpuos_gguf_kv *kv;
	if (i < 0)
		return 0;
	kv = &g->mem.kv[i];
	switch (kv->type) {
	case GPUOS_GGUF_TYPE_UINT8: case GPUOS_GGUF_TYPE_UINT16: case GPUOS_GGUF_TYPE_UINT32: case GPUOS_GGUF_TYPE_UINT64:
		*v = kv->val.u64;
		return 1;
	case GPUOS_GGUF_TYPE_INT8: case GPUOS_GGUF_TYPE_INT16: case GPUOS_GGUF_TYPE_INT32: case GPUOS_GGUF_TYPE_INT64:
		*v = (uint64_t)kv->val.i64;
		return kv->val.i64 < 0 ? -1 : 1;
	default:
		return -1;
	}
}

/* g's split KVs into *s: 1 when g is one shard of several, 0 when it has
 * none (or is the only shard), -1 when they are wrong (*why). */
GPUOS_HD static int split_kvs(const struct gpuos_gguf *g, struct split *s, const char **why)
{
	int a = kv_uint(g, "split.no", &s->no), b = kv_uint(g, "split.count", &s->count);
	int c = kv_uint(g, "split.tensors.count", &s->tensors);
	if (a == 0 && b == 0 && c == 0)
		return 0;
	if (a <= 0 || b <= 0 || c <= 0) {
		*why = "corrupt split GGUF: split.no, split.count and split.tensors.count are not all integers of 0 or more";
		return -1;
	}
	if (s->no >= s->count) {
		*why = "corrupt split GGUF: split.no is not below split.count";
		return -1;
	}
	if (s->count > 99999u) {
		*why = "corrupt split GGUF: split.count above 99999 (gguf-split names shards in five digits)";
		return -1;
	}
	return s->count > 1 ? 1 : 0;
}

/* Reply parse error r of shard k of n. */
GPUOS_NOINLINE GPUOS_HD static void shard_parse_refuse(struct rt_files *F, const struct mreq *q, int r, uint64_t k,
						       uint64_t n)
{
	struct sbuf sb;
	uint32_t st = GPUOS_ST_IO;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	files_shard_prefix(F, &sb, k, n);
	if (r == -EIO)
		sb_str(&sb, "cannot read it");
	else
		st = parse_why(F, r, &sb);
	files_reply(F, q, st, 0, 0, F->reason);
}

/* Refuse shard k (0-based) of n whose split KVs t (or why) disagree with its
 * name or with the first shard's split.tensors.count, total. */
GPUOS_NOINLINE GPUOS_HD static void split_disagree(struct rt_files *F, const struct mreq *q, const char *why,
						   const struct split *t, uint32_t k, uint32_t n, uint64_t total)
{
	struct sbuf sb;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	files_shard_prefix(F, &sb, k + 1u, n);
	if (why) {
		sb_str(&sb, why);
	} else {
		sb_str(&sb, "corrupt split GGUF: its split.no ");
		sb_num(&sb, t->no);
		sb_str(&sb, ", split.count ");
		sb_num(&sb, t->count);
		sb_str(&sb, " and split.tensors.count ");
		sb_num(&sb, t->tensors);
		sb_str(&sb, " should be ");
		sb_num(&sb, k);
		sb_str(&sb, ", ");
		sb_num(&sb, n);
		sb_str(&sb, " and ");
		sb_num(&sb, total);
		sb_str(&sb, " (its name, the first shard)");
	}
	files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, F->reason);
}

/* The base name P or P.gguf of a split model that is not itself a file:
 * its first shard's name into F->path (and P into F->prefix) when the
 * directory holds exactly one P-00001-of-0000n.gguf. 1 if so, else 0 with
 * F->path as it was. Only a directory the client may read is listed (names
 * are what it would learn). */
GPUOS_NOINLINE GPUOS_HD int gpuos_gguf_model_name(struct rt_files *F, const struct mreq *q)
{
	uint32_t len = (uint32_t)gpuos_str_nlen(F->path, GPUOS_PATH_MAX), plen = len, slash = 0, i, found = 0, n = 0;
	uint64_t cookie = 0;
	int r;
	if (len > 5u && !gpuos_str_cmp(F->path + len - 5u, ".gguf"))
		plen = len - 5u;
	for (i = 0; i < plen; i++)
		if (F->path[i] == '/')
			slash = i + 1u;
	if (plen == slash || plen + 21u > GPUOS_PATH_MAX)
		return 0;
	gpuos_buf_copy(F->prefix, F->path, len + 1u); /* the path as given, P and all */
	/* the directory: what comes before the last '/', or the root */
	if (slash == 0) {
		F->path[0] = '/';
		F->path[1] = 0;
	} else {
		F->path[slash] = 0;
	}
	r = files_lookup_path(F, q, 0);
	if (!r && F->ino.type == GPUOS_FT_DIR &&
	    !gpuos_fs_permission(&F->fs, &F->ino, files_cred(F, q), GPUOS_FS_MAY_READ)) {
		while ((r = gpuos_fs_readdir(&F->fs, &F->ino, &cookie, &F->de)) == 1) {
			uint32_t k, cnt, nl = F->de.name_len;
			int pl = gpuos_gguf_split_parse(F->de.name, nl, &k, &cnt);
			if (pl < 0 || k != 1u || (uint32_t)pl != plen - slash ||
			    gpuos_str_ncmp(F->de.name, F->prefix + slash, (size_t)pl))
				continue;
			if (found && cnt != n) {
				found = 2; /* two models by that name: neither is meant */
				break;
			}
			found = 1;
			n = cnt;
		}
	}
	if (r >= 0 && found == 1) {
		F->prefix[plen] = 0;
		return gpuos_gguf_split_name(F->path, GPUOS_PATH_MAX, F->prefix, plen, 1, n) != 0;
	}
	gpuos_buf_copy(F->path, F->prefix, len + 1u);
	return 0;
}

/* Shard s->no of a split model is named F->path: check the name says the
 * same shard of as many (at most GPUOS_RT_MODEL_SHARDS), and keep its
 * prefix in F->prefix. Returns the prefix's length with *k and *n from the
 * name, or -1 after closing model m (handle slot first) and replying. */
GPUOS_HD static int split_prefix(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t first,
				 const struct split *s, uint32_t *k, uint32_t *n)
{
	uint32_t len = (uint32_t)gpuos_str_nlen(F->path, GPUOS_PATH_MAX);
	int pl = gpuos_gguf_split_parse(F->path, len, k, n);

	if (pl < 0) {
		files_model_close(F, m, first);
		files_shard_refuse(F, q, GPUOS_ST_NOENT, s->no + 1u, s->count,
			     "not named PREFIX-0000K-of-0000N.gguf as gguf-split names shard K of N, so the others "
			     "cannot be found (GPUOS_GGUF_SHARD opens it alone)", 0);
		return -1;
	}
	if (*k != s->no + 1u || *n != s->count) {
		files_model_close(F, m, first);
		split_disagree(F, q, 0, s, *k - 1u, *n, s->tensors);
		return -1;
	}
	if (*n > GPUOS_RT_MODEL_SHARDS) {
		files_model_close(F, m, first);
		files_shard_refuse(F, q, GPUOS_ST_UNSUPPORTED, *k, *n, "a model split into more shards than the runtime opens (32)", 0);
		return -1;
	}
	gpuos_buf_copy(F->prefix, F->path, (uint64_t)pl);
	F->prefix[pl] = 0;
	return pl;
}

/* Model m was opened at another shard (handle slot first): close it and
 * start again from the first of the n shards (prefix F->prefix, pl bytes),
 * which holds the KVs, into F->model[m], its split KVs into *t. Returns the
 * first shard's slot, or -1 after replying. */
GPUOS_HD static int split_restart(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t first,
				  int pl, uint32_t n, struct split *t)
{
	struct gpuos_gguf *g = &F->model[m];
	const char *why = 0;
	int r, slot;

	files_model_close(F, m, first);
	gpuos_gguf_split_name(F->path, GPUOS_PATH_MAX, F->prefix, (uint32_t)pl, 1, n);
	if ((slot = files_open_model_file(F, q, 1, n)) < 0)
		return -1;
	first = (uint32_t)slot;
	files_model_mem(F->d, m, &g->mem);
	r = parse_file(F, first, g);
	if (r) {
		files_model_close(F, m, first);
		shard_parse_refuse(F, q, r, 1, n);
		return -1;
	}
	if (split_kvs(g, t, &why) <= 0 || t->no != 0 || t->count != n) {
		files_model_close(F, m, first);
		split_disagree(F, q, why, t, 0, n, t->tensors);
		return -1;
	}
	return slot;
}

/* Open shard k of the n of model m (first shard in handle slot first,
 * names F->prefix, pl bytes) as an H_SHARD handle, parse it into the tail
 * of m's tables, check its split KVs against the first's (total tensors)
 * and add its tensors to the model's. Returns 0, or -1 after closing the
 * model and replying. */
GPUOS_HD static int open_shard(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t first,
			       int pl, uint32_t k, uint32_t n, uint64_t total)
{
	struct gpuos_gguf *g = &F->model[m], *sg = &F->fmt.gguf.shard;
	struct rt_model_files *mf = &F->mfiles[m];
	struct gpuos_gguf_mem tail = g->mem;
	uint64_t arena = (g->arena_used + 7u) & ~7ull;
	struct split t = {0, 0, 0};
	const char *why = 0;
	uint32_t j;
	int r, slot;

	gpuos_gguf_split_name(F->path, GPUOS_PATH_MAX, F->prefix, (uint32_t)pl, k + 1u, n);
	if ((slot = files_open_model_file(F, q, k + 1u, n)) < 0) {
		files_model_close(F, m, first);
		return -1;
	}
	F->h[slot].kind = H_SHARD;
	mf->file[k] = handle_number(&F->h[slot], (uint32_t)slot);
	mf->n = k + 1u;
	/* Its tables after the ones so far; its KVs are dropped after the
	 * check (the first shard holds the model's). */
	tail.tensors += g->n_tensors;
	tail.tensor_cap -= g->n_tensors;
	tail.kv += g->n_kv;
	tail.kv_cap -= g->n_kv;
	tail.arena += arena < tail.arena_cap ? arena : tail.arena_cap;
	tail.arena_cap -= arena < tail.arena_cap ? (uint32_t)arena : tail.arena_cap;
	/* the index, rebuilt over the whole below, keeps the parse's
	 * duplicate check linear */
	sg->mem = tail;
	r = parse_file(F, (uint32_t)slot, sg);
	if (r) {
		files_model_close(F, m, first);
		shard_parse_refuse(F, q, r, k + 1u, n);
		return -1;
	}
	if (split_kvs(sg, &t, &why) <= 0 || t.no != k || t.count != n || t.tensors != total) {
		files_model_close(F, m, first);
		split_disagree(F, q, why, &t, k, n, total);
		return -1;
	}
	for (j = 0; j < sg->n_tensors; j++)
		tail.tensors[j].shard = k;
	g->n_tensors += sg->n_tensors;
	g->n_layers = GPUOS_MAX(g->n_layers, sg->n_layers);
	g->flags |= sg->flags & GPUOS_GGUF_F_TRUNCATED;
	if (!(sg->flags & GPUOS_GGUF_F_PACKED))
		g->flags &= ~GPUOS_GGUF_F_PACKED;
	return 0;
}

/* Index the tensors of every shard of model m (first shard in handle slot
 * first) as one. Returns 0, or -1 after closing the model and replying
 * (a name in two shards is corrupt). */
GPUOS_HD static int split_index(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t first)
{
	struct gpuos_gguf *g = &F->model[m];
	struct sbuf sb;
	uint32_t dup;
	int r = gpuos_gguf_reindex(g, &dup);

	if (!r)
		return 0;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	sb_str(&sb, r == -EEXIST ? "corrupt split GGUF: tensor '" : "split GGUF: cannot index its tensors");
	if (r == -EEXIST) {
		sb_str(&sb, g->mem.tensors[dup].name);
		sb_str(&sb, "' is in two shards");
	}
	files_model_close(F, m, first);
	files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, F->reason);
	return -1;
}

/* Model m is shard s->no of a split model (handle slot `first`, parsed into
 * F->model[m], named F->path): open the first shard if that was another,
 * then every other shard as an H_SHARD handle, parse each into the tail of
 * m's tables, check their split KVs against the first's, and index the
 * whole. Returns the first shard's slot, or -1 after replying. */
GPUOS_NOINLINE GPUOS_HD static int open_split(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t first,
					      const struct split *s)
{
	struct gpuos_gguf *g = &F->model[m];
	struct rt_model_files *mf = &F->mfiles[m];
	struct split t = {0, 0, 0};
	uint32_t k, n;
	uint64_t total;
	int pl = split_prefix(F, q, m, first, s, &k, &n), slot;

	if (pl < 0)
		return -1;
	if (k != 1u) {
		if ((slot = split_restart(F, q, m, first, pl, n, &t)) < 0)
			return -1;
		first = (uint32_t)slot;
		s = &t;
	}
	mf->n = 1;
	mf->file[0] = handle_number(&F->h[first], first);
	mf->split_no = 0;
	mf->split_count = n;
	total = s->tensors;
	for (k = 1; k < n; k++)
		if (open_shard(F, q, m, first, pl, k, n, total))
			return -1;
	if (g->n_tensors != total) {
		files_model_close(F, m, first);
		files_shard_refuse(F, q, GPUOS_ST_CORRUPT, n, n, "corrupt split GGUF: the shards hold another number of tensors "
							 "than split.tensors.count says", 0);
		return -1;
	}
	if (split_index(F, q, m, first))
		return -1;
	g->tensor_count = g->n_tensors;
	g->flags |= GPUOS_GGUF_F_SPLIT;
	return (int)first;
}

/* The GGUF in handle slot i did not parse (r): free the slot and say why. */
GPUOS_HD static void gguf_refuse(struct rt_files *F, const struct mreq *q, uint32_t i, int r)
{
	struct sbuf sb;
	uint32_t st;

	F->h[i].kind = H_FREE;
	if (r == -EIO) {
		files_reply_err(F, q, r, "cannot read the GGUF", 0);
		return;
	}
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	st = parse_why(F, r, &sb);
	files_reply(F, q, st, 0, 0, F->reason);
}

GPUOS_HD int gpuos_gguf_model_sniff(const uint8_t *b, uint32_t k)
{
	return k >= 4 && b[0] == 'G' && b[1] == 'G' && b[2] == 'U' && b[3] == 'F';
}

GPUOS_NOINLINE GPUOS_HD int gpuos_gguf_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i)
{
	struct gpuos_gguf *g = &F->model[m];
	struct rt_model_files *mf = &F->mfiles[m];
	struct split s;
	const char *why = 0;
	int slot, r, sp;

	files_model_mem(F->d, m, &g->mem);
	r = parse_file(F, i, g);
	if (r) {
		gguf_refuse(F, q, i, r);
		return -1;
	}
	sp = split_kvs(g, &s, &why);
	if (sp < 0) {
		F->h[i].kind = H_FREE;
		files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, why);
		return -1;
	}
	mf->n = 1;
	mf->file[0] = handle_number(&F->h[i], i);
	mf->split_no = sp ? (uint32_t)s.no : 0;
	mf->split_count = sp ? (uint32_t)s.count : 0;
	if (sp && (q->flags & GPUOS_GGUF_SHARD)) {
		g->flags |= GPUOS_GGUF_F_SHARD;
	} else if (sp && (q->flags & GPUOS_GGUF_RAW)) {
		F->h[i].kind = H_FREE;
		mf->n = 0;
		files_reply(F, q, GPUOS_ST_UNSUPPORTED, 0, 0,
			    "a raw GGUF that is one shard of a split model (split.count > 1): open it with "
			    "GPUOS_GGUF_SHARD to read it alone");
		return -1;
	} else if (sp) {
		if ((slot = open_split(F, q, m, i, &s)) < 0)
			return -1;
		i = (uint32_t)slot;
	}
	return (int)i;
}
