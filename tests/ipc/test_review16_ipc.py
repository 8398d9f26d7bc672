"""Defects a hostile-peer review (review 16) found in nclx.ipc's parsing
and in ``nclx.types.to_arrow``; each test failed before its fix unless it
says it guards behaviour that was already right (the server's connection
cap, idle timeout and fork handling: test_review16_ipc_conns.py):

* an unknown URI query parameter (a typo: ``remote_hndle``) was ignored;
* a batch could claim 2**62 rows of arrays that hold no bytes per element
  (null, empty struct, fixed_size_binary(0), run-end encoded, a
  large_list's null values): the client built the table, and to_numpy /
  to_pylist of it ran out of memory or never ended;
* with a socket above descriptor 1023 the client's check for data after a
  stream (select(): ValueError) was skipped;
* ``to_arrow`` of complex (and float128, fixed-width str) values raised
  pyarrow's ArrowNotImplementedError / a ValueError about buffer counts.
"""
import os
import re
import resource
import struct
import time

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import FakeServer, body_frame, drain, eos_frame, meta_frame

import nclx.ipc as ipc
import nclx.types as nt
from nclx.ipc import decode, reassembly, wire
from nclx.ipc.errors import ProtocolError
from nclx.ipc.flatbuf import SCHEMA, parse_message
from nclx.ipc.uri import parse_uri

T = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
HUGE = 1 << 62

# ------------------------------------------------------------------ URIs
@pytest.mark.parametrize("query, name, hint", [
    ("want_data=1&free_data=2&remote_hndle=YWJj", "remote_hndle", "remote_handle"),
    ("want_data=1&fre_data=2", "fre_data", "free_data"),
    ("want_data=1&wantdata", "wantdata", "want_data"),
    ("want_data=1&color=red", "color", None)])
def test_an_unknown_uri_parameter_is_named(query, name, hint):
    uri = f"tcp://127.0.0.1:1?{query}"
    with pytest.raises(ValueError, match=f"unknown parameter '{name}'") as info:
        parse_uri(uri)
    assert ("did you mean" in str(info.value)) == (hint is not None)
    if hint:
        assert f"did you mean '{hint}'" in str(info.value)
    with pytest.raises(ValueError, match=f"unknown parameter '{name}'"):
        ipc.Client(uri)                            # before connecting
    with pytest.raises(ValueError, match=f"unknown parameter '{name}'"):
        ipc.Server({}, uri=f"tcp://127.0.0.1:0?{query.replace('want_data=1&', '')}")


def test_the_known_parameters_still_parse():
    assert parse_uri("tcp://h:1?want%5Fdata=3").want_data == 3       # percent-decoded key
    with ipc.Server({"t": T}, shm=True) as srv:
        assert parse_uri(srv.uri).segment == srv.segment.name
        assert ipc.fetch(srv.uri, "t").equals(T)


# ------------------------------------------------- lengths without bytes
def _unbacked(kind, n):
    """A one-column table whose column claims ``n`` elements in (almost) no
    bytes; pyarrow builds it without allocating them."""
    null = pa.Array.from_buffers(pa.null(), n, [None])
    return pa.table({kind: {
        "null": lambda: null,
        "struct": lambda: pa.Array.from_buffers(pa.struct([]), n, [None], children=[]),
        "fsb0": lambda: pa.Array.from_buffers(pa.binary(0), n, [None, pa.py_buffer(b"")]),
        "ree": lambda: pa.RunEndEncodedArray.from_arrays(pa.array([n], pa.int64()),
                                                         pa.array([1])),
        "list": lambda: pa.LargeListArray.from_arrays(pa.array([0, n], pa.int64()), null),
    }[kind]()})


def _frames(table):
    """Frames of ``table`` as a server would send them (packed bodies),
    written with allow_64bit: what pyarrow writes for such a peer."""
    sink = pa.BufferOutputStream()
    opts = pa.ipc.IpcWriteOptions(allow_64bit=True)
    with pa.ipc.new_stream(sink, table.schema, options=opts) as w:
        w.write_table(table)
    out = []
    msgs = list(pa.ipc.MessageReader.open_stream(pa.BufferReader(sink.getvalue())))
    for seq, m in enumerate(msgs):
        meta = m.metadata.to_pybytes()
        out.append(meta_frame(seq, meta))
        if parse_message(meta).header_type != SCHEMA:
            out.append(body_frame(seq, m.body.to_pybytes() if m.body is not None else b""))
    out.append(eos_frame(len(msgs)))
    return out


def _parsed(frames):
    p = wire.FrameParser()
    return [f for data in frames for f in p.feed(data)]


@pytest.mark.parametrize("kind, column", [
    ("null", "'null' (field node 0)"), ("struct", "'struct' (field node 0)"),
    ("fsb0", "'fsb0' (field node 0)"), ("ree", "'ree' (field node 0)"),
    ("list", "'list.item' (field node 1)")])
def test_a_huge_length_without_bytes_is_refused(kind, column):
    frames = _parsed(_frames(_unbacked(kind, HUGE)))
    with pytest.raises(ProtocolError, match=re.escape(f"seq 1: RecordBatch column {column} "
                                                      f"has length {HUGE}, more than max_rows")):
        decode.decode_frames(frames)
    # the limit is the client's to raise (nothing is allocated either way)
    assert decode.decode_frames(frames, max_rows=HUGE).num_rows in (1, HUGE)


def test_a_dictionary_of_huge_null_values_is_refused():
    null = pa.Array.from_buffers(pa.null(), HUGE, [None])
    t = pa.table({"d": pa.DictionaryArray.from_arrays(pa.array([0], pa.int8()), null)})
    with pytest.raises(ProtocolError, match=f"DictionaryBatch field node 0 has length {HUGE}"):
        decode.decode_frames(_parsed(_frames(t)))


def test_a_client_refuses_a_huge_null_column():
    data = b"".join(_frames(_unbacked("null", HUGE)))

    def script(conn, want):
        conn.sendall(data)
        drain(conn, 0.5)

    with FakeServer(script) as fake, ipc.Client(fake.uri, timeout=5) as c:
        with pytest.raises(ProtocolError, match=f"column 'null' .* has length {HUGE}"):
            c.fetch("t")
        assert c.max_rows == reassembly.MAX_ROWS == 2**31 - 1


def test_the_limit_spares_arrays_the_body_holds():
    # more rows than max_rows, but at least a bit of body each: accepted
    t = pa.table({"b": pa.array([True, False] * 500), "n": pa.nulls(1000)})
    frames = _parsed(_frames(t))
    assert decode.decode_frames(frames, max_rows=10).equals(t)
    frames = _parsed(_frames(pa.table({"n": pa.nulls(1000)})))
    with pytest.raises(ProtocolError, match="column 'n' .* length 1000, more than max_rows=10"):
        decode.decode_frames(frames, max_rows=10)
    with pytest.raises(ValueError, match="max_rows"):
        ipc.Client("tcp://127.0.0.1:1?want_data=1", max_rows=-1)


def test_a_field_node_with_more_nulls_than_elements_is_refused():
    meta = [m for m in decode_meta(pa.table({"n": pa.nulls(5)}))][1]
    node = struct.pack("<qq", 5, 5)
    assert meta.count(node) == 1
    bad = meta.replace(node, struct.pack("<qq", 5, 6))
    with pytest.raises(ProtocolError, match=r"nodes\[0\] = \(length 5, null_count 6\)"):
        parse_message(bad)
    bad = meta.replace(node, struct.pack("<qq", -1, 0))
    with pytest.raises(ProtocolError, match=r"nodes\[0\] = \(length -1"):
        parse_message(bad)


def decode_meta(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return [m.metadata.to_pybytes()
            for m in pa.ipc.MessageReader.open_stream(pa.BufferReader(sink.getvalue()))]


def test_data_after_a_stream_is_seen_on_a_descriptor_above_1023():
    """select() refused descriptors above 1023 (ValueError, taken for
    "nothing arrived"): the stray frame was then read as the next stream's."""
    frames = b"".join(_frames(T))

    def script(conn, want):
        conn.sendall(frames)
        time.sleep(0.3)
        conn.sendall(body_frame(9, b"\0" * 8))          # a stray body, after the stream
        drain(conn, 2.5)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("the descriptor limit is too low")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    fds = []
    try:
        while not fds or fds[-1] < 1030:
            fds.append(os.open(os.devnull, os.O_RDONLY))
        with FakeServer(script) as fake, ipc.Client(fake.uri, timeout=5) as c:
            assert c.fs.sock.fileno() > 1023
            assert c.fetch("t").equals(T)
            time.sleep(1.0)                               # the stray body has come
            with pytest.raises(ProtocolError, match="after the end of the last stream"):
                c.fetch("t")
    finally:
        for fd in fds:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -------------------------------------------------------------- complex
@pytest.mark.parametrize("values", [
    np.array([1 + 2j, 3j, 4.5], np.complex64), np.array([1 + 2j, 3j, 4.5], np.complex128),
    np.ma.array([1j, 2, 3], mask=[0, 1, 0]), np.ones((3, 2), np.complex128)])
def test_to_arrow_of_complex_values_is_a_clear_type_error(values):
    r = nt.Ragged(np.array([0, 2, 3], np.int64), values)
    for convert in (nt.to_arrow, pa.array):
        with pytest.raises(TypeError, match=f"{values.dtype} values do not go to Arrow: "
                                            f"Arrow has no complex type"):
            convert(r)


@pytest.mark.parametrize("values, match", [
    (np.array(["ab", "c"], "U2"), "fixed-width <U2"), (np.array([b"ab", b"c"], "S2"),
                                                       "fixed-width |S2"),
    (np.array([1.5, 2], np.longdouble), "no 16-byte float")])
def test_to_arrow_of_values_arrow_lacks_is_a_type_error(values, match):
    if values.dtype.kind == "f" and values.dtype.itemsize == 8:
        pytest.skip("long double is double here")
    r = nt.Ragged(np.array([0, 1, 2], np.int64), values)
    with pytest.raises(TypeError, match=match):
        nt.to_arrow(r)


@pytest.mark.parametrize("shm", [False, True])
def test_a_complex_ndarray_dataset_travels_bit_for_bit(shm):
    """Guards what was right: complex arrays travel as float pairs."""
    bits = np.array([0x7FF8000000000001, 0x8000000000000000, 0x7FF0000000000000,
                     0xFFF4000000000abc, 1, 0x3FF0000000000000], np.uint64)
    a = bits.view(np.complex128).reshape(3, 1)
    b = np.array([1 + 2j, -0.0j, np.nan], np.complex64)
    with ipc.Server({"a": a, "b": b}, shm=shm) as srv, ipc.Client(srv.uri) as c:
        for name, want in (("a", a), ("b", b)):
            got = c.fetch_array(name)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
            del got
