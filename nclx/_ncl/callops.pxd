# The call slots of NCLib's Sort, Mask, RNG and Create subsystems
# (nclx._ncl.callops): one per (op, dtype) of spec.CALL_OPS.
from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn, ncl_call

cdef int ncl_callop_slot(str op, str dtype) except -1
cdef bint ncl_callop_quiet(int k) noexcept nogil
cdef int ncl_callop_raise() except -1
cdef int ncl_callop_run(int k, char **args, const npy_intp *dims, const npy_intp *steps,
                        void *data, ncl_loop_fn nclx_fn, ncl_loop_fn numpy_fn) noexcept nogil
