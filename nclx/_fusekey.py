"""The keys of fused plans (nclx.fused): what a call's arguments, the
values a function reads besides them, and the caller's floating-point
error handling and warning filters contribute, so that a plan serves only
calls it computes exactly as NumPy would."""
import decimal
import fractions
import functools
import struct as _struct
import warnings
import weakref

import numpy as np

def _arg_key(a):
    """The part of a call's signature an argument gives, or None: not fusable."""
    t = type(a)
    if t is np.ndarray:             # the type character too: 'q' and 'l' share '<i8'
        return ("a", a.dtype.str, a.dtype.char, a.ndim)
    if t is float:                  # traced as a constant: its bits are part of the key
        return ("s", t, _struct.pack("<d", a))      # (-0.0 is not 0.0, a NaN equals itself)
    if t in (bool, int):
        return ("s", t, a)
    if isinstance(a, np.generic):
        return ("n", a.dtype.str, a.dtype.char, a.tobytes())
    return None


def _state_key():
    """The caller's floating-point error handling and warning filters: part
    of a plan's key, since a trace refuses steps made under other ones than
    the trace's (an np.errstate or catch_warnings inside the function) by
    comparing them -- a plan traced where the function's own state happened
    to be the caller's must not serve a caller under another."""
    call = np.geterrcall()
    filters = tuple(warnings.filters)
    try:
        hash(filters)
    except TypeError:             # a filter entry someone made unhashable
        filters = id(warnings.filters)
    return (tuple(sorted(np.geterr().items())), id(call) if call is not None else None,
            filters)


def _names(code):
    """The global names ``code`` and the code nested in it (lambdas,
    comprehensions, inner functions) read."""
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names(c)
    return names


class _Same:
    """An object in a trace's key, compared by identity: its own ``__eq__``
    and ``__hash__`` never run (they may raise, or return arrays).  Held
    weakly where the object allows it (a key must not keep a rebound global's
    old value alive: 256 keys of large objects), else strongly (ufuncs,
    builtins, dicts and lists)."""
    __slots__ = ("ref", "ident")

    def __init__(self, obj, ref):
        self.ref = ref
        self.ident = id(obj)

    def obj(self):
        return self.ref() if isinstance(self.ref, weakref.ref) else self.ref

    def __eq__(self, other):
        if type(other) is not _Same or other.ident != self.ident:
            return False
        mine = self.obj()
        return mine is not None and mine is other.obj()

    def __hash__(self):
        return self.ident


#: immutable values whose own ==/hash are NumPy's or Python's: keyed by value
_BY_VALUE = (str, bytes, complex, type(None), np.dtype, fractions.Fraction, decimal.Decimal)


def _value_key(v):
    """A frozen value's part of a trace's key: a scalar's type and bits; an
    immutable builtin (str, bytes, None, complex, a dtype, a tuple of keyable
    values) by type and value; any other object by identity -- held weakly
    where it can be, else strongly (ufuncs and builtins; a dict or list stays
    in the cache with its key: rebinding the name traces again, changing it
    in place is not covered, docs/fused.md)."""
    k = _arg_key(v)
    if k is not None:
        return k
    t = type(v)
    if t is complex:               # bits: -0.0 is not 0.0 (== would share the key)
        return ("c", _struct.pack("<dd", v.real, v.imag))
    if t is decimal.Decimal:       # its text keeps the sign of zero and the exponent
        return ("d", str(v))
    if t in _BY_VALUE:
        return ("v", t, v)
    if t is tuple:
        return ("t", tuple(_value_key(x) for x in v))
    try:
        return _Same(v, weakref.ref(v))
    except TypeError:
        return _Same(v, v)


def _frozen(fn):
    """The values a trace of ``fn`` would keep besides its arguments: its
    code object, its globals (those its code and nested code read), closure cells, defaults
    and keyword-only defaults -- scalars by type and bits, other hashable
    objects by themselves -- so changing one traces again.  None when one of
    them is an array (its values could change in place): such a function
    runs eagerly, as does a callable whose state is not keyed here (a
    callable object, a bound method: its attributes; before, such a trace
    was kept and served after they changed) -- a ``functools.partial`` is
    keyed by its function and bound arguments (found by review)."""
    if isinstance(fn, functools.partial):
        inner = _frozen(fn.func)
        bound = list(fn.args) + [fn.keywords[k] for k in sorted(fn.keywords)]
        if inner is None or any(isinstance(v, np.ndarray) for v in bound):
            return None
        return (("partial", inner), tuple(_value_key(v) for v in fn.args),
                tuple((k, _value_key(fn.keywords[k])) for k in sorted(fn.keywords)))
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "__self__", None) is not None:
        return None
    # the code itself: a function whose __code__ is replaced (a reload, IPython's
    # autoreload) traces again (before, the old code's plan was served; found
    # by review)
    out = [("__code__", code)]
    glob = getattr(fn, "__globals__", {})
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:          # an empty cell
            cells.append(None)
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    values = [(name, glob[name]) for name in sorted(_names(code)) if name in glob]
    values += [(None, v) for v in cells]
    values += [(None, v) for v in getattr(fn, "__defaults__", None) or ()]
    values += [(name, kwdefaults[name]) for name in sorted(kwdefaults)]
    for name, v in values:
        if isinstance(v, np.ndarray):
            return None
        out.append((name, _value_key(v)))
    return tuple(out)
