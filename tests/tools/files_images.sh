#!/bin/sh
# SPDX-License-Identifier: MIT
# Disk images for the runtime's file and model suite (tests/unit/test_files.c),
# built from a source tree this script writes, so the test compares what the
# runtime reads with the source files themselves. Built here (mke2fs, sgdisk),
# and on the GPU machine, which has no sgdisk (tests/tools/gpt_write.py
# writes the same partitions there).
#   tests/tools/files_images.sh DIR
# DIR/src/...        the source tree
# DIR/ext4.img       ext4 (inline_data, 4 KiB blocks) of DIR/src, whole device (32 MiB)
# DIR/gpt.img        GPT; partition 1 (a small FAT-less filler) at 2048, partition 2
#                    (ext4 of DIR/src, 1 KiB blocks) at LBA 6161 (not MiB-aligned)
# DIR/raw.img        DIR/src/models/m.gguf written raw at byte 1048699
# DIR/frag.img       ext4 (1 KiB blocks) of frag_a, frag_b, frag_c: 6000 blocks each, every
#                    other block punched out (debugfs): 3000 one-block extents a file;
#                    DIR/frag/NAME.want what each reads as (the holes zero)
# DIR/src/models/split/  s.gguf (many-layers) and the same model as three gguf-split shards
#                    s-0000K-of-00003.gguf; broken shard sets beside them:
#                    miss/ (shard 2 missing), count/ (shard 2 of another model: its
#                    split.tensors.count differs), name/ (a shard 1 of 3 named 1 of 2, a
#                    shard 2 of 3 named renamed.gguf),
#                    dup/ (shard 2 a copy of shard 1 but for split.no: a name twice)
# DIR/ok             written last: everything above is complete
set -eu
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"
mkdir -p "$dir/src/dir/sub" "$dir/src/models"
src=$dir/src
python3 - "$src" <<'PY'
import os, random, sys
src = sys.argv[1]
r = random.Random(7)
open(os.path.join(src, "big.bin"), "wb").write(bytes(r.getrandbits(8) for _ in range(5 * 1024 * 1024 + 77)))
open(os.path.join(src, "small.txt"), "w").write("small file kept inline in the inode\n")
with open(os.path.join(src, "sparse.bin"), "wb") as f:
    for i in range(6):
        f.seek(i * 3 * 1024 * 1024 + 1000)
        f.write(bytes(r.getrandbits(8) for _ in range(70000)))
    f.seek(20 * 1024 * 1024 - 5)  # ends with data: mke2fs -d drops a trailing hole
    f.write(b"tail\n")
for i in range(300):
    open(os.path.join(src, "dir", "f%03d" % i), "w").write("file %d\n" % i)
open(os.path.join(src, "dir", "sub", "deep.txt"), "w").write("deep\n" * 1000)
os.symlink("big.bin", os.path.join(src, "link"))
os.symlink("/dir/sub/deep.txt", os.path.join(src, "abs_link"))
os.symlink("loop_b", os.path.join(src, "loop_a"))
os.symlink("loop_a", os.path.join(src, "loop_b"))
PY
python3 "$here/gguf_writer.py" --case many-layers "$src/models/m.gguf" --json "$dir/m.json" >/dev/null
# Split models, good and broken.
sp=$src/models/split
mkdir -p "$sp/miss" "$sp/count" "$sp/name" "$sp/dup" "$dir/tmp"
python3 "$here/gguf_writer.py" --case many-layers --seed 4 --split 3 "$sp/s.gguf" >/dev/null
python3 "$here/gguf_writer.py" --case many-layers --seed 4 --split 2 "$dir/tmp/d.gguf" >/dev/null
python3 "$here/gguf_writer.py" --case demo --layers 3 --split 3 "$dir/tmp/o.gguf" >/dev/null
cp "$sp/s-00001-of-00003.gguf" "$sp/miss/m-00001-of-00003.gguf"
cp "$sp/s-00003-of-00003.gguf" "$sp/miss/m-00003-of-00003.gguf"
for k in 1 3; do cp "$sp/s-0000$k-of-00003.gguf" "$sp/count/c-0000$k-of-00003.gguf"; done
cp "$dir/tmp/o-00002-of-00003.gguf" "$sp/count/c-00002-of-00003.gguf"
cp "$sp/s-00001-of-00003.gguf" "$sp/name/n-00001-of-00002.gguf"
cp "$sp/s-00002-of-00003.gguf" "$sp/name/renamed.gguf"
cp "$dir/tmp/d-00001-of-00002.gguf" "$sp/dup/d-00001-of-00002.gguf"
python3 - "$dir/tmp/d-00001-of-00002.gguf" "$sp/dup/d-00002-of-00002.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
key = struct.pack("<Q", 8) + b"split.no" + struct.pack("<I", 2)   # string key, then type uint16
at = b.index(key) + len(key)
b[at:at + 2] = struct.pack("<H", 1)
open(sys.argv[2], "wb").write(b)
PY
rm -rf "$dir/tmp"
mke2fs -q -F -t ext4 -b 4096 -O inline_data -d "$src" "$dir/ext4.img" 32M
# GPT: partition 2 holds ext4 and starts at LBA 6161
mke2fs -q -F -t ext4 -b 1024 -d "$src" "$dir/part.img" 24M
truncate -s 30M "$dir/gpt.img"
if command -v sgdisk > /dev/null; then
	sgdisk -a 1 -n 1:2048:4095 -t 1:8300 -n 2:6161:+24M -t 2:8300 "$dir/gpt.img" >/dev/null
else # the GPU machine has no sgdisk: the same two partitions
	python3 "$here/gpt_write.py" "$dir/gpt.img" 2048:4095 6161:55312
fi
dd if="$dir/part.img" of="$dir/gpt.img" bs=512 seek=6161 conv=notrunc status=none
rm -f "$dir/part.img"
truncate -s 4M "$dir/raw.img"
dd if="$src/models/m.gguf" of="$dir/raw.img" bs=1 seek=1048699 conv=notrunc status=none
# Fragmented files: a pattern that compresses (the GPU machine gets the
# images in a tarball) and still differs at every block and file.
mkdir -p "$dir/fsrc" "$dir/frag"
python3 - "$dir/fsrc" "$dir/frag" <<'PY'
import os, struct, sys
for k, name in enumerate(("frag_a", "frag_b", "frag_c")):
    data = bytearray()
    for blk in range(6000):
        data += struct.pack("<IIQ", k + 1, blk, 0x9e3779b97f4a7c15 * (blk + 1) % (1 << 64)) * 64
    open(os.path.join(sys.argv[1], name), "wb").write(data)
    for blk in range(0, 6000, 2):
        data[blk * 1024:(blk + 1) * 1024] = bytes(1024)
    open(os.path.join(sys.argv[2], name + ".want"), "wb").write(data)
PY
mke2fs -q -F -t ext4 -b 1024 -d "$dir/fsrc" "$dir/frag.img" 24M
for f in frag_a frag_b frag_c; do seq 0 2 5999 | awk -v f=$f '{ print "punch /" f, $1, $1 }'; done |
	debugfs -w -f - "$dir/frag.img" > /dev/null 2>&1
rm -rf "$dir/fsrc"
touch "$dir/ok"
