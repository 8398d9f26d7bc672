# The portable core's shared declarations, for every Cython module of nclx
# (``from nclx._ncl.ncl cimport ...``).

cdef extern from "ncl_dtypes.h" nogil:
    ctypedef enum ncl_dtype:
        NCL_BOOL
        NCL_INT8
        NCL_INT16
        NCL_INT32
        NCL_INT64
        NCL_UINT8
        NCL_UINT16
        NCL_UINT32
        NCL_UINT64
        NCL_FLOAT32
        NCL_FLOAT64
        NCL_NTYPES
        NCL_NOTYPE

    const int *ncl_dtype_sizes
    int ncl_dtype_from_typenum(int typenum)
    const char *ncl_dtype_name(int t)

cdef extern from "numpy/npy_common.h":
    ctypedef Py_ssize_t npy_intp

# NumPy's inner-loop signature, as every nclx kernel has it.
ctypedef void (*ncl_loop_fn)(char **args, const npy_intp *dimensions,
                             const npy_intp *steps, void *data) noexcept nogil
