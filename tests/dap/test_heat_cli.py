"""``python -m nclx.examples.heat`` under mpiexec prints per-step times and,
last, the checksum, which equals the serial run's sum; bad options are
usage errors that name the option."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dap_helpers import run
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


def _heat(tmp_path, nranks, *args):
    mpiexec = _mpiexec()
    assert mpiexec, "mpiexec not found: tools/test installs it (pip install mpich)"
    return run([mpiexec, "-n", str(nranks), sys.executable, "-m", "nclx.examples.heat",
                *args], tmp_path)


def test_heat_zero_steps_prints_the_initial_checksum(tmp_path):
    rc, out = _heat(tmp_path, 3, "--n", "5", "--steps", "0")
    assert rc == 0, out[-3000:]
    lines = out.strip().splitlines()
    assert lines[-1].startswith("checksum "), out
    assert not any(ln.startswith("step ") for ln in lines), out
    assert float(lines[-1].split()[1]) == serial(5, 0).sum()


def test_heat_negative_steps_is_a_usage_error(tmp_path):
    """Was a defect: --steps -3 ran zero steps and printed a checksum (exit 0)."""
    rc, out = _heat(tmp_path, 2, "--n", "8", "--steps", "-3")
    assert rc != 0 and "--steps" in out, out[-3000:]


def test_heat_more_ranks_than_rows_names_the_option(tmp_path):
    """Was a defect: --n 4 on 5 ranks (a 5 x 1 grid: one rank gets no row) died in
    every rank with a traceback of Distribution.from_shape's DapError
    ('padding[0] = 1 is wider than the smallest block (0 elements)'),
    which named neither --n nor the rank count (--n 2 names --n)."""
    rc, out = _heat(tmp_path, 5, "--n", "4", "--steps", "2")
    assert rc != 0, out[-3000:]
    assert "--n 4" in out, out[-3000:]
