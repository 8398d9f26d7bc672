# cython: wraparound=False, boundscheck=False
"""NCLib's Create subsystem: the kernels that write a new array and the call
that runs them (nclx.create is the public face; nclx._ncl.allocating gets
the memory from NumPy's allocator).

For nclx's fixed-width dtypes, one call of the Create subsystem's call op
-- ``empty``, ``zeros`` or ``full`` on one operand, the array's data --
runs through ``ncl_callop_run``: the ledger counts it and hooks may observe
or replace it.  The kernels split the data in contiguous page-aligned
ranges (huge-page aligned when large), one per thread of nclx's team, so
each page is first written by the thread that owns its range (first touch
places it on that thread's NUMA node):

- ``full`` writes the value's bytes (converted once, as ``np.copyto(...,
  casting='unsafe')`` converts it: nclx._ncl.fillvalue);
- ``zeros`` writes nothing when the memory came from calloc (fresh pages of
  the OS are zero; a reused heap block calloc zeroed itself), zeros when it
  did not (``zeros_like`` of a subclass or of a non-contiguous prototype),
  and with ``touch`` writes zeros on every page from the team;
- ``empty`` writes nothing, or with ``touch`` one zero byte per page (the
  contents of an empty array are undefined either way).

With no hook and no ledger in the Create chains, ``empty`` and ``zeros``
without ``touch`` skip the call entirely (nothing would be written).
"""
cimport numpy as cnp
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t, uintptr_t

from nclx._ncl.ncl cimport npy_intp, ncl_chain, NCL_SUB_CREATE
from nclx._ncl.registry cimport ncl_funnel_chain, ncl_kernel_chain
from nclx._ncl.callops cimport ncl_callop_slot, ncl_callop_run
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS
from nclx._ncl.fillvalue cimport ncl_fill_value
import numpy as np

from nclx._ncl.dtypes import DTYPES

cnp.import_array()

cdef extern from *:
    """
    #include "nclx.h"
    /* no user node in the chain (what ncl_callop_quiet reads, inline) */
    static inline int ncl_create_nouser(const ncl_chain *c) {
        return __atomic_load_n(&c->nuser, __ATOMIC_ACQUIRE) == 0;
    }
    #include <time.h>
    static inline int64_t ncl_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    static inline int64_t ncl_load_i64(int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void ncl_store_i64(int64_t *p, int64_t v) {
        __atomic_store_n(p, v, __ATOMIC_RELAXED);
    }
    """
    bint ncl_create_nouser(const ncl_chain *c) noexcept nogil
    int64_t ncl_now_ns() noexcept nogil
    int64_t ncl_load_i64(int64_t *p) noexcept nogil
    void ncl_store_i64(int64_t *p, int64_t v) noexcept nogil

cdef enum:
    PAGE = 4096
    HUGE = 2 << 20            # a transparent huge page (x86-64)
    NTYPES = 32               # NumPy's built-in type numbers are below this

#: the call ops of the Create subsystem (spec.CALL_OPS), in this order
OPS = ("empty", "zeros", "full")
#: each thread of a Create call writes at least this many bytes: a call of
#: fewer than twice as many stays on the calling thread (measured: 2 threads
#: pay from about 200 KiB, docs/create.md)
PIECE_BYTES = 128 << 10
#: a team that ran less than this long ago still spins (OpenMP's workers
#: spin a few ms before they sleep); a sleeping one is woken only for calls
#: of COLD_BYTES and more: waking took about 50 us on the idle 2-core VM
#: (2 threads then paid from 2 MiB) but up to 8 ms while other jobs loaded
#: it, which a call of 16 MiB (1.5 ms or more) can absorb (docs/create.md)
WARM_NS = 2_000_000
COLD_BYTES = 16 << 20
#: calls of at least this many bytes release the GIL
NOGIL_BYTES = 1 << 16
_copyto = np.copyto

cdef npy_intp _piece_bytes = PIECE_BYTES
cdef npy_intp _cold_bytes = COLD_BYTES
cdef int64_t _warm_ns = WARM_NS
cdef int64_t _warm_until = 0    # ncl_now_ns() until which the team spins
cdef int _slots[3][NTYPES]      # op, NumPy type number -> call slot, or -1
cdef ncl_chain *_kchains[3][NTYPES]     # ... -> the slot's kernel chain
cdef ncl_chain *_funnel = ncl_funnel_chain(NCL_SUB_CREATE)


def _fill_slots():
    cdef int op, t
    for op in range(3):
        for t in range(NTYPES):
            _slots[op][t] = -1
    for ch in np.typecodes["All"]:
        dt = np.dtype(ch)
        if dt.name in DTYPES and dt.num < NTYPES:
            for op in range(3):
                _slots[op][dt.num] = ncl_callop_slot(OPS[op], dt.name)
                _kchains[op][dt.num] = ncl_kernel_chain(f"{OPS[op]}_{dt.name}")


_fill_slots()


cdef int ncl_create_slot(int op, cnp.dtype descr) noexcept:
    """The call slot of ``op`` for arrays of ``descr``, or -1 (not one of
    nclx's fixed-width dtypes in native byte order)."""
    cdef int t = descr.type_num
    if t >= NTYPES or t < 0 or not cnp.PyArray_ISNBO(descr.byteorder):
        return -1
    return _slots[op][t]


# ------------------------------------------------------------------ kernels

cdef struct create_data:
    int op                    # 0 empty, 1 zeros, 2 full
    int touch                 # write every page from the team
    int write_zeros           # zeros: the memory is not known to be zero
    unsigned char value[8]    # full: one element, native bytes


cdef struct piece_job:
    const create_data *d
    char *p
    npy_intp nbytes
    npy_intp itemsize
    int pieces


cdef inline void _pattern(char *p, npy_intp nbytes, const unsigned char *v,
                          npy_intp size) noexcept nogil:
    """``nbytes`` (a multiple of ``size``) at ``p`` (aligned to ``size``)
    filled with the ``size`` bytes at ``v``."""
    cdef npy_intp i, n = nbytes // size
    cdef uint16_t v2
    cdef uint32_t v4
    cdef uint64_t v8
    cdef bint same = True
    for i in range(1, size):
        same = same and v[i] == v[0]
    if same:                  # 0, -1, ...: memset is the fastest fill
        memset(p, v[0], nbytes)
    elif size == 2:
        memcpy(&v2, v, 2)
        for i in range(n):
            (<uint16_t *>p)[i] = v2
    elif size == 4:
        memcpy(&v4, v, 4)
        for i in range(n):
            (<uint32_t *>p)[i] = v4
    else:
        memcpy(&v8, v, 8)
        for i in range(n):
            (<uint64_t *>p)[i] = v8


cdef inline npy_intp _bound(const piece_job *j, int t) noexcept nogil:
    """Start of piece ``t``: the pieces' starts are page boundaries (huge
    page boundaries when the pieces are large: a transparent huge page is
    then faulted in, and placed, by one thread)."""
    cdef npy_intp raw, b, g = HUGE if j.nbytes // j.pieces >= 2 * HUGE else PAGE
    if t <= 0:
        return 0
    if t >= j.pieces:
        return j.nbytes
    raw = <npy_intp>(<uintptr_t>j.p) + (j.nbytes // j.pieces) * t
    b = ((raw + g - 1) & ~(g - 1)) - <npy_intp>(<uintptr_t>j.p)
    return min(b, j.nbytes)


cdef void _piece(const piece_job *j, npy_intp lo, npy_intp hi) noexcept nogil:
    cdef const create_data *d = j.d
    cdef npy_intp q
    if hi <= lo:
        return
    if d.op == 2:
        _pattern(j.p + lo, hi - lo, d.value, j.itemsize)
    elif d.op == 1:
        memset(j.p + lo, 0, hi - lo)
    else:
        # one byte per page (and the range's first): the page is mapped here
        j.p[lo] = 0
        q = (((<npy_intp>(<uintptr_t>(j.p + lo)) + PAGE) & ~(<npy_intp>PAGE - 1))
             - <npy_intp>(<uintptr_t>j.p))
        while q < hi:
            j.p[q] = 0
            q += PAGE


cdef void _team_body(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef const piece_job *j = <const piece_job *>ctx
    cdef int t = tid
    while t < j.pieces:
        _piece(j, _bound(j, t), _bound(j, t + 1))
        t += nthreads


cdef inline bint _writes(const create_data *d) noexcept nogil:
    return d.op == 2 or d.touch or (d.op == 1 and d.write_zeros)


cdef void _run(char **args, const npy_intp *dims, const npy_intp *steps, void *data,
               int threads) noexcept nogil:
    cdef piece_job j
    cdef int want
    j.d = <const create_data *>data
    if not _writes(j.d) or dims[0] <= 0:
        return
    j.p = args[0]
    j.itemsize = steps[0]
    j.nbytes = dims[0] * steps[0]
    want = 1
    if threads > 1 and (<uintptr_t>j.p) % <uintptr_t>j.itemsize == 0:
        want = <int>min(<npy_intp>min(threads, MAX_THREADS), j.nbytes // _piece_bytes)
        if want > 1 and not j.d.touch and j.nbytes < _cold_bytes \
                and ncl_now_ns() > ncl_load_i64(&_warm_until):
            want = 1          # the team sleeps: waking it costs more than it saves
                              # (touch asks for the team's pages: it wakes it)
    if want <= 1:
        j.pieces = 1
        _piece(&j, 0, j.nbytes)
    else:
        j.pieces = want
        ncl_team_run(want, _team_body, &j)
        ncl_store_i64(&_warm_until, ncl_now_ns() + _warm_ns)


cdef void ncl_create_kernel(char **args, const npy_intp *dims, const npy_intp *steps,
                            void *data) noexcept nogil:
    """nclx's kernel of the Create call ops: the pieces on the team."""
    _run(args, dims, steps, data, ncl_threads_now())


cdef void ncl_create_numpy_way(char **args, const npy_intp *dims, const npy_intp *steps,
                               void *data) noexcept nogil:
    """NumPy's way: the same writes, on the calling thread."""
    _run(args, dims, steps, data, 1)


# ------------------------------------------------------------ one Create call

cdef bint _dense(cnp.ndarray arr) noexcept:
    """``arr``'s elements fill [data, data + nbytes) exactly once."""
    cdef int i
    cdef npy_intp span
    cdef npy_intp *dims = cnp.PyArray_DIMS(arr)
    cdef npy_intp *strides = cnp.PyArray_STRIDES(arr)
    if cnp.PyArray_IS_C_CONTIGUOUS(arr) or cnp.PyArray_IS_F_CONTIGUOUS(arr):
        return True
    span = cnp.PyArray_ITEMSIZE(arr)
    for i in range(cnp.PyArray_NDIM(arr)):
        if dims[i] > 1:
            if strides[i] <= 0:
                return False
            span += strides[i] * (dims[i] - 1)
    return span == cnp.PyArray_NBYTES(arr)


cdef int ncl_create_run(cnp.ndarray arr, int op, const unsigned char *value, bint touch,
                        bint write_zeros) except -1:
    """Run the Create call ``op`` on ``arr``'s data (contiguous in memory,
    of a fixed-width native dtype: ``ncl_create_slot(op, dtype) >= 0``)."""
    cdef create_data d
    cdef char *args[1]
    cdef npy_intp dims[2]
    cdef npy_intp steps[1]
    cdef cnp.dtype descr = <cnp.dtype>cnp.PyArray_DESCR(arr)
    cdef int k = ncl_create_slot(op, descr)
    cdef int rc
    if k < 0:
        return 0
    d.op = op
    d.touch = touch
    d.write_zeros = write_zeros
    if not _writes(&d) and ncl_create_nouser(_funnel) \
            and ncl_create_nouser(_kchains[op][descr.type_num]):
        return 0              # nothing to write, nobody watching (a checked()
                              # mode alone would change nothing here)
    dims[0] = cnp.PyArray_SIZE(arr)
    if dims[0] == 0:
        return 0
    if not _dense(arr):
        raise RuntimeError("nclx.create: internal error: a new array that is not one "
                           "block of memory")
    if op == 2:
        memcpy(d.value, value, descr.itemsize)
    dims[1] = dims[0]
    steps[0] = descr.itemsize
    args[0] = <char *>cnp.PyArray_DATA(arr)
    if dims[0] * steps[0] >= NOGIL_BYTES:
        with nogil:
            rc = ncl_callop_run(k, args, dims, steps, &d, ncl_create_kernel, ncl_create_numpy_way)
    else:
        rc = ncl_callop_run(k, args, dims, steps, &d, ncl_create_kernel, ncl_create_numpy_way)
    return rc         # -1: a hook's exception, set (review 22)


# ------------------------------------------------------------ the fill value

cdef object ncl_create_fill(cnp.ndarray res, object fill, bint touch):
    """Fill ``res`` with ``fill`` as ``np.copyto(res, fill, casting='unsafe')``."""
    cdef unsigned char value[8]
    if cnp.PyArray_SIZE(res) == 0 or ncl_create_slot(2, <cnp.dtype>cnp.PyArray_DESCR(res)) < 0 \
            or not ncl_fill_value(fill, <cnp.dtype>cnp.PyArray_DESCR(res), value):
        _copyto(res, fill, casting="unsafe")
    else:
        ncl_create_run(res, 2, value, touch, False)
    return res



def set_thresholds(piece_bytes=None, cold_bytes=None):
    """Set the bytes each thread of a Create call writes at least and the
    size from which a call wakes a sleeping team (None: unchanged); returns
    the previous pair.  For the benchmarks and tests."""
    global _piece_bytes, _cold_bytes
    old = (_piece_bytes, _cold_bytes)
    if piece_bytes is not None:
        if piece_bytes < PAGE:
            raise ValueError(f"piece_bytes must be at least {PAGE}, got {piece_bytes}")
        _piece_bytes = piece_bytes
    if cold_bytes is not None:
        if cold_bytes < 0:
            raise ValueError(f"cold_bytes must be at least 0, got {cold_bytes}")
        _cold_bytes = cold_bytes
    return old
