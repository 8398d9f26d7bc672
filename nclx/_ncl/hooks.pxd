# The hook registry from Cython, for library authors:
#     from nclx._ncl.hooks cimport Kernel, ncl_call, ncl_node, ncl_call_next
# Structures and enums come from nclx.h / ncl_spec.h (via ncl.pxd).
from nclx._ncl.ncl cimport (npy_intp, ncl_call, ncl_node, ncl_chain, ncl_status, ncl_hook_fn,
                            NCL_SUB_COMPARE, NCL_SUB_BINARY, NCL_SUB_UNARY, NCL_SUB_REDUCE)
from nclx._ncl.walk cimport ncl_call_next, ncl_status_add


cdef class Kernel:
    """Base of kernels written in Cython: override ``loop`` (nogil).

    ``loop`` gets NumPy's inner-loop arguments and the call; return 0 when
    done, 1 to pass the call on to the next node of the chain ("punt").
    """
    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil
