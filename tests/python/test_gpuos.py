#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python binding (apps/python/gpuos) in host mode, against its own data.

A GGUF model of every ggml and KV type (tests/tools/gguf_writer.py, case
all-v3, its data section then overwritten with random bytes so that every
byte of every tensor is distinct from its neighbours), a llama-shaped
model of two layers (case demo, MiB-sized tensors) and a file of random
bytes go into an ext4 image; gpuos.System(device="emu:IMG", host=True)
serves it. What the binding reports is compared with a GGUF reader written
here, what it loads with the file's bytes.

Run: GPUOS_LIBRARY=build/lib/libgpuos.so PYTHONPATH=apps/python python3 tests/python/test_gpuos.py
(tests/emu/python.sh does). numpy is required: without it every test fails.
"""
import ctypes
import errno
import gc
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
import gpuos  # noqa: E402
from gpuos import _tensor  # noqa: E402

STR_MAX = 65536     # GPUOS_GGUF_STR_MAX: bytes of a string the runtime keeps
ARR_ITEMS = 16      # GPUOS_GGUF_ARR_ITEMS

# ---- an independent GGUF reader (ggml docs/gguf.md) ---------------------------------

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
           12: "<d"}
_ELEM = {0: "<f4", 1: "<f2", 30: "<u2", 24: "<i1", 25: "<i2", 26: "<i4", 27: "<i8", 28: "<f8"}


class Reader(object):
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def value(self, t):
        """A KV value: scalars and strings as values, arrays as
        ("array", count, first ARR_ITEMS items or None when nested)."""
        if t in _SCALAR:
            return self.take(_SCALAR[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.value(et) for _ in range(n)]
            return ("array", n, None if et == 9 else items[:ARR_ITEMS])
        raise ValueError("KV type %d" % t)


def parse_gguf(path):
    """{version, alignment, data_offset, kv: {key: value}, tensors: [(name,
    dims, type, rel_offset)]} read from the file's bytes."""
    with open(path, "rb") as f:
        r = Reader(f.read())
    assert r.take("<I") == 0x46554747, "GGUF magic"
    version = r.take("<I")
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string().decode("utf-8")
        kv[key] = r.value(r.take("<I"))
    tensors = []
    for _ in range(n_t):
        name = r.string().decode("utf-8")
        nd = r.take("<I")
        dims = [r.take("<Q") for _ in range(nd)]
        tensors.append((name, dims, r.take("<I"), r.take("<Q")))
    align = kv.get("general.alignment", 32)
    data_offset = (r.p + align - 1) // align * align
    return {"version": version, "alignment": align, "data_offset": data_offset, "kv": kv, "tensors": tensors}


def layer_of(name):
    parts = name.split(".")
    if len(parts) >= 3 and parts[0] == "blk" and parts[1].isdigit():
        return int(parts[1])
    return None


# ---- the data ------------------------------------------------------------------------

TMP = None
IMG = None
MODELS = {}         # path in the image -> {"file", "ref" (parse_gguf), "size" (name -> bytes)}
RAND = None         # the random file's bytes
RAND_PATH = "/data/rand.bin"


def setUpModule():
    global TMP, IMG, RAND
    if np is None:
        raise AssertionError("numpy is missing for %s: install python3-numpy (scripts/deps.sh)"
                             % sys.executable)
    if not shutil.which("mke2fs"):
        raise AssertionError("mke2fs is missing: install e2fsprogs")
    TMP = tempfile.mkdtemp(prefix="gpuos-py.")
    src = os.path.join(TMP, "src")
    os.makedirs(os.path.join(src, "models"))
    os.makedirs(os.path.join(src, "data"))
    writer = os.path.join(ROOT, "tests", "tools", "gguf_writer.py")
    rng = random.Random(7)
    for name, args in (("all.gguf", ["--case", "all-v3"]), ("demo.gguf", ["--case", "demo", "--layers", "2"])):
        out = os.path.join(src, "models", name)
        js = os.path.join(TMP, name + ".json")
        subprocess.check_call([sys.executable, writer] + args + [out, "--json", js, "--seed", "5"],
                              stdout=subprocess.DEVNULL)
        ref = parse_gguf(out)
        if name == "all.gguf":
            # every byte of the data section random (the writer's pattern
            # repeats every 256 bytes, which a misplaced piece could match)
            size = os.path.getsize(out)
            with open(out, "r+b") as f:
                f.seek(ref["data_offset"])
                f.write(rng.randbytes(size - ref["data_offset"]))
        with open(js) as f:
            desc = json.load(f)
        MODELS["/models/" + name] = {"file": out, "ref": ref,
                                      "size": {t["name"]: t["byte_size"] for t in desc["tensors"]}}
    RAND = rng.randbytes((3 << 20) + 12345)
    with open(os.path.join(src, "data", "rand.bin"), "wb") as f:
        f.write(RAND)
    IMG = os.path.join(TMP, "disk.img")
    subprocess.check_call(["mke2fs", "-q", "-F", "-t", "ext4", "-d", src, IMG, "64M"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def file_bytes(model, offset, n):
    with open(MODELS[model]["file"], "rb") as f:
        f.seek(offset)
        return f.read(n)


class Booted(unittest.TestCase):
    """A runtime on the image for the class's tests."""

    @classmethod
    def setUpClass(cls):
        cls.sys = gpuos.System(device="emu:" + IMG, host=True)

    @classmethod
    def tearDownClass(cls):
        cls.sys.close()


# ---- tests -----------------------------------------------------------------------------

class T0Setup(unittest.TestCase):
    def test_numpy_present(self):
        self.assertIsNotNone(np, "numpy is missing: install python3-numpy")

    def test_struct_size_check(self):
        n = gpuos.check_abi()
        self.assertEqual(n, ctypes.sizeof(gpuos.BootOpts))
        # what the library writes into the size field of a zeroed buffer
        buf = ctypes.create_string_buffer(4096)
        gpuos.lib().gpuos_boot_opts_default(buf)
        self.assertEqual(ctypes.c_size_t.from_buffer(buf, 0).value, ctypes.sizeof(gpuos.BootOpts))

    def test_unknown_option(self):
        with self.assertRaises(TypeError):
            gpuos.System(device="emu:" + IMG, host=True, no_such_option=1)
        with self.assertRaises(TypeError):
            gpuos.System(device="emu:" + IMG, host=True, warps="2")

    def test_cuda_module_loading(self):
        self.assertEqual(os.environ.get("CUDA_MODULE_LOADING"), "EAGER")
        self.assertGreaterEqual(int(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")), 32)

    def test_boot_failure(self):
        with self.assertRaises(gpuos.Error) as cm:
            gpuos.System(device="emu:" + os.path.join(TMP, "no-such.img"), host=True)
        self.assertGreater(cm.exception.errno, 0)
        self.assertTrue(str(cm.exception))


class T1Tables(Booted):
    def test_runs_in_host_mode(self):
        self.assertFalse(self.sys.gpu)
        self.assertEqual(self.sys.sm, 0)

    def check_model(self, path):
        m = self.sys.open_model(path)
        ref = MODELS[path]["ref"]
        self.assertEqual(m.version, ref["version"])
        self.assertEqual(m.alignment, ref["alignment"])
        self.assertEqual(m.data_offset, ref["data_offset"])
        self.assertEqual(m.names, [t[0] for t in ref["tensors"]])
        layers = {}
        for (name, dims, tid, rel), t in zip(ref["tensors"], m.tensors):
            self.assertEqual(t.name, name)
            self.assertEqual(t.type_id, tid, name)
            self.assertEqual(t.type, gpuos.GGML_TYPES[tid], name)
            self.assertEqual(t.nbytes, MODELS[path]["size"][name], name)
            self.assertEqual(t.offset, ref["data_offset"] + rel, name)
            self.assertEqual(t.layer, layer_of(name), name)
            if tid in _ELEM:
                self.assertEqual(t.shape, tuple(reversed(dims)), name)
            else:
                self.assertEqual(t.shape, (MODELS[path]["size"][name],), name)
            if layer_of(name) is not None:
                layers.setdefault(layer_of(name), []).append(name)
        self.assertEqual(m.layers, layers)
        self.assertEqual(m.n_layers, max(layers) + 1 if layers else 0)
        return m

    def test_all_types_model(self):
        m = self.check_model("/models/all.gguf")
        types = {t.type for t in m.tensors}
        for want in ("F32", "F16", "BF16", "I8", "I16", "I32", "I64", "F64", "Q4_K", "Q8_0", "Q6_K"):
            self.assertIn(want, types)
        self.assertEqual(m["type.f16"].type, "F16")

    def test_demo_model(self):
        self.check_model("/models/demo.gguf")

    def test_kv(self):
        m = self.sys.open_model("/models/all.gguf")
        ref = MODELS["/models/all.gguf"]["ref"]["kv"]
        self.assertEqual(set(m.kv), set(ref))
        for key, want in ref.items():
            got = m.kv[key]
            if isinstance(want, tuple):                 # an array
                self.assertIsInstance(got, gpuos.KVArray, key)
                self.assertEqual(got.count, want[1], key)
                if want[2] is None:                     # nested: items kept are arrays
                    self.assertEqual(len(got), min(want[1], ARR_ITEMS), key)
                    continue
                self.assertEqual(len(got), len(want[2]), key)
                for a, b in zip(got, want[2]):
                    self.check_value(key, a, b)
            else:
                self.check_value(key, got, want)
        self.assertEqual(m.kv["general.architecture"], "llama")
        self.assertEqual(m.kv["llama.block_count"], 4)
        self.assertEqual(m.kv_types["test.i8"], "int8")

    def check_value(self, key, got, want):
        if isinstance(want, bytes):
            if len(want) <= STR_MAX:
                self.assertEqual(got, want.decode("utf-8"), key)
            else:                                       # the runtime keeps STR_MAX bytes
                self.assertEqual(got.encode("utf-8"), want[:STR_MAX], key)
        elif isinstance(want, float) and math.isnan(want):
            self.assertTrue(math.isnan(got), key)
        elif isinstance(want, bool):
            self.assertIs(got, want, key)
        else:
            self.assertEqual(got, want, key)

    def test_missing_model(self):
        with self.assertRaises(gpuos.Error) as cm:
            self.sys.open_model("/models/no-such.gguf")
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertIn("no-such.gguf", str(cm.exception))
        with self.assertRaises(gpuos.Error):
            self.sys.open_model(RAND_PATH)      # not a GGUF file


class T2Load(Booted):
    def check_tensor(self, path, name, arr):
        m = self.sys.open_model(path)
        t = m[name]
        want = file_bytes(path, t.offset, t.nbytes)
        self.assertIsInstance(arr, np.ndarray, name)
        self.assertEqual(arr.nbytes, t.nbytes, name)
        self.assertEqual(arr.tobytes(), want, name)
        # at ALIGN, or where the file has it (a run of neighbours, from a page of the arena)
        self.assertIn(arr.ctypes.data % gpuos.ALIGN, (0, t.offset % gpuos.ALIGN), name)
        self.assertEqual(arr.ctypes.data % (np.dtype(_ELEM[t.type_id]).itemsize if t.type_id in _ELEM else 1), 0, name)
        if t.type_id in _ELEM:
            self.assertEqual(arr.dtype, np.dtype(_ELEM[t.type_id]), name)
            self.assertEqual(arr.shape, t.shape, name)
            ref = np.frombuffer(want, dtype=_ELEM[t.type_id]).reshape(t.shape)
            self.assertTrue(np.array_equal(arr, ref, equal_nan=arr.dtype.kind == "f"), name)
        else:
            self.assertEqual(arr.dtype, np.uint8, name)
            self.assertEqual(arr.shape, (t.nbytes,), name)

    def test_load_every_tensor(self):
        for path in MODELS:
            m = self.sys.open_model(path)
            ts = m.load(device="cpu")
            self.assertEqual(list(ts), m.names)
            for name, arr in ts.items():
                self.check_tensor(path, name, arr)
            # neighbours in the file are neighbours in memory (the runtime reads such a run as one range)
            infos = sorted((t for t in m.tensors if t.nbytes), key=lambda t: (t.shard, t.offset))
            joined = 0
            for a, b in zip(infos, infos[1:]):
                size = np.dtype(_ELEM[b.type_id]).itemsize if b.type_id in _ELEM else 1
                if a.shard == b.shard and a.offset + a.nbytes == b.offset and b.offset % size == 0:
                    self.assertEqual(ts[b.name].ctypes.data, ts[a.name].ctypes.data + a.nbytes, (path, a.name, b.name))
                    joined += 1
            self.assertGreater(joined, 0, path)

    def test_float_values(self):
        m = self.sys.open_model("/models/all.gguf")
        ts = self.sys.load(["type.f32", "type.f16", "type.f64", "blk.0.attn_norm.weight", "token_embd.weight"])
        for name, dt in (("type.f32", np.float32), ("type.f16", np.float16), ("type.f64", np.float64),
                         ("blk.0.attn_norm.weight", np.float32), ("token_embd.weight", np.float16)):
            t = m[name]
            ref = np.frombuffer(file_bytes("/models/all.gguf", t.offset, t.nbytes), dtype=dt).reshape(t.shape)
            self.assertEqual(ts[name].dtype, dt)
            self.assertEqual(ts[name].shape, tuple(reversed(t.ne)))
            self.assertTrue(np.array_equal(ts[name], ref, equal_nan=True), name)

    def test_names_in_order_asked(self):
        self.sys.open_model("/models/all.gguf")
        names = ["output.weight", "type.bf16", "blk.2.attn_q.weight", "type.i32"]
        ts = self.sys.load(names)
        self.assertEqual(list(ts), names)
        self.assertEqual(ts["type.bf16"].dtype, np.uint16)
        for n in names:
            self.check_tensor("/models/all.gguf", n, ts[n])
        one = self.sys.load("type.i64", model="/models/all.gguf")
        self.assertEqual(list(one), ["type.i64"])

    def test_load_layer(self):
        for path in MODELS:
            m = self.sys.open_model(path)
            ref = MODELS[path]["ref"]["tensors"]
            for n in sorted(m.layers):
                ts = self.sys.load(layer=n, model=path)
                self.assertEqual(list(ts), [t[0] for t in ref if layer_of(t[0]) == n])
                for name, arr in ts.items():
                    self.check_tensor(path, name, arr)
            with self.assertRaises(gpuos.Error):
                m.load(layer=len(m.layers) + 5)

    def test_cuda_in_host_mode_is_numpy(self):
        ts = self.sys.load(["type.f16"], model="/models/all.gguf", device="cuda")
        self.check_tensor("/models/all.gguf", "type.f16", ts["type.f16"])

    def test_unknown_tensor(self):
        self.sys.open_model("/models/all.gguf")
        with self.assertRaises(gpuos.Error) as cm:
            self.sys.load(["type.f32", "no.such.tensor"])
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertIn("no.such.tensor", str(cm.exception))

    def test_read(self):
        n = len(RAND)
        self.assertEqual(self.sys.size(RAND_PATH), n)
        for off, ln in ((0, 4096), (0, 1), (1000003, 77777), (4095, 8193), (n - 13, 13), (n - 1, 1),
                        (12345, (1 << 20) + 3), (n, 0)):
            got = self.sys.read(RAND_PATH, off, ln)
            self.assertIsInstance(got, bytes)
            self.assertEqual(got, RAND[off:off + ln], (off, ln))
        self.assertEqual(self.sys.read(RAND_PATH), RAND)
        self.assertEqual(self.sys.read(RAND_PATH, n - 100), RAND[-100:])
        a = self.sys.read(RAND_PATH, 777, 5000, device="cuda")     # host mode: a numpy array
        self.assertEqual(a.dtype, np.uint8)
        self.assertEqual(a.tobytes(), RAND[777:5777])

    def test_read_past_end(self):
        n = len(RAND)
        for off, ln in ((n - 10, 11), (n, 1), (n + 4096, 1), (0, n + 1)):
            with self.assertRaises(gpuos.Error) as cm:
                self.sys.read(RAND_PATH, off, ln)
            self.assertEqual(cm.exception.errno, errno.ERANGE, (off, ln))
        with self.assertRaises(gpuos.Error):
            self.sys.read(RAND_PATH, n + 1)
        with self.assertRaises(gpuos.Error) as cm:
            self.sys.read("/data/no-such-file", 0, 10)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        with self.assertRaises(gpuos.Error):
            self.sys.read("/data", 0, 10)           # a directory


class T3Memory(Booted):
    def test_arenas_freed(self):
        self.sys.open_model("/models/all.gguf")
        for i in range(3 * gpuos.GPUOS_SYS_USER_REGIONS):
            ts = self.sys.load(layer=i % 4, device="cpu")
            self.assertEqual(len(ts), 4)
            del ts
            self.assertEqual(self.sys.read(RAND_PATH, i, 100), RAND[i:i + 100])

    def test_regions_run_out_then_come_back(self):
        self.sys.open_model("/models/all.gguf")
        kept = []
        with self.assertRaises(gpuos.Error) as cm:
            for _ in range(gpuos.GPUOS_SYS_USER_REGIONS + 1):
                kept.append(self.sys.load(["type.f32"]))
        self.assertEqual(cm.exception.errno, errno.ENOSPC)
        self.assertLess(len(kept), gpuos.GPUOS_SYS_USER_REGIONS)
        del kept
        ts = self.sys.load(["type.f32"])
        self.assertEqual(ts["type.f32"].shape, (1, 2, 2, 1))

    def test_view_keeps_arena(self):
        m = self.sys.open_model("/models/all.gguf")
        t = m["output.weight"]
        view = self.sys.load(["output.weight"])["output.weight"][100:200]
        gc.collect()
        for i in range(2 * gpuos.GPUOS_SYS_USER_REGIONS):        # memory freed and taken again
            self.sys.load(["type.q4_0", "type.f16"])
        self.assertEqual(view.tobytes(), file_bytes("/models/all.gguf", t.offset + 100, 100))

    def test_park_resume(self):
        self.sys.open_model("/models/all.gguf")
        self.sys.park()
        self.assertTrue(self.sys.is_parked)
        with self.assertRaises(gpuos.Error) as cm:
            self.sys.load(["type.f32"])
        self.assertEqual(cm.exception.errno, errno.EBUSY)
        self.sys.resume()
        self.assertFalse(self.sys.is_parked)
        ts = self.sys.load(["type.f16"])
        T2Load.check_tensor(self, "/models/all.gguf", "type.f16", ts["type.f16"])
        with self.sys.parked():
            self.assertTrue(self.sys.is_parked)
            del ts                          # freed after the resume
        self.assertFalse(self.sys.is_parked)
        for i in range(gpuos.GPUOS_SYS_USER_REGIONS + 2):
            ts = self.sys.load(layer=2)
        T2Load.check_tensor(self, "/models/all.gguf", "blk.2.attn_k.weight", ts["blk.2.attn_k.weight"])
        self.assertEqual(self.sys.read(RAND_PATH, 5, 10), RAND[5:15])

    def test_parked_block_resumes_on_error(self):
        with self.assertRaises(ZeroDivisionError):
            with self.sys.parked():
                1 / 0
        self.assertFalse(self.sys.is_parked)
        self.assertEqual(self.sys.read(RAND_PATH, 0, 3), RAND[:3])


class T4DLPack(Booted):
    def test_host_tensor_dlpack(self):
        self.sys.open_model("/models/all.gguf")
        arr = self.sys.load(["type.f32"])["type.f32"]
        ht = arr.base
        self.assertIsInstance(ht, gpuos.HostTensor)
        self.assertEqual(ht.__dlpack_device__(), (1, 0))
        base = _tensor.live_dlpack()
        y = np.from_dlpack(ht)                  # consumed: numpy calls the deleter when y goes
        self.assertEqual(y.ctypes.data, arr.ctypes.data)
        self.assertTrue(np.array_equal(y, arr, equal_nan=True))
        self.assertEqual(_tensor.live_dlpack(), base + 1)
        del y
        gc.collect()
        self.assertEqual(_tensor.live_dlpack(), base)
        cap = ht.__dlpack__(stream=None)        # not consumed: the capsule's destructor deletes it
        self.assertEqual(_tensor.live_dlpack(), base + 1)
        del cap
        self.assertEqual(_tensor.live_dlpack(), base)

    def read_capsule(self, cap):
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        p = get(cap, b"dltensor")
        mt = _tensor.DLManagedTensor.from_address(p)
        t = mt.dl_tensor
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = tuple(t.strides[i] for i in range(t.ndim))
        return t, shape, strides

    def test_bf16_and_quantised_capsules(self):
        self.sys.open_model("/models/all.gguf")
        ts = self.sys.load(["type.bf16", "type.q4_k", "type.i16"])
        for name, code, bits in (("type.bf16", 4, 16), ("type.q4_k", 1, 8), ("type.i16", 0, 16)):
            ht = ts[name].base
            cap = ht.__dlpack__()
            t, shape, strides = self.read_capsule(cap)
            self.assertEqual((t.dtype.code, t.dtype.bits, t.dtype.lanes), (code, bits, 1), name)
            self.assertEqual(shape, ts[name].shape, name)
            self.assertEqual(t.data, ts[name].ctypes.data, name)
            self.assertEqual((t.device.device_type, t.device.device_id), (1, 0), name)
            self.assertEqual(strides[-1], 1, name)
            del cap

    def test_cuda_tensor_interfaces(self):
        # No GPU here: a CudaTensor over host memory checks what it exports.
        self.sys.open_model("/models/all.gguf")
        arr = self.sys.load(["type.f16"])["type.f16"]
        t = gpuos.CudaTensor(arr.base.arena, arr.ctypes.data, "type.f16", "F16", arr.shape,
                             ("<f2", 2, 2, 16))
        cai = t.__cuda_array_interface__
        self.assertEqual(cai["version"], 3)
        self.assertEqual(cai["shape"], arr.shape)
        self.assertEqual(cai["typestr"], "<f2")
        self.assertEqual(cai["data"], (arr.ctypes.data, False))
        self.assertEqual(t.__dlpack_device__(), (2, 0))
        self.assertFalse(hasattr(t, "__array_interface__"))
        base = _tensor.live_dlpack()
        cap = t.__dlpack__(stream=7)        # a stream is accepted and ignored
        d, shape, strides = self.read_capsule(cap)
        self.assertEqual((d.device.device_type, d.device.device_id), (2, 0))
        self.assertEqual((d.dtype.code, d.dtype.bits), (2, 16))
        self.assertEqual(shape, arr.shape)
        with self.assertRaises(BufferError):
            t.__dlpack__(dl_device=(1, 0))
        del cap
        self.assertEqual(_tensor.live_dlpack(), base)


class T5Close(unittest.TestCase):
    def test_close_twice(self):
        s = gpuos.System(device="emu:" + IMG, host=True)
        m = s.open_model("/models/all.gguf")
        ts = m.load(["type.f32"])
        self.assertEqual(ts["type.f32"].shape, (1, 2, 2, 1))
        s.close()
        s.close()
        self.assertTrue(s.closed)
        del ts      # after the close: nothing to free, nothing raised
        with self.assertRaises(gpuos.Error) as cm:
            s.read(RAND_PATH, 0, 1)
        self.assertEqual(cm.exception.errno, errno.EBADF)
        with self.assertRaises(gpuos.Error):
            s.park()

    def test_with_block(self):
        with gpuos.System(device="emu:" + IMG, host=True, warps=2, files_mib=8) as s:
            self.assertFalse(s.closed)
            self.assertEqual(s.read(RAND_PATH, 10, 20), RAND[10:30])
        self.assertTrue(s.closed)
        s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
