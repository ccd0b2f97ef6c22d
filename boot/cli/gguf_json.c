/* SPDX-License-Identifier: MIT */
/* A GGUF's tables as JSON and as text (gguf_json.h). */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "gguf_json.h"

void gguf_view_of_export(struct gguf_view *v, const struct gpuos_gguf_export *x)
{
	memset(v, 0, sizeof(*v));
	v->version = x->version;
	v->alignment = x->alignment;
	v->n_layers = x->n_layers;
	v->tensor_count = x->tensor_count;
	v->kv_count = x->kv_count;
	v->data_offset = x->data_offset;
	v->n_tensors = (uint32_t)x->tensor_count;
	v->n_kv = (uint32_t)x->kv_count;
	v->tensors = (const struct gpuos_gguf_tensor *)((const char *)x + x->tensors_off);
	v->kv = (const struct gpuos_gguf_kv *)((const char *)x + x->kv_off);
	v->arena = (const uint8_t *)x + x->arena_off;
	v->flags = x->flags;
	v->shards = x->shards;
	v->split_no = x->split_no;
	v->split_count = x->split_count;
}

static const char *type_name(uint32_t t)
{
	const char *n = gpuos_gguf_type_name(t);
	return n ? n : "?";
}

static void scalar(struct json *j, const char *key, uint32_t type, union gpuos_gguf_value v)
{
	switch (type) {
	case GPUOS_GGUF_TYPE_UINT8:
	case GPUOS_GGUF_TYPE_UINT16:
	case GPUOS_GGUF_TYPE_UINT32:
	case GPUOS_GGUF_TYPE_UINT64:
		json_u64(j, key, v.u64);
		break;
	case GPUOS_GGUF_TYPE_INT8:
	case GPUOS_GGUF_TYPE_INT16:
	case GPUOS_GGUF_TYPE_INT32:
	case GPUOS_GGUF_TYPE_INT64:
		json_i64(j, key, v.i64);
		break;
	case GPUOS_GGUF_TYPE_FLOAT32:
	case GPUOS_GGUF_TYPE_FLOAT64:
		json_dbl(j, key, v.f64);
		break;
	case GPUOS_GGUF_TYPE_BOOL:
		json_bool(j, key, v.u64 != 0);
		break;
	default:
		json_null(j, key);
	}
}

static void items(struct json *j, const struct gguf_view *v, const struct gpuos_gguf_arr *a, int level);

/* An array's members: "elem_type", "count" and, for the KV's own array
 * (level 0) and the arrays directly in it (level 1), "value": the items kept. */
static void arr_members(struct json *j, const struct gguf_view *v, const struct gpuos_gguf_arr *a, int level)
{
	json_str(j, "elem_type", type_name(a->elem_type));
	json_u64(j, "count", a->count);
	if (level <= 1)
		items(j, v, a, level);
}

/* The "value" list of an array at nesting level (0: the KV's own). */
static void items(struct json *j, const struct gguf_view *v, const struct gpuos_gguf_arr *a, int level)
{
	const void *it = v->arena + a->items_off;
	uint32_t i;

	json_arr(j, "value");
	for (i = 0; i < a->n_items; i++) {
		if (a->elem_type == GPUOS_GGUF_TYPE_STRING) {
			const struct gpuos_gguf_str *s = (const struct gpuos_gguf_str *)it + i;
			json_strn(j, NULL, v->arena + s->off, s->len);
		} else if (a->elem_type == GPUOS_GGUF_TYPE_ARRAY) {
			json_obj(j, NULL);
			arr_members(j, v, (const struct gpuos_gguf_arr *)it + i, level + 1);
			json_end(j);
		} else {
			scalar(j, NULL, a->elem_type, ((const union gpuos_gguf_value *)it)[i]);
		}
	}
	json_end(j);
}

void gguf_json_kv_value(struct json *j, const char *key, const struct gguf_view *v, const struct gpuos_gguf_kv *kv)
{
	if (kv->type == GPUOS_GGUF_TYPE_ARRAY) {
		json_obj(j, key);
		arr_members(j, v, &kv->arr, 0);
		json_end(j);
	} else if (kv->type == GPUOS_GGUF_TYPE_STRING) {
		json_strn(j, key, v->arena + kv->str.off, kv->str.len);
	} else {
		scalar(j, key, kv->type, kv->val);
	}
}

void gguf_json_write(struct json *j, const struct gguf_view *v)
{
	uint32_t i, d;

	json_u64(j, "version", v->version);
	json_u64(j, "tensor_count", v->tensor_count);
	json_u64(j, "kv_count", v->kv_count);
	json_u64(j, "alignment", v->alignment);
	json_u64(j, "data_offset", v->data_offset);
	json_u64(j, "layers", v->n_layers);
	if (v->flags & (GPUOS_GGUF_F_SPLIT | GPUOS_GGUF_F_SHARD)) {
		json_obj(j, "split");
		json_u64(j, "count", v->split_count);
		if (v->flags & GPUOS_GGUF_F_SHARD)
			json_u64(j, "no", v->split_no);
		json_arr(j, "shards");
		for (i = 0; i < v->shards && v->shard_paths; i++)
			json_str(j, NULL, v->shard_paths[i]);
		json_end(j);
		json_end(j);
	}
	json_arr_lines(j, "kv");
	for (i = 0; i < v->n_kv; i++) {
		const struct gpuos_gguf_kv *kv = &v->kv[i];
		json_obj(j, NULL);
		json_strn(j, "key", v->arena + kv->key_off, kv->key_len);
		json_str(j, "type", type_name(kv->type));
		if (kv->type == GPUOS_GGUF_TYPE_ARRAY)
			arr_members(j, v, &kv->arr, 0);
		else
			gguf_json_kv_value(j, "value", v, kv);
		if (kv->flags & GPUOS_GGUF_KV_TRUNCATED)
			json_bool(j, "truncated", 1);
		json_end(j);
	}
	json_end(j);
	json_arr_lines(j, "tensors");
	for (i = 0; i < v->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &v->tensors[i];
		const char *tn = gpuos_ggml_type_name(t->type);
		json_obj(j, NULL);
		json_strn(j, "name", t->name, t->name_len);
		json_str_or_null(j, "type", tn);
		json_u64(j, "type_id", t->type);
		json_arr(j, "dims");
		for (d = 0; d < t->n_dims; d++)
			json_u64(j, NULL, t->ne[d]);
		json_end(j);
		json_u64(j, "rel_offset", t->rel_off);
		json_u64(j, "abs_offset", t->abs_off);
		json_u64(j, "byte_size", t->size);
		if (v->flags & GPUOS_GGUF_F_SPLIT)
			json_u64(j, "shard", t->shard);
		json_end(j);
	}
	json_end(j);
}

/* One scalar as text: integers exactly, floats with %g. */
static void scalar_text(FILE *f, uint32_t type, union gpuos_gguf_value v)
{
	switch (type) {
	case GPUOS_GGUF_TYPE_INT8:
	case GPUOS_GGUF_TYPE_INT16:
	case GPUOS_GGUF_TYPE_INT32:
	case GPUOS_GGUF_TYPE_INT64:
		fprintf(f, "%" PRId64, v.i64);
		break;
	case GPUOS_GGUF_TYPE_FLOAT32:
	case GPUOS_GGUF_TYPE_FLOAT64:
		fprintf(f, "%g", v.f64);
		break;
	case GPUOS_GGUF_TYPE_BOOL:
		fputs(v.u64 ? "true" : "false", f);
		break;
	default:
		fprintf(f, "%" PRIu64, v.u64);
	}
}

/* A string as text: its first 60 bytes or so (not cut inside a UTF-8
 * character), escaped (cli.h), quoted. */
static void str_text(FILE *f, const uint8_t *s, uint32_t len, uint64_t full)
{
	uint32_t i, n = len < 60u ? len : 60u;
	for (i = 0; i < 3 && n < len && (s[n] & 0xc0) == 0x80; i++)
		n--;
	fputc('\'', f);
	cli_put_escaped(f, s, n);
	fputc('\'', f);
	if (full > n)
		fprintf(f, "... (%" PRIu64 " bytes)", full);
}

/* Spaces after a column of `wrote` bytes, up to width. */
static void pad(FILE *f, size_t wrote, size_t width)
{
	for (; wrote < width; wrote++)
		fputc(' ', f);
}

void gguf_text_write(FILE *f, const struct gguf_view *v)
{
	uint32_t i, k, d;

	fprintf(f, "GGUF v%u: %" PRIu64 " KVs, %" PRIu64 " tensors, alignment %u, data at byte %" PRIu64 ", %u layers\n",
		v->version, v->kv_count, v->tensor_count, v->alignment, v->data_offset, v->n_layers);
	if (v->flags & GPUOS_GGUF_F_SHARD)
		fprintf(f, "gguf-split shard %u of %u, alone (without --shard: the whole model)\n", v->split_no + 1u,
			v->split_count);
	if (v->flags & GPUOS_GGUF_F_SPLIT) {
		fprintf(f, "one model in %u gguf-split shards (header, KVs and alignment: the first's):\n", v->shards);
		for (i = 0; i < v->shards; i++) {
			uint32_t n = 0;
			for (k = 0; k < v->n_tensors; k++)
				n += v->tensors[k].shard == i;
			fprintf(f, "  %5u: %s, %u tensors\n", i + 1u, v->shard_paths ? v->shard_paths[i] : "?", n);
		}
	}
	fprintf(f, "KVs:\n");
	for (i = 0; i < v->n_kv; i++) {
		const struct gpuos_gguf_kv *kv = &v->kv[i];
		fprintf(f, "  %5u: %-8s ", i, kv->type == GPUOS_GGUF_TYPE_ARRAY ? "array" : type_name(kv->type));
		pad(f, cli_put_escaped(f, v->arena + kv->key_off, kv->key_len), 40);
		fputs(" = ", f);
		if (kv->type == GPUOS_GGUF_TYPE_STRING) {
			str_text(f, v->arena + kv->str.off, kv->str.len, kv->str.full_len);
		} else if (kv->type == GPUOS_GGUF_TYPE_ARRAY) {
			const void *it = v->arena + kv->arr.items_off;
			/* long arrays (vocabularies) summarised: the first items and the count */
			fprintf(f, "[%s x %" PRIu64 "]", type_name(kv->arr.elem_type), kv->arr.count);
			for (k = 0; k < kv->arr.n_items && k < 5u; k++) {
				fputs(k ? ", " : " ", f);
				if (kv->arr.elem_type == GPUOS_GGUF_TYPE_STRING) {
					const struct gpuos_gguf_str *s = (const struct gpuos_gguf_str *)it + k;
					str_text(f, v->arena + s->off, s->len, s->full_len);
				} else if (kv->arr.elem_type == GPUOS_GGUF_TYPE_ARRAY) {
					const struct gpuos_gguf_arr *in = (const struct gpuos_gguf_arr *)it + k;
					fprintf(f, "[%s x %" PRIu64 "]", type_name(in->elem_type), in->count);
				} else {
					scalar_text(f, kv->arr.elem_type, ((const union gpuos_gguf_value *)it)[k]);
				}
			}
			if (kv->arr.count > k)
				fputs(", ...", f);
		} else {
			scalar_text(f, kv->type, kv->val);
		}
		fputc('\n', f);
	}
	fprintf(f, "tensors:\n");
	for (i = 0; i < v->n_tensors; i++) {
		const struct gpuos_gguf_tensor *t = &v->tensors[i];
		const char *tn = gpuos_ggml_type_name(t->type);
		char shape[96];
		int o = 0;
		for (d = 0; d < t->n_dims && o < (int)sizeof(shape); d++)
			o += snprintf(shape + o, sizeof(shape) - (size_t)o, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
		if (t->n_dims == 0)
			snprintf(shape, sizeof(shape), "scalar");
		fprintf(f, "  %5u: %-6s %-24s ", i, tn ? tn : "?", shape);
		pad(f, cli_put_escaped(f, t->name, t->name_len), 40);
		fprintf(f, " %12" PRIu64 " bytes at %" PRIu64, t->size, t->abs_off);
		if (v->flags & GPUOS_GGUF_F_SPLIT)
			fprintf(f, " of shard %u", t->shard + 1u);
		fputc('\n', f);
	}
}
