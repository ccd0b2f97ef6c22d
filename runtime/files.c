/* SPDX-License-Identifier: MIT */
/*
 * Files and models in the runtime (runtime/files.h): the metadata warp, its
 * synchronous reads through its own queue pair and block cache, handles,
 * extent maps, and the file and GGUF operations of gpuos/abi.h.
 */
#include <errno.h>

#include "files.h"
#include "recover.h"
#include "gguf.h"
#include "gpt.h"
#include "gpuos/queue.h"

#define FILES_MAGIC 0x73656c66u /* "fles" */
#define GPT_PARTS   128u
#define READDIR_MAX 4096u       /* entries per READDIR call: bounded work per request */
#define WHY_MAX     256u

struct rt_io {                  /* ctx of a gpuos_meta_io */
	struct rt_files *F;
	uint64_t base;              /* device byte offset of byte 0 (partition, raw GGUF) */
	uint32_t handle;            /* file io: handle slot (0-based); dev io: unused */
	uint32_t hint;
};

struct rt_files {
	uint32_t magic;
	uint32_t mounted;           /* 0: not yet, 1: mounted, 2: failed (mount_status, mount_why) */
	uint32_t mount_status;
	uint32_t launches;          /* metadata warp launches (park/resume) */
	uint32_t consumed;          /* ring positions taken by the metadata warp */
	uint32_t cid;               /* last command id used on the metadata queue */
	uint16_t last_nvme;         /* NVMe status of the last failed metadata read */
	uint16_t rsvd1;
	uint32_t gen;               /* handle generations */
	/* The reset protocol (runtime/recover.h): the metadata warp takes part */
	uint32_t rec_epoch;         /* the last reset epoch it dropped for */
	uint32_t inflight;          /* 1 + the controller of its command in flight, 0: none */
	uint32_t dropped;           /* a reset ended that command */
	uint32_t broken;            /* a command could be neither ended nor reset: no more reads */
	uint32_t rec_gen[GPUOS_RT_MAX_CTRL];
	uint64_t part_off;          /* byte offset of the mounted file system */
	uint64_t part_lba;          /* the same in device LBAs (0: no partition table) */
	const struct gpuos_rt_desc *d;
	char mount_why[160];
	uint32_t victim[GPUOS_RT_CACHE_SETS];
	/* --- written by service warps: a line each --- */
	uint32_t posted __attribute__((aligned(64)));  /* ring positions handed out (atomic) */
	uint32_t exits __attribute__((aligned(64)));   /* service warp exits, all launches (atomic) */
	struct gpuos_qp qp[GPUOS_RT_MAX_CTRL] __attribute__((aligned(64))); /* one per controller */
	struct rt_io io_dev, io_part, io_file;
	struct gpuos_meta_io mio_dev, mio_part, mio_file;
	struct rt_handle h[GPUOS_RT_HANDLES];
	uint64_t tag[GPUOS_RT_CACHE_SETS * GPUOS_RT_CACHE_WAYS]; /* device page + 1, 0: empty */
	int32_t model_owner[GPUOS_RT_MODELS];                    /* handle slot + 1, 0: free */
	struct gpuos_gguf model[GPUOS_RT_MODELS];
	struct gpuos_gguf_parser gp;
	struct gpuos_gpt gpt;
	struct gpuos_gpt_parser gptp;
	struct gpuos_gpt_part parts[GPT_PARTS];
	struct gpuos_ext4_inode ino;
	struct gpuos_ext4_dirent de;
	char path[GPUOS_PATH_MAX];
	char why[WHY_MAX];
	struct gpuos_ext4 fs;
};

/* ---- layout of the region ------------------------------------------------------ */

GPUOS_INLINE GPUOS_HD uint64_t al64(uint64_t v) { return (v + 63u) & ~63ull; }

GPUOS_INLINE GPUOS_HD uint64_t off_cache(void) { return al64(sizeof(struct rt_files)); }
GPUOS_INLINE GPUOS_HD uint64_t off_ext(void)
{
	return off_cache() + (uint64_t)GPUOS_RT_CACHE_SETS * GPUOS_RT_CACHE_WAYS * GPUOS_RT_CACHE_PAGE;
}
GPUOS_INLINE GPUOS_HD uint64_t model_bytes(void)
{
	return al64((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_gguf_tensor)) +
	       al64((uint64_t)GPUOS_RT_MODEL_KV * sizeof(struct gpuos_gguf_kv)) + al64(GPUOS_RT_MODEL_ARENA) +
	       al64((uint64_t)GPUOS_RT_MODEL_INDEX * sizeof(uint32_t));
}
GPUOS_INLINE GPUOS_HD uint64_t off_models(void)
{
	return off_ext() + al64((uint64_t)GPUOS_RT_HANDLES * GPUOS_RT_HANDLE_EXTENTS * sizeof(struct gpuos_ext4_extent));
}
GPUOS_INLINE GPUOS_HD uint64_t off_ring(void) { return off_models() + GPUOS_RT_MODELS * model_bytes(); }

GPUOS_HD uint64_t gpuos_rt_files_bytes(const struct gpuos_rt_desc *d)
{
	if (!d->meta)
		return 0;
	return off_ring() + al64((uint64_t)d->mbox_nslots * sizeof(uint32_t));
}

GPUOS_INLINE GPUOS_HD struct rt_files *files_of(const struct gpuos_rt_desc *d)
{
	return (struct rt_files *)(uintptr_t)d->files;
}
GPUOS_INLINE GPUOS_HD uint8_t *cache_page(const struct gpuos_rt_desc *d, uint32_t i)
{
	return (uint8_t *)(uintptr_t)(d->files + off_cache()) + (uint64_t)i * GPUOS_RT_CACHE_PAGE;
}
GPUOS_INLINE GPUOS_HD struct gpuos_ext4_extent *handle_ext(const struct gpuos_rt_desc *d, uint32_t slot)
{
	return (struct gpuos_ext4_extent *)(uintptr_t)(d->files + off_ext()) + (uint64_t)slot * GPUOS_RT_HANDLE_EXTENTS;
}
GPUOS_INLINE GPUOS_HD uint32_t *meta_ring(const struct gpuos_rt_desc *d)
{
	return (uint32_t *)(uintptr_t)(d->files + off_ring());
}

/* The files region is device memory used by GPU threads only (or by host
 * threads in host mode): device scope orders it. */

/* ---- the service warps' side ------------------------------------------------------ */

GPUOS_NOINLINE GPUOS_HD void gpuos_rt_files_forward(const struct gpuos_rt_desc *d, uint32_t ms)
{
	struct rt_files *F = files_of(d);
	uint32_t n = d->mbox_nslots;
	uint32_t pos = gpuos_fetch_add_relaxed_dev32(&F->posted, 1u); /* a position */
	/* Publish the TAKEN slot with the entry; pairs with the metadata warp's
	 * acquire load of it. The ring cannot overrun: each mailbox slot is in it
	 * at most once until its DONE, and there are n of them. */
	gpuos_store_release_dev32(&meta_ring(d)[pos % n], gpuos_mbox_ring_entry(pos, n, ms));
}

GPUOS_HD void gpuos_rt_files_warp_exit(const struct gpuos_rt_desc *d)
{
	/* Release: after this warp's last forward and its state's copy back;
	 * pairs with the metadata warp's acquire load of exits before it
	 * decides that nothing more can come. */
	gpuos_fetch_add_release_dev32(&files_of(d)->exits, 1u);
}

GPUOS_HD const struct rt_handle *gpuos_rt_handle_at(const struct gpuos_rt_desc *d, uint32_t index)
{
	if (!d->meta || index == 0 || index > GPUOS_RT_HANDLES)
		return 0;
	return &files_of(d)->h[index - 1u];
}

GPUOS_NOINLINE GPUOS_HD const struct rt_handle *gpuos_rt_handle(const struct gpuos_rt_desc *d, uint32_t h, uint32_t kind_mask)
{
	const struct rt_handle *hd = gpuos_rt_handle_at(d, gpuos_rt_handle_index(h));
	if (!hd || hd->kind == H_FREE || hd->gen != (h >> 8) || !((1u << hd->kind) & kind_mask))
		return 0;
	return hd;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_rt_files_map(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				uint64_t off, uint64_t *dev, uint64_t *run, int *zero, uint32_t *hint)
{
	const struct gpuos_ext4_extent *ext;
	uint32_t bb = hd->block_bits, n = hd->next, i = *hint, lo, hi;
	uint64_t lb = off >> bb, left = hd->size - off;

	if (off >= hd->size)
		return -EINVAL;
	if (hd->map == H_MAP_RAW) {
		*dev = hd->base + off;
		*run = left;
		*zero = 0;
		return 0;
	}
	ext = handle_ext(d, (uint32_t)(hd - files_of(d)->h));
	if (!(i < n && ext[i].lblk <= lb && lb - ext[i].lblk < ext[i].len)) {
		/* The last extent starting at or before lb (extents are sorted: checked at open). */
		lo = 0;
		hi = n;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2u;
			if (ext[mid].lblk <= lb)
				lo = mid + 1u;
			else
				hi = mid;
		}
		i = lo; /* first extent after lb; lo - 1 may cover it */
		if (lo > 0 && lb - ext[lo - 1u].lblk < ext[lo - 1u].len)
			i = lo - 1u;
	}
	*hint = i;
	if (i < n && ext[i].lblk <= lb) {
		uint64_t start = ext[i].lblk << bb, end = (ext[i].lblk + ext[i].len) << bb;
		*dev = hd->base + (ext[i].pblk << bb) + (off - start);
		*run = GPUOS_MIN(end - off, left);
		*zero = (ext[i].flags & GPUOS_EXT4_BMAP_UNWRITTEN) != 0;
		return 0;
	}
	/* A hole up to the next extent (or the end of the file). */
	*dev = 0;
	*run = i < n ? GPUOS_MIN((ext[i].lblk << bb) - off, left) : left;
	*zero = 1;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_rt_files_tensor(const struct gpuos_rt_desc *d, const struct rt_handle *hd,
				   uint64_t idx, uint64_t *off, uint64_t *size)
{
	const struct gpuos_gguf *g;
	if (hd->model < 0 || (uint32_t)hd->model >= GPUOS_RT_MODELS)
		return -EINVAL;
	g = &files_of(d)->model[hd->model];
	if (idx >= g->n_tensors)
		return -ENOENT;
	*off = g->mem.tensors[idx].abs_off;
	*size = g->mem.tensors[idx].size;
	return 0;
}

/* ---- small helpers (one lane) --------------------------------------------------- */

GPUOS_INLINE GPUOS_HD void fcopy(void *dst, const void *src, uint64_t n)
{
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	uint64_t i = 0;
	if ((((uintptr_t)d | (uintptr_t)s) & 7u) == 0)
		for (; i + 8u <= n; i += 8u)
			*(uint64_t *)(d + i) = *(const uint64_t *)(s + i);
	for (; i < n; i++)
		d[i] = s[i];
}

GPUOS_INLINE GPUOS_HD void fzero(void *dst, uint64_t n)
{
	uint8_t *d = (uint8_t *)dst;
	uint64_t i = 0;
	if (((uintptr_t)d & 7u) == 0)
		for (; i + 8u <= n; i += 8u)
			*(uint64_t *)(d + i) = 0;
	for (; i < n; i++)
		d[i] = 0;
}

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


/* Bytes from p to the end of its registered region, 0 if p is in none. */
GPUOS_INLINE GPUOS_HD uint64_t region_left(const struct gpuos_rt_desc *d, uint64_t p)
{
	uint32_t i;
	for (i = 0; i < d->nregions; i++) {
		const struct gpuos_rt_region *r = &d->region[i];
		if (p >= r->base && p - r->base < r->len)
			return r->len - (p - r->base);
	}
	return 0;
}

GPUOS_INLINE GPUOS_HD uint32_t status_of(int err)
{
	switch (err) {
	case -ENOENT: return GPUOS_ST_NOENT;
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

/* ---- reading the device: own queue pair, block cache ------------------------------ */

/* Follow the reset protocol from the word w (as the service warps do,
 * rt.c rec_follow). Returns 1 while a reset keeps us from the queues. */
GPUOS_NOINLINE GPUOS_HD static int meta_rec_follow(struct rt_files *F, uint32_t w)
{
	const struct gpuos_rt_desc *d = F->d;
	struct rt_recover *rs = gpuos_rt_recover(d);
	uint32_t ph = rt_rec_phase(w), m;
	if (ph == RT_PH_DROP && F->rec_epoch != gpuos_load_relaxed_dev32(&rs->epoch)) {
		if (F->inflight == gpuos_load_relaxed_dev32(&rs->ctrl) + 1u) {
			F->inflight = 0;
			F->dropped = 1; /* the controller writes nothing more: the bounce buffer is ours */
		}
		F->rec_epoch = gpuos_load_relaxed_dev32(&rs->epoch);
		gpuos_rt_rec_ack(rs);
	}
	if (ph != RT_PH_RUN)
		return 1;
	for (m = 0; m < d->nctrl; m++) {
		if (F->rec_gen[m] != gpuos_load_relaxed_dev32(&rs->gen[m])) {
			gpuos_rt_queue_start(&F->qp[m], d, &d->queue[d->nqueues + m]);
			F->rec_gen[m] = gpuos_load_relaxed_dev32(&rs->gen[m]);
		}
	}
	return 0;
}

/* Read up to npages 4 KiB pages from device page `page` into the metadata
 * bounce buffer: one command, on the queue of the controller that holds
 * them, waited for. It stops at the end of the namespace and of an array
 * chunk (the next bytes live on another controller; chunks are whole
 * pages). Returns bytes read or a negative errno. */
GPUOS_NOINLINE GPUOS_HD static int64_t dev_read(struct rt_files *F, uint64_t page, uint32_t npages)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift, off = page * GPUOS_RT_CACHE_PAGE;
	uint64_t bytes = (uint64_t)npages * GPUOS_RT_CACHE_PAGE, t0, lba, left;
	struct gpuos_nvme_sqe *e;
	struct gpuos_qp *qp;
	uint32_t m;
	uint16_t cid;

	if (off >= ns_bytes)
		return -ERANGE;
	if (bytes > ns_bytes - off)
		bytes = ns_bytes - off; /* a multiple of the LBA size: both ends are */
	left = gpuos_rt_stripe_map(d, off >> d->lba_shift, &m, &lba);
	if (left < bytes >> d->lba_shift)
		bytes = left << d->lba_shift;
	qp = &F->qp[m];
	if (F->broken)
		return -EIO;
	{
		/* Not into a controller being reset: its queues start afresh. */
		uint32_t spins = 0;
		while (meta_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d))))
			gpuos_backoff(&spins);
	}
	while (gpuos_qp_sq_space(qp) == 0) {
		/* Completions of commands given up on earlier still own entries. */
		struct gpuos_nvme_cqe c;
		if (!gpuos_qp_cq_peek(qp, 0, &c))
			return -EIO;
		gpuos_qp_cq_consume(qp, 1, c.sqhd);
	}
	cid = (uint16_t)++F->cid;
	e = gpuos_qp_sq_entry(qp, 0);
	e->opc = GPUOS_NVME_CMD_READ;
	e->fuse_psdt = 0;
	e->cid = cid;
	e->nsid = d->nsid;
	e->cdw2 = 0;
	e->cdw3 = 0;
	e->mptr = 0;
	e->prp1 = d->meta_bounce_iova;
	e->prp2 = bytes > 2u * GPUOS_NVME_PAGE_SIZE ? d->meta_prp_iova
		  : bytes > GPUOS_NVME_PAGE_SIZE  ? d->meta_bounce_iova + GPUOS_NVME_PAGE_SIZE
						  : 0;
	e->cdw10 = (uint32_t)lba;
	e->cdw11 = (uint32_t)(lba >> 32);
	e->cdw12 = (uint32_t)(bytes >> d->lba_shift) - 1u;
	e->cdw13 = 0;
	e->cdw14 = 0;
	e->cdw15 = 0;
	/* One fence and the doorbell (gpuos_qp_sq_ring); pairs with the
	 * controller's SQE fetch. */
	gpuos_qp_sq_ring(qp, 1);
	F->inflight = m + 1u;
	F->dropped = 0;
	t0 = gpuos_now_ns();
	/* outside the loop: the backoff grows while the command is out (it
	 * was reset every poll, so it never escalated; issue 13) */
	uint32_t spins = 0, aborted = 0;
	for (;;) {
		struct gpuos_nvme_cqe c;
		struct rt_recover *rs = gpuos_rt_recover(d);
		/* A reset first: in its DROP phase the CQ is not ours to read. */
		if (meta_rec_follow(F, gpuos_rt_rec_word(rs)) || F->dropped) {
			if (F->dropped) {
				F->last_nvme = 0;
				return -EIO; /* the controller was reset under it */
			}
			gpuos_backoff(&spins);
			continue;
		}
		/* The CQE acquire (in peek) orders our reads of the bounce buffer
		 * after the controller's data writes. */
		if (gpuos_qp_cq_peek(qp, 0, &c)) {
			gpuos_qp_cq_consume(qp, 1, c.sqhd);
			if (c.cid != cid)
				continue; /* not ours: nothing else is ever in flight here */
			F->inflight = 0;
			if (aborted) {
				F->last_nvme = 0;
				return -ETIMEDOUT; /* it ended after its timeout (done or aborted) */
			}
			if (gpuos_nvme_status_of(c.status)) {
				F->last_nvme = gpuos_nvme_status_of(c.status);
				return -EIO;
			}
			return (int64_t)bytes;
		}
		if (gpuos_now_ns() - t0 > d->timeout_ns) {
			/* Never given up on while the controller may still write the
			 * bounce buffer (DESIGN.md 11): abort it, then reset. */
			if (!aborted) {
				int a = gpuos_rt_abort(d, rs, m, (uint16_t)qp->qid, cid);
				if (a) {
					aborted = 1;
					t0 = gpuos_now_ns();
				}
			} else if (!gpuos_rt_can_reset(d, m)) {
				F->last_nvme = 0;
				F->broken = 1; /* the bounce buffer may still be written: no more reads */
				return -ETIMEDOUT;
			} else if (gpuos_rt_reset_begin(d, rs, m)) {
				meta_rec_follow(F, gpuos_rt_rec_word(rs)); /* our drop and ack */
				gpuos_rt_reset_finish(d, rs);
				meta_rec_follow(F, gpuos_rt_rec_word(rs));
				F->last_nvme = 0;
				return -ETIMEDOUT;
			}
		}
		gpuos_backoff(&spins);
	}
}

/* The cached 4 KiB page `page` of the device, or NULL (F->last_nvme says why). */
GPUOS_NOINLINE GPUOS_HD static const uint8_t *cache_get(struct rt_files *F, uint64_t page, int *err)
{
	const struct gpuos_rt_desc *d = F->d;
	uint32_t set = (uint32_t)(page % GPUOS_RT_CACHE_SETS), w, i, n;
	uint64_t ns_pages = GPUOS_DIV_ROUND_UP(d->ns_lbas << d->lba_shift, (uint64_t)GPUOS_RT_CACHE_PAGE);
	int64_t got;

	for (w = 0; w < GPUOS_RT_CACHE_WAYS; w++)
		if (F->tag[set * GPUOS_RT_CACHE_WAYS + w] == page + 1u)
			return cache_page(d, set * GPUOS_RT_CACHE_WAYS + w);
	/* Miss: read ahead (metadata and headers are read forward). */
	n = GPUOS_MIN(16u, d->xfer_bytes / GPUOS_RT_CACHE_PAGE);
	if (page >= ns_pages) {
		*err = -ERANGE;
		return 0;
	}
	if (n > ns_pages - page)
		n = (uint32_t)(ns_pages - page);
	got = dev_read(F, page, n);
	if (got < 0) {
		*err = (int)got;
		return 0;
	}
	for (i = 0; i < n && (uint64_t)i * GPUOS_RT_CACHE_PAGE < (uint64_t)got; i++) {
		uint64_t p = page + i;
		uint32_t s = (uint32_t)(p % GPUOS_RT_CACHE_SETS), k, hit = 0;
		const uint8_t *src = (const uint8_t *)(uintptr_t)d->meta_bounce + (uint64_t)i * GPUOS_RT_CACHE_PAGE;
		uint64_t have = (uint64_t)got - (uint64_t)i * GPUOS_RT_CACHE_PAGE;
		uint8_t *dst;
		for (k = 0; k < GPUOS_RT_CACHE_WAYS; k++)
			hit |= F->tag[s * GPUOS_RT_CACHE_WAYS + k] == p + 1u;
		if (hit)
			continue;
		k = s * GPUOS_RT_CACHE_WAYS + F->victim[s]++ % GPUOS_RT_CACHE_WAYS;
		dst = cache_page(d, k);
		if (have >= GPUOS_RT_CACHE_PAGE) {
			fcopy(dst, src, GPUOS_RT_CACHE_PAGE);
		} else {
			fcopy(dst, src, have); /* the namespace ends inside this page */
			fzero(dst + have, GPUOS_RT_CACHE_PAGE - have);
		}
		F->tag[k] = p + 1u;
	}
	for (w = 0; w < GPUOS_RT_CACHE_WAYS; w++)
		if (F->tag[set * GPUOS_RT_CACHE_WAYS + w] == page + 1u)
			return cache_page(d, set * GPUOS_RT_CACHE_WAYS + w);
	*err = -EIO;
	return 0;
}

/* Device bytes [off, off+len) into dst, through the cache. */
GPUOS_HD static int dev_bytes(struct rt_files *F, uint64_t off, uint64_t len, void *dst)
{
	uint8_t *out = (uint8_t *)dst;
	while (len) {
		uint64_t page = off / GPUOS_RT_CACHE_PAGE, in = off % GPUOS_RT_CACHE_PAGE;
		uint64_t k = GPUOS_MIN(len, GPUOS_RT_CACHE_PAGE - in);
		int err = -EIO;
		const uint8_t *p = cache_get(F, page, &err);
		if (!p)
			return err == -ERANGE ? -ERANGE : -EIO;
		fcopy(out, p + in, k);
		out += k;
		off += k;
		len -= k;
	}
	return 0;
}

/* gpuos_meta_io over device bytes from io->base (the whole device, a partition). */
GPUOS_HD static int io_dev_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct rt_io *io = (struct rt_io *)ctx;
	return dev_bytes(io->F, io->base + off, len, dst);
}

/* gpuos_meta_io over the bytes of an open handle (a GGUF inside ext4). */
GPUOS_HD static int io_file_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct rt_io *io = (struct rt_io *)ctx;
	struct rt_files *F = io->F;
	const struct rt_handle *hd = &F->h[io->handle];
	uint8_t *out = (uint8_t *)dst;

	while (len) {
		uint64_t dev, run;
		int zero, r = gpuos_rt_files_map(F->d, hd, off, &dev, &run, &zero, &io->hint);
		uint32_t k;
		if (r)
			return -EIO;
		k = (uint32_t)GPUOS_MIN((uint64_t)len, run);
		if (zero)
			fzero(out, k);
		else if ((r = dev_bytes(F, dev, k, out)))
			return r;
		out += k;
		off += k;
		len -= k;
	}
	return 0;
}

/* ---- mounting ------------------------------------------------------------------------ */

GPUOS_INLINE GPUOS_HD void mount_fail(struct rt_files *F, uint32_t st, const char *a, const char *b)
{
	struct sbuf sb;
	sb.p = F->mount_why;
	sb.n = 0;
	sb.cap = sizeof(F->mount_why);
	sb_str(&sb, a);
	if (b) {
		sb_str(&sb, ": ");
		sb_str(&sb, b);
	}
	F->mount_status = st;
	F->mounted = 2;
}

/* Find the file system (DESIGN.md 7: GPT, then ext4) and mount it. */
GPUOS_NOINLINE GPUOS_HD static void mount(struct rt_files *F)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	uint32_t i;
	int r;

	F->part_off = 0;
	F->part_lba = 0;
	F->gpt.parts = F->parts;
	F->gpt.part_cap = GPT_PARTS;
	r = gpuos_gpt_parse(&F->gpt, &F->gptp, &F->mio_dev, 1u << d->lba_shift);
	if (r == -EIO) {
		mount_fail(F, GPUOS_ST_IO, "cannot read the partition table", 0);
		F->mounted = 0; /* a device error may pass: try again next time */
		return;
	}
	if (r && r != -ENOSPC) {
		mount_fail(F, GPUOS_ST_CORRUPT, "corrupt GPT", F->gptp.why);
		return;
	}
	if (F->gpt.flags & (GPUOS_GPT_F_BACKUP_USED | GPUOS_GPT_F_BACKUP_BAD)) {
		struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
		/* The host reads it after a reply (ordered by the reply's fence). */
		gpuos_store_relaxed_sys32(&ctl->notices, (F->gpt.flags & GPUOS_GPT_F_BACKUP_USED)
							? GPUOS_NOTICE_GPT_BACKUP : GPUOS_NOTICE_GPT_BACKUP_BAD);
	}
	if (F->gpt.scheme == GPUOS_PT_NONE) {
		if (d->part) {
			mount_fail(F, GPUOS_ST_NOENT, "no partition table on the device", 0);
			return;
		}
	} else {
		int found = -1;
		for (i = 0; i < F->gpt.n_parts; i++) {
			const struct gpuos_gpt_part *p = &F->parts[i];
			uint16_t magic = 0;
			uint64_t start = p->first_lba << d->lba_shift;
			if (d->part) {
				if (p->index + 1u == d->part)
					found = (int)i;
				continue;
			}
			if (start < ns_bytes && ns_bytes - start > 1024u + 58u &&
			    dev_bytes(F, start + 1024u + 56u, 2, &magic) == 0 && magic == GPUOS_EXT4_MAGIC) {
				found = (int)i;
				break;
			}
		}
		if (found < 0) {
			mount_fail(F, GPUOS_ST_NOENT,
				   d->part ? "no such partition" : "no partition holds an ext2/3/4 file system", 0);
			return;
		}
		F->part_lba = F->parts[found].first_lba;
		F->part_off = F->part_lba << d->lba_shift;
		if (F->part_off >= ns_bytes) {
			mount_fail(F, GPUOS_ST_CORRUPT, "corrupt GPT", "partition starts past the end of the device");
			return;
		}
	}
	F->io_part.F = F;
	F->io_part.base = F->part_off;
	F->mio_part.read = io_dev_read;
	F->mio_part.ctx = &F->io_part;
	F->mio_part.size = ns_bytes - F->part_off;
	if (F->gpt.scheme != GPUOS_PT_NONE) {
		/* The partition's own end bounds the file system. */
		for (i = 0; i < F->gpt.n_parts; i++)
			if (F->parts[i].first_lba == F->part_lba && F->parts[i].last_lba >= F->part_lba) {
				uint64_t end = (F->parts[i].last_lba + 1u) << d->lba_shift;
				if (end <= ns_bytes)
					F->mio_part.size = end - F->part_off;
			}
	}
	r = gpuos_ext4_mount(&F->fs, &F->mio_part, 0);
	if (r == -EIO) {
		mount_fail(F, GPUOS_ST_IO, "cannot read the file system", F->fs.why);
		F->mounted = 0;
		return;
	}
	if (r) {
		mount_fail(F, status_of(r), r == -EOPNOTSUPP ? "unsupported file system" : "not a usable ext2/3/4 file system",
			   F->fs.why);
		return;
	}
	F->mounted = 1;
}

/* ---- requests ------------------------------------------------------------------------- */

struct mreq {                   /* the request being served, copied out of its slot */
	struct gpuos_mbox_slot *s;
	uint32_t ms, op, flags, handle;
	uint64_t offset, length, dst, arg;
};

/* Publish the reply of a metadata request; on failure write the reason into
 * dst when there is room. */
GPUOS_NOINLINE GPUOS_HD static void reply(struct rt_files *F, const struct mreq *q, uint32_t st, uint64_t result,
			   uint64_t result2, const char *why)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_mbox_slot *s = q->s;
	struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
	struct gpuos_rt_stats *o = &ctl->stats[d->nwarps];
	int dev = (d->flags & GPUOS_RT_MBOX_DEVICE) != 0;
	uint64_t batch = s->batch;

	if (st != GPUOS_ST_OK && q->dst && q->length && gpuos_rt_registered(d, q->dst, GPUOS_MIN(q->length, (uint64_t)WHY_MAX))) {
		struct sbuf sb;
		sb.p = F->why;
		sb.n = 0;
		sb.cap = (uint32_t)GPUOS_MIN(q->length, (uint64_t)WHY_MAX);
		sb_str(&sb, why ? why : gpuos_status_name(st));
		fcopy((void *)(uintptr_t)q->dst, F->why, sb.n + 1u);
	}
	s->status = st;
	s->nvme_status = st == GPUOS_ST_IO ? F->last_nvme : 0;
	s->result = result;
	s->result2 = result2;
	s->t_done_ns = gpuos_now_ns();
	/* Publish the reply fields, the data written to dst (host or device
	 * memory) and any handle changes before DONE; pairs with the client's
	 * acquire load of state. Not a hot path: always system scope. */
	gpuos_fence_sys();
	gpuos_mbox_store_release(dev, &s->state, GPUOS_SLOT_DONE);
	if (batch) /* checked by the service warp at intake */
		gpuos_mbox_fetch_add_release(dev, (uint32_t *)(uintptr_t)batch, 1u);
	/* The host reads these at any time; relaxed, like the service warps' counts. */
	gpuos_store_relaxed_sys64(&o->requests, gpuos_load_relaxed_sys64(&o->requests) + 1u);
	if (st != GPUOS_ST_OK)
		gpuos_store_relaxed_sys64(&o->errors, gpuos_load_relaxed_sys64(&o->errors) + 1u);
}

/* Reply with a parser failure: the status from err, the reason from why. */
GPUOS_NOINLINE GPUOS_HD static void reply_err(struct rt_files *F, const struct mreq *q, int err, const char *what,
			       const char *why)
{
	struct sbuf sb;
	char buf[WHY_MAX];
	uint32_t st = status_of(err);
	sb.p = buf;
	sb.n = 0;
	sb.cap = sizeof(buf);
	if (what) {
		sb_str(&sb, what);
		if (why)
			sb_str(&sb, ": ");
	}
	if (why)
		sb_str(&sb, why);
	else if (!what)
		sb_str(&sb, gpuos_status_name(st));
	if (st == GPUOS_ST_IO && F->last_nvme) {
		sb_str(&sb, " (NVMe status 0x");
		{
			const char *hex = "0123456789abcdef";
			char t[5];
			t[0] = hex[(F->last_nvme >> 12) & 15];
			t[1] = hex[(F->last_nvme >> 8) & 15];
			t[2] = hex[(F->last_nvme >> 4) & 15];
			t[3] = hex[F->last_nvme & 15];
			t[4] = 0;
			sb_str(&sb, t);
		}
		sb_str(&sb, ": ");
		sb_str(&sb, gpuos_nvme_status_name(F->last_nvme));
		sb_str(&sb, ")");
	}
	reply(F, q, st, 0, 0, buf);
}

/* Copy the client's NUL-terminated string at q->arg (at most max bytes with
 * the NUL) into F->path. Returns a status. */
GPUOS_HD static uint32_t take_string(struct rt_files *F, const struct mreq *q, uint32_t max)
{
	uint64_t left = region_left(F->d, q->arg);
	const char *p = (const char *)(uintptr_t)q->arg;
	uint32_t i;
	if (!q->arg || !left)
		return GPUOS_ST_BAD_DST;
	for (i = 0; i < max && i < left; i++) {
		F->path[i] = p[i];
		if (!p[i])
			return GPUOS_ST_OK;
	}
	return i == left ? GPUOS_ST_BAD_DST : GPUOS_ST_NAMETOOLONG;
}

/* Make sure the file system is mounted; else reply with why and return 0. */
GPUOS_HD static int need_fs(struct rt_files *F, const struct mreq *q)
{
	if (F->mounted != 1)
		mount(F);
	if (F->mounted == 1)
		return 1;
	reply(F, q, F->mount_status, 0, 0, F->mount_why);
	return 0;
}

/* Resolve the request's path (q->arg) into F->ino, following a symlink in
 * the last component unless q->flags has GPUOS_OPEN_NOFOLLOW. Returns 1, or
 * 0 after replying with why not. */
GPUOS_HD static int lookup_req(struct rt_files *F, const struct mreq *q)
{
	uint32_t st = take_string(F, q, GPUOS_PATH_MAX);
	int r;
	if (st != GPUOS_ST_OK) {
		reply(F, q, st, 0, 0, st == GPUOS_ST_NAMETOOLONG ? "path too long" : "path outside registered memory");
		return 0;
	}
	if (!need_fs(F, q))
		return 0;
	r = gpuos_ext4_lookup_at(&F->fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, F->path,
				 (q->flags & GPUOS_OPEN_NOFOLLOW) ? GPUOS_EXT4_LOOKUP_NOFOLLOW : 0, &F->ino);
	if (r) {
		reply_err(F, q, r, 0, (r == -EINVAL || r == -EIO || r == -EOPNOTSUPP) ? F->fs.why : 0);
		return 0;
	}
	return 1;
}

/* A free handle slot, with a new generation at once: a stale number of the
 * slot's earlier life stops matching before the slot is filled. */
GPUOS_HD static int alloc_handle(struct rt_files *F)
{
	uint32_t i;
	for (i = 0; i < GPUOS_RT_HANDLES; i++)
		if (F->h[i].kind == H_FREE) {
			F->h[i].gen = ++F->gen & 0xffffffu;
			if (F->h[i].gen == 0)
				F->h[i].gen = ++F->gen & 0xffffffu;
			return (int)i;
		}
	return -1;
}

GPUOS_INLINE GPUOS_HD uint32_t handle_number(const struct rt_handle *hd, uint32_t slot)
{
	return (hd->gen << 8) | (slot + 1u);
}

/* Fill handle slot i for inode F->ino: kind, size, map and extents. Returns 0
 * or a negative errno with *why. */
GPUOS_NOINLINE GPUOS_HD static int fill_handle(struct rt_files *F, uint32_t i, const char **why)
{
	struct rt_handle *hd = &F->h[i];
	const struct gpuos_ext4_inode *in = &F->ino;
	struct gpuos_ext4_extent *ext = handle_ext(F->d, i);
	uint64_t next = 0, blocks = F->fs.blocks_count;
	uint32_t n = 0, got = 0;
	int r;

	hd->inode = *in;
	hd->kind = in->type == GPUOS_EXT4_FT_DIR ? H_DIR : H_FILE;
	hd->size = in->size;
	hd->base = F->part_off;
	hd->block_bits = F->fs.block_bits;
	hd->model = -1;
	hd->next = 0;
	*why = 0;
	if (in->map != GPUOS_EXT4_MAP_EXTENTS && in->map != GPUOS_EXT4_MAP_BLOCKMAP) {
		hd->map = H_MAP_META; /* inline data, fast symlinks, devices */
		return 0;
	}
	hd->map = H_MAP_EXTENTS;
	while (next != GPUOS_EXT4_EXTENTS_END) {
		if (n == GPUOS_RT_HANDLE_EXTENTS) {
			*why = "file has more extents than an open handle holds (4096)";
			return -ENOSPC;
		}
		r = gpuos_ext4_extents(&F->fs, in, next, ext + n, GPUOS_RT_HANDLE_EXTENTS - n, &got, &next);
		if (r) {
			*why = F->fs.why;
			return r;
		}
		n += got;
	}
	/* Hostile maps: sorted, not overlapping, inside the file system. */
	for (r = 0; (uint32_t)r < n; r++) {
		const struct gpuos_ext4_extent *e = &ext[r];
		if (e->len == 0 || e->pblk > blocks || e->len > blocks - e->pblk ||
		    (r > 0 && e->lblk < ext[r - 1].lblk + ext[r - 1].len)) {
			*why = "corrupt extent map (overlapping, unsorted or outside the file system)";
			return -EINVAL;
		}
	}
	hd->next = n;
	return 0;
}

/* A handle on the inode lookup_req left in F->ino. Returns its slot, or -1
 * when the request has been answered: no free handle, a map that cannot be
 * read, or (with why_no_map) an inode without an extent map (inline data, a
 * device), refused with that reason. */
GPUOS_NOINLINE GPUOS_HD static int open_inode(struct rt_files *F, const struct mreq *q, const char *why_no_map)
{
	const char *why = 0;
	int slot = alloc_handle(F), r;

	if (slot < 0) {
		reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open handles (64)");
		return -1;
	}
	r = fill_handle(F, (uint32_t)slot, &why);
	if (!r && why_no_map && F->h[slot].map == H_MAP_META) {
		r = -EOPNOTSUPP;
		why = why_no_map;
	}
	if (r) {
		F->h[slot].kind = H_FREE;
		reply_err(F, q, r, 0, why);
		return -1;
	}
	return slot;
}

GPUOS_NOINLINE GPUOS_HD static void op_open(struct rt_files *F, const struct mreq *q)
{
	int slot;

	if (q->flags & ~GPUOS_OPEN_NOFOLLOW) {
		reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	if (!lookup_req(F, q) || (slot = open_inode(F, q, 0)) < 0)
		return;
	reply(F, q, GPUOS_ST_OK, handle_number(&F->h[slot], (uint32_t)slot), F->h[slot].size, 0);
}

GPUOS_HD static void free_handle(struct rt_files *F, uint32_t i)
{
	if (F->h[i].model >= 0 && (uint32_t)F->h[i].model < GPUOS_RT_MODELS)
		F->model_owner[F->h[i].model] = 0;
	F->h[i].model = -1;
	F->h[i].kind = H_FREE;
}

/* The open handle of the request, or NULL after replying BAD_HANDLE. */
GPUOS_HD static struct rt_handle *req_handle(struct rt_files *F, const struct mreq *q, uint32_t mask)
{
	const struct rt_handle *hd = gpuos_rt_handle(F->d, q->handle, mask);
	if (!hd) {
		reply(F, q, GPUOS_ST_BAD_HANDLE, 0, 0, 0);
		return 0;
	}
	return &F->h[hd - F->h];
}

GPUOS_NOINLINE GPUOS_HD static void op_stat(struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_stat *o = (struct gpuos_stat *)(uintptr_t)q->dst;
	const struct gpuos_ext4_inode *in;
	uint64_t next = 0, total = 0;
	uint32_t cap, n = 0;
	int r;

	if (q->flags & ~(GPUOS_OPEN_NOFOLLOW | GPUOS_STAT_HANDLE)) {
		reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	if (!q->dst || q->length < sizeof(*o) || !gpuos_rt_registered(d, q->dst, q->length)) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (q->flags & GPUOS_STAT_HANDLE) {
		struct rt_handle *hd = req_handle(F, q, (1u << H_FILE) | (1u << H_DIR) | (1u << H_MODEL));
		if (!hd)
			return;
		if (hd->map == H_MAP_RAW) {
			reply(F, q, GPUOS_ST_BAD_HANDLE, 0, 0, "a raw GGUF has no inode");
			return;
		}
		F->ino = hd->inode;
		if (!need_fs(F, q))
			return;
	} else {
		if (!lookup_req(F, q))
			return;
	}
	in = &F->ino;
	cap = (uint32_t)GPUOS_MIN((q->length - sizeof(*o)) / sizeof(struct gpuos_extent), (uint64_t)UINT32_MAX);
	if (in->map == GPUOS_EXT4_MAP_EXTENTS || in->map == GPUOS_EXT4_MAP_BLOCKMAP) {
		/* Count every extent; write those from index q->offset on while they fit. */
		struct gpuos_ext4_extent e;
		uint32_t got;
		while (next != GPUOS_EXT4_EXTENTS_END) {
			r = gpuos_ext4_extents(&F->fs, in, next, &e, 1, &got, &next);
			if (r) {
				reply_err(F, q, r, 0, F->fs.why);
				return;
			}
			if (got && total >= q->offset && n < cap) {
				o->ext[n].lblk = e.lblk;
				o->ext[n].pblk = e.pblk;
				o->ext[n].len = e.len;
				o->ext[n].flags = (e.flags & GPUOS_EXT4_BMAP_UNWRITTEN) ? GPUOS_EXTENT_UNWRITTEN : 0;
				n++;
			}
			total += got;
		}
	}
	o->ino = in->ino;
	o->type = in->type;
	o->mode = in->mode;
	o->links = in->links;
	o->size = in->size;
	o->block_size = F->fs.block_size;
	o->nextents = (uint32_t)GPUOS_MIN(total, (uint64_t)UINT32_MAX);
	o->part_lba = F->part_lba;
	o->uid = in->uid;
	o->gid = in->gid;
	o->mtime = in->mtime;
	o->first = (uint32_t)GPUOS_MIN(q->offset, (uint64_t)UINT32_MAX);
	o->n = n;
	reply(F, q, GPUOS_ST_OK, n, total, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_readdir(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, (1u << H_FILE) | (1u << H_DIR));
	struct gpuos_dirent *o = (struct gpuos_dirent *)(uintptr_t)q->dst;
	uint64_t cookie = q->offset, cap;
	uint32_t n = 0, i;
	int r = 1;

	if (!hd)
		return;
	if (hd->kind != H_DIR) {
		reply(F, q, GPUOS_ST_NOTDIR, 0, 0, 0);
		return;
	}
	if (!q->dst || q->length < sizeof(*o) || !gpuos_rt_registered(F->d, q->dst, q->length)) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (cookie == GPUOS_DIR_END) {
		reply(F, q, GPUOS_ST_OK, 0, GPUOS_DIR_END, 0);
		return;
	}
	if (!need_fs(F, q))
		return;
	cap = GPUOS_MIN(q->length / sizeof(*o), (uint64_t)READDIR_MAX);
	while (n < cap && (r = gpuos_ext4_readdir(&F->fs, &hd->inode, &cookie, &F->de)) == 1) {
		o[n].ino = F->de.ino;
		o[n].type = F->de.type;
		o[n].name_len = F->de.name_len;
		o[n].rsvd06 = 0;
		for (i = 0; i <= F->de.name_len; i++)
			o[n].name[i] = F->de.name[i];
		n++;
	}
	if (r < 0) {
		reply_err(F, q, r, 0, F->fs.why);
		return;
	}
	reply(F, q, GPUOS_ST_OK, n, r == 0 ? GPUOS_DIR_END : cookie, 0);
}

/* READ of a handle the service warps cannot map (inline data, symlinks). */
GPUOS_NOINLINE GPUOS_HD static void op_read_meta(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, 1u << H_FILE);
	uint64_t len = q->length, done = 0;
	int r;

	if (!hd)
		return;
	if (q->offset >= hd->size) {
		reply(F, q, GPUOS_ST_OK, 0, 0, 0);
		return;
	}
	len = GPUOS_MIN(len, hd->size - q->offset);
	if (!q->dst || !gpuos_rt_registered(F->d, q->dst, len)) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (!need_fs(F, q))
		return;
	if (hd->inode.map == GPUOS_EXT4_MAP_NONE) {
		reply(F, q, GPUOS_ST_OK, 0, 0, 0);
		return;
	}
	while (done < len) {
		uint32_t got = 0, k = (uint32_t)GPUOS_MIN(len - done, (uint64_t)(1u << 20));
		r = gpuos_ext4_read(&F->fs, &hd->inode, q->offset + done, k, (uint8_t *)(uintptr_t)q->dst + done, &got);
		if (r) {
			reply_err(F, q, r, 0, F->fs.why);
			return;
		}
		if (got == 0)
			break;
		done += got;
	}
	reply(F, q, GPUOS_ST_OK, done, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_close(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, (1u << H_FILE) | (1u << H_DIR) | (1u << H_MODEL));
	if (!hd)
		return;
	free_handle(F, (uint32_t)(hd - F->h));
	reply(F, q, GPUOS_ST_OK, 0, 0, 0);
}

/* ---- GGUF ---------------------------------------------------------------------------- */

GPUOS_HD static void gguf_mem(const struct gpuos_rt_desc *d, uint32_t m, struct gpuos_gguf_mem *mem)
{
	uint8_t *p = (uint8_t *)(uintptr_t)(d->files + off_models() + (uint64_t)m * model_bytes());
	mem->tensors = (struct gpuos_gguf_tensor *)p;
	p += al64((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_gguf_tensor));
	mem->kv = (struct gpuos_gguf_kv *)p;
	p += al64((uint64_t)GPUOS_RT_MODEL_KV * sizeof(struct gpuos_gguf_kv));
	mem->arena = p;
	p += al64(GPUOS_RT_MODEL_ARENA);
	mem->index = (uint32_t *)p;
	mem->tensor_cap = GPUOS_RT_MODEL_TENSORS;
	mem->kv_cap = GPUOS_RT_MODEL_KV;
	mem->arena_cap = GPUOS_RT_MODEL_ARENA;
	mem->index_cap = GPUOS_RT_MODEL_INDEX;
}

GPUOS_NOINLINE GPUOS_HD static void op_gguf_open(struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	struct rt_handle *hd;
	struct gpuos_gguf *g;
	uint32_t i, m;
	int slot, r;

	if (q->flags & ~GPUOS_GGUF_RAW) {
		reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	for (m = 0; m < GPUOS_RT_MODELS && F->model_owner[m]; m++)
		;
	if (m == GPUOS_RT_MODELS) {
		reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open models (4)");
		return;
	}
	if (q->flags & GPUOS_GGUF_RAW) {
		if (!(d->flags & GPUOS_RT_ALLOW_RAW)) {
			reply(F, q, GPUOS_ST_DENIED, 0, 0, "a raw GGUF needs raw access (--allow-raw)");
			return;
		}
		if (q->offset >= ns_bytes) {
			reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "offset past the end of the device");
			return;
		}
		if ((slot = alloc_handle(F)) < 0) {
			reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open handles (64)");
			return;
		}
		i = (uint32_t)slot;
		hd = &F->h[i];
		hd->kind = H_FILE;
		hd->map = H_MAP_RAW;
		hd->base = q->offset;
		hd->size = ns_bytes - q->offset;
		hd->block_bits = 12;
		hd->next = 0;
		hd->model = -1;
	} else {
		if (!lookup_req(F, q)) /* GGUF_OPEN has no NOFOLLOW: symlinks are followed */
			return;
		if (F->ino.type == GPUOS_EXT4_FT_DIR) {
			reply(F, q, GPUOS_ST_ISDIR, 0, 0, 0);
			return;
		}
		if ((slot = open_inode(F, q, "a GGUF in inline data or a special file")) < 0)
			return;
		i = (uint32_t)slot;
		hd = &F->h[i];
	}
	/* Parse through the handle's own map. */
	F->io_file.F = F;
	F->io_file.handle = i;
	F->io_file.hint = 0;
	F->mio_file.read = io_file_read;
	F->mio_file.ctx = &F->io_file;
	F->mio_file.size = hd->size;
	g = &F->model[m];
	gguf_mem(d, m, &g->mem);
	r = gpuos_gguf_parse(g, &F->gp, &F->mio_file);
	if (r) {
		struct sbuf sb;
		char buf[WHY_MAX];
		hd->kind = H_FREE;
		sb.p = buf;
		sb.n = 0;
		sb.cap = sizeof(buf);
		if (r == -EPROTONOSUPPORT) {
			sb_str(&sb, "unsupported GGUF: ");
			sb_str(&sb, F->gp.why);
			if (F->gp.bad) {
				sb_str(&sb, " (");
				sb_num(&sb, F->gp.bad);
				sb_str(&sb, ")");
			}
		} else if (r == -ENOSPC) {
			sb_str(&sb, "GGUF too large for the runtime's tables (at most 16384 tensors, 4096 KVs, 1 MiB of keys and strings)");
		} else if (r == -EIO) {
			reply_err(F, q, r, "cannot read the GGUF", 0);
			return;
		} else {
			sb_str(&sb, "corrupt GGUF: ");
			sb_str(&sb, F->gp.why);
			if (F->gp.err_tensor >= 0) {
				sb_str(&sb, " (tensor ");
				sb_num(&sb, (uint64_t)F->gp.err_tensor);
				sb_str(&sb, " '");
				sb_str(&sb, F->gp.subject);
				sb_str(&sb, "')");
			} else if (F->gp.err_kv >= 0) {
				sb_str(&sb, " (KV ");
				sb_num(&sb, (uint64_t)F->gp.err_kv);
				if (F->gp.subject[0]) {
					sb_str(&sb, " '");
					sb_str(&sb, F->gp.subject);
					sb_str(&sb, "'");
				}
				sb_str(&sb, ")");
			}
			if (F->gp.bad) {
				sb_str(&sb, " [value ");
				sb_num(&sb, F->gp.bad);
				sb_str(&sb, "]");
			}
		}
		reply(F, q, r == -ENOSPC ? GPUOS_ST_NOSPC : r == -EPROTONOSUPPORT ? GPUOS_ST_UNSUPPORTED : GPUOS_ST_CORRUPT,
		      0, 0, buf);
		return;
	}
	hd->kind = H_MODEL;
	hd->model = (int32_t)m;
	F->model_owner[m] = (int32_t)i + 1;
	reply(F, q, GPUOS_ST_OK, handle_number(hd, i), g->n_tensors, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_gguf_info(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, 1u << H_MODEL);
	const struct gpuos_gguf *g;
	struct gpuos_gguf_export *x = (struct gpuos_gguf_export *)(uintptr_t)q->dst;
	uint64_t t_bytes, k_bytes, total;

	if (!hd)
		return;
	if (!q->dst || q->length < sizeof(*x) || !gpuos_rt_registered(F->d, q->dst, q->length)) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	g = &F->model[hd->model];
	t_bytes = (uint64_t)g->n_tensors * sizeof(struct gpuos_gguf_tensor);
	k_bytes = (uint64_t)g->n_kv * sizeof(struct gpuos_gguf_kv);
	x->version = g->version;
	x->alignment = g->alignment;
	x->tensor_count = g->tensor_count;
	x->kv_count = g->kv_count;
	x->data_offset = g->data_offset;
	x->file_size = g->file_size;
	x->data_end = g->data_end;
	x->n_layers = g->n_layers;
	x->flags = g->flags;
	x->tensors_off = sizeof(*x);
	x->kv_off = x->tensors_off + t_bytes;
	x->arena_off = al64(x->kv_off + k_bytes);
	x->arena_len = g->arena_used;
	total = x->arena_off + x->arena_len;
	x->total = total;
	x->complete = 0;
	if (q->length >= total) {
		fcopy((uint8_t *)x + x->tensors_off, g->mem.tensors, t_bytes);
		fcopy((uint8_t *)x + x->kv_off, g->mem.kv, k_bytes);
		fcopy((uint8_t *)x + x->arena_off, g->mem.arena, x->arena_len);
		x->complete = 1;
	}
	reply(F, q, GPUOS_ST_OK, total, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_gguf_find(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, 1u << H_MODEL);
	uint32_t st;
	int r;
	if (!hd)
		return;
	if ((st = take_string(F, q, GPUOS_GGUF_NAME_MAX)) != GPUOS_ST_OK) {
		reply(F, q, st, 0, 0, st == GPUOS_ST_NAMETOOLONG ? "tensor name too long" : "name outside registered memory");
		return;
	}
	r = gpuos_gguf_find(&F->model[hd->model], F->path);
	if (r < 0) {
		reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such tensor");
		return;
	}
	reply(F, q, GPUOS_ST_OK, (uint64_t)r, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_gguf_tensor(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, 1u << H_MODEL);
	const struct gpuos_gguf *g;
	if (!hd)
		return;
	g = &F->model[hd->model];
	if (!q->dst || q->length < sizeof(struct gpuos_gguf_tensor) || !gpuos_rt_registered(F->d, q->dst, q->length)) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (q->arg >= g->n_tensors) {
		reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "no tensor with this index");
		return;
	}
	fcopy((void *)(uintptr_t)q->dst, &g->mem.tensors[q->arg], sizeof(struct gpuos_gguf_tensor));
	reply(F, q, GPUOS_ST_OK, 0, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD static void op_gguf_layer(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = req_handle(F, q, 1u << H_MODEL);
	uint32_t count = 0;
	int r;
	if (!hd)
		return;
	if (q->length && (!q->dst || (q->dst & 3u) || !gpuos_rt_registered(F->d, q->dst, q->length))) {
		reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (q->arg > GPUOS_GGUF_MAX_LAYER) {
		reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such layer");
		return;
	}
	r = gpuos_gguf_layer(&F->model[hd->model], (uint32_t)q->arg, (uint32_t *)(uintptr_t)q->dst,
			     (uint32_t)GPUOS_MIN(q->length / 4u, (uint64_t)UINT32_MAX), &count);
	if (r == -ENOENT) {
		reply(F, q, GPUOS_ST_NOENT, 0, 0, "no such layer");
		return;
	}
	/* -ENOSPC: the first ones are written; result says how many there are. */
	reply(F, q, r ? GPUOS_ST_NOSPC : GPUOS_ST_OK, count, 0, r ? "more tensors in the layer than dst holds" : 0);
}

GPUOS_NOINLINE GPUOS_HD static void serve(struct rt_files *F, uint32_t ms, uint32_t cmd)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_mbox_slot *s = (struct gpuos_mbox_slot *)(uintptr_t)(d->mbox + sizeof(struct gpuos_mbox)) + ms;
	struct mreq q;

	q.s = s;
	q.ms = ms;
	q.op = s->opcode;
	q.flags = s->flags;
	q.handle = s->handle;
	q.offset = s->offset;
	q.length = s->length;
	q.dst = s->dst;
	q.arg = s->arg;
	if (cmd == GPUOS_RT_CMD_STOP) {
		reply(F, &q, GPUOS_ST_STOPPING, 0, 0, 0);
		return;
	}
	switch (q.op) {
	case GPUOS_OP_OPEN: op_open(F, &q); break;
	case GPUOS_OP_STAT: op_stat(F, &q); break;
	case GPUOS_OP_READDIR: op_readdir(F, &q); break;
	case GPUOS_OP_READ: op_read_meta(F, &q); break;
	case GPUOS_OP_CLOSE: op_close(F, &q); break;
	case GPUOS_OP_GGUF_OPEN: op_gguf_open(F, &q); break;
	case GPUOS_OP_GGUF_INFO: op_gguf_info(F, &q); break;
	case GPUOS_OP_GGUF_FIND: op_gguf_find(F, &q); break;
	case GPUOS_OP_GGUF_TENSOR: op_gguf_tensor(F, &q); break;
	case GPUOS_OP_GGUF_LAYER: op_gguf_layer(F, &q); break;
	default: reply(F, &q, GPUOS_ST_BAD_OPCODE, 0, 0, 0); break;
	}
}

/* ---- the loop --------------------------------------------------------------------------- */

GPUOS_NOINLINE GPUOS_HD void gpuos_rt_meta_run(const struct gpuos_rt_desc *d)
{
	struct rt_files *F = files_of(d);
	uint32_t n = d->mbox_nslots, idle = 0, iter = 0, cmd = GPUOS_RT_CMD_RUN;

	if (gpuos_lane_id() != 0 || !d->meta)
		return;
	F->d = d;
	if (F->magic != FILES_MAGIC) {
		uint32_t i;
		for (i = 0; i < d->nctrl; i++)
			gpuos_rt_queue_start(&F->qp[i], d, &d->queue[d->nqueues + i]);
		for (i = 0; i < GPUOS_RT_HANDLES; i++)
			F->h[i].model = -1;
		F->magic = FILES_MAGIC;
	}
	F->io_dev.F = F;
	F->io_dev.base = 0;
	F->mio_dev.read = io_dev_read;
	F->mio_dev.ctx = &F->io_dev;
	F->mio_dev.size = d->ns_lbas << d->lba_shift;
	/* Function pointers of this launch: parsers copy the io they are given. */
	F->mio_part.read = io_dev_read;
	F->mio_file.read = io_file_read;
	F->fs.io.read = io_dev_read;
	F->launches++;
	/* A participant of resets, as each service warp (runtime/recover.h). */
	gpuos_rt_rec_enter(d, gpuos_rt_recover(d));
	meta_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d)));

	for (;;) {
		uint32_t pos = F->consumed, e;
		meta_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d)));
		/* Pairs with the service warps' release store of the entry. */
		e = gpuos_load_acquire_dev32(&meta_ring(d)[pos % n]);
		if ((e >> 16) == (((pos / n) + 1u) & 0xffffu) && (e & 0xffffu) < n) {
			serve(F, e & 0xffffu, cmd);
			F->consumed = pos + 1u;
			idle = 0;
			continue;
		}
		/* Now and then, as the service warps do (rt.c). Pairs with the
		 * host's release store (set_cmd). */
		if ((iter++ & 31u) == 0)
			cmd = gpuos_load_acquire_sys32((const uint32_t *)(uintptr_t)d->cmd);
		if (cmd != GPUOS_RT_CMD_RUN) {
			/* Every service warp has left: nothing more can be forwarded.
			 * Pairs with their fence before the exits increment. */
			uint32_t exits = gpuos_load_acquire_dev32(&F->exits);
			if (exits >= d->nwarps * F->launches &&
			    gpuos_load_acquire_dev32(&F->posted) == F->consumed &&
			    gpuos_rt_rec_leave(gpuos_rt_recover(d)))
				break;
		}
		if (++idle > (GPUOS_ON_GPU ? 1024u : 64u))
			gpuos_backoff(&idle);
	}
}
