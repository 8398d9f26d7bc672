"""``np.median`` and ``np.nanmedian`` of a DistArray, exact: the middle
order statistics selected as :mod:`.quantiles` selects a quantile's
(``axis=None``: a sample sort, no gather; ``axis=k``: lines held whole),
then NumPy's mean of the middle values; NaN handling as NumPy's."""
import numpy as np

from nclx.dap.functions._samplesort import mpi
from nclx.dap.functions.quantiles import _Values, _fetch, _run, _size, _whole_axis
from nclx.dap.registry import implements


def _median_flat(a, empty):
    n = a.n
    if n == 0:
        return empty()
    kth = [n // 2 - 1, n // 2] if n % 2 == 0 else [(n - 1) // 2]
    middle, last = _fetch(a, n, np.array(kth))
    result = np.mean(middle)                 # NumPy's median: the mean of the middle ones
    if (np.issubdtype(a.dtype, np.inexact) or a.dtype.kind in "Mm") and np.isnan(last):
        return last
    return result


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median`` of a DistArray, exact (see the module doc)."""
    keepdims = bool(keepdims)
    return _run("median", a, None, axis, out, overwrite_input, "linear", keepdims, None,
                check=lambda: np.median(np.zeros(2, a.dtype)),
                flat=lambda a: _median_flat(_Values(a), lambda: np.median(np.empty(0, a.dtype))),
                local=lambda a, ax, kd: _whole_axis(a, ax, kd, lambda o, x: np.median(o, axis=x),
                                                    ()))


def _last_cell(a):
    """The array's last element in C order, on every rank (its owner's bits)."""
    rank = a.comm.Get_rank()
    maps = a.distribution.maps(rank)
    last = [s - 1 for s in a.shape]
    out = np.zeros(1, a.dtype)
    if all(bool(m.owns(g)) for m, g in zip(maps, last)):
        out[0] = a._block[tuple(int(m.local_from_global(g)) for m, g in zip(maps, last))]
    bits = out.view(np.uint8)
    got = np.empty_like(bits)
    a.comm.Allreduce(bits, got, op=mpi().BOR)
    return got.view(a.dtype)


def _nanmedian_flat(a):
    values = _Values(a, drop_nan=True)
    if values.n == 0 and _size(a):      # all NaN: NumPy gives the last element, and warns
        return np.nanmedian(_last_cell(a))
    return _median_flat(values, lambda: np.nanmedian(np.empty(0, a.dtype)))


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    """``np.nanmedian`` of a DistArray, exact: the median of the values that
    are not NaN (see the module doc)."""
    keepdims = False if keepdims is np._NoValue else bool(keepdims)
    return _run("nanmedian", a, None, axis, out, overwrite_input, "linear", keepdims, None,
                check=lambda: np.nanmedian(np.zeros(2, a.dtype)),
                flat=_nanmedian_flat,
                local=lambda a, ax, kd: _whole_axis(a, ax, kd,
                                                    lambda o, x: np.nanmedian(o, axis=x), ()))
