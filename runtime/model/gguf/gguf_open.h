/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/gguf/gguf_open.h - GGUF's opener (gguf_open.c), as
 * runtime/model/model.c calls it: the metadata warp's side of GGUF, where
 * gguf.h is the parser's. Nothing else calls these.
 *
 * Context: one lane of the metadata warp.
 */
#ifndef GPUOS_RUNTIME_MODEL_GGUF_OPEN_H
#define GPUOS_RUNTIME_MODEL_GGUF_OPEN_H

#include "gguf.h"

GPUOS_EXTERN_C_BEGIN

struct rt_files;  /* runtime/files_internal.h */
struct mreq;

/* How a file that is none of the formats is told GGUF is not in it. */
#define GPUOS_GGUF_MODEL_SIGNATURE "GGUF's magic \"GGUF\""

/* The state of an open (struct gpuos_model_state): a split model's shard
 * being parsed into the tail of its tables, and the parser. */
struct gpuos_gguf_model {
	struct gpuos_gguf shard;
	struct gpuos_gguf_parser parser;
};

/* A file's first k bytes b are a GGUF's: 1, else 0. */
GPUOS_HD int gpuos_gguf_model_sniff(const uint8_t *b, uint32_t k);

/* F->path names no file: when it is the base name P or P.gguf of a
 * gguf-split model, the first shard's name into F->path (P into
 * F->prefix): 1, else 0 with F->path as it was. */
GPUOS_HD int gpuos_gguf_model_name(struct rt_files *F, const struct mreq *q);

/* Parse the GGUF in handle slot i into model m's tables, and the rest of
 * its shards when it is one of a split model (GPUOS_GGUF_SHARD: it alone).
 * Returns the model's handle slot, or -1 after replying (the files it
 * opened closed). */
GPUOS_HD int gpuos_gguf_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_MODEL_GGUF_OPEN_H */
