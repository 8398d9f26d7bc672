# The OpenMP team and nclx's thread count (nclx._ncl.team).
cdef enum:
    MAX_THREADS = 64          # the most threads one split call uses

ctypedef void (*ncl_team_fn)(void *ctx, int tid, int nthreads) noexcept nogil

cdef int ncl_threads_now() noexcept nogil
cdef bint ncl_team_gone() noexcept nogil
cdef void ncl_team_run(int want, ncl_team_fn fn, void *ctx) noexcept nogil
