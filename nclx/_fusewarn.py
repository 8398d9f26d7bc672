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
  (nclx._probe._where_of): the line of the traced function.
- ``nclx.evaluate``: the line that called it, with its module's globals; the
  eager path runs the expression's function relocated there too, so both
  paths warn alike.
"""
import sys
import types

__all__ = ["Reporter", "caller", "relocated"]

_STUB = (lambda give, name, flags: give(name, flags)).__code__
_MAX = 1024
_codes = {}          # (code, file, line, name) -> the code moved there (no globals kept)


def caller(frame):
    """The location a warning made in ``frame`` has."""
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_globals, frame.f_code.co_name)


def _moved(code, filename, lineno, name=None):
    key = (code, filename, lineno, name)
    hit = _codes.get(key)
    if hit is None:
        kw = {"co_filename": filename, "co_firstlineno": max(int(lineno or 1), 1)}
        if name is not None:
            kw["co_name"] = name
            if sys.version_info >= (3, 11):
                kw["co_qualname"] = name
        hit = code.replace(**kw)
        if len(_codes) >= _MAX:
            _codes.clear()
        _codes[key] = hit
    return hit


def _stub(where):
    filename, lineno, globs, name = where
    return types.FunctionType(_moved(_STUB, filename, lineno, name), globs, name)


def relocated(fn, where):
    """``fn`` (a function that reads no globals: nclx.evaluate's, whose
    functions are defaults) with its code at ``where``'s file and line and
    run with its module's globals (made per call: no cache keeps them)."""
    filename, lineno, globs, _ = where
    return types.FunctionType(_moved(fn.__code__, filename, lineno), globs, fn.__name__,
                              fn.__defaults__)


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
