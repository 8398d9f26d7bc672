# NumPy's sorts through the Sort chains (nclx._ncl.sorting, generated from
# sorting.pyx.in): the entry other modules call with NumPy's own sort.
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport ncl_sort_run_fn

cdef int ncl_sort_via(int c, int kind, char *v, npy_intp *idx, npy_intp n,
                      ncl_sort_run_fn run, void *runctx) noexcept nogil
cdef bint ncl_sort_direct(int c, int arg, npy_intp n) noexcept nogil
cdef const int *ncl_sort_probing() noexcept nogil
