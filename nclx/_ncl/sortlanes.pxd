# The lanes of an N-d sort that NumPy 2.5 hands over one call at a time,
# deferred and sorted in batches on the team (nclx._ncl.sortlanes).
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport ncl_sort_run_fn

cdef enum:
    NCL_LANE_NOT_TAKEN = -2       # the caller sorts this lane now

cdef struct lane_batch:
    int calls                     # lanes handed over so far
    int mode                      # 0 undecided, 1 deferring, 2 not
    char *first_v                 # the first lane (its values, its indices)
    char *first_i
    npy_intp n                    # elements per lane
    npy_intp isz                  # bytes per element
    char **pv                     # lanes waiting (values, indices)
    char **pi
    npy_intp npend, cap
    npy_intp flush_at             # lanes that make a batch (4 a thread, the threaded size)
    int failed
    ncl_sort_run_fn run           # NumPy's sort of one lane
    void *runctx
    char *inl[32]                 # the first 16 lanes' pointers: no allocation for a small sort

cdef void ncl_lanes_init(lane_batch *b, npy_intp isz, ncl_sort_run_fn run, void *runctx) noexcept nogil
cdef int ncl_lanes_take(lane_batch *b, char *v, char *i, npy_intp n, bint eligible) noexcept nogil
cdef int ncl_lanes_flush(lane_batch *b) noexcept nogil
cdef void ncl_lanes_release(lane_batch *b) noexcept nogil
cdef bint ncl_lanes_on() noexcept nogil
cdef const int *ncl_lanes_probing() noexcept nogil
