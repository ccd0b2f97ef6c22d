#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The pci: path of gpuos against QEMU's NVMe controller (docs/hardware.md).

Boots a Linux guest under TCG with two emulated NVMe controllers and runs
build/gpuos-static (host mode) in it against them, through vfio-pci with an
emulated Intel IOMMU (boot 1) and through uio_pci_generic with no IOMMU
(boot 2); then a third boot with two more drives, C and D, that hold one
image striped RAID-0 style (pci:C+D,stripe=64, one VFIO container for
both; docs/hardware.md, "Several SSDs as one array"):

  A  0000:00:04.0  64 MiB, 512-byte LBAs, QEMU's defaults (64 queue pairs,
                   MDTS 512 KiB); one sector fails every read (blkdebug); a
                   minix file system at its start for the safety checks
  B  0000:00:05.0  32 MiB, 4096-byte LBAs, mdts=3 (32 KiB), max_ioqpairs=2,
                   100 IOPS (throttling.iops-total): a slow device; an ext4
                   file system (mke2fs -d) holding files and a GGUF

The file tools (gpuos ls/stat/cat/gguf) run in the guest on B through the
real pci: path; their output must equal, byte for byte, what the same
binary prints here for the same image on the emulated controller (emu:),
whose answers tests/emu/files.sh checks against debugfs and other readers,
and cat must equal the source files themselves.

  C  0000:00:06.0  16 MiB each, 512-byte LBAs: chunks 0, 2, 4, ... (64 KiB)
  D  0000:00:07.0  of an ext4 image of 32 MiB, and chunks 1, 3, 5, ...

On the array: identify (each controller), raw reads across chunk
boundaries checked against the image, a file spread over both drives
through `gpuos cat`, a service with two warps, and bench, whose counters
come from each drive's SMART log: both served reads, together all of them.

Every read is checked against the image here (the guest prints MD5s).
A boot fails on a DMAR fault line in the guest's kernel log and on any
pci_nvme_err* / pci_nvme_ub* trace event of QEMU except the ones the
injected read error itself must produce (and those must be there).

Every read, cat and run asks for the runtime's counters (--stats,
gpuos.stats/1 in docs/json.md), and each service's are asked before it
stops: the log shows every counter of every run, and a stray, a duplicate
completion or an untrusted request fails its check, since nothing here
injects them (the reset test's own strays excepted).

Usage: qemu_test.py BUILD_DIR   (tests/qemu/run.sh prepares the kernel)
Environment: GPUOS_QEMU_SEED (random ranges), GPUOS_QEMU_KEEP=1 (keep logs),
GPUOS_QEMU_ONLY=vfio|uio|array (one kind of boot), GPUOS_QEMU_BOOTS=N (each
kind N times in a row, new ranges each time, with a summary line per kind:
wrong reads, unexplained strays and duplicates, DMAR faults, across boots;
the logs of every failing boot kept), GPUOS_QEMU_ORDER=reset-first (B's
timeouts and reset before the file tools and services, where they were
when later reads went wrong: docs/testing.md), GPUOS_QEMU_TRACE=EV,EV...
(more of QEMU's trace events into the trace log; with pci_nvme_io_cmd and
pci_nvme_rw_cb the summary counts reads QEMU completed twice),
GPUOS_QEMU_BOOT_TIMEOUT=S (a boot's limit, default 150 s), GPUOS_QEMU_JOBS=N
(the boots of a round side by side, default one per core, at most 3).
"""
import concurrent.futures
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

A_BDF, B_BDF = "0000:00:04.0", "0000:00:05.0"
A_SIZE, B_SIZE = 64 << 20, 32 << 20
A_LBA, B_LBA = 512, 4096
BAD_SECTOR = 81931                       # 512-byte sector of A that fails (blkdebug)
BAD_BYTES = (BAD_SECTOR * 512, BAD_SECTOR * 512 + 512)
B_IOPS = 100
FS_BYTES = 4 << 20                       # minix file system at the start of A (1 KiB blocks: not on B)
BOOT_TIMEOUT = int(os.environ.get("GPUOS_QEMU_BOOT_TIMEOUT") or 150)  # seconds; more on a loaded machine
HEAP = ["--heap-mib", "16"]
C_BDF, D_BDF = "0000:00:06.0", "0000:00:07.0"
ARR_MEMBER = 16 << 20                    # each drive of the array
ARR_STRIPE = 64 << 10
ARR_SIZE = 2 * ARR_MEMBER

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


OTHER_IMAGES = []  # (name, bytes) of the other drives of a boot, where a wrong block may come from (main sets it)


def diagnose_read(img, off, length, rec):
    """The 4 KiB blocks of a wrong read that differ, and what they hold:
    zeros, the image's bytes at another offset (searched at the read's
    offset modulo 512 and at whole LBAs), another drive's bytes (at any
    LBA, or at the read's phase), or other bytes. Says where the read
    was, for finding its commands in a trace (LBA = offset / LBA size)."""
    got = rec.get("blocks")
    if not got:
        return ""
    zero = hashlib.md5(bytes(4096)).hexdigest()
    bad = [k for k in sorted(got) if got[k] != hashlib.md5(img[off + k * 4096:min(off + length, off + (k + 1) * 4096)]).hexdigest()]
    where = {}
    if any(got[k] != zero for k in bad):
        for name, data in [("", img)] + [(n, d) for n, d in OTHER_IMAGES if d is not img]:
            for phase in sorted({off % 512, 0}):
                for p in range(phase, len(data) - 4096 + 1, 512):
                    where.setdefault(hashlib.md5(data[p:p + 4096]).hexdigest(), (name, p))
    desc = []
    for k in bad[:12]:
        h = got[k]
        if h == zero:
            desc.append("%d (zeros)" % k)
        elif h in where and not where[h][0]:
            desc.append("%d (image bytes at %d, %+d from where they belong)" % (k, where[h][1],
                                                                              where[h][1] - (off + k * 4096)))
        elif h in where:
            desc.append("%d (drive %s's bytes at %d)" % (k, where[h][0], where[h][1]))
        else:
            desc.append("%d (other bytes)" % k)
    return "; %d of %d blocks differ: %s%s (the read: %d bytes at %d)" % (
        len(bad), (length + 4095) // 4096, ", ".join(desc), ", ..." if len(bad) > 12 else "", length, off)


class Plan:
    """The guest's script and what the host expects of each line it prints."""
    run = ""  # the run directory (main sets it)

    def __init__(self, name, drives, injected_error=True):
        self.name = name
        self.drives = drives          # QEMU arguments of the NVMe drives
        self.injected_error = injected_error   # A's failing sector is read (its trace events expected)
        self.lines = []
        self.checks = []     # (name, kind, fn(rec) -> error string or None)
        self.strays_ok = set()   # checks whose runtime may count strays (the reset test's)
        self.service_probes = set()  # checks whose service counters are judged (service_counters)
        self.reads = 0
        self.read_bytes = 0

    def sh(self, line):
        self.lines.append(line)

    def _add(self, name, kind, fn):
        assert all(n != name for n, _, _ in self.checks), name
        self.checks.append((name, kind, fn))

    @staticmethod
    def q(args):
        return " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)

    def _read_check(self, img, off, length, lba, bad_sector=True):
        want = hashlib.md5(img[off:off + length]).hexdigest()
        fails = bad_sector and off < BAD_BYTES[1] and off + length > BAD_BYTES[0] and lba == A_LBA
        self.reads += 1
        self.read_bytes += length

        def check(rec):
            if fails:
                if rec["rc"] == 0:
                    return "read over the failing sector succeeded"
                if "Unrecovered Read Error" not in rec["err"]:
                    return "wrong error: " + rec["err"]
                return None
            if rec["rc"] != 0:
                return "rc %d: %s" % (rec["rc"], rec["err"])
            if rec["md5"] != want:
                return "data differ from the image (md5 %s, want %s)%s" % (rec["md5"], want,
                                                                           diagnose_read(img, off, length, rec))
            return None
        return check, fails, want

    def read(self, name, img, lba, off, length, device=None, socket=None, bg=False, min_ms=0, bad_sector=True):
        src = ["--device", device] + HEAP if device else ["--socket", socket]
        cmd = ["gpuos", "read"] + src + ["--allow-raw", "--offset", str(off), "--length", str(length), "--stats"]
        fn, fails, want = self._read_check(img, off, length, lba, bad_sector)
        if min_ms:
            data_check = fn

            def fn(rec):
                return data_check(rec) or (None if rec["ms"] >= min_ms else
                                           "took %d ms, a throttled device needs %d at least" % (rec["ms"], min_ms))
        # in the foreground, a wrong answer comes with each 4 KiB block's md5 (diagnose_read)
        self.sh(("b " + name if bg else "rw " + name + " " + want) + " " + self.q(cmd))
        self._add(name, "R", fn)
        return fails

    def collect(self):
        self.sh("collect")

    def text(self, name, cmd, rc=0, err=None, out=None):
        """A command whose exit status, stderr and stdout are checked."""
        self.sh("t " + name + " " + (cmd if isinstance(cmd, str) else self.q(cmd)))

        def check(rec):
            if rc is not None and rec["rc"] != rc:
                return "rc %d (want %d): %s %s" % (rec["rc"], rc, rec["err"], rec["out"][:200])
            if err and not re.search(err, rec["err"]):
                return "stderr %r does not match %r" % (rec["err"], err)
            if out:
                r = out(rec["out"]) if callable(out) else (None if re.search(out, rec["out"]) else
                                                           "stdout %r does not match %r" % (rec["out"][:300], out))
                if r:
                    return r
            return None
        self._add(name, "T", check)

    def identify(self, name, device, want):
        def out(text):
            try:
                j = json.loads(text)
            except ValueError:
                return "not JSON: " + text[:200]
            bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}
            return ("identify differs (got, want): %s" % bad) if bad else None
        self.text(name, ["gpuos", "identify", "--json", "--device", device], out=out)

    def output(self, name, cmd, want_md5, want_path=None):
        """A command whose stdout must hash to want_md5 (exit status 0). With
        want_path (the bytes it must print), a wrong output is diagnosed: the
        4 KiB blocks that differ, and what they hold instead."""
        self.sh("rw " + name + " " + want_md5 + " " + self.q(cmd))

        def check(rec):
            if rec["rc"] != 0:
                return "rc %d: %s" % (rec["rc"], rec["err"])
            if rec["md5"] != want_md5:
                return "output differs (md5 %s, want %s)%s" % (rec["md5"], want_md5, diagnose(rec))

        def diagnose(rec):
            if not want_path or not rec.get("blocks"):
                return ""
            with open(want_path, "rb") as f:
                want = f.read()
            wb = [hashlib.md5(want[k:k + 4096]).hexdigest() for k in range(0, len(want), 4096)]
            where = {h: k for k, h in enumerate(wb)}
            got = rec["blocks"]
            bad = [k for k in sorted(got) if k >= len(wb) or got[k] != wb[k]]
            zero = hashlib.md5(bytes(4096)).hexdigest()
            desc = ["%d (%s)" % (k, "zeros" if got[k] == zero else "block %d of the file" % where[got[k]]
                                 if got[k] in where else "other bytes") for k in bad[:12]]
            return "; %d of %d blocks differ: %s%s" % (len(bad), len(wb), ", ".join(desc),
                                                        ", ..." if len(bad) > 12 else "")
        self._add(name, "R", check)

    def service(self, name, key, sock, device, args, expect_err):
        cmd = ["gpuos", "boot", "--device", device, "--allow-raw"] + HEAP + args
        self.sh("svc_start %s %s %s %s" % (name, key, sock, self.q(cmd)))

        def check(rec):
            if rec["rc"] != 0:
                return "service did not get ready: " + rec["err"]
            if expect_err and not re.search(expect_err, rec["err"]):
                return "service says %r, want %r" % (rec["err"], expect_err)
            return None
        self._add(name, "T", check)

    def service_counters(self, name, sock):
        """The counters of a service's runtime (all its clients, since it
        started), asked through a small read with --stats before it stops:
        a stray or duplicate it counted fails this check."""
        self.text(name, ["gpuos", "read", "--socket", sock, "--allow-raw", "--offset", "0", "--length", "512",
                         "--stats", "-o", "/dev/null"],
                  out=None)
        self.service_probes.add(name)

    def service_stop(self, name, key, sock):
        self.sh("svc_stop %s %s %s" % (name, key, sock))
        self._add(name, "T", lambda rec: None if rec["rc"] == 0 else "service exit %d: %s" % (rec["rc"], rec["err"]))

    def script(self):
        return "\n".join(self.lines) + "\n"


def ranges(rng, size, n, lba, small=False):
    """Random (offset, length) pairs: unaligned, sub-LBA, multi-command and large."""
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            length = rng.randint(1, 4096)
        elif kind == 1:
            length = rng.randint(4096, 256 << 10)
        elif kind == 2:
            length = rng.randint(256 << 10, (1 << 20) if small else (3 << 20))
        else:
            length = rng.randint(1, 64 << 10) // lba * lba or lba   # LBA aligned
        off = rng.randint(0, size - length)
        if kind == 3:
            off = off // lba * lba
        out.append((off, length))
    return out


def avoid_bad(rng, size, length):
    while True:
        off = rng.randint(0, size - length)
        if off + length <= BAD_BYTES[0] or off >= BAD_BYTES[1]:
            return off


# The file tools on B: (name, arguments after the device). Their expected
# output comes from the same binary on the emulated controller (file_expect).
FILE_CMDS = [
    ("ls", ["ls", "--json", "/"]),
    ("ls-dir", ["ls", "--json", "/dir"]),
    ("stat-data", ["stat", "--json", "/data.bin"]),
    ("stat-link", ["stat", "--json", "/link"]),
    ("cat-data", ["cat", "/data.bin"]),
    ("cat-link", ["cat", "/link"]),
    ("cat-small", ["cat", "/dir/small.txt"]),
    ("gguf", ["gguf", "--json", "/m.gguf"]),
]
FILE_SRC = {"cat-data": "data.bin", "cat-link": "data.bin", "cat-small": "dir/small.txt"}


def add_file_tests(p, b_dev, tag, expect):
    for name, args in FILE_CMDS:
        src = os.path.join(p.run, "src", FILE_SRC[name]) if name in FILE_SRC else None
        stats = ["--stats"] if args[0] == "cat" else []   # the runtime's counters (S lines)
        p.output("%s-b-%s" % (tag, name), ["gpuos", args[0], "--device", b_dev] + HEAP + stats + args[1:],
                 expect[name], src)
    # Once (CI, 2026-11-24, seed 727749502, not repeated in 18 runs since) cat-data printed other
    # bytes than data.bin with exit status 0, while cat-link right after was right. A second cat
    # tells a lasting fault (the same md5 again) from a passing one; both must be right.
    p.output("%s-b-cat-data-again" % tag, ["gpuos", "cat", "--device", b_dev] + HEAP + ["--stats", "/data.bin"],
             expect["cat-data"], os.path.join(p.run, "src", "data.bin"))
    p.text("%s-b-missing-file" % tag, ["gpuos", "cat", "--device", b_dev] + HEAP + ["/nope"], rc=1,
           err=r"^gpuos cat: /nope: no such file or directory")


def add_reset_tests(p, rng, b_img, b_dev, tag):
    """Commands the slow controller cannot answer within a 20 ms timeout:
    QEMU answers the runtime's Aborts "not aborted", so the runtime resets
    B by itself (CC.EN, admin registers, Set Features, queues re-created;
    docs/design.md, "The life of a command"). Requests then in flight
    fail; every one is answered; the admin queue goes back to boot, whose
    shutdown deletes the queues."""
    def reset_check(text):
        try:
            got = json.loads(text)  # the top level: the controllers' own counters have "errors" too
        except ValueError:
            return "not one JSON object: %s" % text[:400]
        if got.get("resets", 0) < 1 or got.get("aborts", 0) < 1 or got.get("errors", 0) < 1:
            return "want aborts, resets and failed requests: %s" % text[:400]
        return None
    p.text("%s-b-timeouts-reset" % tag, ["gpuos", "bench", "--device", b_dev, "--timeout-ms", "20", "--threads", "16",
                                         "--iters", "4", "--json"] + HEAP, rc=None, out=reset_check)
    # Commands QEMU answers after the runtime gave up on them are this test's own.
    p.strays_ok.add("%s-b-timeouts-reset" % tag)
    p.read("%s-b-read-after-reset" % tag, b_img, B_LBA, rng.randint(0, 15) << 20, 256 << 10, device=b_dev)


def add_io_tests(p, rng, a_img, b_img, a_dev, b_dev, tag, expect, reset_first=False):
    """Reads on both controllers, directly and through services; the file
    tools on B; B's timeouts and reset last (2026-11-24: reads of later
    processes went wrong after it, docs/testing.md), or with reset_first
    (GPUOS_QEMU_ORDER=reset-first) where they were then: after the direct
    reads, before the file tools and the services."""
    # Direct: each `gpuos read` boots a runtime (bring-up, queues), reads, shuts down.
    for i, (off, ln) in enumerate(ranges(rng, A_SIZE, 6, A_LBA)):
        p.read("%s-a-read%d" % (tag, i), a_img, A_LBA, off, ln, device=a_dev)
    p.read("%s-a-read-bad-sector" % tag, a_img, A_LBA, BAD_BYTES[0] + 100, 200, device=a_dev)
    p.read("%s-a-read-across-bad" % tag, a_img, A_LBA, BAD_BYTES[0] - (300 << 10), 1 << 20, device=a_dev)
    for i, (off, ln) in enumerate(ranges(rng, B_SIZE, 4, B_LBA, small=True)):
        p.read("%s-b-read%d" % (tag, i), b_img, B_LBA, off, ln, device=b_dev)
    # 1 MiB is 32 commands of MDTS 32 KiB: at 100 IOPS (a burst of 10 let
    # through at once) no less than 220 ms, so the limits are really in force.
    p.read("%s-b-read-1mib-throttled" % tag, b_img, B_LBA, rng.randint(0, 31) << 20, 1 << 20, device=b_dev,
           min_ms=(32 - 10) * 1000 // B_IOPS)
    if reset_first:
        add_reset_tests(p, rng, b_img, b_dev, tag)
    add_file_tests(p, b_dev, tag, expect)

    # A service on A: 2 warps, 8 queue pairs; an error in the middle of a
    # parallel batch fails that request only, and the runtime goes on.
    sa = "/tmp/%s-a.sock" % tag
    p.service("%s-a-service" % tag, tag + "_a", sa, a_dev, ["--warps", "2", "--queues", "8"], r"2 warps x 4 queues")
    # While the service holds A, nobody else gets it.
    p.text("%s-refuse-busy" % tag, ["gpuos", "identify", "--device", a_dev], rc=1,
           err=r"another process|in use by process \d+ \(gpuos\)")
    for i, (off, ln) in enumerate(ranges(rng, A_SIZE, 4, A_LBA)):
        p.read("%s-a-svc%d" % (tag, i), a_img, A_LBA, off, ln, socket=sa)
    for i in range(4):
        if i == 2:
            p.read("%s-a-par-bad" % tag, a_img, A_LBA, BAD_BYTES[0] - 4096, 64 << 10, socket=sa, bg=True)
        else:
            ln = rng.randint(100 << 10, 2 << 20)
            p.read("%s-a-par%d" % (tag, i), a_img, A_LBA, avoid_bad(rng, A_SIZE, ln), ln, socket=sa, bg=True)
    p.collect()
    for i, (off, ln) in enumerate(ranges(rng, A_SIZE, 3, A_LBA)):
        p.read("%s-a-after-error%d" % (tag, i), a_img, A_LBA, off, ln, socket=sa)
    p.service_counters("%s-a-service-counters" % tag, sa)
    p.service_stop("%s-a-service-stop" % tag, tag + "_a", sa)

    # A service on B: asks for 4 queue pairs, B grants 2; slow, 4 KiB LBAs,
    # 32 KiB per command. Without the metadata warp (--no-files) both queue
    # pairs go to service warps; with it, one would (see the next service).
    sb = "/tmp/%s-b.sock" % tag
    p.service("%s-b-service" % tag, tag + "_b", sb, b_dev, ["--warps", "2", "--queues", "4", "--no-files"],
              r"2 warps x 1 queues")
    for i, (off, ln) in enumerate(ranges(rng, B_SIZE, 4, B_LBA, small=True)):
        p.read("%s-b-svc%d" % (tag, i), b_img, B_LBA, off, ln, socket=sb, bg=True)
    p.collect()
    p.service_counters("%s-b-service-counters" % tag, sb)
    p.service_stop("%s-b-service-stop" % tag, tag + "_b", sb)

    # A group on A (docs/design.md, "Scale-out"): A brought up once, its
    # queue pairs divided between two runtimes (no GPU in the guest: both on
    # CPU threads), each serving its own socket; clients of both read at
    # once, and a stop through the second stops both.
    sg = "/tmp/%s-g.sock" % tag
    p.service("%s-group-service" % tag, tag + "_g", sg, a_dev, ["--gpus", "0,0", "--warps", "2"],
              r"^gpuos: runtime 0 at /tmp/")
    for i in range(4):
        ln = rng.randint(100 << 10, 2 << 20)
        p.read("%s-group-par%d" % (tag, i), a_img, A_LBA, avoid_bad(rng, A_SIZE, ln), ln,
               socket=sg + (".1" if i % 2 else ""), bg=True)
    p.collect()
    p.service_counters("%s-group-counters-0" % tag, sg)
    p.service_counters("%s-group-counters-1" % tag, sg + ".1")
    p.service_stop("%s-group-stop-through-runtime-1" % tag, tag + "_g", sg + ".1")

    # B grants 2 queue pairs: two runtimes without the metadata warp take one
    # each, three are refused.
    def group_bench(text):
        try:
            d = json.loads(text)
        except ValueError:
            return "not one JSON object: %s" % text[:400]
        rs = d.get("runtimes", [])
        if len(rs) != 2 or d.get("errors") != 0 or any(r["errors"] or r["requests_per_s"] <= 0 for r in rs):
            return "want two runtimes that both read without errors: %s" % text[:600]
        if sum(r["commands"] for r in rs) != d.get("commands") or d.get("commands") != 2 * 2 * 16:
            return "commands of the runtimes do not add up to 64: %s" % text[:600]
        return None
    p.text("%s-b-group-bench" % tag, ["gpuos", "bench", "--device", b_dev, "--gpus", "0,0", "--no-files", "--threads",
                                      "2", "--iters", "16", "--json"] + HEAP, out=group_bench)
    p.text("%s-b-group-of-3-refused" % tag, ["gpuos", "bench", "--device", b_dev, "--gpus", "0,0,0", "--no-files",
                                             "--iters", "4"] + HEAP, rc=1,
           err=r"grants 2 I/O queues: fewer than the 3 runtimes, which share no queue pair")

    if not reset_first:
        add_reset_tests(p, rng, b_img, b_dev, tag)


A_ID = {"lba_bytes": 512, "namespace_lbas": A_SIZE // 512, "mdts_bytes": 512 << 10, "io_queues": 64,
        "serial": "gpuos-a"}
B_ID = {"lba_bytes": 4096, "namespace_lbas": B_SIZE // 4096, "mdts_bytes": 32 << 10, "io_queues": 2,
        "serial": "gpuos-b"}


def ab_drives(run):
    """A (a failing sector, minix) and B (slow, 4 KiB LBAs, ext4)."""
    return ["-drive", "file=blkdebug:%s:%s,if=none,id=nvma,format=raw,readonly=on" % (
                os.path.join(run, "blkdebug.conf"), os.path.join(run, "a.img")),
            "-device", "nvme,serial=gpuos-a,drive=nvma,addr=04.0",
            "-drive", "file=%s,if=none,id=nvmb,format=raw,readonly=on,throttling.iops-total=%d" % (
                os.path.join(run, "b.img"), B_IOPS),
            "-device", "nvme,serial=gpuos-b,drive=nvmb,addr=05.0,mdts=3,max_ioqpairs=2,"
                       "logical_block_size=4096,physical_block_size=4096"]


def plan_vfio(run, rng, a_img, b_img, expect, reset_first=False):
    p = Plan("vfio", ab_drives(run))
    # The kernel's nvme driver takes both; A's file system gets mounted.
    p.text("vfio-modprobe-nvme", "nvme_up 2", out=r"^2")
    p.text("vfio-mount-a", "mount_minix", out=r"/dev/nvme")
    # Refuse a controller in use, say why in one line (docs/hardware.md).
    p.text("vfio-refuse-mounted", ["gpuos", "identify", "--device", "pci:" + A_BDF], rc=1,
           err=r"^gpuos identify: pci:%s: refusing .*nvme\d+n1 is mounted at /mnt" % A_BDF)
    p.text("vfio-refuse-bound", ["gpuos", "identify", "--device", "pci:" + B_BDF], rc=1,
           err=r"^gpuos identify: pci:%s: refusing .*bound to the kernel's nvme driver, which serves nvme\d+n1" % B_BDF)
    p.text("vfio-bind-refuses-mounted", ["/test/vfio-bind.sh", A_BDF], rc=1,
           err=r"nvme\d+n1 is mounted at /mnt; refusing")
    p.text("vfio-umount-a", "umount /mnt")
    p.text("vfio-bind", ["/test/vfio-bind.sh", A_BDF, B_BDF],
           out=r"%s: bound to vfio-pci \(was nvme, serving nvme\d+n1\), IOMMU group /dev/vfio/\d+ +"
               r"%s: bound to vfio-pci" % (A_BDF, B_BDF))
    a, b = "pci:" + A_BDF, "pci:" + B_BDF
    p.identify("vfio-identify-a", a, A_ID)
    p.identify("vfio-identify-b", b, B_ID)
    # An array needs one LBA size (A has 512 bytes, B 4096).
    p.text("vfio-refuse-array-of-unlike-drives", ["gpuos", "identify", "--device", a + "+" + B_BDF], rc=1,
           err=r"^gpuos identify: pci:%s has 512-byte LBAs and pci:%s 4096-byte ones: the controllers of an "
               r"array need one LBA size" % (A_BDF, B_BDF))
    p.text("vfio-refuse-uio-under-iommu", ["gpuos", "identify", "--device", a + ",mode=uio"], rc=1,
           err=r"IOMMU translates this device's DMA")
    # VFIO maps the client heap for the controller: aligned 4 KiB reads go
    # straight into it (zero copy, PRPs into the heap).
    p.text("vfio-bench-zero-copy", ["gpuos", "bench", "--device", a, "--iters", "64", "--json"],
           out=r'"errors": 0, .*"commands": 64, "doorbells": \d+, "zero_copy": 64')
    add_io_tests(p, rng, a_img, b_img, a, b, "vfio", expect, reset_first)
    p.text("vfio-unbind", ["/test/vfio-unbind.sh", A_BDF, B_BDF],
           out=r"%s: unbound from vfio-pci, now bound to nvme" % A_BDF)
    return p


def plan_uio(run, rng, a_img, b_img, expect, reset_first=False):
    p = Plan("uio", ab_drives(run))
    p.text("uio-setup", "sh -c 'modprobe uio_pci_generic && echo 64 > /proc/sys/vm/nr_hugepages && "
           "grep HugePages_Free /proc/meminfo'", out=r"HugePages_Free: +64")
    a, b = "pci:" + A_BDF, "pci:" + B_BDF
    p.text("uio-refuse-vfio-without-iommu", ["gpuos", "identify", "--device", a], rc=1,
           err=r"has no IOMMU group: the IOMMU is off")
    # gpuos binds uio_pci_generic itself (nothing holds the devices here) ...
    p.identify("uio-identify-a", a + ",mode=uio", A_ID)
    p.identify("uio-identify-b", b + ",mode=uio", B_ID)
    # ... and later finds the binding: pci:BDF alone means uio now.
    # Without an IOMMU only gpuos's own hugepages are DMA memory: reads bounce.
    p.text("uio-bench-bounces", ["gpuos", "bench", "--device", a, "--iters", "64", "--json"],
           out=r'"errors": 0, .*"commands": 64, "doorbells": \d+, "zero_copy": 0\b')
    add_io_tests(p, rng, a_img, b_img, a, b, "uio", expect, reset_first)
    p.text("uio-unbind", ["/test/vfio-unbind.sh", A_BDF, B_BDF],
           out=r"%s: unbound from uio_pci_generic, now without a driver" % A_BDF)
    return p


def plan_array(run, rng, img, data_md5):
    """Two drives striped: pci:C+D,stripe=64 (one VFIO container for both)."""
    p = Plan("array", ["-drive", "file=%s,if=none,id=nvmc,format=raw,readonly=on" % os.path.join(run, "c.img"),
                       "-device", "nvme,serial=gpuos-c,drive=nvmc,addr=06.0",
                       "-drive", "file=%s,if=none,id=nvmd,format=raw,readonly=on" % os.path.join(run, "d.img"),
                       "-device", "nvme,serial=gpuos-d,drive=nvmd,addr=07.0"], injected_error=False)
    dev = "pci:%s+%s,stripe=%d" % (C_BDF, D_BDF, ARR_STRIPE >> 10)
    p.text("array-modprobe-vfio", "sh -c 'modprobe vfio-pci && modprobe vfio_iommu_type1 && echo loaded'", out=r"^loaded")

    def identify(text):
        try:
            j = json.loads(text)
        except ValueError:
            return "not JSON: " + text[:200]
        want = {"namespace_lbas": ARR_SIZE // 512, "lba_bytes": 512, "stripe_bytes": ARR_STRIPE, "serial": "gpuos-c"}
        bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}
        ctrls = [(c.get("name"), c.get("serial"), c.get("namespace_lbas")) for c in j.get("controllers", [])]
        if ctrls != [("pci:" + C_BDF, "gpuos-c", ARR_MEMBER // 512), ("pci:" + D_BDF, "gpuos-d", ARR_MEMBER // 512)]:
            bad["controllers"] = ctrls
        return ("identify differs (got, want): %s" % bad) if bad else None
    # gpuos binds both to vfio-pci itself (nothing holds them), each through the checks
    p.text("array-identify", ["gpuos", "identify", "--json", "--device", dev], out=identify)
    # Reads across chunk boundaries (so across drives), and random ones
    for i in range(4):
        k = rng.randint(1, ARR_SIZE // ARR_STRIPE - 4)
        off = k * ARR_STRIPE - rng.randint(1, 3000)
        ln = [rng.randint(2, 6000), rng.randint(ARR_STRIPE, 3 * ARR_STRIPE), rng.randint(1 << 20, 2 << 20),
              rng.randint(1, 4) * 512][i]
        ln = min(ln, ARR_SIZE - off)    # a chunk near the end: the range stops at the array's end
        p.read("array-read-boundary%d" % i, img, 512, off, ln, device=dev, bad_sector=False)
    for i, (off, ln) in enumerate(ranges(rng, ARR_SIZE, 4, 512, small=True)):
        p.read("array-read%d" % i, img, 512, off, ln, device=dev, bad_sector=False)
    # A file of 5 MiB lies on both drives: the metadata warp reads ext4 through the chunk mapping.
    p.output("array-cat-file", ["gpuos", "cat", "--device", dev] + HEAP + ["--stats", "/data.bin"], data_md5)
    # A service: two warps, each with a queue pair on each drive.
    sock = "/tmp/array.sock"
    p.service("array-service", "arr", sock, dev, ["--warps", "2"], r"2 warps x 2 queues")
    for i in range(3):
        ln = rng.randint(200 << 10, 2 << 20)
        p.read("array-svc%d" % i, img, 512, rng.randint(0, ARR_SIZE - ln), ln, socket=sock, bg=True,
               bad_sector=False)
    p.collect()
    p.service_counters("array-service-counters", sock)
    p.service_stop("array-service-stop", "arr", sock)

    def bench(text):
        # the fields below, one per line (the whole JSON is longer than a result line)
        f = re.findall(r'"(errors|commands|source|io_cmds)": ?("?\w+"?)', text)
        top = dict(f[:2]) if len(f) >= 2 else {}
        src = [v for k, v in f if k == "source"]
        cmds = [int(v) for k, v in f if k == "io_cmds"]
        if top.get("errors") != "0" or top.get("commands") != "64" or len(cmds) != 2:
            return "bench: %s" % text[:300]
        if src != ['"smart"', '"smart"']:
            return "no SMART counters: %s" % text[:300]
        if min(cmds) == 0 or sum(cmds) != 64:
            return "the drives served %s commands, want both some and 64 in all" % cmds
        return None
    # 4 KiB reads at random places: both drives serve some, their own
    # counters (SMART log, since boot) add up to the runtime's 64 commands.
    p.text("array-bench-counters", "sh -c 'gpuos bench --device %s --iters 64 --json | grep -Eo "
           "\"\\\"(errors|commands|source|io_cmds)\\\": ?\\\"?[a-z0-9]+\\\"?\"'" % dev, out=bench)
    return p


def make_array(run, rng):
    """The array's image (ext4 holding data.bin) and its two drives, chunk k on drive k % 2."""
    src = os.path.join(run, "arr-src")
    os.makedirs(src)
    data = rng.randbytes((5 << 20) + 321)
    with open(os.path.join(src, "data.bin"), "wb") as f:
        f.write(data)
    img = os.path.join(run, "arr-fs.img")
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-d", src, img, str(ARR_SIZE >> 20) + "M"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(img, "rb") as f:
        arr = f.read()
    os.unlink(img)
    assert len(arr) == ARR_SIZE
    for m, name in enumerate(("c.img", "d.img")):
        with open(os.path.join(run, name), "wb") as f:
            for k in range(m, ARR_SIZE // ARR_STRIPE, 2):
                f.write(arr[k * ARR_STRIPE:(k + 1) * ARR_STRIPE])
    return arr, hashlib.md5(data).hexdigest()


def make_images(run, seed):
    rng = random.Random(seed)
    fs = os.path.join(run, "minix.img")
    with open(fs, "wb") as f:
        f.truncate(FS_BYTES)
    subprocess.run(["mkfs.minix", fs], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(fs, "rb") as f:
        a = f.read() + rng.randbytes(A_SIZE - FS_BYTES)
    os.unlink(fs)
    b = make_ext4(run, rng)
    for name, data in (("a.img", a), ("b.img", b)):
        with open(os.path.join(run, name), "wb") as f:
            f.write(data)
    with open(os.path.join(run, "blkdebug.conf"), "w") as f:
        f.write('[inject-error]\nevent = "read_aio"\nsector = "%d"\nerrno = "5"\n' % BAD_SECTOR)
    return a, b


def make_ext4(run, rng):
    """B's image: ext4 with 4 KiB blocks (B's LBA size) of a tree written here."""
    src = os.path.join(run, "src")
    os.makedirs(os.path.join(src, "dir"))
    with open(os.path.join(src, "data.bin"), "wb") as f:
        f.write(rng.randbytes((3 << 20) + 1234))
    with open(os.path.join(src, "dir", "small.txt"), "w") as f:
        f.write("a small file\n" * 20)
    for i in range(40):
        with open(os.path.join(src, "dir", "f%02d" % i), "w") as f:
            f.write("%d\n" % i)
    os.symlink("data.bin", os.path.join(src, "link"))
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "tools", "gguf_writer.py"), "--case", "all-v3",
                    os.path.join(src, "m.gguf")], check=True, stdout=subprocess.DEVNULL)
    img = os.path.join(run, "b-fs.img")
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-d", src, img, str(B_SIZE >> 20) + "M"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(img, "rb") as f:
        b = f.read()
    os.unlink(img)
    assert len(b) == B_SIZE
    return b


def file_expect(build, run):
    """What the file tools print for B's image on the emulated controller here."""
    exp = {}
    env = dict(os.environ, GPUOS_QUIET_HOST="1")
    dev = "emu:%s,lba=%d" % (os.path.join(run, "b.img"), B_LBA)
    for name, args in FILE_CMDS:
        out = subprocess.run([os.path.join(build, "gpuos-static"), args[0], "--host", "--device", dev] + HEAP +
                             args[1:], check=True, stdout=subprocess.PIPE, env=env).stdout
        if name in FILE_SRC:
            with open(os.path.join(run, "src", FILE_SRC[name]), "rb") as f:
                assert out == f.read(), "gpuos cat %s differs from the source file here" % args[-1]
        exp[name] = hashlib.md5(out).hexdigest()
    return exp


def make_initrd(build, run, plan):
    root = os.path.join(run, "root-" + plan.name)
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "test"):
        os.makedirs(os.path.join(root, d))
    shutil.copy(os.path.join(HERE, "init"), os.path.join(root, "init"))
    shutil.copy(os.path.join(build, "gpuos-static"), os.path.join(root, "bin", "gpuos"))
    shutil.copy(os.path.join(HERE, "guest.sh"), os.path.join(root, "test", "guest.sh"))
    for s in ("vfio-bind.sh", "vfio-unbind.sh", "vfio-lib.sh"):
        shutil.copy(os.path.join(REPO, "scripts", s), os.path.join(root, "test", s))
    with open(os.path.join(root, "test", "plan.sh"), "w") as f:
        f.write(plan.script())
    for x in ("init", "bin/gpuos", "test/vfio-bind.sh", "test/vfio-unbind.sh"):
        os.chmod(os.path.join(root, x), 0o755)
    files = subprocess.run("find . | sort", shell=True, cwd=root, check=True, capture_output=True).stdout
    cp = subprocess.run(["cpio", "-o", "-H", "newc", "--owner=0:0", "--quiet"], cwd=root, input=files,
                        check=True, capture_output=True).stdout
    gz = subprocess.run(["gzip", "-1"], input=cp, check=True, capture_output=True).stdout
    out = os.path.join(run, "initrd-" + plan.name)
    with open(os.path.join(build, "qemu", "kernel", "base.cpio.gz"), "rb") as f:
        base = f.read()
    with open(out, "wb") as f:
        f.write(base + gz)   # the kernel unpacks concatenated archives in order
    shutil.rmtree(root)
    return out


def boot(build, run, plan, iommu):
    kdir = os.path.join(build, "qemu", "kernel")
    initrd = make_initrd(build, run, plan)
    con = os.path.join(run, plan.name + "-console.log")
    res = os.path.join(run, plan.name + "-results.log")
    trace = os.path.join(run, plan.name + "-trace.log")
    for f in (con, res, trace):
        if os.path.exists(f):
            os.unlink(f)
    # no_timer_check: on a loaded host TCG runs the guest so slowly that its
    # check of the timer interrupt through the remapped IO-APIC fails, and the
    # guest panics before the plan starts (seen in 5 of 15 boots at load 7).
    append = "console=ttyS0 quiet panic=-1 nokaslr no_timer_check"
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-cpu", "max", "-smp", "1", "-m", "512",
           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
           "-serial", "file:" + con, "-serial", "file:" + res,
           "-kernel", os.path.join(kdir, "vmlinuz"), "-initrd", initrd]
    if iommu:
        # intel-iommu goes first: devices find their DMA address space at creation.
        cmd += ["-device", "intel-iommu"]
        append += " intel_iommu=on iommu.strict=1"
    cmd += ["-append", append] + plan.drives + ["-trace", "pci_nvme_err*", "-trace", "pci_nvme_ub*", "-D", trace]
    # A diagnosis aid: more of QEMU's trace events into the same log, e.g.
    # GPUOS_QEMU_TRACE=pci_nvme_read,pci_nvme_map_prp,pci_nvme_map_addr.
    for ev in filter(None, os.environ.get("GPUOS_QEMU_TRACE", "").split(",")):
        cmd += ["-trace", ev]
    t0 = time.time()
    try:
        q = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=BOOT_TIMEOUT)
        qrc, qerr = q.returncode, q.stderr.decode(errors="replace").strip()
    except subprocess.TimeoutExpired:
        qrc, qerr = None, "no power-off within %d s" % BOOT_TIMEOUT
    return time.time() - t0, qrc, qerr, con, res, trace


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace").replace("\r", "")
    except OSError:
        return ""


COUNTERS = ("retries", "aborts", "resets", "strays", "duplicates", "untrusted", "timeouts")


def counters_of(rec):
    """(source, {counter: value or None}) of a command: its --stats line
    (gpuos.stats/1: source "runtime", or "service" for one asked through a
    socket), or the counters of a gpuos bench JSON on its stdout (source
    "bench"; the top level comes first). None for commands without any."""
    st = rec.get("stats")
    if st is not None:
        return st.get("source", "?"), {k: st.get(k) for k in COUNTERS}
    if rec["kind"] == "T" and rec["out"].startswith('{"schema": "gpuos.bench/'):
        c = {}
        for k in COUNTERS:
            m = re.search(r'"%s": (\d+)' % k, rec["out"])
            c[k] = int(m.group(1)) if m else None
        return "bench", c
    return None


def counters_text(source, c):
    return "%s: %s" % (source, ", ".join("%s %s" % (k, "-" if c[k] is None else c[k]) for k in COUNTERS))


def trace_doubles(trace):
    """Read commands QEMU completed twice (tests/tools/qemu_nvme_trace.py),
    when the trace holds QEMU's command and completion events
    (GPUOS_QEMU_TRACE=pci_nvme_io_cmd,pci_nvme_read,pci_nvme_rw_cb): their
    number and the tool's line for each; (None, []) without them."""
    if "pci_nvme_rw_cb" not in read_text(trace):
        return None, []
    r = subprocess.run([sys.executable, os.path.join(REPO, "tests", "tools", "qemu_nvme_trace.py"), trace],
                       capture_output=True, text=True)
    m = re.search(r"^(\d+) completions of commands already completed", r.stdout, re.M)
    return (int(m.group(1)) if m else None), [l for l in r.stdout.split("\n") if "completed again" in l]


def evaluate(plan, secs, qrc, qerr, con, res, trace):
    """Returns (passed, failed, lines, tally): tally counts what the
    summary of several boots adds up (wrong reads, unexplained strays,
    duplicates and untrusted requests, DMAR faults, other failures)."""
    out, passed, failed = [], 0, 0
    tally = {"started": 0, "wrong": [], "unexplained": [], "strays": 0, "duplicates": 0, "untrusted": 0,
             "explained_strays": 0, "dmar": 0, "other": [], "doubles": None}

    def ok(name, detail=""):
        nonlocal passed
        passed += 1
        out.append("  ok   %s%s" % (name, detail))

    def bad(name, why):
        nonlocal failed
        failed += 1
        out.append("  FAIL %s: %s" % (name, why))

    text = read_text(res)
    recs, klog, begin, end = {}, [], None, None
    for line in text.split("\n"):
        if line.startswith("R ") or line.startswith("T "):
            head, _, rest = line.partition("|")
            f = head.split()
            if len(f) < 4:
                continue
            rec = {"kind": f[0], "rc": int(f[2]), "ms": int(f[3]), "md5": "", "err": "", "out": ""}
            if f[0] == "R":
                rec["md5"] = f[4] if len(f) > 4 else ""
                rec["err"] = rest
            else:
                rec["err"], _, rec["out"] = rest.partition("|")
            recs[f[1]] = rec
        elif line.startswith("S "):
            f = line.split(" ", 2)
            if len(f) == 3 and f[1] in recs:
                try:
                    recs[f[1]]["stats"] = json.loads(f[2])
                except ValueError:
                    recs[f[1]]["stats_bad"] = f[2][:200]
        elif line.startswith("B "):
            f = line.split()
            if len(f) == 4 and f[1] in recs:
                recs[f[1]].setdefault("blocks", {})[int(f[2])] = f[3]
        elif line.startswith("K "):
            klog.append(line[2:])
        elif line.startswith("BEGIN "):
            begin = line
        elif line.startswith("END "):
            end = line
    if not begin:
        bad(plan.name + "-boot", "the guest never started the plan (qemu rc %s: %s); console: %s" % (
            qrc, qerr[-300:], read_text(con)[-600:]))
        return passed, failed + len(plan.checks), out, tally
    tally["started"] = 1
    for name, kind, fn in plan.checks:
        rec = recs.get(name)
        if rec is None:
            bad(name, "no result (the guest stopped before it)")
            tally["other"].append(name)
            continue
        why = fn(rec)
        if why and "differ" in why:
            tally["wrong"].append(name)
        elif why:
            tally["other"].append(name)
        # The runtime's counters, every one of every run; a stray, a
        # duplicate or an untrusted request that no test injected fails the
        # check (a service's are judged once, by service_counters, as its
        # reads carry the totals of all its clients).
        cnt = counters_of(rec)
        note = "  [%s]" % counters_text(*cnt) if cnt else ""
        if rec.get("stats_bad"):
            why = why or "its --stats line is not JSON: %s" % rec["stats_bad"]
        if name in plan.service_probes and not cnt:
            why = why or "no counters from the service (rc %d: %s)" % (rec["rc"], rec["err"])
        if cnt and (cnt[0] != "service" or name in plan.service_probes):
            odd = {k: cnt[1][k] for k in ("strays", "duplicates", "untrusted") if cnt[1][k]}
            if odd and name in plan.strays_ok:
                tally["explained_strays"] += sum(odd.values())
            elif odd:
                for k, v in odd.items():
                    tally[k] += v
                tally["unexplained"].append(name)
                why = (why + "; " if why else "") + "the runtime counted %s, and no test injected any" % (
                    ", ".join("%s %d" % kv for kv in odd.items()))
        if why:
            bad(name, why + note)
        else:
            ok(name, "  (%d ms)%s" % (rec["ms"], note))
    if end and qrc == 0:
        ok(plan.name + "-poweroff", "  (boot %.1f s, guest uptime at end %s s)" % (secs, end.split()[1]))
    else:
        bad(plan.name + "-poweroff", "qemu rc %s: %s" % (qrc, qerr[-300:]))
        tally["other"].append(plan.name + "-poweroff")
    # The IOMMU would log a DMA outside the mapped IOVAs here (the command
    # itself may still complete with status 0). Each process maps its own
    # random IOVAs (boot/ctrl/ctrl.h): a late DMA of an earlier one faults here.
    dmar = [l for l in klog + read_text(con).split("\n") if "DMAR: [DMA" in l or "DMAR: DRHD: handling fault" in l]
    if dmar:
        bad(plan.name + "-no-dmar-faults", "; ".join(dmar[:3]))
        tally["dmar"] = len(dmar)
    else:
        ok(plan.name + "-no-dmar-faults")
    # QEMU's own view of driver mistakes. The injected read error produces
    # exactly these two events with status 0x281; anything else is ours.
    tr = [l for l in read_text(trace).split("\n") if "pci_nvme_err" in l or "pci_nvme_ub" in l]
    expected = re.compile(r"pci_nvme_err_(aio cid \d+ err '[^']*' status 0x281|"
                          r"req_status cid \d+ nsid 1 status 0x281 opc 0x2)$")
    other = [l for l in tr if not expected.search(l)]
    if other:
        bad(plan.name + "-no-nvme-trace-errors", "%d events, e.g. %s" % (len(other), "; ".join(other[:3])))
        tally["other"].append(plan.name + "-no-nvme-trace-errors")
    elif not plan.injected_error:
        ok(plan.name + "-no-nvme-trace-errors")
    elif not tr:
        bad(plan.name + "-no-nvme-trace-errors", "not even the injected read error was traced (is -trace working?)")
        tally["other"].append(plan.name + "-no-nvme-trace-errors")
    else:
        ok(plan.name + "-no-nvme-trace-errors", "  (%d expected events of the injected error)" % len(tr))
    tally["doubles"], again = trace_doubles(trace)
    out.extend("  QEMU " + l for l in again[:8])
    return passed, failed, out, tally


def summary(name, order, tallies):
    """One line for the boots of one kind: how many ran clean, and what went wrong in how many."""
    n = len(tallies)
    started = sum(t["started"] for t in tallies)
    clean = sum(1 for t in tallies if t["started"] and not (t["wrong"] or t["unexplained"] or t["dmar"] or t["other"]))
    wrong = sum(len(t["wrong"]) for t in tallies)
    wb = sum(1 for t in tallies if t["wrong"])
    ub = sum(1 for t in tallies if t["unexplained"])
    db = sum(1 for t in tallies if t["dmar"])
    ob = sum(1 for t in tallies if t["other"] or not t["started"])
    doubles = [t["doubles"] for t in tallies if t["doubles"] is not None]
    line = ("qemu summary %s (%s): %d boots, %d started, %d clean; wrong reads %d in %d boots; unexplained "
            "strays %d, duplicates %d, untrusted %d in %d boots; strays of the reset test %d; DMAR faults in %d "
            "boots; other failures in %d boots" % (
                name, order, n, started, clean, wrong, wb, sum(t["strays"] for t in tallies),
                sum(t["duplicates"] for t in tallies), sum(t["untrusted"] for t in tallies), ub,
                sum(t["explained_strays"] for t in tallies), db, ob))
    if doubles:
        line += "; QEMU completed %d read commands twice (trace of %d boots)" % (sum(doubles), len(doubles))
    return line


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    seed = int(os.environ.get("GPUOS_QEMU_SEED") or random.SystemRandom().randrange(1 << 30))
    only = os.environ.get("GPUOS_QEMU_ONLY", "")
    order = os.environ.get("GPUOS_QEMU_ORDER") or "reset-last"
    try:
        boots = int(os.environ.get("GPUOS_QEMU_BOOTS") or 1)
    except ValueError:
        boots = 0
    try:
        jobs = int(os.environ.get("GPUOS_QEMU_JOBS") or min(3, os.cpu_count() or 1))
    except ValueError:
        jobs = 0
    if order not in ("reset-last", "reset-first") or boots < 1 or jobs < 1:
        print("qemu: GPUOS_QEMU_ORDER is reset-last or reset-first, GPUOS_QEMU_BOOTS and GPUOS_QEMU_JOBS "
              "numbers from 1")
        return 2
    run = os.path.join(build, "qemu", "run")
    Plan.run = run  # where the plans' expected files are (diagnosis of a wrong output)
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(run)
    t0 = time.time()
    a_img, b_img = make_images(run, seed)
    arr_img, arr_md5 = make_array(run, random.Random(seed + 2))
    OTHER_IMAGES[:] = [("A", a_img), ("B", b_img)]
    expect = file_expect(build, run)
    print("qemu: seed %d (GPUOS_QEMU_SEED=%d repeats this run)%s" % (
        seed, seed, "" if order == "reset-last" else ", B's reset before the file tools and services"))
    total_p = total_f = 0
    kept = False
    rng = random.Random(seed + 1)
    kinds = (("vfio", plan_vfio, True, "vfio-pci, intel-iommu (strict)"),
             ("uio", plan_uio, False, "uio_pci_generic, no IOMMU, hugepages"),
             ("array", None, True, "two drives striped (pci:C+D), vfio-pci, intel-iommu"))
    tallies = {k[0]: [] for k in kinds}
    for b in range(boots):
        todo = []
        for name, mk, iommu, what in kinds:
            # every plan is made, so that a seed makes the same plans whatever runs
            plan = (mk(run, rng, a_img, b_img, expect, reset_first=order == "reset-first") if mk else
                    plan_array(run, random.Random(seed + 3 + b), arr_img, arr_md5))
            if not only or only == name:
                todo.append((name, plan, iommu, what))
        # The round's boots side by side, the longest (vfio) first, at most
        # one guest per core: each TCG guest is one thread (-smp 1), and its
        # timing checks (the throttled controller's timeouts and reset) want
        # that core to itself. Their logs and initrds are named by the plan;
        # the drives are read-only, so the guests share the images.
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = [pool.submit(boot, build, run, plan, iommu) for _, plan, iommu, _ in todo]
            for (name, plan, iommu, what), fut in zip(todo, runs):
                secs, qrc, qerr, con, res, trace = fut.result()
                print("== boot %s%s: %s; %d checks, %d reads of %.1f MiB" % (
                    name, " %d of %d" % (b + 1, boots) if boots > 1 else "", what, len(plan.checks), plan.reads,
                    plan.read_bytes / 2**20), flush=True)
                p, f, lines, tally = evaluate(plan, secs, qrc, qerr, con, res, trace)
                tallies[name].append(tally)
                print("\n".join(lines), flush=True)
                if f:
                    if boots > 1:  # keep this boot's logs: the next boot of the kind writes its own
                        for path in (con, res, trace):
                            if os.path.exists(path):
                                os.rename(path, path.replace(plan.name + "-", "%s-%d-" % (plan.name, b + 1)))
                        con, res, trace = (x.replace(plan.name + "-", "%s-%d-" % (plan.name, b + 1))
                                           for x in (con, res, trace))
                    print("   logs: %s %s %s" % (con, res, trace))
                    kept = True
                total_p += p
                total_f += f
    for name, _, _, _ in kinds:
        if tallies[name]:
            print(summary(name, order, tallies[name]))
    print("qemu: %d passed, %d failed (%.0f s)" % (total_p, total_f, time.time() - t0))
    if not kept and not os.environ.get("GPUOS_QEMU_KEEP"):
        shutil.rmtree(run, ignore_errors=True)
    return 1 if total_f else 0


if __name__ == "__main__":
    sys.exit(main())
