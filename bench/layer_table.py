#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer table that bench/layer_base.cu reads, from `gpuos gguf --json`
(or gguf_writer.py --json) of a model: one tensor a line, "LAYER RANK
ABS_OFFSET BYTES", each layer's tensors together in file order, layers
ascending.

Usage: layer_table.py MODEL.json > TABLE"""
import json
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    lay = {}
    for t in sorted(json.load(open(sys.argv[1]))["tensors"], key=lambda t: t["abs_offset"]):
        m = re.match(r"blk\.(\d+)\.", t["name"])
        if m:
            lay.setdefault(int(m.group(1)), []).append(t)
    for n in sorted(lay):
        for rank, t in enumerate(lay[n]):
            print(n, rank, t["abs_offset"], t["byte_size"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
