# The threaded counting sort of small-range integers (nclx._ncl.sortcount).
from nclx._ncl.sortjob cimport sort_job

cdef int ncl_sort_counting(sort_job *j, int items) noexcept nogil
