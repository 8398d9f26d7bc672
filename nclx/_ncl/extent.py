"""Whether an ``__array_interface__`` addresses only bytes its buffer holds.

NumPy builds an array from an interface whose ``data`` is a buffer object
without comparing the bytes its shape, strides and offset address with the
buffer's length, and then reads past its end.  ``nclx.storage.as_storage``
and ``nclx.types.arrmeta`` refuse such an interface with this check (a
raw ``(pointer, read_only)`` address, and ``__array_struct__``, are trusted:
their length is unknown).  Below every subpackage: both import it.
"""
import numpy as np

__all__ = ["c_strides", "declares", "has_buffer", "interface_itemsize", "interface_overrun"]


class _Interface:
    def __init__(self, iface):
        self.__array_interface__ = iface


def interface_itemsize(iface):
    """The item size of the dtype NumPy builds from the interface (its
    ``descr`` wins over ``typestr``: ``|V1`` with ``descr=[('a', '<f8')]`` is
    8 bytes), asked of NumPy with an empty array at a null address (no
    memory is touched)."""
    probe = {"data": (0, True), "shape": (0,), "typestr": iface["typestr"], "version": 3}
    if iface.get("descr") is not None:
        probe["descr"] = iface["descr"]
    return np.asarray(_Interface(probe)).dtype.itemsize


def declares(obj, name):
    """Whether ``obj`` has the attribute ``name`` on its type or in its
    instance ``__dict__`` (NumPy looks ``__array_interface__`` up on the
    instance too), looked up without running a property."""
    return hasattr(type(obj), name) or name in getattr(obj, "__dict__", {})


def has_buffer(obj):
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def interface_overrun(iface):
    """None, or the words saying which bytes the interface ``iface``
    addresses beyond its ``data`` buffer (a malformed interface: None, for
    NumPy's own error to follow)."""
    if not isinstance(iface, dict):
        return None
    buf = iface.get("data")
    if buf is None or isinstance(buf, tuple) or not has_buffer(buf):
        return None
    try:
        shape = tuple(int(n) for n in iface["shape"])
        itemsize = interface_itemsize(iface)
        strides = iface.get("strides")
        strides = c_strides(shape, itemsize) if strides is None else \
            tuple(int(s) for s in strides)
        offset = int(iface.get("offset", 0) or 0)
    except (KeyError, TypeError, ValueError):
        return None
    size = memoryview(buf).nbytes
    if any(n == 0 for n in shape):
        return None
    lo = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    if lo < 0 or hi > size:
        return (f"__array_interface__ shape={shape} strides={strides} offset={offset} "
                f"(itemsize {itemsize}) addresses bytes [{lo}, {hi}) but its data buffer "
                f"holds {size} bytes")
    return None
