"""The shipped hooks: nclx.ledger and nclx.checked."""
import warnings

import numpy as np
import pytest

import nclx


def test_ledger_records_fields_and_table():
    a = np.arange(100_000, dtype=np.float64)
    with nclx.ledger.recording() as led:
        b = a * 2.0
        s = b.sum()
    recs = {(r.op, r.kind): r for r in led.records()}
    mul = recs[("multiply", "elementwise")]
    assert mul.dtypes == ("float64", "float64", "float64")
    assert mul.calls == 1 and mul.elements == 100_000 and mul.ns > 0
    assert recs[("add", "reduce")].elements >= 99_999
    assert s == a.sum() * 2
    text = led.table()
    assert text.splitlines()[0].split()[:3] == ["op", "kind", "dtypes"]
    assert "multiply" in text and "total" in text.splitlines()[-1]
    assert not nclx.is_installed()          # recording() restored NumPy


def test_ledger_is_empty_outside_the_block_and_nested_ledgers_both_count():
    with nclx.ledger.recording() as outer:
        np.arange(10) + 1
        with nclx.ledger.recording() as inner:
            np.arange(10) * 2
    np.arange(10) - 1
    assert {r.op for r in outer.records()} == {"add", "multiply"}
    assert {r.op for r in inner.records()} == {"multiply"}
    assert nclx.ledger.Ledger().table() == "(no loop calls recorded)"


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64",
                                   "uint8", "uint16", "uint32", "uint64"])
def test_checked_raises_on_integer_overflow(dtype):
    info = np.iinfo(dtype)
    big = np.array([info.max, 1], dtype=dtype)
    small = np.array([info.min, 1], dtype=dtype)
    with nclx.checked():
        with pytest.raises(OverflowError, match=f"add \\({dtype}\\)"):
            big + big
        with pytest.raises(OverflowError, match="subtract"):
            small - np.array([1, 1], dtype=dtype)
        with pytest.raises(OverflowError, match="multiply"):
            big * np.array([2, 1], dtype=dtype)
        with pytest.raises(OverflowError, match="add"):
            np.full(10, info.max, dtype=dtype).sum(dtype=dtype)
        ok = np.array([1, 2], dtype=dtype)
        assert list(ok + ok) == [2, 4] and list(ok * ok) == [1, 4]
        if info.min < 0:
            with pytest.raises(OverflowError, match="negative"):
                -small
            with pytest.raises(OverflowError, match="absolute"):
                np.abs(small)
    assert list(big + big)[1] == 2          # wraps again outside, no error


def test_checked_leaves_float_overflow_to_the_surrounding_errstate():
    with nclx.checked():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = np.array([1e308]) * 10
        assert np.isinf(r[0]) and any("overflow" in str(x.message) for x in w)
        with np.errstate(over="raise"):
            pass
    with np.errstate(over="raise"):
        with nclx.checked():
            with pytest.raises(FloatingPointError):
                np.array([1e308]) * 10


def test_checked_restores_numpy_and_errstate():
    before = np.geterr()
    with pytest.raises(OverflowError):
        with nclx.checked():
            np.array([2**62]) * 4
    assert np.geterr() == before
    assert not nclx.is_installed()
    assert nclx.hooks.chains() == {}
