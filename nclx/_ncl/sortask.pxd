# NumPy 2.5's sort methods as nclx asks them (nclx._ncl.sortask): the
# types of a method call, NumPy's methods per type row, their kept answers
# and the descriptor resolution of nclx's methods.
from cpython.ref cimport PyObject
from nclx._ncl.ncl cimport npy_intp

cdef extern from "numpy/dtype_api.h":
    cdef struct PyArrayMethodObject_tag
    ctypedef struct NpyAuxData:
        void *free
        void *clone
    ctypedef struct PyArrayMethod_Context:
        PyObject *caller
        PyArrayMethodObject_tag *method
        void **descriptors
        void *parameters
    ctypedef struct PyArrayMethod_SortParameters:
        int flags
    ctypedef int (*strided_loop_fn "PyArrayMethod_StridedLoop *")(
        PyArrayMethod_Context *ctx, char **data, const npy_intp *dims, const npy_intp *strides,
        NpyAuxData *aux) noexcept nogil

cdef extern from "numpy/arrayobject.h":
    enum:
        NPY_SORT_STABLE

cdef extern from "numpy/arrayobject.h":
    enum:
        NPY_SORT_STABLE

cdef extern from *:
    """
    static inline void *ncl_meth_loaded(void **p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline int ncl_descr_type(void *d) { return ((PyArray_Descr *)d)->type_num; }
    /* both operands contiguous: each stride its descriptor's item size */
    static inline int ncl_meth_contig(void **d, const npy_intp *s) {
        return s[0] == PyDataType_ELSIZE((PyArray_Descr *)d[0])
            && s[1] == PyDataType_ELSIZE((PyArray_Descr *)d[1]);
    }
    """
    void *ncl_meth_loaded(void **p) noexcept nogil
    int ncl_descr_type(void *d) noexcept nogil
    bint ncl_meth_contig(void **d, const npy_intp *s) noexcept nogil

cdef inline int ncl_sort_kind(int flags) noexcept nogil:
    """The kept answers' column of a sort's flags: 0 unstable, 1 stable,
    -1 any other (descending: NumPy's getter asked each time)."""
    if flags == 0:
        return 0
    if flags == NPY_SORT_STABLE:
        return 1
    return -1

cdef void ncl_sortask_serve(int typenum, int c, void *numpy_sort, void *numpy_argsort) noexcept
cdef void *ncl_sortask_resolver(int arg) noexcept
cdef const int *ncl_sortask_rows() noexcept nogil
cdef void **ncl_sortask_kept() noexcept nogil
cdef const int *ncl_sortask_kept_flags() noexcept nogil
cdef int ncl_sortask_ask(PyArrayMethod_Context *ctx, int c, int arg, int kind, bint contig,
                         int aligned, int move_refs, const npy_intp *strides,
                         strided_loop_fn *loop, NpyAuxData **aux, int *flags) noexcept
