# The copy call op's kernel (nclx._ncl.copyrun) and the loop types of
# NumPy's copy methods that nclx._ncl.copyloop and copying share.
from cpython.ref cimport PyObject
from nclx._ncl.ncl cimport npy_intp

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

cdef int ncl_copy_call(PyArrayMethod_Context *ctx, strided_loop_fn loop, int k, npy_intp itemsize,
                       char **data, const npy_intp *dims, const npy_intp *strides) noexcept nogil
cdef const npy_intp *ncl_copy_split_at() noexcept nogil
cdef npy_intp ncl_stream_at() noexcept nogil
