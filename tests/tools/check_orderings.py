#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The atomics of include/gpuos/port.h have one ordering on both sides
(docs/design.md, "The life of a command", Orderings): each GPUOS_DEF_* line
names its PTX semantics and the host's __atomic order; they must agree with
each other and with the name. And
runtime/, include/, apps/ reach atomics only through these names, so that
ThreadSanitizer in host mode checks the orderings the GPU runs.
Usage: check_orderings.py  (from the repository root); exit 1 on a mismatch."""
import pathlib
import re
import sys

HOST = {"relaxed": "__ATOMIC_RELAXED", "acquire": "__ATOMIC_ACQUIRE",
        "release": "__ATOMIC_RELEASE", "acq_rel": "__ATOMIC_ACQ_REL"}
bad = []
port = pathlib.Path("include/gpuos/port.h").read_text()
defs = re.findall(r'^GPUOS_DEF_(LD|ST|ADD|CAS)\((\w+),.*?"(relaxed|acquire|release|acq_rel)",\s*"(gpu|sys)",\s*(__ATOMIC_\w+)\)',
                  port, re.M)
if len(defs) < 10:
    bad.append("port.h: found only %d GPUOS_DEF_* lines; the pattern no longer matches" % len(defs))
for kind, name, sem, scope, host in defs:
    if HOST[sem] != host:
        bad.append("%s: the GPU runs %s, the host %s" % (name, sem, host))
    if "_%s_" % sem not in name:
        bad.append("%s: the name does not say its ordering (%s)" % (name, sem))
    if not name.endswith(("dev32", "dev64")) and scope == "gpu":
        bad.append("%s: device scope, but the name says otherwise" % name)
    if not name.endswith(("sys16", "sys32", "sys64")) and scope == "sys":
        bad.append("%s: system scope, but the name says otherwise" % name)
raw = re.compile(r"\b(atomicAdd|atomicCAS|atomicExch|atomicAdd_system|atomicCAS_system|__atomic_\w+)\s*\(")
for d in ("runtime", "include/gpuos", "apps"):
    for f in sorted(pathlib.Path(d).rglob("*")):
        if f.suffix not in (".c", ".h", ".cu", ".cuh") or f.name == "port.h":
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if raw.search(line):
                bad.append("%s:%d: a raw atomic; use the ordered names of port.h" % (f, i))
for b in bad:
    print("check_orderings:", b)
if not bad:
    print("check: %d atomics of port.h have the same ordering on host and GPU; no raw atomics in runtime/, include/, apps/" % len(defs))
sys.exit(1 if bad else 0)
