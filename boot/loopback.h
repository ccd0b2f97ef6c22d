/* SPDX-License-Identifier: MIT */
/* boot/loopback.h - the gpu-null controller's extra steps (boot/loopback.c). */
#ifndef GPUOS_BOOT_LOOPBACK_H
#define GPUOS_BOOT_LOOPBACK_H

#include "ctrl.h"

/* Allocate nq queue pairs of depth entries in VRAM and their doorbells;
 * fills the DMA records and the doorbell addresses (runtime space). */
int gpuos_loop_queues(struct gpuos_ctrl *c, uint32_t nq, uint32_t depth, struct gpuos_dma *sq,
		      struct gpuos_dma *cq, uint64_t *sq_db, uint64_t *cq_db, char *err, size_t errlen);
/* Launch the loopback kernel (before the runtime); stop it (after). */
int gpuos_loop_start(struct gpuos_ctrl *c, const void *image, char *err, size_t errlen);
int gpuos_loop_stop(struct gpuos_ctrl *c, char *err, size_t errlen);

#endif /* GPUOS_BOOT_LOOPBACK_H */
