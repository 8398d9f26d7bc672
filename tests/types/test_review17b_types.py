"""Review 17b of nclx.types: ``out=`` arrays on a Ragged, and typed validity
bitmaps given to ``from_string``."""
import array

import numpy as np
import pytest

from nclx.types import Ragged, from_list, from_string


# ------------------------------------------------ 1. out= on a Ragged
def _r():
    return from_list([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]])     # 3 lists, 6 values


@pytest.mark.parametrize("out, words", [
    (np.full(6, -1.0), "an array of shape (6,)"),                 # as long as the values
    (np.full(3, -1.0), "an array of shape (3,)"),                 # as long as the lists
    (np.full((3, 2), -1.0), "an array of shape (3, 2)"),
    (np.full((6, 1), -1.0), "an array of shape (6, 1)"),
    (np.array(-1.0), "an array of shape ()"),
    ([-1.0] * 6, "a list"),
], ids=["values", "lists", "3x2", "6x1", "0d", "list"])
def test_out_array_is_refused_by_name(out, words):
    """docs/types.md: ``out=`` with Ragged arguments.  Before, an ndarray as
    long as the values was written value by value and a Ragged over it came
    back (the lists' shape never checked); one as long as the lists failed
    in NumPy naming shapes (6,) () (3,)."""
    r = _r()
    before = np.array(out, copy=True)
    with pytest.raises(ValueError, match=r"add: out= on a Ragged is a Ragged of the same "
                                         r"list lengths, not ") as info:
        np.add(r, 1, out=out)
    assert words in str(info.value)
    assert np.array(out).tobytes() == before.tobytes()           # nothing was written
    with pytest.raises(ValueError, match=r"add: out= on a Ragged"):
        np.add(r, 1, out=(out,))


def test_out_array_among_ragged_outputs_is_refused_before_writing():
    r = _r()
    good = Ragged(r.offsets, np.full(6, -1.0))
    bad = np.full(6, -1.0)
    for outs in ((bad, good), (good, bad)):
        with pytest.raises(ValueError, match=r"divmod: out= .*array of shape \(6,\)"):
            np.divmod(r, 2, out=outs)
        assert good.values.tolist() == bad.tolist() == [-1.0] * 6


def test_out_array_with_a_ragged_where_is_refused():
    r = _r()
    out = np.full(6, -1.0)
    with pytest.raises(ValueError, match=r"out= on a Ragged .*shape \(6,\)"):
        np.add(r, 1, out=out, where=r > 2.5)
    assert out.tolist() == [-1.0] * 6


def test_ragged_out_still_works():
    r = _r()
    out = Ragged(r.offsets, np.full(6, -1.0))
    got = np.add(r, 1, out=out)
    assert got is out and out.to_list() == [[2, 3, 4], [5], [6, 7]]
    out = Ragged(r.offsets, np.full(6, -1.0))
    got = np.add(r, 1, out=(out,))
    assert got is out
    q, m = np.divmod(r, 2, out=(None, Ragged(r.offsets, np.zeros(6))))
    assert q.to_list() == [[0, 1, 1], [2], [2, 3]] and m.to_list() == [[1, 0, 1], [0], [1, 0]]
    with pytest.raises(ValueError, match="different list lengths"):
        np.add(r, 1, out=from_list([[0.0] * 6]))


# ------------------------------------- 3. from_string: typed validity bitmaps
_MASK = np.array([True, False, True, True, False, False, False, False, True])   # 9 entries
_VALID = [0, None, 2, 3, None, None, None, None, 8]


@pytest.mark.parametrize("bitmap", [
    _MASK,
    memoryview(_MASK),
    np.packbits(_MASK, bitorder="little").astype(np.int16),
    np.packbits(_MASK, bitorder="little").astype(np.uint16),
    np.array([13.0, 1.0]),
    array.array("h", [13, 1]),
    np.packbits(_MASK, bitorder="little").view("S1"),
], ids=["bool", "memoryview-bool", "int16", "uint16", "float64", "array-h", "S1"])
@pytest.mark.parametrize("s, buffers", [
    ("9 * ?int8", (np.arange(9, dtype=np.int8),)),
    ("9 * ?string", (np.arange(10, dtype=np.int64), b"abcdefghi")),
    ("9 * option[var * int8]", (np.arange(10, dtype=np.int64), np.arange(9, dtype=np.int8))),
], ids=["values", "string", "var"])
def test_a_typed_bitmap_is_refused(bitmap, s, buffers):
    """Before: a bool array (one byte per element) was read as bits, so
    [T, F, T, T, F, F, F, F, T] gave one valid element (0 and nothing else),
    and an int16 one's high bytes were read as the next bits."""
    with pytest.raises(TypeError, match=r"buffer 0 \(validity of dimension 1\) is an array of ") \
            as info:
        from_string(s, bitmap, *buffers)
    assert str(np.asarray(bitmap).dtype) in str(info.value)


def test_a_nested_typed_bitmap_names_its_index():
    with pytest.raises(TypeError, match=r"buffer 1 \(validity of var dimension below "
                                        r"dimension 1\) is an array of bool"):
        from_string("1 * var * ?int8", np.array([0, 9]), _MASK, np.arange(9, dtype=np.int8))


@pytest.mark.parametrize("bitmap", [
    np.packbits(_MASK, bitorder="little"),
    np.packbits(_MASK, bitorder="little").view(np.int8),    # as Arrow's buffers (format "b")
    np.packbits(_MASK, bitorder="little").tobytes(),
    bytearray(np.packbits(_MASK, bitorder="little").tobytes()),
    memoryview(np.packbits(_MASK, bitorder="little")),
    np.packbits(_MASK, bitorder="little").view("V1"),
], ids=["uint8", "int8", "bytes", "bytearray", "memoryview", "void"])
def test_raw_bitmaps_still_read(bitmap):
    got = from_string("9 * ?int8", bitmap, np.arange(9, dtype=np.int8))
    assert got.tolist() == _VALID
    r = from_string("9 * ?string", bitmap, np.arange(10, dtype=np.int64), b"abcdefghi")
    assert r.to_strings() == ["a", None, "c", "d", None, None, None, None, "i"]
