# The loop nclx hands out for NumPy's copies of a dtype to itself
# (nclx._ncl.copyloop), and what nclx._ncl.copying needs of it.
from cpython.ref cimport PyObject
from nclx._ncl.ncl cimport npy_intp, ncl_chain

from nclx._ncl.copyrun cimport NpyAuxData, PyArrayMethod_Context, strided_loop_fn, get_loop_fn

cdef void ncl_copy_setup(int t, void *meth, get_loop_fn numpy_get, int slot,
                         ncl_chain *kchain) noexcept
cdef int ncl_copy_get_loop(PyArrayMethod_Context *ctx, int aligned, int move_refs,
                           const npy_intp *strides, strided_loop_fn *out_loop,
                           NpyAuxData **out_aux, int *flags) noexcept
