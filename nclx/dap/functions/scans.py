"""Prefix scans of a DistArray: ``np.cumsum``, ``np.cumprod``.

- Along an axis with one grid coordinate ('n', or a grid of size 1 there)
  every rank scans its lines whole, in global order: NumPy's result bit for
  bit, distributed like ``a`` (padding refreshed).
- Along a block-distributed axis each rank scans its part, one ``exscan``
  over the ranks along that axis combines the ranks' totals (in rank
  order), and each rank adds (multiplies) the total of the ranks before it.
  Integers (and booleans) are NumPy's bit for bit (modular arithmetic is
  associative); NumPy's float scan is sequential, this one groups the
  additions by rank, so floats equal NumPy's to rounding (1e-12 relative
  where the partial sums do not cancel).  The result is distributed like
  ``a`` (padding refreshed).  A cyclic or 'u' axis is refused (DapError):
  block-distribute it first.
- ``axis=None`` scans the flattened array in global C order: the owned
  cells move (one ``Alltoallv``: cut runs of the C order where each rank
  holds one, as rows split along the first axis; else (index, value)
  records) to a 1-D block distribution of ``a.size`` elements over the
  communicator (balanced, no padding), which is the result's distribution,
  and are scanned as above.
``dtype=`` as NumPy's; ``out=`` is refused.  One ``allgather`` first: a rank
that failed, or ranks that passed different arguments, raise on every rank.
"""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.functions._layout import (agree_call, along_whole_axis, axis_comm, axis_of,
                                        block_bounds, check_permutation, from_owned)
from nclx.dap.functions._samplesort import alltoallv
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


def _scan_block(comm, owned, axis, ufunc, dtype):
    """Scan ``owned`` along a block ``axis`` split over ``comm``'s ranks (in order)."""
    local = ufunc.accumulate(owned, axis=axis, dtype=dtype)
    rest = tuple(s for d, s in enumerate(local.shape) if d != axis)
    if local.shape[axis]:
        total = np.take(local, -1, axis=axis)
    else:
        total = np.full(rest, ufunc.identity, dtype=local.dtype)
    before = comm.exscan(np.array(total), op=lambda x, y: ufunc(x, y))
    if comm.Get_rank() != 0 and before is not None:
        ufunc(local, np.expand_dims(before, axis), out=local)
    return local


def _c_order_runs(dist):
    """Where every rank owns one run of the C-order flattened array, in rank
    order (rows split along the first axis, every other axis whole and in
    order): the runs' bounds; else None.  Read from the Distribution, so
    the same on every rank."""
    inner = int(np.prod(dist.shape[1:], dtype=np.int64))
    starts = []
    for r in range(dist.nprocs):
        idx = [m.global_indices() for m in dist.maps(r)]
        for d, g in enumerate(idx):
            lo = int(g[0]) if g.size else 0
            if not np.array_equal(g, np.arange(lo, lo + g.size)) or \
                    (d > 0 and g.size != dist.shape[d]):
                return None
        starts.append((int(idx[0][0]) if idx[0].size else None, idx[0].size))
    bounds, at = [0], 0
    for first, size in starts:
        if size and first != at:
            return None
        at += size
        bounds.append(at * inner)
    return np.array(bounds, np.int64)


def _flat_block(a):
    """This rank's part of the C-order flattened array, block-distributed
    over the communicator (one ``Alltoallv`` of (index, value) records:
    about 6 times the block's memory for a moment)."""
    comm, rank = a.comm, a.comm.Get_rank()
    n = int(np.prod(a.shape, dtype=np.int64))
    target = Distribution.from_shape((n,), "b", nprocs=comm.Get_size())
    bounds = block_bounds(target, 0)
    if a.distribution.ndim == 1 and a.distribution.dist[0] == "b" and \
            np.array_equal(block_bounds(a.distribution, 0), bounds):
        return a.owned, target             # already the flattened block layout: no move
    runs = _c_order_runs(a.distribution)
    if runs is not None:                   # each rank holds one run of the C order: cut it
        cuts = np.clip(bounds - runs[rank], 0, runs[rank + 1] - runs[rank])
        part, _ = alltoallv(comm, np.ascontiguousarray(a.owned).reshape(-1), np.diff(cuts))
        return part, target
    idx = [m.global_indices() for m in a.distribution.maps(rank)]
    flat = np.ravel_multi_index(np.ix_(*idx), a.shape).reshape(-1) if idx else \
        np.zeros(1, np.int64)
    values = np.ascontiguousarray(a.owned).reshape(-1)
    dest = np.searchsorted(bounds, flat, side="right") - 1
    order = np.argsort(dest, kind="stable")
    rec = np.empty(flat.shape[0], np.dtype([("i", np.int64), ("v", a.dtype)]))
    rec["i"], rec["v"] = flat[order], values[order]
    del flat, values, order
    counts = np.bincount(dest, minlength=comm.Get_size()).astype(np.int64)
    recv, _ = alltoallv(comm, rec, counts)
    del rec
    out = np.empty(int(bounds[rank + 1] - bounds[rank]), a.dtype)
    out[recv["i"] - bounds[rank]] = recv["v"]
    return out, target


def _scan(name, ufunc, a, axis, dtype, out):
    comm, dist = a.comm, a.distribution
    error = ax = rdtype = None
    try:
        if out is not None:
            raise DapError(f"np.{name}: out= is not supported for a DistArray")
        numpy_fn = np.cumsum if ufunc is np.add else np.cumprod
        rdtype = numpy_fn(np.zeros(1, a.dtype), dtype=dtype).dtype   # NumPy's (and errors)
        if axis is not None:
            ax = axis_of(a, axis, f"np.{name}")
            check_permutation(dist, ax, f"np.{name}")
            if dist.grid_shape[ax] != 1 and dist.dist[ax] != "b":
                raise DapError(f"np.{name}: axis {ax} is {dist.dist[ax]!r}-distributed; a scan "
                               f"needs it block-distributed ('b') or on one grid coordinate")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, f"np.{name}", (axis, None if dtype is None else np.dtype(dtype).str))
    if axis is None:
        part, target = _flat_block(a)
        scanned = _scan_block(comm, part, 0, ufunc, rdtype)
        return from_owned(DistArray, target, comm, scanned, rdtype)
    if dist.grid_shape[ax] == 1:
        done = along_whole_axis(a, ax, lambda x: ufunc.accumulate(x, axis=-1, dtype=rdtype))
        return from_owned(DistArray, dist, comm, done, rdtype)
    scanned = _scan_block(axis_comm(a, ax), a.owned, ax, ufunc, rdtype)
    return from_owned(DistArray, dist, comm, scanned, rdtype)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """``np.cumsum`` of a DistArray (see the module doc)."""
    return _scan("cumsum", np.add, a, axis, dtype, out)


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """``np.cumprod`` of a DistArray (see the module doc)."""
    return _scan("cumprod", np.multiply, a, axis, dtype, out)
