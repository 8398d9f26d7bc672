# The state of one threaded sort, shared by the Sort modules: sorting (the
# entries in NumPy's slots), sortrun (shortcuts, runs and the merge),
# sortpart (the partition of unstable value sorts) and sortrows (row batches).
from libc.stdint cimport uint64_t

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport MAX_THREADS

ctypedef int (*PyArray_SortFunc)(void *, npy_intp, void *) noexcept nogil
ctypedef int (*PyArray_ArgSortFunc)(void *, npy_intp *, npy_intp, void *) noexcept nogil
# NumPy's sort other than through an ArrFuncs slot (nclx._ncl.sortmeth)
ctypedef int (*ncl_sort_run_fn)(void *ctx, char *p, npy_intp *ip, npy_intp n) noexcept nogil

cdef enum:
    MAXRUNS = 64


cdef struct sort_job:
    int c, kind, dt, isz, rc
    int failed
    PyArray_SortFunc sort
    PyArray_ArgSortFunc asort
    ncl_sort_run_fn run           # NumPy's sort other than through a slot (sortmeth), or NULL
    void *runctx
    void *arr
    char *v
    npy_intp *idx
    npy_intp n
    int nruns
    npy_intp b[MAXRUNS + 1]
    npy_intp pa[MAXRUNS]          # NaN-free length of each pair's runs this round
    npy_intp pb[MAXRUNS]
    char *src                     # keys merged this round (values, or an argsort's keys)
    char *dst
    npy_intp *isrc                # an argsort's indices, along with the keys
    npy_intp *idst
    int esz                       # bytes per key
    int scan[MAX_THREADS]
    uint64_t nanlo[MAX_THREADS]
    uint64_t nanhi[MAX_THREADS]
    # row batches (nclx._ncl.sortrows)
    int typenum                   # NumPy's type number of the sort's dtype
    void *rows
    npy_intp nrows


cdef inline int ncl_stock(sort_job *j, char *p, npy_intp *ip, npy_intp n) noexcept nogil:
    """NumPy's own sort (argsort when ``ip``) of ``n`` elements at ``p``."""
    if j.run != NULL:
        return j.run(j.runctx, p, ip, n)
    if ip != NULL:
        return j.asort(p, ip, n, j.arr)
    return j.sort(p, n, j.arr)


cdef inline npy_intp ncl_part(npy_intp n, int k, int parts) noexcept nogil:
    """Start of part k of n elements in ``parts`` near-equal parts."""
    return (n // parts) * k + (k if k < n % parts else n % parts)
