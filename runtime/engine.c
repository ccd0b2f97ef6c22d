/* SPDX-License-Identifier: MIT */
/*
 * runtime/engine.c - the request engine of the service warps (docs/design.md,
 * "The request path"), one translation unit of its parts by concern, so that
 * the service loop's calls into them stay inline on the GPU and the host
 * alike (a call in the loop cost 0.4 us a request on the H100):
 *   engine/state.h     a warp's state: command slots, request table, intake
 *   engine/handles.c   the handle and extent-map table (runtime/files.h): the
 *                      handle a request names, and where its bytes lie
 *   engine/intake.c    mailbox intake, and every answer (finish_slot, with
 *                      runtime/answer.h's gpuos_rt_answer, as the metadata warp)
 *   engine/nvme.c      NVMe plan, submit, reap (runtime/nvme_cmd.h: one
 *                      command's life, which the metadata warp's reads share)
 *   engine/timeouts.c  timeouts, resets (runtime/recover.h's one follower),
 *                      a controller's failure
 *   engine/serve.c     the loop, and the entry points boot calls
 *                      (include/gpuos/internal/rt.h)
 * The parts are not compiled alone; kernels/runtime.cu includes this file.
 */
#include "engine/state.h"

#include "engine/handles.c"
#include "engine/intake.c"
#include "engine/nvme.c"
#include "engine/timeouts.c"
#include "engine/serve.c"
