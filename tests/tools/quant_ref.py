#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent model of ggml's tensor types, against apps/llama/quant.h
and gpuos_dequant (gpuos/quant.h).

usage: quant_ref.py QUANT_CHECK [--seed S]
       quant_ref.py --dequant DEQUANT_CHECK [--seed S]

Written from ggml's block layouts element by element (no shared code with
quant.h, and a different shape: one element at a time, IEEE binary16 from
Python's own struct 'e' codec), it makes random rows of F32, F16, BF16,
Q4_0, Q8_0, Q4_K, Q5_K and Q6_K and random activations, runs QUANT_CHECK
(tests/tools/quant_check.c) on them and requires the same bits: every
dequantised element, the activations in the dot type (binary16, Q8_0, Q8_K
blocks), and the dot product with every float32 rounding in ggml's order.
Also binary16 and bfloat16 conversions of 20,000 bit patterns. Prints one
line per type and exits 1 on any difference.

With --dequant it runs DEQUANT_CHECK (tests/tools/dequant_check.c, which
calls gpuos_dequant on the host) on random rows of every type gpuos_dequant
takes (Q4_1, Q5_0, Q5_1, Q2_K and Q3_K too), into F32, F16 and BF16, with
odd binary16 scales among them (subnormal, zero, infinite, NaN, the
largest) and every bit pattern of the F32, F16 and BF16 sources: each
element must be ggml's value, rounded to nearest even, a NaN the output's
quiet NaN (0x7fc00000, 0x7e00, 0x7fc0).
"""
import math
import random
import struct
import subprocess
import sys

F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16 = 0, 1, 2, 3, 6, 7, 8, 30
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 10, 11, 12, 13, 14
NAMES = {F32: "F32", F16: "F16", BF16: "BF16", Q4_0: "Q4_0", Q4_1: "Q4_1", Q5_0: "Q5_0", Q5_1: "Q5_1", Q8_0: "Q8_0",
         Q2_K: "Q2_K", Q3_K: "Q3_K", Q4_K: "Q4_K", Q5_K: "Q5_K", Q6_K: "Q6_K"}
BLOCK = {F32: (1, 4), F16: (1, 2), BF16: (1, 2), Q4_0: (32, 18), Q4_1: (32, 20), Q5_0: (32, 22), Q5_1: (32, 24),
         Q8_0: (32, 34), Q2_K: (256, 84), Q3_K: (256, 110), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210)}
# where each block keeps its binary16 scales (d, and m or dmin)
SCALES = {Q4_0: (0,), Q4_1: (0, 2), Q5_0: (0,), Q5_1: (0, 2), Q8_0: (0,), Q2_K: (80, 82), Q3_K: (108,),
          Q4_K: (0, 2), Q5_K: (0, 2), Q6_K: (208,)}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def u16(b, o):
    return b[o] | b[o + 1] << 8


def h2f(h):
    return struct.unpack("<e", struct.pack("<H", h))[0]


def f2h(x):
    if math.isnan(x):
        return 0x7e00
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0xfc00 if x < 0 else 0x7c00


def f2u(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def u2f(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bf2f(h):
    return u2f(h << 16)


def f2bf(x):
    # round to nearest even by arithmetic on the value, not on its bits
    if math.isnan(x):
        return None
    if x == 0 or math.isinf(x):
        return f2u(x) >> 16
    m, e = math.frexp(abs(x))          # abs(x) = m * 2^e, 0.5 <= m < 1
    e = max(e, -125)                   # bfloat16 subnormals share binary32's exponent floor
    q = abs(x) / 2.0 ** (e - 8)        # 8 significant bits (7 stored + the leading one)
    r = round(q)                       # ties to even
    v = r * 2.0 ** (e - 8)
    if v >= 2.0 ** 128:
        return (0xff80 if x < 0 else 0x7f80)
    return f2u(math.copysign(v, x)) >> 16


def scale_min(sc, j):
    if j < 4:
        return sc[j] & 63, sc[j + 4] & 63
    return (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)


def element(t, blk, e):
    """Element e of one block as (value, int quant or None, sub-block scale info)."""
    if t == Q4_0:
        d = h2f(u16(blk, 0))
        b = blk[2 + e % 16]
        q = (b & 15 if e < 16 else b >> 4) - 8
        return f32(q * d)
    if t == Q8_0:
        d = h2f(u16(blk, 0))
        q = struct.unpack("b", bytes([blk[2 + e]]))[0]
        return f32(q * d)
    if t in (Q4_1, Q5_0, Q5_1):
        # ggml: x = q * d (+ m); the fifth bit of element e is bit e of the
        # 32-bit qh that follows d (and m)
        d = h2f(u16(blk, 0))
        qs = 4 if t == Q4_1 else 6 if t == Q5_0 else 8
        b = blk[qs + e % 16]
        q = b & 15 if e < 16 else b >> 4
        if t != Q4_1:
            qh = struct.unpack("<I", blk[qs - 4:qs])[0]
            q |= (qh >> e & 1) << 4
        if t == Q5_0:
            return f32((q - 16) * d)
        return f32(f32(q * d) + h2f(u16(blk, 2)))
    if t == Q2_K:
        # 16 scale bytes (scale | min << 4), 64 bytes of 2-bit quants, d, dmin
        sc = blk[e // 16]
        q = blk[16 + 32 * (e // 128) + e % 32] >> (2 * (e % 128 // 32)) & 3
        dl, ml = f32(h2f(u16(blk, 80)) * (sc & 15)), f32(h2f(u16(blk, 82)) * (sc >> 4))
        return f32(f32(dl * q) - ml)
    if t == Q3_K:
        # hmask[32], qs[64], 12 bytes of 16 6-bit scales, d
        q = blk[32 + 32 * (e // 128) + e % 32] >> (2 * (e % 128 // 32)) & 3
        hbit = blk[e % 32] >> (4 * (e // 128) + e % 128 // 32) & 1
        dl = f32(h2f(u16(blk, 108)) * (q3_scale(blk[96:108], e // 16) - 32))
        return f32(dl * (q - (0 if hbit else 4)))
    if t in (Q4_K, Q5_K):
        d, dmin = h2f(u16(blk, 0)), h2f(u16(blk, 2))
        return f32(f32(f32(d * kscale(t, blk, e)) * kquant(t, blk, e)) - f32(dmin * kmin(t, blk, e)))
    if t == Q6_K:
        d = h2f(u16(blk, 208))
        return f32(f32(d * kscale(t, blk, e)) * kquant(t, blk, e))
    raise ValueError(t)


def q3_scale(sc, j):
    """ggml's Q3_K unpacking: low nibbles of bytes 0..7 (then their high
    nibbles), high bit pairs from bytes 8..11, two bits per group of four."""
    lo = sc[j] & 15 if j < 8 else sc[j - 8] >> 4
    return lo | (sc[8 + j % 4] >> (2 * (j // 4)) & 3) << 4


def kscale(t, blk, e):
    if t == Q6_K:
        return struct.unpack("b", bytes([blk[192 + e // 16]]))[0]
    return scale_min(blk[4:16], e // 32)[0]


def kmin(t, blk, e):
    return scale_min(blk[4:16], e // 32)[1]


def kquant(t, blk, e):
    c, r = e // 64, e % 64
    if t == Q4_K:
        b = blk[16 + 32 * c + r % 32]
        return b & 15 if r < 32 else b >> 4
    if t == Q5_K:
        b = blk[48 + 32 * c + r % 32]
        lo = b & 15 if r < 32 else b >> 4
        bit = 2 * c + (1 if r >= 32 else 0)
        return lo + (16 if blk[16 + r % 32] >> bit & 1 else 0)
    h, r = e // 128, e % 128
    g, l = r // 32, r % 32
    b = blk[64 * h + l + (32 if g in (1, 3) else 0)]
    nib = b & 15 if g in (0, 1) else b >> 4
    return (nib | ((blk[128 + 32 * h + l] >> (2 * g)) & 3) << 4) - 32


def dequant(t, row, n):
    if t == F32:
        return list(struct.unpack("<%df" % n, row))
    if t == F16:
        return [h2f(u16(row, 2 * i)) for i in range(n)]
    if t == BF16:
        return [bf2f(u16(row, 2 * i)) for i in range(n)]
    be, bb = BLOCK[t]
    return [element(t, row[(i // be) * bb:(i // be + 1) * bb], i % be) for i in range(n)]


def round_away(x):
    return math.copysign(math.floor(abs(x) + 0.5), x)


def act_q8_0(x):
    out = b""
    for i in range(0, len(x), 32):
        v = x[i:i + 32]
        amax = max(abs(a) for a in v)
        d = f32(amax / 127)
        idv = f32(1 / d) if d else 0.0
        qs = [int(round_away(f32(a * idv))) for a in v]
        out += struct.pack("<H32b", f2h(d), *qs)
    return out


Q8K = 304  # bytes of an activation's Q8_K block in the engine's layout


def act_q8_k(x):
    out = b""
    for i in range(0, len(x), 256):
        v = x[i:i + 256]
        amax, mx = 0.0, 0.0
        for a in v:
            if abs(a) > amax:
                amax, mx = abs(a), a
        if amax == 0:
            d, qs = 0.0, [0] * 256
        else:
            iscale = f32(-127 / mx)
            qs = [min(127, round(f32(iscale * a))) for a in v]
            d = f32(1 / iscale)
        bs = [sum(qs[16 * j:16 * j + 16]) for j in range(16)]
        # the engine's layout (apps/llama/quant.h struct llama_q8_k): the
        # quants, the scale, the sums of 16, 12 zero bytes
        out += struct.pack("<256bf16h12x", *qs, d, *bs)
    return out


def block_q8_0_dot(t, row, act, i):
    """Block i of a Q4_0 or Q8_0 row against block i of Q8_0 activations:
    the integer sum and the float32 product of the two scales."""
    bb = 18 if t == Q4_0 else 34
    blk, ab = row[bb * i:bb * i + bb], act[34 * i:34 * i + 34]
    ys = struct.unpack("32b", ab[2:])
    if t == Q4_0:
        qs = [(blk[2 + j % 16] & 15 if j < 16 else blk[2 + j % 16] >> 4) - 8 for j in range(32)]
    else:
        qs = list(struct.unpack("32b", blk[2:]))
    return sum(a * b for a, b in zip(qs, ys)), f32(h2f(u16(blk, 0)) * h2f(u16(ab, 0)))


def dot(t, row, x, n):
    """(activations in the dot type, the dot product) as ggml's CPU path takes them."""
    if t == F32:
        w = dequant(t, row, n)
        return struct.pack("<%df" % n, *x), f32(sum(f32(a * b) for a, b in zip(w, x)))
    if t in (F16, BF16):
        enc, dec = (f2h, h2f) if t == F16 else (f2bf, bf2f)
        xa = [enc(a) for a in x]
        w = dequant(t, row, n)
        return struct.pack("<%dH" % n, *xa), f32(sum(f32(a * dec(b)) for a, b in zip(w, xa)))
    if t in (Q4_0, Q8_0):
        act = act_q8_0(x)
        s = 0.0
        for i in range(n // 32):
            sumi, d = block_q8_0_dot(t, row, act, i)
            s = f32(s + f32(sumi * d))
        return act, s
    act = act_q8_k(x)
    bb = BLOCK[t][1]
    sums, s = [0.0] * 8, 0.0
    for i in range(n // 256):
        blk, ab = row[bb * i:bb * (i + 1)], act[Q8K * i:Q8K * (i + 1)]
        yd = struct.unpack("<f", ab[256:260])[0]
        ys = struct.unpack("256b", ab[:256])
        bsums = struct.unpack("<16h", ab[260:292])
        aux = [0] * 8
        for e in range(256):
            aux[e % 8] += kscale(t, blk, e) * (kquant(t, blk, e) * ys[e])
        if t == Q6_K:
            d = f32(h2f(u16(blk, 208)) * yd)
        else:
            d = f32(h2f(u16(blk, 0)) * yd)
            dmin = f32(h2f(u16(blk, 2)) * yd)
            mins = sum(scale_min(blk[4:16], j // 2)[1] * bsums[j] for j in range(16))
            s = f32(s - f32(dmin * mins))
        sums = [f32(sums[l] + f32(d * aux[l])) for l in range(8)]
    for l in range(8):
        s = f32(s + sums[l])
    return act, s


def random_row(rng, t, n):
    if t == F32:
        return struct.pack("<%df" % n, *[f32(rng.gauss(0, 1)) for _ in range(n)])
    if t == F16:
        return struct.pack("<%dH" % n, *[f2h(rng.gauss(0, 1)) for _ in range(n)])
    if t == BF16:
        return struct.pack("<%dH" % n, *[f2bf(rng.gauss(0, 1)) for _ in range(n)])
    be, bb = BLOCK[t]
    row = bytearray(rng.getrandbits(8) for _ in range(n // be * bb))
    for i in range(n // be):
        for so in SCALES[t]:   # finite scales of a plausible size; the rest random bits
            struct.pack_into("<H", row, i * bb + so, f2h(rng.choice([1, -1]) * rng.uniform(1e-4, 0.05)))
    return bytes(row)


# binary16 scales ggml meets in damaged or odd files: subnormals, zeros,
# infinities, NaNs (quiet, signalling, negative), the largest, the smallest normal
ODD = [0x0001, 0x03ff, 0x8200, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x7bff, 0xfbff, 0x0400]


def odd_row(rng, t, n):
    """Random bits everywhere, and for the quantised types odd scales in
    half of the blocks (each scale field odd on its own)."""
    be, bb = BLOCK[t]
    row = bytearray(rng.getrandbits(8) for _ in range(n // be * bb))
    if t in SCALES:
        for i in range(n // be):
            for so in SCALES[t]:
                if rng.random() < 0.5:
                    struct.pack_into("<H", row, i * bb + so, rng.choice(ODD))
    return bytes(row)


def encode(out, v):
    """v (a float32 value) as gpuos_dequant writes it: NaN as the output's
    quiet NaN, else rounded to nearest even."""
    if out == F32:
        return struct.pack("<I", 0x7fc00000 if math.isnan(v) else f2u(v))
    if out == F16:
        return struct.pack("<H", 0x7e00 if math.isnan(v) else f2h(v))
    return struct.pack("<H", 0x7fc0 if math.isnan(v) else f2bf(v))


def dequant_main(checker, rng):
    ok = True
    outs = (F32, F16, BF16)
    for t in (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K):
        be = BLOCK[t][0]
        cases = []
        for out in outs:
            for kind in ("normal", "odd", "odd"):
                n = 512 if be > 1 else 2048
                row = random_row(rng, t, n) if kind == "normal" else odd_row(rng, t, n)
                cases.append((out, row, n))
        inp = "".join("%d %d %d %s\n" % (t, out, n, row.hex()) for out, row, n in cases)
        r = subprocess.run([checker], input=inp, capture_output=True, text=True)
        lines = r.stdout.split("\n")
        bad, nodd = [], 0
        for k, (out, row, n) in enumerate(cases):
            if k >= len(lines) or not lines[k] or lines[k].startswith("error"):
                bad.append("case %d: no answer (exit %d: %s)" % (k, r.returncode, (lines[k] if k < len(lines) else
                                                                               r.stderr.strip())[:200]))
                continue
            got = bytes.fromhex(lines[k])
            vals = dequant(t, row, n)
            nodd += sum(1 for v in vals if math.isnan(v) or math.isinf(v))
            want = b"".join(encode(out, v) for v in vals)
            if got != want:
                w = len(want) // n
                i = next((i for i in range(n) if got[w * i:w * i + w] != want[w * i:w * i + w]), None)
                bad.append("case %d (%s): element %s is %s, want %s" % (k, NAMES[out], i, got[w * i:w * i + w].hex() if i is not None else
                           "(%d bytes)" % len(got), want[w * i:w * i + w].hex() if i is not None else "(%d bytes)" % len(want)))
        print("%s %-5s into F32, F16, BF16: %d rows (%d elements NaN or infinite)%s" %
              ("ok  " if not bad else "FAIL", NAMES[t], len(cases), nodd, "" if not bad else ": " + "; ".join(bad[:3])))
        ok = ok and not bad and r.returncode == 0
    return 0 if ok else 1


def random_x(rng, n, kind):
    if kind == "zeros":
        return [0.0] * n
    if kind == "ties":  # a block maximum of 127: scales of 1, quants exactly halfway
        return [127.0 if i % 32 == 0 else rng.randrange(-253, 254, 2) / 2 for i in range(n)]
    if kind == "spike":
        x = [0.0] * n
        x[rng.randrange(n)] = -3.5
        return x
    return [f32(rng.gauss(0, 1) * rng.choice([1e-3, 1, 30])) for _ in range(n)]


def conversions(rng, checker):
    pats = [rng.getrandbits(32) for _ in range(16000)]
    # the edges: around the smallest and largest binary16 values, ties, 0, inf, NaN
    for base in (0x33000000, 0x33800000, 0x387fc000, 0x38800000, 0x477fe000, 0x477ff000, 0x7f800000):
        pats += [(base + k) & 0xffffffff for k in range(-300, 300, 7)] + [base | 0x80000000]
    pats += [0, 0x80000000, 0x7fc00000, 0x7f800001, 0x3f800000, 0x3f801000, 0x3f803000]
    r = subprocess.run([checker], input="".join("h %08x\n" % p for p in pats), capture_output=True, text=True)
    bad = 0
    for p, line in zip(pats, r.stdout.split("\n")):
        h, b, hb, bb = (int(v, 16) for v in line.split())
        x = u2f(p)
        if math.isnan(x):
            ok = (h & 0x7c00) == 0x7c00 and h & 0x3ff and (b & 0x7f80) == 0x7f80 and b & 0x7f
        else:
            ok = h == f2h(x) and b == f2bf(x) and f2u(h2f(h)) == hb and f2u(bf2f(b)) == bb
        if not ok:
            bad += 1
            if bad <= 5:
                print("  binary32 %08x: got f16 %04x bf16 %04x, want %04x %04x" % (p, h, b, f2h(x), f2bf(x) or 0))
    print("%s conversions: %d bit patterns, %d differ" % ("ok  " if not bad else "FAIL", len(pats), bad))
    return bad == 0 and r.returncode == 0 and len(r.stdout.split("\n")) > len(pats)


def lanes_dot(t, row, act, n):
    """The engine's product (apps/llama/lanes.h): pieces of 32 elements,
    piece p lane p % 32's, each piece a double made exactly as the C does,
    each lane's pieces added in order in double, the 32 lanes by the
    butterfly's tree, then binary32."""
    pieces = []
    if t in (F32, F16, BF16):
        w = dequant(t, row, n)
        if t == F32:
            a = list(struct.unpack("<%df" % n, act))
        else:
            a = [(h2f if t == F16 else bf2f)(v) for v in struct.unpack("<%dH" % n, act)]
        for p in range((n + 31) // 32):
            pieces.append([f32(w[e] * a[e]) for e in range(32 * p, min(n, 32 * p + 32))])
    elif t in (Q4_0, Q8_0):
        for i in range(n // 32):
            sumi, d = block_q8_0_dot(t, row, act, i)
            pieces.append([f32(sumi * d)])
    else:
        bb = BLOCK[t][1]
        for i in range(n // 256):
            blk, ab = row[bb * i:bb * (i + 1)], act[Q8K * i:Q8K * (i + 1)]
            yd = struct.unpack("<f", ab[256:260])[0]
            ys = struct.unpack("256b", ab[:256])
            bsums = struct.unpack("<16h", ab[260:292])
            for s in range(8):
                es = range(32 * s, 32 * s + 32)
                if t == Q6_K:
                    d = f32(h2f(u16(blk, 208)) * yd)
                    si = sum(kscale(t, blk, e) * kquant(t, blk, e) * ys[e] for e in es)
                    pieces.append([d * si])
                else:
                    d, dmin = f32(h2f(u16(blk, 0)) * yd), f32(h2f(u16(blk, 2)) * yd)
                    sc, m = scale_min(blk[4:16], s)
                    si = sum(kquant(t, blk, e) * ys[e] for e in es)
                    pieces.append([d * (sc * si) - dmin * (m * (bsums[2 * s] + bsums[2 * s + 1]))])
    v = [0.0] * 32
    for p, terms in enumerate(pieces):
        for x in terms:
            v[p % 32] += x
    off = 16
    while off:
        for k in range(off):
            v[k] += v[k + off]
        off >>= 1
    return f32(v[0])


def main():
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 1
    rng = random.Random(seed)
    if sys.argv[1] == "--dequant":
        return dequant_main(sys.argv[2], rng)
    checker = sys.argv[1]
    ok = conversions(rng, checker)
    for t in (F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K):
        cases = []
        # 6144 elements: 192 pieces, so lanes.h's groups of LLAMA_DEPTH x 32
        # pieces run, and the pieces left after them
        for kind, n in (("normal", 512), ("normal", 512), ("normal", 6144), ("zeros", 512), ("spike", 512),
                        ("ties", 512)):
            cases.append((random_row(rng, t, n), random_x(rng, n, kind), n))
        inp = "".join("%d %d %s %s\n" % (t, n, row.hex(), struct.pack("<%df" % n, *x).hex()) for row, x, n in cases)
        r = subprocess.run([checker], input=inp, capture_output=True, text=True)
        lines = r.stdout.split("\n")
        bad = []
        for k, (row, x, n) in enumerate(cases):
            if k >= len(lines) or len(lines[k].split()) != 4:
                bad.append("case %d: no answer (exit %d)" % (k, r.returncode))
                continue
            yh, ah, dh, lh = lines[k].split()
            want_y = dequant(t, row, n)
            got_y = struct.unpack("<%df" % n, bytes.fromhex(yh))
            ey = [i for i in range(n) if f2u(got_y[i]) != f2u(want_y[i])]
            want_a, want_d = dot(t, row, x, n)
            got_d = struct.unpack("<f", bytes.fromhex(dh))[0]
            if ey:
                bad.append("case %d: element %d dequantised %r, want %r" % (k, ey[0], got_y[ey[0]], want_y[ey[0]]))
            if bytes.fromhex(ah) != want_a:
                i = next(i for i in range(len(want_a)) if bytes.fromhex(ah)[i:i + 1] != want_a[i:i + 1])
                bad.append("case %d: activations differ from byte %d" % (k, i))
            if f2u(got_d) != f2u(want_d):
                bad.append("case %d: dot %r, want %r" % (k, got_d, want_d))
            got_l, want_l = struct.unpack("<f", bytes.fromhex(lh))[0], lanes_dot(t, row, want_a, n)
            if f2u(got_l) != f2u(want_l):
                bad.append("case %d: the lanes' dot %r, want %r" % (k, got_l, want_l))
        print("%s %-5s %d rows of 512 and 6144: dequantised, activations, dot products (ggml's order and the lanes')%s" %
              ("ok  " if not bad else "FAIL", NAMES[t], len(cases), "" if not bad else ": " + "; ".join(bad[:3])))
        ok = ok and not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
