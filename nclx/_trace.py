"""Tracing a function of arrays into a Program for the block executor.

The function runs once on *probes*: one-element ndarray subclasses standing
for its array arguments.  NumPy's own operators run on them (so ``a ** 2``
becomes ``np.square`` exactly where NumPy makes it so, and ``2 * a`` is
``np.multiply(2, a)`` in that order), and every ufunc call arrives in the
probe's ``__array_ufunc__``, which records it as a Step: the ufunc, the
loop NumPy resolves for these operand dtypes (``ufunc.resolve_dtypes``,
Python scalars weak as NEP 50 says), the slots it reads and the slot it
writes.  Scalars become operand slots of the loop's input dtype.  The probe
then calls the ufunc on one-element data (errors ignored) and hands on a
new probe of the result's dtype.

Anything the executor cannot run as NumPy would raises Untraceable with
the reason: keyword arguments, a non-ufunc call on a probe (indexing,
``np.nonzero``...), Python control flow on a probe's value, a loop whose
input dtype differs from its operand's (a cast), dtypes other than bool,
int8..uint64, float32, float64, more than one output, anything after a
final sum or product.  Callers then run the function eagerly.

``np.where(c, x, y)`` (three arguments) becomes a step of nclx's own
``where`` ufunc (nclx.ufuncs.where: x where c else y, the element copied
bit for bit) on the loop of np.where's result dtype: ``np.where``'s own
result on the probes' values gives it (np.result_type of x and y, Python
scalars weak: ``where(c, f32, 2.5)`` is float32).  The condition must be
bool (np.where tests any other dtype against zero) and x and y of the
result dtype already (no cast); a scalar becomes an operand slot holding
the value np.where itself converts it to (``where(c, i8, 300)`` wraps as
NumPy does; a conversion that flags a floating-point error stays eager,
where NumPy reports it).
"""
import numpy as np

from nclx._fused_program import Program, Step
from nclx._ncl import ledger as _cledger
from nclx.errors import NclxError
from nclx.ufuncs import where as _nclx_where

__all__ = ["Untraceable", "trace"]

#: dtypes the executor runs (type characters)
SUPPORTED = frozenset("?bBhHiIlLqQfd")
_INTEGERS = frozenset("bBhHiIlLqQ")
_PY_SCALARS = (bool, int, float)


class Untraceable(NclxError):
    """The function cannot be fused; str() says why (callers run it eagerly)."""


class _Tape:
    def __init__(self, ninputs, ndim=1):
        self.ndim = ndim             # of the arrays the probes stand for
        self.steps = []
        self.nslots = ninputs
        self.constants = []          # (slot, value converted to its loop dtype)
        self.reduced = None          # (kind, chars, slot) once a sum/prod ended it

    def new_slot(self):
        self.nslots += 1
        return self.nslots - 1


class _Probe(np.ndarray):
    """A one-element stand-in for an array argument or an intermediate."""

    def _nclx_init(self, tape, slot):
        self._nclx_tape = tape
        self._nclx_slot = slot
        return self

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        tape = self._nclx_tape
        if tape.reduced is not None:
            raise Untraceable(f"{ufunc.__name__} after the final reduction")
        if method == "reduce":
            return _reduce(tape, ufunc, inputs, kwargs)
        if method != "__call__":
            raise Untraceable(f"ufunc method {ufunc.__name__}.{method}")
        if kwargs:
            raise Untraceable(f"{ufunc.__name__} called with keywords {sorted(kwargs)}")
        if ufunc.nout != 1 or ufunc.nin not in (1, 2):
            raise Untraceable(f"{ufunc.__name__} has {ufunc.nin} inputs and {ufunc.nout} "
                              f"outputs")
        return _record(tape, ufunc, inputs)

    def __bool__(self):
        raise Untraceable("Python control flow on an array's value")

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.sum, np.prod):
            return super().__array_function__(func, types, args, kwargs)
        if func is np.where:
            return _where(self._nclx_tape, args, kwargs)
        raise Untraceable(f"a non-ufunc call ({getattr(func, '__name__', func)})")

    def __getitem__(self, key):
        raise Untraceable("indexing")

    def __len__(self):
        raise Untraceable("len() of an array (the trace would keep the probe's)")

    def _no_shape(self):
        raise Untraceable("an array's shape, size or ndim (the trace would keep the probe's)")

    shape = size = ndim = nbytes = strides = property(_no_shape)

    def __setitem__(self, key, value):
        raise Untraceable("item assignment")

    def __index__(self):
        raise Untraceable("an array used as an index")

    __int__ = __float__ = __complex__ = __index__


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
    return x.view(np.ndarray) if isinstance(x, _Probe) else x


def _record(tape, ufunc, inputs):
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
                raise Untraceable(f"{ufunc.__name__}: converting {x!r} to {dt}: {exc}") from None
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
    out = tape.new_slot()
    tape.steps.append(Step(ufunc, chars, tuple(ins), out))
    return np.asarray(result).reshape(1).view(_Probe)._nclx_init(tape, out)


def _where(tape, args, kwargs):
    if tape.reduced is not None:
        raise Untraceable("where after the final reduction")
    if kwargs or len(args) != 3:
        raise Untraceable("np.where without exactly three positional arguments")
    keys = [_dtype_key(x) for x in args]
    for x in args:
        if isinstance(x, _Probe) and x._nclx_tape is not tape:
            raise Untraceable("probes of two traces mixed")
    c = args[0]
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
            raise Untraceable(f"where converting {x!r} to {want}: {exc}") from None
        if value.dtype != want:
            raise Untraceable(f"where casts {x!r} to {value.dtype}, not {want}")
        slot = tape.new_slot()
        tape.constants.append((slot, value.reshape(())))
        ins.append(slot)
    out = tape.new_slot()
    tape.steps.append(Step(_nclx_where, "?" + dt.char * 3, tuple(ins), out))
    return np.asarray(result).reshape(1).view(_Probe)._nclx_init(tape, out)


def _reduce(tape, ufunc, inputs, kwargs):
    if ufunc not in (np.add, np.multiply):
        raise Untraceable(f"{ufunc.__name__}.reduce")
    (x,) = inputs
    if not isinstance(x, _Probe):
        raise Untraceable("a reduction of a non-probe")
    axis = kwargs.get("axis", None)
    if axis is not None and (tape.ndim != 1 or axis not in (0, -1, (0,), (-1,))):
        raise Untraceable(f"{ufunc.__name__}.reduce over axis {axis!r} of {tape.ndim}-d arrays")
    if kwargs.get("dtype") is not None \
            or kwargs.get("out") not in (None, (None,)) or kwargs.get("keepdims", False) \
            or "initial" in kwargs or kwargs.get("where", True) is not True:
        raise Untraceable(f"{ufunc.__name__}.reduce with {sorted(kwargs)}")
    with np.errstate(all="ignore"):
        result = ufunc.reduce(x.view(np.ndarray))
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


for _name in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow "
              "rpow and rand or ror xor rxor lt le gt ge eq ne neg pos abs invert bool "
              "float int index array array_ufunc").split():
    setattr(_Reduced, f"__{_name}__", _after_reduction)


def trace(fn, args):
    """Trace ``fn(*args)``; args: ndarrays (probed, in order: the operand
    slots) and anything else (passed as it is, a constant of the trace).
    Returns (program, constants, array_positions): constants is a list of
    (slot, 0-d array) the caller passes after the arrays."""
    positions = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    tape = _Tape(len(positions), max((args[i].ndim for i in positions), default=1))
    call = list(args)
    for slot, i in enumerate(positions):
        a = args[i]
        if a.dtype.char not in SUPPORTED:
            raise Untraceable(f"an operand of dtype {a.dtype}")
        one = np.zeros(1, a.dtype)
        if a.size:
            one[0] = a.reshape(-1)[0]
        call[i] = one.view(_Probe)._nclx_init(tape, slot)
    _cledger.mute(1)            # the probes' one-element calls are no calls of the user's
    try:
        out = fn(*call)
    except Untraceable:
        raise
    except Exception as exc:
        raise Untraceable(f"tracing raised {type(exc).__name__}: {exc}") from None
    finally:
        _cledger.mute(-1)
    if tape.reduced is not None:
        if not isinstance(out, _Reduced):
            raise Untraceable("the reduction is not the result")
        kind, chars, slot = tape.reduced
        result = slot
    else:
        if not isinstance(out, _Probe) or getattr(out, "_nclx_tape", None) is not tape:
            raise Untraceable(f"the result is a {type(out).__name__}, not an array expression")
        kind = chars = None
        result = out._nclx_slot
    if not tape.steps:
        raise Untraceable("no ufunc step")
    if tape.steps[-1].out != result:
        raise Untraceable("the result is not the last step's")
    # constants become operand slots right after the arrays: renumber
    nin = len(positions) + len(tape.constants)
    order = list(range(len(positions))) + [s for s, _ in tape.constants]
    temps = [st.out for st in tape.steps]
    remap = {old: new for new, old in enumerate(order)}
    remap.update({old: nin + k for k, old in enumerate(temps)})
    steps = tuple(Step(st.ufunc, st.chars, tuple(remap[i] for i in st.ins), remap[st.out])
                  for st in tape.steps)
    program = Program(steps, nin + len(temps), nin, remap[result], kind, chars)
    return program, [v for _, v in tape.constants], positions
