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
LOWER_IS_BETTER = {"lat_p50_us", "lat_p99_us", "round_trip_us", "cpu_s_per_gb", "ms_per_token"}

SECTIONS = [
    ("datapath", "1. The same file, the same bytes, into VRAM"),
    ("random4k", "2. Random 4 KiB reads (the BaM workload)"),
    ("layers", "3. Layer streaming"),
    ("runtime", "4. Runtime ceiling and latency"),
    ("xproc", "GPU clients in other processes"),
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


def plots(rows, plots_dir):
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
    # per-layer load and compute time
    lay = [r for r in rows if r["section"] == "layers" and r["metric"] in ("load_ms", "compute_ms")]
    if lay:
        data = "".join("%s %s %g\n" % (r["name"], r["metric"], r["value"]) for r in lay)
        plot("layers", "layer streaming: load and compute time per layer",
             "set style data histogram\nset style fill solid 0.6\nset ylabel 'ms'\n"
             "plot '<grep load_ms layers.dat' using 3:xtic(1) title 'load', "
             "'<grep compute_ms layers.dat' using 3 title 'compute'", data)
    return made, have


def report(args):
    results, page, plots_dir = args[:3]
    rows = load(results)
    made, have = plots(rows, plots_dir)
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
        out.append("| %s | %s | %s | %s | %s | %s %s | %s %s | **%.2f** |" % (
            r["section"], r["name"], b["name"], r["source"], r["metric"], fmt(r["value"]), r["unit"],
            fmt(b["value"]), b["unit"], ratio))
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
    if len(sys.argv) == 5 and sys.argv[1] == "report":
        return report(sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
