#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scale-out (docs/benchmarks.md "Scale-out", docs/scale-out.md): a group's
# requests/s (4 KiB random reads) and GB/s (1 MiB reads), all its runtimes
# together, as runtimes x SSDs grow: 1x1, 2x1, 1x4, 2x4. Each row is a ratio
# to 1x1 of the same run. The runtimes go on GPUs 0 and 1 where the machine
# has two, else both on GPU 0 (each row's path says which). The SSDs are
# the emulator's, modeled as Gen4 drives (7 GB/s, 1.4 M IOPS each) over an
# image in memory; every runtime runs the same clients (gpuos bench --gpus).
#
#   bench/scaleout.sh BUILD_DIR [RESULTS_DIR [IMAGE_DIR]]
#
# Rows go to RESULTS_DIR/scaleout.csv (default bench/results; bench/results.py
# report makes the page). The image, SCALEOUT_IMG_MIB (2048) of random bytes,
# in IMAGE_DIR (default /dev/shm). Without a GPU the runtimes run on CPU
# threads and the rows say so.
set -u
build=${1:?usage: bench/scaleout.sh BUILD_DIR [RESULTS_DIR [IMAGE_DIR]]}
here=$(cd "$(dirname "$0")" && pwd)
res=${2:-$here/results}
imgdir=${3:-/dev/shm}
g=$build/gpuos
[ -x "$g" ] || { echo "scaleout: $g is missing: make BUILD=$build all" >&2; exit 2; }
img=$imgdir/gpuos-scaleout-$$.img
trap 'rm -f "$img"' EXIT
mkdir -p "$res"
add() { python3 "$here/results.py" add "$@"; }
export GPUOS_QUIET_HOST=1

ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
host=
if [ "$ngpu" -ge 2 ]; then
	two=0,1 where="GPUs 0 and 1"
elif [ "$ngpu" -eq 1 ]; then
	two=0,0 where="both on GPU 0 (one GPU here)"
else
	two=0,0 where="both on CPU threads (no GPU here)" host=--host
fi
echo "# scale-out, $(date -u +%Y-%m-%dT%H:%MZ), $ngpu GPUs: two runtimes on $where"
head -c $(( ${SCALEOUT_IMG_MIB:-2048} << 20 )) /dev/urandom > "$img" || exit 1
model="gbps=7,iops=1400000,queues=64,workers=4"
src="modeled Gen4 SSDs over memory (7 GB/s, 1.4 M IOPS each)"

# one NAME SSDS GPUS: the 4 KiB and the 1 MiB run of one shape, each added
# as a row (1x1 the baseline of the others).
one() {
	local name=$1 ssds=$2 gpus=$3 dev base=1x1 what
	dev="emu:$img,ssds=$ssds,$model"
	[ "$ssds" -eq 1 ] && dev="emu:$img,$model"
	[ "$name" = 1x1 ] && base=-
	what="$(echo "$gpus" | tr ',' '\n' | wc -l) runtime(s) on GPU $gpus, $ssds SSD(s)"
	[ -n "$host" ] && what="$what (CPU threads)"
	local a4="--warps 8 --queues 16 --depth 1024 --slots 256 --mbox-slots 8192 --threads 4096 --iters 40 --bytes 4096"
	local a1="--warps 8 --queues 16 --depth 256 --slots 64 --threads 256 --iters 16 --bytes 1M"
	# shellcheck disable=SC2086 # the argument lists split on purpose
	timeout 180 "$g" bench --device "$dev" --gpus "$gpus" $host $a4 --json |
		add "$res/scaleout.csv" scaleout "$name" "$what" "$src" "$base" \
			"gpuos bench --device ${dev/$img/IMG} --gpus $gpus $a4" \
			iops=requests_per_s:reads/s lat_p99_us=lat_p99_us:us || return 1
	# shellcheck disable=SC2086
	timeout 180 "$g" bench --device "$dev" --gpus "$gpus" $host $a1 --json |
		add "$res/scaleout.csv" scaleout "$name" "$what" "$src" "$base" \
			"gpuos bench --device ${dev/$img/IMG} --gpus $gpus $a1" \
			gb_per_s=gb_per_s:GB/s || return 1
}
one 1x1 1 0 || exit 1
one 2x1 1 "$two" || exit 1
one 1x4 4 0 || exit 1
one 2x4 4 "$two" || exit 1
echo "scaleout: rows in $res/scaleout.csv"
tail -n 8 "$res/scaleout.csv"
