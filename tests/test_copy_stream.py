"""Large contiguous copies under install() written with non-temporal
stores (nclx._ncl.copyrun, ncl_stream.h): the same bytes as NumPy's
memmove at every alignment of source and destination, length, item size
and thread count, nothing written outside the destination, overlapping
copies left to NumPy's memmove, and the threshold that decides."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
from nclx._ncl import copying, spec

from copy_fixtures import split_small
from test_copy import _compare, _data

pytestmark = pytest.mark.skipif(copying.layout() != "",
                                reason=f"NumPy's copy methods not reachable: {copying.layout()}")


@pytest.fixture(autouse=True)
def streamed():
    """Every contiguous copy of two pieces of 64 bytes and more split and
    streamed (the threshold at 0)."""
    with split_small():
        old = copying.tune(stream_bytes=0)
        try:
            yield
        finally:
            copying.tune(*old)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", list(spec.ALL))
def test_streamed_copies_equal_stock_for_every_dtype_and_layout(dtype, threads):
    nclx.set_num_threads(threads)
    for n in (0, 1, 31, 32, 33, 255, 256, 257, 4099, 100_003):
        _compare(_data(dtype, n))


@settings(max_examples=150, deadline=None)
@given(isz=st.sampled_from([1, 2, 4, 8]), n=st.integers(0, 5000),
       soff=st.integers(0, 70), doff=st.integers(0, 70), nthreads=st.sampled_from([1, 2, 3, 7]),
       seed=st.integers(0, 2**32 - 1))
def test_every_alignment_and_length(isz, n, soff, doff, nthreads, seed):
    """Source and destination at any byte offset: the destination gets the
    source's bytes, the guard bytes around it stay as they were."""
    nclx.set_num_threads(nthreads)
    dt = {1: "u1", 2: "u2", 4: "u4", 8: "u8"}[isz]     # complex: NumPy's own copy
    rng = np.random.default_rng(seed)
    sbuf = rng.integers(0, 256, soff + n * isz + 64, dtype=np.uint8)
    dbuf = rng.integers(0, 256, doff + n * isz + 64, dtype=np.uint8)
    want = dbuf.copy()
    want[doff:doff + n * isz] = sbuf[soff:soff + n * isz]
    src = sbuf[soff:soff + n * isz].view(dt)
    dst = dbuf[doff:doff + n * isz].view(dt)
    nclx.install()
    before = copying.stream_calls()
    np.copyto(dst, src)
    streamed = copying.stream_calls() - before
    nclx.uninstall()
    assert dbuf.tobytes() == want.tobytes()
    # dtype and alignment do not matter; two pieces of 64 bytes do
    assert streamed == (1 if n * isz >= 128 else 0)


@pytest.mark.parametrize("shift", [1, 7, 64, 1000, -1, -7, -64, -1000])
def test_overlapping_copies_stay_numpys_memmove(shift):
    base = _data("f8", 20_000)
    n = 10_000
    lo = 5000

    def run():
        b = base.copy()
        b[lo + shift:lo + shift + n] = b[lo:lo + n]
        return b.tobytes()

    want = run()
    nclx.install()
    before = copying.stream_calls()
    got = run()
    # the base copy is streamed, the overlapping assignment is not
    assert copying.stream_calls() - before == 1
    nclx.uninstall()
    assert got == want


def test_the_default_threshold_decides():
    copying.tune(stream_bytes=copying.STREAM_BYTES)
    nclx.set_num_threads(2)
    big = np.arange(copying.STREAM_BYTES // 8, dtype=np.float64)
    small = big[:-1]
    nclx.install()
    before = copying.stream_calls()
    s = small.copy()
    assert copying.stream_calls() == before
    b = big.copy()
    assert copying.stream_calls() == before + 1
    r = big[::-1].copy()                 # a negative stride: NumPy's loop per piece
    t = big[::2].copy()
    assert copying.stream_calls() == before + 1
    nclx.uninstall()
    assert b.tobytes() == big.tobytes() and s.tobytes() == small.tobytes()
    assert r.tobytes() == big[::-1].tobytes() and t.tobytes() == big[::2].tobytes()


def test_tune_checks_stream_bytes_before_setting_anything():
    before = copying.tune()
    with pytest.raises(ValueError, match="stream_bytes"):
        copying.tune(128, 1, -1)
    with pytest.raises(ValueError, match="stream_bytes"):
        copying.tune(stream_bytes=1 << 63)
    assert copying.tune() == before


def test_python_threads_streaming_at_once():
    nclx.set_num_threads(2)
    arrays = [_data(dt, 50_000 + 13 * i) for i, dt in enumerate(["f8", "i4", "u1", "u2"] * 2)]
    want = [a.tobytes() for a in arrays]
    got = [None] * len(arrays)
    nclx.install()

    def work(i):
        for _ in range(20):
            got[i] = arrays[i].copy().tobytes()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(arrays))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    nclx.uninstall()
    assert got == want
