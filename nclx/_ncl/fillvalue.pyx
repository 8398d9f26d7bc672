# cython: wraparound=False, boundscheck=False
"""A fill value as one element's bytes, for the Create subsystem's ``full``
(nclx._ncl.creating) -- converted as ``np.copyto(..., casting='unsafe')``
converts it.

Python ints, bools and floats that convert exactly, or with a rounding
that raises no floating-point flag, are converted here; any other scalar
goes through NumPy (``np.copyto`` into a one-element array of the dtype),
so its conversion, warnings and errors are NumPy's.  A value that is not a
scalar is left to ``np.copyto``, which broadcasts it.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, PyTypeObject, Py_INCREF
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.string cimport memcpy
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t
from libc.math cimport fabs

from nclx._ncl.ncl cimport npy_intp
import numpy as np

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object _new "PyArray_NewFromDescr"(PyTypeObject *subtype, void *descr, int nd,
                                       npy_intp *dims, npy_intp *strides, void *data,
                                       int flags, PyObject *obj)

_copyto = np.copyto


cdef bint _scalar(object v):
    if isinstance(v, cnp.ndarray):
        return cnp.PyArray_NDIM(v) == 0
    if isinstance(v, (int, float, complex, str, bytes, np.generic)):
        return True
    try:
        return np.ndim(v) == 0
    except Exception:
        return False            # np.copyto raises NumPy's own error


cdef bint _int_in(long long v, char kind, npy_intp size) noexcept:
    if kind == b"b":
        return True
    if kind == b"u":
        return v >= 0 and (size == 8 or v < (1LL << (8 * size)))
    return size == 8 or (-(1LL << (8 * size - 1)) <= v < (1LL << (8 * size - 1)))


cdef bint ncl_fill_value(object fill, cnp.dtype descr, unsigned char *out) except -1:
    """``fill`` as one element of ``descr`` (a fixed-width native dtype),
    converted as ``np.copyto(..., casting='unsafe')`` converts it; False
    when ``fill`` is not a scalar (np.copyto broadcasts it)."""
    cdef char kind = descr.kind
    cdef npy_intp size = descr.itemsize
    cdef int overflow = 0
    cdef long long v
    cdef double x
    cdef float f
    cdef cnp.ndarray one
    cdef npy_intp n1 = 1
    if type(fill) is bool:
        v = fill is True
        fill = int(v)
    if type(fill) is int:
        v = PyLong_AsLongLongAndOverflow(fill, &overflow)
        if not overflow:
            if kind == b"b":
                out[0] = v != 0
                return True
            if kind == b"i" or kind == b"u":
                if _int_in(v, kind, size):
                    if size == 1:
                        (<int8_t *>out)[0] = <int8_t>v
                    elif size == 2:
                        (<int16_t *>out)[0] = <int16_t>v
                    elif size == 4:
                        (<int32_t *>out)[0] = <int32_t>v
                    else:
                        (<int64_t *>out)[0] = <int64_t>v
                    return True
            elif kind == b"f" and -(1LL << 24) <= v <= (1LL << 24):
                if size == 8:
                    x = <double>v
                    memcpy(out, &x, 8)
                else:
                    f = <float>v
                    memcpy(out, &f, 4)
                return True
    elif type(fill) is float and kind == b"f":
        x = fill
        if size == 8:
            memcpy(out, &x, 8)
            return True
        if x == 0 or 1.1754943508222875e-38 <= fabs(x) <= 3.4028234663852886e38:
            # FLT_MIN..FLT_MAX: a rounding, no overflow or underflow flag that
            # np.errstate could turn into an error
            f = <float>x
            memcpy(out, &f, 4)
            return True
    if not _scalar(fill):
        return False
    Py_INCREF(descr)
    one = _new(<PyTypeObject *>cnp.ndarray, <void *>descr, 1, &n1, NULL, NULL, 0, NULL)
    _copyto(one, fill, casting="unsafe")
    memcpy(out, cnp.PyArray_DATA(one), size)
    return True
