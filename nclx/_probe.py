"""Probes: one-element ndarray subclasses that record the ufunc calls made on
them (nclx._trace runs a function on them).

:class:`_Probe` records each ufunc call in its :class:`_Tape` (``_record``,
``_where``, ``_reduce``) and refuses, with :class:`Untraceable`, what a
trace could not keep: other NumPy functions, indexing, Python control flow
on a value, and any attribute but those NumPy and the reductions need
(``_PROBE_ATTRIBUTES``).  A refusal marks the tape, so a function that
catches it is still run eagerly; a step made under another floating-point
error handling or warning filter than the call's is refused too.
"""
import functools
import inspect
import sys

import numpy as np
from numpy._core import _methods as _np_methods
from numpy._core import fromnumeric as _np_fromnumeric

from nclx import _callsite, _elide
from nclx._fused_program import Step
from nclx._tape import StateChanged, Untraceable
from nclx.ufuncs import where as _nclx_where

__all__ = ["Untraceable", "StateChanged", "SUPPORTED"]   # the first two: nclx._tape

#: dtypes the executor runs (type characters)
SUPPORTED = frozenset("?bBhHiIlLqQfd")
_INTEGERS = frozenset("bBhHiIlLqQ")
_PY_SCALARS = (bool, int, float)


#: what a function may read of a probe: its dtype, the two reductions (np.sum
#: and np.prod call them) and what NumPy itself looks up; any other method or
#: attribute (.item(), .argmax(), .dot(), .sort(), .T, .astype...) would run
#: on the one-element probe and its answer be kept by the trace
_PROBE_ATTRIBUTES = frozenset((
    "dtype", "sum", "prod", "_nclx_tape", "_nclx_slot", "_nclx_init", "__class__",
    "__array_ufunc__", "__array_function__", "__array_finalize__",
    "__array_priority__", "__array_wrap__"))


def _where_of(frame):
    """Where eager NumPy reports a step's floating-point warnings: the
    innermost Python frame when the ufunc runs, the caller of the probe's
    ``__array_ufunc__`` (its file, line, module globals, code name and the
    columns of its call or operator: nclx._fusewarn).
    ``np.sum`` of a probe detours through the probe's ``sum`` method
    (NumPy's ``_methods``), where an ndarray's goes straight to
    ``ufunc.reduce`` in ``_wrapreduction``: that line then."""
    back = frame.f_back
    if back is not None and frame.f_code.co_filename == _np_methods.__file__ and \
            back.f_code is _np_fromnumeric._wrapreduction.__code__:
        return (back.f_code.co_filename, _wrapreduction_line() or back.f_lineno,
                back.f_globals, back.f_code.co_name, None)
    return _callsite.caller(frame, columns=True)


@functools.cache
def _wrapreduction_line():
    """The line of ``_wrapreduction`` that calls ``ufunc.reduce`` (None if
    its source cannot be read)."""
    try:
        lines, first = inspect.getsourcelines(_np_fromnumeric._wrapreduction)
    except (OSError, TypeError):
        return None
    for k, line in enumerate(lines):
        if "ufunc.reduce(" in line:
            return first + k
    return None


def _tape_of(probe):
    return object.__getattribute__(probe, "_nclx_tape")


class _Probe(np.ndarray):
    """A one-element stand-in for an array argument or an intermediate."""

    def _nclx_init(self, tape, slot):
        self._nclx_tape = tape
        self._nclx_slot = slot
        return self

    def __getattribute__(self, name):
        if name == "__class__":
            return np.ndarray        # as for the array it stands for (x.__class__ is np.ndarray)
        if name in _PROBE_ATTRIBUTES:
            return object.__getattribute__(self, name)
        tape = object.__getattribute__(self, "__dict__").get("_nclx_tape")
        why = f"an array's .{name} (the trace would keep what the probe gives)"
        raise tape.refuse(why) if tape is not None else Untraceable(why)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        tape = self._nclx_tape
        if tape.reduced is not None:
            raise tape.refuse(f"{ufunc.__name__} after the final reduction")
        if method == "reduce":
            r = _reduce(tape, ufunc, inputs, kwargs)
            tape.reduce_where = _where_of(_elide.caller(sys._getframe(1)))
            return r
        if method != "__call__":
            raise tape.refuse(f"ufunc method {ufunc.__name__}.{method}")
        if kwargs:
            raise tape.refuse(f"{ufunc.__name__} called with keywords {sorted(kwargs)}")
        if ufunc.signature is not None:      # matmul, vecdot...: not elementwise
            raise tape.refuse(f"{ufunc.__name__} is a generalized ufunc ({ufunc.signature})")
        if ufunc.nout != 1 or ufunc.nin not in (1, 2):
            raise tape.refuse(f"{ufunc.__name__} has {ufunc.nin} inputs and {ufunc.nout} "
                              f"outputs")
        r = _record(tape, ufunc, inputs)
        tape.wheres.append(_where_of(_elide.caller(sys._getframe(1))))
        return r

    def __bool__(self):
        raise _tape_of(self).refuse("Python control flow on an array's value")

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.sum, np.prod):
            return super().__array_function__(func, types, args, kwargs)
        if func is np.where:
            r = _where(self._nclx_tape, args, kwargs)
            self._nclx_tape.wheres.append(None)         # a copy: never flags
            return r
        raise self._nclx_tape.refuse(f"a non-ufunc call ({getattr(func, '__name__', func)})")

    def __getitem__(self, key):
        raise _tape_of(self).refuse("indexing")

    def __len__(self):
        raise _tape_of(self).refuse("len() of an array (the trace would keep the probe's)")

    def _no_shape(self):
        raise _tape_of(self).refuse("an array's shape, size or ndim (the trace would keep "
                                    "the probe's)")

    shape = size = ndim = nbytes = strides = property(_no_shape)

    def __setitem__(self, key, value):
        raise _tape_of(self).refuse("item assignment")

    def __index__(self):
        raise _tape_of(self).refuse("an array used as an index")

    __int__ = __float__ = __complex__ = __index__


def _shown(x, limit=80):
    """``repr(x)`` for a refusal's reason, cut after ``limit`` characters; a
    Python int too long for ``repr`` (more than sys.get_int_max_str_digits()
    digits: repr raises ValueError) by its size."""
    try:
        text = repr(x)
    except ValueError:
        return f"an int of {x.bit_length():,} bits" if isinstance(x, int) else \
            f"a {type(x).__name__}"
    return text if len(text) <= limit else text[:limit] + "..."


def _dtype_key(x):
    """What resolve_dtypes takes for an operand: a dtype, or a Python
    scalar's type (weak)."""
    if isinstance(x, _Probe):
        return x.dtype
    if type(x) in _PY_SCALARS:
        return type(x)
    if isinstance(x, (np.generic, np.ndarray)) and np.ndim(x) == 0:
        return np.asarray(x).dtype
    raise Untraceable(f"an operand of type {type(x).__name__}")


def _probe_value(x):
    return np.ndarray.view(x, np.ndarray) if isinstance(x, _Probe) else x


def _record(tape, ufunc, inputs):
    tape.check_state(ufunc.__name__)
    keys = tuple(_dtype_key(x) for x in inputs)
    try:
        resolved = ufunc.resolve_dtypes(keys + (None,))
    except Exception as exc:          # eager NumPy raises it, with its warnings first
        raise Untraceable(f"{ufunc.__name__}: {exc}") from None
    chars = "".join(dt.char for dt in resolved)
    if not set(chars) <= SUPPORTED:
        raise Untraceable(f"{ufunc.__name__} on dtypes {chars!r}")
    if ufunc is np.power and chars[-1] in _INTEGERS:
        # NumPy's integer power loop raises a Python ValueError for a negative
        # exponent from inside the loop, which no block (nor a thread) can report
        raise Untraceable(f"integer power ({chars!r}: its loop raises for negative exponents)")
    ins = []
    for x, dt in zip(inputs, resolved):
        if isinstance(x, _Probe):
            if x._nclx_tape is not tape:
                raise Untraceable("probes of two traces mixed")
            if x.dtype != dt:
                raise Untraceable(f"{ufunc.__name__} casts its operand from {x.dtype} to {dt}")
            ins.append(x._nclx_slot)
        else:
            try:
                # a conversion NumPy warns about (f32 * 1e300: "overflow
                # encountered in cast") or refuses (int8 + 300) runs eagerly,
                # which warns or raises as NumPy does
                with np.errstate(all="raise"):
                    value = np.asarray(x).astype(dt, casting="unsafe") if type(x) not in \
                        _PY_SCALARS else np.asarray(x, dtype=dt)
            except Exception as exc:
                raise Untraceable(f"{ufunc.__name__}: converting {_shown(x)} to {dt}: {exc}") from None
            slot = tape.new_slot()
            tape.constants.append((slot, value))
            ins.append(slot)
    try:
        with np.errstate(all="ignore"):
            result = ufunc(*[_probe_value(x) for x in inputs])
    except Exception as exc:
        raise Untraceable(f"{ufunc.__name__}: {exc}") from None
    if result.dtype != resolved[-1]:
        raise Untraceable(f"{ufunc.__name__} gave {result.dtype}, resolved {resolved[-1]}")
    if not any(i in tape.wide for i in ins) and \
            any(i == st.out for st in tape.steps for i in ins):
        # a step on 0-d arrays alone gives a NumPy scalar in eager code, and
        # the next one on it alone runs NumPy's scalar math (which checks
        # integer overflow and says "scalar multiply"); before, a ufunc step
        # in the plan, silent (found by review)
        raise Untraceable(f"{ufunc.__name__} on the NumPy scalar an earlier step on 0-d arrays "
                          f"gives (eager NumPy runs scalar math there)")
    out = tape.new_slot()
    tape.steps.append(Step(ufunc, chars, tuple(ins), out))
    if any(i in tape.wide for i in ins):
        tape.wide.add(out)
    return np.asarray(result).reshape(-1).view(_Probe)._nclx_init(tape, out)


def _where(tape, args, kwargs):
    tape.check_state("where")
    if tape.reduced is not None:
        raise Untraceable("where after the final reduction")
    if kwargs or len(args) != 3:
        raise Untraceable("np.where without exactly three positional arguments")
    keys = [_dtype_key(x) for x in args]
    for x in args:
        if isinstance(x, _Probe) and x._nclx_tape is not tape:
            raise Untraceable("probes of two traces mixed")
    if keys[0] is not bool and keys[0] != np.dtype(bool):
        what = keys[0].__name__ if isinstance(keys[0], type) else str(keys[0])
        raise Untraceable(f"where with a {what} condition (np.where tests it against zero)")
    try:
        with np.errstate(all="ignore"):
            result = np.where(*[_probe_value(x) for x in args])
    except Exception as exc:
        raise Untraceable(f"where: {exc}") from None
    dt = result.dtype
    if dt.char not in SUPPORTED:
        raise Untraceable(f"where on dtype {dt}")
    ins = []
    for j, x in enumerate(args):
        want = np.dtype(bool) if j == 0 else dt
        if isinstance(x, _Probe):
            if x.dtype != want:
                raise Untraceable(f"where casts its operand from {x.dtype} to {want}")
            ins.append(x._nclx_slot)
            continue
        try:
            # the value np.where itself makes of the scalar (NEP 50 weak
            # Python scalars wrap or round as NumPy converts them)
            with np.errstate(all="raise"):
                value = np.where(np.zeros(1, bool), np.zeros(1, want), x)
        except Exception as exc:        # eager np.where raises or warns it
            raise Untraceable(f"where converting {_shown(x)} to {want}: {exc}") from None
        if value.dtype != want:
            raise Untraceable(f"where casts {_shown(x)} to {value.dtype}, not {want}")
        slot = tape.new_slot()
        tape.constants.append((slot, value.reshape(())))
        ins.append(slot)
    out = tape.new_slot()
    tape.steps.append(Step(_nclx_where, "?" + dt.char * 3, tuple(ins), out))
    if any(i in tape.wide for i in ins):
        tape.wide.add(out)
    return np.asarray(result).reshape(-1).view(_Probe)._nclx_init(tape, out)


def _first_or_last(axis):
    """Whether ``axis`` names axis 0 or -1 as NumPy takes an axis: an integer
    (NumPy's or Python's, not a bool), alone or in a 1-tuple.  NumPy hands a
    reduction's axis on to ``__array_ufunc__`` unchecked, and ``0.0``,
    ``False`` or ``np.float32(0)`` equal 0 where an ndarray's reduction
    refuses them (before, the plan summed; found by review)."""
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    return isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and \
        int(axis) in (0, -1)


def _reduce(tape, ufunc, inputs, kwargs):
    tape.check_state(f"{ufunc.__name__}.reduce")
    if ufunc not in (np.add, np.multiply):
        raise Untraceable(f"{ufunc.__name__}.reduce")
    (x,) = inputs
    if not isinstance(x, _Probe):
        raise Untraceable("a reduction of a non-probe")
    # ufunc.reduce's own default is axis 0 (np.sum and .sum() pass None)
    axis = kwargs.get("axis", 0)
    if axis is not None and (tape.ndim != 1 or not _first_or_last(axis)):
        raise Untraceable(f"{ufunc.__name__}.reduce over axis {axis!r} of {tape.ndim}-d arrays")
    if kwargs.get("dtype") is not None \
            or kwargs.get("out") not in (None, (None,)) or kwargs.get("keepdims", False) \
            or "initial" in kwargs or kwargs.get("where", True) is not True:
        raise Untraceable(f"{ufunc.__name__}.reduce with {sorted(kwargs)}")
    with np.errstate(all="ignore"):
        result = ufunc.reduce(np.ndarray.view(x, np.ndarray))
    dt = np.asarray(result).dtype
    chars = dt.char * 3
    if not set(chars) <= SUPPORTED:
        raise Untraceable(f"{ufunc.__name__}.reduce to {dt}")
    if dt != x.dtype:
        raise Untraceable(f"{ufunc.__name__}.reduce casts {x.dtype} to {dt}")
    tape.reduced = ("sum" if ufunc is np.add else "prod", chars, x._nclx_slot)
    return _Reduced(result)


class _Reduced:
    """What a traced sum/prod returns: nothing may follow it."""

    def __init__(self, value):
        self.value = value

    def __getattr__(self, name):
        raise Untraceable("an operation after the final reduction")


def _after_reduction(self, *args):
    raise Untraceable("an operation after the final reduction")


for _name, _fn in _elide.operators(_Probe).items():     # + and *: NumPy's temporary elision
    setattr(_Probe, _name, _fn)

for _name in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow "
              "rpow and rand or ror xor rxor lt le gt ge eq ne neg pos abs invert bool "
              "float int index array array_ufunc").split():
    setattr(_Reduced, f"__{_name}__", _after_reduction)
