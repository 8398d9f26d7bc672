"""The one nclx-aware ``__array_ufunc__``: shared by every array type nclx
ships (NclxArray, DistArray, storages).

A type implements ``__array_ufunc__`` as::

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return nclx.aware.array_ufunc(ufunc, method, inputs, kwargs,
                                      unwrap=..., wrap=..., compute=None)

The call walks the "python" level chain of its subsystem (so python-level
hooks see it), then runs on unwrapped operands -- ``out=`` and ``where=``
included, every ufunc method (``__call__``, ``reduce``, ``accumulate``,
``reduceat``, ``outer``, ``at``) -- and wraps the result.  ``np.sum(x)``,
``np.max(x)`` and friends reach it through the type's ``sum``/``max``
methods or, for ndarray subclasses, through NumPy's own reductions.
"""
import numpy as np

from nclx import _callsite
from nclx import mask as _mask
from nclx import sorting as _sorting
from nclx import ufuncs as _nu
from nclx._ncl import spec as _spec
from nclx._ncl.pychain import run_python_chain
from nclx._ncl.registry import SUBSYSTEMS

__all__ = ["array_ufunc", "array_function", "subsystem_of", "nclx_ufunc", "outs_of",
           "foreign", "start_value"]

#: The value a reduction of ``op`` over a dtype starts from (its identity, or
#: the dtype's lowest/highest value for maximum/minimum): ``spec.start_value``.
start_value = _spec.start_value


_NDARRAY_UFUNC = np.ndarray.__array_ufunc__


def outs_of(kwargs):
    """``out=`` of a ufunc call as a tuple, however it was given (``()`` when
    absent; ``out=x`` and ``out=(x,)`` both give ``(x,)``)."""
    out = kwargs.get("out")
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


def foreign(inputs, kwargs, own=()):
    """True when an operand -- an input, an ``out=`` or ``where=`` -- is of an
    array type with its own ``__array_ufunc__`` that is not one of the
    ``own`` types: any such type but a plain ndarray (or an ndarray subclass
    that keeps ndarray's ``__array_ufunc__``, or nclx's NclxArray view).
    NumPy's protocol, as ``ndarray.__array_ufunc__`` follows it: the caller
    returns NotImplemented, so that type is asked (and NumPy raises its
    TypeError when nobody handles the call)."""
    where = kwargs.get("where")
    operands = tuple(inputs) + outs_of(kwargs) + (() if where is None else (where,))
    for x in operands:
        if own and isinstance(x, own):
            continue
        override = getattr(type(x), "__array_ufunc__", None)
        if override is None or override is _NDARRAY_UFUNC:
            continue        # no override (None: NumPy raises its own TypeError)
        if isinstance(x, np.ndarray):
            if getattr(type(x), "_nclx_plain_view", False):
                continue    # NclxArray: an ndarray whose override only walks the hooks
            return True     # an ndarray subclass with its own override
        if not isinstance(x, (np.generic, int, float, complex, bool)):
            return True
    return False

def _subsystem_names():
    """ufunc name (NumPy's: true_divide is 'divide') -> its subsystem."""
    out = {}
    for op, (kind, *_rest) in _spec.OPS.items():
        npuf = _spec.numpy_ufunc(op)
        out[npuf.__name__ if npuf is not None else op] = _spec.SUBSYSTEM_OF_KIND[kind]
    return out


_SUBSYSTEM_OF_NAME = _subsystem_names()


def subsystem_of(ufunc, method="__call__"):
    """The subsystem a ufunc call belongs to: compare, binary, unary, isunary,
    ternary, convert or reduce (ufuncs nclx does not serve: by their arity)."""
    if not isinstance(ufunc, np.ufunc):
        # (before: AttributeError "'int' object has no attribute '__name__'"; review 23)
        raise TypeError(f"subsystem_of takes a NumPy ufunc, not {type(ufunc).__name__}")
    if method != "__call__":
        return "reduce"
    sub = _SUBSYSTEM_OF_NAME.get(ufunc.__name__)
    if sub is not None:
        return sub
    return {1: "unary", 3: "ternary"}.get(ufunc.nin, "binary")


#: NumPy ufunc -> op, for the ops whose nclx twin resolves exactly as NumPy's
#: (logical_*: NumPy's promoters for reductions and int/uint64 mixes have no
#: twin in a ufunc built from loops, so NumPy's own is used; under install()
#: its loops are nclx's entries anyway)
_TWIN_OF = {_spec.numpy_ufunc(op): op for op in _spec.OPS
            if op not in _spec.NCLX_ONLY and op not in ("logical_and", "logical_or", "logical_xor")}


def nclx_ufunc(ufunc):
    """nclx's twin of NumPy's ``ufunc`` (the very object, not a namesake such
    as scipy.special.cbrt), or ``ufunc`` itself when nclx has none."""
    op = _TWIN_OF.get(ufunc)
    if op is None:
        return ufunc
    return getattr(_nu, op)


def _unwrap_kwargs(kwargs, unwrap):
    kw = dict(kwargs)
    outs = outs_of(kw) or None
    if outs is not None:
        kw["out"] = tuple(None if o is None else unwrap(o) for o in outs)
    if kw.get("where") is not None and not isinstance(kw["where"], bool):
        kw["where"] = unwrap(kw["where"])
    return kw, outs


def run_unwrapped(ufunc, method, inputs, kwargs, unwrap, kernels=None):
    """Run one ufunc method on unwrapped operands; ``out=`` objects are
    returned as given, other results unwrapped (the chain's hooks see plain
    arrays; :func:`array_ufunc` wraps at the end)."""
    kw, outs = _unwrap_kwargs(kwargs, unwrap)
    args = tuple(unwrap(x) for x in inputs)
    fn = kernels(ufunc) if kernels is not None else ufunc
    try:
        # from the caller's line: NumPy's warnings name it, as for an ndarray
        result = _callsite.call(getattr(fn, method), args, kw)
    except TypeError:
        if fn is ufunc:
            raise
        # a loop NumPy registers outside its legacy list (strings): NumPy's own
        result = _callsite.call(getattr(ufunc, method), args, kw)
    if method == "at":
        return None
    if outs is not None:
        if isinstance(result, tuple):
            return tuple(o if o is not None else r for o, r in zip(outs, result))
        return outs[0] if outs[0] is not None else result
    return result


def array_ufunc(ufunc, method, inputs, kwargs, *, unwrap, wrap, compute=None, kernels=None,
                own=None):
    """Walk the python-level chain, then compute.

    Parameters
    ----------
    unwrap : callable
        operand -> what the computation runs on (an ndarray for local data).
    wrap : callable
        result -> the nclx-aware result; must return aware objects (and
        scalars) unchanged.  Applied once, after the chain.
    compute : callable, optional
        ``compute(ufunc, method, inputs, kwargs)`` replaces the default
        (``run_unwrapped``) for types that compute differently (DistArray
        reductions combine across ranks).
    kernels : callable, optional
        ufunc -> the ufunc that computes (e.g. :func:`nclx_ufunc`).
    own : tuple of types, optional
        The calling type(s): with it, a call with a :func:`foreign` operand
        returns NotImplemented (NumPy's protocol) before anything runs.
    """
    if own is not None and foreign(inputs, kwargs, own):
        return NotImplemented
    sub = SUBSYSTEMS.index(subsystem_of(ufunc, method))

    def final(ufunc, method, inputs, kwargs):
        if compute is not None:
            return compute(ufunc, method, inputs, kwargs)
        return run_unwrapped(ufunc, method, inputs, kwargs, unwrap, kernels)

    result = run_python_chain(sub, ufunc, method, tuple(inputs), dict(kwargs), final)
    if isinstance(result, tuple):
        return tuple(wrap(r) for r in result)
    return wrap(result)


_NOARG = object()


def _operand_ok(v, dt=None):
    """An operand ``_where`` takes: an array, a NumPy scalar, an nclx-aware
    object, or a Python bool/int/float (an int only if it fits ``dt``:
    NumPy's where wraps one that does not, a ufunc refuses it)."""
    if isinstance(v, (np.ndarray, np.generic)) or getattr(type(v), "_nclx_array_function", False):
        return True
    if isinstance(v, (bool, float)):
        return True
    if isinstance(v, int):
        if dt is None or dt.kind not in "iu":
            return True
        info = np.iinfo(dt)
        return info.min <= v <= info.max
    return False


def _where(condition, x=_NOARG, y=_NOARG):
    """np.where(cond, x, y) as nclx.ufuncs.where, or NotImplemented."""
    if x is _NOARG or y is _NOARG:
        return NotImplemented         # np.where(cond): nonzero(), NumPy's own
    if not (_operand_ok(condition) and _operand_ok(x) and _operand_ok(y)):
        return NotImplemented         # None, strings, lists...: NumPy's where
    try:
        dt = np.result_type(x, y)
        cdt = np.result_type(condition)
    except TypeError:
        return NotImplemented
    if dt.char not in _spec.NUMPY_CHAR_ORDER or cdt.char not in _spec.NUMPY_CHAR_ORDER:
        return NotImplemented         # float16, complex, object...: NumPy's where
    if not (_operand_ok(x, dt) and _operand_ok(y, dt)):
        return NotImplemented
    if cdt != np.bool_:
        condition = _nu.not_equal(condition, 0)    # truthiness, as np.where reads it
    result = _nu.where(condition, x, y, signature=(np.bool_, dt, dt, dt))
    if isinstance(result, np.generic):
        result = np.asarray(result)                 # np.where returns an array, 0-d too
    return result


def _handled(types):
    """NumPy's protocol: defer (NotImplemented) when another array type with
    its own ``__array_function__`` takes part in the call."""
    return all(issubclass(t, np.ndarray) or getattr(t, "_nclx_array_function", False)
               for t in types)


#: NumPy functions an NclxArray's ``__array_function__`` runs through nclx
#: (the Sort and Mask chains), with the same arguments and results
ROUTED = {np.sort: _sorting.sort, np.argsort: _sorting.argsort, **_mask.NUMPY_TWINS}


def _own(x):
    return isinstance(x, np.ndarray) and getattr(type(x), "_nclx_plain_view", False)


def _routed(func, args, kwargs):
    """``func`` (a key of ROUTED) on NclxArray operands through nclx's twin:
    the operands as plain views (in-place functions write through them), an
    array result in the first NclxArray's type as NumPy gives a subclass's,
    ``out=`` given back as the object passed; NotImplemented when no operand
    is an NclxArray."""
    ops = list(args) + list(kwargs.values())
    first = next((x for x in ops if _own(x)), None)
    if first is None:
        return NotImplemented
    plain = {}

    def unwrap(x):
        if _own(x):
            v = x.view(np.ndarray)
            plain[id(v)] = (v, x)
            return v
        return x

    result = ROUTED[func](*[unwrap(x) for x in args], **{k: unwrap(v) for k, v in kwargs.items()})
    if id(result) in plain and plain[id(result)][0] is result:
        return plain[id(result)][1]            # out=: the very array passed
    if type(result) is np.ndarray:
        return result.view(type(first))
    return result


def array_function(func, types, args, kwargs, default):
    """The one nclx-aware ``__array_function__``: ``np.where(cond, x, y)``
    runs ``nclx.ufuncs.where`` (the Ternary chain: python-level hooks, the
    ledger row ``where``, threads), ``np.sort``, ``np.argsort``,
    ``np.extract``, ``np.compress``, ``np.place`` and ``np.putmask`` with an
    NclxArray operand run their nclx twins (ROUTED: the Sort and Mask
    chains); every other NumPy function runs as it would without the override
    (``default(func, types, args, kwargs)``); calls with a foreign array
    type return NotImplemented, so that type's own override is asked."""
    if not _handled(types):
        return NotImplemented
    if func is np.where:
        result = _where(*args, **kwargs)
        if result is not NotImplemented:
            return result
    if func in ROUTED:
        result = _routed(func, args, kwargs)
        if result is not NotImplemented:
            return result
    # from the caller's line: NumPy's warnings (np.dot's) name it
    return _callsite.call(default, (func, types, args, kwargs), {})


def numpy_default(func, types, args, kwargs):
    """What NumPy does for a type without ``__array_function__`` (a function
    with no plain implementation -- a ``like=`` call -- is refused as NumPy
    refuses ``like=`` for such a type)."""
    impl = getattr(func, "_implementation", None)
    if impl is None:
        return NotImplemented
    return _callsite.call(impl, args, kwargs)     # (the same)
