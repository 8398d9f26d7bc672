# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem: nclx's entries (nclx._ncl.sortentry) swapped into
NumPy's sort and argsort slots and out again, the probe that checks NumPy
sorts through them, and the lane drivers of ``nclx.sort`` /
``nclx.argsort``.

``swap_in`` puts an entry of nclx in each ArrFuncs ``sort[kind]`` /
``argsort[kind]`` slot of the 13 type characters of the fixed-width dtypes
(keeping NumPy's function); ``swap_out`` puts NumPy's back.  Where NumPy
2.5+ sorts through per-DType ArrayMethods instead, nclx's methods go in
their place (nclx._ncl.sortmeth).
"""
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortjob cimport PyArray_SortFunc, PyArray_ArgSortFunc
from nclx._ncl.sortrows cimport ncl_rows_reset
from nclx._ncl.sortentry cimport (ncl_sort_entry, ncl_asort_entry, ncl_sort_fn, ncl_sort_isz,
                                  ncl_probe_start, ncl_probe_stop, ncl_probe_count)
import numpy as np

from nclx._ncl import spec
from nclx.errors import NclxInstallError
# the Sort settings live with the lane sort; nclx._ncl.sorting names them too
from nclx._ncl.sortrun import (fast_threshold, in_order_min, in_order_prefetch, in_order_team,
                               min_run, threshold)
from nclx._ncl.sortmerge import release, scratch_keep
from nclx._ncl.sortpart import vector_partition, vector_partition_here

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyArray_ArrFuncs:
        PyArray_SortFunc sort[3]
        PyArray_ArgSortFunc argsort[3]
    PyArray_ArrFuncs *PyDataType_GetArrFuncs(cnp.dtype descr)
    int NPY_NSORTS

cdef enum:
    NCHARS = 13

#: NumPy's type characters of the fixed-width dtypes, in slot order
CHARS = spec.NUMPY_CHAR_ORDER

cdef int _installed = 0


cdef inline PyArray_SortFunc _stock_sort(int c, int kind) noexcept:
    return <PyArray_SortFunc>ncl_sort_fn(c, kind, 0, 0)


cdef inline PyArray_ArgSortFunc _stock_asort(int c, int kind) noexcept:
    return <PyArray_ArgSortFunc>ncl_sort_fn(c, kind, 1, 0)


cdef inline PyArray_SortFunc _entry_sort(int c, int kind) noexcept:
    return <PyArray_SortFunc>ncl_sort_fn(c, kind, 0, 1)


cdef inline PyArray_ArgSortFunc _entry_asort(int c, int kind) noexcept:
    return <PyArray_ArgSortFunc>ncl_sort_fn(c, kind, 1, 1)


# ------------------------------------------------------------- swapping

#: NumPy's kind names -> ArrFuncs slot (NPY_QUICKSORT, NPY_HEAPSORT, NPY_STABLESORT)
KINDS = ("quicksort", "heapsort", "stable")


_unreached = None       # None: not probed yet; "": np.sort reaches the entries; else why not
_methods = None         # nclx._ncl.sortmeth once NumPy's sort ArrayMethods are nclx's way in


def _probe():
    """Sort a 3-element array of each dtype and kind with np.sort and
    np.argsort; the calls that did not reach nclx's entries."""
    missed = []
    ncl_probe_start()           # the GIL is held: no other writer
    try:
        for ch in CHARS:
            a = np.array([3, 1, 2], dtype=ch)
            for kind_name in KINDS:
                before = ncl_probe_count()
                np.sort(a, kind=kind_name)
                np.argsort(a, kind=kind_name)
                if ncl_probe_count() - before != 2:
                    missed.append(f"{np.dtype(ch)}/{kind_name}")
    finally:
        ncl_probe_stop()
    return missed


def _methods_in():
    """NumPy 2.5+: nclx's sort ArrayMethods in the DTypes' slots; '' when
    swapped, else why not."""
    global _methods
    if _methods is None:
        try:
            # built only against NumPy >= 2.4 headers; needed only where NumPy's
            # sorts bypass the ArrFuncs slots, so imported then (it cimports this module)
            from nclx._ncl import sortmeth
        except ImportError as exc:
            return f"nclx was built without NumPy 2.4+'s sort method API ({exc})"
        why = sortmeth.layout()
        if why:
            return why
        _methods = sortmeth
    _methods.swap_in()
    return ""


def swap_in(require=False):
    """Put nclx's entries in NumPy's sort/argsort slots of the fixed-width
    dtypes (and, where NumPy sorts through per-DType ArrayMethods, nclx's
    methods in their place: nclx._ncl.sortmeth); returns how many were
    swapped.

    The first time, a probe sorts a 3-element array of each dtype and kind
    with np.sort and np.argsort and counts the calls the entries get: a
    NumPy whose sorts reach neither gets its own back and keeps its sorts
    -- or, with ``require``, NclxInstallError."""
    global _installed, _unreached
    cdef int c, kind
    cdef PyArray_ArrFuncs *f
    if _installed:
        return 0
    if _unreached:
        if require:
            raise NclxInstallError(_unreached)
        return 0
    if NPY_NSORTS != 3:
        raise NclxInstallError(f"NumPy has {NPY_NSORTS} sort kinds; nclx knows 3")
    for c in range(NCHARS):
        f = PyDataType_GetArrFuncs(np.dtype(CHARS[c]))
        for kind in range(3):
            for which, now, stock in (("sort", <size_t>f.sort[kind], <size_t>_stock_sort(c, kind)),
                                      ("argsort", <size_t>f.argsort[kind],
                                       <size_t>_stock_asort(c, kind))):
                if now != stock:
                    raise NclxInstallError(
                        f"NumPy's {which} function for dtype {np.dtype(CHARS[c])} kind "
                        f"{KINDS[kind]!r} is not the one it had when nclx was imported "
                        f"(replaced by another library?)")
    count = 0
    for c in range(NCHARS):
        f = PyDataType_GetArrFuncs(np.dtype(CHARS[c]))
        for kind in range(3):
            if _stock_sort(c, kind) != NULL:
                f.sort[kind] = _entry_sort(c, kind)
                count += 1
            if _stock_asort(c, kind) != NULL:
                f.argsort[kind] = _entry_asort(c, kind)
                count += 1
    _installed = 1
    if _methods is not None:
        _methods.swap_in()
        count += 2 * NCHARS
    if _unreached is None:
        missed = _probe()
        why = ""
        if missed:
            why = _methods_in()
            if not why:
                count += 2 * NCHARS
                missed = _probe()
        if missed or why:
            swap_out()
            _unreached = (f"NumPy {np.__version__} does not sort through the ArrFuncs sort/"
                          f"argsort slots nclx replaces (missed: {', '.join(missed[:4])}"
                          f"{'...' if len(missed) > 4 else ''}); its sorts stay NumPy's"
                          + (f"; {why}" if why else ""))
            if require:
                raise NclxInstallError(_unreached)
            return 0
        _unreached = ""
    return count


def way_in():
    """How install() reaches NumPy's sorts here: 'slots' (ArrFuncs), 'methods'
    (NumPy 2.5's sort ArrayMethods, and the slots for np.lexsort), or None
    (not probed yet, or not reached: see reachable())."""
    if _unreached != "":
        return None
    return "methods" if _methods is not None else "slots"


def reachable():
    """'' when NumPy's sorts go through the slots nclx replaces (probed at
    the first install), the reason when not, None before any install."""
    return _unreached


def swap_out():
    """Put NumPy's sort/argsort functions back; returns (restored, foreign)
    where foreign counts slots somebody else had replaced meanwhile."""
    global _installed
    cdef int c, kind
    cdef PyArray_ArrFuncs *f
    if not _installed:
        return 0, 0
    restored = foreign = 0
    if _methods is not None:
        restored, foreign = _methods.swap_out()
    for c in range(NCHARS):
        f = PyDataType_GetArrFuncs(np.dtype(CHARS[c]))
        for kind in range(3):
            if _stock_sort(c, kind) != NULL:
                if f.sort[kind] != _entry_sort(c, kind):
                    foreign += 1
                f.sort[kind] = _stock_sort(c, kind)
                restored += 1
            if _stock_asort(c, kind) != NULL:
                if f.argsort[kind] != _entry_asort(c, kind):
                    foreign += 1
                f.argsort[kind] = _stock_asort(c, kind)
                restored += 1
    _installed = 0
    return restored, foreign


def is_swapped():
    """True while nclx's entries are in NumPy's sort slots."""
    return bool(_installed)


def slots():
    """{(type char, 'sort'|'argsort', kind): (NumPy's function, slot now)} as addresses."""
    cdef int c, kind
    cdef PyArray_ArrFuncs *f
    out = {}
    for c in range(NCHARS):
        f = PyDataType_GetArrFuncs(np.dtype(CHARS[c]))
        for kind in range(3):
            out[(CHARS[c], "sort", KINDS[kind])] = (<size_t>_stock_sort(c, kind), <size_t>f.sort[kind])
            out[(CHARS[c], "argsort", KINDS[kind])] = (<size_t>_stock_asort(c, kind),
                                                      <size_t>f.argsort[kind])
    return out


# ------------------------------------------- nclx.sort / nclx.argsort

cdef int _char_index(cnp.dtype dt) except -2:
    """Slot row of a native dtype of nclx's fixed widths, else -1."""
    if not dt.isnative or dt.char not in CHARS:
        return -1
    return CHARS.index(dt.char)


cdef extern from "ncl_pending.h":
    int ncl_raise_pending() except -1


def sort_lanes(cnp.ndarray b, int axis, int kind):
    """Sort ``b`` in place along ``axis`` (kind 0, 1 or 2) through the
    Sort entries, lane by lane as NumPy's ndarray.sort calls its slot (so
    the row batch and the threads apply).  False when ``b`` is not an
    aligned native array of nclx's dtypes with contiguous lanes: the caller
    sorts it NumPy's way."""
    cdef int c = _char_index(b.dtype), nd = b.ndim, d, m = 0, rc = 0
    cdef npy_intp n, r, rows = 1, q
    cdef npy_intp shape[64]
    cdef npy_intp stride[64]
    cdef char *base
    cdef char *p
    if c < 0 or not 0 <= kind < 3 or nd == 0 or nd > 64 or not b.flags.aligned \
            or not b.flags.writeable or _stock_sort(c, kind) == NULL:
        return False
    n = b.shape[axis]
    if b.size == 0 or n <= 1:
        return True
    if b.strides[axis] != b.itemsize:
        return False
    for d in range(nd):
        if d != axis:
            shape[m] = b.shape[d]
            stride[m] = b.strides[d]
            rows *= b.shape[d]
            m += 1
    base = <char *>cnp.PyArray_DATA(b)
    with nogil:
        for r in range(rows):
            p = base
            q = r
            d = m - 1
            while d >= 0:
                p += (q % shape[d]) * stride[d]
                q //= shape[d]
                d -= 1
            rc = ncl_sort_entry(c, kind, p, n, <void *>b)
            if rc < 0:
                break
        if rows > 1:
            ncl_rows_reset()
    ncl_raise_pending()
    if rc < 0:
        raise MemoryError("nclx.sort: a sort ran out of memory")
    return True


def argsort_lanes(cnp.ndarray vals, cnp.ndarray idx, int kind):
    """Argsort the rows of the C-contiguous 2-d ``vals`` into the
    C-contiguous intp ``idx`` of the same shape (kind 0, 1 or 2) through
    the Sort entries; False when ``vals`` is not an aligned native array of
    nclx's dtypes."""
    cdef int c = _char_index(vals.dtype), rc = 0
    cdef npy_intp n, r, rows, i
    cdef char *vb
    cdef npy_intp *ib
    if c < 0 or not 0 <= kind < 3 or vals.ndim != 2 or idx.ndim != 2 \
            or not vals.flags.c_contiguous or not idx.flags.c_contiguous \
            or idx.dtype.num != cnp.NPY_INTP or idx.shape[0] != vals.shape[0] \
            or idx.shape[1] != vals.shape[1] or _stock_asort(c, kind) == NULL:
        return False
    rows = vals.shape[0]
    n = vals.shape[1]
    vb = <char *>cnp.PyArray_DATA(vals)
    ib = <npy_intp *>cnp.PyArray_DATA(idx)
    with nogil:
        for r in range(rows):
            for i in range(n):
                ib[r * n + i] = i
            if n > 1:
                rc = ncl_asort_entry(c, kind, vb + r * n * ncl_sort_isz(c), ib + r * n, n, <void *>vals)
                if rc < 0:
                    break
    ncl_raise_pending()
    if rc < 0:
        raise MemoryError("nclx.argsort: a sort ran out of memory")
    return True
