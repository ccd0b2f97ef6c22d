#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The model apps (apps/gguf_load.c, apps/layer_stream.c), apps/iops.c and apps/file_load.c
# through `gpuos run --host` on the emulated controller, against checksums
# computed here from the files themselves. Usage: tests/emu/apps_model.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
apps=$build/apps
tmp=$(mktemp -d /tmp/gpuos-apps-model.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

# run OUT APP [run options] -- ARGS: the app's output in OUT, its exit status in $rc
run() {
	local out=$1 app=$2
	shift 2
	rc=0
	timeout 60 "$gpuos" run --device "emu:$img" --host "$apps/$app.cubin" "$@" > "$out" 2>&1 || rc=$?
}

echo "== images"
mkdir -p "$tmp/src/models"
python3 tests/tools/gguf_writer.py --case demo "$tmp/src/models/m.gguf" --json "$tmp/m.json" --seed 3 --layers 3 &&
	python3 tests/tools/gguf_writer.py --case vocab "$tmp/src/models/nolayers.gguf" --seed 1 &&
	head -c $((3 << 20)) /dev/urandom > "$tmp/src/rand.bin" &&
	echo "not a model" > "$tmp/src/models/text.gguf" &&
	mke2fs -q -F -t ext4 -b 4096 -d "$tmp/src" "$tmp/disk.img" 96M > "$tmp/mke2fs.log" 2>&1
check "model and disk image built" test -s "$tmp/disk.img"
img=$tmp/disk.img
python3 tests/tools/layer_sums.py "$tmp/src/models/m.gguf" "$tmp/m.json" > "$tmp/ref.txt"
check "host reference computed" test "$(grep -c '^layer ' "$tmp/ref.txt")" -eq 3
sha() { awk -v n="$1" '$1 == "sha" && $2 == n { print $3 }' "$tmp/ref.txt"; }

echo "== gguf_load"
run "$tmp/o" gguf_load --grid 1 --block 3 -- /models/m.gguf "token_embd.weight=$(sha token_embd.weight)" \
	"blk.2.ffn_up.weight=$(sha blk.2.ffn_up.weight)" "output.weight=$(sha output.weight)"
check "right hashes: exit 0" test "$rc" -eq 0
check "right hashes: three ok lines" test "$(grep -c '^ok ' "$tmp/o")" -eq 3
check "right hashes: sizes reported" grep -q "^ok        output.weight $(python3 -c "import json,sys; print([t['byte_size'] for t in json.load(open(sys.argv[1]))['tensors'] if t['name']=='output.weight'][0])" "$tmp/m.json") bytes" "$tmp/o"
wrong=$(sha blk.0.attn_q.weight | tr '0-9a-f' '1-9a-f0')
run "$tmp/o" gguf_load --grid 1 --block 2 -- /models/m.gguf "blk.0.attn_q.weight=$wrong" \
	"blk.0.attn_k.weight=$(sha blk.0.attn_k.weight)"
check "a wrong hash: exit 1" test "$rc" -eq 1
check "a wrong hash: MISMATCH for that tensor only" \
	test "$(grep -c '^MISMATCH  blk.0.attn_q.weight' "$tmp/o")" -eq 1 -a "$(grep -c '^ok ' "$tmp/o")" -eq 1
check "a wrong hash: the real one printed" grep -q "sha256 $(sha blk.0.attn_q.weight) expected $wrong" "$tmp/o"
l1=$(awk '$1 == "sha" && $2 ~ /^blk\.1\./ { print $3 }' "$tmp/ref.txt" | paste -sd,)
run "$tmp/o" gguf_load --grid 1 --block 4 -- /models/m.gguf "layer:1=$l1"
check "a whole layer: 9 tensors ok" test "$rc" -eq 0 -a "$(grep -c '^ok        blk\.1\.' "$tmp/o")" -eq 9
run "$tmp/o" gguf_load --grid 1 --block 1 -- /models/m.gguf layer:2
check "a layer without hashes: loaded, hashes printed" \
	test "$rc" -eq 0 -a "$(grep -c "^loaded    blk.2.ffn_down.weight .* sha256 $(sha blk.2.ffn_down.weight)" "$tmp/o")" -eq 1
run "$tmp/o" gguf_load --grid 1 --block 64 -- /models/m.gguf "token_embd.weight=$(sha token_embd.weight)" \
	"blk.0.ffn_down.weight=$(sha blk.0.ffn_down.weight)"
check "more threads than tensors" test "$rc" -eq 0 -a "$(grep -c '^ok ' "$tmp/o")" -eq 2
run "$tmp/o" gguf_load -- /models/m.gguf no.such.tensor "layer:1=$(sha blk.1.attn_q.weight)" layer:77 \
	"output.weight=xyz" "layer:x" "token_embd.weight=$(sha token_embd.weight)"
check "hostile specs: exit 1" test "$rc" -eq 1
check "hostile specs: each refused with a reason" test "$(grep -c '^ERROR ' "$tmp/o")" -eq 5
check "hostile specs: no such tensor" grep -q "^ERROR     no.such.tensor: no such tensor" "$tmp/o"
check "hostile specs: too few hashes for a layer" grep -q "^ERROR     layer:1: give one" "$tmp/o"
check "hostile specs: the good one still verified" grep -q "^ok        token_embd.weight" "$tmp/o"
run "$tmp/o" gguf_load -- /models/missing.gguf x
check "missing model: exit 2, says NOENT" test "$rc" -eq 2 -a "$(grep -c 'missing.gguf: NOENT' "$tmp/o")" -eq 1
run "$tmp/o" gguf_load -- /models/text.gguf x
check "not a GGUF: exit 2, says why" test "$rc" -eq 2 -a "$(grep -c 'text.gguf: CORRUPT' "$tmp/o")" -eq 1
run "$tmp/o" gguf_load -- /models/m.gguf
check "no specs: usage, exit 2" test "$rc" -eq 2 -a "$(grep -c '^usage: gguf_load' "$tmp/o")" -eq 1

echo "== layer_stream"
stream_ok() { # OUT: every layer's checksum equals the host's
	python3 - "$1" "$tmp/ref.txt" <<'PY'
import re, sys
got = {int(m.group(1)): m.group(2) for m in
       (re.match(r"^\s*(\d+)\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([0-9a-f]{16})\s*$", l) for l in open(sys.argv[1])) if m}
want = {int(l.split()[1]): l.split()[2] for l in open(sys.argv[2]) if l.startswith("layer ")}
sys.exit(0 if got == want and want else 1)
PY
}
for geom in "1 4" "1 1" "1 2" "2 3"; do
	set -- $geom
	run "$tmp/o" layer_stream --grid "$1" --block "$2" -- /models/m.gguf
	check "$(( $1 * $2 )) threads: exit 0, checksums equal the host's" eval 'test "$rc" -eq 0 && stream_ok "$tmp/o"'
done
check "report: total and GB/s" grep -Eq '^total [0-9]+ bytes in 3 layers, .* GB/s streamed' "$tmp/o"
run "$tmp/o" layer_stream -- /models/missing.gguf
check "missing model: exit 2, says NOENT" test "$rc" -eq 2 -a "$(grep -c 'missing.gguf: NOENT' "$tmp/o")" -eq 1
run "$tmp/o" layer_stream --grid 1 --block 3 -- /rand.bin
check "not a GGUF: exit 2, says CORRUPT" test "$rc" -eq 2 -a "$(grep -c 'rand.bin: CORRUPT' "$tmp/o")" -eq 1
run "$tmp/o" layer_stream --grid 1 --block 3 -- /models/nolayers.gguf
check "a model without layers: exit 2, says so" test "$rc" -eq 2 -a "$(grep -c 'no layers' "$tmp/o")" -eq 1
run "$tmp/o" layer_stream -- /models/m.gguf extra
check "RESIDENT not a number: exit 2, says so" test "$rc" -eq 2 -a "$(grep -c 'RESIDENT is a number' "$tmp/o")" -eq 1
for r in 1 3; do
	run "$tmp/o" layer_stream --grid 1 --block 4 --heap-mib 160 -- /models/m.gguf $r
	check "RESIDENT $r: exit 0, checksums equal the host's" eval 'test "$rc" -eq 0 && stream_ok "$tmp/o"'
	check "RESIDENT $r: says so, streams the rest" \
		eval 'grep -q "($r resident)" "$tmp/o" && test "$(awk '"'"'$1 ~ /^[0-9]+$/ && $4 > 0'"'"' "$tmp/o" | wc -l)" -eq $((3 - r))'
done
run "$tmp/o" layer_stream -- /models/m.gguf 4
check "RESIDENT above the layers: exit 2, says so" test "$rc" -eq 2 -a "$(grep -c 'more than the model' "$tmp/o")" -eq 1
run "$tmp/o" layer_stream --vram-mib 24 -- /models/m.gguf 3
check "RESIDENT beyond vram: exit 2, says how much" test "$rc" -eq 2 -a "$(grep -c 'resident layers need' "$tmp/o")" -eq 1

echo "== file_load"
want=$(python3 tests/tools/buffer_sum.py "$tmp/src/rand.bin")
for geom in "1 1" "1 5"; do
	set -- $geom
	run "$tmp/o" file_load --grid "$1" --block "$2" --vram-mib 64 -- /rand.bin 64
	check "$2 threads: exit 0, the whole file, its checksum" \
		grep -q "^result bytes=$((3 << 20)) ns=[0-9]* sum=$want\$" "$tmp/o"
done
run "$tmp/o" file_load --grid 1 --block 3 --heap-mib 128 -- /models/m.gguf
check "default pieces: the checksum of another file" \
	grep -q "sum=$(python3 tests/tools/buffer_sum.py "$tmp/src/models/m.gguf")\$" "$tmp/o"
run "$tmp/o" file_load --vram-mib 64 -- /missing.bin
check "missing file: exit 2, says NOENT" test "$rc" -eq 2 -a "$(grep -c 'missing.bin: NOENT' "$tmp/o")" -eq 1
run "$tmp/o" file_load --vram-mib 33 -- /models/m.gguf
check "file larger than vram: exit 2, says so" test "$rc" -eq 2 -a "$(grep -c 'bytes of vram for it' "$tmp/o")" -eq 1
run "$tmp/o" file_load --vram-mib 64 -- /rand.bin 3
check "bad piece size: exit 2, usage" test "$rc" -eq 2 -a "$(grep -c 'PIECE_KIB is a multiple of 4' "$tmp/o")" -eq 1

echo "== iops"
run "$tmp/o" iops --grid 1 --block 4 -- /rand.bin --reads 2000
check "--reads: exit 0, 2000 reads, no errors" test "$rc" -eq 0 -a "$(grep -c '^reads 2000  errors 0' "$tmp/o")" -eq 1
check "--reads: IOPS and percentiles" \
	grep -Eq '^IOPS [1-9][0-9]*  MB/s .*' "$tmp/o"
check "--reads: p50 <= p99 <= p999" python3 -c '
import re, sys
m = re.search(r"p50 ([\d.]+) us  p99 ([\d.]+) us  p999 ([\d.]+) us", open(sys.argv[1]).read())
a, b, c = map(float, m.groups())
sys.exit(0 if 0 < a <= b <= c else 1)' "$tmp/o"
run "$tmp/o" iops --grid 1 --block 2 -- /rand.bin --seconds 0.3
check "--seconds: exit 0, some reads" test "$rc" -eq 0 -a "$(grep -Ec '^reads [1-9]' "$tmp/o")" -eq 1
run "$tmp/o" iops -- /rand.bin --reads -5
check "bad --reads: usage, exit 2" test "$rc" -eq 2 -a "$(grep -c '^usage: iops' "$tmp/o")" -eq 1
run "$tmp/o" iops --grid 1 --block 2 -- /nothing
check "missing file: exit 2, says NOENT" test "$rc" -eq 2 -a "$(grep -c 'nothing: NOENT' "$tmp/o")" -eq 1
run "$tmp/o" iops -- /models/text.gguf
check "a file under 4 KiB: exit 2, says so" test "$rc" -eq 2 -a "$(grep -c 'smaller than 4 KiB' "$tmp/o")" -eq 1

echo "== a progress bar on stderr when it is a terminal, none otherwise"
# 200 ms a command makes the load last a couple of seconds; script(1) gives
# the run a terminal.
script -qec "GPUOS_QUIET_HOST=1 timeout 60 $gpuos run --device emu:$img,latency_us=200000 --host \
	$apps/layer_stream.cubin -- /models/m.gguf > $tmp/bar.out" /dev/null > "$tmp/bar.tty" 2>&1
tr '\r' '\n' < "$tmp/bar.tty" > "$tmp/bar.lines"
check "on a terminal: the app's bytes of its total, with a rate" \
	grep -Eq '^ *[0-9]+%  [0-9.]+ [KMG]?i?B of [0-9.]+ MiB  [0-9.]+ GB/s' "$tmp/bar.lines"
check "on a terminal: the bar reaches 100 % and is cleared before the statistics" \
	test "$(grep -c '^100%' "$tmp/bar.lines")" -ge 1 -a "$(grep -c $'^\033\\[Kexit status 0' "$tmp/bar.lines")" -eq 1
check "on a terminal: stdout (a file) holds the report, no bar" \
	test "$(grep -c $'\r' "$tmp/bar.out")" -eq 0 -a "$(grep -Ec '^ +[0-9]+ +9 +[0-9]+ ' "$tmp/bar.out")" -eq 3
run "$tmp/o" layer_stream --grid 1 --block 3 -- /models/m.gguf
check "through a pipe: no bar" test "$rc" -eq 0 -a "$(grep -c $'\r' "$tmp/o")" -eq 0

echo
echo "apps_model: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
