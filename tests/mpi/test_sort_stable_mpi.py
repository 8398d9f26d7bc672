"""A stable np.sort of a DistArray (``kind='stable'``, ``'mergesort'``,
``stable=True``) keeps equal keys of different bits (``0.0`` and ``-0.0``,
NaNs of other payloads) in their global order along cyclic, block-cyclic
and 'u' axes and with ``axis=None``, as NumPy's stable sort does.  Before,
the sample sort kept them in the order the ranks held them (found by
review: a block-cyclic ``[..., 0.0, ..., -0.0, ...]`` came back ``-0., 0.``)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert
from nclx.dap.distribution import Distribution

comm = MPI.COMM_WORLD


def _values(n, seed):
    """Both zeros, NaNs of two payloads, duplicates."""
    rng = np.random.default_rng(seed)
    nan2 = np.array([0x7FF8000000000123], np.uint64).view(np.float64)[0]
    pool = np.array([0.0, -0.0, np.nan, nan2, 1.0, -1.0, 2.0])
    return rng.choice(pool, n)


def _u(n):
    perm = np.random.default_rng(7).permutation(n)
    dims = [{"dist_type": "u", "size": n, "indices": np.sort(perm[r::N])[::-1].copy(),
             "proc_grid_size": N, "proc_grid_rank": r} for r in range(N)]
    return Distribution.from_dim_data_per_rank([(d,) for d in dims])


LAYOUTS = {
    "cyclic": lambda g: dap.DistArray.from_global(g, comm=comm, dist="c"),
    "block-cyclic 2": lambda g: dap.DistArray.from_global(g, comm=comm, dist="c",
                                                         block_size=[2]),
    "block": lambda g: dap.DistArray.from_global(g, comm=comm, dist="b"),
    "u": lambda g: dap.DistArray.from_global(g, _u(g.size), comm=comm),
}


@pytest.mark.parametrize("how", [{"kind": "stable"}, {"kind": "mergesort"}, {"stable": True}],
                         ids=["stable", "mergesort", "stable=True"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("n", [10, 37, 200])
def test_stable_sort_keeps_equal_keys_in_global_order(layout, n, how):
    wrong = []
    for seed in range(4):
        g = _values(n, seed)
        a = LAYOUTS[layout](g)
        want = np.sort(g, **how)
        got = np.sort(a, **how).gather(root=None)
        if got.tobytes() != want.tobytes():
            wrong.append(f"seed {seed}: {got.view(np.uint64)} != {want.view(np.uint64)}")
        flat = np.sort(a, axis=None, **how).gather(root=None)
        if flat.tobytes() != want.tobytes():
            wrong.append(f"axis=None seed {seed}")
    collective_assert(not wrong, "; ".join(wrong[:3]))


@pytest.mark.parametrize("grid", [(N, 1), (1, N)] if N > 1 else [(1, 1)], ids=str)
def test_stable_sort_of_a_2d_array_along_and_across(grid):
    g = _values(8 * 9, 3).reshape(8, 9)
    a = dap.DistArray.from_global(g, comm=comm, dist=("c", "c"), grid_shape=grid)
    for axis in (0, 1, None):
        want = np.sort(g, axis=axis, kind="stable")
        got = np.sort(a, axis=axis, kind="stable").gather(root=None)
        collective_assert(got.tobytes() == want.tobytes(), f"axis={axis}")
