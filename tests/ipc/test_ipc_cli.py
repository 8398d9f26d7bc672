"""``python -m nclx.ipc serve|fetch`` as subprocesses, and ``python -m nclx
bench ipc``'s runner on a small table."""
import os
import select
import signal
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import TIMEOUT, sample_table

import nclx.ipc as ipc


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


#: subprocesses run outside the source tree, so they import the installed nclx
#: (the checkout's nclx/ has no compiled modules)
RUN_DIR = os.path.dirname(os.path.abspath(os.__file__))


def _serve(paths, *flags):
    proc = subprocess.Popen([sys.executable, "-m", "nclx.ipc", "serve", *paths, *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=RUN_DIR)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    uri = proc.stdout.readline().strip() if ready else ""
    if not uri:
        proc.kill()
        raise AssertionError(f"no URI; stderr: {proc.communicate(timeout=TIMEOUT)[1]}")
    return proc, uri


def _stop(proc, sig=signal.SIGTERM):
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, err


@pytest.mark.parametrize("shm", [False, True])
def test_serve_and_fetch_subprocesses(tmp_path, shm):
    t1 = sample_table(3000)
    t2 = pa.table({"z": np.arange(10.0)})
    p1, p2 = tmp_path / "first.arrow", tmp_path / "second.arrows"
    with pa.OSFile(str(p1), "wb") as f, pa.ipc.new_file(f, t1.schema) as w:
        w.write_table(t1)
    with pa.OSFile(str(p2), "wb") as f, pa.ipc.new_stream(f, t2.schema) as w:   # stream format
        w.write_table(t2)
    proc, uri = _serve([str(p1), str(p2)], *(["--shm"] if shm else []))
    try:
        assert uri.startswith("tcp://127.0.0.1:") and ("remote_handle=" in uri) == shm
        segment = ipc.parse_uri(uri).segment
        assert ipc.fetch(uri, "first").equals(t1)
        assert ipc.fetch(uri, "second").equals(t2)
        out = tmp_path / "out.arrow"
        r = subprocess.run([sys.executable, "-m", "nclx.ipc", "fetch", uri, "first", "-o",
                            str(out), "--no-progress"], capture_output=True, text=True,
                           timeout=60, env=_env(), cwd=RUN_DIR)
        assert r.returncode == 0, r.stderr
        assert "wrote" in r.stdout and "batches" in r.stderr
        assert pa.ipc.open_file(str(out)).read_all().equals(t1)
        bad = subprocess.run([sys.executable, "-m", "nclx.ipc", "fetch", uri, "nope", "-o",
                              str(tmp_path / "x.arrow"), "--no-progress"],
                             capture_output=True, text=True, timeout=60, env=_env(), cwd=RUN_DIR)
        assert bad.returncode == 1 and "UnknownTicketError" in bad.stderr and "nope" in bad.stderr
    finally:
        rc, err = _stop(proc)
    assert rc == 0, err
    if shm:
        assert "segment released" in err
        assert not os.path.exists(f"/dev/shm/{segment}")


def test_sigint_stops_the_server(tmp_path):
    p = tmp_path / "t.arrow"
    with pa.OSFile(str(p), "wb") as f, pa.ipc.new_file(f, pa.schema([("a", pa.int8())])) as w:
        w.write_table(pa.table({"a": pa.array([1], pa.int8())}))
    proc, uri = _serve([str(p)], "--shm")
    segment = ipc.parse_uri(uri).segment
    rc, err = _stop(proc, signal.SIGINT)
    assert rc == 0 and not os.path.exists(f"/dev/shm/{segment}")


def test_serve_usage_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nclx.ipc", "serve", str(tmp_path / "none.arrow")],
                       capture_output=True, text=True, timeout=60, env=_env(), cwd=RUN_DIR)
    assert r.returncode == 1 and "cannot read" in r.stderr


def test_fetch_progress_with_rich(tmp_path):
    pytest.importorskip("rich")
    t = sample_table(100)
    with ipc.Server({"t": t}) as srv:
        out = tmp_path / "o.arrow"
        r = subprocess.run([sys.executable, "-m", "nclx.ipc", "fetch", srv.uri, "t", "-o",
                            str(out)], capture_output=True, text=True, timeout=60, env=_env(), cwd=RUN_DIR)
        assert r.returncode == 0, r.stderr
        assert pa.ipc.open_file(str(out)).read_all().equals(t)


def test_bench_runs_every_method_small():
    from nclx.ipc.bench import run
    lines = []
    res = run(mb=1, repeat=1, out=lines.append)
    assert set(res) == {"memcpy", "nclx shm", "nclx shm, connect per fetch", "nclx tcp",
                        "nclx tcp, connect per fetch", "Arrow Flight do_get",
                        "pyarrow IPC stream, socket"}
    assert all(r["gbps"] > 0 for r in res.values())
    assert res["Arrow Flight do_get"]["x_flight"] == pytest.approx(1.0)
    assert "GB/s" in lines[1]


def test_fetch_progress_without_rich(tmp_path, monkeypatch, capsys):
    """With rich missing the progress is plain text (in-process main())."""
    from nclx.ipc.__main__ import main
    monkeypatch.setitem(sys.modules, "rich.progress", None)
    t = sample_table(100)
    with ipc.Server({"t": t}) as srv:
        assert main(["fetch", srv.uri, "t", "-o", str(tmp_path / "o.arrow")]) == 0
    captured = capsys.readouterr()
    assert "fetch t: 1 batches" in captured.err and "wrote" in captured.out
    assert pa.ipc.open_file(str(tmp_path / "o.arrow")).read_all().equals(t)


def test_serve_takes_the_connection_cap_and_idle_timeout(tmp_path):
    # (review 16: Server(max_connections=, idle_timeout=) had no flags)
    p = tmp_path / "t.arrow"
    with pa.OSFile(str(p), "wb") as f, pa.ipc.new_file(f, pa.schema([("a", pa.int8())])) as w:
        w.write_table(pa.table({"a": pa.array([1], pa.int8())}))
    proc, uri = _serve([str(p)], "--max-connections", "1", "--idle-timeout", "0")
    try:
        with ipc.Client(uri, timeout=TIMEOUT) as c:
            assert c.fetch("t").column("a").to_pylist() == [1]
            with pytest.raises(ipc.RemoteError, match="server full: max_connections=1"):
                ipc.fetch(uri, "t", timeout=TIMEOUT)
    finally:
        rc, err = _stop(proc)
    assert rc == 0, err
    r = subprocess.run([sys.executable, "-m", "nclx.ipc", "serve", str(p),
                        "--max-connections", "0"], capture_output=True, text=True,
                       timeout=60, env=_env(), cwd=RUN_DIR)
    assert r.returncode == 1 and "max_connections" in r.stderr
