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

echo "bench pipeline: $pass passed, $fail failed"
[ $fail -eq 0 ]
