#!/usr/bin/env bash
# Device call 3 (issue 34): the 80-layer model again, then the engine of
# this tree (llama.cubin) against its variants in the same run: a1
# (-DLLAMA_AHEAD=1) and v1 (the tree before: 32 norm parts, one unit
# ahead), each resident case twice; then --vram-gib 20 at batch 1 and 16,
# and the link.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUTDIR:?}; start=$SECONDS; budget=${BUDGET:-520}
left() { echo $((budget - (SECONDS - start))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
R=/tmp/out/bench; mkdir -p $R
timeout $(left) bash bench/llama.sh build-c $R make resident d2d products 2>&1 | tee "$out/bench3.log"
echo "bench at $((SECONDS - start)) s"
for v in a1 v1 v2 a1b v1b; do
	[ "$(left)" -gt 40 ] || break
	app=build-c/apps/llama-${v%b}.cubin; [ "${v%b}" = v2 ] && app=build-c/apps/llama.cubin
	mkdir -p /tmp/out/$v/llama && cp $R/llama/d2d.json /tmp/out/$v/llama/
	LLAMA_APP=$app timeout $(($(left) - 5)) bash bench/llama.sh build-c /tmp/out/$v resident products 2>&1 | grep -E "tokens/s|products" | tee -a "$out/bench3.log"
	echo "$v at $((SECONDS - start)) s"
done
[ "$(left)" -gt 75 ] && timeout $(($(left) - 5)) bash bench/llama.sh build-c $R vram vram-b16 h2d 2>&1 | tee -a "$out/bench3.log"
tar -C /tmp/out -cf "$out/results3.tar" . 2>/dev/null
echo "done at $((SECONDS - start)) s"
