# The threaded unstable sort of values (nclx._ncl.sortpart).
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport sort_job

cdef int ncl_sort_partition(sort_job *j, int items, npy_intp min_seg) noexcept nogil
