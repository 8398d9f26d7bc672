"""Hostile arguments to DistArray.gather (review of issue 25)."""
import numpy as np
import pytest

from mpi_helpers import collective_assert, comm
from nclx.dap import DistArray


@pytest.mark.parametrize("root", [True, False, np.True_])
def test_gather_refuses_a_bool_root_everywhere(root):
    # a bool is no rank: from_global(root=True) refuses it, so must gather
    # (it gathered onto rank 1, or rank 0, silently)
    da = DistArray.from_global(np.arange(12.0).reshape(6, 2), comm=comm)
    try:
        da.gather(root=root)
        got = "no error"
    except Exception as exc:  # noqa: BLE001 - checked on every rank below
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got.startswith("DapError") and "root must be a rank" in got, got)
