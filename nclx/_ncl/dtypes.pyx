# cython: wraparound=True, boundscheck=True
"""The bit-width dtype layer, seen from Python."""
cimport numpy as cnp
from nclx._ncl.ncl cimport NCL_NTYPES, NCL_NOTYPE, ncl_dtype_from_typenum, ncl_dtype_name, ncl_dtype_sizes

import numpy as np

cnp.import_array()

#: The fixed-width types of the kernel library, in enum order.
DTYPES = tuple(ncl_dtype_name(i).decode() for i in range(NCL_NTYPES))

#: Item size in bytes of each fixed-width type.
ITEMSIZE = {ncl_dtype_name(i).decode(): ncl_dtype_sizes[i] for i in range(NCL_NTYPES)}


def fixed_width(dtype):
    """Name of the fixed-width nclx type behind a NumPy dtype, or None.

    >>> fixed_width('l') == fixed_width('q') == 'int64'   # on LP64 platforms
    True
    """
    cdef int t = ncl_dtype_from_typenum(np.dtype(dtype).num)
    if t == NCL_NOTYPE:
        return None
    return ncl_dtype_name(t).decode()


def dtype_code(dtype):
    """Enum value (``ncl_dtype``) of a NumPy dtype, -1 if nclx has no kernels for it."""
    return ncl_dtype_from_typenum(np.dtype(dtype).num)


def numpy_chars():
    """Map every NumPy type character nclx serves to its fixed-width type."""
    return {c: fixed_width(c) for c in "?bBhHiIlLqQfd"}
