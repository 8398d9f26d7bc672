"""typeof equals awkward's spelling of the equivalent value, on generated data."""
import awkward as ak
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from nclx.types import Ragged, from_list, from_strings, parse, to_awkward, typeof
from types_strategies import ak_type, arrow_arrays, arrow_types, nested_lists, values_of

NUMERIC = st.one_of(hnp.integer_dtypes(endianness="="), hnp.unsigned_integer_dtypes(endianness="="),
                    hnp.floating_dtypes(endianness="="), hnp.complex_number_dtypes(endianness="="),
                    hnp.boolean_dtypes(), hnp.datetime64_dtypes(endianness="="),
                    hnp.timedelta64_dtypes(endianness="="))


def check(x, expected=None):
    mine = typeof(x)
    assert str(parse(mine)) == mine
    if expected is None:
        try:
            expected = ak_type(x)
        except (ValueError, AssertionError):
            # awkward's own converters fail on a few inputs (a zero-size
            # fixed_size_list column of a table, a masked array with a 0 in
            # its shape): nothing to compare with
            return mine
    assert mine == expected
    return mine


def _has_leaf(data):
    return any(_has_leaf(x) if isinstance(x, list) else x is not None for x in data or [])


@given(hnp.arrays(NUMERIC, hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3)))
def test_ndarray(a):
    check(a)


@given(hnp.arrays(NUMERIC, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)),
       st.data())
def test_masked_array(a, data):
    mask = data.draw(hnp.arrays(np.bool_, a.shape))
    check(np.ma.masked_array(a, mask=mask))


STRUCT = hnp.array_dtypes(subtype_strategy=st.one_of(hnp.integer_dtypes(endianness="="),
                                                     hnp.floating_dtypes(endianness="=")),
                          min_size=1, max_size=3,
                          allow_subarrays=True)


@given(STRUCT, st.integers(0, 4))
def test_structured_1d(dtype, n):
    check(np.zeros(n, dtype=dtype))


@given(STRUCT, hnp.array_shapes(min_dims=2, max_dims=3, max_side=3))
def test_structured_nd_keeps_dynd_spelling(dtype, shape):
    # documented exception: awkward moves the dims into the fields
    a = np.zeros(shape, dtype=dtype)
    inner = str(parse(typeof(np.zeros(1, dtype=dtype)))).split(" * ", 1)[1]
    assert typeof(a) == " * ".join(map(str, shape)) + " * " + inner


@given(NUMERIC.filter(lambda d: d.itemsize > 1))
def test_byte_order_is_not_part_of_the_type(dtype):
    # awkward rejects non-native data; nclx spells the value type the same
    a = np.zeros(3, dtype=dtype)
    assert typeof(a.astype(dtype.newbyteorder())) == typeof(a)


def test_zero_d_and_strings():
    assert typeof(np.array(5, dtype=np.int16)) == "int16"
    assert typeof(np.float32(1)) == "float32"
    check(np.array(["ab", "c"]))
    check(np.array([b"ab", b"c"]))


@given(arrow_arrays())
def test_arrow_array(arr):
    check(arr)
    check(pa.chunked_array([arr, arr]))


@given(st.lists(arrow_arrays(max_len=3), min_size=0, max_size=3), arrow_types())
def test_arrow_chunked_mixed_validity(chunks, t):
    # chunks of one type, some with and some without validity buffers
    if chunks:
        t = chunks[0].type
        chunks = [c for c in chunks if c.type == t]
    check(pa.chunked_array(chunks, type=t))


@given(st.lists(st.tuples(arrow_types(max_leaves=2), st.booleans()), min_size=1, max_size=3),
       st.integers(0, 4), st.data())
def test_arrow_table(fields, n, data):
    schema = pa.schema([pa.field(f"c{i}", t, nullable=nb) for i, (t, nb) in enumerate(fields)])
    cols = [pa.array(data.draw(st.lists(values_of(f.type, f.nullable), min_size=n, max_size=n)),
                     type=f.type) for f in schema]
    table = pa.Table.from_arrays(cols, schema=schema)
    check(table)
    check(table.to_batches()[0] if table.num_rows else table)


@given(nested_lists())
def test_awkward_from_lists(data):
    check(ak.Array(data))


@given(nested_lists(none=False))
def test_ragged_equals_awkward(data):
    r = from_list(data)
    if not _has_leaf(data):
        # no leaf to take a dtype from: awkward says 'unknown', nclx float64 (NumPy's default)
        assert typeof(r).endswith("float64")
        return
    assert typeof(r) == str(ak.type(to_awkward(r)))
    assert typeof(r) == str(ak.type(ak.Array(data)))


@given(nested_lists(depth=1))
def test_ragged_with_missing(data):
    r = from_list(data)
    assert typeof(r) == str(ak.type(to_awkward(r)))
    if _has_leaf(data):
        assert typeof(r) == str(ak.type(ak.Array(data)))


@pytest.mark.parametrize("data, expected", [
    ([[1], [2, 3]], "2 * var * int64"),
    ([[[1.0]], [[], [2.5]]], "2 * var * var * float64"),
    ([[1], None, [2]], "3 * option[var * int64]"),
    ([[1, None]], "1 * var * ?int64"),
])
def test_ragged_spellings(data, expected):
    assert typeof(from_list(data)) == expected


def test_strings_and_fixed_inner_dims():
    assert typeof(from_strings(["a", "bc", "", "d", "e"][:4])) == "4 * string"
    assert typeof(from_strings(["a", None])) == "2 * ?string"
    assert typeof(from_strings([b"a"])) == "1 * bytes"
    r = Ragged(np.array([0, 1, 3]), np.zeros((3, 2), np.uint8))
    assert typeof(Ragged(np.array([0, 1, 3, 3]), r.values)) == "3 * var * 2 * uint8"
    assert typeof(r) == str(ak.type(to_awkward(r)))


def test_storage_and_distarray():
    import nclx.storage as gs
    s = gs.zeros((3, 4), dtype=np.float32, aligned_index=(1, 1))
    assert typeof(s) == "3 * 4 * float32"
    mpi = pytest.importorskip("mpi4py.MPI", reason="DistArray needs mpi4py")
    from nclx.dap import DistArray
    da = DistArray.from_shape((6, 2), dtype=np.int32, comm=mpi.COMM_SELF)
    assert typeof(da) == typeof(da.local) == typeof(np.asarray(da.local))


def test_arrays_known_by_their_protocol():
    block = np.zeros((4, 3), np.int16)

    class Dap:
        def __distarray__(self):
            return {"__version__": "1.0.0", "buffer": block, "dim_data": ()}
    assert typeof(Dap()) == "4 * 3 * int16"
    iface = dict(np.zeros((2, 5), ">f4").__array_interface__)
    device_only = type("DeviceOnly", (), {"__gt_data_interface__": {"gpu": iface}})()
    assert typeof(device_only) == "2 * 5 * float32"
    rec = np.zeros(3, [("x", np.int32), ("y", np.float64)])
    plain = type("Plain", (), {"__array_interface__": rec.__array_interface__})()
    assert typeof(plain) == "3 * {x: int32, y: float64}"


def test_unsupported_raise_clearly():
    with pytest.raises(TypeError, match="object"):
        typeof(np.array([object()]))
    with pytest.raises(TypeError, match="no datashape type"):
        typeof({"a": 1})
    with pytest.raises(TypeError, match="decimal"):
        typeof(pa.array([1], type=pa.decimal128(5, 2)))


@pytest.mark.parametrize("arr", [
    pa.array(["a", "b", "a"]).dictionary_encode(),
    pa.array([None, None]),
    pa.chunked_array([], type=pa.int64()),
    pa.array([b"ab"], type=pa.binary(2)),
    pa.array([1, 2], type=pa.time32("s")),
    pa.array([1, 2], type=pa.duration("us")),
    pa.array([1, 2], type=pa.timestamp("s", tz="UTC")),
    pa.array([{"x": 1}, None]),
    pa.table({"a": []}),
    pa.array([[1, 2]], type=pa.list_(pa.field("item", pa.int64(), nullable=False))),
])
def test_arrow_corners(arr):
    check(arr)


def test_zero_size_fixed_list_keeps_its_length():
    # awkward's RegularArray of size 0 reads back with length 0; nclx keeps the length
    arr = pa.array([[]], type=pa.list_(pa.int8(), 0))
    assert typeof(arr) == "1 * 0 * ?int8"
    assert str(ak.type(ak.from_arrow(arr))) == "0 * 0 * ?int8"


def test_fixed_shape_tensor_spells_its_shape():
    # awkward cannot read the extension type (it asserts); nclx gives the tensor shape
    arr = pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((2, 3, 4), np.float32))
    assert typeof(arr) == "2 * 3 * 4 * float32"


def test_awkward_corners():
    check(ak.Array([1, "a"]))
    check(ak.Array([{"a b": 1, "c": None}]))
    check(ak.Array([(1, 2.0)]))
    check(ak.Array([]))
    check(ak.from_numpy(np.zeros((2, 0, 3))))
    check(ak.Array([[1, 2], [3]])[:, :1])
    check(ak.from_arrow(pa.array(["a", "b"]).dictionary_encode()))
    with pytest.raises(TypeError, match="parameters"):
        typeof(ak.with_parameter(ak.Array([[1]]), "x", 1))


def test_an_exported_aligned_record_keeps_its_dtype():
    """An aligned record's __array_interface__ lists its padding as a
    nameless V field; typeof and arrmeta of an exporter (a storage) read the
    record as exported, not the padding as a field."""
    import nclx.storage as ns
    from nclx.types import arrmeta
    dt = np.dtype([("a", "i1"), ("b", "f8")], align=True)
    s = ns.zeros((3,), dtype=dt)
    assert str(typeof(s)) == str(typeof(np.zeros(3, dt))) == "3 * {a: int8, b: float64}"
    assert arrmeta(s) is not None


def test_interface_dtype_reads_padding_and_nesting():
    from nclx.types.datashape import interface_dtype
    for dt in (np.dtype([("a", "i1"), ("b", "f8")], align=True),
               np.dtype([("x", "u1"), ("y", [("p", "i2"), ("q", "f4")]), ("z", "f8", (2,))],
                        align=True),
               np.dtype("<i4"), np.dtype([("a", "<f8")])):
        got = interface_dtype(np.zeros(2, dt).__array_interface__)
        assert got.itemsize == dt.itemsize and got.names == dt.names
        if dt.names:
            assert [got.fields[n][1] for n in got.names] == [dt.fields[n][1] for n in dt.names]


def test_an_unusable_protocol_is_a_typeerror_naming_it():
    """An exporter whose protocol raises or is malformed: TypeError naming
    the protocol and the type (not the object's own error)."""
    from nclx.types import arrmeta

    class Raises:
        @property
        def __array_interface__(self):
            raise RuntimeError("boom")

    class NotADict:
        __gt_data_interface__ = [1, 2]

    with pytest.raises(TypeError, match=r"Raises\.__array_interface__ is unusable: RuntimeError: boom"):
        typeof(Raises())
    with pytest.raises(TypeError, match=r"NotADict\.__gt_data_interface__ is unusable"):
        typeof(NotADict())
    with pytest.raises(TypeError, match=r"NotADict\.__gt_data_interface__ is a list"):
        arrmeta(NotADict())


def test_an_empty_data_interface_falls_back_to_the_array_interface():
    from nclx.types import arrmeta
    base = np.arange(3.0)

    class Empty:
        __gt_data_interface__ = {}
        __array_interface__ = base.__array_interface__
    assert str(typeof(Empty())) == "3 * float64"
    assert arrmeta(Empty()) is not None
