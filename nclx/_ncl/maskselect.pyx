# cython: wraparound=False, boundscheck=False
"""Selection by a mask, NumPy's way: ``numpy.extract`` and
``numpy.compress`` (with ``axis`` and ``out``) on nclx's kernels
(nclx._ncl.masking).

An exact ndarray of a fixed-width, native, aligned dtype with a condition
of numbers (nonzero: selected) is served here -- a non-contiguous one is
first copied in C order, as NumPy's ravel and take copy it; anything else
goes to NumPy's function.
Where nclx's checks find an error -- a condition longer than its axis with a
True past the end, an ``out`` of the wrong shape -- NumPy's function is
called so that it raises its own exception.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.masking cimport (mjob, mask_slot, mask_quiet, mask_threads,
                                mask_run, mask_select, mask_prepare, arr_data, arr_overlap,
                                arr_served, arg_plain, OP_EXTRACT, NOGIL_MIN)

import numpy as np

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object _new_from_descr "PyArray_SimpleNewFromDescr"(int nd, npy_intp *dims,
                                                         cnp.PyArray_Descr *descr)
    object _from_any "PyArray_FromAny"(object op, cnp.PyArray_Descr *dtype, int mindepth,
                                       int maxdepth, int flags, PyObject *context)

cdef extern from "ncl_mask.h" nogil:
    npy_intp ncl_mask_count(const unsigned char *m, npy_intp n)

# NumPy's functions (they dispatch __array_function__ and raise NumPy's errors)
_np_extract = np.extract
_np_compress = np.compress

cdef int _BOOL = cnp.NPY_BOOL
_BOOL_DESCR = np.dtype(bool)
# NumPy reads compress's axis as a C int
cdef object _AXIS_MAX = 2**31 - 1


cdef cnp.ndarray _as_bool(cnp.ndarray c):
    """A condition as NumPy reads it (nonzero elements selected) when it is
    a number array: its cast to bool (NaN and -0.0 as nonzero reads them);
    None for other dtypes (strings, objects: NumPy's job)."""
    if cnp.PyArray_TYPE(c) == _BOOL:
        return c
    if c.dtype.kind in "iu":
        return c.astype(bool)
    if c.dtype.kind in "fc":
        # NumPy's nonzero reads a signaling NaN without a word; the cast
        # would warn "invalid value encountered in cast" (or raise, under
        # np.errstate(invalid="raise"))
        with np.errstate(invalid="ignore"):
            return c.astype(bool)
    return None


# below this many mask elements a hook-free flat selection goes to NumPy
# (set_small): none by default, nclx measured faster from 1 element (docs/mask.md)
cdef npy_intp _small = 0


def set_small(npy_intp n):
    """Set the mask length below which a hook-free extract or flat compress
    goes to NumPy; returns the previous one."""
    global _small
    old = _small
    _small = n
    return old


cdef cnp.ndarray _new(cnp.ndarray like, int nd, npy_intp *dims):
    """A new C-contiguous array of ``like``'s dtype."""
    Py_INCREF(<object>cnp.PyArray_DESCR(like))      # the constructor steals it
    return _new_from_descr(nd, dims, cnp.PyArray_DESCR(like))


cdef int _run(mjob *j, cnp.ndarray c, npy_intp n, cnp.ndarray a, cnp.ndarray out) except -1:
    """out[:] = a.ravel()[:n][c[:n]], the job prepared over c[:n] (C-contiguous
    arrays; out holds j.total elements): one extract call."""
    cdef char *args[3]
    cdef npy_intp dims[4]
    cdef npy_intp steps[3]
    cdef int k = mask_slot(OP_EXTRACT, cnp.PyArray_TYPE(a))
    cdef int rc
    if n == 0:
        return 0
    args[0] = arr_data(c)
    args[1] = arr_data(a)
    args[2] = arr_data(out)
    dims[0] = dims[1] = dims[2] = n
    dims[3] = j.total
    steps[0] = 1
    steps[1] = steps[2] = j.isz
    if n > NOGIL_MIN:
        with nogil:
            rc = mask_run(OP_EXTRACT, k, j, args, dims, steps)
    else:
        rc = mask_run(OP_EXTRACT, k, j, args, dims, steps)
    return rc         # -1: a hook's exception, set (review 22)


cdef object select_extract(object condition, object arr):
    """numpy.extract(condition, arr)."""
    cdef cnp.ndarray c, a, a0, c0, out
    cdef npy_intp nc, na
    cdef mjob j
    if not (arg_plain(condition) and arg_plain(arr)):
        return _np_extract(condition, arr)
    # NumPy's ravel reads arr, then condition, with asanyarray (an error is
    # NumPy's own): an object whose __array__ gives a subclass (a masked
    # array) keeps it, and that subclass's take and nonzero select, in
    # NumPy's function
    a0 = arr if type(arr) is cnp.ndarray else np.asanyarray(arr)
    if type(a0) is not cnp.ndarray:
        return _np_extract(condition, arr)
    c0 = condition if type(condition) is cnp.ndarray else np.asanyarray(condition)
    if type(c0) is not cnp.ndarray:
        return _np_extract(condition, a0)
    # from here NumPy's function gets the arrays read above (it reads them
    # as it would read the originals; an __array__ is not called twice)
    c = _as_bool(c0)
    if c is None or not arr_served(a0, OP_EXTRACT):
        return _np_extract(c0, a0)
    a = a0
    if not cnp.PyArray_IS_C_CONTIGUOUS(c):
        c = c.ravel()
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        a = a.ravel()
    nc = cnp.PyArray_SIZE(c)
    na = cnp.PyArray_SIZE(a)
    if nc > na:
        if ncl_mask_count(<const unsigned char *>arr_data(c) + na, nc - na):
            return _np_extract(c0, a0)          # NumPy's IndexError
        nc = na
    if nc < _small and mask_quiet(mask_slot(OP_EXTRACT, cnp.PyArray_TYPE(a))):
        return _np_extract(c0, a0)
    mask_prepare(&j, OP_EXTRACT, arr_data(c), nc, a)
    out = _new(a, 1, &j.total)
    _run(&j, c, nc, a, out)
    return out


cdef object _bool_condition(object condition):
    """compress's condition as NumPy's PyArray_Compress reads one that is
    not an array: converted to bool, arrays cast 'safe' (a memoryview or
    array.array of ints raises NumPy's TypeError; lists of numbers do not)."""
    Py_INCREF(<object>_BOOL_DESCR)              # PyArray_FromAny steals it
    return _from_any(condition, <cnp.PyArray_Descr *>_BOOL_DESCR, 0, 0, 0, NULL)


cdef object select_compress(object condition, object a, object axis, object out):
    """numpy.compress(condition, a, axis=axis, out=out)."""
    cdef cnp.ndarray c, c0, arr, res
    cdef npy_intp S, Sm, L, pre = 1, post = 1
    cdef int nd, ax, i
    cdef npy_intp shape[64]
    cdef mjob j
    if not (arg_plain(condition) and arg_plain(a) and (out is None or type(out) is cnp.ndarray)
            and (axis is None or type(axis) is int and -_AXIS_MAX <= axis <= _AXIS_MAX)):
        # NumPy parses axis (a C int) and out before it reads the condition
        return _np_compress(condition, a, axis=axis, out=out)
    if type(a) is cnp.ndarray:
        arr = a
    elif type(a) is list or type(a) is tuple:
        try:
            arr = np.asarray(a)
        except Exception:
            return _np_compress(condition, a, axis=axis, out=out)     # NumPy's own error
    else:
        return _np_compress(condition, a, axis=axis, out=out)
    # read as NumPy reads it, at the same point (after a, axis and out): an
    # error here is NumPy's own
    try:
        c0 = condition if type(condition) is cnp.ndarray else _bool_condition(condition)
    except TypeError:
        if type(a) is cnp.ndarray:
            # np.compress retries a.compress that raised a TypeError on the
            # array it makes of a (numpy's _wrapfunc): the condition is read
            # a second time there, and raises again
            return arr.compress(condition, axis=axis, out=out)
        raise
    if type(c0) is not cnp.ndarray:
        return _np_compress(condition, a, axis=axis, out=out)
    # from here NumPy's function gets the condition read above (an array:
    # NumPy reads it as it is, the conversion is not made twice)
    nd = cnp.PyArray_NDIM(arr)
    if cnp.PyArray_NDIM(c0) != 1 or not arr_served(arr, OP_EXTRACT):
        return _np_compress(c0, a, axis=axis, out=out)
    c = _as_bool(c0)
    if c is None:
        return _np_compress(c0, a, axis=axis, out=out)
    if axis is None or nd == 1 and -1 <= axis <= 0:
        ax = -1
        if not cnp.PyArray_IS_C_CONTIGUOUS(arr):
            arr = arr.ravel()
        S = cnp.PyArray_SIZE(arr)
    elif 0 < nd and -nd <= axis < nd:
        ax = axis + nd if axis < 0 else axis
        if not cnp.PyArray_IS_C_CONTIGUOUS(arr):
            arr = np.ascontiguousarray(arr)
        S = cnp.PyArray_DIM(arr, ax)
        for i in range(ax):
            pre *= cnp.PyArray_DIM(arr, i)
        for i in range(ax + 1, nd):
            post *= cnp.PyArray_DIM(arr, i)
    else:
        return _np_compress(c0, a, axis=axis, out=out)      # NumPy's AxisError
    if not cnp.PyArray_IS_C_CONTIGUOUS(c):
        c = np.ascontiguousarray(c)
    L = cnp.PyArray_DIM(c, 0)
    if L > S and ncl_mask_count(<const unsigned char *>arr_data(c) + S, L - S):
        return _np_compress(c0, a, axis=axis, out=out)      # NumPy's IndexError
    Sm = min(L, S)
    if (out is None and ax < 0 and Sm < _small
            and mask_quiet(mask_slot(OP_EXTRACT, cnp.PyArray_TYPE(arr)))):
        return _np_compress(c0, a, axis=axis, out=out)
    if ax >= 0:
        # along an axis the condition is read three times (count, kept
        # indices, rows): a private copy keeps them in step
        c = c[:Sm].copy()
    mask_prepare(&j, OP_EXTRACT, arr_data(c), Sm, arr)
    if ax < 0:
        nd = 1
        shape[0] = j.total
    else:
        for i in range(nd):
            shape[i] = cnp.PyArray_DIM(arr, i)
        shape[ax] = j.total
    if out is None:
        res = _new(arr, nd, shape)
    elif _fits(out, nd, shape, arr, c):
        res = out
    else:
        return _np_compress(c0, a, axis=axis, out=out)      # NumPy's out= rules
    if pre * Sm * post == 0:
        return res
    if ax < 0 or pre == 1 and post == 1:
        _run(&j, c, Sm, arr, res)
    elif not j.quiet:
        _run_flat(c, Sm, arr, res, pre, S, post)
    else:
        _take(&j, c, Sm, arr, res, pre, S, post)
    return res


cdef bint _fits(cnp.ndarray o, int nd, npy_intp *shape, cnp.ndarray arr, cnp.ndarray c):
    """``o`` can take the result as it is: NumPy would write into it what
    nclx writes (same shape and dtype, contiguous, writeable, no overlap)."""
    cdef int i
    if cnp.PyArray_NDIM(o) != nd:
        return False
    for i in range(nd):
        if cnp.PyArray_DIM(o, i) != shape[i]:
            return False
    return (cnp.PyArray_EquivTypes(<cnp.dtype>cnp.PyArray_DESCR(o), <cnp.dtype>cnp.PyArray_DESCR(arr))
            and cnp.PyArray_ISNOTSWAPPED(o) and cnp.PyArray_IS_C_CONTIGUOUS(o)
            and cnp.PyArray_ISALIGNED(o) and cnp.PyArray_ISWRITEABLE(o)
            and not arr_overlap(o, arr) and not arr_overlap(o, c))


cdef int _run_flat(cnp.ndarray c, npy_intp Sm, cnp.ndarray arr, cnp.ndarray res,
                   npy_intp pre, npy_intp S, npy_intp post) except -1:
    """compress along an axis as the chains see it: one flat extract call,
    arr[mask] with the condition broadcast over the other axes."""
    cdef mjob j
    cdef cnp.ndarray fm = np.zeros((pre, S, post), dtype=bool)
    fm[:, :Sm, :] = c[:Sm, None]
    mask_prepare(&j, OP_EXTRACT, arr_data(fm), cnp.PyArray_SIZE(arr), arr)
    return _run(&j, fm, cnp.PyArray_SIZE(arr), arr, res)


cdef int _take(mjob *j, cnp.ndarray c, npy_intp Sm, cnp.ndarray arr, cnp.ndarray res,
               npy_intp pre, npy_intp S, npy_intp post) except -1:
    """res = arr.compress(c[:Sm], axis) for arr seen as (pre, S, post), the
    job prepared over c[:Sm]: the last axis (post == 1) row by row with the
    mask, else whole rows of ``post`` elements copied by the kept indices."""
    cdef cnp.ndarray idx
    cdef int isz = j.isz
    j.rows = pre
    j.src = arr_data(arr)
    j.dst = arr_data(res)
    if post == 1 and Sm >= 64:
        j.srow = S * isz
        j.drow = j.total * isz
    else:
        idx = np.flatnonzero(c[:Sm])
        j.idx = <const npy_intp *>arr_data(idx)
        j.srows = S
        j.rowbytes = post * isz
    j.want = mask_threads(pre * Sm * post)
    with nogil:
        mask_select(j)
    return 0
