# cython: binding=True
"""The hot path of storage creation.

``StorageBase`` holds a storage's fields as C slots, so a storage is made
without Python-level attribute stores; ``create`` serves ``empty`` /
``zeros`` from a cache of resolved keywords (the same storage is usually
created many times) and allocates the raw host buffer (``calloc``-backed
when zeroed, so large zeros cost what ``np.zeros`` costs), places the field
so that its aligned element lands on a boundary, and makes the strided
view, without Python-level NumPy calls.  A cache miss, a device storage or
an argument that is not plain (see :func:`cache_key`) takes the validating
path in nclx/storage/creation.py.
"""
cimport cython
cimport numpy as cnp
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject, Py_INCREF
from cpython.type cimport PyType_IsSubtype

import numpy as np

from nclx.storage.params import StorageError

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    # steals a reference to descr
    object PyArray_NewFromDescr(PyTypeObject *subtype, cnp.dtype descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides, void *data,
                                int flags, object obj)
    # both steal a reference to descr
    object PyArray_Empty(int nd, cnp.npy_intp *dims, cnp.dtype descr, int is_f_order)
    object PyArray_Zeros(int nd, cnp.npy_intp *dims, cnp.dtype descr, int is_f_order)

cdef extern from "Python.h":
    int PyTraceMalloc_Track(unsigned int domain, size_t ptr, size_t size)
    int PyTraceMalloc_Untrack(unsigned int domain, size_t ptr)

from libc.stdlib cimport calloc, free, malloc
from cpython.pyport cimport PY_SSIZE_T_MAX

# NumPy's tracemalloc domain: host blocks show up where NumPy's buffers do
cdef unsigned int NPY_TRACE_DOMAIN = np.lib.tracemalloc_domain

cdef enum:
    MAX_DIMS = 64


@cython.final
@cython.auto_pickle(False)
cdef class HostBlock:
    """Raw host memory owned by one storage allocation (the ``base`` of its
    views): one C allocation instead of an ndarray, which halves the cost of
    a small storage."""
    cdef char *ptr
    cdef readonly Py_ssize_t nbytes

    def __dealloc__(self):
        if self.ptr != NULL:
            PyTraceMalloc_Untrack(NPY_TRACE_DOMAIN, <size_t> self.ptr)
            free(self.ptr)
            self.ptr = NULL

    @property
    def address(self):
        return <size_t> self.ptr


cdef HostBlock _block(Py_ssize_t nbytes, bint zero):
    cdef HostBlock b = HostBlock.__new__(HostBlock)
    cdef size_t n = <size_t> nbytes if nbytes > 0 else 1
    b.ptr = <char *> (calloc(n, 1) if zero else malloc(n))
    if b.ptr == NULL:
        raise MemoryError(f"cannot allocate a storage of {nbytes} bytes")
    b.nbytes = nbytes
    PyTraceMalloc_Track(NPY_TRACE_DOMAIN, <size_t> b.ptr, n)
    return b


cdef tuple _EMPTY_ARGS = ()


@cython.auto_pickle(False)
cdef class StorageBase:
    """The fields of a storage (nclx.storage.core.Storage adds the methods)."""
    cdef public object _buf, _host, _dev, _dims, _halo, _layout, _alignment, _aligned_index
    cdef object __weakref__


cpdef StorageBase new_storage(type cls, buf, host, dev, tuple dims, tuple halo, tuple layout,
                              alignment, aligned_index):
    """A ``cls`` instance over ``buf`` with normalised metadata."""
    if not PyType_IsSubtype(cls, StorageBase):
        raise TypeError(f"new_storage: {cls!r} is not a StorageBase subclass")
    # the type's own tp_new, called directly (``StorageBase.__new__(cls)``
    # would go through a Python-level method call)
    cdef StorageBase s = <StorageBase> (<PyTypeObject *> cls).tp_new(cls, <PyObject *> _EMPTY_ARGS, NULL)
    s._buf = buf
    s._host = host
    s._dev = dev
    s._dims = dims
    s._halo = halo
    s._layout = layout
    s._alignment = alignment
    s._aligned_index = aligned_index
    return s


@cython.final
@cython.auto_pickle(False)
cdef class Recipe:
    """What ``empty`` / ``zeros`` need for one resolved argument set, in C:
    the raw length, the aligned element's offset, shape and strides, and
    the storage's metadata (see :func:`make_recipe`)."""
    cdef Py_ssize_t alloc_bytes, inner_offset, alignment
    cdef int nd, order
    cdef cnp.npy_intp dims[MAX_DIMS]
    cdef cnp.npy_intp strides[MAX_DIMS]
    cdef cnp.dtype dtype
    cdef bint host_only
    cdef tuple meta_dims, meta_halo, meta_layout
    cdef object meta_alignment, meta_aligned_index
    cdef readonly object resolved, plan


def make_recipe(dict resolved, plan, int order):
    """A Recipe from creation.py's resolved keywords and gt4py-rule plan;
    ``order`` 1 (C) or 2 (F) marks a contiguous field without padding."""
    cdef Recipe rc = Recipe.__new__(Recipe)
    cdef tuple shape = resolved["shape"], strides = plan.strides
    cdef int i
    if len(shape) > MAX_DIMS or len(strides) != len(shape):
        raise ValueError(f"make_recipe: {len(shape)} dimensions (at most {MAX_DIMS}), "
                         f"{len(strides)} strides")
    if plan.alloc_bytes > PY_SSIZE_T_MAX:
        raise StorageError(f"shape={shape}: the field needs {plan.alloc_bytes} bytes, more "
                           f"than this machine can address ({PY_SSIZE_T_MAX})")
    rc.alloc_bytes, rc.inner_offset, rc.alignment = (plan.alloc_bytes, plan.inner_offset,
                                                     plan.alignment)
    rc.nd, rc.order = len(shape), order
    for i in range(rc.nd):
        rc.dims[i] = shape[i]
        rc.strides[i] = strides[i]
    rc.dtype = resolved["dtype"]
    rc.host_only = resolved["device"] is None
    rc.meta_dims, rc.meta_halo, rc.meta_layout = (resolved["dims"], resolved["halo"],
                                                  resolved["layout"])
    rc.meta_alignment, rc.meta_aligned_index = resolved["alignment"], resolved["aligned_index"]
    rc.resolved, rc.plan = resolved, plan
    return rc


cdef object _view(HostBlock block, Py_ssize_t offset, int nd, cnp.npy_intp *dims,
                  cnp.npy_intp *strides, cnp.dtype dtype):
    """An ndarray over ``block`` (its base) at ``offset`` bytes."""
    Py_INCREF(dtype)                  # PyArray_NewFromDescr steals the descriptor
    arr = PyArray_NewFromDescr(<PyTypeObject *> cnp.ndarray, dtype, nd, dims, strides,
                               block.ptr + offset, cnp.NPY_ARRAY_WRITEABLE, None)
    cnp.set_array_base(arr, block)
    return arr


cdef object _field(Recipe rc, bint zero, bint in_block, Py_ssize_t *offset):
    """The field view of a new allocation for ``rc`` (``in_block``: always
    over a HostBlock, its base); ``offset[0]`` gets the field's byte offset
    in the block.

    A recipe of order 1 (C) or 2 (F) is a contiguous field without padding:
    NumPy allocates it then, as ``np.empty`` / ``np.zeros`` would (one
    object, NumPy's allocator), and it is kept when its start meets the
    alignment (always, for an alignment of 1).  Alignments above malloc's
    16 bytes, which such a start would meet only by chance, go to a block
    at once."""
    if rc.order and rc.alignment <= 16 and not in_block:
        Py_INCREF(rc.dtype)           # PyArray_Empty / PyArray_Zeros steal the descriptor
        if zero:
            arr = PyArray_Zeros(rc.nd, rc.dims, rc.dtype, rc.order == 2)
        else:
            arr = PyArray_Empty(rc.nd, rc.dims, rc.dtype, rc.order == 2)
        if rc.alignment == 1 or (<size_t> rc.inner_offset - <size_t> cnp.PyArray_DATA(arr)) \
                % <size_t> rc.alignment == 0:
            offset[0] = 0
            return arr
    cdef HostBlock block = _block(rc.alloc_bytes, zero)
    cdef Py_ssize_t off = <Py_ssize_t> ((<size_t> rc.inner_offset - <size_t> block.ptr)
                                        % <size_t> rc.alignment)
    offset[0] = off
    return _view(block, off, rc.nd, rc.dims, rc.strides, rc.dtype)


def host_field(Recipe rc, bint zero):
    """(field view, raw uint8 view of the whole allocation, byte offset of
    the field in it) for ``rc``, always in a HostBlock (the raw view is the
    span a device copy moves).

    ``alignment`` is a power of two, so the offset computed with unsigned
    wrap-around is the true residue."""
    cdef Py_ssize_t off = 0
    arr = _field(rc, zero, True, &off)
    cdef HostBlock block = <HostBlock> cnp.PyArray_BASE(arr)
    cdef cnp.npy_intp n = max(block.nbytes, 0)
    cdef cnp.npy_intp one = 1
    raw = _view(block, 0, 1, &n, &one, np.dtype(np.uint8))
    return arr, raw, off


cdef bint _plain_value(object v):
    if v is None or type(v) is int or type(v) is str:
        return True
    if type(v) is tuple:
        for x in <tuple> v:
            if not _plain_value(x):
                return False
        return True
    return False


cpdef object cache_key(shape, dtype, dict kwargs):
    """A key for the creation cache, or None when an argument is not made of
    exact ints, strings, None and tuples (a float, a bool or a list that
    compares equal to a valid value must take the validating path)."""
    if not _plain_value(shape):
        return None
    if isinstance(dtype, np.dtype) and (dtype.names is not None or dtype.metadata is not None):
        # dtypes equal to a cached one but not the same: align=True structs,
        # metadata= (before, a later call got the cached dtype; review 18)
        return None
    if not kwargs:
        return (shape, dtype)
    for v in kwargs.values():
        if not _plain_value(v):
            return None
    return (shape, dtype, tuple(kwargs.items()))


# -- the cached path of empty() / zeros() -------------------------------------
cdef Py_ssize_t RECIPES_MAX = 512

# the last few plain argument sets and their recipes, matched without hashing
cdef enum:
    N_RECENT = 8


cdef inline bint _same(object a, object b):
    """``a`` means what the cached plain value ``b`` means."""
    return a is b or (_plain_value(a) and a == b)


cdef class Creator:
    """``empty`` and ``zeros`` with a cache of resolved keywords in C.

    Built by nclx.storage.creation with what sits above this compiled module:
    ``resolve(shape, dtype, kwargs)`` (the validating path: a Recipe, on a
    cache miss), ``allocate(resolved, plan, zero)`` (device storages),
    ``cpu_class`` and ``cpu_buffer`` (host storages).  Nothing is handed to
    the module itself: each Creator owns its cache."""
    cdef readonly dict recipes        # cache_key -> Recipe
    cdef object _resolve
    cdef object _allocate
    cdef type _cpu_class
    cdef object _cpu_buffer
    cdef list _recent                 # (shape, dtype, kwargs, Recipe) x N_RECENT
    cdef Py_ssize_t _next_recent

    def __init__(self, resolve, allocate, type cpu_class, cpu_buffer):
        self.recipes = {}
        self._resolve, self._allocate = resolve, allocate
        self._cpu_class, self._cpu_buffer = cpu_class, cpu_buffer
        self._recent = [None] * N_RECENT
        self._next_recent = 0

    cdef object _recent_hit(self, shape, dtype, dict kwargs):
        cdef object e
        cdef dict kw
        for e in self._recent:
            if e is None:
                return None
            if (<tuple> e)[1] is not dtype or not _same(shape, (<tuple> e)[0]):
                continue
            kw = (<tuple> e)[2]
            if len(kw) != len(kwargs):
                continue
            for k, v in kwargs.items():
                if not _same(v, kw.get(k, self._recent)):
                    break
            else:
                return (<tuple> e)[3]
        return None

    cdef void _remember(self, shape, dtype, dict kwargs, hit):
        self._recent[self._next_recent] = (shape, dtype, dict(kwargs), hit)   # a copy: callers' dicts may change
        self._next_recent = (self._next_recent + 1) % N_RECENT

    cpdef object create(self, shape, dtype, dict kwargs, bint zero):
        """A new storage: ``zero`` fills it with zeros, else contents are undefined."""
        cdef object hit = self._recent_hit(shape, dtype, kwargs)
        cdef object key
        cdef Py_ssize_t off = 0
        cdef Recipe rc
        if hit is None:
            key = cache_key(shape, dtype, kwargs)
            if key is not None:
                try:
                    hit = self.recipes.get(key)
                except TypeError:          # an unhashable dtype argument
                    key = None
            if hit is None:
                hit = self._resolve(shape, dtype, kwargs)
                if key is not None and len(self.recipes) < RECIPES_MAX:
                    self.recipes[key] = hit
            if key is not None:
                self._remember(shape, dtype, kwargs, hit)
        rc = <Recipe?> hit             # checked: a resolver returning anything else raises
        if not rc.host_only:
            return self._allocate(rc.resolved, rc.plan, zero)
        host = _field(rc, zero, False, &off)
        return new_storage(self._cpu_class, self._cpu_buffer, host, None, rc.meta_dims,
                           rc.meta_halo, rc.meta_layout, rc.meta_alignment, rc.meta_aligned_index)

    def empty(self, shape, dtype=np.float64, **kwargs):
        """A storage with undefined contents.

        Keywords (GDP-3; each optional): ``aligned_index``, ``alignment_size``
        (bytes), ``defaults`` ("F", "C", "gtx86", "gtcuda"), ``device`` (None or
        "gpu"), ``dims``, ``halo`` (int or (lo, hi) per dimension), ``layout``,
        ``managed`` (None, "gt4py" or "cuda").  Any other keyword raises
        StorageTypeError naming it."""
        return self.create(shape, dtype, kwargs, False)

    def zeros(self, shape, dtype=np.float64, **kwargs):
        """A storage filled with zeros (keywords as :func:`empty`)."""
        return self.create(shape, dtype, kwargs, True)
