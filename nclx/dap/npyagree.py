"""How the ranks of a collective ``.npy`` read or write agree on errors
(:mod:`nclx.dap.npyfile`): one allgather of every rank's error (and a
value), and one report -- a failure's message alone when every rank failed
alike, else each failing rank with its message -- raised on every rank as a
DapError that is also the lowest failing rank's exception type.
"""
from nclx.dap.collective import describe_error, failure_type
from nclx.dap.validate import DapError

__all__ = ["Failure", "agree", "failed", "gather", "local_error", "report"]


def local_error(exc):
    """An MPI error as an OSError with the first line of MPI's message (its
    error stack follows on other lines); other exceptions as they are."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    if isinstance(exc, MPI.Exception):
        return OSError(f"{MPI.Get_error_string(exc.Get_error_class())} "
                       f"({str(exc).splitlines()[0]})")
    return exc


def gather(comm, error, value=None):
    """One allgather of (this rank's error, ``value``): ``(text, values)``,
    ``text`` None when no rank failed, else its message alone when every
    rank failed alike, or each failing rank with its message."""
    msg = oserr = None
    if error is not None:
        msg = str(error) if isinstance(error, DapError) else describe_error(error)
        if isinstance(error, OSError) and error.errno is not None:
            oserr = (error.errno, error.strerror, error.filename)
    parts = comm.allgather((msg, value, oserr))
    failed = [(r, m) for r, (m, _, _) in enumerate(parts) if m is not None]
    text = report(failed, len(parts))
    if text is not None:
        text.oserr = parts[failed[0][0]][2]
    return text, [v for _, v, _ in parts]


def report(failed, nranks):
    """None for no ``failed`` ranks ``[(rank, message)]``, else their report."""
    if not failed:
        return None
    if len(failed) == nranks and len({m for _, m in failed}) == 1:
        return Failure(failed[0][1], failed[0][1])
    head = f"rank {failed[0][0]}" if len(failed) == 1 else f"{len(failed)} ranks"
    return Failure(f"{head} of {nranks} failed:" + "".join(
        f"\n  rank {r}: {m}" for r, m in failed[:16]), failed[0][1])


class Failure(str):
    """A failure report; ``first``: the lowest failing rank's message
    ('TypeName: message'), whose type the agreement raises as."""

    def __new__(cls, text, first, oserr=None):
        self = super().__new__(cls, text)
        self.first = first
        self.oserr = oserr      # (errno, strerror, filename) of its OSError, or None
        return self


def failed(what, text, error):
    """The exception every rank raises for the report ``text``: a DapError
    that is also the lowest failing rank's exception type (an OSError for a
    path no rank could write, as MPI-IO's error; before: a plain DapError,
    found by review)."""
    err = failure_type(text.first)(f"{what}: {text}")
    err.__cause__ = error
    oserr = getattr(text, "oserr", None)
    if oserr is not None and isinstance(err, OSError):
        # errno as the failing rank's OSError had it (a full disk: ENOSPC),
        # so that code telling failures apart by errno works (review 25)
        err.errno, err.strerror, err.filename = oserr
    return err


def agree(comm, error, what, value=None):
    """Every rank's ``value``, or the same DapError on every rank if any
    passed an ``error`` (:func:`gather`)."""
    text, values = gather(comm, error, value)
    if text is not None:
        raise failed(what, text, error)
    return values
