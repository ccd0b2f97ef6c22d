#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Both model formats through the Python binding, the runtime on the GPU
(issue 33; the GPU machine, tests/gpu/run.sh).

Usage: tests/gpu/safetensors_torch.py BUILD_DIR

Files written here by safetensors.torch.save_file (bf16, f16, f32,
float8_e4m3fn, float8_e5m2, int8, odd shapes, an empty tensor, scalars,
Hugging Face layer names; one file and a checkpoint of 3 shards with its
model.safetensors.index.json) and a GGUF model of Q4_0, Q8_0, Q4_K, Q5_K,
Q6_K, F16, BF16 and F32 tensors (tests/python/test_models.py's
write_quant_gguf) go into an ext4 image (mke2fs -d) on emu:. gpuos loads
every tensor into VRAM; through gpuos.to_torch (DLPack, no copy) each must
be torch.equal to safetensors.torch.load_file(device="cuda")'s, of its
dtype and shape (float8 compared as bytes: torch.equal has no float8
kernel); whether this torch's DLPack import takes float8 itself is printed.
The GGUF tensors, dequantised by load(dtype=torch.float16 / bfloat16 /
float32) on the GPU, into new VRAM and into a torch tensor passed as out=,
must hold tests/tools/quant_ref.py's values bit for bit (a difference is
printed with its count and the first element).

As docs/embedding.md asks: import gpuos first, torch's CUDA up before the
runtime, every torch kernel (load_file's copies, the comparisons) inside
`with sys.parked()`; loads run beside the running runtime.

One line per check, "ok ..." or "FAIL ..."; exit 1 on any failure, 77
(skipped, the reason printed) without PyTorch, the safetensors package, a
GPU or mke2fs.
"""
import faulthandler
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
os.environ.setdefault("GPUOS_LIBRARY", os.path.join(build, "lib", "libgpuos.so"))
sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))

faulthandler.dump_traceback_later(int(os.environ.get("GPUOS_PY_TIMEOUT", "270")), exit=True)

import gpuos  # noqa: E402  - first: it sets CUDA_MODULE_LOADING=EAGER before CUDA starts

try:
    import torch
except ImportError as e:
    print("skip: no PyTorch (%s)" % e)
    sys.exit(SKIP)
try:
    import safetensors.torch as st
except ImportError as e:
    print("skip: no safetensors package (%s)" % e)
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("skip: PyTorch sees no GPU")
    sys.exit(SKIP)
if not shutil.which("mke2fs"):
    print("skip: no mke2fs to make the image")
    sys.exit(SKIP)
torch.zeros(1, device="cuda")       # torch's CUDA up (its modules loaded eagerly) before the runtime

from test_models import write_quant_gguf, ref_bits, QUANT_TYPES  # noqa: E402

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


F8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def tensors(seed):
    """What save_file writes: name -> CPU tensor."""
    g = torch.Generator().manual_seed(seed)

    def rnd(shape, dtype, scale=1.0):
        return (torch.randn(shape, generator=g) * scale).to(dtype)

    ts = {
        "model.embed_tokens.weight": rnd((96, 64), torch.bfloat16),
        "model.norm.weight": rnd((64,), torch.float32),
        "lm_head.weight": rnd((96, 64), torch.float16),
        "odd.f32": rnd((3, 5, 7), torch.float32, 1e3),
        "odd.f16": rnd((1001,), torch.float16),
        "odd.bf16.4d": rnd((2, 1, 3, 5), torch.bfloat16),
        "odd.i8": torch.randint(-128, 128, (1, 1, 13, 3), generator=g, dtype=torch.int8),
        "odd.e4m3": rnd((31, 7), torch.float8_e4m3fn, 50.0),     # within +-448: no NaN
        "odd.e5m2": rnd((4, 4, 4, 4), torch.float8_e5m2, 1e3),
        "empty.bf16": torch.empty((0, 8), dtype=torch.bfloat16),
        "scalar.f32": torch.tensor(3.25, dtype=torch.float32),
        "scalar.i8": torch.tensor(-7, dtype=torch.int8),
    }
    for L in range(3):
        ts["model.layers.%d.self_attn.q_proj.weight" % L] = rnd((64, 64), torch.bfloat16)
        ts["model.layers.%d.mlp.up_proj.weight" % L] = rnd((128, 64), torch.float8_e4m3fn, 20.0)
        ts["model.layers.%d.mlp.up_proj.weight_scale" % L] = rnd((), torch.float32)
        ts["model.layers.%d.mlp.down_proj.weight" % L] = rnd((64, 128), torch.float8_e5m2, 20.0)
        ts["model.layers.%d.input_layernorm.weight" % L] = rnd((64,), torch.float16)
    return ts


def same(x, r):
    """torch.equal, float8 as bytes (no float8 eq kernel); run parked."""
    if x.dtype != r.dtype or tuple(x.shape) != tuple(r.shape):
        return False
    if x.dtype in F8:
        return torch.equal(x.view(torch.uint8), r.view(torch.uint8))
    return torch.equal(x, r)


def check_model(s, m, refs, label):
    """m loaded whole into VRAM: dtype, shape, no copy, torch.equal to refs
    (name -> CUDA tensor of load_file); then layer 1 alone."""
    check(m.format == "safetensors" and sorted(m.names) == sorted(refs),
          "%s: open_model: format %s, %d tensors, the names save_file wrote" % (label, m.format, len(m.names)))
    bad = [t.name for t in m.tensors
           if t.dtype != str(refs[t.name].dtype)[6:] or t.shape != tuple(refs[t.name].shape)]
    check(not bad, "%s: every TensorInfo's dtype and shape as torch's%s" % (label, (": not " + ", ".join(bad[:4])) if bad else ""))
    ts = s.load(device="cuda")
    direct = None
    with s.parked():
        good, why = 0, []
        for n, t in ts.items():
            try:
                x = gpuos.to_torch(t)
                # an empty tensor has no bytes to be at: torch gives it data_ptr 0
                at = x.numel() == 0 or x.data_ptr() == t.ptr
                ok = isinstance(t, gpuos.CudaTensor) and x.is_cuda and at and same(x, refs[n])
                if not ok:
                    why.append("%s (%s %s at 0x%x)" % (n, x.dtype, tuple(x.shape), x.data_ptr()))
                good += ok
                if direct is None and x.dtype in F8:
                    try:
                        direct = torch.from_dlpack(t).dtype == x.dtype
                    except Exception as e:
                        direct = "%s: %s" % (type(e).__name__, e)
                del x
            except Exception as e:
                why.append("%s: %s: %s" % (n, type(e).__name__, e))
        torch.cuda.synchronize()
    check(good == len(refs), "%s: %d of %d tensors into VRAM, through DLPack at the loaded pointer, torch.equal "
          "to safetensors.torch.load_file(device='cuda')'s%s" % (label, good, len(refs),
                                                              ": " + "; ".join(why[:4]) if why else ""))
    if direct is not None:
        print("     (this torch's DLPack import %s float8: %s)" % (
            "takes" if direct is True else "refuses", "gpuos.to_torch used it" if direct is True else
            "gpuos.to_torch viewed the bytes as float8 (%s)" % direct))
    del ts
    lt = s.load(layer=1, device="cuda")
    want = sorted(n for n in refs if n.startswith("model.layers.1."))
    with s.parked():
        ok = sorted(lt) == want and all(same(gpuos.to_torch(t), refs[n]) for n, t in lt.items())
        torch.cuda.synchronize()
    check(ok, "%s: load(layer=1): the %d tensors of model.layers.1., equal" % (label, len(want)))
    del lt


def check_dequant(s, quant, path):
    m = s.open_model(path)
    names = [n for n in m.names if quant[n][0] in QUANT_TYPES]
    views = {torch.float32: (torch.int32, "float32"), torch.float16: (torch.int16, "float16"),
             torch.bfloat16: (torch.int16, "bfloat16")}
    mask = {"float32": 0xffffffff, "float16": 0xffff, "bfloat16": 0xffff}
    for dt, (iv, out) in views.items():
        try:
            ts = s.load(names, dtype=dt)
            bad = []
            with s.parked():
                for n in names:
                    x = torch.from_dlpack(ts[n])
                    if x.dtype != dt or tuple(x.shape) != tuple(reversed(quant[n][1])):
                        bad.append("%s: %s %s" % (n, x.dtype, tuple(x.shape)))
                        continue
                    got = [v & mask[out] for v in x.view(iv).reshape(-1).cpu().tolist()]
                    want = ref_bits(quant[n][0], quant[n][2], m[n].numel, out)
                    diff = [i for i in range(len(want)) if got[i] != want[i]]
                    if diff:
                        bad.append("%s (%s): %d of %d differ, the first %d: 0x%x, want 0x%x" % (
                            n, quant[n][0], len(diff), len(want), diff[0], got[diff[0]], want[diff[0]]))
                torch.cuda.synchronize()
            check(not bad, "load(%d tensors, dtype=%s) dequantised on the GPU: quant_ref.py's values bit for bit "
                  "(%s)%s" % (len(names), dt, ", ".join(sorted({quant[n][0] for n in names})),
                              ": " + "; ".join(bad[:3]) if bad else ""))
            del ts
        except Exception as e:
            fail_exc("load(dtype=%s)" % dt, e)
    # into the caller's own tensor, and into pinned host memory
    n = [x for x in names if quant[x][0] == "Q4_K"][0]
    try:
        with s.parked():
            buf = torch.full((m[n].numel,), float("nan"), dtype=torch.bfloat16, device="cuda")
            torch.cuda.synchronize()
        r = s.load(n, dtype=torch.bfloat16, out=buf)
        with s.parked():
            got = [v & 0xffff for v in buf.view(torch.int16).cpu().tolist()]
            torch.cuda.synchronize()
        check(r[n] is buf and got == ref_bits("Q4_K", quant[n][2], m[n].numel, "bfloat16"),
              "load(%s, dtype=torch.bfloat16, out=a torch CUDA tensor): into it, quant_ref's values" % n)
        h = s.load(n, dtype="float32", device="cpu")[n]
        got = h.reshape(-1).view("<u4").tolist()
        check(got == ref_bits("Q4_K", quant[n][2], m[n].numel, "float32"),
              "load(%s, dtype='float32', device='cpu'): dequantised on the GPU into pinned host memory" % n)
    except Exception as e:
        fail_exc("dequantised into the caller's memory", e)
    try:
        s.load("misc.i32", dtype=torch.float16)
        check(False, "an I32 tensor with dtype= raises")
    except ValueError as e:
        check("I32" in str(e), "an I32 tensor with dtype= raises ValueError naming it: %s" % e)


def main():
    lib = os.environ["GPUOS_LIBRARY"]
    if not check(os.path.exists(lib), "%s exists (make lib)" % lib):
        return
    print("     torch %s, safetensors %s, %s" % (torch.__version__, getattr(sys.modules.get("safetensors"), "__version__", "?"),
                                               torch.cuda.get_device_name(0)))
    tmp = tempfile.mkdtemp(prefix="gpuos-st.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "ckpt"))
        one = tensors(1)
        st.save_file(one, os.path.join(src, "model.safetensors"), metadata={"format": "pt"})
        shard = tensors(2)
        names = sorted(shard)
        wm = {}
        for k in range(3):
            fn = "model-%05d-of-00003.safetensors" % (k + 1)
            part = {n: shard[n] for n in names[k::3]}
            st.save_file(part, os.path.join(src, "ckpt", fn), metadata={"format": "pt"})
            wm.update({n: fn for n in part})
        with open(os.path.join(src, "ckpt", "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(t.numel() * t.element_size() for t in shard.values())},
                       "weight_map": dict(sorted(wm.items()))}, f, indent=2)
        quant = write_quant_gguf(os.path.join(src, "quant.gguf"))
        img = os.path.join(tmp, "disk.img")
        subprocess.check_call(["mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "32M"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s = gpuos.System(device="emu:" + img, host=False)
        try:
            check(s.gpu, "the runtime runs on the GPU (sm_%d)" % s.sm)
            with s.parked():
                ref1 = st.load_file(os.path.join(src, "model.safetensors"), device="cuda")
                ref2 = {}
                for fn in sorted(set(wm.values())):
                    ref2.update(st.load_file(os.path.join(src, "ckpt", fn), device="cuda"))
                torch.cuda.synchronize()
            for path, refs, label in (("/model.safetensors", ref1, "one file"),
                                      ("/ckpt/model.safetensors.index.json", ref2, "3 shards by index.json")):
                try:
                    m = s.open_model(path)
                    check_model(s, m, refs, label)
                    if label == "one file":
                        check(m.metadata == {"format": "pt"}, "the file's __metadata__: %r" % (m.metadata,))
                    else:
                        check(m.index and m.shards == 3, "an index of %d shards" % m.shards)
                except Exception as e:
                    fail_exc(label, e)
            try:
                check_dequant(s, quant, "/quant.gguf")
            except Exception as e:
                fail_exc("dequantised GGUF", e)
            with s.parked():
                del ref1, ref2
                gc.collect()
                torch.cuda.synchronize()
        finally:
            gc.collect()
            s.close()
        check(s.closed, "System closed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        fail_exc("safetensors_torch", e)
    faulthandler.cancel_dump_traceback_later()
    print("safetensors_torch: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
