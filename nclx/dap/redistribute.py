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
import hashlib
import io
import pickle

import numpy as np

from nclx.dap.collective import agree_same
from nclx.dap.fold import agree
from nclx.dap.distribution import Distribution
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.movetypes import block_type, element_type, held, segments
from nclx.dap.validate import DapError, normalize_dim_dict

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
            maps = [[map_from_dim_dict(dd) for dd in col] for col in dist._dims]
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


def check_partition(dist, what):
    """DapError unless each 'u' dimension's indices give every global index
    to exactly one grid coordinate (a move needs one owner per element)."""
    for d, col in enumerate(dist._dims):
        if col[0]["dist_type"] != "u":
            continue
        n = col[0]["size"]
        allidx = np.concatenate([dd["indices"] for dd in col]) if col else np.zeros(0, np.int64)
        counts = np.bincount(allidx[(allidx >= 0) & (allidx < n)], minlength=n)
        bad = np.flatnonzero(counts != 1)
        out = np.flatnonzero((allidx < 0) | (allidx >= n))
        if out.size:
            raise DapError(f"{what}: dimension {d} ('u'): index {int(allidx[out[0]])} is "
                           f"outside [0, {n})")
        if bad.size:
            g = int(bad[0])
            raise DapError(f"{what}: dimension {d} ('u'): global index {g} is owned by "
                           f"{int(counts[g])} grid coordinates; a move needs exactly one")


def _dim_segments(mine, other, receiving):
    """Segments of one dimension: a sender lists its owned elements that the
    receiver holds (padding included), in the receiver's local order; a
    receiver lists, in the same order, where they go in its buffer."""
    if receiving:
        return [s for piece in held(mine) for s in segments(piece, other)]
    return [s for piece in held(other) for s in segments(mine, piece)]


def _message_types(mine_maps, layout, peer, cache, strides, elem, MPI, receiving):
    """(datatype or None, byte offset) of what this rank exchanges with ``peer``."""
    pc = layout.coords(peer)
    if pc is None:
        return None, 0
    per_dim = []
    for d, mine in enumerate(mine_maps):
        key = (d, pc[d])
        if key not in cache:
            cache[key] = _dim_segments(mine, layout.maps[d][pc[d]], receiving)
        per_dim.append(cache[key])
    if any(not s for s in per_dim):
        return None, 0
    return block_type(per_dim, strides, elem, MPI)


def buffer_of(block):
    """``(buffer, byte strides)``: a C-contiguous array over ``block``'s
    memory and the strides that address ``block`` in it -- the block itself,
    or the base of a transposed view (no copy); any other layout is copied
    (the one case a move copies: MPI addresses one contiguous buffer)."""
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
    return buffer_of(np.ascontiguousarray(block))


class _Plan:
    """Counts, byte displacements and datatypes of both sides of one move."""

    def __init__(self, comm, shapes, strides, src, dst, dtype):
        MPI = _mpi()
        rank, size = comm.Get_rank(), comm.Get_size()
        self.elem, self.elem_made = element_type(dtype, MPI)
        self.types, self.sides, self.cacheable = [], [], True
        for shape, st, mine_layout, other, receiving in ((shapes[0], strides[0], src, dst, False),
                                                         (shapes[1], strides[1], dst, src, True)):
            counts, displs, dts = [0] * size, [0] * size, [self.elem] * size
            mc = mine_layout.coords(rank)
            if mc is not None and shape is not None and 0 not in shape:
                mine_maps = [mine_layout.maps[d][c] for d, c in enumerate(mc)]
                cache = {}
                for p in range(size):
                    t, off = _message_types(mine_maps, other, p, cache, st, self.elem, MPI,
                                            receiving)
                    if t is not None:
                        self.types.append(t)
                        counts[p], displs[p], dts[p] = 1, off, t
                # index lists ('idx' segments) can be long: such plans are not kept
                self.cacheable &= all(seg[0] == "vec" for segs in cache.values() for seg in segs)
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


_PLANS = {}          # key -> _Plan, oldest first
_MAX_PLANS = 16


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
    full = None if key is None else (key, rank, size, dtype.str, shapes, src_strides,
                                     dst_strides)
    plan = _PLANS.get(full) if full is not None else None
    keep = plan is not None
    if plan is None:
        plan = _Plan(comm, shapes, (src_strides, dst_strides), src, dst, dtype)
        if full is not None and plan.cacheable:
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.pop(next(iter(_PLANS))).free()
            _PLANS[full] = plan
            keep = True
    try:
        bufs = [b if b is not None and b.size else np.zeros(1, dtype) for b in (src_buf, dst_buf)]
        comm.Alltoallw([bufs[0], *plan.sides[0]], [bufs[1], *plan.sides[1]])
    finally:
        if not keep:
            plan.free()


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


def layout_key(dist):
    """A short fingerprint of a Distribution (every rank must target the same;
    kept on the Distribution, which nclx never changes once built)."""
    k = getattr(dist, "_nclx_key", None)
    if k is None:
        k = dist._nclx_key = _fingerprint(dist)
    return k


def _fingerprint(dist):
    h = hashlib.sha1()
    for col in dist._dims:
        for dd in col:
            for k in sorted(dd):
                v = dd[k]
                h.update(k.encode() + (np.asarray(v).tobytes() if isinstance(v, np.ndarray)
                                       else repr(v).encode()))
    return (dist.shape, dist.dist, dist.grid_shape, h.hexdigest())


def _array_bytes(dtype, shape, data):
    """Names arrays in :class:`_Canonical`'s pickles (never called)."""


class _Canonical(pickle.Pickler):
    """Pickles arrays by dtype, shape and C-order bytes, so equal arrays in
    other memory orders (Fortran order, views) pickle alike."""

    def reducer_override(self, obj):
        if isinstance(obj, np.ndarray) and not obj.dtype.hasobject:
            return _array_bytes, (obj.dtype, obj.shape, obj.tobytes())
        return NotImplemented


def agree_quick(comm, value, error, what, describe=repr):
    """:func:`nclx.dap.collective.agree_same` in one ``Allreduce`` on success:
    the fixed-size record of :func:`nclx.dap.fold.agree` carrying a digest
    of ``value`` (so ranks that called a different operation meet in the
    same collective and are told so); only on a failure or a disagreement
    does ``agree_same`` run to report every rank's error or value."""
    try:                     # every byte of arrays (a repr abbreviates large ones)
        buf = io.BytesIO()
        _Canonical(buf, protocol=4).dump((what, value))
        raw = buf.getvalue()
    except Exception:  # noqa: BLE001 - an unpicklable value: its text
        raw = repr((what, value)).encode()
    digest = hashlib.sha1(raw).hexdigest()
    if not agree(comm, digest, error, what):     # raises where another operation met it
        agree_same(comm, value, error, what, describe)
        raise DapError(f"{what}: the ranks disagree")      # digests differ: values too


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
        if len(_TARGETS) >= _MAX_PLANS:
            _TARGETS.pop(next(iter(_TARGETS)))
        _TARGETS[key] = target
    return target


_TARGETS = {}        # from_shape's Distributions by their arguments (reused: immutable)


def check_movable(dtype, what):
    if np.dtype(dtype).hasobject:
        raise DapError(f"{what}: dtype {dtype} holds Python objects, which cannot be sent")


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
    comm = da.comm
    target = error = None
    try:
        check_movable(da.dtype, "redistribute")
        target = target_distribution(da.shape, comm.Get_size(), dist, grid_shape=grid_shape,
                                     padding=padding, block_size=block_size, periodic=periodic)
        check_partition(da.distribution, "redistribute: the source distribution")
        check_partition(target, "redistribute: the target distribution")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_quick
        error = exc
    agree_quick(comm, None if target is None else layout_key(target), error, "redistribute",
                describe=lambda k: "no target" if k is None else
                f"target shape {k[0]} dist {k[1]} grid {k[2]} (fingerprint {k[3][:10]})")
    lay = Layout.of(target)
    mine = lay.coords(comm.Get_rank())
    out = np.empty(tuple(lay.maps[d][c].local_size for d, c in enumerate(mine)), da.dtype)
    move(comm, da._block, Layout.of(da.distribution), out, lay,
         key=(layout_key(da.distribution), layout_key(target)))
    return type(da)(out, target, comm)
