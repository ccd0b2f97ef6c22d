#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark pipeline without a GPU: bench/baselines rand (the CPU side
# of random 4 KiB reads) and bench/results.py (rows, ratios, the page, the
# plots). Usage: tests/emu/bench.sh BUILD_DIR
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
res=$here/../../bench/results.py
tmp=$(mktemp -d /tmp/gpuos-bench-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

echo "== baselines rand"
head -c $((8 << 20)) /dev/urandom > "$tmp/f.img"
"$build/bench/baselines" rand "$tmp/f.img" --qd 8 --reads 5000 > "$tmp/r.json" 2> "$tmp/err"; rc=$?
cat "$tmp/r.json" "$tmp/err" | sed 's/^/       /'
check "random 4 KiB reads at QD 8: IOPS, p50, p99, and reads compared with pread" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bench"] == "rand" and r["qd"] == 8 and r["bs"] == 4096 and r["reads"] == 5000
assert r["checked"] >= 4 and r["iops"] > 0 and 0 < r["lat_p50_us"] <= r["lat_p99_us"]' "$tmp/r.json"
"$build/bench/baselines" rand "$tmp/nope" --qd 8 > /dev/null 2> "$tmp/err"; rc=$?
check "a missing file: exit 2 and its name" test $rc -eq 2 -a -n "$(grep nope "$tmp/err")"

echo "== results.py: rows, ratios, the page"
add() { python3 "$res" add "$tmp/res/t.csv" "$@"; }
echo '{"iops": 100, "p50": 20}' | add random4k base-qd-1 "liburing" "page cache" - "cmd a" iops=iops:reads/s lat_p50_us=p50:us
echo '{"iops": 150, "p50": 10}' | add random4k ours-qd-1 "gpuos" "page cache" base-qd-1 "cmd b" iops=iops:reads/s lat_p50_us=p50:us
echo '{"iops": 1}' | add random4k other-qd-1 "gpuos" "disk" base-qd-1 "cmd c" iops=iops:reads/s
echo "3. not built" > "$tmp/res/skipped.txt"
python3 "$res" report "$tmp/res" "$tmp/page.md" "$tmp/plots" > "$tmp/out" 2>&1; rc=$?
check "the page is written" test $rc -eq 0 -a -s "$tmp/page.md"
check "a ratio of a rate: ours over the baseline's (1.50)" grep -q "| random4k | ours-qd-1 | base-qd-1 | page cache | iops | 150.0 reads/s | 100.0 reads/s | \*\*1.50\*\* |" "$tmp/page.md"
check "a ratio of a latency: the baseline's over ours (2.00)" grep -q "| lat_p50_us | 10 us | 20 us | \*\*2.00\*\* |" "$tmp/page.md"
check "no ratio against a baseline of another source" test "$(grep -c "other-qd-1 | base-qd-1" "$tmp/page.md")" -eq 0
check "what was not measured is listed" grep -qx -- "- 3. not built" "$tmp/page.md"
check "each row keeps its command" grep -q '`cmd b`' "$tmp/page.md"
if command -v gnuplot > /dev/null; then
	check "plots: gnuplot scripts and PNGs" test -s "$tmp/plots/r4-iops-page-cache.png" -a -s "$tmp/plots/r4-iops-page-cache.gp"
else
	check "plots: gnuplot scripts (no gnuplot here for the PNGs)" test -s "$tmp/plots/r4-iops-page-cache.gp"
fi
echo '{"x": 1}' | add random4k bad - - - "cmd" iops=iops:reads/s 2> "$tmp/err"; rc=$?
check "a metric missing from the JSON: refused, naming it" test $rc -ne 0 -a -n "$(grep "no iops" "$tmp/err")"

echo "== results.py: what gpuos run prints, checksums, targets"
printf 'file_load: /m, 2000000000 bytes in 0.1 s: 20 GB/s\nresult bytes=2000000000 ns=100000000 sum=00000000000000ff\nhost CPU: 0.020 s outside the emulator\x27s threads\n' |
	python3 "$res" runjson 40 > "$tmp/fl.json"
check "file_load's lines: GB/s, its share of H2D, CPU s/GB, the checksum" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert abs(j["gb_per_s"] - 20) < 1e-9 and abs(j["h2d_share"] - 0.5) < 1e-9 and abs(j["cpu_s_per_gb"] - 0.01) < 1e-9
assert j["sum"] == "00000000000000ff"' "$tmp/fl.json"
cat > "$tmp/ls.txt" <<'TXT'
layer tensors      bytes   load_ms compute_ms overlap_ms checksum
    0       9          0     0.000      1.500      0.000 00000000000000aa
    1       9    1000000     2.000      1.500      1.000 00000000000000bb
total 2000000 bytes in 2 layers, 0.004 s: 0.250 GB/s streamed (1000000 bytes), loads 0.500 GB/s, compute 0.667 GB/s
pass 4.000 ms: one token-equivalent (every layer once)
TXT
python3 "$res" runjson 40 < "$tmp/ls.txt" > "$tmp/ls.json"
check "layer_stream's lines: ms per token, streamed GB/s, each layer" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ms_per_token"] == 4.0 and abs(j["load_gb_per_s"] - 0.25) < 1e-9 and len(j["layer_ms"]) == 2
assert j["layer_ms"][1] == {"layer": 1, "bytes": 1000000, "load_ms": 2.0, "compute_ms": 1.5, "sum": "00000000000000bb"}' "$tmp/ls.json"
head -3 "$tmp/ls.txt" | python3 "$res" runjson 40 > /dev/null 2> "$tmp/err"; rc=$?
check "output without a result: refused" test $rc -ne 0 -a -s "$tmp/err"
python3 "$res" timeline a < "$tmp/ls.json" > "$tmp/tl.tsv"
python3 "$res" timeline b < "$tmp/ls.json" >> "$tmp/tl.tsv"
python3 "$res" samesums < "$tmp/tl.tsv" > "$tmp/sums"; rc=$?
check "the same layer checksums on two paths: one digest each, equal" \
	test $rc -eq 0 -a "$(cut -f4 "$tmp/sums" | sort -u | wc -l)" -eq 1 -a "$(wc -l < "$tmp/sums")" -eq 2
sed '$s/00000000000000bb/00000000000000bc/' "$tmp/tl.tsv" | python3 "$res" samesums > /dev/null 2> "$tmp/err"; rc=$?
check "a layer checksum that differs: exit 1, naming the path" test $rc -ne 0 -a -n "$(grep 'b differ' "$tmp/err")"
printf 'datapath\ttmpfs\tmmap\t01\ndatapath\ttmpfs\tgpuos-ram\t01\ndatapath\tdisk\tpread\t02\n' > "$tmp/cs.txt"
python3 "$res" checksums "$tmp/cs.txt" > "$tmp/out"; rc=$?
check "VRAM checksums that differ: exit 1, naming the odd one" test $rc -eq 1 -a -n "$(grep 'disk pread: 02' "$tmp/out")"
mkdir -p "$tmp/r2"
cd "$tmp"
echo '{"g": 10}' | python3 "$res" add r2/d.csv datapath pread-T8 "cpu" tmpfs - "c1" gb_per_s=g:GB/s
echo '{"g": 25}' | python3 "$res" add r2/d.csv datapath gpuos-ram "gpuos" tmpfs pread-T8 "c2" gb_per_s=g:GB/s
echo '{"g": 4}' | python3 "$res" add r2/d.csv datapath pread-T8 "cpu" "page cache" - "c3" gb_per_s=g:GB/s
echo '{"g": 3}' | python3 "$res" add r2/d.csv datapath gpuos-uring "gpuos" "page cache" pread-T8 "c4" gb_per_s=g:GB/s
cd - > /dev/null
printf 'datapath\ttmpfs\tpread-T8\t0a\ndatapath\ttmpfs\tgpuos-ram\t0a\n' > "$tmp/r2/checksums.txt"
python3 "$res" report "$tmp/r2" "$tmp/p2.md" "$tmp/pl2" > /dev/null 2>&1
check "targets: met, with the ratio" grep -q "tmpfs: gpuos-ram 25 GB/s against pread-T8 10 GB/s: \*\*2.50x\*\*, met" "$tmp/p2.md"
check "targets: missed, by how much" grep -q "page cache: gpuos-uring 3 GB/s against pread-T8 4 GB/s: \*\*0.75x\*\*, missed by 25 %" "$tmp/p2.md"
check "the checksums agree, said on the page" grep -q "Every path's VRAM copy of the whole file is the same: \`0a\`" "$tmp/p2.md"

echo "== bench/all.sh on a machine without a GPU keeps the GPU's committed rows"
# A copy of bench/ and docs/ (all.sh writes beside itself): section 1 (the
# same file into VRAM) cannot run here; its CSV and checksum lines stay.
root=$(cd "$here/../.." && pwd)
mkdir -p "$tmp/copy/docs"
cp -r "$root/bench" "$tmp/copy/"
cp "$root/docs/benchmarks.md" "$tmp/copy/docs/" 2> /dev/null
if "$build/gpuos" bench --device gpu-null --threads 1 --iters 1 --op nop > /dev/null 2>&1; then
	ok "a GPU here: bench/all.sh measures section 1 (not tested here)"
elif [ -s "$root/bench/results/datapath.csv" ]; then
	BENCH_ONLY=1 bash "$tmp/copy/bench/all.sh" "$build" "$tmp" "$tmp" > "$tmp/all.out" 2>&1; rc=$?
	check "BENCH_ONLY=1 without a GPU: exit 0 (rc $rc: $(tail -2 "$tmp/all.out" | tr '\n' ' '))" test $rc -eq 0
	check "the committed datapath.csv is kept, byte for byte" cmp -s "$root/bench/results/datapath.csv" "$tmp/copy/bench/results/datapath.csv"
	check "its checksum lines too" test "$(grep -c '^datapath	' "$tmp/copy/bench/results/checksums.txt")" -eq \
		"$(grep -c '^datapath	' "$root/bench/results/checksums.txt")"
	check "it says so" grep -q "kept the committed bench/results/datapath.csv" "$tmp/all.out"
	check "nothing set aside is left behind" test -z "$(ls -a "$tmp/copy/bench/results" | grep kept)"
else
	bad "bench/results/datapath.csv is missing from the tree"
fi

echo "bench pipeline: $pass passed, $fail failed"
[ $fail -eq 0 ]
