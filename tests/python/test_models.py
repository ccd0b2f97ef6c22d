#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python binding on both model formats, in host mode (issue 33).

safetensors: files of tests/tools/safetensors_writer.py (its build(), with
random bytes: every dtype, odd shapes, a scalar, empty tensors,
__metadata__, Hugging Face layer names) and two sharded checkpoints (the
writer's own --checkpoint and one of random bytes) in an ext4 image on the
emulated controller. open_model of a file and of a
model.safetensors.index.json; every tensor's dtype, shape and bytes against
a reader of the format written here (json + numpy over the file's bytes,
nothing of gpuos); load by layer ("model.layers.N."); the DLPack codes of
bool, the unsigned types and float8.

GGUF: a model of Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16 and F32 tensors
(tests/tools/gguf_writer.py, rows of tests/tools/quant_ref.py's
random_row) loaded with dtype float32, float16 and bfloat16, every element
compared bit for bit with quant_ref.py's element-by-element dequantiser
(rounded to binary16 / bfloat16 to nearest even, as ggml does); out=;
the refusals.

A runtime that does not open the safetensors files, or a library without
gpuos_dequant, fails these tests: nothing here is skipped.

Run: GPUOS_LIBRARY=build/lib/libgpuos.so PYTHONPATH=apps/python python3 tests/python/test_models.py
(tests/emu/python.sh BUILD test_models.py does).
"""
import errno
import functools
import gc
import glob
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    np = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import gpuos  # noqa: E402
from gpuos import _tensor  # noqa: E402
import gguf_writer  # noqa: E402
import quant_ref  # noqa: E402
import safetensors_writer as stw  # noqa: E402

# ---- what the runtime can do yet --------------------------------------------------------


def header_declares_dequant():
    with open(os.path.join(ROOT, "include", "gpuos", "host.h")) as f:
        return "gpuos_dequant(" in f.read()


DEQ_DECLARED = header_declares_dequant()
ST_WHY = None       # setUpModule: None when the runtime opens a safetensors file, else its answer


def need_safetensors(test):
    @functools.wraps(test)
    def run(self):
        if ST_WHY is not None:
            self.fail("the runtime opens no safetensors file: %s" % ST_WHY)
        return test(self)
    return run


def need_dequant(test):
    @functools.wraps(test)
    def run(self):
        if not DEQ_DECLARED:
            self.fail("gpuos/host.h declares no gpuos_dequant")
        return test(self)
    return run


# ---- an independent safetensors reader ----------------------------------------------------

# safetensors dtype -> (numpy dtype of the bytes as gpuos hands them to numpy,
# DLPack (code, bits), the TensorInfo.dtype name)
ST_DTYPES = {
    "F64": ("<f8", (2, 64), "float64"), "F32": ("<f4", (2, 32), "float32"), "F16": ("<f2", (2, 16), "float16"),
    "BF16": ("<u2", (4, 16), "bfloat16"), "I64": ("<i8", (0, 64), "int64"), "I32": ("<i4", (0, 32), "int32"),
    "I16": ("<i2", (0, 16), "int16"), "I8": ("|i1", (0, 8), "int8"), "U64": ("<u8", (1, 64), "uint64"),
    "U32": ("<u4", (1, 32), "uint32"), "U16": ("<u2", (1, 16), "uint16"), "U8": ("|u1", (1, 8), "uint8"),
    "BOOL": ("|b1", (6, 8), "bool"), "F8_E4M3": ("|u1", (10, 8), "float8_e4m3fn"),
    "F8_E5M2": ("|u1", (12, 8), "float8_e5m2"),
}


def parse_safetensors(path):
    """{"n", "meta", "tensors": {name: (dtype, shape, abs_begin, abs_end)}} from
    the file: u64 N, N bytes of JSON, the data."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n).decode("utf-8"))
    meta = hdr.pop("__metadata__", None) or {}
    ts = {}
    for name, v in hdr.items():
        b, e = v["data_offsets"]
        ts[name] = (v["dtype"], tuple(v["shape"]), 8 + n + b, 8 + n + e)
    return {"n": n, "meta": meta, "tensors": ts}


def hf_layer(name):
    p = "model.layers."
    if not name.startswith(p):
        return None
    d = name[len(p):].split(".", 1)
    if len(d) == 2 and d[0].isdigit() and (d[0] == "0" or d[0][0] != "0"):
        return int(d[0])
    return None


def random_tensor(rng, name, dtype, shape):
    n = 1
    for d in shape:
        n *= d
    data = rng.randbytes(n * stw.DTYPES[dtype])
    if dtype == "BOOL":      # a bool is 0 or 1; other bytes are no bool of numpy's or torch's
        data = bytes(b & 1 for b in data)
    return stw.Tensor(name, dtype, shape, data)


def st_tensors(rng):
    """Every dtype in odd shapes, 1-D to 4-D, a scalar of three types, empty
    tensors, and a few Hugging Face layer names."""
    ts = []
    shapes = [[7], [3, 5], [2, 3, 4], [2, 1, 3, 2], [1], [33, 3]]
    for i, dt in enumerate(sorted(stw.DTYPES)):
        ts.append(random_tensor(rng, "t.%s" % dt.lower(), dt, shapes[i % len(shapes)]))
    ts += [random_tensor(rng, "scalar.f32", "F32", []), random_tensor(rng, "scalar.bf16", "BF16", []),
           random_tensor(rng, "scalar.f8", "F8_E4M3", []), random_tensor(rng, "empty.f16", "F16", [0]),
           random_tensor(rng, "empty.i64", "I64", [3, 0, 2])]
    for L in range(3):
        for part, dt, shape in (("self_attn.q_proj.weight", "BF16", [16, 8]), ("mlp.up_proj.weight", "F8_E4M3", [24, 8]),
                                ("input_layernorm.weight", "F32", [8])):
            ts.append(random_tensor(rng, "model.layers.%d.%s" % (L, part), dt, shape))
    ts.append(random_tensor(rng, "model.embed_tokens.weight", "BF16", [32, 8]))
    ts.append(random_tensor(rng, "model.layers.10.mlp.down_proj.weight", "F16", [8, 24]))
    return ts


def write_checkpoint(outdir, tensors, shards, meta=None):
    """A sharded checkpoint in transformers' layout: model-0000K-of-0000S.safetensors
    and model.safetensors.index.json ({"metadata": {"total_size"},
    "weight_map": {name: file}}), the weight map in name order."""
    os.makedirs(outdir, exist_ok=True)
    per = -(-len(tensors) // shards)
    wm, total = {}, 0
    for k in range(shards):
        part = tensors[k * per:(k + 1) * per]
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
        with open(os.path.join(outdir, fn), "wb") as f:
            f.write(stw.build(part, meta))
        for t in part:
            wm[t.name] = fn
            total += t.nbytes
    with open(os.path.join(outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))}, f, indent=2)


def index_files(path):
    """The shard files of an index.json in the order its weight_map first
    names them (the runtime's shard numbers), and the weight map."""
    with open(path) as f:
        wm = json.load(f)["weight_map"]
    files = []
    for fn in wm.values():
        if fn not in files:
            files.append(fn)
    return files, wm


# ---- a quantised GGUF model ---------------------------------------------------------------

QUANT_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16", "F32")
_QR = {n: getattr(quant_ref, n) for n in QUANT_TYPES}


def write_quant_gguf(path, seed=11, layers=2, width=512):
    """blk.N.<type> tensors of every type of QUANT_TYPES, [width, 3] (ne
    order), their bytes random rows of quant_ref (finite scales), an I32
    tensor and an F16 tensor of odd shape. Returns {name: (type name, ne,
    bytes)}."""
    rng = random.Random(seed)
    spec = gguf_writer.Spec()
    spec.alignment = 32
    spec.kvs = [("general.architecture", "string", "llama")]
    out = {}
    for L in range(layers):
        for tn in QUANT_TYPES:
            ne = [width, 3] if L == 0 else [256, 2, 2]
            n = ne[0] * ne[1] * (ne[2] if len(ne) > 2 else 1)
            row = quant_ref.random_row(rng, _QR[tn], n)
            name = "blk.%d.%s" % (L, tn.lower())
            t = gguf_writer.Tensor(name, tn, ne)
            t.data = row
            spec.tensors.append(t)
            out[name] = (tn, tuple(ne), row)
    i32 = struct.pack("<6i", *[rng.randrange(-1000, 1000) for _ in range(6)])
    t = gguf_writer.Tensor("misc.i32", "I32", [3, 2])
    t.data = i32
    spec.tensors.append(t)
    out["misc.i32"] = ("I32", (3, 2), i32)
    odd = struct.pack("<35H", *[quant_ref.f2h(rng.gauss(0, 2)) for _ in range(35)])
    t = gguf_writer.Tensor("misc.f16", "F16", [7, 5])
    t.data = odd
    spec.tensors.append(t)
    out["misc.f16"] = ("F16", (7, 5), odd)
    q81 = rng.randbytes(2 * 36)         # Q8_1: no dequantiser (llama.cpp's activations type)
    t = gguf_writer.Tensor("misc.q8_1", "Q8_1", [64, 1])
    t.data = q81
    spec.tensors.append(t)
    out["misc.q8_1"] = ("Q8_1", (64, 1), q81)
    gguf_writer.build(spec, path, seed=seed)
    return out


_QNAN = {"float32": 0x7fc00000, "float16": 0x7e00, "bfloat16": 0x7fc0}


def ref_bits(type_name, data, n, out):
    """Element by element, as bit patterns: quant_ref's dequantised float32
    values, or those rounded to binary16 / bfloat16 (nearest even); a NaN
    as the output's quiet NaN (gpuos/host.h, gpuos_dequant)."""
    enc = {"float32": quant_ref.f2u, "float16": quant_ref.f2h, "bfloat16": quant_ref.f2bf}[out]
    return [_QNAN[out] if math.isnan(v) else enc(v) for v in quant_ref.dequant(_QR[type_name], data, n)]


def got_bits(arr, out):
    a = np.ascontiguousarray(arr).reshape(-1)
    return a.view(np.uint32 if out == "float32" else np.uint16).tolist()


def first_difference(got, want):
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    if not bad:
        return None
    i = bad[0]
    return "%d of %d elements differ; the first, %d: 0x%x, want 0x%x" % (len(bad), len(want), i, got[i], want[i])


# ---- the data ------------------------------------------------------------------------------

TMP = IMG = None
ST = {}             # path in the image -> (host file, parse_safetensors)
QUANT = None        # write_quant_gguf's answer
QUANT_PATH = "/models/quant.gguf"
CKPTS = {}          # index path in the image -> host dir
EXTRA_FILES = {}    # path in the image -> bytes: files a module importing this one adds (test_connect.py)


def setUpModule():
    global TMP, IMG, QUANT
    if np is None:
        raise AssertionError("numpy is missing for %s: install python3-numpy (scripts/deps.sh)" % sys.executable)
    if not shutil.which("mke2fs"):
        raise AssertionError("mke2fs is missing: install e2fsprogs")
    TMP = tempfile.mkdtemp(prefix="gpuos-pym.")
    src = os.path.join(TMP, "src")
    os.makedirs(os.path.join(src, "models", "st"))
    rng = random.Random(33)
    files = {
        "all.safetensors": (st_tensors(rng), {"format": "pt", "caf\u00e9": "\u65e5\u672c"}),
        "nometa.safetensors": ([random_tensor(rng, "w", "F32", [4, 4]), random_tensor(rng, "b", "I8", [9])], None),
    }
    for fn, (ts, meta) in files.items():
        p = os.path.join(src, "models", "st", fn)
        with open(p, "wb") as f:
            f.write(stw.build(ts, meta))
        ST["/models/st/" + fn] = (p, parse_safetensors(p))
    for case in ("empty-scalar", "header-order", "escapes", "layers"):
        blob, _ = stw.make(case, seed=3)
        p = os.path.join(src, "models", "st", case + ".safetensors")
        with open(p, "wb") as f:
            f.write(blob)
        ST["/models/st/%s.safetensors" % case] = (p, parse_safetensors(p))
    # the writer's own checkpoint, and one of random bytes in 3 shards
    stw.checkpoint(os.path.join(src, "models", "ckpt"))
    for d in glob.glob(os.path.join(src, "models", "ckpt", "*.desc")):
        os.remove(d)
    CKPTS["/models/ckpt/model.safetensors.index.json"] = os.path.join(src, "models", "ckpt")
    ts = st_tensors(random.Random(34))
    random.Random(35).shuffle(ts)
    write_checkpoint(os.path.join(src, "models", "hf"), ts, 3, {"format": "pt"})
    CKPTS["/models/hf/model.safetensors.index.json"] = os.path.join(src, "models", "hf")
    QUANT = write_quant_gguf(os.path.join(src, "models", "quant.gguf"))
    extra = 0
    for path, blob in EXTRA_FILES.items():
        p = os.path.join(src, path.lstrip("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(blob)
        extra += len(blob)
    IMG = os.path.join(TMP, "disk.img")
    subprocess.check_call(["mke2fs", "-q", "-F", "-t", "ext4", "-d", src, IMG, "%dM" % (32 + extra * 5 // 4 // (1 << 20))],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    global ST_WHY
    with gpuos.System(device="emu:" + IMG, host=True) as s:
        try:
            s.open_model("/models/st/nometa.safetensors")
        except gpuos.Error as e:
            if "not a GGUF" not in str(e):
                raise
            ST_WHY = str(e)


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def file_bytes(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


class Booted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sys = gpuos.System(device="emu:" + IMG, host=True)

    @classmethod
    def tearDownClass(cls):
        cls.sys.close()


# ---- safetensors ----------------------------------------------------------------------------

class T1Safetensors(Booted):
    def check_info(self, t, ref, label):
        dt, shape, b, e = ref
        self.assertEqual(t.type, dt, label)
        self.assertEqual(t.shape, shape, label)
        self.assertEqual(t.n_dims, len(shape), label)
        self.assertEqual(t.nbytes, e - b, label)
        self.assertEqual(t.dtype, ST_DTYPES[dt][2], label)
        self.assertEqual(t.layer, hf_layer(t.name), label)
        self.assertFalse(t.quantised, label)

    def check_array(self, arr, ref, host_file, label):
        dt, shape, b, e = ref
        self.assertIsInstance(arr, np.ndarray, label)
        self.assertEqual(arr.dtype, np.dtype(ST_DTYPES[dt][0]), label)
        self.assertEqual(arr.shape, shape, label)
        self.assertEqual(arr.nbytes, e - b, label)
        want = file_bytes(host_file, b, e - b)
        self.assertEqual(arr.tobytes(), want, label)
        ref_arr = np.frombuffer(want, dtype=ST_DTYPES[dt][0]).reshape(shape)
        self.assertTrue(np.array_equal(arr, ref_arr, equal_nan=arr.dtype.kind == "f"), label)

    @need_safetensors
    def test_files(self):
        for path, (host, ref) in ST.items():
            m = self.sys.open_model(path)
            self.assertEqual(m.format, "safetensors", path)
            self.assertFalse(m.index, path)
            self.assertEqual(m.version, 0, path)
            self.assertEqual(m.data_offset, 8 + ref["n"], path)
            self.assertEqual(m.shards, 1, path)
            self.assertEqual(sorted(m.names), sorted(ref["tensors"]), path)
            self.assertEqual(len(set(m.names)), len(m.names), path)
            self.assertEqual(m.metadata, ref["meta"], path)
            for t in m.tensors:
                self.check_info(t, ref["tensors"][t.name], "%s %s" % (path, t.name))
                self.assertEqual(t.offset, ref["tensors"][t.name][2], t.name)
                self.assertEqual(t.shard, 0, t.name)
            ts = m.load(device="cpu")
            self.assertEqual(list(ts), m.names, path)
            for name, arr in ts.items():
                self.check_array(arr, ref["tensors"][name], host, "%s %s" % (path, name))

    @need_safetensors
    def test_every_dtype_and_odd_shapes(self):
        m = self.sys.open_model("/models/st/all.safetensors")
        self.assertEqual({t.type for t in m.tensors}, set(stw.DTYPES))
        ts = self.sys.load(["scalar.f32", "scalar.f8", "empty.f16", "empty.i64", "t.bool", "t.f8_e5m2"])
        self.assertEqual(ts["scalar.f32"].shape, ())
        self.assertEqual(ts["scalar.f8"].shape, ())
        self.assertEqual(ts["empty.f16"].shape, (0,))
        self.assertEqual(ts["empty.i64"].shape, (3, 0, 2))
        self.assertEqual(m["empty.i64"].nbytes, 0)
        self.assertEqual(ts["t.bool"].dtype, np.bool_)
        host, ref = ST["/models/st/all.safetensors"]
        for n, a in ts.items():
            self.check_array(a, ref["tensors"][n], host, n)
        # empty tensors alone: no bytes asked of the runtime
        e = self.sys.load(["empty.f16", "empty.i64"])
        self.assertEqual([a.size for a in e.values()], [0, 0])

    @need_safetensors
    def test_layers(self):
        for path in ("/models/st/all.safetensors", "/models/st/layers.safetensors"):
            m = self.sys.open_model(path)
            ref = ST[path][1]["tensors"]
            want = {}
            for n in ref:
                if hf_layer(n) is not None:
                    want.setdefault(hf_layer(n), set()).add(n)
            self.assertEqual({k: set(v) for k, v in m.layers.items()}, want, path)
            self.assertEqual(m.n_layers, max(want) + 1, path)
            for L in sorted(want):
                ts = self.sys.load(layer=L, model=path, device="cpu")
                self.assertEqual(list(ts), m.layers[L], path)
                for n, a in ts.items():
                    self.check_array(a, ref[n], ST[path][0], n)
            with self.assertRaises(gpuos.Error):
                m.load(layer=m.n_layers + 3)

    @need_safetensors
    def test_index(self):
        for path, d in CKPTS.items():
            files, wm = index_files(os.path.join(d, "model.safetensors.index.json"))
            m = self.sys.open_model(path)
            self.assertEqual(m.format, "safetensors", path)
            self.assertTrue(m.index, path)
            self.assertEqual(m.shards, len(files), path)
            self.assertEqual(sorted(m.names), sorted(wm), path)
            refs = {fn: parse_safetensors(os.path.join(d, fn)) for fn in files}
            for t in m.tensors:
                fn = wm[t.name]
                self.assertEqual(t.shard, files.index(fn), t.name)
                r = refs[fn]["tensors"][t.name]
                self.check_info(t, r, t.name)
                self.assertEqual(t.offset, r[2], t.name)
            ts = m.load(device="cpu")
            for n, a in ts.items():
                self.check_array(a, refs[wm[n]]["tensors"][n], os.path.join(d, wm[n]), n)
            for L in sorted(m.layers):      # a layer whose tensors lie in several shards
                lt = self.sys.load(layer=L, model=path)
                self.assertEqual(set(lt), {n for n in wm if hf_layer(n) == L})

    @need_safetensors
    def test_dlpack_codes(self):
        self.sys.open_model("/models/st/all.safetensors")
        names = ["t.bool", "t.u16", "t.u64", "t.f8_e4m3", "t.f8_e5m2", "t.bf16", "scalar.f8"]
        ts = self.sys.load(names)
        for n in names:
            dt = self.sys._model[n].type
            ht = ts[n].base
            self.assertIsInstance(ht, gpuos.HostTensor)
            cap = ht.__dlpack__()
            t, shape = read_capsule(cap)
            self.assertEqual((t.dtype.code, t.dtype.bits, t.dtype.lanes), ST_DTYPES[dt][1] + (1,), n)
            self.assertEqual(shape, ts[n].shape, n)
            del cap
            u8 = ht.uint8_view()
            cap = u8.__dlpack__()
            t, shape = read_capsule(cap)
            self.assertEqual((t.dtype.code, t.dtype.bits), (1, 8), n)
            self.assertEqual(bytes(u8), ts[n].tobytes(), n)
            del cap
        if np.lib.NumpyVersion(np.__version__) >= "2.0.0":     # numpy 1.x's DLPack has no bool
            b = np.from_dlpack(ts["t.bool"].base)
            self.assertEqual(b.dtype, np.bool_)
            self.assertTrue(np.array_equal(b, ts["t.bool"]))

    @need_safetensors
    def test_refusals(self):
        self.sys.open_model("/models/st/all.safetensors")
        for name, dt in (("t.i32", "I32"), ("t.f8_e4m3", "F8_E4M3"), ("t.bool", "BOOL"), ("t.f64", "F64")):
            with self.assertRaises(ValueError) as cm:
                self.sys.load(name, dtype="float32")
            self.assertIn(dt, str(cm.exception))
        with self.assertRaises(gpuos.Error) as cm:
            self.sys.load(["t.f32", "model.layers.99.x"])
        self.assertEqual(cm.exception.errno, errno.ENOENT)

    @need_safetensors
    @need_dequant
    def test_float_conversions(self):
        m = self.sys.open_model("/models/st/all.safetensors")
        host, ref = ST["/models/st/all.safetensors"]
        names = [n for n in m.names if m[n].type in ("F16", "BF16", "F32")]
        qr = {"F16": "F16", "BF16": "BF16", "F32": "F32"}
        for out in ("float32", "float16", "bfloat16"):
            ts = self.sys.load(names, dtype=out)
            for n in names:
                dt, shape, b, e = ref["tensors"][n]
                raw = file_bytes(host, b, e - b)
                if ST_DTYPES[dt][2] == out:     # already that type: loaded as it is, NaNs untouched
                    want = list(struct.unpack("<%d%s" % (len(raw) // stw.DTYPES[dt], "I" if dt == "F32" else "H"),
                                              raw))
                else:
                    want = ref_bits(qr[dt], raw, (e - b) // stw.DTYPES[dt], out)
                self.assertEqual(ts[n].shape, shape, n)
                diff = first_difference(got_bits(ts[n], out), want)
                self.assertIsNone(diff, "%s %s to %s: %s" % (n, dt, out, diff))


def read_capsule(cap):
    import ctypes
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    mt = _tensor.DLManagedTensor.from_address(get(cap, b"dltensor"))
    t = mt.dl_tensor
    return t, tuple(t.shape[i] for i in range(t.ndim))


# ---- GGUF, dequantised ------------------------------------------------------------------------

class T2Dequant(Booted):
    def test_tables(self):
        m = self.sys.open_model(QUANT_PATH)
        self.assertEqual(m.format, "gguf")
        self.assertEqual(m.metadata, {})
        for name, (tn, ne, data) in QUANT.items():
            t = m[name]
            self.assertEqual(t.type, tn)
            self.assertEqual(t.ne, ne)
            self.assertEqual(t.nbytes, len(data))
            self.assertEqual(t.dtype, {"F16": "float16", "BF16": "bfloat16", "F32": "float32",
                                       "I32": "int32"}.get(tn, "uint8"))
            self.assertEqual(t.quantised, tn not in ("F16", "BF16", "F32", "I32"))
            n = 1
            for d in ne:
                n *= d
            self.assertEqual(t.numel, n)
        ts = m.load(device="cpu")
        for name, (tn, ne, data) in QUANT.items():
            self.assertEqual(ts[name].tobytes(), data, name)

    @need_dequant
    def test_every_type_every_dtype(self):
        m = self.sys.open_model(QUANT_PATH)
        names = [n for n in m.names if QUANT[n][0] in QUANT_TYPES]      # misc.f16 of shape [7, 5] too
        np_dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}
        for out, given in (("float32", "float32"), ("float16", np.float16), ("bfloat16", "bfloat16")):
            ts = self.sys.load(names, dtype=given)
            self.assertEqual(list(ts), names)
            for n in names:
                tn, ne, data = QUANT[n]
                numel = m[n].numel
                a = ts[n]
                self.assertEqual(a.dtype, np_dtype[out], n)
                self.assertEqual(a.shape, tuple(reversed(ne)), n)
                self.assertEqual(a.ctypes.data % gpuos.ALIGN, 0, n)
                diff = first_difference(got_bits(a, out), ref_bits(tn, data, numel, out))
                self.assertIsNone(diff, "%s (%s) as %s: %s" % (n, tn, out, diff))

    @need_dequant
    def test_layer_and_out(self):
        m = self.sys.open_model(QUANT_PATH)
        ts = self.sys.load(layer=1, dtype="float16")
        self.assertEqual(list(ts), m.layers[1])
        n = "blk.0.q4_k"
        tn, ne, data = QUANT[n]
        want = ref_bits(tn, data, m[n].numel, "float32")
        # into the caller's memory: one array, and a dict of several
        dst = np.full(tuple(reversed(ne)), np.nan, dtype=np.float32)
        got = self.sys.load(n, dtype="float32", out=dst)
        self.assertIs(got[n], dst)
        self.assertIsNone(first_difference(got_bits(dst, "float32"), want))
        dst2 = np.zeros(m[n].numel, dtype=np.float32)      # same count, another shape: taken
        self.sys.load([n], out=dst2)                         # dtype from out=
        self.assertIsNone(first_difference(got_bits(dst2, "float32"), want))
        outs = {"blk.0.q8_0": np.zeros(m["blk.0.q8_0"].numel, np.float16),
                "blk.0.bf16": np.zeros(m["blk.0.bf16"].numel, np.uint16)}
        got = self.sys.load(list(outs) + ["blk.0.q6_k"], out=outs)
        self.assertEqual(got["blk.0.q6_k"].dtype, np.uint8)    # no out=, no dtype: as it is
        self.assertEqual(got["blk.0.q6_k"].tobytes(), QUANT["blk.0.q6_k"][2])
        for k, v in outs.items():
            self.assertIs(got[k], v)
            out = "float16" if v.dtype == np.float16 else "bfloat16"
            self.assertIsNone(first_difference(got_bits(v, out), ref_bits(QUANT[k][0], QUANT[k][2],
                                                                        m[k].numel, out)), k)
        # out= of the tensor's own type: copied (host mode)
        own = np.zeros(m["misc.f16"].numel, np.float16)
        self.sys.load("misc.f16", out=own)
        self.assertEqual(own.tobytes(), QUANT["misc.f16"][2])

    def test_refusals(self):
        m = self.sys.open_model(QUANT_PATH)
        with self.assertRaises(ValueError) as cm:
            self.sys.load("misc.i32", dtype="float32")
        self.assertIn("I32", str(cm.exception))
        for bad in ("float64", "int8", np.int32, "q4_0"):
            with self.assertRaises(ValueError):
                self.sys.load("blk.0.q4_0", dtype=bad)
        n = "blk.0.q4_0"
        for out, why in ((np.zeros(m[n].numel + 1, np.float32), "elements"),
                         (np.zeros(m[n].numel, np.float64), "float32, float16 or bfloat16"),
                         (np.zeros((m[n].numel, 2), np.float32)[:, 0], "contiguous")):
            with self.assertRaises(ValueError) as cm:
                self.sys.load(n, out=out)
            self.assertIn(why, str(cm.exception))
        with self.assertRaises(ValueError):
            self.sys.load(n, dtype="float16", out=np.zeros(m[n].numel, np.float32))
        with self.assertRaises(ValueError):
            self.sys.load([n, "blk.0.q8_0"], out=np.zeros(m[n].numel, np.float32))
        with self.assertRaises(ValueError):
            self.sys.load([n], out={"blk.1.q8_0": np.zeros(4, np.float32)})
        with self.assertRaises(TypeError):
            self.sys.load(n, out=[0.0] * m[n].numel)
        gc.collect()
        # nothing leaked: more loads than registered regions still work
        for _ in range(gpuos.GPUOS_SYS_USER_REGIONS + 2):
            self.assertEqual(self.sys.load(n)[n].tobytes(), QUANT[n][2])

    @need_dequant
    def test_no_dequantiser(self):
        with self.assertRaises(ValueError) as cm:
            self.sys.load("misc.q8_1", dtype="float16")
        self.assertIn("Q8_1", str(cm.exception))
        self.assertEqual(self.sys.load("misc.q8_1")["misc.q8_1"].tobytes(), QUANT["misc.q8_1"][2])

    @need_dequant
    def test_library_has_dequant(self):
        self.assertIsNotNone(gpuos.optional("gpuos_dequant"),
                             "gpuos/host.h declares gpuos_dequant, %s has none" % gpuos.library_path())

    @need_dequant
    def test_scratch_freed(self):
        self.sys.open_model(QUANT_PATH)
        for i in range(2 * gpuos.GPUOS_SYS_USER_REGIONS):
            ts = self.sys.load(layer=i % 2, dtype="bfloat16")
            self.assertEqual(len(ts), len(QUANT_TYPES))
            del ts


if __name__ == "__main__":
    unittest.main(verbosity=2)
