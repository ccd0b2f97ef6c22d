#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Which torch kernels run beside the running gpuos runtime (issue 18, docs/embedding.md rule 8).

Usage: tests/gpu/stream_probe.py BUILD_DIR        (the GPU machine, PyTorch)

On the H200 (2026-11-28) a torch kernel launched while the runtime kernel
spun never completed. The suspicion: CUDA maps streams onto
CUDA_DEVICE_MAX_CONNECTIONS (32) hardware work queues in turn, torch makes
a pool of streams (32 per priority) the first time one is asked for, and a
stream that shares a queue with the runtime kernel's waits behind it for
ever. Each case runs in a process of its own (a hang is killed, and the
next case starts clean) and prints one line: the case, whether a small
torch kernel finished within 10 s, and what came before it:

  default        torch's CUDA up, boot, a kernel on the default stream
  pool-before    a torch.cuda.Stream() made before the boot, the kernel on it
  pool-after     the stream made after the boot, the kernel on it
  pool-all       every stream of the pool made before the boot (one per index), a kernel on each
  cupy           CuPy's own kernel (a module of its own, compiled before the boot) on its stream

Exit 0 when every case was decided (ran or hung), 77 without PyTorch or a GPU.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = ["default", "pool-before", "pool-after", "pool-all", "cupy"]


def child(case, build):
    os.environ["GPUOS_LIBRARY"] = os.path.join(build, "lib", "libgpuos.so")
    sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
    import gpuos  # first: EAGER and 32 work queues before CUDA starts
    import torch
    torch.zeros(1, device="cuda")
    x = torch.arange(1 << 16, device="cuda", dtype=torch.float32)
    y = x * 2  # the elementwise kernel's first launch: before the runtime
    torch.cuda.synchronize()
    streams = []
    if case == "pool-before":
        streams = [torch.cuda.Stream()]
    elif case == "pool-all":
        streams = [torch.cuda.Stream() for _ in range(32)]
    elif case == "cupy":
        import cupy
        k = cupy.ElementwiseKernel("float32 a", "float32 b", "b = a * 3", "probe_k")
        a = cupy.arange(1 << 16, dtype=cupy.float32)
        k(a)
        cupy.cuda.Device().synchronize()
    s = gpuos.System(device="emu:" + os.path.join(build, "files-img", "ext4.img"), host=False)
    assert s.gpu, "the runtime is not on the GPU"
    if case == "pool-after":
        streams = [torch.cuda.Stream()]
    t0 = time.time()
    events = []
    if case == "cupy":
        st = cupy.cuda.Stream(non_blocking=True)
        with st:
            k(a)
            ev = cupy.cuda.Event()
            ev.record(st)
        events.append(("cupy stream", lambda ev=ev: ev.done))
    elif streams:
        for i, st in enumerate(streams):
            with torch.cuda.stream(st):
                y = x * 2
                ev = torch.cuda.Event()
                ev.record(st)
            events.append(("pool stream %d" % i, ev.query))
    else:
        y = x * 2
        ev = torch.cuda.Event()
        ev.record()
        events.append(("default stream", ev.query))
    done = {}
    while time.time() - t0 < 10 and len(done) < len(events):
        for name, ev in events:
            if name not in done and ev():
                done[name] = time.time() - t0
        time.sleep(0.01)
    hung = [n for n, _ in events if n not in done]
    print("%-12s %s" % (case, "ran (%d kernels, slowest %.3f s)" % (len(done), max(done.values()))
                        if not hung else "HUNG: %s (%d of %d ran)" % (", ".join(hung[:6]), len(done), len(events))),
          flush=True)
    if hung:
        os._exit(3)  # a park now would wait for ever (seen): leave without one
    s.close()
    os._exit(0)


def main():
    if len(sys.argv) == 3:
        child(sys.argv[2], sys.argv[1])
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no GPU")
    except ImportError as e:
        print("skip: %s" % e)
        return 77
    for case in CASES:
        try:
            r = subprocess.run([sys.executable, __file__, build, case], timeout=60, capture_output=True, text=True)
            out = (r.stdout.strip() or r.stderr.strip().splitlines()[-1:] or ["no output"])
            print(out if isinstance(out, str) else "%-12s error: %s" % (case, out[0]))
        except subprocess.TimeoutExpired:
            print("%-12s killed after 60 s" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
