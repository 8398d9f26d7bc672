"""nclx.random.Generator against numpy.random.Generator: the values of
random/uniform equal NumPy's Philox stream bit for bit; every method's
errors, result types and shapes are NumPy's; results depend on the seed,
the calls made and the block size, never on the thread count."""
import doctest
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nclx
import nclx.random as R

SEEDS = [0, 1, 12345, 2**63 + 7, [1, 2, 3]]


@pytest.fixture
def threads():
    keep = nclx.get_num_threads()
    yield nclx.set_num_threads
    nclx.set_num_threads(keep)


def pair(seed=12345):
    return R.Generator(seed), np.random.Generator(np.random.Philox(seed))


def same(a, b):
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    else:
        assert a == b or (a != a and b != b)


# ------------------------------------------------ NumPy's Philox, exactly

@pytest.mark.parametrize("seed", SEEDS)
def test_key_is_philox_key(seed):
    g, n = pair(seed)
    assert list(g.key) == [int(k) for k in n.bit_generator.state["state"]["key"]]
    ss = np.random.SeedSequence(seed)
    assert R.Generator(ss).key == g.key


def test_random_sequence_equals_numpy_philox():
    g, n = pair()
    for size, dtype in [(None, np.float64), (5, np.float64), (3, np.float32), (None, np.float32),
                        (1, np.float32), ((), np.float64), ((2, 3), np.float32), (0, np.float32),
                        (7, np.float64), (10_001, np.float32), (100_003, np.float64),
                        (None, np.float32), ((4, 5, 6), np.float64)]:
        same(g.random(size, dtype), n.random(size, dtype))
    assert g.state[0] == 4 * (int(n.bit_generator.state["state"]["counter"][0]) - 1) + \
        n.bit_generator.state["buffer_pos"]


def test_uniform_equals_numpy_philox():
    g, n = pair(7)
    for args in [(), (2.0, 5.0), (-1, 1, 10), (0.5, 0.5, 3), (1e300, 1e300 + 1e290, 4),
                 (np.array([1.0, 2.0]), 3.0), ([[0.0], [1.0]], [2.0, 3.0, 4.0]),
                 (0.0, np.array(2.0), (2, 2)), (np.float32(1), 2, 5), (-0.0, 0.0, 2),
                 ([0.0, 1.0], 2.0, (3, 2))]:
        same(g.uniform(*args), n.uniform(*args))
    same(g.random(9), n.random(9))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_out_fills_memory_order_as_numpy(order, dtype):
    g, n = pair(3)
    a, b = np.empty((30, 7), dtype, order=order), np.empty((30, 7), dtype, order=order)
    assert g.random(out=a, dtype=dtype) is a
    n.random(out=b, dtype=dtype)
    same(a, b)
    assert g.random((30, 7), dtype, out=a) is a
    n.random((30, 7), dtype, out=b)
    same(a, b)


@pytest.mark.parametrize("t", [1, 2, 3])
def test_large_outputs_equal_numpy_philox(threads, t):
    """Outputs above 8 MiB: thread 0 maps the pages first, the others fill."""
    threads(t)
    g, n = pair(31)
    same(g.random(1_200_001), n.random(1_200_001))
    same(g.random(2_500_003, dtype=np.float32), n.random(2_500_003, dtype=np.float32))
    a, b = np.empty(1_100_000), np.empty(1_100_000)
    same(g.random(out=a), n.random(out=b))
    same(g.uniform(-5, 5, 1_100_000), n.uniform(-5, 5, 1_100_000))


@given(st.lists(st.tuples(st.sampled_from(["f8", "f4", "uniform"]),
                          st.integers(0, 9000) | st.sampled_from([None, 4095, 4096, 4097, 65536])),
                min_size=1, max_size=8),
       st.sampled_from([1, 2, 3, 7]))
def test_hypothesis_call_sequences_equal_numpy_philox(calls, nthreads):
    keep = nclx.get_num_threads()
    nclx.set_num_threads(nthreads)
    try:
        g, n = pair(99)
        for kind, size in calls:
            if kind == "uniform":
                same(g.uniform(-2.0, 3.0, size), n.uniform(-2.0, 3.0, size))
            else:
                same(g.random(size, dtype=kind), n.random(size, dtype=kind))
    finally:
        nclx.set_num_threads(keep)


# --------------------------------------------- thread-count invariance

CASES = [
    ("random", lambda g, n: g.random(n)),
    ("random32", lambda g, n: g.random(n, dtype=np.float32)),
    ("uniform32", lambda g, n: g.uniform(-1, 4, n, dtype=np.float32)),
    ("standard_normal", lambda g, n: g.standard_normal(n)),
    ("standard_normal32", lambda g, n: g.standard_normal(n, dtype=np.float32)),
    ("normal", lambda g, n: g.normal(3.0, 0.5, n)),
    ("exponential", lambda g, n: g.exponential(2.0, n)),
    ("exponential32", lambda g, n: g.exponential(2.0, n, dtype=np.float32)),
    ("integers", lambda g, n: g.integers(-5, 1000, n)),
    ("integers8", lambda g, n: g.integers(-100, 100, n, dtype=np.int8)),
    ("integers64", lambda g, n: g.integers(0, 3 << 62, n, dtype=np.uint64)),
    ("integers_full", lambda g, n: g.integers(0, 2**64, n, dtype=np.uint64)),
    ("integers_bool", lambda g, n: g.integers(0, 2, n, dtype=bool)),
    ("integers_array", lambda g, n: g.integers(0, np.arange(1, n + 1))),
    ("permutation", lambda g, n: g.permutation(n)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 3 * 2048 + 5, 100_003])
def test_same_bytes_on_1_2_3_7_threads(threads, name, fn, n):
    out = []
    for t in (1, 2, 3, 7):
        threads(t)
        g = R.Generator(2024)
        out.append((fn(g, n).tobytes(), fn(g, n).tobytes()))
    assert out[0][0] != out[0][1] or n == 1
    assert all(o == out[0] for o in out[1:])


@pytest.mark.parametrize("n", [2**18 + 3, 1_000_003])
def test_bucket_permutation_same_on_1_2_3_7_threads(threads, n):
    got = []
    for t in (1, 2, 3, 7):
        threads(t)
        got.append(R.Generator(5).permutation(n).tobytes())
    assert all(x == got[0] for x in got)
    assert np.array_equal(np.sort(np.frombuffer(got[0], np.int64)), np.arange(n))


def test_block_size_changes_block_streams_only():
    a, b = R.Generator(1), R.Generator(1, block=1000)
    assert a.block == R.default_block and b.block == 1000
    assert a.random(5000).tobytes() == b.random(5000).tobytes()
    assert a.standard_normal(5000).tobytes() != b.standard_normal(5000).tobytes()
    # within the first block the streams agree
    a, b = R.Generator(1), R.Generator(1, block=1000)
    assert a.standard_normal(999).tobytes() == b.standard_normal(999).tobytes()


# ------------------------------------------------------- reproducibility

@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_same_seed_same_values_and_calls_move_on(name, fn):
    g1, g2 = R.Generator(77), R.Generator(77)
    first = fn(g1, 5000)
    assert first.tobytes() == fn(g2, 5000).tobytes()
    assert fn(g1, 5000).tobytes() != first.tobytes()
    assert R.Generator(78).random(10).tobytes() != R.Generator(77).random(10).tobytes()


def test_state_and_pickle_restore_the_stream():
    g = R.Generator(5)
    g.random(3, dtype=np.float32)
    g.standard_normal(10)
    saved, clone = g.state, pickle.loads(pickle.dumps(g))
    want = [g.random(5).tobytes(), g.random(dtype=np.float32), g.normal(size=7).tobytes()]
    assert saved == (2, saved[1], 1) and saved[1] is not None
    g.state = saved
    assert [g.random(5).tobytes(), g.random(dtype=np.float32), g.normal(size=7).tobytes()] == want
    assert [clone.random(5).tobytes(), clone.random(dtype=np.float32),
            clone.normal(size=7).tobytes()] == want
    assert repr(g) == f"Generator(Philox4x64, block={R.default_block})"


def test_bad_state():
    g = R.Generator(1)
    with pytest.raises((TypeError, ValueError)):
        g.state = (1, 2)
    with pytest.raises(OverflowError):
        g.state = (-1, None, 0)
    with pytest.raises(OverflowError):
        g.state = (0, 2**32, 0)
    assert g.state == (0, None, 0)


@pytest.mark.parametrize("block", [0, -1, 1.5, "8", True, None, 2**40 + 1, 2**63])
def test_bad_block(block):
    with pytest.raises(ValueError, match="block must be a positive integer up to 2"):
        R.Generator(1, block=block)


def test_huge_block_is_one_stream():
    a, b = R.Generator(3, block=2**40), R.Generator(3, block=300_000)
    assert a.standard_normal(250_000).tobytes() == b.standard_normal(250_000).tobytes()
    assert np.array_equal(np.sort(a.permutation(300_001)), np.arange(300_001))


@pytest.mark.parametrize("seed", [-1, 1.5, "x", [1, -2]])
def test_bad_seed_is_philox_error(seed):
    with pytest.raises(Exception) as ours:
        R.Generator(seed)
    with pytest.raises(Exception) as theirs:
        np.random.Philox(seed)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_docstring_example_runs():
    result = doctest.testmod(R, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
