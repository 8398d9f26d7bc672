"""GDP-3's creation functions: empty, zeros, ones, full, their ``_like``
forms, ``as_storage`` (wrap without copying) and ``storage`` (copy): front
ends that resolve their keywords (nclx.storage.resolve) and allocate with
nclx.storage.core's constructor.

``empty`` and ``zeros`` are the methods of a ``_fastalloc.Creator`` built
here: a cache of resolved keywords in C whose misses and device storages
are served by the resolution and allocation this module imports (the
compiled class sits below them and is given them as its arguments).
"""
import numpy as np

from nclx.storage._fastalloc import Creator
from nclx.storage.core import CPU_BUFFER, CPUStorage, Storage, allocate
# pickles made before unpickling moved to core name nclx.storage.creation._rebuild
from nclx.storage.core import _rebuild  # noqa: F401
from nclx.storage.devices import SyncState
from nclx.storage.params import (StorageError, StorageTypeError, normalize_dtype,
                                 normalize_shape)
from nclx.storage.resolve import check_keys, recipe, resolve
from nclx.storage.wrap import as_storage

__all__ = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like", "as_storage", "storage", "SyncState", "StorageError"]

_CREATOR = Creator(recipe, allocate, CPUStorage, CPU_BUFFER)
empty = _CREATOR.empty
zeros = _CREATOR.zeros
_RECIPES = _CREATOR.recipes   # cache_key -> _fastalloc.Recipe (filled by Creator.create)


def _fill(s, value):
    """Fill as ``np.full`` does: NumPy's unsafe cast of ``value`` (its
    warnings and errors, once), the same bytes on every side (found by
    review: a NaN into integers raised where np.full warns, and a device
    side was filled with the uncast value)."""
    buf = s._buf
    if s._dev is not None and buf.kind != "cuda":
        shape = () if np.ndim(value) == 0 else s.shape
        v = np.empty(shape, s.dtype)
        np.copyto(v, value, casting="unsafe")
        if s._host is not None:
            s._host[...] = v
        if shape == ():
            s._dev.fill(v[()])
        else:
            s._dev[...] = buf.backend.to_device(v)
    elif s._host is not None:
        buf.device_to_host()        # managed memory: let the device finish first
        np.copyto(s._host, value, casting="unsafe")
    return s


def ones(shape, dtype=np.float64, **kwargs):
    return _fill(empty(shape, dtype, **kwargs), 1)


def full(shape, fill_value, dtype=np.float64, **kwargs):
    return _fill(empty(shape, dtype, **kwargs), fill_value)


def _array_like(x):
    """An array of the host or a device (shape and dtype); a memoryview has
    a shape but no dtype: NumPy reads it (before, AttributeError)."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _like_shape(data):
    if isinstance(data, Storage) or _array_like(data):
        return tuple(data.shape), data.dtype
    arr = np.asarray(data)
    return arr.shape, arr.dtype


def empty_like(data, dtype=None, **kwargs):
    """Like ``data`` (shape, dims, halo, layout, alignment, device) unless overridden."""
    check_keys(kwargs)
    shape, dt = _like_shape(data)
    return allocate(resolve(shape, dt if dtype is None else dtype, data, kwargs))


def zeros_like(data, dtype=None, **kwargs):
    check_keys(kwargs)
    shape, dt = _like_shape(data)
    return allocate(resolve(shape, dt if dtype is None else dtype, data, kwargs), zero=True)


def ones_like(data, dtype=None, **kwargs):
    return _fill(empty_like(data, dtype, **kwargs), 1)


def full_like(data, fill_value, dtype=None, **kwargs):
    return _fill(empty_like(data, dtype, **kwargs), fill_value)


def storage(data=None, device_data=None, *, dtype=None, copy=True, sync_state=None, **kwargs):
    """A storage initialised with a copy of ``data`` (or ``device_data``);
    ``copy=False`` wraps instead (:func:`as_storage`)."""
    if sync_state is not None and not isinstance(sync_state, SyncState):
        raise StorageTypeError(f"sync_state={sync_state!r}: expected a SyncState")
    if not copy:
        return as_storage(data, device_data, dtype=dtype, sync_state=sync_state, **kwargs)
    check_keys(kwargs, ("shape",))
    src = data if data is not None else device_data
    if src is None:
        if "shape" not in kwargs:
            raise StorageTypeError("storage(): give data, device_data or shape=")
        shape = kwargs.pop("shape")
        return empty(shape, np.float64 if dtype is None else dtype, **kwargs)
    shape = kwargs.pop("shape", None)
    if not (isinstance(src, Storage) or _array_like(src)):
        # np.array(data, dtype=)'s conversion: a list's items are read as the
        # dtype (found by review: read as float64 or int64 first, then cast,
        # [300] as uint8 gave 44 where NumPy raises OverflowError)
        src = np.asarray(src) if dtype is None else np.asarray(src, normalize_dtype(dtype))
    if shape is not None and normalize_shape(shape) != tuple(src.shape):
        # (found by review: ignored, even when malformed; as_storage refuses it)
        raise StorageError(f"storage: shape={shape!r} disagrees with the data's shape "
                           f"{tuple(src.shape)} (a copy keeps the data's shape; "
                           "as_storage(buffer, shape=, dtype=) views raw bytes)")
    if device_data is not None and data is None and "device" not in kwargs \
            and not isinstance(src, Storage):
        kwargs["device"] = "gpu"
        kwargs.setdefault("managed", None)
    r = resolve(src.shape, src.dtype if dtype is None else dtype, src, kwargs)
    new = allocate(r)
    value = src._host_read() if isinstance(src, Storage) and src._host is not None else \
        (src._dev if isinstance(src, Storage) else src)
    new[...] = value
    if new._buf.kind == "gt4py" and sync_state is not None:
        new._buf.sync.state = sync_state.state
    return new
