"""A local step's floating-point flags, reported alike on every rank.

A DistArray's step on each rank's own cells meets a flag ("overflow
encountered in multiply") on the ranks whose cells cause it; NumPy,
computing on the global array, reports it to the caller whatever the
cells' owner.  :func:`agreed_flags` records the step's flags, ORs them over
the communicator in one agreement (which also raises any rank's exception
on every rank) and reports them on every rank.  Below DistArray's own
methods (``mean``) and the function registry (``nclx.dap.functions``).
"""
import numpy as np

from nclx import _callsite
from nclx._fpflags import recorded_flags
from nclx._ncl.blockexec import give_fp_errors
from nclx.dap.fold import allreduce_agreed, raise_verdict

__all__ = ["agreed_flags"]


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
    _callsite.call(give_fp_errors, (name.encode(), flags), {})
    return result
