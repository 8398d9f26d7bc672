# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem: the threaded counting sorts.

Integers of a small range (``ncl_sort_counting``; 16-bit integers of an
array at least 8 times longer than 65,536 over their whole range) and few
distinct values of any fixed width (``ncl_sort_few``).

A sort of integer values gives the same output whatever the kind (equal
integers are indistinguishable), and that output is fixed by how many times
each value occurs: each thread counts its chunk's values in its own
histogram (ncl_count.h), the histograms are summed, and each thread writes
its own equal slice of the output.  Taken when a sample of 1,024 evenly
spaced elements spans at most 16,384 values (every bool, int8 and uint8
array) and the array is at least 8 times longer than that span; a value
outside the sample's span stops it after the counting pass, before
anything is written, and the sort goes the other ways.

Few distinct values (ncl_few.h): a sort of values (no argsort, any kind)
whose sample of up to 4,096 evenly spaced elements holds at most 256
distinct bit patterns, each seen 8 times on average, none a NaN and not
both zeros, is counted through a collision-free hash table of those
patterns: equal keys are then the same bits, so every kind of NumPy's sort
writes the same bytes.  An element whose bits are not in the table stops
the counting pass at the end of its block of 4,096 on every thread, before
anything is written.
"""
from libc.stdint cimport int16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport calloc, free, malloc

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, MAX_THREADS
from nclx._ncl.sortjob cimport sort_job, ncl_part

cdef extern from "ncl_count.h" nogil:
    void ncl_count_hist(int dt, const char *v, npy_intp n, const char *lo, npy_intp range,
                        npy_intp *hist)
    void ncl_count_fill(int dt, char *out, npy_intp a, npy_intp b, const char *lo, npy_intp k)
    void ncl_count_sample(int dt, const char *v, npy_intp m, npy_intp step, char *lo, char *hi)
    npy_intp ncl_count_span(int dt, const char *lo, const char *hi, npy_intp cap)

cdef enum:
    MAX_SPAN = 1 << 14


cdef struct count_job:
    sort_job *j
    int items
    npy_intp range                # bins 0 .. range: lo .. lo + range
    npy_intp stride               # histogram length per item (range + 2)
    npy_intp *hist                # items histograms, then the starts (range + 2)
    char lo[8]


cdef inline npy_intp _run_at(const npy_intp *starts, npy_intp last, npy_intp o) noexcept nogil:
    """The last of runs 0..last (run k starts at output position starts[k],
    ascending) that starts at or before position ``o``."""
    cdef npy_intp lo = 0, hi = last, k
    while lo < hi:
        k = (lo + hi + 1) // 2
        if starts[k] <= o:
            lo = k
        else:
            hi = k - 1
    return lo


cdef void _t_hist(void *ctx, int tid, int nth) noexcept nogil:
    cdef count_job *C = <count_job *>ctx
    cdef sort_job *j = C.j
    cdef npy_intp c0, c1
    cdef int w = tid
    while w < C.items:
        c0 = ncl_part(j.n, w, C.items)
        c1 = ncl_part(j.n, w + 1, C.items)
        ncl_count_hist(j.dt, j.v + c0 * j.isz, c1 - c0, C.lo, C.range, C.hist + w * C.stride)
        w += nth


cdef void _t_fill(void *ctx, int tid, int nth) noexcept nogil:
    """Item w writes output positions [o0, o1): the values whose runs
    (starts[k] .. starts[k + 1]) cross it."""
    cdef count_job *C = <count_job *>ctx
    cdef sort_job *j = C.j
    cdef npy_intp *starts = C.hist + C.items * C.stride
    cdef npy_intp o0, o1, k, a, b
    cdef int w = tid
    while w < C.items:
        o0 = ncl_part(j.n, w, C.items)
        o1 = ncl_part(j.n, w + 1, C.items)
        k = _run_at(starts, C.range, o0)
        a = o0
        while a < o1 and k <= C.range:
            b = starts[k + 1] if starts[k + 1] < o1 else o1
            if b > a:
                ncl_count_fill(j.dt, j.v, a, b, C.lo, k)
                a = b
            k += 1
        w += nth


cdef int ncl_sort_counting(sort_job *j, int items) noexcept nogil:
    """Sort the integer values j.v[0:n) by counting; 1 when sorted, 0 when
    not taken (the data untouched: the span is too wide, a value is outside
    the sample's span, or no memory)."""
    cdef count_job C
    cdef char hi[8]
    cdef int16_t lo16
    cdef npy_intp m = 1024, step, k, total, bad = 0
    cdef int w
    if j.dt > 8 or j.idx != NULL or j.n < 8 * 256:
        return 0
    if j.isz == 2 and j.n >= 8 * 65536 * items:
        # 16-bit integers of an array 8 times longer than their whole
        # range a thread: the whole range is the window, no sample, no miss (a few
        # values spread wide would otherwise go to ncl_sort_few, whose
        # count a late stray can waste)
        lo16 = -32768 if j.dt == 2 else 0       # int16's least, or uint16's
        memcpy(C.lo, &lo16, 2)
        C.range = 65535
    else:
        step = j.n // m
        ncl_count_sample(j.dt, j.v, m, step, C.lo, hi)
        C.range = ncl_count_span(j.dt, C.lo, hi, MAX_SPAN + 1)
        if C.range > MAX_SPAN or j.n < 8 * (C.range + 1):
            return 0
    C.j = j
    C.items = items
    C.stride = C.range + 2
    C.hist = <npy_intp *>calloc((items + 1) * C.stride, sizeof(npy_intp))
    if C.hist == NULL:
        return 0
    ncl_team_run(items, _t_hist, &C)
    for w in range(items):
        bad += C.hist[w * C.stride + C.range + 1]
    if bad:
        free(C.hist)
        return 0
    # starts[k]: first output position of value lo + k; starts[range + 1] = n
    total = 0
    for k in range(C.range + 1):
        C.hist[items * C.stride + k] = total
        for w in range(items):
            total += C.hist[w * C.stride + k]
    C.hist[items * C.stride + C.range + 1] = total
    ncl_team_run(items, _t_fill, &C)
    free(C.hist)
    ncl_add_long(&_range_sorts, 1)
    return 1


# ------------------------------------------------------- few distinct values

cdef extern from "ncl_few.h" nogil:
    ctypedef struct ncl_few_table:
        int nkeys
        npy_intp slots
        uint64_t keys[256]
    enum:
        NCL_FEW_HISTS
    int ncl_few_build(ncl_few_table *t, int dt, int isz, const char *v, npy_intp m,
                      npy_intp step, int maxkeys)
    int ncl_few_count(const ncl_few_table *t, const char *v, npy_intp n, uint32_t *h,
                      npy_intp *tot, int *stop)
    npy_intp ncl_few_slot(const ncl_few_table *t, uint64_t k)
    void ncl_few_fill(int isz, char *out, npy_intp a, npy_intp b, uint64_t k, int stream)

cdef extern from "ncl_atomic.h" nogil:
    void ncl_add_long(long *p, long v)

cdef long _few_sorts = 0          # sorts done by counting few distinct values
cdef long _range_sorts = 0        # sorts done by counting integers of a small range


cdef struct few_job:
    sort_job *j
    ncl_few_table *t
    int items
    int stop                      # an element outside the table was found
    uint32_t *hist                # per item: NCL_FEW_HISTS histograms of the slots
    npy_intp *tot                 # per item: its counts per slot; then the starts (nkeys + 1)


cdef void _t_few_count(void *ctx, int tid, int nth) noexcept nogil:
    cdef few_job *F = <few_job *>ctx
    cdef sort_job *j = F.j
    cdef npy_intp c0, c1, S = F.t.slots
    cdef int w = tid
    while w < F.items:
        c0 = ncl_part(j.n, w, F.items)
        c1 = ncl_part(j.n, w + 1, F.items)
        ncl_few_count(F.t, j.v + c0 * j.isz, c1 - c0, F.hist + w * NCL_FEW_HISTS * S,
                      F.tot + w * S, &F.stop)
        w += nth


cdef void _t_few_fill(void *ctx, int tid, int nth) noexcept nogil:
    """Item w writes output positions [o0, o1)."""
    cdef few_job *F = <few_job *>ctx
    cdef sort_job *j = F.j
    cdef npy_intp nk = F.t.nkeys
    cdef npy_intp *starts = F.tot + F.items * F.t.slots
    cdef npy_intp o0, o1, k, a, b
    cdef int w = tid, stream
    while w < F.items:
        o0 = ncl_part(j.n, w, F.items)
        o1 = ncl_part(j.n, w + 1, F.items)
        # a slice larger than the caches: non-temporal stores
        stream = (o1 - o0) * j.isz >= 1 << 21
        k = _run_at(starts, nk - 1, o0)
        a = o0
        while a < o1 and k < nk:
            b = starts[k + 1] if starts[k + 1] < o1 else o1
            if b > a:
                ncl_few_fill(j.isz, j.v, a, b, F.t.keys[k], stream)
                a = b
            k += 1
        w += nth


cdef int ncl_sort_few(sort_job *j, int items) noexcept nogil:
    """Sort the values j.v[0:n) of few distinct bit patterns by counting;
    1 when sorted, 0 when not taken (the data untouched)."""
    cdef few_job F
    cdef ncl_few_table *t
    cdef npy_intp m, step, k, total, nk, S, s
    cdef int w, maxkeys
    if j.idx != NULL or j.dt < 2 or j.dt == 5 or j.dt > 10 or j.n < 1 << 14:
        return 0
    if j.isz != 2 and j.isz != 4 and j.isz != 8:
        return 0
    m = j.n // 16 if j.n // 16 < 4096 else 4096
    step = j.n // m
    maxkeys = <int>(m // 8)
    t = <ncl_few_table *>malloc(sizeof(ncl_few_table))
    if t == NULL:
        return 0
    if not ncl_few_build(t, j.dt, j.isz, j.v, m, step, maxkeys):
        free(t)
        return 0
    nk = t.nkeys
    S = t.slots
    F.j = j
    F.t = t
    F.items = items
    F.stop = 0
    F.hist = <uint32_t *>calloc(items * NCL_FEW_HISTS * S, sizeof(uint32_t))
    F.tot = <npy_intp *>calloc(items * S + nk + 1, sizeof(npy_intp))
    if F.hist == NULL or F.tot == NULL:
        free(F.hist)
        free(F.tot)
        free(t)
        return 0
    ncl_team_run(items, _t_few_count, &F)
    free(F.hist)
    if F.stop:
        free(F.tot)
        free(t)
        return 0
    # starts[k]: the first output position of key k; starts[nk] = n
    total = 0
    for k in range(nk):
        F.tot[items * S + k] = total
        s = ncl_few_slot(t, t.keys[k])
        for w in range(items):
            total += F.tot[w * S + s]
    F.tot[items * S + nk] = total
    if total != j.n:              # cannot happen: every element matched a key
        free(F.tot)
        free(t)
        return 0
    ncl_team_run(items, _t_few_fill, &F)
    free(F.tot)
    free(t)
    ncl_add_long(&_few_sorts, 1)
    return 1


def few_sorts():
    """How many sorts were done by counting few distinct values (since import)."""
    return _few_sorts


def range_sorts():
    """How many sorts were done by counting integers of a small range (since import)."""
    return _range_sorts
