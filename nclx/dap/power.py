"""A DistArray's ``**``: the ufunc an ndarray's operator runs.

NumPy's ``ndarray.__pow__`` takes a fast path for some scalar exponents
(``square``, ``reciprocal``, ``sqrt``; NumPy 2.0 also ``positive`` and
``_ones_like``), whose name its warnings and errors carry and whose rules
differ between NumPy versions; a DistArray asks NumPy which one applies.
"""
import operator

import numpy as np

from nclx.errors import NclxError


class _PowerProbe(np.ndarray):
    """An empty array that reports the ufunc NumPy's ``**`` calls on it."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy 2.0 squares an integer base with a float exponent as float64
        raise _Chosen(ufunc, getattr(inputs[0], "dtype", None))


class _Chosen(NclxError):
    """The probe's signal (never escapes :func:`_power_ufunc`)."""


_power_choice = {}


def _power_ufunc(dtype, other, inplace):
    """The ufunc an ndarray of ``dtype`` runs for ``** other`` (or ``**=``),
    and the dtype its base is cast to first (None: not cast): NumPy's
    operator takes a scalar fast path (``square`` for the exponent 2,
    ``reciprocal``/``sqrt`` for a float base and -1/0.5; NumPy 2.0 also
    ``positive``/``_ones_like`` and NumPy scalars), which names its warnings
    and differs by version, so NumPy is asked (an empty probe, cached for
    Python and NumPy scalars)."""
    key = None
    if isinstance(other, (int, float, complex, np.generic)):
        try:
            key = (dtype, type(other), other, inplace)
            hit = _power_choice.get(key)
        except TypeError:           # an unhashable scalar (a void record)
            key = hit = None
        if hit is not None:
            return hit
    elif not (isinstance(other, np.ndarray) and other.ndim == 0):
        return np.power, None       # arrays: never the fast path
    chosen = (np.power, None)
    try:
        (operator.ipow if inplace else operator.pow)(np.empty(0, dtype).view(_PowerProbe), other)
    except _Chosen as found:
        ufunc, base = found.args
        if ufunc is not np.power:
            chosen = (ufunc, None if base == dtype else base)
    except Exception:               # noqa: BLE001 -- NumPy's power call raises it again
        pass
    if key is not None and len(_power_choice) < 4096:
        _power_choice[key] = chosen
    return chosen


def operator_pow(self, other, inplace=False):
    """``self ** other`` of a DistArray, as an ndarray's."""
    if getattr(type(other), "__array_ufunc__", False) is None:     # NumPy's rule
        return NotImplemented
    uf, cast = _power_ufunc(self.dtype, other, inplace)
    if uf is np.power:
        return np.power(self, other, out=(self,)) if inplace else np.power(self, other)
    if inplace:
        return uf(self, out=(self,))
    return uf(self) if cast is None else uf(self, dtype=cast)


def operator_ipow(self, other):
    """``self **= other`` of a DistArray, as an ndarray's."""
    return operator_pow(self, other, inplace=True)
