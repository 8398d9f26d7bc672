# The hook registry's C structures, for Cython authors:
#     from nclx._ncl.hooks cimport Kernel, ncl_call, ncl_node, ncl_call_next
# Chains are intrusive doubly linked lists, Linux-kernel style.
from cpython.ref cimport PyObject
from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn

cdef enum:
    NCL_NAME_LEN = 64
    NCL_MAX_ARGS = 3

# levels
cdef enum ncl_level:
    NCL_LEVEL_PYTHON = 0
    NCL_LEVEL_FUNNEL = 1
    NCL_LEVEL_KERNEL = 2

# node flags
cdef enum:
    NCL_NODE_DEFAULT = 1    # part of the default chain: static, never freed or removed
    NCL_NODE_LINKED = 2     # currently reachable from the chain head
    NCL_NODE_PYTHON = 4     # obj is a Python callable taking a Call object

cdef struct ncl_node
cdef struct ncl_chain

# What hooks report back to the calling thread (kernels may run on worker
# threads): flag bits, and a count for the flags that have one.
cdef enum:
    NCL_STATUS_INT_OVERFLOW = 1

cdef struct ncl_status:
    int flags
    long count

# One loop call as it travels down a funnel chain and then a kernel chain.
cdef struct ncl_call:
    char **args
    const npy_intp *dimensions
    const npy_intp *steps
    void *data               # NumPy's innerloopdata, for its original loop
    ncl_loop_fn numpy_loop   # NumPy's original loop for this signature
    ncl_loop_fn nclx_loop    # nclx's kernel for this signature
    ncl_chain *kernel_chain  # the (op, dtype) chain the funnel ends in
    int slot                 # index of the replaced (op, signature) entry
    int op                   # index into nclx._ncl.spec.OPS
    int subsystem            # 0 compare, 1 binary, 2 unary, 3 reduce
    int nargs                # inputs + output
    int typenums[NCL_MAX_ARGS]
    int dtypes[NCL_MAX_ARGS] # fixed-width ncl_dtype of each operand
    int prefer_numpy         # the "nclx" node runs NumPy's loop (measured faster)
    ncl_status *status       # shared by every chunk of one call

# A hook: return 0, or -1 with a Python exception set (the GIL held).
ctypedef int (*ncl_hook_fn)(ncl_node *node, ncl_call *call) noexcept nogil

cdef struct ncl_node:
    ncl_hook_fn fn
    void *data           # the hook's own data (C hooks)
    PyObject *obj        # the hook's Python object (owned reference) or NULL
    ncl_node *next
    ncl_node *prev
    ncl_chain *chain
    ncl_node *retired_next
    int flags
    char name[NCL_NAME_LEN]

cdef struct ncl_chain:
    ncl_node *head
    ncl_node *default_head   # head of the chain as reset() leaves it
    int level
    int index                # subsystem index (funnel/python) or kernel index
    char name[NCL_NAME_LEN]

# Walking chains (nogil, safe against concurrent registration).
cdef int ncl_call_next(ncl_node *node, ncl_call *call) noexcept nogil
cdef int ncl_call_chain(ncl_chain *chain, ncl_call *call) noexcept nogil
cdef int ncl_dispatch(ncl_chain *funnel, ncl_call *call) noexcept nogil
cdef bint ncl_chain_is_default(ncl_chain *chain) noexcept nogil
cdef bint ncl_in_hook() noexcept nogil

# Registry access for other nclx modules.
cdef ncl_chain *ncl_funnel_chain(int subsystem) noexcept nogil
cdef ncl_chain *ncl_python_chain(int subsystem) noexcept nogil
cdef ncl_chain *ncl_kernel_chain(str name) except NULL
cdef ncl_node *ncl_new_node(str name, ncl_hook_fn fn, void *data, object obj) except NULL
cdef int ncl_link(ncl_chain *chain, ncl_node *node, str position, str anchor) except -1
cdef int ncl_unlink(ncl_node *node) except -1
cdef int ncl_set_default_front(ncl_chain *chain, ncl_node *node) except -1
cdef void ncl_status_add(ncl_call *call, int flag, long count) noexcept nogil


cdef class Kernel:
    """Base of kernels written in Cython: override ``loop`` (nogil).

    ``loop`` gets NumPy's inner-loop arguments and the call; return 0 when
    done, 1 to pass the call on to the next node of the chain ("punt").
    """
    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil
