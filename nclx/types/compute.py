"""Computing on Ragged: elementwise ufuncs on the values and per-list
reductions, both through nclx's kernels (``nclx.ufuncs``) and the python
level of nclx's hook chains (``nclx.aware.array_ufunc``)."""
import numpy as np

from nclx.types import _bits
from nclx.types.ragged import Ragged

__all__ = ["ragged_ufunc", "reduce_lists", "ragged_equals"]


def _same_structure(a, b):
    if a.offsets is b.offsets:
        return True
    if len(a) != len(b):
        return False
    la, lb = a.lengths, b.lengths
    return np.array_equal(la, lb)


def _combine_validity(raggeds):
    have = [r for r in raggeds if r.validity is not None]
    if not have:
        return None, 0
    if len(have) == 1:
        return have[0].validity, have[0].validity_offset
    valid = np.logical_and.reduce([r.valid() for r in have])
    return _bits.pack(valid), 0


def ragged_ufunc(ufunc, method, inputs, kwargs):
    """``ufunc(*inputs)`` where some operands are Ragged: the values of
    every Ragged operand (lists lined up) through the ufunc; a Ragged of the
    results on the first operand's offsets."""
    from nclx.aware import array_ufunc, nclx_ufunc

    if method != "__call__":
        if method == "reduce" and len(inputs) == 1 and isinstance(inputs[0], Ragged):
            name = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}.get(
                ufunc.__name__)
            axis = kwargs.get("axis", 0)
            if name is not None and axis in (-1, None) and set(kwargs) <= {"axis", "dtype"}:
                dtype = kwargs.get("dtype")
                return reduce_lists(inputs[0], name, axis, dtype if name in ("sum", "prod") else None)
        raise TypeError(f"{ufunc.__name__}.{method} on a Ragged: only elementwise calls and "
                        "per-list reductions (r.sum(axis=-1), np.add.reduce(r, axis=-1)) are supported")
    out = kwargs.get("out")
    outs = () if out is None else (out if isinstance(out, tuple) else (out,))
    raggeds = [x for x in inputs + outs if isinstance(x, Ragged)]
    where = kwargs.get("where", True)
    if isinstance(where, Ragged):
        raggeds.append(where)
    first = raggeds[0]
    for r in raggeds[1:]:
        if not _same_structure(first, r):
            raise ValueError(f"{ufunc.__name__}: Ragged operands with different list lengths "
                             f"({len(first)} and {len(r)} lists, or lengths that differ)")
        if (r.encoding is None) != (first.encoding is None):
            raise TypeError(f"{ufunc.__name__}: cannot combine a string Ragged with numbers")
    for x in inputs:
        if not isinstance(x, Ragged) and np.ndim(x) > 0:
            raise ValueError(f"{ufunc.__name__}: a Ragged combines with scalars and other "
                             f"Raggeds of the same lengths, not an array of shape {np.shape(x)}")
    if first.encoding is not None:
        raise TypeError(f"{ufunc.__name__} on a Ragged of strings: decode with to_strings()")

    # every Ragged operand contributes the values its lists reach
    windows = {}
    full = all(int(r.offsets[0]) == 0 and int(r.offsets[-1]) == len(r.values) for r in raggeds)
    for r in raggeds:
        windows[id(r)] = r.values if full else r.window()[0]
    offsets = first.offsets if full else first.window()[1]
    validity, vbit = _combine_validity([x for x in inputs if isinstance(x, Ragged)])

    def unwrap(x):
        return windows.get(id(x), x) if isinstance(x, Ragged) else x

    def wrap(res):
        if isinstance(res, Ragged):
            return res
        if isinstance(res, (np.ndarray, Ragged)) and np.ndim(res) >= 1:
            for o in outs:
                if isinstance(o, Ragged) and windows[id(o)] is res:
                    return o
            return Ragged._trusted(offsets, res, validity, vbit, None)
        return res

    return array_ufunc(ufunc, method, inputs, kwargs, unwrap=unwrap, wrap=wrap,
                       kernels=nclx_ufunc)


# ------------------------------------------------------------- reductions
_UFUNC = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


def _identity(name, dtype):
    if name == "sum":
        return dtype.type(0)
    if name == "prod":
        return dtype.type(1)
    if dtype.kind == "b":
        return np.True_ if name == "min" else np.False_
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.max if name == "min" else info.min)
    return dtype.type(np.inf if name == "min" else -np.inf)


def _sum_dtype(dtype):
    # NumPy's and awkward's rule for sum/prod: small ints widen to the platform int
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def _segment_reduce(name, values, offsets, dtype):
    """``name`` over ``values[offsets[i]:offsets[i+1]]`` for every i; values
    is 1-D or has fixed inner dims (reduced per position), offsets start at 0.
    max/min return a masked array (an empty list has none, as in awkward)."""
    from nclx.aware import array_ufunc

    n = len(offsets) - 1
    mask = None
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        values = values.data
    if name == "count":
        if mask is None:
            return np.diff(offsets).astype(np.int64)
        return _segment_reduce("sum", ~mask, offsets, np.dtype(np.int64))
    ufunc = getattr(np, _UFUNC[name])
    if dtype is None:
        dtype = _sum_dtype(values.dtype) if name in ("sum", "prod") else values.dtype
    dtype = np.dtype(dtype)
    if mask is not None:
        values = np.where(mask, _identity(name, values.dtype), values)
    window = values[:int(offsets[-1])]
    kw = {"axis": 0, "dtype": dtype}
    empty = None if name in ("sum", "prod") else np.zeros(n, dtype=np.uint8)

    def compute(ufunc, method, inputs, kwargs):
        if method == "reduceat" and inputs[0] is window and kwargs == kw:
            return _reduce_segments(ufunc, window, offsets, dtype, name, empty)
        return getattr(ufunc, method)(*inputs, **kwargs)

    # hooks of the python level see ufunc.reduceat(values, starts): one
    # segment per list; the empty lists are fixed up below
    out = array_ufunc(ufunc, "reduceat", (window, offsets[:-1]), kw, unwrap=lambda x: x,
                      wrap=lambda x: x, compute=compute)
    if name in ("sum", "prod"):
        return out
    empty = empty.view(bool)
    if mask is not None:   # lists whose values are all missing have no max/min either
        present = _segment_reduce("count", np.ma.masked_array(values, mask=mask), offsets, None)
        empty = present == 0
        out[empty] = 0
    m = np.broadcast_to(empty.reshape((n,) + (1,) * (out.ndim - 1)), out.shape)
    return np.ma.masked_array(out, mask=m.copy())


#: below this many values a reduction over lists stays on the calling thread
PARALLEL_MIN_VALUES = 1 << 17


def _reduce_segments(ufunc, values, offsets, dtype, name, empty):
    """One result per list, empty lists given the identity (sum/prod) and
    flagged in ``empty``.  1-D native values: nclx's segment kernels
    (nclx.types._segments: short lists folded in order, long ones through
    nclx's reduction kernel), the lists split across nclx's threads -- each
    list is reduced whole by one thread, so the split changes no bit.
    Otherwise nclx's ufunc's reduceat over the non-empty lists."""
    from nclx.aware import nclx_ufunc
    from nclx.types import _segments
    n = len(offsets) - 1
    identity = _identity(name, dtype) if name in ("sum", "prod") else dtype.type(0)
    if values.ndim == 1 and values.dtype.isnative and dtype.kind != "b":
        vals = values if values.dtype == dtype else values.astype(dtype)
        out = np.empty(n, dtype=dtype)
        if _segments.kernel_for(ufunc.__name__, dtype):
            _split(lambda lo, hi: _segments.segment_reduce(
                ufunc.__name__, vals, offsets[lo:hi + 1], out[lo:hi],
                None if empty is None else empty[lo:hi], identity),
                n, len(vals))
            return out
    lens = np.diff(offsets)
    nonempty = lens > 0
    if empty is not None:
        empty[:] = ~nonempty
    out = np.empty((n,) + values.shape[1:], dtype=dtype)
    out[~nonempty] = identity
    starts = offsets[:-1][nonempty]
    if len(starts):
        out[nonempty] = nclx_ufunc(ufunc).reduceat(values, starts, axis=0, dtype=dtype)
    return out


def _split(run, nlists, nvalues):
    import threading

    import nclx
    threads = nclx.get_num_threads()
    if threads <= 1 or nvalues < PARALLEL_MIN_VALUES or nlists < 2:
        run(0, nlists)
        return
    k = min(threads, nlists)
    bounds = [nlists * i // k for i in range(k + 1)]
    errors = []

    def job(lo, hi):
        try:
            run(lo, hi)
        except BaseException as exc:   # re-raised on the calling thread
            errors.append(exc)

    workers = [threading.Thread(target=job, args=(bounds[i], bounds[i + 1]), daemon=True)
               for i in range(1, k)]
    for w in workers:
        w.start()
    job(bounds[0], bounds[1])
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


def reduce_lists(r, name, axis, dtype):
    """Per-list ``sum``/``prod``/``max``/``min``/``count`` (``axis=-1``) or
    over everything (``axis=None``)."""
    if r.encoding is not None:
        raise TypeError(f"{name} of a Ragged of strings")
    if axis is None:
        values, _ = r.window()
        if r.validity is not None:
            taken = r[np.flatnonzero(r.valid())]
            values, _ = taken.window()
        while isinstance(values, Ragged):
            values = values.window()[0]
        if name == "count":
            return int(np.ma.count(values))
        flat = values.reshape(-1) if not isinstance(values, np.ma.MaskedArray) else \
            values.compressed()
        if name in ("max", "min") and flat.size == 0:
            return None
        method = {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}[name]
        kw = {"dtype": dtype} if name in ("sum", "prod") else {}
        return getattr(np, method)(flat, **kw)
    if axis not in (-1,):
        raise ValueError(f"axis={axis!r}: a Ragged reduces along its innermost axis "
                         "(axis=-1) or over everything (axis=None)")
    values, offsets = r.window()
    if isinstance(values, Ragged):
        inner = reduce_lists(values, name, axis, dtype)
        return Ragged._trusted(offsets, inner, r.validity, r.validity_offset, None)
    if isinstance(values, np.ndarray) and values.ndim > 1:
        # the innermost axis is a fixed dim of every element: reduce it in place
        inner = _reduce_fixed(values, name, dtype)
        return Ragged._trusted(offsets, inner, r.validity, r.validity_offset, None)
    out = _segment_reduce(name, values, offsets, dtype)
    if r.validity is not None:
        valid = r.valid()
        data = out.data if isinstance(out, np.ma.MaskedArray) else out
        mask = ~valid | (np.ma.getmaskarray(out) if isinstance(out, np.ma.MaskedArray) else False)
        return np.ma.masked_array(data, mask=mask)
    return out


def _reduce_fixed(values, name, dtype):
    method = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
    if name == "count":
        return np.full(values.shape[:-1], values.shape[-1], dtype=np.int64)
    if name in ("max", "min") and values.shape[-1] == 0:
        return np.ma.masked_all(values.shape[:-1], dtype=values.dtype)
    kw = {"dtype": dtype} if name in ("sum", "prod") and dtype is not None else {}
    return method[name](values, axis=-1, **kw)


def ragged_equals(a, b):
    """Same type, lists, missing entries and values (NaN equals NaN)."""
    if not isinstance(b, Ragged) or not isinstance(a, Ragged):
        return False
    from nclx.types.typeof import typeof
    if len(a) != len(b) or a.encoding != b.encoding or typeof(a) != typeof(b):
        return False
    va, vb = a.valid(), b.valid()
    if not np.array_equal(va, vb):
        return False
    if not np.array_equal(np.where(va, a.lengths, 0), np.where(vb, b.lengths, 0)):
        return False
    keep = np.flatnonzero(va)
    if len(keep) != len(a):
        a, b = a.take(keep), b.take(keep)
    xa, xb = a.window()[0], b.window()[0]
    if isinstance(xa, Ragged):
        return ragged_equals(xa, xb)
    ma, mb = np.ma.getmaskarray(xa), np.ma.getmaskarray(xb)
    if not np.array_equal(ma, mb):
        return False
    da, db = np.ma.getdata(xa)[~ma], np.ma.getdata(xb)[~mb]
    if da.dtype.names is not None:
        return bool(np.array_equal(da, db))
    return bool(np.array_equal(da, db, equal_nan=da.dtype.kind in "fc"))
