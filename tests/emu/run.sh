#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of the `gpuos` command on the emulated controller (host
# mode: no GPU needed). Usage: tests/emu/run.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
tmp=$(mktemp -d /tmp/gpuos-emu-test.XXXXXX)
trap 'rm -rf "$tmp"; [ -n "${svc:-}" ] && kill $svc 2>/dev/null' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

img=$tmp/disk.img
head -c $((48 << 20)) /dev/urandom > "$img"
export GPUOS_QUIET_HOST=1

echo "== identify"
out=$($gpuos identify --json --device "emu:$img,mdts=128,queues=8,lba=4096" 2>/dev/null)
check "identify json (issue 2 done criterion)" python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
keys = {"schema","model","serial","firmware","version","mqes","dstrd","mdts_bytes","lba_bytes","namespace_lbas","namespace_bytes","nsid","io_queues"}
assert set(j) == keys, set(j) ^ keys
assert j["mdts_bytes"] == 131072 and j["lba_bytes"] == 4096 and j["io_queues"] == 8, j
assert j["namespace_lbas"] == (48 << 20) // 4096, j
PY
out=$($gpuos identify --json --device "emu:$img,dstrd=3,depth=64" 2>/dev/null)
check "identify reports dstrd and mqes" python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert j['dstrd']==3 and j['mqes']==63, j" "$out"
$gpuos identify --device "emu:$img" > "$tmp/id.txt" 2>&1
check "identify text" grep -q "MDTS:" "$tmp/id.txt"

$gpuos identify --device "bogus:thing" 2> "$tmp/err"; rc=$?
check "bad device string: exit 2 (it does not parse), one line" test $rc -eq 2 -a "$(wc -l < "$tmp/err")" -eq 1
$gpuos identify --device "emu:$tmp/missing.img" 2> "$tmp/err"; rc=$?
check "missing image: exit 1, one line" test $rc -eq 1 -a "$(wc -l < "$tmp/err")" -eq 1
check "missing image: says why" grep -q "No such file" "$tmp/err"
$gpuos identify --device "emu:$img,never_ready=1,to=2" 2> "$tmp/err"; rc=$?
check "controller never ready: exit 1 within CAP.TO" test $rc -eq 1
check "never ready: names the step" grep -q "enable" "$tmp/err"

echo "== read"
# Zero copy where a command covers whole LBAs and its destination is on a
# dword: 0 and 4096 from the start; 4 and 516 after a first bounced chunk,
# with PRP1 inside a page (the heap is page aligned); 1 and 511 bounce.
for spec in "0 4096" "1 1" "511 513" "123457 1000000" "$(( (48 << 20) - 77 )) 77" "4096 $((9 << 20))" \
	    "4 $((3 << 20))" "516 1000000" "2048 $((1 << 20))"; do
	set -- $spec
	$gpuos read --device "emu:$img" --host --allow-raw --offset $1 --length $2 -o "$tmp/out" 2>"$tmp/err"
	dd if="$img" of="$tmp/want" bs=1 skip=0 count=0 2>/dev/null
	python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d[$1:$1+$2])" "$img" "$tmp/want"
	check "read offset=$1 length=$2" cmp -s "$tmp/out" "$tmp/want"
done
$gpuos read --device "emu:$img,lba=4096,mdts=16,ooo=1" --allow-raw --offset 7 --length 300000 > "$tmp/out" 2>/dev/null
python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d[7:300007])" "$img" "$tmp/want"
check "read to stdout, lba=4096 mdts=16 ooo" cmp -s "$tmp/out" "$tmp/want"
$gpuos read --device "emu:$img" --offset 0 --length 10 > /dev/null 2> "$tmp/err"; rc=$?
check "read without --allow-raw refuses: exit 2, one line" test $rc -eq 2 -a "$(wc -l < "$tmp/err")" -eq 1
$gpuos read --device "emu:$img" --allow-raw --offset $((48 << 20)) --length 10 > /dev/null 2> "$tmp/err"; rc=$?
check "read past the end: exit 1" test $rc -eq 1
check "read past the end: says so" grep -q "past the end" "$tmp/err"
$gpuos read --device "emu:$img,faults=lba:100" --allow-raw --offset 51000 --length 1000 > /dev/null 2> "$tmp/err"; rc=$?
check "read of a failing LBA: exit 1" test $rc -eq 1
check "read of a failing LBA: decoded status" grep -q "Unrecovered Read Error" "$tmp/err"

echo "== service"
. "$(dirname "$0")/wait.sh"
svc_ready() { wait_ready "$tmp/svc.out" $svc; }
sock=$tmp/gpuos.sock
$gpuos boot --device "emu:$img" --host --allow-raw --warps 2 --queues 4 --socket "$sock" > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
svc_ready
check "service prints ready socket=PATH" grep -qx "ready socket=$sock" "$tmp/svc.out"
$gpuos read --socket "$sock" --allow-raw --offset 1000 --length 2000000 -o "$tmp/out" 2> "$tmp/err"
python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d[1000:2001000])" "$img" "$tmp/want"
check "read through a running service" cmp -s "$tmp/out" "$tmp/want"
# several clients at once
for k in 1 2 3 4; do
	$gpuos read --socket "$sock" --allow-raw --offset $((k * 100000)) --length 500000 -o "$tmp/out$k" 2>/dev/null &
done
wait_ok=1
for k in 1 2 3 4; do wait %$((k + 1)) 2>/dev/null; done
for k in 1 2 3 4; do
	python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d[$((k*100000)):$((k*100000+500000))])" "$img" "$tmp/want$k"
	cmp -s "$tmp/out$k" "$tmp/want$k" || wait_ok=0
done
check "four clients at once" test $wait_ok -eq 1
$gpuos stop --socket "$sock"; rc=$?
check "gpuos stop" test $rc -eq 0
wait $svc; rc=$?
svc=
check "service exits 0 after stop" test $rc -eq 0
check "socket removed" test ! -e "$sock"

$gpuos boot --device "emu:$img" --host --socket "$sock" > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
svc_ready
kill -TERM $svc
wait $svc; rc=$?
svc=
check "SIGTERM stops gracefully with 0" test $rc -eq 0
$gpuos stop --socket "$sock" 2> "$tmp/err"; rc=$?
check "stop without a service: exit 1" test $rc -eq 1

echo "== bench"
# Host mode, NOP and 4 KiB reads; --stages: the client's own stamps
# (posted, seen) and the runtime's t_done_ns, in order. The runtime's own
# stage stamps come only from a GPUOS_TRACE build (docs/benchmarks-log.md).
for op in nop read; do
	out=$($gpuos bench --device "emu:$img" --host --threads 2 --iters 400 --op $op --stages --json 2>/dev/null)
	check "bench --stages ($op): stages in order, no errors" python3 - "$out" "$op" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["errors"] == 0 and j["op"] == sys.argv[2], j
st = j["stages_us"]
assert list(st)[0] == "posted" and list(st)[-1] == "seen" and "done" in st, st
assert all(v >= 0 for v in st.values()), st
# Each stage is a part of its sample's round trip, so its median is at most
# the round trip's (order statistics keep a pointwise order). Their sum is
# not: medians of parts of a long-tailed (host-mode) distribution.
assert all(v <= j["lat_median_us"] + 0.01 for v in st.values()), (st, j["lat_median_us"])
PY
done
out=$($gpuos bench --device "emu:$img" --host --threads 1 --iters 100 --json 2>/dev/null)
check "bench without --stages: no stages" python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert 'stages_us' not in j and j['errors'] == 0, j" "$out"
check "bench: aligned 4 KiB reads are zero copy" python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert j['zero_copy'] == j['commands'] == 100, j" "$out"
out=$($gpuos bench --device "emu:$img" --host --no-zero-copy --threads 1 --iters 100 --json 2>/dev/null)
check "bench --no-zero-copy: every read bounces" python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert j['zero_copy'] == 0 and j['commands'] == 100 and j['errors'] == 0, j" "$out"

echo "== arrays (emu:IMG,ssds=N[,stripe=KiB])"
out=$($gpuos identify --json --device "emu:$img,ssds=3,stripe=12" 2>/dev/null)
check "identify an array: the striped namespace, each controller" python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
row = 3 * 12288
arr = ((48 << 20) + row - 1) // row * row
assert j["namespace_lbas"] * 512 == arr and j["stripe_bytes"] == 12288, j
c = j["controllers"]
assert [x["index"] for x in c] == [0, 1, 2], c
assert all(x["namespace_lbas"] * 512 == arr // 3 for x in c), c
assert [x["serial"][-2:] for x in c] == ["-0", "-1", "-2"] and j["serial"] == c[0]["serial"], c
assert all(x["io_queues"] == 16 and "counters" not in x for x in c), c
PY
$gpuos identify --device "emu:$img,ssds=2,gbps=3.5,latency_us=70" > "$tmp/id.txt" 2>&1
check "identify an array (text): each controller with its model" bash -c "grep -q '^array: *2 controllers striped in chunks of 512 KiB' $tmp/id.txt && [ \$(grep -c 'modeled gbps=3.5 iops=0 latency_us=70' $tmp/id.txt) = 2 ]"
for spec in "4095 2" "4096 4096" "8191 9000" "12345 3000000" "$(( (48 << 20) - 5000 )) 5000"; do
	set -- $spec
	$gpuos read --device "emu:$img,ssds=4,stripe=4" --allow-raw --offset $1 --length $2 -o "$tmp/out" 2>"$tmp/err"
	python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(d[$1:$1+$2])" "$img" "$tmp/want"
	check "read ssds=4,stripe=4 offset=$1 length=$2" cmp -s "$tmp/out" "$tmp/want"
done
out=$($gpuos bench --device "emu:$img,ssds=4,stripe=4" --host --threads 2 --iters 200 --bytes 20000 --json 2>/dev/null)
check "bench an array: every controller served, together every command" python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
c = j["controllers"]
assert j["errors"] == 0 and len(c) == 4, j
n = [x["counters"]["io_cmds"] for x in c]
assert min(n) > 0 and sum(n) == j["commands"], (n, j["commands"])
assert all(x["counters"]["source"] == "controller" and x["counters"]["errors"] == 0 for x in c), c
PY
$gpuos bench --device "emu:$img,ssds=2" --host --threads 1 --iters 50 > "$tmp/bench.txt" 2>&1
check "bench an array (text): each controller with its counters" bash -c "grep -q '^  controller 1: emu member 1 of 2' $tmp/bench.txt && [ \$(grep -c '^    [0-9]* I/O commands, ' $tmp/bench.txt) = 2 ]"
$gpuos identify --device "pci:0000:00:04.0+emu:$img" 2> "$tmp/err"; rc=$?
check "a device list of mixed kinds: exit 2 (it does not parse), one line, says so" bash -c "[ $rc -eq 2 ] && [ \$(wc -l < $tmp/err) -eq 1 ] && grep -q 'mixes pci: and emu: controllers' $tmp/err"
# issue 13: the binary with CUDA knows pci: too (it once lost it to a weak reference)
$gpuos identify --device "pci:0000:ff:1f.7" 2> "$tmp/err"; rc=$?
check "build/gpuos has pci: (no such PCI device, not unknown kind)" bash -c "[ $rc -eq 1 ] && grep -q 'no such PCI device' $tmp/err"
$gpuos identify --device "emu:$img+emu:$img" 2> "$tmp/err"; rc=$?
check "emu:A+emu:B: exit 2, points to ssds=N" bash -c "[ $rc -eq 2 ] && grep -q 'emu:IMAGE,ssds=N' $tmp/err"
$gpuos identify --device "emu:$img,ssds=17" 2> "$tmp/err"; rc=$?
check "ssds=17: exit 2" test $rc -eq 2
$gpuos identify --device "emu:$img,ssds=2,stripe=6" 2> "$tmp/err"; rc=$?
check "stripe=6: exit 2, says why" bash -c "[ $rc -eq 2 ] && grep -q 'multiple of 4' $tmp/err"

echo "== shared memory: no command needs /dev/shm, a service's segment included (passed to clients as a descriptor)"
if unshare -m true 2>/dev/null; then
	unshare -m sh -c "mount -t tmpfs -o size=1M none /dev/shm && $gpuos read --device emu:$img --allow-raw --offset 100 \
		--length 3000000 -o $tmp/small-shm.out && [ -z \"\$(ls /dev/shm)\" ]" 2> "$tmp/err"; rc=$?
	check "gpuos read with a 1 MiB /dev/shm: works, leaves no segment" bash -c \
		"[ $rc -eq 0 ] && python3 -c \"import sys; d=open('$img','rb').read(); sys.exit(0 if open('$tmp/small-shm.out','rb').read() == d[100:3000100] else 1)\""
	unshare -m sh -c "mount -t tmpfs -o size=1M none /dev/shm && ($gpuos boot --device emu:$img --allow-raw --socket $tmp/small.sock \
		--heap-mib 16 > $tmp/small.out &) && for i in \$(seq 1200); do grep -q ready $tmp/small.out && break; sleep 0.1; done && \
		$gpuos read --socket $tmp/small.sock --allow-raw --offset 100 --length 3000000 -o $tmp/small-svc.out && \
		[ -z \"\$(ls /dev/shm)\" ] && $gpuos stop --socket $tmp/small.sock" 2> "$tmp/err"; rc=$?
	check "a service with a 1 MiB /dev/shm: serves, leaves no segment" bash -c \
		"[ $rc -eq 0 ] && cmp -s $tmp/small-shm.out $tmp/small-svc.out"
else
	echo "  skip shared memory: this machine gives no mount namespace (unshare -m)"
fi

echo "== the command line (issue 14): sizes, --opt=value, --version"
$gpuos read --device "emu:$img" --allow-raw --offset=4K --length 1M -o "$tmp/sz.out" 2> "$tmp/err"; rc=$?
check "read --offset=4K --length 1M: 1 MiB from byte 4096" bash -c \
	"[ $rc -eq 0 ] && python3 -c \"import sys; d=open('$img','rb').read(); sys.exit(0 if open('$tmp/sz.out','rb').read() == d[4096:4096+(1<<20)] else 1)\""
$gpuos read --device "emu:$img" --allow-raw --offset 0x1000 --length 2KiB -o "$tmp/sz.out" 2> "$tmp/err"; rc=$?
check "read --offset 0x1000 --length 2KiB" bash -c "[ $rc -eq 0 ] && [ \$(stat -c %s $tmp/sz.out) -eq 2048 ]"
out=$($gpuos bench --device "emu:$img" --bytes 128k --threads 2 --iters 3 --json 2>/dev/null)
check "bench --bytes 128k reads 131072 bytes (it read 128 before)" python3 -c \
	"import json,sys; j=json.loads(sys.argv[1]); assert j['bytes'] == 131072 and j['errors'] == 0, j" "$out"
out=$($gpuos bench --device="emu:$img" --bytes=8K --threads=2 --iters=2 --op=read --json 2>/dev/null)
check "bench --opt=value for its own options and the common ones" python3 -c \
	"import json,sys; j=json.loads(sys.argv[1]); assert j['bytes'] == 8192 and j['threads'] == 2 and j['iters'] == 2, j" "$out"
for bad in "--bytes 128q" "--bytes 12.5K" "--bytes -4" "--bytes 17M" "--threads 3x" "--iters ''"; do
	eval "$gpuos bench --device emu:$img $bad" > /dev/null 2> "$tmp/err"; rc=$?
	check "bench $bad: refused (a usage error: exit 2, one line)" test $rc -eq 2 -a "$(wc -l < "$tmp/err")" -eq 1
done
$gpuos read --device "emu:$img" --allow-raw --offset 1Z --length 1 -o /dev/null 2> "$tmp/err"; rc=$?
check "read --offset 1Z: refused, says what a size is" bash -c "[ $rc -eq 2 ] && grep -q 'is not a size' $tmp/err"
$gpuos identify --device "emu:$img" --json=yes > /dev/null 2> "$tmp/err"; rc=$?
check "a flag given a value (--json=yes): refused" bash -c "[ $rc -eq 2 ] && grep -q 'takes no value' $tmp/err"
for c in identify read boot stop parts ls stat cat gguf image run bench; do
	out=$($gpuos $c --help 2>&1); rc=$?
	check "gpuos $c --help: exit 0, its usage" bash -c "[ $rc -eq 0 ] && echo \"\$1\" | head -n 1 | grep -q '^usage: gpuos $c '" _ "$out"
done
$gpuos --help > "$tmp/help.txt"; rc=$?
check "gpuos --help: exit 0, every command" bash -c \
	"[ $rc -eq 0 ] && for c in identify read boot stop parts ls stat cat gguf image run bench; do grep -q \"^  \$c \" $tmp/help.txt || exit 1; done"
out=$($gpuos --version)
check "--version names the ABI and the GPU architectures" bash -c "echo '$out' | grep -Eq '^gpuos [0-9.]+ \(ABI [0-9]+; GPU architectures built in: (sm_[0-9]+ ?)+\)$'"

echo "== the --json outputs against docs/json.md"
mkdir -p "$tmp/jsrc/dir"
echo hello > "$tmp/jsrc/a.txt"
head -c 300000 /dev/urandom > "$tmp/jsrc/dir/big"
ln -s a.txt "$tmp/jsrc/link"
python3 tests/tools/gguf_writer.py --case demo "$tmp/jsrc/m.gguf" --seed 3 --layers 2 --layer-mib 1 > /dev/null
mke2fs -q -t ext4 -d "$tmp/jsrc" "$tmp/fs.img" 64M
for args in "identify --json --device emu:$img" "identify --json --device emu:$img,ssds=2" \
	    "bench --json --stages --threads 2 --iters 20 --device emu:$img,ssds=2" \
	    "parts --json --device emu:$tmp/fs.img" \
	    "ls --json --device emu:$tmp/fs.img /" "ls --json --device emu:$tmp/fs.img /dir" \
	    "stat --json --device emu:$tmp/fs.img /dir/big" "stat --json --device emu:$tmp/fs.img /link" \
	    "gguf --json --device emu:$tmp/fs.img /m.gguf"; do
	$gpuos $args > "$tmp/j.json" 2> "$tmp/err"; rc=$?
	check "${args%% --device*}: schema $(grep -o '"gpuos\.[a-z]*/[0-9]*"' "$tmp/j.json" | head -1) as docs/json.md says" \
		bash -c "[ $rc -eq 0 ] && python3 tests/tools/check_json.py $tmp/j.json > /dev/null"
done
# --stats (issue 31): the runtime's counters on stderr, text and a JSON line (gpuos.stats/1)
for args in "read --allow-raw --offset 7 --length 300000 -o /dev/null --device emu:$img,ssds=2" \
	    "cat -o /dev/null --device emu:$tmp/fs.img /dir/big"; do
	$gpuos $args --stats > /dev/null 2> "$tmp/err"; rc=$?
	grep '^{"schema": "gpuos.stats/1"' "$tmp/err" > "$tmp/s.json"
	check "${args%% *} --stats: gpuos.stats/1 on stderr as docs/json.md says, and the text line" \
		bash -c "[ $rc -eq 0 ] && python3 tests/tools/check_json.py $tmp/s.json > /dev/null && \
			grep -q '^gpuos ${args%% *}: counters: retries 0, aborts 0, resets 0, strays 0, duplicates 0, untrusted 0, timeouts 0\$' $tmp/err"
done
$gpuos read --allow-raw --offset 0 --length 1000000 --device "emu:$img" > /dev/null 2> "$tmp/err"
check "read without --stats, all counters 0: nothing on stderr" test ! -s "$tmp/err"
$gpuos read --allow-raw --offset 0 --length 4000000 --xfer-kib 4 --device "emu:$img,faults=dup:0.05,seed=7" > /dev/null 2> "$tmp/err"
check "read with completions twice (faults=dup): the counters on stderr without --stats" \
	grep -Eq '^gpuos read: counters: .*(strays [1-9]|duplicates [1-9])' "$tmp/err"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['extra']=1; json.dump(d, open(sys.argv[1], 'w'))" "$tmp/j.json"
check "check_json.py refuses a field docs/json.md does not list" bash -c "! python3 tests/tools/check_json.py $tmp/j.json > /dev/null"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); del d['extra'], d['tensors']; json.dump(d, open(sys.argv[1], 'w'))" "$tmp/j.json"
check "check_json.py refuses a missing field" bash -c "! python3 tests/tools/check_json.py $tmp/j.json > /dev/null"
out=$($gpuos ls --device "emu:$tmp/fs.img" /dir)
check "ls: sizes in human units" bash -c "echo '$out' | grep -Eq '293[.]0 KiB +big$'"

echo "== exit status: 0 done, 1 the operation failed, 2 the command line"
$gpuos cat --device "emu:$tmp/fs.img" /nope > /dev/null 2>&1; rc=$?
check "cat of a missing file: exit 1" test $rc -eq 1
$gpuos cat --device "emu:$tmp/fs.img" > /dev/null 2>&1; rc=$?
check "cat without a path: exit 2" test $rc -eq 2
$gpuos ls --grid 3 --device "emu:$tmp/fs.img" / > /dev/null 2> "$tmp/err"; rc=$?
check "an option of another command (ls --grid): exit 2, says so" bash -c "[ $rc -eq 2 ] && grep -q 'not an option of ls' $tmp/err"
$gpuos frobnicate > /dev/null 2>&1; rc=$?
check "an unknown command: exit 2" test $rc -eq 2
$gpuos stat --nope --device "emu:$tmp/fs.img" / > /dev/null 2>&1; rc=$?
check "an unknown option: exit 2" test $rc -eq 2
$gpuos --help | grep -q "^exit status: 0 done; 1 the operation failed"
check "--help documents the exit status" test $? -eq 0

# Without a usable GPU the notice says so plainly, and --require-gpu fails
# instead of running on CPU threads (on a GPU machine both are moot).
env -u GPUOS_QUIET_HOST $gpuos read --device "emu:$img" --allow-raw --offset 0 --length 1 -o /dev/null 2> "$tmp/err"; rc=$?
if grep -q "running on CPU threads" "$tmp/err"; then
	check "no GPU: the notice says why in plain words" bash -c \
		"[ $rc -eq 0 ] && grep -Eq '^gpuos: host mode: (no NVIDIA GPU driver found|no NVIDIA GPU found|the NVIDIA driver is too old)' $tmp/err"
	$gpuos read --device "emu:$img" --allow-raw --offset 0 --length 1 -o /dev/null --require-gpu 2> "$tmp/err"; rc=$?
	check "no GPU: --require-gpu fails (exit 1, one line, says why)" bash -c \
		"[ $rc -eq 1 ] && [ \$(wc -l < $tmp/err) -eq 1 ] && grep -q 'require-gpu' $tmp/err"
else
	echo "  skip --require-gpu refusal: this machine has a usable GPU"
fi
$gpuos read --device "emu:$img" --allow-raw --offset 0 --length 1 -o /dev/null --host --require-gpu 2> "$tmp/err"; rc=$?
check "--host with --require-gpu: refused" bash -c "[ $rc -eq 2 ] && grep -q 'opposite' $tmp/err"

echo "emu e2e: $pass passed, $fail failed"
[ $fail -eq 0 ]
