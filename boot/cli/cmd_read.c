/* SPDX-License-Identifier: MIT */
/*
 * gpuos read --device DEV --allow-raw --offset BYTES --length BYTES [-o FILE]
 * Bytes of the device through the whole path: this process posts READ_RAW
 * requests into the mailbox, the runtime reads through its queues, the bytes
 * land in the client heap, cli_stream writes them out, several in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpuos/nvme.h"

/* "range past the end (NVMe status 0x281 Unrecovered Read Error)" */
void describe_status(char *buf, size_t len, uint32_t st, uint16_t nvme)
{
	if (st == GPUOS_ST_NVME)
		snprintf(buf, len, "%s: NVMe status 0x%03x %s (SCT %u, SC 0x%02x%s)", gpuos_status_name(st), nvme,
			 gpuos_nvme_status_name(nvme), gpuos_nvme_status_sct(nvme), gpuos_nvme_status_sc(nvme),
			 gpuos_nvme_status_dnr(nvme) ? ", DNR" : "");
	else
		snprintf(buf, len, "%s", gpuos_status_name(st));
}

int cmd_read(int argc, char **argv)
{
	struct cli c;
	struct client cl;
	char err[512];
	struct cli_stream s;
	int fd = 1, rc = 0, r;

	if (cli_parse(&c, "read", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("read", "%s: read takes no arguments (--offset, --length)", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	if (!c.have_length) {
		cli_err("read", "give --length BYTES (and --offset BYTES, default 0)");
		return GPUOS_EXIT_USAGE;
	}
	if (!c.boot.allow_raw) {
		cli_err("read", "raw device reads need --allow-raw (clients otherwise see only files)");
		return GPUOS_EXIT_USAGE;
	}
	if (c.offset + c.length < c.offset) {
		cli_err("read", "--offset + --length overflows");
		return GPUOS_EXIT_USAGE;
	}
	r = client_open(&c, &cl, err, sizeof(err));
	if (r) {
		cli_err("read", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if ((rc = cli_output_open("read", &c, &fd))) {
		client_close(&cl, err, sizeof(err));
		return rc;
	}
	memset(&s, 0, sizeof(s));
	s.mb = cl.mb;
	s.op = GPUOS_OP_READ_RAW;
	s.off = c.offset;
	s.len = c.length;
	s.buf = cl.heap;
	s.buf_rt = cl.heap_rt;
	s.buf_len = cl.heap_len;
	s.fd = fd;
	if (cli_stream(&s)) {
		char why[256];
		if (s.write_err)
			cli_err("read", "write %s: %s", c.out ? c.out : "stdout", strerror(-s.write_err));
		else {
			if (s.st == GPUOS_ST_OK)
				snprintf(why, sizeof(why), "short read (%llu of %llu bytes)", (unsigned long long)s.got,
					 (unsigned long long)s.want);
			else
				describe_status(why, sizeof(why), s.st, s.nvme);
			cli_err("read", "bytes %llu..%llu of the device: %s%s", (unsigned long long)(c.offset + s.done),
				(unsigned long long)(c.offset + s.done + s.want), why,
				c.out && s.done ? " (the output holds only the bytes before)" : "");
		}
		rc = GPUOS_EXIT_FAIL;
	}
	if (fd != 1 && close(fd) && !rc) {
		cli_err("read", "close %s: %s", c.out, strerror(errno));
		rc = GPUOS_EXIT_FAIL;
	}
	cli_counters("read", &c, cl.sys);
	if (client_close(&cl, err, sizeof(err)) && !rc) {
		cli_err("read", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	return rc;
}
