/*
 * The head of NumPy's private PyArrayMethodObject (numpy/_core/src/
 * multiarray/array_method.h, the same from 2.0 to 2.5): what nclx reads of
 * NumPy's own ArrayMethods -- the sort methods of 2.5 (nclx._ncl.sortmeth)
 * and the within-dtype copy methods (nclx._ncl.copying) -- each module
 * checking the layout before it reads.
 */
#ifndef NCLX_NCL_ARRAYMETHOD_H
#define NCLX_NCL_ARRAYMETHOD_H
#include <Python.h>
#include <numpy/dtype_api.h>

typedef struct {
    PyObject_HEAD
    char *name;
    int nin, nout;
    int casting;
    int flags;
    void *static_data;
    void *resolve_descriptors_with_scalars;
    void *resolve_descriptors;
    PyArrayMethod_GetLoop *get_strided_loop;
} ncl_meth_head;

#endif
