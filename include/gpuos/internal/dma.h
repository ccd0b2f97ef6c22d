/* SPDX-License-Identifier: MIT */
/*
 * gpuos/internal/dma.h - the gather kernel's piece list (docs/emulator.md): the emulated
 * controller's DMA engine moves many small pieces from pinned host memory
 * into VRAM with one kernel launch (kernels/dma_gather.cuh) instead of one
 * copy-engine call each. Written by a host thread into pinned memory before
 * the launch, read by the kernel.
 */
#ifndef GPUOS_DMA_H
#define GPUOS_DMA_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

/* Bytes one block of the gather kernel copies of a piece. */
#define GPUOS_DMA_UNIT 16384u

struct gpuos_dma_piece {
	uint64_t dst;          /* 0x00 device address */
	uint64_t src;          /* 0x08 device address of pinned host memory; 0 = zeros */
	uint64_t len;          /* 0x10 bytes */
	uint64_t rsvd18;       /* 0x18 */
};
static_assert(sizeof(struct gpuos_dma_piece) == 32, "dma piece size");

/* The kernel's one parameter, by value. */
struct gpuos_dma_batch {
	uint64_t pieces;       /* 0x00 const struct gpuos_dma_piece *, device address */
	uint32_t n;            /* 0x08 pieces */
	uint32_t rsvd0c;       /* 0x0c */
};
static_assert(sizeof(struct gpuos_dma_batch) == 16, "dma batch size");

GPUOS_EXTERN_C_END

#endif /* GPUOS_DMA_H */
