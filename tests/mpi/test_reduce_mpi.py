"""Reductions of DistArrays across ranks (runs under mpiexec -n 1..6):
values equal NumPy's on the global array, axis reductions return
DistArrays over the remaining grid dimensions, float sums are the same
bits on every rank and every run; where=, initial=, dtype=, keepdims= and
out= as NumPy's; empty blocks contribute the reduction's start value; NaN
propagates; only associative operations combine; communication padding is
never counted."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import (N, as_global, collective_assert, counted_mask, global_of, outcome,
                         same_bits_everywhere)
from nclx.dap.distribution import dims_create

comm = MPI.COMM_WORLD


def everyone_same(value):
    vals = comm.allgather(np.asarray(value).tobytes())
    return all(v == vals[0] for v in vals)


GRIDS = {1: [(1, 1)], 2: [(2, 1), (1, 2)], 3: [(3, 1), (1, 3)], 4: [(2, 2), (4, 1)],
         5: [(5, 1)], 6: [(2, 3), (3, 2)]}


@pytest.mark.parametrize("grid", GRIDS.get(comm.size, [(comm.size, 1)]), ids=str)
@pytest.mark.parametrize("padding", [(0, 0), (1, 2)], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "mean"])
def test_full_and_axis_reductions_equal_numpy(grid, padding, name):
    rng = np.random.default_rng(3)
    g = rng.integers(1, 4, size=(13, 11)).astype(np.float64)
    if name in ("any", "all"):
        g = g > 1
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=list(padding),
                                  periodic=[True, False])
    f = getattr(np, name)
    full = f(a)
    assert np.allclose(full, f(g), rtol=1e-12) and everyone_same(full)
    for axis in (0, 1, -1):
        r = f(a, axis=axis)
        assert isinstance(r, dap.DistArray)
        kept = 1 - (axis % 2)
        assert r.shape == (g.shape[kept],)
        got = global_of(r)
        assert np.allclose(got, f(g, axis=axis), rtol=1e-12)
    rk = a.sum(axis=0, keepdims=True)
    assert rk.shape == (1, 11) and np.allclose(global_of(rk), g.sum(axis=0, keepdims=True))
    assert np.allclose(np.add.reduce(a, axis=(0, 1)), g.sum())


def test_communication_padding_is_never_counted():
    g = np.arange(40.0 * N).reshape(8 * N, 5)      # blocks of >= 2 rows: padding 2 fits
    a = dap.DistArray.from_global(g, comm=comm, padding=[2, 1], periodic=[True, True])
    block = np.asarray(a.local)
    owned = a.distribution.owned_slices(comm.rank)
    mask = np.ones(block.shape, bool)
    mask[owned] = False
    block[mask] = 1e9                 # garbage in communication padding
    assert a.sum() == g.sum() and a.max() == g.max()
    assert np.allclose(global_of(a.sum(axis=1)), g.sum(axis=1))


def test_float_sums_are_the_same_bits_everywhere_and_every_time():
    rng = np.random.default_rng(11)
    g = rng.standard_normal((301, 7)) * 10.0 ** rng.integers(-8, 8, size=(301, 7))
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0])
    first = a.sum()
    for _ in range(5):
        again = a.sum()
        assert np.asarray(again).tobytes() == np.asarray(first).tobytes()
    assert everyone_same(first)
    col = a.sum(axis=0)
    assert everyone_same(global_of(col))


def test_initial_where_dtype_and_empty():
    g = np.arange(12.0).reshape(4, 3)
    a = dap.DistArray.from_global(g, comm=comm)
    assert a.sum(initial=100.0) == g.sum(initial=100.0)
    assert a.max(initial=50.0) == 50.0
    assert a.sum(dtype=np.int64) == int(g.sum())
    w = a > 4
    assert a.sum(where=w) == g.sum(where=g > 4)
    e = dap.DistArray.from_shape((0, 3), comm=comm)
    assert e.sum() == 0.0
    with pytest.raises(ValueError, match="identity"):
        e.max()
    nan = g.copy()
    nan[2, 1] = np.nan
    n = dap.DistArray.from_global(nan, comm=comm)
    assert np.isnan(n.max()) and np.isnan(n.min())


def grids3():
    g = dims_create(N, 3)
    return sorted({g, g[::-1]})

RED3 = [(g, name) for g in grids3() for name in ("sum", "prod", "max", "min", "any", "all",
                                                    "mean")]

def _data(name, shape, seed=5):
    rng = np.random.default_rng(seed)
    ints = rng.integers(-50, 50, size=shape)
    floats = rng.uniform(0.5, 1.5, size=shape)
    if name in ("any", "all"):
        return [ints > -30, floats > 0.6]
    if name == "prod":
        return [np.where(ints > 0, 1, -1).astype(np.int64), floats]
    if name == "sum":
        return [ints, floats, ints > 0, ints.astype(np.int8)]
    if name == "mean":
        return [ints, floats, ints > 0]
    return [ints, floats, ints.astype(np.uint8)]

@pytest.mark.parametrize("grid,name", RED3, ids=[f"{'x'.join(map(str, g))}-{n}" for g, n in RED3])
def test_3d_reductions_with_keepdims_equal_numpy(grid, name):
    """Integer and boolean results bit for bit (dtype included); float
    results within 1e-12 relative and the same bits on every rank."""
    shape = (7, 5, 6)
    bad = []
    for g in _data(name, shape):
        a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 0, 1],
                                      periodic=[True, False, False])
        for axis in (None, 1, -1, (0, 2), (0, 1, 2)):
            for keepdims in (False, True):
                want = getattr(g, name)(axis=axis, keepdims=keepdims)
                kind, got = outcome(lambda: as_global(getattr(a, name)(axis=axis,
                                                                       keepdims=keepdims)))
                tag = f"{g.dtype} {name}(axis={axis}, keepdims={keepdims})"
                if kind == "exc":
                    bad.append(f"{tag} raised {got}")
                    continue
                got, want = np.asarray(got), np.asarray(want)
                if got.dtype != want.dtype or got.shape != want.shape:
                    bad.append(f"{tag}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
                elif want.dtype.kind == "f":
                    if not np.allclose(got, want, rtol=1e-12, atol=0):
                        bad.append(f"{tag}: {got} != {want}")
                elif got.tobytes() != want.tobytes():
                    bad.append(f"{tag}: {got} != {want}")
                if not same_bits_everywhere(got):
                    bad.append(f"{tag}: not the same bits on every rank")
    collective_assert(not bad, "; ".join(bad[:6]))

def test_where_and_initial_on_several_ranks_and_axes():
    grid = dims_create(N, 3)
    rng = np.random.default_rng(9)
    g = rng.integers(-9, 10, size=(6, 5, 4))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 1, 0],
                                  periodic=[False, True, False])
    m = a > 0
    gm = g > 0
    cases = [
        ("sum where", lambda: a.sum(where=m), lambda: g.sum(where=gm)),
        ("sum initial", lambda: a.sum(initial=100), lambda: g.sum(initial=100)),
        ("sum axis 0 initial", lambda: a.sum(axis=0, initial=100), lambda: g.sum(axis=0, initial=100)),
        ("sum axis (0,2) where initial keepdims",
         lambda: a.sum(axis=(0, 2), where=m, initial=-7, keepdims=True),
         lambda: g.sum(axis=(0, 2), where=gm, initial=-7, keepdims=True)),
        ("add.reduce axis 1 where initial", lambda: np.add.reduce(a, axis=1, where=m, initial=3),
         lambda: np.add.reduce(g, axis=1, where=gm, initial=3)),
        ("prod axis (1,2) initial", lambda: (a % 2 + 1).prod(axis=(1, 2), initial=2),
         lambda: (g % 2 + 1).prod(axis=(1, 2), initial=2)),
        ("max where initial", lambda: a.max(where=m, initial=-100),
         lambda: g.max(where=gm, initial=-100)),
        ("min axis 2 initial", lambda: a.min(axis=2, initial=-3), lambda: g.min(axis=2, initial=-3)),
        ("max initial above all", lambda: a.max(initial=50), lambda: g.max(initial=50)),
        ("sum where=False initial", lambda: a.sum(where=False, initial=4),
         lambda: g.sum(where=False, initial=4)),
        ("any where", lambda: a.any(where=m), lambda: g.any(where=gm)),
    ]
    bad = []
    for name, f, w in cases:
        kind, got = outcome(lambda: as_global(f()))
        want = np.asarray(w())
        if kind == "exc" or np.asarray(got).dtype != want.dtype \
                or np.asarray(got).tobytes() != want.tobytes():
            bad.append(f"{name}: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_dtype_overflows_wrap_like_numpy():
    g = (np.arange(6 * N + 5, dtype=np.int64) * 37 + 90).reshape(-1, 1) * np.ones((1, 3), np.int64)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0])
    cases = [("sum int8", dict(dtype=np.int8)), ("sum uint8 axis 0", dict(axis=0, dtype=np.uint8)),
             ("sum int16", dict(dtype=np.int16))]
    bad = []
    for name, kw in cases:
        kind, got = outcome(lambda: as_global(a.sum(**kw)))
        want = np.asarray(g.sum(**kw))
        if kind == "exc" or got.dtype != want.dtype or got.tobytes() != want.tobytes():
            bad.append(f"{name}: {got!r} != {want!r}")
    kind, got = outcome(lambda: as_global(a.prod(dtype=np.int16)))
    want = np.asarray(g.prod(dtype=np.int16))
    if kind == "exc" or got.tobytes() != want.tobytes():
        bad.append(f"prod int16: {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_out_of_the_wrong_distribution_is_a_dap_error_on_every_rank():
    """sum(axis, out=) checks the distribution; mean(axis, out=) does not
    (defect: it writes the local block into any DistArray whose local shape
    happens to match, here a cyclic one, and returns it)."""
    g = np.arange(4.0 * 7 * max(N, 1)).reshape(4, 7 * max(N, 1))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(1, N))
    right = a.sum(axis=0) * 0.0
    kinds = {}
    for name in ("sum", "mean"):
        wrong = dap.DistArray.from_shape(right.shape, dist="c", comm=right.comm)
        same_local = wrong._block.shape == right._block.shape
        kind, value = outcome(getattr(a, name), axis=0, out=wrong)
        kinds[name] = (kind, value, same_local)
        # and the right distribution works, writing into out
        kind2, value2 = outcome(getattr(a, name), axis=0, out=right)
        want = getattr(g, name)(axis=0)
        ok2 = kind2 == "ok" and value2 is right and np.allclose(global_of(right), want, rtol=1e-12)
        collective_assert(ok2, f"{name}(axis=0, out=right): {kind2} {value2}")
    bad = [f"{name}(axis=0, out=<cyclic DistArray>) gave {k} {v}"
           for name, (k, v, _s) in kinds.items() if not (k == "exc" and "DapError" in v)]
    collective_assert(not bad, "; ".join(bad))

def test_float_sums_are_deterministic_across_runs_ranks_and_result_groups():
    grid = dims_create(N, 3)
    rng = np.random.default_rng(17)
    g = rng.standard_normal((9, 8, 7)) * 10.0 ** rng.integers(-6, 6, size=(9, 8, 7))
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=[1, 1, 1],
                                  periodic=[True, False, True])
    bad = []
    for axis in (None, 0, (1, 2), (0, 2)):
        first = as_global(a.sum(axis=axis))
        for _ in range(3):
            if as_global(a.sum(axis=axis)).tobytes() != first.tobytes():
                bad.append(f"sum(axis={axis}) changed between runs")
        if not same_bits_everywhere(first):
            bad.append(f"sum(axis={axis}) differs between ranks / result groups")
        scale = np.abs(g).sum(axis=axis)
        if not np.all(np.abs(first - g.sum(axis=axis)) <= 1e-12 * scale):
            bad.append(f"sum(axis={axis}) far from NumPy's")
    collective_assert(not bad, "; ".join(bad))

EMPTY = [((0,), None), ((0, 4), None), ((0, 4), 0), ((0, 4), 1), ((4, 0), 0), ((4, 0), 1),
         ((3, 0, 2), (0, 2))]

@pytest.mark.parametrize("shape,axis", EMPTY, ids=[f"{s}-{a}" for s, a in EMPTY])
def test_empty_global_arrays(shape, axis):
    bad = []
    for dt in (np.float64, np.int64, bool):
        g = np.zeros(shape, dt)
        a = dap.DistArray.from_global(g, comm=comm)
        for name in ("sum", "prod", "any", "all", "max", "min", "mean"):
            if dt is bool and name in ("max", "min"):
                continue            # test_bool_max_min_and_bitwise_reductions
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = outcome(lambda: np.asarray(getattr(g, name)(axis=axis)))
                kind, got = outcome(lambda: as_global(getattr(a, name)(axis=axis)))
            if want[0] == "exc":
                if kind != "exc" or want[1].split(":")[0] != got.split(":")[0]:
                    bad.append(f"{dt.__name__} {name}: NumPy raised {want[1]}, got {kind} {got}")
                continue
            w = want[1]
            if kind == "exc":
                bad.append(f"{dt.__name__} {name}: raised {got}")
            elif got.dtype != w.dtype or got.shape != w.shape or \
                    not np.array_equal(got, w, equal_nan=w.dtype.kind == "f"):
                bad.append(f"{dt.__name__} {name}: {got!r} != {w!r}")
    collective_assert(not bad, "; ".join(bad[:6]))

def test_nan_on_one_rank_propagates_everywhere():
    g = np.arange(5.0 * N + 3)
    g[-1] = np.nan                     # on the last rank only
    a = dap.DistArray.from_global(g, comm=comm)
    res = [a.sum(), a.max(), a.min(), a.prod(), a.mean()]
    collective_assert(all(np.isnan(r) for r in res), f"{res}")
    b = dap.DistArray.from_global(np.where(np.isnan(g), 1.0, g), comm=comm)
    collective_assert(b.max() == np.nanmax(g), f"{b.max()}")

def test_bool_max_min_and_bitwise_reductions():
    """Defect: boolean maximum/minimum/bitwise_and/bitwise_or combine with
    MPI.MAX/MIN/BAND/BOR on MPI.C_BOOL, which MPI does not define for a
    logical type ('Invalid MPI_Op' on every rank with >= 2 ranks)."""
    g = np.array([True, False, True, True, False] * N)
    a = dap.DistArray.from_global(g, comm=comm)
    cases = [("max", lambda x: x.max()), ("min", lambda x: x.min()),
             ("max axis 0", lambda x: np.maximum.reduce(x, axis=0)),
             ("bitwise_and", lambda x: np.bitwise_and.reduce(x, axis=None)),
             ("bitwise_or", lambda x: np.bitwise_or.reduce(x, axis=None))]
    bad = []
    for name, f in cases:
        kind, got = outcome(lambda: as_global(f(a)))
        want = np.asarray(f(g))
        if kind == "exc" or got.dtype != want.dtype or got.tobytes() != want.tobytes():
            bad.append(f"{name}: {kind} {got!r} != {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_non_associative_ufunc_reduce_is_exact_or_refused():
    """Defect: np.subtract.reduce (and divide, power, ...) of a DistArray
    reduces each rank's block then combines the partial results with the
    same ufunc in a tree -- a silently wrong answer with >= 2 ranks
    (a0 - a1 - (b0 - b1) != a0 - a1 - b0 - b1).  Either NumPy's value or a
    DapError naming the ufunc."""
    g = np.arange(1, 3 * N + 2, dtype=np.int64)
    a = dap.DistArray.from_global(g, comm=comm)
    bad = []
    for uf in (np.subtract, np.floor_divide):
        kind, got = outcome(uf.reduce, a, axis=None)
        want = uf.reduce(g)
        if not ((kind == "exc" and "DapError" in got) or (kind == "ok" and got == want)):
            bad.append(f"{uf.__name__}.reduce: {kind} {got!r}, NumPy {want!r}")
    collective_assert(not bad, "; ".join(bad))

def test_garbage_in_communication_padding_does_not_affect_axis_reductions():
    """Defect: an axis reduction reduces the whole local extent along the kept
    axes, communication padding included (reduce.py _counted), so stale
    values there raise FloatingPointError under np.errstate(over='raise')
    although the global array's reduction is finite (every rank has padding
    here: the dimension is periodic)."""
    g = np.arange(6.0 * N * 4).reshape(6 * N, 4)
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0], periodic=[True, False])
    a._block[~counted_mask(a)] = 1e308
    with np.errstate(over="raise"):
        kind, got = outcome(lambda: as_global(a.sum(axis=1)))
    ok = kind == "ok" and np.array_equal(got, g.sum(axis=1))
    collective_assert(ok, f"sum(axis=1): {kind} {got}")


@pytest.mark.parametrize("dtype", ["f8", "f4", "i2", "u1", "i8", "?"])
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_empty_blocks_contribute_the_start_value(dtype, name):
    """Two cells on N ranks (from 3 ranks on, some blocks are empty): an empty
    block contributes nclx.aware.start_value (the dtype's lowest value for a
    maximum, its highest for a minimum), so every rank gets NumPy's value and
    dtype, over every axis and along one."""
    uf = getattr(np, name)
    g = np.array([[5, 1]], dtype=dtype).T                 # shape (2, 1)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1))
    bad = []
    for axis, keepdims in ((None, False), (None, True), (0, False), (0, True)):
        want = np.asarray(uf.reduce(g, axis=axis, keepdims=keepdims))
        kind, got = outcome(lambda: np.asarray(as_global(uf.reduce(a, axis=axis,
                                                                   keepdims=keepdims))))
        if kind == "exc" or got.dtype != want.dtype or got.shape != want.shape \
                or got.tobytes() != want.tobytes():
            bad.append(f"{name}.reduce(axis={axis}, keepdims={keepdims}): {kind} {got!r} != "
                       f"{want!r}")
    collective_assert(not bad, "; ".join(bad))
