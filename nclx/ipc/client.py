"""The client: ``want_data``, frames in, record batches out.

Frames are matched by sequence number (reassembly.Reassembler) and handed,
as an encapsulated IPC stream, to pyarrow's stream reader through a
file-like ``_Source`` whose ``read_buffer`` returns the received body, or a
view of the shared segment, as is: pyarrow slices it without copying.

Shared memory: each body of type 1 becomes one read-only view of the mapped
segment, wrapped in a pyarrow Buffer; ``weakref.finalize`` on that view
sends ``free_data`` with the message's offsets once pyarrow drops the last
array using it.  ``Client.close()`` (and leaving its ``with`` block)
releases every offset still held at once: views kept beyond that stay
mapped (no crash) but the server may reuse their bytes.  After ``os.fork``
a child never sends ``free_data`` for its parent's leases.
"""
import os
import socket
import threading
import weakref
from collections import deque

import pyarrow as pa

from nclx.ipc import tensor
from nclx.ipc.decode import (
    encapsulate,
    gather_body,
    handle_frame,
)
from nclx.ipc.errors import ConnectionLostError, ProtocolError
from nclx.ipc.options import check_count, check_rate, check_seconds
from nclx.ipc.reassembly import MAX_ROWS
from nclx.ipc.segment import Mapping
from nclx.ipc.stream import BatchStream
from nclx.ipc.transport import MIN_RATE, FrameSocket, tune
from nclx.ipc.uri import parse_uri
from nclx.ipc.wire import BODY_SHM, DEFAULT_MAX_FRAME, KIND_TAGGED, encode_free_data


class Client:
    """One connection to a server.

    Parameters
    ----------
    uri : str
        The server's URI (``Server.uri``).
    timeout : float
        Seconds to wait for the server before TimeoutError.
    max_frame : int
        Largest frame accepted (default 1 GiB); a larger declared length is a
        ProtocolError before anything is allocated.
    copy : bool
        Shared memory: copy bodies out of the segment and free them at once
        (the result then owns its memory).
    validate : bool
        Run ``RecordBatch.validate(full=True)`` on every received batch.
    min_rate : float or None
        A frame of n bytes must arrive within ``timeout + n / min_rate``
        seconds (default 8 KiB/s), so a server trickling bytes cannot hold
        the client for ever; None: only silences longer than ``timeout``
        end a stream.
    max_rows : int
        Longest array a batch may claim (its length, or a nested field's)
        beyond one bit of body per element (default 2**31 - 1, the longest
        pyarrow's IPC writer writes by default): a null column, an empty
        struct or a run-end encoded array claiming more is a ProtocolError
        naming the column and the length.
    """

    def __init__(self, uri, *, timeout=30.0, max_frame=DEFAULT_MAX_FRAME, copy=False,
                 validate=True, min_rate=MIN_RATE, max_rows=MAX_ROWS, _first_seq=0):
        min_rate = check_rate("min_rate", min_rate, none_ok=True)
        max_rows = check_count("max_rows", max_rows, minimum=0)
        timeout = check_seconds("timeout", timeout)
        max_frame = check_count("max_frame", max_frame)
        self.max_rows = max_rows
        self.endpoint = ep = parse_uri(uri)
        self.uri = uri
        self.timeout = timeout
        self.copy = copy
        self.validate = validate
        self._first_seq = _first_seq
        self.segment = Mapping(ep.segment) if ep.segment is not None else None
        self._max_frame, self._min_rate = max_frame, min_rate
        self.fs = self._connect()
        self._pid = os.getpid()
        self._wlock = threading.Lock()
        self._claim = threading.Lock()    # a BatchStream's check-and-claim of the connection
        self._owner = None
        self._pending = deque()           # offsets waiting for a free_data frame
        self._leases = {}                 # id -> offsets, held views
        self._next_lease = 0
        self._active_ref = None           # the BatchStream being read (weakly: see _active)
        self._abandoned = None            # the reassembler of a stream dropped unfinished
        self._closed = False
        self._broken = None
        self._auto_close = False

    # -------------------------------------------------------------- public
    def stream(self, ticket):
        """A :class:`BatchStream` of the dataset under ``ticket`` (bytes or str)."""
        return BatchStream(self, _ticket(ticket))

    def fetch(self, ticket):
        """The whole dataset under ``ticket`` as a pyarrow Table."""
        with self.stream(ticket) as s:
            return s.read_all()

    def fetch_array(self, name):
        """The NumPy array served under ``name`` (zero-copy view on shared memory)."""
        return tensor.table_to_array(self.fetch(name))

    @property
    def held(self):
        """Offsets this client holds (shared memory, not yet freed)."""
        return sum(len(offsets) for offsets, _ in list(self._leases.values()))

    def release(self):
        """Send ``free_data`` for every offset still held (their views may
        then be overwritten by the server).  RuntimeError in a forked child:
        the leases are the parent's (before, the child freed them on the
        parent's connection, and the parent's own free_data was then refused
        by the server as freeing offsets it did not hold)."""
        self._check_process()
        leases, self._leases = self._leases, {}
        for offsets, fin in list(leases.values()):
            fin.detach()
            self._pending.extend(offsets)
        self._flush()

    def close(self):
        """Release everything and close the connection."""
        if self._closed:
            return
        if os.getpid() == self._pid and self._broken is None:
            try:
                self.release()
            except (OSError, TimeoutError, ProtocolError):
                pass
        else:
            for _, fin in list(self._leases.values()):
                fin.detach()
            self._leases = {}
        self._closed = True
        if os.getpid() != self._pid:
            self.fs.sock.close()     # a forked child: no shutdown, the parent's socket
        else:
            self.fs.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --------------------------------------------------------- connection
    def _connect(self):
        ep = self.endpoint
        sock = socket.create_connection((ep.host, ep.port), timeout=self.timeout)
        tune(sock)
        return FrameSocket(sock, max_frame=self._max_frame, timeout=self.timeout,
                           peer=f"server {ep.host}:{ep.port}", min_rate=self._min_rate)

    def _reconnect_after_idle(self):
        """A new connection in place of one the server closed as idle
        (``Server(idle_timeout=...)``); False when this client holds views
        of shared memory (the server does not close such a connection as
        idle, and their offsets died with it).  With shared memory the
        segment must still be the one mapped: a server restarted on the
        same port has a new one, and its offsets read in the old mapping
        were silently wrong data (review 20); ProtocolError then, as a new
        Client with the old URI gets."""
        if self._leases:
            return False
        self.fs.close()
        self._pending.clear()        # the server freed them with the old connection
        self.fs = self._connect()
        if self.segment is not None:
            ep = self.endpoint
            self.segment.check_current(f"reconnecting to {ep.host}:{ep.port} after its "
                                       f"idle timeout")
        return True

    # ------------------------------------------------------------ sending
    def _send(self, frames):
        with self._wlock:
            self._owner = threading.get_ident()
            try:
                self.fs.send(frames + self._free_frames())
                while self._pending:      # a finalizer ran during the send
                    self.fs.send(self._free_frames())
            finally:
                self._owner = None

    def _free_frames(self):
        offsets = []
        while self._pending:
            offsets.append(self._pending.popleft())
        if not offsets:
            return []
        return [(KIND_TAGGED, self.endpoint.free_data, [encode_free_data(offsets)])]

    def _flush(self):
        if self._owner == threading.get_ident() or self._closed or self._broken:
            return
        if self._pending:
            self._send([])

    def _lease(self, view, offsets):
        lease_id = self._next_lease
        self._next_lease += 1
        fin = weakref.finalize(view, self._released, lease_id)
        fin.atexit = False
        self._leases[lease_id] = (offsets, fin)

    def _released(self, lease_id):
        """A view died (any thread, maybe inside the GC)."""
        if os.getpid() != self._pid:
            return                      # a forked child: the leases are the parent's
        entry = self._leases.pop(lease_id, None)
        if entry is None or self._closed or self._broken:
            return
        self._pending.extend(entry[0])
        try:
            self._flush()
        except (OSError, TimeoutError, ProtocolError):
            pass                        # the server frees on disconnect
        if self._auto_close and not self._leases and self._active is None:
            self.close()

    def _free_now(self, offsets):
        if offsets:
            self._pending.extend(offsets)
            self._flush()

    # ----------------------------------------------------------- receiving
    def _same_process(self):
        return os.getpid() == self._pid

    def _check_process(self):
        if os.getpid() != self._pid:
            raise RuntimeError("this Client was opened in process "
                               f"{self._pid}; open a new one after fork")

    def _check_usable(self):
        self._check_process()
        if self._closed:
            raise ValueError("the Client is closed")
        if self._broken is not None:
            raise ProtocolError(f"the connection is unusable after an earlier error: "
                                f"{self._broken}")

    # The stream being read is held weakly: a stream dropped before its end
    # (``for b in stream(...): break``) must be collectable, so that its
    # finalizers release the connection (before, the client held the stream
    # and the stream's finalizer held the client: neither was ever freed).
    @property
    def _active(self):
        ref = self._active_ref
        return None if ref is None else ref()

    @_active.setter
    def _active(self, stream):
        self._active_ref = None if stream is None else weakref.ref(stream)

    def _stream_dropped(self, reasm):
        """A BatchStream was collected; if it was still being read, the rest
        of its frames are drained before this client reads another stream."""
        ref = self._active_ref
        if ref is not None and ref() is None:
            self._active_ref = None
            self._abandoned = reasm

    def _drain(self, reasm):
        """Read and drop what is left of a stream (freeing its offsets)."""
        try:
            while True:
                entry = self._next_entry(reasm)
                if entry is None:
                    break
                if entry.body_type == BODY_SHM:
                    self._free_now([off for off, _ in entry.body[1]])
        except Exception as exc:
            self._fail(exc)
            raise

    def _fail(self, exc):
        """A protocol error: the connection has lost sync; close it.  Only a
        summary of ``exc`` is kept: the exception's traceback holds the frames
        that hold the failed stream (review 22: every fetch failing so leaked
        its Client, stream and, on shm, a mapping and an fd)."""
        self._broken = f"{type(exc).__name__}: {exc}"
        for _, fin in list(self._leases.values()):
            fin.detach()
        self._leases = {}
        self.fs.close()

    def _next_entry(self, reasm):
        while True:
            entry = reasm.pop()
            if entry is not None:
                return entry
            if reasm.finished:
                if self.fs.buffered():
                    raise ProtocolError(f"{self.fs.buffered()} bytes arrived after the end of "
                                        f"stream (seq {reasm.eos_seq})")
                return None
            frame = self.fs.recv_frame()
            if frame is None:
                missing = reasm.missing_bodies
                if reasm.received_nothing:
                    # nothing of the reply came (review 24: "mid-stream" for a
                    # server that had exited between two requests)
                    raise ConnectionLostError("the server closed the connection before "
                                              "replying to the request (has it exited?)")
                raise ConnectionLostError(
                    f"the server closed the connection mid-stream (next seq "
                    f"{reasm.next_seq}" + (f", bodies missing for seq {missing}" if missing
                                           else "") + ")")
            handle_frame(frame, reasm, self.segment)

    def _body_piece(self, entry):
        """The body of a complete message as one pyarrow Buffer."""
        info = entry.info
        if entry.body_type != BODY_SHM:
            body = entry.body
            return body if isinstance(body, pa.Buffer) else pa.py_buffer(body)
        _, pairs = entry.body
        offsets = [off for off, _ in pairs]
        shifts = {off - moff for (off, length), (moff, _)
                  in zip(pairs, info.buffers, strict=True) if length}
        if len(shifts) == 1 and not self.copy:
            base = shifts.pop()
            if 0 <= base and base + info.body_length <= self.segment.size:
                view = self.segment.view(base, info.body_length)
                self._lease(view, offsets)
                return pa.py_buffer(view)
        # scattered buffers (another server's layout) or copy=True: gather a packed body
        out = gather_body(info, pairs, self.segment)
        self._free_now(offsets)
        return out

    def _pieces(self, entry):
        return encapsulate(entry, self._body_piece(entry) if entry.needs_body else None)


def _ticket(ticket):
    if isinstance(ticket, str):
        return ticket.encode()
    if isinstance(ticket, (bytes, bytearray, memoryview)):
        return bytes(ticket)
    raise TypeError(f"ticket must be bytes or str, not {type(ticket).__name__}")
