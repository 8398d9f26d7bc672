"""Defects found by the ninth review round of nclx.dap (each test failed on
the code before its fix)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, result_bits

comm = MPI.COMM_WORLD


_CASES = {
    "complex128": lambda: (np.arange(4 * N + 1) * (0.3 - 1.7j)).astype(np.complex128),
    "complex64 big-endian": lambda: (np.arange(4 * N + 1) * (1.1 + 0.2j)).astype(">c8"),
    "timedelta64": lambda: np.arange(4 * N + 1).astype("m8[s]"),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("fn", [np.var, np.std])
def test_var_squares_deviations_as_numpy(name, fn):
    """Found by review: var squared every non-complex deviation with
    multiply(x, x): timedelta64 raised multiply's UFuncTypeError where NumPy
    raises square's TypeError (its text too); complex squares are NumPy's
    re**2 + im**2."""
    g = _CASES[name]()
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        got, want = result_bits(fn, x), result_bits(fn, g)
        if want[0] == "ok" and got[:4] == want[:4]:
            # the sum across ranks is reassociated: 1e-12 relative (docs/dap.md)
            ok = np.allclose(np.frombuffer(got[4], got[2]), np.frombuffer(want[4], want[2]),
                             rtol=1e-12 if got[2][-1] == "8" else 1e-6)
        else:
            ok = got == want
        collective_assert(ok, f"{dist}: {got} != NumPy's {want}")


_NORM_ARRAYS = {
    "f8 with nan/inf/-0": lambda: np.array([3.5, -0.0, np.nan, 1.0, np.inf, 0.0, -2.0, 7.25,
                                            1.5, -3.0, 2.0, 0.5] * N)[:4 * N + 1],
    "i8": lambda: (np.arange(4 * N + 2) * 37 % 11 - 5).astype(np.int64),
    "c16": lambda: np.arange(4 * N + 1) * (0.5 - 1j),
    "f4 2-D": lambda: np.arange(3 * N * 4, dtype=np.float32).reshape(3 * N, 4) / 7 - 1,
    "i2 2-D": lambda: (np.arange(3 * N * 5, dtype=np.int16).reshape(3 * N, 5) * 13 % 17 - 8),
    "c8 2-D": lambda: (np.arange(3 * N * 4).reshape(3 * N, 4) * (0.5 + 0.25j)).astype("c8"),
    "f8 3-D": lambda: np.arange(2 * N * 3 * 4, dtype=float).reshape(2 * N, 3, 4) - 7.5,
    "empty 2-D": lambda: np.zeros((0, 3)),
}


def _close(got, want):
    """Equal outcomes; floats to 1e-12 relative (float32: 2e-6), the sums
    across ranks being reassociated (docs/dap.md)."""
    if got[0] != "ok" or want[0] != "ok" or got[1:4] != want[1:4]:
        return got == want
    g, w = np.frombuffer(got[4], got[2]), np.frombuffer(want[4], want[2])
    single = np.dtype(got[2]).itemsize < (16 if got[2][1] == "c" else 8)
    return np.allclose(g, w, rtol=2e-6 if single else 1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(_NORM_ARRAYS))
def test_norm_along_axes_is_numpys(name):
    """Found by review: np.linalg.norm of a DistArray refused every axis=
    (DapError "axis=None only") and every matrix ord but 'fro' with
    axis=None, where NumPy computes vector norms along an axis and the
    matrix norms 1/-1/inf/-inf/'fro' over two axes (the singular-value ones,
    2/-2/'nuc', stay refused with a DapError saying so, but of empty
    matrices: NumPy's max/min/sum of no singular values)."""
    g = _NORM_ARRAYS[name]()
    nd = g.ndim
    axes = [None] + list(range(-nd, nd)) + [(a,) for a in range(nd)] + ["x"]
    if nd >= 2:
        axes += [(0, 1), (1, 0), (-1, 0), (0, 0)]
    if nd == 3:
        axes += [(0, 2), (2, 1), (0, 1, 2)]
    ords = [None, 1, -1, 2, -2, np.inf, -np.inf, 0, 3, 0.5, "fro", "nuc", "bogus"]
    failures = []
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        for axis in axes:
            for o in ords:
                for kd in (False, True):
                    want = result_bits(np.linalg.norm, g, ord=o, axis=axis, keepdims=kd)
                    got = result_bits(np.linalg.norm, x, ord=o, axis=axis, keepdims=kd)
                    svd = o in (2, -2, "nuc") and want[0] == "ok" and g.size and \
                        (nd > 1 and (axis is None or (isinstance(axis, tuple) and len(axis) == 2)))
                    if svd:
                        ok = got[0] == "DapError" and "singular values" in got[1]
                    else:
                        ok = _close(got, want)
                    if not ok:
                        failures.append(f"{dist} axis={axis} ord={o} keepdims={kd}: "
                                        f"{str(got)[:120]} != NumPy's {str(want)[:120]}")
    collective_assert(not failures, "\n".join(failures[:6]) + f"\n({len(failures)} in all)")


_Q_ARRAYS = {
    "f8 3-D with a NaN": lambda: np.where(np.arange(2 * N * 3 * 5).reshape(2 * N, 3, 5) == 7,
                                          np.nan, np.arange(2 * N * 3 * 5).reshape(
                                              2 * N, 3, 5) * 7 % 11 - 4.5),
    "i4 3-D": lambda: (np.arange(3 * N * 2 * 4, dtype=np.int32).reshape(3 * N, 2, 4) * 5 % 13),
    "f4 2-D": lambda: np.arange(3 * N * 4, dtype=np.float32).reshape(3 * N, 4) / 7 - 1,
    "empty 3-D": lambda: np.zeros((2 * N, 0, 3)),
}


@pytest.mark.parametrize("name", sorted(_Q_ARRAYS))
@pytest.mark.parametrize("fn,q", [(np.median, None), (np.nanmedian, None), (np.quantile, 0.3),
                                  (np.nanquantile, [0.2, 0.9]),
                                  (np.percentile, [[10, 50], [70, 99]]), (np.nanpercentile, 40)])
def test_order_statistics_over_a_tuple_of_axes_are_numpys(name, fn, q):
    """Found by review: the order statistics refused a tuple of axes
    (DapError) where NumPy merges them (its _ureduce), and the nan-forms of
    an empty array gave q's dimensions where NumPy returns np.nanmean of it."""
    import itertools
    g = _Q_ARRAYS[name]()
    nd = g.ndim
    axes = [None, 0, -1]
    for r in range(0, nd + 1):
        axes += list(itertools.combinations(range(nd), r))
    failures = []
    args = () if q is None else (q,)
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        for axis in axes:
            for kd in (False, True):
                for kw in ({},) if q is None else ({"method": "linear"}, {"method": "lower"},
                                                   {"method": "inverted_cdf"}):
                    want = result_bits(fn, g, *args, axis=axis, keepdims=kd, **kw)
                    got = result_bits(fn, x, *args, axis=axis, keepdims=kd, **kw)
                    if got != want:
                        failures.append(f"{dist} axis={axis} keepdims={kd} {kw}: "
                                        f"{str(got)[:150]} != NumPy's {str(want)[:150]}")
    collective_assert(not failures, "\n".join(failures[:6]) + f"\n({len(failures)} in all)")


def test_a_0d_reduction_with_keepdims_is_a_scalar_as_numpys():
    """Found by review: np.sum(x, keepdims=True) of a 0-d DistArray gave a
    0-d array where NumPy gives a scalar (and np.median keepdims an array)."""
    if N > 1:
        pytest.skip("a 0-d DistArray lives on one process")
    g = np.array(2.5)
    x = dap.DistArray.from_global(g, comm=comm)
    for fn in (np.sum, np.prod, np.max, np.count_nonzero, np.any, np.median, np.linalg.norm):
        kw = {"axis": None} if fn is np.count_nonzero else {}
        want, got = fn(g, keepdims=True, **kw), fn(x, keepdims=True, **kw)
        assert type(got) is type(want) and np.asarray(got).tobytes() == \
            np.asarray(want).tobytes(), (fn, got, want)


@pytest.mark.parametrize("fn", [np.quantile, np.nanquantile, np.percentile])
def test_weighted_order_statistics_over_a_tuple_of_axes_are_numpys(fn):
    """Weights move with the array through the merge of the reduced axes."""
    import itertools
    g = (np.arange(3 * N * 2 * 4, dtype=float).reshape(3 * N, 2, 4) * 5 % 13) - 2.5
    g[1, 1, 1] = np.nan
    wg = (np.arange(g.size).reshape(g.shape) % 4) + 0.5
    q = [25, 50, 90] if fn is np.percentile else [0.25, 0.5, 0.9]
    failures = []
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        w = dap.DistArray.from_global(wg, comm=comm, dist=dist)
        for r in (2, 3):
            for axis in itertools.combinations(range(3), r):
                for kd in (False, True):
                    want = result_bits(fn, g, q, axis=axis, keepdims=kd, method="inverted_cdf",
                                    weights=wg)
                    got = result_bits(fn, x, q, axis=axis, keepdims=kd, method="inverted_cdf",
                                   weights=w)
                    if got != want:
                        failures.append(f"{dist} axis={axis} keepdims={kd}: {str(got)[:150]} "
                                        f"!= NumPy's {str(want)[:150]}")
    collective_assert(not failures, "\n".join(failures[:6]) + f"\n({len(failures)} in all)")


# ---------------------------------------------- found reviewing the fixes above
@pytest.mark.parametrize("fn", [np.nanvar, np.nanstd])
@pytest.mark.parametrize("src,dtype", [(np.float32, np.float64), (np.float16, np.float64),
                                       (np.complex64, np.complex128)])
def test_nanvar_with_a_wider_dtype_rounds_deviations_as_numpy(fn, src, dtype):
    """NumPy's nanvar subtracts the mean into the array itself (its dtype):
    nclx kept the deviations in the wider dtype (2e-8 relative apart)."""
    g = (np.random.default_rng(3).standard_normal((3 * N + 2, 4)) * 3).astype(src)
    if g.dtype.kind == "c":
        g = g + 1j * g[::-1]
    g[1, 1] = np.nan
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        for axis in (None, 0, 1):
            with np.errstate(all="ignore"):
                want = np.asarray(fn(g, axis=axis, dtype=dtype))
                got = fn(x, axis=axis, dtype=dtype)
            got = np.asarray(got.gather(root=None) if isinstance(got, dap.DistArray) else got)
            ok = got.dtype == want.dtype and np.allclose(got, want, rtol=1e-12, atol=0)
            collective_assert(ok, f"{dist} axis={axis}: {got} != NumPy's {want}")


def test_nanvar_squares_by_multiply_as_numpy():
    """NumPy's nanvar squares with multiply: its overflow says so (nclx's
    said 'square' after var's squaring by type)."""
    g = np.where(np.arange(4 * N) % 2 == 0, 1e200, -1e200)
    g[0] = np.nan
    x = dap.DistArray.from_global(g, comm=comm)
    with np.errstate(over="raise"):
        kind, msg = result_bits(np.nanvar, x)[:2]
    collective_assert("FloatingPointError" in kind and "overflow encountered in multiply" in msg,
                      f"{kind}: {msg}")


def test_weights_of_another_shape_over_a_tuple_of_axes_raise_numpys_error():
    g = np.arange(3.0 * N * 4 * 5).reshape(3 * N, 4, 5)
    x = dap.DistArray.from_global(g, comm=comm)
    w = dap.DistArray.from_global(np.ones((2, 2)), comm=comm)
    kind, msg = result_bits(np.quantile, x, 0.5, axis=(0, 2), method="inverted_cdf", weights=w)[:2]
    collective_assert(issubclass(getattr(dap, kind, None) or getattr(__import__("builtins"),
                                                                     kind, Exception),
                                 ValueError) and "Shape of weights must be consistent" in msg,
                      f"{kind}: {msg}")


@pytest.mark.parametrize("shape", [(-1, 6), (-1, 0), (N, -1, 6), (2, 3.0), (-1, -1)])
def test_reshape_errors_are_numpys(shape):
    """NumPy leaves leading unknown dimensions out of its text and refuses
    float sizes (nclx printed 'newaxis' and took 3.0 as 3)."""
    g = np.arange(6.0 * N + 1)                  # no multiple of 6: every shape fails
    x = dap.DistArray.from_global(g, comm=comm)
    want, got = result_bits(np.reshape, g, shape), result_bits(np.reshape, x, shape)
    collective_assert(want[0] != "ok" and got[:2] == want[:2], f"{got[:2]} != NumPy's {want[:2]}")


@pytest.mark.parametrize("fn", [np.median, np.nanmedian, np.quantile, np.nanpercentile])
def test_order_statistics_take_a_list_or_array_of_axes(fn):
    g = np.arange(2.0 * N * 4 * 5).reshape(2 * N, 4, 5) % 7
    x = dap.DistArray.from_global(g, comm=comm)
    args = () if fn in (np.median, np.nanmedian) else (40 if fn is np.nanpercentile else 0.4,)
    for axis in ([0, 1], np.array([0, 2]), [2], [-1, 0]):
        want, got = result_bits(fn, g, *args, axis=axis), result_bits(fn, x, *args, axis=axis)
        collective_assert(got == want, f"axis={axis!r}: {got[:3]} != NumPy's {want[:3]}")


@pytest.mark.parametrize("call", [lambda m: np.sum(m, axis=1.0),
                                  lambda m: np.var(m, axis=(1.0, 0)),
                                  lambda m: np.linalg.norm(m, axis=(1.0, 0)),
                                  lambda m: np.median(m, axis=1.0)])
def test_a_float_axis_is_numpys_type_error(call):
    g = np.arange(3.0 * N * 4).reshape(3 * N, 4)
    x = dap.DistArray.from_global(g, comm=comm)
    want, got = result_bits(call, g), result_bits(call, x)
    collective_assert(want[0] == "TypeError" and "TypeError" in got[0] and
                      got[1].endswith(want[1]), f"{got[:2]} != NumPy's {want[:2]}")
