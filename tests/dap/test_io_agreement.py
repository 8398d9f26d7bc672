"""Ranks that call ``save_npy``, ``load_npy`` or ``DistArray.from_global``
while others call another operation, or pass ``from_global`` different
distributions: every rank raises a DapError within the watchdog, and the
ranks stay in step afterwards.

Before: these began with an allgather or a broadcast of their own, so a
rank in one of them and a rank in a reduction (an Allreduce) waited in
different collectives for ever; ``from_global`` agreed only on the shape
and dtype, so ranks passing different ``dist`` built inconsistent
DistArrays silently.  Each scenario runs under ``mpiexec -n 4`` in a
subprocess with a watchdog (dap_helpers)."""
import pytest

from dap_helpers import assert_calls_raise_then_in_step

SCENARIOS = {
    "save against a reduction": "a.save_npy(path) if rank == 0 else float(np.sum(a))",
    "load against a reduction": "dap.load_npy(path, comm=comm) if rank == 0 else np.max(a)",
    "load against save": "dap.load_npy(path, comm=comm) if rank == 0 else a.save_npy(path)",
    "from_global against a reduction":
        "dap.DistArray.from_global(np.arange(4.0 * N), comm=comm) if rank == 0 else np.sum(a)",
    "from_global root against every rank":
        "dap.DistArray.from_global(np.arange(4.0 * N), comm=comm, root=0 if rank else None)",
    "from_global with per-rank dist":
        "dap.DistArray.from_global(np.arange(8.0 * N), dist='c' if rank else 'b', comm=comm)",
}


@pytest.mark.parametrize("group", [list(SCENARIOS)[:3], list(SCENARIOS)[3:]])
def test_io_and_from_global_called_differently_raise_everywhere(tmp_path, group):
    setup = """
        a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
        path = comm.bcast(os.path.abspath("x.npy") if rank == 0 else None)
        a.save_npy(path)
    """
    assert_calls_raise_then_in_step(tmp_path, 4, setup, [SCENARIOS[n] for n in group],
                                    "float(np.sum(a))", float(sum(range(32))))
