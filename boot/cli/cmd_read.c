/* SPDX-License-Identifier: MIT */
/*
 * gpuos read --device DEV --allow-raw --offset BYTES --length BYTES [-o FILE]
 * Bytes of the device through the whole path: this process posts READ_RAW
 * requests into the mailbox, the runtime reads through its queues, the bytes
 * land in the client heap, we write them out. Several requests in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpuos/nvme.h"

#define READ_PIPELINE 8u


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
	uint64_t chunk, done = 0, posted = 0;
	uint32_t slot[READ_PIPELINE];
	uint64_t len_of[READ_PIPELINE];
	unsigned head = 0, inflight = 0;
	int fd = 1, rc = 0, r;
	struct cli_progress prog;

	if (cli_parse(&c, "read", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("read", "%s: read takes no arguments (--offset, --length)", c.argv[0]);
		return GPUOS_EXIT_USAGE;
	}
	if (!c.have_offset || !c.have_length) {
		cli_err("read", "give --offset BYTES and --length BYTES");
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
	chunk = cl.heap_len / READ_PIPELINE;
	if (chunk > (4u << 20))
		chunk = 4u << 20;
	chunk &= ~63ull;
	cli_progress_begin(&prog, c.length);
	while (done < c.length) {
		/* Keep READ_PIPELINE requests in flight; collect in order. */
		while (inflight < READ_PIPELINE && posted < c.length) {
			unsigned i = (head + inflight) % READ_PIPELINE;
			struct gpuos_req rq;
			uint64_t n = c.length - posted < chunk ? c.length - posted : chunk;
			memset(&rq, 0, sizeof(rq));
			rq.opcode = GPUOS_OP_READ_RAW;
			rq.offset = c.offset + posted;
			rq.length = n;
			rq.dst = cl.heap_rt + (uint64_t)i * chunk;
			if (gpuos_post(cl.mb, &rq, &slot[i]) != GPUOS_ST_OK)
				break; /* mailbox full: collect first */
			len_of[i] = n;
			posted += n;
			inflight++;
		}
		if (inflight == 0) {
			gpuos_pause();
			continue;
		}
		{
			struct gpuos_result res;
			uint32_t st = gpuos_wait(cl.mb, slot[head], 0, &res);
			if (st != GPUOS_ST_OK || res.result != len_of[head]) {
				char why[256];
				describe_status(why, sizeof(why), st, res.nvme_status);
				cli_err("read", "bytes %llu..%llu of the device: %s%s",
					(unsigned long long)(c.offset + done),
					(unsigned long long)(c.offset + done + len_of[head]), why,
					c.out && done ? " (the output holds only the bytes before)" : "");
				rc = GPUOS_EXIT_FAIL;
				/* Collect what is still in flight before the heap goes away. */
				while (--inflight) {
					head = (head + 1) % READ_PIPELINE;
					gpuos_wait(cl.mb, slot[head], 0, &res);
				}
				break;
			}
			r = cli_write_all(fd, cl.heap + (uint64_t)head * chunk, len_of[head]);
			if (r) {
				cli_err("read", "write %s: %s", c.out ? c.out : "stdout", strerror(-r));
				rc = GPUOS_EXIT_FAIL;
				while (--inflight) {
					head = (head + 1) % READ_PIPELINE;
					gpuos_wait(cl.mb, slot[head], 0, &res);
				}
				break;
			}
			done += len_of[head];
			cli_progress_update(&prog, done);
			head = (head + 1) % READ_PIPELINE;
			inflight--;
		}
	}
	cli_progress_end(&prog);
	if (fd != 1 && close(fd) && !rc) {
		cli_err("read", "close %s: %s", c.out, strerror(errno));
		rc = GPUOS_EXIT_FAIL;
	}
	if (client_close(&cl, err, sizeof(err)) && !rc) {
		cli_err("read", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	return rc;
}
