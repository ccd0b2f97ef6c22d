// SPDX-License-Identifier: MIT
// gpuos_dequant's kernel (gpuos/host.h; the values are gpuos/quant.h's):
// thread k of K converts elements k, k + K, ... of the tensor, so that a
// warp writes 32 neighbouring elements (coalesced) and reads the one block
// they share. Built into the runtime image so that it is loaded before the
// runtime spins (docs/platform.md: no module loads later); boot/sys/sys_dequant.c
// launches it on a stream of the library's own and waits for that stream.
#include "gpuos/quant.h"

extern "C" __global__ void __launch_bounds__(256) gpuos_dequant_kernel(const struct gpuos_dequant_job j)
{
	gpuos_dequant_span(j.type, (const void *)(uintptr_t)j.src, j.out_type, (void *)(uintptr_t)j.dst,
			   (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, (uint64_t)gridDim.x * blockDim.x, j.n);
}
