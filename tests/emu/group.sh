#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A group from the command line (docs/design.md, "Scale-out"): gpuos boot
# --gpus LIST serves a runtime per entry on the same emulated SSD, runtime i
# at SOCKET.i; clients of each read at once; a stop through any of them
# stops all; gpuos bench --gpus reports each runtime and all together;
# bad lists and a controller with too few queues are refused. Host mode
# (--host): the GPU numbers name no GPU here.
# Usage: tests/emu/group.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
tmp=$(mktemp -d /tmp/gpuos-group-test.XXXXXX)
chmod 755 "$tmp"
svc=
trap '[ -n "$svc" ] && kill -9 $svc 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
says() { [ "$1" -eq "$2" ] && grep -q -- "$3" "$4"; }
export GPUOS_QUIET_HOST=1

command -v mke2fs > /dev/null || { echo "group: mke2fs is missing (make deps)"; exit 1; }
[ -x "$gpuos" ] || { echo "group: $gpuos is missing (make BUILD=$build all)"; exit 1; }

mkdir -p "$tmp/src/d"
head -c $((12 << 20)) /dev/urandom > "$tmp/src/big.bin"
echo one > "$tmp/src/d/one"
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/fs.img" 48M > /dev/null 2>&1 || { echo "group: mke2fs failed"; exit 1; }
want=$(md5sum < "$tmp/src/big.bin" | cut -d' ' -f1)
sock=$tmp/s.sock

start() { # start ARGS...: a group service on $sock
	rm -f "$tmp/svc.out"
	$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$sock" "$@" > "$tmp/svc.out" 2> "$tmp/svc.err" &
	svc=$!
	# until it says ready, or is gone: a hang guard of 2 minutes, not a bound
	# on a boot's speed (issue 35: a loaded machine took over 10 s)
	for i in $(seq 1200); do
		grep -q ready "$tmp/svc.out" 2>/dev/null && break
		kill -0 $svc 2>/dev/null || break
		sleep 0.1
	done
}
md5_of() { $gpuos cat --socket "$1" /big.bin 2>/dev/null | md5sum | cut -d' ' -f1; }

echo "== gpuos boot --gpus: a runtime per entry, one controller"
start --gpus 0,1,1 --warps 2
check "the ready line names every runtime's socket" \
	grep -qx "ready socket=$sock sockets=$sock,$sock.1,$sock.2" "$tmp/svc.out"
check "each runtime says where it serves" test "$(grep -c '^gpuos: runtime [0-9] at ' "$tmp/svc.err")" -eq 3
pids=
for s in "$sock" "$sock.1" "$sock.2"; do md5_of "$s" > "$s.md5" & pids="$pids $!"; done
wait $pids
all_ok=0
for s in "$sock" "$sock.1" "$sock.2"; do [ "$(cat "$s.md5" 2>/dev/null)" = "$want" ] || all_ok=1; done
check "clients of the three runtimes at once: every byte of a 12 MiB file" test $all_ok -eq 0
$gpuos ls --socket "$sock.2" /d > "$tmp/out" 2>&1; rc=$?
check "ls through runtime 2" says $rc 0 one "$tmp/out"
$gpuos stop --socket "$sock.1" 2>/dev/null; rc=$?
wait $svc; src=$?; svc=
check "a stop through runtime 1 stops the whole service (exit 0)" test $rc -eq 0 -a $src -eq 0
check "no socket is left" test ! -e "$sock" -a ! -e "$sock.1" -a ! -e "$sock.2"

echo "== a signal stops every runtime"
start --gpus 0,0
kill -TERM $svc; wait $svc; src=$?; svc=
check "SIGTERM: exit 0, stopped (signal)" says $src 0 "stopped (signal)" "$tmp/svc.err"

echo "== --root holds on every runtime"
start --gpus 0,0 --root /d
$gpuos cat --socket "$sock.1" /one > "$tmp/out" 2>&1; rc=$?
check "runtime 1 serves /one of --root /d" says $rc 0 one "$tmp/out"
$gpuos cat --socket "$sock.1" /../big.bin > "$tmp/out" 2>&1; rc=$?
check "runtime 1: /../big.bin is outside: no such file" says $rc 1 "no such file" "$tmp/out"
$gpuos stop --socket "$sock" 2>/dev/null; wait $svc; svc=

echo "== refusals"
for v in "" "0," ",0" "a" "0,x" "-1" "1024" "0,0,0,0,0,0,0,0,0"; do
	$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$sock" --gpus "$v" > /dev/null 2> "$tmp/err"; rc=$?
	check "--gpus '$v': usage error (exit 2)" says $rc 2 "gpus" "$tmp/err"
done
$gpuos boot --device "emu:$tmp/fs.img,queues=2" --host --socket "$sock" --gpus 0,0,0 > /dev/null 2> "$tmp/err"; rc=$?
check "3 runtimes on a controller granting 2 queues: refused, exit 1" \
	says $rc 1 "fewer than the 3 runtimes, which share no queue pair" "$tmp/err"
check "  and no socket is left" test ! -e "$sock" -a ! -e "$sock.1"
mkdir -p "$tmp/apps"; chmod 755 "$tmp/apps"
$gpuos boot --device "emu:$tmp/fs.img" --socket "$sock" --gpus 0,0 --apps "$tmp/apps" > /dev/null 2> "$tmp/err"; rc=$?
check "a GPU named twice with --apps: refused, exit 2 (an app of one runtime would wait on the other's park)" \
	says $rc 2 "names a GPU twice" "$tmp/err"
$gpuos boot --device gpu-null --host --socket "$sock" --gpus 0,0 > /dev/null 2> "$tmp/err"; rc=$?
check "gpu-null in a group: refused, exit 1" says $rc 1 "gpu-null" "$tmp/err"

echo "== gpuos bench --gpus"
$gpuos bench --device "emu:$tmp/fs.img,ssds=4" --host --gpus 0,0 --threads 4 --iters 300 --json > "$tmp/b.json" 2> "$tmp/err"; rc=$?
python3 - "$tmp/b.json" <<'PY' > "$tmp/out" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["runtimes"]
assert [r["index"] for r in rs] == [0, 1], rs
assert all(r["requests_per_s"] > 0 and r["errors"] == 0 and r["threads"] == 4 for r in rs), rs
assert d["threads"] == 8 and d["errors"] == 0 and d["requests_per_s"] > 0
assert sum(r["commands"] for r in rs) == d["commands"] == 8 * 300, d["commands"]
done = sum(c["counters"]["io_cmds"] for c in d["controllers"])
assert done == d["commands"], (done, d["commands"])
assert len(d["controllers"]) == 4
print("ok")
PY
check "2 runtimes x 4 SSDs: each runtime's figures, all together, and the controllers executed every command" \
	says $rc 0 '^ok$' "$tmp/out"
[ $rc -eq 0 ] || cat "$tmp/err" "$tmp/out"
here=$(cd "$(dirname "$0")/../.." && pwd)
check "its JSON: gpuos.bench/1 with runtimes[] as docs/json.md says" \
	python3 "$here/tests/tools/check_json.py" --doc "$here/docs/json.md" "$tmp/b.json"
$gpuos bench --device "emu:$tmp/fs.img" --host --gpus 0,0 --threads 2 --iters 50 > "$tmp/out" 2>&1; rc=$?
check "the text report: each runtime and all together" says $rc 0 "^  all together: " "$tmp/out"
$gpuos bench --device "emu:$tmp/fs.img" --host --gpus 0,0 --stages > /dev/null 2> "$tmp/err"; rc=$?
check "--stages with --gpus: usage error" says $rc 2 "stages" "$tmp/err"

echo
echo "group: $pass passed, $fail failed"
[ $fail -eq 0 ]
