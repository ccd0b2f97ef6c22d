#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The runtime's figures (docs/benchmarks.md): round trip of one 4 KiB
# READ_RAW through gpu-null, requests/s with W = 1, 4, 16, 64 service warps on
# gpu-null and on emu:...,backend=null, the service's CPU time, and GPU
# clients in other processes (bench/xproc.sh).
# Usage: bench/run.sh BUILD_DIR   (needs a GPU for the GPU rows)
set -u
build=${1:-build}
g=$build/gpuos
echo "# gpuos bench, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no GPU')"
echo "## round trip, one client thread, 4 KiB READ_RAW, gpu-null"
"$g" bench --device gpu-null --threads 1 --iters 20000 --json
echo "## round trip, one client thread, NOP, gpu-null"
"$g" bench --device gpu-null --threads 1 --iters 20000 --op nop --json
for dev in gpu-null "emu:null,backend=null,size=1T,queues=128,workers=8"; do
	echo "## requests/s, 4 KiB READ_RAW, $dev"
	for w in 1 4 16 64; do
		"$g" bench --device "$dev" --warps $w --queues $((w * 2)) --depth 1024 --slots 256 \
			--mbox-slots $((w * 1024)) --threads $((w * 1024)) --iters 200 --json
	done
done
echo "## GPU clients in other processes (under MPS)"
if command -v nvidia-cuda-mps-control > /dev/null; then
	bash "$(dirname "$0")/xproc.sh" "$build"
else
	echo "skipped: no nvidia-cuda-mps-control here"
fi
