#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""st_header.py - a safetensors model's tensor table, read independently of
gpuos (Python 3 standard library; nothing shared with runtime/model/safetensors/safetensors.c):
json.loads of each file's header, as the format's README describes it,

    u64 N (little-endian) | N bytes of JSON | the data area at 8 + N

and of a checkpoint's model.safetensors.index.json ({"weight_map": {tensor:
file}}, the files beside it). Prints one JSON object in the terms of `gpuos
model --json` (docs/json.md, gpuos.model/1), for model_compare.py:

  {"format": "safetensors", "tensor_count", "bytes", "shards",
   "files": [paths as given, in shard order],
   "metadata": {__metadata__ of the first file},
   "tensors": [{"name", "dtype", "shape", "offset": 8 + N + begin,
                "bytes": end - begin, "shard"}]}

Tensors are listed file by file, each file's by (begin, end); a checkpoint's
shard k is the k-th file its weight_map names, in the order it first names
each. --root DIR maps the paths given (as the device sees them, /models/x)
to files under DIR; "files" keeps them as given.

Usage: st_header.py [--root DIR] PATH              (a .safetensors file or an index)
       st_header.py [--root DIR] --out DIR PATH...  each into DIR/BASENAME.json
"""
import argparse
import json
import os
import struct
import sys

ELEMENT_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "F64": 8, "I64": 8, "U64": 8,
}


def header(path):
    """(N, the header as a dict) of one file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n).decode("utf-8"))


def tensors_of(path, shard):
    n, h = header(path)
    meta = h.pop("__metadata__", None) or {}
    out = []
    for name, t in h.items():
        begin, end = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        assert end - begin == count * ELEMENT_BYTES[t["dtype"]], "%s: %s: bytes disagree with shape" % (path, name)
        out.append({"name": name, "dtype": t["dtype"], "shape": list(t["shape"]), "offset": 8 + n + begin,
                    "bytes": end - begin, "shard": shard, "_key": (begin, end)})
    out.sort(key=lambda t: t.pop("_key"))
    return out, meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="")
    ap.add_argument("--out")
    ap.add_argument("path", nargs="+")
    a = ap.parse_args()
    if len(a.path) > 1 and not a.out:
        ap.error("several paths need --out DIR")
    for path in a.path:
        d = model(path, a.root)
        f = open(os.path.join(a.out, os.path.basename(path) + ".json"), "w") if a.out else sys.stdout
        json.dump(d, f, indent=1)
        f.write("\n")
        if a.out:
            f.close()
    return 0


def model(path, root):
    local = lambda p: os.path.join(root, p.lstrip("/")) if root else p
    if path.endswith(".json"):  # an index
        ix = json.load(open(local(path), encoding="utf-8"))
        files = []
        for fn in ix["weight_map"].values():
            if fn not in files:
                files.append(fn)
        files = [os.path.join(os.path.dirname(path), fn) for fn in files]
    else:
        files = [path]
    tensors, meta = [], None
    for k, p in enumerate(files):
        ts, m = tensors_of(local(p), k)
        tensors += ts
        meta = m if meta is None else meta
    return {"format": "safetensors", "tensor_count": len(tensors), "bytes": sum(t["bytes"] for t in tensors),
            "shards": len(files), "files": files, "metadata": meta, "tensors": tensors}


if __name__ == "__main__":
    sys.exit(main())
