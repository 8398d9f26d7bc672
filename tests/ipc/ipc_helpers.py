"""Helpers for the nclx.ipc tests: IPC messages made by pyarrow, raw frames,
a scripted fake server (to feed a real client bad input) and a raw client
(to feed a real server bad input).  Every socket has a timeout."""
import gc
import os
import socket
import struct
import threading
import time

import numpy as np
import pyarrow as pa

from nclx.ipc import wire
from nclx.ipc.flatbuf import parse_message

TIMEOUT = 10.0

#: The big fuzz set runs with NCLX_SLOW=1 (>= 1e5 frames); the default run a few thousand.
SLOW = os.environ.get("NCLX_SLOW") == "1"


def sample_table(rows=1000):
    rng = np.random.default_rng(1)
    return pa.table({
        "i": pa.array(rng.integers(-1000, 1000, rows), pa.int64()),
        "f": pa.array(rng.standard_normal(rows)),
        "s": pa.array([f"s{i % 17}" if i % 5 else None for i in range(rows)]),
        "d": pa.array([["a", "bb", "ccc"][i % 3] for i in range(rows)]).dictionary_encode(),
        "l": pa.array([[i, i + 1] if i % 4 else [] for i in range(rows)], pa.list_(pa.int32())),
        "b": pa.array([i % 3 == 0 for i in range(rows)]),
    })


def stream_messages(table, max_chunksize=None):
    """[(metadata bytes, body bytes or None, MessageInfo)] of the table's IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table, max_chunksize=max_chunksize)
    out = []
    for m in pa.ipc.MessageReader.open_stream(pa.BufferReader(sink.getvalue())):
        meta = m.metadata.to_pybytes()
        info = parse_message(meta)
        if info.header_type == 1:
            body = None
        else:
            body = m.body.to_pybytes() if m.body is not None else b""
        out.append((meta, body, info))
    return out


def meta_frame(seq, meta):
    return wire.encode_frame(wire.KIND_UNTAGGED, None, wire.encode_metadata_prefix(seq) + meta)


def eos_frame(seq):
    return wire.encode_frame(wire.KIND_UNTAGGED, None, wire.encode_eos(seq))


def body_frame(seq, body, body_type=wire.BODY_PACKED):
    return wire.encode_frame(wire.KIND_TAGGED, wire.make_tag(seq, body_type), body)


def packed_stream(table, max_chunksize=None, first_seq=0):
    """Frames a correct server sends for ``table`` with packed bodies: a list
    of (metadata frame, body frame or None) per message, then the EOS frame."""
    msgs = stream_messages(table, max_chunksize)
    frames = []
    for k, (meta, body, info) in enumerate(msgs):
        seq = (first_seq + k) % 2**32
        frames.append((meta_frame(seq, meta), None if body is None else body_frame(seq, body)))
    return frames, eos_frame((first_seq + len(msgs)) % 2**32)


class FakeServer:
    """Listens on 127.0.0.1; for each connection reads one frame (the
    want_data) and runs ``script(sock, want_frame)``; URI in ``.uri``."""

    def __init__(self, script, query="want_data=1", connections=1):
        self.script = script
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.lsock.settimeout(TIMEOUT)
        self.uri = f"tcp://127.0.0.1:{self.lsock.getsockname()[1]}?{query}"
        self.errors = []
        self.received = []
        self.thread = threading.Thread(target=self._run, args=(connections,), daemon=True)
        self.thread.start()

    def _run(self, connections):
        for _ in range(connections):
            try:
                conn, _ = self.lsock.accept()
            except OSError as exc:
                self.errors.append(exc)
                return
            conn.settimeout(TIMEOUT)
            try:
                parser = wire.FrameParser()
                frames = []
                deadline = time.monotonic() + TIMEOUT
                while not frames and time.monotonic() < deadline:
                    data = conn.recv(65536)
                    if not data:
                        break
                    frames = parser.feed(data)
                self.received.extend(frames)
                self.script(conn, frames[0] if frames else None)
            except Exception as exc:
                self.errors.append(exc)
            finally:
                conn.close()

    def close(self):
        self.lsock.close()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def drain(conn, seconds=0.3):
    """Read what a peer sends for a moment (keeps it from blocking)."""
    conn.settimeout(0.05)
    end = time.monotonic() + seconds
    data = bytearray()
    while time.monotonic() < end:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


class RawClient:
    """A hand-driven client socket for attacking a server."""

    def __init__(self, uri):
        from nclx.ipc.uri import parse_uri
        self.ep = parse_uri(uri)
        self.sock = socket.create_connection((self.ep.host, self.ep.port), timeout=TIMEOUT)
        self.parser = wire.FrameParser()
        self.frames = []

    def send(self, data):
        self.sock.sendall(data)

    def tagged(self, tag, payload):
        self.send(wire.encode_frame(wire.KIND_TAGGED, tag, payload))

    def want(self, ticket):
        self.tagged(self.ep.want_data, ticket)

    def read_until(self, pred, timeout=TIMEOUT):
        """Read frames until ``pred(frames)`` or the server closes; returns
        (frames, closed)."""
        end = time.monotonic() + timeout
        while not pred(self.frames):
            if time.monotonic() > end:
                raise AssertionError(f"timed out; frames so far: {self.frames[-3:]}")
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except ConnectionResetError:
                return self.frames, True
            if not data:
                return self.frames, True
            self.frames.extend(self.parser.feed(data))
        return self.frames, False

    def read_stream(self):
        """Frames up to and including the EOS or an error frame."""
        def done(frames):
            return any(f.kind == wire.KIND_ERROR or
                       (f.kind == wire.KIND_UNTAGGED and f.payload[0] == 0) for f in frames)
        frames, closed = self.read_until(done)
        return frames

    def close(self):
        self.sock.close()


def collect():
    """Run the GC and give finalizers' free_data frames time to arrive."""
    gc.collect()
    time.sleep(0.05)


def wait_for(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def le64(*values):
    return struct.pack(f"<{len(values)}Q", *values)
