"""DyND's low-level view of an array: type, arrmeta, data pointer and owner.

``arrmeta(x)`` builds the arrmeta tree DyND kept next to every array:

- fixed dimension: ``size``, ``stride``;
- var dimension: ``stride``, ``offset`` and a reference to the memory
  block of its elements (nclx's lists follow Arrow: the parent's data holds
  offsets, so ``stride`` is the byte step between elements in that block and
  ``offset`` is where the elements' data starts inside it);
- string: a reference to the memory block of its bytes;
- record: ``data_offsets`` of the fields, then each field's arrmeta;
- option (nclx's, DyND used sentinels): the validity bitmap's memory block
  and the bit of the first element, then the element's arrmeta.

The tree is Python objects (:class:`FixedDimMeta` ...) and, as DyND's
``_lowlevel`` exposed it, ctypes structures at real addresses:
:func:`arrmeta_struct_of`, :func:`arrmeta_address_of`.  The structures of an
object stay at the same address while the object lives.
"""
import ctypes
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Tuple

import numpy as np

from nclx._ncl import forksafe as _forksafe

from nclx.types.convert import content_values, from_arrow
from nclx.types.datashape import interface_dtype
from nclx.types.ragged import Ragged
from nclx.types.typeof import typeof

__all__ = ["arrmeta", "arrmeta_struct_of", "arrmeta_address_of", "data_address_of",
           "MemoryBlock", "FixedDimMeta", "VarDimMeta", "StringMeta",
           "RecordMeta", "OptionMeta", "EmptyMeta", "Arrmeta", "MemoryBlockData"]

READ, WRITE, IMMUTABLE = 1, 2, 4


class MemoryBlockData(ctypes.Structure):
    """A memory block as the ctypes structures reference it."""
    _fields_ = [("type", ctypes.c_uint32),      # 0 external (owned by another object), 1 pod
                ("data", ctypes.c_void_p),
                ("size", ctypes.c_ssize_t),
                ("owner", ctypes.py_object)]    # a strong reference to the owner


@dataclass(eq=False)
class MemoryBlock:
    kind: str          # 'external' or 'pod'
    address: int
    size: int
    owner: Any

    def describe(self):
        return f"{type(self.owner).__module__}.{type(self.owner).__name__}"


@dataclass(eq=False)
class EmptyMeta:
    pass


@dataclass(eq=False)
class FixedDimMeta:
    size: int
    stride: int
    element: Any


@dataclass(eq=False)
class VarDimMeta:
    stride: int
    offset: int
    block: MemoryBlock
    element: Any


@dataclass(eq=False)
class StringMeta:
    block: MemoryBlock
    encoding: str = "utf-8"


@dataclass(eq=False)
class RecordMeta:
    names: Tuple[str, ...]
    data_offsets: Tuple[int, ...]
    fields: Tuple[Any, ...]


@dataclass(eq=False)
class OptionMeta:
    block: MemoryBlock        # validity bitmap (or NumPy's byte mask for masked arrays)
    bit_offset: int
    element: Any
    mask_kind: str = "bitmap"  # 'bitmap' (Arrow) or 'bytemask' (NumPy masked array)


@dataclass(eq=False)
class Arrmeta:
    """Everything DyND's debug_repr showed of one array."""
    type: str
    flags: int
    data: int                     # the data pointer
    data_block: MemoryBlock
    root: Any                     # the arrmeta tree
    struct: Any = None            # ctypes preamble (built lazily)
    _keep: list = field(default_factory=list, repr=False)

    @property
    def arrmeta_address(self):
        return ctypes.addressof(self.struct) + type(self.struct).arrmeta.offset


# ------------------------------------------------------------- the tree
def _owner(a):
    """(owner object, block start address, block size) of ndarray ``a``."""
    base = a
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, np.ndarray):
        return base, base.__array_interface__["data"][0], base.nbytes
    try:
        mv = memoryview(base)
        ptr = np.frombuffer(mv, dtype=np.uint8).__array_interface__["data"][0] if mv.nbytes else 0
        return base, ptr, mv.nbytes
    except (TypeError, ValueError):
        return base, a.__array_interface__["data"][0], a.nbytes


def _block(a, holder):
    owner, start, size = _owner(a)
    # a block owned by the array itself is not referenced (no cycle through the cache)
    keep = None if owner is holder else owner
    return MemoryBlock("external" if keep is not None else "pod", start, size, keep)


def _dtype_meta(dtype):
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        meta = _dtype_meta(base)
        stride = base.itemsize
        for n in reversed(shape):
            meta = FixedDimMeta(n, stride, meta)
            stride *= n
        return meta
    if dtype.names is not None:
        return RecordMeta(tuple(dtype.names), tuple(dtype.fields[n][1] for n in dtype.names),
                          tuple(_dtype_meta(dtype.fields[n][0]) for n in dtype.names))
    return EmptyMeta()


def _ndarray_dims(a, holder):
    meta = _dtype_meta(a.dtype)
    if isinstance(a, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(a)
        meta = OptionMeta(_block(mask, holder), 0, meta, "bytemask")
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        meta = FixedDimMeta(n, s, meta)
    return meta


def _element_meta(values, holder):
    """Arrmeta of one element of ``values`` (its first dim removed)."""
    if isinstance(values, Ragged):
        return _ragged_element(values, holder)
    meta = _ndarray_dims(values, holder)
    return meta.element if isinstance(meta, FixedDimMeta) else meta


def _ragged_element(r, holder):
    if r.encoding is not None:
        meta = StringMeta(_block(r.values, holder), r.encoding)
    else:
        v = r.values
        data = v.offsets if isinstance(v, Ragged) else np.ma.getdata(v)
        block = _block(data, holder)
        start = data.__array_interface__["data"][0]
        stride = data.strides[0] if data.ndim else data.itemsize
        meta = VarDimMeta(stride, start - block.address, block, _element_meta(v, holder))
    if r.validity is not None:
        meta = OptionMeta(_block(r.validity, holder), r.validity_offset, meta)
    return meta


def _target(x):
    """The ndarray or Ragged whose layout ``x`` has."""
    if isinstance(x, (np.ndarray, Ragged)):
        return x
    mod = type(x).__module__ or ""
    if mod.startswith("pyarrow"):
        import pyarrow as pa
        if isinstance(x, pa.ChunkedArray) and x.num_chunks == 1:
            x = x.chunk(0)
        if isinstance(x, pa.Array):
            t = x.type
            if pa.types.is_list(t) or pa.types.is_large_list(t) or t in (
                    pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
                return from_arrow(x)
            if x.null_count == 0 and t.bit_width and t.bit_width % 8 == 0 and \
                    not pa.types.is_boolean(t):
                return x.to_numpy(zero_copy_only=True)
        raise TypeError(f"arrmeta: pyarrow {type(x).__name__} of {getattr(x, 'type', '?')} "
                        "has no single-buffer layout (take a column, or a list/primitive array)")
    if mod.startswith("awkward"):
        import awkward as ak
        layout = x.layout if isinstance(x, ak.Array) else x
        return content_values(layout)
    # arrays known by the protocol they export (no import of their package)
    if hasattr(type(x), "__distarray__"):             # a DAP producer: its local block
        return _target(x.__distarray__()["buffer"])
    if hasattr(type(x), "__gt_data_interface__"):
        gdi = x.__gt_data_interface__
        if not isinstance(gdi, dict):
            raise TypeError(f"arrmeta: {type(x).__name__}.__gt_data_interface__ is a "
                            f"{type(gdi).__name__}, not the dict of buffers GDP-3 specifies")
        if gdi and None not in gdi:
            raise TypeError("arrmeta: a device-only storage has no host data to describe")
    if hasattr(type(x), "__array_interface__"):       # a storage's host buffer, ...
        arr = np.asarray(x)
        dtype = interface_dtype(x.__array_interface__)
        if arr.dtype != dtype and arr.dtype.itemsize == dtype.itemsize:
            arr = arr.view(dtype)          # an aligned record's padding, as exported
        return arr
    raise TypeError(f"arrmeta: no layout for a {type(x).__module__}.{type(x).__name__}")


def _build(x):
    t = _target(x)
    holder = x
    if isinstance(t, Ragged):
        offs = t.offsets
        root = FixedDimMeta(len(t), offs.strides[0], _ragged_element(t, holder))
        writeable = _writeable(t)
        data, data_block = offs.__array_interface__["data"][0], _block(offs, holder)
    else:
        root = _ndarray_dims(t, holder)
        writeable = t.flags.writeable
        data, data_block = t.__array_interface__["data"][0], _block(np.ma.getdata(t), holder)
    if not (type(x).__module__ or "").startswith(("numpy", "nclx")):
        writeable = False     # pyarrow and awkward data are immutable
    flags = READ | (WRITE if writeable else IMMUTABLE)
    return Arrmeta(typeof(x), flags, data, data_block, root)


def _writeable(r):
    v = r.values
    if isinstance(v, Ragged):
        return r.offsets.flags.writeable and _writeable(v)
    return bool(r.offsets.flags.writeable and np.ma.getdata(v).flags.writeable)


# ---------------------------------------------------------------- ctypes
def _struct_type(meta):
    if isinstance(meta, EmptyMeta):
        return type("EmptyMetadata", (ctypes.Structure,), {"_fields_": []})
    if isinstance(meta, FixedDimMeta):
        fields = [("size", ctypes.c_ssize_t), ("stride", ctypes.c_ssize_t),
                  ("element", _struct_type(meta.element))]
        return type("FixedDimMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, VarDimMeta):
        fields = [("blockref", ctypes.POINTER(MemoryBlockData)), ("stride", ctypes.c_ssize_t),
                  ("offset", ctypes.c_ssize_t), ("element", _struct_type(meta.element))]
        return type("VarDimMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, StringMeta):
        return type("StringMetadata", (ctypes.Structure,),
                    {"_fields_": [("blockref", ctypes.POINTER(MemoryBlockData))]})
    if isinstance(meta, OptionMeta):
        fields = [("validity", ctypes.POINTER(MemoryBlockData)), ("bit_offset", ctypes.c_ssize_t),
                  ("element", _struct_type(meta.element))]
        return type("OptionMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, RecordMeta):
        fields = [("data_offsets", ctypes.c_ssize_t * len(meta.fields))]
        fields += [(f"field{i}", _struct_type(f)) for i, f in enumerate(meta.fields)]
        return type("RecordMetadata", (ctypes.Structure,), {"_fields_": fields})
    raise TypeError(f"no ctypes layout for {meta!r}")


def _blockref(block, keep):
    data = MemoryBlockData(0 if block.kind == "external" else 1, block.address, block.size,
                           block.owner)
    keep.append(data)
    return ctypes.pointer(data)


def _fill(struct, meta, keep):
    if isinstance(meta, FixedDimMeta):
        struct.size, struct.stride = meta.size, meta.stride
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, VarDimMeta):
        struct.blockref = _blockref(meta.block, keep)
        struct.stride, struct.offset = meta.stride, meta.offset
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, StringMeta):
        struct.blockref = _blockref(meta.block, keep)
    elif isinstance(meta, OptionMeta):
        struct.validity = _blockref(meta.block, keep)
        struct.bit_offset = meta.bit_offset
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, RecordMeta):
        for i, off in enumerate(meta.data_offsets):
            struct.data_offsets[i] = off
        for i, f in enumerate(meta.fields):
            _fill(getattr(struct, f"field{i}"), f, keep)


def _with_struct(am):
    root_t = _struct_type(am.root)
    preamble_t = type("ArrayPreamble", (ctypes.Structure,), {"_fields_": [
        ("type", ctypes.c_char_p), ("data_pointer", ctypes.c_void_p),
        ("flags", ctypes.c_uint64), ("data_reference", ctypes.POINTER(MemoryBlockData)),
        ("arrmeta", root_t)]})
    type_bytes = am.type.encode()
    am._keep.append(type_bytes)
    pre = preamble_t()
    pre.type, pre.data_pointer, pre.flags = type_bytes, am.data, am.flags
    pre.data_reference = _blockref(am.data_block, am._keep)
    _fill(pre.arrmeta, am.root, am._keep)
    am.struct = pre
    return am


# ------------------------------------------------- cache and entry points
_CACHE = {}
# reentrant: a finalizer (_forget) a collection runs while the lock is held takes it again
_LOCK = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_LOCK", threading.RLock)


def arrmeta(x):
    """The :class:`Arrmeta` of ``x`` (its tree in ``.root``, its ctypes
    structure in ``.struct``); the same object while ``x`` lives."""
    key = id(x)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is x:
            return hit[1]
    am = _with_struct(_build(x))
    try:
        ref = weakref.ref(x)
    except TypeError:
        return am          # not weak-referenceable: a fresh structure each call
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is x:
            return hit[1]
        _CACHE[key] = (ref, am)
        weakref.finalize(x, _forget, key, ref)
    return am


def _forget(key, ref):
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is ref:
            del _CACHE[key]


def arrmeta_struct_of(x):
    """The ctypes structure of ``x``'s arrmeta (fields ``size``, ``stride``,
    ``element``... as DyND's ``_lowlevel.arrmeta_struct_of``)."""
    return arrmeta(x).struct.arrmeta


def arrmeta_address_of(x):
    """Address of ``x``'s arrmeta structure; valid while ``x`` lives (raises
    TypeError for objects that cannot be weakly referenced)."""
    try:
        weakref.ref(x)
    except TypeError:
        raise TypeError(f"arrmeta_address_of: a {type(x).__name__} cannot be weakly referenced, "
                        "so no address could stay valid; keep arrmeta(x) and use "
                        ".arrmeta_address") from None
    return arrmeta(x).arrmeta_address


def data_address_of(x):
    """The data pointer of ``x``: its first element (an ndarray), its
    offsets (a Ragged: the outer dimension's data, as in DyND)."""
    if isinstance(x, np.generic):
        raise TypeError("a NumPy scalar is a copy with no address in the array: index "
                        "with a[i, j, ...] to get a 0-d view")
    t = _target(x)
    arr = t.offsets if isinstance(t, Ragged) else np.ma.getdata(t)
    return arr.__array_interface__["data"][0]
