/* SPDX-License-Identifier: MIT */
/*
 * bench/layer_base.cu - the CPU path of layer streaming, the baseline that
 * apps/layer_stream is compared with: the layers of a GGUF file go through
 * the CPU into two VRAM slots, double buffered, and a kernel computes each
 * layer's checksum (gpuos/bench.h) while the next one loads.
 *
 *   layer-base PATH --table TABLE --path mmap|uring [--resident R]
 *              [--qd 32] [--bs-kib 1024] [--chunk-mib 8] [--buffered]
 *
 * TABLE: one tensor a line, "LAYER RANK ABS_OFFSET BYTES" (decimal; empty
 * and '#' lines skipped), a layer's lines together, layers ascending, RANK
 * 0, 1, ... in file order. A layer moves as one span, from its first
 * tensor's byte to its last one's end.
 *   mmap:  one thread memcpys the span from an mmap of the file, chunk-mib
 *          at a time, into two pinned buffers in turn, each sent with
 *          cudaMemcpyAsync (ntransformer's path).
 *   uring: liburing reads of bs-kib under O_DIRECT, qd in flight, into
 *          pinned buffers; each one read goes to the slot by cudaMemcpyAsync
 *          and is read into again once that copy has landed. --buffered:
 *          without O_DIRECT, through the page cache (tmpfs has no O_DIRECT).
 * The first R layers are loaded before the clock starts and stay in VRAM.
 *
 * Timed: one pass over all layers, from the first load (or kernel) to the
 * last kernel's end. Per layer (CUDA events), load_ms is from the copy
 * stream reaching the layer to its last copy landing, compute_ms the
 * kernel. The first and last layers' checksums are compared with the CPU's.
 * One JSON object on stdout; any failure, a missing GPU included: one line
 * on stderr and exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "bench_util.h"
#include "gpuos/bench.h"

#define MIB (1ull << 20)
#define BLOCK 256
#define CHUNK ((uint64_t)GPUOS_BENCH_CHUNK)


static const char *path;
static int fd, dfd = -1;          /* the file: buffered; O_DIRECT (uring) */

static void pread_full(char *buf, uint64_t len, uint64_t off)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, (off_t)off);
		if (r <= 0)
			die("%s: pread at %llu: %s", path, (unsigned long long)off, r ? strerror(errno) : "ends early");
		buf += r, off += (uint64_t)r, len -= (uint64_t)r;
	}
}

/* ---- the table -------------------------------------------------------------------- */

struct dten {              /* one tensor, as the kernel sees it */
	uint64_t chunk0;   /* its first chunk among the layer's */
	uint64_t off;      /* where it starts in the slot (in the file while the table is read) */
	uint64_t bytes;
};

struct layer {
	uint32_t id, t0, nt;      /* LAYER; its tensors are ten[t0, t0 + nt) */
	uint64_t start, end, chunks;
	char *res;                /* resident: its own VRAM */
	cudaEvent_t ev[4];        /* load start, load end, kernel start, kernel end */
	float load_ms, compute_ms;
	unsigned long long sum;
};

static struct dten *ten;
static struct layer *lay;
static uint32_t nten, nlay;

/* The next decimal field of table line `ln`. */
static uint64_t field(char **s, const char *tab, unsigned ln, const char *what)
{
	char *end;
	unsigned long long v;
	*s += strspn(*s, " \t");
	errno = 0;
	v = strtoull(*s, &end, 10);
	if (**s < '0' || **s > '9' || errno || (*end && !strchr(" \t\r\n", *end)))
		die("%s:%u: %s: missing or not a whole decimal number (want LAYER RANK ABS_OFFSET BYTES)", tab, ln, what);
	*s = end;
	return v;
}

static void read_table(const char *tab, uint64_t fsize)
{
	FILE *f = fopen(tab, "r");
	char *line = NULL, *s;
	size_t cap = 0, tcap = 0, lcap = 0;
	unsigned ln = 0;
	uint32_t i, k;
	if (!f)
		die("%s: %s", tab, strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		uint64_t id, rank, off, bytes;
		struct layer *l = nlay ? &lay[nlay - 1] : NULL;
		s = line + strspn(line, " \t");
		ln++;
		if (!*s || strchr("#\r\n", *s))
			continue;
		id = field(&s, tab, ln, "LAYER");
		rank = field(&s, tab, ln, "RANK");
		off = field(&s, tab, ln, "ABS_OFFSET");
		bytes = field(&s, tab, ln, "BYTES");
		if (s[strspn(s, " \t\r\n")])
			die("%s:%u: more than four fields", tab, ln);
		if (id > 0xffffffffu || off > fsize || bytes > fsize - off)
			die("%s:%u: layer %llu: %llu bytes at %llu lie past the end of %s (%llu bytes)", tab, ln,
			    (unsigned long long)id, (unsigned long long)bytes, (unsigned long long)off, path,
			    (unsigned long long)fsize);
		if (!l || id > l->id) {
			if (rank)
				die("%s:%u: layer %llu starts with rank %llu, not 0", tab, ln, (unsigned long long)id,
				    (unsigned long long)rank);
			if (nlay == lcap && !(lay = (struct layer *)realloc(lay, (lcap = lcap * 2 + 16) * sizeof(*lay))))
				die("out of memory");
			l = &lay[nlay++];
			memset(l, 0, sizeof(*l));
			l->id = (uint32_t)id, l->t0 = nten, l->start = off;
		} else if (id < l->id) {
			die("%s:%u: layer %llu after layer %u: layers ascend, each one's lines together", tab, ln,
			    (unsigned long long)id, l->id);
		} else if (rank != l->nt) {
			die("%s:%u: layer %u: rank %llu where %u comes next", tab, ln, l->id, (unsigned long long)rank, l->nt);
		}
		if (nten == tcap && !(ten = (struct dten *)realloc(ten, (tcap = tcap * 2 + 256) * sizeof(*ten))))
			die("out of memory");
		ten[nten].off = off, ten[nten++].bytes = bytes;
		l->nt++;
		l->start = GPUOS_MIN(l->start, off);
		l->end = GPUOS_MAX(l->end, off + bytes);
	}
	if (ferror(f) || !nlay)
		die("%s: %s", tab, ferror(f) ? strerror(errno) : "no tensors");
	fclose(f);
	free(line);
	for (i = 0; i < nlay; i++)
		for (k = 0; k < lay[i].nt; k++) {
			struct dten *t = &ten[lay[i].t0 + k];
			t->off -= lay[i].start;
			/* gpuos_bench_crc32 reads 32-bit words from each chunk's start. */
			if (t->off % 4)
				die("%s: layer %u rank %u starts %llu bytes into the layer: not 4-byte aligned", tab,
				    lay[i].id, k, (unsigned long long)t->off);
			t->chunk0 = lay[i].chunks;
			lay[i].chunks += (t->bytes + CHUNK - 1) / CHUNK;
		}
}

/* ---- the kernel --------------------------------------------------------------------- */

/* The layer's checksum into *out: a thread a chunk (grid-stride), each one
 * finding its tensor by binary search over the tensors' first chunks. */
__global__ void layer_sum(const uint8_t *slot, const struct dten *t, uint32_t nt, uint64_t chunks,
			  unsigned long long *out)
{
	__shared__ uint32_t tab[16];
	__shared__ unsigned long long part[BLOCK / 32];
	unsigned long long sum = 0;
	uint64_t g, c;
	uint32_t w, lo, hi, mid;
	if (threadIdx.x == 0)
		gpuos_bench_crc_table(tab);
	__syncthreads();
	for (g = (uint64_t)blockIdx.x * BLOCK + threadIdx.x; g < chunks; g += (uint64_t)gridDim.x * BLOCK) {
		/* The last tensor whose first chunk is <= g: empty tensors pass themselves over. */
		for (lo = 0, hi = nt - 1; lo < hi;) {
			mid = (lo + hi + 1) / 2;
			if (t[mid].chunk0 <= g)
				lo = mid;
			else
				hi = mid - 1;
		}
		c = g - t[lo].chunk0;
		sum += gpuos_bench_chunk_term(slot + t[lo].off + c * CHUNK, GPUOS_MIN(CHUNK, t[lo].bytes - c * CHUNK), c, lo,
					      tab);
	}
	for (w = 16; w; w >>= 1)
		sum += __shfl_down_sync(0xffffffffu, sum, w);
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = sum;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (w = 1; w < BLOCK / 32; w++)
			sum += part[w];
		atomicAdd(out, sum);
	}
}

/* ---- the loads: a layer's span into a slot, copies on the copy stream ------------------ */

static cudaStream_t cs, ks;       /* copy stream, compute stream */

/* mmap: two staging buffers, used in turn across layers. */
static const char *map;
static uint64_t chunk = 8 * MIB;
static char *mbuf[2];
static cudaEvent_t mev[2];
static unsigned mnext;

static uint64_t load_mmap(const struct layer *l, char *slot)
{
	uint64_t off, n;
	for (off = l->start; off < l->end; off += n) {
		unsigned b = mnext++ & 1;
		n = GPUOS_MIN(chunk, l->end - off);
		/* Its last copy must have left before it is overwritten (one never recorded passes). */
		ck(cudaEventSynchronize(mev[b]), "cudaEventSynchronize");
		memcpy(mbuf[b], map + off, n);
		ck(cudaMemcpyAsync(slot + (off - l->start), mbuf[b], n, cudaMemcpyHostToDevice, cs), "cudaMemcpyAsync");
		ck(cudaEventRecord(mev[b], cs), "cudaEventRecord");
	}
	return l->end - l->start;
}

/* uring: qd pieces, each a pinned buffer of bs. */
enum { P_FREE, P_READING, P_COPYING };
struct piece {
	char *buf;
	uint64_t off, len, need, got;   /* reads [off, off + len) of the file; the span needs `need` of it */
	int state;
	cudaEvent_t ev;
};
static struct io_uring ring;
static struct piece *pc;
static unsigned qd = 32;
static uint64_t bs = 1024 << 10;

static void submit(struct piece *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		die("io_uring: no free submission entry");
	io_uring_prep_read(sqe, dfd, p->buf + p->got, (unsigned)(p->len - p->got), p->off + p->got);
	io_uring_sqe_set_data(sqe, p);
	p->state = P_READING;
}

/* Frees the pieces whose copy has landed; with `block`, waits for one. */
static void reap(int block)
{
	cudaError_t e;
	unsigned i;
	for (i = 0; i < qd; i++) {
		if (pc[i].state != P_COPYING)
			continue;
		e = block ? cudaEventSynchronize(pc[i].ev) : cudaEventQuery(pc[i].ev);
		if (e == cudaErrorNotReady)
			continue;
		ck(e, "cudaEventQuery");
		pc[i].state = P_FREE;
		block = 0;
	}
}

static uint64_t load_uring(const struct layer *l, char *slot)
{
	/* O_DIRECT reads whole 4 KiB blocks; the file's last one comes back short. */
	uint64_t next = l->start & ~4095ull, stop = (l->end + 4095) & ~4095ull, copied = 0, lo, hi;
	unsigned reading = 0, queued, i;
	struct io_uring_cqe *cqe;
	struct piece *p;
	int r;
	for (;;) {
		reap(0);
		for (i = 0, queued = 0; i < qd && next < stop; i++) {
			if ((p = &pc[i])->state != P_FREE)
				continue;
			p->off = next, p->got = 0;
			p->len = GPUOS_MIN(bs, stop - next);
			p->need = GPUOS_MIN(next + p->len, l->end) - next;
			next += p->len;
			submit(p);
			queued++;
		}
		reading += queued;
		if (!reading && next >= stop)
			return copied;
		if (!reading) {   /* every buffer waits on its copy */
			reap(1);
			continue;
		}
		if (queued && (r = io_uring_submit(&ring)) < 0)
			die("io_uring_submit: %s", strerror(-r));
		if ((r = io_uring_wait_cqe(&ring, &cqe)) < 0)
			die("io_uring_wait_cqe: %s", strerror(-r));
		queued = 0;
		do {
			p = (struct piece *)io_uring_cqe_get_data(cqe);
			if (cqe->res <= 0)
				die("%s: read at %llu: %s", path, (unsigned long long)(p->off + p->got),
				    cqe->res ? strerror(-cqe->res) : "the file ends early");
			p->got += (uint64_t)cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			if (p->got < p->need) {   /* short: read the rest, block aligned */
				if (p->got % 4096)
					die("%s: O_DIRECT read at %llu came back short and unaligned", path,
					    (unsigned long long)p->off);
				submit(p);
				queued++;
				continue;
			}
			/* The span's bytes only: the slot starts at its first one. */
			lo = GPUOS_MAX(p->off, l->start);
			hi = p->off + p->need;
			ck(cudaMemcpyAsync(slot + (lo - l->start), p->buf + (lo - p->off), hi - lo, cudaMemcpyHostToDevice, cs),
			   "cudaMemcpyAsync");
			ck(cudaEventRecord(p->ev, cs), "cudaEventRecord");
			p->state = P_COPYING;
			copied += hi - lo;
			reading--;
		} while (io_uring_peek_cqe(&ring, &cqe) == 0);
		if (queued && (r = io_uring_submit(&ring)) < 0)
			die("io_uring_submit: %s", strerror(-r));
	}
}

/* ---- set-up and the CPU's checksum -------------------------------------------------- */

static char *vram(uint64_t len, const char *what)
{
	void *p;
	if (cudaMalloc(&p, len ? len : 1) != cudaSuccess)
		die("cudaMalloc of %llu bytes for %s failed", (unsigned long long)len, what);
	return (char *)p;
}

static char *pinned(uint64_t len)
{
	void *p;
	ck(cudaHostAlloc(&p, len, cudaHostAllocDefault), "cudaHostAlloc (pinned staging)");
	memset(p, 0x5a, len);   /* fault the pages in before the clock starts */
	return (char *)p;
}

static unsigned long long cpu_sum(const struct layer *l, char *buf)
{
	unsigned long long sum = 0;
	uint32_t tab[16], k;
	uint64_t c;
	pread_full(buf, l->end - l->start, l->start);
	gpuos_bench_crc_table(tab);
	for (k = 0; k < l->nt; k++) {
		const struct dten *t = &ten[l->t0 + k];
		for (c = 0; c * CHUNK < t->bytes; c++)
			sum += gpuos_bench_chunk_term((const uint8_t *)buf + t->off + c * CHUNK,
						      GPUOS_MIN(CHUNK, t->bytes - c * CHUNK), c, k, tab);
	}
	return sum;
}

int main(int argc, char **argv)
{
	const char *table = NULL, *how = NULL;
	uint64_t fsize, span = 0, most = 0, total = 0, streamed = 0, blocks, b;
	uint32_t resident = 0, i, s;
	struct stat st;
	struct cudaDeviceProp prop;
	struct dten *ten_d;
	unsigned long long *sum_d;
	char *slot[2] = { NULL, NULL }, *hbuf, *at;
	double t0, t1;
	int n = 0, uring, r, buffered = 0;
	cudaError_t e;

	snprintf(bench_who, sizeof(bench_who), "layer-base");
	if (argc < 2 || argv[1][0] == '-')
		die("usage: layer-base PATH --table TABLE --path mmap|uring [--resident R] [--qd 32] [--bs-kib 1024] "
		    "[--chunk-mib 8] [--buffered]");
	path = argv[1];
	for (i = 2; i < (uint32_t)argc; i += 2) {
		const char *o = argv[i], *v = argv[i + 1];   /* argv[argc] is NULL */
		if (!strcmp(o, "--buffered")) {
			buffered = 1;
			i--; /* takes no value */
			continue;
		}
		if (!v)
			die("%s needs a value", o);
		if (!strcmp(o, "--table"))
			table = v;
		else if (!strcmp(o, "--path"))
			how = v;
		else if (!strcmp(o, "--resident"))
			resident = (uint32_t)num(o, v, 0, 0xffffffffu);
		else if (!strcmp(o, "--qd"))
			qd = (unsigned)num(o, v, 1, 4096);
		else if (!strcmp(o, "--bs-kib"))
			bs = num(o, v, 4, 1 << 20) << 10;
		else if (!strcmp(o, "--chunk-mib"))
			chunk = num(o, v, 1, 4096) * MIB;
		else
			die("unknown option %s", o);
	}
	if (!table || !how || (strcmp(how, "mmap") && strcmp(how, "uring")))
		die("give --table TABLE and --path mmap|uring");
	uring = !strcmp(how, "uring");
	if (uring && bs % 4096)
		die("--bs-kib must be a multiple of 4 (O_DIRECT reads whole 4 KiB blocks)");

	/* The file and the table before the GPU: their errors need none. */
	if ((fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die("%s: not a regular file", path);
	fsize = (uint64_t)st.st_size;
	read_table(table, fsize);
	if (resident > nlay)
		die("--resident %u: the table has %u layers", resident, nlay);
	for (i = 0; i < nlay; i++) {
		b = lay[i].end - lay[i].start;
		total += b;
		most = GPUOS_MAX(most, b);
		if (i >= resident)
			streamed += b, span = GPUOS_MAX(span, (b + 4095) & ~4095ull);
	}
	if (uring && (dfd = open(path, O_RDONLY | (buffered ? 0 : O_DIRECT))) < 0)
		die("%s: open with O_DIRECT: %s%s", path, strerror(errno),
		    errno == EINVAL ? " (the file system refuses O_DIRECT; --path mmap works without)" : "");

	if ((e = cudaGetDeviceCount(&n)) != cudaSuccess)
		die("no GPU: cudaGetDeviceCount: %s (CUDA error %d)", cudaGetErrorString(e), (int)e);
	if (!n)
		die("no GPU: cudaGetDeviceCount found none");
	ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
	ck(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), "cudaStreamCreate");
	ck(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking), "cudaStreamCreate");

	/* Before the clock: chunk tables, sums, events, slots, staging, resident layers. */
	ten_d = (struct dten *)vram(nten * sizeof(*ten), "the chunk tables");
	ck(cudaMemcpy(ten_d, ten, nten * sizeof(*ten), cudaMemcpyHostToDevice), "cudaMemcpy (chunk tables)");
	sum_d = (unsigned long long *)vram(nlay * sizeof(*sum_d), "the sums");
	ck(cudaMemset(sum_d, 0, nlay * sizeof(*sum_d)), "cudaMemset");
	for (i = 0; i < nlay * 4; i++)
		ck(cudaEventCreate(&lay[i / 4].ev[i % 4]), "cudaEventCreate");
	for (i = 0; i < 2 && resident < nlay; i++) {
		slot[i] = vram(span, "a slot");
		ck(cudaMemset(slot[i], 0, span), "cudaMemset (slot)");   /* touched once before the pass */
	}
	if (uring) {
		char *bufs = pinned((uint64_t)qd * bs);   /* page aligned, as O_DIRECT needs */
		if ((r = io_uring_queue_init(qd, &ring, 0)) < 0)
			die("io_uring_queue_init(%u): %s", qd, strerror(-r));
		if (!(pc = (struct piece *)calloc(qd, sizeof(*pc))))
			die("out of memory");
		for (i = 0; i < qd; i++) {
			pc[i].buf = bufs + (uint64_t)i * bs;
			ck(cudaEventCreateWithFlags(&pc[i].ev, cudaEventDisableTiming), "cudaEventCreate");
		}
	} else {
		void *m = mmap(NULL, fsize ? fsize : 1, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			die("%s: mmap: %s", path, strerror(errno));
		madvise(m, fsize, MADV_SEQUENTIAL);   /* advice only */
		map = (const char *)m;
		for (i = 0; i < 2; i++) {
			mbuf[i] = pinned(chunk);
			ck(cudaEventCreateWithFlags(&mev[i], cudaEventDisableTiming), "cudaEventCreate");
		}
	}
	if (!(hbuf = (char *)malloc(most ? most : 1)))
		die("out of memory");
	for (i = 0; i < resident; i++) {
		b = lay[i].end - lay[i].start;
		lay[i].res = vram(b, "a resident layer");
		pread_full(hbuf, b, lay[i].start);
		ck(cudaMemcpy(lay[i].res, hbuf, b, cudaMemcpyHostToDevice), "cudaMemcpy (resident layer)");
	}
	/* The kernel's module loads on its first launch: not in the pass. */
	layer_sum<<<1, BLOCK, 0, ks>>>(NULL, ten_d, 1, 0, sum_d);
	ck(cudaGetLastError(), "layer_sum (warm-up)");
	ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

	t0 = now_s();
	for (i = 0; i < nlay; i++) {
		struct layer *l = &lay[i];
		at = l->res;
		if (i >= resident) {
			s = (i - resident) % 2;
			at = slot[s];
			/* The kernel that last read this slot must be done before it is overwritten. */
			if (i >= resident + 2)
				ck(cudaEventSynchronize(lay[i - 2].ev[3]), "cudaEventSynchronize");
			ck(cudaEventRecord(l->ev[0], cs), "cudaEventRecord");
			b = uring ? load_uring(l, at) : load_mmap(l, at);
			if (b != l->end - l->start)
				die("layer %u: moved %llu bytes of %llu", l->id, (unsigned long long)b,
				    (unsigned long long)(l->end - l->start));
			ck(cudaEventRecord(l->ev[1], cs), "cudaEventRecord");
			ck(cudaStreamWaitEvent(ks, l->ev[1], 0), "cudaStreamWaitEvent");
		}
		blocks = GPUOS_MAX(1ull, GPUOS_MIN((l->chunks + BLOCK - 1) / BLOCK, 1ull << 20));
		ck(cudaEventRecord(l->ev[2], ks), "cudaEventRecord");
		layer_sum<<<(unsigned)blocks, BLOCK, 0, ks>>>((const uint8_t *)at, ten_d + l->t0, l->nt, l->chunks, sum_d + i);
		ck(cudaGetLastError(), "layer_sum");
		ck(cudaEventRecord(l->ev[3], ks), "cudaEventRecord");
	}
	ck(cudaStreamSynchronize(ks), "cudaStreamSynchronize");
	t1 = now_s();

	for (i = 0; i < nlay; i++) {
		struct layer *l = &lay[i];
		ck(cudaMemcpy(&l->sum, sum_d + i, sizeof(l->sum), cudaMemcpyDeviceToHost), "cudaMemcpy (sums)");
		if (i >= resident)
			ck(cudaEventElapsedTime(&l->load_ms, l->ev[0], l->ev[1]), "cudaEventElapsedTime");
		ck(cudaEventElapsedTime(&l->compute_ms, l->ev[2], l->ev[3]), "cudaEventElapsedTime");
	}
	for (i = 0; i < nlay; i += GPUOS_MAX(nlay - 1, 1u)) {   /* the first and the last */
		unsigned long long want = cpu_sum(&lay[i], hbuf);
		if (want != lay[i].sum)
			die("layer %u: the GPU's checksum %016llx is not the CPU's %016llx", lay[i].id, lay[i].sum, want);
	}

	printf("{\"bench\": \"layers-%s\", \"file\": ", how);
	json_str(path);
	printf(", \"layers\": %u, \"resident\": %u, \"streamed_bytes\": %llu, \"total_bytes\": %llu, \"seconds\": %.6f, "
	       "\"ms_per_token\": %.3f, \"load_gb_per_s\": %.3f, ", nlay, resident, (unsigned long long)streamed,
	       (unsigned long long)total, t1 - t0, (t1 - t0) * 1e3, (double)streamed / (t1 - t0) / 1e9);
	if (uring)
		printf("\"qd\": %u, \"bs_kib\": %llu, \"direct\": %s, ", qd, (unsigned long long)(bs >> 10),
		       buffered ? "false" : "true");
	else
		printf("\"chunk_mib\": %llu, ", (unsigned long long)(chunk / MIB));
	printf("\"verified_layers\": [%u, %u], \"layer_ms\": [", lay[0].id, lay[nlay - 1].id);
	for (i = 0; i < nlay; i++)
		printf("%s{\"layer\": %u, \"bytes\": %llu, \"load_ms\": %.3f, \"compute_ms\": %.3f, \"sum\": \"%016llx\"}",
		       i ? ", " : "", lay[i].id, (unsigned long long)(lay[i].end - lay[i].start), lay[i].load_ms,
		       lay[i].compute_ms, lay[i].sum);
	fputs("], \"gpu\": ", stdout);
	json_str(prop.name);
	puts("}");
	return 0;
}
