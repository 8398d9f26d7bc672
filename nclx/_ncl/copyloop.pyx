# cython: wraparound=False, boundscheck=False
"""NCLib's Convert subsystem: the loop getter and loop nclx hands out for
NumPy's copies of a dtype to itself (nclx._ncl.copying puts
``ncl_copy_get_loop`` in NumPy's copy methods).

The getter asks NumPy's for its loop (or gives NumPy's kept answer to the
same question again); for the fixed-width dtypes in native byte order it
wraps the loop: a call of ``n`` elements is one call of the ``copy`` call
op (subsystem "convert": ledger row, hooks), whose kernel
(nclx._ncl.copyrun) splits the elements across the team.  While nobody
watches, the loop is a leaf of ncl_copyleaf.h: a call of fewer than 16
elements is copied there as NumPy's loop for the same alignment and
strides copies it (a copy of many short rows calls the loop once a row:
no second call a row); a call of fewer than twice ``piece_bytes`` bytes is
NumPy's loop at once.
"""
cimport numpy as cnp
from cpython.exc cimport PyErr_SetString
from libc.string cimport memset

from nclx._ncl.ncl cimport npy_intp, ncl_chain, NCL_SUB_CONVERT
from nclx._ncl.registry cimport ncl_funnel_chain
from nclx._ncl.copyrun cimport ncl_copy_call, ncl_copy_split_at

cnp.import_array()

cdef extern from *:
    """
    #include <numpy/dtype_api.h>
    static int ncl_copy_descr_type(void *d) { return ((PyArray_Descr *)d)->type_num; }
    static npy_intp ncl_copy_descr_size(void *d) { return PyDataType_ELSIZE((PyArray_Descr *)d); }
    /* publish a table entry's loop: 1 when it was still empty */
    static inline int ncl_copy_publish(void *slot, void *loop) {
        void *none = NULL;
        return __atomic_compare_exchange_n((void **)slot, &none, loop, 0, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE);
    }
    static inline void *ncl_copy_loaded(void *slot) { return __atomic_load_n((void **)slot, __ATOMIC_ACQUIRE); }
    static inline void ncl_copy_store_aux(void *slot, void *v) { __atomic_store_n((void **)slot, v, __ATOMIC_RELEASE); }
    static inline int ncl_copy_claim(int *p) {
        int no = 0;
        return __atomic_compare_exchange_n(p, &no, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    /* a copy of type t to itself, both native */
    static inline int ncl_copy_same(void **d, int t) {
        PyArray_Descr *a = (PyArray_Descr *)d[0], *b = (PyArray_Descr *)d[1];
        return b->type_num == t && PyArray_ISNBO(a->byteorder) && PyArray_ISNBO(b->byteorder);
    }
    #include "nclx.h"
    /* no user node in the chain (what ncl_callop_quiet reads) */
    static inline int ncl_copy_nouser(const ncl_chain *c) {
        return __atomic_load_n(&c->nuser, __ATOMIC_ACQUIRE) == 0;
    }
    """
    int ncl_copy_descr_type(void *d) noexcept nogil
    npy_intp ncl_copy_descr_size(void *d) noexcept nogil
    bint ncl_copy_nouser(const ncl_chain *c) noexcept nogil
    int ncl_copy_publish(void *slot, void *loop) noexcept nogil
    void *ncl_copy_loaded(void *slot) noexcept nogil
    void ncl_copy_store_aux(void *slot, void *v) noexcept nogil
    bint ncl_copy_same(void **d, int t) noexcept
    bint ncl_copy_claim(int *p) noexcept

cdef extern from "ncl_copyleaf.h":
    # the loop data of a wrapped loop: NumPy's loop, the copy call slot,
    # the item size, the loop while nobody watches (a leaf of the header,
    # or _loop_quiet), and whether a writer took the entry
    ctypedef struct copy_aux "ncl_copy_aux":
        NpyAuxData base
        strided_loop_fn loop
        int k
        npy_intp itemsize
        strided_loop_fn quiet
        int claimed
    void ncl_copy_leaf_init(strided_loop_fn long_path, const npy_intp *split) noexcept
    strided_loop_fn ncl_copy_leaf(int aligned, npy_intp s0, npy_intp s1, npy_intp isz) noexcept

cdef enum:
    NTYPES = 32               # NumPy's built-in type numbers are below this

cdef const npy_intp *_split_bytes = ncl_copy_split_at()   # calls below are never split
cdef int _slot[NTYPES]                     # type number -> copy call slot, or -1
cdef ncl_chain *_kchain[NTYPES]            # ... -> its kernel chain (copy_<dtype>)
cdef ncl_chain *_funnel = ncl_funnel_chain(NCL_SUB_CONVERT)
cdef get_loop_fn _numpy_get[NTYPES]        # NumPy's own loop getter of that DType




cdef enum:
    AUX_PER_TYPE = 32

cdef copy_aux _auxes[NTYPES][AUX_PER_TYPE]
# NumPy's answers to its getter for the first KEPT (alignment, strides) of
# a native copy of each type to itself: its getter is a function of these
# (the loop for the strides and item size), so the same question gets the
# same answer.  An entry is written once, its loop data published last.
cdef enum:
    KEPT = 4

cdef struct kept_answer:
    npy_intp s0, s1
    int aligned
    int flags
    int claimed               # a writer took the entry
    copy_aux *aux             # NULL: not yet published

cdef kept_answer _kept[NTYPES][KEPT]


cdef void *_meth[NTYPES]                   # NumPy's copy method of the DType


cdef void ncl_copy_setup(int t, void *meth, get_loop_fn numpy_get, int slot,
                         ncl_chain *kchain) noexcept:
    """Serve type number ``t``: NumPy's copy method and its getter, the copy
    call slot and its kernel chain (nclx._ncl.copying, once the layout
    held)."""
    cdef int i
    _meth[t] = meth
    _numpy_get[t] = numpy_get
    _slot[t] = slot
    _kchain[t] = kchain
    for i in range(KEPT):
        ncl_copy_store_aux(&_kept[t][i].aux, NULL)
        _kept[t][i].claimed = 0


cdef void _aux_free(NpyAuxData *p) noexcept nogil:
    """The loop data lives in the module's table: nothing to free."""
    pass


cdef NpyAuxData *_aux_clone(NpyAuxData *p) noexcept nogil:
    return p                  # immutable, shared


cdef copy_aux *_aux_for(int t, strided_loop_fn loop, npy_intp itemsize,
                        strided_loop_fn quiet) noexcept:
    """The loop data of NumPy's ``loop`` for type number ``t`` with ``quiet``
    (the loop while nobody watches): one entry per (type, loop, quiet) in a
    table made once (NumPy hands out a few loops per itemsize: contiguous,
    strided, unaligned), so a copy allocates nothing.  The writer that
    claims an entry fills it, then publishes its loop; an entry another
    writer is filling is passed over.  NULL when the table is full (the
    loop is then NumPy's, unwrapped)."""
    cdef int i
    cdef copy_aux *a
    cdef void *cur
    for i in range(AUX_PER_TYPE):
        a = &_auxes[t][i]
        cur = ncl_copy_loaded(&a.loop)
        if cur == NULL:
            if not ncl_copy_claim(&a.claimed):
                continue
            a.base.free = <void *>_aux_free
            a.base.clone = <void *>_aux_clone
            a.k = _slot[t]
            a.itemsize = itemsize
            a.quiet = quiet
            ncl_copy_store_aux(&a.loop, <void *>loop)
            return a
        if cur == <void *>loop and a.quiet == quiet:
            return a
    return NULL


cdef int _loop(PyArrayMethod_Context *ctx, char **data, const npy_intp *dims,
               const npy_intp *strides, NpyAuxData *aux) noexcept nogil:
    """The loop of a copy somebody watches (a hook or the ledger was in the
    copy op's chains, or a checked() mode on, when NumPy asked for it):
    every call is a call of the op."""
    cdef copy_aux *a = <copy_aux *>aux
    return ncl_copy_call(ctx, a.loop, a.k, a.itemsize, data, dims, strides)


cdef int _loop_quiet(PyArrayMethod_Context *ctx, char **data, const npy_intp *dims,
                     const npy_intp *strides, NpyAuxData *aux) noexcept nogil:
    """The loop of a copy nobody watched when NumPy asked for it (the long
    path of the leaves, and the loop itself where no leaf copies as
    NumPy's loop does): a call too small to split is NumPy's loop at once;
    a larger one is a call of the op (whose chains are checked again)."""
    cdef copy_aux *a = <copy_aux *>aux
    if dims[0] * a.itemsize < _split_bytes[0]:
        return a.loop(ctx, data, dims, strides, NULL)
    return ncl_copy_call(ctx, a.loop, a.k, a.itemsize, data, dims, strides)


cdef inline bint _plain(PyArrayMethod_Context *ctx, int t) noexcept:
    """A copy of type ``t`` to itself, both native: nclx may wrap its loop."""
    return _slot[t] >= 0 and ncl_copy_same(ctx.descriptors, t)


cdef int ncl_copy_get_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                           const npy_intp *strides, strided_loop_fn *out_loop,
                           NpyAuxData **out_aux, int *flags) noexcept:
    """nclx's loop getter in NumPy's copy methods (nclx._ncl.copying).  An
    aligned contiguous copy of a native fixed-width type to itself, after
    the first, takes NumPy's answer to the first (a function small enough
    to save no registers); the rest go to _get_loop."""
    cdef int t = ncl_copy_descr_type(ctx.descriptors[0])
    cdef copy_aux *a
    cdef kept_answer *e
    cdef int i
    if 0 <= t < NTYPES and ncl_copy_same(ctx.descriptors, t):
        for i in range(KEPT):
            e = &_kept[t][i]
            a = <copy_aux *>ncl_copy_loaded(&e.aux)
            if a == NULL:
                break
            if e.s0 == strides[0] and e.s1 == strides[1] and e.aligned == aligned:
                flags[0] = e.flags
                out_loop[0] = a.quiet if ncl_copy_nouser(_funnel) \
                    and ncl_copy_nouser(_kchain[t]) else _loop
                out_aux[0] = <NpyAuxData *>a
                return 0
    return _get_loop_p(ctx, aligned, move_refs, strides, out_loop, out_aux, flags)


cdef int _get_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                   const npy_intp *strides, strided_loop_fn *out_loop,
                   NpyAuxData **out_aux, int *flags) noexcept:
    cdef int t = ncl_copy_descr_type(ctx.descriptors[0])
    cdef get_loop_fn numpy_get
    cdef copy_aux *a
    cdef strided_loop_fn quiet
    cdef npy_intp isz
    cdef int rc
    if t < 0 or t >= NTYPES or _numpy_get[t] == NULL:
        # not a DType nclx swapped (cannot happen)
        PyErr_SetString(SystemError, "nclx: a copy loop asked of an unknown DType")
        return -1
    numpy_get = _numpy_get[t]
    rc = numpy_get(ctx, aligned, move_refs, strides, out_loop, out_aux, flags)
    if rc < 0 or out_aux[0] != NULL or not _plain(ctx, t):
        return rc             # a byte swap, or a loop with data: NumPy's as it is
    isz = ncl_copy_descr_size(ctx.descriptors[0])
    quiet = ncl_copy_leaf(aligned, strides[0], strides[1], isz)
    a = _aux_for(t, out_loop[0], isz, quiet if quiet != NULL else _loop_quiet)
    if a == NULL:
        return rc             # NumPy's loop works as well
    if rc == 0:
        _keep(t, aligned, strides, flags[0], a)
    # nobody watching now (no hook, no ledger): small calls are copied by
    # the leaf or go to NumPy's loop at once.  A checked() mode changes nothing in a copy.
    out_loop[0] = a.quiet if ncl_copy_nouser(_funnel) and ncl_copy_nouser(_kchain[t]) \
        else _loop
    out_aux[0] = <NpyAuxData *>a
    return rc


cdef void _keep(int t, int aligned, const npy_intp *strides, int flags, copy_aux *a) noexcept:
    """Keep NumPy's answer in the first free entry of type ``t`` (none if
    all are taken): the writer that claims an entry fills it, then
    publishes it."""
    cdef kept_answer *e
    cdef int i
    for i in range(KEPT):
        e = &_kept[t][i]
        if ncl_copy_claim(&e.claimed):
            e.s0 = strides[0]
            e.s1 = strides[1]
            e.aligned = aligned
            e.flags = flags
            ncl_copy_store_aux(&e.aux, <void *>a)
            return
        if ncl_copy_loaded(&e.aux) != NULL and e.s0 == strides[0] \
                and e.s1 == strides[1] and e.aligned == aligned:
            return


# ncl_copy_get_loop calls _get_loop through this pointer: not inlined (nor
# its saved registers)
cdef get_loop_fn _get_loop_p = _get_loop


def _init():
    cdef int t, i
    for t in range(NTYPES):
        _slot[t] = -1
        _numpy_get[t] = NULL
        _kchain[t] = NULL
        _meth[t] = NULL
        for i in range(KEPT):
            _kept[t][i].aux = NULL
            _kept[t][i].claimed = 0
        for i in range(AUX_PER_TYPE):
            _auxes[t][i].loop = NULL
            _auxes[t][i].claimed = 0

_init()
ncl_copy_leaf_init(_loop_quiet, _split_bytes)


def kept_answers(int t):
    """The kept answers of type number ``t``: (source stride, destination
    stride, aligned, whether NumPy's getter answers the same now) each (for
    tests)."""
    cdef kept_answer *e
    cdef copy_aux *a
    cdef PyArrayMethod_Context ctx
    cdef void *descrs[2]
    cdef npy_intp strides[2]
    cdef strided_loop_fn loop
    cdef NpyAuxData *aux
    cdef int i, flags, rc
    if not 0 <= t < NTYPES or _numpy_get[t] == NULL:
        raise ValueError(f"type number {t} is not served")
    d = cnp.PyArray_DescrFromType(t)
    out = []
    for i in range(KEPT):
        e = &_kept[t][i]
        a = <copy_aux *>ncl_copy_loaded(&e.aux)
        if a == NULL:
            continue
        memset(&ctx, 0, sizeof(ctx))
        ctx.method = _meth[t]
        descrs[0] = <void *>d
        descrs[1] = <void *>d
        ctx.descriptors = descrs
        strides[0] = e.s0
        strides[1] = e.s1
        loop = NULL
        aux = NULL
        flags = 0
        rc = _numpy_get[t](&ctx, e.aligned, 0, strides, &loop, &aux, &flags)
        if rc < 0:
            raise RuntimeError("NumPy's copy getter failed")
        if aux != NULL and aux.free != NULL:
            (<void (*)(NpyAuxData *) noexcept>aux.free)(aux)
        out.append((e.s0, e.s1, bool(e.aligned),
                    loop == a.loop and aux == NULL and flags == e.flags))
    return out
