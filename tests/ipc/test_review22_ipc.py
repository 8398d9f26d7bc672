"""Defects review 22 found in nclx.ipc; each test failed before its fix
(the docs-only item 6 is in docs/ipc.md):

1. a 0-row union batch (sparse or dense; a table of chunks of 0 and 1 rows)
   crashed the client with a segfault in Client.fetch / ipc.fetch /
   ipc.stream / ``python -m nclx.ipc fetch``: pyarrow 26's ``nbytes`` of a
   0-length union array read from IPC; the stream now counts
   ``get_total_buffer_size()``;
2. every fetch failing with an error that leaves the client unusable
   (server full, TimeoutError, ConnectionLostError, ...) leaked its Client,
   BatchStream and reassembler (on shared memory a mapping and an fd each):
   the exception kept in ``Client._broken`` held, through its traceback,
   the frames holding the stream, whose finalizer held the client;
4. ``serve_arrays`` / ``array_to_table`` of a bool array whose bytes are not
   0/1 (NumPy: nonzero is True) was refused by nclx's own client;
5. ``timeout`` of Client and Server, ``max_frame``, ``shm_size`` and
   ``shm_reserve`` were not validated (0 -> BlockingIOError, -1 -> "Timeout
   value out of range", "30" -> TypeError, max_frame=-1 accepted);
7. ``python -m nclx.ipc fetch`` left a valid but partial Arrow file when the
   stream failed;
8. (the follow-up review of 5) a timeout the new check took, past what
   Python's thread joins take (``Server(timeout=1e12)``), killed the server's
   reader thread at its first join: that connection's slot was never freed
   and every later client got "server full"; ``Client(timeout=1e10)`` raised
   a bare OverflowError; ``shm_size=2**64`` passed the check and failed in C
   ("Python int too large to convert to C long").  Seconds are capped at
   1e9, counts at 2**62;
9. (the docs' check) ``python -m nclx.ipc fetch -o <link>`` failing removed
   the link and left the valid partial file behind it; a link's file is
   emptied now, a device (``-o /dev/null``) left alone.
"""
import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest

import nclx.ipc as ipc

#: subprocesses run outside the source tree, so they import the installed nclx
RUN_DIR = os.path.dirname(os.path.abspath(os.__file__))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _run(code, timeout=120):
    """Run ``code`` in a fresh interpreter: a crash fails the test, not pytest."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=RUN_DIR,
                          env=_env(), capture_output=True, text=True, timeout=timeout)


# --------------------------------------------- 1. 0-row union batches
_UNION_TABLES = """
import pyarrow as pa
sparse = pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1])])
dense = pa.UnionArray.from_dense(pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()),
                                 [pa.array([1]), pa.array(["a"])])
def chunked(u):         # chunks of 0 and 1+ rows, and 0 rows only
    t = pa.table({"u": u})
    return {"mixed": pa.concat_tables([t.slice(0, 0), t]),
            "after": pa.concat_tables([t, t.slice(0, 0)]),
            "empty": t.slice(0, 0)}
"""


@pytest.mark.parametrize("shm", [False, True])
def test_zero_row_union_batches_do_not_crash_the_client(shm):
    r = _run(_UNION_TABLES + f"""
import nclx.ipc as ipc
for kind, u in (("sparse", sparse), ("dense", dense)):
    for name, t in chunked(u).items():
        srv = ipc.Server({{b"t": t}}, shm={shm}).start()
        try:
            for validate in (False, True):
                r = ipc.fetch(srv.uri, b"t", validate=validate)
                assert r.num_rows == t.num_rows and r.column(0).to_pylist() == t.column(0).to_pylist()
                with ipc.Client(srv.uri, validate=validate) as c:
                    assert c.fetch(b"t").num_rows == t.num_rows
                with ipc.stream(srv.uri, b"t", validate=validate) as s:
                    batches = list(s)
                assert sum(b.num_rows for b in batches) == t.num_rows
                assert s.num_batches == len(batches) and s.nbytes >= 0
        finally:
            srv.close()
        print(kind, name, "ok", flush=True)
""")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
    assert r.stdout.count(" ok") == 6


def test_zero_row_union_batches_cli_fetch(tmp_path):
    r = _run(_UNION_TABLES + f"""
import nclx.ipc as ipc
from nclx.ipc.__main__ import main
for kind, u in (("sparse", sparse), ("dense", dense)):
    t = chunked(u)["mixed"]
    for shm in (False, True):
        srv = ipc.Server({{b"t": t}}, shm=shm).start()
        out = {str(tmp_path)!r} + f"/{{kind}}{{shm}}.arrow"
        try:
            assert main(["fetch", srv.uri, "t", "-o", out, "--no-progress"]) == 0
        finally:
            srv.close()
        got = pa.ipc.open_file(out).read_all()
        assert got.column(0).to_pylist() == t.column(0).to_pylist()
        print(kind, shm, "ok", flush=True)
""")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
    assert r.stdout.count(" ok") == 4


# ------------------------- 2. failed fetches leak no Client, stream or fd
def _nfd():
    return len(os.listdir("/proc/self/fd"))


def _clients_alive():
    from nclx.ipc.client import Client
    gc.collect()
    return sum(isinstance(o, Client) for o in gc.get_objects())


@pytest.mark.parametrize("shm", [False, True])
def test_fetches_refused_by_a_full_server_leak_nothing(shm, caplog):
    srv = ipc.serve_arrays({"a": np.arange(5.0)}, shm=shm, max_connections=1)
    try:
        keep = ipc.Client(srv.uri)              # the one allowed connection
        gc.collect()
        fds, alive = _nfd(), _clients_alive()
        for _ in range(50):
            with pytest.raises(ipc.RemoteError):
                ipc.fetch_array(srv.uri, "a")   # "server full"
        deadline = time.monotonic() + 5      # the server closes its side in its own thread
        while _nfd() > fds and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
        assert _nfd() == fds
        assert _clients_alive() == alive
        keep.close()
    finally:
        srv.close()


def test_timed_out_and_lost_streams_leak_no_client():
    import socket
    import threading
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    held = []

    def accept():                  # accepts, reads nothing, never answers
        while True:
            try:
                held.append(ls.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    alive = _clients_alive()
    try:
        for _ in range(5):
            with pytest.raises(TimeoutError):
                ipc.fetch(f"tcp://127.0.0.1:{ls.getsockname()[1]}?want_data=1", "t",
                          timeout=0.2)
        assert _clients_alive() == alive
    finally:
        ls.close()
        for s in held:
            s.close()
    srv = ipc.serve_arrays({"a": np.arange(5.0)})
    try:
        for _ in range(5):
            s = ipc.stream(srv.uri, "a")
            s.client.fs.sock.shutdown(socket.SHUT_RD)     # as if the server left
            with pytest.raises(ipc.ConnectionLostError):
                list(s)
            del s
        assert _clients_alive() == alive
    finally:
        srv.close()


# --------------------------------- 4. bool arrays whose bytes are not 0/1
def _odd_bools():
    raw = np.array([[0, 2, 1, 255], [128, 0, 1, 3]], np.uint8)
    return raw.view(np.bool_)            # NumPy: [[F, T, T, T], [T, F, T, T]]


def test_bool_bytes_not_0_1_are_sent_normalised():
    a = _odd_bools()
    want = a.tolist()
    assert want == [[False, True, True, True], [True, False, True, True]]
    assert ipc.table_to_array(ipc.array_to_table(a)).tolist() == want
    assert ipc.table_to_array(ipc.array_to_table(a[:, ::2])).tolist() == a[:, ::2].tolist()
    assert a.view(np.uint8)[0, 1] == 2                    # the original is left alone
    plain = np.array([True, False, True])                 # 0/1: still viewed, not copied
    t = ipc.array_to_table(plain)
    assert ipc.table_to_array(t).__array_interface__["data"][0] == \
        plain.__array_interface__["data"][0]


@pytest.mark.parametrize("shm", [False, True])
def test_served_bool_bytes_not_0_1(shm):
    a = _odd_bools()
    srv = ipc.serve_arrays({"a": a}, shm=shm)
    try:
        assert ipc.fetch_array(srv.uri, "a").tolist() == a.tolist()
    finally:
        srv.close()
    srv = ipc.Server({"t": a}, shm=shm).start()
    try:
        assert ipc.fetch_array(srv.uri, "t").tolist() == a.tolist()
    finally:
        srv.close()


# ---------------------------------------- 5. numeric options are checked
_NOT_SECONDS = (0, -1, -0.5, "30", True, None, float("nan"), float("inf"))


def test_client_options_are_checked_at_construction():
    srv = ipc.serve_arrays({"a": np.arange(5)})
    try:
        for bad in _NOT_SECONDS:
            with pytest.raises(ValueError, match="timeout"):
                ipc.Client(srv.uri, timeout=bad)
            with pytest.raises(ValueError, match="timeout"):
                ipc.fetch_array(srv.uri, "a", timeout=bad)
        for bad in (0, -1, 1.5, "4096", True, None):
            with pytest.raises(ValueError, match="max_frame"):
                ipc.Client(srv.uri, max_frame=bad)
        with ipc.Client(srv.uri, timeout=np.float32(5), max_frame=np.int64(1 << 20)) as c:
            assert c.fetch_array("a").tolist() == list(range(5))
        assert ipc.fetch_array(srv.uri, "a", timeout=1).tolist() == list(range(5))
        assert not srv.errors
    finally:
        srv.close()


def test_server_options_are_checked_at_construction():
    for bad in _NOT_SECONDS:
        with pytest.raises(ValueError, match="timeout"):
            ipc.Server({"t": np.arange(3)}, timeout=bad)
    for bad in (0, -1, 1.5, "4096", True):
        with pytest.raises(ValueError, match="shm_size"):
            ipc.Server({"t": np.arange(3)}, shm=True, shm_size=bad)
    for bad in (-1, 1.5, "0", True, None):
        with pytest.raises(ValueError, match="shm_reserve"):
            ipc.Server({"t": np.arange(3)}, shm=True, shm_reserve=bad)
    with ipc.Server({"t": np.arange(3)}, shm=True, shm_size=np.int64(8192), shm_reserve=0,
                    timeout=5) as srv:
        srv.start()
        assert ipc.fetch_array(srv.uri, "t").tolist() == [0, 1, 2]


# ------------------------- 7. the CLI's fetch leaves no partial output file
_SCHEMA = pa.schema([("x", pa.int64())])


def _failing_factory():
    def gen():
        for i in range(3):
            yield pa.record_batch([pa.array(np.arange(10) + i)], schema=_SCHEMA)
        raise RuntimeError("the source broke")
    return pa.RecordBatchReader.from_batches(_SCHEMA, gen())


@pytest.mark.parametrize("shm", [False, True])
def test_cli_fetch_removes_its_partial_output(tmp_path, shm, capsys, caplog):
    from nclx.ipc.__main__ import main
    out = tmp_path / "out.arrow"
    with ipc.Server({"f": _failing_factory, "t": pa.table({"x": np.arange(4)})},
                    shm=shm) as srv:
        srv.start()
        assert main(["fetch", srv.uri, "f", "-o", str(out), "--no-progress"]) == 1
        assert "the source broke" in capsys.readouterr().err
        assert not out.exists()
        # a fetch that works still writes the file
        assert main(["fetch", srv.uri, "t", "-o", str(out), "--no-progress"]) == 0
        assert pa.ipc.open_file(str(out)).read_all().column(0).to_pylist() == [0, 1, 2, 3]
    # a fetch failing before the stream starts leaves an existing file alone
    assert main(["fetch", srv.uri, "t", "-o", str(out), "--no-progress", "--timeout", "2"]) == 1
    assert out.exists()


def test_cli_fetch_through_a_link_leaves_no_partial_file(tmp_path, capsys):
    # (the docs' follow-up check) the output path a link: the link was
    # removed and the partial Arrow file stayed behind it, valid
    from nclx.ipc.__main__ import main
    target = tmp_path / "target.arrow"
    target.write_bytes(b"old")
    link = tmp_path / "link.arrow"
    link.symlink_to(target)
    with ipc.Server({"f": _failing_factory}) as srv:
        srv.start()
        assert main(["fetch", srv.uri, "f", "-o", str(link), "--no-progress"]) == 1
    capsys.readouterr()
    assert link.is_symlink()
    assert target.stat().st_size == 0        # emptied: no valid partial file behind it
    # a device is left alone
    with ipc.Server({"f": _failing_factory}) as srv:
        srv.start()
        assert main(["fetch", srv.uri, "f", "-o", os.devnull, "--no-progress"]) == 1
    assert os.path.exists(os.devnull)


def test_options_past_what_the_system_takes_are_refused_by_name():
    for name in ("timeout",):
        for bad in (1e10, 1e12, 2.0 ** 70):
            with pytest.raises(ValueError, match=name):
                ipc.Server({"t": np.arange(3)}, timeout=bad)
    srv = ipc.serve_arrays({"a": np.arange(5)})
    try:
        for bad in (1e10, 1e12):
            with pytest.raises(ValueError, match="timeout"):
                ipc.Client(srv.uri, timeout=bad)
        with pytest.raises(ValueError, match="max_frame"):
            ipc.Client(srv.uri, max_frame=2 ** 70)
        with ipc.Client(srv.uri, timeout=1e9) as c:          # the largest taken still works
            assert c.fetch_array("a").tolist() == list(range(5))
    finally:
        srv.close()
    for name in ("shm_size", "shm_reserve"):
        with pytest.raises(ValueError, match=name):
            ipc.Server({"t": np.arange(3)}, shm=True, **{name: 2 ** 64})
    # the largest count taken, past what the system gives: an OSError naming it
    with pytest.raises(OSError, match=r"shm_size=4611686018427387904 bytes"):
        ipc.Server({"t": np.arange(3)}, shm=True, shm_size=2 ** 62)


def test_a_long_server_timeout_frees_each_connection():
    with ipc.Server({b"a": np.arange(10.0)}, timeout=1e9, max_connections=1) as srv:
        srv.start()
        for _ in range(3):
            with ipc.Client(srv.uri, timeout=10) as c:
                assert c.fetch_array(b"a").tolist() == list(np.arange(10.0))
            deadline = time.monotonic() + 10
            while srv._conns and time.monotonic() < deadline:   # the slot comes back
                time.sleep(0.05)
        assert not srv.errors, srv.errors
