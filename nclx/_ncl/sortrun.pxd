# One lane of a threaded sort (nclx._ncl.sortrun): nclx's kernel of the
# sort/argsort ops, called by the entries in nclx._ncl.sortentry.
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport sort_job

cdef npy_intp ncl_sort_threshold() noexcept nogil
cdef const npy_intp *ncl_sort_threshold_at() noexcept nogil
cdef npy_intp ncl_split_min(sort_job *j) noexcept nogil
cdef int ncl_sort_lane(sort_job *j) noexcept nogil
