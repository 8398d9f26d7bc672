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
