#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A safetensors checkpoint into VRAM (issue 33): gpuos (open_model + load of
# every tensor, the Python binding) against the safetensors package's own
# loader (safetensors.torch.load_file(device="cuda")) in the same process,
# on the same bytes, each the median of ST_ROUNDS (3) rounds.
#
#   bench/safetensors.sh BUILD_DIR [RESULTS_DIR [DIR]]
#
# The checkpoint: bench/safetensors_load.py write, bf16, Llama-7B-shaped
# tensors with Hugging Face names, ST_LAYERS (10) layers: 4.57 GB. It lies
# in DIR (tmpfs, default /dev/shm) twice: the file itself, which the
# safetensors package reads (mmap, then copies to the GPU), and inside an
# ext4 image made from it as bench/layers.sh makes its images, which gpuos
# reads through emu: (the ram backend unless ST_DEVICE_OPTS says otherwise,
# e.g. ",backend=uring,workers=8"). Both are in memory for every round:
# there is no cold case here (tmpfs cannot drop its pages), and the rows
# say "tmpfs". ST_SYS_OPTS: System() options for gpuos ("warps=4,queues=16").
#
# Rows go to RESULTS_DIR/safetensors.csv (default bench/results; bench/results.py
# report makes the page). GPUOS_BENCH_SMALL=1: a checkpoint of a few MB,
# and without a GPU, PyTorch or the safetensors package the runtime in host
# mode against numpy reads (a dry run of the script: its rows say so).
set -u
build=${1:?usage: bench/safetensors.sh BUILD_DIR [RESULTS_DIR [DIR]]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
res=${2:-$here/results}
dir=${3:-/dev/shm}
lib=$build/lib/libgpuos.so
[ -f "$lib" ] || { echo "safetensors: $lib is missing: make BUILD=$build lib" >&2; exit 2; }
work=$dir/gpuos-st-$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$res" || exit 2
export GPUOS_QUIET_HOST=1 GPUOS_LIBRARY=$(cd "$(dirname "$lib")" && pwd)/libgpuos.so
# libgpuos.so's own libraries on the GPU machine (make gpu-build carries them)
export LD_LIBRARY_PATH=$build/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "${GPUOS_BENCH_SMALL:-0}" = 1 ]; then
	shape="--layers 2 --hidden 512 --inter 1376 --vocab 1000"
else
	shape="--layers ${ST_LAYERS:-10}"
fi
echo "# safetensors into VRAM, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no GPU')"
timeout 300 python3 "$here/safetensors_load.py" write "$work/src/model.safetensors" $shape ||
	{ echo "safetensors: the writer failed" >&2; exit 2; }
bytes=$(stat -c %s "$work/src/model.safetensors")
timeout 300 mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum,^has_journal -d "$work/src" "$work/model.img" \
	$(( bytes / 1048576 + 256 ))M || { echo "safetensors: mke2fs failed" >&2; exit 2; }
timeout 500 python3 "$here/safetensors_load.py" run --image "$work/model.img" --file "$work/src/model.safetensors" \
	--rounds "${ST_ROUNDS:-3}" --device-opts "${ST_DEVICE_OPTS:-}" --opts "${ST_SYS_OPTS:-}" --json "$work/out.json"
rc=$?
[ -s "$work/out.json" ] || { echo "safetensors: no result (exit $rc)" >&2; exit 1; }
[ $rc -eq 0 ] || { echo "safetensors: the two loaders' tensors differ: no rows written" >&2; exit 1; }
desc=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%d tensors, %.2f GB, bf16" % (j["tensors"], j["bytes"] / 1e9))' "$work/out.json")
base=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["baseline"])' "$work/out.json")
mode=$(python3 -c 'import json,sys; print("VRAM" if json.load(open(sys.argv[1]))["gpu"] else "host memory, host mode")' "$work/out.json")
cmd="bench/safetensors.sh BUILD${ST_DEVICE_OPTS:+ (ST_DEVICE_OPTS=$ST_DEVICE_OPTS)}${ST_SYS_OPTS:+ (ST_SYS_OPTS=$ST_SYS_OPTS)}"
[ "${GPUOS_BENCH_SMALL:-0}" = 1 ] && cmd="GPUOS_BENCH_SMALL=1 $cmd"
python3 "$here/results.py" add "$res/safetensors.csv" safetensors safetensors-load_file \
	"(a) $base, $desc" "tmpfs" - "$cmd" gb_per_s=st_gb_per_s:GB/s < "$work/out.json" || exit 1
python3 "$here/results.py" add "$res/safetensors.csv" safetensors gpuos-open-load \
	"(b) gpuos open_model + load() of every tensor into $mode, emu:IMG${ST_DEVICE_OPTS:-}, $desc" "tmpfs" \
	safetensors-load_file "$cmd" gb_per_s=gpuos_gb_per_s:GB/s < "$work/out.json" || exit 1
echo "safetensors: rows in $res/safetensors.csv"
tail -4 "$res/safetensors.csv"
