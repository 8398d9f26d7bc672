"""The shipped hooks: nclx.ledger and nclx.checked."""
import threading
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


# --------------------------------------------- checked(): review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# checked() is per thread: a stale record must not turn a float overflow
# into OverflowError, the mode must not leak into other threads (also under
# stress, side by side with plain threads), a threaded sum's overflow must
# not depend on the thread count, unsigned negation raises only for nonzero
# values, and float warnings/errors keep the ufunc's name.
@pytest.mark.usefixtures("threaded_clean")
def test_checked_stale_record_does_not_turn_float_overflow_into_overflowerror():
    big = np.full(4, 2**62, dtype=np.int64)
    f = np.full(4, 1e308)
    with nclx.checked():
        with np.errstate(over="ignore"):
            big * 4                       # silenced integer overflow
        with pytest.warns(RuntimeWarning, match="overflow encountered in multiply"):
            f * 10.0


@pytest.mark.usefixtures("threaded_clean")
def test_checked_does_not_leak_into_other_threads():
    inside, done = threading.Event(), threading.Event()
    box = {}

    def other():
        inside.wait(10)
        with warnings.catch_warnings(record=True) as w, np.errstate(all="raise"):
            warnings.simplefilter("always")
            try:
                r = np.full(8, 2**62, dtype=np.int64) * 4
                box["result"] = r
            except Exception as exc:     # noqa: BLE001 - record what leaked
                box["error"] = exc
        box["warnings"] = [str(x.message) for x in w]
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with nclx.checked():
        inside.set()
        done.wait(20)
    t.join(10)
    assert "error" not in box, box
    assert box["warnings"] == []
    with np.errstate(over="ignore"):
        assert (box["result"] == np.int64(2**62) * np.int64(4)).all()


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("threads", [1, 2])
def test_checked_sum_overflow_does_not_depend_on_thread_count(threads):
    n = 300_000
    x = np.zeros(n, dtype=np.int64)
    x[0] = np.iinfo(np.int64).max
    x[n // 2 + 100] = 1          # sequentially MAX + 1 overflows...
    x[n // 2 + 101] = -1         # ...a per-thread partial (1 - 1) would not
    nclx.set_num_threads(threads)
    with pytest.raises(OverflowError, match="add"):
        with nclx.checked():
            x.sum()


@pytest.mark.usefixtures("threaded_clean")
def test_checked_unsigned_negative_raises_for_nonzero_values():
    with nclx.checked():
        assert (-np.zeros(5, dtype=np.uint8) == 0).all()
        for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
            with pytest.raises(OverflowError, match="negative"):
                -np.array([0, 1], dtype=dt)


@pytest.mark.usefixtures("threaded_clean")
def test_checked_float_warnings_keep_the_ufunc_name():
    with nclx.checked(), pytest.warns(RuntimeWarning) as rec:
        np.full(3, 1e308) * 10.0
        np.full(3, 1.0) / 0.0
    msgs = {str(w.message) for w in rec}
    assert "overflow encountered in multiply" in msgs
    assert "divide by zero encountered in divide" in msgs


@pytest.mark.usefixtures("threaded_clean")
def test_checked_errstate_raise_outside_gives_floatingpointerror_with_name():
    with np.errstate(over="raise"), nclx.checked():
        with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
            np.full(3, 1e308) * 10.0


@pytest.mark.usefixtures("threaded_clean")
def test_checked_and_plain_threads_side_by_side_many_times():
    errors = []
    big = np.full(70_000, 2**62, dtype=np.int64)

    def checked_worker():
        for _ in range(20):
            try:
                with nclx.checked():
                    big * 4
                errors.append("checked thread did not raise")
            except OverflowError:
                pass

    def plain_worker():
        for _ in range(20):
            try:
                with nclx.installed(), np.errstate(all="raise"):
                    r = big * 4
            except Exception as exc:       # noqa: BLE001 - a leaked checked mode
                errors.append(f"plain thread: {exc!r}")
                continue
            if r[0] != np.int64(0):
                errors.append(f"plain thread got {r[0]}")

    threads = [threading.Thread(target=f) for f in (checked_worker, plain_worker) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert not nclx.is_installed()

