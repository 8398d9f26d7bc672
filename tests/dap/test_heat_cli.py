"""``python -m nclx.examples.heat`` under mpiexec prints per-step times and,
last, the checksum, which equals the serial run's sum."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from nclx.examples.heat import serial


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


@pytest.mark.parametrize("periodic", [False, True])
def test_cli_on_two_ranks(periodic, tmp_path):
    mpiexec = _mpiexec()
    assert mpiexec, "mpiexec not found: tools/test installs it (pip install mpich)"
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "nclx.examples.heat", "--n", "24",
           "--steps", "6"] + (["--periodic"] if periodic else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines[:6]] == [f"step {k}/6" for k in range(1, 7)]
    assert lines[-1].startswith("checksum ")
    value = float(lines[-1].split()[1])
    assert np.isclose(value, serial(24, 6, periodic).sum(), rtol=1e-12, atol=1e-12)


def test_bad_size_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nclx.examples.heat", "--n", "2"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode != 0 and "--n 2" in proc.stderr
