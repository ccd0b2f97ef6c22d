/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_io.c - how the metadata warp reads the device (files.h): one
 * command at a time on its own queue pair of each controller, waited for,
 * through a small block cache; the gpuos_meta_io reads its parsers get.
 */
#include "files_internal.h"

/* ---- reading the device: own queue pair, block cache ------------------------------ */

/* Follow the reset protocol from the word w (as the service warps do,
 * rt.c rec_follow). Returns 1 while a reset keeps us from the queues. */
GPUOS_NOINLINE GPUOS_HD int files_rec_follow(struct rt_files *F, uint32_t w)
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

/* One read command of `bytes` at controller m's `lba` into the metadata
 * bounce buffer, on its queue, waited for. Returns bytes read or a negative
 * errno: -EIO with F->last_nvme the NVMe status (0: a reset ended it),
 * -ETIMEDOUT. */
/* again: the command is a retry (counted as one, not as a command: the
 * controller's fetched count is their sum, as for the service warps). */
GPUOS_NOINLINE GPUOS_HD static int64_t dev_cmd(struct rt_files *F, uint32_t m, uint64_t lba, uint64_t bytes, int again)
{
	const struct gpuos_rt_desc *d = F->d;
	struct gpuos_qp *qp = &F->qp[m];
	uint64_t t0, prp2;
	uint16_t cid;

	{
		/* Not into a controller being reset: its queues start afresh. */
		uint32_t spins = 0;
		while (files_rec_follow(F, gpuos_rt_rec_word(gpuos_rt_recover(d))))
			gpuos_backoff(&spins);
	}
	while (gpuos_qp_sq_space(qp) == 0) {
		/* Completions of commands given up on earlier still own entries. */
		struct gpuos_nvme_cqe c;
		if (!gpuos_qp_cq_peek(qp, 0, &c))
			return -EIO;
		gpuos_qp_cq_consume(qp, 1, c.sqhd);
	}
	/* A fresh id for every command, a retry's too: a late or repeated
	 * completion of an earlier one is never taken for this one. 0xffff is
	 * left out (NVMe keeps it for "no command"). */
	if ((uint16_t)(F->cid + 1u) == 0xffffu)
		F->cid++;
	cid = (uint16_t)++F->cid;
	if (gpuos_nvme_prp2(d->meta_bounce_iova, bytes, &prp2))
		prp2 = d->meta_prp_iova; /* its list is prebuilt (boot) */
	gpuos_nvme_prep_read(gpuos_qp_sq_entry(qp, 0), cid, d->nsid, lba, (uint32_t)(bytes >> d->lba_shift),
			     d->meta_bounce_iova, prp2);
	/* One fence and the doorbell (gpuos_qp_sq_ring); pairs with the
	 * controller's SQE fetch. */
	gpuos_qp_sq_ring(qp, 1);
	if (again)
		F->n_retries++;
	else
		F->n_cmds++;
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
		if (files_rec_follow(F, gpuos_rt_rec_word(rs)) || F->dropped) {
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
			if (c.cid != cid) {
				/* nothing else is ever in flight here */
				completed_again(F, c.cid, cid);
				continue;
			}
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
			 * bounce buffer (docs/design.md, "The life of a command"):
			 * abort it, then reset. */
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
				files_rec_follow(F, gpuos_rt_rec_word(rs)); /* our drop and ack */
				gpuos_rt_reset_finish(d, rs);
				files_rec_follow(F, gpuos_rt_rec_word(rs));
				F->last_nvme = 0;
				return -ETIMEDOUT;
			}
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
		if (r != -EIO || !F->last_nvme || gpuos_nvme_status_dnr(F->last_nvme) || tries >= d->retries)
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

/* gpuos_meta_io over the bytes of an open handle (a GGUF inside ext4). */
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
