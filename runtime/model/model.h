/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/model.h - the model-format interface of the metadata warp:
 * which format a file holds (from its first bytes), what a name that is no
 * file may stand for, opening a file (and the files it names) into a
 * model's tables (tables.h), and each format's words when it refuses one.
 * The runtime (runtime/files_*.c) calls these and names no format; each
 * format lives in a folder of its own below this one (gguf/: GGUF and
 * gguf-split; safetensors/: safetensors files and Hugging Face indexes)
 * and is reached only from model.c. What an open model is, whatever its
 * format: the tables of tables.h, which the runtime reads directly.
 *
 * Dispatch: each call below is a switch on enum gpuos_model_format, not a
 * table of function pointers, for the reason of runtime/fs/fs.h: this runs
 * on a GPU lane, where an indirect call defeats inlining and hides the call
 * graph from ptxas's stack count. A new format is a folder, a format
 * number, a member of struct gpuos_model_state and a case in each switch of
 * model.c.
 *
 * A format's folder has two sides. Its parser (gguf/gguf.[ch],
 * safetensors/safetensors.[ch]) reads an io or a buffer and includes only
 * include/gpuos/, tables.h and the runtime's basic headers: it builds
 * alone (the fuzz targets, tests/tools). Its opener (gguf/gguf_open.[ch],
 * safetensors/st_open.[ch]) is the metadata warp's: unlike a file system,
 * a format opens files (a split model's shards, the files an index names),
 * with the handles, lookups and replies of runtime/files_internal.h.
 *
 * Memory: struct gpuos_model_state in the files region (struct rt_files),
 * and gpuos_model_scratch() bytes of it after the model tables, used only
 * while a model opens.
 *
 * Context: one lane of the metadata warp; one model opens at a time.
 */
#ifndef GPUOS_RUNTIME_MODEL_H
#define GPUOS_RUNTIME_MODEL_H

#include "tables.h"
#include "gguf/gguf_open.h"
#include "safetensors/st_open.h"

GPUOS_EXTERN_C_BEGIN

struct rt_files;  /* runtime/files_internal.h */
struct mreq;

/* What a file holds. */
enum gpuos_model_format {
	GPUOS_MODEL_UNKNOWN = 0,     /* none of the formats (or an empty file) */
	GPUOS_MODEL_GGUF = 1,        /* GGUF: one file, or a shard of a gguf-split model (gguf/) */
	GPUOS_MODEL_SAFETENSORS = 2, /* a safetensors file (safetensors/) */
	GPUOS_MODEL_ST_INDEX = 3,    /* a Hugging Face index over safetensors files (safetensors/) */
	GPUOS_MODEL_FORMATS = 4,
	GPUOS_MODEL_IO = 5           /* not a format: the file could not be read */
};

/* Every format's state while a model opens. */
struct gpuos_model_state {
	struct gpuos_gguf_model gguf;
	struct gpuos_st_model st;
};

/* Bytes of the files region the formats use while a model opens: the
 * largest of theirs (GGUF's tables are the model's own: it has none). */
GPUOS_INLINE GPUOS_HD uint64_t gpuos_model_scratch(void) { return gpuos_st_model_scratch(); }

/*
 * The format of the file in handle slot i, from its first bytes, each
 * format asked in turn (GGUF's magic first); its first bytes (at most 4)
 * kept in F->first for gpuos_model_open's refusal of an unknown one.
 * Returns enum gpuos_model_format: GPUOS_MODEL_UNKNOWN, or
 * GPUOS_MODEL_IO when it could not be read.
 */
GPUOS_HD uint32_t gpuos_model_detect(struct rt_files *F, uint32_t i);

/*
 * F->path names no file: a format's name for a model of several files
 * (gguf-split's base name) that it stands for, the first file's path into
 * F->path: 1, else 0 with F->path as it was. Lists only directories q's
 * client may read.
 */
GPUOS_HD int gpuos_model_name(struct rt_files *F, const struct mreq *q);

/*
 * Open the file in handle slot i, which holds `format`, as model m: parse
 * it into m's tables (files_model_mem), with the other files it names.
 * GPUOS_MODEL_UNKNOWN and GPUOS_MODEL_IO are refused in so many words.
 * Returns the model's handle slot (to make H_MODEL), or -1 after replying,
 * slot i and every file it opened closed.
 */
GPUOS_HD int gpuos_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i, uint32_t format);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_MODEL_H */
