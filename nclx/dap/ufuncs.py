"""DistArray's ufunc contract: elementwise calls on the local blocks,
reductions across ranks, and the Python operators.

:func:`array_ufunc` is ``DistArray.__array_ufunc__``: nclx.aware's contract
(NotImplemented for a foreign array type, the python-level hook chain),
then an elementwise call (operands distributed otherwise are redistributed
to the first DistArray operand's distribution) or a reduction
(:func:`nclx.dap.reduce.reduce_block`, one collective).  The DistArray
class registers itself with :func:`add_operators` (this module sits below
it and never imports it).
"""
import operator

import numpy as np

from nclx._warnscope import ignoring
from nclx import aware
from nclx._ncl.install import is_installed
from nclx.dap import power
from nclx.dap.complexcasts import ComplexCasts
from nclx.dap.collective import mark_agreed
from nclx.dap.fold import agreed_call
from nclx.dap.elementcall import loop_of, recorded_with_checked, report_flags
from nclx.dap.outwrite import blocks_into, cast_into
from nclx._fpflags import fp_may_raise
from nclx.dap.outloop import loop_with_out
from nclx.dap.reduce import join_failed, reduce_block, result_distribution
from nclx.dap.validate import DapError

__all__ = ["array_ufunc", "add_operators", "check_out"]

_cls = []        # [DistArray], set by add_operators


def _distarray():
    return _cls[0]


def compute(da, ufunc, method, inputs, kwargs):
    """The call on the blocks, after nclx.aware's checks and hooks."""
    if method == "__call__":
        return elementwise(da, ufunc, inputs, kwargs)
    if method == "reduce":
        return reduce_call(ufunc, inputs, kwargs)
    why = {"accumulate": "a scan needs a prefix across the process grid (np.cumsum / "
                         "np.cumprod of a DistArray are scans)",
           "reduceat": "its segments cross the ranks' blocks",
           "outer": "its result has the dimensions of both operands",
           "at": "its indices are global, the blocks local"}.get(method, "")
    raise DapError(f"{ufunc.__name__}.{method} of a DistArray is not supported: elementwise "
                   f"calls and reductions (over any axes) are" + (f"; {why}" if why else ""))


def elementwise(da, ufunc, inputs, kwargs):
    """An elementwise call on the local blocks; ``out=`` identically distributed."""
    DistArray = _distarray()
    outs = aware.outs_of(kwargs)
    for o in outs:
        if o is not None and not isinstance(o, DistArray):
            raise DapError(f"{ufunc.__name__}: out= must be an identically "
                           f"distributed DistArray, not {type(o).__name__}")
        if o is not None and o.distribution != da.distribution:
            # written through its block: never a redistributed temporary
            raise DapError(f"{ufunc.__name__}: out= must be distributed like the first "
                           f"DistArray operand ({o.distribution} vs {da.distribution})")
    where = kwargs.get("where", True)
    if not isinstance(where, DistArray) and np.ndim(where) != 0:    # named, as the sum's
        raise DapError(f"{ufunc.__name__}: where= must be a DistArray or a scalar, not "
                       f"{type(where).__name__} of shape {np.shape(where)}")
    try:
        # installed: NumPy's ufunc reaches nclx's loops and every hook chain
        # (nclx.checked() included); otherwise nclx's own ufuncs
        kernels = None if is_installed() else aware.nclx_ufunc
        try:
            result = aware.run_unwrapped(ufunc, "__call__", inputs, kwargs, da._unwrap, kernels)
        except TypeError:      # no nclx loop for these dtypes (complex, float16, ...)
            result = aware.run_unwrapped(ufunc, "__call__", inputs, kwargs, da._unwrap)
    except DapError as exc:         # its type kept (DapError[...] included)
        raise type(exc)(f"{ufunc.__name__}: {exc}") from None
    # out= DistArrays come back as themselves (written through their
    # blocks); the other results (out=None entries too) are wrapped
    if isinstance(result, tuple):
        return tuple(da._wrap_block(r) for r in result)
    return da._wrap_block(result)


def reduce_call(ufunc, inputs, kwargs):
    """``ufunc.reduce`` across ranks (:func:`nclx.dap.reduce.reduce_block`);
    the result wrapped and written to ``out=``.  NumPy's ComplexWarnings of
    the call into ``out=`` (:mod:`nclx.dap.complexcasts`) are issued in the
    out= check before the collective (where they are errors, raised on every
    rank), the steps' own ignored."""
    DistArray = _distarray()
    if len(inputs) != 1 or not isinstance(inputs[0], DistArray):
        raise DapError(f"{ufunc.__name__}.reduce: the DistArray must be the only input")
    casts = ComplexCasts(ufunc.reduce, inputs, kwargs, DistArray)
    passed = []
    try:
        return _reduce_call(ufunc, inputs, kwargs, casts, passed)
    except BaseException as exc:
        if passed:
            # raised after the reduction's collective (a warning the filters
            # of this rank alone make an error): nobody waits for it
            mark_agreed(exc)
        raise
    finally:
        casts.close()


def _reduce_call(ufunc, inputs, kwargs, casts, passed):
    DistArray = _distarray()
    da = inputs[0]
    kw = {k: v for k, v in kwargs.items() if k not in ("out", "where")}
    outs = aware.outs_of(kwargs)
    loop = loop_with_out(ufunc, da.dtype, outs[0], kw.get("dtype")) if outs else None
    if loop is not None:
        kw["dtype"] = loop          # NumPy's loop with out= (nclx.dap.outloop)
    where = kwargs.get("where", True)
    if isinstance(where, DistArray):
        where = da._aligned(where)._block
    elif where is not True:
        if np.ndim(where) != 0:
            raise DapError(f"{ufunc.__name__}.reduce: where= must be a DistArray distributed "
                           f"like the operand or a scalar, not {type(where).__name__}")
        if ufunc.identity is None and kw.get("initial", np._NoValue) is np._NoValue:
            # NumPy takes any where= but the literal True as a mask
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an "
                             f"identity, so to use a where mask one has to specify 'initial'")
        where = bool(where)
    def check(axes):
        """This rank's out= for the reduced ``axes``, before the collective
        (each rank passes its own: one refused is refused everywhere)."""
        check_out(outs[0], axes, da.distribution.ndim, kw.get("keepdims", False),
                  f"{ufunc.__name__}.reduce", dist=da.distribution)
        casts.emit()
        casts.quiet()
    value, dist, comm = reduce_block(da._block, da.distribution, da.comm, ufunc,
                                     where=where, kernels=aware.nclx_ufunc,
                                     check=check if outs else None, **kw)
    passed.append(True)
    if dist is None:                 # every axis reduced: the value on every rank
        if not outs:
            return value
        o = outs[0]
        if isinstance(o, np.ndarray) and o.dtype != np.asarray(value).dtype:
            # as NumPy writes a reduction into an out= of another dtype: its
            # errors, its cast (before: "cannot convert float NaN to
            # integer" where NumPy writes; found by review)
            probe = np.ones((1,) * da.distribution.ndim, da.dtype)
            with np.errstate(all="ignore"):
                ufunc.reduce(probe, out=np.empty(o.shape, o.dtype),
                             **{k: v for k, v in kw.items() if k in ("axis", "dtype", "keepdims")})
            cast_into(o, value)
            return o
        o[...] = value
        return o
    result = DistArray._of(value, dist, comm)
    if not outs:
        return result
    o = outs[0]
    if o.distribution != result.distribution:      # every rank's the same: raised everywhere
        raise DapError(f"{ufunc.__name__}.reduce: out= must be a DistArray distributed like "
                       f"the result ({result.distribution})")
    if o.dtype != result.dtype:
        # NumPy's refusal of out's dtype (the same on every rank), then its cast
        probe = np.ones((1,) * da.distribution.ndim, da.dtype)
        keep = {k: v for k, v in kw.items() if k in ("axis", "dtype", "keepdims")}
        with np.errstate(all="ignore"), ignoring():
            shape = np.shape(ufunc.reduce(probe, **keep))
            ufunc.reduce(probe, out=np.empty(shape, o.dtype), **keep)
        return blocks_into(o, result, f"{ufunc.__name__}.reduce")
    o._block[...] = result._block
    return o


def check_out(out, axes, ndim, keepdims, what, dist=None):
    """NumPy's refusal of ``out`` for a reduction over ``axes`` (of ``ndim``):
    a DistArray result needs a DistArray ``out`` (distributed like the
    result of the operand's Distribution ``dist``, where given); a value, a
    writeable array of its shape (NumPy's TypeError and ValueErrors)."""
    DistArray = _distarray()
    if len(axes) < ndim:
        if not isinstance(out, DistArray):
            raise DapError(f"{what}: out= must be a DistArray distributed like the result, "
                           f"not {type(out).__name__}")
        if dist is not None:
            # before the collective (review 22: checked after it, a rank
            # passing another out= raised alone and the others returned)
            want = result_distribution(dist, tuple(d for d in range(ndim) if d not in axes),
                                       keepdims)
            if out.distribution != want:
                raise DapError(f"{what}: out= must be a DistArray distributed like the result "
                               f"({want})")
        return
    want = (1,) * ndim if keepdims else ()
    if not isinstance(out, (np.ndarray, DistArray)):
        raise TypeError("return arrays must be of ArrayType")          # NumPy's
    shape = out.shape if isinstance(out, DistArray) else np.shape(out)
    if isinstance(out, DistArray) or shape != want:       # NumPy refuses it
        raise ValueError(f"{what}: out= has shape {shape}, the result {want}")
    if not out.flags.writeable:
        raise ValueError("output array is read-only")                 # NumPy's


def _as_is(result):
    return result


def array_ufunc(da, ufunc, method, inputs, kwargs):
    """DistArray's ufunc contract: nclx.aware's (NotImplemented for a foreign
    array type, the python-level hook chain, then :func:`compute`).

    A reduction is collective: an error on one rank (a hook, a floating-point
    error, bad arguments) is raised on every rank instead of leaving the
    others waiting in the reduction's collective."""
    if aware.foreign(inputs, kwargs, own=(_distarray(),)):
        return NotImplemented

    def run(ufunc, method, inputs, kwargs):
        return compute(da, ufunc, method, inputs, kwargs)

    if ufunc.signature is not None:       # the same on every rank: no agreement needed
        raise TypeError(f"np.{ufunc.__name__} is a generalized ufunc (signature "
                        f"{ufunc.signature!r}), not elementwise: it is not implemented for "
                        f"nclx.dap.DistArray (nothing is gathered implicitly; gather "
                        f"explicitly, or redistribute so each rank holds whole operands)")
    if method == "__call__" and _may_fail_alone(ufunc, inputs, kwargs):
        # an error of one rank's cells is raised on every rank: the others
        # would go on to their next collective and wait there
        def call():
            return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=da._unwrap,
                                     wrap=_as_is, compute=run)
        kinds = [k for k, m in np.geterr().items() if m in ("call", "log")]
        if not kinds:
            return agreed_call(da.comm, call, f"elementwise {ufunc.__name__}", ufunc.__name__)
        # call/log modes: each rank's flags recorded, ORed over the ranks in
        # the agreement, and reported once on every rank, as NumPy reports
        # them once for the whole array (before: only the ranks whose cells
        # met a flag called, a log mode with no object raised there alone)
        return agreed_call(da.comm, lambda: recorded_with_checked(call, kinds),
                           f"elementwise {ufunc.__name__}", ufunc.__name__,
                           report=lambda flags: report_flags(ufunc.__name__, flags))
    try:
        return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=da._unwrap, wrap=_as_is,
                                 compute=run)
    except Exception as exc:
        if method == "reduce" and not getattr(exc, "_nclx_agreed", False):
            # the others wait in the reduction's collective: meet them there
            # (raises exc here, a DapError naming this rank there)
            join_failed(da._block, da.distribution, da.comm, ufunc, kwargs, exc)
        raise


def _may_fail_alone(ufunc, inputs, kwargs):
    """Whether an elementwise call can raise on some ranks only: where a
    floating-point flag can raise (:func:`nclx._fpflags.fp_may_raise`), on
    object operands (any Python error), and for ``np.power`` in an integer
    loop (NumPy's ValueError for a negative exponent, raised only where one
    is met; an empty block meets none).  A user hook is local to its rank
    (a profiler may be linked on one rank only): its errors are its own."""
    if fp_may_raise() or "log" in np.geterr().values():
        return True          # log: NumPy's NameError where the errstate has no object
    if "dtype" in kwargs or "signature" in kwargs:
        # the loop is chosen by them: an integer power or an object loop of
        # other operands (before: np.power(floats, dtype=np.int64,
        # casting="unsafe") raised on the ranks holding a negative exponent
        # only, np.divide(ints, dtype=object) a ZeroDivisionError likewise)
        loop = loop_of(ufunc, inputs, kwargs)
        if loop is None:
            return True
        if any(d.kind == "O" for d in loop) or (ufunc is np.power and loop[0].kind in "iub"):
            return True
    dts = [getattr(x, "dtype", None) for x in inputs]
    if any(d is not None and d.kind == "O" for d in dts):
        return True
    if "out" in kwargs and any(getattr(getattr(o, "dtype", None), "kind", None) == "O"
                               for o in aware.outs_of(kwargs)):
        return True
    if ufunc is np.power:
        try:        # the loop NumPy picks: Python scalars weak, as NEP 50
            loop = np.result_type(*[d if d is not None else x for d, x in zip(dts, inputs)])
        except Exception:  # noqa: BLE001 - NumPy raises its own error, the same everywhere
            return False
        return loop.kind in "iub"
    return False


_COMPARE = {"eq": "equal", "ne": "not_equal"}


def _records(*xs):
    """Whether a void dtype (records, or raw bytes 'V<n>') is among ``xs``:
    ndarray's ``==``/``!=`` compare those itself, outside the ufuncs."""
    return any(getattr(getattr(x, "dtype", None), "kind", None) == "V" for x in xs)


def _records_compared(da, other, op):
    """``da == other`` (``!=``) of void dtypes: ndarray's operator on the
    blocks (``other`` a DistArray -- redistributed to ``da``'s distribution
    first, as a ufunc's operand -- or one record)."""
    DistArray = _distarray()
    if isinstance(other, DistArray):
        other = da._aligned(other)._block
    elif np.ndim(other) != 0:
        # NumPy's own error where it cannot compare them (a tuple of
        # numbers: "Cannot compare structured or void to non-void arrays.")
        op(np.empty((), da.dtype), np.asarray(other))
        raise DapError(f"{op.__name__}: a DistArray of records compares with a DistArray or "
                       f"one record, not {type(other).__name__} of shape {np.shape(other)}")
    return da._wrap_block(op(da._block, other))


def _no_loop_error():
    from numpy._core import _exceptions
    return _exceptions._UFuncNoLoopError


def _compared(da, other, ufunc):
    """``da == other`` (``!=``): NumPy's operator -- the ufunc, or where it
    has no loop for the dtypes (a str DistArray and bytes, a number and a
    str) every cell False (True), as ndarray's operators answer (before,
    the ufunc's UFuncTypeError; found by review)."""
    try:
        return ufunc(da, other)
    except _no_loop_error():
        DistArray = _distarray()
        if isinstance(other, DistArray):
            other = da._aligned(other)      # its errors (shape, communicator) first
        return da._wrap_block(np.full(da._block.shape, ufunc is np.not_equal, bool))


def _refuses_ufuncs(other):
    """``__array_ufunc__ = None``: the type asks binary operators to return
    NotImplemented so its own reflected operator runs (NumPy's rule)."""
    return getattr(type(other), "__array_ufunc__", False) is None


_OPERATORS = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
              ("truediv", np.true_divide), ("floordiv", np.floor_divide), ("mod", np.remainder),
              ("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
              ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal),
              ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
              ("pow", np.power), ("lshift", np.left_shift), ("rshift", np.right_shift),
              ("divmod", np.divmod), ("matmul", np.matmul)]
_INPLACE = ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "pow",
            "lshift", "rshift", "matmul")


def add_operators(cls):
    """Give ``cls`` (DistArray) NumPy's operators through its ufuncs, and
    register it as the type this module computes on."""
    _cls[:] = [cls]
    for name, uf in _OPERATORS:
        setattr(cls, f"__{name}__", lambda self, other, _u=uf: (
            NotImplemented if _refuses_ufuncs(other) else _u(self, other)))
        setattr(cls, f"__r{name}__", lambda self, other, _u=uf: (
            NotImplemented if _refuses_ufuncs(other) else _u(other, self)))
    for name, op in (("eq", operator.eq), ("ne", operator.ne)):
        # records (structured dtypes): ndarray's own comparison, not the ufunc's
        setattr(cls, f"__{name}__", lambda self, other, _u=getattr(np, _COMPARE[name]), _op=op: (
            NotImplemented if _refuses_ufuncs(other) else
            _records_compared(self, other, _op) if _records(self, other) else
            _compared(self, other, _u)))
    for name, uf in _OPERATORS:
        if name in _INPLACE:        # NumPy's in-place operators: written into self
            setattr(cls, f"__i{name}__", lambda self, other, _u=uf: (
                NotImplemented if _refuses_ufuncs(other) else _u(self, other, out=(self,))))
    cls.__pow__ = power.operator_pow   # NumPy's square / reciprocal / sqrt for scalar exponents
    cls.__ipow__ = power.operator_ipow
    cls.__hash__ = None        # == is elementwise (as NumPy's arrays): unhashable
    cls.__neg__ = lambda self: np.negative(self)
    cls.__pos__ = lambda self: np.positive(self)
    cls.__invert__ = lambda self: np.invert(self)
    cls.__abs__ = lambda self: np.absolute(self)
