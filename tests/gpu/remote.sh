#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Remote loads through NVSHMEM on the GPU machine (apps/remote/remote.cu,
# docs/scale-out.md): builds gpuos-remote there against the NVSHMEM of its
# Python environment (nvidia/nvshmem), makes an image holding a 1 GiB file
# and a model, starts PE 0 (the server: a gpuos runtime and the server
# kernel) and PE 1 (a client with a runtime of its own for the local
# baseline), and checks what the client says: every remote byte equal to
# the local read of the same bytes, every tensor equal, and the figures.
# Two GPUs: a PE on each. One GPU: both on it, under MPS (kernels of two
# processes side by side), which NVSHMEM supports only in part.
# Usage: tests/gpu/remote.sh BUILD_DIR    (exit 0 pass, 1 fail, 77 no NVSHMEM)
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=/dev/shm/gpuos-remote
rm -rf "$work"
mkdir -p "$work/src/models"
pids=
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; [ -n "${mps:-}" ] && sh "$here/scripts/mps-stop.sh" > /dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
export NVSHMEM_DISABLE_NVLS=1

nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
if [ -z "$nv" ] || [ ! -e "$nv/include/nvshmem.h" ]; then
	echo "remote: no NVSHMEM in this Python environment (nvidia/nvshmem)"
	exit 77
fi
echo "remote: NVSHMEM at $nv: $(ls "$nv/lib" | tr '\n' ' ')"
# every library folder of the Python environment's nvidia packages: NVSHMEM's
# host library, its bootstrap plugins, the CUDA runtime it may want
LD_LIBRARY_PATH=$(python3 -c 'import nvidia, os; print(":".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, d, "lib"))))')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
hostlib=$(ls "$nv"/lib/libnvshmem_host.so* 2>/dev/null | head -1)
[ -n "$hostlib" ] || { echo "remote: no libnvshmem_host.so in $nv/lib"; exit 77; }

# Three steps: the program as relocatable device code, the device link
# with NVSHMEM's device library, the host link. libgpuos.a carries the CUDA
# runtime (the program links no other) and the runtime image; the host
# libraries come static from make gpu-build (BUILD/lib/deps).
{
	nvcc -std=c++17 -O2 -rdc=true -arch=sm_90 -I"$here/include" -I"$nv/include" \
		-c "$here/apps/remote/remote.cu" -o "$work/remote.o" &&
	nvcc -arch=sm_90 -dlink "$work/remote.o" -L"$nv/lib" -lnvshmem_device -o "$work/dlink.o" &&
	g++ -o "$work/gpuos-remote" "$work/remote.o" "$work/dlink.o" -L"$build/lib" -L"$build/lib/deps" -L"$nv/lib" \
		-Wl,-Bstatic -lgpuos -luring -lelf -lz -lzstd -Wl,-Bdynamic "$hostlib" -lnvshmem_device \
		-lstdc++ -lpthread -ldl -lrt -lm -Wl,-rpath,"$nv/lib"
} > "$work/cc.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	cat "$work/cc.log"
	echo "remote: FAIL build"
	exit 1
fi
echo "remote: built"

head -c $((1 << 30)) /dev/urandom > "$work/src/big.bin"
python3 "$here/tests/tools/gguf_writer.py" --case demo "$work/src/models/m.gguf" --seed 5 --layers 2 > /dev/null || exit 1
mke2fs -q -F -t ext4 -d "$work/src" "$work/fs.img" 1200M > /dev/null 2>&1 || { echo "remote: mke2fs failed"; exit 1; }
tensors=$(python3 - "$work/src/models/m.gguf" <<'PY'
import struct, sys
# the first tensor names of the model, read from its header (GGUF v3)
f = open(sys.argv[1], "rb"); f.read(8)
nt, nkv = struct.unpack("<QQ", f.read(16))
def s(): n, = struct.unpack("<Q", f.read(8)); return f.read(n).decode()
def skip(t):
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    if t == 8: s()
    elif t == 9:
        et, n = struct.unpack("<IQ", f.read(12))
        for _ in range(n): skip(et)
    else: f.read(sizes[t])
for _ in range(nkv):
    s(); t, = struct.unpack("<I", f.read(4)); skip(t)
names = []
for _ in range(nt):
    names.append(s()); nd, = struct.unpack("<I", f.read(4)); f.read(8 * nd + 4 + 8)
print(" ".join(names[:6]))
PY
) || exit 1

ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
if [ "$ngpu" -lt 2 ]; then
	echo "remote: one GPU: both PEs on GPU 0 under MPS"
	mps=1
	CUDA_MPS_PIPE_DIRECTORY=$work/mps CUDA_MPS_LOG_DIRECTORY=$work/mpslog sh "$here/scripts/mps-start.sh" || exit 1
	export CUDA_MPS_PIPE_DIRECTORY=$work/mps
	g0=0 g1=0
else
	g0=0 g1=1
fi
dev="emu:$work/fs.img,workers=4"
# pair NAME [ENV=VALUE...]: PE 0 and PE 1 once; their reports in $work/NAME.pe0 and .pe1
pair() {
	local name=$1 p0 p1 r0 r1
	shift
	env "$@" GPUOS_REMOTE_GPU=$g0 timeout 200 "$work/gpuos-remote" serve "$work/uid.$name" 2 "$dev" /models/m.gguf \
		> "$work/$name.pe0" 2> "$work/$name.err0" &
	p0=$!
	env "$@" GPUOS_REMOTE_GPU=$g1 timeout 200 "$work/gpuos-remote" client "$work/uid.$name" 2 1 "$dev" /big.bin \
		/models/m.gguf $tensors > "$work/$name.pe1" 2> "$work/$name.err1" &
	p1=$!
	pids="$p0 $p1"
	wait $p1; r1=$?
	wait $p0; r0=$?
	pids=
	tail -5 "$work/$name.err0" | sed "s/^/   $name pe0: /"
	tail -5 "$work/$name.err1" | sed "s/^/   $name pe1: /"
	cat "$work/$name.pe0" "$work/$name.pe1"
	python3 - "$work/$name.pe0" "$work/$name.pe1" "$r0" "$r1" "$(echo $tensors | wc -w)" "$name" <<'PY'
import json, sys
name = sys.argv[6]
try:
    s, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
except ValueError:
    sys.exit("remote %s: FAIL no report (exit %s and %s)" % (name, sys.argv[3], sys.argv[4]))
bad = []
if sys.argv[3] != "0" or sys.argv[4] != "0":
    bad.append("exit %s and %s" % (sys.argv[3], sys.argv[4]))
if c["status"] != "ok":
    bad.append("client status " + c["status"])
if c["mismatch"]:
    bad.append("remote bytes differ from the local read at byte %d" % c["mismatch_at"])
if c["tensors_ok"] != int(sys.argv[5]) or c["tensors_bad"]:
    bad.append("tensors %d right, %d wrong of %s" % (c["tensors_ok"], c["tensors_bad"], sys.argv[5]))
if s["failed"] or s["model"] != "ok":
    bad.append("server: %d failed, model %s" % (s["failed"], s["model"]))
if s["path"] != name:
    bad.append("the server took the %s path" % s["path"])
print("remote %s: 4 KiB round trip %.2f us remote, %.2f us local (%.2fx); 8 MiB reads %.3f GB/s remote, %.3f GB/s "
      "local (%.2fx); %d tensors equal" % (name, c["remote_4k_median_us"], c["local_4k_median_us"],
      c["local_4k_median_us"] / c["remote_4k_median_us"] if c["remote_4k_median_us"] else 0,
      c["remote_gb_per_s"], c["local_gb_per_s"], c["remote_gb_per_s"] / c["local_gb_per_s"] if c["local_gb_per_s"] else 0,
      c["tensors_ok"]))
print("remote %s: " % name + ("FAIL " + "; ".join(bad) if bad else "PASS"))
sys.exit(1 if bad else 0)
PY
}
pair direct; rd=$?
pair put GPUOS_REMOTE_PUT=1; rp=$?
[ $rd -eq 0 ] && [ $rp -eq 0 ]
