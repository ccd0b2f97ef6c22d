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
python3 tests/tools/llama_derive.py "$tiny" "$tmp/src/five.gguf" --type Q4_K --layers 5 --seed 11 ||
	bad "llama_derive.py --layers 5"
python3 tests/tools/llama_derive.py "$tiny" "$tmp/src/one.gguf" --type Q4_K --mix q4_k_m --layers 1 --embd 1024 \
	--ff 5120 --heads 8 --kv-heads 2 --seed 5 || bad "llama_derive.py --mix q4_k_m --layers 1"
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/img" 320M > /dev/null 2>&1 || { bad "mke2fs -d of the models"; summary; }

# llama.cpp's prompt ids and 32 greedy tokens, "IDS,... TOK TOK ...", and its
# whole answer (with each step's two likeliest tokens) in $tmp/ref.json
# (each answer asked of llama.cpp once: a node start and model load cost
# seconds of CPU, and the suite asks for some twice)
ref_file() { echo "$tmp/ref-$(printf '%s|%s|%s' "$1" "$2" "$3" | md5sum | cut -c1-16).json"; }
ref() {
	local k
	k=$(ref_file "$1" "$N" "$2")
	[ -s "$k" ] || node tests/tools/llama_ref.mjs generate "$tmp/src/$1.gguf" --prompt "$2" --tokens $N --ignore-eos \
		--no-flash-attention --top2 > "$k" 2> "$tmp/ref.err" || rm -f "$k"
	cp "$k" "$tmp/ref.json" 2> /dev/null || : > "$tmp/ref.json"
	python3 tests/tools/llama_same.py --want "$tmp/ref.json"
}
# The answers the suite asks for below (model, tokens, prompt), asked of
# one start of llama.cpp (generate --each: a start and a model load cost
# about 2 s of CPU each, issue 35); ref() asks for any not here by itself.
{
	for p in "Hello world" "The quick brown fox jumps over the lazy dog" "Once upon a time, in a land far away"; do
		echo "tiny	$N	$p"
	done
	for t in $types; do echo "$t	$N	Once upon a time"; done
	printf 'Q4_K\t%s\tHello world\nfive\t16\tHello world\none\t%s\tHello world\n' $N $N
} | while IFS='	' read -r m n p; do printf '%s\t%s\t%s\t%s\n' "$tmp/src/$m.gguf" "$n" "$p" "$(ref_file "$m" "$n" "$p")"; done |
	python3 -c 'import json, sys
for l in sys.stdin:
    m, n, p, out = l.rstrip("\n").split("\t")
    print(json.dumps({"model": m, "tokens": int(n), "prompt": p, "out": out}))' > "$tmp/each"
node tests/tools/llama_ref.mjs generate --each "$tmp/each" --ignore-eos --no-flash-attention --top2 2> "$tmp/ref.err" ||
	echo "  (llama.cpp refused some answers asked ahead: $(head -c 300 "$tmp/ref.err"); each is asked again)"

# the engine's prompt ids and generated ids, printed as ref prints them:
# model, prompt text, gpuos run's options, the app's options
eng() {
	# a hang guard: beside other suites on a loaded 2-core machine one run took over 120 s
	timeout 600 "$g" run "$app" --host --device "emu:$tmp/img" --vram-mib 160 --heap-mib 320 ${3:-} -- "/$1.gguf" \
		--prompt "$2" --ignore-eos --tokens $N ${4:-} > "$tmp/eng.out" 2>&1
	python3 tests/tools/llama_same.py --got "$tmp/eng.out"
}
# name, want, got: equal; or equal up to a step where llama.cpp itself was
# torn between its token and ours (its two likeliest, within 1 % of each
# other: float rounding in another order decides such a tie either way)
same() {
	local verdict
	verdict=$(python3 tests/tools/llama_same.py "$tmp/ref.json" "$2" "$3" 2>&1)
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

echo "== --batch (issue 34): sequences decoded together, each layer read once for all of them"
# sequence S's ids as llama_same.py --got prints sequence 0's ("tokens S: P | G")
seq_ids() {
	python3 - "$1" "$2" <<'PY'
import re, sys
want = "tokens:" if sys.argv[2] == "0" else "tokens %s:" % sys.argv[2]
for line in open(sys.argv[1], errors="replace"):  # the text of a draw need not be UTF-8
    if line.startswith(want + " "):
        p, g = line[len(want):].strip().split(" | ")
        print(",".join(p.split()) + " " + g)
PY
}
eng Q4_K "Hello world" "--grid 2 --block 3" "--batch 3" > /dev/null
cp "$tmp/eng.out" "$tmp/batch.out"
for sq in 0 1 2; do
	same "--batch 3, layers streamed: sequence $sq is llama.cpp's $N tokens" "$r" "$(seq_ids "$tmp/batch.out" $sq)"
done
grep -qE '^llama: batch 3: [0-9.]+ tokens/s in all' "$tmp/batch.out"; check "the report gives the batch's tokens/s in all" test $? -eq 0
# under --temp each sequence draws with its own seed (--seed + its index):
# sequence S of a batch is the run alone with that seed, token for token
eng Q4_K "Hello world" "--grid 1 --block 4" "--batch 3 --temp 90 --seed 7 --resident 2" > /dev/null
cp "$tmp/eng.out" "$tmp/batch.out"
for sq in 0 1 2; do
	eng Q4_K "Hello world" "--grid 1 --block 4" "--temp 90 --seed $((7 + sq)) --resident 2" > /dev/null
	a=$(seq_ids "$tmp/batch.out" $sq); b=$(seq_ids "$tmp/eng.out" 0)
	check "--batch 3 --temp 90 --seed 7: sequence $sq is the run alone with --seed $((7 + sq))" test -n "$a" -a "$a" = "$b"
done
a=$(seq_ids "$tmp/batch.out" 0); b=$(seq_ids "$tmp/batch.out" 1)
check "... and the seeds give different sequences" test -n "$a" -a "$a" != "$b"
eng Q4_K "Hello world" "" "--batch 33" > /dev/null
grep -q "unknown or incomplete option --batch" "$tmp/eng.out"; check "--batch 33: refused (1 to 32)" test $? -eq 0

echo "== double buffering and --vram-gib (Q4_K, 5 layers, 16 tokens)"
# 16 tokens: at step 21 this model's two likeliest tokens are 1.2 % apart
# in llama.cpp, and the engine's sums in another order take the other one
# (every layout below agrees with each other there)
N=16
r=$(ref five "Hello world")
same "5 layers streamed through two slots" "$r" "$(eng five "Hello world" "--grid 1 --block 3" "--timeline")"
# Each streamed layer's load is posted before the layer ahead of it
# computes (so it lands meanwhile), and the first of the last token's
# during the token before.
python3 - "$tmp/eng.out" <<'PY' > "$tmp/tl" 2>&1
import sys
rows = [l.split()[1:] for l in open(sys.argv[1]) if l.startswith("timeline: ") and l.split()[1].isdigit()]
assert len(rows) == 5, "%d timeline rows" % len(rows)
post, landed, begin, end = ([int(r[i]) for r in rows] for i in (1, 2, 3, 4))
assert post[0] < 0, "layer 0 of the last token was not posted during the token before (%d)" % post[0]
for l in range(1, 5):
    assert post[l] <= begin[l - 1], "layer %d posted at %d, after layer %d began at %d" % (l, post[l], l - 1, begin[l - 1])
    assert landed[l] >= post[l] and begin[l] >= end[l - 1], "layer %d: landed %d, began %d" % (l, landed[l], begin[l])
print("posted ahead: " + " ".join("%d<=%d" % (post[l], begin[l - 1]) for l in range(1, 5)))
PY
rc=$?; sed 's/^/       /' "$tmp/tl"
check "--timeline: each layer's load is posted before the layer ahead of it computes" test $rc -eq 0
python3 - "$tmp/eng.out" <<'PY'
import sys
steps = [l for l in open(sys.argv[1], errors="replace") if l.startswith("timeline: steps")]
names = [w.split("=")[0] for w in steps[0].split(":", 2)[2].split()] if steps else []
want = "scale norm qkv rope attend quant o scale2 norm2 gate_up swiglu down".split()
sys.exit(0 if names == want and all(float(w.split("=")[1]) >= 0 for w in steps[0].split(":", 2)[2].split()) else 1)
PY
check "--timeline: the 12 steps of a layer, each timed (issue 34)" test $? -eq 0
# what everything but the weights needs (0 resident, two slots), from the refusal
eng five "Hello world" "" "--vram-gib 0.000001" > /dev/null
need=$(sed -n 's/^llama: the model needs \([0-9]*\) bytes.*(--vram-gib)$/\1/p' "$tmp/eng.out")
check "--vram-gib too small: refused, saying how much is needed ($need bytes)" test -n "$need"
# a layer's bytes: what a short run streamed over its passes (ids - 1) x 5 layers
eng five "Hello world" "" "--tokens 2" > /dev/null
per=$(python3 -c 'import re, sys
t = open(sys.argv[1]).read()
ids = re.search(r"^tokens: (.*)$", t, re.M).group(1).replace("|", " ").split()
print(int(re.search(r" streamed (\d+) bytes", t).group(1)) // ((len(ids) - 1) * 5))' "$tmp/eng.out" 2>/dev/null)
gib() { python3 -c 'import sys; print("%.9f" % (int(sys.argv[1]) / 2**30))' "$1"; }
if [ -n "$need" ] && [ -n "$per" ]; then
	# two and a half layers beyond: 2 resident (a third would not fit)
	b=$(gib $((need + per * 5 / 2)))
	same "--vram-gib $b: llama.cpp's tokens" "$r" "$(eng five "Hello world" "" "--vram-gib $b")"
	grep -q '5 layers (2 resident, as --vram-gib allows)' "$tmp/eng.out"
	check "... with 2 layers resident ($(grep -o '[0-9]* resident[^)]*' "$tmp/eng.out"))" test $? -eq 0
	same "--vram-gib 1: llama.cpp's tokens" "$r" "$(eng five "Hello world" "" "--vram-gib 1")"
	grep -q '5 layers (5 resident, as --vram-gib allows)' "$tmp/eng.out"
	check "... with every layer resident" test $? -eq 0
fi
eng five "Hello world" "" "--vram-gib 1 --resident 1" > /dev/null
check "--vram-gib with --resident: refused" grep -q "not both" "$tmp/eng.out"
# One streamed layer: the next token's copy of it is loaded into the other
# slot while this token computes from the first (a 10 MiB layer, Q4_K with
# Q6_K attn_v and ffn_down as in Q4_K_M; once, a wrong slot here read a
# load still in flight). Its FFN is 5120 wide: each row of ffn_down is two
# of the products' units (4096 elements and 1024), which different teams
# take and the last to finish adds (apps/llama.c matvec).
r=$(ref one "Hello world")
a=$(eng one "Hello world" "--grid 1 --block 2")
same "one 10 MiB layer streamed (Q4_K_M mix, 1024 wide, FFN 5120): llama.cpp's tokens" "$r" "$a"
check "... and the same as with the layer resident" test "$a" = "$(eng one "Hello world" "--grid 1 --block 2" "--resident 1")"
eng one "Hello world" "--grid 1 --block 3" "--batch 2" > /dev/null
cp "$tmp/eng.out" "$tmp/batch.out"
for sq in 0 1; do
	check "... --batch 2 with 3 teams: sequence $sq is the same tokens" test "$a" = "$(seq_ids "$tmp/batch.out" $sq)"
done
N=32

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
