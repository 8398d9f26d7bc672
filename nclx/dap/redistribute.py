"""Moving a distributed array's elements to another layout: one
``MPI_Alltoallw`` with derived datatypes.

A *layout* says, per dimension and grid coordinate, which global indices a
coordinate owns (a map of :mod:`nclx.dap.maps`), and which grid coordinates
each rank has (``None``: the rank owns nothing).  A move sends, to every
peer, the elements of this rank's source block that the peer owns in the
target layout, and receives into this rank's target block the elements each
peer owns in the source -- described in place by one datatype per peer and
side (:mod:`nclx.dap.movetypes`): no packing copy, no per-element index
array, messages of any size (mpi4py 4's large-count calls).

:func:`redistribute` moves a DistArray to another Distribution;
:mod:`nclx.dap.gather` moves between a Distribution and "one rank (or
every rank) holds everything".
"""
import sys
import threading

import numpy as np

from nclx._ncl import forksafe as _forksafe
from nclx.dap.agreekeys import agree_quick, dtype_key, layout_key, layout_words
from nclx.dap.distribution import Distribution
from nclx.dap.iotypes import raw_items
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.movetypes import block_type, element_type, held, segments
from nclx.dap.movewindows import (has_no_elements, indexed_dim, window_segments, window_settings,
                                  windows)
from nclx.dap.plancache import PlanCache
from nclx.dap.validate import DapError, normalize_dim_dict, require_distarray

__all__ = ["redistribute", "target_distribution", "move", "move_many", "Layout", "layout_key",
           "check_partition", "check_movable", "agree_quick"]


def _mpi():
    from mpi4py import MPI
    return MPI


class Layout:
    """Maps per dimension and grid coordinate, and each rank's coordinates."""

    def __init__(self, maps, coords):
        self.maps, self.coords = maps, coords      # coords(rank) -> tuple or None

    @classmethod
    def of(cls, dist):
        """The layout of a Distribution (kept on it)."""
        lay = getattr(dist, "_nclx_layout", None)
        if lay is None:
            maps = [[dist.column_map(d, c) for c in range(len(col))]
                    for d, col in enumerate(dist._dims)]
            lay = dist._nclx_layout = cls(maps, dist.coords_from_rank)
        return lay

    @classmethod
    def whole(cls, shape, holders):
        """Every rank in ``holders`` (a set, or None for all) owns the whole array."""
        maps = [[map_from_dim_dict(normalize_dim_dict(dict(
            dist_type="b", size=n, start=0, stop=n, proc_grid_size=1, proc_grid_rank=0), d))]
            for d, n in enumerate(shape)]
        zero = (0,) * len(shape)
        return cls(maps, lambda r: zero if holders is None or r in holders else None)


_CHUNK = 1 << 16        # global indices a partition check counts at once


def check_partition(dist, what):
    """DapError unless each 'u' dimension's indices give every global index
    to exactly one grid coordinate (a move needs one owner per element).

    Counted in ranges of global indices from the layout's sorted index
    tables (memory of one range, not of the dimension); a Distribution that
    passed is not checked again (nclx never changes one once built)."""
    if getattr(dist, "_nclx_partitioned", False):
        return
    for d, col in enumerate(dist._dims):
        if col[0]["dist_type"] != "u":
            continue
        n = col[0]["size"]
        for dd in col:                        # the first bad index in rank order
            idx = np.asarray(dd["indices"])
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                for i in range(0, idx.size, _CHUNK):
                    part = idx[i:i + _CHUNK]
                    bad = (part < 0) | (part >= n)
                    if bad.any():
                        raise DapError(f"{what}: dimension {d} ('u'): index "
                                       f"{int(part[np.argmax(bad)])} is outside [0, {n})")
        tables = [m._sorted for m in Layout.of(dist).maps[d]]
        for a in range(0, n, _CHUNK):
            b = min(n, a + _CHUNK)
            counts = np.zeros(b - a, np.int64)
            for s in tables:
                lo, hi = np.searchsorted(s, (a, b))
                counts += np.bincount(s[lo:hi] - a, minlength=b - a)
            bad = np.flatnonzero(counts != 1)
            if bad.size:
                g = a + int(bad[0])
                raise DapError(f"{what}: dimension {d} ('u'): global index {g} is owned by "
                               f"{int(counts[bad[0]])} grid coordinates; a move needs exactly one")
    dist._nclx_partitioned = True


def _dim_segments(mine, other, receiving, window=None):
    """Segments of one dimension: a sender lists its owned elements that the
    receiver holds (padding included), in the receiver's local order; a
    receiver lists, in the same order, where they go in its buffer.  With
    a ``window`` (ranges ``[(a, b), ...]``), only the global indices in them."""
    seg = segments if window is None else (lambda m, o: window_segments(m, o, window))
    if receiving:
        return [s for piece in held(mine) for s in seg(piece, other)]
    return [s for piece in held(other) for s in seg(mine, piece)]


def _message_types(mine_maps, layout, peer, caches, strides, elem, MPI, receiving, window):
    """(datatype or None, byte offset) of what this rank exchanges with ``peer``."""
    pc = layout.coords(peer)
    if pc is None:
        return None, 0
    per_dim = []
    for d, mine in enumerate(mine_maps):
        key = (d, pc[d])
        cut = window is not None and d == window[0]
        cache = caches[1] if cut else caches[0]
        if key not in cache:
            cache[key] = _dim_segments(mine, layout.maps[d][pc[d]], receiving,
                                       window[1] if cut else None)
        per_dim.append(cache[key])
    if any(not s for s in per_dim):
        return None, 0
    return block_type(per_dim, strides, elem, MPI)


def buffer_of(block):
    """``(buffer, byte strides)``: a C-contiguous array over ``block``'s
    memory and the strides that address ``block`` in it -- the block itself,
    or the base of a transposed view (no copy); any other layout is copied
    (the one case a move copies: MPI addresses one contiguous buffer), every
    byte of each item."""
    if block is None:
        return None, None
    strides = list(block.strides)
    for d, n in enumerate(block.shape):
        if n <= 1:
            strides[d] = block.itemsize       # never stepped over
    if block.flags.c_contiguous:
        return block, tuple(strides)
    order = sorted(range(block.ndim), key=lambda d: -block.strides[d])
    base = block.transpose(order)
    if base.flags.c_contiguous and min(block.strides, default=1) > 0:
        return base, tuple(strides)
    # every byte of each item: NumPy's copy of a structured dtype copies its
    # fields only, and the bytes between them came from np.empty (a gather
    # of a strided block sent them: found by review)
    if block.dtype.names is not None and not block.dtype.hasobject:
        return buffer_of(np.ascontiguousarray(raw_items(block)).view(block.dtype))
    return buffer_of(np.ascontiguousarray(block))


class _Plan:
    """Counts, byte displacements and datatypes of both sides of one move."""

    def __init__(self, comm, shapes, strides, src, dst, dtype, window=None, kept=None):
        """``window``: ``(dimension, ranges)``, only the elements whose global
        index along that dimension lies in one of the ``ranges``
        ``[(a, b), ...]``; ``kept``: the two sides' segments of the other
        dimensions, shared by the windows."""
        MPI = _mpi()
        rank, size = comm.Get_rank(), comm.Get_size()
        self.elem, self.elem_made = element_type(dtype, MPI)
        self.types, self.sides, self.cacheable = [], [], window is None
        kept = kept or ({}, {})
        for shape, st, mine_layout, other, receiving in ((shapes[0], strides[0], src, dst, False),
                                                         (shapes[1], strides[1], dst, src, True)):
            counts, displs, dts = [0] * size, [0] * size, [self.elem] * size
            mc = mine_layout.coords(rank)
            if mc is not None and shape is not None and 0 not in shape:
                mine_maps = [mine_layout.maps[d][c] for d, c in enumerate(mc)]
                caches = (kept[receiving], {})
                for p in range(size):
                    t, off = _message_types(mine_maps, other, p, caches, st, self.elem, MPI,
                                            receiving, window)
                    if t is not None:
                        self.types.append(t)
                        counts[p], displs[p], dts[p] = 1, off, t
                # index lists ('idx' segments) can be long: such plans are not kept
                self.cacheable &= all(seg[0] == "vec" for c in caches for segs in c.values()
                                      for seg in segs)
            self.sides.append(((counts, displs), dts))

    def free(self):
        from mpi4py import MPI
        if MPI.Is_finalized():
            return
        for t in self.types:
            t.Free()
        if self.elem_made:
            self.elem.Free()
        self.types = []


_MAX_PLANS = 16
_PLANS = PlanCache(_MAX_PLANS)     # kept plans, shared by threads


def move(comm, src_block, src, dst_block, dst, key=None):
    """One Alltoallw: this rank's owned elements of ``src_block`` (in layout
    ``src``) into ``dst_block`` (layout ``dst``, padding included) on their
    target owners.  ``dst_block`` must be C-contiguous (or a transposed view
    of a C-contiguous array); a rank without coordinates in a layout passes
    None as that block.

    With a ``key`` naming both layouts, the plan (datatypes, counts,
    displacements) is kept for the next move of the same layouts, dtype and
    block strides (the last 16 plans whose datatypes list no indices)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    dtype = (src_block if src_block is not None else dst_block).dtype
    src_buf, src_strides = buffer_of(src_block)
    dst_buf, dst_strides = buffer_of(dst_block)
    if dst_buf is not None and not np.may_share_memory(dst_buf, dst_block) and dst_block.size:
        raise DapError("move: the target block must be contiguous")
    shapes = tuple(None if b is None else b.shape for b in (src_block, dst_block))
    bufs = [b if b is not None and b.size else np.zeros(1, dtype) for b in (src_buf, dst_buf)]
    dim = indexed_dim(src, dst)
    if dim is not None:
        # index lists: one Alltoallw per window of bounded memory (movewindows).
        # Each rank cuts the windows alone: one Allreduce checks the settings agree.
        settings = error = None
        try:
            settings = window_settings()     # read once: another thread may change them
        except Exception as exc:  # noqa: BLE001 - a bad setting: raised on every rank
            error = exc
        agree_quick(comm, settings, error, "move: window settings")
        if has_no_elements(src):
            return
        kept = ({}, {})
        for ranges in windows(src, dst, dim, size, dtype.itemsize, settings):
            plan = _Plan(comm, shapes, (src_strides, dst_strides), src, dst, dtype,
                         window=(dim, ranges), kept=kept)
            try:
                comm.Alltoallw([bufs[0], *plan.sides[0]], [bufs[1], *plan.sides[1]])
            finally:
                plan.free()
        return
    full = None if key is None else (key, rank, size, dtype.str, shapes, src_strides,
                                     dst_strides)
    plan = _PLANS.take(full) if full is not None else None
    if plan is None:
        built = _Plan(comm, shapes, (src_strides, dst_strides), src, dst, dtype)
        plan = _PLANS.offer(full, built, keep=full is not None and built.cacheable)
    try:
        comm.Alltoallw([bufs[0], *plan.sides[0]], [bufs[1], *plan.sides[1]])
    finally:
        _PLANS.release(plan)


def move_many(comm, sources, dst_block, dst):
    """Like :func:`move` for several sources ``[(block, layout), ...]`` of one
    dtype landing in one target block: still one Alltoallw, each peer's
    message a struct of the sources' datatypes at their absolute addresses
    (sent from ``MPI.BOTTOM``), received in the same order."""
    if len(sources) == 1:
        return move(comm, sources[0][0], sources[0][1], dst_block, dst)
    MPI = _mpi()
    size = comm.Get_size()
    dst_buf, dst_strides = buffer_of(dst_block)
    plans, made, alive = [], [], []          # alive: the buffers whose addresses are sent
    try:
        send = [[] for _ in range(size)]
        recv = [[] for _ in range(size)]
        for block, layout in sources:
            buf, strides = buffer_of(block)
            alive.append(buf)
            shapes = (None if block is None else block.shape, dst_block.shape)
            plan = _Plan(comm, shapes, (strides, dst_strides), layout, dst, dst_block.dtype)
            plans.append(plan)
            base = MPI.Get_address(buf) if buf is not None and buf.size else 0
            for out, side, at in ((send, plan.sides[0], base), (recv, plan.sides[1], 0)):
                (counts, displs), dts = side
                for p in range(size):
                    if counts[p]:
                        out[p].append((at + displs[p], dts[p]))
        sides = []
        for parts in (send, recv):
            counts, dts = [0] * size, [plans[0].elem] * size
            for p, entries in enumerate(parts):
                if entries:
                    t = MPI.Datatype.Create_struct([1] * len(entries), [e[0] for e in entries],
                                                   [e[1] for e in entries])
                    t.Commit()
                    made.append(t)
                    counts[p], dts[p] = 1, t
            sides.append(((counts, [0] * size), dts))
        rbuf = dst_buf if dst_buf.size else np.zeros(1, dst_block.dtype)
        comm.Alltoallw([MPI.BOTTOM, *sides[0]], [rbuf, *sides[1]])
    finally:
        for t in made:
            t.Free()
        for plan in plans:
            plan.free()


def target_distribution(shape, nprocs, dist=None, *, grid_shape=None, padding=None,
                        block_size=None, periodic=None, what="redistribute"):
    """The Distribution a move to ``dist`` (with the keywords) makes:
    ``Distribution.from_shape(shape, dist, ..., nprocs=nprocs)``, or ``dist``
    itself when it is a Distribution (checked against ``shape`` and
    ``nprocs``; the keywords must then be None)."""
    kw = dict(grid_shape=grid_shape, padding=padding, block_size=block_size, periodic=periodic)
    if isinstance(dist, Distribution):
        given = sorted(k for k, v in kw.items() if v is not None)
        if given:
            raise DapError(f"{what}: {given} cannot be given with a Distribution as dist")
        if dist.shape != tuple(shape):
            raise DapError(f"{what}: the array has shape {tuple(shape)}, the target "
                           f"Distribution {dist.shape}")
        if dist.nprocs != nprocs:
            raise DapError(f"{what}: the target Distribution spans {dist.nprocs} processes, "
                           f"the communicator {nprocs}")
        return dist
    key = repr((tuple(shape), nprocs, dist, sorted(kw.items())))
    target = _TARGETS.get(key)
    if target is None:
        target = Distribution.from_shape(shape, dist, nprocs=nprocs, **kw)
        with _TARGETS_LOCK:           # threads move at once (each on its communicator)
            while len(_TARGETS) >= _MAX_PLANS:
                _TARGETS.pop(next(iter(_TARGETS)))
            _TARGETS[key] = target
    return target


_TARGETS = {}        # from_shape's Distributions by their arguments (reused: immutable)
_TARGETS_LOCK = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_TARGETS_LOCK")   # free in a fork's child


def check_movable(dtype, what):
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise DapError(f"{what}: dtype {dtype} holds Python objects, which cannot be sent")
    if dtype.itemsize == 0:
        # before, from_global(root=) of such items raised the internal "move:
        # the target block must be contiguous" (found by review)
        raise DapError(f"{what}: dtype {dtype.str} has items of 0 bytes: a DistArray cannot "
                       f"hold them")


def redistribute(da, dist=None, *, grid_shape=None, padding=None, block_size=None,
                 periodic=None):
    """A new DistArray with ``da``'s global values in another distribution.

    ``dist`` and the keywords are those of :meth:`Distribution.from_shape`
    (the result's distribution is exactly
    ``Distribution.from_shape(da.shape, dist, grid_shape=..., padding=...,
    block_size=..., periodic=..., nprocs=da.comm.Get_size())``), or ``dist``
    is a target Distribution of ``da.shape`` (any map, 'u' included, whose
    'u' dimensions give each index one owner).  Collective: one agreement
    (every rank must ask for the same target; any rank's error is raised on
    every rank as a DapError) and one ``Alltoallw``, which also fills the
    result's communication padding from the owners."""
    require_distarray(da, "redistribute", " (DistArray.from_global makes one)")   # review 27
    comm = da.comm
    target = error = None
    source = layout_key(da.distribution)
    try:
        check_movable(da.dtype, "redistribute")
        target = target_distribution(da.shape, comm.Get_size(), dist, grid_shape=grid_shape,
                                     padding=padding, block_size=block_size, periodic=periodic)
        check_partition(da.distribution, "redistribute: the source distribution")
        check_partition(target, "redistribute: the target distribution")
        lay = Layout.of(target)
        mine = lay.coords(comm.Get_rank())
        # allocated before the agreement: a MemoryError here is every rank's
        out = np.empty(tuple(lay.maps[d][c].local_size for d, c in enumerate(mine)), da.dtype)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_quick
        error = exc
    # the source too: ranks that built the array with different distributions
    # (a 'u' permutation drawn per rank) would move garbage or wait forever
    # and the dtype: an elementwise call with per-rank scalars can give ranks
    # different dtypes, whose bytes the move would reinterpret
    # the target's keywords in words too: a disagreement names them (padding=...)
    agree_quick(comm, (source, None if target is None else layout_key(target),
                       dtype_key(da.dtype), None if target is None else layout_words(target)),
                error, "redistribute", describe=_describe_move)
    move(comm, da._block, Layout.of(da.distribution), out, lay, key=(source, layout_key(target)))
    return type(da)._of(out, target, comm)     # agreed on the target above


def _describe_move(keys):
    """A rank's (source, target) layout keys in a disagreement (another
    operation's value as it is)."""
    def one(k):
        return f"shape {k[0]} dist {k[1]} grid {k[2]} (fingerprint {k[3][:10]})"
    source, target, dtype, words = keys
    return f"source {one(source)}, " + ("no target" if target is None else
                                         f"target {one(target)} [{words}]") + f", dtype {dtype[1]}"
