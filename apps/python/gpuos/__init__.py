# SPDX-License-Identifier: MIT
"""gpuos from Python: boot a runtime on a device, load a GGUF model's
tensors and file ranges into memory of the system's, hand them to numpy,
PyTorch or CuPy without a copy. ctypes only (numpy is used when present).

    import gpuos                       # before anything starts CUDA
    with gpuos.System(device="emu:/path/disk.img") as sys:
        m = sys.open_model("/models/m.gguf")
        ts = sys.load(layer=3, device="cuda")        # dict name -> tensor
        x = torch.from_dlpack(ts["blk.3.attn_norm.weight"])

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
import weakref  # noqa: E402

from ._lib import Error, BootOpts, check_abi, library_path, lib, raise_for  # noqa: E402
from ._lib import GPUOS_REGISTER_DEVICE, GPUOS_SYS_USER_REGIONS  # noqa: E402
from ._gguf import GGML_TYPES, KVArray, TensorInfo, element_type, parse_export  # noqa: E402
from ._tensor import Arena, CudaTensor, HostTensor, live_dlpack  # noqa: E402

try:
    import numpy as _np
except ImportError:     # host tensors are then HostTensor objects (__array_interface__)
    _np = None

__version__ = "0.14"
__all__ = ["System", "Model", "Error", "TensorInfo", "KVArray", "CudaTensor", "HostTensor",
           "GGML_TYPES", "check_abi", "library_path", "ALIGN"]

ALIGN = 256                 # each tensor's start in its arena
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


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _path_arg(path):
    if isinstance(path, bytes):
        return path
    if isinstance(path, str):
        return path.encode("utf-8")
    raise TypeError("a path is str or bytes, not %s" % type(path).__name__)


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

    def read(self, path, offset=0, length=None, device="cpu"):
        """Bytes [offset, offset + length) of a file of the device's file
        system (length None: to its end). device "cpu": bytes; "cuda": a
        uint8 tensor in VRAM (a numpy array in host mode). A range past the
        end of the file raises Error (ERANGE), never a short read."""
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

    # ---- models --------------------------------------------------------------------

    def open_model(self, path):
        """A GGUF model of the device's file system (a gguf-split model from
        any shard or its base name): its tables as the runtime parsed them.
        It becomes the model that load() loads from."""
        key = path
        with self._lock:
            self._check()
            m = self._models.get(key)
            if m is None:
                m = Model(self, path, self._export(_path_arg(path)))
                self._models[key] = m
            self._model = m
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

    def load(self, names=None, layer=None, device=None, model=None):
        """Load tensors of the model (the last one opened, or model=, a
        Model or a path) into one arena: names (a name or a list), layer
        (N or a list of N: every tensor of those layers), neither: all.
        Returns a dict name -> tensor (see Model.load)."""
        if model is None:
            m = self._model
            if m is None:
                raise Error(_errno.EINVAL, "no model: open_model(PATH) first, or pass model=PATH")
        elif isinstance(model, Model):
            m = model
        else:
            m = self.open_model(model)
        return m.load(names, layer=layer, device=device)

    def _load(self, m, infos, where):
        with self._lock:
            self._check()
            offs, end = [], 0
            for t in infos:
                end = _align(end, ALIGN)
                offs.append(end)
                end += t.nbytes
            arena = self._alloc(end, where)
            n = len(infos)
            enc = [t.name.encode("utf-8", "surrogateescape") for t in infos]
            names = (ctypes.c_char_p * n)(*enc)
            dst = (ctypes.c_void_p * n)(*[arena.ptr + o for o in offs])
            rc = self._L.gpuos_model_load_host(self._h, _path_arg(m.path), n, names, dst, None)
            if rc < 0:
                why = self._why()
                del arena           # freed now, not kept by the traceback
                raise_for(rc, why)
            out = {}
            cls = CudaTensor if where == "cuda" else HostTensor
            for t, o in zip(infos, offs):
                x = cls(arena, arena.ptr + o, t.name, t.type, t.shape, element_type(t.type_id))
                out[t.name] = x if where == "cuda" else _host_view(x)
            del arena
            self._done()
            return out


class Model(object):
    """A GGUF model as the runtime parsed it (gpuos_model_info_host).

    path; names (file order); tensors (TensorInfo, file order); layers
    (dict layer N -> names of blk.N.* in file order); n_layers; kv (dict
    key -> value: int, float, bool, str, or KVArray of the first 16
    items); kv_types (key -> GGUF type name); version, alignment,
    data_offset, file_size. m["name"] is a TensorInfo."""

    def __init__(self, system, path, ex):
        self.system = system
        self.path = path
        self.version = ex.version
        self.alignment = ex.alignment
        self.data_offset = ex.data_offset
        self.file_size = ex.file_size
        self.n_layers = ex.n_layers
        self.shards = ex.shards
        self.tensors = ex.tensors
        self.names = [t.name for t in ex.tensors]
        self.kv = ex.kv
        self.kv_types = ex.kv_types
        self._by_name = {t.name: t for t in ex.tensors}
        self.layers = {}
        for t in ex.tensors:
            if t.layer is not None:
                self.layers.setdefault(t.layer, []).append(t.name)

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
        return "<gpuos.Model %r: %d tensors, %d layers>" % (self.path, len(self.tensors), self.n_layers)

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
                    raise Error(_errno.ENOENT, "%s: no layer %r (the model has blk.0 .. blk.%d)"
                                % (self.path, k, self.n_layers - 1))
                for n in self.layers[k]:
                    if n not in seen:
                        seen.add(n)
                        sel.append(self._by_name[n])
        return sel

    def load(self, names=None, layer=None, device=None):
        """Load tensors into one arena of the system's memory with one
        gpuos_model_load_host call (synchronous). names: a name or a list;
        layer: N or a list of N; neither: every tensor. device: "cuda"
        (default with a GPU runtime) or "cpu".

        Returns a dict name -> tensor, in the order asked. With a GPU runtime
        and device "cuda": CudaTensor (__cuda_array_interface__, __dlpack__);
        otherwise numpy arrays over registered host memory (HostTensor when
        numpy is absent). F32, F16, BF16 (numpy: uint16), I8..I64 and F64
        come shaped as ggml's ne[] reversed; block types as uint8 bytes.
        The arena is freed when its last tensor goes."""
        sel = self.select(names, layer)
        where = self.system._where(device, None)
        if not sel:
            return {}
        return self.system._load(self, sel, where)

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
