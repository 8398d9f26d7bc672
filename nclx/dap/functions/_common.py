"""What the function modules share: operands on one distribution, wrapping
blocks, reductions that return a value or a DistArray, and the counted
cells of a block (owned and boundary padding, never communication padding).
"""

import numpy as np

from nclx._warnscope import ignoring
from nclx.dap.distarray import DistArray
from nclx.dap.reduce import normalize_axes, reduce_block
from nclx.dap.outwrite import blocks_into, cast_into
from nclx.dap.validate import DapError


def is_da(x):
    return isinstance(x, DistArray)


def first_da(*xs):
    for x in xs:
        if isinstance(x, DistArray):
            return x
    raise TypeError("no DistArray among the arguments")


def blocks(what, *xs):
    """Each DistArray's block (in the first one's distribution: the others
    of its global shape are redistributed, as a ufunc's operands) or the
    scalar as it is; anything else is refused (no implicit distribution)."""
    da = first_da(*xs)
    out = []
    for x in xs:
        if isinstance(x, DistArray):
            try:
                out.append(da._aligned(x)._block)
            except DapError as exc:         # its type kept (DapError[...] included)
                raise type(exc)(f"{what}: {exc}") from None
        elif np.ndim(x) == 0:
            out.append(x)
        else:
            raise DapError(f"{what}: cannot combine a DistArray with a {type(x).__name__} of "
                           f"shape {np.shape(x)} (a DistArray or a scalar)")
    return da, out


def wrap(block, da):
    return DistArray._of(block, da.distribution, da.comm)


def counted(da):
    """Index of this rank's counted cells in its block."""
    return da.distribution.owned_slices(da.comm.Get_rank())


def reduce_parts(da, block, ufunc, axis=None, dtype=None, keepdims=False, where=True,
                 initial=np._NoValue):
    """``ufunc.reduce`` of ``block`` (laid out like ``da``'s) across ranks
    (one collective): the value on every rank, or a DistArray for an axis
    reduction."""
    value, dist, comm = reduce_block(block, da.distribution, da.comm, ufunc, axis=axis,
                                     dtype=dtype, keepdims=keepdims, where=where, initial=initial)
    return value if dist is None else DistArray._of(value, dist, comm)


def expand(result, da, axis):
    """A reduction's result (value or DistArray over the kept axes) as an
    array that broadcasts against ``da``'s block."""
    axes = normalize_axes(axis, da.ndim if hasattr(da, "ndim") else len(da.shape))
    r = result._block if is_da(result) else np.asarray(result)
    if r.ndim == len(da.shape):           # keepdims
        return r
    return np.expand_dims(r, axes) if axes else r


def count(da, axis):
    axes = normalize_axes(axis, len(da.shape))
    return int(np.prod([da.shape[d] for d in axes], dtype=np.int64))


def numpy_refusal(func, probe_dtype, ndim, out, /, **kwargs):
    """Raise NumPy's own error where ``func`` refuses ``out`` (its dtype:
    ``np.std``'s sqrt cannot write an integer out=, ``np.argmax`` a float
    one, the nan-functions want an inexact one): ``func`` run on one element
    of ``dtype`` per dimension (its warnings not shown) with an out= of
    ``out``'s shape and dtype.  The same on every rank."""
    probe = np.ones((1,) * ndim, probe_dtype)
    with ignoring(), np.errstate(all="ignore"):
        # the probe's own result shape: only out='s dtype is probed here (its
        # shape is checked against the result's by the callers; before review
        # 21, an ndarray out= of the global result's shape met the probe's
        # and raised NumPy's broadcast error, naming no out=)
        shape = np.shape(func(probe, **kwargs))
        func(probe, out=np.empty(shape, out.dtype), **kwargs)


def da_out(out, result):
    """Whether ``out`` is a DistArray of another dtype than the DistArray
    ``result``: NumPy's own steps are taken there (:func:`blocks_into`)."""
    return is_da(out) and is_da(result) and out.dtype != result.dtype


def value_out(out, result):
    """Whether ``out`` is an array for a reduction's value (not a DistArray
    result): such an out= is written by NumPy's own steps (:func:`divided_into`)."""
    return out is not None and not is_da(result) and isinstance(out, np.ndarray)


def finish(result, out, what, refusal=None):
    """Write ``result`` to ``out`` (a DistArray of its distribution, or an
    array for a value) and return what NumPy would.  An out= of another
    dtype than the value's: ``refusal(out)`` first (NumPy's error where
    NumPy refuses it, :func:`numpy_refusal`), then :func:`cast_into` (found
    by review: a plain assignment wrote where NumPy raises, and raised
    "cannot convert float NaN to integer" where NumPy writes)."""
    if out is None:
        return result
    if isinstance(out, tuple):
        out = out[0]
    if is_da(result):
        if not is_da(out) or out.distribution != result.distribution:
            raise DapError(f"{what}: out= must be a DistArray distributed like the result "
                           f"({result.distribution})")
        if out.dtype != result.dtype:
            if refusal is not None:
                refusal(out)
            return blocks_into(out, result, what)
        out._block[...] = result._block
        return out
    if is_da(out):      # (before review 21: np.shape's "not implemented" TypeError)
        raise DapError(f"{what}: out= is a DistArray where the result is a value on every "
                       f"rank (shape {np.shape(result)}): pass an ndarray of that shape")
    if np.shape(out) != np.shape(result):     # NumPy refuses it; [...] = would broadcast
        raise ValueError(f"{what}: out= has shape {np.shape(out)}, the result "
                         f"{np.shape(result)}")
    if isinstance(out, np.ndarray) and out.dtype != np.asarray(result).dtype:
        if refusal is not None:
            refusal(out)
        cast_into(out, result)
        return out
    out[...] = result
    return out
