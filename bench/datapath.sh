#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The data-path figures of gpuos, each a ratio to a baseline measured in the
# same run (bench/baselines): the link's line rate, the CPU paths from tmpfs,
# liburing from the disk. On the GPU machine, after `make bench-build`:
#
#   bench/datapath.sh BUILD_DIR [IMAGE_DIR [DISK_DIR]]
#
# IMAGE_DIR holds the in-memory image (default /dev/shm); DISK_DIR a folder
# on the machine's disk, not tmpfs (default BUILD_DIR, else /var/tmp).
# Sizes in MiB: DATAPATH_IMG_MIB (4096), DATAPATH_DISK_MIB (2048). Every step
# is bounded by `timeout` and by what is left of DATAPATH_SECONDS (420), so a
# run ends within about 7 minutes whatever hangs. Raw JSON lines as they come,
# then a table of figures, baselines and ratios.
set -u
build=${1:?usage: bench/datapath.sh BUILD_DIR [IMAGE_DIR [DISK_DIR]]}
imgdir=${2:-/dev/shm}
diskdir=${3:-$build}
img_mib=${DATAPATH_IMG_MIB:-4096}
disk_mib=${DATAPATH_DISK_MIB:-2048}
g=$build/gpuos
b=$build/bench/baselines
t_end=$(( $(date +%s) + ${DATAPATH_SECONDS:-420} ))
for x in "$g" "$b"; do
	[ -x "$x" ] || { echo "datapath: $x is missing: make BUILD=$build bench-build" >&2; exit 2; }
done
res=$(mktemp -d "${TMPDIR:-/tmp}/gpuos-datapath.XXXXXX")
img=$imgdir/gpuos-datapath-$$.img
disk=
trap 'rm -rf "$res" "$img" ${disk:+"$disk"}' EXIT

echo "# gpuos data path, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>/dev/null || echo 'no GPU: the figures below are host mode')"

# bound MAX_S: MAX_S, or less where the run's time is nearly spent.
bound() {
	local left=$(( t_end - $(date +%s) ))
	echo $(( left < $1 ? left : $1 ))
}

# step NAME MAX_S CMD...: run CMD within bound MAX_S seconds; stdout to
# $res/NAME.json, a failure's reason to NAME.err.
step() {
	local name=$1 max rc=0
	max=$(bound "$2")
	shift 2
	echo "## $name: $*"
	if [ "$max" -lt 5 ]; then
		echo "skipped: the run's time is spent" | tee "$res/$name.err"
		return
	fi
	timeout -k 5 "$max" "$@" > "$res/$name.json" 2> "$res/$name.err" || rc=$?
	cat "$res/$name.json"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "timed out after ${max} s; $(tail -c 300 "$res/$name.err")" > "$res/$name.err"
	fi
	if [ "$rc" -ne 0 ]; then
		echo "   exit $rc: $(tail -c 400 "$res/$name.err" | tr '\n' ' ')"
		echo "$rc" > "$res/$name.rc"
	fi
}

# drop: write back and drop the page cache, so the disk steps read the disk.
drop() {
	sync
	if echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; then
		echo "   (page cache dropped)"
	else
		echo "   (page cache NOT dropped: not permitted; O_DIRECT reads bypass it anyway)"
		echo "not dropped" > "$res/nodrop"
	fi
}

# ---- the image ------------------------------------------------------------------------
avail=$(df -Pm "$imgdir" 2> /dev/null | awk 'NR == 2 { print $4 }')
if [ -z "$avail" ] || [ "$avail" -lt $((img_mib + 256)) ]; then
	echo "datapath: $imgdir has ${avail:-no} MiB free, the image needs $img_mib" >&2
	exit 2
fi
echo "## image: $img_mib MiB of random bytes at $img"
t0=$(date +%s.%N)
# Eight writers side by side: /dev/urandom gives a few hundred MB/s each.
per=$(( (img_mib + 7) / 8 ))
for i in 0 1 2 3 4 5 6 7; do
	n=$(( img_mib - i * per < per ? img_mib - i * per : per ))
	[ "$n" -gt 0 ] && timeout "$(bound 120)" dd if=/dev/urandom of="$img" bs=1M count="$n" seek=$((i * per)) \
		conv=notrunc iflag=fullblock status=none &
done
wait
if [ "$(stat -c %s "$img" 2> /dev/null || echo 0)" -ne $((img_mib << 20)) ]; then
	echo "datapath: could not write the image $img" >&2
	exit 2
fi
echo "   $(python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")"

# ---- baselines: the link and the CPU paths from tmpfs ---------------------------------------
step h2d 60 "$b" h2d --chunk-mib 8 --total-mib 4096
step h2d_1m 60 "$b" h2d --chunk-mib 1 --total-mib 4096
step pread4 60 "$b" pread "$img" --threads 4 --chunk-mib 8
step mmap 90 "$b" mmap "$img" --chunk-mib 8
step uring_tmpfs 60 "$b" uring "$img" --qd 32 --bs-kib 1024

# ---- gpuos --------------------------------------------------------------------------------
mib1=(--bytes 1048576 --threads 64 --warps 2 --iters 64 --json)
mib1w8=(--bytes 1048576 --threads 256 --warps 8 --iters 32 --json)
k4=(--bytes 4096 --warps 8 --threads 8192 --iters 25 --timeout-ms 2000 --json)
step ram_1m 120 "$g" bench --device "emu:$img" "${mib1[@]}" --queues 2
# eight workers, and every piece through the gather kernel (SM copies)
step ram_1m_sm 120 "$g" bench --device "emu:$img,queues=16,workers=8,gather=1024" "${mib1w8[@]}" --queues 16
step ram_4k 120 "$g" bench --device "emu:$img,queues=32,workers=8" "${k4[@]}" --queues 32
# An array: queue k of a warp sits on member k % N, so 4 queues a warp reach all four.
step ssds4_4k 120 "$g" bench --device "emu:$img,ssds=4,queues=32,workers=6" "${k4[@]}" --queues 32
step ssds4_model_1m 120 "$g" bench --device "emu:$img,ssds=4,gbps=7,iops=1400000" "${mib1w8[@]}" --queues 32
step lost_w16 120 "$g" bench --device "emu:null,backend=null,size=1T,queues=128,workers=8" --warps 16 --queues 32 \
	--depth 1024 --slots 256 --mbox-slots 16384 --threads 16384 --iters 5 --timeout-ms 2000 --json

# ---- the disk ----------------------------------------------------------------------------
if [ "$(stat -f -c %T "$diskdir" 2> /dev/null)" = tmpfs ] || [ ! -d "$diskdir" ]; then
	diskdir=/var/tmp
fi
disk_skip() { # WHY: the disk steps did not run
	echo "## disk: skipped: $1"
	echo "skipped: $1" | tee "$res/disk_uring.err" > "$res/disk_gpuos.err"
}
if [ "$(stat -f -c %T "$diskdir" 2> /dev/null)" = tmpfs ]; then
	disk_skip "no folder off tmpfs (tried $diskdir)"
elif [ "$(bound 120)" -lt 10 ]; then
	disk_skip "the run's time is spent"
else
	disk=$diskdir/gpuos-datapath-disk-$$.img
	echo "## disk: $disk_mib MiB of the image to $disk ($(df -P "$diskdir" | awk 'NR == 2 { print $1 }'))"
	if timeout "$(bound 120)" dd if="$img" of="$disk" bs=4M count=$((disk_mib / 4)) conv=fsync status=none; then
		drop
		step disk_uring 90 "$b" uring "$disk" --qd 32 --bs-kib 1024 --direct
		drop
		step disk_gpuos 120 "$g" bench --device "emu:$disk,backend=uring" "${mib1[@]}" --queues 2
	else
		disk_skip "could not write $disk in time"
	fi
	rm -f "$disk"
fi

# ---- the table ----------------------------------------------------------------------------
echo
python3 - "$res" "$img_mib" "$disk_mib" <<'PY'
import json, os, sys
res, img_mib, disk_mib = sys.argv[1], sys.argv[2], sys.argv[3]

def get(name):
    """(JSON object, None) or (None, why it failed)."""
    p = os.path.join(res, name)
    err = open(p + ".err").read().strip() if os.path.exists(p + ".err") else ""
    try:
        lines = [l for l in open(p + ".json") if l.startswith("{")]
        d = json.loads(lines[-1])
    except (OSError, IndexError, ValueError):
        return None, (err.splitlines() or ["no output"])[-1][:100]
    if os.path.exists(p + ".rc"):
        d["_exit"] = open(p + ".rc").read().strip()
    return d, None

def gbs(d):
    return d["gb_per_s"]

rows = []   # (figure, its value text, baseline, baseline value text, ratio)
def row(label, name, base_label, base_name=None, base_value=None, value=gbs, unit="GB/s", extra=""):
    d, why = get(name)
    if d is None:
        rows.append((label, "FAILED: " + why, base_label, "", ""))
        return
    v = value(d)
    note = extra(d) if callable(extra) else extra
    if d.get("_exit"):
        note += " (exit %s)" % d["_exit"]
    bv = base_value
    if base_name:
        bd, bwhy = get(base_name)
        bv = gbs(bd) if bd else None
    text = ("%.3f %s%s" if unit == "M/s" else "%.2f %s%s") % (v, unit, note)
    if bv:
        rows.append((label, text, base_label, "%.2f GB/s" % bv, "%.2f" % (v / bv)))
    else:
        rows.append((label, text, base_label, "" if base_label == "-" else "FAILED", ""))

def reqs(d):
    return d["requests_per_s"] / 1e6

def timeouts(d):
    return ", %d timeouts, %d errors, p99 %.0f us" % (d["timeouts"], d["errors"], d["lat_p99_us"])

row("baseline: cudaMemcpy H2D, pinned, 8 MiB chunks", "h2d", "-")
row("baseline: the same, 1 MiB chunks", "h2d_1m", "h2d 8 MiB", "h2d")
row("(1) 1 MiB READ_RAW, ram backend", "ram_1m", "h2d 1 MiB", "h2d_1m")
row("(1) the same", "ram_1m", "h2d 8 MiB", "h2d")
row("(1) the same", "ram_1m", "pread x4 + H2D (tmpfs)", "pread4")
row("(1) the same", "ram_1m", "mmap + memcpy + H2D (tmpfs)", "mmap")
row("(1b) 1 MiB, 8 workers, gather=1024 (SM copies)", "ram_1m_sm", "h2d 8 MiB", "h2d")
row("(2) 4 KiB random READ_RAW, ram, M req/s", "ram_4k", "-", value=reqs, unit="M/s", extra=timeouts)
row("(2) the same in GB/s", "ram_4k", "h2d 1 MiB", "h2d_1m")
row("(3) 4 KiB random, ssds=4, M req/s", "ssds4_4k", "-", value=reqs, unit="M/s", extra=timeouts)
row("(3) the same in GB/s", "ssds4_4k", "h2d 1 MiB", "h2d_1m")
row("(4) 1 MiB, ssds=4 x (7 GB/s, 1.4 M IOPS)", "ssds4_model_1m", "the model, 4 x 7", base_value=28.0, extra=timeouts)
row("(4) the same", "ssds4_model_1m", "h2d 1 MiB", "h2d_1m")
row("(5) W = 16, 16384 threads, null backend, M req/s", "lost_w16", "-", value=reqs, unit="M/s", extra=timeouts)
row("(6) disk, 1 MiB READ_RAW, backend=uring", "disk_gpuos", "liburing O_DIRECT QD32 1 MiB + H2D", "disk_uring")
row("(6) baseline: liburing O_DIRECT QD32 1 MiB + H2D", "disk_uring", "h2d 8 MiB", "h2d")
row("(8) CPU s of gpuos outside the emulator's threads, during (1)", "ram_1m", "-", value=lambda d: d["cpu_s"],
    unit="s", extra=lambda d: " of %.3f s wall" % d["wall_s"])
row("(7) baseline: pread x4 + H2D, tmpfs", "pread4", "h2d 8 MiB", "h2d")
row("(7) baseline: mmap + memcpy + H2D, tmpfs", "mmap", "h2d 8 MiB", "h2d")
row("(7) baseline: liburing QD32 1 MiB + H2D, tmpfs", "uring_tmpfs", "h2d 8 MiB", "h2d")

print("image %s MiB (tmpfs), disk file %s MiB%s" % (img_mib, disk_mib,
      ", page cache not dropped" if os.path.exists(os.path.join(res, "nodrop")) else ""))
for name, key, what in (("h2d", "gpu", "baselines on"), ("ram_1m", "runtime", "gpuos runtime on")):
    d, _ = get(name)
    if d:
        print("%s: %s" % (what, d.get(key, "?")))
w = [max(len(r[i]) for r in rows + [("figure", "value", "baseline", "baseline value", "ratio")]) for i in range(5)]
head = ("figure", "value", "baseline", "baseline value", "ratio")
print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |")
print("|" + "|".join("-" * (x + 2) for x in w) + "|")
for r in rows:
    print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
PY
