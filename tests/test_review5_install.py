"""install() under hostile use: defects a review found (each test failed
before its fix).

- Two NaN operands of add or multiply in a threaded chunk gave the second
  operand's NaN (the compiler may swap a commutative + or *), NumPy the
  first's; remainder's chunks picked the first where NumPy (its C
  library's fmod) picks another: ``inf - inf`` (-nan) meeting a nan gave
  other bits than stock.
- A Python hook that only punts (``call.next()``) turned NumPy's in-loop
  error (integer power with a negative exponent) into a SystemError that
  was reported as the hook's own and lost: the call returned junk.
"""
import numpy as np
import pytest

import nclx
from nclx import hooks
from team_fixtures import threads  # noqa: F401  (a fixture)

NANS = {np.float64: (np.uint64, [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001,
                                 0xFFF8000000000002, 0x7FF0000000000456, 0xFFF0000000000789]),
        np.float32: (np.uint32, [0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC00002, 0x7F800456,
                                 0xFF800789])}


@pytest.fixture
def low_threshold():
    nclx.set_threshold(100)
    yield
    nclx.reset_thresholds()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("op", [np.add, np.multiply, np.subtract, np.true_divide, np.remainder,
                                np.floor_divide, np.fmod, np.maximum, np.minimum])
def test_two_nan_operands_give_numpys_bits_at_any_thread_count(op, dtype, threads, low_threshold):
    u, pats = NANS[dtype]
    n = 4096
    pairs = [(x, y) for x in pats for y in pats] + [(x, 1) for x in pats] + [(1, y) for y in pats]
    a = np.empty(n, u)
    b = np.empty(n, u)
    for i in range(n):
        x, y = pairs[i % len(pairs)]
        a[i] = x if x != 1 else np.array(1.5, dtype).view(u)
        b[i] = y if y != 1 else np.array(-2.5, dtype).view(u)
    a, b = a.view(dtype), b.view(dtype)
    with np.errstate(all="ignore"):
        want = op(a, b)
        with nclx.installed():
            got = op(a, b)
    assert got.tobytes() == want.tobytes()


def test_inf_minus_inf_meeting_a_nan_sums_as_numpy(threads, low_threshold):
    x = np.array([[np.inf, np.nan], [-np.inf, 1.0]] * 5000)
    with np.errstate(all="ignore"):
        want = (x[:, 0] + x[:, 0][::-1], np.multiply.reduce(x * 0, axis=0))
        with nclx.installed():
            got = (x[:, 0] + x[:, 0][::-1], np.multiply.reduce(x * 0, axis=0))
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


@pytest.mark.parametrize("level", ["funnel", "kernel"])
@pytest.mark.parametrize("catch", [False, True])
def test_a_loop_error_under_a_punting_hook_is_numpys(level, catch):
    """Also where the hook catches the error: the loop failed, NumPy raises."""
    def spy(call):
        if catch:
            try:
                call.next()
            except ValueError:
                pass
        else:
            call.next()
    a = np.arange(10) - 5
    with nclx.installed():
        h = hooks.register(level, "binary" if level == "funnel" else ("power", "int64"), spy)
        try:
            with pytest.raises(ValueError, match="negative integer powers"):
                np.power(a, -1)
            assert np.power(a, 2).tobytes() == (a * a).tobytes()
        finally:
            h.remove()
