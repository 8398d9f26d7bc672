"""Just enough of the Arrow IPC ``Message`` flatbuffer to run the protocol.

pyarrow builds and reads the IPC messages; what the protocol itself needs
from a metadata message is its header type (Schema, DictionaryBatch,
RecordBatch), its ``bodyLength`` and the (offset, length) of each body
buffer, to match ``nbuf`` and the lengths of a body of type 1 and to place
shared-memory buffers.  This reader checks every offset against the
buffer before reading it (a flatbuffer arrives from the network), so a
malformed message gives a ProtocolError naming the field and position,
never a read outside the given bytes.

Schema (format/Message.fbs, format/Schema.fbs of Arrow)::

    table Message { version: short; header: MessageHeader (union);
                    bodyLength: long; custom_metadata: [KeyValue]; }
    union MessageHeader { Schema = 1, DictionaryBatch = 2, RecordBatch = 3,
                          Tensor = 4, SparseTensor = 5 }
    table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer];
                        compression: BodyCompression; variadicBufferCounts: [long]; }
    struct FieldNode { length: long; null_count: long; }   (16 bytes)

A RecordBatch with ``compression`` set is refused: what its buffers
decompress to is not bounded by the frame sizes the peer limits.
    table DictionaryBatch { id: long; data: RecordBatch; isDelta: bool; }
    struct Buffer { offset: long; length: long; }     (16 bytes)
"""
import struct
from collections import namedtuple

from nclx.ipc.errors import ProtocolError

SCHEMA, DICTIONARY_BATCH, RECORD_BATCH, TENSOR, SPARSE_TENSOR = 1, 2, 3, 4, 5
HEADER_NAMES = {SCHEMA: "Schema", DICTIONARY_BATCH: "DictionaryBatch",
                RECORD_BATCH: "RecordBatch", TENSOR: "Tensor", SPARSE_TENSOR: "SparseTensor"}
#: Header types whose message has a body (a tagged body message follows).
WITH_BODY = (DICTIONARY_BATCH, RECORD_BATCH)
MAX_BUFFERS = 1 << 20

MessageInfo = namedtuple("MessageInfo", "header_type body_length length buffers version nodes",
                         defaults=((),))
MessageInfo.__doc__ = """What the protocol needs from one IPC metadata flatbuffer.

``header_type`` (1 Schema, 2 DictionaryBatch, 3 RecordBatch), ``body_length``,
``length`` (rows of the batch, None for a schema), ``buffers`` (tuple of
(offset, length) into the body), ``version`` (MetadataVersion; 3 = V4, 4 = V5),
``nodes`` (the length of each FieldNode, depth first over the fields: what
reassembly.check_lengths bounds).
"""

_u8 = struct.Struct("<B").unpack_from
_u16 = struct.Struct("<H").unpack_from
_i16 = struct.Struct("<h").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from
_i64 = struct.Struct("<q").unpack_from


class _Reader:
    def __init__(self, buf):
        self.buf = buf
        self.n = len(buf)

    def need(self, pos, size, what):
        if pos < 0 or pos + size > self.n:
            raise ProtocolError(f"IPC metadata flatbuffer ({self.n} bytes): {what} at byte "
                                f"{pos} (+{size}) lies outside it")

    def table(self, pos, what):
        """The vtable fields of the table at ``pos``: a function field_id -> position or None."""
        self.need(pos, 4, what)
        vt = pos - _i32(self.buf, pos)[0]
        self.need(vt, 4, f"{what} vtable")
        vsize, tsize = _u16(self.buf, vt)[0], _u16(self.buf, vt + 2)[0]
        if vsize < 4 or vsize % 2:
            raise ProtocolError(f"IPC metadata flatbuffer: {what} vtable at byte {vt} has "
                                f"size {vsize}")
        self.need(vt, vsize, f"{what} vtable")
        self.need(pos, tsize, what)

        def field(i, size):
            slot = 4 + 2 * i
            if slot + 2 > vsize:
                return None
            off = _u16(self.buf, vt + slot)[0]
            if off == 0:
                return None
            if off + size > tsize:
                raise ProtocolError(f"IPC metadata flatbuffer: {what} field {i} at offset "
                                    f"{off} (+{size}) is outside the table's {tsize} bytes")
            return pos + off
        return field

    def deref(self, pos, what):
        """Follow the uoffset at ``pos`` (to a table or vector)."""
        self.need(pos, 4, what)
        return pos + _u32(self.buf, pos)[0]

    def vector(self, pos, elem_size, what, limit):
        start = self.deref(pos, what)
        self.need(start, 4, what)
        count = _u32(self.buf, start)[0]
        if count > limit:
            raise ProtocolError(f"IPC metadata flatbuffer: {what} has {count} entries "
                                f"(limit {limit})")
        self.need(start + 4, count * elem_size, what)
        return start + 4, count


def _record_batch(r, pos, what, body_length):
    field = r.table(pos, what)
    p = field(0, 8)
    length = _i64(r.buf, p)[0] if p is not None else 0
    if length < 0:
        raise ProtocolError(f"{what}: length {length} is negative")
    if field(3, 4) is not None:
        # a compressed body decompresses to whatever sizes its buffers
        # declare: max_frame bounds only the bytes on the wire
        raise ProtocolError(f"{what} has a compressed body (BodyCompression): nclx.ipc "
                            f"accepts uncompressed bodies only, whose size max_frame bounds")
    nodes = ()
    p = field(1, 4)
    if p is not None:
        start, count = r.vector(p, 16, f"{what}.nodes", MAX_BUFFERS)
        out = []
        for i in range(count):
            n, nulls = struct.unpack_from("<qq", r.buf, start + 16 * i)
            if n < 0 or not 0 <= nulls <= n:
                raise ProtocolError(f"{what}.nodes[{i}] = (length {n}, null_count {nulls}): "
                                    f"a length and null count must satisfy 0 <= null_count "
                                    f"<= length")
            out.append(n)
        nodes = tuple(out)
    buffers = ()
    p = field(2, 4)
    if p is not None:
        start, count = r.vector(p, 16, f"{what}.buffers", MAX_BUFFERS)
        out = []
        for i in range(count):
            off, size = struct.unpack_from("<qq", r.buf, start + 16 * i)
            if off < 0 or size < 0 or off + size > body_length:
                raise ProtocolError(f"{what}.buffers[{i}] = (offset {off}, length {size}) "
                                    f"lies outside the body of {body_length} bytes")
            out.append((off, size))
        buffers = tuple(out)
    return length, buffers, nodes


def parse_message(buf):
    """:class:`MessageInfo` of an IPC metadata flatbuffer (a bytes-like object).

    Raises ProtocolError for a malformed flatbuffer, a Tensor/SparseTensor or
    unknown header, a negative body length, or a buffer outside the body.
    """
    r = _Reader(memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf)
    root = r.deref(0, "root offset")
    field = r.table(root, "Message")
    p = field(0, 2)
    version = _i16(r.buf, p)[0] if p is not None else 0
    if version not in (3, 4):
        raise ProtocolError(f"IPC metadata: MetadataVersion {version} is not supported "
                            f"(3 = V4, 4 = V5)")
    p = field(1, 1)
    htype = _u8(r.buf, p)[0] if p is not None else 0
    if htype not in (SCHEMA, DICTIONARY_BATCH, RECORD_BATCH):
        name = HEADER_NAMES.get(htype, "unknown")
        raise ProtocolError(f"IPC metadata: header type {htype} ({name}) is not a Schema, "
                            f"DictionaryBatch or RecordBatch")
    p = field(3, 8)
    body_length = _i64(r.buf, p)[0] if p is not None else 0
    if body_length < 0:
        raise ProtocolError(f"IPC metadata: bodyLength {body_length} is negative")
    hp = field(2, 4)
    if hp is None:
        raise ProtocolError(f"IPC metadata: the {HEADER_NAMES[htype]} header is missing")
    header = r.deref(hp, "header offset")
    if htype == SCHEMA:
        r.table(header, "Schema")
        if body_length:
            raise ProtocolError(f"IPC metadata: a Schema message with bodyLength {body_length}")
        return MessageInfo(htype, 0, None, (), version)
    if htype == RECORD_BATCH:
        length, buffers, nodes = _record_batch(r, header, "RecordBatch", body_length)
        return MessageInfo(htype, body_length, length, buffers, version, nodes)
    dfield = r.table(header, "DictionaryBatch")
    p = dfield(1, 4)
    if p is None:
        raise ProtocolError("IPC metadata: DictionaryBatch without its data RecordBatch")
    length, buffers, nodes = _record_batch(r, r.deref(p, "DictionaryBatch.data"),
                                           "DictionaryBatch.data", body_length)
    return MessageInfo(htype, body_length, length, buffers, version, nodes)
