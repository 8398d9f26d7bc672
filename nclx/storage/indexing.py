"""Indexing of storages: basic indexing returns a view that keeps dims,
halo and layout right; advanced and boolean indexing return arrays;
assignment picks the side (host or device) the value lives on and keeps
the SyncState true."""
import bisect
import operator

import numpy as np

from nclx.storage._fastalloc import StorageBase
from nclx.storage.buffer import all_locked, read_nested
from nclx.storage.devices import SyncState

__all__ = ["IndexingMixin"]

_HOST_DIRTY, _DEVICE_DIRTY = SyncState.SYNC_HOST_DIRTY, SyncState.SYNC_DEVICE_DIRTY


def _is_int(k):
    if isinstance(k, (bool, np.bool_)):
        return False
    try:
        operator.index(k)
    except TypeError:
        return False
    return True


def _is_basic(key):
    return all(k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k) for k in key)


def _slice_halo(n, lo, hi, k):
    """Halo of ``range(n)[k]`` when the domain is ``[lo, n - hi)``."""
    r = range(n)[k]
    if r.step > 0:
        first, end = bisect.bisect_left(r, lo), bisect.bisect_left(r, n - hi)
    else:
        neg = operator.neg
        first = bisect.bisect_right(r, -(n - hi), key=neg)
        end = bisect.bisect_right(r, -lo, key=neg)
    end = max(end, first)
    return first, len(r) - end


class IndexingMixin:
    """``__getitem__`` / ``__setitem__`` of :class:`~nclx.storage.Storage`."""
    __slots__ = ()

    def _basic_view(self, key):
        host = None if self._host is None else self._host[key]
        dev = None if self._dev is None else self._dev[key]
        real = [k for k in key if k is not None and k is not Ellipsis]
        fill = self.ndim - len(real)
        full = []
        for k in key:
            full.extend([slice(None)] * fill if k is Ellipsis else [k])
        if Ellipsis not in key:
            full.extend([slice(None)] * fill)
        dims, halo, ranks, d = [], [], [], 0
        used = set(self._dims)
        for k in full:
            if k is None:
                name = next(str(i) for i in range(len(used) + 1) if str(i) not in used)
                used.add(name)
                dims.append(name)
                halo.append((0, 0))
                ranks.append(-1)
                continue
            if isinstance(k, slice):
                lo, hi = self._halo[d]
                dims.append(self._dims[d])
                halo.append(_slice_halo(self.shape[d], lo, hi, k))
                ranks.append(self._layout[d])
            d += 1
        order = sorted(range(len(ranks)), key=lambda i: (ranks[i], i))
        layout = [0] * len(ranks)
        for pos, i in enumerate(order):
            layout[i] = pos
        return self._view(host, dev, tuple(dims), tuple(halo), tuple(layout))

    def _plain_key(self, key, device):
        """Storages inside a key become arrays on the side being indexed."""
        def conv(k):
            if isinstance(k, StorageBase):
                if device:
                    return k._dev if k._dev is not None else self._buf.backend.to_device(k._host_read())
                # a device-only key's own backend (a CPU storage has none; found by review)
                return k._host_read() if k._host is not None else k._buf.backend.to_host(k._dev)
            return k
        return tuple(conv(k) for k in key) if isinstance(key, tuple) else (conv(key),)

    def __getitem__(self, key):
        on_device = self._host is None
        key = self._plain_key(key, on_device)
        if _is_basic(key):
            if sum(1 for k in key if _is_int(k)) == self.ndim and all(_is_int(k) for k in key):
                return self._dev[key] if on_device else self._host_read()[key]
            return self._basic_view(key)
        return self._dev[key] if on_device else self._host_read()[key]

    def _value_on_device(self, value):
        if isinstance(value, StorageBase):
            if value._buf.kind == "gt4py":
                return value._buf.sync.state != _HOST_DIRTY
            return value._dev is not None
        gdi = getattr(value, "__gt_data_interface__", None)
        if isinstance(gdi, dict) and "gpu" in gdi:
            return True
        return self._buf.backend is not None and self._buf.backend.is_device_array(value)

    def _value_for(self, value, device):
        backend = self._buf.backend
        if isinstance(value, StorageBase):
            if device:
                return value._device_read() if value._dev is not None \
                    else backend.to_device(value._host_read())
            return value._host_read() if value._host is not None \
                else value._buf.backend.to_host(value._dev)
        if device:
            return value if np.isscalar(value) else backend.to_device(value)
        if backend is not None and backend.is_device_array(value):
            return backend.to_host(value)
        return value

    def __setitem__(self, key, value):
        buf = self._buf
        if self._host is None:
            on_device = True
        elif self._dev is None:
            on_device = False
        else:
            on_device = self._value_on_device(value)
        # the value's and the key's storages too, in the one order of
        # buffer.all_locked (a ufunc holds several at once; review 24);
        # storages inside lists read before (review 24c)
        if buf.sync is not None:
            value = read_nested(value)
            key = tuple(read_nested(k) for k in key) if isinstance(key, tuple) \
                else read_nested(key)
        keys = key if isinstance(key, tuple) else (key,)
        with all_locked([self, value, *keys]):
            key = self._plain_key(key, on_device)
            if on_device:
                if self._host is not None and not self._host.flags.writeable:
                    raise ValueError("assignment destination is read-only (the storage wraps "
                                     "read-only host data; a device write could not be kept)")
                buf.host_to_device()
                self._dev[key] = self._value_for(value, True)
                buf.mark(_DEVICE_DIRTY)
            else:
                buf.device_to_host()
                self._host[key] = self._value_for(value, False)
                buf.mark(_HOST_DIRTY)
