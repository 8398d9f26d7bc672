"""Statistics of a DistArray's global elements: ``var``, ``std``,
``count_nonzero`` (``average``: :mod:`nclx.dap.functions.average`).

``var``/``std`` follow NumPy's two passes (the mean, then the sum of
squared deviations from it), each pass one reduction across ranks; the
ranks' partial sums are combined in rank order, not in NumPy's pairwise
order over the global array, so results agree with NumPy's to 1e-12
relative, not bit for bit (the same bits on every rank and every run).
``count_nonzero`` is exact.
"""

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from nclx import _callsite
from nclx.dap.functions._agreed import agreed_warnings_call
from nclx.dap.functions._common import (blocks, count, counted, da_out, expand, finish, is_da,
                                        reduce_parts, value_out, wrap)
from nclx.dap.registry import implements, issued_first
from nclx.dap.outwrite import blocks_into, divided_into
from nclx.dap.validate import DapError, DapTypeError


def _mean_dtype(a, dtype):
    """NumPy's _var: float64 for integers and bools, else ``dtype`` (None:
    the sum's own, native byte order included)."""
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float64) if a.dtype.kind in "biu" else None


def _squares(dev):
    """NumPy's _var squares the deviations by their type: square for
    integers (timedelta64 among them: its TypeError) and floats, re**2 +
    im**2 for native complex, x * conj(x) otherwise (objects)."""
    if issubclass(dev.dtype.type, (np.floating, np.integer)):
        return np.square(dev)
    if dev.dtype.kind == "c" and dev.dtype.isnative:
        v = dev.view((dev.real.dtype, (2,)))
        sq = np.square(v)
        return np.add(sq[..., 0], sq[..., 1])
    return np.multiply(dev, np.conjugate(dev)).real


def var_parts(a, axis=None, dtype=None, keepdims=False, mask=None, quiet=False, ddof=None):
    """(sum of squared deviations from the mean, count) of ``a``'s cells
    where ``mask`` (a block, or None: every cell), as NumPy's ``_var``
    computes them: two reductions (three with a mask: the counts).
    ``ddof`` (np.var's): its "Degrees of freedom <= 0" warning as soon as
    the count is known, before the mean's division warns (0 / 0 of an
    empty slice), as NumPy's ``_var`` "makes this warning show up on top".
    ``quiet``: NumPy's nanvar's steps: the mean's division ignores
    floating-point errors, the deviations go into the array's own dtype
    (an unsafe cast: rounded there, a ComplexWarning for a complex mean)
    and are squared by multiply, both where counted only (its var divides
    under the caller's errstate, subtracts into the mean's dtype and
    squares by type everywhere)."""
    blk = a._block
    where = True if mask is None else mask
    mdt = _mean_dtype(a, dtype)
    if mask is None:
        n = count(a, axis)
    else:
        n = reduce_parts(a, mask, np.add, axis, dtype=np.intp, keepdims=True)
    if ddof is not None and bad_dof(n, ddof)[0]:
        # before, after the mean: an empty slice warned "invalid value
        # encountered in divide" first, and raised that under "error"
        warn_dof()
    nb = expand(n, a, axis) if mask is not None else n
    own = counted(a)
    # NumPy's _var under the caller's np.errstate: the sum (agreed across
    # ranks by the reduction), then the local steps, agreed under 'raise'
    tot = reduce_parts(a, blk, np.add, axis, dtype=mdt, keepdims=True, where=where)

    def squares():
        t = np.asarray(expand(tot, a, axis), dtype=mdt)
        # into the sum's own dtype (an integer dtype= divides in float64 and
        # casts back), not a loop of that dtype (none for integers)
        shape = np.broadcast_shapes(t.shape, np.shape(nb))
        with np.errstate(divide="ignore", invalid="ignore") if quiet else _nothing():
            # counted cells only: the padding's count is 0 (0 / 0 warned
            # "invalid value", and raised under 'raise'; review 24)
            mean = np.true_divide(t, nb, out=np.zeros(shape, t.dtype), casting="unsafe",
                                  where=_counted_where(shape, blk.shape, own))
        m = np.broadcast_to(mean, blk.shape)[own]
        if quiet:
            w = np.broadcast_to(mask, blk.shape)[own]
            dev = np.zeros(w.shape, blk.dtype)
            np.subtract(blk[own], m, out=dev, casting="unsafe", where=w)
            sq = np.multiply(dev, dev.conj(), out=dev, where=w).real \
                if dev.dtype.kind == "c" else np.multiply(dev, dev, out=dev, where=w)
        else:
            sq = _squares(blk[own] - m)
        x = np.zeros(blk.shape, sq.dtype)
        x[own] = sq
        return x

    # the steps' warnings (NumPy's "invalid value encountered in subtract")
    # on every rank, whatever rank's cells met them (before, on those ranks
    # alone; found by review), and an error under 'raise' on every rank
    x = agreed_warnings_call(a.comm, squares, "var squares", "np.var")
    ss = reduce_parts(a, x, np.add, axis, dtype=dtype, keepdims=keepdims, where=where)
    return ss, n


_DOF = "Degrees of freedom <= 0 for slice"


def dof_first(named):
    """``implements(first=...)`` of np.var and np.std (and the nan-functions
    of data without NaNs, which are np.var): NumPy warns "Degrees of freedom
    <= 0" in Python, before the casts of its ComplexWarnings, where the
    count is the reduced axes' lengths (no ``where=`` mask: a mask's count
    is known after a collective, and that warning comes after them)."""
    a = named.get("a")
    if named.get("where", True) is not True:
        return []
    ddof = named.get("correction", np._NoValue)
    ddof = named.get("ddof", 0) if ddof is np._NoValue else ddof
    try:
        axes = normalize_axis_tuple(range(a.ndim) if named.get("axis") is None
                                    else named["axis"], a.ndim)
        n = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
        bad = bool(ddof >= n)
    except Exception:  # noqa: BLE001 - the implementation raises NumPy's error
        return []
    return [(_DOF, RuntimeWarning)] if bad else []


def nan_dof_first(named):
    """``implements(first=...)`` of np.nanvar and np.nanstd: NumPy's np.var
    order (:func:`dof_first`) for data that holds no NaN (integers, bools);
    for floats NumPy warns after its casts."""
    kind = getattr(getattr(named.get("a"), "dtype", None), "kind", "f")
    return [] if kind in "fc" else dof_first(named)


def warn_dof(message=_DOF):
    """NumPy's "Degrees of freedom <= 0" warning, unless the call issued it
    before its ComplexWarnings (:func:`dof_first`)."""
    if message not in issued_first():
        _callsite.warn(message, RuntimeWarning)


def divide_dof(ss, n, ddof, message=_DOF, quiet=False, nan_where_bad=False, warned=False):
    """``ss / max(n - ddof, 0)`` with NumPy's warning when ``n - ddof <= 0``
    (``n`` an int, an array or a DistArray: kept dimensions of the count)
    unless ``warned`` (:func:`var_parts` did); with ``nan_where_bad`` NaN
    there (NumPy's nanvar/nanstd)."""
    if warned and not nan_where_bad:
        bad, nn = False, (n._block if is_da(n) else np.asarray(n))
    else:
        bad, nn = bad_dof(n, ddof)
    if bad and not warned:
        warn_dof(message)
    r = divide_keep(ss, np.maximum(nn - ddof, 0), quiet)
    if bad and nan_where_bad:
        where = np.asarray(nn - ddof <= 0)
        if is_da(r):               # divide_keep's block is its own copy
            np.copyto(r._block, np.nan, where=np.reshape(where, r._block.shape)
                      if where.ndim else where)
        elif np.ndim(r):
            np.copyto(r, np.nan, where=np.reshape(where, np.shape(r)) if where.ndim else where)
        else:
            r = np.asarray(r).dtype.type(np.nan)
    return r


def bad_dof(n, ddof):
    """(whether ``n - ddof <= 0`` anywhere: one collective for a DistArray
    ``n``, the count's array or block)."""
    nn = n._block if is_da(n) else np.asarray(n)
    if is_da(n):
        return bool(reduce_parts(n, np.asarray(nn - ddof <= 0), np.logical_or, None)), nn
    return bool(np.any(nn - ddof <= 0)), nn


def divide_keep(x, n, quiet=False):
    """``x / n`` in ``x``'s dtype as NumPy's ``_var``/``_divide_by_count`` do
    (in place with casting='unsafe'; a scalar as ``dtype.type(x / n)``), with
    their floating-point warnings unless ``quiet``; ``x`` a value or a
    DistArray, ``n`` its counts (any kept shape)."""
    with np.errstate(divide="ignore", invalid="ignore") if quiet else _nothing():
        if is_da(x):
            d = np.reshape(n, x._block.shape) if np.ndim(n) else n
            # counted cells only (the padding's count is 0; review 24)
            where = _counted_where(x._block.shape, x._block.shape, counted(x))
            return wrap(np.true_divide(x._block, d, out=x._block.copy(), casting="unsafe",
                                       where=where), x)
        v = np.asarray(x)
        if v.ndim == 0:
            # a scalar count (a where= mask's is a 1-element array): NumPy's
            # "scalar divide" warnings, not the array's "divide" (found by review)
            d = np.reshape(n, ())[()] if np.ndim(n) else n
            return v.dtype.type(v[()] / d)
        d = np.reshape(n, v.shape) if np.ndim(n) else n
        return np.true_divide(v, d, out=v.copy(), casting="unsafe")


def _counted_where(shape, block_shape, own):
    """A mask of ``shape`` (broadcastable to a block of ``block_shape``)
    true where it meets counted cells (``own``: the block's counted
    slices); axes of length 1 against a longer block's are broadcast."""
    where = np.zeros(shape, bool)
    where[tuple(o if n == b else slice(None)
                for o, n, b in zip(own, shape, block_shape))] = True
    return where


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@implements(np.var, first=dof_first)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=np._NoValue, correction=np._NoValue):
    """``np.var``: two reductions (see the module doc: 1e-12 relative)."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "np.var", False)


def _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, what, sqrt):
    """np.var, or with ``sqrt`` np.std (the square root as NumPy's ``_std``
    takes it)."""
    if correction is not np._NoValue:
        ddof = correction
    if mean is not np._NoValue:
        raise DapTypeError(f"{what}(DistArray, mean=...) is not implemented")
    # the "Degrees of freedom" warning is var_parts's, as soon as the count is known
    ss, n = var_parts(a, axis, dtype, keepdims, _where(a, where, what), ddof=ddof)
    if value_out(out, ss):
        return divided_into(out, ss, np.maximum(np.asarray(n) - ddof, 0), what, sqrt)
    if da_out(out, ss):
        nn = n._block if is_da(n) else np.asarray(n)
        return blocks_into(out, ss, what, count=np.maximum(nn - ddof, 0), sqrt=sqrt)
    v = divide_dof(ss, n, ddof, warned=True)
    return finish(sqrt_keep(v) if sqrt else v, out, what)


@implements(np.std, first=dof_first)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=np._NoValue, correction=np._NoValue):
    """``np.std``: the square root of :func:`var` (1e-12 relative)."""
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "np.std", True)


def sqrt_keep(v):
    """The square root of a variance as NumPy's ``_std`` takes it: in place
    in the variance's dtype (an integer ``dtype=`` raises NumPy's casting
    error there), a scalar as ``dtype.type(sqrt(v))``."""
    if is_da(v):                    # its block is its own (divide_keep's copy)
        return wrap(np.sqrt(v._block, out=v._block), v)
    if isinstance(v, np.ndarray):
        return np.sqrt(v, out=v)
    if hasattr(v, "dtype"):
        return v.dtype.type(np.sqrt(v))
    return np.sqrt(v)


def _where(a, where, what):
    if where is True:
        return None
    if is_da(where):
        _, (_, w) = blocks(what, a, where)
        return np.asarray(w, bool)
    if np.ndim(where) == 0:
        return np.full(a._block.shape, bool(where))
    raise DapError(f"{what}: where= must be a DistArray distributed like the operand or a "
                   "scalar")


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """Counts of nonzero cells (exact; intp as NumPy's)."""
    # against the dtype's zero: '' for strings, the zero record for
    # structured dtypes (NumPy's nonzero), 0 for numbers
    nonzero = np.asarray(a._block != np.zeros((), a.dtype))   # records: no not_equal loop
    r = reduce_parts(a, nonzero, np.add, axis, dtype=np.intp, keepdims=keepdims)
    return r


