"""Defects found in the sixteenth look at nclx.dap (statistics.py,
elementcall.py, collective.mark_agreed, crossrank.py); each test failed on
the code before its fix, at 2 and 3 ranks:

- S1: np.var / np.std of an empty slice warned NumPy's "invalid value
  encountered in divide" (the mean's 0 / 0) before "Degrees of freedom <=
  0 for slice", and raised it under ``simplefilter("error")`` where NumPy
  raises the latter: NumPy's ``_var`` warns as soon as the count is known;
- S2: np.var / np.std with a where= mask and axis=None divided by a
  one-element array: "invalid value encountered in divide" where NumPy's
  scalar division warns "... in scalar divide";
- E1: an elementwise call under ``np.errstate(...='call')`` with no
  function set called None (TypeError) where NumPy raises its NameError;
  under ``'log'`` an object without ``write`` raised NameError where NumPy
  raises the AttributeError of its ``write`` call;
- C1: ``mark_agreed`` of an exception whose class refuses attributes
  (``__setattr__`` raising TypeError) raised that TypeError in place of the
  user's exception (a ``call`` function raising such an exception);
- X1: ``Distribution.from_dim_data_per_rank`` with a rank's dim_data that
  is no tuple (None, a dict) or a dimension that is no dict (a string, an
  array) raised Python's TypeError or ValueError naming neither the rank
  nor the dimension; two ranks at one grid coordinate with different
  dictionaries were not told apart by key.
"""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from nclx.dap import DapError, Distribution
from nclx.dap.collective import mark_agreed
from mpi_helpers import N, collective_assert, within

comm = MPI.COMM_WORLD
cm = comm.Dup()         # within()'s calls: the hang check uses COMM_WORLD


def _seen(fn, action):
    """(what ``fn()`` gives -- a DistArray gathered -- or its error, the
    warnings in order) under ``simplefilter(action)``."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        try:
            r = fn()
            if isinstance(r, dap.DistArray):
                r = r.gather(root=None)
            got = ("ok", np.asarray(r).dtype.str, np.asarray(r).tobytes())
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            got = ("exc", type(exc).__name__, str(exc))
    return got, [(x.category.__name__, str(x.message)) for x in w]


def _compare(cases):
    """Each case ``(name, numpy call, nclx call)`` under "always" and
    "error": the same result bits, the same warnings in order, the same
    error, on every rank (no rank hangs)."""
    bad = []
    for name, npf, daf in cases:
        for action in ("always", "error"):
            want = _seen(npf, action)
            got = within(_seen, daf, action)
            got = got[1] if got[0] == "ok" else got
            if got != want:
                bad.append(f"{name} [{action}]: {got} != {want}")
    collective_assert(not bad, "\n".join(bad[:4]) + f"\n({len(bad)} cases)")


def _D(g):
    return dap.DistArray.from_global(g, comm=cm)


@pytest.mark.parametrize("f", [np.var, np.std])
def test_degrees_of_freedom_before_the_mean_of_an_empty_slice(f):
    """S1"""
    cases = []
    # (N, 0) with axis=1: a result cell on every rank; the divisions of an
    # axis reduction's result blocks are elementwise calls, whose flags warn
    # only on the ranks whose cells meet them (docs/dap.md): with (3, 0) on
    # 5 ranks, ranks 3 and 4 hold no cell and NumPy's two "invalid value"
    # warnings are not theirs
    for shape, axis in [((0,), None), ((0, 3), 0), ((N, 0), 1), ((N, 0), None)]:
        for dt in (np.float64, np.int64, np.complex128):
            g = np.zeros(shape, dt)
            for ddof in (0, 1):
                cases.append((f"{shape} axis={axis} {np.dtype(dt).name} ddof={ddof}",
                              lambda g=g, a=axis, d=ddof: f(g, axis=a, ddof=d),
                              lambda g=g, a=axis, d=ddof: f(_D(g), axis=a, ddof=d)))
    _compare(cases)


@pytest.mark.parametrize("f", [np.var, np.std])
def test_a_masked_variance_divides_as_a_scalar(f):
    """S2 (and S1 with a mask that leaves nothing)"""
    cases = []
    for n in (0, 1, 2 * N + 1):
        g = np.arange(n, dtype=float)
        for m in (np.zeros(n, bool), np.arange(n) % 2 == 0):
            for ddof in (0, 1):
                cases.append((f"n={n} mask={m.tolist()} ddof={ddof}",
                              lambda g=g, m=m, d=ddof: f(g, ddof=d, where=m),
                              lambda g=g, m=m, d=ddof: f(_D(g), ddof=d, where=_D(m))))
    _compare(cases)


class _Frozen(Exception):
    """An exception whose class refuses attributes."""

    def __setattr__(self, key, value):
        raise TypeError("frozen")


def _raising(text, status):
    raise _Frozen(text)


class _NoWrite:
    pass


@pytest.mark.parametrize("mode", ["call", "log"])
@pytest.mark.parametrize("errcall", [None, _raising, _NoWrite()],
                         ids=["none", "raising", "no-write"])
def test_call_and_log_modes_raise_numpys_errors(mode, errcall):
    """E1 and C1: 1 / 0 in one rank's cells, 0 / 0 in every rank's."""
    one = np.ones(3 * N)
    one[0] = 0.0
    zeros = np.zeros(3 * N)

    def under(fn):
        def run():
            with np.errstate(divide=mode, invalid=mode, call=errcall):
                return fn()
        return run

    _compare([("1 / x", under(lambda: np.divide(1.0, one)),
               under(lambda: np.divide(1.0, _D(one)))),
              ("0 / 0", under(lambda: np.divide(zeros, zeros)),
               under(lambda: np.divide(_D(zeros), _D(zeros))))])


def test_mark_agreed_of_an_exception_refusing_attributes():
    """C1"""
    exc = _Frozen("mine")
    got = mark_agreed(exc)
    collective_assert(got is exc and getattr(exc, "_nclx_agreed", False), "not marked")


def _block(size, grid, r, start, stop, **kw):
    return dict(dist_type="b", size=size, proc_grid_size=grid, proc_grid_rank=r,
                start=start, stop=stop, **kw)


@pytest.mark.parametrize("seq, match", [
    ([None, None], r"rank 0: dim_data must be a tuple of dimension dictionaries, not NoneType"),
    ([{"size": 4}, {"size": 4}], r"rank 0: dim_data must be a tuple .* not dict"),
    ([("b",), ("b",)], r"rank 0: dim_data\[0\] must be a dict, not str"),
    ([(_block(4, 2, 0, 0, 2),), (np.array([1, 2]),)],
     r"rank 1: dim_data\[0\] must be a dict, not ndarray"),
    ([(_block(4, 2, 0, 0, 2),), (dict(_block(4, 2, 1, 2, 4), size="4"),)],
     r"rank 1: dim_data\[0\]\['size'\]"),
    ([(_block(4, 2, 0, 0, 2), _block(3, 1, 0, 0, 3)),
      (_block(4, 2, 1, 2, 4), _block(3, 1, 0, 0, 3, periodic=True))],
     r"rank 1: dim_data\[1\] differs from rank 0's at grid coordinate 0 of dimension 1 "
     r"\(in 'periodic'\)"),
], ids=["none", "a-dict", "a-string", "an-array", "bad-size", "differs"])
def test_dim_data_per_rank_errors_name_the_rank_and_the_key(seq, match):
    """X1 (no communication: the same on every rank)"""
    try:
        Distribution.from_dim_data_per_rank(seq)
        got = "no error"
    except DapError as exc:
        got = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - the defect: Python's own error
        got = f"not a DapError: {type(exc).__name__}: {exc}"
    import re
    collective_assert(re.search(match, got) is not None, f"{got!r} does not match {match!r}")
