# cython: wraparound=True, boundscheck=True
"""The threader: which loop calls are split, and how.

Exact splits only (DESIGN.md):

- elementwise calls split into chunks whose starts are multiples of 64
  elements: each element is computed alone, so the bits are those of one
  thread.  A call is left whole when an input overlaps the output without
  being it (``accumulate``) or when the output has stride 0 (one shared
  accumulator, e.g. the reduction of a comparison);
- reductions split only where the combination is exact: integer and boolean
  ops (wrap-around arithmetic, max/min, bitwise) into per-thread partials
  seeded with their chunk's first value and combined in thread order; float
  ``add`` on the split points of NumPy's pairwise sum (``n2 = n // 2; n2 -=
  n2 % 8`` down to blocks of 128), each piece summed by NumPy's own loop and
  the pieces added in the tree's order: bit-identical, FP flags included.
  Float multiply/max/min reductions, whose order NumPy fixes, stay whole
  unless ``nclx.config(reassociate=True)``;
- under ``nclx.checked()`` reductions stay whole (overflow is detected in
  NumPy's sequential order).

The pieces run on nclx._ncl.team (OpenMP's team, nclx's thread count, fork).
"""
cimport numpy as cnp
from libc.string cimport memcpy

from nclx._ncl.ncl cimport (npy_intp, ncl_call, ncl_node, ncl_dtype_sizes, NCL_SUB_SORT,
                            NCL_NSUBSYSTEMS,
                            NCL_SUB_REDUCE, NCL_FLOAT32, NCL_CALLER_CHECKED,
                            NCL_MAX_ARGS)
from nclx._ncl.registry cimport ncl_funnel_chain, ncl_set_default_front
from nclx._ncl.walk cimport ncl_call_next
from nclx._ncl.team cimport MAX_THREADS, ncl_threads_now, ncl_team_run
from nclx._ncl.overlap cimport ncl_input_overlaps_output

cnp.import_array()

cdef extern from *:
    """
    #include <Python.h>
    #include "ncl_fpe.h"
    static int ncl_reassoc = 0;
    static int ncl_gil_held(void) { return PyGILState_Check(); }
    """
    int ncl_reassoc
    int ncl_gil_held() nogil
    void ncl_fpe_clear() nogil

cdef enum:
    CHUNK_ALIGN = 64          # chunk starts are multiples of this many elements
    PW_BLOCK = 128            # NumPy's pairwise sum does not split at or below this


cdef struct team_job:
    ncl_call *call            # the whole call (args, dims, steps, data)
    ncl_node *node            # the threader node (NULL: call the loop directly)
    int reduce                # 0 elementwise, else an NCL_SPLIT_* mode
    int pieces                # chunks / leaves
    int depth                 # pairwise: levels of the tree split
    int itemsize
    npy_intp lo[MAX_THREADS]
    npy_intp n[MAX_THREADS]
    char partial[MAX_THREADS][16]


cdef inline void _run_piece(team_job *job, char **args, npy_intp *dims, npy_intp *steps,
                            int numpy_loop) noexcept nogil:
    cdef ncl_call sub
    cdef ncl_call *call = job.call
    cdef const ncl_policy *pol = <const ncl_policy *>call.policy
    if job.node == NULL:
        if (numpy_loop or pol.prefer[job.reduce != 0][1]) and call.numpy_loop != NULL:
            call.numpy_loop(args, dims, steps, call.data)
        else:
            call.nclx_loop(args, dims, steps, call.data)
    else:
        sub = call[0]
        sub.args = args
        sub.dimensions = dims
        sub.steps = steps
        sub.prefer_numpy = 1 if numpy_loop else pol.prefer[job.reduce != 0][1]
        ncl_call_next(job.node, &sub)


cdef void _team_body(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef team_job *job = <team_job *>ctx
    cdef ncl_call *call = job.call
    cdef char *args[NCL_MAX_ARGS]
    cdef npy_intp steps[NCL_MAX_ARGS]
    cdef npy_intp dims[1]
    cdef npy_intp lo, n
    cdef int i, nargs = call.nargs
    cdef int t = tid
    # the team may be smaller than asked: each thread takes every nthreads-th piece
    while t < job.pieces:
        lo = job.lo[t]
        n = job.n[t]
        if n > 0:
            if job.reduce == NCL_SPLIT_PAIRWISE:
                # -0.0 + x == x for every x: the partial is exactly NumPy's
                # pairwise sum of this piece
                if call.dtypes[2] == NCL_FLOAT32:
                    (<float *>job.partial[t])[0] = -0.0
                else:
                    (<double *>job.partial[t])[0] = -0.0
                args[0] = job.partial[t]
                args[2] = job.partial[t]
                args[1] = call.args[1] + lo * call.steps[1]
                dims[0] = n
                steps[0] = 0
                steps[1] = call.steps[1]
                steps[2] = 0
                _run_piece(job, args, dims, steps, 1)
            elif job.reduce:
                # piece 0 folds into the accumulator; the others into their own
                # partial, seeded with the piece's first value
                if t == 0:
                    args[0] = call.args[0]
                    args[2] = call.args[2]
                    args[1] = call.args[1]
                    dims[0] = n
                else:
                    memcpy(job.partial[t], call.args[1] + lo * call.steps[1], job.itemsize)
                    args[0] = job.partial[t]
                    args[2] = job.partial[t]
                    args[1] = call.args[1] + (lo + 1) * call.steps[1]
                    dims[0] = n - 1
                steps[0] = 0
                steps[1] = call.steps[1]
                steps[2] = 0
                if dims[0] > 0:
                    _run_piece(job, args, dims, steps, 0)
            else:
                for i in range(nargs):
                    args[i] = call.args[i] + lo * call.steps[i]
                    steps[i] = call.steps[i]
                dims[0] = n
                _run_piece(job, args, dims, steps, 0)
        t += nthreads


cdef int ncl_team_size(ncl_call *call, int reduce) noexcept nogil:
    """How many threads this call should use (1: run it whole, here)."""
    cdef const ncl_policy *pol = <const ncl_policy *>call.policy
    cdef npy_intp n = call.dimensions[0]
    cdef int t, i, out, mode
    if n < pol.threshold[reduce != 0] or n < 2 or pol.whole_only:
        return 1
    t = ncl_threads_now()
    if t <= 1:
        return 1
    out = call.nargs - 1
    if reduce:
        mode = pol.reduce_split
        if mode == NCL_SPLIT_NONE or (mode == NCL_SPLIT_REASSOC and not ncl_reassoc):
            return 1
        if call.caller_flags & NCL_CALLER_CHECKED:
            return 1     # overflow is judged in NumPy's sequential order
    else:
        if call.steps[out] == 0:
            return 1     # one shared accumulator: never split
        if ncl_input_overlaps_output(call, n):
            return 1     # e.g. accumulate: each element needs the previous one
    if t > MAX_THREADS:
        t = MAX_THREADS
    return t


cdef int _plan_pairwise(team_job *job, npy_intp lo, npy_intp n, int depth) noexcept nogil:
    """Leaves of NumPy's pairwise tree ``depth`` levels down, in order."""
    cdef npy_intp n2
    if depth == 0 or n <= PW_BLOCK:
        job.lo[job.pieces] = lo
        job.n[job.pieces] = n
        job.pieces += 1
        return 0
    n2 = n // 2
    n2 -= n2 % 8
    _plan_pairwise(job, lo, n2, depth - 1)
    _plan_pairwise(job, lo + n2, n - n2, depth - 1)
    return 0


ctypedef fused pw_float:
    float
    double


cdef pw_float _combine(team_job *job, npy_intp n, int depth, int *leaf,
                       pw_float kind) noexcept nogil:
    """The leaves' partial sums added as NumPy's pairwise tree adds them
    (in the type of the sum: float32 partials add in float32)."""
    cdef npy_intp n2
    cdef pw_float a, b
    if depth == 0 or n <= PW_BLOCK:
        a = (<pw_float *>job.partial[leaf[0]])[0]
        leaf[0] += 1
        return a
    n2 = n // 2
    n2 -= n2 % 8
    a = _combine(job, n2, depth - 1, leaf, kind)
    b = _combine(job, n - n2, depth - 1, leaf, kind)
    return a + b


cdef void _run_whole_again(team_job *job) noexcept nogil:
    """The whole reduction once more, on this thread, by NumPy's loop itself
    (not through the chain again: hooks after the threader saw the pieces)."""
    cdef ncl_call *call = job.call
    if call.numpy_loop != NULL:
        call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
    else:
        call.nclx_loop(call.args, call.dimensions, call.steps, call.data)


cdef void ncl_run_split(ncl_call *call, ncl_node *node, int reduce, int nthreads) noexcept nogil:
    """Run ``call`` on ``nthreads`` threads; ``node`` is the threader node
    whose successors run each piece (NULL: run the loops directly)."""
    cdef team_job job
    cdef int t, leaf = 0
    cdef npy_intp n = call.dimensions[0]
    cdef npy_intp per
    cdef char *cargs[NCL_MAX_ARGS]
    cdef npy_intp csteps[NCL_MAX_ARGS]
    cdef npy_intp one[1]
    cdef const ncl_policy *pol = <const ncl_policy *>call.policy
    cdef float facc, fsum
    cdef double dacc, dsum
    job.call = call
    job.node = node
    job.reduce = pol.reduce_split if reduce else 0
    job.itemsize = ncl_dtype_sizes[call.dtypes[call.nargs - 1]]
    job.pieces = 0
    if job.reduce == NCL_SPLIT_PAIRWISE:
        job.depth = 0
        while (1 << job.depth) < nthreads and job.depth < 6:
            job.depth += 1
        _plan_pairwise(&job, 0, n, job.depth)
    else:
        per = (n + nthreads - 1) // nthreads
        per = ((per + CHUNK_ALIGN - 1) // CHUNK_ALIGN) * CHUNK_ALIGN
        for t in range(nthreads):
            job.lo[t] = min(<npy_intp>t * per, n)
            job.n[t] = min(<npy_intp>(t + 1) * per, n) - job.lo[t]
        # a last piece shorter than CHUNK_ALIGN joins the one before it:
        # NumPy's loop on fewer elements than one vector takes another
        # scalar path than a whole call's tail (float add and multiply keep
        # the other operand's NaN there; found by review)
        t = nthreads - 1
        while t > 0 and job.n[t] == 0:
            t -= 1
        if t > 0 and job.n[t] < CHUNK_ALIGN:
            job.n[t - 1] += job.n[t]
            job.n[t] = 0
        job.pieces = nthreads
    ncl_team_run(nthreads if job.pieces > nthreads else job.pieces, _team_body, &job)
    if pol.clears_flags:
        # NumPy's loop clears the status at its end (comparisons, maximum,
        # absolute ...; reductions run the same loop): the flags up before
        # the call -- an input cast in NumPy's buffers -- and any a piece
        # raised are dropped, as one run of NumPy's loop drops them (before,
        # reported; found by review)
        ncl_fpe_clear()
    if job.reduce == NCL_SPLIT_PAIRWISE:
        # NumPy: acc += pairwise(values); the pieces added in the tree's order.
        # Finite sums have NumPy's bits.  A NaN result does not tell which
        # NaN NumPy would keep: x86 returns an add's first operand when both
        # are NaN, and the compiler orders the operands of NumPy's recursion
        # as it likes (measured: not the same at every level).  So a NaN sum
        # is done again, whole, by NumPy's loop from the same accumulator;
        # the FP flags of both runs are those of NumPy's one run.
        if call.dtypes[2] == NCL_FLOAT32:
            facc = (<float *>call.args[0])[0]
            fsum = facc + _combine(&job, n, job.depth, &leaf, <float>0)
            if fsum != fsum:
                (<float *>call.args[0])[0] = facc
                _run_whole_again(&job)
            else:
                (<float *>call.args[0])[0] = fsum
        else:
            dacc = (<double *>call.args[0])[0]
            dsum = dacc + _combine(&job, n, job.depth, &leaf, <double>0)
            if dsum != dsum:
                (<double *>call.args[0])[0] = dacc
                _run_whole_again(&job)
            else:
                (<double *>call.args[0])[0] = dsum
    elif job.reduce:
        # fold the partials into the accumulator in piece order
        one[0] = 1
        csteps[0] = 0
        csteps[1] = 0
        csteps[2] = 0
        for t in range(1, job.pieces):
            if job.n[t] > 0:
                cargs[0] = call.args[0]
                cargs[1] = job.partial[t]
                cargs[2] = call.args[2]
                _run_piece(&job, cargs, one, csteps, 0)


# ----------------------------------------------------------- the threader node

cdef int _threader_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    """Default first node of every funnel chain: split large calls across threads."""
    cdef const ncl_policy *pol = <const ncl_policy *>call.policy
    cdef int reduce = call.subsystem == NCL_SUB_REDUCE
    cdef int t
    if pol == NULL:
        # a call op (nclx._ncl.callops) has no loop policy: its kernel
        # splits the call itself, as only it knows how
        return ncl_call_next(node, call)
    t = ncl_team_size(call, reduce)
    if t > 1 and ncl_gil_held():
        t = 1   # Python hooks after this node would need the GIL the caller holds
    if t <= 1:
        call.prefer_numpy = pol.prefer[reduce][0]
        return ncl_call_next(node, call)
    ncl_run_split(call, node, reduce, t)
    return 0


cdef ncl_node _threader_nodes[NCL_NSUBSYSTEMS]
cdef char _threader_name[9]


cdef _install_threader():
    """The threader heads the funnel chains of the elementwise subsystems;
    the Sort, Mask, RNG and Create calls (nclx._ncl.callops) split their
    work inside their kernels."""
    cdef int s
    _threader_name[:9] = b"threader\0"
    for s in range(NCL_SUB_SORT):
        _threader_nodes[s].fn = _threader_fn
        _threader_nodes[s].data = NULL
        _threader_nodes[s].obj = NULL
        _threader_nodes[s].destroy = NULL
        _threader_nodes[s].flags = 0
        _threader_nodes[s].name = _threader_name
        ncl_set_default_front(ncl_funnel_chain(s), &_threader_nodes[s])

_install_threader()


# ------------------------------------------------------------- settings

def set_reassociate(bint on):
    global ncl_reassoc
    ncl_reassoc = on


def get_reassociate():
    return bool(ncl_reassoc)
