/*
 * nclx's entry in front of np.sort's dispatcher (nclx._ncl.sortcopy): the
 * head of NumPy's _ArrayFunctionDispatcher as nclx reads it, the vectorcall
 * that takes np.sort's calls, and its swap in and out.  The one-pass copy
 * itself is the Cython side (ncl_sc_try); the kernel is ncl_copycheck.h.
 */
#ifndef NCLX_NCL_NPSORT_H
#define NCLX_NCL_NPSORT_H
#include <stdint.h>
#include <numpy/arrayobject.h>
/* the head of NumPy's _ArrayFunctionDispatcher (numpy/_core/src/
 * multiarray/arrayfunction_override.c, NumPy 2.0-2.5): the dispatcher
 * calls default_impl when no argument overrides the function */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;
    PyObject *relevant_arg_func;
    PyObject *default_impl;
} ncl_dispatcher_head;
static PyObject **ncl_sc_impl_field(PyObject *d) { return &((ncl_dispatcher_head *)d)->default_impl; }
static PyObject **ncl_sc_dict_field(PyObject *d) { return &((ncl_dispatcher_head *)d)->dict; }
static Py_ssize_t ncl_sc_head_size(void) { return (Py_ssize_t)sizeof(ncl_dispatcher_head); }
static int ncl_sc_vectorcall_at_head(PyObject *d)
{
    return Py_TYPE(d)->tp_vectorcall_offset == (Py_ssize_t)offsetof(ncl_dispatcher_head, vectorcall)
        && (Py_TYPE(d)->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL)
        && ((ncl_dispatcher_head *)d)->vectorcall != NULL;
}

/* NumPy's vectorcall of np.sort's dispatcher (kept at the first swap),
 * the Cython side of the one-pass path and its smallest size */
static vectorcallfunc ncl_sc_numpy = NULL;
static PyObject *(*ncl_sc_try)(PyObject *a, PyObject *axis, PyObject *kind, PyObject *stable) = NULL;
static npy_intp ncl_sc_min = (npy_intp)4 << 20;

static int ncl_sc_name(PyObject *k, const char *s)
{
    return PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, s) == 0;
}

/* np.sort(a, axis=-1, kind=None, order=None, *, stable=None), called
 * in front of NumPy's dispatcher.  An exact ndarray has no
 * __array_function__ override, so for a call whose arguments fit the
 * dispatcher's signature (checked here as its relevant-argument
 * function would: at most 4 positional, names among axis, kind, order,
 * stable, none given twice) the dispatcher would call NumPy's
 * implementation with the same arguments: that call is made here at
 * once (one Python call fewer), or the one-pass copy takes it.  Any
 * other call is the dispatcher's, as it came. */
static PyObject *ncl_sc_vcall(PyObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    Py_ssize_t i, nargs = PyVectorcall_NARGS(nargsf), nk;
    PyObject *a, *axis = NULL, *kind = Py_None, *order = Py_None, *stable = Py_None, *r;
    PyObject *impl = ((ncl_dispatcher_head *)self)->default_impl;
    if (nargs < 1 || nargs > 4 || !PyArray_CheckExact(args[0]) || ncl_sc_try == NULL
            || impl == NULL)
        return ncl_sc_numpy(self, args, nargsf, kwnames);
    a = args[0];
    if (nargs > 1) axis = args[1];
    if (nargs > 2) kind = args[2];
    if (nargs > 3) order = args[3];
    nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (i = 0; i < nk; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
        if (ncl_sc_name(k, "axis") && nargs < 2) axis = v;
        else if (ncl_sc_name(k, "kind") && nargs < 3) kind = v;
        else if (ncl_sc_name(k, "order") && nargs < 4) order = v;
        else if (ncl_sc_name(k, "stable")) stable = v;
        else return ncl_sc_numpy(self, args, nargsf, kwnames);
    }
    if (order == Py_None && (npy_intp)PyArray_NBYTES((PyArrayObject *)a) >= ncl_sc_min) {
        r = ncl_sc_try(a, axis, kind, stable);
        if (r != Py_None)
            return r;               /* the sorted copy, or NULL with an error */
        Py_DECREF(r);
    }
    return PyObject_Vectorcall(impl, args, nargsf, kwnames);
}

static vectorcallfunc *ncl_sc_field(PyObject *d) { return &((ncl_dispatcher_head *)d)->vectorcall; }
static int ncl_sc_is_ours(PyObject *d) { return *ncl_sc_field(d) == ncl_sc_vcall; }
static int ncl_sc_is_numpys(PyObject *d) { return ncl_sc_numpy == NULL || *ncl_sc_field(d) == ncl_sc_numpy; }
static void ncl_sc_remember(PyObject *d)
{   /* NumPy's vectorcall, as found when nclx was imported */
    if (ncl_sc_numpy == NULL && *ncl_sc_field(d) != ncl_sc_vcall)
        ncl_sc_numpy = *ncl_sc_field(d);
}
static int ncl_sc_in(PyObject *d)
{   /* nclx's vectorcall in np.sort's dispatcher (NumPy's kept the first time) */
    vectorcallfunc *f = ncl_sc_field(d);
    if (*f == ncl_sc_vcall)
        return 2;                   /* there already */
    if (ncl_sc_numpy == NULL || *f != ncl_sc_numpy)
        return 0;                   /* not known, or someone else's: left as it is */
    *f = ncl_sc_vcall;
    return 1;
}
static int ncl_sc_out(PyObject *d)
{   /* NumPy's back: 0 nothing to do, 1 nclx's replaced, 2 someone else's replaced */
    vectorcallfunc *f = ncl_sc_field(d);
    int r;
    if (ncl_sc_numpy == NULL || *f == ncl_sc_numpy)
        return 0;
    r = *f == ncl_sc_vcall ? 1 : 2;
    *f = ncl_sc_numpy;
    return r;
}
static PyObject *ncl_sc_empty(PyArrayObject *a, npy_intp n)
{   /* a 1-d array of n items of a's dtype (its descriptor, as NumPy's copy keeps it) */
    PyArray_Descr *d = PyArray_DESCR(a);
    Py_INCREF(d);
    return PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, NULL, NULL, 0, NULL);
}
static void ncl_sc_set_min(npy_intp m) { ncl_sc_min = m; }
static npy_intp ncl_sc_get_min(void) { return ncl_sc_min; }
static void ncl_sc_count(int64_t *p) { __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
static int64_t ncl_sc_read(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

#endif
