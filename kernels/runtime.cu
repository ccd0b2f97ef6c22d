// SPDX-License-Identifier: MIT
// The runtime image: every kernel gpuos launches, in one module loaded once
// before the runtime spins. runtime/ is instantiated here for the GPU; no
// logic lives in this file beyond the entry points.
//   gpuos_rt_kernel      the persistent runtime, one service warp per block, and
//                        the metadata warp in block nwarps (when d->meta)
//   gpuos_loop_kernel    the gpu-null loopback controller (loopback.cuh)
//   gpuos_bench_client   a measuring client (bench/bench_client.cuh)
//   gpuos_dma_gather     the emulated controller's batched small copies (dma_gather.cuh)
//   gpuos_dequant_kernel quantised tensors into F32, F16 or BF16 (dequant.cuh)
#include "../runtime/engine.c"
#include "../runtime/recover.c"
#include "../runtime/files_loop.c"
#include "../runtime/files_io.c"
#include "../runtime/files_fs.c"
#include "../runtime/files_model.c"
#include "../runtime/model/model.c"
#include "../runtime/model/gguf/gguf_open.c"
#include "../runtime/model/gguf/gguf.c"
#include "../runtime/model/safetensors/st_open.c"
#include "../runtime/model/safetensors/safetensors.c"
#include "../runtime/fs/fs.c"
#include "../runtime/fs/ext4/ext4_super.c"
#include "../runtime/fs/ext4/ext4_map.c"
#include "../runtime/fs/ext4/ext4_dir.c"
#include "../runtime/gpt.c"
#include "../runtime/crc.c"
#include "../runtime/status.c"
#include "loopback.cuh"
#include "../bench/bench_client.cuh"
#include "dma_gather.cuh"
#include "dequant.cuh"

// Shared memory per service warp: its state and queue pairs, for the
// largest configuration (runtime/engine/state.h); static shared memory is
// at most 48 KiB.
static_assert(GPUOS_RT_LOCAL_MAX_BYTES <= 48u * 1024u, "a warp's state fits static shared memory");

// The descriptor comes by value (boot/sys/sys_run.c): read-only, it is read from the
// kernel's parameter space through the constant cache, which the service
// loop's acquire loads do not invalidate (an L2 round trip per field else).
extern "C" __global__ void __launch_bounds__(32) gpuos_rt_kernel(const __grid_constant__ struct gpuos_rt_desc desc)
{
	const struct gpuos_rt_desc *d = &desc;
	// The warp's working state, in shared memory while it runs (rt.h).
	__shared__ __align__(64) unsigned long long local[(GPUOS_RT_LOCAL_MAX_BYTES + 7u) / 8u];
	if (blockIdx.x < d->nwarps)
		gpuos_rt_warp_run(d, blockIdx.x, local, sizeof(local));
	else if (blockIdx.x == d->nwarps)
		gpuos_rt_meta_run(d);
}
