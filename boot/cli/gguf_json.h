/* SPDX-License-Identifier: MIT */
/*
 * boot/cli/gguf_json.h - a GGUF's tables (the GGUF_INFO export of
 * include/gpuos/gguf.h) as the JSON of `gpuos gguf --json` (docs/json.md),
 * the shape that tests/tools/gguf_writer.py describes, gguf_ref.mjs dumps
 * and gguf_compare.py compares:
 *
 *   "version","tensor_count","kv_count","alignment","data_offset",
 *   "kv":[{"key","type","value"} | {"key","type":"array","elem_type","count","value":[<=16]}],
 *   "tensors":[{"name","type","type_id","dims","rel_offset","abs_offset","byte_size"}]
 *
 * gguf-split files add "split":{"count","shards":[paths],"no" (a shard
 * alone)} and, for a model of several shards, "shard" in each tensor (an
 * index into split.shards).
 *
 * A KV whose string was cut at GPUOS_GGUF_STR_MAX bytes carries
 * "truncated": true.
 */
#ifndef GPUOS_BOOT_GGUF_JSON_H
#define GPUOS_BOOT_GGUF_JSON_H

#include <stdio.h>

#include "gpuos/gguf.h"
#include "json.h"

/* The tables and the arena their offsets point into. */
struct gguf_view {
	uint32_t version, alignment, n_layers;
	uint64_t tensor_count, kv_count, data_offset;
	uint32_t n_tensors, n_kv;          /* records present */
	const struct gpuos_gguf_tensor *tensors;
	const struct gpuos_gguf_kv *kv;
	const uint8_t *arena;
	uint32_t flags;                    /* GPUOS_GGUF_F_* */
	uint32_t shards, split_no, split_count; /* as the export says */
	const char *const *shard_paths;    /* shards paths (set by the caller), or NULL */
};

/* A view of a complete export (x->complete set). */
void gguf_view_of_export(struct gguf_view *v, const struct gpuos_gguf_export *x);

/* The members above, into the object j is in. */
void gguf_json_write(struct json *j, const struct gguf_view *v);

/* A KV's value under key (NULL in an array): a number, boolean or string
 * as in "kv"[].value, or for an array the object {"elem_type", "count",
 * "value"} of its members in "kv"[] (gpuos model's "metadata" values). */
void gguf_json_kv_value(struct json *j, const char *key, const struct gguf_view *v, const struct gpuos_gguf_kv *kv);

/* Human form, as gguf-dump prints: header, KVs (arrays summarised), tensors with shapes. */
void gguf_text_write(FILE *f, const struct gguf_view *v);

#endif /* GPUOS_BOOT_GGUF_JSON_H */
