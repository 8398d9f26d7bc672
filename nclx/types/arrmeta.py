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
object stay at the same address while the object lives and its layout
(shape, strides, dtype, data pointer) is unchanged; a layout changed in
place gets new structures.
"""
import array
import mmap
import sys
import threading
import weakref

import numpy as np
from numpy.lib.array_utils import byte_bounds

from nclx._ncl.extent import declares, interface_overrun
from nclx._ncl import forksafe as _forksafe

from nclx.types._arrmeta_nodes import (IMMUTABLE, READ, WRITE, Arrmeta, EmptyMeta,
                                       FixedDimMeta, MemoryBlock, MemoryBlockData, OptionMeta,
                                       RecordMeta, StringMeta, VarDimMeta, with_struct)
from nclx.types.convert import content_values, from_arrow
from nclx.types.datashape import interface_dtype
from nclx.types.ragged import Ragged
from nclx.types.typeof import typeof

__all__ = ["arrmeta", "arrmeta_struct_of", "arrmeta_address_of", "data_address_of",
           "MemoryBlock", "FixedDimMeta", "VarDimMeta", "StringMeta",
           "RecordMeta", "OptionMeta", "EmptyMeta", "Arrmeta", "MemoryBlockData"]


# ------------------------------------------------------------- the tree
def _owner(a):
    """(owner object, block start address, block size, the ndarray over a
    non-array owner or None) of ndarray ``a``."""
    base, over = a, None
    while isinstance(base, np.ndarray) and base.base is not None:
        over, base = base, base.base
    if isinstance(base, np.ndarray):
        return base, base.__array_interface__["data"][0], base.nbytes, None
    try:
        mv = memoryview(base)
        ptr = np.frombuffer(mv, dtype=np.uint8).__array_interface__["data"][0] if mv.nbytes else 0
        return base, ptr, mv.nbytes, over
    except (TypeError, ValueError):
        # the elements' own extent, strides and their signs included (before
        # review 21, nbytes from the first element: a padded or reversed view
        # of a storage reached past its block)
        if a.size == 0:
            return base, a.__array_interface__["data"][0], 0, None
        lo, hi = byte_bounds(a)
        return base, lo, hi - lo, None


#: buffer objects whose memory moves or goes while no export is held
_RESIZABLE = (bytearray, array.array, mmap.mmap)


def _block(a, holder):
    owner, start, size, over = _owner(a)
    # a block owned by the array itself is not referenced (no cycle through the cache)
    keep = None if owner is holder else owner
    if over is not None and over is not holder and keep is not None and \
            isinstance(owner, _RESIZABLE):
        # the ndarray over a buffer object holds its export: a bytearray
        # cannot be resized under the tree (before, the bytearray alone was
        # kept: resized, the tree pointed at freed memory; review 23)
        keep = over
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
    # on the type or the instance, where NumPy looks too (before, an instance
    # attribute was not seen; found by review)
    if declares(x, "__array_interface__"):       # a storage's host buffer, ...
        # bytes past a buffer ``data`` refused, as as_storage refuses them:
        # NumPy reads there (before, a tree over bytes the buffer does not
        # hold; found by review)
        overrun = interface_overrun(x.__array_interface__)
        if overrun is not None:
            raise ValueError(f"arrmeta: {overrun}")
        arr = np.asarray(x)
        data = x.__array_interface__.get("data")
        if data is not None and not isinstance(data, tuple) and arr.size:
            # NumPy takes a buffer object's pointer and lets the export go: a
            # bytearray could be resized under the tree (review 23).  The
            # same elements, over an array that holds the export
            held = np.frombuffer(data, dtype=np.uint8)
            start = arr.__array_interface__["data"][0] - held.__array_interface__["data"][0]
            arr = np.ndarray(arr.shape, arr.dtype, buffer=held, offset=start,
                             strides=arr.strides)
        dtype = interface_dtype(x.__array_interface__)
        if arr.dtype != dtype and arr.dtype.itemsize == dtype.itemsize:
            arr = arr.view(dtype)          # an aligned record's padding, as exported
        return arr
    raise TypeError(f"arrmeta: no layout for a {type(x).__module__}.{type(x).__name__}")


def _build(x):
    t = _target(x)
    holder = x
    if isinstance(t, Ragged):
        # offsets taken on trust: each list checked before a tree reads them
        # (before, lists 10**9 past 3 values described; review 23)
        t._check_lists()
        offs = t.offsets
        root = FixedDimMeta(len(t), offs.strides[0], _ragged_element(t, holder))
        writeable = _writeable(t)
        data, data_block = offs.__array_interface__["data"][0], _block(offs, holder)
    else:
        root = _ndarray_dims(t, holder)
        writeable = t.flags.writeable
        data, data_block = t.__array_interface__["data"][0], _block(np.ma.getdata(t), holder)
    if (type(x).__module__ or "").startswith(("pyarrow", "awkward")):
        # pyarrow and awkward data are immutable; another exporter's follows
        # its array (before, every foreign exporter was immutable; review 23)
        writeable = False
    flags = READ | (WRITE if writeable else IMMUTABLE)
    return Arrmeta(typeof(x), flags, data, data_block, root)


def _writeable(r):
    v = r.values
    if isinstance(v, Ragged):
        return r.offsets.flags.writeable and _writeable(v)
    return bool(r.offsets.flags.writeable and np.ma.getdata(v).flags.writeable)


# ------------------------------------------------- cache and entry points
_CACHE = {}
# reentrant: a finalizer (_forget) a collection runs while the lock is held takes it again
_LOCK = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_LOCK", threading.RLock)


def _layout(x):
    """What ``x``'s arrmeta is built from that can change in place while
    ``x`` lives (``a.shape = ...``, ``a.dtype = ...``, ``a.resize``): a
    cached entry is served only while this is unchanged (found by review:
    arrmeta(a) kept the old shape after ``a.shape = (2, 3)``).  None for
    data that cannot change (pyarrow, storages); an awkward Array's layout
    object."""
    if isinstance(x, np.ndarray):
        mask = np.ma.getmask(x) if isinstance(x, np.ma.MaskedArray) else None
        return (x.shape, x.strides, x.dtype, x.__array_interface__["data"], x.flags.writeable,
                None if mask is None or mask is np.ma.nomask else _layout(mask))
    if isinstance(x, Ragged):
        validity = None if x.validity is None else _layout(x.validity)
        return (_layout(x.offsets), _layout(x.values), validity, x.validity_offset, x.encoding)
    mod = type(x).__module__ or ""
    if mod.startswith("awkward"):
        # an ak.Array changes in place (``a["y"] = ...``, ``a.layout = ...``):
        # its layout object names what it holds now (before, the first tree
        # was served for ever; found by review)
        lay = getattr(x, "layout", x)
        return ("awkward", id(lay), lay)
    if mod.startswith("pyarrow"):
        return None
    if hasattr(type(x), "__distarray__"):
        return _layout(x.__distarray__()["buffer"])
    if hasattr(type(x), "__gt_data_interface__") or not declares(x, "__array_interface__"):
        return None
    iface = x.__array_interface__
    data = iface.get("data")
    if not isinstance(data, tuple):
        # a buffer object: its identity and size (before, its repr: a 50 MiB
        # bytearray took 2 s a call; review 23)
        try:
            size = memoryview(data).nbytes
        except TypeError:
            size = None
        data = (id(data), type(data).__name__, size)
    return tuple(repr(iface.get(k)) for k in ("shape", "strides", "typestr", "descr")) + (data,)


def arrmeta(x):
    """The :class:`Arrmeta` of ``x`` (its tree in ``.root``, its ctypes
    structure in ``.struct``); the same object while ``x`` lives and its
    layout (shape, strides, dtype, data pointer) is unchanged."""
    key = id(x)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0]() is x:
        layout = _layout(x)
        if hit[1] == layout:
            return hit[2]
    am = with_struct(_build(x))
    try:
        ref = weakref.ref(x)
    except TypeError:
        return am          # not weak-referenceable: a fresh structure each call
    layout = _layout(x)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is x:
            if hit[1] == layout:
                return hit[2]          # another thread built it first
            # the layout changed in place: replace the entry, keeping the
            # reference the finalizer already registered for this object
            _CACHE[key] = (hit[0], layout, am)
            return am
        _CACHE[key] = (ref, layout, am)
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
