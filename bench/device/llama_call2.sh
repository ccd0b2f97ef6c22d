#!/usr/bin/env bash
# Device call 2 (issue 34), on the still-warm machine: the model of call 1
# is in /tmp/gpuos-llama and /dev/shm. The variants call 1 had no time for,
# then --vram-gib 20 at batch 1 and 16, the link, all resident at batch 16.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUTDIR:?}; start=$SECONDS; budget=${BUDGET:-560}
left() { echo $((budget - (SECONDS - start))); }
R=/tmp/out/bench; mkdir -p $R
[ -s /tmp/gpuos-llama/table.txt ] || { echo "no model: the machine was not warm"; exit 1; }
timeout $(left) bash bench/llama.sh build-c $R vram vram-b16 h2d 2>&1 | tee "$out/bench2.log"
echo "vram at $((SECONDS - start)) s"
for v in rows nopf head; do
	[ -s /tmp/out/$v/llama/products.json ] && continue
	[ "$(left)" -gt 75 ] || break
	mkdir -p /tmp/out/$v/llama && cp $R/llama/d2d.json /tmp/out/$v/llama/
	LLAMA_APP=build-c/apps/llama-$v.cubin timeout $(($(left) - 5)) bash bench/llama.sh build-c /tmp/out/$v resident products 2>&1 | tee -a "$out/bench2.log"
	echo "$v at $((SECONDS - start)) s"
done
[ "$(left)" -gt 80 ] && timeout $(($(left) - 5)) bash bench/llama.sh build-c $R resident-b16 2>&1 | tee -a "$out/bench2.log"
tar -C /tmp/out -cf "$out/results2.tar" . 2>/dev/null
echo "done at $((SECONDS - start)) s"
