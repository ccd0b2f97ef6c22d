/* SPDX-License-Identifier: MIT */
/*
 * runtime/files.h - files and models inside the runtime (docs/design.md,
 * "Files and models"): the metadata warp, open handles with their extent
 * maps, a block cache, parsed model tables, all in one zeroed region of
 * device memory (d->files).
 *
 * Who does what:
 * - The metadata warp (one lane of it) runs the parsers (GPT, the file
 *   system behind runtime/fs/fs.h, the model formats behind
 *   runtime/model/model.h).
 *   They block on reads, so it owns a queue pair of its own (d->queue[nqueues])
 *   and reads synchronously through a small block cache; the service warps
 *   never wait for it.
 * - Service warps take every request from the mailbox. OPEN, STAT, READDIR,
 *   CLOSE and the GGUF lookups go to the metadata warp through a ring
 *   (files_forward); READ and GGUF_LOAD they serve themselves: the handle's
 *   extent map turns file offsets into device offsets (gpuos_rt_files_map,
 *   runtime/engine/handles.c).
 *
 * Ordering: the metadata warp writes a handle, then publishes the OPEN reply
 * with the DONE release; the client's later request reaches a service warp
 * through the mailbox ring (client release, warp acquire), so the handle's
 * fields are visible to that warp by causality.
 */
#ifndef GPUOS_RUNTIME_FILES_H
#define GPUOS_RUNTIME_FILES_H

#include "gpuos/internal/rt.h"
#include "gpuos/gguf.h"
#include "fs/fs.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_RT_HANDLES        GPUOS_MAX_HANDLES
/* The open files' extent maps share one pool of desc->map_extents (this
 * many unless boot says otherwise: 6 MiB, --files-mib): a file may have any
 * number of extents the pool holds beside the other open maps. */
#define GPUOS_RT_MAP_EXTENTS    262144u
#define GPUOS_RT_MODELS         4u      /* parsed model tables at once */
#define GPUOS_RT_MODEL_TENSORS  16384u
#define GPUOS_RT_MODEL_KV       4096u
#define GPUOS_RT_MODEL_ARENA    (1u << 20)
#define GPUOS_RT_MODEL_INDEX    32768u  /* power of two, >= 2 * tensors */
#define GPUOS_RT_MODEL_SHARDS   GPUOS_GGUF_MAX_SHARDS  /* gguf-split shards, or the files an index names */
#define GPUOS_RT_ST_HEADER      (8u << 20) /* the longest safetensors header read (the format allows 100 MB) */
#define GPUOS_RT_ST_INDEX       (4u << 20) /* the longest model.safetensors.index.json read */
#define GPUOS_RT_CACHE_SETS     64u     /* block cache: sets x ways pages of 4 KiB */
#define GPUOS_RT_CACHE_WAYS     4u
#define GPUOS_RT_CACHE_PAGE     4096u

/* How a handle's bytes are found. */
/* H_SHARD: a gguf-split shard after the first of an open model (the model's
 * handle is the first's), for that model's loads only: never named by a
 * client, closed with the model. */
enum { H_FREE = 0, H_FILE = 1, H_DIR = 2, H_MODEL = 3, H_SHARD = 4 };
enum {
	H_MAP_EXTENTS = 0, /* ext[]: file blocks -> file system blocks at `base` */
	H_MAP_RAW = 1,     /* device bytes [base, base + size) (a GGUF written raw) */
	H_MAP_META = 2     /* inline data, symlinks, devices: READ goes to the metadata warp */
};

struct rt_handle {
	uint32_t gen;          /* bumped at every open: a closed handle's number stays invalid */
	uint32_t kind;         /* H_* */
	uint32_t map;          /* H_MAP_* */
	uint32_t next;         /* extents in its map: pool[ext_first, ext_first + next) */
	uint64_t size;         /* bytes */
	uint64_t base;         /* device byte offset: of file system block 0, or of a raw GGUF */
	uint32_t block_bits;   /* log2 of the file system block size */
	int32_t model;         /* models[] index, or -1 */
	uint32_t share;        /* the client share that opened it (1-based), 0: none (abi.h) */
	uint32_t ext_first;    /* where its map starts in the pool (files_internal.h, pool_ext) */
	struct gpuos_fs_inode inode; /* kept for STAT, READDIR and META reads */
};

/* gpuos_rt_files_bytes and gpuos_rt_meta_run, what boot calls, are in
 * include/gpuos/internal/rt.h. */

/* A request the service warps hand to the metadata warp: the fields of its
 * slot as the service warp read them once and checked them (the batch
 * counter's place above all). The metadata warp serves this copy and never
 * reads the client's slot again: a client that rewrites its slot meanwhile
 * changes nothing (docs/security.md, "Client memory is read once"). */
struct gpuos_rt_fwd {
	uint16_t opcode;       /* 0x00 */
	uint16_t flags;        /* 0x02 */
	uint32_t handle;       /* 0x04 */
	uint64_t offset;       /* 0x08 */
	uint64_t length;       /* 0x10 */
	uint64_t dst;          /* 0x18 */
	uint64_t arg;          /* 0x20 */
	uint64_t batch;        /* 0x28 checked at intake: 0, or a counter the runtime may add to */
	uint32_t ms;           /* 0x30 the slot (gpuos_rt_ms_client) */
	uint32_t rsvd34[3];    /* 0x34 */
};
static_assert(sizeof(struct gpuos_rt_fwd) == 64, "a forwarded request: one line");

/* Forwarded requests one client (not the service's own mailbox) may have
 * with the metadata warp at once: its intake quota (rt.h). A service warp
 * takes no more from a client that holds them (gpuos_rt_files_room), and
 * gpuos_rt_files_forward refuses past twice as many (warps that took at the
 * same moment). */
#define GPUOS_RT_FWD_QUOTA GPUOS_RT_CLIENT_QUOTA

/* Service warp, lane 0: hand the request in mailbox slot f->ms (already
 * TAKEN and checked) to the metadata warp, with its copy. Returns
 * GPUOS_ST_OK, or GPUOS_ST_FULL when it is refused: its client holds too
 * many forwarded requests, or the ring has no room (it never overwrites an
 * entry); the caller answers the request with that status. */
GPUOS_HD uint32_t gpuos_rt_files_forward(const struct gpuos_rt_desc *d, const struct gpuos_rt_fwd *f);

/* Service warp, lane 0, at intake: how many more requests client m (1..)
 * may have forwarded to the metadata warp now (0: take nothing more from it
 * until some are answered). A hint: read without a lock. */
GPUOS_HD uint32_t gpuos_rt_files_room(const struct gpuos_rt_desc *d, uint32_t m);

/* Service warp, when it leaves its loop (the metadata warp waits for all). */
GPUOS_HD void gpuos_rt_files_warp_exit(const struct gpuos_rt_desc *d);

/* The open handle `h` of one of the kinds in kind_mask (1 << H_*), or NULL. */
GPUOS_HD const struct rt_handle *gpuos_rt_handle(const struct gpuos_rt_desc *d, uint32_t h,
						 uint32_t kind_mask);

/* Client m (gpuos_rt_ms_client) may use handle hd: a client only its own
 * (handle numbers can be guessed); the service's own mailbox any. */
GPUOS_INLINE GPUOS_HD int gpuos_rt_handle_owned(const struct rt_handle *hd, uint32_t m)
{
	return m == 0 || hd->share == m;
}

/* Slot index (1-based) of handle number h, for request tables; 0 if none. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_rt_handle_index(uint32_t h)
{
	return h & 0xffu;
}
GPUOS_HD const struct rt_handle *gpuos_rt_handle_at(const struct gpuos_rt_desc *d, uint32_t index);

/*
 * Where byte `off` (< size) of handle hd lies: *dev (device byte offset) and
 * *run, the bytes from off that continue there contiguously (or are all
 * zeros), and *zero, 1 when they read as zeros (hole, unwritten extent).
 * *hint carries the extent index between calls of one request. Returns 0,
 * or -EINVAL when the map is corrupt (the service warp fails the request).
 */
GPUOS_HD int gpuos_rt_files_map(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				uint64_t off, uint64_t *dev, uint64_t *run, int *zero, uint32_t *hint);

/* Tensor `idx` of model handle hd: its byte range [*off, + *size) in the
 * file of handle number *file (hd's own, or one of its shards'). */
GPUOS_HD int gpuos_rt_files_tensor(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				   uint64_t idx, uint64_t *off, uint64_t *size, uint32_t *file);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_FILES_H */
