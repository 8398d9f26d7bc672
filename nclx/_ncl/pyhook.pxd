from nclx._ncl.ncl cimport ncl_call, ncl_node

cdef int ncl_python_hook_fn(ncl_node *node, ncl_call *call) noexcept nogil
