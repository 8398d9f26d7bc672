from nclx._ncl.ncl cimport ncl_call, ncl_node

cdef int ncl_python_hook_fn(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_python_kernel_loop(object k, ncl_call *call, ncl_node *node) noexcept with gil
