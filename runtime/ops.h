/* SPDX-License-Identifier: MIT */
/*
 * runtime/ops.h - the one opcode table (issue 35): each mailbox opcode the
 * runtime serves, the warp that answers it, the right it needs and, for
 * the metadata warp's opcodes, its handler. The service warp's intake
 * (runtime/engine/intake.c, accept) and the metadata warp's dispatch
 * (runtime/files_loop.c, serve) are both made from it, so a new opcode is
 * a row here, a handler and a test; an opcode with no row is answered
 * BAD_OPCODE by both, never by a range check that missed it.
 *
 * Context: any (host thread or GPU lane); no state.
 */
#ifndef GPUOS_RUNTIME_OPS_H
#define GPUOS_RUNTIME_OPS_H

#include "gpuos/abi.h"

GPUOS_EXTERN_C_BEGIN

/* Who answers an opcode. */
enum rt_route {
	RT_ROUTE_NONE = 0, /* no row: BAD_OPCODE */
	RT_ROUTE_NOP,      /* the service warp, at once */
	RT_ROUTE_RAW,      /* the service warp: namespace bytes, planned into NVMe reads */
	RT_ROUTE_FILE,     /* the service warp: a file's bytes by its extent map (else forwarded) */
	RT_ROUTE_META,     /* forwarded to the metadata warp, whose parsers block */
	RT_ROUTE_REFUSED,  /* reserved and never served: DENIED */
};

/* What a request of it needs besides a well-formed request. */
enum rt_need {
	RT_NEED_NONE = 0,
	RT_NEED_RAW = 1,     /* --allow-raw, and a client given the raw right */
	RT_NEED_FILES = 2,   /* a file system (the metadata warp runs) */
	RT_NEED_SERVICE = 4, /* mailbox 0, the service's own: never a client's */
};

/* X(OPCODE, ROUTE, NEEDS, METADATA WARP HANDLER): the rows. A handler
 * serves the request on the metadata warp (runtime/files_*.c); READ's
 * serves a forwarded read (a file whose map the service warp has not got);
 * files_op_not_forwarded stands for the opcodes the service warp answers
 * itself. */
#define GPUOS_RT_OPS(X)                                                                         \
	X(NOP, RT_ROUTE_NOP, RT_NEED_NONE, files_op_not_forwarded)                              \
	X(READ_RAW, RT_ROUTE_RAW, RT_NEED_RAW, files_op_not_forwarded)                          \
	X(WRITE_RAW, RT_ROUTE_REFUSED, RT_NEED_NONE, files_op_not_forwarded)                    \
	X(OPEN, RT_ROUTE_META, RT_NEED_FILES, files_op_open)                                    \
	X(STAT, RT_ROUTE_META, RT_NEED_FILES, files_op_stat)                                    \
	X(READDIR, RT_ROUTE_META, RT_NEED_FILES, files_op_readdir)                              \
	X(READ, RT_ROUTE_FILE, RT_NEED_FILES, files_op_read_meta)                               \
	X(CLOSE, RT_ROUTE_META, RT_NEED_FILES, files_op_close)                                  \
	X(RELEASE, RT_ROUTE_META, RT_NEED_FILES | RT_NEED_SERVICE, files_op_release)            \
	X(PARTS, RT_ROUTE_META, RT_NEED_FILES, files_op_parts)                                  \
	X(GGUF_OPEN, RT_ROUTE_META, RT_NEED_FILES, files_op_model_open)                         \
	X(GGUF_INFO, RT_ROUTE_META, RT_NEED_FILES, files_op_model_info)                         \
	X(GGUF_FIND, RT_ROUTE_META, RT_NEED_FILES, files_op_model_find)                         \
	X(GGUF_TENSOR, RT_ROUTE_META, RT_NEED_FILES, files_op_model_tensor)                     \
	X(GGUF_LOAD, RT_ROUTE_FILE, RT_NEED_FILES, files_op_not_forwarded)                      \
	X(GGUF_LAYER, RT_ROUTE_META, RT_NEED_FILES, files_op_model_layer)

/* Opcode op's row: its route and needs (RT_ROUTE_NONE: not an opcode). */
struct rt_op {
	uint8_t route, need;
};

GPUOS_INLINE GPUOS_HD struct rt_op rt_op_of(uint32_t op)
{
	struct rt_op r = { RT_ROUTE_NONE, RT_NEED_NONE };
	switch (op) {
#define GPUOS_RT_OP_ROW(name, route_, need_, handler) \
	case GPUOS_OP_##name:                          \
		r.route = (uint8_t)(route_);           \
		r.need = (uint8_t)(need_);             \
		break;
		GPUOS_RT_OPS(GPUOS_RT_OP_ROW)
#undef GPUOS_RT_OP_ROW
	default:
		break;
	}
	return r;
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_OPS_H */
