"""from_string: views of buffers with a type; bad buffers raise naming the buffer."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from nclx.types import Ragged, from_string, typeof


def test_fixed_and_scalar_views():
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    a = from_string("2 * 3 * int32", buf)
    assert a.shape == (2, 3) and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    a[0, 0] = 9
    assert np.frombuffer(buf, np.int32)[0] == 9          # a view, not a copy
    s = from_string("int16", b"\x01\x00")
    assert s.shape == () and s == 1
    st_ = from_string("strided * 2 * float64", np.arange(8.0))
    assert st_.shape == (4, 2)
    rec = from_string("2 * {x: int32, y: float64}", bytes(24))
    assert rec.dtype.names == ("x", "y") and rec.dtype.itemsize == 12 and len(rec) == 2
    assert typeof(rec) == "2 * {x: int32, y: float64}"


def test_var_string_option_views():
    offsets = np.array([0, 2, 2, 5], np.int32)
    values = np.arange(5, dtype=np.float32)
    r = from_string("3 * var * float32", offsets, values)
    assert isinstance(r, Ragged) and r.to_list() == [[0, 1], [], [2, 3, 4]]
    assert np.shares_memory(r.offsets, offsets) and np.shares_memory(r.values, values)
    s = from_string("2 * string", np.array([0, 3, 5]), b"abcde")
    assert s.to_strings() == ["abc", "de"]
    o = from_string("3 * ?int64", np.array([0b101], np.uint8), np.arange(3))
    assert o.tolist() == [0, None, 2] and typeof(o) == "3 * ?int64"
    ov = from_string("3 * option[var * int8]", np.array([0b110], np.uint8), np.array([0, 1, 1, 3]),
                     np.arange(3, dtype=np.int8))
    assert ov.to_list() == [None, [], [1, 2]]
    nested = from_string("2 * var * var * int16", np.array([0, 1, 3]), np.array([0, 2, 2, 3]),
                         np.arange(3, dtype=np.int16))
    assert nested.to_list() == [[[0, 1]], [[], [2]]]
    inner_fixed = from_string("2 * var * 2 * uint8", np.array([0, 1, 2]), np.arange(4, dtype=np.uint8))
    assert inner_fixed.to_list() == [[[0, 1]], [[2, 3]]]
    raw_offsets = from_string("1 * var * int8", np.array([0, 2], np.int64).tobytes(), b"\x01\x02")
    assert raw_offsets.to_list() == [[1, 2]]
    as32 = from_string("1 * var * int8", np.array([0, 2], np.int32).tobytes(), b"\x01\x02",
                       offsets_dtype=np.int32)
    assert as32.offsets.dtype == np.int32
    assert from_string("3 * var * int64") == from_string("3 * var * int64")   # no buffers: the type


@pytest.mark.parametrize("s, buffers, exc, words", [
    ("2 * 3 * int32", [bytes(20)], ValueError, "buffer 0 (values of dimension 1) has 20 bytes; 6 x int32 need 24"),
    ("3 * var * int64", [np.array([0, 1])], ValueError, "buffer 0 (offsets of dimension 1) has 16 bytes; 4 offsets"),
    ("3 * var * int64", [np.array([0, 1, 5, 9]), np.arange(4)], ValueError, "buffer 1 (values of var dimension below dimension 1) has 32 bytes; 9 x int64 need 72"),
    ("2 * var * int64", [np.array([0, 3, 1]), np.arange(4)], ValueError, "offsets[2] = 1 is less than offsets[1] = 3"),
    ("2 * var * int64", [np.array([-1, 3, 3]), np.arange(4)], ValueError, "offsets[0] = -1 is negative"),
    ("9 * ?int64", [b"\x01", np.arange(9)], ValueError, "buffer 0 (validity of dimension 1) has 1 bytes; a bitmap of 9 entries needs 2"),
    ("2 * int32", [bytes(8), bytes(8)], ValueError, "2 buffers given; the type 2 * int32 uses 1"),
    ("2 * var * int32", [np.array([0, 1, 2])], ValueError, "needs another one for values"),
    ("2 * union[int32, string]", [bytes(8)], TypeError, "cannot view"),
    ("2 * pointer[int32]", [bytes(16)], TypeError, "cannot view"),
    ("2 * 2 * var * int32", [np.zeros(5, np.int64), bytes(4)], TypeError, "inside a fixed dimension"),
    ("2 * int32", [3.5], TypeError, "buffer 0 (values of dimension 1) is a float"),
    ("2 * int32", [np.zeros((4, 4))[:, 0]], ValueError, "not C-contiguous"),
    ("2 * {x: var * int32}", [bytes(8)], TypeError, "field 'x'"),
    ("3 * var * 2 * strided * int8", [np.zeros(4, np.int64), bytes(4)], TypeError, "strided"),
    ("2 * var * int64", [np.array([0, 1, 2], np.int16), np.arange(2)], TypeError, "int32 or int64"),
])
def test_bad_buffers(s, buffers, exc, words):
    with pytest.raises(exc) as info:
        kw = {"offsets_dtype": np.int16} if "int32 or int64" in words else {}
        from_string(s, *buffers, **kw)
    assert words in str(info.value)


TYPES = ["3 * var * int32", "2 * var * var * uint8", "4 * string", "3 * ?float64",
         "2 * option[var * int16]", "2 * 3 * int32", "strided * int64", "1 * {a: int8, b: 2 * float32}",
         "3 * var * 2 * int8", "2 * ?string"]


@given(st.sampled_from(TYPES), st.lists(st.binary(max_size=48), min_size=1, max_size=4))
def test_fuzz_from_string_never_reads_outside(s, raws):
    """Random bytes as every buffer: a view within the given buffers, or a
    clear ValueError/TypeError -- never a crash or a read outside."""
    bufs = [np.frombuffer(b, np.uint8).copy() for b in raws]
    try:
        out = from_string(s, *bufs)
    except (ValueError, TypeError):
        return
    for arr in _arrays(out):
        assert any(_within(arr, b) for b in bufs), s
    if isinstance(out, Ragged):
        try:
            out.to_list()
        except UnicodeDecodeError:
            pass      # random bytes need not be utf-8: the decode says so, nothing is read outside


def _arrays(x):
    if isinstance(x, Ragged):
        yield x.offsets
        if x.validity is not None:
            yield x.validity
        yield from _arrays(x.values)
    elif isinstance(x, np.ma.MaskedArray):
        yield x.data
    else:
        yield x


def _within(arr, buf):
    if arr.nbytes == 0:
        return True
    a = arr.__array_interface__["data"][0]
    b = buf.__array_interface__["data"][0]
    return b <= a and a + arr.nbytes <= b + buf.nbytes
