"""Matching bodies to metadata by sequence number (sans-IO state machine).

Metadata messages must arrive in order (each sequence number one more than
the last, modulo 2**32: the number wraps around after UINT32_MAX).  A body
may arrive before or after its metadata and is matched on ``tag &
0xFFFFFFFF``.  Gaps, duplicates, a body whose message has none (a schema),
a body with no metadata at the end of the stream, bodies that disagree
with their metadata (length, ``nbuf``, buffer lengths) and batches whose
arrays claim more elements than their body can hold and than ``max_rows``
(:func:`check_lengths`) raise ProtocolError.

    r = Reassembler()
    r.metadata(seq, info, flatbuffer)   # info: flatbuf.parse_message(flatbuffer)
    r.body(seq, body_type, payload)     # payload: bytes-like (type 0) or
                                        # (total_size, pairs) (type 1)
    r.eos(seq)
    entry = r.pop()                     # the next complete message, in order, or None
"""
import struct
from collections import OrderedDict, deque

from nclx.ipc.errors import ProtocolError
from nclx.ipc.flatbuf import HEADER_NAMES, RECORD_BATCH, SCHEMA, WITH_BODY
from nclx.ipc.wire import BODY_PACKED, SEQ_MOD

_HALF = SEQ_MOD // 2
_RECENT = 4096
#: messages received and not yet popped (those behind one whose body has
#: not come; a server may send every metadata message before the bodies)
MAX_QUEUED = 1024
#: their metadata bytes, beyond the first (a peer must not make the client
#: hold every message it sends behind a body that never comes)
MAX_QUEUED_BYTES = 64 << 20
#: body bytes held before their message can be popped (bodies before
#: their metadata, bodies of messages queued behind one whose body has not
#: come), beyond the first such body (which ``max_frame`` bounds): before,
#: 64 early bodies and 1024 queued ones of up to ``max_frame`` each could be
#: held, 64 GiB and more from a hostile peer (found by review 18)
MAX_HELD_BYTES = 256 << 20
#: what one (offset, length) pair of a shared-memory body (type 1) costs
#: held, decoded: a list slot, a 2-tuple and two ints below 2**60 (8 + 56 +
#: 32 + 32 bytes).  Such bodies count against ``max_held_bytes`` at this
#: size: before review 20 they counted 0, and 128 MiB of early ones on the
#: wire grew a client by 758 MiB.
SHM_PAIR_BYTES = 128
#: longest array (batch length, any field node) a batch may claim beyond
#: one bit of body per element: the longest pyarrow's IPC writer writes
#: without ``allow_64bit`` (``Client(max_rows=...)``).  A NullArray, an
#: empty struct, a run-end encoded array or fixed_size_binary(0) hold no
#: bytes per element: before, a server could claim 2**62 rows of them in a
#: few bytes, and to_numpy / to_pylist of the result ran out of memory or
#: never ended.
MAX_ROWS = (1 << 31) - 1


class Entry:
    """One message: ``seq``, ``info`` (MessageInfo), ``metadata`` (flatbuffer
    bytes), ``body_type`` and ``body`` (None until matched; None for messages
    without body)."""
    __slots__ = ("seq", "info", "metadata", "body_type", "body")

    def __init__(self, seq, info, metadata):
        self.seq, self.info, self.metadata = seq, info, metadata
        self.body_type = self.body = None

    @property
    def needs_body(self):
        return self.info.header_type in WITH_BODY

    @property
    def complete(self):
        return not self.needs_body or self.body is not None

    def __repr__(self):
        return (f"Entry(seq={self.seq}, {HEADER_NAMES[self.info.header_type]}, "
                f"body_type={self.body_type})")


def _node_names(schema_meta):
    """The field path of each FieldNode of a RecordBatch (depth first), from
    the stream's Schema flatbuffer; [] if pyarrow cannot read it."""
    try:
        import pyarrow as pa
        pad = -len(schema_meta) % 8
        msg = (struct.pack("<Ii", 0xFFFFFFFF, len(schema_meta) + pad)
               + bytes(schema_meta) + b"\0" * pad)
        schema = pa.ipc.read_schema(pa.py_buffer(msg))
        names = []

        def walk(field, path):
            names.append(path)
            t = field.type
            if isinstance(t, pa.DictionaryType):        # one node: the indices
                return
            while isinstance(t, pa.BaseExtensionType):
                t = t.storage_type
            for i in range(t.num_fields):
                walk(t.field(i), f"{path}.{t.field(i).name}")
        for field in schema:
            walk(field, field.name)
        return names
    except Exception:  # noqa: BLE001 - names only decorate the error message
        return []


def check_lengths(seq, info, max_rows=MAX_ROWS, schema_meta=None):
    """Raise ProtocolError if the batch length or a FieldNode's length of a
    RecordBatch / DictionaryBatch exceeds both ``max_rows`` and ``8 *
    bodyLength`` (an array longer than max_rows must have at least one bit
    of body per element; arrays with buffers are checked against them by
    pyarrow).  ``schema_meta`` (the Schema flatbuffer) names the column."""
    limit = max(max_rows, 8 * info.body_length)
    name = HEADER_NAMES[info.header_type]
    why = (f"more than max_rows={max_rows} and than 8 elements per byte of its "
           f"{info.body_length}-byte body (Client(max_rows=...) raises the limit)")
    for i, n in enumerate(info.nodes):
        if n > limit:
            where = f"field node {i}"
            if info.header_type == RECORD_BATCH and schema_meta is not None:
                names = _node_names(schema_meta)
                if len(names) == len(info.nodes):
                    where = f"column {names[i]!r} ({where})"
            raise ProtocolError(f"seq {seq}: {name} {where} has length {n}, {why}")
    if info.length is not None and info.length > limit:
        raise ProtocolError(f"seq {seq}: {name} length {info.length} is {why}")


def check_body(seq, info, body_type, payload):
    """Raise ProtocolError if a body disagrees with its metadata."""
    name = HEADER_NAMES[info.header_type]
    if body_type == BODY_PACKED:
        if len(payload) != info.body_length:
            raise ProtocolError(f"seq {seq}: packed body of {len(payload)} bytes, the "
                                f"{name} metadata says bodyLength {info.body_length}")
        return
    total, pairs = payload
    if len(pairs) != len(info.buffers):
        raise ProtocolError(f"seq {seq}: shared-memory body has nbuf {len(pairs)}, the "
                            f"{name} metadata has {len(info.buffers)} buffers")
    for i, ((off, length), (_, want)) in enumerate(zip(pairs, info.buffers, strict=True)):
        if length != want:
            raise ProtocolError(f"seq {seq}: buffer {i} (offset {off}) has length {length}, "
                                f"the metadata says {want}")
    want_total = sum(length for _, length in info.buffers)
    if total != want_total:
        raise ProtocolError(f"seq {seq}: total_size {total} does not match the metadata's "
                            f"{want_total}")
    slack = 64 * (len(pairs) + 1)      # alignment padding between and after buffers
    if info.body_length > total + slack:
        raise ProtocolError(f"seq {seq}: bodyLength {info.body_length} exceeds the buffers' "
                            f"total_size {total} plus {slack} bytes of padding")


def held_size(body_type, payload):
    """Bytes a body costs while held: a packed body its length, a
    shared-memory body (``(total_size, pairs)``) its decoded pairs
    (:data:`SHM_PAIR_BYTES` each, and 16 for the header)."""
    if body_type == BODY_PACKED:
        return len(payload)
    return 16 + SHM_PAIR_BYTES * len(payload[1])


class Reassembler:
    """Orders one stream's messages (see the module docstring)."""

    def __init__(self, first_seq=0, max_pending=64, max_queued=MAX_QUEUED,
                 max_queued_bytes=MAX_QUEUED_BYTES, max_rows=MAX_ROWS,
                 max_held_bytes=MAX_HELD_BYTES):
        if not 0 <= first_seq < SEQ_MOD:
            raise ValueError(f"first_seq {first_seq!r} is not a uint32")
        self.max_rows = max_rows
        self._schema_meta = None       # the Schema flatbuffer (names columns in errors)
        self.first_seq = first_seq
        self.next_seq = first_seq      # next metadata / end-of-stream sequence number
        self.count = 0                 # metadata messages received
        self.eos_seq = None
        self.max_pending = max_pending
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self._queued_bytes = 0         # metadata bytes in _queue
        self.max_held_bytes = max_held_bytes
        self._held_bytes = 0           # held_size() of the bodies in _early and _queue
        self._queue = deque()          # received, not yet popped, in order
        self._waiting = {}             # seq -> Entry awaiting its body
        self._early = {}               # seq -> (body_type, payload): body before metadata
        self._recent = OrderedDict()   # seq -> whether its message had a body (popped ones)

    # ------------------------------------------------------------- helpers
    def _ahead(self, seq):
        """Distance of ``seq`` ahead of the next expected metadata (None if behind)."""
        d = (seq - self.next_seq) % SEQ_MOD
        return d if d < _HALF else None

    def _order_error(self, what, seq):
        if self._ahead(seq) is None:
            return ProtocolError(f"{what} seq {seq} is out of order: expected seq "
                                 f"{self.next_seq} (a duplicate or an old message)")
        missing = self._ahead(seq)
        return ProtocolError(f"{what} seq {seq} leaves a gap: expected seq {self.next_seq} "
                             f"({missing} message(s) missing)")

    @property
    def finished(self):
        """End of stream seen and every message popped."""
        return self.eos_seq is not None and not self._queue

    @property
    def received_nothing(self):
        """No message, early body or end of stream has arrived."""
        return self.count == 0 and not self._early and self.eos_seq is None

    @property
    def missing_bodies(self):
        return sorted(self._waiting)

    # -------------------------------------------------------------- events
    def metadata(self, seq, info, flatbuffer):
        if self.eos_seq is not None:
            raise ProtocolError(f"metadata seq {seq} after the end of stream "
                                f"(end of stream at seq {self.eos_seq})")
        if seq != self.next_seq:
            raise self._order_error("metadata", seq)
        if self.count == 0 and info.header_type != SCHEMA:
            raise ProtocolError(f"first message (seq {seq}) is a "
                                f"{HEADER_NAMES[info.header_type]}, it must be the Schema")
        if self.count and info.header_type == SCHEMA:
            raise ProtocolError(f"a second Schema message at seq {seq}")
        if info.header_type == SCHEMA:
            self._schema_meta = flatbuffer
        else:
            check_lengths(seq, info, self.max_rows, self._schema_meta)
        if self._queue and (len(self._queue) >= self.max_queued
                            or self._queued_bytes + len(flatbuffer) > self.max_queued_bytes):
            head = self._queue[0]
            raise ProtocolError(f"metadata seq {seq}: {len(self._queue)} messages "
                                f"({self._queued_bytes} bytes of metadata) already wait "
                                f"behind seq {head.seq}, whose body has not arrived "
                                f"(limit {self.max_queued} messages, "
                                f"{self.max_queued_bytes} bytes)")
        entry = Entry(seq, info, flatbuffer)
        early = self._early.pop(seq, None)
        if entry.needs_body:
            if early is not None:
                check_body(seq, info, *early)
                entry.body_type, entry.body = early
            else:
                self._waiting[seq] = entry
        elif early is not None:
            raise ProtocolError(f"body for seq {seq}, whose message "
                                f"({HEADER_NAMES[info.header_type]}) has no body")
        self._queue.append(entry)
        self._queued_bytes += len(flatbuffer)
        self.count += 1
        self.next_seq = (seq + 1) % SEQ_MOD

    def body(self, seq, body_type, payload):
        ahead = self._ahead(seq)
        if ahead is not None:                        # its metadata has not come yet
            if self.eos_seq is not None:
                raise ProtocolError(f"body for seq {seq} with no metadata: the stream ended "
                                    f"at seq {self.eos_seq}")
            if seq in self._early:
                raise ProtocolError(f"duplicate body for seq {seq}")
            if len(self._early) >= self.max_pending:
                raise ProtocolError(f"body for seq {seq}: {len(self._early)} bodies already "
                                    f"wait for their metadata (limit {self.max_pending})")
            self._hold(seq, body_type, payload, "waits for its metadata")
            self._early[seq] = (body_type, payload)
            return
        entry = self._waiting.get(seq)
        if entry is not None:
            check_body(seq, entry.info, body_type, payload)
            self._hold(seq, body_type, payload, "waits behind seq "
                       f"{self._queue[0].seq if self._queue else seq}")
            del self._waiting[seq]
            entry.body_type, entry.body = body_type, payload
            return
        behind = (self.next_seq - seq) % SEQ_MOD
        if behind > self.count:
            raise ProtocolError(f"body for seq {seq} with no metadata: the stream started "
                                f"at seq {self.first_seq}")
        had_body = self._recent.get(seq)
        if had_body is None:
            had_body = any(e.seq == seq and e.needs_body for e in self._queue)
            if not had_body and not any(e.seq == seq for e in self._queue):
                raise ProtocolError(f"body for seq {seq}: no message awaits a body there")
        if had_body:
            raise ProtocolError(f"duplicate body for seq {seq}")
        raise ProtocolError(f"body for seq {seq}, whose message has no body")

    def _hold(self, seq, body_type, payload, where):
        n = held_size(body_type, payload)
        if self._held_bytes and self._held_bytes + n > self.max_held_bytes:
            raise ProtocolError(f"body for seq {seq} ({n} bytes) {where}: "
                                f"{self._held_bytes} bytes of bodies are already held "
                                f"before their messages can be read (limit "
                                f"{self.max_held_bytes} bytes)")
        self._held_bytes += n

    def eos(self, seq):
        if self.eos_seq is not None:
            raise ProtocolError(f"second end of stream (seq {seq}; the first was seq "
                                f"{self.eos_seq})")
        if seq != self.next_seq:
            raise self._order_error("end of stream", seq)
        if self.count == 0:
            raise ProtocolError(f"end of stream (seq {seq}) before the Schema message")
        if self._early:
            raise ProtocolError(f"bodies for seq {sorted(self._early)} with no metadata: "
                                f"the stream ends at seq {seq}")
        self.eos_seq = seq

    def pop(self):
        """The next message in order if it is complete, else None."""
        if not self._queue or not self._queue[0].complete:
            return None
        entry = self._queue.popleft()
        self._queued_bytes -= len(entry.metadata)
        if entry.body_type is not None:
            self._held_bytes -= held_size(entry.body_type, entry.body)
        self._recent[entry.seq] = entry.needs_body
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        return entry
