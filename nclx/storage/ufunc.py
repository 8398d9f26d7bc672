"""NumPy ufuncs on storages, through nclx's shared ``__array_ufunc__`` helper
(so the python-level hook chains see them and, after ``nclx.install()``,
nclx's loops run them).

Where the result has the shape of a storage operand, it is allocated like
that operand (layout, alignment, dims, halo, device) and the ufunc writes
into it; reductions keep the dims and halo of the axes that remain.  Host
storages compute on the host (managed='gt4py' ones bring the host up to date
first and mark it modified after); device-only storages compute with the
device backend's ufunc of the same name (CuPy's).

This module sits below nclx.storage.core (whose ``__array_ufunc__`` calls
:func:`storage_ufunc`): it knows storages as ``StorageBase`` instances and
reaches new storages through an operand's own constructors --
``_empty_like(dtype)`` for a result laid out like a template, and
``_wrap_host`` / ``_wrap_device`` for a result of another shape.
"""
import numpy as np

from nclx import aware
from nclx.storage._fastalloc import StorageBase
from nclx.storage.buffer import all_locked, read_nested
from nclx.storage.devices import SyncState
from nclx.storage.params import StorageTypeError, default_dims

__all__ = ["storage_ufunc", "host_result_like"]

_PLAIN_KW = frozenset(("out", "where"))
_HOST_DIRTY, _DEVICE_DIRTY = SyncState.SYNC_HOST_DIRTY, SyncState.SYNC_DEVICE_DIRTY


def _template(inputs, shape):
    for x in inputs:
        if isinstance(x, StorageBase) and x.shape == shape:
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
        elif isinstance(x, StorageBase):
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


def _meta(result_shape, tmpl, method, kwargs):
    """(dims, halo) of a result: the template's where the shape is its own,
    the remaining axes' for reductions, defaults otherwise."""
    if tmpl is not None:
        if method in ("__call__", "accumulate") and tuple(result_shape) == tmpl.shape:
            return tmpl._dims, tmpl._halo
        if method == "reduce":
            m = _reduce_meta(tmpl, kwargs, len(result_shape))
            if m:
                return m[:2]
    return default_dims(len(result_shape)), None


class _HostSide:
    """Compute on host views with NumPy's ufunc (nclx's loops after install())."""
    state = _HOST_DIRTY

    def __init__(self, ufunc, anchor):
        self.fn = ufunc
        self.anchor = anchor

    @staticmethod
    def operand(x):
        return x._host_read() if isinstance(x, StorageBase) else x

    @staticmethod
    def is_array(r):
        return isinstance(r, (np.ndarray, np.generic)) and not isinstance(r, StorageBase)

    @staticmethod
    def store(new, r):
        np.copyto(new._host, r, casting="no")

    def wrap(self, r, dims, halo):
        return self.anchor._wrap_host(r, dims, halo)


class _DeviceSide:
    """Device-only storages: the device backend's ufunc of the same name."""
    state = _DEVICE_DIRTY

    def __init__(self, ufunc, backend, anchor):
        self.backend = backend
        self.anchor = anchor
        self.fn = getattr(backend.xp, ufunc.__name__, None)
        self.name = ufunc.__name__
        if self.fn is None:
            raise StorageTypeError(f"np.{ufunc.__name__} has no {backend.name} counterpart")

    def operand(self, x):
        if isinstance(x, StorageBase):
            if x._dev is None:
                raise StorageTypeError(f"np.{self.name}: mixes host-only and device-only "
                                       "storages; move one side first (storage(..., "
                                       "device='gpu') or to_cupy().get())")
            return x._device_read()
        if isinstance(x, np.ndarray) and not self.backend.is_device_array(x):
            raise StorageTypeError(f"np.{self.name}: a host ndarray operand with a device-only "
                                   "storage; move it to the device first")
        return x

    def is_array(self, r):
        return self.backend.is_device_array(r) and not isinstance(r, StorageBase)

    @staticmethod
    def store(new, r):
        new._dev[...] = r

    def wrap(self, r, dims, halo):
        # on the operands' backend, not the one in force at the call
        # (review 27: a reduction outside the storage's `use` block asked
        # for CuPy)
        return self.anchor._wrap_device(r, dims, halo, self.backend)


def _first_storage(inputs):
    return next((x for x in inputs if isinstance(x, StorageBase)), None)


def storage_ufunc(anchor, ufunc, method, inputs, kwargs):
    """``anchor.__array_ufunc__(ufunc, method, *inputs, **kwargs)``: NotImplemented
    for a foreign operand (NumPy's protocol), else the result, laid out like
    a storage operand of its shape."""
    if aware.foreign(inputs, kwargs, own=(StorageBase,)):
        return NotImplemented
    outs = aware.outs_of(kwargs)
    storages = [x for x in inputs + outs if isinstance(x, StorageBase)]
    device_only = [s for s in storages if s._host is None]
    side = _DeviceSide(ufunc, device_only[0]._buf.backend, anchor) if device_only \
        else _HostSide(ufunc, anchor)
    tmpl = None
    if method == "__call__":
        if ufunc.signature is None:      # a gufunc's core dims do not broadcast
            try:
                shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
            except ValueError:
                shape = None
            tmpl = _template(inputs, shape)
    else:
        tmpl = _first_storage(inputs)
    given_outs = outs

    def compute(ufunc, method, inputs, kwargs):
        kwargs = dict(kwargs)
        new_outs = None
        no_out = kwargs.get("out") is None
        if method == "__call__" and tmpl is not None and no_out \
                and kwargs.get("where", True) is True:
            dts = _out_dtypes(ufunc, inputs, kwargs)
            if dts is not None:
                new_outs = tuple(tmpl._empty_like(dt) for dt in dts)
                if any(_no_unit_stride(o._host) for o in new_outs if o._host is not None):
                    new_outs = None      # NumPy 2.4 bug: let it allocate, then copy (below)
                else:
                    kwargs["out"] = new_outs
        if method == "at" and inputs and isinstance(inputs[0], StorageBase) and \
                inputs[0]._host is not None and not inputs[0]._host.flags.writeable:
            # NumPy 2.4's ufunc.at writes into a read-only ndarray; a
            # storage over bytes must not change them (review 24)
            raise ValueError(f"{ufunc.__name__}.at: assignment destination is read-only")
        written = [o for o in aware.outs_of(kwargs) if isinstance(o, StorageBase)]
        where = kwargs.get("where")
        held = all_locked(storages + written + [where])
        if held.locks:
            # storages inside list operands are read first, as NumPy converts
            # them (under the held locks they deadlocked; review 24c)
            inputs = tuple(read_nested(x) for x in inputs)
            if where is not None:
                kwargs["where"] = read_nested(where)
        with held:
            return _computed(ufunc, method, inputs, kwargs, new_outs, no_out)

    def _computed(ufunc, method, inputs, kwargs, new_outs, no_out):
        unwrap, padded = side.operand, _padded_outs(side, method, kwargs)
        if padded:
            # NumPy 2.4's bug (_no_unit_stride) for an out= storage too: the
            # ufunc writes a contiguous copy of it (the operand that is out
            # reads the copy: its values, where= keeps them), copied back
            # after (before, np.negative(s, out=s) on a padded column wrote
            # wrong values; found by review)
            def unwrap(x):
                hit = padded.get(id(x))
                return hit[1] if hit is not None and hit[0] is x else side.operand(x)
        try:
            result = aware.run_unwrapped(side.fn, method, inputs, kwargs, unwrap)
        finally:
            # also when NumPy raises a floating-point error after writing
            # its output (errstate 'raise'): out= holds what NumPy wrote
            for o, tmp in padded.values():
                np.copyto(o._host, tmp, casting="no")
        touched = list(aware.outs_of(kwargs))
        if method == "at" and inputs and isinstance(inputs[0], StorageBase):
            touched.append(inputs[0])                 # ufunc.at works in place
        for o in touched:
            if isinstance(o, StorageBase):
                o._buf.mark(side.state)
        if new_outs is not None:
            return new_outs if ufunc.nout > 1 else new_outs[0]
        if no_out and tmpl is not None and method in ("__call__", "accumulate"):
            # the ufunc allocated (a dtype=/where=/... call): lay it out like the operand
            if isinstance(result, tuple):
                return tuple(_like(side, r, tmpl) for r in result)
            return _like(side, result, tmpl)
        return result

    def wrap(r):
        if any(r is o for o in given_outs) or not side.is_array(r) or np.ndim(r) == 0:
            return r
        dims, halo = _meta(np.shape(r), tmpl, method, kwargs)
        return side.wrap(r, dims, halo)

    return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=side.operand, wrap=wrap,
                             compute=compute)


def _padded_outs(side, method, kwargs):
    """{id: (out storage, contiguous copy of its host view)} for the host
    out= storages of a ufunc call that :func:`_no_unit_stride` names."""
    if method != "__call__" or side.state != _HOST_DIRTY:
        return {}
    return {id(o): (o, np.array(o._host_read(), order="C", copy=True))
            for o in aware.outs_of(kwargs)
            if isinstance(o, StorageBase) and o._host is not None and _no_unit_stride(o._host)}


def _no_unit_stride(a):
    """True when no axis of more than one element has unit stride (a padded
    column, shape (n, 1)).  NumPy 2.4.6's SIMD loops write wrong values into
    such outputs (np.negative, np.signbit, np.isfinite, ... with 16- or
    64-byte strides), plain ndarrays included; results of that layout are
    computed into NumPy's own contiguous allocation and copied instead."""
    moving = [abs(st) for st, n in zip(a.strides, a.shape) if n > 1]
    return bool(moving) and min(moving) != a.itemsize


def storage_compare(anchor, other, name):
    """``anchor == other`` (``name`` '__eq__') or ``!=`` as ndarray's: the
    ufunc, and where it has no loop (a string or a datetime against numbers,
    structured records) ndarray's own comparison of the host values -- all
    False / all True, records field by field, or NumPy's own TypeError --
    laid out like ``anchor`` (before review 20, NumPy's mixin raised
    UFuncTypeError where an ndarray compares)."""
    if getattr(other, "__array_ufunc__", False) is None:
        return NotImplemented                     # the mixin's rule: it opted out
    try:
        return (np.equal if name == "__eq__" else np.not_equal)(anchor, other)
    except TypeError:
        if anchor._host is None:
            raise                                 # device-only: the backend's answer
        theirs = other._value_array() if isinstance(other, StorageBase) else other
        r = getattr(anchor._host_read(), name)(theirs)
        if not isinstance(r, np.ndarray) or r.ndim == 0:
            return r                              # NotImplemented, or a 0-d result's scalar
        if r.shape == anchor.shape:
            return _like(_HostSide, r, anchor)
        return anchor._wrap_host(r, *_meta(r.shape, anchor, "__call__", {}))


def host_result_like(r, tmpl):
    """A host result ``r`` (``tmpl``'s host view ** a scalar) as a storage
    laid out like ``tmpl`` when the shapes match."""
    return _like(_HostSide, r, tmpl)


def _like(side, r, tmpl):
    """``r`` copied into a storage allocated like ``tmpl`` when the shapes match."""
    if not side.is_array(r) or tuple(np.shape(r)) != tmpl.shape:
        return r
    new = tmpl._empty_like(r.dtype)
    side.store(new, r)
    new._buf.mark(side.state)
    return new
