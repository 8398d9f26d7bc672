"""Code run at a caller's line: NumPy's warnings where eager NumPy puts them.

NumPy reports a ufunc's floating-point flags through ``PyErr_WarnEx(...,
1)``: the warning names the innermost Python frame when the ufunc runs --
its file, line and module (the warnings filters' ``module=``, and the
registry in which the default action shows a warning once per location).
For a plain ndarray that is the user's line (``a / 0``), or NumPy's own
(``np.sum`` runs ``ufunc.reduce`` in fromnumeric.py).  Where nclx's Python
code runs the ufunc -- the ``__array_ufunc__`` of its storages, NclxArray
and DistArray, the fused executor's report -- it would be a line of nclx:
every warning named nclx, and the default action showed the first of each
message only, whichever user line met it later (found by review).

Here a location is ``(file, line, module globals, code name, positions)``,
``positions`` the ``(line, end line, column, end column)`` of the frame's
instruction or None, and code is moved there: a code object with that
file and line, run with that module's globals.

- :func:`call` runs a function from the first frame outside nclx (its
  warnings are that frame's, as eager NumPy's would be);
- :func:`warn` issues a warning with that frame's stack level;
- :func:`caller`, :func:`relocated`, :func:`moved` serve nclx._fusewarn.
"""
import itertools
import os
import sys
import types
import warnings

from numpy.lib import mixins as _mixins

__all__ = ["call", "caller", "moved", "outside", "relocated", "warn"]

_MAX = 1024
_codes = {}          # (code, file, line, name, positions) -> the code moved there (no globals kept)
_HOME = os.path.dirname(os.path.abspath(__file__)) + os.sep
_USERS = tuple(_HOME + d + os.sep for d in ("demo", "examples"))   # nclx's own callers
# NumPy's operator mixin (storages' ``+``): the line that wrote ``+`` called
_MIXINS = _mixins.__file__


def _inside(filename):
    return (filename.startswith(_HOME) and not filename.startswith(_USERS)) or \
        filename == _MIXINS


def outside(frame):
    """The first frame from ``frame`` outwards that is not nclx's code (the
    demo and examples count as callers) nor NumPy's operator mixin, or
    None."""
    while frame is not None and _inside(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


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


def moved(code, filename, lineno, name=None, positions=None):
    """``code`` at ``filename``:``lineno`` (cached; the cache keeps no globals)."""
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


def relocated(fn, where):
    """``fn`` (a function that reads no globals: nclx.evaluate's, whose
    functions are defaults) with its code at ``where``'s file and line and
    run with its module's globals (made per call: no cache keeps them)."""
    filename, lineno, globs, _, _ = where
    return types.FunctionType(moved(fn.__code__, filename, lineno), globs, fn.__name__,
                              fn.__defaults__)


_CALL = (lambda f, args, kwargs: f(*args, **kwargs)).__code__


_calls = {}          # (file, line, name) -> _CALL moved there


def call(f, args, kwargs):
    """``f(*args, **kwargs)`` run from the first frame outside nclx, as if
    that line had called it (directly from here where there is none).
    About 1.5 us a call: no columns (finding the instruction's columns
    scans the caller's whole location table, 14 us in a module's code)."""
    if sys.gettrace() is not None:
        # a debugger (pdb) would see the stub as the caller's line run twice
        # (a breakpoint there stopped twice; review 23): warnings then name
        # nclx's line
        return f(*args, **kwargs)
    frame = outside(sys._getframe(1))
    if frame is None:
        return f(*args, **kwargs)
    code = frame.f_code
    key = (code.co_filename, frame.f_lineno, code.co_name)
    stub = _calls.get(key)
    if stub is None:
        stub = moved(_CALL, *key)
        if len(_calls) >= _MAX:
            _calls.clear()
        _calls[key] = stub
    try:
        return types.FunctionType(stub, frame.f_globals, key[2])(f, args, kwargs)
    except BaseException as exc:
        # the stub's entry cut from the traceback: the caller's line once,
        # as for an ndarray (before, listed twice; review 23)
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            if tb.tb_next.tb_frame.f_code is stub:
                tb.tb_next = tb.tb_next.tb_next
                break
            tb = tb.tb_next
        raise


def warn(message, category=UserWarning):
    """``warnings.warn`` naming the first frame outside nclx (the line that
    called nclx), whatever the depth of nclx's frames in between."""
    frame, level = sys._getframe(1), 2          # 2: the frame that called warn()
    while frame is not None and _inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)
