# cython: wraparound=True, boundscheck=True
"""nclx's ufuncs and NumPy's of the same name: which calls go to NumPy's.

A ufunc built from a loop list (nclx.ufuncs) lacks the special loops and
promoters NumPy registers on its own ufuncs; the calls only those serve are
handed to NumPy's ufunc by a vectorcall placed in front of the ufunc's own
(:func:`pair`), and logical_and/or/xor get NumPy's any-DType promoter."""
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF

import numpy as np

cnp.import_array()
cnp.import_ufunc()

cdef extern from "numpy/ufuncobject.h":
    ctypedef PyObject *(*vectorcallfunc)(PyObject *callable, PyObject *const *args,
                                         size_t nargsf, PyObject *kwnames)
    ctypedef struct PyUFuncObject:
        vectorcallfunc vectorcall
        PyObject *_loops
    int PyUFunc_AddPromoter(object ufunc, object DType_tuple, object promoter) except -1


# Calls NumPy serves through loops a new ufunc cannot have go to NumPy's ufunc
# of the same name; every other call runs nclx's loops:
# - NumPy 2 compares integer arrays with Python ints exactly, also when the
#   int does not fit the array's dtype (np.less(int8_array, 200) is all
#   True), through special loops of its comparison ufuncs;
# - string, bytes and void operands, and NumPy 2's new-style dtypes
#   (StringDType), whose loops and promoters are not in a ufunc's legacy loop
#   list (review 26: nclx.ufuncs.equal of two str arrays raised);
# - datetime and timedelta operands of logical_and/or/xor/not, which NumPy
#   resolves through promoters (to bool).  The ufunc's methods (reduce,
#   accumulate, outer, at) are not routed; logical_and/or/xor carry NumPy's
#   any-DType promoter itself (_copy_promoters) for their other operands.
cdef extern from *:
    """
    static int ncl_int_outside(PyObject *x, PyObject *other)
    {
        long long v;
        int overflow = 0, tn, bits;
        npy_intp size;
        PyArray_Descr *d = NULL;
        if (!PyLong_CheckExact(x)) return 0;
        v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
        if (overflow) return 1;
        if (PyArray_Check(other)) { d = PyArray_DESCR((PyArrayObject *)other); Py_INCREF(d); }
        else if (PyArray_IsScalar(other, Generic)) { d = PyArray_DescrFromScalar(other); }
        if (d == NULL) return 0;
        tn = d->type_num;
        size = PyDataType_ELSIZE(d);
        Py_DECREF(d);
        if (!PyTypeNum_ISINTEGER(tn)) return 0;
        bits = (int)(8 * size);
        if (PyTypeNum_ISUNSIGNED(tn)) {
            if (v < 0) return 1;
            return bits < 64 && ((unsigned long long)v >> bits) != 0;
        }
        if (bits >= 64) return 0;
        return v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1));
    }

    static int ncl_needs_numpy(PyObject *x, int datetimes)
    {
        int tn;
        if (PyUnicode_Check(x) || PyBytes_Check(x)) return 1;
        if (PyArray_Check(x)) tn = PyArray_DESCR((PyArrayObject *)x)->type_num;
        else if (PyArray_IsScalar(x, Generic)) {
            PyArray_Descr *d = PyArray_DescrFromScalar(x);
            if (d == NULL) { PyErr_Clear(); return 0; }
            tn = d->type_num;
            Py_DECREF(d);
        }
        else return 0;
        if (tn == NPY_STRING || tn == NPY_UNICODE || tn == NPY_VOID || tn >= NPY_NTYPES_LEGACY)
            return 1;
        return datetimes && (tn == NPY_DATETIME || tn == NPY_TIMEDELTA);
    }

    /* An operand whose routing the checks above decide: an exact ndarray,
       a NumPy scalar, a Python number, str, bytes or None.  Anything else
       (a list, a buffer, an __array__ object, a subclass, an override) goes
       the slow way (review 27). */
    static int ncl_plain(PyObject *x)
    {
        return Py_TYPE(x) == &PyArray_Type || PyArray_IsScalar(x, Generic)
            || PyLong_CheckExact(x) || PyFloat_CheckExact(x) || PyComplex_CheckExact(x)
            || PyBool_Check(x) || PyUnicode_CheckExact(x) || PyBytes_CheckExact(x)
            || x == Py_None;
    }
    """
    int ncl_int_outside(PyObject *x, PyObject *other)
    int ncl_needs_numpy(PyObject *x, int datetimes)
    int ncl_plain(PyObject *x)
    PyObject *PyObject_Vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

cdef vectorcallfunc _ufunc_vectorcall = NULL
cdef dict _numpy_twin = {}      # address of an nclx ufunc -> (NumPy's ufunc, compare, logical, nin)


_OVERRIDE_KEYS = ("out", "where")


cdef bint _overrides(x):
    """An operand with an ``__array_ufunc__`` of its own (or None)."""
    t = type(x)
    if t is np.ndarray:
        return False
    f = getattr(t, "__array_ufunc__", _NO_OVERRIDE)
    return f is not _NO_OVERRIDE and f is not _NDARRAY_UFUNC


_NO_OVERRIDE = object()
_NDARRAY_UFUNC = np.ndarray.__array_ufunc__


cdef bint _array_like(x):
    """What a ufunc converts with ``np.asarray`` (not a Python number, not
    an ndarray subclass: a masked array keeps its type and mask)."""
    if isinstance(x, (int, float, complex, str, bytes, np.ndarray, np.generic)) or x is None:
        return False
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__") \
            or hasattr(x, "__array_interface__") or hasattr(x, "__array_struct__"):
        return True
    try:
        memoryview(x).release()
    except TypeError:
        return False
    return True


cdef object _slow_plan(tuple entry, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames):
    """OVERRIDE: nclx's call as given (an override anywhere: NumPy's
    dispatch hands it nclx's ufunc; review 27: a routed call handed the
    override NumPy's); AS_GIVEN: route the arguments as they are; else the
    positional arguments with the array-like inputs converted as NumPy's
    ufunc converts them (review 27: lists, buffers and __array__ objects
    of strings or with out-of-range Python ints missed the routing)."""
    cdef Py_ssize_t i, nin = entry[3]
    cdef list pos = [<object>args[i] for i in range(nargs)]
    if kwnames != NULL:
        for i, key in enumerate(<tuple>kwnames):
            if key in _OVERRIDE_KEYS:
                v = <object>args[nargs + i]
                for x in (v if isinstance(v, tuple) else (v,)):
                    if _overrides(x):
                        return OVERRIDE
    for x in pos:
        if _overrides(x):
            return OVERRIDE
    changed = False
    for i in range(min(nargs, nin)):
        if not ncl_plain(args[i]) and _array_like(pos[i]):
            pos[i] = np.asarray(pos[i])
            changed = True
    return tuple(pos) if changed else AS_GIVEN


OVERRIDE, AS_GIVEN = object(), object()


cdef bint _route(tuple entry, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames) except -1:
    cdef bint compare = entry[1], logical = entry[2]
    cdef Py_ssize_t i
    if compare and nargs >= 2 and (ncl_int_outside(args[0], args[1])
                                   or ncl_int_outside(args[1], args[0])):
        return True
    for i in range(nargs):
        if ncl_needs_numpy(args[i], logical):
            return True
    if compare and kwnames != NULL:
        for key in <tuple>kwnames:
            if key == "casting" or key == "signature" or key == "dtype":
                # NumPy compares Python ints through loops of their own
                # also under casting=, signature= or dtype= (review 27:
                # casting='equiv' raised)
                for i in range(min(nargs, 2)):
                    x = <object>args[i]
                    if isinstance(x, int) and not isinstance(x, bool):
                        return True
                break
    return False


cdef PyObject *_twin_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) except NULL:
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), i, nkw
    cdef tuple entry = <tuple>_numpy_twin[<size_t>callable]
    cdef bint plain = True
    cdef object r
    nkw = 0 if kwnames == NULL else len(<tuple>kwnames)
    for i in range(nargs):
        if not ncl_plain(args[i]):
            plain = False
            break
    for i in range(nkw if plain else 0):
        key = (<tuple>kwnames)[i]
        if (key == "out" or key == "where") and not ncl_plain(args[nargs + i]):
            plain = False
            break
    if not plain:
        converted = _slow_plan(entry, args, nargs, kwnames)
        if converted is OVERRIDE:
            return _ufunc_vectorcall(callable, args, nargsf, kwnames)
        if converted is AS_GIVEN:
            if _route(entry, args, nargs, kwnames):
                return PyObject_Vectorcall(<PyObject *>entry[0], args, nargsf, kwnames)
            return _ufunc_vectorcall(callable, args, nargsf, kwnames)
        kw = {} if kwnames == NULL else {k: <object>args[nargs + i]
                                          for i, k in enumerate(<tuple>kwnames)}
        r = (<object>callable)(*converted, **kw)
        Py_INCREF(r)
        return <PyObject *>r
    if _route(entry, args, nargs, kwnames):
        return PyObject_Vectorcall(<PyObject *>entry[0], args, nargsf, kwnames)
    return _ufunc_vectorcall(callable, args, nargsf, kwnames)


cdef _copy_promoters(ufunc, npuf):
    """NumPy's promoters of ``npuf`` that apply to any DTypes, added to
    ``ufunc``: logical_and/or/xor cast every operand to bool (or object)
    through one, so that NumPy's ``logical_and.reduce`` of integers, an
    int64 with a uint64, and a float32 with a Python float beyond float32's
    range (no cast warning) resolve as NumPy's do (before, their twins
    raised or warned)."""
    cdef object loops = <object>(<PyUFuncObject *>npuf)._loops
    # A list of (DTypes, implementation) pairs up to NumPy 2.4; from 2.5 an
    # ordered dict mapping the DTypes to that pair.
    for dtypes, impl in list(loops.values() if isinstance(loops, dict) else loops):
        if (type(impl).__name__ == "PyCapsule"
                and all(d is np.dtype for d in dtypes)):
            PyUFunc_AddPromoter(ufunc, dtypes, impl)


def pair(ufunc, npuf, bint compare, bint logical):
    """Make ``ufunc`` (nclx's twin of NumPy's ``npuf``) hand NumPy the calls
    only NumPy's loops and promoters serve; logical_and/or/xor also get
    NumPy's any-DType promoter."""
    _route_to_numpy(ufunc, npuf, compare, logical)
    if logical:
        _copy_promoters(ufunc, npuf)


cdef _route_to_numpy(ufunc, npuf, bint compare, bint logical):
    global _ufunc_vectorcall
    if _ufunc_vectorcall == NULL:
        _ufunc_vectorcall = (<PyUFuncObject *>ufunc).vectorcall
    _numpy_twin[<size_t><PyObject *>ufunc] = (npuf, compare, logical, ufunc.nin)
    (<PyUFuncObject *>ufunc).vectorcall = <vectorcallfunc>_twin_vectorcall
