/* SPDX-License-Identifier: MIT */
/* gpuos identify [--json] --device DEV
 * For an array (emu:IMG,ssds=N; pci:A+B) the top-level fields describe the
 * striped namespace the runtime serves; each controller follows (JSON:
 * "stripe_bytes" and "controllers", present for arrays only, so that the
 * fields of one controller stay as they were). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

int cmd_identify(int argc, char **argv)
{
	struct cli c;
	struct gpuos_info in;
	char err[512];
	uint32_t i;
	int r;

	if (cli_parse(&c, "identify", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (!c.boot.device || c.argc) {
		cli_err("identify", c.argc ? "%s: identify takes no arguments" : "give --device DEV (emu:IMAGE[,k=v...], null[:SIZE], pci:DDDD:BB:DD.F)%s",
			c.argc ? c.argv[0] : "");
		return GPUOS_EXIT_USAGE;
	}
	r = gpuos_identify(&c.boot, &in, err, sizeof(err));
	if (r) {
		cli_err("identify", "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	if (c.json) {
		struct json j;
		char ver[32];
		snprintf(ver, sizeof(ver), "%u.%u.%u", in.version >> 16, (in.version >> 8) & 0xffu, in.version & 0xffu);
		json_begin(&j, stdout, "identify");
		json_str(&j, "model", in.model);
		json_str(&j, "serial", in.serial);
		json_str(&j, "firmware", in.firmware);
		json_str(&j, "version", ver);
		json_u64(&j, "mqes", in.mqes - 1u);
		json_u64(&j, "dstrd", in.dstrd);
		json_u64(&j, "mdts_bytes", in.mdts_bytes);
		json_u64(&j, "lba_bytes", in.lba_bytes);
		json_u64(&j, "namespace_lbas", in.namespace_lbas);
		json_u64(&j, "namespace_bytes", in.namespace_lbas * in.lba_bytes);
		json_u64(&j, "nsid", in.nsid);
		json_u64(&j, "io_queues", in.io_queues);
		if (in.nctrl > 1) {
			json_u64(&j, "stripe_bytes", in.stripe_bytes);
			json_arr(&j, "controllers");
			for (i = 0; i < in.nctrl; i++)
				cli_ctrl_json(&j, i, &in.ctrl[i], NULL);
			json_end(&j);
		}
		json_finish(&j);
	} else {
		char e[4 * sizeof(in.model) + 1]; /* the controller's strings, escaped (cli.h) */
		printf("model:          %s\n", cli_escaped(e, sizeof(e), in.model));
		printf("serial:         %s\n", cli_escaped(e, sizeof(e), in.serial));
		printf("firmware:       %s\n", cli_escaped(e, sizeof(e), in.firmware));
		printf("version:        %u.%u.%u\n", in.version >> 16, (in.version >> 8) & 0xffu, in.version & 0xffu);
		printf("MQES:           %u (%u entries per queue)\n", in.mqes - 1u, in.mqes);
		printf("DSTRD:          %u (doorbell stride %u bytes)\n", in.dstrd, 4u << in.dstrd);
		if (in.mdts_bytes)
			printf("MDTS:           %u bytes\n", in.mdts_bytes);
		else
			printf("MDTS:           no limit\n");
		printf("LBA size:       %u bytes\n", in.lba_bytes);
		printf("namespace:      %llu LBAs (%llu bytes), NSID %u\n", (unsigned long long)in.namespace_lbas,
		       (unsigned long long)in.namespace_lbas * in.lba_bytes, in.nsid);
		printf("I/O queues:     %u granted\n", in.io_queues);
		if (in.nctrl > 1) {
			printf("array:          %u controllers striped in chunks of %u KiB (the namespace above is the array's)\n",
			       in.nctrl, in.stripe_bytes / 1024u);
			for (i = 0; i < in.nctrl; i++)
				cli_ctrl_text(stdout, i, &in.ctrl[i], NULL);
		}
	}
	return 0;
}
