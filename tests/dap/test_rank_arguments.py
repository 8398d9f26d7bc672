"""Ranks that pass different arguments to the same NumPy function (or call
different functions) on DistArrays: every rank raises a DapError, within
the watchdog, and the ranks stay usable afterwards.

Before: a reduction whose record size differed by rank aborted the MPI job
("Message truncated"); roll, flip, reshape, stack, concatenate and axis
reductions with per-rank arguments hung; var with a per-rank ddof, max with
a per-rank initial, clip with per-rank bounds gave silently different
results per rank.  Each scenario runs under ``mpiexec -n 4`` in a
subprocess with a watchdog (dap_helpers)."""
import pytest

from dap_helpers import assert_calls_raise_then_in_step

SCENARIOS = {
    "sum dtype": "a.sum(dtype=np.float32 if rank == 0 else None)",
    "np.sum axis": "np.sum(m, axis=rank % 2)",
    "sum axis on a 2 x 2 grid": "q.sum(axis=rank % 2)",
    "large axis sum against a full sum": "w.sum(axis=0) if rank else w.sum()",
    "np.std axis": "np.std(m, axis=rank % 2)",
    "np.var ddof": "np.var(a, ddof=rank)",
    "np.max initial": "np.max(a, initial=float(rank))",
    "np.roll": "np.roll(a, rank)",
    "np.flip": "np.flip(m, axis=rank % 2)",
    "np.reshape": "np.reshape(m, (-1, 2) if rank else (2, -1))",
    "np.stack": "np.stack([a, a], axis=rank % 2)",
    "np.concatenate": "np.concatenate([m, m], axis=rank % 2)",
    "np.clip": "np.clip(a, 0.0, float(rank))",
    "different functions": "np.sum(a) if rank == 0 else np.flip(a)",
    "reduction against a redistribution": "np.max(a) if rank == 0 else a.redistribute('c')",
}


@pytest.mark.parametrize("group", [list(SCENARIOS)[:8], list(SCENARIOS)[8:]])
def test_ranks_calling_differently_raise_everywhere(tmp_path, group):
    setup = """
        a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
        m = dap.DistArray.from_global(np.arange(24.0 * N).reshape(4 * N, 6), comm=comm)
        q = dap.DistArray.from_global(np.arange(64.0).reshape(8, 8), comm=comm,
                                      grid_shape=(2, N // 2))
        w = dap.DistArray.from_global(np.ones((8, 1000)), comm=comm, grid_shape=(N, 1))
    """
    # the ranks are still in step afterwards: the same call everywhere works
    assert_calls_raise_then_in_step(tmp_path, 4, setup, [SCENARIOS[n] for n in group],
                                    "float(np.sum(a))", float(sum(range(32))))
