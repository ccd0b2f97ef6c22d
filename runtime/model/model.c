/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/model.c - the model-format interface (model.h): each call a
 * switch on the format, into the format's folder. With model.h (their
 * state, their headers), the only file outside runtime/model/gguf/ and
 * runtime/model/safetensors/ that names them.
 */
#include "model.h"
#include "../files_internal.h"

/* Does the file in handle slot i, first k bytes b, hold format f? 1, 0, -EIO. */
GPUOS_HD static int model_sniff(struct rt_files *F, uint32_t i, uint32_t f, const uint8_t *b, uint32_t k)
{
	switch (f) {
	case GPUOS_MODEL_GGUF: return gpuos_gguf_model_sniff(b, k);
	case GPUOS_MODEL_SAFETENSORS: return gpuos_st_model_sniff(F, b, k, F->h[i].size);
	case GPUOS_MODEL_ST_INDEX: return gpuos_st_model_index_sniff(F, i, b, k);
	default: return 0;
	}
}

/* What format f's files start with, for a refusal. */
GPUOS_HD static const char *model_signature(uint32_t f)
{
	switch (f) {
	case GPUOS_MODEL_GGUF: return GPUOS_GGUF_MODEL_SIGNATURE;
	case GPUOS_MODEL_SAFETENSORS: return GPUOS_ST_MODEL_SIGNATURE;
	case GPUOS_MODEL_ST_INDEX: return GPUOS_ST_MODEL_INDEX_SIGNATURE;
	default: return "";
	}
}

GPUOS_HD uint32_t gpuos_model_detect(struct rt_files *F, uint32_t i)
{
	uint8_t b[9];
	uint32_t k = (uint32_t)GPUOS_MIN(F->h[i].size, (uint64_t)sizeof(b)), j, f;
	int r;

	if (k && files_model_read(F, i, 0, k, b))
		return GPUOS_MODEL_IO;
	F->n_first = GPUOS_MIN(k, 4u);
	for (j = 0; j < F->n_first; j++)
		F->first[j] = b[j];
	for (f = GPUOS_MODEL_UNKNOWN + 1u; f < GPUOS_MODEL_FORMATS; f++) {
		r = model_sniff(F, i, f, b, k);
		if (r)
			return r < 0 ? (uint32_t)GPUOS_MODEL_IO : f;
	}
	return GPUOS_MODEL_UNKNOWN;
}

GPUOS_HD int gpuos_model_name(struct rt_files *F, const struct mreq *q)
{
	/* one format so far has names that are no file */
	return gpuos_gguf_model_name(F, q);
}

/* The refusal of a file that holds no format: its first bytes (which
 * gpuos_model_detect kept in F->first) and what each format's start with. */
GPUOS_NOINLINE GPUOS_HD static void model_refuse_unknown(struct rt_files *F, const struct mreq *q)
{
	const char *hex = "0123456789abcdef";
	struct sbuf sb;
	uint32_t j, f;
	sb.p = F->reason;
	sb.n = 0;
	sb.cap = sizeof(F->reason);
	sb_str(&sb, "not a model gpuos reads (bad magic): it starts with");
	if (!F->n_first)
		sb_str(&sb, " nothing (an empty file)");
	for (j = 0; j < F->n_first; j++) {
		char x[4];
		x[0] = ' ';
		x[1] = hex[F->first[j] >> 4];
		x[2] = hex[F->first[j] & 15u];
		x[3] = 0;
		sb_str(&sb, x);
	}
	if (F->n_first) {
		sb_str(&sb, " (\"");
		for (j = 0; j < F->n_first; j++) {
			char c[2];
			c[0] = F->first[j] >= 0x20 && F->first[j] < 0x7f ? (char)F->first[j] : '.';
			c[1] = 0;
			sb_str(&sb, c);
		}
		sb_str(&sb, "\")");
	}
	/* ", not A, B or C" */
	for (f = GPUOS_MODEL_UNKNOWN + 1u; f < GPUOS_MODEL_FORMATS; f++) {
		sb_str(&sb, f == GPUOS_MODEL_UNKNOWN + 1u ? ", not " : f + 1u == GPUOS_MODEL_FORMATS ? " or " : ", ");
		sb_str(&sb, model_signature(f));
	}
	/* CORRUPT, as a GGUF with a bad magic always was (-EUCLEAN to host callers) */
	files_reply(F, q, GPUOS_ST_CORRUPT, 0, 0, F->reason);
}

GPUOS_HD int gpuos_model_open(struct rt_files *F, const struct mreq *q, uint32_t m, uint32_t i, uint32_t format)
{
	switch (format) {
	case GPUOS_MODEL_GGUF:
		return gpuos_gguf_model_open(F, q, m, i);
	case GPUOS_MODEL_SAFETENSORS:
		return gpuos_st_model_open(F, q, m, i);
	case GPUOS_MODEL_ST_INDEX:
		return gpuos_st_model_open_index(F, q, m, i);
	case GPUOS_MODEL_IO:
		F->h[i].kind = H_FREE;
		files_reply_err(F, q, -EIO, "cannot read the model", 0);
		return -1;
	default:
		F->h[i].kind = H_FREE;
		model_refuse_unknown(F, q);
		return -1;
	}
}
