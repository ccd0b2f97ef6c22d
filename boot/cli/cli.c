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
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "../shm.h"

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuos %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_size(const char *v, int suffixes, uint64_t max, uint64_t *out)
{
	static const struct { const char *s; unsigned shift; } units[] = {
		{ "", 0 }, { "K", 10 }, { "k", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 }, { "T", 40 }, { "TiB", 40 },
	};
	char *end;
	unsigned long long x;
	size_t i;
	if (!v || !*v || *v == '-' || *v == '+' || *v == ' ')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || end == v)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].s) || (i && !suffixes))
			continue;
		if (units[i].shift && x > (~0ull >> units[i].shift))
			return -ERANGE;
		x <<= units[i].shift;
		if (x > max)
			return -ERANGE;
		*out = x;
		return 0;
	}
	return -EINVAL;
}

/* A number for option opt: plain (counts, and sizes whose unit is in the
 * option's name) or a size with a suffix; an error, never a smaller number. */
static int num_opt(const char *cmd, const char *opt, const char *v, int suffixes, uint64_t max, uint64_t *out)
{
	if (!v || !*v) {
		cli_err(cmd, "%s needs a value", opt);
		return -1;
	}
	if (cli_size(v, suffixes, max, out)) {
		cli_err(cmd, "%s: '%s' is not a %s in 0..%llu", opt, v,
			suffixes ? "size (a number, or with K, M, G, T: KiB, MiB, GiB, TiB)" : "number",
			(unsigned long long)max);
		return -1;
	}
	return 0;
}

int cli_num(const char *cmd, const char *opt, const char *v, uint64_t max, uint64_t *out)
{
	return num_opt(cmd, opt, v, 0, max, out);
}

int cli_bytes(const char *cmd, const char *opt, const char *v, uint64_t max, uint64_t *out)
{
	return num_opt(cmd, opt, v, 1, max, out);
}

/* --name=value: the option and its value apart (name into buf). Returns
 * the value, or NULL when a has no '=' (or is not a long option). */
const char *cli_split_eq(const char *a, char *buf, size_t len)
{
	const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
	if (!eq || (size_t)(eq - a) >= len)
		return NULL;
	memcpy(buf, a, (size_t)(eq - a));
	buf[eq - a] = 0;
	return eq + 1;
}

int cli_parse(struct cli *c, const char *cmd, int argc, char **argv)
{
	int i, npos = 0;
	uint64_t v;

	memset(c, 0, sizeof(*c));
	gpuos_boot_opts_default(&c->boot);
	c->part = -1;
	c->argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!c->argv)
		return -1;
	for (i = 0; i < argc; i++) {
		char name[64];
		const char *a = argv[i];
		const char *inl = cli_split_eq(a, name, sizeof(name)); /* --opt=value */
		const char *val = inl ? inl : i + 1 < argc ? argv[i + 1] : NULL;
		int took = 0; /* the option used its value */
		if (inl)
			a = name;
#define NEEDVAL()                                                          \
	do {                                                               \
		if (!val) {                                                \
			cli_err(cmd, "%s needs a value", a);               \
			return -1;                                         \
		}                                                          \
		took = 1;                                                  \
		if (!inl)                                                  \
			i++;                                               \
	} while (0)
		if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++)
				c->argv[npos++] = argv[i];
			break;
		} else if (strcmp(a, "--device") == 0 || strcmp(a, "-d") == 0) {
			NEEDVAL();
			c->boot.device = val;
		} else if (strcmp(a, "--host") == 0) {
			c->boot.host_mode = 1;
		} else if (strcmp(a, "--require-gpu") == 0) {
			c->boot.require_gpu = 1;
		} else if (strcmp(a, "--no-files") == 0) {
			c->boot.no_files = 1;
		} else if (strcmp(a, "--allow-raw") == 0) {
			c->boot.allow_raw = 1;
		} else if (strcmp(a, "--force") == 0) {
			c->boot.force = 1;
		} else if (strcmp(a, "--json") == 0) {
			c->json = 1;
		} else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
			c->verbose = 1;
		} else if (strcmp(a, "--socket") == 0) {
			NEEDVAL();
			c->socket = val;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			NEEDVAL();
			c->out = val;
		} else if (strcmp(a, "--entry") == 0) {
			NEEDVAL();
			c->entry = val;
		} else if (strcmp(a, "--warps") == 0 || strcmp(a, "--queues") == 0 || strcmp(a, "--depth") == 0 ||
			   strcmp(a, "--slots") == 0 || strcmp(a, "--xfer-kib") == 0 || strcmp(a, "--timeout-ms") == 0 ||
			   strcmp(a, "--mbox-slots") == 0 || strcmp(a, "--part") == 0 || strcmp(a, "--grid") == 0 ||
			   strcmp(a, "--block") == 0) {
			NEEDVAL();
			if (cli_num(cmd, a, val, 1u << 30, &v))
				return -1;
			if (!strcmp(a, "--warps")) c->boot.warps = (uint32_t)v;
			else if (!strcmp(a, "--queues")) c->boot.queues = (uint32_t)v;
			else if (!strcmp(a, "--depth")) c->boot.depth = (uint32_t)v;
			else if (!strcmp(a, "--slots")) c->boot.slots = (uint32_t)v;
			else if (!strcmp(a, "--xfer-kib")) c->boot.xfer_kib = (uint32_t)v;
			else if (!strcmp(a, "--timeout-ms")) c->boot.timeout_ms = (uint32_t)v;
			else if (!strcmp(a, "--mbox-slots")) c->boot.mbox_slots = (uint32_t)v;
			else if (!strcmp(a, "--part")) c->part = (int)v;
			else if (!strcmp(a, "--grid")) c->grid = (unsigned)v;
			else c->block = (unsigned)v;
		} else if (strcmp(a, "--mbox-vram") == 0) {
			c->boot.mbox_vram = 1;
		} else if (strcmp(a, "--no-zero-copy") == 0) {
			c->boot.no_zero_copy = 1;
		} else if (strcmp(a, "--vram-mib") == 0) {
			NEEDVAL();
			if (cli_num(cmd, a, val, 1u << 20, &v))
				return -1;
			c->boot.dev_heap_bytes = v << 20;
		} else if (strcmp(a, "--arch") == 0) {
			char *end;
			unsigned long sm;
			NEEDVAL();
			sm = strncmp(val, "sm_", 3) == 0 ? strtoul(val + 3, &end, 10) : 0;
			if (!sm || sm > 999 || (*end && strcmp(end, "a") && strcmp(end, "f"))) {
				cli_err(cmd, "--arch: '%s' is not an SM architecture like sm_90", val);
				return -1;
			}
			c->sm = (int)sm;
		} else if (strcmp(a, "--heap-mib") == 0) {
			NEEDVAL();
			if (cli_num(cmd, a, val, 1u << 20, &v))
				return -1;
			c->boot.heap_bytes = v << 20;
		} else if (strcmp(a, "--offset") == 0 || strcmp(a, "--length") == 0) {
			NEEDVAL();
			if (cli_bytes(cmd, a, val, ~0ull, &v))
				return -1;
			if (!strcmp(a, "--offset")) {
				c->offset = v;
				c->have_offset = 1;
			} else {
				c->length = v;
				c->have_length = 1;
			}
		} else if (a[0] == '-' && a[1] != 0) {
			cli_err(cmd, "unknown option %s", a);
			return -1;
		} else {
			c->argv[npos++] = argv[i];
		}
		if (inl && !took) {
			cli_err(cmd, "%s takes no value", a);
			return -1;
		}
#undef NEEDVAL
	}
	c->argc = npos;
	return 0;
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

void cli_ctrl_json(FILE *f, uint32_t i, const struct gpuos_ctrl_info *c, const struct gpuos_ctrl_stats *st)
{
	fprintf(f, "{\"index\": %u, \"name\": ", i);
	json_str(f, c->name);
	fputs(", \"model\": ", f);
	json_str(f, c->model);
	fputs(", \"serial\": ", f);
	json_str(f, c->serial);
	fputs(", \"firmware\": ", f);
	json_str(f, c->firmware);
	fprintf(f, ", \"namespace_lbas\": %llu, \"io_queues\": %u, \"mdts_bytes\": %u, "
		   "\"perf_model\": {\"gbps\": %g, \"iops\": %u, \"latency_us\": %u}",
		(unsigned long long)c->namespace_lbas, c->io_queues, c->mdts_bytes, c->gbps, c->iops, c->latency_us);
	if (st)
		fprintf(f, ", \"counters\": {\"source\": \"%s\", \"io_cmds\": %llu, \"read_bytes\": %llu, "
			   "\"errors\": %llu, \"dma_faults\": %llu, \"lost\": %llu}",
			st->smart ? "smart" : "controller", (unsigned long long)st->io_cmds,
			(unsigned long long)st->read_bytes, (unsigned long long)st->errors,
			(unsigned long long)st->dma_faults, (unsigned long long)st->lost);
	if (st && st->dma)
		fprintf(f, ", \"dma\": {\"cmds\": %llu, \"copies\": %llu, \"gathered\": %llu, \"batches\": %llu, "
			   "\"waits\": %llu, \"busy_s\": %.3f}",
			(unsigned long long)st->dma_cmds, (unsigned long long)st->dma_copies,
			(unsigned long long)st->dma_gathered, (unsigned long long)st->dma_batches,
			(unsigned long long)st->dma_waits, st->busy_s);
	fputc('}', f);
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
