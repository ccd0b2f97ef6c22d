#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: the rows of docs/benchmarks.md, each against its baseline in the
# same run, as bench/results/*.csv (bench/results.py), then the page and its
# plots (docs/plots/). Without a usable GPU the host-mode rows run and every
# other section is skipped by name.
#
#   bench/all.sh BUILD_DIR [DATA_DIR [DISK_DIR]]
#
# DATA_DIR holds the in-memory test file (default /dev/shm where it exists,
# else BUILD_DIR); DISK_DIR one on the machine's disk, read cold with
# O_DIRECT (default BUILD_DIR). BENCH_RAND_MIB sizes them (default 1024 with
# a GPU, 256 without).
set -u
build=${1:?usage: bench/all.sh BUILD_DIR [DATA_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
g=$build/gpuos
b=$build/bench/baselines
res=$root/bench/results
data=${2:-$([ -d /dev/shm ] && echo /dev/shm || echo "$build")}
diskdir=${3:-$build}
for x in "$g" "$b"; do
	[ -x "$x" ] || { echo "bench: $x is missing: make BUILD=$build bench-build" >&2; exit 2; }
done
add() { python3 "$here/results.py" add "$@"; }
skip() { echo "bench: skipped: $*"; skipped+=("$*"); echo "$*" >> "$res/skipped.txt"; }
skipped=()
export GPUOS_QUIET_HOST=1

# A GPU the runtime can use: a NOP through gpu-null on it.
if "$g" bench --device gpu-null --threads 1 --iters 10 --op nop --json > /dev/null 2>&1; then
	gpu=1
	mode=""
	where="GPU"
else
	gpu=0
	mode="--host"
	where="host mode"
fi
echo "# gpuos bench, $(date -u +%Y-%m-%dT%H:%MZ), runtime: $where"
mkdir -p "$res"
rm -f "$res"/*.csv "$res/skipped.txt"

# ---- 2. random 4 KiB reads ------------------------------------------------------
mib=${BENCH_RAND_MIB:-$([ $gpu -eq 1 ] && echo 1024 || echo 256)}
file=$data/gpuos-bench-rand-$$.img
disk=$diskdir/gpuos-bench-rand-$$.img
trap 'rm -f "$file" "$disk"' EXIT
head -c $((mib << 20)) /dev/urandom > "$file" || { echo "bench: cannot write $file" >&2; exit 1; }
cp "$file" "$disk" || { echo "bench: cannot write $disk" >&2; exit 1; }
cat "$file" > /dev/null # the page cache holds it: the source is memory for every path
# rand4k SOURCE FILE SCALE DIRECT: liburing at QD 1..256 against gpuos with as
# many client threads (GPU threads, or CPU threads in host mode), the file
# behind the emulated controller (its uring backend uses O_DIRECT wherever
# the file system allows it). SCALE divides the number of reads.
rand4k() {
	local src=$1 f=$2 scale=$3 direct=$4 qd reads iters w cmd
	for qd in 1 4 16 64 256; do
		reads=$(( (qd < 16 ? 50000 : 200000) / scale ))
		cmd="baselines rand FILE --qd $qd --reads $reads $direct"
		"$b" rand "$f" --qd $qd --reads $reads $direct |
			add "$res/random4k.csv" random4k "liburing-qd-$qd" "liburing, CPU reads" "$src" - "$cmd" \
				iops=iops:reads/s lat_p50_us=lat_p50_us:us lat_p99_us=lat_p99_us:us || return 1
		iters=$(( (qd < 16 ? 20000 : 100000) / scale / qd ))
		iters=$(( iters < 4 ? 4 : iters ))
		w=$(( qd >= 64 ? 4 : 1 ))
		cmd="gpuos bench --device emu:FILE,backend=uring --warps $w --threads $qd --iters $iters --bytes 4096 $mode"
		"$g" bench --device "emu:$f,backend=uring" --warps $w --threads $qd --iters $iters --bytes 4096 $mode --json |
			add "$res/random4k.csv" random4k "gpuos-qd-$qd" "gpuos, emu: uring backend ($where)" "$src" \
				"liburing-qd-$qd" "$cmd" iops=requests_per_s:reads/s lat_p50_us=lat_median_us:us \
				lat_p99_us=lat_p99_us:us || return 1
	done
}
rand4k "page cache" "$file" 1 "" || exit 1
# From the disk: cold for both (caches dropped where we may), O_DIRECT.
if echo 3 > /proc/sys/vm/drop_caches 2> /dev/null && "$b" rand "$disk" --qd 1 --reads 1 --direct > /dev/null 2>&1; then
	rand4k "disk, O_DIRECT" "$disk" 10 --direct || exit 1
else
	skip "2. random 4 KiB reads from the disk (no O_DIRECT on $diskdir, or caches cannot be dropped here)"
fi
if [ $gpu -eq 0 ]; then
	skip "2. random 4 KiB reads from gpu-null and from an emulated array (need a GPU)"
else
	for dev in gpu-null "emu:null,backend=null,size=1T,ssds=4,gbps=7,iops=1400000,queues=32,workers=4"; do
		name=$([ "$dev" = gpu-null ] && echo gpu-null || echo "array-4-gen4")
		cmd="gpuos bench --device $dev --warps 16 --queues 64 --depth 1024 --slots 256 --mbox-slots 16384 --threads 16384 --iters 50 --bytes 4096"
		"$g" bench --device "$dev" --warps 16 --queues 64 --depth 1024 --slots 256 --mbox-slots 16384 \
			--threads 16384 --iters 50 --bytes 4096 --json |
			add "$res/random4k.csv" random4k "$name" "gpuos, $dev" "none (the runtime's ceiling)" - "$cmd" \
				iops=requests_per_s:reads/s lat_p50_us=lat_median_us:us lat_p99_us=lat_p99_us:us || exit 1
	done
fi

# ---- 4. runtime ceiling and latency -------------------------------------------------
if [ $gpu -eq 0 ]; then
	skip "4. runtime ceiling and latency on gpu-null (needs a GPU)"
else
	for op in read nop; do
		cmd="gpuos bench --device gpu-null --threads 1 --iters 20000 --op $op"
		"$g" bench --device gpu-null --threads 1 --iters 20000 --op $op --json |
			add "$res/runtime.csv" runtime "round-trip-$op" "gpuos, gpu-null" "none" - "$cmd" \
				round_trip_us=lat_median_us:us || exit 1
	done
	for w in 1 16 64 128; do
		cmd="gpuos bench --device gpu-null --warps $w --queues $((w * 2)) --depth 1024 --slots 256 --mbox-slots $((w * 1024)) --threads $((w * 1024)) --iters 200"
		"$g" bench --device gpu-null --warps $w --queues $((w * 2)) --depth 1024 --slots 256 \
			--mbox-slots $((w * 1024)) --threads $((w * 1024)) --iters 200 --json |
			add "$res/runtime.csv" runtime "W=$w" "gpuos, gpu-null, 4 KiB READ_RAW" "none" - "$cmd" \
				requests_per_s=requests_per_s:requests/s || exit 1
	done
fi

# ---- GPU clients in other processes ---------------------------------------------------
if [ $gpu -eq 0 ] || ! command -v nvidia-cuda-mps-control > /dev/null; then
	skip "GPU clients in other processes (need a GPU and MPS)"
else
	XPROC_RESULTS=$res/xproc.csv bash "$here/xproc.sh" "$build" || exit 1
fi

# ---- not built yet ------------------------------------------------------------------------
skip "1. the same file into VRAM through every path (mmap, pread, liburing, cuFile, gpuos): not built yet"
skip "3. layer streaming with a compute kernel per layer: not built yet"

python3 "$here/results.py" report "$res" "$root/docs/benchmarks.md" "$root/docs/plots" || exit 1
echo "bench: wrote bench/results/*.csv, docs/benchmarks.md and docs/plots/"
for s in "${skipped[@]}"; do echo "bench: skipped: $s"; done
