"""One client connection of the data server: a reader thread
(``want_data`` and ``free_data`` frames, never blocked by sending) and a
writer thread (streams the requested datasets in order, with their
shared-memory leases).  A client that breaks the protocol gets an error
frame and its connection closed; other clients are not affected.  A
connection idle for ``Server(idle_timeout=...)`` seconds (no frame
received, no request queued or being served, no shared-memory offset
held) gets an ``idle_timeout`` error frame and is closed."""
import logging
import threading
import time
from collections import Counter, deque

from nclx.errors import NclxError
from nclx.ipc.errors import ConnectionLostError, ProtocolError
from nclx.ipc.transport import FrameSocket, tune
from nclx.ipc.wire import (
    BODY_PACKED,
    BODY_SHM,
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

#: requests one connection queues before its reader waits for the writer
QUEUE_REQUESTS = 64
#: bytes of queued tickets before its reader waits (one request always fits)
QUEUE_BYTES = 4 << 20
#: longest ticket echoed back in an error reply
ECHO_TICKET = 1024


class IdleTimeout(NclxError, TimeoutError):
    """A connection was idle past the server's ``idle_timeout``."""


def _quote(ticket, limit=80):
    """``repr`` of a ticket, at most ``limit`` bytes of it and its length."""
    if len(ticket) <= limit:
        return repr(ticket)
    return f"{ticket[:limit]!r}... ({len(ticket)} bytes)"


class _Connection:
    def __init__(self, server, sock, peer):
        tune(sock, server.sockbuf)
        self.server = server
        self.peer = peer
        self.fs = FrameSocket(sock, max_frame=server.max_request, allowed_kinds=(KIND_TAGGED,),
                              timeout=server.timeout, poll=0.25, peer=peer, per_frame=True)
        self.held = Counter()            # offset -> count leased to this client
        self.lock = threading.Lock()
        self.requests = deque()
        self.queued = 0                  # bytes of the queued tickets
        self.wake = threading.Condition(self.lock)
        self.reader = threading.Thread(target=self._read_loop, daemon=True,
                                       name=f"nclx.ipc reader {peer}")
        self.writer = threading.Thread(target=self._write_loop, daemon=True,
                                       name=f"nclx.ipc writer {peer}")
        self.done = False
        self.released = False            # leases dropped: no new one may be taken
        self._running = 2                # threads to finish before the server forgets us
        self.serving = False             # the writer is serving a request
        self.last_active = time.monotonic()     # last frame in, or request served
        if server.idle_timeout is not None:
            self.fs.idle_check = self._idle_check

    def start(self):
        self.writer.start()
        self.reader.start()

    def join(self, timeout):
        """Wait for both threads, ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        self.reader.join(timeout)
        self.writer.join(max(0.0, deadline - time.monotonic()))

    # --------------------------------------------------------------- reader
    def _idle_check(self):
        """Raise IdleTimeout if the connection has been idle too long: no
        frame received and no request served for ``idle_timeout`` seconds,
        none queued or being served (a slow factory, a big stream), no
        shared-memory offset held (its views would outlive their lease)."""
        limit = self.server.idle_timeout
        with self.lock:
            if self.requests or self.serving or self.held:
                return
            idle = time.monotonic() - self.last_active
        if idle > limit:
            raise IdleTimeout(f"connection idle for {idle:.1f} s (idle_timeout {limit} s: "
                              f"no request, no frame received): closed by the server")

    def _read_loop(self):
        ep = self.server.endpoint
        try:
            while not self.fs.stopping.is_set():
                frame = self.fs.recv_frame(idle=True)
                if frame is None:
                    break
                with self.lock:
                    self.last_active = time.monotonic()
                if frame.tag == ep.want_data:
                    self._queue(bytes(frame.payload))
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
        except IdleTimeout as exc:
            if not self.fs.stopping.is_set():
                self.server._record(self, exc)
                self._send_error("idle_timeout", str(exc))
        except (OSError, TimeoutError) as exc:
            if not self.fs.stopping.is_set():
                self.server._record(self, exc)
        finally:
            self._shutdown()

    def _queue(self, ticket):
        """Queue a request; while the queue holds :data:`QUEUE_BYTES` (or
        :data:`QUEUE_REQUESTS`), stop reading until the writer catches up: a
        client that sends requests without reading the replies is slowed by
        TCP, never buffered without bound here."""
        with self.wake:
            while (self.requests and (len(self.requests) >= QUEUE_REQUESTS
                                      or self.queued + len(ticket) > QUEUE_BYTES)
                   and not self.done and not self.fs.stopping.is_set()):
                self.wake.wait(0.25)
            self.requests.append(ticket)
            self.queued += len(ticket)
            self.wake.notify_all()

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
            # a writer still in a factory when the reader gave up (after
            # ``timeout``) must not lease after _release_all: before, those
            # offsets stayed leased for ever and their region never came back
            if self.released:
                raise ConnectionLostError(f"connection to {self.peer} closed: its "
                                          f"shared-memory leases are released")
            for off in offsets:
                self.held[off] += 1
            with self.server._refs:
                msg.region.refs += len(offsets)

    def _release_all(self):
        with self.lock:
            self.released = True
            held, self.held = self.held, Counter()
        self.server._unref(held.items())

    def _thread_done(self):
        """One of the two threads ends; the last one takes the connection
        off the server's list (before, the reader did even while the writer
        was still in a factory: its slot was given to a new client, and
        clients disconnecting from slow factories grew threads past
        ``2 * max_connections + 1``)."""
        with self.lock:
            self._running -= 1
            last = self._running <= 0
        if last:
            self.server._forget(self)

    def _shutdown(self):
        with self.wake:
            self.done = True
            self.wake.notify()
        self.fs.stopping.set()
        if self.writer is not threading.current_thread():
            self.writer.join(self.server.timeout or None)
        self._release_all()
        self.fs.close()
        self._thread_done()

    def _send_error(self, code, message, ticket=None):
        try:
            self.fs.send([(KIND_ERROR, None, [encode_error(code, message, ticket)])])
        except (OSError, TimeoutError):
            pass

    # --------------------------------------------------------------- writer
    def _write_loop(self):
        try:
            self._write_requests()
        finally:
            self._thread_done()

    def _write_requests(self):
        while True:
            with self.wake:
                while not self.requests and not self.done:
                    self.wake.wait(0.25)
                if self.done:
                    return
                ticket = self.requests.popleft()
                self.queued -= len(ticket)
                self.serving = True
                self.wake.notify_all()           # a reader waiting for room
            try:
                self._serve(ticket)
            except (ConnectionLostError, OSError, TimeoutError) as exc:
                if not self.fs.stopping.is_set():
                    self.server._record(self, exc)
                    self.fs.close()        # wakes the reader, which cleans up
                return
            finally:
                with self.lock:
                    self.serving = False
                    self.last_active = time.monotonic()

    def _serve(self, ticket):
        ds = self.server._datasets.get(ticket)
        if ds is None:
            # a reply of bounded size whatever the ticket (a 1 MiB ticket
            # quoted in full came back as 11 MiB of text)
            self._send_error("unknown_ticket", f"unknown ticket {_quote(ticket)} (the server "
                             f"has {len(self.server._datasets)} datasets)",
                             ticket if len(ticket) <= ECHO_TICKET else None)
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
