#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""buffer_sum.py FILE: the whole-buffer checksum of gpuos/bench.h
(gpuos_bench_sum_words) of a file's bytes, as 16 hex digits: the sum mod 2^64,
over the 8-byte little-endian words w_i (a last partial word padded with
zeros), of splitmix64's finalizer of w_i + i * 0x9e3779b97f4a7c15. An
independent implementation, for checking apps/file_load and bench/vram_sum.h."""
import struct
import sys

M = (1 << 64) - 1
GOLD = 0x9e3779b97f4a7c15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    data += b"\0" * (-len(data) % 8)
    s = 0
    for i, (w,) in enumerate(struct.iter_unpack("<Q", data)):
        s += mix64((w + i * GOLD) & M)
    print("%016x" % (s & M))


if __name__ == "__main__":
    main()
