"""Review 23 (nclx.dap):

- a reduction whose ranks passed different arguments raised "the ranks made
  different calls (the operation, axis, dtype, keepdims, initial or the
  array's layout differ between ranks)" on every rank: it did not say which.
  The DapError now names the differing argument and each rank's value
  (nclx.dap.keydiff; one more Allgather on that error path only).
- warnings of DistArray ufuncs and reductions named a line of nclx (the
  default filter then showed the first of a message only): they name the
  caller's line, on every rank (nclx._callsite).
At 1 rank nothing can differ: the calls must succeed there."""
import sys
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, error_of, rank

comm = MPI.COMM_WORLD
G = np.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize("call, field, values", [
    (lambda a: np.sum(a, axis=rank % 2), "axis", ("(0,)", "(1,)")),
    (lambda a: np.sum(a, keepdims=rank % 2 == 1), "keepdims", ("False", "True")),
    (lambda a: np.sum(a, axis=0, dtype=np.float32 if rank % 2 else np.float64), "dtype",
     ("float64", "float32")),
    (lambda a: (np.mean if rank % 2 else np.sum)(a, axis=0), "called by", ()),
], ids=["axis", "keepdims", "dtype", "caller"])
def test_mismatch_names_the_argument_and_values(call, field, values):
    a = dap.DistArray.from_global(G, comm=comm)
    kind, msg = error_of(lambda: call(a))
    if comm.size == 1:
        collective_assert(kind == "ok", f"{kind}: {msg}")
        return
    ok = kind == "DapError" and "the ranks made different calls" in msg and \
        f"{field}: " in msg and all(v in msg for v in values) and "on rank 1" in msg
    collective_assert(ok, f"{kind}: {msg}")
    everyone = comm.allgather(msg)
    collective_assert(all(m == everyone[0] for m in everyone), f"messages differ: {everyone}")


def test_warnings_name_the_callers_line_on_every_rank():
    a = dap.DistArray.from_global(np.ones(2 * comm.size), comm=comm)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")
        first = sys._getframe().f_lineno + 1
        a / 0
        a / 0
        np.add.reduce(a * 1e308)
    got = [(r.filename, r.lineno - first, str(r.message)) for r in w]
    want = [(__file__, 0, "divide by zero encountered in divide"),
            (__file__, 1, "divide by zero encountered in divide"),
            (__file__, 2, "overflow encountered in reduce")]
    collective_assert(got == want, f"{got}")
