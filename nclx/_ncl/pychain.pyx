# cython: wraparound=True, boundscheck=True
"""Walking the python-level chains: ``run_python_chain`` hands a ufunc call
(``__call__``, ``reduce``, ...) to each Python hook in turn as a
:class:`PyCall`, and the call's ``final`` function performs it at the
chain's end.

Reached from nclx-aware arrays' ``__array_ufunc__`` (nclx.aware) and, with
``install(python_funnel=True)``, from plain ndarrays' ufunc call entry
(nclx._ncl.pyfunnel).  With no python-level hook the call goes straight to
``final``.
"""
from nclx._ncl.ncl cimport ncl_node, ncl_chain, NCL_NSUBSYSTEMS, NCL_NODE_DEFAULT
from nclx._ncl.registry cimport ncl_python_chain
from nclx._ncl.walk cimport ncl_chain_is_default, ncl_readers_enter, ncl_readers_leave
from nclx._ncl.registry import HookError, SUBSYSTEMS

cdef extern from "ncl_atomic.h":
    void *ncl_load_ptr(void **p) nogil


cdef class PyCall:
    """A ufunc call on its way down a Python-level chain.

    ``ufunc``, ``method`` ("__call__", "reduce", ...), ``inputs`` and
    ``kwargs`` may be changed before ``next()``; ``next()`` returns the
    result of the rest of the chain, which a hook returns in turn.
    """
    cdef ncl_node *node
    cdef object final
    cdef readonly str subsystem
    cdef public object ufunc
    cdef public str method
    cdef public tuple inputs
    cdef public dict kwargs

    def next(self):
        cdef ncl_node *nxt
        if self.node == NULL:
            raise RuntimeError("this call has ended")
        nxt = <ncl_node *>ncl_load_ptr(<void **>&self.node.next)
        return _walk_python(nxt, self)

    def __repr__(self):
        return f"<nclx PyCall {getattr(self.ufunc, '__name__', self.ufunc)}.{self.method} ({self.subsystem})>"


cdef object _walk_python(ncl_node *node, PyCall c):
    cdef ncl_node *saved = c.node
    if node == NULL or (node.flags & NCL_NODE_DEFAULT):     # the chain's end
        return c.final(c.ufunc, c.method, c.inputs, c.kwargs)
    c.node = node
    try:
        return (<object>node.obj)(c)
    finally:
        c.node = saved


def run_python_chain(int subsystem, ufunc, str method, tuple inputs, dict kwargs, final):
    """Walk the Python chain of ``subsystem``; ``final(ufunc, method, inputs,
    kwargs)`` performs the call at its end."""
    cdef ncl_chain *ch
    cdef PyCall c
    if not 0 <= subsystem < NCL_NSUBSYSTEMS:
        raise HookError(f"no subsystem number {subsystem}")
    ch = ncl_python_chain(subsystem)
    if ncl_chain_is_default(ch):
        return final(ufunc, method, inputs, kwargs)
    c = PyCall.__new__(PyCall)
    c.final = final
    c.subsystem = SUBSYSTEMS[subsystem]
    c.ufunc = ufunc
    c.method = method
    c.inputs = inputs
    c.kwargs = kwargs
    ncl_readers_enter()
    try:
        return _walk_python(<ncl_node *>ncl_load_ptr(<void **>&ch.head), c)
    finally:
        ncl_readers_leave()
