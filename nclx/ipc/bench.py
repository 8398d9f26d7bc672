"""``python -m nclx bench ipc [--mb 100] [--repeat 5]``: one table (int64 and
float64 columns, ``--mb`` MB) fetched over loopback by

* nclx shm: ``python -m nclx.ipc serve --shm`` in a subprocess,
  ``Client.fetch`` on one connection (zero copy: only metadata and offsets
  move), and ``nclx.ipc.fetch`` (a new connection per fetch);
* nclx TCP: the same server without ``--shm`` (bodies over the socket);
* Arrow Flight ``do_get`` (pyarrow.flight server in a subprocess);
* a pyarrow IPC stream over a plain socket (server in a subprocess);
* memcpy of the same bytes (NumPy ``copyto``), the reference.

Each method runs once to warm up (nclx shm's first fetch, which places the
table in the segment, is reported on its own), then ``--repeat`` times;
the table gives medians, GB/s (1e9 bytes/s of table data) and the ratio to
Flight.  Servers are separate processes: the client's process does only
the client's work.
"""
import argparse
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from nclx._timing import pyplot, samples, save
from nclx.ipc.client import Client
from nclx.ipc.oneshot import fetch


def make_table(mb):
    rows = max(1, int(mb * 1e6) // 16)
    rng = np.random.default_rng(0)
    return pa.table({"i": rng.integers(-2**62, 2**62, rows, dtype=np.int64),
                     "f": rng.standard_normal(rows)})


# ------------------------------------------------------------------ servers
def _flight_server(path):
    import pyarrow.flight as fl   # optional: not every pyarrow build has Flight
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()

    class Server(fl.FlightServerBase):
        def do_get(self, context, ticket):
            return fl.RecordBatchStream(table)

    server = Server("grpc://127.0.0.1:0")
    print(f"grpc://127.0.0.1:{server.port}", flush=True)
    server.serve()


def _socket_server(path):
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    lsock = socket.create_server(("127.0.0.1", 0))
    print(f"127.0.0.1:{lsock.getsockname()[1]}", flush=True)
    while True:
        conn, _ = lsock.accept()
        with conn, conn.makefile("wb", buffering=1 << 20) as sink:
            with pa.ipc.new_stream(sink, table.schema) as w:
                w.write_table(table)


def _start(cmd, timeout=60):
    # started outside any source tree, so the child imports the installed nclx
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=tempfile.gettempdir())
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline().strip() if ready else ""
    if not line:
        proc.kill()
        raise RuntimeError(f"server {' '.join(cmd)} did not start")
    return proc, line


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------ clients
def run(mb=100, repeat=5, methods=("memcpy", "shm", "tcp", "flight", "socket"), out=print):
    table = make_table(mb)
    nbytes = table.nbytes
    results = {}
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="nclx-bench-ipc-") as tmp:
        path = os.path.join(tmp, "bench.arrow")
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)

        def check(t):
            if t.num_rows != table.num_rows:
                raise RuntimeError(f"fetched {t.num_rows} rows, want {table.num_rows}")
            return t

        if "memcpy" in methods:
            src = np.frombuffer(table.column("i").chunk(0).buffers()[1], np.uint8)
            src = np.concatenate([src, np.frombuffer(table.column("f").chunk(0).buffers()[1],
                                                     np.uint8)])
            dst = np.empty_like(src)
            np.copyto(dst, src)
            results["memcpy"] = (None, samples(lambda: np.copyto(dst, src), repeat))
        for name, flag in (("shm", ["--shm"]), ("tcp", [])):
            if name not in methods:
                continue
            proc, uri = _start([py, "-m", "nclx.ipc", "serve", path] + flag)
            try:
                with Client(uri) as client:     # one connection, as Flight's client
                    t0 = time.perf_counter()
                    check(client.fetch("bench"))
                    first = time.perf_counter() - t0
                    results[f"nclx {name}"] = (first, samples(
                        lambda c=client: check(c.fetch("bench")), repeat))
                results[f"nclx {name}, connect per fetch"] = (None, samples(
                    lambda u=uri: check(fetch(u, "bench")), repeat))
            finally:
                _stop(proc)
        if "flight" in methods:
            import pyarrow.flight as fl   # optional: not every pyarrow build has Flight
            proc, loc = _start([py, "-m", "nclx.ipc.bench", "--flight-server", path])
            try:
                client = fl.connect(loc)
                client.wait_for_available(30)

                def get():
                    return check(client.do_get(fl.Ticket(b"bench")).read_all())
                t0 = time.perf_counter()
                get()
                results["Arrow Flight do_get"] = (time.perf_counter() - t0,
                                                  samples(get, repeat))
                client.close()
            finally:
                _stop(proc)
        if "socket" in methods:
            proc, addr = _start([py, "-m", "nclx.ipc.bench", "--socket-server", path])
            host, port = addr.rsplit(":", 1)

            def get():
                with socket.create_connection((host, int(port)), timeout=60) as s, \
                        s.makefile("rb", buffering=1 << 20) as f:
                    return check(pa.ipc.open_stream(f).read_all())
            try:
                t0 = time.perf_counter()
                get()
                results["pyarrow IPC stream, socket"] = (time.perf_counter() - t0,
                                                         samples(get, repeat))
            finally:
                _stop(proc)
    flight = results.get("Arrow Flight do_get")
    flight_med = statistics.median(flight[1]) if flight else None
    rows = []
    for name, (first, times) in results.items():
        med = statistics.median(times)
        rows.append((name, first, med, nbytes / med / 1e9,
                     flight_med / med if flight_med else None))
    out(f"{table.num_rows} rows, {nbytes / 1e6:.1f} MB (int64 + float64), median of "
        f"{repeat}, loopback, {os.cpu_count()} CPUs")
    out(f"{'method':<28} {'first ms':>9} {'median ms':>10} {'GB/s':>8} {'x Flight':>9}")
    for name, first, med, gbs, ratio in rows:
        out(f"{name:<28} {'' if first is None else f'{first * 1e3:9.2f}':>9} "
            f"{med * 1e3:10.2f} {gbs:8.2f} {'' if ratio is None else f'{ratio:9.2f}':>9}")
    return {name: {"first_s": first, "median_s": med, "gbps": gbs, "x_flight": ratio}
            for name, first, med, gbs, ratio in rows}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nclx bench ipc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100.0, help="table size in MB (100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed fetches per method (5)")
    parser.add_argument("--only", nargs="+", default=["memcpy", "shm", "tcp", "flight",
                                                      "socket"],
                        choices=["memcpy", "shm", "tcp", "flight", "socket"])
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also draw the GB/s of each method (needs matplotlib)")
    parser.add_argument("--flight-server", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--socket-server", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.flight_server:
        return _flight_server(args.flight_server)
    if args.socket_server:
        return _socket_server(args.socket_server)
    if args.mb <= 0 or args.repeat < 1:
        parser.error("--mb must be positive and --repeat at least 1")
    results = run(args.mb, args.repeat, tuple(args.only))
    if args.plot:
        _plot(results, args.mb, args.plot)
    return 0


def _plot(results, mb, path):
    """A bar chart of GB/s per method (log scale), with the ratio to Flight."""
    plt = pyplot()
    names = list(results)
    gbs = [results[n]["gbps"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(names) + 1.2))
    bars = ax.barh(names[::-1], gbs[::-1], color="tab:blue")
    ax.set_xscale("log")
    ax.set_xlim(min(gbs) / 2, max(gbs) * 12)     # room for the labels
    ax.set_xlabel(f"GB/s, fetching a {mb:g} MB table over loopback (median)")
    for bar, n in zip(bars, names[::-1], strict=True):
        ratio = results[n]["x_flight"]
        label = f" {results[n]['gbps']:.2f}" + ("" if ratio is None else f"  ({ratio:.1f}x Flight)")
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, label, va="center",
                fontsize=8)
    save(fig, path)
    print(f"plot written to {path}")


if __name__ == "__main__":
    sys.exit(main())
