"""nclx.create against NumPy's constructors: dtype, shape, strides, type and
bits of every result, the same exceptions with the same messages, and what
nclx adds -- ``align`` honoured, ``zeros`` really zero, memory that
tracemalloc sees, ``touch``."""
import copy
import pickle
import sys
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nclx.create as nc
from nclx._ncl import creating

FIXED = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64"]
#: dtypes nclx leaves to NumPy's own code (no Create call)
OTHER = ["complex128", "float16", "longdouble", "U5", "S3", "M8[s]", "m8[ms]", "O", ">f8", ">i4",
         "i4,f8", "(2,)f8", "V4"]
SHAPES = [0, 1, 7, (), (0,), (3, 4), (0, 5), [2, 3], (2, 3, 4), np.int64(5), (np.int32(2), 3)]
MAKERS = ["empty", "zeros", "ones", "full"]
LIKERS = ["empty_like", "zeros_like", "ones_like", "full_like"]


def _bits(a):
    if a.dtype.hasobject:
        return [repr(x) for x in a.ravel(order="K")]
    if not a.size:
        return b""
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
    if a.dtype == np.longdouble and np.finfo(np.longdouble).nmant == 63 and a.itemsize > 10:
        # x87 80-bit values: NumPy leaves the padding bytes as memory held
        # them (np.ones on NumPy 2.0 differed there call to call)
        raw = raw[:, :10]
    return raw.tobytes()


def assert_same(want, got, values=True):
    assert type(got) is type(want)
    if want is None:                    # both raised (both() compared the errors)
        return
    assert (got.dtype, got.shape, got.strides) == (want.dtype, want.shape, want.strides)
    assert got.flags.writeable
    if values:
        assert _bits(got) == _bits(want)


def both(name, *args, **kw):
    """(NumPy's result, nclx's) of one call, or their exceptions compared."""
    want_exc = got_exc = None
    with warnings.catch_warnings(record=True) as w_np:
        warnings.simplefilter("always")
        try:
            want = getattr(np, name)(*args, **kw)
        except Exception as e:
            want_exc = e
    with warnings.catch_warnings(record=True) as w_nc:
        warnings.simplefilter("always")
        try:
            got = getattr(nc, name)(*args, **kw)
        except Exception as e:
            got_exc = e
    assert [(x.category, str(x.message)) for x in w_nc] == \
        [(x.category, str(x.message)) for x in w_np]
    if want_exc is not None or got_exc is not None:
        assert type(got_exc) is type(want_exc), (want_exc, got_exc)
        assert str(got_exc) == str(want_exc)
        return None, None
    return want, got


def _args(name, shape_or_proto, value=3):
    return (shape_or_proto, value) if name.startswith("full") else (shape_or_proto,)


@pytest.mark.parametrize("dtype", FIXED + OTHER + [None, float, int, bool, "f4", np.int16])
@pytest.mark.parametrize("name", MAKERS)
def test_makers_equal_numpy(name, dtype):
    for shape in SHAPES:
        for order in ("C", "F"):
            want, got = both(name, *_args(name, shape), dtype, order)
            assert_same(want, got, values=name != "empty")


def _protos():
    base = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    yield base
    yield np.asfortranarray(base)
    yield base[:, ::2, ::-1]
    yield base.transpose(2, 0, 1)
    yield base[::-1, :, 1:3].transpose(1, 2, 0)
    yield np.broadcast_to(base[:1], (3, 4, 5))
    yield base[..., 0]
    yield np.float32(2.5) * np.ones(())
    yield np.zeros((0, 3), np.int16)
    yield np.arange(10, dtype=np.uint8)[::3]
    yield np.ones((3, 4), dtype=">i8")
    yield np.matrix([[1, 2], [3, 4]])
    yield np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    yield np.array(["ab", "c"])
    yield [1, 2, 3]
    yield 4.5


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("name", LIKERS)
def test_like_functions_equal_numpy(name):
    for proto in _protos():
        for kw in ({}, {"order": "C"}, {"order": "F"}, {"order": "A"}, {"subok": False},
                   {"dtype": np.int32}, {"dtype": "U2"}, {"shape": (2, 3)}, {"shape": 6},
                   {"shape": (5, 4, 3)}, {"dtype": np.float32, "order": "F", "shape": (2, 2)}):
            want, got = both(name, *_args(name, proto, 7), **kw)
            assert_same(want, got, values=name != "empty_like")
            if isinstance(want, np.ma.MaskedArray):
                assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))


class Tracked(np.ndarray):
    """A subclass that records the ``obj`` its __array_finalize__ sees."""
    seen = []

    def __array_finalize__(self, obj):
        Tracked.seen.append(type(obj).__name__ if obj is not None else None)


@pytest.mark.parametrize("name", LIKERS)
@pytest.mark.parametrize("kw", [{}, {"subok": False}, {"shape": (4, 2)}, {"order": "F"},
                                {"shape": (2, 1, 3)}, {"align": 64}, {"align": 8},
                                {"align": 64, "shape": (2, 1, 3)}, {"align": 32, "order": "C"},
                                {"align": 64, "dtype": "f8,i4"}])
def test_like_subclass_finalize_sees_the_prototype(name, kw):
    proto = np.arange(24.0).reshape(2, 3, 4)[:, ::-1, ::2].view(Tracked)
    Tracked.seen.clear()
    want = getattr(np, name)(*_args(name, proto), **{k: v for k, v in kw.items() if k != "align"})
    seen_np = list(Tracked.seen)
    Tracked.seen.clear()
    got = getattr(nc, name)(*_args(name, proto), **kw)
    assert Tracked.seen == seen_np
    assert_same(want, got, values=name != "empty_like")


@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=4),
       perm_seed=st.integers(0, 1000), steps=st.lists(st.sampled_from([1, -1, 2, -2]), min_size=4,
                                                      max_size=4),
       order=st.sampled_from(["K", "A", "C", "F"]), dtype=st.sampled_from(FIXED),
       name=st.sampled_from(LIKERS), new_shape=st.sampled_from([None, (3, 2), 5]))
def test_like_layouts_hypothesis(shape, perm_seed, steps, order, dtype, name, new_shape):
    doubled = [2 * s for s in shape]
    a = (np.arange(int(np.prod(doubled, dtype=np.int64))) % 100).astype(dtype).reshape(doubled)
    a = a[tuple(slice(None, None, s) for s in steps[:a.ndim])]
    a = a.transpose(np.random.default_rng(perm_seed).permutation(a.ndim))
    want, got = both(name, *_args(name, a, 1), order=order, shape=new_shape)
    assert_same(want, got, values=name != "empty_like")


@given(dtype=st.sampled_from(FIXED + ["complex64", "float16"]),
       value=st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.booleans(),
                       st.complex_numbers(allow_nan=False), st.sampled_from(["1.5", "7", b"1"])),
       n=st.integers(0, 9))
def test_full_values_hypothesis(dtype, value, n):
    with np.errstate(all="warn"):
        assert_same(*both("full", n, value, dtype))
        assert_same(*both("full_like", np.zeros(n, dtype), value))


def test_full_values_explicit():
    cases = [(300, "int8"), (-1, "uint8"), (2**64, "uint64"), (2**63, None), (2**64, None),
             (np.nan, "int32"), (np.inf, "int64"), (1e300, "float32"), (-0.0, "float32"),
             (3.4028235e38, "float32"), (np.float64(np.nan), "float16"), (True, "float32"),
             (np.array(1.5), "int16"), (np.uint64(2**63), "int64"), ("abc", "U2"),
             ([1, 2, 3], None), ([[1], [2]], "float64"), ([1, 2], "int8"), (1 + 2j, "float64"),
             (None, "float64"), (object(), "int8"), ([[1, 2], [1]], None), (-5, "bool"),
             (np.datetime64("2020-01-01"), "M8[s]"), (7, "O"), (np.float32(0.1), None)]
    for value, dtype in cases:
        for shape in (0, 3, (2, 3)):
            with np.errstate(all="warn"):
                assert_same(*both("full", shape, value, dtype))
    with np.errstate(all="raise"):
        for value, dtype in [(np.nan, np.int64), (1e-50, np.float32), (1e300, np.float32),
                             (1e-39, np.float32), (-3.5e38, np.float32), (2**70, np.float64),
                             (0.1, np.float32), (-0.0, np.float32)]:
            assert_same(*both("full", 4, value, dtype))
            assert_same(*both("full_like", np.zeros(4, dtype), value))


BAD_SHAPES = [-1, 2.0, "3", None, (2, -1), 2**70, (2**40, 2**40), (2**31,) * 3, [2, None],
              np.array([[2]]), True, (1,) * 65, object()]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("name", MAKERS)
def test_bad_shapes_dtypes_orders_raise_numpys_errors(name):
    for shape in BAD_SHAPES:
        both(name, *_args(name, shape))
    for dtype in ["xyz", 3, "f9", [("a",)]]:
        both(name, *_args(name, 3), dtype)
    for order in ["A", "K", "x", 1, "", "CF", None, b"C", "c", "f"]:
        both(name, *_args(name, (2, 3)), order=order)
    for device in ["cpu", "gpu", 3]:
        both(name, *_args(name, 2), device=device)
    for like in [[1], 3, np.ones(2), np.matrix([[1]])]:
        both(name, *_args(name, 2), like=like)


def test_keywords_numpy_accepts():
    a = np.ones(3)
    for name, kw in [("empty", {"shape": 3, "dtype": int}), ("full", {"shape": 2, "fill_value": 1}),
                     ("empty_like", {"prototype": a}), ("ones_like", {"a": a, "dtype": int}),
                     ("full_like", {"a": a, "fill_value": 2, "order": "F", "subok": False})]:
        assert_same(*both(name, **kw), values=not name.startswith("empty"))
    with pytest.raises(TypeError):               # Python's wording, not NumPy's
        nc.full(3)
    with pytest.raises(TypeError, match="bogus"):
        nc.zeros(3, bogus=1)


@pytest.mark.parametrize("name", LIKERS)
def test_like_bad_arguments_raise_numpys_errors(name):
    a = np.ones((2, 3))
    for kw in [{"order": "x"}, {"order": 3}, {"order": None}, {"order": "k"}, {"dtype": "xyz"},
               {"shape": -1}, {"shape": (2, -3)}, {"shape": 2.5}, {"subok": "yes"},
               {"subok": 0}, {"device": "gpu"}, {"device": "cpu"}, {"shape": [2, 2]}]:
        both(name, *_args(name, a), **kw)


# ------------------------------------------------------------------ align

ALIGNS = [1, 8, 16, 32, 64, 4096, 1 << 21]


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("name", MAKERS + LIKERS)
def test_align_is_honoured_and_results_unchanged(name, align):
    for n in (0, 1, 1000, 100_003):
        for dtype in ("int8", "float64", "complex128", "U3", ">i2", "(2,)i4", "i2,f8"):
            dt = np.dtype(dtype)
            if align < dt.alignment:
                continue
            src = np.zeros(n, dt)[::-1] if name.endswith("like") else n
            args = _args(name, src, 1)
            want = getattr(np, name)(*args, dtype=dt)
            got = getattr(nc, name)(*args, dtype=dt, align=align)
            assert got.ctypes.data % align == 0
            assert_same(want, got, values=not name.startswith("empty"))
            got[...] = want                     # writeable over its whole extent
            for how in (lambda a: pickle.loads(pickle.dumps(a)), copy.copy, copy.deepcopy,
                        np.copy):
                assert_same(how(want), how(got))


def test_align_bad_values_name_the_argument():
    for bad, exc in [(3, ValueError), (0, ValueError), (-8, ValueError), (1 << 31, ValueError),
                     (4, ValueError), (2.0, TypeError), (True, TypeError), ("64", TypeError)]:
        with pytest.raises(exc, match="align"):
            nc.zeros(3, np.float64, align=bad)
        with pytest.raises(exc, match="align"):
            nc.full_like(np.ones(3), 2, align=bad)
    with pytest.raises(ValueError, match="align.*Python objects"):
        nc.empty(3, object, align=64)
    assert nc.zeros(3, np.float64, align=np.int64(64)).ctypes.data % 64 == 0
    assert nc.zeros(3, np.float64, align=8).flags.owndata   # malloc's 16 already holds


# ---------------------------------------------- zeros are zero, memory traced

@pytest.mark.parametrize("nbytes", [8, 1000, 4096 * 3 + 8, 1 << 20, 40 << 20])
@pytest.mark.parametrize("how", [{}, {"touch": True}, {"align": 64}, {"dtype": np.int8},
                                 {"order": "F"}])
def test_zeros_are_zero_in_memory_freed_dirty(nbytes, how):
    for _ in range(3):
        dirty = np.full(nbytes // 8 + 8, -1, np.int64)
        del dirty                               # its block goes back to the heap, dirty
        dt = np.dtype(how.get("dtype", np.float64))
        z = nc.zeros(nbytes // dt.itemsize, **how)
        assert not np.frombuffer(z.tobytes(order="A"), np.uint8).any()
        zl = nc.zeros_like(np.empty((nbytes // 64, 8))[:, ::-1], **how)
        assert not np.frombuffer(zl.tobytes(order="A"), np.uint8).any()


@pytest.mark.parametrize("name", MAKERS + LIKERS)
@pytest.mark.parametrize("kw", [{}, {"align": 4096}, {"touch": True}])
def test_tracemalloc_sees_the_memory(name, kw):
    n = 250_000
    src = np.ones(n)[::-1] if name.endswith("like") else n
    domain = np.lib.tracemalloc_domain
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, domain)])
        a = getattr(nc, name)(*_args(name, src), **kw)
        after = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, domain)])
    finally:
        tracemalloc.stop()
    grown = sum(s.size for s in after.statistics("filename")) - \
        sum(s.size for s in before.statistics("filename"))
    assert grown >= a.nbytes


@pytest.mark.parametrize("name", ["empty", "zeros", "full", "empty_like", "zeros_like"])
def test_touch_changes_no_result(name):
    for n in (1, 4097, 3 << 20):
        src = np.ones(n)[::-1] if name.endswith("like") else n
        want = getattr(np, name)(*_args(name, src))
        got = getattr(nc, name)(*_args(name, src), touch=True)
        assert_same(want, got, values=not name.startswith("empty"))


def test_touch_and_align_with_a_foreign_like_say_so():
    class Foreign:
        def __array_function__(self, func, types, args, kwargs):
            return ("foreign", func.__name__)
    assert nc.zeros(3, like=Foreign()) == ("foreign", "zeros")
    assert nc.full_like(Foreign(), 1) == ("foreign", "full_like")
    with pytest.raises(TypeError, match="align"):
        nc.empty(3, like=Foreign(), align=64)
    with pytest.raises(TypeError, match="touch"):
        nc.empty_like(Foreign(), touch=True)
    assert nc.zeros_like([1.0, 2.0], align=64).ctypes.data % 64 == 0

    class Backwards:
        def __array_function__(self, func, types, args, kwargs):
            return np.arange(10.0)[::-2]
    r = nc.ones(5, like=Backwards(), align=64)      # NumPy's answer, aligned again: a copy
    assert r.ctypes.data % 64 == 0 and r.strides == (-16,) and r.tolist() == [9, 7, 5, 3, 1]


def test_thresholds_setting_is_checked():
    old = creating.set_thresholds(8192, 0)
    try:
        with pytest.raises(ValueError, match="piece_bytes"):
            creating.set_thresholds(100)
        with pytest.raises(ValueError, match="cold_bytes"):
            creating.set_thresholds(cold_bytes=-1)
    finally:
        assert creating.set_thresholds(*old) == (8192, 0)
    assert old == (creating.PIECE_BYTES, creating.COLD_BYTES)


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.parametrize("name", ["zeros", "empty", "zeros_like"])
def test_no_pass_over_fresh_pages_unless_touch(name):
    n = 100 << 17                               # 100 MiB of float64: fresh mmap'd pages
    src = np.empty(n) if name == "zeros_like" else n
    before = _rss()
    a = getattr(nc, name)(src)
    assert _rss() - before < (16 << 20)         # mapped, not written
    del a
    before = _rss()
    a = getattr(nc, name)(src, touch=True)
    assert _rss() - before > (90 << 20)         # every page written once
    assert name == "empty" or not a.any()


@pytest.mark.parametrize("shape", [(np.int8(2), 3), (2, 3), (-1,), (2.0,), None, 2 ** 62])
@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "full"])
def test_a_warning_of_the_dtype_comes_once_as_from_numpy(name, shape):
    """Found by review: a shape that falls back to NumPy made the dtype
    string parse twice (nclx's parse, then NumPy's): its deprecation
    warning came twice; a shape NumPy refuses before reading the dtype
    warned where NumPy does not."""
    def observe(mod):
        args = (shape, 1) if name == "full" else (shape,)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            try:
                out = getattr(mod, name)(*args, dtype="i4,(2)f4")
                outcome = ("ok", out.dtype, out.shape)
            except Exception as exc:  # noqa: BLE001 - compared with NumPy's
                outcome = (type(exc), str(exc))
        return outcome, [(w.category, str(w.message)) for w in got]
    assert observe(nc) == observe(np)
