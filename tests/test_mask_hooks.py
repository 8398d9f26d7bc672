"""nclx.mask through NCLib's Mask chains: the "mask" python chain, the
"mask" funnel chain and the kernel chains ``<op>_<dtype>`` see every call
nclx's kernels serve (hooks observe or replace it), the ledger records it as
a "call" row; results stay NumPy's with several threads, several Python
threads at once, and in a forked child."""
import multiprocessing as mp
import sys
import threading

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
import nclx.ledger
import nclx.mask as M
from nclx._ncl import masking


@pytest.fixture(autouse=True)
def _clean():
    old_split = masking.set_split(1, 64)
    old_threads = nclx.get_num_threads()
    nclx.set_num_threads(2)
    hooks.reset()
    yield
    hooks.reset()
    masking.set_split(*old_split)
    nclx.set_num_threads(old_threads)


def data(n=1000, dt="float64", seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 100).astype(dt), rng.random(n) < 0.4


def calls_of(fn):
    """fn() under a ledger: {(op, dtypes): (calls, elements)} of the mask rows."""
    with nclx.ledger.recording() as led:
        fn()
    return {(r.op, r.dtypes): (r.calls, r.elements) for r in led.records()
            if r.kind == "call" and r.subsystem == "mask"}


# ------------------------------------------------------------ the ledger

@pytest.mark.parametrize("dt", ["bool", "int8", "uint16", "int32", "uint64", "float32", "float64"])
def test_ledger_rows_for_every_served_call(dt):
    a, m = data(1000, dt)
    v = a[:7].copy()
    assert calls_of(lambda: M.extract(m, a)) == {("extract", ("bool", dt, dt)): (1, 1000)}
    assert calls_of(lambda: M.compress(m, a)) == {("extract", ("bool", dt, dt)): (1, 1000)}
    assert calls_of(lambda: M.compress(m[:10], a.reshape(100, 10), axis=1)) == \
        {("extract", ("bool", dt, dt)): (1, 1000)}
    assert calls_of(lambda: M.place(a.copy(), m, v)) == {("place", ("bool", dt, dt)): (1, 1000)}
    assert calls_of(lambda: M.putmask(a.copy(), m, v)) == {("putmask", ("bool", dt, dt)): (1, 1000)}
    assert calls_of(lambda: M.count(m)) == {("count", ("bool", "int64")): (1, 1000)}
    both = calls_of(lambda: (M.extract(m, a), M.extract(m[:10], a[:10])))
    assert both == {("extract", ("bool", dt, dt)): (2, 1010)}


def test_calls_nclx_hands_to_numpy_leave_no_row_and_numpy_s_results():
    a, m = data(100)
    rows = calls_of(lambda: (M.extract(m, a.astype(np.float16)), M.place(a.copy()[::2], m[:50], 1.0),
                             M.count(np.arange(5)), M.compress(m, a.astype(">f8")),
                             M.putmask(np.ma.masked_array(a), m, 0.0)))
    assert rows == {}
    assert M.extract(m, a.astype(np.float16)).tobytes() == np.extract(m, a.astype(np.float16)).tobytes()


def test_fallback_row_equals_kernel_row_results():
    """The chains' "numpy" node runs NumPy's own function on the call's
    buffers: same bytes as nclx's kernel."""
    a, m = data(3000, "int16", seed=4)
    v = a[:11].copy()
    used = []

    def numpy_node(call):
        used.append(call.op)
        call.run_numpy()

    with hooks.register("funnel", "mask", numpy_node):
        got = (M.extract(m, a), M.count(m), M.compress(m[:30], a.reshape(100, 30), axis=1))
        p, q = a.copy(), a.copy()
        M.place(p, m, v)
        M.putmask(q, m, v)
    assert used == ["extract", "count", "extract", "place", "putmask"]
    want = (np.extract(m, a), np.count_nonzero(m), np.compress(m[:30], a.reshape(100, 30), axis=1))
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).tobytes() == np.asarray(w).tobytes()
    p2, q2 = a.copy(), a.copy()
    np.place(p2, m, v)
    np.putmask(q2, m, v)
    assert p.tobytes() == p2.tobytes() and q.tobytes() == q2.tobytes()


# ------------------------------------------------------------ funnel hooks

def test_funnel_hook_sees_each_call_s_operands():
    a, m = data(200, "int32")
    seen = []

    def spy(call):
        inputs, out = call.views()
        seen.append((call.op, call.dtypes, call.n, [x.copy() for x in inputs]))
        call.next()
        seen.append(call.views()[1].copy())

    with hooks.register("funnel", "mask", spy):
        r = M.extract(m, a)
        x = a.copy()
        M.putmask(x, m, [1, 2, 3])
        c = M.count(m)
    (op, dts, n, ins), out = seen[0], seen[1]
    assert (op, dts, n) == ("extract", ("bool", "int32", "int32"), 200)
    assert ins[0].tobytes() == m.tobytes() and ins[1].tobytes() == a.tobytes()
    assert out.tobytes() == r.tobytes() == np.extract(m, a).tobytes()
    (op, dts, n, ins), out = seen[2], seen[3]
    assert (op, n, ins[1].tolist()) == ("putmask", 200, [1, 2, 3])
    assert out.tobytes() == x.tobytes()
    (op, dts, n, ins), out = seen[4], seen[5]
    assert (op, dts, out.tolist(), c) == ("count", ("bool", "int64"), [73], np.count_nonzero(m))


def test_funnel_hook_replaces_calls():
    a, m = data(500, "float32")

    def negate(call):
        _, out = call.views()
        if call.op == "count":
            out[0] = -7
        elif call.op == "extract":
            out[:] = -1
        else:
            out[:] = 0          # place/putmask: the whole array is the output

    with hooks.register("funnel", "mask", negate):
        assert M.count(m) == -7
        r = M.extract(m, a)
        x = a.copy()
        M.place(x, m, [5.0])
    assert r.tolist() == [-1.0] * int(m.sum())
    assert not x.any()


def test_hook_that_raises_leaves_the_call_to_the_chain():
    a, m = data(300)

    def boom(call):
        raise RuntimeError("hook failed")

    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with hooks.register("funnel", "mask", boom) as h:
            M.count(m)
            assert h.errors == 1 and isinstance(h.last_error, RuntimeError)
    finally:
        sys.unraisablehook = old
    assert len(seen) == 1


# ------------------------------------------------------------ kernel hooks

def test_kernel_hook_observes_and_replaces():
    a, m = data(400, "uint8")
    seen = []

    class Spy(hooks.Kernel):
        def __call__(self, inputs, out):
            seen.append((len(inputs[0]), len(inputs[1]), len(out)))
            return NotImplemented

    class Sevens(hooks.Kernel):
        def __call__(self, inputs, out):
            out[:] = 7

    with hooks.register("kernel", ("extract", "uint8"), Spy()):
        assert M.extract(m, a).tobytes() == np.extract(m, a).tobytes()
        assert M.extract(m, a.astype(np.int8)).tobytes() == np.extract(m, a.astype(np.int8)).tobytes()
    assert seen == [(400, 400, int(m.sum()))]
    with hooks.register("kernel", ("putmask", "uint8"), Sevens()):
        x = a.copy()
        M.putmask(x, m, 1)
    assert (x == 7).all()
    with hooks.register("kernel", ("count", "bool"), Sevens()):
        assert M.count(m) == 7


# ------------------------------------------------------------ python hooks

def test_python_hook_sees_and_replaces_whole_calls():
    a, m = data(50)
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, len(call.inputs), dict(call.kwargs)))
        return call.next()

    with hooks.register("python", "mask", spy):
        M.compress(m[:5], a.reshape(10, 5), axis=1)
        M.place(a.copy(), m, 1.0)
        M.count(m)
    assert seen == [("compress", 2, {"axis": 1, "out": None}), ("place", 3, {}), ("count", 1, {})]

    def swap(call):
        call.ufunc = np.count_nonzero      # run NumPy's function instead
        return call.next()

    with hooks.register("python", "mask", swap):
        assert M.count(m) == np.count_nonzero(m)
    with hooks.register("python", "mask", lambda call: "replaced"):
        assert M.extract(m, a) == "replaced"
    with hooks.register("python", "mask", lambda call: call.next()):
        with pytest.raises(ValueError, match="must be the same size"):
            M.putmask(a, m[:3], 1.0)


# ------------------------------------------------------------ threads and fork

def test_concurrent_python_threads():
    rng = np.random.default_rng(9)
    cases = [(rng.standard_normal(20_000), rng.random(20_000) < p) for p in (0.1, 0.5, 0.9, 1.0)]
    want = [(np.extract(m, a).tobytes(), int(np.count_nonzero(m))) for a, m in cases]
    got = [None] * 8
    errors = []

    def work(i):
        try:
            a, m = cases[i % 4]
            for _ in range(10):
                x = a.copy()
                M.place(x, m, a[:17])
                y = a.copy()
                np.place(y, m, a[:17])
                assert x.tobytes() == y.tobytes()
                got[i] = (M.extract(m, a).tobytes(), int(M.count(m)))
        except Exception as exc:      # noqa: BLE001 - reported below
            errors.append(exc)

    with nclx.ledger.recording():
        ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors
    assert got == [want[i % 4] for i in range(8)]


def _forked(q):
    a, m = data(100_000, seed=3)
    x = a.copy()
    M.putmask(x, m, [1.0, 2.0])
    y = a.copy()
    np.putmask(y, m, [1.0, 2.0])
    q.put((M.extract(m, a).tobytes() == np.extract(m, a).tobytes() and x.tobytes() == y.tobytes(),
           nclx.get_num_threads()))


def test_forked_child_after_the_team_ran():
    a, m = data(100_000, seed=3)
    M.extract(m, a)                    # the parent's team has run
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_forked, args=(q,))
    p.start()
    ok, threads = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0 and ok and threads == 1


def test_a_mask_changed_by_another_thread_mid_call_stays_in_bounds():
    """The count pass sizes the output; a mask another Python thread flips
    before the copy pass cannot make a piece write past its share (the
    result is then racy, as NumPy's is, but memory stays intact)."""
    masking.set_split(1, 4096)
    n = 400_000
    a = np.arange(n, dtype=np.float64)
    m = np.zeros(n, bool)
    m[::3] = True
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            m[:] = True
            m[::3] = False

    t = threading.Thread(target=flip)
    t.start()
    try:
        for _ in range(200):
            r = M.extract(m, a)
            assert r.ndim == 1 and r.dtype == a.dtype
    finally:
        stop.set()
        t.join()
    m[:] = False
    m[::3] = True
    assert M.extract(m, a).tobytes() == a[::3].tobytes()
