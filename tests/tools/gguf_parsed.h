/* SPDX-License-Identifier: MIT */
/*
 * tests/tools/gguf_parsed.h - host-only, for tests and tools that run the
 * parser of runtime/model/gguf/gguf.c themselves: its result as the JSON of
 * `gpuos gguf --json` (boot/cli/gguf_json.c), and a failed parse as one line:
 *   corrupt GGUF (EINVAL): tensor 3 'blk.0.ffn_up.weight' has data past the end of the file
 *   [byte 1184, value 70368744177696]
 */
#ifndef GPUOS_TESTS_GGUF_PARSED_H
#define GPUOS_TESTS_GGUF_PARSED_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../../boot/cli/gguf_json.h"
#include "../../runtime/model/gguf/gguf.h"

static inline void gguf_view_of_parse(struct gguf_view *v, const struct gpuos_gguf *g)
{
	memset(v, 0, sizeof(*v)); /* one file: no shards */
	v->version = g->version;
	v->alignment = g->alignment;
	v->n_layers = g->n_layers;
	v->tensor_count = g->tensor_count;
	v->kv_count = g->kv_count;
	v->data_offset = g->data_offset;
	v->n_tensors = g->n_tensors;
	v->n_kv = g->n_kv;
	v->tensors = g->mem.tensors;
	v->kv = g->mem.kv;
	v->arena = g->mem.arena;
}

/* The parse as `gpuos gguf --json` prints it. */
static inline void gguf_json_file(FILE *f, const struct gpuos_gguf *g)
{
	struct gguf_view v;
	struct json j;
	gguf_view_of_parse(&v, g);
	json_begin(&j, f, "gguf");
	gguf_json_write(&j, &v);
	json_finish(&j);
}

static inline const char *gguf_errno_name(int rc)
{
	switch (-rc) {
	case EINVAL: return "EINVAL";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOSPC: return "ENOSPC";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EIO: return "EIO";
	case ENOENT: return "ENOENT";
	default: return "E?";
	}
}

static inline void gguf_print_error(FILE *f, const struct gpuos_gguf_parser *p, int rc)
{
	fprintf(f, "%s GGUF (%s): ", rc == -EPROTONOSUPPORT ? "unsupported" : rc == -ENOSPC ? "cannot hold" :
		rc == -EIO ? "unreadable" : "corrupt", gguf_errno_name(rc));
	if (p->err_tensor >= 0)
		fprintf(f, "tensor %" PRId64 " '%s' ", p->err_tensor, p->subject);
	else if (p->err_kv >= 0)
		fprintf(f, "KV %" PRId64 " key '%s' ", p->err_kv, p->subject);
	fprintf(f, "%s [byte %" PRIu64 ", value %" PRIu64 "]\n", p->why ? p->why : "?", p->err_off, p->bad);
}

#endif /* GPUOS_TESTS_GGUF_PARSED_H */
