#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_compare.py - `gpuos model --json` (gpuos.model/1) against what the
model's writer or an independent reader says it holds, key by key.

Usage: model_compare.py [--files] GOT.json REF.json [REF2.json ...]
       model_compare.py --pairs LIST   LIST: lines LABEL<TAB>files|-<TAB>GOT<TAB>REF...;
                                       prints "ok LABEL" or "FAIL LABEL" and the differences

REF is one of
 - st_header.py's output (safetensors: a file or a checkpoint's index);
 - gguf_writer.py --json descriptions: one for a GGUF file, or one per shard
   of a gguf-split model, in order (shard k is the k-th given).

Compared: format, tensor_count, bytes (the sum), shards; each tensor in
order, by name: dtype, shape (slowest first: a GGUF's dims reversed),
offset (in its file), bytes, shard, and for GGUF layer (N of "blk.N." up
to 2^20, else null) and layers; metadata, key by key (GGUF's KVs as
gguf_compare.py compares them, arrays as {"elem_type", "count", "value"};
safetensors' strings exactly, or as a prefix of 65536 bytes when listed in
metadata_truncated); with --files, files as REF lists them too
(st_header.py's; for GGUF the caller checks them). Prints the
differences; exit 0 same, 1 different, 2 unreadable input.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_compare  # noqa: E402  (its rules for KV values: floats, "nan", truncation)


GGUF_MAX_LAYER = 1 << 20  # gpuos/gguf.h GPUOS_GGUF_MAX_LAYER: blk.N above it is no layer


def layer_of(name):
    m = re.match(r"^blk\.(\d+)\.", name)
    return int(m.group(1)) if m and int(m.group(1)) <= GGUF_MAX_LAYER else None


def from_gguf(shards):
    """gguf_writer descriptions (one per shard) in gpuos.model/1's terms."""
    tensors = []
    for k, s in enumerate(shards):
        for t in s["tensors"]:
            tensors.append({"name": t["name"], "dtype": t["type"], "shape": list(reversed(t["dims"])),
                            "offset": t["abs_offset"], "bytes": t["byte_size"], "shard": k,
                            "layer": layer_of(t["name"])})
    layers = [t["layer"] for t in tensors if t["layer"] is not None]
    return {"format": "gguf", "tensor_count": len(tensors), "bytes": sum(t["bytes"] for t in tensors),
            "shards": len(shards), "layers": 1 + max(layers) if layers else 0, "kv": shards[0]["kv"],
            "tensors": tensors}


def compare(got, refs, want_files):
    """The differences of got from refs, as lines."""
    ref = from_gguf(refs) if "kv" in refs[0] else refs[0]
    d = gguf_compare.Diff(False, 50)
    short = gguf_compare.short
    for f in ("format", "tensor_count", "bytes", "shards", "layers") + (("files",) if want_files else ()):
        if f in ref and got.get(f) != ref.get(f):
            d.add(f, "got %s, want %s" % (short(got.get(f)), short(ref.get(f))))
    meta = got.get("metadata", {})
    if "kv" in ref:
        for i, kv in enumerate(ref["kv"]):
            if kv["key"] not in meta:
                d.add("metadata", "%s missing" % kv["key"])
                continue
            v = meta[kv["key"]]
            mine = dict(v, key=kv["key"], type="array") if kv["type"] == "array" and isinstance(v, dict) else \
                {"key": kv["key"], "type": kv["type"], "value": v}
            if kv["key"] in got.get("metadata_truncated", []):
                mine["truncated"] = True
            gguf_compare.cmp_kv(d, i, kv, mine)
        extra = set(meta) - {kv["key"] for kv in ref["kv"]}
    else:
        for k, v in ref["metadata"].items():
            cut = k in got.get("metadata_truncated", [])
            if not (isinstance(meta.get(k), str) and gguf_compare.same_scalar(meta.get(k), v, cut)):
                d.add("metadata", "%s: got %s, want %s" % (short(k), short(meta.get(k)), short(v)))
        extra = set(meta) - set(ref["metadata"])
    for k in sorted(extra):
        d.add("metadata", "%s: not in the model" % short(k))
    tg, tr = got.get("tensors", []), ref["tensors"]
    if [t.get("name") for t in tg] != [t["name"] for t in tr]:
        d.add("tensors", "names or order differ: got %s, want %s" % (
            short([t.get("name") for t in tg]), short([t["name"] for t in tr])))
    by_name = {t.get("name"): t for t in tg}
    for t in tr:
        u = by_name.get(t["name"])
        if u is None:
            d.add("tensor %s" % short(t["name"]), "missing")
            continue
        for f in ("dtype", "shape", "offset", "bytes", "shard") + (("layer",) if "layer" in t else ()):
            if u.get(f) != t[f]:
                d.add("tensor %s" % short(t["name"]), "%s: got %s, want %s" % (f, short(u.get(f)), short(t[f])))
    return d.lines


def load(p):
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--pairs"] and len(args) == 2:
        bad = 0
        for line in open(args[1], encoding="utf-8"):
            label, flags, got, *refs = line.rstrip("\n").split("\t")
            try:
                lines = compare(load(got), [load(r) for r in refs], flags == "files")
            except (OSError, ValueError, KeyError, TypeError) as e:
                lines = ["unreadable: %s" % e]
            print("%s %s" % ("FAIL" if lines else "ok", label))
            for x in lines[:20]:
                print("       " + x)
            bad += bool(lines)
        return 1 if bad else 0
    want_files = args[:1] == ["--files"]
    if want_files:
        args = args[1:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    try:
        got, refs = load(args[0]), [load(p) for p in args[1:]]
    except (OSError, ValueError) as e:
        print("model_compare: %s" % e, file=sys.stderr)
        return 2
    lines = compare(got, refs, want_files)
    if not lines:
        print("model_compare: same (%d tensors, %d metadata keys)" % (got.get("tensor_count", 0),
                                                                  len(got.get("metadata", {}))))
        return 0
    print("model_compare: %s differs from %s in %d place(s):" % (args[0], " ".join(args[1:]), len(lines)))
    for line in lines[:50]:
        print("  " + line)
    return 1


if __name__ == "__main__":
    sys.exit(main())
