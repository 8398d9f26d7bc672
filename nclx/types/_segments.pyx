# Per-list reductions over offsets, one pass, no GIL: sums stream over the
# values in order; prod/max/min fold short lists here and hand long ones to
# nclx's kernel from the C API table (NumPy's reduction convention:
# accumulator in and out, stride 0).  The C API's declarations come from
# nclx._ncl.ncl (one definition with nclx.h).
from cpython.pycapsule cimport PyCapsule_Import
from libc.math cimport NAN
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

import numpy as np

from nclx._ncl.ncl cimport nclx_api, ncl_loop_fn, NCLX_CAPSULE_NAME
from nclx._ncl.ncl cimport npy_intp as ncl_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS

cdef extern from "<fenv.h>" nogil:
    int FE_ALL_EXCEPT, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID
    int fetestexcept(int excepts)
    int feclearexcept(int excepts)


cdef int _numpy_flags(int raised) noexcept nogil:
    """fenv's flags as NumPy's bits (divide 1, over 2, under 4, invalid 8)."""
    return ((1 if raised & FE_DIVBYZERO else 0) | (2 if raised & FE_OVERFLOW else 0) |
            (4 if raised & FE_UNDERFLOW else 0) | (8 if raised & FE_INVALID else 0))

cdef const nclx_api *_API = NULL


cdef const nclx_api *_api() except NULL:
    global _API
    if _API == NULL:
        _API = <const nclx_api *>PyCapsule_Import(NCLX_CAPSULE_NAME, 0)
    return _API


def kernel_for(str op, dtype):
    """True when nclx has a kernel for the reduction ``op`` over ``dtype``."""
    return _loop(op, np.dtype(dtype)) != NULL


cdef ncl_loop_fn _loop(str op, dtype) except? NULL:
    cdef const nclx_api *api = _api()
    cdef int d = api.dtype_of_typenum(dtype.num)
    cdef int dts[3]
    if d < 0:
        return NULL
    opb = op.encode()
    cdef int o = api.op_index(opb)
    if o < 0:
        return NULL
    dts[0] = d
    dts[1] = d
    dts[2] = d
    return api.kernel(o, dts, 3)


ctypedef fused offset_t:
    int32_t
    int64_t

ctypedef fused num_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double

# Lists longer than this go to nclx's kernel (its unrolled / pairwise
# reduction); shorter ones are folded here, in order, where a kernel call
# would cost more than the list.
DEF LONG = 48

cdef enum:
    PICK = 2        # empty[i]: a non-empty list whose max/min NumPy's loop decides

cdef enum:
    OP_ADD = 0
    OP_MUL = 1
    OP_MAX = 2
    OP_MIN = 3


cdef inline num_t _fold_list(const num_t *vp, ncl_intp s, int64_t a, int64_t b,
                            int op) noexcept nogil:
    """op over vp[a*s], ..., vp[(b-1)*s] (b > a): one loop per op, so the
    inner loop carries no branch on op."""
    cdef num_t acc = vp[a * s], x, p0, p1, p2, p3
    cdef bint nan
    cdef int64_t j = a + 1
    if op == OP_ADD:
        if b - a >= 8:
            # four running sums (the latency of one add hides behind three)
            p0 = acc
            p1 = vp[(a + 1) * s]
            p2 = vp[(a + 2) * s]
            p3 = vp[(a + 3) * s]
            j = a + 4
            while j + 4 <= b:
                p0 = p0 + vp[j * s]
                p1 = p1 + vp[(j + 1) * s]
                p2 = p2 + vp[(j + 2) * s]
                p3 = p3 + vp[(j + 3) * s]
                j += 4
            acc = (p0 + p1) + (p2 + p3)
        while j < b:
            acc = acc + vp[j * s]
            j += 1
    elif op == OP_MUL:
        while j < b:
            acc = acc * vp[j * s]
            j += 1
    elif op == OP_MAX:
        # NumPy's maximum: a NaN anywhere gives NaN (tracked apart, so the
        # comparison stays a branch-free max)
        nan = acc != acc
        while j < b:
            x = vp[j * s]
            nan |= x != x
            acc = x if x > acc else acc
            j += 1
        if nan:
            acc = _nan(acc)
    else:
        nan = acc != acc
        while j < b:
            x = vp[j * s]
            nan |= x != x
            acc = x if x < acc else acc
            j += 1
        if nan:
            acc = _nan(acc)
    return acc


cdef inline num_t _nan(num_t like) noexcept nogil:
    if num_t is float or num_t is double:
        return <num_t>NAN
    return like


cdef Py_ssize_t _sum_stream(const offset_t *offs, Py_ssize_t n, const num_t *vp, ncl_intp s,
                            num_t *outp, int64_t nvalues, num_t zero) noexcept nogil:
    """Sums of consecutive lists in one stream over the values, each list
    from ``zero`` in order -- awkward's order, so its floats too come out
    bit for bit -- with one unpredictable branch per list, at its end.
    (The C API's add kernel folds a reduction in the same order; calling it
    per list only costs more.)"""
    cdef Py_ssize_t i
    cdef int64_t j = offs[0], b
    cdef num_t acc
    if j < 0:
        return 0
    for i in range(n):
        b = offs[i + 1]
        if b < j or b > nvalues or offs[i] != j:
            return i
        acc = zero
        while j < b:
            acc = acc + vp[j * s]
            j += 1
        outp[i] = acc
    return -1


cdef Py_ssize_t _run(ncl_loop_fn loop, int op, const offset_t *offs, Py_ssize_t n,
                     const num_t *vp, ncl_intp vstride, num_t *outp, uint8_t *empty,
                     int64_t nvalues, const num_t *ident) noexcept nogil:
    # lists [0, n) of offs (n + 1 offsets); returns -1, or the first list
    # whose offsets leave [0, nvalues] (trusted offsets built with
    # validate=False are checked here, list by list)
    cdef Py_ssize_t i
    cdef int64_t a, b
    cdef char *args[3]
    cdef ncl_intp dims[1]
    cdef ncl_intp steps[3]
    cdef ncl_intp s = vstride // sizeof(num_t)
    steps[0] = 0
    steps[1] = vstride
    steps[2] = 0
    if op == OP_ADD and empty == NULL and ident != NULL and n > 0:
        return _sum_stream(offs, n, vp, s, outp, nvalues, ident[0])
    for i in range(n):
        a = offs[i]
        b = offs[i + 1]
        if b < a:
            return i              # trusted offsets that decrease: as the sums say
        if empty != NULL:
            empty[i] = b <= a
        if b <= a:
            if ident != NULL:
                outp[i] = ident[0]
            continue
        if a < 0 or b > nvalues:
            return i
        if b - a > LONG:
            outp[i] = vp[a * s]
            args[0] = <char *>(outp + i)
            args[1] = <char *>(vp + (a + 1) * s)
            args[2] = args[0]
            dims[0] = b - a - 1
            loop(args, dims, steps, NULL)
        else:
            outp[i] = _fold_list(vp, s, a, b, op)
        if empty != NULL and _numpys_pick(outp[i], op):
            empty[i] = PICK
    return -1


cdef inline bint _numpys_pick(num_t r, int op) noexcept nogil:
    """A float max/min of NaN or zero: which NaN (payload, sign) and which
    zero sign NumPy's loop gives is its own (its SIMD order), so the list
    is flagged PICK for compute.py to reduce again with NumPy's ufunc
    (review 24; before, the first met).  Other results have one bit
    pattern whatever the order of equal values."""
    if num_t is float or num_t is double:
        return (op == OP_MAX or op == OP_MIN) and (r != r or r == 0)
    return False


_OPS = {"add": OP_ADD, "multiply": OP_MUL, "maximum": OP_MAX, "minimum": OP_MIN}


cdef enum:
    C_I8, C_I16, C_I32, C_I64, C_U8, C_U16, C_U32, C_U64, C_F32, C_F64


cdef struct seg_job:
    ncl_loop_fn loop
    int op
    int code                  # C_*: the values' dtype
    bint wide                 # int64 offsets (else int32)
    const char *offs          # n + 1 offsets
    Py_ssize_t n
    const char *vp
    ncl_intp vstride
    char *outp
    uint8_t *empty
    int64_t nvalues
    const char *identp
    Py_ssize_t bad[MAX_THREADS]   # per thread: its first bad list (global index) or -1


cdef Py_ssize_t _typed(seg_job *j, const offset_t *o, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t n = hi - lo
    cdef uint8_t *ep = NULL if j.empty == NULL else j.empty + lo
    if j.code == C_I8:
        return _run(j.loop, j.op, o + lo, n, <const int8_t *>j.vp, j.vstride, <int8_t *>j.outp + lo, ep, j.nvalues, <const int8_t *>j.identp)
    if j.code == C_I16:
        return _run(j.loop, j.op, o + lo, n, <const int16_t *>j.vp, j.vstride, <int16_t *>j.outp + lo, ep, j.nvalues, <const int16_t *>j.identp)
    if j.code == C_I32:
        return _run(j.loop, j.op, o + lo, n, <const int32_t *>j.vp, j.vstride, <int32_t *>j.outp + lo, ep, j.nvalues, <const int32_t *>j.identp)
    if j.code == C_I64:
        return _run(j.loop, j.op, o + lo, n, <const int64_t *>j.vp, j.vstride, <int64_t *>j.outp + lo, ep, j.nvalues, <const int64_t *>j.identp)
    if j.code == C_U8:
        return _run(j.loop, j.op, o + lo, n, <const uint8_t *>j.vp, j.vstride, <uint8_t *>j.outp + lo, ep, j.nvalues, <const uint8_t *>j.identp)
    if j.code == C_U16:
        return _run(j.loop, j.op, o + lo, n, <const uint16_t *>j.vp, j.vstride, <uint16_t *>j.outp + lo, ep, j.nvalues, <const uint16_t *>j.identp)
    if j.code == C_U32:
        return _run(j.loop, j.op, o + lo, n, <const uint32_t *>j.vp, j.vstride, <uint32_t *>j.outp + lo, ep, j.nvalues, <const uint32_t *>j.identp)
    if j.code == C_U64:
        return _run(j.loop, j.op, o + lo, n, <const uint64_t *>j.vp, j.vstride, <uint64_t *>j.outp + lo, ep, j.nvalues, <const uint64_t *>j.identp)
    if j.code == C_F32:
        return _run(j.loop, j.op, o + lo, n, <const float *>j.vp, j.vstride, <float *>j.outp + lo, ep, j.nvalues, <const float *>j.identp)
    return _run(j.loop, j.op, o + lo, n, <const double *>j.vp, j.vstride, <double *>j.outp + lo, ep, j.nvalues, <const double *>j.identp)


cdef void _job_body(void *ctx, int tid, int nthreads) noexcept nogil:
    """Thread ``tid`` of the core's team reduces lists [n*tid/nthreads,
    n*(tid+1)/nthreads): each list whole, by one thread, so the split
    changes no bit."""
    cdef seg_job *j = <seg_job *>ctx
    cdef Py_ssize_t lo = j.n * tid // nthreads, hi = j.n * (tid + 1) // nthreads, bad
    if hi <= lo:
        j.bad[tid] = -1
        return
    if j.wide:
        bad = _typed(j, <const int64_t *>j.offs, lo, hi)
    else:
        bad = _typed(j, <const int32_t *>j.offs, lo, hi)
    j.bad[tid] = -1 if bad < 0 else lo + bad


_CODES = {np.dtype(np.int8): C_I8, np.dtype(np.int16): C_I16, np.dtype(np.int32): C_I32,
          np.dtype(np.int64): C_I64, np.dtype(np.uint8): C_U8, np.dtype(np.uint16): C_U16,
          np.dtype(np.uint32): C_U32, np.dtype(np.uint64): C_U64, np.dtype(np.float32): C_F32,
          np.dtype(np.float64): C_F64}


def segment_reduce(str op, values, offsets, out, empty=None, identity=None, int threads=1,
                   flags=None):
    """``out[i] = op.reduce(values[offsets[i]:offsets[i + 1]])`` for every
    non-empty list; an empty list gets ``identity`` (left untouched when
    None) and, when ``empty`` (uint8, one per list) is given, ``empty[i] = 1``
    (float max/min: ``empty[i] = 2`` for a list whose result is a NaN or a
    zero, whose bits the caller takes from NumPy's loop).  ``values``
    1-D, of ``out``'s dtype, native byte order, its stride a multiple of
    the item size; ``offsets`` validated (non-decreasing, within
    ``values``).  Returns False when nclx has no kernel for (op, dtype):
    the caller falls back to NumPy.  ``threads`` > 1: the lists are split
    in contiguous slices over the core's thread team (at most
    ``threads``, capped by nclx's thread count), each list reduced whole by
    one thread, so the split changes no bit.  ``flags``: a list, given the
    floating-point flags the lists met (NumPy's bits; the team's workers'
    are merged into the calling thread's), for the caller to report as
    NumPy's per-row reductions do (before, none was: review 23)."""
    if op not in _OPS:
        return False
    code = _CODES.get(values.dtype)
    if code is None:
        return False
    cdef ncl_loop_fn loop = _loop(op, values.dtype)
    if loop == NULL:
        return False
    if values.ndim != 1 or out.ndim != 1 or values.dtype != out.dtype \
            or not out.flags.c_contiguous or len(out) != len(offsets) - 1 \
            or values.strides[0] % values.dtype.itemsize:
        raise ValueError("segment_reduce: 1-D values and a contiguous out of the same dtype")
    if offsets.ndim != 1 or not offsets.flags.c_contiguous \
            or offsets.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        offsets = np.ascontiguousarray(offsets, dtype=np.int64 if offsets.dtype.itemsize > 4
                                       or offsets.dtype.kind == "u" else np.int32)
    cdef seg_job job
    job.loop = loop
    job.op = _OPS[op]
    job.code = code
    job.wide = offsets.dtype == np.int64
    job.offs = <const char *><size_t>offsets.__array_interface__["data"][0]
    job.n = len(offsets) - 1
    job.vp = <const char *><size_t>values.__array_interface__["data"][0]
    job.vstride = values.strides[0]
    job.outp = <char *><size_t>out.__array_interface__["data"][0]
    job.empty = NULL
    job.nvalues = len(values)
    job.identp = NULL
    if empty is not None:
        if empty.dtype != np.uint8 or len(empty) != len(out) or not empty.flags.c_contiguous:
            raise ValueError("segment_reduce: empty must be contiguous uint8, one per list")
        job.empty = <uint8_t *><size_t>empty.__array_interface__["data"][0]
    ident = None
    if identity is not None:
        ident = np.array(identity, dtype=values.dtype)
        job.identp = <const char *><size_t>ident.__array_interface__["data"][0]
    cdef int want = min(threads, ncl_threads_now(), MAX_THREADS, max(job.n, 1))
    cdef int t
    cdef Py_ssize_t bad = -1
    for t in range(MAX_THREADS):
        job.bad[t] = -1
    cdef int raised = 0
    with nogil:
        feclearexcept(FE_ALL_EXCEPT)
        if want > 1:
            ncl_team_run(want, _job_body, &job)
        else:
            _job_body(&job, 0, 1)
        raised = _numpy_flags(fetestexcept(FE_ALL_EXCEPT))
        feclearexcept(FE_ALL_EXCEPT)
    if flags is not None:
        flags.append(raised)
    for t in range(MAX_THREADS):
        if job.bad[t] >= 0 and (bad < 0 or job.bad[t] < bad):
            bad = job.bad[t]
    if bad >= 0:
        raise ValueError(f"list {bad}: offsets {int(offsets[bad])}..{int(offsets[bad + 1])} "
                         f"leave the values (length {len(values)}); were they built with "
                         "validate=False?")
    return True
