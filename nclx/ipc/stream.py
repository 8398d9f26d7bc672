"""A stream of record batches read from a Client's connection
(:class:`BatchStream`): the batches of one dataset, as they arrive, handed
to pyarrow's stream reader through the client's reassembly of its frames."""
import functools
import weakref

import pyarrow as pa

from nclx.ipc.decode import _Source, check_schema
from nclx.ipc.errors import ConnectionLostError, ProtocolError, RemoteError
from nclx.ipc.reassembly import Reassembler
from nclx.ipc.wire import KIND_ERROR, KIND_TAGGED, decode_error

__all__ = ["BatchStream"]

#: error codes after which the server keeps the connection (any other
#: error frame, e.g. ``protocol``, ``server_full``, ``idle_timeout``,
#: leaves the Client unusable)
_USABLE = ("unknown_ticket", "dataset")


def _early_error(client):
    """The RemoteError of an error frame waiting before any request (a
    server closing this connection says why: ``server_full``,
    ``idle_timeout``), or None if what waits is not one."""
    if client.fs.first_pending() != KIND_ERROR:
        return None
    try:
        frame = client.fs.recv_frame()
        if frame is None or frame.kind != KIND_ERROR:
            return None
        code, message, _ = decode_error(frame.payload)
    except (ProtocolError, OSError, TimeoutError):
        return None
    return RemoteError(code, message)


def _request(client, ticket):
    """Send ``want_data`` for ``ticket``.  A connection the server closed
    as idle is opened again, once, and the request sent there (a client
    kept between fetches longer than the server's ``idle_timeout`` works
    on); any other early error frame is raised."""
    for retry in (True, False):
        if client.fs.first_pending() is not None:
            err = _early_error(client) or ProtocolError(
                "the server sent data after the end of the last stream")
            cause = None
        else:
            try:
                client._send([(KIND_TAGGED, client.endpoint.want_data, [ticket])])
                return
            except (OSError, TimeoutError) as exc:
                # the server may have said why it closed (full, idle) before
                err, cause = _early_error(client), exc
                if err is None:
                    raise
        if (retry and isinstance(err, RemoteError) and err.code == "idle_timeout"
                and client._reconnect_after_idle()):
            continue
        raise err from cause


def _stream_dropped(client_ref, reasm):
    client = client_ref()
    if client is not None:
        client._stream_dropped(reasm)


class BatchStream:
    """The record batches of one dataset, as they arrive.

    Iterate it, or ``read_all()``; ``schema`` is available once the first
    message has arrived.  As a context manager (the ``with`` block of
    :func:`stream`), leaving it ends the stream and, if the stream opened its
    own connection, releases its shared-memory views (see Client.close).
    """

    def __init__(self, client, ticket, owns_client=False):
        # checked and claimed at once: two threads must never both read
        # the one connection (before, one in 16 such pairs got past the check)
        client._check_process()      # first: a child must not wait on a lock copied held
        with client._claim:
            client._check_usable()
            if client._active is not None:
                raise RuntimeError("this Client is already reading a stream; finish it first")
            client._active = self
        try:
            if client._abandoned is not None:             # a stream dropped unfinished
                reasm, client._abandoned = client._abandoned, None
                client._drain(reasm)
        except BaseException:
            client._active = None
            raise
        self.client = client
        self.ticket = ticket
        self.owns_client = owns_client
        self._reasm = reasm = Reassembler(client._first_seq, max_rows=client.max_rows)
        # no reference back to self: pyarrow's reader holds the source from C++,
        # where the garbage collector cannot see a cycle
        self._source = _Source(functools.partial(client._next_entry, reasm), client._pieces)
        self._reader = None
        self._schema = None
        self._done = False
        self.num_batches = 0
        self.nbytes = 0
        # the client weakly too: the finalizer registry is a root, and a
        # stream kept alive by anything the client holds kept both (review 22)
        weakref.finalize(self, _stream_dropped, weakref.ref(client), reasm)
        try:
            _request(client, ticket)
        except BaseException as exc:
            client._active = None
            client._fail(exc)
            raise

    def _guard(self, fn):
        try:
            return fn()
        except StopIteration:
            raise
        except (RemoteError, ConnectionLostError, TimeoutError) as exc:
            self._finish(exc)
            raise
        except ProtocolError as exc:
            self._finish(exc)
            raise
        except (pa.ArrowException, OSError) as exc:   # pyarrow: bad flatbuffers are OSError
            err = ProtocolError(f"ticket {self.ticket!r}: pyarrow rejects the stream after "
                                f"{self._source.messages} message(s): {exc}")
            self._finish(err)
            raise err from exc
        except Exception as exc:
            # anything else (a bug, MemoryError, ...): the connection has lost
            # sync; never leave the client claimed by a stream that is dead
            self._finish(exc)
            raise

    def _finish(self, exc=None):
        client = self.client
        self._done = True
        self._reader = None          # drops the dictionaries it holds (and their views)
        client._active = None
        if exc is not None and not (isinstance(exc, RemoteError) and exc.code in _USABLE):
            client._fail(exc)
        if self.owns_client:
            # the stream's own connection (ipc.stream) is done with: it closes
            # now, or once the last shared-memory view is released (before
            # review 20, only when this BatchStream was collected: a stream
            # iterated to its end and kept held a server slot)
            client._auto_close = True
            if not client._leases:
                client.close()

    def _open(self):
        self.client._check_process()
        if self._reader is None:
            if self._done:
                raise ValueError(f"the stream of {self.ticket!r} has ended")
            source = pa.PythonFile(self._source, mode="r")
            self._reader = self._guard(lambda: pa.ipc.open_stream(source))
            self._schema = self._guard(lambda: check_schema(self._reader.schema))
        return self._reader

    @property
    def schema(self):
        """The stream's schema (waits for its first message)."""
        if self._schema is None:
            self._open()
        return self._schema

    def __iter__(self):
        return self

    def __next__(self):
        self.client._check_process()
        if self._done:
            raise StopIteration
        reader = self._open()
        if reader is None:
            raise StopIteration
        try:
            batch = self._guard(reader.read_next_batch)
        except StopIteration:
            self._finish()
            raise
        if self.client.validate:
            self._guard(lambda: batch.validate(full=True))
        self.num_batches += 1
        # not batch.nbytes: on pyarrow 26 it segfaults for a 0-row union
        # column read from IPC (review 22); the buffers' total size does not
        self.nbytes += batch.get_total_buffer_size()
        return batch

    def read_all(self):
        """Every remaining batch as a Table."""
        schema = self.schema
        return pa.Table.from_batches(list(self), schema=schema)

    def close(self):
        """End the stream: read and drop what is left (freeing its offsets)."""
        client = self.client
        if not client._same_process():
            # a forked child: the connection is the parent's; reading or
            # freeing here would take the parent's frames and leases
            self._done = True
            if self.owns_client:
                client.close()              # this process's descriptor only
            return
        if not self._done and client._broken is None and not client._closed:
            try:
                client._drain(self._reasm)
            except Exception:  # noqa: BLE001 - the client failed (unusable now)
                pass
            self._finish()
        self._done = True
        if client._active is self:
            client._active = None
        if self.owns_client:
            client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
