# The loop nclx hands out for NumPy's copies of a dtype to itself
# (nclx._ncl.copyloop), and what nclx._ncl.copying needs of it.
from cpython.ref cimport PyObject
from nclx._ncl.ncl cimport npy_intp, ncl_chain

cdef extern from "numpy/dtype_api.h":
    ctypedef struct NpyAuxData:
        void *free
        void *clone
    ctypedef struct PyArrayMethod_Context:
        PyObject *caller
        void *method
        void **descriptors
    ctypedef int (*strided_loop_fn "PyArrayMethod_StridedLoop *")(
        PyArrayMethod_Context *ctx, char **data, const npy_intp *dims, const npy_intp *strides,
        NpyAuxData *aux) noexcept nogil

ctypedef int (*get_loop_fn)(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                            const npy_intp *strides, strided_loop_fn *out_loop,
                            NpyAuxData **out_aux, int *flags) noexcept

cdef void ncl_copy_setup(int t, void *meth, get_loop_fn numpy_get, int slot,
                         ncl_chain *kchain) noexcept
cdef int ncl_copy_get_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                           const npy_intp *strides, strided_loop_fn *out_loop,
                           NpyAuxData **out_aux, int *flags) noexcept
