# cython: wraparound=True, boundscheck=True
"""Python faces of the hook registry: registering hooks, the Call a hook
sees, Kernel and Handle.

The C side is nclx._ncl.registry (chains, nodes) and nclx._ncl.walk
(walking without the GIL); python-level chains are walked by
nclx._ncl.pychain; what hooks raise inside loops is kept by
nclx._ncl.hookerrors; a Python hook runs as a C node through nclx._ncl.pyhook.

Buffers handed to Python hooks (``Call.views()``, ``Kernel.__call__``) are
private mirrors of the loop's operands (nclx._ncl.calls).
"""

cimport numpy as cnp
import operator

from nclx._ncl.ncl cimport (npy_intp, ncl_call, ncl_node, ncl_chain, ncl_hook_fn, NCL_SUB_REDUCE,
                           NCL_NODE_LINKED, NCL_NSLOTS, NCL_MAX_ARGS)
from nclx._ncl.overlap cimport ncl_each_element, ncl_element_call
from nclx._ncl.pyhook cimport ncl_python_hook_fn, ncl_python_kernel_loop
from nclx._ncl.registry cimport (ncl_python_chain, ncl_funnel_chain, ncl_kernel_chain,
                                 ncl_new_node, ncl_link, ncl_unlink, ncl_discard, ncl_chain_names)
from nclx._ncl.walk cimport ncl_call_next
from nclx._ncl.hookerrors cimport ncl_hook_record
from nclx._ncl.hookerrors import watch as _watch_node
from nclx._ncl import registry as _registry
from nclx._ncl.registry import HookError, LEVELS, SUBSYSTEMS, POSITIONS, collect, reset
from nclx._ncl.targets import kernel_chain_name

cnp.import_array()

cdef extern from *:
    """
    /* the node whose Kernel.loop this thread runs (review 18) */
    static __thread void *ncl_kernel_node_tls = NULL;
    """
    void *ncl_kernel_node_tls


cdef int _python_level_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    return 0   # python-level nodes are walked from Python, never from C


# ------------------------------------------------------------------ Kernel

cdef class Kernel:
    """Base class of kernel-level hooks.

    Python authors subclass it and implement ``__call__(self, inputs, out)``
    on 1-d arrays (private mirrors of the loop's buffers, see
    :meth:`Call.views`; ``out`` is written back when ``__call__`` returns)
    and optionally ``reduce(self, values, acc)``; returning
    ``NotImplemented`` passes the call on to the next node.  Cython authors
    ``cimport`` it and override the nogil ``loop`` method instead, which
    works on the loop's buffers directly::

        from nclx._ncl.hooks cimport Kernel, ncl_call, NCL_SUB_REDUCE
        cdef class Twice(Kernel):
            cdef int loop(self, char **args, const npy_intp *dimensions,
                          const npy_intp *steps, ncl_call *call) noexcept nogil:
                ...            # write the output; return 0, or 1 to punt
    """

    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil:
        # The Python face: take the GIL, show the buffers as mirrors (one
        # element at a time where the output feeds an input: ncl_each_element; an
        # element passed on passes the whole call on, whose loop recomputes
        # every element in order from the untouched first input)
        cdef int rc = 1
        cdef ncl_call one
        cdef char *ones[NCL_MAX_ARGS]
        cdef npy_intp dims[1]
        cdef npy_intp k
        if ncl_each_element(call):
            for k in range(call.dimensions[0]):
                ncl_element_call(call, &one, ones, dims, k)
                with gil:
                    rc = _python_kernel_loop(self, &one)
                if rc != 0:
                    return rc
            return 0
        with gil:
            rc = _python_kernel_loop(self, call)
        return rc

    def __call__(self, inputs, out):
        """Compute ``out`` from ``inputs`` (1-d arrays); NotImplemented punts."""
        return NotImplemented

    def reduce(self, values, acc):
        """Fold ``values`` into ``acc`` (a 1-element array); NotImplemented punts."""
        return NotImplemented


cdef int _python_kernel_loop(Kernel k, ncl_call *call) noexcept with gil:
    cdef ncl_node *node = <ncl_node *>ncl_kernel_node_tls    # (for the error record)
    if node != NULL and node.obj != <void *>k:
        node = NULL             # (loop() called by other code than its node)
    return ncl_python_kernel_loop(k, call, node)


cdef int _kernel_node_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    global ncl_kernel_node_tls
    cdef void *outer = ncl_kernel_node_tls
    cdef int rc
    ncl_kernel_node_tls = <void *>node
    rc = (<Kernel>node.obj).loop(call.args, call.dimensions, call.steps, call)
    ncl_kernel_node_tls = outer
    if rc != 0:
        return ncl_call_next(node, call)
    return 0


# ---------------------------------------------------------- registration

cdef class Handle:
    """A registered hook; ``remove()`` takes it out of its chain.

    Also a context manager: ``with register(...):`` removes it on exit.
    """
    cdef ncl_node *node
    cdef size_t address
    cdef object serial
    cdef object _final
    cdef readonly str level
    cdef readonly object target
    cdef readonly str name
    cdef readonly object hook
    cdef object __weakref__

    cdef bint _alive(self):
        """Its node is not freed (the address may be another node's once it is)."""
        return _registry.node_serial(self.address) == self.serial

    def __reduce__(self):
        # (before: Cython's "self.node cannot be converted to a Python object
        # for pickling"; review 23)
        raise TypeError("a hook Handle cannot be pickled: it refers to a node of this "
                        "process's hook chains")

    def remove(self):
        """Take the hook out of its chain (idempotent; safe while loops run)."""
        cdef ncl_node *node = self.node
        if node == NULL:
            return
        self.node = NULL
        if not self._alive():
            return          # hooks.reset() already removed it and the node was freed
        ncl_unlink(node)

    @property
    def removed(self):
        if self.node != NULL and (not self._alive()
                                  or not (self.node.flags & NCL_NODE_LINKED)):
            # reset() took it (freed, or unlinked while a loop still ran it)
            self.node = NULL
        return self.node == NULL

    def _freed(self, record):
        """Its node is being freed: keep the node's last error record."""
        if record is not None:
            self._final = record

    def _pin(self):
        """Keep this hook through hooks.reset() (nclx's own modes: their
        blocks remove it)."""
        if not self.removed:
            _registry.pin(self.address)

    cdef tuple _record(self):
        if self._alive():       # (also removed, while a loop still runs it)
            return ncl_hook_record(self.address) or (0, None)
        return self._final or (0, None)

    @property
    def errors(self):
        """How many exceptions the hook raised inside loops."""
        return self._record()[0]

    @property
    def last_error(self):
        """The last exception the hook raised inside a loop, or None."""
        return self._record()[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        # (the property: it sees a node hooks.reset() took; before, the
        # handle read "active" after reset(); found by review)
        state = "removed" if self.removed else "active"
        return f"<nclx hook {self.name!r} on {self.level} {self.target!r} ({state})>"


cdef Handle _attach(str level, object target, ncl_chain *chain, str name, ncl_hook_fn fn,
                    void *data, object obj, object position, object before, object after):
    cdef ncl_node *node
    cdef Handle h
    cdef int pos
    anchor = None
    if before is not None and after is not None:
        raise HookError("give at most one of before= and after=")
    if before is not None:
        position, anchor = "before", before
    elif after is not None:
        position, anchor = "after", after
    if position not in POSITIONS:
        raise HookError(f"position must be one of {tuple(POSITIONS)}, not {position!r}")
    if anchor is not None and not isinstance(anchor, str):
        raise TypeError(f"{position}= must be a node name (str), not {type(anchor).__name__}")
    pos = POSITIONS[position]
    node = ncl_new_node(name, fn, data, NULL, obj)
    try:
        ncl_link(chain, node, pos, anchor)
    except BaseException:
        ncl_discard(node)
        raise
    h = Handle.__new__(Handle)
    h.node = node
    h.address = <size_t>node
    h.serial = _registry.node_serial(<size_t>node)
    h.level = level
    h.target = target
    h.name = name
    h.hook = obj
    _watch_node(h.serial, h)
    # last: freeing retired nodes may run a __del__ that frees this node too
    # (hooks.reset()); the handle then reads removed (review 18)
    collect()
    return h


cdef ncl_chain *_resolve_chain(object level, object target) except NULL:
    if level in ("python", "funnel"):
        if not isinstance(target, str) or target not in SUBSYSTEMS:
            raise HookError(f"{level} target must be a subsystem {SUBSYSTEMS}, not {target!r}")
        s = SUBSYSTEMS.index(target)
        return ncl_python_chain(s) if level == "python" else ncl_funnel_chain(s)
    if level == "kernel":
        return ncl_kernel_chain(kernel_chain_name(target))
    raise HookError(f"level must be one of {LEVELS}, not {level!r}")


def chain(level, target):
    """Names of the nodes of one chain, front to back."""
    return ncl_chain_names(_resolve_chain(level, target))


def chains():
    """Every chain that has nodes beyond its defaults: {(level, target): names}."""
    return _registry.user_chains()


def _default_name(hook):
    name = getattr(hook, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(hook, "__name__", None) or type(hook).__name__


def register(level, target, hook, position="front", *, name=None, before=None, after=None):
    """Put a hook into a chain; returns a :class:`Handle`.

    Parameters
    ----------
    level : {"python", "funnel", "kernel"}
    target : str or tuple
        A subsystem ("compare", "binary", "unary", "reduce") for the python
        and funnel levels; an (op, dtype) pair such as ``("add", "int64")``
        for the kernel level.
    hook : callable or Kernel
        Python hooks are called with a call object and pass it on with
        ``call.next()``.  At the kernel level a :class:`Kernel` instance
        (Python or Cython subclass) computes the loop itself.
    position : {"front", "back", "before", "after"}
        Where to insert; "back" is just before the chain's default nodes
        (and before the nodes of an open ``nclx.checked()`` block there);
        "before"/"after" need ``before=``/``after=``.
    name : str, optional
        Node name (default: the hook's ``name`` or ``__name__``), kept whole.
    before, after : str, optional
        Insert before / after the node of that name instead.
    """
    cdef ncl_chain *chain = _resolve_chain(level, target)
    cdef ncl_hook_fn fn
    if name is None:
        name = _default_name(hook)
    if not isinstance(name, str) or not name:
        raise HookError(f"hook name must be a non-empty string, not {name!r}")
    if isinstance(hook, Kernel):
        if level != "kernel":
            raise HookError(f"a Kernel belongs at the kernel level, not {level!r}")
        fn = _kernel_node_fn
    elif callable(hook):
        fn = _python_level_fn if level == "python" else ncl_python_hook_fn
    else:
        raise TypeError(f"hook must be callable or a Kernel, not {type(hook).__name__}")
    return _attach(level, target, chain, name, fn, NULL, hook, position, before, after)


def _address(value, what):
    """An address given as a Python int: in [0, SIZE_MAX], else an error
    naming the argument (before, -1 raised a bare "can't convert negative
    value to size_t"; review 23)."""
    if isinstance(value, bool):
        raise TypeError(f"register_c({what}=...) takes an int address, not bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"register_c({what}=...) takes an int address, not "
                        f"{type(value).__name__}") from None
    if not 0 <= v <= <size_t>-1:
        raise ValueError(f"register_c({what}=...) must be an address in [0, 2**{8 * sizeof(size_t)}), "
                         f"not {v}")
    return v


def register_c(level, target, fn_address, data_address=0, *, name,
               keepalive=None, position="front", before=None, after=None):
    """Put a C hook (``int fn(ncl_node *, ncl_call *)``, no GIL) into a funnel
    or kernel chain from Python.  ``data_address`` becomes ``node.data``;
    ``keepalive`` is an object the node holds a reference to (e.g. the owner
    of data).  Compiled code uses the C API instead (nclx.h, ``hook_add``)."""
    cdef size_t fn_at = _address(fn_address, "fn_address")
    cdef size_t data_at = _address(data_address, "data_address")
    cdef ncl_chain *chain = _resolve_chain(level, target)
    if level == "python":
        raise HookError("C hooks belong at the funnel or kernel level")
    if fn_at == 0:
        raise HookError("fn_address is NULL")
    return _attach(level, target, chain, name, <ncl_hook_fn>fn_at, <void *>data_at,
                   keepalive, position, before, after)
