#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The llama engine's tensor types (issue 19, apps/llama/quant.h): built for
# the host and as device code, then compared bit for bit with
# tests/tools/quant_ref.py, an independent model of ggml's types in Python:
# dequantised rows of F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K and Q6_K, the
# activations in each type's dot type, the dot products (in ggml's order,
# and as the engine's 32 lanes take them: apps/llama/lanes.h, issue 34), and
# binary16 and bfloat16 conversions.
# Usage: tests/emu/llama_quant.sh BUILD_DIR
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
out=$build/llama
mkdir -p "$out"

echo "== apps/llama/quant.h"
check "builds for the host (gcc, C11, -Wall -Wextra -Werror)" \
	gcc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -Iinclude -o "$out/quant_check" tests/tools/quant_check.c
printf '#include "apps/llama/lanes.h"\n__global__ void k(const void *r, const void *a, float *o, unsigned t)\n{ o[0] = llama_dot(t, r, a, 256); gpuos_dequant_row(t, r, o + 1, 256); llama_quantize_act(llama_dot_type(t), o + 1, o + 300, 256); llama_rows_dot(t, (const uint8_t *)r, (const uint8_t *)a, 0, 1, 256, threadIdx.x %% 32, o + 600); }\n' > "$out/quant_dev.cu"
check "builds as device code (nvcc, sm_90)" \
	"$nvcc" -std=c++17 -arch=sm_90 -Iinclude -I. -Xcompiler -Wall -c "$out/quant_dev.cu" -o "$out/quant_dev.o"
if [ -x "$out/quant_check" ]; then
	python3 tests/tools/quant_ref.py "$out/quant_check" > "$out/quant.log" 2>&1
	rc=$?
	sed 's/^/    /' "$out/quant.log"
	check "every bit equal to the Python model (9 comparisons)" test $rc -eq 0 -a "$(grep -c '^ok ' "$out/quant.log")" -eq 9
fi
echo "llama_quant: $pass passed, $fail failed"
[ $fail -eq 0 ]
