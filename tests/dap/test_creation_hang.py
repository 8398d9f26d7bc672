"""A rank whose ``from_distarray`` export is invalid, or whose
``DistArray.from_global`` array differs, makes every rank raise a DapError
instead of leaving the others waiting in a collective.

Runs the scenarios under ``mpiexec -n 2`` in a subprocess with a timeout
(dap_helpers), so a regression fails this (single-process) test within a
minute rather than hanging it.  tests/mpi/test_creation_mpi.py covers the same behaviour in
more detail under the multi-rank suite.
"""
import sys
import textwrap

from dap_helpers import assert_raised_everywhere, mpiexec, run, run_ranks

SCENARIO = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    import nclx.dap as dap

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    log = open(f"rank{rank}.txt", "w", buffering=1)

    # defect 4: rank 1's export is invalid; rank 0's is fine
    export = dap.DistArray.from_global(np.arange(8.0), comm=comm).__distarray__()
    if rank == 1:
        export = dict(export, dim_data=(dict(export["dim_data"][0], size="eight"),))
    try:
        dap.from_distarray(export, comm=comm)
    except dap.DapError as exc:
        print("from_distarray DapError:", " | ".join(str(exc).splitlines()), file=log)

    # defect 3: rank 1 passes a longer array
    try:
        dap.DistArray.from_global(np.arange(8.0 + rank), comm=comm)
    except dap.DapError as exc:
        print("from_global DapError:", " | ".join(str(exc).splitlines()), file=log)
    comm.Barrier()
    print("done", file=log)
""")


def test_invalid_export_or_different_array_on_one_rank_raises_on_both_ranks(tmp_path):
    launcher = mpiexec()
    assert launcher, "mpiexec not found: tools/test installs it (pip install mpich)"
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    rc, out = run([launcher, "-n", "2", sys.executable, str(script)], tmp_path)
    assert rc == 0, out[-3000:]
    for r in (0, 1):
        log = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        assert log == [
            ("from_distarray DapError: from_distarray: rank 1 of 2 failed: |   rank 1: "
             "DapTypeError: dim_data[0]['size'] must be an integer, not str 'eight'"),
            ("from_global DapError: DistArray.from_global: the ranks disagree (every rank must "
             "pass the same): |   rank 0 passed an array of shape (8,) and dtype float64 ('<f8') "
             "|   rank 1 passed an array of shape (9,) and dtype float64 ('<f8')"),
            "done"], f"rank {r}: {log}\n{out[-3000:]}"


def test_from_distarray_with_different_dtypes_on_the_ranks(tmp_path):
    """Was a defect: from_distarray exchanged and checked only the dim_data, not the
    dtype (from_global checks both): a float32 block on rank 0 and float64
    blocks elsewhere make a DistArray whose sum() fails with 'Message
    truncated' on rank 0 and leaves the others waiting."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm, padding=[1],
                                         periodic=[True])
        buf = base._block.astype(np.float32 if rank == 0 else np.float64)
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = step(lambda: dap.from_distarray(export, comm=comm))
        if a is not None:
            step(lambda: float(a.sum()))
    """)
    assert_raised_everywhere(steps, ended, report, types=("DapError",))
