"""nclx.aware's shared pieces of the ufunc contract: out= normalised,
foreign operands detected, reduction start values from spec.py."""
import numpy as np
import pytest

from nclx import aware
from nclx._ncl import spec


class _Foreign:
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return "foreign"


class _Own:
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return "own"


def test_outs_of_every_spelling():
    a = np.zeros(3)
    assert aware.outs_of({}) == ()
    assert aware.outs_of({"out": None}) == ()
    assert aware.outs_of({"out": a})[0] is a
    assert aware.outs_of({"out": (a,)})[0] is a
    assert aware.outs_of({"out": (None, a)}) == (None, a)


@pytest.mark.parametrize("where", ["input", "out", "where"])
def test_foreign_operand_anywhere_is_found(where):
    f = _Foreign()
    inputs, kw = (np.ones(2), 1.0), {}
    if where == "input":
        inputs = (np.ones(2), f)
    elif where == "out":
        kw["out"] = (f,)
    else:
        kw["where"] = f
    assert aware.foreign(inputs, kw) is True
    assert aware.foreign(inputs, kw, own=(_Foreign,)) is False


def test_plain_operands_are_not_foreign():
    assert aware.foreign((np.ones(2), np.float32(1), 3, 2.5, True, 1j, [1, 2]), {}) is False
    assert aware.foreign((_Own(),), {}, own=(_Own,)) is False


_NEUTRAL_CASES = [(op, dt) for op in ("add", "multiply", "maximum", "minimum", "bitwise_and",
                                       "bitwise_or", "logical_and", "logical_or")
                  for dt in spec.ALL
                  if not (op.startswith("bitwise") and dt.startswith("float"))]


@pytest.mark.parametrize("op,dt", _NEUTRAL_CASES)
def test_start_value_is_neutral(op, dt):
    """Reducing [start] with the op's reduction gives start itself, and
    combining start with any value v gives v (what a neutral element is)."""
    ufunc = getattr(np, op)
    sample = np.array([0, 1, 2, -1 if np.dtype(dt).kind not in "ub" else 3], dtype=dt)
    start = aware.start_value(op, dt)
    assert start is not None and start.dtype == np.dtype(dt)
    for v in sample:
        got = ufunc(start, v)
        expect = v if op not in ("logical_and", "logical_or") else np.bool_(v)
        assert got.tobytes() == np.asarray(expect, dtype=got.dtype).tobytes(), (op, dt, v)


def test_start_value_of_ops_without_one():
    assert aware.start_value("subtract", "float64") is None
    assert aware.start_value("true_divide", "float32") is None
    assert aware.start_value("maximum", "float64") == -np.inf
    assert aware.start_value("minimum", "uint8") == 255


# ----------------------------------------------- issue 21 review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# First cut: aware.nclx_ufunc finds twins by identity, not by name (not
# scipy's namesakes), leaving NumPy's logical_* (promoters).  Second review:
# __array_function__ of storages follows NumPy's protocol (a foreign type's
# override is asked; like= still refused); a twin's TypeError for loops
# outside NumPy's legacy list falls back to NumPy's ufunc.
@pytest.mark.usefixtures("threaded_clean")
def test_aware_twins_by_identity_not_by_name():
    from nclx.aware import nclx_ufunc
    import nclx.ufuncs as nu
    fake = np.frompyfunc(lambda x: x, 1, 1)
    assert nclx_ufunc(np.cbrt) is nu.cbrt and nclx_ufunc(fake) is fake
    assert nclx_ufunc(np.logical_and) is np.logical_and    # NumPy's promoters


@pytest.mark.usefixtures("threaded_clean")
def test_array_function_defers_to_foreign_array_types_and_like():
    import nclx.storage as st

    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "Other handled"
    s = st.zeros((3,), dtype=np.float64)
    assert np.concatenate([s, Other()]) == "Other handled"
    with pytest.raises(TypeError):
        np.asarray([1, 2], like=s)
    assert np.concatenate([s, s]).shape == (6,)


@pytest.mark.usefixtures("threaded_clean")
def test_twins_fall_back_to_numpy_for_loops_outside_the_legacy_list():
    from nclx.aware import nclx_ufunc, run_unwrapped
    u = np.array(["a", "b"])
    got = run_unwrapped(np.equal, "__call__", (u, u), {}, lambda v: v, kernels=nclx_ufunc)
    assert got.tolist() == [True, True]



def test_nclx_array_defers_to_a_foreign_operand():
    """NclxArray's __array_ufunc__ returns NotImplemented for a foreign
    array type (in the inputs, out= or where=), so that type is asked."""
    import nclx.hooks as hooks
    a = hooks.aware(np.arange(3.0))
    f = _Foreign()
    assert np.add(a, f) == "foreign"
    assert np.add(f, a) == "foreign"
    assert np.add(a, 1.0, out=(f,)) == "foreign"
    assert a.__array_ufunc__(np.add, "__call__", a, f) is NotImplemented
    assert type(np.add(a, 1.0)).__name__ == "NclxArray"


def test_array_ufunc_own_refuses_foreign_before_any_hook_runs():
    seen = []

    def unwrap(x):
        seen.append(x)
        return x
    got = aware.array_ufunc(np.add, "__call__", (np.ones(2), _Foreign()), {}, unwrap=unwrap,
                            wrap=lambda r: r, own=())
    assert got is NotImplemented and seen == []


def test_an_ndarray_subclass_with_its_own_ufunc_override_is_foreign():
    """ndarray.__array_ufunc__ defers to such a subclass; nclx's types do
    too (a storage used to pass it out= and return its untouched buffer)."""
    import nclx.storage as ns

    class Q(np.ndarray):
        def __array_ufunc__(self, *args, **kwargs):
            return np.full(3, 42.0)
    q = np.zeros(3).view(Q)
    assert aware.foreign((np.ones(3), q), {}) is True
    assert aware.foreign((np.ones(3), np.ma.masked_array([1.0]), np.zeros(2).view(np.recarray)), {}) is False
    assert np.asarray(ns.full((3,), 1.0) + q).tolist() == [42.0, 42.0, 42.0]
    assert (np.ones(3) + q).tolist() == [42.0, 42.0, 42.0]


def test_nclx_array_is_not_foreign_to_other_nclx_types():
    import nclx.hooks as hooks
    import nclx.storage as ns
    a = hooks.aware(np.arange(3.0))
    assert aware.foreign((a,), {}) is False
    got = ns.full((3,), 1.0) + a
    assert np.asarray(got).tolist() == [1.0, 2.0, 3.0]


def test_nclxarray_routes_mask_functions_through_the_mask_chain():
    """np.extract / np.compress / np.place / np.putmask with an NclxArray
    operand run nclx.mask's twins (python-level Mask chain), NumPy's results."""
    import nclx.hooks as hooks
    rng = np.random.default_rng(3)
    plain = rng.standard_normal(1000)
    cond = plain > 0
    a = hooks.aware(plain.copy())
    seen = []

    def spy(c):
        seen.append(c.ufunc.__name__)
        return c.next()

    with hooks.register("python", "mask", spy):
        e = np.extract(cond, a)
        c = np.compress(cond, a)
        out = hooks.aware(np.empty(int(cond.sum())))
        c2 = np.compress(cond, a, out=out)
        b = hooks.aware(plain.copy())
        np.place(b, cond, [7.0, 8.0])
        d = hooks.aware(plain.copy())
        np.putmask(d, cond, [1.0, 2.0, 3.0])
    assert seen == ["extract", "compress", "compress", "place", "putmask"]
    assert type(e) is hooks.NclxArray and type(c) is hooks.NclxArray
    assert c2 is out
    assert e.view(np.ndarray).tobytes() == np.extract(cond, plain).tobytes()
    assert c.view(np.ndarray).tobytes() == np.compress(cond, plain).tobytes()
    assert out.view(np.ndarray).tobytes() == np.compress(cond, plain).tobytes()
    ref = plain.copy()
    np.place(ref, cond, [7.0, 8.0])
    assert b.view(np.ndarray).tobytes() == ref.tobytes()
    ref = plain.copy()
    np.putmask(ref, cond, [1.0, 2.0, 3.0])
    assert d.view(np.ndarray).tobytes() == ref.tobytes()
