"""Multi-rank DistArray tests (run under mpiexec -n 1..6): gather round trips,
elementwise ufuncs and reductions through NumPy's calls, every dtype NumPy
computes (nclx's kernels where it has loops), nclx.checked() elementwise and
in the cross-rank combine."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx
import nclx.dap as dap
from mpi_helpers import N, as_global, collective_assert, outcome

comm = MPI.COMM_WORLD
LAYOUTS = [dict(dist="b"), dict(dist="c"), dict(dist="c", block_size=[3]),
           dict(dist="b", padding=[2]), dict(dist="b", padding=[1], periodic=[True])]


@pytest.mark.parametrize("kw", LAYOUTS, ids=str)
def test_gather_round_trip_1d(kw):
    g = np.arange(37.0) * 1.5
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    out = a.gather(root=0)
    if comm.rank == 0:
        assert np.array_equal(out, g)
    else:
        assert out is None


@pytest.mark.parametrize("dist", [("b", "b"), ("b", "c"), ("c", "c"), ("n", "b")])
def test_gather_round_trip_2d_and_elementwise_ops(dist):
    g = np.arange(11 * 9, dtype=np.int64).reshape(11, 9)
    a = dap.DistArray.from_global(g, dist=dist, comm=comm, block_size=[2, 1])
    r = (a * 2 + 1) % 7
    out = r.gather(root=comm.size - 1)
    if comm.rank == comm.size - 1:
        assert np.array_equal(out, (g * 2 + 1) % 7)
    assert (a > 50).sum() == (g > 50).sum()


def test_reductions_across_ranks_exclude_padding():
    g = np.random.default_rng(0).random(1001)
    a = dap.DistArray.from_global(g, comm=comm, padding=[3])
    assert a.local.size > a.owned.size or comm.size == 1
    assert np.isclose(a.sum(), g.sum())
    assert a.max() == g.max() and a.min() == g.min()


def test_every_rank_export_revalidates_and_rebuilds_the_distribution():
    a = dap.DistArray.from_shape((20, 13), dist=("c", "b"), comm=comm, padding=[0, 1],
                                 block_size=[2, 1])
    export = dap.validate(a.__distarray__())
    everyone = comm.allgather(export["dim_data"])
    assert dap.Distribution.from_dim_data_per_rank(everyone) == a.distribution
    total = comm.allreduce(int(np.prod([dap.num_owned_indices(dd) for dd in export["dim_data"]])))
    assert total == 20 * 13


def test_from_distarray_is_zero_copy_on_every_rank():
    a = dap.DistArray.from_global(np.arange(40), comm=comm, padding=[1])
    b = dap.from_distarray(a, comm=comm)
    assert np.shares_memory(a.local, b.local)
    assert b.distribution == a.distribution
    assert b.sum() == sum(range(40))


def test_empty_local_blocks_are_valid():
    a = dap.DistArray.from_global(np.arange(2.0), comm=comm)      # fewer elements than ranks
    assert a.sum() == 1.0
    out = a.gather()
    if comm.rank == 0:
        assert list(out) == [0.0, 1.0]


def test_numpy_reductions_on_a_distarray_use_every_rank():
    g = np.arange(1, 41, dtype=np.int64).reshape(8, 5)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0])
    assert np.sum(a) == g.sum() and np.max(a) == g.max() and np.min(a) == g.min()
    assert np.add.reduce(a, axis=None) == g.sum()
    assert np.prod(dap.DistArray.from_global(np.ones(7), comm=comm)) == 1.0
    assert np.mean(a) == g.mean()
    assert np.any(a > 39) and not np.all(a > 1)
    assert a.sum(keepdims=True).shape == (1, 1)
    assert a.sum(dtype=np.float64) == float(g.sum())
    with pytest.raises(dap.DapError, match="accumulate"):
        np.add.accumulate(a)


def test_out_and_where_on_distarrays():
    g = np.arange(12.0)
    a = dap.DistArray.from_global(g, comm=comm)
    out = dap.DistArray.from_shape((12,), comm=comm, fill=-1.0)
    r = np.multiply(a, 2.0, out=out, where=a > 5)
    assert r is out
    full = out.gather()
    if comm.rank == 0:
        assert list(full) == [-1.0] * 6 + [x * 2 for x in range(6, 12)]


@pytest.mark.parametrize("dtype", ["c16", "c8", "f2"])
def test_complex_and_float16_elementwise_and_reductions(dtype):
    """Defect: DistArray ufuncs and reductions always call nclx.ufuncs'
    ufunc of the same name (nclx.aware.nclx_ufunc), which has loops only for
    bool, the integers, float32 and float64: complex and float16 DistArrays
    raise UFuncTypeError on every rank, on one rank too (docs/dap.md promises
    'float (and complex) sums and products')."""
    g = (np.arange(3 * N + 4) % 5 + 1).astype(dtype)
    if np.dtype(dtype).kind == "c":
        g = g + (1j * (np.arange(3 * N + 4) % 3)).astype(dtype)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1])
    cases = [("a * 2 + 1", lambda x: x * 2 + 1), ("negative", np.negative),
             ("sum", lambda x: x.sum()), ("prod", lambda x: (x * 0 + 1).prod()),
             ("mean", lambda x: x.mean()), ("max", lambda x: x.max())]
    bad = []
    for name, f in cases:
        kind, got = outcome(lambda: as_global(f(a)))
        want = np.asarray(f(g))
        if kind == "exc":
            bad.append(f"{name}: {got}")
        elif got.dtype != want.dtype or not np.allclose(got, want, rtol=1e-3 if dtype == "f2" else 1e-6):
            bad.append(f"{name}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_checked_mode_covers_distarray_arithmetic():
    """Defect: nclx.checked() does not apply to DistArrays: their kernels are
    nclx.ufuncs' ufuncs, which never walk the checked kernel chain, so
    integer overflow wraps silently -- elementwise (every rank overflows
    here) and in the cross-rank combine (MPI.SUM of partial sums that each
    fit)."""
    g = np.full(3 * N + 1, 2**61, dtype=np.int64)
    a = dap.DistArray.from_global(g, comm=comm)
    with nclx.checked():
        kind, got = outcome(lambda: (a * 8).owned.copy())
    bad = [] if kind == "exc" and "OverflowError" in got else [f"a * 8: {kind} {got}"]
    # each rank's partial fits in int64, the total does not
    h = np.zeros(2 * max(N, 2), dtype=np.int64)
    h[0] = h[-1] = 2**62
    b = dap.DistArray.from_global(h, comm=comm)
    with nclx.checked():
        kind, got = outcome(b.sum)
    if not (kind == "exc" and ("OverflowError" in got or "DapError" in got)):
        bad.append(f"sum (2**62 + 2**62): {kind} {got!r}")
    collective_assert(not bad, "; ".join(bad))
