"""NumPy ufuncs on storages, through nclx's shared ``__array_ufunc__`` helper
(so the python-level hook chains see them and, after ``nclx.install()``,
nclx's loops run them).

Where the result has the shape of a storage operand, it is allocated like
that operand (layout, alignment, dims, halo, device) and the ufunc writes
into it; reductions keep the dims and halo of the axes that remain.  Host
storages compute on the host (managed='gt4py' ones bring the host up to date
first and mark it modified after); device-only storages compute with the
device backend's ufunc of the same name (CuPy's).
"""
import numpy as np

from nclx import aware
from nclx.storage.core import Storage, _HOST_DIRTY, _DEVICE_DIRTY
from nclx.storage.params import StorageTypeError, default_dims

__all__ = ["storage_ufunc"]

_PLAIN_KW = frozenset(("out", "where"))


def _flat_outs(kwargs):
    out = kwargs.get("out")
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


def _template(inputs, shape):
    for x in inputs:
        if isinstance(x, Storage) and x.shape == shape:
            return x
    return None


def _out_dtypes(ufunc, inputs, kwargs):
    """The output dtypes NumPy will choose, or None when unsure."""
    if set(kwargs) - _PLAIN_KW:
        return None
    dts = []
    for x in inputs:
        if isinstance(x, (bool, int, float, complex)):
            dts.append(type(x))
        elif isinstance(x, Storage):
            dts.append(x.dtype)
        elif isinstance(x, (np.ndarray, np.generic)):
            dts.append(x.dtype)
        else:
            return None
    try:
        return ufunc.resolve_dtypes(tuple(dts) + (None,) * ufunc.nout)[ufunc.nin:]
    except Exception:  # NumPy raises several types for unresolvable loops
        return None


def _reduce_meta(tmpl, kwargs, ndim_out):
    """dims/halo/layout of a reduction's result from the template's."""
    axis = kwargs.get("axis", 0)
    nd = tmpl.ndim
    axes = range(nd) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = {a % nd for a in axes} if nd else set()
    if kwargs.get("keepdims"):
        keep = range(nd)
        halo = tuple((0, 0) if d in axes else tmpl._halo[d] for d in keep)
    else:
        keep = [d for d in range(nd) if d not in axes]
        halo = tuple(tmpl._halo[d] for d in keep)
    if len(keep) != ndim_out:
        return None
    ranks = [tmpl._layout[d] for d in keep]
    layout = tuple(sorted(ranks).index(r) for r in ranks)
    return tuple(tmpl._dims[d] for d in keep), halo, layout


def _wrap_host(result, tmpl, method, kwargs):
    """An ndarray result as a storage (zero-copy), with the template's metadata where it fits."""
    from nclx.storage.wrap import as_storage
    if not isinstance(result, np.ndarray) or isinstance(result, Storage):
        return result
    if result.ndim == 0:
        return result
    meta = None
    if tmpl is not None:
        if method in ("__call__", "accumulate") and result.shape == tmpl.shape:
            meta = (tmpl._dims, tmpl._halo)
        elif method == "reduce":
            m = _reduce_meta(tmpl, kwargs, result.ndim)
            meta = m[:2] if m else None
    dims, halo = meta if meta else (default_dims(result.ndim), None)
    return as_storage(result, dims=dims, halo=halo, device=None)


def storage_ufunc(ufunc, method, inputs, kwargs):
    outs = _flat_outs(kwargs)
    for x in inputs + outs:
        other = getattr(type(x), "__array_ufunc__", None)
        if other is not None and not isinstance(x, (Storage, np.ndarray)):
            return NotImplemented
    storages = [x for x in inputs + outs if isinstance(x, Storage)]
    if any(s._host is None for s in storages):
        return _device_ufunc(ufunc, method, inputs, kwargs, storages)
    tmpl = None
    if method == "__call__":
        if ufunc.signature is None:      # a gufunc's core dims do not broadcast
            try:
                shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
            except ValueError:
                shape = None
            tmpl = _template(inputs, shape)
    elif method == "accumulate":
        tmpl = next((x for x in inputs if isinstance(x, Storage)), None)
    else:
        tmpl = next((x for x in inputs if isinstance(x, Storage)), None)
    given_outs = _flat_outs(kwargs)

    def compute(ufunc, method, inputs, kwargs):
        kwargs = dict(kwargs)
        new_outs = None
        no_out = kwargs.get("out") is None
        if method == "__call__" and tmpl is not None and no_out \
                and kwargs.get("where", True) is True:
            dts = _out_dtypes(ufunc, inputs, kwargs)
            if dts is not None:
                from nclx.storage.creation import empty_like
                new_outs = tuple(empty_like(tmpl, dtype=dt) for dt in dts)
                kwargs["out"] = new_outs
        result = aware.run_unwrapped(ufunc, method, inputs, kwargs, _host_operand)
        for o in _flat_outs(kwargs):
            if isinstance(o, Storage):
                o._buf.mark(_HOST_DIRTY)
        if new_outs is not None:
            return new_outs if ufunc.nout > 1 else new_outs[0]
        if no_out and tmpl is not None and method in ("__call__", "accumulate"):
            # NumPy allocated (a dtype=/where=/... call): lay it out like the operand
            if isinstance(result, tuple):
                return tuple(_like(r, tmpl) for r in result)
            return _like(result, tmpl)
        return result

    def wrap(r):
        if any(r is o for o in given_outs):
            return r
        return _wrap_host(r, tmpl, method, kwargs)

    return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=_host_operand, wrap=wrap,
                             compute=compute)


def _like(r, tmpl):
    """``r`` copied into a storage allocated like ``tmpl`` when the shapes match."""
    if np.shape(r) != tmpl.shape or not isinstance(r, (np.ndarray, np.generic)):
        return r
    from nclx.storage.creation import empty_like
    new = empty_like(tmpl, dtype=r.dtype)
    np.copyto(new._host, r, casting="no")
    new._buf.mark(_HOST_DIRTY)
    return new


def _host_operand(x):
    return x._host_read() if isinstance(x, Storage) else x


def _device_ufunc(ufunc, method, inputs, kwargs, storages):
    """Device-only storages: the backend's ufunc on device views."""
    from nclx.storage.wrap import as_storage
    backend = storages[0]._buf.backend
    for s in storages:
        if s._dev is None:
            raise StorageTypeError(f"np.{ufunc.__name__}: mixes host-only and device-only "
                                   "storages; move one side first (storage(..., device='gpu') "
                                   "or to_cupy().get())")
    fn = getattr(backend.xp, ufunc.__name__, None)
    if fn is None:
        raise StorageTypeError(f"np.{ufunc.__name__} has no {backend.name} counterpart")

    def dev(x):
        if isinstance(x, Storage):
            return x._device_read()
        if isinstance(x, np.ndarray):
            raise StorageTypeError(f"np.{ufunc.__name__}: a host ndarray operand with a "
                                   "device-only storage; move it to the device first")
        return x

    def compute(ufunc, method, inputs, kwargs):
        result = aware.run_unwrapped(fn, method, inputs, kwargs, dev)
        for o in _flat_outs(kwargs):
            if isinstance(o, Storage):
                o._buf.mark(_DEVICE_DIRTY)
        return result

    def wrap(r):
        if isinstance(r, Storage) or not backend.is_device_array(r) or r.ndim == 0:
            return r
        return as_storage(device_data=r, device="gpu", managed=None)

    return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=dev, wrap=wrap,
                             compute=compute)
