"""An error that one rank meets and every rank raises through an agreement
is also of that error's own type on every rank (was: a plain DapError, so
``except np.exceptions.AxisError`` missed what NumPy's call raises)."""
import pickle

import numpy as np
import pytest

import nclx.dap as dap
from mpi_helpers import comm, rank
from nclx.dap import DapError, collective, fold

size = comm.size
last = size - 1


def _typed(fn, expected):
    """``fn()`` raises a DapError that is also ``expected``; its message."""
    with pytest.raises(DapError) as info:
        fn()
    assert isinstance(info.value, expected), type(info.value).__mro__
    return info.value


@pytest.mark.parametrize("call", [
    lambda a: np.sort(a, axis=3),
    lambda a: np.argsort(a, axis=-4),
    lambda a: np.cumsum(a, axis=9),
    lambda a: np.unique(a, axis=3),
])
def test_numpys_axis_errors_are_axis_errors_on_every_rank(call):
    a = dap.DistArray.from_global(np.arange(4.0 * max(size, 2)).reshape(-1, 2), comm=comm)
    with pytest.raises(np.exceptions.AxisError):
        call(np.arange(8.0).reshape(4, 2))            # what NumPy raises
    err = _typed(lambda: call(a), np.exceptions.AxisError)
    assert isinstance(err, IndexError) and isinstance(err, ValueError)


def test_one_ranks_error_is_raised_with_its_type_by_the_others():
    error = ZeroDivisionError("on the last rank") if rank == last else None
    err = _typed(lambda: collective.agree(comm, error, "step"), ZeroDivisionError)
    assert type(err).__name__ == "DapError[ZeroDivisionError]"
    assert f"rank {last}: ZeroDivisionError: on the last rank" in str(err)
    assert (err.__cause__ is error) if rank == last else err.__cause__ is None


def test_the_lowest_failing_ranks_type_wins():
    error = (KeyError("k") if rank == 0 else IndexError("i")) if rank in (0, last) else None
    err = _typed(lambda: collective.agree_same(comm, 1, error, "step"), KeyError)
    assert str(err).startswith("step: ")            # no KeyError quoting of the message


def test_the_folds_agreement_raises_the_failing_type_on_the_other_ranks():
    def fn():
        if rank == last:
            raise np.linalg.LinAlgError("singular on the last rank")
        return rank
    with pytest.raises(np.linalg.LinAlgError) as info:
        fold.agreed_call(comm, fn, "agreed-types", "the call")
    if rank != last:
        assert isinstance(info.value, DapError) and "singular on the last rank" in str(info.value)


def test_an_unknown_type_is_a_plain_dap_error():
    class Mine(Exception):
        pass
    error = Mine("user's own") if rank == 0 else None
    with pytest.raises(DapError) as info:
        collective.agree(comm, error, "step")
    assert type(info.value) is DapError


def test_typed_agreed_errors_pickle_as_dap_errors():
    error = OSError("disk") if rank == 0 else None
    err = _typed(lambda: collective.agree(comm, error, "io"), OSError)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DapError and str(back) == str(err)


def test_numpys_ufunc_type_errors_are_type_errors_on_every_rank():
    """UFuncTypeError (and its private subclasses) is not in numpy.exceptions:
    was a plain DapError (found by a review)."""
    a = dap.DistArray.from_global(np.arange(12.0).reshape(6, 2), comm=comm)
    with pytest.raises(TypeError):
        np.quantile(np.arange(12.0), "a")
    _typed(lambda: np.quantile(a, "a"), TypeError)


def test_a_failed_redistribution_of_an_operand_keeps_its_type(monkeypatch):
    """The operand's redistribution (a + b, np.where, np.average) failing on
    one rank: its type on every rank (a + b re-raised a plain DapError)."""
    real = dap.DistArray.redistribute

    def failing(self, *args, **kw):
        collective.agree(comm, IndexError("out of room") if rank == last else None,
                         "redistribute")
        return real(self, *args, **kw)

    g = np.arange(12.0).reshape(6, 2)
    a = dap.DistArray.from_global(g, comm=comm)
    b = dap.DistArray.from_global(g, comm=comm, dist="c")
    if a.distribution == b.distribution:
        return                                      # one rank: nothing to move
    monkeypatch.setattr(dap.DistArray, "redistribute", failing)
    for call in (lambda: a + b, lambda: np.where(a > 3, a, b),
                 lambda: np.average(a, weights=b)):
        _typed(call, IndexError)
