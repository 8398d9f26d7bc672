"""Between a Distribution and one rank (or every rank) holding the whole
array: :func:`gather_global` (``DistArray.gather``), :func:`from_root`
(``DistArray.from_global(..., root=r)``), both one ``Alltoallw`` of
:func:`nclx.dap.redistribute.move` into or out of one buffer (no pickling),
and :func:`from_every_rank` (``DistArray.from_global`` with the array on
every rank: each rank cuts its own block)."""
import numpy as np

from nclx.dap.collective import _ranges, allgather_checked
from nclx.dap.distribution import Distribution
from nclx.dap.agreekeys import dtype_key
from nclx.dap.fold import agreed_call
from nclx.dap.iotypes import raw_items
from nclx.dap.maps import check_global_range
from nclx.dap.redistribute import (Layout, agree_quick, check_movable, check_partition,
                                   layout_key, move, target_distribution)
from nclx.dap.validate import DapError

__all__ = ["gather_global", "scatter_into", "from_root", "from_every_rank"]


def _describe_gather(v):
    """A rank's (root, source layout) in a disagreement (another operation's
    value as it is)."""
    root, source, dtype = v
    return f"root={root!r}, source fingerprint {source[3][:10]}, dtype {dtype[1]}"


def gather_global(da, root=0):
    """The global array on ``root`` (None elsewhere), or on every rank with
    ``root=None``: one Alltoallw into one buffer, no pickling."""
    comm = da.comm
    size = comm.Get_size()
    error = None
    try:
        check_movable(da.dtype, "gather")
        if root is not None and (isinstance(root, (bool, np.bool_)) or not (
                isinstance(root, (int, np.integer)) and 0 <= root < size)):
            raise DapError(f"gather: root must be a rank in [0, {size}) or None, not {root!r}")
        check_partition(da.distribution, "gather")
        holders = None if root is None else {int(root)}
        # allocated before the agreement: a MemoryError on the root is every rank's
        out = np.empty(da.shape, da.dtype) if holders is None or comm.Get_rank() in holders \
            else None
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_quick
        error = exc
    same = int(root) if isinstance(root, (int, np.integer)) else root
    source = layout_key(da.distribution)
    # the source layout too: ranks whose arrays were built with different
    # distributions would move garbage or wait forever
    # and the dtype (ranks' elementwise results may differ in it)
    agree_quick(comm, (same, source, dtype_key(da.dtype)), error, "gather",
                describe=_describe_gather)
    move(comm, da._block, Layout.of(da.distribution), out,
         Layout.whole(da.shape, holders), key=(source, "whole", root))
    return out


def scatter_into(array, out, target, comm, root):
    """Fill ``out`` (this rank's block of ``target``) from ``array`` on ``root``."""
    src = array if comm.Get_rank() == root else None
    move(comm, src, Layout.whole(target.shape, {root}), out, Layout.of(target),
         key=("whole", root, layout_key(target)))


def _argkey(dist, root, kw):
    """What every rank must pass alike to ``from_global``: ``dist`` and the
    keywords by value (``[np.int64(1)]`` and ``(1,)`` alike, as
    ``redistribute`` and ``load_npy`` take them; before, by repr: refused
    as a disagreement, found by review)."""
    d = ("Distribution", layout_key(dist)) if isinstance(dist, Distribution) \
        else repr(_by_value(dist))
    return (d, repr(sorted((k, _by_value(v)) for k, v in kw.items())), repr(_rank_of(root)))


def _by_value(v):
    """``v`` with NumPy scalars as Python numbers and sequences as tuples
    (bools stay bools: ``True`` and ``1`` still differ)."""
    if isinstance(v, np.ndarray):
        return v.item() if v.ndim == 0 else tuple(_by_value(x) for x in v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return tuple(_by_value(x) for x in v)
    return v


def _rank_of(root):
    """``root`` as an int where it is an integer (``np.int64(1)`` names rank 1
    as ``1`` does: before, ranks passing the two disagreed; found by review),
    else as it is (a bool, a float: refused)."""
    if isinstance(root, (int, np.integer)) and not isinstance(root, bool):
        return int(root)
    return root


def _shape_dtype(info):
    return f"an array of shape {info[0]} and dtype {info[1]} ({info[1].str!r})"


def from_root(array, dist, comm, root, kw):
    """``DistArray.from_global(array, dist, comm, root=root, **kw)``'s block
    and Distribution: one allgather agrees on the arguments (shape and dtype
    from the root), one Alltoallw sends each rank its block (padding
    included)."""
    size, rank = comm.Get_size(), comm.Get_rank()
    info = key = error = None
    try:
        key = _argkey(dist, root, kw)
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
                or not 0 <= root < size:
            raise DapError(f"root must be a rank in [0, {size}) or None, not {root!r}")
        root = _rank_of(root)
        if array is not None:
            array = np.asarray(array)
            info = (array.shape, array.dtype)
            check_movable(array.dtype, "from_global")
        elif rank == root:
            raise DapError(f"rank {rank} is the root (root={root}) and passed None: the root "
                           f"passes the global array")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by allgather_checked
        error = exc
    # the fold's record first: ranks calling another operation meet it and raise
    agree_quick(comm, "from_global(root=)", None, "DistArray.from_global")
    everyone = allgather_checked(comm, (info, key), error, "DistArray.from_global")
    # every rank holds the same values now: every check below has one verdict
    groups = {}
    for r, (_i, k) in enumerate(everyone):
        groups.setdefault(k, []).append(r)
    if len(groups) > 1:
        lines = [f"  ranks {_ranges(rs)} passed dist/keywords/root {k[0][:60]} {k[1][:60]} "
                 f"root={k[2]}" for k, rs in groups.items()]
        raise DapError("DistArray.from_global: the ranks disagree on dist, keywords or root "
                       "(every rank must pass the same):\n" + "\n".join(lines))
    want = everyone[root][0]
    bad = [r for r, (i, _k) in enumerate(everyone) if i is not None and
           (i[0] != want[0] or i[1] != want[1])]
    if bad:
        raise DapError(f"DistArray.from_global: root {root} passed {_shape_dtype(want)}; "
                       f"ranks {_ranges(bad)} passed " +
                       "; ".join(f"rank {r}: {_shape_dtype(everyone[r][0])}" for r in bad[:8]) +
                       " (the other ranks pass None or the root's shape and dtype)")
    target = target_distribution(want[0], size, dist, what="DistArray.from_global", **kw)
    check_partition(target, "DistArray.from_global")
    block = agreed_call(comm, lambda: np.empty(target.local_shape(rank), want[1]),
                        "allocate:from_global", "DistArray.from_global")
    scatter_into(array if rank == root else None, block, target, comm, root)
    return block, target


def from_every_rank(array, dist, comm, kw):
    """``DistArray.from_global(array, dist, comm, **kw)`` with the array on
    every rank: this rank's block (padding filled from the global array) and
    the Distribution; one agreement on shape, dtype and any rank's error."""
    shape = dtype = d = block = error = None
    try:
        array = np.asarray(array)
        shape, dtype = array.shape, array.dtype
        if isinstance(dist, Distribution):
            if kw:
                raise DapError(f"{sorted(kw)} cannot be given with a Distribution as dist")
            if dist.shape != array.shape:
                raise DapError(f"the array has shape {array.shape}, the Distribution "
                               f"{dist.shape}")
            if dist.nprocs != comm.Get_size():
                raise DapError(f"the Distribution spans {dist.nprocs} processes, the "
                               f"communicator {comm.Get_size()}")
            d = dist
        else:
            d = Distribution.from_shape(array.shape, dist=dist, nprocs=comm.Get_size(), **kw)
        check_global_range(d)
        idx = [m.global_from_local(np.arange(m.local_size)) for m in d.maps(comm.Get_rank())]
        # every byte of each item, as gather and redistribute move them (a
        # structured dtype's copy skips the bytes between and after its
        # fields: before, the block held 0s there; found by review)
        src = raw_items(array) if array.dtype.names is not None and \
            not array.dtype.hasobject else array
        block = (src[np.ix_(*idx)] if idx else src.copy()).view(array.dtype)
    except Exception as exc:  # noqa: BLE001 - every rank raises it after agree_quick
        error = exc
    # one Allreduce of the fold's record (a rank in another operation meets it
    # there); the allgather that reports runs only on a failure or a disagreement
    agree_quick(comm, (shape, dtype, _argkey(dist, None, kw)), error, "DistArray.from_global",
                describe=_describe_every_rank)
    return block, d


def _describe_every_rank(v):
    """A rank's arguments to the every-rank ``from_global`` (or, from a rank
    in another call, whatever that call agrees on)."""
    if not (isinstance(v, tuple) and len(v) == 3 and isinstance(v[2], tuple)):
        return repr(v)[:120]
    if v[0] is None:
        return "no array"
    text = f"an array of shape {v[0]} and dtype {v[1]} ({v[1].str!r})"
    if v[2][:2] != ("None", "[]"):
        text += f", dist/keywords {v[2][0][:60]} {v[2][1][:60]}"
    return text
