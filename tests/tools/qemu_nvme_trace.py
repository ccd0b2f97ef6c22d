#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read commands QEMU's NVMe model completed twice, from a trace log of a
tests/qemu boot run with GPUOS_QEMU_TRACE=pci_nvme_io_cmd,pci_nvme_read,pci_nvme_rw_cb
(GPUOS_QEMU_KEEP=1 keeps build/qemu/run/vfio-trace.log; a failing boot of
GPUOS_QEMU_BOOTS=N keeps its own, KIND-N-trace.log).

Usage: qemu_nvme_trace.py TRACE_LOG [--lba LBA]
Prints each completion (pci_nvme_rw_cb) that has no command of its drive
and CID pending, with the command it repeats; exit 1 when there is one.
Commands never completed are printed too (a controller reset cancels
them: expected after the reset test). --lba prints every command that read
the block at LBA (hex or decimal) and its completions: the commands of a
wrong read (tests/qemu names the read's bytes; LBA = offset / LBA size).

QEMU's io_cmd event names no drive: a read's drive is told from its size
(count = nlb x LBA size: 512 for A, C and D, 4096 for B, the drive blkdebug
names nvmb), and a completion names its drive (blk 'nvma').
"""
import re
import sys


def drive_of(nlb, count):
    return "nvmb" if count == nlb * 4096 else "nvma"   # A's 512-byte LBAs (C, D: nvmc, nvmd alike)


def main():
    args = sys.argv[1:]
    want = None
    if "--lba" in args:
        k = args.index("--lba")
        want = int(args[k + 1], 0)
        del args[k:k + 2]
    lines = open(args[0], errors="replace").read().split("\n")
    pending, last, doubles = {}, {}, 0
    for i, l in enumerate(lines, 1):
        m = re.match(r"pci_nvme_read cid (\d+) nsid \S+ nlb (\d+) count (\d+) lba 0x([0-9a-f]+)", l)
        if m:
            cid, nlb, count, lba = int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4), 16)
            key = (drive_of(nlb, count), cid)
            pending.setdefault(key, []).append((i, lba, nlb))
            if want is not None and lba <= want < lba + nlb:
                print("line %d: %s cid %d reads LBA 0x%x..0x%x" % (i, key[0], cid, lba, lba + nlb - 1))
            continue
        m = re.match(r"pci_nvme_rw_cb cid (\d+) blk '([^']*)'", l)
        if m:
            blk = m.group(2)
            key = (blk if blk in ("nvma", "nvmb") else "nvma", int(m.group(1)))
            if pending.get(key):
                sub = pending[key].pop(0)
                last[key] = (sub, i)
                if want is not None and sub[1] <= want < sub[1] + sub[2]:
                    print("line %d: %s cid %d completed (its command at line %d)" % (i, key[0], key[1], sub[0]))
            else:
                doubles += 1
                sub, first = last.get(key, ((0, 0, 0), 0))
                print("line %d: %s cid %d completed again: its command at line %d (LBA 0x%x, %d blocks) "
                      "completed at line %d" % (i, key[0], key[1], sub[0], sub[1], sub[2], first))
    for key, subs in sorted(pending.items()):
        for s in subs:
            print("line %d: %s cid %d never completed (LBA 0x%x)" % (s[0], key[0], key[1], s[1]))
    print("%d completions of commands already completed" % doubles)
    return 1 if doubles else 0


if __name__ == "__main__":
    sys.exit(main())
