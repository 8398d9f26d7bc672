"""nclx's own ufuncs: real ``numpy.ufunc`` objects whose loops are nclx's entries.

They are named like NumPy's (``nclx.ufuncs.add``, ``nclx.ufuncs.exp``, ...)
and behave like them -- broadcasting, ``out=``, ``where=``, ``dtype=``,
``reduce``/``accumulate``/``reduceat`` and ``__array_ufunc__`` overrides are
NumPy's own machinery -- for the fixed-width dtypes bool, int8..int64,
uint8..uint64, float32 and float64.

Their loops are the very entries ``nclx.install()`` puts in NumPy's tables:
a direct call walks the same funnel and kernel chains (ledger, ``checked()``,
user hooks) and splits across threads like an installed ``np.add``.  Besides
NumPy's names there are nclx's own: ``fma(a, b, c)`` (one rounding),
``where(cond, x, y)`` and ``cast`` (use :func:`nclx.convert`).

>>> import numpy as np, nclx.ufuncs as nu
>>> nu.add(np.arange(3), 1)
array([1, 2, 3])
>>> nu.add.reduce(np.ones(10))
np.float64(10.0)
"""
from nclx._ncl import casts as _casts
from nclx._ncl import entryloops as _entryloops
from nclx._ncl import spec as _spec
from nclx._ncl.ufuncs import loop_signatures, make_ufunc, selected_isa, ufuncs_for

#: Names of the ufuncs, NumPy's names (and nclx's own: fma, where, cast).
NAMES = tuple(_spec.OPS)

_ufuncs = {op: _casts.CAST if op == "cast" else make_ufunc(op, _entryloops.twin_loops(op))
           for op in NAMES}
globals().update(_ufuncs)

# NumPy's aliases of the same objects.
divide = _ufuncs["true_divide"]
mod = _ufuncs["remainder"]
bitwise_not = _ufuncs["invert"]

__all__ = list(NAMES) + ["divide", "mod", "bitwise_not", "loop_signatures", "ufuncs_for",
                         "selected_isa"]
