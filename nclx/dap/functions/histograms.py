"""``np.histogram`` of a DistArray.

The bin edges are NumPy's: with ``bins`` an integer and no ``range``, the
global minimum and maximum (one ``allgather`` of each rank's, which also
carries any rank's error and every rank's arguments: a rank that failed,
or ranks that passed different arguments, raise on every rank) stand in
for ``range`` exactly as NumPy takes them from the data, so
``np.histogram_bin_edges`` gives the same edges.
String ``bins`` (NumPy's estimators: 'auto', 'fd', 'doane', 'scott',
'stone', 'rice', 'sturges', 'sqrt') run NumPy's own bin-edge code
(``numpy.lib._histograms_impl._get_bin_edges``, so each NumPy version's
formulas) on a 1-D DistArray of the values (those inside ``range`` when it
is given: NumPy's truncation): its min/max, size, exact percentiles and
histograms are the global ones, so 'auto', 'fd', 'stone', 'rice',
'sturges' and 'sqrt' give NumPy's edges bit for bit; 'scott' and 'doane'
take ``np.std``/``np.mean`` of the DistArray (per-rank partials combined,
1e-12 relative), which moves the number of bins only where the width
divides the range to an integer within that rounding.
Every rank then counts its owned cells with NumPy against those edges, and
one reduction adds the counts: counts equal NumPy's bit for bit (NumPy's
equal-width fast path and its edge search count the same).  With
``weights=`` (a DistArray of ``a``'s shape, first redistributed to
``a``'s distribution where it differs) the per-bin sums of
float weights are added across ranks in another order than NumPy's
sequential ``bincount``: equal to 1e-12 relative, the same bits on every
rank (complex weights: their real and imaginary parts summed apart, as
NumPy does); ``density=True`` divides as NumPy does.  The result is
``(hist, bin_edges)``, NumPy arrays on every rank; ``np.histogram_bin_edges``
gives the same edges.
"""
import warnings

import numpy as np
from numpy.exceptions import ComplexWarning

from nclx.dap.collective import allgather_checked
from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.functions._layout import check_same_args
from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.registry import implements
from nclx.dap.validate import DapError

#: the block length of NumPy's equal-width counting loop
_NUMPY_BLOCK = 65536

try:        # NumPy's bin-edge code (its estimators' formulas differ between versions)
    from numpy.lib._histograms_impl import _get_bin_edges as _numpy_bin_edges
    from numpy.lib._histograms_impl import _get_outer_edges as _numpy_outer_edges
    from numpy.lib._histograms_impl import _hist_bin_selectors as _ESTIMATORS
except ImportError:                                     # pragma: no cover - a NumPy without them
    _numpy_bin_edges = _numpy_outer_edges = None
    _ESTIMATORS = {}


def _extremes(values):
    """(min, max, has_nan) of this rank's values, or None if it has none."""
    if values.size == 0:
        return None
    if values.dtype.kind in "fc" and np.isnan(values).any():
        return None, None, True
    return values.min(), values.max(), False


def _weighted(values, weights, edges):
    """Per-bin sums of ``weights`` (NumPy's bins: half open, the last closed),
    each bin summed in element order as NumPy's ``bincount`` does."""
    keep = (values >= edges[0]) & (values <= edges[-1])
    v, w = values[keep], weights[keep]
    idx = np.searchsorted(edges, v, side="right") - 1
    idx[idx == edges.shape[0] - 1] -= 1                  # the last edge is in the last bin
    nbins = edges.shape[0] - 1
    if w.dtype.kind == "c":                 # NumPy sums the two parts apart
        n = np.zeros(nbins, w.dtype)
        n.real = np.bincount(idx, weights=w.real, minlength=nbins)
        n.imag = np.bincount(idx, weights=w.imag, minlength=nbins)
        return n
    n = np.bincount(idx, weights=w, minlength=nbins)
    return n.astype(weights.dtype)


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


def _estimated_edges(a, bins, range, what):
    """NumPy's edges for an estimator name ``bins`` (collective)."""
    if _numpy_bin_edges is None:
        raise DapError(f"{what}: bins={bins!r} needs NumPy's bin-edge code, which this NumPy "
                       f"does not have; give a number of bins or the edges")
    return _numpy_bin_edges(_values_1d(a, range, what), bins, range, None)[0]


def _edges(a, bins, range, weights, what):
    """``(edges, local weights or None)`` of ``np.histogram(a, ...)``
    (collective; any rank's error, or ranks passing different arguments,
    raise on every rank)."""
    if not isinstance(a, DistArray):
        raise TypeError(f"{what}: a must be a DistArray when weights is one, not "
                        f"{type(a).__name__}")
    if a.dtype == np.bool_:      # NumPy's warning (once: the steps below count in uint8)
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=4)
    comm = a.comm
    error = local_w = None
    ext = None
    try:
        if isinstance(bins, DistArray) or isinstance(range, DistArray):
            raise TypeError(f"{what}: bins and range must be NumPy values, not DistArrays")
        if weights is not None:
            if not isinstance(weights, DistArray):
                raise TypeError(f"{what}: weights must be a DistArray of a's shape, "
                                f"not {type(weights).__name__}")
            weights = a._aligned(weights)
            if weights.dtype.kind not in "biufc":
                raise DapError(f"{what}: weights of dtype {weights.dtype} are not "
                               f"supported for a DistArray (numbers are)")
            local_w = weights.owned
        # NumPy's argument errors (bins, an estimator's name, range, weights'
        # dtype, weights with an estimator), in NumPy's order, on a stand-in
        # (whose own warnings, complex edges cast to real, are not the call's)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.histogram(np.zeros(1, _counted_dtype(a)), bins=bins, range=range,
                         weights=None if weights is None else np.ones(1, weights.dtype))
        if not isinstance(bins, str):
            ext = _extremes(_owned(a))
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    args = (None if isinstance(bins, DistArray) else bins,
            None if isinstance(range, DistArray) else range, weights is None)
    parts = allgather_checked(comm, (ext, args), error, what)
    check_same_args([p[1] for p in parts], what)
    if isinstance(bins, str):
        return _estimated_edges(a, bins, range, what), local_w
    everyone = [p[0] for p in parts]
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
    sample = np.zeros(0, _counted_dtype(a))
    return np.histogram_bin_edges(sample, bins=bins, range=range), local_w


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """``np.histogram_bin_edges`` of a DistArray (see the module doc)."""
    return _edges(a, bins, range, weights, "np.histogram_bin_edges")[0]


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram`` of a DistArray (see the module doc)."""
    edges, local_w = _edges(a, bins, range, weights, "np.histogram")
    comm = a.comm
    if a.dtype.kind == "c" and np.ndim(bins) == 0:
        # NumPy's equal-width path casts each block of 65,536 complex values'
        # bin positions to integers, a ComplexWarning each; the counting
        # here (against the edges) casts nothing
        blocks = -(-a.size // _NUMPY_BLOCK)           # (``range`` is an argument here)
        while blocks > 0:
            warnings.warn("Casting complex values to real discards the imaginary part",
                          ComplexWarning, stacklevel=3)
            blocks -= 1
    values = _owned(a)
    if local_w is None:
        counts, _ = np.histogram(values.reshape(-1), bins=edges)
    else:
        counts = _weighted(values.reshape(-1), local_w.reshape(-1), edges)
    # one Allreduce adds the counts in rank order: the same bits on every rank
    counts = np.ascontiguousarray(counts)
    verdict, total = allreduce_agreed(comm, np.add, counts, (counts.shape, counts.dtype), None,
                                      key=f"histogram {counts.shape} {counts.dtype.str}")
    if verdict is not None:
        raise_verdict(verdict, comm.Get_size(), comm.Get_rank(), "np.histogram", None)
    if density:
        db = np.array(np.diff(edges), float)
        return total / db / total.sum(), edges
    return total, edges
