#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of the file tools (issue 4 section 3: `gpuos ls`, `stat`,
# `cat`, `gguf`) on the emulated controller, in host mode (no GPU needed).
# Usage: tests/emu/files.sh BUILD_DIR
#
# Every image is built here at run time (mke2fs -d, debugfs, sgdisk, the
# project's GGUF writer; nothing is mounted) and every expected answer comes
# from somewhere other than gpuos: debugfs (stat, ls -p, ex, dump), the source
# files, sgdisk, the writer's own --json description and
# @huggingface/gguf through tests/tools/gguf_ref.mjs.
#
# Assumptions beyond the letter of issue 4, as POSIX tools behave:
#  - `stat` does not follow a symlink in the last component (lstat, like
#    coreutils stat: the only way type "symlink" can be reported); a trailing
#    slash makes it follow ("/dirlink/" is the directory);
#  - `ls` and `cat` follow symlinks; `ls` of a symlink to a directory lists
#    the directory; `ls` of a regular file is accepted as an error or as a
#    one-entry list;
#  - "path" in stat's JSON is the path as given (or its normalised form).
# The checks run in sections, GPUOS_FILES_JOBS (default: nproc, at least 2)
# at a time. GPUOS_FILES_KEEP=1 keeps the temporary directory.
set -u
build=${1:-build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
gpuos=$build/gpuos
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
real=$root/../shared/testdata/gguf

# tmpfs when it has room: the trees hold thousands of small files
if [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2{print $4}')" -gt $((1 << 20)) ] 2>/dev/null; then
	tmp=$(mktemp -d /dev/shm/gpuos-files-test.XXXXXX)
else
	tmp=$(mktemp -d /tmp/gpuos-files-test.XXXXXX)
fi
cleanup() {
	local j
	for j in $(jobs -p); do kill $j 2>/dev/null; done
	wait
	[ -n "${GPUOS_FILES_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0 skipped=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
t0=$(date +%s)

export GPUOS_QUIET_HOST=1 LC_ALL=C GPUOS="$gpuos"

for t in mke2fs debugfs dumpe2fs e2fsck sgdisk python3; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "files e2e: FAIL, $t is not installed (e2fsprogs, gdisk, python3: scripts/deps.sh installs them)"
		exit 1
	fi
done
if [ ! -x "$gpuos" ]; then
	echo "files e2e: no $build/gpuos (make BUILD=$build all)"
	exit 1
fi
missing=
for c in ls stat cat gguf; do
	"$gpuos" $c --device "emu:/nonexistent.img" --host / 2>&1 | grep -q "unknown command" && missing="$missing $c"
done
if [ -n "$missing" ]; then
	bad "gpuos knows the file tools (unknown command:$missing)"
	echo "files e2e: $pass passed, $fail failed, $skipped skipped"
	exit 1
fi

# ---- the oracle side (Python): debugfs, the sources, gpuos through subprocess -----
oracle=$tmp/oracle.py
cat > "$oracle" <<'PY'
import json, os, re, subprocess, sys, tempfile

GPUOS = os.environ["GPUOS"]
TYPES = {"regular": "regular", "directory": "directory", "symlink": "symlink", "FIFO": "fifo",
         "socket": "socket", "character special": "chardev", "block special": "blockdev"}
MODE_TYPES = {0o10: "regular", 0o4: "directory", 0o12: "symlink", 0o1: "fifo", 0o14: "socket",
              0o2: "chardev", 0o6: "blockdev"}
STAT_KEYS = {"schema", "path", "inode", "type", "mode", "uid", "gid", "size", "links", "mtime", "block_size",
             "partition_start_lba", "extents"}


class OracleError(Exception):
    pass


def gpuos(cmd, dev, part, path, json_out=True, extra=()):
    args = [GPUOS, cmd] + (["--json"] if json_out else []) + ["--device", dev]
    if part:
        args += ["--part", str(part)]
    args += ["--host"] + list(extra) + [path]
    # a hang guard, not a bound on speed: alone, the htree's ls of 2600
    # entries takes seconds; beside the ThreadSanitizer and fault-campaign
    # suites (make test runs suites side by side on 2 cores) it took over 120 s
    p = subprocess.run(args, capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace").strip()


_cache = {}


def prefetch(img, cmds):
    """Run many debugfs requests in one debugfs process; keep their outputs."""
    c = _cache.setdefault(img, {})
    todo = [x for x in dict.fromkeys(cmds) if x not in c]
    if not todo:
        return
    with tempfile.NamedTemporaryFile("w", dir=os.environ.get("TMPDIR_ORACLE"), suffix=".cmds") as f:
        f.write("\n".join(todo) + "\n")
        f.flush()
        out = subprocess.run(["debugfs", "-f", f.name, img], capture_output=True).stdout
    parts = re.split(r"^debugfs: (.*)\n", out.decode("utf-8", "surrogateescape"), flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        c[parts[i]] = parts[i + 1]
    for x in todo:
        if x not in c:
            raise OracleError("debugfs gave no answer to %r" % x)


def dbg(img, cmd):
    prefetch(img, [cmd])
    return _cache[img][cmd]


def q(path):
    return '"%s"' % path


def block_size(img):
    out = subprocess.run(["dumpe2fs", "-h", img], capture_output=True).stdout.decode()
    return int(re.search(r"^Block size:\s+(\d+)", out, re.M).group(1))


def dbg_ls(img, d):
    """debugfs ls -p: /ino/mode/uid/gid/name/size/, without . and .. and empty slots."""
    out = dbg(img, "ls -p " + q(d))
    ents = []
    for line in out.splitlines():
        if not line.startswith("/"):
            continue
        f = line.split("/")
        if len(f) < 8:
            continue
        ino, mode, name = int(f[1]), int(f[2], 8), "/".join(f[5:-2])
        if ino == 0 or name in (".", ".."):
            continue
        ents.append({"name": name, "inode": ino, "type": MODE_TYPES.get(mode >> 12, "?%o" % mode),
                     "mode": "%04o" % (mode & 0o7777), "size": int(f[-2]) if f[-2].isdigit() else None})
    if not ents and "ls -p" not in out and not out.strip():
        pass
    ents.sort(key=lambda e: e["name"].encode("utf-8", "surrogateescape"))
    return ents


def dbg_ex(img, path):
    """Leaf extents of debugfs ex, and the tree depth."""
    out = dbg(img, "ex " + q(path))
    leaves, depth = [], 0
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s", line)
        if not m:
            continue
        lv, dp = int(m.group(1)), int(m.group(2))
        depth = max(depth, dp)
        m2 = re.match(r"\s*\d+/\s*\d+\s+\d+/\s*\d+\s+(\d+)\s*-\s*(\d+)\s+(\d+)\s*-\s*(\d+)\s+(\d+)\s*(\S*)", line)
        if lv != dp or not m2:
            continue
        l0, l1, p0, p1, n = (int(m2.group(i)) for i in range(1, 6))
        if l1 - l0 + 1 != n or p1 - p0 + 1 != n:
            raise OracleError("odd ex line: " + line)
        leaves.append([l0, p0, n, m2.group(6) == "Uninit"])
    return leaves, depth


def dbg_blockmap(out):
    """Contiguous runs of a block-mapped file from debugfs stat's BLOCKS section."""
    if "BLOCKS:" not in out:
        return []
    sect = out.split("BLOCKS:", 1)[1].split("TOTAL:", 1)[0]
    runs = []
    for m in re.finditer(r"\((\d+)(?:-(\d+))?\):(\d+)(?:-(\d+))?", sect):
        l0 = int(m.group(1)); l1 = int(m.group(2) or l0)
        p0 = int(m.group(3)); p1 = int(m.group(4) or p0)
        if l1 - l0 != p1 - p0:
            raise OracleError("odd BLOCKS range " + m.group(0))
        if runs and runs[-1][0] + runs[-1][2] == l0 and runs[-1][1] + runs[-1][2] == p0:
            runs[-1][2] += l1 - l0 + 1
        else:
            runs.append([l0, p0, l1 - l0 + 1, False])
    return runs


def dbg_stat(img, path):
    out = dbg(img, "stat " + q(path))
    m = re.search(r"Inode: (\d+)\s+Type: (.+?)\s+Mode:\s+(\d+)\s+Flags: (0x[0-9a-fA-F]+)", out)
    if not m:
        raise OracleError("debugfs stat %s: %s" % (path, out.strip()[:200]))
    st = {"inode": int(m.group(1)), "type": TYPES[m.group(2)], "mode": int(m.group(3), 8),
          "size": int(re.search(r"Size: (\d+)", out).group(1)),
          "links": int(re.search(r"Links: (\d+)", out).group(1))}
    flags = int(m.group(4), 16)
    st["flags"] = flags
    if flags & 0x10000000 or "Fast link dest" in out:   # inline data, fast symlink
        st["extents"], st["depth"] = [], 0
    elif flags & 0x80000:                                 # extents
        st["extents"], st["depth"] = dbg_ex(img, path)
    else:                                                 # block map (or no blocks)
        st["extents"], st["depth"] = dbg_blockmap(out), 0
    return st


def norm_path(p):
    parts = [c for c in p.split("/") if c not in ("", ".")]
    return "/" + "/".join(parts)


def cmp_stat(got, st, given, bs, pstart, resolved=None):
    """Differences between a gpuos stat --json answer and the oracle's."""
    errs = []
    try:
        j = json.loads(got)
    except Exception as e:
        return ["not JSON (%s): %r" % (e, got[:200])]
    if not isinstance(j, dict):
        return ["not an object: %r" % got[:200]]
    if set(j) != STAT_KEYS:
        errs.append("keys: extra %s, missing %s" % (sorted(set(j) - STAT_KEYS), sorted(STAT_KEYS - set(j))))
    ok_paths = {given, norm_path(given)} | ({resolved} if resolved else set())
    if j.get("path") not in ok_paths:
        errs.append("path %r, wanted %r" % (j.get("path"), given))
    for k in ("inode", "type", "size", "links"):
        if j.get(k) != st[k] or type(j.get(k)) is bool:
            errs.append("%s %r, debugfs %r" % (k, j.get(k), st[k]))
    if j.get("block_size") != bs:
        errs.append("block_size %r, dumpe2fs %r" % (j.get("block_size"), bs))
    if j.get("partition_start_lba") != pstart:
        errs.append("partition_start_lba %r, wanted %r" % (j.get("partition_start_lba"), pstart))
    mode = j.get("mode")
    if not isinstance(mode, str) or not re.fullmatch(r"[0-7]{4,6}", mode) or int(mode, 8) != st["mode"]:
        errs.append("mode %r, debugfs %04o" % (mode, st["mode"]))
    ex = j.get("extents")
    ekeys = {"logical", "physical", "blocks", "unwritten"}
    if not isinstance(ex, list) or not all(isinstance(e, dict) and set(e) == ekeys for e in ex):
        errs.append("extents not a list of {logical, physical, blocks, unwritten}: %r" % (str(ex)[:200],))
    else:
        mine = [[e["logical"], e["physical"], e["blocks"], e["unwritten"]] for e in ex]
        if mine != st["extents"]:
            first = next((i for i in range(min(len(mine), len(st["extents"])))
                          if mine[i] != st["extents"][i]), min(len(mine), len(st["extents"])))
            errs.append("extents differ from debugfs: %d vs %d entries, first difference at %d: %s vs %s"
                        % (len(mine), len(st["extents"]), first, mine[first:first + 2],
                           st["extents"][first:first + 2]))
    return errs


def cmp_ls(got, want):
    try:
        j = json.loads(got)
    except Exception as e:
        return ["not JSON (%s): %r" % (e, got[:200])]
    if not isinstance(j, dict) or j.get("schema") != "gpuos.ls/1" or not isinstance(j.get("entries"), list):
        return ["not a gpuos.ls/1 object with entries: %r" % got[:200]]
    j = j["entries"]
    errs = []
    for e in j:
        if not isinstance(e, dict) or set(e) != {"name", "inode", "type", "size", "mode"}:
            errs.append("entry with keys %r" % (sorted(e) if isinstance(e, dict) else e,))
            break
    # debugfs ls -p leaves the size of a directory out: compare what it gives
    wsz = {e["name"]: e["size"] for e in want}
    j = [dict(e, size=None) if isinstance(e, dict) and wsz.get(e.get("name"), 0) is None else e for e in j]
    if j == want:
        return errs
    gn = [e.get("name") for e in j if isinstance(e, dict)]
    wn = [e["name"] for e in want]
    if sorted(gn, key=lambda s: str(s).encode("utf-8", "surrogateescape")) != gn:
        errs.append("not sorted by name")
    if set(gn) != set(wn):
        errs.append("%d entries, debugfs %d; missing %s; extra %s" % (
            len(gn), len(wn), sorted(set(wn) - set(gn))[:5], sorted(set(gn) - set(wn))[:5]))
    wm = {e["name"]: e for e in want}
    for e in j:
        if isinstance(e, dict) and e.get("name") in wm and e != wm[e["name"]]:
            errs.append("%r, debugfs %r" % (e, wm[e["name"]]))
            break
    if not errs:
        errs.append("differs from debugfs (order?)")
    return errs


def dump(img, path):
    """debugfs dump (1.47.0 pads inline files under 60 bytes to 60: cut at i_size)."""
    size = dbg_stat(img, path)["size"]
    with tempfile.NamedTemporaryFile(dir=os.environ.get("TMPDIR_ORACLE")) as f:
        dbg(img, "dump %s %s" % (q(path), f.name))
        return open(f.name, "rb").read()[:size]


def short(p):
    return p if len(p) <= 60 else p[:28] + "..." + p[-28:]


def cmp_bytes(got, want):
    if got == want:
        return []
    n = min(len(got), len(want))
    i = next((k for k in range(0, n, 4096) if got[k:k + 4096] != want[k:k + 4096]), n)
    while i < n and got[i] == want[i]:
        i += 1
    return ["%d bytes, wanted %d; first difference at byte %d" % (len(got), len(want), i)]


# ---- subcommands --------------------------------------------------------------

def walk(a):
    """Every directory (ls), entry (stat) and regular file (cat) of an image
    against debugfs and the sources."""
    label, img, src, dev, part, pstart = a[:6]
    pstart = int(pstart)
    sample, skip, catre, expect, what = 1 << 30, None, None, {}, "ls,stat,cat"
    rest = a[6:]
    while rest:
        o, v = rest[0], rest[1]
        rest = rest[2:]
        if o == "--sample":
            sample = int(v)
        elif o == "--skip-stat":
            skip = re.compile(v)
        elif o == "--cat":
            catre = re.compile(v)
        elif o == "--expect":
            k, f = v.split("=", 1)
            expect[k] = f
        elif o == "--what":
            what = v
    bs = block_size(img)
    count = {"ls": 0, "stat": 0, "cat": 0}
    errs = {"ls": [], "stat": [], "cat": []}

    def do_stat(path):
        count["stat"] += 1
        rc, out, err = gpuos("stat", dev, part, path)
        if rc != 0:
            errs["stat"].append("%s: exit %d: %s" % (short(path), rc, err))
            return
        e = cmp_stat(out, dbg_stat(img, path), path, bs, pstart)
        if e:
            errs["stat"].append("%s: %s" % (short(path), "; ".join(e)))

    def do_cat(full):
        count["cat"] += 1
        if full in expect:
            want = open(expect[full], "rb").read()
        elif src != "-" and os.path.isfile(src + full) and not os.path.islink(src + full):
            want = open(src + full, "rb").read()
        else:
            want = dump(img, full)
        rc, out, err = gpuos("cat", dev, part, full, json_out=False)
        if rc != 0:
            errs["cat"].append("%s: exit %d: %s" % (short(full), rc, err))
        else:
            e = cmp_bytes(out, want)
            if e:
                errs["cat"].append("%s: %s" % (short(full), "; ".join(e)))

    level = ["/"]
    if "stat" in what:
        do_stat("/")
    while level:
        prefetch(img, ["ls -p " + q(d) for d in level])
        nxt, stats, cats = [], [], []
        for d in level:
            ents = dbg_ls(img, d)
            if "ls" in what:
                count["ls"] += 1
                rc, out, err = gpuos("ls", dev, part, d)
                if rc != 0:
                    errs["ls"].append("%s: exit %d: %s" % (short(d), rc, err))
                else:
                    e = cmp_ls(out, ents)
                    if e:
                        errs["ls"].append("%s: %s" % (short(d), "; ".join(e)))
            n = len(ents)
            keep = ({round(k * (n - 1) / (sample - 1)) for k in range(sample)} if n > sample > 1
                    else set(range(n)))
            for i, ent in enumerate(ents):
                full = d.rstrip("/") + "/" + ent["name"]
                named = bool(catre and catre.search(full))   # always checked
                if ent["type"] == "directory":
                    nxt.append(full)
                elif i not in keep and not named:
                    continue
                if "stat" in what and not (skip and skip.search(full)):
                    stats.append(full)
                if "cat" in what and ent["type"] == "regular" and (named or not catre):
                    cats.append(full)
        prefetch(img, ["stat " + q(x) for x in stats])
        prefetch(img, ["ex " + q(x) for x in stats
                       if re.search(r"Flags: 0x[0-9a-f]*[89a-f][0-9a-f]{4}\b", _cache[img]["stat " + q(x)])])
        for x in stats:
            do_stat(x)
        for x in cats:
            do_cat(x)
        level = nxt
    desc = {"ls": "ls --json of %d directories agrees with debugfs ls -p",
            "stat": "stat --json of %d entries agrees with debugfs stat/ex",
            "cat": "cat of %d files equals the sources"}
    for k in ("ls", "stat", "cat"):
        if k not in what:
            continue
        for e in errs[k][:8]:
            print("       " + e)
        if len(errs[k]) > 8:
            print("       ... and %d more" % (len(errs[k]) - 8))
        print("%s %s: %s" % ("FAIL" if errs[k] or not count[k] else "ok", label, desc[k] % count[k]))


def stat1(a):
    """stat1 IMG DEV PART PSTART GIVEN ORACLE_PATH: gpuos stat GIVEN is debugfs stat ORACLE_PATH."""
    img, dev, part, pstart, given, opath = a[:6]
    rc, out, err = gpuos("stat", dev, part, given)
    if rc != 0:
        print("       exit %d: %s" % (rc, err))
        return 1
    e = cmp_stat(out, dbg_stat(img, opath), given, block_size(img), int(pstart), opath)
    for x in e:
        print("       " + x)
    return 1 if e else 0


def ls1(a):
    """ls1 IMG DEV PART GIVEN ORACLE_DIR"""
    img, dev, part, given, odir = a[:5]
    rc, out, err = gpuos("ls", dev, part, given)
    if rc != 0:
        print("       exit %d: %s" % (rc, err))
        return 1
    e = cmp_ls(out, dbg_ls(img, odir))
    for x in e:
        print("       " + x)
    return 1 if e else 0


def field(a):
    """field JSONFILE KEY VALUE(json): a top-level field of a JSON file."""
    try:
        j = json.load(open(a[0]))
    except Exception as e:
        print("       not JSON: %s" % e)
        return 1
    want = json.loads(a[2])
    if j.get(a[1]) != want:
        print("       %s: %r, wanted %r" % (a[1], j.get(a[1]), want))
        return 1
    return 0


def extents(a):
    """extents IMG PATH MIN_DEPTH: debugfs shows an extent tree of at least that depth."""
    ex, depth = dbg_ex(a[0], a[1])
    print("       (%s: depth %d, %d leaf extents)" % (a[1], depth, len(ex)))
    return 0 if depth >= int(a[2]) and ex else 1


def gpt(a):
    """gpt OUT SECTOR_SIZE LBAS FIRST LAST [FILL]: a GPT disk, one Linux partition."""
    import struct, uuid, zlib
    out, ss, nl, first, last = a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4])
    esec = 128 * 128 // ss
    fu, lu = 2 + esec, nl - 2 - esec
    assert fu <= first <= last <= lu
    ents = bytearray(128 * 128)
    struct.pack_into("<16s16sQQQ72s", ents, 0, uuid.UUID("0FC63DAF-8483-4772-8E79-3D69D8477DE4").bytes_le,
                     uuid.UUID(int=0x1234).bytes_le, first, last, 0, "data".encode("utf-16-le"))
    ecrc = zlib.crc32(ents)

    def hdr(my, alt, elba):
        h = bytearray(struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, my, alt, fu, lu,
                                  uuid.UUID(int=0x5678).bytes_le, elba, 128, 128, ecrc))
        struct.pack_into("<I", h, 16, zlib.crc32(h))
        return bytes(h)
    mbr = bytearray(512)
    struct.pack_into("<B3sB3sII", mbr, 446, 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1, min(nl - 1, 0xffffffff))
    mbr[510:512] = b"\x55\xaa"
    with open(out, "r+b" if os.path.exists(out) else "w+b") as f:
        f.truncate(nl * ss)
        if len(a) > 5:
            f.seek(first * ss)
            f.write(open(a[5], "rb").read())
        for off, data in ((0, mbr), (ss, hdr(1, nl - 1, 2)), (2 * ss, ents),
                          ((lu + 1) * ss, ents), ((nl - 1) * ss, hdr(nl - 1, 1, lu + 1))):
            f.seek(off)
            f.write(data)
    return 0


if __name__ == "__main__":
    try:
        r = {"walk": walk, "stat1": stat1, "ls1": ls1, "field": field, "extents": extents,
             "gpt": gpt}[sys.argv[1]](sys.argv[2:])
    except OracleError as e:
        print("       oracle: %s" % e)
        r = 1
    sys.exit(r or 0)
PY
export TMPDIR_ORACLE=$tmp

# walk LABEL IMG SRC DEV PART PSTART [--sample N (per directory, dirs always)] [--skip-stat RE] [--cat RE] [--expect P=F] [--what W]
walk() {
	local line label=$1
	python3 "$oracle" walk "$@" > "$tmp/walk.out" 2>&1
	local rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok }" ;;
		"FAIL "*) bad "${line#FAIL }" ;;
		*) echo "$line" ;;
		esac
	done < "$tmp/walk.out"
	[ $rc -eq 0 ] || bad "$label: the oracle script failed (exit $rc)"
}

# expect_fail NAME REGEX MUST_CONTAIN CMD...: exit 1 (the operation failed), nothing on stdout, one
# line on stderr matching REGEX (case-insensitive) and containing MUST_CONTAIN
# (when given).
expect_fail() {
	local name=$1 re=$2 must=$3 rc lines
	shift 3
	"$@" > "$tmp/fail.out" 2> "$tmp/fail.err"
	rc=$?
	lines=$(grep -c '' "$tmp/fail.err")
	if [ $rc -eq "${want_rc:-1}" ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/fail.out" ] && grep -Eiq -- "$re" "$tmp/fail.err" &&
		{ [ -z "$must" ] || grep -Fq -- "$must" "$tmp/fail.err"; }; then
		ok "$name"
	else
		echo "       exit $rc, $(wc -c < "$tmp/fail.out") bytes on stdout, $lines line(s) on stderr: $(head -c 300 "$tmp/fail.err" | tr '\n' '|')"
		bad "$name"
	fi
}
ENOENT='no such file|not found|does not exist|ENOENT'
ENOTDIR='not a directory|ENOTDIR'
ELOOP='too many (levels of )?(symbolic )?links|too many symlinks|symlink loop|ELOOP'

# cat_is NAME WANT_FILE GPUOS_ARGS...: gpuos cat to stdout equals WANT_FILE
cat_is() {
	local name=$1 want=$2 rc
	shift 2
	"$gpuos" cat "$@" > "$tmp/cat.out" 2> "$tmp/cat.err"
	rc=$?
	if [ $rc -eq 0 ] && cmp -s "$tmp/cat.out" "$want"; then
		ok "$name"
	else
		echo "       exit $rc: $(head -c 200 "$tmp/cat.err") $(cmp "$tmp/cat.out" "$want" 2>&1 | head -1)"
		bad "$name"
	fi
}

# Sections run in the background, GPUOS_FILES_JOBS (nproc) at a time, each with
# its own scratch directory; their output is shown in order as they end, and
# the summary counts its ok/FAIL/skip lines.
jobs_max=${GPUOS_FILES_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ "$jobs_max" -ge 2 ] 2>/dev/null || jobs_max=2
nsec=0 shown=0
replay() {
	local line
	while IFS= read -r line; do
		echo "$line"
		case $line in
		"  ok   "*) pass=$((pass + 1)) ;;
		"  FAIL "*) fail=$((fail + 1)) ;;
		"  skip "*) skipped=$((skipped + 1)) ;;
		esac
	done < "$1"
}
drain() {
	while [ $shown -lt $nsec ] && [ -e "$tmp/s$((shown + 1)).done" ]; do
		shown=$((shown + 1))
		replay "$tmp/s$shown.out"
		[ -e "$tmp/s$shown.finished" ] || bad "the section above stopped before its end"
	done
}
section() { # TITLE FUNC ARGS...
	local title=$1 n
	shift
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; drain; done
	nsec=$((nsec + 1))
	n=$nsec
	mkdir -p "$tmp/s$n.d"
	local fin=$tmp/s$n.finished
	{
		(
			tmp=$tmp/s$n.d
			s0=$(date +%s)
			echo "== $title"
			"$@"
			echo "   ($(( $(date +%s) - s0 )) s)"
			touch "$fin"
		) > "$tmp/s$n.out" 2>&1 < /dev/null
		touch "$tmp/s$n.done"
	} &
	drain
}
sections_end() { wait; drain; }

# ---- image recipes (as in tests/unit/test_ext4.c) ----------------------------------
W=$tmp/w
mkdir -p "$W"
tree() {
	local s=$1 i
	mkdir -p $s/sub/dir $s/emptydir $s/chain $s/sticky
	printf 'hello world\n' > $s/small.txt
	: > $s/empty
	head -c 300000 /dev/urandom > $s/medium.bin
	head -c $((3 << 20 | 12345)) /dev/urandom > $s/big.bin
	head -c 5000 /dev/urandom > $s/sub/dir/deep.txt
	printf 'in sub\n' > $s/sub/file
	ln $s/sub/file $s/sub/hardlink
	ln -s small.txt $s/fast
	ln -s ./././././././././././././././././././././././././././././sub/dir/deep.txt $s/slow
	ln -s /sub/dir/deep.txt $s/abs
	ln -s nonexistent $s/dangling
	ln -s loop2 $s/loop1; ln -s loop1 $s/loop2; ln -s self $s/self
	ln -s sub/dir $s/dirlink
	ln -s ../.. $s/sub/dir/up
	ln -s dir/deep.txt $s/sub/rel
	ln -s ../../small.txt $s/sub/dir/rel2
	ln -s /fast $s/sub/absfast
	ln -s c1 $s/chain/c0
	for i in $(seq 1 39); do ln -s c$((i + 1)) $s/chain/c$i; done
	ln -s ../small.txt $s/chain/c40
	truncate -s 10M $s/sparse
	printf START | dd of=$s/sparse conv=notrunc status=none
	printf MIDDLE | dd of=$s/sparse bs=1 seek=4194427 conv=notrunc status=none
	printf END | dd of=$s/sparse bs=1 seek=10485750 conv=notrunc status=none
	mkfifo $s/fifo
	python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" $s/sock
	printf 'long\n' > $s/$(printf 'L%.0s' $(seq 1 255))
	printf 'space\n' > "$s/with space"
	printf 'utf8\n' > "$s/$(printf '\303\274mlaut\342\202\254')"
	printf '#!/bin/sh\n' > $s/setuid; chmod 4755 $s/setuid
	printf 'secret\n' > $s/private; chmod 0600 $s/private
	chmod 1777 $s/sticky
	head -c 1024 /dev/zero | tr '\0' P > $s/prealloc
}
# what mke2fs -d cannot do: an unwritten extent inside i_size, device nodes
post() {
	debugfs -w -f - $1 >/dev/null 2>&1 <<EOF
fallocate /prealloc 4 11
sif /prealloc size $((12 * $2))
mknod chr c 1 3
mknod blk b 7 0
sif /chr mode 020640
sif /blk mode 060600
EOF
	# /prealloc as it must read: 1 KiB of P, then zeros (holes and unwritten) to 12 blocks
	python3 -c "import sys; open(sys.argv[1], 'wb').write(b'P' * 1024 + bytes(12 * $2 - 1024))" $1.prealloc
}
bigfiles() {
	head -c 3000000 /dev/urandom > $1/dind
	truncate -s 70M $1/tind
	printf MID | dd of=$1/tind bs=1 seek=307200 conv=notrunc status=none
	printf TAIL | dd of=$1/tind bs=1 seek=$((70 * 1048576 - 100)) conv=notrunc status=none
}
manyfiles() {
	mkdir -p $1
	python3 -c "import sys
for i in range(int(sys.argv[2])): open('%s/file_%06d_with_a_longer_name' % (sys.argv[1], i), 'w').write(str(i))" $1 $2
}
bsize() { dumpe2fs -h "$1" 2>/dev/null | awk '/^Block size:/{print $3}'; }

echo "== building images"
tree $W/src
S=$W/src
mkimg() { # NAME MKE2FS_ARGS... : an image of the common tree, post() applied
	local name=$1
	shift
	mke2fs -q -F -t ext4 "$@" -d $S $W/$name.img 20M > $W/$name.log 2>&1 || { cat $W/$name.log; return 1; }
	post $W/$name.img $(bsize $W/$name.img)
}
build_ok=1
mkimg b4k -b 4096 || build_ok=0                             # 64bit + metadata_csum (defaults)
mkimg b1k || build_ok=0                                     # mke2fs's defaults: 1 KiB blocks at this size
mkimg no64 -b 4096 -O ^64bit || build_ok=0                  # 32-bit descriptors, metadata_csum
mkimg nocsum -b 4096 -O 64bit,^metadata_csum || build_ok=0
mkimg old1k -b 1024 -O ^64bit,^metadata_csum,uninit_bg || build_ok=0
# block maps (ext2/ext3 style): double and triple indirect blocks
mkdir -p $W/bm && cp -a $S/. $W/bm/ && bigfiles $W/bm
mke2fs -q -F -t ext4 -b 1024 -O ^extents,^64bit -d $W/bm $W/blockmap.img 20M > /dev/null 2>&1 &&
	post $W/blockmap.img 1024 || build_ok=0
# inline data: small files, a small directory, one using its system.data part too
I=$W/isrc
mkdir -p $I/idir $I/bdir
printf tiny > $I/t
head -c 100 /dev/urandom > $I/m100; head -c 150 /dev/urandom > $I/m150
head -c 5000 /dev/urandom > $I/big
for i in 1 2 3; do echo $i > $I/idir/f$i; done
for i in $(seq 1 30); do echo $i > $I/bdir/file_name_$i; done
Y=$(printf 'y%.0s' $(seq 1 90))
ln -s $Y $I/ilink; ln -s t $I/fastlink; ln -s ../t $I/idir/up
mkdir -p $I/$Y; printf 'via ilink\n' > $I/$Y/f
mke2fs -q -F -t ext4 -O inline_data -b 4096 -d $I $W/inline.img 8M > /dev/null 2>&1 || build_ok=0
x=$(debugfs -R 'ls -p /' $W/inline.img 2>/dev/null | awk -F/ '$6=="big"{print $2}')
y=$(debugfs -R 'ls -p /' $W/inline.img 2>/dev/null | awk -F/ '$6=="t"{print $2}')
python3 -c "import struct
def de(i, n, r): return struct.pack('<IHBB', i, r, len(n), 1) + n + bytes(r - 8 - len(n))
open('$W/ea.bin', 'wb').write(de(0, b'', 12) + de($x, b'xa', 12) + de($y, b'xb_longer', 20))"
debugfs -w -f - $W/inline.img >/dev/null 2>&1 <<EOF
ea_set -f $W/ea.bin /idir system.data
sif /idir size 104
sif /big links_count 2
sif /t links_count 2
EOF
# an htree directory of 2600 entries
mkdir -p $W/hsrc && manyfiles $W/hsrc/big 2600 && printf 'x\n' > $W/hsrc/other
mke2fs -q -F -t ext4 -b 1024 -d $W/hsrc $W/htree.img 16M > /dev/null 2>&1 || build_ok=0
e2fsck -fyD $W/htree.img >/dev/null 2>&1
# a fragmented file: fill, delete every other file, write a big file with debugfs
mkdir -p $W/fsrc/f
python3 -c "import os
for i in range(1, 1201): open('$W/fsrc/f/%d' % i, 'wb').write(os.urandom(1000))"
mke2fs -q -F -t ext4 -b 1024 -d $W/fsrc $W/frag.img 8M > /dev/null 2>&1 || build_ok=0
seq 1 2 1200 | sed 's|^|rm /f/|' | debugfs -w -f - $W/frag.img >/dev/null 2>&1
head -c 700000 /dev/urandom > $W/fragbig
debugfs -w -R "write $W/fragbig big" $W/frag.img >/dev/null 2>&1
# GPT (sgdisk, 512-byte LBAs): partition 1 of the Linux fs type but no ext4 in
# it; 2 at LBA 2081 (not MiB-aligned): the tree, 1 KiB blocks; 3 at LBA
# 45000: a small tree with a GGUF
mkdir -p $W/p3src/models
printf 'partition three\n' > $W/p3src/three.txt
python3 tests/tools/gguf_writer.py --case many-layers $W/p3src/models/m.gguf --json $W/p3.json >/dev/null
mke2fs -q -F -t ext4 -b 1024 -d $S $W/p2.img 20M > /dev/null 2>&1 && post $W/p2.img 1024 || build_ok=0
mke2fs -q -F -t ext4 -b 4096 -d $W/p3src $W/p3.img 4M > /dev/null 2>&1 || build_ok=0
disk=$W/gpt.img
truncate -s 28M $disk
sgdisk -o -a 1 -n 1:34:2047 -t 1:8300 -n 2:2081:+20M -t 2:8300 -c 2:tree -n 3:45000:+4M -t 3:8300 $disk > /dev/null || build_ok=0
head -c $(((2048 - 34) * 512)) /dev/urandom | dd of=$disk bs=512 seek=34 conv=notrunc status=none
dd if=$W/p2.img of=$disk bs=512 seek=2081 conv=notrunc status=none
dd if=$W/p3.img of=$disk bs=512 seek=45000 conv=notrunc status=none
p2=$(sgdisk -i 2 $disk | sed -n 's/^First sector: \([0-9]*\).*/\1/p')
p3=$(sgdisk -i 3 $disk | sed -n 's/^First sector: \([0-9]*\).*/\1/p')
# the same with 4096-byte LBAs (sgdisk cannot make them on a file): the
# test's own GPT writer, checked by sgdisk in its 512-byte form
python3 "$oracle" gpt $W/gpt512.img 512 98304 2081 83000
python3 "$oracle" gpt $W/gpt4k.img 4096 $((263 + 5120 + 6)) 263 $((263 + 5120 - 1)) $W/b4k.img
# `gpuos parts`: a GPT of many kinds of entries (tests/tools/parts_oracle.py
# keeps the recipe), ext4 in partitions 2 and 6; a plain MBR
mke2fs -q -F -t ext4 -b 1024 -d $W/p3src $W/parts_a.img 8M > /dev/null 2>&1 || build_ok=0
mke2fs -q -F -t ext4 -b 1024 $W/parts_b.img 1M > /dev/null 2>&1 || build_ok=0
python3 tests/tools/parts_oracle.py gpt $W/parts.img $W/parts_a.img $W/parts_b.img || build_ok=0
python3 tests/tools/parts_oracle.py mbr $W/mbr.img || build_ok=0
# GGUF: every case of the writer and the real files inside ext4; some raw at byte offsets
G=$W/gsrc
mkdir -p $G/models $G/bad $G/real
valid=$(python3 tests/tools/gguf_writer.py --list | awk '$2=="valid"{print $1}')
hostile=$(python3 tests/tools/gguf_writer.py --list | awk '$2=="hostile"{print $1}')
for c in $valid; do python3 tests/tools/gguf_writer.py --case $c $G/models/$c.gguf --json $W/$c.json > /dev/null; done
for c in $hostile; do python3 tests/tools/gguf_writer.py --case $c $G/bad/$c.gguf --json $W/$c.json > /dev/null; done
have_real=0
if [ -d "$real" ]; then
	have_real=1
	cp "$real/llama-2-tiny-random.gguf" "$real/vocab/ggml-vocab-llama-spm.gguf" "$real/ggml-vocab-llama-v1-2023-08-17.gguf" \
		"$real/example-FUGG-magic.gguf" "$real/test_writer-objtype13.gguf" $G/real/
fi
mke2fs -q -F -t ext4 -b 4096 -d $G $W/gguf.img 12M > /dev/null 2>&1 || build_ok=0
raw=$W/raw.img
truncate -s 20M $raw
put() { dd if=$1 of=$raw bs=1M seek=$2 oflag=seek_bytes conv=notrunc status=none; }
put $G/models/all-v3.gguf $((1 << 20))
put $G/models/many-layers.gguf 5000003
put $G/models/align-4096.gguf $((12 << 20))
[ $have_real -eq 1 ] && put $G/real/llama-2-tiny-random.gguf $((16 << 20))
# the npm reader, installed by scripts/deps.sh (no test reaches the network)
node_mods=node_modules
command -v node >/dev/null && [ -f $node_mods/@huggingface/gguf/package.json ] || node_mods=
check "node and @huggingface/gguf are installed (scripts/deps.sh)" test -n "$node_mods"

check "all images built" test $build_ok -eq 1
for i in b4k b1k no64 nocsum old1k blockmap inline htree frag p2 p3 gguf; do
	e2fsck -fn $W/$i.img > $W/fsck.$i 2>&1 || { bad "e2fsck -fn $i.img is clean"; tail -3 $W/fsck.$i; }
done
check "sgdisk: partitions at LBA $p2 and $p3 (not MiB-aligned), table valid" bash -c \
	"[ '$p2' = 2081 ] && [ '$p3' = 45000 ] && sgdisk -v $disk | grep -q 'No problems found'"
check "the test's GPT writer: sgdisk accepts its 512-byte form (partition at 2081)" bash -c \
	"sgdisk -v $W/gpt512.img | grep -q 'No problems found' && sgdisk -i 1 $W/gpt512.img | grep -q '^First sector: 2081 '"
check "b1k (mke2fs's defaults) has 1 KiB blocks" test "$(bsize $W/b1k.img)" = 1024
check "frag: debugfs ex /big has depth >= 2" python3 "$oracle" extents $W/frag.img /big 2
check "htree: /big has the index flag (debugfs)" bash -c "debugfs -R 'stat /big' $W/htree.img 2>/dev/null | grep -Eq 'Flags: 0x[0-9a-f]*1[0-9a-f]{3}\b'"
check "inline: /t, /m100, /idir and /ilink are inline (debugfs)" bash -c "
	for p in /t /m100 /idir /ilink; do debugfs -R \"stat \$p\" $W/inline.img 2>/dev/null | grep -q 'Flags: 0x10000000' || exit 1; done"
check "gguf image holds sparse files of 4 and 8 GiB" bash -c "debugfs -R 'stat /models/sparse-gap.gguf' $W/gguf.img 2>/dev/null | grep -q 'Size: 8589935488'"
echo "   ($(( $(date +%s) - t0 )) s)"

# ---- symlinks, path forms and errors ---------------------------------------------------------
paths() { # IMAGE FULL(0|1): 0 only resolves paths through cat (and two more)
	local i=$1 p rc ino
	local D=(--device "emu:$W/$i.img" --host)
	for p in /fast /sub/absfast /chain/c1 /chain/c40 /sub/dir/rel2 /dirlink/up/small.txt; do
		cat_is "$i: cat $p is small.txt" $S/small.txt "${D[@]}" $p
	done
	for p in /slow /abs /sub/rel /dirlink/deep.txt /dirlink/up/sub/dir/deep.txt /dirlink/up/dirlink/up/abs \
		'//sub//dir///deep.txt' /sub/./dir/../dir/deep.txt /../../sub/dir/deep.txt /sub/dir/up/sub/dir/deep.txt; do
		cat_is "$i: cat $p is deep.txt" $S/sub/dir/deep.txt "${D[@]}" "$p"
	done
	for p in /./small.txt /sub/../small.txt /sub/dir/../../small.txt /../small.txt; do
		cat_is "$i: cat $p" $S/small.txt "${D[@]}" "$p"
	done
	st1() { python3 "$oracle" stat1 $W/$i.img "emu:$W/$i.img" "" 0 "$@"; }
	st_each() { local p; for p; do st1 $p $p || return 1; done; }
	ls1() { python3 "$oracle" ls1 $W/$i.img "emu:$W/$i.img" "" "$@"; }
	check "$i: stat /dirlink/ (trailing slash follows)" st1 /dirlink/ /sub/dir
	check "$i: ls /dirlink lists /sub/dir" ls1 /dirlink /sub/dir
	[ "$2" = 1 ] || return 0
	cat_is "$i: cat /sparse (10 MiB with holes)" $S/sparse "${D[@]}" /sparse
	cat_is "$i: cat /empty" $S/empty "${D[@]}" /empty
	"$gpuos" cat "${D[@]}" /big.bin -o $tmp/o.bin > $tmp/o.stdout 2>$tmp/o.err
	check "$i: cat -o FILE writes the file (3 MiB), nothing on stdout" bash -c "cmp -s $tmp/o.bin $S/big.bin && [ ! -s $tmp/o.stdout ]"
	check "$i: stat /fast is the symlink itself (fast: no extents)" st1 /fast /fast
	check "$i: stat /slow is the symlink itself (slow: one block)" st1 /slow /slow
	check "$i: stat /chain/c0 (lstat of a 41-link chain works)" st1 /chain/c0 /chain/c0
	check "$i: stat /loop1 (lstat of a loop works)" st1 /loop1 /loop1
	check "$i: stat /dangling (lstat)" st1 /dangling /dangling
	check "$i: stat /dirlink/up/sub/./dir/.. is /sub" st1 /dirlink/up/sub/./dir/.. /sub
	check "$i: stat / is inode 2" st1 / /
	check "$i: stat /.. is the root" st1 /.. /
	check "$i: stat //sub//dir//" st1 //sub//dir// /sub/dir
	check "$i: stat /sub/hardlink (2 links)" st1 /sub/hardlink /sub/file
	check "$i: stat /chr, /blk, /fifo, /sock" st_each /chr /blk /fifo /sock
	check "$i: stat /setuid (mode 4755), /sticky (1777), /private (0600)" st_each /setuid /sticky /private
	check "$i: ls /dirlink/up/sub/ lists /sub" ls1 /dirlink/up/sub/ /sub
	check "$i: ls // lists /" ls1 // /
	check "$i: ls /sub/dir/.. lists /sub" ls1 /sub/dir/.. /sub
	check "$i: ls /emptydir is []" ls1 /emptydir /emptydir
}
errors() { # IMAGE
	local i=$1 rc ino
	local D=(--device "emu:$W/$i.img" --host)
	expect_fail "$i: cat /nonexistent: no such file" "$ENOENT" /nonexistent "$gpuos" cat "${D[@]}" /nonexistent
	expect_fail "$i: stat /sub/nonexistent: no such file" "$ENOENT" /sub/nonexistent "$gpuos" stat "${D[@]}" /sub/nonexistent
	expect_fail "$i: ls /nonexistent/: no such file" "$ENOENT" /nonexistent "$gpuos" ls "${D[@]}" /nonexistent/
	expect_fail "$i: cat /dangling: no such file" "$ENOENT" /dangling "$gpuos" cat "${D[@]}" /dangling
	expect_fail "$i: stat /small.txt/x: not a directory" "$ENOTDIR" /small.txt/x "$gpuos" stat "${D[@]}" /small.txt/x
	expect_fail "$i: cat /small.txt/: not a directory" "$ENOTDIR" /small.txt/ "$gpuos" cat "${D[@]}" /small.txt/
	expect_fail "$i: stat /fast/: not a directory" "$ENOTDIR" /fast/ "$gpuos" stat "${D[@]}" /fast/
	expect_fail "$i: ls /small.txt/: not a directory" "$ENOTDIR" /small.txt/ "$gpuos" ls "${D[@]}" /small.txt/
	expect_fail "$i: cat /chain/c0: too many symlinks (41)" "$ELOOP" /chain/c0 "$gpuos" cat "${D[@]}" /chain/c0
	expect_fail "$i: cat /loop1: too many symlinks" "$ELOOP" /loop1 "$gpuos" cat "${D[@]}" /loop1
	expect_fail "$i: stat /self/x: too many symlinks" "$ELOOP" /self/x "$gpuos" stat "${D[@]}" /self/x
	expect_fail "$i: ls /loop2: too many symlinks" "$ELOOP" /loop2 "$gpuos" ls "${D[@]}" /loop2
	expect_fail "$i: cat /sub: is a directory" "directory|EISDIR" /sub "$gpuos" cat "${D[@]}" /sub
	expect_fail "$i: a 256-byte name" "too long|ENAMETOOLONG|no such file" "" "$gpuos" stat "${D[@]}" /$(printf 'L%.0s' $(seq 1 256))
	expect_fail "$i: --part 1 without a partition table" "." "" "$gpuos" stat --device "emu:$W/$i.img" --part 1 --host /
	"$gpuos" ls "${D[@]}" /small.txt > $tmp/lsf.out 2> $tmp/lsf.err
	rc=$?
	check "$i: ls of a file: one-entry list or one-line error" python3 -c "
import json, sys
rc, out, err = $rc, open('$tmp/lsf.out').read(), open('$tmp/lsf.err').read()
if rc == 1:
    sys.exit(0 if err.count('\n') <= 1 and 'small.txt' in err else 1)
j = json.loads(out)['entries'] if out.strip().startswith('{') else None
sys.exit(0 if rc == 0 and (j is None and 'small.txt' in out or j and len(j) == 1 and j[0]['name'] == 'small.txt') else 1)"
	# text forms: they must name what the JSON names
	"$gpuos" ls "${D[@]}" / > $tmp/ls.txt 2>/dev/null
	check "$i: ls (text) names every entry" bash -c "for n in small.txt sub 'with space' fifo chr; do grep -Fq \"\$n\" $tmp/ls.txt || exit 1; done"
	"$gpuos" stat "${D[@]}" /medium.bin > $tmp/stat.txt 2>/dev/null
	ino=$(debugfs -R 'stat /medium.bin' $W/$i.img 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	check "$i: stat (text) shows the inode and the size" bash -c "grep -qw $ino $tmp/stat.txt && grep -qw 300000 $tmp/stat.txt"
}

corrupt() {
	local c
	cp $W/b4k.img $tmp/badsb.img
	printf '\000\000' | dd of=$tmp/badsb.img bs=1 seek=$((1024 + 0x38)) conv=notrunc status=none
	check "debugfs refuses the damaged image too" bash -c "! debugfs -R 'ls /' $tmp/badsb.img 2>&1 | grep -q small.txt"
	for c in ls stat cat; do
		expect_fail "$c on a damaged superblock magic" "superblock|magic|ext4" "" "$gpuos" $c --device "emu:$tmp/badsb.img" --host /small.txt
	done
	expect_fail "missing image file" "no such file|not found|cannot open" "" "$gpuos" ls --device "emu:$W/none.img" --host /
}

# ---- GPT -------------------------------------------------------------------------------------
gpt() {
	walk "gpt --part 3" $W/p3.img $W/p3src "emu:$disk" 3 $p3
	check "gpt --part 2: stat /big.bin" python3 "$oracle" stat1 $W/p2.img "emu:$disk" 2 $p2 /big.bin /big.bin
	check "gpt --part 2: stat /dirlink/ (through a symlink)" python3 "$oracle" stat1 $W/p2.img "emu:$disk" 2 $p2 /dirlink/ /sub/dir
	cat_is "gpt --part 2: cat /dirlink/up/abs" $S/sub/dir/deep.txt --device "emu:$disk" --part 2 --host /dirlink/up/abs
	"$gpuos" gguf --json --device "emu:$disk" --part 3 --host /models/m.gguf > $tmp/g.json 2> $tmp/g.err
	check "gpt --part 3: gguf /models/m.gguf matches the writer" python3 tests/tools/gguf_compare.py --quiet $W/p3.json $tmp/g.json
	expect_fail "gpt --part 1: no ext4 there" "superblock|magic|ext4|file system" "" "$gpuos" ls --device "emu:$disk" --part 1 --host /
	expect_fail "gpt --part 4: no such partition" "partition" "" "$gpuos" ls --device "emu:$disk" --part 4 --host /
	want_rc=2 expect_fail "gpt --part 0 (partitions count from 1): a usage error" "part" "" "$gpuos" ls --device "emu:$disk" --part 0 --host /
	expect_fail "gpt: no such file in partition 2" "$ENOENT" /nonexistent "$gpuos" cat --device "emu:$disk" --host /nonexistent
	cp $disk $tmp/gptbad.img
	printf '\377' | dd of=$tmp/gptbad.img bs=1 seek=$((512 + 0x30)) conv=notrunc status=none
	check "sgdisk sees the damaged primary header" bash -c "sgdisk -v $tmp/gptbad.img 2>&1 | grep -qi 'problem\|corrupt\|crc\|invalid'"
	check "gpt, primary header damaged: the backup finds partition 2" python3 "$oracle" stat1 $W/p2.img "emu:$tmp/gptbad.img" "" $p2 /sub/dir/deep.txt /sub/dir/deep.txt
	"$gpuos" stat --device "emu:$tmp/gptbad.img" --host /small.txt > /dev/null 2> $tmp/gptbad.err
	check "gpt, primary header damaged: says the backup was used" grep -qi backup $tmp/gptbad.err
	cp $disk $tmp/gptsb.img
	printf '\000\000' | dd of=$tmp/gptsb.img bs=1 seek=$((2081 * 512 + 1024 + 0x38)) conv=notrunc status=none
	expect_fail "gpt --part 2 with its superblock magic damaged" "superblock|magic|ext4" "" "$gpuos" stat --device "emu:$tmp/gptsb.img" --part 2 --host /small.txt
	walk "gpt4k,lba=4096 (partition at LBA 263)" $W/b4k.img $S "emu:$W/gpt4k.img,lba=4096" "" 263 --what ls,stat --sample 10 --skip-stat "$skipchain"
	cat_is "gpt4k,lba=4096: cat /big.bin" $S/big.bin --device "emu:$W/gpt4k.img,lba=4096" --host /big.bin
	cat_is "gpt4k,lba=4096 --part 1: cat /sparse" $S/sparse --device "emu:$W/gpt4k.img,lba=4096" --part 1 --host /sparse
}

# ---- gpuos parts: the partition table as the runtime read it -------------------------------
# jpart JSONFILE PYTHON_EXPR: the expression over the parsed output j holds
jpart() { python3 -c "import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
parts() {
	local P=tests/tools/parts_oracle.py rc
	"$gpuos" parts --json --device "emu:$W/parts.img" --host > $tmp/p.json 2> $tmp/p.err
	rc=$?
	check "parts --json: exit 0, nothing on stderr" bash -c "[ $rc -eq 0 ] && [ ! -s $tmp/p.err ]"
	check "parts --json: every entry as sgdisk and the recipe say (numbers with gaps, LBAs, type and unique GUIDs, attributes, UTF-16 names, ext4)" \
		python3 $P check $W/parts.img $tmp/p.json
	check "parts --json: gpuos.parts/1 as docs/json.md says" python3 tests/tools/check_json.py $tmp/p.json
	"$gpuos" stat --json --device "emu:$W/parts.img" --host / > $tmp/ps.json 2>/dev/null
	check "parts: the partition marked \"files\" is the one stat reads without --part" python3 -c "
import json, sys
p = [x for x in json.load(open('$tmp/p.json'))['partitions'] if x['files']]
sys.exit(0 if len(p) == 1 and p[0]['first_lba'] == json.load(open('$tmp/ps.json'))['partition_start_lba'] else 1)"
	"$gpuos" parts --device "emu:$W/parts.img" --host > $tmp/p.txt 2>&1
	rc=$?
	check "parts (text): exit 0" test $rc -eq 0
	check "parts (text): a name's control characters escaped (as ls -b)" grep -Fq 'a\tb\\c\033[31m' $tmp/p.txt
	check "parts (text): no raw control character reaches the terminal" python3 -c \
		"import sys; t = open(sys.argv[1], 'rb').read(); sys.exit(any(c < 32 and c != 10 or c == 127 for c in t))" $tmp/p.txt
	check "parts (text): sizes in human units, type names, UTF-8 names" bash -c \
		"grep -q '8 MiB .*Linux filesystem' $tmp/p.txt && grep -q 'Microsoft basic data *d$(printf '\303\274\360\237\230\200')x\$' $tmp/p.txt &&
		 grep -q 'bit 60, bit 63' $tmp/p.txt && grep -q 'EFI system partition *EFI system\$' $tmp/p.txt"
	"$gpuos" parts --json --device "emu:$W/mbr.img" --host > $tmp/m.json 2> $tmp/m.err
	check "parts --json of a plain MBR: its primary partitions, types, the active flag" python3 $P check $W/mbr.img $tmp/m.json
	check "parts --json of a plain MBR: as docs/json.md says" python3 tests/tools/check_json.py $tmp/m.json
	"$gpuos" parts --json --device "emu:$W/gpt4k.img,lba=4096" --host > $tmp/p4.json 2>/dev/null
	check "parts --json, 4096-byte LBAs: partition 1 at LBA 263, \"data\", ext4, as the GPT writer made it" jpart $tmp/p4.json \
		"j['lba_bytes'] == 4096 and j['disk_guid'] == '00000000-0000-0000-0000-000000005678' and [(p['number'], p['first_lba'], p['last_lba'], p['name'], p['ext4'], p['unique_guid']) for p in j['partitions']] == [(1, 263, 263 + 5120 - 1, 'data', True, '00000000-0000-0000-0000-000000001234')]"
	# no partition table: one volume, not an error
	"$gpuos" parts --json --device "emu:$W/b4k.img" --host > $tmp/pn.json 2>/dev/null
	rc=$?
	check "parts --json without a partition table: exit 0, scheme none, the whole device holds ext4" bash -c \
		"[ $rc -eq 0 ] && python3 tests/tools/check_json.py $tmp/pn.json > /dev/null && python3 -c \"import json, sys; j = json.load(open('$tmp/pn.json')); sys.exit(0 if j['scheme'] == 'none' and j['partitions'] == [] and j['whole_device_ext4'] is True and j['disk_bytes'] == $(stat -c %s $W/b4k.img) else 1)\""
	truncate -s 4M $tmp/zero.img
	"$gpuos" parts --device "emu:$tmp/zero.img" --host > $tmp/pz.txt 2>&1
	rc=$?
	check "parts (text) of zeros: exit 0, says there is no partition table and no ext2/3/4" bash -c \
		"[ $rc -eq 0 ] && grep -q 'No partition table' $tmp/pz.txt && grep -q 'no ext2/3/4' $tmp/pz.txt"
	# damaged tables (the offsets of UEFI table 5-5: header CRC at 0x10, checked over 92 bytes)
	cp $W/parts.img $tmp/pbad.img
	printf '\377' | dd of=$tmp/pbad.img bs=1 seek=$((512 + 0x30)) conv=notrunc status=none
	"$gpuos" parts --json --device "emu:$tmp/pbad.img" --host > $tmp/pb.json 2> $tmp/pb.err
	rc=$?
	check "parts, primary GPT header damaged: the backup's table, backup_used, the CRC named, a note on stderr" bash -c \
		"[ $rc -eq 0 ] && python3 $P check $W/parts.img $tmp/pb.json backup && grep -qi 'backup' $tmp/pb.err &&
		 python3 -c \"import json, sys; j = json.load(open('$tmp/pb.json')); sys.exit(0 if j['backup_used'] and 'CRC' in j['primary_problem'] and j['header_lba'] == j['disk_lbas'] - 1 and len(j['partitions']) == 6 else 1)\""
	printf '\377' | dd of=$tmp/pbad.img bs=1 seek=$(( ($(stat -c %s $tmp/pbad.img) / 512 - 1) * 512 + 0x30)) conv=notrunc status=none
	check "sgdisk finds no valid GPT there either (it would create a new one)" bash -c \
		"sgdisk -p $tmp/pbad.img 2>&1 | grep -q 'Creating new GPT entries'"
	expect_fail "parts, both GPT headers damaged: corrupt, the CRC of each named" "corrupt GPT.*primary: GPT header CRC.*backup: GPT header CRC" "" \
		"$gpuos" parts --device "emu:$tmp/pbad.img" --host
	cp $W/parts.img $tmp/pent.img
	printf '\377' | dd of=$tmp/pent.img bs=1 seek=$((1024 + 0x38)) conv=notrunc status=none
	printf '\377' | dd of=$tmp/pent.img bs=1 seek=$(( ($(stat -c %s $tmp/pent.img) / 512 - 33) * 512 + 0x38)) conv=notrunc status=none
	expect_fail "parts, both partition entry arrays damaged: corrupt, the entry array CRC named" "corrupt GPT.*entry array CRC" "" \
		"$gpuos" parts --json --device "emu:$tmp/pent.img" --host
	want_rc=2 expect_fail "parts PATH: a usage error (it takes no arguments)" "argument" "" "$gpuos" parts --device "emu:$W/parts.img" --host /
	want_rc=2 expect_fail "parts --part 1: not an option of parts" "not an option of parts" "" "$gpuos" parts --device "emu:$W/parts.img" --part 1 --host
	want_rc=2 expect_fail "parts without --device: a usage error" "device" "" "$gpuos" parts --host
}

# ---- GGUF ---------------------------------------------------------------------------------
GD=(--device "emu:$W/gguf.img" --host)
# gguf_vs LABEL WRITER_JSON|- HOSTFILE GPUOS_ARGS...: JSON against the writer and @huggingface/gguf
gguf_vs() {
	local label=$1 wj=$2 host=$3 rc
	shift 3
	"$gpuos" gguf --json "$@" > $tmp/g.json 2> $tmp/g.err
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "       exit $rc: $(head -c 300 $tmp/g.err)"
		bad "$label: gguf --json"
		return
	fi
	if [ "$wj" != - ]; then
		check "$label: gguf --json matches the writer's description" python3 tests/tools/gguf_compare.py --quiet --max 5 $wj $tmp/g.json
	fi
	if [ -n "$node_mods" ]; then
		if node tests/tools/gguf_ref.mjs --modules "$node_mods" "$host" > $tmp/ref.json 2> $tmp/ref.err; then
			check "$label: gguf --json matches @huggingface/gguf" python3 tests/tools/gguf_compare.py --quiet --max 5 $tmp/ref.json $tmp/g.json
		else
			echo "       (@huggingface/gguf refuses $label: $(head -c 120 $tmp/ref.err))"
		fi
	fi
}
gguf_valid() {
	local c
	for c in $valid; do
		gguf_vs "$c (in ext4)" $W/$c.json $G/models/$c.gguf "${GD[@]}" /models/$c.gguf
	done
	"$gpuos" gguf "${GD[@]}" /models/all-v3.gguf > $tmp/g.txt 2>&1
	check "gguf (text) runs and names a tensor" bash -c "grep -q 'token_embd\|blk\.' $tmp/g.txt"
}
gguf_hostile() {
	local c why
	for c in $hostile; do
		why=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['expect']['why'])" $W/$c.json)
		expect_fail "$c (in ext4) refused: '$why'" "." "$why" "$gpuos" gguf --json "${GD[@]}" /bad/$c.gguf
	done
	expect_fail "gguf of a file that is not GGUF" "magic|GGUF" "" "$gpuos" gguf "${GD[@]}" /models/../bad/../bad/bad-magic.gguf
	expect_fail "gguf of a missing file" "$ENOENT" /models/none.gguf "$gpuos" gguf "${GD[@]}" /models/none.gguf
}
gguf_raw() {
	gguf_vs "all-v3 @1048576" $W/all-v3.json $G/models/all-v3.gguf --device "emu:$raw" --host @$((1 << 20))
	gguf_vs "many-layers @5000003 (not LBA-aligned)" $W/many-layers.json $G/models/many-layers.gguf --device "emu:$raw" --host @5000003
	gguf_vs "align-4096 @12582912, lba=4096" $W/align-4096.json $G/models/align-4096.gguf --device "emu:$raw,lba=4096" --host @$((12 << 20))
	gguf_vs "many-layers @5000003, lba=4096" $W/many-layers.json $G/models/many-layers.gguf --device "emu:$raw,lba=4096" --host @5000003
	expect_fail "gguf @OFFSET where there is no GGUF" "magic|GGUF" "" "$gpuos" gguf --device "emu:$raw" --host @$((3 << 20))
	expect_fail "gguf @OFFSET past the end of the device" "end|past|beyond|range|size" "" "$gpuos" gguf --device "emu:$raw" --host @$((64 << 20))
}
gguf_real() {
	if [ $have_real -eq 0 ]; then
		skip "no $real here"
		return
	fi
	gguf_vs "llama-2-tiny-random (in ext4)" - $G/real/llama-2-tiny-random.gguf "${GD[@]}" /real/llama-2-tiny-random.gguf
	check "llama-2-tiny-random: version 3, 12 tensors, 18 KVs, alignment 32" bash -c "
		python3 $oracle field $tmp/g.json version 3 && python3 $oracle field $tmp/g.json tensor_count 12 &&
		python3 $oracle field $tmp/g.json kv_count 18 && python3 $oracle field $tmp/g.json alignment 32"
	gguf_vs "llama-2-tiny-random @16777216" - $G/real/llama-2-tiny-random.gguf --device "emu:$raw" --host @$((16 << 20))
	check "llama-2-tiny-random @OFFSET: 12 tensors" python3 $oracle field $tmp/g.json tensor_count 12
	gguf_vs "ggml-vocab-llama-spm (in ext4)" - $G/real/ggml-vocab-llama-spm.gguf "${GD[@]}" /real/ggml-vocab-llama-spm.gguf
	check "ggml-vocab-llama-spm: 22 KVs, no tensors" bash -c "python3 $oracle field $tmp/g.json kv_count 22 && python3 $oracle field $tmp/g.json tensor_count 0"
	expect_fail "ggml-vocab-llama-v1 refused: version 1" "version 1" "" "$gpuos" gguf "${GD[@]}" /real/ggml-vocab-llama-v1-2023-08-17.gguf
	expect_fail "example-FUGG-magic refused: FUGG" "FUGG" "" "$gpuos" gguf "${GD[@]}" /real/example-FUGG-magic.gguf
	expect_fail "test_writer-objtype13 refused: unknown value type" "unknown value type" "" "$gpuos" gguf "${GD[@]}" /real/test_writer-objtype13.gguf
}

# ---- the walks: every directory, entry and file of an image -----------------------------------
skipchain='^/chain/c([2-9]|[1-3][0-9])$'
somecat='^/(big\.bin|sparse|prealloc|medium\.bin|small\.txt)$'
features() { echo "$(bsize $1)-byte blocks, $(dumpe2fs -h $1 2>/dev/null | sed -n 's/^Filesystem features: *//p')"; }
lba4k() {
	walk "b4k,lba=4096" $W/b4k.img $S "emu:$W/b4k.img,lba=4096" "" 0 --expect /prealloc=$W/b4k.img.prealloc --what ls,cat
	walk "b1k,lba=4096 (1 KiB blocks on 4 KiB LBAs)" $W/b1k.img $S "emu:$W/b1k.img,lba=4096" "" 0 \
		--expect /prealloc=$W/b1k.img.prealloc --what stat,cat --sample 8 --cat "$somecat"
}
inline() {
	walk inline $W/inline.img $I "emu:$W/inline.img" "" 0 --sample 8
	cat_is "inline: cat through the inline symlink /ilink/f" $I/$Y/f --device "emu:$W/inline.img" --host /ilink/f
	cat_is "inline: cat /idir/up (symlink ../t from an inline dir)" $I/t --device "emu:$W/inline.img" --host /idir/up
	cat_is "inline: cat /idir/xa (an entry in the system.data part)" $I/big --device "emu:$W/inline.img" --host /idir/xa
}
# an array (docs/design.md, "Arrays of SSDs"): the image striped over
# several emulated SSDs; every file of more than a chunk lies on all of them
array() {
	walk "b4k on ssds=4" $W/b4k.img $S "emu:$W/b4k.img,ssds=4" "" 0 --expect /prealloc=$W/b4k.img.prealloc \
		--what ls,cat
	cat_is "ssds=4,stripe=4,lba=4096: cat /big.bin" $S/big.bin --device "emu:$W/b4k.img,ssds=4,stripe=4,lba=4096" \
		--host /big.bin
	walk "frag on ssds=3,stripe=12" $W/frag.img $W/fsrc "emu:$W/frag.img,ssds=3,stripe=12" "" 0 --sample 6 \
		--expect /big=$W/fragbig --what stat,cat
	walk "gpt partition 2 (LBA $p2) on ssds=2,stripe=8" $W/p2.img $S "emu:$disk,ssds=2,stripe=8" "" $p2 \
		--skip-stat "$skipchain" --expect /prealloc=$W/p2.img.prealloc --cat "$somecat" --sample 6
}
htree() {
	local n
	walk htree $W/htree.img $W/hsrc "emu:$W/htree.img" "" 0 --sample 12
	for n in 000000 001299 002599; do
		cat_is "htree: cat /big/file_${n}_with_a_longer_name" $W/hsrc/big/file_${n}_with_a_longer_name \
			--device "emu:$W/htree.img" --host /big/file_${n}_with_a_longer_name
	done
	expect_fail "htree: a missing name in the htree dir" "$ENOENT" /big/file_002600_with_a_longer_name \
		"$gpuos" stat --device "emu:$W/htree.img" --host /big/file_002600_with_a_longer_name
}

# ---- launch, longest first --------------------------------------------------------------------
section "b4k: symlinks and path forms" paths b4k 1
section "b4k: errors" errors b4k
section "GGUF: the writer's hostile cases in ext4" gguf_hostile
section "GPT: --part, damaged tables, 4096-byte LBAs" gpt
section "gpuos parts: partition tables as the runtime read them" parts
section "GGUF: the writer's valid cases in ext4" gguf_valid
section "b1k: symlinks and path forms (resolution through 1 KiB-block directories)" paths b1k 0
for i in b4k b1k no64 nocsum old1k; do
	opts=(--skip-stat "$skipchain" --expect /prealloc=$W/$i.img.prealloc)
	case $i in b4k|b1k) ;; *) opts+=(--cat "$somecat" --sample 14) ;; esac
	section "$i: $(features $W/$i.img)" walk "$i" $W/$i.img $S "emu:$W/$i.img" "" 0 "${opts[@]}"
done
section "blockmap (no extents: indirect blocks): $(features $W/blockmap.img)" \
	walk blockmap $W/blockmap.img $W/bm "emu:$W/blockmap.img" "" 0 --skip-stat "$skipchain" --expect /prealloc=$W/blockmap.img.prealloc \
	--sample 14 --cat '^/(dind|tind|big\.bin|sparse|prealloc|medium\.bin|small\.txt)$'
section "4 KiB LBAs (lba=4096)" lba4k
section "inline_data" inline
section "htree (2600 entries)" htree
section "arrays: ssds=2,3,4 (files striped over emulated SSDs)" array
section "fragmented file (extent tree of depth >= 2)" \
	walk frag $W/frag.img $W/fsrc "emu:$W/frag.img" "" 0 --sample 12 --expect /big=$W/fragbig
section "GPT (sgdisk, 512-byte LBAs): no --part picks partition 2 (LBA $p2)" \
	walk "gpt default (partition 2)" $W/p2.img $S "emu:$disk" "" $p2 --skip-stat "$skipchain" --expect /prealloc=$W/p2.img.prealloc \
	--cat "$somecat" --sample 14
section "corrupt superblock" corrupt
section "GGUF written raw at byte offsets (@OFFSET)" gguf_raw
section "GGUF: the real files of ../shared/testdata/gguf" gguf_real
sections_end

echo "files e2e: $pass passed, $fail failed, $skipped skipped ($(( $(date +%s) - t0 )) s)"
[ $fail -eq 0 ]
