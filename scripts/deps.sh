#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install, from Debian's packages, whatever gpuos needs to build and test.
# Idempotent and quiet when everything is present; runs apt-get update only
# when something must be installed.
set -euo pipefail

pkgs=(
	build-essential pkg-config
	libcriterion-dev   # unit and e2e tests
	liburing-dev       # emulator uring backend, CPU baseline (linked statically)
	libelf-dev libzstd-dev zlib1g-dev  # device image inspection (libelf, linked statically)
	e2fsprogs          # mke2fs -d / debugfs build and check test images
	gdisk              # sgdisk: GPT test images
	clang libclang-rt-14-dev  # libFuzzer builds (make fuzz)
	zstd gnuplot-nox
	qemu-system-x86 busybox-static cpio kmod   # the QEMU referee test
	help2man man-db    # the manual pages (make man, make install) and their test
	zsh                # the zsh completion's test
	python3 python3-numpy  # the Python binding's tests (host mode: numpy arrays)
)
# A GGUF reader written by others (@huggingface/gguf) runs under node; a
# machine may already carry node and npm from another source (nodesource's
# nodejs bundles npm and conflicts with Debian's npm package).
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -ne 0 ]; then
	echo "deps.sh: installing ${missing[*]}" >&2
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >/dev/null
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The npm packages the tests compare with, installed here once, beside the
# Makefile (node_modules/, ignored by git): tests never reach the network.
#  - @huggingface/gguf: a GGUF reader written by others (tests/tools/gguf_ref.mjs);
#  - node-llama-cpp, pinned, with its prebuilt llama.cpp for linux-x64 (CPU
#    only): the referee of apps/llama (tests/tools/llama_ref.mjs). Its
#    optional packages (CUDA, Vulkan and other platforms' builds, hundreds of
#    MB) are left out, and so is its postinstall script, which would look for
#    a GPU build or fetch llama.cpp's source to build one.
# One npm command installs them all: npm removes, from node_modules/, the
# packages that a later install does not name.
cd "$(dirname "$0")/.."
nlc_version=3.22.1
npm_pkgs=(@huggingface/gguf "node-llama-cpp@$nlc_version")
[ "$(uname -m)" = x86_64 ] && npm_pkgs+=("@node-llama-cpp/linux-x64@$nlc_version")
npm_ok=1
[ -f node_modules/@huggingface/gguf/package.json ] || npm_ok=0
grep -qs "\"version\": \"$nlc_version\"" node_modules/node-llama-cpp/package.json || npm_ok=0
if [ "$(uname -m)" = x86_64 ]; then
	grep -qs "\"version\": \"$nlc_version\"" node_modules/@node-llama-cpp/linux-x64/package.json || npm_ok=0
fi
if [ $npm_ok -eq 0 ]; then
	echo "deps.sh: installing ${npm_pkgs[*]} (npm)" >&2
	NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --prefix . --no-audit --no-fund --no-save --no-package-lock \
		--omit=optional --ignore-scripts --silent "${npm_pkgs[@]}" >/dev/null
fi
