#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark results: rows of bench/results/*.csv, and the pages made
from them (`make bench`, bench/all.sh).

  results.py add CSV SECTION NAME PATH SOURCE BASELINE COMMAND METRIC=KEY:UNIT...
      one JSON object on stdin (what gpuos bench --json, bench/baselines or
      bench/xproc_client print); one row per METRIC, its value the JSON's
      KEY. BASELINE names the row (same section, source and metric) this one
      is a ratio against; "-" for none. The machine, the GPU and the date
      are added.
  results.py runjson H2D_GBPS < OUTPUT
      what `gpuos run` printed for apps/file_load or apps/layer_stream, as
      one JSON object (the keys of bench/baselines and bench/layer_base.cu;
      h2d_share is GB/s over H2D_GBPS, the link's rate measured in the run).
  results.py timeline NAME < JSON
      a layer run's per-layer times and checksums as TSV lines: NAME, layer,
      load_ms, compute_ms, checksum (bench/results/layers-timeline.tsv).
  results.py samesums < TIMELINE
      each path's per-layer checksums equal every other's: one line per
      path for checksums.txt, exit 1 on any difference.
  results.py checksums FILE
      every VRAM checksum of a section in FILE (section, source, path, sum;
      tab-separated) is the same one: exit 1, naming the odd ones, if not.
  results.py keep CSV KEPT_CSV [CHECKSUMS KEPT_SUMS]
      a section's committed rows (KEPT_CSV, set aside before the run) back
      into CSV where this run measured none of the same row (section, name,
      source, metric): a row this machine cannot measure (no GPU here) is
      never dropped. Without CSV, KEPT_CSV becomes it. KEPT_SUMS' checksum
      lines of the rows kept go back into CHECKSUMS. Prints how many rows
      came back.
  results.py report RESULTS_DIR PAGE PLOTS_DIR
      PAGE (docs/benchmarks.md): the ratios on top, then every row by
      section with its command; PLOTS_DIR: a gnuplot script per plot and
      its PNG where gnuplot is installed (else the script only, and a
      line saying so).
"""
import csv
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

FIELDS = ["section", "name", "path", "source", "metric", "value", "unit", "baseline", "command", "machine", "gpu",
          "date"]
# Metrics where less is better: their ratio is the baseline's over ours, so
# that above 1.0 always means gpuos ahead.
LOWER_IS_BETTER = {"lat_p50_us", "lat_p99_us", "round_trip_us", "cpu_s_per_gb", "ms_per_token", "gemm_ms"}

SECTIONS = [
    ("datapath", "1. The same file, the same bytes, into VRAM"),
    ("random4k", "2. Random 4 KiB reads (the BaM workload)"),
    ("layers", "3. Layer streaming"),
    ("runtime", "4. Runtime ceiling and latency"),
    ("xproc", "GPU clients in other processes"),
    ("fragmented", "Files of 50,000 extents against one unfragmented"),
    ("scaleout", "Scale-out: runtimes x SSDs, one group (bench/scaleout.sh)"),
    ("remote", "Remote loads through NVSHMEM (tests/gpu/remote.sh)"),
    ("safetensors", "A safetensors checkpoint into VRAM: gpuos against the safetensors package (bench/safetensors.sh)"),
    ("connect", "A PyTorch process as a client of the service (tests/gpu/connect_torch.py)"),
    ("llama", "The llama engine: a 70B-shaped model, resident, streamed and in batches (bench/llama.sh)"),
]


def machine():
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // (1 << 20)
    except (OSError, ValueError, IndexError):
        pass
    return "%s, %d cores, %d GiB" % (platform.machine(), os.cpu_count() or 0, mem)


def gpu():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "none"


def add(args):
    path, section, name, src_path, source, baseline, command = args[:7]
    line = sys.stdin.readline()
    try:
        js = json.loads(line)
    except ValueError:
        sys.exit("results.py add: not one JSON object: %.200s" % line)
    rows = []
    for spec in args[7:]:
        metric, _, rest = spec.partition("=")
        key, _, unit = rest.partition(":")
        if key not in js:
            sys.exit("results.py add: no %s in %.200s" % (key, line))
        rows.append({"section": section, "name": name, "path": src_path, "source": source, "metric": metric,
                     "value": js[key], "unit": unit, "baseline": "" if baseline == "-" else baseline,
                     "command": command.strip(), "machine": machine(), "gpu": gpu(),
                     "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")})
    new = not os.path.exists(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        if new:
            w.writeheader()
        w.writerows(rows)


def runjson(args):
    h2d = float(args[0]) if args and args[0] else 0.0
    text = sys.stdin.read()
    out = {}
    cpu = re.search(r"^host CPU: ([\d.]+) s", text, re.M)
    m = re.search(r"^result bytes=(\d+) ns=(\d+) sum=([0-9a-f]{16})$", text, re.M)
    if m:                                   # apps/file_load
        n, ns = int(m.group(1)), int(m.group(2))
        out = {"bytes": n, "seconds": ns / 1e9, "gb_per_s": n / ns if ns else 0.0, "sum": m.group(3)}
    else:                                   # apps/layer_stream
        t = re.search(r"^total (\d+) bytes in (\d+) layers, [\d.]+ s: [\d.]+ GB/s streamed \((\d+) bytes\)", text, re.M)
        p = re.search(r"^pass ([\d.]+) ms", text, re.M)
        if not t or not p:
            sys.exit("results.py runjson: neither file_load's result line nor layer_stream's total: %.300s" % text)
        ms = float(p.group(1))
        lay = [{"layer": int(x.group(1)), "bytes": int(x.group(3)), "load_ms": float(x.group(4)),
                "compute_ms": float(x.group(5)), "sum": x.group(7)} for x in
               re.finditer(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([0-9a-f]{16})\s*$", text, re.M)]
        if len(lay) != int(t.group(2)):
            sys.exit("results.py runjson: %d layer lines for %s layers" % (len(lay), t.group(2)))
        streamed = int(t.group(3))
        out = {"bytes": int(t.group(1)), "streamed_bytes": streamed, "seconds": ms / 1e3, "ms_per_token": ms,
               "load_gb_per_s": streamed / ms / 1e6 if ms else 0.0, "layer_ms": lay}
        out["gb_per_s"] = out["load_gb_per_s"]
    if cpu:
        out["cpu_s"] = float(cpu.group(1))
        out["cpu_s_per_gb"] = out["cpu_s"] / (out["bytes"] / 1e9) if out["bytes"] else 0.0
    out["h2d_share"] = out["gb_per_s"] / h2d if h2d else 0.0
    print(json.dumps(out))


def timeline(args):
    js = json.loads(sys.stdin.readline())
    for x in js["layer_ms"]:
        print("%s\t%d\t%.3f\t%.3f\t%s" % (args[0], x["layer"], x["load_ms"], x["compute_ms"], x["sum"]))


def samesums(_args):
    by = {}
    for line in sys.stdin:
        name, layer, _load, _comp, csum = line.rstrip("\n").split("\t")
        by.setdefault(name, {})[int(layer)] = csum
    names = sorted(by)
    bad = [n for n in names if by[n] != by[names[0]]]
    for n in names:
        digest = 0
        for layer in sorted(by[n]):
            digest = (digest * 0x100000001b3 + int(by[n][layer], 16)) % (1 << 64)
        print("layers\ttmpfs\t%s\t%016x" % (n, digest))
    if bad:
        sys.exit("results.py samesums: %s differ from %s" % (", ".join(bad), names[0]))


def read_checksums(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4:
                rows.append(dict(zip(("section", "source", "name", "sum"), parts)))
    return rows


def checksums(args):
    rows = read_checksums(args[0])
    bad = False
    for sec in sorted({r["section"] for r in rows}):
        sel = [r for r in rows if r["section"] == sec]
        common = max({r["sum"] for r in sel}, key=lambda v: sum(r["sum"] == v for r in sel))
        for r in sel:
            if r["sum"] != common:
                print("checksum differs: %s %s %s: %s, the others %s" % (sec, r["source"], r["name"], r["sum"], common))
                bad = True
    sys.exit(1 if bad else 0)


def row_key(r):
    return (r["section"], r["name"], r["source"], r["metric"])


def keep(args):
    path, kept_path = args[:2]
    with open(kept_path, newline="") as f:
        kept = list(csv.DictReader(f))
    rows = []
    if os.path.exists(path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    measured = {row_key(r) for r in rows}
    back = [r for r in kept if row_key(r) not in measured]
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows + back)
    os.replace(path + ".tmp", path)
    if len(args) == 4 and os.path.exists(args[3]):
        names = {(r["section"], r["source"], r["name"]) for r in back}
        lines = [c for c in read_checksums(args[3]) if (c["section"], c["source"], c["name"]) in names]
        with open(args[2], "a") as f:
            f.writelines("%s\t%s\t%s\t%s\n" % (c["section"], c["source"], c["name"], c["sum"]) for c in lines)
    print(len(back))


def load(results):
    rows = []
    for fn in sorted(os.listdir(results)):
        if fn.endswith(".csv"):
            with open(os.path.join(results, fn), newline="") as f:
                rows.extend(csv.DictReader(f))
    for r in rows:
        r["value"] = float(r["value"])
    return rows


def fmt(v):
    if v >= 1e6:
        return "%.2f M" % (v / 1e6)
    if v >= 1e4:
        return "%.0f k" % (v / 1e3)
    return ("%.3f" % v).rstrip("0").rstrip(".") if v < 100 else "%.1f" % v


def ratios(rows):
    """(row, baseline row, ratio) for every row that names a baseline."""
    out = []
    for r in rows:
        if not r["baseline"]:
            continue
        b = [x for x in rows if x["section"] == r["section"] and x["name"] == r["baseline"] and
             x["metric"] == r["metric"] and x["source"] == r["source"]]
        if not b or b[-1]["value"] == 0 or r["value"] == 0:
            continue
        b = b[-1]
        ratio = b["value"] / r["value"] if r["metric"] in LOWER_IS_BETTER else r["value"] / b["value"]
        out.append((r, b, ratio))
    return out


def gq(text):
    """a gnuplot string"""
    return "'" + text.replace("'", "''") + "'"


def safe(stem):
    """a file name of letters, digits, '.', '_' and '-' only"""
    return re.sub("[^A-Za-z0-9_.-]+", "-", stem)


def plots(rows, plots_dir, results_dir):
    """gnuplot scripts (and PNGs where gnuplot runs): returns [(title, png)]."""
    os.makedirs(plots_dir, exist_ok=True)
    made = []
    have = shutil.which("gnuplot") is not None

    def plot(stem, title, body, data):
        dat = os.path.join(plots_dir, stem + ".dat")
        with open(dat, "w") as f:
            f.write(data)
        gp = os.path.join(plots_dir, stem + ".gp")
        with open(gp, "w") as f:
            f.write("set terminal pngcairo size 900,500 font ',10'\nset output '%s.png'\nset title %s\n"
                    "set grid\nset key top left\n%s\n" % (stem, gq(title), body))
        if have:
            subprocess.run(["gnuplot", stem + ".gp"], cwd=plots_dir, check=True)
        made.append((title, stem + ".png"))

    # IOPS and latency against queue depth (random 4 KiB)
    r4 = [r for r in rows if r["section"] == "random4k" and re.search(r"-qd-\d+$", r["name"])]
    for source in sorted({r["source"] for r in r4}):
        paths = sorted({r["path"] for r in r4 if r["source"] == source})
        for metric, ylabel, log in (("iops", "reads/s", False), ("lat_p50_us", "p50 latency (us)", True),
                                    ("lat_p99_us", "p99 latency (us)", True)):
            data, cols = "", []
            for i, p in enumerate(paths):
                pts = sorted((int(r["name"].rsplit("-", 1)[1]), r["value"]) for r in r4
                             if r["path"] == p and r["source"] == source and r["metric"] == metric)
                if not pts:
                    continue
                data += "# %s\n" % p + "".join("%d %g\n" % pt for pt in pts) + "\n\n"
                cols.append("'%s.dat' index %d with linespoints title %s" % (safe("r4-" + metric + "-" + source),
                                                                           len(cols), gq(p)))
            if cols:
                stem = safe("r4-" + metric + "-" + source)
                plot(stem, "random 4 KiB reads, %s: %s against queue depth (client threads)" % (source, ylabel),
                     "set logscale x 2\n%sset xlabel 'queue depth / client threads'\nset ylabel %s\nplot %s" %
                     ("set logscale y\n" if log else "", gq(ylabel), ", ".join(cols)), data)
    # bars: GB/s per path (data path), requests/s per configuration (runtime)
    for section, metric, ylabel in (("datapath", "gb_per_s", "GB/s"), ("runtime", "requests_per_s", "requests/s"),
                                    ("xproc", "requests_per_s", "NOPs/s")):
        sel = [r for r in rows if r["section"] == section and r["metric"] == metric]
        for source in sorted({r["source"] for r in sel}):
            pts = [r for r in sel if r["source"] == source]
            data = "".join('"%s" %g\n' % (r["name"], r["value"]) for r in pts)
            stem = safe("%s-%s-%s" % (section, metric, source))
            plot(stem, "%s%s: %s" % (section, "" if source == "none" else ", " + source, ylabel),
                 "set style fill solid 0.6\nset boxwidth 0.7\nset ylabel %s\nset xtics rotate by -30\n"
                 "set yrange [0:*]\nplot '%s.dat' using 2:xtic(1) with boxes notitle" % (gq(ylabel), stem), data)
    # per-layer load and compute time (layers-timeline.tsv), one plot per resident count
    tl = timeline_rows(results_dir)
    for res in sorted({t[0].rsplit("-resident-", 1)[-1] for t in tl}, key=int):
        names = [n for n in dict.fromkeys(t[0] for t in tl) if n.endswith("-resident-" + res)]
        data, cols = "", []
        for n in names:
            pts = [t for t in tl if t[0] == n]
            data += "# %s\n" % n + "".join("%d %s %s\n" % (i, t[2], t[3]) for i, t in enumerate(pts)) + "\n\n"
            stem = "layers-resident-" + res
            cols.append("'%s.dat' index %d using 1:2 with lines title %s" % (stem, len(cols) // 2, gq(n + " load")))
            cols.append("'%s.dat' index %d using 1:3 with lines dashtype 2 title %s" % (stem, len(cols) // 2,
                                                                                   gq(n + " compute")))
        if cols:
            plot("layers-resident-" + res, "layer streaming, %s layers resident: load and compute time per layer" % res,
                 "set xlabel 'layer (position in the pass)'\nset ylabel 'ms'\nset yrange [0:*]\nplot %s" %
                 ", ".join(cols), data)
    return made, have


def timeline_rows(results_dir):
    """(path, layer, load_ms, compute_ms, checksum) of bench/results/layers-timeline.tsv"""
    try:
        with open(os.path.join(results_dir, "layers-timeline.tsv")) as f:
            return [tuple(l.rstrip("\n").split("\t")) for l in f if l.count("\t") == 4]
    except OSError:
        return []


def targets(rows):
    """The issue's targets, as far as this run measured them."""
    out = []
    dp = [r for r in rows if r["section"] == "datapath" and r["metric"] == "gb_per_s"]
    for source in sorted({r["source"] for r in dp} - {"none", "modeled Gen4 SSDs"}):
        sel = [r for r in dp if r["source"] == source]
        ours = [r for r in sel if r["name"].startswith("gpuos")]
        cpu = [r for r in sel if not r["name"].startswith("gpuos")]
        if not ours or not cpu:
            continue
        o, c = max(ours, key=lambda r: r["value"]), max(cpu, key=lambda r: r["value"])
        ratio = o["value"] / c["value"]
        out.append("- gpuos at 1.0x or more of the best CPU path, %s: %s %s GB/s against %s %s GB/s: **%.2fx**, %s." % (
            source, o["name"], fmt(o["value"]), c["name"], fmt(c["value"]), ratio,
            "met" if ratio >= 1.0 else "missed by %.0f %%" % ((1.0 - ratio) * 100)))
    cpu_rows = [r for r in rows if r["section"] == "datapath" and r["metric"] == "cpu_s_per_gb" and
                r["name"].startswith("gpuos")]
    if cpu_rows:
        worst = max(cpu_rows, key=lambda r: r["value"])
        out.append("- CPU time of gpuos after boot, outside the emulated controller's threads: at most %s s per GB "
                   "(%s, %s) across the whole-file rows." % (fmt(worst["value"]), worst["name"], worst["source"]))
    fr = {r["name"]: r for r in rows if r["section"] == "fragmented" and r["metric"] == "gb_per_s"}
    for name, r in sorted(fr.items()):
        base = fr.get(r.get("baseline") or "")
        if not base or not base["value"]:
            continue
        ratio = r["value"] / base["value"]
        out.append("- a file of 50,000 extents within 10 %% of one unfragmented, %s (%s): %s GB/s against %s GB/s: "
                   "**%.2fx**, %s." % (name, r["path"], fmt(r["value"]), fmt(base["value"]), ratio,
                                      "met" if ratio >= 0.9 else "missed by %.0f %%" % ((0.9 - ratio) * 100)))
    return out


def report(args):
    results, page, plots_dir = args[:3]
    rows = load(results)
    made, have = plots(rows, plots_dir, results)
    rel = os.path.relpath(plots_dir, os.path.dirname(page))
    out = ["# Benchmarks", "",
           "Made by `make bench` (bench/all.sh; bench/results.py writes this page) from bench/results/*.csv: every",
           "figure of gpuos is a ratio to a baseline measured in the same run, on the same data and the same",
           "machine. The lab log of how the figures came about is docs/benchmarks-log.md.", ""]
    rr = ratios(rows)
    out += ["## Results, as ratios (above 1.0: gpuos ahead)", "",
            "| section | gpuos | baseline | source | metric | gpuos | baseline | ratio |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r, b, ratio in rr:
        out.append("| %s | %s | %s | %s | %s | %s %s | %s %s | **%s** |" % (
            r["section"], r["name"], b["name"], r["source"], r["metric"], fmt(r["value"]), r["unit"],
            fmt(b["value"]), b["unit"], "> 100" if ratio > 100 else "%.2f" % ratio))
    if not rr:
        out.append("| (none yet) | | | | | | | |")
    out.append("")
    try:
        with open(os.path.join(results, "skipped.txt")) as f:
            skipped = [l.strip() for l in f if l.strip()]
    except OSError:
        skipped = []
    if skipped:
        out += ["Not measured in this run:", ""] + ["- " + l for l in skipped] + [""]
    tg = targets(rows)
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.md")
    if tg or os.path.exists(notes):
        out += ["## Targets", ""] + tg + [""]
        if os.path.exists(notes):
            with open(notes) as f:
                out += [f.read().rstrip("\n"), ""]
    gpus = sorted({r["gpu"] for r in rows})
    out += ["Machines: " + "; ".join(sorted({"%s, GPU %s" % (r["machine"], r["gpu"]) for r in rows})) + ".", ""]
    if "none" in gpus:
        out += ["Rows with GPU `none` ran in host mode (the runtime on CPU threads): they measure the protocol "
                "and the CPU side, not a GPU.", ""]
    for key, title in SECTIONS:
        sel = [r for r in rows if r["section"] == key]
        out += ["## " + title, ""]
        if not sel:
            out += ["Not measured in this run (see above).", ""]
            continue
        out += ["| row | path | source | metric | value | baseline | date | command |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in sel:
            out.append("| %s | %s | %s | %s | %s %s | %s | %s | `%s` |" % (
                r["name"], r["path"], r["source"], r["metric"], fmt(r["value"]), r["unit"], r["baseline"] or "-",
                r["date"], r["command"].replace("|", "\\|")))
        out.append("")
        if key in ("datapath", "layers") and os.path.exists(os.path.join(results, "checksums.txt")):
            cs = [c for c in read_checksums(os.path.join(results, "checksums.txt")) if c["section"] == key]
            if cs:
                sums = sorted({c["sum"] for c in cs})
                what = "VRAM copy of the whole file" if key == "datapath" else "per-layer checksums (digest)"
                if len(sums) == 1:
                    out += ["Every path's %s is the same: `%s` (%d runs: %s)." % (
                        what, sums[0], len(cs), ", ".join("%s from %s" % (c["name"], c["source"]) for c in cs)), ""]
                else:
                    out += ["**The paths' checksums differ**: " + "; ".join(
                        "%s from %s: %s" % (c["name"], c["source"], c["sum"]) for c in cs), ""]
        for t, png in made:
            if png.startswith({"random4k": "r4-"}.get(key, key)):
                out += ["![%s](%s/%s)" % (t, rel, png), ""]
    if made and not have:
        out += ["gnuplot was not installed where this page was made: the plots' scripts are in %s "
                "(`gnuplot NAME.gp` there makes each PNG)." % rel, ""]
    with open(page, "w") as f:
        f.write("\n".join(out))


def main():
    if len(sys.argv) >= 10 and sys.argv[1] == "add":
        return add(sys.argv[2:])
    if len(sys.argv) in (2, 3) and sys.argv[1] == "runjson":
        return runjson(sys.argv[2:])
    if len(sys.argv) == 3 and sys.argv[1] == "timeline":
        return timeline(sys.argv[2:])
    if len(sys.argv) == 2 and sys.argv[1] == "samesums":
        return samesums(sys.argv[2:])
    if len(sys.argv) == 3 and sys.argv[1] == "checksums":
        return checksums(sys.argv[2:])
    if len(sys.argv) in (4, 6) and sys.argv[1] == "keep":
        return keep(sys.argv[2:])
    if len(sys.argv) == 5 and sys.argv[1] == "report":
        return report(sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
