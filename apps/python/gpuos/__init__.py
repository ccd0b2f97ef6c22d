# SPDX-License-Identifier: MIT
"""gpuos from Python: boot a runtime on a device, load a model's tensors
(GGUF, gguf-split, safetensors, a Hugging Face checkpoint through its
model.safetensors.index.json) and file ranges into memory of the system's,
hand them to numpy, PyTorch or CuPy without a copy; dequantise GGUF's
block types on the GPU. ctypes only (numpy is used when present).

    import gpuos                       # before anything starts CUDA
    with gpuos.System(device="emu:/path/disk.img") as sys:
        m = sys.open_model("/models/m.gguf")
        ts = sys.load(layer=3, device="cuda")        # dict name -> tensor
        x = torch.from_dlpack(ts["blk.3.attn_norm.weight"])
        q = sys.load("blk.3.attn_q.weight", dtype=torch.float16)  # dequantised

Tensors must not be used after their System closed: its shutdown frees
their memory. apps/python/README.md has the rules for CUDA beside the
runtime (park around module loads, cudaFree, device-wide synchronisation).
"""
import os

# The CUDA rules that must hold when CUDA starts (docs/embedding.md), set
# here before anything in this process starts it:
# - loading a module while the runtime kernel spins deadlocks, and lazy
#   module loading loads one at any kernel's first launch: EAGER;
# - streams share CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 by
#   default), and work on the runtime kernel's queue never starts: 32, a
#   lower value raised, as gpuos_boot does.
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")


def _connections():
    try:
        return int(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "0"))
    except ValueError:
        return 0


if _connections() < 32:
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "32"

import atexit  # noqa: E402
import contextlib  # noqa: E402
import ctypes  # noqa: E402
import errno as _errno  # noqa: E402
import gc  # noqa: E402
import mmap  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import weakref  # noqa: E402

from ._lib import Error, BootOpts, check_abi, library_path, lib, optional, raise_for  # noqa: E402
from ._lib import GPUOS_REGISTER_DEVICE, GPUOS_SYS_USER_REGIONS  # noqa: E402
from ._gguf import GGML_TYPES, KVArray, TensorInfo, element_type, parse_export  # noqa: E402
from ._gguf import F_SAFETENSORS, F_ST_INDEX, F32, F16, BF16  # noqa: E402
from ._gguf import DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2  # noqa: E402
from ._tensor import Arena, CudaTensor, HostTensor, live_dlpack  # noqa: E402
from ._tensor import _Tensor  # noqa: E402

try:
    import numpy as _np
except ImportError:     # host tensors are then HostTensor objects (__array_interface__)
    _np = None

__version__ = "0.15"
__all__ = ["System", "Client", "connect", "Pending", "Model", "Error", "TensorInfo", "KVArray", "CudaTensor", "HostTensor",
           "GGML_TYPES", "DEQUANT_TYPES", "check_abi", "library_path", "to_torch", "ALIGN"]

ALIGN = 256                 # a tensor not placed as its file has it (_layout) starts at a multiple
_PAGE = mmap.PAGESIZE
_ERRLEN = 512

# System(**opts): struct gpuos_boot_opts fields the binding passes on, and
# what each takes. The others (mailbox in VRAM, client shares and areas, no
# metadata warp) would take away what the binding needs.
_OPTS = {
    "warps": int, "queues": int, "depth": int, "slots": int, "xfer_kib": int, "mbox_slots": int,
    "heap_bytes": int, "timeout_ms": int, "part": int, "files_mib": int, "map_extents": int, "gpu": int,
    "require_gpu": bool, "sim_vram": bool, "no_zero_copy": bool, "force": bool, "root": str,
}

_systems = weakref.WeakSet()


def _align(x, a):
    return (x + a - 1) // a * a


class _Opened(object):
    """The library's calls on a model opened once (gpuos_model_open_host,
    _info_id, _load_id, _close_host), or None from _opened_api() when the
    library predates them (models then load by path, as before)."""
    __slots__ = ("open", "info", "load", "close")


def _opened_api():
    fs = [optional(n) for n in ("gpuos_model_open_host", "gpuos_model_info_id", "gpuos_model_load_id",
                                "gpuos_model_close_host")]
    if any(f is None for f in fs):
        return None
    o = _Opened()
    o.open, o.info, o.load, o.close = fs
    return o


_RUN_PAGE = 4096


def _layout(infos):
    """Offsets in one arena for the tensors of infos (their order) and the
    arena's size. Tensors that follow each other in their file sit as the
    file has them, each run from a page plus its first byte's place in a
    page of the file, so that gpuos_model_load_host reads a run as one
    range (a whole model as one, at a file read's rate) rather than tensor
    by tensor. Each tensor keeps an address aligned as its elements need:
    a tensor whose file offset is not breaks the run and sits at ALIGN."""
    offs, end = [0] * len(infos), 0
    prev = None         # (info, its offset) of the tensor before in the file, when placed as the file has it
    for i in sorted(range(len(infos)), key=lambda k: (infos[k].shard, infos[k].offset)):
        t = infos[i]
        size = element_type(t.type_id)[1]
        aligned = t.nbytes and t.offset % size == 0
        if aligned and prev is not None and prev[0].shard == t.shard and prev[0].offset + prev[0].nbytes == t.offset:
            offs[i] = prev[1] + prev[0].nbytes
        elif aligned:
            offs[i] = _align(end, _RUN_PAGE) + t.offset % _RUN_PAGE
        else:
            offs[i] = _align(end, ALIGN)
        prev = (t, offs[i]) if aligned else None
        end = max(end, offs[i] + t.nbytes)
    return offs, end


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _path_arg(path):
    if isinstance(path, bytes):
        return path
    if isinstance(path, str):
        return path.encode("utf-8")
    raise TypeError("a path is str or bytes, not %s" % type(path).__name__)


# ---- dtype= and out= of load() ----------------------------------------------------------

# What load(dtype=) converts into: ggml's F32, F16, BF16 (gpuos_dequant's
# out_type), by the names torch, numpy and ml_dtypes give them.
_OUT_TYPES = {"float32": F32, "float": F32, "f32": F32, "float16": F16, "half": F16, "f16": F16,
              "bfloat16": BF16, "bf16": BF16}
_OUT_ELEM = {F32: element_type(F32), F16: element_type(F16), BF16: element_type(BF16)}
_OUT_SIZE = {F32: 4, F16: 2, BF16: 2}
_OUT_NAME = {F32: "float32", F16: "float16", BF16: "bfloat16"}

# The types load(dtype=) converts from: the float element types and the
# block types that gpuos_dequant (gpuos/host.h) dequantises as llama.cpp
# does. Another block type is tried, and refused with ValueError when the
# library answers -ENOTSUP; integer, bool, float8 and F64 tensors are
# refused before a byte moves.
DEQUANT_TYPES = frozenset([0, 1, 30,                         # F32 F16 BF16
                           2, 3, 6, 7, 8,                    # Q4_0 Q4_1 Q5_0 Q5_1 Q8_0
                           10, 11, 12, 13, 14])              # Q2_K Q3_K Q4_K Q5_K Q6_K


def _dtype_key(dtype):
    """The name of a dtype given as a string, a torch dtype, a numpy dtype
    (or scalar type, ml_dtypes' bfloat16 included)."""
    if isinstance(dtype, str):
        key = dtype
    elif type(dtype).__module__.split(".")[0] == "torch":
        key = str(dtype)
    else:
        key = None
        if _np is not None:
            try:
                key = _np.dtype(dtype).name
            except TypeError:
                key = None
        if key is None:
            key = getattr(dtype, "__name__", str(dtype))
    key = key.lower()
    return key[6:] if key.startswith("torch.") else key


def _out_type(dtype):
    """ggml's F32, F16 or BF16 for load(dtype=)."""
    t = _OUT_TYPES.get(_dtype_key(dtype))
    if t is None:
        raise ValueError("dtype=%r: load() converts into float32, float16 or bfloat16 (a torch dtype, a "
                         "numpy dtype or one of those names)" % (dtype,))
    return t


def _out_info(x, name):
    """(pointer, elements, ggml type or None, "cuda" or "cpu", contiguous)
    of a tensor passed as out=: a torch tensor, a numpy array, a gpuos
    tensor, or anything with __cuda_array_interface__. numpy's uint16 is
    taken as bfloat16 (as the binding hands bfloat16 out to numpy)."""
    if isinstance(x, _Tensor):
        t = {"F32": F32, "F16": F16, "BF16": BF16}.get(x.type)
        if t is not None and (x.typestr, x._dl) != (_OUT_ELEM[t][0], _OUT_ELEM[t][2:]):
            t = None                    # e.g. a uint8_view()
        n = 1
        for d in x.shape:
            n *= d
        return x.ptr, n, t, x.device, True
    if type(x).__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr"):
        return (x.data_ptr(), x.numel(), _OUT_TYPES.get(_dtype_key(x.dtype)), "cuda" if x.is_cuda else "cpu",
                x.is_contiguous())
    if _np is not None and isinstance(x, _np.ndarray):
        key = "bfloat16" if x.dtype == _np.uint16 else x.dtype.name
        if not x.flags.writeable:
            raise ValueError("out= for %r: a read-only numpy array" % name)
        return x.ctypes.data, x.size, _OUT_TYPES.get(key), "cpu", x.flags.c_contiguous
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        n = 1
        for d in cai["shape"]:
            n *= d
        key = {"<f4": "float32", "<f2": "float16", "<u2": "bfloat16"}.get(cai["typestr"], "")
        st = cai.get("strides")
        want, acc = [], int(cai["typestr"][2:] or 1)
        for d in reversed(tuple(cai["shape"])):
            want.append(acc)
            acc *= d
        contiguous = st is None or n <= 1 or tuple(st) == tuple(reversed(want))
        return cai["data"][0], n, _OUT_TYPES.get(key), "cuda", contiguous
    raise TypeError("out= for %r: a torch tensor, a numpy array or an object with __cuda_array_interface__, "
                    "not %s" % (name, type(x).__name__))


def to_torch(t):
    """A torch tensor over a tensor load() returned, without a copy:
    torch.from_dlpack(t), except that a float8 tensor that this PyTorch's
    DLPack import refuses (the float8 codes came in DLPack 1.1) is taken as
    uint8 and viewed as torch.float8_e4m3fn / float8_e5m2; a numpy array of
    host mode goes through torch.from_numpy, its float8 viewed likewise."""
    import torch
    if _np is not None and isinstance(t, _np.ndarray):
        base = t.base if isinstance(t.base, _Tensor) else None
        x = torch.from_numpy(t)
        if base is not None and base._dl[0] in (DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2):
            x = x.view(torch.float8_e4m3fn if base._dl[0] == DL_FLOAT8_E4M3FN else torch.float8_e5m2)
        elif base is not None and base.type == "BF16" and x.dtype == torch.uint16:
            x = x.view(torch.bfloat16)
        return x
    if isinstance(t, _Tensor) and t._dl[0] in (DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2):
        f8 = torch.float8_e4m3fn if t._dl[0] == DL_FLOAT8_E4M3FN else torch.float8_e5m2
        try:
            return torch.from_dlpack(t)
        except (RuntimeError, TypeError, BufferError):
            return torch.from_dlpack(t.uint8_view()).view(f8)
    return torch.from_dlpack(t)


def _host_view(t):
    """What a host tensor is handed out as: a numpy array over its memory
    (whose .base keeps the arena) when numpy is there, else itself."""
    return t if _np is None else _np.asarray(t)


class System(object):
    """A runtime booted on a device (gpuos_boot).

    device: what `gpuos --device` takes ("emu:/path/disk.img", "pci:...").
    host: run the runtime on CPU threads even with a GPU (without one it
    runs there anyway). verbose: the runtime's notices on stderr.
    opts: warps, queues, depth, slots, xfer_kib, mbox_slots, heap_bytes,
    timeout_ms, part, files_mib, map_extents, gpu (the CUDA device),
    require_gpu, sim_vram, no_zero_copy, force, root (struct
    gpuos_boot_opts, gpuos/host.h).

    .gpu is True when the runtime runs on the GPU. close() (or leaving the
    with block) shuts it down and frees every tensor's memory: tensors must
    not be used after that."""

    def __init__(self, device, host=False, verbose=False, **opts):
        self._h = None
        self._closed = True
        for k in opts:
            if k not in _OPTS:
                raise TypeError("System() got an unexpected keyword argument %r (it takes %s)"
                                % (k, ", ".join(sorted(_OPTS))))
        L = lib()
        check_abi()
        o = BootOpts()
        L.gpuos_boot_opts_default(ctypes.byref(o))
        self.device = device
        self._keep = [_path_arg(device)]
        o.device = self._keep[0]
        o.host_mode = 1 if host else 0
        o.quiet = 0 if verbose else 1
        for k, v in opts.items():
            kind = _OPTS[k]
            if kind is str:
                self._keep.append(_path_arg(v))
                setattr(o, k, self._keep[-1])
            elif kind is bool:
                setattr(o, k, 1 if v else 0)
            else:
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError("System(%s=): an int, not %s" % (k, type(v).__name__))
                if v < 0:
                    raise ValueError("System(%s=%d): 0 or more" % (k, v))
                setattr(o, k, v)
        err = ctypes.create_string_buffer(_ERRLEN)
        h = ctypes.c_void_p()
        rc = L.gpuos_boot(ctypes.byref(o), ctypes.byref(h), err, _ERRLEN)
        raise_for(rc, _text(err.value), device)
        self._L = L
        self._h = h.value
        self._closed = False
        self._parked = False
        self._lock = threading.RLock()
        self._pending = []          # arenas to free once the lock or a resume allows
        self._closing = []          # ids of opened models gone, to close once the lock or a resume allows
        self._opened = _opened_api()
        self._models = {}
        self._model = None
        self.sm = L.gpuos_sys_gpu_sm(self._h)
        self.gpu = self.sm > 0
        _systems.add(self)

    # ---- life ----------------------------------------------------------------------

    @property
    def closed(self):
        return self._closed

    @property
    def is_parked(self):
        return not self._closed and self._parked

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except Error:
            if exc_type is None:
                raise
        return False

    def close(self):
        """Shut the runtime down (gpuos_shutdown), which frees the memory of
        every tensor it loaded. Closing again does nothing."""
        if self._closed:
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pending = []
            h, self._h = self._h, None
            err = ctypes.create_string_buffer(_ERRLEN)
            rc = self._L.gpuos_shutdown(h, err, _ERRLEN)
            raise_for(rc, _text(err.value), "shutdown")

    def __del__(self):
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closed else ("parked" if self._parked else "running")
        where = "GPU sm_%d" % self.sm if not self._closed and self.gpu else "host"
        return "<gpuos.System %r %s, %s>" % (self.device, where, state)

    def _check(self):
        if self._closed:
            raise Error(_errno.EBADF, "the system is closed")
        if self._parked:
            raise Error(_errno.EBUSY, "the runtime is parked: resume() first")

    def _done(self):
        """Under the lock, at the end of an operation: free what waited."""
        while self._pending and not self._parked and not self._closed:
            self._free_now(self._pending.pop())
        while self._closing and not self._parked and not self._closed:
            self._opened.close(self._h, self._closing.pop())

    def _model_gone(self, mid, wait=False):
        """An opened model (gpuos_model_open_host) was closed or collected:
        its handle goes now when this thread can take the lock (wait: it
        waits for it) and the runtime runs, else at the end of the operation
        that holds it or at resume(). A closed system has forgotten it."""
        if self._closed:
            return
        if not self._lock.acquire(blocking=wait):
            self._closing.append(mid)
            return
        try:
            if self._closed:
                return
            self._closing.append(mid)
            self._done()
        finally:
            self._lock.release()

    # ---- park / resume -------------------------------------------------------------

    def park(self):
        """The runtime finishes what is in flight and stops (gpuos_park);
        loads wait for resume(). What the CUDA rules forbid beside the
        running runtime is allowed while it is parked."""
        with self._lock:
            if self._closed:
                raise Error(_errno.EBADF, "the system is closed")
            if self._parked:
                return
            err = ctypes.create_string_buffer(_ERRLEN)
            rc = self._L.gpuos_park(self._h, err, _ERRLEN)
            raise_for(rc, _text(err.value), "park")
            self._parked = True

    def resume(self):
        """The runtime continues where it stopped (gpuos_resume)."""
        with self._lock:
            if self._closed:
                raise Error(_errno.EBADF, "the system is closed")
            if not self._parked:
                return
            err = ctypes.create_string_buffer(_ERRLEN)
            rc = self._L.gpuos_resume(self._h, err, _ERRLEN)
            raise_for(rc, _text(err.value), "resume")
            self._parked = False
            self._done()

    @contextlib.contextmanager
    def parked(self):
        """with sys.parked(): ...  parks the runtime for the block and
        resumes it after, whatever the block raised."""
        self.park()
        try:
            yield self
        finally:
            self.resume()

    # ---- memory --------------------------------------------------------------------

    def _where(self, device, default):
        d = default if device is None else device
        if d is None:
            d = "cuda" if self.gpu else "cpu"
        d = str(d)
        if d in ("cuda", "cuda:0", "gpu"):
            return "cuda" if self.gpu else "cpu"
        if d == "cpu":
            return "cpu"
        raise ValueError("device=%r: \"cuda\" or \"cpu\"" % (device,))

    def _alloc(self, nbytes, where):
        """An arena of nbytes (gpuos_sys_alloc): VRAM for "cuda", host memory
        for "cpu". Called under the lock."""
        size = _align(max(int(nbytes), 1), _PAGE)
        flags = GPUOS_REGISTER_DEVICE if where == "cuda" else 0
        p = ctypes.c_void_p()
        rc = self._L.gpuos_sys_alloc(self._h, size, flags, ctypes.byref(p))
        if rc == -_errno.ENOSPC:
            # Arenas whose tensors are gone but not yet freed (a cycle, a
            # free that waited): free them and try once more.
            gc.collect()
            self._done()
            rc = self._L.gpuos_sys_alloc(self._h, size, flags, ctypes.byref(p))
        if rc < 0:
            why = os.strerror(-rc)
            if rc == -_errno.ENOSPC:
                why += (" (%d regions are registered: drop the tensors of earlier loads, which frees "
                        "their memory)" % GPUOS_SYS_USER_REGIONS)
            raise Error(-rc, "gpuos_sys_alloc of %d bytes of %s memory: %s"
                        % (size, "device" if flags else "host", why))
        return Arena(self, p.value, size, where)

    def _release(self, ptr):
        """An arena lost its last tensor. Freed now when this thread can take
        the lock and the runtime runs, else at the end of the operation that
        holds it or at resume()."""
        if self._closed:
            return
        if self._lock.acquire(blocking=False):
            try:
                if self._closed:
                    return
                if self._parked:
                    self._pending.append(ptr)
                else:
                    self._free_now(ptr)
                    self._done()
            finally:
                self._lock.release()
        else:
            self._pending.append(ptr)

    def _free_now(self, ptr):
        self._L.gpuos_sys_free(self._h, ptr)

    def _settle(self, arena):
        """A load into arena has ended (a client lets the service go of it)."""

    def _why(self):
        """gpuos_sys_error: this thread's last failure of the load-host calls."""
        return _text(self._L.gpuos_sys_error(self._h))

    def _fail(self, rc, what=None):
        raise_for(rc, self._why(), what)

    # ---- files ---------------------------------------------------------------------

    def size(self, path):
        """The size in bytes of a file of the device's file system."""
        with self._lock:
            self._check()
            n = ctypes.c_uint64()
            rc = self._L.gpuos_file_size_host(self._h, _path_arg(path), ctypes.byref(n))
            if rc < 0:
                self._fail(rc)
            return n.value

    def read(self, path, offset=0, length=None, device="cpu", out=None):
        """Bytes [offset, offset + length) of a file of the device's file
        system (length None: to its end). device "cpu": bytes; "cuda": a
        uint8 tensor in VRAM (a numpy array in host mode). out: a
        contiguous torch tensor or numpy array of at least length bytes
        that the bytes are copied into (from their first byte), returned
        (length None: as many as out holds). A range past the end of the
        file raises Error (ERANGE), never a short read."""
        if out is not None:
            return self._read_into(path, offset, length, out)
        where = self._where(device, "cpu")
        offset = int(offset)
        if offset < 0 or (length is not None and int(length) < 0):
            raise ValueError("read(%r): offset and length are 0 or more" % (path,))
        with self._lock:
            self._check()
            p = _path_arg(path)
            if length is None or int(length) == 0:
                size = self.size(path)
                if offset > size:
                    raise Error(_errno.ERANGE, "%s: offset %d is past the end of the file (%d bytes)"
                                % (_text(p), offset, size))
                length = size - offset if length is None else 0
            length = int(length)
            arena = self._alloc(length, where)
            if length:
                off = (ctypes.c_uint64 * 1)(offset)
                ln = (ctypes.c_uint64 * 1)(length)
                dst = (ctypes.c_void_p * 1)(arena.ptr)
                rc = self._L.gpuos_file_load_host(self._h, p, 1, off, ln, dst, None)
                if rc < 0:
                    why = self._why()
                    del arena       # freed now, not kept by the traceback
                    raise_for(rc, why)
            self._settle(arena)
            if device is None or device == "cpu":
                data = ctypes.string_at(arena.ptr, length)
                del arena
                self._done()
                return data
            elem = element_type(-1)     # bytes
            cls = CudaTensor if where == "cuda" else HostTensor
            t = cls(arena, arena.ptr, _text(p), "U8", (length,), elem)
            self._done()
            return t if where == "cuda" else _host_view(t)

    def _read_into(self, path, offset, length, out):
        if type(out).__module__.split(".")[0] == "torch" and hasattr(out, "data_ptr"):
            nbytes, where, contiguous = out.numel() * out.element_size(), "cuda" if out.is_cuda else "cpu", \
                out.is_contiguous()
        elif _np is not None and isinstance(out, _np.ndarray):
            if not out.flags.writeable:
                raise ValueError("read(out=): a read-only numpy array")
            nbytes, where, contiguous = out.nbytes, "cpu", out.flags.c_contiguous
        else:
            raise TypeError("read(out=): a torch tensor or a numpy array, not %s" % type(out).__name__)
        if not contiguous:
            raise ValueError("read(out=): not contiguous")
        if length is None:
            length = nbytes
        if int(length) > nbytes:
            raise ValueError("read(out=): %d bytes asked, out holds %d" % (int(length), nbytes))
        if int(length) == 0:
            return out
        data = self.read(path, offset, length, device=where if where == "cuda" and self.gpu else "cpu")
        if where == "cpu":
            src = data if isinstance(data, bytes) else _np.ascontiguousarray(data).tobytes()
            ptr = out.data_ptr() if hasattr(out, "data_ptr") else out.ctypes.data
            ctypes.memmove(ptr, src, len(src))
            return out
        import torch
        flat = out.view(-1).view(torch.uint8)[:int(length)]
        src = to_torch(data) if not isinstance(data, bytes) else torch.frombuffer(bytearray(data), dtype=torch.uint8)
        # beside an embedded runtime a torch copy runs parked (docs/embedding.md, rule 8); a client's never waits
        with (self.parked() if not isinstance(self, Client) else contextlib.nullcontext()):
            flat.copy_(src)
            torch.cuda.synchronize()
        return out

    # ---- models --------------------------------------------------------------------

    def open_model(self, path):
        """A model of the device's file system: a GGUF file (a gguf-split
        model from any shard or its base name), a safetensors file, or a
        Hugging Face checkpoint through its model.safetensors.index.json
        (every shard it names); its tables as the runtime parsed them.
        It becomes the model that load() loads from."""
        key = path
        with self._lock:
            self._check()
            m = self._models.get(key)
            if m is None:
                m = self._open(path)
                self._models[key] = m
            self._model = m
            return m

    def _open(self, path):
        """A Model of path. With gpuos_model_open_host: opened once, its
        tables kept by the library and (a one-file model) its file's handle
        kept open by the runtime, so that a load sends its reads alone;
        the handle goes with the Model (close(), or collected) or the
        system. Under the lock."""
        p = _path_arg(path)
        api = self._opened
        if api is None:
            return Model(self, path, self._export(p))
        mid, need = ctypes.c_uint32(0), ctypes.c_size_t(0)
        rc = api.open(self._h, p, ctypes.byref(mid), ctypes.byref(need))
        if rc < 0:
            self._fail(rc)
        try:
            buf = ctypes.create_string_buffer(need.value)
            rc = api.info(self._h, mid.value, buf, need.value, ctypes.byref(need))
            if rc < 0:
                self._fail(rc)
            try:
                ex = parse_export(buf.raw)
            except Exception as e:
                raise Error(_errno.EPROTO, "%s: the runtime's export of the model is malformed: %s"
                            % (_text(p), e))
            m = Model(self, path, ex)
        except BaseException:
            api.close(self._h, mid.value)
            raise
        m._id = mid.value
        return m

    def _export(self, p):
        size = 256 << 10
        while True:
            buf = ctypes.create_string_buffer(size)
            needed = ctypes.c_size_t(0)
            rc = self._L.gpuos_model_info_host(self._h, p, buf, size, ctypes.byref(needed))
            if rc == -_errno.ENOSPC and needed.value > size:
                size = needed.value
                continue
            if rc < 0:
                self._fail(rc)
            try:
                return parse_export(buf.raw[:max(needed.value, 128)])
            except Exception as e:
                raise Error(_errno.EPROTO, "%s: the runtime's export of the model is malformed: %s"
                            % (_text(p), e))

    def load(self, names=None, layer=None, device=None, model=None, dtype=None, out=None):
        """Load tensors of the model (the last one opened, or model=, a
        Model or a path) into one arena: names (a name or a list), layer
        (N or a list of N: every tensor of those layers), neither: all;
        dtype and out: converted or dequantised (see Model.load).
        Returns a dict name -> tensor (see Model.load)."""
        if model is None:
            m = self._model
            if m is None:
                raise Error(_errno.EINVAL, "no model: open_model(PATH) first, or pass model=PATH")
        elif isinstance(model, Model):
            m = model
        else:
            m = self.open_model(model)
        return m.load(names, layer=layer, device=device, dtype=dtype, out=out)

    def _model_load(self, m, infos, ptrs):
        """One gpuos_model_load_host call for the tensors of infos with
        bytes (an empty tensor is not asked for) into ptrs. Under the lock."""
        pairs = [(t, p) for t, p in zip(infos, ptrs) if t.nbytes]
        if not pairs:
            return 0
        n = len(pairs)
        enc = m._encoded()
        names = (ctypes.c_char_p * n)(*[enc[t.name] for t, _ in pairs])
        dst = (ctypes.c_void_p * n)(*[p for _, p in pairs])
        if m._closed:
            raise Error(_errno.EBADF, "%s: the model is closed: open_model() it again" % (m.path,))
        if m._id is None:
            return self._L.gpuos_model_load_host(self._h, _path_arg(m.path), n, names, dst, None)
        rc = self._opened.load(self._h, m._id, n, names, dst, None)
        if rc == -_errno.ESTALE and self._models.get(m.path) is m:
            del self._models[m.path]    # replaced since it was opened: open_model() opens the new file
        return rc

    def _load(self, m, infos, where):
        with self._lock:
            self._check()
            offs, end = _layout(infos)
            arena = self._alloc(end, where)
            rc = self._model_load(m, infos, [arena.ptr + o for o in offs])
            if rc < 0:
                why = self._why()
                del arena           # freed now, not kept by the traceback
                raise_for(rc, why)
            self._settle(arena)
            out = {}
            cls = CudaTensor if where == "cuda" else HostTensor
            for t, o in zip(infos, offs):
                x = cls(arena, arena.ptr + o, t.name, t.type, t.shape, element_type(t.type_id))
                out[t.name] = x if where == "cuda" else _host_view(x)
            del arena
            self._done()
            return out

    def _load_as(self, m, infos, where, out_type, outs):
        """load(dtype=, out=): the raw bytes of the tensors that convert into
        a scratch arena (VRAM on a GPU system: gpuos_dequant takes device
        pointers there), then gpuos_dequant into the destination: a new
        arena of `where` (one for all), or the tensors of outs. A tensor
        already of the type asked, with no out=, loads as load() would."""
        plan = []       # (info, target type, out entry or None)
        for t in infos:
            o = outs.get(t.name) if outs is not None else None
            target = out_type
            if o is not None:
                ptr, n, otype, owhere, contiguous = _out_info(o, t.name)
                if otype is None:
                    raise ValueError("out= for %r: a float32, float16 or bfloat16 tensor" % t.name)
                if target is not None and otype != target:
                    raise ValueError("out= for %r is %s, dtype= asks for %s" % (t.name, _OUT_NAME[otype],
                                                                              _OUT_NAME[target]))
                target = otype
                if n != t.numel:
                    raise ValueError("out= for %r holds %d elements, the tensor %d (shape %r)"
                                     % (t.name, n, t.numel, tuple(reversed(t.ne))))
                if not contiguous:
                    raise ValueError("out= for %r is not contiguous" % t.name)
                want = "cuda" if self.gpu else "cpu"
                if owhere != want:
                    raise ValueError("out= for %r is %s memory; this system's runtime %s" % (
                        t.name, owhere, "runs on the GPU: a CUDA tensor" if self.gpu else
                        "runs on CPU threads (host mode): host memory"))
                o = ptr
            elif target is None:
                target = t.type_id          # out= for others only: this one loads as it is
            if t.type_id != target and t.type_id not in DEQUANT_TYPES and not t.quantised:
                raise ValueError("%s: %s tensors are not converted to %s (load() converts F32, F16, BF16 "
                                 "and GGUF's block types)" % (t.name, t.type, _OUT_NAME[target]))
            plan.append((t, target, o))
        if outs is not None:
            extra = set(outs) - set(t.name for t in infos)
            if extra:
                raise ValueError("out= names tensors not loaded: %s" % ", ".join(sorted(extra)))
        convert = [p for p in plan if p[0].nbytes and (p[0].type_id != p[1] or p[2] is not None)]
        deq = optional("gpuos_dequant") if convert else None
        if convert and deq is None:
            raise Error(_errno.ENOSYS, "%s has no gpuos_dequant: it is older than this binding (rebuild with "
                        "`make lib`)" % library_path())
        with self._lock:
            self._check()
            # the destination arena: every tensor without out=, converted or not
            offs, end = {}, 0
            for t, target, o in plan:
                if o is None:
                    end = _align(end, ALIGN)
                    offs[t.name] = end
                    end += t.numel * _OUT_SIZE[target] if t.type_id != target else t.nbytes
            arena = self._alloc(end, where) if offs else None
            # the scratch arena: the raw bytes of what converts
            so, send = _layout([p[0] for p in convert])
            soffs = {p[0].name: x for p, x in zip(convert, so)}
            scratch = self._alloc(send, "cuda" if self.gpu else "cpu") if convert else None
            try:
                ptrs = []
                for t, target, o in plan:     # (an empty tensor is not asked for: its 0 is never used)
                    ptrs.append(scratch.ptr + soffs[t.name] if t.name in soffs else
                                arena.ptr + offs[t.name] if t.name in offs else 0)
                rc = self._model_load(m, [p[0] for p in plan], ptrs)
                if rc < 0:
                    raise_for(rc, self._why())
                for t, target, o in convert:
                    src = scratch.ptr + soffs[t.name]
                    dst = o if o is not None else arena.ptr + offs[t.name]
                    # out= of the tensor's own type goes through it too (a
                    # copy, NaNs made the output's quiet NaN): the same
                    # values in host mode and on the GPU
                    rc = deq(self._h, t.type_id, src, t.nbytes, dst, target, t.numel)
                    if rc == -_errno.ENOTSUP:
                        raise ValueError("%s: no dequantiser for %s tensors (gpuos_dequant: %s)" % (
                            t.name, t.type, self._why() or os.strerror(-rc)))
                    if rc < 0:
                        raise_for(rc, self._why(), "gpuos_dequant of %s (%s to %s)" % (t.name, t.type,
                                                                                   _OUT_NAME[target]))
            except BaseException:
                arena = scratch = None      # freed now, not kept by the traceback
                raise
            if arena is not None:
                self._settle(arena)
            del scratch                     # freed here: the conversions have ended
            res = {}
            cls = CudaTensor if where == "cuda" else HostTensor
            for t, target, o in plan:
                if o is not None:
                    res[t.name] = outs[t.name]
                    continue
                p = arena.ptr + offs[t.name]
                if t.type_id == target:
                    x = cls(arena, p, t.name, t.type, t.shape, element_type(t.type_id))
                else:
                    x = cls(arena, p, t.name, GGML_TYPES[target], tuple(reversed(t.ne)), _OUT_ELEM[target])
                res[t.name] = x if where == "cuda" else _host_view(x)
            del arena
            self._done()
            return res


def connect(socket=None):
    """A client of the gpuos service (`gpuos boot`, the systemd unit) at
    socket (None: the default socket, as the gpuos command finds it). See
    Client."""
    return Client(socket)


class _ClientArena(Arena):
    """Memory of the client's own process: a memfd mapped here (mmap) or a
    torch CUDA buffer. It is registered with the service for a load and
    let go after, so that results cost the service nothing; it lives as
    long as its tensors, whatever happens to the connection."""

    __slots__ = ("keep", "registered")

    def __init__(self, system, ptr, size, device, keep):
        Arena.__init__(self, system, ptr, size, device)
        self.keep = keep
        self.registered = False

    def __del__(self):
        s, p, self.system = self.system, self.ptr, None
        if s is not None and self.registered:
            try:
                s._unregister(p)
            except Exception:
                pass
        self.keep = None    # the memory goes with the last reference (the mmap, the torch buffer)


class Pending(object):
    """A load running in a thread of its own (Client.load_async): wait()
    returns what load() returns, or raises what it raised."""

    def __init__(self, fn, *args, **kw):
        self._res = self._exc = None
        self._t = threading.Thread(target=self._run, args=(fn, args, kw), daemon=True)
        self._t.start()

    def _run(self, fn, args, kw):
        try:
            self._res = fn(*args, **kw)
        except BaseException as e:   # handed to wait()
            self._exc = e

    def done(self):
        return not self._t.is_alive()

    def wait(self, timeout=None):
        self._t.join(timeout)
        if self._t.is_alive():
            raise TimeoutError("the load has not ended within %s s" % timeout)
        if self._exc is not None:
            raise self._exc
        return self._res


class Client(System):
    """A client of the gpuos service (docs/design.md section 12): the
    runtime runs in the service's process, `gpuos boot`, and this process
    posts its loads into a mailbox of its own. Results land in memory this
    process owns (host memory of a memfd, or PyTorch CUDA memory), which
    the service writes directly while a load runs and lets go of when it
    ends. CUDA here obeys no rule: no parking, no environment, cuBLAS,
    torch.cuda.synchronize(), empty_cache() and new kernels work before,
    during and after loads.

        c = gpuos.connect()                        # the default socket
        c.open_model("/models/llama/model.safetensors.index.json")
        ts = c.load(layer=0, device="cuda")        # dict name -> tensor
        c.load(out={"model.embed_tokens.weight": my_tensor}, dtype=torch.bfloat16)
        h = c.load_async(layer=1); ...; ts1 = h.wait()
        data = c.read("/models/vocab.json")

    Tensors stay valid after close() (their memory is this process's);
    device="cuda" needs PyTorch and a service whose runtime is on the GPU."""

    def __init__(self, socket=None):
        self._h = None
        self._closed = True
        L = lib()
        check_abi()
        from ._lib import client_lib
        client_lib()
        err = ctypes.create_string_buffer(_ERRLEN)
        h = ctypes.c_void_p()
        self.socket = socket
        self.device = "service:%s" % (socket or "default")
        rc = L.gpuos_connect(_path_arg(socket) if socket is not None else None, ctypes.byref(h), err, _ERRLEN)
        raise_for(rc, _text(err.value), socket or "the default socket")
        self._L = L
        self._h = h.value
        self._keep = []
        self._closed = False
        self._parked = False
        self._lock = threading.RLock()
        self._pending = []
        self._closing = []
        self._opened = _opened_api()
        self._models = {}
        self._model = None
        self.sm = L.gpuos_sys_gpu_sm(self._h)
        self.gpu = self.sm > 0
        self.timing = {}        # the last load's parts, in s: lend, load, let_go
        _systems.add(self)

    def __repr__(self):
        where = "GPU sm_%d" % self.sm if not self._closed and self.gpu else "host memory"
        return "<gpuos.Client %s, %s%s>" % (self.socket or "(default socket)", where,
                                             ", closed" if self._closed else "")

    def close(self):
        """Detach from the service (it drops every range this process lent
        it). Tensors loaded before stay valid: their memory is ours."""
        System.close(self)

    # nothing of this process spins: nothing to park
    def park(self):
        self._check()

    def resume(self):
        self._check()

    def _alloc(self, nbytes, where):
        size = _align(max(int(nbytes), 1), _PAGE)
        t0 = time.perf_counter()
        if where == "cuda":
            try:
                import torch
            except ImportError:
                raise Error(_errno.ENOSYS, "device=\"cuda\" through the service takes PyTorch for the memory")
            keep = torch.empty(size, dtype=torch.uint8, device="cuda")
            ptr = keep.data_ptr()
            rc = self._L.gpuos_sys_register(self._h, ptr, size, GPUOS_REGISTER_DEVICE)
        else:
            fd = os.memfd_create("gpuos-lent", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                os.ftruncate(fd, size)
                import fcntl
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
                keep = mmap.mmap(fd, size)
                ptr = ctypes.addressof(ctypes.c_char.from_buffer(keep))
                rc = self._L.gpuos_sys_register_fd(self._h, ptr, fd, 0, size)
            finally:
                os.close(fd)        # the mapping (here, and the service's) holds the memory
        self.timing["lend"] = time.perf_counter() - t0
        if rc < 0:
            raise Error(-rc, "lend %d bytes of %s memory to the service: %s"
                        % (size, "CUDA" if where == "cuda" else "host", self._why() or os.strerror(-rc)))
        a = _ClientArena(self, ptr, size, where, keep)
        a.registered = True
        return a

    def _settle(self, arena):
        if isinstance(arena, _ClientArena) and arena.registered:
            t0 = time.perf_counter()
            arena.registered = False
            self._unregister(arena.ptr)
            self.timing["let_go"] = time.perf_counter() - t0

    def _model_load(self, m, infos, ptrs):
        t0 = time.perf_counter()
        rc = System._model_load(self, m, infos, ptrs)
        self.timing["load"] = time.perf_counter() - t0
        return rc

    def _unregister(self, ptr):
        with self._lock:            # close() in another thread frees the handle
            if not self._closed:
                self._L.gpuos_sys_unregister(self._h, ptr)

    def _release(self, ptr):
        pass    # a client's arena frees itself (_ClientArena)

    def load_async(self, names=None, layer=None, device=None, model=None, dtype=None, out=None):
        """load() in a thread of its own: a Pending whose wait() returns
        its dict (or raises what it raised)."""
        return Pending(self.load, names, layer=layer, device=device, model=model, dtype=dtype, out=out)


class Model(object):
    """A model as the runtime parsed it (gpuos_model_info_host).

    path; format ("gguf" or "safetensors"); names (file order; a sharded
    checkpoint's shard after shard); tensors (TensorInfo, the same order);
    layers (dict layer N -> names of "blk.N.*", or of Hugging Face's
    "model.layers.N.*", in that order); n_layers; kv (dict key -> value:
    int, float, bool, str, or KVArray of the first 16 items; a safetensors
    file's "__metadata__" strings); kv_types (key -> GGUF type name);
    metadata (the "__metadata__" of safetensors, {} for GGUF); version (0
    for safetensors), alignment, data_offset, file_size (the first file's),
    shards (files), flags (GPUOS_GGUF_F_*), index (True when opened through
    a model.safetensors.index.json). m["name"] is a TensorInfo.

    The model is opened once (gpuos_model_open_host): a one-file model's
    file stays open in the runtime, as the file its tables came from, and
    a load sends its reads alone (no path looked up, no tables fetched
    again). close() gives that handle back (so does the Model's collection,
    and the system's close or the client's leaving); loads after close()
    raise Error (EBADF). A file replaced under the path since the open is
    never read as this model: a load that would raises Error (ESTALE),
    and open_model() opens the new one."""

    _id = None          # its id with the library (gpuos_model_open_host), None: loads go by path
    _closed = False
    _enc = None

    def __init__(self, system, path, ex):
        self.system = system
        self.path = path
        self.version = ex.version
        self.alignment = ex.alignment
        self.data_offset = ex.data_offset
        self.file_size = ex.file_size
        self.n_layers = ex.n_layers
        self.shards = ex.shards
        self.flags = ex.flags
        self.format = "safetensors" if ex.flags & F_SAFETENSORS else "gguf"
        self.index = bool(ex.flags & F_ST_INDEX)
        self.tensors = ex.tensors
        self.names = [t.name for t in ex.tensors]
        self.kv = ex.kv
        self.kv_types = ex.kv_types
        self.metadata = dict(ex.kv) if self.format == "safetensors" else {}
        self._by_name = {t.name: t for t in ex.tensors}
        self.layers = {}
        for t in ex.tensors:
            if t.layer is not None:
                self.layers.setdefault(t.layer, []).append(t.name)

    def close(self):
        """Give the model's handle back to the runtime (after the loads
        of it in flight). Loads of it raise Error after; its tensors stay."""
        if self._closed:
            return
        s, mid = self.system, self._id
        self._closed, self._id = True, None
        with s._lock:
            if s._models.get(self.path) is self:
                del s._models[self.path]
            if s._model is self:
                s._model = None
        if mid is not None:
            s._model_gone(mid, wait=True)

    def __del__(self):
        mid, self._id = self._id, None
        if mid is not None:
            try:
                self.system._model_gone(mid)
            except Exception:
                pass

    def _encoded(self):
        """name -> the bytes a load passes for it, made once."""
        if self._enc is None:
            self._enc = {t.name: t.name.encode("utf-8", "surrogateescape") for t in self.tensors}
        return self._enc

    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError("%s: no tensor %r" % (self.path, name))

    def __contains__(self, name):
        return name in self._by_name

    def __len__(self):
        return len(self.tensors)

    def __iter__(self):
        return iter(self.tensors)

    def __repr__(self):
        return "<gpuos.Model %r (%s): %d tensors, %d layers>" % (self.path, self.format, len(self.tensors),
                                                                 self.n_layers)

    def select(self, names=None, layer=None):
        """The TensorInfo of names and layer(s) in that order, each once."""
        sel, seen = [], set()
        if isinstance(names, (str, bytes)):
            names = [names]
        if names is None and layer is None:
            names = self.names
        for n in names or ():
            if isinstance(n, bytes):
                n = n.decode("utf-8", "surrogateescape")
            t = self._by_name.get(n)
            if t is None:
                raise Error(_errno.ENOENT, "%s: no tensor %r in the model" % (self.path, n))
            if n not in seen:
                seen.add(n)
                sel.append(t)
        if layer is not None:
            layers = [layer] if isinstance(layer, int) else list(layer)
            for k in layers:
                if k not in self.layers:
                    raise Error(_errno.ENOENT, "%s: no layer %r (the model's layers: %s)"
                                % (self.path, k, "0 .. %d" % (self.n_layers - 1) if self.n_layers else "none"))
                for n in self.layers[k]:
                    if n not in seen:
                        seen.add(n)
                        sel.append(self._by_name[n])
        return sel

    def load(self, names=None, layer=None, device=None, dtype=None, out=None):
        """Load tensors into one arena of the system's memory with one
        gpuos_model_load_host call (synchronous). names: a name or a list;
        layer: N or a list of N; neither: every tensor. device: "cuda"
        (default with a GPU runtime) or "cpu".

        Returns a dict name -> tensor, in the order asked. With a GPU runtime
        and device "cuda": CudaTensor (__cuda_array_interface__, __dlpack__);
        otherwise numpy arrays over registered host memory (HostTensor when
        numpy is absent). Element types come shaped as the file says (ne[]
        reversed): F32, F16, BF16 (numpy: uint16), F64, I8..I64, and
        safetensors' BOOL, U8..U64, F8_E4M3 and F8_E5M2 (DLPack float8_e4m3fn
        and float8_e5m2; numpy: uint8; gpuos.to_torch takes them to torch
        whatever its DLPack knows); block types as uint8 bytes. An empty
        tensor comes with its shape and no bytes. The arena is freed when
        its last tensor goes.

        dtype (torch.float32/float16/bfloat16, a numpy dtype, or "float32",
        "float16", "bfloat16"): every tensor comes as that type, shaped
        ne[] reversed: GGUF's block types (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K at
        least) dequantised as llama.cpp does, F32/F16/BF16 converted, by
        gpuos_dequant (on the GPU with a GPU runtime) from a scratch buffer
        freed before load returns. Other types raise ValueError, naming
        them. out: the caller's memory instead of a new arena, a tensor (one
        tensor loaded) or a dict name -> tensor: contiguous torch tensors,
        numpy arrays or __cuda_array_interface__ objects of float32, float16
        or bfloat16 (numpy: uint16) with the tensor's number of elements, in
        VRAM with a GPU runtime, host memory in host mode; its type is the
        dtype when dtype is None. The dict returned holds those objects."""
        if self._closed:
            raise Error(_errno.EBADF, "%s: the model is closed: open_model() it again" % (self.path,))
        sel = self.select(names, layer)
        where = self.system._where(device, None)
        if out is not None and not isinstance(out, dict):
            if len(sel) != 1:
                raise ValueError("out=: one tensor for one tensor loaded (%d are): a dict name -> tensor "
                                 "for several" % len(sel))
            out = {sel[0].name: out}
        out_type = _out_type(dtype) if dtype is not None else None
        if not sel:
            return {}
        if out_type is None and out is None:
            return self.system._load(self, sel, where)
        return self.system._load_as(self, sel, where, out_type, out)

    def tensor(self, name):
        return self[name]


@atexit.register
def _close_all():
    """Systems still open when the interpreter exits are shut down."""
    for s in list(_systems):
        try:
            s.close()
        except Exception:
            pass
