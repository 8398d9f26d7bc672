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
import functools
import operator
import warnings

import numpy as np

from nclx._ctxrun import run_isolated

__all__ = ["fp_may_raise", "recorded_flags"]


def recorded_flags(fn, kinds=None):
    """``fn()`` -> ``(result, flags)``: the bits of the floating-point flags
    its steps met (as passed to an ``np.errstate`` call function), recorded
    instead of reported -- in ``call`` mode for ``kinds`` (every kind by
    default), an errstate of this thread's own (nothing global changes)."""
    got = []
    modes = {"all": "call"} if kinds is None else {k: "call" for k in kinds}

    def run():
        with np.errstate(call=lambda kind, flag: got.append(flag), **modes):
            return fn()
    # in a copy of the caller's context: a Ctrl-C inside np.errstate's
    # __exit__ cannot leave this errstate in the caller's (review 25)
    result = run_isolated(run)
    return result, functools.reduce(operator.or_, got, 0)


def fp_may_raise():
    """Whether a floating-point flag can raise where it is reported:
    ``np.errstate(...='raise')``, ``'call'`` (the callback may raise), or
    ``'warn'`` where a warnings filter turns RuntimeWarning into an error
    (``warnings.simplefilter("error")``, ``pytest -W error``) or warnings
    are shown by another function than Python's."""
    modes = np.geterr().values()
    if "raise" in modes or "call" in modes:
        return True
    return "warn" in modes and (_warnings_raise() or _shown_elsewhere())


def _shown_elsewhere():
    """Whether ``warnings.showwarning`` is another function than Python's
    (the user's, ``logging.captureWarnings``): it may raise where a warning
    is shown (found by review: evaluate had written out= by then)."""
    return warnings.showwarning is not getattr(warnings, "_showwarning_orig",
                                               warnings.showwarning)


_seen_filters = (None, False)     # (the filters' content, whether one raises RuntimeWarning)


def _warnings_raise():
    """Whether a warnings filter turns a RuntimeWarning into an error; the
    answer kept while the filter list holds the same entries (compared by
    content: a list changed in place, or another list at a reused address,
    is looked at again)."""
    global _seen_filters
    f = tuple(warnings.filters)
    key, verdict = _seen_filters
    if key != f:
        verdict = any(x[0] == "error" and issubclass(RuntimeWarning, x[2]) for x in f)
        _seen_filters = (f, verdict)
    return verdict
