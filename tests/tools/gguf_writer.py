#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gguf_writer.py - the project's own GGUF writer for tests (Python 3, stdlib only).

Writes GGUF v2/v3 files (ggml docs/gguf.md) with every KV type, nested arrays,
a chosen general.alignment, KVs in a shuffled order, mixed ggml tensor types,
layer groups blk.N.*, tensors at offsets above 2^32 in sparse files, and a
catalogue of hostile variants. Next to each file it can write a JSON
description of what it wrote, in the shape gguf_compare.py compares:

  {"version", "tensor_count", "kv_count", "alignment", "data_offset",
   "kv": [{"key", "type", "value"}            scalars and strings
          {"key", "type": "array", "elem_type", "count", "value": [first 16]}],
   "tensors": [{"name", "type", "type_id", "dims", "rel_offset",
                "abs_offset", "byte_size"}]}

Nested arrays appear as {"elem_type", "count", "value": [first 16]} items one
level down and as {"elem_type", "count"} below that. Floats that JSON cannot
carry are the strings "nan", "inf", "-inf". For a hostile case the JSON holds
{"expect": {"errno": "EINVAL", "why": "<substring of the parser's reason>"}}.

Usage:
  gguf_writer.py --list
  gguf_writer.py --case NAME OUT.gguf [--json OUT.json] [--seed N]
  gguf_writer.py --random OUT.gguf [--json OUT.json] [--seed N] [--version 2|3]
                 [--alignment A]
  gguf_writer.py --case demo OUT.gguf [--json OUT.json] [--seed N] [--layers L]
                 [--layer-mib M [--alignment A]] [--split N]

The "demo" case is a llama-shaped model of L layers (default 8, about 10 MB
each, nine tensors of seven ggml types) plus token_embd and output: every
byte of every tensor comes from a generator seeded with --seed (no holes),
so checksums over the data mean something. Other cases give tensors over
1 MiB no data (sparse holes).

--layer-mib M sizes the demo instead: each layer holds M MiB of tensor data
(within 1 %), shaped like llama-2 70B: heads of 128, one KV head per eight,
ffn about 3.5 x dim, Q4_K but Q6_K for attn_v and ffn_down (Q8_0 where ffn is
no multiple of 256), vocabulary 32000. `--layers 80 --layer-mib 110` is a
70B-shaped model of 8.7 GiB. Its data is streamed (a few MiB in memory
whatever the size) from one seeded random block, every 4 KiB chunk of a
tensor stamped with a value of its own: no two chunks of the model are
equal. Deterministic for a given --seed.
"""
import argparse
import array
import errno
import json
import math
import os
import random
import struct
import sys

# ---- formats ------------------------------------------------------------------------

T = {
    "uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5,
    "float32": 6, "bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11,
    "float64": 12,
}
T_NAME = {v: k for k, v in T.items()}
SCALAR_FMT = {
    "uint8": "<B", "int8": "<b", "uint16": "<H", "int16": "<h", "uint32": "<I",
    "int32": "<i", "float32": "<f", "bool": "<?", "uint64": "<Q", "int64": "<q",
    "float64": "<d",
}

# ggml types: id -> (name, elements per block, bytes per block), from ggml's
# ggml-common.h block structs (written out here independently of runtime/model/gguf/gguf.c).
QK_K = 256
GGML = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", QK_K, 84), 11: ("Q3_K", QK_K, 110), 12: ("Q4_K", QK_K, 144),
    13: ("Q5_K", QK_K, 176), 14: ("Q6_K", QK_K, 210), 15: ("Q8_K", QK_K, 292),
    16: ("IQ2_XXS", QK_K, 66), 17: ("IQ2_XS", QK_K, 74), 18: ("IQ3_XXS", QK_K, 98),
    19: ("IQ1_S", QK_K, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", QK_K, 110),
    22: ("IQ2_S", QK_K, 82), 23: ("IQ4_XS", QK_K, 136), 24: ("I8", 1, 1),
    25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", QK_K, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", QK_K, 54),
    35: ("TQ2_0", QK_K, 66), 39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
GGML_ID = {v[0]: k for k, v in GGML.items()}
STR_MAX = 65536   # bytes of a string the parser keeps (GPUOS_GGUF_STR_MAX)
ITEMS = 16        # array items kept (GPUOS_GGUF_ARR_ITEMS)


class Arr:
    """An array value: elem_type name and items (Arr items for nested arrays)."""

    def __init__(self, elem_type, items):
        self.elem_type = elem_type
        self.items = items


class Raw:
    """Bytes written as they are (hostile cases)."""

    def __init__(self, data):
        self.data = data


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def enc_str(s, version=3):
    b = s if isinstance(s, (bytes, bytearray)) else s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def enc_value(t, v):
    if isinstance(v, Raw):
        return v.data
    if t == "string":
        return enc_str(v)
    if t == "array":
        out = struct.pack("<IQ", T[v.elem_type], len(v.items))
        return out + b"".join(enc_value(v.elem_type, x) for x in v.items)
    return struct.pack(SCALAR_FMT[t], v)


def desc_scalar(t, v):
    if t == "float32":
        v = f32(v)
    if t in ("float32", "float64"):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if t == "bool":
        return bool(v)
    if t == "string":
        b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        return b[:STR_MAX].decode("utf-8", errors="replace")
    return v


def desc_array(a, level):
    d = {"elem_type": a.elem_type, "count": len(a.items)}
    if level <= 1:
        if a.elem_type == "array":
            d["value"] = [desc_array(x, level + 1) for x in a.items[:ITEMS]]
        else:
            d["value"] = [desc_scalar(a.elem_type, x) for x in a.items[:ITEMS]]
    return d


def str_truncated(t, v):
    if t == "string":
        b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        return len(b) > STR_MAX
    if t == "array" and isinstance(v, Arr) and v.elem_type == "string":
        return any(str_truncated("string", x) for x in v.items[:ITEMS])
    return False


def align_up(x, a):
    return (x + a - 1) // a * a


def tensor_bytes(type_id, dims):
    _, blk, size = GGML[type_id]
    ne = list(dims) + [1] * (4 - len(dims))
    rows = ne[1] * ne[2] * ne[3]
    return ne[0] // blk * size * rows


class Tensor:
    def __init__(self, name, type_name, dims, offset=None, raw_type=None, raw=None):
        self.name = name
        self.type_name = type_name
        self.dims = dims
        self.offset = offset        # explicit rel offset (sparse/gap layouts)
        self.raw_type = raw_type    # type id written instead (hostile)
        self.raw = raw              # whole tensor info bytes written instead (hostile)
        self.data = None            # the tensor's bytes, or a function(f, size) that writes them, when the
                                    # caller makes them (llama_derive.py)


class Spec:
    def __init__(self):
        self.version = 3
        self.magic = b"GGUF"
        self.alignment = None       # None: no general.alignment key (32)
        self.alignment_kv = True
        self.kvs = []               # (key, type, value)
        self.tensors = []
        self.tensor_count = None    # override written counts (hostile)
        self.kv_count = None
        self.pad_end = True         # pad the file to the alignment after the last tensor
        self.cut = None             # truncate the file to this many bytes (hostile)
        self.expect = None          # {"errno", "why"} for hostile cases
        self.patch = []             # (offset, bytes) applied last
        self.fill_random = False    # every tensor's bytes from random.Random(seed), no holes
        self.fill_fast = False      # every tensor's bytes from Filler(seed), streamed, no holes


class Filler:
    """Tensor bytes at the speed of memcpy, deterministic for a seed.

    One random block, read for each tensor from a phase of its own; the
    block's length is not a multiple of 4096, so the 4 KiB chunks of a long
    tensor do not repeat with it. The first 8 bytes of each 4 KiB chunk of a
    tensor (the unit that apps/layer_stream.c checksums) hold salt + (t << 36)
    + k for tensor t, chunk k: no two chunks of a model are equal, so data
    loaded to the wrong place changes a checksum."""

    BLOCK = (4 << 20) + 4104    # a multiple of 8, not of 4096
    PIECE = 4 << 20             # bytes per write; a multiple of 4096

    def __init__(self, seed):
        self.rng = random.Random(seed)
        block = self.rng.randbytes(self.BLOCK)
        self.ring = memoryview(block + block[:self.PIECE])   # a piece never wraps
        self.salt = self.rng.getrandbits(62)                 # stamps stay below 2^63
        self.buf = bytearray(self.PIECE + 8)                 # + 8: a stamp past a short tail
        self.words = memoryview(self.buf).cast("Q")

    def write(self, f, size, t):
        if t >= (1 << 20) or size >= (1 << 48):
            raise SystemExit("gguf_writer: tensor %d of %d bytes is past what the stamps can tell apart"
                             % (t, size))
        phase = self.rng.randrange(self.BLOCK)
        stamp = self.salt + (t << 36)
        out = memoryview(self.buf)
        pos = 0
        while pos < size:
            n = min(self.PIECE, size - pos)
            src = (phase + pos) % self.BLOCK
            self.buf[:n] = self.ring[src:src + n]
            chunks = (n + 4095) // 4096
            first = stamp + pos // 4096
            self.words[0:chunks * 512:512] = array.array("Q", range(first, first + chunks))
            f.write(out[:n])
            pos += n


def build(spec, path, seed=0):
    """Write spec to path; return the JSON description."""
    align = spec.alignment if spec.alignment is not None else 32
    kvs = list(spec.kvs)
    if spec.alignment is not None and spec.alignment_kv:
        kvs.append(("general.alignment", "uint32", spec.alignment))
    if seed is not None:
        random.Random(seed).shuffle(kvs)
    spec.written_kvs = kvs      # what write_split copies into the first shard

    head = bytearray()
    head += spec.magic + struct.pack("<I", spec.version)
    n_t = spec.tensor_count if spec.tensor_count is not None else len(spec.tensors)
    n_kv = spec.kv_count if spec.kv_count is not None else len(kvs)
    head += struct.pack("<QQ", n_t, n_kv)
    for key, t, v in kvs:
        head += key.data if isinstance(key, Raw) else enc_str(key)
        head += struct.pack("<I", T[t] if isinstance(t, str) else t)
        head += enc_value(t, v)

    # tensor offsets: explicit, else packed in order with padding
    offs, off = [], 0
    for tn in spec.tensors:
        if tn.raw is not None:
            offs.append(0)
            continue
        size = tensor_bytes(GGML_ID[tn.type_name], tn.dims) if tn.type_name in GGML_ID else 0
        o = tn.offset if tn.offset is not None else off
        offs.append(o)
        off = align_up(o + size, align)
    for tn, o in zip(spec.tensors, offs):
        if tn.raw is not None:
            head += tn.raw
            continue
        head += enc_str(tn.name)
        head += struct.pack("<I", len(tn.dims))
        head += b"".join(struct.pack("<Q", d) for d in tn.dims)
        tid = tn.raw_type if tn.raw_type is not None else GGML_ID[tn.type_name]
        head += struct.pack("<IQ", tid, o)
    data_offset = align_up(len(head), align)

    end = 0
    with open(path, "wb") as f:
        f.write(head)
        f.write(b"\0" * (data_offset - len(head)) if spec.tensors else b"")
        if spec.expect:     # hostile: sizes may be absurd; write data only when sane
            sizes = [tensor_bytes(GGML_ID[t.type_name], t.dims) + (t.offset or 0)
                     for t in spec.tensors if t.raw is None and t.type_name in GGML_ID]
            if sum(sizes) > (1 << 30):
                spec.tensors = []
        fill = random.Random(seed) if spec.fill_random else None
        fast = Filler(seed) if spec.fill_fast else None
        for i, (tn, o) in enumerate(zip(spec.tensors, offs)):
            if tn.raw is not None or tn.type_name not in GGML_ID:
                continue
            size = tensor_bytes(GGML_ID[tn.type_name], tn.dims)
            end = max(end, o + size)
            if callable(tn.data):       # a writer of its own: tn.data(f, size)
                f.seek(data_offset + o)
                tn.data(f, size)
            elif tn.data is not None:
                if len(tn.data) != size:
                    raise SystemExit("gguf_writer: %s: %d bytes given, its shape takes %d" % (tn.name, len(tn.data), size))
                f.seek(data_offset + o)
                f.write(tn.data)
            elif fast is not None:
                f.seek(data_offset + o)
                fast.write(f, size, i)
            elif fill is not None:
                f.seek(data_offset + o)
                f.write(fill.randbytes(size))
            elif size <= (1 << 20):       # small tensors get a pattern; big ones stay holes
                f.seek(data_offset + o)
                f.write(bytes(((i * 31 + j) & 0xFF) for j in range(size)))
        if spec.tensors:
            total = data_offset + (align_up(end, align) if spec.pad_end else end)
            f.truncate(total)
    if spec.cut is not None:
        os.truncate(path, spec.cut)
    if spec.patch:
        with open(path, "r+b") as f:
            for o, b in spec.patch:
                f.seek(o)
                f.write(b)

    if spec.expect:
        return {"expect": spec.expect}
    d = {
        "version": spec.version,
        "tensor_count": n_t,
        "kv_count": n_kv,
        "alignment": align,
        "data_offset": data_offset,
        "kv": [],
        "tensors": [],
    }
    d["kv"] = describe_kvs(kvs)
    for tn, o in zip(spec.tensors, offs):
        tid = GGML_ID[tn.type_name]
        d["tensors"].append({
            "name": tn.name,
            "type": tn.type_name,
            "type_id": tid,
            "dims": list(tn.dims),
            "rel_offset": o,
            "abs_offset": data_offset + o,
            "byte_size": tensor_bytes(tid, tn.dims),
        })
    return d


def describe_kvs(kvs):
    out = []
    for key, t, v in kvs:
        e = {"key": key, "type": t}
        if t == "array":
            a = desc_array(v, 0)
            e["elem_type"] = a["elem_type"]
            e["count"] = a["count"]
            e["value"] = a["value"]
        else:
            e["value"] = desc_scalar(t, v)
        if str_truncated(t, v):
            e["truncated"] = True
        out.append(e)
    return out


# ---- split models (llama.cpp's gguf-split layout) -------------------------------------------
def split_name(path, k, n):
    """Shard k (0-based) of n: PREFIX-0000K-of-0000N.gguf, K counted from 1."""
    stem = path[:-5] if path.endswith(".gguf") else path
    return "%s-%05d-of-%05d.gguf" % (stem, k + 1, n)


def write_split(spec, path, d, n):
    """The file build() wrote at path, as n shards beside it in gguf-split's
    layout: the tensors in order, ceil(count / n) a shard; the first shard
    holds every KV of the original, every shard the split KVs (split.no
    uint16 from 0, split.count uint16, split.tensors.count int32 of the
    whole model). Shards after the first have no general.alignment, so
    their data is aligned to the default 32. Tensor bytes are copied from
    the original. Returns the shards' descriptions."""
    ts = d["tensors"]
    if not 1 <= n <= len(ts):
        raise SystemExit("gguf_writer: --split %d: the model has %d tensors" % (n, len(ts)))
    per = -(-len(ts) // n)
    if per * (n - 1) >= len(ts):
        raise SystemExit("gguf_writer: --split %d: %d tensors leave a shard empty" % (n, len(ts)))
    descs = []
    with open(path, "rb", buffering=0) as src:  # unbuffered: lseek(SEEK_DATA) below moves its position
        for k in range(n):
            part = ts[k * per:(k + 1) * per]
            kvs = (list(spec.written_kvs) if k == 0 else []) + [
                ("split.no", "uint16", k), ("split.count", "uint16", n), ("split.tensors.count", "int32", len(ts))]
            align = d["alignment"] if k == 0 else 32
            head = bytearray(spec.magic + struct.pack("<I", spec.version) + struct.pack("<QQ", len(part), len(kvs)))
            for key, t, v in kvs:
                head += enc_str(key) + struct.pack("<I", T[t]) + enc_value(t, v)
            offs, off = [], 0
            for t in part:
                offs.append(off)
                off = align_up(off + t["byte_size"], align)
            for t, o in zip(part, offs):
                head += enc_str(t["name"]) + struct.pack("<I", len(t["dims"]))
                head += b"".join(struct.pack("<Q", x) for x in t["dims"])
                head += struct.pack("<IQ", t["type_id"], o)
            data_offset = align_up(len(head), align)
            with open(split_name(path, k, n), "wb") as f:
                f.write(head + bytes(data_offset - len(head)))
                for t, o in zip(part, offs):
                    f.seek(data_offset + o)
                    src.seek(t["abs_offset"])
                    left = t["byte_size"]
                    while left:
                        pos = src.tell()
                        try:  # the original's holes, skipped without reading them
                            hole = os.lseek(src.fileno(), pos, os.SEEK_DATA) - pos
                        except OSError as e:  # ENXIO: a hole to the end; else no SEEK_DATA: read
                            hole = left if e.errno == errno.ENXIO else 0
                            os.lseek(src.fileno(), pos, os.SEEK_SET)
                        if hole > 0:
                            hole = min(hole, left)
                            f.seek(hole, 1)
                            src.seek(pos + hole)
                            left -= hole
                            continue
                        b = src.read(min(left, 4 << 20))
                        if b.count(0) == len(b):
                            f.seek(len(b), 1)  # zeros stay a hole: a sparse original, a sparse shard
                        else:
                            f.write(b)
                        left -= len(b)
                f.truncate(data_offset + off)
            descs.append({"version": spec.version, "tensor_count": len(part), "kv_count": len(kvs),
                          "alignment": align, "data_offset": data_offset, "kv": describe_kvs(kvs),
                          "tensors": [dict(t, rel_offset=o, abs_offset=data_offset + o)
                                      for t, o in zip(part, offs)]})
    return descs


# ---- content ----------------------------------------------------------------------------

def every_kv_type(rng):
    """One or more KVs of every type, edge values included."""
    long_ascii = "".join(chr(0x41 + (i % 26)) for i in range(STR_MAX + 4464))
    kvs = [
        ("general.architecture", "string", "llama"),
        ("general.name", "string", "gpuos test model \u00e9\u4e2d\U0001F600"),
        ("general.empty", "string", ""),
        ("general.long_string", "string", long_ascii),
        ("test.u8", "uint8", 255), ("test.i8", "int8", -128),
        ("test.u16", "uint16", 65535), ("test.i16", "int16", -32768),
        ("test.u32", "uint32", 4294967295), ("test.i32", "int32", -2147483648),
        ("test.u64", "uint64", 18446744073709551615), ("test.i64", "int64", -9223372036854775808),
        ("test.f32", "float32", 0.1), ("test.f32_neg", "float32", -1e-7),
        ("test.f32_nan", "float32", float("nan")), ("test.f32_inf", "float32", float("inf")),
        ("test.f64", "float64", 3.141592653589793), ("test.f64_ninf", "float64", float("-inf")),
        ("test.f64_tiny", "float64", 5e-324),
        ("test.true", "bool", True), ("test.false", "bool", False),
        ("llama.block_count", "uint32", 4),
        ("tokenizer.ggml.tokens", "array",
         Arr("string", ["<unk>", "<s>", "</s>"] + ["tok%d" % i for i in range(997)])),
        ("tokenizer.ggml.scores", "array", Arr("float32", [f32(-i * 0.25) for i in range(1000)])),
        ("tokenizer.ggml.token_type", "array", Arr("int32", [1 + (i % 3) for i in range(1000)])),
        ("test.arr_empty", "array", Arr("uint32", [])),
        ("test.arr_short", "array", Arr("int16", [-1, 2, -3])),
        ("test.arr_bool", "array", Arr("bool", [True, False] * 10)),
        ("test.arr_u8", "array", Arr("uint8", list(range(40)))),
        ("test.arr_i8", "array", Arr("int8", [-5, 5])),
        ("test.arr_u16", "array", Arr("uint16", [1, 65535])),
        ("test.arr_u32", "array", Arr("uint32", [7] * 17)),
        ("test.arr_u64", "array", Arr("uint64", [2**64 - 1, 0, 2**40])),
        ("test.arr_i64", "array", Arr("int64", [-(2**63), 2**63 - 1])),
        ("test.arr_f64", "array", Arr("float64", [0.5, -2.25, 1e300])),
        ("test.arr_str_long", "array", Arr("string", ["x" * 70000, "y"])),
        ("test.nested_u8", "array", Arr("array", [Arr("uint8", [1, 2, 3]), Arr("uint8", []),
                                                   Arr("uint8", list(range(20)))])),
        ("test.nested_str", "array", Arr("array", [Arr("string", ["a", "bc"]), Arr("string", ["d"])])),
        ("test.nested_mixed", "array", Arr("array", [Arr("float32", [1.5]), Arr("int64", [-1, -2]),
                                                      Arr("bool", [True])])),
        ("test.nested3", "array", Arr("array", [Arr("array", [Arr("uint16", [1, 2]), Arr("uint16", [3])]),
                                                 Arr("array", [])])),
        ("test.nested_many", "array", Arr("array", [Arr("int32", [i]) for i in range(20)])),
    ]
    return kvs


def mixed_tensors(n_layers, rng, types=None):
    """token_embd + n_layers of blk.N.* + output, of many ggml types."""
    types = types or [v[0] for k, v in sorted(GGML.items())]
    ts = [Tensor("token_embd.weight", "F16", [64, 32])]
    k = 0
    for n in range(n_layers):
        for part in ("attn_norm.weight", "attn_q.weight", "attn_k.weight", "ffn_up.weight"):
            tname = types[k % len(types)]
            k += 1
            blk = GGML[GGML_ID[tname]][1]
            if part.endswith("norm.weight"):
                tname, dims = "F32", [64]
            else:
                dims = [max(blk, 256) * rng.choice([1, 2]), rng.choice([1, 3, 4])]
            ts.append(Tensor("blk.%d.%s" % (n, part), tname, dims))
    ts.append(Tensor("output_norm.weight", "F32", [64]))
    ts.append(Tensor("output.weight", "Q6_K", [256, 32]))
    return ts


def every_ggml_type():
    """One tensor of each ggml type, 3-D and 4-D dims mixed in."""
    ts = []
    for tid, (name, blk, size) in sorted(GGML.items()):
        dims = [blk * 2, 3] if tid % 3 else [blk, 2, 2, 1]
        ts.append(Tensor("type.%s" % name.lower(), name, dims))
    return ts


def spec_all(version, alignment, rng):
    s = Spec()
    s.version = version
    s.alignment = alignment
    s.kvs = every_kv_type(rng)
    s.tensors = mixed_tensors(4, rng) + every_ggml_type()
    return s


def spec_sparse(rng, gap):
    """Tensors above 2^32 in a sparse file: either a 4 GiB tensor in between
    (packed, as llama.cpp lays out) or an explicit gap (gap=True)."""
    s = Spec()
    s.alignment = 64
    s.kvs = [("general.architecture", "string", "llama"), ("llama.block_count", "uint32", 2)]
    if gap:
        s.tensors = [
            Tensor("token_embd.weight", "F32", [64, 4], offset=0),
            Tensor("blk.0.attn_q.weight", "Q4_K", [256, 8], offset=(5 << 30) + 64),
            Tensor("blk.1.attn_q.weight", "Q8_0", [64, 8], offset=(1 << 33)),
        ]
    else:
        s.tensors = [
            Tensor("token_embd.weight", "F32", [65536, 16385]),  # 4 GiB + 256 KiB, a hole
            Tensor("blk.0.attn_q.weight", "Q4_K", [256, 8]),
            Tensor("blk.1.attn_q.weight", "BF16", [64, 8]),
        ]
    return s


def spec_many_layers(rng, n=40):
    s = Spec()
    s.kvs = [("general.architecture", "string", "llama"), ("llama.block_count", "uint32", n)]
    s.tensors = [Tensor("token_embd.weight", "Q8_0", [128, 16])]
    for i in range(n):
        for part in ("attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                     "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
                     "ffn_down.weight"):
            if part.endswith("norm.weight"):
                s.tensors.append(Tensor("blk.%d.%s" % (i, part), "F32", [128]))
            else:
                s.tensors.append(Tensor("blk.%d.%s" % (i, part), "Q4_K", [256, 2]))
    s.tensors.append(Tensor("output.weight", "Q6_K", [256, 16]))
    return s


def spec_vocab(rng):
    s = Spec()
    s.kvs = [("general.architecture", "string", "llama"),
             ("tokenizer.ggml.model", "string", "llama"),
             ("tokenizer.ggml.tokens", "array", Arr("string", ["t%d" % i for i in range(3001)]))]
    return s


def spec_demo(n_layers):
    """A llama-shaped model, dim 1024, ffn 2816: about 10 MB a layer, all data written."""
    d, ff, vocab = 1024, 2816, 4096
    s = Spec()
    s.alignment = 32
    s.fill_random = True
    s.kvs = [("general.architecture", "string", "llama"), ("general.name", "string", "gpuos demo"),
             ("llama.block_count", "uint32", n_layers), ("llama.embedding_length", "uint32", d),
             ("llama.feed_forward_length", "uint32", ff), ("llama.attention.head_count", "uint32", 16),
             ("llama.attention.head_count_kv", "uint32", 4), ("llama.context_length", "uint32", 2048)]
    s.tensors = [Tensor("token_embd.weight", "Q8_0", [d, vocab])]
    for n in range(n_layers):
        for part, tname, dims in (("attn_norm.weight", "F32", [d]), ("attn_q.weight", "Q4_K", [d, d]),
                                  ("attn_k.weight", "Q8_0", [d, d // 4]), ("attn_v.weight", "Q6_K", [d, d // 4]),
                                  ("attn_output.weight", "F16", [d, d]), ("ffn_norm.weight", "F32", [d]),
                                  ("ffn_gate.weight", "Q4_0", [d, ff]), ("ffn_up.weight", "Q5_K", [d, ff]),
                                  ("ffn_down.weight", "Q8_0", [ff, d])):
            s.tensors.append(Tensor("blk.%d.%s" % (n, part), tname, dims))
    s.tensors.append(Tensor("output_norm.weight", "F32", [d]))
    s.tensors.append(Tensor("output.weight", "Q6_K", [d, vocab]))
    return s


def sized_layer(d, kv, ff, down):
    """The nine tensors of one layer: (part, ggml type, dims)."""
    return (("attn_norm.weight", "F32", [d]), ("attn_q.weight", "Q4_K", [d, d]),
            ("attn_k.weight", "Q4_K", [d, kv]), ("attn_v.weight", "Q6_K", [d, kv]),
            ("attn_output.weight", "Q4_K", [d, d]), ("ffn_norm.weight", "F32", [d]),
            ("ffn_gate.weight", "Q4_K", [d, ff]), ("ffn_up.weight", "Q4_K", [d, ff]),
            ("ffn_down.weight", down, [ff, d]))


def sized_shape(layer_bytes):
    """(d, kv, ff, ffn_down type) whose layer holds about layer_bytes.

    dim d is a multiple of 256 (K-quant rows), heads of 128, one KV head per
    eight; ffn is the free knob. ffn_down is Q6_K for ffn a multiple of 256,
    or Q8_0 (llama.cpp's fallback for rows K-quants cannot hold) on a grid of
    32, which brings small layers within 1 % too. Of the shapes within 1 %,
    the one whose ffn/dim is nearest llama's 3.5; if none, the nearest in size."""
    def size(d, kv, ff, down):
        return sum(tensor_bytes(GGML_ID[t], dims) for _, t, dims in sized_layer(d, kv, ff, down))
    best = None
    d = 256
    while True:
        kv = 128 * max(1, d // 128 // 8)
        fixed = size(d, kv, 0, "Q6_K")
        if fixed > layer_bytes and best is not None:
            break
        for step, down in ((256, "Q6_K"), (32, "Q8_0")):
            per_ff = (size(d, kv, step, down) - fixed) / float(step)
            want = max(layer_bytes - fixed, 0) / per_ff
            for ff in {max(step, int(want // step) * step), max(step, int(want // step + 1) * step)}:
                err = abs(size(d, kv, ff, down) - layer_bytes) / layer_bytes
                key = (err > 0.01, abs(math.log(ff / d / 3.5)), down != "Q6_K", err)
                if best is None or key < best[0]:
                    best = (key, (d, kv, ff, down))
        d += 256
    return best[1]


def spec_sized(n_layers, layer_mib, alignment):
    """A llama-2-70B-shaped model whose layers hold about layer_mib MiB each."""
    d, kv, ff, down = sized_shape(layer_mib << 20)
    vocab = 32000
    s = Spec()
    s.alignment = alignment if alignment is not None else 32
    s.fill_fast = True
    s.kvs = [("general.architecture", "string", "llama"),
             ("general.name", "string", "gpuos demo, %d MiB layers" % layer_mib),
             ("llama.block_count", "uint32", n_layers), ("llama.embedding_length", "uint32", d),
             ("llama.feed_forward_length", "uint32", ff), ("llama.attention.head_count", "uint32", d // 128),
             ("llama.attention.head_count_kv", "uint32", kv // 128), ("llama.context_length", "uint32", 4096),
             ("llama.rope.dimension_count", "uint32", 128),
             ("llama.attention.layer_norm_rms_epsilon", "float32", 1e-5)]
    s.tensors = [Tensor("token_embd.weight", "Q4_K", [d, vocab])]
    for n in range(n_layers):
        for part, tname, dims in sized_layer(d, kv, ff, down):
            s.tensors.append(Tensor("blk.%d.%s" % (n, part), tname, dims))
    s.tensors.append(Tensor("output_norm.weight", "F32", [d]))
    s.tensors.append(Tensor("output.weight", "Q6_K", [d, vocab]))
    return s


def small_valid():
    s = Spec()
    s.kvs = [("general.architecture", "string", "llama"), ("llama.block_count", "uint32", 1)]
    s.tensors = [Tensor("blk.0.attn_q.weight", "F32", [8, 2]), Tensor("output.weight", "Q4_0", [32, 2])]
    return s


def hostile(name):
    """Hostile variants of a small valid file."""
    s = small_valid()
    e = lambda errno, why: {"errno": errno, "why": why}
    if name == "bad-magic":
        s.magic, s.expect = b"GGUX", e("EINVAL", "bad magic")
    elif name == "fugg-magic":
        s.magic, s.expect = b"FUGG", e("EINVAL", "FUGG")
    elif name == "version-1":
        s.version, s.expect = 1, e("EPROTONOSUPPORT", "version 1 is not supported")
    elif name == "version-4":
        s.version, s.expect = 4, e("EPROTONOSUPPORT", "unsupported GGUF version")
    elif name == "big-endian":
        s.version, s.expect = 0x03000000, e("EPROTONOSUPPORT", "big-endian")
    elif name == "short-file":
        s.cut, s.expect = 12, e("EINVAL", "too short")
    elif name == "truncated-kv":
        s.tensors = []
        s.cut, s.expect = 60, e("EINVAL", "past the end of the file")
    elif name == "truncated-tensors":
        s.pad_end = False
        s.kvs = []
        s.tensors = [Tensor("a" * 20, "F32", [8])]
        s.cut, s.expect = 24 + 8 + 20 + 4 + 2, e("EINVAL", "past the end of the file")
    elif name == "kv-type-13":
        s.kvs.append(("dict1", 13, Raw(b"\x08\0\0\0")))
        s.expect = e("EINVAL", "unknown value type")
    elif name == "arr-elem-type-13":
        s.kvs.append(("weird", "array", Raw(struct.pack("<IQ", 13, 1) + b"x")))
        s.expect = e("EINVAL", "unknown element type")
    elif name == "n-dims-5":
        s.tensors.append(Tensor("t5", "F32", [1, 1, 1, 1, 2]))
        s.expect = e("EINVAL", "more than 4 dimensions")
    elif name == "ggml-type-removed":
        s.tensors.append(Tensor("q42", "F32", [32], raw_type=4))
        s.expect = e("EINVAL", "unknown ggml type")
    elif name == "ggml-type-99":
        s.tensors.append(Tensor("q99", "F32", [32], raw_type=99))
        s.expect = e("EINVAL", "unknown ggml type")
    elif name == "misaligned-offset":
        s.tensors.append(Tensor("mis", "F32", [8], offset=1000 + 4))
        s.expect = e("EINVAL", "not a multiple of general.alignment")
    elif name == "offset-past-eof":
        s.tensors.append(Tensor("far", "F32", [8], offset=1 << 40))
        s.pad_end = False
        s.cut = 4096
        s.expect = e("EINVAL", "data past the end of the file")
    elif name == "size-overflow":
        s.tensors.append(Tensor("huge", "F32", [1 << 40, 1 << 30]))
        s.expect = e("EOVERFLOW", "overflows")
    elif name == "offset-overflow":
        s.tensors.append(Tensor("wrap", "F32", [64], offset=(1 << 64) - 64))
        s.expect = e("EOVERFLOW", "overflows")
    elif name == "negative-dim":
        s.tensors.append(Tensor("neg", "F32", [1 << 63]))
        s.expect = e("EINVAL", "negative dimension")
    elif name == "block-mismatch":
        s.tensors.append(Tensor("q", "Q4_0", [33]))
        s.expect = e("EINVAL", "block size")
    elif name == "string-len-huge":
        s.kvs.append(("big", "string", Raw(struct.pack("<Q", (1 << 63) + 5) + b"abc")))
        s.expect = e("EINVAL", "past the end of the file")
    elif name == "key-len-huge":
        s.kvs.append((Raw(struct.pack("<Q", 1 << 62) + b"k"), "uint8", 1))
        s.expect = e("ENAMETOOLONG", "key is longer")
    elif name == "array-count-huge":
        s.kvs.append(("arr", "array", Raw(struct.pack("<IQ", T["uint64"], 1 << 61) + b"\0" * 16)))
        s.expect = e("EINVAL", "array count larger than the file")
    elif name == "array-str-count-huge":
        s.kvs.append(("arr", "array", Raw(struct.pack("<IQ", T["string"], 1 << 40) + b"\0" * 16)))
        s.expect = e("EINVAL", "array count larger than the file")
    elif name == "nested-too-deep":
        v = Arr("uint8", [1])
        for _ in range(8):
            v = Arr("array", [v])
        s.kvs.append(("deep", "array", v))
        s.expect = e("EINVAL", "nested too deeply")
    elif name == "dup-key":
        s.kvs.append(("general.architecture", "string", "again"))
        s.expect = e("EINVAL", "duplicate key")
    elif name == "dup-tensor":
        s.tensors.append(Tensor("output.weight", "F32", [8]))
        s.expect = e("EINVAL", "duplicate tensor")
    elif name == "alignment-not-pow2":
        s.alignment, s.expect = 48, e("EINVAL", "power of two")
    elif name == "alignment-zero":
        s.alignment, s.alignment_kv = 32, False
        s.kvs.append(("general.alignment", "uint32", 0))
        s.expect = e("EINVAL", "power of two")
    elif name == "alignment-wrong-type":
        s.alignment, s.alignment_kv = 32, False
        s.kvs.append(("general.alignment", "uint64", 32))
        s.expect = e("EINVAL", "not a uint32")
    elif name == "name-too-long":
        s.tensors.append(Tensor("n" * 200, "F32", [8]))
        s.expect = e("ENAMETOOLONG", "128 bytes")
    elif name == "nul-in-name":
        s.tensors.append(Tensor("a\0b", "F32", [8]))
        s.expect = e("EINVAL", "NUL")
    elif name == "nul-in-key":
        s.kvs.append(("a\0b", "uint8", 1))
        s.expect = e("EINVAL", "NUL")
    elif name == "kv-count-huge":
        s.kv_count, s.expect = 1 << 40, e("EINVAL", "KV count")
    elif name == "tensor-count-huge":
        s.tensor_count, s.expect = (1 << 64) - 1, e("EINVAL", "tensor count")
    elif name == "tensor-count-lies":
        s.tensor_count, s.expect = 3, e("EINVAL", "")    # reads tensor data as an info
    else:
        raise SystemExit("unknown case %s" % name)
    return s


HOSTILE = ["bad-magic", "fugg-magic", "version-1", "version-4", "big-endian", "short-file",
           "truncated-kv", "truncated-tensors", "kv-type-13", "arr-elem-type-13", "n-dims-5",
           "ggml-type-removed", "ggml-type-99", "misaligned-offset", "offset-past-eof",
           "size-overflow", "offset-overflow", "negative-dim", "block-mismatch",
           "string-len-huge", "key-len-huge", "array-count-huge", "array-str-count-huge",
           "nested-too-deep", "dup-key", "dup-tensor", "alignment-not-pow2", "alignment-zero",
           "alignment-wrong-type", "name-too-long", "nul-in-name", "nul-in-key",
           "kv-count-huge", "tensor-count-huge", "tensor-count-lies"]
VALID = ["all-v3", "all-v2", "align-32", "align-64", "align-4096", "default-align",
         "sparse-4g", "sparse-gap", "many-layers", "vocab", "empty", "small", "nested-8",
         "fuzz-seed", "layer-names"]


def make_case(name, rng, layers=None, layer_mib=None, alignment=None):
    if name == "demo" and layer_mib is not None:
        return spec_sized(layers if layers is not None else 8, layer_mib, alignment)
    if name == "demo":
        return spec_demo(layers if layers is not None else 8)
    if name == "all-v3":
        return spec_all(3, 32, rng)
    if name == "all-v2":
        return spec_all(2, 64, rng)
    if name.startswith("align-"):
        return spec_all(3, int(name[6:]), rng)
    if name == "default-align":
        return spec_all(3, None, rng)
    if name == "sparse-4g":
        return spec_sparse(rng, gap=False)
    if name == "sparse-gap":
        return spec_sparse(rng, gap=True)
    if name == "many-layers":
        return spec_many_layers(rng)
    if name == "vocab":
        return spec_vocab(rng)
    if name == "empty":
        return Spec()
    if name == "small":
        return small_valid()
    if name == "layer-names":     # what is and is not a blk.N layer name
        s = Spec()
        s.tensors = [Tensor(n, "F32", [4]) for n in (
            "blk.0.x", "blk.12.attn.weight", "blk.007.y", "blk.", "blk.3", "blk.x.y", "blk.3x.y",
            "blk..y", "blk.99999999.y", "xblk.1.y", "blk.1048576.z")]
        return s
    if name == "fuzz-seed":       # every type, compact: a seed for the fuzzers
        s = Spec()
        s.alignment = 32
        s.kvs = [("general.architecture", "string", "llama"), ("a.u8", "uint8", 1), ("a.i8", "int8", -1),
                 ("a.u16", "uint16", 2), ("a.i16", "int16", -2), ("a.u32", "uint32", 3),
                 ("a.i32", "int32", -3), ("a.f32", "float32", 0.5), ("a.b", "bool", True),
                 ("a.u64", "uint64", 4), ("a.i64", "int64", -4), ("a.f64", "float64", 0.25),
                 ("a.s", "array", Arr("string", ["x", "yz"])),
                 ("a.n", "array", Arr("array", [Arr("uint8", [1]), Arr("array", [Arr("int8", [2])])]))]
        s.tensors = [Tensor("blk.0.a", "F32", [4]), Tensor("blk.1.b", "Q4_0", [32, 1]),
                     Tensor("out", "F16", [2, 2, 1, 1])]
        return s
    if name == "nested-8":
        s = small_valid()
        v = Arr("uint8", [1, 2])
        for _ in range(7):
            v = Arr("array", [v, Arr(v.elem_type, [])])
        s.kvs.append(("deep", "array", v))
        return s
    return hostile(name)


def random_spec(rng, version, alignment):
    s = Spec()
    s.version = version
    s.alignment = alignment
    kvs = every_kv_type(rng)
    s.kvs = rng.sample(kvs, rng.randint(1, len(kvs)))
    s.tensors = mixed_tensors(rng.randint(0, 6), rng, rng.sample(sorted(GGML_ID), 8))
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--case")
    ap.add_argument("--random", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--version", type=int, default=3)
    ap.add_argument("--alignment", type=int)
    ap.add_argument("--layers", type=int, help="layers of --case demo (default 8)")
    ap.add_argument("--split", type=int, metavar="N",
                    help="also write the model as N shards in gguf-split's layout (OUT-0000K-of-0000N.gguf)")
    ap.add_argument("--layer-mib", type=int, metavar="M",
                    help="--case demo sized: about M MiB of tensor data per layer, streamed")
    a = ap.parse_args()
    if a.list:
        for n in VALID:
            print(n, "valid")
        for n in HOSTILE:
            print(n, "hostile")
        return 0
    if not a.out or not (a.case or a.random):
        ap.error("need OUT and --case NAME or --random")
    if a.layer_mib is not None:
        if a.case != "demo":
            ap.error("--layer-mib sizes --case demo only")
        if not 1 <= a.layer_mib <= 65536:
            ap.error("--layer-mib must be 1..65536")
        if a.alignment is not None and (a.alignment < 1 or a.alignment & (a.alignment - 1)):
            ap.error("--alignment must be a power of two")
    if a.layers is not None and a.layers < 0:
        ap.error("--layers must be 0 or more")
    rng = random.Random(a.seed)
    spec = (random_spec(rng, a.version, a.alignment) if a.random else
            make_case(a.case, rng, a.layers, a.layer_mib, a.alignment))
    if a.split is not None:
        nt = len(spec.tensors)
        per = -(-nt // a.split) if a.split > 0 else 0
        if a.split < 1 or a.split > nt or per * (a.split - 1) >= nt:
            ap.error("--split %d: the model's %d tensors cannot fill that many shards" % (a.split, nt))
    d = build(spec, a.out, seed=a.seed)
    outs = [(a.json, d)]
    if a.split is not None:
        if spec.expect:
            ap.error("--split writes valid models only")
        shards = write_split(spec, a.out, d, a.split)
        if a.json:
            outs += [(split_name(a.json[:-5] if a.json.endswith(".json") else a.json, k, a.split)[:-5] + ".json",
                      sd) for k, sd in enumerate(shards)]
    for path, desc in outs:
        if path:
            with open(path, "w") as f:
                json.dump(desc, f, indent=1, ensure_ascii=False, allow_nan=False)
                f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
