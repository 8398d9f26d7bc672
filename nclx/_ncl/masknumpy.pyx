# cython: wraparound=False, boundscheck=False
"""NCLib's Mask subsystem, NumPy's way: the "numpy" node of the mask chains
runs NumPy's own function (extract, place, putmask, count_nonzero) over
views of the call's buffers, on one thread (nclx._ncl.masking's slots)."""
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp
import sys

import numpy as np

from nclx._ncl.hookerrors import Unraisable

cnp.import_array()

# NumPy's own functions, for the chains' "numpy" node (saved at import, so
# that a routed NumPy never calls back into nclx)
_np_extract = np.extract
_np_place = np.place
_np_putmask = np.putmask
_np_count = np.count_nonzero


cdef object _view(char *p, npy_intp n, int typenum, bint writeable):
    cdef cnp.ndarray a = cnp.PyArray_SimpleNewFromData(1, &n, typenum, <void *>p)
    if not writeable:
        cnp.PyArray_CLEARFLAGS(a, cnp.NPY_ARRAY_WRITEABLE)
    return a


cdef void _report() noexcept:
    sys.unraisablehook(Unraisable(sys.exc_info()[1],
                                  "Exception ignored in nclx.mask's NumPy node", None))


cdef void mask_numpy_extract(char **args, const npy_intp *dims, int typenum) noexcept nogil:
    with gil:
        try:
            res = _np_extract(_view(args[0], dims[1], cnp.NPY_BOOL, False),
                              _view(args[1], dims[2], typenum, False))
            _view(args[2], dims[3], typenum, True)[...] = res
        except BaseException:
            _report()


cdef void _assign(object fn, char **args, const npy_intp *dims, int typenum) noexcept:
    """np.place or np.putmask (``fn``) of the values into the array, as the mask says."""
    try:
        fn(_view(args[2], dims[3], typenum, True), _view(args[0], dims[1], cnp.NPY_BOOL, False),
           _view(args[1], dims[2], typenum, False))
    except BaseException:
        _report()


cdef void mask_numpy_place(char **args, const npy_intp *dims, int typenum) noexcept nogil:
    with gil:
        _assign(_np_place, args, dims, typenum)


cdef void mask_numpy_putmask(char **args, const npy_intp *dims, int typenum) noexcept nogil:
    with gil:
        _assign(_np_putmask, args, dims, typenum)


cdef void mask_numpy_count(char **args, const npy_intp *dims) noexcept nogil:
    with gil:
        try:
            (<npy_intp *>args[1])[0] = _np_count(_view(args[0], dims[1], cnp.NPY_BOOL, False))
        except BaseException:
            _report()
