"""MPI derived datatypes that select, in global order, the elements of a
local block shared with another rank's part of another layout.

Per dimension, :func:`segments` lists the local indices of this rank's
owned elements that the other rank owns in the other layout, sorted by
global index, as *segments*: ``("vec", start, count, blen, stride)`` (``count``
runs of ``blen`` consecutive indices, ``stride`` apart) or ``("idx", starts,
lengths)`` (runs listed).  Block and cyclic dimensions are computed from
their parameters (a handful of integers, whatever the dimension's length);
only unstructured ('u') dimensions and cyclic pairs with different
parameters go through index arrays, never longer than the dimension (a
few int64 arrays of this rank's length along it, while the datatypes are
built: the whole block's size again, or more, for a 1-d 'u' array).

:func:`block_type` composes one dimension's segments over the next's
(innermost first, each level resized to the block's stride) into one
committed datatype; its byte offset goes to ``Alltoallw``'s displacement.
Both sides of a message list the same global indices in the same order, so
the sender's and the receiver's types match element for element.
"""
import numpy as np

__all__ = ["segments", "held", "RangeMap", "nelems", "element_type", "block_type", "owned_range",
           "cyclic_count", "from_indices"]


def owned_range(m):
    """Global ``[lo, hi)`` a block map owns; a local index is ``g - m.start``."""
    if isinstance(m, RangeMap):
        return m.lo, m.hi
    return m.start + m.comm_padding[0], m.stop - m.comm_padding[1]


class RangeMap:
    """Global indices ``[lo, hi)`` at local ``g - start``: one piece of a
    padded block buffer (see :func:`held`)."""
    dist_type = "b"
    comm_padding = (0, 0)

    def __init__(self, lo, hi, start):
        self.lo, self.hi, self.start = lo, hi, start

    @property
    def local_size(self):
        """The cells of the piece (it has no padding)."""
        return self.hi - self.lo

    def _owned_local(self):
        return np.arange(self.lo - self.start, self.hi - self.start)

    def global_from_local(self, i):
        return np.asarray(i) + self.start

    def owns(self, g):
        g = np.asarray(g)
        return (g >= self.lo) & (g < self.hi)


def held(m):
    """Maps whose owned indices, in order, are every cell of ``m``'s local
    buffer, communication padding included (wrapping modulo the size on a
    periodic dimension): ``[m]`` for a map without communication padding."""
    if m.dist_type != "b" or tuple(m.comm_padding) == (0, 0):
        return [m]
    n, out, a = m.size, [], m.start
    while a < m.stop:
        q = a // n if (m.periodic and n) else 0
        b = min(m.stop, (q + 1) * n) if (m.periodic and n) else m.stop
        # global [a, b) shifted by q * n; local index a - m.start onward
        out.append(RangeMap(a - q * n, b - q * n, m.start - q * n))
        a = b
    return out


def cyclic_count(x, k, P, c):
    """Number of global indices below ``x`` that cyclic coordinate ``c`` owns."""
    q, r = divmod(x, k * P)
    return q * k + min(max(r - c * k, 0), k)


def _vec(start, count, blen, stride=0):
    return ("vec", int(start), int(count), int(blen), int(stride))


def _block_in_cyclic(lo, hi, s0, k, P, c):
    """Segments of the block range ``[lo, hi)`` (local ``g - s0``) owned by
    cyclic coordinate ``c`` (block size ``k``, ``P`` coordinates)."""
    if hi <= lo:
        return []
    j1 = lo // k
    j1 += (c - j1) % P
    j2 = (hi - 1) // k
    j2 -= (j2 - c) % P
    if j1 > j2:
        return []
    m = (j2 - j1) // P + 1
    first = (max(j1 * k, lo), min(j1 * k + k, hi))
    if m == 1:
        return [_vec(first[0] - s0, 1, first[1] - first[0])]
    last = (j2 * k, min(j2 * k + k, hi))
    out, tail = [], []
    mid_from, mid_count = j1 + P, m - 2
    if first[1] - first[0] == k:
        mid_from, mid_count = j1, mid_count + 1
    else:
        out.append(_vec(first[0] - s0, 1, first[1] - first[0]))
    if last[1] - last[0] == k:
        mid_count += 1
    else:
        tail.append(_vec(last[0] - s0, 1, last[1] - last[0]))
    if mid_count:
        out.append(_vec(mid_from * k - s0, mid_count, k, P * k))
    return out + tail


def from_indices(loc):
    """Segments of local indices listed in global order."""
    if loc.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loc) != 1)
    breaks += 1
    if breaks.size == 0:
        return [_vec(loc[0], 1, loc.size)]
    starts = loc[np.concatenate(((0,), breaks))]
    lens = np.diff(np.concatenate(((0,), breaks, (loc.size,))))
    steps = np.diff(starts)
    if np.all(lens == lens[0]) and np.all(steps == steps[0]):
        return [_vec(starts[0], starts.size, lens[0], steps[0])]
    return [("idx", starts.astype(np.int64, copy=False), lens.astype(np.int64, copy=False))]


def segments(mine, other):
    """Local indices (segments) of the elements ``mine`` owns that ``other``
    owns too, in global order.  Both are maps of one dimension (nclx.dap.maps)
    or :class:`RangeMap` pieces."""
    a, b = mine.dist_type, other.dist_type
    if a == "b" and b == "b":
        lo, hi = owned_range(mine)
        lo2, hi2 = owned_range(other)
        lo, hi = max(lo, lo2), min(hi, hi2)
        return [_vec(lo - mine.start, 1, hi - lo)] if hi > lo else []
    if a == "b" and b == "c":
        lo, hi = owned_range(mine)
        return _block_in_cyclic(lo, hi, mine.start, other.block_size, other.grid_size,
                                other.grid_rank)
    if a == "c" and b == "b":
        lo2, hi2 = owned_range(other)
        args = (mine.block_size, mine.grid_size, mine.grid_rank)
        i, j = cyclic_count(lo2, *args), cyclic_count(hi2, *args)
        return [_vec(i, 1, j - i)] if j > i else []
    if a == "c" and b == "c" and (mine.block_size, mine.grid_size) == \
            (other.block_size, other.grid_size):
        same = mine.grid_rank == other.grid_rank and mine.local_size
        return [_vec(0, 1, mine.local_size)] if same else []
    # 'u' on either side, or cyclic layouts with different parameters
    loc = mine._owned_local()
    g = mine.global_from_local(loc)
    keep = other.owns(g)
    loc, g = loc[keep], g[keep]
    if g.size > 1 and np.any(np.diff(g) < 0):
        loc = loc[np.argsort(g, kind="stable")]
    return from_indices(loc.astype(np.int64, copy=False))


def nelems(segs):
    """Number of indices the segments list."""
    return sum(s[2] * s[3] if s[0] == "vec" else int(s[2].sum()) for s in segs)


def element_type(dtype, MPI):
    """The MPI type of one element: MPI's own for native numeric dtypes, the
    element's bytes otherwise (records, strings, big-endian, datetimes, long
    doubles).
    Returns ``(type, created)``."""
    dtype = np.dtype(dtype)
    # long doubles as bytes: MPI's LONG_DOUBLE moves the value's bytes only
    # (10 of x86-64's 16), leaving the rest of each target element as
    # np.empty had it, where a NumPy copy keeps all 16 (found by review)
    if dtype.kind in "biufc" and dtype.isnative and dtype.char in MPI._typedict and \
            dtype.char not in "gG":
        return MPI._typedict[dtype.char], False
    return MPI.BYTE.Create_contiguous(dtype.itemsize), True


def _start(seg):
    """The lowest index a segment lists (a 'vec' may step backwards)."""
    if seg[0] == "vec":
        return seg[1] + min(0, (seg[2] - 1) * seg[4])
    return int(seg[1].min())


def _dim_type(segs, inner, ext, made):
    """The datatype placing ``inner`` (extent ``ext``) at the segments'
    indices, relative to the first index; returns ``(type, first index)``."""
    base = min(_start(s) for s in segs)
    types, disps = [], []
    for s in segs:
        if s[0] == "vec":
            _, start, count, blen, stride = s
            if count == 1:
                t = inner if blen == 1 else inner.Create_contiguous(blen)
            else:
                t = inner.Create_hvector(count, blen, stride * ext)
            disp = (start - base) * ext
        else:
            starts, lens = s[1], s[2]
            # int64 arrays read through memoryviews: mpi4py converts element
            # by element, twice as fast from a memoryview as from NumPy scalars
            d = memoryview((starts - base) * ext)
            if np.all(lens == lens[0]):
                t = inner.Create_hindexed_block(int(lens[0]), d)
            else:
                t = inner.Create_hindexed(memoryview(np.ascontiguousarray(lens)), d)
            disp = 0
        if t is not inner:
            made.append(t)
        types.append(t)
        disps.append(disp)
    if len(types) == 1 and disps[0] == 0:
        return types[0], base
    t = inner.Create_struct([1] * len(types), disps, types)
    made.append(t)
    return t, base


def block_type(per_dim, strides, elem, MPI):
    """One committed datatype selecting, in a block of byte ``strides``
    (positive), the product of the per-dimension segments; returns
    ``(datatype, byte offset)``, or ``(None, 0)`` when nothing is selected.
    The caller frees the datatype; intermediate types are freed here."""
    if any(not segs for segs in per_dim):
        return None, 0
    made, t, offset = [], elem, 0
    for d in range(len(strides) - 1, -1, -1):
        ext = strides[d]
        if t.Get_extent() != (0, ext):
            t = t.Create_resized(0, ext)
            made.append(t)
        t, base = _dim_type(per_dim[d], t, ext, made)
        offset += base * ext
    final = t.Dup() if (t is elem or not made) else t
    final.Commit()
    for x in made:
        if x is not final:
            x.Free()
    return final, offset
