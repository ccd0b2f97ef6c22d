#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# llama.cpp's answers for the GPU suite's llama checks (tests/gpu/llama.sh),
# made here by make gpu-build: the GPU machine has no node to run
# llama.cpp. For each case of tests/gpu/llama_cases.txt it derives the model
# from llama-2-tiny-random.gguf (tests/tools/llama_derive.py, seeded), asks
# llama.cpp for its greedy tokens (tests/tools/llama_ref.mjs, --top2), and
# writes into BUILD/llama-ref/: the tiny model itself (source.gguf), NAME.json and
# NAME.sha256 (the GPU machine derives the model again and checks it is
# the same file).
# Usage: tests/gpu/llama_refs.sh BUILD_DIR
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tiny=../shared/testdata/gguf/llama-2-tiny-random.gguf
out=$build/llama-ref
rm -rf "$out"
mkdir -p "$out"
if [ ! -f "$tiny" ]; then
	echo "llama refs: $tiny is absent: the GPU suite's llama checks will say they skip" | tee "$out/SKIPPED"
	exit 0
fi
cp "$tiny" "$out/source.gguf"
while read -r name type layers seed tokens prompt; do
	case "$name" in ''|'#'*) continue ;; esac
	m=$out/$name.gguf
	if [ "$type" = tiny ]; then cp "$tiny" "$m"; else
		python3 tests/tools/llama_derive.py "$tiny" "$m" --type "$type" --layers "$layers" --seed "$seed" || exit 1
	fi
	sha256sum < "$m" | cut -d' ' -f1 > "$out/$name.sha256"
	node tests/tools/llama_ref.mjs generate "$m" --prompt "$prompt" --tokens "$tokens" --ignore-eos \
		--no-flash-attention --top2 > "$out/$name.json" 2> "$out/$name.err" ||
		{ echo "llama refs: llama.cpp failed on $name: $(head -3 "$out/$name.err")"; exit 1; }
	rm -f "$m" "$out/$name.err"
done < tests/gpu/llama_cases.txt
echo "llama refs: $(ls "$out"/*.json | wc -l) answers of llama.cpp in $out"
