#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Layer streaming of a 70B-shaped model (issue 12): 80 layers of LAYER_MIB
# MiB (tests/tools/gguf_writer.py --layer-mib) in an ext4 image on tmpfs,
# streamed by apps/layer_stream through the ram backend, against the
# link's line rate (bench/baselines h2d) measured in the same call.
#
#   bench/layers.sh BUILD_DIR [DIR]      (DIR: tmpfs with room, /dev/shm)
#
# The image is made without metadata_csum and journal: mke2fs -d spends
# most of its time on checksums (over 1.5 minutes for 9 GB on the GPU
# machine), and the runtime reads only a few metadata blocks either way.
set -u
build=${1:?usage: bench/layers.sh BUILD_DIR [DIR]}
dir=${2:-/dev/shm}
layers=${LAYERS:-80}
mib=${LAYER_MIB:-110}
g=$build/gpuos
b=$build/bench/baselines
work=$dir/gpuos-layers-$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
echo "# gpuos layer streaming, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no GPU')"
echo "## model: $layers layers of $mib MiB"
timeout 300 python3 tests/tools/gguf_writer.py --case demo --layers "$layers" --layer-mib "$mib" "$work/src/model.gguf" \
	--json "$work/model.json" > /dev/null || { echo "layers: the writer failed" >&2; exit 2; }
bytes=$(stat -c %s "$work/src/model.gguf")
echo "   $bytes bytes"
timeout 300 mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum,^has_journal -d "$work/src" "$work/model.img" \
	$(( bytes / 1048576 + 512 ))M || { echo "layers: mke2fs failed" >&2; exit 2; }
rm -f "$work/src/model.gguf"
echo "## baseline: cudaMemcpy H2D, pinned, 8 MiB chunks"
"$b" h2d --chunk-mib 8 --total-mib 4096 | tee "$work/h2d.json"
for opts in "" ",workers=4"; do
	echo "## layer_stream --grid 32 --block 256, emu:IMG$opts"
	timeout 300 "$g" run "$build/apps/layer_stream.cubin" --device "emu:$work/model.img$opts" --grid 32 --block 256 -- /model.gguf \
		> "$work/ls.out" 2>&1
	echo "   exit $?"
	tail -4 "$work/ls.out"
	python3 - "$work/h2d.json" "$work/ls.out" <<'PY'
import json, re, sys
h2d = json.load(open(sys.argv[1]))["gb_per_s"]
out = open(sys.argv[2]).read()
m = re.search(r"loads ([\d.]+) GB/s", out)
o = re.search(r"(\d+)% of the compute time was hidden", out)
if not m:
    sys.exit("layers: no load rate in layer_stream's report")
print("loads %.2f GB/s = %.3f of H2D %.2f GB/s; compute hidden %s%%" % (float(m.group(1)), float(m.group(1)) / h2d, h2d,
      o.group(1) if o else "?"))
PY
done
