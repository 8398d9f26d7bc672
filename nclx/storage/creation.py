"""GDP-3's creation functions: empty, zeros, ones, full, their ``_like``
forms, ``as_storage`` (wrap without copying) and ``storage`` (copy).

Keywords are resolved in GDP-3's order: an explicit keyword, then the
``defaults`` preset (layout and alignment only), then what ``data`` /
``device_data`` (or the ``_like`` template) show, then the fallback.
"""
import numpy as np

from nclx.storage import devices
from nclx.storage import _fastalloc
from nclx.storage._fastalloc import empty, host_field, make_recipe, zeros
from nclx.storage.alloc import place, plan
from nclx.storage.buffer import Buffer
from nclx.storage.core import CLASS_OF_KIND, CPUStorage, Storage, make
from nclx.storage.devices import SyncState
from nclx.storage.params import (StorageError, StorageTypeError, layout_from_strides,
                                 normalize_aligned_index, normalize_alignment, normalize_device,
                                 normalize_dims, normalize_halo, normalize_layout,
                                 normalize_dtype, normalize_managed, normalize_shape, preset,
                                 preset_layout)

__all__ = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like", "as_storage", "storage"]

_KEYS = frozenset(("aligned_index", "alignment_size", "defaults", "device", "dims", "halo",
                   "layout", "managed"))
_UNSET = object()


def _check_keys(kwargs, extra=()):
    for k in kwargs:
        if k not in _KEYS and k not in extra:
            raise StorageTypeError(f"unexpected keyword argument {k!r}")


def _template(t):
    """What a template (a Storage, an array, a device array) tells about the keywords."""
    if isinstance(t, Storage):
        kind = t._buf.kind
        return {"dims": t._dims, "halo": t._halo, "layout": t._layout,
                "alignment_size": t._alignment, "aligned_index": t._aligned_index,
                "device": None if kind == "cpu" else "gpu",
                "managed": {"gpu": None, "gt4py": "gt4py", "cuda": "cuda"}.get(kind, "gt4py")}
    if t is not None and hasattr(t, "strides") and hasattr(t, "shape"):
        return {"layout": layout_from_strides(t.strides, t.shape)}
    return {}


def _resolve(shape, dtype, tmpl, kwargs):
    """Normalised keywords for an allocation of ``shape``."""
    shape = normalize_shape(shape)
    nd = len(shape)
    dtype = normalize_dtype(dtype)
    pre = preset(kwargs.get("defaults"))
    t = _template(tmpl)
    if t.get("layout") is not None and len(t["layout"]) != nd:
        t = {}
    dims = normalize_dims(kwargs.get("dims", t.get("dims")), nd)
    halo = normalize_halo(kwargs.get("halo", t.get("halo")), shape)
    device = normalize_device(kwargs.get("device", t.get("device")))
    managed = kwargs.get("managed", t.get("managed", "gt4py"))
    managed = normalize_managed(managed, device)
    if "layout" in kwargs:
        layout = normalize_layout(kwargs["layout"], nd)
    elif pre is not None:
        layout = preset_layout(pre, dims)
    else:
        layout = t.get("layout") or tuple(range(nd))
    if "alignment_size" in kwargs:
        alignment = kwargs["alignment_size"]
    elif pre is not None:
        alignment = pre["alignment_size"]
    else:
        alignment = t.get("alignment_size", 1)
    alignment = normalize_alignment(alignment, dtype.itemsize)
    ai = kwargs.get("aligned_index", _UNSET)
    if ai is _UNSET:
        same = "halo" not in kwargs and t.get("halo") == halo
        ai = t.get("aligned_index") if same else None
    ai = normalize_aligned_index(ai, shape, halo)
    # a storage made like another one lives on that one's device backend
    backend = tmpl._buf.backend if isinstance(tmpl, Storage) and device is not None else None
    return dict(shape=shape, dtype=dtype, dims=dims, halo=halo, layout=layout,
                alignment=alignment, aligned_index=ai, device=device, managed=managed,
                backend=backend)


_RECIPES = {}          # cache_key -> _fastalloc.Recipe (filled by _fastalloc.create)
# CPU storages share no state (no sync, no device), so they share one Buffer
_CPU_BUFFER = Buffer("cpu")


def _recipe(shape, dtype, kwargs):
    """Resolve and validate the keywords of ``empty`` / ``zeros`` (the cache
    miss of ``_fastalloc.create``, which caches the result)."""
    if kwargs:
        _check_keys(kwargs)
    r = _resolve(shape, dtype, None, kwargs)
    p = plan(r["shape"], r["layout"], r["dtype"], r["alignment"], r["aligned_index"])
    return make_recipe(r, p, p.contiguous_order)


def _allocate(r, p=None, zero=False):
    """A new storage for resolved keywords ``r`` (contents undefined unless
    ``zero``: then calloc-backed zeros on the host, zeros on the device)."""
    if p is None:
        p = plan(r["shape"], r["layout"], r["dtype"], r["alignment"], r["aligned_index"])
    shape, dtype = r["shape"], r["dtype"]
    meta = (r["dims"], r["halo"], r["layout"], r["alignment"], r["aligned_index"])
    if r["device"] is None:
        host = host_field(make_recipe(r, p, 0), zero)[0]
        return make(CPUStorage, _CPU_BUFFER, host, None, *meta)
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


def _fill(s, value):
    if s._host is not None:
        s._buf.device_to_host()     # managed memory: let the device finish first
        s._host[...] = value
    if s._dev is not None and s._buf.kind != "cuda":
        s._dev.fill(value)
    return s


def ones(shape, dtype=np.float64, **kwargs):
    return _fill(empty(shape, dtype, **kwargs), 1)


def full(shape, fill_value, dtype=np.float64, **kwargs):
    return _fill(empty(shape, dtype, **kwargs), fill_value)


def _like_shape(data):
    if isinstance(data, Storage) or hasattr(data, "shape"):
        return tuple(data.shape), data.dtype
    arr = np.asarray(data)
    return arr.shape, arr.dtype


def empty_like(data, dtype=None, **kwargs):
    """Like ``data`` (shape, dims, halo, layout, alignment, device) unless overridden."""
    _check_keys(kwargs)
    shape, dt = _like_shape(data)
    return _allocate(_resolve(shape, dt if dtype is None else dtype, data, kwargs))


def zeros_like(data, dtype=None, **kwargs):
    _check_keys(kwargs)
    shape, dt = _like_shape(data)
    return _allocate(_resolve(shape, dt if dtype is None else dtype, data, kwargs), zero=True)


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
    _check_keys(kwargs, ("shape",))
    src = data if data is not None else device_data
    if src is None:
        if "shape" not in kwargs:
            raise StorageTypeError("storage(): give data, device_data or shape=")
        shape = kwargs.pop("shape")
        return empty(shape, np.float64 if dtype is None else dtype, **kwargs)
    kwargs.pop("shape", None)
    if not (isinstance(src, Storage) or hasattr(src, "shape")):
        src = np.asarray(src)
    if device_data is not None and data is None and "device" not in kwargs \
            and not isinstance(src, Storage):
        kwargs["device"] = "gpu"
        kwargs.setdefault("managed", None)
    r = _resolve(src.shape, src.dtype if dtype is None else dtype, src, kwargs)
    new = _allocate(r)
    value = src._host_read() if isinstance(src, Storage) and src._host is not None else \
        (src._dev if isinstance(src, Storage) else src)
    new[...] = value
    if new._buf.kind == "gt4py" and sync_state is not None:
        new._buf.sync.state = sync_state.state
    return new


def _extent(shape, strides, itemsize):
    """(lowest, one past the highest) byte offset a strided view touches."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    return lo, hi + itemsize


from nclx.storage.wrap import as_storage  # noqa: E402  (wrap.py uses the helpers above)

_fastalloc.configure(_RECIPES, _recipe, _allocate, CPUStorage, _CPU_BUFFER)


def _rebuild(snapshot, dims, halo, layout, alignment, device, managed, aligned_index=None,
             backend=None):
    """Unpickle: a storage with the same parameters holding ``snapshot``, on
    the device backend it was pickled with (a process without it raises
    DeviceUnavailableError here)."""
    kw = dict(dims=dims, halo=halo, layout=layout, alignment_size=alignment)
    if aligned_index is not None:
        kw["aligned_index"] = aligned_index
    if device is None:
        return storage(snapshot, **kw)
    kw.update(device=device, managed=managed)
    with devices.use(backend if backend is not None else devices.current()):
        return storage(snapshot, **kw)


__all__ += ["SyncState", "StorageError"]
