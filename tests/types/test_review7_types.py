"""Regression tests of review 7 of nclx.types: datetime64 through Arrow,
trusted offsets before allocation, list<bool> with nulls, a summarised
repr, arrmeta after an in-place layout change, option types through Arrow."""
import datetime as dt
import tracemalloc
import warnings

import numpy as np
import pyarrow as pa
import pytest

from nclx.types import (Ragged, arrmeta, arrmeta_address_of, arrmeta_struct_of, from_arrow,
                        from_list, from_strings, to_arrow)


# ------------------------------------------- 1. datetime64 <-> Arrow dates
def test_datetime64_days_go_to_arrow_date32_day_by_day():
    days = np.array(["2020-01-02", "2038-05-05", "1900-03-04"], "M8[D]")
    r = Ragged(np.array([0, 1, 3]), days)
    a = to_arrow(r)
    assert a.type == pa.large_list(pa.date32())
    assert a.to_pylist() == [[dt.date(2020, 1, 2)], [dt.date(2038, 5, 5), dt.date(1900, 3, 4)]]
    back = from_arrow(a)
    assert back.values.dtype == np.dtype("M8[D]")
    assert back.values.tobytes() == days.tobytes()


def test_arrow_date32_comes_back_as_datetime64_days():
    dates = [dt.date(2020, 1, 2), dt.date(2021, 6, 7), dt.date(1999, 1, 1), dt.date(2000, 2, 2)]
    a = pa.array([[d] for d in dates], pa.list_(pa.date32())).slice(0, 2)
    got = from_arrow(a)
    assert got.to_list() == [[dates[0]], [dates[1]]]
    assert got.values.dtype == np.dtype("M8[D]")
    assert got.values.tobytes() == np.array(dates, "M8[D]").tobytes()
    assert str(got.type) == "2 * var * datetime64[D]"


@pytest.mark.parametrize("kind", ["M", "m"])
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_datetime64_and_timedelta64_units_round_trip_bit_for_bit(kind, unit):
    values = np.array([0, 1, -5, 1234567890123, np.iinfo(np.int64).max]).view(f"{kind}8[{unit}]")
    r = Ragged(np.array([0, 2, 5], np.int32), values)
    a = to_arrow(r)
    want = pa.timestamp(unit) if kind == "M" else pa.duration(unit)
    assert a.type == pa.list_(want)
    back = from_arrow(a)
    assert back.values.dtype == values.dtype and back.values.tobytes() == values.tobytes()


def test_arrow_date64_time_and_zoned_timestamps_read_by_their_layout():
    d64 = pa.array([[dt.date(2020, 1, 2), dt.date(1960, 12, 31)]], pa.list_(pa.date64()))
    assert from_arrow(d64).values.tobytes() == \
        np.array(["2020-01-02", "1960-12-31"], "M8[D]").astype("M8[ms]").tobytes()
    t32 = pa.array([[dt.time(1, 2, 3)]], pa.list_(pa.time32("s")))
    assert from_arrow(t32).values.tobytes() == np.array([3723], "M8[s]").tobytes()
    t64 = pa.array([[dt.time(0, 0, 1, 5)]], pa.list_(pa.time64("us")))
    assert from_arrow(t64).values.tobytes() == np.array([1_000_005], "M8[us]").tobytes()
    tz = pa.array([[0, 86_400]], pa.list_(pa.timestamp("s", tz="UTC")))
    assert from_arrow(tz).values.tobytes() == np.array([0, 86_400], "M8[s]").tobytes()


@pytest.mark.parametrize("dtype", ["M8[h]", "M8[m]", "M8[Y]", "M8[W]", "M8[10s]", "m8[D]",
                                   "m8[h]", "M8[ps]"])
def test_datetime64_units_arrow_cannot_hold_are_refused(dtype):
    r = Ragged(np.array([0, 1]), np.zeros(1, np.int64).view(dtype))
    with pytest.raises(TypeError, match=r"values have no Arrow type"):
        to_arrow(r)


def test_datetime64_days_out_of_date32_range_are_refused_unless_masked():
    days = np.array(["2020-01-02", "NaT"], "M8[D]")
    # NaT is a null, as pyarrow makes it (review 21; it was refused here before)
    assert to_arrow(Ragged(np.array([0, 2]), days)).to_pylist() == [[dt.date(2020, 1, 2), None]]
    far = np.array([0, 2 ** 40], np.int64).view("M8[D]")
    with pytest.raises(ValueError, match="value 1 .* has no date32 day"):
        to_arrow(Ragged(np.array([0, 2]), far))
    masked = Ragged(np.array([0, 2]), np.ma.masked_array(days, mask=[False, True]))
    assert to_arrow(masked).to_pylist() == [[dt.date(2020, 1, 2), None]]


# ------------------------------------------------- 2. trusted offsets
def test_take_checks_trusted_offsets_before_allocating():
    r = Ragged(np.array([0, 3, 2 ** 31 - 1], np.int32), np.arange(6), validate=False)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"list 1: offsets 3\.\.2147483647 leave the values "
                                             r"\(length 6\)"):
            r[np.array([1])]
        with pytest.raises(ValueError, match="list 1: offsets 3..2147483647"):
            r.take([0, 1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20                     # nothing sized from the bad offsets
    assert r[np.array([0])].to_list() == [[0, 1, 2]]     # the sound list is still taken


def test_take_of_a_list_past_the_values_is_the_reductions_valueerror():
    # (the old code gathered 2**20 positions and failed with NumPy's IndexError)
    r = Ragged(np.array([0, 3, 2 ** 20]), np.arange(6), validate=False)
    with pytest.raises(ValueError, match=r"list 1: offsets 3\.\.1048576 leave the values"):
        r[np.array([False, True])]
    with pytest.raises(ValueError, match=r"list 1: offsets 3\.\.1048576 leave the values"):
        r.sum()


def test_reduction_errors_name_the_offsets_as_given():
    r = Ragged(np.array([-2, 1, 3]), np.arange(6), validate=False)
    with pytest.raises(ValueError, match=r"^list 0: offsets -2\.\.1 leave the values "
                                         r"\(length 6\)"):
        r.sum()
    shifted = Ragged(np.array([1, 5, 2]), np.arange(6.0), validate=False)
    with pytest.raises(ValueError, match=r"^list 1: offsets 5\.\.2 run backwards"):
        shifted.max()
    with pytest.raises(ValueError, match=r"^list 0: offsets -2\.\.1"):
        r[:, 0]


# --------------------------------------------- 3. list<bool> with nulls
def test_bool_values_with_nulls_come_back_from_arrow():
    r = Ragged(np.array([0, 1, 3]), np.ma.masked_array([True, False, True], mask=[0, 1, 0]))
    back = from_arrow(to_arrow(r))
    assert back.to_list() == [[True], [None, True]]
    assert back.values.dtype == np.bool_
    assert np.ma.getmaskarray(back.values).tobytes() == np.array([0, 1, 0], bool).tobytes()
    assert back.values.data[[0, 2]].tobytes() == np.array([True, True]).tobytes()


def test_bool_values_read_from_a_bitmap_that_starts_mid_byte():
    a = pa.array([[False], [True, None, True, False, True, False, True, False, True]]).slice(1)
    back = from_arrow(a)
    assert back.to_list() == a.to_pylist()
    want = np.array([True, False, True, False, True, False, True, False, True])
    got = back.window()[0]
    assert got.data[[0, 2, 3, 4, 5, 6, 7, 8]].tobytes() == want[[0, 2, 3, 4, 5, 6, 7, 8]].tobytes()


# ------------------------------------------ 6. option types through Arrow
def test_masked_values_with_nothing_masked_stay_an_option_type():
    values = np.ma.masked_array([1.0, 2.0, 3.0], mask=False)
    r = Ragged(np.array([0, 1, 3]), values)
    a = to_arrow(r)
    assert a.values.buffers()[0] is not None and a.values.null_count == 0
    back = from_arrow(a)
    assert str(back.type) == str(r.type) == "2 * var * ?float64"
    assert isinstance(back.values, np.ma.MaskedArray)
    assert back.values.data.tobytes() == values.data.tobytes()
    assert not np.ma.getmaskarray(back.values).any()


def test_plain_values_stay_plain_through_arrow():
    r = Ragged(np.array([0, 1, 3]), np.array([1.0, 2.0, 3.0]))
    back = from_arrow(to_arrow(r))
    assert str(back.type) == "2 * var * float64" and not isinstance(back.values, np.ma.MaskedArray)
    # Arrow data: the validity buffer decides, not the null count
    assert str(from_arrow(pa.array([[1.0, None], [2.0]])[1:]).type) == "1 * var * ?float64"
    assert str(from_arrow(pa.array([[1.0], [2.0]])).type) == "2 * var * float64"


def test_masked_values_with_fixed_dimensions_keep_their_mask_at_the_leaves():
    data = np.arange(6.0).reshape(3, 2)
    for mask in ([[0, 1], [0, 0], [0, 0]], False):
        r = Ragged(np.array([0, 1, 3]), np.ma.masked_array(data, mask=mask))
        back = from_arrow(to_arrow(r))
        assert str(back.type) == str(r.type) == "2 * var * 2 * ?float64"
        assert back.to_list() == r.to_list()
        assert np.ma.getmaskarray(back.values).tobytes() == \
            np.ma.getmaskarray(r.values).tobytes()
        assert back.values.data.tobytes() == data.tobytes()


def test_record_fields_with_a_validity_buffer_but_no_null_still_make_a_record():
    x = pa.Array.from_buffers(pa.int32(), 2, [pa.py_buffer(b"\x03"),
                                              pa.py_buffer(np.array([1, 2], np.int32))])
    s = pa.StructArray.from_arrays([x], names=["x"])
    a = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), s)
    back = from_arrow(a)
    assert back.values.dtype == np.dtype([("x", np.int32)])
    assert back.values["x"].tobytes() == np.array([1, 2], np.int32).tobytes()


# ------------------------------------------------- 4. a summarised repr
def test_repr_reads_a_bounded_number_of_values():
    values = np.arange(2_000_000, dtype=np.float64)
    r = Ragged(np.array([0, len(values) - 1, len(values)]), values)
    repr(r[1:])                             # lazy imports (numpy.ma) done before measuring
    tracemalloc.start()
    try:
        text = repr(r)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text == ("Ragged([[0.0, 1.0, 2.0, ..., 1999996.0, 1999997.0, 1999998.0], [1999999.0]], "
                    "type='2 * var * float64')")
    assert peak < 256 << 10                # the old repr built 2 million Python floats


def test_repr_shows_both_ends_of_the_lists_strings_and_fixed_dimensions():
    r = from_list([[i] for i in range(10)])
    assert repr(r) == "Ragged([[0], [1], [2], ..., [7], [8], [9]], type='10 * var * int64')"
    small = Ragged(np.array([0, 1, 4, 6]), np.arange(6))
    assert repr(small) == "Ragged([[0], [1, 2, 3], [4, 5]], type='3 * var * int64')"
    assert repr(from_list([[1.5, None], None])) == \
        "Ragged([[1.5, None], None], type='2 * option[var * ?float64]')"
    s = from_strings(["a" * 40 + "é" * 40, None, "abc"])
    assert repr(s) == ("Ragged([" + repr("a" * 32) + "..." + repr("é" * 16) + ", None, 'abc'], "
                       "type='3 * ?string')")
    fixed = Ragged(np.array([0, 1]), np.arange(10).reshape(1, 10))
    assert repr(fixed) == "Ragged([[[0, 1, 2, ..., 7, 8, 9]]], type='1 * var * 10 * int64')"
    nested = from_list([[[1, 2, 3, 4, 5, 6, 7]]])
    assert repr(nested) == "Ragged([[[1, 2, 3, ..., 5, 6, 7]]], type='1 * var * var * int64')"


# ---------------------------------- 5. arrmeta after an in-place change
def _set(obj, name, value):
    """``obj.name = value``: NumPy 2.5 deprecates setting an array's shape
    and dtype in place, which users' code still does (and arrmeta follows)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        setattr(obj, name, value)


def test_arrmeta_follows_a_shape_changed_in_place():
    a = np.arange(6, dtype=np.int32)
    assert arrmeta(a).type == "6 * int32" and arrmeta_struct_of(a).size == 6
    _set(a, "shape", (2, 3))
    assert arrmeta(a).type == "2 * 3 * int32"
    s = arrmeta_struct_of(a)
    assert (s.size, s.stride, s.element.size, s.element.stride) == (2, 12, 3, 4)
    assert arrmeta(a) is arrmeta(a)          # cached again under the new layout


def test_arrmeta_follows_dtype_data_and_flags_changed_in_place():
    a = np.zeros(4, np.int64)
    arrmeta(a)
    _set(a, "dtype", np.int32)             # a view of the same bytes as 8 int32
    assert arrmeta(a).type == "8 * int32" and arrmeta_struct_of(a).stride == 4
    m = np.ma.masked_array([1.0, 2.0])
    assert arrmeta(m).root.element.mask_kind == "bytemask"
    m.mask = [False, True]                    # nomask -> a mask array of its own
    block = arrmeta(m).root.element.block
    assert block.address == np.ma.getmaskarray(m).ctypes.data
    ro = np.arange(3)
    assert arrmeta(ro).flags == 3
    ro.flags.writeable = False
    assert arrmeta(ro).flags == 5


def test_arrmeta_of_an_unchanged_object_stays_at_one_address():
    a = np.arange(10)
    addr = arrmeta_address_of(a)
    a[3] = 7                                   # values are no part of the layout
    assert arrmeta_address_of(a) == addr
    r = from_list([[1, 2], [3]])
    assert arrmeta_address_of(r) == arrmeta_address_of(r)
    _set(r.values, "shape", (3, 1))         # a Ragged's parts are looked at too
    assert arrmeta(r).type == "2 * var * 1 * int64"
    s = from_strings(["x", "yz"])
    assert arrmeta(s) is arrmeta(s)
