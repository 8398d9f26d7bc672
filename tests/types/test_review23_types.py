"""Review 23 (nclx.types).  Each test failed before its fix:

- per-list reductions met floating-point errors without NumPy's report;
- offsets taken on trust: ``sum(axis=None)`` and ``equals`` used only the
  window's ends (a wrong number), ``repr`` showed lists ``r[i]`` refuses, and
  ``arrmeta`` built a tree 8 GB past a 24-byte block;
- ``arrmeta`` of an ``__array_interface__`` over a bytearray did not hold its
  export (resized under the tree), re-read the whole buffer's repr on each
  cache hit, and called any foreign exporter immutable;
- ``from_string`` with a strided outer dim dropped a partial element;
- the error of Raggeds whose lists differ named no list.
"""
import sys
import time
import warnings

import numpy as np
import pytest

from nclx.types import Ragged, arrmeta, from_list, from_string


def _warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        first = sys._getframe(1).f_lineno
        result = fn()
    return result, [(str(x.message), x.category) for x in w], first


@pytest.mark.parametrize("rows, method", [
    ([[np.inf, -np.inf], ["big", "big"]], "sum"),
    ([[0.0, np.inf], ["big", "big"]], "prod"),
    ([[np.nan, 1.0], [1.0, np.nan]], "max"),
    ([[np.nan, 1.0], [2.0, 1.0]], "min"),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_per_list_reductions_report_fp_errors_as_numpy_per_row(rows, method, dtype):
    big = np.finfo(dtype).max
    rows = [np.asarray([big if v == "big" else v for v in r], dtype=dtype) for r in rows]
    r = from_list([list(x) for x in rows])
    if r.dtype != dtype:
        r = Ragged(r.offsets, r.values.astype(dtype))
    with np.errstate(all="warn"):
        got, warned, _ = _warnings(lambda: getattr(r, method)(axis=-1))
        ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[method]
        want_vals, want_warned = [], []
        for x in rows:
            v, w, _ = _warnings(lambda x=x: ufunc.reduce(x))
            want_vals.append(v)
            want_warned += w
    assert np.asarray(got).tobytes() == np.asarray(want_vals, dtype=dtype).tobytes()
    # NumPy reports per call: the Ragged's one report holds each kind once
    assert sorted(set(warned)) == sorted(set(want_warned)), (warned, want_warned)
    with np.errstate(all="raise"):
        if want_warned:
            with pytest.raises(FloatingPointError, match="encountered in reduce"):
                getattr(r, method)(axis=-1)


def test_warning_names_the_callers_line():
    r = from_list([[1e308, 1e308]])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        r.sum(axis=-1)
    assert [(x.filename, x.lineno) for x in w] == [(__file__, line)]


@pytest.mark.parametrize("offsets", [[0, 5, 2], [0, -3, 2], [0, 2 ** 31 - 1, 3]])
def test_trusted_offsets_are_checked_by_every_reduction_and_equals(offsets):
    r = Ragged(np.array(offsets), np.arange(3.0), validate=False)
    for method in ("sum", "prod", "max", "min"):
        for axis in (None, -1):
            with pytest.raises(ValueError, match="list [01]: offsets"):
                getattr(r, method)(axis=axis)
    with pytest.raises(ValueError, match="list [01]: offsets"):
        r.equals(r)
    text = repr(r)
    assert "invalid>" in text and "[]" not in text, text
    with pytest.raises(ValueError, match="list [01]: offsets"):
        arrmeta(r)


def test_arrmeta_of_a_trusted_ragged_past_its_values_is_refused():
    r = Ragged(np.array([0, 10 ** 9, 10 ** 9 + 1]), np.arange(3.0), validate=False)
    with pytest.raises(ValueError, match=r"list 0: offsets 0..1000000000 leave the values"):
        arrmeta(r)


class _Exporter:
    def __init__(self, buf, typestr="<i8"):
        self.buf = buf
        self.typestr = typestr

    @property
    def __array_interface__(self):
        return {"shape": (len(self.buf) // 8,), "typestr": self.typestr, "data": self.buf,
                "version": 3}


def test_arrmeta_holds_a_bytearrays_export():
    buf = bytearray(64)
    o = _Exporter(buf)
    am = arrmeta(o)
    with pytest.raises(BufferError):
        buf.extend(b"\0" * 1000)
    assert am.data == np.frombuffer(buf, np.uint8).ctypes.data
    assert am.flags == 3                          # read + write: a writable bytearray
    assert arrmeta(_Exporter(bytes(16))).flags == 5     # bytes: read-only (immutable)


def test_arrmeta_cache_hit_does_not_read_the_buffer():
    big = _Exporter(bytearray(32 * 2 ** 20))
    arrmeta(big)
    t = time.perf_counter()
    for _ in range(10):
        arrmeta(big)
    # a repr of 32 MiB took over a second a call before; here, well below
    # (a bound far above a cache hit's microseconds, not a timing claim)
    assert time.perf_counter() - t < 1.0


def test_from_string_strided_refuses_a_partial_element():
    with pytest.raises(ValueError, match="buffer 0: 12 bytes is not a whole number"):
        from_string("strided * 2 * int32", np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="buffer 0: 5 bytes"):
        from_string("strided * int32", b"\1\0\0\0\2")
    assert from_string("strided * 2 * int32", np.arange(4, dtype=np.int32)).tolist() == \
        [[0, 1], [2, 3]]


def test_error_names_the_first_list_that_differs():
    with pytest.raises(ValueError, match="list 1 has 2 values and 1 values"):
        from_list([[1.0], [2.0, 3.0], []]) + from_list([[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="3 lists and 2 lists"):
        from_list([[1.0], [2.0], []]) + from_list([[1.0], [2.0]])


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.bool_])
def test_widening_sums_cast_a_chunk_at_a_time(dtype):
    import tracemalloc
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2 if dtype is np.bool_ else 100, 6_000_000).astype(dtype)
    lens = np.array([0, 3, 2_500_000, 1, 0, 1_200_000, 7, 2_000_000], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(lens)])
    offs = np.append(offs, v.size)                  # a last list with the rest
    r = Ragged(offs, v)
    tracemalloc.start()
    try:
        got = r.sum(axis=-1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    want = np.array([np.sum(v[a:b], dtype=np.int64 if dtype is not np.uint16 else np.uint64)
                     for a, b in zip(offs[:-1], offs[1:])])
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    # before: every value cast to 8 bytes at once (48 MB here)
    assert peak < 24 * 2 ** 20, peak
    got = r.prod(axis=-1)
    want = np.array([np.prod(v[a:b], dtype=want.dtype) for a, b in zip(offs[:-1], offs[1:])])
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("protocol", range(6))
def test_pickle_every_protocol_and_validated_on_load(protocol):
    import pickle
    r = from_list([[1.0, 2.0], None, [], [3.0]])
    back = pickle.loads(pickle.dumps(r, protocol=protocol))
    assert back.equals(r) and back.to_list() == r.to_list()
    s = from_list([["a", "bc"], []])
    assert pickle.loads(pickle.dumps(s, protocol=protocol)).to_list() == s.to_list()
    bad = Ragged(np.array([0, 5, 2]), np.arange(3.0), validate=False)
    with pytest.raises(ValueError):
        pickle.loads(pickle.dumps(bad, protocol=protocol))


class _Tagged(Ragged):
    pass


class _Slotted(Ragged):
    __slots__ = ("unit",)


class _OtherInit(Ragged):
    def __init__(self, values, offsets, **kw):
        super().__init__(offsets, values, **kw)


@pytest.mark.parametrize("protocol", range(6))
def test_pickle_and_copy_keep_a_subclass_and_its_state(protocol):
    """Review 23c: the first fix of protocols 0/1 dropped a subclass's
    attributes and slots and called its own __init__."""
    import copy
    import pickle
    t = _Tagged(np.array([0, 2, 3]), np.arange(3.0))
    t.name = "temps"
    s = _Slotted(np.array([0, 1]), np.arange(1.0))
    s.unit = "K"
    o = _OtherInit(np.arange(3.0), np.array([0, 3]))
    for x, attr in ((t, "name"), (s, "unit"), (o, None)):
        for back in (pickle.loads(pickle.dumps(x, protocol=protocol)), copy.copy(x),
                     copy.deepcopy(x)):
            assert type(back) is type(x) and back.equals(x)
            if attr is not None:
                assert getattr(back, attr) == getattr(x, attr)


def test_missing_lists_report_no_floating_point_errors():
    """Review 23c: an overflow under a missing list raised under
    errstate(all='raise'); axis=None already skipped it."""
    f = np.array([1e308, 1e308, 1.0, 2.0])
    r = Ragged(np.array([0, 2, 4]), f, validity=np.array([0b10], np.uint8))
    with np.errstate(all="raise"):
        got = r.sum()
        assert r.sum(axis=None) == 3.0
    assert got.mask.tolist() == [True, False] and got[1] == 3.0
    r2 = Ragged(np.array([0, 2, 4]), np.array([1e308, 1e308, 1e308, 1e308]),
                validity=np.array([0b10], np.uint8))
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="overflow encountered in reduce"):
            r2.sum()
