"""Defects a hostile-peer review (review 18) found in nclx.ipc; each test
failed before its fix:

* a ``remote_handle`` naming a FIFO in /dev/shm hung ``Client()`` for ever
  (the read-only open waited for a writer); a directory gave a bare
  "No such device";
* a client leaving while the server's writer was inside a slow factory
  (longer than the server's ``timeout``): the writer leased the next
  batch's offsets after the reader had released the connection's leases,
  and that batch's shared-memory region was never freed;
* the same clients freed their ``max_connections`` slot while their writer
  thread lived on, so threads grew past ``2 * max_connections + 1``;
* ``Server.errors`` kept each exception's traceback, whose frames held the
  batch being sent: clients that stopped reading a factory's stream kept
  up to 100 batches alive in the server;
* ``Server({"t": a, b"t": b})`` dropped ``a`` without a word.
"""
import base64
import gc
import os
import socket
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import RawClient, wait_for

import nclx.ipc as ipc
from nclx.ipc.errors import ProtocolError

SCHEMA = pa.schema([("x", pa.int64())])


def _shm_uri(name):
    handle = base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
    return f"tcp://127.0.0.1:9?want_data=1&free_data=2&remote_handle={handle}"


def _reset(raw):
    """Close ``raw`` with a reset, as a crashing client does."""
    raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    raw.close()


# ------------------------------------------------------- remote_handle
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_a_remote_handle_naming_a_fifo_does_not_hang_the_client():
    name = f"nclx_review18_fifo_{os.getpid()}"
    path = os.path.join("/dev/shm", name)
    os.mkfifo(path)
    result = []

    def connect():
        try:
            ipc.Client(_shm_uri(name), timeout=2)
            result.append(None)
        except Exception as exc:  # noqa: BLE001 - checked below
            result.append(exc)

    t = threading.Thread(target=connect, daemon=True)
    try:
        t.start()
        t.join(5)
        hung = t.is_alive()
        if hung:                     # the old code: let its open() return
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            t.join(5)
    finally:
        os.unlink(path)
    assert not hung, "Client() waited on a FIFO"
    assert isinstance(result[0], ProtocolError) and name in str(result[0])
    assert "not a shared-memory segment" in str(result[0])


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_a_remote_handle_naming_a_directory_or_a_link_is_named():
    d = f"nclx_review18_dir_{os.getpid()}"
    link = f"nclx_review18_link_{os.getpid()}"
    os.mkdir(os.path.join("/dev/shm", d))
    os.symlink("/dev/null", os.path.join("/dev/shm", link))
    try:
        with pytest.raises(ProtocolError, match=f"{d}.*not a shared-memory segment"):
            ipc.Client(_shm_uri(d))
        with pytest.raises(OSError, match=f"{link}.*remote_handle"):
            ipc.Client(_shm_uri(link))
    finally:
        os.rmdir(os.path.join("/dev/shm", d))
        os.unlink(os.path.join("/dev/shm", link))


# ------------------------------------------- writers outliving readers
def _slow_factory(delay, n=20, rows=1000):
    def factory():
        def gen():
            for i in range(n):
                time.sleep(delay)
                yield pa.record_batch([pa.array(np.arange(rows) + i)], schema=SCHEMA)
        return pa.RecordBatchReader.from_batches(SCHEMA, gen())
    return factory


def test_a_writer_that_outlives_its_reader_leases_nothing():
    """The reader gives up waiting for the writer after ``timeout``; the
    writer then leaves the factory: its batch's region must come back."""
    with ipc.Server({"f": _slow_factory(0.8)}, shm=True, shm_reserve=1 << 20,
                    timeout=0.2) as srv:
        full = srv.segment.free_bytes
        for _ in range(2):
            raw = RawClient(srv.uri)
            raw.want(b"f")
            raw.read_until(lambda fs: len(fs) >= 3)      # schema, first batch
            _reset(raw)
        assert wait_for(lambda: not srv._conns, 10)
        assert wait_for(lambda: srv.segment.free_bytes == full, 5), \
            list(srv.segment._regions.values())
        assert srv.held() == 0
        t = ipc.fetch(srv.uri, "f", timeout=30)        # and it still serves
        assert t.num_rows == 20_000


def _writers():
    return sum(t.name.startswith("nclx.ipc writer") for t in threading.enumerate())


def test_clients_leaving_a_stuck_factory_keep_their_slot_until_its_writer_ends():
    gate = threading.Event()

    def stuck():
        def gen():
            gate.wait(30)
            yield pa.record_batch([pa.array([1, 2, 3])], schema=SCHEMA)
        return pa.RecordBatchReader.from_batches(SCHEMA, gen())

    before = _writers()
    srv = ipc.Server({"s": stuck, "t": pa.table({"x": [7]})}, max_connections=1,
                     timeout=0.2).start()
    try:
        for _ in range(4):
            raw = RawClient(srv.uri)
            raw.want(b"s")
            time.sleep(0.5)          # past the reader's wait for its writer
            _reset(raw)
            time.sleep(0.2)
        # one writer, held in the factory; the other clients were told "full"
        assert _writers() - before <= 1
        assert any("server full" in str(e) for _, e in srv.errors)
        gate.set()
        assert wait_for(lambda: not srv._conns and _writers() == before, 10)
        assert ipc.fetch(srv.uri, "t", timeout=10).column("x").to_pylist() == [7]
    finally:
        gate.set()
        srv.close()


# ------------------------------------------------------- Server.errors
def test_recorded_errors_do_not_keep_the_batches_being_sent():
    rows = 1 << 20                                       # 8 MiB a batch

    def factory():
        batches = (pa.record_batch([pa.array(np.full(rows, i))], schema=SCHEMA)
                   for i in range(50))
        return pa.RecordBatchReader.from_batches(SCHEMA, batches)

    gc.collect()
    base = pa.total_allocated_bytes()
    srv = ipc.Server({"f": factory}, timeout=0.3).start()
    try:
        raws = []
        for _ in range(3):                               # ask, never read
            raw = RawClient(srv.uri)
            raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            raw.want(b"f")
            raws.append(raw)
        assert wait_for(lambda: sum("while sending" in str(e) for _, e in srv.errors) >= 3,
                        15)
        for raw in raws:
            raw.close()
        assert wait_for(lambda: not srv._conns, 10)
        gc.collect()
        kept = pa.total_allocated_bytes() - base
        assert kept < rows * 8, f"{kept} bytes kept by {len(srv.errors)} recorded errors"
        for _, exc in srv.errors:
            assert exc.__traceback__ is None
    finally:
        srv.close()


# ------------------------------------------------------------- tickets
def test_a_ticket_given_as_str_and_as_bytes_is_refused():
    with pytest.raises(ValueError, match="ticket b't' is given twice"):
        ipc.Server({"t": pa.table({"x": [1]}), b"t": pa.table({"x": [2]})})


# ------------------------------------- bodies held before they can be read
def _stream(n=4):
    from ipc_helpers import stream_messages
    msgs = stream_messages(pa.table({"a": np.arange(10 * n, dtype=np.int64)}), max_chunksize=10)
    assert len(msgs) == 1 + n
    return msgs


def test_bodies_held_before_their_messages_are_bounded_in_bytes():
    # before: 64 early bodies (and 1024 queued ones) of up to max_frame
    # (1 GiB) each were held: a hostile server made a reader hold 64 GiB
    from nclx.ipc.reassembly import MAX_HELD_BYTES, Reassembler
    from nclx.ipc.wire import BODY_PACKED
    big = memoryview(bytes(100 << 20))          # one buffer, lent three times
    r = Reassembler()
    r.body(1, BODY_PACKED, big)
    r.body(2, BODY_PACKED, big)
    with pytest.raises(ProtocolError, match=r"body for seq 3 \(104857600 bytes\) waits for "
                       r"its metadata: 209715200 bytes .*limit 268435456"):
        r.body(3, BODY_PACKED, big)
    assert MAX_HELD_BYTES == 256 << 20


def test_bodies_queued_behind_a_missing_one_count_too():
    from nclx.ipc.reassembly import Reassembler
    from nclx.ipc.wire import BODY_PACKED
    msgs = _stream()
    size = len(msgs[1][1])
    r = Reassembler(max_held_bytes=2 * size)
    for seq, (meta, body, info) in enumerate(msgs):
        r.metadata(seq, info, meta)
    assert r.pop() is not None                  # the schema
    r.body(2, BODY_PACKED, msgs[2][1])          # seq 1's body has not come
    r.body(3, BODY_PACKED, msgs[3][1])
    with pytest.raises(ProtocolError, match=r"body for seq 4 .* waits behind seq 1: "
                       rf"{2 * size} bytes of bodies are already held"):
        r.body(4, BODY_PACKED, msgs[4][1])


def test_a_stream_in_order_holds_one_body_at_a_time():
    from nclx.ipc.reassembly import Reassembler
    from nclx.ipc.wire import BODY_PACKED
    msgs = _stream(6)
    r = Reassembler(max_held_bytes=1)           # any second body would be refused
    got = []
    for seq, (meta, body, info) in enumerate(msgs):
        if body is not None:
            r.body(seq, BODY_PACKED, body)      # the body first, then its metadata
        r.metadata(seq, info, meta)
        while (e := r.pop()) is not None:
            got.append(e.seq)
    r.eos(len(msgs))
    assert got == list(range(len(msgs))) and r.finished
    assert r._held_bytes == 0
