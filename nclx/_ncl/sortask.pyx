# cython: wraparound=False, boundscheck=False
"""NumPy 2.5's sort methods as nclx asks them: NumPy's sort and argsort
method of each type row (nclx._ncl.sortmeth serves them once its layout
check held), NumPy's answers to their loop getter kept (the same question
gets the same answer), and the descriptor resolution of nclx's methods.
nclx._ncl.sortcall reads the kept answers inline and asks here otherwise.
Built only against NumPy >= 2.4 headers.
"""
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp

cnp.import_array()

cdef extern from *:
    """
    #include "ncl_arraymethod.h"   /* ncl_meth_head */
    static PyArrayMethod_GetLoop *ncl_meth_get_loop(void *m) { return ((ncl_meth_head *)m)->get_strided_loop; }
    static inline void ncl_meth_publish(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    """
    ctypedef int (*get_loop_fn)(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                                const npy_intp *strides, strided_loop_fn *out_loop,
                                NpyAuxData **out_aux, int *flags) noexcept
    get_loop_fn ncl_meth_get_loop(void *m) noexcept
    void ncl_meth_publish(void **p, void *v) noexcept nogil

cdef enum:
    NCHARS = 13

cdef void *_numpy_meth[NCHARS][2]          # NumPy's sort / argsort methods (sortmeth's)
cdef int _row_of_type[32]                  # type number -> row (c), -1 if none
# NumPy's answer to its method's getter for an aligned, contiguous sort or
# argsort (as NumPy always asks) of each kind (unstable, stable), kept at
# the first such call when it came with no loop data (NULL until then):
# the same question gets the same answer (its getter is NumPy's default
# one, a function of the method, the alignment and the strides)
cdef void *_contig_loop[NCHARS][2][2]
cdef int _contig_flags[NCHARS][2][2]



cdef void ncl_sortask_serve(int typenum, int c, void *numpy_sort, void *numpy_argsort) noexcept:
    """Serve NumPy type number ``typenum`` as row ``c``: NumPy's two methods
    (nclx._ncl.sortmeth, once its layout check held)."""
    _numpy_meth[c][0] = numpy_sort
    _numpy_meth[c][1] = numpy_argsort
    cdef int w, k
    for w in range(2):
        for k in range(2):
            ncl_meth_publish(&_contig_loop[c][w][k], NULL)
    _row_of_type[typenum] = c


cdef const int *ncl_sortask_rows() noexcept nogil:
    """Type number (below 32) -> type row, -1 where none is served."""
    return _row_of_type


cdef void **ncl_sortask_kept() noexcept nogil:
    """The kept loops, [row][argsort][kind] (read with ncl_meth_loaded)."""
    return &_contig_loop[0][0][0]


cdef const int *ncl_sortask_kept_flags() noexcept nogil:
    return &_contig_flags[0][0][0]


cdef int ncl_sortask_ask(PyArrayMethod_Context *ctx, int c, int arg, int kind, bint contig,
                         int aligned, int move_refs, const npy_intp *strides,
                         strided_loop_fn *loop, NpyAuxData **aux, int *flags) noexcept:
    """Ask NumPy's method of row ``c`` (``arg``: argsort) for its loop, as
    NumPy asked nclx's; keep the answer of an aligned contiguous question
    (``contig``) of a kept kind when it came with no loop data (with the
    GIL held, as NumPy asks: one writer; the same values whoever writes)."""
    cdef PyArrayMethodObject_tag *mine = ctx.method
    cdef int rc
    ctx.method = <PyArrayMethodObject_tag *>_numpy_meth[c][arg]
    rc = ncl_meth_get_loop(_numpy_meth[c][arg])(ctx, aligned, move_refs, strides, loop, aux, flags)
    ctx.method = mine
    if rc >= 0 and contig and kind >= 0 and aux[0] == NULL:
        _contig_flags[c][arg][kind] = flags[0]
        ncl_meth_publish(&_contig_loop[c][arg][kind], <void *>loop[0])
    return rc


def _init():
    cdef int t
    for t in range(32):
        _row_of_type[t] = -1

_init()


def numpy_answer_kept(int typenum, int arg, int stable):
    """Whether the kept answer for a contiguous sort (``arg``: argsort) of
    type number ``typenum`` is NumPy's getter's answer now: None when
    none is kept (for tests)."""
    cdef int c = _row_of_type[typenum] if 0 <= typenum < 32 else -1
    cdef int kind = 1 if stable else 0
    cdef void *kept
    cdef PyArrayMethod_Context ctx
    cdef PyArrayMethod_SortParameters params
    cdef void *descrs[2]
    cdef npy_intp strides[2]
    cdef strided_loop_fn loop = NULL
    cdef NpyAuxData *aux = NULL
    cdef int flags = 0, rc
    if c < 0:
        raise ValueError(f"type number {typenum} is not served")
    kept = ncl_meth_loaded(&_contig_loop[c][arg][kind])
    if kept == NULL:
        return None
    d = cnp.PyArray_DescrFromType(typenum)
    i = cnp.PyArray_DescrFromType(cnp.NPY_INTP)
    descrs[0] = <void *>d
    descrs[1] = <void *>(i if arg else d)
    strides[0] = d.itemsize
    strides[1] = (i if arg else d).itemsize
    params.flags = NPY_SORT_STABLE if stable else 0
    ctx.caller = NULL
    ctx.method = <PyArrayMethodObject_tag *>_numpy_meth[c][arg]
    ctx.descriptors = descrs
    ctx.parameters = &params
    rc = ncl_meth_get_loop(_numpy_meth[c][arg])(&ctx, 1, 0, strides, &loop, &aux, &flags)
    if rc < 0:
        raise RuntimeError("NumPy's sort getter failed")
    if aux != NULL and aux.free != NULL:
        (<void (*)(NpyAuxData *) noexcept>aux.free)(aux)
    return <void *>loop == kept and aux == NULL and flags == _contig_flags[c][arg][kind]


cdef extern from *:
    """
    /* The loop's descriptors: the input's, in native byte order (the given
     * one itself when it is native: no new descriptor per call); argsort's
     * output is intp.  Plain C: NumPy resolves with the GIL held, and a
     * Cython try block here cost a save of the exception state per sort. */
    static int ncl_meth_resolve(PyArray_Descr **given, PyArray_Descr **loop, int arg) {
        PyArray_Descr *d = given[0];
        if (PyArray_ISNBO(d->byteorder)) {
            Py_INCREF(d);
        } else {
            d = PyArray_DescrNewByteorder(d, NPY_NATIVE);
            if (d == NULL) return -1;
        }
        loop[0] = d;
        if (arg) {
            loop[1] = PyArray_DescrFromType(NPY_INTP);
            if (loop[1] == NULL) { Py_DECREF(d); loop[0] = NULL; return -1; }
        } else {
            Py_INCREF(d);
            loop[1] = d;
        }
        return 0;                   /* NPY_NO_CASTING */
    }
    """
    int ncl_meth_resolve(void **given, void **loop, int arg) noexcept


cdef int _resolve_sort(void *self, void **dtypes, void **given, void **loop,
                       npy_intp *view_offset) noexcept:
    return ncl_meth_resolve(given, loop, 0)


cdef int _resolve_argsort(void *self, void **dtypes, void **given, void **loop,
                          npy_intp *view_offset) noexcept:
    return ncl_meth_resolve(given, loop, 1)


cdef void *ncl_sortask_resolver(int arg) noexcept:
    """nclx's methods' descriptor resolution: the sort's, or the argsort's."""
    return <void *>_resolve_argsort if arg else <void *>_resolve_sort
