# cython: wraparound=True, boundscheck=True
"""Build real ``numpy.ufunc`` objects whose loops are nclx kernels.

One ufunc set is built per instruction-set build of the kernels (baseline,
and avx2 where the compiler supports it); :func:`selected_isa` picks the one
the CPU can run, unless ``NCLX_ISA`` names one.
"""
import importlib
import os

cimport numpy as cnp
from libc.stdlib cimport malloc
from libc.string cimport strdup

import numpy as np

from nclx._ncl import spec, twins
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
    ctypedef struct PyUFuncObject:
        void *type_resolver
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
        twins.pair(ufunc, npuf, kind == "compare", op.startswith("logical_"))
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
