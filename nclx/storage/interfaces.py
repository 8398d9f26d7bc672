"""How a storage hands out its buffers: host/device access, the array
interfaces (``__array_interface__``, ``__cuda_array_interface__``,
``__array__``, ``__gt_data_interface__``) and GDP-3's sync methods.

A mixin of :class:`nclx.storage.core.Storage`, below it: it reads the
storage's C slots (``_host``, ``_dev``, ``_buf``, ``_dims``, ``_halo``) and
knows nothing of the Storage classes.
"""
import numpy as np

from nclx.storage.buffer import locked
from nclx.storage.devices import SyncState
from nclx.storage.params import NoSuchBufferError, StorageError

__all__ = ["BuffersMixin"]

_CLEAN, _HOST_DIRTY, _DEVICE_DIRTY = (SyncState.SYNC_CLEAN, SyncState.SYNC_HOST_DIRTY,
                                      SyncState.SYNC_DEVICE_DIRTY)


class BuffersMixin:
    """Host/device access, the array interfaces and the sync methods."""
    __slots__ = ()

    # -- host / device access -------------------------------------------------
    def _need_host(self):
        if self._host is None:
            raise NoSuchBufferError(f"{type(self).__name__} has no host buffer "
                                    "(device='gpu', managed=None): use to_cupy()")
        return self._host

    def _need_device(self):
        if self._dev is None:
            raise NoSuchBufferError(f"{type(self).__name__} has no device buffer: "
                                    "create it with device='gpu'")
        return self._dev

    def _host_read(self):
        host = self._need_host()
        self._buf.device_to_host()
        return host

    def _device_read(self):
        dev = self._need_device()
        self._buf.host_to_device()
        return dev

    def to_numpy(self):
        """The host buffer as an ndarray view.  With managed='gt4py' the host
        is brought up to date first and then marked modified (the caller may
        write through the view); call set_synchronized() after read-only use."""
        host = self._need_host()
        with locked(self._buf):        # the transfer and the marking as one step
            self._buf.device_to_host()
            self._buf.mark(_HOST_DIRTY)
        return host

    def _host_read_only(self):
        """True when the host buffer is read-only (a wrapped read-only
        array or bytes): a device write could never be copied back."""
        return self._host is not None and not self._host.flags.writeable

    def to_cupy(self):
        """The device buffer as a device array view (CuPy's ndarray).  With
        managed='gt4py' the device is brought up to date first and then
        marked modified (the caller may write through the view) -- unless
        the host buffer is read-only: a device write could never be copied
        back, so the host stays the newer side and the next device access
        copies it again (the view's interface is flagged read-only)."""
        dev = self._need_device()
        with locked(self._buf):
            self._buf.host_to_device()
            self._buf.mark(_HOST_DIRTY if self._host_read_only() else _DEVICE_DIRTY)
        return dev

    def to_ndarray(self):
        """The device view when there is a device buffer, else the host view."""
        return self.to_cupy() if self._dev is not None else self.to_numpy()

    @property
    def __array_interface__(self):
        host = self.to_numpy()
        # explicit strides: NumPy's own dict says None when the flags say
        # contiguous, which would lose the strides of extent-1 axes
        return dict(host.__array_interface__, strides=host.strides)

    @property
    def __cuda_array_interface__(self):
        return self._device_interface(self.to_cupy())

    def _device_interface(self, dev):
        """The device view's CUDA array interface, flagged read-only (as the
        host's ``__array_interface__`` is) when the host buffer is read-only."""
        iface = self._buf.backend.interface(dev)
        if self._host_read_only():
            iface = dict(iface, data=(iface["data"][0], True))
        return iface

    def __array__(self, dtype=None, copy=None):
        """The host view (marked modified, as ``to_numpy``), or a copy when
        ``copy=True`` or ``dtype`` asks for a cast: a copy is read with the
        host brought up to date and leaves the sync state as it was (the
        caller cannot write through it).  NumPy's own ``np.array(s)`` and
        ``np.asarray(s)`` read ``__array_interface__`` instead (NumPy asks
        it before ``__array__``), which cannot know that a copy follows."""
        cast = dtype is not None and np.dtype(dtype) != self._need_host().dtype
        if cast and copy is False:
            raise ValueError(f"np.asarray(storage, dtype={dtype!r}, copy=False): "
                             f"the storage holds {self._host.dtype}; a cast needs a copy")
        if not (cast or copy):
            return self.to_numpy()
        with locked(self._buf):        # the transfer and the copy as one step
            host = self._host_read()
            return host.astype(dtype) if cast else host.copy()

    @property
    def __gt_data_interface__(self):
        out = {}
        common = {"dims": self._dims, "halo": self._halo}
        # explicit strides: GDP-3 gives every entry a tuple of strides (NumPy's
        # and CuPy's own dicts say None for contiguous buffers)
        if self._host is not None:
            out[None] = dict(self._host.__array_interface__, strides=tuple(self._host.strides),
                             acquire=self.device_to_host, touch=self.set_host_modified, **common)
        if self._dev is not None:
            out["gpu"] = dict(self._device_interface(self._dev),
                              strides=tuple(int(x) for x in self._dev.strides),
                              acquire=self.host_to_device, touch=self.set_device_modified,
                              **common)
        return out

    # -- sync methods (no-ops where there is nothing to synchronise) --------
    def device_to_host(self, *, force=False):
        self._buf.device_to_host(force)

    def host_to_device(self, *, force=False):
        self._buf.host_to_device(force)

    def synchronize(self):
        self._buf.synchronize()

    def set_device_modified(self):
        if self._buf.kind == "gt4py" and self._host_read_only():
            raise StorageError(f"set_device_modified(): {type(self).__name__} wraps read-only "
                               "host data; device writes cannot be copied back")
        self._buf.mark(_DEVICE_DIRTY)

    def set_host_modified(self):
        self._buf.mark(_HOST_DIRTY)

    def set_synchronized(self):
        self._buf.mark(_CLEAN)
