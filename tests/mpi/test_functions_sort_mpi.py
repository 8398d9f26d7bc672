"""np.sort / np.argsort / np.unique of DistArrays (runs under mpiexec -n 1..6):
the gathered result equals NumPy's on the global array bit for bit (the
stable order where the docstrings promise it), results are distributed as
documented with padding refreshed, errors are raised on every rank, and no
rank's memory peak comes near the global array's size."""
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, global_of, outcome
from nclx.dap.distribution import Distribution
from nclx.dap.functions import sorting
from nclx.dap.functions._wholelines import lines_go_whole

comm = MPI.COMM_WORLD


def bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def assert_bits(got, want, what):
    ok = bits(got) == bits(want)
    collective_assert(ok, f"{what}: {got!r} != {want!r}" if not ok else "")


def awkward(n, seed=0, dtype=np.float64):
    """Values with duplicates, NaNs and both zeros."""
    rng = np.random.default_rng(seed)
    g = rng.integers(-4, 5, size=n).astype(dtype) / 2
    if n > 6:
        g[::7] = np.nan
        g[1::5] = -0.0
        g[2::5] = 0.0
    return g


def u_dist(n):
    """A 1-D 'u' distribution: a permutation of [0, n) dealt to the ranks."""
    perm = np.random.default_rng(5).permutation(n)
    dims = [{"dist_type": "u", "size": n, "indices": np.sort(perm[r::N])[::-1].copy(),
             "proc_grid_size": N, "proc_grid_rank": r} for r in range(N)]
    return Distribution.from_dim_data_per_rank([(d,) for d in dims])


def padding_is_fresh(r):
    """The communication padding holds the owners' values."""
    if all(getattr(m, "comm_padding", (0, 0)) == (0, 0)
           for rank_ in range(N) for m in r.distribution.maps(rank_)):
        return True                                   # nothing to refresh
    before = np.array(r._block, copy=True)
    r.exchange_halos()
    return bits(r._block) == bits(before)


LAYOUTS_1D = {"block": {}, "block-padded-periodic": dict(padding=[1], periodic=[True]),
              "cyclic": dict(dist="c"), "block-cyclic": dict(dist="c", block_size=[3])}


CASES_1D = [(layout, n) for layout in list(LAYOUTS_1D) + ["u"] for n in (0, 3, 41)
            if not (layout.startswith("block-padded") and n < N)]   # padding needs cells


@pytest.mark.parametrize("layout, n", CASES_1D)
def test_sort_1d_equals_numpy(layout, n):
    def make(g):
        if layout == "u":
            return dap.DistArray.from_global(g, u_dist(n), comm=comm)
        return dap.DistArray.from_global(g, comm=comm, **LAYOUTS_1D[layout])
    g = awkward(n)
    a = make(g)
    r = np.sort(a)
    full = global_of(r)
    stable = np.sort(g, kind="stable")
    block = layout.startswith("block") and layout != "block-cyclic"
    if N == 1:
        # one rank holds the axis whole: NumPy's default kind, bit for bit
        assert_bits(full, np.sort(g), f"{layout} n={n} on one rank")
        collective_assert(r.distribution == a.distribution, "distributed like the input")
    elif block:
        # block layouts: NumPy's stable order, -0.0 / 0.0 and NaNs included
        assert_bits(full, stable, f"{layout} n={n}")
        collective_assert(r.distribution == a.distribution, "distributed like the input")
    else:
        # cyclic / 'u': block-distributed result; the same values, equal keys in any order
        want = Distribution.from_shape((n,), "b", grid_shape=(N,))
        collective_assert(r.distribution == want, f"{r.distribution} != {want}")
        same = full.dtype == stable.dtype and np.array_equal(full, stable, equal_nan=True)
        collective_assert(same and np.signbit(full).sum() == np.signbit(stable).sum(),
                          f"{layout}: {full} vs {stable}")
        clean = np.where(g == 0, 0.0, g)          # no -0.0: the bits are NumPy's
        assert_bits(global_of(np.sort(make(clean))), np.sort(clean), f"{layout} without -0.0")
    collective_assert(padding_is_fresh(r), "padding not refreshed")


GRIDS = {1: [(1, 1)], 2: [(2, 1), (1, 2)], 3: [(3, 1), (1, 3)], 4: [(2, 2), (4, 1)],
         5: [(5, 1), (1, 5)], 6: [(2, 3), (3, 2)]}


@pytest.mark.parametrize("grid", GRIDS.get(N, [(N, 1)]), ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_sort_2d_each_axis_and_flat(grid, dtype):
    g = awkward(13 * 11, seed=2).reshape(13, 11)
    g = g.astype(dtype) if dtype != np.int16 else (g * 2).astype(np.float64)
    g = np.nan_to_num(g, nan=7).astype(dtype) if dtype == np.int16 else g
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 1],
                                  periodic=[True, False])
    for axis in (0, 1, -1):
        r = np.sort(a, axis=axis)
        # lines held or moved whole: NumPy's default kind bit for bit; sample sort: stable
        whole = grid[axis] == 1 or lines_go_whole(a.distribution, axis % 2)
        kind = None if whole else "stable"
        assert_bits(global_of(r), np.sort(g, axis=axis, kind=kind), f"axis {axis}")
        collective_assert(r.distribution == a.distribution and padding_is_fresh(r),
                          f"axis {axis}: layout or padding")
    flat = np.sort(a, axis=None)
    collective_assert(flat.distribution == Distribution.from_shape((g.size,), "b", nprocs=N),
                      f"axis=None layout {flat.distribution}")
    got, want = global_of(flat), np.sort(g, axis=None)
    collective_assert(got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True),
                      "axis=None values")


@pytest.mark.parametrize("cols", [2, 3])
def test_sort_of_few_lines_along_a_distributed_axis(cols):
    # fewer lines than ranks: the sample sort with several lines (stable order)
    g = awkward(29 * cols, seed=cols).reshape(29, cols)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0])
    whole = N == 1 or lines_go_whole(a.distribution, 0)
    r = np.sort(a, axis=0)
    assert_bits(global_of(r), np.sort(g, axis=0, kind=None if whole else "stable"), "few lines")
    collective_assert(r.distribution == a.distribution and padding_is_fresh(r), "layout")


@pytest.mark.parametrize("dist", [("c", "b"), ("b", "b")], ids=str)
def test_whole_lines_along_a_distributed_axis_are_numpys(dist):
    # as many lines as ranks: lines move whole and NumPy sorts them (any kind)
    g = awkward(13 * 4 * N, seed=9).reshape(13, 4 * N)
    a = dap.DistArray.from_global(g, comm=comm, dist=dist, grid_shape=(N, 1))
    collective_assert(N == 1 or lines_go_whole(a.distribution, 0), "lines go whole")
    for kind in (None, "stable"):
        r = np.sort(a, axis=0, kind=kind)
        assert_bits(global_of(r), np.sort(g, axis=0, kind=kind), f"sort kind={kind}")
        assert_bits(global_of(np.argsort(a, axis=0, kind=kind)), np.argsort(g, axis=0, kind=kind),
                    f"argsort kind={kind}")
    assert_bits(global_of(np.partition(a, [2, 7], axis=0)), np.partition(g, [2, 7], axis=0),
                "partition")
    want = a.distribution if dist[0] == "b" or N == 1 else \
        Distribution([Distribution.from_shape((13,), "b", grid_shape=(N,))._dims[0],
                      a.distribution._dims[1]])
    collective_assert(r.distribution == want, f"{r.distribution}")


@pytest.mark.parametrize("shape, kw, axis", [
    ((5 * N + 3, 2), dict(grid_shape=(N, 1)), 0),
    ((5 * N + 3, 1), dict(grid_shape=(N, 1)), 0),
    ((2, 4 * N + 1), dict(grid_shape=(1, N)), 1),
    ((3, 7 * N, 2), dict(grid_shape=(1, N, 1)), 1),
    ((5 * N + 3, 2), dict(grid_shape=(N, 1), dist=["c", "n"]), 0),
    ((5 * N + 3, 2), dict(grid_shape=(N, 1), padding=[1, 0], periodic=[True, False]), 0),
    ((N - 1, 3), dict(grid_shape=(N, 1)), 0),
    ((4 * N, 0), dict(grid_shape=(N, 1)), 0),
], ids=["2-cols", "1-col", "rows-axis1", "3-d", "cyclic", "padded", "empty-ranks", "no-lines"])
@pytest.mark.parametrize("values", ["floats", "ties"])
def test_argsort_along_a_distributed_axis_of_few_lines_is_numpys_stable(shape, kw, axis,
                                                                          values):
    """A tall array of a few columns argsorted along its distributed rows
    (was: DapError, "argsort needs whole lines"): a sample sort carrying
    the global indices, NumPy's kind='stable' indices bit for bit (NaN last,
    -0.0 == 0.0, ties by index), distributed like np.sort's result."""
    rng = np.random.default_rng(21)
    if values == "ties":
        g = rng.integers(0, 4, shape).astype(np.int16)
    else:
        g = rng.standard_normal(shape)
        g.flat[::5] = np.nan
        g.flat[1::7] = -0.0
        g.flat[2::7] = 0.0
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    r = np.argsort(a, axis=axis, kind="stable")
    assert_bits(global_of(r), np.argsort(g, axis=axis, kind="stable"), f"argsort {shape}")
    collective_assert(r.distribution == np.sort(a, axis=axis).distribution,
                      f"layout {r.distribution}")
    got = global_of(np.argsort(a, axis=axis))           # the default kind: a valid argsort
    collective_assert(np.array_equal(np.take_along_axis(g, got, axis),
                                     np.sort(g, axis=axis), equal_nan=True), "default kind")


def test_sort_along_a_whole_axis_is_numpys_default_kind_bit_for_bit():
    # the axis on one grid coordinate: each line sorted whole, NumPy's own algorithm
    g = awkward(9 * 40, seed=3).reshape(9, 40)
    a = dap.DistArray.from_global(g, comm=comm, dist=("b", "n"), padding=[1, 0])
    for kind in (None, "stable", "heapsort"):
        assert_bits(global_of(np.sort(a, axis=1, kind=kind)), np.sort(g, axis=1, kind=kind),
                    f"kind={kind}")
        assert_bits(global_of(np.argsort(a, axis=1, kind=kind)),
                    np.argsort(g, axis=1, kind=kind), f"argsort kind={kind}")


def test_argsort_on_a_u_axis_held_whole_gives_global_indices():
    n = 17
    g = awkward(n, seed=4)
    perm = np.random.default_rng(9).permutation(n)
    dd = {"dist_type": "u", "size": n, "indices": perm, "proc_grid_size": 1, "proc_grid_rank": 0}
    rows = Distribution.from_shape((N,), "b", nprocs=N)
    dist = Distribution([rows._dims[0], [dap.normalize_dim_dict(dd, 1)]])
    g2 = np.stack([np.roll(g, k) for k in range(N)])
    a = dap.DistArray.from_global(g2, dist, comm=comm)
    assert_bits(global_of(np.argsort(a, axis=1, kind="stable")),
                np.argsort(g2, axis=1, kind="stable"), "argsort on 'u'")
    assert_bits(global_of(np.sort(a, axis=1)), np.sort(g2, axis=1), "sort on 'u'")


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.25, 1e-300]),
                max_size=40),
       st.sampled_from([{}, dict(padding=[1]), dict(dist="c")]))
def test_sort_matches_numpy_on_drawn_arrays(values, layout):
    # every rank draws the same examples (derandomize); failures are collective
    g = np.array(values, dtype=np.float64)
    if layout.get("padding") and N > 1 and g.size < N:
        return
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    full = global_of(np.sort(a))
    want = np.sort(g, kind="stable" if N > 1 else None)
    if layout.get("dist") == "c" and N > 1:
        ok = np.array_equal(full, want, equal_nan=True)
    else:
        ok = bits(full) == bits(want)
    collective_assert(ok, f"{g} -> {full}, want {want}")


@pytest.mark.parametrize("kw", [{}, dict(grid_shape=(N, 1)), dict(dist="c"),
                                dict(padding=[1, 1])], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_unique_indices_with_every_nan_its_own_value(kw, dtype):
    """equal_nan=False with return_index / return_inverse (was: DapError):
    each NaN cell is an entry of its own, in C order of the cells, its own
    bits (NaNs of other payloads and signs too): NumPy's result bit for
    bit with return_index (a stable argsort); with return_inverse alone
    NumPy orders the NaNs by its unstable argsort, so the inverse is
    checked to rebuild the array."""
    rng = np.random.default_rng(8)
    g = rng.integers(0, 4, (6, 5)).astype(dtype)
    g.flat[::3] = np.nan
    if dtype == np.float64:
        g.flat[1] = np.uint64(0x7ff8000000000001).view(np.float64)
        g.flat[4] = -np.nan
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    for opts in (dict(return_index=True), dict(return_index=True, return_inverse=True,
                                               return_counts=True)):
        want = np.unique(g, equal_nan=False, **opts)
        got = np.unique(a, equal_nan=False, **opts)
        for i, (x, y) in enumerate(zip(got, want)):
            assert_bits(global_of(x) if isinstance(x, dap.DistArray) else x, y, f"{opts} [{i}]")
    u, inv = np.unique(a, return_inverse=True, equal_nan=False)
    inv = global_of(inv)
    want = np.unique(g, equal_nan=False)
    collective_assert(np.array_equal(u, want, equal_nan=True) and
                      bits(u[inv].reshape(g.shape)) == bits(g), "inverse alone")


@pytest.mark.parametrize("shape, kw", [((7, 3), {}), ((6, 5), dict(grid_shape=(N, 1))),
                                       ((6, 5), dict(dist="c")), ((4, 3, 2), {}),
                                       ((5, 4), dict(padding=[1, 1])), ((0, 3), {}),
                                       ((4, 0), {})], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.complex64])
def test_unique_along_an_axis_equals_numpy(shape, kw, dtype):
    """np.unique(axis=k) (was: DapError): the slices along k as records of
    NumPy's consolidated dtype, through the distributed path; values,
    index, inverse (a DistArray) and counts NumPy's bit for bit, slices
    holding a NaN each its own entry, -0.0 equal to 0.0."""
    g = np.random.default_rng(4).integers(0, 2, shape).astype(dtype)
    if dtype == np.float64 and g.size > 4:
        g.flat[3] = g.flat[-1] = np.nan
        g.flat[1] = -0.0
    a = dap.DistArray.from_global(g, comm=comm, **kw)
    for axis in range(len(shape)):
        for opts in ({}, dict(return_index=True, return_inverse=True, return_counts=True),
                     dict(return_counts=True)):
            want = np.unique(g, axis=axis, **opts)
            got = np.unique(a, axis=axis, **opts)
            if not opts:
                want, got = (want,), (got,)
            collective_assert(len(got) == len(want), f"{len(got)} results")
            for i, (x, y) in enumerate(zip(got, want)):
                assert_bits(global_of(x) if isinstance(x, dap.DistArray) else x, y,
                            f"axis {axis} {opts} [{i}]")


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint8])
def test_unique_with_counts_equals_numpy(dtype):
    g = awkward(50, seed=6)
    g = np.nan_to_num(g, nan=3).astype(dtype) if dtype != np.float64 else np.where(g == 0, 0, g)
    a = dap.DistArray.from_global(g.reshape(5, 10), comm=comm, padding=[1, 1])
    assert_bits(np.unique(a), np.unique(g), "unique")
    u, c = np.unique(a, return_counts=True)
    wu, wc = np.unique(g, return_counts=True)
    assert_bits(u, wu, "unique values")
    assert_bits(c, wc, "counts")
    small = dap.DistArray.from_global(np.array([2.0, np.nan]), comm=comm)   # empty ranks
    assert_bits(np.unique(small, return_counts=True)[1],
                np.unique(np.array([2.0, np.nan]), return_counts=True)[1], "counts, few cells")


@pytest.mark.parametrize("case", ["all equal", "all NaN", "two values", "distinct", "NaN tail"])
@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_runs_cut_between_ranks(case, equal_nan):
    # equal values fill several ranks' buckets: each run is counted once, where it starts
    n = 53
    g = {"all equal": np.full(n, 3.0), "all NaN": np.full(n, np.nan),
         "two values": np.where(np.arange(n) % 3, 1.0, 2.0), "distinct": np.arange(n)[::-1] / 7,
         "NaN tail": np.concatenate((np.full(20, 5.0), np.full(33, np.nan)))}[case]
    a = dap.DistArray.from_global(g, comm=comm, dist="c")
    got = np.unique(a, return_counts=True, equal_nan=equal_nan)
    want = np.unique(g, return_counts=True, equal_nan=equal_nan)
    assert_bits(got[0], want[0], f"{case} values")
    assert_bits(got[1], want[1], f"{case} counts")


@pytest.mark.parametrize("layout", [dict(padding=[1, 1]), dict(dist=("c", "b")),
                                    dict(grid_shape=(1, N)), dict(dist=("n", "c"))],
                         ids=["padded", "cyclic-rows", "columns", "cyclic-columns"])
@pytest.mark.parametrize("kind", ["floats", "ints"])
def test_unique_index_and_inverse_equal_numpy(layout, kind):
    """return_index (first global C-order occurrence) and return_inverse (a
    DistArray like the input, NumPy 2's shape), with counts (were: DapError)."""
    g = awkward(60, seed=9).reshape(6, 10)
    if kind == "ints":
        g = np.nan_to_num(g, nan=7).astype(np.int16)
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    u, i, inv, c = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    wu, wi, winv, wc = np.unique(g, return_index=True, return_inverse=True, return_counts=True)
    collective_assert(np.array_equal(u, wu, equal_nan=True), f"values {u} {wu}")
    assert_bits(i, wi, "index")
    assert_bits(c, wc, "counts")
    collective_assert(isinstance(inv, dap.DistArray) and inv.distribution == a.distribution,
                      f"{type(inv)}")
    assert_bits(global_of(inv), winv, "inverse")
    only = np.unique(a, return_inverse=True)
    collective_assert(len(only) == 2, f"{len(only)}")
    assert_bits(global_of(only[1]), winv, "inverse alone")
    assert_bits(np.unique(a, return_index=True)[1], wi, "index alone")


def test_unique_with_both_zeros_keeps_one_zero():
    g = np.array([0.0, -0.0, 1.0, -0.0, 0.0, 1.0, 2.0])
    u, c = np.unique(dap.DistArray.from_global(g, comm=comm), return_counts=True)
    collective_assert(np.array_equal(u, [0.0, 1.0, 2.0]) and c.tolist() == [4, 2, 1], f"{u} {c}")


def full_outcome(fn, *args, **kw):
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("call, expect", [
    (lambda a: np.sort(a, order="x"), "order= (fields"),
    (lambda a: np.sort(a, kind="bogus"), "ValueError"),
    (lambda a: np.sort(a, axis=2), "AxisError"),
    (lambda a: np.sort(a, axis=1.5), "TypeError"),
    (lambda a: np.unique(a, axis=2), "AxisError"),
], ids=["order", "kind", "axis", "axis-type", "unique-axis"])
def test_bad_arguments_raise_on_every_rank(call, expect):
    a = dap.DistArray.from_global(np.arange(24.0).reshape(6, 4), comm=comm,
                                  grid_shape=(N, 1))
    kind, msg = full_outcome(call, a)
    if N == 1 and "distributed" in expect:
        collective_assert(kind == "ok", f"one rank: axis 0 is whole, got {msg}")
        return
    collective_assert(kind == "exc" and msg.startswith("DapError") and expect in msg,
                      f"{kind}: {msg}")
    everyone = comm.allgather(msg.splitlines()[0])
    collective_assert(all(m == everyone[0] for m in everyone), f"different errors {everyone}")


@pytest.mark.parametrize("shape, layout", [((37,), {}), ((37,), dict(dist="c")),
                                           ((37,), dict(padding=[2], periodic=[True])),
                                           ((9, 5), {}), ((5, 9), dict(dist=("b", "c"))),
                                           ((0,), {}), ((1,), {}), ((3,), {})],
                         ids=["1d", "1d-cyclic", "1d-padded", "2d", "2d-cyclic", "empty", "one",
                              "fewer-than-ranks"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float32])
def test_argsort_flat_and_1d_distributed_are_numpys_stable_bits(shape, layout, dtype):
    """np.argsort(axis=None) and along the one axis of a distributed 1-D array
    (were: DapError): NumPy's stable order bit for bit (ties by index, NaN
    last, -0.0 == 0.0), a valid argsort for the default kind, block-distributed."""
    g = awkward(int(np.prod(shape)), seed=3, dtype=dtype if dtype != np.int32 else np.float64)
    g = (g.astype(dtype) if dtype != np.int32 else np.nan_to_num(g * 2).astype(dtype))
    g = g.reshape(shape)
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    for axis in ([None, 0, -1] if len(shape) == 1 else [None]):
        r = np.argsort(a, axis=axis, kind="stable")
        if axis is None or N > 1:
            target = Distribution.from_shape((g.size,), "b", nprocs=N)
            collective_assert(r.distribution == target, f"{r.distribution}")
        assert_bits(global_of(r), np.argsort(g, axis=axis, kind="stable"), f"argsort axis={axis}")
        # the default kind: a valid argsort (NumPy leaves the order of equal keys open)
        got = global_of(np.argsort(a, axis=axis))
        ok = np.array_equal(np.sort(got), np.arange(g.size)) and \
            np.array_equal(np.ravel(g)[got], np.sort(g, axis=axis), equal_nan=True)
        collective_assert(ok, f"default kind axis={axis}: {got}")


def test_a_rank_that_fails_makes_every_rank_raise(monkeypatch):
    # one rank's local preparation fails: every rank raises, none waits
    real = sorting._check_common

    def flaky(a, *args):
        if comm.rank == N - 1:
            raise MemoryError("no room")
        return real(a, *args)
    monkeypatch.setattr(sorting, "_check_common", flaky)
    a = dap.DistArray.from_global(np.arange(10.0), comm=comm)
    kind, msg = outcome(np.sort, a)
    collective_assert(kind == "exc" and f"rank {N - 1}" in msg, msg)


@pytest.mark.skipif(N < 4, reason="the memory bound is checked at 4 ranks or more")
def test_no_rank_comes_near_the_global_size():
    # a rank's peak: about 2 (1-D) to 3 (2-D, lines moved whole) times its block
    n = 120_000
    a = dap.DistArray.from_shape((n,), comm=comm)
    a.owned[...] = np.random.default_rng(comm.rank).standard_normal(a.owned.shape)
    low = dap.DistArray.from_shape((n,), comm=comm)
    low.owned[...] = np.random.default_rng(comm.rank).integers(0, 50, a.owned.shape)
    b = dap.DistArray.from_shape((400, n // 400), comm=comm)
    b.owned[...] = np.random.default_rng(comm.rank).standard_normal(b.owned.shape)
    for name, fn, x in [("sort", np.sort, a), ("unique", np.unique, low),
                        ("sort 2-D", lambda y: np.sort(y, axis=0), b)]:
        # (np.unique of distinct values returns them all: as large as the array)
        fn(x)                                         # one-time allocations out of the way
        tracemalloc.start()
        fn(x)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        ratio = peak / (n * 8)
        collective_assert(ratio < 3.3 / N, f"{name}: peak {ratio:.2f} x the global array")


def test_partition_whole_axis_is_numpys_and_distributed_axis_is_a_partition():
    g = awkward(8 * 29, seed=8).reshape(8, 29)
    a = dap.DistArray.from_global(g, comm=comm, dist=("b", "n"), padding=[1, 0])
    for kth in (0, 14, [3, 20], -1):
        assert_bits(global_of(np.partition(a, kth, axis=1)), np.partition(g, kth, axis=1),
                    f"whole axis kth={kth}")
    b = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1))
    stable = np.sort(g, axis=0, kind="stable")
    for kth in (0, 5, [2, 6]):
        got = global_of(np.partition(b, kth, axis=0))
        for k in np.atleast_1d(kth):
            pivot = got[k]
            ok = (np.array_equal(pivot, stable[k], equal_nan=True)
                  and np.all(~(got[:k] > pivot)) and np.all(~(got[k + 1:] < pivot)))
            collective_assert(ok, f"kth={k}: {got}")
    for bad, expect in [(29, "out of bounds"), (1.5, "kth must be an integer")]:
        kind, msg = full_outcome(np.partition, a, bad, axis=1)
        collective_assert(kind == "exc" and expect in msg, msg)
