/* SPDX-License-Identifier: MIT */
/* gpuos image [--json] APP.cubin: what boot/ reads from an app image before
 * it loads it (boot/image.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include "json.h"

int cmd_image(int argc, char **argv)
{
	struct cli c;
	struct gpuos_image_info in;
	char err[512];
	uint32_t i;

	if (cli_parse(&c, "image", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc != 1) {
		cli_err("image", "give one app image: gpuos image [--json] APP.cubin");
		free(c.argv);
		return GPUOS_EXIT_USAGE;
	}
	if (gpuos_image_inspect_file(c.argv[0], &in, err, sizeof(err))) {
		cli_err("image", "%s", err);
		free(c.argv);
		return GPUOS_EXIT_FAIL;
	}
	if (c.json) {
		struct json j;
		json_begin(&j, stdout, "image");
		json_str(&j, "path", c.argv[0]);
		json_str(&j, "arch", in.arch);
		json_u64(&j, "sm", in.sm_major * 10u + in.sm_minor);
		json_bool(&j, "arch_specific", in.arch_specific);
		json_u64(&j, "abi_version", in.abi_version);
		json_arr(&j, "entries");
		for (i = 0; i < in.nentries; i++) {
			const struct gpuos_image_entry *e = &in.entries[i];
			json_obj(&j, NULL);
			json_str(&j, "name", e->name);
			json_u64(&j, "registers", e->registers);
			json_u64(&j, "shared_bytes", e->shared_bytes);
			json_u64(&j, "max_threads", e->max_threads);
			json_bool(&j, "exact_block", e->exact);
			json_arr(&j, "block");
			json_u64(&j, NULL, e->block[0]);
			json_u64(&j, NULL, e->block[1]);
			json_u64(&j, NULL, e->block[2]);
			json_end(&j);
			json_end(&j);
		}
		json_end(&j);
		json_finish(&j);
	} else {
		printf("image:          %s\n", c.argv[0]);
		printf("architecture:   %s (compute capability %u.%u%s)\n", in.arch, in.sm_major, in.sm_minor,
		       in.arch_specific ? ", that version only" : " and newer minor versions");
		printf("gpuos ABI:      %u\n", in.abi_version);
		printf("entries:        %u\n", in.nentries);
		for (i = 0; i < in.nentries; i++) {
			const struct gpuos_image_entry *e = &in.entries[i];
			fputs("  ", stdout);
			cli_put_escaped(stdout, e->name, strlen(e->name)); /* the image's bytes: escaped */
			putchar('\n');
			printf("    registers:    %u per thread\n", e->registers);
			printf("    shared:       %u bytes static per block\n", e->shared_bytes);
			if (e->block[0])
				printf("    threads:      %s %u per block (%u x %u x %u)\n", e->exact ? "exactly" : "at most",
				       e->max_threads, e->block[0], e->block[1], e->block[2]);
			else
				printf("    threads:      at most %u per block (no limit declared)\n", e->max_threads);
		}
	}
	gpuos_image_info_free(&in);
	free(c.argv);
	return 0;
}
