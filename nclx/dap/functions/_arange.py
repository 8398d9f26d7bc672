"""``np.arange(..., like=da)``'s values, bit for bit NumPy's, each rank
computing only its own cells.

NumPy (``PyArray_ArangeObj``, ``ctors.c``) finds the dtype (at least intp,
promoted with each argument's), the length ``ceil((stop - start) / step)``
from Python arithmetic on the arguments, stores ``start`` and ``start +
step`` as the first two items (the dtype's ``setitem``) and fills the rest
with the dtype's ``fill``: ``value[i] = first + i * (second - first)`` in
the item type (float16: in float32, then rounded; complex: per component;
bool: a TypeError past two items).  Datetimes and timedeltas take
``datetime_arange`` (``datetime.c``): the three converted to one unit, then
``start + i * step`` in int64.

Here :func:`plan` repeats those steps with NumPy's own pieces -- the
promotion, the length arithmetic on the same objects, the first two items
from ``np.arange`` itself (a stop whose arithmetic gives length 2), the
unit from ``np.arange`` of zeros of each argument's unit and the
conversions from ``np.datetime64``/``np.timedelta64``, which call the
converters ``datetime_arange`` calls -- and applies the fill rule to the
rank's indices.  Where it is not sure (arguments other than numbers,
datetimes, strings of dates; anything NumPy refuses before it allocates)
it calls ``np.arange`` itself: NumPy's own error, or its own result; and
so for a result of at most two items.
"""
import datetime
import math
import warnings

import numpy as np

from nclx._warnscope import recording
from nclx.errors import NclxError

_MISSING = object()
_NAT = np.iinfo(np.int64).min
_DIRECT = 2             # results this long come from np.arange itself
_BOOL_FILL = "arange() is only supported for booleans when the result has at most length 2."


class _Unsure(NclxError):
    """This call is left to ``np.arange`` itself."""


class _Raise(NclxError):
    """NumPy's error for this call, met after NumPy would have allocated
    the result (so not left to ``np.arange``): raised as it is."""


class Plan:
    """The result's ``dtype`` and ``length``, and ``values(idx)``."""

    def __init__(self, dtype, length, values=None, whole=None, first=None):
        self.dtype, self.length, self._values, self._whole = dtype, length, values, whole
        self._first = first

    def values(self, idx):
        if self._whole is not None:
            return self._whole[idx]
        with np.errstate(all="ignore"):
            out = self._values(idx)
        if self._first is not None:         # items 0 and 1 are NumPy's setitem's
            out[idx == 0] = self._first[0]
            out[idx == 1] = self._first[1]
        return out


def plan(args, kw):
    """The :class:`Plan` of ``np.arange(*args, **kw)`` (``kw`` without
    ``like``; NumPy parsed the call already: names, counts, dtype)."""
    found = raised = None
    # the calling thread's warnings only (catch_warnings swaps the process's filters)
    with recording() as caught:
        try:
            found = _plan(args, kw)
        except _Raise as exc:
            raised = exc.args[0]
        except Exception:           # noqa: BLE001 - np.arange raises its own below
            found = None
    if raised is None and (found is None or found.length <= _DIRECT):
        whole = np.arange(*args, **kw)
        return Plan(whole.dtype, len(whole), whole=whole)
    for w in caught:            # NumPy's arithmetic on the arguments warned so
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if raised is not None:
        raise raised
    return found


def _plan(args, kw):
    names = ("start", "stop", "step", "dtype")
    got = dict(zip(names, args))
    got.update((k, v) for k, v in kw.items() if k in names)
    start, stop, step = (got.get(k, _MISSING) for k in names[:3])
    dtype = got.get("dtype")
    if stop is _MISSING:
        if not args:
            raise _Unsure                   # "arange() requires stop to be specified."
    elif start is _MISSING:
        start, stop = stop, _MISSING
    dtype = None if dtype is None else np.dtype(dtype)
    given = [v for v in (start, stop, step) if v is not _MISSING and v is not None]
    if (dtype is not None and dtype.kind in "mM") or \
            (dtype is None and any(_is_datetime(v) or _is_timedelta(v) for v in given)):
        return _datetime_plan(start, stop, step, dtype)
    return _number_plan(start, stop, step, dtype)


# ------------------------------------------------------------------ numbers
_PLAIN = (bool, int, float, complex, np.bool_, np.number)


def _number_plan(start, stop, step, dtype):
    stop = _MISSING if stop is None else stop
    step = _MISSING if step is None else step
    if dtype is None:
        dtype = np.dtype(np.intp)           # NumPy: "at least NPY_LONG"
        for v in (start, stop, step):
            if v is not _MISSING:
                if not (isinstance(v, _PLAIN) or (isinstance(v, np.ndarray) and v.ndim == 0)):
                    raise _Unsure           # strings, arrays, None, objects...
                dtype = np.promote_types(dtype, np.asarray(v).dtype)
    native = dtype.newbyteorder("=")
    if native.kind not in "biufcO":
        raise _Unsure                       # no fill function: NumPy's TypeError
    if step is _MISSING:
        step = 1
    if stop is _MISSING:
        start, stop = 0, start
    length = _length(start, stop, step, native.kind == "c")
    if length <= _DIRECT or native.kind == "O":
        return Plan(dtype, length)          # object: refused by the caller
    try:
        first = np.arange(start, _Two(), step, dtype=native)
    except Exception as exc:                # noqa: BLE001 - the items' own errors
        raise _Raise(exc) from None
    if len(first) != 2:
        raise _Unsure
    if native.kind == "b":
        raise _Raise(TypeError(_BOOL_FILL))
    return Plan(dtype, length, _filler(first, native, dtype), first=first.astype(dtype))


def _length(start, stop, step, cmplx):
    """``_calc_length``: the same Python arithmetic on the same objects."""
    nxt = stop - start
    nonzero = bool(nxt != 0)
    val = nxt / step
    is_zero = bool(val == 0)
    if cmplx and isinstance(val, complex):
        n = min(_ceil(val.real), _ceil(val.imag))
    elif not isinstance(val, (float, int, np.floating, np.integer, np.bool_,
                              np.complexfloating)):
        raise _Unsure                       # complex: "must be real number"
    elif is_zero and nonzero:               # underflow, or division by inf
        n = 0 if math.copysign(1.0, float(val)) < 0 else 1
    else:
        n = _ceil(float(val))
    return max(n, 0)


def _ceil(value):
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise _Unsure           # "cannot compute length", "Maximum allowed size exceeded"
    n = math.ceil(value)
    if not -2 ** 63 <= n < 2 ** 63:
        # overflow; or 2**63, which (double)NPY_MAX_INTP admits and the
        # cast to intp turns into what the platform makes of it
        raise _Unsure
    return n


class _Two:
    """A stop whose ``stop - start`` is nonzero and whose quotient by the
    step is 2: ``np.arange(start, _Two(), step, dtype)`` stores ``start`` and
    ``start + step`` exactly as the whole call does."""

    def __sub__(self, other):
        return _Quotient()


class _Quotient:
    def __ne__(self, other):
        return True

    def __eq__(self, other):
        return False

    __hash__ = None

    def __truediv__(self, other):
        return 2.0


def _filler(first, native, dtype):
    """The dtype's ``fill`` (arraytypes.c.src) at indices ``idx``."""
    with np.errstate(all="ignore"):             # NumPy's fill checks no flags
        return _fill_rule(first[0], first[1], native, dtype)


def _fill_rule(v0, v1, native, dtype):
    kind = native.kind
    if kind in "iu":
        bits = 8 * native.itemsize
        mask = (1 << bits) - 1
        s, d = int(v0) & mask, (int(v1) - int(v0)) & mask

        def values(idx):
            u = np.uint64(s) + idx.astype(np.uint64) * np.uint64(d)     # modulo 2**64
            return _as(u.astype(native), dtype)
        return values
    if kind == "f":
        work = np.dtype(np.float32) if native.itemsize == 2 else native
        s = work.type(v0)
        d = work.type(v1) - s

        def values(idx):
            return _as((s + idx.astype(work) * d).astype(native), dtype)
        return values
    part = np.dtype(native.char.lower())    # complex: each component alike
    sr, si = v0.real, v0.imag
    dr, di = v1.real - sr, v1.imag - si

    def values(idx):
        out = np.empty(len(idx), native)
        i = idx.astype(part)
        out.real = sr + i * dr
        out.imag = si + i * di
        return _as(out, dtype)
    return values


def _as(values, dtype):
    return values if values.dtype == dtype else values.astype(dtype)


# ---------------------------------------------------------------- datetimes
def _is_datetime(v):
    return isinstance(v, (np.datetime64, datetime.date)) or \
        (isinstance(v, np.ndarray) and v.dtype.kind == "M")


def _is_timedelta(v):
    return isinstance(v, (np.timedelta64, datetime.timedelta)) or \
        (isinstance(v, np.ndarray) and v.dtype.kind == "m")


def _wrap(n):
    return (n + 2 ** 63) % 2 ** 64 - 2 ** 63


def _datetime_plan(start, stop, step, dtype):
    """``datetime_arange``: roles, one unit, the length, ``start + i*step``."""
    step = None if step is _MISSING or step is None else step
    stop = None if stop is _MISSING else stop
    start = None if start is _MISSING else start
    if stop is None:
        start, stop = None, start
        if stop is None:
            raise _Unsure                   # "arange needs at least a stopping value"
    if any(isinstance(v, np.ndarray) for v in (start, stop, step)):
        raise _Unsure
    if step is not None and _is_datetime(step):
        raise _Unsure                       # "cannot use a datetime as a step"
    generic = dtype is not None and np.datetime_data(dtype)[0] == "generic"
    if dtype is not None:
        is_dt = dtype.kind == "M"
    else:
        is_dt = (start is not None and _is_datetime(start)) or _is_datetime(stop)
    if is_dt and start is None:
        raise _Unsure                       # "arange requires both a start and a stop"
    relative = is_dt and (isinstance(stop, (int, np.integer)) or _is_timedelta(stop))
    roles = [is_dt, is_dt and not relative, False]          # datetime or timedelta
    objs = [start, stop, step]
    make = [np.datetime64 if r else np.timedelta64 for r in roles]
    if dtype is None or generic:
        own = [None if o is None else m(o) for o, m in zip(objs, make)]
        zeros = [None if o is None else m(0 if i < 2 else 1, np.datetime_data(o.dtype))
                 for i, (o, m) in enumerate(zip(own, make))]
        if zeros[0] is None:
            probe = np.arange(zeros[1], None, zeros[2], dtype=dtype)
        else:
            probe = np.arange(zeros[0], zeros[1], zeros[2], dtype=dtype)
        result = probe.dtype
        unit = np.datetime_data(result)
        vals = [None if o is None else m(o, unit) for o, m in zip(own, make)]
    else:
        result = dtype
        unit = np.datetime_data(dtype)
        vals = [None if o is None else m(o, unit) for o, m in zip(objs, make)]
    v = [None if x is None else int(x.astype(np.int64)) for x in vals]
    v0 = 0 if v[0] is None else v[0]
    vstep = 1 if v[2] is None else v[2]
    v1 = _wrap(v[1] + v0) if relative else v[1]
    if _NAT in (v0, v1, vstep) or vstep == 0:
        raise _Unsure                       # NaT, or a zero step
    if vstep > 0 and v1 > v0:
        num = _wrap(_wrap(v1 - v0) + (vstep - 1))
    elif vstep < 0 and v1 < v0:
        num = _wrap(_wrap(v1 - v0) + (vstep + 1))
    else:
        num = 0
    if num and num != (v1 - v0) + (vstep - 1 if vstep > 0 else vstep + 1):
        raise _Unsure                       # int64 overflow in NumPy's arithmetic
    length = abs(num) // abs(vstep)         # C's division: toward zero
    if length <= _DIRECT:
        return Plan(result, length)

    def values(idx):
        u = np.uint64(v0 % 2 ** 64) + idx.astype(np.uint64) * np.uint64(vstep % 2 ** 64)
        # datetime_arange writes native int64s, whatever the dtype's byte order
        return u.view(np.int64).view(result)
    return Plan(result, length, values)
