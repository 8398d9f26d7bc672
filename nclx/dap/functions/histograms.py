"""``np.histogram`` and ``np.histogram_bin_edges`` of a DistArray.

The bin edges are NumPy's, from NumPy's own bin-edge code
(``numpy.lib._histograms_impl._get_bin_edges``): with ``bins`` an integer
and no ``range``, the global minimum and maximum (one ``allgather`` of
each rank's, which also carries any rank's error: a rank that failed
raises on every rank) stand in for ``range`` exactly as NumPy takes them
from the data.  String ``bins`` (NumPy's estimators: 'auto', 'fd',
'doane', 'scott', 'stone', 'rice', 'sturges', 'sqrt') run that code on a
1-D DistArray of the values (those inside ``range`` when it is given:
NumPy's truncation), so each NumPy version's formulas: its min/max, size,
exact percentiles and histograms are the global ones, so 'auto', 'fd',
'stone', 'rice', 'sturges' and 'sqrt' give NumPy's edges bit for bit;
'scott' and 'doane' take ``np.std``/``np.mean`` of the DistArray
(per-rank partials combined: 1e-12 relative for float64 data, about 1e-7
for float32), which moves the number of
bins only where the width divides the range to an integer within that
rounding.  Warnings of that code (stone's "suboptimal") are shown after
the last collective, so that a rank whose warning filter raises does not
leave the others waiting.

Every rank then counts its owned cells with ``np.histogram`` in the form
NumPy's global call takes (equal-width bins as ``bins=n, range=(first,
last)``: the same edges, each value's bin found by the same arithmetic;
explicit edges as edges), and one reduction adds the counts (also carrying
a rank's error): counts equal NumPy's bit for bit.  With ``weights=`` (a
DistArray of ``a``'s shape, first redistributed to ``a``'s distribution
where it differs) the per-bin sums of float or complex weights are added
across ranks in another order than NumPy's: equal to 1e-12 relative, the
same bits on every rank; ``density=True`` divides as NumPy does.  Boolean
data is counted as uint8 with NumPy's one warning; complex data with
equal-width bins gets NumPy's ComplexWarning once a block of 65,536
values of the global array.  The result is ``(hist, bin_edges)``, NumPy
arrays on every rank; ``np.histogram_bin_edges`` gives the same edges
(its weights, a DistArray or NumPy array of ``a``'s shape, only checked).
"""
import warnings

import numpy as np
from numpy.exceptions import ComplexWarning

from nclx import _callsite
from nclx._warnscope import ignoring, recording
from nclx.dap.collective import allgather_checked
from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.registry import implements
from nclx.dap.validate import DapError

#: the block length of NumPy's equal-width counting loop
_NUMPY_BLOCK = 65536

try:        # NumPy's bin-edge code (its estimators' formulas differ between versions)
    from numpy.lib._histograms_impl import _get_bin_edges as _numpy_bin_edges
    from numpy.lib._histograms_impl import _get_outer_edges as _numpy_outer_edges
except ImportError:                                     # pragma: no cover - a NumPy without them
    _numpy_bin_edges = _numpy_outer_edges = None


def _extremes(values):
    """(min, max, has_nan) of this rank's values, or None if it has none."""
    if values.size == 0:
        return None
    if values.dtype.kind in "fcmM" and np.isnan(values).any():     # NaN, NaT
        return None, None, True
    return values.min(), values.max(), False


def _counted_dtype(a):
    """The dtype NumPy counts ``a`` in: booleans as uint8."""
    return np.dtype(np.uint8) if a.dtype == np.bool_ else a.dtype


def _owned(a):
    """This rank's values of ``a`` in the dtype NumPy counts them in."""
    return a.owned.astype(_counted_dtype(a), copy=False)


def _values_1d(a, bounds, what):
    """A 1-D DistArray (uneven blocks, rank by rank) of ``a``'s values, those
    inside ``bounds`` (a histogram's ``range``, after NumPy's widening of an
    empty one) when it is given: what NumPy's estimators see.  One ``allgather`` (the counts and
    any rank's error)."""
    comm = a.comm
    error = values = None
    try:
        values = _owned(a).reshape(-1)
        if bounds is not None:
            first, last = _numpy_outer_edges(values[:0], bounds)
            values = values[(values >= first) & (values <= last)]
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    counts = allgather_checked(comm, None if values is None else int(values.shape[0]), error, what)
    starts = np.concatenate(([0], np.cumsum(counts, dtype=np.int64))).tolist()
    P = len(counts)
    dist = Distribution.from_dim_data_per_rank(
        [({"dist_type": "b", "size": starts[-1], "proc_grid_size": P, "proc_grid_rank": r,
           "start": starts[r], "stop": starts[r + 1]},) for r in range(P)])
    return DistArray._of(np.ascontiguousarray(values), dist, comm)


def _estimated_edges(a, bins, range, what, shown):
    """NumPy's ``(edges, (first, last, n))`` for an estimator name ``bins``
    (collective); its warnings appended to ``shown``."""
    if _numpy_bin_edges is None:
        raise DapError(f"{what}: bins={bins!r} needs NumPy's bin-edge code, which this NumPy "
                       f"does not have; give a number of bins or the edges")
    values = _values_1d(a, range, what)
    with recording() as caught:
        try:
            edges, uniform = _numpy_bin_edges(values, bins, range, None)
        finally:
            shown.extend(caught)        # shown also when it raises (on every rank alike)
    return edges, uniform


def _stand_in(a, bins, range, weights, data=None, fn=np.histogram):
    """NumPy's argument errors (bins, an estimator's name, range, weights'
    dtype, weights with an estimator), in NumPy's order: NumPy's call on a
    stand-in of ``a``'s dtype (empty for an estimator, which NumPy then
    does not run; ``data`` where given), its own warnings not shown
    (complex edges cast).  ``fn``: the function called (``np.histogram_bin_edges``
    does not count: no error of the counting; before, one, found by review)."""
    if data is None:
        data = np.zeros(0 if isinstance(bins, str) else 1, _counted_dtype(a))
    with ignoring():
        fn(data, bins=bins, range=range,
           weights=None if weights is None else np.ones(data.size, weights.dtype))


def _data_decides(bins, range):
    """Whether NumPy's steps before the counting read the data (an
    estimator; a number of bins without ``range``: the outer edges): then
    the stand-in's error may be its own data's, not the array's."""
    return isinstance(bins, str) or (range is None and np.ndim(bins) == 0)


def _in_range_extremes(a, range):
    """This rank's :func:`_extremes` of the values NumPy's steps read: those
    inside ``range`` for an estimator given one (NumPy's truncation)."""
    values = _owned(a).reshape(-1)
    if range is not None:
        first, last = _numpy_outer_edges(values[:0], range)
        values = values[(values >= first) & (values <= last)]
    return _extremes(values)


_NO_EXTREMES = "no extremes"     # a rank's min/max raised (its dtype has none)


def _extremes_data(a, everyone):
    """Values of ``a``'s dtype with the global array's min and max (NaN
    where it has one, none for an empty array; zeros where the dtype has no
    min: NumPy's call fails there as on the array): NumPy's call on them
    meets what its call on the array meets while taking the outer edges
    (the widening of equal edges: a timedelta's UFuncTypeError, else the
    DTypePromotionError of its bin type)."""
    dt = _counted_dtype(a)
    if any(e == _NO_EXTREMES for e in everyone):
        return np.zeros(2, dt)
    held = [e for e in everyone if e is not None]
    if not held:
        return np.zeros(0, dt)
    if any(e[2] for e in held):
        return np.array(["NaT" if dt.kind in "mM" else np.nan], dt)
    return np.array([min(e[0] for e in held), max(e[1] for e in held)], dt)


def _edges(a, bins, range, weights, what, shown, counting=True):
    """``(edges, uniform, local weights or None)`` of ``np.histogram(a,
    ...)``: ``uniform`` NumPy's ``(first, last, n)`` of equal-width bins, or
    None for explicit edges (collective; any rank's error raises on every
    rank).  ``counting``: False for ``np.histogram_bin_edges``, which only
    checks the weights' shape.  Warnings to show are appended to ``shown``."""
    if not isinstance(a, DistArray):
        raise TypeError(f"{what}: a must be a DistArray when weights or bins is one, not "
                        f"{type(a).__name__}")
    comm = a.comm
    error = local_w = None
    ext = None
    deferred = False
    try:
        if a.dtype == np.bool_:      # NumPy's warning (once: the steps below count in uint8)
            shown.append(warnings.WarningMessage(
                f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                RuntimeWarning, "", 0))
        if isinstance(bins, DistArray) or isinstance(range, DistArray):
            raise TypeError(f"{what}: bins and range must be NumPy values, not DistArrays")
        if weights is not None:
            if isinstance(weights, DistArray):
                if tuple(weights.shape) != tuple(a.shape):       # NumPy's check, its error
                    raise ValueError("weights should have the same shape as a.")
                if counting:
                    weights = a._aligned(weights)
            elif counting:
                raise TypeError(f"{what}: weights must be a DistArray of a's shape, "
                                f"not {type(weights).__name__}")
            elif np.shape(weights) != tuple(a.shape):
                raise ValueError("weights should have the same shape as a.")
            if counting:
                if weights.dtype.kind not in "biufc":
                    raise DapError(f"{what}: weights of dtype {weights.dtype} are not "
                                   f"supported for a DistArray (numbers are)")
                local_w = weights.owned.reshape(-1)
        stand_w = None if weights is None else (weights if counting else np.ones(0))
        stand_fn = np.histogram if counting else np.histogram_bin_edges
        try:
            _stand_in(a, bins, range, stand_w, fn=stand_fn)
        except Exception:
            if not _data_decides(bins, range):
                raise
            # maybe the stand-in's own data's error: NumPy's call on the
            # global extremes decides below (before, a timedelta's
            # UFuncTypeError of the one-value stand-in where NumPy raises
            # DTypePromotionError: found by review)
            deferred = True
        if deferred or (np.ndim(bins) == 0 and not isinstance(bins, str) and range is None):
            # only where NumPy takes them (before, always: a string array
            # with explicit edges raised minimum's error, NumPy counts it)
            try:
                ext = _in_range_extremes(a, range) if deferred else _extremes(_owned(a))
            except Exception:
                if not deferred:
                    raise
                ext = _NO_EXTREMES
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    everyone = allgather_checked(comm, ext, error, what)
    if deferred:
        # the same data on every rank: NumPy's error raised alike everywhere
        _stand_in(a, bins, range, stand_w, _extremes_data(a, everyone), stand_fn)
        if _NO_EXTREMES in everyone:
            raise DapError(f"{what}: the minimum of the values of dtype {a.dtype} failed on "
                           f"some ranks")
    if isinstance(bins, str):
        edges, uniform = _estimated_edges(a, bins, range, what, shown)
        return edges, uniform, local_w
    if np.ndim(bins) == 0 and range is None:
        held = [e for e in everyone if e is not None]
        if not held:
            range = None                                  # an empty array: NumPy's (0, 1)
        elif any(e[2] for e in held):
            raise ValueError("autodetected range of [nan, nan] is not finite")
        else:
            range = (min(e[0] for e in held), max(e[1] for e in held))
            if not (np.isfinite(range[0]) and np.isfinite(range[1])):
                raise ValueError(f"autodetected range of [{range[0]}, {range[1]}] is not finite")
    edges, uniform = _numpy_bin_edges(np.zeros(0, _counted_dtype(a)), bins, range, None)
    return edges, uniform, local_w


def _show(shown):
    """Show the warnings of a call, after its last collective."""
    for w in shown:
        _callsite.warn(w.message, w.category)


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """``np.histogram_bin_edges`` of a DistArray (see the module doc)."""
    shown = []
    try:
        edges = _edges(a, bins, range, weights, "np.histogram_bin_edges", shown, counting=False)[0]
    finally:
        _show(shown)
    return edges


def _local_counts(values, edges, uniform, local_w):
    """This rank's counts, as NumPy's global call counts (its form of the
    bins), and this rank's error or None."""
    dtype = np.dtype(np.intp) if local_w is None else local_w.dtype
    try:
        with ignoring():     # NumPy's, per block of the global call: below
            if uniform is None:
                counts = np.histogram(values, bins=edges, weights=local_w)[0]
            else:
                counts = np.histogram(values, bins=uniform[2], range=uniform[:2],
                                      weights=local_w)[0]
        return np.ascontiguousarray(counts, dtype), None
    except Exception as exc:  # noqa: BLE001 - raised on every rank by the reduction
        return np.zeros(edges.shape[0] - 1, dtype), exc


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram`` of a DistArray (see the module doc)."""
    shown = []
    try:
        edges, uniform, local_w = _edges(a, bins, range, weights, "np.histogram", shown)
    except BaseException:
        _show(shown)        # every rank raises here: no collective is left to wait in
        raise
    comm = a.comm
    counts, error = _local_counts(_owned(a).reshape(-1), edges, uniform, local_w)
    # one Allreduce adds the counts in rank order (the same bits on every
    # rank) and carries any rank's error
    verdict, total = allreduce_agreed(comm, np.add, counts, (counts.shape, counts.dtype), error,
                                      key=f"histogram {counts.shape} {counts.dtype.str}")
    if verdict is not None:
        # a flag met adding the ranks' weighted counts is not reported:
        # NumPy's weighted counts (np.bincount) report none (before,
        # "overflow encountered in reduce", raised under 'raise' where
        # NumPy gives inf; found by review)
        raise_verdict(verdict[:4] + (0,), comm.Get_size(), comm.Get_rank(), "np.histogram",
                      None)
    if a.dtype.kind == "c" and uniform is not None:
        # NumPy's equal-width path casts each block of 65,536 complex values'
        # bin positions to integers, a ComplexWarning each
        blocks = -(-a.size // _NUMPY_BLOCK)
        shown.extend([warnings.WarningMessage(
            "Casting complex values to real discards the imaginary part", ComplexWarning,
            "", 0)] * blocks)
    _show(shown)
    if density:
        db = np.array(np.diff(edges), float)
        return total / db / total.sum(), edges
    return total, edges
