"""nclx.sorting: NCLib's Sort subsystem from Python.

``nclx.sort(a, axis=-1, kind=None, order=None, *, stable=None)`` and
``nclx.argsort(...)`` equal ``numpy.sort`` / ``numpy.argsort`` (values,
stable indices, dtype, layout, errors).  Each call walks the "python" Sort
chain (hooks see ``call.ufunc`` = this function, its inputs and keywords);
at its end the lanes of a plain ndarray of the fixed-width dtypes are
sorted by the Sort entries -- the same ones ``install()`` puts in NumPy's
sort slots -- so the "sort" funnel and kernel chains, the ledger and the
threads see them whether nclx is installed or not.  Anything else (field
``order``, subclasses, other dtypes, a bad argument) is NumPy's own call.

``install()`` routes ``np.sort``, ``ndarray.sort``, ``np.argsort`` and what
calls them (np.unique, np.lexsort...) through the same entries on NumPy
2.0-2.4 (docs/hooks.md).
"""
import numpy as np

from nclx._ncl import sorting as _sorting
from nclx._ncl.pychain import run_python_chain
from nclx._ncl.registry import SUBSYSTEMS

__all__ = ["sort", "argsort"]

_SORT = SUBSYSTEMS.index("sort")


def _heapsort_slot():
    """The ArrFuncs slot NumPy's kind='heapsort' runs: its own (1) on NumPy
    2.0-2.3, the default sort's (0) where NumPy makes 'heapsort' an alias of
    it (2.4 on): an array of equal values keeps its order only then."""
    ties = np.zeros(64)
    return 0 if (np.argsort(ties, kind="heapsort") == np.arange(64)).all() else 1


_KIND = {"q": 0, "h": _heapsort_slot(), "m": 2, "s": 2}


def _kind(kind, stable):
    """NumPy's slot of (kind, stable), or None where NumPy itself must answer
    (a bad or conflicting argument gets NumPy's own error)."""
    if stable is not None:
        if kind is not None or not isinstance(stable, (bool, np.bool_)):
            return None
        return 2 if stable else 0
    if kind is None:
        return 0
    if isinstance(kind, str) and kind:
        return _KIND.get(kind[0].lower())
    return None


def _plain(a, order):
    return type(a) is np.ndarray and order is None


def _final_sort(func, method, inputs, kwargs):
    (a,) = inputs
    k = _kind(kwargs["kind"], kwargs["stable"])
    axis = kwargs["axis"]
    if k is not None and _plain(a, kwargs["order"]) and a.ndim > 0:
        if axis is None:
            b, ax = a.flatten(), 0
        elif isinstance(axis, (int, np.integer)) and -a.ndim <= axis < a.ndim:
            b, ax = a.copy(order="K"), int(axis) % a.ndim
        else:
            b = None
        if b is not None and _sorting.sort_lanes(b, ax, k):
            return b
    return np.sort(a, **kwargs)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.sort`` through nclx's Sort chains (see the module)."""
    kwargs = {"axis": axis, "kind": kind, "order": order, "stable": stable}
    return run_python_chain(_SORT, sort, "__call__", (a,), kwargs, _final_sort)


def _final_argsort(func, method, inputs, kwargs):
    (a,) = inputs
    k = _kind(kwargs["kind"], kwargs["stable"])
    axis = kwargs["axis"]
    if k is not None and _plain(a, kwargs["order"]) and a.ndim > 0:
        v = a.ravel() if axis is None else None
        if axis is not None and isinstance(axis, (int, np.integer)) \
                and not isinstance(axis, (bool, np.bool_)) and -a.ndim <= axis < a.ndim:
            v = np.moveaxis(a, int(axis), -1)
        if v is not None and v.size:
            vals = np.ascontiguousarray(v).reshape(-1, v.shape[-1])
            idx = np.empty(vals.shape, dtype=np.intp)
            if _sorting.argsort_lanes(vals, idx, k):
                if axis is None:
                    return idx.reshape(-1)
                # NumPy's argsort returns a fresh C-ordered array of a's
                # shape (canonical strides, size-1 dimensions included)
                res = np.empty(a.shape, dtype=np.intp)
                np.moveaxis(res, int(axis), -1)[...] = idx.reshape(v.shape)
                return res
    return np.argsort(a, **kwargs)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.argsort`` through nclx's Sort chains (see the module)."""
    kwargs = {"axis": axis, "kind": kind, "order": order, "stable": stable}
    return run_python_chain(_SORT, argsort, "__call__", (a,), kwargs, _final_argsort)
