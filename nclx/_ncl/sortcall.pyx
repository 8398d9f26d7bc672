# cython: wraparound=False, boundscheck=False
"""One sort call through nclx's sort ArrayMethod (NumPy 2.5; the methods
themselves are made and swapped by nclx._ncl.sortmeth).

NumPy resolves the descriptors (nclx._ncl.sortask's resolution), asks the
method for its loop (``_get_loop``: this thread's loop data block, then
NumPy's own method's loop: its kept answer, or asked through
nclx._ncl.sortask) and calls the loop once per lane
(``_loop``: the first lane and short lanes straight to NumPy's loop while
nobody watches; the rest in ``_slow``: the Sort chains, the team, deferred
lanes).  NumPy frees the loop data after the last lane (``_aux_free``: the
last batch of deferred lanes first).  Built only against NumPy >= 2.4
headers.
"""
cimport numpy as cnp
from cpython.exc cimport PyErr_SetString
from libc.stdlib cimport malloc, free

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.sortask cimport (PyArrayMethod_Context, PyArrayMethod_SortParameters, NpyAuxData,
                                strided_loop_fn, NPY_SORT_STABLE, ncl_sort_kind, ncl_meth_loaded,
                                ncl_descr_type, ncl_meth_contig, ncl_sortask_rows,
                                ncl_sortask_kept, ncl_sortask_kept_flags, ncl_sortask_ask,
                                ncl_sortask_resolver)
from nclx._ncl.sortentry cimport ncl_sort_via, ncl_sort_direct, ncl_sort_probing
from nclx._ncl.sortrun cimport ncl_sort_threshold_at
from nclx._ncl.entries cimport ncl_entries_gate
from nclx._ncl.sortlanes cimport (lane_batch, ncl_lanes_init, ncl_lanes_take, ncl_lanes_release,
                                  ncl_lanes_probing, NCL_LANE_NOT_TAKEN)

cnp.import_array()


cdef void *ncl_sortcall_slot(int which) noexcept:
    """The functions of nclx's methods: 0 resolve (sort), 1 resolve
    (argsort), 2 get_loop (sort), 3 get_loop (argsort), 4 the loop."""
    if which == 0 or which == 1:
        return ncl_sortask_resolver(which)
    if which == 2:
        return <void *>_get_sort_loop
    if which == 3:
        return <void *>_get_argsort_loop
    return <void *>_loop


# NumPy's methods' rows and their kept answers (nclx._ncl.sortask), read inline
cdef const int *_rows = ncl_sortask_rows()
cdef void **_kept = ncl_sortask_kept()
cdef const int *_kept_flags = ncl_sortask_kept_flags()


cdef struct run_ctx:
    void *a                       # the meth_aux
    PyArrayMethod_Context *ctx
    const npy_intp *strides


cdef struct meth_aux:
    NpyAuxData base
    int keyed                     # a thread's own block (freed when the thread ends)
    int busy                      # held by a sort
    strided_loop_fn loop          # NumPy's loop and its data
    NpyAuxData *aux
    int c
    int arg
    # an N-d sort's lanes, deferred (nclx._ncl.sortlanes): NumPy's loop run
    # later, with this sort's context and contiguous strides
    lane_batch lanes              # set up at the second lane (most sorts have one)
    int ncalls                    # 0, 1, 2: no lane yet, lanes outside a batch, the batch set up
    npy_intp seen                 # lanes handed over before the batch was set up
    npy_intp direct_until         # lanes while seen < this go straight to NumPy's loop
    char *first_v                 # the first lane, replayed into the batch at the second
    char *first_i
    npy_intp first_n
    bint direct                   # its lanes go straight to NumPy's loop (no hook, short)
    run_ctx later
    npy_intp strides[2]


cdef extern from *:
    """
    /* One loop data block per thread, kept as a pthread key's value (so a
     * thread that ends frees it): a sort call allocates none in the common
     * case and runs no locked instruction (an atomic exchange cost about
     * 10 ns a call here).  The block says whether it is a thread's own
     * (`keyed`) and whether a sort holds it (`busy`: a nested sort on the
     * same thread, from a hook, takes a block of its own). */
    #include <pthread.h>
    static pthread_key_t ncl_meth_key;
    static int ncl_meth_key_ok = 0;
    static int ncl_meth_key_init(void) {
        if (!ncl_meth_key_ok && pthread_key_create(&ncl_meth_key, free) == 0) ncl_meth_key_ok = 1;
        return ncl_meth_key_ok;
    }
    static inline void *ncl_meth_mine(void) {
        return ncl_meth_key_ok ? pthread_getspecific(ncl_meth_key) : NULL;
    }
    static inline int ncl_meth_keep(void *p) {
        return ncl_meth_key_ok && pthread_setspecific(ncl_meth_key, p) == 0;
    }
    static inline int ncl_meth_load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void ncl_meth_store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    """
    int ncl_meth_key_init() noexcept nogil
    void *ncl_meth_mine() noexcept nogil
    int ncl_meth_keep(void *p) noexcept nogil
    int ncl_meth_load(const int *p) noexcept nogil
    void ncl_meth_store(int *p, int v) noexcept nogil


ncl_meth_key_init()      # at import, with the GIL: before any sort reaches nclx's methods

# the fast path's three loads, inlined (each a cross-module call otherwise):
# the entries' gate (user nodes in funnel and kernel chains, threads inside
# checked(): 0 means every sort op is quiet), the split threshold, and the
# threads running install()'s probe (0: no hit to count)
cdef const int *_gate = ncl_entries_gate()
cdef const npy_intp *_threshold = ncl_sort_threshold_at()
cdef const int *_probing = ncl_sort_probing()
cdef const int *_lanes_probing = ncl_lanes_probing()


cdef inline bint _direct(meth_aux *a, npy_intp n) noexcept nogil:
    """ncl_sort_direct, its common case inlined: a short lane while nobody
    watches and nobody probes goes straight to NumPy's loop."""
    if n < _threshold[0] and ncl_meth_load(_gate) == 0 and ncl_meth_load(_probing) == 0:
        return True
    return ncl_sort_direct(a.c, a.arg, n)


cdef meth_aux *_aux_take() noexcept nogil:
    """This thread's block when no sort holds it, else a new one."""
    cdef meth_aux *a = <meth_aux *>ncl_meth_mine()
    cdef bint keep
    if a != NULL and not ncl_meth_load(&a.busy):
        a.busy = 1
        return a
    keep = a == NULL
    a = <meth_aux *>malloc(sizeof(meth_aux))
    if a == NULL:
        return NULL
    a.base.free = <void *>_aux_free
    a.base.clone = NULL
    a.busy = 1
    a.keyed = keep and ncl_meth_keep(a)
    return a


cdef void _aux_give(meth_aux *a) noexcept nogil:
    if a.keyed:
        ncl_meth_store(&a.busy, 0)       # stays its thread's block
    else:
        free(a)


cdef void _aux_free(NpyAuxData *p) noexcept:
    """NumPy frees the loop's data after the last lane, before the sort
    returns: the deferred lanes are sorted first."""
    cdef meth_aux *a = <meth_aux *>p
    # the last batch is small (under the threaded size or 4 lanes a thread):
    # sorted with the GIL held, as NumPy holds it here
    if a.ncalls > 1 and (a.lanes.npend or a.lanes.pv != &a.lanes.inl[0]):
        ncl_lanes_release(&a.lanes)
    if a.aux != NULL and a.aux.free != NULL:
        (<void (*)(NpyAuxData *) noexcept>a.aux.free)(a.aux)
    _aux_give(a)


cdef int _run(void *ctx, char *p, npy_intp *ip, npy_intp n) noexcept nogil:
    """NumPy's loop on ``n`` elements at ``p`` (with the indices ``ip``)."""
    cdef run_ctx *r = <run_ctx *>ctx
    cdef meth_aux *a = <meth_aux *>r.a
    cdef char *data[2]
    data[0] = p
    data[1] = <char *>ip if ip != NULL else p
    return a.loop(r.ctx, data, &n, r.strides, a.aux)


cdef inline void _first_lane(meth_aux *a, char **data, npy_intp n, bint direct) noexcept nogil:
    """Note an unstable sort's first lane (replayed into the batch if one
    starts); how many lanes may go straight to NumPy's loop is worked out
    at the second lane (_more_direct: most sorts have one lane)."""
    a.ncalls = 1
    a.seen = 1
    a.first_v = data[0]
    a.first_i = data[1] if a.arg else NULL
    a.first_n = n
    a.direct = direct
    a.direct_until = -1 if direct else 1


cdef inline void _more_direct(meth_aux *a) noexcept nogil:
    """At an unstable sort's second lane, when its first went straight to
    NumPy's loop: the lanes holding the first threaded size of elements
    go there too, while no lane probe runs."""
    cdef npy_intp n = a.first_n
    if ncl_meth_load(_lanes_probing) == 0 and n > 0:
        a.direct_until = (_threshold[0] + n - 1) // n
    else:
        a.direct_until = 1


cdef int _loop(PyArrayMethod_Context *ctx, char **data, const npy_intp *dims,
               const npy_intp *strides, NpyAuxData *aux) noexcept nogil:
    """The common calls (a short lane while nobody watches or probes) in a
    function small enough to need no saved registers; the rest in _slow."""
    cdef meth_aux *a = <meth_aux *>aux
    cdef int flags
    cdef npy_intp n = dims[0]
    if a.seen < a.direct_until:
        # an unstable sort's lanes holding the first threaded size of
        # elements (set at its first lane): straight to NumPy's loop, as
        # ncl_lanes_take would send them (an N-d sort smaller than the
        # threaded size never defers)
        a.seen += 1
        return a.loop(ctx, data, dims, strides, a.aux)
    flags = (<PyArrayMethod_SortParameters *>ctx.parameters).flags
    if flags == 0:
        if a.ncalls == 0 and n < _threshold[0] and ncl_meth_load(_gate) == 0 \
                and ncl_meth_load(_probing) == 0:
            # the first lane (of most sorts the only one), as _slow notes it
            _first_lane(a, data, n, True)
            return a.loop(ctx, data, dims, strides, a.aux)
    elif flags == NPY_SORT_STABLE and n < _threshold[0] and ncl_meth_load(_gate) == 0 \
            and ncl_meth_load(_probing) == 0:
        return a.loop(ctx, data, dims, strides, a.aux)      # stable, short, no hook
    return _slow_loop(ctx, data, dims, strides, aux)


cdef int _slow(PyArrayMethod_Context *ctx, char **data, const npy_intp *dims,
               const npy_intp *strides, NpyAuxData *aux) noexcept nogil:
    cdef meth_aux *a = <meth_aux *>aux
    cdef run_ctx r
    cdef int flags = (<PyArrayMethod_SortParameters *>ctx.parameters).flags
    cdef int rc
    cdef bint direct
    if flags != 0 and flags != NPY_SORT_STABLE:
        return a.loop(ctx, data, dims, strides, a.aux)     # descending: NumPy's, whole
    if flags == 0:
        # unstable: the lanes of an N-d sort in place are sorted in batches
        if a.direct_until < 0:
            _more_direct(a)
            if a.seen < a.direct_until:
                a.seen += 1
                return a.loop(ctx, data, dims, strides, a.aux)
        if a.ncalls == 0:
            # the first lane (of most sorts the only one): noted, no batch
            # yet; every lane of one sort has the same length
            _first_lane(a, data, dims[0], _direct(a, dims[0]))
            if a.direct:
                return a.loop(ctx, data, dims, strides, a.aux)
            r.a = a
            r.ctx = ctx
            r.strides = strides
            return ncl_sort_via(a.c, 0, data[0], <npy_intp *>data[1] if a.arg else NULL,
                                dims[0], _run, &r)
        if a.ncalls == 1:
            # past the lanes _loop sent straight on (seen >= direct_until):
            # from here on the batch: the first lane noted in it (never
            # taken: it was sorted when it came), the lanes since counted
            a.ncalls = 2
            a.later.a = a
            a.later.strides = a.strides
            ncl_lanes_init(&a.lanes, a.strides[0], _run, &a.later)
            ncl_lanes_take(&a.lanes, a.first_v, a.first_i, a.first_n, a.direct)
            a.lanes.calls = <int>a.seen
        a.later.ctx = ctx
        direct = a.direct
        rc = ncl_lanes_take(&a.lanes, data[0], data[1] if a.arg else NULL, dims[0], direct)
        if rc != NCL_LANE_NOT_TAKEN:
            if rc < 0:
                with gil:
                    PyErr_SetString(MemoryError, "nclx: a batch of sort lanes failed")
            return rc
        if direct:
            # not deferred, short, no hook: ncl_sort_via would only call NumPy's
            # loop (ncl_sort_direct counted the call for install()'s probe)
            return a.loop(ctx, data, dims, strides, a.aux)
    elif _direct(a, dims[0]):
        return a.loop(ctx, data, dims, strides, a.aux)      # stable, short, no hook
    r.a = a
    r.ctx = ctx
    r.strides = strides
    return ncl_sort_via(a.c, 2 if flags == NPY_SORT_STABLE else 0, data[0],
                        <npy_intp *>data[1] if a.arg else NULL, dims[0], _run, &r)


# _loop calls _slow through this pointer: the compiler cannot inline it
# (and with it the saved registers of its many paths)
cdef strided_loop_fn _slow_loop = <strided_loop_fn>_slow


cdef int _get_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs, const npy_intp *strides,
                   strided_loop_fn *out_loop, NpyAuxData **out_aux, int *flags,
                   int arg) noexcept:
    cdef int t = ncl_descr_type(ctx.descriptors[0])
    cdef int c = _rows[t] if 0 <= t < 32 else -1
    cdef meth_aux *a
    cdef int rc, kind, at
    cdef bint contig
    cdef void *kept = NULL
    if c < 0:
        return -1
    a = _aux_take()
    if a == NULL:
        return -1
    a.c = c
    a.arg = arg
    a.aux = NULL
    a.strides[0] = strides[0]
    a.strides[1] = strides[1]
    a.ncalls = 0
    a.seen = 0
    a.direct_until = 0
    kind = ncl_sort_kind((<PyArrayMethod_SortParameters *>ctx.parameters).flags)
    contig = aligned and kind >= 0 and ncl_meth_contig(ctx.descriptors, strides)
    if contig:
        at = (c * 2 + arg) * 2 + kind
        kept = ncl_meth_loaded(&_kept[at])
    if kept != NULL:
        a.loop = <strided_loop_fn>kept          # NumPy's answer, as it gave it
        flags[0] = _kept_flags[at]
    else:
        rc = ncl_sortask_ask(ctx, c, arg, kind, contig, aligned, move_refs, strides,
                             &a.loop, &a.aux, flags)
        if rc < 0:
            _aux_give(a)
            return rc
    out_loop[0] = _loop
    out_aux[0] = &a.base
    return 0


cdef int _get_sort_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                        const npy_intp *strides, strided_loop_fn *out_loop,
                        NpyAuxData **out_aux, int *flags) noexcept:
    return _get_loop(ctx, aligned, move_refs, strides, out_loop, out_aux, flags, 0)


cdef int _get_argsort_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                           const npy_intp *strides, strided_loop_fn *out_loop,
                           NpyAuxData **out_aux, int *flags) noexcept:
    return _get_loop(ctx, aligned, move_refs, strides, out_loop, out_aux, flags, 1)
