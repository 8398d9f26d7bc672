"""The C-order flattening of a DistArray, block-distributed: every rank
gets ``bounds[r]:bounds[r+1]`` of the flattened array (balanced, no
padding), with one ``Alltoallv``.

- A 1-D block array already has that layout: nothing moves.
- Where each rank owns one run of the C order (rows split along the first
  axis), each rank cuts its run at the bounds.
- Where the last axis of every rank's part is a contiguous range (block
  and undistributed layouts), each rank's part is runs of the C order (one
  per line along the last axis): the runs are cut at the bounds, sent in
  order of destination, and each receiver works out from the Distribution
  where the pieces go.  A rank holds its part, an index and the pieces:
  about three times its part.
- Otherwise (a cyclic or 'u' last axis) (index, value) records travel:
  about six times the part.
"""
import numpy as np

from nclx.dap.distribution import Distribution
from nclx.dap.functions._layout import block_bounds
from nclx.dap.functions._samplesort import alltoallv, run_indices
from nclx.dap.redistribute import check_partition

__all__ = ["flat_block"]


def _contiguous(g):
    lo = int(g[0]) if g.size else 0
    return np.array_equal(g, np.arange(lo, lo + g.size))


def _pieces(dist, r, bounds):
    """Rank ``r``'s part as pieces of C-order runs cut at ``bounds``: per
    piece its destination, first flat index, length and offset in the part
    (flattened in C order), in part order; None unless the last axis of
    every rank is a contiguous range."""
    idx = [m.global_indices() for m in dist.maps(r)]
    last = idx[-1]
    if not _contiguous(last):
        return None
    w = last.size
    prefix = idx[:-1]
    starts = (np.ravel_multi_index(np.ix_(*prefix), dist.shape[:-1]).reshape(-1)
              if prefix else np.zeros(1, np.int64)) * dist.shape[-1] + (int(last[0]) if w else 0)
    if w == 0 or starts.size == 0 or any(g.size == 0 for g in prefix):
        z = np.zeros(0, np.int64)
        return z, z, z, z
    t0 = np.searchsorted(bounds, starts, side="right") - 1
    t1 = np.searchsorted(bounds, starts + w - 1, side="right") - 1
    per = t1 - t0 + 1
    run = np.repeat(np.arange(starts.size), per)
    dest = np.repeat(t0, per) + (np.arange(run.size) - np.repeat(np.cumsum(per) - per, per))
    lo = np.maximum(starts[run], bounds[dest])
    hi = np.minimum(starts[run] + w, bounds[dest + 1])
    return dest, lo, hi - lo, run * w + (lo - starts[run])


def _move_pieces(a, bounds):
    """The pieces path (see the module doc); None where it does not apply."""
    dist, comm, rank = a.distribution, a.comm, a.comm.Get_rank()
    if any(not _contiguous(dist.maps(r)[-1].global_indices()) for r in range(dist.nprocs)):
        return None
    dest, _, length, offset = _pieces(dist, rank, bounds)
    order = np.argsort(dest, kind="stable")
    values = np.ascontiguousarray(a.owned).reshape(-1)
    send = values[run_indices(offset[order][:, None], length[order][:, None],
                              transpose=False)]
    del values
    counts = np.bincount(dest, weights=length, minlength=comm.Get_size()).astype(np.int64)
    recv, _ = alltoallv(comm, send, counts)
    del send
    # where each source's pieces go: the same pieces, seen from here
    firsts, lengths = [], []
    for s in range(comm.Get_size()):
        d, lo, n, _ = _pieces(dist, s, bounds)
        mine = d == rank
        firsts.append(lo[mine] - bounds[rank])
        lengths.append(n[mine])
    pos = run_indices(np.concatenate(firsts)[:, None], np.concatenate(lengths)[:, None],
                transpose=False)
    out = np.empty(int(bounds[rank + 1] - bounds[rank]), a.dtype)
    out[pos] = recv
    return out


def _c_order_runs(dist):
    """Where every rank owns one run of the C-order flattened array, in rank
    order (rows split along the first axis, every other axis whole and in
    order): the runs' bounds; else None.  Read from the Distribution, so
    the same on every rank."""
    if dist.ndim == 0:                    # 0-d (one rank): its one cell
        return np.array([0, 1], np.int64)
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


def flat_block(a, what="the C-order flattening"):
    """This rank's part of the C-order flattened array and the 1-D block
    Distribution it belongs to (see the module doc); ``what`` names the call
    in the DapError of a 'u' layout that is no partition."""
    comm, rank = a.comm, a.comm.Get_rank()
    # a 'u' dimension that is no partition has no global array (cells held
    # twice or by no rank: the records path would leave those unwritten)
    check_partition(a.distribution, what)
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
    part = _move_pieces(a, bounds)
    if part is not None:
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


