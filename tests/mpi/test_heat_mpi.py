"""The heat example on every rank count equals the serial NumPy run of the
same definition to 1e-12 (fixed edges and periodic)."""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_helpers import collective_assert, outcome
from nclx.dap.distribution import dims_create
from nclx.examples.heat import run, serial

comm = MPI.COMM_WORLD
rank = comm.rank


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("n,steps", [(3, 2), (17, 9), (40, 25)])
def test_distributed_field_equals_serial(n, steps, periodic):
    if n < max(dims_create(comm.size, 2)):        # 5 ranks: a 5 x 1 grid, n = 3
        with pytest.raises(ValueError, match="leaves some rank without a row or column"):
            run(n, steps, periodic, comm, report=None)
        return
    u, times = run(n, steps, periodic, comm, report=None)
    assert len(times) == steps
    full = u.gather(root=0)
    ok, msg = True, None
    if comm.rank == 0:
        want = serial(n, steps, periodic)
        err = float(np.max(np.abs(full - want)))
        ok, msg = full.tobytes() == want.tobytes(), f"not bit-identical (max error {err})"
    ok, msg = comm.bcast((ok, msg), root=0)
    assert ok, msg
    total = u.sum()
    assert comm.allgather(float(total)) == [float(total)] * comm.size


@pytest.mark.parametrize("n,steps,periodic", [(3, 0, False), (4, 3, False), (4, 2, True),
                                              (5, 0, True)])
def test_heat_with_fewer_cells_than_ranks_and_zero_steps(n, steps, periodic):
    kind, value = outcome(run, n, steps, periodic, comm, report=None)
    if n < max(dims_create(comm.size, 2)):
        # a grid dimension longer than the field (5 ranks: 5 x 1) would leave a
        # rank without a row: every rank refuses alike, naming the remedy
        collective_assert(kind == "exc" and "leaves some rank without a row or column" in value
                          and f"use --n >= {max(dims_create(comm.size, 2))}" in value,
                          f"run({n}, {steps}) on {comm.size} ranks gave {kind}: {value}")
        return
    if kind == "exc":
        collective_assert(False, f"run({n}, {steps}): {value}")
    u, times = value
    full = u.gather(root=0)
    ok, msg = len(times) == steps, f"{len(times)} step times"
    if rank == 0 and ok:
        want = serial(n, steps, periodic)
        err = float(np.max(np.abs(full - want)))
        ok, msg = err <= 1e-12, f"max error {err}"
    ok, msg = comm.bcast((ok, msg), root=0)
    collective_assert(ok, msg)


@pytest.mark.parametrize("cells", [1, 7, 40, 16384])
def test_row_blocked_update_equals_the_one_expression_form(cells):
    """The example's row-blocked update (any block height, ragged last
    block) gives the bits of 0.25 * (N + S + W + E) written at once."""
    from nclx.examples.heat import update
    x = np.random.default_rng(cells).standard_normal((23, 31))
    a0, b0, a1, b1 = 1, 22, 1, 30
    want = x.copy()
    want[a0:b0, a1:b1] = 0.25 * (x[a0 - 1:b0 - 1, a1:b1] + x[a0 + 1:b0 + 1, a1:b1]
                                 + x[a0:b0, a1 - 1:b1 - 1] + x[a0:b0, a1 + 1:b1 + 1])
    y = x.copy()
    rows = max(1, min(b0 - a0, cells // (b1 - a1)))
    update(x, y, (a0, b0, a1, b1), np.empty((rows, b1 - a1)))
    assert y.tobytes() == want.tobytes()
