"""A real client against a scripted server sending bad input: each case
raises a clear error naming the field or value, within the timeout, and
never reads outside the segment or a received frame."""
import socket
import time

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import (
    FakeServer,
    body_frame,
    eos_frame,
    le64,
    meta_frame,
    packed_stream,
    stream_messages,
)

import nclx.ipc as ipc
from nclx.ipc import wire
from nclx.ipc.segment import Segment

T = pa.table({"x": np.arange(40, dtype=np.int64), "y": np.arange(40.0)})


def _frames(table=T, chunk=20):
    pairs, eos = packed_stream(table, max_chunksize=chunk)
    return pairs, eos


def _run(script, match, exc=ipc.ProtocolError, timeout=5.0, query="want_data=1", **kw):
    with FakeServer(script, query=query) as fake:
        t0 = time.monotonic()
        with pytest.raises(exc, match=match) as ei:
            with ipc.Client(fake.uri, timeout=timeout, **kw) as c:
                c.fetch("t")
        assert time.monotonic() - t0 < timeout + 3
    assert not fake.errors or all(isinstance(e, OSError) for e in fake.errors)
    return ei.value


def _send_all(frames_list, then_close=True):
    def script(conn, want):
        assert want is not None and want.kind == 1 and want.tag == 1 and want.payload == b"t"
        conn.sendall(b"".join(frames_list))
        if not then_close:
            time.sleep(0.5)
    return script


def test_fake_server_itself_is_correct():
    pairs, eos = _frames()
    frames = [f for p in pairs for f in p if f is not None] + [eos]
    with FakeServer(_send_all(frames)) as fake, ipc.Client(fake.uri, timeout=5) as c:
        assert c.fetch("t").equals(T)


def test_bodies_before_metadata_are_accepted():
    pairs, eos = _frames()
    frames = []
    for meta, body in pairs:
        frames += [body, meta] if body is not None else [meta]
    with FakeServer(_send_all(frames + [eos])) as fake, ipc.Client(fake.uri, timeout=5) as c:
        assert c.fetch("t").equals(T)
    # all metadata and the end of stream first, every body afterwards
    frames = [m for m, _ in pairs] + [eos] + [b for _, b in pairs if b is not None]
    with FakeServer(_send_all(frames)) as fake, ipc.Client(fake.uri, timeout=5) as c:
        assert c.fetch("t").equals(T)


@pytest.mark.parametrize("cut", [1, 5, 9, 16, 20, -1])
def test_truncated_frame(cut):
    pairs, eos = _frames()
    data = pairs[0][0] + pairs[1][0]
    data = data[:len(pairs[0][0]) + cut] if cut > 0 else data[:-1]
    _run(_send_all([data]), "truncated frame|closed the connection", ipc.ConnectionLostError)


def test_server_disconnects_mid_stream():
    pairs, _ = _frames()
    _run(_send_all([pairs[0][0], pairs[1][0]]), r"mid-stream .*bodies missing for seq \[1\]",
         ipc.ConnectionLostError)


def test_silent_server_times_out():
    def script(conn, want):
        time.sleep(1.5)
    _run(script, "no data from server .* for 0.5 s", TimeoutError, timeout=0.5)


@pytest.mark.parametrize("kind", [3, 9, 255])
def test_unknown_kind(kind):
    _run(_send_all([bytes([kind]) + le64(0)]), f"unknown frame kind {kind}")


def test_unknown_body_type_and_reserved_bits():
    pairs, _ = _frames()
    body = pairs[1][1][17:]                       # payload of the first body frame
    bad = wire.encode_frame(1, (7 << 56) | 1, body)
    _run(_send_all([pairs[0][0], pairs[1][0], bad]), "unknown body type 7")
    bad = wire.encode_frame(1, (1 << 40) | 1, body)
    _run(_send_all([pairs[0][0], pairs[1][0], bad]), "reserved bits 32-55")


def test_out_of_order_and_duplicate_metadata():
    pairs, eos = _frames()
    _run(_send_all([pairs[0][0], pairs[2][0]]), "metadata seq 2 leaves a gap: expected seq 1")
    _run(_send_all([pairs[0][0], pairs[1][0], pairs[1][0]]),
         "metadata seq 1 is out of order: expected seq 2")
    _run(_send_all([pairs[0][0], pairs[1][0], pairs[1][1], pairs[1][1]]),
         "duplicate body for seq 1")


def test_body_with_no_metadata():
    pairs, _ = _frames()
    body = pairs[1][1][17:]
    frames = [pairs[0][0], pairs[1][0], pairs[1][1], pairs[2][0], pairs[2][1],
              eos_frame(3), body_frame(9, body)]
    with FakeServer(_send_all(frames, then_close=False)) as fake:
        with ipc.Client(fake.uri, timeout=5) as c:
            # the stray body is found at the end of the stream or, at the latest,
            # before the next request could mistake it for one of its own
            with pytest.raises(ipc.ProtocolError, match="after the end of"):
                c.fetch("t")
                time.sleep(0.2)
                c.fetch("t")
    _run(_send_all([pairs[0][0], body_frame(0, b"")]), "body for seq 0, whose message")


def test_packed_body_length_mismatch():
    pairs, _ = _frames()
    body = pairs[1][1][17:]
    _run(_send_all([pairs[0][0], pairs[1][0], body_frame(1, body[:-8])]),
         f"packed body of {len(body) - 8} bytes, the RecordBatch metadata says bodyLength "
         f"{len(body)}")


def test_frame_over_the_limit_is_refused_before_allocation():
    _run(_send_all([b"\x01" + le64(1) + le64(2**62)]),
         f"frame length {2**62} exceeds the limit of 4096", max_frame=4096)


def test_garbage_flatbuffer():
    _run(_send_all([meta_frame(0, b"\x04\x00\x00\x00garbage!")]), "IPC metadata")


def test_schema_pyarrow_rejects_is_a_protocol_error():
    """Our reader accepts it (a Schema with a body-less table) but pyarrow's
    flatbuffer verifier does not: still a ProtocolError."""
    meta = bytearray(stream_messages(T)[0][0])
    meta[-8:] = b"\xff" * 8
    with FakeServer(_send_all([meta_frame(0, bytes(meta)), eos_frame(1)])) as fake:
        with pytest.raises(ipc.ProtocolError), ipc.Client(fake.uri, timeout=5) as c:
            c.fetch("t")


def test_error_frames():
    err = wire.encode_frame(2, None, wire.encode_error("dataset", "disk on fire"))
    e = _run(_send_all([err]), "disk on fire", ipc.RemoteError)
    assert e.code == "dataset"
    _run(_send_all([wire.encode_frame(2, None, b"not json")]), "malformed error frame")


def test_shm_body_on_a_tcp_uri():
    pairs, _ = _frames()
    shm = wire.encode_frame(1, wire.make_tag(1, 1), le64(0, 0))
    _run(_send_all([pairs[0][0], pairs[1][0], shm]), "URI has no remote_handle")


def test_missing_segment():
    with pytest.raises(ipc.ProtocolError, match="does not exist"):
        ipc.Client("tcp://127.0.0.1:1?want_data=1&free_data=2&remote_handle=bm9uZXhpc3RlbnQ")


class _ShmScript:
    """A fake shared-memory server: writes the packed bodies of T into a
    segment at ``shift`` and lets ``edit(seq, pairs)`` corrupt the pairs."""

    def __init__(self, edit=None, scatter=False):
        self.seg = Segment(1 << 16)
        self.edit = edit
        self.scatter = scatter

    @property
    def query(self):
        from nclx.ipc.uri import Endpoint
        return Endpoint("h", 1, 1, 2, self.seg.name).uri().split("?")[1]

    def __call__(self, conn, want):
        pos = 4096
        out = []
        for seq, (meta, body, info) in enumerate(stream_messages(T, max_chunksize=20)):
            out.append(meta_frame(seq, meta))
            if body is None:
                continue
            pairs = []
            for off, ln in info.buffers:
                where = pos + (off if not self.scatter else 64 * len(pairs) * 8)
                self.seg.view(where, ln)[:] = body[off:off + ln]
                pairs.append((where, ln))
            pos += 8192
            if self.edit:
                pairs = self.edit(seq, pairs)
            out.append(wire.encode_frame(1, wire.make_tag(seq, 1), wire.encode_shm_body(pairs)))
        out.append(eos_frame(len(out) - 2))
        conn.sendall(b"".join(out))
        time.sleep(0.3)

    def close(self):
        self.seg.close()


def _run_shm(edit, match=None, scatter=False):
    script = _ShmScript(edit, scatter)
    try:
        if match is None:
            with FakeServer(script, query=script.query) as fake, \
                    ipc.Client(fake.uri, timeout=5) as c:
                return c.fetch("t")
        return _run(script, match, query=script.query)
    finally:
        script.close()


def test_shm_fake_server_is_correct_and_scattered_buffers_are_gathered():
    assert _run_shm(None).equals(T)
    assert _run_shm(None, scatter=True).equals(T)


def test_shm_nbuf_mismatch():
    _run_shm(lambda s, p: p[:-1], r"nbuf 3, the RecordBatch metadata has 4 buffers")


def test_shm_length_and_total_size_mismatch():
    def longer(seq, pairs):
        off, ln = pairs[1]
        return [pairs[0], (off, ln + 8)] + pairs[2:]
    _run_shm(longer, "buffer 1 .* has length 168, the metadata says 160")


@pytest.mark.parametrize("where", [1 << 16, (1 << 16) - 8, 2**63, 2**64 - 1])
def test_shm_offsets_outside_the_segment(where):
    def outside(seq, pairs):
        return [pairs[0], (where, pairs[1][1])] + pairs[2:]
    _run_shm(outside, r"seq 1 buffer 1: \[offset %d, \+160\) lies outside the shared-memory "
                      r"segment of 65536 bytes" % where)


def test_client_keeps_no_lease_after_an_error():
    script = _ShmScript(lambda s, p: p if s < 2 else p[:-1])
    try:
        with FakeServer(script, query=script.query) as fake:
            c = ipc.Client(fake.uri, timeout=5)
            with pytest.raises(ipc.ProtocolError, match="nbuf"):
                c.fetch("t")
            assert c.held == 0
            with pytest.raises(ipc.ProtocolError, match="unusable after an earlier error"):
                c.fetch("t")
            c.close()
    finally:
        script.close()


def test_tcp_client_socket_timeouts_are_bounded():
    """A server that accepts but never reads must not hang the client's send."""
    lsock = socket.create_server(("127.0.0.1", 0))
    try:
        uri = f"tcp://127.0.0.1:{lsock.getsockname()[1]}?want_data=1"
        c = ipc.Client(uri, timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises((TimeoutError, ipc.ConnectionLostError)):
            c.fetch(b"x" * 100)
        assert time.monotonic() - t0 < 5
        c.close()
    finally:
        lsock.close()


def test_field_name_that_is_not_utf8():
    t = pa.table({"NAME": [1, 2]})
    msgs = stream_messages(t)
    meta = msgs[0][0].replace(b"NAME", b"N\xffME")
    frames = [meta_frame(0, meta), meta_frame(1, msgs[1][0]), body_frame(1, msgs[1][1]),
              eos_frame(2)]
    _run(_send_all(frames), "field name in the schema is not UTF-8")


def test_server_closing_before_any_reply_is_not_called_mid_stream():
    """Review 24: a server that closed (exited) between two requests was
    reported as closing "mid-stream (next seq 0)"; nothing of the reply had
    come."""
    e = _run(_send_all([]), "before replying to the request", ipc.ConnectionLostError)
    assert "mid-stream" not in str(e)
