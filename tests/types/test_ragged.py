"""Ragged: construction and validation, indexing, iteration, lists, equality."""
import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

from nclx.types import Ragged, from_list, from_strings
from types_strategies import nested_lists


def model_valid(offsets, n_values):
    return offsets[0] >= 0 and all(a <= b for a, b in zip(offsets, offsets[1:])) \
        and offsets[-1] <= n_values


# ------------------------------------------------------------ construction
def test_basic():
    r = Ragged(np.array([0, 1, 4, 4, 6]), np.arange(6))
    assert len(r) == 4
    assert r.to_list() == [[0], [1, 2, 3], [], [4, 5]]
    assert r.lengths.tolist() == [1, 3, 0, 2]
    assert r.offsets.dtype == np.int64
    r32 = Ragged(np.array([0, 2], np.int32), np.arange(2.0))
    assert r32.to_list() == [[0.0, 1.0]]


@pytest.mark.parametrize("offsets, values, exc, words", [
    (np.array([0, 3, 2]), np.arange(5), ValueError, "offsets[2] = 2 is less than offsets[1] = 3"),
    (np.array([0, 2, 7]), np.arange(5), ValueError, "offsets[2] = 7 points past the end of values (length 5)"),
    (np.array([-1, 2]), np.arange(5), ValueError, "offsets[0] = -1 is negative"),
    (np.array([0, 2], np.int16), np.arange(5), TypeError, "offsets must be int32 or int64, not int16"),
    (np.array([0.0, 2.0]), np.arange(5), TypeError, "not float64"),
    (np.array([], np.int64), np.arange(5), ValueError, "at least one entry"),
    (np.zeros((2, 2), np.int64), np.arange(5), ValueError, "1-dimensional"),
    (np.array([0, 1]), np.array(5), ValueError, "0-d"),
    (np.array([0, 1]), [1, 2], TypeError, "from_list"),
    (np.array([0, 1]), np.array([None, 1]), TypeError, "object"),
    ("abc", np.arange(3), TypeError, "offsets must be"),
])
def test_bad_offsets_and_values(offsets, values, exc, words):
    with pytest.raises(exc) as info:
        Ragged(offsets, values)
    assert words in str(info.value)


def test_bad_validity():
    with pytest.raises(ValueError, match="validity has 1 bytes; 9 lists"):
        Ragged(np.arange(10), np.arange(9), validity=np.ones(1, np.uint8))
    with pytest.raises(TypeError, match="uint8 bitmap"):
        Ragged(np.arange(3), np.arange(2), validity=np.ones(1, np.bool_))
    with pytest.raises(TypeError, match="bytes-like"):
        Ragged(np.arange(3), np.arange(2), validity=3.5)
    with pytest.raises(ValueError, match="validity_offset given without"):
        Ragged(np.arange(3), np.arange(2), validity_offset=3)
    r = Ragged(np.arange(3), np.arange(2), validity=b"\x02")
    assert r.to_list() == [None, [1]]


@given(st.lists(st.integers(-3, 12), min_size=1, max_size=12), st.integers(0, 10))
def test_validation_matches_model(offsets, n_values):
    offs = np.array(offsets, dtype=np.int64)
    values = np.arange(n_values)
    if model_valid(offsets, n_values):
        r = Ragged(offs, values)
        assert r.to_list() == [list(range(a, b)) for a, b in zip(offsets, offsets[1:])]
    else:
        with pytest.raises(ValueError, match=r"offsets\[\d+\] = -?\d+"):
            Ragged(offs, values)


def test_validate_false_is_constant_time():
    n = 10 ** 6
    offsets = np.arange(n + 1, dtype=np.int64)
    values = np.arange(n)
    t0 = time.perf_counter()
    for _ in range(1000):
        Ragged(offsets, values, validate=False)
    per_call = (time.perf_counter() - t0) / 1000
    # the same cost for a 10-list Ragged: no pass over the offsets
    small = np.arange(11, dtype=np.int64)
    t0 = time.perf_counter()
    for _ in range(1000):
        Ragged(small, values[:10], validate=False)
    per_small = (time.perf_counter() - t0) / 1000
    assert per_call < per_small * 20 + 20e-6
    # trusted but wrong offsets: accepted, and still no read outside values
    bad = Ragged(np.array([0, 50, 3]), np.arange(5), validate=False)
    assert bad[0].tolist() == [0, 1, 2, 3, 4] and bad[1].tolist() == []


def test_trusted_garbage_indexing_never_reads_outside():
    values = np.arange(5.0)
    bad = Ragged(np.array([0, 100, 101, 2]), values, validate=False)
    assert bad[1].tolist() == []            # NumPy slicing clips
    with pytest.raises(ValueError, match="list 1: offsets 100..101 leave the values"):
        bad.take(np.array([1]))              # the lists taken are checked before any gather


def test_empty_ragged():
    e = Ragged(np.zeros(1, np.int64), np.zeros(0))
    assert len(e) == 0 and e.to_list() == [] and str(e.type) == "0 * var * float64"
    assert e[0:0].to_list() == [] and e[np.zeros(0, np.int64)].to_list() == []


def test_values_shares_memory():
    values = np.arange(10)
    offsets = np.array([0, 4, 10])
    r = Ragged(offsets, values)
    assert r.values is values and r.offsets is offsets
    assert np.shares_memory(r[1], values)


# ---------------------------------------------------------------- indexing
@given(nested_lists(depth=1), st.data())
def test_indexing_matches_lists(data, draw):
    r = from_list(data)
    assert len(r) == len(data)
    assert r.to_list() == data
    assert [None if x is None else x.tolist() for x in r] == data
    n = len(data)
    if n:
        i = draw.draw(st.integers(-n, n - 1))
        item = r[i]
        assert (item is None and data[i] is None) or item.tolist() == data[i]
    a = draw.draw(st.integers(-n - 2, n + 2))
    b = draw.draw(st.integers(-n - 2, n + 2))
    step = draw.draw(st.sampled_from([None, 1, 2, -1, 3]))
    assert r[a:b:step].to_list() == data[a:b:step]
    assert r[a:b][::-1].to_list() == data[a:b][::-1]
    idx = np.array(draw.draw(st.lists(st.integers(-n, n - 1), max_size=5)) if n else [], np.int64)
    assert r[idx].to_list() == [data[i] for i in idx]
    mask = np.array([draw.draw(st.booleans()) for _ in range(n)], dtype=bool)
    assert r[mask].to_list() == [x for x, m in zip(data, mask) if m]


def test_getitem_tuple_and_errors():
    r = from_list([[1, 2, 3], [4], [5, 6]])
    assert r[0, 1] == 2 and r[2, -1] == 6 and r[0, 1:].tolist() == [2, 3]
    assert r[:, 0].tolist() == [1, 4, 5]
    assert r[::2, -1].tolist() == [3, 6]
    with pytest.raises(IndexError, match="index 5 is out of bounds for a Ragged of 3 lists"):
        r[5]
    with pytest.raises(IndexError, match="out of bounds for list 1 of length 1"):
        r[:, 1]
    with pytest.raises(IndexError):
        r[1, 3]
    with pytest.raises(TypeError, match="index must be"):
        r["a"]
    with pytest.raises(IndexError, match="boolean index has 2 entries"):
        r[np.array([True, False])]
    with pytest.raises(TypeError):
        r[0:1, 0:1]
    m = from_list([[1], None, [2, 3]])
    assert m[:, 0].tolist() == [1, None, 2]
    with pytest.raises(IndexError, match="list 1 is missing"):
        m[1, 0]


def test_slices_with_validity_keep_bits():
    data = [None if i % 3 == 0 else list(range(i)) for i in range(20)]
    r = from_list(data)
    for a in range(0, 20, 3):
        for b in range(a, 21, 5):
            s = r[a:b]
            assert s.to_list() == data[a:b]
            assert s.validity is None or np.shares_memory(s.validity, r.validity)
            assert s[1:].to_list() == data[a:b][1:]


def test_nested_and_strings():
    data = [[[1.5], []], None, [[2.0, 3.0]]]
    r = from_list(data)
    assert r.to_list() == data
    assert r[0].to_list() == [[1.5], []]
    assert r[2, 0].tolist() == [2.0, 3.0]
    s = from_strings(["héllo", "", None, "wörld"])
    assert s.to_strings() == ["héllo", "", None, "wörld"]
    assert s[0] == "héllo" and s[2] is None and list(s)[3] == "wörld"
    assert from_strings([b"\xff", b""]).to_list() == [b"\xff", b""]
    assert from_list([["ab", "c"], []]).to_list() == [["ab", "c"], []]
    with pytest.raises(TypeError, match="strings\\[1\\]"):
        from_strings(["a", 3])
    with pytest.raises(TypeError, match="to_strings needs"):
        r.to_strings()


def test_from_list_errors():
    with pytest.raises(ValueError, match="different depths"):
        from_list([[1], [[2]]])
    with pytest.raises(TypeError, match="data\\[1\\] = 3 is not a list"):
        from_list([[1], 3])
    assert from_list([]).to_list() == []
    assert from_list([None, None]).to_list() == [None, None]
    assert from_list([[1, 2]], dtype=np.int8).values.dtype == np.int8
    assert from_list([[1]], offsets_dtype=np.int32).offsets.dtype == np.int32


@given(nested_lists(depth=2))
def test_from_list_round_trip(data):
    assert from_list(data).to_list() == data


# ----------------------------------------------------------------- equality
def test_equals_and_eq():
    a = from_list([[1, 2], [], [3]])
    b = Ragged(np.array([5, 7, 7, 8]), np.array([0, 0, 0, 0, 0, 1, 2, 3]))
    assert a.equals(b) and b.equals(a)
    eq = a == b
    assert isinstance(eq, Ragged) and eq.to_list() == [[True, True], [], [True]]
    assert (a != b).to_list() == [[False, False], [], [False]]
    assert not a.equals(from_list([[1, 2], [3], []]))
    assert not a.equals(from_list([[1, 2], [], [3]], dtype=np.int32))
    assert not a.equals([[1, 2], [], [3]])
    with pytest.raises(ValueError, match="different list lengths"):
        a == from_list([[1], [2, 3], [4]])
    nan = from_list([[np.nan, 1.0]])
    assert nan.equals(from_list([[np.nan, 1.0]]))
    assert (nan == nan).to_list() == [[False, True]]
    m1 = from_list([[1], None])
    m2 = Ragged(np.array([0, 1, 3]), np.array([1, 9, 9]), validity=b"\x01")
    assert m1.equals(m2)   # the values under a missing list do not count
    with pytest.raises(TypeError):
        hash(a)


def test_repr_and_array_refusal():
    r = from_list([[1]] * 10)
    assert "..." in repr(r) and "10 * var * int64" in repr(r)
    with pytest.raises(TypeError, match="no fixed shape"):
        np.asarray(r)
