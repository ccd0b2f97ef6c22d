#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client that stays attached to a gpuos service and reads when told,
for tests/emu/status.sh (what `gpuos status` says of the clients attached).

  held_client.py SOCK DIR FILE [gpu] [UID]

Becomes UID (gid 65534, no other groups) when given, attaches (as a GPU
client with "gpu": a host-mode service's stand-in area), opens FILE through
its mailbox and writes "attached pid=PID share=K" to DIR/state. Then it
takes lines from the FIFO DIR/cmd: "read N" posts N reads of 4 KiB of FILE,
one after another, each waited for, and appends "done N STATUS" to
DIR/state; "quit" detaches and ends. Every request it posts is one the
service's count of its posts must see: the OPEN and each READ.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_client as hc  # noqa: E402


def say(d, line):
    with open(os.path.join(d, "state"), "a") as f:
        f.write(line + "\n")


def main():
    sock, d, name = sys.argv[1:4]
    rest = sys.argv[4:]
    gpu = "gpu" in rest
    uids = [int(x) for x in rest if x.isdigit()]
    if uids:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(uids[0])
    # again while the service says shares are being given back (renewed)
    s, line, fds = hc.attach_retry(sock, gpu=gpu)
    if not line.startswith("ok"):
        say(d, "refused: " + line)
        return 1
    mb = hc.Mailbox(line, fds[0])
    rt = mb.put(0, name.encode() + b"\0")
    st, h = mb.call(hc.OP_OPEN, arg=rt, dst=rt + 4096, length=256)
    if st != "OK":
        say(d, "open: " + st)
        return 1
    say(d, "attached pid=%d share=%d" % (os.getpid(), mb.share))
    off = 0
    while True:
        with open(os.path.join(d, "cmd")) as f:
            for cmd in f.read().split("\n"):
                w = cmd.split()
                if not w:
                    continue
                if w[0] == "quit":
                    s.close()
                    return 0
                if w[0] == "read":
                    worst = "OK"
                    for _ in range(int(w[1])):
                        st, _ = mb.call(hc.OP_READ, dst=mb.rt + mb.heap + 65536, length=4096, handle=h,
                                        offset=off)
                        off = (off + 4096) % (1 << 20)
                        worst = worst if st == "OK" else st
                    say(d, "done %s %s" % (w[1], worst))


if __name__ == "__main__":
    sys.exit(main())
