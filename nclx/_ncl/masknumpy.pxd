# NCLib's Mask subsystem, NumPy's way (nclx._ncl.masknumpy): the chains'
# "numpy" node runs NumPy's own function over views of a call's buffers.
from nclx._ncl.ncl cimport npy_intp

cdef void mask_numpy_extract(char **args, const npy_intp *dims, int typenum) noexcept nogil
cdef void mask_numpy_place(char **args, const npy_intp *dims, int typenum) noexcept nogil
cdef void mask_numpy_putmask(char **args, const npy_intp *dims, int typenum) noexcept nogil
cdef void mask_numpy_count(char **args, const npy_intp *dims) noexcept nogil
