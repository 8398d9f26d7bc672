# cython: wraparound=False, boundscheck=False
"""The lanes of an N-d sort on NumPy 2.5, sorted in batches on the team.

NumPy 2.5 sorts an N-d array by calling the DType's sort ArrayMethod loop
once per lane (``_new_sortlike``), each call given only the lane's pointer
and length -- not the array -- so nclx cannot sort every lane at the first
call as it does through the ArrFuncs slots (nclx._ncl.sortrows).  Instead
the lanes are *deferred*: each call records the lane and returns, and the
recorded lanes are sorted on the team, a batch at a time, with NumPy's own
loop; the last batch when NumPy frees the loop's auxiliary data, which
``PyArray_Sort``/``PyArray_ArgSort`` do after the last lane and before they
return.

Deferring is only correct where NumPy sorts the array in place: when a lane
needs a copy (unaligned, strided, byte-swapped), NumPy sorts a buffer it
reuses for every lane and copies it back as soon as the call returns.  The
buffer has one address; the lanes of an array each have their own.  So the
first lane is sorted at once, and deferring starts at the second only when
its pointers (values, and an argsort's indices) differ from the first's.
Only unstable sorts are deferred (NumPy's in-place quicksort cannot fail:
the last batch, run while NumPy frees the data, has no way to report an
error).  ``install()`` checks the whole pattern once (``probe``): a NumPy
that sorted its lanes otherwise gets the lanes sorted one call at a time.
"""
from libc.stdlib cimport malloc, realloc, free, qsort
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now
from nclx._ncl.sortjob cimport ncl_part, ncl_sort_run_fn
from nclx._ncl.sortrun cimport ncl_sort_threshold

cdef int _on = 1            # deferring allowed (probe() turns it off on a NumPy it fails)
cdef int _probing = 0       # probe(): defer whatever the thread count
cdef long long _deferred = 0    # lanes deferred so far (tests: did it happen)


cdef const int *ncl_lanes_probing() noexcept nogil:
    """Where probe()'s flag lives (a caller's inlined fast path)."""
    return &_probing


cdef bint ncl_lanes_on() noexcept nogil:
    return _on != 0


cdef void ncl_lanes_init(lane_batch *b, npy_intp isz, ncl_sort_run_fn run, void *runctx) noexcept nogil:
    b.isz = isz
    b.calls = 0
    b.mode = 0
    b.first_v = NULL
    b.first_i = NULL
    b.n = 0
    b.pv = &b.inl[0]
    b.pi = &b.inl[16]
    b.npend = 0
    b.cap = 16
    b.flush_at = 0
    b.failed = 0
    b.run = run
    b.runctx = runctx


cdef int _grow(lane_batch *b) noexcept nogil:
    """Twice the room for lane pointers; the first lists live in the batch
    itself (``inl``), later ones on the heap."""
    cdef npy_intp cap = 2 * b.cap
    cdef char **pv
    cdef char **pi
    if b.pv == &b.inl[0]:
        pv = <char **>malloc(cap * sizeof(char *))
        pi = <char **>malloc(cap * sizeof(char *))
        if pv == NULL or pi == NULL:
            free(pv)
            free(pi)
            return -1
        memcpy(pv, b.pv, b.npend * sizeof(char *))
        memcpy(pi, b.pi, b.npend * sizeof(char *))
        b.pv, b.pi, b.cap = pv, pi, cap
        return 0
    pv = <char **>realloc(b.pv, cap * sizeof(char *))
    if pv == NULL:
        return -1
    b.pv = pv
    pi = <char **>realloc(b.pi, cap * sizeof(char *))
    if pi == NULL:
        return -1
    b.pi = pi
    b.cap = cap
    return 0


cdef int ncl_lanes_take(lane_batch *b, char *v, char *i, npy_intp n, bint eligible) noexcept nogil:
    """Record the lane (values ``v``, indices ``i`` or NULL) for a later
    batch: 0, or -1 when the batch it completed failed; NCL_LANE_NOT_TAKEN
    when the caller must sort it now (the first lane, a buffer NumPy reuses,
    not ``eligible``, one thread)."""
    cdef int nth
    b.calls += 1
    if b.calls == 1:
        b.first_v = v
        b.first_i = i
        b.n = n
        return NCL_LANE_NOT_TAKEN
    if b.mode == 0:
        nth = ncl_threads_now()
        b.mode = 1 if (eligible and _on and (nth >= 2 or _probing) and n == b.n
                       and v != b.first_v and (i == NULL or i != b.first_i)) else 2
        b.flush_at = max(4 * nth, (ncl_sort_threshold() + n - 1) // max(n, 1))
    if b.mode != 1 or not eligible or n != b.n:
        return NCL_LANE_NOT_TAKEN
    if (b.calls - 1) * n < ncl_sort_threshold() and not _probing:
        # the first lanes go straight to NumPy's loop: an N-d sort of fewer
        # elements than the threaded size never defers (its batch would run
        # on one thread anyway), a larger one defers the rest
        return NCL_LANE_NOT_TAKEN
    if b.npend == b.cap and _grow(b) < 0:
        return NCL_LANE_NOT_TAKEN              # no memory for the list: sort it now
    b.pv[b.npend] = v
    b.pi[b.npend] = i
    b.npend += 1
    global _deferred
    _deferred += 1                             # a statistic: races only miscount
    if b.npend >= b.flush_at:
        return ncl_lanes_flush(b)
    return 0


cdef void _t_lanes(void *ctx, int tid, int nth) noexcept nogil:
    cdef lane_batch *b = <lane_batch *>ctx
    cdef npy_intp k, k0 = ncl_part(b.npend, tid, nth), k1 = ncl_part(b.npend, tid + 1, nth)
    for k in range(k0, k1):
        if b.run(b.runctx, b.pv[k], <npy_intp *>b.pi[k], b.n) < 0:
            b.failed = 1


cdef int _cmp_ptr(const void *x, const void *y) noexcept nogil:
    cdef size_t p = <size_t>(<char **>x)[0], q = <size_t>(<char **>y)[0]
    return -1 if p < q else (1 if p > q else 0)


cdef bint _overlap(lane_batch *b) noexcept nogil:
    """Whether two recorded lanes share memory (an ``as_strided`` view sorted
    in place): then they are sorted one after the other, in NumPy's order.
    An argsort only reads its values (its indices are NumPy's fresh array)."""
    cdef npy_intp k, span = b.n * b.isz
    cdef char **p
    if b.pi[0] != NULL or b.npend < 2:
        return False
    p = <char **>malloc(b.npend * sizeof(char *))
    if p == NULL:
        return True                       # cannot tell: the safe order
    memcpy(p, b.pv, b.npend * sizeof(char *))
    qsort(p, b.npend, sizeof(char *), _cmp_ptr)
    for k in range(1, b.npend):
        if p[k] - p[k - 1] < span:
            free(p)
            return True
    free(p)
    return False


cdef int ncl_lanes_flush(lane_batch *b) noexcept nogil:
    """Sort the recorded lanes (on the team when they are many and share no
    memory, else in the order NumPy handed them over): 0 or -1."""
    cdef int nth
    if b.npend == 0:
        return 0
    nth = ncl_threads_now()
    b.failed = 0
    if nth < 2 or b.npend * b.n < ncl_sort_threshold() or _overlap(b):
        _t_lanes(b, 0, 1)
    else:
        ncl_team_run(nth if nth < b.npend else <int>b.npend, _t_lanes, b)
    b.npend = 0
    return -1 if b.failed else 0


cdef void ncl_lanes_release(lane_batch *b) noexcept nogil:
    """The last batch, then the list's memory."""
    ncl_lanes_flush(b)
    if b.pv != &b.inl[0]:
        free(b.pv)
        free(b.pi)
    b.pv = &b.inl[0]
    b.pi = &b.inl[16]
    b.cap = 16


def deferred():
    """How many lanes were deferred so far (in this process)."""
    return _deferred


def enabled():
    """Whether N-d sorts' lanes may be deferred (NumPy 2.5's sort methods)."""
    return _on != 0


def set_enabled(flag):
    """Allow (True) or forbid deferring; returns the previous setting."""
    global _on
    old = _on != 0
    _on = 1 if flag else 0
    return old


def probe(sort):
    """Check once that ``sort`` (np.sort through nclx's methods) leaves every
    lane sorted when it returns with lanes deferred: the NumPy call pattern
    this module relies on.  Turns deferring off and returns why when not,
    '' when it holds."""
    global _on, _probing
    import numpy as np
    a = np.arange(8 * 9, 0, -1, dtype=np.int64).reshape(9, 8)
    want = a[:, ::-1].copy()
    _probing = 1
    try:
        got = sort(a, axis=1, kind="quicksort")
    except Exception as exc:      # noqa: BLE001 - a NumPy that refuses: do not defer
        _on = 0
        return f"the probe sort raised {type(exc).__name__}: {exc}"
    finally:
        _probing = 0
    if got.tobytes() != want.tobytes():
        _on = 0
        return "the probe sort returned before its deferred lanes were sorted"
    return ""
