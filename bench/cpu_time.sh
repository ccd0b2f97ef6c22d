#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU time of the gpuos service process after boot, without the emulated
# controller's threads (named emu-*): idle for 5 s, then while a client
# reads 1 GiB through it. Usage: bench/cpu_time.sh BUILD_DIR DEVICE
set -u
build=${1:-build}
dev=${2:-gpu-null}
g=$build/gpuos
sock=/tmp/gpuos-cpu.sock
cpu_of() { # seconds of CPU of process $1's threads not named emu*
	local hz=$(getconf CLK_TCK) t=0
	for d in /proc/$1/task/*; do
		case "$(cat $d/comm 2>/dev/null)" in emu*) continue ;; esac
		set -- $1 $(sed 's/.*) //' $d/stat 2>/dev/null)
		t=$((t + ${12:-0} + ${13:-0}))
	done
	python3 -c "print($t / $hz)"
}
"$g" boot --device "$dev" --allow-raw --warps 4 --queues 4 --socket $sock > /tmp/gpuos-cpu.out 2>/tmp/gpuos-cpu.err &
pid=$!
for i in $(seq 200); do grep -q ready /tmp/gpuos-cpu.out 2>/dev/null && break; sleep 0.1; done
c0=$(cpu_of $pid); sleep 5; c1=$(cpu_of $pid)
echo "service on $dev, idle 5 s: $(python3 -c "print(round($c1 - $c0, 3))") s CPU (without emulator threads)"
t0=$(date +%s.%N)
"$g" read --socket $sock --allow-raw --offset 0 --length $((1 << 30)) -o /dev/null
t1=$(date +%s.%N)
c2=$(cpu_of $pid)
echo "service on $dev, serving a 1 GiB read ($(python3 -c "print(round($t1 - $t0, 2))") s): $(python3 -c "print(round($c2 - $c1, 3))") s CPU (without emulator threads)"
"$g" stop --socket $sock
wait $pid
