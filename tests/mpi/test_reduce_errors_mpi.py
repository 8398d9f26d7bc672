"""An error in a reduction on some ranks is raised on every rank, carried by
the reduction's one collective (nclx.dap.fold): the failing ranks raise
their own exception, the others a DapError naming the failing ranks and the
lowest one's error; an error while combining the partial results (overflow
under np.errstate) is raised on every rank with its type.  Axis reductions
on 2-D grids (data over the reduced grid axis, verdict over all) too."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
import nclx.hooks as hooks
from mpi_helpers import N, collective_assert, rank
from nclx.dap.distribution import dims_create

comm = MPI.COMM_WORLD


def outcome(fn, *args, **kw):
    """('ok', value) or ('exc', 'Type: whole message')."""
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


def _check(kind, got, failing, local_type):
    """Failing ranks: their own error; the others: a DapError naming them."""
    if rank in failing:
        return kind == "exc" and got.startswith(local_type), f"{kind} {got}"
    if len(failing) == 1:
        want = f"rank {failing[0]} of {N} failed"
    else:
        want = f"{len(failing)} of {N} ranks failed"
    return kind == "exc" and got.startswith("DapError") and want in got, f"{kind} {got}"


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_hook_raising_on_the_last_rank(axis):
    g = np.arange(6.0 * N * 3).reshape(6 * N, 3)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=dims_create(N, 2))

    def flaky(call):
        if rank == N - 1:
            raise RuntimeError("hook failed on the last rank")
        return call.next()

    with hooks.register("python", "reduce", flaky):
        kind, got = outcome(a.sum, axis=axis)
    ok, msg = _check(kind, got, [N - 1], "RuntimeError: hook failed")
    collective_assert(ok, msg)
    # the next reduction is unaffected
    collective_assert(np.array_equal(np.asarray(a.sum()), g.sum()), "sum after the failure")


@pytest.mark.parametrize("grid", sorted({dims_create(N, 2), (N, 1), (1, N)}), ids=str)
def test_floating_point_error_on_some_ranks(grid):
    """inf - inf in the blocks of ranks 0 and N-1 under errstate(invalid='raise'):
    every rank raises NumPy's FloatingPointError for the whole array (the
    flag travels in the reduction's collective: nclx.dap.reduceflags;
    before, those two raised it and the others a DapError naming them)."""
    g = np.ones((4 * grid[0], 3 * grid[1]))
    g[0, 0], g[0, 1] = np.inf, -np.inf               # rank 0's block
    g[-1, -1], g[-1, -2] = np.inf, -np.inf           # rank N-1's block
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid)
    failing = sorted({0, N - 1})
    for axis in (None, 0, 1):
        with np.errstate(invalid="raise"):
            kind, got = outcome(a.sum, axis=axis)
        # along an axis of one cell per rank column nothing mixes inf and -inf
        # within a block when that axis is not the reduced one
        expect = axis is None or (axis == 1)
        if not expect:
            continue
        collective_assert(kind == "exc" and
                          got == "FloatingPointError: invalid value encountered in reduce",
                          f"axis={axis}: {kind} {got}")


def test_overflow_while_combining_is_raised_everywhere_with_its_type():
    """Each rank's partial sum is finite, their total is not (NumPy on the
    global array raises FloatingPointError under errstate(over='raise'))."""
    a = dap.DistArray.from_global(np.full(N, 1.0e308) if N > 1 else np.array([1e308, 1e308]),
                                  comm=comm)
    with np.errstate(over="raise"):
        kind, got = outcome(a.sum)
    collective_assert(kind == "exc" and got.startswith("FloatingPointError") and
                      "overflow" in got, f"{kind} {got}")
    with np.errstate(over="ignore"):
        collective_assert(np.isinf(a.sum()), "sum without errstate")
    # warned on every rank as NumPy warns for the global array
    import warnings
    with warnings.catch_warnings(record=True) as rec, np.errstate(over="warn"):
        warnings.simplefilter("always")
        r = a.sum()
    texts = sorted({str(w.message) for w in rec})
    collective_assert(np.isinf(r) and texts == ["overflow encountered in reduce"], f"{texts}")


def test_numpy_refusing_the_arguments_on_ranks_with_cells():
    """max(where=...) without initial: NumPy refuses on the ranks with cells;
    an empty rank does not call NumPy but hears of it."""
    a = dap.DistArray.from_global(np.array([1.0, 2.0]), comm=comm)    # empty from rank 2 on
    kind, got = outcome(a.max, where=a > 1)
    collective_assert(kind == "exc" and ("ValueError" in got or "DapError" in got), got)


def test_argmin_error_on_one_rank_is_raised_everywhere(monkeypatch):
    """argmin's candidates fail on the last rank: its error reaches every
    rank through argmin's one collective."""
    import nclx.dap.functions.argext as argext
    a = dap.DistArray.from_global(np.arange(5.0 * N), comm=comm)
    real = argext._candidates

    def flaky(*args):
        if rank == N - 1:
            raise RuntimeError("candidates failed on the last rank")
        return real(*args)

    monkeypatch.setattr(argext, "_candidates", flaky)
    kind, got = outcome(np.argmin, a)
    ok, msg = _check(kind, got, [N - 1], "RuntimeError: candidates failed")
    collective_assert(ok and (rank == N - 1 or got.startswith("DapError[RuntimeError]: np.argmin:")), msg)


def test_ranks_making_different_calls_raise_instead_of_a_wrong_value():
    """Ranks that reduce with different ufuncs, or different dtypes of one
    size, exchange records of the same size: each record carries the call's
    key, and every rank raises a DapError instead of combining a sum on some
    ranks with a product on others."""
    g = np.arange(1.0, 4.0 * N + 1.0)
    a = dap.DistArray.from_global(g, comm=comm)
    for tag, f in [("add/multiply", lambda: (np.add if rank % 2 == 0 else np.multiply).reduce(
                        a, axis=None)),
                   ("dtype f8/i8", lambda: a.sum(dtype=np.float64 if rank % 2 == 0 else
                                                  np.int64))]:
        kind, got = outcome(f)
        if N == 1:
            ok = kind == "ok"
        else:
            ok = kind == "exc" and got.startswith("DapError") and "different calls" in got
        collective_assert(ok, f"{tag}: {kind} {got}")
    collective_assert(a.sum() == g.sum(), "the next reduction")
