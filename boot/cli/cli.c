/* SPDX-License-Identifier: MIT */
/* Option parsing and host clients for the `gpuos` commands. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
	char *msg = NULL;
	int n;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuos %s: ", cmd);
	if (n >= 0)
		cli_put_escaped(stderr, msg, (size_t)n);
	else /* out of memory: the message's form at least */
		cli_put_escaped(stderr, fmt, strlen(fmt));
	fputc('\n', stderr);
	if (n >= 0)
		free(msg);
}

/* ---- clients ------------------------------------------------------------------- */

void cli_socket_hint(const struct cli *c, int can_boot, char *err, size_t errlen)
{
	size_t n = strlen(err);
	if (c->socket_default && n < errlen)
		snprintf(err + n, errlen - n, " (the default socket: give --socket PATH%s)",
			 can_boot ? ", or --device DEV to boot a runtime for this command" : "");
}

int client_open(struct cli *c, struct client *cl, char *err, size_t errlen)
{
	int r;
	memset(cl, 0, sizeof(*cl));
	cl->at.sock = -1;
	if (c->socket) {
		r = gpuos_service_attach(c->socket, &cl->at, err, errlen);
		if (r) {
			cli_socket_hint(c, 1, err, errlen);
			return r;
		}
		cl->mb = cl->at.mb;
		cl->heap = cl->at.heap;
		cl->heap_rt = cl->at.heap_rt;
		cl->heap_len = cl->at.heap_len;
		return 0;
	}
	if (!c->boot.device) {
		snprintf(err, errlen, "give --device DEV (emu:IMAGE, null, pci:...) or --socket PATH");
		return -EINVAL;
	}
	r = gpuos_boot(&c->boot, &cl->sys, err, errlen);
	if (r)
		return r;
	cl->mb = gpuos_sys_mbox(cl->sys);
	cl->heap = (char *)gpuos_sys_heap(cl->sys, &cl->heap_rt, &cl->heap_len);
	return 0;
}

int client_close(struct client *cl, char *err, size_t errlen)
{
	int r = 0;
	if (cl->sys)
		r = gpuos_shutdown(cl->sys, err, errlen);
	if (cl->at.sock >= 0)
		gpuos_service_detach(&cl->at);
	memset(cl, 0, sizeof(*cl));
	cl->at.sock = -1;
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

#define PROGRESS_MIN_BYTES (16u << 20) /* a known total below this: no bar */
#define PROGRESS_DELAY_S 0.3          /* no bar for work that ends sooner */

void cli_progress_begin(struct cli_progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = total >= PROGRESS_MIN_BYTES && isatty(2);
	p->total = total;
	p->t0 = mono_s();
}

void cli_progress_begin_open(struct cli_progress *p)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(2);
	p->t0 = mono_s();
}

void cli_progress_update(struct cli_progress *p, uint64_t done)
{
	char a[32], b[32];
	double now, rate;
	if (!p->on)
		return;
	now = mono_s();
	/* Nothing for work that ends within PROGRESS_DELAY_S, then ten a second. */
	if (now - p->t0 < PROGRESS_DELAY_S || (now - p->last < 0.1 && (!p->total || done < p->total)))
		return;
	p->last = now;
	p->shown = 1;
	rate = now > p->t0 ? (double)done / (now - p->t0) : 0;
	if (p->total)
		fprintf(stderr, "\r%3u%%  %s of %s  %.2f GB/s  ", (unsigned)(done * 100u / p->total),
			cli_human(a, sizeof(a), done), cli_human(b, sizeof(b), p->total), rate / 1e9);
	else
		fprintf(stderr, "\r%s  %.2f GB/s  ", cli_human(a, sizeof(a), done), rate / 1e9);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->on && p->shown)
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

/* ---- cat and read: reads in flight, written out in order ------------------------ */

#define STREAM_PIPELINE 8u          /* requests in flight */
#define STREAM_CHUNK_MAX (4u << 20) /* bytes a request at most */
#define STREAM_ALIGN 4096u          /* each request's destination starts a page */

/* Wait for the requests still in flight after the one at head, so that
 * none lands in client memory after the command has let it go. */
static void stream_drain(struct gpuos_mbox *mb, const uint32_t *slot, unsigned head, unsigned inflight)
{
	struct gpuos_result res;
	while (--inflight) {
		head = (head + 1) % STREAM_PIPELINE;
		gpuos_wait(mb, slot[head], 0, &res);
	}
}

int cli_stream(struct cli_stream *s)
{
	uint64_t chunk = GPUOS_ALIGN_DOWN(GPUOS_MIN(s->buf_len / STREAM_PIPELINE, (uint64_t)STREAM_CHUNK_MAX),
					  (uint64_t)STREAM_ALIGN);
	uint64_t posted = 0, len_of[STREAM_PIPELINE];
	uint32_t slot[STREAM_PIPELINE];
	unsigned head = 0, inflight = 0;
	struct cli_progress prog;
	int r = 0;

	s->done = 0;
	s->st = GPUOS_ST_OK;
	s->nvme = 0;
	s->write_err = 0;
	if (!chunk) {
		s->st = GPUOS_ST_NOSPC; /* less client memory than a page a request */
		return -1;
	}
	cli_progress_begin(&prog, s->len);
	while (s->done < s->len) {
		struct gpuos_result res;
		uint32_t st;
		while (inflight < STREAM_PIPELINE && posted < s->len) {
			unsigned i = (head + inflight) % STREAM_PIPELINE;
			struct gpuos_req rq;
			memset(&rq, 0, sizeof(rq));
			rq.opcode = s->op;
			rq.handle = s->handle;
			rq.offset = s->off + posted;
			rq.length = GPUOS_MIN(s->len - posted, chunk);
			rq.dst = s->buf_rt + (uint64_t)i * chunk;
			if (gpuos_post(s->mb, &rq, &slot[i]) != GPUOS_ST_OK)
				break; /* mailbox full: collect first */
			len_of[i] = rq.length;
			posted += rq.length;
			inflight++;
		}
		if (inflight == 0) {
			gpuos_pause();
			continue;
		}
		st = gpuos_wait(s->mb, slot[head], 0, &res);
		if (st != GPUOS_ST_OK || res.result != len_of[head]) {
			s->st = st;
			s->nvme = res.nvme_status;
			s->want = len_of[head];
			s->got = st == GPUOS_ST_OK ? res.result : 0;
			r = -1;
		} else {
			s->write_err = cli_write_all(s->fd, s->buf + (uint64_t)head * chunk, len_of[head]);
			r = s->write_err ? -1 : 0;
		}
		if (r) {
			stream_drain(s->mb, slot, head, inflight);
			break;
		}
		s->done += len_of[head];
		cli_progress_update(&prog, s->done);
		head = (head + 1) % STREAM_PIPELINE;
		inflight--;
	}
	cli_progress_end(&prog);
	return r;
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
	char name[4 * sizeof(c->name) + 1], mn[4 * sizeof(c->model) + 1], sn[4 * sizeof(c->serial) + 1],
		fr[4 * sizeof(c->firmware) + 1]; /* the controller's strings, escaped */
	if (c->gbps > 0 || c->iops || c->latency_us)
		snprintf(model, sizeof(model), "modeled gbps=%g iops=%u latency_us=%u", c->gbps, c->iops, c->latency_us);
	fprintf(f, "  controller %u: %s\n    %s, serial %s, firmware %s, %llu LBAs, %u I/O queues; %s\n", i,
		cli_escaped(name, sizeof(name), c->name), cli_escaped(mn, sizeof(mn), c->model),
		cli_escaped(sn, sizeof(sn), c->serial), cli_escaped(fr, sizeof(fr), c->firmware),
		(unsigned long long)c->namespace_lbas, c->io_queues, model);
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

/* CPU seconds of this process so far (threads that have exited included:
 * getrusage), less the emulated controller's threads: its own (named emu*,
 * alive while the device is open) and the kernel's io_uring workers that
 * run its backend's reads (iou-*, alive a few seconds after their last
 * work). The controller is not the service. */
double cli_cpu_seconds_without_emu(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	struct rusage ru;
	double total, emu = 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (!d || getrusage(RUSAGE_SELF, &ru)) {
		if (d)
			closedir(d);
		return -1;
	}
	total = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
		(double)ru.ru_stime.tv_usec * 1e-6;
	while ((e = readdir(d))) {
		char path[300], comm[64] = "", buf[1024];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r"))) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		if (strncmp(comm, "emu", 3) != 0 && strncmp(comm, "iou-", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		if ((f = fopen(path, "r"))) {
			if (fgets(buf, sizeof(buf), f)) {
				/* fields after the ")" of comm: state is field 3; utime 14, stime 15 */
				char *p = strrchr(buf, ')');
				unsigned long ut = 0, st = 0;
				if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
					emu += (double)(ut + st) / (double)hz;
			}
			fclose(f);
		}
	}
	closedir(d);
	return total > emu ? total - emu : 0;
}

double cli_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
