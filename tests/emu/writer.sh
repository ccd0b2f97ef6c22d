#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gguf_writer.py --layer-mib (sized, streamed llama-shaped models) against
# the project's own readers: `gpuos gguf --json` on the raw file, layer_sums.py,
# and apps/layer_stream.c through `gpuos run --host` from an ext4 image.
# Usage: tests/emu/writer.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
apps=$build/apps
W=tests/tools/gguf_writer.py
tmp=$(mktemp -d /tmp/gpuos-writer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

echo "== --layer-mib 1, 2 layers"
mkdir -p "$tmp/src/models"
m=$tmp/src/models/m.gguf
check "written: exit 0" python3 $W --case demo --layers 2 --layer-mib 1 --seed 5 "$m" --json "$tmp/w.json"
# The emulated namespace is whole LBAs: pad a copy, then read it raw at byte 0.
cp "$m" "$tmp/raw.img" && truncate -s %4096 "$tmp/raw.img"
timeout 60 "$gpuos" gguf --json --device "emu:$tmp/raw.img" --host @0 > "$tmp/g.json" 2> "$tmp/g.err"
check "gpuos gguf --json parses it" test $? -eq 0
check "gpuos gguf --json equals the writer's description" \
	python3 tests/tools/gguf_compare.py --quiet --max 5 "$tmp/w.json" "$tmp/g.json"
# Shape and size from what gpuos read, not from the writer's own account.
check "llama-shaped: 2 layers of the nine tensors, 1 MiB each within 3 %" python3 - "$tmp/g.json" "$m" <<'PY'
import json, os, re, sys
g = json.load(open(sys.argv[1]))
parts = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}
layers = {}
for t in g["tensors"]:
    m = re.match(r"blk\.(\d+)\.(\w+)\.weight$", t["name"])
    if m:
        layers.setdefault(int(m.group(1)), {})[m.group(2)] = t["byte_size"]
    assert t["rel_offset"] % g["alignment"] == 0, t
kv = {k["key"]: k["value"] for k in g["kv"]}
ok = sorted(layers) == [0, 1] and kv["llama.block_count"] == 2
for n, ts in sorted(layers.items()):
    size = sum(ts.values())
    print("       layer %d: %d tensors, %d bytes (%+.2f %%)" % (n, len(ts), size, (size / 2**20 - 1) * 100))
    ok = ok and set(ts) == parts and abs(size / 2**20 - 1) <= 0.03
end = max(t["abs_offset"] + t["byte_size"] for t in g["tensors"])
sys.exit(0 if ok and end <= os.path.getsize(sys.argv[2]) else 1)
PY
check "every 4 KiB chunk of every tensor written, none equal to another" python3 - "$tmp/g.json" "$m" <<'PY'
import hashlib, json, sys
g = json.load(open(sys.argv[1]))
seen, n = set(), 0
with open(sys.argv[2], "rb") as f:
    for t in g["tensors"]:
        f.seek(t["abs_offset"])
        data = f.read(t["byte_size"])
        for c in range(0, len(data), 4096):
            chunk = data[c:c + 4096]
            if chunk.count(0) == len(chunk):
                sys.exit("zero chunk %d of %s" % (c // 4096, t["name"]))
            seen.add(hashlib.sha1(chunk).digest())
            n += 1
sys.exit(0 if len(seen) == n and n > 500 else "%d chunks, %d distinct" % (n, len(seen)))
PY
python3 $W --case demo --layers 2 --layer-mib 1 --seed 5 "$tmp/again.gguf" --json "$tmp/again.json"
check "deterministic: the same seed writes the same bytes" cmp -s "$m" "$tmp/again.gguf"
python3 $W --case demo --layers 2 --layer-mib 1 --seed 6 "$tmp/other.gguf"
check "another seed writes other bytes" python3 -c '
import sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
sys.exit(0 if len(a) == len(b) and sum(x != y for x, y in zip(a[-65536:], b[-65536:])) > 60000 else 1)' "$m" "$tmp/other.gguf"

echo "== checksums: layer_sums.py and layer_stream agree"
python3 tests/tools/layer_sums.py "$m" "$tmp/g.json" > "$tmp/ref.txt"
check "layer_sums.py: two layer checksums" test "$(grep -c '^layer ' "$tmp/ref.txt")" -eq 2
mke2fs -q -F -t ext4 -b 4096 -d "$tmp/src" "$tmp/disk.img" 48M > "$tmp/mke2fs.log" 2>&1
check "ext4 image built" test -s "$tmp/disk.img"
for geom in "1 4" "2 3"; do
	set -- $geom
	rc=0
	timeout 60 "$gpuos" run --device "emu:$tmp/disk.img" --host "$apps/layer_stream.cubin" --grid "$1" --block "$2" \
		-- /models/m.gguf > "$tmp/o" 2>&1 || rc=$?
	check "layer_stream, $(( $1 * $2 )) threads: exit 0, checksums equal layer_sums.py's" python3 - "$tmp/o" "$tmp/ref.txt" "$rc" <<'PY'
import re, sys
got = {int(m.group(1)): m.group(2) for m in
       (re.match(r"^\s*(\d+)\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([0-9a-f]{16})\s*$", l) for l in open(sys.argv[1])) if m}
want = {int(l.split()[1]): l.split()[2] for l in open(sys.argv[2]) if l.startswith("layer ")}
sys.exit(0 if sys.argv[3] == "0" and got == want and len(want) == 2 else 1)
PY
done

echo "== streamed: a 100 MiB layer in little memory"
# Its largest tensor (output.weight) is 94 MB: a writer holding a tensor,
# let alone the model, goes past the bound.
check "--layers 1 --layer-mib 100: exit 0, peak RSS under 64 MiB" python3 - "$W" "$tmp/big.gguf" <<'PY'
import os, resource, subprocess, sys, time
t = time.time()
rc = subprocess.call([sys.executable, sys.argv[1], "--case", "demo", "--layers", "1", "--layer-mib", "100",
                      sys.argv[2]])
dt = time.time() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
size = os.path.getsize(sys.argv[2]) if rc == 0 else 0
print("       %d bytes in %.2f s (%.0f MB/s), peak RSS %.1f MiB" % (size, dt, size / dt / 1e6, rss))
sys.exit(0 if rc == 0 and size > 200e6 and rss < 64 else 1)
PY
rm -f "$tmp/big.gguf"

echo "== --split: gguf-split's layout"
mkdir -p "$tmp/split"
python3 $W --case demo --layers 3 --seed 9 --split 4 "$tmp/split/m.gguf" --json "$tmp/split/m.json" > /dev/null
node_mods=node_modules
command -v node > /dev/null && [ -f $node_mods/@huggingface/gguf/package.json ] || node_mods=
check "node and @huggingface/gguf are installed (scripts/deps.sh)" test -n "$node_mods"
for k in 1 2 3 4; do
	s=$tmp/split/m-0000$k-of-00004
	node tests/tools/gguf_ref.mjs --modules "$node_mods" "$s.gguf" > "$s.ref.json" 2> "$tmp/e"
	check "shard $k of 4: @huggingface/gguf reads what the writer describes" \
		python3 tests/tools/gguf_compare.py --quiet --max 5 "$s.json" "$s.ref.json"
	cp "$s.gguf" "$tmp/raw.img" && truncate -s %4096 "$tmp/raw.img"
	timeout 60 "$gpuos" gguf --json --shard --device "emu:$tmp/raw.img" --host @0 > "$s.g.json" 2> "$tmp/e"
	check "shard $k of 4: gpuos gguf reads the same" python3 tests/tools/gguf_compare.py --quiet --max 5 "$s.json" "$s.g.json"
done
check "the shards: split KVs, every KV in the first, every tensor once, the original's bytes" \
	python3 - "$tmp/split" <<'PY'
import json, sys
d = sys.argv[1]
orig = json.load(open(d + "/m.json"))
shards = [json.load(open(d + "/m-%05d-of-00004.ref.json" % k)) for k in range(1, 5)]
kv = [{e["key"]: e["value"] for e in s["kv"]} for s in shards]
ok = all(kv[k]["split.no"] == k and kv[k]["split.count"] == 4 and kv[k]["split.tensors.count"] == orig["tensor_count"]
         for k in range(4))
ok = ok and all(e["key"] in kv[0] for e in orig["kv"]) and all(len(kv[k]) == 3 for k in range(1, 4))
names = [t["name"] for s in shards for t in s["tensors"]]
ok = ok and names == [t["name"] for t in orig["tensors"]]
src = open(d + "/m.gguf", "rb")
where = {t["name"]: t for t in orig["tensors"]}
for k, s in enumerate(shards):
    with open(d + "/m-%05d-of-00004.gguf" % (k + 1), "rb") as f:
        for t in s["tensors"]:
            o = where[t["name"]]
            f.seek(t["abs_offset"])
            src.seek(o["abs_offset"])
            ok = ok and t["byte_size"] == o["byte_size"] and f.read(t["byte_size"]) == src.read(o["byte_size"])
print("       %d tensors in 4 shards of %s" % (len(names), ", ".join(str(len(s["tensors"])) for s in shards)))
sys.exit(0 if ok else 1)
PY

echo "== refused"
err() { # LABEL PATTERN ARGS...: exit 2 and PATTERN on stderr
	local label=$1 pat=$2 rc=0
	shift 2
	python3 $W "$@" > /dev/null 2> "$tmp/e" || rc=$?
	check "$label: exit 2, says '$pat'" eval 'test "$rc" -eq 2 && grep -q -- "$pat" "$tmp/e"'
}
err "--layer-mib 0" "must be 1..65536" --case demo --layer-mib 0 "$tmp/x.gguf"
err "--layer-mib on another case" "sizes --case demo only" --case small --layer-mib 4 "$tmp/x.gguf"
err "--alignment 48" "power of two" --case demo --layer-mib 1 --alignment 48 "$tmp/x.gguf"
err "--split 0" "cannot fill" --case demo --layers 1 --split 0 "$tmp/x.gguf"
err "--split past the tensors" "cannot fill" --case demo --layers 1 --split 99 "$tmp/x.gguf"

echo
echo "writer: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
