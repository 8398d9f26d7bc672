"""Review 27: defects found in this stop, each test failing before its fix."""
import warnings

import numpy as np
import pytest

import nclx.ufuncs as nu


def _outcome(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - compared
            return ("exc", type(exc).__name__)
    r = np.asarray(r)
    return ("ok", r.dtype.str, r.shape, r.tobytes(), [str(w.message) for w in seen])


DTYPES = ["?", "i1", "u1", "i8", "u8", "f4", "f8"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("op", LOGICAL)
@pytest.mark.parametrize("dt", DTYPES)
def test_logical_reductions_of_any_dtype_are_numpys(op, dt):
    a = np.array([3, 0, 1, 0, 2], dtype=dt)
    for method in ("reduce", "accumulate"):
        # before: "No loop matching the specified signature" for non-bool input
        for arr in (a, a[:0], a.reshape(5, 1)):
            got = _outcome(getattr(getattr(nu, op), method), arr)
            assert got == _outcome(getattr(getattr(np, op), method), arr)
    assert _outcome(getattr(nu, op).reduceat, a, [0, 2]) == \
        _outcome(getattr(np, op).reduceat, a, [0, 2])


@pytest.mark.parametrize("op", LOGICAL)
@pytest.mark.parametrize("d1", DTYPES)
@pytest.mark.parametrize("d2", DTYPES)
def test_logical_ops_of_mixed_dtypes_are_numpys(op, d1, d2):
    a = np.array([0, 1, 2, 0], dtype=d1)
    b = np.array([1, 0, 5, 0], dtype=d2)
    # before: int64 with uint64 raised UFuncTypeError (no common loop)
    assert _outcome(getattr(nu, op), a, b) == _outcome(getattr(np, op), a, b)
    assert _outcome(getattr(nu, op), a[0], b[1]) == _outcome(getattr(np, op), a[0], b[1])


@pytest.mark.parametrize("op", LOGICAL)
@pytest.mark.parametrize("scalar", [1e300, -1e300, 2**70, -(2**70), 1j * 1e300, float("nan")])
def test_logical_ops_with_python_scalars_beyond_the_dtype_are_numpys(op, scalar):
    for a in (np.array([0.0, 1.5], dtype="f4"), np.array([0, 7], dtype="i1")):
        # before: float32 with 1e300 warned "overflow encountered in cast"
        assert _outcome(getattr(nu, op), a, scalar) == _outcome(getattr(np, op), a, scalar)
        assert _outcome(getattr(nu, op), scalar, a) == _outcome(getattr(np, op), scalar, a)


# ---- nclx.config objects made before their with statement (review 27)
import threading                                    # noqa: E402

import nclx                                         # noqa: E402


def _reassociate():
    return nclx.config()["settings"]["reassociate"]


def test_a_config_object_made_before_its_with_puts_the_old_value_back():
    assert _reassociate() is False
    cfg = nclx.config(reassociate=True)          # a statement: applied at once
    assert _reassociate() is True
    with cfg:
        assert _reassociate() is True
    assert _reassociate() is False               # before: True for good

    def make():
        return nclx.config(reassociate=True)
    with make():
        assert _reassociate() is True
    assert _reassociate() is False               # before: True for good
    with cfg:                                    # entered again: applies on entry
        assert _reassociate() is True
    assert _reassociate() is False


def test_a_statement_s_setting_stays_and_blocks_still_nest():
    try:
        nclx.config(reassociate=True)
        with nclx.config(reassociate=False):
            assert _reassociate() is False
        assert _reassociate() is True
        cfg = nclx.config(reassociate=False)     # made, then the setting changed
        nclx.config(reassociate=True)
        with cfg:
            assert _reassociate() is False
        assert _reassociate() is True            # the value found on entry
    finally:
        nclx.config(reassociate=False)


def test_objects_kept_one_after_the_other_put_back_the_value_before_the_first():
    try:
        a, b = nclx.config(reassociate=True), nclx.config(reassociate=False)
        with b:
            with a:
                assert _reassociate() is True
            assert _reassociate() is False
        assert _reassociate() is False           # from before a was made
        nclx.config(reassociate=True)            # dropped: from now on
        later = nclx.config(reassociate=False)   # kept after a statement
        with later:
            assert _reassociate() is False
        assert _reassociate() is True            # the statement's value
    finally:
        nclx.config(reassociate=False)


# ---- nclx.ufuncs twins: operands that are not arrays, overrides, cast keywords
import array                                        # noqa: E402
import enum                                         # noqa: E402


class _ArrayObj:
    def __init__(self, v):
        self.v = np.asarray(v)

    def __array__(self, dtype=None, copy=None):
        return self.v if dtype is None else self.v.astype(dtype)


NON_ARRAYS = [
    ("equal", (["a", "b"], ["a", "c"])),
    ("add", (["a"], ("b",))),
    ("less", (array.array("b", [1, 2]), 300)),
    ("less", ([np.int8(1)], 300)),
    ("greater_equal", (_ArrayObj(np.array([1, 2], np.uint8)), -1)),
    ("equal", (memoryview(b"ab"), 97)),
    ("not_equal", (_ArrayObj(np.array(["x"])), "x")),
    ("add", ([1, 2], 3)),                          # numbers: nclx's loops, as before
    ("add", ([[1], [2, 3]], 1)),                   # NumPy's ValueError
    ("logical_and", ([np.datetime64("2020-01-01")], True)),
]


@pytest.mark.parametrize("op,args", NON_ARRAYS, ids=[f"{o}-{i}" for i, (o, _) in
                                                     enumerate(NON_ARRAYS)])
def test_operands_that_are_not_arrays_are_routed_as_numpy_converts_them(op, args):
    # before: "did not contain a loop with signature matching types StrDType",
    # "Python integer 300 out of bounds for int8"
    assert _outcome(getattr(nu, op), *args) == _outcome(getattr(np, op), *args)


def test_an_override_receives_nclx_s_ufunc_on_every_call():
    seen = []

    class Sub(np.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kw):
            seen.append(ufunc)
            return NotImplemented

    class Duck:
        def __array_ufunc__(self, ufunc, method, *inputs, **kw):
            seen.append(ufunc)
            return "duck"

    s = np.arange(3, dtype=np.int8).view(Sub)
    for call in (lambda: nu.less(s, 100), lambda: nu.less(s, 1000),
                 lambda: nu.equal(np.array(["a"]), Duck()),
                 lambda: nu.logical_and(np.array(["2020-01-01"], "M8[D]"), Duck()),
                 lambda: nu.less(np.arange(3, dtype=np.int8), 2**70,
                                 out=np.empty(3, bool).view(Sub))):
        seen.clear()
        try:
            call()
        except TypeError:
            pass                 # every override said NotImplemented: NumPy's TypeError
        assert seen and all(u is seen[0] for u in seen)
        assert seen[0] is not getattr(np, seen[0].__name__)    # before: NumPy's twin


class _Big(enum.IntEnum):
    BIG = 2**40


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater",
                                "greater_equal"])
def test_comparisons_with_python_ints_under_cast_keywords_are_numpys(op):
    a8 = np.array([1, 0, -3], np.int8)
    for args, kw in (((a8, 1), dict(casting="equiv")), ((a8, 1), dict(casting="no")),
                     ((np.arange(3), 2**32), dict(signature=("h", None, None))),
                     ((False, 2**32), dict(signature=("h", None, None))),
                     ((a8, 5), dict(dtype=np.int16)), ((a8, _Big.BIG), {})):
        # before: TypeError "cannot cast Python int to int8 under 'equiv'",
        # OverflowError "out of bounds for int16"
        got = _outcome(getattr(nu, op), *args, **kw)
        want = _outcome(getattr(np, op), *args, **kw)
        assert got == want, (args, kw)
