"""What an elementwise ufunc call on DistArrays needs from NumPy before and
after its agreement across the ranks (:mod:`nclx.dap.ufuncs`): the loop
NumPy picks where ``dtype=`` or ``signature=`` chooses it (:func:`loop_of`:
an integer power or an object loop can raise on some ranks only), and
NumPy's report of the floating-point flags the ranks met together, for the
kinds in ``call`` or ``log`` mode (:func:`report_flags`: once on every
rank, as NumPy reports once for the whole array)."""
import numpy as np

from nclx._fpflags import recorded_flags
from nclx._ncl import modes as _modes
from nclx.dap.collective import failure_type, mark_agreed

__all__ = ["loop_of", "report_flags", "recorded_with_checked"]


_FLAGS = ((1, "divide", "divide by zero"), (2, "over", "overflow"), (4, "under", "underflow"),
          (8, "invalid", "invalid value"))
#: carried with the flags in the agreement: this rank's cells wrapped inside
#: nclx.checked() (its integer overflow record is pending)
CHECKED_OVERFLOW = 1 << 16


def _has_checked_record():
    held = _modes.hold_checked_record()
    _modes.give_back_checked_record(held)
    return held is not None


def recorded_with_checked(call, kinds):
    """:func:`nclx._fpflags.recorded_flags` of ``call``, with
    :data:`CHECKED_OVERFLOW` where this rank's cells wrapped inside
    ``nclx.checked()``: ORed over the ranks, every rank raises (before, the
    other ranks took the flag for a float overflow and warned, or raised
    FloatingPointError, and the ranks fell out of step; review 22)."""
    result, flags = recorded_flags(call, kinds)
    if _modes.checked_depth() > 0 and _has_checked_record():
        flags |= CHECKED_OVERFLOW
    return result, flags


def report_flags(name, status):
    """NumPy's report of an elementwise call's flags ``status`` for the kinds
    in ``call`` or ``log`` mode (in NumPy's order): ``call(text, status)``,
    or the log object's ``write("Warning: <text> encountered in <name>\\n")``
    (NumPy's NameError where none is set).  Raised after the agreement:
    every rank reports alike, nobody waits."""
    if status & CHECKED_OVERFLOW:
        status &= ~CHECKED_OVERFLOW
        if not _has_checked_record():       # another rank's cells wrapped
            err = failure_type("OverflowError: ")(
                f"np.{name}: integer overflow on another rank inside nclx.checked() (the "
                f"rank whose cells wrapped raises OverflowError with its count)")
            mark_agreed(err)
            raise err
    mode = np.geterr()
    errcall = np.geterrcall()
    for bit, kind, text in _FLAGS:
        if not status & bit or mode[kind] not in ("call", "log"):
            continue
        try:
            # NumPy's NameError where no function or object is set, else
            # its call's own errors (before, None was called: TypeError; a
            # log object without write raised NameError, NumPy's AttributeError)
            if errcall is None:
                raise NameError(f"python callback specified for {text} (in  {name}) but no "
                                f"function found." if mode[kind] == "call" else
                                f"log specified for {text} (in {name}) but no object with "
                                f"write method found.")
            if mode[kind] == "call":
                errcall(text, status)
            else:
                errcall.write(f"Warning: {text} encountered in {name}\n")
        except BaseException as exc:
            mark_agreed(exc)        # every rank reports alike: nobody waits
            raise


def loop_of(ufunc, inputs, kwargs):
    """The loop's dtypes NumPy picks for ``inputs`` with ``dtype=`` and
    ``signature=`` (Python scalars weak, as NEP 50), or None where that is
    not found here."""
    try:
        return _resolved(ufunc, inputs, kwargs)
    except Exception:  # noqa: BLE001 - NumPy's own error follows, or another path
        return None


def _resolved(ufunc, inputs, kwargs):
    nin, nout = ufunc.nin, ufunc.nout
    sig = kwargs.get("signature")
    if kwargs.get("dtype") is not None:
        sig = (None,) * nin + (np.dtype(kwargs["dtype"]),) * nout
    elif isinstance(sig, str):
        return None
    elif sig is not None:
        sig = tuple(None if t is None else np.dtype(t) for t in
                    (sig if isinstance(sig, tuple) else (sig,) * (nin + nout)))
    dts = []
    for x in inputs:
        d = getattr(x, "dtype", None)
        if d is None:
            d = type(x) if type(x) in (int, float, complex) else np.asarray(x).dtype
        dts.append(d)
    return ufunc.resolve_dtypes(tuple(dts) + (None,) * nout, signature=sig, casting="unsafe")
