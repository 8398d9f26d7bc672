"""Review 22, the follow-up attack on its fixes: a reduction's ``initial=``
given as ``0`` on some ranks and ``0.0`` on others (``np.float64(0)``, a
0-d array) is one call -- NumPy casts it to the reduction's dtype -- but the
agreement keyed on its repr: a DapError "the ranks made different calls" on
every rank.  The key now holds the value cast as the reduction casts it
(failed before at 2 and 3 ranks; at 1 rank the forms cannot differ)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, rank

comm = MPI.COMM_WORLD


@pytest.mark.parametrize("fn, g, forms", [
    (np.sum, np.arange(8.0), (0, 0.0, np.float64(0), np.array(0), np.int8(0))),
    (np.sum, np.arange(8), (0, np.int64(0), 0.4, np.array(0.0))),    # int: 0.4 is cast to 0
    (np.max, np.arange(8.0), (-np.inf, np.float32(-np.inf), float("-inf"))),
    (np.prod, np.arange(1.0, 6.0), (1, 1.0, np.float16(1))),
], ids=["sum-float", "sum-int", "max", "prod"])
@pytest.mark.parametrize("axis", [None, 0])
def test_initial_in_other_spellings_is_one_call(fn, g, forms, axis):
    a = dap.DistArray.from_global(g, comm=comm)
    mine = forms[rank % len(forms)]
    want = fn(g, initial=forms[0], axis=axis)
    try:
        got = fn(a, initial=mine, axis=axis)
        got = got.gather(root=None) if isinstance(got, dap.DistArray) else np.asarray(got)
        result = ("ok", got.tobytes() == np.asarray(want).tobytes(), str(got))
    except Exception as exc:  # noqa: BLE001 - compared collectively
        result = ("raised", False, f"{type(exc).__name__}: {exc}")
    collective_assert(result[0] == "ok" and result[1], result)


def test_different_initial_values_are_still_refused():
    a = dap.DistArray.from_global(np.arange(8.0), comm=comm)
    try:
        np.sum(a, initial=float(rank))       # 0.0 and 1.0: another call
        got = "ok"
    except dap.DapError as exc:
        got = f"DapError: {exc}"
    if comm.Get_size() == 1:
        collective_assert(got == "ok", got)
    else:
        collective_assert(got.startswith("DapError") and "different calls" in got, got)
