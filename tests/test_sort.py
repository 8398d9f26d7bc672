"""The Sort subsystem: np.sort / np.argsort / ndarray.sort under install()
and nclx.sort / nclx.argsort, against stock NumPy bit for bit."""
import multiprocessing
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
import nclx.hooks as hooks
from nclx._ncl import sorting
from team_fixtures import threads  # noqa: F401 - fixture: 1, 2, 3, 7 threads
from sort_fixtures import lowered, needs_slots, small  # noqa: F401 - small is a fixture

CHARS = "?bBhHiIlLqQfd"
KINDS = ["quicksort", "heapsort", "stable"]


def _data(char, n, pattern, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(char)
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(dt)
    elif dt.kind == "f":
        a = rng.standard_normal(n).astype(dt) * 100
        if pattern == "special":
            pool = np.array([np.nan, np.inf, -np.inf, 0.0, 0.0, 1.5, -2.0], dtype=dt)
            a = pool[rng.integers(0, len(pool), n)]
        if pattern == "zeros":
            a = np.where(rng.integers(0, 2, n) == 1, -0.0, 0.0).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if pattern == "sorted":
        a = np.sort(a, kind="stable")
    elif pattern == "reversed":
        a = np.sort(a, kind="stable")[::-1].copy()
    elif pattern == "equal":
        a = np.full(n, a[0] if n else 0, dtype=dt)
    elif pattern == "few":
        a = a[rng.integers(0, max(1, min(n, 3)), n)] if n else a
    return a


def _is_sorted_perm(a, idx):
    assert np.array_equal(np.sort(idx), np.arange(a.size))
    ref = np.sort(a, kind="stable")
    got = a[idx]
    assert np.array_equal(got, ref, equal_nan=a.dtype.kind == "f")


SIZES = [0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 100, 257, 1000, 4099]


CASES = [(c, p) for c in CHARS for p in ("random", "sorted", "reversed", "equal", "few")] + \
    [(c, p) for c in "fd" for p in ("special", "zeros")]


@needs_slots
@pytest.mark.parametrize("char, pattern", CASES)
def test_sort_equals_stock_every_dtype_kind_size(char, pattern, small, threads):
    for n in SIZES:
        a = _data(char, n, pattern, seed=n)
        for kind in KINDS:
            ref = np.sort(a, kind=kind)
            refi = np.argsort(a, kind=kind)
            with nclx.installed():
                got = np.sort(a, kind=kind)
                goti = np.argsort(a, kind=kind)
                b = a.copy()
                b.sort(kind=kind)
            assert got.tobytes() == ref.tobytes(), (char, n, kind)
            assert b.tobytes() == ref.tobytes(), (char, n, kind)
            assert goti.dtype == refi.dtype and goti.shape == refi.shape
            if kind == "stable":
                assert goti.tobytes() == refi.tobytes(), (char, n, kind)
            else:
                _is_sorted_perm(a, goti)


@needs_slots
@pytest.mark.parametrize("char", "bhilfd")
def test_axis_sorts_strided_and_orders(char, small, threads):
    rng = np.random.default_rng(1)
    base = (rng.standard_normal((37, 29, 5)) * 50).astype(char)
    views = [base, base[::2], base[:, ::-3], base.transpose(2, 0, 1), np.asfortranarray(base),
             base[..., 1], base.reshape(-1), base.reshape(-1)[::-7],
             base.astype(base.dtype.newbyteorder(">"))]
    for v in views:
        for axis in [None] + list(range(-v.ndim, v.ndim)):
            for kind in KINDS:
                ref = np.sort(v, axis=axis, kind=kind)
                refi = np.argsort(v, axis=axis, kind="stable")
                with nclx.installed():
                    got = np.sort(v, axis=axis, kind=kind)
                    goti = np.argsort(v, axis=axis, kind="stable")
                    w = v.copy()
                    if axis is not None:
                        w.sort(axis=axis, kind=kind)
                        assert w.tobytes() == ref.tobytes()
                assert got.tobytes() == ref.tobytes() and got.strides == ref.strides
                assert goti.tobytes() == refi.tobytes()


@needs_slots
def test_row_batch_lanes_2d_3d_and_overlap(small, threads):
    rng = np.random.default_rng(2)
    for shape in [(1000, 100), (3, 7, 50), (2, 1), (1, 5000), (64, 64)]:
        a = rng.standard_normal(shape)
        ref = np.sort(a, axis=-1)
        with nclx.installed():
            got = np.sort(a, axis=-1)
            b = a.copy()
            b.sort()
            # a second sort of the same array right after: no stale lanes
            c = a.copy()
            c.sort()
        assert got.tobytes() == ref.tobytes() and b.tobytes() == ref.tobytes()
        assert c.tobytes() == ref.tobytes()
    # overlapping lanes (as_strided): NumPy sorts lane after lane; so must nclx
    buf = rng.standard_normal(1100)      # room for 20 lanes of 100 at 400-byte steps
    for stride in (8, 80, 400):
        x = buf.copy()
        y = buf.copy()
        vx = np.lib.stride_tricks.as_strided(x, (20, 100), (stride, 8), writeable=True)
        vy = np.lib.stride_tricks.as_strided(y, (20, 100), (stride, 8), writeable=True)
        vx.sort(axis=1)
        with nclx.installed():
            vy.sort(axis=1)
        assert x.tobytes() == y.tobytes()


def _outcome(fn, args, kwargs):
    try:
        r = fn(*args, **kwargs)
        return ("ok", np.asarray(r).tobytes(), np.asarray(r).shape)
    except Exception as exc:     # noqa: BLE001 - compared with NumPy's
        return (type(exc), str(exc))


@needs_slots
def test_zero_d_empty_and_errors_are_numpy_s(small):
    cases = [((np.float64(1.0),), {}), ((np.array(2.0),), {"axis": None}),
             ((np.arange(3.0),), {"axis": 2}), ((np.arange(3.0),), {"kind": "bogus"}),
             ((np.arange(3.0),), {"kind": "stable", "stable": True}),
             ((np.arange(3.0),), {"kind": 3}), ((np.zeros((0, 3)),), {"axis": 0}),
             ((np.array([], dtype="f8"),), {}), (([3, 1, 2],), {}), ((np.arange(4.0),), {"axis": 1.5})]
    for numpy_fn, nclx_fn in ((np.sort, nclx.sort), (np.argsort, nclx.argsort)):
        for args, kwargs in cases:
            ref = _outcome(numpy_fn, args, kwargs)
            with nclx.installed():
                assert _outcome(numpy_fn, args, kwargs) == ref, (numpy_fn, args, kwargs)
            assert _outcome(nclx_fn, args, kwargs) == ref, (nclx_fn, args, kwargs)


@needs_slots
def test_lexsort_unique_median_searchsorted(small):
    rng = np.random.default_rng(3)
    k1 = rng.integers(0, 5, 3000)
    k2 = rng.standard_normal(3000)
    ref = (np.lexsort((k2, k1)), np.unique(k1), np.unique(k2, return_index=True),
           np.median(k2), np.searchsorted(np.sort(k2), k2[:50]))
    with nclx.installed():
        got = (np.lexsort((k2, k1)), np.unique(k1), np.unique(k2, return_index=True),
               np.median(k2), np.searchsorted(np.sort(k2), k2[:50]))
    assert ref[0].tobytes() == got[0].tobytes()
    assert ref[1].tobytes() == got[1].tobytes()
    assert all(x.tobytes() == y.tobytes() for x, y in zip(ref[2], got[2]))
    assert np.float64(ref[3]).tobytes() == np.float64(got[3]).tobytes()
    assert ref[4].tobytes() == got[4].tobytes()


def test_nclx_sort_without_install_equals_numpy(small, threads):
    rng = np.random.default_rng(4)
    for shape in [(5000,), (40, 30), (3, 4, 5), (0,), (1,)]:
        a = rng.standard_normal(shape)
        for axis in [-1, 0, None]:
            for kind in [None, "stable", "quick", "heap", "mergesort"]:
                assert nclx.sort(a, axis=axis, kind=kind).tobytes() == \
                    np.sort(a, axis=axis, kind=kind).tobytes()
            r, e = nclx.argsort(a, axis=axis, stable=True), np.argsort(a, axis=axis, stable=True)
            assert r.tobytes() == e.tobytes() and r.strides == e.strides
    # what nclx leaves to NumPy: field order, subclasses, other dtypes
    rec = np.array([(2, 1.0), (1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])
    assert nclx.sort(rec, order="b").tobytes() == np.sort(rec, order="b").tobytes()
    m = np.ma.array([3, 1, 2], mask=[0, 1, 0])
    assert type(nclx.sort(m)) is np.ma.MaskedArray
    c = np.array([3 + 1j, 1 - 2j])
    assert nclx.sort(c).tobytes() == np.sort(c).tobytes()


@needs_slots
def test_ledger_rows_and_hooks_see_each_sort(small):
    a = np.random.default_rng(5).standard_normal(1000)
    with nclx.ledger.recording() as led:
        np.sort(a)
        np.argsort(a, kind="stable")
    rows = {(r.op, r.kind, r.subsystem, r.dtypes) for r in led.records()}
    assert ("sort", "call", "sort", ("float64",)) in rows
    assert ("argsort", "call", "sort", ("float64", "int64")) in rows
    seen = []

    def spy(call):
        seen.append((call.op, call.n, call.dtypes))
        call.next()

    with nclx.installed(), hooks.register("funnel", "sort", spy):
        got = np.sort(a)
    assert ("sort", 1000, ("float64",)) in seen
    assert got.tobytes() == np.sort(a).tobytes()


@needs_slots
def test_hooks_replace_and_raise(small):
    a = np.random.default_rng(6).integers(0, 100, 500)

    def descending(call):
        _, out = call.views()
        out[:] = np.sort(out)[::-1]

    with nclx.installed(), hooks.register("funnel", "sort", descending):
        got = np.sort(a)
    assert got.tobytes() == np.sort(a)[::-1].tobytes()

    class Ones(hooks.Kernel):
        def __call__(self, inputs, out):
            out[:] = 1

    with nclx.installed(), hooks.register("kernel", ("sort", "int64"), Ones()):
        assert (np.sort(a) == 1).all()
    with nclx.installed(), hooks.register("python", "sort", lambda c: "replaced"):
        assert nclx.sort(a) == "replaced"

    def boom(call):
        raise RuntimeError("hook failed")

    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with nclx.installed(), hooks.register("funnel", "sort", boom) as h:
            got = np.sort(a)
            assert h.errors == 1 and isinstance(h.last_error, RuntimeError)
    finally:
        sys.unraisablehook = old
    assert got.tobytes() == np.sort(a).tobytes()        # the chain still sorted it
    assert len(seen) == 1


@needs_slots
def test_nclxarray_routes_np_sort_through_python_chain():
    a = hooks.aware(np.array([3.0, 1.0, 2.0]))
    seen = []

    def spy(c):
        seen.append(c.ufunc.__name__)
        return c.next()

    with hooks.register("python", "sort", spy):
        r = np.sort(a)
        i = np.argsort(a)
    assert seen == ["sort", "argsort"]
    assert type(r) is hooks.NclxArray and r.view(np.ndarray).tolist() == [1.0, 2.0, 3.0]
    assert type(i) is hooks.NclxArray and i.view(np.ndarray).tolist() == [1, 2, 0]


@needs_slots
def test_concurrent_threads_sort_correctly(small):
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(20000) for _ in range(8)]
    refs = [np.sort(x, kind="stable").tobytes() for x in arrays]
    out = [None] * 8

    def work(i):
        for _ in range(5):
            out[i] = np.sort(arrays[i], kind=KINDS[i % 3]).tobytes()

    with nclx.installed():
        ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert out == refs


@needs_slots
def test_sorts_inside_a_sort_hook_and_threads_that_end(small):
    """A hook that sorts while a sort runs on the same thread (NumPy 2.5: the
    outer sort holds the thread's loop data, the inner one takes its own),
    and threads that sort small arrays and end (each frees its loop data):
    stock's bytes every time."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal(3000)
    m = rng.integers(0, 50, (6, 40))
    small_ = rng.standard_normal(7)
    inner = []

    def sorting_spy(call):
        inner.append(np.sort(small_).tobytes())
        inner.append(np.sort(m, axis=1).tobytes())
        call.next()

    with nclx.installed(), hooks.register("funnel", "sort", sorting_spy):
        got = np.sort(a)
        got2 = np.sort(m, axis=1)
    assert got.tobytes() == np.sort(a).tobytes()
    assert got2.tobytes() == np.sort(m, axis=1).tobytes()
    assert inner and set(inner[0::2]) == {np.sort(small_).tobytes()}
    assert set(inner[1::2]) == {np.sort(m, axis=1).tobytes()}
    refs = [np.sort(x).tobytes() for x in (small_, m, a[:100])]
    out = []

    def brief():
        out.append([np.sort(x).tobytes() for x in (small_, m, a[:100])])

    with nclx.installed():
        for _ in range(3):
            ts = [threading.Thread(target=brief) for _ in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    assert len(out) == 48 and all(o == refs for o in out)


def _child(q):
    a = np.random.default_rng(8).standard_normal(200000)
    with nclx.installed():
        q.put(np.sort(a).tobytes() == np.sort(a.copy(), kind="stable").tobytes())


@needs_slots
def test_sort_in_forked_child():
    a = np.random.default_rng(8).standard_normal(200000)
    with nclx.installed():
        np.sort(a)                       # the team has started in the parent
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child, args=(q,))
        p.start()
        ok = q.get(timeout=60)
        p.join(timeout=60)
    assert ok and p.exitcode == 0


def _methods_now():
    """NumPy 2.5+'s sort ArrayMethods, where nclx reaches them that way."""
    if sorting.way_in() != "methods":
        return {}
    from nclx._ncl import sortmeth
    return {k: v[1] for k, v in sortmeth.methods().items()}


@needs_slots
def test_uninstall_restores_every_slot():
    before = {k: v[1] for k, v in sorting.slots().items()}
    meth_before = _methods_now()
    with nclx.installed():
        during = {k: v[1] for k, v in sorting.slots().items()}
        meth_during = _methods_now()
    after = {k: v[1] for k, v in sorting.slots().items()}
    assert after == before
    assert _methods_now() == meth_before
    assert all(meth_during[k] != meth_before[k] for k in meth_before)
    assert all(during[k] != before[k] for k in before if before[k])
    nclx.install(sorts=False)
    try:
        assert {k: v[1] for k, v in sorting.slots().items()} == before
        assert nclx.is_installed()
    finally:
        nclx.uninstall()
    with pytest.raises(TypeError, match="sorts"):
        nclx.install(sorts="yes")
    assert not nclx.is_installed()


def test_install_sorts_true_refuses_where_unreachable():
    with nclx.installed():
        pass
    if sorting.reachable() == "":
        nclx.install(sorts=True)
        nclx.uninstall()
    else:
        with pytest.raises(nclx.NclxInstallError, match="does not sort"):
            nclx.install(sorts=True)
        assert not nclx.is_installed()


def test_settings_validate_and_scratch_release(small):
    with pytest.raises(ValueError, match="threshold"):
        sorting.threshold(1)
    with pytest.raises(ValueError, match="run"):
        sorting.min_run(0)
    with pytest.raises(ValueError, match="threshold"):
        sorting.fast_threshold(0)
    with pytest.raises(ValueError, match="in_order_team"):
        sorting.in_order_team(-1)
    keep = sorting.scratch_keep()
    try:
        sorting.scratch_keep(1 << 30)
        sorting.release()
        x = np.random.default_rng(9).standard_normal(1_000_000)
        nclx.sort(x)                      # unstable: partitioned in place, no scratch
        assert sorting.release() == 0
        nclx.sort(x, kind="stable")       # runs and a merge: the scratch is kept
        assert sorting.release() > 0
        assert sorting.release() == 0
    finally:
        sorting.scratch_keep(keep)


float_arrays = st.integers(0, 3000).flatmap(lambda n: st.tuples(
    st.sampled_from(["f4", "f8"]), st.just(n), st.integers(0, 2**32 - 1)))


@needs_slots
@settings(max_examples=60, deadline=None)
@given(float_arrays, st.sampled_from(KINDS), st.sampled_from([
    [np.nan, 0.0, 1.0], [-0.0, 0.0, 2.0], [0.0, 1.0, -1.0, np.inf], [np.nan, -np.nan, 1.0]]))
def test_hypothesis_floats_with_specials(spec, kind, pool):
    char, n, seed = spec
    rng = np.random.default_rng(seed)
    a = np.asarray(pool, dtype=char)[rng.integers(0, len(pool), n)]
    mix = rng.random(n) < 0.5
    a[mix] = rng.standard_normal(int(mix.sum())).astype(char)
    ref = np.sort(a, kind=kind)
    with lowered(), nclx.installed():
        got = np.sort(a, kind=kind)
        goti = np.argsort(a, kind=kind)
    assert got.tobytes() == ref.tobytes()
    if kind == "stable":
        assert goti.tobytes() == np.argsort(a, kind="stable").tobytes()
    else:
        _is_sorted_perm(a, goti)


int_arrays = st.tuples(st.sampled_from(["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]),
                       st.integers(0, 5000), st.integers(1, 300), st.integers(0, 2**32 - 1))


@needs_slots
@settings(max_examples=80, deadline=None)
@given(int_arrays, st.sampled_from(["quicksort", "heapsort"]), st.sampled_from([2, 3, 5, 7]),
       st.sampled_from(["random", "sorted", "reversed", "organ"]))
def test_hypothesis_partition_values(spec, kind, nthreads, layout):
    """Unstable value sorts split by value (nclx._ncl.sortpart): any dtype,
    few or many distinct keys, any layout, any thread count: stock's bytes."""
    char, n, distinct, seed = spec
    rng = np.random.default_rng(seed)
    a = rng.integers(0, distinct, n).astype(char)
    if layout == "sorted":
        a = np.sort(a)
    elif layout == "reversed":
        a = np.sort(a)[::-1].copy()
    elif layout == "organ":
        a = np.concatenate([np.sort(a[: n // 2]), np.sort(a[n // 2:])[::-1]])
    ref = np.sort(a, kind=kind)
    with lowered(nthreads), nclx.installed():
        got = np.sort(a, kind=kind)
        b = a.copy()
        b.sort(kind=kind)
    assert got.tobytes() == ref.tobytes()
    assert b.tobytes() == ref.tobytes()


@needs_slots
@pytest.mark.parametrize("char", ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"])
@pytest.mark.parametrize("outlier", [None, "low", "high", "extreme"])
@pytest.mark.parametrize("kind", KINDS)
def test_counting_sort_small_range(char, outlier, kind, threads, small):
    """Integers of a small range are counted (nclx._ncl.sortcount); a value
    the sample missed (away from the sampled positions) sends the sort the
    other way with the data untouched: stock's bytes either way."""
    n = 20_011
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2 if char == "b1" else 100, n).astype(char)
    if outlier is not None and char != "b1":
        info = np.iinfo(char)
        value = {"low": 0 if info.min == 0 else -5, "high": 120,
                 "extreme": info.max}[outlier]
        a[1::997] = 3            # keep the sample's span
        a[5] = value             # position 5 is not a sampled one (step 19)
    ref = np.sort(a, kind=kind)
    with nclx.installed():
        got = np.sort(a, kind=kind)
        b = a.copy()
        b.sort(kind=kind)
    assert got.tobytes() == ref.tobytes()
    assert b.tobytes() == ref.tobytes()


@needs_slots
@pytest.mark.parametrize("char", ["i8", "f8", "u2"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("team", [True, False])
def test_in_order_check_sees_run_boundaries(char, kind, threads, small, team):
    """The in-order shortcut checks each run with the element before it (on
    the team, or all on the calling thread below ``in_order_team``): one
    descent exactly across a run boundary is seen (stock's bytes)."""
    n = 10_007
    sorting.in_order_team(64 if team else n + 1)
    for nruns in (2, 3, 7):
        for r in range(1, nruns):
            b = (n // nruns) * r + min(r, n % nruns)
            a = np.arange(n).astype(char)
            a[b - 1], a[b] = a[b], a[b - 1]
            ref = np.sort(a, kind=kind)
            with nclx.installed():
                got = np.sort(a, kind=kind)
                goti = np.argsort(a, kind="stable")
            assert got.tobytes() == ref.tobytes()
            assert goti.tobytes() == np.argsort(a, kind="stable").tobytes()


def _has_descending():
    try:
        np.sort(np.arange(3), descending=True)
    except TypeError:
        return False
    return True


@needs_slots
@pytest.mark.skipif(not _has_descending(), reason="this NumPy has no descending sorts (2.5+)")
@pytest.mark.parametrize("char", CHARS)
def test_descending_sorts_are_numpy_s(char, small):
    for pattern in ("random", "few", "special"):
        if pattern == "special" and np.dtype(char).kind != "f":
            continue
        a = _data(char, 1000, pattern, seed=11)
        for stable in (False, True):
            ref = np.sort(a, descending=True, stable=stable)
            refi = np.argsort(a, descending=True, stable=stable)
            with nclx.installed():
                got = np.sort(a, descending=True, stable=stable)
                goti = np.argsort(a, descending=True, stable=stable)
            assert got.tobytes() == ref.tobytes()
            assert goti.tobytes() == refi.tobytes()


@needs_slots
def test_probe_counts_its_own_thread_only():
    """install()'s probe counts entry calls; another thread sorting at the
    same time must not make it see extra calls (and give up on the sorts)."""
    stop = threading.Event()
    a = np.arange(1000.0)[::-1].copy()

    def hammer():
        while not stop.is_set():
            np.sort(a)

    with nclx.installed():
        t = threading.Thread(target=hammer)
        t.start()
        try:
            misses = [sorting._probe() for _ in range(20)]
        finally:
            stop.set()
            t.join()
    assert misses == [[]] * 20


@needs_slots
@pytest.mark.parametrize("char", "lqfd")
def test_large_sorts_of_few_distinct_values(char):
    """Unstable sorts of data with few distinct values stay NumPy's (a
    sample decides); many values split; both equal NumPy's bits."""
    rng = np.random.default_rng(12)
    for distinct in (3, 100, 5000):
        pool = (rng.standard_normal(distinct) * 1e6).astype(char)
        a = pool[rng.integers(0, distinct, 300_000)]
        for kind in KINDS:
            ref = np.sort(a, kind=kind)
            with nclx.installed():
                got = np.sort(a, kind=kind)
            assert got.tobytes() == ref.tobytes(), (char, distinct, kind)


@needs_slots
@pytest.mark.parametrize("char", ["f4", "f8"])
@pytest.mark.parametrize("extra", ["none", "neg_zero", "both_zeros", "nan", "nan_payload", "neg_nan"])
def test_unstable_float_sorts_of_data_in_order(char, extra, threads, small):
    """Data already in order is its own unstable sort only when equal keys
    have equal bits and it holds no NaN (NumPy 2.0-2.4 rewrite them)."""
    n = 20_011
    a = np.sort(np.random.default_rng(1).standard_normal(n).astype(char) * 10)
    a[n // 2 - 3:n // 2 + 3] = 0.0
    if extra == "neg_zero":
        a[n // 2 - 3:n // 2 + 3] = -0.0
    elif extra == "both_zeros":
        a[n // 2 - 1] = -0.0
    elif extra in ("nan", "nan_payload", "neg_nan"):
        bits = {"nan": (0x7FF8000000000000, 0x7FC00000),
                "nan_payload": (0x7FF0000000000ABC, 0x7F800ABC),
                "neg_nan": (0xFFF8000000000000, 0xFFC00000)}[extra]
        nan = np.array([bits[0]], np.uint64).view(np.float64) if char == "f8" \
            else np.array([bits[1]], np.uint32).view(np.float32)
        a[-5:] = nan
        assert a[-5:].tobytes() == nan.tobytes() * 5
    for kind in ("quicksort", "heapsort"):
        ref = np.sort(a, kind=kind)
        with nclx.installed():
            got = np.sort(a, kind=kind)
            b = a.copy()
            b.sort(kind=kind)
        assert got.tobytes() == ref.tobytes() and b.tobytes() == ref.tobytes(), (extra, kind)


@needs_slots
@pytest.mark.parametrize("char", ["f4", "f8", "i8", "u8", "i4"])
def test_in_order_scan_finds_every_descent_position(char, small):
    """The block scan (floats: two or four elements a vector step; int64:
    the overflow-corrected sign of a - b; blocks of 2,048) sees one descent
    wherever it is: a NaN before a number, the extremes of the integers."""
    n = 6_000
    base = np.arange(n, dtype=char)
    hows = ("swap", "nan") if char[0] == "f" else ("swap", "extremes", "wrap")
    for pos in [1, 2, 3, 4, 5, 2047, 2048, 2049, 2050, 4095, 4096, 4097, n - 2, n - 1]:
        for how in hows:
            a = base.copy()
            if how == "swap":
                a[pos - 1], a[pos] = a[pos], a[pos - 1]
            elif how == "nan":
                a[pos - 1] = np.nan
            elif how == "extremes":          # max then min: a - b overflows
                info = np.iinfo(char)
                a[:pos] = info.min
                a[pos - 1] = info.max
                a[pos:] = info.min
            else:                            # min .. then max .. (in order), one min after
                info = np.iinfo(char)
                a[:pos] = info.min
                a[pos:] = info.max
                a[-1] = info.min if pos < n - 1 else a[-1]
            for kind in KINDS:
                ref = np.sort(a, kind=kind)
                with nclx.installed():
                    got = np.sort(a, kind=kind)
                assert got.tobytes() == ref.tobytes(), (pos, how, kind)
