"""Defects a hostile-peer review (review 16) found in nclx.ipc's server
and in fork handling; each test failed before its fix:

* a server took any number of connections (two threads each) and kept an
  idle one for ever;
* a forked child's ``Client.release()`` freed its parent's leases on the
  parent's connection (the parent's own free_data was then refused); a
  forked child could start its parent's Server (accepting the parent's
  clients, allocating in its segment); a child's ``Server.close()`` took
  a lock a parent thread may have held at the fork (a hang).
"""
import os
import socket
import threading
import time
import warnings

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import TIMEOUT, RawClient, collect, drain, wait_for

import nclx.ipc as ipc
from nclx.ipc import connection, wire
from nclx.ipc.errors import ProtocolError, RemoteError

T = pa.table({"x": pa.array([1, 2, 3], pa.int64())})

# ------------------------------------------------------ connection cap
def test_a_connection_past_max_connections_is_told_the_server_is_full():
    with ipc.Server({"t": T}, max_connections=2) as srv:
        a, b = ipc.Client(srv.uri, timeout=5), ipc.Client(srv.uri, timeout=5)
        assert a.fetch("t").equals(T) and b.fetch("t").equals(T)
        for pause in (0.3, 0):          # the error frame before, or after, the request
            c = ipc.Client(srv.uri, timeout=5)
            time.sleep(pause)
            with pytest.raises(RemoteError, match="server full: max_connections=2") as info:
                c.fetch("t")
            assert info.value.code == "server_full"
            with pytest.raises(ProtocolError, match="unusable"):
                c.fetch("t")
            c.close()
        assert a.fetch("t").equals(T) and b.fetch("t").equals(T)      # undisturbed
        assert sum(isinstance(e, ConnectionRefusedError) for _, e in srv.errors) == 2
        a.close()                                        # frees a slot
        assert wait_for(lambda: len(srv._conns) == 1)
        with ipc.Client(srv.uri, timeout=5) as d:
            assert d.fetch("t").equals(T)
        assert b.fetch("t").equals(T)
        b.close()


def test_a_refused_connection_gets_one_error_frame_then_end_of_file():
    with ipc.Server({"t": T}, max_connections=1) as srv:
        with ipc.Client(srv.uri, timeout=5) as a:
            a.fetch("t")
            raw = RawClient(srv.uri)
            raw.want(b"t")
            frames, closed = raw.read_until(lambda fs: len(fs) > 1, timeout=5)
            assert closed and len(frames) == 1 and frames[0].kind == wire.KIND_ERROR
            assert wire.decode_error(frames[0].payload)[0] == "server_full"
            raw.close()
            assert a.fetch("t").equals(T)


def test_server_options_are_checked():
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ValueError, match="max_connections"):
            ipc.Server({}, max_connections=bad)
    for bad in (0, -1.0, "5", True, float("nan")):
        with pytest.raises(ValueError, match="idle_timeout"):
            ipc.Server({}, idle_timeout=bad)


# --------------------------------------------------------- idle timeout
def test_an_idle_connection_is_closed_and_the_client_told_why():
    with ipc.Server({"t": T}, idle_timeout=0.5) as srv:
        c = ipc.Client(srv.uri, timeout=5)
        assert c.fetch("t").equals(T)
        assert wait_for(lambda: not srv._conns, timeout=5)
        assert any(isinstance(e, connection.IdleTimeout) for _, e in srv.errors)
        # the client opens a new connection and fetches there
        assert c.fetch("t").equals(T)
        assert wait_for(lambda: len(srv._conns) == 0, timeout=5)
        assert c.fetch("t").equals(T)             # and again
        c.close()
        # a raw connection that never sends anything is closed too
        s = socket.create_connection(("127.0.0.1", srv.endpoint.port), timeout=TIMEOUT)
        t0 = time.monotonic()
        data = drain(s, 5.0)                      # until the server closes it
        s.close()
        assert time.monotonic() - t0 < 4.0
        assert data[:1] == bytes([wire.KIND_ERROR])
        assert wire.decode_error(wire.FrameParser().feed(data)[0].payload)[0] == "idle_timeout"


def test_a_connection_being_served_is_not_idle():
    def slow():
        def gen():
            for i in range(3):
                time.sleep(0.6)                   # longer than idle_timeout each
                yield pa.record_batch([pa.array([i])], names=["x"])
        return pa.RecordBatchReader.from_batches(pa.schema([("x", pa.int64())]), gen())

    with ipc.Server({"slow": slow, "t": T}, idle_timeout=0.5) as srv:
        with ipc.Client(srv.uri, timeout=10) as c:
            assert c.fetch("slow").column("x").to_pylist() == [0, 1, 2]
            assert c.fetch("t").equals(T)         # the clock restarted after serving
        assert not any(isinstance(e, connection.IdleTimeout) for _, e in srv.errors)


def test_a_connection_holding_shared_memory_is_not_idle():
    big = pa.table({"x": np.arange(10_000)})

    def factory():
        return big.to_reader()

    with ipc.Server({"f": factory}, shm=True, idle_timeout=0.5) as srv:
        c = ipc.Client(srv.uri, timeout=5)
        got = c.fetch("f")
        assert c.held and srv.held()
        time.sleep(1.2)
        assert srv._conns and got.equals(big)     # its views' lease is kept
        del got
        collect()
        assert wait_for(lambda: not srv._conns, timeout=5)    # then idle, closed
        c.close()


def test_no_idle_timeout_keeps_a_connection():
    with ipc.Server({"t": T}, idle_timeout=None) as srv, ipc.Client(srv.uri) as c:
        c.fetch("t")
        time.sleep(0.8)
        assert srv._conns and c.fetch("t").equals(T)


# ----------------------------------------------------------------- fork
def _fork(child):
    """Run ``child()`` (returns bytes) in a forked child; its bytes, or
    b"hang" if it did not finish within TIMEOUT (then it is killed)."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            out = child()
        except BaseException as exc:           # noqa: BLE001 - reported to the parent
            out = f"{type(exc).__name__}: {exc}".encode()
        try:
            os.write(w, out)
        finally:
            os._exit(0)
    os.close(w)
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(r)
        return b"hang"
    out = os.read(r, 1000)
    os.close(r)
    return out


def test_a_forked_childs_release_leaves_the_parents_leases():
    t = pa.table({"x": np.arange(10_000, dtype=np.int64)})
    with ipc.Server({"t": t}, shm=True) as srv, ipc.Client(srv.uri) as c:
        got = c.fetch("t")
        held = c.held
        assert held and wait_for(lambda: srv.held() == held)

        def child():
            try:
                c.release()
                return b"released"
            except RuntimeError as exc:
                return b"refused" if b"after fork" in str(exc).encode() else b"other"

        assert _fork(child) == b"refused"
        time.sleep(0.2)
        assert srv.held() == held and c.held == held
        c.release()                     # before: refused by the server (not held)
        assert wait_for(lambda: srv.held() == 0)
        assert not srv.errors, list(srv.errors)
        assert c.fetch("t").equals(t) and got.equals(t)


def test_a_forked_child_cannot_start_its_parents_server():
    with ipc.Server({"t": T}) as srv:
        srv2 = ipc.Server({"t": T})

        def child():
            out = []
            for call in (srv2.start, srv2.serve_forever, srv.serve_forever):
                try:
                    call()
                    out.append("served")
                except RuntimeError as exc:
                    out.append("refused" if "after fork" in str(exc) else "other")
            srv2.close()
            srv.close()
            return " ".join(out).encode()

        assert _fork(child) == b"refused refused refused"
        assert ipc.fetch(srv.uri, "t").equals(T)          # the parent's server serves on
        srv2.start()
        assert ipc.fetch(srv2.uri, "t").equals(T)
        srv2.close()


def test_a_forked_childs_server_close_takes_no_lock_a_parent_thread_held():
    with ipc.Server({"t": T}) as srv, ipc.Client(srv.uri) as c:
        c.fetch("t")
        held = threading.Event()
        release = threading.Event()

        def hold():
            with srv._lock:
                held.set()
                release.wait(TIMEOUT)

        th = threading.Thread(target=hold, daemon=True)
        th.start()
        held.wait(TIMEOUT)
        try:
            def child():
                srv.close()
                return b"closed"
            assert _fork(child) == b"closed"              # before: b"hang"
        finally:
            release.set()
            th.join(TIMEOUT)
        assert c.fetch("t").equals(T)
