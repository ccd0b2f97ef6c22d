#!/usr/bin/env bash
# Device call 1 of issue 34's ninth session (from the repository root on
# the GPU machine, the build carried as build-c: `OUTDIR=$OUT bash
# bench/device/llama_call1.sh`): the GPU referee for the engine, then the 80-layer
# model and the resident case, the HBM copy, the products; variants while
# the budget lasts. OUTDIR gets the logs and bench/llama.sh's results.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUTDIR:?}; start=$SECONDS; budget=${BUDGET:-560}
left() { echo $((budget - (SECONDS - start))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
timeout 240 bash tests/gpu/llama.sh build-c > "$out/llama-gpu.log" 2>&1; rc=$?
grep -E "FAIL|llama gpu:" "$out/llama-gpu.log"
echo "llama.sh rc $rc at $((SECONDS - start)) s"
[ $rc -eq 0 ] || { tail -30 "$out/llama-gpu.log"; exit 1; }
R=/tmp/out/bench; mkdir -p $R
timeout $(left) bash bench/llama.sh build-c $R make resident d2d products 2>&1 | tee "$out/bench1.log"
echo "bench at $((SECONDS - start)) s"
for v in rows nopf head; do # cubins built beside llama.cubin: -DLLAMA_UNIT=1048576u, -DLLAMA_PREFETCH=0, and the engine of 892eb18
	[ "$(left)" -gt 75 ] || break
	mkdir -p /tmp/out/$v/llama && cp $R/llama/d2d.json /tmp/out/$v/llama/
	LLAMA_APP=build-c/apps/llama-$v.cubin timeout $(($(left) - 5)) bash bench/llama.sh build-c /tmp/out/$v resident products 2>&1 | tee -a "$out/bench1.log"
	echo "$v at $((SECONDS - start)) s"
done
tar -C /tmp/out -cf "$out/results1.tar" . 2>/dev/null
echo "done at $((SECONDS - start)) s"
