"""Review 17 of nclx.types: ``where=`` arrays on a Ragged, and typed buffers
of another dtype given to ``from_string``."""
import array
import ctypes

import numpy as np
import pyarrow as pa
import pytest

from nclx.types import Ragged, from_list, from_string


# ------------------------------------------------ 2. where= on a Ragged
def _r():
    return from_list([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]])     # 3 lists, 6 values


@pytest.mark.parametrize("where", [
    np.array([True, False, True, False, True, False]),   # as long as the values
    [True, False, True, False, True, False],
    np.array([True, False, True]),                       # as long as the lists
    [True, False, True],
    np.array([[True], [False], [True]]),
    np.ones((3, 1, 1), bool),
], ids=["values-array", "values-list", "lists-array", "lists-list", "column", "3d"])
def test_where_array_is_refused_by_name(where):
    """docs/types.md: ``where=`` with Ragged arguments.  Before, a mask as
    long as the values was applied value by value (the lists ignored: with
    out= the result below would have been [[2, -1, 4], [-1], [6, -1]]) and
    one as long as the lists failed in NumPy naming shapes (6,) and (3,)."""
    r = _r()
    out = Ragged(r.offsets, np.full(6, -1.0))
    with pytest.raises(ValueError, match=r"add: where= on a Ragged .*array of shape") as info:
        np.add(r, 1, out=out, where=where)
    assert str(np.shape(where)) in str(info.value)
    assert out.values.tolist() == [-1.0] * 6            # nothing was written


def test_where_scalar_and_ragged_still_work():
    r = _r()
    for where in (True, np.bool_(True), np.array(True)):
        out = Ragged(r.offsets, np.full(6, -1.0))
        assert np.add(r, 1, out=out, where=where).to_list() == [[2, 3, 4], [5], [6, 7]]
    out = Ragged(r.offsets, np.full(6, -1.0))
    assert np.add(r, 1, out=out, where=False).to_list() == [[-1, -1, -1], [-1], [-1, -1]]
    out = Ragged(r.offsets, np.full(6, -1.0))
    np.add(r, 1, out=out, where=r > 2.5)
    assert out.to_list() == [[-1, -1, 4], [5], [6, 7]]


# ------------------------------------------ 3. from_string: typed buffers
@pytest.mark.parametrize("s, buf", [
    ("3 * int32", np.array([1, 2, 3], np.int64)),
    ("3 * int32", np.array([1, 2, 3], np.uint32)),
    ("3 * int32", np.arange(12, dtype=np.int8)),
    ("3 * float64", np.array([1, 2, 3], np.float32)),
    ("2 * float32", np.array([1.0], np.float64)),
    ("3 * int64", np.array([1, 2, 3], ">i4")),           # (refused before too)
    ("3 * int32", array.array("q", [1, 2, 3])),
    ("3 * int32", memoryview(np.arange(3, dtype=np.int64))),
    ("2 * {x: int32, y: float64}", np.zeros(2, [("a", "i4"), ("y", "f8")])),
], ids=["i8-for-i4", "u4-for-i4", "i1-for-i4", "f4-for-f8", "f8-for-f4", "be-i4-for-i8",
        "array-q", "memoryview-i8", "record-names"])
def test_a_typed_buffer_of_another_dtype_is_refused(s, buf):
    """Before: the buffer's bytes were reinterpreted (an int64 array [1, 2, 3]
    read as int32 gave [1, 0, 2])."""
    with pytest.raises(TypeError, match=r"buffer 0 \(values of dimension 1\) is an (nd)?array of") \
            as info:
        from_string(s, buf)
    have = np.asarray(buf).dtype
    want = from_string(s, bytes(64)).dtype
    assert str(have) in str(info.value) and str(want) in str(info.value)


@pytest.mark.parametrize("offsets, kw, words", [
    (np.array([0, 1, 3], np.int16), {}, "int16"),
    (np.array([0, 1, 3], np.uint32), {}, "uint32"),
    (np.array([0, 1, 3], np.uint64), {}, "uint64"),
    (np.array([0, 1, 3], np.int8), {}, "int8"),
    (np.array([0, 1, 3], np.int64), {"offsets_dtype": np.int32}, "offsets_dtype is int32"),
    (np.array([0, 1, 3], np.int32), {"offsets_dtype": np.int64}, "offsets_dtype is int64"),
])
def test_typed_offsets_of_another_dtype_are_refused(offsets, kw, words):
    """Before: int16 / uint32 offsets were read as raw int64 (int64 ones as
    raw int32 with offsets_dtype=int32)."""
    with pytest.raises(TypeError, match=r"buffer 0 \(offsets of dimension 1\)") as info:
        from_string("2 * var * int32", offsets, np.arange(3, dtype=np.int32), **kw)
    assert words in str(info.value)


def test_matching_and_raw_buffers_still_read():
    i32 = np.array([1, 2, 3], np.int32)
    raw = i32.tobytes()
    for buf in (i32, i32.astype(">i4"), raw, bytearray(raw), memoryview(raw),
                np.frombuffer(raw, np.uint8), np.frombuffer(raw, "V4"), array.array("i", [1, 2, 3]),
                memoryview(i32), pa.py_buffer(raw), (ctypes.c_char * 12).from_buffer_copy(raw)):
        assert from_string("3 * int32", buf).tolist() == [1, 2, 3], type(buf)
    assert np.shares_memory(from_string("3 * int32", i32), i32)
    offs = np.array([0, 1, 3], np.int64)
    for o, kw in ((offs, {}), (offs.astype(np.int32), {}), (offs.tobytes(), {}),
                  (offs.view(np.uint8), {}), (offs.astype(np.int32), {"offsets_dtype": np.int32}),
                  (pa.py_buffer(offs.tobytes()), {})):
        r = from_string("2 * var * int32", o, i32, **kw)
        assert r.to_list() == [[1], [2, 3]]
    # a string's bytes: any array of single bytes
    for data in (b"abcde", np.frombuffer(b"abcde", "S1"), np.frombuffer(b"abcde", np.int8)):
        assert from_string("2 * string", np.array([0, 3, 5]), data).to_strings() == ["abc", "de"]
    with pytest.raises(TypeError, match=r"buffer 1 \(bytes of dimension 1\).*int32"):
        from_string("2 * string", np.array([0, 3, 5]), np.arange(5, dtype=np.int32))
