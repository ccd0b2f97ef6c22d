#!/bin/sh
# SPDX-License-Identifier: MIT
# Seed corpora for tests/fuzz: OUT/gguf (gguf_writer.py cases, valid and
# hostile, plus the small refused files of ../shared/testdata/gguf when
# present) and OUT/gpt (small sgdisk images when sgdisk is there, and images
# built here: 4096-byte sectors, a plain MBR).
# Usage (from the repository root): tests/tools/fuzz_corpus.sh OUT
set -eu
out=${1:?usage: fuzz_corpus.sh OUT}
w=tests/tools/gguf_writer.py
mkdir -p "$out/gguf" "$out/gpt"

for c in small empty nested-8 fuzz-seed vocab; do
	python3 "$w" --case "$c" "$out/gguf/$c.gguf"
done
for c in $(python3 "$w" --list | awk '$2 == "hostile" {print $1}'); do
	python3 "$w" --case "$c" "$out/gguf/h-$c.gguf"
done
real=../shared/testdata/gguf
if [ -d "$real" ]; then
	cp "$real/test_writer-objtype13.gguf" "$real/example-FUGG-magic.gguf" "$out/gguf/"
	head -c 4096 "$real/ggml-vocab-llama-v1-2023-08-17.gguf" > "$out/gguf/v1-head.gguf"
fi

if command -v sgdisk >/dev/null 2>&1; then
	g="$out/gpt"
	truncate -s 64K "$g/s3.img"
	sgdisk -o -S 4 -a 1 -n 1:10:20 -t 1:8300 -c 1:root -n 2:21:33 -t 2:ef00 -c 2:esp \
		-n 3:40:90 -t 3:8300 "$g/s3.img" >/dev/null
	cp "$g/s3.img" "$g/hybrid.img"
	sgdisk -h 1:EE "$g/hybrid.img" >/dev/null
	cp "$g/s3.img" "$g/mbr.img"
	sgdisk -m 1:2 "$g/mbr.img" >/dev/null
	truncate -s 256K "$g/s128.img"
	sgdisk -o -a 1 -n 1:40:100 -t 1:8300 -c 1:data "$g/s128.img" >/dev/null
fi
python3 - "$out/gpt" <<'PY'
import struct, sys, zlib
def disk(ss, lbas, nent, esz, parts):
    d = bytearray(ss * lbas)
    d[446:462] = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0xEE, b"\0\0\0", 1, lbas - 1)
    d[510:512] = b"\x55\xaa"
    arr = bytearray(nent * esz)
    lfs = bytes.fromhex("af3dc60f838472478e793d69d8477de4")
    for i, (a, b) in enumerate(parts):
        arr[i * esz:i * esz + 56] = lfs + bytes(range(16)) + struct.pack("<QQQ", a, b, 0)
    esec = -(-len(arr) // ss)
    fu, lu = 2 + esec, lbas - 2 - esec
    d[2 * ss:2 * ss + len(arr)] = arr
    d[(lu + 1) * ss:(lu + 1) * ss + len(arr)] = arr
    for my, alt, el in ((1, lbas - 1, 2), (lbas - 1, 1, lu + 1)):
        h = bytearray(struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, my, alt,
                                  fu, lu, bytes(16), el, nent, esz, zlib.crc32(arr)))
        h[16:20] = struct.pack("<I", zlib.crc32(h))
        d[my * ss:my * ss + 92] = h
    return d
out = sys.argv[1]
open(out + "/k4.img", "wb").write(disk(4096, 16, 32, 128, [(3, 5), (6, 13)]))
open(out + "/e256.img", "wb").write(disk(512, 48, 8, 256, [(10, 20)]))
PY
echo "fuzz_corpus: $(ls "$out/gguf" | wc -l) GGUF and $(ls "$out/gpt" | wc -l) disk seeds in $out"
