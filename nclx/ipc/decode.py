"""The client's sans-IO half: frames in, an encapsulated IPC stream out.

``handle_frame`` feeds one received frame to a Reassembler (checking shared
memory offsets against the mapped segment first); ``encapsulate`` turns a
complete message back into Arrow's encapsulated format (continuation,
length, padded metadata, body); ``_Source`` is the file-like object
pyarrow's stream reader pulls those from: ``read_buffer`` returns a body as
is (pyarrow slices it without copying).  ``decode_frames`` runs the whole
path over a list of frames, for tests and fuzzing.
"""
import struct
from collections import deque

import pyarrow as pa

from nclx.ipc.errors import (
    ConnectionLostError,
    ProtocolError,
    RemoteError,
    UnknownTicketError,
)
from nclx.ipc.flatbuf import parse_message
from nclx.ipc.reassembly import MAX_ROWS, Reassembler
from nclx.ipc.wire import (
    BODY_SHM,
    KIND_ERROR,
    KIND_TAGGED,
    KIND_UNTAGGED,
    MSG_EOS,
    decode_error,
    decode_shm_body,
    decode_untagged,
    split_tag,
)

_EOS_MARKER = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_ENCAP = struct.Struct("<Ii")


def handle_frame(frame, reasm, segment=None):
    """Feed one received frame to the Reassembler (``segment``: the client's
    Mapping, None without shared memory).  Error frames raise RemoteError."""
    kind, tag, payload = frame
    if kind == KIND_ERROR:
        code, message, ticket = decode_error(payload)
        if code == "unknown_ticket":
            raise UnknownTicketError(ticket, message)
        raise RemoteError(code, message)
    if kind == KIND_UNTAGGED:
        mtype, seq, flatbuffer = decode_untagged(payload)
        if mtype == MSG_EOS:
            reasm.eos(seq)
        else:
            reasm.metadata(seq, parse_message(flatbuffer), bytes(flatbuffer))
        return
    if kind != KIND_TAGGED:
        raise ProtocolError(f"unknown frame kind {kind}")
    seq, body_type = split_tag(tag)
    if body_type == BODY_SHM:
        if segment is None:
            raise ProtocolError(f"seq {seq}: body type 1 (shared-memory offsets) but the "
                                f"URI has no remote_handle")
        total, pairs = decode_shm_body(payload)
        for i, (off, length) in enumerate(pairs):
            segment.check(off, length, f"seq {seq} buffer {i}")
        payload = (total, pairs)
    reasm.body(seq, body_type, payload)


def _children(t):
    if isinstance(t, pa.DictionaryType):
        t = t.value_type
    while isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return [t.field(i) for i in range(t.num_fields)]


#: Arrow type ids pyarrow reads from IPC but cannot wrap as Python objects
#: (``KeyError: 21`` / ``22`` on access): interval YEAR_MONTH and DAY_TIME
_UNWRAPPABLE = {pa.lib.Type_INTERVAL_MONTHS: "interval YEAR_MONTH",
                pa.lib.Type_INTERVAL_DAY_TIME: "interval DAY_TIME"}


def _check_type(t, path):
    """Raise ProtocolError if type ``t`` (of the column at ``path``; not its
    children) is one pyarrow cannot hand to Python."""
    while True:
        if isinstance(t, pa.DictionaryType):
            _check_type(t.index_type, path)
            t = t.value_type
        elif isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        else:
            break
    if t.id in _UNWRAPPABLE:
        raise ProtocolError(f"schema: column {path!r} has type {_UNWRAPPABLE[t.id]}, which "
                            f"pyarrow reads but cannot give to Python")
    if pa.types.is_timestamp(t):
        try:
            t.tz
        except UnicodeDecodeError:
            raise ProtocolError(f"schema: column {path!r} is a timestamp whose time zone "
                                f"is not UTF-8") from None


def check_schema(schema):
    """Raise ProtocolError if a field name (nested ones too) is not UTF-8, a
    timestamp's time zone is not UTF-8, or a type is an interval YEAR_MONTH
    or DAY_TIME: pyarrow takes those but cannot give them to Python (before
    review 20, a UnicodeDecodeError or KeyError at first use).  The error
    names the column (its path for nested fields)."""
    def walk(field, path):
        try:
            name = field.name
        except UnicodeDecodeError:
            raise ProtocolError(f"schema: a field name in {path or 'the schema'} is not "
                                f"UTF-8") from None
        here = f"{path}.{name}" if path else name
        _check_type(field.type, here)
        for child in _children(field.type):
            walk(child, here)
    for field in schema:
        walk(field, "")
    return schema


def encapsulate(entry, body=None):
    """The encapsulated IPC message of a complete entry: [prefix + metadata, body]."""
    meta = entry.metadata
    pad = -len(meta) % 8
    head = pa.py_buffer(_ENCAP.pack(0xFFFFFFFF, len(meta) + pad) + meta + b"\0" * pad)
    if not entry.needs_body:
        return [head]
    if not isinstance(body, pa.Buffer):
        body = pa.py_buffer(body)
    return [head, body]


def gather_body(info, pairs, segment):
    """A packed body (a new buffer) from the (offset, length) pairs of a
    body of type 1, each buffer copied to its place in the metadata."""
    out = pa.allocate_buffer(info.body_length, resizable=False)
    dst = memoryview(out).cast("B")
    dst[:] = bytes(info.body_length)          # padding between buffers: zeros
    for (off, length), (moff, _) in zip(pairs, info.buffers, strict=True):
        if length:
            dst[moff:moff + length] = segment.view(off, length)
    dst.release()
    return out


def decode_frames(frames, *, first_seq=0, validate=True, segment=None, max_rows=MAX_ROWS):
    """Sans-IO: the Table a client builds from ``frames``, raising what it
    would raise (shared-memory bodies are copied out of ``segment``, a
    segment.Mapping).  For tests and fuzzing."""
    reasm = Reassembler(first_seq, max_rows=max_rows)
    it = iter(frames)

    def next_entry():
        while True:
            entry = reasm.pop()
            if entry is not None or reasm.finished:
                return entry
            frame = next(it, None)
            if frame is None:
                raise ConnectionLostError(f"frames end mid-stream (next seq {reasm.next_seq})")
            handle_frame(frame, reasm, segment)

    def pieces(entry):
        body = entry.body
        if entry.body_type == BODY_SHM:
            body = gather_body(entry.info, body[1], segment)
        return encapsulate(entry, body)

    source = _Source(next_entry, pieces)
    try:
        reader = pa.ipc.open_stream(pa.PythonFile(source, mode="r"))
        check_schema(reader.schema)
        batches = list(reader)
        if validate:
            for b in batches:
                b.validate(full=True)
    except (ProtocolError, RemoteError, TimeoutError):
        raise
    except (pa.ArrowException, OSError) as exc:     # pyarrow reports bad flatbuffers as OSError
        raise ProtocolError(f"pyarrow rejects the stream after {source.messages} "
                            f"message(s): {exc}") from exc
    return pa.Table.from_batches(batches, schema=reader.schema)


class _Source:
    """The file-like object pyarrow's stream reader reads from."""

    def __init__(self, next_entry, pieces_of):
        self.next_entry, self.pieces_of = next_entry, pieces_of
        self.pieces = deque()
        self.avail = 0
        self.pos = 0
        self.eof = False
        self.closed = False
        self.messages = 0

    def readable(self):
        return True

    def seekable(self):
        return False

    def writable(self):
        return False

    def tell(self):
        return self.pos

    def close(self):
        self.closed = True

    def _more(self):
        try:
            entry = self.next_entry()
        except (ProtocolError, TimeoutError):
            raise
        except OSError as exc:       # a socket error: not to be taken for one of pyarrow's
            raise ConnectionLostError(f"connection error: {exc}") from exc
        if entry is None:
            self.pieces.append(pa.py_buffer(_EOS_MARKER))
            self.avail += len(_EOS_MARKER)
            self.eof = True
            return
        self.messages += 1
        for p in self.pieces_of(entry):
            self.pieces.append(p)
            self.avail += p.size

    def read_buffer(self, n=-1):
        while (n < 0 or self.avail < n) and not self.eof:
            self._more()
        n = self.avail if n < 0 else min(n, self.avail)
        first = self.pieces[0] if self.pieces else None
        if first is not None and first.size >= n:
            out = first if first.size == n else first.slice(0, n)
            if first.size == n:
                self.pieces.popleft()
            else:
                self.pieces[0] = first.slice(n)
        else:                                   # spans pieces: join (copies)
            parts, need = [], n
            while need:
                p = self.pieces[0]
                take = min(need, p.size)
                parts.append(p.slice(0, take).to_pybytes())
                if take == p.size:
                    self.pieces.popleft()
                else:
                    self.pieces[0] = p.slice(take)
                need -= take
            out = pa.py_buffer(b"".join(parts))
        self.avail -= n
        self.pos += n
        return out

    def read(self, n=-1):
        return self.read_buffer(n).to_pybytes()
