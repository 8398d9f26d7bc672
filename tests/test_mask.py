"""nclx.mask against NumPy: extract, compress, place, putmask and count give
NumPy's results bit for bit (values, dtype, shape, type) and raise NumPy's
exceptions (type and message), for every fixed-width dtype, every mask
density (none, all, random, runs), layouts NumPy copies, the dtypes nclx
hands to NumPy, and sizes around the pieces a threaded call is cut into.

Hooks, the ledger, threads and fork: tests/test_mask_hooks.py."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import nclx
import nclx.mask as M
from nclx._ncl import maskfuncs, masking, maskselect

# "q"/"Q" (long long) are NumPy dtypes of their own sharing the 64-bit slots
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64", "q", "Q"]
DENSITIES = ["none", "all", "random", "runs", "sparse"]


@pytest.fixture(autouse=True)
def _split_small():
    """Every call of more than 64 elements split into pieces of 64 on 3
    threads (the default thresholds keep small calls whole)."""
    old_split = masking.set_split(1, 64)
    old_threads = nclx.get_num_threads()
    nclx.set_num_threads(3)
    nclx.hooks.reset()
    yield
    masking.set_split(*old_split)
    nclx.set_num_threads(old_threads)
    nclx.hooks.reset()


def values(dt, n, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind == "f":
        v = rng.standard_normal(n).astype(dt)
        v[::7] = np.nan
        v[1::11] = -0.0
        return v
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)


def mask_of(density, n, seed=1):
    rng = np.random.default_rng(seed)
    if density == "none":
        return np.zeros(n, bool)
    if density == "all":
        return np.ones(n, bool)
    if density == "random":
        return rng.random(n) < 0.5
    if density == "sparse":
        return rng.random(n) < 0.01
    m = np.zeros(n, bool)          # runs: long True and False stretches
    edges = np.sort(rng.integers(0, n + 1, 8))
    for lo, hi in zip(edges[::2], edges[1::2]):
        m[lo:hi] = True
    return m


def outcome(fn):
    try:
        return "value", fn()
    except Exception as exc:      # noqa: BLE001 - the exception is the result compared
        return "error", type(exc), str(exc)


def assert_same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        assert got.tobytes() == want.tobytes(), (got, want)
        assert got.flags.c_contiguous == want.flags.c_contiguous
    else:
        assert got == want, (got, want)


def check(fn, npfn, *args, writes=None, **kw):
    """fn(*args) and npfn(*args) return or raise the same; with writes=i,
    operand i (copied for each) ends up the same too."""
    a1, a2 = list(args), list(args)
    if writes is not None:
        a1[writes] = args[writes].copy()
        a2[writes] = args[writes].copy()
    got, want = outcome(lambda: fn(*a1, **kw)), outcome(lambda: npfn(*a2, **kw))
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1:] == want[1:], (got, want)
    else:
        assert_same(got[1], want[1])
    if writes is not None:
        assert_same(a1[writes], a2[writes])


# ------------------------------------------------------------ every dtype, density, size

SIZES = [0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 64 * 5 + 3, 1000]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("density", DENSITIES)
def test_every_dtype_density_and_size_around_pieces(dt, density):
    for n in SIZES:
        a = values(dt, n)
        m = mask_of(density, n)
        check(M.extract, np.extract, m, a)
        check(M.compress, np.compress, m, a)
        for nv in (0, 1, 3, n // 2 + 1, n + 5):
            v = values(dt, nv, seed=nv)
            check(M.place, np.place, a, m, v, writes=0)
            check(M.putmask, np.putmask, a, m, v, writes=0)
        check(M.count, np.count_nonzero, m)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_thread_counts_give_the_same_bytes(threads):
    nclx.set_num_threads(threads)
    for n in (1000, 64 * 37 + 5):
        for density in DENSITIES:
            a = values("float64", n)
            m = mask_of(density, n, seed=n)
            check(M.extract, np.extract, m, a)
            check(M.compress, np.compress, m, a.reshape(-1, 1), axis=0)
            check(M.place, np.place, a, m, a[:13].copy(), writes=0)
            check(M.putmask, np.putmask, a, m, a[:13].copy(), writes=0)
            check(M.count, np.count_nonzero, m)


def test_default_thresholds_split_a_large_call():
    masking.set_split(65536, 16384)
    nclx.set_num_threads(2)
    n = 300_001
    a = values("int32", n)
    for density in DENSITIES:
        m = mask_of(density, n, seed=3)
        check(M.extract, np.extract, m, a)
        check(M.place, np.place, a, m, a[:999].copy(), writes=0)
        check(M.putmask, np.putmask, a, m, a[:999].copy(), writes=0)
        check(M.count, np.count_nonzero, m)
    assert masking.piece_layout(n, 2) == (37504, 8)


def test_piece_layout():
    assert masking.piece_layout(0, 4) == (64, 1)
    assert masking.piece_layout(1000, 1) == (1024, 1)
    assert masking.piece_layout(1000, 3) == (128, 8)      # 12 asked, rounded to 64s
    assert masking.piece_layout(130, 3) == (128, 2)       # no piece under 64
    piece, count = masking.piece_layout(10**7, 7)
    assert count <= 28 and piece % 64 == 0 and piece * count >= 10**7
    with pytest.raises(ValueError, match="min_piece"):
        masking.set_split(1, 8)


# ------------------------------------------------------------ extract and compress

@pytest.mark.parametrize("dt", DTYPES)
def test_selection_layouts_numpy_copies(dt):
    a = values(dt, 6 * 35).reshape(6, 35)
    m = mask_of("random", 6 * 35).reshape(6, 35)
    for x, c in [(a, m), (a.T, m.T), (a[::-1, ::2], m[::-1, ::2]), (np.asfortranarray(a), m),
                 (a[:, 3], m[:, 3]), (a[2:4], m[2:4].T.copy().T)]:
        check(M.extract, np.extract, c, x)
        check(M.compress, np.compress, c.ravel(), x)
    for axis in (0, 1, -1, -2, None):
        for c in (m[:, 0], m[0], m[0, :3], np.r_[m[0], False, False], m[::-1, 1]):
            for x in (a, a.T, a[::2, ::-1], np.asfortranarray(a), a.reshape(2, 3, 35)):
                check(M.compress, np.compress, c, x, axis=axis)


def test_compress_along_axes_of_3d_arrays():
    a = values("uint16", 4 * 70 * 3).reshape(4, 70, 3)
    b = values("float64", 3 * 5 * 80).reshape(3, 5, 80)
    for x in (a, b, a.transpose(2, 0, 1), b[:, ::-1]):
        for axis in range(-3, 3):
            n = x.shape[axis]
            for density in DENSITIES:
                check(M.compress, np.compress, mask_of(density, n, seed=n), x, axis=axis)


def test_condition_lengths_and_kinds():
    a = np.arange(10.0)
    ints = np.array([0, 2, 0, -1, 5, 0, 0, 1, 0, 3])
    for cond in ([True, False, True], [1, 0, 2], np.r_[np.ones(10, bool), False, False],
                 np.r_[np.ones(10, bool), False, True], ints, ints.astype(np.float32),
                 np.array([np.nan, -0.0, 0.0, 1e-300, 1j, 0j, 2, 0, 0, 1]), [], True, 0,
                 np.array(True), np.ones((2, 5), bool), np.array(["a", "", "b"]), None,
                 np.array([1, None, 0], dtype=object), np.ones(10, bool)[::-1],
                 np.zeros(20, np.uint8).view(bool)):
        check(M.extract, np.extract, cond, a)
        check(M.compress, np.compress, cond, a)
        check(M.compress, np.compress, cond, a.reshape(2, 5), axis=1)
    # bytes other than 0 and 1 in a bool view count as selected, as in NumPy
    odd = np.array([0, 2, 1, 255, 0, 7] * 30, np.uint8).view(bool)
    check(M.extract, np.extract, odd, np.arange(180))
    check(M.count, np.count_nonzero, odd)
    check(M.place, np.place, np.arange(180), odd, [5, 6], writes=0)
    check(M.putmask, np.putmask, np.arange(180), odd, [5, 6], writes=0)


def test_extract_inputs_numpy_accepts():
    for cond, arr in [([True, False, True], [1, 2, 3]), (True, 5), ([[1, 0], [0, 1]], [[1, 2], [3, 4]]),
                      (np.array([1, 0, 1], bool), (7, 8, 9)), ([True], np.float32(2)),
                      (np.ones(3, bool), np.ones(4)), ([1], []), ([], np.ones(3)),
                      ([0, 0, 1], np.ones(2)), ([True], np.ones((0, 3))), ([[1, 2], [3]], [1, 2])]:
        check(M.extract, np.extract, cond, arr)


def test_compress_arguments_and_out():
    a = np.arange(12.0).reshape(3, 4)
    c = np.array([True, False, True])
    for axis in (0, 1, -3, 2, "x", 1.0, np.int64(0), [0]):
        check(M.compress, np.compress, c, a, axis=axis)
    for out in (np.empty(2), np.empty(3), np.empty((1, 2)), np.empty(2, np.int64), np.empty(2, np.float32),
                np.empty(4)[::2], np.empty(2, ">f8"), [0, 0]):
        check(lambda: M.compress(c, a.ravel()[:3], out=out), lambda: np.compress(c, a.ravel()[:3], out=out))
    ro = np.empty(2)
    ro.flags.writeable = False
    check(lambda: M.compress(c, a.ravel()[:3], out=ro), lambda: np.compress(c, a.ravel()[:3], out=ro))
    o1, o2 = np.full((2, 4), -1.0), np.full((2, 4), -1.0)
    r1, r2 = M.compress(c, a, axis=0, out=o1), np.compress(c, a, axis=0, out=o2)
    assert r1 is o1 and r2 is o2
    assert_same(o1, o2)
    # an out that is the input's own memory: NumPy reads the input first
    for axis in (None, 0):
        x1, x2 = a.copy(), a.copy()
        sel = c if axis == 0 else np.r_[c, c]
        o1 = x1.ravel()[2:6] if axis is None else x1[1:]
        o2 = x2.ravel()[2:6] if axis is None else x2[1:]
        M.compress(sel, x1, axis=axis, out=o1)
        np.compress(sel, x2, axis=axis, out=o2)
        assert_same(x1, x2)
    for cond in (np.ones((3, 1), bool), True, [[True]], None):
        check(M.compress, np.compress, cond, a)
    check(M.compress, np.compress, [True, True], [[1, 2], [3, 4]], axis=0)
    check(M.compress, np.compress, [0, 1], (5, 6))
    check(M.compress, np.compress, [1], 5)
    check(M.compress, np.compress, [True], np.array(3.0), axis=0)
    check(M.compress, np.compress, [True, True], np.ones((0, 3)), axis=1)
    check(M.compress, np.compress, [True, True, True], np.ones((0, 3)), axis=0)


def test_dtypes_nclx_hands_to_numpy():
    n = 40
    m = mask_of("random", n)
    for a in (np.arange(n, dtype=np.float16), np.arange(n) + 1j, np.arange(n).astype(object),
              np.arange(n).astype("U3"), np.arange(n).astype("datetime64[s]"),
              np.arange(n, dtype=np.longdouble), np.arange(n, dtype=">i4"), np.arange(n, dtype="<u2"),
              np.zeros(n, [("x", "i4"), ("y", "f8")]),
              np.frombuffer(np.arange(n + 1, dtype=np.int64).tobytes()[4:-4], np.int64)):
        check(M.extract, np.extract, m, a)
        check(M.compress, np.compress, m, a)
        v = a[:3].copy()
        check(M.place, np.place, a, m, v, writes=0)
        check(M.putmask, np.putmask, a, m, v, writes=0)
    check(M.count, np.count_nonzero, np.arange(n) % 3)
    check(M.count, np.count_nonzero, np.arange(n) % 3.0)
    check(M.count, np.count_nonzero, m[::3])
    check(M.count, np.count_nonzero, m.reshape(8, 5).T)
    check(M.count, np.count_nonzero, m.reshape(8, 5)[:, ::2])


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_subclasses_go_through_numpy():
    a = np.ma.masked_array(np.arange(10.0), mask=np.arange(10) % 4 == 0)
    m = np.arange(10) % 3 == 0
    got, want = M.extract(m, a), np.extract(m, a)
    assert type(got) is type(want) and np.array_equal(got.filled(-1), want.filled(-1))
    got, want = M.compress(m, a), np.compress(m, a)
    assert type(got) is type(want) and np.array_equal(got.mask, want.mask)
    mat = np.matrix(np.arange(6).reshape(2, 3))
    check(M.compress, np.compress, [True, False, True], mat, axis=1)
    x1, x2 = a.copy(), a.copy()
    M.putmask(x1, m, -5.0)
    np.putmask(x2, m, -5.0)
    assert np.array_equal(x1.data, x2.data) and np.array_equal(x1.mask, x2.mask)


# ------------------------------------------------------------ place and putmask

def test_place_and_putmask_values_and_errors():
    a = np.arange(10)
    m = a % 3 == 0
    ro = np.arange(10)
    ro.flags.writeable = False
    for fn, npfn in ((M.place, np.place), (M.putmask, np.putmask)):
        for vals in ([7, 8], [], 3, [2.7], ["3"], np.array([2.7]), np.array([1, 2], np.int8), [[1, 2], [3, 4]],
                     np.array([300]), 300, -1, np.array([1 + 2j]), (5, 6), np.float64(2.5), np.int64(4),
                     np.array([], np.int64), None, "x", [1, "a"]):
            for arr in (a, a.astype(np.int8), a.astype(np.uint8), a.astype(np.float32), a.astype(bool)):
                check(fn, npfn, arr, m, vals, writes=0)
        for mask in (m[:5], np.r_[m, True], [0.5, 0, 0, 0, 2, 0, 0, 0, 0, 0], m.reshape(2, 5),
                     m.astype(np.int64), list(m), m[::-1], np.array(["a", ""] * 5), [[1, 2]], None):
            check(fn, npfn, a, mask, [9, 8], writes=0)
        check(fn, npfn, [1, 2, 3], [True, False, True], [9])
        check(fn, npfn, (1, 2, 3), [True, False, True], [9])
        check(fn, npfn, ro, m, [1])
        check(fn, npfn, a[::2], m[:5], [1, 2], writes=0)
        check(fn, npfn, np.arange(12).reshape(3, 4).T, np.arange(12) % 2 == 0, [1, 2, 3], writes=0)
        check(fn, npfn, np.array(5.0), True, [1.0], writes=0)
        check(fn, npfn, np.zeros(0), [], [], writes=0)
        check(fn, npfn, np.zeros(0), [], [1.0], writes=0)
    check(M.place, np.place, a, m, [], writes=0)
    check(M.place, np.place, a, np.zeros(10, bool), [], writes=0)


def test_place_and_putmask_values_that_overlap_the_array():
    base = np.arange(40, dtype=np.int64)
    m = base % 3 != 1
    for fn, npfn in ((M.place, np.place), (M.putmask, np.putmask)):
        for vsl in (slice(0, 40), slice(5, 25), slice(1, None)):
            x1, x2 = base.copy(), base.copy()
            fn(x1, m, x1[vsl])
            npfn(x2, m, x2[vsl])
            assert_same(x1, x2)
        b1, b2 = (base % 2 == 0), (base % 2 == 0)
        fn(b1, b1, [False, True])        # the mask is the array itself
        npfn(b2, b2, [False, True])
        assert_same(b1, b2)
        b1, b2 = (base % 3 == 0), (base % 3 == 0)
        fn(b1[1:], b1[:-1], [True, False])
        npfn(b2[1:], b2[:-1], [True, False])
        assert_same(b1, b2)


def test_count():
    m = mask_of("random", 1000)
    for x in (m, m.reshape(10, 100), np.asfortranarray(m.reshape(10, 100)), m[:0], np.array(True),
              [True, False, True], [1, 0, 2], 3, 0, True, np.zeros((3, 0), bool), np.ones(129, bool)):
        check(M.count, np.count_nonzero, x)
    assert type(M.count(m)) is type(np.count_nonzero(m))


# ------------------------------------------------------------ hypothesis

arrays = hnp.arrays(dtype=st.sampled_from(DTYPES), shape=hnp.array_shapes(min_dims=1, max_dims=3,
                                                                          min_side=0, max_side=70))


@given(a=arrays, data=st.data())
def test_hypothesis_selection(a, data):
    n = a.size
    m = data.draw(hnp.arrays(bool, a.shape))
    check(M.extract, np.extract, m, a)
    check(M.compress, np.compress, m.ravel(), a)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    c = data.draw(hnp.arrays(bool, data.draw(st.integers(0, a.shape[axis] + 2))))
    check(M.compress, np.compress, c, a, axis=axis)
    check(M.count, np.count_nonzero, m)
    v = data.draw(hnp.arrays(a.dtype, data.draw(st.integers(0, n + 3))))
    check(M.place, np.place, a, m, v, writes=0)
    check(M.putmask, np.putmask, a, m, v, writes=0)


@given(data=st.data(), threads=st.sampled_from([1, 2, 3, 7]))
def test_hypothesis_runs_and_threads(data, threads):
    nclx.set_num_threads(threads)
    n = data.draw(st.integers(0, 2000))
    runs = data.draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, 300)), max_size=6))
    m = np.zeros(n, bool)
    for lo, ln in runs:
        m[lo:lo + ln] = True
    a = values(data.draw(st.sampled_from(DTYPES)), n)
    check(M.extract, np.extract, m, a)
    check(M.place, np.place, a, m, a[:data.draw(st.integers(1, 50))].copy(), writes=0)
    check(M.putmask, np.putmask, a, m, a[:data.draw(st.integers(1, 50))].copy(), writes=0)
    check(M.count, np.count_nonzero, m)


def test_small_calls_go_to_numpy_with_the_same_results():
    old = (maskselect.set_small(1000), maskfuncs.set_small("place", 1000),
           maskfuncs.set_small("putmask", 1000), maskfuncs.set_small("count", 1000))
    try:
        a = values("int16", 500)
        m = mask_of("random", 500)
        check(M.extract, np.extract, m, a)
        check(M.compress, np.compress, m, a)
        check(M.place, np.place, a, m, [1, 2], writes=0)
        check(M.putmask, np.putmask, a, m, [1, 2], writes=0)
        check(M.count, np.count_nonzero, m)
    finally:
        maskselect.set_small(old[0])
        for op, n in zip(("place", "putmask", "count"), old[1:]):
            maskfuncs.set_small(op, n)
    with pytest.raises(KeyError):
        maskfuncs.set_small("extract", 5)


def test_numpy_twins_take_numpy_s_arguments():
    a = values("int64", 50)
    m = mask_of("random", 50)
    assert set(M.NUMPY_TWINS) == {np.extract, np.compress, np.place, np.putmask}
    for func, twin in M.NUMPY_TWINS.items():
        if func in (np.place, np.putmask):
            check(twin, func, a, m, [4, 5], writes=0)
        else:
            check(twin, func, m, a)
