"""Runs tests/mpi under ``mpiexec -n 1, 2, 3, 4, 5, 6`` (MPI from the mpich
wheel; oversubscribed on small machines).  Each rank must report its own
pytest summary; a hang ends at the timeout instead of blocking the suite."""
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
#: seconds one rank count may take: in a CI run beside other work, 5 ranks
#: oversubscribed on 2 cores took 389 s and 6 ranks passed 480 s (killed at
#: 94%, not a hang); a hang still ends here
TIMEOUT = 720


def _mpiexec():
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        mpiexec = shutil.which("mpiexec")
    assert mpiexec, "mpiexec not found: tools/test installs it (pip install mpich)"
    return mpiexec


@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 5, 6])
def test_multi_rank_suite_passes_under_mpiexec(nranks):
    # a session of its own: on a timeout the whole group (mpiexec, hydra, ranks) is killed
    proc = subprocess.Popen(
        [_mpiexec(), "-n", str(nranks), sys.executable, "-m", "pytest", "-q",
         "-p", "no:cacheprovider", os.path.join(HERE, "mpi")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE,
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec -n {nranks} did not finish in {TIMEOUT} s:\n{out[-4000:]}")
    assert proc.returncode == 0, out[-4000:]
    passed = [int(n) for n in re.findall(r"(\d+) passed", out)]
    assert len(passed) == nranks and min(passed) >= 50, out[-2000:]
