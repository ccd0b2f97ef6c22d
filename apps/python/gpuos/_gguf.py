# SPDX-License-Identifier: MIT
"""A model's tables as the runtime exports them (struct gpuos_gguf_export
of gpuos/gguf.h, from gpuos_model_info_host): tensors and KVs, whether the
model is a GGUF file (or a gguf-split model) or safetensors (a file, or a
Hugging Face checkpoint through its model.safetensors.index.json)."""
import struct

__all__ = ["GGML_TYPES", "TensorInfo", "KVArray", "parse_export", "element_type", "DTYPE_NAMES",
           "F_SPLIT", "F_SAFETENSORS", "F_ST_INDEX"]

# model table type id -> name: ggml's ids (gpuos/gguf.h GPUOS_GGML_TYPE_*,
# the names gguf-py uses), then the safetensors dtypes ggml has no id for
# (GPUOS_MODEL_TYPE_*, safetensors' own names). The safetensors dtypes F64,
# F32, F16, BF16, I64, I32, I16 and I8 take ggml's ids, whose names are
# safetensors' too.
GGML_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
    17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M",
    30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0", 42: "Q2_0",
    64: "BOOL", 65: "U8", 66: "U16", 67: "U32", 68: "U64", 69: "F8_E4M3", 70: "F8_E5M2",
}
F32, F16, BF16 = 0, 1, 30

# struct gpuos_gguf_export.flags (gpuos/gguf.h GPUOS_GGUF_F_*)
F_SPLIT, F_SAFETENSORS, F_ST_INDEX = 1 << 4, 1 << 6, 1 << 7

# DLPack type codes (dlpack.h, DLDataTypeCode; the float8 ones since v1.1)
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2 = 10, 12

# Types held element by element: id -> (array-interface typestr, bytes,
# DLPack code, bits). BF16 is DLPack's bfloat16 and numpy's uint16 (numpy
# has no bfloat16); the float8 types are DLPack's float8_e4m3fn and
# float8_e5m2 and numpy's uint8 (the array interfaces have no float8
# either). Every other type is a block format: uint8 bytes.
_ELEMENT = {
    0: ("<f4", 4, DL_FLOAT, 32), 1: ("<f2", 2, DL_FLOAT, 16), 30: ("<u2", 2, DL_BFLOAT, 16),
    24: ("|i1", 1, DL_INT, 8), 25: ("<i2", 2, DL_INT, 16), 26: ("<i4", 4, DL_INT, 32),
    27: ("<i8", 8, DL_INT, 64), 28: ("<f8", 8, DL_FLOAT, 64),
    64: ("|b1", 1, DL_BOOL, 8), 65: ("|u1", 1, DL_UINT, 8), 66: ("<u2", 2, DL_UINT, 16),
    67: ("<u4", 4, DL_UINT, 32), 68: ("<u8", 8, DL_UINT, 64),
    69: ("|u1", 1, DL_FLOAT8_E4M3FN, 8), 70: ("|u1", 1, DL_FLOAT8_E5M2, 8),
}
_BYTES = ("|u1", 1, DL_UINT, 8)

# id -> the dtype of what load() hands out, as torch (and, but for
# bfloat16 and the float8 types, numpy) spell it; a block type is "uint8".
DTYPE_NAMES = {
    0: "float32", 1: "float16", 30: "bfloat16", 28: "float64", 24: "int8", 25: "int16", 26: "int32",
    27: "int64", 64: "bool", 65: "uint8", 66: "uint16", 67: "uint32", 68: "uint64",
    69: "float8_e4m3fn", 70: "float8_e5m2",
}


def element_type(type_id):
    """(typestr, itemsize, DLPack code, bits) of a ggml type's elements as
    the binding hands them out; a block (quantised) type is bytes."""
    return _ELEMENT.get(type_id, _BYTES)


class TensorInfo(object):
    """One tensor of a model as the runtime parsed it.

    name, type (the table's type name: ggml's "F32", "Q4_K", ..., or
    safetensors' "BOOL", "U8".."U64", "F8_E4M3", "F8_E5M2"), type_id,
    dtype (what load() hands out, as torch spells it: "float32",
    "bfloat16", "float8_e4m3fn", ...; "uint8" for a quantised tensor),
    shape (ne[] reversed, the slowest dimension first, as numpy and torch
    index, and as safetensors writes it; () for a scalar; a quantised
    tensor is uint8 bytes of shape (nbytes,)), ne (ggml's order), n_dims,
    nbytes (0 for an empty tensor), layer (N for GGUF's "blk.N.*" and
    Hugging Face's "model.layers.N.*", else None), offset (the byte offset
    in its file), rel_offset (from the data section), shard (the file of a
    gguf-split model or a sharded checkpoint holding it, 0-based)."""

    __slots__ = ("name", "type", "type_id", "ne", "shape", "nbytes", "layer", "offset", "rel_offset",
                 "shard", "n_dims", "dtype")

    def __init__(self, name, type_id, ne, n_dims, nbytes, layer, offset, rel_offset, shard):
        self.name = name
        self.type_id = type_id
        self.type = GGML_TYPES.get(type_id, "type%d" % type_id)
        self.n_dims = n_dims
        self.ne = tuple(ne[:n_dims])
        self.nbytes = nbytes
        self.layer = layer if layer >= 0 else None
        self.offset = offset
        self.rel_offset = rel_offset
        self.shard = shard
        self.dtype = DTYPE_NAMES.get(type_id, "uint8")
        if type_id in _ELEMENT:
            self.shape = tuple(reversed(self.ne))
        else:
            self.shape = (nbytes,)

    @property
    def quantised(self):
        return self.type_id not in _ELEMENT

    @property
    def numel(self):
        """Elements of the tensor (of ne[]; a quantised tensor's values, not
        its bytes)."""
        n = 1
        for d in self.ne:
            n *= d
        return n

    def __repr__(self):
        return "TensorInfo(%r, %s, shape=%r, nbytes=%d%s)" % (
            self.name, self.type, self.shape, self.nbytes,
            "" if self.layer is None else ", layer=%d" % self.layer)


class KVArray(list):
    """A GGUF array value: the items the runtime kept (at most 16, the
    first ones), .count the elements in the file, .elem_type the GGUF value
    type of its elements ("uint32", "string", "array", ...)."""

    def __init__(self, items, count, elem_type):
        list.__init__(self, items)
        self.count = count
        self.elem_type = elem_type

    @property
    def complete(self):
        return len(self) == self.count


GGUF_TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
              "array", "uint64", "int64", "float64"]
_UNSIGNED = {0, 2, 4, 10}
_SIGNED = {1, 3, 5, 11}
_FLOAT = {6, 12}
_BOOL, _STRING, _ARRAY = 7, 8, 9

_HDR = struct.Struct("<IIQQQQQIIQQQQQIIII")      # 0x00 .. 0x70, then rsvd70[4]
_TENSOR = struct.Struct("<QQQ4QIIiIII128s")      # 208 bytes
_KV = struct.Struct("<IIII8sIIQIIQIIQQII")        # 88 bytes
_STR = struct.Struct("<IIQ")
_ARR = struct.Struct("<IIQII")
assert _HDR.size == 0x70 and _TENSOR.size == 208 and _KV.size == 88
assert _STR.size == 16 and _ARR.size == 24


class Export(object):
    """The parsed export: header fields, tensors (file order), kv (dict)."""

    def __init__(self, buf):
        (self.version, self.alignment, self.tensor_count, self.kv_count, self.data_offset,
         self.file_size, self.data_end, self.n_layers, self.flags, tensors_off, kv_off, arena_off,
         arena_len, self.total, self.complete, self.shards, self.split_no,
         self.split_count) = _HDR.unpack_from(buf, 0)
        if not self.complete:
            raise ValueError("the export holds the header only")
        if self.total > len(buf):
            raise ValueError("the export is cut short")
        self._buf = buf
        self._arena = arena_off
        self._arena_end = arena_off + arena_len
        self.tensors = []
        for i in range(self.tensor_count):
            (abs_off, size, rel_off, n0, n1, n2, n3, type_id, n_dims, layer, name_len, _hash, shard,
             name) = _TENSOR.unpack_from(buf, tensors_off + i * _TENSOR.size)
            nm = name[:name_len].decode("utf-8", "surrogateescape")
            self.tensors.append(TensorInfo(nm, type_id, (n0, n1, n2, n3), n_dims, size, layer, abs_off,
                                           rel_off, shard))
        self.kv = {}
        self.kv_types = {}
        for i in range(self.kv_count):
            (key_off, key_len, vtype, _flags, val, s_off, s_len, _s_full, a_elem, a_n, a_count, a_items,
             _r, _val_off, _val_bytes, _hash, _r2) = _KV.unpack_from(buf, kv_off + i * _KV.size)
            key = self._bytes(key_off, key_len).decode("utf-8", "surrogateescape")
            if vtype == _STRING:
                value = self._string(s_off, s_len)
            elif vtype == _ARRAY:
                value = self._array(a_elem, a_n, a_count, a_items)
            else:
                value = self._scalar(vtype, val)
            self.kv[key] = value
            self.kv_types[key] = GGUF_TYPES[vtype] if vtype < len(GGUF_TYPES) else str(vtype)
        del self._buf

    def _bytes(self, off, n):
        a = self._arena + off
        if a + n > self._arena_end:
            raise ValueError("an arena offset past the export")
        return bytes(self._buf[a:a + n])

    def _string(self, off, n):
        return self._bytes(off, n).decode("utf-8", "replace")

    @staticmethod
    def _scalar(vtype, raw):
        if vtype in _UNSIGNED:
            return struct.unpack("<Q", raw)[0]
        if vtype in _SIGNED:
            return struct.unpack("<q", raw)[0]
        if vtype in _FLOAT:
            return struct.unpack("<d", raw)[0]
        if vtype == _BOOL:
            return struct.unpack("<Q", raw)[0] != 0
        return raw

    def _array(self, elem, n, count, items_off):
        out = []
        base = self._arena + items_off
        for k in range(n):
            if elem == _STRING:
                s_off, s_len, _full = _STR.unpack_from(self._buf, base + k * _STR.size)
                out.append(self._string(s_off, s_len))
            elif elem == _ARRAY:
                e2, n2, c2, i2, _r = _ARR.unpack_from(self._buf, base + k * _ARR.size)
                out.append(self._array(e2, n2, c2, i2))
            else:
                out.append(self._scalar(elem, bytes(self._buf[base + 8 * k:base + 8 * k + 8])))
        et = GGUF_TYPES[elem] if elem < len(GGUF_TYPES) else str(elem)
        return KVArray(out, count, et)


def parse_export(buf):
    return Export(buf)
