# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem: the threaded unstable sort of values.

An unstable sort (NumPy's quicksort and heapsort kinds) of values has to
give NumPy's values in order, nothing more, so the threads split the data
by value: a pivot from a sorted sample of the segment, each thread
partitions its chunk in place (ncl_part.h), the elements left on the wrong
side of the segment's boundary are swapped across it on all threads, and
each side goes on with its share of the threads until every thread holds a
segment, which NumPy's own function sorts.  No scratch, no merge, no copy
back; NaNs are never lower than a pivot, so they end last as NumPy puts
them.  A segment whose sample gives no pivot (a NaN, or too many equal
keys) is sorted whole by one thread.
"""
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, MAX_THREADS
from nclx._ncl.sortjob cimport sort_job, ncl_stock, ncl_part


cdef extern from "ncl_part.h" nogil:
    npy_intp ncl_partition(int dt, char *v, npy_intp n, const char *pivot, int le, int vec)
    int ncl_vpart_here()
    int ncl_pick_pivot(int dt, const char *s, npy_intp m, npy_intp want, char *pivot, int *le)
    void ncl_swap_ranges(char *a, char *b, size_t len)


cdef int _vector = 1       # the vector partition of 64-bit keys where it runs


def vector_partition(on=None):
    """Whether the partition of 64-bit keys (float64, int64, uint64) uses
    the AVX2 vector partition (``ncl_vpart.h``) where this processor runs
    it (default True; the scalar block partition otherwise); with ``on``,
    set it.  Returns the setting before the call (a test or benchmark
    compares both paths on one machine)."""
    global _vector
    before = bool(_vector)
    if on is not None:
        _vector = 1 if on else 0
    return before


def vector_partition_here():
    """True when this build and processor run the vector partition."""
    return bool(ncl_vpart_here())


cdef struct part_seg:
    npy_intp lo, hi, mid          # the segment; its boundary once partitioned
    npy_intp nmis                 # elements on the wrong side of mid after the chunks' pass
    int t0, tc                    # its items (planned threads) t0 .. t0 + tc - 1
    int split, final, le
    char pivot[8]


cdef struct part_job:
    sort_job *j
    int nseg, nitems
    part_seg seg[MAX_THREADS]
    int item_seg[MAX_THREADS]     # the segment of each item
    npy_intp cnt[MAX_THREADS]     # lower elements in the item's chunk


cdef inline void _chunk(part_seg *s, int k, npy_intp *c0, npy_intp *c1) noexcept nogil:
    c0[0] = s.lo + ncl_part(s.hi - s.lo, k, s.tc)
    c1[0] = s.lo + ncl_part(s.hi - s.lo, k + 1, s.tc)


cdef void _t_partition(void *ctx, int tid, int nth) noexcept nogil:
    """Each item partitions its chunk of its segment in place."""
    cdef part_job *P = <part_job *>ctx
    cdef part_seg *s
    cdef npy_intp c0, c1
    cdef int w = tid
    while w < P.nitems:
        s = &P.seg[P.item_seg[w]]
        if s.split:
            _chunk(s, w - s.t0, &c0, &c1)
            P.cnt[w] = ncl_partition(P.j.dt, P.j.v + c0 * P.j.isz, c1 - c0, s.pivot, s.le,
                                     _vector)
        w += nth


cdef inline void _misplaced(part_job *P, part_seg *s, int k, bint upper,
                            npy_intp *x, npy_intp *y) noexcept nogil:
    """Chunk k's upper elements left of mid (upper), or its lower elements
    right of mid: [x, y), empty when x >= y."""
    cdef npy_intp c0, c1, b
    _chunk(s, k, &c0, &c1)
    b = c0 + P.cnt[s.t0 + k]
    if upper:
        x[0] = b
        y[0] = c1 if c1 < s.mid else s.mid
    else:
        x[0] = c0 if c0 > s.mid else s.mid
        y[0] = b


cdef inline int _seek(part_job *P, part_seg *s, bint upper, npy_intp rank,
                      npy_intp *x, npy_intp *y) noexcept nogil:
    """The range holding the rank-th misplaced element of its kind, from it."""
    cdef int k
    for k in range(s.tc):
        _misplaced(P, s, k, upper, x, y)
        if y[0] - x[0] > rank:
            x[0] += rank
            return k
        if y[0] > x[0]:
            rank -= y[0] - x[0]
    return s.tc


cdef void _t_swap(void *ctx, int tid, int nth) noexcept nogil:
    """Each item swaps its share of the misplaced pairs across mid: the
    r-th upper element left of mid with the r-th lower element right of it."""
    cdef part_job *P = <part_job *>ctx
    cdef part_seg *s
    cdef npy_intp r0, r1, left, a, ae, b, be, c
    cdef int w = tid, ka, kb, k, isz = P.j.isz
    while w < P.nitems:
        s = &P.seg[P.item_seg[w]]
        if s.split and s.nmis > 0:
            k = w - s.t0
            r0 = s.nmis * k // s.tc
            r1 = s.nmis * (k + 1) // s.tc
            left = r1 - r0
            if left > 0:
                ka = _seek(P, s, True, r0, &a, &ae)
                kb = _seek(P, s, False, r0, &b, &be)
                while left > 0 and ka < s.tc and kb < s.tc:
                    if a >= ae:
                        ka += 1
                        if ka < s.tc:
                            _misplaced(P, s, ka, True, &a, &ae)
                        continue
                    if b >= be:
                        kb += 1
                        if kb < s.tc:
                            _misplaced(P, s, kb, False, &b, &be)
                        continue
                    c = ae - a if ae - a < be - b else be - b
                    c = c if c < left else left
                    ncl_swap_ranges(P.j.v + a * isz, P.j.v + b * isz, c * isz)
                    a += c
                    b += c
                    left -= c
        w += nth


cdef void _t_leaves(void *ctx, int tid, int nth) noexcept nogil:
    """Each segment sorted by NumPy's function, on the item it starts at."""
    cdef part_job *P = <part_job *>ctx
    cdef part_seg *s
    cdef int w = tid
    while w < P.nitems:
        s = &P.seg[P.item_seg[w]]
        if s.t0 == w and s.hi - s.lo > 1:
            if ncl_stock(P.j, P.j.v + s.lo * P.j.isz, NULL, s.hi - s.lo) < 0:
                P.j.failed = 1
        w += nth


cdef int _pivot(part_job *P, part_seg *s) noexcept nogil:
    """A pivot for segment s from a sorted sample of 4,096 evenly spaced
    elements (1,024 below 2**20, all of a shorter segment), at the quantile of the segment's first
    half of the items; 0 when none splits it (a NaN, or too many equal
    keys)."""
    cdef sort_job *j = P.j
    cdef char buf[4096 * 8]
    cdef npy_intp i, m = 4096 if s.hi - s.lo >= (1 << 20) else 1024
    cdef npy_intp step
    if m > s.hi - s.lo:
        m = s.hi - s.lo
    step = (s.hi - s.lo) // m
    cdef int le = 0
    for i in range(m):
        memcpy(buf + i * j.isz, j.v + (s.lo + i * step) * j.isz, j.isz)
    if ncl_stock(j, buf, NULL, m) < 0:
        return 0
    if not ncl_pick_pivot(j.dt, buf, m, m * (s.tc // 2) // s.tc, s.pivot, &le):
        return 0
    s.le = le
    return 1


cdef int ncl_sort_partition(sort_job *j, int items, npy_intp min_seg) noexcept nogil:
    """An unstable sort of values: the segments split by value until each
    has one item, on the team, then each sorted by NumPy's function."""
    cdef part_job P
    cdef part_seg *s
    cdef part_seg nxt[MAX_THREADS]
    cdef int i, k, w, more, ns
    cdef npy_intp c0, c1, lower, b
    P.j = j
    P.nitems = items
    P.nseg = 1
    P.seg[0].lo = 0
    P.seg[0].hi = j.n
    P.seg[0].t0 = 0
    P.seg[0].tc = items
    P.seg[0].final = 0
    j.failed = 0
    while True:
        more = 0
        for i in range(P.nseg):
            s = &P.seg[i]
            for w in range(s.t0, s.t0 + s.tc):
                P.item_seg[w] = i
            s.split = 0
            if s.final or s.tc < 2 or s.hi - s.lo < min_seg:
                s.final = 1
                continue
            s.split = _pivot(&P, s)
            s.final = not s.split
            more |= s.split
        if not more:
            break
        ncl_team_run(items, _t_partition, &P)
        for i in range(P.nseg):
            s = &P.seg[i]
            if not s.split:
                continue
            lower = 0
            for k in range(s.tc):
                lower += P.cnt[s.t0 + k]
            s.mid = s.lo + lower
            s.nmis = 0
            for k in range(s.tc):
                _chunk(s, k, &c0, &c1)
                b = c0 + P.cnt[s.t0 + k]
                c1 = c1 if c1 < s.mid else s.mid
                if c1 > b:
                    s.nmis += c1 - b
        ncl_team_run(items, _t_swap, &P)
        ns = 0
        for i in range(P.nseg):
            s = &P.seg[i]
            if s.split:
                nxt[ns] = s[0]
                nxt[ns].hi = s.mid
                nxt[ns].tc = s.tc // 2
                nxt[ns].final = 0
                nxt[ns + 1] = s[0]
                nxt[ns + 1].lo = s.mid
                nxt[ns + 1].t0 = s.t0 + s.tc // 2
                nxt[ns + 1].tc = s.tc - s.tc // 2
                nxt[ns + 1].final = 0
                ns += 2
            else:
                nxt[ns] = s[0]
                ns += 1
        P.nseg = ns
        for i in range(ns):
            P.seg[i] = nxt[i]
    for i in range(P.nseg):
        s = &P.seg[i]
        for w in range(s.t0, s.t0 + s.tc):
            P.item_seg[w] = i
    ncl_team_run(items, _t_leaves, &P)
    return -1 if j.failed else 0
