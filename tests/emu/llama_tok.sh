#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tokenizer of the llama engine (apps/llama/tokenizer.h, issue 19)
# against llama.cpp itself: tests/tools/tok_check.c (the header on a GGUF's
# vocabulary) and tests/tools/llama_ref.mjs (node-llama-cpp's prebuilt
# llama.cpp) tokenize the same strings, the 82 of tests/data/tok_strings.jsonl
# and 400 generated from a fixed seed, on every vocabulary of
# ../shared/testdata/gguf whose tokenizer.ggml.model is "llama" or "gpt2"
# (llama-2-tiny-random.gguf and vocab/*.gguf), and on variants of them
# written here (the gpt-2 vocabulary under the llama3, qwen2 and dbrx
# pre-tokenizers, llama-spm without its space prefix): the token ids must be
# equal, and so must the texts both detokenizers make of them (so
# decode(encode(s)) == s wherever llama.cpp's gives s back), without and
# with BOS/EOS and special-token parsing; 300 id sequences decode alike.
# Refusals by name: tokenizer.ggml.model "bert", an unknown pre-tokenizer.
# The header also compiles as C++17 and, with nvcc, as device code.
# Usage: tests/emu/llama_tok.sh BUILD_DIR
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
mkdir -p "$build"
tmp=$(mktemp -d /tmp/gpuos-llama-tok.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skipped=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
t0=$(date +%s.%N)
testdata=../shared/testdata/gguf
strings=tests/data/tok_strings.jsonl
tc=$build/tok_check

summary() {
	echo "llama_tok: $(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)") s"
	echo "llama_tok: $pass passed, $fail failed, $skipped skipped"
	[ $fail -eq 0 ]
	exit $?
}

# ---- the inputs: which vocabularies, variants of them, the strings, the ids ----
# prep.py TESTDATA STRINGS OUTDIR: prints "use FILE", "refuse FILE MODEL",
# "skip REASON"; writes OUTDIR/syn/*.gguf (a GGUF with one KV set: the
# gpt-2 vocabulary under other pre-tokenizers, llama-spm without its space
# prefix, an unknown pre-tokenizer), OUTDIR/strings.jsonl (the file's
# strings, then 400 generated from a fixed seed) and OUTDIR/ids.jsonl.
cat > "$tmp/prep.py" <<'PY'
import glob, json, os, random, struct, sys
testdata, strings, out = sys.argv[1:4]
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def kvs(d):
    assert d[:4] == b"GGUF"
    ver, nt, nkv = struct.unpack_from("<IQQ", d, 4)
    p, res = 24, []
    def skip(t, p):
        if t == 8:
            return p + 8 + struct.unpack_from("<Q", d, p)[0]
        if t == 9:
            et, n = struct.unpack_from("<IQ", d, p)
            p += 12
            if et in SIZES:
                return p + SIZES[et] * n
            for _ in range(n):
                p = skip(et, p)
            return p
        return p + SIZES[t]
    for _ in range(nkv):
        st, n = p, struct.unpack_from("<Q", d, p)[0]
        k, t = d[p + 8:p + 8 + n].decode(), struct.unpack_from("<I", d, p + 8 + n)[0]
        p = skip(t, p + 12 + n)
        res.append((k, t, d[st + 12 + n:p], d[st:p]))
    return ver, nt, res, d[p:]
def model(path):
    ver, nt, kv, rest = kvs(open(path, "rb").read())
    v = [x for k, t, x, _ in kv if k == "tokenizer.ggml.model" and t == 8]
    return v[0][8:].decode() if v else ""
def with_kv(src, dst, key, val):
    d = open(src, "rb").read()
    ver, nt, kv, rest = kvs(d)
    kb = key.encode()
    enc = struct.pack("<IB", 7, int(val)) if isinstance(val, bool) else \
        struct.pack("<IQ", 8, len(val.encode())) + val.encode()
    new = struct.pack("<Q", len(kb)) + kb + enc
    raws = [new if k == key else raw for k, t, x, raw in kv]
    if key not in [k for k, *_ in kv]:
        raws.append(new)
    open(dst, "wb").write(d[:4] + struct.pack("<IQQ", ver, nt, len(raws)) + b"".join(raws) + rest)
for f in [testdata + "/llama-2-tiny-random.gguf"] + sorted(glob.glob(testdata + "/vocab/*.gguf")):
    m = model(f)
    print(("use %s" % f) if m in ("llama", "gpt2") else ("refuse %s %s" % (f, m)))
gpt2, spm = testdata + "/vocab/ggml-vocab-gpt-2.gguf", testdata + "/vocab/ggml-vocab-llama-spm.gguf"
os.makedirs(out + "/syn", exist_ok=True)
if os.path.exists(gpt2) and os.path.exists(spm):
    for pre in ("llama-bpe", "qwen2", "dbrx"):
        with_kv(gpt2, "%s/syn/gpt-2-as-%s.gguf" % (out, pre), "tokenizer.ggml.pre", pre)
        print("use %s/syn/gpt-2-as-%s.gguf" % (out, pre))
    with_kv(spm, out + "/syn/llama-spm-no-prefix.gguf", "tokenizer.ggml.add_space_prefix", False)
    print("use %s/syn/llama-spm-no-prefix.gguf" % out)
    with_kv(gpt2, out + "/nosuch.gguf", "tokenizer.ggml.pre", "no-such-pre")
    print("nosuch %s/nosuch.gguf" % out)
else:
    print("skip %s or %s absent: no variants (llama3, qwen2, dbrx pre-tokenizers; no space prefix)" % (gpt2, spm))
own = [l for l in open(strings, encoding="utf-8") if l.strip()]
for l in own:
    assert isinstance(json.loads(l), str)
rnd = random.Random(19)
pool = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") * 3 + [" "] * 25 + ["\n"] * 6 +
        list("\t\r'.,!?-_$+<=>^~|`\"()[]{}@#%&*/\\:;") + ["\r\n", "'s", "'ll", "'RE", "'t "] +
        list("éèàüöäßçñøåÆŒ中文测试你好世界日本語カタカナひらがな한국어…—“”‘’！，。：Ｆｆ１") +
        ["\U0001F600", "\U0001F389", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F1EB\U0001F1F7", "\u200b",
         "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", "\u0301", "\u0663", "\u00bd", "\u2460", "\u2581",
         "\U0001D518", "\ua66e", "\U00013000", "<s>", "</s>", "<unk>", "<|endoftext|>", "<pad>", "<0x0A>", "  ",
         "   ", "    ", "\u00f5", "\u00f7", "\u00c1", "<|User|>", "<fim_prefix>", "[PAD32022]", "<|assistant|>",
         "<|end|>"])
gen = ["".join(rnd.choice(pool) for _ in range(rnd.choice([1, 2, 3, 5, 8, 13, 21, 40]))) for _ in range(400)]
with open(out + "/strings.jsonl", "w", encoding="utf-8") as f:
    for l in own:
        f.write(l.rstrip("\n") + "\n")
    for s in gen:
        f.write(json.dumps(s, ensure_ascii=False) + "\n")
r = random.Random(7)
with open(out + "/ids.jsonl", "w") as f:
    for _ in range(300):
        n = r.choice([1, 2, 3, 5, 8, 16])
        f.write(json.dumps([r.choice([r.randrange(0, 300), r.randrange(0, 32000), r.randrange(0, 32000)])
                            for _ in range(n)]) + "\n")
print("strings %d %d" % (len(own), len(gen)))
PY

echo "== the inputs"
if [ ! -f $testdata/llama-2-tiny-random.gguf ] || [ ! -d $testdata/vocab ]; then
	skip "$testdata (llama-2-tiny-random.gguf, vocab/) is absent: nothing to compare with llama.cpp"
	inputs=0
else
	python3 "$tmp/prep.py" $testdata "$strings" "$tmp" > "$tmp/prep.out" || bad "the inputs (prep.py)"
	inputs=1
fi
files=() refuse=() nosuch=
while read -r what a b; do
	case $what in
	use) files+=("$a") ;;
	refuse) refuse+=("$a:$b") ;;
	nosuch) nosuch=$a ;;
	skip) skip "$a $b" ;;
	strings) n_own=$a; n_gen=$b ;;
	esac
done < <([ $inputs -eq 1 ] && cat "$tmp/prep.out")
if [ ${#files[@]} -gt 0 ]; then
	echo "  ${#files[@]} vocabularies: $(for f in "${files[@]}"; do basename "$f" .gguf; done | tr '\n' ' ')"
	echo "  strings: $n_own of $strings and $n_gen generated; 300 id sequences"
fi

# llama.cpp's side, in the background while the tools build: one node
# process, each vocabulary loaded once for the three jobs
nlc=1
command -v node > /dev/null || { bad "node is missing (scripts/deps.sh installs it)"; nlc=0; }
if [ $nlc -eq 1 ] && { [ ! -f node_modules/node-llama-cpp/package.json ] ||
	[ "$(uname -m)" = x86_64 -a ! -f node_modules/@node-llama-cpp/linux-x64/package.json ]; }; then
	bad "node-llama-cpp (and its prebuilt linux-x64 llama.cpp) is not in node_modules: run scripts/deps.sh"
	nlc=0
fi
modes=("plain:" "special:--bos --special")
if [ $nlc -eq 1 ] && [ ${#files[@]} -gt 0 ]; then
	mkdir -p "$tmp/ref"
	node tests/tools/llama_ref.mjs batch --out-dir "$tmp/ref" \
		--job "plain|tokenize|$tmp/strings.jsonl|--text" \
		--job "special|tokenize|$tmp/strings.jsonl|--text --bos --special" \
		--job "decode|detokenize|$tmp/ids.jsonl|--special" "${files[@]}" ${nosuch:+"$nosuch"} > "$tmp/ref.log" 2>&1 &
fi

echo "== the tools"
check "tests/tools/tok_check.c builds (gcc -std=c11 -Wall -Wextra -Werror, with runtime/model/gguf/gguf.c)" \
	gcc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -o "$tc" tests/tools/tok_check.c runtime/model/gguf/gguf.c
check "apps/llama/tokenizer.h is valid C++17 (g++ -Wall -Wextra -Werror)" \
	g++ -x c++ -std=c++17 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -fsyntax-only apps/llama/tokenizer.h
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -x "$nvcc" ]; then
	cat > "$tmp/tok_gpu.cu" <<'CU'
#include "llama/tokenizer.h"
/* one thread builds the arena from the file's arrays, another tokenizes and detokenizes */
__global__ void tok_init_kernel(const struct gpuos_tok_src *src, void *arena, uint64_t len, uint64_t *need,
				char *why, int *rc)
{
	*rc = gpuos_tok_init(src, arena, len, need, why, GPUOS_TOK_WHY_MAX);
}
__global__ void tok_kernel(const struct gpuos_tok *t, const char *text, uint32_t len, int32_t *ids, uint32_t cap,
			   void *work, uint64_t work_len, int64_t *n)
{
	n[0] = gpuos_tok_encode(t, text, len, GPUOS_TOK_ADD_SPECIAL, ids, cap, work, work_len);
	if (n[0] >= 0)
		n[1] = gpuos_tok_decode(t, ids, (uint32_t)(n[0] < cap ? n[0] : cap), 0, (char *)work, work_len);
}
CU
	check "nvcc -x cu -arch=sm_90 -c: __global__ functions call gpuos_tok_init, _encode and _decode" \
		"$nvcc" -std=c++17 -Iinclude -Iapps -Xcompiler -Wall -x cu -arch=sm_90 -c "$tmp/tok_gpu.cu" -o "$tmp/tok_gpu.o"
else
	skip "no nvcc (NVCC, PATH, /usr/local/cuda/bin): the device compile is not checked"
fi
if [ ! -x "$tc" ]; then
	wait
	summary
fi

echo "== refusals by name"
for r in "${refuse[@]}"; do
	f=${r%:*} m=${r##*:}
	"$tc" "$f" --info > /dev/null 2> "$tmp/err"; rc=$?
	check "$(basename "$f"): tokenizer.ggml.model '$m' refused (exit 1: $(head -c 110 "$tmp/err"))" \
		eval "test $rc -eq 1 && grep -q \"'$m' is not supported\" '$tmp/err'"
done
if [ -n "$nosuch" ]; then
	"$tc" "$nosuch" --info > /dev/null 2> "$tmp/err"; rc=$?
	check "tokenizer.ggml.pre 'no-such-pre' refused (exit 1: $(head -c 110 "$tmp/err"))" \
		eval "test $rc -eq 1 && grep -q \"'no-such-pre' is not supported\" '$tmp/err'"
fi
if [ ${#files[@]} -eq 0 ]; then
	wait
	summary
fi

# ours
for f in "${files[@]}"; do
	n=$(basename "$f" .gguf)
	for m in "${modes[@]}"; do
		mkdir -p "$tmp/ours.${m%%:*}"
		"$tc" "$f" --text ${m#*:} < "$tmp/strings.jsonl" > "$tmp/ours.${m%%:*}/$n.jsonl" 2> "$tmp/ours.${m%%:*}/$n.err"
	done
done
mkdir -p "$tmp/ours.decode"
for f in "${files[@]}"; do
	n=$(basename "$f" .gguf)
	"$tc" "$f" --decode --special < "$tmp/ids.jsonl" > "$tmp/ours.decode/$n.jsonl" 2> "$tmp/ours.decode/$n.err"
done
wait
if [ $nlc -eq 1 ] && [ -n "$nosuch" ]; then
	check "llama.cpp refuses 'no-such-pre' too ($(grep -o "unknown pre-tokenizer type: '[^']*'" "$tmp/ref/plain/nosuch.err" | head -1))" \
		grep -q "unknown pre-tokenizer type: 'no-such-pre'" "$tmp/ref/plain/nosuch.err"
fi
if [ $nlc -eq 0 ]; then
	echo "  (no referee, so the tokenizer was not compared with llama.cpp)"
	summary
fi

# compare, in one process: ids, then texts; ok/FAIL lines, counted below
cat > "$tmp/cmp.py" <<'PY'
import json, os, sys
tmp, n_own = sys.argv[1], int(sys.argv[2])
files = sys.argv[3:]
def load(p):
    try:
        return [json.loads(l) for l in open(p, encoding="utf-8")]
    except (OSError, ValueError) as e:
        return None
def head(p):
    try:
        return open(p, encoding="utf-8", errors="replace").read(300).replace("\n", " ")
    except OSError:
        return ""
S = load(tmp + "/strings.jsonl")
D = load(tmp + "/ids.jsonl")
titles = {"plain": "token ids and texts: no BOS, special-token parsing off "
                   "(llama_tokenize's add_special = parse_special = false)",
          "special": "token ids and texts: add_special (BOS, EOS as the vocabulary says), special-token parsing on",
          "decode": "300 id sequences (ids below 32000) detokenized, control tokens shown (unparse_special)"}
total = same_total = 0
for mode in ("plain", "special", "decode"):
    print("== " + titles[mode])
    I = D if mode == "decode" else S
    for f in files:
        n = os.path.basename(f)[:-5]
        ref, ours = "%s/ref/%s/%s" % (tmp, mode, n), "%s/ours.%s/%s" % (tmp, mode, n)
        R, O = load(ref + ".jsonl"), load(ours + ".jsonl")
        total += len(I)
        if R is None or len(R) != len(I):
            print("  FAIL %s: llama.cpp gave %s lines of %d: %s %s" % (n, R and len(R), len(I), head(ref + ".err"),
                                                                      head(tmp + "/ref.log")))
            continue
        if O is None or len(O) != len(I):
            print("  FAIL %s: tok_check gave %s lines of %d: %s" % (n, O and len(O), len(I), head(ours + ".err")))
            continue
        bad, shown, whole = 0, [], [0, 0]
        for i, (s, r, o) in enumerate(zip(I, R, O)):
            if mode == "decode":
                what, ok = "text", r == o
            else:
                what = "ids" if r["ids"] != o["ids"] else "text"
                ok = r["ids"] == o["ids"] and r["text"] == o["text"]
                whole[i >= n_own] += ok and r["text"] == s
            if not ok:
                bad += 1
                if len(shown) < 3:
                    where = "ids line %d" % (i + 1) if mode == "decode" else \
                        "tok_strings.jsonl line %d" % (i + 1) if i < n_own else "generated string %d" % (i - n_own + 1)
                    show = lambda x: json.dumps(x if mode == "decode" else x[what], ensure_ascii=False)[:100]
                    shown.append("       %s, %s: %s\n         llama.cpp %s\n         ours      %s" % (
                        where, what, json.dumps(s, ensure_ascii=False)[:60], show(r), show(o)))
        if bad:
            print("  FAIL %s: %d of %d differ from llama.cpp's" % (n, bad, len(I)))
            print("\n".join(shown))
            continue
        same_total += len(I)
        if mode == "decode":
            print("  ok   %s: %d of %d decode as llama.cpp's" % (n, len(I), len(I)))
        elif mode == "plain":
            print("  ok   %s: %d of %d equal llama.cpp's, ids and text; back whole (where llama.cpp's text is the "
                  "string): %d of %d own, %d of %d generated" % (n, len(I), len(I), whole[0], n_own, whole[1],
                                                                  len(I) - n_own))
        else:
            print("  ok   %s: %d of %d equal llama.cpp's, ids and text" % (n, len(I), len(I)))
print("  in all: %d of %d lines equal llama.cpp's" % (same_total, total))
PY
python3 "$tmp/cmp.py" "$tmp" "$n_own" "${files[@]}" > "$tmp/cmp.out" 2>&1 || bad "the comparison (cmp.py): $(tail -3 "$tmp/cmp.out")"
cat "$tmp/cmp.out"
pass=$((pass + $(grep -c '^  ok   ' "$tmp/cmp.out")))
fail=$((fail + $(grep -c '^  FAIL ' "$tmp/cmp.out")))
summary
