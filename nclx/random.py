"""nclx.random: NCLib's RNG subsystem -- numpy.random.Generator's common
methods, filled on nclx's threads from counter-based Philox4x64-10 streams.

>>> import numpy as np, nclx.random
>>> g = nclx.random.Generator(12345)
>>> x = g.standard_normal(10_000_000)          # on nclx's threads
>>> u = g.random(3)
>>> u.tobytes() == np.random.Generator(np.random.Philox(12345)).random(3).tobytes()
True

What a result depends on: the seed, the sequence of calls made on the
generator, and -- for every method but ``random`` and ``uniform`` -- the
block size (``block``, default :data:`default_block`); never the thread
count.  ``random`` and ``uniform`` read one stream at consecutive
positions: they give exactly numpy.random.Generator(numpy.random.Philox(seed))'s
values, call after call, for float64 and float32 (the other methods leave
that stream where it is; NumPy's move theirs).  The other methods reject
and redraw, so each block of ``block`` output elements draws from its own
Philox stream (the block number and the generator's call number in the
counter): their values are NumPy's distributions but not NumPy's streams.

Every fill is one call of an RNG call op (``nclx._ncl.spec.CALL_OPS``) and
walks the python-level chain of the "rng" subsystem, its funnel chain and
the kernel chain ``<op>_<dtype>`` (docs/random.md).
"""
import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from nclx import _random_args as A
from nclx._ncl.pychain import run_python_chain
from nclx._ncl.registry import SUBSYSTEMS
from nclx._ncl.rngstream import KINDS, Stream, default_block

__all__ = ["Generator", "default_block"]

_RNG = SUBSYSTEMS.index("rng")
(K_RANDOM, K_UNIFORM, K_STANDARD_NORMAL, K_NORMAL, K_EXPONENTIAL, K_INTEGERS,
 K_PERMUTATION) = range(len(KINDS))


def _final(func, method, args, kwargs):
    """The python chain's end: a Generator method runs its own body."""
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", None)
    if isinstance(owner, Generator) and name in KINDS:
        return getattr(owner, "_" + name)(*args, **kwargs)
    return func(*args, **kwargs)


def _extra(**kwargs):
    """nclx's keyword arguments that differ from their defaults (a python
    hook can hand the rest to NumPy's method unchanged)."""
    return {k: v for k, v in kwargs.items() if not (v is None or (k == "dtype" and v is np.float64))}


def _restore(k0, k1, block, state):
    g = Generator.__new__(Generator)
    g._s = Stream(k0, k1, block)
    g._s.state = A.state(state)
    g._seed_seq = None
    return g


class Generator:
    """Random numbers from counter-based Philox4x64-10 streams, filled on
    nclx's threads.

    Parameters
    ----------
    seed : None, int, array_like of ints or numpy.random.SeedSequence
        Seeds the key as ``numpy.random.Philox(seed)`` does: the same seed
        gives the same key (and the same errors for a bad seed).
    block : int, keyword-only
        Elements per block of the methods that draw each block from its own
        stream (all but ``random`` and ``uniform``); their values depend on it.
    """

    __slots__ = ("_s", "_seed_seq")

    def __init__(self, seed=None, *, block=default_block):
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        key = ss.generate_state(2, np.uint64)
        if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 1 <= block <= 2**40:
            raise ValueError(f"block must be a positive integer up to 2**40, not {block!r}")
        self._s = Stream(int(key[0]), int(key[1]), int(block))
        self._seed_seq = ss

    def __repr__(self):
        return f"Generator(Philox4x64, block={self._s.block})"

    def __reduce__(self):
        return _restore, (self._s.k0, self._s.k1, self._s.block, self._s.state)

    @property
    def block(self):
        """Elements per block of the block-stream methods."""
        return self._s.block

    @property
    def key(self):
        """The Philox key: ``numpy.random.Philox(seed).state['state']['key']``."""
        return (self._s.k0, self._s.k1)

    @property
    def state(self):
        """(main stream position in 64-bit words, leftover 32-bit half or
        None, number of block-stream calls made); settable."""
        return self._s.state

    @state.setter
    def state(self, value):
        self._s.state = A.state(value)

    def _walk(self, name, args, kwargs):
        return run_python_chain(_RNG, getattr(self, name), "__call__", args, kwargs, _final)

    def _fill(self, kind, size, dtype, out, a=0.0, b=1.0, shape=None):
        arr, result = A.output(size, dtype, out, shape)
        self._s.fill(kind, arr, a, b)
        return float(arr) if result is None else result

    # ------------------------------------------------------------ random
    def random(self, size=None, dtype=np.float64, out=None):
        """Floats in [0, 1): ``numpy.random.Generator.random``.

        Each value takes one word of the main stream (float32: one 32-bit
        half), so the values equal those of
        ``numpy.random.Generator(numpy.random.Philox(seed))``.

        Parameters
        ----------
        size : None, int or tuple of ints
            None: one Python float.
        dtype : float64 or float32
        out : ndarray, optional
            A contiguous, aligned, writeable native array of ``dtype`` to fill.
        """
        r = self._s.random(size, dtype, out)
        return self._walk("random", (size, dtype, out), {}) if r is NotImplemented else r

    def _random(self, size=None, dtype=np.float64, out=None):
        return self._fill(K_RANDOM, size, A.float_dtype(dtype, "random"), out)

    # ----------------------------------------------------------- uniform
    def uniform(self, low=0.0, high=1.0, size=None, *, dtype=np.float64, out=None):
        """Floats in [low, high): ``low + (high - low) * random()``, with
        ``numpy.random.Generator.uniform``'s checks and broadcasting.

        ``dtype`` and ``out`` are nclx's (float32 computes in float32);
        float64 values equal numpy.random.Generator(Philox(seed)).uniform's.
        """
        r = self._s.uniform(low, high, size) if dtype is np.float64 and out is None else NotImplemented
        if r is NotImplemented:
            r = self._walk("uniform", (low, high, size), _extra(dtype=dtype, out=out))
        return r

    def _uniform(self, low=0.0, high=1.0, size=None, *, dtype=np.float64, out=None):
        d = A.float_dtype(dtype, "uniform")
        scalar, (lo, hi) = A.params((low, high))
        if scalar:
            rng = hi - lo
            if not math.isfinite(rng) or abs(rng) > float(np.finfo(d).max):
                raise OverflowError("high - low range exceeds valid bounds")
            A.non_negative(rng, "high - low")
            return self._fill(K_UNIFORM, size, d, out, lo, rng)
        rng = hi - lo
        # float32: a range float32 cannot hold is the scalar path's error too
        # (found by review: it gave inf)
        if not np.all(np.isfinite(rng)) or np.any(np.abs(rng) > np.finfo(d).max):
            raise OverflowError("Range exceeds valid bounds")
        A.non_negative(rng, "high - low")
        arr, result = A.output(size, d, out, A.broadcast_shape(A.out_size(size, out), (lo, rng)))
        lo, rng = A.apart((lo, rng), arr)
        self._s.fill(K_RANDOM, arr)
        np.add(lo.astype(d), np.multiply(rng.astype(d), arr), out=arr)
        return result

    # ---------------------------------------------------- normal variates
    def standard_normal(self, size=None, dtype=np.float64, out=None):
        """Standard normal floats: ``numpy.random.Generator.standard_normal``
        (256-layer ziggurat, block streams)."""
        r = self._s.standard_normal(size, dtype, out)
        return self._walk("standard_normal", (size, dtype, out), {}) if r is NotImplemented else r

    def _standard_normal(self, size=None, dtype=np.float64, out=None):
        return self._fill(K_STANDARD_NORMAL, size, A.float_dtype(dtype, "standard_normal"), out)

    def normal(self, loc=0.0, scale=1.0, size=None, *, dtype=np.float64, out=None):
        """``loc + scale * standard_normal()`` with
        ``numpy.random.Generator.normal``'s checks ("scale < 0") and
        broadcasting; ``dtype`` and ``out`` are nclx's."""
        r = self._s.normal(loc, scale, size) if dtype is np.float64 and out is None else NotImplemented
        if r is NotImplemented:
            r = self._walk("normal", (loc, scale, size), _extra(dtype=dtype, out=out))
        return r

    def _normal(self, loc=0.0, scale=1.0, size=None, *, dtype=np.float64, out=None):
        d = A.float_dtype(dtype, "normal")
        scalar, (mu, sigma) = A.params((loc, scale))
        A.non_negative(sigma, "scale")
        if scalar:
            return self._fill(K_NORMAL, size, d, out, mu, sigma)
        arr, result = A.output(size, d, out, A.broadcast_shape(A.out_size(size, out), (mu, sigma)))
        mu, sigma = A.apart((mu, sigma), arr)
        self._s.fill(K_STANDARD_NORMAL, arr)
        np.add(mu.astype(d), np.multiply(sigma.astype(d), arr), out=arr)
        return result

    def exponential(self, scale=1.0, size=None, *, dtype=np.float64, out=None):
        """``scale * standard_exponential()`` (256-layer ziggurat) with
        ``numpy.random.Generator.exponential``'s checks and broadcasting;
        ``dtype`` and ``out`` are nclx's."""
        r = self._s.exponential(scale, size) if dtype is np.float64 and out is None else NotImplemented
        if r is NotImplemented:
            r = self._walk("exponential", (scale, size), _extra(dtype=dtype, out=out))
        return r

    def _exponential(self, scale=1.0, size=None, *, dtype=np.float64, out=None):
        d = A.float_dtype(dtype, "exponential")
        scalar, (beta,) = A.params((scale,))
        A.non_negative(beta, "scale")
        if scalar:
            return self._fill(K_EXPONENTIAL, size, d, out, 0.0, beta)
        arr, result = A.output(size, d, out, A.broadcast_shape(A.out_size(size, out), (beta,)))
        beta, = A.apart((beta,), arr)
        self._s.fill(K_EXPONENTIAL, arr)
        np.multiply(beta.astype(d), arr, out=arr)
        return result

    # ---------------------------------------------------------- integers
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False, *, out=None):
        """Integers of [low, high) ([low, high] with ``endpoint``):
        ``numpy.random.Generator.integers`` -- its dtypes (bool, int8 ..
        uint64), checks, messages and broadcasting -- by Lemire's unbiased
        multiply-and-reject, block streams; ``out`` is nclx's."""
        r = self._s.integers(low, high, size, dtype, endpoint) if out is None else NotImplemented
        if r is NotImplemented:
            r = self._walk("integers", (low, high, size, dtype, endpoint), _extra(out=out))
        return r

    def _integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False, *, out=None):
        name, d = A.int_dtype(dtype)
        if high is None:
            low, high = 0, low
        if out is None and A.size_is_empty(size):
            return np.empty(size, d)
        if out is not None and A.size_is_empty(A.out_size(size, out)):
            A.check_out(out, d, size)          # the same early exit as size=0's
            return out
        fill_dt = np.dtype(A.INT_FILL[name])
        low_arr, high_arr = np.asarray(low), np.asarray(high)
        if low_arr.ndim == 0 and high_arr.ndim == 0:
            lo, rng = A.int_scalar_bounds(low_arr, high_arr, name, bool(endpoint))
            arr, result = A.output(size, d, out)
            self._s.fill(K_INTEGERS, arr.view(fill_dt), lo=lo, rng=rng)
            if result is None:
                # NumPy's scalar: a Python int or bool where the Python type
                # was the dtype, else the NumPy scalar
                v = arr[()]
                return int(v) if dtype is int else (bool(v) if dtype is bool else v)
            return result
        lo, rng = A.int_array_bounds(low, high, name, bool(endpoint))
        shape, lo_b, rng_b = A.int_array_fill(lo, rng, A.out_size(size, out), np.shape(low),
                                              np.shape(high))
        arr, result = A.output(size, d, out, shape)
        if arr.ndim > 1 and not arr.flags.c_contiguous:
            # the fill writes out= in its memory order: each element's bounds
            # in that order too (found by review: an F-ordered out= gave row
            # 0 draws from row 1's bounds)
            lo_b = lo_b.reshape(arr.shape).ravel(order="F")
            rng_b = rng_b.reshape(arr.shape).ravel(order="F")
        self._s.fill(K_INTEGERS, arr.view(fill_dt), lo_arr=lo_b, rng_arr=rng_b)
        return result

    # ------------------------------------------------------- permutation
    def permutation(self, x, axis=0):
        """``numpy.random.Generator.permutation``: an int n gives a random
        order of ``arange(n)``; an array a copy shuffled along ``axis``.
        Every order is equally likely; block streams (one block: a
        Fisher-Yates shuffle; more: Sanders' bucket shuffle on nclx's
        threads)."""
        r = self._s.permutation(x) if axis == 0 else NotImplemented
        return self._walk("permutation", (x, axis), {}) if r is NotImplemented else r

    def _permutation(self, x, axis=0):
        if isinstance(x, (int, np.integer)):
            n, dt = A.permutation_length(x)
            perm = np.empty(n, np.int64)
            self._s.fill(K_PERMUTATION, perm)
            return perm if dt == np.int64 else perm.astype(dt)
        arr = np.asarray(x)
        axis = normalize_axis_index(axis, arr.ndim)
        perm = np.empty(arr.shape[axis], np.int64)
        self._s.fill(K_PERMUTATION, perm)
        index = [slice(None)] * arr.ndim
        index[axis] = perm
        return arr[tuple(index)]
