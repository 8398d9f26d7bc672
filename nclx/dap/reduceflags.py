"""A rank's local reduction with its floating-point flags kept for the
collective (nclx.dap.reduce).

NumPy warns "overflow encountered in reduce" (divide by zero, underflow,
invalid value) once for the whole array.  A DistArray's reduction meets
such a flag on the rank whose cells raise it -- or only while the ranks
combine -- and every rank holds the result, so the flag must be reported on
every rank: the local reduction runs under an ``np.errstate`` whose modes
are ``call`` with a recorder (an errstate is the thread's own: nothing
global changes), its bits travel in the reduction's one collective (the
fold's flag word, ORed over the ranks, as the flags met while combining),
and every rank reports them after it, as its ``np.errstate`` says (warn,
raise, call).  Before, only the rank whose own cells overflowed warned.

A reduction whose cast of its operand to ``dtype=`` can raise a flag
(:func:`cast_may_flag`: floats to integers, or to a narrower float) is left
as NumPy runs it, on this rank: its flags may be the cast's (per cell, as an
elementwise call's; a raise there is this rank's error, which the
collective carries to every rank).
So are errstates with a ``log`` mode (its object is the errstate's call)
and kinds in ``print`` or ``ignore`` mode.
"""
import numpy as np

from nclx._fpflags import recorded_flags

__all__ = ["cast_may_flag", "reduce_recording"]


def cast_may_flag(src, dst):
    """Whether casting ``src`` values to ``dst`` can raise a floating-point
    flag: inexact values to integers or booleans (NaN, out of range), or
    to a float of a smaller range (complex to real takes the real part:
    no flag; integers to floats round without one)."""
    if src.kind not in "fc" or src == dst:
        return False
    if dst.kind in "fc":
        return bool(np.finfo(dst).max < np.finfo(src).max)
    return True


def reduce_recording(call, casts=False):
    """``call()`` (a local ``ufunc.reduce``) -> ``(result, flags)``: the
    bits of the floating-point flags its reduction met (for the collective);
    ``casts``: it casts its operand (then 0 flags: NumPy reports them)."""
    user = np.geterr()
    kinds = [k for k, m in user.items() if m in ("warn", "raise", "call")]
    if casts or not kinds or "log" in user.values():
        return call(), 0
    return recorded_flags(call, kinds)
