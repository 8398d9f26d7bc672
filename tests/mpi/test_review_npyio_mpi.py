"""Hostile .npy input for nclx.dap.load_npy (review of issue 25): headers
that lie about their shape, and a path only some ranks can open.  Every
rank raises the same clear error; none reads a lying file."""
import os

import pytest

import nclx.dap as dap
from mpi_helpers import collective_assert, comm, outcome, rank, shared_tmpdir
from nclx.dap import DapError


@pytest.fixture(scope="module")
def tmp():
    """A directory every rank sees."""
    yield from shared_tmpdir("nclx-review-npy-")


def _npy(text, data):
    """A format 1.0 .npy file with header dict ``text`` and ``data`` bytes."""
    body = text.encode("latin1")
    pad = 64 - (10 + len(body) + 1) % 64
    return (b"\x93NUMPY\x01\x00" + (len(body) + pad + 1).to_bytes(2, "little") + body
            + b" " * pad + b"\n" + data)


def _write(tmp, name, content):
    path = os.path.join(tmp, name)
    if rank == 0:
        with open(path, "wb") as f:
            f.write(content)
    comm.Barrier()
    return path


@pytest.mark.parametrize("name, shape, words", [
    ("bool", "(True, 2)", "not a tuple of integers"),      # np.load refuses a bool extent
    ("wrap", "(4294967296, 4294967296)", "truncated"),     # 2**64 elements: no int64 wrap to 0
])
def test_lying_shape_is_refused_everywhere(tmp, name, shape, words):
    path = _write(tmp, f"lie_{name}.npy",
                  _npy("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % shape,
                       b"\0" * 64))
    got = outcome(dap.load_npy, path, comm=comm)
    collective_assert(got[0] == "exc" and got[1].startswith("DapError") and words in got[1],
                      f"{shape}: {got}")
    everyone = comm.allgather(got)
    collective_assert(all(g == everyone[0] for g in everyone), f"differs: {everyone}")


def test_missing_file_on_rank_0_names_rank_0s_path(tmp):
    good = _write(tmp, "good.npy", _npy("{'descr': '<f8', 'fortran_order': False, "
                                        "'shape': (3,), }", b"\0" * 24))
    missing = os.path.join(tmp, "missing.npy")
    with pytest.raises(OSError) as info:
        dap.load_npy(missing if rank == 0 else good, comm=comm)
    # every rank names the file that could not be opened, not its own (existing) one
    collective_assert("missing.npy" in str(info.value) and "rank 0" in str(info.value)
                      and info.value.filename == missing, str(info.value))


def test_ranks_passing_different_layouts_raise_everywhere(tmp):
    # rank 0 asked for block rows, the others for cyclic rows: each read its
    # own layout and the DistArray was inconsistent (gather differed by rank)
    n = 2 * comm.Get_size()
    path = _write(tmp, "layouts.npy", _npy("{'descr': '<f8', 'fortran_order': False, "
                                           "'shape': (%d, 2), }" % n, b"\0" * (16 * n)))
    if comm.Get_size() == 1:
        got = outcome(dap.load_npy, path, dist=("c", "n"), comm=comm)
        collective_assert(got[0] == "ok", repr(got))
        return
    try:
        dap.load_npy(path, dist=("b", "n") if rank == 0 else ("c", "n"), comm=comm)
        got = "no error"
    except Exception as exc:  # noqa: BLE001 - checked on every rank below
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got.startswith("DapError") and "disagree on the Distribution" in got, got)
