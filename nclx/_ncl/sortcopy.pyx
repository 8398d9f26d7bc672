# cython: wraparound=False, boundscheck=False
"""``np.sort``'s copy and its order check in one pass (NCLib's Sort subsystem).

``np.sort(a)`` is NumPy's Python function: ``a.copy(order="K")``, then
``copy.sort()``.  The two are separate calls, so a sort of data already in
order reads it twice: NumPy's copy writes it, then the sort entry's
in-order check (nclx._ncl.sortrun) reads it back from memory.  Under
``install()`` this module puts its own C entry in the vectorcall field of
``np.sort``'s dispatcher (the object, its ``_implementation``, its
signature and ``__array_function__`` overrides stay NumPy's).  It takes a
call where
the one-pass copy gives the same array NumPy's function would return --
an exact ``numpy.ndarray``, aligned, C-contiguous, native byte order, of
int64, uint64 or float64 (``ncl_copycheck.h``'s keys), at least
``min_bytes()`` (4 MiB) of it, 1-d (or ``axis=None``), ``order=None``, a
kind nclx knows, nobody watching the sort or copy ops (no hook, no ledger,
no ``checked()`` mode).  Another call of an exact ndarray whose arguments
fit np.sort's signature goes straight to NumPy's implementation (what the
dispatcher would call, without its Python relevant-argument call); any
other call is NumPy's dispatcher's, unchanged.

It copies ``a`` on the team (non-temporal stores from copyrun's streaming
size on), each thread comparing every element it writes with the one
before from the same registers (ncl_copycheck.h), then the pairs across
the threads' parts in the copy.  Data in order is its own sort where the
sort cannot move equal keys (a stable sort; any sort of integers: equal
integers are the same bits) and is returned as it is; else the copy is
sorted in place by ``copy.sort(...)`` with the caller's ``kind`` /
``stable``, as NumPy's function does.  ``uninstall()`` puts NumPy's
vectorcall back.
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

cnp.import_array()

cdef extern from "ncl_copycheck.h" nogil:
    int NCL_CC_I64, NCL_CC_U64, NCL_CC_F64
    int ncl_copy_check(int kind, char *d, const char *x, npy_intp n, int stream)
    int ncl_cc_desc(int kind, uint64_t cur, uint64_t prev)
    int ncl_cc_vector
    int ncl_cc_has_vector()

cdef extern from "ncl_npsort.h":
    PyObject **ncl_sc_impl_field(PyObject *d) noexcept
    PyObject **ncl_sc_dict_field(PyObject *d) noexcept
    Py_ssize_t ncl_sc_head_size() noexcept
    int ncl_sc_vectorcall_at_head(PyObject *d) noexcept
    object (*ncl_sc_try)(PyObject *a, PyObject *axis, PyObject *kind, PyObject *stable)
    int ncl_sc_is_ours(PyObject *d) noexcept
    int ncl_sc_is_numpys(PyObject *d) noexcept
    int ncl_sc_in(PyObject *d) noexcept
    void ncl_sc_remember(PyObject *d) noexcept
    int ncl_sc_out(PyObject *d) noexcept
    object ncl_sc_empty(cnp.ndarray a, npy_intp n)
    void ncl_sc_set_min(npy_intp m) noexcept
    npy_intp ncl_sc_get_min() noexcept
    void ncl_sc_count(int64_t *p) noexcept nogil
    int64_t ncl_sc_read(const int64_t *p) noexcept nogil

cdef enum:
    NTYPES = 32               # NumPy's built-in type numbers are below this
    PART = 4096               # the fewest elements a thread copies

cdef int _kind[NTYPES]        # type number -> NCL_CC_* (int64, uint64, float64), or -1
cdef int _copy_slot[NTYPES]   # -> the copy op's call slot
cdef int _sort_slot[NTYPES]   # -> the sort op's call slot
cdef int64_t _taken = 0       # calls this module copied (stats())
cdef int64_t _in_order = 0    # ... of which the copy was returned as it was

_why = None                   # '' once layout() held, else why not
_dispatcher = None            # np.sort's dispatcher as layout() found it (the one swapped)


cdef struct copy_job:
    const char *src
    char *dst
    npy_intp n
    int kind                  # NCL_CC_I64, NCL_CC_U64, NCL_CC_F64
    int stream
    int parts                 # the parts copied (by however many threads the team gives)
    int ordered[MAX_THREADS]


cdef void _t_copy(void *ctx, int tid, int nth) noexcept nogil:
    """Copy parts tid, tid + nth, ... of j.parts, checking the order of
    what is written (the team may give fewer threads than asked for)."""
    cdef copy_job *j = <copy_job *>ctx
    cdef npy_intp s, e
    cdef int r = tid
    while r < j.parts:
        s = ncl_part(j.n, r, j.parts)
        e = ncl_part(j.n, r + 1, j.parts)
        j.ordered[r] = ncl_copy_check(j.kind, j.dst + s * 8, j.src + s * 8, e - s, j.stream)
        r += nth


cdef int _copy_check(copy_job *j) noexcept nogil:
    """Copy j.src to j.dst on the team; 1 when the copy is in NumPy's order
    (each part checked as it is copied, the pairs across parts in j.dst)."""
    cdef int parts = ncl_threads_now(), r
    cdef npy_intp b
    cdef uint64_t before, first
    if parts > MAX_THREADS:
        parts = MAX_THREADS
    if parts > j.n // PART:
        parts = <int>(j.n // PART) if j.n >= PART else 1
    j.parts = parts
    for r in range(MAX_THREADS):
        j.ordered[r] = 0
    if parts < 2:
        _t_copy(j, 0, 1)
    else:
        ncl_team_run(parts, _t_copy, j)
    for r in range(parts):
        if not j.ordered[r]:
            return 0
    for r in range(1, parts):
        b = ncl_part(j.n, r, parts)
        memcpy(&before, j.dst + (b - 1) * 8, 8)
        memcpy(&first, j.dst + b * 8, 8)
        if ncl_cc_desc(j.kind, first, before):
            return 0
    return 1


cdef object _try(PyObject *ap, PyObject *axis, PyObject *kindp, PyObject *stablep):
    """The sorted copy of ``a``, or None where NumPy's function takes the call."""
    global _taken, _in_order
    cdef cnp.ndarray a = <cnp.ndarray>ap
    cdef cnp.ndarray out
    cdef object kind = <object>kindp, stable = <object>stablep
    cdef int t = cnp.PyArray_TYPE(a), stab, ordered
    cdef cnp.npy_intp n
    cdef copy_job j
    if t < 0 or t >= NTYPES or _kind[t] < 0 or not cnp.PyArray_ISNOTSWAPPED(a) \
            or not cnp.PyArray_ISALIGNED(a) or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        return None
    if axis == NULL:
        if cnp.PyArray_NDIM(a) != 1:
            return None
    elif <object>axis is None:
        pass                    # flattened in C order: the same bytes
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
    if _kind[t] == NCL_CC_F64 and not stab:
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
    j.kind = _kind[t]
    j.stream = n * 8 >= ncl_stream_at()
    with nogil:
        ordered = _copy_check(&j)
    ncl_sc_count(&_taken)
    if ordered:
        ncl_sc_count(&_in_order)
        return out
    out.sort(axis=-1, kind=kind, order=None, stable=stable)
    return out


def layout():
    """'' when ``np.sort`` is NumPy 2.0-2.5's dispatcher whose vectorcall
    nclx can swap (its head read where nclx expects it: the vectorcall at
    the type's offset, the instance dict and ``_implementation`` found at
    their places), else why not.  Reads only."""
    global _why, _dispatcher
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
    if not ncl_sc_vectorcall_at_head(<PyObject *>d) or not ncl_sc_is_numpys(<PyObject *>d):
        _why = "np.sort's dispatcher is not called through the vectorcall nclx expects"
        return _why
    if getattr(impl, "__name__", None) != "sort" or impl.__code__.co_varnames[:5] != (
            "a", "axis", "kind", "order", "stable"):
        _why = "np.sort's implementation is not NumPy's sort(a, axis, kind, order, *, stable)"
        return _why
    _dispatcher = d
    _why = ""
    return _why


def swap_in():
    """Put nclx's vectorcall in np.sort's dispatcher; 1 when swapped now, 0
    when it was there already, where layout() failed or the dispatcher's
    vectorcall is somebody else's (then np.sort stays as it is)."""
    if layout():
        return 0
    return int(ncl_sc_in(<PyObject *>_dispatcher) == 1)


def swap_out():
    """Put NumPy's vectorcall back; (restored, foreign): foreign is 1 when
    someone else had replaced nclx's meanwhile (NumPy's goes back all the
    same)."""
    if layout():
        return 0, 0
    r = ncl_sc_out(<PyObject *>_dispatcher)
    return int(r > 0), int(r == 2)


def is_swapped():
    """True while nclx's vectorcall is np.sort's."""
    return not layout() and bool(ncl_sc_is_ours(<PyObject *>_dispatcher))


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


def vector(on=None):
    """Whether the copy checks four elements a vector (AVX2, where the CPU
    has it) or one at a time; with ``on``, set it (for tests) and return
    the old setting."""
    global ncl_cc_vector
    old = bool(ncl_cc_vector) and bool(ncl_cc_has_vector())
    if on is not None:
        ncl_cc_vector = 1 if on else 0
    return old


def stats():
    """(calls copied in one pass, of which returned as they were) since import."""
    return ncl_sc_read(&_taken), ncl_sc_read(&_in_order)


def _init():
    global ncl_sc_try
    cdef int t
    for t in range(NTYPES):
        _kind[t] = -1
        _copy_slot[t] = -1
        _sort_slot[t] = -1
    for name, kind in (("int64", NCL_CC_I64), ("uint64", NCL_CC_U64), ("float64", NCL_CC_F64)):
        t = np.dtype(name).num
        if 0 <= t < NTYPES:
            _kind[t] = kind
            _copy_slot[t] = ncl_callop_slot("copy", name)
            _sort_slot[t] = ncl_callop_slot("sort", name)
    ncl_sc_try = _try
    if not layout():
        ncl_sc_remember(<PyObject *>_dispatcher)

_init()
