# Whether the block executor streams a large result: measured per size
# class (nclx._ncl.streamprobe).
from libc.stdint cimport int64_t
from nclx._ncl.ncl cimport npy_intp

cdef int sp_way(npy_intp nbytes, int kind) noexcept
cdef void sp_record(npy_intp nbytes, int kind, int way, int64_t ns) noexcept
cdef int64_t sp_now() noexcept nogil
