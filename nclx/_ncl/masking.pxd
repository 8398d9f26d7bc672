# NCLib's Mask subsystem: kernels and call slots (nclx._ncl.masking).
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp

cdef enum:
    OP_EXTRACT = 0
    OP_PLACE = 1
    OP_PUTMASK = 2
    OP_COUNT = 3
    NTYPENUMS = 24            # NumPy's built-in type numbers below this
    NOGIL_MIN = 4096          # calls of more elements release the GIL
    MAX_PIECES = 256
    PIECES_PER_THREAD = 4

# One call: its operands, its split into pieces and each piece's first
# output position (cnt[npieces] = the total selected).
cdef struct mjob:
    const unsigned char *m    # the mask (nonzero byte = selected)
    const char *src           # extract: the source; place/putmask: the values
    char *dst                 # extract: the output; place/putmask: the array
    const npy_intp *idx       # compress along an axis with rows > 1 element: kept rows
    npy_intp n                # mask elements
    npy_intp nv               # values (place, putmask)
    npy_intp rows             # source rows the mask selects from (1: a flat call)
    npy_intp srow             # bytes from one source row to the next
    npy_intp drow             # bytes from one output row to the next
    npy_intp srows            # gather: source rows per block (the axis length)
    npy_intp rowbytes         # gather: bytes of one row
    npy_intp total            # selected elements of the mask
    npy_intp piece            # elements per piece
    npy_intp next             # the next task a thread of the team claims
    int isz                   # bytes per element
    int typenum               # NumPy type number of the data
    int npieces
    int want                  # threads asked for
    bint quiet                # no hook: run the kernel without the chains
    npy_intp cnt[257]         # MAX_PIECES + 1

cdef void mask_plan(mjob *j, npy_intp n, int want) noexcept nogil
cdef npy_intp mask_count(mjob *j) noexcept nogil
cdef void mask_select(mjob *j) noexcept nogil
cdef int mask_slot(int op, int typenum) noexcept
cdef bint mask_quiet(int k) noexcept nogil
cdef int mask_threads(npy_intp work) noexcept nogil
cdef int mask_run(int op, int k, mjob *j, char **args, npy_intp *dims,
                   npy_intp *steps) noexcept nogil
cdef int mask_prepare(mjob *j, int op, const char *m, npy_intp n, cnp.ndarray a) except -1


cdef inline char *arr_data(cnp.ndarray a) noexcept:
    return <char *>cnp.PyArray_DATA(a)


cdef inline bint arr_overlap(cnp.ndarray a, cnp.ndarray b) noexcept:
    """The bytes of a and b overlap."""
    cdef char *pa = <char *>cnp.PyArray_DATA(a)
    cdef char *pb = <char *>cnp.PyArray_DATA(b)
    return pa < pb + cnp.PyArray_NBYTES(b) and pb < pa + cnp.PyArray_NBYTES(a)


cdef inline bint arr_served(cnp.ndarray a, int op) noexcept:
    """An nclx dtype, native, aligned: op's kernels can move its elements."""
    return (mask_slot(op, cnp.PyArray_TYPE(a)) >= 0 and cnp.PyArray_ISNOTSWAPPED(a)
            and cnp.PyArray_ISALIGNED(a))


cdef inline bint arg_plain(object x):
    """x is nothing NumPy's __array_function__ protocol would hand a call
    to: NumPy's function and nclx's kernels see the same thing."""
    t = type(x)
    if t is cnp.ndarray or t is list or t is tuple or t is int or t is float or t is bool:
        return True
    return not hasattr(t, "__array_function__")
