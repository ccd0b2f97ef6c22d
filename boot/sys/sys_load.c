/* SPDX-License-Identifier: MIT */
/*
 * boot/sys/sys_load.c - loading from host code, no kernel to write (host.h,
 * docs/embedding.md): gpuos_model_load_host, gpuos_file_load_host and what
 * they stand on. The calling thread is a client of the runtime's own
 * mailbox, like any host tool; paths, names and answers travel in a scratch
 * buffer of the system's (gpuos_sys_alloc). Every name, range and
 * destination is checked before a byte moves. Then the loads go out in
 * pieces, as many in flight as the mailbox takes, and every piece must
 * deliver all its bytes: nothing is cut short silently.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuos/gpuos.h"
#include "sys_internal.h"

/* Scratch: the path at 0, a reason buffer at WHY_OFF, answers at DATA_OFF. */
#define WHY_OFF     GPUOS_PATH_MAX
#define WHY_LEN     512u
#define DATA_OFF    (GPUOS_PATH_MAX + WHY_LEN)
#define SCRATCH_MIN (1u << 20)
/* Bytes one request asks for: a large tensor becomes several requests, so
 * that it spreads over the service warps and their queues. A range longer
 * than this is cut where its file offset is a multiple of it (add_pieces). */
#define PIECE_MAX   (16ull << 20)
#define IN_FLIGHT   256u
/* Polls between looks at whether the GPU runtime still runs. */
#define LIVENESS_POLLS 4096u

#define fail gpuos_sys_fail /* the calling thread's reason: boot/sys/sys_error.c */

/* What a runtime status means as an errno (host.h lists them). */
static int st_errno(uint32_t st)
{
	switch (st) {
	case GPUOS_ST_OK: return 0;
	case GPUOS_ST_NOENT: return -ENOENT;
	case GPUOS_ST_BAD_RANGE: return -ERANGE;
	case GPUOS_ST_BAD_DST: return -EFAULT;
	case GPUOS_ST_OVERFLOW: return -EOVERFLOW;
	case GPUOS_ST_TIMEOUT: return -ETIMEDOUT;
	case GPUOS_ST_DENIED: return -EACCES;
	case GPUOS_ST_NOTDIR: return -ENOTDIR;
	case GPUOS_ST_LOOP: return -ELOOP;
	case GPUOS_ST_CORRUPT: return -EUCLEAN;
	case GPUOS_ST_UNSUPPORTED: return -EOPNOTSUPP;
	case GPUOS_ST_BAD_HANDLE: return -EBADF;
	case GPUOS_ST_NOSPC: return -ENOSPC;
	case GPUOS_ST_ISDIR: return -EISDIR;
	case GPUOS_ST_NAMETOOLONG: return -ENAMETOOLONG;
	case GPUOS_ST_FULL: return -EAGAIN;
	case GPUOS_ST_STOPPING: return -ESHUTDOWN;
	case GPUOS_ST_NO_FILES: return -EOPNOTSUPP;
	default: return -EIO; /* the controller failed, was reset, or metadata could not be read */
	}
}

/* Where the runtime finds p: registered host memory of the runtime's own
 * process is at its pointer; a client of a service translates (its share,
 * the ranges it registered: boot/sys/sys_client.c). 0: nowhere. */
static uint64_t rt(const struct gpuos_sys *s, const void *p)
{
	uint64_t a = 0;
	if (!s->client)
		return (uint64_t)(uintptr_t)p;
	return gpuos_conn_rt(s, p, 1, 1, &a) ? 0 : a;
}

/* On the GPU the runtime kernel may stop on its own (a fault); then no
 * answer comes, and waiting would never end. A client's service may go
 * (its watcher answers what waits with GONE; a full mailbox stays full). */
static int alive(struct gpuos_sys *s, uint32_t *polls)
{
	char e[256];
	if (s->client && ++*polls % LIVENESS_POLLS == 0 && gpuos_conn_gone(s))
		return fail(-EPIPE, "the service is gone");
	if (!s->gpu || s->client || ++*polls % LIVENESS_POLLS)
		return 0;
	if (gpuos_sys_check(s, e, sizeof(e)))
		return fail(-EIO, "the runtime stopped: %s", e);
	return 0;
}

static int post(struct gpuos_sys *s, const struct gpuos_req *rq, uint32_t *slot)
{
	uint32_t spins = 0, polls = 0;
	int r;
	while (gpuos_post(gpuos_sys_mbox(s), rq, slot) == GPUOS_ST_FULL) /* backpressure: wait for room */
		if (gpuos_backoff(&spins), (r = alive(s, &polls)))
			return r;
	return 0;
}

static int wait_done(struct gpuos_sys *s, uint32_t slot, struct gpuos_result *res)
{
	uint32_t spins = 0, polls = 0;
	int r;
	while (!gpuos_poll(gpuos_sys_mbox(s), slot, res))
		if (gpuos_backoff(&spins), (r = alive(s, &polls)))
			return r;
	return 0;
}

static int call(struct gpuos_sys *s, uint16_t op, uint16_t flags, uint32_t handle, uint64_t off, uint64_t len,
		uint64_t dst, uint64_t arg, struct gpuos_result *res)
{
	struct gpuos_req rq = { op, flags, handle, off, len, dst, arg, NULL, 0 };
	uint32_t slot;
	int r = post(s, &rq, &slot);
	return r ? r : wait_done(s, slot, res);
}

/* The scratch buffer with at least `need` bytes of answers; the caller
 * holds s->load.lock. Growing it parks the runtime twice (free, alloc):
 * open handles stay open across. */
static int scratch(struct gpuos_sys *s, size_t need, char **out)
{
	size_t len = s->load.scratch_len ? s->load.scratch_len : SCRATCH_MIN;
	void *p;
	int r;
	if (s->client) { /* a client's scratch is its share, as it is */
		uint64_t rt0, share;
		char *h = gpuos_sys_heap(s, &rt0, &share);
		if (need + DATA_OFF > share)
			return fail(-ENOSPC, "the runtime's answer needs %zu bytes, the service's share for this client "
				    "holds %llu", need + DATA_OFF, (unsigned long long)share);
		s->load.scratch = h;
		s->load.scratch_len = share;
		*out = h;
		return 0;
	}
	while (len < need + DATA_OFF)
		len *= 2;
	if (len > s->load.scratch_len) {
		if (s->load.scratch && (r = gpuos_sys_free(s, s->load.scratch)))
			return fail(r, "scratch memory: free: %s", strerror(-r));
		s->load.scratch = NULL;
		s->load.scratch_len = 0;
		if ((r = gpuos_sys_alloc(s, len, 0, &p)))
			return fail(r, "scratch memory of %zu bytes for the runtime's answers: %s", len, strerror(-r));
		s->load.scratch = (char *)p;
		s->load.scratch_len = len;
	}
	*out = s->load.scratch;
	return 0;
}

static void close_handle(struct gpuos_sys *s, uint32_t h)
{
	struct gpuos_result res;
	char keep[GPUOS_SYS_WHY_LEN];
	memcpy(keep, gpuos_sys_error(s), sizeof(keep)); /* a failure before the close keeps its reason */
	call(s, GPUOS_OP_CLOSE, 0, h, 0, 0, 0, 0, &res);
	gpuos_sys_fail(0, "%s", keep);
}

/* Open path, a model (GGUF_OPEN) or a regular file (OPEN): *h and the
 * tensor count or the file's size. */
static int open_path(struct gpuos_sys *s, char *sc, const char *path, int model, uint32_t *h, uint64_t *n)
{
	struct gpuos_result res;
	size_t len = strlen(path);
	int r;
	if (len >= GPUOS_PATH_MAX)
		return fail(-ENAMETOOLONG, "%.48s...: a path of %zu bytes (at most %u)", path, len, GPUOS_PATH_MAX - 1);
	memcpy(sc, path, len + 1);
	sc[WHY_OFF] = 0;
	r = call(s, model ? GPUOS_OP_GGUF_OPEN : GPUOS_OP_OPEN, 0, 0, 0, WHY_LEN, rt(s, sc + WHY_OFF), rt(s, sc), &res);
	if (r)
		return r;
	sc[WHY_OFF + WHY_LEN - 1] = 0;
	if (res.status != GPUOS_ST_OK)
		return fail(st_errno(res.status), "%s: %s", path, sc[WHY_OFF] ? sc + WHY_OFF : gpuos_status_name(res.status));
	*h = (uint32_t)res.result;
	*n = res.result2;
	if (!model) {
		/* a directory opens too, and READ would refuse it only later */
		struct gpuos_stat *st = (struct gpuos_stat *)(void *)(sc + DATA_OFF);
		r = call(s, GPUOS_OP_STAT, GPUOS_STAT_HANDLE, *h, 0, sizeof(*st), rt(s, st), 0, &res);
		if (!r && res.status != GPUOS_ST_OK)
			r = fail(st_errno(res.status), "%s: stat: %s", path, gpuos_status_name(res.status));
		else if (!r && st->type != GPUOS_FT_REG)
			r = fail(st->type == GPUOS_FT_DIR ? -EISDIR : -EINVAL, "%s: not a regular file", path);
		if (r) {
			close_handle(s, *h);
			return r;
		}
	}
	return 0;
}

/* [p, p + len) lies in memory the runtime may write for this caller: a
 * registered region of the caller's, the client heap or VRAM client
 * memory; for a client of a service, a range it registered. */
static int dst_ok(const struct gpuos_sys *s, const void *p, uint64_t len)
{
	uint64_t heap_rt, heap_len, dev_len, dev = gpuos_sys_dev_heap(s, &dev_len), dst = (uint64_t)(uintptr_t)p;
	uint32_t k;
	if (s->client)
		return gpuos_conn_rt(s, p, len, 0, &heap_rt) == 0; /* the share is the scratch */
	if (dst == 0 || dst + len < dst)
		return 0;
	gpuos_sys_heap(s, &heap_rt, &heap_len);
	if (dst >= heap_rt && dst + len <= heap_rt + heap_len)
		return 1;
	if (dev && dst >= dev && dst + len <= dev + dev_len)
		return 1;
	for (k = 0; k < s->nuser; k++) {
		uint64_t b = (uint64_t)(uintptr_t)s->user[k].ptr;
		/* not memory of a service's client: that is for its own requests */
		if (s->user[k].ptr != s->load.scratch && !s->user[k].client && dst >= b && dst + len <= b + s->user[k].len)
			return 1;
	}
	return 0;
}

/* ---- a load: pieces, each a request, as many in flight as the mailbox takes ---- */

struct piece {
	uint64_t off, len;   /* a tensor's bytes [off, off + len), or the file's (READ) */
	uint64_t dst;
	uint32_t index;      /* the tensor (GGUF_LOAD) */
	uint32_t item;       /* which of the call's names or ranges */
	uint32_t last;       /* a run of tensors read as one (READ of a model): its last item */
};

struct load_job {
	struct gpuos_sys *s;
	struct sys_model *om; /* a model opened once whose file handle this job reads: kept open after */
	int model;
	uint16_t op;         /* GPUOS_OP_GGUF_LOAD, or READ: a file's ranges or a model's runs */
	uint32_t handle;
	uint64_t npieces;
	char path[GPUOS_PATH_MAX];
	char *names;         /* models: the names, NUL-separated, in the caller's order */
	uint64_t *name_at;   /* where item i's name starts in names */
	struct piece p[];
};

static void describe(const struct load_job *j, const struct piece *p, char *buf, size_t len)
{
	if (j->model && j->op == GPUOS_OP_READ && p->last != p->item)
		snprintf(buf, len, "%.120s: tensors '%.80s' to '%.80s' (file bytes %llu..%llu)", j->path,
			 j->names + j->name_at[p->item], j->names + j->name_at[p->last], (unsigned long long)p->off,
			 (unsigned long long)(p->off + p->len));
	else if (j->model)
		snprintf(buf, len, "%.160s: tensor '%.128s' (%s bytes %llu..%llu)", j->path, j->names + j->name_at[p->item],
			 j->op == GPUOS_OP_READ ? "file" : "its", (unsigned long long)p->off,
			 (unsigned long long)(p->off + p->len));
	else
		snprintf(buf, len, "%.160s: bytes %llu..%llu", j->path, (unsigned long long)p->off,
			 (unsigned long long)(p->off + p->len));
}

/* Send every piece of j, collect every answer, close the handle; 0 or the
 * first failure (its reason in gpuos_sys_error). */
static int run_job(struct load_job *j)
{
	struct gpuos_sys *s = j->s;
	uint32_t slot[IN_FLIGHT], spins = 0, polls = 0;
	uint64_t posted = 0, done = 0;
	int first = 0, r = 0;
	char what[384];

	while (done < j->npieces) {
		while (posted < j->npieces && posted - done < IN_FLIGHT) {
			const struct piece *p = &j->p[posted];
			struct gpuos_req rq = { j->op, 0, j->handle,
						p->off, p->len, p->dst, p->index, NULL, posted };
			if (gpuos_post(gpuos_sys_mbox(s), &rq, &slot[posted % IN_FLIGHT]) != GPUOS_ST_OK)
				break; /* the mailbox is full: collect first */
			posted++;
		}
		if (posted == done) {
			gpuos_backoff(&spins);
			if ((r = alive(s, &polls)))
				return r; /* no runtime to answer, nor to close the handle */
			continue;
		}
		{
			const struct piece *p = &j->p[done];
			struct gpuos_result res;
			if ((r = wait_done(s, slot[done % IN_FLIGHT], &res)))
				return r;
			if (!first && res.status != GPUOS_ST_OK) {
				describe(j, p, what, sizeof(what));
				first = fail(st_errno(res.status), "%s: %s", what, gpuos_status_name(res.status));
			} else if (!first && res.result != p->len) {
				describe(j, p, what, sizeof(what));
				first = fail(-EIO, "%s: %llu bytes delivered", what, (unsigned long long)res.result);
			}
			done++;
		}
	}
	if (!j->om)
		close_handle(s, j->handle);
	return first;
}

static struct load_job *job_new(uint64_t npieces, size_t names_len, uint32_t n)
{
	struct load_job *j = (struct load_job *)calloc(1, sizeof(*j) + npieces * sizeof(struct piece));
	if (!j)
		return NULL;
	j->npieces = npieces;
	if (names_len) {
		j->names = (char *)malloc(names_len);
		j->name_at = (uint64_t *)calloc(n, sizeof(uint64_t));
		if (!j->names || !j->name_at) {
			free(j->names);
			free(j->name_at);
			free(j);
			return NULL;
		}
	}
	return j;
}

static void model_unbusy(struct gpuos_sys *s, struct sys_model *m);

static void job_free(struct load_job *j)
{
	if (j->om)
		model_unbusy(j->s, j->om); /* its handle may go now (gpuos_model_close_host) */
	free(j->names);
	free(j->name_at);
	free(j);
}

/* The pieces of len bytes that start at byte `file_off` of their file: one
 * when len <= PIECE_MAX, else cut where the file offset is a multiple of
 * PIECE_MAX. So every piece but a range's first starts on an LBA of the
 * device (a file's extents start on one), and the runtime writes each of
 * its commands straight into the destination (zero copy). Cut from the
 * range's own start instead, a range that starts mid-LBA (a model's data
 * section, 8 + header bytes into a safetensors file) gave every 16 MiB
 * piece an unaligned start: its first command, up to an xfer_bytes of
 * data, went through the bounce buffer and a warp's copy, piece after
 * piece: what set a whole-model load (0.49x of file_load on the H200,
 * issue 32) apart from a read of the whole file (every command zero copy). */
static uint64_t pieces_of(uint64_t file_off, uint64_t len)
{
	if (len <= PIECE_MAX)
		return len != 0;
	return (file_off + len - 1) / PIECE_MAX - file_off / PIECE_MAX + 1;
}

/* Cut item `item`'s [off, off + len) into pieces_of(file_off, len) pieces
 * at j->p[*at...]; file_off: where off is in the file (READ: off itself;
 * GGUF_LOAD, whose off counts from the tensor's start: the tensor's). */
static void add_pieces(struct load_job *j, uint64_t *at, uint32_t item, uint32_t index, uint64_t off, uint64_t len,
		       uint64_t dst, uint64_t file_off)
{
	uint64_t k = 0, n;
	for (; k < len; k += n) {
		struct piece *p = &j->p[(*at)++];
		n = len <= PIECE_MAX ? len : PIECE_MAX - (file_off + k) % PIECE_MAX;
		n = len - k < n ? len - k : n;
		p->off = off + k;
		p->len = n;
		p->dst = dst + k;
		p->index = index;
		p->item = p->last = item;
	}
}

/* A stream-ordered load, run by a CUDA thread when its stream gets there. */
static void job_on_stream(void *arg)
{
	struct load_job *j = (struct load_job *)arg;
	struct gpuos_sys *s = j->s;
	int r = run_job(j);
	pthread_mutex_lock(&s->load.async_lock);
	if (r && !s->load.async_err) {
		s->load.async_err = r;
		snprintf(s->load.async_why, sizeof(s->load.async_why), "%s", gpuos_sys_error(s));
	}
	s->load.pending--;
	pthread_cond_broadcast(&s->load.idle);
	pthread_mutex_unlock(&s->load.async_lock);
	job_free(j);
}

/* Run j now, or hand it to the stream; either way j is gone after. */
static int launch(struct gpuos_sys *s, struct load_job *j, void *stream)
{
	int r;
	if (!stream || !s->gpu) {
		r = run_job(j);
		job_free(j);
		return r;
	}
	pthread_mutex_lock(&s->load.async_lock);
	s->load.pending++;
	pthread_mutex_unlock(&s->load.async_lock);
	r = gpuos_gpu_host_func(s->gpu, stream, job_on_stream, j);
	if (r) {
		pthread_mutex_lock(&s->load.async_lock);
		s->load.pending--;
		pthread_mutex_unlock(&s->load.async_lock);
		if (!j->om)
			close_handle(s, j->handle);
		job_free(j);
		return fail(r, "cudaLaunchHostFunc on the stream given failed (is it a stream of this process's GPU?)");
	}
	return 0;
}

static int usable(struct gpuos_sys *s, const char *path, uint32_t n, const void *a, const void *b)
{
	gpuos_sys_fail(0, "%s", "");
	if (!s || !path || !n || !a || !b)
		return fail(-EINVAL, "a NULL argument, or nothing to load (n = 0)");
	if (gpuos_sys_mbox_device(s))
		return fail(-EOPNOTSUPP, "the runtime's mailbox is in VRAM (mbox_vram): host code cannot post to it");
	return 0;
}

/* ---- models ---------------------------------------------------------------------- */

/* The model's export (header and tables) in the scratch's answer area. */
static int model_export(struct gpuos_sys *s, const char *path, uint32_t h, char **sc,
			const struct gpuos_gguf_export **out)
{
	const struct gpuos_gguf_export *x;
	struct gpuos_result res;
	uint64_t room;
	int r, tries;
	for (tries = 0; tries < 2; tries++) {
		room = s->load.scratch_len - DATA_OFF;
		if ((r = call(s, GPUOS_OP_GGUF_INFO, 0, h, 0, room, rt(s, *sc + DATA_OFF), 0, &res)))
			return r;
		if (res.status != GPUOS_ST_OK)
			return fail(st_errno(res.status), "%s: model tables: %s", path, gpuos_status_name(res.status));
		x = (const struct gpuos_gguf_export *)(const void *)(*sc + DATA_OFF);
		if (x->complete && x->total <= room && res.result <= room) {
			/* the runtime wrote it, but check the tables lie inside before they are walked */
			if (x->tensors_off > x->total ||
			    x->tensor_count > (x->total - x->tensors_off) / sizeof(struct gpuos_gguf_tensor))
				return fail(-EIO, "%s: the runtime's export of the model is inconsistent", path);
			*out = x;
			return 0;
		}
		if ((r = scratch(s, res.result > x->total ? res.result : x->total, sc)))
			return r;
	}
	return fail(-EIO, "%s: the model's tables did not fit the answer buffer", path);
}

static const struct gpuos_gguf_tensor *tensors_of(const struct gpuos_gguf_export *x)
{
	return (const struct gpuos_gguf_tensor *)(const void *)((const char *)x + x->tensors_off);
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct gpuos_gguf_tensor *t = (const struct gpuos_gguf_tensor *)ctx;
	return strcmp(t[*(const uint32_t *)a].name, t[*(const uint32_t *)b].name);
}

/* Index of the tensor called name through the sorted order, or -1. */
static int64_t find(const struct gpuos_gguf_tensor *t, const uint32_t *order, uint64_t n, const char *name)
{
	uint64_t lo = 0, hi = n;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t[order[mid]].name, name);
		if (c == 0)
			return order[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* One named tensor of a load, copied out of the export (which lives in the
 * scratch, and an OPEN of the file writes there). */
struct span {
	uint64_t off, len;   /* the tensor's bytes in its file */
	void *dst;           /* the caller's pointer */
	uint32_t index, item;
};

/* Check every name and destination against the model's tables: *out gets
 * one span per name (the caller's order), *names_len their bytes. */
/* The tensors of x in name order (indexes into its table), for find. */
static uint32_t *name_order(const struct gpuos_gguf_export *x)
{
	uint32_t *order = (uint32_t *)malloc((x->tensor_count + 1) * sizeof(uint32_t)), i;
	if (!order)
		return NULL;
	for (i = 0; i < x->tensor_count; i++)
		order[i] = i;
	qsort_r(order, x->tensor_count, sizeof(uint32_t), by_name, (void *)tensors_of(x));
	return order;
}

/* sorted: x's name_order, or NULL to make one for this call. */
static int resolve(struct gpuos_sys *s, const char *path, const struct gpuos_gguf_export *x, uint32_t n,
		   const char *const names[], void *const dst[], struct span **out, uint64_t *names_len,
		   const uint32_t *sorted)
{
	const struct gpuos_gguf_tensor *t = tensors_of(x);
	struct span *sp = (struct span *)malloc((uint64_t)n * sizeof(*sp));
	uint32_t *made = sorted ? NULL : name_order(x);
	const uint32_t *order = sorted ? sorted : made;
	uint32_t i;
	int r = 0;

	if (!order || !sp) {
		free(made);
		free(sp);
		return fail(-ENOMEM, "%s: no memory for the name index", path);
	}
	*names_len = 0;
	for (i = 0; i < n && !r; i++) {
		int64_t k = names[i] ? find(t, order, x->tensor_count, names[i]) : -1;
		if (!names[i])
			r = fail(-EINVAL, "%s: name %u is NULL", path, i);
		else if (k < 0)
			r = fail(-ENOENT, "%s: no tensor '%s'", path, names[i]);
		else if (!dst_ok(s, dst[i], t[k].size ? t[k].size : 1))
			r = fail(-EFAULT, "%s: tensor '%s' (%llu bytes) does not fit registered memory at %p "
				 "(gpuos_sys_register or gpuos_sys_alloc it)", path, names[i],
				 (unsigned long long)t[k].size, dst[i]);
		else {
			struct span v = { t[k].abs_off, t[k].size, dst[i], (uint32_t)k, i };
			sp[i] = v;
			*names_len += strlen(names[i]) + 1;
		}
	}
	free(made);
	if (r)
		free(sp);
	else
		*out = sp;
	return r;
}

static int by_file_offset(const void *a, const void *b)
{
	const struct span *x = (const struct span *)a, *y = (const struct span *)b;
	return x->off < y->off ? -1 : x->off > y->off ? 1 : x->item < y->item ? -1 : x->item > y->item;
}

/* b continues a in the file and in memory, and the two are one range of
 * memory the caller may have written. */
static int joins(const struct gpuos_sys *s, const struct span *a, const struct span *b)
{
	uintptr_t da = (uintptr_t)a->dst;
	return a->len && b->len && a->off + a->len == b->off && da + a->len == (uintptr_t)b->dst &&
	       dst_ok(s, a->dst, a->len + b->len);
}

/* Sort sp by file offset and count the runs of tensors that follow each
 * other in the file and in memory; with `join`, make each run one span
 * (its len grows, the joined get len 0; last[] its last item). A caller
 * that lays tensors out as the file does (the Python binding) gets a whole
 * model as one range: the requests of a file read, not one or more per
 * tensor. */
static uint32_t join_runs(const struct gpuos_sys *s, struct span *sp, uint32_t n, uint32_t *last, int join)
{
	uint32_t i, head = 0, runs = 0;
	uint64_t head_len = 0;
	qsort(sp, n, sizeof(*sp), by_file_offset);
	for (i = 0; i < n; i++) {
		struct span run = sp[head];
		run.len = head_len;
		if (i > head && head_len && joins(s, &run, &sp[i])) {
			head_len += sp[i].len;
			if (join) {
				sp[head].len = head_len;
				last[head] = sp[i].item;
				sp[i].len = 0;
			}
			continue;
		}
		head = i;
		head_len = sp[i].len;
		last[i] = sp[i].item;
		runs += head_len != 0;
	}
	return runs;
}

/* The job: one GGUF_LOAD per tensor (its pieces), or with READ the runs of
 * join_runs on handle h of the model's one file. */
static int model_job(struct gpuos_sys *s, const char *path, uint32_t h, uint16_t op, const struct span *sp,
		     const uint32_t *last, uint32_t n, const char *const names[], uint64_t names_len,
		     struct load_job **out)
{
	uint64_t npieces = 0, at = 0, used = 0;
	struct load_job *j;
	uint32_t i;

	for (i = 0; i < n; i++)
		npieces += pieces_of(sp[i].off, sp[i].len);
	if (!(j = job_new(npieces, names_len, n)))
		return fail(-ENOMEM, "%s: no memory for the load's %llu pieces", path, (unsigned long long)npieces);
	j->s = s;
	j->model = 1;
	j->op = op;
	j->handle = h;
	snprintf(j->path, sizeof(j->path), "%s", path);
	for (i = 0; i < n; i++) {
		size_t len = strlen(names[i]) + 1;
		memcpy(j->names + used, names[i], len);
		j->name_at[i] = used;
		used += len;
	}
	for (i = 0; i < n; i++) {
		uint64_t first = at, k;
		if (op == GPUOS_OP_READ && !sp[i].len)
			continue; /* joined into a run before it, or empty */
		add_pieces(j, &at, sp[i].item, sp[i].index, op == GPUOS_OP_READ ? sp[i].off : 0, sp[i].len,
			   rt(s, sp[i].dst), sp[i].off);
		for (k = first; k < at && op == GPUOS_OP_READ; k++)
			j->p[k].last = last[i]; /* a run's every piece names its first and last tensor */
	}
	j->npieces = at;
	*out = j;
	return 0;
}

/* Handle of path as a file, to READ a one-file model's runs from: 0 when
 * it does not open as the file the export came from (a split model's base
 * name, say), and the load goes tensor by tensor. */
static uint32_t model_file(struct gpuos_sys *s, char *sc, const char *path, uint64_t file_size)
{
	char keep[GPUOS_SYS_WHY_LEN];
	uint64_t size = 0;
	uint32_t fh = 0;
	memcpy(keep, gpuos_sys_error(s), sizeof(keep)); /* not opening is no failure of the load's */
	if (open_path(s, sc, path, 0, &fh, &size))
		fh = 0;
	else if (size != file_size) {
		close_handle(s, fh); /* not the file the tables describe: replaced since */
		fh = 0;
	}
	gpuos_sys_fail(0, "%s", keep);
	return fh;
}

int gpuos_model_load_host(struct gpuos_sys *s, const char *path, uint32_t n, const char *const names[],
			  void *const dst[], void *stream)
{
	const struct gpuos_gguf_export *x;
	struct load_job *j = NULL;
	struct span *sp = NULL;
	uint32_t *last = NULL, h, fh = 0, runs = 0, i, tensors = 0;
	uint64_t count, names_len = 0, file_size = 0;
	uint16_t op = GPUOS_OP_GGUF_LOAD;
	int r, one_file = 0;
	char *sc;

	if ((r = usable(s, path, n, names, dst)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	r = scratch(s, 0, &sc);
	if (!r)
		r = open_path(s, sc, path, 1, &h, &count);
	if (!r) {
		r = model_export(s, path, h, &sc, &x);
		if (!r) {
			/* abs_off is in path's own file: neither split nor an index of shards */
			one_file = x->shards <= 1 && !(x->flags & (GPUOS_GGUF_F_SPLIT | GPUOS_GGUF_F_ST_INDEX));
			file_size = x->file_size;
			r = resolve(s, path, x, n, names, dst, &sp, &names_len, NULL);
		}
		if (!r && !(last = (uint32_t *)malloc((uint64_t)n * sizeof(uint32_t))))
			r = fail(-ENOMEM, "%s: no memory for the load's runs", path);
		if (!r && one_file) {
			for (i = 0; i < n; i++)
				tensors += sp[i].len != 0;
			runs = join_runs(s, sp, n, last, 0);
			/* READs of runs only where the caller laid tensors out as the file does */
			if (runs < tensors && (fh = model_file(s, sc, path, file_size))) {
				join_runs(s, sp, n, last, 1);
				close_handle(s, h);
				h = fh;
				op = GPUOS_OP_READ;
			}
		}
		if (!r)
			r = model_job(s, path, h, op, sp, last, n, names, names_len, &j);
		if (r)
			close_handle(s, h);
	}
	pthread_mutex_unlock(&s->load.lock);
	free(sp);
	free(last);
	return r ? r : launch(s, j, stream);
}

/* The export x into the caller's buf, when it holds it; *needed its size. */
static int copy_export(const char *path, const struct gpuos_gguf_export *x, void *buf, size_t len, size_t *needed)
{
	*needed = x->total;
	if (len < x->total || !buf)
		return fail(-ENOSPC, "%s: the model's tables take %llu bytes, the buffer %zu", path,
			    (unsigned long long)x->total, len);
	memcpy(buf, x, x->total);
	return 0;
}

int gpuos_model_info_host(struct gpuos_sys *s, const char *path, void *buf, size_t len, size_t *needed)
{
	const struct gpuos_gguf_export *x;
	uint64_t count;
	uint32_t h;
	char *sc;
	int r;

	if ((r = usable(s, path, 1, needed, needed)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	r = scratch(s, 0, &sc);
	if (!r && !(r = open_path(s, sc, path, 1, &h, &count))) {
		if (!(r = model_export(s, path, h, &sc, &x)))
			r = copy_export(path, x, buf, len, needed);
		close_handle(s, h);
	}
	pthread_mutex_unlock(&s->load.lock);
	return r;
}

/* ---- models opened once: gpuos_model_open_host and what takes its id ------------ */

/* At most this many file handles kept open by one system's opened models
 * (a service's client holds GPUOS_MAX_HANDLES_PER_SHARE handles in all):
 * past it, the least recently used gives its handle back and opens its
 * file again at its next load. */
#define MODELS_KEPT 8u

/* What tells one file from another that took its path: a replaced file
 * is another inode, or the same one written since (size, mtime). */
struct file_id {
	uint32_t ino;
	uint64_t size;
	int64_t mtime;
};

struct sys_model {
	uint32_t id;
	uint32_t fh;          /* the model's file, kept open (a one-file model), 0: none now */
	uint32_t busy;        /* loads in flight on fh (under s->load.async_lock) */
	int known;            /* a one-file model whose file's fid is known: loads READ its runs */
	struct file_id fid;   /* the file the tables were parsed from */
	uint64_t used;        /* s->load.tick at its last open or load */
	struct gpuos_gguf_export *x; /* its tables (a copy) */
	uint32_t *order;      /* x's tensors in name order */
	char path[];
};

static int same_file(const struct file_id *a, const struct file_id *b)
{
	return a->ino == b->ino && a->size == b->size && a->mtime == b->mtime;
}

/* The inode of handle h (a model's or a file's): its file_id. */
static int handle_id(struct gpuos_sys *s, char *sc, uint32_t h, struct file_id *id)
{
	struct gpuos_stat *st = (struct gpuos_stat *)(void *)(sc + DATA_OFF);
	struct gpuos_result res;
	int r = call(s, GPUOS_OP_STAT, GPUOS_STAT_HANDLE, h, 0, sizeof(*st), rt(s, st), 0, &res);
	if (r)
		return r;
	if (res.status != GPUOS_ST_OK)
		return fail(st_errno(res.status), "stat of handle %u: %s", h, gpuos_status_name(res.status));
	id->ino = st->ino;
	id->size = st->size;
	id->mtime = st->mtime;
	return 0;
}

static struct sys_model *model_find(struct gpuos_sys *s, uint32_t id, uint32_t *at)
{
	uint32_t i;
	for (i = 0; i < s->load.nmodels; i++)
		if (s->load.models[i]->id == id) {
			if (at)
				*at = i;
			return s->load.models[i];
		}
	return NULL;
}

static void model_unbusy(struct gpuos_sys *s, struct sys_model *m)
{
	pthread_mutex_lock(&s->load.async_lock);
	m->busy--;
	pthread_cond_broadcast(&s->load.idle);
	pthread_mutex_unlock(&s->load.async_lock);
}

static uint32_t model_busy(struct gpuos_sys *s, struct sys_model *m)
{
	uint32_t b;
	pthread_mutex_lock(&s->load.async_lock);
	b = m->busy;
	pthread_mutex_unlock(&s->load.async_lock);
	return b;
}

/* Room to keep one more file handle: under MODELS_KEPT, or the least
 * recently used idle model's handle closed. 0: none to be had (every kept
 * handle has a load in flight). Under s->load.lock. */
static int keep_room(struct gpuos_sys *s, const struct sys_model *self)
{
	struct sys_model *lru = NULL;
	uint32_t i, kept = 0;
	for (i = 0; i < s->load.nmodels; i++) {
		struct sys_model *m = s->load.models[i];
		if (!m->fh || m == self)
			continue;
		kept++;
		if ((!lru || m->used < lru->used) && !model_busy(s, m))
			lru = m;
	}
	if (kept < MODELS_KEPT)
		return 1;
	if (!lru)
		return 0;
	close_handle(s, lru->fh);
	lru->fh = 0;
	return 1;
}

/* Open m's file by its path: *fh, or -ESTALE when the path names another
 * file now than the one m's tables came from. */
static int model_reopen(struct gpuos_sys *s, char *sc, struct sys_model *m, uint32_t *fh)
{
	struct file_id now;
	uint64_t size;
	int r = open_path(s, sc, m->path, 0, fh, &size);
	if (r)
		return r;
	/* open_path left its STAT of the handle at DATA_OFF */
	{
		const struct gpuos_stat *st = (const struct gpuos_stat *)(const void *)(sc + DATA_OFF);
		now.ino = st->ino;
		now.size = st->size;
		now.mtime = st->mtime;
	}
	if (!same_file(&now, &m->fid)) {
		close_handle(s, *fh);
		*fh = 0;
		return fail(-ESTALE, "%s: not the file it was opened as (inode %u, %llu bytes then; inode %u, %llu "
			    "bytes now): replaced since gpuos_model_open_host; open it again", m->path, m->fid.ino,
			    (unsigned long long)m->fid.size, now.ino, (unsigned long long)now.size);
	}
	return 0;
}

static void model_free(struct sys_model *m)
{
	free(m->x);
	free(m->order);
	free(m);
}

int gpuos_model_open_host(struct gpuos_sys *s, const char *path, uint32_t *id, size_t *needed)
{
	const struct gpuos_gguf_export *x;
	struct sys_model *m = NULL;
	struct file_id mid;
	uint64_t count;
	uint32_t h;
	char *sc;
	int r;

	if ((r = usable(s, path, 1, id, id)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	r = scratch(s, 0, &sc);
	if (!r && !(r = open_path(s, sc, path, 1, &h, &count))) {
		if (!(r = model_export(s, path, h, &sc, &x))) {
			size_t plen = strlen(path) + 1;
			if (!(m = (struct sys_model *)calloc(1, sizeof(*m) + plen)) ||
			    !(m->x = (struct gpuos_gguf_export *)malloc(x->total)))
				r = fail(-ENOMEM, "%s: no memory for the model's tables", path);
			else {
				memcpy(m->x, x, x->total);
				memcpy(m->path, path, plen);
				if (!(m->order = name_order(m->x)))
					r = fail(-ENOMEM, "%s: no memory for the name index", path);
			}
		}
		/* A one-file model: which file the tables came from (its
		 * handle's inode), and that file kept open for the loads. A
		 * split model or an index of shards loads by its path each
		 * time, as gpuos_model_load_host does. */
		if (!r && m->x->shards <= 1 && !(m->x->flags & (GPUOS_GGUF_F_SPLIT | GPUOS_GGUF_F_ST_INDEX)) &&
		    !handle_id(s, sc, h, &mid) && mid.size == m->x->file_size) {
			m->known = 1;
			m->fid = mid;
		}
		if (!r)
			gpuos_sys_fail(0, "%s", ""); /* a stat refused is no failure of the open: the loads go by path */
		close_handle(s, h);
	}
	if (!r && m->known && keep_room(s, m)) {
		uint32_t fh;
		char keep[GPUOS_SYS_WHY_LEN];
		memcpy(keep, gpuos_sys_error(s), sizeof(keep));
		if (!model_reopen(s, sc, m, &fh))
			m->fh = fh; /* else the first load opens it (and says why it cannot) */
		gpuos_sys_fail(0, "%s", keep);
	}
	if (!r && s->load.nmodels == s->load.models_cap) {
		uint32_t cap = s->load.models_cap ? 2 * s->load.models_cap : 8;
		struct sys_model **t = (struct sys_model **)realloc(s->load.models, cap * sizeof(*t));
		if (!t)
			r = fail(-ENOMEM, "%s: no memory for the table of opened models", path);
		else {
			s->load.models = t;
			s->load.models_cap = cap;
		}
	}
	if (!r) {
		m->id = ++s->load.next_id ? s->load.next_id : ++s->load.next_id; /* 0 is no id */
		m->used = ++s->load.tick;
		s->load.models[s->load.nmodels++] = m;
		*id = m->id;
		if (needed)
			*needed = m->x->total;
	} else if (m) {
		if (m->fh)
			close_handle(s, m->fh);
		model_free(m);
	}
	pthread_mutex_unlock(&s->load.lock);
	return r;
}

int gpuos_model_info_id(struct gpuos_sys *s, uint32_t id, void *buf, size_t len, size_t *needed)
{
	struct sys_model *m;
	int r = 0;
	if ((r = usable(s, "", 1, needed, needed)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	if (!(m = model_find(s, id, NULL)))
		r = fail(-EBADF, "no model opened with id %u (closed?)", id);
	else
		r = copy_export(m->path, m->x, buf, len, needed);
	pthread_mutex_unlock(&s->load.lock);
	return r;
}

int gpuos_model_load_id(struct gpuos_sys *s, uint32_t id, uint32_t n, const char *const names[], void *const dst[],
			void *stream)
{
	struct sys_model *m;
	struct load_job *j = NULL;
	struct span *sp = NULL;
	uint32_t *last = NULL, fh = 0;
	uint64_t names_len = 0;
	char *sc;
	int r;

	if ((r = usable(s, "", n, names, dst)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	if (!(m = model_find(s, id, NULL))) {
		pthread_mutex_unlock(&s->load.lock);
		return fail(-EBADF, "no model opened with id %u (closed?)", id);
	}
	m->used = ++s->load.tick;
	if (!m->known) {
		/* by its path, as gpuos_model_load_host (which takes the lock) */
		char path[GPUOS_PATH_MAX];
		snprintf(path, sizeof(path), "%s", m->path);
		pthread_mutex_unlock(&s->load.lock);
		return gpuos_model_load_host(s, path, n, names, dst, stream);
	}
	r = scratch(s, 0, &sc);
	/* No request: the names against the tables kept, the runs READ on
	 * the handle kept (or opened again, and checked to be the same file). */
	if (!r)
		r = resolve(s, m->path, m->x, n, names, dst, &sp, &names_len, m->order);
	if (!r && !(last = (uint32_t *)malloc((uint64_t)n * sizeof(uint32_t))))
		r = fail(-ENOMEM, "%s: no memory for the load's runs", m->path);
	if (!r && !(fh = m->fh) && !(r = model_reopen(s, sc, m, &fh)) && keep_room(s, m))
		m->fh = fh;
	if (!r) {
		join_runs(s, sp, n, last, 1);
		r = model_job(s, m->path, fh, GPUOS_OP_READ, sp, last, n, names, names_len, &j);
		if (r && fh != m->fh)
			close_handle(s, fh);
	}
	if (!r && fh == m->fh) { /* the job reads the kept handle: it stays open, and m with it, until the job ends */
		j->om = m;
		pthread_mutex_lock(&s->load.async_lock);
		m->busy++;
		pthread_mutex_unlock(&s->load.async_lock);
	}
	pthread_mutex_unlock(&s->load.lock);
	free(sp);
	free(last);
	return r ? r : launch(s, j, stream);
}

int gpuos_model_close_host(struct gpuos_sys *s, uint32_t id)
{
	struct sys_model *m;
	uint32_t at;
	if (!s)
		return fail(-EINVAL, "a NULL argument");
	gpuos_sys_fail(0, "%s", "");
	pthread_mutex_lock(&s->load.lock);
	if ((m = model_find(s, id, &at)))
		s->load.models[at] = s->load.models[--s->load.nmodels];
	pthread_mutex_unlock(&s->load.lock);
	if (!m)
		return fail(-EBADF, "no model opened with id %u (closed already?)", id);
	/* its loads in flight read the handle: it goes after them */
	pthread_mutex_lock(&s->load.async_lock);
	while (m->busy)
		pthread_cond_wait(&s->load.idle, &s->load.async_lock);
	pthread_mutex_unlock(&s->load.async_lock);
	if (m->fh)
		close_handle(s, m->fh);
	model_free(m);
	return 0;
}

/* ---- files --------------------------------------------------------------------- */

int gpuos_file_size_host(struct gpuos_sys *s, const char *path, uint64_t *size)
{
	uint32_t h;
	char *sc;
	int r;

	if ((r = usable(s, path, 1, size, size)))
		return r;
	pthread_mutex_lock(&s->load.lock);
	r = scratch(s, 0, &sc);
	if (!r && !(r = open_path(s, sc, path, 0, &h, size)))
		close_handle(s, h);
	pthread_mutex_unlock(&s->load.lock);
	return r;
}

int gpuos_file_load_host(struct gpuos_sys *s, const char *path, uint32_t n, const uint64_t offset[],
			 const uint64_t length[], void *const dst[], void *stream)
{
	struct load_job *j = NULL;
	uint64_t size = 0, npieces = 0, at = 0;
	uint32_t h = 0, i;
	char *sc;
	int r;

	if ((r = usable(s, path, n, offset, dst)) || (r = usable(s, path, n, length, dst)))
		return r;
	for (i = 0; i < n; i++) {
		if (offset[i] + length[i] < offset[i] || length[i] > GPUOS_MAX_LENGTH)
			return fail(-EINVAL, "%s: range %u (%llu bytes at %llu) overflows", path, i,
				    (unsigned long long)length[i], (unsigned long long)offset[i]);
		if (!dst_ok(s, dst[i], length[i] ? length[i] : 1))
			return fail(-EFAULT, "%s: range %u (%llu bytes) does not fit registered memory at %p "
				    "(gpuos_sys_register or gpuos_sys_alloc it)", path, i, (unsigned long long)length[i],
				    dst[i]);
		npieces += pieces_of(offset[i], length[i]);
	}
	pthread_mutex_lock(&s->load.lock);
	r = scratch(s, 0, &sc);
	if (!r)
		r = open_path(s, sc, path, 0, &h, &size);
	for (i = 0; !r && i < n; i++)
		if (offset[i] + length[i] > size)
			r = fail(-ERANGE, "%s: bytes %llu..%llu lie past its end (%llu bytes)", path,
				 (unsigned long long)offset[i], (unsigned long long)(offset[i] + length[i]),
				 (unsigned long long)size);
	if (!r && !(j = job_new(npieces, 0, n)))
		r = fail(-ENOMEM, "%s: no memory for the load's %llu pieces", path, (unsigned long long)npieces);
	if (r && h)
		close_handle(s, h);
	pthread_mutex_unlock(&s->load.lock);
	if (r)
		return r;
	j->s = s;
	j->op = GPUOS_OP_READ;
	j->handle = h;
	snprintf(j->path, sizeof(j->path), "%s", path);
	for (i = 0; i < n; i++)
		add_pieces(j, &at, i, 0, offset[i], length[i], rt(s, dst[i]), offset[i]);
	return launch(s, j, stream);
}

/* ---- stream-ordered loads: waiting for them ------------------------------------ */

int gpuos_sys_sync(struct gpuos_sys *s)
{
	int r;
	gpuos_sys_load_drain(s);
	pthread_mutex_lock(&s->load.async_lock);
	r = s->load.async_err;
	gpuos_sys_fail(0, "%s", r ? s->load.async_why : "");
	s->load.async_err = 0;
	pthread_mutex_unlock(&s->load.async_lock);
	return r;
}

void gpuos_sys_load_fini(struct gpuos_sys *s)
{
	uint32_t i;
	if (!s->load.inited)
		return;
	gpuos_sys_load_drain(s);
	/* Opened models: their handles go with the runtime, or with the
	 * client (the service closes every handle of a client that leaves). */
	for (i = 0; i < s->load.nmodels; i++)
		model_free(s->load.models[i]);
	free(s->load.models);
	s->load.models = NULL;
	s->load.nmodels = s->load.models_cap = 0;
	pthread_mutex_destroy(&s->load.lock);
	pthread_mutex_destroy(&s->load.async_lock);
	pthread_cond_destroy(&s->load.idle);
	s->load.inited = 0;
}
