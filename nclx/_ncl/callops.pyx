# cython: wraparound=True, boundscheck=True
"""The call slots of NCLib's Sort, Mask, RNG and Create subsystems.

Their ops (spec.CALL_OPS) are whole calls, not elementwise loops, but they
walk the same registry as a loop call: one funnel chain per subsystem
("sort", "mask", "rng", "create"), one kernel chain per (op, dtype)
(``sort_float64``), the ledger's counters after the entries' slots.  A call
is an ``ncl_call`` in the loop shape -- ``args`` one buffer per operand
(the last is written), ``dimensions[0]`` the elements it processes (what the
ledger counts), ``dimensions[1 + i]`` the length of operand ``i``,
``steps[i]`` its stride -- and ``data`` the subsystem's own parameters.
Its nclx kernel and, where NumPy has one, NumPy's own function (through a
trampoline of the loop signature) are the kernel chain's last two nodes.

``ncl_callop_run`` runs the kernel directly while no user node is in the
call's chains (the fast path: one load of two counters), else walks them;
-1 when a hook left a Python exception set, which its caller raises.
"""
from nclx._ncl.ncl cimport (npy_intp, ncl_loop_fn, ncl_call, ncl_chain, ncl_status,
                            ncl_dtype_from_typenum, NCL_NSLOTS, NCL_NOPS, NCL_NCALLSLOTS)
from nclx._ncl.registry cimport ncl_funnel_chain, ncl_kernel_chain
from nclx._ncl.walk cimport ncl_dispatch
from nclx._ncl.modes cimport ncl_caller_flags
from cpython.exc cimport PyErr_Occurred, PyErr_SetString
import numpy as np

from nclx._ncl import spec

cdef extern from *:
    """
    #include "nclx.h"
    static inline int ncl_callop_no_user(const ncl_chain *c) { return __atomic_load_n(&c->nuser, __ATOMIC_ACQUIRE) == 0; }
    """
    bint ncl_callop_no_user(const ncl_chain *c) nogil


cdef struct ncl_callop:
    ncl_call proto
    ncl_chain *funnel

cdef ncl_callop _cops[NCL_NCALLSLOTS]
cdef dict _index = {}          # (op, dtype) -> k
cdef list _info = []           # k -> (op, dtypes of the operands)


def _setup():
    cdef int k, j
    cdef ncl_callop *c
    slots = spec.call_slots()
    if len(slots) != NCL_NCALLSLOTS:
        raise ImportError("nclx._ncl.callops was built from another spec.py")
    ops = list(spec.ALL_OP_NAMES)
    for k, (op, dt) in enumerate(slots):
        sub, _dts, names = spec.CALL_OPS[op]
        dts = spec.call_operand_dtypes(op, dt)
        c = &_cops[k]
        c.proto.args = NULL
        c.proto.dimensions = NULL
        c.proto.steps = NULL
        c.proto.data = NULL
        c.proto.numpy_loop = NULL
        c.proto.nclx_loop = NULL
        c.proto.slot = NCL_NSLOTS + k
        c.proto.op = ops.index(op)
        c.proto.subsystem = spec.SUBSYSTEMS.index(sub)
        c.proto.nargs = len(names)
        for j in range(len(names)):
            c.proto.typenums[j] = np.dtype(dts[j]).num
            c.proto.dtypes[j] = ncl_dtype_from_typenum(c.proto.typenums[j])
        c.proto.prefer_numpy = 0
        c.proto.caller_flags = 0
        c.proto.status = NULL
        c.proto.policy = NULL
        c.proto.kernel_chain = ncl_kernel_chain(spec.call_kernel_name(op, dt))
        c.funnel = ncl_funnel_chain(c.proto.subsystem)
        _index[(op, dt)] = k
        _info.append((op, dts))

_setup()


cdef int ncl_callop_slot(str op, str dtype) except -1:
    """The call slot of ``op`` on fixed-width ``dtype``."""
    k = _index.get((op, dtype))
    if k is None:
        raise TypeError(f"nclx has no {op} call for dtype {dtype}")
    return k


cdef bint ncl_callop_quiet(int k) noexcept nogil:
    """No user node in slot ``k``'s chains and no caller mode: its call
    would run its kernel straight away."""
    return (ncl_callop_no_user(_cops[k].funnel) and ncl_callop_no_user(_cops[k].proto.kernel_chain)
            and ncl_caller_flags() == 0)


cdef int ncl_callop_run(int k, char **args, const npy_intp *dims, const npy_intp *steps,
                        void *data, ncl_loop_fn nclx_fn, ncl_loop_fn numpy_fn) noexcept nogil:
    """One call of slot ``k``: its kernel straight away, or its chains."""
    cdef ncl_callop *c = &_cops[k]
    cdef ncl_call call
    cdef ncl_status status
    if nclx_fn == NULL:
        nclx_fn = numpy_fn
    if ncl_callop_quiet(k):
        nclx_fn(args, dims, steps, data)
        return 0
    call = c.proto
    call.args = args
    call.dimensions = dims
    call.steps = steps
    call.data = data
    call.nclx_loop = nclx_fn
    call.numpy_loop = numpy_fn
    call.caller_flags = ncl_caller_flags()
    status.flags = 0
    status.count = 0
    call.status = &status
    return _pending(ncl_dispatch(c.funnel, &call))


cdef int ncl_callop_raise() except -1:
    """Raise the exception a hook left set (after ncl_callop_run gave -1)."""
    return -1


cdef int _pending(int rc) noexcept with gil:
    """-1 where the walk left a Python exception set (a C hook's, or one
    it met in ``call_next``/``status_add``: NULL arguments) or failed
    without one (then a RuntimeError is set), else 0: the caller raises it.
    Before, the exception stayed set while the call returned its result:
    Python's SystemError "returned a result with an exception set", or a
    later Python hook was blamed for it (review 22)."""
    if PyErr_Occurred() != NULL:
        return -1
    if rc < 0:
        PyErr_SetString(RuntimeError, b"nclx: a hook in a call op's chain returned -1 "
                                      b"without setting a Python exception")
        return -1
    return 0


def slot(str op, dtype):
    """Call slot index of (op, dtype name)."""
    return ncl_callop_slot(op, dtype)


def slot_info(int k):
    """(op, operand dtypes) of call slot ``k`` (0-based after the entries)."""
    return _info[k]


def slots():
    """(op, operand dtypes) of every call slot, in order."""
    return list(_info)
