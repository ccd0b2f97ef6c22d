#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The service against hostile local clients (docs/security.md): each
# attack is refused or survived, and a well-behaved client keeps being
# served. Host mode on the emulated controller.
# Usage: tests/emu/service.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gpuos-service-test.XXXXXX)
chmod 755 "$tmp"
svc=
trap '[ -n "$svc" ] && kill -9 $svc 2>/dev/null; [ -n "${twin_svc:-}" ] && kill -9 $twin_svc 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skipped() { skip=$((skip + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# says RC WANT PATTERN FILE: the exit status was WANT and FILE has a line
# matching PATTERN (says_line: a line that is PATTERN)
says() { [ "$1" -eq "$2" ] && grep -q -- "$3" "$4"; }
says_line() { [ "$1" -eq "$2" ] && grep -qx -- "$3" "$4"; }
export GPUOS_QUIET_HOST=1
client="python3 $here/../tools/hostile_client.py"

for t in mke2fs debugfs dumpe2fs python3 timeout; do
	command -v $t > /dev/null || { echo "service: $t is missing (make deps)"; exit 1; }
done
[ -x "$gpuos" ] || { echo "service: $gpuos is missing (make BUILD=$build all)"; exit 1; }

mkdir -p "$tmp/src/d"
head -c $((8 << 20)) /dev/urandom > "$tmp/src/big.bin"
echo one > "$tmp/src/d/one"
# for the permission checks: root's files, one only root may read, one in a
# folder only root may search
echo private > "$tmp/src/private.txt"; chmod 600 "$tmp/src/private.txt"
mkdir "$tmp/src/locked"; echo inner > "$tmp/src/locked/inner.txt"; chmod 700 "$tmp/src/locked"
# a model only root may read, for the raw GGUF open (gguf @OFFSET)
python3 - "$tmp/src/model.gguf" <<'PY'
import struct, sys
def s(b): return struct.pack("<Q", len(b)) + b
h = b"GGUF" + struct.pack("<IQQ", 3, 1, 1)
h += s(b"general.name") + struct.pack("<I", 8) + s(b"secret-model")
h += s(b"secret.tensor") + struct.pack("<IQIQ", 1, 4, 0, 0)
h += bytes(-len(h) % 32) + struct.pack("<4f", 1, 2, 3, 4)
open(sys.argv[1], "wb").write(h)
PY
chmod 600 "$tmp/src/model.gguf"
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/fs.img" 32M > /dev/null 2>&1 || { echo "service: mke2fs failed"; exit 1; }
# where the model's bytes lie on the device
goff=$(( $(debugfs -R "bmap /model.gguf 0" "$tmp/fs.img" 2>/dev/null) * \
	 $(dumpe2fs -h "$tmp/fs.img" 2>/dev/null | awk -F: '/^Block size/ {print $2 + 0}') ))
want=$(md5sum < "$tmp/src/big.bin" | cut -d' ' -f1)
sock=$tmp/s.sock

# The waits below end on what they wait for; their limits are hang guards
# (issue 35), never bounds on speed: a boot, an interpreter's start or a
# stop on the loaded 2-core machine of make test takes many seconds.
hang=300
. "$(dirname "$0")/wait.sh" # wait_ready FILE PID
# wait_sock PATH: until a socket is at PATH (a Python fake service's)
wait_sock() { local i; for i in $(seq 1200); do [ -S "$1" ] && return; sleep 0.1; done; }
# attached N: until the service on $sock lists N clients
attached() {
	local i
	for i in $(seq 600); do
		timeout $hang $gpuos status --socket "$sock" 2>/dev/null | grep -q "^clients  *$1 attached" && return
		sleep 0.2
	done
}
start() { # start ARGS...: a service on $sock
	rm -f "$tmp/svc.out"
	$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$sock" "$@" > "$tmp/svc.out" 2> "$tmp/svc.err" &
	svc=$!
	wait_ready "$tmp/svc.out" $svc
}
stop() {
	timeout $hang $gpuos stop --socket "$sock" 2>/dev/null
	wait $svc 2>/dev/null
	svc=
}
# stopped_in_time: gpuos stop answers, and the service ends (a hang guard
# of 5 minutes: a service that ignores stop runs on)
stopped_in_time() {
	local i rc
	timeout $hang $gpuos stop --socket "$sock" > /dev/null 2>&1; rc=$?
	for i in $(seq $((hang * 10))); do kill -0 $svc 2>/dev/null || break; sleep 0.1; done
	if kill -0 $svc 2>/dev/null; then kill -9 $svc; rc=1; fi
	wait $svc 2>/dev/null
	svc=
	return $rc
}
good_cat() { [ "$(timeout $hang $gpuos cat --socket "$sock" /big.bin 2>/dev/null | md5sum | cut -d' ' -f1)" = "$want" ]; }
# attackers N FILES...: wait until N of them say they attack (2 min at most)
attackers() {
	local n=$1 i; shift
	for i in $(seq 1200); do
		[ "$(cat "$@" 2>/dev/null | grep -c '^attacking$')" -ge "$n" ] && return
		sleep 0.1
	done
}

echo "== leftovers: a killed service leaves nothing that breaks the next boot"
start
kill -9 $svc; wait $svc 2>/dev/null; svc=
check "a killed service's socket file is left" test -S "$sock"
start
check "the next boot finds it dead and serves" good_cat
# What the service maps or holds open, not a count of /dev/shm: suites
# beside this one (make test runs them side by side) make their folders
# there. A segment in /dev/shm, even one unlinked, shows in its maps.
check "no segment in /dev/shm (the segment is a memfd)" \
	eval '[ -r /proc/$svc/maps ] && ! grep -q " /dev/shm/" /proc/$svc/maps &&
		! ls -l /proc/$svc/fd 2>/dev/null | grep -q " /dev/shm/"'
$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$sock" > /dev/null 2> "$tmp/err"; rc=$?
check "a second service on a live socket: refused, exit 1" says $rc 1 "already runs" "$tmp/err"
stop
touch "$tmp/plain"
$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$tmp/plain" > /dev/null 2> "$tmp/err"; rc=$?
check "a path that is not a socket: refused, exit 1" says $rc 1 "not a socket" "$tmp/err"
check "a path that is not a socket is never replaced" test -f "$tmp/plain"

echo "== clients that die holding handles"
start --client-timeout-ms 2000
# the service's open descriptors, once it is back to one client at a time
fds() { ls /proc/$svc/fd 2>/dev/null | wc -l; }
good_cat; fd0=$(fds)
# 256 clients: twice the 128 handles, and each of the 8 shares drained and
# renewed 32 times, so a handle or share a dead client kept runs out, and a
# descriptor it kept shows in the count. (1000 waited minutes for the
# service's paced renewals, SVC_RENEW_SHARE, and tested nothing more.)
for i in $(seq 256); do
	timeout 60 $gpuos cat --socket "$sock" /big.bin 2>/dev/null | head -c 10 > /dev/null
done
check "after 256 clients killed mid-read, open/ls/cat still work" good_cat
fd1=$(fds)
# up to 8 more: connections and areas still closing or renewing
check "and the service holds no descriptor of theirs ($fd0 before them, $fd1 after)" \
	test "$fd0" -gt 0 -a "$fd1" -le $((fd0 + 8))
$gpuos ls --socket "$sock" /d > "$tmp/out" 2>&1; rc=$?
check "ls after them" says $rc 0 one "$tmp/out"
$client hold-handles "$sock" 60 > "$tmp/out" 2>&1; rc=$?
check "one client may hold 40 handles, not all 128 (the 41st: NOSPC)" says_line $rc 0 "opened 40, then: NOSPC" "$tmp/out"
# (failed on CI-like runs, 2026-12-02 and 03: the attach met shares still
# renewing; the end of the client's output is shown, where a traceback ends)
says_line $rc 0 "opened 40, then: NOSPC" "$tmp/out" || { sed 's/^/    | /' "$tmp/out" | tail -8;
	$gpuos status --socket "$sock" 2>&1 | sed 's/^/    | /' | head -20; }
check "and others still open files" good_cat

echo "== isolation between clients (each maps its own area: its mailbox and its share)"
$client isolation "$sock" > "$tmp/iso" 2>&1
sed 's/^/       /' "$tmp/iso"
iso() { grep -qx -- "$1" "$tmp/iso"; }
check "both open a file through their own mailboxes" iso "B opens the file: OK"
check "a read into another client's share: BAD_DST" iso "A reads into B's share: BAD_DST"
check "a read into another client's mailbox: BAD_DST" iso "A reads into B's mailbox: BAD_DST"
check "a read into its own mailbox: BAD_DST" iso "A reads into its own mailbox: BAD_DST"
check "a path in another client's share: BAD_DST" iso "A opens a path in B's share: BAD_DST"
check "another client's handle: BAD_HANDLE" iso "A reads through B's handle: BAD_HANDLE"
check "RELEASE of another share: DENIED (the service's alone)" iso "A releases B's share: DENIED"
check "raw bytes on a service without --allow-raw: DENIED" iso "A reads raw bytes: DENIED"
check "its own reads still work" iso "A reads its own file: OK"
check "a client that left and kept its mapping sees nothing of the next" iso "A's old mapping sees the next client's data: no"
check "the next client of that share is served" iso "the next client of A's share opens the file: OK"
check "and others still open files" good_cat
$client rt-leak "$sock" $svc > "$tmp/out" 2>&1
sed 's/^/       /' "$tmp/out"
check "the attach reply's rt= gives away nothing of where the service's code, libraries, heap and stack lie" \
	test "$(grep -o 'is [0-9]* MiB' "$tmp/out" | tr -dc 0-9)" -ge 1024

echo "== a client's memory is read once: what the runtime checked is what it uses"
# The batch counter of each request is checked when the runtime takes it;
# the client then points its slot's batch into its own mailbox's header.
$client batch-rewrite "$sock" /big.bin 8 > "$tmp/out" 2>&1
sed 's/^/       /' "$tmp/out"
check "OPENs (the metadata warp): each adds 1 to the counter checked, none elsewhere" \
	grep -qx "OPEN: counter 128 of 128, elsewhere 0" "$tmp/out"
check "READs (the service warps): the same" grep -qx "READ: counter 128 of 128, elsewhere 0" "$tmp/out"

echo "== a client that posts its slots again while they are in flight"
# STATs of 64 slots, each posted again as soon as the runtime has taken it:
# what one client forwards to the metadata warp is counted against its
# quota, and the metadata warp's ring is never written over.
# Three rounds of 3 s (the ring overflowed in 2 of 3 such rounds before).
during=0 after=0
for round in 1 2 3; do
	rm -f "$tmp/repost.out"
	$client repost "$sock" /d/one 3 > "$tmp/repost.out" 2>&1 &
	a1=$!
	attackers 1 "$tmp/repost.out"
	# (the attack lasts 3 s: past it an ls is served whatever the attack
	# did, unless it broke the service; the timeouts are hang guards)
	timeout $hang $gpuos ls --socket "$sock" /d > "$tmp/out" 2>&1 && grep -q one "$tmp/out" && during=$((during + 1))
	wait $a1
	sed 's/^/       /' "$tmp/repost.out"
	timeout $hang $gpuos stat --socket "$sock" /d/one > "$tmp/out" 2>&1 && grep -q Inode "$tmp/out" || break
	after=$((after + 1))
done
check "others' file requests are served meanwhile ($during of 3)" test $during -eq 3
check "and after it ($after of 3)" test $after -eq 3
check "and others still read files" good_cat
check "gpuos stop stops the service" stopped_in_time
start --client-timeout-ms 2000

echo "== clients that freeze the loop, and floods"
# The same reads through the attacked service and through a twin that
# nobody attacks (the same image and options), one after the other, 11
# pairs: a reader that never reads its replies, a line never finished,
# every connection slot held. Both see the machine at the same moments, so
# what other suites beside this one do (make test runs them side by side)
# slows both alike; a median alone before the attacks, compared with one
# under them seconds later, had measured that load as well.
twin=$tmp/twin.sock
$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$twin" --client-timeout-ms 2000 > "$tmp/twin.out" \
	2> "$tmp/twin.err" &
twin_svc=$!
wait_ready "$tmp/twin.out" $twin_svc
twin_cat() { [ "$(timeout $hang $gpuos cat --socket "$twin" /big.bin 2>/dev/null | md5sum | cut -d' ' -f1)" = "$want" ]; }
# paired_cats: 11 lines "MS_ATTACKED MS_TWIN"; a wrong read prints "fail"
paired_cats() {
	local i t0 t1 t2
	for i in 1 2 3 4 5 6 7 8 9 10 11; do
		t0=$(date +%s%N); good_cat || echo fail; t1=$(date +%s%N)
		twin_cat || echo fail; t2=$(date +%s%N)
		echo "$(( (t1 - t0) / 1000000 )) $(( (t2 - t1) / 1000000 ))"
	done
}
median_of() { awk -v c="$1" 'NF == 2 { print $c }' "$2" | sort -n | sed -n 6p; }
# Each cat's share is renewed after it leaves (a park of the runtime, on the
# service's next tick): let the first reads' renewals finish before the
# attacks, or they land in the measurement under attack.
good_cat; twin_cat
sleep 1.5
# The reader and the half line first: once they owe or are owed something,
# the flood's eviction of idle connections cannot take them (it would
# pass their checks without testing them).
$client silent-reader "$sock" > "$tmp/silent.out" 2>&1 &
a1=$!
$client partial-line "$sock" > "$tmp/partial.out" 2>&1 &
a2=$!
attackers 2 "$tmp/silent.out" "$tmp/partial.out"
$client idle-flood "$sock" 80 > "$tmp/flood.out" 2>&1 &
a3=$!
# Time only once every attacker is in place: three interpreters starting
# (up to a second each through a pyenv shim on 2 cores) had been timed as
# the service's slowdown.
attackers 3 "$tmp/silent.out" "$tmp/partial.out" "$tmp/flood.out"
paired_cats > "$tmp/pairs"
under=$(median_of 1 "$tmp/pairs"); base=$(median_of 2 "$tmp/pairs")
# A second round only where the first missed: a real slowdown misses both.
if [ $((under * 100)) -gt $((base * 125)) ]; then
	echo "       first round: $under ms attacked, $base ms the twin; a second round"
	paired_cats > "$tmp/pairs"
	under=$(median_of 1 "$tmp/pairs"); base=$(median_of 2 "$tmp/pairs")
fi
ok3=1; good_cat || ok3=0
wait $a1; r1=$?
wait $a2; r2=$?
wait $a3; r3=$?
sed 's/^/       /' "$tmp/silent.out" "$tmp/partial.out" "$tmp/flood.out"
check "a client that never reads its replies is disconnected" test $r1 -eq 0
check "a line never finished: disconnected after the client timeout" test $r2 -eq 0
check "an idle flood takes no slot from others: idle connections make room, all closed in time" test $r3 -eq 0
check "a well-behaved client is served during the attacks" test $ok3 -eq 1 -a "$(grep -c fail "$tmp/pairs")" -eq 0
echo "       cat of 8 MiB, median of 11: $under ms under attack, $base ms the twin (interleaved)"
check "its throughput drops by less than 20 % (against the twin)" test $((under * 100)) -le $((base * 125))
stop
timeout $hang $gpuos stop --socket "$twin" > /dev/null 2>&1
wait $twin_svc 2>/dev/null; twin_svc=

echo "== a client's waits end when its service is gone"
# A device at 4 MB/s: a cat of 8 MiB takes 2 s; the service goes under it,
# once the cat has attached. slow_cat NAME: start one in the background;
# gone_in_time NAME: it ended by itself, exit 1, saying why (the runtime
# may answer a read "shutting down" before the service goes). Its client
# timeout is 10 minutes and `timeout` ends it after 5 (124): only a cat
# that saw the service go ends by itself. (It had to within 10 s, which a
# loaded machine can break: issue 35.)
slow_cat() { (GPUOS_CLIENT_TIMEOUT_MS=600000 timeout $hang $gpuos cat --socket "$sock" /big.bin > /dev/null \
	2> "$tmp/$1.err"; echo "$?" > "$tmp/$1.rc") & }
gone_in_time() {
	local i rc
	for i in $(seq $((hang * 10 + 100))); do [ -s "$tmp/$1.rc" ] && break; sleep 0.1; done
	sed 's/^/       /' "$tmp/$1.err" | head -3
	read -r rc < "$tmp/$1.rc" && [ "$rc" -eq 1 ] && grep -Eq "the service is gone|shutting down" "$tmp/$1.err"
}
startslow() {
	rm -f "$tmp/svc.out"
	$gpuos boot --device "emu:$tmp/fs.img,gbps=0.004" --host --socket "$sock" > "$tmp/svc.out" 2> "$tmp/svc.err" &
	svc=$!
	wait_ready "$tmp/svc.out" $svc
}
startslow
slow_cat killed
attached 1
kill -9 $svc; wait $svc 2>/dev/null; svc=
check "the service killed under a cat: the cat ends by itself, 'the service is gone'" gone_in_time killed
startslow
slow_cat stopped
attached 1
check "(gpuos stop under a cat)" stopped_in_time
check "the service stopped under a cat: the cat ends (and its close), exit 1" gone_in_time stopped
# A service that never answers: the client gives up after its timeout.
# Two clients side by side, of 1.5 s and 9 s: the first ends first (the
# same load slows both; a bound of 10 s on the first could break). Each
# has a service of its own (one gives every client the same area).
rm -f "$tmp/silent.sock" "$tmp/silent9.sock"
$client silent-service "$tmp/silent.sock" > /dev/null 2>&1 &
f=$!
$client silent-service "$tmp/silent9.sock" > /dev/null 2>&1 &
f9=$!
wait_sock "$tmp/silent.sock"
wait_sock "$tmp/silent9.sock"
(GPUOS_CLIENT_TIMEOUT_MS=9000 timeout $hang $gpuos ls --socket "$tmp/silent9.sock" / > /dev/null 2> "$tmp/err9"
	echo "$? $(date +%s%N)" > "$tmp/rc9") &
l9=$!
GPUOS_CLIENT_TIMEOUT_MS=1500 timeout $hang $gpuos ls --socket "$tmp/silent.sock" / > /dev/null 2> "$tmp/err"; rc=$?
t1=$(date +%s%N)
wait $l9
read -r rc9 t9 < "$tmp/rc9"
sed 's/^/       /' "$tmp/err"
check "a service that never answers: the client gives up after its timeout (1.5 s, before one of 9 s), exit 1" \
	eval '[ $rc -eq 1 ] && [ "$rc9" -eq 1 ] && [ $t1 -lt $t9 ] && grep -q "the service is gone" "$tmp/err"'
kill $f $f9 2>/dev/null; wait $f $f9 2>/dev/null

echo "== who may connect, and what they may do"
if [ "$(id -u)" -ne 0 ]; then
	skipped "other users' clients (needs root to become uid 65534)"
else
	start
	$client as-nobody connect "$sock" > "$tmp/out" 2>&1
	check "uid 65534, socket mode 0660 (default): cannot connect" grep -q "Permission denied" "$tmp/out"
	stop
	start --socket-mode 0666 --client-timeout-ms 2000
	$client as-nobody attach "$sock" > "$tmp/out" 2>&1
	check "uid 65534 through a 0666 socket: refused by its credentials" grep -q "uid 65534 may not use this service" "$tmp/out"
	stop
	grp=$(getent group 65534 | cut -d: -f1)
	start --socket-mode 0660 --group "$grp" --client-timeout-ms 2000 --gpu-clients 2
	chgrp "$grp" "$tmp"; chmod 750 "$tmp"
	$client as-nobody hoard "$sock" > "$tmp/out" 2>&1
	check "a member of --group attaches, holds at most half the shares" grep -qx "attached 4, then: err uid 65534 holds 4 of the 8 client shares, as many as one user may" "$tmp/out"
	$client as-nobody stop "$sock" > "$tmp/out" 2>&1
	check "... and may not stop the service" grep -q "err only root and uid 0 may stop" "$tmp/out"
	check "root still attaches beside it" good_cat
	# Two users at their cap each would hold every share: users together
	# leave 2 of the 8 to root and the service's uid.
	# (hoard-hold asks again while the hoard's shares are being given back)
	$client as-nobody hoard-hold "$sock" $hang > "$tmp/h1" 2>&1 &
	a1=$!
	for i in $(seq 1200); do grep -q attached "$tmp/h1" && break; sleep 0.1; done
	$client as-uid 65533 hoard-hold "$sock" $hang > "$tmp/h2" 2>&1 &
	a2=$!
	for i in $(seq 1200); do grep -q attached "$tmp/h2" && break; sleep 0.1; done
	sed 's/^/       /' "$tmp/h1" "$tmp/h2"
	check "a second user gets 2 shares, not 4: 2 of the 8 are kept for root" grep -qx \
		"attached 2, then: err users hold 6 of the 8 client shares; the other 2 are kept for root and uid 0" "$tmp/h2"
	check "root attaches while two users hold all they may" good_cat
	kill $a1 $a2 2>/dev/null; wait $a1 $a2 2>/dev/null
	# Slowloris: connections that each trickle a line in, a byte every
	# 0.5 s, never finishing it. One user holds at most 16 connections,
	# and a line must end within the client timeout however it trickles.
	# (it trickles until the service has closed all; $hang: a hang guard)
	$client as-nobody slowloris "$sock" 64 0.5 $hang > "$tmp/slow.out" 2>&1 &
	a1=$!
	attackers 1 "$tmp/slow.out"
	t0=$(date +%s%N)
	good_cat; rc=$?
	check "64 connections of one user that trickle lines in: root still gets in" test $rc -eq 0
	wait $a1
	sed 's/^/       /' "$tmp/slow.out"
	check "one user holds at most 16 connections: no more than 16 kept longer than 1 s" \
		test "$(grep -o '[0-9]* kept longer' "$tmp/slow.out" | tr -dc 0-9)" -le 16
	# A byte each 0.5 s, a client timeout of 2 s: a service that timed a
	# line from its last byte would keep them until the hang guard.
	check "a line that trickles in is cut off after the client timeout (2 s), however it trickles" \
		grep -q ", 0 still open" "$tmp/slow.out"
	# A well-behaved client's throughput while another user floods the
	# service with reads (4 KiB, in every slot of its mailbox), and while
	# another attaches and leaves as fast as the service lets it: in one
	# run, 15 rounds, each reading 256 MiB with the attack stopped and 256
	# MiB with it running; the median of the rounds' ratios. Two tries: a
	# machine busy with other work can spoil one.
	fair() { # NAME MODE ARGS...
		local name=$1 try r; shift
		for try in 1 2; do
			$client fairness "$sock" /big.bin 15 256 as-nobody "$@" > "$tmp/fair" 2>&1
			sed 's/^/       /' "$tmp/fair"
			r=$(grep -o '^ratio [0-9.]*' "$tmp/fair" | awk '{print int($2 * 100)}')
			[ -n "$r" ] && [ "$r" -ge 75 ] && break
		done
		check "a well-behaved client keeps 75 % of its throughput under $name" test "${r:-0}" -ge 75
	}
	fair "a read flood" read-flood SOCK /big.bin 120 4
	fair "attach churn" churn SOCK 120
	# Files as the client's credentials allow (ext4 mode bits, checked by
	# the metadata warp against the peer's uid, gid and groups).
	nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
	got=$(nobody $gpuos cat --socket "$sock" /d/one 2> "$tmp/err"); rc=$?
	check "uid 65534 reads a file others may read" test $rc -eq 0 -a "$got" = one
	nobody $gpuos cat --socket "$sock" /private.txt > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "uid 65534, a file of mode 0600 (root's): permission denied, exit 1, nothing read" says $rc 1 "permission denied" "$tmp/err"
	check "(nothing of it on stdout)" test ! -s "$tmp/out"
	nobody $gpuos cat --socket "$sock" /locked/inner.txt > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "uid 65534, a file in a folder of mode 0700: permission denied" says $rc 1 "permission denied" "$tmp/err"
	nobody $gpuos ls --socket "$sock" /locked > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "uid 65534 lists a folder of mode 0700: permission denied" says $rc 1 "permission denied" "$tmp/err"
	check "root reads the 0600 file" test "$($gpuos cat --socket "$sock" /private.txt 2>/dev/null)" = private
	nobody $gpuos read --socket "$sock" --allow-raw --offset 0 --length 4096 > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "uid 65534 asks for raw bytes: denied (only root and the service's uid)" says $rc 1 "denied" "$tmp/err"
	# Requests posted just before the client leaves are checked against
	# its rights all the same (64 OPENs of the 0600 file, 8 times).
	for kind in host gpu; do
		$client as-nobody leave-early "$sock" /private.txt 8 $kind > "$tmp/out" 2>&1
		sed 's/^/       /' "$tmp/out"
		check "uid 65534 ($kind client) posts OPENs of the 0600 file and leaves at once: none succeeds" \
			eval 'grep -q "^OPEN answers: .*DENIED [1-9]" "$tmp/out" && ! grep -Eq "(: | )OK [0-9]" "$tmp/out"'
	done
	stop
	start --socket-mode 0660 --group "$grp" --client-timeout-ms 2000 --no-perms --allow-raw
	got=$(nobody $gpuos cat --socket "$sock" /private.txt 2> "$tmp/err"); rc=$?
	check "--no-perms: uid 65534 reads the 0600 file" test $rc -eq 0 -a "$got" = private
	nobody $gpuos read --socket "$sock" --allow-raw --offset 0 --length 4096 > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "--allow-raw: uid 65534 still may not read raw bytes" says $rc 1 "denied" "$tmp/err"
	nobody $gpuos gguf --socket "$sock" "@$goff" > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "--allow-raw: uid 65534 may not open a GGUF at a byte offset (raw reads are not its right)" \
		says $rc 1 "only to root" "$tmp/err"
	check "(nothing of the 0600 model it names on stdout)" eval '! grep -q secret "$tmp/out"'
	$gpuos gguf --socket "$sock" "@$goff" > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "--allow-raw: root opens it" says $rc 0 "secret.tensor" "$tmp/out"
	$gpuos read --socket "$sock" --allow-raw --offset 1024 --length 4096 > "$tmp/out" 2> "$tmp/err"; rc=$?
	check "--allow-raw: root reads raw bytes (the superblock's magic at 0x38)" test $rc -eq 0 -a "$(od -An -tx1 -j56 -N2 "$tmp/out" | tr -d ' ')" = 53ef
	chmod 755 "$tmp"
	stop
	# A socket of another user is not a service to trust (made in a folder
	# that user may write).
	mkdir "$tmp/nobody"; chown 65534:65534 "$tmp/nobody"; chmod 755 "$tmp"
	$client as-nobody fake-service "$tmp/nobody/fake.sock" good > /dev/null 2>&1 &
	f=$!
	wait_sock "$tmp/nobody/fake.sock"
	check "(the other user's fake service listens)" test -S "$tmp/nobody/fake.sock"
	$gpuos ls --socket "$tmp/nobody/fake.sock" / > /dev/null 2> "$tmp/err"; rc=$?
	check "a socket owned by another user: the client refuses it" says $rc 1 "neither root nor you" "$tmp/err"
	kill $f 2>/dev/null; wait $f 2>/dev/null
fi
for kind in overflow nofd short garbage; do
	rm -f "$tmp/fake.sock"
	$client fake-service "$tmp/fake.sock" $kind > /dev/null 2>&1 &
	f=$!
	wait_sock "$tmp/fake.sock"
	$gpuos ls --socket "$tmp/fake.sock" / > /dev/null 2> "$tmp/err"; rc=$?
	check "a fake service's $kind attach reply: refused cleanly (exit 1, no crash)" says $rc 1 "attach" "$tmp/err"
	kill $f 2>/dev/null; wait $f 2>/dev/null
done

echo "== GPU clients in other processes (host mode: host memory stands in for their VRAM areas)"
xc=$build/bench/xproc-client
start
$xc --socket "$sock" --mode rtt --iters 10 > /dev/null 2> "$tmp/err"; rc=$?
check "a service without GPU client areas refuses a GPU attach" says $rc 1 "no GPU client areas" "$tmp/err"
stop
start --allow-raw --gpu-clients 3 --gpu-client-mib 4
$client isolation "$sock" /d/one mixed > "$tmp/isox" 2>&1
sed 's/^/       /' "$tmp/isox"
isox() { grep -qx -- "$1" "$tmp/isox"; }
check "GPU client A, host client B: each opens through its own mailbox" isox "A opens the file: OK"
check "a GPU client's read into a host client's share: BAD_DST" isox "A reads into B's share: BAD_DST"
check "a GPU client's read into a host client's mailbox: BAD_DST" isox "A reads into B's mailbox: BAD_DST"
check "a GPU client's read into its own mailbox: BAD_DST" isox "A reads into its own mailbox: BAD_DST"
check "a GPU client's path in another's share: BAD_DST" isox "A opens a path in B's share: BAD_DST"
check "a GPU client with another's handle: BAD_HANDLE" isox "A reads through B's handle: BAD_HANDLE"
check "a GPU client's RELEASE: DENIED" isox "A releases B's share: DENIED"
check "a GPU client that left and kept its mapping sees nothing of the next" isox "A's old mapping sees the next client's data: no"
check "the next GPU client of that area is served" isox "the next client of A's share opens the file: OK"
# Two client processes post at once (and a host client beside them); each
# compares every byte it read with the image.
rm -f "$tmp/go"
$xc --socket "$sock" --mode check --image "$tmp/fs.img" --threads 8 --iters 32 --go "$tmp/go" > "$tmp/xc1" 2>&1 &
x1=$!
$xc --socket "$sock" --mode check --image "$tmp/fs.img" --threads 8 --iters 32 --go "$tmp/go" > "$tmp/xc2" 2>&1 &
x2=$!
attached 2
$xc --socket "$sock" --mode check --image "$tmp/fs.img" --threads 8 --iters 32 --go "$tmp/go" > "$tmp/xc3" 2>&1 &
x3=$!
attached 3
$xc --socket "$sock" --mode rtt --iters 10 > /dev/null 2> "$tmp/err"; rc=$?
check "a fourth GPU client while three areas are held: refused" says $rc 1 "all 3 GPU client areas in use" "$tmp/err"
touch "$tmp/go"
good_cat; cat_rc=$?
wait $x1; r1=$?; wait $x2; r2=$?; wait $x3; r3=$?
sed 's/^/       /' "$tmp/xc1" "$tmp/xc2" "$tmp/xc3"
check "three GPU client processes at once: every byte each read matches the device" \
	test $r1 -eq 0 -a $r2 -eq 0 -a $r3 -eq 0
check "each in an area of its own" test "$(grep -ho '"share": [0-9]*' "$tmp/xc1" "$tmp/xc2" "$tmp/xc3" | sort -u | wc -l)" -eq 3
check "a host client beside them is served" test $cat_rc -eq 0
# One after another: an area comes back once the service has renewed it
# (on its next tick); the client asks again while the service says areas
# are being given back, and this loop (a hang guard) where one is in use.
n=0
for i in $(seq 8); do
	for try in $(seq 300); do
		$xc --socket "$sock" --mode check --image "$tmp/fs.img" --threads 2 --iters 8 > "$tmp/xcn" 2>&1 && { n=$((n + 1)); break; }
		grep -q "GPU client areas in use" "$tmp/xcn" || break
		sleep 0.1
	done
done
check "8 GPU clients one after another through 3 areas (renewed each time): all served" test $n -eq 8
stop
# One area: a client leaves but keeps it mapped; the next client of the area
# reads into it; the old mapping must not change.
start --allow-raw --gpu-clients 1 --gpu-client-mib 4
rm -f "$tmp/go"
$xc --socket "$sock" --mode stale --go "$tmp/go" > "$tmp/stale" 2>&1 &
xs=$!
for i in $(seq 2400); do grep -q left "$tmp/stale" && break; sleep 0.05; done
n=1
until $xc --socket "$sock" --mode check --image "$tmp/fs.img" --threads 8 --iters 64 > "$tmp/next" 2>&1; do
	n=$((n + 1)); [ $n -gt 600 ] && break; sleep 0.1
done
touch "$tmp/go"
wait $xs; rs=$?
sed 's/^/       /' "$tmp/stale" "$tmp/next"
check "the next GPU client of a single area is served" grep -q '"mismatched": 0' "$tmp/next"
check "a GPU client that left and kept its area mapped sees nothing of the next" test $rs -eq 0
stop

echo "service: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
