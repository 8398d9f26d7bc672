# cython: wraparound=True, boundscheck=True
"""The hook registry's reader side: walking chains without the GIL.

A loop call walks its funnel chain (``ncl_dispatch``), each node passing
the call on with ``ncl_call_next``; the count of readers inside a chain
(which the writer side, nclx._ncl.registry, reads before freeing a removed
node) and the per-thread hook depth (a Python hook's own NumPy calls run
unhooked) live here.  Nothing here allocates, links or frees a node.
"""
from nclx._ncl.ncl cimport ncl_node, ncl_chain, ncl_call

cdef extern from "ncl_atomic.h":
    void *ncl_load_ptr(void **p) nogil
    void ncl_store_ptr(void **p, void *v) nogil
    int ncl_load_int(const int *p) nogil
    void ncl_add_int(int *p, int v) nogil
    void ncl_or_int(int *p, int v) nogil
    void ncl_add_long(long *p, long v) nogil

cdef extern from *:
    """
    #include <pthread.h>
    static long ncl_readers_count = 0;
    static __thread long ncl_readers_mine = 0;     /* this thread's share of the count */
    static inline void ncl_readers_in(void) {
        ncl_readers_mine++;
        __atomic_add_fetch(&ncl_readers_count, 1, __ATOMIC_SEQ_CST);
    }
    static inline void ncl_readers_out(void) {
        ncl_readers_mine--;
        __atomic_sub_fetch(&ncl_readers_count, 1, __ATOMIC_SEQ_CST);
    }
    /* a forked child has only the forking thread: the readers are its own
     * (the others' walks never end there, and removed nodes would never be
     * freed) */
    static void ncl_readers_after_fork(void) {
        __atomic_store_n(&ncl_readers_count, ncl_readers_mine, __ATOMIC_SEQ_CST);
    }
    static int ncl_readers_atfork(void) { return pthread_atfork(NULL, NULL, ncl_readers_after_fork); }
    static inline long ncl_readers_now_(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); return __atomic_load_n(&ncl_readers_count, __ATOMIC_SEQ_CST); }
    static __thread int ncl_depth_tls = 0;
    static inline int ncl_depth_get(void) { return ncl_depth_tls; }
    static inline void ncl_depth_add(int d) { ncl_depth_tls += d; }
    """
    void ncl_readers_in() nogil
    void ncl_readers_out() nogil
    int ncl_readers_atfork()
    long ncl_readers_now_() nogil
    int ncl_depth_get() nogil
    void ncl_depth_add(int d) nogil


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
    """No user node anywhere in the chain (front, middle or back)."""
    return ncl_load_int(&chain.nuser) == 0


cdef void ncl_readers_enter() noexcept nogil:
    ncl_readers_in()


cdef void ncl_readers_leave() noexcept nogil:
    ncl_readers_out()


cdef int ncl_hook_depth() noexcept nogil:
    return ncl_depth_get()


cdef void ncl_hook_depth_add(int d) noexcept nogil:
    ncl_depth_add(d)


cdef int ncl_dispatch(ncl_chain *funnel, ncl_call *call) noexcept nogil:
    """Walk a funnel chain (and the kernel chain it ends in) for one loop call."""
    cdef int rc
    if ncl_depth_get() > 0:
        # NumPy called from inside a Python hook: run the kernel unhooked,
        # or the hook would see its own calls (and recurse).
        if call.prefer_numpy and call.numpy_loop != NULL:
            call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
        else:
            call.nclx_loop(call.args, call.dimensions, call.steps, call.data)
        return 0
    ncl_readers_in()
    rc = ncl_call_chain(funnel, call)
    ncl_readers_out()
    return rc


cdef void ncl_status_add(ncl_call *call, int flag, long count) noexcept nogil:
    """Report a condition to the calling thread (atomic: chunks may run in parallel)."""
    if call.status != NULL:
        ncl_or_int(&call.status.flags, flag)
        ncl_add_long(&call.status.count, count)


cdef long ncl_readers_now() noexcept nogil:
    """Loop calls inside a chain now (a full fence first: the writer side
    frees a removed node only when this reads 0)."""
    return ncl_readers_now_()


# ----------------------------------------------------- default node bodies

cdef int ncl_funnel_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    return ncl_call_chain(call.kernel_chain, call)


cdef int ncl_nclx_kernel_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    # nclx's choice: its own kernel, or NumPy's loop where that measured faster
    if call.prefer_numpy and call.numpy_loop != NULL:
        call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
    else:
        call.nclx_loop(call.args, call.dimensions, call.steps, call.data)
    return 0


cdef int ncl_numpy_loop_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    if call.numpy_loop == NULL:
        # nclx's own ops (fma, where, cast) have no NumPy loop: their kernel is last
        call.nclx_loop(call.args, call.dimensions, call.steps, call.data)
        return 0
    call.numpy_loop(call.args, call.dimensions, call.steps, call.data)
    return 0


cdef int ncl_python_terminal_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    return 0   # never called: Python chains are walked from Python


if ncl_readers_atfork() != 0:
    raise RuntimeError("pthread_atfork failed: nclx cannot protect forked children")
