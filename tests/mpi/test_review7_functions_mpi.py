"""Defects a differential fuzz of the registered NumPy functions found (each
test failed before its fix): np.mean with a where= mask in another
distribution, np.nanmean of integers ignoring where=, nan-quantiles over an
empty axis returning uninitialised memory, nanmax/nanmin of an all-NaN
slice with an empty rank, nanvar/nanstd where ddof leaves no degrees of
freedom, np.average(keepdims, returned)'s weight sum, nan-quantiles whose
dtype differed on an empty rank, and errors NumPy raises that nclx did not."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank

comm = MPI.COMM_WORLD


def D(g, **kw):
    return dap.DistArray.from_global(g, comm=comm, **kw)


def _g(r):
    return r.gather(root=None) if isinstance(r, dap.DistArray) else r


def _same(got, want):
    got, want = np.asarray(_g(got)), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and \
        got.tobytes() == want.tobytes()


def _close(got, want):
    got, want = np.asarray(_g(got)), np.asarray(want)
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("grids", [((1, 0), (0, 1)), ((0, 1), (1, 0))])
def test_mean_with_a_mask_in_another_distribution(grids):
    g = np.arange(3.0 * 4 * N).reshape(3, 4 * N)
    m = (np.arange(g.size).reshape(g.shape) % 3) == 0
    m[0] = True
    shape_of = {(1, 0): (1, N), (0, 1): (N, 1)}
    a, w = D(g, grid_shape=shape_of[grids[0]]), D(m, grid_shape=shape_of[grids[1]])
    for axis in (0, 1, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.mean(g, axis=axis, where=m)
            got = np.mean(a, axis=axis, where=w)
        collective_assert(_close(got, want), f"axis={axis}: {_g(got)} vs {want}")


def test_nanmean_of_integers_honours_where():
    g = np.arange(1, 4 * N + 1)
    m = np.zeros(4 * N, bool)
    m[0] = True
    collective_assert(float(np.nanmean(D(g), where=D(m))) == 1.0, "where=mask")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.nanmean(D(g), where=False)
    collective_assert(np.isnan(got), f"where=False gave {got}")


@pytest.mark.parametrize("fn", [np.nanpercentile, np.nanquantile])
def test_nan_quantiles_over_an_empty_axis_are_nan(fn):
    g = np.zeros((3 * N, 0))
    q = [10, 20] if fn is np.nanpercentile else [0.1, 0.2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _g(fn(D(g), q, axis=1))
    collective_assert(np.asarray(got).size and np.isnan(got).all(), f"{got}")


def test_nanmax_and_nanmin_of_an_all_nan_slice_with_an_empty_rank():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.nanmax(D(np.array([np.nan])))
        col = _g(np.nanmin(D(np.array([[np.nan, 1.0]])), axis=0))
    collective_assert(np.isnan(got), f"nanmax {got}")
    collective_assert(np.isnan(col[0]) and col[1] == 1.0, f"nanmin {col}")


@pytest.mark.parametrize("fn", [np.nanvar, np.nanstd])
@pytest.mark.parametrize("g", [np.array([1.0, np.nan, 3.0]), np.array([1 + 2j, 3 - 1j])])
def test_nanvar_where_ddof_leaves_no_freedom_is_nan(fn, g):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(g, ddof=2)
        got = fn(D(g), ddof=2)
    collective_assert(_same(got, want), f"{got!r} vs {want!r}")


def test_average_keepdims_returned_keeps_the_weight_sums_shape():
    g = np.arange(4.0 * N)
    got = np.average(D(g), keepdims=True, returned=True)
    want = np.average(g, keepdims=True, returned=True)
    collective_assert(np.shape(_g(got[1])) == np.shape(want[1]) == (1,), f"{np.shape(got[1])}")


@pytest.mark.parametrize("method", ["lower", "higher", "nearest"])
def test_nan_quantiles_of_integers_have_one_dtype_on_every_rank(method):
    g = np.arange(6).reshape(3, 2)
    want = np.nanquantile(g, 0.5, axis=0, method=method)
    got = np.nanquantile(D(g), 0.5, axis=0, method=method)
    everyone = comm.allgather(str(got.dtype))
    collective_assert(len(set(everyone)) == 1, f"dtypes {everyone}")
    collective_assert(_same(got, want), f"{_g(got)} vs {want}")


def test_nanmean_of_floats_with_an_integer_dtype_raises_as_numpy_does():
    with pytest.raises(TypeError, match="dtype must be inexact"):
        np.nanmean(D(np.array([1.5, 2.5] * N)), dtype=np.int64)


@pytest.mark.parametrize("fn", [np.min, np.max, np.amin, np.amax, np.nanmin])
def test_a_where_mask_without_initial_raises_also_on_an_empty_array(fn):
    z = D(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        fn(z, axis=1, where=D(np.zeros((0, 3), bool)))


def test_estimated_bins_with_weights_raise_numpys_type_error():
    with pytest.raises(TypeError, match="not supported for weighted data"):
        np.histogram(D(np.arange(4.0 * N)), bins="auto", weights=D(np.ones(4 * N)))



@pytest.mark.parametrize("weights", ["numpy", "distarray"])
def test_weighted_quantiles_along_an_axis_with_an_empty_rank(weights):
    """Found by review of the dtype fix: its probe used this rank's (empty)
    weights, NumPy refused them on that rank alone, the others hung."""
    g = np.arange(10.0).reshape(2, 5)
    a = D(g, dist=("b", "n"))             # 3 ranks and more: a rank without rows
    w = np.ones(5) if weights == "numpy" else D(np.ones((2, 5)), dist=("b", "n"))
    wg = np.ones(5) if weights == "numpy" else np.ones((2, 5))
    want = np.quantile(g, 0.5, axis=1, method="inverted_cdf", weights=wg)
    got = np.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=w)
    collective_assert(_same(got, want), f"{_g(got)} vs {want}")


def test_nanmax_and_fmax_reduce_with_where_and_initial():
    g = np.array([[np.nan, 1.0, 2.0], [3.0, np.nan, 5.0]] * N)
    m = np.array([[True, False, True], [False, True, True]] * N)
    a, w = D(g, dist=("b", "n")), D(m, dist=("b", "n"))
    collective_assert(float(np.nanmax(a, where=w, initial=-5.0)) ==
                      float(np.nanmax(g, where=m, initial=-5.0)), "nanmax")
    got = _g(np.fmax.reduce(a, axis=0, where=w, initial=-5.0))
    collective_assert(_same(got, np.fmax.reduce(g, axis=0, where=m, initial=-5.0)), f"{got}")


@pytest.mark.parametrize("w", [np.True_, np.array(True), 1])
def test_a_zero_d_where_is_a_mask_for_reductions_without_identity(w):
    with pytest.raises(ValueError) as stock:
        np.max(np.arange(4.0), where=w)
    with pytest.raises(ValueError) as mine:
        np.max(D(np.arange(4.0 * N)), where=w)
    assert str(mine.value) == str(stock.value)



@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.float32])
def test_nan_quantiles_of_an_empty_axis_are_numpys_nan_for_every_dtype(dtype):
    g = np.zeros((3 * N, 0), dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.nanquantile(g, 0.5, axis=1, method="lower")
        got = _g(np.nanquantile(D(g, dist=("b", "n")), 0.5, axis=1, method="lower"))
    collective_assert(_same(got, want), f"{got!r} vs {want!r}")


def test_an_explicit_no_value_initial_is_no_initial():
    with pytest.raises(ValueError):
        np.maximum.reduce(D(np.arange(6.0 * N)), where=np.True_, initial=np._NoValue)
