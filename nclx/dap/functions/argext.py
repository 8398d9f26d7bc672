"""``argmin``/``argmax`` and ``nanargmin``/``nanargmax`` of a DistArray:
the global flat index (or the global index along ``axis``) of the first
extreme value, exact and as NumPy's (NaN wins in ``argmin``/``argmax``, the
first NaN; ``nanarg*`` skip NaN and raise ValueError on an all-NaN slice).

Each rank finds its best candidate (value, global index) over its counted
cells; one collective (:mod:`nclx.dap.fold`) keeps the best pair -- lower
index on ties, so the order in which ranks combine does not matter.
"""
import numpy as np

from nclx.dap.functions._common import counted, finish, is_da, numpy_refusal, reduce_parts
from nclx.dap.distarray import DistArray
from nclx.dap.reduce import _finish, normalize_axes
from nclx.dap.registry import implements

_NONE = -1
_NAN_KINDS = "fcmM"          # NaN, and NaT (NumPy's argmax/argmin take the first as NaN)


def _nan_of(dtype):
    return np.array("NaT" if dtype.kind in "mM" else np.nan, dtype)


class _Best:
    """The combining step: ``out = best(a, b)`` elementwise on (v, i) records."""

    def __init__(self, name, largest, skip_nan):
        self.__name__ = self.what = name
        self.largest, self.skip_nan = largest, skip_nan

    def __call__(self, a, b, out):
        va, vb, ia, ib = a["v"], b["v"], a["i"], b["i"]
        with np.errstate(invalid="ignore"):
            if self.skip_nan or va.dtype.kind not in _NAN_KINDS:
                na = nb = np.zeros(va.shape, bool)
            else:
                na, nb = np.isnan(va), np.isnan(vb)
            better = (vb > va) if not self.largest else (va > vb)
            tie = (va == vb) & (ia < ib)
            take = (ia != _NONE) & ((ib == _NONE) | (na & ~nb) | (na & nb & (ia < ib))
                                    | (~na & ~nb & (better | tie)))
        out[take] = a[take]


def _worst(dtype, largest):
    """A value that never beats a real cell (for a maximum: the lowest)."""
    if dtype.kind == "b":
        return not largest
    if dtype.kind in "mM":       # int64's lowest is NaT itself
        info = np.iinfo(np.int64)
        return np.array(info.min + 1 if largest else info.max, np.int64).view(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if largest else info.max
    x = -np.inf if largest else np.inf
    return complex(x, x) if dtype.kind == "c" else x


def _candidates(da, axis, largest, skip_nan):
    """This rank's (v, i) records over its counted cells: one (``axis`` None),
    or one per position of the kept axes; ``i`` is -1 where it has none."""
    blk = da._block[counted(da)]
    rank = da.comm.Get_rank()
    gidx = [m.global_indices() for m in da.distribution.maps(rank)]
    rec = np.dtype([("v", blk.dtype), ("i", np.int64)])
    if axis is None:
        blk = blk.reshape(-1)
        g = np.ravel_multi_index(np.meshgrid(*gidx, indexing="ij"), da.shape).reshape(-1) \
            if da.shape else np.zeros(1, np.int64)
        k = 0
    else:
        k = axis
        g = np.expand_dims(gidx[k], tuple(d for d in range(blk.ndim) if d != k))
    maybe_nan = blk.dtype.kind in _NAN_KINDS
    nan = np.isnan(blk) if maybe_nan else np.zeros(blk.shape, bool)
    with np.errstate(invalid="ignore"):
        vals = np.where(nan, np.array(_worst(blk.dtype, largest), blk.dtype), blk) \
            if maybe_nan else blk
        shape = tuple(n for d, n in enumerate(blk.shape) if d != k)
        if blk.shape[k] == 0:
            out = np.zeros(shape, rec)
            out["i"] = _NONE
            return out
        # the extreme by NumPy's argmax/argmin (strings have no maximum loop)
        at = vals.argmax(axis=k) if largest else vals.argmin(axis=k)
        best = np.take_along_axis(vals, np.expand_dims(at, k), k).squeeze(k)
        hasnan = nan.any(axis=k) if not skip_nan else np.zeros(shape, bool)
        hit = np.where(np.expand_dims(hasnan, k), nan,
                       ~nan & (blk == np.expand_dims(best, k)))
        idx = np.where(hit, g, np.iinfo(np.int64).max).min(axis=k)
        out = np.zeros(shape, rec)
        out["v"] = np.where(hasnan, _nan_of(blk.dtype), best) if maybe_nan else best
        out["i"] = np.where(hit.any(axis=k), idx, _NONE)
    return out


def _arg(name, a, axis, out, keepdims, largest, skip_nan):
    if not is_da(a):
        raise TypeError(f"np.{name}: the DistArray must be the array argument")
    if axis is not None and not a.shape and not isinstance(axis, tuple) and \
            int(axis) in (0, -1):
        axis = None             # NumPy: axis 0 or -1 of a 0-d array is the whole array
    if axis is not None:
        axis = normalize_axes(axis, len(a.shape))[0] if not isinstance(axis, tuple) else \
            _bad_axis(name, a, axis)
    n = a.shape[axis] if axis is not None else int(np.prod(a.shape, dtype=np.int64))
    if n == 0:
        raise ValueError(f"attempt to get {name.replace('nan', '')} of an empty sequence")
    axes = tuple(range(len(a.shape))) if axis is None else (axis,)
    partial = error = None
    try:
        partial = _candidates(a, axis, largest, skip_nan)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by _finish
        error = exc
    blk = a._block[counted(a)]
    rec = np.dtype([("v", a.dtype), ("i", np.int64)])
    spec = (tuple(s for d, s in enumerate(blk.shape) if d not in axes), rec)
    value, dist, comm = _finish(a.distribution, a.comm, _Best(f"np.{name}", largest, skip_nan),
                                axes, keepdims, spec, partial, error)
    if dist is None:
        result = np.asarray(value["i"]).astype(np.intp)
        missing = skip_nan and bool(np.any(result == _NONE))
        result = result[()] if result.ndim == 0 else result
    else:
        result = DistArray._of(np.ascontiguousarray(value["i"]).astype(np.intp), dist, comm)
        missing = skip_nan and bool(reduce_parts(result, np.asarray(result._block == _NONE),
                                                 np.logical_or))
    if missing:
        raise ValueError("All-NaN slice encountered")
    if out is not None:
        return finish(result, out, f"np.{name}", lambda o: numpy_refusal(
            getattr(np, name), a.dtype, len(a.shape), o, axis=axis, keepdims=keepdims))
    return result


def _bad_axis(name, a, axis):
    """NumPy's error for a tuple axis (its TypeError; the nan-functions'
    ValueError for a repeated axis, raised by their mask's np.all first):
    NumPy's function on one element of ``a``'s dtype per dimension, the
    same on every rank (found by review: always TypeError)."""
    probe = np.zeros((1,) * len(a.shape), a.dtype)
    with np.errstate(all="ignore"):
        getattr(np, name)(probe, axis=axis)
    raise TypeError(f"np.{name}: axis must be an integer or None")


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    """Global index of the first minimum (NaN first); exact."""
    return _arg("argmin", a, axis, out, keepdims, False, False)


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    """Global index of the first maximum (NaN first); exact."""
    return _arg("argmax", a, axis, out, keepdims, True, False)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """Global index of the first minimum ignoring NaN; ValueError on an all-NaN slice."""
    # NumPy's nan-functions skip NaN of inexact dtypes only (NaT is argmin's)
    return _arg("nanargmin", a, axis, out, keepdims, False, a.dtype.kind in "fc")


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """Global index of the first maximum ignoring NaN; ValueError on an all-NaN slice."""
    return _arg("nanargmax", a, axis, out, keepdims, True, a.dtype.kind in "fc")
