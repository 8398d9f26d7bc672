"""serve_arrays / fetch_array: every fixed-width numeric dtype and shape,
compared with the NumPy array served (values, dtype, shape), zero copy on
shared memory, and the fixed-shape tensor schema on the wire."""
import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import RawClient, collect, wait_for

import nclx.ipc as ipc
from nclx.ipc import wire
from nclx.ipc.flatbuf import SCHEMA, parse_message

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (0,), (7,), (3, 4), (2, 0, 5), (2, 3, 4, 1)]


def _make(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "c":
        v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    else:
        v = rng.standard_normal(n).astype(dt)
    return v.reshape(shape)


@pytest.fixture(scope="module", params=["tcp", "shm"])
def served(request):
    arrays = {f"{d}-{i}": _make(d, s, i) for d in DTYPES for i, s in enumerate(SHAPES)}
    srv = ipc.serve_arrays(arrays, shm=request.param == "shm")
    yield srv, arrays, request.param
    srv.close()


def test_every_dtype_and_shape(served):
    srv, arrays, mode = served
    with ipc.Client(srv.uri) as c:
        for name, want in arrays.items():
            got = c.fetch_array(name)
            assert got.dtype == want.dtype, name
            assert got.shape == want.shape, name
            assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), name
            if want.dtype.kind in "fc":
                assert got.tobytes() == want.tobytes(), name       # bits, not just values
            if mode == "shm" and want.size:
                assert c.segment.contains(got.__array_interface__["data"][0]), name
                assert not got.flags.writeable
            del got
        collect()
    assert wait_for(lambda: srv.held() == 0)


def test_array_lease_follows_the_ndarray():
    a = np.arange(1000.0).reshape(10, 100)
    srv = ipc.serve_arrays({"a": a}, shm=True)
    try:
        got = ipc.fetch_array(srv.uri, "a")
        view = got[3:5]                       # a view keeps the segment lease
        del got
        collect()
        assert srv.held() > 0
        assert np.array_equal(view, a[3:5])
        del view
        collect()
        assert wait_for(lambda: srv.held() == 0 and not srv._conns)
    finally:
        srv.close()


def test_non_contiguous_and_byteswapped_are_copied_once():
    base = np.arange(60, dtype=np.int32).reshape(6, 10)
    cases = {"t": base.T, "s": base[::2, 1::3], "be": base.astype(">i4"),
             "f": np.asfortranarray(base)}
    srv = ipc.serve_arrays(cases)
    try:
        for name, a in cases.items():
            got = ipc.fetch_array(srv.uri, name)
            assert got.dtype == np.dtype("int32") and got.flags.c_contiguous
            assert np.array_equal(got, a)
    finally:
        srv.close()


def test_distarray_and_storage_blocks():
    dap = pytest.importorskip("nclx.dap")
    pytest.importorskip("mpi4py")
    import nclx.storage as st
    da = dap.DistArray.from_global(np.arange(24.0).reshape(4, 6))       # one rank
    s = st.zeros((3, 4), halo=((1, 1), (0, 0)))
    np.asarray(s)[...] = 7
    srv = ipc.serve_arrays({"da": da, "st": s, "local": da.local}, shm=True)
    try:
        assert np.array_equal(ipc.fetch_array(srv.uri, "da"), da.__distarray__()["buffer"])
        assert np.array_equal(ipc.fetch_array(srv.uri, "local"), np.asarray(da.local))
        assert np.array_equal(ipc.fetch_array(srv.uri, "st"), np.asarray(s))
    finally:
        srv.close()


@pytest.mark.parametrize("bad", [np.array(["a"]), np.array([object()]),
                                 np.array(["2020-01-01"], "M8[D]"), np.zeros(2, "V8"),
                                 np.zeros(2, [("a", "i4")]), np.zeros(2, np.longdouble)])
def test_unservable_dtypes(bad):
    with pytest.raises(TypeError, match="cannot serve"):
        ipc.serve_arrays({"x": bad})


def test_names_must_be_str():
    with pytest.raises(TypeError, match="names must be str"):
        ipc.serve_arrays({b"x": np.zeros(1)})


def test_tensor_schema_on_the_wire():
    """The schema message carries the canonical extension name and the
    metadata JSON; bool says so in the JSON and in the field metadata."""
    srv = ipc.serve_arrays({"b": np.zeros((2, 3), bool)})
    try:
        raw = RawClient(srv.uri)
        raw.want(b"b")
        frames = raw.read_stream()
        raw.close()
        meta = frames[0].payload[5:]
        assert parse_message(meta).header_type == SCHEMA
        assert b"arrow.fixed_shape_tensor" in meta
        assert b'"shape": [2, 3], "nclx:dtype": "bool"' in meta
        body = next(f for f in frames if f.kind == wire.KIND_TAGGED).payload
        assert len(body) >= 6
        t = ipc.fetch(srv.uri, "b")
        f = t.schema.field(0)
        assert isinstance(f.type, pa.FixedShapeTensorType) and f.type.shape == [2, 3]
        assert f.type.value_type == pa.uint8() and f.metadata[b"nclx:dtype"] == b"bool"
    finally:
        srv.close()


def test_table_to_array_rejects_other_tables():
    with pytest.raises(ipc.ProtocolError, match="one column"):
        ipc.table_to_array(pa.table({"a": [1], "b": [2]}))
    with pytest.raises(ipc.ProtocolError, match="not arrow.fixed_shape_tensor"):
        ipc.table_to_array(pa.table({"a": [1]}))
    two = pa.concat_tables([ipc.array_to_table(np.arange(3))] * 2)
    with pytest.raises(ipc.ProtocolError, match="one row, the table has 2"):
        ipc.table_to_array(two)
    t = ipc.array_to_table(np.array([0, 1, 2], np.uint8))
    f = t.schema.field(0).with_metadata({**t.schema.field(0).metadata, b"nclx:dtype": b"bool"})
    bad = pa.ipc.open_stream(_serialize(pa.Table.from_arrays(t.columns, schema=pa.schema([f]))))
    with pytest.raises(ipc.ProtocolError, match="values other than 0 and 1"):
        ipc.table_to_array(bad.read_all())


def _serialize(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()
