#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host references for the model apps, from the GGUF file itself (tensor
offsets and sizes from a JSON description: tests/tools/gguf_writer.py --json
or `gpuos gguf --json`):

    sha NAME HEX          the SHA-256 of every tensor (apps/gguf_load.c)
    layer N CHECKSUM      the layer checksum of apps/layer_stream.c: per 4 KiB
                          chunk c of the r-th tensor of layer N (file order),
                          mix64(((c << 32) | crc32(chunk)) + r * 0x9e3779b97f4a7c15),
                          summed mod 2^64

usage: layer_sums.py MODEL.gguf MODEL.json
"""
import hashlib
import json
import re
import sys
import zlib

M = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)


def main(gguf, desc):
    tensors = json.load(open(desc))["tensors"]
    sums, ranks = {}, {}
    with open(gguf, "rb") as f:
        for t in tensors:
            f.seek(t["abs_offset"])
            data = f.read(t["byte_size"])
            if len(data) != t["byte_size"]:
                sys.exit("layer_sums: tensor %s ends past the end of %s" % (t["name"], gguf))
            print("sha", t["name"], hashlib.sha256(data).hexdigest())
            m = re.match(r"blk\.(\d+)\.", t["name"])
            if not m:
                continue
            n = int(m.group(1))
            rank = ranks.get(n, 0)
            ranks[n] = rank + 1
            s = sums.get(n, 0)
            for c in range(0, len(data), 4096):
                key = ((c // 4096) << 32) | zlib.crc32(data[c:c + 4096])
                s = (s + mix64((key + rank * 0x9e3779b97f4a7c15) & M)) & M
            sums[n] = s
    for n in sorted(sums):
        print("layer", n, "%016x" % sums[n])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
