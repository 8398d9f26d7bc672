"""np.histogram / np.histogram_bin_edges of DistArrays with NumPy's bin
estimators ('auto', 'fd', 'stone', ...), complex weights, and np.result_type
of DistArrays (runs under mpiexec -n 1..6).  Before, every estimator and
every complex weight raised DapError where NumPy answers, and
np.histogram_bin_edges / np.result_type were not implemented."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, outcome
from nclx.dap.distribution import dims_create

comm = MPI.COMM_WORLD
ESTIMATORS = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]
#: their widths come from np.std / np.mean (per-rank partials combined)
ROUNDED = {"scott", "doane"}
GRID = dims_create(N, 2)
LAYOUTS = {"block-padded": dict(grid_shape=GRID, padding=[1, 1], periodic=[True, False]),
           "cyclic": dict(dist="c", grid_shape=GRID), "rows": dict(grid_shape=(N, 1)),
           "cols": dict(grid_shape=(1, N))}


def bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def same_everywhere(x, what):
    everyone = comm.allgather(bits(x))
    collective_assert(all(e == everyone[0] for e in everyone), f"{what}: ranks differ")


def drawn(dtype, seed, shape=(13, 7)):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind in "iu":
        g = np.abs(g) * 3
    return g.astype(dtype)


def numpy_and_dap(fn, g, a):
    with warnings.catch_warnings(record=True) as wn:
        warnings.simplefilter("always")
        want = outcome(fn, g)
    with warnings.catch_warnings(record=True) as wd:
        warnings.simplefilter("always")
        got = outcome(fn, a)
    return want, got, [str(w.message) for w in wn], [str(w.message) for w in wd]


def width_on_a_boundary(g, bins, rng):
    """NumPy's range / width lies within rounding of an integer (where a
    width from combined partial sums may give one bin more or fewer)."""
    from numpy.lib._histograms_impl import _get_outer_edges, _hist_bin_selectors
    x = g.ravel()
    first, last = _get_outer_edges(x, rng)
    if rng is not None:
        x = x[(x >= first) & (x <= last)]
    width = _hist_bin_selectors[bins](x, (first, last))
    q = (last - first) / width
    return abs(q - round(q)) < 1e-9 * max(1.0, abs(q))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
@pytest.mark.parametrize("bins", ESTIMATORS)
def test_estimators_give_numpys_edges_and_counts(bins, dtype, layout):
    for seed, rng in ((1, None), (2, (-5, 12)), (3, (0, 0))):
        g = drawn(dtype, seed)
        a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
        for fn in (lambda x: np.histogram(x, bins=bins, range=rng),
                   lambda x: (np.histogram_bin_edges(x, bins=bins, range=rng),)):
            want, got, wn, wd = numpy_and_dap(fn, g, a)
            collective_assert(want[0] == got[0] == "ok", f"{bins} {rng}: {want} / {got}")
            exact = all(bits(x) == bits(y) for x, y in zip(got[1], want[1]))
            if bins in ROUNDED and not exact:
                exact = len(got[1][-1]) != len(want[1][-1]) and width_on_a_boundary(g, bins, rng)
            collective_assert(exact, f"{bins} {dtype.__name__} {rng}: {got[1]} != {want[1]}")
            collective_assert(wn == wd, f"{bins} {rng}: warnings {wd} != NumPy's {wn}")
            for x in got[1]:
                same_everywhere(x, f"{bins} {rng}")


def test_stone_warns_as_numpy_on_every_rank():
    g = np.arange(40 * N, dtype=np.int64) % 7           # few values: stone's bound is reached
    a = dap.DistArray.from_global(g, comm=comm)
    want, got, wn, wd = numpy_and_dap(lambda x: np.histogram(x, bins="stone"), g, a)
    collective_assert(any("suboptimal" in m for m in wn), f"NumPy did not warn: {wn}")
    collective_assert(wn == wd and bits(got[1][1]) == bits(want[1][1]), f"{wd} / {got}")


@pytest.mark.parametrize("shape", [(0,), (1,), (2,), (N - 1,), (3, 1)])
def test_estimators_with_empty_ranks(shape):
    g = np.arange(float(np.prod(shape))).reshape(shape) * 1.5 - 1
    a = dap.DistArray.from_global(g, comm=comm)
    for bins in ESTIMATORS:
        for rng in (None, (0, 1)):
            want, got, wn, wd = numpy_and_dap(lambda x: np.histogram(x, bins=bins, range=rng), g, a)
            ok = want[0] == got[0] and (want[0] != "ok" or all(
                bits(x) == bits(y) for x, y in zip(got[1], want[1])))
            collective_assert(ok, f"{shape} {bins} {rng}: {got} != {want}")


def test_estimator_errors_are_numpys_on_every_rank():
    g = drawn(np.float64, 4)
    a = dap.DistArray.from_global(g, comm=comm)
    w = dap.DistArray.from_global(np.ones(g.shape), comm=comm)
    gn = g.copy()
    gn[3, 3] = np.nan
    an = dap.DistArray.from_global(gn, comm=comm)
    gc = g + 1j
    ac = dap.DistArray.from_global(gc, comm=comm)
    for call, kind, text in [
            (lambda: np.histogram(a, bins="bogus"), ValueError, "not a valid estimator"),
            (lambda: np.histogram(a, bins="fd", weights=w), TypeError, "weighted data"),
            (lambda: np.histogram_bin_edges(a, bins="auto", weights=w), TypeError, "weighted data"),
            (lambda: np.histogram(an, bins="auto"), ValueError, "autodetected range of [nan, nan]"),
            (lambda: np.histogram(a, bins="auto", range=(3, 1)), ValueError, "max must be larger"),
            (lambda: np.histogram(ac, bins="auto"), TypeError, "real numbers"),
            (lambda: np.histogram_bin_edges(np.ones(3), weights=w), TypeError, "a must be a DistArray")]:
        try:
            call()
            result = "no error"
        except Exception as exc:  # noqa: BLE001 - compared collectively
            result = exc
        collective_assert(isinstance(result, kind) and text in str(result), f"{text}: {result!r}")


@pytest.mark.parametrize("layout", ["block-padded", "rows", "cyclic"])
def test_complex_weights_are_summed_as_numpy_does(layout):
    g = drawn(np.float64, 5)
    w = drawn(np.float64, 6) + 1j * drawn(np.float64, 7)
    a = dap.DistArray.from_global(g, comm=comm, **LAYOUTS[layout])
    wa = dap.DistArray.from_global(w, comm=comm, **LAYOUTS[layout])
    for kw in (dict(bins=6), dict(bins=[-20, 0, 3, 30]), dict(bins=5, density=True),
               dict(bins=4, range=(-3, 3))):
        got, want = np.histogram(a, weights=wa, **kw), np.histogram(g, weights=w, **kw)
        ok = got[0].dtype == want[0].dtype and np.allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
        collective_assert(ok, f"{kw}: {got[0]} vs {want[0]}")
        collective_assert(bits(got[1]) == bits(want[1]), f"{kw}: edges")
        same_everywhere(got[0], f"complex weights {kw}")
    # whole numbers: every order of summation gives the same bits
    wi = np.round(w * 4) / 4
    wia = dap.DistArray.from_global(wi, comm=comm, **LAYOUTS[layout])
    got, want = np.histogram(a, bins=5, weights=wia), np.histogram(g, bins=5, weights=wi)
    collective_assert(bits(got[0]) == bits(want[0]), f"{got[0]} vs {want[0]}")


def test_histogram_bin_edges_equal_numpys():
    g = drawn(np.float64, 8)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=GRID)
    for kw in (dict(), dict(bins=5), dict(bins=3, range=(-1, 1)), dict(bins=[0, 1, 5]),
               dict(bins="auto"), dict(bins="sturges", range=(-4, 4))):
        got, want = np.histogram_bin_edges(a, **kw), np.histogram_bin_edges(g, **kw)
        collective_assert(bits(got) == bits(want), f"{kw}: {got} != {want}")
    for call, text in [(lambda x: np.histogram_bin_edges(x, bins=[3, 1]), "monotonically"),
                       (lambda x: np.histogram_bin_edges(x, bins=0), "must be positive")]:
        for x in (g, a):
            try:
                call(x)
                result = "no error"
            except Exception as exc:  # noqa: BLE001 - compared collectively
                result = exc
            collective_assert(isinstance(result, ValueError) and text in str(result), repr(result))


def test_result_type_takes_a_distarray_as_its_dtype():
    for dtype in (np.float32, np.int8, np.uint16, np.complex64, bool):
        g = np.zeros((3, 4), dtype)
        a = dap.DistArray.from_global(g, comm=comm)
        for args in ((a,), (a, 1.5), (a, 300), (a, np.float64), (2, a, np.int16(1)),
                     (a, a), (a, np.zeros(2, np.int32))):
            plain = tuple(g if x is a else x for x in args)
            want, got = outcome(np.result_type, *plain), outcome(np.result_type, *args)
            collective_assert(want == got, f"{dtype} {args}: {got} != {want}")


def test_size_is_the_global_count():
    for shape in ((0,), (5,), (3, 4), (2, 0, 3)):
        a = dap.DistArray.from_global(np.zeros(shape), comm=comm)
        collective_assert(a.size == np.zeros(shape).size and type(a.size) is int, f"{shape}")


@pytest.mark.parametrize("shape", [(13, 7), (0, 3), (300, 700)])
def test_complex_data_warn_and_answer_as_numpy(shape):
    """NumPy's np.histogram of complex data with a number of bins warns
    "Casting complex values to real" once a block of 65,536 values; nclx's
    did not, and its argument check's stand-in warned in
    np.histogram_bin_edges, where NumPy does not."""
    g = drawn(np.float64, 9, shape) + 1j * drawn(np.float64, 10, shape)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=GRID)
    for fn in (lambda x: np.histogram_bin_edges(x, bins=5),
               lambda x: np.histogram_bin_edges(x, bins=[0, 1, 5]),
               lambda x: np.histogram(x, bins=4), lambda x: np.histogram(x, bins=3, range=(9, 10)),
               lambda x: np.histogram(x, bins=[-1, 0, 2])):
        want, got, wn, wd = numpy_and_dap(fn, g, a)
        collective_assert(want[0] == got[0] == "ok" and wn == wd, f"{got} {wd} / {want} {wn}")
        w, d = np.asarray(want[1], dtype=object), np.asarray(got[1], dtype=object)
        collective_assert(all(bits(x) == bits(y) for x, y in zip(
            got[1] if isinstance(got[1], tuple) else (got[1],),
            want[1] if isinstance(want[1], tuple) else (want[1],))), f"{d} != {w}")


@pytest.mark.parametrize("bins", [4, "auto", "stone", "sqrt", [0, 0.5, 1]])
def test_booleans_are_counted_as_uint8_with_one_warning(bins):
    """NumPy converts boolean data to uint8 with one RuntimeWarning; nclx
    warned twice, and its estimators subtracted booleans (TypeError)."""
    g = np.random.default_rng(11).random((13, 7)) > 0.3
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=GRID)
    for fn in (lambda x: np.histogram(x, bins=bins), lambda x: (np.histogram_bin_edges(x, bins=bins),)):
        want, got, wn, wd = numpy_and_dap(fn, g, a)
        collective_assert(want[0] == got[0] == "ok" and wn == wd, f"{got} {wd} / {want} {wn}")
        collective_assert(all(bits(x) == bits(y) for x, y in zip(got[1], want[1])), f"{got} != {want}")


# ------------------------------------------------- found by review of the above
@pytest.mark.parametrize("bins", ["fd", "auto", "stone", "sqrt"])
def test_estimators_never_run_on_a_stand_in_value(bins):
    """The argument check ran the estimator on a one-element stand-in: for
    complex data that NumPy never estimates over (empty, or all outside
    range) it raised where NumPy answers."""
    for g, rng in ((np.zeros(0, complex), None), (np.array([5 + 1j, 7 + 2j, 9 + 0j]), (-1, 1))):
        a = dap.DistArray.from_global(g, comm=comm)
        want, got, wn, wd = numpy_and_dap(lambda x: np.histogram(x, bins=bins, range=rng), g, a)
        collective_assert(want[0] == got[0] == "ok" and all(
            bits(x) == bits(y) for x, y in zip(got[1], want[1])), f"{got} != {want}")


def test_histogram_bin_edges_only_checks_the_weights_shape():
    g = np.arange(12.0).reshape(3, 4)
    a = dap.DistArray.from_global(g, comm=comm)
    want = np.histogram_bin_edges(g, bins=3)
    for w in (dap.DistArray.from_global(np.ones((3, 4), "m8[s]"), comm=comm), np.ones((3, 4)),
              dap.DistArray.from_global(np.full((3, 4), "x"), comm=comm)):
        got = np.histogram_bin_edges(a, bins=3, weights=w)
        collective_assert(bits(got) == bits(want), f"{got} != {want}")
    for call, w in ((np.histogram_bin_edges, np.ones(12)),
                    (np.histogram_bin_edges, dap.DistArray.from_global(np.ones((4, 3)), comm=comm)),
                    (np.histogram, dap.DistArray.from_global(np.ones(12), comm=comm)),
                    (np.histogram, dap.DistArray.from_global(np.ones((4, 3)), comm=comm))):
        try:
            call(a, bins=3, weights=w)
            result = "no error"
        except Exception as exc:  # noqa: BLE001 - compared collectively
            result = exc
        collective_assert(isinstance(result, ValueError) and "same shape" in str(result), repr(result))


@pytest.mark.parametrize("kind", ["bool", "complex", "stone"])
def test_a_warning_one_rank_raises_leaves_no_rank_waiting(kind):
    """The warnings nclx adds (booleans, complex data) and NumPy's own
    estimator warnings were raised between collectives: a rank whose filter
    made them errors raised alone and the others waited (a hang)."""
    g = {"bool": np.array([True, False, True, True] * N),
         "complex": np.array([1 + 1j, 2, 3, 4] * N),
         "stone": np.arange(40 * N, dtype=np.int64) % 7}[kind]
    a = dap.DistArray.from_global(g, comm=comm)
    bins = "stone" if kind == "stone" else 3
    with warnings.catch_warnings():
        warnings.simplefilter("error" if comm.rank == 0 else "ignore")
        got = outcome(np.histogram, a, bins=bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_last = outcome(np.histogram, g, bins=bins) if comm.rank else None
    if comm.rank == 0:
        collective_assert(got[0] == "exc" and "Warning" in got[1], f"{got}")
    else:
        collective_assert(got[0] == "ok" and all(bits(x) == bits(y) for x, y in zip(got[1], want_last[1])),
                          f"{got}")


def test_complex_counts_fail_where_numpys_do():
    """NumPy counts complex data with equal-width bins by complex arithmetic
    (here its bincount meets a negative index and raises); nclx counted
    against the edges and answered."""
    g = np.array([1 + 2j, 3 - 1j, 0.5 + 0j] * N)
    a = dap.DistArray.from_global(g, comm=comm)
    rng = (g.min(), g.max())
    for bins in (3, 10):
        results = []
        for x in (g, a):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    results.append(np.histogram(x, bins=bins, range=rng))
            except Exception as exc:  # noqa: BLE001 - compared collectively
                results.append(exc)
        want, got = results
        if isinstance(want, Exception):
            same = isinstance(got, type(want)) and str(want) in str(got)
        else:
            same = not isinstance(got, Exception) and all(bits(x) == bits(y) for x, y in zip(got, want))
        collective_assert(same, f"{got!r} / {want!r}")


@pytest.mark.parametrize("bins", ["sqrt", "auto", 3])
def test_numpys_warnings_are_shown_when_the_edges_raise(bins):
    """NumPy's own warnings of the bin-edge code were dropped when that code
    raised (overflowing data: NumPy warns, then raises ValueError)."""
    g = np.array([1.7e308, -1.7e308, 0.0, 1.0] * N)
    a = dap.DistArray.from_global(g, comm=comm)
    want, got, wn, wd = numpy_and_dap(lambda x: np.histogram(x, bins=bins), g, a)
    collective_assert(want[0] == got[0] == "exc" and wn == wd, f"{got} {wd} / {want} {wn}")
