# cython: wraparound=True, boundscheck=True
"""The Python funnel for plain ndarrays: optional routing of the served
ufuncs' call entry (``ufunc->vectorcall``) through the "python" level chains.

Reached by ``np.add(a, b)`` and operators on ndarrays after
``install(python_funnel=True)``; reductions and other ufunc methods are bound
elsewhere by NumPy (nclx-aware types reach the python level for every method
through ``nclx.aware``).  With no python-level hook the swapped entry calls
NumPy's own after one chain check."""
from cpython.ref cimport PyObject, Py_INCREF
from cpython.exc cimport PyErr_SetObject, PyErr_SetString

import numpy as np

from nclx._ncl.ncl cimport ncl_chain, NCL_NOPS
from nclx._ncl.registry cimport ncl_python_chain
from nclx._ncl.walk cimport ncl_chain_is_default
from nclx._ncl import spec

cdef extern from "numpy/ufuncobject.h":
    ctypedef PyObject *(*vectorcallfunc)(PyObject *callable, PyObject *const *args,
                                         size_t nargsf, PyObject *kwnames)
    ctypedef struct PyUFuncObject:
        vectorcallfunc vectorcall

cdef extern from *:
    """
    static __thread int ncl_vc_bypass = 0;
    static inline int ncl_vc_bypass_get(void) { return ncl_vc_bypass; }
    static inline void ncl_vc_bypass_set(int v) { ncl_vc_bypass = v; }
    """
    int ncl_vc_bypass_get() nogil
    void ncl_vc_bypass_set(int v) nogil

cdef PyObject *_vc_ufunc[NCL_NOPS]
cdef vectorcallfunc _vc_orig[NCL_NOPS]
cdef int _vc_sub[NCL_NOPS]
cdef int _vc_installed = 0
cdef int _vc_n = 0                 # served ufuncs in the arrays (ops NumPy has)
cdef object _vc_runner = None      # nclx._ncl.install._run_python_funnel


cdef PyObject *_ncl_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) noexcept:
    cdef int i
    for i in range(_vc_n):
        if _vc_ufunc[i] == callable:
            break
    else:
        PyErr_SetString(SystemError, "nclx: a ufunc nclx does not serve reached its call entry")
        return NULL
    if (ncl_vc_bypass_get() or _vc_runner is None
            or ncl_chain_is_default(ncl_python_chain(_vc_sub[i]))):
        return _vc_orig[i](callable, args, nargsf, kwnames)
    return _vectorcall_slow(i, callable, args, nargsf, kwnames)


cdef PyObject *_vectorcall_slow(int i, PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) noexcept:
    cdef Py_ssize_t nargs = <Py_ssize_t>(nargsf & ~(<size_t>1 << (8 * sizeof(size_t) - 1)))
    cdef Py_ssize_t j
    err = None
    result = None
    try:
        pos = tuple([<object>args[j] for j in range(nargs)])
        kwargs = {}
        if kwnames != NULL:
            names = <tuple>kwnames
            for j in range(len(names)):
                kwargs[names[j]] = <object>args[nargs + j]
        result = _vc_runner(_vc_sub[i], <object>callable, pos, kwargs)
        if result is NotImplemented:
            # as NumPy's call of an __array_ufunc__ that returns it (the
            # aware route's error); before, np.add returned the singleton
            # and a + 1 fell back to a misleading TypeError (review 22)
            raise TypeError(f"operand type(s) all returned NotImplemented from nclx's "
                            f"python-level hooks of {getattr(<object>callable, '__name__', '?')!r}:"
                            f" a hook returned NotImplemented (return the call's result, or "
                            f"call.next()'s)")
    except BaseException as exc:
        err = exc
    if err is not None:
        PyErr_SetObject(type(err), err)
        return NULL
    Py_INCREF(result)
    return <PyObject *>result


def call_original(ufunc, tuple args, dict kwargs):
    """Call ``ufunc`` through NumPy's own call entry (the Python funnel's end)."""
    cdef int prev = ncl_vc_bypass_get()
    ncl_vc_bypass_set(1)
    try:
        return ufunc(*args, **kwargs)
    finally:
        ncl_vc_bypass_set(prev)


def swap_in(runner):
    """Route calls of the nclx-served NumPy ufuncs through ``runner(subsystem,
    ufunc, args, kwargs)``."""
    global _vc_installed, _vc_runner, _vc_n
    cdef int i
    cdef PyUFuncObject *uf
    _vc_runner = runner
    if _vc_installed:
        return 0
    # every Python step first: a signal handler (or __del__) running one of
    # them could install meanwhile; from the check below on, C alone runs
    # (before, a nested install() in between made the outer one keep
    # _ncl_vectorcall as NumPy's entry: np.add looped for ever, even after
    # uninstall(); found by review 22)
    served = [spec.numpy_ufunc(op) for op in spec.OPS if op not in spec.NCLX_ONLY]
    subs = [spec.SUBSYSTEMS.index(spec.SUBSYSTEM_OF_KIND[spec.OPS[op][0]])
            for op in spec.OPS if op not in spec.NCLX_ONLY]
    cdef Py_ssize_t n = len(served)
    if _vc_installed:
        return 0
    for i in range(n):
        uf = <PyUFuncObject *>served[i]
        _vc_ufunc[i] = <PyObject *>served[i]
        if uf.vectorcall != <vectorcallfunc>_ncl_vectorcall:
            _vc_orig[i] = uf.vectorcall
        _vc_sub[i] = subs[i]
    _vc_n = n
    for i in range(_vc_n):
        (<PyUFuncObject *>_vc_ufunc[i]).vectorcall = <vectorcallfunc>_ncl_vectorcall
    _vc_installed = 1
    return _vc_n


def swap_out():
    """Put NumPy's own call entries back; returns how many were restored."""
    global _vc_installed
    cdef int i
    if not _vc_installed:
        return 0
    for i in range(_vc_n):
        (<PyUFuncObject *>_vc_ufunc[i]).vectorcall = _vc_orig[i]
    _vc_installed = 0
    return _vc_n


def vectorcall_address(ufunc):
    return <size_t>(<PyUFuncObject *>ufunc).vectorcall
