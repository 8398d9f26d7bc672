"""Review 21 of nclx.types (each test failed before its fix):

- T1: ``from_strings``/``from_list`` of a str and bytes mix raised a bare
  StopIteration (a RuntimeError inside a generator); np.str_ items too;
- T2: ``Ragged ==``/``!=`` where the ufunc has no loop (structured values, a
  datetime against a number) raised UFuncTypeError where NumPy compares;
- T3: ``to_arrow`` sent NaT as int64's minimum, a valid timestamp (its
  ``to_pylist`` raised OverflowError); now a null, as pyarrow makes it;
- T4: ``arrmeta``'s memory block of a storage (no buffer protocol) was the
  first element's address plus nbytes: padded rows and reversed views lay
  outside it;
- T5: ``Record`` with more fields than names, ``Dim`` sizes of bool, float or
  past int64 built types whose ``str`` did not parse back (or dropped a field);
- T6: ``from_string`` of a masked array buffer raised NumPy's reshape error
  naming no buffer; an np.matrix buffer gave a 2-D matrix for a 1-D type;
- T7: ``from_list`` of mixed numbers and strings depended on the order of the
  leaves ([1, 'a'] as NumPy, ['a', 1] a TypeError).
"""
import datetime as dt

import numpy as np
import pytest

from nclx.types import (Dim, Ragged, Record, Scalar, arrmeta, from_list, from_string,
                        from_strings, parse)


# ------------------------------------------------------------ T1
@pytest.mark.parametrize("items", [["a", b"b"], [b"a", None, "b"], [np.str_("a"), b"b"]])
def test_t1_str_bytes_mix_is_a_type_error(items):
    with pytest.raises(TypeError, match=r"strings\[\d\] is a bytes|strings\[\d\] is a str"):
        from_strings(items)
    with pytest.raises(TypeError, match=r"not a mix"):
        from_list([items])


def test_t1_numpy_str_items_are_strings():
    assert from_strings([np.str_("ab"), None, "c"]).to_list() == ["ab", None, "c"]
    assert from_list([[np.str_("x"), "y"]]).to_list() == [["x", "y"]]


# ------------------------------------------------------------ T2
def test_t2_structured_equality_as_numpy():
    sv = np.array([(1, 2.5), (3, np.nan)], dtype=[("x", "i4"), ("y", "f8")])
    r = Ragged(np.array([0, 2]), sv)
    assert (r == r).to_list() == [list(sv == sv)]
    assert (r != r).to_list() == [list(sv != sv)]


def test_t2_datetime_against_number_as_numpy():
    v = np.array(["NaT", "2020-01-01"], "M8[s]")
    r = Ragged(np.array([0, 1, 2]), v)
    eq, ne = r == 1, r != 1
    assert isinstance(eq, Ragged) and eq.to_list() == [[x] for x in (v == 1)]
    assert ne.to_list() == [[x] for x in (v != 1)]


def test_t2_lists_still_checked():
    a = Ragged(np.array([0, 2]), np.zeros(2, [("x", "i4")]))
    b = Ragged(np.array([0, 1, 2]), np.zeros(2, [("x", "i4")]))
    with pytest.raises(ValueError, match="different list lengths"):
        a == b


# ------------------------------------------------------------ T3
@pytest.mark.parametrize("dtype", ["M8[s]", "M8[ns]", "m8[ms]", "M8[D]"])
def test_t3_nat_goes_to_arrow_as_null(dtype):
    pytest.importorskip("pyarrow")
    from nclx.types import to_arrow
    v = np.array([0, np.iinfo(np.int64).min, 5000]).view(dtype)
    a = to_arrow(Ragged(np.array([0, 3]), v))
    assert a.values.null_count == 1
    assert a.to_pylist()[0][1] is None
    assert a.to_pylist()[0][0] is not None


def test_t3_nat_and_a_mask_combine():
    pytest.importorskip("pyarrow")
    from nclx.types import to_arrow
    v = np.ma.masked_array(np.array(["2020-01-01", "NaT", "2020-01-02"], "M8[s]"),
                           mask=[True, False, False])
    out = to_arrow(Ragged(np.array([0, 3]), v)).to_pylist()
    assert out == [[None, None, dt.datetime(2020, 1, 2)]]


# ------------------------------------------------------------ T4
def _extent(x):
    ai = x.__array_interface__
    offs = [(n - 1) * k for n, k in zip(ai["shape"], ai["strides"])]
    lo = ai["data"][0] + sum(o for o in offs if o < 0)
    return lo, ai["data"][0] + sum(o for o in offs if o > 0) + np.dtype(ai["typestr"]).itemsize


@pytest.mark.parametrize("make", [
    lambda st: st.zeros((3, 4), halo=1, alignment_size=64),
    lambda st: st.zeros((3, 4))[::-1],
    lambda st: st.zeros((5, 6), alignment_size=64)[::-2, ::-1],
])
def test_t4_storage_block_covers_its_elements(make):
    import nclx.storage as st
    x = make(st)
    b = arrmeta(x).data_block
    lo, hi = _extent(x)
    assert b.address <= lo and hi <= b.address + b.size


def test_t4_empty_storage_block_is_empty():
    import nclx.storage as st
    assert arrmeta(st.zeros((0, 4))).data_block.size == 0


# ------------------------------------------------------------ T5
def test_t5_record_names_match_fields():
    with pytest.raises(ValueError, match="1 names for 2 fields"):
        Record((Scalar("int32"), Scalar("int64")), ("x",))
    with pytest.raises(TypeError, match="tuple of Types"):
        Record((Scalar("int32"), "int64"), ("x", "y"))
    assert str(Record((Scalar("int32"),), ("x",))) == "{x: int32}"


@pytest.mark.parametrize("size,exc", [(True, TypeError), (2.5, TypeError), ("3", TypeError),
                                      (2 ** 63, ValueError), (-1, ValueError)])
def test_t5_dim_size_is_an_int64(size, exc):
    with pytest.raises(exc, match="dimension size"):
        Dim("fixed", Scalar("int32"), size)


def test_t5_dim_size_numpy_int_round_trips():
    d = Dim("fixed", Scalar("int8"), np.int64(2 ** 63 - 1))
    assert type(d.size) is int and parse(str(d)) == d
    with pytest.raises(TypeError, match="element must be a Type"):
        Dim("var", "int32")


# ------------------------------------------------------------ T6
def test_t6_masked_buffer_is_named():
    buf = np.ma.masked_array(np.arange(2, dtype="i4"), [1, 0])
    with pytest.raises(TypeError, match=r"buffer 0 .* is a masked array"):
        from_string("2 * int32", buf)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_t6_matrix_buffer_reads_as_its_bytes():
    out = from_string("4 * int32", np.matrix(np.arange(4, dtype="i4").reshape(2, 2)))
    assert type(out) is np.ndarray and out.shape == (4,)
    assert out.tobytes() == np.arange(4, dtype="i4").tobytes()


# ------------------------------------------------------------ T7
def test_t7_mixed_leaves_in_any_order_as_numpy():
    assert from_list([[1, "a"]]).to_list() == [list(np.array([1, "a"]))]
    assert from_list([["a", 1]]).to_list() == [list(np.array(["a", 1]))]
    assert from_list([["a", None], [2]]).to_list()[1] == [str(np.array(["a", 2])[1])]
