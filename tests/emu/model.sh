#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `gpuos model`: any model's tensor table (gpuos.model/1, docs/json.md), on
# the emulated controller (host mode), checked against what wrote the files
# or an independent reader:
#  - GGUF files of gguf_writer.py (valid cases that fit a small image, a
#    gguf-split model from any shard, --shard, a GGUF at a byte offset of the
#    device) against the writer's own descriptions;
#  - safetensors files of safetensors_writer.py (every dtype, empty tensors,
#    scalars, __metadata__, padded and unpadded headers, escapes) and a
#    3-shard checkpoint through its model.safetensors.index.json, against
#    st_header.py (json.loads of the headers, nothing shared with the C
#    parser): dtype, shape, offset (8 + N + begin), bytes, key by key;
#  - the text form; the JSON against its table in docs/json.md;
#  - through a `gpuos boot` service (--socket): the same tables, a user
#    without read permission refused, hostile files refused one after the
#    other while the next command is still served;
#  - hostile safetensors files and checkpoints through the CLI: exit 1, one
#    line naming the problem, never a crash or a hang.
# Python starts slowly on a busy machine: the outputs are gathered first and
# compared in one run of model_compare.py.
# Usage: tests/emu/model.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
here=$(cd "$(dirname "$0")/../.." && pwd)
T=$here/tests/tools
. "$here/tests/emu/wait.sh" # wait_ready FILE PID
tmp=$(mktemp -d /tmp/gpuos-model.XXXXXX)
chmod 755 "$tmp"
svc=
trap '[ -n "$svc" ] && kill -9 $svc 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skipped() { skip=$((skip + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# relay < FILE: its "ok LABEL" and "FAIL LABEL" lines (with indented details)
# as checks (not in a pipeline: the counts are this shell's)
relay() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok }" ;;
		"FAIL "*) bad "${line#FAIL }" ;;
		*) echo "$line" ;;
		esac
	done
}
export GPUOS_QUIET_HOST=1

for t in mke2fs python3 timeout; do
	command -v $t > /dev/null || { echo "model: $t is missing (make deps)"; exit 1; }
done
[ -x "$gpuos" ] || { echo "model: $gpuos is missing (make BUILD=$build all)"; exit 1; }

echo "== images"
src=$tmp/src
out=$tmp/out
ref=$tmp/ref
mkdir -p "$src/models" "$src/private" "$out" "$ref"
GGUF_CASES="all-v3 all-v2 align-4096 many-layers vocab empty nested-8 layer-names"
built=1
for c in $GGUF_CASES; do
	python3 $T/gguf_writer.py --case $c "$src/models/$c.gguf" --json "$ref/$c.json" > /dev/null || built=0
done
# (the shards' descriptions land beside sp.json: ref/sp-0000K-of-00003.json)
python3 $T/gguf_writer.py --case demo --layers 2 --seed 5 --split 3 "$src/models/sp.gguf" --json "$ref/sp.json" \
	> /dev/null || built=0
python3 $T/safetensors_writer.py --all "$src/st" || built=0
ST_CASES=$(cd "$src/st" && ls | sed 's/\.safetensors$//')
python3 $T/safetensors_writer.py --checkpoint "$src/ckpt" && rm -f "$src"/ckpt/*.desc || built=0
python3 $T/safetensors_writer.py --hostile "$src/h" && mv "$src/h/expect" "$tmp/expect" || built=0
# only root may read these (a service checks its clients' rights)
cp "$src/models/nested-8.gguf" "$src/st/metadata.safetensors" "$src/private/"
cp -r "$src/ckpt" "$src/private/ckpt"
chmod 600 "$src/private/nested-8.gguf" "$src/private/metadata.safetensors" "$src/private/ckpt/model-00002-of-00003.safetensors"
echo "not a model, just text" > "$src/text.txt"
mke2fs -q -F -t ext4 -b 4096 -d "$src" "$tmp/disk.img" 128M > "$tmp/mke2fs.log" 2>&1 || built=0
# a GGUF at a byte offset of a device without a file system
truncate -s 8M "$tmp/raw.img"
dd if="$src/models/all-v3.gguf" of="$tmp/raw.img" bs=1 seek=1048699 conv=notrunc status=none || built=0
check "GGUF and safetensors models, a checkpoint, hostile files; an ext4 image, a raw one" test $built -eq 1
img=$tmp/disk.img
m() { timeout 60 "$gpuos" model --host --device "emu:$img" "$@"; }
# get NAME ARGS...: model --json ARGS into $out/NAME.json (stderr beside it)
get() { local n=$1; shift; m --json "$@" > "$out/$n.json" 2> "$out/$n.err"; }
pairs=$tmp/pairs
: > "$pairs"
pair() { local IFS=$'\t'; echo "$*" >> "$pairs"; } # LABEL files|- GOT REF...

echo "== gpuos model --json of each model (compared below)"
for c in $GGUF_CASES; do
	get g-$c /models/$c.gguf
	pair "GGUF $c: every tensor (dtype, shape, offset, bytes, layer), metadata, layers" - "$out/g-$c.json" "$ref/$c.json"
done
# and as a reader written by others reads them: @huggingface/gguf (scripts/deps.sh)
node_mods=$here/node_modules
if command -v node > /dev/null && [ -f "$node_mods/@huggingface/gguf/package.json" ]; then
	for c in all-v3 many-layers; do
		node $T/gguf_ref.mjs --modules "$node_mods" "$src/models/$c.gguf" > "$ref/$c.npm.json" 2> /dev/null
		pair "GGUF $c: as @huggingface/gguf reads it" - "$out/g-$c.json" "$ref/$c.npm.json"
	done
else
	skipped "GGUF as @huggingface/gguf reads it (node or the package missing: scripts/deps.sh)"
fi
get split2 /models/sp-00002-of-00003.gguf
pair "gguf-split from its second shard: the 3 shards' tensors, each offset in its shard" - "$out/split2.json" \
	"$ref"/sp-0000{1,2,3}-of-00003.json
get splitb /models/sp
pair "gguf-split from its base name: the same" - "$out/splitb.json" "$ref"/sp-0000{1,2,3}-of-00003.json
get shard3 --shard /models/sp-00003-of-00003.gguf
pair "--shard: the third shard alone, as the writer describes it" - "$out/shard3.json" "$ref/sp-00003-of-00003.json"
timeout 60 "$gpuos" model --json --host --device "emu:$tmp/raw.img" @1048699 > "$out/raw.json" 2> "$out/raw.err"
pair "@1048699: a GGUF at a byte offset of the device, offsets from its start" - "$out/raw.json" "$ref/all-v3.json"
stpaths=()
for c in $ST_CASES; do
	get s-$c /st/$c.safetensors
	stpaths+=("/st/$c.safetensors")
	pair "safetensors $c: format, dtype, shape, offset, bytes, metadata, files" files "$out/s-$c.json" "$ref/$c.safetensors.json"
done
get ckpt /ckpt/model.safetensors.index.json
stpaths+=(/ckpt/model.safetensors.index.json)
pair "checkpoint (index.json): every shard's tensors, each with its shard and its offset in that file" - \
	"$out/ckpt.json" "$ref/model.safetensors.index.json.json"
for k in 1 2 3; do
	f=/ckpt/model-0000$k-of-00003.safetensors
	get ckpt$k $f
	stpaths+=("$f")
	pair "checkpoint shard $k alone" files "$out/ckpt$k.json" "$ref/${f##*/}.json"
done
python3 $T/st_header.py --root "$src" --out "$ref" "${stpaths[@]}" || bad "st_header.py read every safetensors file"
sed 's/"offset": \([0-9]*\)/"offset": 1\1/' "$out/s-dtypes.json" > "$out/wrong.json"
echo "x"$'\t'-$'\t'"$out/wrong.json"$'\t'"$ref/dtypes.safetensors.json" > "$tmp/wrong"

echo "== against the writers and st_header.py"
python3 $T/model_compare.py --pairs "$pairs" > "$tmp/said"
relay < "$tmp/said"
check "(model_compare.py notices a wrong offset)" eval '! python3 $T/model_compare.py --pairs "$tmp/wrong" > /dev/null'
for f in g-all-v3 split2 s-dtypes s-empty-scalar ckpt; do
	check "$f: JSON as docs/json.md's table of gpuos.model/1 says" \
		eval 'python3 $T/check_json.py --doc "$here/docs/json.md" "$out/$f.json" > "$tmp/cj" || { cat "$tmp/cj"; false; }'
done
timeout 60 "$gpuos" gguf --json --host --device "emu:$img" /models/all-v3.gguf > "$out/gguf.json" 2> /dev/null
python3 - "$out" > "$tmp/said" <<'PY'
import json, sys
o = sys.argv[1]
J = lambda n: json.load(open("%s/%s.json" % (o, n)))
def say(ok, label):
    print("%s %s" % ("ok" if ok else "FAIL", label))
g, m = J("gguf"), J("g-all-v3")
say([(t["name"], t["type"], t["dims"][::-1], t["abs_offset"], t["byte_size"]) for t in g["tensors"]] ==
    [(t["name"], t["dtype"], t["shape"], t["offset"], t["bytes"]) for t in m["tensors"]] and
    list(m["metadata"]) == [k["key"] for k in g["kv"]] and m["layers"] == g["layers"],
    "model and gguf agree on every tensor and key of all-v3")
s = J("split2")
say(s["files"] == ["/models/sp-%05d-of-00003.gguf" % k for k in (1, 2, 3)] and s["shards"] == 3,
    "gguf-split: files are its 3 shards")
say(J("g-all-v3")["files"] == ["/models/all-v3.gguf"] and J("g-all-v3")["shards"] == 1, "GGUF: files is the path")
names = {t["dtype"] for t in J("s-dtypes")["tensors"]}
say(names == {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
              "I64", "U64"}, "safetensors: every dtype, by its name")
t = {t["name"]: t for t in J("s-empty-scalar")["tensors"]}
say(t["scalar.f32"]["shape"] == [] and t["scalar.f32"]["bytes"] == 4 and t["scalar.bool"]["shape"] == [] and
    t["empty.302"]["shape"] == [3, 0, 2] and t["empty.302"]["bytes"] == 0 and t["empty.0"]["bytes"] == 0,
    "scalars (shape []) and empty tensors (0 bytes)")
L = J("s-layers")
say(L["layers"] == 4 and all(x["layer"] == (int(x["name"].split(".")[2]) if x["name"].startswith("model.layers.")
                                            else None) for x in L["tensors"]),
    "layers: model.layers.N.* in layer N, the others null; 4 layers")
md = J("s-metadata")["metadata"]
say(md["quote\"back\\slash"] == "tab\tnew\nline" and md["unicode"] == "caf\u00e9 \u65e5\u672c \U0001F600",
    "__metadata__ with escapes and UTF-8: every string exact")
ml = J("s-metadata-long")
say(ml["metadata_truncated"] == ["long"] and len(ml["metadata"]["long"].rstrip("\ufffd").encode()) == 65535 and
    ml["metadata"]["short"] == "s", "a __metadata__ value over 65536 bytes: cut there, its key in metadata_truncated")
c = J("ckpt")
say((c["shards"], c["files"], c["layers"], c["metadata"]) == (3, None, 4, {"format": "pt"}),
    "checkpoint: shards 3, files null (its weight_map names them), 4 layers, the first file's metadata")
PY
relay < "$tmp/said"

echo "== text"
m /st/empty-scalar.safetensors > "$tmp/t.txt" 2> "$tmp/e"
want=$(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["bytes"])' "$out/s-empty-scalar.json")
check "a header line: format, tensors, bytes, layers" grep -qx "safetensors: 7 tensors, $want bytes ($want B), 0 layers" "$tmp/t.txt"
check "a line per tensor: name, dtype, shape, offset, bytes" \
	eval 'grep -q "^scalar\.f32  *F32  *\[\]  *[0-9][0-9]*  *4$" "$tmp/t.txt" && grep -q "^empty\.302  *I64  *\[3, 0, 2\]  *[0-9]*  *0$" "$tmp/t.txt"'
aligned() { # the column header and the rows of FILE have one length: every column padded
	[ "$(sed -n '/^NAME /,$p' "$1" | LC_ALL=C awk '{ print length($0) }' | sort -u | wc -l)" -eq 1 ]
}
check "aligned columns" aligned "$tmp/t.txt"
m /models/sp-00001-of-00003.gguf > "$tmp/t.txt" 2> "$tmp/e"
check "a split model: its files, and a shard column" \
	eval 'grep -q "^gguf: 21 tensors, .*, 2 layers, 3 files$" "$tmp/t.txt" && grep -qx "  shard 2: /models/sp-00003-of-00003.gguf" "$tmp/t.txt" &&
		grep -q "^NAME .* SHARD$" "$tmp/t.txt" && grep -q "^output\.weight .*  2$" "$tmp/t.txt" && aligned "$tmp/t.txt"'
m /st/unicode-raw.safetensors > "$tmp/t.txt" 2> "$tmp/e"
check "control characters in names escaped, columns aligned" \
	eval 'grep -q "^ctl\\\\b\\\\f\\\\n\\\\r\\\\t  " "$tmp/t.txt" && aligned "$tmp/t.txt"'

echo "== refused"
expect() { # LABEL RC WORDS ARGS...: exit status RC, one line on stderr with WORDS, nothing on stdout
	local label=$1 want=$2 words=$3 rc=0; shift 3
	"$@" > "$tmp/o" 2> "$tmp/e" || rc=$?
	check "$label" eval '[ $rc -eq $want ] && grep -q -- "$words" "$tmp/e" && [ "$(wc -l < "$tmp/e")" -eq 1 ] && [ ! -s "$tmp/o" ] ||
		{ echo "       rc $rc: $(head -c 300 "$tmp/e")"; false; }'
}
expect "no path: usage, exit 2" 2 "give one path" "$gpuos" model --host --device "emu:$img"
expect "--allow-raw is not an option of model (nor of gguf): exit 2" 2 "not an option of model" \
	"$gpuos" model --host --device "emu:$img" --allow-raw @0
expect "a missing file: exit 1" 1 "/models/none.gguf: " m /models/none.gguf
expect "a file that is no model: exit 1" 1 "/text.txt: " m /text.txt
expect "gpuos gguf of a safetensors file: exit 1, points to gpuos model" 1 "a safetensors model, not GGUF (gpuos model" \
	timeout 60 "$gpuos" gguf --host --device "emu:$img" /st/dtypes.safetensors
while IFS=$'\t' read -r name path words; do
	expect "hostile $name: exit 1, '$words'" 1 "$words" m /h/$path
done < "$tmp/expect"

echo "== through a service (--socket)"
sock=$tmp/s.sock
grp=$(getent group 65534 | cut -d: -f1)
opts=(--socket-mode 0660)
[ -n "$grp" ] && opts+=(--group "$grp") && chgrp "$grp" "$tmp" && chmod 750 "$tmp"
# small client areas: the service renews (clears) the area of each client
# that leaves before it gives it out again, paced, and this suite's clients
# come and go quickly
"$gpuos" boot --device "emu:$img" --host --socket "$sock" --heap-mib 16 "${opts[@]}" > "$tmp/svc.out" 2> "$tmp/svc.err" < /dev/null &
svc=$!
wait_ready "$tmp/svc.out" $svc
check "a service boots" eval 'grep -q ready "$tmp/svc.out" || { cat "$tmp/svc.err"; false; }'
# s ARGS...: model --socket ARGS, asked again (up to 3 times, a second
# apart) while the service has no client share free: it renews them paced,
# and a busy machine makes that slow
s() {
	local rc
	for _ in 1 2 3; do
		rc=0
		timeout 60 "$gpuos" model --socket "$sock" "$@" < /dev/null 2> "$tmp/s.err" || rc=$?
		grep -q "refused to attach: err all .* shares in use" "$tmp/s.err" || break
		sleep 1
	done
	cat "$tmp/s.err" >&2
	return $rc
}
for n in g-all-v3:/models/all-v3.gguf s-dtypes:/st/dtypes.safetensors ckpt:/ckpt/model.safetensors.index.json \
	 split2:/models/sp-00002-of-00003.gguf; do
	s --json ${n#*:} > "$tmp/o" 2> "$tmp/e"
	check "${n#*:} through the service: what --device gives" cmp -s "$tmp/o" "$out/${n%%:*}.json"
done
good() { s --json /st/metadata.safetensors 2> /dev/null | cmp -s - "$out/s-metadata.json"; }
n=0 fine=0
while IFS=$'\t' read -r name path words; do
	rc=0
	s /h/$path > /dev/null 2> "$tmp/e" || rc=$?
	n=$((n + 1))
	if [ $rc -eq 1 ] && grep -q -- "$words" "$tmp/e" && good; then
		fine=$((fine + 1))
	else
		echo "       $name: rc $rc: $(head -c 200 "$tmp/e")"
	fi
done < "$tmp/expect"
check "each of $n hostile files refused by the service (exit 1, the problem named), the next command served" test $fine -eq $n
if [ "$(id -u)" -ne 0 ] || [ -z "$grp" ] || ! command -v setpriv > /dev/null; then
	skipped "a user without read permission (needs root to become uid 65534)"
else
	nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@" < /dev/null; }
	nobody timeout 60 "$gpuos" model --socket "$sock" --json /models/nested-8.gguf > "$tmp/o" 2> "$tmp/e"
	check "uid 65534 lists a model others may read" cmp -s "$tmp/o" "$out/g-nested-8.json"
	for f in /private/nested-8.gguf /private/metadata.safetensors /private/ckpt/model.safetensors.index.json; do
		rc=0
		nobody timeout 60 "$gpuos" model --socket "$sock" $f > "$tmp/o" 2> "$tmp/e" || rc=$?
		what="mode 0600"
		[ "${f%.json}" != "$f" ] && what="its second shard of mode 0600"
		check "uid 65534, $f ($what, root's): permission denied, exit 1" \
			eval '[ $rc -eq 1 ] && grep -q "permission denied" "$tmp/e" && [ ! -s "$tmp/o" ] || { echo "       rc $rc: $(cat "$tmp/e")"; false; }'
	done
	s --json /private/metadata.safetensors > "$tmp/o" 2> "$tmp/e"
	check "root lists them" eval 'sed "s|/private/|/st/|g" "$tmp/o" | cmp -s - "$out/s-metadata.json"'
fi
timeout 60 "$gpuos" stop --socket "$sock" > /dev/null 2>&1
wait $svc 2> /dev/null
svc=

echo
echo "model: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
