# cython: wraparound=False, boundscheck=False
"""nclx.convert's fast path: a contiguous, aligned, native ndarray is cast by
calling the ``cast`` entry of its (from, to) signature directly -- the same
entry nclx.ufuncs.cast runs, so the Convert chain, the ledger and the
threads see the call -- without the ufunc machinery's per-call cost.
Floating-point flags are reported as NumPy reports a cast's
("invalid value encountered in cast"), through the errstate in force."""
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_DECREF

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn
from nclx._ncl.entries cimport ncl_entries_quiet
import numpy as np

from nclx._ncl.entryloops import entry_loops
from nclx._ncl.dtypes import fixed_width
from nclx._ncl.ufuncs import make_ufunc

cnp.import_array()
cnp.import_ufunc()

cdef extern from *:
    """
    #include "ncl_fpe.h"
    #if defined(__x86_64__) && defined(__SSE2__)
    #include <xmmintrin.h>
    /* float arithmetic on x86-64 is SSE: MXCSR holds every flag a cast
     * kernel raises; reading it is cheaper than fetestexcept (x87 too) */
    static int ncl_cast_fpe(void) {
        unsigned int c = _mm_getcsr(), r = 0;
        if (c & _MM_EXCEPT_DIV_ZERO) r |= 1;
        if (c & _MM_EXCEPT_OVERFLOW) r |= 2;
        if (c & _MM_EXCEPT_UNDERFLOW) r |= 4;
        if (c & _MM_EXCEPT_INVALID) r |= 8;
        return (int)r;
    }
    static void ncl_cast_clear(void) {
        unsigned int c = _mm_getcsr();
        if (c & _MM_EXCEPT_MASK) _mm_setcsr(c & ~_MM_EXCEPT_MASK);
    }
    /* with hooks in the chains: every flag, wherever a hook raised it */
    #define ncl_cast_fpe_all ncl_fpe_flags
    #define ncl_cast_clear_all ncl_fpe_clear
    #else
    #define ncl_cast_fpe ncl_fpe_flags
    #define ncl_cast_clear ncl_fpe_clear
    #define ncl_cast_fpe_all ncl_fpe_flags
    #define ncl_cast_clear_all ncl_fpe_clear
    #endif
    """
    int ncl_cast_fpe() nogil
    void ncl_cast_clear() nogil
    int ncl_cast_fpe_all() nogil
    void ncl_cast_clear_all() nogil

cdef extern from "numpy/arrayobject.h":
    object PyArray_NewLikeArray(cnp.ndarray prototype, cnp.NPY_ORDER order,
                                cnp.dtype descr, int subok)

cdef extern from "ncl_pending.h":
    int ncl_raise_pending() except -1


cdef extern from "numpy/ufuncobject.h":
    int PyUFunc_GiveFloatingpointErrors(const char *name, int fpe_errors) except -1

cdef enum:
    NTYPES = 32          # NumPy's built-in type numbers are below this

cdef ncl_loop_fn _entry[NTYPES][NTYPES]


def _fill():
    cdef int i, j
    for i in range(NTYPES):
        for j in range(NTYPES):
            _entry[i][j] = NULL
    for chars, addr, _data in entry_loops("cast"):
        i = np.dtype(chars[0]).num
        j = np.dtype(chars[1]).num
        if i < NTYPES and j < NTYPES:
            _entry[i][j] = <ncl_loop_fn><size_t>addr


_fill()


cdef extern from "numpy/arrayobject.h":
    int PyArray_DescrConverter2(object obj, PyObject **out) except 0


#: nclx.ufuncs.cast: the ufunc over the cast entries (the general path)
CAST = make_ufunc("cast", entry_loops("cast"))

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _served(dt, role):
    # fixed_width reads the type number alone: a new-style DType (number -1,
    # no newbyteorder) is refused here too
    if fixed_width(dt) is None:
        raise TypeError(f"nclx.convert: the {role} dtype {dt} is not one of nclx's fixed-width "
                        f"dtypes (bool, int8..int64, uint8..uint64, float32, float64)")
    return dt.newbyteorder("=")


def convert(a, dtype, casting="unsafe"):
    """``a`` converted to ``dtype`` as ``numpy.asarray(a).astype(dtype,
    casting=casting)`` does, through nclx's Convert chain (see nclx.convert)."""
    # (an array as casting= gets NumPy's own error below, not "truth value
    # of an array is ambiguous" from these comparisons)
    if isinstance(casting, str) and casting == "unsafe":
        out = _fast(a, dtype)
        if out is not None:
            return out
    to = np.dtype(dtype)
    if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
        # a subclass (masked arrays...) keeps its own astype: its type, its mask
        return a.astype(to, casting=casting)
    arr = np.asarray(a)
    if not isinstance(casting, str) or casting not in _CASTINGS:
        # NumPy's own answer: its error for a bad rule, or a rule this nclx
        # does not implement ('same_value', NumPy 2.4)
        return arr.astype(to, casting=casting)
    src = _served(arr.dtype, "input")
    dst = _served(to, "target")
    if not np.can_cast(arr.dtype, to, casting=casting):
        # NumPy's own TypeError, word for word ("Cannot cast scalar ..." for
        # 0-d input, the rule unquoted from an np.str_; before, nclx wrote
        # "array data" and repr(casting); found by review 20)
        return arr.astype(to, casting=casting)
    out = np.empty_like(arr, dtype=to)
    if arr.size:
        CAST(arr, out=out, signature=(src, dst), casting="unsafe")
    return out


cdef inline void _run(ncl_loop_fn fn, char **args, npy_intp *dims, npy_intp *steps,
                      bint quiet, int *flags) noexcept nogil:
    if quiet:
        ncl_cast_clear()
        fn(args, dims, steps, NULL)
        flags[0] = ncl_cast_fpe()
    else:
        ncl_cast_clear_all()
        fn(args, dims, steps, NULL)
        flags[0] = ncl_cast_fpe_all()


cdef object _fast(object a, object dtype):
    """``a.astype(dtype)`` through the cast entry, or None when ``a`` is not a
    one-segment, aligned, native, exact ndarray of an nclx dtype."""
    cdef cnp.ndarray arr, out
    cdef cnp.dtype src
    cdef ncl_loop_fn fn
    cdef char *args[2]
    cdef npy_intp dims[1]
    cdef npy_intp steps[2]
    cdef int flags, tin, tout
    cdef bint quiet
    cdef cnp.dtype to
    cdef PyObject *conv = NULL
    if type(a) is not cnp.ndarray:
        return None
    if type(dtype) is cnp.dtype or isinstance(dtype, cnp.dtype):
        to = <cnp.dtype>dtype
    else:
        PyArray_DescrConverter2(dtype, &conv)
        if conv == NULL:
            return None         # dtype=None and the like: the slow path says what is wrong
        to = <cnp.dtype>conv
        Py_DECREF(to)           # the converter's new reference; `to` holds its own
    arr = <cnp.ndarray>a
    src = <cnp.dtype>cnp.PyArray_DESCR(arr)
    tin = src.type_num
    tout = to.type_num
    # a new-style DType (NumPy's DType API: quaddtype...) has type number -1
    if not (0 <= tin < NTYPES and 0 <= tout < NTYPES) or _entry[tin][tout] == NULL:
        return None
    if not (src.isnative and to.isnative):
        return None
    if not (cnp.PyArray_ISALIGNED(arr) and (cnp.PyArray_IS_C_CONTIGUOUS(arr)
                                            or cnp.PyArray_IS_F_CONTIGUOUS(arr))):
        return None
    fn = _entry[tin][tout]
    # NewLikeArray steals a reference to the descr
    cnp.Py_INCREF(to)
    out = PyArray_NewLikeArray(arr, cnp.NPY_KEEPORDER, to, 0)
    dims[0] = cnp.PyArray_SIZE(arr)
    if dims[0] == 0:
        return out
    args[0] = <char *>cnp.PyArray_DATA(arr)
    args[1] = <char *>cnp.PyArray_DATA(out)
    steps[0] = src.itemsize
    steps[1] = to.itemsize
    quiet = ncl_entries_quiet()     # no hook in any chain: only SSE code runs
    if dims[0] > 500:
        with nogil:
            _run(fn, args, dims, steps, quiet, &flags)
    else:
        _run(fn, args, dims, steps, quiet, &flags)
    ncl_raise_pending()
    if flags:
        PyUFunc_GiveFloatingpointErrors(b"cast", flags)
    return out
