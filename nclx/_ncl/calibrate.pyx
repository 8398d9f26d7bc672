# cython: wraparound=True, boundscheck=True
"""nclx.calibrate(): time nclx's kernel against NumPy's loop per signature
and keep the faster one, for elementwise calls and reductions, whole calls
and per-thread chunks."""
from libc.stdint cimport int64_t

cimport numpy as cnp
import numpy as np

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn, ncl_call, NCL_NSLOTS
from nclx._ncl.entries cimport ncl_slot_policy, ncl_slot_proto, ncl_slot_installed, ncl_slot_reducible
from nclx._ncl.threader cimport (ncl_policy, ncl_run_split, NCL_SPLIT_NONE, NCL_SPLIT_REASSOC)
from nclx._ncl.team cimport ncl_threads_now
from nclx._ncl import entries, looptable, spec
from nclx._ncl.ufuncs import kernel_key

cnp.import_array()

cdef extern from *:
    """
    #include <time.h>
    static inline int64_t ncl_cal_now_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    """
    int64_t ncl_cal_now_ns() nogil


cdef double _time_loop(ncl_loop_fn loop, void *data, char **args, npy_intp n,
                       npy_intp *steps, int reps) noexcept nogil:
    cdef int r
    cdef int64_t t0, best = -1
    cdef npy_intp dims[1]
    dims[0] = n
    loop(args, dims, steps, data)    # warm caches
    for r in range(reps):
        t0 = ncl_cal_now_ns()
        loop(args, dims, steps, data)
        t0 = ncl_cal_now_ns() - t0
        if best < 0 or t0 < best:
            best = t0
    return <double>best


def _measured_slots(bint choice=False):
    """(k, twin, op, chars, loop address, data address) per slot whose loop
    NumPy has (and, unless ``choice``, per slot of nclx's own ops, with no
    NumPy loop: address 0); twin is the earlier slot sharing its kernel and
    NumPy's twin loop ('l'/'q'), whose measurement slot k copies, or -1."""
    seen = {}
    for k in range(NCL_NSLOTS):
        op, chars, ufunc = entries.slot_info(k)
        if choice and (ufunc is None or op in spec.NUMPY_LOOPS):
            continue      # one loop only: nothing to choose between
        key = kernel_key(op, chars)
        if key in seen:
            yield k, seen[key], op, chars, 0, 0
            continue
        if ufunc is None:
            # nclx's own ops (fma, where, cast): their kernel is the loop
            seen[key] = k
            yield k, -1, op, chars, 0, 0
            continue
        found = looptable.find_loop(ufunc, chars)
        if found is None:
            continue
        seen[key] = k
        yield k, -1, op, chars, found[1], found[2]


cdef void _point(list arrs, int nargs, bint red, char **args, npy_intp *steps):
    """args/steps over ``arrs``; a reduction's output is its first input, stride 0."""
    cdef int j
    for j in range(nargs):
        args[j] = <char *>cnp.PyArray_DATA(arrs[j])
        steps[j] = arrs[j].itemsize
    if red:
        args[0] = args[2]
        steps[0] = 0
        steps[2] = 0



def calibrate(small=4096, chunk=131072, int reps=7):
    """Time nclx's kernel against NumPy's loop for every signature, for
    elementwise calls and reductions, at a whole-call size (``small``) and a
    per-thread chunk size (``chunk``); keep the faster of each.

    Returns {(op, chars): ((elem_small, elem_chunk), (red_small, red_chunk))}
    with the nclx/NumPy time ratios (> 1: NumPy's loop is faster)."""
    cdef int k, j
    cdef char *args[4]
    cdef npy_intp steps[4]
    cdef ncl_loop_fn nploop
    cdef void *npdata
    cdef double tn, tc
    cdef ncl_call *proto
    cdef ncl_policy *pol
    out = {}
    with np.errstate(all="ignore"):
        for k, twin, op, chars, addr, daddr in _measured_slots(True):
            proto = ncl_slot_proto(k)
            pol = ncl_slot_policy(k)
            if twin >= 0:
                pol.prefer = ncl_slot_policy(twin).prefer
                out[(op, chars)] = out[tuple(entries.slot_info(twin)[:2])]
                continue
            nploop = proto.numpy_loop if ncl_slot_installed(k) else <ncl_loop_fn><size_t>addr
            npdata = <void *><size_t>daddr
            ratios = []
            for red in (0, 1):
                if red and not ncl_slot_reducible(k):
                    ratios.append((1.0, 1.0))
                    continue
                pair = []
                for ci, n in enumerate((small, chunk)):
                    arrs = [(np.arange(n) % 5 + 1).astype(np.dtype(c)) for c in chars]
                    _point(arrs, proto.nargs, red, args, steps)
                    tn = _time_loop(nploop, npdata, args, n, steps, reps)
                    tc = _time_loop(proto.nclx_loop, NULL, args, n, steps, reps)
                    # keep nclx's kernel unless NumPy's is clearly (> 5%) faster,
                    # or only NumPy's loop gives NumPy's NaN (reductions too)
                    pol.prefer[red][ci] = tc > tn * 1.05 or spec.numpy_loop_only(
                        op, spec.key_dtype(kernel_key(op, chars)[1]), red)
                    pair.append(tc / tn if tn > 0 else 1.0)
                ratios.append(tuple(pair))
            out[(op, chars)] = tuple(ratios)
    return out


cdef double _run_once(ncl_call *call, int reduce, int nthreads) noexcept nogil:
    """One run of ``call``, whole (nthreads 1) or split; nanoseconds."""
    cdef const ncl_policy *pol = <const ncl_policy *>call.policy
    cdef int64_t t0 = ncl_cal_now_ns()
    if nthreads <= 1:
        if pol.prefer[reduce][0] and call.numpy_loop != NULL:
            call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
        else:
            call.nclx_loop(call.args, call.dimensions, call.steps, call.data)
    else:
        ncl_run_split(call, NULL, reduce, nthreads)
    return <double>(ncl_cal_now_ns() - t0)


cdef double _paired_ratio(ncl_call *call, int reduce, int nthreads, int rounds) noexcept nogil:
    """Median over ``rounds`` of (whole time / split time), the two run back
    to back in each round so that machine noise hits both."""
    cdef double r[64]
    cdef double tw, ts, tmp
    cdef int i, j
    if rounds > 64:
        rounds = 64
    _run_once(call, reduce, 1)            # warm caches and the team
    _run_once(call, reduce, nthreads)
    for i in range(rounds):
        tw = _run_once(call, reduce, 1)
        ts = _run_once(call, reduce, nthreads)
        r[i] = tw / ts if ts > 0 else 1.0
    for i in range(1, rounds):            # insertion sort: rounds is small
        tmp = r[i]
        j = i - 1
        while j >= 0 and r[j] > tmp:
            r[j + 1] = r[j]
            j -= 1
        r[j + 1] = tmp
    return r[rounds // 2]


def calibrate_thresholds(sizes=None, int reps=9, dict ratios=None):
    """Per signature and kind of call, the smallest size in ``sizes`` at
    which splitting over the current thread count is >= 5% faster than one
    thread (median of ``reps`` paired rounds) and from which it is nowhere
    slower (ratio >= 0.98 at every larger size measured); sets it as the
    signature's threshold (never split: 2**62).
    Returns {(op, chars): (elementwise, reduce)}; ``ratios``, a dict, gets
    {(op, chars, is_reduce): {size: whole/split time ratio}}."""
    cdef int k, j, red, t = ncl_threads_now()
    cdef char *args[4]
    cdef npy_intp steps[4]
    cdef npy_intp dims[1]
    cdef ncl_call call
    cdef ncl_policy *pol
    cdef double ratio
    if sizes is None:
        sizes = [1 << e for e in range(12, 23)]
    sizes = sorted(int(n) for n in sizes)
    never = 1 << 62
    out = {}
    with np.errstate(all="ignore"):
        for k, twin, op, chars, addr, daddr in _measured_slots():
            pol = ncl_slot_policy(k)
            if twin >= 0:
                pol.threshold = ncl_slot_policy(twin).threshold
                out[(op, chars)] = out[tuple(entries.slot_info(twin)[:2])]
                continue
            call = ncl_slot_proto(k)[0]
            if not ncl_slot_installed(k):
                call.numpy_loop = <ncl_loop_fn><size_t>addr
            call.data = <void *><size_t>daddr
            call.caller_flags = 0
            result = []
            for red in (0, 1):
                if red and (not ncl_slot_reducible(k) or pol.reduce_split == NCL_SPLIT_NONE
                            or pol.reduce_split == NCL_SPLIT_REASSOC):
                    result.append(int(pol.threshold[1]))
                    continue
                if t <= 1:
                    result.append(never)
                    pol.threshold[red] = never
                    continue
                pays = []
                big = sizes[-1]
                arrs = [(np.arange(big) % 5 + 1).astype(np.dtype(c)) for c in chars]
                for n in sizes:
                    _point(arrs, call.nargs, red, args, steps)
                    dims[0] = n
                    call.args = args
                    call.steps = steps
                    call.dimensions = dims
                    pays.append(_paired_ratio(&call, red, t, reps))
                if ratios is not None:
                    ratios[(op, chars, bool(red))] = dict(zip(sizes, pays))
                # the smallest size where splitting is >= 5% faster and from
                # which it is never slower (cache-size dips stay >= 0.98)
                threshold = never
                for i in range(len(sizes) - 1, -1, -1):
                    if pays[i] < 0.98:
                        break
                    if pays[i] >= 1.05:
                        threshold = sizes[i]
                threshold = max(threshold, spec.MIN_SPLIT)    # NumPy's buffers stay whole
                pol.threshold[red] = threshold
                result.append(threshold)
            out[(op, chars)] = tuple(result)
    return out
