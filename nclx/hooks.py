"""The hook registry, from Python.

Three levels, each a set of chains of nodes (DESIGN.md):

``"python"``
    one chain per subsystem ("compare", "binary", "unary", "reduce") of
    Python callables ``hook(call)`` that see the whole ufunc call
    (``call.ufunc``, ``call.method``, ``call.inputs``, ``call.kwargs``) and
    return ``call.next()`` (or their own result).  Reached by nclx-aware
    arrays (:class:`NclxArray`) for every ufunc method, and by plain ndarray
    calls after ``nclx.install(python_funnel=True)``.
``"funnel"``
    one chain per subsystem that every loop call of an installed NumPy walks
    first; hooks get a :class:`Call` (``op``, ``dtypes``, ``n``, ``views()``)
    and pass it on with ``call.next()``.
``"kernel"``
    one chain per (op, dtype), ending in nclx's kernel then NumPy's original
    loop.  A :class:`Kernel` subclass computes the loop itself.

>>> import numpy as np, nclx, nclx.hooks as hooks
>>> seen = []
>>> def spy(call):
...     seen.append((call.op, call.n))
...     call.next()
>>> with nclx.installed(), hooks.register("funnel", "binary", spy):
...     _ = np.arange(5) + np.arange(5)
>>> seen
[('add', 5)]
"""
import numpy as np

from nclx._ncl.hooks import (
    LEVELS,
    SUBSYSTEMS,
    Call,
    Handle,
    HookError,
    Kernel,
    PyCall,
    chain,
    chains,
    collect,
    register,
    register_c,
    reset,
    run_python_chain,
)
from nclx._ncl import spec as _spec

__all__ = [
    "LEVELS", "SUBSYSTEMS", "Call", "Handle", "HookError", "Kernel", "PyCall",
    "chain", "chains", "collect", "register", "register_c", "reset",
    "NclxArray", "aware", "subsystem_of",
]

_COMPARE = {name for name, (kind, *_rest) in _spec.OPS.items() if kind == "compare"}
_COMPARE |= {"logical_and", "logical_or", "logical_xor"}


def subsystem_of(ufunc, method="__call__"):
    """The subsystem a ufunc call belongs to: compare, binary, unary or reduce."""
    if method != "__call__":
        return "reduce"
    if ufunc.__name__ in _COMPARE:
        return "compare"
    return "unary" if ufunc.nin == 1 else "binary"


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, NclxArray) else x


def _final(ufunc, method, inputs, kwargs):
    inputs = tuple(_plain(x) for x in inputs)
    if "out" in kwargs and kwargs["out"] is not None:
        out = kwargs["out"]
        kwargs = dict(kwargs, out=tuple(_plain(o) for o in out) if isinstance(out, tuple) else _plain(out))
    return getattr(ufunc, method)(*inputs, **kwargs)


def _wrap(result):
    if isinstance(result, np.ndarray) and not isinstance(result, NclxArray):
        return result.view(NclxArray)
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    return result


class NclxArray(np.ndarray):
    """An nclx-aware ndarray: its ufunc calls (every method) walk the
    "python" level chains before NumPy runs them."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        sub = SUBSYSTEMS.index(subsystem_of(ufunc, method))
        return _wrap(run_python_chain(sub, ufunc, method, inputs, kwargs, _final))


def aware(x):
    """View ``x`` as an :class:`NclxArray` (no copy)."""
    return np.asarray(x).view(NclxArray)
