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

# llama.cpp's prompt ids and 32 greedy tokens, "IDS,... TOK TOK ...", and its
# whole answer (with each step's two likeliest tokens) in $tmp/ref.json
ref() {
	node tests/tools/llama_ref.mjs generate "$tmp/src/$1.gguf" --prompt "$2" --tokens $N --ignore-eos \
		--no-flash-attention --top2 > "$tmp/ref.json" 2> "$tmp/ref.err"
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(",".join(map(str, d["prompt_tokens"])), " ".join(map(str, d["tokens"])))' "$tmp/ref.json"
}
# the engine's prompt ids and generated ids, printed as ref prints them:
# model, prompt text, gpuos run's options, the app's options
eng() {
	timeout 120 "$g" run "$app" --host --device "emu:$tmp/img" --vram-mib 160 --heap-mib 320 ${3:-} -- "/$1.gguf" \
		--prompt "$2" --ignore-eos --tokens $N ${4:-} > "$tmp/eng.out" 2>&1
	python3 -c 'import re, sys
m = re.search(r"^tokens: (.*) \| (.*)$", open(sys.argv[1]).read(), re.M)
print(",".join(m.group(1).split()), m.group(2)) if m else None' "$tmp/eng.out"
}
# name, want, got: equal; or equal up to a step where llama.cpp itself was
# torn between its token and ours (its two likeliest, within 1 % of each
# other: float rounding in another order decides such a tie either way)
same() {
	local verdict
	verdict=$(python3 -c 'import json, sys
want, got = sys.argv[1].split(), sys.argv[2].split()
if not want or want != got and len(want) != len(got):
    sys.exit("no answer" if not got else "%d ids, not %d" % (len(got), len(want)))
k = next((i for i in range(len(want)) if want[i] != got[i]), None)
if k is None:
    sys.exit(0)
d = json.load(open(sys.argv[3]))
step = k - 1  # want[0] is the prompt
top = d.get("top2", [])
if step < 0 or step >= len(top) or len(top[step]) < 2:
    sys.exit("first difference at token %d" % k)
(a, pa), (b, pb) = top[step]
if str(a) == want[k] and str(b) == got[k] and (pa - pb) / pa < 0.01:
    print("equal for %d tokens, then a tie llama.cpp itself saw (%d: %.6g, %d: %.6g)" % (step, a, pa, b, pb))
    sys.exit(0)
sys.exit("first difference at token %d (llama.cpp: %d %.6g, then %d %.6g)" % (step, a, pa, b, pb))' "$2" "$3" "$tmp/ref.json" 2>&1)
	if [ $? -eq 0 ]; then ok "$1${verdict:+ ($verdict)}"; else
		bad "$1 ($verdict)"
		echo "       llama.cpp: $2"; echo "       gpuos:     $3"; sed 's/^/       | /' "$tmp/eng.out" | head -5
	fi
}

echo "== llama-2-tiny-random.gguf (F16 and F32, 1 layer, 32000 tokens), three prompts"
for p in "Hello world" "The quick brown fox jumps over the lazy dog" "Once upon a time, in a land far away"; do
	r=$(ref tiny "$p")
	[ -n "$r" ] || { bad "llama.cpp generated nothing for '$p': $(head -3 "$tmp/ref.err")"; continue; }
	same "'$p': the prompt's ids and $N tokens equal llama.cpp's" "$r" "$(eng tiny "$p" "--grid 1 --block 4")"
done
r=$(ref tiny "Hello world")
same "the same with 2 x 3 threads and the layer resident" "$r" "$(eng tiny "Hello world" "--grid 2 --block 3" "--resident 1")"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["text"]; sys.exit(0 if (t + "\n") in open(sys.argv[2]).read().split("tokens:")[0] else 1)' "$tmp/ref.json" "$tmp/eng.out"
check "the generated text equals llama.cpp's" test $? -eq 0

echo "== derived models: every type, grouped-query attention (4 heads, 2 KV heads), 2 layers"
for t in $types; do
	r=$(ref $t "Once upon a time")
	[ -n "$r" ] || { bad "$t: llama.cpp generated nothing: $(head -3 "$tmp/ref.err")"; continue; }
	same "$t: llama.cpp's $N tokens" "$r" "$(eng $t "Once upon a time" "--grid 1 --block 4")"
done
r=$(ref Q4_K "Hello world")
same "Q4_K, layers streamed for every token, 8 threads" "$r" "$(eng Q4_K "Hello world" "--grid 2 --block 4")"
same "Q4_K, both layers resident" "$r" "$(eng Q4_K "Hello world" "" "--resident 2")"
grep -q '2 layers (2 resident)' "$tmp/eng.out"; check "the report says 2 resident" test $? -eq 0
grep -qE '^llama: .* tokens/s .* GB/s' "$tmp/eng.out"; check "the report gives tokens/s and the load rate" test $? -eq 0

echo "== refusals"
timeout 60 "$g" run "$app" --host --device "emu:$tmp/img" -- /none.gguf --prompt hi > "$tmp/o" 2>&1
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
