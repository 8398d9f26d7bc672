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
import types

__all__ = ["Reporter", "caller", "relocated"]

_STUB = (lambda give, name, flags: give(name, flags)).__code__
_MAX = 1024
_stubs = {}          # (file, line, id(globals), name) -> (globals, stub)
_moved = {}          # (function, file, line, id(globals)) -> (globals, function)


def caller(frame):
    """The location a warning made in ``frame`` has."""
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_globals, frame.f_code.co_name)


def _cached(table, key, globs, make):
    hit = table.get(key)
    if hit is not None and hit[0] is globs:
        return hit[1]
    made = make()
    if len(table) >= _MAX:
        table.clear()
    table[key] = (globs, made)
    return made


def _stub(where):
    filename, lineno, globs, name = where

    def make():
        code = _STUB.replace(co_filename=filename, co_firstlineno=max(int(lineno or 1), 1),
                             co_name=name, co_qualname=name)
        return types.FunctionType(code, globs, name)
    return _cached(_stubs, (filename, lineno, id(globs), name), globs, make)


def relocated(fn, where):
    """``fn`` (a function that reads no globals: nclx.evaluate's, whose
    functions are defaults) with its code at ``where``'s file and line and
    run with its module's globals."""
    filename, lineno, globs, _ = where

    def make():
        code = fn.__code__.replace(co_filename=filename, co_firstlineno=max(int(lineno or 1), 1))
        return types.FunctionType(code, globs, fn.__name__, fn.__defaults__)
    return _cached(_moved, (fn, filename, lineno, id(globs)), globs, make)


class Reporter:
    """The executor's ``report``: step ``k``'s flags reported from its
    location (``wheres[k]``, or ``everywhere`` for every step; None: from
    here)."""
    __slots__ = ("wheres", "everywhere")

    def __init__(self, wheres=(), everywhere=None):
        self.wheres = wheres
        self.everywhere = everywhere

    def __call__(self, k, give, name, flags):
        where = self.everywhere
        if where is None and k < len(self.wheres):
            where = self.wheres[k]
        if where is None:
            give(name, flags)
        else:
            _stub(where)(give, name, flags)
