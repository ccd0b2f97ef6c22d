#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Extent maps of any size (runtime/files.h, the pool of --files-mib): a file
# of 50,000 extents in an extent tree of depth 3, read whole through the
# runtime against its source, its extents against debugfs's, and the pool's
# limit answered with a clear error. Usage: tests/emu/extents.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
tmp=$(mktemp -d /tmp/gpuos-extents.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

echo "== a file of 50,000 extents"
# 100,000 blocks of 1 KiB written in one piece, then every other block
# punched out (debugfs): 50,000 one-block extents, 84 to a leaf, so the
# tree has index blocks under index blocks. The holes read as zeros.
blocks=100000
mkdir -p "$tmp/src"
head -c $((blocks * 1024)) /dev/urandom > "$tmp/src/big"
mke2fs -q -F -t ext4 -b 1024 -d "$tmp/src" "$tmp/disk.img" 128M > "$tmp/mke2fs.log" 2>&1
seq 0 2 $((blocks - 1)) | awk '{ print "punch /big", $1, $1 }' | debugfs -w -f - "$tmp/disk.img" > /dev/null 2>&1
python3 - "$tmp/src/big" "$tmp/want" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for b in range(0, len(data) // 1024, 2):
    data[b * 1024:(b + 1) * 1024] = bytes(1024)
open(sys.argv[2], "wb").write(data)
PY
# debugfs's extents: leaf lines "L/ D  i/ n  lo - hi  phys - phys  len".
debugfs -R "ex /big" "$tmp/disk.img" 2> /dev/null | python3 -c '
import re, sys
for line in sys.stdin:
    m = re.match(r"\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+) -\s+\d+\s+(\d+) -\s+\d+\s+(\d+)", line)
    if m and m.group(1) == m.group(2):
        print(m.group(2), m.group(3), m.group(4), m.group(5))' > "$tmp/ex.txt"
n=$(wc -l < "$tmp/ex.txt")
depth=$(awk 'NR == 1 { print $1 }' "$tmp/ex.txt")
check "the image: $n data extents (debugfs), a tree of depth ${depth:-?}" test "$n" -ge 50000 -a "${depth:-0}" -ge 3

"$gpuos" stat --json --device "emu:$tmp/disk.img" /big > "$tmp/stat.json" 2> "$tmp/err"
check "gpuos stat: the same extents as debugfs, in order" python3 - "$tmp/stat.json" "$tmp/ex.txt" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
got = [(e["logical"], e["physical"], e["blocks"]) for e in st["extents"]]
want = [tuple(int(x) for x in l.split()[1:]) for l in open(sys.argv[2])]
sys.exit(0 if len(got) >= 50000 and got == want else 1)
PY

t0=$(date +%s.%N)
"$gpuos" cat --device "emu:$tmp/disk.img" /big > "$tmp/got" 2> "$tmp/err"; rc=$?
t1=$(date +%s.%N)
check "gpuos cat: every byte equals the source, holes zero ($(python3 -c "print('%.1f' % ($t1 - $t0))" ) s)" \
	eval 'test $rc -eq 0 && cmp -s "$tmp/got" "$tmp/want"'

echo "== the pool's limit"
# --files-mib 1: 43,690 extents, fewer than the file's.
"$gpuos" cat --files-mib 1 --device "emu:$tmp/disk.img" /big > "$tmp/got" 2> "$tmp/err"; rc=$?
sed 's/^/       /' "$tmp/err"
check "--files-mib 1: exit 1, no bytes, the reason names --files-mib" \
	eval 'test $rc -eq 1 -a ! -s "$tmp/got" && grep -q "files-mib" "$tmp/err"'
"$gpuos" cat --files-mib 2 --device "emu:$tmp/disk.img" /big > "$tmp/got" 2> "$tmp/err"; rc=$?
check "--files-mib 2 (87,381 extents): the whole file" eval 'test $rc -eq 0 && cmp -s "$tmp/got" "$tmp/want"'
"$gpuos" cat --files-mib 0 --device "emu:$tmp/disk.img" /big > /dev/null 2> "$tmp/err"; rc=$?
check "--files-mib 0: a usage error" test $rc -eq 2

echo "extents: $pass passed, $fail failed"
[ $fail -eq 0 ]
