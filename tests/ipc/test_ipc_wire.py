"""nclx.ipc.wire and nclx.ipc.uri: the bytes, exactly as docs/ipc.md lays them out."""
import base64
import json

import pytest
from ipc_helpers import le64

from nclx.ipc import ProtocolError, wire
from nclx.ipc.uri import Endpoint, parse_uri


# ------------------------------------------------------------------ frames
def test_frame_layout_byte_by_byte():
    assert wire.encode_frame(0, None, b"abc") == b"\x00" + le64(3) + b"abc"
    tag = 0x01000000_00000007
    assert wire.encode_frame(1, tag, b"xy") == b"\x01" + le64(tag) + le64(2) + b"xy"
    assert wire.encode_frame(2, None, b"") == b"\x02" + le64(0)


def test_decode_header_needs_whole_header():
    f = wire.encode_frame(1, 5, b"payload")
    for cut in range(17):
        assert wire.decode_frame_header(f[:cut]) is None
    assert wire.decode_frame_header(f) == (1, 5, 7, 17)
    g = wire.encode_frame(0, None, b"p")
    for cut in range(9):
        assert wire.decode_frame_header(g[:cut]) is None
    assert wire.decode_frame_header(g) == (0, None, 1, 9)


@pytest.mark.parametrize("kind", [3, 7, 0x80, 0xFF])
def test_unknown_kind(kind):
    with pytest.raises(ProtocolError, match=f"unknown frame kind {kind}"):
        wire.decode_frame_header(bytes([kind]) + le64(0))


def test_disallowed_kind_and_length_limit():
    with pytest.raises(ProtocolError, match="kind 0 is not allowed"):
        wire.decode_frame_header(b"\x00" + le64(1), allowed_kinds=(1,))
    with pytest.raises(ProtocolError, match="frame length 1025 exceeds the limit of 1024"):
        wire.decode_frame_header(b"\x00" + le64(1025), max_length=1024)
    with pytest.raises(ProtocolError, match=str(2**64 - 1)):
        wire.decode_frame_header(b"\x01" + le64(0) + le64(2**64 - 1))


def test_frame_parser_incremental():
    data = (wire.encode_frame(0, None, b"m1") + wire.encode_frame(1, 9, b"body")
            + wire.encode_frame(2, None, b"{}"))
    for step in (1, 2, 3, 5, 100):
        p = wire.FrameParser()
        frames = []
        for i in range(0, len(data), step):
            frames += p.feed(data[i:i + step])
        assert frames == [(0, None, b"m1"), (1, 9, b"body"), (2, None, b"{}")]
        p.close()
    p = wire.FrameParser()
    assert p.feed(data[:-1]) == [(0, None, b"m1"), (1, 9, b"body")]
    with pytest.raises(ProtocolError, match="truncated frame"):
        p.close()


# -------------------------------------------------------------------- tags
def test_tag_layout():
    assert wire.make_tag(7, 0) == 7
    assert wire.make_tag(7, 1) == (1 << 56) | 7       # bits 56-63, not the diagram's << 55
    assert wire.make_tag(0xFFFFFFFF, 1) == 0x01000000_FFFFFFFF
    assert wire.split_tag(0x01000000_FFFFFFFF) == (0xFFFFFFFF, 1)
    assert wire.split_tag(42) == (42, 0)


@pytest.mark.parametrize("bit", [32, 40, 55])
def test_reserved_tag_bits(bit):
    with pytest.raises(ProtocolError, match="reserved bits 32-55"):
        wire.split_tag((1 << bit) | 3)


@pytest.mark.parametrize("btype", [2, 0x80, 0xFF])
def test_unknown_body_type(btype):
    with pytest.raises(ProtocolError, match=f"unknown body type {btype}"):
        wire.split_tag((btype << 56) | 3)


def test_the_diagrams_shift_lands_in_reserved_bits():
    # (1 << 55) | seq, as the spec's diagram writes it, sets reserved bit 55
    with pytest.raises(ProtocolError, match="reserved"):
        wire.split_tag((1 << 55) | 4)


# ---------------------------------------------------------------- messages
def test_metadata_and_eos_layout():
    assert wire.encode_metadata_prefix(5) == b"\x01\x05\x00\x00\x00"
    assert wire.encode_eos(0x01020304) == b"\x00\x04\x03\x02\x01"
    mtype, seq, fb = wire.decode_untagged(b"\x01\x02\x00\x00\x00FLAT")
    assert (mtype, seq, bytes(fb)) == (1, 2, b"FLAT")
    assert wire.decode_untagged(b"\x00\x09\x00\x00\x00") == (0, 9, None)


@pytest.mark.parametrize("payload,match", [
    (b"", "prefix .* truncated"), (b"\x01\x00\x00", "truncated"),
    (b"\x00\x01\x00\x00\x00X", "exactly 5"), (b"\x02\x00\x00\x00\x00FB", "unknown message type 2"),
    (b"\x01\x00\x00\x00\x00", "no flatbuffer"),
])
def test_untagged_errors(payload, match):
    with pytest.raises(ProtocolError, match=match):
        wire.decode_untagged(payload)


def test_shm_body_layout():
    body = wire.encode_shm_body([(64, 8), (128, 16)])
    assert body == le64(24, 2, 64, 8, 128, 16)
    assert wire.decode_shm_body(body) == (24, [(64, 8), (128, 16)])
    assert wire.decode_shm_body(le64(0, 0)) == (0, [])


@pytest.mark.parametrize("payload,match", [
    (le64(0), "truncated"), (le64(8, 2, 0, 8), "nbuf 2 needs 48 bytes"),
    (le64(9, 1, 0, 8), "total_size 9 does not match .* \\(8\\)"),
    (le64(0, 2**40), "nbuf .* exceeds"),
    (le64(8, 1, 0, 8) + b"\0", "needs 32 bytes, the body has 33"),
])
def test_shm_body_errors(payload, match):
    with pytest.raises(ProtocolError, match=match):
        wire.decode_shm_body(payload)


def test_free_data():
    assert wire.encode_free_data([1, 2**64 - 1]) == le64(1, 2**64 - 1)
    assert wire.decode_free_data(le64(3, 4)) == [3, 4]
    for bad in (b"", b"1234567", le64(1) + b"x"):
        with pytest.raises(ProtocolError, match="free_data body"):
            wire.decode_free_data(bad)


def test_error_payload():
    p = wire.encode_error("unknown_ticket", "no such", b"\xff\x00t")
    assert json.loads(p)["code"] == "unknown_ticket"
    assert wire.decode_error(p) == ("unknown_ticket", "no such", b"\xff\x00t")
    for bad in (b"", b"{", b"[]", b'{"code": 1}', b"\xff"):
        with pytest.raises(ProtocolError, match="malformed error frame"):
            wire.decode_error(bad)


# --------------------------------------------------------------------- URI
def test_uri_round_trip():
    ep = Endpoint("127.0.0.1", 5000, 7, 9, "nclx_1_abc")
    uri = ep.uri()
    assert uri.startswith("tcp://127.0.0.1:5000?want_data=7&free_data=9&remote_handle=")
    handle = uri.split("remote_handle=")[1]
    assert base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)) == b"nclx_1_abc"
    assert parse_uri(uri) == ep
    assert parse_uri("tcp://[::1]:80?want_data=1") == Endpoint("::1", 80, 1)
    assert parse_uri(Endpoint("::1", 80, 3).uri()).host == "::1"


@pytest.mark.parametrize("uri,match", [
    ("http://h:1?want_data=1", "scheme"), ("tcp://h?want_data=1", "no port"),
    ("tcp://h:1", "no want_data"), ("tcp://h:1?want_data=-1", "not a uint64"),
    ("tcp://h:1?want_data=18446744073709551616", "not a uint64"),
    ("tcp://h:1?want_data=1&want_data=2", "2 times"),
    ("tcp://h:1?want_data=1&free_data=1", "both 1"),
    ("tcp://h:1?want_data=1&free_data=2&remote_handle=***", "base64"),
    ("tcp://h:1?want_data=1&free_data=2&remote_handle=Li4vZXRj", "not a shared-memory"),
    ("tcp://h:1?want_data=1&remote_handle=YWJj", "without free_data"),
    ("tcp://h:99999?want_data=1", "port"), ("tcp://h:1/path?want_data=1", "path"),
])
def test_uri_errors(uri, match):
    with pytest.raises(ValueError, match=match):
        parse_uri(uri)


def test_server_uri_defaults():
    ep = parse_uri("tcp://127.0.0.1", server=True)
    assert (ep.port, ep.want_data, ep.free_data) == (0, 1, None)
