/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_io.c - how the metadata warp reads the device (files.h): one
 * command at a time on its own queue pair of each controller, waited for,
 * through a small block cache; the gpuos_meta_io reads its parsers get. A
 * command's SQE, completion, retries and timeout steps are those of the
 * service warps' (runtime/nvme_cmd.h), its part in resets the same follower
 * (runtime/recover.h).
 */
#include "files_internal.h"
#include "nvme_cmd.h"

/* ---- reading the device: own queue pair, block cache ------------------------------ */

/* The metadata warp as a participant of resets (runtime/recover.h): DROP
 * ends its command on controller m, if it has one there (the controller
 * writes nothing more: the bounce buffer is ours); RUN starts its queue of
 * m from zero. */
GPUOS_HD static void meta_drop(void *ctx, uint32_t m)
{
	struct rt_files *F = (struct rt_files *)ctx;
	if (F->inflight == m + 1u) {
		F->inflight = 0;
		F->dropped = 1; /* the controller writes nothing more: the bounce buffer is ours */
	}
}
GPUOS_HD static void meta_restart(void *ctx, uint32_t m)
{
	struct rt_files *F = (struct rt_files *)ctx;
	gpuos_rt_queue_start(&F->qp[m], F->d, &F->d->queue[F->d->nqueues + m]);
}
GPUOS_INLINE GPUOS_HD void meta_part(struct rt_files *F, struct rt_rec_part *p)
{
	p->epoch = &F->rec_epoch;
	p->gen = F->rec_gen;
	p->drop = meta_drop;
	p->restart = meta_restart;
	p->ctx = F;
}

/* Follow the reset protocol from the word w (the one follower, as the
 * service warps'). Returns 1 while a reset keeps us from the queues. */
GPUOS_NOINLINE GPUOS_HD int files_rec_follow(struct rt_files *F, uint32_t w)
{
	struct rt_rec_part p;
	meta_part(F, &p);
	return gpuos_rt_rec_follow(F->d, w, &p);
}

/* A completion came for command id cid while another was in flight: an
 * earlier command completed again (each took its own id, and each of its
 * completions was consumed or its controller reset), or an id never sent.
 * Nothing read through the block cache can be trusted to be what the device
 * holds: every cached page goes. A command of the request being served
 * (ids from F->req_cid0 on) fails it (files_reply: GPUOS_ST_DUP_CQE). */
GPUOS_NOINLINE GPUOS_HD static void completed_again(struct rt_files *F, uint16_t cid, uint16_t now)
{
	uint32_t k;
	uint16_t back = (uint16_t)(now - cid), mine = (uint16_t)(now - (uint16_t)F->req_cid0);
	F->n_dups++;
	if (back != 0 && back <= mine)
		F->req_dup = 1;
	for (k = 0; k < GPUOS_RT_CACHE_SETS * GPUOS_RT_CACHE_WAYS; k++)
		F->tag[k] = 0;
}

/* Send one read of `bytes` at controller m's `lba` into the metadata bounce
 * buffer, on its queue, with a fresh command id (*cid): the SQE and PRPs of
 * runtime/nvme_cmd.h, as the service warps', and the doorbell. again: a
 * retry (counted as one, not as a command: the controller's fetched count
 * is their sum, as for the service warps). Returns 0, or -EIO when the
 * queue has no room. */
GPUOS_INLINE GPUOS_HD int meta_submit(struct rt_files *F, uint32_t m, uint64_t lba, uint64_t bytes, int again,
				      uint16_t *cid)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_qp *qp = &F->qp[m];
	uint32_t spins = 0;
	/* Not into a controller being reset: its queues start afresh. */
	while (files_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d))))
		gpuos_backoff(&spins);
	while (gpuos_qp_sq_space(qp) == 0) {
		/* Completions of commands given up on earlier still own entries. */
		struct gpuos_nvme_cqe c;
		if (!gpuos_rt_cmd_reap(qp, &c))
			return -EIO;
	}
	/* A fresh id for every command, a retry's too: a late or repeated
	 * completion of an earlier one is never taken for this one. 0xffff is
	 * left out (NVMe keeps it for "no command"). */
	if ((uint16_t)(F->cid + 1u) == 0xffffu)
		F->cid++;
	*cid = (uint16_t)++F->cid;
	/* its PRP list, when it needs one, is prebuilt (boot) */
	gpuos_rt_cmd_read(d, qp, 0, *cid, lba, (uint32_t)(bytes >> d->lba_shift), d->meta_bounce_iova, 0,
			  d->meta_prp_iova);
	/* One fence and the doorbell (gpuos_qp_sq_ring); pairs with the
	 * controller's SQE fetch. */
	gpuos_qp_sq_ring(qp, 1);
	if (again)
		F->n_retries++;
	else
		F->n_cmds++;
	F->inflight = m + 1u;
	F->dropped = 0;
	return 0;
}

/* The command cid is late by a timeout: gpuos_rt_cmd_late's next step, as
 * for the service warps' commands. Never given up on while the controller
 * may still write the bounce buffer (docs/design.md, "The life of a
 * command"): abort it, then reset. Returns 1 when it is over (-ETIMEDOUT),
 * 0 while it may still end (*aborted: the Abort step is behind it, its
 * clock *t0 starts again). */
GPUOS_INLINE GPUOS_HD int meta_late(struct rt_files *F, uint32_t m, uint16_t cid, int *aborted, uint64_t *t0)
{
	struct rt_rec_part p;
	int sent;
	switch (gpuos_rt_cmd_late(F->d, m, (uint16_t)F->qp[m].qid, cid, *aborted, &sent)) {
	case RT_LATE_ABORTED:
		*aborted = 1;
		*t0 = gpuos_now_ns();
		return 0;
	case RT_LATE_STUCK:
		F->broken = 1; /* the bounce buffer may still be written: no more reads */
		return 1;
	case RT_LATE_RESET:
		meta_part(F, &p);
		return gpuos_rt_rec_reset(F->d, m, &p); /* ours: it ended the command */
	default:
		return 0;
	}
}

/* One read command of `bytes` at controller m's `lba` into the metadata
 * bounce buffer, on its queue, waited for. Returns bytes read or a negative
 * errno: -EIO with F->last_nvme the NVMe status (0: a reset ended it),
 * -ETIMEDOUT. again: the command is a retry (meta_submit). */
GPUOS_NOINLINE GPUOS_HD static int64_t dev_cmd(struct rt_files *F, uint32_t m, uint64_t lba, uint64_t bytes, int again)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t t0;
	uint32_t spins = 0; /* outside the loop: the backoff grows while the command is out (issue 13) */
	int aborted = 0;
	uint16_t cid;

	if (meta_submit(F, m, lba, bytes, again, &cid))
		return -EIO;
	t0 = gpuos_now_ns();
	for (;;) {
		struct gpuos_nvme_cqe c;
		uint16_t st;
		/* A reset first: in its DROP phase the CQ is not ours to read. */
		if (files_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d))) || F->dropped) {
			if (F->dropped) {
				F->last_nvme = 0;
				return -EIO; /* the controller was reset under it */
			}
			gpuos_backoff(&spins);
			continue;
		}
		/* The CQE acquire (in gpuos_rt_cmd_reap) orders our reads of the
		 * bounce buffer after the controller's data writes. */
		if (gpuos_rt_cmd_reap(&F->qp[m], &c)) {
			if (c.cid != cid) {
				completed_again(F, c.cid, cid); /* nothing else is ever in flight here */
				continue;
			}
			F->inflight = 0;
			st = gpuos_nvme_status_of(c.status);
			if (aborted || st)
				F->last_nvme = aborted ? 0 : st;
			if (aborted)
				return -ETIMEDOUT; /* it ended after its timeout (done or aborted) */
			return st ? -EIO : (int64_t)bytes;
		}
		if (gpuos_now_ns() - t0 > d->timeout_ns && meta_late(F, m, cid, &aborted, &t0)) {
			F->last_nvme = 0;
			return -ETIMEDOUT;
		}
		gpuos_backoff(&spins);
	}
}

/* Read up to npages 4 KiB pages from device page `page` into the metadata
 * bounce buffer: one command, on the queue of the controller that holds
 * them, waited for; sent again (a new command, a new id) at most
 * d->retries times while it fails with DNR clear, as the service warps do
 * (docs/design.md, "The life of a command"). It stops at the end of the
 * namespace and of an array chunk (the next bytes live on another
 * controller; chunks are whole pages). Returns bytes read or a negative
 * errno. */
GPUOS_NOINLINE GPUOS_HD static int64_t dev_read(struct rt_files *F, uint64_t page, uint32_t npages)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift, off = page * GPUOS_RT_CACHE_PAGE;
	uint64_t bytes = (uint64_t)npages * GPUOS_RT_CACHE_PAGE, lba, left;
	uint32_t m, tries;

	if (off >= ns_bytes)
		return -ERANGE;
	if (bytes > ns_bytes - off)
		bytes = ns_bytes - off; /* a multiple of the LBA size: both ends are */
	left = gpuos_rt_stripe_map(d, off >> d->lba_shift, &m, &lba);
	if (left < bytes >> d->lba_shift)
		bytes = left << d->lba_shift;
	for (tries = 0;; tries++) {
		int64_t r;
		if (F->broken)
			return -EIO;
		r = dev_cmd(F, m, lba, bytes, tries > 0);
		/* sent again as the service warps send theirs (runtime/nvme_cmd.h) */
		if (r != -EIO || !gpuos_rt_cmd_retry(d, F->last_nvme, tries))
			return r;
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
			gpuos_buf_copy(dst, src, GPUOS_RT_CACHE_PAGE);
		} else {
			gpuos_buf_copy(dst, src, have); /* the namespace ends inside this page */
			gpuos_buf_zero(dst + have, GPUOS_RT_CACHE_PAGE - have);
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
GPUOS_HD int files_dev_bytes(struct rt_files *F, uint64_t off, uint64_t len, void *dst)
{
	uint8_t *out = (uint8_t *)dst;
	while (len) {
		uint64_t page = off / GPUOS_RT_CACHE_PAGE, in = off % GPUOS_RT_CACHE_PAGE;
		uint64_t k = GPUOS_MIN(len, GPUOS_RT_CACHE_PAGE - in);
		int err = -EIO;
		const uint8_t *p = cache_get(F, page, &err);
		if (!p)
			return err == -ERANGE ? -ERANGE : -EIO;
		gpuos_buf_copy(out, p + in, k);
		out += k;
		off += k;
		len -= k;
	}
	return 0;
}

/* gpuos_meta_io over device bytes from io->base (the whole device, a partition). */
GPUOS_HD int files_io_dev_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct rt_io *io = (struct rt_io *)ctx;
	return files_dev_bytes(io->F, io->base + off, len, dst);
}

/* gpuos_meta_io over the bytes of an open handle (a model file in the file system). */
GPUOS_HD int files_io_file_read(void *ctx, uint64_t off, uint32_t len, void *dst)
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
			gpuos_buf_zero(out, k);
		else if ((r = files_dev_bytes(F, dev, k, out)))
			return r;
		out += k;
		off += k;
		len -= k;
	}
	return 0;
}
