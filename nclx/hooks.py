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

from nclx import aware as _aware
from nclx._ncl.calls import Call
from nclx._ncl.hooks import Handle, Kernel, chain, chains, register, register_c
from nclx._ncl.pychain import PyCall, run_python_chain
from nclx._ncl.registry import LEVELS, SUBSYSTEMS, HookError, collect, reset
from nclx.aware import subsystem_of

__all__ = [
    "LEVELS", "SUBSYSTEMS", "Call", "Handle", "HookError", "Kernel", "PyCall",
    "chain", "chains", "collect", "register", "register_c", "reset",
    "NclxArray", "aware", "subsystem_of", "run_python_chain",
]


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, NclxArray) else x


def _wrap(result):
    if isinstance(result, np.ndarray) and not isinstance(result, NclxArray):
        return result.view(NclxArray)
    return result


class NclxArray(np.ndarray):
    """An nclx-aware ndarray: its ufunc calls (every method, ``out=`` and
    ``where=`` included) walk the "python" level chains before NumPy runs
    them (nclx.aware.array_ufunc)."""

    #: other nclx array types compute with an NclxArray as with an ndarray
    #: (nclx.aware.foreign does not count it as a foreign array type)
    _nclx_plain_view = True

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=_plain, wrap=_wrap,
                                  own=(NclxArray,))

    def __array_function__(self, func, types, args, kwargs):
        return _aware.array_function(func, types, args, kwargs,
                                     super(NclxArray, self).__array_function__)


def aware(x):
    """View ``x`` as an :class:`NclxArray` (no copy)."""
    return np.asarray(x).view(NclxArray)
