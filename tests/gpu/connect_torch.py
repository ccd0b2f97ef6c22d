#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 32's GPU step: a PyTorch process as a client of the service.

  python3 tests/gpu/connect_torch.py BUILD WORKDIR [--layers N]

WORKDIR (tmpfs) gets a bf16 checkpoint of Llama-7B-shaped tensors with
Hugging Face names (bench/safetensors_load.py write; 10 layers: 4.57 GB)
and an ext4 image of it. Then, in one run:
  1. the baseline: `gpuos run file_load.cubin` of the checkpoint file into
     VRAM, the runtime in that process (no service yet), its GB/s;
  2. `gpuos boot` serves the image (it joins or starts MPS);
  3. this process, PyTorch with no gpuos rule (torch first, no environment,
     no parking), connects (gpuos.connect) and checks that each of
     cudaFree (torch.cuda.empty_cache after a free), a first cuBLAS GEMM,
     torch.cuda.synchronize(), a CuPy kernel compiled now, ends within 5 s
     beside the running service, before and after loads;
  4. GEMMs alone (8192^2 bf16), then every tensor loaded into this
     process's own CUDA memory while GEMMs run beside it: the load's GB/s
     and the GEMMs' time, then two more loads alone (the median of the
     three is the row);
  5. every tensor torch.equal to safetensors.torch.load_file's;
  6. the client closes; its tensors stay valid.
Prints "connect_torch: P passed, F failed" and one JSON line "result {...}".
"""
import faulthandler
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("  ok   %s%s" % (name, " (%s)" % detail if detail else ""))
    else:
        failed += 1
        print("  FAIL %s%s" % (name, " (%s)" % detail if detail else ""))
    sys.stdout.flush()


def within(secs, fn):
    """fn() in a thread: (ended within secs, seconds, error)"""
    box = {}

    def run():
        t0 = time.perf_counter()
        try:
            fn()
        except BaseException as e:      # reported
            box["err"] = e
        box["t"] = time.perf_counter() - t0
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(secs)
    return not t.is_alive() and "err" not in box, box.get("t", secs), box.get("err")


def main():
    # a hang shows where every thread waits, before the caller's timeout kills us
    faulthandler.dump_traceback_later(int(os.environ.get("GPUOS_CONNECT_DUMP_S", "270")), exit=True)
    build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    layers = sys.argv[sys.argv.index("--layers") + 1] if "--layers" in sys.argv else "10"
    gbin = os.path.join(build, "gpuos")
    os.makedirs(os.path.join(work, "src"), exist_ok=True)
    src = os.path.join(work, "src", "model.safetensors")
    img = os.path.join(work, "model.img")
    sock = os.path.join(work, "s.sock")
    env = dict(os.environ, GPUOS_QUIET_HOST="1")
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib", "deps") + (":" + env["LD_LIBRARY_PATH"] if
                                                                   env.get("LD_LIBRARY_PATH") else "")
    os.environ["GPUOS_LIBRARY"] = os.path.join(build, "lib", "libgpuos.so")
    os.environ["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"]
    subprocess.check_call([sys.executable, os.path.join(ROOT, "bench", "safetensors_load.py"), "write", src,
                           "--layers", layers])
    size = os.path.getsize(src)
    subprocess.check_call(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-O", "^metadata_csum,^has_journal",
                           "-d", os.path.dirname(src), img, "%dM" % (size // 1048576 + 256)])
    print("# checkpoint: %.2f GB" % (size / 1e9))

    # 1. the baseline, in its own process, before the service
    vmib = size // 1048576 + 64
    out = subprocess.run([gbin, "run", os.path.join(build, "apps", "file_load.cubin"), "--device", "emu:" + img,
                          "--vram-mib", str(vmib), "--grid", "16", "--block", "32", "--warps", "1", "--",
                          "/model.safetensors"], env=env, capture_output=True, text=True, timeout=300)
    line = [l for l in out.stdout.splitlines() if l.startswith("file_load:")]
    base = float(line[0].split(":")[-1].split("GB/s")[0].strip().split()[-1]) if line else 0.0
    check("file_load in its own process (the baseline)", out.returncode == 0 and base > 0,
          line[0] if line else out.stderr.strip()[-300:])

    # 2. the service
    svc = subprocess.Popen([gbin, "boot", "--device", "emu:" + img, "--socket", sock] +
                           os.environ.get("GPUOS_CONNECT_BOOT", "--warps 1").split(),
                           env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "service.err"), "w"),
                           text=True)    # a file: a pipe nobody reads until the end could fill and stop it
    ready = svc.stdout.readline()
    check("gpuos boot serves the image", "ready" in ready, ready.strip())
    res = {"bytes": size, "file_load_gb_per_s": base}
    try:
        client(sock, src, size, base, res)
    finally:
        subprocess.call([gbin, "stop", "--socket", sock], env=env, timeout=60, stdout=subprocess.DEVNULL)
        try:
            svc.wait(60)
        except subprocess.TimeoutExpired:
            svc.kill()
        err = open(os.path.join(work, "service.err")).read()
        print("".join("    service: %s\n" % l for l in err.splitlines()[:8]), end="")
    print("result " + json.dumps(res))
    print("connect_torch: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def client(sock, src, size, base, res):
    import torch                        # PyTorch first, as any program: no gpuos rule before it
    import safetensors.torch as st
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
    import gpuos
    try:
        import cupy
    except ImportError:
        cupy = None
    c = gpuos.connect(sock)
    check("gpuos.connect() from a PyTorch process", isinstance(c, gpuos.Client) and c.gpu, repr(c))
    state = {"k": 0}

    def cupy_kernel():
        state["k"] += 1
        k = cupy.RawKernel(r'''extern "C" __global__ void f%d(float *x) { x[threadIdx.x] += %d.0f; }'''
                           % (state["k"], state["k"]), "f%d" % state["k"])
        x = cupy.zeros(32, dtype=cupy.float32)
        k((1,), (32,), (x,))
        cupy.cuda.runtime.deviceSynchronize()
        assert float(x[0]) == state["k"]

    def free_and_empty():
        x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        del x
        torch.cuda.empty_cache()        # cudaFree of the cached block
        torch.cuda.synchronize()

    def first_gemm():
        b = a @ a                        # this process's first cuBLAS call
        torch.cuda.synchronize()
        del b

    checks = [("a first cuBLAS GEMM", first_gemm), ("cudaFree (a freed block, torch.cuda.empty_cache)", free_and_empty),
              ("torch.cuda.synchronize()", torch.cuda.synchronize)]
    if cupy is not None:
        checks.append(("a CuPy kernel compiled and launched now", cupy_kernel))
    else:
        check("CuPy is here for its JIT kernel", False, "import cupy failed")
    for when in ("beside the running service", "after loads"):
        if when == "after loads":
            m = c.open_model("/model.safetensors")
            ts = m.load(device="cuda")
            del ts
        for name, fn in checks:
            ok, t, err = within(5, fn)
            check("%s %s within 5 s" % (name, when), ok, "%.3f s%s" % (t, "; %r" % err if err else ""))

    # 4. GEMMs alone, then a load with GEMMs beside it
    def gemms(n):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            b = a @ a
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
            del b
        return ts
    gemms(3)
    alone = statistics.median(gemms(20))
    beside, stop = [], threading.Event()

    def gemm_loop():
        while not stop.is_set():
            beside.extend(gemms(1))
    rates, data_rates, with_open, loaded = [], [], [], None
    for r in range(3):
        c._models.clear()
        g = threading.Thread(target=gemm_loop) if r == 0 else None
        if g:
            g.start()
        # the rate counts the load of an opened model, as file_load's counts
        # its reads after its open; the open (the header parsed by the
        # service) is printed beside it, and the rate with it
        t_o = time.perf_counter()
        m = c.open_model("/model.safetensors")
        t0 = time.perf_counter()
        t_open = t0 - t_o
        ts = m.load(device="cuda")
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if g:
            stop.set()
            g.join()
        rates.append(size / (t1 - t0) / 1e9)
        with_open.append(size / (t1 - t_o) / 1e9)
        tm = dict(c.timing)
        data_rates.append(size / tm["load"] / 1e9)
        print("  load %d%s: %.3f s, %.2f GB/s; of it lending %.1f ms, gpuos_model_load_host %.1f ms (%.2f GB/s), "
              "letting go %.1f ms; open_model before it %.1f ms (%.2f GB/s with it)" % (
                  r + 1, " (GEMMs beside it)" if g else "", t1 - t0, rates[-1], tm["lend"] * 1e3, tm["load"] * 1e3,
                  data_rates[-1], tm.get("let_go", 0) * 1e3, t_open * 1e3, with_open[-1]))
        if r == 0:
            loaded = ts
        del ts
    rate = statistics.median(rates)
    res.update({"client_data_gb_per_s": statistics.median(data_rates), "client_data_all": data_rates,
                "client_gb_per_s": rate, "client_all": rates, "client_with_open_all": with_open, "ratio_to_file_load": rate / base if base else 0,
                "gemm_ms_alone": alone * 1e3, "gemm_ms_beside_load": statistics.median(beside) * 1e3 if beside else None,
                "gemms_beside": len(beside)})
    check("GEMMs ran beside the first load", len(beside) > 0, "%d GEMMs, median %.2f ms, alone %.2f ms" % (
        len(beside), res["gemm_ms_beside_load"] or 0, alone * 1e3))
    check("the load through the service reaches 0.9x file_load in its own process", base > 0 and rate >= 0.9 * base,
          "%.2f GB/s against %.2f GB/s: %.2fx (with open_model: %.2f GB/s)" % (
              rate, base, rate / base if base else 0, statistics.median(with_open)))

    # 5. the bytes
    ref = st.load_file(src, device="cuda")
    bad = [n for n in ref if n not in loaded or not torch.equal(gpuos.to_torch(loaded[n]).view(torch.int16),
                                                               ref[n].view(torch.int16))]
    check("every tensor (%d) torch.equal to safetensors.torch.load_file's" % len(ref), not bad and len(loaded) == len(ref),
          ", ".join(bad[:4]))
    del ref
    with open(src, "rb") as f:
        f.seek(12345)
        want = f.read(1 << 20)
    # the same bytes as one file range (gpuos_file_load_host: READs, no tensor table)
    whole = []
    for r in range(2):
        t0 = time.perf_counter()
        x = c.read("/model.safetensors", 0, size, device="cuda")
        torch.cuda.synchronize()
        whole.append(size / (time.perf_counter() - t0) / 1e9)
        del x
    res["client_read_gb_per_s"] = max(whole)
    print("  the whole file as one range (read): %s GB/s" % ", ".join("%.2f" % w for w in whole))
    buf = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")
    c.read("/model.safetensors", 12345, 1 << 20, out=buf)
    check("read(out=) into a CUDA tensor of this process", bytes(buf.cpu().numpy().tobytes()) == want)
    # 6. close: the tensors are this process's
    names = list(loaded)[:4]
    before = [gpuos.to_torch(loaded[n]).view(torch.int16).clone() for n in names]
    c.close()
    same = all(torch.equal(gpuos.to_torch(loaded[n]).view(torch.int16), b) for n, b in zip(names, before))
    check("tensors loaded before close() stay valid after it (4 compared)", same)
    torch.cuda.synchronize()


if __name__ == "__main__":
    sys.exit(main())
