# cython: wraparound=False, boundscheck=False
"""``np.sort``'s copy and its order check in one pass (NCLib's Sort subsystem).

``np.sort(a)`` is NumPy's Python function: ``a.copy(order="K")``, then
``copy.sort()``.  The two are separate calls, so a sort of data already in
order reads it twice: NumPy's copy writes it, then the sort entry's
in-order check (nclx._ncl.sortrun) reads it back from memory.  Under
``install()`` this module puts a C function in ``np.sort``'s dispatcher as
its implementation (the dispatcher object, hence ``np.sort is ...`` and
``__array_function__`` overrides, stay NumPy's).  It takes a call where
the one-pass copy gives the same array NumPy's function would return --
an exact ``numpy.ndarray``, aligned, C-contiguous, native byte order, of
a fixed-width dtype, at least ``min_bytes()`` (4 MiB) of it, 1-d (or
``axis=None``), ``order=None``, a kind nclx knows, nobody watching the
sort or copy ops (no hook, no ledger, no ``checked()`` mode) -- and hands
every other call to NumPy's implementation unchanged.

It copies ``a`` on the team in blocks of 2,048 elements (with
non-temporal stores from copyrun's streaming size on), checking each
block for NumPy's order while the block is in the cache, until a block
has a descent.  Data in order is its own sort where the sort cannot move
equal keys (a stable sort; any sort of bool or integers: equal integers
are the same bits) and is returned as it is; else the copy is sorted in
place by ``copy.sort(...)`` with the caller's ``kind``/``stable``, as
NumPy's function does.  ``uninstall()`` puts NumPy's implementation back.
"""
cimport numpy as cnp
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS
from nclx._ncl.sortjob cimport ncl_part
from nclx._ncl.callops cimport ncl_callop_slot, ncl_callop_quiet
from nclx._ncl.copyrun cimport ncl_stream_at
import numpy as np

from nclx._ncl import spec

cnp.import_array()

cdef extern from "ncl_order.h" nogil:
    int ncl_is_sorted(int dt, const char *v, npy_intp n)

cdef extern from "ncl_stream.h" nogil:
    void ncl_stream_copy(char *d, const char *s, size_t n)

cdef extern from *:
    """
    #include <numpy/arrayobject.h>
    /* the head of NumPy's _ArrayFunctionDispatcher (numpy/_core/src/
     * multiarray/arrayfunction_override.c, NumPy 2.0-2.5): the dispatcher
     * calls default_impl when no argument overrides the function */
    typedef struct {
        PyObject_HEAD
        vectorcallfunc vectorcall;
        PyObject *dict;
        PyObject *relevant_arg_func;
        PyObject *default_impl;
    } ncl_dispatcher_head;
    static PyObject **ncl_sc_impl_field(PyObject *d) { return &((ncl_dispatcher_head *)d)->default_impl; }
    static PyObject **ncl_sc_dict_field(PyObject *d) { return &((ncl_dispatcher_head *)d)->dict; }
    static Py_ssize_t ncl_sc_head_size(void) { return (Py_ssize_t)sizeof(ncl_dispatcher_head); }

    /* NumPy's implementation (a reference nclx keeps from the first
     * swap on: a caller still holding nclx's function after uninstall()
     * reaches NumPy's through it), whether the one-pass path is on, and
     * the Cython side of it */
    static PyObject *ncl_sc_numpy = NULL;
    static int ncl_sc_on = 0;
    static PyObject *(*ncl_sc_try)(PyObject *a, PyObject *axis, PyObject *kind, PyObject *stable) = NULL;
    static npy_intp ncl_sc_min = (npy_intp)4 << 20;

    static int ncl_sc_name(PyObject *k, const char *s)
    {
        return PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, s) == 0;
    }

    /* np.sort(a, axis=-1, kind=None, order=None, *, stable=None): the
     * dispatcher has checked the argument names against its own signature;
     * anything not taken here is NumPy's implementation's, as given */
    static PyObject *ncl_sc_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
    {
        PyObject *a, *axis = NULL, *kind = Py_None, *order = Py_None, *stable = Py_None, *r;
        Py_ssize_t i, nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        (void)self;
        if (ncl_sc_numpy == NULL) {
            PyErr_SetString(PyExc_SystemError, "nclx: np.sort's implementation is not known");
            return NULL;
        }
        if (!ncl_sc_on || nargs < 1 || nargs > 4 || ncl_sc_try == NULL
                || !PyArray_CheckExact(args[0])
                || (npy_intp)PyArray_NBYTES((PyArrayObject *)args[0]) < ncl_sc_min)
            goto numpy;
        a = args[0];
        if (nargs > 1) axis = args[1];
        if (nargs > 2) kind = args[2];
        if (nargs > 3) order = args[3];
        for (i = 0; i < nk; i++) {
            PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
            /* a name also given by position: NumPy's function raises */
            if (ncl_sc_name(k, "axis") && nargs < 2) axis = v;
            else if (ncl_sc_name(k, "kind") && nargs < 3) kind = v;
            else if (ncl_sc_name(k, "order") && nargs < 4) order = v;
            else if (ncl_sc_name(k, "stable")) stable = v;
            else goto numpy;
        }
        if (order != Py_None)
            goto numpy;
        r = ncl_sc_try(a, axis, kind, stable);
        if (r != Py_None)
            return r;                   /* the sorted copy, or NULL with an error */
        Py_DECREF(r);
    numpy:
        return PyObject_Vectorcall(ncl_sc_numpy, args, nargs, kwnames);
    }

    /* the dispatcher's implementation field: nclx's function in (on=1) or
     * NumPy's back (on=0), references moved as the field's owner's */
    static void ncl_sc_put(PyObject **field, PyObject *v)
    {
        PyObject *old = *field;
        Py_INCREF(v);
        *field = v;
        Py_XDECREF(old);
    }
    static void ncl_sc_keep(PyObject *numpy_impl)
    {
        if (ncl_sc_numpy == NULL) {
            Py_INCREF(numpy_impl);
            ncl_sc_numpy = numpy_impl;
        }
    }
    static PyObject *ncl_sc_kept(void) { return ncl_sc_numpy; }
    static void ncl_sc_set_on(int on) { ncl_sc_on = on; }
    static PyObject *ncl_sc_empty(PyArrayObject *a, npy_intp n)
    {   /* a 1-d array of n items of a's dtype (its descriptor, as NumPy's copy keeps it) */
        PyArray_Descr *d = PyArray_DESCR(a);
        Py_INCREF(d);
        return PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, NULL, NULL, 0, NULL);
    }
    static PyMethodDef ncl_sc_def = {
        "sort", (PyCFunction)(void (*)(void))ncl_sc_call, METH_FASTCALL | METH_KEYWORDS,
        "sort(a, axis=-1, kind=None, order=None, *, stable=None)\\n--\\n\\n"
        "nclx's implementation of np.sort under install(): the copy and the in-order "
        "check in one pass (nclx._ncl.sortcopy); NumPy's otherwise"};
    static PyObject *ncl_sc_new_function(void) { return PyCFunction_New(&ncl_sc_def, NULL); }
    static void ncl_sc_set_min(npy_intp m) { ncl_sc_min = m; }
    static npy_intp ncl_sc_get_min(void) { return ncl_sc_min; }
    static int ncl_sc_load(const int *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static void ncl_sc_store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    static void ncl_sc_count(int64_t *p) { __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
    static int64_t ncl_sc_read(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    """
    PyObject **ncl_sc_impl_field(PyObject *d) noexcept
    PyObject **ncl_sc_dict_field(PyObject *d) noexcept
    Py_ssize_t ncl_sc_head_size() noexcept
    object (*ncl_sc_try)(PyObject *a, PyObject *axis, PyObject *kind, PyObject *stable)
    void ncl_sc_put(PyObject **field, PyObject *v) noexcept
    void ncl_sc_keep(PyObject *numpy_impl) noexcept
    PyObject *ncl_sc_kept() noexcept
    void ncl_sc_set_on(int on) noexcept
    object ncl_sc_empty(cnp.ndarray a, npy_intp n)
    object ncl_sc_new_function()
    void ncl_sc_set_min(npy_intp m) noexcept
    npy_intp ncl_sc_get_min() noexcept
    int ncl_sc_load(const int *p) noexcept nogil
    void ncl_sc_store(int *p, int v) noexcept nogil
    void ncl_sc_count(int64_t *p) noexcept nogil
    int64_t ncl_sc_read(const int64_t *p) noexcept nogil

cdef enum:
    NTYPES = 32               # NumPy's built-in type numbers are below this
    BLOCK = 2048              # elements copied, then checked while in the cache

cdef int _dt[NTYPES]          # type number -> ncl dtype number, or -1
cdef int _copy_slot[NTYPES]   # -> the copy op's call slot
cdef int _sort_slot[NTYPES]   # -> the sort op's call slot
cdef int64_t _taken = 0       # calls this module copied (stats())
cdef int64_t _in_order = 0    # ... of which the copy was returned as it was

_function = None              # the C function put in np.sort's dispatcher
_numpy_impl = None            # NumPy's implementation, as layout() found it
_why = None                   # '' once layout() held, else why not


cdef struct copy_job:
    const char *src
    char *dst
    npy_intp n
    npy_intp isz
    int dt
    int stream
    int descent               # set by the first thread that sees one: the others stop checking
    int ordered[MAX_THREADS]


cdef inline void _put(copy_job *j, char *d, const char *s, npy_intp bytes) noexcept nogil:
    if j.stream:
        ncl_stream_copy(d, s, <size_t>bytes)
    else:
        memcpy(d, s, <size_t>bytes)


cdef void _t_copy(void *ctx, int tid, int nth) noexcept nogil:
    """Copy this thread's part in blocks, each read once into a buffer in
    the cache, checked there (with the element before it) and written from
    it: the bytes checked are the bytes written, whatever another thread
    writes to the source meanwhile.  After a block with a descent (here or
    in another thread) the rest is copied straight."""
    cdef copy_job *j = <copy_job *>ctx
    cdef npy_intp s = ncl_part(j.n, tid, nth), e = ncl_part(j.n, tid + 1, nth)
    cdef npy_intp m, bytes, isz = j.isz
    cdef int check = 1, first = 1
    # the element before the block at data - isz, the block at data (8-aligned)
    cdef uint64_t buf[BLOCK + 1]
    cdef char *data = <char *>&buf[1]
    while s < e:
        m = e - s if e - s < BLOCK else BLOCK
        bytes = m * isz
        if check and ncl_sc_load(&j.descent):
            check = 0
        if not check:
            _put(j, j.dst + s * isz, j.src + s * isz, bytes)
            s += m
            continue
        memcpy(data, j.src + s * isz, <size_t>bytes)
        if first:
            check = ncl_is_sorted(j.dt, data, m)
            first = 0
        else:
            check = ncl_is_sorted(j.dt, data - isz, m + 1)
        if not check:
            ncl_sc_store(&j.descent, 1)
        _put(j, j.dst + s * isz, data, bytes)
        memcpy(data - isz, data + (m - 1) * isz, <size_t>isz)
        s += m
    j.ordered[tid] = check


cdef int _copy_check(copy_job *j) noexcept nogil:
    """Copy j.src to j.dst on the team; 1 when the copy is in NumPy's order
    (each part checked by its thread, the pairs across parts in j.dst)."""
    cdef int nth = ncl_threads_now(), t
    cdef npy_intp b
    if nth > MAX_THREADS:
        nth = MAX_THREADS
    if nth > j.n // BLOCK:
        nth = <int>(j.n // BLOCK) if j.n >= BLOCK else 1
    j.descent = 0
    for t in range(MAX_THREADS):
        j.ordered[t] = 0
    if nth < 2:
        _t_copy(j, 0, 1)
        return j.ordered[0]
    ncl_team_run(nth, _t_copy, j)
    if ncl_sc_load(&j.descent):
        return 0
    for t in range(nth):
        if not j.ordered[t]:
            return 0
    for t in range(1, nth):
        b = ncl_part(j.n, t, nth)
        if b > 0 and not ncl_is_sorted(j.dt, j.dst + (b - 1) * j.isz, 2):
            return 0
    return 1


cdef object _try(PyObject *ap, PyObject *axis, PyObject *kindp, PyObject *stablep):
    """The sorted copy of ``a``, or None where NumPy's function takes the call."""
    global _taken, _in_order
    cdef cnp.ndarray a = <cnp.ndarray>ap
    cdef cnp.ndarray out
    cdef object kind = <object>kindp, stable = <object>stablep
    cdef int t = cnp.PyArray_TYPE(a), stab, flat = 0, ordered
    cdef cnp.npy_intp n
    cdef copy_job j
    if t < 0 or t >= NTYPES or _dt[t] < 0 or not cnp.PyArray_ISNOTSWAPPED(a) \
            or not cnp.PyArray_ISALIGNED(a) or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        return None
    if axis == NULL:
        if cnp.PyArray_NDIM(a) != 1:
            return None
    elif <object>axis is None:
        flat = 1
    elif type(<object>axis) is int and (<object>axis == -1 or <object>axis == 0):
        if cnp.PyArray_NDIM(a) != 1:
            return None
    else:
        return None
    if stable is None:
        if kind is None or (type(kind) is str and kind in ("quicksort", "heapsort")):
            stab = 0
        elif type(kind) is str and kind in ("stable", "mergesort"):
            stab = 1
        else:
            return None
    elif kind is None and (stable is True or stable is False):
        stab = stable is True
    else:
        return None
    if _dt[t] >= 9 and not stab:
        # an unstable float sort may order equal keys of different bits
        # (-0.0 / 0.0, NaN payloads) its own way: NumPy's function
        return None
    if not ncl_callop_quiet(_copy_slot[t]) or not ncl_callop_quiet(_sort_slot[t]):
        return None
    n = cnp.PyArray_SIZE(a)
    out = ncl_sc_empty(a, n)
    j.src = <const char *>cnp.PyArray_DATA(a)
    j.dst = <char *>cnp.PyArray_DATA(out)
    j.n = n
    j.isz = cnp.PyArray_ITEMSIZE(a)
    j.dt = _dt[t]
    j.stream = n * j.isz >= ncl_stream_at()
    with nogil:
        ordered = _copy_check(&j)
    ncl_sc_count(&_taken)
    if ordered:
        ncl_sc_count(&_in_order)
        return out
    out.sort(axis=-1, kind=kind, order=None, stable=stable)
    return out


def layout():
    """'' when ``np.sort`` is NumPy 2.0-2.5's dispatcher whose
    implementation nclx can swap (its head read where nclx expects it:
    the instance dict and ``_implementation`` found at their places), else
    why not.  Reads only."""
    global _why, _numpy_impl
    if _why is not None:
        return _why
    d = np.sort
    tp = type(d)
    if tp.__name__ != "_ArrayFunctionDispatcher" or tp.__basicsize__ < ncl_sc_head_size():
        _why = f"np.sort is a {tp.__module__}.{tp.__name__}, not NumPy 2's dispatcher"
        return _why
    impl = getattr(d, "_implementation", None)
    if impl is None or ncl_sc_impl_field(<PyObject *>d)[0] != <PyObject *>impl:
        _why = "np.sort's dispatcher does not hold its _implementation where nclx expects"
        return _why
    if tp.__dictoffset__ != <Py_ssize_t>(<char *>ncl_sc_dict_field(<PyObject *>d) - <char *><PyObject *>d) \
            or ncl_sc_dict_field(<PyObject *>d)[0] != <PyObject *>d.__dict__:
        _why = "np.sort's dispatcher's fields are not NumPy 2.0-2.5's"
        return _why
    if getattr(impl, "__name__", None) != "sort" or impl.__code__.co_varnames[:5] != (
            "a", "axis", "kind", "order", "stable"):
        _why = "np.sort's implementation is not NumPy's sort(a, axis, kind, order, *, stable)"
        return _why
    _numpy_impl = impl
    _why = ""
    return _why


def swap_in():
    """Put nclx's implementation in np.sort's dispatcher; True when it is
    there now (False where layout() failed or np.sort's implementation is
    not NumPy's any more: np.sort stays as it is)."""
    global _function
    cdef PyObject **field
    if layout():
        return False
    field = ncl_sc_impl_field(<PyObject *>np.sort)
    if _function is None:
        _function = ncl_sc_new_function()
    if field[0] != <PyObject *>_function:
        if field[0] != <PyObject *>_numpy_impl:
            return False
        ncl_sc_keep(field[0])
        ncl_sc_put(field, <PyObject *>_function)
    ncl_sc_set_on(1)
    return True


def swap_out():
    """Put NumPy's implementation back; (restored, foreign): foreign is 1
    when someone else had replaced nclx's meanwhile (NumPy's goes back all
    the same)."""
    cdef PyObject **field
    cdef PyObject *numpy_impl = ncl_sc_kept()
    ncl_sc_set_on(0)
    if numpy_impl == NULL or layout():
        return 0, 0
    field = ncl_sc_impl_field(<PyObject *>np.sort)
    if field[0] == numpy_impl:
        return 0, 0
    foreign = field[0] != <PyObject *>_function
    ncl_sc_put(field, numpy_impl)
    return 1, int(foreign)


def is_swapped():
    """True while nclx's implementation is np.sort's."""
    return _function is not None and not layout() and \
        ncl_sc_impl_field(<PyObject *>np.sort)[0] == <PyObject *>_function


def min_bytes(n=None):
    """Bytes of the smallest array np.sort copies in one pass (default
    4 MiB; smaller ones: NumPy's copy, then the sort entry's check); with
    ``n``, set it and return the old value."""
    old = ncl_sc_get_min()
    if n is not None:
        if not 0 <= n <= (1 << 62):
            raise ValueError(f"min_bytes must be in [0, 2**62], not {n}")
        ncl_sc_set_min(n)
    return old


def stats():
    """(calls copied in one pass, of which returned as they were) since import."""
    return ncl_sc_read(&_taken), ncl_sc_read(&_in_order)


def _init():
    global ncl_sc_try
    cdef int t
    for t in range(NTYPES):
        _dt[t] = -1
        _copy_slot[t] = -1
        _sort_slot[t] = -1
    for name in spec.ALL:
        d = np.dtype(name)
        t = d.num
        if 0 <= t < NTYPES:
            _dt[t] = spec.ALL.index(name)
            _copy_slot[t] = ncl_callop_slot("copy", name)
            _sort_slot[t] = ncl_callop_slot("sort", name)
    ncl_sc_try = _try

_init()
