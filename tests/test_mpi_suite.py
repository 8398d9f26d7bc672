"""Runs tests/mpi under ``mpiexec -n 4`` (MPI from the mpich wheel)."""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_multi_rank_suite_passes_under_mpiexec_with_4_ranks():
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        mpiexec = shutil.which("mpiexec")
    assert mpiexec, "mpiexec not found: tools/test installs it (pip install mpich)"
    proc = subprocess.run(
        [mpiexec, "-n", "4", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         os.path.join(HERE, "mpi")],
        capture_output=True, text=True, timeout=600, cwd=HERE)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    passed = [int(n) for n in re.findall(r"(\d+) passed", out)]
    assert len(passed) == 4 and min(passed) >= 10, out[-2000:]
