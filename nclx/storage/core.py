"""The Storage classes: one allocation's views with their dims, halo and
layout, and their constructors (the array interfaces and GDP-3 sync methods
come from nclx.storage.interfaces, indexing from nclx.storage.indexing,
numbers, operators and NumPy's dispatch from nclx.storage.values).

A Storage holds a host view (an ndarray), a device view (a backend array)
or both, over one :class:`~nclx.storage.buffer.Buffer` shared by all views
of that allocation.  It is not an ndarray subclass; ``np.asarray(s)`` is a
zero-copy view of the host buffer.
"""
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from nclx.storage import devices
from nclx.storage._fastalloc import StorageBase, host_field, make_recipe, new_storage
from nclx.storage.alloc import place, plan
from nclx.storage.buffer import Buffer, locked
from nclx.storage.indexing import IndexingMixin, _is_int
from nclx.storage.interfaces import BuffersMixin
from nclx.storage.params import (StorageTypeError, default_dims, fit_alignment,
                                 layout_from_strides, normalize_aligned_index,
                                 normalize_alignment, normalize_device, normalize_dims,
                                 normalize_dtype, normalize_halo, normalize_layout,
                                 normalize_managed, normalize_shape)
from nclx.storage.values import ValuesMixin

__all__ = ["Storage", "CPUStorage", "GPUStorage", "SoftwareManagedGPUStorage",
           "CUDAManagedGPUStorage", "make", "allocate", "wrap_host", "wrap_device",
           "CLASS_OF_KIND", "CPU_BUFFER"]


class Storage(StorageBase, BuffersMixin, IndexingMixin, ValuesMixin):
    """Base class of nclx's GDP-3 storages (use the creation functions)."""
    __slots__ = ()      # the fields live in StorageBase's C slots

    def __init__(self, *args, **kwargs):    # constructors fill the C slots without it
        raise TypeError(f"{type(self).__name__}() would have no buffers (review): use "
                        "nclx.storage.empty, zeros, ..., as_storage or storage")

    # -- basic attributes ---------------------------------------------------
    @property
    def _ref(self):
        return self._host if self._host is not None else self._dev

    shape = property(lambda self: tuple(self._ref.shape), doc="Shape of the field.")
    strides = property(lambda self: tuple(self._ref.strides), doc="Strides in bytes.")
    dtype = property(lambda self: np.dtype(self._ref.dtype), doc="The NumPy dtype.")
    ndim = property(lambda self: self._ref.ndim, doc="Number of dimensions.")
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize,
                      doc="Bytes of the field's elements (padding excluded).")
    device = property(lambda self: "gpu" if self._dev is not None else None)
    layout = property(lambda self: self._layout,
                      doc="Layout map: the dimension with the largest entry has the smallest stride.")
    alignment_size = property(lambda self: self._alignment)
    aligned_index = property(lambda self: self._aligned_index)
    dims = property(lambda self: self._dims)
    __gt_dims__ = dims

    @property
    def sync_state(self):
        """The SyncState shared by every view of this buffer (None unless managed='gt4py')."""
        return self._buf.sync

    @property
    def data(self):
        """The host buffer as a memoryview (None without one)."""
        return None if self._host is None else self._host.data

    @property
    def device_data(self):
        """The device buffer's pointer object (None without one)."""
        return None if self._dev is None else self._buf.backend.pointer(self._dev)

    @property
    def halo(self):
        return self._halo

    @halo.setter
    def halo(self, value):
        # the aligned point stays where it is (that would need a new allocation)
        self._halo = normalize_halo(value, self.shape)

    @property
    def __gt_origin__(self):
        """First domain point, in gt4py's canonical order of dims (I, J, K,
        then extra dims by number), which is how gt4py reads it."""
        order = sorted(range(self.ndim), key=lambda d: _canon(self._dims[d]))
        return tuple(self._halo[d][0] for d in order)

    @property
    def domain_view(self):
        """A view without the halo: index 0 is the first domain point."""
        key = tuple(slice(lo, n - hi) for (lo, hi), n in zip(self._halo, self.shape))
        return self[key] if key else self[...]

    def __repr__(self):
        return (f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, "
                f"dims={''.join(self._dims) if all(len(d) == 1 for d in self._dims) else self._dims}, "
                f"halo={self._halo}, layout={self._layout})")

    # -- views ---------------------------------------------------------------
    def _view(self, host, dev, dims, halo, layout, aligned_index=None):
        return make(type(self), self._buf, host, dev, dims, halo, layout, self._alignment,
                    aligned_index)

    def transpose(self, *axes):
        """A view with the axes permuted (dims, halo and layout follow)."""
        if len(axes) == 1 and (axes[0] is None or not _is_int(axes[0])):
            axes = axes[0]
        nd = self.ndim
        axes = tuple(range(nd - 1, -1, -1)) if axes is None or len(axes) == 0 else tuple(axes)
        try:
            if any(isinstance(a, (bool, np.bool_)) for a in axes):
                raise TypeError     # not axes: NumPy's "an integer is required" (review)
            axes = tuple(normalize_axis_index(operator.index(a), nd) for a in axes)
        except TypeError:
            raise StorageTypeError(f"transpose axes={axes!r}: expected integers") from None
        except OverflowError:       # (an axis past C long: a bare OverflowError; review)
            raise np.exceptions.AxisError(f"transpose axes={axes!r}: an axis is out of bounds "
                                          f"for {nd} dimensions") from None
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"transpose axes={axes!r}: don't match the {nd} dimensions")
        host = None if self._host is None else self._host.transpose(axes)
        dev = None if self._dev is None else self._dev.transpose(axes)
        pick = lambda seq: None if seq is None else tuple(seq[a] for a in axes)  # noqa: E731
        return self._view(host, dev, pick(self._dims), pick(self._halo), pick(self._layout),
                          pick(self._aligned_index))

    @property
    def T(self):
        return self.transpose()

    # -- copies ----------------------------------------------------------------
    def copy(self):
        """A new storage with the same parameters and a copy of the data."""
        new = self._empty_like()
        with locked(self._buf):
            if self._buf.kind == "cuda":
                self._buf.backend.synchronize()
            if self._host is not None:
                np.copyto(new._host, self._host)
            if self._dev is not None and self._buf.kind != "cuda":
                new._dev[...] = self._dev
            if self._buf.kind == "gt4py":
                new._buf.sync.state = self._buf.sync.state
        return new

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo=None):
        return self.copy()

    def __reduce__(self):
        snapshot = np.array(self._host_read()) if self._host is not None \
            else self._buf.backend.to_host(self._dev)
        managed = self._buf.kind if self._buf.kind in ("gt4py", "cuda") else None
        return _rebuild, (snapshot, self._dims, self._halo, self._layout, self._alignment,
                          self.device, managed, self._aligned_index, self._buf.backend)

    # -- constructors for the layers below (ufunc.py reaches them through an operand)
    def _params(self, dtype=None):
        """The resolved keywords of a new allocation like this storage (of
        ``dtype``): what ``empty_like(self, dtype)`` resolves to."""
        dt = self.dtype if dtype is None else normalize_dtype(dtype)
        kind = self._buf.kind
        device = None if kind == "cpu" else "gpu"
        return dict(shape=self.shape, dtype=dt, dims=self._dims, halo=self._halo,
                    layout=self._layout,
                    alignment=fit_alignment(self._alignment, dt.itemsize),
                    aligned_index=normalize_aligned_index(self._aligned_index, self.shape,
                                                          self._halo),
                    device=device, managed=_MANAGED_OF_KIND[kind],
                    backend=self._buf.backend if device is not None else None)

    def _empty_like(self, dtype=None):
        """A new storage laid out like this one (contents undefined)."""
        return allocate(self._params(dtype))

    @staticmethod
    def _wrap_host(arr, dims, halo):
        """A CPU storage over a host result ``arr`` (:func:`wrap_host`)."""
        return wrap_host(arr, dims, halo)

    @staticmethod
    def _wrap_device(arr, dims, halo, backend=None):
        """A device-only storage over a device result ``arr`` (:func:`wrap_device`)."""
        return wrap_device(arr, dims, halo, backend)


class CPUStorage(Storage):
    """A host buffer (NumPy)."""
    __slots__ = ()


class GPUStorage(Storage):
    """A device buffer only (CuPy); no host buffer."""
    __slots__ = ()


class SoftwareManagedGPUStorage(Storage):
    """Host and device buffers kept in step by nclx through a SyncState."""
    __slots__ = ()


class CUDAManagedGPUStorage(Storage):
    """One CUDA managed (unified) allocation seen from host and device."""
    __slots__ = ()


CLASS_OF_KIND = {"cpu": CPUStorage, "gpu": GPUStorage, "gt4py": SoftwareManagedGPUStorage,
                 "cuda": CUDAManagedGPUStorage}
_MANAGED_OF_KIND = {"cpu": None, "gpu": None, "gt4py": "gt4py", "cuda": "cuda"}

# CPU storages share no state (no sync, no device), so they share one Buffer
CPU_BUFFER = Buffer("cpu")


def make(cls, buf, host, dev, dims, halo, layout, alignment, aligned_index):
    nd = (host if host is not None else dev).ndim
    return new_storage(cls, buf, host, dev,
                       tuple(dims) if dims is not None else default_dims(nd),
                       tuple(halo) if halo is not None else ((0, 0),) * nd,
                       tuple(layout), alignment,
                       None if aligned_index is None else tuple(aligned_index))


def allocate(r, p=None, zero=False):
    """A new storage for resolved keywords ``r`` (nclx.storage.resolve, or
    :meth:`Storage._params`), laid out by ``p`` (its plan, computed when
    None); contents undefined unless ``zero``: then calloc-backed zeros on
    the host, zeros on the device."""
    if p is None:
        p = plan(r["shape"], r["layout"], r["dtype"], r["alignment"], r["aligned_index"])
    shape, dtype = r["shape"], r["dtype"]
    meta = (r["dims"], r["halo"], r["layout"], r["alignment"], r["aligned_index"])
    if r["device"] is None:
        host = host_field(make_recipe(r, p, 0), zero)[0]
        return make(CPUStorage, CPU_BUFFER, host, None, *meta)
    backend = r.get("backend") or devices.current()
    kind = {None: "gpu", "gt4py": "gt4py", "cuda": "cuda"}[r["managed"]]
    host = dev = host_span = dev_span = None
    if kind == "gt4py":
        host, raw, off = host_field(make_recipe(r, p, 0), zero)
        host_span = raw[off:off + p.span_bytes]
    if kind in ("gpu", "gt4py"):
        draw = backend.alloc(p.alloc_bytes)
        doff = place(p, backend.address(draw))
        dev = backend.view(draw, doff, shape, dtype, p.strides)
        dev_span = backend.view(draw, doff, (p.span_bytes,), np.uint8, (1,))
        if zero:
            dev_span.fill(0)
    if kind == "cuda":
        hraw, draw = backend.managed_alloc(p.alloc_bytes)
        off = place(p, backend.address(draw))
        host = np.ndarray(shape, dtype, buffer=hraw, offset=off, strides=p.strides)
        dev = backend.view(draw, off, shape, dtype, p.strides)
        if zero:
            host[...] = 0
    buf = Buffer(kind, backend, host, dev, host_span, dev_span)
    return make(CLASS_OF_KIND[kind], buf, host, dev, *meta)


def _plain_params(arr, dims, halo, dtype_keyword):
    """Resolved keywords of an array wrapped as it is: its own layout, no
    alignment, the default aligned index (``as_storage(arr, dims=, halo=)``)."""
    dtype = normalize_dtype(arr.dtype, dtype_keyword)
    shape = tuple(arr.shape)
    nd = len(shape)
    dims = normalize_dims(dims, nd)
    halo = normalize_halo(halo, shape)
    return (dims, halo, layout_from_strides(arr.strides, shape),
            normalize_alignment(1, dtype.itemsize), normalize_aligned_index(None, shape, halo))


def wrap_host(arr, dims=None, halo=None):
    """A CPU storage over the ndarray ``arr`` without copying (a ufunc
    result: what ``as_storage(arr, dims=dims, halo=halo, device=None)`` makes)."""
    arr = np.asarray(arr)
    return make(CPUStorage, Buffer("cpu", None, arr), arr, None,
                *_plain_params(arr, dims, halo, "data"))


def wrap_device(arr, dims=None, halo=None, backend=None):
    """A device-only storage over the device array ``arr`` of ``backend``
    (default: the current one; ``as_storage(device_data=arr, device="gpu",
    managed=None, ...)``)."""
    backend = devices.current() if backend is None else backend
    if not backend.is_device_array(arr):
        raise StorageTypeError(f"as_storage(device_data=<{type(arr).__name__}>): not a "
                               f"device array of the {backend.name!r} backend")
    dev = backend.to_device(arr)
    return make(GPUStorage, Buffer("gpu", backend, None, dev), None, dev,
                *_plain_params(dev, dims, halo, "dtype"))


def _rebuild(snapshot, dims, halo, layout, alignment, device, managed, aligned_index=None,
             backend=None):
    """Unpickle: a storage with the same parameters holding ``snapshot``, on
    the device backend it was pickled with (a process without it raises
    DeviceUnavailableError here).  Every parameter is checked again, as
    ``storage(snapshot, dims=..., ...)`` checks it."""
    shape = normalize_shape(snapshot.shape)
    dtype = normalize_dtype(snapshot.dtype)
    nd = len(shape)
    dims = normalize_dims(dims, nd)
    halo = normalize_halo(halo, shape)
    device = normalize_device(device)
    managed = normalize_managed(managed if device is not None else "gt4py", device)
    r = dict(shape=shape, dtype=dtype, dims=dims, halo=halo,
             layout=normalize_layout(layout, nd),
             alignment=normalize_alignment(alignment, dtype.itemsize),
             aligned_index=normalize_aligned_index(aligned_index, shape, halo),
             device=device, managed=managed, backend=None)
    if device is None:
        new = allocate(r)
        new[...] = snapshot
        return new
    with devices.use(backend if backend is not None else devices.current()):
        new = allocate(r)
        new[...] = snapshot
        return new


def _canon(d):
    return (0, "IJK".index(d)) if d in ("I", "J", "K") else (1, int(d))
