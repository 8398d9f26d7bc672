"""The hot path of storage creation: one call allocates the raw host buffer
(``calloc``-backed when zeroed, so large zeros cost what ``np.zeros``
costs), places the field so that its aligned element lands on a boundary,
and makes the strided view, without Python-level NumPy calls."""
cimport numpy as cnp
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    # steals a reference to descr
    object PyArray_NewFromDescr(PyTypeObject *subtype, cnp.dtype descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides, void *data,
                                int flags, object obj)

cdef enum:
    MAX_DIMS = 64


def host_field(Py_ssize_t alloc_bytes, Py_ssize_t inner_offset, Py_ssize_t alignment,
               tuple shape, cnp.dtype dtype, tuple strides, bint zero):
    """(field view, raw uint8 buffer, byte offset of the field in it).

    ``alignment`` is a power of two, so the offset computed with unsigned
    wrap-around is the true residue."""
    cdef int nd = len(shape)
    cdef cnp.npy_intp n = alloc_bytes if alloc_bytes > 0 else 1
    cdef cnp.npy_intp dims[MAX_DIMS]
    cdef cnp.npy_intp steps[MAX_DIMS]
    cdef int i
    if nd > MAX_DIMS or len(strides) != nd:
        raise ValueError(f"host_field: {nd} dimensions (at most {MAX_DIMS}), {len(strides)} strides")
    for i in range(nd):
        dims[i] = shape[i]
        steps[i] = strides[i]
    if zero:
        raw = cnp.PyArray_ZEROS(1, &n, cnp.NPY_UINT8, 0)
    else:
        raw = cnp.PyArray_EMPTY(1, &n, cnp.NPY_UINT8, 0)
    cdef char *base = <char *> cnp.PyArray_DATA(raw)
    cdef Py_ssize_t off = <Py_ssize_t> ((<size_t> inner_offset - <size_t> base) % <size_t> alignment)
    Py_INCREF(dtype)                  # PyArray_NewFromDescr steals the descriptor
    arr = PyArray_NewFromDescr(<PyTypeObject *> cnp.ndarray, dtype, nd, dims, steps, base + off,
                               cnp.NPY_ARRAY_WRITEABLE, None)
    cnp.set_array_base(arr, raw)
    cnp.PyArray_UpdateFlags(arr, cnp.NPY_ARRAY_UPDATE_ALL)
    return arr, raw, off


cdef bint _plain_value(object v):
    if v is None or type(v) is int or type(v) is str:
        return True
    if type(v) is tuple:
        for x in <tuple> v:
            if not _plain_value(x):
                return False
        return True
    return False


def cache_key(shape, dtype, dict kwargs):
    """A key for the creation cache, or None when an argument is not made of
    exact ints, strings, None and tuples (a float, a bool or a list that
    compares equal to a valid value must take the validating path)."""
    if not _plain_value(shape):
        return None
    for v in kwargs.values():
        if not _plain_value(v):
            return None
    return (shape, dtype, tuple(kwargs.items()))
