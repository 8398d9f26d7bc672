# Whether the block executor streams a large result: measured per program,
# result kind and size class (nclx._ncl.streamprobe).
from libc.stdint cimport int64_t
from nclx._ncl.ncl cimport npy_intp

cdef enum:
    SP_CLASSES = 8        # below 4 MiB (a lowered threshold), 4-8 MiB, ..., 256 MiB and up
    SP_KINDS = 4          # (given out= 0, allocated 2) + (one thread 0, the team 1)

cdef class StreamProbes:
    cdef int64_t calls[SP_KINDS][SP_CLASSES]
    cdef int64_t best[SP_KINDS][SP_CLASSES][2]     # fewest ns per MiB: plain (0), streamed (1)
    cdef int decided[SP_KINDS][SP_CLASSES]         # 0 probing, 1 plain, 2 streamed
    cdef int64_t since[SP_KINDS][SP_CLASSES]       # calls made the decided way since
    cdef int rounds[SP_KINDS][SP_CLASSES]          # decisions made before the current one
    cdef int64_t generation
    cdef void _fresh(self) noexcept

cdef int sp_way(StreamProbes p, npy_intp nbytes, int kind) noexcept
cdef void sp_record(StreamProbes p, npy_intp nbytes, int kind, int way, int64_t ns) noexcept
cdef int64_t sp_now() noexcept nogil
