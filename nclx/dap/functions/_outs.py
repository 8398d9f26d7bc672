"""``out=`` of the order statistics (np.median, np.quantile, ...): checked
on every rank, agreed in one collective, then written -- so a rank whose
``out`` is wrong raises on every rank and no rank writes.

``out`` must have the result's dtype: NumPy computes its last steps in
out's dtype (``np.mean``'s sum and division for the medians, the
interpolation's ufuncs, ``take`` or ``out[...] =`` for the quantiles, each
with its own casting), so another dtype gives other bits or another error
on each path; with the result's dtype every path writes the bits it
returns without ``out``, which nclx computes.  Another dtype is refused
(TypeError), as is a tuple (NumPy's medians and most quantile paths refuse
one; its linear ``np.quantile`` alone takes a 1-tuple and returns a tuple).
"""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.functions._layout import agree_call
from nclx.dap.validate import DapError


def _check(name, out, result):
    what = f"np.{name}"
    if isinstance(result, DistArray):
        if not isinstance(out, DistArray):
            raise DapError(f"{what}: out= must be a DistArray (the result is one, of shape "
                           f"{result.shape}), not {type(out).__name__}")
        if out.distribution != result.distribution and out.comm != result.comm:
            raise DapError(f"{what}: out= must be on the array's communicator, or distributed "
                           f"as the result ({result.distribution})")
    elif not isinstance(out, np.ndarray):
        raise TypeError("return arrays must be of ArrayType")              # NumPy's
    elif not out.flags.writeable:
        raise ValueError("output array is read-only")                     # NumPy's
    want = tuple(result.shape) if isinstance(result, DistArray) else np.shape(result)
    if tuple(out.shape) != tuple(want):
        raise ValueError(f"{what}: out= has shape {tuple(out.shape)}, the result {tuple(want)}")
    rdt = result.dtype if isinstance(result, DistArray) else np.result_type(result)
    if out.dtype != rdt:
        raise TypeError(f"{what}: out= must have the result's dtype {rdt} for a DistArray "
                        f"(NumPy computes in out's dtype), not {out.dtype}")


def put_out(name, out, result, comm):
    """``result`` written into ``out`` (returned), or ``result`` when ``out``
    is None.  A DistArray result goes into a DistArray ``out`` of its
    global shape, in ``out``'s distribution (moved there where it differs:
    one ``Alltoallw``); a value or array into a writeable ndarray of its
    shape.  Both of the result's dtype."""
    if out is None:
        return result
    error = None
    try:
        _check(name, out, result)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, f"np.{name} out=", (name, isinstance(out, DistArray)))
    if isinstance(result, DistArray):
        moved = out._aligned(result) if out.distribution != result.distribution else result
        out._block[...] = moved._block
        return out
    out[...] = result
    return out
