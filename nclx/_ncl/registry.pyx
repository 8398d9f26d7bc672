# cython: wraparound=True, boundscheck=True
"""The hook registry: intrusive doubly linked chains of hook nodes.

Three levels (DESIGN.md, "Data flow of a + b"):

- ``python``: one chain per subsystem of Python callables, walked with the
  GIL by nclx-aware arrays' ``__array_ufunc__`` and, with
  ``install(python_funnel=True)``, by the ufunc call entry;
- ``funnel``: one chain per subsystem that every replaced NumPy loop walks
  first; its last node walks
- ``kernel``: one chain per (op, dtype), ending in nclx's kernel and NumPy's
  original loop, which stays reachable as the last node.

Readers walk chains without the GIL.  Writers hold the GIL; a node is
published with one release store once it is fully linked, and a removed node
is freed only when no reader is inside any chain (a reader count, taken only
off the fast path, tells).  A removed node keeps its ``next`` pointer, so a
hook that removes itself while it runs can still punt.  Each chain counts its
user nodes (``nuser``): the loop entries' fast path is "no user node in the
funnel chain nor in the kernel chain", wherever in the chain a node sits.

The writer side (chains, nodes, linking, freeing); walking is in walk, hook
objects in hooks; nothing of loop entries or threads (entries, threader).
"""
from cpython.ref cimport PyObject, Py_XINCREF, Py_XDECREF
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, strcmp

from nclx._ncl.walk cimport (ncl_readers_now, ncl_chain_is_default, ncl_funnel_terminal_fn,
                             ncl_nclx_kernel_fn, ncl_numpy_loop_fn, ncl_python_terminal_fn)
from nclx._ncl.ncl cimport (NCL_NSUBSYSTEMS, NCL_LEVEL_PYTHON, NCL_LEVEL_FUNNEL,
                            NCL_LEVEL_KERNEL, NCL_NODE_DEFAULT, NCL_NODE_LINKED,
                            NCL_NODE_CAPI, NCL_FRONT, NCL_BACK, NCL_BEFORE, NCL_AFTER,
                            ncl_subsystem_names)

cdef extern from "ncl_quarantine.h":   # freed C API nodes wait (review 18)
    void *ncl_quarantine(void *p)
cdef extern from "ncl_atomic.h":
    void ncl_store_ptr(void **p, void *v) nogil
    void ncl_add_int(int *p, int v) nogil

LEVELS = ("python", "funnel", "kernel")
SUBSYSTEMS = tuple(ncl_subsystem_names[s].decode() for s in range(NCL_NSUBSYSTEMS))
POSITIONS = {"front": NCL_FRONT, "back": NCL_BACK, "before": NCL_BEFORE, "after": NCL_AFTER}
from nclx.errors import HookError


# ------------------------------------------------------------- the registry

cdef ncl_chain _funnel_chains[NCL_NSUBSYSTEMS]
cdef ncl_chain _python_chains[NCL_NSUBSYSTEMS]
cdef ncl_node _funnel_terminals[NCL_NSUBSYSTEMS]
cdef ncl_node _python_terminals[NCL_NSUBSYSTEMS]
cdef dict _kernel_chains = {}      # kernel name -> address of its ncl_chain
cdef ncl_node *_retired = NULL
cdef object _free_observer = None  # called with a node's address when it is freed
# > 0 while reset() walks the chains: collect() frees nothing (a freed hook's
# __del__ may remove, and so free, the node the walk goes to next)
cdef int _holding = 0
cdef dict _live = {}               # address of every user node not yet freed -> serial
cdef set _defaults = set()         # addresses of the default nodes (never freed)
cdef set _pinned = set()           # nodes of nclx's own modes (checked(), ledgers): reset() keeps them
cdef object _serials = iter(range(1, 1 << 62))
cdef int *_loop_watch = NULL       # follows the user nodes of funnel and kernel chains


cdef void ncl_watch_loop_user_nodes(int *counter):
    """From now on keep ``*counter`` raised by the user nodes linked in funnel
    and kernel chains (those a replaced loop walks).  One watcher: the loop
    entries' gate (entries.pyx)."""
    global _loop_watch
    cdef int s
    for s in range(NCL_NSUBSYSTEMS):
        ncl_add_int(counter, _funnel_chains[s].nuser)
    for addr in _kernel_chains.values():
        ncl_add_int(counter, (<ncl_chain *><size_t>addr).nuser)
    _loop_watch = counter


cdef void _count_user(ncl_chain *chain, int delta) noexcept nogil:
    ncl_add_int(&chain.nuser, delta)
    if chain.level != NCL_LEVEL_PYTHON and _loop_watch != NULL:
        ncl_add_int(_loop_watch, delta)


cdef char *_copy_name(str name) except NULL:
    b = name.encode()
    cdef Py_ssize_t n = len(b)
    cdef char *dst = <char *>malloc(n + 1)
    if dst == NULL:
        raise MemoryError()
    memcpy(dst, <char *>b, n)
    dst[n] = 0
    return dst


cdef int _init_default_node(ncl_node *node, ncl_chain *chain, str name, ncl_hook_fn fn) except -1:
    node.fn = fn
    node.data = NULL
    node.obj = NULL
    node.next = NULL
    node.prev = NULL
    node.chain = chain
    node.retired_next = NULL
    node.destroy = NULL
    node.flags = NCL_NODE_DEFAULT | NCL_NODE_LINKED
    node.name = _copy_name(name)     # default nodes live as long as the process
    _defaults.add(<size_t>node)
    return 0


cdef void _init_chain(ncl_chain *chain, int level, int index, str name, ncl_node *head):
    b = name.encode()[:63]
    chain.head = head
    chain.default_head = head
    chain.level = level
    chain.index = index
    chain.nuser = 0
    memcpy(chain.name, <char *>b, len(b))
    chain.name[len(b)] = 0


cdef _init_registry():
    cdef int s
    for s in range(NCL_NSUBSYSTEMS):
        _init_default_node(&_funnel_terminals[s], &_funnel_chains[s], "kernel", ncl_funnel_terminal_fn)
        _init_chain(&_funnel_chains[s], NCL_LEVEL_FUNNEL, s, SUBSYSTEMS[s], &_funnel_terminals[s])
        _init_default_node(&_python_terminals[s], &_python_chains[s], "ufunc", ncl_python_terminal_fn)
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
        free(chain)
        free(nodes)
        raise MemoryError()
    _init_default_node(&nodes[0], chain, "nclx", ncl_nclx_kernel_fn)
    _init_default_node(&nodes[1], chain, "numpy", ncl_numpy_loop_fn)
    nodes[0].next = &nodes[1]
    nodes[1].prev = &nodes[0]
    _init_chain(chain, NCL_LEVEL_KERNEL, len(_kernel_chains), name, &nodes[0])
    _kernel_chains[name] = <size_t>chain
    return chain


cdef ncl_node *ncl_new_node(str name, ncl_hook_fn fn, void *data, ncl_destroy_fn destroy,
                            object obj) except NULL:
    cdef ncl_node *node
    if not isinstance(name, str) or not name:
        raise HookError(f"a hook name must be a non-empty string, not {name!r}")
    if "\0" in name:
        raise HookError(f"a hook name cannot contain NUL characters: {name!r}")
    node = <ncl_node *>calloc(1, sizeof(ncl_node))
    if node == NULL:
        raise MemoryError()
    try:
        node.name = _copy_name(name)
    except BaseException:
        free(node)
        raise
    node.fn = fn
    node.data = data
    node.destroy = destroy
    if obj is not None:
        node.obj = <PyObject *>obj
        Py_XINCREF(<PyObject *>node.obj)
    _live[<size_t>node] = next(_serials)
    return node


def node_serial(size_t address):
    """Serial number of the live user node at ``address``, or 0 when no node
    lives there any more (removed by reset() and freed)."""
    return _live.get(address, 0)


def is_default_node(size_t address):
    """Whether a default node (never freed) lives at ``address``."""
    return address in _defaults


cdef void _free_node(ncl_node *node):
    _live.pop(<size_t>node, None)
    _pinned.discard(<size_t>node)
    if node.destroy != NULL:
        node.destroy(node.data)
    if node.obj != NULL:
        Py_XDECREF(<PyObject *>node.obj)
    free(node.name)
    if node.flags & NCL_NODE_CAPI:     # a stale pointer to it stays refused a while
        node = <ncl_node *>ncl_quarantine(node)
    free(node)


cdef void ncl_discard(ncl_node *node):
    """Free a node that was never linked (its destroy callback runs)."""
    _free_node(node)


cdef ncl_node *_find(ncl_chain *chain, bytes name):
    cdef ncl_node *node = chain.head
    while node != NULL:
        if strcmp(node.name, <char *>name) == 0:
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


cdef int ncl_link(ncl_chain *chain, ncl_node *node, int position, str anchor) except -1:
    """Insert ``node`` at ``position``: front, back (before the default
    nodes; in a kernel chain before checked()'s nodes there too), before
    ``anchor`` or after ``anchor``."""
    cdef ncl_node *target
    chain_name = chain.name.decode()
    node_name = node.name.decode()
    if node.flags & NCL_NODE_LINKED:
        raise HookError(f"node {node_name!r} is already in a chain")
    if _find(chain, node.name) != NULL:
        raise HookError(f"chain {chain_name!r} already has a node named {node_name!r}")
    if position == NCL_FRONT:
        target = chain.head
    elif position == NCL_BACK:
        # in a kernel chain also before an open checked() block's nodes (review 22)
        target = _first_default(chain)
        while (chain.level == NCL_LEVEL_KERNEL and target.prev != NULL
               and <size_t>target.prev in _pinned):
            target = target.prev
    elif position == NCL_BEFORE or position == NCL_AFTER:
        word = "before" if position == NCL_BEFORE else "after"
        if anchor is None:
            raise HookError(f"position={word!r} needs {word}=<name of a node in chain "
                            f"{chain_name!r}>; it has {ncl_chain_names(chain)}")
        target = _find(chain, anchor.encode())
        if target == NULL:
            raise HookError(f"chain {chain_name!r} has no node named {anchor!r}; "
                            f"it has {ncl_chain_names(chain)}")
        if position == NCL_AFTER:
            if target.next == NULL:
                raise HookError(f"nothing after {anchor!r} runs in chain {chain_name!r}: "
                                f"it is the chain's last node")
            target = target.next
    else:
        raise HookError(f"position must be 'front', 'back', 'before' or 'after', not {position!r}")
    _link_before(chain, node, target)
    _count_user(chain, 1)
    return 0


cdef int ncl_set_default_front(ncl_chain *chain, ncl_node *node) except -1:
    """Make ``node`` (static storage) the first default node of ``chain``.

    Used once at import by nclx modules that add default behaviour (the
    threader); not while loops may run."""
    node.flags |= NCL_NODE_DEFAULT
    _defaults.add(<size_t>node)
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
    _count_user(chain, -1)
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
    if _holding or ncl_readers_now() != 0:
        node = _retired
        while node != NULL:
            left += 1
            node = node.retired_next
        return left
    node = _retired
    _retired = NULL
    while node != NULL:
        nxt = node.retired_next
        if _free_observer is not None:
            _free_observer(<size_t>node)
        _free_node(node)
        node = nxt
    return 0


def set_free_observer(fn):
    """``fn(node_address)`` runs (GIL held) just before a user node is freed."""
    global _free_observer
    _free_observer = fn


cdef list ncl_chain_names(ncl_chain *chain):
    cdef ncl_node *node = chain.head
    names = []
    while node != NULL:
        names.append(node.name.decode())
        node = node.next
    return names


cdef void _strip(ncl_chain *ch) except *:
    cdef ncl_node *node = ch.head
    cdef ncl_node *nxt
    while node != NULL:
        nxt = node.next
        if not (node.flags & NCL_NODE_DEFAULT) and <size_t>node not in _pinned:
            ncl_unlink(node)
        node = nxt


def pin(size_t address):
    """Keep the live node at ``address`` through reset(): a node of one of
    nclx's own modes (``checked()``, a recording ledger), whose block
    removes it when it ends."""
    if address not in _live:
        raise HookError("pin: no live node at that address")
    _pinned.add(address)


def reset():
    """Remove every hook from every chain: the registry as nclx ships it
    (the nodes of open ``checked()`` and ``ledger.recording()`` blocks stay
    until their blocks end)."""
    global _holding
    cdef int s
    _holding += 1
    try:
        for s in range(NCL_NSUBSYSTEMS):
            _strip(&_python_chains[s])
            _strip(&_funnel_chains[s])
        for addr in list(_kernel_chains.values()):
            _strip(<ncl_chain *><size_t>addr)
    finally:
        _holding -= 1
    return collect()


def user_chains():
    """Every chain holding user nodes: {(level, target name): node names}."""
    out = {}
    cdef int s
    for s in range(NCL_NSUBSYSTEMS):
        if not ncl_chain_is_default(&_python_chains[s]):
            out[("python", SUBSYSTEMS[s])] = ncl_chain_names(&_python_chains[s])
        if not ncl_chain_is_default(&_funnel_chains[s]):
            out[("funnel", SUBSYSTEMS[s])] = ncl_chain_names(&_funnel_chains[s])
    for kname, addr in _kernel_chains.items():
        if not ncl_chain_is_default(<ncl_chain *><size_t>addr):
            out[("kernel", kname)] = ncl_chain_names(<ncl_chain *><size_t>addr)
    return out

