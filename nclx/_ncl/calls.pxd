# The Call a Python hook sees (nclx._ncl.calls).
from nclx._ncl.ncl cimport ncl_node, ncl_call, ncl_loop_fn


cdef class Call:
    cdef ncl_node *node
    cdef ncl_call *call
    cdef readonly bint punted
    cdef readonly bint ran            # run_numpy()/run_nclx() wrote the loop's output
    cdef readonly object loop_error   # the Python error a loop set under next()
    cdef list _mirrors          # per operand: (mirror array, shared with operand j or -1)
    cdef int busy               # next()/run_*() calls running now (any thread)
    cdef bint closing           # the hook returned: no next()/run_*() may start

    @staticmethod
    cdef Call wrap(ncl_node *node, ncl_call *call)
    cdef int _check(self) except -1
    cdef int _end(self) except -1
    cdef int _close(self) except -1
    cdef int _run_loop(self, ncl_loop_fn loop) except -1
    cdef int _copy_in(self) except -1
    cdef int _flush(self) except -1
