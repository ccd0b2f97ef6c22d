#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The llama engine (issue 19, apps/llama.c) in host mode against its
# referee, llama.cpp itself (tests/tools/llama_ref.mjs: node-llama-cpp's
# prebuilt CPU build, greedy, no chat template, flash attention off: the
# engine computes attention the standard way). Models live in an ext4 image
# on emu:, so the weights come through gpuos: ../shared/testdata's
# llama-2-tiny-random.gguf, and llama models that tests/tools/llama_derive.py
# derives from it with its tokenizer and every type the engine computes on
# (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; grouped-query attention,
# 2 layers). Each must give the same 32 token ids; streamed and resident
# layers, and any number of threads, alike. Refusals: a missing model, a
# tensor type the engine does not compute on (by name), an architecture
# that is not llama.
# Usage: tests/emu/llama.sh BUILD_DIR
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1
g=$build/gpuos
app=$build/apps/llama.so
tiny=../shared/testdata/gguf/llama-2-tiny-random.gguf
N=32

summary() { echo "llama: $pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }
for t in node mke2fs python3; do
	command -v $t > /dev/null || { bad "$t is missing (scripts/deps.sh installs it)"; summary; }
done
[ -x "$g" ] && [ -f "$app" ] || { bad "no $g or $app (make all)"; summary; }
if [ ! -f "$tiny" ]; then
	echo "  skip: $tiny is absent (../shared/testdata): nothing to derive the models from, no check counted"
	summary
fi
tmp=$(mktemp -d /tmp/gpuos-llama.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cp "$tiny" "$tmp/src/tiny.gguf"
types="F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K"
for t in $types; do
	python3 tests/tools/llama_derive.py "$tiny" "$tmp/src/$t.gguf" --type $t --seed 11 ||
		bad "llama_derive.py --type $t"
done
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/img" 320M > /dev/null 2>&1 || { bad "mke2fs -d of the models"; summary; }

# llama.cpp's prompt ids and 32 greedy tokens: "IDS,... TOK TOK ..."
ref() {
	node ${LLAMA_REF:-tests/tools/llama_ref.mjs} generate "$tmp/src/$1.gguf" --prompt "$2" --tokens $N --ignore-eos \
		--no-flash-attention 2> "$tmp/ref.err" |
		python3 -c 'import json, sys; d = json.load(sys.stdin); print(",".join(map(str, d["prompt_tokens"])), " ".join(map(str, d["tokens"])))'
}
# the engine's generated ids: model, prompt ids, gpuos run's options, the app's options
eng() {
	timeout 120 "$g" run "$app" --host --device "emu:$tmp/img" --vram-mib 160 --heap-mib 320 ${3:-} -- "/$1.gguf" --prompt-ids "$2" --ignore-eos \
		--tokens $N ${4:-} > "$tmp/eng.out" 2>&1
	sed -n 's/^tokens:.* | //p' "$tmp/eng.out"
}
# the first position where two token lists differ, for the message
first_diff() { python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b))))' "$1" "$2"; }
same() { # name, want, got
	if [ -n "$2" ] && [ "$2" = "$3" ]; then ok "$1"; else
		bad "$1 (first difference at token $(first_diff "$2" "$3"))"
		echo "       llama.cpp: $2"; echo "       gpuos:     $3"; sed 's/^/       | /' "$tmp/eng.out" | head -5
	fi
}

echo "== llama-2-tiny-random.gguf (F16 and F32, 1 layer, 32000 tokens), three prompts"
for p in "Hello world" "The quick brown fox jumps over the lazy dog" "Once upon a time, in a land far away"; do
	r=$(ref tiny "$p")
	ids=${r%% *}
	want=${r#* }
	[ -n "$r" ] || { bad "llama.cpp generated nothing for '$p': $(head -3 "$tmp/ref.err")"; continue; }
	same "'$p': $N tokens equal llama.cpp's" "$want" "$(eng tiny "$ids" "--grid 1 --block 4")"
done
r=$(ref tiny "Hello world")
same "the same with 2 x 3 threads and the layer resident" "${r#* }" "$(eng tiny "${r%% *}" "--grid 2 --block 3" "--resident 1")"

echo "== derived models: every type, grouped-query attention (4 heads, 2 KV heads), 2 layers"
for t in $types; do
	r=$(ref $t "Once upon a time")
	[ -n "$r" ] || { bad "$t: llama.cpp generated nothing: $(head -3 "$tmp/ref.err")"; continue; }
	same "$t: $N tokens equal llama.cpp's" "${r#* }" "$(eng $t "${r%% *}" "--grid 1 --block 4")"
done
r=$(ref Q4_K "Hello world")
want=${r#* }
same "Q4_K, layers streamed for every token, 8 threads" "$want" "$(eng Q4_K "${r%% *}" "--grid 2 --block 4")"
same "Q4_K, both layers resident" "$want" "$(eng Q4_K "${r%% *}" "" "--resident 2")"
grep -q '2 layers (2 resident)' "$tmp/eng.out"; check "the report says 2 resident" test $? -eq 0
grep -qE '^llama: .* tokens/s .* GB/s' "$tmp/eng.out"; check "the report gives tokens/s and the load rate" test $? -eq 0

echo "== refusals"
timeout 60 "$g" run "$app" --host --device "emu:$tmp/img" -- /none.gguf --prompt-ids 1 > "$tmp/o" 2>&1
rc=$?
check "a missing model: exit 2, named" eval 'test $rc -eq 2 && grep -q "/none.gguf" "$tmp/o"'
mkdir -p "$tmp/src2"
python3 tests/tools/llama_derive.py "$tiny" "$tmp/src2/q50.gguf" --type Q8_0 --layers 1 --override blk.0.ffn_down.weight=Q5_0
python3 tests/tools/llama_derive.py "$tiny" "$tmp/src2/gemma.gguf" --type Q8_0 --layers 1 --arch gemma
mke2fs -q -F -t ext4 -d "$tmp/src2" "$tmp/img2" 64M > /dev/null 2>&1
timeout 60 "$g" run "$app" --host --device "emu:$tmp/img2" -- /q50.gguf --prompt-ids 1 > "$tmp/o" 2>&1
rc=$?
check "a tensor type the engine does not compute on: exit 2, refused by name ($(grep '^llama:' "$tmp/o" | head -1))" \
	eval 'test $rc -eq 2 && grep -q "^llama: tensor blk.0.ffn_down.weight: type Q5_0 " "$tmp/o"'
timeout 60 "$g" run "$app" --host --device "emu:$tmp/img2" -- /gemma.gguf --prompt-ids 1 > "$tmp/o" 2>&1
rc=$?
check "another architecture: exit 2, refused by name ($(grep '^llama:' "$tmp/o" | head -1))" \
	eval 'test $rc -eq 2 && grep -q "^llama: architecture .gemma. " "$tmp/o"'
timeout 60 "$g" run "$app" --host --device "emu:$tmp/img" -- /tiny.gguf --prompt-ids 1,99999 > "$tmp/o" 2>&1
rc=$?
check "a token id past the vocabulary: exit 2" eval 'test $rc -eq 2 && grep -q "past the vocabulary" "$tmp/o"'
summary
