#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The service as the way gpuos runs on a machine (docs/service.md): the
# default socket that `gpuos boot` and every client command find without
# options, the MPS line, `gpuos status` (text and gpuos.status/1) with the
# clients attached, what a user who is neither root nor the service's may
# see of others' clients, and `gpuos boot --config FILE`. Host mode on the
# emulated controller; nothing here touches /run: the default socket comes
# from $GPUOS_SOCKET (root) and $XDG_RUNTIME_DIR (uid 65534).
# Usage: tests/emu/status.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$(cd "$(dirname "$build/gpuos")" && pwd)/gpuos
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gpuos-status-test.XXXXXX)
chmod 755 "$tmp"
svc= pids=
cleanup() {
	local p
	for p in $svc $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1
unset GPUOS_SOCKET XDG_RUNTIME_DIR CUDA_MPS_PIPE_DIRECTORY
held="python3 $here/../tools/held_client.py"
json_ok() { python3 "$here/../tools/check_json.py" --doc "$here/../../docs/json.md" "$1" > "$tmp/check.out" 2>&1; }
# q FILE EXPR: a Python expression over the JSON in FILE (as j), printed
q() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }

for t in mke2fs python3 setpriv timeout; do
	command -v $t > /dev/null || { echo "status: $t is missing (make deps)"; exit 1; }
done
[ -x "$gpuos" ] || { echo "status: $gpuos is missing (make BUILD=$build all)"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "status: FAIL, run as root (the checks of other users' clients need setpriv)"; exit 1; }

mkdir -p "$tmp/src/d"
head -c $((2 << 20)) /dev/urandom > "$tmp/src/big.bin"
echo one > "$tmp/src/d/one"
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/fs.img" 16M > /dev/null 2>&1 || { echo "status: mke2fs failed"; exit 1; }

# The waits end on what they wait for; their limits (hang, the loops'
# counts) are hang guards, not bounds on speed (issue 35): a boot, a
# client's start or a published counter take seconds on a loaded machine.
hang=300
# wait_for FILE PATTERN: until a line of FILE matches (2 minutes at most)
wait_for() { local i; for i in $(seq 1200); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# status_json FILE [ARGS...]: gpuos status --json into FILE; its exit status
status_json() { local f=$1; shift; timeout $hang "$gpuos" status --json "$@" > "$f" 2> "$f.err"; }

echo "== gpuos boot without --socket: \$GPUOS_SOCKET"
export GPUOS_SOCKET=$tmp/env.sock
"$gpuos" boot --device "emu:$tmp/fs.img" --host --group nogroup --gpu-clients 1 --gpu-client-mib 4 \
	> "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
wait_for "$tmp/svc.out" ready
check "the ready line names \$GPUOS_SOCKET's path" grep -qx "ready socket=$tmp/env.sock" "$tmp/svc.out"
check "and the service listens there" test -S "$tmp/env.sock"
check "the MPS line: gpuos: MPS: none (host mode)" grep -qx "gpuos: MPS: none (host mode)" "$tmp/svc.err"
timeout $hang "$gpuos" cat /d/one > "$tmp/out" 2> "$tmp/err"; rc=$?
check "gpuos cat with neither --socket nor --device reads through it" test $rc -eq 0 -a "$(cat "$tmp/out")" = one
timeout $hang "$gpuos" status > "$tmp/st.txt" 2> "$tmp/err"; rc=$?
check "gpuos status with no option: exit 0" test $rc -eq 0
check "text: runtime, device, MPS, clients, requests lines" bash -c "grep -q '^runtime  *host (CPU threads), running$' '$tmp/st.txt' &&
	grep -qx 'device  *emu:$tmp/fs.img' '$tmp/st.txt' && grep -qx 'MPS  *none (host mode)' '$tmp/st.txt' &&
	grep -q '^clients  *0 attached' '$tmp/st.txt' && grep -q '^requests  *[0-9]* answered' '$tmp/st.txt'"
sed 's/^/       /' "$tmp/st.txt"

echo "== clients attached: a cat held mid-read, a held client, a GPU client, and one of uid 65534"
mkfifo "$tmp/catfifo"
exec 7<> "$tmp/catfifo" # read by no one: the cat fills the pipe and waits, attached
"$gpuos" cat /big.bin > "$tmp/catfifo" 2> "$tmp/cat.err" &
catpid=$!; pids="$pids $catpid"
for c in a g n; do mkdir "$tmp/$c"; mkfifo "$tmp/$c/cmd"; done
chown -R 65534:65534 "$tmp/n"
$held "$tmp/env.sock" "$tmp/a" /big.bin > "$tmp/a/log" 2>&1 &
apid=$!; pids="$pids $apid"
$held "$tmp/env.sock" "$tmp/g" /big.bin gpu > "$tmp/g/log" 2>&1 &
gpid=$!; pids="$pids $gpid"
$held "$tmp/env.sock" "$tmp/n" /big.bin 65534 > "$tmp/n/log" 2>&1 &
npid=$!; pids="$pids $npid"
for c in a g n; do wait_for "$tmp/$c/state" "^attached"; done
check "the three held clients attached (the uid 65534 one through --group nogroup)" \
	bash -c "grep -q '^attached' '$tmp/a/state' && grep -q '^attached' '$tmp/g/state' && grep -q '^attached' '$tmp/n/state'"
# client K: the item of pid K as "kind uid", or nothing
client() { q "$1" "' '.join('%s %s' % (c['kind'], c['uid']) for c in j['clients'] if c['pid'] == $2)"; }
# the cat attaches on its own time: wait (a hang guard) until status lists it
for i in $(seq 600); do
	status_json "$tmp/s1.json"; rc=$?
	[ -n "$(client "$tmp/s1.json" $catpid)" ] && break
	sleep 0.1
done
check "gpuos status --json: exit 0" test $rc -eq 0
check "gpuos status --json: gpuos.status/1 as docs/json.md's table says" json_ok "$tmp/s1.json"
sed 's/^/       /' "$tmp/check.out" | head -5
check "it lists the cat (pid $catpid): host, uid 0" test "$(client "$tmp/s1.json" $catpid)" = "host 0"
check "the held client (pid $apid): host, uid 0" test "$(client "$tmp/s1.json" $apid)" = "host 0"
check "the GPU client (pid $gpid): gpu, uid 0" test "$(client "$tmp/s1.json" $gpid)" = "gpu 0"
check "uid 65534's client (pid $npid): host, uid 65534" test "$(client "$tmp/s1.json" $npid)" = "host 65534"
check "four clients, no other" test "$(q "$tmp/s1.json" "len(j['clients'])")" = 4
check "the service: pid, uid 0, runtime host, gpu null, device, socket" test \
	"$(q "$tmp/s1.json" "(j['pid'], j['uid'], j['runtime'], j['gpu'], j['device'], j['socket'])")" = \
	"($svc, 0, 'host', None, 'emu:$tmp/fs.img', '$tmp/env.sock')"
check "mps: state host, its line" test "$(q "$tmp/s1.json" "(j['mps']['state'], j['mps']['text'])")" = \
	"('host', 'none (host mode)')"
check "root sees all: viewer uid 0, sees_all true" test "$(q "$tmp/s1.json" "(j['viewer']['uid'], j['viewer']['sees_all'])")" = "(0, True)"
check "shares: 8 host, 1 GPU area" test "$(q "$tmp/s1.json" "(j['shares']['host'], j['shares']['gpu'])")" = "(8, 1)"
"$gpuos" status > "$tmp/st.txt" 2>&1
check "text: a line for each client, under SHARE KIND PID UID CONNECTED POSTED" bash -c \
	"grep -qE '^  SHARE +KIND +PID +UID +CONNECTED +POSTED$' '$tmp/st.txt' &&
	grep -qE '^  [0-9]+ +host +$npid +65534 ' '$tmp/st.txt' && grep -qE '^  [0-9]+ +gpu +$gpid +0 ' '$tmp/st.txt' &&
	grep -q '^clients  *4 attached (3 of 8 host shares, 1 of 1 GPU areas)' '$tmp/st.txt'"
sed 's/^/       /' "$tmp/st.txt"

echo "== counts grow after reads"
posted() { q "$1" "[c['posted'] for c in j['clients'] if c['pid'] == $2][0]"; }
p0=$(posted "$tmp/s1.json" $apid)
check "the held client posted its OPEN: 1" test "$p0" = 1
r0=$(q "$tmp/s1.json" "j['totals']['requests']"); b0=$(q "$tmp/s1.json" "j['totals']['bytes']")
echo "read 50" > "$tmp/a/cmd"
wait_for "$tmp/a/state" "^done 50"
check "it read 50 x 4 KiB: all OK" grep -qx "done 50 OK" "$tmp/a/state"
status_json "$tmp/s2.json"
check "its posted count: 51 (the OPEN and 50 READs)" test "$(posted "$tmp/s2.json" $apid)" = 51
check "the others' counts did not move (uid 65534's: 1)" test "$(posted "$tmp/s2.json" $npid)" = 1
echo "read 7" > "$tmp/n/cmd"
wait_for "$tmp/n/state" "^done 7"
status_json "$tmp/s3.json"
check "uid 65534's client read 7: its count 8, the held client's still 51" \
	test "$(posted "$tmp/s3.json" $npid) $(posted "$tmp/s3.json" $apid)" = "8 51"
# The runtime publishes its counters now and then: wait for them (a hang guard).
for i in $(seq 600); do
	status_json "$tmp/s4.json"
	r1=$(q "$tmp/s4.json" "j['totals']['requests']"); b1=$(q "$tmp/s4.json" "j['totals']['bytes']")
	[ "${r1:-0}" -ge $((r0 + 57)) ] && [ "${b1:-0}" -ge $((b0 + 57 * 4096)) ] && break
	sleep 0.2
done
check "totals: requests grew by at least 57 ($r0 -> $r1), bytes by at least 57 x 4 KiB ($b0 -> $b1)" \
	test "${r1:-0}" -ge $((r0 + 57)) -a "${b1:-0}" -ge $((b0 + 57 * 4096))
check "totals: no errors" test "$(q "$tmp/s4.json" "j['totals']['errors']")" = 0

echo "== what uid 65534 sees (neither root nor the service's uid)"
nobody "$gpuos" status --json > "$tmp/n.json" 2> "$tmp/n.err"; rc=$?
check "it may ask (it may attach): exit 0" test $rc -eq 0
check "and it gets gpuos.status/1 as the table says" json_ok "$tmp/n.json"
check "viewer uid 65534, sees_all false" test "$(q "$tmp/n.json" "(j['viewer']['uid'], j['viewer']['sees_all'])")" = "(65534, False)"
check "its own client: pid and uid" test "$(client "$tmp/n.json" $npid)" = "host 65534"
check "the other three: kind and counts, pid and uid null" test \
	"$(q "$tmp/n.json" "sorted((c['kind'], c['pid'], c['uid'], c['posted'] is not None) for c in j['clients'] if c['pid'] != $npid)")" = \
	"[('gpu', None, None, True), ('host', None, None, True), ('host', None, None, True)]"
check "no pid of root's clients anywhere in what it is told" \
	bash -c "! grep -qE '\"pid\": ($catpid|$apid|$gpid)[,}]' '$tmp/n.json'"
nobody "$gpuos" status > "$tmp/n.txt" 2>&1
check "text: ? for the others' pid and uid, and says why" bash -c \
	"grep -qE '^  [0-9]+ +host +\\? +\\? ' '$tmp/n.txt' && grep -q 'another user' '$tmp/n.txt'"
setpriv --reuid 4242 --regid 4242 --clear-groups "$gpuos" status > /dev/null 2> "$tmp/err"; rc=$?
check "uid 4242 (not in the group) may not ask: exit 1, says so" \
	bash -c "[ $rc -eq 1 ] && grep -Eq 'may not use this service|Permission denied' '$tmp/err'"

echo "read 1" > "$tmp/a/cmd"; wait_for "$tmp/a/state" "^done 1 "
for c in a g n; do echo quit > "$tmp/$c/cmd"; done
kill $catpid 2>/dev/null; exec 7>&-
wait $apid $gpid $npid $catpid 2>/dev/null
for i in $(seq 600); do
	status_json "$tmp/s5.json"
	[ "$(q "$tmp/s5.json" "len(j['clients'])")" = 0 ] && break
	sleep 0.1
done
check "once they left: no client listed" test "$(q "$tmp/s5.json" "len(j['clients'])")" = 0
timeout $hang "$gpuos" stop > /dev/null 2> "$tmp/err"; rc=$?
kill $svc 2>/dev/null; wait $svc 2>/dev/null; svc=
check "gpuos stop with no option stops it" test $rc -eq 0 -a ! -e "$tmp/env.sock"

echo "== no service"
timeout $hang "$gpuos" cat /d/one > /dev/null 2> "$tmp/err"; rc=$?
check "cat: exit 1, one line naming the socket it tried, and what to give" bash -c \
	"[ $rc -eq 1 ] && [ \$(wc -l < '$tmp/err') -eq 1 ] && grep -q 'no gpuos service at $tmp/env.sock' '$tmp/err' &&
	grep -q 'give --socket PATH, or --device DEV' '$tmp/err'"
timeout $hang "$gpuos" status > /dev/null 2> "$tmp/err"; rc=$?
check "status: exit 1, names the socket" bash -c "[ $rc -eq 1 ] && grep -q 'no gpuos service at $tmp/env.sock' '$tmp/err'"
timeout $hang "$gpuos" stop > /dev/null 2> "$tmp/err"; rc=$?
check "stop: exit 1, names the socket" bash -c "[ $rc -eq 1 ] && grep -q 'no gpuos service at $tmp/env.sock' '$tmp/err'"
unset GPUOS_SOCKET

echo "== a user's own service: \$XDG_RUNTIME_DIR/gpuos.sock (uid 65534)"
x=$tmp/xdg
mkdir "$x" && cp "$tmp/fs.img" "$x/" && chown -R 65534:65534 "$x" && chmod 700 "$x"
nx() { nobody env XDG_RUNTIME_DIR="$x" GPUOS_QUIET_HOST=1 "$@"; }
nx "$gpuos" boot --device "emu:$x/fs.img" --host > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
wait_for "$tmp/svc.out" ready
check "boot as uid 65534 without --socket: ready socket=\$XDG_RUNTIME_DIR/gpuos.sock" grep -qx "ready socket=$x/gpuos.sock" "$tmp/svc.out"
out=$(nx timeout $hang "$gpuos" cat /d/one 2> "$tmp/err")
check "cat as uid 65534 with no option finds it" test "$out" = one
nx timeout $hang "$gpuos" status --json > "$tmp/x.json" 2> "$tmp/err"
check "status as uid 65534 with no option: its socket, uid 65534" \
	test "$(q "$tmp/x.json" "(j['socket'], j['uid'])")" = "('$x/gpuos.sock', 65534)"
nx timeout $hang "$gpuos" stop > /dev/null 2>&1; rc=$?
kill $svc 2>/dev/null; wait $svc 2>/dev/null; svc=
check "stop as uid 65534 with no option" test $rc -eq 0

echo "== gpuos boot --config FILE"
conf=$tmp/gpuos.conf
cat > "$conf" <<EOF
# a comment
device = emu:$tmp/fs.img
socket   =   $tmp/conf.sock
host = yes
no-files = no
client-timeout-ms = 5000
EOF
chmod 644 "$conf"
"$gpuos" boot --config "$conf" > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
wait_for "$tmp/svc.out" ready
check "boot --config: serves at the file's socket, on the file's device" \
	bash -c "grep -qx 'ready socket=$tmp/conf.sock' '$tmp/svc.out' &&
	[ \"\$(timeout $hang '$gpuos' cat --socket '$tmp/conf.sock' /d/one 2>/dev/null)\" = one ]"
timeout $hang "$gpuos" stop --socket "$tmp/conf.sock" > /dev/null 2>&1
kill $svc 2>/dev/null; wait $svc 2>/dev/null; svc=
"$gpuos" boot --config "$conf" --socket "$tmp/cli.sock" > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
wait_for "$tmp/svc.out" ready
check "the command line wins: --socket over the file's" grep -qx "ready socket=$tmp/cli.sock" "$tmp/svc.out"
timeout $hang "$gpuos" stop --socket "$tmp/cli.sock" > /dev/null 2>&1
kill $svc 2>/dev/null; wait $svc 2>/dev/null; svc=
echo "frobnicate = 3" >> "$conf"
timeout $hang "$gpuos" boot --config "$conf" > /dev/null 2> "$tmp/err"; rc=$?
check "an unknown option in the file: exit 2, names it and its line" \
	bash -c "[ $rc -eq 2 ] && grep -q 'line 7: .frobnicate' '$tmp/err'"
sed -i '$d' "$conf"
chmod 666 "$conf"
timeout $hang "$gpuos" boot --config "$conf" > /dev/null 2> "$tmp/err"; rc=$?
check "a file others can write: refused (exit 2)" bash -c "[ $rc -eq 2 ] && grep -q 'no one else can write' '$tmp/err'"
check "and nothing listened meanwhile" test ! -e "$tmp/conf.sock"
chmod 644 "$conf"
sed -i '/^device/d' "$conf"
timeout $hang "$gpuos" boot --config "$conf" > /dev/null 2> "$tmp/err"; rc=$?
check "no device in the file nor on the line: exit 2, says where to give it" \
	bash -c "[ $rc -eq 2 ] && grep -q 'device = DEV in the --config file' '$tmp/err'"
timeout $hang "$gpuos" boot --config "$tmp/nope.conf" > /dev/null 2> "$tmp/err"; rc=$?
check "a missing file: exit 2" bash -c "[ $rc -eq 2 ] && grep -q 'nope.conf' '$tmp/err'"

echo "status: $pass passed, $fail failed"
[ $fail -eq 0 ]
