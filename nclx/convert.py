"""nclx.convert: NCLib's Convert subsystem -- fixed-width casts through the
Convert chain.

``nclx.convert(a, dtype)`` equals ``a.astype(dtype)`` -- values, layout
(order 'K'), errors and floating-point warnings ("invalid value encountered
in cast") -- for the fixed-width dtypes bool, int8..int64, uint8..uint64,
float32 and float64.  It runs nclx's cast kernels through the entries, so
the call walks the "convert" funnel chain (ledger row ``cast``, user hooks)
and splits across nclx's threads above the split threshold.

``ndarray.astype`` itself is not reached by ``install()``: NumPy 2's casts
are private ArrayMethods, not ufunc loops (docs/hooks.md says what was
tried).
"""
import numpy as np

from nclx._ncl.dtypes import fixed_width
from nclx.ufuncs import cast as _cast

__all__ = ["convert"]

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _served(dt, role):
    if fixed_width(dt.newbyteorder("=")) is None:
        raise TypeError(f"nclx.convert: the {role} dtype {dt} is not one of nclx's fixed-width "
                        f"dtypes (bool, int8..int64, uint8..uint64, float32, float64)")
    return dt.newbyteorder("=")


def convert(a, dtype, casting="unsafe"):
    """``a`` converted to ``dtype`` as ``numpy.asarray(a).astype(dtype,
    casting=casting)`` does, through nclx's Convert chain.

    Parameters
    ----------
    a : array_like
    dtype : dtype-like, one of nclx's fixed-width dtypes
    casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}
        As for ``astype``: a cast the rule does not allow raises TypeError.

    Returns
    -------
    numpy.ndarray
        A new array (also for 0-d input) with ``a``'s shape and layout.
    """
    arr = np.asarray(a)
    to = np.dtype(dtype)
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _CASTINGS))}, "
                         f"not {casting!r}")
    src = _served(arr.dtype, "input")
    dst = _served(to, "target")
    if not np.can_cast(arr.dtype, to, casting=casting):
        raise TypeError(f"Cannot cast array data from {arr.dtype!r} to {to!r} according "
                        f"to the rule {casting!r}")
    out = np.empty_like(arr, dtype=to)
    if arr.size:
        _cast(arr, out=out, signature=(src, dst), casting="unsafe")
    return out
