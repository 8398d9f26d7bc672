# cython: wraparound=False, boundscheck=False
"""NCLib's Create subsystem: the kernels that fill a new array and the calls
that run them (nclx.create is the public face).

An array is allocated by NumPy's own allocator (``PyArray_NewFromDescr``,
``PyArray_Zeros``: NumPy's NEP 49 handler, tracemalloc, calloc for zeros);
then, for the fixed-width dtypes, one call of the Create subsystem's call
op -- ``empty``, ``zeros`` or ``full`` on one operand, the array's data --
runs through ``ncl_callop_run``: the ledger counts it and hooks may observe
or replace it.  The kernels split the data in contiguous page-aligned
ranges, one per thread of nclx's team, so each page is first written by the
thread that owns its range (first touch places it on that thread's NUMA
node):

- ``full`` writes the value's bytes;
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
from cpython.ref cimport PyObject, PyTypeObject, Py_INCREF
from libc.string cimport memset, memcpy
from libc.stdint cimport uint16_t, uint32_t, uint64_t, uintptr_t

from nclx._ncl.ncl cimport npy_intp, ncl_chain, NCL_SUB_CREATE
from nclx._ncl.registry cimport ncl_funnel_chain, ncl_kernel_chain
from nclx._ncl.callops cimport ncl_callop_slot, ncl_callop_run
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS
import operator

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
    static int ncl_add_overflow(npy_intp a, npy_intp b, npy_intp *out) {
        return __builtin_add_overflow(a, b, out);
    }
    """
    bint ncl_add_overflow(npy_intp a, npy_intp b, npy_intp *out) noexcept
    bint ncl_create_nouser(const ncl_chain *c) noexcept nogil

cdef extern from "numpy/arrayobject.h":
    object _new "PyArray_NewFromDescr"(PyTypeObject *subtype, void *descr, int nd,
                                       npy_intp *dims, npy_intp *strides, void *data,
                                       int flags, PyObject *obj)
    object _zeros "PyArray_Zeros"(int nd, npy_intp *dims, void *descr, int fortran)
    int _set_base "PyArray_SetBaseObject"(cnp.ndarray arr, PyObject *base) except -1
    bint PyDataType_REFCHK(cnp.dtype)

cdef enum:
    NPY_MAXDIMS = 64
    PAGE = 4096
    HUGE = 2 << 20            # a transparent huge page (x86-64)
    NTYPES = 32               # NumPy's built-in type numbers are below this

#: the call ops of the Create subsystem (spec.CALL_OPS), in this order
OPS = ("empty", "zeros", "full")
#: a call writing fewer bytes stays on the calling thread; each further
#: thread takes at least this many bytes (measured, docs/create.md)
PIECE_BYTES = 1 << 20
#: calls of at least this many bytes release the GIL
NOGIL_BYTES = 1 << 16
#: the largest ``align`` (bytes): a 1 GiB huge page
MAX_ALIGN = 1 << 30

cdef cnp.dtype _U8 = np.dtype(np.uint8)

cdef npy_intp _piece_bytes = PIECE_BYTES
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


# ------------------------------------------------------------ the memory

cdef npy_intp ncl_create_align(object align, cnp.dtype descr) except -1:
    """``align`` checked: 0 (None) or a power of two in [dtype alignment, MAX_ALIGN]."""
    if align is None:
        return 0
    if type(align) is bool or not hasattr(type(align), "__index__"):
        raise TypeError(f"align must be an int (bytes) or None, not {type(align).__name__}")
    a = operator.index(align)
    if a < descr.alignment or a > MAX_ALIGN or a & (a - 1):
        raise ValueError(f"align must be a power of two from the dtype's alignment "
                         f"({descr.alignment} for {descr}) to {MAX_ALIGN}, got {a}")
    if PyDataType_REFCHK(descr):
        raise ValueError(f"align: dtype {descr} holds Python objects, which nclx does "
                         "not place in memory of its own")
    return a




cdef cnp.ndarray _buffer(npy_intp nbytes, npy_intp a, bint zeroed):
    """``nbytes`` bytes from NumPy's allocator (calloc when ``zeroed``) with
    room to start at a multiple of ``a``."""
    cdef npy_intp n
    if ncl_add_overflow(nbytes, a - 1, &n):
        raise MemoryError(f"cannot allocate {nbytes} bytes aligned to {a}")
    Py_INCREF(_U8)
    if zeroed:
        return _zeros(1, &n, <void *>_U8, 0)
    return _new(<PyTypeObject *>cnp.ndarray, <void *>_U8, 1, &n, NULL, NULL, 0, NULL)


cdef cnp.ndarray _on(cnp.ndarray buf, npy_intp a, npy_intp lo, type subtype, cnp.dtype descr,
                     int nd, npy_intp *dims, npy_intp *strides, int flags, object obj):
    """An array of ``descr`` in ``buf`` (its base), its data pointer a
    multiple of ``a``; its lowest byte is ``lo`` (<= 0) from the data
    pointer, and ``buf`` has room for ``a - 1`` bytes more than it spans."""
    cdef uintptr_t p = <uintptr_t>cnp.PyArray_DATA(buf) - <uintptr_t>lo
    cdef char *data = <char *>((p + <uintptr_t>(a - 1)) & ~<uintptr_t>(a - 1))
    Py_INCREF(descr)
    out = _new(<PyTypeObject *>subtype, <void *>descr, nd, dims, strides, data, flags,
               <PyObject *>obj if obj is not None else NULL)
    Py_INCREF(buf)
    _set_base(out, <PyObject *>buf)
    return out


cdef cnp.ndarray ncl_create_alloc(cnp.dtype descr, int nd, npy_intp *dims, npy_intp nbytes, int fortran,
                        bint zeroed, npy_intp a, type subtype, object obj):
    """A new C- or F-contiguous array (zeroed by calloc when ``zeroed``)."""
    cdef cnp.ndarray res
    if a == 0 or (a <= 16 and subtype is cnp.ndarray):
        # malloc's alignment (16) may already be enough; a subclass is made
        # once only (its __array_finalize__ runs once, as in NumPy)
        Py_INCREF(descr)
        if zeroed:
            res = _zeros(nd, dims, <void *>descr, fortran)
        else:
            res = _new(<PyTypeObject *>subtype, <void *>descr, nd, dims, NULL, NULL, fortran,
                       <PyObject *>obj if obj is not None else NULL)
        if a == 0 or (<uintptr_t>cnp.PyArray_DATA(res)) % <uintptr_t>a == 0:
            return res
    cdef npy_intp zero[NPY_MAXDIMS]
    cdef npy_intp full[NPY_MAXDIMS]
    cdef npy_intp *strides = NULL
    cdef int i
    for i in range(nd):
        if dims[i] == 0:        # NumPy's strides of an empty array are all 0
            memset(zero, 0, sizeof(zero))
            strides = zero
    if strides != NULL and cnp.PyDataType_HASSUBARRAY(descr):
        # given strides, NumPy would add the subarray's own: expand it here
        base, sub = descr.subdtype
        if nd + len(sub) > NPY_MAXDIMS:
            raise ValueError(f"too many dimensions with dtype {descr}")
        memcpy(full, dims, nd * sizeof(npy_intp))
        for i in range(len(sub)):
            full[nd + i] = sub[i]
        return _on(_buffer(nbytes, a, zeroed), a, 0, subtype, base, nd + len(sub), full, strides,
                   cnp.NPY_ARRAY_FARRAY if fortran else cnp.NPY_ARRAY_CARRAY, obj)
    return _on(_buffer(nbytes, a, zeroed), a, 0, subtype, descr, nd, dims, strides,
               cnp.NPY_ARRAY_FARRAY if fortran else cnp.NPY_ARRAY_CARRAY, obj)


cdef cnp.ndarray ncl_create_realign(cnp.ndarray res, npy_intp a, bint zeroed, bint copy,
                                    type subtype, object obj):
    """``res`` again, its data starting at a multiple of ``a`` (same dtype,
    shape and strides; type ``subtype``, whose __array_finalize__ sees
    ``obj``; None: ``res``'s type, as it is when already aligned);
    ``copy``: with ``res``'s values."""
    cdef int i, nd = cnp.PyArray_NDIM(res)
    cdef npy_intp lo = 0, hi, span
    cdef npy_intp *dims = cnp.PyArray_DIMS(res)
    cdef npy_intp *strides = cnp.PyArray_STRIDES(res)
    cdef cnp.dtype descr = <cnp.dtype>cnp.PyArray_DESCR(res)
    if subtype is None and (a == 0 or (<uintptr_t>cnp.PyArray_DATA(res)) % <uintptr_t>a == 0):
        return res
    if a == 0:
        a = 1
    hi = descr.itemsize
    if cnp.PyArray_SIZE(res) == 0:
        hi = 0
    else:
        for i in range(nd):
            if strides[i] < 0:
                lo += strides[i] * (dims[i] - 1)
            else:
                hi += strides[i] * (dims[i] - 1)
    span = hi - lo
    out = _on(_buffer(span, a, zeroed), a, lo, type(res) if subtype is None else subtype, descr,
              nd, dims, strides, cnp.NPY_ARRAY_WRITEABLE, obj)
    if copy:
        cnp.PyArray_CopyInto(out, res)
    return out


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
        q = ((<npy_intp>(<uintptr_t>(j.p + lo)) + PAGE) & ~(<npy_intp>PAGE - 1)) - <npy_intp>(<uintptr_t>j.p)
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
    if want <= 1:
        j.pieces = 1
        _piece(&j, 0, j.nbytes)
    else:
        j.pieces = want
        ncl_team_run(want, _team_body, &j)


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
    dims[0] = cnp.PyArray_SIZE(arr)
    if k < 0 or dims[0] == 0:
        return 0
    if not _dense(arr):
        raise RuntimeError("nclx.create: internal error: a new array that is not one "
                           "block of memory")
    d.op = op
    d.touch = touch
    d.write_zeros = write_zeros
    if op == 2:
        memcpy(d.value, value, descr.itemsize)
    if not _writes(&d) and ncl_create_nouser(_funnel) \
            and ncl_create_nouser(_kchains[op][descr.type_num]):
        return 0              # nothing to write, nobody watching (a checked()
                              # mode alone would change nothing here)
    dims[1] = dims[0]
    steps[0] = descr.itemsize
    args[0] = <char *>cnp.PyArray_DATA(arr)
    if dims[0] * steps[0] >= NOGIL_BYTES:
        with nogil:
            ncl_callop_run(k, args, dims, steps, &d, ncl_create_kernel, ncl_create_numpy_way)
    else:
        ncl_callop_run(k, args, dims, steps, &d, ncl_create_kernel, ncl_create_numpy_way)
    return 0


def set_piece_bytes(npy_intp nbytes):
    """Set the bytes each thread of a Create call takes at least (for the
    benchmarks and tests); returns the previous value."""
    global _piece_bytes
    if nbytes < PAGE:
        raise ValueError(f"piece bytes must be at least {PAGE}, got {nbytes}")
    old = _piece_bytes
    _piece_bytes = nbytes
    return old
