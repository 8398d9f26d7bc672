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
import itertools
import sys
import types

__all__ = ["Reporter", "caller", "relocated"]

_STUB = (lambda give, name, flags: give(name, flags)).__code__
_MAX = 1024
_codes = {}          # (code, file, line, name) -> the code moved there (no globals kept)


def caller(frame, columns=False):
    """The location a warning made in ``frame`` has (with ``columns``, the
    positions of the instruction it runs)."""
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_globals, frame.f_code.co_name,
            _positions(frame) if columns else None)


def _positions(frame):
    """``(line, end line, column, end column)`` of ``frame``'s instruction,
    or None where any is unknown."""
    if sys.version_info < (3, 11) or frame.f_lasti < 0:
        return None
    pos = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
    if pos is None or None in pos or pos[0] != frame.f_lineno:
        return None
    return pos


def _linetable(code, positions):
    """A location table (PEP 657: Objects/locations.md in CPython) putting
    every instruction of ``code`` at its first line: with ``positions``'
    columns (entries of the long form, code 14) or none (code 13).  (No
    helper calls: near the recursion limit each frame counts.)"""
    if positions is None:
        fields = (0,)                                    # line delta 0
    else:
        line, end, col, end_col = positions
        fields = (0, end - line, col + 1, end_col + 1)
    entry = bytearray()
    for v in fields:                                     # varints of 6 bits
        while v >= 64:
            entry.append(0x40 | (v & 63))
            v >>= 6
        entry.append(v)
    table = bytearray()
    units = len(code.co_code) // 2
    while units > 0:
        k = min(units, 8)
        table.append(0x80 | ((13 if positions is None else 14) << 3) | (k - 1))
        table += entry
        units -= k
    return bytes(table)


def _moved(code, filename, lineno, name=None, positions=None):
    key = (code, filename, lineno, name, positions)
    hit = _codes.get(key)
    if hit is None:
        kw = {"co_filename": filename, "co_firstlineno": max(int(lineno or 1), 1)}
        if name is not None:
            kw["co_name"] = name
            if sys.version_info >= (3, 11):
                kw["co_qualname"] = name
        if sys.version_info >= (3, 11):
            kw["co_linetable"] = _linetable(code, positions)
        hit = code.replace(**kw)
        if len(_codes) >= _MAX:
            _codes.clear()
        _codes[key] = hit
    return hit


def _stub(where):
    filename, lineno, globs, name, positions = where
    return types.FunctionType(_moved(_STUB, filename, lineno, name, positions), globs, name)


def relocated(fn, where):
    """``fn`` (a function that reads no globals: nclx.evaluate's, whose
    functions are defaults) with its code at ``where``'s file and line and
    run with its module's globals (made per call: no cache keeps them)."""
    filename, lineno, globs, _, _ = where
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
