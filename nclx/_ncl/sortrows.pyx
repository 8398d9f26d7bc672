# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem: row batches.

NumPy sorts the lanes of an N-d array one call at a time.  When the first
lane's call arrives (the array's first element, no hook registered) the
entry sorts every lane at once, lanes split across the threads, each lane
by NumPy's function; the following calls of that sort find their lane done
and return (thread-local state: the lane NumPy will hand over next).
"""
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now
from nclx._ncl.sortjob cimport sort_job, ncl_stock, ncl_part
from nclx._ncl.sortrun cimport ncl_split_min

cnp.import_array()


cdef extern from *:
    """
    /* the lanes of an N-d sort already sorted by a row batch, per thread */
    typedef struct {
        void *arr;              /* the array NumPy is sorting (its 3rd argument) */
        char *next;             /* the lane NumPy will hand over next */
        npy_intp n, left;       /* lane length; lanes still to be handed over */
        int nd;                 /* dimensions other than the sorted one */
        npy_intp shape[64], stride[64], index[64];
    } ncl_rows_state;
    static __thread ncl_rows_state ncl_rows_tls;
    static ncl_rows_state *ncl_rows(void) { return &ncl_rows_tls; }
    /* threads with lanes of a batch still to be handed over (while 0 no
     * lane can be one a batch sorted: nclx._ncl.sortentry's short path) */
    static int ncl_rows_pending_n = 0;
    static inline void ncl_rows_left(ncl_rows_state *s, npy_intp left) {
        if ((s->left != 0) != (left != 0))
            __atomic_add_fetch(&ncl_rows_pending_n, left != 0 ? 1 : -1, __ATOMIC_ACQ_REL);
        s->left = left;
    }
    """
    ctypedef struct ncl_rows_state:
        void *arr
        char *next
        npy_intp n, left
        int nd
        npy_intp shape[64]
        npy_intp stride[64]
        npy_intp index[64]
    ncl_rows_state *ncl_rows() nogil
    int ncl_rows_pending_n
    void ncl_rows_left(ncl_rows_state *s, npy_intp left) nogil

cdef extern from "numpy/arrayobject.h" nogil:
    ctypedef struct PyArrayObject
    bint _is_array "PyArray_Check"(void *op)
    int _ndim "PyArray_NDIM"(PyArrayObject *a)
    char *_bytes "PyArray_BYTES"(PyArrayObject *a)
    npy_intp *_dims "PyArray_DIMS"(PyArrayObject *a)
    npy_intp *_strides "PyArray_STRIDES"(PyArrayObject *a)
    int _type "PyArray_TYPE"(PyArrayObject *a)



cdef inline void _rows_advance(ncl_rows_state *s) noexcept nogil:
    cdef int d = s.nd - 1
    while d >= 0:
        s.index[d] += 1
        s.next += s.stride[d]
        if s.index[d] < s.shape[d]:
            return
        s.next -= s.stride[d] * s.shape[d]
        s.index[d] = 0
        d -= 1


cdef bint ncl_rows_done(void *v, npy_intp n, void *arr) noexcept nogil:
    """This lane was sorted by the row batch of the sort in progress."""
    cdef ncl_rows_state *s = ncl_rows()
    if s.left == 0:
        return False
    if s.arr == arr and s.next == <char *>v and s.n == n:
        ncl_rows_left(s, s.left - 1)
        _rows_advance(s)
        return True
    ncl_rows_left(s, 0)       # not the lane expected: the batch is over
    return False


cdef void _t_rows(void *ctx, int tid, int nth) noexcept nogil:
    cdef sort_job *j = <sort_job *>ctx
    cdef ncl_rows_state *s = <ncl_rows_state *>j.rows
    cdef npy_intp r0 = ncl_part(j.nrows, tid, nth), r1 = ncl_part(j.nrows, tid + 1, nth), r, q
    cdef char *p
    cdef int d
    for r in range(r0, r1):
        p = j.v
        q = r
        d = s.nd - 1
        while d >= 0:
            p += (q % s.shape[d]) * s.stride[d]
            q //= s.shape[d]
            d -= 1
        if ncl_stock(j, p, NULL, j.n) < 0:
            j.failed = 1


cdef bint ncl_may_batch(void *v, void *arr) noexcept nogil:
    """The call may be the first lane of a large N-d sort (cheap test)."""
    return (arr != NULL and _is_array(arr) and _bytes(<PyArrayObject *>arr) == <char *>v
            and _ndim(<PyArrayObject *>arr) >= 2)


cdef bint _lanes_may_overlap(ncl_rows_state *s, int m, npy_intp span) noexcept nogil:
    """Whether two lanes may share memory (an ``as_strided`` view sorted in
    place).  The lanes are apart when the other dimensions nest: taken by
    growing |stride|, each steps past everything the smaller ones span
    (before, each stride was compared with one lane alone, and strides
    (8n, 8n) over lanes of n int64 put lanes (0, 1) and (1, 0) on the same
    memory: two threads sorted it at once and values were lost)."""
    cdef npy_intp st[64]
    cdef npy_intp sh[64]
    cdef npy_intp a, b
    cdef int k, i, used = 0
    for k in range(m):
        if s.shape[k] > 1:
            a = s.stride[k] if s.stride[k] >= 0 else -s.stride[k]
            i = used                      # insertion by |stride|
            while i > 0 and st[i - 1] > a:
                st[i] = st[i - 1]
                sh[i] = sh[i - 1]
                i -= 1
            st[i] = a
            sh[i] = s.shape[k]
            used += 1
    for k in range(used):
        if st[k] < span:
            return True
        if sh[k] - 1 > (<npy_intp>0x7fffffffffffffff - span) // st[k]:
            return True                   # a span past the address space: not ours
        span += st[k] * (sh[k] - 1)
    return False


cdef int ncl_rows_batch(sort_job *j) noexcept nogil:
    """Sort every lane of the array NumPy is sorting, if this call is its
    first lane; 1 when done (j.rc set), 0 when the call is not a batch."""
    cdef PyArrayObject *a = <PyArrayObject *>j.arr
    cdef ncl_rows_state *s = ncl_rows()
    cdef int nd, d, axis = -1, k, m, nth = ncl_threads_now()
    cdef npy_intp rows = 1
    cdef npy_intp *dims
    cdef npy_intp *strides
    if a == NULL or nth < 2:
        return 0
    if not _is_array(a):
        return 0
    nd = _ndim(a)
    if nd < 2 or nd > 64 or _bytes(a) != j.v or _type(a) != j.typenum:
        return 0
    dims = _dims(a)
    strides = _strides(a)
    for d in range(nd):
        if dims[d] == j.n and strides[d] == j.isz:
            if axis >= 0:
                return 0          # two candidate lanes: not ours to guess
            axis = d
    if axis < 0:
        return 0
    m = 0
    for d in range(nd):
        if d != axis:
            s.shape[m] = dims[d]
            s.stride[m] = strides[d]
            s.index[m] = 0
            rows *= dims[d]
            m += 1
    if rows < 2 or rows * j.n < ncl_split_min(j):
        return 0
    if _lanes_may_overlap(s, m, j.n * j.isz):
        return 0          # NumPy's order, one lane after the other
    s.nd = m
    s.arr = j.arr
    s.n = j.n
    s.next = j.v
    ncl_rows_left(s, 0)
    j.rows = s
    j.nrows = rows
    j.failed = 0
    ncl_team_run(nth, _t_rows, j)
    if j.failed:
        j.rc = -1
        return 1
    _rows_advance(s)      # this call was lane 0
    ncl_rows_left(s, rows - 1)
    j.rc = 0
    return 1


cdef void ncl_rows_reset() noexcept nogil:
    """Forget the batch in progress on this thread."""
    ncl_rows_left(ncl_rows(), 0)


cdef const int *ncl_rows_pending() noexcept nogil:
    """Where the count of threads with a batch's lanes still to come lives."""
    return &ncl_rows_pending_n


def rows_pending():
    """Threads with lanes of a row batch still to be handed over (tests)."""
    return ncl_rows_pending_n
