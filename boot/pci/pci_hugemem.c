/* SPDX-License-Identifier: MIT */
/*
 * DMA memory for the pci: controller under uio_pci_generic, where no IOMMU
 * translates: the controller is given physical addresses, so every buffer
 * must be physically contiguous (queues too: CAP.CQR) and must stay where it
 * is. Hugepages give both: a 2 MiB page is contiguous and the kernel does not
 * swap it; buffers larger than one page need a run of hugepages that are
 * physically consecutive, which we find and then map in physical order at
 * consecutive virtual addresses (the trick DPDK uses), through a hugetlb
 * memfd whose pages we can map one by one.
 *
 * Physical addresses come from /proc/self/pagemap, which shows them only to
 * CAP_SYS_ADMIN (root).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuos/port.h"
#include "pci_internal.h"

#define SMALL_ALIGN 4096u
#define MAX_TRY_PAGES 1024u

struct region {
	struct region *next;
	char *va;
	size_t len;            /* whole hugepages */
	uint64_t pa;           /* physical address of va */
	size_t used;           /* bump offset for small allocations */
	unsigned refs;
	int shared;            /* small allocations may still be carved from it */
};

struct gpuos_hugemem {
	size_t page;           /* hugepage size */
	int pagemap;
	struct region *regions;
	uint64_t bytes;
};

static int meminfo(const char *key, unsigned long long *v)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	size_t kl = strlen(key);
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':' && sscanf(line + kl + 1, "%llu", v) == 1) {
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

/* Physical address of a present page through pagemap (bits 0-54 PFN, 63 present). */
static int phys_of(struct gpuos_hugemem *h, const void *va, uint64_t *pa)
{
	uint64_t e, v = (uint64_t)(uintptr_t)va;
	if (pread(h->pagemap, &e, sizeof(e), (off_t)(v / 4096u * sizeof(e))) != (ssize_t)sizeof(e))
		return -EIO;
	if (!(e >> 63))
		return -EFAULT;
	e &= (1ull << 55) - 1u;
	if (e == 0)
		return -EPERM; /* the kernel hides PFNs without CAP_SYS_ADMIN */
	*pa = e * 4096u + v % 4096u;
	return 0;
}

int gpuos_hugemem_create(struct gpuos_hugemem **out, char *why, size_t whylen)
{
	struct gpuos_hugemem *h;
	unsigned long long kib = 0, nfree = 0;
	uint64_t pa;
	char probe[1];
	int r;

	*out = NULL;
	if (meminfo("Hugepagesize", &kib) || kib == 0) {
		snprintf(why, whylen, "uio needs hugepages, and this kernel has none (CONFIG_HUGETLBFS)");
		return -EOPNOTSUPP;
	}
	if (meminfo("HugePages_Free", &nfree) || nfree == 0) {
		snprintf(why, whylen,
			 "uio needs hugepages for DMA memory and none is free (echo 64 > /proc/sys/vm/nr_hugepages)");
		return -ENOMEM;
	}
	h = (struct gpuos_hugemem *)calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->page = (size_t)kib * 1024u;
	h->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (h->pagemap < 0) {
		snprintf(why, whylen, "open /proc/self/pagemap: %s", strerror(errno));
		free(h);
		return -EPERM;
	}
	probe[0] = 1; /* a present page of our own, to see whether PFNs are shown */
	r = phys_of(h, probe, &pa);
	if (r) {
		snprintf(why, whylen, "uio needs physical addresses from /proc/self/pagemap, which %s",
			 r == -EPERM ? "shows them to root only (CAP_SYS_ADMIN)" : "cannot be read");
		close(h->pagemap);
		free(h);
		return -EPERM;
	}
	*out = h;
	return 0;
}

static void region_free(struct gpuos_hugemem *h, struct region *g)
{
	munmap(g->va, g->len);
	h->bytes -= g->len;
	free(g);
}

void gpuos_hugemem_destroy(struct gpuos_hugemem *h)
{
	if (!h)
		return;
	while (h->regions) {
		struct region *g = h->regions;
		h->regions = g->next;
		region_free(h, g);
	}
	close(h->pagemap);
	free(h);
}

uint64_t gpuos_hugemem_bytes_mapped(const struct gpuos_hugemem *h)
{
	return h ? h->bytes : 0;
}

struct page_pa {
	uint64_t pa;
	size_t idx;            /* page index in the memfd */
};

static int cmp_pa(const void *a, const void *b)
{
	const struct page_pa *x = (const struct page_pa *)a, *y = (const struct page_pa *)b;
	return x->pa < y->pa ? -1 : x->pa > y->pa;
}

/* The first `want` physically consecutive pages of the `have` in p
 * (sorted by address here): *start, or -EAGAIN when there are none. */
static int find_run(struct page_pa *p, size_t have, size_t want, size_t pg, size_t *start)
{
	size_t i, run = 0;

	qsort(p, have, sizeof(*p), cmp_pa);
	for (i = 0; i < have; i++) {
		if (i == 0 || p[i].pa != p[i - 1].pa + pg)
			*start = i, run = 0;
		if (++run == want)
			break;
	}
	return run < want ? -EAGAIN : 0;
}

/* The run's `want` pages of the memfd at consecutive virtual addresses,
 * hugepage aligned, in physical order: *base, checked page by page. */
static int map_in_order(struct gpuos_hugemem *h, int fd, const struct page_pa *run, size_t want, char **base_out)
{
	size_t pg = h->page, i;
	char *resv, *base;
	int r = 0;

	resv = (char *)mmap(NULL, (want + 1) * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (resv == MAP_FAILED)
		return -ENOMEM;
	base = (char *)GPUOS_ALIGN_UP((uintptr_t)resv, (uintptr_t)pg);
	for (i = 0; i < want; i++) {
		void *m = mmap(base + i * pg, pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
			       (off_t)(run[i].idx * pg));
		if (m == MAP_FAILED) {
			r = -errno;
			munmap(resv, (want + 1) * pg);
			return r;
		}
	}
	if (base > resv)
		munmap(resv, (size_t)(base - resv));
	if (base + want * pg < resv + (want + 1) * pg)
		munmap(base + want * pg, (size_t)(resv + (want + 1) * pg - (base + want * pg)));
	/* Check what the controller will rely on, page by page. */
	for (i = 0; i < want && !r; i++) {
		uint64_t pa;
		base[i * pg] = 0;
		r = phys_of(h, base + i * pg, &pa);
		if (!r && pa != run[0].pa + i * pg)
			r = -EAGAIN;
	}
	if (r) {
		munmap(base, want * pg);
		return r;
	}
	*base_out = base;
	return 0;
}

/* One attempt: `have` hugepages in a memfd; if `want` of them are physically
 * consecutive, map those in order at *va. 0, -EAGAIN (no run), or -errno. */
static int try_run(struct gpuos_hugemem *h, size_t have, size_t want, char **va_out, uint64_t *pa_out)
{
	size_t pg = h->page, i, start = 0;
	struct page_pa *p = NULL;
	char *tmp = (char *)MAP_FAILED, *base = NULL;
	int fd, r = 0;

	fd = memfd_create("gpuos-dma", MFD_HUGETLB | MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(have * pg))) {
		r = -errno;
		goto out;
	}
	/* The reservation is made here: without enough free hugepages this
	 * fails with ENOMEM rather than a SIGBUS on first touch. */
	tmp = (char *)mmap(NULL, have * pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (tmp == MAP_FAILED) {
		r = errno == EINVAL ? -ENOMEM : -errno;
		goto out;
	}
	p = (struct page_pa *)calloc(have, sizeof(*p));
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < have; i++) {
		tmp[i * pg] = 0; /* present, in case MAP_POPULATE left it out */
		p[i].idx = i;
		if ((r = phys_of(h, tmp + i * pg, &p[i].pa)))
			goto out;
	}
	r = find_run(p, have, want, pg, &start);
	if (!r)
		r = map_in_order(h, fd, p + start, want, &base);
	if (r)
		goto out;
	*va_out = base;
	*pa_out = p[start].pa;
	/* The mappings keep the memfd alive after close: give back the pages
	 * of it that are not part of the run. */
	for (i = 0; i < have; i++)
		if (i < start || i >= start + want)
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(p[i].idx * pg), (off_t)pg);
out:
	free(p);
	if (tmp != (char *)MAP_FAILED)
		munmap(tmp, have * pg);
	close(fd);
	return r;
}

static int region_new(struct gpuos_hugemem *h, size_t npages, struct region **out)
{
	struct region *g;
	size_t have = npages;
	char *va = NULL;
	uint64_t pa = 0;
	int r;

	/* Fresh pools are often consecutive (in some order); when not, ask for
	 * more pages at once and look for a run among them. */
	for (;;) {
		unsigned long long nfree = 0;
		r = try_run(h, have, npages, &va, &pa);
		if (r != -EAGAIN || have >= MAX_TRY_PAGES || meminfo("HugePages_Free", &nfree) || nfree <= have)
			break;
		have = GPUOS_MIN(have * 2 + 2, (size_t)nfree);
	}
	if (r)
		return r == -EAGAIN ? -ENOMEM : r;
	g = (struct region *)calloc(1, sizeof(*g));
	if (!g) {
		munmap(va, npages * h->page);
		return -ENOMEM;
	}
	g->va = va;
	g->len = npages * h->page;
	g->pa = pa;
	g->next = h->regions;
	h->regions = g;
	h->bytes += g->len;
	*out = g;
	return 0;
}

int gpuos_hugemem_alloc(struct gpuos_hugemem *h, size_t len, void **host, uint64_t *phys)
{
	struct region *g;
	size_t off;
	int r;

	len = GPUOS_ALIGN_UP(len, (size_t)SMALL_ALIGN);
	if (len == 0)
		return -EINVAL;
	if (len < h->page / 2) {
		/* Small: queues, PRP pages; carved from a shared hugepage. */
		for (g = h->regions; g; g = g->next)
			if (g->shared && g->len - g->used >= len)
				break;
		if (!g) {
			if ((r = region_new(h, 1, &g)))
				return r;
			g->shared = 1;
		}
		off = g->used;
		g->used += len;
	} else {
		if ((r = region_new(h, (len + h->page - 1u) / h->page, &g)))
			return r;
		off = 0;
		g->used = g->len;
	}
	g->refs++;
	memset(g->va + off, 0, len);
	*host = g->va + off;
	*phys = g->pa + off;
	return 0;
}

void gpuos_hugemem_free(struct gpuos_hugemem *h, void *host)
{
	struct region **pp, *g;
	for (pp = &h->regions; (g = *pp); pp = &g->next) {
		if ((char *)host < g->va || (char *)host >= g->va + g->len)
			continue;
		if (--g->refs == 0) {
			*pp = g->next;
			region_free(h, g);
		}
		return;
	}
}
