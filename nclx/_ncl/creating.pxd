# The Create subsystem's kernels and call (nclx._ncl.creating).
cimport numpy as cnp

cdef int ncl_create_slot(int op, cnp.dtype descr) noexcept
cdef int ncl_create_run(cnp.ndarray arr, int op, const unsigned char *value, bint touch,
                        bint write_zeros) except -1
cdef object ncl_create_fill(cnp.ndarray res, object fill, bint touch)
