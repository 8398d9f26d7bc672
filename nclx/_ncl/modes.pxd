# The calling thread's modes (nclx.checked()): thread-local state the loop
# entries read on their slow path and carry with each call.
cdef int ncl_caller_flags() noexcept nogil
cdef void ncl_checked_record(int op, int dtype, long count) noexcept nogil
cdef void ncl_watch_modes(int *counter)
