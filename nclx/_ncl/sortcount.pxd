# The threaded counting sorts (nclx._ncl.sortcount): integers of a small
# range, and few distinct values.
from nclx._ncl.sortjob cimport sort_job

cdef int ncl_sort_counting(sort_job *j, int items) noexcept nogil
cdef int ncl_sort_few(sort_job *j, int items) noexcept nogil
