#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile local clients of a gpuos service, for tests/emu/service.sh.

  hold-handles SOCK N     attach, open /d/one N times through the mailbox and
                          never close; prints "opened K, then: STATUS"
  silent-reader SOCK      send stats requests and never read a reply; exit 0
                          when the service disconnects it
  partial-line SOCK       send half a line; exit 0 when the service disconnects
  idle-flood SOCK N       open N idle connections; exit 0 when the service has
                          closed every one of them in time
  isolation SOCK [FILE [KIND]]  two clients A and B (FILE: /d/one): A names B's
                          memory, B's handle, RELEASE of B's share; then A
                          leaves but keeps its mapping and a new client (of
                          A's kind) writes its share: one line per attempt,
                          "what: STATUS". KIND: host (both attach as host
                          clients, the default), gpu (both as GPU clients: a
                          host-mode service's stand-in areas), mixed (A a GPU
                          client, B a host client)
  leave-early SOCK FILE ROUNDS KIND  attach (KIND host or gpu), post 64 OPENs
                          of FILE without waiting, close the connection at
                          once, then read the answers from the area it still
                          maps; ROUNDS times. Prints "OPEN answers: STATUS N
                          ..." (run as a user FILE's mode bits refuse: none
                          may be OK)
  as-nobody MODE ARGS     become uid/gid 65534 (root only), then MODE:
      connect SOCK        print the error connect() gives
      attach SOCK         print the service's reply to attach
      hoard SOCK          attach until refused: "attached K, then: REPLY"
      stop SOCK           print the reply to stop
      fake-service PATH K as below, as that user
      leave-early ARGS    as above, as that user
  fake-service PATH KIND  listen on PATH and answer every attach with a
                          hostile reply: good, overflow, nofd, short, garbage

The mailbox is written the way include/gpuos/abi.h lays it out. Python has
no atomics: hold-handles must be the only client posting (the test makes
sure), and x86's ordered stores stand in for the release the ABI asks for.
"""
import mmap
import os
import socket
import struct
import sys
import time

OP_READ_RAW, OP_OPEN, OP_READ, OP_RELEASE = 1, 16, 19, 21
SLOT_FREE, SLOT_CLAIMED, SLOT_POSTED, SLOT_DONE = 0, 1, 2, 4
ST_NAMES = {0: "OK", 3: "BAD_DST", 9: "DENIED", 15: "BAD_HANDLE", 16: "NOSPC"}


def connect(path):
    """A connection; a full listen backlog (an idle flood of other clients
    racing us) is waited out for up to 10 s, as a patient client would."""
    t0 = time.time()
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.time() - t0 > 10:
                raise
            time.sleep(0.01)


def recv_line(s, fds=False):
    buf, got = b"", []
    while not buf.endswith(b"\n"):
        if fds:
            data, fl, _, _ = socket.recv_fds(s, 1, 4)
            got += fl
        else:
            data = s.recv(1)
        if not data:
            break
        buf += data
    return buf.decode(errors="replace").strip(), got


def attach(path, gpu=False):
    s = connect(path)
    try:
        s.sendall(b"attach gpu\n" if gpu else b"attach\n")
    except OSError:
        pass  # a refused peer: the service may have answered and closed already
    line, fds = recv_line(s, fds=True)
    return s, line, fds


class Mailbox:
    """A client's own area, as attach gives it: its mailbox at 0, its share
    at heap_off; rt is the area's runtime address."""

    def __init__(self, line, fd):
        f = dict(kv.split("=") for kv in line.split()[1:])
        self.heap, self.rt, self.share = int(f["heap_off"]), int(f["rt"]), int(f["share"])
        if f.get("mem", "host") != "host":
            raise SystemExit("a GPU client's area in VRAM: not for Python (%s)" % line)
        self.size = os.fstat(fd).st_size
        self.m = mmap.mmap(fd, self.size)
        self.mbox = 0
        self.nslots, self.nparts, self.slots_off = struct.unpack_from("<IIQ", self.m, self.mbox + 8)
        self.ring_off, = struct.unpack_from("<Q", self.m, self.mbox + 0x20)

    def put(self, at, data):
        """data at byte `at` of the share; its runtime address"""
        self.m[self.heap + at:self.heap + at + len(data)] = data
        return self.rt + self.heap + at

    def post(self, i, op, arg=0, dst=0, length=0, handle=0, offset=0):
        """post slot i (FREE, ours alone) and return at once"""
        per = self.nslots // self.nparts
        at = self.mbox + self.slots_off + 128 * i
        struct.pack_into("<I", self.m, at, SLOT_CLAIMED)
        struct.pack_into("<HHIIQQQQQQ", self.m, at + 4, op, 0, handle, 0, offset, length, dst, arg, 0, 0)
        struct.pack_into("<I", self.m, at, SLOT_POSTED)
        p = i // per
        cnt = self.mbox + 0x80 + 64 * p
        pos = struct.unpack_from("<I", self.m, cnt)[0]
        struct.pack_into("<I", self.m, cnt, (pos + 1) & 0xffffffff)
        entry = ((((pos // per) + 1) & 0xffff) << 16) | (i - p * per)
        struct.pack_into("<I", self.m, self.mbox + self.ring_off + 4 * (p * per + pos % per), entry)

    def answer(self, i):
        """slot i's state and status"""
        at = self.mbox + self.slots_off + 128 * i
        return struct.unpack_from("<I", self.m, at)[0], struct.unpack_from("<I", self.m, at + 0x40)[0]

    def call(self, op, arg=0, dst=0, length=0, handle=0, offset=0):
        for i in range(self.nslots):
            at = self.mbox + self.slots_off + 128 * i
            if struct.unpack_from("<I", self.m, at)[0] == SLOT_FREE:
                break
        else:
            return "FULL", 0
        self.post(i, op, arg, dst, length, handle, offset)
        t0 = time.time()
        while struct.unpack_from("<I", self.m, at)[0] != SLOT_DONE:
            if time.time() - t0 > 20:
                return "no answer", 0
            time.sleep(0.0005)
        st, = struct.unpack_from("<I", self.m, at + 0x40)
        res, = struct.unpack_from("<Q", self.m, at + 0x48)
        struct.pack_into("<I", self.m, at, SLOT_FREE)
        return ST_NAMES.get(st, "status %d" % st), res


def hold_handles(path, n):
    s, line, fds = attach(path)
    mb = Mailbox(line, fds[0])
    rt = mb.put(0, b"/d/one\0\0")
    opened = 0
    for _ in range(n):
        st, _ = mb.call(OP_OPEN, arg=rt, dst=rt + 4096, length=256)
        if st != "OK":
            print("opened %d, then: %s" % (opened, st))
            return 0
        opened += 1
    print("opened %d, then: nothing refused" % opened)
    return 0


def isolation(path, name="/d/one", kind="host"):
    f = name.encode() + b"\0"
    ga, gb = kind in ("gpu", "mixed"), kind == "gpu"
    sa, la, fa = attach(path, ga)
    sb, lb, fb = attach(path, gb)
    a, b = Mailbox(la, fa[0]), Mailbox(lb, fb[0])
    print("areas: %d and %d bytes, shares %d and %d" % (a.size, b.size, a.share, b.share))
    pa, pb = a.put(0, f), b.put(0, f)
    st, hb = b.call(OP_OPEN, arg=pb, dst=pb + 4096, length=256)
    print("B opens the file: %s" % st)
    st, ha = a.call(OP_OPEN, arg=pa, dst=pa + 4096, length=256)
    print("A opens the file: %s" % st)
    print("A reads into B's share: %s" % a.call(OP_READ, handle=ha, dst=pb + 8192, length=4)[0])
    print("A reads into B's mailbox: %s" % a.call(OP_READ, handle=ha, dst=b.rt, length=4)[0])
    print("A reads into its own mailbox: %s" % a.call(OP_READ, handle=ha, dst=a.rt + 128, length=4)[0])
    print("A opens a path in B's share: %s" % a.call(OP_OPEN, arg=pb, dst=pa + 4096, length=256)[0])
    print("A reads through B's handle: %s" % a.call(OP_READ, handle=hb, dst=pa + 8192, length=4)[0])
    print("A releases B's share: %s" % a.call(OP_RELEASE, arg=b.share)[0])
    print("A reads raw bytes: %s" % a.call(OP_READ_RAW, dst=pa + 8192, length=512)[0])
    print("A reads its own file: %s" % a.call(OP_READ, handle=ha, dst=pa + 8192, length=4)[0])
    # A leaves, keeping its mapping; the next client of its share writes there
    sa.close()
    time.sleep(1.0)
    for _ in range(50):
        sc, lc, fc = attach(path, ga)
        c = Mailbox(lc, fc[0])
        if c.share == a.share:
            break
        sc.close()
        time.sleep(0.1)
    else:
        print("A's share never came back")
        return 0
    c.put(0, b"SECRET-OF-C")
    seen = a.m.find(b"SECRET-OF-C") >= 0
    print("A's old mapping sees the next client's data: %s" % ("yes" if seen else "no"))
    st, hc = c.call(OP_OPEN, arg=c.put(64, f), dst=c.rt + c.heap + 4096, length=256)
    print("the next client of A's share opens the file: %s" % st)
    return 0


def leave_early(path, name, rounds, kind):
    """Requests a client posts just before it leaves are still checked
    against its rights."""
    seen = {}
    for _ in range(int(rounds)):
        s, line, fds = attach(path, kind == "gpu")
        if not line.startswith("ok"):
            time.sleep(0.2)  # its last area is still being renewed
            continue
        mb = Mailbox(line, fds[0])
        rt = mb.put(0, name.encode() + b"\0")
        n = min(mb.nslots, 64)
        for i in range(n):
            mb.post(i, OP_OPEN, arg=rt, dst=rt + 4096 + 256 * i, length=256)
        s.close()
        time.sleep(0.3)
        for i in range(n):
            state, st = mb.answer(i)
            key = ST_NAMES.get(st, "status %d" % st) if state == SLOT_DONE else "not answered"
            seen[key] = seen.get(key, 0) + 1
        mb.m.close()
        os.close(fds[0])
    print("OPEN answers: " + " ".join("%s %d" % kv for kv in sorted(seen.items())))
    return 0


def wait_closed(s, secs):
    s.settimeout(secs)
    try:
        while s.recv(4096):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def attacking():
    """Tells the harness the attack is in place (the interpreter's start
    can take a second on a loaded machine; timing begins after it)."""
    print("attacking", flush=True)


def silent_reader(path):
    s = connect(path)
    s.setblocking(False)
    attacking()
    t0 = time.time()
    while time.time() - t0 < 20:
        try:
            s.send(b"stats\n" * 64)
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            print("disconnected after %.1f s" % (time.time() - t0))
            return 0
    print("still connected after 20 s")
    return 1


def partial_line(path):
    s = connect(path)
    s.sendall(b"sta")
    attacking()
    t0 = time.time()
    if wait_closed(s, 15):
        print("disconnected after %.1f s" % (time.time() - t0))
        return 0
    print("still connected after 15 s")
    return 1


def idle_flood(path, n):
    conns = []
    for _ in range(n):
        try:
            conns.append(connect(path))
        except OSError as e:
            print("connect: %s" % e)
    attacking()
    left = [c for c in conns if not wait_closed(c, 0.01)]
    t0 = time.time()
    while left and time.time() - t0 < 15:
        left = [c for c in left if not wait_closed(c, 0.2)]
    print("%d connections, %d still open after %.1f s" % (len(conns), len(left), time.time() - t0))
    return 0 if not left else 1


def fake_service(path, kind):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(8)
    fd = os.memfd_create("fake")
    os.ftruncate(fd, 8192)
    while True:
        c, _ = ls.accept()
        c.recv(64)
        if kind in ("good", "overflow"):
            off = 4096 if kind == "good" else (1 << 64) - 4096
            socket.send_fds(c, [b"ok heap_off=%d heap_len=8192 shm_len=8192 share=1 rt=4096\n" % off], [fd])
        elif kind == "nofd":
            c.sendall(b"ok heap_off=4096 heap_len=4096 shm_len=8192 share=1 rt=4096\n")
        elif kind == "short":
            c.sendall(b"ok heap_off=4096\n")
        else:
            c.sendall(os.urandom(300).replace(b"\n", b"x") + b"\n")
        c.close()


def as_nobody(mode, args):
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    path = args[0]
    if mode == "connect":
        try:
            connect(path)
            print("connected")
        except OSError as e:
            print("connect: %s" % e.strerror)
        return 0
    if mode == "attach":
        try:
            _, line, _ = attach(path)
            print(line or "closed")
        except OSError as e:
            print("connect: %s" % e.strerror)
        return 0
    if mode == "hoard":
        held, n = [], 0
        while n < 16:
            s, line, _ = attach(path)
            if not line.startswith("ok "):
                print("attached %d, then: %s" % (n, line))
                return 0
            held.append(s)
            n += 1
        print("attached %d, never refused" % n)
        return 0
    if mode == "stop":
        s = connect(path)
        s.sendall(b"stop\n")
        print(recv_line(s)[0])
        return 0
    if mode == "fake-service":
        return fake_service(path, args[1])
    if mode == "leave-early":
        return leave_early(*args)
    return 2


def main():
    a = sys.argv[1:]
    if a[0] == "hold-handles":
        return hold_handles(a[1], int(a[2]))
    if a[0] == "silent-reader":
        return silent_reader(a[1])
    if a[0] == "partial-line":
        return partial_line(a[1])
    if a[0] == "idle-flood":
        return idle_flood(a[1], int(a[2]))
    if a[0] == "fake-service":
        return fake_service(a[1], a[2])
    if a[0] == "leave-early":
        return leave_early(*a[1:5])
    if a[0] == "isolation":
        return isolation(*a[1:4])
    if a[0] == "as-nobody":
        return as_nobody(a[1], a[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
