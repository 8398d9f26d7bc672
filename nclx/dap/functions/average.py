"""``np.average`` of a DistArray: the mean, or with weights ``sum(a * w) /
sum(w)``, each sum one reduction across ranks (the ranks' partial sums
combined in rank order: NumPy's result to 1e-12 relative, the same bits on
every rank and every run).
"""

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from nclx.dap.functions._agreed import agreed_flags
from nclx.dap.functions._common import blocks, counted, is_da, reduce_parts, wrap
from nclx.dap.distarray import DistArray
from nclx.dap.registry import implements
from nclx.dap.functions._weighted import gathered_along_axes as _gathered_along_axes
from nclx.dap.validate import DapError


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``np.average``: the mean, or with weights (a DistArray of ``a``'s
    shape, moved to ``a``'s distribution where it differs; a NumPy array or
    a DistArray of the shape of ``a`` along ``axis``, the latter gathered on
    every rank first) ``sum(a * w) / sum(w)`` (two reductions, 1e-12
    relative); ZeroDivisionError as NumPy's when the weights sum to zero;
    the product's and the quotient's floating-point warnings and errors as
    NumPy's, on every rank.  ``axis`` is normalised as NumPy's average does
    (a list of axes too)."""
    if axis is not None:
        axis = normalize_axis_tuple(axis, len(a.shape), argname="axis")
    if weights is None:
        avg = a.mean(axis=axis, keepdims=keepdims)
        avg_size = int(np.prod(np.shape(avg) if not is_da(avg) else avg.shape))
        if avg_size == 0:
            # NumPy's a.size / avg.size, raised on every rank (global sizes)
            raise ZeroDivisionError("division by zero")
        # NumPy's scale, in the average's dtype even unasked (a timedelta's:
        # ValueError; the same on every rank)
        scl = (avg.dtype if is_da(avg) else np.asarray(avg).dtype).type(
            int(np.prod(a.shape, dtype=np.int64)) / avg_size)
        if returned:
            if is_da(avg):
                scl = wrap(np.full(avg._block.shape, scl), avg)
            elif np.ndim(avg):             # NumPy broadcasts it to the average's shape
                scl = np.broadcast_to(scl, np.shape(avg)).copy()
        return (avg, scl) if returned else avg
    if not is_da(a):
        raise DapError("np.average(a, weights=DistArray): a must be a DistArray (or gather "
                       "the weights: weights.gather(root=None))")
    if is_da(weights) and weights.shape != a.shape:
        _weights_shape(a, weights.shape, axis)        # NumPy's errors first
        # along the axes: gathered on every rank (one Allgatherv of their size),
        # then as a NumPy array of that shape (before, refused: found by review)
        weights = _gathered_along_axes(a, weights, axis)
        if is_da(weights):
            raise DapError("np.average(DistArray, weights=DistArray): the weights must be on "
                           "the array's communicator")
    if not is_da(weights):
        weights = _ndarray_weights(a, weights, axis)
    da, (x, w) = blocks("np.average", a, weights)
    rdt = np.result_type(x.dtype, w.dtype, "f8") if x.dtype.kind in "biu" else \
        np.result_type(x.dtype, w.dtype)
    scl = reduce_parts(a, w, np.add, axis, dtype=rdt, keepdims=keepdims)
    zero = reduce_parts(scl, np.asarray(scl._block == 0), np.logical_or, None) if is_da(scl) \
        else bool(np.any(scl == 0))
    if zero:
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    # NumPy's steps under the caller's np.errstate: the product's and the
    # quotient's flags ("overflow encountered in multiply", "invalid value
    # encountered in divide") warned or raised on every rank, as NumPy
    # computes each step once on the whole array (before, all ignored:
    # found by review)
    own = counted(da)

    def product():
        p = np.zeros(x.shape, rdt)
        p[own] = np.multiply(x[own], w[own], dtype=rdt)
        return p

    tot = reduce_parts(a, agreed_flags(a.comm, product, "multiply", "np.average"), np.add,
                       axis, keepdims=keepdims)
    if is_da(tot):
        avg = wrap(agreed_flags(tot.comm, lambda: _divided(tot, scl), "divide", "np.average"),
                   tot)
    else:
        # the same value on every rank: NumPy's own division (a scalar's
        # "... in scalar divide", an array's "... in divide") everywhere
        avg = tot / scl
    if returned:
        return avg, scl
    return avg


def _divided(tot, scl):
    """``tot / scl`` on this rank's counted cells of the result (its padding
    holds no sums: zeros there would flag 0/0), laid out as ``tot``'s block."""
    own = counted(tot)
    q = np.true_divide(tot._block[own], scl._block[own])
    full = np.zeros(tot._block.shape, q.dtype)
    full[own] = q
    return full


def _weights_shape(a, shape, axis):
    """NumPy's checks of weights of ``shape`` other than ``a``'s: the
    normalised axes they lie along, or its TypeError / ValueError."""
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    axes = normalize_axis_tuple(axis, len(a.shape))
    if tuple(shape) != tuple(a.shape[ax] for ax in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
    return axes


def _ndarray_weights(a, weights, axis):
    """NumPy array ``weights`` of ``a``'s shape, or along ``axis`` (NumPy's
    rules and errors: its shape against the axes), as a DistArray
    distributed like ``a`` (each rank keeps its block of the broadcast
    weights: every rank holds the same array, the registry agreed on it).
    Before, refused (found by review)."""
    wgt = np.asanyarray(weights)
    if wgt.shape != tuple(a.shape):
        axes = _weights_shape(a, wgt.shape, axis)
        wgt = wgt.transpose(np.argsort(axes)).reshape(
            tuple(s if ax in axes else 1 for ax, s in enumerate(a.shape)))
        wgt = np.broadcast_to(wgt, a.shape)
    return DistArray.from_global(wgt, dist=a.distribution, comm=a.comm)
