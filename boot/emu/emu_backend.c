/* SPDX-License-Identifier: MIT */
/*
 * boot/emu/emu_backend.c - where the emulated namespace keeps its data:
 *   ram    the image read into memory, a chunk when a command first touches
 *          it; writes stay in memory
 *   file   preadv/pwritev on the image
 *   uring  io_uring, one ring per worker, a whole batch per submit; O_DIRECT
 *          where the file system allows and the request is aligned, the
 *          buffered descriptor otherwise
 *   null   no data: reads return zeros, writes vanish
 * The namespace is the image's size rounded down to whole LBAs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_internal.h"

/* O_DIRECT wants buffers, lengths and offsets aligned to the device's logical
 * block; 4096 covers every device in use and needs no probing. */
#define DIO_ALIGN 4096u

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

struct emu_uring {
	struct io_uring ring;
};

static int open_image(struct gpuos_emu *e, int flags, char *err, size_t errlen)
{
	int fd = open(e->o.path, flags | O_CLOEXEC);

	if (fd < 0) {
		int r = -errno;
		emu_errf(err, errlen, "emu: %s: %s", e->o.path, strerror(errno));
		return r;
	}
	return fd;
}

/* Image size through lseek, which also works for block devices. */
static int image_lbas(struct gpuos_emu *e, int fd, char *err, size_t errlen)
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0) {
		int r = -errno;
		emu_errf(err, errlen, "emu: %s: %s", e->o.path, strerror(errno));
		return r;
	}
	if (end == 0) {
		emu_errf(err, errlen, "emu: %s: the image is empty", e->o.path);
		return -EINVAL;
	}
	e->be->bytes = (uint64_t)end;
	return 0;
}

/* A member's namespace: alone, the image rounded up to whole LBAs; in an array of N,
 * ceil(image / (N * stripe)) chunks, the last row padded (reads as zeros). */
static void member_lbas(struct gpuos_emu *e)
{
	uint64_t bytes = e->be->bytes;

	if (e->arr_n <= 1) {
		/* a partial last LBA is served, its tail past the file as zeros */
		e->nlba = (bytes + (1ull << e->lba_shift) - 1) >> e->lba_shift;
		return;
	}
	uint64_t row = e->stripe_bytes * e->arr_n;
	e->nlba = (bytes / row + (bytes % row != 0)) * e->stripe_bytes >> e->lba_shift;
}

int emu_backend_share(struct gpuos_emu *e, struct emu_backend *be)
{
	__atomic_add_fetch(&be->refs, 1u, __ATOMIC_RELAXED);
	e->be = be;
	member_lbas(e);
	return 0;
}

/* Open read-write, or read-only where that is all we may (writes then fail
 * with Namespace is Write Protected). */
static int open_rw(struct gpuos_emu *e, int extra, char *err, size_t errlen)
{
	int fd = open(e->o.path, O_RDWR | O_CLOEXEC | extra);

	if (fd >= 0)
		return fd;
	if (errno == EACCES || errno == EROFS || errno == EPERM) {
		fd = open(e->o.path, O_RDONLY | O_CLOEXEC | extra);
		if (fd >= 0) {
			e->be->read_only = 1;
			return fd;
		}
	}
	if (extra)
		return -errno;   /* O_DIRECT is optional; the caller decides */
	int r = -errno;
	emu_errf(err, errlen, "emu: %s: %s", e->o.path, strerror(errno));
	return r;
}

static int backend_open(struct gpuos_emu *e, char *err, size_t errlen);

int emu_backend_open(struct gpuos_emu *e, char *err, size_t errlen)
{
	struct emu_backend *b = calloc(1, sizeof(*b));
	int r;

	if (!b) {
		emu_errf(err, errlen, "emu: out of memory");
		return -ENOMEM;
	}
	b->refs = 1;
	b->fd = b->fd_direct = -1;
	b->env = e->env;
	e->be = b;
	r = backend_open(e, err, errlen);
	if (!r)
		member_lbas(e);
	return r;
}

/* The ram backend reads the image into memory a chunk at a time, when a
 * command first touches the chunk: a tool that lists one directory of a
 * 20 MiB image read all of it first, 0.06 s of its 0.09 s of CPU (issue 35),
 * and a sparse image of many GiB costs only what is read. The image then
 * holds what the file held when each chunk was first touched (a file
 * replaced by rename keeps the one opened). A GPU process pins the memory
 * and loads it whole at open instead (ram_open). */
#define RAM_CHUNK_SHIFT 18u /* 256 KiB */
enum { RAM_CHUNK_ABSENT, RAM_CHUNK_LOADING, RAM_CHUNK_HERE };

/* Huge pages for the 2 MiB block of the ram image at off, where the kernel
 * grants them (THP "madvise"): each first write to a 4 KiB page is a fault,
 * each a hypervisor exit on a virtual machine; a loop of gpuos ls, stat and
 * cat of a 5 MiB file took 24 % less CPU (issue 35). Only blocks that hold
 * data: in an advised block a read fault too fills a whole zeroed 2 MiB page
 * (this kernel maps no huge zero page), so a sparse 4 GiB image read at 1024
 * holes took 2 GiB and 6 s of CPU. A hint: refused, the pages stay small. */
#define RAM_HUGE_SHIFT 21u /* 2 MiB: the block, aligned in the address space */
static void ram_huge(struct emu_backend *b, size_t off)
{
	uintptr_t lo = (uintptr_t)b->ram, hi = lo + b->ram_len;
	uintptr_t block = (lo + off) >> RAM_HUGE_SHIFT, at = GPUOS_MAX(block << RAM_HUGE_SHIFT, lo);

	/* once a block (a second advice, by a racing worker, is harmless):
	 * each advice splits or merges the mapping's areas */
	if (__atomic_exchange_n(&b->ram_huge[block - (lo >> RAM_HUGE_SHIFT)], 1, __ATOMIC_RELAXED))
		return;
	(void)madvise((void *)at, GPUOS_MIN(hi, (block + 1) << RAM_HUGE_SHIFT) - at, MADV_HUGEPAGE);
}

/* Chunk k from the file; past the file's end (it may have shrunk since
 * open) and in a chunk that is all hole the zeros of the anonymous pages
 * stay, untouched: a sparse image costs neither time nor memory for its
 * holes. Where SEEK_DATA is not known, everything is read. */
static int ram_chunk_load(struct emu_backend *b, size_t k)
{
	size_t off = k << RAM_CHUNK_SHIFT;
	size_t end = GPUOS_MIN(off + ((size_t)1 << RAM_CHUNK_SHIFT), b->ram_img);
	off_t data;

	if (off >= end)
		return 0; /* padding past the image */
	data = lseek(b->fd, (off_t)off, SEEK_DATA);
	if ((data < 0 && errno == ENXIO) || (data >= 0 && (size_t)data >= end))
		return 0; /* a hole to the chunk's end */
	ram_huge(b, off);
	while (off < end) {
		ssize_t n = pread(b->fd, b->ram + off, end - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	return 0;
}

int emu_ram_ready(struct emu_backend *b, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	for (size_t k = (size_t)(off >> RAM_CHUNK_SHIFT); k <= (size_t)((off + len - 1) >> RAM_CHUNK_SHIFT); k++) {
		uint32_t spins = 0;
		for (;;) {
			/* acquire: pairs with the loader's release below, so
			 * the chunk's bytes are seen once it says HERE */
			uint8_t st = __atomic_load_n(&b->ram_chunk[k], __ATOMIC_ACQUIRE), want = RAM_CHUNK_ABSENT;
			if (st == RAM_CHUNK_HERE)
				break;
			/* the CAS elects one loader; it publishes nothing */
			if (st == RAM_CHUNK_ABSENT &&
			    __atomic_compare_exchange_n(&b->ram_chunk[k], &want, RAM_CHUNK_LOADING, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
				int r = ram_chunk_load(b, k);
				/* release: publishes the chunk's bytes to the acquire
				 * above; a failed load leaves it to the next command */
				__atomic_store_n(&b->ram_chunk[k], r ? RAM_CHUNK_ABSENT : RAM_CHUNK_HERE, __ATOMIC_RELEASE);
				if (r)
					return r;
				break;
			}
			gpuos_backoff(&spins); /* another worker is loading it */
		}
	}
	return 0;
}

/* The ram backend: the image in anonymous memory, loaded chunk by chunk
 * on first use (emu_ram_ready), or whole where it is pinned. */
static int ram_open(struct gpuos_emu *e, char *err, size_t errlen)
{
	struct emu_backend *b = e->be;
	int r;
	int fd = open_image(e, O_RDONLY, err, errlen);

	if (fd < 0)
		return fd;
	r = image_lbas(e, fd, err, errlen);
	if (r) {
		close(fd);
		return r;
	}
	/* alone: whole LBAs, the last one's tail zeros; in an array: whole
	 * stripe rows, the padding zeros */
	b->ram_len = (size_t)GPUOS_ALIGN_UP(b->bytes, 1ull << e->lba_shift);
	if (e->arr_n > 1) {
		uint64_t row = e->stripe_bytes * e->arr_n;
		b->ram_len = (size_t)((b->bytes / row + (b->bytes % row != 0)) * row);
	}
	/* anonymous pages: a large image costs only what it holds */
	b->ram = mmap(NULL, b->ram_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		      MAP_NORESERVE, -1, 0);
	if (b->ram == MAP_FAILED) {
		b->ram = NULL;
		close(fd);
		emu_errf(err, errlen, "emu: %s: cannot allocate %zu bytes for the ram backend",
			 e->o.path, b->ram_len);
		return -ENOMEM;
	}
	b->ram_img = (size_t)GPUOS_MIN((uint64_t)b->ram_len, b->bytes);
	b->ram_chunk = calloc((b->ram_len >> RAM_CHUNK_SHIFT) + 1u, 1);
	b->ram_huge = calloc((b->ram_len >> RAM_HUGE_SHIFT) + 2u, 1);
	if (!b->ram_chunk || !b->ram_huge) {
		close(fd);
		emu_errf(err, errlen, "emu: out of memory");
		return -ENOMEM;
	}
	b->fd = fd; /* kept for the chunks still to load */
	/* pinned and mapped: a read into VRAM is then one transfer from
	 * here (docs/emulator.md, "The DMA engine"); without it, reads
	 * stage through pinned memory. Loaded whole first: no file read
	 * on a transfer's way */
	if (b->env.host_register && b->env.dma_mark) {
		r = emu_ram_ready(b, 0, b->ram_len);
		if (r) {
			emu_errf(err, errlen, "emu: %s: %s", e->o.path, strerror(-r));
			return r;
		}
		b->ram_registered = b->env.host_register(b->env.ctx, b->ram, b->ram_len) == 0;
	}
	return 0;
}

static int backend_open(struct gpuos_emu *e, char *err, size_t errlen)
{
	struct emu_backend *b = e->be;
	int r;

	switch (e->o.backend) {
	case GPUOS_EMU_NULL:
		b->bytes = e->o.null_bytes;
		return 0;
	case GPUOS_EMU_RAM:
		return ram_open(e, err, errlen);
	case GPUOS_EMU_FILE:
	case GPUOS_EMU_URING:
		b->fd = open_rw(e, 0, err, errlen);
		if (b->fd < 0) {
			r = b->fd;
			b->fd = -1;
			return r;
		}
		r = image_lbas(e, b->fd, err, errlen);
		if (r)
			return r;
		if (e->o.backend == GPUOS_EMU_URING && e->o.direct) {
			/* tmpfs and some others refuse O_DIRECT: then buffered only */
			int fd = open(e->o.path, (b->read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC);
			b->fd_direct = fd >= 0 ? fd : -1;
		}
		return 0;
	}
	emu_errf(err, errlen, "emu: backend: unknown backend %d", (int)e->o.backend);
	return -EINVAL;
}

void emu_backend_close(struct gpuos_emu *e)
{
	struct emu_backend *b = e->be;

	e->be = NULL;
	if (!b || __atomic_sub_fetch(&b->refs, 1u, __ATOMIC_ACQ_REL))
		return;
	if (b->ram_registered)
		b->env.host_unregister(b->env.ctx, b->ram);
	if (b->ram)
		munmap(b->ram, b->ram_len);
	free(b->ram_chunk);
	free(b->ram_huge);
	if (b->fd_direct >= 0)
		close(b->fd_direct);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

int emu_backend_worker_init(struct gpuos_emu *e, struct emu_worker *w)
{
	if (e->o.backend != GPUOS_EMU_URING)
		return 0;
	w->ur = calloc(1, sizeof(*w->ur));
	if (!w->ur)
		return -ENOMEM;
	int r = io_uring_queue_init(8 * EMU_BATCH, &w->ur->ring, 0);
	if (r) {
		free(w->ur);
		w->ur = NULL;
	}
	return r;
}

void emu_backend_worker_fini(struct gpuos_emu *e, struct emu_worker *w)
{
	(void)e;
	if (w->ur) {
		io_uring_queue_exit(&w->ur->ring);
		free(w->ur);
		w->ur = NULL;
	}
}

/* ---- helpers ---- */

static void iov_fill(struct iovec *iov, int cnt, int byte)
{
	for (int i = 0; i < cnt; i++)
		memset(iov[i].iov_base, byte, iov[i].iov_len);
}

static int ram_rw(struct emu_backend *b, struct emu_bio *bio)
{
	uint8_t *p = b->ram + bio->off;
	int r = emu_ram_ready(b, bio->off, bio->len);

	if (r)
		return r;
	for (int i = 0; i < bio->iovcnt; i++) {
		if (bio->op == EMU_OP_READ)
			memcpy(bio->iov[i].iov_base, p, bio->iov[i].iov_len);
		else
			memcpy(p, bio->iov[i].iov_base, bio->iov[i].iov_len);
		p += bio->iov[i].iov_len;
	}
	return 0;
}

/* preadv/pwritev until done, advancing over short transfers; bytes past the
 * end of the file read as zeros. skip: bytes already moved. */
static int rw_full(int fd, const struct emu_bio *bio, size_t skip)
{
	struct iovec v[64];
	int i = 0;
	size_t off_in = skip;

	/* find where the first unfinished byte lies */
	while (i < bio->iovcnt && off_in >= bio->iov[i].iov_len) {
		off_in -= bio->iov[i].iov_len;
		i++;
	}
	uint64_t pos = bio->off + skip;
	while (i < bio->iovcnt) {
		int n = 0;
		for (int k = i; k < bio->iovcnt && n < (int)GPUOS_ARRAY_SIZE(v); k++, n++) {
			v[n] = bio->iov[k];
			if (k == i) {
				v[n].iov_base = (uint8_t *)v[n].iov_base + off_in;
				v[n].iov_len -= off_in;
			}
		}
		ssize_t r = bio->op == EMU_OP_READ ? preadv(fd, v, n, (off_t)pos) :
						     pwritev(fd, v, n, (off_t)pos);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) {
			if (bio->op != EMU_OP_READ)
				return -EIO;
			/* the image shrank under us: the rest reads as zeros */
			for (int k = 0; k < n; k++)
				memset(v[k].iov_base, 0, v[k].iov_len);
			r = 0;
			for (int k = 0; k < n; k++)
				r += (ssize_t)v[k].iov_len;
		}
		pos += (uint64_t)r;
		size_t left = (size_t)r;
		while (i < bio->iovcnt && left) {
			size_t have = bio->iov[i].iov_len - off_in;
			if (left >= have) {
				left -= have;
				off_in = 0;
				i++;
			} else {
				off_in += left;
				left = 0;
			}
		}
	}
	return 0;
}

static int file_one(struct gpuos_emu *e, struct emu_bio *bio)
{
	struct emu_backend *b = e->be;

	if (bio->op == EMU_OP_FLUSH)
		return fdatasync(b->fd) ? -errno : 0;
	if (bio->op == EMU_OP_WRITE && b->read_only)
		return -EROFS;
	return rw_full(b->fd, bio, 0);
}

static int dio_ok(const struct emu_bio *bio)
{
	if ((bio->off | bio->len) & (DIO_ALIGN - 1))
		return 0;
	for (int i = 0; i < bio->iovcnt; i++)
		if (((uintptr_t)bio->iov[i].iov_base | bio->iov[i].iov_len) & (DIO_ALIGN - 1))
			return 0;
	return 1;
}

static void uring_batch(struct gpuos_emu *e, struct emu_worker *w, struct emu_bio *bios, unsigned n)
{
	struct emu_backend *b = e->be;
	struct io_uring *ring = &w->ur->ring;
	unsigned queued = 0;

	for (unsigned i = 0; i < n; i++) {
		struct emu_bio *bio = &bios[i];
		bio->res = 1;   /* not done yet */
		if (bio->op == EMU_OP_WRITE && b->read_only) {
			bio->res = -EROFS;
			continue;
		}
		if (bio->iovcnt > IOV_MAX) {
			bio->res = file_one(e, bio);
			continue;
		}
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		if (!sqe) {
			bio->res = file_one(e, bio);
			continue;
		}
		int direct = bio->op != EMU_OP_FLUSH && b->fd_direct >= 0 && dio_ok(bio);
		int fd = direct ? b->fd_direct : b->fd;
		if (bio->op == EMU_OP_READ)
			io_uring_prep_readv(sqe, fd, bio->iov, (unsigned)bio->iovcnt, bio->off);
		else if (bio->op == EMU_OP_WRITE)
			io_uring_prep_writev(sqe, fd, bio->iov, (unsigned)bio->iovcnt, bio->off);
		else
			io_uring_prep_fsync(sqe, b->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data(sqe, bio);
		queued++;
	}
	if (!queued)
		return;
	int r = io_uring_submit_and_wait(ring, queued);
	if (r < 0) {
		/* nothing usable from the ring this time: the synchronous path does it */
		for (unsigned i = 0; i < n; i++)
			if (bios[i].res == 1)
				bios[i].res = file_one(e, &bios[i]);
		return;
	}
	while (queued) {
		struct io_uring_cqe *cqe;
		r = io_uring_wait_cqe(ring, &cqe);
		if (r < 0) {
			if (r == -EINTR)
				continue;
			break;
		}
		struct emu_bio *bio = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		queued--;
		if (res < 0) {
			/* O_DIRECT refused this request (alignment the fs wants more of,
			 * ...): retry it buffered; a real I/O error fails there too */
			bio->res = file_one(e, bio);
		} else if (bio->op != EMU_OP_FLUSH && (size_t)res < bio->len) {
			bio->res = rw_full(b->fd, bio, (size_t)res);   /* short: finish it */
		} else {
			bio->res = 0;
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (bios[i].res == 1)
			bios[i].res = file_one(e, &bios[i]);
}

void emu_backend_exec(struct gpuos_emu *e, struct emu_worker *w, struct emu_bio *b, unsigned n)
{
	struct emu_backend *be = e->be;

	switch (e->o.backend) {
	case GPUOS_EMU_NULL:
		for (unsigned i = 0; i < n; i++) {
			if (b[i].op == EMU_OP_READ)
				iov_fill(b[i].iov, b[i].iovcnt, 0);
			b[i].res = 0;
		}
		return;
	case GPUOS_EMU_RAM:
		for (unsigned i = 0; i < n; i++) {
			b[i].res = b[i].op == EMU_OP_READ || b[i].op == EMU_OP_WRITE ? ram_rw(be, &b[i]) : 0;
		}
		return;
	case GPUOS_EMU_URING:
		if (w && w->ur) {
			uring_batch(e, w, b, n);
			return;
		}
		/* the controller's shutdown flush has no ring: fall through */
		/* fallthrough */
	case GPUOS_EMU_FILE:
		for (unsigned i = 0; i < n; i++)
			b[i].res = file_one(e, &b[i]);
		return;
	}
}
