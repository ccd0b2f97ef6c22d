#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: the rows of docs/benchmarks.md, each against its baseline in the
# same run, as bench/results/*.csv (bench/results.py), then the page and its
# plots (docs/plots/). Without a usable GPU the host-mode rows run and every
# other section is skipped by name.
#
#   bench/all.sh BUILD_DIR [DATA_DIR [DISK_DIR]]
#
# DATA_DIR holds the in-memory test files (default /dev/shm where it exists,
# else BUILD_DIR); DISK_DIR those on the machine's disk, read cold with
# O_DIRECT (default BUILD_DIR). BENCH_RAND_MIB sizes the random-read file
# (default 1024 with a GPU, 256 without); BENCH_LAYERS and BENCH_LAYER_MIB
# the model (80 x 104 MiB). BENCH_ONLY="1 3" runs those sections only
# (1, 2, 3, 4, x for the cross-process rows, f for the fragmented file),
# keeping the other sections' CSVs, so that a machine that allows 10 minutes
# a command runs it in parts.
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
only=${BENCH_ONLY:-1 2 3 4 x f}
want() { [[ " $only " == *" $1 "* ]]; }
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
# Start the chosen sections afresh: their CSVs, and their lines of the
# shared files. A section's committed rows are set aside, not deleted: one
# this machine cannot measure at all (no GPU here) gets them back, and one
# measured in part gets back the rows it has no new row for (restore_kept:
# section 2's gpu-null and array rows on a machine without a GPU), so that
# `make bench` without a GPU never drops the GPU's.
keep=$res/.kept.$$
mkdir -p "$keep"
set_aside() { local f; for f in "$@"; do [ -f "$res/$f" ] && mv "$res/$f" "$keep/$f"; done; return 0; }
set_aside_sums() {
	grep "^$1	" "$res/checksums.txt" > "$keep/sums.$1" 2> /dev/null
	sed -i "/^$1\t/d" "$res/checksums.txt" 2> /dev/null
	return 0
}
restore_kept() {
	local f b n
	for f in "$keep"/*.csv "$keep"/*.tsv; do
		[ -f "$f" ] || continue
		b=$(basename "$f")
		if [ -s "$res/$b" ]; then # measured here: this run's rows, and the committed ones it has none of
			[ "${b%.csv}" = "$b" ] && continue
			n=$(python3 "$here/results.py" keep "$res/$b" "$f" "$res/checksums.txt" "$keep/sums.${b%.csv}") ||
				{ echo "bench: could not merge the committed rows of bench/results/$b back (git has them)" >&2; continue; }
			[ "$n" -gt 0 ] && echo "bench: kept $n committed rows of bench/results/$b that could not be measured here"
			rm -f "$f"
			continue
		fi
		mv "$f" "$res/$b"
		echo "bench: kept the committed bench/results/$b: none of its rows could be measured here"
		case $b in
		datapath.csv) cat "$keep/sums.datapath" >> "$res/checksums.txt" 2> /dev/null ;;
		layers.csv) cat "$keep/sums.layers" >> "$res/checksums.txt" 2> /dev/null ;;
		esac
	done
	return 0
}
for sec in $only; do
	case $sec in
	1) set_aside datapath.csv; set_aside_sums datapath ;;
	2) set_aside random4k.csv ;;
	3) set_aside layers.csv layers-timeline.tsv; set_aside_sums layers ;;
	4) set_aside runtime.csv ;;
	x) set_aside xproc.csv ;;
	f) set_aside fragmented.csv ;;
	esac
	sed -i "/^$sec\. /d" "$res/skipped.txt" 2> /dev/null
	[ "$sec" = x ] && sed -i '/^GPU clients in other processes/d' "$res/skipped.txt" 2> /dev/null
done

# ---- 2. random 4 KiB reads ------------------------------------------------------
mib=${BENCH_RAND_MIB:-$([ $gpu -eq 1 ] && echo 1024 || echo 256)}
file=$data/gpuos-bench-rand-$$.img
disk=$diskdir/gpuos-bench-rand-$$.img
mdir=$data/gpuos-bench-model-$$
ddir=$diskdir/gpuos-bench-model-$$
trap 'restore_kept; rm -rf "$file" "$disk" "$mdir" "$ddir" "$data/gpuos-bench-frag-$$" "$res"/one.* "$keep" $udev_made' EXIT
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
if want 2; then
	head -c $((mib << 20)) /dev/urandom > "$file" || { echo "bench: cannot write $file" >&2; exit 1; }
	cp "$file" "$disk" || { echo "bench: cannot write $disk" >&2; exit 1; }
	cat "$file" > /dev/null # the page cache holds it: the source is memory for every path
	rand4k "page cache" "$file" 1 "" || exit 1
	# From the disk: cold for both (caches dropped where we may), O_DIRECT.
	if echo 3 > /proc/sys/vm/drop_caches 2> /dev/null && "$b" rand "$disk" --qd 1 --reads 1 --direct > /dev/null 2>&1; then
		rand4k "disk, O_DIRECT" "$disk" 10 --direct || exit 1
	else
		skip "2. random 4 KiB reads from the disk (no O_DIRECT on $diskdir, or caches cannot be dropped here)"
	fi
	rm -f "$file" "$disk"
fi
if ! want 2; then
	:
elif [ $gpu -eq 0 ]; then
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
if ! want 4; then
	:
elif [ $gpu -eq 0 ]; then
	skip "4. runtime ceiling and latency on gpu-null (needs a GPU)"
else
	for op in read nop; do
		cmd="gpuos bench --device gpu-null --threads 1 --iters 20000 --op $op"
		"$g" bench --device gpu-null --threads 1 --iters 20000 --op $op --json |
			add "$res/runtime.csv" runtime "round-trip-$op" "gpuos, gpu-null" "none" - "$cmd" \
				round_trip_us=lat_median_us:us || exit 1
	done
	# The runtime is W service warps and a metadata warp, one block of 32
	# threads each: with fewer blocks than SMs the block scheduler puts each
	# on an SM of its own, so it occupies min(W + 1, SMs) SMs.
	sms=$("$b" h2d --chunk-mib 1 --total-mib 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sms"])') || exit 1
	for w in 1 16 64 128; do
		cmd="gpuos bench --device gpu-null --warps $w --queues $((w * 2)) --depth 1024 --slots 256 --mbox-slots $((w * 1024)) --threads $((w * 1024)) --iters 200"
		"$g" bench --device gpu-null --warps $w --queues $((w * 2)) --depth 1024 --slots 256 \
			--mbox-slots $((w * 1024)) --threads $((w * 1024)) --iters 200 --json |
			python3 -c 'import json,sys; j=json.loads(sys.stdin.readline()); j["per_sm"]=j["requests_per_s"]/min(int(sys.argv[1]),int(sys.argv[2])); print(json.dumps(j))' \
				$((w + 1)) "$sms" |
			add "$res/runtime.csv" runtime "W=$w" "gpuos, gpu-null, 4 KiB READ_RAW, $((w + 1)) SMs of $sms" "none" - "$cmd" \
				requests_per_s=requests_per_s:requests/s requests_per_s_per_sm=per_sm:requests/s/SM || exit 1
	done
fi

# ---- GPU clients in other processes ---------------------------------------------------
if ! want x; then
	:
elif [ $gpu -eq 0 ] || ! command -v nvidia-cuda-mps-control > /dev/null; then
	skip "GPU clients in other processes (need a GPU and MPS)"
else
	XPROC_RESULTS=$res/xproc.csv bash "$here/xproc.sh" "$build" || exit 1
fi

# ---- the model of sections 1 and 3 -------------------------------------------------------
# An 80-layer, llama-2-70B-shaped GGUF (tests/tools/gguf_writer.py --layer-mib):
# BENCH_LAYER_MIB (104) MiB a layer, 8.2 GiB in all, scaled down from 70B's
# 40 GB at Q4_K so that every path's copy fits in memory and VRAM at once.
# gpuos reads it from an ext4 image (users keep models in file systems); the
# CPU paths read the GGUF itself; every path's VRAM copy is checksummed.
layers=${BENCH_LAYERS:-80}
layer_mib=${BENCH_LAYER_MIB:-104}
H2D=
make_model() { # once; 0 when $mdir holds model.gguf, model.json, table.txt and model.img
	[ -s "$mdir/model.img" ] && return 0
	mkdir -p "$mdir/src" || return 1
	echo "## the model: $layers layers of $layer_mib MiB"
	timeout 600 python3 "$root/tests/tools/gguf_writer.py" --case demo --layers "$layers" --layer-mib "$layer_mib" \
		"$mdir/src/model.gguf" --json "$mdir/model.json" > /dev/null || return 1
	python3 "$here/layer_table.py" "$mdir/model.json" > "$mdir/table.txt" || return 1
	local bytes
	bytes=$(stat -c %s "$mdir/src/model.gguf")
	echo "   $bytes bytes"
	# No metadata checksums or journal: mke2fs -d spends minutes on them at
	# this size, and the runtime reads only a few metadata blocks either way.
	timeout 600 mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum,^has_journal -d "$mdir/src" "$mdir/model.img" \
		$(( bytes / 1048576 + 512 ))M || return 1
	mv "$mdir/src/model.gguf" "$mdir/model.gguf" && rmdir "$mdir/src"
}
# drop: write back and drop the page cache (0), or say it cannot (1).
drop() { sync && echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; }
# gpuos_run OUT RUN_ARGS...: `gpuos run` of an app, its report and host-CPU line in OUT.
gpuos_run() {
	local out=$1
	shift
	timeout 300 "$g" run "$@" > "$out" 2>&1
}

# ---- 1. the same file, the same bytes, into VRAM ------------------------------------------
# keep_sum SOURCE NAME: the VRAM checksum of $res/one.json, for the check
# that every path's copy is the same (results.py checksums).
keep_sum() {
	printf 'datapath\t%s\t%s\t%s\n' "$1" "$2" \
		"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sum"])' "$res/one.json")" >> "$res/checksums.txt"
}
# cpu_row NAME PATH_TEXT CMD...: one CPU path from $src, its checksum kept
cpu_row() {
	local name=$1 text=$2
	shift 2
	[ "$src" = "disk, cold" ] && drop
	if ! timeout 300 "$@" > "$res/one.json" 2> "$res/one.err"; then
		skip "1. $name from $src: $(tail -c 200 "$res/one.err" | tr '\n' ' ')"
		return 0
	fi
	cmd="$(basename "$1") ${*:2}"
	cmd=${cmd//$mdir/DIR}
	add "$res/datapath.csv" datapath "$name" "$text" "$src" - "${cmd//$ddir/DISKDIR}" \
		gb_per_s=gb_per_s:GB/s cpu_s_per_gb=cpu_s_per_gb:s/GB < "$res/one.json" || return 1
	keep_sum "$src" "$name"
}
# gpuos_row NAME PATH_TEXT SOURCE BASELINE DEVICE: apps/file_load through `gpuos run`
gpuos_row() {
	local name=$1 text=$2 rsrc=$3 base=$4 dev=$5
	[ "$rsrc" = "disk, cold" ] && drop
	cmd="gpuos run file_load.cubin --device $dev --vram-mib $vmib $FILE_GEOM -- /model.gguf"
	if ! gpuos_run "$res/one.out" "$build/apps/file_load.cubin" --device "$dev" --vram-mib "$vmib" $FILE_GEOM \
		-- /model.gguf; then
		skip "1. $name from $rsrc: $(grep -v '^gpuos:' "$res/one.out" | tail -3 | tr '\n' ' ')"
		return 0
	fi
	python3 "$here/results.py" runjson "$H2D" < "$res/one.out" > "$res/one.json" || return 1
	cmd=${cmd//$mdir/DIR}
	add "$res/datapath.csv" datapath "$name" "$text" "$rsrc" "$base" "${cmd//$ddir/DISKDIR}" \
		gb_per_s=gb_per_s:GB/s cpu_s_per_gb=cpu_s_per_gb:s/GB h2d_share=h2d_share:of_H2D < "$res/one.json" || return 1
	keep_sum "$rsrc" "$name"
}

file_rows() {
	local src name f cmd best vmib
	make_model || { echo "bench: could not make the model" >&2; return 1; }
	"$b" h2d --chunk-mib 8 --total-mib 4096 > "$res/one.h2d" || return 1
	H2D=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gb_per_s"])' "$res/one.h2d")
	add "$res/datapath.csv" datapath h2d "cudaMemcpy H2D from pinned memory, 8 MiB" "none" - \
		"baselines h2d --chunk-mib 8 --total-mib 4096" gb_per_s=gb_per_s:GB/s < "$res/one.h2d" || return 1
	vmib=$(( $(stat -c %s "$mdir/model.gguf") / 1048576 + 64 ))
	mkdir -p "$ddir" && cp "$mdir/model.gguf" "$mdir/model.img" "$ddir/" || { echo "bench: cannot copy the model to $ddir" >&2; return 1; }
	for src in tmpfs "page cache" "disk, cold"; do
		case $src in
		tmpfs) f=$mdir ;;
		*) f=$ddir ;;
		esac
		if [ "$src" = "disk, cold" ] && ! drop; then
			skip "1. the whole file from the disk, cold (caches cannot be dropped here)"
			continue
		fi
		[ "$src" = "page cache" ] && cat "$f/model.gguf" "$f/model.img" > /dev/null
		cpu_row mmap "(a) mmap, one thread, memcpy to 2 pinned buffers, H2D" "$b" mmap "$f/model.gguf" --chunk-mib 8 || return 1
		for t in 1 4 8; do
			cpu_row "pread-T$t" "(b) pread, $t threads, pinned, H2D" "$b" pread "$f/model.gguf" --threads $t --chunk-mib 8 || return 1
		done
		if [ "$src" = "disk, cold" ]; then
			cpu_row uring-qd32 "(c) liburing O_DIRECT QD 32 x 1 MiB, H2D" "$b" uring "$f/model.gguf" --qd 32 --bs-kib 1024 --direct || return 1
		else # O_DIRECT would skip the cache (and tmpfs refuses it)
			cpu_row uring-qd32 "(c) liburing buffered QD 32 x 1 MiB, H2D" "$b" uring "$f/model.gguf" --qd 32 --bs-kib 1024 || return 1
		fi
		if [ ! -x "$build/bench/cufile-load" ]; then
			:
		elif [ "$src" = tmpfs ]; then
			skip "1. (d) cuFile from tmpfs: cuFile refuses files without a block device (tmpfs, overlay), in compat mode too"
		elif cufile_udev "$f"; then
			cpu_row cufile "(d) cuFile into VRAM, 8 threads x 16 MiB, $(cufile_mode)$([ "$src" = "page cache" ] && echo ', buffered')" \
				"$build/bench/cufile-load" "$f/model.gguf" --threads 8 --chunk-mib 16 \
				$([ "$src" = "page cache" ] && echo --buffered) || return 1
		else
			skip "1. (d) cuFile from $src: no udev record for the disk of $f, and none could be written"
		fi
		best=$(python3 - "$res/datapath.csv" "$src" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["source"] == sys.argv[2] and r["metric"] == "gb_per_s"]
print(max(rows, key=lambda r: float(r["value"]))["name"] if rows else "-")
PY
)
		# The uring backend's reads run on its workers: 8 of them, and 16
		# queues for them, beat the defaults (12.7 against 10.2 GB/s from
		# tmpfs); the ram backend is fastest with one service warp.
		FILE_GEOM=$URING_GEOM
		case $src in
		tmpfs)
			gpuos_row gpuos-uring "(e) gpuos, emu: uring backend (buffered: tmpfs has no O_DIRECT)" tmpfs "$best" \
				"emu:$f/model.img,backend=uring,workers=8" || return 1
			FILE_GEOM=$RAM_GEOM
			gpuos_row gpuos-ram "(f) gpuos, emu: ram backend" tmpfs "$best" "emu:$f/model.img" || return 1
			for n in 1 4; do
				gpuos_row "gpuos-array-$n-gen4" "(g) gpuos, emu: $n modeled Gen4 SSD(s), 7 GB/s and 1.4 M IOPS each" \
					"modeled Gen4 SSDs" - "emu:$f/model.img,ssds=$n,gbps=7,iops=1400000" || return 1
			done ;;
		"page cache")
			gpuos_row gpuos-uring "(e) gpuos, emu: uring backend, direct=0 (through the page cache)" "$src" "$best" \
				"emu:$f/model.img,backend=uring,direct=0,workers=8" || return 1 ;;
		*)
			gpuos_row gpuos-uring "(e) gpuos, emu: uring backend (O_DIRECT)" "$src" "$best" \
				"emu:$f/model.img,backend=uring,workers=8" || return 1 ;;
		esac
	done
	rm -f "$ddir/model.gguf" "$ddir/model.img"
}

# ---- 3. layer streaming ----------------------------------------------------------------------
layer_rows() {
	local r name base vmib per
	make_model || { echo "bench: could not make the model" >&2; return 1; }
	per=$(( (layer_mib * 102 / 100) + 8 ))
	for r in 0 $(( layers / 2 )); do
		: > "$res/one.best"
		for how in mmap uring; do
			name="$how-resident-$r"
			if ! timeout 300 "$build/bench/layer-base" "$mdir/model.gguf" --table "$mdir/table.txt" --path $how \
				--resident $r $([ $how = uring ] && echo --buffered) > "$res/one.json" 2> "$res/one.err"; then
				skip "3. $name: $(tail -c 200 "$res/one.err" | tr '\n' ' ')"
				continue
			fi
			add "$res/layers.csv" layers "$name" \
				"$([ $how = mmap ] && echo "(a) mmap + memcpy + H2D" || echo "(c) liburing QD 32 x 1 MiB, buffered (tmpfs), H2D"), then a kernel per layer" \
				tmpfs - "layer-base MODEL --table TABLE --path $how --resident $r$([ $how = uring ] && echo ' --buffered')" \
				ms_per_token=ms_per_token:ms load_gb_per_s=load_gb_per_s:GB/s < "$res/one.json" || return 1
			python3 "$here/results.py" timeline "$name" < "$res/one.json" >> "$res/layers-timeline.tsv" || return 1
			python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["ms_per_token"], sys.argv[2])' \
				"$res/one.json" "$name" >> "$res/one.best"
		done
		base=$(sort -g "$res/one.best" | head -1 | cut -d' ' -f2)
		vmib=$(( (r + 3) * per + 64 ))
		for dev in "emu:$mdir/model.img" "emu:$mdir/model.img,backend=uring,workers=8"; do
			name="gpuos-$([ "$dev" = "emu:$mdir/model.img" ] && echo ram || echo uring)-resident-$r"
			if ! gpuos_run "$res/one.out" "$build/apps/layer_stream.cubin" --device "$dev" --vram-mib $vmib \
				--grid 32 --block 256 -- /model.gguf $r; then
				skip "3. $name: $(grep -v '^gpuos:' "$res/one.out" | tail -3 | tr '\n' ' ')"
				continue
			fi
			python3 "$here/results.py" runjson "$H2D" < "$res/one.out" > "$res/one.json" || return 1
			add "$res/layers.csv" layers "$name" "gpuos, apps/layer_stream, ${dev//$mdir/DIR}" tmpfs "${base:--}" \
				"gpuos run layer_stream.cubin --device ${dev//$mdir/DIR} --vram-mib $vmib --grid 32 --block 256 -- /model.gguf $r" \
				ms_per_token=ms_per_token:ms load_gb_per_s=load_gb_per_s:GB/s < "$res/one.json" || return 1
			python3 "$here/results.py" timeline "$name" < "$res/one.json" >> "$res/layers-timeline.tsv" || return 1
		done
	done
	# Every path computed the same per-layer checksums.
	python3 "$here/results.py" samesums < "$res/layers-timeline.tsv" >> "$res/checksums.txt" || {
		echo "bench: the layer checksums differ between paths" >&2
		return 1
	}
}

# ---- a file of 50,000 extents -------------------------------------------------------------
# The same 3.5 GB of random bytes twice in one ext4 image: once as written
# (a few extents), once with every 17th block punched out (debugfs): 50,000
# extents of 64 KiB with holes between, the tree three deep. And 3.3 GB of
# other random bytes in 50,000 extents without a hole: a filler file has 16
# of every 17 blocks punched out, and debugfs writes the file into those
# runs. Each is read whole by apps/file_load through the ram backend; the
# rates of the fragmented ones are ratios to the first's.
frag_rows() {
	local w=$data/gpuos-bench-frag-$$ blocks=$((50000 * 17)) n f vm cmd what
	mkdir -p "$w/src" || return 1
	for n in 0 1 2 3 4 5 6 7; do
		dd if=/dev/urandom of="$w/src/contig" bs=4096 count=$((blocks / 8)) seek=$((n * blocks / 8)) conv=notrunc \
			status=none &
		dd if=/dev/urandom of="$w/tight" bs=65536 count=$((50000 / 8)) seek=$((n * 50000 / 8)) conv=notrunc \
			status=none &
	done
	wait
	# the filler: not zeros, which mke2fs -d would leave as holes
	tr '\0' '\377' < /dev/zero | head -c $((blocks * 4096)) > "$w/src/filler"
	cp "$w/src/contig" "$w/src/frag" &&
		mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum,^has_journal -d "$w/src" "$w/img" \
			$((blocks * 12 / 1024 + 256))M || return 1
	rm -rf "$w/src"
	{
		seq 16 17 $((blocks - 1)) | awk '{ print "punch /frag", $1, $1 }'
		seq 0 17 $((blocks - 1)) | awk '{ print "punch /filler", $1, $1 + 15 }'
		echo "write $w/tight /tight"
	} | debugfs -w -f - "$w/img" > /dev/null 2>&1
	rm -f "$w/tight"
	vm=$((blocks * 4 / 1024 + 64))
	for f in contig frag tight; do
		# the extents as gpuos stat lists them, and the largest gap between two
		n=$(GPUOS_QUIET_HOST=1 "$build/gpuos" stat --json --host --device "emu:$w/img,backend=file" /$f | python3 -c '
import json, sys
e = json.load(sys.stdin)["extents"]
gap = max([b["logical"] - a["logical"] - a["blocks"] for a, b in zip(e, e[1:])] + [0])
print("%d extent%s, %s" % (len(e), "" if len(e) == 1 else "s", "holes between" if gap else "no holes"))') || return 1
		case $f in
		contig) what="as written: $n" ;;
		frag) what="64 KiB apart: $n" ;;
		tight) what="64 KiB or less, in the runs of a filler: $n (3.3 GB)" ;;
		esac
		cmd="gpuos run file_load.cubin --device emu:IMG --vram-mib $vm $FRAG_GEOM -- /$f"
		gpuos_run "$res/one.out" "$build/apps/file_load.cubin" --device "emu:$w/img" --vram-mib $vm $FRAG_GEOM -- /$f ||
			{ skip "f. $f: $(grep -v '^gpuos:' "$res/one.out" | tail -2 | tr '\n' ' ')"; continue; }
		python3 "$here/results.py" runjson "" < "$res/one.out" > "$res/one.json" || return 1
		add "$res/fragmented.csv" fragmented "$f" "$what" "memory (ram backend)" \
			"$([ $f = contig ] && echo - || echo contig)" "$cmd" gb_per_s=gb_per_s:GB/s < "$res/one.json" || return 1
	done
	rm -rf "$w"
}
FRAG_GEOM=${BENCH_FRAG_GEOM:---grid 16 --block 32 --warps 4 --queues 16}

# apps/file_load's geometry (16 warps of clients, 32 MiB pieces) and the
# runtime's, per backend: measured on the H100 (docs/benchmarks-log.md).
RAM_GEOM=${BENCH_RAM_GEOM:---grid 16 --block 32 --warps 1}
URING_GEOM=${BENCH_URING_GEOM:---grid 16 --block 32 --warps 4 --queues 16}
FILE_GEOM=$RAM_GEOM
# cuFile in a container: cuFileHandleRegister asks udev about the file's
# block device (ID_FS_USAGE) and fails without a record, which containers
# lack (no /run/udev). The workaround: write the record udev would have,
# /run/udev/data/bMAJ:MIN with ID_FS_USAGE and ID_FS_TYPE, for the disk
# under DIR, and remove it at exit. Needs root; 1 where it cannot.
udev_made=
cufile_udev() {
	local dev fst rec
	dev=$(stat -c '%Hd:%Ld' "$1") || return 1
	rec=/run/udev/data/b$dev
	[ -e "$rec" ] && return 0
	[ -e "/sys/dev/block/$dev" ] || return 1 # tmpfs, overlay: no block device
	fst=$(awk -v d="$dev" '$3 == d { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); exit } }' /proc/self/mountinfo)
	mkdir -p /run/udev/data 2> /dev/null && printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "${fst:-ext4}" > "$rec" ||
		return 1
	udev_made="$udev_made $rec"
}
cufile_mode() { [ -e /proc/driver/nvidia-fs/stats ] && echo "GDS (nvidia-fs)" || echo "compat mode (no nvidia-fs)"; }
# (d) cuFile is built here, where its header and library are (the build
# machine has neither), against the CUDA runtime of the same toolkit.
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ $gpu -eq 1 ] && want 1 && [ -f "$cuda/include/cufile.h" ]; then
	cc -O2 -std=gnu11 -Wall -I"$root/include" -I"$here" -I"$cuda/include" "$here/cufile_load.c" -o "$build/bench/cufile-load" \
		-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcufile -lcudart -lpthread -ldl -lrt 2> "$res/one.err" ||
		echo "bench: building bench/cufile_load.c failed: $(tail -c 300 "$res/one.err")"
fi
if [ $gpu -eq 0 ]; then
	want 1 && skip "1. the same file into VRAM through every path (needs a GPU: the destination is VRAM)"
	want 3 && skip "3. layer streaming with a compute kernel per layer (needs a GPU)"
	want f && skip "f. a file of 50,000 extents against the same bytes unfragmented (needs a GPU)"
else
	want 1 && { [ -x "$build/bench/cufile-load" ] || skip "1. (d) cuFile: no cufile.h and libcufile here to build bench/cufile_load.c"; }
	# Layers first: after section 1's cold-disk rows (caches dropped, 18 GB
	# written and deleted) the mmap path ran at a quarter of its speed.
	want 3 && { layer_rows || exit 1; }
	want 1 && { file_rows || exit 1; }
	want f && { frag_rows || exit 1; }
fi
restore_kept
if [ -s "$res/checksums.txt" ] && ! python3 "$here/results.py" checksums "$res/checksums.txt"; then
	echo "bench: the paths' VRAM checksums differ (bench/results/checksums.txt)" >&2
	exit 1
fi

python3 "$here/results.py" report "$res" "$root/docs/benchmarks.md" "$root/docs/plots" || exit 1
echo "bench: wrote bench/results/*.csv, docs/benchmarks.md and docs/plots/"
for s in "${skipped[@]}"; do echo "bench: skipped: $s"; done
