"""NumPy's ComplexWarnings of a reduction into ``out=``, counted on probes.

NumPy warns "Casting complex values to real discards the imaginary part"
once for each cast of complex values to real ones that its call sets up: a
reduction's ``out=`` read into the loop's dtype and written back, the
operand cast to ``dtype=``, a mean's sum divided in ``out``...  zero, one or
two warnings, fixed by the function, the dtypes and the axes, never by the
values or the sizes (checked for every reduction nclx.dap implements over
shapes from 1x1 to 300x301 and empty ones: tests/mpi/test_complex_casts_mpi.py).
nclx's collective steps cast in other places and other numbers (a partial
result per rank, the combined value written into ``out``), so where an
``out=`` is given and a complex dtype is involved, the call first runs
NumPy's own function on one-cell probes of the same dtypes (each dimension
of 1 element, or of none where the array has none), counts its
ComplexWarnings, issues as many before its first collective (where the
warning filters make one an error, that rank's error is agreed there, so
every rank raises) and runs with its own ComplexWarnings ignored.  NumPy
warns at set-up, before the floating-point warnings of its loops; where a
function warns in Python before its casts (np.var and np.std: "Degrees of
freedom <= 0" first), these come first here.  The ignoring and the
probes' recording are :mod:`nclx._warnscope`'s (one filter entry added and
taken away again, counted under a lock: threads in such calls at once
leave the filters as they were, which ``warnings.catch_warnings`` did
not).  Below DistArray: the array class is passed in.
"""
import itertools
import warnings

import numpy as np

from nclx import _callsite
from nclx._warnscope import ignoring, recording

__all__ = ["ComplexCasts"]

_MESSAGE = "Casting complex values to real discards the imaginary part"
_ComplexWarning = np.exceptions.ComplexWarning


def _dtype_of(x):
    try:
        return np.dtype(x) if x is not None else None
    except TypeError:           # not a dtype: the implementation refuses it
        return None


class ComplexCasts:
    """NumPy's ComplexWarnings for ``np_call(*args, **kwargs)`` (``own``:
    the distributed array class, whose instances are probed by one cell).

    ``active``: an ``out=`` is given and a complex dtype takes part (no other
    cast warns so); ``count``: NumPy's warnings.  :meth:`emit` issues them
    (under the caller's warning filters: where they are errors the first
    one raises, as NumPy's does); :meth:`quiet` then ignores every other
    ComplexWarning until :meth:`close`."""

    __slots__ = ("active", "count", "_quiet")

    def __init__(self, np_call, args, kwargs, own):
        self._quiet = None
        self.count = 0
        out = kwargs.get("out")
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        kinds = [getattr(out, "dtype", None), _dtype_of(kwargs.get("dtype"))]
        operands = tuple(args) + tuple(v for k, v in kwargs.items() if k != "out")
        kinds += [a.dtype for a in _arrays(operands, own)]
        self.active = out is not None and any(d is not None and d.kind == "c" for d in kinds)
        if self.active:
            self.count = _count(np_call, args, kwargs, own)

    def emit(self):
        for _ in range(self.count):
            _callsite.warn(_MESSAGE, _ComplexWarning)

    def quiet(self):
        if self.active and self._quiet is None:
            quiet = ignoring(_ComplexWarning)
            quiet.__enter__()
            self._quiet = quiet

    def close(self):
        if self._quiet is not None:
            quiet, self._quiet = self._quiet, None
            quiet.__exit__(None, None, None)


def _arrays(obj, own, depth=0):
    """The distributed arrays among ``obj`` (lists and tuples looked into)."""
    if isinstance(obj, own):
        return [obj]
    if isinstance(obj, (list, tuple)) and depth < 4:
        return [a for v in obj for a in _arrays(v, own, depth + 1)]
    return []


def _probe(obj, own, depth=0, fill=0):
    """``obj`` with each distributed array a one-cell ndarray of its dtype
    (each dimension of 1 element, or of none where the array has none;
    ``fill=1``: of 1 element everywhere)."""
    if isinstance(obj, own):
        return np.ones(tuple(max(min(n, 1), fill) for n in obj.shape), obj.dtype)
    if isinstance(obj, list) and depth < 4:
        return [_probe(v, own, depth + 1, fill) for v in obj]
    if isinstance(obj, tuple) and depth < 4:
        return tuple(_probe(v, own, depth + 1, fill) for v in obj)
    return obj


def _count(np_call, args, kwargs, own):
    """How many ComplexWarnings ``np_call`` gives on the probes with an out=
    of the user's out's dtype and the probe result's shape."""
    out = kwargs["out"]
    single = isinstance(out, tuple)
    out = out[0] if single else out
    pargs, pkw = _probes(args, kwargs, own)
    with ignoring(), np.errstate(all="ignore"):
        try:
            shapes, refusal = [np.shape(np_call(*pargs, **pkw))], None
        except Exception as exc:  # noqa: BLE001 - NumPy refuses the call: see below
            shapes, refusal = _refused_shapes(np_call, args, kwargs, own), _text(exc)
    for shape in shapes:
        probe_out = np.zeros(shape, out.dtype)
        pkw["out"] = (probe_out,) if single else probe_out
        with recording() as seen, np.errstate(all="ignore"):
            try:
                np_call(*pargs, **pkw)
                got = None
            except Exception as exc:  # noqa: BLE001 - the warnings before NumPy's error count too
                got = _text(exc)
        if refusal is None or got == refusal:
            return sum(1 for w in seen if issubclass(w.category, _ComplexWarning))
    return 0


def _text(exc):
    return f"{type(exc).__name__}: {exc}"


#: out shapes tried where NumPy refuses the probe call itself (at most)
_TRIES = 64


def _probes(args, kwargs, own, fill=0):
    """The call's arguments (``out`` left out) with each distributed array a
    probe (:func:`_probe`), a distributed ``where=`` all True."""
    pargs = _probe(tuple(args), own, fill=fill)
    pkw = {k: _probe(v, own, fill=fill) for k, v in kwargs.items() if k != "out"}
    if "where" in pkw and isinstance(kwargs["where"], own):
        pkw["where"] = np.ones(pkw["where"].shape, bool)
    return pargs, pkw


def _refused_shapes(np_call, args, kwargs, own):
    """The out= shapes to try where NumPy refuses the probe call without one
    (a reduction with no identity of an empty array: "zero-size array to
    reduction operation maximum which has no identity"): NumPy sets up the
    casts into out= first and warns its ComplexWarnings before that error
    (before, none was counted: found by review).  The result's shape is the
    one-cell probe's with some of its 1s made 0 (the dimensions the array
    has none of); the shape whose call raises the same refusal is out's."""
    ones, ones_kw = _probes(args, kwargs, own, fill=1)
    try:
        with ignoring(), np.errstate(all="ignore"):
            full = np.shape(np_call(*ones, **ones_kw))
    except Exception:  # noqa: BLE001 - refused whatever the sizes: no out= to set up
        return []
    operands = tuple(args) + tuple(v for k, v in kwargs.items() if k != "out")
    zeros = sum(1 for a in _arrays(operands, own) for n in a.shape if n == 0)
    ones_at = [i for i, n in enumerate(full) if n == 1]
    out = []
    for k in range(min(zeros, len(ones_at)) + 1):
        for pick in itertools.combinations(ones_at, k):
            out.append(tuple(0 if i in pick else n for i, n in enumerate(full)))
            if len(out) >= _TRIES:
                return out
    return out
