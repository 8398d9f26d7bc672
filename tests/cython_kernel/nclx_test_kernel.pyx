# A kernel subclass written in Cython against nclx's installed .pxd files,
# built by tests/test_cython_kernel.py the way a library author would.
from libc.stdint cimport int64_t, INT64_MAX, INT64_MIN
from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.hooks cimport Kernel, ncl_call, NCL_SUB_REDUCE

cdef extern from *:
    bint add_overflow "__builtin_add_overflow"(int64_t a, int64_t b, int64_t *r) nogil


cdef class SaturatingAddInt64(Kernel):
    """int64 add that saturates instead of wrapping; reductions are punted."""
    cdef public long calls

    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil:
        cdef npy_intp i
        cdef int64_t a, b, r
        if call.subsystem == NCL_SUB_REDUCE:
            return 1
        self.calls += 1
        for i in range(dimensions[0]):
            a = (<int64_t *>(args[0] + i * steps[0]))[0]
            b = (<int64_t *>(args[1] + i * steps[1]))[0]
            if add_overflow(a, b, &r):
                r = INT64_MAX if a > 0 else INT64_MIN
            (<int64_t *>(args[2] + i * steps[2]))[0] = r
        return 0


cdef class RaisesInLoop(Kernel):
    """A loop that lets an exception escape (docs/hooks.md: it must not):
    Cython prints it as unraisable and returns 0, so the call counts as
    computed and its output keeps what it held."""

    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil:
        with gil:
            raise RuntimeError("boom in loop")
        return 1


cdef class CatchesInLoop(Kernel):
    """The documented way: catch inside the loop and return 1 (pass the call on)."""

    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil:
        with gil:
            try:
                raise RuntimeError("caught in loop")
            except RuntimeError:
                return 1
        return 0
