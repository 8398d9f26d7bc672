"""The recycling allocator: ``nclx.install(recycle=True)`` (NEP 49 handler).

Results equal stock NumPy's bit for bit; freed big blocks come back (stats
hits); the cap holds; ``release_memory`` empties the cache; ``uninstall``
restores the handler object; ``np.zeros`` stays zero; ``resize`` and
``fromiter`` (realloc) across the 1 MiB line; arrays crossing install and
uninstall are freed by their own handler; Python threads; fork; tracemalloc;
and the minor page faults the recycler saves.
"""
import contextvars
import gc
import multiprocessing
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, strategies as st
from numpy._core.multiarray import get_handler_name, get_handler_version

import nclx
from nclx._ncl import recycle

from conftest import run_script

MIB = 1 << 20
BIG = 2 * MIB // 8 + 3          # float64 elements: a recycled block (> 2 MiB)
NPY_TRACE_DOMAIN = 389047


@pytest.fixture
def recycling():
    """nclx installed with the recycler; uninstalled (and the cap reset) after."""
    before = recycle.current_handler()
    nclx.install(recycle=True)
    yield
    nclx.uninstall()
    recycle.cap(1 << 30)
    assert recycle.current_handler() is before


def _programs(n, dt, seed):
    rng = np.random.default_rng(seed)
    low = 0 if np.dtype(dt).kind == "u" else -50
    if np.dtype(dt).kind == "f":
        a, b = (rng.random(n) * 100 + low).astype(dt), (rng.random(n) * 100 + 51).astype(dt)
    else:
        a, b = rng.integers(low, 50, n).astype(dt), rng.integers(51, 150, n).astype(dt)
    rev = np.empty_like(a)      # a recycled block may hold anything: overwritten
    rev[...] = a[::-1]
    out = [2 * a + b * b, (a - b) / (a + b), np.sort(a), np.argsort(b, kind="stable"),
           np.concatenate([a, b]), a[::-3].copy(), np.asfortranarray(np.outer(a[:300], b[:7])),
           np.cumsum(a), a[b > (np.median(b) if n else 0)], rev, np.where(a > 0, a, b)]
    if np.dtype(dt).kind == "f":
        out.append(np.sqrt(a * a + b * b))
    return out


def _same(xs, ys):
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("dt", ["float64", "float32", "int64", "int32", "uint8"])
@pytest.mark.parametrize("n", [0, 1, 1000, MIB // 8 - 1, MIB // 8 + 1, BIG, 10**6])
def test_results_equal_stock(recycling, n, dt):
    nclx.uninstall()
    expected = _programs(n, dt, n)
    nclx.install(recycle=True)
    for _ in range(2):          # the second round runs on recycled (dirty) blocks
        _same(expected, _programs(n, dt, n))


@given(st.integers(0, 3 * MIB // 8), st.sampled_from(["float64", "int16", "int64"]))
def test_results_equal_stock_hypothesis(n, dt):
    expected = _programs(n, dt, 7)
    nclx.install(recycle=True)
    try:
        _same(expected, _programs(n, dt, 7))
        _same(expected, _programs(n, dt, 7))
    finally:
        nclx.uninstall()


def test_handler_is_set_and_restored_exactly():
    name, version = get_handler_name(), get_handler_version()
    before = recycle.current_handler()
    nclx.install(recycle=True)
    nclx.install(recycle=True)          # idempotent: the previous handler stays known
    try:
        assert get_handler_name() == "nclx_recycle" and get_handler_version() == 1
        assert recycle.current_handler() is recycle.handler()
        assert recycle.stats()["active"]
        nclx.install()                  # recycle=False leaves it as it is
        assert get_handler_name() == "nclx_recycle"
    finally:
        nclx.uninstall()
    assert recycle.current_handler() is before
    assert (get_handler_name(), get_handler_version()) == (name, version)
    assert not recycle.stats()["active"]
    with pytest.raises(TypeError, match=r"install\(recycle=...\) takes True or False"):
        nclx.install(recycle=1)
    assert not nclx.is_installed() and recycle.current_handler() is before


def test_recycled_block_is_reused(recycling):
    a = np.ones(BIG)
    del a
    s0 = recycle.stats()
    assert s0["cached_blocks"] >= 1
    for _ in range(5):
        a = np.ones(BIG)
        assert get_handler_name(a) == "nclx_recycle"
        del a
    s1 = recycle.stats()
    assert s1["hits"] - s0["hits"] == 5
    assert s1["misses"] == s0["misses"]


def test_cap_is_honoured(recycling):
    nclx.config(recycle_cap=5 * MIB)
    arrays = [np.ones(BIG) for _ in range(8)]     # 8 blocks of one 4 MiB class
    size = recycle.size_class(BIG * 8)
    assert size == 4 * MIB
    s0 = recycle.stats()
    del arrays
    s1 = recycle.stats()
    assert s1["cached_bytes"] <= 5 * MIB and s1["cached_blocks"] == 1
    assert s1["unmapped"] - s0["unmapped"] == 7
    nclx.config(recycle_cap=0)
    assert recycle.stats()["cached_bytes"] == 0
    a = np.ones(BIG)
    del a
    assert recycle.stats()["cached_bytes"] == 0
    with nclx.config(recycle_cap=123 * MIB):
        assert nclx.config()["settings"]["recycle_cap"] == 123 * MIB
    assert recycle.cap() == 0


@pytest.mark.parametrize("bad, exc, text", [
    (-1, ValueError, "'recycle_cap' must be >= 0"),
    (1.5, TypeError, "'recycle_cap' takes a non-negative int"),
    (True, TypeError, "'recycle_cap' takes a non-negative int"),
    ("1", TypeError, "'recycle_cap' takes a non-negative int")])
def test_cap_setting_rejects(bad, exc, text):
    cap = recycle.cap()
    with pytest.raises(exc, match=text):
        nclx.config(recycle_cap=bad)
    assert recycle.cap() == cap


def test_release_memory_trims_to_zero(recycling):
    arrays = [np.ones(BIG + k * MIB) for k in range(4)]
    del arrays
    cached = recycle.stats()["cached_bytes"]
    assert cached >= 4 * BIG * 8
    assert nclx.release_memory() >= cached
    assert recycle.stats()["cached_bytes"] == 0 and recycle.stats()["cached_blocks"] == 0
    assert nclx.release_memory() == 0


def test_zeros_from_a_recycled_class_are_zero(recycling):
    for n in (BIG, 10**6, MIB // 8):
        a = np.empty(n)
        a.fill(7.5)
        del a
        hits = recycle.stats()["hits"]
        z = np.zeros(n)
        assert recycle.stats()["hits"] == hits     # calloc never takes a cached block
        assert not z.any() and get_handler_name(z) == "nclx_recycle"
        e = np.empty(n)                           # np.empty may: no zeros promised
        assert recycle.stats()["hits"] == hits + 1
        e.fill(-1.0)
        del e
        assert not np.zeros_like(z).any()         # empty_like + fill: a recycled block
        assert recycle.stats()["hits"] == hits + 2


@pytest.mark.parametrize("steps", [
    [100, 300_000, 200_000, 50],                  # small -> big -> big in place -> small
    [200_000, 2_000_000, 150_000, 10],            # big grows to another class, shrinks
    [10, 20, 131_072, 131_071, 1]])               # around the 1 MiB line
def test_resize_across_the_line(recycling, steps):
    a = np.arange(steps[0], dtype=np.float64)
    ref = a.copy()
    for n in steps[1:]:
        a.resize(n, refcheck=False)
        ref.resize(n, refcheck=False)     # ref: stock values, same zero fill
        assert a.tobytes() == ref.tobytes()
    assert get_handler_name(a) == "nclx_recycle"


def test_fromiter_grows_by_realloc(recycling):
    got = np.fromiter((i * 0.5 for i in range(400_000)), dtype=np.float64)
    assert got.tobytes() == (np.arange(400_000) * 0.5).tobytes()


def test_arrays_crossing_install_and_uninstall():
    pre_small, pre_big = np.ones(10), np.ones(BIG)
    nclx.install(recycle=True)
    try:
        assert get_handler_name(pre_big) == "default_allocator"
        pre_big[:] += 1
        del pre_big                       # NumPy's default handler frees it
        mid_small, mid_big = np.arange(10.0), np.arange(float(BIG))
        assert get_handler_name(mid_big) == "nclx_recycle"
    finally:
        nclx.uninstall()
    assert get_handler_name() == "default_allocator"
    assert get_handler_name(mid_big) == "nclx_recycle"
    unmapped = recycle.stats()["unmapped"]
    assert mid_big[-1] == BIG - 1 and mid_small.sum() == 45.0 and pre_small.sum() == 10
    mid_big.resize(BIG + MIB, refcheck=False)   # realloc by its own handler after uninstall
    del mid_small, mid_big, pre_small
    s = recycle.stats()
    # the resize's old block and the array itself: unmapped, not cached
    assert s["unmapped"] == unmapped + 2 and s["cached_bytes"] == 0


def test_tracemalloc_sees_allocations(recycling):
    tracemalloc.start()
    try:
        for _ in range(2):                # a fresh block, then a recycled one
            before = tracemalloc.take_snapshot()
            a = np.ones(BIG)
            after = tracemalloc.take_snapshot()
            flt = [tracemalloc.DomainFilter(True, NPY_TRACE_DOMAIN)]
            grew = sum(s.size_diff for s in after.filter_traces(flt).compare_to(
                before.filter_traces(flt), "filename"))
            assert grew == BIG * 8
            cur = tracemalloc.get_traced_memory()[0]
            del a
            assert cur - tracemalloc.get_traced_memory()[0] >= BIG * 8
    finally:
        tracemalloc.stop()


def _work(seed, results, i):
    rng = np.random.default_rng(seed)
    a, b = rng.random(BIG), rng.random(BIG)
    acc = []
    for _ in range(20):
        acc.append(float((2 * a + b * b).sum()))
        c = np.sort(a * b)
        acc.append(c[BIG // 2])
    results[i] = (get_handler_name(), acc)


def test_threads_allocate_concurrently(recycling):
    expected = {}
    for i in range(4):
        _work(i, expected, i)
    hits = recycle.stats()["hits"]
    results = {}
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(_work, i, results, i))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected
    assert all(name == "nclx_recycle" for name, _ in results.values())
    assert recycle.stats()["hits"] - hits >= 4 * 20


def test_new_thread_starts_from_numpys_default_context(recycling):
    seen = {}
    held = [np.ones(BIG)]           # made in this (the installing) context

    def run():
        seen["new"] = get_handler_name()
        seen["array"] = get_handler_name(np.ones(BIG))
        seen["main's array"] = get_handler_name(held[0])

    t = threading.Thread(target=run)
    t.start()
    t.join()
    # Python < 3.14 (and 3.14 without thread_inherit_context): a thread starts
    # from an empty context, so NumPy's default handler
    inherits = bool(getattr(sys.flags, "thread_inherit_context", 0))
    want = "nclx_recycle" if inherits else "default_allocator"
    assert seen == {"new": want, "array": want, "main's array": "nclx_recycle"}

    gc.collect()
    cached = recycle.stats()["cached_blocks"]
    t = threading.Thread(target=held.clear)     # the last reference dies there
    t.start()
    t.join()
    assert recycle.stats()["cached_blocks"] == cached + 1     # freed in the thread, cached


def _child(q):
    s0 = recycle.stats()
    out = []
    for _ in range(5):
        out.append(float((np.arange(float(BIG)) * 2).sum()))
    q.put((out, recycle.stats()["hits"] - s0["hits"], get_handler_name()))


def test_fork_child_allocates_under_the_handler(recycling):
    stop = threading.Event()

    def churn():                         # holds the cache lock often while we fork
        while not stop.is_set():
            del_me = np.ones(BIG)
            del del_me

    churners = [threading.Thread(target=contextvars.copy_context().run, args=(churn,))
                for _ in range(2)]
    for t in churners:
        t.start()
    ctx = multiprocessing.get_context("fork")
    try:
        for _ in range(3):
            q = ctx.Queue()
            p = ctx.Process(target=_child, args=(q,))
            p.start()
            out, hits, name = q.get(timeout=60)
            p.join(60)
            assert p.exitcode == 0
            assert out == [float(BIG * (BIG - 1))] * 5 and hits >= 4 and name == "nclx_recycle"
    finally:
        stop.set()
        for t in churners:
            t.join()


_FAULTS = """
import resource, sys
import numpy as np
import nclx
if sys.argv[1] == "recycle":
    nclx.install(recycle=True)
a = np.random.rand(10**6); b = np.random.rand(10**6)
for _ in range(3):
    2 * a + b * b                  # 8 MB temporaries, result dropped
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    2 * a + b * b
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 10)
"""


def test_recycling_saves_minor_page_faults():
    faults = {}
    for mode in ("stock", "recycle"):
        r = run_script(f"import sys; sys.argv[1:] = [{mode!r}]\n" + _FAULTS)
        assert r.returncode == 0, r.stderr
        faults[mode] = float(r.stdout.split()[-1])
    # stock: glibc gives the freed 8 MB back and faults them in again (~800
    # faults of 4 KiB per call on this machine); recycled: the pages stay
    assert faults["recycle"] <= 10 and faults["stock"] >= 20 * max(faults["recycle"], 1), faults
