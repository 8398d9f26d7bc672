"""nclx's copy leaves (nclx/_ncl/ncl_copyleaf.h): under install(), while
nobody watches, the loop NumPy's copy methods hand out copies each call as
NumPy's own loop for the same alignment and strides does, byte for byte --
also where source and destination share memory (shifted overlaps, a
destination stride of 0 or below the item size, a source inside the
destination), which NumPy's assignments never hand a loop but a direct
call of the method does (``_simple_strided_call``, NumPy's own test entry
of an ArrayMethod: it asks the method's getter for the loop of the arrays'
strides and alignment, then calls it once)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
import nclx.ledger
from nclx._ncl import spec
from numpy._core._multiarray_umath import _get_castingimpl

from copy_fixtures import split_small

ALL = list(spec.ALL)
NS = (0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 100, 200, 1100)


def _impl(dt):
    d = np.dtype(dt)
    return _get_castingimpl(type(d), type(d))


def _run(dt, n, s0, s1, o0, o1, size, seed=3):
    """Bytes of a buffer after one call of the copy method on two views of
    it: ``n`` items of ``dt`` from offset ``o0`` (stride ``s0``) to offset
    ``o1`` (stride ``s1``)."""
    d = np.dtype(dt)
    buf = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    src = np.ndarray((n,), d, buffer=buf, offset=o0, strides=(s0,))
    dst = np.ndarray((n,), d, buffer=buf, offset=o1, strides=(s1,))
    _impl(dt)._simple_strided_call((src, dst))
    return buf.tobytes()


def _extent(n, s, o, isz):
    if n == 0:
        return o, o
    last = o + s * (n - 1)
    return min(o, last), max(o, last) + isz


def _cases(dt):
    """(n, s0, s1, o0, o1, size): strides of whole items forward and back,
    0, and of a byte (items sharing bytes) or an item and a byte (unaligned
    steps); the destination shifted onto the source by whole items and by
    a byte; the source inside the destination."""
    isz = np.dtype(dt).itemsize
    strides = sorted({0, isz, -isz, 2 * isz, -3 * isz, 1, isz + 1})
    out = []
    for n in NS:
        for s0 in strides:
            for s1 in strides:
                for shift in (0, isz, -isz, 2 * isz, 1, -1, 7 * isz, 10_000):
                    for base in (512, 513):       # aligned, and one byte in
                        o0, o1 = base, base + shift
                        lo0, hi0 = _extent(n, s0, o0, isz)
                        lo1, hi1 = _extent(n, s1, o1, isz)
                        lo = min(lo0, lo1)
                        if lo < 0:
                            continue
                        out.append((n, s0, s1, o0, o1, max(hi0, hi1) + 64))
    return out


@pytest.fixture(scope="module")
def stock():
    """Stock's bytes of every case of every dtype."""
    nclx.uninstall()
    return {dt: [_run(dt, *c) for c in _cases(dt)] for dt in ALL}


@pytest.mark.parametrize("dt", ALL)
def test_direct_calls_of_the_copy_loop_equal_stock(dt, stock):
    cases = _cases(dt)
    assert len(cases) > 5000
    nclx.install()
    try:
        got = [_run(dt, *c) for c in cases]
    finally:
        nclx.uninstall()
    bad = [c for c, g, w in zip(cases, got, stock[dt]) if g != w]
    assert not bad, f"{len(bad)} of {len(cases)} differ, e.g. {bad[:5]}"


@pytest.mark.parametrize("dt", ["uint8", "int16", "float32", "float64"])
def test_direct_calls_split_small_equal_stock(dt, stock):
    """Every call long enough is a call of the op (pieces of 1 byte): the
    leaves' long path."""
    cases = _cases(dt)
    with split_small(2):
        nclx.install()
        got = [_run(dt, *c) for c in cases]
    bad = [c for c, g, w in zip(cases, got, stock[dt]) if g != w]
    assert not bad, f"{len(bad)} of {len(cases)} differ, e.g. {bad[:5]}"


@settings(max_examples=300, deadline=None)
@given(dt=st.sampled_from(ALL), n=st.integers(0, 200),
       k0=st.integers(-4, 4), k1=st.integers(-4, 4), b0=st.integers(0, 3), b1=st.integers(0, 3),
       shift=st.integers(-64, 64), seed=st.integers(0, 2**32 - 1))
def test_drawn_direct_calls_equal_stock(dt, n, k0, k1, b0, b1, shift, seed):
    isz = np.dtype(dt).itemsize
    s0, s1 = k0 * isz + b0 * (k0 != 0), k1 * isz + b1
    o0 = 4096
    o1 = o0 + shift
    lo = min(_extent(n, s0, o0, isz)[0], _extent(n, s1, o1, isz)[0])
    size = max(_extent(n, s0, o0, isz)[1], _extent(n, s1, o1, isz)[1]) + 64
    assert lo >= 0
    nclx.uninstall()
    want = _run(dt, n, s0, s1, o0, o1, size, seed)
    nclx.install()
    try:
        got = _run(dt, n, s0, s1, o0, o1, size, seed)
    finally:
        nclx.uninstall()
    assert got == want


def test_a_watched_copy_of_short_rows_is_a_call_a_row():
    """Under the ledger (somebody watches) a copy of short rows is still
    one call of the op a row, with stock's bytes; once it stops, the
    leaves copy them, with the same bytes."""
    m = np.arange(400.0).reshape(100, 4)
    want = m[:, ::-1].copy().tobytes()
    nclx.install()
    try:
        with nclx.ledger.recording() as led:
            assert m[:, ::-1].copy().tobytes() == want
        rows = [(r.op, r.elements, r.calls) for r in led.records()]
        assert ("copy", 400, 100) in rows
        assert m[:, ::-1].copy().tobytes() == want
    finally:
        nclx.uninstall()
