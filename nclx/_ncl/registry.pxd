# The hook registry's C side: chains of ncl_node (structures in nclx.h).
from nclx._ncl.ncl cimport ncl_node, ncl_chain, ncl_call, ncl_hook_fn, ncl_destroy_fn

# chains
cdef ncl_chain *ncl_funnel_chain(int subsystem) noexcept nogil
cdef ncl_chain *ncl_python_chain(int subsystem) noexcept nogil
cdef ncl_chain *ncl_kernel_chain(str name) except NULL
cdef list ncl_chain_names(ncl_chain *chain)
cdef void ncl_watch_loop_user_nodes(int *counter)

# nodes (GIL held)
cdef ncl_node *ncl_new_node(str name, ncl_hook_fn fn, void *data, ncl_destroy_fn destroy,
                            object obj) except NULL
cdef int ncl_link(ncl_chain *chain, ncl_node *node, int position, str anchor) except -1
cdef int ncl_unlink(ncl_node *node) except -1
cdef void ncl_discard(ncl_node *node)
cdef int ncl_set_default_front(ncl_chain *chain, ncl_node *node) except -1
