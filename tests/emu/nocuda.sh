#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host-only build (issue 35): `make CUDA=0`, chosen by itself where
# there is no nvcc. With NVCC pointing nowhere, make builds gpuos, the apps'
# host-mode variants and the library; they carry nothing of CUDA; gpuos says
# so in --version and reads a file of an ext4 image on CPU threads; a
# program links the host-only libgpuos.so and does the same.
# Usage: tests/emu/nocuda.sh BUILD_DIR
#
# Builds are not repeated: BUILD_DIR's objects of runtime/ and boot/ are
# compiled with the same command either way (CFLAGS; nothing of CUDA), so
# they are copied into BUILD_DIR/nocuda with their times, and make there
# compiles only what differs (the glue boot/cuda_none.c, boot/cli/main.c
# with its --version line) and links. Its PIC objects likewise. The apps'
# host-mode variants are built here.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
nb=$build/nocuda
case $nb in /*) ;; *) nb=$root/$nb ;; esac
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$build/runtime/engine.o" ]; then
	echo "nocuda: FAIL, no objects in $build (make BUILD=$build all lib)"
	exit 1
fi
rm -rf "$nb"
mkdir -p "$nb"
for d in runtime boot; do
	mkdir -p "$nb/$d"
	cp -a "$build/$d/." "$nb/$d/"
done
# what differs, and every dependency file (they name BUILD_DIR's targets)
rm -f "$nb/boot/cuda.o" "$nb/boot/cli/main.o"
find "$nb" -name '*.d' -delete

echo "== make CUDA=0 NVCC=/nonexistent/nvcc BUILD=$nb all lib"
make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" BUILD="$nb" NVCC=/nonexistent/nvcc V= all lib \
	> "$tmp/make.log" 2>&1
rc=$?
check "make with no nvcc (CUDA=0 by itself): exit 0" test $rc -eq 0
[ $rc -eq 0 ] || { sed 's/^/    | /' "$tmp/make.log" | tail -20; echo "nocuda: $pass passed, $((fail)) failed"; exit 1; }
check "nothing went to nvcc (no NVCC line, no cubin, no runtime image)" \
	eval '! grep -q NVCC "$tmp/make.log" && test -z "$(find "$nb" -name "*.cubin" -o -name "*.fatbin" | head -1)"'
ncc=$(grep -c '^  CC ' "$tmp/make.log")
# main.c (its GPUOS_CUDA_ARCHS differs), and the glue (boot/cuda_none.c)
# unless BUILD_DIR's gpuos-static had it already
check "compiled only main.c and the glue ($ncc); the rest was BUILD_DIR's (\"builds are not repeated\")" \
	test "$ncc" -ge 1 -a "$ncc" -le 2
check "gpuos --version: host mode only" eval '"$nb/gpuos" --version | grep -q "none (host mode only)"'
# No CUDA runtime and no image in FILE; nm must see the library's own
# gpuos_boot there, so that an nm that fails cannot pass.
no_cuda_in() {
	nm --defined-only "$1" 2>/dev/null | awk 'NF == 3 { print $3 }' > "$tmp/syms"
	grep -qx gpuos_boot "$tmp/syms" &&
		! grep -qE '^(cudaMalloc|cudaLaunchKernel|cudaGetDeviceCount|gpuos_rt_image)$' "$tmp/syms"
}
for f in gpuos lib/libgpuos.so lib/libgpuos.a; do
	check "$f: gpuos_boot inside, no CUDA runtime, no runtime image" no_cuda_in "$nb/$f"
done
napps=$(ls apps/*.c | wc -l)
check "the apps' host-mode variants built ($napps), no cubins" \
	eval 'test "$(ls "$nb"/apps/*.so 2>/dev/null | wc -l)" -eq "$napps" && test -z "$(ls "$nb"/apps/*.cubin 2>/dev/null)"'
check "libgpuos.so exports gpuos_* only" \
	eval 'test -z "$(nm -D --defined-only "$nb/lib/libgpuos.so" | awk "\$3 !~ /^gpuos_/")" &&
		test "$(nm -D --defined-only "$nb/lib/libgpuos.so" | grep -c " gpuos_")" -gt 50'

# A file through the host-only gpuos and through a program on its library.
mkdir -p "$tmp/tree"
head -c 1500000 /dev/urandom > "$tmp/tree/data.bin"
mke2fs -q -F -t ext4 -d "$tmp/tree" "$tmp/disk.img" 16M > /dev/null 2>&1
"$nb/gpuos" cat -q --device "emu:$tmp/disk.img" /data.bin > "$tmp/out" 2> "$tmp/err"
rc=$?
check "gpuos cat on CPU threads: exit 0, the file's bytes" eval 'test $rc -eq 0 && cmp -s "$tmp/out" "$tmp/tree/data.bin"'
[ $rc -eq 0 ] || sed 's/^/    | /' "$tmp/err" | head -5
# the soname's link, as make install makes it
mkdir -p "$tmp/lib"
ln -s "$nb/lib/libgpuos.so" "$tmp/lib/libgpuos.so.0"
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -o "$tmp/cat" apps/embed/cat.c -L"$nb/lib" -lgpuos \
	-Wl,-rpath,"$tmp/lib" > "$tmp/cc.log" 2>&1
rc=$?
check "apps/embed/cat.c links the host-only libgpuos.so" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/    | /' "$tmp/cc.log" | head -10
if [ $rc -eq 0 ]; then
	"$tmp/cat" --host "emu:$tmp/disk.img" /data.bin > "$tmp/out2" 2> "$tmp/err"
	rc=$?
	check "and reads the file: exit 0, its bytes" eval 'test $rc -eq 0 && cmp -s "$tmp/out2" "$tmp/tree/data.bin"'
fi
echo "nocuda: $pass passed, $fail failed"
[ $fail -eq 0 ]
