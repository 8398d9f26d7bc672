# Reading and writing NumPy's ufunc loop tables (nclx._ncl.looptable).
cimport numpy as cnp

cdef extern from "numpy/ufuncobject.h":
    ctypedef void (*generic_loop "PyUFuncGenericFunction")(
        char **, const cnp.npy_intp *, const cnp.npy_intp *, void *) noexcept nogil
    ctypedef struct PyUFuncObject:
        int nin
        int nout
        int nargs
        int ntypes
        generic_loop *functions
        void **data
        const char *types
        void *vectorcall
    int PyUFunc_ReplaceLoopBySignature(PyUFuncObject *func, generic_loop newfunc,
                                       const int *signature, generic_loop *oldfunc)

cdef int ncl_find_loop(PyUFuncObject *uf, const int *sig, int nargs) noexcept
