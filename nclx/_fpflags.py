"""When a floating-point flag can raise where it is reported.

NumPy reports a flag as ``np.errstate`` says: ignore, warn, raise, call a
function, print, log.  Where the report can be an exception, a step must not
have written what the caller sees before it: the block executor then
computes into a private buffer and copies into ``out=`` after the report
(as ``np.copyto(out, expr)`` leaves ``out`` untouched when ``expr``
raises), and a DistArray step computed on each rank's own cells agrees
across the ranks (:func:`nclx.dap.fold.guarded_call`, DistArray's
elementwise calls); elsewhere neither costs anything.
"""
import warnings

import numpy as np

__all__ = ["fp_may_raise"]


def fp_may_raise():
    """Whether a floating-point flag can raise where it is reported:
    ``np.errstate(...='raise')``, ``'call'`` (the callback may raise), or
    ``'warn'`` where a warnings filter turns RuntimeWarning into an error
    (``warnings.simplefilter("error")``, ``pytest -W error``)."""
    modes = np.geterr().values()
    if "raise" in modes or "call" in modes:
        return True
    return "warn" in modes and _warnings_raise()


_SEEN_FILTERS = [None, False]     # (the filters' key, whether one raises RuntimeWarning)


def _warnings_raise():
    """Whether a warnings filter turns a RuntimeWarning into an error; the
    answer kept while the filter list is the same object of the same length
    with the same first entry (simplefilter inserts there, catch_warnings
    swaps the list)."""
    f = warnings.filters
    key = (id(f), len(f), f[0] if f else None)
    seen = _SEEN_FILTERS
    if seen[0] != key:
        verdict = any(x[0] == "error" and issubclass(RuntimeWarning, x[2]) for x in f)
        seen[:] = [key, verdict]
    return seen[1]
