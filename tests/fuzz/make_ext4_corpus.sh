#!/bin/sh
# SPDX-License-Identifier: MIT
# Seed corpus for tests/fuzz/fuzz_ext4.c: small ext2/ext4 images, 1 KiB
# blocks, one block group: made by mke2fs, emptied of lost+found, filled by
# debugfs (which writes files as mke2fs -d does, holes and inline data
# included) so that the data sits right after the metadata; an htree
# directory indexed by e2fsck -D; a two-level extent tree from a sparse
# file. Free blocks are zeroed and trailing zeros cut off (the harness
# reads past the end of its input as zeros): the corpus stays under 120 KB.
# Usage (from the repository root): tests/fuzz/make_ext4_corpus.sh [OUT]
# (default tests/fuzz/corpus_ext4). Needs mke2fs, debugfs, e2fsck, python3.
set -eu
out=${1:-tests/fuzz/corpus_ext4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
export LC_ALL=C

printf 'hello\n' > "$tmp/a"
python3 -c "import sys; sys.stdout.write(''.join(chr(65 + i % 26) for i in range(1500)))" > "$tmp/b"
truncate -s 13K "$tmp/sp"
printf x >> "$tmp/sp"
echo 1 > "$tmp/n1"
: > "$tmp/empty"
python3 - "$tmp/frag" <<'PY'
import sys
# data in blocks 0, 2, 4, 6 and 8 (1 KiB blocks): five extents, one too many
# for the inode, so the tree gets an extent block
with open(sys.argv[1], 'wb') as f:
    for b in range(0, 10, 2):
        f.seek(b * 1024)
        f.write(bytes([0x41 + b]) * 1024)
PY

# One of everything: small and multi-block files, a sparse file (its last
# block is past the direct blocks of a block map), fast, slow, absolute,
# dangling and looping symlinks, nested directories.
tree() {
	cat <<EOF
rmdir /lost+found
mkdir d
mkdir d/e
write $tmp/a a
write $tmp/b b
write $tmp/sp sp
write $tmp/n1 d/n1
symlink l a
symlink sl $(printf 'z%.0s' $(seq 1 70))
symlink abs /d/n1
symlink dangling nowhere
symlink loop loop
symlink d/e/up ../../a
EOF
}

# Zero the blocks the bitmap of group 0 calls free, cut trailing zeros.
finish() {
	python3 - "$1" "$out/$2.img" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
sb = d[1024:2048]
bs = 1024 << struct.unpack_from('<I', sb, 24)[0]
first = struct.unpack_from('<I', sb, 20)[0]
count = struct.unpack_from('<I', sb, 4)[0]
incompat = struct.unpack_from('<I', sb, 0x60)[0]
gdt = (first + 1) * bs
bitmap = struct.unpack_from('<I', d, gdt)[0]
if incompat & 0x80 and struct.unpack_from('<H', sb, 0xfe)[0] >= 64:
    bitmap |= struct.unpack_from('<I', d, gdt + 0x20)[0] << 32
for b in range(first, count):
    i = b - first
    if not d[bitmap * bs + i // 8] >> (i % 8) & 1:
        d[b * bs:(b + 1) * bs] = bytes(bs)
n = len(d.rstrip(b'\0'))
open(sys.argv[2], 'wb').write(d[:(n + bs - 1) // bs * bs])
PY
}

mk() { # name, extra debugfs commands (stdin), mke2fs options...
	name=$1
	shift
	mke2fs -q -F -b 1024 -N "${inodes:-24}" "$@" "$tmp/$name.img" 128K 2>/dev/null
	{ tree; cat; } | debugfs -w -f - "$tmp/$name.img" >/dev/null 2>&1
	finish "$tmp/$name.img" "$name"
}

base='^has_journal,^resize_inode,^flex_bg'

# extents, 64bit, metadata_csum (128-byte inodes: 16-bit inode checksums);
# frag has a depth-1 extent tree
inodes=32 mk ext4 -t ext4 -I 128 -O "$base" <<EOF
write $tmp/frag frag
EOF

# no checksums, 32-bit descriptors, 128-byte inodes
mk ext4-nocsum -t ext4 -I 128 -O "$base,^metadata_csum,^64bit" </dev/null

# ext2: block maps
mk ext2 -t ext2 -I 128 -O '^resize_inode' </dev/null

# inline data (files, directories and a symlink in the inode), 256-byte
# inodes with extra fields and 32-bit checksums
mk inline -t ext4 -I 256 -O "$base,inline_data" </dev/null

# inline data past i_block: 100 bytes, 40 of them in the system.data xattr;
# and a file whose i_size claims more than the inode holds (refused as
# corrupt, never read as zeros)
head -c 100 "$tmp/b" > "$tmp/c100"
mk inline-ea -t ext4 -I 256 -O "$base,inline_data" <<EOF
write $tmp/c100 c
write $tmp/c100 big
sif big size 0xffffffff
EOF

# an htree directory, indexed by e2fsck -D
mke2fs -q -F -b 1024 -N 64 -I 128 -t ext4 -O "$base" "$tmp/htree.img" 128K 2>/dev/null
{
	echo "rmdir /lost+found"
	echo "mkdir h"
	i=0
	while [ $i -lt 48 ]; do
		echo "write $tmp/empty h/entry_with_a_longer_name_$i"
		i=$((i + 1))
	done
} | debugfs -w -f - "$tmp/htree.img" >/dev/null 2>&1
e2fsck -fyD "$tmp/htree.img" >/dev/null 2>&1 || [ $? -le 1 ]
finish "$tmp/htree.img" htree

echo "make_ext4_corpus: $(ls "$out" | wc -l) seeds, $(cat "$out"/* | wc -c) bytes in $out"
