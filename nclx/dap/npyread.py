"""Reads of a ``.npy`` file's cyclic and 'u' layouts by ranks that share one
node: each rank reads the file's rows that hold its cells in chunks
(``pread``) and gathers its cells from them.

Why: MPI-IO (ROMIO) reads a view of one element a piece (a cyclic or a
scattered 'u' dimension) at about 0.2 us an element, 50-200x NumPy's own
read of the same bytes, and the 'u' view's index tables held several
times the block (docs/benchmarks.md).  On one node the file's pages are in
one page cache: reading a chunk costs a copy, and a rank that reads rows
holding other ranks' cells too reads at most the communicator size times
its own bytes, in chunks of :data:`CHUNK` bytes (its memory: a chunk, and
for 'u' dimensions the chunk's index arrays; never the whole file).

Used by :func:`nclx.dap.npyload.read_npy` when every rank of the
communicator is on one node and the ranks' file pieces are short: the
innermost dimension split between ranks is cyclic, block-cyclic or 'u'
(:func:`wanted`).  Other layouts keep MPI-IO's views, which read just their
bytes and read long pieces at NumPy's speed (rows dealt cyclically: 1.45x
np.load's time through MPI-IO, 3.4x in chunks, 4 ranks).  A file that ends before its cells (cut meanwhile) is a
DapError, never a signal: no mapping of the file is made.
"""
import os

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nclx.dap.ioselect import DimSelection, _block_dim, fill_duplicates
from nclx.dap.npyheader import header_again_fd
from nclx.dap.validate import DapError

__all__ = ["CHUNK", "CHUNKED_READS", "wanted", "read_cells"]

#: bytes of the file read at a time by one rank, at most (rows of the
#: outermost dimension: at least one row; at most a quarter of the block)
CHUNK = 1 << 20
#: file pieces shorter than this make a layout read in chunks (npyfile's
#: LONG_PIECE: longer ones get MPI-IO's independent reads)
LONG_PIECE = 4096
#: False: every read goes through MPI-IO (rank 0's value decides for all).
CHUNKED_READS = True


def wanted(dist, itemsize, fortran, chunk=None, long_piece=None):
    """Whether ``dist``'s layout is read in chunks: the file pieces of a
    rank are short (below :data:`LONG_PIECE` bytes: the innermost file
    dimension split between ranks is cyclic or 'u'; MPI-IO reads long
    pieces at NumPy's speed and only its own bytes), the items have bytes,
    and rows of the outermost file dimension are at most ``4 * CHUNK``
    bytes.  The same answer on every rank: the Distribution's, not the
    rank's own cells, and rank 0's ``chunk`` and ``long_piece`` (defaults:
    this rank's :data:`CHUNK`, :data:`LONG_PIECE`)."""
    chunk = CHUNK if chunk is None else chunk
    long_piece = LONG_PIECE if long_piece is None else long_piece
    if itemsize == 0 or dist.ndim == 0:
        return False
    order = range(dist.ndim) if fortran else range(dist.ndim - 1, -1, -1)
    piece = itemsize
    for d in order:                          # from the innermost file dimension out
        dd = dist.dim_data(0)[d]
        if dd["proc_grid_size"] == 1 and dd["dist_type"] in "bc" and \
                not any(dd.get("padding", (0, 0))):
            piece *= dd["size"]              # whole: the pieces span it
            continue
        if dd["dist_type"] == "c":
            piece *= dd.get("block_size", 1)
        elif dd["dist_type"] != "u":         # a block dimension: long pieces
            return False
        break
    else:
        return False
    inner = dist.shape[:-1] if fortran else dist.shape[1:]
    return piece < long_piece and int(np.prod(inner, dtype=np.int64)) * itemsize <= 4 * chunk


class _Cells:
    """One dimension's local cells: ``whole()`` every ``(file_index,
    local_position)``; ``rows(a, b)`` those with a file index in ``[a, b)``
    (the index made relative to ``a``), as slices or ``("blocks", ...)``
    where they have that form (:func:`_gather`), else arrays; ``bounds()``
    the lowest and one past the highest file index; ``step`` what chunk
    boundaries must be multiples of for ``rows`` to give a regular form."""

    def __init__(self, m):
        self.m = m
        # a cyclic dimension on one grid coordinate holds every index in order
        self.kind = "b" if m.dist_type == "c" and m.grid_size == 1 else m.dist_type
        self.step = m.block_size * m.grid_size if self.kind == "c" else 1
        if m.dist_type == "b":
            self.sel = _block_dim(m, False)       # padding too: it is read from the file
            f, ms, n = self.sel.file_runs()[0], self.sel.mem_runs[0], self.sel.mem_runs[1]
            self.runs = [(int(a), int(b), int(c)) for a, b, c in zip(f, ms, n)]
        else:                                     # no padding, no index held twice
            self.sel = DimSelection(m.local_size, DimSelection._NONE, DimSelection._NONE)
            self.runs = [(0, 0, m.size)] if self.kind == "b" and m.size else []

    def bounds(self):
        m = self.m
        if m.local_size == 0:
            return 0, 0
        if self.kind == "b":
            return (min(f for f, _, _ in self.runs), max(f + n for f, _, n in self.runs)) \
                if self.runs else (0, 0)
        if self.kind == "c":
            return int(m.global_from_local(0)), int(m.global_from_local(m.local_size - 1)) + 1
        return int(m._sorted[0]), int(m._sorted[-1]) + 1

    def whole(self):
        """Every cell: ``(file, local)`` as two slices or two index arrays,
        or None when they are the whole dimension in order."""
        m = self.m
        if self.kind == "b" and self.runs == [(0, 0, m.size)] and m.local_size == m.size:
            return None
        fp = self.rows(0, m.size)
        return _arrays(fp, m.size) if isinstance(fp[0], tuple) else fp

    def rows(self, a, b):
        m = self.m
        if self.kind == "b":
            parts = [(max(a, f0), min(b, f0 + n), f0, m0) for f0, m0, n in self.runs]
            parts = [(lo, hi, f0, m0) for lo, hi, f0, m0 in parts if lo < hi]
            if len(parts) == 1:
                lo, hi, f0, m0 = parts[0]
                return slice(lo - a, hi - a), slice(lo - f0 + m0, hi - f0 + m0)
            if not parts:
                return _NOTHING
            return (np.concatenate([np.arange(lo - a, hi - a) for lo, hi, _, _ in parts]),
                    np.concatenate([np.arange(lo - f0 + m0, hi - f0 + m0)
                                    for lo, hi, f0, m0 in parts]))
        if self.kind == "c":
            k, P, c = m.block_size, m.grid_size, m.grid_rank
            if a % (k * P) == 0:
                first = a // P          # local position of the chunk's first cell
                if k == 1:
                    fs = slice(c, b - a, P)
                    n = len(range(*fs.indices(b - a)))
                    return (fs, slice(first, first + n)) if n else _NOTHING
                if (b - a) % (k * P) == 0:
                    return ("blocks", c, k, P, (b - a) // (k * P)), slice(first, first + (b - a) // P)
            # the local blocks whose global block (j * P + c) meets [a, b)
            j0 = max(0, -(-(a // k - c) // P))
            j1 = ((b - 1) // k - c) // P
            if j1 < j0:
                return _NOTHING
            local = np.arange(j0 * k, min((j1 + 1) * k, m.local_size))
            g = m.global_from_local(local)
            keep = (g >= a) & (g < b)
            return g[keep] - a, local[keep]
        s0, s1 = np.searchsorted(m._sorted, [a, b])
        return m._sorted[s0:s1] - a, m.order[s0:s1]


_NOTHING = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def _arrays(fp, length):
    """``rows()``'s answer as two index arrays (``length``: the rows read)."""
    f, p = fp
    if isinstance(f, tuple):                   # ("blocks", c, k, P, R) and the local slice
        _, c, k, P, R = f
        f = ((np.arange(R)[:, None] * P + c) * k + np.arange(k)).reshape(-1)
    if isinstance(f, slice):
        f = np.arange(*f.indices(length))
    if isinstance(p, slice):
        p = np.arange(p.start, p.stop)
    return f, p


def _size(f):
    if isinstance(f, slice):
        return len(range(f.start, f.stop, f.step or 1))
    if isinstance(f, tuple):
        return 1
    return f.size


def _gather(view, src, fp, inner):
    """Copy the chunk's cells ``fp`` (``rows()``: file rows of ``src``, local
    rows of ``view``) with ``inner`` (each inner dimension's ``whole()``):
    strided views where every inner dimension is whole or a slice (at most
    the rows indexed by an array), else one gather through index arrays."""
    f, p = fp
    if isinstance(f, tuple) and all(x is None for x in inner):
        _, c, k, P, R = f
        t = view[p]           # split its first axis in (R, k): a view, never a copy
        t = as_strided(t, (R, k) + t.shape[1:], (k * t.strides[0],) + t.strides)
        t[...] = src.reshape((R, P, k) + src.shape[1:])[:, c]
        return
    if not isinstance(f, tuple) and all(x is None or isinstance(x[0], slice) for x in inner):
        fi = tuple(slice(None) if x is None else x[0] for x in inner)
        pi = tuple(slice(None) if x is None else x[1] for x in inner)
        view[(p,) + pi] = src[(f,) + fi]
        return
    f, p = _arrays(fp, src.shape[0])
    fi = [np.arange(n) if x is None else _arrays(x, n)[0] for x, n in zip(inner, src.shape[1:])]
    pi = [np.arange(n) if x is None else _arrays(x, n)[1] for x, n in zip(inner, view.shape[1:])]
    view[np.ix_(p, *pi)] = src[np.ix_(f, *fi)]


def _pread(fd, nbytes, at, path):
    buf = np.empty(nbytes, np.uint8)
    got = 0
    view = memoryview(buf)
    while got < nbytes:
        n = os.preadv(fd, [view[got:]], at + got)
        if n == 0:
            raise DapError(f"{path!r}: the file ends before its cells (at byte {at + got}; "
                           f"truncated or rewritten meanwhile?)")
        got += n
    return buf


def read_cells(path, data_offset, shape, fortran, block, dist, rank, head=None, chunk=None):
    """Fill every cell of ``block`` (``rank``'s local block of ``dist``,
    padding included) from the ``.npy`` data of ``path`` that starts at byte
    ``data_offset`` and holds an array of ``shape`` (``fortran``: stored in
    Fortran order).  A cell whose global index lies outside the array
    (boundary padding) is left as it is; one that the block holds twice (a
    periodic dimension's padding) is read once and copied.  ``head``: the
    header rank 0 read, checked again through the descriptor the cells are
    read through (DapError if the file there has another).  ``chunk``: the
    chunk bytes (default :data:`CHUNK`)."""
    itemsize = block.dtype.itemsize
    raw = np.dtype((np.void, itemsize))
    cells = [_Cells(m) for m in dist.maps(rank)]
    view = block.view(raw)
    fshape = list(shape)
    if fortran:                    # the file is the C order of the reversed axes
        view, cells, fshape = view.transpose(), cells[::-1], fshape[::-1]
    if view.size == 0 or any(c.m.local_size == 0 for c in cells):
        return
    inner = [c.whole() for c in cells[1:]]
    if any(x is not None and _size(x[0]) == 0 for x in inner):
        return
    rowbytes = int(np.prod(fshape[1:], dtype=np.int64)) * itemsize
    step = cells[0].step
    # a chunk of at most a quarter of the block (64 KiB at least): a small
    # block's read holds little more than the block
    chunk = min(CHUNK if chunk is None else chunk, max(1 << 16, block.nbytes // 4))
    per = max(1, chunk // max(rowbytes, 1))
    lo, hi = cells[0].bounds()
    if per >= step:
        # rounds of the outermost cyclic dimension (its cells strided
        # views); a round larger than a chunk is read in chunks, the rows
        # of other ranks skipped where a chunk holds none of the rank's
        per -= per % step
        lo -= lo % step
    fd = os.open(path, os.O_RDONLY)
    try:
        if head is not None:
            changed = header_again_fd(fd, head)
            if changed is not None:
                raise changed
        for a in range(lo, hi, per):
            b = min(a + per, hi)
            fp = cells[0].rows(a, b)
            if not _size(fp[0]):
                continue
            buf = _pread(fd, (b - a) * rowbytes, data_offset + a * rowbytes, path)
            _gather(view, buf.view(raw).reshape([b - a] + fshape[1:]), fp, inner)
            del buf
    finally:
        os.close(fd)
    fill_duplicates(block, [c.sel for c in (cells[::-1] if fortran else cells)])
