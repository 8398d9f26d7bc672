"""The array-level algorithms of Ragged, on raw parts: per-list reductions
over an offsets buffer and a values buffer, lining up the lists of several
operands, combining validity bitmaps, comparing values.

Nothing here knows the Ragged class: every function takes ndarrays
(offsets, values, validity bitmaps) and returns ndarrays; ``ragged.py``
takes a Ragged apart, calls these and wraps the parts it gets back.

Reductions go through nclx's kernels (``nclx.types._segments`` and
``nclx.ufuncs``) and the python level of nclx's hook chains
(``nclx.aware.array_ufunc``): hooks see ``ufunc.reduceat(values, starts)``.
"""
import contextvars
import functools
import operator

import numpy as np

from nclx import _callsite, aware
from nclx._ncl.blockexec import give_fp_errors
from nclx.types import _bits
from nclx.types import _segments
from nclx.types._offsets import check_lists

__all__ = ["REDUCTIONS", "PARALLEL_MIN_VALUES", "same_lengths", "first_difference",
           "combine_validity",
           "segment_reduce", "reduce_fixed", "reduce_flat", "mask_missing", "values_equal"]

#: per-list reduction name -> NumPy's ufunc of it
REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}

#: below this many values a reduction over lists stays on the calling thread
PARALLEL_MIN_VALUES = 1 << 17

#: the dtype kinds each reduction has arithmetic for (count takes any)
REDUCIBLE_KINDS = {"sum": "biufcm", "prod": "biufc", "max": "biufcmM", "min": "biufcmM"}


# ------------------------------------------------------------ lining up
def same_lengths(offsets_a, offsets_b):
    """True when two offsets buffers describe lists of the same lengths."""
    if offsets_a is offsets_b:
        return True
    if len(offsets_a) != len(offsets_b):
        return False
    return bool(np.array_equal(np.diff(offsets_a), np.diff(offsets_b)))


def first_difference(offsets_a, offsets_b):
    """Where two offsets buffers' lists first differ, in words (the error
    of :func:`same_lengths`' False; before review 23 it named no list)."""
    if len(offsets_a) != len(offsets_b):
        return f"{len(offsets_a) - 1} lists and {len(offsets_b) - 1} lists"
    la, lb = np.diff(offsets_a), np.diff(offsets_b)
    i = int(np.argmax(la != lb))
    return f"list {i} has {int(la[i])} values and {int(lb[i])} values"


def combine_validity(parts):
    """The validity of an elementwise result: ``parts`` is a list of
    ``(bitmap or None, bit offset, n)``; returns ``(bitmap or None, bit
    offset)`` -- the one bitmap as given when a single part has one, their
    AND (a new bitmap from bit 0) when several have."""
    have = [p for p in parts if p[0] is not None]
    if not have:
        return None, 0
    if len(have) == 1:
        return have[0][0], have[0][1]
    valid = np.logical_and.reduce([_bits.valid_mask(*p) for p in have])
    return _bits.pack(valid), 0


# ------------------------------------------------------------- reductions
def _sum_dtype(dtype):
    # NumPy's and awkward's rule for sum/prod: small ints widen to the platform int
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def _present(values, mask, offsets):
    """The values not masked, and offsets of the same lists over them."""
    kept = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(~mask, out=kept[1:])
    return values[~mask], kept[offsets]


#: a list while the caller reports the flags of per-list reductions itself
#: (a Ragged with missing lists: theirs do not count)
_HELD = contextvars.ContextVar("nclx_types_held_flags", default=None)


def held_flags(fn):
    """``fn()`` -> ``(result, flags)``: per-list reductions' floating-point
    flags kept, not reported."""
    token = _HELD.set([])
    try:
        result = fn()
        return result, functools.reduce(operator.or_, _HELD.get(), 0)
    finally:
        _HELD.reset(token)


def segment_reduce(name, values, offsets, dtype=None):
    """``name`` (sum, prod, max, min or count) over
    ``values[offsets[i]:offsets[i+1]]`` for every i: one result per list.
    ``values``: 1-D ndarray or masked array (missing values skipped);
    ``offsets`` start at 0.  max/min return a masked array (a list with no
    value has none, as in awkward)."""
    n = len(offsets) - 1
    mask = None
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        values = values.data
    if name == "count":
        if mask is None:
            # offsets taken on trust: a list that runs backwards has no
            # count (found by review: np.diff gave a negative one)
            check_lists(offsets, len(values))
            return np.diff(offsets).astype(np.int64)
        return segment_reduce("sum", ~mask, offsets, np.dtype(np.int64))
    ufunc = REDUCTIONS[name]
    if not values.dtype.isnative:
        # big-endian values: the kernels and the ufuncs' dtype= take the
        # machine's order (found by review: a TypeError for '>f8'); the
        # values the lists reach are swapped, so every bit equals the
        # native computation
        values = values.astype(values.dtype.newbyteorder("="))
    if dtype is None:
        dtype = _sum_dtype(values.dtype) if name in ("sum", "prod") else values.dtype
    dtype = np.dtype(dtype)
    if not dtype.isnative:
        dtype = dtype.newbyteorder("=")
    if mask is not None:
        if name in ("sum", "prod"):   # a missing value adds the identity
            values = np.where(mask, aware.start_value(ufunc.__name__, values.dtype), values)
        else:                         # max/min: over the values present
            # offsets taken on trust are indices here: checked before, so a
            # negative one cannot wrap around (found by review)
            check_lists(offsets, len(values))
            values, offsets = _present(values, mask, offsets)
    window = values[:int(offsets[-1])]
    kw = {"axis": 0, "dtype": dtype}
    empty = None if name in ("sum", "prod") else np.zeros(n, dtype=np.uint8)

    def compute(ufunc, method, inputs, kwargs):
        if method == "reduceat" and inputs[0] is window and kwargs == kw:
            return _reduce_segments(ufunc, window, offsets, dtype, empty)
        return getattr(ufunc, method)(*inputs, **kwargs)

    # hooks of the python level see ufunc.reduceat(values, starts): one
    # segment per list; the empty lists are fixed up below
    out = aware.array_ufunc(ufunc, "reduceat", (window, offsets[:-1]), kw, unwrap=lambda x: x,
                            wrap=lambda x: x, compute=compute)
    if name in ("sum", "prod"):
        return out
    m = np.broadcast_to(empty.view(bool).reshape((n,) + (1,) * (out.ndim - 1)), out.shape)
    return np.ma.masked_array(out, mask=m.copy())


#: values cast at a time where an integer sum or product widens (int8 -> int64)
_CAST_CHUNK = 1 << 20


def _widened_in_chunks(ufunc, values, offsets, dtype, identity):
    """Integer sums and products into a wider dtype, the values cast a chunk
    of lists at a time (before, every value was copied to the wide dtype
    first: 8 bytes an int8, a 16 GiB temporary for one list of 2**31;
    review 23); a list longer than a chunk is reduced by NumPy's buffered
    cast in pieces.  Integer arithmetic wraps the same in any grouping:
    no bit changes."""
    check_lists(offsets, len(values))          # the pieces' offsets are shifted
    n = len(offsets) - 1
    out = np.empty(n, dtype=dtype)
    name = ufunc.__name__
    i = 0
    while i < n:
        a = int(offsets[i])
        j = min(max(int(np.searchsorted(offsets, a + _CAST_CHUNK, side="right")) - 1, i + 1), n)
        b = int(offsets[j])
        if j == i + 1 and b - a > _CAST_CHUNK:
            out[i] = aware.nclx_ufunc(ufunc).reduce(values[a:b], dtype=dtype)
        else:
            _segments.segment_reduce(name, values[a:b].astype(dtype), offsets[i:j + 1] - a,
                                     out[i:j], None, identity)
        i = j
    return out


def _reduce_segments(ufunc, values, offsets, dtype, empty):
    """One result per list, empty lists given the identity (sum/prod) or 0
    (max/min) and flagged in ``empty``.  1-D native values: nclx's segment
    kernels (nclx.types._segments: short lists folded in order, long ones
    through nclx's reduction kernel), the lists split across the core's
    thread team above PARALLEL_MIN_VALUES values -- each list is reduced
    whole by one thread, so the split changes no bit.  Otherwise nclx's ufunc's reduceat over the non-empty lists."""
    n = len(offsets) - 1
    name = ufunc.__name__
    # (np.zeros: a datetime64 has no dtype.type(0) without a unit)
    identity = aware.start_value(name, dtype) if empty is None else np.zeros((), dtype)[()]
    if values.ndim == 1 and values.dtype.isnative and dtype.kind != "b":
        if values.dtype != dtype and len(values) > _CAST_CHUNK and \
                values.dtype.kind in "biu" and dtype.kind in "iu":
            return _widened_in_chunks(ufunc, values, offsets, dtype, identity)
        vals = values if values.dtype == dtype else values.astype(dtype)
        out = np.empty(n, dtype=dtype)
        # the kernels read typed C pointers: aligned values, whole-item strides
        # (a packed record's field is neither: NumPy's reduceat below)
        if vals.flags.aligned and vals.strides[0] % vals.itemsize == 0 \
                and _segments.kernel_for(name, dtype):
            # the core's thread team, lists split in contiguous slices (each
            # list reduced whole by one thread: the split changes no bit)
            threads = 1 if len(vals) < PARALLEL_MIN_VALUES else n
            flags = []
            _segments.segment_reduce(name, vals, offsets, out, empty, identity, threads=threads,
                                     flags=flags)
            if empty is not None and dtype.kind == "f":
                _as_numpys_rows(ufunc, vals, offsets, out, empty)
            if flags[0] and dtype.kind in "fc" and name in ("add", "multiply"):
                # (maximum/minimum: NumPy's loops report no flag of their
                # comparisons with NaN)
                # NumPy's report of per-row reductions, from the caller's line
                held = _HELD.get()
                if held is None:
                    _callsite.call(give_fp_errors, (b"reduce", flags[0]), {})
                else:
                    held.append(flags[0])
            return out
    # offsets taken on trust: reduceat reads list i up to the next list's
    # start, so a list that runs backwards or leaves the values would be
    # reduced over other lists' values (found by review: max of bool or
    # datetime64 lists, sums of complex ones); the kernels above check
    # each list themselves
    check_lists(offsets, len(values))
    lens = np.diff(offsets)
    nonempty = lens > 0
    if empty is not None:
        empty[:] = ~nonempty
    out = np.empty((n,) + values.shape[1:], dtype=dtype)
    out[~nonempty] = identity
    starts = offsets[:-1][nonempty]
    if len(starts):
        # dtype= of a datetime64/timedelta64 cannot name its unit (NumPy refuses it)
        kw = {} if dtype.kind in "mM" and values.dtype == dtype else {"dtype": dtype}
        out[nonempty] = aware.nclx_ufunc(ufunc).reduceat(values, starts, axis=0, **kw)
    return out


def _as_numpys_rows(ufunc, vals, offsets, out, empty):
    """Float max/min: the lists the segment kernels flagged (``empty[i] ==
    2``: a NaN or a zero) again through the ufunc's ``reduceat`` (one call
    for them all), which gives NumPy's per-row bits -- which NaN of several
    (payload, sign) and which sign of zero its loop picks (its SIMD order)
    -- where the kernels fold in order (review 24: before, the first met)."""
    rows = np.flatnonzero(empty == 2)
    if len(rows) == 0:
        return
    empty[rows] = 0
    at = np.empty(2 * len(rows), np.intp)
    at[0::2] = offsets[:-1][rows]
    at[1::2] = offsets[1:][rows]
    if at[-1] >= len(vals):         # reduceat's last range runs to the end
        at = at[:-1]
    out[rows] = aware.nclx_ufunc(ufunc).reduceat(vals, at)[0::2]


def reduce_fixed(values, name, dtype):
    """``name`` over the last axis of ``values`` (a fixed dimension of
    every element); max/min of a zero-length axis are all missing."""
    if name == "count":
        return np.full(values.shape[:-1], values.shape[-1], dtype=np.int64)
    if name in ("max", "min") and values.shape[-1] == 0:
        return np.ma.masked_all(values.shape[:-1], dtype=values.dtype)
    method = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[name]
    kw = {"dtype": dtype} if name in ("sum", "prod") and dtype is not None else {}
    return method(values, axis=-1, **kw)


def reduce_flat(name, values, dtype):
    """``name`` over every value of ``values`` (an ndarray or masked array;
    missing values skipped): a scalar, None for max/min of nothing."""
    if name == "count":
        return int(np.ma.count(values))
    flat = values.compressed() if isinstance(values, np.ma.MaskedArray) else values.reshape(-1)
    if name in ("max", "min") and flat.size == 0:
        return None
    method = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[name]
    kw = {"dtype": dtype} if name in ("sum", "prod") else {}
    return method(flat, **kw)


def mask_missing(out, valid):
    """``out`` (one result per list) masked where ``valid`` is False."""
    data = out.data if isinstance(out, np.ma.MaskedArray) else out
    mask = ~valid | (np.ma.getmaskarray(out) if isinstance(out, np.ma.MaskedArray) else False)
    return np.ma.masked_array(data, mask=mask)


# ------------------------------------------------------------- comparison
def values_equal(a, b):
    """Same missing entries and the same values where present (NaN equal
    to NaN); ``a`` and ``b`` are ndarrays or masked arrays."""
    ma, mb = _element_mask(a), _element_mask(b)
    if not np.array_equal(ma, mb):
        return False
    da, db = np.ma.getdata(a)[~ma], np.ma.getdata(b)[~mb]
    if da.dtype.names is not None:
        # field by field, each with its own mask: NaN equal to NaN inside a
        # record, and a masked field's hidden bytes not compared (before,
        # ``==`` of whole records: a record holding NaN did not equal
        # itself; found by review)
        if da.dtype != db.dtype:
            return False
        fa, fb = _field_masks(a, ~ma), _field_masks(b, ~mb)
        return all(values_equal(_masked(da[n], fa, n), _masked(db[n], fb, n))
                   for n in da.dtype.names)
    # NaT equal to NaT too (before, a Ragged of datetimes holding NaT did
    # not equal itself; found by review)
    return bool(np.array_equal(da, db, equal_nan=da.dtype.kind in "fcmM"))


def _field_masks(x, keep):
    """The structured mask of the kept records of ``x``, or None."""
    m = np.ma.getmask(x)
    return None if m is np.ma.nomask or m.dtype.names is None else m[keep]


def _masked(field, masks, name):
    return field if masks is None else np.ma.MaskedArray(field, mask=masks[name])


def _element_mask(x):
    """Which elements of ``x`` are missing: a record only where all its
    fields are (a structured mask's ``~`` raised TypeError before; found
    by review)."""
    m = np.ma.getmask(x)
    if m is np.ma.nomask:
        return np.zeros(np.shape(x), bool)
    if m.dtype.names is not None:
        return np.asarray(np.ma.MaskedArray(np.ma.getdata(x), mask=m).recordmask, bool)
    return np.asarray(m, bool)
