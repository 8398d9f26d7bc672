# The Create subsystem's memory, kernels and call (nclx._ncl.creating).
cimport numpy as cnp
from nclx._ncl.ncl cimport npy_intp

cdef npy_intp ncl_create_align(object align, cnp.dtype descr) except -1
cdef cnp.ndarray ncl_create_alloc(cnp.dtype descr, int nd, npy_intp *dims, npy_intp nbytes,
                                  int fortran, bint zeroed, npy_intp a, type subtype, object obj)
cdef cnp.ndarray ncl_create_realign(cnp.ndarray res, npy_intp a, bint zeroed, bint copy,
                                    type subtype, object obj)
cdef int ncl_create_slot(int op, cnp.dtype descr) noexcept
cdef int ncl_create_run(cnp.ndarray arr, int op, const unsigned char *value, bint touch,
                        bint write_zeros) except -1
