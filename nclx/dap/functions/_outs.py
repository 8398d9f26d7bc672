"""``out=`` of the order statistics (np.median, np.quantile, ...): checked
on every rank, agreed in one collective, then written -- so a rank whose
``out`` is wrong raises on every rank and no rank writes."""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.functions._layout import agree_call
from nclx.dap.validate import DapError

#: NumPy's casting of each function's result into out=: the medians write
#: through np.mean's out (unsafe), the quantiles through ufuncs (same_kind).
CASTING = {"median": "unsafe", "nanmedian": "unsafe"}


def _check(name, out, result, casting):
    what = f"np.{name}"
    if isinstance(result, DistArray):
        if not isinstance(out, DistArray):
            raise DapError(f"{what}: out= must be a DistArray (the result is one, of shape "
                           f"{result.shape}), not {type(out).__name__}")
        shape, dtype = out.shape, out.dtype
    else:
        if not isinstance(out, np.ndarray):
            raise TypeError("return arrays must be of ArrayType")          # NumPy's
        if not out.flags.writeable:
            raise ValueError("output array is read-only")                 # NumPy's
        shape, dtype = out.shape, out.dtype
    want = tuple(result.shape) if isinstance(result, DistArray) else np.shape(result)
    if tuple(shape) != tuple(want):
        raise ValueError(f"{what}: out= has shape {tuple(shape)}, the result {tuple(want)}")
    rdt = result.dtype if isinstance(result, DistArray) else np.result_type(result)
    if not np.can_cast(rdt, dtype, casting):
        raise TypeError(f"{what}: cannot cast the result from {rdt!r} to out='s {dtype!r} "
                        f"with casting rule {casting!r}")


def put_out(name, out, result, comm):
    """``result`` written into ``out`` (returned), or ``result`` when ``out``
    is None.  A DistArray result goes into a DistArray ``out`` of its
    global shape, in ``out``'s distribution (moved there where it differs:
    one ``Alltoallw``); a value or array into a writeable ndarray of its
    shape."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]                 # np.median passes a 1-tuple through as NumPy's ufuncs do
    casting = CASTING.get(name, "same_kind")
    error = None
    try:
        _check(name, out, result, casting)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, f"np.{name} out=", (name, isinstance(out, DistArray)))
    if isinstance(result, DistArray):
        moved = out._aligned(result) if out.distribution != result.distribution else result
        np.copyto(out._block, moved._block, casting=casting)
        return out
    np.copyto(out, result, casting=casting)
    return out
