"""Local steps whose floating-point flags and warnings NumPy gives once for
the whole array, reported alike on every rank.

A DistArray's step on each rank's own cells meets a flag ("overflow
encountered in multiply") or warns ("All-NaN slice encountered") on the
ranks whose cells cause it; NumPy, computing on the global array, reports
it to the caller whatever the cells' owner.  So the step runs with its
flags and warnings recorded, one collective tells every rank what the
ranks met, and every rank reports the same, after it: under
``np.errstate(...='raise')`` or a warnings filter that raises, every rank
raises the same class, instead of some ranks raising while the others wait
in their next collective.
"""
import warnings

import numpy as np

from nclx._warnscope import recording
from nclx._fpflags import recorded_flags
from nclx._ncl.blockexec import give_fp_errors
from nclx.dap.collective import allgather_checked
from nclx.dap.fold import allreduce_agreed, raise_verdict

__all__ = ["agreed_flags", "agreed_warnings_call"]

_WARNED = 1 << 8        # no NumPy flag: "this rank recorded warnings"
#: NumPy warns these once per slice (its nan-quantiles' lines): the ranks'
#: counts add up; any other warning NumPy gives once per vectorised step
_PER_SLICE = frozenset(["All-NaN slice encountered"])


def agreed_flags(comm, fn, name, what):
    """``fn()``, a local step on this rank's cells, with the floating-point
    flags it meets recorded, ORed over ``comm`` (one ``Allreduce``, which
    also raises an exception of ``fn`` on every rank) and reported on every
    rank as NumPy reports ufunc ``name``'s ("overflow encountered in
    multiply") under the caller's ``np.errstate``."""
    error = result = None
    flags = 0
    try:
        result, flags = recorded_flags(fn)
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    verdict, _ = allreduce_agreed(comm, np.add, None, None, error, fp=flags,
                                  key=f"{what} flags of {name}", kind="call")
    if verdict is not None:
        flags = verdict[4]
        # the flags are the step's, named below, not a reduction's
        raise_verdict(verdict[:4] + (0,), comm.Get_size(), comm.Get_rank(), what, error)
    give_fp_errors(name.encode(), flags)
    return result


def agreed_warnings_call(comm, fn, key, what):
    """``fn()`` with its warnings recorded, then one agreement over ``comm``
    (an exception of any rank raised on every rank, as
    :func:`nclx.dap.fold.agreed_call`), and where some rank warned, one
    ``allgather`` of what they warned: every rank then warns it, as often
    as NumPy's call on the global array does (a per-slice warning as often
    as the ranks together met it, any other once)."""
    seen = []
    error = result = None
    try:
        with recording() as rec:
            try:
                result = fn()
            finally:
                seen = [(w.category, str(w.message)) for w in rec]
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    verdict, _ = allreduce_agreed(comm, np.add, None, None, error, fp=_WARNED if seen else 0,
                                  key=key, kind="call")
    if verdict is None:
        return result
    raise_verdict(verdict[:4] + (0,), comm.Get_size(), comm.Get_rank(), what, error)
    if verdict[4] & _WARNED:
        _warn_agreed(allgather_checked(comm, _counted(seen), None, what))
    return result


def _counted(seen):
    """``[(category, message, times)]`` in order of first appearance."""
    out = {}
    for key in seen:
        out[key] = out.get(key, 0) + 1
    return [(c, m, n) for (c, m), n in out.items()]


def _warn_agreed(everyone):
    """Warn what the ranks' lists say, the same on every rank."""
    total = {}
    for counted in everyone:
        for c, m, n in counted:
            had = total.get((c, m), 0)
            total[(c, m)] = had + n if m in _PER_SLICE else max(had, n)
    for (c, m), n in total.items():
        for _ in range(n):
            warnings.warn(m, c, stacklevel=5)
