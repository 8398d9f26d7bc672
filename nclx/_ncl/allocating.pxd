# Memory for nclx.create: NumPy's allocator, aligned (nclx._ncl.allocating).
cimport numpy as cnp
from nclx._ncl.ncl cimport npy_intp

cdef npy_intp ncl_alloc_align(object align, cnp.dtype descr) except -1
cdef cnp.ndarray ncl_alloc(cnp.dtype descr, int nd, npy_intp *dims, npy_intp nbytes,
                           int fortran, bint zeroed, npy_intp a, type subtype, object obj)
cdef cnp.ndarray ncl_alloc_realign(cnp.ndarray res, npy_intp a, bint zeroed, bint copy,
                                   type subtype, object obj)
