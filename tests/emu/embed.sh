#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# apps/embed's example programs (issue 18), built against a DESTDIR install
# alone (BUILD_DIR/root, nothing of the tree on the include path), both
# ways: with libgpuos.so and with libgpuos.a. layers.cu with nvcc, load.c
# (when it exists) with cc. The programs go to BUILD_DIR/embed, where the
# GPU suite (tests/gpu/run.sh) runs the static ones; here they run in host
# mode on a GGUF model of gguf_writer.py in an ext4 image on the emulated
# controller, and what they print is compared with what this script
# computes from the model file itself.
# Usage: tests/emu/embed.sh BUILD_DIR
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
summary() { echo "embed: $pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }

cuda=${CUDA_HOME:-/usr/local/cuda}
for t in make pkg-config python3 mke2fs cc "$cuda/bin/nvcc"; do
	if ! command -v "$t" > /dev/null 2>&1; then
		bad "$t is missing (scripts/deps.sh installs what the build needs)"
		summary
	fi
done
if [ ! -x "$build/gpuos" ] || [ ! -f "$build/lib/libgpuos.so" ]; then
	bad "no $build/gpuos or $build/lib/libgpuos.so (make BUILD=$build all lib)"
	summary
fi
build=$(cd "$build" && pwd)
# make's dependency files name objects by the BUILD it was given (build/...):
# an absolute BUILD would match none of them and relink stale objects
mk_build=$(realpath --relative-to="$root" "$build")
tmp=$(mktemp -d /tmp/gpuos-embed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GPUOS_QUIET_HOST=1 LC_ALL=C

# ---- install, build ---------------------------------------------------------------
echo "== make install DESTDIR=$build/root, the examples built against it"
rm -rf "$build/root"
make --no-print-directory BUILD="$mk_build" -o "$mk_build/gpuos" DESTDIR="$build/root" PREFIX=/usr/local install \
	> "$tmp/make.log" 2>&1
rc=$?
check "make install DESTDIR=$build/root: exit 0" test $rc -eq 0
[ $rc -eq 0 ] || { sed 's/^/    | /' "$tmp/make.log" | tail -20; summary; }
lib=$build/root/usr/local/lib
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$build/root
check "pkg-config finds the installed gpuos.pc" pkg-config --exists gpuos

# What gpuos.pc names for the static form, minus libgpuos itself: the host
# libraries (static, as the Makefile links them: the GPU machine has none of
# them) and the system's (dynamic).
hostlibs='' syslibs=''
for l in $(pkg-config --static --libs-only-l gpuos); do
	case $l in
	-lgpuos) ;;
	-lstdc++|-lpthread|-ldl|-lrt|-lm|-lc) syslibs="$syslibs $l" ;;
	*) hostlibs="$hostlibs,$l" ;;
	esac
done
src=$tmp/src
mkdir -p "$src" "$build/embed"
cp apps/embed/*.c apps/embed/*.cu "$src/"
out=$build/embed
rm -f "$out"/gpuos-layers* "$out"/gpuos-load*
# one CUDA runtime in each program: libgpuos.so keeps its own to itself, so
# the program links one (nvcc's default, the static one); libgpuos.a
# carries one, so the program links none of its own (--cudart=none)
(cd "$src" && "$cuda/bin/nvcc" -arch=sm_90 -Xcompiler -Wall,-Wextra,-Werror -o "$out/gpuos-layers" layers.cu \
	$(pkg-config --cflags --libs gpuos) -Xlinker -rpath,"$lib") > "$tmp/cc.log" 2>&1
check "nvcc layers.cu \$(pkg-config --cflags --libs gpuos): builds, linked to the installed libgpuos.so.0" \
	eval 'ldd "$out/gpuos-layers" | grep -q "libgpuos.so.0 => $lib/libgpuos.so.0"'
(cd "$src" && "$cuda/bin/nvcc" -arch=sm_90 --cudart=none -Xcompiler -Wall,-Wextra,-Werror \
	-o "$out/gpuos-layers-static" layers.cu $(pkg-config --cflags --libs-only-L gpuos) \
	-Xlinker "-Bstatic,-lgpuos$hostlibs,-Bdynamic" $syslibs) >> "$tmp/cc.log" 2>&1
check "nvcc --cudart=none layers.cu with libgpuos.a and static host libraries: builds, needs no libgpuos.so" \
	eval 'test -x "$out/gpuos-layers-static" && ! ldd "$out/gpuos-layers-static" | grep -qE "libgpuos|liburing|libelf|libz"'
progs="gpuos-layers gpuos-layers-static"
if [ -f "$src/load.c" ]; then
	(cd "$src" && cc -Wall -Wextra -Werror -o "$out/gpuos-load" load.c $(pkg-config --cflags --libs gpuos) \
		-I"$cuda/include" "$cuda/lib64/libcudart_static.a" -ldl -lrt -lpthread -Wl,-rpath,"$lib") >> "$tmp/cc.log" 2>&1
	check "cc load.c \$(pkg-config --cflags --libs gpuos) and its own CUDA runtime: builds, linked to libgpuos.so.0" \
		eval 'ldd "$out/gpuos-load" | grep -q "libgpuos.so.0 => $lib/libgpuos.so.0"'
	(cd "$src" && cc -Wall -Wextra -Werror -o "$out/gpuos-load-static" load.c $(pkg-config --cflags --libs-only-L gpuos) \
		-I"$cuda/include" -Wl,"-Bstatic,-lgpuos$hostlibs,-Bdynamic" $syslibs) >> "$tmp/cc.log" 2>&1
	check "cc load.c with libgpuos.a (its CUDA runtime) and static host libraries: builds, needs no libgpuos.so" \
		eval 'test -x "$out/gpuos-load-static" && ! ldd "$out/gpuos-load-static" | grep -qE "libgpuos|liburing|libelf|libz"'
	progs="$progs gpuos-load gpuos-load-static"
else
	echo "  (no apps/embed/load.c: gpuos-load not built)"
fi
sed 's/^/    | /' "$tmp/cc.log" | head -20
for p in $progs; do
	if [ -x "$out/$p" ]; then
		n=$(nm "$out/$p" | grep -cE ' [Tt] cudaMalloc$')
		check "$p: one CUDA runtime linked in ($n cudaMalloc), no libcudart.so" \
			eval 'test $n -eq 1 && ! ldd "$out/$p" | grep -q libcudart'
	fi
done
for p in gpuos-layers-static gpuos-load-static; do
	[ -x "$out/$p" ] && check "$p carries the runtime image" eval 'nm "$out/$p" | grep -q " R gpuos_rt_image$"'
done

# ---- a model in an ext4 image ---------------------------------------------------------
echo "== a GGUF model (gguf_writer.py --case demo --layers 4 --layer-mib 1) in an ext4 image"
mkdir -p "$tmp/tree/models"
python3 tests/tools/gguf_writer.py --case demo --layers 4 --layer-mib 1 "$tmp/tree/models/m.gguf" \
	--json "$tmp/m.json" > /dev/null 2>&1 &&
	mke2fs -q -F -t ext4 -d "$tmp/tree" "$tmp/disk.img" 32M > /dev/null 2>&1
check "model and image written" test -s "$tmp/disk.img" -a -s "$tmp/m.json"
dev=emu:$tmp/disk.img

# ---- gpuos-layers ------------------------------------------------------------------------
echo "== gpuos-layers: its own kernel (here: the host-mode variant) loads and sums every layer"
# What it must print: per layer N (the tensors named blk.N.*, in file
# order), the sum mod 2^64 of each tensor's checksum, gpuos/bench.h's: over
# the tensor's 8-byte little-endian words w_i, mix64(w_i + i * GOLD), a
# partial last word padded with zeros.
python3 - "$tmp/tree/models/m.gguf" "$tmp/m.json" > "$tmp/layers.want" <<'PY'
import array, json, re, sys
model, desc = open(sys.argv[1], "rb").read(), json.load(open(sys.argv[2]))
M, GOLD = (1 << 64) - 1, 0x9e3779b97f4a7c15
def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
def checksum(b):
    w = array.array("Q", b + bytes(-len(b) % 8))
    if sys.byteorder != "little":
        w.byteswap()
    return sum(mix64((x + i * GOLD) & M) for i, x in enumerate(w)) & M
layers = {}
for t in desc["tensors"]:
    m = re.match(r"blk\.(\d+)\.", t["name"])
    if m:
        layers.setdefault(int(m.group(1)), []).append(t)
n, total = max(layers) + 1 if layers else 0, 0
for L in range(n):
    ts = layers.get(L, [])
    data = [model[t["abs_offset"]:t["abs_offset"] + t["byte_size"]] for t in ts]
    b = sum(len(d) for d in data)
    total += b
    print("layer %d tensors %d bytes %d sum %016x" % (L, len(ts), b, sum(checksum(d) for d in data) & M))
print("layers %d bytes %d host" % (n, total))
PY
check "the reference: $(grep -c '^layer ' "$tmp/layers.want") layers of the model" test "$(grep -c '^layer ' "$tmp/layers.want")" -eq 4
for p in gpuos-layers gpuos-layers-static; do
	[ -x "$out/$p" ] || { bad "$p built"; continue; }
	timeout 60 "$out/$p" --host "$dev" /models/m.gguf > "$tmp/layers.out" 2> "$tmp/layers.err"
	rc=$?
	check "$p --host: exit 0, every layer's tensors, bytes and sum equal to the model file's" \
		eval 'test $rc -eq 0 && cmp -s "$tmp/layers.out" "$tmp/layers.want" && test ! -s "$tmp/layers.err"'
	[ $rc -eq 0 ] && cmp -s "$tmp/layers.out" "$tmp/layers.want" ||
		{ diff "$tmp/layers.want" "$tmp/layers.out" | head -8; head -3 "$tmp/layers.err"; } | sed 's/^/    | /'
done
if [ -x "$out/gpuos-layers" ]; then
	timeout 60 "$out/gpuos-layers" "$dev" /models/m.gguf > "$tmp/layers.out" 2> /dev/null
	rc=$?
	check "gpuos-layers without --host: exit 0, the same layers (on the GPU where there is one)" \
		eval 'test $rc -eq 0 && test "$(grep "^layer " "$tmp/layers.out")" = "$(grep "^layer " "$tmp/layers.want")"'
	timeout 60 "$out/gpuos-layers" --host "$dev" /models/none.gguf > "$tmp/layers.out" 2> "$tmp/layers.err"
	rc=$?
	check "a model path that does not exist: exit 1, one line naming it" \
		eval 'test $rc -eq 1 -a ! -s "$tmp/layers.out" && test "$(wc -l < "$tmp/layers.err")" -eq 1 &&
			grep -q "^gpuos-layers: /models/none.gguf: " "$tmp/layers.err"'
	sed 's/^/    | /' "$tmp/layers.err"
	timeout 60 "$out/gpuos-layers" --host "$dev" > /dev/null 2>&1
	check "a usage error: exit 2" test $? -eq 2
fi

# ---- gpuos-load ----------------------------------------------------------------------------
if [ -f "$src/load.c" ]; then
	echo "== gpuos-load: named tensors into the program's own buffer, written out in the order named"
	names="blk.2.ffn_down.weight token_embd.weight"
	python3 - "$tmp/tree/models/m.gguf" "$tmp/m.json" $names > "$tmp/load.want" <<'PY'
import json, sys
model, desc, names = open(sys.argv[1], "rb").read(), json.load(open(sys.argv[2])), sys.argv[3:]
t = {x["name"]: x for x in desc["tensors"]}
sys.stdout.buffer.write(b"".join(model[t[n]["abs_offset"]:t[n]["abs_offset"] + t[n]["byte_size"]] for n in names))
PY
	for p in gpuos-load gpuos-load-static; do
		[ -x "$out/$p" ] || { bad "$p built"; continue; }
		timeout 60 "$out/$p" --host "$dev" /models/m.gguf $names > "$tmp/load.out" 2> "$tmp/load.err"
		rc=$?
		check "$p --host $names: exit 0, their bytes as the model file holds them ($(stat -c %s "$tmp/load.want") bytes)" \
			eval 'test $rc -eq 0 -a -s "$tmp/load.want" && cmp -s "$tmp/load.out" "$tmp/load.want"'
		[ $rc -eq 0 ] || sed 's/^/    | /' "$tmp/load.err" | head -3
	done
	if [ -x "$out/gpuos-load" ]; then
		timeout 60 "$out/gpuos-load" --host "$dev" /models/m.gguf blk.0.attn_q.weight blk.9.nope > "$tmp/load.out" \
			2> "$tmp/load.err"
		rc=$?
		check "a missing tensor: exit 1, one line naming it" \
			eval 'test $rc -eq 1 && test "$(wc -l < "$tmp/load.err")" -eq 1 && grep -q "blk\.9\.nope" "$tmp/load.err"'
		sed 's/^/    | /' "$tmp/load.err"
		timeout 60 "$out/gpuos-load" --host "$dev" /models/none.gguf token_embd.weight > "$tmp/load.out" 2> "$tmp/load.err"
		rc=$?
		check "a model path that does not exist: exit 1, one line naming it" \
			eval 'test $rc -eq 1 && test "$(wc -l < "$tmp/load.err")" -eq 1 && grep -q "/models/none.gguf" "$tmp/load.err"'
		sed 's/^/    | /' "$tmp/load.err"
	fi
fi
summary
