# cython: wraparound=False, boundscheck=False
"""The recycling data allocator: a NumPy data-allocation handler (NEP 49)
that keeps freed blocks of 1 MiB and more for the next allocation of the
same size class (ncl_recycle.h); smaller blocks go to NumPy's default
handler.

``handler()`` is the ``mem_handler`` capsule; ``set_handler`` /
``current_handler`` wrap ``PyDataMem_SetHandler`` / ``GetHandler`` (the
handler of the *current context*: NumPy keeps it in a contextvar).  The
cache keeps blocks only while active (``set_active(True)``, done by
``nclx.install(recycle=True)``); inactive, big blocks are unmapped when freed.
"""
cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport PyObject
from libc.stdint cimport uint64_t

cnp.import_array()

cdef extern from "ncl_recycle.h" nogil:
    ctypedef struct PyDataMem_Handler:
        pass
    ctypedef struct ncl_rc_state:
        size_t cap, cached_bytes, cached_blocks
        uint64_t hits, misses, mapped, unmapped
        int active
        int hugepages
    ncl_rc_state ncl_rc
    PyDataMem_Handler ncl_rc_handler
    size_t NCL_RC_MIN
    size_t NCL_RC_HDR
    int ncl_rc_init(object default_capsule) except -1
    size_t ncl_rc_trim(size_t keep)
    size_t ncl_rc_class(size_t size)
    void ncl_rc_lock "pthread_mutex_lock"(void *m)
    void ncl_rc_unlock "pthread_mutex_unlock"(void *m)
    void *ncl_rc_lockp "(&ncl_rc.lock)"

cdef extern from "numpy/arrayobject.h":
    object PyDataMem_GetHandler()

cdef extern from *:
    """
    static PyObject *ncl_rc_set_handler(PyObject *h) { return PyDataMem_SetHandler(h); }
    """
    object ncl_rc_set_handler(PyObject *h)

import contextvars

# NumPy's default handler: the contextvar's value in an empty context
_numpy_default = contextvars.Context().run(PyDataMem_GetHandler)
ncl_rc_init(_numpy_default)

#: requested bytes from which blocks are recycled
MIN_BYTES = NCL_RC_MIN
#: bytes of nclx's header in front of each block's data
HEADER_BYTES = NCL_RC_HDR

_capsule = PyCapsule_New(&ncl_rc_handler, "mem_handler", NULL)


def handler():
    """The handler's ``mem_handler`` capsule (one object for the process)."""
    return _capsule


def current_handler():
    """The handler NumPy uses for new arrays in the current context."""
    return PyDataMem_GetHandler()


def set_handler(h):
    """Make ``h`` (a ``mem_handler`` capsule; None: NumPy's default) the
    current context's handler; returns the previous one."""
    if h is None:
        return ncl_rc_set_handler(NULL)
    return ncl_rc_set_handler(<PyObject *>h)


def numpy_default():
    """NumPy's default handler capsule (the one small blocks go to)."""
    return _numpy_default


def is_ours(h):
    """True if ``h`` is this handler's capsule."""
    return h is _capsule


def set_active(bint flag):
    """Keep freed big blocks (True) or unmap them at once (False, which also
    empties the cache).  Returns the previous state."""
    cdef int prev
    ncl_rc_lock(ncl_rc_lockp)
    prev = ncl_rc.active
    ncl_rc.active = flag
    ncl_rc_unlock(ncl_rc_lockp)
    if not flag:
        ncl_rc_trim(0)
    return bool(prev)


def is_active():
    """True while freed big blocks are cached."""
    return bool(ncl_rc.active)


def trim(keep=0):
    """Unmap cached blocks until at most ``keep`` bytes stay cached; returns
    the bytes released to the OS."""
    k = int(keep)
    if k < 0:
        raise ValueError(f"trim(keep=...) must be >= 0, not {keep!r}")
    cdef size_t kk = k
    with nogil:
        r = ncl_rc_trim(kk)
    return r


def cap(n=None):
    """The most bytes the cache keeps; with ``n``, set it (and trim to it)."""
    cdef size_t c
    if n is not None:
        if type(n) is bool or not hasattr(type(n), "__index__"):
            raise TypeError(f"cap takes an int (bytes), not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"cap must be >= 0, not {n}")
        if n > <size_t>-1:
            raise ValueError(f"cap must be at most {<size_t>-1} (a size_t), not {n}")
        c = n
        ncl_rc_lock(ncl_rc_lockp)
        ncl_rc.cap = c
        ncl_rc_unlock(ncl_rc_lockp)
        ncl_rc_trim(c)
    return ncl_rc.cap


def hugepages(flag=None):
    """Whether new big mappings are madvise'd MADV_HUGEPAGE; with ``flag``, set it."""
    if flag is not None:
        ncl_rc.hugepages = bool(flag)
    return bool(ncl_rc.hugepages)


def size_class(size_t size):
    """Bytes mapped for a big block of ``size`` data bytes (header included)."""
    return ncl_rc_class(size)


def stats():
    """The cache now: cached_bytes, cached_blocks, hits, misses, cap (all
    process-wide), plus mapped/unmapped counts of big blocks and active."""
    ncl_rc_lock(ncl_rc_lockp)
    d = {"cached_bytes": ncl_rc.cached_bytes, "cached_blocks": ncl_rc.cached_blocks,
         "hits": ncl_rc.hits, "misses": ncl_rc.misses, "cap": ncl_rc.cap,
         "mapped": ncl_rc.mapped, "unmapped": ncl_rc.unmapped,
         "active": bool(ncl_rc.active)}
    ncl_rc_unlock(ncl_rc_lockp)
    return d
