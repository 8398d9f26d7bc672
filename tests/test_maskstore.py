"""putmask's and place's vector bodies (nclx/_ncl/ncl_maskstore.h): masked
stores for mixed words of eight mask bytes (putmask: AVX-512 for 1-8 byte
elements and AVX2 for 4 and 8 byte ones; place: AVX-512 expand and store,
4 and 8 byte elements), picked at run time.  Every ISA this CPU has is run here
(capped with ``masking.maskstore_isa(limit)``) against NumPy's bytes, and
against a second thread writing the unselected elements (a masked store
must not write them)."""
import threading
import time

import numpy as np
import pytest

import nclx
import nclx.mask as M
from nclx._ncl import masking

ISAS = {0: "scalar", 1: "AVX2", 2: "AVX-512"}
DETECTED = masking.maskstore_isa()


@pytest.fixture(params=sorted(ISAS), ids=lambda k: ISAS[k])
def isa(request):
    k = request.param
    if k > DETECTED:
        pytest.skip(f"this CPU has no {ISAS[k]} (detected: {ISAS[DETECTED]})")
    old = masking.maskstore_isa(k)
    try:
        assert masking.maskstore_isa() == k
        yield k
    finally:
        masking.maskstore_isa(old)


def test_limit_is_checked_and_restored():
    for bad in (3, -1, True, 1.0, "1"):
        with pytest.raises(ValueError, match="limit must be 0, 1 or 2"):
            masking.maskstore_isa(bad)
    old = masking.maskstore_isa(0)
    try:
        assert masking.maskstore_isa() == 0
    finally:
        masking.maskstore_isa(old)
    assert masking.maskstore_isa() == DETECTED


DTYPES = ["i1", "?", "i2", "f2", "f4", "u4", "f8", "c8", "M8[s]", ">f8"]
NVS = [1, 2, 3, 7, 8, 9, 15, 16, 17, "half", "n-1", "n", "n+5"]


def _values(rng, dt, k):
    raw = rng.integers(0, 256, k * dt.itemsize, dtype=np.uint8)
    return raw.view(dt)                   # every bit pattern, NaN payloads too


FNS = [(M.putmask, np.putmask), (M.place, np.place)]


@pytest.mark.parametrize("fns", FNS, ids=["putmask", "place"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("nv", NVS)
def test_equals_numpy(isa, fns, dt, nv):
    dt = np.dtype(dt)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 1003):
        rng = np.random.default_rng([isa, n, dt.itemsize, NVS.index(nv)])
        k = {"half": max(n // 2, 1), "n-1": max(n - 1, 1), "n": max(n, 1),
             "n+5": n + 5}.get(nv, nv)
        v = _values(rng, dt, k)
        for density in (0.0, 0.3, 0.9, 1.0):
            a = _values(rng, dt, n)
            m = rng.random(n) < density
            x, y = a.copy(), a.copy()
            fns[0](x, m, v)
            fns[1](y, m, v)
            assert x.tobytes() == y.tobytes(), (n, density, k)


@pytest.mark.parametrize("fns", FNS, ids=["putmask", "place"])
@pytest.mark.parametrize("isz", [1, 2, 4, 8])
def test_misaligned_data_and_odd_mask_bytes(isa, fns, isz):
    # elements at an odd address; mask bytes other than 0 and 1 (a uint8
    # view as bool: NumPy's rule is nonzero)
    dt = np.dtype(f"u{isz}")
    n = 4099
    rng = np.random.default_rng(isz)
    buf = np.zeros(n * isz + 1, np.uint8)
    a = buf[1:].view(dt)
    a[...] = rng.integers(0, 200, n)
    raw = rng.choice(np.array([0, 1, 2, 128, 255], np.uint8), n)
    m = raw.view(bool)
    for v in (np.array([7], dt), rng.integers(0, 99, 13).astype(dt),
              rng.integers(0, 99, n).astype(dt)):
        x, y = a.copy(), a.copy()
        fns[0](a, m, v)
        fns[1](y, m.astype(bool), v)
        assert a.tobytes() == y.tobytes()
        a[...] = x


@pytest.mark.parametrize("fns", FNS, ids=["putmask", "place"])
@pytest.mark.parametrize("nv", [1, 11, 1 << 16])
def test_pieces_on_two_threads(isa, fns, nv):
    # each piece starts its value index where the pieces before it left it
    old_t = nclx.get_num_threads()
    old_s = masking.set_split(1, 64)
    nclx.set_num_threads(2)
    try:
        rng = np.random.default_rng(nv)
        for n in (64 * 5 + 3, 10_007, 1 << 16):
            a = rng.standard_normal(n)
            m = rng.random(n) < 0.5
            v = rng.standard_normal(min(nv, n) if nv > 1 else 1)
            x, y = a.copy(), a.copy()
            fns[0](x, m, v)
            fns[1](y, m, v)
            assert x.tobytes() == y.tobytes()
    finally:
        masking.set_split(*old_s)
        nclx.set_num_threads(old_t)


@pytest.mark.parametrize("fn", [M.putmask, M.place], ids=["putmask", "place"])
@pytest.mark.parametrize("dt", ["f8", "f4", "i2", "i1"])
def test_unselected_elements_are_never_written(isa, fn, dt):
    # another Python thread adds 1 to the odd elements while putmask stores
    # into the even ones (the GIL is released for large calls): every odd
    # element must end equal to the other thread's passes
    N = 1 << 20
    a = np.zeros(N, dt)
    mine = np.arange(N) % 2 == 0
    theirs = ~mine
    done = threading.Event()
    passes = [0]
    ready = threading.Barrier(2, timeout=30)
    old = nclx.get_num_threads()
    nclx.set_num_threads(1)

    def other():
        ready.wait()
        t0 = time.monotonic()
        while not done.is_set() and time.monotonic() - t0 < 30 and passes[0] < 100:
            np.add(a, 1, out=a, where=theirs)
            passes[0] += 1

    t = threading.Thread(target=other)
    t.start()
    try:
        ready.wait()
        t0 = time.monotonic()
        calls = 0
        while time.monotonic() - t0 < 15:
            fn(a, mine, np.array([5] * 9, dt))
            calls += 1
            if calls >= 100 and passes[0] >= 3:
                break
    finally:
        done.set()
        t.join(60)
        nclx.set_num_threads(old)
    assert not t.is_alive()
    assert passes[0] >= 1
    assert (a[mine] == 5).all()
    lost = int(np.count_nonzero(a[theirs] != passes[0]))
    assert lost == 0, f"{lost} elements lost the other thread's writes"
