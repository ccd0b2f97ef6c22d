#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a `gpuos CMD --json` output against its table in docs/json.md.

Usage: check_json.py [--doc docs/json.md] FILE|-   (exit 0: it conforms)

The table of the output's "schema" is the contract: every field listed
without "?" is present, every field present is listed, and each has the
type listed (string, integer, number, boolean, object, array, any; "|null"
allows null). Paths: a.b is member b of object a, a[] each item of array a,
a.* each member of object a whatever its name (a map).
"""
import json
import re
import sys

TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "any": lambda v: True,
}


def tables(doc):
    """{schema: {path: (types, optional)}} from the doc's sections."""
    out, cur = {}, None
    for line in open(doc, encoding="utf-8"):
        m = re.match(r"^## (gpuos\.[a-z]+/\d+)\s*$", line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        m = re.match(r"^\| (?!field )([a-z_0-9.\[\]*]+) \| ([a-z|\\]+\??) \|", line)
        if cur is not None and m:
            t = m.group(2).replace("\\", "")
            opt = t.endswith("?")
            types = t.rstrip("?").split("|")
            for x in types:
                if x not in TYPES and x != "null":
                    raise SystemExit("%s: unknown type %r for %s" % (doc, x, m.group(1)))
            cur[m.group(1)] = (types, opt)
    return out


def walk(v, path, fields, errs, seen):
    """Check value v at path (its own type was checked by the caller)."""
    if isinstance(v, dict):
        for k, x in v.items():
            # a member of a map (a.*) whatever its name, which may hold dots
            p = path + ".*" if path + ".*" in fields else path + "." + k if path else k
            check(x, p, fields, errs, seen)
        for p, (types, opt) in fields.items():
            parent, _, name = p.rpartition(".")
            if parent == path and not opt and name not in v and "[" not in name and name != "*":
                errs.append("%s: missing" % p)
    elif isinstance(v, list):
        p = path + "[]"
        for x in v:
            check(x, p, fields, errs, seen)


def check(v, p, fields, errs, seen):
    if p not in fields:
        # array items need no row of their own when they are scalars of the array's kind
        if p.endswith("[]") and p[:-2] in fields and "any" in fields[p[:-2]][0]:
            return
        if p.endswith("[]") and p[:-2] in fields and not isinstance(v, (dict, list)):
            return
        errs.append("%s: not in the table" % p)
        return
    seen.add(p)
    types, _ = fields[p]
    if v is None:
        if "null" not in types:
            errs.append("%s: null" % p)
        return
    if not any(t != "null" and TYPES[t](v) for t in types):
        errs.append("%s: %s is not %s" % (p, type(v).__name__, "|".join(types)))
        return
    if "any" not in types:
        walk(v, p, fields, errs, seen)


def main():
    args = sys.argv[1:]
    doc = "docs/json.md"
    if len(args) >= 2 and args[0] == "--doc":
        doc, args = args[1], args[2:]
    if len(args) != 1:
        raise SystemExit(__doc__)
    text = sys.stdin.read() if args[0] == "-" else open(args[0], encoding="utf-8").read()
    try:
        d = json.loads(text)
    except ValueError as e:
        raise SystemExit("not one JSON document: %s" % e)
    if not isinstance(d, dict) or not isinstance(d.get("schema"), str):
        raise SystemExit("no \"schema\" string at the top")
    all_tables = tables(doc)
    fields = all_tables.get(d["schema"])
    if fields is None:
        raise SystemExit("schema %s has no table in %s" % (d["schema"], doc))
    if fields.get("schema") != (["string"], False):
        raise SystemExit("%s: the table of %s lacks its schema row" % (doc, d["schema"]))
    errs, seen = [], set()
    walk(d, "", fields, errs, seen)
    for e in errs[:20]:
        print("check_json: %s: %s" % (d["schema"], e))
    if errs:
        sys.exit(1)
    print("check_json: %s conforms (%d fields of %d in the table seen)" % (d["schema"], len(seen), len(fields)))


if __name__ == "__main__":
    main()
