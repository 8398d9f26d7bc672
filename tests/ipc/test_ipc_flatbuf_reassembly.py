"""The Message flatbuffer reader against pyarrow's own messages, and the
sequence-number state machine (order, early bodies, gaps, duplicates,
wrap-around)."""
import struct

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import sample_table, stream_messages

from nclx.ipc import ProtocolError
from nclx.ipc.flatbuf import DICTIONARY_BATCH, RECORD_BATCH, SCHEMA, parse_message
from nclx.ipc.reassembly import Reassembler
from nclx.ipc.wire import BODY_PACKED, BODY_SHM

TABLES = {
    "sample": sample_table(300),
    "empty_rows": sample_table(0),
    "no_columns": pa.table({}),
    "struct": pa.table({"s": pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": None}])}),
    "large": pa.table({"x": pa.array(["a" * 10] * 50, pa.large_string()),
                       "v": pa.array([b"xy"] * 50, pa.binary_view())}),
    "fixed": pa.table({"t": pa.array([[1, 2], [3, 4]], pa.list_(pa.float32(), 2))}),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_buffers_match_pyarrow(name):
    """The (offset, length) list covers everything pyarrow reads: a stream
    rebuilt from zeros plus only those byte ranges of each body reads back as
    the same table."""
    table = TABLES[name]
    msgs = stream_messages(table, max_chunksize=100)
    assert msgs[0][2].header_type == SCHEMA
    out = bytearray()
    for meta, body, info in msgs:
        assert (body is None) == (info.header_type == SCHEMA)
        pad = -len(meta) % 8
        out += struct.pack("<Ii", 0xFFFFFFFF, len(meta) + pad) + meta + b"\0" * pad
        if body is None:
            continue
        assert info.header_type in (RECORD_BATCH, DICTIONARY_BATCH)
        assert info.body_length == len(body)
        rebuilt = bytearray(len(body))
        for off, ln in info.buffers:
            rebuilt[off:off + ln] = body[off:off + ln]
        out += rebuilt
    out += struct.pack("<Ii", 0xFFFFFFFF, 0)
    assert pa.ipc.open_stream(pa.py_buffer(bytes(out))).read_all().equals(table)


def test_record_batch_fields():
    t = pa.table({"a": np.arange(5, dtype=np.int64)})
    (meta, _, info), = stream_messages(t)[1:]
    assert info.header_type == RECORD_BATCH and info.length == 5 and info.version == 4
    assert info.buffers == ((0, 0), (0, 40))


def _corrupt(meta, pos, value):
    b = bytearray(meta)
    b[pos:pos + len(value)] = value
    return bytes(b)


def test_malformed_flatbuffers_raise_protocol_error():
    meta = stream_messages(pa.table({"a": [1, 2, 3]}))[1][0]
    cases = [b"", b"\x00\x00", struct.pack("<I", 10**6), meta[:12],
             _corrupt(meta, 0, struct.pack("<I", len(meta) + 4))]
    for bad in cases:
        with pytest.raises(ProtocolError, match="flatbuffer|IPC metadata"):
            parse_message(bad)


def test_every_truncation_and_byte_flip_is_handled():
    """No prefix, no single-byte change of a real message makes the reader
    fail with anything but ProtocolError (or succeed)."""
    for meta, _, _ in stream_messages(sample_table(20))[:3]:
        for cut in range(len(meta)):
            try:
                parse_message(meta[:cut])
            except ProtocolError:
                pass
        for pos in range(len(meta)):
            for val in (0, 0xFF, meta[pos] ^ 0x80):
                try:
                    parse_message(_corrupt(meta, pos, bytes([val])))
                except ProtocolError:
                    pass


def test_buffer_outside_body():
    t = pa.table({"a": np.arange(4, dtype=np.int64)})
    meta, body, info = stream_messages(t)[1]
    # bodyLength is the 8-byte field holding len(body): shrink it
    pos = bytes(meta).find(struct.pack("<q", len(body)))
    assert pos > 0
    with pytest.raises(ProtocolError, match=r"buffers\[1\] .* outside the body of 8 bytes"):
        parse_message(_corrupt(meta, pos, struct.pack("<q", 8)))


# ---------------------------------------------------------------- reassembly
def _infos(n_batches=3):
    msgs = stream_messages(pa.table({"a": np.arange(30, dtype=np.int64)}), max_chunksize=10)
    assert len(msgs) == 1 + n_batches
    return msgs


@pytest.mark.parametrize("first", [0, 5, 2**32 - 2, 2**32 - 1])
@pytest.mark.parametrize("order", ["after", "before", "mixed", "all_bodies_first",
                                   "bodies_after_eos"])
def test_orders_and_wraparound(first, order):
    msgs = _infos()
    r = Reassembler(first)
    seqs = [(first + k) % 2**32 for k in range(len(msgs))]
    events = []
    for k, (meta, body, info) in enumerate(msgs):
        events.append(("m", seqs[k], info, meta))
        if body is not None:
            events.append(("b", seqs[k], body))
    events.append(("e", (first + len(msgs)) % 2**32))
    if order == "before":       # each body right before its metadata
        out = []
        for ev in events:
            if ev[0] == "b":
                out.insert(len(out) - 1, ev)
            else:
                out.append(ev)
        events = out
    elif order == "mixed":
        b = [e for e in events if e[0] == "b"]
        m = [e for e in events if e[0] != "b"]
        events = [m[0], b[1], m[1], b[0], m[2], m[3], b[2], m[4]]
    elif order == "all_bodies_first":
        events = [e for e in events if e[0] == "b"] + [e for e in events if e[0] != "b"]
    elif order == "bodies_after_eos":
        events = [e for e in events if e[0] != "b"] + [e for e in events if e[0] == "b"]
    popped = []
    for ev in events:
        if ev[0] == "m":
            r.metadata(ev[1], ev[2], ev[3])
        elif ev[0] == "b":
            r.body(ev[1], BODY_PACKED, ev[2])
        else:
            r.eos(ev[1])
        while (e := r.pop()) is not None:
            popped.append(e)
    assert r.finished
    assert [e.seq for e in popped] == seqs
    assert [e.body for e in popped[1:]] == [m[1] for m in msgs[1:]]


def _fed(r, msgs, upto, first=0):
    for k in range(upto):
        meta, body, info = msgs[k]
        r.metadata((first + k) % 2**32, info, meta)
        if body is not None:
            r.body((first + k) % 2**32, BODY_PACKED, body)


def test_gap_duplicate_and_order_errors():
    msgs = _infos()
    r = Reassembler()
    _fed(r, msgs, 2)
    with pytest.raises(ProtocolError, match="metadata seq 3 leaves a gap: expected seq 2"):
        r.metadata(3, msgs[3][2], msgs[3][0])
    with pytest.raises(ProtocolError, match="metadata seq 1 is out of order"):
        r.metadata(1, msgs[1][2], msgs[1][0])
    with pytest.raises(ProtocolError, match="duplicate body for seq 1"):
        r.body(1, BODY_PACKED, msgs[1][1])
    with pytest.raises(ProtocolError, match="body for seq 0, whose message has no body"):
        r.body(0, BODY_PACKED, b"")
    r.body(3, BODY_PACKED, msgs[3][1])          # early: fine
    with pytest.raises(ProtocolError, match="duplicate body for seq 3"):
        r.body(3, BODY_PACKED, msgs[3][1])
    with pytest.raises(ProtocolError, match="end of stream seq 5 leaves a gap"):
        r.eos(5)


def test_first_message_must_be_schema_and_only_once():
    msgs = _infos()
    r = Reassembler()
    with pytest.raises(ProtocolError, match="must be the Schema"):
        r.metadata(0, msgs[1][2], msgs[1][0])
    r.metadata(0, msgs[0][2], msgs[0][0])
    with pytest.raises(ProtocolError, match="second Schema"):
        r.metadata(1, msgs[0][2], msgs[0][0])
    with pytest.raises(ProtocolError, match="before the Schema"):
        Reassembler().eos(0)


def test_bodies_with_no_metadata():
    msgs = _infos()
    r = Reassembler(10)
    with pytest.raises(ProtocolError, match="body for seq 9 with no metadata: the stream "
                                            "started at seq 10"):
        r.body(9, BODY_PACKED, b"")
    _fed(r, msgs, 4, first=10)
    r.eos(14)
    with pytest.raises(ProtocolError, match="body for seq 15 with no metadata: the stream ended"):
        r.body(15, BODY_PACKED, b"")
    r2 = Reassembler()
    _fed(r2, msgs, 2)
    r2.body(7, BODY_PACKED, b"x")
    with pytest.raises(ProtocolError, match=r"bodies for seq \[7\] with no metadata"):
        r2.eos(2)


def test_pending_bodies_are_bounded():
    r = Reassembler(max_pending=4)
    for s in range(1, 5):
        r.body(s, BODY_PACKED, b"")
    with pytest.raises(ProtocolError, match="limit 4"):
        r.body(5, BODY_PACKED, b"")


def test_body_checked_against_metadata():
    msgs = _infos()
    meta, body, info = msgs[1]
    r = Reassembler()
    _fed(r, msgs, 1)
    r.metadata(1, info, meta)
    with pytest.raises(ProtocolError, match=f"packed body of 3 bytes, the RecordBatch metadata "
                                            f"says bodyLength {len(body)}"):
        r.body(1, BODY_PACKED, b"abc")
    nb = len(info.buffers)
    pairs = [(1000 + off, ln) for off, ln in info.buffers]
    total = sum(ln for _, ln in info.buffers)
    with pytest.raises(ProtocolError, match=f"nbuf {nb - 1}, the RecordBatch metadata has {nb}"):
        r.body(1, BODY_SHM, (total, pairs[:-1]))
    bad = pairs[:-1] + [(pairs[-1][0], pairs[-1][1] + 8)]
    with pytest.raises(ProtocolError, match=f"buffer {nb - 1} .* has length"):
        r.body(1, BODY_SHM, (total + 8, bad))
    with pytest.raises(ProtocolError, match="total_size"):
        r.body(1, BODY_SHM, (total + 1, pairs))
    r.body(1, BODY_SHM, (total, pairs))
    assert r.pop().seq == 0 and r.pop().body == (total, pairs)
