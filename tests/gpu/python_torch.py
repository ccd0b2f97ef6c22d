#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python binding with PyTorch, the runtime on the GPU (the GPU machine).

Usage: tests/gpu/python_torch.py BUILD_DIR

BUILD_DIR/files-img/ext4.img holds /models/m.gguf (its source is
BUILD_DIR/files-img/src/models/m.gguf) and /big.bin; the library is
BUILD_DIR/lib/libgpuos.so. In the order docs/embedding.md asks for:
import gpuos (CUDA_MODULE_LOADING=EAGER, CUDA_DEVICE_MAX_CONNECTIONS=32),
import torch, torch's CUDA up, then System(host=False) on the GPU.
Tensors loaded into VRAM go to torch (and CuPy) without a copy and must
hold the file's bytes; a matrix product runs parked (cuBLAS loads its
modules then), its operands built there too, and parked again after the
resume; memory is freed as torch drops the tensors. Where mke2fs is
found, a second runtime serves a model of every ggml type (F16, BF16,
I32, F64 through DLPack). Last, with a third runtime, a torch kernel
beside the running runtime, bounded: the process ends if it never runs.
torch.cuda.synchronize() is called only while parked.

One line per check, "ok ..." or "FAIL ..."; exit 1 on any failure, 77
(skipped, the reason printed) without PyTorch or a GPU.
"""
import faulthandler
import gc
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
os.environ["GPUOS_LIBRARY"] = os.path.join(build, "lib", "libgpuos.so")
sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

# A hang beside the runtime (a module load while it spins) is a failure
# with a traceback, not a stuck suite.
faulthandler.dump_traceback_later(int(os.environ.get("GPUOS_PY_TIMEOUT", "270")), exit=True)

import gpuos  # noqa: E402  - first: it sets CUDA_MODULE_LOADING=EAGER before CUDA starts

try:
    import torch
except ImportError as e:
    print("skip: no PyTorch (%s)" % e)
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("skip: PyTorch sees no GPU")
    sys.exit(SKIP)
torch.zeros(1, device="cuda")       # torch's CUDA up (its modules loaded eagerly) before the runtime

from test_gpuos import parse_gguf, layer_of  # noqa: E402  - the independent GGUF reader

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok   %s" % what)
    else:
        failed += 1
        print("FAIL %s" % what)
    sys.stdout.flush()
    return bool(cond)


def fail_exc(what, e):
    check(False, "%s: %s: %s" % (what, type(e).__name__, e))


def host_bytes(x):
    """A torch tensor's bytes, copied to the CPU (a stream-ordered copy,
    no device-wide synchronisation)."""
    c = x.detach().contiguous().view(-1).view(torch.uint8).cpu()
    try:
        return c.numpy().tobytes()
    except Exception:
        return bytes(c.tolist())


def file_bytes(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


_TORCH = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I8": torch.int8,
          "I16": torch.int16, "I32": torch.int32, "I64": torch.int64, "F64": torch.float64}


def check_loaded(ts, m, src, label):
    """Every tensor of ts: a CudaTensor whose DLPack import is on the GPU,
    at the same pointer, of the right dtype and shape, with the file's bytes."""
    good = 0
    for name, t in ts.items():
        info = m[name]
        try:
            cai = t.__cuda_array_interface__
            x = torch.from_dlpack(t)
            ok = (isinstance(t, gpuos.CudaTensor) and x.is_cuda and x.device.index == 0
                  and x.data_ptr() == cai["data"][0] and tuple(x.shape) == info.shape
                  and x.dtype == _TORCH.get(info.type, torch.uint8)
                  and host_bytes(x) == file_bytes(src, info.offset, info.nbytes))
            if not ok:
                check(False, "%s %s: on cuda:0 %s, no copy %s, %s %s (want %s), bytes %s" % (
                    label, name, x.is_cuda, x.data_ptr() == cai["data"][0], x.dtype, tuple(x.shape),
                    info.shape, host_bytes(x) == file_bytes(src, info.offset, info.nbytes)))
            good += ok
            del x
        except Exception as e:
            fail_exc("%s %s" % (label, name), e)
    check(good == len(ts) and good > 0,
          "%s: %d tensors through torch.from_dlpack, on cuda:0 at the loaded pointer (no copy), the file's "
          "bytes" % (label, good))


def main():
    img = os.path.join(build, "files-img", "ext4.img")
    src = os.path.join(build, "files-img", "src", "models", "m.gguf")
    big = os.path.join(build, "files-img", "src", "big.bin")
    if not check(os.path.exists(img) and os.path.exists(src) and os.path.exists(os.environ["GPUOS_LIBRARY"]),
                 "%s, %s and %s exist (make lib; tests/tools/files_images.sh)"
                 % (os.environ["GPUOS_LIBRARY"], img, src)):
        return
    print("     torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)))
    ref = parse_gguf(src)
    sys_ = gpuos.System(device="emu:" + img, host=False)
    try:
        run_main(sys_, ref, src, big)
    finally:
        gc.collect()
        sys_.close()
    check(sys_.closed, "System closed (gpuos_shutdown)")
    extra_model()
    beside_check(img)


def run_main(s, ref, src, big):
    check(s.gpu and s.sm > 0, "the runtime runs on the GPU (sm_%d)" % s.sm)
    m = s.open_model("/models/m.gguf")
    check(m.names == [t[0] for t in ref["tensors"]] and m.data_offset == ref["data_offset"],
          "open_model: %d tensor names and the data offset as the file's own header says" % len(m.names))
    f32 = [t.name for t in m.tensors if t.type == "F32"][:3]
    f16 = [t.name for t in m.tensors if t.type == "F16"][:2]
    quant = [t.name for t in m.tensors if t.quantised][:2]
    names = f32 + f16 + quant
    ts = s.load(names, device="cuda")
    check(list(ts) == names, "load(%d names, device='cuda'): %s" % (len(names), ", ".join(
        "%s %s" % (n, m[n].type) for n in names)))
    check_loaded(ts, m, src, "load")
    layer = sorted(m.layers)[min(2, len(m.layers) - 1)]
    lt = s.load(layer=layer, device="cuda")
    check(list(lt) == [t[0] for t in ref["tensors"] if layer_of(t[0]) == layer],
          "load(layer=%d): exactly that layer's %d tensors, in file order" % (layer, len(lt)))
    check_loaded(lt, m, src, "layer %d" % layer)

    # cupy takes the same memory through __cuda_array_interface__ (parked:
    # its first use may do what the CUDA rules forbid beside the runtime)
    try:
        import cupy
    except Exception:
        cupy = None
        print("     (no CuPy: its check is left out)")
    if cupy is not None:
        with s.parked():
            try:
                name = quant[0]
                c = cupy.asarray(ts[name])
                check(c.data.ptr == ts[name].ptr and cupy.asnumpy(c).tobytes() ==
                      file_bytes(src, m[name].offset, m[name].nbytes),
                      "cupy.asarray(%s): the same device pointer, the file's bytes" % name)
                del c
            except Exception as e:
                fail_exc("cupy.asarray", e)

    # a matrix product parked (cuBLAS's first call loads modules), its
    # operands built from loaded data there too; then parked again after the
    # resume. torch kernels beside the running runtime: beside_check() below.
    q = torch.from_dlpack(ts[quant[0]])
    v = torch.from_dlpack(ts[f32[0]])
    n = q.numel() // 64 * 64
    k = 32 if n >= 32 * 64 else n // 64
    qb = torch.frombuffer(bytearray(file_bytes(src, m[quant[0]].offset, k * 64)), dtype=torch.uint8)
    want = (qb.float().reshape(k, 64) / 255.0) @ ((qb.float().reshape(64, k) - 128.0) / 255.0)
    wv = torch.nan_to_num(torch.frombuffer(bytearray(file_bytes(src, m[f32[0]].offset, m[f32[0]].nbytes)),
                                           dtype=torch.float32), nan=0.0, posinf=1.0, neginf=-1.0).clamp(-4, 4)
    try:
        with s.parked():
            check(s.is_parked, "parked")
            a = q[:k * 64].float().reshape(k, 64) / 255.0
            b = (q[:k * 64].float().reshape(64, k) - 128.0) / 255.0
            w = torch.nan_to_num(v.float(), nan=0.0, posinf=1.0, neginf=-1.0).clamp(-4, 4)
            c = a @ b
            d = w @ w
            torch.cuda.synchronize()        # device-wide: only while parked
        check(not s.is_parked, "resumed")
        check(torch.allclose(c.cpu(), want, rtol=1e-4, atol=1e-3),
              "parked: a @ b (%dx64 @ 64x%d from %s's bytes, loaded into VRAM) equals the CPU's product"
              % (k, k, quant[0]))
        check(torch.allclose(d.cpu(), wv @ wv, rtol=1e-4, atol=1e-3), "parked: %s . itself" % f32[0])
        with s.parked():
            c2 = a @ b
            torch.cuda.synchronize()
        check(torch.allclose(c2.cpu(), want, rtol=1e-4, atol=1e-3), "parked again after the resume: a @ b, the same")
        del a, b, c, c2, d, w
    except Exception as e:
        fail_exc("matrix product", e)
    del q, v

    # loads and reads after the resume, into VRAM and host memory
    again = None
    try:
        again = s.load(layer=sorted(m.layers)[0], device="cuda")
        check_loaded(again, m, src, "after the resume, layer %d" % sorted(m.layers)[0])
        r = s.read("/big.bin", 12345, (1 << 20) + 7, device="cuda")
        x = torch.from_dlpack(r)
        check(x.is_cuda and x.dtype == torch.uint8 and x.numel() == (1 << 20) + 7 and
              host_bytes(x) == file_bytes(big, 12345, (1 << 20) + 7),
              "read('/big.bin', 12345, 1 MiB + 7, device='cuda'): uint8 on the GPU, the file's bytes")
        del x, r
        check(s.read("/big.bin", 5 << 20, 77) == file_bytes(big, 5 << 20, 77), "read() to bytes: the file's")
        try:
            s.read("/big.bin", os.path.getsize(big) - 3, 4)
            check(False, "a range past the end raises")
        except gpuos.Error as e:
            check(e.errno == 34, "a range past the end raises gpuos.Error ERANGE: %s" % e)
        h = s.load(f32[:1], device="cpu")[f32[0]]
        ht = torch.from_dlpack(h)
        check(not ht.is_cuda and h.tobytes() == file_bytes(src, m[f32[0]].offset, m[f32[0]].nbytes),
              "load(device='cpu') with the GPU runtime: numpy over pinned host memory, the file's bytes")
        del h, ht
    except Exception as e:
        fail_exc("loads after the resume", e)

    # memory comes back as torch lets go (the DLPack deleter; gpuos_sys_free
    # parks, frees and resumes): more loads than GPUOS_SYS_USER_REGIONS
    del ts, lt, again
    gc.collect()
    try:
        layers = sorted(m.layers)
        for i in range(2 * gpuos.GPUOS_SYS_USER_REGIONS + 3):
            t = s.load(layer=layers[i % len(layers)], device="cuda")
            xs = [torch.from_dlpack(v) for v in t.values()]
            del t               # only torch holds the memory now
            if i % 7 == 0:
                check_loaded(s.load(layer=layers[i % len(layers)], device="cuda"), m, src,
                             "round %d, layer %d" % (i, layers[i % len(layers)]))
            del xs
        check(True, "%d loads into VRAM, each freed when torch dropped its tensors: no ENOSPC"
              % (2 * gpuos.GPUOS_SYS_USER_REGIONS + 3))
    except Exception as e:
        fail_exc("loads in a loop", e)
    try:
        s.load(["no.such.tensor"], device="cuda")
        check(False, "an unknown tensor raises")
    except gpuos.Error as e:
        check("no.such.tensor" in str(e), "an unknown tensor raises gpuos.Error naming it: %s" % e)


def beside_check(img):
    """A torch kernel on data loaded by gpuos while the runtime runs, its
    event polled for 20 s (a stream wait, no device-wide one); then a park
    with that work done. Last, and bounded: a kernel that never runs keeps
    park and shutdown from returning, so then the process ends here."""
    side = torch.cuda.Stream()      # made before the runtime (docs/embedding.md, rule 2)
    s = gpuos.System(device="emu:" + img, host=False)
    m = s.open_model("/models/m.gguf")
    name = [t.name for t in m.tensors if t.type == "F32"][0]
    t = s.load([name], device="cuda")[name]
    x = torch.from_dlpack(t)
    with torch.cuda.stream(side):
        y = x * 2.0
        ev = torch.cuda.Event()
        ev.record(side)
    t0 = time.time()
    while not ev.query() and time.time() - t0 < 20:
        time.sleep(0.01)
    if not check(ev.query(), "a torch kernel (x * 2 on a loaded tensor) beside the running runtime completes "
                 "(%.1f s)" % (time.time() - t0)):
        print("     the kernel never ran: park and shutdown would wait for it; ending the process")
        print("python_torch: %d passed, %d failed" % (passed, failed))
        sys.stdout.flush()
        os._exit(1)
    check(torch.equal(y.cpu(), x.cpu() * 2.0), "its result is right")
    with s.parked():
        torch.cuda.synchronize()
    check(True, "parked and resumed after torch work beside the runtime")
    del x, y, t
    gc.collect()
    s.close()


def extra_model():
    """A model of every ggml type in an image made here, when mke2fs is."""
    if not shutil.which("mke2fs"):
        print("     (no mke2fs: the model of every type is left out)")
        return
    tmp = tempfile.mkdtemp(prefix="gpuos-pyt.")
    try:
        os.makedirs(os.path.join(tmp, "src"))
        path = os.path.join(tmp, "src", "all.gguf")
        subprocess.check_call([sys.executable, os.path.join(ROOT, "tests", "tools", "gguf_writer.py"),
                               "--case", "all-v3", path], stdout=subprocess.DEVNULL)
        ref = parse_gguf(path)
        size = os.path.getsize(path)
        with open(path, "r+b") as f:     # random data: no pattern a misplaced piece could match
            f.seek(ref["data_offset"])
            f.write(random.Random(3).randbytes(size - ref["data_offset"]))
        img = os.path.join(tmp, "disk.img")
        subprocess.check_call(["mke2fs", "-q", "-F", "-t", "ext4", "-d", os.path.join(tmp, "src"), img, "16M"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with gpuos.System(device="emu:" + img, host=False) as s:
            check(s.gpu, "a second runtime in the same process, on the GPU")
            m = s.open_model("/all.gguf")
            names = ["type.f16", "type.bf16", "type.i32", "type.f64", "type.i8", "token_embd.weight",
                     "type.q4_k"]
            check_loaded(s.load(names, device="cuda"), m, path, "every type")
        check(True, "the second runtime closed")
    except Exception as e:
        fail_exc("the model of every type", e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        fail_exc("python_torch", e)
    faulthandler.cancel_dump_traceback_later()
    print("python_torch: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
