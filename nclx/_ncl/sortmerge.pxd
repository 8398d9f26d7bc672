# The merge of a threaded sort (nclx._ncl.sortmerge): runs sorted by NumPy's
# function on the team, then merged; called by nclx._ncl.sortrun.
from nclx._ncl.sortjob cimport sort_job

cdef int ncl_sort_merged(sort_job *j, int nruns, int nth) noexcept nogil
