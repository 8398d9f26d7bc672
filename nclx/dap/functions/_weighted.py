"""Weighted quantiles of a flattened DistArray (``weights=``, NumPy's only
weighted method, ``'inverted_cdf'``), without gathering.

NumPy sorts the values, cumulates the weights in that order in float64
(``cumsum``: one addition after the other), divides by the total, casts to
q's float dtype, turns zeros into -1 and takes, for each q, the first
position whose cumulated weight reaches q (``searchsorted(side='left')``),
capped at the last.  Here: the (value, flat index, weight) records are
sample-sorted (:mod:`._samplesort`) and each bucket put in (value, index)
order; the buckets, in rank order, are the sorted array.  The cumulative
sum runs along the ranks one after the other (each rank receives the sum
so far from the rank before it and adds its weights to it in order: the
same additions in the same order as NumPy's ``cumsum``), the total comes
from the last rank (one broadcast), each rank counts its positions below
each q (one ``Allreduce``) and the holders of the chosen positions give
their values (one ``Exscan`` and one bitwise-or ``Allreduce``).

Equal values: NumPy orders them by its default (unstable) argsort, nclx by
their index in the flattened array; the chosen value is the same unless
the cumulated weight at the end of a run of equal values, summed in the
other order, rounds to the other side of a q (weights that are integers,
or sums that are exact, always agree).
"""
import contextlib

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from nclx.dap.functions._flatten import flat_block
from nclx.dap.functions._layout import block_bounds
from nclx.dap.functions._samplesort import mpi, sample_sort
from nclx.dap.distarray import DistArray
from nclx.dap.validate import DapError

__all__ = ["pick", "sorted_weighted", "weighted_positions", "weighted_flat", "weights_kind",
           "check_weights", "local_weights", "check_sign", "gathered_along_axes",
           "distarray_operand"]


def pick(comm, bucket, positions, dtype):
    """The values at the global sorted ``positions`` (int64) where each rank
    holds the consecutive ``bucket`` of the sorted array, on every rank."""
    mine = np.array([bucket.shape[0]], np.int64)
    base = np.zeros(1, np.int64)
    comm.Exscan(mine, base, op=mpi().SUM)
    base = 0 if comm.Get_rank() == 0 else int(base[0])
    out = np.zeros(positions.shape[0], dtype)
    here = (positions >= base) & (positions < base + bucket.shape[0])
    out[here] = bucket[positions[here] - base]
    bits = np.ascontiguousarray(out).view(np.uint8)
    got = np.empty_like(bits)
    comm.Allreduce(bits, got, op=mpi().BOR)
    return got.view(dtype)


def sorted_weighted(a, w, drop_nan=False):
    """``(values, weights, n)``: this rank's bucket of the flattened ``a``
    sorted by (value, flat index) with the float64 weights of ``w``
    (distributed like ``a``) alongside, and the number of elements in all
    buckets; ``drop_nan`` leaves out NaN values and their weights."""
    comm = a.comm
    part, target = flat_block(a)
    wpart, _ = flat_block(w)
    part = np.ascontiguousarray(part).reshape(-1)
    start = int(block_bounds(target, 0)[comm.Get_rank()])
    index = np.arange(start, start + part.shape[0], dtype=np.int64)
    wts = np.asarray(wpart).reshape(-1).astype(np.float64)
    if drop_nan and part.dtype.kind in "fc":
        keep = ~np.isnan(part)
        part, index, wts = part[keep], index[keep], wts[keep]
    order = np.argsort(part, kind="stable")
    payload = np.empty(order.shape[0], np.dtype([("i", np.int64), ("w", np.float64)]))
    payload["i"], payload["w"] = index[order], wts[order]
    values = np.ascontiguousarray(part[order])
    del part, index, wts, order
    payload, values = sample_sort(comm, values.reshape(1, -1), payload=payload)
    keep = np.lexsort((payload["i"], values))
    n = int(comm.allreduce(values.shape[0]))
    return np.ascontiguousarray(values[keep]), np.ascontiguousarray(payload["w"][keep]), n


def _cumulate(comm, wts):
    """NumPy's ``cumsum`` of the weights of all buckets in rank order (this
    rank's part) and the total, on every rank: the sum so far goes from
    each rank to the next."""
    P, rank = comm.Get_size(), comm.Get_rank()
    carry = comm.recv(source=rank - 1, tag=0x4e57) if rank > 0 else None
    if wts.shape[0]:
        cdf = np.cumsum(wts) if carry is None else \
            np.cumsum(np.concatenate(([carry], wts)))[1:]
        carry = cdf[-1]
    else:
        cdf = wts.copy()
    if rank < P - 1:
        comm.send(carry, dest=rank + 1, tag=0x4e57)
    total = comm.bcast(carry, root=P - 1)
    return cdf, total


def weighted_positions(comm, wts, n, q, total_error):
    """The sorted positions NumPy's weighted 'inverted_cdf' picks for each
    value of ``q`` (an array, its dtype NumPy's quantiles'), as an int64
    array of q's size, on every rank.  ``total_error()`` is called on every
    rank when the total weight is 0, NaN or infinite (NumPy's outcome
    there: an error to raise, or None to go on as NumPy does)."""
    cdf, total = _cumulate(comm, wts)
    quiet = False
    if total is None or not np.isfinite(total) or total == 0:
        total_error()
        quiet = True                     # NumPy warned already (its stand-in)
    with np.errstate(all="ignore") if quiet else contextlib.nullcontext():
        cdf /= (total if total is not None else np.float64(0.0))
    if q.dtype.kind == "f":
        cdf = cdf.astype(q.dtype)
    # NumPy turns every 0 into -1 when the first is 0; the sums only grow,
    # so the zeros are a prefix and turning every 0 is the same
    cdf[cdf == 0] = -1
    counts = np.searchsorted(cdf, q.reshape(-1), side="left").astype(np.int64)
    total_counts = np.empty_like(counts)
    comm.Allreduce(counts, total_counts, op=mpi().SUM)
    return np.minimum(total_counts, n - 1)


def weighted_flat(a, w, q, qs, method, drop_nan, numpy_fn):
    """``numpy_fn(a, q, method=method, weights=w)`` (np.quantile,
    np.percentile or their nan forms; ``qs`` is q as NumPy's quantiles,
    percentiles divided by 100) of the flattened DistArray ``a`` with the
    weights ``w`` (a DistArray distributed like ``a``), on every rank."""
    comm = a.comm
    values, wts, n = sorted_weighted(a, w, drop_nan)
    if n == 0:          # NumPy's outcome (an error, or NaN and its warning) on every rank
        size = int(np.prod(a.shape, dtype=np.int64))
        if drop_nan and size:
            return numpy_fn(np.full(1, np.nan, a.dtype), q, method=method, weights=np.ones(1))
        return numpy_fn(np.empty(0, a.dtype), q, method=method, weights=np.empty(0))
    qarr = np.asanyarray(qs)

    def total_error():
        numpy_fn(np.zeros(1, a.dtype), q, method=method, weights=np.zeros(1))

    positions = weighted_positions(comm, wts, n, qarr, total_error)
    got = pick(comm, values, np.concatenate((positions, [n - 1])), a.dtype)
    result = np.empty(qarr.shape, a.dtype)
    result[...] = got[:-1].reshape(qarr.shape)
    last = got[-1]
    if (np.issubdtype(a.dtype, np.inexact) or a.dtype.kind in "Mm") and np.isnan(last):
        if result.ndim == 0:
            return last
        result[...] = last
    return result


# ------------------------------------------------ the weights' own checks
def weights_kind(weights):
    """What the ranks must agree on about ``weights`` (the values may differ)."""
    if weights is None:
        return None
    if isinstance(weights, DistArray):
        return ("DistArray", weights.shape, str(weights.dtype))
    return ("array", np.shape(weights), str(np.asarray(weights).dtype))


def check_weights(name, a, weights, axis):
    """NumPy's rules for ``weights`` (its shape against ``a`` and ``axis``:
    None, one normalised axis or a tuple of several), with a DistArray
    distributed like ``a`` or, along one axis, a 1-D NumPy array (a
    DistArray along it is gathered first: :func:`gathered_along_axes`)."""
    if isinstance(weights, DistArray):
        if weights.shape != a.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            axes = axis if isinstance(axis, tuple) else (axis,)
            if weights.shape != tuple(a.shape[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            raise DapError(f"np.{name}: weights must be a DistArray of the array's shape "
                           f"{a.shape} (distributed alike) or a 1-D NumPy array along axis, "
                           f"not a DistArray of shape {weights.shape}")
        a._check_same(weights)
        return
    w = np.asarray(weights)
    if axis is None or isinstance(axis, tuple):
        raise DapError(f"np.{name}: with axis={axis!r} the weights must be a DistArray "
                       f"distributed like the array, not a {type(weights).__name__}")
    if w.shape != (a.shape[axis],):
        raise ValueError("Shape of weights must be consistent with "
                         "shape of a along specified axis.")


def gathered_along_axes(a, weights, axis, one_axis=False):
    """``weights`` as NumPy takes them along ``axis``: a DistArray of the
    shape of ``a`` along those axes (not ``a``'s own; with ``one_axis``
    only along a single axis) on ``a``'s communicator, gathered on every
    rank (one ``Allgatherv``; its size is the product of those axes'
    lengths), then taken as a NumPy array of that shape is.  Anything else
    as given (NumPy's shape errors are raised later, as for arrays; weights
    on another communicator are refused there).  Every rank takes the same
    branch: the registry agreed on the shapes, and the communicators are
    compared locally.  Before, refused with a DapError where NumPy answers
    (found by review)."""
    if not isinstance(a, DistArray) or not isinstance(weights, DistArray) \
            or weights.shape == a.shape or axis is None or not _same_comm(a.comm, weights.comm):
        return weights
    try:
        axes = normalize_axis_tuple(axis, len(a.shape))
    except Exception:  # noqa: BLE001 - NumPy's AxisError, raised later on every rank
        return weights
    if (one_axis and len(axes) != 1) or tuple(weights.shape) != tuple(a.shape[d] for d in axes):
        return weights
    return weights.gather(root=None)


def distarray_operand(name, a):
    """A clear DapError where ``a`` is an ndarray and another argument (the
    weights, out=) the DistArray (it was an AttributeError)."""
    if not isinstance(a, DistArray):
        raise DapError(f"np.{name}(a, ...): a must be a DistArray when another argument is "
                       f"one (gather it: x.gather(root=None))")


def _same_comm(c1, c2):
    """Whether two communicators are the same one (a local call)."""
    if c1 is c2:
        return True
    return mpi().Comm.Compare(c1, c2) == mpi().IDENT


def local_weights(weights):
    return None if isinstance(weights, DistArray) else np.asarray(weights)


def check_sign(name, a, weights, q, method):
    """NumPy's error for a negative weight on any rank, raised on every rank
    (one Allreduce)."""
    local = weights.owned if isinstance(weights, DistArray) else np.asarray(weights)
    negative = bool(np.any(local < 0)) if local.size else False
    if a.comm.allreduce(negative, op=mpi().LOR):
        getattr(np, name)(np.zeros(1, a.dtype), q, method=method,
                          weights=np.full(1, -1, local.dtype))
        raise DapError(f"np.{name}: a weight is negative")    # NumPy always raises above
