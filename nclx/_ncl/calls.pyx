# cython: wraparound=True, boundscheck=True
"""The Call a funnel- or kernel-level Python hook sees, and the private
mirrors of the loop's buffers it hands out.

NumPy may free a loop's memory as soon as the loop returns, and a hook may
keep what it was given: Python hooks never see NumPy's memory.  Inputs are
copied in (read-only), the output is copied in and written back when the
hook returns or punts; operands that are the same memory (``a += b``, a
reduction's accumulator) share one mirror.

A call of the Sort, Mask, RNG or Create subsystems (nclx._ncl.callops)
gives each operand its own length (``dimensions[1 + i]``); its last operand
is the one written (the data a sort sorts in place, a selection's output).
"""
from cpython.exc cimport PyErr_Occurred
from libc.string cimport memcpy
from posix.unistd cimport usleep

cimport numpy as cnp
import numpy as np

from nclx._ncl.ncl cimport (npy_intp, ncl_call, ncl_node, ncl_loop_fn, ncl_dtype_name, NCL_SUB_REDUCE,
                           NCL_NSLOTS)
from nclx._ncl.walk cimport ncl_call_next
from nclx._ncl.registry import SUBSYSTEMS
from nclx._ncl.spec import ALL_OP_NAMES

cnp.import_array()

cdef extern from "<fenv.h>":
    int fetestexcept(int excepts) nogil
    int feclearexcept(int excepts) nogil
    int feraiseexcept(int excepts) nogil
    int FE_ALL_EXCEPT

#: id(Call) -> floating-point flags its loops raised under next()/run_*():
#: NumPy clears the flags around every ufunc call, so a hook's own NumPy
#: call after next() would erase the loop's; and a loop that another thread
#: ran left them on that thread.  The hook's runner raises them again on
#: the loop's thread when the hook ends (take_loop_flags).
_loop_flags = {}


cdef void _keep_flags(Call c, int raised) except *:
    if raised:
        key = id(c)
        _loop_flags[key] = _loop_flags.get(key, 0) | raised


def take_loop_flags(Call c):
    """The floating-point flags the loops ``c`` ran raised (cleared)."""
    return _loop_flags.pop(id(c), 0)


cdef object _raw_view(ncl_call *call, int i, npy_intp n, npy_intp stride):
    """A temporary zero-copy 1-d view of operand ``i`` (never handed out)."""
    return cnp.PyArray_New(np.ndarray, 1, &n, call.typenums[i], &stride,
                           <void *>call.args[i], 0, cnp.NPY_ARRAY_WRITEABLE, None)


cdef inline npy_intp _length(ncl_call *call, int i) noexcept:
    """Elements of operand ``i``: the loop's length, or a call op's own."""
    if call.slot >= NCL_NSLOTS:
        return call.dimensions[1 + i]
    return call.dimensions[0]


cdef int _pending_error() except -1:
    """Raises the Python error a loop left set."""
    return -1


cdef class Call:
    """One loop call as a hook sees it (valid only while the hook runs).

    Attributes: ``op``, ``dtypes`` (fixed-width names, output last),
    ``types`` (NumPy type characters), ``n`` (elements), ``subsystem``,
    ``is_reduce``.  ``next()`` passes the call on to the rest of the chain;
    ``views()`` returns private mirrors of the loop's buffers.
    """
    def __reduce__(self):
        # (before: Cython's "self.node cannot be converted ..."; review 23)
        raise TypeError("a hook Call cannot be pickled: it is valid only while its hook runs")

    @staticmethod
    cdef Call wrap(ncl_node *node, ncl_call *call):
        cdef Call c = Call.__new__(Call)
        _loop_flags.pop(id(c), None)     # left by a Call that had this id
        c.node = node
        c.call = call
        c.punted = False
        c.ran = False
        c._mirrors = None
        c.busy = 0
        c.closing = False
        return c

    cdef int _check(self) except -1:
        if self.call == NULL or self.closing:
            raise RuntimeError("this Call has ended: a hook may use it only while it runs")
        return 0

    cdef int _end(self) except -1:
        self._close()
        self._flush()
        self.call = NULL
        self.node = NULL
        return 0

    cdef int _close(self) except -1:
        """Wait for the next()/run_*() calls other threads started while
        the hook ran (a hook may hand its Call to a thread): the loop must
        not return before they end.  From here on none can start (the write
        back of the output after it releases the GIL)."""
        self.closing = True
        while self.busy > 0:
            with nogil:
                usleep(100)
        return 0

    cdef int _copy_in(self) except -1:
        """(Re)fill the mirrors from the loop's buffers."""
        cdef ncl_call *call = self.call
        cdef npy_intp n
        cdef int i, j
        cdef npy_intp stride
        cdef cnp.ndarray m
        if self._mirrors is None:
            self._mirrors = []
            for i in range(call.nargs):
                n = _length(call, i)
                shared = -1
                for j in range(i):
                    if call.args[j] == call.args[i] and call.steps[j] == call.steps[i] \
                            and call.typenums[j] == call.typenums[i]:
                        shared = j
                        break
                if shared >= 0:
                    self._mirrors.append((self._mirrors[shared][0], shared))
                    continue
                stride = call.steps[i]
                if stride == 0 and n > 0:
                    one = _raw_view(call, i, 1, 0).copy()
                    m = np.lib.stride_tricks.as_strided(one, (n,), (0,), writeable=True)
                else:
                    m = _raw_view(call, i, n, stride).copy()
                self._mirrors.append((m, -1))
            out = call.nargs - 1
            for i in range(out):
                m, shared = self._mirrors[i]
                if m is not self._mirrors[out][0]:
                    m.flags.writeable = False
            return 0
        for i in range(call.nargs):
            m, shared = self._mirrors[i]
            if shared >= 0:
                continue
            n = _length(call, i)
            stride = call.steps[i]
            if stride == 0:
                if n > 0:
                    memcpy(cnp.PyArray_DATA(m), call.args[i], m.itemsize)
            else:
                src = _raw_view(call, i, n, stride)
                wr = m.flags.writeable
                m.flags.writeable = True
                m[...] = src
                m.flags.writeable = wr
        return 0

    cdef int _flush(self) except -1:
        """Write the output's mirror back into the loop's output buffer."""
        cdef ncl_call *call
        cdef int out
        cdef npy_intp n
        cdef cnp.ndarray m
        if self._mirrors is None or self.call == NULL:
            return 0
        call = self.call
        out = call.nargs - 1
        n = _length(call, out)
        m = self._mirrors[out][0]
        if n == 0:
            return 0
        if call.steps[out] == 0:
            memcpy(call.args[out], cnp.PyArray_DATA(m), m.itemsize)
        else:
            dst = _raw_view(call, out, n, call.steps[out])
            dst[...] = m
        return 0

    def next(self):
        """Run the rest of the chain on this call (punt)."""
        self._check()
        if self.node == NULL:
            raise RuntimeError("a Kernel passes a call on by returning NotImplemented")
        cdef ncl_node *node = self.node
        cdef ncl_call *call = self.call
        cdef int before, raised
        self.busy += 1
        try:
            self._flush()
            self.punted = True
            with nogil:
                before = fetestexcept(FE_ALL_EXCEPT)
                feclearexcept(FE_ALL_EXCEPT)
                ncl_call_next(node, call)
                raised = fetestexcept(FE_ALL_EXCEPT)
                feraiseexcept(before | raised)
            if PyErr_Occurred() != NULL:
                # a loop set a Python error (NumPy's integer power with a
                # negative exponent): raised here and kept, so that the hook
                # that punted hands it on to NumPy (found by review: it was a
                # SystemError, reported as the hook's and lost)
                try:
                    _pending_error()
                except BaseException as exc:
                    self.loop_error = exc
                    _keep_flags(self, raised)
                    raise
            _keep_flags(self, raised)
            if self._mirrors is not None:
                self._copy_in()
        finally:
            self.busy -= 1

    def run_numpy(self):
        """Run NumPy's original loop on this call."""
        self._check()
        cdef ncl_call *call = self.call
        if call.numpy_loop == NULL:
            raise ValueError(f"{self.op} is nclx's own op: NumPy has no loop for it")
        self._run_loop(call.numpy_loop)

    def run_nclx(self):
        """Run nclx's own kernel on this call."""
        self._check()
        self._run_loop(self.call.nclx_loop)

    cdef int _run_loop(self, ncl_loop_fn loop) except -1:
        """Run ``loop`` on the call's buffers (counted in ``busy``, so the
        hook's end waits for it)."""
        cdef ncl_call *call = self.call
        cdef int before, raised
        self.busy += 1
        try:
            self._flush()
            self.ran = True
            with nogil:
                before = fetestexcept(FE_ALL_EXCEPT)
                feclearexcept(FE_ALL_EXCEPT)
                loop(call.args, call.dimensions, call.steps, call.data)
                raised = fetestexcept(FE_ALL_EXCEPT)
                feraiseexcept(before | raised)
            if PyErr_Occurred() == NULL:     # (a loop's Python error: as before)
                _keep_flags(self, raised)
            if self._mirrors is not None:
                self._copy_in()
        finally:
            self.busy -= 1
        return 0

    @property
    def op(self):
        self._check()
        return ALL_OP_NAMES[self.call.op]

    @property
    def dtypes(self):
        self._check()
        return tuple(ncl_dtype_name(self.call.dtypes[i]).decode() for i in range(self.call.nargs))

    @property
    def types(self):
        self._check()
        return "".join(np.dtype(cnp.PyArray_TypeObjectFromType(self.call.typenums[i])).char
                       for i in range(self.call.nargs))

    @property
    def n(self):
        self._check()
        return self.call.dimensions[0]

    @property
    def subsystem(self):
        self._check()
        return SUBSYSTEMS[self.call.subsystem]

    @property
    def is_reduce(self):
        self._check()
        return self.call.subsystem == NCL_SUB_REDUCE

    @property
    def node_name(self):
        self._check()
        return self.node.name.decode() if self.node != NULL else None

    def views(self):
        """(inputs, out): 1-d private mirrors of the loop's buffers.

        A call op's operands have their own lengths; its last operand is
        ``out`` (a sort's data: sort ``out`` in place to replace the sort).
        Inputs are read-only copies; ``out`` is written back to the loop's
        output when the hook returns or calls ``next()`` (and refreshed after
        ``next()``).  In a reduction ``inputs[0]`` and ``out`` are the same
        stride-0 accumulator; ``inputs[1]`` holds the values being reduced.
        The mirrors own their memory: keeping them after the hook is safe.
        """
        self._check()
        if self._mirrors is None:
            self._copy_in()
        ms = [m for m, _ in self._mirrors]
        return ms[:-1], ms[-1]


