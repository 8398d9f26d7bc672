"""Moves whose datatypes list indices, in windows of bounded memory.

A move between layouts of regular dimensions (block, cyclic, block-cyclic
of the same parameters) describes each message with a handful of integers
(:mod:`nclx.dap.movetypes`) and is one ``MPI_Alltoallw``.  A dimension that
is unstructured ('u') on either side, or cyclic on both sides with different
parameters, needs an index list: one entry per element of this rank, on
each side of the move.  Built for the whole block at once those lists (and
the arrays that compute them, and MPI's own copy of its datatypes) cost
several times the block.

Such a move runs in *windows*: the global indices of one such dimension
(the longest) are cut into ranges ``[a, b)``, a window taking the next
range of each interval between the block ranks' ends (:func:`windows`),
and each window moves, in one ``Alltoallw``, the elements whose index
along that dimension lies in its ranges.  Every rank computes the same windows from the layouts alone
(no communication): each rank's elements in a window, on each side, stay
under an entry budget derived from its own blocks, :data:`FRACTION` of the
source and target blocks' bytes (at least :data:`FLOOR` bytes) at
:data:`ENTRY_BYTES` a listed element.  A rank's indices in a window come
from the sorted index tables of the layouts' maps (views, no copy), so a
window costs memory in proportion to its own elements only.
"""
import numpy as np

from nclx.dap.movetypes import RangeMap, from_indices, owned_range, cyclic_count

__all__ = ["indexed_dim", "has_no_elements", "windows", "window_segments", "window_settings",
           "FRACTION", "FLOOR", "ENTRY_BYTES"]

FRACTION = 0.04        # of the source + target blocks' bytes (the issue allows 5%)
FLOOR = 64 * 1024      # bytes a window may always use (small blocks)
ENTRY_BYTES = 64       # per listed element: NumPy arrays (tracemalloc) + MPI datatypes


def window_settings():
    """What every rank must set alike (each cuts the windows alone), read
    once for a move (:func:`windows` takes them): as floats, so that equal
    values of other types (``65536.0``, ``np.float64(0.04)``) agree."""
    return {"FRACTION": float(FRACTION), "FLOOR": float(FLOOR),
            "ENTRY_BYTES": float(ENTRY_BYTES)}


def has_no_elements(layout):
    """True when some dimension of the global array has length 0."""
    return any(_size(col[0]) == 0 for col in layout.maps)


def _kind(m):
    return m.dist_type, getattr(m, "block_size", None), getattr(m, "grid_size", None)


def _needs_indices(a, b):
    """For two map kinds (:func:`_kind`)."""
    if "u" in (a[0], b[0]):
        return True
    return a[0] == b[0] == "c" and a[1:] != b[1:]


def _size(m):
    return m.hi if isinstance(m, RangeMap) else m.size


def _windowable(m):
    """Maps with sorted index tables (or formulas) to cut windows from; a
    map of another kind (a flip's or roll's transformed indices) is not."""
    return m.dist_type != "u" or hasattr(m, "_sorted")


def indexed_dim(src, dst):
    """The dimension to cut into windows (the longest whose datatypes list
    indices), or None when every dimension is regular on both sides, or
    the dimension's maps cannot be cut (the move is then one Alltoallw)."""
    best = None
    for d, (cols_s, cols_d) in enumerate(zip(src.maps, dst.maps)):
        if not all(_windowable(m) for m in (*cols_s, *cols_d)):
            continue
        kinds_s, kinds_d = {_kind(m) for m in cols_s}, {_kind(m) for m in cols_d}
        if any(_needs_indices(a, b) for a in kinds_s for b in kinds_d):
            if best is None or _size(cols_s[0]) > _size(src.maps[best][0]):
                best = d
    return best


def _count_in(m, a, b):
    """How many global indices in ``[a, b)`` map ``m`` owns."""
    if m.dist_type == "u":
        lo, hi = np.searchsorted(m._sorted, (a, b))
        return int(hi - lo)
    if m.dist_type == "c":
        args = (m.block_size, m.grid_size, m.grid_rank)
        return cyclic_count(b, *args) - cyclic_count(a, *args)
    lo, hi = owned_range(m)
    return max(0, min(hi, b) - max(lo, a))


def _bounds(m, cur, e, ends):
    """Per interval: the largest ``b`` (at most the interval's end) with at
    most ``e`` indices of ``m`` in ``[cur, b)`` (``cur``, ``ends``: arrays)."""
    out = ends.copy()
    if m.dist_type == "u":
        i = np.searchsorted(m._sorted, cur) + e
        ok = i < m._sorted.size
        out[ok] = np.minimum(ends[ok], m._sorted[i[ok]])
    elif m.dist_type == "c":
        k, P, c = m.block_size, m.grid_size, m.grid_rank
        q, r = np.divmod(cur, k * P)
        j = q * k + np.clip(r - c * k, 0, k) + e          # local index e past the cursor
        ok = j < m.local_size
        g = ((j[ok] // k) * P + c) * k + j[ok] % k
        out[ok] = np.minimum(ends[ok], g)
    else:                  # a block: its own intervals only (its ends are interval edges)
        lo, hi = owned_range(m)
        inside = (cur >= lo) & (cur < hi)
        out[inside] = np.minimum(ends[inside], cur[inside] + e)
    return out


def _block_bytes(layout, rank, itemsize):
    c = layout.coords(rank)
    if c is None:
        return 0
    return itemsize * int(np.prod([layout.maps[d][x].local_size for d, x in enumerate(c)],
                                  dtype=np.int64))


def windows(src, dst, dim, nprocs, itemsize, settings=None):
    """Yields windows, each a list of ranges ``(a, b)`` of dimension
    ``dim``'s global indices; the ranges of all windows tile ``[0, n)``, the
    windows are the same on every rank, and each keeps every rank's listed
    elements on both sides within its entry budget.

    The dimension is first cut at the ends of the block maps' owned ranges:
    a window advances in every such interval at once, so that each block
    rank lists its own elements in every window (rather than one rank all
    of them while the others wait); a 'u' or cyclic map's budget is shared
    by the intervals.  ``settings``: :func:`window_settings` as agreed
    (read now when None).  A generator: no list of the windows is kept."""
    s = window_settings() if settings is None else settings
    n = _size(src.maps[dim][0])
    budgets = {}                          # (side, grid coordinate) -> entries
    for r in range(nprocs):
        cs, cd = src.coords(r), dst.coords(r)
        total = max(s["FLOOR"], s["FRACTION"] * (_block_bytes(src, r, itemsize)
                                                 + _block_bytes(dst, r, itemsize)))
        e = int(total // s["ENTRY_BYTES"])
        if cs is not None and cd is not None:
            e //= 2                       # both sides list their elements
        for side, c in ((0, cs), (1, cd)):
            if c is not None:
                key = (side, c[dim])
                budgets[key] = max(1, min(budgets.get(key, e), e))
    maps = [((src, dst)[side].maps[dim][c], e) for (side, c), e in budgets.items()]
    edges = {0, n}
    for m, _ in maps:
        if m.dist_type == "b":
            edges.update(min(max(x, 0), n) for x in owned_range(m))
    edges = np.array(sorted(edges), dtype=np.int64)
    cur, ends = edges[:-1].copy(), edges[1:]
    shares = []                           # each map's budget, shared by its intervals
    for m, e in maps:
        if m.dist_type == "b":
            lo, hi = owned_range(m)
            e //= max(1, int(np.count_nonzero((cur >= lo) & (cur < hi))))
        else:
            e //= max(1, cur.size)
        shares.append((m, max(1, e)))
    while True:
        live = np.flatnonzero(cur < ends)
        if live.size == 0:
            return
        c, t = cur[live], ends[live]
        b = t.copy()
        for m, e in shares:
            np.minimum(b, _bounds(m, c, e, t), out=b)
        np.maximum(b, c + 1, out=b)
        yield [(int(x), int(y)) for x, y in zip(c, b)]
        cur[live] = b


def _globals_in(m, a, b):
    """Sorted global indices in ``[a, b)`` that ``m`` owns."""
    if m.dist_type == "u":
        lo, hi = np.searchsorted(m._sorted, (a, b))
        return m._sorted[lo:hi]
    if m.dist_type == "c":
        args = (m.block_size, m.grid_size, m.grid_rank)
        i, j = cyclic_count(a, *args), cyclic_count(b, *args)
        return m.global_from_local(np.arange(i, j, dtype=np.int64))
    lo, hi = owned_range(m)
    start = max(lo, a)
    return np.arange(start, max(start, min(hi, b)), dtype=np.int64)


def _owned_of(g, m):
    """The elements of the sorted global indices ``g`` that ``m`` owns."""
    if g.size == 0:
        return g
    if m.dist_type == "u":
        lo, hi = np.searchsorted(m._sorted, (g[0], g[-1] + 1))
        s = m._sorted[lo:hi]
        if s.size == 0:
            return g[:0]
        pos = np.searchsorted(s, g)
        np.minimum(pos, s.size - 1, out=pos)
        return g[s[pos] == g]
    if m.dist_type == "c":
        return g[m.owns(g)]
    lo, hi = owned_range(m)
    i, j = np.searchsorted(g, (lo, hi))
    return g[i:j]


def _local_of(m, g):
    """Local indices (in ``m``'s buffer) of global indices ``g`` it holds."""
    if m.dist_type == "u":
        return m.order[np.searchsorted(m._sorted, g)]
    if m.dist_type == "c":
        return m.local_from_global(g)
    return g - m.start


def _may_meet(m, a, b):
    """False when a block map owns nothing in ``[a, b)`` (a quick skip)."""
    if m.dist_type != "b":
        return True
    lo, hi = owned_range(m)
    return lo < b and a < hi


def window_segments(mine, other, ranges):
    """:func:`nclx.dap.movetypes.segments` restricted to global indices in
    the ``ranges`` ``[(a, b), ...]`` (in order): the local indices of the
    elements there that both maps own, in global order, listed from the map
    with fewer of them in each range."""
    out = []
    for a, b in ranges:
        if not (_may_meet(mine, a, b) and _may_meet(other, a, b)):
            continue
        first, second = (mine, other) if _count_in(mine, a, b) <= _count_in(other, a, b) \
            else (other, mine)
        g = _owned_of(_globals_in(first, a, b), second)
        out += from_indices(_local_of(mine, g).astype(np.int64, copy=False))
    return out
