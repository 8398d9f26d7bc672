# The portable core's shared declarations, for every Cython module of nclx and
# for library authors (``from nclx._ncl.ncl cimport ...``).  The enums come
# from ncl_spec.h (generated from spec.py), the structures from nclx.h (the
# public C API header): C and Cython share one definition.

cdef extern from "ncl_spec.h" nogil:
    ctypedef enum ncl_dtype:
        NCL_BOOL
        NCL_INT8
        NCL_INT16
        NCL_INT32
        NCL_INT64
        NCL_UINT8
        NCL_UINT16
        NCL_UINT32
        NCL_UINT64
        NCL_FLOAT32
        NCL_FLOAT64
        NCL_NTYPES
        NCL_NOTYPE

    enum:
        NCL_SUB_COMPARE
        NCL_SUB_BINARY
        NCL_SUB_UNARY
        NCL_SUB_REDUCE
        NCL_SUB_ISUNARY
        NCL_SUB_TERNARY
        NCL_SUB_CONVERT
        NCL_SUB_SORT
        NCL_SUB_MASK
        NCL_SUB_RNG
        NCL_SUB_CREATE
        NCL_NSUBSYSTEMS

    enum:
        NCL_NOPS
        NCL_NSLOTS
        NCL_NCALLOPS
        NCL_NCALLSLOTS

    const char *const ncl_subsystem_names[]
    const char *const ncl_op_names[]
    const int ncl_dtype_sizes[]

cdef extern from "ncl_dtypes.h" nogil:
    int ncl_dtype_from_typenum(int typenum)
    const char *ncl_dtype_name(int t)

cdef extern from "numpy/npy_common.h":
    ctypedef Py_ssize_t npy_intp

cdef extern from "nclx.h" nogil:
    ctypedef void (*ncl_loop_fn)(char **args, const npy_intp *dimensions,
                                 const npy_intp *steps, void *data) noexcept nogil

    cdef struct ncl_node
    cdef struct ncl_chain
    cdef struct ncl_call

    ctypedef int (*ncl_hook_fn)(ncl_node *node, ncl_call *call) noexcept nogil
    ctypedef void (*ncl_destroy_fn)(void *user) noexcept nogil

    enum:
        NCL_MAX_ARGS
        NCL_LEVEL_PYTHON
        NCL_LEVEL_FUNNEL
        NCL_LEVEL_KERNEL
        NCL_FRONT
        NCL_BACK
        NCL_BEFORE
        NCL_AFTER
        NCL_NODE_DEFAULT
        NCL_NODE_LINKED
        NCL_NODE_PYTHON
        NCL_NODE_CAPI
        NCL_STATUS_INT_OVERFLOW
        NCL_CALLER_CHECKED
        NCLX_API_VERSION
    const char *NCLX_CAPSULE_NAME

    ctypedef struct ncl_status:
        int flags
        long count

    cdef struct ncl_call:
        char **args
        const npy_intp *dimensions
        const npy_intp *steps
        void *data
        ncl_loop_fn numpy_loop
        ncl_loop_fn nclx_loop
        ncl_chain *kernel_chain
        int slot
        int op
        int subsystem
        int nargs
        int typenums[4]
        int dtypes[4]
        int prefer_numpy
        int caller_flags
        ncl_status *status
        const void *policy

    cdef struct ncl_node:
        ncl_hook_fn fn
        void *data
        void *obj
        ncl_node *next
        ncl_node *prev
        ncl_chain *chain
        ncl_node *retired_next
        ncl_destroy_fn destroy
        int flags
        char *name

    cdef struct ncl_chain:
        ncl_node *head
        ncl_node *default_head
        int level
        int index
        int nuser
        char name[64]

    ctypedef struct nclx_api:
        unsigned int version
        unsigned int size
        ncl_loop_fn (*kernel)(int op, const int *dtypes, int ndtypes) noexcept
        int (*op_index)(const char *name) noexcept
        int (*dtype_of_typenum)(int typenum) noexcept
        ncl_chain *(*funnel_chain)(int subsystem) noexcept
        ncl_chain *(*kernel_chain)(int op, const int *dtypes, int ndtypes) noexcept
        ncl_node *(*hook_add)(ncl_chain *chain, const char *name, ncl_hook_fn fn, void *user,
                              ncl_destroy_fn destroy, int position, const char *anchor) noexcept
        int (*hook_remove)(ncl_node *node) noexcept
        int (*call_next)(ncl_node *node, ncl_call *call) noexcept nogil
        void (*status_add)(ncl_call *call, int flag, long count) noexcept nogil
