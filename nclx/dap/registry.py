"""Which NumPy functions a DistArray implements (``__array_function__``).

A NumPy function called with a DistArray argument reaches
:func:`dispatch`; a function registered with :func:`implements` runs
(every rank must make the same call: the implementations are collective),
any other raises ``TypeError`` naming the function and the way out
(``da.gather()``).  Nothing falls back to NumPy silently: a silent gather of
a distributed array is a wrong answer or an out-of-memory on a large one.

Before an implementation runs, the ranks agree that they made the same call
(:func:`nclx.dap.fold.agree`: one ``Allreduce`` of a digest of the function
and its arguments, DistArrays by layout and dtype): ranks that passed
different arguments raise a DapError naming the function on every rank,
instead of meeting in mismatched collectives (a hang or an MPI abort) or
computing silently different results.  An implementation that makes that
agreement itself, in its one collective (the reductions), is registered
with ``agreed=True``.
"""
import contextvars
import hashlib
import inspect
import pickle
import zlib

import numpy as np

from nclx import _callsite
from nclx.dap.complexcasts import ComplexCasts
from nclx.dap.agreekeys import dtype_key
from nclx.dap.redistribute import agree_quick, check_partition, layout_key

_HANDLED = {}
_AGREED = set()         # implementations that agree on the call themselves
#: functions whose implementations take each global element once: a 'u'
#: dimension (an import) holding an index twice or not at all is refused,
#: as sum, sort and gather refuse it (before, these computed silently wrong
#: values: np.median, np.histogram counting 8 elements of 6; review 23)
_WHOLE = {getattr(np, n) for n in (
    "median", "percentile", "quantile", "nanmedian", "nanpercentile", "nanquantile",
    "histogram", "histogram_bin_edges", "dot", "vdot", "inner", "unique", "argmax", "argmin",
    "nanargmax", "nanargmin")} | {np.linalg.norm}
#: reductions whose ComplexWarnings into out= are NumPy's count
#: (:mod:`nclx.dap.complexcasts`; the agreed ones count inside their
#: collective; the quantiles take no out= of another dtype, so never cast)
_COMPLEX_CASTS = {np.var, np.std, np.nanvar, np.nanstd, np.nansum, np.nanprod, np.nanmean,
                  np.nanmin, np.nanmax}
#: the array whose __array_function__ runs the implementation (NEP 35's
#: ``like=``: NumPy calls it but passes no ``like`` argument on)
_RECEIVER = contextvars.ContextVar("nclx_dap_receiver", default=None)
#: functions that warn in Python before their casts (np.var's "Degrees of
#: freedom <= 0"): ``{np_func: first(named) -> [(message, category), ...]}``
_FIRST = {}
#: the messages issued before the ComplexWarnings for the running call
_ISSUED = contextvars.ContextVar("nclx_dap_issued_first", default=frozenset())


def receiver():
    """The DistArray whose ``__array_function__`` runs the current
    implementation (``np.zeros(n, like=da)``: ``da``), or None."""
    return _RECEIVER.get()


def _name(func):
    module = getattr(func, "__module__", None) or "numpy"
    module = "np" if module == "numpy" else module.replace("numpy.", "np.")
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def implements(np_func, agreed=False, first=None):
    """Decorator: register ``impl`` as what ``np_func`` does for DistArrays.

    ``impl`` takes ``np_func``'s arguments.  Registering a function twice
    raises ``ValueError`` (two modules would otherwise race on import order).
    ``agreed=True``: ``impl``'s first collective checks itself that every
    rank made the same call (else :func:`dispatch` checks it first).
    ``first(named)``: the warnings, ``[(message, category), ...]``, that
    NumPy's function issues in Python before the casts of its ComplexWarnings
    (:mod:`nclx.dap.complexcasts`), given the call's arguments by name; where
    those are counted, they are issued before them and ``impl`` leaves out
    the messages :func:`issued_first` names."""
    if not callable(np_func):
        raise TypeError(f"implements() needs a NumPy function, not {type(np_func).__name__}")

    def register(impl):
        if np_func in _HANDLED:
            raise ValueError(f"{_name(np_func)} is already implemented for DistArray "
                             f"(by {_HANDLED[np_func].__module__}.{_HANDLED[np_func].__name__})")
        _HANDLED[np_func] = impl
        if first is not None:
            _FIRST[np_func] = first
        if agreed:
            _AGREED.add(np_func)
        return impl
    return register


def issued_first():
    """The messages the running implementation's call issued already,
    before its ComplexWarnings (``implements(first=...)``)."""
    return _ISSUED.get()


def implemented():
    """The NumPy functions a DistArray implements, as ``{name: function}``."""
    return {_name(f): f for f in _HANDLED}


def refusal(what):
    """The TypeError for a NumPy operation a DistArray does not implement."""
    return TypeError(
        f"{what} is not implemented for nclx.dap.DistArray: nothing is gathered implicitly. "
        f"Gather explicitly (da.gather(root) returns the global NumPy array on root, "
        f"da.gather(root=None) on every rank) and call NumPy on that, or register an "
        f"implementation with nclx.dap.implements({what})")


def dispatch(own, func, types, args, kwargs, receiver=None):
    """``__array_function__``'s body for the array class ``own``: the
    registered implementation, or a TypeError naming ``func``.  Foreign array
    types defer (NotImplemented)."""
    if not all(issubclass(t, (own, np.ndarray)) for t in types):
        return NotImplemented
    impl = _HANDLED.get(func)
    if impl is None:
        # refused on every rank after one agreement, as a registered call
        # starts: a rank calling it while the others call a registered
        # function raised alone and left them waiting in that function's
        # collective (a hang; found by review 22)
        comm = next((v.comm for v in (*args, *kwargs.values()) if isinstance(v, own)),
                    receiver.comm if isinstance(receiver, own) else None)
        if comm is not None:
            agree_quick(comm, f"{_name(func)} (not implemented)", None, _name(func),
                        describe=lambda t: t)
        raise refusal(_name(func))
    if func in _WHOLE:
        # the verdict comes from the Distribution, which every rank holds
        # whole: the same on every rank, no collective needed
        for v in (*args, *kwargs.values()):
            if isinstance(v, own):
                check_partition(v.distribution, _name(func))
    named = casts = None
    issued = frozenset()
    if func not in _AGREED:
        comms, error = [], None
        try:
            named = _bound(impl, args, kwargs)
            text = f"{_name(func)}{_describe(_outs_by_layout(named), own, comms)}"
            _check_operands(func, named, own)
            if func in _COMPLEX_CASTS and isinstance(named, dict) and \
                    named.get("out") is not None:
                # NumPy's ComplexWarnings, counted on probes, issued here:
                # one that the filters make an error is agreed below, on
                # every rank (before, issued after the agreement: a rank
                # whose filters raised left the others in the collective;
                # found by review)
                casts = ComplexCasts(func, (), named, own)
                if casts.active and func in _FIRST:
                    early = _FIRST[func](named)
                    for message, category in early:
                        _callsite.warn(message, category)
                    issued = frozenset(m for m, _ in early)
                casts.emit()
        except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_quick
            error, text = exc, _name(func)
            comms += [v.comm for v in (*args, *kwargs.values()) if isinstance(v, own)]
        if not comms and isinstance(receiver, own):
            # NEP 35's like=: NumPy passes the receiver alone (no DistArray
            # among the arguments); its ranks agree on the call as any
            # other's (before, np.zeros on one rank and np.ones on another
            # made one array of both; review 24)
            comms.append(receiver.comm)
        if comms:
            agree_quick(comms[0], text, error, _name(func), describe=lambda t: t)
    token = _RECEIVER.set(receiver)
    said = _ISSUED.set(issued)
    try:
        if casts is not None and casts.active:
            casts.quiet()                   # the implementation's own casts
            try:
                return impl(**named)
            finally:
                casts.close()
        return impl(*args, **kwargs)
    finally:
        _ISSUED.reset(said)
        _RECEIVER.reset(token)


def _holds(value, own):
    return isinstance(value, own) or (isinstance(value, (list, tuple)) and
                                      any(isinstance(v, own) for v in value))


def _check_operands(func, bound, own):
    """TypeError where the call's only DistArray is its ``out=`` (an ndarray
    operand: no implementation computes that; before, an AttributeError
    from inside one, found by review)."""
    if isinstance(bound, dict) and bound.get("out") is not None and _holds(bound["out"], own) \
            and not any(_holds(v, own) for k, v in bound.items() if k != "out"):
        raise TypeError(f"{_name(func)}: out= is a DistArray but no operand is one (distribute "
                        f"the operand: DistArray.from_global(...), or pass a NumPy out=)")


_SIGNATURES = {}


def _bound(impl, args, kwargs):
    """The call's arguments by parameter name, defaults filled in (a keyword
    on one rank and a position on another, or a default given explicitly,
    are the same call); as given where they do not bind (``impl`` raises)."""
    sig = _SIGNATURES.get(impl)
    if sig is None:
        sig = _SIGNATURES[impl] = inspect.signature(impl)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return (args, kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


class _Out:
    """An ``out=`` argument: ranks agree on its type, shape and dtype -- its
    contents are not read (an ``np.empty`` buffer holds other bytes on each
    rank)."""
    __slots__ = ("text",)

    def __init__(self, out):
        """``text`` None: not an ndarray (or a tuple of them) -- described as
        any other argument."""
        self.text = None
        if isinstance(out, tuple) and out and all(isinstance(o, np.ndarray) for o in out):
            self.text = "(" + ", ".join(_Out(o).text for o in out) + ")"
        elif isinstance(out, np.ndarray):
            # writeable too: a read-only out= on one rank made it alone raise
            # after the collective (found by review: the others then hung)
            self.text = (f"out {type(out).__name__}({out.shape}, {dtype_key(out.dtype)}"
                         f"{'' if out.flags.writeable else ', read-only'})")


def _outs_by_layout(bound):
    """``bound`` with its ``out`` argument described by layout alone."""
    if isinstance(bound, dict) and bound.get("out") is not None:
        out = _Out(bound["out"])
        if out.text is not None:
            bound = dict(bound, out=out)
    return bound


def _describe(obj, own, comms, depth=0):
    """A text that is equal on two ranks when ``obj`` is the same argument
    there: DistArrays by shape, dtype and layout (their communicator goes to
    ``comms``), small NumPy arrays by value, larger ones by a checksum,
    objects without a portable text by type."""
    if depth > 8:
        return "..."
    if isinstance(obj, _Out):
        return obj.text
    if isinstance(obj, own):
        comms.append(obj.comm)
        # dtypes by their fields too (review 22: two records of one size,
        # both '|V16', passed as one: per-rank dtypes, garbage or a hang)
        return f"DistArray({obj.shape}, {dtype_key(obj.dtype)}, {layout_key(obj.distribution)!r})"
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:                    # Python objects: their pickle
            return f"ndarray({obj.shape}, object, {_pickled(obj)})"
        try:
            crc = zlib.crc32(np.ascontiguousarray(obj).reshape(-1).view(np.uint8))
        except (TypeError, ValueError):          # a zero-size item: the shape says it all
            crc = 0
        return f"ndarray({obj.shape}, {dtype_key(obj.dtype)}, {crc})"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(_describe(v, own, comms, depth + 1) for v in obj)
        return f"[{inner}]" if isinstance(obj, list) else f"({inner})"
    if isinstance(obj, dict):
        items = sorted((_describe(k, own, comms, depth + 1), _describe(v, own, comms, depth + 1))
                       for k, v in obj.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(obj, (set, frozenset)):          # no fixed order (string hashes vary by rank)
        return f"{type(obj).__name__}({sorted(_describe(v, own, comms, depth + 1) for v in obj)})"
    if isinstance(obj, int) and not isinstance(obj, bool):
        try:
            return repr(obj)
        except ValueError:           # past 4300 digits
            return hex(obj)
    if obj is None or isinstance(obj, (bool, float, complex, str, bytes, slice, np.generic,
                                       np.dtype, type)) or obj is Ellipsis:
        return repr(obj)
    return f"{type(obj).__name__}:{_pickled(obj)}"    # a Fraction, a Decimal, a path...


def _pickled(obj):
    """A digest of ``obj``'s pickle, or '?' where it has none (a lambda, a
    generator: then only its type is compared)."""
    try:
        return hashlib.sha1(pickle.dumps(obj, protocol=4)).hexdigest()[:16]
    except Exception:  # noqa: BLE001 - no portable form
        return "?"
