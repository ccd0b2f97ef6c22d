#!/usr/bin/env bash
# Device call of issue 34's tenth session (from the repository root on the
# GPU machine, the build carried as build-c: `OUTDIR=$OUT bash
# bench/device/llama_call4.sh`): the final tree's engine (after the
# model-format seam and llama.c's split) on the 80-layer model, resident
# twice at batch 1, the HBM copy and the products, then --vram-gib 20 at
# batch 1 and 16 and the link while the budget lasts.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUTDIR:?}; start=$SECONDS; budget=${BUDGET:-560}
left() { echo $((budget - (SECONDS - start))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
R=/tmp/out/bench; mkdir -p $R
timeout $(left) bash bench/llama.sh build-c $R make resident d2d products 2>&1 | tee "$out/bench4.log"
echo "bench at $((SECONDS - start)) s"
mkdir -p /tmp/out/again/llama && cp $R/llama/d2d.json /tmp/out/again/llama/ 2>/dev/null
[ "$(left)" -gt 40 ] && timeout $(($(left) - 5)) bash bench/llama.sh build-c /tmp/out/again resident products 2>&1 | tee -a "$out/bench4.log"
echo "again at $((SECONDS - start)) s"
[ "$(left)" -gt 90 ] && timeout $(($(left) - 5)) bash bench/llama.sh build-c $R vram vram-b16 h2d 2>&1 | tee -a "$out/bench4.log"
tar -C /tmp/out -cf "$out/results4.tar" . 2>/dev/null
echo "done at $((SECONDS - start)) s"
