"""Defects the seventeenth hostile review found in nclx.random (each test
failed before its fix): float32 draws from main-stream positions of 2**63
words and more read another position (the half index overflowed), a
position or call number past the last wrapped round to the stream's start,
the state setter took floats, dicts and iterators silently, permutation of
an integer-like scalar that is not a plain NumPy integer (an IntEnum
without 0, a timedelta64), float32 uniform's range overflow (an error for
scalars, inf for arrays)."""
import enum
import pickle

import numpy as np
import pytest

import nclx
import nclx.random as R

_TOP = 2**64 - 1          # the main stream's last position; the call numbers' too


@pytest.fixture
def threads():
    keep = nclx.get_num_threads()
    yield nclx.set_num_threads
    nclx.set_num_threads(keep)


def _numpy_at(seed, word):
    """numpy.random.Generator(Philox(seed)) moved to main-stream word `word`
    (a multiple of 4: a fresh counter)."""
    bg = np.random.Philox(seed)
    st = bg.state
    st["state"]["counter"] = np.array([word // 4, 0, 0, 0], np.uint64)
    st["buffer_pos"] = 4
    bg.state = st
    return np.random.Generator(bg)


@pytest.mark.parametrize("word", [2**63 - 4, 2**63, 2**63 + 40, 2**64 - 2**20])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_draws_at_high_positions_equal_numpy_philox(word, nthreads, threads):
    threads(nthreads)
    want, g = _numpy_at(5, word), R.Generator(5)
    g.state = (word, None, 0)
    for size, dt in [(3, np.float64), (5, np.float32), (None, np.float32), (9000, np.float32),
                     (7, np.float64), (5001, np.float32), (None, np.float64)]:
        a, b = want.random(size, dtype=dt), g.random(size, dtype=dt)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), (size, dt)
    assert want.uniform(-2.0, 3.0, 4000).tobytes() == g.uniform(-2.0, 3.0, 4000).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_main_stream_ends_instead_of_wrapping(dtype):
    """A call that would reach past the last position raises, the state
    unchanged (before: the position wrapped to the stream's start, so the
    draws repeated it, and a threaded call's pieces read from both ends)."""
    g = R.Generator(5)
    g.state = (_TOP - 3, None, 0)
    assert g.random(2).tobytes() == _numpy_at(5, _TOP - 3).random(2).tobytes()
    for size in [2 if dtype == np.float64 else 3, 5000]:    # two words: one is left
        with pytest.raises(OverflowError, match="main stream"):
            g.random(size, dtype=dtype)
        assert g.state == (_TOP - 1, None, 0)
    g.random(dtype=dtype)                                   # the last word
    assert g.state[::2] == (_TOP, 0) and (g.state[1] is None) == (dtype == np.float64)
    with pytest.raises(OverflowError, match="main stream"):
        g.uniform(0.0, 1.0, 3)
    if dtype == np.float32:                                 # its high half is still there
        want = _numpy_at(5, _TOP - 3)
        want.random(2)
        assert g.random(dtype=np.float32) == want.random(2, dtype=np.float32)[1]
        assert g.state == (_TOP, None, 0)


def test_block_stream_call_numbers_end_instead_of_wrapping():
    g = R.Generator(5)
    g.state = (7, None, _TOP - 1)
    g.standard_normal(3)
    for call in [lambda: g.standard_normal(3), lambda: g.integers(0, 9, 2), lambda: g.permutation(4),
                 lambda: g.exponential(size=5000), lambda: g.normal(size=None)]:
        with pytest.raises(OverflowError, match="call number"):
            call()
        assert g.state == (7, None, _TOP)
    assert g.random(2).tobytes() == _numpy_at(5, 4).random(5)[3:].tobytes()


class _Three(enum.IntEnum):
    A = 3


@pytest.mark.parametrize("bad", [(1.5, None, 0), (0, 1.5, 0), (0, None, 2.5), (np.float64(3), None, 0),
                                 (0, np.float32(1), 0), (True, None, 0), (0, None, False),
                                 (0, "1", 0), (np.array(3.0), None, 0), {0: 0, 1: 1, 2: 2},
                                 iter([0, None, 0]), "abc", None, 5])
def test_state_refuses_what_is_not_an_integer(bad):
    g = R.Generator(1)
    g.random(3, dtype=np.float32)
    before = g.state
    with pytest.raises(TypeError, match="state"):
        g.state = bad
    assert g.state == before


@pytest.mark.parametrize("bad,kind", [((1, 2), ValueError), ((1, None, 2, 3), ValueError),
                                      ((-1, None, 0), OverflowError), ((2**64, None, 0), OverflowError),
                                      ((0, 2**32, 0), OverflowError), ((0, -1, 0), OverflowError),
                                      ((0, None, 2**64), OverflowError)])
def test_state_errors_name_the_item(bad, kind):
    g = R.Generator(1)
    with pytest.raises(kind, match=r"state"):
        g.state = bad
    assert g.state == (0, None, 0)


def test_state_takes_integers_of_any_kind():
    g = R.Generator(1)
    g.state = [np.uint64(_TOP), np.uint32(5), np.array(3)]
    assert g.state == (_TOP, 5, 3) and all(type(v) is int for v in g.state)
    g.state = (_Three.A, None, np.int8(2))
    assert g.state == (3, None, 2)
    assert pickle.loads(pickle.dumps(g)).state == (3, None, 2)


@pytest.mark.parametrize("x", [_Three.A, np.timedelta64(5, "h"), np.timedelta64(5, "D"),
                               np.timedelta64(-2, "s"), np.timedelta64("NaT", "s")])
def test_permutation_of_integer_like_scalars_is_numpys(x):
    def outcome(gen):
        try:
            r = gen.permutation(x)
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            return type(exc).__name__, str(exc)
        return type(r), r.dtype, r.shape, np.sort(r).tobytes()
    assert outcome(R.Generator(1)) == outcome(np.random.default_rng(1))


@pytest.mark.parametrize("low,high", [(0.0, 1e39), ([0.0], 1e39), (-1e39, [1e39]),
                                      (np.zeros((2, 2)), np.full((2, 2), 4e38))])
def test_float32_uniform_range_overflow_is_an_error_for_arrays_too(low, high):
    g = R.Generator(1)
    with pytest.raises(OverflowError, match="[Rr]ange exceeds valid bounds"):
        g.uniform(low, high, dtype=np.float32)
    assert g.state == (0, None, 0)
    assert g.uniform(0.0, [1e30], dtype=np.float32).dtype == np.float32
