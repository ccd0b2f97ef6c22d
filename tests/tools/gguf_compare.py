#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gguf_compare.py - compare two JSON dumps of a GGUF and print clear diffs.

The dumps come from gguf_writer.py --json (what was written), gguf_ref.mjs
(@huggingface/gguf), tests/tools/gguf_dump and `gpuos gguf --json`:

  {"version", "tensor_count", "kv_count", "alignment", "data_offset",
   "kv": [{"key", "type", "value"} |
          {"key", "type": "array", "elem_type", "count", "value": [first 16]}],
   "tensors": [{"name", "type", "type_id", "dims", "rel_offset", "abs_offset",
                "byte_size"}]}

Rules:
 - integers compare exactly (JSON integers of any size); floats compare as
   doubles, so 17-digit and shortest forms of one double are equal; "nan",
   "inf", "-inf" stand for the non-finite floats; an int and a float compare
   by value (1 == 1.0).
 - a KV with "truncated": true on either side had a string cut at 65536
   bytes: its strings compare as prefix (a trailing U+FFFD from a cut
   multi-byte character is ignored).
 - nested-array items are {"elem_type"?, "count", "value"?}: fields present
   on one side only are skipped (the npm reader does not report inner element
   types).
 - KVs and tensors compare in order; a key or name out of place is reported
   once with where it is on the other side.

Usage: gguf_compare.py [--quiet] [--max N] A.json B.json
Exit status: 0 same, 1 different, 2 usage or unreadable input.
"""
import argparse
import json
import math
import sys

HEADER = ("version", "tensor_count", "kv_count", "alignment", "data_offset")
TENSOR_FIELDS = ("type", "type_id", "dims", "rel_offset", "abs_offset", "byte_size")
FLOAT_STR = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def short(v, n=80):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def show_pair(a, b):
    """a != b, shown so that the difference is visible."""
    if isinstance(a, str) and isinstance(b, str) and (len(a) > 60 or len(b) > 60):
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        lo = max(0, i - 10)
        return "strings differ at char %d (lengths %d, %d): ...%s != ...%s" % (
            i, len(a), len(b), short(a[lo:i + 20], 40), short(b[lo:i + 20], 40))
    return "%s != %s" % (short(a), short(b))


def num(v):
    if isinstance(v, str) and v in FLOAT_STR:
        return FLOAT_STR[v]
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    return None


def same_scalar(a, b, trunc):
    na, nb = num(a), num(b)
    if na is not None and nb is not None and not (isinstance(a, str) and isinstance(b, str)):
        if isinstance(na, int) and isinstance(nb, int):
            return na == nb
        fa, fb = float(na), float(nb)
        return fa == fb or (math.isnan(fa) and math.isnan(fb))
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        if trunc:
            x, y = (a, b) if len(a) <= len(b) else (b, a)
            x = x.rstrip("\ufffd")
            return y.startswith(x) and len(x.encode("utf-8")) >= 65536 - 4
        return False
    return type(a) is type(b) and a == b


class Diff:
    def __init__(self, quiet, limit):
        self.lines = []
        self.quiet = quiet
        self.limit = limit

    def add(self, where, msg):
        self.lines.append("%s: %s" % (where, msg))


def cmp_items(d, where, a, b, trunc):
    """Two "value" lists of an array (items may be nested-array dicts)."""
    if not isinstance(a, list) or not isinstance(b, list):
        d.add(where, "value %s != %s" % (short(a), short(b)))
        return
    if len(a) != len(b):
        d.add(where, "%d items kept != %d" % (len(a), len(b)))
    for i, (x, y) in enumerate(zip(a, b)):
        w = "%s[%d]" % (where, i)
        if isinstance(x, dict) or isinstance(y, dict):
            if not (isinstance(x, dict) and isinstance(y, dict)):
                d.add(w, "%s != %s" % (short(x), short(y)))
                continue
            for f in ("elem_type", "count"):
                if f in x and f in y and x[f] != y[f]:
                    d.add(w, "%s %s != %s" % (f, short(x[f]), short(y[f])))
            if "value" in x and "value" in y:
                cmp_items(d, w, x["value"], y["value"], trunc)
        elif not same_scalar(x, y, trunc):
            d.add(w, show_pair(x, y))


def cmp_kv(d, i, a, b):
    where = "kv[%d] %s" % (i, short(a.get("key")))
    trunc = bool(a.get("truncated") or b.get("truncated"))
    for f in ("type", "elem_type", "count"):
        if a.get(f) != b.get(f):
            d.add(where, "%s %s != %s" % (f, short(a.get(f)), short(b.get(f))))
    if a.get("type") == "array":
        cmp_items(d, where, a.get("value"), b.get("value"), trunc)
    elif not same_scalar(a.get("value"), b.get("value"), trunc):
        d.add(where, "value " + show_pair(a.get("value"), b.get("value")))


def compare(a, b, d):
    for f in HEADER:
        if a.get(f) != b.get(f):
            d.add(f, "%s != %s" % (short(a.get(f)), short(b.get(f))))
    ka, kb = a.get("kv", []), b.get("kv", [])
    keys_b = {e.get("key"): j for j, e in enumerate(kb)}
    keys_a = {e.get("key"): j for j, e in enumerate(ka)}
    for i, e in enumerate(ka):
        if i < len(kb) and kb[i].get("key") == e.get("key"):
            cmp_kv(d, i, e, kb[i])
        elif e.get("key") in keys_b:
            j = keys_b[e["key"]]
            d.add("kv[%d] %s" % (i, short(e.get("key"))), "is kv[%d] on the other side" % j)
            cmp_kv(d, i, e, kb[j])
        else:
            d.add("kv[%d] %s" % (i, short(e.get("key"))), "missing on the other side")
    for j, e in enumerate(kb):
        if e.get("key") not in keys_a:
            d.add("kv[%d] %s" % (j, short(e.get("key"))), "only on the other side")
    ta, tb = a.get("tensors", []), b.get("tensors", [])
    if len(ta) != len(tb):
        d.add("tensors", "%d listed != %d" % (len(ta), len(tb)))
    names_b = {t.get("name"): j for j, t in enumerate(tb)}
    for i, t in enumerate(ta):
        where = "tensor[%d] %s" % (i, short(t.get("name")))
        if i < len(tb) and tb[i].get("name") == t.get("name"):
            u = tb[i]
        elif t.get("name") in names_b:
            u = tb[names_b[t["name"]]]
            d.add(where, "is tensor[%d] on the other side" % names_b[t["name"]])
        else:
            d.add(where, "missing on the other side")
            continue
        for f in TENSOR_FIELDS:
            if t.get(f) != u.get(f):
                d.add(where, "%s %s != %s" % (f, short(t.get(f)), short(u.get(f))))


def main():
    ap = argparse.ArgumentParser(description="compare two GGUF JSON dumps")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--quiet", action="store_true", help="no output when they are the same")
    ap.add_argument("--max", type=int, default=50, help="differences to print (default 50)")
    args = ap.parse_args()
    docs = []
    for p in (args.a, args.b):
        try:
            with open(p, encoding="utf-8") as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            print("gguf_compare: %s: %s" % (p, e), file=sys.stderr)
            return 2
    for p, doc in zip((args.a, args.b), docs):
        if "expect" in doc:
            print("gguf_compare: %s describes a file that must be refused: %s" % (p, doc["expect"]),
                  file=sys.stderr)
            return 2
    d = Diff(args.quiet, args.max)
    compare(docs[0], docs[1], d)
    if not d.lines:
        if not args.quiet:
            print("gguf_compare: same (%d KVs, %d tensors)" % (len(docs[0].get("kv", [])),
                                                            len(docs[0].get("tensors", []))))
        return 0
    print("gguf_compare: %s and %s differ in %d place(s):" % (args.a, args.b, len(d.lines)))
    for line in d.lines[: args.max]:
        print("  " + line)
    if len(d.lines) > args.max:
        print("  ... %d more" % (len(d.lines) - args.max))
    return 1


if __name__ == "__main__":
    sys.exit(main())
