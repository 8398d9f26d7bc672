"""How a Ragged computes: elementwise ufuncs on its values with the lists
lined up (through :mod:`nclx.aware`'s contract: python-level hooks, nclx's
kernels, ``out=``/``where=``, NotImplemented for foreign operands) and the
per-list reductions (``sum``, ``prod``, ``max``, ``min``, ``count``,
``np.add.reduce(r, axis=-1)``).

A mixin of :class:`nclx.types.ragged.Ragged`, below it: it works through
the Ragged's own attributes and constructor (``type(r)._trusted``) and the
array-level algorithms of :mod:`nclx.types.compute`.
"""
import numpy as np

from nclx import aware
from nclx.types import compute
from nclx.types._offsets import check_lists

__all__ = ["ComputeMixin", "ragged_compare", "ragged_ufunc"]


class ComputeMixin:
    """Ufuncs and per-list reductions of a Ragged."""
    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ragged_ufunc(ufunc, method, inputs, kwargs)

    #: handled by nclx.aware.array_function (NumPy's dispatch protocol)
    _nclx_array_function = True

    def __array_function__(self, func, types, args, kwargs):
        return aware.array_function(func, types, args, kwargs, aware.numpy_default)

    def __eq__(self, other):          # ndarray's where the ufunc has no loop
        return ragged_compare(self, other, "__eq__")

    def __ne__(self, other):
        return ragged_compare(self, other, "__ne__")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a Ragged has no fixed shape to become an ndarray: use .values, "
                        ".to_list() or pad it yourself")

    # out= and keepdims= as np.sum(r) / np.max(r) pass them (before, a
    # TypeError of unexpected keywords from inside NumPy; found by review)
    def sum(self, axis=-1, dtype=None, out=None, keepdims=False):
        return self._reduce("sum", axis, _no_out("sum", dtype, out, keepdims))

    def prod(self, axis=-1, dtype=None, out=None, keepdims=False):
        return self._reduce("prod", axis, _no_out("prod", dtype, out, keepdims))

    def max(self, axis=-1, out=None, keepdims=False):
        return self._reduce("max", axis, _no_out("max", None, out, keepdims))

    def min(self, axis=-1, out=None, keepdims=False):
        return self._reduce("min", axis, _no_out("min", None, out, keepdims))

    def count(self, axis=-1):
        """Number of values (not missing) in every list."""
        return self._reduce("count", axis, None)

    def _check_lists(self):
        """ValueError naming the first list, at any level, whose offsets
        leave its values or run backwards (offsets taken on trust)."""
        level = self
        while isinstance(level, ComputeMixin):
            check_lists(level._offsets, len(level._values))
            level = level._values

    def _reduce(self, name, axis, dtype):
        """Per-list ``name`` (``axis=-1``: one result per list, a Ragged of
        them for nested lists) or over everything (``axis=None``)."""
        if self._encoding is not None:
            raise TypeError(f"{name} of a Ragged of strings")
        kinds = compute.REDUCIBLE_KINDS.get(name)
        if kinds is not None and self.dtype.kind not in kinds:
            # (found by review: records and str failed deep inside NumPy)
            raise TypeError(f"{name} of a Ragged of {self.dtype}: no arithmetic for these "
                            "values (count works on any)")
        if axis is None:
            # every list of every level, as axis=-1's kernels check theirs
            # (before, only the window's ends: trusted offsets 0, 5, 2 over 3
            # values summed to 1.0; review 23)
            self._check_lists()
            r = self if self._validity is None else self.take(np.flatnonzero(self.valid()))
            values = r.window()[0]
            while isinstance(values, ComputeMixin):
                values = values.window()[0]
            return compute.reduce_flat(name, values, dtype)
        if axis not in (-1,):
            raise ValueError(f"axis={axis!r}: a Ragged reduces along its innermost axis "
                             "(axis=-1) or over everything (axis=None)")
        values, offsets = self.window()
        if isinstance(values, ComputeMixin) or values.ndim > 1:
            # the innermost axis is a var or fixed dim of every element: the
            # outer lists stay
            inner = values._reduce(name, axis, dtype) if isinstance(values, ComputeMixin) \
                else compute.reduce_fixed(values, name, dtype)
            return type(self)._trusted(offsets, inner, self._validity, self._vbit, None)
        valid = None if self._validity is None else self.valid()
        try:
            if valid is None or valid.all():
                out = compute.segment_reduce(name, values, offsets, dtype)
            else:
                # a missing list's values do not count: its flags neither
                # (before, an overflow under one raised under errstate; review 23c)
                out, flags = compute.held_flags(
                    lambda: compute.segment_reduce(name, values, offsets, dtype))
                if flags:
                    keep = self.take(np.flatnonzero(valid))
                    compute.segment_reduce(name, *keep.window(), dtype)    # reports theirs
        except (ValueError, IndexError):
            # the kernels see the window's shifted offsets: name the bad list
            # by the offsets as given and the whole values' length
            check_lists(self._offsets, len(self._values))
            raise
        if valid is not None:
            return compute.mask_missing(out, valid)
        return out


def _no_out(name, dtype, out, keepdims):
    """``dtype``, where ``out`` and ``keepdims`` are their defaults; else a
    TypeError naming the keyword (a Ragged's reduction makes a new array,
    one value per list)."""
    if out is not None:
        raise TypeError(f"{name} of a Ragged: out= is not supported (the result is a new "
                        f"array, one value per list)")
    if keepdims:
        raise TypeError(f"{name} of a Ragged: keepdims=True is not supported (the lists' "
                        f"lengths differ)")
    return dtype


def _reduce_call(ufunc, method, inputs, kwargs):
    """``np.add.reduce(r, axis=-1)`` (and multiply, maximum, minimum;
    ``axis=None``) as the per-list reduction; any other method refused."""
    if method == "reduce" and len(inputs) == 1 and isinstance(inputs[0], ComputeMixin):
        name = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}.get(
            ufunc.__name__)
        axis = kwargs.get("axis", 0)
        if name is not None and axis in (-1, None) and set(kwargs) <= {"axis", "dtype"}:
            dtype = kwargs.get("dtype")
            return inputs[0]._reduce(name, axis, dtype if name in ("sum", "prod") else None)
    raise TypeError(f"{ufunc.__name__}.{method} on a Ragged: only elementwise calls and "
                    "per-list reductions (r.sum(axis=-1), np.add.reduce(r, axis=-1)) are supported")


class _Elementwise:
    """The Ragged operands of one elementwise call lined up: ``unwrap``
    gives the values every Ragged's lists reach, ``wrap`` puts a result on
    the first operand's offsets (an ``out=`` Ragged comes back as itself)."""

    def __init__(self, ufunc, inputs, kwargs):
        name = ufunc.__name__
        outs = aware.outs_of(kwargs)
        raggeds = [x for x in inputs + outs if isinstance(x, ComputeMixin)]
        where = kwargs.get("where", True)
        if isinstance(where, ComputeMixin):
            raggeds.append(where)
        elif np.ndim(where) > 0:
            # (found by review: a mask as long as the values was applied per
            # value, one as long as the lists failed to broadcast)
            raise ValueError(f"{name}: where= on a Ragged is a scalar or a Ragged of the same "
                             f"list lengths, not an array of shape {np.shape(where)}")
        for o in outs:
            # (found by review: an ndarray as long as the values was written
            # and came back as a Ragged over it, the lists' shape unchecked)
            if o is not None and not isinstance(o, ComputeMixin):
                what = f"an array of shape {np.shape(o)}" if isinstance(o, np.ndarray) \
                    else f"a {type(o).__name__}"
                raise ValueError(f"{name}: out= on a Ragged is a Ragged of the same list "
                                 f"lengths, not {what}")
        first = raggeds[0]
        for r in raggeds[1:]:
            if not compute.same_lengths(first.offsets, r.offsets):
                raise ValueError(f"{name}: Ragged operands with different list lengths: "
                                 f"{compute.first_difference(first.offsets, r.offsets)}")
            if (r.encoding is None) != (first.encoding is None):
                raise TypeError(f"{name}: cannot combine a string Ragged with numbers")
        for x in inputs:
            if not isinstance(x, ComputeMixin) and np.ndim(x) > 0:
                raise ValueError(f"{name}: a Ragged combines with scalars and other "
                                 f"Raggeds of the same lengths, not an array of shape {np.shape(x)}")
        if first.encoding is not None:
            raise TypeError(f"{name} on a Ragged of strings: decode with to_strings()")
        # every Ragged operand contributes the values its lists reach
        full = all(int(r.offsets[0]) == 0 and int(r.offsets[-1]) == len(r.values)
                   for r in raggeds)
        self.windows = {id(r): r.values if full else r.window()[0] for r in raggeds}
        self.offsets = first.offsets if full else first.window()[1]
        self.validity, self.vbit = compute.combine_validity(
            [(x.validity, x.validity_offset, len(x)) for x in inputs if isinstance(x, ComputeMixin)])
        self.outs = outs
        self.make = type(first)._trusted
        self.name, self.gufunc = name, ufunc.signature is not None
        self.nvalues = len(self.windows[id(first)])

    def unwrap(self, x):
        return self.windows.get(id(x), x) if isinstance(x, ComputeMixin) else x

    def wrap(self, res):
        if isinstance(res, ComputeMixin):
            return res
        if isinstance(res, np.ndarray) and res.ndim >= 1 and len(res) == self.nvalues:
            for o in self.outs:
                if isinstance(o, ComputeMixin) and self.windows[id(o)] is res:
                    return o
            return self.make(self.offsets, res, self.validity, self.vbit, None)
        if self.gufunc:
            # the core dimensions took the values' first axis, the lists'
            # own (found by review: np.matmul(r, r) gave one dot product of
            # all the values): only trailing fixed dimensions can be core ones
            raise TypeError(f"{self.name} on a Ragged: its core dimensions would take the "
                            "axis of the lists' values; a generalized ufunc works on fixed "
                            "dimensions inside every element (values of shape (n, k, ...))")
        return res


def ragged_ufunc(ufunc, method, inputs, kwargs):
    """Elementwise ufuncs on the values, the lists lined up (nclx.aware's
    contract: python-level hooks, nclx's kernels, ``out=``/``where=``,
    NotImplemented for foreign operands); ``np.add.reduce(r, axis=-1)`` and
    friends are per-list reductions."""
    if aware.foreign(inputs, kwargs, own=(ComputeMixin,)):
        return NotImplemented         # NumPy's protocol: the other type is asked
    if method != "__call__":
        return _reduce_call(ufunc, method, inputs, kwargs)
    call = _Elementwise(ufunc, inputs, kwargs)
    return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=call.unwrap,
                             wrap=call.wrap, kernels=aware.nclx_ufunc)


def ragged_compare(r, other, name):
    """``r == other`` (``name`` '__eq__') or ``!=`` as ndarray's on the
    values: the ufunc, and where it has no loop (structured records, a
    datetime against a number) ndarray's own comparison of the values the
    lists reach -- records field by field, all False / all True -- on the
    same offsets (before review 21, UFuncTypeError where an ndarray
    compares)."""
    if getattr(other, "__array_ufunc__", False) is None or \
            aware.foreign((r, other), {}, own=(ComputeMixin,)):
        return NotImplemented                     # the mixin's rule: the other is asked
    ufunc = np.equal if name == "__eq__" else np.not_equal
    try:
        return ufunc(r, other)
    except TypeError:
        call = _Elementwise(ufunc, (r, other), {})    # the lists' checks, as the ufunc's
        res = getattr(call.unwrap(r), name)(call.unwrap(other))
        if not isinstance(res, np.ndarray) or res.ndim == 0:
            raise
        return call.wrap(res)
