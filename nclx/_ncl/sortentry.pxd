# nclx's entries in NumPy's sort/argsort slots (nclx._ncl.sortentry,
# generated from sortentry.pyx.in): the Sort chains' way in, the entry other
# modules call with NumPy's own sort (nclx._ncl.sortcall), and what
# nclx._ncl.sorting needs to swap the entries in and out.
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport ncl_sort_run_fn

cdef int ncl_sort_via(int c, int kind, char *v, npy_intp *idx, npy_intp n,
                      ncl_sort_run_fn run, void *runctx) noexcept nogil
cdef bint ncl_sort_direct(int c, int arg, npy_intp n) noexcept nogil
cdef const int *ncl_sort_probing() noexcept nogil

cdef int ncl_sort_entry(int c, int kind, void *v, npy_intp n, void *arr) noexcept nogil
cdef int ncl_asort_entry(int c, int kind, void *v, npy_intp *tosort, npy_intp n,
                         void *arr) noexcept nogil
cdef void *ncl_sort_fn(int c, int kind, int arg, int entry) noexcept nogil
cdef npy_intp ncl_sort_isz(int c) noexcept nogil
cdef void ncl_probe_start() noexcept
cdef void ncl_probe_stop() noexcept
cdef long ncl_probe_count() noexcept
