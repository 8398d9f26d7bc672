# cython: wraparound=True, boundscheck=True
"""Fills nclx's C API table (nclx/include/nclx.h) and wraps it in the
capsule ``nclx._C_API``: compiled code reaches kernels and hook chains
without Python-level addresses."""
from cpython.pycapsule cimport PyCapsule_New
from cpython.exc cimport PyErr_SetObject, PyErr_SetString
from libc.string cimport strcmp

from nclx._ncl.ncl cimport (ncl_loop_fn, ncl_node, ncl_chain, ncl_call, ncl_hook_fn,
                            ncl_destroy_fn, nclx_api, NCLX_API_VERSION, NCL_NOPS,
                            NCL_NCALLOPS, NCL_NSUBSYSTEMS, NCL_NODE_CAPI, ncl_op_names, ncl_dtype_from_typenum)
from nclx._ncl.registry cimport (ncl_funnel_chain, ncl_kernel_chain, ncl_new_node, ncl_link,
                                 ncl_unlink, ncl_discard)
from nclx._ncl.walk cimport ncl_call_next, ncl_status_add
from nclx._ncl import registry as _registry
from nclx._ncl import spec
from nclx._ncl.dtypes import DTYPES
from nclx._ncl.ufuncs import kernel_module

cdef enum:
    MAX_KERNELS = 1024

cdef struct kernel_entry:
    int op
    int nargs
    int dtypes[4]
    ncl_loop_fn fn
    ncl_chain *chain

cdef kernel_entry _kernels[MAX_KERNELS]
cdef int _nkernels = 0
cdef nclx_api _api


cdef int _find(int op, const int *dtypes, int ndtypes) noexcept nogil:
    cdef int k, j
    if dtypes == NULL:
        return -1                    # (a NULL array was read: a crash)
    for k in range(_nkernels):
        if _kernels[k].op != op or _kernels[k].nargs != ndtypes:
            continue
        for j in range(ndtypes):
            if _kernels[k].dtypes[j] != dtypes[j]:
                break
        else:
            return k
    return -1


cdef ncl_loop_fn _api_kernel(int op, const int *dtypes, int ndtypes) noexcept nogil:
    cdef int k = _find(op, dtypes, ndtypes)
    return _kernels[k].fn if k >= 0 else NULL


cdef int _api_op_index(const char *name) noexcept nogil:
    cdef int i
    if name == NULL:
        return -1
    for i in range(NCL_NOPS + NCL_NCALLOPS):      # the call ops' too (review 22)
        if strcmp(ncl_op_names[i], name) == 0:
            return i
    return -1


cdef int _api_dtype_of_typenum(int typenum) noexcept nogil:
    return ncl_dtype_from_typenum(typenum)


cdef ncl_chain *_api_funnel_chain(int subsystem) noexcept nogil:
    if subsystem < 0 or subsystem >= NCL_NSUBSYSTEMS:
        # the header's NULL + exception (before, NULL alone: a caller
        # returning NULL met "error return without exception set"; review 22)
        with gil:
            PyErr_SetObject(ValueError, ValueError(
                f"funnel_chain: no subsystem {subsystem} (enum ncl_subsystem: 0 to "
                f"{NCL_NSUBSYSTEMS - 1})"))
        return NULL
    return ncl_funnel_chain(subsystem)


cdef ncl_chain *_api_kernel_chain(int op, const int *dtypes, int ndtypes) noexcept with gil:
    cdef int k
    if dtypes == NULL:
        PyErr_SetObject(ValueError, ValueError("kernel_chain: dtypes must not be NULL"))
        return NULL
    k = _find(op, dtypes, ndtypes)
    if k < 0:
        PyErr_SetObject(LookupError, LookupError(
            f"kernel_chain: nclx has no kernel chain for op {op} ({_op_name(op)}) with "
            f"dtypes {_dtype_names(dtypes, ndtypes)}"))
        return NULL
    return _kernels[k].chain


cdef str _op_name(int op):
    if 0 <= op < NCL_NOPS + NCL_NCALLOPS:
        return repr(ncl_op_names[op].decode())
    return "no such op"


cdef str _dtype_names(const int *dtypes, int ndtypes):
    if ndtypes < 0 or ndtypes > 4:
        return f"({ndtypes} of them: 1 to 4 are taken)"
    return "(" + ", ".join(DTYPES[d] if 0 <= d < len(DTYPES) else f"{d}: no such ncl_dtype"
                           for d in dtypes[:ndtypes]) + ")"


cdef ncl_node *_api_hook_add(ncl_chain *chain, const char *name, ncl_hook_fn fn, void *user,
                             ncl_destroy_fn destroy, int position,
                             const char *anchor) noexcept with gil:
    cdef ncl_node *node
    try:
        if chain == NULL or fn == NULL or name == NULL:
            raise ValueError("hook_add: chain, name and fn must not be NULL")
        node = ncl_new_node(name.decode(), fn, user, destroy, None)
        node.flags |= NCL_NODE_CAPI
        try:
            ncl_link(chain, node, position, anchor.decode() if anchor != NULL else None)
        except BaseException:
            node.destroy = NULL          # on failure the caller keeps its pointer
            ncl_discard(node)
            raise
        return node
    except BaseException as exc:
        PyErr_SetObject(type(exc), exc)
        return NULL


cdef int _api_hook_remove(ncl_node *node) noexcept with gil:
    try:
        if node == NULL:
            raise ValueError("hook_remove: node is NULL")
        if _registry.is_default_node(<size_t>node):
            raise ValueError(f"hook_remove: {node.name.decode(errors='replace')!r} is a "
                             f"default node of chain {node.chain.name.decode()!r}: it "
                             f"cannot be removed")
        if not _registry.node_serial(<size_t>node):
            raise ValueError("hook_remove: no live nclx node at this address (already "
                             "removed and freed, e.g. by nclx.hooks.reset())")
        if not (node.flags & NCL_NODE_CAPI):
            # a stale pointer whose memory a node of Python's took (a hook,
            # checked()'s or a ledger's node: removing it from C silently
            # ended overflow checking; found by review 18)
            raise ValueError(f"hook_remove: the node at this address ("
                             f"{node.name.decode(errors='replace')!r}) was not added by "
                             f"hook_add (a stale pointer, already removed?); remove "
                             f"Python's hooks through their handles")
        ncl_unlink(node)
        return 0
    except BaseException as exc:
        PyErr_SetObject(type(exc), exc)
        return -1


cdef void _null_argument(const char *message) noexcept nogil:
    """A ValueError for the ufunc call to raise (as one a C hook sets with
    the GIL taken), not a crash: a hook that passes NULL read through it
    (found by review 16; the check costs one branch at the API boundary,
    nclx's own walks call ncl_call_next directly)."""
    with gil:
        PyErr_SetString(ValueError, message)


cdef int _api_call_next(ncl_node *node, ncl_call *call) noexcept nogil:
    if node == NULL or call == NULL:
        _null_argument(b"nclx C API call_next: node is NULL (pass the node your hook was "
                       b"called with)" if node == NULL else
                       b"nclx C API call_next: call is NULL (pass the call your hook was "
                       b"called with); the call was not computed")
        return -1
    return ncl_call_next(node, call)


cdef void _api_status_add(ncl_call *call, int flag, long count) noexcept nogil:
    if call == NULL:
        _null_argument(b"nclx C API status_add: call is NULL (pass the call your hook was "
                       b"called with)")
        return
    ncl_status_add(call, flag, count)


def _fill():
    global _nkernels
    ops = list(spec.OPS)
    addrs = {name: addr for _op, _ins, _out, name, addr in kernel_module().kernels()}
    # every loop has a kernel chain; the ops served by NumPy's loops have no kernel (NULL)
    for op, _kind, ins, out, name in spec.all_loops():
        addr = addrs.get(name, 0)
        if _nkernels >= MAX_KERNELS:
            raise RuntimeError("nclx._ncl.capi: MAX_KERNELS is too small for spec.py's loops")
        k = _nkernels
        _kernels[k].op = ops.index(op)
        _kernels[k].nargs = len(ins) + 1
        for j, dt in enumerate(tuple(ins) + (out,)):
            _kernels[k].dtypes[j] = DTYPES.index(dt)
        _kernels[k].fn = <ncl_loop_fn><size_t>addr
        _kernels[k].chain = ncl_kernel_chain(name)
        _nkernels += 1
    # the call ops' kernel chains (sort_float64; operands' dtypes in
    # spec.CALL_OPS' order): no kernel() for them, their loops take the
    # subsystem's parameters (before, unreachable from C; review 22)
    for op, dt in spec.call_slots():
        if _nkernels >= MAX_KERNELS:
            raise RuntimeError("nclx._ncl.capi: MAX_KERNELS is too small for spec.py's loops")
        k = _nkernels
        dts = spec.call_operand_dtypes(op, dt)
        _kernels[k].op = spec.ALL_OP_NAMES.index(op)
        _kernels[k].nargs = len(dts)
        for j, d in enumerate(dts):
            _kernels[k].dtypes[j] = DTYPES.index(d)
        _kernels[k].fn = NULL
        _kernels[k].chain = ncl_kernel_chain(spec.call_kernel_name(op, dt))
        _nkernels += 1
    _api.version = NCLX_API_VERSION
    _api.size = sizeof(nclx_api)
    _api.kernel = _api_kernel
    _api.op_index = _api_op_index
    _api.dtype_of_typenum = _api_dtype_of_typenum
    _api.funnel_chain = _api_funnel_chain
    _api.kernel_chain = _api_kernel_chain
    _api.hook_add = _api_hook_add
    _api.hook_remove = _api_hook_remove
    _api.call_next = _api_call_next
    _api.status_add = _api_status_add

_fill()

#: The capsule nclx exposes as ``nclx._C_API_2`` (its name: NCLX_CAPSULE_NAME,
#: versioned; ``nclx._C_API`` is an alias whose old name no longer matches).
C_API = PyCapsule_New(<void *>&_api, b"nclx._C_API_2", NULL)
VERSION = NCLX_API_VERSION
