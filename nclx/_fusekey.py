"""The keys of fused plans (nclx.fused): what a call's arguments, the
values a function reads besides them, and the caller's floating-point
error handling and warning filters contribute, so that a plan serves only
calls it computes exactly as NumPy would."""
import decimal
import fractions
import functools
import struct as _struct
import types
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
    if isinstance(a, np.generic) and t is a.dtype.type:
        # NumPy's own scalar type only: a subclass (its own operators, or
        # __array_ufunc__ = None) shared the plan of its base type's bits
        # (found by review)
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


#: how deeply nested a tuple may be keyed (a deeper one runs the function
#: eagerly: keying it recursed past the stack's limit)
TUPLE_DEPTH = 32


def _value_key(v, _depth=0):
    """A frozen value's part of a trace's key, or None (an array, a dtype
    with metadata, or a tuple holding one: the function runs eagerly): a
    scalar's type and bits; an immutable builtin (str, bytes, None, complex,
    a dtype with its type character, a tuple of keyable values) by type and
    value; any other object by identity -- held weakly where it can be,
    else strongly (ufuncs and builtins; a dict or list stays in the cache
    with its key: rebinding the name traces again, changing it in place is
    not covered, docs/fused.md)."""
    if isinstance(v, np.ndarray):
        # an array inside a tuple (a global ``T = (np.array(2.0),)``): its
        # values may change in place, and _arg_key's dtype and ndim would
        # key every such tuple alike (before, rebinding T served the old
        # plan; found by review): not keyable, the function runs eagerly
        return None
    k = _arg_key(v)
    if k is not None:
        return k
    t = type(v)
    if isinstance(v, np.dtype):
        # (its type is a subclass: Float64DType...) by value, with its type
        # character ('l' and 'q' are equal); one with metadata, which eager
        # NumPy's results keep and a plan's lose, runs eagerly (found by review)
        return None if v.metadata is not None else ("dtype", t, v, v.char)
    if t is complex:               # bits: -0.0 is not 0.0 (== would share the key)
        return ("c", _struct.pack("<dd", v.real, v.imag))
    if t is decimal.Decimal:       # its text keeps the sign of zero and the exponent
        return ("d", str(v))
    if t in _BY_VALUE:
        return ("v", t, v)
    if t is tuple:
        if _depth >= TUPLE_DEPTH:
            return None
        keys = tuple(_value_key(x, _depth + 1) for x in v)
        return None if any(k is None for k in keys) else ("t", keys)
    try:
        return _Same(v, weakref.ref(v))
    except TypeError:
        return _Same(v, v)


#: how many levels of functions held in closure cells, defaults and a
#: partial's arguments _frozen follows (a decorator's wrapped function)
HELD_DEPTH = 3


def _frozen(fn, _depth=0):
    """The values a trace of ``fn`` would keep besides its arguments: its
    code object, its globals (those its code and nested code read), closure
    cells, defaults and keyword-only defaults -- scalars by type and bits,
    other hashable objects by themselves -- so changing one traces again;
    and the same of the Python functions it holds in a closure cell, a
    default or a partial's argument (a decorator's wrapper calls the
    function it wraps through a cell: before, that function's globals were
    not keyed and a rebound one served the old plan; found by review), to
    HELD_DEPTH levels.  None when one of them is an array (its values could
    change in place; also inside a tuple) or a dtype with metadata: such a
    function runs eagerly, as does a callable whose state is not keyed here
    (a callable object, a bound method: its attributes; before, such a
    trace was kept and served after they changed) -- a ``functools.partial``
    is keyed by its function and bound arguments (found by review)."""
    if isinstance(fn, functools.partial):
        inner = _frozen(fn.func, _depth)
        args = tuple(_value_key(v) for v in fn.args)
        keywords = tuple((k, _value_key(fn.keywords[k])) for k in sorted(fn.keywords))
        if inner is None or any(k is None for k in args) or \
                any(k is None for _, k in keywords):
            return None
        held = _held_functions(list(fn.args) + [fn.keywords[k] for k in sorted(fn.keywords)],
                               _depth)
        if held is None:
            return None
        return (("partial", inner), args, keywords) + held
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
    defaults = list(getattr(fn, "__defaults__", None) or ())
    # a name not in the globals is read from the builtins (``abs``): keyed
    # too, so a patched builtin traces again (before, the old plan was
    # served; review 25)
    builtin = getattr(fn, "__builtins__", None)
    if not isinstance(builtin, dict):
        builtin = getattr(builtin, "__dict__", {})
    values = [(name, glob[name] if name in glob else builtin[name])
              for name in sorted(_names(code)) if name in glob or name in builtin]
    values += [(None, v) for v in cells]
    values += [(None, v) for v in defaults]
    values += [(name, kwdefaults[name]) for name in sorted(kwdefaults)]
    for name, v in values:
        k = _value_key(v)
        if k is None:              # an array, or a tuple holding one
            return None
        out.append((name, k))
    held = _held_functions(cells + defaults + [kwdefaults[k] for k in sorted(kwdefaults)],
                           _depth)
    if held is None:
        return None
    return tuple(out) + held


def _held_functions(values, depth):
    """The keys (_frozen) of the Python functions and partials among
    ``values``, below HELD_DEPTH; None where one is None."""
    if depth >= HELD_DEPTH:
        return ()
    out = []
    for v in values:
        if isinstance(v, (types.FunctionType, functools.partial)):
            k = _frozen(v, depth + 1)
            if k is None:
                return None
            out.append(("held", k))
    return tuple(out)
