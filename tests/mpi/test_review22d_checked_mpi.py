"""Review 22 (where features meet): ``nclx.checked()`` around a DistArray's
elementwise integer call whose cells wrap on one rank only.  The rank whose
cells wrapped raised OverflowError; the others took the agreed overflow
flag for a float overflow: a RuntimeWarning (or under ``over="raise"`` a
FloatingPointError) and they went on, out of step with the first (the next
collective: "different calls", or a hang in the user's own).  The agreed
flags now carry "a rank's cells wrapped inside checked()", and every rank
raises an OverflowError (the others a DapError[OverflowError] naming it).
Failed before at 2 and 3 ranks; at 1 rank the one rank wraps and raises."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx
import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, within

CALLS = {
    "multiply": lambda a: a * 4,
    "square": lambda a: np.square(a),
    "left_shift": lambda a: a << 2,
    "add": lambda a: a + 2**62,
}


@pytest.mark.parametrize("mode", ["warn", "raise", "error-filter"])
@pytest.mark.parametrize("what", sorted(CALLS))
def test_one_ranks_wrap_raises_on_every_rank(what, mode):
    comm = MPI.COMM_WORLD.Dup()
    try:
        g = np.zeros(4 * N, dtype=np.int64)
        g[-1] = 2**62                       # only the last rank's block wraps
        a = dap.DistArray.from_global(g, comm=comm)

        def body():
            with warnings.catch_warnings():
                warnings.simplefilter("error" if mode == "error-filter" else "default")
                try:
                    with np.errstate(**({"over": "raise"} if mode == "raise" else {})), \
                            nclx.checked():
                        CALLS[what](a)
                    got = "no error"
                except OverflowError as exc:
                    got = f"OverflowError {type(exc).__name__}: {exc}"
                except Exception as exc:  # noqa: BLE001 - compared collectively
                    got = f"{type(exc).__name__}: {exc}"
            return got, float(np.max(a))     # the ranks are in step after it
        kind, res = within(body)
        collective_assert(kind == "ok", f"{kind}: {res}")
        got, after = res
        collective_assert(got.startswith("OverflowError"), got)
        if rank == N - 1:
            collective_assert(" in " in got and "wrapped" in got or "bits lost" in got, got)
        else:
            collective_assert("another rank" in got, got)
        collective_assert(after == float(2**62), after)
    finally:
        comm.Free()


def test_no_wrap_no_error():
    a = dap.DistArray.from_global(np.arange(4 * N, dtype=np.int64), comm=MPI.COMM_WORLD)
    with nclx.checked():
        got = (a * 4).gather(root=None)
    collective_assert(got.tolist() == (np.arange(4 * N) * 4).tolist(), got)
