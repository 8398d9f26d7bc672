"""Which cells of the global array one rank's part of a file holds, and
where its local block holds them: per dimension the runs of consecutive
global indices and of local positions (:class:`DimSelection`), for the
MPI datatypes of :mod:`nclx.dap.iotypes` and the mapped writes of
:mod:`nclx.dap.npymap`.

A write takes each rank's owned cells (a global index held by several
ranks of a 'u' dimension is written by the lowest grid coordinate); a read
fills every cell of the local buffer, communication padding included (from
the file: no halo exchange; an index a periodic dimension's padding holds
twice is read once and copied, :func:`fill_duplicates`).  Block dimensions
are described by a few runs whatever their size, never by index arrays;
cyclic ones by a rule whose runs are made only where they are listed.
"""
import numpy as np

from nclx.dap.validate import DapError

__all__ = ["DimSelection", "selections", "runs", "expand", "fill_duplicates", "check_covered",
           "raw_items"]


def runs(seq):
    """``(starts, lengths)`` of the maximal runs of consecutive integers
    (each next = previous + 1) in ``seq``, in order."""
    seq = np.asarray(seq, dtype=np.int64)
    n = seq.size
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # one temporary of seq's size at a time (a 'u' dimension of scattered
    # indices has a run a cell: before, six arrays of its size at once)
    step = np.subtract(seq[1:], seq[:-1])
    starts_here = np.empty(n, bool)
    starts_here[0] = True
    np.not_equal(step, 1, out=starts_here[1:])
    del step
    first = np.flatnonzero(starts_here)
    del starts_here
    lengths = np.empty(first.size, np.int64)
    np.subtract(first[1:], first[:-1], out=lengths[:-1])
    lengths[-1] = n - first[-1]
    return seq[first], lengths


def _u_held_below(dist, d, coord):
    """Whether each global index of 'u' dimension ``d`` is held by a grid
    coordinate below ``coord`` (one byte an index: before, their indices
    concatenated and np.isin's sort of them cost a rank several times its
    block; review 25)."""
    held = np.zeros(dist.shape[d], bool)
    for c in range(coord):
        held[_u_indices(dist, d, c)] = True
    return held


def _u_indices(dist, d, c):
    """The indices grid coordinate ``c`` of 'u' dimension ``d`` holds, from
    its dimension dictionary (no map: a 'u' map sorts its indices, and
    building every coordinate's held a rank the whole dimension's tables)."""
    coords = [0] * dist.ndim
    coords[d] = c
    return dist.dim_data(dist.rank_from_coords(coords))[d]["indices"]


def expand(starts, lengths):
    """The integers of the runs ``(starts, lengths)``, in order."""
    starts, lengths = np.asarray(starts, np.int64), np.asarray(lengths, np.int64)
    offset = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offset


class DimSelection:
    """The cells of one dimension a rank transfers: ``count`` global indices,
    each once, increasing; ``file_runs()`` and ``mem_runs`` are
    ``(starts, lengths)`` of those global indices and of the local positions
    that hold them, in the same order; ``dups`` is ``(dst, src)``, local
    positions holding an index again and the position read for it."""
    _NONE = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def __init__(self, count, mem_runs, file_runs, dups=_NONE):
        self.count, self.mem_runs, self._file_runs, self.dups = count, mem_runs, file_runs, dups

    def file_runs(self):
        if callable(self._file_runs):       # cyclic: one run per local block, made when needed
            self._file_runs = self._file_runs()
        return self._file_runs

    def file_stats(self):
        """``(number, longest)`` of the file runs, without making a cyclic
        dimension's (one per local block: before, the saves and loads that
        only count them made them, an 8 TiB request for an empty array with
        a long cyclic dimension; review 25)."""
        if callable(self._file_runs):
            return self._file_runs.stats
        return _stats(self._file_runs)

    def mem_stats(self):
        """``(number, longest)`` of the memory runs."""
        return _stats(self.mem_runs)


def _stats(runs_):
    return len(runs_[0]), int(runs_[1].max(initial=0))


def _block_dim(m, write):
    """A block dimension: for ``write`` the owned cells; for a read every
    cell of the buffer whose global index (wrapped on a periodic dimension)
    lies in ``[0, size)``.  Without materialising index arrays: a buffer is
    at most a few segments of consecutive global indices."""
    n, L = m.size, m.local_size
    lo, hi = (m.comm_padding[0], L - m.comm_padding[1]) if write else (0, L)
    segs, i = [], lo
    while i < hi and n:
        g = m.start + i
        if m.periodic:
            g %= n
        elif g < 0:
            i -= g
            continue
        elif g >= n:
            break
        ln = min(hi - i, n - g)
        segs.append((g, i, ln))
        i += ln
    segs.sort()
    ug, ul, un, dst, src = [], [], [], [], []
    end = 0
    for g, i, ln in segs:
        over = min(max(end - g, 0), ln)        # indices an earlier segment holds already
        if over:
            gg = np.arange(g, g + over, dtype=np.int64)
            k = np.searchsorted(np.asarray(ug), gg, side="right") - 1
            dst.append(np.arange(i, i + over, dtype=np.int64))
            src.append(np.asarray(ul)[k] + (gg - np.asarray(ug)[k]))
        if ln > over:
            ug.append(g + over), ul.append(i + over), un.append(ln - over)
            end = g + ln
    un = np.asarray(un, np.int64)
    dups = (np.concatenate(dst), np.concatenate(src)) if dst else DimSelection._NONE
    return DimSelection(int(un.sum()), (np.asarray(ul, np.int64), un),
                        (np.asarray(ug, np.int64), un), dups)


def _cyclic_dim(m):
    """A (block-)cyclic dimension: every local cell; local block j of
    ``block_size`` cells holds global indices from ``(j * P + c) * block_size``."""
    L, k, P, c = m.local_size, m.block_size, m.grid_size, m.grid_rank

    def file_runs():
        j = np.arange(-(-L // k), dtype=np.int64)
        return (j * P + c) * k, np.minimum(k, L - j * k)
    file_runs.stats = (-(-L // k), min(k, L))
    return DimSelection(L, (np.zeros(1 if L else 0, np.int64), np.full(1 if L else 0, L)),
                        file_runs)


def _dim_selections(dist, rank, write=False):
    """One :class:`DimSelection` per dimension of ``rank``'s transfer.

    Writes take the owned cells of block dimensions; reads every cell of the
    local buffer (padding too: it is read from the file, no halo exchange).
    Cyclic dimensions give every local cell; a 'u' dimension its indices
    sorted (for ``write``, an index that a grid coordinate below also holds
    is left to that one: no file cell is written twice)."""
    out = []
    coords = dist.coords_from_rank(rank)
    for d, m in enumerate(dist.maps(rank)):
        if m.dist_type == "b":
            out.append(_block_dim(m, write))
        elif m.dist_type == "c":
            out.append(_cyclic_dim(m))
        else:
            order = np.argsort(m.indices, kind="stable")
            if write and coords[d] > 0:
                order = order[~_u_held_below(dist, d, coords[d])[m.indices[order]]]
            out.append(DimSelection(order.size, runs(order), runs(m.indices[order])))
    return out


def selections(dist, rank, write=False):
    """Per dimension ``(file_indices, local_positions, dups)`` as arrays
    (:func:`_dim_selections` expanded; for tests and small arrays)."""
    return [(expand(*s.file_runs()), expand(*s.mem_runs), s.dups)
            for s in _dim_selections(dist, rank, write)]


def raw_items(a):
    """``a`` viewed as items of raw bytes (unstructured void of its
    itemsize): NumPy copies them whole, where a copy of a structured dtype
    copies its fields only and leaves the bytes between them (an aligned
    or offset layout) as the target had them."""
    return a.view(np.dtype((np.void, a.dtype.itemsize))) if a.dtype.itemsize else a


def fill_duplicates(block, sel):
    """After a read: copy each cell whose global index the buffer holds
    twice (a periodic dimension's padding wrapping onto the same rank) from
    the position that was read, one dimension after the other, every byte
    of it (:func:`raw_items`; before, a structured dtype's bytes between
    fields stayed 0 there: found by review).  ``sel``:
    :class:`DimSelection` objects or :func:`selections` tuples."""
    block = raw_items(block)
    for d, s in enumerate(sel):
        dst, src = s.dups if isinstance(s, DimSelection) else s[2]
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
            held[_u_indices(dist, d, c)] = True
        if not held.all():
            missing = np.flatnonzero(~held)
            raise DapError(f"dimension {d} ('u'): no rank holds global index {int(missing[0])} "
                           f"({missing.size} of {dist.shape[d]} are held by none); the file "
                           f"would have holes")
