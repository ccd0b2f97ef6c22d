/* SPDX-License-Identifier: MIT */
/* Option parsing and host clients for the `gpuos` commands. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"


void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuos %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- clients ------------------------------------------------------------------- */

/* One request/response line over the service's control socket. */
int service_call(int fd, const char *line, char *reply, size_t len)
{
	size_t n = 0;
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		return -EIO;
	while (n + 1 < len) {
		ssize_t r = read(fd, reply + n, 1);
		if (r <= 0)
			return -EIO;
		if (reply[n] == '\n')
			break;
		n++;
	}
	reply[n] = 0;
	return 0;
}

int service_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		close(fd);
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "no gpuos service at %s: %s", path, strerror(e));
		return -e;
	}
	return fd;
}

static int attach(struct cli *c, struct client *cl, char *err, size_t errlen)
{
	char reply[512], name[128];
	unsigned long long off = 0, len = 0;
	const struct gpuos_shm_hdr *h;
	struct stat st;
	int fd, r;

	fd = service_connect(c->socket, err, errlen);
	if (fd < 0)
		return fd;
	r = service_call(fd, "attach\n", reply, sizeof(reply));
	if (r || sscanf(reply, "ok shm=%127s heap_off=%llu heap_len=%llu", name, &off, &len) != 3) {
		snprintf(err, errlen, "service at %s refused to attach: %s", c->socket, r ? "connection lost" : reply);
		close(fd);
		return -EIO;
	}
	int sfd = shm_open(name, O_RDWR, 0);
	if (sfd < 0 || fstat(sfd, &st)) {
		snprintf(err, errlen, "open the service's shared memory %s: %s", name, strerror(errno));
		if (sfd >= 0)
			close(sfd);
		close(fd);
		return -EIO;
	}
	cl->shm_len = (uint64_t)st.st_size;
	cl->shm = mmap(NULL, cl->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	close(sfd);
	if (cl->shm == MAP_FAILED) {
		snprintf(err, errlen, "map the service's shared memory: %s", strerror(errno));
		close(fd);
		return -EIO;
	}
	h = (const struct gpuos_shm_hdr *)cl->shm;
	if (h->magic != GPUOS_SHM_MAGIC || h->version != GPUOS_ABI_VERSION || off < h->heap_off ||
	    off + len > cl->shm_len) {
		snprintf(err, errlen, "the service's shared memory has another layout (ABI %u, ours %u)", h->version,
			 GPUOS_ABI_VERSION);
		munmap(cl->shm, cl->shm_len);
		close(fd);
		return -EPROTO;
	}
	cl->mb = (struct gpuos_mbox *)((char *)cl->shm + h->mbox_off);
	cl->heap = (char *)cl->shm + off;
	cl->heap_rt = h->rt_base + off;
	cl->heap_len = len;
	cl->sock = fd; /* held open: the service frees our heap share when it closes */
	return 0;
}

int client_open(struct cli *c, struct client *cl, char *err, size_t errlen)
{
	int r;
	memset(cl, 0, sizeof(*cl));
	cl->sock = -1;
	if (c->socket)
		return attach(c, cl, err, errlen);
	if (!c->boot.device) {
		snprintf(err, errlen, "give --device DEV (emu:IMAGE, null, pci:...) or --socket PATH");
		return -EINVAL;
	}
	r = gpuos_boot(&c->boot, &cl->sys, err, errlen);
	if (r)
		return r;
	gpuos_sys_shm_private(cl->sys); /* a runtime for this command alone */
	cl->mb = gpuos_sys_mbox(cl->sys);
	cl->heap = (char *)gpuos_sys_heap(cl->sys, &cl->heap_rt, &cl->heap_len);
	return 0;
}

int client_close(struct client *cl, char *err, size_t errlen)
{
	int r = 0;
	if (cl->sys)
		r = gpuos_shutdown(cl->sys, err, errlen);
	if (cl->shm)
		munmap(cl->shm, cl->shm_len);
	if (cl->sock >= 0)
		close(cl->sock);
	memset(cl, 0, sizeof(*cl));
	cl->sock = -1;
	return r;
}

const char *cli_human(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	uint64_t whole = bytes;
	while (whole >= 1024u && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		whole >>= 10;
		u++;
	}
	if (u == 0 || (bytes & ((1ull << (10 * u)) - 1u)) == 0)
		snprintf(buf, len, "%llu %s", (unsigned long long)whole, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)(1ull << (10 * u)), unit[u]);
	return buf;
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void cli_progress_begin(struct cli_progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = total >= (16u << 20) && isatty(2);
	p->total = total;
	p->t0 = mono_s();
}

void cli_progress_update(struct cli_progress *p, uint64_t done)
{
	char a[32], b[32];
	double now, rate;
	if (!p->on)
		return;
	now = mono_s();
	if (now - p->last < 0.1 && done < p->total)
		return;
	p->last = now;
	rate = now > p->t0 ? (double)done / (now - p->t0) : 0;
	fprintf(stderr, "\r%3u%%  %s of %s  %.2f GB/s  ", (unsigned)(done * 100u / (p->total ? p->total : 1)),
		cli_human(a, sizeof(a), done), cli_human(b, sizeof(b), p->total), rate / 1e9);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->on)
		fputs("\r\033[K", stderr);
	p->on = 0;
}

int cli_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void cli_ctrl_json(struct json *j, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st)
{
	json_obj(j, NULL);
	json_u64(j, "index", i);
	json_str(j, "name", c->name);
	json_str(j, "model", c->model);
	json_str(j, "serial", c->serial);
	json_str(j, "firmware", c->firmware);
	json_u64(j, "namespace_lbas", c->namespace_lbas);
	json_u64(j, "io_queues", c->io_queues);
	json_u64(j, "mdts_bytes", c->mdts_bytes);
	json_obj(j, "perf_model");
	json_fixed(j, "gbps", c->gbps, 3);
	json_u64(j, "iops", c->iops);
	json_u64(j, "latency_us", c->latency_us);
	json_end(j);
	if (st) {
		json_obj(j, "counters");
		json_str(j, "source", st->smart ? "smart" : "controller");
		json_u64(j, "io_cmds", st->io_cmds);
		json_u64(j, "read_bytes", st->read_bytes);
		json_u64(j, "errors", st->errors);
		json_u64(j, "dma_faults", st->dma_faults);
		json_u64(j, "lost", st->lost);
		json_end(j);
	}
	if (st && st->dma) {
		json_obj(j, "dma");
		json_u64(j, "cmds", st->dma_cmds);
		json_u64(j, "copies", st->dma_copies);
		json_u64(j, "gathered", st->dma_gathered);
		json_u64(j, "batches", st->dma_batches);
		json_u64(j, "waits", st->dma_waits);
		json_fixed(j, "busy_s", st->busy_s, 3);
		json_end(j);
	}
	json_end(j);
}

void cli_ctrl_text(FILE *f, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st)
{
	char model[96] = "no performance model";
	if (c->gbps > 0 || c->iops || c->latency_us)
		snprintf(model, sizeof(model), "modeled gbps=%g iops=%u latency_us=%u", c->gbps, c->iops, c->latency_us);
	fprintf(f, "  controller %u: %s\n    %s, serial %s, firmware %s, %llu LBAs, %u I/O queues; %s\n", i, c->name,
		c->model, c->serial, c->firmware, (unsigned long long)c->namespace_lbas, c->io_queues, model);
	if (st && st->smart)
		fprintf(f, "    SMART log since boot: %llu I/O commands, about %llu bytes read, %llu media errors\n",
			(unsigned long long)st->io_cmds, (unsigned long long)st->read_bytes,
			(unsigned long long)st->errors);
	else if (st)
		fprintf(f, "    %llu I/O commands, %llu bytes read, %llu errors, %llu DMA faults, %llu lost\n",
			(unsigned long long)st->io_cmds, (unsigned long long)st->read_bytes,
			(unsigned long long)st->errors, (unsigned long long)st->dma_faults, (unsigned long long)st->lost);
	if (st && st->dma && st->dma_batches)
		fprintf(f, "    DMA engine: %llu commands, %llu copies, %llu gathered pieces, %llu batches, "
			   "%llu waited for their data; workers busy %.3f s\n",
			(unsigned long long)st->dma_cmds, (unsigned long long)st->dma_copies,
			(unsigned long long)st->dma_gathered, (unsigned long long)st->dma_batches,
			(unsigned long long)st->dma_waits, st->busy_s);
}
