"""Defects found in the twenty-first look at NumPy functions on DistArrays
(each test failed on the code before its fix, at the rank counts it says):

- F1: ``np.isclose``/``np.allclose`` with an ndarray ``rtol=``/``atol=``
  met each rank's block: silent wrong cells (a (2, 1) rtol on 2 ranks'
  (2, 4) blocks of a (4, 4) array), or one rank raising while the others
  waited in their next collective (2+ ranks); now a DapError on every
  rank naming the keyword; a DistArray tolerance is aligned as the values.
- F2: ``copy.copy(da)`` shared the block (writing the copy changed ``da``);
  a pickled DistArray sent to another rank arrived holding the sender's
  block (silently wrong gathers): pickling is now a TypeError.
- F3: ``np.argmax(da, keepdims=True, out=<DistArray>)`` raised np.shape's
  "not implemented" TypeError about a call the user never made.
- F4: ``np.nanmean(int_da, axis=0, out=<ndarray>)`` raised NumPy's
  broadcast error of an internal probe; now np.mean's out= DapError.
- F5: ``np.cumsum(da, dtype=np.int8)`` of NaN warned "... in accumulate"
  where NumPy warns "invalid value encountered in cast".
- F6: ``np.linalg.norm(da, ord=-1, axis=0)`` warned on the ranks holding
  a zero only (2+ ranks).
- F7: ``np.clip(da, lo, hi, where=m)`` added NumPy's "'where' used without
  'out'" UserWarning, which np.clip on an ndarray does not give.
- F8: keywords a DistArray does not take (``mean=`` of var/std/nanvar/
  nanstd, ``out=`` of cumsum/concatenate/dot) raised a ValueError
  (DapError) or, for nanstd of floats, a plain TypeError; now one
  DapTypeError (a TypeError) naming the function called.
- F9: ``np.add.outer``/``at``/``reduceat`` of a DistArray were refused
  "... scans need a prefix across the process grid", a scan's reason.
"""
import copy
import pickle
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, error_of, rank
from nclx.dap.validate import DapError, DapTypeError

comm = MPI.COMM_WORLD


def _da(g):
    return dap.DistArray.from_global(g, comm=comm)


def _same_everywhere(value):
    got = comm.allgather(value)
    collective_assert(all(v == got[0] for v in got), f"ranks differ: {got}")


# ------------------------------------------------------------------ F1
@pytest.mark.parametrize("fn", [np.isclose, np.allclose])
@pytest.mark.parametrize("shape", [(4, 4), (3, 4), (7, 2)])
@pytest.mark.parametrize("which", ["rtol", "atol"])
def test_f1_ndarray_tolerance_refused_on_every_rank(fn, shape, which):
    g = np.arange(float(np.prod(shape))).reshape(shape)
    a = _da(g)
    tol = np.zeros((min(N, shape[0]) if N > 1 else 2, 1))
    kw = {which: tol, ("atol" if which == "rtol" else "rtol"): 0}
    kind, msg = error_of(lambda: fn(a, a + 1.0, **kw))
    collective_assert(kind == "DapError" and f"{which}=" in msg, f"{kind}: {msg}")
    _same_everywhere((kind, msg))


def test_f1_distarray_and_scalar_tolerances_as_numpy():
    g = np.arange(12.0).reshape(3, 4)
    rt = (np.arange(12.0).reshape(3, 4) % 2) * 0.5
    a, r = _da(g), _da(rt)
    got = np.isclose(a, a + 1.0, rtol=r, atol=0).gather(root=None)
    want = np.isclose(g, g + 1.0, rtol=rt, atol=0)
    collective_assert(got.tobytes() == want.tobytes() and got.dtype == want.dtype,
                      f"{got} vs {want}")
    collective_assert(np.allclose(a, a + 1.0, rtol=r, atol=0) == np.allclose(
        g, g + 1.0, rtol=rt, atol=0), "allclose with a DistArray rtol")
    collective_assert(np.allclose(a, a, rtol=np.float64(0), atol=np.array(0.0)),
                      "0-d tolerances")


# ------------------------------------------------------------------ F2
def test_f2_copy_copy_is_independent():
    g = np.arange(6.0)
    a = _da(g)
    b = copy.copy(a)
    b += 100
    collective_assert(np.array_equal(a.gather(root=None), g), "copy.copy shared the block")
    collective_assert(np.array_equal(b.gather(root=None), g + 100), "the copy itself")
    d = copy.deepcopy(a)
    d *= 2
    collective_assert(np.array_equal(a.gather(root=None), g), "deepcopy shared the block")
    collective_assert(type(b) is type(a) and b.distribution == a.distribution, "its type")


def test_f2_pickling_is_refused():
    a = _da(np.arange(5.0))
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(a)


# ------------------------------------------------------------------ F3
@pytest.mark.parametrize("fn", [np.argmax, np.argmin, np.nanargmax, np.nanargmin])
def test_f3_value_result_into_a_distarray_out(fn):
    a = _da(np.arange(12.0).reshape(3, 4))
    out = _da(np.zeros((1, 1), np.intp))
    kind, msg = error_of(lambda: fn(a, keepdims=True, out=out))
    collective_assert(kind == "DapError" and "out=" in msg and "np.shape" not in msg,
                      f"{kind}: {msg}")
    _same_everywhere(kind)


# ------------------------------------------------------------------ F4
def test_f4_nanmean_of_ints_refuses_an_ndarray_out_as_mean():
    ai = _da(np.arange(12).reshape(3, 4))
    k1, m1 = error_of(lambda: np.nanmean(ai, axis=0, out=np.zeros(4)))
    k2, m2 = error_of(lambda: np.mean(ai, axis=0, out=np.zeros(4)))
    collective_assert(k1 == k2 == "DapError" and "out=" in m1, f"{k1}: {m1} / {k2}: {m2}")
    # the dtype refusal is still NumPy's (an integer out= of nanmean of floats)
    kind, _ = error_of(lambda: np.nanmean(_da(np.ones((3, 4))), out=np.zeros((), np.int64)))
    want, _ = error_of(lambda: np.nanmean(np.ones((3, 4)), out=np.zeros((), np.int64)))
    collective_assert(kind == want, f"{kind} vs NumPy's {want}")


# ------------------------------------------------------------------ F5
@pytest.mark.parametrize("fn", [np.cumsum, np.cumprod])
def test_f5_scan_cast_warns_as_numpy(fn):
    x = np.array([1.0, np.nan, 2.0, 3.0, np.inf, 1.0])
    a = _da(x)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = fn(a, dtype=np.int8).gather(root=None)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = fn(x, dtype=np.int8)
    collective_assert(got.tobytes() == want.tobytes() and got.dtype == want.dtype,
                      f"{got} vs {want}")
    collective_assert([str(w.message) for w in ours] == [str(w.message) for w in theirs],
                      f"{[str(w.message) for w in ours]} vs {[str(w.message) for w in theirs]}")
    with np.errstate(invalid="raise"):
        kind, _ = error_of(lambda: fn(a, dtype=np.int8))
    _same_everywhere(kind)
    collective_assert(kind in ("FloatingPointError", "DapError[FloatingPointError]"), kind)


def test_f5_scan_without_a_cast_unchanged():
    x = np.arange(1, 9, dtype=np.int32)
    got = np.cumsum(_da(x), dtype=np.int64).gather(root=None)
    want = np.cumsum(x, dtype=np.int64)
    collective_assert(got.tobytes() == want.tobytes(), f"{got} vs {want}")
    b = np.array([True, False, True, True, False, True])
    got = np.cumsum(_da(b)).gather(root=None)
    collective_assert(got.tobytes() == np.cumsum(b).tobytes(), "bool cumsum")


# ------------------------------------------------------------------ F6
@pytest.mark.parametrize("ord_", [-1, -2, -0.5])
def test_f6_norm_negative_ord_warns_on_every_rank(ord_):
    g = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])   # a zero on rank 0 only
    a = _da(g)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = np.linalg.norm(a, ord=ord_, axis=0)
        got = got.gather(root=None) if isinstance(got, dap.DistArray) else got
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = np.linalg.norm(g, ord=ord_, axis=0)
    collective_assert(np.asarray(got).tobytes() == want.tobytes(), f"{got} vs {want}")
    o, t = [str(w.message) for w in ours], [str(w.message) for w in theirs]
    collective_assert(o == t, f"{o} vs NumPy's {t}")


# ------------------------------------------------------------------ F7
def test_f7_clip_with_where_and_no_out_gives_no_user_warning():
    g = np.arange(12.0).reshape(3, 4)
    a = _da(g)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        r = np.clip(a, 2, 5, where=a > 3)
    collective_assert(not [w for w in ours if issubclass(w.category, UserWarning)],
                      f"{[str(w.message) for w in ours]}")
    mask = g > 3
    got = r.gather(root=None)
    collective_assert(got[mask].tobytes() == np.clip(g, 2, 5)[mask].tobytes(), f"{got}")
    # a plain ufunc call with where= and no out= still warns, as NumPy's
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        np.add(a, 1, where=a > 3)
    collective_assert(any("'where' used without 'out'" in str(w.message) for w in plain),
                      "np.add(where=) without out= no longer warns")


# ------------------------------------------------------------------ F8
@pytest.mark.parametrize("call", [
    lambda a, ai: np.var(a, mean=np.float64(5.5)),
    lambda a, ai: np.std(a, mean=np.float64(5.5)),
    lambda a, ai: np.nanvar(ai, mean=np.float64(5.5)),
    lambda a, ai: np.nanstd(ai, mean=np.float64(5.5)),
    lambda a, ai: np.nanstd(a, mean=np.float64(5.5)),
    lambda a, ai: np.cumsum(a, out=np.zeros(12)),
    lambda a, ai: np.concatenate([a, a], out=np.zeros((6, 4))),
    lambda a, ai: np.dot(a.ravel(), a.ravel(), out=np.zeros(())),
], ids=["var", "std", "nanvar-int", "nanstd-int", "nanstd-float", "cumsum", "concatenate",
        "dot"])
def test_f8_unsupported_keywords_are_type_errors(call):
    a = _da(np.arange(12.0).reshape(3, 4))
    ai = _da(np.arange(12).reshape(3, 4))
    try:
        call(a, ai)
    except Exception as exc:  # noqa: BLE001 - checked below
        err = exc
    else:
        err = None
    collective_assert(isinstance(err, TypeError) and isinstance(err, DapError),
                      f"{type(err).__name__}: {err}")
    _same_everywhere(type(err).__name__)


def test_f8_nanstd_of_ints_names_itself():
    ai = _da(np.arange(12).reshape(3, 4))
    with pytest.raises(DapTypeError, match=r"np\.nanstd\(DistArray, mean=") as info:
        np.nanstd(ai, mean=np.float64(5.5))
    assert "np.var" not in str(info.value)


# ------------------------------------------------------------------ F9
@pytest.mark.parametrize("call,method,why", [
    (lambda a: np.add.outer(a, a), "outer", "dimensions of both"),
    (lambda a: np.add.at(a, [0], 1), "at", "indices are global"),
    (lambda a: np.add.reduceat(a, [0, 1]), "reduceat", "segments"),
    (lambda a: np.add.accumulate(a), "accumulate", "prefix"),
])
def test_f9_method_refusals_give_their_own_reason(call, method, why):
    a = _da(np.arange(6.0))
    with pytest.raises(DapError, match=rf"add\.{method} of a DistArray is not supported") as info:
        call(a)
    assert why in str(info.value)
    assert method == "accumulate" or "prefix" not in str(info.value)
