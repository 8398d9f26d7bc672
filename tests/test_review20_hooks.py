"""Review 20 regressions in the hooks (each failed before its fix).

- H1: a Python hook that computes a call from its views (a funnel hook
  writing ``out`` itself, or a ``Kernel.__call__``, docs/hooks.md's own
  ``SaturatingInt8Add``) gave wrong ``accumulate`` results (``cumsum`` of
  1..6 read [1 3 3 5 5 8]): the accumulate loop's first input is its
  output one element back, which the up-front mirrors did not hold.  Such
  calls are now shown to Python hooks one element at a time.
- H4: ``checked()`` let ``np.gcd``/``np.lcm`` results outside the type
  wrap silently (``lcm(2**62, 3)``, ``gcd(MIN, 0)``).
- N1: ``set_num_threads(2**31)`` and ``set_threshold(2**63)`` raised a bare
  OverflowError; now 64 threads and a threshold of 2**62 (never splits).
- C1: ``nclx.convert`` refusing a cast of a 0-d array said "array data"
  where NumPy says "scalar", and printed an ``np.str_`` rule by its repr.
"""
import numpy as np
import pytest

import nclx
import nclx.hooks as hooks


class SaturatingInt8Add(hooks.Kernel):
    name = "saturate"

    def __call__(self, inputs, out):
        out[...] = np.clip(inputs[0].astype(np.int16) + inputs[1], -128, 127)

    def reduce(self, values, acc):
        return NotImplemented


def _saturating_cumsum(x):
    acc, out = 0, []
    for v in x.tolist():
        acc = min(127, max(-128, acc + v))
        out.append(acc)
    return np.array(out, np.int8)


@pytest.mark.parametrize("threads", [1, 2])
def test_h1_kernel_hook_accumulate(threads):
    x = np.array([1, 2, 3, 4, 5, 6, 100, 100, -50], np.int8)
    old = nclx.get_num_threads()
    nclx.set_num_threads(threads)
    try:
        with nclx.installed(), hooks.register("kernel", ("add", "int8"), SaturatingInt8Add()):
            got = np.cumsum(x, dtype=np.int8)
            plain = x + x
    finally:
        nclx.set_num_threads(old)
    assert got.tobytes() == _saturating_cumsum(x).tobytes()
    assert plain.tobytes() == np.clip(x.astype(np.int16) * 2, -128, 127).astype(np.int8).tobytes()


def _computes_itself(call):
    ins, out = call.views()
    if call.is_reduce:
        call.next()
    elif call.op == "add":
        out[...] = ins[0] + ins[1]
    elif call.op == "multiply":
        out[...] = ins[0] * ins[1]
    elif call.op == "maximum":
        out[...] = np.maximum(ins[0], ins[1])
    else:
        call.next()


@pytest.mark.parametrize("case", ["cumsum", "cumprod_axis0", "maximum_accumulate",
                                  "cumsum_strided", "cumsum_axis1"])
def test_h1_funnel_hook_computing_accumulate(case):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 9))
    run = {
        "cumsum": lambda: np.cumsum(a[0]),
        "cumprod_axis0": lambda: np.cumprod(a, axis=0),
        "maximum_accumulate": lambda: np.maximum.accumulate(a.ravel()),
        "cumsum_strided": lambda: np.cumsum(a.ravel()[::-3]),
        "cumsum_axis1": lambda: np.cumsum(a, axis=1),
    }[case]
    want = run()
    with nclx.installed(), hooks.register("funnel", "binary", _computes_itself):
        got = run()
    assert got.tobytes() == want.tobytes()


def test_h1_kernel_hook_passing_some_elements_on():
    # a Kernel that declines every other element: the whole call then goes on
    # to the next node, which recomputes it in order (the result is NumPy's)
    seen = []

    class Odd(hooks.Kernel):
        def __call__(self, inputs, out):
            seen.append(len(out))
            if len(seen) % 2 == 0:
                return NotImplemented
            out[...] = inputs[0] + inputs[1]

    x = np.arange(1.0, 30.0)
    with nclx.installed(), hooks.register("kernel", ("add", "float64"), Odd()):
        got = np.cumsum(x)
    assert got.tobytes() == np.cumsum(x).tobytes()
    assert set(seen) == {1}


def test_h1_elementwise_calls_stay_whole():
    sizes = []

    def count(call):
        sizes.append(call.n)
        call.next()

    a = np.arange(1000.0)
    with nclx.installed(), hooks.register("funnel", "binary", count):
        b = a + a
        np.add(a[:-1], a[1:], out=a[1:])        # NumPy copies the overlap first
    assert b.tobytes() == (np.arange(1000.0) * 2).tobytes()
    assert 1000 in sizes


def test_c1_convert_refusal_words_are_numpys():
    a = np.array(1, dtype=np.int8)
    x = np.arange(3.0)
    for arr, to, rule in [(a, np.uint8, "safe"), (x, np.int32, np.str_("safe")),
                          (a, np.bool_, "same_kind"), (x, np.float32, "equiv")]:
        with pytest.raises(TypeError) as want:
            arr.astype(to, casting=rule)
        with pytest.raises(TypeError) as got:
            nclx.convert(arr, to, casting=rule)
        assert str(got.value) == str(want.value)


_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _exact(op, x, y):
    import math
    g = math.gcd(int(x), int(y))
    if op is np.gcd:
        return g
    return 0 if g == 0 else abs(int(x) * int(y)) // g


@pytest.mark.parametrize("dt", _INTS)
@pytest.mark.parametrize("op", [np.gcd, np.lcm], ids=["gcd", "lcm"])
def test_h4_checked_gcd_lcm(dt, op):
    # before, checked() let gcd(MIN, 0) and lcm(2**62, 3) wrap silently
    info = np.iinfo(dt)
    rng = np.random.default_rng(4)
    edges = [0, 1, 2, 3, 7, 100, 128, 255, 256, 2**31, 2**32, 2**62, 3**20,
             -1, -2, -3, -128, info.min, info.max, info.min + 1, info.max - 1]
    vals = [v for v in edges if info.min <= v <= info.max]
    vals += rng.integers(info.min, info.max, 40, dtype=dt, endpoint=True).tolist()
    vals = np.array(vals, dtype=dt)
    a, b = (m.ravel() for m in np.meshgrid(vals, vals))
    want = op(a, b)
    wrapped = sum(not info.min <= _exact(op, x, y) <= info.max
                  for x, y in zip(a.tolist(), b.tolist()))
    with nclx.checked(), np.errstate(over="ignore"):
        assert op(a, b).tobytes() == want.tobytes()      # NumPy's values
    with nclx.checked():
        if wrapped:
            with pytest.raises(OverflowError, match=f"in {op.__name__} .*{wrapped} element"):
                op(a, b)
        else:
            assert op(a, b).tobytes() == want.tobytes()
    assert op(a, b).tobytes() == want.tobytes()           # outside: NumPy's, no error


def test_h4_checked_lcm_reduce_and_accumulate_in_order():
    x = np.array([2**40, 3**20, 5], np.int64)
    small = np.array([4, 6, 10], np.int8)
    with nclx.checked():
        with pytest.raises(OverflowError, match="lcm"):
            np.lcm.reduce(x)
        with pytest.raises(OverflowError, match="lcm"):
            np.lcm.accumulate(x)
        assert np.lcm.reduce(small) == 60
        assert np.lcm.accumulate(small).tobytes() == np.array([4, 12, 60], np.int8).tobytes()
        with pytest.raises(OverflowError, match="lcm"):
            np.lcm.accumulate(np.array([4, 6, 10, 7], np.int8))   # 420 > 127
    want = np.lcm.accumulate(x)
    with nclx.checked(), np.errstate(over="ignore"):
        assert np.lcm.accumulate(x).tobytes() == want.tobytes()


def test_n1_huge_thread_counts_and_thresholds():
    # before: a bare OverflowError ("value too large to convert to int")
    threads, threshold = nclx.get_num_threads(), nclx.get_threshold()
    try:
        nclx.set_num_threads(2**31)
        assert 1 <= nclx.get_num_threads() <= 64         # (threadpoolctl may cap it lower)
        nclx.set_threshold(2**70)
        assert nclx.get_threshold() == 2**62
        with pytest.raises(ValueError, match=">= 1"):
            nclx.set_num_threads(-2**70)
        with pytest.raises(ValueError, match=">= 1"):
            nclx.set_threshold(-2**70)
    finally:
        nclx.set_num_threads(threads)
        nclx.set_threshold(threshold)
