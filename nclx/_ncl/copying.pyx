# cython: wraparound=False, boundscheck=False
"""NCLib's Convert subsystem: NumPy's copies of a dtype to itself, on the team.

Every NumPy copy of an array to one of the same dtype -- ``ndarray.copy``,
``np.array(a)``, ``a[...] = b``, ``np.concatenate``, the copy ``np.sort``
makes before it sorts -- runs the loop its DType's within-dtype cast
(NumPy's ArrayMethod ``numeric_copy_or_byteswap``) hands out.  No public
call replaces that method, so under ``install()`` this module puts nclx's
loop getter (nclx._ncl.copyloop) in the method's ``get_strided_loop``
field, after checking the layout (``layout()``), and puts NumPy's back on
``uninstall()``.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject

from nclx._ncl.registry cimport ncl_kernel_chain
from nclx._ncl.callops cimport ncl_callop_slot
from nclx._ncl.copyloop cimport get_loop_fn, ncl_copy_setup, ncl_copy_get_loop
import numpy as np

from nclx._ncl import spec
from nclx._ncl.copyrun import (COLD_BYTES, PIECE_BYTES, PROBE_BYTES, PROBES, REPROBE, STREAM_BYTES,
                               WARM_NS, adapt, probes, reprobe, reset_probes, rounds, split_calls,
                               stream_calls, tune)
from nclx.errors import NclxInstallError

cnp.import_array()

cdef extern from *:
    """
    #include <string.h>
    #include <numpy/dtype_api.h>
    #include "ncl_arraymethod.h"
    /* the head of NumPy's bound method (the object
     * numpy._core._multiarray_umath._get_castingimpl returns) */
    typedef struct {
        PyObject_HEAD
        void *dtypes;
        PyObject *method;
    } ncl_bound_head;
    static void *ncl_bound_method(PyObject *b) { return (void *)((ncl_bound_head *)b)->method; }
    /* NPY_DType_Slots ends: ..., within_dtype_castingimpl, castingimpls, f */
    static void *ncl_slots_within(PyArray_ArrFuncs *f) { return ((void **)f)[-2]; }
    static PyObject *ncl_slots_castingimpls(PyArray_ArrFuncs *f) { return ((PyObject **)f)[-1]; }
    static int ncl_cmeth_ok(void *m) {
        ncl_meth_head *h = (ncl_meth_head *)m;
        return strcmp(Py_TYPE((PyObject *)m)->tp_name, "numpy._ArrayMethod") == 0
            && h->name != NULL && strcmp(h->name, "numeric_copy_or_byteswap") == 0
            && h->nin == 1 && h->nout == 1 && h->get_strided_loop != NULL
            && h->resolve_descriptors != NULL;
    }
    static void *ncl_cmeth_get(void *m) {
        return (void *)__atomic_load_n(&((ncl_meth_head *)m)->get_strided_loop, __ATOMIC_ACQUIRE);
    }
    static void ncl_cmeth_set(void *m, void *f) {
        __atomic_store_n(&((ncl_meth_head *)m)->get_strided_loop, (PyArrayMethod_GetLoop *)f,
                         __ATOMIC_RELEASE);
    }
    """
    ctypedef struct PyArray_ArrFuncs
    void *ncl_bound_method(PyObject *b) noexcept
    void *ncl_slots_within(PyArray_ArrFuncs *f) noexcept
    PyObject *ncl_slots_castingimpls(PyArray_ArrFuncs *f) noexcept
    int ncl_cmeth_ok(void *m) noexcept
    void *ncl_cmeth_get(void *m) noexcept nogil
    void ncl_cmeth_set(void *m, void *f) noexcept nogil

cdef extern from "numpy/arrayobject.h":
    PyArray_ArrFuncs *PyDataType_GetArrFuncs(cnp.dtype descr)

cdef enum:
    NTYPES = 32               # NumPy's built-in type numbers are below this

cdef void *_meth[NTYPES]                   # NumPy's copy method of each DType served
cdef void *_numpy_get[NTYPES]              # its own loop getter
cdef int _swapped = 0
_why = None                                # '' once layout() held, else why not

__all__ = ["layout", "swap_in", "swap_out", "is_swapped", "getters", "split_calls", "stream_calls", "tune",
           "adapt", "probes", "reset_probes", "PIECE_BYTES", "COLD_BYTES", "WARM_NS", "PROBE_BYTES", "STREAM_BYTES",
           "PROBES", "REPROBE", "reprobe", "rounds"]


def layout():
    """'' when NumPy's within-dtype copy methods of the fixed-width dtypes
    are where and what nclx expects (found twice: through
    ``_get_castingimpl`` and in the DType's slots, and named
    ``numeric_copy_or_byteswap``), else why not.  Reads only."""
    global _why
    cdef cnp.dtype d
    cdef PyArray_ArrFuncs *f
    cdef void *m
    cdef int t
    if _why is not None:
        return _why
    try:
        get_impl = np._core._multiarray_umath._get_castingimpl
    except AttributeError:
        _why = "this NumPy has no _get_castingimpl"
        return _why
    found = {}
    for name in spec.ALL:
        d = np.dtype(name)
        t = d.type_num
        if t < 0 or t >= NTYPES:
            _why = f"type number {t} of {name}"
            return _why
        bound = get_impl(type(d), type(d))
        if type(bound).__name__ != "_BoundArrayMethod" or type(bound).__basicsize__ < 32:
            _why = f"_get_castingimpl gave {type(bound).__name__} for {name}"
            return _why
        f = PyDataType_GetArrFuncs(d)
        m = ncl_bound_method(<PyObject *>bound)
        if m == NULL or m != ncl_slots_within(f):
            _why = f"{name}: the bound method and the DType's slots name different methods"
            return _why
        if not isinstance(<object>ncl_slots_castingimpls(f), dict) or not ncl_cmeth_ok(m):
            _why = f"{name}: the copy method's layout is not NumPy 2.0-2.5's"
            return _why
        found[t] = name
    for name in spec.ALL:
        d = np.dtype(name)
        t = d.type_num
        f = PyDataType_GetArrFuncs(d)
        _meth[t] = ncl_slots_within(f)
        _numpy_get[t] = ncl_cmeth_get(_meth[t])
        ncl_copy_setup(t, _meth[t], <get_loop_fn>_numpy_get[t], ncl_callop_slot("copy", name),
                       ncl_kernel_chain(spec.call_kernel_name("copy", name)))
    _why = ""
    return _why


def swap_in(require=False):
    """Put nclx's loop getter in NumPy's copy methods.  Returns how many
    were swapped now; with ``require`` raises NclxInstallError where the
    layout is not the one nclx knows (else leaves NumPy's copies alone)."""
    global _swapped
    cdef int t, n = 0
    why = layout()
    if why:
        if require:
            raise NclxInstallError(f"nclx cannot thread NumPy's copies here: {why}")
        return 0
    for t in range(NTYPES):
        if _meth[t] != NULL and ncl_cmeth_get(_meth[t]) != <void *>ncl_copy_get_loop:
            ncl_cmeth_set(_meth[t], <void *>ncl_copy_get_loop)
            n += 1
    _swapped = 1
    return n


def swap_out():
    """Put NumPy's loop getters back.  Returns (restored, foreign): foreign
    counts methods someone else had replaced after swap_in (NumPy's are
    put back all the same)."""
    global _swapped
    cdef int t, restored = 0, foreign = 0
    if not _swapped:
        return 0, 0
    for t in range(NTYPES):
        if _meth[t] != NULL:
            cur = ncl_cmeth_get(_meth[t])
            if cur != _numpy_get[t]:
                if cur != <void *>ncl_copy_get_loop:
                    foreign += 1
                ncl_cmeth_set(_meth[t], _numpy_get[t])
                restored += 1
    _swapped = 0
    return restored, foreign


def is_swapped():
    """True while nclx's getter is in NumPy's copy methods."""
    cdef int t
    for t in range(NTYPES):
        if _meth[t] != NULL and ncl_cmeth_get(_meth[t]) == <void *>ncl_copy_get_loop:
            return True
    return False


def getters():
    """{dtype name: address of its copy method's loop getter now} (empty
    where layout() failed)."""
    cdef int t
    res = {}
    if layout():
        return res
    for name in spec.ALL:
        t = np.dtype(name).num
        res[name] = <size_t>ncl_cmeth_get(_meth[t])
    return res


def _init():
    cdef int t
    for t in range(NTYPES):
        _meth[t] = NULL
        _numpy_get[t] = NULL

_init()
