/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_internal.h - what the sources of the metadata warp share;
 * files.h is their interface to the rest of the runtime. One idea a file:
 *   files_io.c     its synchronous reads (own queue pairs) and block cache
 *   files_fs.c     the file system (runtime/fs/fs.h, whichever it is): the
 *                  partition table, mount, path lookup,
 *                  opening handles and their extent maps (the table that
 *                  reads them, with the service warps: engine/handles.c);
 *                  PARTS, OPEN, STAT, READDIR, READ, CLOSE
 *   files_model.c  models, whatever their format (runtime/model/model.h,
 *                  which each format's folder is behind): GGUF_OPEN, INFO,
 *                  FIND, TENSOR, LAYER
 *   files_loop.c   the ring from the service warps, replies, the dispatch of
 *                  requests, the metadata warp's loop
 *
 * Context: one lane of the metadata warp, unless a call says otherwise.
 */
#ifndef GPUOS_RUNTIME_FILES_INTERNAL_H
#define GPUOS_RUNTIME_FILES_INTERNAL_H

#include <errno.h>

#include "files.h"
#include "recover.h"
#include "model/model.h"
#include "gpt.h"
#include "gpuos/internal/queue.h"
#include "util.h"

GPUOS_EXTERN_C_BEGIN

#define GPT_PARTS   128u
#define WHY_MAX     256u

struct rt_io {                  /* ctx of a gpuos_meta_io */
	struct rt_files *F;
	uint64_t base;              /* device byte offset of byte 0 (partition, raw GGUF) */
	uint32_t handle;            /* file io: handle slot (0-based); dev io: unused */
	uint32_t hint;
};

/* The files an open model reads from (files_model.c). */
struct rt_model_files {
	uint32_t n;                 /* 1, or its shards or indexed files (GPUOS_GGUF_F_SPLIT) */
	uint32_t split_no;          /* the split KVs of what was opened (GPUOS_GGUF_F_SHARD, _SPLIT) */
	uint32_t split_count;
	uint32_t file[GPUOS_RT_MODEL_SHARDS]; /* handle numbers: [0] the model's, then its H_SHARD ones */
};

struct rt_files {
	uint32_t magic;
	uint32_t mounted;           /* 0: not yet, 1: mounted, 2: failed (mount_status, mount_why) */
	uint32_t mount_status;
	uint32_t launches;          /* metadata warp launches (park/resume) */
	uint32_t consumed;          /* ring positions served by the metadata warp (release store: the
				     * forwarders' room, gpuos_rt_files_forward) */
	uint32_t cid;               /* last command id used on the metadata queue: each command,
				     * each retry too, takes the next, so a late or repeated
				     * completion of an earlier one never passes for it */
	uint16_t last_nvme;         /* NVMe status of the last failed metadata read */
	uint16_t rsvd1;
	uint32_t gen;               /* handle generations */
	/* The reset protocol (runtime/recover.h): the metadata warp takes part */
	uint32_t rec_epoch;         /* the last reset epoch it dropped for */
	uint32_t inflight;          /* 1 + the controller of its command in flight, 0: none */
	uint32_t dropped;           /* a reset ended that command */
	uint32_t broken;            /* a command could be neither ended nor reset: no more reads */
	/* The life of its commands (docs/design.md): retries, and completions
	 * that come twice */
	uint32_t req_cid0;          /* the first command id of the request being served */
	uint32_t req_dup;           /* a command of that request completed twice: its answer is
				     * GPUOS_ST_DUP_CQE, whatever its bytes said */
	uint64_t n_retries;         /* metadata commands sent again (DNR clear), its stats line */
	uint64_t n_cmds;            /* metadata commands sent the first time, its stats line */
	uint64_t n_dups;            /* completions of a command already completed */
	uint64_t n_untrusted;       /* requests answered GPUOS_ST_DUP_CQE */
	uint32_t rec_gen[GPUOS_RT_MAX_CTRL];
	uint64_t part_off;          /* byte offset of the mounted file system */
	uint64_t part_lba;          /* the same in device LBAs (0: no partition table) */
	uint32_t root_ino;          /* where paths start: the --root directory (at mount) */
	uint32_t gpt_parsed;        /* gpt and parts hold the table (gpt_rc: the parser's result) */
	int32_t gpt_rc;
	const struct gpuos_rt_desc *d;
	char mount_why[160];
	uint32_t victim[GPUOS_RT_CACHE_SETS];
	/* --- written by service warps: a line each --- */
	uint32_t posted __attribute__((aligned(64)));  /* ring positions handed out (atomic) */
	uint32_t exits __attribute__((aligned(64)));   /* service warp exits, all launches (atomic) */
	/* Forwarded requests of each client not yet answered (atomic: the
	 * service warps add, the metadata warp takes away); [0], the service's
	 * own mailbox, is not counted. */
	uint32_t fwd_held[GPUOS_RT_MAX_CLIENTS + 1] __attribute__((aligned(64)));
	struct gpuos_qp qp[GPUOS_RT_MAX_CTRL] __attribute__((aligned(64))); /* one per controller */
	struct rt_io io_dev, io_part, io_file;
	struct gpuos_meta_io mio_dev, mio_part, mio_file;
	struct rt_handle h[GPUOS_RT_HANDLES];
	uint64_t tag[GPUOS_RT_CACHE_SETS * GPUOS_RT_CACHE_WAYS]; /* device page + 1, 0: empty */
	int32_t model_owner[GPUOS_RT_MODELS];                    /* handle slot + 1, 0: free */
	struct rt_model_files mfiles[GPUOS_RT_MODELS];
	struct gpuos_gguf model[GPUOS_RT_MODELS];
	struct gpuos_model_state fmt; /* the formats' state while a model opens (model/model.h) */
	uint8_t first[4];           /* the first bytes of the model file being opened */
	uint32_t n_first;
	struct gpuos_gpt gpt;
	struct gpuos_gpt_parser gptp;
	struct gpuos_gpt_part parts[GPT_PARTS];
	struct gpuos_fs_inode ino;
	struct gpuos_fs_dirent de;
	char path[GPUOS_PATH_MAX];
	char prefix[GPUOS_PATH_MAX]; /* what a model's file names share (a format's opener: a split
				      * GGUF's shard names without -0000k-of-0000n.gguf, an index's folder) */
	char why[WHY_MAX];
	char reason[WHY_MAX];       /* a reason being built: here, not on the lane's stack, which all
				     * kernels share (GPUOS_GPU_STACK_BYTES, boot/gpu.h) */
	struct gpuos_fs fs;        /* the mounted file system (runtime/fs/fs.h) */
};

/* ---- layout of the region ------------------------------------------------------ */

GPUOS_INLINE GPUOS_HD uint64_t off_cache(void) { return gpuos_align_line(sizeof(struct rt_files)); }
GPUOS_INLINE GPUOS_HD uint64_t model_bytes(void)
{
	return gpuos_align_line((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_gguf_tensor)) +
	       gpuos_align_line((uint64_t)GPUOS_RT_MODEL_KV * sizeof(struct gpuos_gguf_kv)) +
	       gpuos_align_line(GPUOS_RT_MODEL_ARENA) +
	       gpuos_align_line((uint64_t)GPUOS_RT_MODEL_INDEX * sizeof(uint32_t));
}
GPUOS_INLINE GPUOS_HD uint64_t off_models(void)
{
	return off_cache() + (uint64_t)GPUOS_RT_CACHE_SETS * GPUOS_RT_CACHE_WAYS * GPUOS_RT_CACHE_PAGE;
}
/* The formats' scratch, used while a model opens (gpuos_model_scratch()
 * bytes: each format lays out its own, runtime/model/). */
GPUOS_INLINE GPUOS_HD uint64_t off_model_scratch(void) { return off_models() + GPUOS_RT_MODELS * model_bytes(); }
GPUOS_INLINE GPUOS_HD uint64_t off_ring(void) { return off_model_scratch() + gpuos_model_scratch(); }
/* The extent pool, last: its size is the boot's (desc->map_extents). */
GPUOS_INLINE GPUOS_HD uint32_t map_extents(const struct gpuos_rt_desc *d)
{
	return d->map_extents ? d->map_extents : GPUOS_RT_MAP_EXTENTS;
}

GPUOS_INLINE GPUOS_HD struct rt_files *files_of(const struct gpuos_rt_desc *d)
{
	return (struct rt_files *)(uintptr_t)d->files;
}
GPUOS_INLINE GPUOS_HD uint8_t *cache_page(const struct gpuos_rt_desc *d, uint32_t i)
{
	return (uint8_t *)(uintptr_t)(d->files + off_cache()) + (uint64_t)i * GPUOS_RT_CACHE_PAGE;
}
GPUOS_INLINE GPUOS_HD uint32_t *meta_ring(const struct gpuos_rt_desc *d)
{
	return (uint32_t *)(uintptr_t)(d->files + off_ring());
}
/* Its length: every slot of every mailbox. A client may post a slot again
 * while it is in flight, so that alone does not bound what is in the ring:
 * each client's forwarded requests are counted (fwd_held), and a forward
 * that finds no room is refused (gpuos_rt_files_forward), never written
 * over an entry not yet served. */
GPUOS_INLINE GPUOS_HD uint32_t meta_ring_len(const struct gpuos_rt_desc *d)
{
	return d->mbox_nslots + d->nclients * d->cmbox_nslots;
}
/* Beside the ring: the request of each entry, as the service warp checked
 * it (struct gpuos_rt_fwd, at the entry's index). */
GPUOS_INLINE GPUOS_HD uint64_t off_fwd(const struct gpuos_rt_desc *d)
{
	return off_ring() + gpuos_align_line((uint64_t)meta_ring_len(d) * sizeof(uint32_t));
}
GPUOS_INLINE GPUOS_HD struct gpuos_rt_fwd *meta_fwd(const struct gpuos_rt_desc *d)
{
	return (struct gpuos_rt_fwd *)(uintptr_t)(d->files + off_fwd(d));
}
GPUOS_INLINE GPUOS_HD uint64_t off_pool(const struct gpuos_rt_desc *d)
{
	return off_fwd(d) + gpuos_align_line((uint64_t)meta_ring_len(d) * sizeof(struct gpuos_rt_fwd));
}
/* Extent k of the pool: handle hd's map is [hd->ext_first, + hd->next). */
GPUOS_INLINE GPUOS_HD struct gpuos_fs_extent *pool_ext(const struct gpuos_rt_desc *d, uint32_t k)
{
	return (struct gpuos_fs_extent *)(uintptr_t)(d->files + off_pool(d)) + k;
}

/* An entry: ms (24 bits) and the lap of its position (8 bits). The entry
 * at a position's index is either this lap's or the one before, so 8 bits
 * tell them apart. */
#define META_MS_MASK 0xffffffu
GPUOS_INLINE GPUOS_HD uint32_t meta_entry(uint32_t pos, uint32_t n, uint32_t ms)
{
	return ((((pos / n) + 1u) & 0xffu) << 24) | ms;
}

/* The files region is device memory used by GPU threads only (or by host
 * threads in host mode): device scope orders it. */

/* ---- small helpers (one lane) --------------------------------------------------- */

/* files_fs.c's names for util.h's gpuos_buf_copy and gpuos_buf_zero, until
 * it calls those itself. */
#define fcopy gpuos_buf_copy
#define fzero gpuos_buf_zero

/* Text of a reason, built without printf (runs on a GPU lane). */
struct sbuf {
	char *p;
	uint32_t n, cap;
};
GPUOS_INLINE GPUOS_HD void sb_str(struct sbuf *b, const char *s)
{
	while (s && *s && b->n + 1u < b->cap)
		b->p[b->n++] = *s++;
	b->p[b->n] = 0;
}
GPUOS_INLINE GPUOS_HD void sb_num(struct sbuf *b, uint64_t v)
{
	char t[24];
	int k = 0;
	do {
		t[k++] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v && k < 23);
	while (k > 0 && b->n + 1u < b->cap)
		b->p[b->n++] = t[--k];
	b->p[b->n] = 0;
}

GPUOS_INLINE GPUOS_HD uint32_t status_of(int err)
{
	switch (err) {
	case -ENOENT: return GPUOS_ST_NOENT;
	case -EACCES: return GPUOS_ST_DENIED;
	case -ENOTDIR: return GPUOS_ST_NOTDIR;
	case -ELOOP: return GPUOS_ST_LOOP;
	case -EISDIR: return GPUOS_ST_ISDIR;
	case -ENAMETOOLONG: return GPUOS_ST_NAMETOOLONG;
	case -EOPNOTSUPP: return GPUOS_ST_UNSUPPORTED;
	case -EPROTONOSUPPORT: return GPUOS_ST_UNSUPPORTED;
	case -ENOSPC: return GPUOS_ST_NOSPC;
	case -EIO: return GPUOS_ST_IO;
	case -ETIMEDOUT: return GPUOS_ST_IO;
	case -ERANGE: return GPUOS_ST_BAD_RANGE;
	case -EOVERFLOW: return GPUOS_ST_OVERFLOW;
	default: return GPUOS_ST_CORRUPT;
	}
}

/* ---- requests ------------------------------------------------------------------------- */

struct mreq {                   /* the request being served: the service warp's checked copy */
	struct gpuos_mbox_slot *s;  /* where its answer goes (never read) */
	uint32_t ms, op, flags, handle;
	uint64_t offset, length, dst, arg;
	uint64_t batch;             /* checked at intake (0: none) */
};

GPUOS_INLINE GPUOS_HD uint32_t handle_number(const struct rt_handle *hd, uint32_t slot)
{
	return (hd->gen << 8) | (slot + 1u);
}

/* [p, p + len) is memory request q may name: registered, and in its
 * client's share when a client of a service posted it (rt.h). */
GPUOS_INLINE GPUOS_HD int files_req_mem(const struct rt_files *F, const struct mreq *q, uint64_t p, uint64_t len)
{
	return gpuos_rt_registered(F->d, p, len) && gpuos_rt_client_mem(F->d, gpuos_rt_ms_client(q->ms), p, len);
}

/* ---- calls between the sources ----------------------------------------------------- */

/* files_io.c */
GPUOS_HD int files_rec_follow(struct rt_files *F, uint32_t w);
GPUOS_HD int files_dev_bytes(struct rt_files *F, uint64_t off, uint64_t len, void *dst);
GPUOS_HD int files_io_dev_read(void *ctx, uint64_t off, uint32_t len, void *dst);
GPUOS_HD int files_io_file_read(void *ctx, uint64_t off, uint32_t len, void *dst);

/* files_loop.c */
GPUOS_HD void files_reply(struct rt_files *F, const struct mreq *q, uint32_t st, uint64_t result,
			  uint64_t result2, const char *why);
GPUOS_HD void files_reply_err(struct rt_files *F, const struct mreq *q, int err, const char *what,
			      const char *why);
GPUOS_HD uint32_t files_take_string(struct rt_files *F, const struct mreq *q, uint32_t max);
GPUOS_HD void *files_struct_dst(struct rt_files *F, const struct mreq *q, uint64_t min, const char *what);

/* files_fs.c */
GPUOS_HD int files_lookup_req(struct rt_files *F, const struct mreq *q);
/* The steps of files_lookup_req: take the request's path into F->path and
 * mount (1, or 0 after replying); look F->path up as q's client into
 * F->ino (0 or a negative errno, no reply; GPUOS_FS_LOOKUP_* flags); the
 * reason a lookup error carries, or NULL. */
GPUOS_HD int files_take_path(struct rt_files *F, const struct mreq *q);
GPUOS_HD int files_lookup_path(struct rt_files *F, const struct mreq *q, uint32_t flags);
GPUOS_HD const char *files_lookup_why(const struct rt_files *F, int r);
/* files_lookup_req, then read permission on the inode (OPEN, GGUF_OPEN). */
GPUOS_HD int files_lookup_read(struct rt_files *F, const struct mreq *q);
/* The credentials the file system's mode bits are checked against for request q: its
 * client's (a client mailbox of a service run without --no-perms), or NULL:
 * no checks (the service's own mailbox, a local runtime). */
GPUOS_HD const struct gpuos_rt_client *files_cred(const struct rt_files *F, const struct mreq *q);
/* Request q's client may read raw device bytes: the runtime allows them
 * (GPUOS_RT_ALLOW_RAW) and, for a client of a service, its own right says
 * so (GPUOS_RT_CLIENT_RAW), as the service warps check READ_RAW. */
GPUOS_HD int files_may_raw(const struct rt_files *F, const struct mreq *q);
GPUOS_HD int files_alloc_handle(struct rt_files *F, const struct mreq *q);
GPUOS_HD int files_open_inode(struct rt_files *F, const struct mreq *q, const char *why_no_map);
GPUOS_HD struct rt_handle *files_req_handle(struct rt_files *F, const struct mreq *q, uint32_t mask);
GPUOS_HD void files_free_handle(struct rt_files *F, uint32_t i);
GPUOS_HD void files_op_open(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_stat(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_readdir(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_read_meta(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_close(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_parts(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_release(struct rt_files *F, const struct mreq *q);

/* files_model.c: models, whatever their format. The helpers are shared
 * with the formats' openers (runtime/model/): the tables of model m; bytes
 * [off, off + len) of handle slot i into dst (0 or -EIO); "shard K of N
 * (NAME): " into sb; a refusal with that prefix; open F->path as a model's
 * file (k of n, n 0 for a file alone), -1 after replying; close m's files
 * opened so far; make slot i m's handle and answer OK. */
GPUOS_HD void files_model_mem(const struct gpuos_rt_desc *d, uint32_t m, struct gpuos_gguf_mem *mem);
GPUOS_HD int files_model_read(struct rt_files *F, uint32_t i, uint64_t off, uint32_t len, void *dst);
GPUOS_HD void files_shard_prefix(const struct rt_files *F, struct sbuf *sb, uint64_t k, uint64_t n);
GPUOS_HD void files_shard_refuse(struct rt_files *F, const struct mreq *q, uint32_t st, uint64_t k, uint64_t n,
				 const char *what, const char *detail);
GPUOS_HD int files_open_model_file(struct rt_files *F, const struct mreq *q, uint64_t k, uint64_t n);
GPUOS_HD void files_model_close(struct rt_files *F, uint32_t m, uint32_t first);
GPUOS_HD void files_model_opened(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i);
GPUOS_HD void files_op_model_open(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_model_info(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_model_find(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_model_tensor(struct rt_files *F, const struct mreq *q);
GPUOS_HD void files_op_model_layer(struct rt_files *F, const struct mreq *q);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_FILES_INTERNAL_H */
