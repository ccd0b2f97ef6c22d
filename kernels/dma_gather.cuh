// SPDX-License-Identifier: MIT
// The emulated controller's gather kernel (gpuos/internal/dma.h, docs/emulator.md,
// "The DMA engine"): block (x, y) copies unit y of piece x, GPUOS_DMA_UNIT
// bytes, from pinned host memory (read over PCIe through its device mapping)
// into VRAM. Built into the runtime image so it is loaded before the runtime
// spins (docs/platform.md: no module loads later). The host orders it: the
// batch's event is recorded after the launch on the same stream.
#include "gpuos/internal/dma.h"

extern "C" __global__ void __launch_bounds__(256) gpuos_dma_gather(const struct gpuos_dma_batch b)
{
	const struct gpuos_dma_piece *p = (const struct gpuos_dma_piece *)(uintptr_t)b.pieces + blockIdx.x;
	const uint64_t off = (uint64_t)blockIdx.y * GPUOS_DMA_UNIT;
	uint64_t len = p->len, dst = p->dst, src = p->src;

	if (blockIdx.x >= b.n || off >= len)
		return;
	len = len - off < GPUOS_DMA_UNIT ? len - off : GPUOS_DMA_UNIT;
	dst += off;
	if (src)
		src += off;
	if (((dst | src | len) & 15u) == 0) {
		uint4 *d = (uint4 *)(uintptr_t)dst;
		const uint4 *s = (const uint4 *)(uintptr_t)src;
		const uint4 z = make_uint4(0, 0, 0, 0);
		for (uint64_t i = threadIdx.x; i < len / 16u; i += blockDim.x)
			d[i] = src ? s[i] : z;
	} else if (((dst | src | len) & 3u) == 0) {
		uint32_t *d = (uint32_t *)(uintptr_t)dst;
		const uint32_t *s = (const uint32_t *)(uintptr_t)src;
		for (uint64_t i = threadIdx.x; i < len / 4u; i += blockDim.x)
			d[i] = src ? s[i] : 0u;
	} else {
		uint8_t *d = (uint8_t *)(uintptr_t)dst;
		const uint8_t *s = (const uint8_t *)(uintptr_t)src;
		for (uint64_t i = threadIdx.x; i < len; i += blockDim.x)
			d[i] = src ? s[i] : 0u;
	}
}
