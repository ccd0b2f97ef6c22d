# SPDX-License-Identifier: MIT
"""Tensor objects over memory of the system's (gpuos_sys_alloc): the
arena that frees itself when its last tensor goes, and the DLPack,
__cuda_array_interface__ and __array_interface__ exports."""
import ctypes
import threading

__all__ = ["Arena", "CudaTensor", "HostTensor", "KDL_CPU", "KDL_CUDA"]

KDL_CPU, KDL_CUDA = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]

# The managed tensors handed out and not yet deleted: address -> (the
# struct, its shape and strides, the tensor object it keeps alive).
_live = {}
_live_lock = threading.Lock()


def _delete(addr):
    with _live_lock:
        ent = _live.pop(addr, None)
    del ent     # the tensor object, and so maybe its arena, goes here


@_DELETER
def _deleter(addr):
    """DLManagedTensor.deleter: the consumer is done with it."""
    try:
        _delete(addr)
    except Exception:   # never raise into the consumer's C code
        pass


_CAPSULE_NAME = b"dltensor"
_capsule_name_buf = ctypes.create_string_buffer(_CAPSULE_NAME)     # lives as long as the module
_PyCapsule_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _capi(name, restype, *argtypes):
    """A function object of the C API of our own: ctypes.pythonapi's
    attributes are shared, and other code may change their argtypes."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


class _API(object):
    PyCapsule_New = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                          _PyCapsule_Destructor)
    PyCapsule_IsValid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
    PyCapsule_GetPointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)


_api = _API


@_PyCapsule_Destructor
def _capsule_destructor(capsule):
    """A capsule that no consumer took (still named "dltensor") deletes its
    managed tensor; a consumed one ("used_dltensor") belongs to the consumer."""
    try:
        if _api.PyCapsule_IsValid(capsule, _CAPSULE_NAME):
            addr = _api.PyCapsule_GetPointer(capsule, _CAPSULE_NAME)
            if addr:
                _delete(addr)
    except Exception:
        pass


def _contiguous_strides(shape, itemsize=1):
    st, acc = [], itemsize
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(st))


def dlpack_capsule(owner, data, shape, code, bits, device_type, device_id):
    """A "dltensor" capsule of a DLManagedTensor over data that keeps owner
    alive until the consumer calls the deleter (or the capsule dies
    unconsumed)."""
    ndim = len(shape)
    n = max(ndim, 1)
    shp = (ctypes.c_int64 * n)(*shape)
    std = (ctypes.c_int64 * n)(*_contiguous_strides(shape))  # in elements
    mt = DLManagedTensor()
    t = mt.dl_tensor
    t.data = data
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(std, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    addr = ctypes.addressof(mt)
    mt.manager_ctx = addr
    mt.deleter = _deleter
    with _live_lock:
        _live[addr] = (mt, shp, std, owner)
    try:
        return _api.PyCapsule_New(addr, ctypes.addressof(_capsule_name_buf), _capsule_destructor)
    except BaseException:
        _delete(addr)
        raise


def live_dlpack():
    """Managed tensors handed out whose consumer has not deleted them yet."""
    return len(_live)


class Arena(object):
    """One gpuos_sys_alloc block; freed (gpuos_sys_free) when the last
    object referring to it goes, unless its system has closed (whose
    shutdown freed it)."""

    __slots__ = ("system", "ptr", "size", "device", "__weakref__")

    def __init__(self, system, ptr, size, device):
        self.system = system
        self.ptr = ptr
        self.size = size
        self.device = device

    def __del__(self):
        s, p = self.system, self.ptr
        self.system = None
        self.ptr = 0
        if s is not None and p:
            try:
                s._release(p)
            except Exception:
                pass


class _Tensor(object):
    __slots__ = ("name", "type", "shape", "typestr", "itemsize", "nbytes", "ptr", "arena", "_dl",
                 "__weakref__")

    def __init__(self, arena, ptr, name, ggml_type, shape, elem):
        self.arena = arena
        self.ptr = ptr
        self.name = name
        self.type = ggml_type
        self.shape = tuple(int(d) for d in shape)
        self.typestr, self.itemsize, code, bits = elem
        self._dl = (code, bits)
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * self.itemsize

    @property
    def dtype(self):
        return self.typestr

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def uint8_view(self):
        """The same memory as uint8, of shape `shape` (1-byte elements) or
        shape + (itemsize,): for a consumer that knows no float8 dtype, e.g.
        torch.from_dlpack(t.uint8_view()).view(torch.float8_e4m3fn)."""
        shape = self.shape if self.itemsize == 1 else self.shape + (self.itemsize,)
        return type(self)(self.arena, self.ptr, self.name, self.type, shape, ("|u1", 1, 1, 8))

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The data has landed before load() returned: any stream may use it.
        dev = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != dev:
            raise BufferError("gpuos tensor %r lives on device %r, not %r" % (self.name, dev, dl_device))
        if copy:
            raise BufferError("gpuos tensors are exported without a copy only")
        code, bits = self._dl
        return dlpack_capsule(self, self.ptr, self.shape, code, bits, dev[0], dev[1])

    def __repr__(self):
        return "<gpuos %s tensor %r %s shape=%r at 0x%x>" % (self._where, self.name, self.type,
                                                             self.shape, self.ptr)


class CudaTensor(_Tensor):
    """Device memory of the runtime's GPU (device 0, the CUDA device current
    when the system booted): __cuda_array_interface__ (version 3) and
    __dlpack__ / __dlpack_device__, so torch.from_dlpack(t) and
    cupy.asarray(t) take it without a copy. Valid while the System is open."""

    __slots__ = ()
    _where = "cuda"
    device = "cuda"

    def __dlpack_device__(self):
        return (KDL_CUDA, 0)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": None}


class HostTensor(_Tensor):
    """Host memory registered with gpuos (pinned where there is a GPU):
    __array_interface__ (numpy.asarray takes it without a copy), __dlpack__
    and bytes(t). Valid while the System is open."""

    __slots__ = ()
    _where = "cpu"
    device = "cpu"

    def __dlpack_device__(self):
        return (KDL_CPU, 0)

    @property
    def __array_interface__(self):
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __bytes__(self):
        return ctypes.string_at(self.ptr, self.nbytes)

    def tobytes(self):
        return bytes(self)

    def memoryview(self):
        """The bytes as a writable memoryview (it keeps the arena alive)."""
        a = (ctypes.c_uint8 * self.nbytes).from_address(self.ptr)
        a._gpuos_owner = self
        return memoryview(a).cast("B")
