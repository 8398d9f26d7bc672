# cython: wraparound=True, boundscheck=True
"""Build real ``numpy.ufunc`` objects whose loops are nclx kernels.

One ufunc set is built per instruction-set build of the kernels (baseline,
and avx2 where the compiler supports it); :func:`selected_isa` picks the one
the CPU can run, unless ``NCLX_ISA`` names one.
"""
import importlib
import os

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF
from libc.stdlib cimport malloc
from libc.string cimport strdup

import numpy as np

from nclx._ncl import spec
from nclx._ncl.dtypes import fixed_width

cnp.import_array()
cnp.import_ufunc()

cdef extern from "numpy/ufuncobject.h":
    ctypedef void (*generic_loop "PyUFuncGenericFunction")(
        char **, const cnp.npy_intp *, const cnp.npy_intp *, void *) noexcept nogil
    object PyUFunc_FromFuncAndData(generic_loop *func, void **data, char *types,
                                   int ntypes, int nin, int nout, int identity,
                                   const char *name, const char *doc, int unused)
    object PyUFunc_FromFuncAndDataAndSignatureAndIdentity(
        generic_loop *func, void **data, char *types, int ntypes, int nin, int nout,
        int identity, const char *name, const char *doc, int unused, const char *signature,
        object identity_value)
    ctypedef PyObject *(*vectorcallfunc)(PyObject *callable, PyObject *const *args,
                                         size_t nargsf, PyObject *kwnames)
    ctypedef struct PyUFuncObject:
        void *type_resolver
        vectorcallfunc vectorcall
        PyObject *_loops
    int PyUFunc_AddPromoter(object ufunc, object DType_tuple, object promoter) except -1
    enum:
        PyUFunc_Zero
        PyUFunc_One
        PyUFunc_MinusOne
        PyUFunc_None
        PyUFunc_ReorderableNone
        PyUFunc_IdentityValue

cdef extern from *:
    """
    static int ncl_cpu_has_avx2(void)
    {
    #if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
    #else
        return 0;
    #endif
    }
    """
    int ncl_cpu_has_avx2()

_IDENTITY = {
    spec.ZERO: PyUFunc_Zero,
    spec.ONE: PyUFunc_One,
    spec.MINUS_ONE: PyUFunc_MinusOne,
    spec.NONE: PyUFunc_None,
    spec.REORDERABLE_NONE: PyUFunc_ReorderableNone,
}

#: ISA builds in order of preference (widest first).
ISA_PREFERENCE = ("avx2", "baseline")

_cache = {}


from nclx.errors import NclxISAError


def built_isas():
    """ISA builds of the kernel module that exist in this installation."""
    found = []
    for isa in ISA_PREFERENCE:
        try:
            importlib.import_module(f"nclx._ncl._kernels_{isa}")
        except ImportError:
            continue
        found.append(isa)
    return tuple(found)


def cpu_supports(isa):
    """Whether this CPU can run the kernels built for ``isa``."""
    if isa == "baseline":
        return True
    if isa == "avx2":
        return bool(ncl_cpu_has_avx2())
    return False


def available_isas():
    """ISA builds that exist and that this CPU can run, widest first."""
    return tuple(isa for isa in built_isas() if cpu_supports(isa))


_SELECTED = []          # the choice made at import (the first call)


def selected_isa():
    """The ISA build nclx uses: ``NCLX_ISA`` if set, else the widest
    available -- as read when nclx loaded its kernels (before, read at
    each call: ``config()`` named the ISA of a later ``NCLX_ISA`` meant for
    a child process, not the one running, or raised; review 23)."""
    if _SELECTED:
        return _SELECTED[0]
    forced = os.environ.get("NCLX_ISA", "").strip()
    avail = available_isas()
    if forced:
        if forced not in avail:
            raise NclxISAError(
                f"NCLX_ISA={forced!r} cannot run here; available: {', '.join(avail)}")
        choice = forced
    else:
        choice = avail[0]
    _SELECTED.append(choice)
    return choice


def kernel_module(isa=None):
    """The compiled kernel module of one ISA build."""
    isa = selected_isa() if isa is None else isa
    if isa not in available_isas():
        raise NclxISAError(f"isa={isa!r} cannot run here; available: {', '.join(available_isas())}")
    return importlib.import_module(f"nclx._ncl._kernels_{isa}")


def kernel_key(op, chars):
    """The kernel (op, input dtypes, output dtype) serving one type signature here."""
    dts = tuple(fixed_width(c) for c in chars)
    return (op, dts[:-1], dts[-1])


def _signatures(op):
    """(type characters, kernel key) per loop of ``op``, in NumPy's loop order."""
    return [(chars, kernel_key(op, chars)) for chars in spec.char_signatures(op)]


def make_ufunc(str op, list loops):
    """A ``numpy.ufunc`` named like NumPy's ``op`` whose loops are ``loops``:
    (type characters, loop address, data address) in NumPy's loop order."""
    kind, nin, ident, _ = spec.OPS[op]
    cdef int ntypes = len(loops)
    cdef int nargs = nin + 1
    if ntypes == 0:
        raise ValueError(f"no loops for {op}")
    # NumPy keeps these pointers for the ufunc's lifetime: allocate, never free.
    cdef generic_loop *funcs = <generic_loop *>malloc(ntypes * sizeof(generic_loop))
    cdef void **data = <void **>malloc(ntypes * sizeof(void *))
    cdef char *types = <char *>malloc(ntypes * nargs)
    if funcs == NULL or data == NULL or types == NULL:
        raise MemoryError()
    cdef int k, j
    for k, (chars, addr, daddr) in enumerate(loops):
        funcs[k] = <generic_loop><size_t>addr
        data[k] = <void *><size_t>daddr
        for j in range(nargs):
            types[k * nargs + j] = <char>np.dtype(chars[j]).num
    npuf = spec.numpy_ufunc(op)
    if npuf is not None:
        name = npuf.__name__      # true_divide is called "divide" in NumPy 2
        # NumPy's one-line summary: the first line after the signature's
        # (before, the blank line between them; review 26)
        summary = next((ln for ln in (npuf.__doc__ or "").splitlines()[1:] if ln.strip()), "")
        doc = (f"nclx's ``numpy.{name}``: same signature, broadcasting, out=, where=, "
               f"dtype= and reductions.\n\n{summary}")
    else:
        name = op
        doc = _OWN_DOCS[op]
    if npuf is not None and isinstance(npuf.identity, bool):
        # logical_and's identity is True, not 1: NumPy's own identity object
        ufunc = PyUFunc_FromFuncAndDataAndSignatureAndIdentity(
            funcs, data, types, ntypes, nin, 1, PyUFunc_IdentityValue, strdup(name.encode()),
            strdup(doc.encode()), 0, NULL, npuf.identity)
    else:
        ufunc = PyUFunc_FromFuncAndData(funcs, data, types, ntypes, nin, 1,
                                        _IDENTITY[ident], strdup(name.encode()),
                                        strdup(doc.encode()), 0)
    if npuf is not None:
        # Borrow NumPy's type resolver for the op of the same name, so promotion
        # (true_divide of integers -> float64, boolean subtract/negative
        # raising TypeError, ...) matches NumPy's exactly.
        (<PyUFuncObject *>ufunc).type_resolver = (<PyUFuncObject *>npuf).type_resolver
    if npuf is not None:
        _route_to_numpy(ufunc, npuf, kind == "compare", op.startswith("logical_"))
        if op.startswith("logical_"):
            _copy_promoters(ufunc, npuf)
    # named as NumPy names its ufuncs where they have the attributes (NumPy
    # 2.1 and later: a ufunc's __dict__; review 26: both were missing)
    if hasattr(npuf if npuf is not None else ufunc, "__dict__"):
        ufunc.__module__ = "nclx.ufuncs"
        ufunc.__qualname__ = name
    return ufunc


_OWN_DOCS = {
    "fma": "fma(a, b, c, /, out=None, *, where=True, ...)\n\n"
           "a * b + c rounded once (C's fma), for float32 and float64.",
    "where": "where(condition, x, y, /, out=None, *, ...)\n\n"
             "x where condition (bool) is true, else y; x and y share one dtype.\n"
             "nclx's own ufunc, not np.where: its loops are nclx's fixed-width dtypes,\n"
             "others are cast to one as any ufunc casts them (float16 x and y give\n"
             "float32), and a condition that is not bool is refused.",
    "cast": "cast(a, /, out=None, *, signature=(from, to), ...)\n\n"
            "a converted to another fixed-width dtype as a.astype does; "
            "use nclx.convert(a, dtype).",
}


cdef object _make_ufunc(str op, dict table):
    return make_ufunc(op, [(chars, table[key], 0) for chars, key in _signatures(op)
                           if key in table])


# Calls NumPy serves through loops a new ufunc cannot have go to NumPy's ufunc
# of the same name; every other call runs nclx's loops:
# - NumPy 2 compares integer arrays with Python ints exactly, also when the
#   int does not fit the array's dtype (np.less(int8_array, 200) is all
#   True), through special loops of its comparison ufuncs;
# - string, bytes and void operands, and NumPy 2's new-style dtypes
#   (StringDType), whose loops and promoters are not in a ufunc's legacy loop
#   list (review 26: nclx.ufuncs.equal of two str arrays raised);
# - datetime and timedelta operands of logical_and/or/xor/not, which NumPy
#   resolves through promoters (to bool).  The ufunc's methods (reduce,
#   accumulate, outer, at) are not routed; logical_and/or/xor carry NumPy's
#   any-DType promoter itself (_copy_promoters) for their other operands.
cdef extern from *:
    """
    static int ncl_int_outside(PyObject *x, PyObject *other)
    {
        long long v;
        int overflow = 0, tn, bits;
        npy_intp size;
        PyArray_Descr *d = NULL;
        if (!PyLong_CheckExact(x)) return 0;
        v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
        if (overflow) return 1;
        if (PyArray_Check(other)) { d = PyArray_DESCR((PyArrayObject *)other); Py_INCREF(d); }
        else if (PyArray_IsScalar(other, Generic)) { d = PyArray_DescrFromScalar(other); }
        if (d == NULL) return 0;
        tn = d->type_num;
        size = PyDataType_ELSIZE(d);
        Py_DECREF(d);
        if (!PyTypeNum_ISINTEGER(tn)) return 0;
        bits = (int)(8 * size);
        if (PyTypeNum_ISUNSIGNED(tn)) {
            if (v < 0) return 1;
            return bits < 64 && ((unsigned long long)v >> bits) != 0;
        }
        if (bits >= 64) return 0;
        return v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1));
    }

    static int ncl_needs_numpy(PyObject *x, int datetimes)
    {
        int tn;
        if (PyUnicode_Check(x) || PyBytes_Check(x)) return 1;
        if (PyArray_Check(x)) tn = PyArray_DESCR((PyArrayObject *)x)->type_num;
        else if (PyArray_IsScalar(x, Generic)) {
            PyArray_Descr *d = PyArray_DescrFromScalar(x);
            if (d == NULL) { PyErr_Clear(); return 0; }
            tn = d->type_num;
            Py_DECREF(d);
        }
        else return 0;
        if (tn == NPY_STRING || tn == NPY_UNICODE || tn == NPY_VOID || tn >= NPY_NTYPES_LEGACY)
            return 1;
        return datetimes && (tn == NPY_DATETIME || tn == NPY_TIMEDELTA);
    }

    /* An operand whose routing the checks above decide: an exact ndarray,
       a NumPy scalar, a Python number, str, bytes or None.  Anything else
       (a list, a buffer, an __array__ object, a subclass, an override) goes
       the slow way (review 27). */
    static int ncl_plain(PyObject *x)
    {
        return Py_TYPE(x) == &PyArray_Type || PyArray_IsScalar(x, Generic)
            || PyLong_CheckExact(x) || PyFloat_CheckExact(x) || PyComplex_CheckExact(x)
            || PyBool_Check(x) || PyUnicode_CheckExact(x) || PyBytes_CheckExact(x)
            || x == Py_None;
    }
    """
    int ncl_int_outside(PyObject *x, PyObject *other)
    int ncl_needs_numpy(PyObject *x, int datetimes)
    int ncl_plain(PyObject *x)
    PyObject *PyObject_Vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

cdef vectorcallfunc _ufunc_vectorcall = NULL
cdef dict _numpy_twin = {}      # address of an nclx ufunc -> (NumPy's ufunc, compare, logical, nin)


_OVERRIDE_KEYS = ("out", "where")


cdef bint _overrides(x):
    """An operand with an ``__array_ufunc__`` of its own (or None)."""
    t = type(x)
    if t is np.ndarray:
        return False
    f = getattr(t, "__array_ufunc__", _NO_OVERRIDE)
    return f is not _NO_OVERRIDE and f is not _NDARRAY_UFUNC


_NO_OVERRIDE = object()
_NDARRAY_UFUNC = np.ndarray.__array_ufunc__


cdef bint _array_like(x):
    """What a ufunc converts with ``np.asarray`` (not a Python number, not
    an ndarray subclass: a masked array keeps its type and mask)."""
    if isinstance(x, (int, float, complex, str, bytes, np.ndarray, np.generic)) or x is None:
        return False
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__") \
            or hasattr(x, "__array_interface__") or hasattr(x, "__array_struct__"):
        return True
    try:
        memoryview(x).release()
    except TypeError:
        return False
    return True


cdef object _slow_plan(tuple entry, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames):
    """OVERRIDE: nclx's call as given (an override anywhere: NumPy's
    dispatch hands it nclx's ufunc; review 27: a routed call handed the
    override NumPy's); AS_GIVEN: route the arguments as they are; else the
    positional arguments with the array-like inputs converted as NumPy's
    ufunc converts them (review 27: lists, buffers and __array__ objects
    of strings or with out-of-range Python ints missed the routing)."""
    cdef Py_ssize_t i, nin = entry[3]
    cdef list pos = [<object>args[i] for i in range(nargs)]
    if kwnames != NULL:
        for i, key in enumerate(<tuple>kwnames):
            if key in _OVERRIDE_KEYS:
                v = <object>args[nargs + i]
                for x in (v if isinstance(v, tuple) else (v,)):
                    if _overrides(x):
                        return OVERRIDE
    for x in pos:
        if _overrides(x):
            return OVERRIDE
    changed = False
    for i in range(min(nargs, nin)):
        if not ncl_plain(args[i]) and _array_like(pos[i]):
            pos[i] = np.asarray(pos[i])
            changed = True
    return tuple(pos) if changed else AS_GIVEN


OVERRIDE, AS_GIVEN = object(), object()


cdef bint _route(tuple entry, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames) except -1:
    cdef bint compare = entry[1], logical = entry[2]
    cdef Py_ssize_t i
    if compare and nargs >= 2 and (ncl_int_outside(args[0], args[1])
                                   or ncl_int_outside(args[1], args[0])):
        return True
    for i in range(nargs):
        if ncl_needs_numpy(args[i], logical):
            return True
    if compare and kwnames != NULL:
        for key in <tuple>kwnames:
            if key == "casting" or key == "signature" or key == "dtype":
                # NumPy compares Python ints through loops of their own
                # also under casting=, signature= or dtype= (review 27:
                # casting='equiv' raised)
                for i in range(min(nargs, 2)):
                    x = <object>args[i]
                    if isinstance(x, int) and not isinstance(x, bool):
                        return True
                break
    return False


cdef PyObject *_twin_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) except NULL:
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), i, nkw
    cdef tuple entry = <tuple>_numpy_twin[<size_t>callable]
    cdef bint plain = True
    cdef object r
    nkw = 0 if kwnames == NULL else len(<tuple>kwnames)
    for i in range(nargs):
        if not ncl_plain(args[i]):
            plain = False
            break
    for i in range(nkw if plain else 0):
        key = (<tuple>kwnames)[i]
        if (key == "out" or key == "where") and not ncl_plain(args[nargs + i]):
            plain = False
            break
    if not plain:
        converted = _slow_plan(entry, args, nargs, kwnames)
        if converted is OVERRIDE:
            return _ufunc_vectorcall(callable, args, nargsf, kwnames)
        if converted is AS_GIVEN:
            if _route(entry, args, nargs, kwnames):
                return PyObject_Vectorcall(<PyObject *>entry[0], args, nargsf, kwnames)
            return _ufunc_vectorcall(callable, args, nargsf, kwnames)
        kw = {} if kwnames == NULL else {k: <object>args[nargs + i]
                                          for i, k in enumerate(<tuple>kwnames)}
        r = (<object>callable)(*converted, **kw)
        Py_INCREF(r)
        return <PyObject *>r
    if _route(entry, args, nargs, kwnames):
        return PyObject_Vectorcall(<PyObject *>entry[0], args, nargsf, kwnames)
    return _ufunc_vectorcall(callable, args, nargsf, kwnames)


cdef _copy_promoters(ufunc, npuf):
    """NumPy's promoters of ``npuf`` that apply to any DTypes, added to
    ``ufunc``: logical_and/or/xor cast every operand to bool (or object)
    through one, so that NumPy's ``logical_and.reduce`` of integers, an
    int64 with a uint64, and a float32 with a Python float beyond float32's
    range (no cast warning) resolve as NumPy's do (before, their twins
    raised or warned)."""
    cdef object loops = <object>(<PyUFuncObject *>npuf)._loops
    for dtypes, impl in list(loops):
        if (type(impl).__name__ == "PyCapsule"
                and all(d is np.dtype for d in dtypes)):
            PyUFunc_AddPromoter(ufunc, dtypes, impl)


cdef _route_to_numpy(ufunc, npuf, bint compare, bint logical):
    global _ufunc_vectorcall
    if _ufunc_vectorcall == NULL:
        _ufunc_vectorcall = (<PyUFuncObject *>ufunc).vectorcall
    _numpy_twin[<size_t><PyObject *>ufunc] = (npuf, compare, logical, ufunc.nin)
    (<PyUFuncObject *>ufunc).vectorcall = <vectorcallfunc>_twin_vectorcall


def ufuncs_for(isa=None):
    """Dict op name -> ufunc whose loops are one ISA build's kernels, called
    directly (no chains; for testing the kernels).  nclx.ufuncs' public
    ufuncs run the entries instead.  Cached."""
    isa = selected_isa() if isa is None else isa
    if isa not in _cache:
        module = kernel_module(isa)
        table = {(op, tuple(ins), out): addr for op, ins, out, _name, addr in module.kernels()}
        _cache[isa] = {op: _make_ufunc(op, table) for op in spec.OPS
                       if op not in spec.NUMPY_LOOPS}
    return _cache[isa]


def loop_signatures(op):
    """The type signatures (``'ll->l'``, ...) nclx registers for ``op``."""
    return [chars[:-1] + "->" + chars[-1] for chars, _ in _signatures(op)]
