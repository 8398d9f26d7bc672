"""A Python callable as a node of a C chain (funnel or kernel level): the
node's function takes the GIL, hands the hook a Call (nclx._ncl.calls) and
decides whether the rest of the chain still runs; calls whose output feeds
an input (accumulate) go to the hook one element at a time
(nclx._ncl.overlap)."""
from cpython.exc cimport PyErr_Clear, PyErr_Occurred, PyErr_SetObject

from nclx._ncl.ncl cimport npy_intp, ncl_call, ncl_node, NCL_MAX_ARGS, NCL_SUB_REDUCE
from nclx._ncl.walk cimport ncl_call_next, ncl_hook_depth_add
from nclx._ncl.calls cimport Call
from nclx._ncl.calls import take_loop_flags
from nclx._ncl.modes import hold_checked_record, give_back_checked_record
from nclx._ncl.hookerrors cimport ncl_hook_report
from nclx._ncl.overlap cimport ncl_each_element, ncl_element_call

cdef extern from "<fenv.h>":
    int fetestexcept(int excepts) nogil
    int feraiseexcept(int excepts) nogil
    int feclearexcept(int excepts) nogil
    int FE_ALL_EXCEPT


ctypedef int (*_body_fn)(ncl_node *, ncl_call *, int *, int *) noexcept


cdef int _run_python_hook(ncl_node *node, ncl_call *call) noexcept with gil:
    """Run a Python hook; 1 when the rest of the chain must still run.
    Nothing may leave it: a failure of the code around the hook (Python's
    recursion limit or no memory while the call is wrapped, reported or
    written back, or while an exception is being caught) is reported where
    it can be, and the rest of the chain computes unless a loop already
    wrote the output (before, Cython printed it and returned 0, "computed":
    the call returned uninitialised memory; review 25)."""
    cdef int ran = 0
    cdef int rc
    # the flags this thread's earlier pieces of the ufunc call raised: the
    # hook's own NumPy calls clear them (NumPy clears the flags around each
    # ufunc call), so they are raised again when the hook ends, with those
    # of the loops it ran (kept by its Call) -- and only those: what the
    # hook's own NumPy calls (under np.errstate(divide="ignore"), or caught
    # by the hook) and its Python float operations left set is cleared
    # (before, the caller's finite a * b warned the hook's division by zero;
    # review 25)
    cdef int flags = fetestexcept(FE_ALL_EXCEPT)
    if PyErr_Occurred() != NULL:
        # a C node before this one left its exception set (the call raises
        # it): the hook is not run with it pending, nor blamed for it
        # (before, its first C call met it and it was reported as the
        # hook's own, then cleared: the call raised nothing; review 22)
        return 1
    ncl_hook_depth_add(1)
    # called as a noexcept function: Cython's own check of the -1 would
    # jump to this function's unraisable exit before the test below
    rc = (<_body_fn>_hook_body)(node, call, &flags, &ran)
    ncl_hook_depth_add(-1)
    if rc == -1:
        # an exception left the body itself (it could not even be caught
        # there: Python's recursion limit while normalising it): dropped
        # without Python, and the call passed on unless a loop ran
        PyErr_Clear()
        rc = 0 if ran else 1
    feclearexcept(FE_ALL_EXCEPT)
    feraiseexcept(flags)
    return rc


cdef int _hook_body(ncl_node *node, ncl_call *call, int *flags, int *ran) except -1:
    """:func:`_run_python_hook`'s Python part: -1 with an exception set when
    one leaves it; ``ran``: whether a loop wrote the output."""
    cdef Call c = None
    cdef int rc = 1
    held = None
    try:
        # inside checked() the overflow record of the earlier pieces (kept
        # only while FE_OVERFLOW is set)
        held = hold_checked_record() if call.caller_flags else None
        c = Call.wrap(node, call)
        rc = _run_wrapped(node, c, ran)
    except BaseException:
        _report_quietly(node, <object>node.obj, True, "(its call could not be prepared or finished)")
        rc = 0 if (c is not None and (c.punted or c.ran)) else 1
        if c is not None and c.call != NULL:
            try:
                c._close()          # its mirrors dropped, not written back
            except BaseException:
                pass
            c.call = NULL
            c.node = NULL
    finally:
        if c is not None and (c.punted or c.ran):
            ran[0] = 1
        _finish(c, flags, held)
    if rc == 0 and c is not None and c.loop_error is not None:
        # the chain's loop failed under next(): NumPy raises its error (also
        # where the hook caught it)
        PyErr_SetObject(type(c.loop_error), c.loop_error)
    return rc


cdef void _finish(Call c, int *flags, held) noexcept:
    """The end of every Python node's call, whatever happened before: its
    Call closed (if an exception left its handler first), the flags of the
    loops it ran added to ``flags``, the checked() record given back."""
    if c is not None:
        if c.call != NULL:
            try:
                c._close()
            except BaseException:
                c.closing = True
            c.call = NULL
            c.node = NULL
        try:
            flags[0] |= take_loop_flags(c)  # (its next()/run_numpy()/run_nclx() loops')
        except BaseException:
            pass
    try:
        give_back_checked_record(held)
    except BaseException:
        pass


ctypedef int (*_report_fn)(ncl_node *, object, bint, str) noexcept


cdef void _report_quietly(ncl_node *node, object hook, bint named, str what) noexcept:
    """Report the exception being handled where Python still can (called
    as a noexcept function: near the recursion limit even formatting the
    message fails, and that is dropped without Python)."""
    if (<_report_fn>_report_what)(node, hook, named, what) == -1:
        PyErr_Clear()


cdef int _report_what(ncl_node *node, object hook, bint named, str what) except -1:
    who = f"hook {node.name.decode()!r}" if named else f"kernel {type(hook).__name__}"
    ncl_hook_report(node, hook, f"{who} {what}")
    return 0


cdef int _run_wrapped(ncl_node *node, Call c, int *ran) except -1:
    """The hook run on its Call: 1 when the rest of the chain must run."""
    cdef bint failed = False
    cdef bint declined = False
    cdef bint punted
    hook = <object>node.obj
    result = None
    try:
        result = hook(c)
    except BaseException as exc:
        if c.punted or c.ran:
            ran[0] = 1
        if exc is not c.loop_error:
            failed = True
            ncl_hook_report(node, hook, f"hook {node.name.decode()!r}")
    # a loop the hook ran (next(), run_numpy(), run_nclx()) wrote the
    # output itself: the call is done, even if the hook then failed
    punted = c.punted or c.ran
    if punted:
        ran[0] = 1
    # NotImplemented with no loop run declines, as a Kernel's (review 18)
    declined = not failed and not punted and result is NotImplemented
    try:
        if failed or declined:
            # what the hook wrote to its mirror before failing is dropped,
            # never written back: the output holds the loop's result, or
            # the rest of the chain computes it (an in-place call, a
            # reduction's accumulator or an overlapping copy would read
            # the hook's values back as input; and a loop's result
            # recomputed from an in-place output counts twice)
            c._close()
            c.call = NULL
            c.node = NULL
        else:
            c._end()
    except BaseException:
        ncl_hook_report(node, hook, f"hook {node.name.decode()!r} (writing back its output)")
        # the output was not written: the rest of the chain computes it
        # (before, the call returned what the output held: uninitialised
        # memory, an unsorted array; found by review 22)
        failed = True
    if c.loop_error is not None:
        return 0
    # a failed hook must not lose the result: the rest of the chain computes it
    return 1 if ((failed or declined) and not punted) else 0


cdef int ncl_python_hook_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    """A Python callable at the funnel or kernel level (takes the GIL)."""
    cdef ncl_call one
    cdef char *args[NCL_MAX_ARGS]
    cdef npy_intp dims[1]
    cdef npy_intp k
    if ncl_each_element(call):
        for k in range(call.dimensions[0]):
            ncl_element_call(call, &one, args, dims, k)
            if _run_python_hook(node, &one):
                ncl_call_next(node, &one)
        return 0
    if _run_python_hook(node, call):
        return ncl_call_next(node, call)
    return 0


# ------------------------------------------------------------ Python Kernels

ctypedef int (*_kernel_body_fn)(object, ncl_call *, ncl_node *, int *) noexcept


cdef int ncl_python_kernel_loop(object k, ncl_call *call, ncl_node *node) noexcept with gil:
    """A Python Kernel's __call__/reduce (nclx._ncl.hooks.Kernel, ``node``
    its node or NULL) on the call's mirrors: 0 when it computed the output,
    1 when the next node must.  Nothing may leave it: a failure around the
    kernel (Python's recursion limit or no memory while the call is
    wrapped, the failure caught or reported) passes the call on (before,
    Cython printed it and returned 0: uninitialised memory; review 25)."""
    cdef int rc
    cdef int flags = fetestexcept(FE_ALL_EXCEPT)    # as in _run_python_hook
    if PyErr_Occurred() != NULL:
        return 1     # a C node's exception is pending: as in _run_python_hook
    ncl_hook_depth_add(1)
    # called as a noexcept function: Cython's own check of the -1 would
    # jump to this function's unraisable exit before the test below
    rc = (<_kernel_body_fn>_kernel_body)(k, call, node, &flags)
    ncl_hook_depth_add(-1)
    if rc == -1:
        PyErr_Clear()       # (not even catchable in the body: dropped without Python)
        rc = 1
    # the flags of the kernel's own NumPy calls stay the call's: a Kernel
    # computes the output (docs/hooks.md: under np.errstate(all="ignore"),
    # so that the call reports them once)
    feraiseexcept(flags)
    return rc


cdef int _kernel_body(object k, ncl_call *call, ncl_node *node, int *flags) except -1:
    cdef int rc = 1
    cdef Call c = None
    held = None
    try:
        held = hold_checked_record() if call.caller_flags else None
        c = Call.wrap(NULL, call)
        rc = _kernel_run(k, c, call.subsystem == NCL_SUB_REDUCE, node)
    except BaseException:
        rc = 1
        _report_quietly(node, k, False, "(its call could not be prepared or finished)")
    finally:
        _finish(c, flags, held)
    return rc


cdef int _kernel_run(object k, Call c, bint reduce, ncl_node *node) except -1:
    cdef int rc
    try:
        ins, out = c.views()
        if reduce:
            result = k.reduce(ins[1], out[:1])
        else:
            result = k(list(ins), out)
        rc = 1 if result is NotImplemented else 0
    except BaseException:
        rc = 1   # the next node computes the result
        ncl_hook_report(node, k, f"kernel {type(k).__name__}")
    if rc == 0:
        try:
            c._end()
        except BaseException:
            rc = 1
            ncl_hook_report(node, k, f"kernel {type(k).__name__} (writing back)")
    return rc
