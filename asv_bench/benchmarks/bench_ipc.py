"""nclx.ipc fetch paths (issue 13): one int64 + float64 table fetched over
loopback by nclx (shared memory, TCP) and by Arrow Flight ``do_get``, with
servers in this process (threads; the C++ Flight server and nclx's socket
I/O release the GIL).  ``python -m nclx bench ipc`` measures the same with
servers in other processes.  Goals: shm >= 10x Flight, TCP >= Flight.

``time_*``: one fetch on an open connection.  ``track_ratio_vs_flight``:
time(Flight) / time(nclx) measured alternately in one process (> 1 means
nclx is faster).
"""
import threading

import numpy as np
import pyarrow as pa

from ._ratio import alternating_ratio

SIZES = {"1MB": 1, "100MB": 100}


def _table(mb):
    rows = int(mb * 1e6) // 16
    rng = np.random.default_rng(0)
    return pa.table({"i": rng.integers(0, 1 << 40, rows, dtype=np.int64),
                     "f": rng.standard_normal(rows)})


def _flight(table):
    import pyarrow.flight as fl

    class Server(fl.FlightServerBase):
        def do_get(self, context, ticket):
            return fl.RecordBatchStream(table)

    server = Server("grpc://127.0.0.1:0")
    threading.Thread(target=server.serve, daemon=True).start()
    client = fl.connect(f"grpc://127.0.0.1:{server.port}")
    client.wait_for_available(30)
    return server, lambda: client.do_get(fl.Ticket(b"t")).read_all()


class Fetch:
    params = (["nclx-shm", "nclx-tcp", "flight"], list(SIZES))
    param_names = ["transport", "size"]
    timeout = 300

    def setup(self, transport, size):
        import nclx.ipc as ipc
        self.table = _table(SIZES[size])
        self.server = self.client = None
        if transport == "flight":
            self.server, self.fetch = _flight(self.table)
        else:
            self.server = ipc.Server({"t": self.table}, shm=transport == "nclx-shm").start()
            self.client = ipc.Client(self.server.uri)
            self.fetch = lambda: self.client.fetch("t")
        self.fetch()                    # places / caches the table once

    def teardown(self, transport, size):
        if self.client is not None:
            self.client.close()
        if self.server is not None:
            (self.server.close if hasattr(self.server, "uri") else self.server.shutdown)()

    def time_fetch(self, transport, size):
        self.fetch()


class RatioVsFlight:
    params = (["nclx-shm", "nclx-tcp"], list(SIZES))
    param_names = ["transport", "size"]
    timeout = 300

    def setup(self, transport, size):
        import nclx.ipc as ipc
        self.table = _table(SIZES[size])
        self.flight, self.flight_fetch = _flight(self.table)
        self.server = ipc.Server({"t": self.table}, shm=transport == "nclx-shm").start()
        self.client = ipc.Client(self.server.uri)

    def teardown(self, transport, size):
        self.client.close()
        self.server.close()
        self.flight.shutdown()

    def track_ratio_vs_flight(self, transport, size):
        return alternating_ratio(self.flight_fetch, lambda: self.client.fetch("t"), rounds=5)

    track_ratio_vs_flight.unit = "flight/nclx"
