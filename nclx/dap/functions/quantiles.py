"""Exact order statistics of a DistArray: ``np.percentile``,
``np.quantile`` and their NaN-ignoring forms
``np.nanpercentile``, ``np.nanquantile`` (the medians: :mod:`.medians`).

``axis=None``: the order statistics NumPy's method needs (the neighbours of
each virtual index, and the last one for the NaN check) are selected
without gathering: a sample sort of the flattened values
(:mod:`._samplesort`), one ``Exscan`` of the bucket sizes, and one
``Allreduce`` (bitwise or, the holder contributes the bits, the others
zeros) brings every rank those few values.  NumPy's own interpolation
(its private quantile helpers; ``method``: NumPy's unweighted methods,
'linear' by default) then runs on them, so the result is NumPy's bit for
bit, on every rank; ``np.median`` is NumPy's mean of the middle values.

``axis=k`` along an axis with one grid coordinate ('n', or a grid of size
1 there): every rank holds its lines whole and NumPy computes them; the
result is a DistArray over ``q``'s dimensions (undistributed) followed by
the other axes, distributed as in ``a`` (``keepdims`` keeps axis ``k`` with
size 1).  Along a distributed axis the array is first redistributed (one
``Alltoallw``) to that axis undistributed and the other axes block-
distributed, then as above: NumPy's bits, the result distributed over the
other axes that way; the one axis of a 1-D array is ``axis=None``'s
selection.  A tuple of axes (weights too: a DistArray moved alike) is
NumPy's ``_ureduce``: the kept axes swapped to the front and the reduced
ones merged into one last axis (the DistArray's swapaxes/reshape:
redistributions), then as ``axis=k`` (``keepdims``: 1s where the reduced
axes were; every axis: as ``axis=None``).  ``weights=`` (method
'inverted_cdf', as NumPy): a DistArray of ``a``'s shape (moved to ``a``'s
distribution where it differs), or along ``axis=k`` a 1-D NumPy array or
DistArray (gathered) of length ``a.shape[k]``; ``axis=None`` runs
:mod:`._weighted` (no gather), ``axis=k`` moves the weights with the array
and NumPy computes the lines.  ``out=``: :func:`._outs.put_out` (of the
result's dtype: NumPy's last steps run in out's); ``overwrite_input`` is
accepted, the input left as it was.  Any rank's error raises on every rank."""
import functools
import inspect
import math

import numpy as np
from numpy.lib import _function_base_impl as _fb
from numpy.lib.array_utils import normalize_axis_tuple

from nclx._warnscope import ignoring
from nclx.dap.distarray import DistArray
from nclx.dap.functions._outs import put_out
from nclx.dap.distribution import Distribution
from nclx.dap.functions._agreed import agreed_warnings_call
from nclx.dap.functions._layout import agree_call, flat_values
from nclx.dap.functions._samplesort import sample_sort
from nclx.dap.functions._weighted import (
    check_sign as _check_sign, check_weights as _check_weights, distarray_operand as _distarray_operand,
    gathered_along_axes as _gathered_along_axes, local_weights as _local_weights, pick, weighted_flat,
    weights_kind as _weights_kind)
from nclx.dap.redistribute import redistribute
from nclx.dap.registry import implements


class _Values:
    """The values a selection runs on: this rank's (a fresh 1-D copy), how
    many all ranks hold (``n``), their dtype and communicator."""

    def __init__(self, a, drop_nan=False):
        self.comm, self.dtype = a.comm, a.dtype
        self.local = flat_values(a)
        if drop_nan and a.dtype.kind in "fcmM":        # NaT too, as NumPy's nan-functions
            self.local = self.local[~np.isnan(self.local)]
            self.n = int(a.comm.allreduce(self.local.shape[0]))
        else:
            self.n = int(np.prod(a.shape, dtype=np.int64))


def _order_statistics(a, positions):
    """The values at sorted ``positions`` (int64, in ``[0, n)``) of ``a``
    (a :class:`_Values`), on every rank."""
    comm = a.comm
    local, a.local = a.local, None
    _, bucket = sample_sort(comm, local.reshape(1, -1))
    del local
    return pick(comm, bucket, positions, a.dtype)


def _fetch(a, n, indices):
    """Sorted values at ``indices`` (any shape, -1 meaning the last) as NumPy
    indexing of the sorted array would give them (a scalar for 0-d)."""
    flat = np.asarray(indices, np.int64).reshape(-1) % max(n, 1)
    wanted, where = np.unique(np.concatenate((flat, [n - 1])), return_inverse=True)
    values = _order_statistics(a, wanted)
    last = values[where[-1]]
    got = values[where[:-1]].reshape(np.shape(indices))
    return (got[()] if got.ndim == 0 else got), last


# newer NumPy types the result by a Python scalar q's weak promotion (weak_q)
_WEAK_Q = "weak_q" in inspect.signature(_fb._quantile).parameters


def _quantile_flat(a, q, method, weak_q, empty):
    """NumPy's ``_quantile`` of the flattened array (``q`` in [0, 1]);
    ``empty()`` is NumPy's outcome for no elements."""
    n = a.n
    if n == 0:   # NumPy's outcome (an error or NaN with its warning) on every rank
        return empty()
    weak_q = weak_q and _WEAK_Q
    props = _fb._QuantileMethods[method]
    virtual = np.asanyarray(props["get_virtual_index"](n, q))
    supports_nans = np.issubdtype(a.dtype, np.inexact) or a.dtype.kind in "Mm"
    ints = np.issubdtype(virtual.dtype, np.integer)
    if props["fix_gamma"] is None or (method == "linear" and ints):
        result, last = _fetch(a, n, virtual)
        result = np.asanyarray(result) if np.ndim(result) else result
    else:
        previous_idx, next_idx = _fb._get_indexes(np.empty(0, a.dtype), virtual, n)
        both, last = _fetch(a, n, np.stack((previous_idx, next_idx)))
        previous, nxt = both[0], both[1]
        gamma = _fb._get_gamma(virtual, previous_idx, props)
        gamma = float(gamma) if weak_q else gamma.reshape(virtual.shape)
        result = _fb._lerp(previous, nxt, gamma)
    if supports_nans and np.isnan(last):
        if np.ndim(result) == 0:
            result = last
        else:
            np.copyto(result, last)
    return result


def _dtype_of_lines(fn, owned, ax, length, companion, fallback):
    """The dtype ``fn`` gives a non-empty block: on one line of zeros as long
    as the axis (weights of ones beside it), quietly; ``fallback`` (this
    rank's own result's) where even that fails -- it is local, never raised
    (the other ranks are already on their way to the next collective)."""
    shape = [1] * owned.ndim
    shape[ax] = max(length, 1)
    line = np.zeros(shape, owned.dtype)
    try:
        with ignoring(), np.errstate(all="ignore"):
            r = fn(line, ax) if companion is None else \
                fn(line, ax, np.ones(shape, companion.dtype))
        return np.asarray(r).dtype
    except Exception:  # noqa: BLE001 - see above
        return fallback


def _whole_axis(a, ax, keepdims, fn, q_shape, companion=None, agree_what=None):
    """``fn(owned, axis)`` on lines held whole: a DistArray over q's
    dimensions and the other axes (axis ``ax`` kept with size 1 if asked).
    A distributed ``ax`` is first made whole: one redistribution to ``ax``
    undistributed and the other axes block-distributed.  With a
    ``companion`` (a DistArray distributed like ``a``: the weights), it is
    moved alike and ``fn(owned, axis, companion_owned)`` is called.
    ``agree_what`` names the call.  One agreement after ``fn`` raises a
    failure of some lines only (weights all zero or NaN on one line) on
    every rank and warns NumPy's warnings on every rank, as often as NumPy
    (:func:`._agreed.agreed_warnings_call`; before, a rank holding no
    all-NaN line did not warn "All-NaN slice encountered": found by review)."""
    if a.distribution.grid_shape[ax] != 1:
        target = tuple("n" if d == ax else "b" for d in range(a.distribution.ndim))
        a = redistribute(a, target)
        if companion is not None:
            companion = redistribute(companion, a.distribution)
    unbound = fn
    if companion is not None:
        fn = (lambda f, c: lambda o, x: f(o, x, c))(fn, companion.owned)
    dist = a.distribution
    owned = a.owned
    what = agree_what or "an order statistic"
    local = agreed_warnings_call(a.comm, lambda: np.asarray(fn(owned, ax)), what, what)
    want = tuple(q_shape) + tuple(n for d, n in enumerate(owned.shape) if d != ax)
    if owned.size == 0:
        # an empty block's result takes the dtype a non-empty one gives
        # (NumPy's nan-quantiles of an empty block return np.nanmean's
        # float64 and drop q's dimensions; other ranks' int64 'lower' results
        # then differed from it); where the reduced axis itself is empty the
        # cells are NaN (before: uninitialised memory)
        if a.shape[ax] == 0:
            # the axis is empty everywhere: NumPy's own result on it (NaN in
            # its dtype: float64 for integer nan-quantiles too)
            dt = local.dtype
        else:
            dt = _dtype_of_lines(unbound, owned, ax, a.shape[ax], companion, local.dtype)
        if local.shape != want or local.dtype != dt:
            local = np.full(want, np.nan if dt.kind in "fc" else 0, dt)
    columns = [Distribution.from_shape((s,), "n")._dims[0] for s in q_shape]
    for d in range(dist.ndim):
        if d != ax:
            columns.append(dist._dims[d])
        elif keepdims:
            columns.append(Distribution.from_shape((1,), "n")._dims[0])
    if keepdims:
        local = np.expand_dims(local, len(q_shape) + ax)
    rdist = Distribution(columns)
    rank = a.comm.Get_rank()
    block = np.zeros(rdist.local_shape(rank), local.dtype)
    block[rdist.owned_slices(rank)] = local
    out = DistArray._of(block, rdist, a.comm)
    if any(tuple(dd.get("padding", (0, 0))) != (0, 0) for col in columns for dd in col):
        out.exchange_halos()
    return out


def _size(a):
    return int(np.prod(a.shape, dtype=np.int64))


@functools.cache
def _numpy_merges_by_product():
    """True where NumPy's ``_ureduce`` merges the reduced axes into one of
    their product's length (NumPy 2.5), so that an empty array's order
    statistics over a tuple of axes (or ``axis=()``) are empty arrays; before,
    its ``reshape(..., -1)`` raised ValueError on them, as nclx then does."""
    try:
        np.median(np.empty((0,)), axis=())
    except ValueError:
        return False
    return True


def _run(name, a, q, axis, out, overwrite_input, method, keepdims, weights, check, flat, local):
    """The common frame: checks, one agreement, then ``flat(a)`` (axis=None
    or every axis) or ``local(a, axis, keepdims)`` (one axis; a tuple of
    some: on the array with them merged into its last, as NumPy's
    ``_ureduce``); ``keepdims`` as NumPy's (its no-value default: False)."""
    error = ax = axes = None
    try:
        if isinstance(q, DistArray):
            raise TypeError(f"np.{name}: q must be a scalar or a NumPy array, not a DistArray")
        check()                               # NumPy's own argument errors (q, method, dtype)
        if axis is not None:                 # NumPy's _ureduce: an int, a tuple, a list...
            axes = normalize_axis_tuple(axis, a.distribution.ndim)
            if len(axes) == 1:
                ax, axes = axes[0], None
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(a.comm, error, f"np.{name}", (None if isinstance(q, DistArray) else q, axis,
                                              bool(overwrite_input), method, keepdims,
                                              _weights_kind(weights), out is None))
    if weights is not None:
        _check_sign(name, a, weights, q, method)
    if name.startswith("nan") and _size(a) == 0:
        # NumPy's nan-forms return np.nanmean of an empty array (q's
        # dimensions dropped)
        result = np.nanmean(a, axis, keepdims=keepdims)
        if isinstance(result, DistArray) and isinstance(out, DistArray) \
                and result.comm != a.comm:
            # every cell NumPy's NaN of an empty mean; remade on the array's
            # communicator, so that out= in any distribution can take it
            with ignoring():
                nan = np.nanmean(np.empty(0, a.dtype))
            result = DistArray.from_shape(result.shape, dtype=result.dtype, comm=a.comm,
                                          fill=nan)
        return put_out(name, out, result, a.comm)
    nd = a.distribution.ndim
    if axes is not None and len(axes) < nd:
        # NumPy's _ureduce: the kept axes first (its swaps), the reduced
        # ones merged into one last axis, then NumPy's 1s where they were
        def merge(x):
            for i, k in enumerate(sorted(set(range(nd)) - set(axes))):
                x = x.swapaxes(i, k)
            kept = x.shape[:nd - len(axes)]
            if _numpy_merges_by_product():
                return x.reshape(kept + (math.prod(x.shape[nd - len(axes):]),))
            return x.reshape(kept + (-1,))
        merged = merge(a)
        w = () if weights is None else (merge(weights),)      # a DistArray (checked)
        result = local(merged, merged.ndim - 1, False, *w)
        if keepdims:
            lead = result.ndim - (nd - len(axes))
            shape = list(result.shape)
            for k in sorted(axes):
                shape.insert(lead + k, 1)
            result = result.reshape(tuple(shape))
        return put_out(name, out, result, a.comm)
    if axes is not None or (axis is not None and nd == 1):
        axis = None                     # every axis: the flattened array's statistics
    if axis is None:
        result = flat(a)
        if keepdims:
            result = np.asarray(result).reshape(np.shape(result) + (1,) * nd)
        return put_out(name, out, result, a.comm)
    return put_out(name, out, local(a, ax, keepdims), a.comm)


def _quantile_impl(name, a, q, axis, out, overwrite_input, method, keepdims, weights):
    keepdims = False if keepdims is np._NoValue else bool(keepdims)
    _distarray_operand(name, a)             # not an ndarray with DistArray weights or out=
    weights = _gathered_along_axes(a, weights, axis, one_axis=True)
    if isinstance(weights, DistArray) and weights.shape == a.shape and weights.comm is a.comm:
        weights = a._aligned(weights)      # another distribution: moved to a's (one Alltoallw)
    weak_q = type(q) in (int, float)
    qs = np.true_divide(q, 100) if name.endswith("percentile") else np.asanyarray(q)
    numpy_fn = getattr(np, name)
    nan = name.startswith("nan")

    def flat(a):
        if weights is not None:
            w = weights if isinstance(weights, DistArray) else \
                DistArray.from_global(np.asarray(weights), dist=a.distribution, comm=a.comm)
            return weighted_flat(a, w, q, qs, method, nan, numpy_fn)
        values = _Values(a, drop_nan=nan)
        if nan and values.n == 0 and _size(a):          # all NaN: NumPy's NaNs and warning
            return numpy_fn(np.full(1, np.nan, a.dtype), q, method=method)
        return _quantile_flat(values, np.asanyarray(qs), method, weak_q,
                              lambda: numpy_fn(np.empty(0, a.dtype), q, method=method))
    def check():
        kw = {}
        if weights is not None:
            axes = None if axis is None else normalize_axis_tuple(axis, a.distribution.ndim)
            _check_weights(name, a, weights, axes if axes is None or len(axes) > 1 else axes[0])
            kw["weights"] = np.ones(2, np.asarray(weights.owned if isinstance(
                weights, DistArray) else weights).dtype)
        # q and method checked as NumPy checks them first; an empty array's
        # values are NumPy's business below (a nan-quantile of empty bools
        # is NaN, where a probe on two bools raised NumPy's "boolean
        # subtract" TypeError: found by review)
        empty_bools = a.dtype == np.bool_ and not _size(a)
        numpy_fn(np.zeros(2, np.float64 if empty_bools else a.dtype), q, method=method, **kw)

    def local(a, ax, keepdims, weights=weights):
        if weights is None:
            return _whole_axis(a, ax, keepdims, lambda o, x: numpy_fn(
                o, q, axis=x, method=method), np.shape(qs))
        if isinstance(weights, DistArray):
            return _whole_axis(a, ax, keepdims, lambda o, x, w: numpy_fn(
                o, q, axis=x, method=method, weights=w), np.shape(qs), companion=weights,
                agree_what=f"np.{name}")
        w = _local_weights(weights)
        return _whole_axis(a, ax, keepdims, lambda o, x: numpy_fn(
            o, q, axis=x, method=method, weights=w), np.shape(qs), agree_what=f"np.{name}")
    return _run(name, a, q, axis, out, overwrite_input, method, keepdims, weights,
                check=check, flat=flat, local=local)


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """``np.percentile`` of a DistArray, exact (see the module doc)."""
    return _quantile_impl("percentile", a, q, axis, out, overwrite_input, method, keepdims,
                          weights)


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """``np.quantile`` of a DistArray, exact (see the module doc)."""
    return _quantile_impl("quantile", a, q, axis, out, overwrite_input, method, keepdims,
                          weights)


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None):
    """``np.nanpercentile`` of a DistArray, exact: the selection runs on the
    values that are not NaN (see the module doc)."""
    return _quantile_impl("nanpercentile", a, q, axis, out, overwrite_input, method, keepdims,
                          weights)


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None):
    """``np.nanquantile`` of a DistArray, exact (see :func:`nanpercentile`)."""
    return _quantile_impl("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                          weights)
