"""The vector partition of 64-bit keys (nclx/_ncl/ncl_vpart.h, AVX2): the
threaded unstable sort of float64, int64 and uint64 gives stock's bytes for
sizes around the vector width and the kept-back vectors, wide-range keys
(neither counted nor few-valued), many keys equal to the pivot (the x <= p
predicate), NaNs and infinities, integer extremes and uint64 keys above
2**63 -- through the vector partition and through the scalar block
partition (``sorting.vector_partition(False)``) on the same machine.  On a
processor without AVX2 both runs take the scalar one."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
from nclx._ncl import sorting
from sort_fixtures import lowered, needs_slots


@contextlib.contextmanager
def partition(vector):
    before = sorting.vector_partition(vector)
    try:
        yield
    finally:
        sorting.vector_partition(before)


def test_the_setting_is_returned_and_restored():
    before = sorting.vector_partition()
    assert before is True                              # the default
    assert sorting.vector_partition(False) is True
    assert sorting.vector_partition() is False
    assert sorting.vector_partition(True) is False
    assert isinstance(sorting.vector_partition_here(), bool)

SIZES = [64, 65, 67, 68, 71, 72, 75, 76, 79, 80, 95, 127, 128, 129, 255, 256, 257, 1000, 4099,
         20_011]
CHARS = ["f8", "i8", "u8"]


def _wide(char, n, rng):
    """Keys of a wide range: the value partition, not a counting sort."""
    if char == "f8":
        return rng.standard_normal(n) * 1e6
    if char == "i8":
        return rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64,
                            endpoint=True)
    return rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)


def _pattern(char, n, pattern, rng):
    a = _wide(char, n, rng)
    if pattern == "pivot-heavy":        # a third of the keys one value: x <= p splits them
        a[rng.random(n) < 0.35] = a[0]
    elif pattern == "extremes":
        info = np.finfo(a.dtype) if char == "f8" else np.iinfo(a.dtype)
        hi, lo = info.max, info.min
        pick = rng.integers(0, 4, n)
        a[pick == 0] = hi
        a[pick == 1] = lo
        if char == "f8":
            a[pick == 2] = np.inf
            a[(pick == 3) & (rng.random(n) < 0.2)] = -np.inf
    elif pattern == "nan":
        if char == "f8":
            a[rng.random(n) < 0.1] = np.nan          # one NaN payload: still split
        else:
            a[rng.random(n) < 0.1] = a.max()
    elif pattern == "high-bit" and char == "u8":
        a |= np.uint64(1 << 63)
    elif pattern == "sorted":
        a.sort()
    elif pattern == "reversed":
        a = np.sort(a)[::-1].copy()
    return a


@needs_slots
@pytest.mark.parametrize("char", CHARS)
@pytest.mark.parametrize("pattern", ["random", "pivot-heavy", "extremes", "nan", "high-bit",
                                     "sorted", "reversed"])
@pytest.mark.parametrize("nthreads", [2, 3, 7])
@pytest.mark.parametrize("vector", [True, False], ids=["vector", "scalar"])
def test_partitioned_sorts_are_stocks_bytes(char, pattern, nthreads, vector):
    rng = np.random.default_rng(hash((char, pattern, nthreads)) % 2**32)
    for n in SIZES:
        a = _pattern(char, n, pattern, rng)
        for kind in ("quicksort", "heapsort"):
            ref = np.sort(a, kind=kind)
            with lowered(nthreads), partition(vector), nclx.installed():
                got = np.sort(a, kind=kind)
                b = a.copy()
                b.sort(kind=kind)
            assert got.tobytes() == ref.tobytes(), (char, pattern, n, kind)
            assert b.tobytes() == ref.tobytes(), (char, pattern, n, kind)


@needs_slots
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CHARS), st.integers(64, 3000), st.integers(0, 2**32 - 1),
       st.sampled_from([2, 3, 4, 7]), st.floats(0.0, 0.9), st.booleans())
def test_hypothesis_partitioned_sorts(char, n, seed, nthreads, equal_share, vector):
    rng = np.random.default_rng(seed)
    a = _wide(char, n, rng)
    a[rng.random(n) < equal_share] = a[rng.integers(0, n)]
    ref = np.sort(a)
    with lowered(nthreads), partition(vector), nclx.installed():
        got = np.sort(a)
    assert got.tobytes() == ref.tobytes()
