"""Where a fused run reports its steps' floating-point flags: where eager
NumPy would.

NumPy reports a ufunc's flags through ``PyErr_WarnEx(..., 1)``: a warning
names the innermost Python frame when the ufunc runs -- its file, line and
module (the warnings filters' ``module=``, and the registry that the
default action "once per location" keeps).  The block executor runs every
step in one C call, so its own report would name nclx's frame for every
expression of every user (one location: the default action showed one
warning per message for the whole process; found by review).  Instead the
executor calls back (``report``) and each step's flags are reported from a
stub function whose frame is the step's eager location: a code object with
that file and line, run with that module's globals.

- ``@nclx.fuse``: the trace records the frame that called each ufunc
  (nclx._probe._where_of): the line of the traced function, and the columns
  of the call or operator there (a raising step's traceback marks them, as
  eager NumPy's does).
- ``nclx.evaluate``: the line that called it, with its module's globals; the
  eager path runs the expression's function relocated there too, so both
  paths warn alike -- every line of a multi-line expression at the calling
  line, no columns (they would be the string's, not the line's).

A location is ``(file, line, module globals, code name, positions)``,
``positions`` the ``(line, end line, column, end column)`` of the step's
instruction or None.
"""
import types

from nclx import _callsite

__all__ = ["Reporter"]

_STUB = (lambda give, name, flags: give(name, flags)).__code__


def _stub(where):
    filename, lineno, globs, name, positions = where
    return types.FunctionType(_callsite.moved(_STUB, filename, lineno, name, positions), globs, name)


class Reporter:
    """The executor's ``report``: step ``k``'s flags reported from its
    location -- ``everywhere`` for every step but a final reduction's
    (NumPy's own frame, as the trace recorded it), else ``wheres[k]``;
    None: from here."""
    __slots__ = ("wheres", "everywhere", "nsteps")

    def __init__(self, wheres=(), everywhere=None, nsteps=0):
        self.wheres = wheres
        self.everywhere = everywhere
        self.nsteps = nsteps

    def __call__(self, k, give, name, flags):
        where = self.everywhere if k < self.nsteps else None
        if where is None and k < len(self.wheres):
            where = self.wheres[k]
        if where is None:
            give(name, flags)
            return
        stub = _stub(where)
        try:
            stub(give, name, flags)
        except BaseException as exc:
            # the report's own (compiled) entry after the stub's is cut: the
            # traceback ends at the step's line, as eager NumPy's does
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code is not stub.__code__:
                tb = tb.tb_next
            if tb is not None:
                tb.tb_next = None
            raise
