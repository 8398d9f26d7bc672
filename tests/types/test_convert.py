"""Ragged <-> pyarrow and awkward: same values, shared buffers."""
import gc

import awkward as ak
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from nclx.types import (Ragged, from_arrow, from_awkward, from_list, from_strings, to_arrow,
                        to_awkward, typeof)
from types_strategies import nested_lists


def addr(a):
    return a.__array_interface__["data"][0]


def in_buffer(view, buf):
    """view's bytes lie inside the pyarrow buffer / ndarray buf."""
    start = buf.address if isinstance(buf, pa.Buffer) else addr(buf)
    size = buf.size if isinstance(buf, pa.Buffer) else buf.nbytes
    return start <= addr(view) and addr(view) + view.nbytes <= start + size


@pytest.mark.parametrize("odt, arrow_type", [(np.int32, pa.ListType), (np.int64, pa.LargeListType)])
def test_to_arrow_zero_copy(odt, arrow_type):
    offsets = np.array([0, 2, 2, 5], dtype=odt)
    values = np.arange(5, dtype=np.float32)
    r = Ragged(offsets, values)
    arr = pa.array(r)
    assert isinstance(arr.type, arrow_type)
    assert arr.to_pylist() == r.to_list()
    assert arr.buffers()[1].address == addr(offsets)
    assert arr.values.buffers()[1].address == addr(values)
    back = from_arrow(arr)
    assert np.shares_memory(back.offsets, offsets) and np.shares_memory(back.values, values)
    assert back.equals(r)


def test_to_arrow_is_pa_array():
    r = from_list([[1, None], [], [3]], offsets_dtype=np.int32)
    assert to_arrow(r).equals(pa.array(r)) and to_arrow(r).type == pa.list_(pa.int64())
    assert to_arrow(r, pa.large_list(pa.float64())).to_pylist() == [[1.0, None], [], [3.0]]
    assert pa.array(r, type=pa.large_list(pa.int32())).type == pa.large_list(pa.int32())
    with pytest.raises(TypeError, match="takes a Ragged"):
        to_arrow([[1]])
    with pytest.raises(TypeError, match="takes a Ragged"):
        to_awkward(np.arange(3))


def test_to_awkward_zero_copy():
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)
    values = np.arange(5, dtype=np.int16)
    r = Ragged(offsets, values, validity=np.array([0b101], np.uint8))
    a = to_awkward(r)
    assert a.to_list() == r.to_list() == [[0, 1], None, [2, 3, 4]]
    content = a.layout.content
    assert np.shares_memory(np.asarray(content.offsets.data), offsets)
    assert np.shares_memory(np.asarray(content.content.data), values)
    assert np.shares_memory(np.asarray(a.layout.mask.data), r.validity)
    back = from_awkward(a)
    assert back.equals(r)
    assert np.shares_memory(back.offsets, offsets) and np.shares_memory(back.values, values)
    assert np.shares_memory(back.validity, r.validity)


def test_strings_zero_copy():
    s = from_strings(["ab", None, "cde"])
    arr = pa.array(s)
    assert arr.type == pa.large_string() and arr.to_pylist() == ["ab", None, "cde"]
    assert arr.buffers()[2].address == addr(s.values)
    back = from_arrow(arr)
    assert back.to_strings() == ["ab", None, "cde"] and np.shares_memory(back.values, s.values)
    a = to_awkward(s)
    assert a.to_list() == ["ab", None, "cde"] and str(ak.type(a)) == "3 * ?string"
    assert from_awkward(a).to_strings() == ["ab", None, "cde"]
    s32 = from_strings([b"x", b"yz"], offsets_dtype=np.int32)
    assert pa.array(s32).type == pa.binary()
    small = pa.array(["q", "rs"])
    r = from_arrow(small)
    assert r.offsets.dtype == np.int32 and in_buffer(r.values, small.buffers()[2])


@given(nested_lists(depth=2))
def test_arrow_round_trip(data):
    r = from_list(data)
    arr = pa.array(r)
    assert arr.to_pylist() == data
    assert from_arrow(arr).to_list() == data
    inferred = pa.array(data)
    if pa.types.is_list(inferred.type):      # not when only None or [] give no type
        assert from_arrow(inferred).to_list() == data


@given(nested_lists(depth=2))
def test_awkward_round_trip(data):
    r = from_list(data)
    a = to_awkward(r)
    assert a.to_list() == data
    assert from_awkward(a).to_list() == data
    if data:
        assert from_awkward(ak.Array(data)).to_list() == data


@given(nested_lists(depth=1), st.data())
def test_sliced_arrow_arrays(data, draw):
    arr = pa.array(data, type=pa.list_(pa.int64()))
    n = len(arr)
    a = draw.draw(st.integers(0, n))
    b = draw.draw(st.integers(a, n))
    sl = arr.slice(a, b - a)
    r = from_arrow(sl)
    assert r.to_list() == data[a:b]
    assert pa.array(r).to_pylist() == data[a:b]
    assert to_awkward(r).to_list() == data[a:b]
    # a Ragged's type describes its buffers: a nullable Arrow field without
    # a null among the sliced values has no mask, so no option
    has_null = sl.values.null_count > 0    # .values: the whole child, not just the slice
    expected = typeof(sl) if has_null else typeof(sl).replace("var * ?int64", "var * int64")
    assert typeof(r) == expected


def test_chunked_and_nested_arrow():
    ch = pa.chunked_array([pa.array([[1], [2, 3]]), pa.array([[4]])])
    assert from_arrow(ch).to_list() == [[1], [2, 3], [4]]
    one = pa.chunked_array([pa.array([[1.5]])])
    assert from_arrow(one).to_list() == [[1.5]]
    nested = pa.array([[[1, 2], []], [[3]]], type=pa.list_(pa.large_list(pa.int8())))
    r = from_arrow(nested)
    assert r.to_list() == [[[1, 2], []], [[3]]] and typeof(r.values) == "3 * var * int8"
    fixed = pa.array([[[1, 2], [3, 4]]], type=pa.list_(pa.list_(pa.int32(), 2)))
    rf = from_arrow(fixed)
    assert rf.values.shape == (2, 2) and rf.to_list() == [[[1, 2], [3, 4]]]
    assert pa.array(rf).to_pylist() == [[[1, 2], [3, 4]]]
    rec = pa.array([[{"x": 1, "y": 2.0}]])
    rr = from_arrow(rec)
    assert rr.values.dtype.names == ("x", "y") and rr.to_list() == [[(1, 2.0)]]
    assert pa.array(rr).to_pylist() == [[{"x": 1, "y": 2.0}]]
    withnull = pa.array([[1, None]])
    assert from_arrow(withnull).to_list() == [[1, None]]
    boolean = from_list([[True, False]])
    assert pa.array(boolean).to_pylist() == [[True, False]]
    assert from_arrow(pa.array([[True, False]])).to_list() == [[True, False]]


def test_from_arrow_errors():
    with pytest.raises(TypeError, match="list, large_list, string or binary"):
        from_arrow(pa.array([1, 2]))
    with pytest.raises(TypeError, match="pyarrow Array"):
        from_arrow([[1]])
    with pytest.raises(TypeError, match="no Ragged equivalent"):
        from_arrow(pa.array([[1, "a"]], type=pa.list_(pa.dictionary(pa.int8(), pa.string())))
                          if False else pa.array([["a"]]).cast(pa.list_(pa.dictionary(pa.int8(), pa.string()))))


def test_from_awkward_layouts():
    a = ak.Array([[1, 2], [], [3]])
    listarray = ak.contents.ListArray(ak.index.Index64(np.array([0, 2, 2])),
                                      ak.index.Index64(np.array([2, 2, 3])),
                                      a.layout.content)
    assert from_awkward(ak.Array(listarray)).to_list() == [[1, 2], [], [3]]
    opt = ak.Array([[1], None, [2, 3]])      # IndexedOptionArray: validity computed
    assert from_awkward(opt).to_list() == [[1], None, [2, 3]]
    inner_opt = ak.Array([[1, None], [2]])
    assert from_awkward(inner_opt).to_list() == [[1, None], [2]]
    rec = ak.Array([[{"x": 1, "y": 2.5}], []])
    assert from_awkward(rec).to_list() == [[(1, 2.5)], []]
    with pytest.raises(TypeError, match="var dimension"):
        from_awkward(ak.Array([1, 2]))
    regular = ak.to_regular(ak.Array([[[1, 2], [3, 4]]]), axis=2)
    assert from_awkward(regular).values.shape == (2, 2)


def test_export_checks_trusted_offsets():
    # Arrow and awkward trust offsets: a Ragged built with validate=False is
    # checked before either reads it
    values = np.arange(5.0)
    bad = Ragged(np.array([0, 100, 101, 2]), values, validate=False)
    with pytest.raises(ValueError, match=r"offsets\[3\] = 2 is less than offsets\[2\] = 101"):
        pa.array(bad)
    with pytest.raises(ValueError, match=r"offsets\[3\] = 2 is less"):
        to_awkward(bad)
    past = Ragged(np.array([0, 9]), values, validate=False)
    with pytest.raises(ValueError, match="points past the end of values"):
        pa.array(past)
    dec = Ragged(np.array([0, 4, 1]), values, validate=False)
    with pytest.raises(ValueError, match="must not decrease"):
        pa.array(dec)
    inner = Ragged(np.array([0, 1]), Ragged(np.array([0, 7]), values, validate=False))
    with pytest.raises(ValueError, match="points past the end of values"):
        pa.array(inner)                      # nested levels are checked too
    with pytest.raises(ValueError, match="points past the end of values"):
        to_awkward(inner)


def test_empty_raggeds_convert():
    e = Ragged(np.zeros(1, np.int64), np.zeros(0))
    assert pa.array(e).to_pylist() == [] and to_awkward(e).to_list() == []
    assert from_arrow(pa.array(e)).equals(e)


def test_exports_keep_the_numpy_memory_alive():
    arr = pa.array(from_list([[5]]))
    gc.collect()
    assert arr.to_pylist() == [[5]]     # Arrow's buffers keep the NumPy memory alive
    ak_arr = to_awkward(from_list([[7]]))
    gc.collect()
    assert ak_arr.to_list() == [[7]]


@pytest.mark.parametrize("dtype", [">i4", ">f8", ">u2", [("a", ">i4"), ("b", ">f8")]])
def test_to_arrow_of_big_endian_values_gives_the_values(dtype):
    """Found by review: big-endian values went to Arrow as raw bytes
    (>i4 [1, 2] read [16777216, 33554432])."""
    dt = np.dtype(dtype)
    v = np.zeros(3, dt)
    if dt.names:
        v["a"], v["b"] = [1, 2, 3], [0.5, 1.5, -2.0]
    else:
        v[:] = [1, 2, 3]
    r = Ragged(np.array([0, 2, 3]), v)
    want = [[x for x in v[:2].tolist()], [v[2].tolist()]]
    if dt.names:
        want = [[dict(zip(dt.names, x)) for x in part] for part in want]
    assert to_arrow(r).to_pylist() == want
    assert pa.array(r).to_pylist() == want
