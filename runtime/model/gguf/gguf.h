/* SPDX-License-Identifier: MIT */
/*
 * runtime/model/gguf/gguf.h - GGUF v2/v3 model headers, parsed where the
 * runtime runs (a GPU lane or a host thread), into the model tables
 * (runtime/model/tables.h). The runtime reaches it through
 * runtime/model/model.h alone.
 *
 * Format (ggml docs/gguf.md; all little-endian; v2 and v3 differ only in that
 * v3 may be big-endian, which this parser refuses):
 *
 *   magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count x  { string key | u32 value_type | value }
 *   tensor_count x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment (default 32) | tensor data
 *
 *   string = u64 length | bytes (no NUL);  array = u32 elem_type | u64 count | values
 *
 * The parser sees only a gpuos_meta_io whose byte 0 is the GGUF's byte 0: a
 * file inside ext4 (the io walks its extent map) or a GGUF written raw at a
 * byte offset of the device (the io adds the offset) look the same. It reads
 * through a 4 KiB window in the parser state, so a header costs a handful of
 * reads even when every read is an NVMe command.
 *
 * Every length, count and offset on disk is hostile: each is bounded by the
 * io's size (the file's size, or for a raw GGUF the device's size less its
 * offset, so that tensors are checked against what can be read) and by the
 * limits below, all
 * arithmetic is checked, arrays nest at most GPUOS_GGUF_MAX_DEPTH deep and
 * are walked with an explicit stack (no recursion).
 *
 * Memory: none of its own. The caller hands in the tensor table, the KV table,
 * an arena for keys, strings and array items, and (optionally) a hash index
 * over tensor names, in struct gpuos_gguf_mem; any of them may be NULL with
 * capacity 0 to mean "not wanted". Results live in struct gpuos_gguf and in
 * that memory, so on the GPU they stay in device memory and can be cached.
 */
#ifndef GPUOS_RUNTIME_MODEL_GGUF_H
#define GPUOS_RUNTIME_MODEL_GGUF_H

#include "gpuos/gguf.h"
#include "../tables.h"
#include "../../meta_io.h"

GPUOS_EXTERN_C_BEGIN

/* Constants, value types and the result records: gpuos/gguf.h; the tables
 * a parse fills and their lookups: ../tables.h. */

/* Parser state and error report. Large (the read window): keep it in global
 * memory on the GPU, not on a lane's stack. */
struct gpuos_gguf_parser {
	/* after a failed parse: what and where */
	const char *why;            /* static string, e.g. "offset past end of file" */
	uint64_t err_off;           /* file offset being read when it failed */
	uint64_t bad;               /* the offending number (type, version, count), else 0 */
	int64_t err_kv;             /* index of the KV being parsed, or -1 */
	int64_t err_tensor;         /* index of the tensor being parsed, or -1 */
	char subject[GPUOS_GGUF_NAME_MAX]; /* its key or name (cut, NUL-terminated), or "" */
	/* private */
	const struct gpuos_meta_io *io;
	uint64_t pos;
	uint64_t win_off;
	uint32_t win_len;
	uint32_t depth;
	uint32_t nospace;           /* a table, the arena or the index ran out */
	struct {
		uint64_t count;
		uint64_t done;
		uint32_t elem_type;
		uint32_t items_off;  /* arena offset of the kept items */
		uint16_t keep;       /* the first items of this level are kept (or counted) */
		uint16_t stored;     /* ... and there is arena for them at items_off */
		uint32_t level;
	} stack[GPUOS_GGUF_MAX_DEPTH];
	uint64_t max_end;           /* largest rel_off + size so far */
	uint64_t max_tensor;        /* the index of the tensor that has it */
	char max_name[GPUOS_GGUF_NAME_MAX]; /* the tensor that has it */
	struct gpuos_gguf_kv kv_scratch;    /* a KV past mem.kv_cap, parsed to measure */
	struct gpuos_gguf_str str_scratch;  /* an item that did not fit the arena */
	struct gpuos_gguf_arr arr_scratch;
	uint8_t win[GPUOS_GGUF_WINDOW];
};

/* ---- API ------------------------------------------------------------------------ */

/*
 * Parse the GGUF that io covers from byte 0. g->mem must be set; everything
 * else in g is overwritten. p is scratch plus the error report.
 * Context: one lane or one host thread; blocks in io reads.
 * Returns 0, or
 *   -EINVAL           corrupt (p->why says what; also: not a GGUF, bad magic)
 *   -EPROTONOSUPPORT  GGUF version 1, unknown version, big-endian GGUF
 *   -EOVERFLOW        a size or offset does not fit in 64 bits
 *   -ENAMETOOLONG     a tensor name >= GPUOS_GGUF_NAME_MAX or a key > GPUOS_GGUF_KEY_MAX
 *   -ENOSPC           a table, the arena or the index is too small; the whole file
 *                     was still validated and g's counts and arena_used say what
 *                     is needed (arena_used counts only when mem.kv is non-NULL:
 *                     to measure, pass mem.kv with kv_cap 0 and no arena)
 *   -EIO              the io failed
 */
GPUOS_HD int gpuos_gguf_parse(struct gpuos_gguf *g, struct gpuos_gguf_parser *p,
			      const struct gpuos_meta_io *io);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_MODEL_GGUF_H */
