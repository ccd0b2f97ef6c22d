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
  repost SOCK FILE SECS   attach, post STATs of FILE and post the same slots
                          again while they are in flight, for SECS seconds
  batch-rewrite SOCK FILE ROUNDS  attach, post OPENs of FILE with a batch
                          counter in its share, then point the slot's batch
                          at the service's memory while they are in flight;
                          prints "counter N of M" (the runtime added to its
                          own counter N times for M requests)
  read-flood SOCK FILE SECS [KIB]  attach, open FILE, keep reads of KIB
                          (1024) in flight in every slot it has (that its
                          share holds) for SECS seconds
  fairness SOCK FILE ROUNDS MIB MODE ARGS...  a well-behaved client reads
                          MIB MiB of FILE twice per round in one attachment,
                          once with the attack MODE ARGS (SOCK for the
                          socket) stopped, once with it running; prints
                          "ratio R": the median of the rounds' ratios
  churn SOCK SECS         attach and leave again, as fast as the service
                          lets it, for SECS seconds; prints how many times
  slowloris SOCK N GAP SECS  N connections that each send one byte every GAP
                          seconds of a line never finished; prints how many
                          the service refused, closed (after how long at
                          most), left open, and kept longer than 1 s
  hoard-hold SOCK SECS    attach until refused, print "attached K, then:
                          REPLY", hold them SECS seconds
  rt-leak SOCK PID        attach; print how many MiB the reply's rt= lies
                          from the service's (PID) code, libraries, heap and
                          stack
  silent-service PATH     listen on PATH, answer attach with a good area
                          whose mailbox nobody serves; exit after 60 s
  own-memory SOCK [FILE]  memory of a client's own (register host, issue
                          32): A lends a sealed memfd and reads FILE into it,
                          B names it, lends bad memfds, takes A's back; A's
                          limit; A gives it back. "what: REPLY" per attempt
  lend-many SOCK N        attach 3 times, lend N one-page memfds over them;
                          "lends: REPLY / REPLY ..." (run as nobody: the
                          uid's cap)
  lend-and-die SOCK FILE READY  attach, lend a 64 MiB memfd, keep 1 MiB
                          reads of FILE into it in flight until killed
                          (READY is made once they run)
  as-nobody MODE ARGS     become uid/gid 65534 (root only), then MODE:
      connect SOCK        print the error connect() gives
      attach SOCK         print the service's reply to attach
      hoard SOCK          attach until refused: "attached K, then: REPLY"
      stop SOCK           print the reply to stop
      fake-service PATH K as below, as that user
      leave-early ARGS    as above, as that user
      slowloris, hoard-hold, repost, batch-rewrite, read-flood, churn:
                          as above, as that user
  as-uid UID MODE ARGS    the same as uid UID, gid 65534
  fake-service PATH KIND  listen on PATH and answer every attach with a
                          hostile reply: good, overflow, nofd, short, garbage

The mailbox is written the way include/gpuos/abi.h lays it out. Python has
no atomics: hold-handles must be the only client posting (the test makes
sure), and x86's ordered stores stand in for the release the ABI asks for.
"""
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import time

# Limits on waits that end on what they wait for: hang guards (issue 35),
# never bounds on the service's speed, which a loaded machine breaks.
HANG = 300
# What the service adds to a refusal that passes: shares that count against
# it are being given back (boot/service.c SVC_DRAINING).
DRAINING = " being given back)"

OP_READ_RAW, OP_OPEN, OP_STAT, OP_READ, OP_RELEASE = 1, 16, 17, 19, 21
SLOT_FREE, SLOT_CLAIMED, SLOT_POSTED, SLOT_TAKEN, SLOT_DONE = 0, 1, 2, 3, 4
ST_NAMES = {0: "OK", 3: "BAD_DST", 8: "FULL", 9: "DENIED", 15: "BAD_HANDLE", 16: "NOSPC"}


def connect(path):
    """A connection; a full listen backlog (an idle flood of other clients
    racing us) is waited out, as a patient client would."""
    t0 = time.time()
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(HANG)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.time() - t0 > HANG:
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


def attach_retry(path, gpu=False):
    """attach, again while the service says shares are being given back
    (renewed: paced, and slow on a loaded machine), as gpuos's own clients do"""
    t0 = time.time()
    while True:
        s, line, fds = attach(path, gpu)
        if DRAINING not in line or time.time() - t0 > HANG:
            return s, line, fds
        s.close()
        time.sleep(0.1)


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

    def post(self, i, op, arg=0, dst=0, length=0, handle=0, offset=0, batch=0, flags=0):
        """post slot i (FREE, ours alone) and return at once"""
        per = self.nslots // self.nparts
        at = self.mbox + self.slots_off + 128 * i
        struct.pack_into("<I", self.m, at, SLOT_CLAIMED)
        struct.pack_into("<HHIIQQQQQQ", self.m, at + 4, op, flags, handle, 0, offset, length, dst, arg, batch, 0)
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
            if time.time() - t0 > HANG:
                return "no answer", 0
            time.sleep(0.0005)
        st, = struct.unpack_from("<I", self.m, at + 0x40)
        res, = struct.unpack_from("<Q", self.m, at + 0x48)
        struct.pack_into("<I", self.m, at, SLOT_FREE)
        return ST_NAMES.get(st, "status %d" % st), res


def hold_handles(path, n):
    # after the killed clients, their shares may still be renewing: wait as
    # gpuos's own clients do (a plain attach met "draining" on a loaded
    # 2-core machine, and Mailbox() failed on the refusal, 2026-12-03)
    s, line, fds = attach_retry(path)
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
    # as gpuos's own clients do: the shares of clients that just left may
    # still be renewing (paced, and slower on a loaded machine)
    sa, la, fa = attach_retry(path, ga)
    sb, lb, fb = attach_retry(path, gb)
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
    # until A's share comes back renewed: a hang guard, not a bound on its
    # speed (renewals are paced, and slow on a loaded machine)
    t0 = time.time()
    while time.time() - t0 < HANG:
        sc, lc, fc = attach(path, ga)
        if lc.startswith("ok"):
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
        # Leaves once the runtime has taken one (a hang guard): at once, a
        # loaded machine's service saw the end before the runtime took any,
        # in every round, and nothing was checked.
        t0 = time.time()
        while time.time() - t0 < HANG and all(mb.answer(i)[0] == SLOT_POSTED for i in range(n)):
            time.sleep(0.0005)
        s.close()
        # The answers of what the runtime took before the client left: 0.3 s
        # was enough alone, not on 2 cores busy with other suites (make test
        # runs them side by side), where none had come (all "not answered").
        # Where none has come after 0.3 s, up to 5 s for the first, then 0.3 s
        # more for the others (some are never answered: the client left).
        # One the runtime took (TAKEN) is answered: waited for (a hang guard).
        t0 = time.time()
        time.sleep(0.3)
        taken = lambda: any(mb.answer(i)[0] == SLOT_TAKEN for i in range(n))
        if all(mb.answer(i)[0] != SLOT_DONE for i in range(n)):
            while time.time() - t0 < HANG and (taken() or time.time() - t0 < 5) and \
                    all(mb.answer(i)[0] != SLOT_DONE for i in range(n)):
                time.sleep(0.05)
            time.sleep(0.3)
        while taken() and time.time() - t0 < HANG:
            time.sleep(0.05)
        for i in range(n):
            state, st = mb.answer(i)
            key = ST_NAMES.get(st, "status %d" % st) if state == SLOT_DONE else "not answered"
            seen[key] = seen.get(key, 0) + 1
        mb.m.close()
        os.close(fds[0])
    print("OPEN answers: " + " ".join("%s %d" % kv for kv in sorted(seen.items())))
    return 0


def repost(path, name, secs):
    """Post STATs and post the same slots again while they are in flight:
    each ring entry names a slot, and nothing stops a client from naming
    one twice. The service must neither run out of room for everyone's
    file requests nor write over its ring."""
    s, line, fds = attach_retry(path)
    mb = Mailbox(line, fds[0])
    rt = mb.put(0, name.encode() + b"\0")
    n = min(mb.nslots, 64)
    t0, posted = time.time(), 0
    attacking()
    while time.time() - t0 < float(secs):
        # Each slot again once the runtime has taken it (TAKEN: its ring
        # entry consumed, so the client's own ring stays in order), while
        # the metadata warp still has it.
        for i in range(n):
            if mb.answer(i)[0] != SLOT_POSTED:
                mb.post(i, OP_STAT, arg=rt, dst=rt + 4096 + 256 * i, length=256)
                posted += 1
        time.sleep(0.0002)
    print("posted %d STATs through %d slots" % (posted, n), flush=True)
    return 0


def batch_rewrite(path, name, rounds):
    """The batch counter is checked when a request is taken; a client that
    points the slot's batch elsewhere afterwards must not make the runtime
    add to that place. Here it points into its own mailbox's header (memory
    no request may name, and where a stray add shows): nothing there may
    change, and the counter in its share gets exactly one per request.
    Forwarded requests (OPEN, served by the metadata warp) and reads (served
    by the service warps) each."""
    s, line, fds = attach_retry(path)
    mb = Mailbox(line, fds[0])
    rt = mb.put(0, name.encode() + b"\0")
    st, h = mb.call(OP_OPEN, arg=rt, dst=rt + 4096, length=256)
    if st != "OK":
        print("open: %s" % st)
        return 1
    n = min(mb.nslots, 16)
    target = mb.rt + 0x28  # the header's reserved words: no request may name them
    for kind in ("OPEN", "READ"):
        counter = mb.put(1024, b"\0" * 8)
        struct.pack_into("<Q", mb.m, 0x28, 0)
        total = 0
        for _ in range(int(rounds)):
            for i in range(n):
                if kind == "OPEN":
                    mb.post(i, OP_OPEN, arg=rt, dst=rt + 8192 + 256 * i, length=256, batch=counter)
                else:
                    mb.post(i, OP_READ, handle=h, dst=rt + 65536 + 65536 * i, length=65536, batch=counter)
            # Once the runtime has taken a request (and checked its batch),
            # point the slot's batch elsewhere.
            left, t0 = set(range(n)), time.time()
            while left and time.time() - t0 < HANG:
                for i in list(left):
                    if mb.answer(i)[0] in (SLOT_TAKEN, SLOT_DONE):
                        struct.pack_into("<Q", mb.m, mb.slots_off + 128 * i + 0x30, target)
                        left.discard(i)
            t0 = time.time()
            while any(mb.answer(i)[0] != SLOT_DONE for i in range(n)) and time.time() - t0 < HANG:
                time.sleep(0.001)
            for i in range(n):
                state, st = mb.answer(i)
                res, = struct.unpack_from("<Q", mb.m, mb.slots_off + 128 * i + 0x48)
                struct.pack_into("<I", mb.m, mb.slots_off + 128 * i, SLOT_FREE)
                if kind == "OPEN" and state == SLOT_DONE and st == 0:
                    mb.call(20, handle=res)  # CLOSE
            total += n
        time.sleep(0.2)
        got, = struct.unpack_from("<I", mb.m, mb.heap + 1024)
        stray, = struct.unpack_from("<Q", mb.m, 0x28)
        print("%s: counter %d of %d, elsewhere %d" % (kind, got, total, stray))
    return 0


def read_flood(path, name, secs, kib=1024):
    """Reads of KiB (1 MiB) in every slot of its mailbox, posted again as
    soon as answered: as much as the service lets one client have."""
    s, line, fds = attach_retry(path)
    mb = Mailbox(line, fds[0])
    rt = mb.put(0, name.encode() + b"\0")
    st, h = mb.call(OP_OPEN, arg=rt, dst=rt + 4096, length=256)
    if st != "OK":
        print("open: %s" % st)
        return 1
    chunk = int(kib) << 10
    n = min(mb.nslots, max(1, (mb.size - mb.heap - 65536) // chunk))
    for i in range(n):
        mb.post(i, OP_READ, handle=h, dst=rt + 65536 + chunk * i, length=chunk)
    attacking()
    t0, done = time.time(), 0
    while time.time() - t0 < float(secs) and not STOP:
        for i in range(n):
            if mb.answer(i)[0] == SLOT_DONE:
                done += 1
                struct.pack_into("<I", mb.m, mb.slots_off + 128 * i, SLOT_FREE)
                mb.post(i, OP_READ, handle=h, dst=rt + 65536 + chunk * i, length=chunk)
        time.sleep(0.0005)
    print("read-flood: %d reads of %d KiB in %d slots" % (done, chunk >> 10, n))
    return 0


def good_reads(mb, h, size, nbytes, chunk=1 << 20, depth=4):
    """A well-behaved client's reads: nbytes of the file (from its start
    again at its end) in reads of chunk, depth of them in flight; seconds."""
    dst = mb.rt + mb.heap + 65536
    nxt, posted, done, slot = 0, 0, 0, {}
    t0 = time.time()
    while done < nbytes:
        while len(slot) < depth and posted < nbytes:
            i = next(k for k in range(mb.nslots) if k not in slot)
            ln = min(chunk, size - nxt)
            mb.post(i, OP_READ, handle=h, dst=dst + chunk * i, length=ln, offset=nxt)
            slot[i] = ln
            posted += ln
            nxt = (nxt + ln) % size
        for i in list(slot):
            state, st = mb.answer(i)
            if state == SLOT_DONE:
                if st != 0:
                    raise SystemExit("good reader: a read failed: status %d" % st)
                done += slot.pop(i)
                struct.pack_into("<I", mb.m, mb.slots_off + 128 * i, SLOT_FREE)
        time.sleep(0.0002)
    return time.time() - t0


def fairness(path, name, rounds, mib, *attack):
    """A well-behaved client (one attachment, reads of 1 MiB, 4 in flight)
    against an attack (the hostile_client.py mode and its arguments, "SOCK"
    standing for the socket), started once. In each round the client reads
    MIB MiB with the attack stopped (SIGSTOP) and MIB MiB with it running,
    in turn first one then the other: the two halves of a round are a
    fraction of a second apart, so what the machine's load does to them is
    much the same. Prints each round's rates and the median of the rounds'
    ratios (under attack / alone)."""
    s, line, fds = attach_retry(path)
    mb = Mailbox(line, fds[0])
    rt = mb.put(0, name.encode() + b"\0")
    st, h = mb.call(OP_OPEN, arg=rt, dst=rt + 4096, length=256)
    if st != "OK":
        print("open: %s" % st)
        return 1
    size = struct.unpack_from("<Q", mb.m, mb.slots_off + 0x50)[0]  # result2 of the last call: the size
    nbytes = int(mib) << 20
    good_reads(mb, h, size, nbytes)  # warm: the file's pages, the interpreter
    me = os.path.abspath(__file__)
    # The attacker's own loop runs at the lowest CPU priority: on a machine
    # of 2 cores a process that spins takes a core from everyone, which no
    # service can prevent; what is measured is what the service gives it.
    a = subprocess.Popen([sys.executable, me] + [path if x == "SOCK" else x for x in attack],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: os.nice(19))
    if a.stdout.readline().strip() != "attacking":
        print("the attack did not start")
        a.kill()
        return 1
    alone, under, ratio = [], [], []

    def half(running):
        a.send_signal(signal.SIGCONT if running else signal.SIGSTOP)
        time.sleep(0.02)  # what it had in flight ends, or it gets going
        return nbytes / good_reads(mb, h, size, nbytes) / (1 << 20)

    for r in range(int(rounds)):
        if r % 2:
            u, al = half(True), half(False)
        else:
            al, u = half(False), half(True)
        alone.append(al)
        under.append(u)
        ratio.append(u / al)
    a.send_signal(signal.SIGCONT)
    a.terminate()
    out = a.communicate()[0]
    med = lambda v: sorted(v)[len(v) // 2]
    print("alone MiB/s: " + " ".join("%.0f" % v for v in alone))
    print("under attack MiB/s: " + " ".join("%.0f" % v for v in under))
    print("the attack said: %s" % (out.strip().splitlines() or ["nothing"])[-1])
    print("ratio %.2f (the median of %d rounds' ratios; medians %.0f and %.0f MiB/s)"
          % (med(ratio), len(ratio), med(under), med(alone)))
    return 0


def churn(path, secs):
    """Attach and leave, again and again."""
    t0, n, refused = time.time(), 0, 0
    attacking()
    while time.time() - t0 < float(secs) and not STOP:
        s, line, fds = attach(path)
        for fd in fds:
            os.close(fd)
        s.close()
        if line.startswith("ok"):
            n += 1
        else:
            refused += 1
            time.sleep(0.001)
    print("churn: attached and left %d times (%d refused)" % (n, refused))
    return 0


def slowloris(path, n, gap, secs):
    """n connections, each sending one byte of a line every gap seconds."""
    conns, refused = [], 0
    for _ in range(int(n)):
        try:
            c = connect(path)
            c.setblocking(False)
            conns.append([c, time.time()])
        except OSError:
            refused += 1
    attacking()
    t0, closed, longest, kept = time.time(), 0, 0.0, 0
    while conns and time.time() - t0 < float(secs):
        for e in list(conns):
            c, born = e
            try:
                data = c.recv(256)
                if data.startswith(b"err"):  # refused: its one line, then the close
                    refused += 1
                    conns.remove(e)
                    c.close()
                    continue
                gone = True
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if not gone:
                try:
                    c.send(b"s")
                except BlockingIOError:
                    pass
                except OSError:
                    gone = True
            if gone:
                closed += 1
                longest = max(longest, time.time() - born)
                kept += time.time() - born >= 1.0
                conns.remove(e)
                c.close()
        time.sleep(float(gap))
    kept += sum(1 for c, born in conns if time.time() - born >= 1.0)
    print("slowloris: %d refused, %d closed by the service (the last after %.1f s), %d still open; "
          "%d kept longer than 1 s" % (refused, closed, longest, len(conns), kept))
    return 0


def hoard_hold(path, secs):
    held, n = [], 0
    while n < 16:
        s, line, _ = attach_retry(path)
        if not line.startswith("ok "):
            break
        held.append(s)
        n += 1
    print("attached %d, then: %s" % (n, line), flush=True)
    time.sleep(float(secs))
    return 0


def silent_service(path):
    """A service that gives a good area and never answers a request."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(8)
    abi = 0
    here = os.path.dirname(os.path.abspath(__file__))
    for l in open(os.path.join(here, "../../include/gpuos/abi.h")):
        if l.startswith("#define GPUOS_ABI_VERSION"):
            abi = int(l.split()[2].rstrip("u"))
    nslots, hdr = 8, 128 + 256 * 64
    heap_off, size = 65536, 65536 + (1 << 20)
    fd = os.memfd_create("silent")
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    struct.pack_into("<IIIIQII", m, 0, 0x786f626d, abi, nslots, 1, hdr, 0, 0)
    struct.pack_into("<Q", m, 0x20, hdr + 128 * nslots)
    ls.settimeout(HANG)  # the test kills it; this ends one it forgot
    held = []
    try:
        while True:
            c, _ = ls.accept()
            c.recv(64)
            socket.send_fds(c, [b"ok heap_off=%d heap_len=%d shm_len=%d share=1 rt=4096\n"
                                % (heap_off, size - heap_off, size)], [fd])
            held.append(c)
    except socket.timeout:
        return 0


def rt_leak(path, pid):
    """How far the attach reply's rt= lies from the service's code,
    libraries, heap and stack (its /proc/PID/maps; root reads it): an
    address next to them would give their places away."""
    s, line, fds = attach_retry(path)
    rt = Mailbox(line, fds[0]).rt
    near = None
    for l in open("/proc/%s/maps" % pid):
        f = l.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        name = f[5] if len(f) > 5 else ""
        if not (name.startswith("/") or name in ("[heap]", "[stack]")) or name.startswith("/memfd:"):
            continue
        d = 0 if lo <= rt < hi else min(abs(rt - lo), abs(rt - hi))
        near = d if near is None else min(near, d)
    print("rt is %d MiB from the service's code, libraries, heap and stack" % ((near or 0) >> 20))
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


STOP = []


def attacking():
    """Tells the harness the attack is in place (the interpreter's start
    can take a second on a loaded machine; timing begins after it). A
    SIGTERM from then on ends the attack's loop (it still reports)."""
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))
    print("attacking", flush=True)


def silent_reader(path):
    s = connect(path)
    s.setblocking(False)
    attacking()
    t0 = time.time()
    while time.time() - t0 < HANG:
        try:
            s.send(b"stats\n" * 64)
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            print("disconnected after %.1f s" % (time.time() - t0))
            return 0
    print("still connected after %d s" % HANG)
    return 1


def partial_line(path):
    s = connect(path)
    s.sendall(b"sta")
    attacking()
    t0 = time.time()
    if wait_closed(s, HANG):
        print("disconnected after %.1f s" % (time.time() - t0))
        return 0
    print("still connected after %d s" % HANG)
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
    while left and time.time() - t0 < HANG:
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


def as_nobody(mode, args, uid=65534):
    os.setgroups([])
    os.setgid(65534)
    os.setuid(uid)
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
    if mode in MODES:
        return MODES[mode](*args)
    return 2


def memfd(size, seal=True):
    fd = os.memfd_create("gpuos-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seal:
        import fcntl
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    return fd


def ask(s, line, fd=None):
    """one request line on an attached connection (with a descriptor); its reply"""
    data = (line + "\n").encode()
    if fd is None:
        s.sendall(data)
    else:
        socket.send_fds(s, [data], [fd])
    return recv_line(s)[0]


def own_memory(path, name="/d/one"):
    """Memory of a client's own (register host): A lends a sealed memfd and
    reads into it; B names it, lends bad memfds, takes A's back; A's limit;
    A gives it back and names it again. One line per attempt."""
    f = name.encode() + b"\0"
    page = mmap.PAGESIZE
    sa, la, fa = attach_retry(path)
    sb, lb, fb = attach_retry(path)
    a, b = Mailbox(la, fa[0]), Mailbox(lb, fb[0])
    fd = memfd(16 * page)
    mine = mmap.mmap(fd, 16 * page)
    r = ask(sa, "register host off=0 len=%d" % (16 * page), fd)
    print("A lends a sealed memfd: %s" % r.split()[0])
    if not r.startswith("ok rt="):
        print("  reply: %s" % r)
        return 1
    rt = int(r.split("=")[1])
    pa, pb = a.put(0, f), b.put(0, f)
    st, ha = a.call(OP_OPEN, arg=pa, dst=pa + 4096, length=256)
    st, hb = b.call(OP_OPEN, arg=pb, dst=pb + 4096, length=256)
    print("A reads into its own memory: %s" % a.call(OP_READ, handle=ha, dst=rt + 100, length=64)[0])
    print("A reads into its share: %s" % a.call(OP_READ, handle=ha, dst=pa + 8192, length=64)[0])
    same = mine[100:164] == a.m[a.heap + 8192:a.heap + 8192 + 64] and mine[100:164] != bytes(64)
    print("A's own memory holds the file's bytes: %s" % ("yes" if same else "no"))
    print("A reads across the end of its memory: %s" % a.call(OP_READ, handle=ha, dst=rt + 16 * page - 8,
                                                              length=64)[0])
    print("B reads into A's memory: %s" % b.call(OP_READ, handle=hb, dst=rt + 100, length=64)[0])
    print("B opens a path in A's memory: %s" % b.call(OP_OPEN, arg=rt + 100, dst=pb + 4096, length=256)[0])
    print("B reads raw bytes into A's memory: %s" % b.call(OP_READ_RAW, dst=rt, length=512)[0])
    print("B takes A's memory back: %s" % ask(sb, "unregister rt=%d" % rt))
    ufd = memfd(4 * page, seal=False)
    print("B lends an unsealed memfd: %s" % ask(sb, "register host off=0 len=%d" % (4 * page), ufd))
    sfd = memfd(4 * page)
    print("B lends more than its memfd holds: %s" % ask(sb, "register host off=0 len=%d" % (8 * page), sfd))
    print("B lends part of a page: %s" % ask(sb, "register host off=0 len=100", sfd))
    print("B lends no memfd: %s" % ask(sb, "register host off=0 len=%d" % (4 * page)))
    print("B lends a handle that is no memfd: %s" % ask(sb, "register host off=0 len=%d" % (4 * page), fb[0]))
    print("B lends VRAM by a made-up handle: %s" % ask(sb, "register vram off=0 len=4096 ipc=" + "ab" * 64))
    print("B sends a malformed register: %s" % ask(sb, "register vram off=0 len=4096 ipc=zz"))
    print("B sends a handle with a bad digit: %s" % ask(sb, "register vram off=0 len=4096 ipc=" + "0g" + "ab" * 63))
    print("B sends a handle one digit short: %s" % ask(sb, "register vram off=0 len=4096 ipc=" + "a" * 127))
    sc = connect(path)
    print("a connection that has not attached lends memory: %s" % ask(sc, "register host off=0 len=%d" % (4 * page),
                                                                    sfd))
    sc.close()
    got = []
    for k in range(5):
        got.append(ask(sa, "register host off=0 len=%d" % (4 * page), memfd(4 * page)))
    print("A lends 5 more: %s" % " / ".join(g.split()[0] if g.startswith("ok") else g for g in got))
    print("A gives its first back: %s" % ask(sa, "unregister rt=%d" % rt))
    print("A reads into what it gave back: %s" % a.call(OP_READ, handle=ha, dst=rt + 100, length=64)[0])
    print("A gives it back again: %s" % ask(sa, "unregister rt=%d" % rt))
    print("A's reads still work: %s" % a.call(OP_READ, handle=ha, dst=pa + 8192, length=64)[0])
    return 0


def lend_many(path, n):
    """attach 3 times and lend n sealed memfds of one page, spread over the
    three; print each reply's first word (or the refusal), then hold 2 s"""
    page = mmap.PAGESIZE
    conns = []
    for _ in range(3):
        s, line, fds = attach_retry(path)
        if not line.startswith("ok"):
            print("attach: %s" % line)
            return 1
        conns.append(s)
    got = []
    for k in range(int(n)):
        r = ask(conns[k % 3], "register host off=0 len=%d" % page, memfd(page))
        got.append(r.split()[0] if r.startswith("ok") else r)
    print("lends: %s" % " / ".join(got))
    time.sleep(2)
    return 0


def lend_and_die(path, name, ready):
    """attach, lend a memfd of 64 MiB, keep reads of name into it in flight
    until killed; touch `ready` once the first read is posted"""
    f = name.encode() + b"\0"
    s, line, fds = attach_retry(path)
    mb = Mailbox(line, fds[0])
    size = 64 << 20
    r = ask(s, "register host off=0 len=%d" % size, memfd(size))
    if not r.startswith("ok rt="):
        print(r)
        return 1
    rt = int(r.split("=")[1])
    p = mb.put(0, f)
    st, h = mb.call(OP_OPEN, arg=p, dst=p + 4096, length=256)
    if st != "OK":
        print("open: %s" % st)
        return 1
    open(ready, "w").close()
    k = 0
    while True:
        for i in range(min(mb.nslots, 16)):
            st, _ = mb.answer(i)
            if st in (SLOT_FREE, SLOT_DONE):
                struct.pack_into("<I", mb.m, mb.mbox + mb.slots_off + 128 * i, SLOT_FREE)
                mb.post(i, OP_READ, handle=h, dst=rt + (k % 64) * (1 << 20), length=1 << 20)
                k += 1
        time.sleep(0.0005)


MODES = {"own-memory": own_memory, "lend-and-die": lend_and_die, "lend-many": lend_many, "rt-leak": rt_leak, "fairness": fairness, "repost": repost, "batch-rewrite": batch_rewrite, "read-flood": read_flood, "churn": churn,
         "slowloris": slowloris, "hoard-hold": hoard_hold}


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
    if a[0] == "as-uid":
        return as_nobody(a[2], a[3:], int(a[1]))
    if a[0] == "silent-service":
        return silent_service(a[1])
    if a[0] in MODES:
        return MODES[a[0]](*a[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
