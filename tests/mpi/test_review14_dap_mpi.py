"""Defects found in the fourteenth look at nclx.dap (each test failed on the
code before its fix, at 2 ranks or more where it says so):

- D1: ``np.average(da, weights=...)`` ran its product and quotient under
  ``np.errstate(all="ignore")``: NumPy's "overflow encountered in
  multiply" and "invalid value encountered in (scalar) divide" were neither
  warned nor raised (now on every rank, also where one rank's cells alone
  overflow);
- D2: reductions with ``dtype=object`` raised an internal DapError ("partial
  result is int64(), expected bool()") or returned NumPy scalars where
  NumPy returns Python ints: now DapTypeError (a TypeError) on every rank;
- D4: ``np.nanmedian`` (and the nan-quantiles) along an axis warned "All-NaN
  slice encountered" only on the ranks holding such lines, and fewer times
  than NumPy (at 2 ranks or more);
- D7: ``np.dot``/``vdot``/``inner`` of timedelta64[s] DistArrays gave
  timedelta64[s] where NumPy gives a generic timedelta64 (a timedelta and a
  float, whose NumPy result is a Python object, are refused as DapTypeError);
- D8: ``np.subtract.reduce`` of bools and ``np.not_equal.reduce`` of ints
  raised a DapError (a ValueError) where NumPy raises TypeError;
  ``np.histogram`` of timedelta64 raised DapError[UFuncTypeError] where NumPy
  raises DTypePromotionError (and ``np.histogram_bin_edges`` of datetime64
  with explicit edges raised where NumPy returns them);
- D9: ``np.reshape(da, shape, copy=False)`` was refused even where nothing
  moves (the same shape; one rank): now a view there, and the refusal where
  elements would move says so
  (``test_reshape_copy_false_numpy_cannot_view_raises_its_value_error``
  guards the fix's bound -- NumPy's ValueError where NumPy cannot view --
  and passed before too).
"""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD
N = comm.size


def _public(cls):
    """NumPy's public class of an exception (its private _UFuncNoLoopError
    reads UFuncTypeError)."""
    return next(c for c in cls.__mro__ if not c.__name__.startswith("_"))


def _outcome(fn, mode=None):
    """(('ok', dtype, shape, bytes) or ('exc', type), warnings) of ``fn()``:
    a DistArray result gathered on every rank; under ``np.errstate(all=mode)``."""
    with warnings.catch_warnings(record=True) as got, np.errstate(**({} if mode is None else
                                                                     {"all": mode})):
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            return ("exc", exc), [(w.category, str(w.message)) for w in got]
    parts = r if isinstance(r, tuple) else (r,)
    bits = []
    for p in parts:
        if isinstance(p, dap.DistArray):
            p = p.gather(root=None)
        a = np.asarray(p)
        bits.append((type(p).__name__, a.dtype.str, a.shape, a.tobytes()))
    return ("ok", bits), [(w.category, str(w.message)) for w in got]


def _same(got, want):
    """Whether nclx's outcome is NumPy's: the same bits, or an exception of
    NumPy's class (with its message where NumPy's is known)."""
    (gk, gv), gw = got
    (wk, wv), ww = want
    if gw != ww or gk != wk:
        return False
    if gk == "ok":
        return gv == wv
    return isinstance(gv, _public(type(wv))) and str(wv) in str(gv)


# ------------------------------------------------------------------ D1
def _average_case(name):
    """(a, weights) whose sums are exact in any order (powers of two, small
    integers): the ranks' partial sums then give NumPy's bits."""
    g = np.arange(1.0, 13.0).reshape(4, 3)
    w = np.ones((4, 3))
    if name == "inf over inf":
        g[1, 2] = np.inf
        w = g.copy()
    elif name == "overflow everywhere":
        g = np.full((4, 3), 2.0 ** 600)
        w = g.copy()
    elif name == "overflow in one cell":          # the last rank's cell alone
        g[3, 2] = w[3, 2] = 2.0 ** 600
    elif name == "sum overflows":
        g = np.full((4, 3), 1e308)
    return g, w


@pytest.mark.parametrize("case", ["inf over inf", "overflow everywhere", "overflow in one cell",
                                  "sum overflows"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("mode", ["warn", "raise"])
@pytest.mark.parametrize("returned", [False, True])
def test_weighted_average_warns_and_raises_as_numpy_on_every_rank(case, axis, keepdims, mode,
                                                                  returned):
    g, w = _average_case(case)
    a = dap.DistArray.from_global(g, comm=comm)
    wd = dap.DistArray.from_global(w, comm=comm)
    kw = dict(axis=axis, keepdims=keepdims, returned=returned)
    want = _outcome(lambda: np.average(g, weights=w, **kw), mode)
    got = _outcome(lambda: np.average(a, weights=wd, **kw), mode)
    collective_assert(_same(got, want), f"{got} against NumPy's {want}")


# ------------------------------------------------------------------ D2
_OBJECT_CALLS = {
    "sum": lambda x, ax: np.sum(x, axis=ax, dtype=object),
    "prod": lambda x, ax: np.prod(x, axis=ax, dtype=object),
    "mean": lambda x, ax: np.mean(x, axis=ax, dtype=object),
    "var": lambda x, ax: np.var(x, axis=ax, dtype=object),
    "nansum": lambda x, ax: np.nansum(x, axis=ax, dtype=object),
    "add.reduce": lambda x, ax: np.add.reduce(x, axis=ax, dtype=object),
}


@pytest.mark.parametrize("name", sorted(_OBJECT_CALLS))
@pytest.mark.parametrize("g", [np.arange(-5, 7, dtype=np.int8), np.arange(12) % 3 == 0,
                               np.arange(2 ** 63, 2 ** 63 + 12, dtype=np.uint64), np.arange(12.0)],
                         ids=["int8", "bool", "uint64", "float64"])
@pytest.mark.parametrize("axis", [None, 0])
def test_reductions_with_dtype_object_are_refused_as_type_error_on_every_rank(name, g, axis):
    a = dap.DistArray.from_global(g.reshape(4, 3), comm=comm)
    try:
        r = _OBJECT_CALLS[name](a, axis)
        got = f"returned {r!r}"
    except dap.DapTypeError as exc:
        got = None if "dtype=object" in str(exc) else f"DapTypeError: {exc}"
    except Exception as exc:  # noqa: BLE001 - reported
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got is None, f"{name}(dtype=object): {got}")


# ------------------------------------------------------------------ D4
def _nan_cases():
    part = np.full((3, 4), np.nan)
    part[0, 1] = 1.0
    part[2, 3] = 5.0
    return [("all NaN 2x2", np.full((2, 2), np.nan)), ("some NaN 3x4", part),
            ("all NaN 5x3", np.full((5, 3), np.nan))]


_NAN_CALLS = {
    "nanmedian": lambda x, ax: np.nanmedian(x, axis=ax),
    "nanquantile": lambda x, ax: np.nanquantile(x, 0.5, axis=ax),
    "nanpercentile": lambda x, ax: np.nanpercentile(x, [10, 90], axis=ax),
    "nanquantile lower": lambda x, ax: np.nanquantile(x, 0.3, axis=ax, method="lower"),
}


@pytest.mark.parametrize("name", sorted(_NAN_CALLS))
@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("axis", [0, 1])
def test_nan_order_statistics_warn_each_all_nan_slice_on_every_rank(name, case, axis):
    label, g = _nan_cases()[case]
    a = dap.DistArray.from_global(g, comm=comm)
    fn = _NAN_CALLS[name]
    want = _outcome(lambda: fn(g, axis))
    got = _outcome(lambda: fn(a, axis))
    collective_assert(_same(got, want), f"{label}: {got[1]} against NumPy's {want[1]}")


def test_nanmedian_all_nan_lines_raise_under_an_error_filter_on_every_rank():
    a = dap.DistArray.from_global(np.full((2, 2), np.nan), comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            np.nanmedian(a, axis=0)
            got = "no error"
        except RuntimeWarning as exc:       # NumPy's own, not a report of other ranks'
            got = None if str(exc) == "All-NaN slice encountered" else str(exc)
        except Exception as exc:  # noqa: BLE001 - reported
            got = f"{type(exc).__name__}: {exc}"
    collective_assert(got is None, got)


# ------------------------------------------------------------------ D7
@pytest.mark.parametrize("fn", [np.dot, np.vdot, np.inner], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dts", [("m8[s]", "m8[s]"), ("m8[s]", "i8"), ("i8", "m8[ms]"),
                                 ("m8[s]", "m8[ms]"), ("i1", "u1"), ("f2", "f4"), ("c8", "f8")])
def test_products_of_timedeltas_have_numpys_dtype(fn, dts):
    g1 = np.arange(-3, 5).astype(dts[0])
    g2 = np.arange(2, 10)[::-1].astype(dts[1])
    a = dap.DistArray.from_global(g1, comm=comm)
    b = dap.DistArray.from_global(g2, comm=comm)
    want, got = _outcome(lambda: fn(g1, g2)), _outcome(lambda: fn(a, b))
    collective_assert(_same(got, want), f"{got} against NumPy's {want}")


@pytest.mark.parametrize("fn", [np.dot, np.inner], ids=lambda f: f.__name__)
def test_product_whose_numpy_result_is_an_object_is_refused(fn):
    a = dap.DistArray.from_global(np.arange(8).astype("m8[s]"), comm=comm)
    b = dap.DistArray.from_global(np.arange(8.0), comm=comm)
    try:
        fn(a, b)
        got = "no error"
    except dap.DapTypeError as exc:
        got = None if "Python object" in str(exc) else str(exc)
    except Exception as exc:  # noqa: BLE001 - reported
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got is None, got)


# ------------------------------------------------------------------ D8
@pytest.mark.parametrize("case", ["subtract bool", "not_equal int", "less int"])
def test_reductions_numpy_refuses_raise_its_type_error_on_every_rank(case):
    uf, g = {"subtract bool": (np.subtract, np.arange(6) % 2 == 0),
             "not_equal int": (np.not_equal, np.arange(6)),
             "less int": (np.less, np.arange(6))}[case]
    a = dap.DistArray.from_global(g, comm=comm)
    want, got = _outcome(lambda: uf.reduce(g)), _outcome(lambda: uf.reduce(a))
    collective_assert(_same(got, want), f"{got} against NumPy's {want}")


_HIST_DATA = {
    "timedelta": np.arange(6).astype("m8[s]"),
    "equal timedeltas": np.full(6, 3).astype("m8[s]"),
    "timedelta NaT": np.array([1, 2, "NaT", 4], "m8[s]"),
    "datetime": np.arange(6).astype("M8[s]"),
    "one timedelta": np.array([4], "m8[s]"),
    "strings": np.array(list("abcdef")),
    "floats": np.arange(6.0),
}


@pytest.mark.parametrize("fn", [np.histogram, np.histogram_bin_edges], ids=lambda f: f.__name__)
@pytest.mark.parametrize("data", sorted(_HIST_DATA))
@pytest.mark.parametrize("bins", [3, "auto", "bogus", np.array([0, 2, 4])],
                         ids=["3", "auto", "bogus", "edges"])
@pytest.mark.parametrize("range_", [None, (0, 3)], ids=["norange", "range"])
def test_histogram_errors_are_numpys_classes_on_every_rank(fn, data, bins, range_):
    g = _HIST_DATA[data]
    a = dap.DistArray.from_global(g, comm=comm)
    want = _outcome(lambda: fn(g, bins=bins, range=range_))
    got = _outcome(lambda: fn(a, bins=bins, range=range_))
    (wk, wv), _ = want
    (gk, gv), _ = got
    ok = (gk, gv) == (wk, wv) if wk == "ok" else \
        gk == "exc" and isinstance(gv, _public(type(wv)))     # its class (texts differ)
    collective_assert(ok, f"{got[0]} against NumPy's {want[0]}")


# ------------------------------------------------------------------ D9
def _view_of(r, a):
    return isinstance(r, dap.DistArray) and (np.shares_memory(r._block, a._block)
                                             or a._block.size == 0)


@pytest.mark.parametrize("shape, dist, new", [
    ((12,), None, (12,)), ((12,), None, (-1,)), ((6, 4), None, (6, 4)),
    ((6, 4), ("c", "n"), (6, 4)), ((6, 4), ("b", "n"), (-1, 4)), ((0, 3), None, (3, 0))])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("how", ["function", "method"])
def test_reshape_copy_false_is_a_view_where_nothing_moves(shape, dist, new, order, how):
    g = np.arange(float(np.prod(shape))).reshape(shape)
    a = dap.DistArray.from_global(g, comm=comm, **({} if dist is None else {"dist": dist}))
    try:
        r = np.reshape(a, new, order=order, copy=False) if how == "function" else \
            a.reshape(new, copy=False) if order == "C" else np.reshape(a, new, order=order,
                                                                     copy=False)
        ok = _view_of(r, a)
        full = r.gather(root=None)
        ref = np.reshape(g, new, order=order, copy=False)
        ok = ok and full.shape == ref.shape and full.tobytes() == ref.tobytes()
        msg = f"view {ok}"
    except Exception as exc:  # noqa: BLE001 - reported
        ok, msg = False, f"{type(exc).__name__}: {exc}"
    collective_assert(ok, msg)


@pytest.mark.parametrize("new", [(3, 4), (4, 3), (2, 6), (12,)])
def test_reshape_copy_false_on_one_rank_is_a_view_of_any_shape(new):
    g = np.arange(12.0).reshape(6, 2)
    a = dap.DistArray.from_global(g, comm=MPI.COMM_SELF)
    r = np.reshape(a, new, copy=False)
    ok = _view_of(r, a) and r.gather(root=None).tobytes() == np.reshape(g, new).tobytes()
    r._block[...] = -1.0                      # written through: the same memory
    collective_assert(ok and (a.gather(root=None) == -1.0).all(), f"{new}")


def test_reshape_copy_false_of_blocks_already_in_place_is_a_view():
    """(4N,) in blocks of 4 holds (N, 4)'s rows: nothing moves."""
    g = np.arange(4.0 * N)
    a = dap.DistArray.from_global(g, comm=comm)
    r = np.reshape(a, (N, 4), copy=False)
    ok = _view_of(r, a) and r.gather(root=None).tobytes() == g.tobytes()
    collective_assert(ok, "not a view")


def test_reshape_copy_false_that_would_move_elements_says_so():
    g = np.arange(12.0)
    a = dap.DistArray.from_global(g, comm=comm, dist=("c",))
    try:
        r = np.reshape(a, (3, 4), copy=False)
        ok = N == 1 and _view_of(r, a)           # cyclic over one rank: in place
        msg = "returned"
    except dap.DapError as exc:
        ok, msg = N > 1 and "moves elements between ranks" in str(exc), str(exc)
    collective_assert(ok, msg)


def test_reshape_copy_false_numpy_cannot_view_raises_its_value_error():
    """A Fortran-order reshape NumPy cannot view on the (C-ordered) global
    array: NumPy's ValueError on every rank, at any number of ranks."""
    a = dap.DistArray.from_global(np.arange(24.0).reshape(6, 4), comm=comm)
    try:
        np.reshape(a, (24,), order="F", copy=False)
        ok, msg = False, "returned"
    except ValueError as exc:
        ok, msg = True, str(exc)
    collective_assert(ok, msg)
