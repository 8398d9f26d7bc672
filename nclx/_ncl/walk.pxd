# The registry's reader side (structures in nclx.h).
from nclx._ncl.ncl cimport ncl_node, ncl_chain, ncl_call

# walking (nogil, safe against concurrent registration)
cdef int ncl_call_next(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_call_chain(ncl_chain *chain, ncl_call *call) noexcept nogil
cdef int ncl_dispatch(ncl_chain *funnel, ncl_call *call) noexcept nogil
cdef bint ncl_chain_is_default(ncl_chain *chain) noexcept nogil
cdef void ncl_status_add(ncl_call *call, int flag, long count) noexcept nogil
cdef void ncl_readers_enter() noexcept nogil
cdef void ncl_readers_leave() noexcept nogil
cdef int ncl_hook_depth() noexcept nogil
cdef void ncl_hook_depth_add(int d) noexcept nogil
cdef long ncl_readers_now() noexcept nogil

# the default nodes' bodies (the registry links them into every chain)
cdef int ncl_funnel_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_nclx_kernel_fn(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_numpy_loop_fn(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_python_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil
