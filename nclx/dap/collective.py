"""Agreement between the ranks of a communicator before a collective step.

A rank that raises on its own (a bad export, a bad argument) while the
others go on into a collective leaves them waiting for ever.  The helpers
here turn "this rank failed" into one collective that every rank reaches:
each rank passes ``None`` or the exception it caught, and if any rank failed
every rank raises the same :class:`DapError`, listing each failing rank with
the original exception's type and message::

    error = None
    try:
        export = validate(obj.__distarray__())
    except Exception as exc:
        error = exc
    agree(comm, error, "from_distarray")      # raises on every rank, or on none
    everyone = comm.allgather(export["dim_data"])

``agree_same`` also checks that every rank passed the same value (a shape,
a dtype, a plan), and ``allgather_checked`` returns every rank's value once
all have succeeded -- each with one ``allgather``.  The DapError raised is
also of the lowest failing rank's exception type where that is Python's,
NumPy's or nclx's (:func:`agreed_error_type`), so ``except AxisError``
catches the failure on every rank.
"""
import builtins
import pickle
import sys

import numpy as np

from nclx import errors
from nclx.dap.validate import DapError, DapTypeError

__all__ = ["agree", "agree_same", "allgather_checked", "describe_error", "agreed_error_type", "failure_type",
           "mark_agreed"]

_MAX_LISTED = 16        # failing or disagreeing groups listed in a message


def mark_agreed(exc):
    """Mark ``exc`` as needing no agreement: raised on every rank at once,
    or raised by one rank after the collectives, where nobody waits for it
    (a caller that agrees on errors lets it go up unjoined)."""
    try:
        # past the type's own __setattr__ (a frozen exception class raised
        # its TypeError here, in place of the exception; found by review)
        BaseException.__setattr__(exc, "_nclx_agreed", True)
    except (AttributeError, TypeError):     # not an exception, or no attributes at all
        pass
    return exc


def describe_error(error):
    """``'TypeName: message'`` of an exception (the type's name kept, since
    the DapError that reports it has another type); a string as it is."""
    if not isinstance(error, BaseException):
        return str(error)
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


def _exchange(comm, error, value, always=False):
    """One allgather of (message or None, pickled value or None); the value
    is sent only without an error, unless ``always``.

    The value is pickled here, not by mpi4py, so a value that cannot be
    pickled becomes this rank's error instead of an exception raised before
    this rank reaches the collective."""
    payload = None
    if (error is None or always) and value is not None:
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:    # noqa: BLE001 - reported to every rank below
            payload = None
            if error is None:
                error = exc
    msg = None if error is None else describe_error(error)
    return comm.allgather((msg, payload)), error


def _failure_report(parts):
    """Lines naming each failing rank and its error, or []."""
    failed = [(rank, msg) for rank, (msg, _) in enumerate(parts) if msg is not None]
    if not failed:
        return []
    nranks = len(parts)
    count = f"{len(failed)} of {nranks} ranks failed" if len(failed) > 1 else \
        f"rank {failed[0][0]} of {nranks} failed"
    lines = [f"{count}:"] + [f"  rank {rank}: {msg}" for rank, msg in failed[:_MAX_LISTED]]
    if len(failed) > _MAX_LISTED:
        lines.append(f"  ... and {len(failed) - _MAX_LISTED} more ranks")
    return lines


def failure_type(msg):
    """The type a report ``'TypeName: message'`` of a failing rank is raised
    as on every rank (:func:`agreed_error_type`)."""
    name = (msg or "").partition(": ")[0]
    if name.startswith("DapError[") and name.endswith("]"):     # reported again
        name = name[len("DapError["):-1]
    return agreed_error_type(name) if name.isidentifier() else DapError


def _raise(lines, what, local_error, first=None):
    """Raise the report ``lines`` on this rank: a DapError that is also the
    lowest failing rank's exception type (``first``, its report)."""
    if not lines:
        return
    head = f"{what}: " if what else ""
    err = failure_type(first)(head + "\n".join(lines))
    if local_error is not None:
        raise err from local_error
    raise err


def _first_failure(parts):
    return next((msg for msg, _ in parts if msg is not None), None)


def _raise_if_failed(parts, what, local_error):
    _raise(_failure_report(parts), what, local_error, _first_failure(parts))


def allgather_checked(comm, value, error=None, what=None):
    """Every rank's ``value`` (a list indexed by rank), after checking that
    no rank failed.

    ``error`` is ``None`` or the exception this rank caught (its ``value``
    is then ignored).  One ``allgather``; if any rank passed an error (or a
    value that cannot be pickled), every rank raises the same DapError
    listing each failing rank, the exception's type name and message.
    ``what`` (e.g. ``"from_distarray"``) starts the message.
    """
    parts, error = _exchange(comm, error, value)
    _raise_if_failed(parts, what, error)
    return [None if payload is None else pickle.loads(payload) for _, payload in parts]


def agree(comm, error=None, what=None):
    """Raise the same DapError on every rank of ``comm`` if any rank passed
    an exception as ``error``; return None on every rank otherwise.

    Every rank must call it (it is one ``allgather``); the message lists
    each failing rank with the original exception's type name and message,
    and on a failing rank the DapError's ``__cause__`` is its exception.
    """
    parts, error = _exchange(comm, error, None)
    _raise_if_failed(parts, what, error)


def agree_same(comm, value, error=None, what=None, describe=repr):
    """Like :func:`agree`, and also check that every rank passed an equal
    ``value`` (compared with ``==``, after a pickle round trip); return
    ``value``.

    One ``allgather`` carries both the error and the value (sent even by a
    failing rank, so a disagreement that made a rank fail is reported with
    its failure).  On a failure or a disagreement every rank raises the same
    DapError: failing ranks with their errors, then the ranks grouped by
    what they passed, each described by ``describe(value)``.
    """
    parts, error = _exchange(comm, error, value, always=True)
    lines = _failure_report(parts)
    values = [None if payload is None else pickle.loads(payload) for _, payload in parts]
    groups = []                       # [value, [ranks]] in order of first rank
    for rank, v in enumerate(values):
        for group in groups:
            if _equal(group[0], v):
                group[1].append(rank)
                break
        else:
            groups.append([v, [rank]])
    if len(groups) > 1:
        lines.append("the ranks disagree (every rank must pass the same):")
        for v, ranks in groups[:_MAX_LISTED]:
            who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + _ranges(ranks)
            lines.append(f"  {who} passed {describe(v)}")
        if len(groups) > _MAX_LISTED:
            lines.append(f"  ... and {len(groups) - _MAX_LISTED} more groups")
    _raise(lines, what, error, _first_failure(parts))
    return value


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:       # noqa: BLE001 - e.g. arrays: compare their pickles
        return pickle.dumps(a) == pickle.dumps(b)


def _ranges(ranks):
    """'0-3, 5, 7-8' for sorted ranks."""
    out, start = [], ranks[0]
    for prev, cur in zip(ranks, ranks[1:] + [None]):
        if cur is None or cur != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ", ".join(out)


_AGREED = {}


#: modules whose exception types a report may name, looked up only once
#: imported (a failing rank raised one, so the code path imported it here
#: too): NumPy's private ufunc errors (UFuncTypeError and its kin) and
#: nclx's error families outside nclx.errors
_MORE_EXCEPTIONS = ("numpy._core._exceptions", "nclx.dap.npymap", "nclx.storage.params",
                    "nclx.types.parser", "nclx.ipc.errors", "nclx._trace")
#: types that keep their own meaning when raised: ending an iteration,
#: a syntax error's fields, an exception group's constructor
_NOT_COMBINED = (StopIteration, StopAsyncIteration, SyntaxError, BaseExceptionGroup)


def _known_exceptions():
    """Exception types by name that a failing rank's report may name: Python's
    built-in ones, NumPy's, and nclx's."""
    found = {}
    spaces = [vars(builtins), vars(np.exceptions), {"LinAlgError": np.linalg.LinAlgError},
              vars(errors), {"DapError": DapError, "DapTypeError": DapTypeError}]
    spaces += [vars(sys.modules[m]) for m in _MORE_EXCEPTIONS if m in sys.modules]
    for space in spaces:
        for name, value in list(space.items()):
            if isinstance(value, type) and issubclass(value, Exception):
                found.setdefault(name, value)
    return found


def _reduce(self):
    """A plain DapError with this one's message and attributes (notes too)."""
    return (DapError, self.args, dict(self.__dict__))


def agreed_error_type(name):
    """The type the ranks that did not fail raise (and the failing ones, for
    errors that every rank reports alike) when a rank's failure was reported
    as ``name`` (its exception type's name, from the agreement's record).

    :class:`DapError`, and also ``name``'s type where that is Python's,
    NumPy's or nclx's own, so ``except np.exceptions.AxisError`` (or
    ``IndexError``, ``ZeroDivisionError``...) catches the same failure on
    every rank as NumPy's call would raise it.  The type's name reads
    ``DapError[AxisError]``; its instances pickle as plain DapErrors."""
    cls = _AGREED.get(name)
    if cls is not None:
        return cls
    base = _known_exceptions().get(name) if isinstance(name, str) else None
    if base is None or issubclass(DapError, base) or issubclass(base, _NOT_COMBINED):
        return DapError             # not cached: the module may be imported later
    if issubclass(base, DapError):
        cls = base
    else:
        try:
            cls = type(f"DapError[{name}]", (DapError, base), {
                "__init__": lambda self, message="": Exception.__init__(self, message),
                "__str__": BaseException.__str__,
                "__reduce__": _reduce,
                "__module__": __name__,
                "__doc__": f"A DapError raised on every rank for a {name} on one of them."})
            str(cls("probe"))       # a type whose constructor or str needs more
        except Exception:           # noqa: BLE001 - layouts that cannot combine, too
            cls = DapError
    _AGREED[name] = cls
    return cls
