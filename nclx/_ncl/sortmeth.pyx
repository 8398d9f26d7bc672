# cython: wraparound=False, boundscheck=False
"""NumPy 2.5's sorts through the Sort chains.

From NumPy 2.5 on, ``np.sort``/``np.argsort`` of a built-in dtype call the
DType's sort ArrayMethods (``sort_meth``/``argsort_meth``, stored right
after the ArrFuncs in the DType's slot table), not the ArrFuncs slots.
NumPy offers one public way to make such a method (``PyUFunc_AddLoopsFromSpecs``
with "sort"/"argsort") and none to get the old one back, so this module:

- reads NumPy's methods where they are stored, after checking the layout
  (each is a ``numpy._ArrayMethod`` with one input and one output and a
  loop getter; ``layout()`` says what it found; anything else refuses);
- makes nclx's methods once with ``PyUFunc_AddLoopsFromSpecs`` and puts
  NumPy's back at once;
- ``swap_in``/``swap_out`` exchange the two pointers in the slot table.

nclx's method's functions are nclx._ncl.sortcall's (one sort call: its
loop asks NumPy's method for its loop and runs ascending sorts through the
Sort chains; descending sorts and unknown flags are NumPy's loop, whole).
Built only against NumPy >= 2.4 headers; used only where the ArrFuncs
slots are bypassed.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF
from libc.string cimport strcmp

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortcall cimport ncl_sortcall_slot
from nclx._ncl.sortask cimport ncl_sortask_serve
from nclx._ncl import sortlanes
import numpy as np

from nclx._ncl import spec
from nclx.errors import NclxInstallError

cnp.import_array()
cnp.import_ufunc()

cdef extern from "numpy/dtype_api.h":
    ctypedef struct PyArray_DTypeMeta
    ctypedef struct PyType_Slot:
        int slot
        void *pfunc
    ctypedef struct PyArrayMethod_Spec:
        const char *name
        int nin, nout
        int casting
        int flags
        PyArray_DTypeMeta **dtypes
        PyType_Slot *slots
    ctypedef struct PyUFunc_LoopSlot:
        const char *name
        PyArrayMethod_Spec *spec
    enum:
        NPY_METH_resolve_descriptors
        NPY_METH_get_loop
        NPY_METH_strided_loop

cdef extern from "numpy/ufuncobject.h":
    int PyUFunc_AddLoopsFromSpecs(PyUFunc_LoopSlot *slots) except -1

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyArray_ArrFuncs
    PyArray_ArrFuncs *PyDataType_GetArrFuncs(cnp.dtype descr)

cdef extern from *:
    """
    #include "ncl_arraymethod.h"   /* ncl_meth_head: checked by layout() */
    static int ncl_meth_ok(void *m) {
        ncl_meth_head *h = (ncl_meth_head *)m;
        return m != NULL && strcmp(Py_TYPE((PyObject *)m)->tp_name, "numpy._ArrayMethod") == 0
            && h->nin == 1 && h->nout == 1 && h->casting >= 0 && h->casting <= 4
            && h->get_strided_loop != NULL && h->resolve_descriptors != NULL;
    }
    /* sort_meth / argsort_meth follow the ArrFuncs in the DType's slots */
    static PyObject **ncl_meth_slots(PyArray_ArrFuncs *f) { return (PyObject **)((char *)f + sizeof(PyArray_ArrFuncs)); }
    static void *ncl_dtypemeta(void *d) { return (void *)Py_TYPE((PyObject *)d); }
    """
    int ncl_meth_ok(void *m) noexcept
    PyObject **ncl_meth_slots(PyArray_ArrFuncs *f) noexcept
    void *ncl_dtypemeta(void *d) noexcept

cdef enum:
    NCHARS = 13

CHARS = spec.NUMPY_CHAR_ORDER

cdef PyObject *_numpy_meth[NCHARS][2]      # NumPy's sort / argsort methods
cdef PyObject *_nclx_meth[NCHARS][2]       # nclx's
cdef PyObject **_slot[NCHARS]              # where the DType keeps them
cdef int _made = 0
cdef int _swapped = 0
lanes_probe = None        # '' once install() checked deferred lanes, else why they are off


def layout():
    """Whether NumPy keeps sort ArrayMethods where nclx reads them: '' when
    every one of the 13 DTypes' sort and argsort methods checks out, else
    what did not."""
    cdef int c, w
    cdef PyObject **slots
    for c in range(NCHARS):
        dt = np.dtype(CHARS[c])
        slots = ncl_meth_slots(PyDataType_GetArrFuncs(dt))
        for w in range(2):
            if not ncl_meth_ok(<void *>slots[w]):
                return (f"NumPy {np.__version__}: no sort ArrayMethod of the known layout for "
                        f"dtype {dt} ({'argsort' if w else 'sort'})")
        _slot[c] = slots
    return ""


def _make():
    """Make nclx's methods (once); NumPy's stay in place."""
    global _made
    cdef int c, w
    cdef PyArrayMethod_Spec spec_
    cdef PyUFunc_LoopSlot loops[2]
    cdef PyType_Slot slots[4]
    cdef void *dtypes[2]
    if _made:
        return
    why = layout()
    if why:
        raise NclxInstallError(why)
    intp_dt = np.dtype(np.intp)
    intp_meta = ncl_dtypemeta(<void *>intp_dt)
    for c in range(NCHARS):
        dt = np.dtype(CHARS[c])
        # the one-call module serves this dtype with NumPy's methods (still
        # in the slots here) before nclx's method exists
        ncl_sortask_serve(dt.num, c, <void *>_slot[c][0], <void *>_slot[c][1])
        for w in range(2):
            _numpy_meth[c][w] = _slot[c][w]
            Py_INCREF(<object>_numpy_meth[c][w])
            dtypes[0] = ncl_dtypemeta(<void *>dt)
            dtypes[1] = intp_meta if w else dtypes[0]
            slots[0].slot = NPY_METH_resolve_descriptors
            slots[0].pfunc = ncl_sortcall_slot(1 if w else 0)
            slots[1].slot = NPY_METH_get_loop
            slots[1].pfunc = ncl_sortcall_slot(3 if w else 2)
            slots[2].slot = NPY_METH_strided_loop
            slots[2].pfunc = ncl_sortcall_slot(4)
            slots[3].slot = 0
            slots[3].pfunc = NULL
            spec_.name = b"nclx_argsort" if w else b"nclx_sort"
            spec_.nin = 1
            spec_.nout = 1
            spec_.casting = 0
            spec_.flags = 0
            spec_.dtypes = <PyArray_DTypeMeta **>dtypes
            spec_.slots = slots
            loops[0].name = b"argsort" if w else b"sort"
            loops[0].spec = &spec_
            loops[1].name = NULL
            loops[1].spec = NULL
            try:
                PyUFunc_AddLoopsFromSpecs(loops)
            finally:
                # the call put nclx's method in the slot: keep it, put NumPy's back
                if _slot[c][w] != _numpy_meth[c][w]:
                    _nclx_meth[c][w] = _slot[c][w]
                    Py_INCREF(<object>_nclx_meth[c][w])
                    _slot[c][w] = _numpy_meth[c][w]
            if _nclx_meth[c][w] == NULL:
                raise NclxInstallError(f"NumPy did not take nclx's {'argsort' if w else 'sort'} "
                                       f"method for dtype {dt}")
    _made = 1


def swap_in():
    """nclx's sort methods in the 13 DTypes' slots; returns how many."""
    global _swapped
    cdef int c, w
    _make()
    if _swapped:
        return 0
    for c in range(NCHARS):
        for w in range(2):
            if _slot[c][w] != _numpy_meth[c][w]:
                raise NclxInstallError(f"NumPy's {'argsort' if w else 'sort'} method for dtype "
                                       f"{np.dtype(CHARS[c])} changed since nclx read it")
    for c in range(NCHARS):
        for w in range(2):
            _slot[c][w] = _nclx_meth[c][w]
    _swapped = 1
    global lanes_probe
    if lanes_probe is None:         # once: NumPy's lane-by-lane calls as sortlanes needs them
        lanes_probe = sortlanes.probe(_probe_sort)
    return 2 * NCHARS


def _probe_sort(a, axis, kind):
    """What np.sort does (a copy sorted by ndarray.sort), called without the
    name ``np.sort``, which code may have rebound (a test's or profiler's
    stand-in then turned deferring off for the process: found by review)."""
    c = a.copy(order="K")
    c.sort(axis=axis, kind=kind)
    return c


def swap_out():
    """NumPy's methods back; returns (restored, foreign)."""
    global _swapped
    cdef int c, w
    if not _swapped:
        return 0, 0
    foreign = 0
    for c in range(NCHARS):
        for w in range(2):
            if _slot[c][w] != _nclx_meth[c][w]:
                foreign += 1
            _slot[c][w] = _numpy_meth[c][w]
    _swapped = 0
    return 2 * NCHARS, foreign


def methods():
    """{(type char, 'sort'|'argsort'): (NumPy's method, slot now)} as addresses."""
    cdef int c, w
    out = {}
    if layout():
        return out
    for c in range(NCHARS):
        for w in range(2):
            out[(CHARS[c], "argsort" if w else "sort")] = (<size_t>_slot[c][w] if not _made
                                                          else <size_t>_numpy_meth[c][w],
                                                          <size_t>_slot[c][w])
    return out
