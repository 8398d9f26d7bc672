"""Sorting a DistArray: ``np.sort``, ``np.argsort``, ``np.partition``.

``np.sort(da, axis=k)`` -- "lines" are the 1-D slices along axis k:

- along an axis with one grid coordinate ('n', or a grid of size 1 there)
  every rank sorts its lines whole, in global order, with the ``kind``
  asked: NumPy's result bit for bit, distributed like ``da`` (padding
  refreshed);
- along a distributed axis whose ranks share at least as many lines as
  there are ranks along it (:func:`._wholelines.lines_go_whole`), the lines
  move whole to the ranks (one ``Alltoallv``), NumPy sorts them with
  ``kind``, and they come back (one ``Alltoallv``): NumPy's result bit for
  bit, even the order of equal keys;
- along a distributed axis with fewer lines (a 1-D array), a sample sort
  over the ranks along that axis (:mod:`._samplesort`: one ``allgather`` of
  samples, one ``Alltoallv`` of buckets, one ``Exscan`` and one
  ``Alltoallv`` to the result's layout with exact counts).  Along a block
  axis the values equal ``np.sort(global, axis=k, kind='stable')`` bit for
  bit: equal keys (``-0.0`` and ``0.0``, NaNs of different bits) keep their
  global order, where ``np.sort``'s default kind orders them in no defined
  way (every other value is the same bit for bit).  Along a cyclic or 'u'
  axis equal keys may come in another order (the values are otherwise
  the same) unless the sort is stable (below);
- ``axis=None`` sorts the flattened array by the sample sort: a 1-D
  DistArray of ``da.size`` elements, block-distributed (balanced, no
  padding) over the communicator; equal keys of different bits in no
  defined order, but for a stable sort (``kind='stable'`` or
  ``'mergesort'``, ``stable=True``), whose equal keys keep their C order:
  the flattened block layout is sorted then.  A stable sort along a
  cyclic or 'u' axis block-distributes that axis first, so that equal keys
  keep their global order too.

The result along a distributed axis is distributed like ``da`` when that
axis is block-distributed (padding refreshed), else like ``da`` with that
axis block-distributed (balanced, no padding) over the same grid
coordinates.  ``kind`` reaches NumPy's sorts of whole lines (the sample
sort is stable); ``order=`` is refused.  ``np.argsort`` follows the same
ways (along a distributed axis of few lines the sample sort carries each
element's global index: NumPy's ``kind='stable'`` indices).  NaNs sort last as in NumPy.
Each function starts with one ``allgather``: a rank that failed, or ranks
that passed different arguments, raise the same DapError on every rank.
"""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.functions._layout import (agree_call, along_whole_axis, axis_comm, axis_of,
                                        axis_order, block_bounds, check_permutation, flat_values,
                                        from_owned, owned_lines, with_block_axis)
from nclx.dap.functions._flatten import flat_block
from nclx.dap.functions._samplesort import deliver_block, sample_sort
from nclx.dap.functions._wholelines import lines_go_whole, whole_lines
from nclx.dap.layout import ravel
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.redistribute import redistribute
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


def _check_common(a, kind, order, stable, what):
    if order is not None:
        raise DapError(f"{what}: order= (fields of a structured dtype) is not supported "
                       f"for a DistArray")
    if a.dtype.hasobject:
        raise TypeError(f"{what}: a DistArray of dtype {a.dtype} (Python objects) cannot be "
                        f"sorted across ranks")
    np.sort(np.empty(0, a.dtype), kind=kind, stable=stable)      # NumPy's argument errors


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort`` of a DistArray (see the module doc for the result's layout)."""
    error = ax = None
    try:
        _check_common(a, kind, order, stable, "np.sort")
        if axis is not None:
            ax = axis_of(a, axis, "np.sort")
            check_permutation(a.distribution, ax, "np.sort")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(a.comm, error, "np.sort", (axis, kind, order, stable))
    dist, comm = a.distribution, a.comm
    stable_asked = stable is True or kind in ("stable", "mergesort")
    if axis is None:
        return _sort_flat(a, stable_asked)
    if dist.grid_shape[ax] == 1:
        return _whole(a, ax, lambda x: np.sort(x, axis=-1, kind=kind, stable=stable), a.dtype)
    if lines_go_whole(dist, ax):                   # lines of its own: sorted in place
        return _whole(a, ax, lambda x: _sorted_in_place(x, kind, stable), a.dtype)
    if stable_asked and dist.dist[ax] != "b":
        # the sample sort keeps equal keys in the order the ranks hold them:
        # along a cyclic or 'u' axis that is not the global order, so a
        # stable sort block-distributes the axis first (one Alltoallw; the
        # result's layout anyway).  Before, -0.0 and 0.0 came in another
        # order than NumPy's stable sort gives (found by review)
        a = redistribute(a, with_block_axis(dist, ax))
        dist = a.distribution
    sub = axis_comm(a, ax)
    order_ = axis_order(a, ax)[1] if dist.dist[ax] == "u" else None   # b, c: in order
    lines, values = sample_sort(sub, owned_lines(a, ax, order_))
    target = dist if dist.dist[ax] == "b" else with_block_axis(dist, ax)
    owned_shape = [m.num_owned for m in target.maps(comm.Get_rank())]
    L = int(np.prod([n for d, n in enumerate(owned_shape) if d != ax], dtype=np.int64))
    out = deliver_block(sub, lines, values, L, block_bounds(target, ax))
    del lines, values
    moved = [n for d, n in enumerate(owned_shape) if d != ax] + [owned_shape[ax]]
    return from_owned(DistArray, target, comm, np.moveaxis(out.reshape(moved), -1, ax), a.dtype)


def _by_whole_lines(a, ax, fn, dtype):
    """``fn`` on whole lines along a distributed ``ax`` (:mod:`._wholelines`);
    the result distributed like ``a`` along a block axis, else with that axis
    block-distributed."""
    dist, comm = a.distribution, a.comm
    target = dist if dist.dist[ax] == "b" else with_block_axis(dist, ax)
    column = dist._dims[ax]
    idx = [map_from_dim_dict(dd).global_indices() for dd in column]
    out = whole_lines(axis_comm(a, ax), owned_lines(a, ax), idx, fn, block_bounds(target, ax))
    owned_shape = [m.num_owned for m in target.maps(comm.Get_rank())]
    moved = [n for d, n in enumerate(owned_shape) if d != ax] + [owned_shape[ax]]
    return from_owned(DistArray, target, comm, np.moveaxis(out.reshape(moved), -1, ax), dtype)


def _sort_flat(a, stable=False):
    """``axis=None``; ``stable``: equal keys in C order (the sample sort of
    the C-order flattened block layout, :func:`._flatten.flat_block`), else
    of each rank's owned cells as held (no copy to another layout)."""
    comm = a.comm
    P = comm.Get_size()
    n = int(np.prod(a.shape, dtype=np.int64))
    target = Distribution.from_shape((n,), "b", nprocs=P)
    part = (np.ascontiguousarray(flat_block(a, "np.sort")[0]).reshape(-1) if stable
            else flat_values(a))
    _, values = sample_sort(comm, part.reshape(1, -1))
    out = deliver_block(comm, None, values, 1, block_bounds(target, 0))
    return from_owned(DistArray, target, comm, out.reshape(-1), a.dtype)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.argsort`` of a DistArray: global indices along ``axis``, bit for
    bit NumPy's, where the lines are held or moved whole (an axis with one
    grid coordinate, or as many lines as ranks along it; see the module
    doc), distributed as :func:`sort`'s result.  ``axis=None``, and the one
    axis of a distributed 1-D array: indices into the flattened array by
    sample sort (:func:`_argsort_flat`), block-distributed.  Along another
    distributed axis with fewer lines than ranks: :func:`_argsort_lines`
    (NumPy's ``kind='stable'`` indices bit for bit)."""
    if not a.shape:         # NumPy: a 0-d array's argsort is array([0]), whatever the axis
        return argsort(ravel(a), -1, kind, order, stable=stable)
    error = ax = None
    flat = axis is None
    try:
        _check_common(a, kind, order, stable, "np.argsort")
        if not flat:
            ax = axis_of(a, axis, "np.argsort")
            check_permutation(a.distribution, ax, "np.argsort")
            flat = a.distribution.ndim == 1 and a.distribution.grid_shape[0] != 1
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(a.comm, error, "np.argsort", (axis, kind, order, stable))
    if flat:
        return _argsort_flat(a)
    if a.distribution.grid_shape[ax] != 1 and not lines_go_whole(a.distribution, ax):
        return _argsort_lines(a, ax)
    return _whole(a, ax, lambda x: np.argsort(x, axis=-1, kind=kind, stable=stable), np.intp)


def _argsort_lines(a, ax):
    """Indices along a distributed ``ax`` whose ranks share fewer lines than
    there are ranks along it (a tall array of a few columns): a cyclic or
    'u' axis is block-distributed first (one Alltoallw, the result's
    layout); each rank sorts its piece of every line by (value, global
    index), a sample sort over the ranks along ``ax`` carries the indices
    (buckets in (line, value, index) order: NumPy's stable order), and the
    indices go to the block owners (one ``Exscan``, one ``Alltoallv``)."""
    dist, comm = a.distribution, a.comm
    if dist.dist[ax] != "b":
        a = redistribute(a, with_block_axis(dist, ax))
        dist = a.distribution
    sub = axis_comm(a, ax)
    owned_shape = [m.num_owned for m in dist.maps(comm.Get_rank())]
    L = int(np.prod([n for d, n in enumerate(owned_shape) if d != ax], dtype=np.int64))
    if L == 0:              # no lines (another axis of size 0): the ranks along ax alike
        return from_owned(DistArray, dist, comm, np.empty(owned_shape, np.intp), np.intp)
    lines = owned_lines(a, ax)
    order = np.argsort(lines, axis=1, kind="stable")
    start = int(block_bounds(dist, ax)[sub.Get_rank()])
    values = np.ascontiguousarray(np.take_along_axis(lines, order, axis=1))
    del lines
    index = order.astype(np.int64) + start
    del order
    if L == 1:
        index, values = sample_sort(sub, values, payload=index.reshape(-1))
        lnum, index = None, np.ascontiguousarray(index[np.lexsort((index, values))])
    else:
        (lnum, index), _ = sample_sort(sub, values, payload=index)
    del values
    out = deliver_block(sub, lnum, index, L, block_bounds(dist, ax))
    del lnum, index
    moved = [n for d, n in enumerate(owned_shape) if d != ax] + [owned_shape[ax]]
    return from_owned(DistArray, dist, comm,
                      np.moveaxis(out.reshape(moved).astype(np.intp), -1, ax), np.intp)


def _argsort_flat(a):
    """Indices that sort the C-order flattened array, in NumPy's stable order
    (equal values by index; NaN last; ``-0.0 == 0.0``): each rank's part of
    the flattened block layout sorted with its global indices, a sample
    sort carrying the indices, each bucket put in (value, index) order, and
    the indices delivered to the block layout of the result."""
    comm = a.comm
    part, target = flat_block(a)
    part = np.ascontiguousarray(part).reshape(-1)
    start = int(block_bounds(target, 0)[comm.Get_rank()])
    order = np.argsort(part, kind="stable")
    index = (order + start).astype(np.int64)
    values = np.ascontiguousarray(part[order])
    del part, order
    index, values = sample_sort(comm, values.reshape(1, -1), payload=index)
    keep = np.lexsort((index, values))            # stable: by value, then by index
    out = deliver_block(comm, None, np.ascontiguousarray(index[keep]), 1,
                        block_bounds(target, 0))
    return from_owned(DistArray, target, comm, out.reshape(-1).astype(np.intp), np.intp)


def _sorted_in_place(lines, kind, stable):
    lines.sort(axis=-1, kind=kind, stable=stable)
    return lines


def _whole(a, ax, fn, dtype):
    """``fn`` on lines held whole along ``ax`` (one grid coordinate) or moved whole."""
    if a.distribution.grid_shape[ax] == 1:
        return from_owned(DistArray, a.distribution, a.comm, along_whole_axis(a, ax, fn), dtype)
    return _by_whole_lines(a, ax, fn, dtype)


def _check_kth(kth, n, kind, empty=False):
    """NumPy's errors for ``kth`` and ``kind`` along an axis of ``n`` (an
    empty array takes any integer ``kth``, as NumPy's)."""
    if kind != "introselect":
        raise ValueError(f"np.partition: kind must be 'introselect', not {kind!r}")
    k = np.asarray(kth)
    if k.dtype.kind not in "iu" or k.ndim > 1:
        raise TypeError(f"np.partition: kth must be an integer or a sequence of integers, "
                        f"not {kth!r}")
    bad = k[(k < -n) | (k >= n)]
    if bad.size and not empty:
        raise ValueError(f"np.partition: kth(={int(bad[0])}) out of bounds ({n})")


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.partition`` of a DistArray.  Along an axis with one grid
    coordinate every rank partitions its lines whole, in global order: NumPy's
    result bit for bit, distributed like ``a``.  Along a distributed axis (or
    ``axis=None``) the result is :func:`sort`'s (distributed as documented
    there): a valid partition for every ``kth`` -- the element at each ``kth``
    is the one NumPy puts there, no larger one before it, no smaller one
    after -- whose other positions are ordered (NumPy's order there is
    unspecified)."""
    error = ax = None
    try:
        _check_common(a, None, order, None, "np.partition")
        n = int(np.prod(a.shape, dtype=np.int64)) if axis is None else None
        if axis is not None:
            ax = axis_of(a, axis, "np.partition")
            n = a.shape[ax]
            check_permutation(a.distribution, ax, "np.partition")
        _check_kth(kth, n, kind, empty=int(np.prod(a.shape, dtype=np.int64)) == 0)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(a.comm, error, "np.partition", (np.asarray(kth).tolist(), axis, kind, order))
    if axis is not None and (a.distribution.grid_shape[ax] == 1 or
                             lines_go_whole(a.distribution, ax)):
        return _whole(a, ax, lambda x: np.partition(x, kth, axis=-1, kind=kind), a.dtype)
    return sort(a, axis=axis, kind="stable")
