"""Halo exchange for block-distributed arrays: fill every communication-
padding cell of a rank's local block from the rank that owns it.

The local block is cut, per dimension, into three segments: the lower
communication padding, the rest (boundary padding and owned cells, "mid"),
and the upper communication padding.  Every combination of segments other
than all-"mid" is one region, and it is received whole, corners and edges
included, straight from the rank that owns those cells: the grid neighbour
one step down (lower segment), up (upper) or at the same coordinate (mid) in
each dimension, wrapping on periodic dimensions (a rank can be its own
neighbour).  All regions travel at once (``Isend``/``Irecv``), so
:func:`start_halo_exchange` returns before any data arrives and computation
on the interior can overlap.  A cell that is boundary padding in every
dimension where it is padding lies in no region and is never written.

Plans are checked collectively (every rank agrees before the first
point-to-point message, and every rank raises the same :class:`DapError`
otherwise) and cached per DistArray layout, so later exchanges only move
data.  Regions travel as MPI subarray datatypes over the block (persistent
requests), or packed into contiguous buffers where the block is not
C-contiguous; the choice was measured (docs/dap.md).
"""
import itertools
import weakref

import numpy as np

from nclx.dap.halocomm import agree_plan, shared_comm, take_tags
from nclx.dap.iotypes import raw_items
from nclx.dap.validate import DapError, require_distarray

__all__ = ["exchange_halos", "start_halo_exchange", "HaloRequest", "HaloPlan"]

_LO, _MID, _HI = 0, 1, 2
_STEP = {_LO: -1, _MID: 0, _HI: 1}


def _padding(m):
    """A map's communication padding; cyclic and 'u' maps have none."""
    return tuple(getattr(m, "comm_padding", (0, 0)))


def _segments(m):
    """Local slices of the lower padding, the mid part and the upper padding."""
    lo, hi = _padding(m)
    n = m.local_size
    return {_LO: slice(0, lo), _MID: slice(lo, n - hi), _HI: slice(n - hi, n)}


def _neighbour(coords, grid, periodic, region):
    """Grid coordinates of the rank that owns ``region`` of the rank at
    ``coords`` (None when a step leaves a non-periodic grid)."""
    out = []
    for c, g, per, s in zip(coords, grid, periodic, region):
        c2 = c + _STEP[s]
        if not 0 <= c2 < g:
            if not per:
                return None
            c2 %= g
        out.append(c2)
    return tuple(out)


def _source_slices(src_map, dst_map, region):
    """What the owner sends for one region of the receiver: its last owned
    cells for a lower segment, its first for an upper one, the same mid part."""
    out = []
    for s, sm, dm in zip(region, src_map, dst_map):
        lo, hi = _padding(sm)
        if s == _LO:
            width = _padding(dm)[0]
            out.append(slice(sm.local_size - hi - width, sm.local_size - hi))
        elif s == _HI:
            width = _padding(dm)[1]
            out.append(slice(lo, lo + width))
        else:
            out.append(slice(lo, sm.local_size - hi))
    return tuple(out)


def _tag(region):
    t = 0
    for s in region:
        t = t * 3 + s
    return t


def _size(slices):
    n = 1
    for s in slices:
        n *= max(0, s.stop - s.start)
    return n


def _check_column(dist, d):
    """The cross-rank rules of dimension ``d`` that an exchange relies on."""
    col = [dist.maps(dist.rank_from_coords(tuple(c if k == d else 0 for k in range(dist.ndim))))[d]
           for c in range(dist.grid_shape[d])]
    if col[0].dist_type != "b":
        if all(_padding(m) == (0, 0) for m in col):
            return          # nothing to exchange along it (a 'c' beside a padded 'b')
        raise DapError(f"halo exchange: dimension {d} has dist_type {col[0].dist_type!r}; only "
                       "block ('b') dimensions have padding to exchange")
    g = len(col)
    for c, m in enumerate(col):
        mid = m.local_size - sum(m.comm_padding)
        for side, step in ((0, -1), (1, 1)):
            width = m.comm_padding[side]
            if not width:
                continue
            nb = col[(c + step) % g]
            nb_mid = nb.local_size - sum(nb.comm_padding)
            if width > nb_mid:
                raise DapError(f"halo exchange: dimension {d}, grid rank {c}: "
                               f"{'lower' if side == 0 else 'upper'} padding {width} is wider than "
                               f"the {nb_mid} cells grid rank {(c + step) % g} holds")
        if mid < 0:
            raise DapError(f"halo exchange: dimension {d}, grid rank {c}: padding wider than "
                           "its block")


class HaloPlan:
    """Regions to receive and send for one rank's local block (cached)."""

    def __init__(self, dist, rank, shape, dtype):
        for d in range(dist.ndim):
            _check_column(dist, d)
        coords = dist.coords_from_rank(rank)
        grid = dist.grid_shape
        maps = dist.maps(rank)
        if tuple(m.local_size for m in maps) != tuple(shape):
            raise DapError(f"halo exchange: rank {rank}'s local block has shape {tuple(shape)}, "
                           f"its dim_data gives {tuple(m.local_size for m in maps)}")
        periodic = tuple(bool(getattr(m, "periodic", False)) for m in maps)
        segs = [_segments(m) for m in maps]
        self.recvs, self.sends = [], []
        self.dtype = np.dtype(dtype)
        for region in itertools.product((_LO, _MID, _HI), repeat=dist.ndim):
            if all(s == _MID for s in region):
                continue
            # what this rank receives for the region
            mine = tuple(segs[d][s] for d, s in enumerate(region))
            if _size(mine):
                src = _neighbour(coords, grid, periodic, region)
                if src is None:          # only comm padding has a neighbour
                    raise DapError(f"halo exchange: rank {rank} has padding toward a missing "
                                   f"neighbour (region {region})")
                src_rank = dist.rank_from_coords(src)
                want = _source_slices(dist.maps(src_rank), maps, region)
                if tuple(s.stop - s.start for s in want) != tuple(s.stop - s.start for s in mine):
                    raise DapError(f"halo exchange: rank {rank}, region {region}: receives "
                                   f"{[s.stop - s.start for s in mine]} cells, grid rank {src} "
                                   f"would send {[s.stop - s.start for s in want]}")
                shape_r = tuple(s.stop - s.start for s in mine)
                self.recvs.append((src_rank, _tag(region), mine, np.empty(shape_r, self.dtype)))
            # what this rank sends to the rank that receives this region from it
            back = tuple({_LO: _HI, _HI: _LO, _MID: _MID}[s] for s in region)
            dst = _neighbour(coords, grid, periodic, back)
            if dst is None:
                continue
            dst_rank = dist.rank_from_coords(dst)
            dst_maps = dist.maps(dst_rank)
            theirs = tuple(_segments(dst_maps[d])[s] for d, s in enumerate(region))
            if not _size(theirs):
                continue
            out = _source_slices(maps, dst_maps, region)
            shape_s = tuple(s.stop - s.start for s in out)
            self.sends.append((dst_rank, _tag(region), out, np.empty(shape_s, self.dtype)))


def _free_plan(plan):
    """Free a plan's persistent requests and datatypes (before MPI_Finalize:
    weakref.finalize hooks run before mpi4py's own at exit)."""
    from mpi4py import MPI
    if MPI.Is_finalized():
        return
    for req in getattr(plan, "persistent", None) or ():
        if req != MPI.REQUEST_NULL:
            req.Free()
    for group in getattr(plan, "types", None) or ():
        for t in group:
            t.Free()
    if getattr(plan, "own_comm", False):
        plan.comm.Free()
    plan.persistent = plan.types = plan.comm = None     # else the communicator is shared


class HaloRequest:
    """An exchange in flight: :meth:`wait` completes it (idempotent)."""

    def __init__(self, da, plan, reqs, mpi, unpack=True):
        # the request keeps its DistArray (and so the plan's requests) alive
        self._da, self._block, self._plan, self._reqs, self._mpi = da, da._block, plan, reqs, mpi
        self._unpack = unpack
        self.done = False

    def __del__(self):
        # a dropped request still completes (the array must not stay locked)
        try:
            if not self.done and not self._mpi.Is_finalized():
                self.wait()
        except Exception:  # noqa: BLE001 - nothing can be raised from __del__
            pass

    def wait(self):
        if self.done:
            return
        self._mpi.Request.Waitall(self._reqs)
        if self._unpack:
            block = _items(self._block)
            for _rank, _tag, slices, buf in self._plan.recvs:
                block[slices] = _items(buf)
        self.done = True
        self._plan.in_flight = False

    def test(self):
        """True when every message has arrived (then :meth:`wait` is free)."""
        if not self.done and self._mpi.Request.Testall(self._reqs):
            self.wait()
        return self.done


def _typed(dtype, MPI):
    """True when MPI has a native type for ``dtype`` (numeric, native byte
    order) that moves all of its bytes: not long doubles, whose MPI type
    moves the value's 10 bytes of x86-64's 16 (a halo cell kept the rest of
    its old bytes; found by review)."""
    return dtype.kind in "biufc" and dtype.isnative and dtype.char in MPI._typedict and \
        dtype.char not in "gG"


def _plan_for(da, refused=None):
    """The cached plan of ``da``'s layout; built and agreed on collectively.
    ``refused``: this rank's error in the call's arguments, raised on every
    rank by a first exchange's agreement.

    Everything that could fail on one rank only (the layout, a read-only
    block) is checked here, before the agreement, and the plan gets its own
    communicator (``comm.Dup()``) so that its messages never meet the user's."""
    from mpi4py import MPI

    block = da._block
    key = (block.shape, block.strides, block.dtype.str, block.__array_interface__["data"][0])
    cached = getattr(da, "_halo_plan", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    plan, error = None, None
    try:
        if refused is not None:
            raise refused
        plan = HaloPlan(da.distribution, da.comm.Get_rank(), block.shape, block.dtype)
        if plan.recvs and not block.flags.writeable:
            raise DapError(f"halo exchange: rank {da.comm.Get_rank()}'s local block is "
                           "read-only and has padding to fill")
        # subarray datatypes where MPI types the elements and the block is
        # C-contiguous; raw bytes through packed buffers otherwise
        plan.datatype_ok = block.flags.c_contiguous and _typed(block.dtype, MPI)
    except Exception as exc:  # noqa: BLE001 - a MemoryError too: raised on every rank
        error = exc
    agree_plan(da, error)            # raises the same DapError on every rank
    # after the agreement: every rank takes its range, or none does (the
    # ranks' counters stay equal)
    base = take_tags(da.comm, 3 ** da.distribution.ndim, MPI)
    if base is None:                 # more regions than tags: a communicator of its own
        plan.comm, plan.own_comm, base = da.comm.Dup(), True, 0
    else:
        plan.comm = shared_comm(da.comm)
    plan.recvs = [(r, t + base, sl, b) for r, t, sl, b in plan.recvs]
    plan.sends = [(r, t + base, sl, b) for r, t, sl, b in plan.sends]
    if cached is not None:
        cached[2].detach()
        _free_plan(cached[1])
    da._halo_plan = (key, plan, weakref.finalize(da, _free_plan, plan))
    return plan


def _subarray(block, slices, MPI):
    """An MPI subarray datatype for ``block[slices]`` (C-contiguous blocks)."""
    base = MPI._typedict[block.dtype.char]
    dt = base.Create_subarray(list(block.shape), [s.stop - s.start for s in slices],
                              [s.start for s in slices], order=MPI.ORDER_C)
    dt.Commit()
    return dt


def _datatypes(plan, block, MPI):
    """Subarray datatypes of the plan's regions (built once, kept with the plan)."""
    if getattr(plan, "types", None) is None:
        plan.types = ([_subarray(block, s, MPI) for _r, _t, s, _b in plan.recvs],
                      [_subarray(block, s, MPI) for _r, _t, s, _b in plan.sends])
    return plan.types


def start_halo_exchange(da, method=None):
    """Post the exchange of ``da``'s communication padding; returns a
    :class:`HaloRequest` whose ``wait()`` completes it.

    ``method``: ``"datatype"`` (MPI subarray datatypes over the block
    itself, persistent requests made once per plan; the default for
    C-contiguous blocks of MPI-typed dtypes) or ``"packed"`` (regions copied
    to and from contiguous buffers; the default otherwise).  The default was
    picked by measurement (docs/dap.md)."""
    from mpi4py import MPI
    require_distarray(da, "halo exchange")
    bad = None
    if method not in (None, "packed", "datatype"):
        bad = DapError(f"halo exchange method={method!r}: 'packed' or 'datatype'")
    # a first exchange agrees on the plan: a bad method on one rank is raised
    # on every rank there (before, checked after it: the others hung)
    plan = _plan_for(da, bad)
    if bad is not None:
        # a later exchange does not agree: this rank does its part with the
        # default method (the others are not left waiting), then raises
        start_halo_exchange(da).wait()
        raise bad
    comm, block = plan.comm, da._block
    if getattr(plan, "in_flight", False):
        raise DapError("halo exchange: an exchange of this DistArray is in flight; wait() for "
                       "it before starting another")
    if plan.recvs and not block.flags.writeable:
        # made read-only since the plan was built: this rank still sends and
        # receives (the others wait for its messages), into the plan's own
        # buffers, and the block is left as it is
        reqs = [comm.Irecv(_raw(buf, MPI), source=src, tag=tag)
                for src, tag, _s, buf in plan.recvs]
        for dst, tag, slices, buf in plan.sends:
            np.copyto(_items(buf), _items(block[slices]))
            reqs.append(comm.Isend(_raw(buf, MPI), dest=dst, tag=tag))
        MPI.Request.Waitall(reqs)
        raise DapError(f"halo exchange: rank {da.comm.Get_rank()}'s local block is read-only "
                       f"and has padding to fill (it was left unchanged; the other ranks "
                       f"received their cells)")
    # 'datatype' falls back to packed bytes on a rank whose block cannot use
    # it (the two transports carry the same bytes, so ranks may differ)
    if method != "packed" and plan.datatype_ok:
        if getattr(plan, "persistent", None) is None:     # made once, started each time
            rtypes, stypes = _datatypes(plan, block, MPI)
            plan.persistent = (
                [comm.Recv_init([block, 1, t], source=src, tag=tag)
                 for (src, tag, _s, _b), t in zip(plan.recvs, rtypes)]
                + [comm.Send_init([block, 1, t], dest=dst, tag=tag)
                   for (dst, tag, _s, _b), t in zip(plan.sends, stypes)])
        reqs = plan.persistent
        MPI.Prequest.Startall(reqs)
        plan.in_flight = True
        return HaloRequest(da, plan, reqs, MPI, unpack=False)
    reqs = [comm.Irecv(_raw(buf, MPI), source=src, tag=tag) for src, tag, _s, buf in plan.recvs]
    for dst, tag, slices, buf in plan.sends:
        np.copyto(_items(buf), _items(block[slices]))
        reqs.append(comm.Isend(_raw(buf, MPI), dest=dst, tag=tag))
    plan.in_flight = True
    return HaloRequest(da, plan, reqs, MPI)


def _items(a):
    """``a`` as items of raw bytes where its dtype is structured: NumPy's
    copy of a structured item copies its fields only and leaves the bytes
    between and after them as the target had them, where a halo cell holds
    every byte of its owner's cell (before, those bytes were left as they
    were; found by review)."""
    return raw_items(a) if a.dtype.names is not None and not a.dtype.hasobject else a


def _raw(buf, MPI):
    """A packed buffer as MPI sees it: typed where MPI types the elements,
    raw bytes otherwise (strings, records, big-endian, datetimes)."""
    return buf if _typed(buf.dtype, MPI) else [buf.view(np.uint8).reshape(-1), MPI.BYTE]


def exchange_halos(da, method=None):
    """Fill every communication-padding cell of ``da``'s local block from its owner."""
    start_halo_exchange(da, method).wait()
