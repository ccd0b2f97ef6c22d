/* SPDX-License-Identifier: MIT */
/*
 * boot/cli/model_json.h - any model's tensor table (the GGUF_INFO export of
 * include/gpuos/gguf.h, whether from GGUF, gguf-split, safetensors or a
 * safetensors checkpoint's index.json) as `gpuos model` prints it: the JSON
 * of schema gpuos.model/1 (docs/json.md) and aligned text.
 *
 *   "format","tensor_count","bytes","layers","shards","files",
 *   "metadata":{KEY: value},"metadata_truncated":[KEY],
 *   "tensors":[{"name","dtype","shape","offset","bytes","layer","shard"}]
 *
 * shape is the slowest dimension first (ne[] reversed: as torch, numpy and
 * safetensors write it), the logical element shape for quantised types too.
 */
#ifndef GPUOS_BOOT_MODEL_JSON_H
#define GPUOS_BOOT_MODEL_JSON_H

#include <stdio.h>

#include "gguf_json.h"

/* "gguf" or "safetensors", from v->flags. */
const char *model_format(const struct gguf_view *v);

/* The members above, into the object j is in (after "path"). */
void model_json_write(struct json *j, const struct gguf_view *v);

/* A header line (format, tensors, bytes, layers), the files of a model of
 * several, then one line per tensor in aligned columns. */
void model_text_write(FILE *f, const struct gguf_view *v);

#endif /* GPUOS_BOOT_MODEL_JSON_H */
