#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test-qemu: the pci: path against QEMU's NVMe controller, in a Linux
# guest under TCG (tests/qemu/qemu_test.py says what is checked).
# Usage: tests/qemu/run.sh BUILD_DIR   (BUILD_DIR/gpuos-static must exist)
set -euo pipefail
build=${1:-build}
here=$(dirname "$0")
for t in qemu-system-x86_64 mkfs.minix python3 cpio gzip; do
	command -v "$t" >/dev/null || { echo "tests/qemu: $t is missing (make deps)" >&2; exit 1; }
done
[ -x "$build/gpuos-static" ] || { echo "tests/qemu: $build/gpuos-static is missing (make static)" >&2; exit 1; }
bash "$here/setup.sh" "$build"
exec python3 "$here/qemu_test.py" "$build"
