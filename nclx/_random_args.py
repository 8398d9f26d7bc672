"""Argument checks of nclx.random.Generator, with numpy.random.Generator's
exceptions and messages (NumPy 2.4): dtypes, ``out``, ``size``,
distribution parameters (scalars or broadcast arrays) and the bounds of
``integers``.  Pure functions; the Generator calls them on its general path.
"""
import math
import operator

import numpy as np

from nclx._ncl.rngstream import as_double

#: integers' dtypes: (lowest value, one past the highest)
INT_BOUNDS = {"bool": (0, 2)}
INT_BOUNDS.update({t: (int(np.iinfo(t).min), int(np.iinfo(t).max) + 1)
                   for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")})
#: the fill dtype of each integers dtype (bool draws as uint8)
INT_FILL = {t: ("uint8" if t == "bool" else t) for t in INT_BOUNDS}

_NOT_CONTIGUOUS = ("Supplied output array must be contiguous, writable, aligned, and in machine "
                   "byte-order.")
_NON_NATIVE = ("Providing a dtype with a non-native byteorder is not supported. If you require "
               "platform-independent byteorder, call byteswap when required.")
_MASK64 = (1 << 64) - 1


def float_dtype(dtype, method):
    """The native float32 or float64 dtype ``dtype`` names, else NumPy's TypeError."""
    d = np.dtype(dtype)
    if d == np.float64 or d == np.float32:
        return d
    raise TypeError(f"Unsupported dtype {d!r} for {method}")


def check_out(out, dtype, size):
    """NumPy's checks of a Generator method's ``out``, in its order."""
    if not (isinstance(out, np.ndarray) and (out.flags.c_contiguous or out.flags.f_contiguous)
            and out.flags.writeable and out.flags.aligned and out.dtype.isnative):
        raise ValueError(_NOT_CONTIGUOUS)
    if out.dtype != dtype:
        raise TypeError(f"Supplied output array has the wrong type. Expected {dtype}, got {out.dtype}")
    if size is not None:
        try:
            shape = tuple(size)
        except TypeError:
            shape = (size,)
        if shape != out.shape:
            raise ValueError("size must match out.shape when used together")


def output(size, dtype, out, shape=None):
    """(array to fill, result): ``out``, a new array of ``size`` (or of the
    parameters' broadcast ``shape``), or a 0-d array for a scalar result
    (result None)."""
    if out is not None:
        check_out(out, dtype, size)
        return out, out
    if size is None:
        if shape is None:
            return np.empty((), dtype), None
        arr = np.empty(shape, dtype)
        return arr, arr
    arr = np.empty(size, dtype)
    return arr, arr


def non_negative(value, name):
    """numpy.random's "<name> < 0" check: a set sign bit (-0.0 too), NaN allowed."""
    if isinstance(value, float):
        bad = math.copysign(1.0, value) < 0 and value == value
    else:
        bad = np.any(np.signbit(value) & ~np.isnan(value))
    if bad:
        raise ValueError(f"{name} < 0")


def _as_float64(v):
    """``v`` as a float64 array as NumPy reads a parameter: an ndarray only
    by a safe cast (its TypeError for complex, object, timedelta, strings,
    longdouble), anything else converted as float() would."""
    if isinstance(v, np.ndarray) and not np.can_cast(v.dtype, np.float64, "safe"):
        what = "scalar" if v.ndim == 0 else "array data"
        raise TypeError(f"Cannot cast {what} from {v.dtype!r} to dtype('float64') according "
                        f"to the rule 'safe'")
    return np.asarray(v, dtype=np.float64)


def params(values):
    """The parameters of a continuous distribution as float64 arrays, and
    whether all are 0-d (then as Python floats, NumPy's scalar path)."""
    arrays = [_as_float64(v) for v in values]
    if all(a.ndim == 0 for a in arrays):
        return True, [as_double(v) for v in values]
    return False, arrays


def apart(arrays, arr):
    """``arrays`` (parameters) none of which shares memory with ``arr``, the
    array about to be filled: ``out=`` may be a parameter itself."""
    return [a.copy() if np.may_share_memory(a, arr) else a for a in arrays]


def out_size(size, out):
    """The size a call fills: ``size``, or ``out``'s shape -- broadcast with
    the parameters as a ``size`` would be (NumPy's errors, before any draw)."""
    if size is None and isinstance(out, np.ndarray):
        return out.shape
    return size


def broadcast_shape(size, arrays, first_out=True):
    """Shape of the output: the arrays' broadcast, or ``size`` checked
    against it as NumPy does (the output is broadcast argument 0, or the
    last with ``first_out=False``)."""
    if size is None:
        return np.broadcast(*arrays).shape
    probe = np.empty(size, np.float64)
    operands = [probe, *arrays] if first_out else [*arrays, probe]
    shape = np.broadcast(*operands).shape
    if first_out and shape != probe.shape:
        raise ValueError(f"Output size {probe.shape} is not compatible with broadcast dimensions "
                         f"of inputs {shape}.")
    return probe.shape


def int_dtype(dtype):
    """(name, dtype) of an integers dtype, with NumPy's errors."""
    d = np.dtype(dtype)
    if not d.isnative:               # NumPy 2.4 asks this first ('>f8': ValueError)
        raise ValueError(_NON_NATIVE)
    if d.name not in INT_BOUNDS:
        raise TypeError(f"Unsupported dtype {d!r} for integers")
    return d.name, np.dtype(d.name)      # NumPy's results: int64 as 'l', never 'q'


def _order_error(closed, low):
    if not np.any(low):
        return "high < 0" if closed else "high <= 0"
    return "low > high" if closed else "low >= high"


def int_scalar_bounds(low, high, name, closed):
    """(low, high - low) of 0-d bounds, as Python ints, checked."""
    lb, ub = INT_BOUNDS[name]
    low = int(low)
    high = int(high) - (0 if closed else 1)
    if low < lb:
        raise ValueError(f"low is out of bounds for {name}")
    if high > ub - 1:
        raise ValueError(f"high is out of bounds for {name}")
    if low > high:
        raise ValueError(_order_error(closed, low))
    return low, high - low


def _bits(a, dtype, force=False):
    """uint64 two's-complement bits of a, converted as NumPy does: a forced
    cast (``force``: the wider type of a small one; a NaN warns "invalid
    value encountered in cast"), else a value conversion (64-bit types: a
    NaN raises)."""
    if force:
        return np.asarray(a).astype(dtype).astype(np.uint64)
    return np.array(a, dtype=dtype).astype(np.uint64)


_WIDE_UB = {"bool": np.uint8, "int8": np.uint16, "uint8": np.uint16, "int16": np.uint32,
            "uint16": np.uint32, "int32": np.uint64, "uint32": np.uint64}


def int_array_bounds(low, high, name, closed):
    """(low bits, inclusive range) arrays (uint64) of array bounds, checked
    in NumPy's order."""
    lb, ub = INT_BOUNDS[name]
    low_arr, high_arr = np.asarray(low), np.asarray(high)
    if name in ("int64", "uint64"):
        return _int64_array_bounds(low_arr, high_arr, name, closed)
    # NumPy's bounds as it types them: low against the dtype's own scalar,
    # high against the next wider unsigned one (which decides, with
    # datetime64/timedelta64 bounds, whether the comparison has a loop)
    if np.any(np.less(low_arr, np.dtype(name).type(lb))):
        raise ValueError(f"low is out of bounds for {name}")
    if np.any((np.greater_equal if closed else np.greater)(high_arr, _WIDE_UB[name](ub))):
        raise ValueError(f"high is out of bounds for {name}")
    if np.any((np.greater if closed else np.greater_equal)(low_arr, high_arr)):
        raise ValueError(_order_error(closed, low_arr))
    # the next wider type holds every valid bound
    wide = {"bool": np.uint8, "int8": np.int16, "int16": np.int32, "int32": np.int64,
            "uint8": np.uint16, "uint16": np.uint32, "uint32": np.uint64}[name]
    lo = _bits(low, wide, force=True)
    hi = _bits(high, wide, force=True) - np.uint64(0 if closed else 1)
    return lo, hi - lo


def _exact(arr, name, fits, closed_by=0):
    """``arr`` as ``name`` (int64/uint64): a safe cast where NumPy's casting
    allows one, else each element through Python's ``int()`` (its own
    errors: NaN, infinity) minus ``closed_by``, checked by ``fits(v)`` (an
    error message, or None) -- NumPy 2.4's reading of 64-bit bounds, exact
    where a float comparison would round (2**64 - 1 is 2**64 in float64)."""
    otype = np.dtype(name)
    if np.can_cast(arr.dtype, otype):
        return arr.astype(otype), False
    out = np.empty(arr.shape, otype)
    flat = out.reshape(-1)
    for k, x in enumerate(arr.flat):
        v = int(x) - closed_by
        why = fits(v)
        if why is not None:
            raise ValueError(why)
        flat[k] = v
    return out, True


def _int64_array_bounds(low_arr, high_arr, name, closed):
    """int_array_bounds of int64/uint64: low, then high read exactly
    (:func:`_exact`; a high read element by element is closed at once), the
    order checked on the exact values, then (low bits, inclusive range)."""
    lb, ub = INT_BOUNDS[name]
    low_c, _ = _exact(low_arr, name, lambda v: f"low is out of bounds for {name}"
                      if v < lb or v > ub - 1 else None)
    is_open = 0 if closed else 1

    def fits_high(v):
        if v > ub - 1:
            return f"high is out of bounds for {name}"
        return _order_error(closed, low_c) if v < lb else None
    high_c, read = _exact(high_arr, name, fits_high, is_open)
    if read:
        is_open = 0
    if np.any((np.greater if is_open == 0 else np.greater_equal)(low_c, high_c)):
        raise ValueError(_order_error(closed, low_c))
    lo = low_c.astype(np.uint64)
    return lo, high_c.astype(np.uint64) - np.uint64(is_open) - lo


def int_array_fill(lo, rng, size, low_shape=None, high_shape=None):
    """(shape, per-element low bits, per-element range) of array bounds:
    NumPy's broadcast of (low, high, out) walked over the output's size
    (``low_shape``/``high_shape``: the bounds' own, which NumPy's broadcast
    error names)."""
    shape = np.broadcast(lo, rng).shape if size is None else None
    if size is not None:
        probe = np.empty(size, np.uint8)
        if low_shape is not None:
            np.broadcast(np.broadcast_to(0, low_shape), np.broadcast_to(0, high_shape), probe)
        it = np.broadcast(lo, rng, probe)
        shape = probe.shape
        n = probe.size
        if it.size < n:
            # NumPy's loop would read bounds from arrays with no element
            # (undefined values): refused instead
            raise ValueError(f"integers: the bounds broadcast to shape {it.shape}, with no "
                             f"element to draw size {shape} from")
        lo_b = np.broadcast_to(lo, it.shape).ravel()[:n]
        rng_b = np.broadcast_to(rng, it.shape).ravel()[:n]
    else:
        lo_b = np.broadcast_to(lo, shape).ravel()
        rng_b = np.broadcast_to(rng, shape).ravel()
    return shape, np.ascontiguousarray(lo_b, np.uint64), np.ascontiguousarray(rng_b, np.uint64)


def size_is_empty(size):
    """integers' early exit: NumPy returns an empty array of a zero-size
    ``size`` before looking at the bounds."""
    return size is not None and np.prod(size) == 0


def permutation_length(x):
    """(length, dtype of numpy.arange(x)) of an integer ``x``."""
    if isinstance(x, np.timedelta64):
        # an np.integer without __index__: arange reads it (its unit, NaT)
        arr = np.arange(x)
        return arr.size, arr.dtype
    n = operator.index(x)
    if n >= _HUGE:
        # NumPy's own outcome: its error, or what arange makes of it (an
        # empty float64 array for 2**63)
        arr = np.arange(x)
        return arr.size, arr.dtype
    # arange's dtype of a zero of x's type: a NumPy integer's own (type(x)(0)),
    # a Python int's (an int subclass such as an IntEnum may have no 0)
    return max(n, 0), np.arange(type(x)(0) if isinstance(x, np.integer) else 0).dtype


#: lengths from which permutation(n) asks numpy.arange what n gives (no
#: machine holds 2**40 int64)
_HUGE = 1 << 40


_STATE_ITEMS = ("position", "leftover half", "calls")


def state(value):
    """A Generator's ``state`` (position, leftover 32-bit half or None,
    calls) checked, every item before any is stored: integers of [0,
    2**64) (the half [0, 2**32)) -- a float is refused, not truncated --
    else a TypeError / ValueError / OverflowError naming the item."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"state must be a tuple (position, leftover half or None, calls), "
                        f"not {type(value).__name__}")
    if len(value) != 3:
        raise ValueError(f"state must have 3 items (position, leftover half or None, calls), "
                         f"not {len(value)}")
    items = []
    for i, (v, bits) in enumerate(zip(value, (64, 32, 64))):
        what = f"state[{i}] ({_STATE_ITEMS[i]})"
        if i == 1 and v is None:
            items.append(None)
            continue
        if isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{what} must be an integer, not bool")
        try:
            x = operator.index(v)
        except TypeError:
            raise TypeError(f"{what} must be an integer, not {type(v).__name__}") from None
        if not 0 <= x < (1 << bits):
            raise OverflowError(f"{what} must be in [0, 2**{bits}), not {x}")
        items.append(x)
    return tuple(items)
