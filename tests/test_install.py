"""install() / uninstall(): interception on plain ndarrays and exact restoration."""
import threading

import numpy as np
import pytest

import nclx
from nclx._ncl import copying
from nclx._ncl import sortcopy
from nclx._ncl import sorting
from nclx._ncl import entries as funnel
from nclx._ncl import looptable
from nclx._ncl import policy
from nclx._ncl import spec


def _snapshot():
    """{(op, chars): NumPy's current loop} for every entry NumPy has a loop for
    (nclx's own ops -- fma, where, cast -- have no NumPy ufunc)."""
    snap = {}
    for op, chars in funnel.signatures():
        ufunc = spec.numpy_ufunc(op)
        if ufunc is None:
            continue
        try:
            snap[(op, chars)] = looptable.current_loop(ufunc, chars)
        except KeyError:
            pass
    return snap


@pytest.fixture(autouse=True)
def _clean():
    nclx.uninstall()
    nclx.hooks.reset()
    yield
    nclx.uninstall()
    nclx.hooks.reset()


def test_install_swaps_every_loop_and_uninstall_restores_the_exact_pointers():
    before = _snapshot()
    # NumPy 2 has every signature of the ops nclx has kernels for
    kernel_ops = [s for s in funnel.signatures()
                  if s[0] not in spec.NUMPY_LOOPS and s[0] not in spec.NCLX_ONLY]
    assert set(kernel_ops) <= set(before)
    copy_getters = copying.getters()
    n = nclx.install()
    sorts = sum(1 for stock, now in sorting.slots().values() if stock and stock != now)
    methods = 26 if sorting.way_in() == "methods" else 0        # 13 DTypes x {sort, argsort}
    copies = len(spec.ALL) if copying.layout() == "" else 0      # one copy method per DType
    np_sort = 1 if sortcopy.layout() == "" and copies and sorts else 0   # np.sort's vectorcall
    assert n == len(before) + sorts + methods + copies + np_sort
    assert sortcopy.is_swapped() == bool(np_sort)
    assert sorts == (78 if sorting.reachable() == "" else 0)   # 13 types x 3 kinds x 2
    during = _snapshot()
    for k, (key, addr) in enumerate(before.items()):
        assert during[key] != addr
    assert all(during[key] == funnel.entry_address(k)
               for k, key in enumerate(funnel.signatures()) if key in during)
    if copies:
        assert all(addr != copy_getters[name] for name, addr in copying.getters().items())
    assert nclx.uninstall() == n
    assert _snapshot() == before
    assert copying.getters() == copy_getters
    assert not sortcopy.is_swapped()
    assert not nclx.is_installed()


def test_both_int64_signatures_are_swapped_each_with_its_own_original():
    sigs = funnel.signatures()
    kl, kq = sigs.index(("add", "lll")), sigs.index(("add", "qqq"))
    before_l = looptable.current_loop(np.add, "lll")
    before_q = looptable.current_loop(np.add, "qqq")
    nclx.install()
    assert funnel.original_address(kl) == before_l
    assert funnel.original_address(kq) == before_q
    assert looptable.current_loop(np.add, "lll") == funnel.entry_address(kl)
    assert looptable.current_loop(np.add, "qqq") == funnel.entry_address(kq)
    a = np.arange(10, dtype=np.longlong)
    assert a.dtype.char == "q"
    with nclx.ledger.recording() as led:
        (a + a, np.arange(10, dtype="l") + 1)
    assert sum(r.calls for r in led.records() if r.op == "add") == 2


def test_install_is_idempotent_and_works_after_the_ufuncs_were_used():
    np.add(np.arange(3), 1)          # used before install
    n = nclx.install()
    assert nclx.install() == 0       # second install swaps nothing more
    assert nclx.is_installed()
    assert np.array_equal(np.arange(3) + 1, [1, 2, 3])
    assert nclx.uninstall() == n
    assert nclx.uninstall() == 0


def test_installed_context_restores_even_when_the_block_raises():
    before = _snapshot()
    with pytest.raises(KeyError):
        with nclx.installed():
            assert nclx.is_installed()
            raise KeyError("x")
    assert not nclx.is_installed()
    assert _snapshot() == before


def test_installed_context_leaves_an_outer_install_in_place():
    nclx.install()
    with nclx.installed():
        pass
    assert nclx.is_installed()


def test_uninstall_restores_after_a_hook_raised():
    before = _snapshot()
    nclx.install()

    def broken(call):
        raise RuntimeError("hook failure")

    import sys
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        h = nclx.hooks.register("funnel", "binary", broken)
        r = np.arange(4) * 3
    finally:
        sys.unraisablehook = old
    assert np.array_equal(r, [0, 3, 6, 9])      # the result was not lost
    assert h.errors == 1 and isinstance(h.last_error, RuntimeError)
    assert len(seen) == 1
    nclx.uninstall()
    assert _snapshot() == before


@pytest.mark.parametrize("expr", [
    "a + b", "a > b", "a - b", "a * b", "a // b", "a % b", "a / b", "-a", "abs(a)", "~a",
    "np.maximum(a, b)", "np.minimum(a, b)", "a & b", "a | b", "a ^ b", "a == b", "a != b",
    "a < b", "a <= b", "a >= b",
])
def test_results_installed_equal_stock_results(expr):
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, 1001)
    b = rng.integers(1, 1000, 1001)
    want = eval(expr)
    for everywhere in (None, False):      # shipped choice; nclx's kernels for every call
        if everywhere is not None:
            policy.prefer_everywhere(everywhere)
        try:
            with nclx.installed():
                got = eval(expr)
        finally:
            policy.reset_preferences()
        assert got.dtype == want.dtype
        assert np.array_equal(got, want)


def test_ledger_sees_ordinary_numpy_code_on_plain_arrays():
    a = np.arange(1000)
    b = np.arange(1000)
    x = np.linspace(0, 1, 1000)
    with nclx.ledger.recording() as led:
        a + b
        a > b
        a += b
        a.sum()
        np.sqrt(x)
        np.maximum.reduce(x)
        np.cumsum(a)
    got = {(r.op, r.kind) for r in led.records()}
    assert {("add", "elementwise"), ("greater", "elementwise"), ("add", "reduce"),
            ("sqrt", "elementwise"), ("maximum", "reduce")} <= got
    adds = [r for r in led.records() if r.op == "add" and r.kind == "elementwise"]
    assert sum(r.calls for r in adds) >= 3          # a + b, a += b, cumsum's accumulate
    assert all(r.elements > 0 and r.ns > 0 for r in led.records())


def test_float_sums_keep_numpy_accuracy_when_installed():
    x = np.random.default_rng(3).random(1_000_003) * 1e-3 + 1e3
    want = x.sum()
    want_strided = x[::3].sum()
    want_axis = x[:999_999].reshape(999, 1001).sum(axis=1)
    threads = nclx.get_num_threads()
    nclx.set_num_threads(1)          # one thread: the very same pairwise sum
    try:
        with nclx.installed():
            assert x.sum() == want
            assert x[::3].sum() == want_strided
            assert np.array_equal(x[:999_999].reshape(999, 1001).sum(axis=1), want_axis)
    finally:
        nclx.set_num_threads(threads)
    import math
    exact = math.fsum(x)
    with nclx.installed():          # threaded: partial sums, still pairwise-accurate
        got = x.sum()
    assert abs(got - exact) <= max(abs(want - exact), 4 * np.finfo(float).eps * 20 * exact)


def test_loops_run_while_hooks_are_registered_and_removed_from_other_threads():
    nclx.install()
    a = np.arange(200_000, dtype=np.float64)   # > 500 elements: NumPy drops the GIL
    want = a * 2.0
    stop = threading.Event()
    errors = []

    def compute():
        try:
            while not stop.is_set():
                if not np.array_equal(a * 2.0, want):
                    errors.append("wrong result")
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    def counting(call):
        call.next()

    workers = [threading.Thread(target=compute) for _ in range(2)]
    for t in workers:
        t.start()
    try:
        for i in range(300):
            h1 = nclx.hooks.register("funnel", "binary", counting, name=f"c{i}")
            h2 = nclx.hooks.register("kernel", ("multiply", "float64"), counting,
                                     name=f"k{i}", position="back")
            h1.remove()
            h2.remove()
    finally:
        stop.set()
        for t in workers:
            t.join()
    assert not errors
    assert nclx.hooks.collect() == 0     # every retired node was freed


def test_install_refuses_when_a_numpy_op_is_not_a_ufunc_and_swaps_nothing(monkeypatch):
    before = _snapshot()
    nclx.install()
    nclx.uninstall()            # a passed check is remembered ...
    monkeypatch.setattr(np, "add", lambda *a, **k: None)
    with pytest.raises(nclx.NclxInstallError, match=r"numpy\.add is not a numpy\.ufunc"):
        nclx.install()          # ... but not for other objects
    assert not nclx.is_installed()
    assert funnel.installed_count() == 0
    monkeypatch.undo()
    assert _snapshot() == before
    nclx.install()
    assert nclx.is_installed()


# --------------------------- counted contexts, uninstall: review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# installed(), checked() and ledger.recording() are counted across threads
# (one thread leaving its block must not uninstall under another); an
# explicit uninstall() inside a block wins; uninstall gives nclx.ufuncs back
# the loops they had at import time (review of issue 21's first cut).
@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("ctx", ["installed", "checked", "recording"])
def test_contexts_are_counted_across_threads(ctx):
    make = {"installed": nclx.installed, "checked": nclx.checked,
            "recording": nclx.ledger.recording}[ctx]
    a_in, a_out, b_done = threading.Event(), threading.Event(), threading.Event()
    result = {}

    def thread_a():
        with make():
            a_in.set()
            a_out.wait(10)

    def thread_b():
        a_in.wait(10)
        with make() as led:
            a_out.set()
            ta.join(10)          # A has left its block
            result["installed"] = nclx.is_installed()
            x = np.full(10, 2**62, dtype=np.int64)
            try:
                x * 4
                result["raised"] = False
            except OverflowError:
                result["raised"] = True
            if ctx == "recording":
                result["recorded"] = any(r.op == "multiply" for r in led.records())
        b_done.set()

    ta = threading.Thread(target=thread_a)
    tb = threading.Thread(target=thread_b)
    ta.start(); tb.start(); tb.join(20)
    assert b_done.is_set()
    assert result["installed"]
    if ctx == "checked":
        assert result["raised"]
    if ctx == "recording":
        assert result["recorded"]
    assert not nclx.is_installed()


@pytest.mark.usefixtures("threaded_clean")
def test_uninstall_inside_a_block_wins_and_the_block_exit_is_harmless():
    with nclx.installed():
        nclx.uninstall()
        assert not nclx.is_installed()
    assert not nclx.is_installed()
    nclx.install()
    with nclx.installed():
        pass
    assert nclx.is_installed()       # an explicit install() outlives blocks
    nclx.uninstall()
    assert not nclx.is_installed()


@pytest.mark.usefixtures("threaded_clean")
def test_uninstall_gives_nclx_ufuncs_back_the_loops_of_import_time():
    from nclx._ncl import entries
    k = entries.signatures().index(("exp", "dd"))
    nclx.install()
    nclx.uninstall()
    import nclx.ufuncs as nu
    x = np.linspace(0, 1, 10)
    assert nu.exp(x).tobytes() == np.exp(x).tobytes()
    assert entries.original_address(k) == 0



def test_installed_count_is_kept_with_every_swap():
    """is_installed() reads a count kept by swap_in/swap_out (it summed
    every slot in Python, 8 us a call, on DistArray's per-call path): the
    count equals the slots whose NumPy loop is saved, through install,
    blocks, uninstall inside a block, and repeated installs."""
    from nclx._ncl import entries
    nslots = len(entries.signatures())

    def saved():
        return sum(1 for k in range(nslots) if entries.original_address(k))
    nclx.uninstall()
    assert entries.installed_count() == saved() == 0 and not nclx.is_installed()
    nclx.install()
    nclx.install()
    assert entries.installed_count() == saved() > 0 and nclx.is_installed()
    with nclx.installed():
        nclx.uninstall()
        assert entries.installed_count() == saved() == 0
    with nclx.installed():
        assert entries.installed_count() == saved() > 0
    assert entries.installed_count() == saved() == 0
