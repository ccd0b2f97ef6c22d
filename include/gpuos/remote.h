/* SPDX-License-Identifier: MIT */
/*
 * gpuos/remote.h - loads from another GPU's runtime (docs/scale-out.md): an
 * app on GPU B asks the runtime of GPU A for a byte range of a file or a
 * tensor of a model; A loads it and puts it into B's receive buffer, then
 * answers. The wire format and its checks, for host and device code alike;
 * the transport (NVSHMEM's put and signal between PEs, or the tests' own
 * in one process) is the caller's (apps/remote).
 *
 * Every PE holds the same area (NVSHMEM's symmetric heap) and a receive
 * buffer of the same size. Client PE c uses its slot k of server PE s:
 *  1. put its request into s's req[c][k], then raise s's req_sig[c][k] to
 *     the request's seq (put with signal: the request lands before the
 *     signal; seq counts up from 1 for each slot);
 *  2. s sees req_sig[c][k] above the last seq it served there, checks the
 *     request (gpuos_remote_check), loads the bytes through its runtime,
 *     puts them into c's receive buffer at req.dst, fences, puts the answer
 *     into c's res[k] and raises c's res_sig[k] to seq;
 *  3. c waits for res_sig[k] == seq; the answer says the status and the
 *     bytes put.
 * A client can only name bytes of its own receive buffer (dst and length
 * are checked against its size), and files the server's runtime lets any
 * of its clients read (its --root); it cannot reach raw device bytes.
 */
#ifndef GPUOS_REMOTE_H
#define GPUOS_REMOTE_H

#include <stdint.h>

#include "gpuos/abi.h"
#include "gpuos/port.h"

#define GPUOS_REMOTE_PES      8u    /* PEs of a job at most (a server's clients included) */
#define GPUOS_REMOTE_SLOTS    8u    /* requests in flight per client and server */
#define GPUOS_REMOTE_NAME_MAX 128u  /* a path or a tensor name, its NUL included */

enum gpuos_remote_op {
	GPUOS_REMOTE_RANGE = 1,   /* bytes [offset, offset + length) of the file at name */
	GPUOS_REMOTE_TENSOR = 2,  /* bytes of the served model's tensor called name (length 0: to its end) */
};

struct gpuos_remote_req {
	uint32_t op;              /* enum gpuos_remote_op */
	uint32_t seq;             /* this slot's request count: what req_sig is raised to */
	uint64_t offset;          /* in the file, or in the tensor */
	uint64_t length;          /* bytes asked for */
	uint64_t dst;             /* where in the client's receive buffer */
	char name[GPUOS_REMOTE_NAME_MAX];
};

struct gpuos_remote_res {
	uint32_t seq;             /* the request answered */
	uint32_t status;          /* enum gpuos_status */
	uint64_t bytes;           /* bytes put into the receive buffer (short at a file's end) */
};

/* The symmetric area, on every PE: the server side's request slots, one
 * row per client PE, and the client side's answers. */
struct gpuos_remote_area {
	struct gpuos_remote_req req[GPUOS_REMOTE_PES][GPUOS_REMOTE_SLOTS];
	uint64_t req_sig[GPUOS_REMOTE_PES][GPUOS_REMOTE_SLOTS];
	struct gpuos_remote_res res[GPUOS_REMOTE_SLOTS];
	uint64_t res_sig[GPUOS_REMOTE_SLOTS];
	uint64_t stop;            /* raised by the server's own host: the server ends */
};

/* What a request may ask, whoever sent it: a known op, a NUL-terminated
 * name, and bytes that fit in the client's receive buffer of recv_bytes.
 * GPUOS_ST_OK or the status the client is answered with. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_remote_check(const struct gpuos_remote_req *rq, uint64_t recv_bytes)
{
	uint32_t i;
	if (rq->op != GPUOS_REMOTE_RANGE && rq->op != GPUOS_REMOTE_TENSOR)
		return GPUOS_ST_BAD_OPCODE;
	for (i = 0; i < GPUOS_REMOTE_NAME_MAX && rq->name[i]; i++)
		;
	if (i == GPUOS_REMOTE_NAME_MAX)
		return GPUOS_ST_NAMETOOLONG;
	if (i == 0)
		return GPUOS_ST_NOENT;
	if (rq->length > ~0ull - rq->dst || rq->length > ~0ull - rq->offset)
		return GPUOS_ST_OVERFLOW;
	if (rq->dst > recv_bytes || rq->length > recv_bytes - rq->dst)
		return GPUOS_ST_BAD_DST;
	if (rq->op == GPUOS_REMOTE_RANGE && rq->length == 0)
		return GPUOS_ST_BAD_RANGE; /* a range names its length; a tensor's 0 means "to its end" */
	return GPUOS_ST_OK;
}

#endif /* GPUOS_REMOTE_H */
