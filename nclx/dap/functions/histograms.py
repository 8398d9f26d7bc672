"""``np.histogram`` of a DistArray.

The bin edges are NumPy's: with ``bins`` an integer and no ``range``, the
global minimum and maximum (one ``allgather`` of each rank's, which also
carries any rank's error and every rank's arguments: a rank that failed,
or ranks that passed different arguments, raise on every rank) stand in
for ``range`` exactly as NumPy takes them from the data, so
``np.histogram_bin_edges`` gives the same edges.
Every rank then counts its owned cells with NumPy against those edges, and
one reduction adds the counts: counts equal NumPy's bit for bit (NumPy's
equal-width fast path and its edge search count the same).  With
``weights=`` (a DistArray of ``a``'s shape, first redistributed to
``a``'s distribution where it differs) the per-bin sums of
float weights are added across ranks in another order than NumPy's
sequential ``bincount``: equal to 1e-12 relative, the same bits on every
rank; ``density=True`` divides as NumPy does.  String ``bins``
(estimators) are refused.  The result is ``(hist, bin_edges)``, NumPy
arrays on every rank.
"""
import numpy as np

from nclx.dap.collective import allgather_checked
from nclx.dap.distarray import DistArray
from nclx.dap.functions._layout import check_same_args
from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


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
    n = np.bincount(idx, weights=w, minlength=edges.shape[0] - 1)
    return n.astype(weights.dtype)


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram`` of a DistArray (see the module doc)."""
    comm = a.comm
    error = local_w = None
    ext = None
    values = a.owned
    try:
        if isinstance(bins, str):
            if weights is not None:       # NumPy's own refusal, in its type
                raise TypeError("Automated estimation of the number of bins is not supported "
                                "for weighted data")
            raise DapError(f"np.histogram: bins={bins!r} (an estimator over the data) is not "
                           f"supported for a DistArray; give a number of bins or the edges")
        if isinstance(bins, DistArray) or isinstance(range, DistArray):
            raise TypeError("np.histogram: bins and range must be NumPy values, not DistArrays")
        if weights is not None:
            if not isinstance(weights, DistArray):
                raise TypeError(f"np.histogram: weights must be a DistArray of a's shape, "
                                f"not {type(weights).__name__}")
            weights = a._aligned(weights)
            if weights.dtype.kind not in "biuf":
                raise DapError(f"np.histogram: weights of dtype {weights.dtype} are not "
                               f"supported for a DistArray (real numbers are)")
            local_w = weights.owned
        ext = _extremes(values)
        # NumPy's argument errors (bins, range, weights' dtype) on a stand-in
        np.histogram(np.zeros(1, a.dtype), bins=bins, range=range,
                     weights=None if weights is None else np.ones(1, weights.dtype))
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    args = (None if isinstance(bins, DistArray) else bins,
            None if isinstance(range, DistArray) else range, density, weights is None)
    parts = allgather_checked(comm, (ext, args), error, "np.histogram")
    check_same_args([p[1] for p in parts], "np.histogram")
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
    sample = np.zeros(0, a.dtype)
    edges = np.histogram_bin_edges(sample, bins=bins, range=range)
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
