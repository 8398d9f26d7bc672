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

import numpy as np

from nclx import _callsite
from nclx._warnscope import recording
from nclx.dap.collective import allgather_checked
from nclx.dap.agreedflags import agreed_flags
from nclx.dap.fold import allreduce_agreed, raise_verdict

__all__ = ["agreed_flags", "agreed_warnings_call"]

_WARNED = 1 << 8        # no NumPy flag: "this rank recorded warnings"
#: NumPy warns these once per slice (its nan-quantiles' lines): the ranks'
#: counts add up; any other warning NumPy gives once per vectorised step
_PER_SLICE = frozenset(["All-NaN slice encountered"])


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
            _callsite.warn(m, c)
