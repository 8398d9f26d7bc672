# cython: wraparound=True, boundscheck=True
"""The hook registry: intrusive doubly linked chains of hook nodes.

Three levels (DESIGN.md, "Data flow of a + b"):

- ``python``: one chain per subsystem of Python callables, walked with the
  GIL by nclx-aware arrays' ``__array_ufunc__`` and, with
  ``install(python_funnel=True)``, by the ufunc call entry;
- ``funnel``: one chain per subsystem (compare, binary, unary, reduce) that
  every replaced NumPy loop walks first; it ends in the node that walks
- ``kernel``: one chain per (op, dtype), ending in nclx's kernel and NumPy's
  original loop, which stays reachable as the last node.

Readers walk chains without the GIL.  Writers hold the GIL; a node is
published with one release store once it is fully linked, and a removed node
is freed only when no reader is inside any chain (a reader count, taken only
off the fast path, tells).  A removed node keeps its ``next`` pointer, so a
hook that removes itself while it runs can still punt.
"""
from cpython.ref cimport PyObject, Py_XINCREF, Py_XDECREF
from libc.stdlib cimport calloc, free
from libc.string cimport strncpy

cimport numpy as cnp
import numpy as np
import sys

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn, ncl_dtype_name

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    static inline void *ncl_load_ptr(void *const *p) { return __atomic_load_n((void **)p, __ATOMIC_ACQUIRE); }
    static inline void ncl_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static long ncl_readers = 0;
    static inline void ncl_readers_enter(void) { __atomic_add_fetch(&ncl_readers, 1, __ATOMIC_SEQ_CST); }
    static inline void ncl_readers_leave(void) { __atomic_sub_fetch(&ncl_readers, 1, __ATOMIC_SEQ_CST); }
    static inline long ncl_readers_now(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); return __atomic_load_n(&ncl_readers, __ATOMIC_SEQ_CST); }
    static __thread int ncl_hook_depth = 0;
    static inline void ncl_status_or(int *p, int v) { __atomic_or_fetch(p, v, __ATOMIC_RELAXED); }
    static inline void ncl_status_count(long *p, long v) { __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }
    static inline int ncl_hook_depth_get(void) { return ncl_hook_depth; }
    static inline void ncl_hook_depth_add(int d) { ncl_hook_depth += d; }
    """
    void *ncl_load_ptr(void **p) nogil
    void ncl_store_ptr(void **p, void *v) nogil
    void ncl_readers_enter() nogil
    void ncl_readers_leave() nogil
    long ncl_readers_now() nogil
    int ncl_hook_depth_get() nogil
    void ncl_hook_depth_add(int d) nogil
    void ncl_status_or(int *p, int v) nogil
    void ncl_status_count(long *p, long v) nogil

SUBSYSTEMS = ("compare", "binary", "unary", "reduce")
LEVELS = ("python", "funnel", "kernel")


class HookError(ValueError):
    """A hook cannot be registered or removed as asked (names the chain and node)."""


# ----------------------------------------------------------------- walking

cdef inline ncl_node *_next_of(ncl_node *node) noexcept nogil:
    return <ncl_node *>ncl_load_ptr(<void **>&node.next)


cdef inline ncl_node *_head_of(ncl_chain *chain) noexcept nogil:
    return <ncl_node *>ncl_load_ptr(<void **>&chain.head)


cdef int ncl_call_next(ncl_node *node, ncl_call *call) noexcept nogil:
    """Pass the call on to the node after ``node`` ("punt")."""
    cdef ncl_node *nxt = _next_of(node)
    if nxt == NULL:
        return 0
    return nxt.fn(nxt, call)


cdef int ncl_call_chain(ncl_chain *chain, ncl_call *call) noexcept nogil:
    cdef ncl_node *head = _head_of(chain)
    return head.fn(head, call)


cdef bint ncl_chain_is_default(ncl_chain *chain) noexcept nogil:
    return _head_of(chain) == chain.default_head


cdef bint ncl_in_hook() noexcept nogil:
    return ncl_hook_depth_get() > 0


cdef int ncl_dispatch(ncl_chain *funnel, ncl_call *call) noexcept nogil:
    """Walk a funnel chain (and the kernel chain it ends in) for one loop call."""
    cdef int rc
    if ncl_hook_depth_get() > 0:
        # NumPy called from inside a Python hook: run the kernel unhooked,
        # or the hook would see its own calls (and recurse).
        call.nclx_loop(call.args, call.dimensions, call.steps, NULL)
        return 0
    ncl_readers_enter()
    rc = ncl_call_chain(funnel, call)
    ncl_readers_leave()
    return rc


# ----------------------------------------------------- default node bodies

cdef int _funnel_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    return ncl_call_chain(call.kernel_chain, call)


cdef int _nclx_kernel_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    # nclx's choice: its own kernel, or NumPy's loop where that measured faster
    if call.prefer_numpy:
        call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
    else:
        call.nclx_loop(call.args, call.dimensions, call.steps, NULL)
    return 0


cdef int _nclx_own_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    call.nclx_loop(call.args, call.dimensions, call.steps, NULL)
    return 0


cdef void ncl_status_add(ncl_call *call, int flag, long count) noexcept nogil:
    """Report a condition to the calling thread (atomic: chunks may run in parallel)."""
    if call.status != NULL:
        ncl_status_or(&call.status.flags, flag)
        ncl_status_count(&call.status.count, count)


cdef int _numpy_loop_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
    return 0


cdef int _python_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    return 0   # never called: Python chains are walked from Python


# ------------------------------------------------------------- the registry

cdef ncl_chain _funnel_chains[4]
cdef ncl_chain _python_chains[4]
cdef ncl_node _funnel_terminals[4]
cdef ncl_node _python_terminals[4]
cdef dict _kernel_chains = {}      # kernel name -> address of its ncl_chain
cdef ncl_node *_retired = NULL
cdef dict _errors = {}             # node address -> (count, last exception)


cdef void _set_name(char *dst, str name):
    b = name.encode()[:NCL_NAME_LEN - 1]
    strncpy(dst, b, NCL_NAME_LEN - 1)
    dst[NCL_NAME_LEN - 1] = 0


cdef void _init_default_node(ncl_node *node, ncl_chain *chain, str name, ncl_hook_fn fn):
    node.fn = fn
    node.data = NULL
    node.obj = NULL
    node.next = NULL
    node.prev = NULL
    node.chain = chain
    node.retired_next = NULL
    node.flags = NCL_NODE_DEFAULT | NCL_NODE_LINKED
    _set_name(node.name, name)


cdef void _init_chain(ncl_chain *chain, int level, int index, str name, ncl_node *head):
    chain.head = head
    chain.default_head = head
    chain.level = level
    chain.index = index
    _set_name(chain.name, name)


cdef _init_registry():
    cdef int s
    for s in range(4):
        _init_default_node(&_funnel_terminals[s], &_funnel_chains[s], "kernel", _funnel_terminal_fn)
        _init_chain(&_funnel_chains[s], NCL_LEVEL_FUNNEL, s, SUBSYSTEMS[s], &_funnel_terminals[s])
        _init_default_node(&_python_terminals[s], &_python_chains[s], "ufunc", _python_terminal_fn)
        _init_chain(&_python_chains[s], NCL_LEVEL_PYTHON, s, SUBSYSTEMS[s], &_python_terminals[s])

_init_registry()


cdef ncl_chain *ncl_funnel_chain(int subsystem) noexcept nogil:
    return &_funnel_chains[subsystem]


cdef ncl_chain *ncl_python_chain(int subsystem) noexcept nogil:
    return &_python_chains[subsystem]


cdef ncl_chain *ncl_kernel_chain(str name) except NULL:
    """The chain of one kernel (``add_int64``), created on first use."""
    cdef ncl_chain *chain
    cdef ncl_node *nodes
    addr = _kernel_chains.get(name)
    if addr is not None:
        return <ncl_chain *><size_t>addr
    chain = <ncl_chain *>calloc(1, sizeof(ncl_chain))
    nodes = <ncl_node *>calloc(2, sizeof(ncl_node))
    if chain == NULL or nodes == NULL:
        raise MemoryError()
    _init_default_node(&nodes[0], chain, "nclx", _nclx_kernel_fn)
    _init_default_node(&nodes[1], chain, "numpy", _numpy_loop_fn)
    nodes[0].next = &nodes[1]
    nodes[1].prev = &nodes[0]
    _init_chain(chain, NCL_LEVEL_KERNEL, len(_kernel_chains), name, &nodes[0])
    _kernel_chains[name] = <size_t>chain
    return chain


cdef ncl_node *ncl_new_node(str name, ncl_hook_fn fn, void *data, object obj) except NULL:
    cdef ncl_node *node = <ncl_node *>calloc(1, sizeof(ncl_node))
    if node == NULL:
        raise MemoryError()
    node.fn = fn
    node.data = data
    if obj is not None:
        node.obj = <PyObject *>obj
        Py_XINCREF(node.obj)
    _set_name(node.name, name)
    return node


cdef ncl_node *_find(ncl_chain *chain, str name):
    cdef ncl_node *node = chain.head
    b = name.encode()
    while node != NULL:
        if node.name == b:
            return node
        node = node.next
    return NULL


cdef ncl_node *_first_default(ncl_chain *chain):
    cdef ncl_node *node = chain.head
    while node != NULL and not (node.flags & NCL_NODE_DEFAULT):
        node = node.next
    return node


cdef void _link_before(ncl_chain *chain, ncl_node *node, ncl_node *target):
    node.chain = chain
    node.next = target
    node.prev = target.prev
    # publish: one release store makes the fully linked node reachable
    if target.prev != NULL:
        ncl_store_ptr(<void **>&target.prev.next, node)
    else:
        ncl_store_ptr(<void **>&chain.head, node)
    target.prev = node
    node.flags |= NCL_NODE_LINKED


cdef int ncl_link(ncl_chain *chain, ncl_node *node, str position, str anchor) except -1:
    """Insert ``node`` at ``position``: front, back (before the default
    nodes), before ``anchor`` or after ``anchor``."""
    cdef ncl_node *target
    chain_name = chain.name.decode()
    if node.flags & NCL_NODE_LINKED:
        raise HookError(f"node {node.name.decode()!r} is already in a chain")
    if _find(chain, node.name.decode()) != NULL:
        raise HookError(f"chain {chain_name!r} already has a node named {node.name.decode()!r}")
    if position == "front":
        target = chain.head
    elif position == "back":
        target = _first_default(chain)
    elif position in ("before", "after"):
        target = _find(chain, anchor)
        if target == NULL:
            raise HookError(f"chain {chain_name!r} has no node named {anchor!r}; "
                            f"it has {chain_names(chain)}")
        if position == "after":
            if target.next == NULL:
                raise HookError(f"nothing after {anchor!r} runs in chain {chain_name!r}: "
                                f"it is the chain's last node")
            target = target.next
    else:
        raise HookError(f"position must be 'front', 'back', 'before' or 'after', not {position!r}")
    _link_before(chain, node, target)
    return 0


cdef int ncl_set_default_front(ncl_chain *chain, ncl_node *node) except -1:
    """Make ``node`` (static storage) the first default node of ``chain``.

    Used once at import by nclx modules that add default behaviour (the
    threader); not while loops may run."""
    node.flags |= NCL_NODE_DEFAULT
    _link_before(chain, node, chain.default_head)
    chain.default_head = node
    return 0


cdef int ncl_unlink(ncl_node *node) except -1:
    """Unlink ``node`` from its chain and retire it (freed once no reader runs)."""
    global _retired
    cdef ncl_chain *chain = node.chain
    if node.flags & NCL_NODE_DEFAULT:
        raise HookError(f"{node.name.decode()!r} is a default node of chain "
                        f"{chain.name.decode()!r}; it cannot be removed")
    if not (node.flags & NCL_NODE_LINKED):
        return 0
    if node.prev != NULL:
        ncl_store_ptr(<void **>&node.prev.next, node.next)
    else:
        ncl_store_ptr(<void **>&chain.head, node.next)
    if node.next != NULL:
        node.next.prev = node.prev
    node.flags &= ~NCL_NODE_LINKED
    # node.next stays: a reader standing on this node can still punt.
    node.retired_next = _retired
    _retired = node
    collect()
    return 0


def collect():
    """Free retired nodes if no loop is inside a chain; return how many remain."""
    global _retired
    cdef ncl_node *node
    cdef ncl_node *nxt
    cdef int left = 0
    if _retired == NULL:
        return 0
    if ncl_readers_now() != 0:
        node = _retired
        while node != NULL:
            left += 1
            node = node.retired_next
        return left
    node = _retired
    _retired = NULL
    while node != NULL:
        nxt = node.retired_next
        _errors.pop(<size_t>node, None)
        Py_XDECREF(node.obj)
        free(node)
        node = nxt
    return 0


cdef list chain_names(ncl_chain *chain):
    cdef ncl_node *node = chain.head
    names = []
    while node != NULL:
        names.append(node.name.decode())
        node = node.next
    return names


cdef ncl_chain *_resolve_chain(str level, object target) except NULL:
    if level in ("python", "funnel"):
        if target not in SUBSYSTEMS:
            raise HookError(f"{level} target must be a subsystem {SUBSYSTEMS}, not {target!r}")
        s = SUBSYSTEMS.index(target)
        return &_python_chains[s] if level == "python" else &_funnel_chains[s]
    if level == "kernel":
        return ncl_kernel_chain(kernel_chain_name(target))
    raise HookError(f"level must be one of {LEVELS}, not {level!r}")


def kernel_chain_name(target):
    """``('add', 'int64')`` -> ``'add_int64'``; ``('equal', ('int64', 'uint64'))`` too."""
    from nclx._ncl import spec
    if isinstance(target, str):
        names = {name for *_, name in spec.all_kernels()}
        if target not in names:
            raise HookError(f"no nclx kernel named {target!r}")
        return target
    if not (isinstance(target, tuple) and len(target) == 2):
        raise HookError(f"kernel target must be (op, dtype), not {target!r}")
    op, dt = target
    if op not in spec.OPS:
        raise HookError(f"unknown op {op!r} in kernel target; ops: {', '.join(spec.OPS)}")
    ins = tuple(dt) if isinstance(dt, (tuple, list)) else (str(np.dtype(dt)) if dt != "bool" else "bool",) * spec.OPS[op][1]
    for lins, lout in spec.OPS[op][3]:
        if tuple(lins) == ins:
            return spec.kernel_name(op, lins, lout)
    raise HookError(f"nclx has no {op} kernel for dtype {dt!r}")


def chain(level, target):
    """Names of the nodes of one chain, front to back."""
    return chain_names(_resolve_chain(level, target))


def chains():
    """Every chain that has nodes beyond its defaults: {(level, target): names}."""
    out = {}
    cdef int s
    for s in range(4):
        if not ncl_chain_is_default(&_python_chains[s]):
            out[("python", SUBSYSTEMS[s])] = chain_names(&_python_chains[s])
        if not ncl_chain_is_default(&_funnel_chains[s]):
            out[("funnel", SUBSYSTEMS[s])] = chain_names(&_funnel_chains[s])
    for kname, addr in _kernel_chains.items():
        if not ncl_chain_is_default(<ncl_chain *><size_t>addr):
            out[("kernel", kname)] = chain_names(<ncl_chain *><size_t>addr)
    return out


cdef void _strip(ncl_chain *ch):
    cdef ncl_node *node = ch.head
    cdef ncl_node *nxt
    while node != NULL:
        nxt = node.next
        if not (node.flags & NCL_NODE_DEFAULT):
            ncl_unlink(node)
        node = nxt


def reset():
    """Remove every hook from every chain: the registry as nclx ships it."""
    cdef int s
    for s in range(4):
        _strip(&_python_chains[s])
        _strip(&_funnel_chains[s])
    for addr in _kernel_chains.values():
        _strip(<ncl_chain *><size_t>addr)
    return collect()


def readers():
    """Loop calls currently inside a chain (for tests)."""
    return ncl_readers_now()


# ----------------------------------------------------- Python-facing calls

cdef class Call:
    """One loop call as a hook sees it (valid only while the hook runs).

    Attributes: ``op``, ``dtypes`` (fixed-width names, output last),
    ``types`` (NumPy type characters), ``n`` (elements), ``subsystem``,
    ``is_reduce``.  ``next()`` passes the call on to the rest of the chain;
    ``views()`` returns NumPy views of the loop's buffers.
    """
    cdef ncl_node *node
    cdef ncl_call *call
    cdef readonly bint punted

    @staticmethod
    cdef Call wrap(ncl_node *node, ncl_call *call):
        cdef Call c = Call.__new__(Call)
        c.node = node
        c.call = call
        c.punted = False
        return c

    cdef int _check(self) except -1:
        if self.call == NULL:
            raise RuntimeError("this Call has ended: a hook may use it only while it runs")
        return 0

    cdef void _end(self):
        self.call = NULL
        self.node = NULL

    def next(self):
        """Run the rest of the chain on this call (punt)."""
        self._check()
        if self.node == NULL:
            raise RuntimeError("a Kernel passes a call on by returning NotImplemented")
        cdef ncl_node *node = self.node
        cdef ncl_call *call = self.call
        self.punted = True
        with nogil:
            ncl_call_next(node, call)

    def run_numpy(self):
        """Run NumPy's original loop on this call."""
        self._check()
        with nogil:
            _numpy_loop_fn(self.node, self.call)

    def run_nclx(self):
        """Run nclx's own kernel on this call."""
        self._check()
        with nogil:
            _nclx_own_fn(self.node, self.call)

    @property
    def op(self):
        from nclx._ncl import spec
        self._check()
        return list(spec.OPS)[self.call.op]

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
        return self.call.subsystem == 3

    @property
    def node_name(self):
        self._check()
        return self.node.name.decode()

    def views(self):
        """(inputs, out): 1-d NumPy views of the loop's buffers (no copy).

        In a reduction, ``inputs[0]`` and ``out`` are the same stride-0
        accumulator; ``inputs[1]`` holds the values being reduced.
        """
        self._check()
        cdef npy_intp n = self.call.dimensions[0]
        cdef npy_intp stride
        cdef int i
        views = []
        for i in range(self.call.nargs):
            stride = self.call.steps[i]
            descr = np.dtype(cnp.PyArray_TypeObjectFromType(self.call.typenums[i]))
            arr = cnp.PyArray_New(np.ndarray, 1, &n, self.call.typenums[i], &stride,
                                  <void *>self.call.args[i], 0, cnp.NPY_ARRAY_WRITEABLE, None)
            views.append(arr)
        return views[:self.call.nargs - 1], views[self.call.nargs - 1]


cdef void _report(object hook, str what):
    """Keep and report an exception raised by a hook inside a loop.

    NumPy does not check for Python errors after numeric loops, so the
    exception cannot travel through it: it goes to sys.unraisablehook and is
    kept for the hook's handle (``handle.last_error``, ``handle.errors``)."""
    exc = sys.exc_info()[1]
    count, _ = _errors.get(id(hook), (0, None))
    _errors[id(hook)] = (count + 1, exc)
    try:
        sys.unraisablehook(_Unraisable(exc, f"Exception ignored in nclx {what}", hook))
    except Exception:
        pass


def hook_errors(hook):
    """(count, last exception) of the exceptions a hook raised inside loops."""
    return _errors.get(id(hook), (0, None))


def _forget_errors(hook):
    _errors.pop(id(hook), None)


class _Unraisable:
    def __init__(self, exc, msg, obj):
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = msg
        self.object = obj


cdef int _run_python_hook(ncl_node *node, ncl_call *call) noexcept with gil:
    """Run a Python hook; 1 when the rest of the chain must still run."""
    cdef bint failed = False
    cdef bint punted
    ncl_hook_depth_add(1)
    hook = <object>node.obj
    c = Call.wrap(node, call)
    try:
        hook(c)
    except BaseException:
        _report(hook, f"hook {node.name.decode()!r}")
        failed = True
    punted = c.punted
    c._end()
    ncl_hook_depth_add(-1)
    # a failed hook must not lose the result: the rest of the chain computes it
    return 1 if (failed and not punted) else 0


cdef int _python_hook_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    """A Python callable at the funnel or kernel level (takes the GIL)."""
    if _run_python_hook(node, call):
        return ncl_call_next(node, call)
    return 0


# ------------------------------------------------------------------ Kernel

cdef class Kernel:
    """Base class of kernel-level hooks.

    Python authors subclass it and implement ``__call__(self, inputs, out)``
    on NumPy views of the loop's buffers (and optionally ``reduce(self,
    values, acc)``); returning ``NotImplemented`` passes the call on to the
    next node.  Cython authors ``cimport`` it and override the nogil
    ``loop`` method instead::

        from nclx._ncl.hooks cimport Kernel, ncl_call
        cdef class Twice(Kernel):
            cdef int loop(self, char **args, const npy_intp *dimensions,
                          const npy_intp *steps, ncl_call *call) noexcept nogil:
                ...            # write the output; return 0, or 1 to punt
    """

    cdef int loop(self, char **args, const npy_intp *dimensions,
                  const npy_intp *steps, ncl_call *call) noexcept nogil:
        # The Python face: take the GIL, show the buffers as NumPy views.
        cdef int rc = 1
        with gil:
            rc = _python_kernel_loop(self, call)
        return rc

    def __call__(self, inputs, out):
        """Compute ``out`` from ``inputs`` (1-d views); NotImplemented punts."""
        return NotImplemented

    def reduce(self, values, acc):
        """Fold ``values`` into ``acc`` (a 1-element view); NotImplemented punts."""
        return NotImplemented


cdef int _python_kernel_loop(Kernel k, ncl_call *call) noexcept with gil:
    cdef int rc = 1
    ncl_hook_depth_add(1)
    c = Call.wrap(NULL, call)
    try:
        ins, out = c.views()
        if call.subsystem == 3:
            result = k.reduce(ins[1], out[:1])
        else:
            result = k(list(ins), out)
        rc = 1 if result is NotImplemented else 0
    except BaseException:
        _report(k, f"kernel {type(k).__name__}")
        rc = 1   # the next node computes the result
    c._end()
    ncl_hook_depth_add(-1)
    return rc


cdef int _kernel_node_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    cdef int rc = (<Kernel>node.obj).loop(call.args, call.dimensions, call.steps, call)
    if rc != 0:
        return ncl_call_next(node, call)
    return 0


# ---------------------------------------------------------- registration

cdef class Handle:
    """A registered hook; ``remove()`` takes it out of its chain.

    Also a context manager: ``with register(...):`` removes it on exit.
    """
    cdef ncl_node *node
    cdef readonly str level
    cdef readonly object target
    cdef readonly str name
    cdef readonly object hook

    def remove(self):
        """Take the hook out of its chain (idempotent; safe while loops run)."""
        cdef ncl_node *node = self.node
        if node == NULL:
            return
        self.node = NULL
        ncl_unlink(node)

    @property
    def removed(self):
        return self.node == NULL

    @property
    def errors(self):
        """How many exceptions the hook raised inside loops."""
        return hook_errors(self.hook)[0]

    @property
    def last_error(self):
        """The last exception the hook raised inside a loop, or None."""
        return hook_errors(self.hook)[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        state = "removed" if self.node == NULL else "active"
        return f"<nclx hook {self.name!r} on {self.level} {self.target!r} ({state})>"


cdef Handle _attach(str level, object target, ncl_chain *chain, str name, ncl_hook_fn fn,
                    void *data, object obj, str position, object before, object after):
    cdef ncl_node *node
    cdef Handle h
    anchor = None
    if before is not None and after is not None:
        raise HookError("give at most one of before= and after=")
    if before is not None:
        position, anchor = "before", str(before)
    elif after is not None:
        position, anchor = "after", str(after)
    node = ncl_new_node(name, fn, data, obj)
    try:
        ncl_link(chain, node, position, anchor)
    except BaseException:
        if node.obj != NULL:
            Py_XDECREF(node.obj)
        free(node)
        raise
    collect()
    h = Handle.__new__(Handle)
    h.node = node
    h.level = level
    h.target = target
    h.name = name
    h.hook = obj
    return h


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
    position : {"front", "back"}
        Where to insert; "back" is just before the chain's default nodes.
    name : str, optional
        Node name (default: the hook's ``name`` or ``__name__``).
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
        fn = _python_terminal_fn if level == "python" else _python_hook_fn
    else:
        raise TypeError(f"hook must be callable or a Kernel, not {type(hook).__name__}")
    return _attach(level, target, chain, name, fn, NULL, hook, position, before, after)


def register_c(level, target, size_t fn_address, size_t data_address=0, *, name,
               keepalive=None, position="front", before=None, after=None):
    """Put a C hook (``int fn(ncl_node *, ncl_call *) nogil``) into a funnel
    or kernel chain.  ``data_address`` becomes ``node.data``; ``keepalive``
    is an object the node holds a reference to (e.g. the owner of data)."""
    cdef ncl_chain *chain = _resolve_chain(level, target)
    if level == "python":
        raise HookError("C hooks belong at the funnel or kernel level")
    if fn_address == 0:
        raise HookError("fn_address is NULL")
    return _attach(level, target, chain, name, <ncl_hook_fn>fn_address, <void *>data_address,
                   keepalive, position, before, after)


# ------------------------------------------------------ the Python funnel

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
    if node == NULL or (node.flags & NCL_NODE_DEFAULT):
        return c.final(c.ufunc, c.method, c.inputs, c.kwargs)
    c.node = node
    try:
        return (<object>node.obj)(c)
    finally:
        c.node = saved


def python_chain_is_default(int subsystem):
    return ncl_chain_is_default(&_python_chains[subsystem])


def run_python_chain(int subsystem, ufunc, str method, tuple inputs, dict kwargs, final):
    """Walk the Python chain of ``subsystem``; ``final(ufunc, method, inputs,
    kwargs)`` performs the call at its end."""
    cdef ncl_chain *ch = &_python_chains[subsystem]
    cdef PyCall c
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
