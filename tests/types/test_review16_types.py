"""Review 16 of nclx.types (hostile input): reductions that NumPy's reduceat
computes over trusted offsets, a strided validity bitmap going to Arrow,
slices with huge steps, int32 lengths, bool indices, type strings past
int64 or with a zero time count, record fields named "", strided
memoryviews, lists nested too deep (or containing themselves) and
generalized ufuncs whose core dimensions would take the lists' axis."""
import threading

import numpy as np
import pyarrow as pa
import pytest

from nclx.types import (Ragged, TypeStringError, from_arrow, from_list, from_string, parse,
                        to_arrow, to_awkward, typeof)


# --------------------- 1. reductions outside nclx's kernels check the lists
@pytest.mark.parametrize("values, names", [
    (np.array([True, False, True, True, False]), ("max", "min")),
    (np.array([5, 1, 9, 3, 7]).astype("M8[s]"), ("max", "min")),
    (np.arange(5.0).astype(np.complex128), ("sum", "prod")),
    (np.arange(5.0).astype(np.float16), ("sum", "prod", "max", "min")),
    (np.arange(5.0).astype(np.longdouble), ("sum", "max")),
])
@pytest.mark.parametrize("offsets, words", [
    ([0, 3, 1, 5], r"^list 1: offsets 3\.\.1 run backwards"),
    ([0, 10, 5], r"^list 0: offsets 0\.\.10 leave the values \(length 5\)"),
])
def test_trusted_offsets_are_checked_by_the_numpy_fallback(values, names, offsets, words):
    """Values nclx has no segment kernel for go through NumPy's reduceat,
    which reads each list up to the next list's start: offsets 0, 3, 1, 5
    gave list 0 the max of values[0:1] and no error (bool, datetime64,
    complex, float16, longdouble), as the kernels' dtypes do."""
    r = Ragged(np.array(offsets), values, validate=False)
    for name in names:
        with pytest.raises(ValueError, match=words):
            getattr(r, name)()


def test_sound_offsets_still_reduce_with_numpys_values():
    offsets = np.array([0, 3, 3, 5])
    for values in (np.array([True, False, False, True, True]),
                   np.array([5, 1, 9, 3, 7]).astype("M8[s]"),
                   (np.arange(5.0) + 1j).astype(np.complex64)):
        r = Ragged(offsets, values, validate=False)
        kind = "max" if values.dtype.kind in "bM" else "sum"
        got = getattr(r, kind)()
        for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            if a == b:
                continue
            want = getattr(np, kind)(values[a:b])
            assert np.ma.getdata(got)[i].tobytes() == np.asarray(want).tobytes()


# ---------------------------------------- 2. a strided validity to Arrow
def test_a_strided_validity_bitmap_goes_to_arrow():
    """pyarrow refused the strided bitmap ("ndarray is not contiguous",
    naming nothing); it is copied now."""
    bits = np.array([0xFF, 0x00, 0x01, 0xFF], np.uint8)[::2]       # 0xFF, 0x01
    r = Ragged(np.arange(11), np.arange(10.0), bits)
    want = [[float(i)] for i in range(9)] + [None]
    assert r.to_list() == want
    assert to_arrow(r).to_pylist() == want
    assert pa.array(r).to_pylist() == want
    assert to_awkward(r).tolist() == want


# ------------------------------------------ 3. indexing
@pytest.mark.parametrize("step", [2**70, -2**70, 2**63, -2**63 - 1, 7, -7])
@pytest.mark.parametrize("start", [None, 0, 2, -1, 2**70, -2**70])
def test_slices_with_huge_steps_are_lists_slicing(start, step):
    """r[::2**70] raised "take needs integer indices, not object" (np.arange
    of a step past int64)."""
    lists = [[1, 2], [3], [], [4, 5, 6]]
    r = from_list(lists)
    assert r[start::step].to_list() == lists[start::step]
    assert from_list([])[start::step].to_list() == []


def test_lengths_of_trusted_int32_offsets_do_not_wrap():
    """np.diff in int32: 2**31 - 1 then -2**31 gave a length of 1."""
    r = Ragged(np.array([0, 2**31 - 1, -2**31], np.int32), np.zeros(3), validate=False)
    assert r.lengths.tolist() == [2**31 - 1, -2**32 + 1]
    assert r.lengths.dtype == np.int64


@pytest.mark.parametrize("key", [True, False, np.True_, np.array(True)])
def test_a_bool_index_is_refused(key):
    """r[True] gave list 1 (NumPy reads a bool index as a mask)."""
    r = from_list([[1], [2, 3]])
    with pytest.raises(TypeError, match="index must be an int"):
        r[key]
    with pytest.raises(TypeError):
        r[key, 0]
    assert r[np.int8(1)].tolist() == [2, 3] and r[np.array(0)].tolist() == [1]


# -------------------------------------------------- 4. type strings
@pytest.mark.parametrize("s, column", [
    ("9999999999999999999 * int8", 1),            # 19 digits, past int64
    ("9223372036854775808 * int8", 1),
    ("2 * string[9223372036854775808]", 12),
])
def test_a_size_past_int64_is_refused(s, column):
    """19 digits passed the length check although the message says int64
    at most: the type parsed with a size NumPy cannot hold."""
    with pytest.raises(TypeStringError, match="too large") as info:
        parse(s)
    assert info.value.column == column
    assert str(parse("9223372036854775807 * int8")).startswith("9223372036854775807")


@pytest.mark.parametrize("unit", ["0s", "00s", "01ms"])
def test_a_time_count_of_zero_or_with_leading_zeros_is_refused(unit):
    """datetime64[0s] parsed, then from_string raised NumPy's bare
    OverflowError ("Integer overflow getting a common metadata divisor")."""
    with pytest.raises(TypeStringError, match="unknown time unit"):
        parse(f"2 * datetime64[{unit}]")
    assert str(parse("2 * datetime64[10s]")) == "2 * datetime64[10s]"


def test_a_record_field_named_empty_keeps_its_name():
    """from_string built the record with NumPy's list form, which renames a
    field "" to "f0": the view's type was {f0: int8}, not the one asked for."""
    t = '2 * {"": int8, a: int16}'
    v = from_string(t, bytes(6))
    assert v.dtype.names == ("", "a") and typeof(v) == t
    assert from_string("2 * (int8, int16)", bytes(6)).dtype.names == ("f0", "f1")


def test_a_strided_memoryview_buffer_is_named():
    """A BufferError from np.frombuffer came through, naming no buffer."""
    mv = memoryview(bytearray(32))[::2]
    with pytest.raises(ValueError, match=r"buffer 0 \(values of dimension 1\) is not C-contiguous"):
        from_string("2 * int64", mv)


# ------------------------------------------------- 5. from_list depth
def test_lists_nested_too_deep_are_refused_by_name():
    """600 levels raised a bare RecursionError."""
    x = 1
    for _ in range(600):
        x = [x]
    with pytest.raises(ValueError, match="nested more than 65 levels"):
        from_list([x])
    y = 1
    for _ in range(64):
        y = [y]
    assert from_list([y]).to_list() == [y]


def test_a_list_that_contains_itself_is_refused_not_looped_on():
    """from_list looped for ever on a list that contains itself."""
    a = []
    a.append(a)
    got = []

    def call():
        try:
            from_list([a])
        except ValueError as exc:
            got.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "from_list did not return"
    assert got and "contains itself" in str(got[0])


# ------------------------------------------- 6. generalized ufuncs
def test_a_gufunc_cannot_take_the_lists_axis():
    """np.matmul(r, r) with 1-D values gave one dot product of all the
    values (a float64 scalar)."""
    r = from_list([[1.0, 2.0], [3.0]])
    for f in (np.matmul, np.vecdot):
        with pytest.raises(TypeError, match="core dimensions"):
            f(r, r)
    fixed = Ragged(np.array([0, 2, 3]), np.arange(6.0).reshape(3, 2))
    got = np.vecdot(fixed, fixed)
    assert isinstance(got, Ragged) and got.to_list() == [[1.0, 13.0], [41.0]]


# ------------------------------------------- 7. awkward's BitMaskedArray
def test_a_bit_masked_array_longer_content_gives_its_own_length():
    """awkward lets a BitMaskedArray's content run past its length; the
    lists past it came out of from_awkward as extra lists (5 for 3)."""
    ak = pytest.importorskip("awkward")
    from nclx.types import from_awkward
    lists = ak.contents.ListOffsetArray(ak.index.Index64(np.array([0, 1, 3, 3, 4, 6])),
                                        ak.contents.NumpyArray(np.arange(6.0)))
    masked = ak.contents.BitMaskedArray(ak.index.IndexU8(np.array([0b101], np.uint8)), lists,
                                        valid_when=True, length=3, lsb_order=True)
    a = ak.Array(masked)
    r = from_awkward(a)
    assert len(r) == 3 and r.to_list() == a.tolist() == [[0.0], None, []]
    assert to_awkward(r).tolist() == a.tolist()


# ------------------------------------------- 8. record fields named ""
def test_an_arrow_struct_field_named_empty_comes_back():
    """from_arrow built the record with NumPy's list form, which renamed the
    field "" to "f0", then failed filling it: "no field of name "."""
    s = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array([3.0, 4.0])], names=["", "b"])
    arr = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), s)
    r = from_arrow(arr)
    assert r.values.dtype.names == ("", "b")
    assert to_arrow(r).to_pylist() == arr.to_pylist() == to_awkward(r).tolist()
    dup = pa.StructArray.from_arrays([pa.array([1]), pa.array([2.0])], names=["a", "a"])
    with pytest.raises(ValueError, match="field 'a' occurs more than once"):
        from_arrow(pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), dup))


def test_lists_whose_leaves_are_all_missing_hold_float64():
    # (found after the review: every leaf None gave int64 values, where
    # lists with no leaf at all give NumPy's default, float64, as documented)
    from nclx.types import from_list
    r = from_list([[None, None], []])
    assert r.values.dtype == np.float64
    assert r.to_list() == [[None, None], []]
    assert from_list([[None]], dtype=np.int8).values.dtype == np.int8
    assert from_list([[None, 2]]).values.dtype == np.int64


def test_a_ragged_nested_too_deep_by_hand_is_refused():
    # (found after the review: a Ragged nested 1000 deep by hand raised a bare
    # RecursionError in typeof, repr and to_list; from_list refused it already)
    r = Ragged(np.array([0, 1]), np.arange(1.0))
    for _ in range(63):
        r = Ragged(np.array([0, 1]), r)
    assert len(repr(r)) > 0 and r.to_list()           # 64 var dimensions work
    r = Ragged(np.array([0, 1]), r)                   # 65: from_list's limit
    with pytest.raises(ValueError, match="more than 64 var dimensions"):
        Ragged(np.array([0, 1]), r)
