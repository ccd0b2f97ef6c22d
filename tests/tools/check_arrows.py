#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The arrows of docs/design.md, "Layout and arrows", from the #include
lines (part of make check):
- include/gpuos/ includes only include/gpuos/ and the C library;
- runtime/ includes only include/gpuos/ and runtime/ (no CUDA, nothing of
  boot/ or kernels/);
- runtime/fs/ includes only include/gpuos/, runtime/fs/ and the runtime's
  basic headers; a file system's folder (runtime/fs/NAME/) is included only
  from runtime/fs/, and runtime/ outside runtime/fs/ names none of its
  identifiers (gpuos_NAME_*, GPUOS_NAME_*: comments aside);
- runtime/model/ is the same seam for model formats: a format's folder
  (runtime/model/NAME/) is included only from runtime/model/, and runtime/
  outside runtime/model/ names nothing its headers declare (functions,
  types, macros: comments aside); the tables (runtime/model/tables.h, the
  records of gpuos/gguf.h) and model.h are what it uses. A format's parser
  (runtime/model/NAME/NAME.[ch]) and tables.h include only include/gpuos/,
  tables.h, the parser's own header and the runtime's basic headers: they
  build alone (the fuzz targets, tests/tools);
- boot/ (and apps/, bench/) reach the runtime only through include/gpuos/internal/rt.h,
  never a runtime/ header;
- boot/emu/ is a device: nvme.h and port.h of include/gpuos/, its own headers;
- boot/ctrl/ (the controllers behind ctrl.h, bring-up) knows nothing of the
  system that uses it (boot/sys/); boot/sys/ reaches a controller only
  through boot/ctrl/ctrl.h and bringup.h; the rest of boot/ (the service,
  app images, the CUDA glue) uses the system through host.h, nothing of
  boot/sys/ or boot/ctrl/;
- boot/cli/ is a client of include/gpuos/host.h; boot/ does not include it;
- inside boot/sys/ the calls run one way, down SYS_LAYERS (the order of
  boot/sys/sys_internal.h's list): from the functions each file defines and
  the names each file uses, a file names no function of a file above it, and
  every boot/sys/*.c has its place in the list;
- the installed headers (include/gpuos/*.h) name no internal one
  (include/gpuos/internal/, not installed), nor do apps/ and boot/cli/,
  which build against the installed API.
KNOWN lists what still breaks an arrow, with the issue that removes it: it is
printed on every run, and a file that no longer breaks it must leave the list.
Exit 1 on any other include that breaks an arrow."""
import pathlib
import re
import sys

KNOWN = set()  # nothing: every arrow holds
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
bad, seen = [], set()


def files(d):
    return sorted(p for p in pathlib.Path(d).rglob("*") if p.suffix in (".c", ".h", ".cu", ".cuh"))


def check(d, allowed, why):
    for f in files(d):
        for h in inc.findall(f.read_text()):
            target = (f.parent / h).resolve()
            rel = target.relative_to(pathlib.Path.cwd().resolve()) if target.is_relative_to(pathlib.Path.cwd().resolve()) else target
            root = str(rel)
            if h.startswith("gpuos/"):
                root = "include/" + h
            if any(root.startswith(a) for a in allowed):
                continue
            if (str(f), h) in KNOWN:
                seen.add((str(f), h))
                continue
            bad.append("%s includes %s: %s" % (f, h, why))


check("include/gpuos", ["include/gpuos/"], "include/gpuos/ depends on nothing of the project")
for f in sorted(pathlib.Path("include/gpuos").glob("*.h")) + files("apps") + files("boot/cli"):
    for h in inc.findall(f.read_text()):
        internal = h.startswith("gpuos/internal/") or (f.parent.name == "gpuos" and h.startswith("internal/"))
        if internal and (str(f), h) not in KNOWN:
            bad.append("%s includes %s: an internal contract, not installed (include/gpuos/internal/)" % (f, h))
        elif internal:
            seen.add((str(f), h))
check("runtime", ["include/gpuos/", "runtime/"], "runtime/ includes only include/gpuos/ and itself")
check("runtime/fs", ["include/gpuos/", "runtime/fs/", "runtime/meta_io.h", "runtime/util.h", "runtime/crc.h"],
      "runtime/fs/ includes only include/gpuos/, itself and the runtime's basic headers")
FS = sorted(p for p in pathlib.Path("runtime/fs").iterdir() if p.is_dir())
comment = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
for f in files("runtime"):
    if f.is_relative_to("runtime/fs"):
        continue
    text = f.read_text()
    for h in inc.findall(text):
        target = (f.parent / h).resolve()
        for d in FS:
            if target.is_relative_to(d.resolve()):
                bad.append("%s includes %s: a file system is reached through runtime/fs/fs.h" % (f, h))
    code = comment.sub(" ", text)
    for d in FS:
        m = re.search(r"\b(gpuos|GPUOS)_%s_\w+" % re.escape(d.name), code, re.I)
        if m:
            bad.append("%s names %s: a file system is reached through runtime/fs/fs.h" % (f, m.group(0)))
# runtime/model/: the formats behind model.h.
MODEL = sorted(p for p in pathlib.Path("runtime/model").iterdir() if p.is_dir())
BASIC = ["include/gpuos/", "runtime/meta_io.h", "runtime/util.h", "runtime/crc.h"]
decl = [re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M),
        re.compile(r"\b(?:struct|union|enum)[ \t]+(\w+)\s*\{"),
        re.compile(r"^[ \t]*(?:GPUOS_\w+[ \t]+)+(?:const[ \t]+)?(?:(?:struct|union|enum)[ \t]+)?\w+[ \t*]+(\w+)\s*\(", re.M)]
declared = {}
for d in MODEL:
    for h in sorted(d.glob("*.h")):
        code = comment.sub(" ", h.read_text())
        for r in decl:
            for name in r.findall(code):
                declared.setdefault(name, h)
    for f in (d / (d.name + ".c"), d / (d.name + ".h")):
        if not f.exists():
            bad.append("%s: a format's parser is runtime/model/NAME/NAME.[ch] (make's FUZZ_SRC)" % f)
            continue
        for h in inc.findall(f.read_text()):
            root = str((f.parent / h).resolve().relative_to(pathlib.Path.cwd().resolve())) \
                if not h.startswith("gpuos/") else "include/" + h
            if not any(root.startswith(a) for a in BASIC + ["runtime/model/tables.h", str(d / (d.name + ".h"))]):
                bad.append("%s includes %s: a format's parser builds alone (include/gpuos/, tables.h, "
                           "the runtime's basic headers)" % (f, h))
for h in inc.findall(pathlib.Path("runtime/model/tables.h").read_text()):
    if not h.startswith("gpuos/"):
        bad.append("runtime/model/tables.h includes %s: the tables are include/gpuos/'s records" % h)
name_re = re.compile(r"\b(%s)\b" % "|".join(sorted(map(re.escape, declared)))) if declared else None
for f in files("runtime"):
    if f.is_relative_to("runtime/model"):
        continue
    text = f.read_text()
    for h in inc.findall(text):
        target = (f.parent / h).resolve()
        for d in MODEL:
            if target.is_relative_to(d.resolve()):
                bad.append("%s includes %s: a model format is reached through runtime/model/model.h" % (f, h))
    m = name_re.search(comment.sub(" ", text)) if name_re else None
    if m:
        bad.append("%s names %s (%s): a model format is reached through runtime/model/model.h" %
                   (f, m.group(1), declared[m.group(1)]))
for d in ("boot", "bench"):
    check(d, ["include/gpuos/", "boot/", "bench/"],
          "boot/ and bench/ reach the runtime only through include/gpuos/internal/rt.h")
for d in ("boot/emu", "boot/pci"):
    check(d, ["include/gpuos/", "boot/emu/", "boot/pci/", "boot/ctrl/ctrl.h", "boot/gpu.h"],
          "a controller knows boot/ only through ctrl.h (and gpu.h for DMA into VRAM)")
check("boot/cli", ["include/gpuos/", "boot/cli/"], "boot/cli/ is a client of host.h")
check("boot/ctrl", ["include/gpuos/", "boot/ctrl/", "boot/gpu.h", "boot/emu/emu.h"],
      "boot/ctrl/ is the controllers: it knows nothing of the system that drives them (boot/sys/)")
check("boot/sys", ["include/gpuos/", "boot/sys/", "boot/ctrl/ctrl.h", "boot/ctrl/bringup.h", "boot/gpu.h"],
      "boot/sys/ reaches a controller through boot/ctrl/ctrl.h and bringup.h alone")
# boot/sys/: a file calls (names) functions of the files below it only.
SYS_LAYERS = ["sys_group.c", "sys.c", "sys_load.c", "sys_dequant.c", "sys_desc.c", "sys_ctrl.c", "sys_mem.c",
              "sys_register.c", "sys_app.c", "sys_park.c", "sys_run.c", "sys_threads.c", "sys_cmd.c",
              "sys_client.c", "sys_drain.c", "sys_error.c", "sys_plan.c"]
not_code = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
sys_code = {f.name: not_code.sub(" ", f.read_text()) for f in sorted(pathlib.Path("boot/sys").glob("*.c"))}
fn_def = re.compile(r"^(static\s+)?[A-Za-z_][^;{}()#=]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
sys_defs, sys_static = {}, {}
for n, c in sys_code.items():
    for m in fn_def.finditer(c):
        if m.group(1):
            sys_static.setdefault(n, set()).add(m.group(2))
        elif sys_defs.setdefault(m.group(2), n) != n:
            bad.append("boot/sys/%s and boot/sys/%s both define %s" % (sys_defs[m.group(2)], n, m.group(2)))
for n in sorted(set(sys_code) ^ set(SYS_LAYERS)):
    bad.append("boot/sys/%s: %s" % (n, "not in SYS_LAYERS of %s: give it its place" % sys.argv[0] if n in sys_code
                                    else "in SYS_LAYERS but not there: take it off"))
for n, c in sys_code.items():
    if n in SYS_LAYERS and not any(v == n for v in sys_defs.values()):
        bad.append("boot/sys/%s: no function found in it (does %s still read it?)" % (n, sys.argv[0]))
    for name in sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", c)) - sys_static.get(n, set())):
        g = sys_defs.get(name)
        if g and g != n and n in SYS_LAYERS and g in SYS_LAYERS and SYS_LAYERS.index(g) < SYS_LAYERS.index(n):
            bad.append("boot/sys/%s names %s of boot/sys/%s, above it: the calls in boot/sys/ run down SYS_LAYERS "
                       "(boot/sys/sys_internal.h)" % (n, name, g))
rooms = [pathlib.Path("boot", r).resolve() for r in ("sys", "ctrl")]
for f in sorted(pathlib.Path("boot").glob("*.[ch]")):
    for h in inc.findall(f.read_text()):
        if h.startswith("gpuos/") or not any((f.parent / h).resolve().is_relative_to(r) for r in rooms):
            continue
        if (str(f), h) in KNOWN:
            seen.add((str(f), h))
        else:
            bad.append("%s includes %s: the service, app images and CUDA glue use the system through "
                       "host.h, nothing of boot/sys/ or boot/ctrl/" % (f, h))
for f in files("boot"):
    if f.parts[1] == "cli":
        continue
    for h in inc.findall(f.read_text()):
        if h.startswith("gpuos/") or not (f.parent / h).resolve().is_relative_to(pathlib.Path("boot/cli").resolve()):
            continue
        if (str(f), h) not in KNOWN:
            bad.append("%s includes %s: the system does not depend on its command line" % (f, h))
        else:
            seen.add((str(f), h))
check("apps", ["include/gpuos/", "apps/"], "apps/ see include/gpuos/ only")
check("boot/emu", ["include/gpuos/nvme.h", "include/gpuos/port.h", "boot/emu/"],
      "boot/emu/ is a device: the NVMe spec (nvme.h, port.h) and its own headers")
for k in sorted(KNOWN - seen):
    bad.append("%s no longer includes %s: take it off KNOWN in %s" % (k[0], k[1], sys.argv[0]))
for b in bad:
    print("check_arrows:", b)
if bad:
    sys.exit(1)
print("check: the include arrows of docs/design.md hold; still open: %s" %
      (", ".join("%s -> %s" % k for k in sorted(seen)) or "nothing"))
