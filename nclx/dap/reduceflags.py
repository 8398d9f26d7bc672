"""A rank's local reduction with its floating-point flags kept for the
collective (nclx.dap.reduce).

NumPy warns "overflow encountered in reduce" (divide by zero, underflow,
invalid value) once for the whole array.  A DistArray's reduction meets
such a flag on the rank whose cells raise it -- or only while the ranks
combine -- and every rank holds the result, so the flag must be reported on
every rank: the local reduction runs with those warnings recorded instead
of shown, their bits travel in the reduction's one collective (the fold's
flag word, ORed over the ranks, as the flags met while combining), and
every rank reports them after it, as its ``np.errstate`` says (warn, raise,
call).  Before, only the rank whose own cells overflowed warned.

What is not a reduction's flag passes as it came: a cast's ("... in
cast", per cell: the rank holding the cells, as an elementwise call's) is
given as the caller's errstate says (a raise is that rank's error, which
the collective carries to every rank), any other warning is re-issued.
``print`` and ``log`` modes are left to NumPy (their output is the rank's).
"""
import re
import warnings

import numpy as np

__all__ = ["reduce_recording"]

_BITS = {"divide by zero": 1, "overflow": 2, "underflow": 4, "invalid value": 8}
_KINDS = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
          "invalid value": "invalid"}
_TEXT = re.compile(r"^(divide by zero|overflow|underflow|invalid value) encountered in (\w+)$")


def reduce_recording(call):
    """``call()`` (a local ``ufunc.reduce``) -> ``(result, flags)``: the
    bits of the floating-point flags its reduction met (for the collective)."""
    user = np.geterr()
    local = {k: ("warn" if m in ("warn", "raise", "call") else m) for k, m in user.items()}
    with warnings.catch_warnings(record=True) as seen, np.errstate(**local):
        warnings.simplefilter("always")
        result = call()
    flags = 0
    for w in seen:
        m = _TEXT.match(str(w.message)) if w.category is RuntimeWarning else None
        if m is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif m.group(2) == "reduce":
            flags |= _BITS[m.group(1)]
        else:
            _give(str(w.message), m.group(1), user[_KINDS[m.group(1)]], w)
    return result, flags


def _give(message, text, mode, w):
    """A cast's flag as NumPy gives it under ``mode``."""
    if mode == "raise":
        raise FloatingPointError(message)
    if mode == "call" and np.geterrcall() is not None:
        np.geterrcall()(text, _BITS[text])
        return
    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
