"""How nclx.create's functions (creators.pyx) read the arguments NumPy reads
quickly: a shape of ints, an order letter, a byte count that may overflow.
Inline functions: each answers -1 (or 0) for anything else, which then
goes to NumPy's own function."""
from cpython.long cimport PyLong_AsLongLongAndOverflow

from nclx._ncl.ncl cimport npy_intp

cdef enum:
    MAXDIMS = 64

cdef extern from *:
    """
    static int ncl_nbytes(int nd, const npy_intp *dims, npy_intp size, npy_intp *out) {
        npy_intp n = size;
        for (int i = 0; i < nd; i++)
            if (__builtin_mul_overflow(n, dims[i], &n)) return 0;
        *out = n;
        return 1;
    }
    """
    bint ncl_nbytes(int nd, const npy_intp *dims, npy_intp size, npy_intp *out) noexcept


cdef inline int ncl_dims(object shape, npy_intp *dims) except -2:
    """Dimensions of an int or a tuple/list of ints >= 0, or -1."""
    cdef int overflow = 0, i, nd
    cdef long long v
    if type(shape) is int:
        v = PyLong_AsLongLongAndOverflow(shape, &overflow)
        if overflow or v < 0:
            return -1
        dims[0] = <npy_intp>v
        return 1
    if type(shape) is not tuple and type(shape) is not list:
        return -1
    nd = len(shape)
    if nd > MAXDIMS:
        return -1
    for i in range(nd):
        item = shape[i]
        if type(item) is not int:
            return -1
        v = PyLong_AsLongLongAndOverflow(item, &overflow)
        if overflow or v < 0:
            return -1
        dims[i] = <npy_intp>v
    return nd


cdef inline int ncl_order(object order, bint like) noexcept:
    """0 'C', 1 'F', 2 'A', 3 'K' ('A'/'K' for the _like functions), or -1."""
    if order is None or type(order) is not str:
        return -1
    if order == "C":
        return 0
    if order == "F":
        return 1
    if like and order == "K":
        return 3
    if like and order == "A":
        return 2
    return -1


cdef inline bint ncl_fits_int64(object v) noexcept:
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(v, &overflow)
    return not overflow
