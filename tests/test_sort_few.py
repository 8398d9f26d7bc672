"""Sorts of few distinct values are counted (nclx._ncl.sortcount,
ncl_few.h): stock's bytes for every dtype and kind, whether the count is
taken or an element the sample missed sends the sort another way."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
from nclx._ncl import sortcount, sorting
from team_fixtures import threads_fixture
from sort_fixtures import lowered, needs_slots, small  # noqa: F401 - small is a fixture

KINDS = ["quicksort", "heapsort", "stable"]
CHARS = ["i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]

threads = threads_fixture([2, 3, 7])


pytestmark = needs_slots


def _values(char, d, seed):
    """d distinct values spread over the dtype's range (floats: finite,
    both infinities and a subnormal among them)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(char)
    if dt.kind == "f":
        v = (rng.standard_normal(d) * 10.0 ** rng.integers(-30, 30, d)).astype(dt)
        v[: min(d, 3)] = np.array([np.inf, -np.inf, np.finfo(dt).smallest_subnormal], dt)[: min(d, 3)]
    else:
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, d, dtype=dt, endpoint=True)
        v[: min(d, 2)] = np.array([info.max, info.min], dt)[: min(d, 2)]   # no small range
    return v


def _few(char, n, d, seed=0):
    rng = np.random.default_rng(seed + 1)
    return _values(char, d, seed)[rng.integers(0, d, n)]


def _check(a, kind):
    ref = np.sort(a, kind=kind)
    with nclx.installed():
        got = np.sort(a, kind=kind)
        b = a.copy()
        b.sort(kind=kind)
    assert got.dtype == ref.dtype
    assert got.tobytes() == ref.tobytes()
    assert b.tobytes() == ref.tobytes()


@pytest.mark.parametrize("char", CHARS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("d", [1, 2, 37, 256])
def test_few_values_counted(char, kind, d, threads, small):
    n = 50_003
    a = _few(char, n, d, seed=d)
    before = sortcount.few_sorts()
    _check(a, kind)
    # two sorts (np.sort and ndarray.sort) went by counting; one value is
    # data in order, which integer sorts and stable sorts return at once
    taken = 0 if d == 1 and (kind == "stable" or a.dtype.kind != "f") else 2
    assert sortcount.few_sorts() - before == taken


@pytest.mark.parametrize("char", CHARS)
@pytest.mark.parametrize("where", [5, 4095, 4097, 25_001, -1])
def test_an_element_the_sample_missed_sends_it_elsewhere(char, where, threads, small):
    """A value outside the table (away from the sampled positions: step 16
    here) stops the count at the end of its block, the data untouched."""
    n = 50_003
    a = _few(char, n, 20, seed=3)
    a[where] = _values(char, 300, seed=99)[-1]
    before = sortcount.few_sorts()
    for kind in KINDS:
        _check(a, kind)
    assert sortcount.few_sorts() == before


@pytest.mark.parametrize("char", ["f4", "f8"])
def test_zeros_and_nans(char, threads, small):
    """Both zeros, or NaNs, never go by counting: NumPy's order of equal
    keys with different bits is its own."""
    n = 50_003
    dt = np.dtype(char)
    rng = np.random.default_rng(5)
    pool = np.array([1.5, -2.0, 0.0, 7.0], dt)
    a = pool[rng.integers(0, len(pool), n)]
    before = sortcount.few_sorts()
    b = a.copy()
    b[7] = -0.0                     # not sampled: a miss
    c = a.copy()
    c[::2] = np.array(-0.0, dt)     # both zeros in the sample
    e = a.copy()
    e[:: 3] = np.nan                # a NaN in the sample
    f = a.copy()
    f[11] = np.nan                  # a NaN the sample missed
    for x in (b, c, e, f):
        for kind in KINDS:
            _check(x, kind)
    assert sortcount.few_sorts() == before
    _check(a, "quicksort")          # no zero of the other sign, no NaN: counted
    assert sortcount.few_sorts() == before + 2


def test_many_values_and_small_arrays_are_not_counted(threads, small):
    before = sortcount.few_sorts()
    _check(_few("i8", 50_003, 2_000, seed=4), "quicksort")     # too many keys
    _check(_few("i8", 10_000, 3, seed=4), "quicksort")         # below 2**14 elements
    _check(_few("b", 50_003, 3, seed=4), "quicksort")          # int8: counted by range
    assert sortcount.few_sorts() == before


def test_one_thread_and_axis_sorts(small):
    """N-d sorts hand each lane over; a lane long enough is counted."""
    a = _few("f8", 3 * 40_000, 9, seed=8).reshape(3, 40_000)
    for nth in (1, 2, 5):
        nclx.set_num_threads(nth)
        try:
            for axis in (0, 1, -1, None):
                ref = np.sort(a, axis=axis)
                with nclx.installed():
                    got = np.sort(a, axis=axis)
                assert got.tobytes() == ref.tobytes()
            ref = np.sort(a.T, axis=0)
            with nclx.installed():
                got = np.sort(a.T, axis=0)
            assert got.tobytes() == ref.tobytes()
        finally:
            nclx.set_num_threads(2)


def test_large_slices_stream(threads):
    """Slices of 2 MiB or more are written with non-temporal stores: odd
    lengths and alignment of the runs do not matter."""
    for char in ("i4", "f4", "f8"):
        for d in (2, 3):
            a = _few(char, 3_000_001, d, seed=d)
            before = sortcount.few_sorts()
            _check(a, "quicksort")
            assert sortcount.few_sorts() - before == 2
    # an unaligned view sorted by NumPy through a copy of its own
    buf = np.zeros(8 * 1_000_001 + 1, np.uint8)[1:].view("f8")
    buf[...] = _few("f8", 1_000_001, 4, seed=2)
    _check(buf, "stable")


pool_values = st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.25, 1e-310, -7.5])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CHARS), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.lists(st.tuples(st.integers(0, 40_000), pool_values), max_size=4),
       st.sampled_from(KINDS), st.sampled_from([2, 3, 7]))
def test_hypothesis_few_values_with_strays(char, d, seed, strays, kind, nth):
    """Few values and a few stray elements anywhere (floats: zeros, NaNs,
    infinities): stock's bytes, counted or not."""
    a = _few(char, 40_001, d, seed=seed)
    for pos, val in strays:
        if a.dtype.kind == "f":
            a[pos] = val
        elif np.isfinite(val):
            a[pos] = np.array(int(val) * 977).astype(a.dtype)     # wraps around
    with lowered(nth):
        _check(a, kind)


@pytest.mark.parametrize("char", ["i2", "u2"])
def test_16bit_arrays_8_times_their_range_a_thread_count_the_whole_range(char):
    """Few 16-bit values and one stray at the very end: counted over the
    whole 65,536-value range (no sample, nothing to miss) once the array is
    8 times that long a thread; before, the few-values count ran a whole
    pass for nothing and the sort read 0.64x stock (2e7 uint16)."""
    before = nclx.get_num_threads()
    nclx.set_num_threads(2)
    try:
        n = 8 * 65536 * 2 + 3
        a = _few(char, n, 5, seed=11)
        a[-1] = np.array(-12345 if char == "i2" else 54321).astype(char)
        r0, f0 = sortcount.range_sorts(), sortcount.few_sorts()
        for kind in KINDS:
            _check(a, kind)
        assert sortcount.range_sorts() - r0 == 2 * len(KINDS)
        assert sortcount.few_sorts() == f0
        # one element short of the rule: the few-values count, which the
        # stray stops (NumPy's bytes either way)
        b = a[: 8 * 65536 * 2 - 1].copy()
        b[-1] = a[-1]
        r0 = sortcount.range_sorts()
        _check(b, "quicksort")
        assert sortcount.range_sorts() == r0
    finally:
        nclx.set_num_threads(before)
