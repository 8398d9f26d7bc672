# cython: wraparound=True, boundscheck=True
"""NumPy's ufunc loop tables as nclx reads them: finding a loop by type
signature, and checking at install time that the running NumPy's ufunc
objects have the layout nclx was compiled for (an unknown layout refuses
to install with :class:`NclxInstallError` instead of corrupting state).

The entries that replace loops are nclx._ncl.entries.
"""
cimport numpy as cnp
import numpy as np

from nclx._ncl import spec

cnp.import_array()
cnp.import_ufunc()

cdef extern from *:
    """
    #include <stddef.h>
    #include <numpy/ufuncobject.h>
    static Py_ssize_t ncl_ufunc_vectorcall_offset(void) { return offsetof(PyUFuncObject, vectorcall); }
    static Py_ssize_t ncl_type_vectorcall_offset(PyObject *o) { return Py_TYPE(o)->tp_vectorcall_offset; }
    """
    Py_ssize_t ncl_ufunc_vectorcall_offset()
    Py_ssize_t ncl_type_vectorcall_offset(object o)


from nclx.errors import NclxInstallError


cdef int ncl_find_loop(PyUFuncObject *uf, const int *sig, int nargs) noexcept:
    """Index of the first loop of ``uf`` with exactly this signature, or -1."""
    cdef int i, j
    for i in range(uf.ntypes):
        for j in range(nargs):
            if <int>uf.types[i * nargs + j] != sig[j]:
                break
        else:
            return i
    return -1


cdef tuple _passed = None     # (ufunc objects, their ntypes) of the last check passed


def check_numpy_layout():
    """Check that the running NumPy's ufunc objects have the layout nclx was
    compiled for (the fields install() reads and writes); raise
    NclxInstallError naming the first difference.

    A check that passed is not repeated while ``numpy.<op>`` are the same
    objects with the same number of loops (install() after uninstall()
    costs microseconds, not the millisecond the full check takes)."""
    global _passed
    cdef PyUFuncObject *uf
    cdef int i, j
    served = [op for op in spec.OPS if op not in spec.NCLX_ONLY]
    ufuncs = tuple([spec.numpy_ufunc(op) for op in served])
    ntypes = tuple([getattr(u, "ntypes", None) for u in ufuncs])
    if (_passed is not None and ntypes == _passed[1]
            and all([a is b for a, b in zip(ufuncs, _passed[0])])):
        return True
    off = ncl_ufunc_vectorcall_offset()
    for op, ufunc in zip(served, ufuncs):
        if not isinstance(ufunc, np.ufunc):
            raise NclxInstallError(f"numpy.{op} is not a numpy.ufunc ({type(ufunc).__name__})")
        uf = <PyUFuncObject *>ufunc
        if (uf.nin, uf.nout, uf.nargs, uf.ntypes) != (ufunc.nin, ufunc.nout, ufunc.nargs,
                                                     ufunc.ntypes):
            raise NclxInstallError(
                f"NumPy {np.__version__}: numpy.{op}'s C layout differs from the one nclx was "
                f"built against (nin/nout/nargs/ntypes read as {(uf.nin, uf.nout, uf.nargs, uf.ntypes)}, "
                f"Python says {(ufunc.nin, ufunc.nout, ufunc.nargs, ufunc.ntypes)}); rebuild nclx "
                f"against this NumPy")
        for i in range(uf.ntypes):
            chars = "".join([cnp.PyArray_DescrFromType(<int>uf.types[i * uf.nargs + j]).char
                             for j in range(uf.nargs)])
            want = ufunc.types[i].replace("->", "")
            if chars != want:
                raise NclxInstallError(
                    f"NumPy {np.__version__}: numpy.{op}'s loop table {i} reads {chars!r}, "
                    f"Python says {want!r}; rebuild nclx against this NumPy")
        if ncl_type_vectorcall_offset(ufunc) != off or uf.vectorcall == NULL:
            raise NclxInstallError(
                f"NumPy {np.__version__}: numpy.ufunc's vectorcall slot is not where nclx "
                f"expects it; rebuild nclx against this NumPy")
    _passed = (ufuncs, ntypes)
    return True


def current_loop(ufunc, chars):
    """Address of the loop function NumPy's ``ufunc`` now has for ``chars``."""
    cdef int sig[8]
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(f"not a numpy.ufunc: {ufunc!r}")
    cdef PyUFuncObject *uf = <PyUFuncObject *>ufunc
    cdef int j, i
    if len(chars) != uf.nargs:
        raise ValueError(f"{ufunc.__name__} takes {uf.nargs} types, got {chars!r}")
    for j in range(uf.nargs):
        sig[j] = np.dtype(chars[j]).num
    i = ncl_find_loop(uf, sig, uf.nargs)
    if i < 0:
        raise KeyError(f"{ufunc.__name__} has no loop {chars!r}")
    return <size_t>uf.functions[i]


def find_loop(ufunc, chars):
    """(index, address, data address) of NumPy's loop ``chars`` in ``ufunc``, or None."""
    cdef int sig[8]
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(f"not a numpy.ufunc: {ufunc!r}")
    cdef PyUFuncObject *uf = <PyUFuncObject *>ufunc
    cdef int j, i
    if len(chars) != uf.nargs:
        raise ValueError(f"{ufunc.__name__} takes {uf.nargs} types, got {chars!r}")
    for j in range(uf.nargs):
        sig[j] = np.dtype(chars[j]).num
    i = ncl_find_loop(uf, sig, uf.nargs)
    if i < 0:
        return None
    return i, <size_t>uf.functions[i], <size_t>uf.data[i]
