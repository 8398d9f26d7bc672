# cython: wraparound=False, boundscheck=False, binding=False
# cython: embedsignature=True, embedsignature.format=clinic
"""nclx.create's functions, compiled: NumPy's signatures and results, the
arrays allocated by NumPy's own constructors (nclx._ncl.allocating: its
allocator, calloc for zeros, alignment), written by the Create subsystem's
call (nclx._ncl.creating).

Arguments NumPy reads quickly here -- an int or a tuple/list of ints for a
shape, a dtype, a type or a string for a dtype, order 'C'/'F' (and 'K'/'A'
for the ``_like`` functions), no ``device`` -- are read here; any other
argument goes to NumPy's own function, which reads it (and raises its own
error).  A ``like=`` that is not an ndarray hands the whole call to NumPy
(its ``__array_function__`` protocol); so does a prototype that is not an
ndarray with ndarray's ``__array_function__``.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject, PyTypeObject, Py_INCREF
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp, ncl_chain, NCL_SUB_CREATE
from nclx._ncl.registry cimport ncl_python_chain
from nclx._ncl.walk cimport ncl_chain_is_default
from nclx._ncl.creating cimport ncl_create_slot, ncl_create_run, ncl_create_fill as _fill
from nclx._ncl.createargs cimport MAXDIMS, ncl_nbytes, ncl_dims as _dims, ncl_order as _order, \
    ncl_fits_int64 as _fits_int64
from nclx._ncl.allocating cimport ncl_alloc_align as _align, ncl_alloc as _alloc, \
    ncl_alloc_realign as _realign
import numpy as np

from nclx._ncl.pychain import run_python_chain

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object _np_new "PyArray_NewFromDescr"(PyTypeObject *subtype, void *descr, int nd,
                                          npy_intp *dims, npy_intp *strides, void *data,
                                          int flags, PyObject *obj)
    object _np_zeros "PyArray_Zeros"(int nd, npy_intp *dims, void *descr, int fortran)
    object _new_like "PyArray_NewLikeArray"(cnp.ndarray proto, cnp.NPY_ORDER order,
                                            void *descr, int subok)

cdef enum:
    EMPTY = 0
    ZEROS = 1
    FULL = 2

cdef cnp.dtype _F64 = np.dtype(np.float64)
cdef cnp.dtype _I64 = np.dtype(np.int64)
cdef cnp.dtype _BOOL = np.dtype(np.bool_)
cdef dict _DESCRS = {}          # type or str -> NumPy's own (singleton) descr
cdef ncl_chain *_PYCHAIN = ncl_python_chain(NCL_SUB_CREATE)
_ND_AF = np.ndarray.__array_function__
_copyto = np.copyto


# ------------------------------------------------------------ the arguments

cdef object _sized(cnp.dtype d):
    """NumPy's new arrays of an unsized string dtype ('S', 'U') hold one
    character (its constructor widens them only where it allocates)."""
    if d.itemsize == 0 and d.kind in "SU":         # (only 'V' has fields)
        return np.dtype("S1" if d.kind == c'S' else "U1")   # native, as NumPy's ('>U' too)
    return d


cdef inline object _descr(object dtype):
    """``dtype`` as NumPy's descr, or None: NumPy's function reads it."""
    if dtype is None or dtype is float:
        return _F64
    if isinstance(dtype, cnp.dtype):
        return _sized(dtype)
    if type(dtype) is type or type(dtype) is str:
        d = _DESCRS.get(dtype)
        if d is not None:
            return d
        try:
            d = _sized(np.dtype(dtype))
        except Exception:
            return None
        if len(_DESCRS) < 64 and (<cnp.dtype>d).type_num < cnp.NPY_OBJECT \
                and d is cnp.PyArray_DescrFromType((<cnp.dtype>d).type_num):
            _DESCRS[dtype] = d
        return d
    return None


cdef bint _plain(object a) noexcept:
    """An ndarray whose type keeps ndarray's ``__array_function__``."""
    return type(a) is cnp.ndarray or (isinstance(a, cnp.ndarray)
                                      and type(a).__array_function__ is _ND_AF)


cdef inline bint _foreign_like(object like):
    return like is not None and not _plain(like)


# ------------------------------------------------------------ the calls

cdef object _make(int op, object shape, object fill, object dtype, object order, object device,
                  object align, bint touch):
    """empty, zeros, full (ones): allocate, then the Create call."""
    cdef npy_intp dims[MAXDIMS]
    cdef npy_intp nbytes = 0
    cdef int nd = -1, f
    cdef cnp.ndarray res
    descr = None
    f = _order(order, False)
    if f >= 0 and device is None:
        # the shape first, as NumPy converts it first: a shape NumPy refuses
        # reaches NumPy before nclx parses the dtype (which may warn: the
        # warning then comes once, from NumPy, or not at all)
        nd = _dims(shape, dims)
        if nd >= 0:
            descr = _descr(dtype)
            if descr is None or not ncl_nbytes(nd, dims, (<cnp.dtype>descr).itemsize, &nbytes):
                nd = -1
    if nd >= 0 and align is None:
        Py_INCREF(descr)                # the constructors steal a reference
        if op == ZEROS:
            res = _np_zeros(nd, dims, <void *>descr, f)
        else:
            res = _np_new(<PyTypeObject *>cnp.ndarray, <void *>descr, nd, dims, NULL, NULL, f,
                          NULL)
    elif nd >= 0:
        res = _alloc(descr, nd, dims, nbytes, f, op == ZEROS, _align(align, descr), cnp.ndarray,
                     None)
    else:
        # the dtype as parsed when nclx parsed it (parsing it again warns again)
        res = (np.zeros if op == ZEROS else np.empty)(shape, dtype if descr is None else descr,
                                                      order, device=device)
        res = _realign(res, _align(align, <cnp.dtype>cnp.PyArray_DESCR(res)), op == ZEROS, False,
                       None, None)
    if op == FULL:
        return _fill(res, fill, touch)
    ncl_create_run(res, op, NULL, touch, False)
    return res


cdef dict _given(object dtype, object order, str default_order, object device,
                 object subok=True, object shape=None):
    """The arguments handed to NumPy's function that are not defaults, as
    keywords: an ``__array_function__`` overrider gets NumPy's call (review
    16: it got all of them positionally, and ``device=None``)."""
    kw = {"dtype": dtype, "subok": subok, "shape": shape, "device": device}
    kw = {k: v for k, v in kw.items() if v is not (True if k == "subok" else None)}
    if not (type(order) is str and order == default_order):
        kw["order"] = order
    return kw


cdef object _delegate(str name, object res, object align, bint touch):
    """A call NumPy's function made (like=, a foreign prototype): aligned
    again (a copy) when asked; ``touch`` needs nclx's memory."""
    if touch:
        raise TypeError(f"nclx.create.{name}: touch=True needs an ndarray prototype or like=; "
                        f"NumPy's function answered this call")
    if align is not None and isinstance(res, cnp.ndarray):
        return _realign(res, _align(align, res.dtype), False, True, None, res)
    if align is not None:
        raise TypeError(f"nclx.create.{name}: align= needs an ndarray result, "
                        f"got {type(res).__name__}")
    return res


cdef int _like_order(cnp.ndarray p, int o, int nd) noexcept:
    """NumPy's layout of a new array like ``p``: 0 C, 1 F, -1 ``p``'s own
    stride order (order 'K' of a non-contiguous prototype)."""
    if o < 2:
        return o
    if o == 2:
        return 1 if (cnp.PyArray_IS_F_CONTIGUOUS(p) and not cnp.PyArray_IS_C_CONTIGUOUS(p)) else 0
    if nd >= 0 and nd != cnp.PyArray_NDIM(p):
        return 0
    if cnp.PyArray_IS_C_CONTIGUOUS(p):
        return 0
    if cnp.PyArray_IS_F_CONTIGUOUS(p):
        return 1
    return -1


cdef object _make_like(int op, object npfunc, object proto, object fill, object dtype,
                       object order, object subok, object shape, object device, object align,
                       bint touch):
    """empty_like, zeros_like, full_like (ones_like)."""
    cdef npy_intp dims[MAXDIMS]
    cdef npy_intp nbytes = 0
    cdef int nd = -2, o, f
    cdef npy_intp a
    cdef cnp.ndarray p, res
    cdef bint zeroed = False
    if not _plain(proto):
        kw = _given(dtype, order, "K", device, subok, shape)
        out = npfunc(proto, fill, **kw) if npfunc is np.full_like else npfunc(proto, **kw)
        return _delegate(npfunc.__name__, out, align, touch)
    p = <cnp.ndarray>proto
    descr = <cnp.dtype>cnp.PyArray_DESCR(p) if dtype is None else _descr(dtype)
    o = _order(order, True)
    if descr is not None and not cnp.PyDataType_HASSUBARRAY(descr) and o >= 0 \
            and (subok is True or subok is False) and device is None:
        nd = -1 if shape is None else _dims(shape, dims)
        if shape is not None and nd < 0:
            nd = -2
    if nd >= -1:
        f = _like_order(p, o, nd)
        if nd == -1:
            nd = cnp.PyArray_NDIM(p)
            memcpy(dims, cnp.PyArray_DIMS(p), nd * sizeof(npy_intp))
        subtype = type(p) if subok else cnp.ndarray
        obj = p if subtype is not cnp.ndarray else None
        a = _align(align, descr)
        if f >= 0 and ncl_nbytes(nd, dims, (<cnp.dtype>descr).itemsize, &nbytes):
            zeroed = op == ZEROS and subtype is cnp.ndarray
            res = _alloc(descr, nd, dims, nbytes, f, zeroed, a, subtype, obj)
        elif f < 0 and shape is None:
            Py_INCREF(descr)
            # aligned: NumPy's layout on a plain array, then made once in
            # aligned memory (the subclass's __array_finalize__ runs once)
            res = _new_like(p, cnp.NPY_KEEPORDER, <void *>descr, subok and a == 0)
            if a:
                res = _realign(res, a, False, False, subtype, obj)
        else:
            nd = -2
    if nd == -2:
        res = np.empty_like(p, dtype, order, subok if align is None else False, shape,
                            device=device)
        if align is not None:
            subtype = type(p) if subok else cnp.ndarray
            res = _realign(res, _align(align, res.dtype), False, False, subtype,
                           p if subtype is not cnp.ndarray else None)
    if op == FULL:
        return _fill(res, fill, touch)
    if op == EMPTY or ncl_create_slot(ZEROS, <cnp.dtype>cnp.PyArray_DESCR(res)) >= 0:
        ncl_create_run(res, op, NULL, touch, not zeroed)
    elif not zeroed:
        _copyto(res, np.zeros(1, dtype=res.dtype), casting="unsafe")
    return res


# ------------------------------------------------------------ the functions

cpdef _empty(shape, dtype=None, order="C", device=None, like=None, align=None, touch=False):
    if _foreign_like(like):
        return _delegate("empty", np.empty(shape, like=like, **_given(dtype, order, "C", device)),
                         align, touch)
    return _make(EMPTY, shape, None, dtype, order, device, align, touch)


cpdef _zeros(shape, dtype=None, order="C", device=None, like=None, align=None, touch=False):
    if _foreign_like(like):
        return _delegate("zeros", np.zeros(shape, like=like, **_given(dtype, order, "C", device)),
                         align, touch)
    return _make(ZEROS, shape, None, dtype, order, device, align, touch)


cpdef _ones(shape, dtype=None, order="C", device=None, like=None, align=None, touch=False):
    if _foreign_like(like):
        return _delegate("ones", np.ones(shape, like=like, **_given(dtype, order, "C", device)),
                         align, touch)
    return _make(FULL, shape, 1, dtype, order, device, align, touch)


cpdef _full(shape, fill_value, dtype=None, order="C", device=None, like=None, align=None,
            touch=False):
    if _foreign_like(like):
        return _delegate("full", np.full(shape, fill_value, like=like,
                                         **_given(dtype, order, "C", device)), align, touch)
    if dtype is None:
        # NumPy: the dtype of np.asarray(fill_value), which then fills
        if type(fill_value) is float:
            dtype = _F64
        elif type(fill_value) is int and _fits_int64(fill_value):
            dtype = _I64
        elif type(fill_value) is bool:
            dtype = _BOOL
        else:
            fill_value = np.asarray(fill_value)
            dtype = fill_value.dtype
    return _make(FULL, shape, fill_value, dtype, order, device, align, touch)


cpdef _empty_like(prototype, dtype=None, order="K", subok=True, shape=None, device=None,
                  align=None, touch=False):
    return _make_like(EMPTY, np.empty_like, prototype, None, dtype, order, subok, shape, device,
                      align, touch)


cpdef _zeros_like(a, dtype=None, order="K", subok=True, shape=None, device=None, align=None,
                  touch=False):
    return _make_like(ZEROS, np.zeros_like, a, None, dtype, order, subok, shape, device, align,
                      touch)


cpdef _ones_like(a, dtype=None, order="K", subok=True, shape=None, device=None, align=None,
                 touch=False):
    return _make_like(FULL, np.ones_like, a, 1, dtype, order, subok, shape, device, align, touch)


cpdef _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, device=None,
                 align=None, touch=False):
    return _make_like(FULL, np.full_like, a, fill_value, dtype, order, subok, shape, device, align,
                      touch)


cdef object _chained(object func, tuple args, dict kwargs):
    return run_python_chain(NCL_SUB_CREATE, func, "__call__", args, kwargs, _final)


def _final(func, method, args, kwargs):
    """The end of the Python chain: the call itself."""
    impl = _IMPLS.get(func)
    if impl is None:            # a hook put another function in
        return func(*args, **kwargs)
    return impl(*args, **kwargs)


def empty(shape, dtype=None, order="C", *, device=None, like=None, align=None, touch=False):
    """``numpy.empty``; ``align``: the data starts at a multiple of this many
    bytes; ``touch``: the team writes one byte per page first."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(empty, (shape, dtype, order),
                        {"device": device, "like": like, "align": align, "touch": touch})
    if _foreign_like(like):
        return _empty(shape, dtype, order, device, like, align, touch)
    return _make(EMPTY, shape, None, dtype, order, device, align, touch)


def zeros(shape, dtype=None, order="C", *, device=None, like=None, align=None, touch=False):
    """``numpy.zeros`` (calloc: no pass over fresh pages); ``touch``: the
    team writes the zeros, each thread its own pages."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(zeros, (shape, dtype, order),
                        {"device": device, "like": like, "align": align, "touch": touch})
    if _foreign_like(like):
        return _zeros(shape, dtype, order, device, like, align, touch)
    return _make(ZEROS, shape, None, dtype, order, device, align, touch)


def ones(shape, dtype=None, order="C", *, device=None, like=None, align=None, touch=False):
    """``numpy.ones``: the ``full`` call with 1."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(ones, (shape, dtype, order),
                        {"device": device, "like": like, "align": align, "touch": touch})
    if _foreign_like(like):
        return _ones(shape, dtype, order, device, like, align, touch)
    return _make(FULL, shape, 1, dtype, order, device, align, touch)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None, align=None,
         touch=False):
    """``numpy.full``: the team writes the value, each thread its own pages."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(full, (shape, fill_value, dtype, order),
                        {"device": device, "like": like, "align": align, "touch": touch})
    return _full(shape, fill_value, dtype, order, device, like, align, touch)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None,
               align=None, touch=False):
    """``numpy.empty_like``, with ``align`` and ``touch`` as :func:`empty`."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(empty_like, (prototype, dtype, order, subok, shape),
                        {"device": device, "align": align, "touch": touch})
    return _make_like(EMPTY, np.empty_like, prototype, None, dtype, order, subok, shape, device,
                      align, touch)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None, align=None,
               touch=False):
    """``numpy.zeros_like``: calloc where the result is a C- or F-ordered
    ndarray, else the team writes the zeros."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(zeros_like, (a, dtype, order, subok, shape),
                        {"device": device, "align": align, "touch": touch})
    return _zeros_like(a, dtype, order, subok, shape, device, align, touch)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None, align=None,
              touch=False):
    """``numpy.ones_like``: the ``full`` call with 1."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(ones_like, (a, dtype, order, subok, shape),
                        {"device": device, "align": align, "touch": touch})
    return _ones_like(a, dtype, order, subok, shape, device, align, touch)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None,
              align=None, touch=False):
    """``numpy.full_like``: the team writes the value."""
    if not ncl_chain_is_default(_PYCHAIN):
        return _chained(full_like, (a, fill_value, dtype, order, subok, shape),
                        {"device": device, "align": align, "touch": touch})
    return _full_like(a, fill_value, dtype, order, subok, shape, device, align, touch)


_IMPLS = {empty: _empty, zeros: _zeros, ones: _ones, full: _full, empty_like: _empty_like,
          zeros_like: _zeros_like, ones_like: _ones_like, full_like: _full_like}
