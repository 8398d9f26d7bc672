"""Fused evaluation under hostile use: defects a review found (each test
failed before its fix).

- integer ``**`` with a negative exponent: NumPy's loop raises a Python
  ValueError from inside the loop; fused, it was a SystemError (calling
  thread) or silently 0 (a worker);
- ``sum(x, 0)`` / ``np.sum(x, axis=0)`` of 2-D arrays returned the whole
  sum (the trace saw 1-element probes; the plan's key had no ndim);
- ``@fuse`` kept the values of globals, closure cells and defaults, and the
  probe's ``shape``/``len``, from the first trace;
- ``out=`` was written when the last (or only) step raised;
- ``@fuse`` on a method lost ``self``; a function returning a view of a
  probe leaked AttributeError; an unaligned 0-d operand raised ValueError;
- ``evaluate('sqrt(a, b)')`` wrote into ``b`` (a ufunc's out=); the plan
  cache kept every expression string ever evaluated.
"""
import numpy as np
import pytest

import nclx
from nclx import fused

N = 200_000


@pytest.fixture(autouse=True)
def _two_threads():
    saved = nclx.get_num_threads()
    nclx.set_num_threads(2)
    yield
    nclx.set_num_threads(saved)


@pytest.mark.parametrize("where", [10, N - 10])
def test_integer_power_with_a_negative_exponent_raises_as_numpy(where):
    a = np.full(N, 3, np.int64)
    b = np.full(N, 2, np.int64)
    b[where] = -1
    with pytest.raises(ValueError, match="negative integer powers"):
        a ** b
    with pytest.raises(ValueError, match="negative integer powers"):
        nclx.evaluate("a ** b")
    b[where] = 2
    assert nclx.evaluate("a ** b").tobytes() == (a ** b).tobytes()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sums_along_an_axis_of_2d_arrays_equal_numpy(axis):
    m = np.arange(600 * 600, dtype=np.float64).reshape(600, 600)
    want = np.sum(m * 2, axis=axis)
    assert nclx.evaluate(f"sum(m * 2, {axis})").tobytes() == want.tobytes()

    @nclx.fuse
    def f(x):
        return np.sum(x * 2, axis=axis)
    assert f(m).tobytes() == want.tobytes()
    v = np.arange(N, dtype=np.float64)              # 1-d first: the same string, another ndim
    assert nclx.evaluate("sum(v * 2, 0)").tobytes() == np.sum(v * 2, axis=0).tobytes()
    assert nclx.evaluate("sum(m * 2, 0)").tobytes() == np.sum(m * 2, axis=0).tobytes()


K = 2.0


def test_fused_functions_see_globals_closures_and_defaults_change():
    global K
    x = np.ones(N)

    @nclx.fuse
    def g(a):
        return a * K
    assert g(x)[0] == 2.0
    K = 3.0
    try:
        assert g(x)[0] == 3.0
    finally:
        K = 2.0
    c = [4.0]

    def make():
        k = c[0]

        @nclx.fuse
        def h(a, j=1.0):
            return a * k + j
        return h
    assert make()(x)[0] == 5.0
    c[0] = 5.0
    assert make()(x)[0] == 6.0
    arr = np.ones(N)

    @nclx.fuse
    def w(a):
        return a * arr            # an array global: its values may change in place
    assert "array" in w.explain(x)
    arr[:] = 7.0
    assert w(x)[0] == 7.0


@pytest.mark.parametrize("body", ["shape", "len", "size", "ndim"])
def test_a_probes_shape_is_never_traced(body):
    x = np.ones(N)
    fn = {"shape": lambda a: a * a.shape[0], "len": lambda a: a * len(a),
          "size": lambda a: a * a.size, "ndim": lambda a: a * a.ndim}[body]
    f = nclx.fuse(fn)
    assert f(x).tobytes() == fn(x).tobytes()
    assert f.explain(x) != "fused"


def test_out_is_untouched_when_the_last_or_only_step_raises():
    a = np.arange(N, dtype=np.float64)
    b = np.ones(N)
    b[5] = 0.0
    for ex in ("a / b", "(a * 2) / b"):
        out = np.full(N, -7.0)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            nclx.evaluate(ex, out=out)
        assert out.tobytes() == np.full(N, -7.0).tobytes(), ex


class _C:
    scale = 3.0

    @nclx.fuse
    def f(self, a):
        return a * 2 + 1


def test_fuse_on_a_method_binds_self():
    x = np.arange(N, dtype=np.float64)
    assert _C().f(x).tobytes() == (x * 2 + 1).tobytes()
    assert _C.f(_C(), x).tobytes() == (x * 2 + 1).tobytes()


@pytest.mark.parametrize("tail", ["reshape", "copy", "astype"])
def test_a_result_derived_from_a_probe_runs_eagerly(tail):
    x = np.arange(N, dtype=np.float64)
    fn = {"reshape": lambda a: (a * 2).reshape(-1), "copy": lambda a: (a * 2).copy(),
          "astype": lambda a: (a * 2).astype(np.float32)}[tail]
    f = nclx.fuse(fn)
    assert f(x).tobytes() == fn(x).tobytes() and f(x).dtype == fn(x).dtype
    assert f.explain(x) != "fused"


def test_an_unaligned_0d_operand_runs_eagerly():
    a = np.arange(N, dtype=np.float64)
    raw = np.zeros(9, np.uint8)
    z = np.frombuffer(raw, np.float64, count=1, offset=1).reshape(())
    assert not z.flags.aligned
    assert nclx.evaluate("a * z").tobytes() == (a * z).tobytes()


@pytest.mark.parametrize("ex", ["sqrt(a, b)", "where(a)", "where(a > 0, a)", "arctan2(a)",
                                "sum(a, 0, 1)"])
def test_functions_called_with_the_wrong_number_of_arguments_raise(ex):
    a = np.arange(N, dtype=np.float64)
    b = np.ones(N)
    with pytest.raises(TypeError, match="argument"):
        nclx.evaluate(ex)
    assert b.tobytes() == np.ones(N).tobytes()


def test_the_expression_cache_is_bounded():
    a = np.arange(N, dtype=np.float64)
    for k in range(fused._PLANS_MAX + 50):
        nclx.evaluate(f"a * {k}")
    assert len(fused._expr_plans.items) <= fused._PLANS_MAX
