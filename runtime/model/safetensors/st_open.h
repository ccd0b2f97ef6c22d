/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/safetensors/st_open.h - safetensors' opener (st_open.c), as
 * runtime/model/model.c calls it: the metadata warp's side of safetensors
 * and its indexes, where safetensors.h is the parser's. Nothing else calls
 * these.
 *
 * Context: one lane of the metadata warp.
 */
#ifndef GPUOS_RUNTIME_MODEL_ST_OPEN_H
#define GPUOS_RUNTIME_MODEL_ST_OPEN_H

#include "safetensors.h"
#include "../../files.h"
#include "../../util.h"

GPUOS_EXTERN_C_BEGIN

struct rt_files;  /* runtime/files_internal.h */
struct mreq;

/* How a file that is none of the formats is told what safetensors' would
 * start with. */
#define GPUOS_ST_MODEL_SIGNATURE "a safetensors header (a length, then '{')"
#define GPUOS_ST_MODEL_INDEX_SIGNATURE "a JSON object (model.safetensors.index.json)"

/* The state of an open (struct gpuos_model_state): the file being parsed,
 * the index being opened, the last error. */
struct gpuos_st_model {
	struct gpuos_st file;
	struct gpuos_st_index ix;
	struct gpuos_st_error err;
};

/* Its scratch while a model opens, in the files region
 * (off_model_scratch): a file's header, an index's JSON, the parser's
 * tables, and a bitmap of the tensors an index named. */
GPUOS_INLINE GPUOS_HD uint64_t st_hdr_bytes(void) { return gpuos_align_line(GPUOS_RT_ST_HEADER); }
GPUOS_INLINE GPUOS_HD uint64_t st_json_bytes(void) { return gpuos_align_line(GPUOS_RT_ST_INDEX); }
GPUOS_INLINE GPUOS_HD uint64_t st_tab_bytes(void)
{
	return gpuos_align_line((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_st_tensor));
}
GPUOS_INLINE GPUOS_HD uint64_t st_meta_bytes(void)
{
	return gpuos_align_line((uint64_t)GPUOS_RT_MODEL_KV * sizeof(struct gpuos_st_meta));
}
GPUOS_INLINE GPUOS_HD uint64_t st_ent_bytes(void)
{
	return gpuos_align_line((uint64_t)GPUOS_RT_MODEL_TENSORS * sizeof(struct gpuos_st_index_entry));
}
GPUOS_INLINE GPUOS_HD uint64_t st_files_bytes(void)
{
	return gpuos_align_line((uint64_t)GPUOS_RT_MODEL_SHARDS * sizeof(struct gpuos_st_index_file));
}
GPUOS_INLINE GPUOS_HD uint64_t st_seen_bytes(void) { return gpuos_align_line(GPUOS_RT_MODEL_TENSORS / 8u); }
GPUOS_INLINE GPUOS_HD uint64_t gpuos_st_model_scratch(void)
{
	return st_hdr_bytes() + st_json_bytes() + st_tab_bytes() + st_meta_bytes() + st_ent_bytes() +
	       st_files_bytes() + st_seen_bytes();
}

/* A file of size bytes whose first k bytes are b (9 when it has that
 * many) holds a safetensors header: 1, else 0. */
GPUOS_HD int gpuos_st_model_sniff(struct rt_files *F, const uint8_t *b, uint32_t k, uint64_t size);

/* Handle slot i, whose first k bytes are first (at most 9), holds a JSON
 * object (an index), whitespace before it read through the first 4 KiB:
 * 1, 0 (not), -EIO. */
GPUOS_HD int gpuos_st_model_index_sniff(struct rt_files *F, uint32_t i, const uint8_t *first, uint32_t k);

/* Open the safetensors file in handle slot i as model m, or the index in
 * slot i and the files it names. The model's handle slot, or -1 after
 * replying (slot i closed either way). */
GPUOS_HD int gpuos_st_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i);
GPUOS_HD int gpuos_st_model_open_index(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_MODEL_ST_OPEN_H */
