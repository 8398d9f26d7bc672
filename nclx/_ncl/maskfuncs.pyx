# cython: wraparound=False, boundscheck=False
"""nclx.mask's functions: the "mask" python chain, then NumPy's arguments,
rules and errors around the Mask subsystem's kernels.

Every function first walks the "mask" python chain (when a hook is in it).
``extract`` and ``compress`` go on in nclx._ncl.maskselect; ``place``,
``putmask`` and ``count`` are here.  An exact, C-contiguous, writeable
ndarray of a fixed-width, native, aligned dtype is served by nclx's kernels;
anything else -- other dtypes, subclasses, objects with
``__array_function__``, arrays NumPy copies and writes back, ``place``
values that overlap the array -- goes to NumPy's own function, which also
raises NumPy's errors where nclx's checks find one.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.masking cimport (mjob, mask_slot, mask_quiet, mask_run, mask_prepare,
                                arr_data, arr_overlap, arr_served, arg_plain,
                                OP_PLACE, OP_PUTMASK, OP_COUNT, NOGIL_MIN)
from nclx._ncl.maskselect cimport select_extract, select_compress
from nclx._ncl.callops cimport ncl_callop_raise
from nclx._ncl.registry cimport ncl_python_chain
from nclx._ncl.walk cimport ncl_chain_is_default

import numpy as np
import numpy._core._multiarray_umath as _mu

from nclx._ncl.pychain import run_python_chain
from nclx._ncl.spec import SUBSYSTEMS

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    # NumPy's own conversion of place's and putmask's values (no FORCECAST:
    # arrays cast 'safe', Python objects are read in the array's dtype)
    object _from_any "PyArray_FromAny"(object op, cnp.PyArray_Descr *dtype, int mindepth,
                                       int maxdepth, int flags, PyObject *context)

cdef extern from "ncl_mask.h" nogil:
    npy_intp ncl_mask_count(const unsigned char *m, npy_intp n)

# NumPy's public functions (they dispatch __array_function__) and the C
# functions behind them, for exact ndarrays
_np_place = np.place
_np_putmask = np.putmask
_np_count = np.count_nonzero
_place_c = _mu._place
_putmask_c = _mu.putmask
_count_c = _mu.count_nonzero
#: what np.count_nonzero(a) returns: a Python int on NumPy 2.0, np.intp on 2.3 and later
_COUNT_TYPE = type(_count_c(np.zeros(1, dtype=bool)))

cdef int _MASK = SUBSYSTEMS.index("mask")
cdef int _BOOL = cnp.NPY_BOOL
cdef int _CARRAY = cnp.NPY_ARRAY_CARRAY
cdef int _FORCECAST = cnp.NPY_ARRAY_FORCECAST

# below these sizes (elements) a hook-free call goes straight to NumPy's C
# function (set_small; measured: docs/mask.md)
cdef npy_intp _small[4]
_small[OP_PLACE] = _small[OP_PUTMASK] = 0       # nclx is faster at every size
_small[OP_COUNT] = 16384                          # NumPy's SIMD count beats one thread


def set_small(str op, npy_intp n):
    """Set the size below which a hook-free ``op`` call ("place", "putmask"
    or "count") goes to NumPy; returns the previous size."""
    i = {"place": OP_PLACE, "putmask": OP_PUTMASK, "count": OP_COUNT}[op]
    old = _small[i]
    _small[i] = n
    return old


cdef inline bint _py_quiet() noexcept:
    return ncl_chain_is_default(ncl_python_chain(_MASK))


# ------------------------------------------------------------ the functions

def extract(condition, arr):
    """The elements of ``arr`` where ``condition`` is nonzero, as
    ``numpy.extract(condition, arr)``: both raveled in C order, a condition
    shorter than ``arr`` selects from its first elements, a longer one may
    only hold False past the end (else NumPy's IndexError).  For a bool
    ``condition`` of ``arr``'s shape this is ``arr[condition]``.
    """
    if _py_quiet():
        return select_extract(condition, arr)
    return run_python_chain(_MASK, extract, "__call__", (condition, arr), {}, _final)


def compress(condition, a, axis=None, out=None):
    """The slices of ``a`` along ``axis`` (of the raveled ``a`` when None)
    where the 1-d ``condition`` is nonzero, as ``numpy.compress``: a
    condition shorter than the axis keeps only its first slices, a longer one
    may only hold False past the end; ``out`` receives the result as in NumPy.
    """
    if _py_quiet():
        return select_compress(condition, a, axis, out)
    return run_python_chain(_MASK, compress, "__call__", (condition, a),
                            {"axis": axis, "out": out}, _final)


def place(arr, mask, vals):
    """Write ``vals`` into ``arr`` where ``mask`` is nonzero, as
    ``numpy.place``: the n-th selected element (C order) takes
    ``vals[n % len(vals)]``; ``arr`` must be an ndarray and ``mask`` of its
    size; ``vals`` are converted as NumPy converts them (arrays cast 'safe').
    """
    if _py_quiet():
        return _place(arr, mask, vals)
    return run_python_chain(_MASK, place, "__call__", (arr, mask, vals), {}, _final)


def putmask(a, /, mask, values):
    """Write ``values`` into ``a`` where ``mask`` is nonzero, as
    ``numpy.putmask``: element i (C order) takes ``values[i % len(values)]``;
    ``a`` must be an ndarray and ``mask`` of its size; ``values`` are
    converted as NumPy converts them (arrays cast 'safe').
    """
    if _py_quiet():
        return _putmask(a, mask, values)
    return run_python_chain(_MASK, putmask, "__call__", (a, mask, values), {}, _final)


def count(mask):
    """The number of nonzero elements of ``mask``, as
    ``numpy.count_nonzero(mask)``, of the type the running NumPy returns (a
    Python int on NumPy 2.0, ``numpy.intp`` on 2.3 and later).  nclx counts
    bool arrays; other inputs go to NumPy.
    """
    if _py_quiet():
        return _count(mask)
    return run_python_chain(_MASK, count, "__call__", (mask,), {}, _final)


# ------------------------------------------------------------ place, putmask

cdef object _place(object arr, object mask, object vals):
    if type(arr) is not cnp.ndarray or not (arg_plain(mask) and arg_plain(vals)):
        return _np_place(arr, mask, vals)
    return _assign(OP_PLACE, arr, mask, vals)


cdef object _putmask(object a, object mask, object values):
    if type(a) is not cnp.ndarray or not (arg_plain(mask) and arg_plain(values)):
        return _np_putmask(a, mask, values)
    return _assign(OP_PUTMASK, a, mask, values)


cdef object _assign(int op, cnp.ndarray a, object mask, object vals):
    """place (op OP_PLACE) or putmask into the exact ndarray ``a``."""
    cdef cnp.ndarray m, v
    cdef npy_intp n = cnp.PyArray_SIZE(a), nv
    cdef int k = mask_slot(op, cnp.PyArray_TYPE(a))
    cdef int rc
    cdef mjob j
    cdef char *args[3]
    cdef npy_intp dims[4]
    cdef npy_intp steps[3]
    numpy_c = _place_c if op == OP_PLACE else _putmask_c
    if not (arr_served(a, op) and cnp.PyArray_IS_C_CONTIGUOUS(a) and cnp.PyArray_ISWRITEABLE(a)):
        return numpy_c(a, mask, vals)       # NumPy copies and writes back (or raises)
    if n < _small[op] and mask_quiet(k):
        return numpy_c(a, mask, vals)
    # NumPy's conversions, made once: where NumPy's function takes over it
    # gets the converted m and v, which it reads as they are (a mask's
    # __bool__ or __array__ is not called a second time)
    m = cnp.PyArray_FROM_OTF(mask, _BOOL, _CARRAY | _FORCECAST)
    if cnp.PyArray_SIZE(m) != n:
        return numpy_c(a, m, vals)          # NumPy's "mask and data must be the same size"
    Py_INCREF(<object>cnp.PyArray_DESCR(a))     # PyArray_FromAny steals it
    v = _from_any(vals, cnp.PyArray_DESCR(a), 0, 0, _CARRAY, NULL)
    nv = cnp.PyArray_SIZE(v)
    if nv == 0:
        if op == OP_PLACE and n and ncl_mask_count(<const unsigned char *>arr_data(m), n):
            return numpy_c(a, m, v)         # "Cannot insert from an empty array!"
        return None
    if arr_overlap(v, a) or arr_overlap(m, a):
        if op == OP_PLACE:
            return numpy_c(a, m, v)         # NumPy reads them while it writes: its order decides
        v = v.copy()                        # putmask reads what they held before the call
        m = m.copy()
    if n == 0:
        return None
    mask_prepare(&j, op, arr_data(m), n, a)
    j.nv = nv
    args[0] = arr_data(m)
    args[1] = arr_data(v)
    args[2] = arr_data(a)
    dims[0] = dims[1] = dims[3] = n
    dims[2] = nv
    steps[0] = 1
    steps[1] = steps[2] = j.isz
    if n > NOGIL_MIN:
        with nogil:
            rc = mask_run(op, k, &j, args, dims, steps)
    else:
        rc = mask_run(op, k, &j, args, dims, steps)
    if rc < 0:
        ncl_callop_raise()        # a hook's exception (review 22)
    return None


# ------------------------------------------------------------ count

cdef object _count(object mask):
    cdef cnp.ndarray m
    cdef int rc
    cdef npy_intp n, result = 0
    cdef int k
    cdef mjob j
    cdef char *args[2]
    cdef npy_intp dims[3]
    cdef npy_intp steps[2]
    if type(mask) is not cnp.ndarray:
        return _np_count(mask)
    m = mask
    k = mask_slot(OP_COUNT, cnp.PyArray_TYPE(m))
    n = cnp.PyArray_SIZE(m)
    if (k < 0 or n == 0 or n < _small[OP_COUNT] and mask_quiet(k)
            or not (cnp.PyArray_IS_C_CONTIGUOUS(m) or cnp.PyArray_IS_F_CONTIGUOUS(m))):
        return _count_c(m)
    mask_prepare(&j, OP_COUNT, arr_data(m), n, m)
    args[0] = arr_data(m)
    args[1] = <char *>&result
    dims[0] = dims[1] = n
    dims[2] = 1
    steps[0] = 1
    steps[1] = sizeof(npy_intp)
    if n > NOGIL_MIN:
        with nogil:
            rc = mask_run(OP_COUNT, k, &j, args, dims, steps)
    else:
        rc = mask_run(OP_COUNT, k, &j, args, dims, steps)
    if rc < 0:
        ncl_callop_raise()        # a hook's exception (review 22)
    return _COUNT_TYPE(result)


# ------------------------------------------------------------ the python chain

def _extract_impl(condition, arr):
    return select_extract(condition, arr)


def _compress_impl(condition, a, axis=None, out=None):
    return select_compress(condition, a, axis, out)


def _place_impl(arr, mask, vals):
    return _place(arr, mask, vals)


def _putmask_impl(a, /, mask, values):
    return _putmask(a, mask, values)


def _count_impl(mask):
    return _count(mask)


_IMPLS = {extract: _extract_impl, compress: _compress_impl, place: _place_impl,
          putmask: _putmask_impl, count: _count_impl}


def _final(func, method, args, kwargs):
    """The end of the "mask" python chain: the call as the hooks left it
    (a hook may have put another function in ``call.ufunc``)."""
    impl = _IMPLS.get(func)
    if impl is None:
        return func(*args, **kwargs)
    return impl(*args, **kwargs)
