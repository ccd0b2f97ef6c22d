#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: what gpuos does today, end to end, on any machine (the GPU is
# used when present, else the runtime runs on CPU threads and says so).
# Builds a disk image once (kept in BUILD/demo), brings up the emulated NVMe
# controller, reads through the runtime and checks every byte, measures.
set -euo pipefail
build=${1:-build}
g=$build/gpuos
dir=$build/demo
mkdir -p "$dir"
img=$dir/disk.img
if [ ! -s "$img" ]; then
	echo "demo: building a 256 MiB disk image of random bytes (once)"
	head -c $((256 << 20)) /dev/urandom > "$img"
fi
dev="emu:$img,queues=8"
echo
echo "== gpuos identify --device $dev"
"$g" identify --device "$dev"
echo
echo "== gpuos read: the whole image through the runtime (mailbox -> service warps -> NVMe queues)"
t0=$(date +%s.%N)
"$g" read --device "$dev" --warps 2 --queues 4 --allow-raw --offset 0 --length $((256 << 20)) -o "$dir/read.out"
t1=$(date +%s.%N)
if cmp -s "$img" "$dir/read.out"; then
	echo "   all $((256 << 20)) bytes equal the image; $(python3 -c "print(f'{256/1.048576/($t1-$t0):.0f} MB/s')")"
else
	echo "demo: the bytes read differ from the image" >&2
	exit 1
fi
rm -f "$dir/read.out"
echo
echo "== gpuos bench: 4 KiB random reads, 8 client threads"
"$g" bench --device "$dev" --warps 2 --queues 4 --threads 8 --iters 2000
echo
echo "demo: ok (controller emu:, runtime on $("$g" bench --device "$dev" --threads 1 --iters 1 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["runtime"])'))"
