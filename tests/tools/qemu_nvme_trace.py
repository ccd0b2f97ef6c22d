#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read commands QEMU's NVMe model completed twice, from a trace log of a
tests/qemu boot run with GPUOS_QEMU_TRACE=pci_nvme_io_cmd,pci_nvme_read,pci_nvme_rw_cb
(and GPUOS_QEMU_KEEP=1 to keep build/qemu/run/vfio-trace.log).

Usage: qemu_nvme_trace.py TRACE_LOG
Prints each completion (pci_nvme_rw_cb) that has no command of its CID
pending, with the command it repeats; exit 1 when there is one.
Commands never completed are printed too (a controller reset cancels
them: expected after the reset test)."""
import re
import sys


def main():
    lines = open(sys.argv[1], errors="replace").read().split("\n")
    pending, last, doubles = {}, {}, 0
    for i, l in enumerate(lines, 1):
        m = re.match(r"pci_nvme_io_cmd cid (\d+) nsid \S+ sqid (\d+)", l)
        if m:
            pending.setdefault(int(m.group(1)), []).append(i)
            continue
        m = re.match(r"pci_nvme_rw_cb cid (\d+) blk '([^']*)'", l)
        if m:
            cid = int(m.group(1))
            if pending.get(cid):
                last[cid] = (pending[cid].pop(0), i)
            else:
                doubles += 1
                sub, first = last.get(cid, (0, 0))
                print("line %d: cid %d (%s) completed again: its command at line %d completed at line %d"
                      % (i, cid, m.group(2), sub, first))
    for cid, subs in sorted(pending.items()):
        for s in subs:
            print("line %d: cid %d never completed" % (s, cid))
    print("%d completions of commands already completed" % doubles)
    return 1 if doubles else 0


if __name__ == "__main__":
    sys.exit(main())
