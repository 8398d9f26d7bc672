# cython: wraparound=False, boundscheck=False
"""Memory for nclx.create: NumPy's allocator (``PyArray_NewFromDescr``,
``PyArray_Zeros``: its NEP 49 handler, tracemalloc, calloc for zeros), and
arrays whose data pointer is a multiple of a requested alignment.

An alignment NumPy's allocation does not already give is made by
allocating ``a - 1`` bytes more as a uint8 array and placing the new array
on its first multiple of ``a``: that buffer is the array's ``base`` (it
owns the memory; the array does not).
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, PyTypeObject, Py_INCREF
from libc.string cimport memset, memcpy
from libc.stdint cimport uintptr_t

from nclx._ncl.ncl cimport npy_intp
import operator

import numpy as np

cnp.import_array()

cdef extern from *:
    """
    static int ncl_add_overflow(npy_intp a, npy_intp b, npy_intp *out) {
        return __builtin_add_overflow(a, b, out);
    }
    """
    bint ncl_add_overflow(npy_intp a, npy_intp b, npy_intp *out) noexcept

cdef extern from "numpy/arrayobject.h":
    object _new "PyArray_NewFromDescr"(PyTypeObject *subtype, void *descr, int nd,
                                       npy_intp *dims, npy_intp *strides, void *data,
                                       int flags, PyObject *obj)
    object _zeros "PyArray_Zeros"(int nd, npy_intp *dims, void *descr, int fortran)
    int _set_base "PyArray_SetBaseObject"(cnp.ndarray arr, PyObject *base) except -1
    bint PyDataType_REFCHK(cnp.dtype)

cdef enum:
    NPY_MAXDIMS = 64

#: the largest ``align`` (bytes): a 1 GiB huge page
MAX_ALIGN = 1 << 30

cdef cnp.dtype _U8 = np.dtype(np.uint8)


cdef npy_intp ncl_alloc_align(object align, cnp.dtype descr) except -1:
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


try:                              # NumPy's MemoryError of an array ("Unable to allocate ...")
    from numpy._core._exceptions import _ArrayMemoryError
except ImportError:               # pragma: no cover - a NumPy without it
    _ArrayMemoryError = None


cdef cnp.ndarray _buffer_of(npy_intp nbytes, npy_intp a, bint zeroed, cnp.dtype descr, int nd,
                            npy_intp *dims):
    """:func:`_buffer` for an array of ``descr`` and ``dims``: out of memory,
    NumPy's own error naming the shape and dtype."""
    try:
        return _buffer(nbytes, a, zeroed)
    except MemoryError:
        if _ArrayMemoryError is None:
            raise
        shape = tuple(dims[i] for i in range(nd))
    raise _ArrayMemoryError(shape, descr)


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


cdef cnp.ndarray ncl_alloc(cnp.dtype descr, int nd, npy_intp *dims, npy_intp nbytes, int fortran,
                        bint zeroed, npy_intp a, type subtype, object obj):
    """A new C- or F-contiguous array of type ``subtype`` (its
    __array_finalize__ sees ``obj``), its data a multiple of ``a`` (0: as
    NumPy's allocator gives it); ``zeroed`` (an ndarray only): by calloc."""
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
            raise ValueError(f"number of dimensions must be within [0, {NPY_MAXDIMS}]")
        memcpy(full, dims, nd * sizeof(npy_intp))
        for i in range(len(sub)):
            full[nd + i] = sub[i]
        return _on(_buffer_of(nbytes, a, zeroed, descr, nd, dims), a, 0, subtype, base,
                   nd + len(sub), full, strides,
                   cnp.NPY_ARRAY_FARRAY if fortran else cnp.NPY_ARRAY_CARRAY, obj)
    return _on(_buffer_of(nbytes, a, zeroed, descr, nd, dims), a, 0, subtype, descr, nd, dims,
               strides,
               cnp.NPY_ARRAY_FARRAY if fortran else cnp.NPY_ARRAY_CARRAY, obj)


cdef cnp.ndarray ncl_alloc_realign(cnp.ndarray res, npy_intp a, bint zeroed, bint copy,
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
