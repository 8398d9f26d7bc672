"""The data server: one TCP port, one thread pair per client, optional
shared-memory bodies.

Each connection has a reader (the connection's thread: ``want_data`` and
``free_data`` frames, never blocked by sending) and a writer (streams the
requested datasets in order).  A client that breaks the protocol gets an
error frame and its connection closed; other clients are not affected.

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
import logging
import os
import socket
import threading
from collections import Counter, deque
from collections.abc import Mapping

import pyarrow as pa

from nclx.ipc.datasets import _NO_ROOM, _as_table, _Dataset, _encode, _split
from nclx.ipc.errors import ConnectionLostError, ProtocolError
from nclx.ipc.segment import Segment
from nclx.ipc.transport import FrameSocket, tune
from nclx.ipc.uri import DEFAULT_FREE_DATA, Endpoint, parse_uri
from nclx.ipc.wire import (
    BODY_PACKED,
    BODY_SHM,
    DEFAULT_MAX_REQUEST,
    KIND_ERROR,
    KIND_TAGGED,
    KIND_UNTAGGED,
    SEQ_MOD,
    decode_free_data,
    encode_eos,
    encode_error,
    encode_metadata_prefix,
    encode_shm_body,
    make_tag,
)

log = logging.getLogger("nclx.ipc")


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
    """

    def __init__(self, datasets, *, uri="tcp://127.0.0.1:0", shm=False, shm_size=None,
                 shm_reserve=64 << 20, batch_bytes=64 << 20, timeout=60.0,
                 max_request=DEFAULT_MAX_REQUEST, sockbuf=None, _first_seq=0):
        if not isinstance(datasets, Mapping):
            raise TypeError(f"datasets must be a mapping ticket -> data, not "
                            f"{type(datasets).__name__}")
        self._datasets = {}
        for key, obj in datasets.items():
            ticket = key.encode() if isinstance(key, str) else key
            if not isinstance(ticket, bytes):
                raise TypeError(f"ticket {key!r} must be bytes or str")
            self._datasets[ticket] = _Dataset(ticket, obj)
        ep = parse_uri(uri, server=True)
        if ep.segment is not None:
            raise ValueError(f"URI {uri!r}: remote_handle is chosen by the server")
        self.batch_bytes = int(batch_bytes)
        if self.batch_bytes <= 0:
            raise ValueError(f"batch_bytes must be positive, not {batch_bytes!r}")
        self.timeout = timeout
        self.max_request = max_request
        self.sockbuf = sockbuf
        self._first_seq = _first_seq % SEQ_MOD
        self.errors = deque(maxlen=100)
        self._lock = threading.Lock()
        self._refs = threading.Lock()        # Region.refs of every connection
        self._conns = set()
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
            self.segment = Segment(max(int(shm_size), 4096))
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
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                            name=f"nclx.ipc server {self.uri}")
            self._thread.start()
        return self

    def serve_forever(self):
        """Accept clients until :meth:`close`."""
        while not self._closing.is_set():
            try:
                sock, addr = self._lsock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closing.is_set():
                    break
                raise
            conn = _Connection(self, sock, f"client {addr[0]}:{addr[1]}")
            with self._lock:
                if self._closing.is_set():
                    sock.close()
                    break
                self._conns.add(conn)
            conn.start()

    def close(self):
        """Stop accepting, drop every client, release the segment."""
        if self._closing.is_set():
            return
        self._closing.set()
        if os.getpid() != self._pid:
            # a forked child: the sockets and the segment are the parent's; only
            # this process's descriptors are closed (no shutdown, no unlink)
            self._lsock.close()
            with self._lock:
                conns = list(self._conns)
            for c in conns:
                c.fs.sock.close()
            return
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
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.fs.close()
        for c in conns:
            c.join(5)
        for d in self._datasets.values():
            d.cached = None
        if self.segment is not None:
            self.segment.close()

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
        self.errors.append((conn.peer, exc))
        log.warning("nclx.ipc: %s: %s", conn.peer, exc)

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


class _Connection:
    def __init__(self, server, sock, peer):
        tune(sock, server.sockbuf)
        self.server = server
        self.peer = peer
        self.fs = FrameSocket(sock, max_frame=server.max_request, allowed_kinds=(KIND_TAGGED,),
                              timeout=server.timeout, poll=0.25, peer=peer)
        self.held = Counter()            # offset -> count leased to this client
        self.lock = threading.Lock()
        self.requests = deque()
        self.wake = threading.Condition(self.lock)
        self.reader = threading.Thread(target=self._read_loop, daemon=True,
                                       name=f"nclx.ipc reader {peer}")
        self.writer = threading.Thread(target=self._write_loop, daemon=True,
                                       name=f"nclx.ipc writer {peer}")
        self.done = False

    def start(self):
        self.writer.start()
        self.reader.start()

    def join(self, timeout):
        self.reader.join(timeout)
        self.writer.join(timeout)

    # --------------------------------------------------------------- reader
    def _read_loop(self):
        ep = self.server.endpoint
        try:
            while not self.fs.stopping.is_set():
                frame = self.fs.recv_frame(idle=True)
                if frame is None:
                    break
                if frame.tag == ep.want_data:
                    with self.wake:
                        self.requests.append(bytes(frame.payload))
                        self.wake.notify()
                elif ep.free_data is not None and frame.tag == ep.free_data:
                    self._free(decode_free_data(frame.payload))
                else:
                    raise ProtocolError(f"tagged message with unknown tag {frame.tag:#x} "
                                        f"(want_data={ep.want_data}, "
                                        f"free_data={ep.free_data})")
        except ProtocolError as exc:
            if not self.fs.stopping.is_set():
                self.server._record(self, exc)
                self._send_error("protocol", str(exc))
        except (OSError, TimeoutError) as exc:
            if not self.fs.stopping.is_set():
                self.server._record(self, exc)
        finally:
            self._shutdown()

    def _free(self, offsets):
        with self.lock:
            want = Counter(offsets)
            for off, count in want.items():
                if self.held[off] < count:
                    raise ProtocolError(f"free_data for offset {off}, which this client "
                                        f"does not hold (held {self.held[off]} time(s), "
                                        f"freed {count})")
            for off, count in want.items():
                self.held[off] -= count
                if not self.held[off]:
                    del self.held[off]
        self.server._unref(want.items())

    def _lease(self, msg, offsets):
        with self.lock:
            for off in offsets:
                self.held[off] += 1
        with self.server._refs:
            msg.region.refs += len(offsets)

    def _release_all(self):
        with self.lock:
            held, self.held = self.held, Counter()
        self.server._unref(held.items())

    def _shutdown(self):
        with self.wake:
            self.done = True
            self.wake.notify()
        self.fs.stopping.set()
        if self.writer is not threading.current_thread():
            self.writer.join(self.server.timeout or None)
        self._release_all()
        self.fs.close()
        self.server._forget(self)

    def _send_error(self, code, message, ticket=None):
        try:
            self.fs.send([(KIND_ERROR, None, [encode_error(code, message, ticket)])])
        except (OSError, TimeoutError):
            pass

    # --------------------------------------------------------------- writer
    def _write_loop(self):
        while True:
            with self.wake:
                while not self.requests and not self.done:
                    self.wake.wait()
                if self.done:
                    return
                ticket = self.requests.popleft()
            try:
                self._serve(ticket)
            except (ConnectionLostError, OSError, TimeoutError) as exc:
                if not self.fs.stopping.is_set():
                    self.server._record(self, exc)
                    self.fs.close()        # wakes the reader, which cleans up
                return

    def _serve(self, ticket):
        ds = self.server._datasets.get(ticket)
        if ds is None:
            self._send_error("unknown_ticket", f"unknown ticket {ticket!r} (the server has "
                             f"{len(self.server._datasets)} datasets)", ticket)
            return
        seq = self.server._first_seq
        pending = []
        try:
            for msg in self.server._messages(ds):
                pending.extend(self._frames(msg, seq))
                seq = (seq + 1) % SEQ_MOD
                if ds.factory is not None or msg.seg_offset is None or len(pending) > 256:
                    self.fs.send(pending)     # offsets of a static dataset batch up
                    pending = []
        except (ConnectionLostError, OSError, TimeoutError):
            raise
        except Exception as exc:
            log.warning("nclx.ipc: dataset %r failed: %s", ticket, exc)
            self.fs.send(pending)
            self._send_error("dataset", f"dataset {ticket!r} failed: "
                             f"{type(exc).__name__}: {exc}", ticket)
            return
        pending.append((KIND_UNTAGGED, None, [encode_eos(seq)]))
        self.fs.send(pending)

    def _frames(self, msg, seq):
        frames = [(KIND_UNTAGGED, None, [encode_metadata_prefix(seq), msg.meta])]
        if msg.body is None:
            return frames
        if msg.seg_offset is None:
            frames.append((KIND_TAGGED, make_tag(seq, BODY_PACKED), [msg.body]))
            return frames
        pairs = [(msg.seg_offset + off, length) for off, length in msg.info.buffers]
        self._lease(msg, [off for off, _ in pairs])
        frames.append((KIND_TAGGED, make_tag(seq, BODY_SHM), [encode_shm_body(pairs)]))
        return frames
