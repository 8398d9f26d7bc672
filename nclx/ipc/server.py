"""The data server: one TCP port, one thread pair per client, optional
shared-memory bodies.

Each connection (nclx.ipc.connection) has a reader (the connection's
thread: ``want_data`` and ``free_data`` frames, never blocked by sending)
and a writer (streams the requested datasets in order).  A client that
breaks the protocol gets an error frame and its connection closed; other
clients are not affected.

Datasets (docs/ipc.md): a pyarrow Table or RecordBatch, or a NumPy array
(or DistArray / storage; sent as a fixed-shape tensor), is *static*: it is
serialized once, at its first request (into the shared segment with
``shm=True``, else into memory) and served from there to every client; a
zero-argument callable returning a RecordBatchReader (or a Table) is called
per request and its batches are serialized as they come.  In shared memory,
static regions live as long as the server; a streamed batch's region lives
until every client that received its offsets has freed them (free_data or
disconnect).
"""
import errno
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping

import pyarrow as pa

from nclx.ipc.connection import _Connection
from nclx.ipc.datasets import _NO_ROOM, _as_table, _Dataset, _encode, _split
from nclx.ipc.options import check_count, check_seconds
from nclx.ipc.segment import Segment
from nclx.ipc.uri import DEFAULT_FREE_DATA, Endpoint, parse_uri
from nclx.ipc.wire import DEFAULT_MAX_REQUEST, KIND_ERROR, SEQ_MOD, encode_error, encode_frame

log = logging.getLogger("nclx.ipc")

#: refused clients kept a moment so that they read the error frame
_REFUSED = 64

#: errors of accept() that end one attempt, not the server
_ACCEPT_TRANSIENT = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM,
                     errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.EINTR,
                     errno.ENETDOWN, errno.EHOSTUNREACH, errno.ENETUNREACH,
                     errno.ETIMEDOUT, errno.ENONET, errno.EOPNOTSUPP,
                     errno.ENOPROTOOPT, errno.EHOSTDOWN}


class Server:
    """Serve datasets by the Dissociated IPC protocol over TCP.

    Parameters
    ----------
    datasets : mapping
        ticket (bytes, or str taken as UTF-8) -> pyarrow Table / RecordBatch,
        a zero-argument callable returning a RecordBatchReader (or Table), or
        a NumPy array (DistArray, storage) sent as a fixed-shape tensor.
    uri : str
        ``tcp://HOST:PORT`` to listen on (port 0: any free port), optionally
        with ``want_data``/``free_data`` tags.  ``.uri`` is the one to give clients.
    shm : bool
        Send bodies as offsets into a shared-memory segment (type 1), for
        clients on this machine.
    shm_size : int, optional
        Segment size; default: the static datasets plus ``shm_reserve``.
    shm_reserve : int
        Room for streamed (factory) batches when ``shm_size`` is not given;
        a batch that finds no room is sent packed (type 0).
    batch_bytes : int
        Static tables are sent in batches of about this many bytes.
    timeout : float
        Seconds a frame may take to arrive or be accepted once started.
    max_connections : int
        Clients served at once (each costs two threads); one more gets a
        ``server_full`` error frame and is closed.
    idle_timeout : float or None
        Seconds a connection may stay idle (no frame received, no request
        queued or being served, no shared-memory offset held) before it
        gets an ``idle_timeout`` error frame and is closed; None: never.
    """

    def __init__(self, datasets, *, uri="tcp://127.0.0.1:0", shm=False, shm_size=None,
                 shm_reserve=64 << 20, batch_bytes=64 << 20, timeout=60.0,
                 max_request=DEFAULT_MAX_REQUEST, sockbuf=None, max_connections=64,
                 idle_timeout=300.0, _first_seq=0):
        max_connections = check_count("max_connections", max_connections)
        idle_timeout = check_seconds("idle_timeout", idle_timeout, none_ok=True)
        timeout = check_seconds("timeout", timeout)
        shm_size = check_count("shm_size", shm_size, none_ok=True)
        shm_reserve = check_count("shm_reserve", shm_reserve, minimum=0)
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        if not isinstance(datasets, Mapping):
            raise TypeError(f"datasets must be a mapping ticket -> data, not "
                            f"{type(datasets).__name__}")
        self._datasets = {}
        for key, obj in datasets.items():
            ticket = key.encode() if isinstance(key, str) else key
            if not isinstance(ticket, bytes):
                raise TypeError(f"ticket {key!r} must be bytes or str")
            if ticket in self._datasets:
                # {"t": a, b"t": b}: before, b replaced a without a word
                raise ValueError(f"ticket {ticket!r} is given twice (as str and as bytes)")
            self._datasets[ticket] = _Dataset(ticket, obj)
        ep = parse_uri(uri, server=True)
        if ep.segment is not None:
            raise ValueError(f"URI {uri!r}: remote_handle is chosen by the server")
        # (review 27: max_request=0 or -1 was taken and then every request
        # refused as too long; True and 1.5 were taken for both)
        self.batch_bytes = check_count("batch_bytes", batch_bytes)
        self.timeout = timeout
        self.max_request = check_count("max_request", max_request)
        self.sockbuf = check_count("sockbuf", sockbuf, none_ok=True, maximum=2**31 - 1)
        self._first_seq = _first_seq % SEQ_MOD
        self.errors = deque(maxlen=100)
        self._lock = threading.Lock()
        self._refs = threading.Lock()        # Region.refs of every connection
        self._conns = set()
        self._refused = deque()              # (socket, deadline): told "server_full"
        self._closing = threading.Event()
        self._thread = None
        self._pid = os.getpid()
        self.segment = None
        if shm:
            if shm_size is None:
                shm_size = sum(d.stream_size(self.batch_bytes) + 256
                               for d in self._datasets.values() if d.factory is None)
                if any(d.factory is not None for d in self._datasets.values()):
                    shm_size += shm_reserve
            try:
                self.segment = Segment(max(int(shm_size), 4096))
            except OSError as exc:       # (review 22: named the option)
                raise OSError(exc.errno, f"Server(shm=True): a segment of shm_size="
                              f"{shm_size} bytes: {exc.strerror or exc}") from None
        try:
            self._lsock = socket.create_server((ep.host, ep.port),
                                               family=socket.AF_INET6 if ":" in ep.host
                                               else socket.AF_INET)
        except OSError:
            if self.segment is not None:
                self.segment.close()
            raise
        self._lsock.settimeout(0.2)
        host, port = self._lsock.getsockname()[:2]
        free = (ep.free_data if ep.free_data is not None else DEFAULT_FREE_DATA) if shm else None
        self.endpoint = Endpoint(host, port, ep.want_data, free,
                                 self.segment.name if shm else None)
        self.uri = self.endpoint.uri()

    # ------------------------------------------------------------ lifecycle
    def start(self):
        """Serve from a background thread; returns self."""
        self._check_process()
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                            name=f"nclx.ipc server {self.uri}")
            self._thread.start()
        return self

    def serve_forever(self):
        """Accept clients until :meth:`close`."""
        self._check_process()
        while not self._closing.is_set():
            self._linger()
            try:
                sock, addr = self._lsock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._closing.is_set():
                    break
                if exc.errno not in _ACCEPT_TRANSIENT:
                    raise
                # out of descriptors or memory (peers holding many
                # connections), or a connection reset before its accept:
                # before, this ended the accept thread for good
                log.warning("nclx.ipc: accept failed (%s); retrying", exc)
                self._closing.wait(0.05)
                continue
            with self._lock:
                full = len(self._conns) >= self.max_connections
            if full:
                self._refuse(sock, f"client {addr[0]}:{addr[1]}")
                continue
            try:
                conn = _Connection(self, sock, f"client {addr[0]}:{addr[1]}")
            except OSError as exc:          # e.g. a reset before setsockopt
                log.warning("nclx.ipc: %s: %s", addr, exc)
                sock.close()
                continue
            with self._lock:
                if self._closing.is_set():
                    sock.close()
                    break
                self._conns.add(conn)
            try:
                conn.start()
            except RuntimeError as exc:     # can't start new thread: drop this client
                log.warning("nclx.ipc: %s: %s", conn.peer, exc)
                conn.fs.stopping.set()
                with conn.wake:             # a writer that did start ends
                    conn.done = True
                    conn.wake.notify_all()
                conn.fs.close()
                self._forget(conn)

    def close(self):
        """Stop accepting, drop every client, release the segment."""
        if self._closing.is_set():
            return
        if os.getpid() != self._pid:
            # a forked child: the sockets and the segment are the parent's; only
            # this process's descriptors are closed (no shutdown, no unlink).
            # No lock is taken (a thread of the parent may have held one at
            # the fork: the child waited for ever), not even the Event's
            closing = threading.Event()
            closing.set()
            self._closing = closing
            self._lsock.close()
            for c in list(self._conns):
                c.fs.sock.close()
            for sock, _ in list(self._refused):
                sock.close()
            return
        self._closing.set()
        try:
            self._lsock.shutdown(socket.SHUT_RDWR)     # wakes a waiting accept (Linux)
        except OSError:
            pass
        try:
            self._lsock.close()
        except OSError:
            pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        while self._refused:
            self._refused.popleft()[0].close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.fs.close()
        deadline = time.monotonic() + 5      # one wait for all (a factory may be running)
        for c in conns:
            c.join(max(0.0, deadline - time.monotonic()))
        for d in self._datasets.values():
            d.cached = None
        if self.segment is not None:
            self.segment.close()

    def _check_process(self):
        if os.getpid() != self._pid:
            # the child's copy would accept the parent's clients and, with
            # shm=True, allocate in the shared segment beside the parent
            raise RuntimeError(f"this Server was created in process {self._pid}; create a "
                               f"new one after fork")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<nclx.ipc.Server {self.uri} tickets={list(self._datasets)}>"

    @property
    def tickets(self):
        return list(self._datasets)

    def held(self):
        """Offsets currently leased to clients (shared memory), all connections."""
        with self._lock:
            return sum(sum(c.held.values()) for c in self._conns)

    def _record(self, conn, exc):
        _drop_tracebacks(exc)
        self.errors.append((conn.peer, exc))
        log.warning("nclx.ipc: %s: %s", conn.peer, exc)

    def _refuse(self, sock, peer):
        """Past ``max_connections``: an error frame, then the socket is shut
        for writing and kept a moment (at most ``_REFUSED`` of them, drained
        by :meth:`_linger`) so that the client reads the frame, not a reset."""
        exc = ConnectionRefusedError(f"server full: max_connections={self.max_connections} "
                                     f"clients are connected; {peer} refused, try again "
                                     f"later")
        self.errors.append((peer, exc))
        log.warning("nclx.ipc: %s", exc)
        try:
            sock.setblocking(False)
            sock.send(encode_frame(KIND_ERROR, None, encode_error("server_full", str(exc))))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._refused) >= _REFUSED:
            self._refused.popleft()[0].close()
        self._refused.append((sock, time.monotonic() + 1.0))

    def _linger(self):
        """Read and drop what refused clients send (their want_data); close
        each at end of file or a second after it was refused."""
        now = time.monotonic()
        for _ in range(len(self._refused)):
            sock, deadline = self._refused.popleft()
            try:
                for _ in range(16):          # bounded: a flooding client waits its turn
                    if not sock.recv(65536):
                        done = True          # end of file
                        break
                else:
                    done = now > deadline
            except BlockingIOError:
                done = now > deadline
            except OSError:
                done = True
            if done:
                sock.close()
            else:
                self._refused.append((sock, deadline))

    def _forget(self, conn):
        with self._lock:
            self._conns.discard(conn)

    # ------------------------------------------------------------ messages
    def _static(self, ds):
        with ds.lock:
            if ds.cached is None:
                msgs = _encode(ds.table.schema, ds.batches(self.batch_bytes), self.segment,
                               pinned=True)
                if msgs is _NO_ROOM:     # shm_size given too small: send packed
                    msgs = _encode(ds.table.schema, ds.batches(self.batch_bytes))
                ds.cached = msgs
            return ds.cached

    def _messages(self, ds):
        """Iterator over a dataset's messages, schema first."""
        if ds.factory is None:
            yield from self._static(ds)
            return
        reader = ds.factory()
        if isinstance(reader, (pa.Table, pa.RecordBatch)):
            reader = _as_table(reader).to_reader()
        if not isinstance(reader, pa.RecordBatchReader):
            raise TypeError(f"the factory of {ds.ticket!r} returned "
                            f"{type(reader).__name__}, not a RecordBatchReader")
        schema = reader.schema
        yield _split(schema.serialize())[0]
        for batch in reader:
            msgs = _encode(schema, [batch], self.segment) if self.segment else _NO_ROOM
            if msgs is _NO_ROOM:
                msgs = _encode(schema, [batch])
            body_msgs = msgs[1:]                 # drop each writer's schema
            region = body_msgs[0].region if body_msgs and body_msgs[0].region else None
            try:
                yield from body_msgs
            finally:
                if region is not None:
                    self._seal(region)

    def _unref(self, counts):
        """Drop leases: ``counts`` is ((offset, count), ...)."""
        if self.segment is None:
            return
        with self._refs:
            for off, count in counts:
                region = self.segment.region_at(off)
                if region is not None:
                    region.refs -= count
                    self._maybe_free(region)

    def _seal(self, region):
        with self._refs:
            region.sealed = True
            self._maybe_free(region)

    def _maybe_free(self, region):
        if region.sealed and not region.pinned and region.refs <= 0:
            self.segment.free(region)


def _drop_tracebacks(exc):
    """Clear the tracebacks of ``exc`` and of the exceptions chained to it:
    kept in ``Server.errors`` they held their frames, whose locals hold the
    batch bodies being sent (before, 100 clients that stopped reading a
    factory's stream kept 100 batches alive)."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = None
        todo += [e.__cause__, e.__context__]
