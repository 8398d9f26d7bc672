"""DistArrays of one global shape but another distribution (padding, block
against cyclic, another grid) passed as weights, masks or second operands
are redistributed to the first operand's distribution, as a ufunc's
operands are (was: a DapError on every rank for the weights of np.quantile,
np.histogram and np.average, and for np.where / np.clip / np.isclose /
where= operands)."""
import warnings

import numpy as np
import pytest

import nclx.dap as dap
from mpi_helpers import N, collective_assert, comm, global_of
from nclx.dap.distribution import dims_create

GRID = dims_create(N, 2)
FIRST = dict(grid_shape=GRID, padding=[1, 1], periodic=[True, False])
OTHERS = {"no padding": dict(grid_shape=GRID), "padding (0, 2)": dict(grid_shape=GRID, padding=[0, 2]),
          "cyclic": dict(dist="c", grid_shape=GRID), "rows": dict(grid_shape=(N, 1)),
          "columns": dict(grid_shape=(1, N))}


def _bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def _same(got, want, what):
    ok = _bits(got) == _bits(want)
    collective_assert(ok, f"{what}: {got!r} != {want!r}")
    everyone = comm.allgather(_bits(got))
    collective_assert(all(e == everyone[0] for e in everyone), f"{what}: ranks differ")


def _close(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    ok = got.dtype == want.dtype and got.shape == want.shape and \
        np.allclose(got, want, rtol=1e-12, atol=0)
    collective_assert(ok, f"{what}: {got!r} != {want!r}")
    everyone = comm.allgather(_bits(got))
    collective_assert(all(e == everyone[0] for e in everyone), f"{what}: ranks differ")


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(3)
    g = rng.permutation(np.arange(91.0) - 40.5).reshape(13, 7)
    w = rng.integers(0, 5, g.shape).astype(np.float64)       # integer weights: exact sums
    return g, w


@pytest.mark.parametrize("other", OTHERS)
def test_weights_in_another_distribution(arrays, other):
    g, w = arrays
    a = dap.DistArray.from_global(g, comm=comm, **FIRST)
    wa = dap.DistArray.from_global(w, comm=comm, **OTHERS[other])
    for q in (0.3, [0.1, 0.5, 0.9]):
        _same(np.quantile(a, q, method="inverted_cdf", weights=wa),
              np.quantile(g, q, method="inverted_cdf", weights=w), f"quantile {q}")
    for axis in (0, 1):
        got = np.percentile(a, 40, axis=axis, method="inverted_cdf", weights=wa)
        _same(global_of(got), np.percentile(g, 40, axis=axis, method="inverted_cdf", weights=w),
              f"percentile axis {axis}")
    got, edges = np.histogram(a, bins=5, weights=wa)
    want, want_edges = np.histogram(g, bins=5, weights=w)
    _close(got, want, "histogram")
    _same(edges, want_edges, "histogram edges")
    _close(np.average(a, weights=wa), np.average(g, weights=w), "average")
    _close(global_of(np.average(a, axis=0, weights=wa)), np.average(g, axis=0, weights=w),
           "average axis 0")


@pytest.mark.parametrize("other", OTHERS)
def test_second_operands_and_masks_in_another_distribution(arrays, other):
    g, w = arrays
    a = dap.DistArray.from_global(g, comm=comm, **FIRST)
    b = dap.DistArray.from_global(w, comm=comm, **OTHERS[other])
    m = dap.DistArray.from_global(w > 1, comm=comm, **OTHERS[other])
    _same(global_of(np.where(m, a, b)), np.where(w > 1, g, w), "where")
    _same(global_of(np.clip(a, b, 30.0)), np.clip(g, w, 30.0), "clip")
    _same(global_of(np.isclose(a, b)), np.isclose(g, w), "isclose")
    _same(np.sum(a, where=m), np.sum(g, where=w > 1), "sum where=")
    _same(np.add.reduce(a, axis=0, where=m).gather(root=None) if N > 0 else None,
          np.add.reduce(g, axis=0, where=w > 1), "add.reduce where=")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _close(np.mean(a, where=m), np.mean(g, where=w > 1), "mean where=")
    # the result has the first DistArray operand's distribution
    for r, first in ((np.where(m, a, b), m), (np.where(a > 0, b, a), a), (np.clip(a, b, 30.0), a),
                     (np.clip(b, a, 30.0), b)):
        collective_assert(r.distribution == first.distribution, f"{r.distribution}")


def test_another_global_shape_is_refused_on_every_rank(arrays):
    g, w = arrays
    a = dap.DistArray.from_global(g, comm=comm, **FIRST)
    b = dap.DistArray.from_global(w.T.copy(), comm=comm)
    for call in (lambda: np.where(a > 0, a, b), lambda: np.histogram(a, weights=b)):
        with pytest.raises(dap.DapError) as info:
            call()
        msg = str(info.value)
        collective_assert("(13, 7)" in msg and "(7, 13)" in msg or "shape" in msg, msg)
    # np.average's weights of another shape: NumPy's own TypeError (axis None)
    with pytest.raises(TypeError, match="Axis must be specified when shapes"):
        np.average(a, weights=b)
