"""Elementwise NumPy functions and comparisons of DistArrays: ``where``,
``clip``, ``copy``, ``isclose`` (local, a DistArray of the same
distribution: NumPy's function on each block, so NumPy's values bit for
bit), and ``allclose``, ``array_equal`` (one reduction across ranks).
Operands are DistArrays of one distribution and scalars.  ``result_type``
(the dtype an elementwise call gives) takes a DistArray by its dtype, as
NumPy takes an array's (NEP 50: strong, whatever its values)."""
import numpy as np

from nclx.dap.functions._common import blocks, is_da, reduce_parts, wrap
from nclx.dap.functions.nonzero import nonzero
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


@implements(np.where)
def where(condition, *xy):
    """``np.where(cond, x, y)``: NumPy's on each block; ``np.where(cond)``:
    ``np.nonzero(cond)`` (:mod:`.nonzero`: DistArrays of global indices)."""
    if not xy and is_da(condition):
        return nonzero(condition)
    if len(xy) != 2:
        raise ValueError("either both or neither of x and y should be given")   # NumPy's
    da, (c, x, y) = blocks("np.where", condition, *xy)
    return wrap(np.where(c, x, y), da)


@implements(np.clip)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kwargs):
    """NumPy's ``np.clip`` (its argument errors, then its ``_clip``: NEP 50's
    integer bounds, ``minimum``/``maximum``/``positive`` where a bound is
    None) as ufunc calls of the DistArray: ``where=``, ``out=``,
    ``casting=``, ``dtype=`` and bounds in another distribution as any
    ufunc of a DistArray takes them (before, the keywords went to each
    block's np.clip: an ndarray ``where=`` met each rank's block, some
    ranks raised and others returned; found by review)."""
    if a_min is np._NoValue and a_max is np._NoValue:              # NumPy's
        a_min = None if min is np._NoValue else min
        a_max = None if max is np._NoValue else max
    elif a_min is np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    elif a_max is np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    elif min is not np._NoValue or max is not np._NoValue:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                         "are provided is forbidden.")
    lo, hi = a_min, a_max
    dt = getattr(a, "dtype", None)
    if dt is not None and np.dtype(dt).kind in "iu":
        if type(lo) is int and lo <= np.iinfo(dt).min:
            lo = None
        if type(hi) is int and hi >= np.iinfo(dt).max:
            hi = None
    if lo is None and hi is None:
        return _ufunc(np.positive, a, out=out, **kwargs)
    if lo is None:
        return _ufunc(np.minimum, a, hi, out=out, **kwargs)
    if hi is None:
        return _ufunc(np.maximum, a, lo, out=out, **kwargs)
    return _ufunc(np._core.umath.clip, a, lo, hi, out=out, **kwargs)


def _ufunc(ufunc, *args, out, **kwargs):
    """``ufunc(*args, out=out, **kwargs)`` as NumPy's ``_clip`` calls it: with
    ``where=`` and no out=, its explicit ``out=None`` (NumPy drops that on the
    way to ``__array_ufunc__``, and a where= without out= warns "'where'
    used without 'out'"; np.clip does not: review 21) goes to the blocks as
    ``out=(None,)``, through the DistArray's own ufunc protocol."""
    da = next((x for x in args if is_da(x)), None) if out is None and "where" in kwargs \
        else None
    if da is not None:
        r = da.__array_ufunc__(ufunc, "__call__", *args, out=(None,), **kwargs)
        if r is not NotImplemented:
            return r
    return ufunc(*args, out=out, **kwargs)


@implements(np.copy)
def copy(a, order="K", subok=False):
    """A DistArray of the same distribution with a copy of each block
    (``order``: NumPy's errors, checked on an empty probe; before, any value
    was taken; found by review)."""
    np.copy(np.empty(0, np.uint8), order=order)
    return wrap(a._block.copy(), a)


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A boolean DistArray of ``a``'s distribution (NumPy's isclose per block)."""
    da, (x, y, rtol, atol) = blocks("np.isclose", a, b, *_tolerances("np.isclose", rtol, atol))
    return wrap(np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), da)


def _tolerances(what, rtol, atol):
    """``rtol``/``atol`` as operands: scalars, or DistArrays (aligned as the
    values); an ndarray would broadcast against each rank's block -- wrong
    cells on some ranks, an error on others (before review 21: silent wrong
    values, or one rank raising while the others waited)."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not is_da(v) and np.ndim(v) != 0:
            raise DapError(f"{what}: {name}= of shape {np.shape(v)}: a tolerance is a scalar "
                           f"or a DistArray of the values' global shape (an array would meet "
                           f"each rank's block, not the global array)")
    return rtol, atol


def _all(da, mask):
    return bool(reduce_parts(da, mask, np.logical_and, axis=None))


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``bool``: every counted cell is close (one collective)."""
    da, (x, y, rtol, atol) = blocks("np.allclose", a, b, *_tolerances("np.allclose", rtol, atol))
    return _all(da, np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """``bool`` as NumPy's: False for different shapes (no collective), else
    every counted cell equal (one collective)."""
    def shape(x):
        return x.shape if is_da(x) else np.shape(x)

    if shape(a1) != shape(a2):
        return False
    if equal_nan and a1 is a2:          # NumPy's shortcut (no isnan: any dtype)
        return True
    da, (x, y) = blocks("np.array_equal", a1, a2)
    if equal_nan:
        eq = (x == y) | (_isnan(x, a1) & _isnan(y, a2))
    else:
        eq = x == y
    return _all(da, np.asarray(eq))


def _isnan(x, operand):
    """NumPy's ``isnan`` as ``array_equal(equal_nan=True)`` takes it: none for
    booleans and integers, ``np.isnan`` else -- NaT of times too, and NumPy's
    TypeError for strings and structures, raised on every rank (the dtype is
    the same everywhere; before, NaT was unequal and strings compared;
    found by review)."""
    dt = operand.dtype if is_da(operand) else np.asarray(operand).dtype
    if dt.kind in "biu":
        return np.zeros(np.shape(x), bool)
    np.isnan(np.zeros(0, dt))           # NumPy's error for this dtype, everywhere alike
    return np.isnan(x)


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    """NumPy's ``result_type`` with each DistArray standing as its dtype."""
    return np.result_type(*[x.dtype if is_da(x) else x for x in arrays_and_dtypes])
