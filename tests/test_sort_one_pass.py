"""np.sort's copy and in-order check in one pass (nclx._ncl.sortcopy).

Under install() np.sort's dispatcher calls nclx's implementation: it copies
an eligible array on the team, checking order block by block, returns the
copy as it is when it was in order and the sort cannot move equal keys,
else sorts the copy in place as NumPy's function does.  Every result is
compared with stock NumPy's bytes, dtype, shape and flags; calls it must
leave to NumPy (other layouts, subclasses, unstable float sorts, watched
ops, malformed arguments) are checked to reach NumPy's function, errors
included."""
import contextlib
import os
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
from nclx import hooks
from nclx._ncl import sortcopy

from sort_fixtures import needs_slots

pytestmark = [needs_slots, pytest.mark.skipif(sortcopy.layout() != "", reason=f"np.sort's dispatcher "
                                              f"is not the one nclx knows: {sortcopy.layout()}")]

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64"]
KINDS = [None, "quicksort", "heapsort", "stable", "mergesort"]


@pytest.fixture(params=["vector", "scalar"], autouse=True)
def copy_kernel(request):
    """Each test with the AVX2 copy (where the CPU has it) and the
    one-element-at-a-time copy."""
    if request.param == "vector" and not sortcopy.vector():
        pytest.skip("this CPU has no AVX2: the one-at-a-time copy is tested")
    old = sortcopy.vector(request.param == "vector")
    yield
    sortcopy.vector(old)


@contextlib.contextmanager
def one_pass(min_bytes=0, threads=None):
    """install() with the one-pass path taken from ``min_bytes`` on."""
    old_min, old_threads = sortcopy.min_bytes(min_bytes), nclx.get_num_threads()
    if threads is not None:
        nclx.set_num_threads(threads)
    nclx.install()
    try:
        yield
    finally:
        nclx.uninstall()
        sortcopy.min_bytes(old_min)
        nclx.set_num_threads(old_threads)


def _stock(a, *args, **kwargs):
    assert not sortcopy.is_swapped()
    try:
        return np.sort(a, *args, **kwargs), None
    except Exception as exc:        # noqa: BLE001 - the error is the result compared
        return None, exc


def _same(got, want):
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert got.flags.c_contiguous == want.flags.c_contiguous
    assert got.flags.owndata and got.flags.writeable and got.base is None


def _compare(a, *args, taken=None, **kwargs):
    want, err = _stock(a, *args, **kwargs)
    with one_pass():
        before = sortcopy.stats()[0]
        if err is not None:
            with pytest.raises(type(err)) as info:
                np.sort(a, *args, **kwargs)
            assert str(info.value) == str(err)
            got = None
        else:
            got = np.sort(a, *args, **kwargs)
        used = sortcopy.stats()[0] - before
    if got is not None:
        _same(got, want)
    if taken is not None:
        assert used == int(taken), (a.dtype, args, kwargs)
    return got


def _ordered(dt, n, rng):
    if dt == "bool":
        a = np.zeros(n, bool)
        a[n // 3:] = True
        return a
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        a = np.sort(rng.integers(info.min, info.max, n, dtype=dt, endpoint=True))
        a[0], a[-1] = info.min, info.max
        return np.sort(a)
    a = np.sort(rng.standard_normal(max(n - 7, 0)).astype(dt))
    k = int(np.searchsorted(a, 0))
    nan, negnan = np.array([np.nan, np.copysign(np.nan, -1.0)], dtype=dt)
    # equal keys of other bits (both zeros) and NaNs of both signs, in NumPy's order
    a = np.concatenate([a[:k], np.array([0.0, -0.0, 0.0, -0.0], dtype=dt), a[k:],
                        np.array([nan, negnan, nan], dtype=dt)])
    return a[:n]


def _descent(a, i):
    b = a.copy()
    if b.dtype == bool:
        b[i - 1], b[i] = True, False
    else:
        b[i - 1] = b[i]
        b[i] = b[0] if b.dtype.kind in "iu" else -np.inf
    return b


#: the dtypes whose copies check order as they write (ncl_copycheck.h)
KEYS = ["int64", "uint64", "float64"]


@pytest.mark.parametrize("dt", ALL)
def test_ordered_data_every_kind(dt):
    a = _ordered(dt, 50_001, np.random.default_rng(1))
    key = dt in KEYS
    for kind in KINDS:
        stable_sort = kind in ("stable", "mergesort")
        _compare(a, kind=kind, taken=key and (stable_sort or dt != "float64"))
    _compare(a, stable=True, taken=key)
    _compare(a, stable=False, taken=key and dt != "float64")


@pytest.mark.parametrize("dt", KEYS)
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_one_descent_anywhere(dt, threads):
    n = 6 * 4096 + 17
    a = _ordered(dt, n, np.random.default_rng(2))
    with one_pass(threads=threads):
        pass
    # either side of the threads' parts and of the 4-element vectors
    edges = sorted({i + d for t in (2, 3, 7) for k in range(1, t)
                    for i in [k * n // t] for d in (-1, 0, 1)})
    for i in [1, 2, 3, 4, 5, 7, 8, 9, n // 2, n - 5, n - 4, n - 3, n - 2, n - 1] + edges:
        b = _descent(a, i)
        want, _ = _stock(b, kind="stable")
        with one_pass(threads=threads):
            got = np.sort(b, kind="stable")
            ordered_before = sortcopy.stats()[1]
            np.sort(a, kind="stable")
            assert sortcopy.stats()[1] == ordered_before + 1
        _same(got, want)


@pytest.mark.parametrize("dt", ["int64", "uint64", "float64", "int16"])
def test_random_and_reversed(dt):
    rng = np.random.default_rng(3)
    a = _ordered(dt, 40_000, rng)
    for b in (rng.permutation(a), a[::-1].copy()):
        for kind in KINDS:
            _compare(b, kind=kind)


def test_axis_forms():
    rng = np.random.default_rng(4)
    a = np.arange(30_000, dtype=np.int64)
    m = a.reshape(100, 300)
    _compare(a, -1, taken=True)
    _compare(a, 0, taken=True)
    _compare(a, axis=None, taken=True)
    _compare(m, axis=None, taken=True)                 # flattened, C order
    _compare(m, taken=False)                           # N-d along an axis: NumPy's function
    _compare(m, axis=0, taken=False)
    _compare(rng.permutation(m.ravel()).reshape(100, 300), None, taken=True)
    _compare(np.asfortranarray(m), axis=None, taken=False)
    _compare(a, axis=np.int64(0), taken=False)
    _compare(a, axis=True, taken=False)


def test_calls_left_to_numpy():
    a = np.arange(20_000, dtype=np.int64)

    class Sub(np.ndarray):
        pass

    _compare(a[::2], taken=False)                       # not contiguous
    _compare(a[::-1], taken=False)
    _compare(a.view(Sub), taken=False)                  # a subclass
    _compare(a.astype(">i8"), taken=False)              # byte-swapped
    _compare(a.astype(np.float16), taken=False)         # not a fixed-width dtype of nclx
    _compare(a.astype(object), taken=False)
    _compare(list(range(100)), taken=False)
    _compare(a.astype(np.float64), kind="quicksort", taken=False)
    _compare(a, kind="q", taken=False)                  # NumPy's own parsing of short names
    _compare(a, kind="Stable", taken=False)
    unaligned = np.frombuffer(b"\0" + a.tobytes(), dtype=np.int64, offset=1)
    assert not unaligned.flags.aligned
    _compare(unaligned, taken=False)
    s = np.zeros(10_000, dtype=[("x", "i8"), ("y", "f8")])
    _compare(s, order="y", taken=False)


def test_errors_are_numpys():
    a = np.arange(20_000, dtype=np.int64)
    _compare(a, kind="bogus", taken=False)
    _compare(a, axis=1, taken=False)
    _compare(a, axis=-2, taken=False)
    _compare(a, axis="0", taken=False)
    _compare(a, kind="stable", stable=True, taken=False)
    _compare(a, stable="yes", taken=False)
    _compare(a, order="x", taken=False)
    _compare(a, 0, None, None, taken=True)
    with one_pass():
        with pytest.raises(TypeError):
            np.sort(a, bogus=1)
        with pytest.raises(TypeError):
            np.sort(a, 0, None, None, None)
        with pytest.raises(TypeError):
            np.sort()


def test_metadata_dtype_kept():
    dt = np.dtype(np.int64, metadata={"unit": "m"})
    a = np.arange(10_000).astype(dt)
    got = _compare(a, kind="stable", taken=True)
    assert got.dtype.metadata == {"unit": "m"}


def test_result_is_a_new_array():
    a = np.arange(30_000, dtype=np.float64)
    with one_pass():
        r = np.sort(a, kind="stable")
        s = np.sort(a, kind="stable")
    assert not np.shares_memory(r, a) and not np.shares_memory(r, s)
    a[:] = -1.0
    r[0] = 5.0
    assert s[0] == 0.0 and s[-1] == 29_999.0


def test_watched_calls_go_through_numpy():
    a = np.arange(30_000, dtype=np.int64)
    seen = []

    def spy(call):
        seen.append(call.op)
        call.next()

    with one_pass():
        before = sortcopy.stats()[0]
        with hooks.register("funnel", "sort", spy):
            r = np.sort(a, kind="stable")
        with hooks.register("funnel", "convert", spy):
            np.sort(a, kind="stable")
        with nclx.ledger.recording() as led:
            np.sort(a, kind="stable")
        assert sortcopy.stats()[0] == before
    assert "sort" in seen and "copy" in seen
    assert [r.op for r in led.records()].count("sort") == 1
    assert r.tobytes() == a.tobytes()


def test_swap_restores_numpy():
    impl, d = np.sort._implementation, np.sort.__dict__
    sort = np.sort
    with one_pass():
        assert sortcopy.is_swapped()
        assert np.sort is sort and np.sort._implementation is impl and np.sort.__dict__ is d
        with nclx.installed():
            pass
        assert sortcopy.is_swapped()
    assert not sortcopy.is_swapped()
    assert np.sort._implementation is impl and np.sort.__dict__ is d
    for kw in ({"sorts": False}, {"copies": False}):
        nclx.install(**kw)
        try:
            assert not sortcopy.is_swapped()
        finally:
            nclx.uninstall()
    assert not sortcopy.is_swapped()


def test_the_implementation_called_directly_is_numpys():
    """ndarray.__array_function__ and overriders call ``_implementation``:
    NumPy's function, whatever nclx does."""
    a = np.arange(30_000, dtype=np.int64)[::-1].copy()
    want = np.sort(a)
    with one_pass():
        before = sortcopy.stats()[0]
        got = np.sort._implementation(a)
        assert sortcopy.stats()[0] == before
    _same(got, want)


def test_threads_at_once():
    rng = np.random.default_rng(6)
    arrays = [np.arange(40_000, dtype=np.int64), rng.permutation(40_000).astype(np.float64),
              np.arange(40_000, dtype=np.float32), _descent(np.arange(40_000, dtype=np.int64), 39_999)]
    wants = [_stock(a, kind="stable")[0] for a in arrays]
    errors = []

    def work(k):
        try:
            for _ in range(30):
                got = np.sort(arrays[k % 4], kind="stable")
                if got.tobytes() != wants[k % 4].tobytes():
                    errors.append(k)
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)

    with one_pass():
        ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_after_fork():
    a = np.arange(50_000, dtype=np.int64)
    with one_pass():
        np.sort(a)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ok = np.sort(a, kind="stable").tobytes() == a.tobytes() and \
                    np.sort(a[::-1].copy()).tobytes() == a.tobytes()
                code = 0 if ok else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_default_size_threshold():
    a = np.arange(1000, dtype=np.int64)
    assert sortcopy.min_bytes() == 4 << 20
    nclx.install()
    try:
        before = sortcopy.stats()[0]
        np.sort(a)
        assert sortcopy.stats()[0] == before
    finally:
        nclx.uninstall()
    with pytest.raises(ValueError, match="min_bytes"):
        sortcopy.min_bytes(-1)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["int64", "uint64", "float64", "float32", "int8"]),
       st.integers(1, 9000), st.integers(0, 3), st.sampled_from(KINDS),
       st.integers(1, 4), st.integers(0, 2 ** 32 - 1))
def test_hypothesis(dt, n, how, kind, threads, seed):
    rng = np.random.default_rng(seed)
    a = _ordered(dt, n, rng) if dt != "int8" else np.sort(rng.integers(-128, 128, n, dtype=dt))
    if how == 1 and n > 1:
        a = _descent(a, int(rng.integers(1, n)))
    elif how == 2:
        a = rng.permutation(a)
    elif how == 3:
        a = a[::-1].copy()
    want, _ = _stock(a, kind=kind)
    with one_pass(threads=threads):
        got = np.sort(a, kind=kind)
    _same(got, want)


def test_refcounts_steady():
    a = np.arange(30_000, dtype=np.int64)
    impl = np.sort._implementation
    with one_pass():
        for rounds in (10, 200):
            ra, rd = sys.getrefcount(a), sys.getrefcount(a.dtype)
            for _ in range(rounds):
                np.sort(a, kind="stable")
                np.sort(a[::-1].copy(), kind="stable")
            # no reference per call gained or lost (the int64 dtype is shared:
            # allow NumPy's own caches one)
            assert sys.getrefcount(a) == ra and abs(sys.getrefcount(a.dtype) - rd) <= 1
    with one_pass():
        pass
    r, rs = sys.getrefcount(impl), sys.getrefcount(np.sort)
    for _ in range(5):
        with one_pass():
            pass
    after = (sys.getrefcount(impl), sys.getrefcount(np.sort))
    assert after == (r, rs)


def test_a_source_written_meanwhile_still_sorts():
    """Review: the check read the source a second time after copying it, so
    a thread writing the source between the two reads got an unsorted copy
    back as "in order".  Now each block is read once (into a buffer in the
    cache), checked and written from there: every result is sorted."""
    n, k = 300_000, 150_001
    x = np.arange(n, dtype=np.int64)
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            x[k] = -1
            x[k] = k

    unsorted = 0
    with one_pass(min_bytes=0, threads=2):
        t = threading.Thread(target=writer)
        t.start()
        try:
            for _ in range(1500):
                r = np.sort(x)
                unsorted += not bool((r[1:] >= r[:-1]).all())
        finally:
            stop.set()
            t.join()
    assert unsorted == 0


def test_an_argument_given_twice_is_numpys_error():
    """Review: nclx's entry took a keyword that repeated a positional
    argument (reached then by calling ``_implementation`` directly; now the
    entry sits before NumPy's dispatcher, which raises)."""
    a = np.arange(20_000, dtype=np.int64)
    cases = [((a, -1), {"axis": 0}), ((a, -1, None), {"kind": "stable"}),
             ((a, -1, None, None), {"order": None}), ((a,), {"a": a}),
             ((a, -1, None, None, None), {})]
    errors = []
    for args, kw in cases:
        with pytest.raises(TypeError) as info:
            np.sort(*args, **kw)
        errors.append(str(info.value))
    with one_pass():
        before = sortcopy.stats()[0]
        for (args, kw), msg in zip(cases, errors):
            with pytest.raises(TypeError) as info:
                np.sort(*args, **kw)
            assert str(info.value) == msg
        assert sortcopy.stats()[0] == before


def test_signature_unchanged():
    import inspect
    want = inspect.signature(np.sort)
    with one_pass():
        assert inspect.signature(np.sort) == want


def _child(code, env=None):
    """Run ``code`` in a fresh interpreter (a crash must not take pytest down)."""
    import subprocess
    e = dict(os.environ)
    e.update(env or {})
    # run from this directory: the repository's source tree must not shadow nclx
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=e, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_team_smaller_than_asked_for():
    """Review: with OMP_THREAD_LIMIT=2 and 4 threads asked for, the copy was
    split by the team's size but its parts' edges were checked by the
    count asked for (and flags of parts nobody ran were never cleared): an
    unsorted copy came back as in order."""
    out = _child("""
import numpy as np, nclx
from nclx._ncl import sortcopy
nclx.install(); nclx.set_num_threads(4)
q = 1_000_000; n = 4 * q + 2
a = np.concatenate([np.arange(2 * q + 1, dtype=np.int64) + 10**9,
                    np.arange(2 * q + 1, n, dtype=np.int64)])
r = np.sort(a)
taken = sortcopy.stats()[0]
nclx.uninstall()
print(taken, r.tobytes() == np.sort(a).tobytes())
""", {"OMP_THREAD_LIMIT": "2"})
    assert out.split() == ["1", "True"]


def test_np_sort_rebound_by_the_user():
    """Review: swap_out()/swap_in() wrote into whatever object np.sort named
    then (a Python function: a crash at uninstall(); a mock: NumPy's
    dispatcher left swapped; a user's own dispatcher: hijacked).  nclx
    swaps only the dispatcher it checked at import."""
    out = _child("""
import numpy as np, nclx
from unittest import mock
from numpy._core.overrides import array_function_dispatch
from nclx._ncl import sortcopy
orig = np.sort
a = np.arange(1_000_000, dtype=np.int64)
np.sort = lambda *args, **kw: "mine"
nclx.uninstall()                           # never installed: nothing to touch
np.sort = orig
nclx.install()
with mock.patch("numpy.sort", side_effect=lambda *k, **kw: "patched"):
    with nclx.installed():
        pass
    nclx.uninstall()
print(sortcopy.is_swapped(), type(np.sort(a)).__name__)
def _disp(a, axis=None, kind=None, order=None, *, stable=None):
    return (a,)
@array_function_dispatch(_disp)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    return "user's sort"
nclx.install()
np.sort = sort
nclx.install()
print(np.sort(a))
nclx.uninstall()
np.sort = orig
print(sortcopy.is_swapped())
""")
    assert out.splitlines() == ["False ndarray", "user's sort", "False"]


def test_small_calls_skip_the_dispatchers_python_call():
    """An exact ndarray cannot override np.sort, so nclx's entry calls
    NumPy's implementation at once (NumPy's dispatcher first calls its
    Python relevant-argument function); a subclass, or arguments outside
    the signature, still go through the dispatcher."""
    calls = []

    def prof(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)

    class Sub(np.ndarray):
        pass

    a = np.arange(10, dtype=np.float64)[::-1].copy()
    with one_pass(min_bytes=4 << 20):
        sys.setprofile(prof)
        try:
            r = np.sort(a, kind="stable")
            plain = list(calls)
            calls.clear()
            np.sort(a.view(Sub))
            sub = list(calls)
        finally:
            sys.setprofile(None)
    assert "_sort_dispatcher" not in plain and "sort" in plain
    assert "_sort_dispatcher" in sub
    assert r.tobytes() == np.arange(10, dtype=np.float64).tobytes()
