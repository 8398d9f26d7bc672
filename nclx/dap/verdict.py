"""What an agreed collective's verdict (:func:`nclx.dap.fold.allreduce_agreed`)
makes every rank do: raise the failing rank's error (its own there, a
DapError naming it elsewhere), a DapError where the ranks made different
calls, an error met while combining, or NumPy's floating-point report of a
reduction ("overflow encountered in reduce") as this rank's
``np.errstate`` says."""
import builtins

import numpy as np

from nclx import _callsite
from nclx.dap.collective import _ranges, failure_type, mark_agreed
from nclx.dap.validate import DapError

__all__ = ["raise_verdict", "MISMATCH", "OTHER_CALL"]

MISMATCH = "\0mismatch"        # combine_error text: the ranks' keys differ
OTHER_CALL = "\0othercall"     # ... and their kinds of call too (a reduction, an agreement)

# NumPy's floating-point flags (as passed to an np.errstate call= function)
_FP = [(1, "divide", "divide by zero"), (2, "over", "overflow"), (4, "under", "underflow"),
       (8, "invalid", "invalid value")]


def raise_verdict(verdict, nranks, rank, what, local_error):
    """Raise what ``verdict`` (from :func:`allreduce_agreed`) says, the same on
    every rank: a failing rank raises its own exception (marked as agreed),
    the others a DapError naming the failing ranks and the lowest one's
    error, which is also of that error's type where it is Python's, NumPy's
    or nclx's (:func:`nclx.dap.collective.agreed_error_type`); an error
    while combining is raised on every rank with its type (a builtin
    exception type) or as a DapError; a floating-point error
    while combining is what this rank's ``np.errstate`` makes of NumPy's
    "overflow encountered in reduce" (the same on every rank called alike)."""
    if verdict is None:
        return
    failed, first, msg, combine, fp = verdict
    if not failed and combine is None:
        _fp_report(fp)
        return
    head = f"{what}: " if what else ""
    if combine in (MISMATCH, OTHER_CALL):
        which = ("another operation runs on some ranks" if combine == OTHER_CALL else
                 msg or "the operation, axis, dtype, keepdims, initial or the array's layout "
                 "differ between ranks")
        own = ("" if local_error is None else
               f" (and this rank failed: {type(local_error).__name__}: {local_error})")
        err = DapError(f"{head}the ranks made different calls ({which}): every rank must make "
                       f"the same call{own}")
        err._nclx_agreed = True
        raise err from local_error
    if combine is not None:
        name, _, text = combine.partition(": ")
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception) and text:
            err = cls(f"{text} (combining the ranks' partial results in {what})")
        else:
            err = DapError(f"{head}combining the ranks' partial results raised {combine}")
        err._nclx_agreed = True
        raise err
    if local_error is not None:
        raise mark_agreed(local_error)      # (a frozen exception class refuses the attribute)
    if len(failed) == 1:
        lines = [f"rank {first} of {nranks} failed:", f"  rank {first}: {msg}"]
    else:
        lines = [f"{len(failed)} of {nranks} ranks failed (ranks {_ranges(failed)}):",
                 f"  rank {first}: {msg}",
                 "  (each failing rank raises its own error)"]
    err = failure_type(msg)(head + "\n".join(lines))
    err._nclx_agreed = True
    raise err


def _fp_report(flags):
    """Warn or raise as ``np.geterr()`` says for the floating-point flags met
    while combining (NumPy's messages for a reduction)."""
    mode = np.geterr()
    for bit, kind, text in _FP:
        if not flags & bit or mode[kind] == "ignore":
            continue
        message = f"{text} encountered in reduce"
        if mode[kind] == "raise":
            err = FloatingPointError(message)
            err._nclx_agreed = True
            raise err
        try:
            if mode[kind] == "call" and np.geterrcall() is not None:
                np.geterrcall()(text, bit)      # NumPy's: "overflow", not the message
            else:
                _callsite.warn(message, RuntimeWarning)
        except BaseException as exc:
            # after the collective: this rank's own (its filters, its
            # callback), nobody waits for it (before, unmarked, a caller met
            # the others in a new collective that they never joined: a hang
            # where the filters differed between ranks; found by review)
            mark_agreed(exc)
            raise
