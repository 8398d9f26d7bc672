"""The fold record's MPI user function (nclx.dap.fold._combine) against a
reference written with NumPy arrays (the function before it read its header
through memoryviews): every byte of the combined record must be the same,
for any header, failure bits of up to 40 ranks, messages, and payloads of
ints and floats (overflow flags included).  No MPI needed: the function is
called as MPI calls it, on two byte buffers."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nclx.dap import fold
from nclx.dap.collective import describe_error


def _reference(inbuf, inoutbuf, ufunc, layout, spec):
    bits, msg, size = layout
    a = np.frombuffer(inbuf, np.uint8)
    b = np.frombuffer(inoutbuf, np.uint8)
    ia, ib = a[:fold._INTS].view(np.int32), b[:fold._INTS].view(np.int32)
    ib[2] |= ia[2]
    if ia[3] != ib[3] or ia[4]:
        ib[4] = 1
    if ia[5] != ib[5] or ia[6]:
        ib[6] = 1
    if ia[0] >= 0:
        ib[0] = ia[0]
        b[msg:size] = a[msg:size]
    b[bits:msg] |= a[bits:msg]
    if ib[0] >= 0 or ib[1] or ib[4]:
        return
    if ia[1]:
        ib[1] = ia[1]
        b[msg:size] = a[msg:size]
        return
    if spec is None:
        return
    shape, dtype = spec
    end = size + int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    pa = a[size:end].view(dtype).reshape(shape)
    pb = b[size:end].view(dtype).reshape(shape)
    flags = []
    try:
        if np.dtype(dtype).kind in "fc":
            with np.errstate(all="call", call=lambda kind, flag: flags.append(flag)):
                ufunc(pa, pb, out=pb)
        else:
            ufunc(pa, pb, out=pb)
    except Exception as exc:  # noqa: BLE001
        ib[1] = 1
        raw = describe_error(exc).encode("utf-8", "replace")[:size - msg]
        b[msg:size] = 0
        b[msg:msg + len(raw)] = np.frombuffer(raw, np.uint8)
    for f in flags:
        ib[2] |= f


def _record(rng, nranks, layout, room, draw):
    bits, msg, size = layout
    r = np.zeros(size + room, np.uint8)
    ints = r[:fold._INTS].view(np.int32)
    ints[0] = draw(st.sampled_from([-1, -1, 0, nranks - 1, nranks // 2]))
    ints[1] = draw(st.sampled_from([0, 0, 0, 1]))
    ints[2] = draw(st.integers(0, 15))
    ints[3] = draw(st.sampled_from([7, 7, 7, 8]))
    ints[4] = draw(st.sampled_from([0, 0, 0, 1]))
    ints[5] = draw(st.sampled_from([3, 3, 3, 4]))
    ints[6] = draw(st.sampled_from([0, 0, 0, 1]))
    r[bits:msg] = rng.integers(0, 256, msg - bits) * draw(st.sampled_from([0, 0, 1]))
    text = draw(st.sampled_from(["", "ValueError: boom", "é" * 300]))
    raw = text.encode()[:size - msg]
    r[msg:msg + len(raw)] = np.frombuffer(raw, np.uint8)
    return r


SPECS = [None, ((), np.float64), ((3,), np.float64), ((2, 2), np.int64), ((), np.int8),
         ((4,), np.complex128)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.sampled_from(SPECS), st.sampled_from([np.add, np.maximum]),
       st.data())
def test_combine_matches_the_reference(nranks, spec, ufunc, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    layout = fold._layout(nranks)
    room = fold.INLINE
    a = _record(rng, nranks, layout, room, data.draw)
    b = _record(rng, nranks, layout, room, data.draw)
    if spec is not None:
        shape, dt = spec
        n = int(np.prod(shape, dtype=np.int64))
        pick = data.draw(st.sampled_from(["small", "huge", "nan"]))
        if np.dtype(dt).kind in "fc":
            vals = {"small": rng.standard_normal(n), "huge": np.full(n, 1.5e308),
                    "nan": np.full(n, np.nan)}[pick]
        else:
            info = np.iinfo(dt)
            vals = rng.integers(info.min, info.max, n, endpoint=True)
        a[layout[2]:layout[2] + n * np.dtype(dt).itemsize].view(dt)[:] = vals
        b[layout[2]:layout[2] + n * np.dtype(dt).itemsize].view(dt)[:] = vals[::-1]
    want_b = b.copy()
    with np.errstate(all="ignore"):
        _reference(a.copy(), want_b, ufunc, layout, spec)
    got_b = b.copy()
    prev = getattr(fold._ctx, "current", None)
    fspec = None
    if spec is not None:
        dt = np.dtype(spec[1])
        fspec = (spec[0], dt, int(np.prod(spec[0], dtype=np.int64)), dt.kind in "fc")
    fold._ctx.current = (ufunc, layout, fspec)
    try:
        with np.errstate(all="ignore"):
            fold._combine(memoryview(a.copy()), memoryview(got_b), None)
    finally:
        fold._ctx.current = prev
    assert got_b.tobytes() == want_b.tobytes()


def test_combine_carries_a_ufunc_error_and_floating_point_flags():
    class Boom(np.ndarray):
        pass

    layout = fold._layout(3)
    size = layout[2]

    def rec(value):
        r = np.zeros(size + fold.INLINE, np.uint8)
        ints = r[:fold._INTS].view(np.int32)
        ints[0], ints[3], ints[5] = -1, 5, 6
        r[size:size + 8].view(np.float64)[0] = value
        return r

    a, b = rec(1e308), rec(1e308)
    fold._ctx.current = (np.add, layout, ((), np.dtype(np.float64), 1, True))
    try:
        fold._combine(memoryview(a), memoryview(b), None)
    finally:
        fold._ctx.current = None
    ints = b[:fold._INTS].view(np.int32)
    assert ints[2] & 2                             # overflow, recorded not raised
    assert b[size:size + 8].view(np.float64)[0] == np.inf

    def bad(x, y, out):
        raise ZeroDivisionError("no")

    a, b = rec(1.0), rec(2.0)
    fold._ctx.current = (bad, layout, ((), np.dtype(np.float64), 1, True))
    try:
        fold._combine(memoryview(a), memoryview(b), None)
    finally:
        fold._ctx.current = None
    ints = b[:fold._INTS].view(np.int32)
    assert ints[1] == 1
    text = b[layout[1]:size].tobytes().rstrip(b"\0").decode()
    assert text.startswith("ZeroDivisionError") and "no" in text


@pytest.mark.parametrize("nranks", [1, 8, 9, 64, 1000])
def test_failure_bits_of_every_rank_are_or_ed(nranks):
    layout = fold._layout(nranks)
    bits, msg, size = layout
    a = np.zeros(size + fold.INLINE, np.uint8)
    b = np.zeros(size + fold.INLINE, np.uint8)
    for r, who in ((a, range(0, nranks, 3)), (b, range(1, nranks, 5))):
        ints = r[:fold._INTS].view(np.int32)
        ints[0] = min(who, default=-1)
        for k in who:
            r[bits + k // 8] |= 1 << (k % 8)
    fold._ctx.current = (np.add, layout, None)
    try:
        fold._combine(memoryview(a), memoryview(b), None)
    finally:
        fold._ctx.current = None
    got = set(np.flatnonzero(np.unpackbits(b[bits:msg], bitorder="little")[:nranks]))
    assert got == set(range(0, nranks, 3)) | set(range(1, nranks, 5))
    assert b[:fold._INTS].view(np.int32)[0] == 0
