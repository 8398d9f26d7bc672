"""Defects review 20 found in nclx.ipc; each test failed before its fix
(the docs-only item 7 pins the behaviour the docs now describe):

1. ``table_to_array`` / ``fetch_array`` of fixed-shape tensors whose value
   type is not a fixed-width primitive of the NumPy itemsize: Arrow bool
   (bit-packed) was read as bytes (a False whose byte had padding bits set
   came back True), date32 (int32 days) as 8-byte datetime64[ms] (pairs of
   days), strings, decimals and fixed_size_binary gave NumPy's "cannot
   create an OBJECT array", a timestamp with a time zone needed pandas;
2. a Client reconnecting after the server's idle timeout to a server
   restarted on the same port read the old server's unlinked segment;
3. shared-memory bodies arriving before their metadata were not counted
   against ``MAX_HELD_BYTES`` (128 MiB of them grew a client by 758 MiB);
4. ``check_schema`` passed a timestamp time zone that is not UTF-8 and
   the YEAR_MONTH / DAY_TIME interval types, which pyarrow cannot hand to
   Python (UnicodeDecodeError, KeyError 21/22 later);
5. a ``stream()`` iterated to its end kept its connection (and a server
   slot) until the BatchStream was collected;
6. ``array_to_table`` / ``serve_arrays`` of 2**31 elements or more raised a
   bare OverflowError from pyarrow (after copying a non-contiguous one);
7. (docs) when arrays are snapshotted, and which ``fetch_array`` results
   are read-only;
8. a server declaring a huge frame and trickling a byte now and then held a
   client for ``timeout + declared / min_rate`` seconds (36 hours for 1 GiB
   at 8 KiB/s): the rate is now checked as bytes come, after ``timeout``.
"""
import gc
import time
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import nclx.ipc as ipc
from nclx.ipc.errors import ProtocolError


def _tensor(values, shape, rows=1):
    ty = pa.fixed_shape_tensor(values.type, shape)
    n = int(np.prod(shape))
    storage = pa.FixedSizeListArray.from_arrays(values, n)
    assert len(storage) == rows
    return pa.table({"t": pa.ExtensionArray.from_storage(ty, storage)})


# ------------------------------------------------ 1. tensor value types
def test_arrow_bool_values_are_unpacked_from_bits_padding_ignored():
    # one False whose byte has the 7 padding bits set (Arrow leaves them undefined)
    vals = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(bytes([0xFE]))])
    t = _tensor(vals, [1])
    assert t.column(0).chunk(0).storage.flatten().to_pylist() == [False]
    a = ipc.table_to_array(t)
    assert a.dtype == np.bool_ and a.tolist() == [False]


def test_arrow_bool_values_of_a_sliced_tensor_row():
    bits = [True, False, True, True, False, True, False, False, True, True, False, True]
    t = _tensor(pa.array(bits), [2, 3], rows=2).slice(1, 1)      # values from bit 6
    a = ipc.table_to_array(t)
    assert a.dtype == np.bool_ and a.ravel().tolist() == bits[6:]


@pytest.mark.parametrize("shm", [False, True])
def test_arrow_bool_tensor_over_the_wire(shm):
    vals = pa.Array.from_buffers(pa.bool_(), 3, [None, pa.py_buffer(bytes([0b11111010]))])
    t = _tensor(vals, [3])
    with ipc.Server({"b": t}, shm=shm) as srv:
        srv.start()
        a = ipc.fetch_array(srv.uri, "b", timeout=10)
    assert a.tolist() == [False, True, False]


def test_date32_values_become_datetime64_days():
    t = _tensor(pa.array(list(range(12)), pa.date32()), [2, 3], rows=2).slice(0, 1)
    a = ipc.table_to_array(t)
    assert a.dtype == np.dtype("M8[D]")
    assert a.ravel().astype(np.int64).tolist() == list(range(6))
    t = _tensor(pa.array(list(range(12)), pa.date32()), [2, 3], rows=2).slice(1, 1)
    assert ipc.table_to_array(t).ravel().astype(np.int64).tolist() == list(range(6, 12))


@pytest.mark.parametrize("values, shown", [
    (pa.array(list("abcdef")), "string"),
    (pa.array([1, 2, 3, 4, 5, 6], pa.decimal128(5, 0)), "decimal128(5, 0)"),
    (pa.array([b"ab"] * 6, pa.binary(2)), "fixed_size_binary[2]"),
    (pa.array(list(range(6)), pa.timestamp("s", tz="UTC")), "time zone 'UTC'"),
    (pa.array(list(range(6)), pa.time32("s")), "time32[s]"),
])
def test_value_types_without_a_numpy_equal_are_refused(values, shown):
    t = _tensor(values, [2, 3])
    with pytest.raises(ProtocolError, match=r"field 't': tensor value type .*"
                       + shown.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        ipc.table_to_array(t)


def test_refused_value_type_over_the_wire():
    t = _tensor(pa.array(list("abcdef")), [2, 3])
    with ipc.Server({"s": t}) as srv:
        srv.start()
        with pytest.raises(ProtocolError, match="field 't': tensor value type string"):
            ipc.fetch_array(srv.uri, "s", timeout=10)


def test_fixed_width_value_types_still_read_as_views():
    for values, dt in [(pa.array(np.arange(6, dtype=np.float16)), np.float16),
                       (pa.array(range(6), pa.duration("ms")), np.dtype("m8[ms]")),
                       (pa.array(range(6), pa.timestamp("us")), np.dtype("M8[us]")),
                       (pa.array(range(6), pa.date64()), np.dtype("M8[ms]"))]:
        a = ipc.table_to_array(_tensor(values, [2, 3]))
        assert a.dtype == dt and a.ravel().astype(np.int64).tolist() == list(range(6))
    for dt in (np.bool_, np.complex64, np.int16):
        src = np.arange(6).astype(dt).reshape(2, 3)
        assert np.array_equal(ipc.table_to_array(ipc.array_to_table(src)), src)


# ---------------------------------------------- 6. 2**31 values and more
def test_array_of_2_31_elements_is_a_clear_error():
    a = np.zeros(2**31, np.int8)          # calloc: no page is touched
    with pytest.raises(ValueError, match=r"2147483648 elements.*at most 2147483647 values"
                                         r".*fixed_size_list list_size is an int32"):
        ipc.array_to_table(a)
    with pytest.raises(ValueError, match=r"array 'big': cannot serve an array of 2147483648"):
        ipc.serve_arrays({"big": a})
    with pytest.raises(ValueError, match=r"dataset b'big':.*2147483648 elements"):
        ipc.Server({"big": a})


def test_complex_counts_two_values_and_nothing_is_copied_first():
    c = np.zeros(2**30, np.complex64)     # 2**31 float32 values
    with pytest.raises(ValueError, match="a complex element is two values"):
        ipc.array_to_table(c)
    # a non-contiguous array would be copied (2 GiB) before being refused
    b = np.broadcast_to(np.zeros(1, np.int8), (2**31,))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="2147483648 elements"):
            ipc.array_to_table(b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# ------------------------------------- 4. schemas pyarrow cannot hand over
def _fetch_patched(table, patch):
    """Fetch ``table`` from a fake server whose Schema message is patched."""
    from ipc_helpers import FakeServer, packed_stream
    pairs, eos = packed_stream(table)
    meta0 = bytes(patch(bytearray(pairs[0][0])))
    data = b"".join([meta0] + [f for p in pairs[1:] for f in p if f is not None] + [eos])

    def script(conn, want):
        conn.sendall(data)
    with FakeServer(script) as fake, ipc.Client(fake.uri, timeout=5) as c:
        return c.fetch("t")


def _bad_tz(frame):
    i = frame.find(b"UTC")
    frame[i:i + 3] = b"\xff\xfeX"
    return frame


@pytest.mark.parametrize("table, column", [
    (pa.table({"ts": pa.array([0, 1], pa.timestamp("s", tz="UTC"))}), "'ts'"),
    (pa.table({"l": pa.array([[0], [1]], pa.list_(pa.timestamp("s", tz="UTC")))}),
     r"'l\.item'"),
])
def test_timestamp_time_zone_not_utf8_is_refused_at_fetch(table, column):
    with pytest.raises(ProtocolError, match=f"column {column} is a timestamp whose time "
                                            f"zone is not UTF-8"):
        _fetch_patched(table, _bad_tz)


def _interval_patch(unit):
    """A patch turning the month_day_nano interval of the schema into ``unit``
    (0 YEAR_MONTH, 1 DAY_TIME): the byte whose change pyarrow reads so."""
    from ipc_helpers import packed_stream
    t = pa.table({"iv": pa.array([(1, 2, 3)], pa.month_day_nano_interval())})
    frame = bytearray(packed_stream(t)[0][0][0])
    want = "month_interval" if unit == 0 else "day_time_interval"
    for i in range(len(frame) - 1):
        if frame[i] == 2 and frame[i + 1] == 0:
            b = bytearray(frame)
            b[i] = unit
            msg = bytes(b[9 + 5:])            # frame header, then untagged prefix
            pad = -len(msg) % 8
            try:
                s = pa.ipc.read_schema(pa.py_buffer(
                    b"\xff\xff\xff\xff" + (len(msg) + pad).to_bytes(4, "little")
                    + msg + b"\0" * pad))
            except Exception:  # noqa: BLE001 - not the byte
                continue
            if str(s.field(0).type) == want:
                def patch(f, i=i):
                    f[i] = unit
                    return f
                return t, patch
    pytest.skip("no byte of the schema flatbuffer gives that interval unit")


@pytest.mark.parametrize("unit, name", [(0, "YEAR_MONTH"), (1, "DAY_TIME")])
def test_interval_year_month_and_day_time_are_refused_at_fetch(unit, name):
    table, patch = _interval_patch(unit)
    with pytest.raises(ProtocolError, match=f"column 'iv' has type interval {name}"):
        _fetch_patched(table, patch)


def test_check_schema_sees_dictionary_values_and_keeps_good_schemas():
    from nclx.ipc.decode import check_schema
    good = pa.schema([("ts", pa.timestamp("ms", tz="Europe/Paris")),
                      ("iv", pa.month_day_nano_interval()),
                      ("d", pa.dictionary(pa.int8(), pa.string()))])
    assert check_schema(good) is good


# ------------------------------------ 5. a stream iterated to its end
def test_streams_iterated_to_the_end_free_their_server_slots():
    t = pa.table({"x": np.arange(10)})
    with ipc.Server({"t": t}, max_connections=2, timeout=10) as srv:
        srv.start()
        kept = []
        for _ in range(2):
            s = ipc.stream(srv.uri, "t", timeout=10)
            assert sum(b.num_rows for b in s) == 10
            kept.append(s)                   # kept, e.g. for s.num_batches
        assert all(s.client._closed for s in kept)
        from ipc_helpers import wait_for
        assert wait_for(lambda: not srv._conns)
        assert ipc.fetch(srv.uri, "t", timeout=10).num_rows == 10   # a slot is free


def test_shm_stream_closes_when_its_last_view_goes():
    from ipc_helpers import wait_for
    t = pa.table({"x": np.arange(10)})
    with ipc.Server({"t": t}, shm=True, timeout=10) as srv:
        srv.start()
        s = ipc.stream(srv.uri, "t", timeout=10)
        batches = list(s)
        assert not s.client._closed          # the batches are views of the segment
        assert batches[0].column(0).to_pylist() == list(range(10))
        del batches
        gc.collect()
        assert wait_for(lambda: s.client._closed and not srv._conns)
        assert srv.held() == 0


# ----------------------------- 3. early shared-memory bodies are counted
def _shm_body(nbuf, base=1000):
    """A type 1 body of ``nbuf`` distinct (offset, 0) pairs (every offset a new int)."""
    pairs = np.zeros((nbuf, 2), "<u8")
    pairs[:, 0] = base + np.arange(nbuf) % 60000
    return np.array([0, nbuf], "<u8").tobytes() + pairs.tobytes()


def test_reassembler_counts_shm_bodies_waiting_for_their_metadata():
    from nclx.ipc.reassembly import Reassembler
    from nclx.ipc.wire import BODY_SHM, decode_shm_body
    body = decode_shm_body(_shm_body(10000))
    r = Reassembler(max_held_bytes=1 << 20)
    r.body(1, BODY_SHM, body)             # the first held body always fits
    assert r._held_bytes >= 10000 * 16    # at least its size on the wire
    with pytest.raises(ProtocolError, match=r"body for seq 2 .* waits for its metadata: "
                                            r"\d+ bytes of bodies are already held"):
        r.body(2, BODY_SHM, body)


def test_shm_counts_come_back_when_messages_are_popped():
    from ipc_helpers import stream_messages
    from nclx.ipc.reassembly import Reassembler
    from nclx.ipc.wire import BODY_SHM
    msgs = stream_messages(pa.table({"x": np.arange(4)}), max_chunksize=1)
    r = Reassembler(max_held_bytes=4096)
    for seq, (meta, body, info) in enumerate(msgs):
        pairs = [(64 + off, length) for off, length in info.buffers]
        if body is not None:                # bodies first, each popped before the next
            r.body(seq, BODY_SHM, (sum(n for _, n in pairs), pairs))
        r.metadata(seq, info, meta)
        assert r.pop() is not None
        assert r._held_bytes == 0
    assert len(msgs) == 5


def test_early_shm_bodies_do_not_grow_the_client_past_the_bound(monkeypatch):
    """End to end: a fake server sends 16 early shm bodies of 2**15 pairs
    (8 MiB on the wire, about 50 MiB decoded) with a 4 MiB bound."""
    import base64
    import functools
    import sys
    from multiprocessing import shared_memory

    from ipc_helpers import FakeServer

    from nclx.ipc import wire
    from nclx.ipc.reassembly import Reassembler
    stream_mod = sys.modules["nclx.ipc.stream"]      # (nclx.ipc.stream is the function)
    monkeypatch.setattr(stream_mod, "Reassembler",
                        functools.partial(Reassembler, max_held_bytes=4 << 20))
    seg = shared_memory.SharedMemory(create=True, size=1 << 16)
    try:
        handle = base64.urlsafe_b64encode(seg.name.lstrip("/").encode()).decode().rstrip("=")
        body = _shm_body(1 << 15)
        frames = b"".join(wire.encode_frame(wire.KIND_TAGGED, wire.make_tag(seq, wire.BODY_SHM),
                                            body) for seq in range(1, 17))

        def script(conn, want):
            conn.sendall(frames)
            time.sleep(0.5)

        with FakeServer(script, query=f"want_data=1&free_data=2&remote_handle={handle}") as fk:
            tracemalloc.start()
            try:
                with pytest.raises(ProtocolError, match="bytes of bodies are already held"):
                    with ipc.Client(fk.uri, timeout=5) as c:
                        c.fetch("t")
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    finally:
        seg.close()
        seg.unlink()
    assert peak < 24 << 20, f"the client peaked at {peak / 2**20:.0f} MiB"


# ------------------------- 2. reconnecting to a restarted shm server
def test_reconnect_after_idle_to_a_restarted_server_refuses_the_old_segment():
    a = ipc.Server({"t": pa.table({"x": np.arange(5)})}, shm=True, idle_timeout=0.3,
                   timeout=10).start()
    port = a.endpoint.port
    c = ipc.Client(a.uri, timeout=5)
    b = None
    try:
        assert c.fetch("t").column("x").to_pylist() == list(range(5))
        gc.collect()
        from ipc_helpers import wait_for
        assert wait_for(lambda: not a._conns)        # closed as idle by the server
        a.close()
        b = ipc.Server({"t": pa.table({"x": np.arange(100, 105)})},
                       uri=f"tcp://127.0.0.1:{port}", shm=True, timeout=10).start()
        with pytest.raises(ProtocolError, match=r"reconnecting to 127\.0\.0\.1:\d+ after its "
                                                r"idle timeout: shared-memory segment .* no "
                                                r"longer exists"):
            c.fetch("t")                         # before: [0..4] read in the old mapping
        with pytest.raises(ProtocolError, match="unusable"):
            c.fetch("t")
    finally:
        c.close()
        a.close()
        if b is not None:
            b.close()


def test_a_segment_name_reused_by_another_segment_is_refused():
    from multiprocessing import shared_memory

    from nclx.ipc.segment import Mapping
    first = shared_memory.SharedMemory(create=True, size=4096)
    name = first.name.lstrip("/")
    m = Mapping(name)
    m.check_current("test")                       # the same segment: fine
    first.close()
    first.unlink()
    again = shared_memory.SharedMemory(name=name, create=True, size=4096)
    try:
        with pytest.raises(ProtocolError, match="is another segment now"):
            m.check_current("test")
    finally:
        again.close()
        again.unlink()


def test_reconnect_after_idle_to_the_same_shm_server_still_works():
    with ipc.Server({"t": pa.table({"x": np.arange(5)})}, shm=True, idle_timeout=0.3,
                    timeout=10) as srv:
        srv.start()
        with ipc.Client(srv.uri, timeout=5) as c:
            assert c.fetch("t").column("x").to_pylist() == list(range(5))
            gc.collect()
            from ipc_helpers import wait_for
            assert wait_for(lambda: not srv._conns)
            assert c.fetch("t").column("x").to_pylist() == list(range(5))


# ------------------------- 7. snapshots and read-only results (docs/ipc.md)
@pytest.mark.parametrize("shm", [False, True])
def test_when_arrays_are_snapshotted_and_which_results_are_read_only(shm):
    c = np.arange(6.0)
    nc = np.arange(12.0)[::2]                       # non-contiguous: copied at once
    sw = np.arange(6.0).astype(">f8")               # byte-swapped: copied at once
    srv = ipc.serve_arrays({"c": c, "nc": nc, "sw": sw, "e": np.zeros((0, 3))}, shm=shm)
    try:
        c[0] = nc[0] = sw[0] = -1                   # before the first request
        got = {k: ipc.fetch_array(srv.uri, k, timeout=10) for k in ("c", "nc", "sw", "e")}
        assert got["c"][0] == -1                    # contiguous: snapshot at first request
        assert got["nc"][0] == 0 and got["sw"][0] == 0
        c[0] = -2                                   # after it: not served
        assert ipc.fetch_array(srv.uri, "c", timeout=10)[0] == -1
        for k in ("c", "nc", "sw"):
            assert not got[k].flags.writeable, k    # TCP too
        assert got["e"].flags.writeable and got["e"].shape == (0, 3)
    finally:
        srv.close()
    x = np.arange(3.0)
    y = ipc.table_to_array(ipc.array_to_table(x))
    assert np.shares_memory(x, y) and y.flags.writeable


def test_a_trickled_huge_frame_is_cut_off_by_its_rate_not_its_declared_length():
    import threading
    from ipc_helpers import FakeServer
    from nclx.ipc import wire
    declared = 512 << 20                     # 512 MiB: before, 1 + 65536 s allowed
    header = wire.encode_frame_header(wire.KIND_UNTAGGED, None, declared)
    stop = threading.Event()

    def script(conn, want):
        try:
            conn.sendall(header)
            while not stop.is_set():
                conn.sendall(b"\0")
                time.sleep(0.1)
        except OSError:
            return

    with FakeServer(script) as fake:
        t0 = time.monotonic()
        with ipc.Client(fake.uri, timeout=1.0) as c:
            with pytest.raises(TimeoutError, match="slower than min_rate"):
                c.fetch("t")
        took = time.monotonic() - t0
        stop.set()
    assert took < 10.0, took
