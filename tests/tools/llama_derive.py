#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Llama models derived from another for the engine's tests (issue 19).

usage: llama_derive.py SOURCE.gguf OUT.gguf --type TYPE [--embd 256] [--ff 512]
                       [--heads 4] [--kv-heads 2] [--layers 2] [--seed N]
                       [--mix q4_k_m] [--tile]

Keeps every tokenizer.* KV of SOURCE (its vocabulary, scores, token types,
special ids) and general.architecture, and writes a llama of the given
shape with random weights: the matrices (token_embd, attention, FFN, the
output head) in TYPE (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K), the
norms in F32. Quantised blocks hold random quants under binary16 scales of
a size that keeps the activations in range. The file is written by the
project's writer (gguf_writer.py). Deterministic for a --seed.

--mix q4_k_m writes attn_v, ffn_down and the output head in Q6_K, as
llama.cpp's Q4_K_M mostly does. --tile is for models of tens of gigabytes
(the engine's speed figures, bench/llama_speed.sh): each type's blocks come
from one tile of 16384 random blocks, every matrix written from a random
block of it onwards and round (streamed: memory stays small; a few seconds
a gigabyte, disk-bound).
"""
import argparse
import array
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as gw  # noqa: E402

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(b, o, t):
    """Offset past a value of type t encoded at b[o:]."""
    if t in SCALAR:
        return o + SCALAR[t]
    if t == 8:
        n, = struct.unpack_from("<Q", b, o)
        return o + 8 + n
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        if et in SCALAR:
            return o + n * SCALAR[et]
        for _ in range(n):
            o = skip_value(b, o, et)
        return o
    raise SystemExit("llama_derive: KV value type %d unknown" % t)


def source_kvs(path):
    """(key, type id, raw encoded value) of every KV of a GGUF v2/v3."""
    b = open(path, "rb").read()
    if b[:4] != b"GGUF":
        raise SystemExit("llama_derive: %s is no GGUF" % path)
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o, out = 24, []
    for _ in range(n_kv):
        n, = struct.unpack_from("<Q", b, o)
        key = b[o + 8:o + 8 + n].decode("utf-8")
        o += 8 + n
        t, = struct.unpack_from("<I", b, o)
        end = skip_value(b, o + 4, t)
        out.append((key, t, b[o + 4:end]))
        o = end
    return out


def f16(x):
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7bff


def floats(rng, n, scale):
    """n values, roughly uniform in [-scale, scale], as binary32."""
    raw = array.array("h", rng.randbytes(2 * n))
    return array.array("f", map((scale / 32768.0).__mul__, raw))


def tensor_data(rng, type_name, n0, n1, scale):
    n = n0 * n1
    if type_name == "F32":
        return floats(rng, n, scale).tobytes()
    if type_name == "F16":
        # floats()'s values come from 65,536 int16s: each one's binary16, as
        # packing every binary32 would give, looked up (14 s of CPU a model
        # packed one by one)
        raw = array.array("H", rng.randbytes(2 * n))
        step = scale / 32768.0
        half = [struct.unpack("<H", struct.pack("<e", struct.unpack("<f", struct.pack("<f", (u - (u >> 15 << 16)) * step))[0]))[0]
                for u in range(65536)]
        return array.array("H", map(half.__getitem__, raw)).tobytes()
    if type_name == "BF16":
        # a binary32's top half, truncated: bytes 2 and 3 of each little-endian value
        f = floats(rng, n, scale).tobytes()
        out = bytearray(2 * n)
        out[0::2], out[1::2] = f[2::4], f[3::4]
        return bytes(out)
    _, blk, size = gw.GGML[gw.GGML_ID[type_name]]
    nb = n // blk
    data = bytearray(rng.randbytes(nb * size))
    for i in range(nb):
        o = i * size
        if type_name in ("Q8_0", "Q4_0"):
            # d such that quants (up to 127 or 8) reach about `scale`
            struct.pack_into("<H", data, o, f16(rng.uniform(0.5, 1.0) * scale / (127 if type_name == "Q8_0" else 8)))
        elif type_name in ("Q4_K", "Q5_K"):
            # d * scale (6 bits) * q (4 or 5 bits) - dmin * min
            q = 15 if type_name == "Q4_K" else 31
            struct.pack_into("<HH", data, o, f16(rng.uniform(0.5, 1.0) * 2 * scale / (63 * q)),
                             f16(rng.uniform(0.5, 1.0) * scale / 63))
        elif type_name == "Q6_K":
            struct.pack_into("<H", data, o + 208, f16(rng.uniform(0.5, 1.0) * scale / (127 * 32)))
        else:
            raise SystemExit("llama_derive: type %s is not one the engine computes on" % type_name)
    return bytes(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--type", required=True,
                    help="TYPE, or TYPE,OPTION=VALUE,... (a case of tests/gpu/llama_cases.txt in one word, e.g. "
                         "Q4_K,mix=q4_k_m,ff=5120: the options below without their dashes)")
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--ff", type=int, default=512)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=["q4_k_m"], help="Q6_K for attn_v, ffn_down and output")
    ap.add_argument("--tile", action="store_true", help="matrices repeat one tile of random blocks (big models)")
    ap.add_argument("--arch", default="llama", help="general.architecture to write (refusal tests)")
    ap.add_argument("--override", action="append", default=[], metavar="NAME=TYPE",
                    help="write tensor NAME in TYPE instead, random bytes (refusal tests)")
    a = ap.parse_args()
    if "," in a.type:
        words = a.type.split(",")
        a = ap.parse_args(sys.argv[1:] + sum((["--" + w.split("=", 1)[0]] + w.split("=", 1)[1:] for w in words[1:]), [])
                          + ["--type", words[0]])
    override = dict(o.split("=", 1) for o in a.override)
    rng = random.Random(a.seed)
    kvs = source_kvs(a.source)
    vocab = None
    spec = gw.Spec()
    spec.kvs = [("general.architecture", "string", a.arch), ("general.name", "string", "derived for tests")]
    for key, t, raw in kvs:
        if key.startswith("tokenizer."):
            spec.kvs.append((key, t, gw.Raw(raw)))
            if key == "tokenizer.ggml.tokens":
                vocab, = struct.unpack_from("<Q", raw, 4)
    if not vocab:
        raise SystemExit("llama_derive: %s has no tokenizer.ggml.tokens" % a.source)
    hd = a.embd // a.heads
    for key, t, v in (("llama.context_length", "uint32", 4096), ("llama.embedding_length", "uint32", a.embd),
                      ("llama.block_count", "uint32", a.layers), ("llama.feed_forward_length", "uint32", a.ff),
                      ("llama.rope.dimension_count", "uint32", hd), ("llama.attention.head_count", "uint32", a.heads),
                      ("llama.attention.head_count_kv", "uint32", a.kv_heads),
                      ("llama.attention.layer_norm_rms_epsilon", "float32", 1e-5),
                      ("llama.rope.freq_base", "float32", 10000.0)):
        spec.kvs.append((key, t, v))

    tiles = {}

    def tiled(type_name, scale):
        """A writer of n bytes from the type's tile, from a random block on."""
        if type_name not in tiles:
            _, blk, _ = gw.GGML[gw.GGML_ID[type_name]] if type_name in gw.GGML_ID else (0, 1, 0)
            t = tensor_data(rng, type_name, blk * 16384, 1, scale)
            tiles[type_name] = (t + t, len(t) // 16384)
        tile, bsize = tiles[type_name]
        start = rng.randrange(16384) * bsize
        half = len(tile) // 2

        def write(f, size):
            pos, at = 0, start
            while pos < size:
                n = min(size - pos, half)
                f.write(tile[at:at + n])
                pos += n
                at = (at + n) % half
        return write

    def add(name, type_name, n0, n1, scale):
        type_name = override.pop(name, type_name)
        if a.mix and n1 > 1 and (name.endswith(("attn_v.weight", "ffn_down.weight")) or name == "output.weight"):
            type_name = "Q6_K"
        tn = gw.Tensor(name, type_name, [n0] if n1 == 1 else [n0, n1])
        if a.tile and n1 > 1:
            tn.data = tiled(type_name, scale)
        elif type_name in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"):
            tn.data = tensor_data(rng, type_name, n0, n1, scale)
        else:
            tn.data = rng.randbytes(gw.tensor_bytes(gw.GGML_ID[type_name], tn.dims))
        spec.tensors.append(tn)

    kvd = a.kv_heads * hd
    add("token_embd.weight", a.type, a.embd, vocab, 1.0)
    for l in range(a.layers):
        p = "blk.%d." % l
        add(p + "attn_norm.weight", "F32", a.embd, 1, 1.0)
        for n, rows in (("attn_q.weight", a.embd), ("attn_k.weight", kvd), ("attn_v.weight", kvd),
                        ("attn_output.weight", a.embd)):
            add(p + n, a.type, a.embd, rows, 0.15)
        add(p + "ffn_norm.weight", "F32", a.embd, 1, 1.0)
        add(p + "ffn_gate.weight", a.type, a.embd, a.ff, 0.15)
        add(p + "ffn_up.weight", a.type, a.embd, a.ff, 0.15)
        add(p + "ffn_down.weight", a.type, a.ff, a.embd, 0.1)
    add("output_norm.weight", "F32", a.embd, 1, 1.0)
    add("output.weight", a.type, a.embd, vocab, 0.2)
    if override:
        raise SystemExit("llama_derive: no tensor %s" % ", ".join(override))
    gw.build(spec, a.out, seed=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
