/* SPDX-License-Identifier: MIT */
/* A model's tensor table as JSON and as text (model_json.h). */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "model_json.h"

const char *model_format(const struct gguf_view *v)
{
	return (v->flags & GPUOS_GGUF_F_SAFETENSORS) ? "safetensors" : "gguf";
}

static uint32_t dims_of(const struct gpuos_gguf_tensor *t)
{
	return t->n_dims < GPUOS_GGUF_MAX_DIMS ? t->n_dims : GPUOS_GGUF_MAX_DIMS;
}

/* Bytes of every tensor: saturated, though no table the runtime accepts
 * comes near 2^64 (its tensors lie inside files). */
static uint64_t total_bytes(const struct gguf_view *v)
{
	uint64_t sum = 0;
	uint32_t i;
	for (i = 0; i < v->n_tensors; i++)
		sum = sum + v->tensors[i].size < sum ? UINT64_MAX : sum + v->tensors[i].size;
	return sum;
}

void model_json_write(struct json *j, const struct gguf_view *v)
{
	uint32_t i, d;

	json_str(j, "format", model_format(v));
	json_u64(j, "tensor_count", v->tensor_count);
	json_u64(j, "bytes", total_bytes(v));
	json_u64(j, "layers", v->n_layers);
	json_u64(j, "shards", v->shards);
	if (v->shard_paths) {
		json_arr(j, "files");
		for (i = 0; i < v->shards; i++)
			json_str(j, NULL, v->shard_paths[i]);
		json_end(j);
	} else {
		json_null(j, "files");
	}
	/* keys are NUL-terminated in the arena; both parsers refuse a NUL inside one */
	json_obj(j, "metadata");
	for (i = 0; i < v->n_kv; i++)
		gguf_json_kv_value(j, (const char *)v->arena + v->kv[i].key_off, v, &v->kv[i]);
	json_end(j);
	json_arr(j, "metadata_truncated");
	for (i = 0; i < v->n_kv; i++)
		if (v->kv[i].flags & GPUOS_GGUF_KV_TRUNCATED)
			json_strn(j, NULL, v->arena + v->kv[i].key_off, v->kv[i].key_len);
	json_end(j);
	json_arr_lines(j, "tensors");
	for (i = 0; i < v->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &v->tensors[i];
		const char *tn = gpuos_model_type_name(t->type);
		json_obj(j, NULL);
		json_strn(j, "name", t->name, t->name_len);
		json_str_or_null(j, "dtype", tn);
		json_arr(j, "shape");
		for (d = dims_of(t); d-- > 0;)
			json_u64(j, NULL, t->ne[d]);
		json_end(j);
		json_u64(j, "offset", t->abs_off);
		json_u64(j, "bytes", t->size);
		if (t->layer >= 0)
			json_u64(j, "layer", (uint64_t)t->layer);
		else
			json_null(j, "layer");
		json_u64(j, "shard", t->shard);
		json_end(j);
	}
	json_end(j);
}

/* "[d0, d1, ...]", the slowest dimension first; "[]" for a scalar. */
static const char *shape_text(char *buf, size_t len, const struct gpuos_gguf_tensor *t)
{
	uint32_t d, n = dims_of(t);
	size_t o = 0;
	buf[o++] = '[';
	for (d = n; d-- > 0 && o < len;)
		o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64, d + 1 < n ? ", " : "", t->ne[d]);
	if (o + 2 <= len) {
		buf[o++] = ']';
		buf[o] = 0;
	} else {
		buf[len - 1] = 0;
	}
	return buf;
}

static size_t digits(uint64_t x)
{
	size_t n = 1;
	while (x >= 10) {
		x /= 10;
		n++;
	}
	return n;
}

#define NAME_TEXT (4u * GPUOS_GGUF_NAME_MAX + 1u) /* an escaped name (cli.h: 4 bytes per byte) */
#define SHAPE_TEXT (2u + GPUOS_GGUF_MAX_DIMS * 22u + 1u)

void model_text_write(FILE *f, const struct gguf_view *v)
{
	char name[NAME_TEXT], shape[SHAPE_TEXT], h[32];
	size_t wn = 4, wt = 5, ws = 5, wo = 6, wb = 5;
	uint64_t bytes = total_bytes(v);
	int split = v->shards > 1;
	uint32_t i;

	fprintf(f, "%s: %" PRIu64 " tensors, %" PRIu64 " bytes (%s), %u layers", model_format(v), v->tensor_count, bytes,
		cli_human(h, sizeof(h), bytes), v->n_layers);
	if (split)
		fprintf(f, ", %u files", v->shards);
	fputc('\n', f);
	if (split && !v->shard_paths)
		fputs("  (named by the index's weight_map: SHARD 0 is the first file it names, 1 the next new one, ...)\n", f);
	for (i = 0; split && v->shard_paths && i < v->shards; i++) {
		fprintf(f, "  shard %u: ", i);
		cli_put_escaped(f, v->shard_paths[i], strlen(v->shard_paths[i]));
		fputc('\n', f);
	}
	if (!v->n_tensors)
		return;
	for (i = 0; i < v->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &v->tensors[i];
		const char *tn = gpuos_model_type_name(t->type);
		wn = GPUOS_MAX(wn, strlen(cli_escaped(name, sizeof(name), t->name)));
		wt = GPUOS_MAX(wt, strlen(tn ? tn : "?"));
		ws = GPUOS_MAX(ws, strlen(shape_text(shape, sizeof(shape), t)));
		wo = GPUOS_MAX(wo, digits(t->abs_off));
		wb = GPUOS_MAX(wb, digits(t->size));
	}
	fprintf(f, "\n%-*s  %-*s  %-*s  %*s  %*s%s\n", (int)wn, "NAME", (int)wt, "DTYPE", (int)ws, "SHAPE", (int)wo,
		"OFFSET", (int)wb, "BYTES", split ? "  SHARD" : "");
	for (i = 0; i < v->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &v->tensors[i];
		const char *tn = gpuos_model_type_name(t->type);
		fprintf(f, "%-*s  %-*s  %-*s  %*" PRIu64 "  %*" PRIu64, (int)wn, cli_escaped(name, sizeof(name), t->name),
			(int)wt, tn ? tn : "?", (int)ws, shape_text(shape, sizeof(shape), t), (int)wo, t->abs_off, (int)wb,
			t->size);
		if (split)
			fprintf(f, "  %5u", t->shard);
		fputc('\n', f);
	}
}
