"""MPI derived datatypes for reading and writing one rank's part of a global
array stored in a file (the file view) straight from or into its local
block, padding included (the memory type): no packing copies.

The cells each rank transfers are :mod:`nclx.dap.ioselect`'s (its names
are re-exported here).

Every type is built from ``elem``, a contiguous run of ``itemsize`` bytes,
so the bytes move as stored (any byte order, structured dtypes).  The file
view of a rank lists its elements in increasing file offset; the memory
type lists the same elements in the same order, so element ``k`` of one is
element ``k`` of the other.

File views, by layout:

- ``"contiguous"``: the rank's cells are one contiguous piece of the file:
  the view starts at its first byte (``disp``) with ``elem`` as filetype,
  so MPI-IO takes its contiguous path (and pieces over 2 GiB work: ROMIO's
  strided paths assert on them);
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

The memory side is a flat view of the block with ``count`` elements of
``elem`` when the selection is one contiguous piece of it, a subarray of
the padded block when it is a box in C order, else the per-dimension hindexed composition over the
block's strides (a 'u' dimension is visited in increasing global index, a
Fortran-order file in Fortran order).
"""
import numpy as np

from nclx.dap.ioselect import (DimSelection, _dim_selections, check_covered, expand,  # noqa: F401
                               fill_duplicates, raw_items, runs, selections)
from nclx.dap.validate import DapError

__all__ = ["IOPlan", "DimSelection", "selections", "runs", "expand", "fill_duplicates",
           "check_covered", "view_pieces", "raw_items"]


def _compose(MPI, elem, dims):
    """hindexed over hindexed...: ``dims`` from the outermost to the
    innermost, each ``(starts, lengths, stride_bytes)``."""
    t = elem
    for starts, lengths, stride in reversed(dims):
        r = t.Create_resized(0, stride)
        # the arrays as they are: lists of Python ints cost 20x their bytes
        # (a 'u' dimension has a run a cell; review 25: 11x the block)
        nt = r.Create_hindexed(lengths, starts * stride)
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
        elif dd["dist_type"] == "b" and n % P == 0 and n > 0 and _mpi_block(dist, d, n // P):
            distribs.append(MPI.DISTRIBUTE_BLOCK)
            dargs.append(n // P)
        else:
            return None
    return distribs, dargs


def _mpi_block(dist, d, step):
    """Whether every grid coordinate ``c`` of block dimension ``d`` owns
    ``[c * step, (c + 1) * step)``, as MPI's BLOCK deals it; an imported
    irregular split (6 rows as 4 + 2) does not, and darray would select the
    balanced rows (review 20: a save wrote rows shifted, lost and zeroed)."""
    for c in range(dist.grid_shape[d]):
        m = dist.column_map(d, c)
        if (m.start + m.comm_padding[0], m.stop - m.comm_padding[1]) != (c * step, (c + 1) * step):
            return False
    return True


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
        self.disp = self.first = 0           # view displacement; first element of the buffer
        self.run_bytes, self.max_piece_bytes = float("inf"), 0     # the view's pieces
        self.selections = sel = _dim_selections(dist, rank, write)
        self.nelems = int(np.prod([s.count for s in sel], dtype=np.int64))
        if self.nelems == 0 or itemsize == 0:
            return
        if dist.ndim == 0:          # one element (MPI has no 0-dimensional subarray)
            self.count, self.kind = 1, "scalar"
            return
        dims = range(dist.ndim) if order == "C" else range(dist.ndim - 1, -1, -1)
        mem_box = all(len(s.mem_runs[0]) == 1 for s in sel)
        self.run_bytes, self.max_piece_bytes = _piece_bytes(dist, sel, itemsize, order)
        gstrides = _strides(dist.shape, itemsize, order)
        if kind is None and _pieces(dist.shape, sel, list(dims), DimSelection.file_stats)[0] == 1:
            kind = "contiguous"         # one piece: a plain view from its first byte
        mpi_order = MPI.ORDER_C if order == "C" else MPI.ORDER_FORTRAN
        if kind is None:
            # darray selects the owned cells: not a read that takes padding too
            owned = all(m.dist_type != "b" or (
                s.count == m.local_size - sum(m.comm_padding) and len(s.file_runs()[0]) == 1
                and s.file_runs()[0][0] == m.start + m.comm_padding[0])
                for m, s in zip(dist.maps(rank), sel))
            if all(k == "b" for k in dist.dist) and mem_box and \
                    all(len(s.file_runs()[0]) == 1 for s in sel):
                kind = "subarray"
            else:
                kind = "darray" if owned and _darray_args(dist, MPI) else "indexed"
        self.kind = kind
        if kind == "contiguous":
            self.disp = sum(int(sel[d].file_runs()[0][0]) * gstrides[d] for d in dims)
            ft = None
        elif kind == "subarray":
            ft = self.elem.Create_subarray(list(dist.shape), [s.count for s in sel],
                                           [int(s.file_runs()[0][0]) for s in sel],
                                           order=mpi_order)
        elif kind == "darray":
            distribs, dargs = _darray_args(dist, MPI)
            ft = self.elem.Create_darray(dist.nprocs, rank, list(dist.shape), distribs, dargs,
                                         list(dist.grid_shape), order=mpi_order)
        else:
            ft = _compose(MPI, self.elem, [sel[d].file_runs() + (gstrides[d],) for d in dims])
        self.filetype = self.elem if ft is None else ft.Commit()
        self.count = 1
        if order == "C" and block.flags.c_contiguous and \
                _pieces(block.shape, sel, list(dims), DimSelection.mem_stats)[0] == 1:
            # one piece of the block: a flat view of it, a contiguous type
            self.first = sum(int(sel[d].mem_runs[0][0]) * block.strides[d] for d in dims) // \
                max(itemsize, 1)
            self.count = self.nelems
            return
        if mem_box and order == "C" and block.flags.c_contiguous:
            mt = self.elem.Create_subarray(list(block.shape), [s.count for s in sel],
                                           [int(s.mem_runs[0][0]) for s in sel],
                                           order=MPI.ORDER_C)
        else:
            mt = _compose(MPI, self.elem, [sel[d].mem_runs + (block.strides[d],) for d in dims])
        self.memtype = mt.Commit()

    def buffer(self, block):
        """What to give MPI with ``memtype`` and ``count``: the block, or the
        flat view of its one selected piece."""
        if self.memtype is self.elem and self.count:
            return np.asarray(block).reshape(-1)[self.first:self.first + self.nelems]
        return block

    def free(self):
        """Release the datatypes (idempotent; nothing to do after MPI_Finalize)."""
        from mpi4py import MPI   # optional dependency: nclx.dap loads without it
        types = [t for t in (self.filetype, self.memtype) if t is not None and t is not self.elem]
        if not MPI.Is_finalized():
            for t in types + ([self.elem] if self.elem is not None else []):
                t.Free()
        self.filetype = self.memtype = self.elem = None


def view_pieces(dist, rank, itemsize, order="C", write=False):
    """``(mean, largest)`` bytes of the contiguous pieces of ``rank``'s file
    view (inf, 0 when it has none): computed from the Distribution alone,
    so every rank can tell them for any rank without building a datatype."""
    return _piece_bytes(dist, _dim_selections(dist, rank, write), itemsize, order)


def _piece_bytes(dist, sel, itemsize, order):
    nelems = int(np.prod([s.count for s in sel], dtype=np.int64))
    if nelems == 0 or itemsize == 0:
        return float("inf"), 0
    dims = list(range(dist.ndim) if order == "C" else range(dist.ndim - 1, -1, -1))
    npieces, largest = _pieces(dist.shape, sel, dims, DimSelection.file_stats)
    return nelems * itemsize / npieces, largest * itemsize


def _pieces(shape, sel, dims, stats_of):
    """``(number, largest)`` of the contiguous pieces (in elements) of a
    selection of an array of ``shape`` traversed in ``dims`` (outer to
    inner): inner dimensions taken whole join into longer pieces.
    ``stats_of(selection)``: ``(number, longest)`` of its runs."""
    whole = 1
    inner = list(reversed(dims))
    for i, d in enumerate(inner):
        s = sel[d]
        nruns, longest = stats_of(s)
        if s.count == shape[d] and nruns == 1:
            whole *= max(s.count, 1)
            continue
        number = nruns
        for d2 in inner[i + 1:]:
            number *= max(sel[d2].count, 1)
        return number, longest * whole
    return 1, whole


def _strides(shape, itemsize, order):
    """Byte strides of a contiguous array of ``shape`` in ``order``."""
    out, step = [0] * len(shape), itemsize
    for d in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return out
