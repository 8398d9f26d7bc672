"""Whether a loop call's input overlaps its output without being it (the
threader leaves such a call whole; Python hooks see it one element at a
time).  NumPy's ufunc machinery copies overlapping operands before its
loops run, except for ``accumulate``, whose loop reads the previous output
element as its first input (``args[0]`` is ``out`` one element back)."""
from nclx._ncl.ncl cimport npy_intp, ncl_call, ncl_dtype_sizes, NCL_NSLOTS


cdef inline bint ncl_overlaps(char *a, npy_intp sa, char *o, npy_intp so, npy_intp n,
                              int size) noexcept nogil:
    """Whether two strided ranges share bytes without being the same operand."""
    cdef char *alo = a
    cdef char *ahi = a + sa * (n - 1)
    cdef char *olo = o
    cdef char *ohi = o + so * (n - 1)
    if a == o and sa == so:
        return False
    if ahi < alo:
        alo, ahi = ahi, alo
    if ohi < olo:
        olo, ohi = ohi, olo
    return not (ahi + size <= olo or ohi + size <= alo)


cdef inline bint ncl_input_overlaps_output(ncl_call *call, npy_intp n) noexcept nogil:
    """Whether an input of ``call`` (``n`` elements) overlaps its output
    without being it (each element then needs the ones before it)."""
    cdef int i, size
    cdef int out = call.nargs - 1
    cdef int osize = ncl_dtype_sizes[call.dtypes[out]]
    if n < 2 or call.steps[out] == 0:
        return False
    for i in range(out):
        size = osize if osize > ncl_dtype_sizes[call.dtypes[i]] else ncl_dtype_sizes[call.dtypes[i]]
        if ncl_overlaps(call.args[i], call.steps[i], call.args[out], call.steps[out], n, size):
            return True
    return False


cdef inline bint ncl_each_element(ncl_call *call) noexcept nogil:
    """Whether a Python hook sees ``call`` one element at a time: an input
    overlaps the output shifted (``accumulate``: ``args[0]`` is the output
    one element back), so that each element needs the one before it, which
    mirrors copied up front do not hold (before, a hook computing the call
    from its views gave wrong cumsums; found by review 20)."""
    return call.slot < NCL_NSLOTS and ncl_input_overlaps_output(call, call.dimensions[0])


cdef inline void ncl_element_call(ncl_call *call, ncl_call *one, char **args, npy_intp *dims,
                          npy_intp k) noexcept nogil:
    """``one``: element ``k`` of ``call``."""
    cdef int i, size
    one[0] = call[0]
    for i in range(call.nargs):
        args[i] = call.args[i] + k * call.steps[i]
    dims[0] = 1
    one.args = args
    one.dimensions = dims
