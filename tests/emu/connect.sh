#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Memory of a client's own as the destination (issue 32): the socket
# protocol (register host / vram, unregister) against a service in host
# mode on the emulated controller, as a well-behaved and as a hostile
# client speaks it (tests/tools/hostile_client.py own-memory); a client
# killed while reads into its memory are in flight leaves nothing of it
# mapped in the service; then tests/python/test_connect.py, gpuos.connect()
# loading whole models into its own memory through the service.
# Usage: tests/emu/connect.sh BUILD_DIR
set -u
build=${1:-build}
gpuos=$build/gpuos
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gpuos-connect-test.XXXXXX)
svc= pid=
trap '[ -n "$svc" ] && kill -9 $svc 2>/dev/null; [ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# has LINE FILE: FILE has the line LINE
has() { grep -qxF -- "$1" "$2"; }
export GPUOS_QUIET_HOST=1
client="python3 $here/../tools/hostile_client.py"

for t in mke2fs python3 timeout; do
	command -v $t > /dev/null || { echo "connect: $t is missing (make deps)"; exit 1; }
done
[ -x "$gpuos" ] || { echo "connect: $gpuos is missing (make BUILD=$build all)"; exit 1; }

mkdir -p "$tmp/src/d"
head -c $((8 << 20)) /dev/urandom > "$tmp/src/big.bin"
head -c 300000 /dev/urandom > "$tmp/src/d/one"
mke2fs -q -F -t ext4 -d "$tmp/src" "$tmp/fs.img" 32M > /dev/null 2>&1 || { echo "connect: mke2fs failed"; exit 1; }
sock=$tmp/s.sock

# Waits end on what they wait for; their limits (hang, and the loops of
# 1200 naps of 0.1 s) are hang guards, not bounds on speed (issue 35): a
# boot, a client's start or a share's renewal take seconds on a loaded
# 2-core machine.
hang=300
start() {
	rm -f "$tmp/svc.out"
	$gpuos boot --device "emu:$tmp/fs.img" --host --socket "$sock" "$@" > "$tmp/svc.out" 2> "$tmp/svc.err" &
	svc=$!
	for i in $(seq 1200); do
		grep -q ready "$tmp/svc.out" 2>/dev/null && break
		kill -0 $svc 2>/dev/null || break
		sleep 0.1
	done
}
stop() {
	timeout $hang $gpuos stop --socket "$sock" > /dev/null 2>&1
	wait $svc 2>/dev/null
	svc=
}
# mapped: how many mappings of clients' memfds the service holds
mapped() { grep -c 'memfd:gpuos-\(test\|lent\)' "/proc/$svc/maps" 2>/dev/null; }

echo "== register, name, refuse (hostile_client.py own-memory)"
start
timeout $hang $client own-memory "$sock" /d/one > "$tmp/own.out" 2>&1
rc=$?
sed 's/^/       /' "$tmp/own.out"
check "the client ran to its end (exit 0)" test $rc -eq 0
check "a sealed memfd is lent: ok rt=N" has "A lends a sealed memfd: ok" "$tmp/own.out"
check "its owner reads a file into it" has "A reads into its own memory: OK" "$tmp/own.out"
check "the bytes land in the owner's own mapping, equal to the same read into its share" \
	has "A's own memory holds the file's bytes: yes" "$tmp/own.out"
check "a read past its end is refused (BAD_DST)" has "A reads across the end of its memory: BAD_DST" "$tmp/own.out"
check "another client naming it as a destination: BAD_DST" has "B reads into A's memory: BAD_DST" "$tmp/own.out"
check "another client's path in it: BAD_DST" has "B opens a path in A's memory: BAD_DST" "$tmp/own.out"
check "another client's raw read into it: refused" grep -qE "^B reads raw bytes into A's memory: (BAD_DST|DENIED)$" "$tmp/own.out"
check "another client cannot take it back" \
	grep -q "^B takes A's memory back: err no memory of yours is registered" "$tmp/own.out"
check "an unsealed memfd is refused" grep -q "^B lends an unsealed memfd: err the memfd is not sealed" "$tmp/own.out"
check "a range past the memfd's end is refused" \
	grep -q "^B lends more than its memfd holds: err the range passes the end" "$tmp/own.out"
check "part of a page is refused" grep -q "^B lends part of a page: err not memory the service can register" "$tmp/own.out"
check "a register without a memfd is refused" grep -q "^B lends no memfd: err register host: no memfd came" "$tmp/own.out"
check "a descriptor that is no sealed memfd is refused" grep -q "^B lends a handle that is no memfd: err" "$tmp/own.out"
check "VRAM of a host-mode service is refused" \
	grep -q "^B lends VRAM by a made-up handle: err this service's runtime cannot take VRAM" "$tmp/own.out"
check "a malformed register is refused with its usage" grep -q "^B sends a malformed register: err usage: register vram" "$tmp/own.out"
check "a handle with a bad digit is refused" grep -q "^B sends a handle with a bad digit: err usage" "$tmp/own.out"
check "a handle one digit short is refused" grep -q "^B sends a handle one digit short: err usage" "$tmp/own.out"
check "a connection that has not attached lends nothing" \
	grep -q "^a connection that has not attached lends memory: err attach first" "$tmp/own.out"
check "a client lends 4 ranges at most: the 5th is refused" \
	grep -qx "A lends 5 more: ok / ok / ok / err a client registers 4 ranges at most: unregister one first / err a client registers 4 ranges at most: unregister one first" "$tmp/own.out"
check "the owner gives it back" has "A gives its first back: ok" "$tmp/own.out"
check "what was given back is no destination any more (BAD_DST)" \
	has "A reads into what it gave back: BAD_DST" "$tmp/own.out"
check "giving it back twice is refused" grep -q "^A gives it back again: err no memory of yours" "$tmp/own.out"
check "the client's share still serves" has "A's reads still work: OK" "$tmp/own.out"
for i in $(seq 1200); do [ "$(mapped)" = 0 ] && break; sleep 0.1; done
check "once both clients left, the service maps none of their memfds" test "$(mapped)" = 0
check "the service still serves (gpuos cat of /big.bin)" \
	cmp -s <(timeout $hang $gpuos cat --socket "$sock" /big.bin 2>/dev/null) "$tmp/src/big.bin"

echo "== one uid's clients together lend $((16 / 2)) ranges at most"
if [ "$(id -u)" = 0 ]; then
	stop
	grp=$(getent group 65534 | cut -d: -f1)
	chgrp "$grp" "$tmp"; chmod 750 "$tmp"
	start --socket-mode 0660 --group "$grp"
	timeout $hang $client as-nobody lend-many "$sock" 10 > "$tmp/many.out" 2>&1
	sed 's/^/       /' "$tmp/many.out"
	check "uid 65534 over 3 clients: 8 lent, the 9th and 10th refused naming the uid's cap" \
		grep -qx "lends: ok / ok / ok / ok / ok / ok / ok / ok / err uid 65534 lends 8 ranges at most, and on a GPU pins at most a quarter of this machine's memory, over all its clients / err uid 65534 lends 8 ranges at most, and on a GPU pins at most a quarter of this machine's memory, over all its clients" "$tmp/many.out"
	for i in $(seq 1200); do [ "$(mapped)" = 0 ] && break; sleep 0.1; done
	check "once they left, nothing of theirs is mapped" test "$(mapped)" = 0
else
	bad "uid caps: this test runs as root (it becomes uid 65534)"
fi

echo "== a client killed with reads into its memory in flight"
$client lend-and-die "$sock" /big.bin "$tmp/ready" > "$tmp/die.out" 2>&1 &
pid=$!
for i in $(seq 2400); do [ -e "$tmp/ready" ] && break; sleep 0.05; done
sleep 0.5
during=$(mapped)
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
pid=
for i in $(seq 1200); do [ "$(mapped)" = 0 ] && break; sleep 0.1; done
after=$(mapped)
check "while it read, the service mapped its memfd ($during mapping)" test "${during:-0}" -ge 1
check "after its end, nothing of it is mapped in the service ($after mappings)" test "$after" = 0
check "the service still serves after it" \
	cmp -s <(timeout $hang $gpuos cat --socket "$sock" /big.bin 2>/dev/null) "$tmp/src/big.bin"
check "the service did not die" kill -0 $svc
stop
grep -v "^gpuos: \(MPS\|serving\|stopped\)" "$tmp/svc.err" | sed "s/^/       svc: /"
check "no complaint of the service on stderr" test -z "$(grep -v "^gpuos: \(MPS\|serving\|stopped\)" "$tmp/svc.err")"

echo "connect: $pass passed, $fail failed"
[ $fail -eq 0 ]
