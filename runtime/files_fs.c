/* SPDX-License-Identifier: MIT */
/*
 * runtime/files_fs.c - the file system of the metadata warp (files.h):
 * finding and mounting it (GPT, then runtime/fs/fs.h, whichever file
 * system the volume holds), path lookup, opening handles
 * and building their extent maps in the pool (the table that reads them,
 * gpuos_rt_handle and gpuos_rt_files_map, is runtime/engine/handles.c),
 * and OPEN, STAT, READDIR, READ (of what has no extent map) and CLOSE.
 */
#include "files_internal.h"

#define READDIR_MAX 4096u       /* entries per READDIR call: bounded work per request */

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

/* The partition table, parsed once into F->gpt and F->parts (mount and
 * PARTS read it). A read error is not kept: the next call tries again.
 * Returns gpuos_gpt_parse's result. */
GPUOS_NOINLINE GPUOS_HD static int find_table(struct rt_files *F)
{
	const struct gpuos_rt_desc *d = F->d;
	int r;

	if (F->gpt_parsed)
		return F->gpt_rc;
	F->gpt.parts = F->parts;
	F->gpt.part_cap = GPT_PARTS;
	r = gpuos_gpt_parse(&F->gpt, &F->gptp, &F->mio_dev, 1u << d->lba_shift);
	if (r == -EIO)
		return r;
	F->gpt_parsed = 1;
	F->gpt_rc = r;
	if ((!r || r == -ENOSPC) && (F->gpt.flags & (GPUOS_GPT_F_BACKUP_USED | GPUOS_GPT_F_BACKUP_BAD))) {
		struct gpuos_rt_ctl *ctl = (struct gpuos_rt_ctl *)(uintptr_t)d->ctl;
		/* The host reads it after a reply (ordered by the reply's fence). */
		gpuos_store_relaxed_sys32(&ctl->notices, (F->gpt.flags & GPUOS_GPT_F_BACKUP_USED)
							? GPUOS_NOTICE_GPT_BACKUP : GPUOS_NOTICE_GPT_BACKUP_BAD);
	}
	return r;
}

/* Why find_table refused the table, as mount and PARTS both say it, into
 * why (cap bytes, cut short to fit): "corrupt GPT: primary and backup GPT
 * are both invalid (primary: GPT header CRC mismatch; backup: ...)". */
GPUOS_HD static void table_refused(const struct rt_files *F, char *why, uint32_t cap)
{
	struct sbuf sb;
	sb.p = why;
	sb.n = 0;
	sb.cap = cap;
	sb_str(&sb, "corrupt GPT: ");
	sb_str(&sb, F->gptp.why);
	if (F->gpt.primary_why || F->gpt.backup_why) {
		sb_str(&sb, " (primary: ");
		sb_str(&sb, F->gpt.primary_why ? F->gpt.primary_why : "valid");
		sb_str(&sb, "; backup: ");
		sb_str(&sb, F->gpt.backup_why ? F->gpt.backup_why : "not read");
		sb_str(&sb, ")");
	}
}

/* The kind of file system the volume at device byte `start` holds, by its
 * signature (as the default choice of a partition looks), or GPUOS_FS_NONE. */
GPUOS_HD static uint32_t holds_fs(struct rt_files *F, uint64_t start)
{
	uint64_t ns_bytes = F->d->ns_lbas << F->d->lba_shift, off, want;
	uint32_t kind, len;

	for (kind = GPUOS_FS_NONE + 1u; kind < GPUOS_FS_KINDS; kind++) {
		uint64_t got = 0;
		if (!gpuos_fs_signature(kind, &off, &len, &want) && start < ns_bytes && ns_bytes - start > off + len &&
		    files_dev_bytes(F, start + off, len, &got) == 0 && got == want)
			return kind;
	}
	return GPUOS_FS_NONE;
}

/* The index in F->parts of the file tools' partition: --part N (d->part),
 * else the first holding a file system the runtime reads; -1 if none. */
GPUOS_NOINLINE GPUOS_HD static int files_part(struct rt_files *F)
{
	const struct gpuos_rt_desc *d = F->d;
	uint32_t i;

	for (i = 0; i < F->gpt.n_parts; i++) {
		const struct gpuos_gpt_part *p = &F->parts[i];

		if (d->part ? p->index + 1u == d->part : holds_fs(F, p->first_lba << d->lba_shift) != GPUOS_FS_NONE)
			return (int)i;
	}
	return -1;
}

/* The --root directory (desc root), resolved from the file system's root
 * without following a symlink at its end: 0 and F->root_ino, or an error of
 * gpuos_fs_lookup (-ENOTDIR: not a directory). */
GPUOS_HD static int mount_root(struct rt_files *F)
{
	const char *root = F->d->root;
	int r;
	F->root_ino = F->fs.root_ino;
	if (!root[0])
		return 0;
	r = gpuos_fs_lookup(&F->fs, F->fs.root_ino, F->fs.root_ino, root, GPUOS_FS_LOOKUP_NOFOLLOW, 0, &F->ino);
	if (r)
		return r;
	if (F->ino.type != GPUOS_FT_DIR)
		return -ENOTDIR;
	F->root_ino = F->ino.ino;
	return 0;
}

/* Where the file system lies: the partition table read (find_table), the
 * partition chosen (files_part), F->part_off, F->part_lba and F->mio_part
 * over it, bounded by the partition's own end. Returns 1, or 0 after
 * mount_fail. */
GPUOS_NOINLINE GPUOS_HD static int mount_volume(struct rt_files *F)
{
	const struct gpuos_rt_desc *d = F->d;
	uint64_t ns_bytes = d->ns_lbas << d->lba_shift;
	uint32_t i;
	int r;

	F->part_off = 0;
	F->part_lba = 0;
	r = find_table(F);
	if (r == -EIO) {
		mount_fail(F, GPUOS_ST_IO, "cannot read the partition table", 0);
		F->mounted = 0; /* a device error may pass: try again next time */
		return 0;
	}
	if (r && r != -ENOSPC) {
		char why[WHY_MAX];
		table_refused(F, why, sizeof(why));
		mount_fail(F, GPUOS_ST_CORRUPT, why, 0);
		return 0;
	}
	if (F->gpt.scheme == GPUOS_PT_NONE) {
		if (d->part) {
			mount_fail(F, GPUOS_ST_NOENT, "no partition table on the device", 0);
			return 0;
		}
	} else {
		int found = files_part(F);
		if (found < 0) {
			mount_fail(F, GPUOS_ST_NOENT,
				   d->part ? "no such partition" : "no partition holds an " GPUOS_FS_NAMES " file system", 0);
			return 0;
		}
		F->part_lba = F->parts[found].first_lba;
		F->part_off = F->part_lba << d->lba_shift;
		if (F->part_off >= ns_bytes) {
			mount_fail(F, GPUOS_ST_CORRUPT, "corrupt GPT", "partition starts past the end of the device");
			return 0;
		}
	}
	F->io_part.F = F;
	F->io_part.base = F->part_off;
	F->mio_part.read = files_io_dev_read;
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
	return 1;
}

/* Find the file system (the volume, then what it holds: docs/design.md,
 * "Files and models") and mount it. */
GPUOS_NOINLINE GPUOS_HD static void mount(struct rt_files *F)
{
	int r;

	if (!mount_volume(F))
		return;
	r = gpuos_fs_mount(&F->fs, &F->mio_part, 0);
	if (r == -EIO) {
		mount_fail(F, GPUOS_ST_IO, "cannot read the file system", gpuos_fs_why(&F->fs));
		F->mounted = 0;
		return;
	}
	if (r) {
		mount_fail(F, status_of(r),
			   r == -EOPNOTSUPP ? "unsupported file system" : "not a usable " GPUOS_FS_NAMES " file system",
			   gpuos_fs_why(&F->fs));
		return;
	}
	r = mount_root(F);
	if (r) {
		if (r == -EIO) {
			mount_fail(F, GPUOS_ST_IO, "cannot read the --root directory", gpuos_fs_why(&F->fs));
			F->mounted = 0;
			return;
		}
		mount_fail(F, status_of(r), "the --root directory",
			   r == -ENOTDIR ? "not a directory" : r == -ENOENT ? "no such directory" : gpuos_fs_why(&F->fs));
		return;
	}
	F->mounted = 1;
}

/* ---- requests ------------------------------------------------------------------------- */

/* Make sure the file system is mounted; else reply with why and return 0. */
GPUOS_HD static int need_fs(struct rt_files *F, const struct mreq *q)
{
	if (F->mounted != 1)
		mount(F);
	if (F->mounted == 1)
		return 1;
	files_reply(F, q, F->mount_status, 0, 0, F->mount_why);
	return 0;
}

/* The parser's codes are the ABI's (gpt.h keeps them inside the runtime). */
static_assert(GPUOS_PT_NONE == GPUOS_PARTS_NONE && GPUOS_PT_GPT == GPUOS_PARTS_GPT &&
	      GPUOS_PT_MBR == GPUOS_PARTS_MBR, "partition schemes");
static_assert(GPUOS_GPT_F_BACKUP_USED == GPUOS_PARTS_F_BACKUP_USED && GPUOS_GPT_F_BACKUP_BAD == GPUOS_PARTS_F_BACKUP_BAD &&
	      GPUOS_GPT_F_NO_PMBR == GPUOS_PARTS_F_NO_PMBR && GPUOS_GPT_F_HYBRID_MBR == GPUOS_PARTS_F_HYBRID_MBR,
	      "partition table flags");
static_assert(GPT_PARTS == 128u && GPUOS_GPT_NAME_UTF8 == GPUOS_PART_NAME_MAX, "what struct gpuos_parts says");

/* PARTS' header: the table's scheme, flags, counts and the reasons a copy
 * of it was refused, into o (zeroed first). */
GPUOS_HD static void parts_header(const struct rt_files *F, const struct mreq *q, struct gpuos_parts *o)
{
	const struct gpuos_gpt *g = &F->gpt;
	struct sbuf sb;

	fzero(o, sizeof(*o));
	o->scheme = g->scheme;
	o->flags = g->flags & (GPUOS_PARTS_F_BACKUP_USED | GPUOS_PARTS_F_BACKUP_BAD | GPUOS_PARTS_F_NO_PMBR |
			       GPUOS_PARTS_F_HYBRID_MBR);
	o->lba_bytes = 1u << F->d->lba_shift;
	o->first = (uint32_t)GPUOS_MIN(q->offset, (uint64_t)UINT32_MAX);
	o->total = g->n_parts;
	o->found = g->n_used;
	o->skipped = g->n_skipped;
	o->disk_lbas = g->disk_lbas;
	if (g->scheme == GPUOS_PT_GPT) {
		o->n_entries = g->n_entries;
		o->header_lba = g->header_lba;
		o->first_usable_lba = g->first_usable_lba;
		o->last_usable_lba = g->last_usable_lba;
		gpuos_gpt_guid_format(g->disk_guid, o->disk_guid);
	}
	sb.p = o->primary_why;
	sb.n = 0;
	sb.cap = sizeof(o->primary_why);
	sb_str(&sb, (g->flags & GPUOS_GPT_F_BACKUP_USED) ? g->primary_why : 0);
	sb.p = o->backup_why;
	sb.n = 0;
	sb.cap = sizeof(o->backup_why);
	sb_str(&sb, (g->flags & GPUOS_GPT_F_BACKUP_BAD) ? g->backup_why : 0);
}

/* PARTS' entries, from index o->first of the table on while cap of them
 * fit, each probed for a file system; the one the file tools use flagged.
 * Returns how many it wrote. */
GPUOS_HD static uint32_t parts_list(struct rt_files *F, struct gpuos_parts *o, uint64_t cap)
{
	const struct gpuos_rt_desc *d = F->d;
	const struct gpuos_gpt *g = &F->gpt;
	int files = files_part(F);
	uint32_t i, n = 0;

	for (i = o->first; i < g->n_parts && n < cap; i++, n++) {
		const struct gpuos_gpt_part *p = &F->parts[i];
		struct gpuos_part *e = &o->part[n];

		fzero(e, sizeof(*e));
		e->first_lba = p->first_lba;
		e->last_lba = p->last_lba;
		e->attributes = p->attributes;
		e->number = p->index + 1u;
		e->mbr_type = p->mbr_type;
		e->fs = gpuos_fs_part_type(holds_fs(F, p->first_lba << d->lba_shift));
		e->flags = (int)i == files ? GPUOS_PART_F_FILES : 0;
		if (g->scheme == GPUOS_PT_GPT) {
			gpuos_gpt_guid_format(p->type_guid, e->type_guid);
			gpuos_gpt_guid_format(p->unique_guid, e->unique_guid);
			fcopy(e->name, p->name_utf8, sizeof(e->name));
		}
	}
	return n;
}

/* PARTS: the partition table find_table read, then its partitions from
 * index q->offset on while they fit in dst (each probed for a file system).
 * It needs no file system: a device without one is listed too. */
GPUOS_NOINLINE GPUOS_HD void files_op_parts(struct rt_files *F, const struct mreq *q)
{
	struct gpuos_parts *o = (struct gpuos_parts *)(uintptr_t)q->dst;
	uint32_t n;
	int r;

	if (q->flags) {
		files_reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	if (!files_struct_dst(F, q, sizeof(*o), "destination shorter than struct gpuos_parts"))
		return;
	r = find_table(F);
	if (r == -EIO) {
		files_reply_err(F, q, r, "cannot read the partition table", 0);
		return;
	}
	if (r && r != -ENOSPC) {
		char why[WHY_MAX];
		table_refused(F, why, sizeof(why));
		files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, why);
		return;
	}
	parts_header(F, q, o);
	if (F->gpt.scheme == GPUOS_PT_NONE) {
		o->whole_fs = gpuos_fs_part_type(holds_fs(F, 0));
		files_reply(F, q, GPUOS_ST_OK, 0, 0, 0);
		return;
	}
	n = parts_list(F, o, (q->length - sizeof(*o)) / sizeof(struct gpuos_part));
	o->n = n;
	files_reply(F, q, GPUOS_ST_OK, n, F->gpt.n_parts, 0);
}

/* Resolve the request's path (q->arg) into F->ino, following a symlink in
 * the last component unless q->flags has GPUOS_OPEN_NOFOLLOW, as the
 * request's client (files_cred: every directory on the way must be
 * searchable, else DENIED). Returns 1, or 0 after replying with why not. */
GPUOS_HD int files_lookup_req(struct rt_files *F, const struct mreq *q)
{
	int r;
	if (!files_take_path(F, q))
		return 0;
	r = files_lookup_path(F, q, (q->flags & GPUOS_OPEN_NOFOLLOW) ? GPUOS_FS_LOOKUP_NOFOLLOW : 0);
	if (r) {
		files_reply_err(F, q, r, 0, files_lookup_why(F, r));
		return 0;
	}
	return 1;
}

GPUOS_HD int files_take_path(struct rt_files *F, const struct mreq *q)
{
	uint32_t st = files_take_string(F, q, GPUOS_PATH_MAX);
	if (st != GPUOS_ST_OK) {
		files_reply(F, q, st, 0, 0, st == GPUOS_ST_NAMETOOLONG ? "path too long" : "path outside registered memory");
		return 0;
	}
	return need_fs(F, q);
}

GPUOS_HD int files_lookup_path(struct rt_files *F, const struct mreq *q, uint32_t flags)
{
	return gpuos_fs_lookup(&F->fs, F->root_ino, F->root_ino, F->path, flags, files_cred(F, q), &F->ino);
}

GPUOS_HD const char *files_lookup_why(const struct rt_files *F, int r)
{
	return (r == -EINVAL || r == -EIO || r == -EOPNOTSUPP) ? gpuos_fs_why(&F->fs) : 0;
}

/* files_lookup_req, then read permission on what it found, as open(2) for
 * reading asks (a directory too: READDIR reads through the handle). Returns
 * 1, or 0 after replying with why not. */
GPUOS_HD int files_lookup_read(struct rt_files *F, const struct mreq *q)
{
	if (!files_lookup_req(F, q))
		return 0;
	if (gpuos_fs_permission(&F->fs, &F->ino, files_cred(F, q), GPUOS_FS_MAY_READ)) {
		files_reply_err(F, q, -EACCES, 0, 0);
		return 0;
	}
	return 1;
}

GPUOS_HD const struct gpuos_rt_client *files_cred(const struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	uint32_t m = gpuos_rt_ms_client(q->ms);
	const struct gpuos_rt_client *c;
	if (m == 0 || m > d->nclients || !d->clients)
		return 0;
	c = (const struct gpuos_rt_client *)(uintptr_t)d->clients + (m - 1u);
	return (c->flags & GPUOS_RT_CLIENT_PERMS) ? c : 0;
}

GPUOS_HD int files_may_raw(const struct rt_files *F, const struct mreq *q)
{
	const struct gpuos_rt_desc *d = F->d;
	uint32_t m = gpuos_rt_ms_client(q->ms);
	if (!(d->flags & GPUOS_RT_ALLOW_RAW))
		return 0;
	if (m == 0)
		return 1; /* the service's own mailbox: as the runtime allows */
	if (m > d->nclients || !d->clients)
		return 0;
	/* The table only the service writes, before the client learns of its
	 * mailbox (runtime/engine/intake.c, client_may_raw). */
	return (gpuos_load_relaxed_sys32(&((const struct gpuos_rt_client *)(uintptr_t)d->clients)[m - 1u].flags) &
		GPUOS_RT_CLIENT_RAW) != 0;
}

/* The client share that made request q (1-based), 0: none. A client of a
 * service posts to its own mailbox, which names it. Otherwise (the
 * service's own mailbox: apps it runs in a share) its path, else its reason
 * buffer, lies in that share (abi.h, "Clients of a service"). */
GPUOS_HD static uint32_t req_share(const struct gpuos_rt_desc *d, const struct mreq *q)
{
	uint64_t a = q->arg ? q->arg : (q->length ? q->dst : 0), k;
	if (gpuos_rt_ms_client(q->ms))
		return gpuos_rt_ms_client(q->ms);
	if (!d->nshares || !d->share_len || a < d->share_base)
		return 0;
	k = (a - d->share_base) / d->share_len;
	/* the host clients' shares only: a GPU client posts to its own mailbox */
	return k < d->nshares - d->ngpu_clients ? (uint32_t)k + 1u : 0;
}

/* A free handle slot for request q, owned by its client share, with a new
 * generation at once: a stale number of the slot's earlier life stops
 * matching before the slot is filled. -1 after replying NOSPC: no slot
 * free, or the share holds its GPUOS_MAX_HANDLES_PER_SHARE. */
GPUOS_HD int files_alloc_handle(struct rt_files *F, const struct mreq *q)
{
	uint32_t i, share = req_share(F->d, q), held = 0, slot = GPUOS_RT_HANDLES;
	for (i = 0; i < GPUOS_RT_HANDLES; i++) {
		if (F->h[i].kind == H_FREE)
			slot = slot == GPUOS_RT_HANDLES ? i : slot;
		else if (share && F->h[i].share == share)
			held++;
	}
	if (share && held >= GPUOS_MAX_HANDLES_PER_SHARE) {
		files_reply(F, q, GPUOS_ST_NOSPC, 0, 0, "this client holds as many open handles as one client may");
		return -1;
	}
	if (slot == GPUOS_RT_HANDLES) {
		files_reply(F, q, GPUOS_ST_NOSPC, 0, 0, "too many open handles in this runtime");
		return -1;
	}
	F->h[slot].gen = ++F->gen & 0xffffffu;
	if (F->h[slot].gen == 0)
		F->h[slot].gen = ++F->gen & 0xffffffu;
	F->h[slot].share = share;
	return (int)slot;
}

/* The longest run of the extent pool that no open map but slot self's
 * holds: its first extent in *first, its length returned. Maps are few
 * (GPUOS_RT_HANDLES): walk them in pool order, gap by gap. */
GPUOS_HD static uint32_t pool_gap(const struct rt_files *F, uint32_t self, uint32_t *first)
{
	uint32_t total = map_extents(F->d), best = 0, at = 0, i;
	*first = 0;
	for (;;) {
		uint32_t start = total, end = total; /* the next map at or after `at` */
		for (i = 0; i < GPUOS_RT_HANDLES; i++) {
			const struct rt_handle *h = &F->h[i];
			if (i == self || h->kind == H_FREE || h->map != H_MAP_EXTENTS || h->next == 0)
				continue;
			if (h->ext_first >= at && h->ext_first < start) {
				start = h->ext_first;
				end = h->ext_first + h->next;
			}
		}
		if (start - at > best) {
			best = start - at;
			*first = at;
		}
		if (start == total)
			return best;
		at = end;
	}
}

/* Fill handle slot i for inode F->ino: kind, size, map and extents. Returns 0
 * or a negative errno with *why. */
GPUOS_NOINLINE GPUOS_HD static int fill_handle(struct rt_files *F, uint32_t i, const char **why)
{
	struct rt_handle *hd = &F->h[i];
	const struct gpuos_fs_inode *in = &F->ino;
	struct gpuos_fs_extent *ext;
	uint64_t next = 0, blocks = F->fs.blocks_count;
	uint32_t n = 0, got = 0, cap, first;
	int r;

	hd->inode = *in;
	hd->kind = in->type == GPUOS_FT_DIR ? H_DIR : H_FILE;
	hd->size = in->size;
	hd->base = F->part_off;
	hd->block_bits = F->fs.block_bits;
	hd->model = -1;
	hd->next = 0;
	*why = 0;
	if (in->map != GPUOS_FS_MAP_EXTENTS) {
		hd->map = H_MAP_META; /* inline data, fast symlinks, devices */
		return 0;
	}
	hd->map = H_MAP_EXTENTS;
	/* The map goes into the longest free run of the pool; it is this
	 * handle's once next is set (other open maps stay where they are:
	 * service warps may be reading them). */
	cap = pool_gap(F, i, &first);
	hd->ext_first = first;
	ext = pool_ext(F->d, first);
	while (next != GPUOS_FS_EXTENTS_END) {
		struct gpuos_fs_extent probe;
		if (n == cap) {
			/* The run is full: is there more of the map, or was it an exact fit? */
			r = gpuos_fs_extents(&F->fs, in, next, &probe, 1, &got, &next);
			if (r) {
				*why = gpuos_fs_why(&F->fs);
				return r;
			}
			if (got) {
				*why = "the open files' extent maps fill the runtime's pool: close files, or boot with a "
				       "larger --files-mib";
				return -ENOSPC;
			}
			continue;
		}
		r = gpuos_fs_extents(&F->fs, in, next, ext + n, cap - n, &got, &next);
		if (r) {
			*why = gpuos_fs_why(&F->fs);
			return r;
		}
		n += got;
	}
	/* Hostile maps: sorted, not overlapping, inside the file system. */
	for (r = 0; (uint32_t)r < n; r++) {
		const struct gpuos_fs_extent *e = &ext[r];
		if (e->len == 0 || e->pblk > blocks || e->len > blocks - e->pblk ||
		    (r > 0 && e->lblk < ext[r - 1].lblk + ext[r - 1].len)) {
			*why = "corrupt extent map (overlapping, unsorted or outside the file system)";
			return -EINVAL;
		}
	}
	hd->next = n;
	return 0;
}

/* A handle on the inode files_lookup_req left in F->ino. Returns its slot,
 * or -1 when the request has been answered: no free handle, a map that
 * cannot be read, or (with why_no_map) an inode without an extent map
 * (inline data, a device), refused with that reason. */
GPUOS_NOINLINE GPUOS_HD int files_open_inode(struct rt_files *F, const struct mreq *q, const char *why_no_map)
{
	const char *why = 0;
	int slot = files_alloc_handle(F, q), r;

	if (slot < 0)
		return -1;
	r = fill_handle(F, (uint32_t)slot, &why);
	if (!r && why_no_map && F->h[slot].map == H_MAP_META) {
		r = -EOPNOTSUPP;
		why = why_no_map;
	}
	if (r) {
		F->h[slot].kind = H_FREE;
		files_reply_err(F, q, r, 0, why);
		return -1;
	}
	return slot;
}

GPUOS_NOINLINE GPUOS_HD void files_op_open(struct rt_files *F, const struct mreq *q)
{
	int slot;

	if (q->flags & ~GPUOS_OPEN_NOFOLLOW) {
		files_reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	if (!files_lookup_read(F, q) || (slot = files_open_inode(F, q, 0)) < 0)
		return;
	files_reply(F, q, GPUOS_ST_OK, handle_number(&F->h[slot], (uint32_t)slot), F->h[slot].size, 0);
}

/* Close handle slot i; a model's shards with it. */
GPUOS_HD void files_free_handle(struct rt_files *F, uint32_t i)
{
	int32_t m = F->h[i].model;
	if (F->h[i].kind == H_MODEL && m >= 0 && (uint32_t)m < GPUOS_RT_MODELS) {
		const struct rt_model_files *mf = &F->mfiles[m];
		uint32_t k;
		for (k = 1; k < mf->n && k < GPUOS_RT_MODEL_SHARDS; k++) {
			const struct rt_handle *s = gpuos_rt_handle(F->d, mf->file[k], 1u << H_SHARD);
			if (s)
				F->h[s - F->h].kind = H_FREE;
		}
		F->model_owner[m] = 0;
	}
	F->h[i].model = -1;
	F->h[i].kind = H_FREE;
}

/* The open handle of the request, or NULL after replying BAD_HANDLE. */
GPUOS_HD struct rt_handle *files_req_handle(struct rt_files *F, const struct mreq *q, uint32_t mask)
{
	const struct rt_handle *hd = gpuos_rt_handle(F->d, q->handle, mask);
	if (!hd || !gpuos_rt_handle_owned(hd, gpuos_rt_ms_client(q->ms))) {
		files_reply(F, q, GPUOS_ST_BAD_HANDLE, 0, 0, 0);
		return 0;
	}
	return &F->h[hd - F->h];
}

GPUOS_NOINLINE GPUOS_HD void files_op_stat(struct rt_files *F, const struct mreq *q)
{
	struct gpuos_stat *o = (struct gpuos_stat *)(uintptr_t)q->dst;
	const struct gpuos_fs_inode *in;
	uint64_t next = 0, total = 0;
	uint32_t cap, n = 0;
	int r;

	if (q->flags & ~(GPUOS_OPEN_NOFOLLOW | GPUOS_STAT_HANDLE)) {
		files_reply(F, q, GPUOS_ST_BAD_FLAGS, 0, 0, 0);
		return;
	}
	if (!files_struct_dst(F, q, sizeof(*o), "destination shorter than struct gpuos_stat"))
		return;
	if (q->flags & GPUOS_STAT_HANDLE) {
		struct rt_handle *hd = files_req_handle(F, q, (1u << H_FILE) | (1u << H_DIR) | (1u << H_MODEL));
		if (!hd)
			return;
		if (hd->map == H_MAP_RAW) {
			files_reply(F, q, GPUOS_ST_BAD_HANDLE, 0, 0, "a raw GGUF has no inode");
			return;
		}
		F->ino = hd->inode;
		if (!need_fs(F, q))
			return;
	} else {
		if (!files_lookup_req(F, q))
			return;
	}
	in = &F->ino;
	cap = (uint32_t)GPUOS_MIN((q->length - sizeof(*o)) / sizeof(struct gpuos_extent), (uint64_t)UINT32_MAX);
	if (in->map == GPUOS_FS_MAP_EXTENTS) {
		/* Count every extent; write those from index q->offset on while they fit. */
		struct gpuos_fs_extent e;
		uint32_t got;
		while (next != GPUOS_FS_EXTENTS_END) {
			r = gpuos_fs_extents(&F->fs, in, next, &e, 1, &got, &next);
			if (r) {
				files_reply_err(F, q, r, 0, gpuos_fs_why(&F->fs));
				return;
			}
			if (got && total >= q->offset && n < cap) {
				o->ext[n].lblk = e.lblk;
				o->ext[n].pblk = e.pblk;
				o->ext[n].len = e.len;
				o->ext[n].flags = (e.flags & GPUOS_FS_EXT_UNWRITTEN) ? GPUOS_EXTENT_UNWRITTEN : 0;
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
	files_reply(F, q, GPUOS_ST_OK, n, total, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_readdir(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, (1u << H_FILE) | (1u << H_DIR));
	struct gpuos_dirent *o = (struct gpuos_dirent *)(uintptr_t)q->dst;
	uint64_t cookie = q->offset, cap;
	uint32_t n = 0, i;
	int r = 1;

	if (!hd)
		return;
	if (hd->kind != H_DIR) {
		files_reply(F, q, GPUOS_ST_NOTDIR, 0, 0, 0);
		return;
	}
	if (!files_struct_dst(F, q, sizeof(*o), "destination shorter than struct gpuos_dirent"))
		return;
	if (cookie == GPUOS_DIR_END) {
		files_reply(F, q, GPUOS_ST_OK, 0, GPUOS_DIR_END, 0);
		return;
	}
	if (!need_fs(F, q))
		return;
	cap = GPUOS_MIN(q->length / sizeof(*o), (uint64_t)READDIR_MAX);
	while (n < cap && (r = gpuos_fs_readdir(&F->fs, &hd->inode, &cookie, &F->de)) == 1) {
		o[n].ino = F->de.ino;
		o[n].type = F->de.type;
		o[n].name_len = F->de.name_len;
		o[n].rsvd06 = 0;
		for (i = 0; i <= F->de.name_len; i++)
			o[n].name[i] = F->de.name[i];
		n++;
	}
	if (r < 0) {
		files_reply_err(F, q, r, 0, gpuos_fs_why(&F->fs));
		return;
	}
	files_reply(F, q, GPUOS_ST_OK, n, r == 0 ? GPUOS_DIR_END : cookie, 0);
}

/* READ of a handle the service warps cannot map (inline data, symlinks). */
GPUOS_NOINLINE GPUOS_HD void files_op_read_meta(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, 1u << H_FILE);
	uint64_t len = q->length, done = 0;
	int r;

	if (!hd)
		return;
	if (q->offset >= hd->size) {
		files_reply(F, q, GPUOS_ST_OK, 0, 0, 0);
		return;
	}
	len = GPUOS_MIN(len, hd->size - q->offset);
	if (!q->dst || !files_req_mem(F, q, q->dst, len)) {
		files_reply(F, q, GPUOS_ST_BAD_DST, 0, 0, 0);
		return;
	}
	if (!need_fs(F, q))
		return;
	if (hd->inode.map == GPUOS_FS_MAP_NONE) {
		files_reply(F, q, GPUOS_ST_OK, 0, 0, 0);
		return;
	}
	while (done < len) {
		uint32_t got = 0, k = (uint32_t)GPUOS_MIN(len - done, (uint64_t)(1u << 20));
		r = gpuos_fs_read(&F->fs, &hd->inode, q->offset + done, k, (uint8_t *)(uintptr_t)q->dst + done, &got);
		if (r) {
			files_reply_err(F, q, r, 0, gpuos_fs_why(&F->fs));
			return;
		}
		if (got == 0)
			break;
		done += got;
	}
	files_reply(F, q, GPUOS_ST_OK, done, 0, 0);
}

GPUOS_NOINLINE GPUOS_HD void files_op_close(struct rt_files *F, const struct mreq *q)
{
	struct rt_handle *hd = files_req_handle(F, q, (1u << H_FILE) | (1u << H_DIR) | (1u << H_MODEL));
	if (!hd)
		return;
	files_free_handle(F, (uint32_t)(hd - F->h));
	files_reply(F, q, GPUOS_ST_OK, 0, 0, 0);
}

/* RELEASE: every handle of client share q->arg, closed as CLOSE closes one
 * (the service posts it when the client's connection ends). */
GPUOS_NOINLINE GPUOS_HD void files_op_release(struct rt_files *F, const struct mreq *q)
{
	uint32_t i, n = 0;
	if (gpuos_rt_ms_client(q->ms)) { /* the service warps refuse it first */
		files_reply(F, q, GPUOS_ST_DENIED, 0, 0, "only the service releases a share");
		return;
	}
	if (q->arg == 0 || q->arg > F->d->nshares) {
		files_reply(F, q, GPUOS_ST_BAD_RANGE, 0, 0, "no such client share");
		return;
	}
	for (i = 0; i < GPUOS_RT_HANDLES; i++)
		if (F->h[i].kind != H_FREE && F->h[i].kind != H_SHARD && F->h[i].share == q->arg) {
			files_free_handle(F, i); /* a model's shards with it */
			n++;
		}
	files_reply(F, q, GPUOS_ST_OK, n, 0, 0);
}
