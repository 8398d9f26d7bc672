"""Two NaN operands of other payloads: under install() every float binary
op gives stock NumPy's bits, split across threads or not (found by review:
threaded add and multiply chunks ran nclx's kernel, which keeps the first
operand's NaN, where NumPy 2.0's loops keep the second's in their
vectorised body and 2.4's and 2.5's the second's in a call's tail)."""
import numpy as np
import pytest

import nclx

OPS = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.fmax,
       np.fmin, np.hypot, np.arctan2, np.power, np.copysign, np.logaddexp, np.nextafter,
       np.floor_divide, np.remainder, np.heaviside, np.float_power, np.fmod]

PAYLOADS = {np.float64: (np.uint64, 0x7FF8000000000111, 0x7FF8000000000222),
            np.float32: (np.uint32, 0x7FC00111, 0x7FC00222)}


def _nans(n, dtype):
    u, p1, p2 = PAYLOADS[dtype]
    x, y = np.empty(n, dtype), np.empty(n, dtype)
    x.view(u)[:] = p1
    y.view(u)[:] = p2
    return x, y


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    before = nclx.get_num_threads()
    nclx.set_num_threads(request.param)
    yield
    nclx.set_num_threads(before)
    nclx.uninstall()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [5, 100, 300_001, 1_000_003])
def test_two_nan_operands_as_stock(threads, dtype, n):
    x, y = _nans(n, dtype)
    with np.errstate(all="ignore"):
        want = [op(x, y).tobytes() for op in OPS] + [op(y[::-1], x).tobytes() for op in OPS]
        nclx.install()
        got = [op(x, y).tobytes() for op in OPS] + [op(y[::-1], x).tobytes() for op in OPS]
        nclx.uninstall()
    bad = [(OPS + OPS)[k].__name__ for k in range(len(want)) if want[k] != got[k]]
    assert bad == []


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_two_nan_operands_into_out_and_mixed_with_numbers(dtype):
    n = 500_003
    x, y = _nans(n, dtype)
    x[::3] = 1.5
    with np.errstate(all="ignore"):
        want = [np.add(x, y), np.multiply(y, x), x + y * y]
        nclx.install()
        try:
            o = np.empty_like(x)
            got = [np.add(x, y, out=o).copy(), np.multiply(y, x), x + y * y]
        finally:
            nclx.uninstall()
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
