"""The MPI benchmarks' own checks, run small under mpiexec -n 1..6
(tests/test_mpi_suite.py): what a benchmark compares must be the same move
on every rank count, or its ratio means nothing.

- bench_redistribute: nclx's result and the hand-written Alltoallw's have
  the same bytes in every case (before: at 2, 3 and 5 ranks ``da.T`` was a
  view with the other axis distributed while the reference moved to the
  default layout, and the benchmark printed "same bytes: False");
- bench_windows: the windowed move and the one-window move give the same
  bytes, also with windows of a few elements.
"""
import numpy as np
import pytest

from mpi_helpers import collective_assert, comm
from nclx.dap import bench_redistribute, bench_windows, movewindows


@pytest.mark.parametrize("n", [12, 25])
def test_redistribute_bench_compares_the_same_move(n):
    res = bench_redistribute.measure(comm, n, 1)
    collective_assert(set(res) == set(bench_redistribute.CASES), f"cases: {sorted(res)}")
    bad = sorted(case for case, r in res.items() if not r["same_bytes"])
    collective_assert(not bad, f"{n} x {n} on {comm.size} ranks: nclx and the reference differ "
                               f"in {bad}")
    collective_assert(all(np.isfinite(r["ratio"]) and r["ratio"] > 0 for r in res.values()),
                      f"ratios {[r['ratio'] for r in res.values()]}")


def test_redistribute_bench_transpose_is_the_default_layout_of_the_transpose():
    da = bench_redistribute.filled(comm, 9)
    t = bench_redistribute._nclx(da, "transpose")
    want = bench_redistribute.DistArray.from_shape((9, 9), comm=comm).distribution
    collective_assert(t.distribution.dim_data(comm.rank) == want.dim_data(comm.rank),
                      f"transpose layout {t.distribution.dim_data(comm.rank)}")
    g = np.arange(81.0).reshape(9, 9).T
    i0, i1 = (m.global_indices() for m in t.distribution.maps(comm.rank))
    collective_assert(t._block.tobytes() == np.ascontiguousarray(g[np.ix_(i0, i1)]).tobytes(),
                      "transpose values")


def test_windows_bench_windowed_and_one_window_agree(monkeypatch):
    monkeypatch.setattr(movewindows, "FLOOR", 256)     # windows of a few elements
    monkeypatch.setattr(movewindows, "FRACTION", 0.0)
    res = bench_windows.measure(comm, 600, 1)
    collective_assert(set(res) == set(bench_windows.CASES), f"cases: {sorted(res)}")
    bad = sorted(case for case, r in res.items() if not r["same_bytes"])
    collective_assert(not bad, f"windowed and one-window moves differ in {bad}")
    collective_assert(all(r["windows"] >= 1 for r in res.values()),
                      f"windows {[r['windows'] for r in res.values()]}")
