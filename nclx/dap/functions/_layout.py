"""Shared plumbing of the order-statistics functions: lines along an axis,
the ranks along an axis, and a DistArray built from owned parts."""
import operator
import pickle

import numpy as np

from nclx.dap.redistribute import agree_quick
from nclx.dap.distribution import Distribution
from nclx.dap.halo import exchange_halos
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.reduce import _subcomms
from nclx.dap.validate import DapError

__all__ = ["agree_call", "check_same_args", "axis_of", "axis_comm", "owned_lines", "axis_order",
           "along_whole_axis", "check_permutation", "block_bounds", "with_block_axis",
           "from_owned", "flat_values"]


def agree_call(comm, error, what, args):
    """One ``Allreduce`` (:func:`nclx.dap.redistribute.agree_quick`, the
    fold's fixed-size record): every rank raises the same DapError if any
    rank failed (``error``) or the ranks passed different ``args`` (the
    call's arguments: a collective call needs the same everywhere); only
    then an ``allgather`` reports every rank's error or arguments."""
    agree_quick(comm, args, error, what, describe=lambda v: f"the arguments {v!r}")


def check_same_args(args, what):
    """DapError (the same on every rank: ``args`` is every rank's, by rank)
    unless every rank passed the same arguments."""
    keys = [pickle.dumps(v) for v in args]
    if any(k != keys[0] for k in keys):
        differ = [r for r, k in enumerate(keys) if k != keys[0]]
        raise DapError(f"{what}: the ranks disagree on the arguments (every rank must pass the "
                       f"same): rank 0 passed {args[0]!r}, rank {differ[0]} {args[differ[0]]!r}")


def axis_of(a, axis, what):
    """``axis`` of ``a`` normalised (NumPy's AxisError otherwise)."""
    try:
        return int(np.lib.array_utils.normalize_axis_index(operator.index(axis),
                                                            a.distribution.ndim))
    except TypeError:
        raise TypeError(f"{what}: axis must be an integer or None, not {axis!r}") from None


def axis_comm(a, axis):
    """The ranks that share every grid coordinate but ``axis``'s (in grid order)."""
    return _subcomms(a.distribution, a.comm, (axis,))[0]


def axis_order(a, axis):
    """Global indices of this rank's owned cells along ``axis`` and the
    local order that puts them in increasing global order."""
    g = a.distribution.maps(a.comm.Get_rank())[axis].global_indices()
    return g, np.argsort(g, kind="stable")


def check_permutation(dist, axis, what):
    """DapError unless the ranks along ``axis`` own each global index once
    (only a 'u' dimension can fail; the Distribution is the same on every
    rank, so is the verdict)."""
    column = dist._dims[axis]
    if column[0]["dist_type"] != "u":
        return
    n = dist.shape[axis]
    idx = np.concatenate([np.asarray(dd["indices"], dtype=np.int64).ravel() for dd in column])
    outside = (idx < 0) | (idx >= n)
    if outside.any():
        raise DapError(f"{what}: dimension {axis} ('u'): index {int(idx[np.argmax(outside)])} "
                       f"is outside [0, {n})")
    counts = np.bincount(idx, minlength=n)
    bad = np.flatnonzero(counts != 1)
    if bad.size:
        # the index named, as a move names it (review 27: "does not own
        # every index in [0, n) exactly once" named none)
        g = int(bad[0])
        raise DapError(f"{what}: dimension {axis} ('u'): global index {g} is owned by "
                       f"{int(counts[g])} grid coordinates; it needs exactly one")


def along_whole_axis(a, axis, fn):
    """``fn`` (a NumPy function of lines, axis last) on lines held whole; the
    result placed back in local order.  Returns the owned result."""
    g = a.distribution.maps(a.comm.Get_rank())[axis].global_indices()
    moved = np.moveaxis(a.owned, axis, -1)
    if np.array_equal(g, np.arange(g.size)):               # already in global order
        return np.moveaxis(fn(moved), -1, axis)
    order = np.argsort(g, kind="stable")
    done = fn(moved[..., order])                            # in global order along the axis
    back = np.empty_like(order)
    back[order] = np.arange(order.size)                     # local i holds global g[i]
    return np.moveaxis(done[..., back], -1, axis)


def owned_lines(a, axis, order=None):
    """A fresh ``(L, m)`` C-contiguous copy of the owned cells, ``axis``
    last (in ``order`` along it when given)."""
    moved = np.moveaxis(a.owned, axis, -1)
    out = np.ascontiguousarray(moved[..., order]) if order is not None else \
        np.array(moved, order="C", copy=True)
    L = int(np.prod(out.shape[:-1], dtype=np.int64))
    return out.reshape(L, out.shape[-1])


def flat_values(a):
    """This rank's owned cells as a fresh 1-D copy."""
    return np.array(a.owned, order="C", copy=True).reshape(-1)


def block_bounds(dist, axis):
    """Owned global range of each grid coordinate along a block ``axis``
    (``bounds[c]:bounds[c+1]``)."""
    maps = [map_from_dim_dict(dd) for dd in dist._dims[axis]]
    starts = [m.start + m.comm_padding[0] for m in maps]
    return np.array(starts + [dist.shape[axis]], np.int64)


def with_block_axis(dist, axis):
    """``dist`` with dimension ``axis`` block-distributed (balanced, no
    padding) over the same number of grid coordinates."""
    column = Distribution.from_shape((dist.shape[axis],), "b",
                                     grid_shape=(dist.grid_shape[axis],))._dims[0]
    return Distribution([column if d == axis else dist._dims[d] for d in range(dist.ndim)])


def _has_padding(dist):
    return any(dd["dist_type"] == "b" and tuple(dd["padding"]) != (0, 0)
               for col in dist._dims for dd in col)


def from_owned(cls, dist, comm, owned, dtype):
    """A ``cls`` (DistArray) of ``dist`` whose owned cells are ``owned``;
    its communication padding filled from the owners (collective when the
    distribution has padding)."""
    rank = comm.Get_rank()
    block = np.zeros(dist.local_shape(rank), dtype=dtype)
    block[dist.owned_slices(rank)] = owned
    out = cls(block, dist, comm)
    if _has_padding(dist):
        exchange_halos(out)
    return out
