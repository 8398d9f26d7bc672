"""np.percentile / np.quantile / np.median, np.histogram and np.cumsum /
np.cumprod of DistArrays (runs under mpiexec -n 1..6): equal to NumPy on
the gathered array (bit for bit where the docstrings say so, floats scanned
across ranks to 1e-12 relative), the same bits on every rank, errors raised
on every rank, memory peaks far below the global array's size."""
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, global_of
from nclx.dap.distribution import Distribution, dims_create

comm = MPI.COMM_WORLD


def bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def assert_bits(got, want, what):
    ok = bits(got) == bits(want) and type(got) is type(want)
    collective_assert(ok, f"{what}: {got!r} ({type(got).__name__}) != {want!r} "
                          f"({type(want).__name__})" if not ok else "")
    everyone = comm.allgather(bits(got))
    collective_assert(all(e == everyone[0] for e in everyone), f"{what}: ranks differ")


def full_outcome(fn, *args, **kw):
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return "exc", f"{type(exc).__name__}: {exc}"


GRID = dims_create(N, 2)
LAYOUTS = {"block-padded": dict(grid_shape=GRID, padding=[1, 1], periodic=[True, False]),
           "cyclic": dict(dist="c", grid_shape=GRID), "rows": dict(grid_shape=(N, 1))}


def data(dtype, seed=0, shape=(13, 7)):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind in "iu":
        g = np.abs(g)
    return g.astype(dtype)


# ---------------------------------------------------------------- quantiles
@pytest.mark.parametrize("layout, dtype", [("block-padded", np.float64), ("cyclic", np.float32),
                                           ("rows", np.int32)], ids=str)
def test_percentile_quantile_median_are_numpys_bits(layout, dtype):
    g = data(dtype, seed=1)
    a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
    for q in (50, 0, 100, 37.5, [10, 90, 33.3], np.float32(12.5), np.array([1, 99])):
        assert_bits(np.percentile(a, q), np.percentile(g, q), f"percentile {q}")
    for method in ("linear", "lower", "nearest", "median_unbiased", "inverted_cdf"):
        for q in (0.5, [0.05, 0.95], 1):
            assert_bits(np.quantile(a, q, method=method), np.quantile(g, q, method=method),
                        f"quantile {q} {method}")
    assert_bits(np.median(a), np.median(g), "median")
    assert_bits(np.median(a, keepdims=True), np.median(g, keepdims=True), "median keepdims")
    assert_bits(np.percentile(a, [5, 95], keepdims=True),
                np.percentile(g, [5, 95], keepdims=True), "percentile keepdims")


@pytest.mark.parametrize("values", [
    [1.0, np.inf], [3.0, np.nan, 1.0, 2.0], [-np.inf, 0.0, -0.0, 5.0], [7.0], [2.0, 2.0]],
    ids=["inf", "nan", "zeros", "one", "equal"])
def test_quantiles_of_special_values(values):
    g = np.array(values * 3)
    a = dap.DistArray.from_global(g, comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # NumPy's inf - inf
        for q in (0, 50, 100, [25, 75]):
            assert_bits(np.percentile(a, q), np.percentile(g, q), f"{values} q={q}")
        assert_bits(np.median(a), np.median(g), f"{values} median")


@pytest.mark.parametrize("kind", ["some NaN", "all NaN", "ints", "empty"])
def test_nan_quantiles_are_numpys_bits(kind):
    g = {"some NaN": data(np.float64, seed=11), "all NaN": np.full((3, 4), np.nan),
         "ints": data(np.int64, seed=12), "empty": np.zeros((0, 3))}[kind]
    if kind == "some NaN":
        g.flat[::3] = np.nan
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1) if g.shape[0] >= N else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # NumPy's "All-NaN slice"
        for q in (50, [10, 90], 0, 100):
            assert_bits(np.nanpercentile(a, q), np.nanpercentile(g, q), f"nanpercentile {q}")
            assert_bits(np.nanquantile(a, np.divide(q, 100)), np.nanquantile(g, np.divide(q, 100)),
                        f"nanquantile {q}")
        assert_bits(np.nanmedian(a), np.nanmedian(g), "nanmedian")
        if g.size and g.shape[0] >= N:
            assert_bits(global_of(np.nanmedian(a, axis=1)), np.nanmedian(g, axis=1), "axis 1")
    if kind == "all NaN":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.nanmedian(a)
        collective_assert(any("All-NaN slice" in str(w.message) for w in caught), "warning")


def test_quantiles_of_an_empty_array_are_numpys_outcome():
    a = dap.DistArray.from_global(np.zeros(0), comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_bits(np.median(a), np.median(np.zeros(0)), "median of nothing")
    kind, msg = full_outcome(np.percentile, a, 50)
    collective_assert(kind == "exc" and msg.startswith("IndexError"), msg)


def test_quantiles_along_a_whole_axis_give_a_distarray():
    g = data(np.float64, seed=2, shape=(6 * N, 9))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0])
    r = np.median(a, axis=1)
    collective_assert(isinstance(r, dap.DistArray) and r.shape == (6 * N,), repr(r))
    assert_bits(global_of(r), np.median(g, axis=1), "median axis 1")
    p = np.percentile(a, [10, 60], axis=-1)
    collective_assert(p.shape == (2, 6 * N), f"{p.shape}")
    assert_bits(global_of(p), np.percentile(g, [10, 60], axis=-1), "percentile axis")
    k = np.quantile(a, 0.3, axis=1, keepdims=True)
    assert_bits(global_of(k), np.quantile(g, 0.3, axis=1, keepdims=True), "keepdims")


@pytest.mark.parametrize("call, expect", [
    (lambda a: np.percentile(a, 101), "Percentiles must be in the range"),
    (lambda a: np.quantile(a, 0.5, method="bogus"), "is not a valid method"),
    (lambda a: np.percentile(a, 50, out=np.zeros(3)), "out="),      # not the result's shape
    (lambda a: np.quantile(a, 0.5, axis=(0, 1), method="inverted_cdf",
                           weights=np.ones(a.shape)), "the weights must be a DistArray"),
], ids=["q", "method", "out", "tuple"])
def test_quantile_errors_on_every_rank(call, expect):
    a = dap.DistArray.from_global(np.arange(24.0).reshape(6, 4), comm=comm, grid_shape=(N, 1))
    kind, msg = full_outcome(call, a)
    collective_assert(kind == "exc" and msg.startswith("DapError") and expect in msg, msg)


@pytest.mark.parametrize("layout", ["rows", "cyclic", "block-padded"])
@pytest.mark.parametrize("name", ["median", "percentile", "quantile", "nanmedian",
                                  "nanpercentile", "nanquantile"])
def test_quantiles_along_a_distributed_axis_are_numpys_bits(layout, name):
    """Along a distributed axis (was: DapError): one redistribution makes the
    axis whole, then NumPy's own bits; 3-D and keepdims too; the one axis of
    a 1-D array."""
    g = data(np.float64, seed=5, shape=(3 * N + 1, 5))
    g[1, 2] = g[4 % g.shape[0], 0] = np.nan
    fn = getattr(np, name)
    q = {"percentile": [5, 50, 99], "quantile": 0.3, "nanpercentile": 40.0,
         "nanquantile": [0.0, 1.0]}.get(name)
    args = () if q is None else (q,)
    a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for axis, kw in [(0, {}), (-2, {"keepdims": True}), (1, {})]:
            assert_bits(global_of(fn(a, *args, axis=axis, **kw)), fn(g, *args, axis=axis, **kw),
                        f"{name} axis {axis} {kw}")
        g3 = data(np.float64, seed=6, shape=(2 * N, 3, 4))
        b = dap.DistArray.from_global(g3, comm=comm, grid_shape=(N, 1, 1))
        assert_bits(global_of(fn(b, *args, axis=0)), fn(g3, *args, axis=0), f"{name} 3-D axis 0")
        v = dap.DistArray.from_global(g[:, 0].copy(), comm=comm)
        want = fn(g[:, 0], *args, axis=0, keepdims=True)
        got = fn(v, *args, axis=0, keepdims=True)
        assert_bits(got, want, f"{name} 1-D axis 0 keepdims")


WEIGHTED = ["quantile", "percentile", "nanquantile", "nanpercentile"]


def same_outcome(got, want, what):
    """``full_outcome`` results: NumPy's bits, or an exception on every rank
    -- NumPy's own where the whole array showed it (axis=None), else NumPy's
    own on the ranks whose lines raised it and a DapError naming them on the
    others."""
    if want[0] == "ok":
        collective_assert(got[0] == "ok", f"{what}: {got}")
        assert_bits(got[1] if not isinstance(got[1], dap.DistArray) else global_of(got[1]),
                    want[1], what)
        return
    kinds = comm.allgather(got)
    ok = all(k == "exc" for k, _ in kinds) and any(m == want[1] for _, m in kinds) and all(
        m == want[1] or (m.startswith("DapError") and want[1].split(":")[0] in m)
        for _, m in kinds)
    collective_assert(ok, f"{what}: {kinds} against NumPy's {want}")


def _q(name, q):
    return np.multiply(q, 100) if name.endswith("percentile") else q


@pytest.mark.parametrize("layout", ["rows", "cyclic", "block-padded"])
@pytest.mark.parametrize("name", WEIGHTED)
def test_weighted_quantiles_are_numpys_bits(layout, name):
    """weights= (was: DapError), method 'inverted_cdf': axis=None by a
    sample sort and the cumulated weights passed from rank to rank (no
    gather), axis=k on whole lines; distinct values (NumPy's unstable
    argsort orders ties its own way), zero weights first and inside, NaN
    values (the nan forms drop them with their weights)."""
    fn = getattr(np, name)
    rng = np.random.default_rng(11)
    g = rng.permutation(np.arange(91.0) - 40.5).reshape(13, 7)
    g[2, 3] = g[9, 1] = np.nan
    w = rng.random(g.shape)
    w[g == g[np.isfinite(g)].min()] = 0.0
    w[0, :3] = 0.0
    ints = rng.permutation(91).reshape(13, 7).astype(np.int32)
    wi = rng.integers(0, 5, g.shape).astype(np.int64)          # integer weights: exact sums
    for x, wx in [(g, w), (np.where(np.isnan(g), 0.5, g).astype(np.float32), w), (ints, wi)]:
        a = dap.DistArray.from_global(x, comm=comm, **LAYOUTS[layout])
        wa = dap.DistArray.from_global(wx, comm=comm, **LAYOUTS[layout])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for q in (0.0, 0.37, 1.0, [0.05, 0.5, 0.95], np.float32(0.25), np.array([0.2, 0.8])):
                kw = dict(method="inverted_cdf", weights=wa)
                want = fn(x, _q(name, q), method="inverted_cdf", weights=wx)
                assert_bits(fn(a, _q(name, q), **kw), want, f"{name} {x.dtype} q={q}")
            for axis in (0, 1, -1):
                want = fn(x, _q(name, 0.4), axis=axis, method="inverted_cdf", weights=wx)
                got = fn(a, _q(name, 0.4), axis=axis, method="inverted_cdf", weights=wa)
                assert_bits(global_of(got), want, f"{name} {x.dtype} axis {axis}")
                w1 = wx[(0,) * (axis % 2) + (slice(None),)] if axis % 2 else wx[:, 0]
                w1 = np.ascontiguousarray(w1)
                want = full_outcome(fn, x, _q(name, [0.1, 0.6]), axis=axis,
                                    method="inverted_cdf", weights=w1, keepdims=True)
                got = full_outcome(fn, a, _q(name, [0.1, 0.6]), axis=axis,
                                   method="inverted_cdf", weights=w1, keepdims=True)
                same_outcome(got, want, f"{name} {x.dtype} axis {axis}, 1-D weights")


@pytest.mark.parametrize("name", WEIGHTED)
def test_weighted_quantiles_of_a_1d_array_and_its_edges(name):
    """1-D arrays (any ranks may hold nothing), all-NaN and empty arrays,
    weights that are all zero or hold NaN: NumPy's outcome on every rank."""
    fn = getattr(np, name)
    rng = np.random.default_rng(12)
    cases = [(rng.random(3 * N + 2), rng.random(3 * N + 2)),
             (np.arange(2.0), np.array([0.0, 1.0])),
             (np.full(N + 1, np.nan), np.ones(N + 1)),
             (np.zeros(0), np.zeros(0)),
             (rng.random(2 * N), np.zeros(2 * N)),
             (rng.random(2 * N), np.full(2 * N, np.nan)),
             (rng.random(2 * N), np.r_[np.ones(2 * N - 1), np.inf])]
    for x, wx in cases:
        for kw in ({}, {"axis": 0}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = full_outcome(fn, x, _q(name, [0.0, 0.5]), method="inverted_cdf",
                                    weights=wx, **kw)
                a = dap.DistArray.from_global(x, comm=comm)
                wa = dap.DistArray.from_global(wx, comm=comm)
                got = full_outcome(fn, a, _q(name, [0.0, 0.5]), method="inverted_cdf",
                                   weights=wa, **kw)
            same_outcome(got, want, f"{name} {x} {wx}")


def test_weighted_quantile_errors_on_every_rank():
    g = np.arange(24.0).reshape(6, 4)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1))
    w = dap.DistArray.from_global(np.ones((6, 4)), comm=comm, grid_shape=(N, 1))
    neg = np.ones((6, 4))
    neg[5, 3] = -1.0                         # on the last rank only
    wneg = dap.DistArray.from_global(neg, comm=comm, grid_shape=(N, 1))
    other = dap.DistArray.from_global(np.ones((4, 6)), comm=comm, grid_shape=(N, 1))
    for call, expect in [
            (lambda: np.quantile(a, 0.5, weights=w), "ValueError: Only method 'inverted_cdf'"),
            (lambda: np.quantile(a, 0.5, method="inverted_cdf", weights=wneg),
             "ValueError: Weights must be non-negative"),
            (lambda: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones((6, 4))),
             "weights must be a DistArray"),
            (lambda: np.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=np.ones(3)),
             "ValueError: Shape of weights must be consistent"),
            (lambda: np.quantile(a, 0.5, method="inverted_cdf", weights=other),
             "Axis must be specified when shapes of a and weights differ"),
            (lambda: np.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=neg[:, 3]),
             "ValueError: Weights must be non-negative")]:
        kind, msg = full_outcome(call)
        collective_assert(kind == "exc" and expect in msg, f"{expect!r} not in {msg}")
        everyone = comm.allgather(msg)
        collective_assert(all(m == everyone[0] for m in everyone), f"ranks differ: {everyone}")


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.25, 1e-300, 7.0, -7.0, np.inf]),
                min_size=1, max_size=30),
       st.lists(st.floats(0, 100), min_size=1, max_size=3), st.sampled_from([{}, dict(dist="c")]))
def test_quantiles_and_histogram_on_drawn_arrays(values, q, layout):
    # every rank draws the same examples (derandomize); failures are collective
    g = np.array(values)
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = np.percentile(a, q), np.percentile(g, q)
        collective_assert(bits(got) == bits(want), f"{g} q={q}: {got} != {want}")
        got, want = np.median(a), np.median(g)
        collective_assert(bits(got) == bits(want), f"{g} median: {got} != {want}")
    finite = g[np.isfinite(g)]
    if finite.size == g.size:
        got, want = np.histogram(a, bins=4), np.histogram(g, bins=4)
        collective_assert(bits(got[0]) == bits(want[0]) and bits(got[1]) == bits(want[1]),
                          f"{g}: {got} != {want}")


# ---------------------------------------------------------------- histogram
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_histogram_counts_are_numpys(layout):
    g = data(np.float64, seed=3)
    a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
    cases = [dict(), dict(bins=7), dict(bins=5, range=(-3, 4)),
             dict(bins=[-30, -1, 0, 0.5, 2, 40]), dict(bins=4, density=True),
             dict(bins=[-5.0, 0, 1, 9], density=True)]
    for kw in cases:
        got, want = np.histogram(a, **kw), np.histogram(g, **kw)
        assert_bits(got[0], want[0], f"counts {kw}")
        assert_bits(got[1], want[1], f"edges {kw}")
    gi = data(np.int16, seed=4)
    ai = dap.DistArray.from_global(gi, comm=comm, **LAYOUTS[layout])
    for kw in (dict(), dict(bins=3), dict(bins=[0, 2, 5, 100])):
        assert_bits(np.histogram(ai, **kw)[0], np.histogram(gi, **kw)[0], f"int16 {kw}")
        assert_bits(np.histogram(ai, **kw)[1], np.histogram(gi, **kw)[1], f"int16 edges {kw}")


def test_weighted_histogram_within_rounding():
    g = data(np.float64, seed=5)
    w = np.abs(data(np.float64, seed=6)) + 0.1
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=GRID)
    wa = dap.DistArray.from_global(w, comm=comm, grid_shape=GRID)
    for kw in (dict(bins=6), dict(bins=[-20, 0, 3, 30], density=True)):
        got, want = np.histogram(a, weights=wa, **kw), np.histogram(g, weights=w, **kw)
        ok = got[0].dtype == want[0].dtype and np.allclose(got[0], want[0], rtol=1e-12, atol=0)
        collective_assert(ok, f"{kw}: {got[0]} vs {want[0]}")
        assert_bits(got[1], want[1], f"weighted edges {kw}")
        everyone = comm.allgather(bits(got[0]))
        collective_assert(all(e == everyone[0] for e in everyone), "ranks differ")


def test_histogram_errors_and_empty():
    empty = dap.DistArray.from_global(np.zeros(0), comm=comm)
    assert_bits(np.histogram(empty)[0], np.histogram(np.zeros(0))[0], "empty counts")
    assert_bits(np.histogram(empty)[1], np.histogram(np.zeros(0))[1], "empty edges")
    g = np.arange(12.0)
    g[5] = np.nan
    a = dap.DistArray.from_global(g, comm=comm)
    kind, msg = full_outcome(np.histogram, a)
    collective_assert(kind == "exc" and "autodetected range of [nan, nan]" in msg, msg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_bits(np.histogram(a, bins=3, range=(0, 11))[0],
                    np.histogram(g, bins=3, range=(0, 11))[0], "NaN outside the bins")
    for call, expect in [(lambda: np.histogram(a, bins="auto"), "autodetected range of [nan, nan]"),
                         (lambda: np.histogram(a, bins="bogus"), "not a valid estimator"),
                         (lambda: np.histogram(a, bins=[3, 1]), "monotonically"),
                         (lambda: np.histogram(a, weights=np.ones(12)), "weights must be"),
                         (lambda: np.histogram(a, range=(5, 1)), "max must be larger")]:
        kind, msg = full_outcome(call)
        collective_assert(kind == "exc" and expect in msg, msg)


# ---------------------------------------------------------------- scans
@pytest.mark.parametrize("layout", ["block-padded", "rows"])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_equal_numpy(layout, name):
    f = getattr(np, name)
    gi = (data(np.int64, seed=7) % 5 + 1) * np.where(np.arange(91).reshape(13, 7) % 3, 1, -1)
    gf = 1 + data(np.float64, seed=8) / 100
    for g in ((gi, gf) if name == "cumprod" else (gi.astype(np.int32), gi > 2, gf)):
        a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
        for axis in (None, 0, 1):
            r = f(a, axis=axis)
            want = f(g, axis=axis)
            got = global_of(r)
            whole = axis is not None and a.distribution.grid_shape[axis] == 1
            if g.dtype.kind != "f" or whole:
                assert_bits(got, want, f"{name} {g.dtype} axis={axis}")   # exact
            else:
                ok = got.dtype == want.dtype and np.allclose(got, want, rtol=1e-12, atol=0)
                collective_assert(ok, f"{name} axis={axis}: {got} vs {want}")
            if axis is None:
                target = Distribution.from_shape((g.size,), "b", nprocs=N)
                collective_assert(r.distribution == target, f"{r.distribution}")
            else:
                collective_assert(r.distribution == a.distribution, f"{r.distribution}")
    a = dap.DistArray.from_global(gi, comm=comm, **LAYOUTS[layout])
    r = f(a, axis=1, dtype=np.int8)
    assert_bits(global_of(r), f(gi, axis=1, dtype=np.int8), "dtype=int8 wraps as NumPy's")


@pytest.mark.parametrize("layout", [dict(grid_shape=GRID, padding=[1, 1]),
                                    dict(dist=("c", "b"), grid_shape=GRID),
                                    dict(dist=("b", "c"), grid_shape=(1, N)),
                                    dict(grid_shape=(N, 1))], ids=["block", "cyclic-rows",
                                                                   "cyclic-columns", "rows"])
def test_flattened_scans_move_every_layout(layout):
    # axis=None: pieces of C-order runs, or (index, value) records for a cyclic last axis
    g = (data(np.int64, seed=13) % 7 - 3).reshape(13, 7)
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    assert_bits(global_of(np.cumsum(a)), np.cumsum(g), "cumsum")
    assert_bits(global_of(np.cumprod(a, dtype=np.int8)), np.cumprod(g, dtype=np.int8), "cumprod")


@pytest.mark.parametrize("layout", [dict(dist="c"), dict(dist=("c", "b"), grid_shape=GRID),
                                    dict(dist=("b", "c"), grid_shape=(1, N))],
                         ids=["cyclic-1d", "cyclic-rows", "cyclic-columns"])
def test_scans_along_a_cyclic_axis(layout):
    """Along a cyclic axis (was: DapError): block-distributed first on the
    same grid, then scanned; integers NumPy's bits, floats to 1e-12."""
    g = (data(np.int64, seed=14) % 7 - 3).reshape(13, 7)
    if len(layout.get("dist", "c")) == 1:
        g = g.ravel()
    gf = 1 + g / 100.0
    a = dap.DistArray.from_global(g, comm=comm, **layout)
    f = dap.DistArray.from_global(gf, comm=comm, **layout)
    for axis in range(g.ndim):
        r = np.cumsum(a, axis=axis)
        assert_bits(global_of(r), np.cumsum(g, axis=axis), f"cumsum axis {axis}")
        moved = a.distribution.grid_shape[axis] != 1 and a.distribution.dist[axis] == "c"
        collective_assert(all(d == "b" for d in r.distribution.dist) if moved else
                          r.distribution == a.distribution, f"{r.distribution.dist}")
        got, want = global_of(np.cumprod(f, axis=axis)), np.cumprod(gf, axis=axis)
        collective_assert(np.allclose(got, want, rtol=1e-12, atol=0), f"cumprod axis {axis}")


def test_scan_errors_on_every_rank():
    a = dap.DistArray.from_global(np.arange(12.0), comm=comm, dist="c")
    kind, msg = full_outcome(np.cumsum, a, out=a)
    collective_assert(kind == "exc" and "out=" in msg, msg)
    kind, msg = full_outcome(np.cumprod, a, axis=3)
    collective_assert(kind == "exc" and "AxisError" in msg, msg)


# ---------------------------------------------------------------- memory
@pytest.mark.skipif(N < 4, reason="the memory bound is checked at 4 ranks or more")
def test_no_rank_comes_near_the_global_size():
    n = 120_000
    a = dap.DistArray.from_shape((n,), comm=comm)
    a.owned[...] = np.random.default_rng(comm.rank).standard_normal(a.owned.shape)
    b = dap.DistArray.from_shape((400, n // 400), comm=comm)     # a block-block grid
    b.owned[...] = np.random.default_rng(comm.rank).standard_normal(b.owned.shape)
    # a rank's peak: about 2 (1-D) to 3 (2-D flattened) times its part
    # np.histogram counts as NumPy's call does: equal-width bins in NumPy's
    # blocks of 65,536 values (a few arrays of a block: about 2 MB at most),
    # so it is measured on parts larger than a block
    big = dap.DistArray.from_shape((150_000 * N,), comm=comm)
    big.owned[...] = np.random.default_rng(comm.rank).standard_normal(big.owned.shape)
    for name, fn, x, parts in [("percentile", lambda y: np.percentile(y, [5, 50]), a, 3.0),
                               ("median", np.median, a, 3.0), ("histogram", np.histogram, big, 2.0),
                               ("histogram, edges", lambda y: np.histogram(y, bins=[-1, 0, 2]), a, 3.0),
                               ("cumsum", np.cumsum, a, 3.0), ("cumsum 2-D", np.cumsum, b, 3.6)]:
        fn(x)
        tracemalloc.start()
        fn(x)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        ratio = peak / (x.size * 8)
        collective_assert(ratio < parts / N, f"{name}: peak {ratio:.2f} x the global array")


@pytest.mark.parametrize("module, name, call", [
    ("histograms", "_extremes", lambda a: np.histogram(a)),
    ("scans", "axis_of", lambda a: np.cumsum(a, axis=0)),
    ("quantiles", "normalize_axis_tuple", lambda a: np.median(a, axis=1)),
], ids=["histogram", "cumsum", "median"])
def test_a_rank_that_fails_makes_every_rank_raise(monkeypatch, module, name, call):
    import importlib
    mod = importlib.import_module(f"nclx.dap.functions.{module}")
    real = getattr(mod, name)

    def flaky(*args):
        if comm.rank == N - 1:
            raise MemoryError("no room")
        return real(*args)
    monkeypatch.setattr(mod, name, flaky)
    a = dap.DistArray.from_global(np.arange(12.0).reshape(6, 2), comm=comm, grid_shape=(N, 1))
    kind, msg = full_outcome(call, a)
    collective_assert(kind == "exc" and f"rank {N - 1}" in msg and "MemoryError" in msg, msg)


@pytest.mark.parametrize("call", [
    lambda a, r: np.sort(a, axis=r % 2),
    lambda a, r: np.percentile(a, 10 + r),
    lambda a, r: np.median(a, keepdims=r == 0),
    lambda a, r: np.histogram(a, bins=3 + r),
    lambda a, r: np.unique(a, return_counts=r == 0),
    lambda a, r: np.cumsum(a, axis=r % 2),
], ids=["sort", "percentile", "median", "histogram", "unique", "cumsum"])
def test_ranks_passing_different_arguments_raise_on_every_rank(call):
    # a collective call with different arguments on different ranks: raised, never a hang
    a = dap.DistArray.from_global(np.arange(24.0).reshape(6, 4), comm=comm, grid_shape=(N, 1))
    kind, msg = full_outcome(call, a, comm.rank)
    if N == 1:
        collective_assert(kind == "ok", msg)
    else:
        collective_assert(kind == "exc" and "disagree" in msg, msg)
