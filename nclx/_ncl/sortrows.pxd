# Row batches of N-d sorts (nclx._ncl.sortrows).
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport sort_job

cdef bint ncl_rows_done(void *v, npy_intp n, void *arr) noexcept nogil
cdef bint ncl_may_batch(void *v, void *arr) noexcept nogil
cdef int ncl_rows_batch(sort_job *j) noexcept nogil
cdef void ncl_rows_reset() noexcept nogil
cdef const int *ncl_rows_pending() noexcept nogil
