# SPDX-License-Identifier: MIT
"""libgpuos through ctypes: finding the library, the prototypes of host.h
that the binding calls, struct gpuos_boot_opts, and gpuos.Error."""
import ctypes
import ctypes.util
import errno as _errno
import os
import threading

__all__ = ["Error", "BootOpts", "lib", "library_path", "check_abi", "raise_for", "optional"]


class Error(Exception):
    """A failure of the runtime: .errno (a positive errno value) and the
    runtime's one-line reason as the message."""

    def __init__(self, errno, message):
        self.errno = int(errno)
        self.message = message
        Exception.__init__(self, message)

    def __str__(self):
        return self.message

    def __repr__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        return "gpuos.Error(%s, %r)" % (name, self.message)


def raise_for(rc, reason, what=None):
    """Raise Error for a negative rc (a negative errno) with reason, or the
    errno's text when the reason is empty; what (if given) goes first."""
    if rc >= 0:
        return
    e = -rc
    if not reason:
        reason = os.strerror(e)
    if what:
        reason = "%s: %s" % (what, reason)
    raise Error(e, reason)


class BootOpts(ctypes.Structure):
    """struct gpuos_boot_opts of gpuos/host.h, field for field (order and
    types); ctypes lays it out as the C compiler does."""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("device", ctypes.c_char_p),
        ("warps", ctypes.c_uint32),
        ("queues", ctypes.c_uint32),
        ("depth", ctypes.c_uint32),
        ("slots", ctypes.c_uint32),
        ("xfer_kib", ctypes.c_uint32),
        ("mbox_slots", ctypes.c_uint32),
        ("heap_bytes", ctypes.c_uint64),
        ("heap_shares", ctypes.c_uint32),
        ("dev_heap_bytes", ctypes.c_uint64),
        ("mbox_vram", ctypes.c_int),
        ("timeout_ms", ctypes.c_uint32),
        ("host_mode", ctypes.c_int),
        ("require_gpu", ctypes.c_int),
        ("allow_raw", ctypes.c_int),
        ("root", ctypes.c_char_p),
        ("force", ctypes.c_int),
        ("quiet", ctypes.c_int),
        ("sim_vram", ctypes.c_int),
        ("no_files", ctypes.c_int),
        ("part", ctypes.c_uint32),
        ("no_zero_copy", ctypes.c_int),
        ("gpu_clients", ctypes.c_uint32),
        ("gpu_area_bytes", ctypes.c_uint64),
        ("files_mib", ctypes.c_uint32),
        ("map_extents", ctypes.c_uint32),
        ("gpu", ctypes.c_uint32),
    ]


GPUOS_REGISTER_DEVICE = 1
GPUOS_SYS_USER_REGIONS = 16

_lock = threading.Lock()
_lib = None
_path = None
_here = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """Where libgpuos is taken from: $GPUOS_LIBRARY, else the build tree
    this package sits in (build/lib/libgpuos.so), else the system's
    (ctypes.util.find_library("gpuos"), then "libgpuos.so.0")."""
    env = os.environ.get("GPUOS_LIBRARY")
    if env:
        return env
    tree = os.path.normpath(os.path.join(_here, "..", "..", "..", "build", "lib", "libgpuos.so"))
    if os.path.exists(tree):
        return tree
    return ctypes.util.find_library("gpuos") or "libgpuos.so.0"


_c = ctypes
_vp, _sz, _u32, _u64, _int, _cp = (_c.c_void_p, _c.c_size_t, _c.c_uint32, _c.c_uint64, _c.c_int,
                                   _c.c_char_p)
_PROTOS = {
    # name: (restype, argtypes)
    "gpuos_boot_opts_default": (None, [_vp]),
    "gpuos_boot": (_int, [_c.POINTER(BootOpts), _c.POINTER(_vp), _cp, _sz]),
    "gpuos_shutdown": (_int, [_vp, _cp, _sz]),
    "gpuos_park": (_int, [_vp, _cp, _sz]),
    "gpuos_resume": (_int, [_vp, _cp, _sz]),
    "gpuos_sys_gpu_sm": (_int, [_vp]),
    "gpuos_sys_alloc": (_int, [_vp, _sz, _u32, _c.POINTER(_vp)]),
    "gpuos_sys_free": (_int, [_vp, _vp]),
    "gpuos_model_load_host": (_int, [_vp, _cp, _u32, _c.POINTER(_cp), _c.POINTER(_vp), _vp]),
    "gpuos_file_load_host": (_int, [_vp, _cp, _u32, _c.POINTER(_u64), _c.POINTER(_u64), _c.POINTER(_vp),
                                    _vp]),
    "gpuos_model_info_host": (_int, [_vp, _cp, _vp, _sz, _c.POINTER(_sz)]),
    "gpuos_file_size_host": (_int, [_vp, _cp, _c.POINTER(_u64)]),
    "gpuos_sys_sync": (_int, [_vp]),
    "gpuos_sys_error": (_cp, [_vp]),
}

# A client of the service (gpuos.connect): in libraries that have it.
_CLIENT_PROTOS = {
    "gpuos_connect": (_int, [_cp, _c.POINTER(_vp), _cp, _sz]),
    "gpuos_sys_register": (_int, [_vp, _vp, _sz, _u32]),
    "gpuos_sys_register_fd": (_int, [_vp, _vp, _int, _u64, _sz]),
    "gpuos_sys_unregister": (_int, [_vp, _vp]),
}


def lib():
    """The loaded library with its prototypes set (loaded on first use, so
    that `import gpuos` itself touches neither the library nor CUDA)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = library_path()
        try:
            L = ctypes.CDLL(path)
        except OSError as e:
            raise Error(_errno.ENOENT, "cannot load libgpuos (%s): %s; build it with `make lib` or set "
                        "GPUOS_LIBRARY to its path" % (path, e))
        for name, (res, args) in _PROTOS.items():
            try:
                f = getattr(L, name)
            except AttributeError:
                raise Error(_errno.ENOSYS, "%s has no %s: it is older than this binding (rebuild with "
                            "`make lib`)" % (path, name))
            f.restype = res
            f.argtypes = args
        _path = path
        _lib = L
        return L


# Functions of newer libraries that the binding uses where they are there:
# the binding works without them, and only what needs one says so.
_OPTIONAL = {
    # gpuos_dequant(s, type, src, src_bytes, dst, out_type, n)
    "gpuos_dequant": (_int, [_vp, _u32, _vp, _u64, _vp, _u32, _u64]),
    # a model opened once for many loads (Model: no path looked up, no tables fetched, per load)
    "gpuos_model_open_host": (_int, [_vp, _cp, _c.POINTER(_u32), _c.POINTER(_sz)]),
    "gpuos_model_info_id": (_int, [_vp, _u32, _vp, _sz, _c.POINTER(_sz)]),
    "gpuos_model_load_id": (_int, [_vp, _u32, _u32, _c.POINTER(_cp), _c.POINTER(_vp), _vp]),
    "gpuos_model_close_host": (_int, [_vp, _u32]),
}


def optional(name):
    """An optional function of the library (_OPTIONAL) with its prototype
    set, or None when the library has none."""
    L = lib()
    res, args = _OPTIONAL[name]
    try:
        f = getattr(L, name)
    except AttributeError:
        return None
    f.restype = res
    f.argtypes = args
    return f


def client_lib():
    """lib() with the client's functions (gpuos_connect and registering
    memory); Error when the library predates them."""
    L = lib()
    for name, (res, args) in _CLIENT_PROTOS.items():
        f = getattr(L, name, None)
        if f is None:
            raise Error(_errno.ENOSYS, "%s has no %s: it is older than this binding (rebuild with `make lib`)"
                        % (_path, name))
        f.restype = res
        f.argtypes = args
    return L


def check_abi():
    """Compare ctypes' struct gpuos_boot_opts with the library's: the size
    gpuos_boot_opts_default writes into its size field must be ours.
    Returns that size; raises Error when they differ."""
    L = lib()
    buf = ctypes.create_string_buffer(4096)
    L.gpuos_boot_opts_default(buf)
    theirs = ctypes.c_size_t.from_buffer(buf, 0).value
    ours = ctypes.sizeof(BootOpts)
    if theirs != ours:
        raise Error(_errno.EPROTO, "struct gpuos_boot_opts is %d bytes in %s but %d in this binding: the "
                    "library and the binding are of different releases" % (theirs, _path, ours))
    return ours


def loaded_path():
    return _path
