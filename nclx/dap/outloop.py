"""The loop dtype of a reduction into ``out=`` (NumPy's resolution).

With ``dtype=None`` NumPy takes out's dtype into a reduction's loop
resolution: ``np.sum`` of float16 into a float32 or complex64 ``out=`` adds
in that dtype, of int64 into a float64 ``out=`` in float64.  A DistArray's reduction that ran in the
operand's dtype and cast the result gave other bits (2 x 6e4 in float16
overflowed to inf where NumPy gives 1.2e5; found by review 16).
"""
import numpy as np

__all__ = ["loop_with_out"]


def loop_with_out(ufunc, dt, out, dtype=None):
    """The dtype ``ufunc.reduce(a, out=out)`` (``a`` of dtype ``dt``) runs
    its loop in, where it differs from the one without ``out=``; None where
    they agree, where ``dtype`` is given (it decides), where ``out`` is None
    or has no dtype, or where the resolution fails (the out= checks then
    raise NumPy's own error)."""
    if dtype is not None:
        return None
    odt = getattr(out, "dtype", None)
    if not isinstance(odt, np.dtype):
        return None
    try:
        with_out = ufunc.resolve_dtypes((odt, dt, None), reduction=True, casting="unsafe")[2]
        without = ufunc.resolve_dtypes((None, dt, None), reduction=True, casting="unsafe")[2]
    except Exception:               # noqa: BLE001 - NumPy's own error comes later
        return None
    # only a loop in out's own dtype that holds every operand value
    # (float16 into float32/complex64, int64 into float64, bool into int8):
    # the resolution NumPy reports for other pairs (uint64 into int64 out=)
    # is not always the loop its reduce runs (maximum runs int64 there)
    if with_out == without or with_out != odt or not np.can_cast(dt, with_out, "safe"):
        return None
    return with_out
