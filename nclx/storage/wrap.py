"""``as_storage``: wrap existing host and/or device buffers without copying.

The buffers must agree with each other (shape, dtype, strides) and with the
keywords given (layout, alignment_size, dims, halo, aligned_index); each
disagreement is a :class:`StorageError` naming it.  A flat buffer of raw
bytes (bytes-like, 1-D uint8) may be given with ``shape=``, ``dtype=``,
``strides=`` and ``offset=``: the extent those describe is checked against
the buffer's length before any view is made, so nothing outside it is ever
read.  Any other buffer object (array.array('d'), a memoryview of int64) is
the array ``np.asarray`` makes of it and, like a typed ndarray, is never
reinterpreted: ``dtype=``, ``shape=``, ``strides=`` must agree with it.
"""
import numpy as np

from nclx._ncl.extent import c_strides as _c_strides, has_buffer as _has_buffer
from nclx._ncl.extent import declares, interface_overrun
from nclx.storage import devices
from nclx.storage.buffer import Buffer
from nclx.storage.core import CLASS_OF_KIND, Storage, make
from nclx.storage.devices import SyncState
from nclx.storage.params import (StorageError, StorageTypeError, layout_from_strides,
                                 normalize_dtype, normalize_shape)
from nclx.storage.resolve import check_keys, resolve

__all__ = ["as_storage"]

_BUFFER_KEYS = ("shape", "dtype", "strides", "offset")
_INTP_MAX = int(np.iinfo(np.intp).max)


def _host_array(data, kw):
    """A zero-copy ndarray over ``data`` (checked against shape/strides/offset)."""
    if isinstance(data, Storage):
        return data._host_read() if data._host is not None else None
    flat = {k: kw.get(k) for k in _BUFFER_KEYS if kw.get(k) is not None}
    # NumPy's order: the buffer protocol (bytes aside, a scalar to NumPy),
    # then __array_struct__, then __array_interface__ (found by review: a
    # bytearray subclass with an interface describing other memory was read
    # through the interface, where np.asarray reads its bytes)
    buffer_first = not isinstance(data, (np.ndarray, bytes)) and _has_buffer(data)
    # read once: the array is built from the dict checked (a property could
    # describe another extent on the next read)
    iface = None if isinstance(data, np.ndarray) or buffer_first else \
        getattr(data, "__array_interface__", None)
    if not (isinstance(data, np.ndarray) or buffer_first or iface is not None
            or hasattr(data, "__array_struct__") or _has_buffer(data)):
        raise StorageTypeError(f"as_storage(data=<{type(data).__name__}>): wraps buffers "
                               "without copying; use storage(data) to copy a "
                               f"{type(data).__name__}")
    from_buffer = False
    if buffer_first and (declares(data, "__array_interface__")
                         or declares(data, "__array_struct__")):
        arr, from_buffer = np.asarray(data), True   # its buffer, as NumPy reads it
    elif not buffer_first and (isinstance(data, np.ndarray) or iface is not None
                               or hasattr(data, "__array_struct__")):
        if iface is not None:
            _check_interface_extent(iface)
            data = _Interface(_pinned(iface), data)
        arr = np.asarray(data)
    else:   # bytes, bytearray, memoryview, mmap, array.array, ctypes arrays
        arr, from_buffer = _buffer_array(data), True
    if "shape" not in flat and "strides" not in flat and _raw_bytes(arr, any_ndim=from_buffer) \
            and ("offset" in flat or ("dtype" in flat and normalize_dtype(flat["dtype"]) !=
                                      arr.dtype)):
        flat["shape"] = _items_in(arr, flat)
    if "shape" in flat and tuple(arr.shape) != normalize_shape(flat["shape"]):
        # a raw byte buffer described by shape/dtype/strides/offset (a buffer
        # object of single bytes of any shape: its flat bytes, as before); a
        # typed array of another shape is never reinterpreted
        if not _raw_bytes(arr, any_ndim=from_buffer):
            hint = "; memoryview(data).cast('B') gives its raw bytes" if from_buffer else ""
            raise StorageError(f"as_storage: shape={flat['shape']!r} disagrees with the "
                               f"{arr.dtype} array's shape {arr.shape} (only raw byte buffers "
                               f"are described by shape=/strides=/offset={hint})")
        mem = arr.reshape(-1) if arr.size else np.empty(0, np.uint8)
        return _view_flat(mem.view(np.uint8), flat, writeable=arr.flags.writeable)
    for key in ("dtype", "strides"):
        if key in flat:
            want = normalize_dtype(flat[key]) if key == "dtype" else _int_tuple("strides",
                                                                              flat[key])
            have = arr.dtype if key == "dtype" else arr.strides
            if want != have:
                raise StorageError(f"as_storage: {key}={flat[key]!r} disagrees with the "
                                   f"buffer's {key} {have!r}")
    if flat.get("offset"):
        raise StorageError(f"as_storage: offset={flat['offset']!r} needs a flat buffer and shape=")
    normalize_dtype(arr.dtype, "data")
    return arr


def _items_in(arr, flat):
    """The shape of a flat byte buffer given dtype= and/or offset= without
    shape=: as many items as its bytes after the offset hold, as
    ``np.frombuffer(buf, dtype, offset=offset)`` reads it (review 27:
    ``as_storage(bytearray(16), dtype='f8')`` was refused as a dtype
    disagreeing with uint8)."""
    dtype = normalize_dtype(flat.get("dtype", arr.dtype))
    offset = flat.get("offset", 0)
    if isinstance(offset, (bool, np.bool_)) or not isinstance(offset, (int, np.integer)):
        raise StorageTypeError(f"as_storage: offset={offset!r}: expected an integer (bytes)")
    room = arr.nbytes - int(offset)
    if not 0 <= int(offset) <= arr.nbytes:
        raise StorageError(f"as_storage: offset={offset} lies outside the buffer's "
                           f"{arr.nbytes} bytes")
    if dtype.itemsize == 0 or room % dtype.itemsize:
        raise StorageError(f"as_storage: the buffer's {arr.nbytes} bytes after offset={offset} "
                           f"are not a whole number of {dtype} items ({dtype.itemsize} bytes "
                           "each); give shape=")
    return (room // dtype.itemsize,)


def _buffer_array(data):
    """The array ``np.asarray`` makes of a buffer object, zero-copy: its
    format's dtype and its shape (found by review: array.array('i'), a
    memoryview of int64 or one cast to 'd' were wrapped as their uint8
    bytes; bytes, bytearray, mmap give uint8 as before)."""
    try:
        return np.asarray(memoryview(data))
    except (TypeError, ValueError, NotImplementedError) as exc:
        with memoryview(data) as mv:
            fmt = mv.format
        raise StorageTypeError(f"as_storage(data=<{type(data).__name__}>): its buffer format "
                               f"{fmt!r} is not one NumPy reads ({exc}); pass "
                               "memoryview(data).cast('B') to wrap its raw bytes") from None


class _Interface:
    """One reading of an object's ``__array_interface__``, kept with the
    object (the array's base holds both alive)."""
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, iface, owner):
        self.__array_interface__ = iface
        self.owner = owner


def _pinned(iface):
    """The interface with a buffer ``data`` held exported for the array's
    life: NumPy releases its export at once, and a bytearray could then be
    resized under the storage, which would read and write freed memory
    (found by review)."""
    buf = iface.get("data") if isinstance(iface, dict) else None
    if buf is None or isinstance(buf, tuple) or not _has_buffer(buf):
        return iface
    return dict(iface, data=memoryview(buf))


def _check_interface_extent(iface):
    """An ``__array_interface__`` whose ``data`` is a buffer object must hold
    every byte its shape, strides and offset address (:mod:`nclx._ncl.extent`)."""
    overrun = interface_overrun(iface)
    if overrun is not None:
        raise StorageError(f"as_storage: {overrun}")


def _raw_bytes(arr, any_ndim=False):
    """A contiguous buffer of single bytes (what shape=/strides= describe)."""
    return (arr.ndim <= 1 or any_ndim) and arr.itemsize == 1 and arr.dtype.kind in "uiVSb" \
        and arr.flags.c_contiguous


def _int_tuple(keyword, value):
    try:
        seq = tuple(value)
    except TypeError:
        raise StorageTypeError(f"as_storage: {keyword}={value!r}: expected a sequence of "
                               "integers") from None
    out = []
    for v in seq:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise StorageTypeError(f"as_storage: {keyword}={value!r}: entry {v!r} is not an "
                                   "integer")
        out.append(int(v))
    return tuple(out)


def _view_flat(mem, flat, writeable):
    shape = normalize_shape(flat["shape"])
    dtype = normalize_dtype(flat.get("dtype", np.float64))
    if "strides" in flat:
        strides = _int_tuple("strides", flat["strides"])
        if len(strides) != len(shape):
            raise StorageError(f"as_storage: strides={flat['strides']!r} has {len(strides)} "
                               f"entries for shape {shape}")
    else:
        strides = _c_strides(shape, dtype.itemsize)
    offset = flat.get("offset", 0)
    if isinstance(offset, (bool, np.bool_)) or not isinstance(offset, (int, np.integer)):
        raise StorageTypeError(f"as_storage: offset={offset!r}: expected an integer (bytes)")
    offset = int(offset)
    reach = dtype.itemsize
    for n in shape:
        reach *= max(n, 1)
    if reach > _INTP_MAX or any(abs(x) > _INTP_MAX for x in strides):
        raise StorageError(f"as_storage: shape={shape}, strides={strides} with {dtype} items: "
                           f"more than this machine can address ({_INTP_MAX} bytes)")
    lo, hi = _extent(shape, strides, dtype.itemsize)
    if offset + lo < 0:
        raise StorageError(f"as_storage: offset={offset} with strides={strides} reaches byte "
                           f"{offset + lo}, before the buffer's start")
    if offset + hi > mem.nbytes and hi > lo:
        raise StorageError(f"as_storage: shape={shape}, strides={strides}, offset={offset} "
                           f"reach byte {offset + hi}, past the buffer's {mem.nbytes} bytes")
    out = np.ndarray(shape, dtype, buffer=mem, offset=offset if hi > lo else 0, strides=strides)
    if not writeable:
        out.flags.writeable = False
    return out


def _extent(shape, strides, itemsize):
    """(lowest, one past the highest) byte offset a strided view touches."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    return lo, hi + itemsize


def _device_array(device_data, backend):
    if isinstance(device_data, Storage):
        return device_data._device_read() if device_data._dev is not None else None
    if not backend.is_device_array(device_data):
        raise StorageTypeError(f"as_storage(device_data=<{type(device_data).__name__}>): not a "
                               f"device array of the {backend.name!r} backend")
    return backend.to_device(device_data)


def _agree(host, dev):
    for name in ("shape", "dtype", "strides"):
        h, d = getattr(host, name), getattr(dev, name)
        if (np.dtype(h) != np.dtype(d)) if name == "dtype" else tuple(h) != tuple(d):
            raise StorageError(f"as_storage: data and device_data disagree on {name}: "
                               f"{tuple(h) if name != 'dtype' else h} vs "
                               f"{tuple(d) if name != 'dtype' else d}")


def _sibling(arr, make_span):
    """A buffer on the other side with the same strides as ``arr``."""
    lo, hi = _extent(arr.shape, arr.strides, arr.itemsize)
    span = make_span(max(hi - lo, 1))
    return span, -lo


def as_storage(data=None, device_data=None, *, sync_state=None, **kwargs):
    """Wrap ``data`` (host) and/or ``device_data`` (device) without copying."""
    check_keys(kwargs, _BUFFER_KEYS)
    if data is None and device_data is None:
        raise StorageTypeError("as_storage(): give data, device_data or both")
    if sync_state is not None and not isinstance(sync_state, SyncState):
        raise StorageTypeError(f"sync_state={sync_state!r}: expected a SyncState")
    want_device = kwargs.get("device", "gpu" if device_data is not None else
                             ("gpu" if isinstance(data, Storage) and data.device else None))
    if device_data is None and isinstance(data, Storage) and data._dev is not None:
        # a storage on a device keeps its own backend (review 27: the one in
        # force at the call was asked for, outside the storage's block
        # CuPy's DeviceUnavailableError)
        backend = data._buf.backend
    elif device_data is not None or want_device == "gpu":
        backend = devices.current()
    else:
        backend = None
    host = _host_array(data, kwargs) if data is not None else None
    dev = _device_array(device_data, backend) if device_data is not None else None
    if isinstance(data, Storage) and dev is None and data._dev is not None:
        dev = data._dev
    if isinstance(data, Storage) and host is None and dev is None:
        dev = data._dev
    if host is not None and dev is not None:
        _agree(host, dev)
    ref = host if host is not None else dev
    tmpl = data if isinstance(data, Storage) else ref
    kw = {k: v for k, v in kwargs.items() if k not in _BUFFER_KEYS}
    kw.setdefault("device", want_device)
    r = resolve(ref.shape, ref.dtype, tmpl, kw)
    if r["device"] is None and dev is not None:
        if device_data is None:     # (review: the message named a device_data never given)
            raise StorageError(f"as_storage(<{type(data).__name__}>, device=None): data has a "
                               "device buffer, and a host-only wrap of it would not be kept in "
                               "sync; copy it (storage(data, device=None)) or use to_numpy()")
        raise StorageError("as_storage: device=None but device_data was given")
    _check_layout(r, ref)
    _check_alignment(r, ref, backend if host is None else None)
    kind, host, dev, spans = _pair(r, host, dev, backend, data)
    if isinstance(data, Storage) and data._buf.kind == kind and (host is data._host or
                                                               host is None) and \
            (dev is data._dev or dev is None):
        buf = data._buf
    else:
        state = sync_state
        if kind == "gt4py" and state is None:
            state = SyncState(SyncState.SYNC_CLEAN if (data is not None and device_data is not None)
                              else SyncState.SYNC_HOST_DIRTY if device_data is None
                              else SyncState.SYNC_DEVICE_DIRTY)
        buf = Buffer(kind, backend, host, dev, *spans, sync_state=state)
    return make(CLASS_OF_KIND[kind], buf, host, dev, r["dims"], r["halo"], r["layout"],
                r["alignment"], r["aligned_index"])


def _pair(r, host, dev, backend, data):
    """(kind, host, dev, spans): add the missing side where the kind needs it."""
    if r["device"] is None:
        return "cpu", host, None, (None, None)
    managed = r["managed"]
    if managed == "cuda":
        if host is None or dev is None or \
                host.__array_interface__["data"][0] != backend.address(dev):
            raise StorageError("as_storage(managed='cuda'): give data and device_data views of "
                               "one CUDA managed allocation (the same address)")
        return "cuda", host, dev, (None, None)
    if managed is None:
        if dev is None:
            raise StorageError("as_storage(device='gpu', managed=None) wraps device_data; "
                               "data alone would need a copy (use storage(data, device='gpu'))")
        return "gpu", None, dev, (None, None)
    if dev is None:
        span, off = _sibling(host, backend.alloc)
        dev = backend.view(span, off, host.shape, host.dtype, host.strides)
    if host is None:
        span, off = _sibling(dev, lambda n: np.empty(n, np.uint8))
        host = np.ndarray(dev.shape, dev.dtype, buffer=span, offset=off, strides=dev.strides)
    return "gt4py", host, dev, (None, None)


def _check_layout(r, arr):
    if arr.size == 0:          # no element: strides say nothing (NumPy may zero them)
        return
    have = layout_from_strides(arr.strides, arr.shape)
    want = r["layout"]
    moving = [d for d in range(arr.ndim) if arr.shape[d] > 1]
    if sorted(moving, key=lambda d: want[d]) != sorted(moving, key=lambda d: have[d]):
        raise StorageError(f"as_storage: layout={want} disagrees with the buffer's strides "
                           f"{tuple(arr.strides)} (their layout is {have})")


def _check_alignment(r, arr, backend):
    a = r["alignment"]
    if a == 1 or arr.size == 0:
        return
    base = backend.address(arr) if backend is not None else arr.__array_interface__["data"][0]
    addr = base + sum(i * s for i, s in zip(r["aligned_index"], arr.strides))
    if addr % a:
        raise StorageError(f"as_storage: alignment_size={a}: the element at aligned_index="
                           f"{r['aligned_index']} sits at address {addr:#x}, {addr % a} bytes "
                           "past a boundary")
