# cython: wraparound=False, boundscheck=False
"""A generator's state and its fills: the engine of nclx.random.Generator.

``Stream(k0, k1, block)`` holds the Philox key, the main stream's position
(in 64-bit words, plus numpy.random.Philox's leftover 32-bit half), the
number of block-stream calls made so far and the block size.  ``fill``
reserves what one call consumes -- stream positions or a call number --
while holding the GIL (so Python threads sharing a generator get disjoint
draws), then runs the call op through ``ncl_callop_run`` without it.

The methods named after Generator's (``random``, ``normal``, ...) are the
fast paths of the common calls: plain numbers, ``size`` None or an int, no
``out``, no python-level hook.  They return NotImplemented for anything
else, and nclx.random does the rest (checks, broadcasting, the python
chain) and calls ``fill``.
"""
cimport numpy as cnp
from cpython.float cimport PyFloat_AsDouble
from libc.math cimport isfinite, signbit
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.callops cimport ncl_callop_slot, ncl_callop_run
from nclx._ncl.registry cimport ncl_python_chain
from nclx._ncl.walk cimport ncl_chain_is_default
from nclx._ncl.rngperm cimport ncl_perm_scratch
from nclx._ncl.rng cimport (rng_call, ncl_rng_kernel, ncl_rng_word,
                            K_RANDOM, K_UNIFORM, K_STANDARD_NORMAL, K_NORMAL, K_EXPONENTIAL,
                            K_INTEGERS, K_PERMUTATION)
import numpy as np

from nclx._ncl import spec

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object PyArray_Scalar(void *data, cnp.dtype descr, object base)

#: the ops of the fill kinds, in kind order (K_RANDOM ... K_PERMUTATION)
KINDS = ("random", "uniform", "standard_normal", "normal", "exponential", "integers",
         "permutation")
#: dtype codes: position in this tuple
DTYPES = ("float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64")
#: elements per block of the ops that draw from one stream per block
default_block = 2048

cdef enum:
    NKINDS = 7
    NDTYPES = 10
    NOGIL_FROM = 2048       # elements from which a fill releases the GIL

cdef int _slot[NKINDS][NDTYPES]
cdef int _itemsize[NDTYPES]
cdef int _typenum[NDTYPES]
cdef int RNG = spec.SUBSYSTEMS.index("rng")
cdef object _F64 = np.float64
cdef object _F32 = np.float32

#: integers' fast path: type -> (fill dtype code, lowest, highest, output dtype)
cdef dict _INT_TYPES = {}
for _t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
    _INT_TYPES[_t] = (DTYPES.index(np.dtype(_t).name), int(np.iinfo(_t).min), int(np.iinfo(_t).max),
                      np.dtype(_t))
_INT_TYPES[bool] = _INT_TYPES[np.bool_] = (DTYPES.index("uint8"), 0, 1, np.dtype(bool))


def _setup():
    cdef int k, d
    for k in range(NKINDS):
        for d in range(NDTYPES):
            _slot[k][d] = -1
            if DTYPES[d] in spec.CALL_OPS[KINDS[k]][1]:
                _slot[k][d] = ncl_callop_slot(KINDS[k], DTYPES[d])
    for d in range(NDTYPES):
        _itemsize[d] = np.dtype(DTYPES[d]).itemsize
        _typenum[d] = np.dtype(DTYPES[d]).num


_setup()


cdef inline bint _python_quiet() noexcept:
    return ncl_chain_is_default(ncl_python_chain(RNG))


cdef inline bint _small_int(object x) noexcept:
    return type(x) is int and -(1 << 53) <= x <= (1 << 53)


cdef inline bint _plain_number(object x) noexcept:
    """A float (numpy.float64 too) or a small int: its C double is exact
    and NumPy's scalar path would take it the same way."""
    return isinstance(x, float) or _small_int(x)


cdef inline bint _fast_size(object size) noexcept:
    """size None or a plain int, and no python-level hook to walk."""
    if not (size is None or (type(size) is int and 0 <= size < (1 << 60))):
        return False
    return _python_quiet()


cdef inline bint _is_negative(double x) noexcept:
    """numpy.random's "< 0" of a scale: -0.0 counts, NaN does not."""
    return signbit(x) and x == x


cdef uint64_t _LAST = 0xFFFFFFFFFFFFFFFF


cdef int _main_words(uint64_t pos, uint64_t words) except -1:
    """Refuse a call whose ``words`` main-stream words from ``pos`` would go
    past the stream's last position, 2**64 - 1 (the position would wrap
    round to the stream's start)."""
    if words > _LAST - pos:
        raise OverflowError(f"nclx.random: the main stream ends at position 2**64 - 1; "
                            f"{words} words from position {pos} go past it")
    return 0


def as_double(x):
    """``x`` as CPython's PyFloat_AsDouble takes it (numpy.random's scalar
    parameters): its errors included."""
    return PyFloat_AsDouble(x)


cdef class Stream:
    """State of one nclx.random.Generator (see the module's docstring)."""
    cdef readonly uint64_t k0, k1
    cdef readonly npy_intp block
    cdef uint64_t pos
    cdef uint64_t ncall
    cdef bint has_half
    cdef uint32_t half

    def __cinit__(self, uint64_t k0, uint64_t k1, npy_intp block):
        if not 1 <= block <= (1 << 40):
            raise ValueError(f"block must be a positive integer up to 2**40, not {block}")
        self.k0 = k0
        self.k1 = k1
        self.block = block

    @property
    def state(self):
        """(position in words, leftover half or None, call number)."""
        return (self.pos, self.half if self.has_half else None, self.ncall)

    @state.setter
    def state(self, value):
        """Stored as given (nclx.random.Generator's setter checks it first)."""
        cdef uint64_t pos, ncall
        cdef uint32_t half = 0
        p, h, n = value
        pos = p
        ncall = n
        if h is not None:
            half = h
        self.pos = pos
        self.ncall = ncall
        self.has_half = h is not None
        self.half = half

    cdef int _run(self, rng_call *c, int kind, int dt, char *buf, npy_intp n) except -1:
        """Reserve what the call consumes, then fill buf (n elements)."""
        cdef int rc
        cdef npy_intp dims[2]
        cdef npy_intp steps[1]
        cdef char *args[1]
        cdef npy_intp m, ns
        cdef npy_intp *scratch = NULL
        cdef int k = _slot[kind][dt]
        if k < 0:
            raise TypeError(f"nclx.random has no {KINDS[kind]} fill of {DTYPES[dt]}")
        c.kind = kind
        c.itemsize = _itemsize[dt]
        c.k0 = self.k0
        c.k1 = self.k1
        c.block = self.block
        c.lead = 0
        c.scratch = NULL
        if kind > K_UNIFORM:
            if self.ncall == _LAST:
                raise OverflowError("nclx.random: no block-stream call number is left "
                                    "(state[2] is 2**64 - 1)")
            c.call = self.ncall
            self.ncall += 1
        elif dt == 0:
            _main_words(self.pos, <uint64_t>n)
            c.pos = self.pos
            self.pos += <uint64_t>n
        else:
            # 32-bit draws as numpy.random.Philox makes them: the high half a
            # former call left first, then low, high of each new word
            m = n - 1 if self.has_half and n > 0 else n
            _main_words(self.pos, <uint64_t>((m + 1) // 2))
            if m < n:
                c.lead = 1
                c.half = self.half
                self.has_half = False
            c.pos = self.pos
            if m % 2:
                self.has_half = True
                self.half = <uint32_t>(ncl_rng_word(self.k0, self.k1, self.pos + <uint64_t>(m // 2)) >> 32)
            self.pos += <uint64_t>((m + 1) // 2)
        if n == 0:
            return 0
        if kind == K_PERMUTATION:
            ns = ncl_perm_scratch(n, self.block)
            if ns:
                scratch = <npy_intp *>malloc(ns * sizeof(npy_intp))
                if scratch == NULL:
                    raise MemoryError(f"nclx.random: no memory for the buckets of a permutation of {n}")
                c.scratch = scratch
        args[0] = buf
        dims[0] = n
        dims[1] = n
        steps[0] = c.itemsize
        if n >= NOGIL_FROM:
            with nogil:
                rc = ncl_callop_run(k, args, dims, steps, c, ncl_rng_kernel, NULL)
        else:
            rc = ncl_callop_run(k, args, dims, steps, c, ncl_rng_kernel, NULL)
        free(scratch)
        return rc         # -1: a hook's exception, set (review 22)

    def fill(self, int kind, cnp.ndarray out, double a=0.0, double b=1.0, object lo=0,
             object rng=0, cnp.ndarray lo_arr=None, cnp.ndarray rng_arr=None):
        """Fill ``out`` (contiguous, aligned, native, writeable, of one of
        DTYPES) by fill ``kind``: a, b = loc, scale (normal, exponential's
        scale is b) or low, high - low (uniform); lo, rng = integers' low
        (its bits) and inclusive range, or lo_arr, rng_arr (uint64, one of
        each per element).  Returns ``out``."""
        cdef rng_call c
        cdef int dt = DTYPES.index(np.dtype(out.dtype).name)
        cdef npy_intp n = cnp.PyArray_SIZE(out)
        if not 0 <= kind < NKINDS:
            raise ValueError(f"no fill kind {kind}")
        if not (cnp.PyArray_ISCARRAY(out) or cnp.PyArray_ISFARRAY(out)) or not out.dtype.isnative:
            raise ValueError("Stream.fill needs a contiguous, aligned, writeable native array")
        memset(&c, 0, sizeof(c))
        c.a = a
        c.b = b
        c.lo = <uint64_t>(lo & 0xFFFFFFFFFFFFFFFF)
        c.rng = <uint64_t>rng
        if lo_arr is not None:
            if (lo_arr.dtype != np.uint64 or rng_arr.dtype != np.uint64 or lo_arr.size != n
                    or rng_arr.size != n or not lo_arr.flags.c_contiguous
                    or not rng_arr.flags.c_contiguous):
                raise ValueError("lo_arr and rng_arr must be contiguous uint64 of out's size")
            c.lo_arr = <const uint64_t *>cnp.PyArray_DATA(lo_arr)
            c.rng_arr = <const uint64_t *>cnp.PyArray_DATA(rng_arr)
        self._run(&c, kind, dt, <char *>cnp.PyArray_DATA(out), n)
        return out

    # ------------------------------------------------------ fast paths

    cdef object _floats(self, int kind, object size, int dt, double a, double b):
        """size None: a Python float; an int: a new 1-d array."""
        cdef rng_call c
        cdef double d
        cdef float f
        cdef npy_intp n
        cdef cnp.ndarray out
        memset(&c, 0, sizeof(c))
        c.a = a
        c.b = b
        if size is None:
            if dt == 0:
                self._run(&c, kind, 0, <char *>&d, 1)
                return d
            self._run(&c, kind, 1, <char *>&f, 1)
            return <double>f
        n = size
        out = cnp.PyArray_EMPTY(1, &n, _typenum[dt], 0)
        self._run(&c, kind, dt, <char *>cnp.PyArray_DATA(out), n)
        return out

    cdef inline int _float_dtype(self, object size, object dtype, object out) noexcept:
        """dtype code of a fast float call, or -1."""
        if out is not None or not _fast_size(size):
            return -1
        if dtype is _F64:
            return 0
        if dtype is _F32:
            return 1
        return -1

    cdef object _into(self, int kind, object dtype, object out):
        """``out`` filled, when it is a plain ndarray NumPy's checks pass
        (contiguous, aligned, writeable, native, of dtype), else None."""
        cdef rng_call c
        cdef cnp.ndarray a
        cdef int dt
        if type(out) is not cnp.ndarray or not _python_quiet():
            return None
        a = <cnp.ndarray>out
        dt = 0 if dtype is _F64 else 1 if dtype is _F32 else -1
        if dt < 0 or cnp.PyArray_TYPE(a) != _typenum[dt] or not cnp.PyArray_ISNOTSWAPPED(a):
            return None
        if not (cnp.PyArray_ISCARRAY(a) or cnp.PyArray_ISFARRAY(a)):
            return None
        memset(&c, 0, sizeof(c))
        c.b = 1.0
        self._run(&c, kind, dt, <char *>cnp.PyArray_DATA(a), cnp.PyArray_SIZE(a))
        return out

    def random(self, size, dtype, out):
        cdef int dt
        if out is not None and size is None:
            r = self._into(K_RANDOM, dtype, out)
            return NotImplemented if r is None else r
        dt = self._float_dtype(size, dtype, out)
        if dt < 0:
            return NotImplemented
        return self._floats(K_RANDOM, size, dt, 0.0, 1.0)

    def standard_normal(self, size, dtype, out):
        cdef int dt
        if out is not None and size is None:
            r = self._into(K_STANDARD_NORMAL, dtype, out)
            return NotImplemented if r is None else r
        dt = self._float_dtype(size, dtype, out)
        if dt < 0:
            return NotImplemented
        return self._floats(K_STANDARD_NORMAL, size, dt, 0.0, 1.0)

    def uniform(self, low, high, size):
        cdef double lo, hi, r
        if self._float_dtype(size, _F64, None) < 0 or not (_plain_number(low) and _plain_number(high)):
            return NotImplemented
        lo = low
        hi = high
        r = hi - lo
        if not isfinite(r) or _is_negative(r):
            return NotImplemented
        return self._floats(K_UNIFORM, size, 0, lo, r)

    def normal(self, loc, scale, size):
        if self._float_dtype(size, _F64, None) < 0 or not (_plain_number(loc) and _plain_number(scale)):
            return NotImplemented
        if _is_negative(scale):
            return NotImplemented
        return self._floats(K_NORMAL, size, 0, loc, scale)

    def exponential(self, scale, size):
        if self._float_dtype(size, _F64, None) < 0 or not _plain_number(scale):
            return NotImplemented
        if _is_negative(scale):
            return NotImplemented
        return self._floats(K_EXPONENTIAL, size, 0, 0.0, scale)

    def integers(self, low, high, size, dtype, endpoint):
        """Draws of Python-int bounds that need no error, of a NumPy integer
        type (or bool) given as the type."""
        cdef rng_call c
        cdef npy_intp n
        cdef cnp.ndarray out
        cdef uint64_t v = 0
        cdef int dt
        info = _INT_TYPES.get(dtype) if _fast_size(size) else None
        if info is None:
            return NotImplemented
        dt, lb, ub, descr = info
        if high is None:
            low, high = 0, low
        if type(low) is not int or type(high) is not int or type(endpoint) is not bool:
            return NotImplemented
        if not endpoint:
            high = high - 1
        if not (lb <= low <= high <= ub):
            return NotImplemented
        memset(&c, 0, sizeof(c))
        c.lo = <uint64_t>(low & 0xFFFFFFFFFFFFFFFF)
        c.rng = <uint64_t>(high - low)
        if size is None:
            self._run(&c, K_INTEGERS, dt, <char *>&v, 1)
            if dtype is bool:            # the Python type: a Python bool, as NumPy
                return (<char *>&v)[0] != 0
            return PyArray_Scalar(&v, descr, None)
        n = size
        out = cnp.PyArray_EMPTY(1, &n, (<cnp.dtype>descr).type_num, 0)
        self._run(&c, K_INTEGERS, dt, <char *>cnp.PyArray_DATA(out), n)
        return out

    def permutation(self, x):
        """permutation(n) of a Python int n."""
        cdef rng_call c
        cdef npy_intp n
        cdef cnp.ndarray out
        if type(x) is not int or not (x < (1 << 40)) or not _python_quiet():
            return NotImplemented
        n = max(x, 0)
        memset(&c, 0, sizeof(c))
        out = cnp.PyArray_EMPTY(1, &n, cnp.NPY_INT64, 0)
        self._run(&c, K_PERMUTATION, 5, <char *>cnp.PyArray_DATA(out), n)
        return out
