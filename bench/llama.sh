#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The llama engine's speed (issue 19, docs/benchmarks.md "The llama engine"):
# a 70B-shaped model (8192 wide, 28672 FFN, 64 heads over 8 KV heads, 80
# layers; random Q4_K weights with Q6_K for attn_v, ffn_down and the
# output head, as Q4_K_M) generated on the GPU machine by
# tests/tools/llama_derive.py --tile, in an ext4 image, and the engine on
# the GPU:
#   ram       every layer streamed for every token from emu:'s ram backend
#   ssd4      the same from 4 modeled Gen4 SSDs (7 GB/s, 1.4 M IOPS each)
#   resident  every layer resident in VRAM (loaded once before the clock)
#   vram      as many layers resident as --vram-gib $LLAMA_VRAM_GIB (default
#             20: a 24 GB card) allows, the others streamed from emu:'s ram
#   d2d       HBM: cudaMemcpy of a layer's bytes VRAM to VRAM
#             (bench/baselines d2d), many times
#   CASE-bN   a case above at --batch N (N sequences decoded together: each
#             layer read once serves N tokens), e.g. vram-b16
#   products  the resident case's products: a layer's bytes over its compute
#             time (--timeline), median over the layers, against d2d's rate;
#             and over the four products' steps alone ("timeline: steps")
#   mmap      the baseline: the same layers through mmap + memcpy into
#             pinned memory + cudaMemcpyAsync, double-buffered, a kernel per
#             layer (bench/layer_base.cu --path mmap): the time of one pass
#             is the least a token takes on that path
#   h2d       the link: cudaMemcpy from pinned memory (bench/baselines h2d);
#             bytes per token / this rate is the ceiling of any streamed token
# Each case's report goes to RESULTS/llama/CASE.txt, one TSV line per case to
# RESULTS/llama/summary.tsv (case, layers, resident, tokens/s a sequence,
# ms, bytes streamed, GB/s, ms waited, batch, tokens/s in all), the last token's per-layer timeline (--timeline)
# to RESULTS/llama/CASE.timeline, and RESULTS/llama/timeline.gp plots them
# (a PNG too where gnuplot is installed).
#
# Usage: bench/llama.sh BUILD RESULTS [STEP...]
#   STEP: make ram ssd4 resident vram ram-b16 ssd4-b16 resident-b16 vram-b16
#   mmap h2d d2d products plot (default: all, in that order).
#   Device calls last at most 10 minutes: run `make` in one and the others in
#   the next (the model stays in $LLAMA_DIR while the machine stays warm).
# Environment: LLAMA_DIR (work folder, default /tmp/gpuos-llama: the image
# there, the GGUF in /dev/shm), LLAMA_LAYERS (default: 80, fewer when the
# disk or memory would not hold two copies), LLAMA_EMU (more emu: options
# for the engine's cases, such as backend=file), LLAMA_GRID and LLAMA_BLOCK
# (default: the SM count and 512), LLAMA_APP (another build of the engine's
# cubin, such as a -DLLAMA_UNIT= variant, to measure beside it), LLAMA_SHAPE=small (a
# 1024-wide, 8-layer model: to try the script in host mode, LLAMA_HOST=1).
set -u
build=${1:?usage: bench/llama.sh BUILD RESULTS [STEP...]}
results=${2:?usage: bench/llama.sh BUILD RESULTS [STEP...]}
shift 2
steps=${*:-make ram ssd4 resident vram ram-b16 ssd4-b16 resident-b16 vram-b16 mmap h2d d2d products plot}
root=$(cd "$(dirname "$0")/.." && pwd)
g=$build/gpuos
dir=${LLAMA_DIR:-/tmp/gpuos-llama}
shm=/dev/shm/gpuos-llama/src   # the GGUF, and what mke2fs -d copies
out=$results/llama
mkdir -p "$dir" "$shm" "$out"
tiny=$root/../shared/testdata/gguf/llama-2-tiny-random.gguf
[ -f "$tiny" ] || tiny=$build/llama-ref/source.gguf   # carried to the GPU machine by make gpu-build
if [ "${LLAMA_SHAPE:-}" = small ]; then
	shape=(--embd 1024 --ff 2816 --heads 8 --kv-heads 2); layers=${LLAMA_LAYERS:-8}
else
	shape=(--embd 8192 --ff 28672 --heads 64 --kv-heads 8); layers=${LLAMA_LAYERS:-80}
fi
if [ -n "${LLAMA_HOST:-}" ]; then
	app=$build/apps/llama.so; mode=(--host); geom=(--grid 1 --block 2)
else
	app=${LLAMA_APP:-$build/apps/llama.cubin}; mode=(--require-gpu)
	# nvidia-smi has no field for it: CUDA's count, through PyTorch or CuPy
	sms=$(python3 -c 'import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)' 2>/dev/null |
		grep -E '^[0-9]+$' ||
		python3 -c 'import cupy; print(cupy.cuda.Device(0).attributes["MultiProcessorCount"])' 2>/dev/null |
		grep -E '^[0-9]+$')
	# one block an SM (the engine's grid barrier needs every block
	# resident), less 12 SMs for the runtime's warps and the emulator's
	# gather kernel (with a block on every SM the first read never lands:
	# docs/benchmarks.md); 512 threads: 16 warps an SM take rows of the
	# products (issue 34)
	grid=64
	[ -n "$sms" ] && [ "$sms" -gt 24 ] && grid=$((sms - 12))
	geom=(--grid "${LLAMA_GRID:-$grid}" --block "${LLAMA_BLOCK:-512}")
	[ -n "$sms" ] || echo "llama bench: no SM count from PyTorch or CuPy: --grid ${LLAMA_GRID:-64}"
fi
say() { echo "llama bench: $*"; }

# bytes of the model at this shape: a layer, and all
sizes() {
	python3 - "${shape[@]}" "$layers" <<'PY'
import sys
a = dict(zip(sys.argv[1:-1:2], map(int, sys.argv[2:-1:2]))); L = int(sys.argv[-1])
e, f, kvd = a["--embd"], a["--ff"], a["--embd"] // a["--heads"] * a["--kv-heads"]
q4, q6 = 144 / 256, 210 / 256
layer = int((2 * e * e + e * kvd + 2 * e * f) * q4 + (e * kvd + f * e) * q6 + 8 * e)
print(layer, layer * L + int(32000 * e * (q4 + q6)))
PY
}

step_make() {
	[ -s "$dir/table.txt" ] && [ -s "$shm/m.gguf" ] && { say "the model is there"; return 0; }
	local layer total shm_free disk_free ram
	read -r layer total < <(sizes)
	shm_free=$(df -B1 --output=avail "$shm" | tail -1); disk_free=$(df -B1 --output=avail "$dir" | tail -1)
	ram=$(awk '/MemAvailable/ {printf "%d", $2 * 1024}' /proc/meminfo)
	# the GGUF in /dev/shm and the ram backend's copy of the image both in memory
	while [ "$layers" -gt 1 ] && { [ $((total + (1 << 30))) -gt "$shm_free" ] ||
		[ $((total + (2 << 30))) -gt "$disk_free" ] || [ $((2 * total + (8 << 30))) -gt "$ram" ]; }; do
		layers=$((layers - 1)); read -r layer total < <(sizes)
	done
	say "the model: $layers layers of $((layer >> 20)) MiB, $((total >> 20)) MiB (shm $((shm_free >> 30)) GiB, disk $((disk_free >> 30)) GiB, memory $((ram >> 30)) GiB free)"
	local t0=$SECONDS
	python3 "$root/tests/tools/llama_derive.py" "$tiny" "$shm/m.gguf" --type Q4_K --mix q4_k_m --tile \
		"${shape[@]}" --layers "$layers" --seed 70 || return 1
	say "written in $((SECONDS - t0)) s"; t0=$SECONDS
	# no metadata checksums or journal: mke2fs -d spends minutes on them at this size
	timeout 900 mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum,^has_journal -d "$shm" "$dir/model.img" \
		$(( $(stat -c %s "$shm/m.gguf") / 1048576 + 1024 ))M || return 1
	say "image in $((SECONDS - t0)) s"
	# the layer table of the baseline: "LAYER RANK ABS_OFFSET BYTES", file order
	GPUOS_QUIET_HOST=1 "$g" gguf --host --json --device "emu:$dir/model.img" /m.gguf > "$dir/model.json" || return 1
	python3 "$root/bench/layer_table.py" "$dir/model.json" > "$dir/table.txt" || return 1
}

# CASE DEVICE APP_OPTIONS...: one engine run; 2 tokens after a 1-token prompt
engine() {
	local name=$1 dev=$2 vmib; shift 2
	vmib=$(( $(stat -c %s "$shm/m.gguf") / 1048576 + 2048 ))
	say "$name: gpuos run llama --device $dev ${geom[*]} -- /m.gguf --prompt-ids 1 --tokens 2 $*"
	timeout 560 "$g" run "$app" "${mode[@]}" --device "$dev" --vram-mib "$vmib" --heap-mib 512 "${geom[@]}" -- \
		/m.gguf --prompt-ids 1 --tokens 2 --ignore-eos --timeline "$@" > "$out/$name.txt" 2>&1
	local rc=$?
	grep -E '^(llama|tokens)( batch [0-9]+)?:' "$out/$name.txt"
	[ $rc -eq 0 ] || { tail -5 "$out/$name.txt"; return 1; }
	grep '^timeline: [0-9]' "$out/$name.txt" | cut -d' ' -f2- > "$out/$name.timeline"
	python3 - "$out/$name.txt" "$name" >> "$out/summary.tsv" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"^llama: (\d+) layers \((\d+) resident.*?, (\d+) tokens.* in ([\d.]+) ms: ([\d.]+) tokens/s .*streamed (\d+) bytes at ([\d.]+) GB/s over the run, compute waited ([\d.]+) ms", t, re.M)
if not m:
    sys.exit("no report in " + sys.argv[1])
L, R, n, ms, tps, b, gbs, stall = m.groups()
bt = re.search(r"^llama: batch (\d+): ([\d.]+) tokens/s in all", t, re.M)
nb, total = bt.groups() if bt else ("1", tps)
print("\t".join([sys.argv[2], L, R, tps, ms, b, gbs, stall, nb, total]))
PY
}

for s in $steps; do
	case $s in
	make) step_make || { say "making the model failed"; exit 1; } ;;
	ram) engine ram "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" || exit 1 ;;
	ssd4) engine ssd4 "emu:$dir/model.img,ssds=4,gbps=7,iops=1400000${LLAMA_EMU:+,$LLAMA_EMU}" || exit 1 ;;
	resident) engine resident "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" --vram-gib 4096 || exit 1 ;;
	vram) engine vram "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" --vram-gib "${LLAMA_VRAM_GIB:-20}" || exit 1 ;;
	d2d)
		read -r layer _ < <(sizes)
		"$build/bench/baselines" d2d --chunk-mib $(( (layer >> 20) + 1 )) --total-mib 65536 > "$out/d2d.json" || exit 1
		python3 -c 'import json, sys; print("llama bench: HBM copy: %.1f GB/s" % json.load(open(sys.argv[1]))["gb_per_s"])' "$out/d2d.json" ;;
	products)
		# a resident layer's weights over its compute time, from the resident
		# case's timeline (LAYER resident - - BEGIN END, microseconds)
		read -r layer _ < <(sizes)
		python3 - "$out/resident.timeline" "$layer" "$out/d2d.json" "$out/resident.txt" > "$out/products.json" <<'PY' || exit 1
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[1:3] == ["resident", "-"]]
us = [float(r[5]) - float(r[4]) for r in rows if float(r[5]) > float(r[4])]
if not us:
    sys.exit("products: no resident layer in " + sys.argv[1])
layer = int(sys.argv[2]); med = statistics.median(us)
gbs = layer / (med * 1e-6) / 1e9
d2d = json.load(open(sys.argv[3]))["gb_per_s"]
out = {"layer_bytes": layer, "layers": len(us), "compute_us_median": med, "compute_us_min": min(us),
       "products_gb_per_s": round(gbs, 1), "d2d_gb_per_s": round(d2d, 1), "ratio_to_d2d": round(gbs / d2d, 3)}
# the steps of a layer (the engine's "timeline: steps" line): the four
# products' own time, without the barriers' waits of the other steps
steps = {}
for line in open(sys.argv[4]):
    if line.startswith("timeline: steps"):
        steps = {k: float(v) for k, v in (w.split("=") for w in line.split(":", 2)[2].split())}
if steps:
    p_us = sum(steps.get(k, 0.0) for k in ("qkv", "o", "gate_up", "down"))
    out.update({"steps_us": steps, "products_only_us": round(p_us, 1),
                "products_only_gb_per_s": round(layer / (p_us * 1e-6) / 1e9, 1),
                "products_only_ratio_to_d2d": round(layer / (p_us * 1e-6) / 1e9 / d2d, 3)})
print(json.dumps(out))
PY
		python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print("llama bench: products: %.1f GB/s (a layer in %.0f us, median of %d), %.2f of the HBM copy (%.1f GB/s)" % (j["products_gb_per_s"], j["compute_us_median"], j["layers"], j["ratio_to_d2d"], j["d2d_gb_per_s"])); "steps_us" in j and print("llama bench: the products alone (qkv, o, gate_up, down: %.0f us a layer): %.1f GB/s, %.2f of the HBM copy; steps (us): %s" % (j["products_only_us"], j["products_only_gb_per_s"], j["products_only_ratio_to_d2d"], " ".join("%s=%s" % kv for kv in j["steps_us"].items())))' "$out/products.json" ;;
	mmap)
		say "mmap: layer-base m.gguf --table --path mmap (one pass over every layer)"
		timeout 560 "$build/bench/layer-base" "$shm/m.gguf" --table "$dir/table.txt" --path mmap > "$out/mmap.json" ||
			exit 1
		python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print("llama bench: mmap: %.1f ms a pass, %.2f GB/s" % (j["ms_per_token"], j["load_gb_per_s"]))' "$out/mmap.json" ;;
	h2d)
		"$build/bench/baselines" h2d --chunk-mib 8 --total-mib 4096 > "$out/h2d.json" || exit 1
		python3 -c 'import json, sys; print("llama bench: link: %.2f GB/s" % json.load(open(sys.argv[1]))["gb_per_s"])' "$out/h2d.json" ;;
	plot)
		{
			echo "set terminal pngcairo size 1200,500; set output 'timeline.png'"
			echo 'set title "llama engine, the last token: each layer'"'"'s load (posted to landed) and compute"'
			echo 'set xlabel "ms from the start of the token"; set ylabel "layer"; set key outside'
			plots=()
			dy=0 # each case a little above the one before, so that none hides another
			for c in ram ssd4 resident; do
				[ -s "$out/$c.timeline" ] || continue
				plots+=("'$c.timeline' using (\$2/1000):(\$1+$dy):(\$3/1000-\$2/1000):(0) with vectors nohead lw 3 title '$c load'")
				plots+=("'$c.timeline' using (\$4/1000):(\$1+$dy):(\$5/1000-\$4/1000):(0) with vectors nohead lw 1 title '$c compute'")
				dy=$(awk -v d="$dy" 'BEGIN { print d + 0.25 }')
			done
			(IFS=,; echo "plot ${plots[*]}")
		} > "$out/timeline.gp"
		if command -v gnuplot > /dev/null; then (cd "$out" && gnuplot timeline.gp) && say "plot: $out/timeline.png"
		else say "plot: gnuplot is not installed here: $out/timeline.gp only"; fi ;;
	*-b[0-9]*)
		# CASE-bN: a case at --batch N (ram, ssd4, resident, vram)
		local_nb=${s##*-b}
		case ${s%-b*} in
		ram) engine "$s" "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" --batch "$local_nb" || exit 1 ;;
		ssd4) engine "$s" "emu:$dir/model.img,ssds=4,gbps=7,iops=1400000${LLAMA_EMU:+,$LLAMA_EMU}" --batch "$local_nb" || exit 1 ;;
		resident) engine "$s" "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" --vram-gib 4096 --batch "$local_nb" || exit 1 ;;
		vram) engine "$s" "emu:$dir/model.img${LLAMA_EMU:+,$LLAMA_EMU}" --vram-gib "${LLAMA_VRAM_GIB:-20}" --batch "$local_nb" || exit 1 ;;
		*) say "unknown step $s"; exit 2 ;;
		esac ;;
	*) say "unknown step $s"; exit 2 ;;
	esac
done
