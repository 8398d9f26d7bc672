# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem, one lane: nclx's kernel of the sort/argsort ops.

A lane below the split threshold, or one whose order NumPy alone decides
(floats with zeros of both signs or NaNs of different bits in an unstable
sort, argsort indices other than 0..n-1), is sorted by NumPy's own function
on one thread.  Data already in order returns at once.  Integers of a
small range are counted (nclx._ncl.sortcount).  An unstable sort of values
is split by value (nclx._ncl.sortpart).  A stable sort or an argsort
is sorted in runs and merged (nclx._ncl.sortmerge).
"""
from libc.stdint cimport uint64_t

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS
from nclx._ncl.sortjob cimport sort_job, ncl_stock, ncl_part, MAXRUNS
from nclx._ncl.sortpart cimport ncl_sort_partition
from nclx._ncl.sortcount cimport ncl_sort_counting, ncl_sort_few
from nclx._ncl.sortmerge cimport ncl_sort_merged


cdef extern from "ncl_order.h" nogil:
    int ncl_is_sorted(int dt, const char *v, npy_intp n)
    int ncl_is_iota(const npy_intp *idx, npy_intp n)
    int ncl_scan_float(int isz, const char *x, npy_intp n, uint64_t *lo, uint64_t *hi)
    int ncl_order_prefetch()
    void ncl_order_set_prefetch(int on)

cdef npy_intp _threshold = 1 << 15      # sorts of fewer elements stay on NumPy's function
# NumPy's unstable sorts (its SIMD quicksort) are ~10x faster than its stable
# ones: below this many elements waking the team, the merge and the copy back
# cost more than they save (measured 0.3-0.7x at 1e5 with a sleeping team)
cdef npy_intp _fast_threshold = 1 << 18


cdef npy_intp ncl_split_min(sort_job *j) noexcept nogil:
    """Fewest elements this sort is split for: unstable value sorts start later."""
    if j.idx == NULL and j.kind != 2 and _fast_threshold > _threshold:
        return _fast_threshold
    return _threshold
cdef npy_intp _min_run = 1 << 13        # no run shorter than this
# in-order checks of fewer elements run on the calling thread: NumPy's
# timsort checks a sorted 1e5-element int64 run in about 20 us, and the
# team's start cost more than the half it saves (measured: 41.6 us stock,
# 57 us split on the team, docs/benchmarks.md)
cdef npy_intp _in_order_team = 1 << 18
# sorts not split are checked for order from this many elements (rows of an
# axis sort and small sorts are not: the check would cost them more)
cdef npy_intp _in_order_min = 1 << 14


cdef npy_intp ncl_sort_threshold() noexcept nogil:
    return _threshold


cdef const npy_intp *ncl_sort_threshold_at() noexcept nogil:
    """Where the split threshold lives (a caller's inlined fast path)."""
    return &_threshold


# ------------------------------------------------------------ team pieces

cdef enum:
    _NOT_IOTA = 256     # _t_scan: an argsort's indices are not 0..n-1


cdef void _t_scan(void *ctx, int tid, int nth) noexcept nogil:
    """Per run: what an unstable float sort may order unlike NumPy (values;
    argsorts too, whose indices are 0..n-1), or whether an argsort's indices
    are 0..n-1 (_NOT_IOTA)."""
    cdef sort_job *j = <sort_job *>ctx
    cdef int r
    cdef npy_intp lo, hi, i
    r = tid
    while r < j.nruns:
        lo = j.b[r]
        hi = j.b[r + 1]
        if j.idx != NULL:
            j.scan[r] = 0
            for i in range(lo, hi):
                if j.idx[i] != i:
                    j.scan[r] = _NOT_IOTA
                    break
            if j.scan[r] == 0 and j.kind != 2 and j.dt >= 9:
                j.scan[r] = ncl_scan_float(j.isz, j.v + lo * j.isz, hi - lo, &j.nanlo[r],
                                           &j.nanhi[r])
        else:
            j.scan[r] = ncl_scan_float(j.isz, j.v + lo * j.isz, hi - lo, &j.nanlo[r], &j.nanhi[r])
        r += nth


cdef int _whole(sort_job *j) noexcept nogil:
    return ncl_stock(j, j.v, j.idx, j.n)


cdef void _t_in_order(void *ctx, int tid, int nth) noexcept nogil:
    cdef sort_job *j = <sort_job *>ctx
    cdef npy_intp lo
    cdef int r = tid
    while r < j.nruns:
        lo = j.b[r] - 1 if r > 0 else 0
        j.scan[r] = ncl_is_sorted(j.dt, j.v + lo * j.isz, j.b[r + 1] - lo)
        r += nth


cdef int _in_order(sort_job *j) noexcept nogil:
    """1 when j.v[0:n) is in NumPy's order (each run checked on the team
    with the element before it; a thread stops at its first descent)."""
    cdef int r
    if j.n < _in_order_team:
        _t_in_order(j, 0, 1)
    else:
        ncl_team_run(j.nruns, _t_in_order, j)
    for r in range(j.nruns):
        if not j.scan[r]:
            return 0
    return 1


cdef bint _numpys_argsort(sort_job *j) noexcept nogil:
    """An unstable float argsort of data holding both zeros or a NaN (one
    pass on this thread): NumPy's function decides the order of equal keys
    (review 24c: its SIMD argsort moves NaNs' indices in data in order)."""
    cdef uint64_t lo, hi
    cdef int f
    if j.idx == NULL or j.kind == 2 or j.dt < 9:
        return False
    f = ncl_scan_float(j.isz, j.v, j.n, &lo, &hi)
    return (f & 3) == 3 or (f & 4) != 0


cdef int ncl_sort_lane(sort_job *j) noexcept nogil:
    """Sort j.v (or j.idx by j.v) on the team: NumPy's function on one
    thread below the split threshold or where its order of equal keys is
    its own; else by value (ncl_sort_partition) or in runs, then merged."""
    cdef int nth = ncl_threads_now(), r, nruns
    cdef int flags = 0, have = 0
    cdef uint64_t nanlo = 0, nanhi = 0
    if nth > MAXRUNS:
        nth = MAXRUNS
    nruns = nth
    if j.n // _min_run < nruns:
        nruns = <int>(j.n // _min_run)
    if nruns < 2 or j.n < ncl_split_min(j):
        # data already in order (as below), checked on this thread: an
        # unstable sort of sorted integers costs NumPy O(n log n) (1e5
        # int64: 2.1 ms), the check 0.15 ns an element (AVX2), and on other
        # data it stops at its first block of 2,048
        if j.n >= _in_order_min and (j.kind == 2 or j.dt < 9 or j.idx != NULL) \
                and not _numpys_argsort(j) and ncl_is_sorted(j.dt, j.v, j.n):
            if j.idx == NULL or ncl_is_iota(j.idx, j.n):
                return 0
        return _whole(j)
    j.nruns = nruns
    for r in range(nruns + 1):
        j.b[r] = ncl_part(j.n, r, nruns)
    if j.idx != NULL:
        # indices other than 0..n-1 (np.lexsort's later keys): NumPy's way
        ncl_team_run(nruns, _t_scan, j)
        for r in range(nruns):
            if j.scan[r] & _NOT_IOTA:
                return _whole(j)
            flags |= j.scan[r]
        # unstable float argsorts of data holding both zeros or a NaN: which
        # of equal keys comes first is NumPy's permutation's, and np.unique
        # shows it (its values' zero sign, return_inverse's indices of NaNs
        # under equal_nan=False; review 24) -- data in order too (NumPy's
        # SIMD argsort moves NaNs' indices; review 24c): NumPy's function
        if (flags & 3) == 3 or flags & 4:
            return _whole(j)
    # data already in order: a stable sort (and any sort of integers) leaves
    # it as it is, an argsort of it from 0..n-1 too (the sorting permutation);
    # checked on the team, each run with the element before it
    if (j.kind == 2 or j.dt < 9 or j.idx != NULL) and _in_order(j):
        if j.idx == NULL or ncl_is_iota(j.idx, j.n):
            return 0
    # integers of a small range: counted (any kind: equal integers are one)
    if j.idx == NULL and j.dt < 9 and ncl_sort_counting(j, nruns):
        return 0
    # few distinct bit patterns, no NaN, not both zeros: counted (any kind:
    # equal keys are then the same bits)
    if j.idx == NULL and ncl_sort_few(j, nruns):
        return 0
    if j.idx == NULL and j.kind != 2 and j.dt >= 9:
        # unstable float sorts: NumPy's order of equal keys with different
        # bits (-0.0/0.0, NaN payloads) is its own; leave those to it
        ncl_team_run(nruns, _t_scan, j)
        for r in range(nruns):
            flags |= j.scan[r]
            if j.scan[r] & 4:
                if not have:
                    nanlo = j.nanlo[r]
                    nanhi = j.nanhi[r]
                    have = 1
                nanlo = j.nanlo[r] if j.nanlo[r] < nanlo else nanlo
                nanhi = j.nanhi[r] if j.nanhi[r] > nanhi else nanhi
        if (flags & 3) == 3 or (have and nanlo != nanhi):
            return _whole(j)
        # no NaN (NumPy 2.0-2.4's sort rewrites them) and equal keys with
        # equal bits: data in order is its own unstable sort too
        if not have and _in_order(j):
            return 0
    if j.idx == NULL and j.kind != 2:
        return ncl_sort_partition(j, nruns, 2 * _min_run)
    return ncl_sort_merged(j, nruns, nth)

def fast_threshold(n=None):
    """The split threshold of unstable value sorts (elements; the larger of
    it and threshold() applies); with ``n``, set it (>= 2)."""
    global _fast_threshold
    if n is not None:
        if int(n) < 2:
            raise ValueError(f"the sort threshold must be at least 2, not {n}")
        _fast_threshold = int(n)
    return _fast_threshold


def threshold(n=None):
    """The split threshold of sorts (elements); with ``n``, set it (>= 2)."""
    global _threshold
    if n is not None:
        if int(n) < 2:
            raise ValueError(f"the sort threshold must be at least 2, not {n}")
        _threshold = int(n)
    return _threshold


def in_order_team(n=None):
    """The fewest elements whose in-order check runs on the team; with
    ``n``, set it (>= 0)."""
    global _in_order_team
    if n is not None:
        if int(n) < 0:
            raise ValueError(f"in_order_team must be >= 0, not {n}")
        _in_order_team = int(n)
    return _in_order_team


def in_order_min(n=None):
    """The fewest elements of a sort not split whose order is checked
    first; with ``n``, set it (>= 0)."""
    global _in_order_min
    if n is not None:
        if int(n) < 0:
            raise ValueError(f"in_order_min must be >= 0, not {n}")
        _in_order_min = int(n)
    return _in_order_min


def in_order_prefetch(on=None):
    """Whether the in-order check of more than 2 MiB prefetches a block
    ahead (by default yes, except on AMD processors: docs/sort.md); with
    ``on``, set it.  Results do not depend on it."""
    if on is not None:
        ncl_order_set_prefetch(1 if on else 0)
    return bool(ncl_order_prefetch())


def min_run(n=None):
    """The shortest run a thread sorts (elements); with ``n``, set it (>= 1)."""
    global _min_run
    if n is not None:
        if int(n) < 1:
            raise ValueError(f"the shortest run must be at least 1, not {n}")
        _min_run = int(n)
    return _min_run
