#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gguf-split models and offsets above 4 GiB, in an ext4 image on the
# emulated controller (host mode): `gpuos gguf` lists a split model as one
# from any shard or its base name, `--shard` lists one shard alone, and
# apps/gguf_load.c and apps/layer_stream.c read a split model as they read
# the unsplit original. A sparse model whose tensors lie past 2^32, split and
# unsplit, reads the same.
# Usage: tests/emu/split.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
apps=$build/apps
W=tests/tools/gguf_writer.py
tmp=$(mktemp -d /tmp/gpuos-split.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

echo "== images"
src=$tmp/src
mkdir -p "$src/models"
python3 $W --case demo --layers 3 --seed 11 --split 4 "$src/models/m.gguf" --json "$tmp/m.json" > /dev/null &&
	python3 $W --case sparse-4g --seed 2 --split 2 "$src/models/big.gguf" --json "$tmp/big.json" > /dev/null &&
	mke2fs -q -F -t ext4 -b 4096 -d "$src" "$tmp/disk.img" 12G > "$tmp/mke2fs.log" 2>&1
check "split models and a sparse 12 GiB image built" test -s "$tmp/disk.img"
img=$tmp/disk.img
g() { timeout 60 "$gpuos" gguf --host --device "emu:$img" "$@"; }

echo "== gpuos gguf: a split model is one model"
# OUT.json equals the unsplit model's tensors (name, type, dims, size, in
# order), the first shard's KVs, and each tensor lies where the writer put
# it in its shard.
one_model() {
	python3 - "$1" "$tmp" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
d = sys.argv[2]
orig = json.load(open(d + "/m.json"))
shards = [json.load(open(d + "/m-%05d-of-00004.json" % k)) for k in range(1, 5)]
key = lambda t: (t["name"], t["type_id"], t["dims"], t["byte_size"])
ok = [key(t) for t in g["tensors"]] == [key(t) for t in orig["tensors"]]
ok = ok and g["tensor_count"] == orig["tensor_count"] and g["layers"] == 3
ok = ok and [k["key"] for k in g["kv"]] == [k["key"] for k in shards[0]["kv"]]
ok = ok and g["split"]["count"] == 4 and "no" not in g["split"]
ok = ok and g["split"]["shards"] == ["/models/m-%05d-of-00004.gguf" % k for k in range(1, 5)]
where = {t["name"]: (k, t["abs_offset"]) for k, s in enumerate(shards) for t in s["tensors"]}
ok = ok and all((t["shard"], t["abs_offset"]) == where[t["name"]] for t in g["tensors"])
sys.exit(0 if ok else 1)
PY
}
for p in /models/m-00001-of-00004.gguf /models/m-00003-of-00004.gguf /models/m; do
	g --json "$p" > "$tmp/g.json" 2> "$tmp/e"
	check "$p: every tensor of the 4 shards, in order, each in its shard" one_model "$tmp/g.json"
done
g --json /models/m.gguf > "$tmp/u.json" 2> "$tmp/e"
check "/models/m.gguf, the unsplit original beside them, is itself" \
	python3 tests/tools/gguf_compare.py --quiet --max 5 "$tmp/m.json" "$tmp/u.json"
g /models/m-00002-of-00004.gguf > "$tmp/g.txt" 2> "$tmp/e"
check "text: notes the shards and which holds each tensor" \
	eval 'grep -q "one model in 4 gguf-split shards" "$tmp/g.txt" && grep -q "/models/m-00004-of-00004.gguf, 6 tensors" "$tmp/g.txt" && grep -q "of shard 3$" "$tmp/g.txt"'
g --json --shard /models/m-00003-of-00004.gguf > "$tmp/s.json" 2> "$tmp/e"
check "--shard: shard 3 alone, as the writer describes it" \
	python3 tests/tools/gguf_compare.py --quiet --max 5 "$tmp/m-00003-of-00004.json" "$tmp/s.json"
check "both JSON forms as docs/json.md says" \
	eval 'python3 tests/tools/check_json.py "$tmp/g.json" > /dev/null && python3 tests/tools/check_json.py "$tmp/s.json" > /dev/null'
check "--shard: says which shard it is" \
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["split"]; sys.exit(0 if (s["no"], s["count"]) == (2, 4) else 1)' "$tmp/s.json"

echo "== the model apps read the split model as the original"
python3 tests/tools/layer_sums.py "$src/models/m.gguf" "$tmp/m.json" > "$tmp/ref.txt"
sha() { awk -v n="$1" '$1 == "sha" && $2 == n { print $3 }' "$tmp/ref.txt"; }
run() { # OUT APP [run options] -- ARGS: its output in OUT, its exit status in $rc
	local out=$1 app=$2
	shift 2
	rc=0
	timeout 60 "$gpuos" run --device "emu:$img" --host "$apps/$app.cubin" "$@" > "$out" 2>&1 || rc=$?
}
names=$(python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))["tensors"]))' "$tmp/m.json")
args=()
for n in $names; do args+=("$n=$(sha "$n")"); done
run "$tmp/o" gguf_load --grid 2 --block 4 -- /models/m-00002-of-00004.gguf "${args[@]}"
check "gguf_load: every tensor of every shard hashes as in the original" \
	test "$rc" -eq 0 -a "$(grep -c '^ok ' "$tmp/o")" -eq "$(echo $names | wc -w)"
run "$tmp/o" layer_stream --grid 1 --block 4 -- /models/m
check "layer_stream: every layer's checksum equals the original's" python3 - "$tmp/o" "$tmp/ref.txt" <<'PY'
import re, sys
got = {int(m.group(1)): m.group(2) for m in
       (re.match(r"^\s*(\d+)\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([0-9a-f]{16})\s*$", l) for l in open(sys.argv[1])) if m}
want = {int(l.split()[1]): l.split()[2] for l in open(sys.argv[2]) if l.startswith("layer ")}
sys.exit(0 if got == want and len(want) == 3 else 1)
PY
run "$tmp/o" layer_stream --grid 1 --block 4 --heap-mib 160 -- /models/m-00004-of-00004.gguf 2
check "layer_stream with 2 resident layers: the same checksums" \
	eval 'test "$rc" -eq 0 && grep -q "(2 resident)" "$tmp/o"'

echo "== above 4 GiB: a sparse model, split and not"
g --json /models/big.gguf > "$tmp/bu.json" 2> "$tmp/e"
check "unsplit: gpuos gguf equals the writer's description" \
	python3 tests/tools/gguf_compare.py --quiet --max 5 "$tmp/big.json" "$tmp/bu.json"
g --json /models/big-00002-of-00002.gguf > "$tmp/bs.json" 2> "$tmp/e"
check "split: a tensor past 2^32 in the first shard, at the writer's offset" python3 - "$tmp/bs.json" "$tmp" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
s1 = json.load(open(sys.argv[2] + "/big-00001-of-00002.json"))
t = {x["name"]: x for x in g["tensors"]}["blk.0.attn_q.weight"]
w = {x["name"]: x for x in s1["tensors"]}["blk.0.attn_q.weight"]
sys.exit(0 if t["abs_offset"] == w["abs_offset"] > 1 << 32 and t["shard"] == 0 and g["tensor_count"] == 3 else 1)
PY
bigsha=$(python3 - "$src/models/big.gguf" "$tmp/big.json" <<'PY'
import hashlib, json, sys
with open(sys.argv[1], "rb") as f:
    for t in json.load(open(sys.argv[2]))["tensors"]:
        if t["name"] != "token_embd.weight":   # 4 GiB of hole: not hashed here
            f.seek(t["abs_offset"])
            print("%s=%s" % (t["name"], hashlib.sha256(f.read(t["byte_size"])).hexdigest()))
PY
)
for p in /models/big.gguf /models/big-00001-of-00002.gguf; do
	run "$tmp/o" gguf_load --grid 1 --block 2 -- "$p" $bigsha
	check "$p: the tensors past 2^32 load with the original's bytes" \
		test "$rc" -eq 0 -a "$(grep -c '^ok ' "$tmp/o")" -eq 2
done
timeout 60 "$gpuos" stat --json --host --device "emu:$img" /models/big.gguf > "$tmp/st.json" 2> "$tmp/e"
check "stat: the size above 4 GiB, exact" python3 -c '
import json, os, sys
sys.exit(0 if json.load(open(sys.argv[1]))["size"] == os.path.getsize(sys.argv[2]) > 1 << 32 else 1)' \
	"$tmp/st.json" "$src/models/big.gguf"

echo "== refused"
rm "$src/models/m-00003-of-00004.gguf"
cp "$src/models/m-00001-of-00004.gguf" "$src/models/m-00003-of-00004.gguf"
mke2fs -q -F -t ext4 -b 4096 -d "$src" "$tmp/disk.img" 12G > "$tmp/mke2fs.log" 2>&1
rc=0
g /models/m > /dev/null 2> "$tmp/e" || rc=$?
check "shard 3 a copy of shard 1: exit 1, names shard 3 and its split.no" \
	eval 'test "$rc" -eq 1 && grep -q "shard 3 of 4 (m-00003-of-00004.gguf): corrupt split GGUF: its split.no 0" "$tmp/e"'

echo
echo "split: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
