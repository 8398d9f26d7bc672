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
``where(cond, x, y)`` (a ufunc, not ``np.where``: a bool condition, nclx's
dtypes; float16 operands give float32) and ``cast`` (use
:func:`nclx.convert`).

>>> import numpy as np, nclx.ufuncs as nu
>>> nu.add(np.arange(3), 1)
array([1, 2, 3])
>>> nu.add.reduce(np.ones(10))
np.float64(10.0)
"""
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys

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



def _teach_masked_arrays(core):
    """numpy.ma's domains and fill values of NumPy's ufuncs, for their nclx
    twins too: a masked array masks ``nu.sqrt`` of a negative value as it
    masks ``np.sqrt``'s (``MaskedArray.__array_wrap__`` looks the ufunc up
    in these dicts; before, nclx's results were unmasked NaN and inf;
    review 26)."""
    for op, uf in _ufuncs.items():
        npuf = _spec.numpy_ufunc(op)
        for table in (core.ufunc_domain, core.ufunc_fills):
            if npuf in table:
                table.setdefault(uf, table[npuf])


class _OnMaskedImport(_abc.MetaPathFinder):
    """Teaches numpy.ma when it is imported after nclx.ufuncs (importing it
    here would cost every ``import nclx`` about 16 ms)."""

    def find_spec(self, name, path, target=None):
        if name != "numpy.ma.core":
            return None
        if self in _sys.meta_path:
            _sys.meta_path.remove(self)          # once
        spec = _util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _teach_masked_arrays(module)
        spec.loader.exec_module = exec_module
        return spec


if "numpy.ma.core" in _sys.modules:
    _teach_masked_arrays(_sys.modules["numpy.ma.core"])
else:
    _sys.meta_path.insert(0, _OnMaskedImport())

__all__ = list(NAMES) + ["divide", "mod", "bitwise_not", "loop_signatures", "ufuncs_for",
                         "selected_isa"]
