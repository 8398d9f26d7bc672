"""nclx.random's fills are RNG call ops: the python, funnel and kernel level
hooks of the "rng" subsystem see (and can replace) them, the ledger counts
them; generators work in forked children and from several Python threads."""
import multiprocessing
import threading

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
import nclx.ledger
import nclx.random as R


@pytest.fixture(autouse=True)
def clean():
    hooks.reset()
    keep = nclx.get_num_threads()
    nclx.set_num_threads(2)
    yield
    hooks.reset()
    nclx.set_num_threads(keep)


# ------------------------------------------------------------ python level

def test_python_hook_observes_every_method():
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, call.method, call.inputs, call.kwargs))
        return call.next()

    g, ref = R.Generator(1), R.Generator(1)
    with hooks.register("python", "rng", spy):
        got = [g.random(3), g.standard_normal(2, dtype=np.float32), g.uniform(1, 2, 4),
               g.normal(0, 1, 2, dtype=np.float32), g.exponential(2.0, 3), g.integers(5, size=2),
               g.permutation(4), g.random()]
    want = [ref.random(3), ref.standard_normal(2, dtype=np.float32), ref.uniform(1, 2, 4),
            ref.normal(0, 1, 2, dtype=np.float32), ref.exponential(2.0, 3), ref.integers(5, size=2),
            ref.permutation(4), ref.random()]
    assert [np.asarray(a).tobytes() for a in got] == [np.asarray(b).tobytes() for b in want]
    assert seen == [
        ("random", "__call__", (3, np.float64, None), {}),
        ("standard_normal", "__call__", (2, np.float32, None), {}),
        ("uniform", "__call__", (1, 2, 4), {}),
        ("normal", "__call__", (0, 1, 2), {"dtype": np.float32}),
        ("exponential", "__call__", (2.0, 3), {}),
        ("integers", "__call__", (5, None, 2, np.int64, False), {}),
        ("permutation", "__call__", (4, 0), {}),
        ("random", "__call__", (None, np.float64, None), {}),
    ]


def test_python_hook_replaces_or_redirects_a_call():
    def fours(call):
        return np.full(call.inputs[0], 4.0) if call.ufunc.__name__ == "random" else call.next()

    numpy_gen = np.random.Generator(np.random.PCG64(3))

    def to_numpy(call):
        call.ufunc = getattr(numpy_gen, call.ufunc.__name__)
        return call.next()

    g = R.Generator(1)
    with hooks.register("python", "rng", fours):
        assert g.random(3).tolist() == [4.0] * 3
        assert g.standard_normal(3).shape == (3,)
    assert g.state[0] == 0                     # random never ran
    with hooks.register("python", "rng", to_numpy):
        got = g.integers(0, 10, 5)
    assert got.tolist() == np.random.Generator(np.random.PCG64(3)).integers(0, 10, 5).tolist()


# ------------------------------------------------- funnel and kernel level

def test_funnel_hook_observes_ops_dtypes_and_counts():
    seen = []

    def spy(call):
        seen.append((call.op, call.dtypes, call.n, call.subsystem))
        return call.next()

    g, ref = R.Generator(2), R.Generator(2)
    with hooks.register("funnel", "rng", spy):
        a = [g.standard_normal(5), g.random(), g.integers(0, 5, size=3, dtype=np.int8),
             g.integers(0, 2, 4, dtype=bool), g.permutation(6), g.uniform(size=(2, 2), dtype=np.float32),
             g.exponential(size=70_000), g.random(0)]
    b = [ref.standard_normal(5), ref.random(), ref.integers(0, 5, size=3, dtype=np.int8),
         ref.integers(0, 2, 4, dtype=bool), ref.permutation(6), ref.uniform(size=(2, 2), dtype=np.float32),
         ref.exponential(size=70_000), ref.random(0)]
    assert [np.asarray(x).tobytes() for x in a] == [np.asarray(x).tobytes() for x in b]
    assert seen == [("standard_normal", ("float64",), 5, "rng"), ("random", ("float64",), 1, "rng"),
                    ("integers", ("int8",), 3, "rng"), ("integers", ("uint8",), 4, "rng"),
                    ("permutation", ("int64",), 6, "rng"), ("uniform", ("float32",), 4, "rng"),
                    ("exponential", ("float64",), 70_000, "rng")]


def test_funnel_hook_replaces_the_fill():
    def halves(call):
        _inputs, out = call.views()
        out[...] = 0.5

    g = R.Generator(2)
    with hooks.register("funnel", "rng", halves):
        assert g.random(4).tolist() == [0.5] * 4
        assert g.normal(1.0, 2.0) == 0.5
    assert g.state == (4, None, 1)             # the stream moved on all the same


class Sevens(hooks.Kernel):
    def __call__(self, inputs, out):
        out[...] = 7


class Watch(hooks.Kernel):
    def __init__(self):
        self.sizes = []

    def __call__(self, inputs, out):
        self.sizes.append(out.size)
        return NotImplemented


def test_kernel_hooks_replace_and_observe():
    g, ref = R.Generator(4), R.Generator(4)
    with hooks.register("kernel", ("standard_normal", "float64"), Sevens()):
        assert g.standard_normal(4).tolist() == [7.0] * 4 and g.standard_normal() == 7.0
        other = g.standard_normal(3, dtype=np.float32)     # another chain: untouched
    ref.standard_normal(4)
    ref.standard_normal()
    assert other.tobytes() == ref.standard_normal(3, dtype=np.float32).tobytes()
    w = Watch()
    with hooks.register("kernel", ("integers", "int64"), w):
        got = g.integers(-3, 3, 5000)
    assert w.sizes == [5000]
    assert got.tobytes() == ref.integers(-3, 3, 5000).tobytes()


# ------------------------------------------------------------------ ledger

def test_ledger_rows_of_kind_call():
    g = R.Generator(5)
    with nclx.ledger.recording() as led:
        g.random(10)
        g.random()
        g.integers(5, size=7, dtype=np.uint16)
        g.permutation(9)
        g.normal(size=0)
        g.exponential(size=(3, 4), dtype=np.float32)
    rows = {(r.op, r.dtypes): (r.kind, r.subsystem, r.calls, r.elements) for r in led.records()
            if r.subsystem == "rng"}
    assert rows == {("random", ("float64",)): ("call", "rng", 2, 11),
                    ("integers", ("uint16",)): ("call", "rng", 1, 7),
                    ("permutation", ("int64",)): ("call", "rng", 1, 9),
                    ("exponential", ("float32",)): ("call", "rng", 1, 12)}


# ------------------------------------------------------ fork and threads

def _child(q, state):
    g = R.Generator(6)
    first = g.standard_normal(300_000).tobytes()
    g2 = R.Generator(6)
    g2.state = state
    q.put((first, g2.integers(0, 100, 100_000).tobytes(), nclx.get_num_threads()))


def test_forked_child_gets_the_same_values():
    g = R.Generator(6)
    first = g.standard_normal(300_000).tobytes()       # the team ran in the parent
    state = g.state
    then = g.integers(0, 100, 100_000).tobytes()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, state))
    p.start()
    got = q.get(timeout=120)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert got == (first, then, 1)


def test_python_threads_with_their_own_generators():
    want = [R.Generator(i).standard_normal(200_000).tobytes() for i in range(6)]
    got = [None] * 6

    def work(i):
        for _ in range(3):
            got[i] = R.Generator(i).standard_normal(200_000).tobytes()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == want


@pytest.mark.parametrize("method", ["random", "standard_normal", "integers"])
def test_python_threads_sharing_a_generator_draw_disjoint_parts(method):
    """Each call reserves its part of the stream (or its call number) before
    filling: together the threads' values are those of the serial calls."""
    def draw(g):
        if method == "integers":
            return g.integers(0, 2**40, 5000)
        return getattr(g, method)(5000)

    g = R.Generator(8)
    parts = []
    lock = threading.Lock()

    def work():
        for _ in range(10):
            x = draw(g)
            with lock:
                parts.append(x)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ref = R.Generator(8)
    serial = [draw(ref) for _ in range(40)]
    assert sorted(p.tobytes() for p in parts) == sorted(s.tobytes() for s in serial)
