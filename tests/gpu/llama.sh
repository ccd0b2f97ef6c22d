#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The llama engine on the GPU (issue 19) against llama.cpp's tokens, which
# make gpu-build asked llama.cpp for on the build machine
# (tests/gpu/llama_refs.sh: BUILD/llama-ref). Each case of
# tests/gpu/llama_cases.txt: the model derived again here (and checked to be
# the same file), put in an ext4 image on emu:, generated on the GPU with
# every layer streamed through gpuos (double-buffered), and the 5-layer
# model also with every layer resident; q4_k as a batch of 4 sequences. The
# same tie rule as in host mode
# (tests/tools/llama_same.py).
# Usage: tests/gpu/llama.sh BUILD_DIR        (prints "llama gpu: P passed, F failed")
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
refs=$build/llama-ref
g=$build/gpuos
app=$build/apps/llama.cubin
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
summary() { echo "llama gpu: $pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }
[ -x "$g" ] && [ -f "$app" ] || { bad "no $g or $app"; summary; }
if [ -f "$refs/SKIPPED" ] || [ ! -f "$refs/source.gguf" ]; then
	echo "  skip: no llama.cpp answers in $refs ($(cat "$refs/SKIPPED" 2>/dev/null || echo 'make gpu-build makes them')): nothing counted"
	summary
fi
tmp=$(mktemp -d /dev/shm/gpuos-llama-gpu.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
while read -r name type layers seed tokens prompt; do
	case "$name" in ''|'#'*) continue ;; esac
	m=$tmp/src/$name.gguf
	if [ "$type" = tiny ]; then cp "$refs/source.gguf" "$m"; else
		python3 tests/tools/llama_derive.py "$refs/source.gguf" "$m" --type "$type" --layers "$layers" --seed "$seed"
	fi
	[ "$(sha256sum < "$m" | cut -d' ' -f1)" = "$(cat "$refs/$name.sha256")" ] ||
		bad "$name: the model derived here differs from the build machine's (llama_derive.py)"
done < tests/gpu/llama_cases.txt
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/img" 320M > /dev/null 2>&1 || { bad "mke2fs -d of the models"; summary; }

# NAME OPTIONS...: the engine on the GPU ($geom: gpuos run's geometry); prints "PROMPT_IDS TOK ..." as llama_same.py takes them
eng() {
	local name=$1 tokens prompt; shift
	read -r _ _ _ _ tokens prompt < <(grep "^$name " tests/gpu/llama_cases.txt)
	timeout 300 "$g" run "$app" --require-gpu --device "emu:$tmp/img" --vram-mib 256 --heap-mib 512 ${geom:---grid 8 --block 128} -- \
		"/$name.gguf" --prompt "$prompt" --ignore-eos --tokens "$tokens" "$@" > "$tmp/eng.out" 2>&1
	python3 tests/tools/llama_same.py --got "$tmp/eng.out"
}
want() { python3 tests/tools/llama_same.py --want "$refs/$1.json"; }
same() { # TEXT NAME GOT
	local verdict
	verdict=$(python3 tests/tools/llama_same.py "$refs/$2.json" "$(want "$2")" "$3" 2>&1)
	if [ $? -eq 0 ] && grep -q "on the GPU" "$tmp/eng.out"; then ok "$1${verdict:+ ($verdict)}"; else
		bad "$1 (${verdict:-not on the GPU})"
		echo "       llama.cpp: $(want "$2")"; echo "       gpuos:     $3"; sed 's/^/       | /' "$tmp/eng.out" | head -8
	fi
	grep '^llama: ' "$tmp/eng.out" | sed 's/^/       /'
}
while read -r name type layers _; do
	case "$name" in ''|'#'*) continue ;; esac
	same "$name ($type, $layers layers, streamed): llama.cpp's tokens on the GPU" $name "$(eng $name)"
done < tests/gpu/llama_cases.txt
same "five (Q4_K, 5 layers, all resident by --vram-gib 1): llama.cpp's tokens on the GPU" five "$(eng five --vram-gib 1)"
# --batch (issue 34): four sequences at once, each layer read once for all;
# each sequence is llama.cpp's (the referee reads "tokens:", so each
# sequence's line is put in its place in turn)
eng q4_k --batch 4 > /dev/null
cp "$tmp/eng.out" "$tmp/batch.out"
for sq in 0 1 2 3; do
	if [ $sq -eq 0 ]; then grep -v '^tokens [0-9]*:' "$tmp/batch.out" > "$tmp/eng.out"
	else grep -v '^tokens:' "$tmp/batch.out" | sed "s/^tokens $sq:/tokens:/" > "$tmp/eng.out"; fi
	same "q4_k, --batch 4, streamed: sequence $sq is llama.cpp's tokens on the GPU" q4_k \
		"$(python3 tests/tools/llama_same.py --got "$tmp/eng.out")"
done
grep '^llama: batch' "$tmp/batch.out" | sed 's/^/       /'
geom="--grid 1 --block 32"
same "five, one block of 32 threads" five "$(eng five --timeline)"
summary
