"""A rank whose ``from_distarray`` export is invalid, or whose
``DistArray.from_global`` array differs, makes every rank raise a DapError
instead of leaving the others waiting in a collective.

Runs the scenarios under ``mpiexec -n 2`` in a subprocess with a timeout, so
a regression fails this (single-process) test in about 30 s rather than
hanging it.  tests/mpi/test_dap_defects_mpi.py covers the same behaviour in
more detail under the multi-rank suite.
"""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import nclx

TIMEOUT_S = 30

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


def _mpiexec():
    path = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return path if os.path.exists(path) else shutil.which("mpiexec")


def test_invalid_export_or_different_array_on_one_rank_raises_on_both_ranks(tmp_path):
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    env = dict(os.environ)
    # the same nclx this process imported, first on the path
    root = os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.Popen([mpiexec, "-n", "2", sys.executable, str(script)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the ranks hung for {TIMEOUT_S} s (a rank raised while the other waited "
                    f"in a collective):\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    for r in (0, 1):
        log = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        assert log == [
            ("from_distarray DapError: from_distarray: rank 1 of 2 failed: |   rank 1: "
             "DapTypeError: dim_data[0]['size'] must be an integer, not str 'eight'"),
            ("from_global DapError: DistArray.from_global: the ranks disagree (every rank must "
             "pass the same): |   rank 0 passed an array of shape (8,) and dtype float64 ('<f8') "
             "|   rank 1 passed an array of shape (9,) and dtype float64 ('<f8')"),
            "done"], f"rank {r}: {log}\n{out[-3000:]}"
