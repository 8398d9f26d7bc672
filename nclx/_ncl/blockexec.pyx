# cython: wraparound=False, boundscheck=False
"""The block executor: a nclx._fused_program.Program run in cache-sized
blocks on nclx's thread team.

Each step calls the loop NumPy's ufunc call would run for its signature
(nclx's entry where nclx serves it, NumPy's own loop elsewhere) on a block
of every slot: temporaries live in per-thread scratch of B elements per
slot, the result is written in place once.  Elementwise loops make the
result independent of blocks and threads.  A final float sum follows the
split points of NumPy's pairwise sum (each leaf a node of NumPy's tree,
leaves combined along the tree), so it equals ``np.add.reduce`` of the
result for any thread count; a float product runs on one thread, in order.
Floating-point flags are read per (step, block) and reported per step in
program order through the errstate in force, as eager NumPy reports them.

This module is the Python-facing setup (checks, scratch, settings, the
report); the run loop itself, without the GIL, is nclx._ncl.blockrun.
"""
cimport numpy as cnp
from libc.stdlib cimport free
from libc.stdint cimport int64_t

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn
from nclx._ncl.team cimport ncl_threads_now, ncl_team_gone, MAX_THREADS
from nclx._ncl.copyrun cimport ncl_stream_at
from nclx._ncl.streamprobe cimport StreamProbes, sp_way, sp_record, sp_now
from nclx._ncl.blockrun cimport (xrun, Scratch, RED_NONE, RED_TREE, RED_SEQ, bx_run,
                                 bx_direct, bx_plan_leaves)
from nclx._ncl.blockplan import make_plan, l2_bytes, reduces_in_chunks
from nclx._fpflags import fp_may_raise

import numpy as np

cnp.import_array()
cnp.import_ufunc()

cdef extern from "numpy/ufuncobject.h":
    int PyUFunc_GiveFloatingpointErrors(const char *name, int fpe_errors) except -1


cdef list _pool = []                 # idle Scratch sets (one per call running at once)
cdef npy_intp _threshold = 1 << 16
cdef Py_ssize_t _streams = 0          # runs whose result went out by non-temporal stores
cdef npy_intp _block_bytes = 0


def threshold(value=None):
    """The split threshold in elements (below it a call runs on one thread);
    with ``value``, set it and return the previous one."""
    global _threshold
    old = _threshold
    if value is not None:
        if value < 0:
            raise ValueError(f"threshold must be >= 0, not {value}")
        _threshold = value
    return old


def block_bytes(value=None):
    """Bytes of live slots one block may hold (default: half the L2 cache);
    with ``value``, set it (0 restores the default) and return the previous one."""
    global _block_bytes
    old = _block_bytes or l2_bytes() // 2
    if value is not None:
        if value < 0:
            raise ValueError(f"block_bytes must be >= 0, not {value}")
        _block_bytes = value
    return old


def stream_runs():
    """Runs so far whose result was written with non-temporal stores (a
    contiguous result of at least nclx._ncl.copying.STREAM_BYTES, set with
    ``copying.tune(stream_bytes=...)``, written by the last step of a
    program of the steps in nclx._ncl.blockplan.STREAM_OPS)."""
    return _streams


def stream_probes(program):
    """What the probes of ``program`` found about streaming its results
    (nclx._ncl.streamprobe.StreamProbes.decisions(); [] before any)."""
    probes = make_plan(program).stream_probes
    return [] if probes is None else probes.decisions()


def release():
    """Free the scratch kept for later calls."""
    _pool.clear()


def block_elements(program):
    """B, the elements per block ``program`` runs in."""
    return _block_len(make_plan(program))


cdef npy_intp _block_len(plan):
    cdef npy_intp bb = _block_bytes or l2_bytes() // 2
    cdef npy_intp B = bb // max(<npy_intp>plan.bytes_per_element, 1)
    B -= B % 64         # NumPy's loops pick a NaN by position in the call (see blockrun)
    return min(max(B, 128), 1 << 20)


cdef _check_array(a, str role, dt, bint one_d_only):
    if type(a) is not cnp.ndarray:
        raise TypeError(f"nclx.blockexec: {role} must be a numpy.ndarray, not {type(a).__name__}")
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if arr.ndim > 1 or (one_d_only and arr.ndim != 1):
        raise ValueError(f"nclx.blockexec: {role} must be "
                         f"{'1-d' if one_d_only else '0-d or 1-d'}, not {arr.ndim}-d")
    if dt is not None and arr.dtype != dt:
        raise TypeError(f"nclx.blockexec: {role} has dtype {arr.dtype}, the program reads it as {dt}")
    if not arr.dtype.isnative:
        raise ValueError(f"nclx.blockexec: {role} is not in native byte order")
    if not cnp.PyArray_ISALIGNED(arr):
        raise ValueError(f"nclx.blockexec: {role} is not aligned")
    if arr.ndim == 1 and not cnp.PyArray_IS_C_CONTIGUOUS(arr):
        raise ValueError(f"nclx.blockexec: {role} is not contiguous")


cdef bint _raising_errstate():
    """Whether reporting a step's flags can raise: errstate 'raise', 'call'
    or 'log' (a callable and an object's write may raise), or 'warn' under
    a warnings filter that makes RuntimeWarning an error."""
    if fp_may_raise():
        return True
    return "log" in np.geterr().values()


def give_fp_errors(bytes name, int flags):
    """NumPy's report of ``flags`` raised by ufunc ``name`` (its errstate:
    warn, raise, call, print, log).  A compiled function: called from a
    Python frame, the warning is that frame's (see ``report`` below)."""
    PyUFunc_GiveFloatingpointErrors(name, flags)


def execute(program, operands, out=None, threads=None, ledger=None, report=None, shape=None):
    """Run ``program`` (a nclx._fused_program.Program) over ``operands`` and
    return the result (``out`` when given), or, with a reduction, the NumPy
    scalar ``np.add.reduce`` / ``np.multiply.reduce`` of it returns.

    ``ledger``: a list, when the caller records the run in nclx's ledger
    itself and has checked that the ledger's nodes are the only ones linked
    (they see and change nothing): the loops then run directly, without a
    chain walk per block, and the list gets one (entry slot, reduce (0/1),
    elements, ns) per step that ran with an entry of nclx (and the
    reduction), ns being the run's wall time shared in proportion to the
    time measured in each step's loop calls.

    ``report``: None (each step's flags reported here: a warning names the
    innermost Python frame, the caller's) or ``report(k, give_fp_errors,
    name, flags)`` called for each step ``k`` (the reduction last) that
    raised flags, in program order: the caller reports them where eager
    NumPy would (nclx.fused: the line of the traced function that made
    the step).

    ``shape``: the shape of the result the executor allocates (its product
    the operands' length; C order), so that it owns its data as eager
    NumPy's does; None: 1-d."""
    return _execute(program, operands, out, threads, ledger, True, report, shape)


cdef object _execute(program, operands, out, threads, ledger, bint stream, report=None,
                     shape=None):
    """execute(); ``stream``: the result may be written with non-temporal
    stores (not for a result a reduction reads at once)."""
    global _streams
    plan = make_plan(program)
    cdef xrun r
    cdef bint recorded = ledger is not None
    cdef int64_t wall = 0
    rows = None
    cdef int k, j, s, want, ns = plan.nsteps
    cdef npy_intp n = -1, nbytes
    cdef cnp.ndarray arr, target, accarr, seedarr
    cdef Scratch scr
    cdef bint private = False
    cdef int way = -1, kind = 0           # the result's stores (streamprobe)
    cdef StreamProbes probes = None
    cdef int64_t t0 = 0
    operands = list(operands) if not isinstance(operands, list) else list(operands)
    if len(operands) != plan.ninputs:
        raise ValueError(f"nclx.blockexec: the program takes {plan.ninputs} operands, "
                         f"{len(operands)} given")
    for k in range(plan.ninputs):
        _check_array(operands[k], f"operand {k}", plan.dtypes[k], False)
        arr = operands[k]
        if arr.ndim == 1:
            if n < 0:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"nclx.blockexec: operand {k} has length {arr.shape[0]}, "
                                 f"earlier operands {n}")
    rdt = plan.dtypes[plan.result]
    if plan.reduce is not None:
        if out is not None:
            raise ValueError("nclx.blockexec: out must be None with a reduction")
    elif out is not None:
        _check_array(out, "out", rdt, True)
        if not (<cnp.ndarray>out).flags.writeable:
            raise ValueError("nclx.blockexec: out is read-only")
        if n < 0:
            n = (<cnp.ndarray>out).shape[0]
        elif (<cnp.ndarray>out).shape[0] != n:
            raise ValueError(f"nclx.blockexec: out has length {(<cnp.ndarray>out).shape[0]}, "
                             f"the operands {n}")
    if n < 0:
        raise ValueError("nclx.blockexec: no 1-d operand (nor out) gives the length")
    if threads is None:
        want = ncl_threads_now()
    else:
        if threads < 1:
            raise ValueError(f"nclx.blockexec: threads must be >= 1, not {threads}")
        want = min(threads, MAX_THREADS)
    if n < _threshold or plan.reduce_seq:
        want = 1

    # the result's home
    if plan.reduce is not None:
        target = None
    elif out is None:
        target = np.empty(n if shape is None else shape, rdt)
        if target.size != n:
            raise ValueError(f"nclx.blockexec: shape {shape} does not hold the operands' "
                             f"{n} elements")
    else:
        target = out
        if _raising_errstate():
            # a step may raise: the result is written to out as np.copyto
            # would (nclx.evaluate), so out stays untouched when one does
            target = np.empty(n, rdt)
            private = True
        else:
            for k in range(plan.ninputs):
                arr = operands[k]
                if np.may_share_memory(arr, target):
                    if not (arr.ndim == 1 and cnp.PyArray_DATA(arr) == cnp.PyArray_DATA(target)
                            and arr.itemsize == target.itemsize):
                        operands[k] = arr.copy()       # partial overlap: as NumPy does

    r.nsteps = ns
    r.nflags = ns + 1
    r.n = n
    r.result = plan.result
    r.B = _block_len(plan)
    r.prefault = target is not None and (out is None or private)
    nbytes = 0
    for s in range(plan.nslots):
        r.base[s] = NULL
        r.isz[s] = plan.itemsizes[s]
        r.stride[s] = 0
        r.soff[s] = 0
        r.narrow[s] = 0
        if s < plan.ninputs:
            arr = operands[s]
            r.base[s] = <char *>cnp.PyArray_DATA(arr)
            r.stride[s] = arr.itemsize if arr.ndim == 1 else 0
            r.narrow[s] = arr.ndim == 0
        elif s == plan.result and target is not None:
            r.base[s] = <char *>cnp.PyArray_DATA(target)
            r.stride[s] = target.itemsize
        else:
            r.soff[s] = nbytes
            nbytes += (r.B * r.isz[s] + 63) // 64 * 64
    # a result of STREAM_BYTES and more, contiguous and written by the last
    # step of a program of cheap steps (blockplan.STREAM_OPS), is staged a
    # block at a time and written with non-temporal stores
    # (or the plain way, where nclx._ncl.streamprobe measured it faster here)
    r.stream_off = -1
    if stream and ns > 0 and plan.stream and plan.reduce is None and target is not None \
            and plan.steps[ns - 1][4] == plan.result \
            and n > 0 and n * r.isz[plan.result] >= ncl_stream_at():
        kind = (2 if out is None or private else 0) + (1 if want > 1 and not ncl_team_gone() else 0)
        probes = plan.stream_probes
        if probes is None:
            probes = plan.stream_probes = StreamProbes()
        way = sp_way(probes, n * r.isz[plan.result], kind)
        if way & 1:
            r.stream_off = nbytes
            nbytes += (r.B * r.isz[plan.result] + 63) // 64 * 64
    for k in range(ns):
        fn, data, slot, ins, o = plan.steps[k]
        # a temporary of 0-d operands alone is one value (not the result,
        # which out= or the operands' length shape)
        r.narrow[o] = o != plan.result and all(r.narrow[i] for i in ins)
        r.steps[k].fn = bx_direct(slot, 0, <ncl_loop_fn><size_t>fn, recorded)
        r.steps[k].data = <void *><size_t>data
        r.steps[k].nin = len(ins)
        for j in range(len(ins)):
            r.steps[k].slot[j] = ins[j]
        r.steps[k].slot[len(ins)] = o

    r.red = RED_NONE
    r.leaf = NULL
    r.partials = NULL
    if plan.reduce is not None:
        r.red = RED_SEQ if plan.reduce_seq else RED_TREE
        r.rfn = bx_direct(plan.reduce_loop[2], 1, <ncl_loop_fn><size_t>plan.reduce_loop[0], recorded)
        r.cfn = bx_direct(plan.reduce_loop[2], 0, <ncl_loop_fn><size_t>plan.reduce_loop[0], recorded)
        r.rdata = <void *><size_t>plan.reduce_loop[1]
        r.risz = plan.itemsizes[plan.result]
        accarr = np.array([plan.reduce_start], rdt)
        seedarr = np.array([plan.reduce_seed], rdt)
        r.acc = <char *>cnp.PyArray_DATA(accarr)
        r.seed = <const char *>cnp.PyArray_DATA(seedarr)
        if bx_plan_leaves(&r, np.getbufsize(), rdt.kind == "f" and reduces_in_chunks()) < 0:
            raise MemoryError()
        if r.nleaves < want:
            want = max(<int>r.nleaves, 1)
    r.npieces = want

    scr = _pool.pop() if _pool else Scratch()
    try:
        scr.ensure(want, nbytes)
        for k in range(want):
            r.scratch[k] = scr.buf[k]
        for k in range(want * r.nflags):
            scr.flags[k] = 0
            scr.ns[k] = 0
        r.flags = scr.flags
        r.ns = scr.ns if recorded else NULL
        with nogil:
            t0 = sp_now() if way >= 2 else 0
            wall = bx_run(&r, want)
            if way >= 2:
                t0 = sp_now() - t0
        if way >= 2:
            sp_record(probes, n * r.isz[plan.result], kind, way, t0)
        if r.stream_off >= 0:
            _streams += 1
        flags = [0] * r.nflags
        for k in range(want):
            for j in range(r.nflags):
                flags[j] |= r.flags[k * r.nflags + j]
        if recorded:
            rows = _ledger_rows(plan, &r, want, n, wall)
    finally:
        free(r.leaf)
        free(r.partials)
        _pool.append(scr)

    # report per step, in program order, as eager NumPy does (a step the
    # ledger recorded ran; eager NumPy does not run the steps after a raise)
    for k in range(r.nflags):
        if recorded and rows[k] is not None:
            ledger.append(rows[k])
        if flags[k]:
            if report is not None:
                report(k, give_fp_errors, plan.names[k], flags[k])
            else:
                PyUFunc_GiveFloatingpointErrors(plan.names[k], flags[k])
    if plan.reduce is not None:
        value = accarr[0]
        if r.red == RED_TREE and value != value:
            # a NaN sum: x86 keeps an add's first operand when both are NaN,
            # and the compiler orders the operands of NumPy's pairwise
            # recursion as it likes, so the tree above the leaves cannot
            # tell which NaN NumPy keeps: the result once more, whole, and
            # NumPy's own reduction of it (its flags were reported above)
            whole = program._replace(reduce=None, reduce_chars=None)
            with np.errstate(all="ignore"):
                # (plain stores: the reduction reads the result at once)
                tmp = (_execute(whole, operands, None, threads, None, False) if whole.steps
                       else operands[plan.result])
                value = np.add.reduce(tmp)
        return value
    if private:
        np.copyto(out, target)
        return out
    return target


cdef list _ledger_rows(plan, xrun *r, int want, npy_intp n, int64_t wall):
    """(slot, reduce, elements, ns, calls) per step and the reduction (None: no
    entry of nclx ran it, or no reduction): the wall time shared by the
    time measured in each step (evenly when nothing was measured)."""
    cdef int k, t
    cdef int64_t total = 0
    cpu = [0] * r.nflags
    for k in range(r.nflags):
        for t in range(want):
            cpu[k] += r.ns[t * r.nflags + k]
        total += cpu[k]
    slots = [st[2] for st in plan.steps]
    slots.append(plan.reduce_loop[2] if plan.reduce is not None else -1)
    nrows = r.nflags if plan.reduce is not None else r.nsteps
    rows = []
    for k in range(r.nflags):
        if slots[k] < 0:
            rows.append(None)
            continue
        share = wall * cpu[k] // total if total > 0 else wall // max(nrows, 1)
        calls = 1
        if k == r.nsteps and r.chunk > 0 and n > 0:
            calls = (n + r.chunk - 1) // r.chunk      # NumPy calls its loop per chunk
        rows.append((slots[k], 1 if k == r.nsteps else 0, n, share, calls))
    return rows
