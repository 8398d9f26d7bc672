"""A reduction's floating-point flags met in one rank's own cells are
reported on every rank (nclx.dap.reduceflags): NumPy warns "overflow
encountered in reduce" once for the whole array, and every rank holds the
result.  Before, only the rank whose cells overflowed warned (an axis sum
on a (3, 1) grid, or a full sum where one rank's cells alone overflow), and
under ``np.errstate(over='raise')`` that rank raised FloatingPointError
while the others raised a DapError.  A cast's flags stay with the rank
holding the cells, as an elementwise call's.  Found by the review of that
change: warnings filters that differ between ranks (one rank's making the
report an error) left that rank in a collective the others never joined (a
hang); the local reduction's warnings were recorded with
``warnings.catch_warnings``, which threads reducing at once corrupted (the
process's filters changed for good); and other warnings were re-issued
without their registry (shown at every call instead of once)."""
import threading
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD


def _data():
    """12 x 3 float64, only the first two rows huge: only the rank holding
    them overflows in its own cells (its partial sum is inf; inf plus the
    others' finite partials raises no flag while combining)."""
    x = np.ones((12, 3))
    x[:2] = 1e308
    return x


def _warned(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = fn()
    return r, [(w.category, str(w.message)) for w in seen]


@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
@pytest.mark.parametrize("dist", [("b", "n"), ("c", "n"), ("b", "b")])
def test_one_ranks_overflow_is_warned_everywhere(axis, dist):
    x = _data()
    ref = _warned(lambda: np.sum(x, axis=axis))
    da = dap.DistArray.from_global(x, comm=comm, dist=dist)
    got = _warned(lambda: np.sum(da, axis=axis))
    value = got[0].gather(root=None) if isinstance(got[0], dap.DistArray) else got[0]
    collective_assert(got[1] == ref[1], f"NumPy warned {ref[1]}, nclx {got[1]}")
    collective_assert(np.asarray(value).tobytes() == np.asarray(ref[0]).tobytes(), "value")


@pytest.mark.parametrize("axis", [None, 0])
def test_raise_mode_raises_floating_point_error_everywhere(axis):
    da = dap.DistArray.from_global(_data(), comm=comm, dist=("b", "n"))
    try:
        with np.errstate(over="raise"):
            np.sum(da, axis=axis)
        exc = None
    except Exception as e:  # noqa: BLE001 - checked below
        exc = e
    collective_assert(type(exc) is FloatingPointError and "overflow encountered in reduce"
                      in str(exc), f"raised {exc!r}")


def test_call_mode_calls_once_everywhere():
    da = dap.DistArray.from_global(_data(), comm=comm, dist=("b", "n"))
    calls = []
    with np.errstate(over="call", call=lambda kind, flag: calls.append((kind, flag))):
        np.sum(da)
    ref = []
    with np.errstate(over="call", call=lambda kind, flag: ref.append((kind, flag))):
        np.sum(_data())
    collective_assert(calls == ref, f"NumPy called {ref}, nclx {calls}")


def test_warnings_as_errors_raise_everywhere():
    da = dap.DistArray.from_global(_data(), comm=comm, dist=("b", "n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            np.sum(da, axis=0)
            exc = None
        except Exception as e:  # noqa: BLE001 - checked below
            exc = e
    collective_assert(type(exc) is RuntimeWarning, f"raised {exc!r}")


def test_a_casts_flags_stay_with_the_cells():
    # NaN cast to an integer dtype= is the cell's (docs/dap.md): NumPy's
    # warning on the rank holding it (rank 0: the first rows), not elsewhere
    x = np.ones((6, 2))
    x[0, 0] = np.nan
    ref = _warned(lambda: np.sum(x, axis=None, dtype=np.int64))
    da = dap.DistArray.from_global(x, comm=comm, dist=("b", "n"))
    got = _warned(lambda: np.sum(da, axis=None, dtype=np.int64))
    want = ref[1] if comm.rank == 0 else []
    collective_assert(got[1] == want, f"NumPy warned {ref[1]}, nclx {got[1]}")


@pytest.mark.parametrize("call", [lambda da: np.sum(da, axis=0), lambda da: np.mean(da),
                                  lambda da: np.add.reduce(da, axis=None)],
                         ids=["sum", "mean", "add.reduce"])
def test_filters_differing_between_ranks_do_not_hang(call):
    da = dap.DistArray.from_global(_data(), comm=comm, dist=("b", "n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error" if comm.rank == comm.size - 1 else "ignore")
        try:
            call(da)
            exc = None
        except Exception as e:  # noqa: BLE001 - checked below
            exc = e
    last = comm.rank == comm.size - 1
    collective_assert(isinstance(exc, RuntimeWarning) if last else exc is None, repr(exc))
    # the ranks are in step: the next collective meets
    collective_assert(comm.allreduce(1) == comm.size, "out of step")


def test_threads_reducing_at_once_leave_the_warning_filters_alone():
    subs = [comm.Dup() for _ in range(2)]
    try:
        arrays = [dap.DistArray.from_global(_data(), comm=c, dist=("b", "n")) for c in subs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            before = list(warnings.filters)
            show = warnings.showwarning
            errors = []

            def work(da):
                try:
                    for _ in range(150):
                        np.sum(da, axis=0)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
            threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            ok = (not errors and warnings.filters == before and warnings.showwarning is show)
        collective_assert(ok, f"{errors} {len(warnings.filters)}")
    finally:
        for c in subs:
            c.Free()


def test_other_warnings_of_a_reduction_keep_their_registry():
    # a ComplexWarning of the local reduction (complex data, real dtype=),
    # three calls under the default filters: shown once per rank, as NumPy's
    x = np.arange(12.0).reshape(4, 3) * (1 + 1j)
    da = dap.DistArray.from_global(x, comm=comm, dist=("b", "n"))
    shown = []
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        old = warnings.showwarning
        warnings.showwarning = lambda *a, **k: shown.append(a[1])
        try:
            for _ in range(3):
                np.sum(da, axis=0, dtype=np.float64)
        finally:
            warnings.showwarning = old
    cws = [c for c in shown if issubclass(c, np.exceptions.ComplexWarning)]
    collective_assert(len(cws) == 1, f"{shown}")
