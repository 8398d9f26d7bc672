# cython: wraparound=False, boundscheck=False
"""The call gate of ``@nclx.fuse`` (nclx.fused): a call whose first array
that is not 0-d has fewer elements than the fuse threshold runs the plain
function at once, with no Python frame in between (a fused function at
1,000 elements must cost what the plain one costs); other calls go to the
fused path, ``slow(args)``.  Keyword arguments run the plain function."""
import types

cimport numpy as cnp

cnp.import_array()

cdef Py_ssize_t _threshold = 1 << 15


def threshold(n=None):
    """The fewest elements a fused run takes; with ``n``, set it (>= 1)."""
    global _threshold
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"fuse_threshold takes an int >= 1, not {n!r}")
        _threshold = n
    return _threshold


cdef class FuseGate:
    """Calls ``fn(*args)`` directly below the threshold, else ``slow(args)``."""
    cdef readonly object fn
    cdef object slow

    def __init__(self, fn, slow):
        self.fn = fn
        self.slow = slow

    def __call__(self, *args, **kwargs):
        cdef cnp.ndarray a
        if kwargs:
            return self.fn(*args, **kwargs)
        for x in args:
            if type(x) is cnp.ndarray:
                a = <cnp.ndarray>x
                if cnp.PyArray_NDIM(a) > 0:
                    if cnp.PyArray_SIZE(a) < _threshold:
                        return self.fn(*args)
                    break
        return self.slow(args)

    def __get__(self, obj, objtype):
        """A method: bound to the instance (which, not an array, makes every
        call of it run the plain function)."""
        if obj is None:
            return self
        return types.MethodType(self, obj)
