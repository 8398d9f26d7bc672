"""Bytes on the wire: nclx's TCP framing and the Dissociated IPC messages.

Pure functions over bytes-like objects (sans-IO, as h11): nothing here
touches a socket, so every parser can be fuzzed on its own.  Every parser
checks lengths before it reads and raises :class:`ProtocolError` naming the
field and the value; none reads outside the bytes it was given.

Frame (nclx's framing, docs/ipc.md)::

    kind: u8            0 untagged message, 1 tagged message, 2 nclx error
    tag: u64 LE         only when kind == 1
    length: u64 LE
    payload: length bytes

Untagged payloads (metadata stream): ``u8 type (1 metadata, 0 end of
stream), u32 LE sequence number`` then, for type 1, the IPC metadata
flatbuffer.  Tags of bodies: bits 0-31 sequence number, 32-55 zero, 56-63
body type (0 packed IPC body, 1 ``total_size, nbuf, (offset, length) *
nbuf`` as u64 LE).  ``free_data`` payloads: one or more u64 LE offsets.
"""
import json
import struct
from collections import namedtuple

from nclx.ipc.errors import ProtocolError

KIND_UNTAGGED = 0
KIND_TAGGED = 1
KIND_ERROR = 2          # nclx's own: a server-reported error (UTF-8 JSON payload)
KINDS = (KIND_UNTAGGED, KIND_TAGGED, KIND_ERROR)

MSG_EOS = 0
MSG_METADATA = 1

BODY_PACKED = 0
BODY_SHM = 1
BODY_TYPES = (BODY_PACKED, BODY_SHM)

SEQ_MASK = 0xFFFFFFFF
SEQ_MOD = 1 << 32
RESERVED_MASK = 0x00FFFFFF_00000000
U64_MAX = (1 << 64) - 1

#: Default largest frame a receiver accepts (a declared length above it is
#: refused before anything is allocated).  Clients take ``max_frame=``.
DEFAULT_MAX_FRAME = 1 << 30
#: Default largest frame a server accepts from a client (tickets, free_data).
DEFAULT_MAX_REQUEST = 1 << 20

_U8 = struct.Struct("<B")
_U64 = struct.Struct("<Q")
_U64X2 = struct.Struct("<QQ")
_HEAD_UNTAGGED = struct.Struct("<BQ")     # kind, length
_HEAD_TAGGED = struct.Struct("<BQQ")      # kind, tag, length
_PREFIX = struct.Struct("<BI")            # message type, sequence number

#: The longest frame header (a tagged frame).
MAX_HEADER = _HEAD_TAGGED.size

Frame = namedtuple("Frame", "kind tag payload")
Frame.__doc__ = "One frame: ``kind``, ``tag`` (None unless tagged) and ``payload``."


# ------------------------------------------------------------------ frames
def encode_frame_header(kind, tag, length):
    """The header bytes of a frame of ``length`` payload bytes."""
    if kind == KIND_TAGGED:
        if not 0 <= tag <= U64_MAX:
            raise ValueError(f"tag {tag!r} is not a uint64")
        return _HEAD_TAGGED.pack(kind, tag, length)
    if kind not in KINDS:
        raise ValueError(f"unknown frame kind {kind!r}")
    return _HEAD_UNTAGGED.pack(kind, length)


def encode_frame(kind, tag, payload):
    """A whole frame as bytes (small frames; large ones send header and payload apart)."""
    payload = bytes(payload)
    return encode_frame_header(kind, tag, len(payload)) + payload


def frame_header_size(kind):
    """The bytes of the header of a frame of ``kind`` (its first byte)."""
    return _HEAD_TAGGED.size if kind == KIND_TAGGED else _HEAD_UNTAGGED.size


def decode_frame_header(buf, max_length=DEFAULT_MAX_FRAME, allowed_kinds=KINDS):
    """Parse the frame header at the start of ``buf``.

    Returns ``(kind, tag, length, header_size)`` (``tag`` None unless tagged),
    or None when ``buf`` holds only part of a header.  Raises ProtocolError for
    an unknown or disallowed kind or a length above ``max_length``.
    """
    n = len(buf)
    if n < 1:
        return None
    kind = buf[0]
    if kind not in allowed_kinds:
        if kind in KINDS:
            raise ProtocolError(f"frame kind {kind} is not allowed in this direction "
                                f"(allowed: {list(allowed_kinds)})")
        raise ProtocolError(f"unknown frame kind {kind} (byte 0 of the frame; "
                            f"0 untagged, 1 tagged, 2 error)")
    if kind == KIND_TAGGED:
        if n < _HEAD_TAGGED.size:
            return None
        _, tag, length = _HEAD_TAGGED.unpack_from(buf, 0)
        size = _HEAD_TAGGED.size
    else:
        if n < _HEAD_UNTAGGED.size:
            return None
        _, length = _HEAD_UNTAGGED.unpack_from(buf, 0)
        tag, size = None, _HEAD_UNTAGGED.size
    if length > max_length:
        raise ProtocolError(f"frame length {length} exceeds the limit of {max_length} bytes "
                            f"(kind {kind})")
    return kind, tag, length, size


class FrameParser:
    """Incremental frame parser: ``feed(data)`` returns the complete frames.

    The sans-IO twin of the socket reader (transport.FrameSocket), for
    fuzzing and for event loops.  ``pending`` is how many bytes of an
    incomplete frame it holds; ``close()`` raises if a frame was cut short.
    """

    def __init__(self, max_length=DEFAULT_MAX_FRAME, allowed_kinds=KINDS):
        self.max_length = max_length
        self.allowed_kinds = tuple(allowed_kinds)
        self._buf = bytearray()

    @property
    def pending(self):
        return len(self._buf)

    def feed(self, data):
        self._buf += data
        frames = []
        pos = 0
        view = memoryview(self._buf)
        try:
            while True:
                head = decode_frame_header(view[pos:], self.max_length, self.allowed_kinds)
                if head is None:
                    break
                kind, tag, length, size = head
                if len(view) - pos - size < length:
                    break
                start = pos + size
                frames.append(Frame(kind, tag, bytes(view[start:start + length])))
                pos = start + length
        finally:
            view.release()
        del self._buf[:pos]
        return frames

    def close(self):
        if self._buf:
            raise ProtocolError(f"truncated frame: the stream ended with {len(self._buf)} "
                                f"bytes of an incomplete frame")


# --------------------------------------------------------------------- tags
def make_tag(seq, body_type):
    """The tag of a body message: sequence number in bits 0-31, body type in 56-63."""
    if not 0 <= seq <= SEQ_MASK:
        raise ValueError(f"sequence number {seq!r} is not a uint32")
    if not 0 <= body_type <= 0xFF:
        raise ValueError(f"body type {body_type!r} is not a uint8")
    return (body_type << 56) | seq


def split_tag(tag):
    """``(seq, body_type)`` of a body tag; ProtocolError if a reserved bit
    (32-55) is set or the body type is not 0 or 1."""
    if not 0 <= tag <= U64_MAX:
        raise ProtocolError(f"tag {tag!r} is not a uint64")
    reserved = tag & RESERVED_MASK
    if reserved:
        raise ProtocolError(f"tag {tag:#018x}: reserved bits 32-55 are set "
                            f"({reserved >> 32:#08x}); they must be 0")
    body_type = tag >> 56
    if body_type not in BODY_TYPES:
        raise ProtocolError(f"tag {tag:#018x}: unknown body type {body_type} "
                            f"(bits 56-63; 0 packed body, 1 shared-memory offsets)")
    return tag & SEQ_MASK, body_type


# ------------------------------------------------------- metadata messages
def encode_metadata_prefix(seq):
    """The 5-byte prefix of a metadata message (the flatbuffer follows)."""
    return _PREFIX.pack(MSG_METADATA, seq)


def encode_eos(seq):
    """The end-of-stream message: exactly 5 bytes, type 0 and the next sequence number."""
    return _PREFIX.pack(MSG_EOS, seq)


def decode_untagged(payload):
    """``(type, seq, flatbuffer)`` of an untagged message; ``flatbuffer`` is a
    memoryview (None for end of stream)."""
    n = len(payload)
    if n < _PREFIX.size:
        raise ProtocolError(f"untagged message of {n} bytes: the 5-byte prefix "
                            f"(type, sequence number) is truncated")
    mtype, seq = _PREFIX.unpack_from(payload, 0)
    if mtype == MSG_EOS:
        if n != _PREFIX.size:
            raise ProtocolError(f"end-of-stream message (seq {seq}) has {n} bytes, "
                                f"it must have exactly 5")
        return mtype, seq, None
    if mtype != MSG_METADATA:
        raise ProtocolError(f"untagged message seq {seq}: unknown message type {mtype} "
                            f"(byte 0; 0 end of stream, 1 metadata)")
    if n == _PREFIX.size:
        raise ProtocolError(f"metadata message seq {seq} has no flatbuffer bytes")
    return mtype, seq, memoryview(payload)[_PREFIX.size:]


# ------------------------------------------------------------------- bodies
def encode_shm_body(pairs):
    """Body type 1: ``total_size, nbuf`` then ``nbuf`` (offset, length) pairs."""
    pairs = list(pairs)
    total = sum(length for _, length in pairs)
    out = bytearray(_U64X2.pack(total, len(pairs)))
    for off, length in pairs:
        out += _U64X2.pack(off, length)
    return bytes(out)


def decode_shm_body(payload, max_nbuf=1 << 20):
    """``(total_size, [(offset, length), ...])`` of a body of type 1, its sizes
    checked against one another (not yet against a segment or metadata)."""
    n = len(payload)
    if n < 16:
        raise ProtocolError(f"shared-memory body of {n} bytes: the 16-byte "
                            f"(total_size, nbuf) header is truncated")
    total, nbuf = _U64X2.unpack_from(payload, 0)
    if nbuf > max_nbuf:
        raise ProtocolError(f"shared-memory body: nbuf {nbuf} exceeds the limit {max_nbuf}")
    if n != 16 + 16 * nbuf:
        raise ProtocolError(f"shared-memory body: nbuf {nbuf} needs {16 + 16 * nbuf} bytes, "
                            f"the body has {n}")
    pairs = [_U64X2.unpack_from(payload, 16 + 16 * i) for i in range(nbuf)]
    s = sum(length for _, length in pairs)
    if s != total:
        raise ProtocolError(f"shared-memory body: total_size {total} does not match the sum "
                            f"of the {nbuf} buffer lengths ({s})")
    return total, pairs


def encode_free_data(offsets):
    """A ``free_data`` body: the offsets as u64 LE."""
    offsets = list(offsets)
    if not offsets:
        raise ValueError("free_data needs at least one offset")
    return struct.pack(f"<{len(offsets)}Q", *offsets)


def decode_free_data(payload):
    """The offsets of a ``free_data`` body (one or more u64 LE)."""
    n = len(payload)
    if n == 0 or n % 8:
        raise ProtocolError(f"free_data body of {n} bytes: it must be one or more "
                            f"8-byte offsets")
    return list(struct.unpack(f"<{n // 8}Q", payload))


# ------------------------------------------------------------- error frames
def encode_error(code, message, ticket=None):
    """Payload of an nclx error frame (kind 2): UTF-8 JSON
    ``{"code": ..., "message": ..., "ticket": latin-1 text or absent}``."""
    doc = {"code": str(code), "message": str(message)}
    if ticket is not None:
        doc["ticket"] = bytes(ticket).decode("latin-1")
    return json.dumps(doc).encode()


def decode_error(payload):
    """``(code, message, ticket or None)`` of an error frame's payload."""
    try:
        doc = json.loads(bytes(payload).decode("utf-8"))
        code, message = str(doc["code"]), str(doc["message"])
        ticket = doc.get("ticket")
        ticket = None if ticket is None else str(ticket).encode("latin-1")
    except (ValueError, KeyError, TypeError, UnicodeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's stack
        raise ProtocolError(f"malformed error frame ({len(payload)} bytes): {exc}") from None
    return code, message, ticket
