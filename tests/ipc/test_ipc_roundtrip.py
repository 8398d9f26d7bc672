"""Servers and clients for real, over loopback TCP and shared memory: what
comes back is what pyarrow holds (Table.equals, np.array_equal), shared
memory is zero copy (buffer addresses inside the mapped segment), and
free_data follows the client's references."""
import gc
import os
import threading
import warnings

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import TIMEOUT, RawClient, collect, sample_table, wait_for

import nclx.ipc as ipc
from nclx.ipc import wire

MODES = ["tcp", "shm"]


def _buffers(table):
    for col in table.columns:
        for chunk in col.chunks:
            for b in chunk.buffers():
                if b is not None and b.size:
                    yield b


def _dict_tables():
    return {
        "sample": sample_table(2000),
        "zero_rows": sample_table(0),
        "no_columns": pa.table({}),
        "nested": pa.table({"s": pa.array([{"a": i, "b": [str(i)] * (i % 3)}
                                            for i in range(100)]),
                            "m": pa.array([[("k", i)] for i in range(100)],
                                          pa.map_(pa.string(), pa.int64()))}),
        "wide": pa.table({f"c{i}": np.arange(50, dtype=np.int16) * i for i in range(40)}),
    }


@pytest.mark.parametrize("mode", MODES)
def test_fetch_equals_pyarrow(mode):
    tables = _dict_tables()
    with ipc.Server(tables, shm=mode == "shm", batch_bytes=20_000) as srv:
        for name, t in tables.items():
            got = ipc.fetch(srv.uri, name)
            assert got.schema.equals(t.schema, check_metadata=True), name
            assert got.equals(t), name
        assert not srv.errors


@pytest.mark.parametrize("mode", MODES)
def test_large_tables_are_split_into_batches(mode):
    t = pa.table({"x": np.arange(200_000, dtype=np.int64), "y": np.arange(200_000.0)})
    with ipc.Server({"t": t}, shm=mode == "shm", batch_bytes=1 << 20) as srv:
        with ipc.Client(srv.uri) as c:
            s = c.stream("t")
            batches = list(s)
            assert len(batches) == 4          # 3.2 MB in ~1 MiB batches
            assert pa.Table.from_batches(batches).equals(t)


def test_shm_is_zero_copy_and_tcp_is_not():
    t = sample_table(5000)
    with ipc.Server({"t": t}, shm=True) as srv:
        with ipc.Client(srv.uri) as c:
            got = c.fetch("t")
            seg = c.segment
            addrs = [b.address for b in _buffers(got)]
            assert addrs and all(seg.contains(a) for a in addrs)
            assert got.equals(t)
            # the same bytes as the server's segment holds, read through our mapping
            col = got.column("i").chunk(0)
            assert np.array_equal(np.frombuffer(col.buffers()[1], np.int64), t.column("i")
                                  .chunk(0).to_numpy())
            del got, col
    with ipc.Server({"t": t}) as srv, ipc.Client(srv.uri) as c:
        assert c.segment is None
        got = c.fetch("t")
        assert got.equals(t)


def test_free_data_follows_references():
    t = sample_table(3000)
    with ipc.Server({"t": t, "f": lambda: t.to_reader(max_chunksize=1000)}, shm=True) as srv:
        free0 = srv.segment.free_bytes
        with ipc.Client(srv.uri) as c:
            got = c.fetch("t")
            assert c.held > 0 and wait_for(lambda: srv.held() == c.held)
            col = got.column("f")                     # keeps one column's batches alive
            del got
            collect()
            assert 0 < c.held and wait_for(lambda: srv.held() == c.held)
            del col
            collect()
            assert c.held == 0 and wait_for(lambda: srv.held() == 0)
            # a factory's batches get their own regions, returned when freed
            got = c.fetch("f")
            assert got.equals(t) and srv.segment.free_bytes < free0
            del got
            collect()
            assert wait_for(lambda: srv.held() == 0)
            assert wait_for(lambda: srv.segment.free_bytes == free0 - _pinned(srv))


def _pinned(srv):
    return sum(r.size for r in srv.segment._regions.values() if r.pinned)


def test_context_exit_releases_everything():
    t = sample_table(1000)
    with ipc.Server({"t": t}, shm=True) as srv:
        with ipc.Client(srv.uri) as c:
            kept = c.fetch("t")
            assert wait_for(lambda: srv.held() > 0)
        assert wait_for(lambda: srv.held() == 0)      # freed by the with block
        assert kept.num_rows == 1000                  # still mapped: no crash
        with ipc.stream(srv.uri, "t") as s:
            first = next(s)
            assert wait_for(lambda: srv.held() > 0)
        assert wait_for(lambda: srv.held() == 0)
        del first


def test_module_fetch_frees_and_closes_when_last_view_goes():
    t = sample_table(1000)
    with ipc.Server({"t": t}, shm=True) as srv:
        got = ipc.fetch(srv.uri, "t")
        assert wait_for(lambda: srv.held() > 0 and len(srv._conns) == 1)
        del got
        collect()
        assert wait_for(lambda: srv.held() == 0 and len(srv._conns) == 0)


def test_stream_yields_batches_as_they_arrive():
    gate = threading.Event()
    schema = pa.schema([("x", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        assert gate.wait(TIMEOUT)
        yield pa.record_batch([pa.array([3])], schema=schema)

    for shm in (False, True):
        gate.clear()
        factory = lambda: pa.RecordBatchReader.from_batches(schema, batches())
        with ipc.Server({"g": factory}, shm=shm) as srv, ipc.stream(srv.uri, "g") as s:
            first = next(s)                   # arrives while the server waits on the gate
            assert first.column(0).to_pylist() == [1, 2]
            gate.set()
            assert [b.column(0).to_pylist() for b in s] == [[3]]


@pytest.mark.parametrize("mode", MODES)
def test_one_connection_many_requests(mode):
    t1, t2 = sample_table(100), pa.table({"z": [1.5, 2.5]})
    with ipc.Server({"a": t1, b"b\xff": t2}, shm=mode == "shm") as srv:
        with ipc.Client(srv.uri) as c:
            assert c.fetch("a").equals(t1)
            assert c.fetch(b"b\xff").equals(t2)
            with pytest.raises(ipc.UnknownTicketError, match=r"b'nope'") as ei:
                c.fetch("nope")
            assert ei.value.ticket == b"nope" and isinstance(ei.value, LookupError)
            assert c.fetch("a").equals(t1)          # still usable after the error
            with c.stream("a") as s:                # left early: the rest is drained
                next(s)
            assert c.fetch(b"b\xff").equals(t2)


@pytest.mark.parametrize("mode", MODES)
def test_many_clients_at_once(mode):
    t = sample_table(3000)
    results, errors = [], []

    def worker(uri):
        try:
            for _ in range(3):
                with ipc.Client(uri, timeout=TIMEOUT) as c:
                    results.append(c.fetch("t").equals(t))
                results.append(ipc.fetch_array(uri, "a").sum() == 45)
        except Exception as exc:
            errors.append(exc)

    with ipc.Server({"t": t, "a": np.arange(10)}, shm=mode == "shm", batch_bytes=30_000) as srv:
        threads = [threading.Thread(target=worker, args=(srv.uri,)) for _ in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not any(th.is_alive() for th in threads)
        assert not errors and results == [True] * 36
        collect()
        assert wait_for(lambda: srv.held() == 0)


@pytest.mark.parametrize("mode", MODES)
def test_sequence_numbers_wrap_around(mode):
    t = sample_table(500)
    first = 2**32 - 3                  # schema 2**32-3, dictionary, batches wrap to 0, 1, ...
    with ipc.Server({"t": t}, shm=mode == "shm", batch_bytes=5000, _first_seq=first) as srv:
        raw = RawClient(srv.uri)
        raw.want(b"t")
        frames = raw.read_stream()
        raw.close()
        seqs = [wire.decode_untagged(f.payload)[1] for f in frames if f.kind == 0]
        assert seqs[0] == first and 0 in seqs and seqs[-1] < 100
        with ipc.Client(srv.uri, _first_seq=first) as c:
            assert c.fetch("t").equals(t)
        with ipc.Client(srv.uri) as c, pytest.raises(ipc.ProtocolError, match="out of order"):
            c.fetch("t")                        # a client expecting seq 0 sees a gap


def test_segment_full_falls_back_to_packed_bodies():
    t = pa.table({"x": np.arange(100_000, dtype=np.int64)})
    with ipc.Server({"f": lambda: t.to_reader(max_chunksize=50_000)}, shm=True,
                    shm_size=4096) as srv:
        raw = RawClient(srv.uri)
        raw.want(b"f")
        types = {wire.split_tag(f.tag)[1] for f in raw.read_stream() if f.kind == 1}
        raw.close()
        assert types == {wire.BODY_PACKED}
        assert ipc.fetch(srv.uri, "f").equals(t)


def test_server_close_unlinks_segment_and_drops_clients():
    srv = ipc.Server({"t": sample_table(10)}, shm=True).start()
    name = srv.segment.name
    assert os.path.exists(f"/dev/shm/{name}")
    c = ipc.Client(srv.uri, timeout=TIMEOUT)
    got = c.fetch("t")
    srv.close()
    assert not os.path.exists(f"/dev/shm/{name}")
    assert got.equals(sample_table(10))          # the client's mapping outlives the name
    with pytest.raises((ipc.ConnectionLostError, OSError)):
        c.fetch("t")
    c.close()


def test_fork_after_fetch():
    t = pa.table({"x": np.arange(10_000, dtype=np.int64)})
    with ipc.Server({"t": t}, shm=True) as srv, ipc.Client(srv.uri) as c:
        got = c.fetch("t")
        held = c.held
        assert wait_for(lambda: srv.held() == held)
        r, w = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:                                   # child: read, drop, exit
            try:
                total = int(got.column("x").to_numpy().sum())
                del got
                gc.collect()
                try:
                    c.fetch("t")
                    ok = b"reused"
                except RuntimeError:
                    ok = b"refused"
                c.close()                              # must not shut the parent's socket
                srv.close()                            # nor its server and segment
                os.write(w, f"{total} ".encode() + ok)
            finally:
                os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        out = os.read(r, 100).decode()
        os.close(r)
        assert os.WIFEXITED(status) and out == f"{t.column('x').to_numpy().sum()} refused"
        assert srv.held() == held          # the child freed nothing of the parent's
        assert os.path.exists(f"/dev/shm/{srv.segment.name}")
        assert c.fetch("t").equals(t)      # and did not disturb the connection
        del got
        collect()
        assert wait_for(lambda: srv.held() == 0)


def test_a_stream_dropped_before_its_end_releases_its_connection():
    """Found by review: ``for b in ipc.stream(...): break`` never freed the
    connection, its server threads, the mapping or the server's leases (the
    client held the stream, the stream's finalizer the client)."""
    t = pa.table({"x": np.arange(100_000)})
    with ipc.Server({"t": t}, shm=True, batch_bytes=80_000) as srv:
        threads0 = threading.active_count()
        for _ in range(5):
            for batch in ipc.stream(srv.uri, "t"):
                break
        assert batch.num_rows > 0
        last = batch.column(0).to_numpy().copy()
        del batch
        collect()
        assert wait_for(lambda: srv.held() == 0 and len(srv._conns) == 0)
        assert wait_for(lambda: threading.active_count() <= threads0)
        assert last.tobytes() == np.arange(last.size).tobytes()


def test_a_client_reads_on_after_a_stream_was_dropped_unfinished():
    """The rest of a dropped stream is drained before the client's next
    stream (its frames are not read as the next stream's)."""
    t = pa.table({"x": np.arange(100_000)})
    u = sample_table(1000)
    with ipc.Server({"t": t, "u": u}, shm=True, batch_bytes=80_000) as srv:
        with ipc.Client(srv.uri) as c:
            s = c.stream("t")
            first = next(s)
            del s
            collect()
            assert c.fetch("u").equals(u)
            assert c.fetch("t").equals(t)
            assert first.column(0).to_numpy().tobytes() == \
                np.arange(first.num_rows).tobytes()
            del first
        assert wait_for(lambda: srv.held() == 0)
