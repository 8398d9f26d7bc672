"""MPI derived datatypes for reading and writing one rank's part of a global
array stored in a file (the file view) straight from or into its local
block, padding included (the memory type): no packing copies.

Every type is built from ``elem``, a contiguous run of ``itemsize`` bytes,
so the bytes move as stored (any byte order, structured dtypes).  The file
view of a rank lists its elements in increasing file offset; the memory
type lists the same elements in the same order, so element ``k`` of one is
element ``k`` of the other.

File views, by layout:

- ``"subarray"``: every dimension is one contiguous range (block
  dimensions, undistributed ones): ``MPI_Type_create_subarray``;
- ``"darray"``: block-cyclic dimensions (cyclic is block_size 1) with block
  dimensions whose extent the grid divides (MPI's BLOCK distribution gives
  ``ceil(n / P)`` elements per rank, nclx's balanced block differs when the
  grid does not divide ``n``): ``MPI_Type_create_darray``;
- ``"indexed"``: anything else (unstructured 'u' dimensions, block
  dimensions the grid does not divide beside cyclic ones): one
  ``MPI_Type_create_hindexed`` per dimension over the next one's type, each
  listing runs of consecutive indices.

The memory type is a subarray of the padded block when the selection is a
box in C order, else the per-dimension hindexed composition over the
block's strides (a 'u' dimension is visited in increasing global index, a
Fortran-order file in Fortran order).
"""
import numpy as np

from nclx.dap.validate import DapError

__all__ = ["IOPlan", "selections", "runs", "fill_duplicates", "check_covered"]


def runs(seq):
    """``(starts, lengths)`` of the maximal runs of consecutive integers
    (each next = previous + 1) in ``seq``, in order."""
    seq = np.asarray(seq, dtype=np.int64)
    if not seq.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cut = np.flatnonzero(np.diff(seq) != 1) + 1
    first = np.concatenate(([0], cut))
    return seq[first], np.diff(np.concatenate((first, [seq.size])))


def _u_held_below(dist, d, coord):
    """Global indices of 'u' dimension ``d`` held by grid coordinates below ``coord``."""
    held = []
    for c in range(coord):
        coords = [0] * dist.ndim
        coords[d] = c
        held.append(dist.maps(dist.rank_from_coords(coords))[d].indices)
    return np.concatenate(held) if held else np.zeros(0, np.int64)


def _block_cells(m, write):
    """(global indices, local positions, duplicates) of a block dimension:
    for ``write`` the owned cells; for a read every cell of the buffer whose
    global index (wrapped on a periodic dimension) is in ``[0, size)``, each
    global index once -- ``duplicates`` is ``(dst, src)``, the positions
    that hold an index again and the position read for it."""
    if write:
        lo, hi = m.comm_padding[0], m.local_size - m.comm_padding[1]
        pos = np.arange(lo, max(lo, hi), dtype=np.int64)
    else:
        pos = np.arange(m.local_size, dtype=np.int64)
    g = m.start + pos
    if m.periodic and m.size:
        g = g % m.size
    keep = (g >= 0) & (g < m.size)
    g, pos = g[keep], pos[keep]
    order = np.argsort(g, kind="stable")
    g, pos = g[order], pos[order]
    first = np.ones(g.size, bool)
    first[1:] = g[1:] != g[:-1]
    src = pos[first][np.cumsum(first) - 1]
    return g[first], pos[first], (pos[~first], src[~first])


def selections(dist, rank, write=False):
    """Per dimension, ``(file_indices, local_positions, duplicates)``: the
    global indices this rank transfers, increasing and each once, the local
    buffer positions that hold them, in the same order, and the positions
    a read fills afterwards by copying (``(dst, src)``, see :func:`fill_duplicates`).

    Writes take the owned cells of block dimensions; reads every cell of the
    local buffer (padding too: it is read from the file, no halo exchange).
    Cyclic dimensions give every local cell; a 'u' dimension its indices
    sorted (for ``write``, an index that a grid coordinate below also holds
    is left to that one: no file cell is written twice)."""
    out = []
    coords = dist.coords_from_rank(rank)
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    for d, m in enumerate(dist.maps(rank)):
        if m.dist_type == "b":
            out.append(_block_cells(m, write))
        elif m.dist_type == "c":
            pos = np.arange(m.local_size, dtype=np.int64)
            out.append((m.global_from_local(pos), pos, none))
        else:
            order = np.argsort(m.indices, kind="stable")
            if write and coords[d] > 0:
                order = order[~np.isin(m.indices[order], _u_held_below(dist, d, coords[d]))]
            out.append((m.indices[order], order, none))
    return out


def fill_duplicates(block, sel):
    """After a read: copy each cell whose global index the buffer holds
    twice (a periodic dimension's padding wrapping onto the same rank) from
    the position that was read, one dimension after the other."""
    for d, (_, _, (dst, src)) in enumerate(sel):
        if dst.size:
            view = np.moveaxis(block, d, 0)
            view[dst] = view[src]


def check_covered(dist):
    """DapError unless every global index of each 'u' dimension is held by
    some grid coordinate (a file written from the array would have holes)."""
    for d in range(dist.ndim):
        if dist.dist[d] != "u":
            continue
        held = np.zeros(dist.shape[d], bool)
        for c in range(dist.grid_shape[d]):
            coords = [0] * dist.ndim
            coords[d] = c
            held[dist.maps(dist.rank_from_coords(coords))[d].indices] = True
        if not held.all():
            missing = np.flatnonzero(~held)
            raise DapError(f"dimension {d} ('u'): no rank holds global index {int(missing[0])} "
                           f"({missing.size} of {dist.shape[d]} are held by none); the file "
                           f"would have holes")


def _compose(MPI, elem, dims):
    """hindexed over hindexed...: ``dims`` from the outermost to the
    innermost, each ``(starts, lengths, stride_bytes)``."""
    t = elem
    for starts, lengths, stride in reversed(dims):
        r = t.Create_resized(0, stride)
        nt = r.Create_hindexed(lengths.tolist(), (starts * stride).tolist())
        r.Free()
        if t is not elem:
            t.Free()
        t = nt
    return t


def _darray_args(dist, MPI):
    """Create_darray's per-dimension arguments, or None when a dimension is
    not exactly one of MPI's distributions."""
    distribs, dargs = [], []
    if not any(k == "c" for k in dist.dist):
        return None
    for d in range(dist.ndim):
        n, P = dist.shape[d], dist.grid_shape[d]
        dd = dist.dim_data(0)[d]
        if dd["dist_type"] == "c":
            distribs.append(MPI.DISTRIBUTE_CYCLIC)
            dargs.append(int(dd["block_size"]))
        elif dd["dist_type"] == "b" and P == 1:
            distribs.append(MPI.DISTRIBUTE_NONE)
            dargs.append(MPI.DISTRIBUTE_DFLT_DARG)
        elif dd["dist_type"] == "b" and n % P == 0 and n > 0:
            distribs.append(MPI.DISTRIBUTE_BLOCK)
            dargs.append(n // P)
        else:
            return None
    return distribs, dargs


class IOPlan:
    """The file view (``filetype``) and memory type (``memtype``) of one
    rank's transfer between ``block`` and the file of a ``dist.shape``
    array (``order`` 'C' or 'F'); ``count`` is 1, or 0 for a rank with
    nothing to transfer (its types are then ``elem``).  :meth:`free`
    releases the types."""

    def __init__(self, dist, rank, block, order="C", write=False, kind=None):
        from mpi4py import MPI   # optional dependency: nclx.dap loads without it
        if order not in ("C", "F"):
            raise DapError(f"order must be 'C' or 'F', not {order!r}")
        block = np.asarray(block)
        itemsize = block.dtype.itemsize
        if not (block.flags.c_contiguous or block.flags.f_contiguous):
            raise DapError("the local block must be contiguous for MPI-IO")
        self.elem = MPI.BYTE.Create_contiguous(itemsize).Commit()
        self.filetype = self.memtype = self.elem
        self.count, self.kind = 0, "empty"
        self.selections = sel = selections(dist, rank, write)
        self.nelems = int(np.prod([len(f) for f, _, _ in sel], dtype=np.int64))
        if self.nelems == 0 or itemsize == 0:
            return
        if dist.ndim == 0:          # one element (MPI has no 0-dimensional subarray)
            self.count, self.kind = 1, "scalar"
            return
        dims = range(dist.ndim) if order == "C" else range(dist.ndim - 1, -1, -1)
        franks = [runs(f) for f, _, _ in sel]
        mranks = [runs(p) for _, p, _ in sel]
        box = all(len(s) == 1 for s, _ in franks) and all(len(s) == 1 for s, _ in mranks)
        mpi_order = MPI.ORDER_C if order == "C" else MPI.ORDER_FORTRAN
        if kind is None:
            # darray selects the owned cells: not a read that takes padding too
            owned = all(m.dist_type != "b" or np.array_equal(f, m.global_indices())
                        for m, (f, _, _) in zip(dist.maps(rank), sel))
            kind = "subarray" if box and all(k == "b" for k in dist.dist) else \
                "darray" if owned and _darray_args(dist, MPI) else "indexed"
        self.kind = kind
        if kind == "subarray":
            ft = self.elem.Create_subarray(list(dist.shape), [int(ln[0]) for _, ln in franks],
                                           [int(s[0]) for s, _ in franks], order=mpi_order)
        elif kind == "darray":
            distribs, dargs = _darray_args(dist, MPI)
            ft = self.elem.Create_darray(dist.nprocs, rank, list(dist.shape), distribs, dargs,
                                         list(dist.grid_shape), order=mpi_order)
        else:
            gstrides = _strides(dist.shape, itemsize, order)
            ft = _compose(MPI, self.elem, [(franks[d][0], franks[d][1], gstrides[d]) for d in dims])
        self.filetype = ft.Commit()
        if box and order == "C" and block.flags.c_contiguous:
            mt = self.elem.Create_subarray(list(block.shape), [int(ln[0]) for _, ln in mranks],
                                           [int(s[0]) for s, _ in mranks], order=MPI.ORDER_C)
        else:
            mt = _compose(MPI, self.elem, [(mranks[d][0], mranks[d][1], block.strides[d])
                                           for d in dims])
        self.memtype = mt.Commit()
        self.count = 1

    def free(self):
        """Release the datatypes (idempotent; nothing to do after MPI_Finalize)."""
        from mpi4py import MPI   # optional dependency: nclx.dap loads without it
        types = [t for t in (self.filetype, self.memtype) if t is not None and t is not self.elem]
        if not MPI.Is_finalized():
            for t in types + ([self.elem] if self.elem is not None else []):
                t.Free()
        self.filetype = self.memtype = self.elem = None


def _strides(shape, itemsize, order):
    """Byte strides of a contiguous array of ``shape`` in ``order``."""
    out, step = [0] * len(shape), itemsize
    for d in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return out
