#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The project's own safetensors writer, from the format's description
(huggingface/safetensors README, "Format"); Python 3 standard library only.

    u64 N (little-endian) | N bytes of JSON | the data area

The JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
end]} (offsets into the data area), plus an optional "__metadata__" object of
strings. Like the reference writer, tensors go into the data area sorted by
element size (largest first), then by name, and the JSON is padded with
spaces so that 8 + N is a multiple of 8; the cases below vary all of that.

Usage (from the repository root):
  safetensors_writer.py --list                       the cases, one a line
  safetensors_writer.py --case NAME OUT [--desc D]   write one; D describes it
  safetensors_writer.py --all DIR                    every case but "many", as DIR/NAME.safetensors
  safetensors_writer.py --checkpoint DIR             a 3-shard checkpoint,
                                                     model.safetensors.index.json
                                                     and a description per shard
  safetensors_writer.py --corpus DIR                 small seeds for tests/fuzz
  safetensors_writer.py --hostile DIR                corrupt files and checkpoints for
                                                     tests/emu/model.sh, and DIR/expect

The description (for tests/unit/test_safetensors.c) is one record a line,
names, keys and values hex-encoded UTF-8:
  header N DATA_OFF DATA_LEN N_TENSORS N_META
  tensor NAME_HEX DTYPE BEGIN END NDIM D0 D1 ...
  meta KEY_HEX VALUE_HEX
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

DTYPES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "F64": 8, "I64": 8, "U64": 8,
}


class Tensor:
    def __init__(self, name, dtype, shape, data=None):
        self.name, self.dtype, self.shape = name, dtype, list(shape)
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * DTYPES[dtype]
        if data is None:
            # deterministic, recognisable bytes
            seed = sum(name.encode()) & 0xff
            data = bytes((seed + i * 7) & 0xff for i in range(self.nbytes))
        assert len(data) == self.nbytes
        self.data = data
        self.begin = self.end = 0


def jstr(s, ascii_only):
    """A JSON string token: ensure_ascii writes \\uXXXX (surrogate pairs above
    U+FFFF), otherwise raw UTF-8 with only the escapes JSON requires."""
    return json.dumps(s, ensure_ascii=ascii_only)


def build(tensors, metadata=None, *, order="reference", layout=None, ascii_only=True, pad=True,
          meta_pos="first", key_orders=None, ws=None, meta_null=False):
    """The file's bytes. The JSON lists the tensors as given; the data area
    holds them in `layout` order, by default the reference's (order
    "reference": element size descending, then name) or as listed (order
    "header"). key_orders: per tensor, the order of its three keys. ws:
    whitespace put around every token (pretty JSON)."""
    if layout is None:
        layout = list(tensors)
        if order == "reference":
            layout.sort(key=lambda t: (-DTYPES[t.dtype], t.name))
    off = 0
    for t in layout:
        t.begin, t.end = off, off + t.nbytes
        off += t.nbytes
    w = ws or ""
    entries = []
    for i, t in enumerate(tensors):
        fields = {
            "dtype": jstr(t.dtype, True),
            "shape": "[" + ("," + w).join(str(d) for d in t.shape) + "]",
            "data_offsets": "[" + str(t.begin) + "," + w + str(t.end) + "]",
        }
        keys = key_orders[i] if key_orders else ["dtype", "shape", "data_offsets"]
        body = ("," + w).join(w + jstr(k, True) + w + ":" + w + fields[k] for k in keys)
        entries.append(jstr(t.name, ascii_only) + w + ":" + w + "{" + body + w + "}")
    meta = None
    if meta_null:
        meta = '"__metadata__":' + w + "null"
    elif metadata is not None:
        body = ("," + w).join(w + jstr(k, ascii_only) + w + ":" + w + jstr(v, ascii_only)
                              for k, v in metadata.items())
        meta = '"__metadata__":' + w + "{" + body + w + "}"
    if meta is not None:
        if meta_pos == "first":
            entries.insert(0, meta)
        elif meta_pos == "last":
            entries.append(meta)
        else:
            entries.insert(len(entries) // 2, meta)
    hdr = ("{" + w + ("," + w).join(entries) + w + "}").encode("utf-8")
    if pad:
        hdr += b" " * ((8 - (8 + len(hdr)) % 8) % 8)
    data = bytearray(off)
    for t in layout:
        data[t.begin:t.end] = t.data
    return struct.pack("<Q", len(hdr)) + hdr + bytes(data)


def describe(blob, tensors, metadata, meta_null=False):
    n = struct.unpack_from("<Q", blob)[0]
    meta = {} if (metadata is None or meta_null) else metadata
    lines = ["header %d %d %d %d %d" % (n, 8 + n, len(blob) - 8 - n, len(tensors), len(meta))]
    for t in tensors:
        lines.append("tensor %s %s %d %d %d%s" % (t.name.encode().hex() or "-", t.dtype, t.begin, t.end,
                                                 len(t.shape), "".join(" %d" % d for d in t.shape)))
    for k, v in meta.items():
        lines.append("meta %s %s" % (k.encode().hex() or "-", v.encode().hex() or "-"))
    return "\n".join(lines) + "\n"


# ---- the cases ---------------------------------------------------------------------

def case_dtypes(rng):
    ts = []
    for dt in DTYPES:
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
        ts.append(Tensor("t.%s" % dt.lower(), dt, shape))
    rng.shuffle(ts)
    return ts, None, {}


def case_empty_scalar(rng):
    ts = [Tensor("scalar.f32", "F32", []), Tensor("scalar.u8", "U8", []),
          Tensor("empty.0", "F16", [0]), Tensor("empty.302", "I64", [3, 0, 2]),
          Tensor("full", "BF16", [4, 3]), Tensor("empty.last", "F64", [0, 7]),
          Tensor("scalar.bool", "BOOL", [])]
    return ts, None, {"order": "header"}


def case_metadata(rng):
    ts = [Tensor("a", "F32", [2]), Tensor("b", "I8", [3])]
    meta = {"format": "pt", "quote\"back\\slash": "tab\tnew\nline", "unicode": "caf\u00e9 \u65e5\u672c \U0001F600",
            "empty": "", "json": '{"nested": [1, 2]}'}
    return ts, meta, {}


def case_metadata_raw_utf8_last(rng):
    ts, meta, _ = case_metadata(rng)
    return ts, meta, {"ascii_only": False, "meta_pos": "last"}


def case_metadata_middle(rng):
    ts = [Tensor("x.%d" % i, "F16", [i + 1]) for i in range(4)]
    return ts, {"k": "v"}, {"meta_pos": "middle"}


def case_metadata_long(rng):
    # a value longer than the 65536 bytes a model's table keeps of a string,
    # cut there inside a two-byte UTF-8 character
    return [Tensor("a", "F32", [2])], {"long": "a" + "\u00e9" * 40000, "short": "s"}, {}


def case_metadata_null(rng):
    return [Tensor("only", "U16", [2, 2])], None, {"meta_null": True}


def case_unpadded(rng):
    # 8 + N not a multiple of 8 (older writers)
    for extra in range(8):
        ts = [Tensor("w" * (1 + extra), "F32", [3])]
        blob = build(ts, None, pad=False)
        if (len(blob) - 12) % 8:
            return ts, None, {"pad": False}
    raise AssertionError("unreachable")


def case_pretty(rng):
    ts = [Tensor("p.%d" % i, "I32", [2, i + 1]) for i in range(3)]
    return ts, {"a": "b"}, {"ws": "\n\t  \r"}


def case_escapes(rng):
    names = ["quote\"q", "back\\slash", "slash/x", "ctl\b\f\n\r\t", "caf\u00e9", "\u65e5\u672c.weight",
             "emoji.\U0001F600", "mixed \u00e9\U0001F680/\\\"", "\u007f.del"]
    ts = [Tensor(n, "F16", [i + 1]) for i, n in enumerate(names)]
    return ts, None, {}


def case_unicode_raw(rng):
    ts, _, _ = case_escapes(rng)
    return ts, None, {"ascii_only": False}


def case_key_order(rng):
    ts = [Tensor("k.%d" % i, "F32", [i + 1, 2]) for i in range(6)]
    perms = [["dtype", "shape", "data_offsets"], ["data_offsets", "dtype", "shape"],
             ["shape", "data_offsets", "dtype"], ["data_offsets", "shape", "dtype"],
             ["shape", "dtype", "data_offsets"], ["dtype", "data_offsets", "shape"]]
    return ts, None, {"key_orders": perms, "order": "reference"}


def case_header_order(rng):
    # the JSON lists tensors in an order unrelated to their offsets
    ts = [Tensor("h.%02d" % i, rng.choice(list(DTYPES)), [rng.randint(1, 4)]) for i in range(12)]
    layout = list(ts)
    rng.shuffle(ts)
    return ts, None, {"layout": layout}


def case_empty(rng):
    return [], None, {}


def case_layers(rng):
    ts = [Tensor("model.embed_tokens.weight", "BF16", [16, 8]), Tensor("model.norm.weight", "BF16", [8]),
          Tensor("lm_head.weight", "BF16", [16, 8])]
    for L in range(4):
        for part, shape in (("self_attn.q_proj.weight", [8, 8]), ("mlp.up_proj.weight", [12, 8]),
                            ("input_layernorm.weight", [8])):
            ts.append(Tensor("model.layers.%d.%s" % (L, part), "BF16", shape))
    return ts, {"format": "pt"}, {}


def case_many(rng):
    ts = [Tensor("model.layers.%d.w%d" % (i // 8, i % 8), "F16", [1 + i % 3]) for i in range(20000)]
    return ts, None, {}


CASES = {
    "dtypes": case_dtypes,
    "empty-scalar": case_empty_scalar,
    "metadata": case_metadata,
    "metadata-raw-utf8-last": case_metadata_raw_utf8_last,
    "metadata-middle": case_metadata_middle,
    "metadata-long": case_metadata_long,
    "metadata-null": case_metadata_null,
    "unpadded": case_unpadded,
    "pretty": case_pretty,
    "escapes": case_escapes,
    "unicode-raw": case_unicode_raw,
    "key-order": case_key_order,
    "header-order": case_header_order,
    "empty": case_empty,
    "layers": case_layers,
    "many": case_many,
}


def make(name, seed=1):
    rng = random.Random(seed)
    ts, meta, opts = CASES[name](rng)
    blob = build(ts, meta, **opts)
    return blob, describe(blob, ts, meta, opts.get("meta_null", False))


# ---- a sharded checkpoint ------------------------------------------------------------------

def checkpoint(outdir, shards=3):
    """model-0000K-of-0000S.safetensors and model.safetensors.index.json
    (transformers' layout: {"metadata": {"total_size": BYTES}, "weight_map":
    {tensor: shard file}})."""
    os.makedirs(outdir, exist_ok=True)
    ts, _, _ = case_layers(random.Random(3))
    per = -(-len(ts) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        part = ts[k * per:(k + 1) * per]
        fname = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
        blob = build(part, {"format": "pt"})
        with open(os.path.join(outdir, fname), "wb") as f:
            f.write(blob)
        with open(os.path.join(outdir, fname + ".desc"), "w") as f:
            f.write(describe(blob, part, {"format": "pt"}))
        for t in part:
            weight_map[t.name] = fname
            total += t.nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(outdir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


# ---- hostile files, for the CLI ----------------------------------------------------------

def hostile(outdir):
    """Corrupt files and checkpoints under outdir, and outdir/expect: one
    line per case, "NAME<TAB>PATH<TAB>WORDS", PATH relative to outdir and
    WORDS a piece of the refusal that names the problem."""
    os.makedirs(outdir, exist_ok=True)
    cases = []

    def put(name, blob, words):
        with open(os.path.join(outdir, name + ".safetensors"), "wb") as f:
            f.write(blob)
        cases.append((name, name + ".safetensors", words))

    good = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}'
    put("bad-json", _raw(good[:-1] + ',}', 16), "expected a string key")
    put("unknown-dtype", _raw(good.replace('"F32"', '"F7"', 1), 16), "unknown dtype")
    put("unsupported-dtype", _raw(good.replace('"F32"', '"F4"', 1), 16), "does not support")
    put("overlap", _raw(good.replace("[8,16]", "[4,12]"), 16), "overlap")
    blob = _raw(good, 16)
    put("header-past-end", struct.pack("<Q", len(blob)) + blob[8:], "past the end of the file")
    put("data-past-end", _raw(good, 12), "past the end of the file")
    # a length whose low byte is '{' (123) over a short file: still safetensors
    # (its NUL at byte 7 is no JSON), not taken for an index
    put("length-123-cut", struct.pack("<Q", 123) + b'{"a":1}', "past the end of the file")

    def checkpoint_with(name, edit, words, drop=None):
        """A 3-shard checkpoint whose index is edited: edit(weight_map, names) -> weight_map."""
        d = os.path.join(outdir, name)
        checkpoint(d)
        ixp = os.path.join(d, "model.safetensors.index.json")
        ix = json.load(open(ixp))
        files = sorted(set(ix["weight_map"].values()))
        ix["weight_map"] = edit(ix["weight_map"], files)
        with open(ixp, "w") as f:
            json.dump(ix, f, indent=2)
        for fn in os.listdir(d):
            if fn.endswith(".desc") or (drop and fn == drop):
                os.unlink(os.path.join(d, fn))
        cases.append((name, name + "/model.safetensors.index.json", words))

    def rename_file(old, new):
        return lambda wm, files: {k: (new if v == old else v) for k, v in wm.items()}

    checkpoint_with("ix-missing-shard", lambda wm, f: wm, "missing", drop="model-00002-of-00003.safetensors")
    # the files these names lead to exist, and hold what the weight_map
    # says: only the names are wrong
    checkpoint_with("ix-slash", rename_file("model-00002-of-00003.safetensors", "sub/model-00002-of-00003.safetensors"),
                    "not a plain name")
    os.makedirs(os.path.join(outdir, "ix-slash", "sub"))
    shutil.copy(os.path.join(outdir, "ix-slash", "model-00002-of-00003.safetensors"), os.path.join(outdir, "ix-slash", "sub"))
    checkpoint_with("ix-dotdot", rename_file("model-00003-of-00003.safetensors", ".."), "not a plain name")
    checkpoint_with("ix-dotdot-slash", rename_file("model-00001-of-00003.safetensors", "../escape.safetensors"),
                    "not a plain name")
    shutil.copy(os.path.join(outdir, "ix-dotdot-slash", "model-00001-of-00003.safetensors"),
                os.path.join(outdir, "escape.safetensors"))

    def wrong_shard(wm, files):
        wm = dict(wm)
        k = next(k for k, v in wm.items() if v == files[0])
        wm[k] = files[1]
        return wm
    checkpoint_with("ix-wrong-shard", wrong_shard, "holds it")

    def unknown_tensor(wm, files):
        wm = dict(wm)
        wm["model.layers.9.ghost.weight"] = files[2]
        return wm
    checkpoint_with("ix-unknown-tensor", unknown_tensor, "in none of the files")
    with open(os.path.join(outdir, "expect"), "w") as f:
        for c in cases:
            f.write("\t".join(c) + "\n")


# ---- the fuzz seeds ------------------------------------------------------------------------

def corpus(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name in CASES:
        if name == "many":
            continue
        blob, _ = make(name)
        with open(os.path.join(outdir, name + ".safetensors"), "wb") as f:
            f.write(blob)
    # a few near misses for the mutator to start from
    good, _ = make("empty-scalar")
    n = struct.unpack_from("<Q", good)[0]
    seeds = {
        "h-trailing-byte": good + b"\0",
        "h-short-data": good[:-1],
        "h-bad-len": struct.pack("<Q", n + 1) + good[8:],
        "h-deep": _raw('{"a":{"dtype":"U8","shape":[[[[[[[[[[[[[]]]]]]]]]]]]],"data_offsets":[0,0]}}', 0),
        "h-dup": _raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                      '"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', 2),
        "h-surrogate": _raw('{"\\ud800x":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}', 1),
    }
    for name, blob in seeds.items():
        with open(os.path.join(outdir, name + ".safetensors"), "wb") as f:
            f.write(blob)


def _raw(json_text, data_len):
    hdr = json_text.encode()
    return struct.pack("<Q", len(hdr)) + hdr + bytes(data_len)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--desc")
    ap.add_argument("--checkpoint")
    ap.add_argument("--corpus")
    ap.add_argument("--hostile")
    ap.add_argument("--all")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    if a.list:
        for name in CASES:
            print(name)
        return 0
    if a.checkpoint:
        checkpoint(a.checkpoint)
        return 0
    if a.corpus:
        corpus(a.corpus)
        return 0
    if a.hostile:
        hostile(a.hostile)
        return 0
    if a.all:
        os.makedirs(a.all, exist_ok=True)
        for name in CASES:
            if name != "many":
                with open(os.path.join(a.all, name + ".safetensors"), "wb") as f:
                    f.write(make(name, a.seed)[0])
        return 0
    if not a.case or not a.out or a.case not in CASES:
        ap.error("--case NAME OUT (see --list)")
    blob, desc = make(a.case, a.seed)
    with open(a.out, "wb") as f:
        f.write(blob)
    if a.desc:
        with open(a.desc, "w") as f:
            f.write(desc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
